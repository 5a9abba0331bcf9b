//! Bash arithmetic (`$((…))`, array indices, substring offsets) on known values: a
//! small expression parser of its own, apart from word expansion.

use super::super::scope::{Scope, Var};

/// How deep a variable may name another expression (`a=b; b=c; …`).
const MAX_ARITH_DEPTH: usize = 16;

/// Evaluates a bash arithmetic expression; `None` when it uses something unknown
/// (a variable whose value cannot be known, an assignment, a division by zero).
pub fn arith(scope: &Scope, text: &str, depth: usize) -> Option<i64> {
    if depth > MAX_ARITH_DEPTH || text.len() > 4096 {
        return None;
    }
    let mut p = Arith {
        s: text.as_bytes(),
        i: 0,
        scope,
        depth,
    };
    let v = p.comma()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

struct Arith<'s, 'a, 'e> {
    s: &'s [u8],
    i: usize,
    scope: &'a Scope<'e>,
    depth: usize,
}

impl Arith<'_, '_, '_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(op.as_bytes()) {
            // `<` must not eat the first half of `<<` or `<=`, and so on.
            let next = self.s.get(self.i + op.len()).copied();
            let longer = match op {
                "<" | ">" => matches!(next, Some(b'<' | b'>' | b'=')),
                "&" => next == Some(b'&'),
                "|" => next == Some(b'|'),
                "*" => next == Some(b'*'),
                "=" | "!" => next == Some(b'='),
                "+" => next == Some(b'+'),
                "-" => next == Some(b'-'),
                _ => false,
            };
            if longer {
                return false;
            }
            self.i += op.len();
            return true;
        }
        false
    }

    fn comma(&mut self) -> Option<i64> {
        let mut v = self.ternary()?;
        while self.eat(",") {
            v = self.ternary()?;
        }
        Some(v)
    }

    fn ternary(&mut self) -> Option<i64> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.comma()?;
            if !self.eat(":") {
                return None;
            }
            let b = self.ternary()?;
            return Some(if c != 0 { a } else { b });
        }
        // An assignment operator makes the expression change a variable.
        self.ws();
        if self.s.get(self.i) == Some(&b'=') && self.s.get(self.i + 1) != Some(&b'=') {
            return None;
        }
        Some(c)
    }

    fn binary(&mut self, level: usize) -> Option<i64> {
        const LEVELS: &[&[&str]] = &[
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<=", ">=", "<", ">"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.power();
        }
        let mut v = self.binary(level + 1)?;
        'outer: loop {
            for op in LEVELS[level] {
                if self.eat(op) {
                    let r = self.binary(level + 1)?;
                    v = match *op {
                        "||" => i64::from(v != 0 || r != 0),
                        "&&" => i64::from(v != 0 && r != 0),
                        "|" => v | r,
                        "^" => v ^ r,
                        "&" => v & r,
                        "==" => i64::from(v == r),
                        "!=" => i64::from(v != r),
                        "<=" => i64::from(v <= r),
                        ">=" => i64::from(v >= r),
                        "<" => i64::from(v < r),
                        ">" => i64::from(v > r),
                        "<<" => v.wrapping_shl(u32::try_from(r).ok()?),
                        ">>" => v.wrapping_shr(u32::try_from(r).ok()?),
                        "+" => v.wrapping_add(r),
                        "-" => v.wrapping_sub(r),
                        "*" => v.wrapping_mul(r),
                        "/" => v.checked_div(r)?,
                        _ => v.checked_rem(r)?,
                    };
                    continue 'outer;
                }
            }
            return Some(v);
        }
    }

    fn power(&mut self) -> Option<i64> {
        let base = self.unary()?;
        if self.eat("**") {
            let e = self.power()?;
            return Some(base.wrapping_pow(u32::try_from(e).ok()?));
        }
        Some(base)
    }

    fn unary(&mut self) -> Option<i64> {
        self.ws();
        if self.s[self.i..].starts_with(b"++") || self.s[self.i..].starts_with(b"--") {
            return None;
        }
        if self.eat("-") {
            return Some(self.unary()?.wrapping_neg());
        }
        if self.eat("+") {
            return self.unary();
        }
        if self.eat("!") {
            return Some(i64::from(self.unary()? == 0));
        }
        if self.eat("~") {
            return Some(!self.unary()?);
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<i64> {
        self.ws();
        if self.eat("(") {
            let v = self.comma()?;
            return self.eat(")").then_some(v);
        }
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'#' | b'@'))
        {
            self.i += 1;
        }
        let tok = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        if tok.is_empty() {
            return None;
        }
        self.ws();
        if self.s[self.i..].starts_with(b"++") || self.s[self.i..].starts_with(b"--") {
            return None;
        }
        if tok.as_bytes()[0].is_ascii_digit() {
            return number(tok);
        }
        if !super::super::parser::valid_name(tok) {
            return None;
        }
        match self.scope.get(tok) {
            Var::Unset => Some(0),
            Var::Str(v) => {
                let v = v.trim();
                if v.is_empty() {
                    Some(0)
                } else {
                    arith(self.scope, v, self.depth + 1)
                }
            }
            Var::Array(a) => a
                .first()
                .map_or(Some(0), |v| arith(self.scope, v, self.depth + 1)),
            Var::Unknown => None,
        }
    }
}

fn number(tok: &str) -> Option<i64> {
    if let Some((base, digits)) = tok.split_once('#') {
        let base: u32 = base.parse().ok()?;
        if !(2..=64).contains(&base) || base > 36 {
            return None;
        }
        return i64::from_str_radix(digits, base).ok();
    }
    if let Some(hex) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).ok();
    }
    if tok.len() > 1 && tok.starts_with('0') {
        return i64::from_str_radix(&tok[1..], 8).ok();
    }
    tok.parse().ok()
}
