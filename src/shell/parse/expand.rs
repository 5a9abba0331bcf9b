//! Word expansion without running anything: what bash would make of a word, as far as
//! the text, the environment and what the line did before it can tell. Brace
//! expansion, `~` (`~user`, `~+`, `~-`), parameters with their operators on known
//! values (`${X%y}`, `${X:0:1}`, `${X:+/}`, `${a[@]}`, …), arithmetic, field
//! splitting on `IFS` and quote removal are done; a command substitution's output is
//! not known, so a field holding one is *dynamic*; pathname expansion is left to the
//! reader, who gets the glob pattern.

use super::ast::*;
use super::glob;
use super::scope::{DEFAULT_IFS, Scope, Var};

mod arith;
mod param;
pub use arith::arith;

/// Most fields one word may expand to (brace expansion); past it the word is marked
/// [`Field::overflow`].
pub const MAX_FIELDS: usize = 1024;
/// Longest value an expansion may build.
pub const MAX_VALUE: usize = 64 * 1024;
/// Longest value a pattern operator (`${x%pat}`) is applied to.
const MAX_PATTERN_SUBJECT: usize = 4096;

/// One word after expansion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Field {
    /// The text, quotes removed (unknown parts omitted).
    pub text: String,
    /// The glob pattern (quoted metacharacters escaped) when an unquoted `*?[` is in
    /// it.
    pub glob: Option<String>,
    /// Part of it cannot be known before the command runs.
    pub dynamic: bool,
    /// Expansion stopped at a limit: the word may stand for more than this.
    pub overflow: bool,
}

impl Field {
    pub fn literal(text: impl Into<String>) -> Self {
        Field {
            text: text.into(),
            ..Field::default()
        }
    }

    /// Fully known: not dynamic, not cut short.
    pub fn known(&self) -> bool {
        !self.dynamic && !self.overflow
    }

    /// How it is shown: the pattern for a glob, `…` after a dynamic part.
    pub fn shown(&self) -> String {
        if self.dynamic || self.overflow {
            format!("{}…", self.text)
        } else {
            self.glob.clone().unwrap_or_else(|| self.text.clone())
        }
    }
}

/// A value being expanded.
enum Value {
    Unset,
    Str(String),
    /// `$@`, `$*`, `${a[@]}`: several values; `star` joins them into one when quoted.
    List(Vec<String>, bool),
    Unknown,
}

/// Expands words in a scope, recording the assignments expansion itself makes
/// (`${X:=v}`).
pub struct Expander<'a, 'e> {
    scope: &'a Scope<'e>,
    pub assigned: Vec<(String, String)>,
}

impl<'a, 'e> Expander<'a, 'e> {
    pub fn new(scope: &'a Scope<'e>) -> Self {
        Expander {
            scope,
            assigned: Vec::new(),
        }
    }

    /// A word as a command's argument: brace expansion, then the rest, then field
    /// splitting (an unquoted empty expansion gives no field).
    pub fn fields(&mut self, word: &Word) -> Vec<Field> {
        let mut b = Builder::new(self.ifs());
        if !has_brace(&word.parts) {
            self.parts(&word.parts, &mut b);
            b.end();
            return b.out;
        }
        let atoms: Vec<Atom> = to_atoms(&word.parts);
        let mut alternatives = Vec::new();
        let mut overflow = false;
        brace(atoms, &mut alternatives, &mut overflow, 0);
        for alt in alternatives {
            // Tilde expansion comes after brace expansion: `{~,x}` gives `~` its home.
            let parts = tilde_first(from_atoms(&alt));
            self.parts(&parts, &mut b);
            b.end();
            if b.out.len() > MAX_FIELDS {
                overflow = true;
                break;
            }
        }
        if overflow {
            match b.out.last_mut() {
                Some(f) => f.overflow = true,
                None => b.out.push(Field {
                    overflow: true,
                    ..Field::default()
                }),
            }
        }
        b.out
    }

    /// A word where bash makes one string of it (an assignment's value, a
    /// here-string, a `case` subject): no brace expansion, no splitting, no glob.
    pub fn string(&mut self, word: &Word) -> Field {
        let mut b = Builder::new(std::borrow::Cow::Borrowed(""));
        b.join = true;
        self.parts(&word.parts, &mut b);
        let mut f = b.cur;
        f.glob = None;
        f
    }

    /// A word as a pattern (`${x%pat}`, `case`): quoted characters escaped; `None`
    /// when part of it cannot be known.
    pub fn pattern(&mut self, word: &Word) -> Option<String> {
        let mut out = String::new();
        for part in &word.parts {
            match part {
                Part::Lit { text, quoted } => {
                    if *quoted {
                        out.push_str(&glob::escape(text));
                    } else {
                        out.push_str(text);
                    }
                }
                Part::Tilde(prefix) => out.push_str(&glob::escape(&self.tilde(prefix)?)),
                Part::ExtGlob(_) => out.push('*'),
                _ => {
                    let mut b = Builder::new(std::borrow::Cow::Borrowed(""));
                    b.join = true;
                    self.parts(std::slice::from_ref(part), &mut b);
                    if b.cur.dynamic {
                        return None;
                    }
                    let quoted = matches!(
                        part,
                        Part::Param { quoted: true, .. } | Part::Arith { quoted: true, .. }
                    );
                    if quoted {
                        out.push_str(&glob::escape(&b.cur.text));
                    } else {
                        out.push_str(&b.cur.text);
                    }
                }
            }
            if out.len() > MAX_VALUE {
                return None;
            }
        }
        Some(out)
    }

    fn ifs(&self) -> std::borrow::Cow<'static, str> {
        match self.scope.get_set("IFS") {
            Some(Var::Str(s)) => std::borrow::Cow::Owned(s),
            _ => std::borrow::Cow::Borrowed(DEFAULT_IFS),
        }
    }

    fn tilde(&self, prefix: &str) -> Option<String> {
        let path =
            |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
        match prefix {
            "" => self.scope.home(),
            "+" => path(&self.scope.cwd),
            "-" => path(&self.scope.oldpwd),
            "root" => Some("/root".into()),
            _ => None,
        }
    }

    fn parts(&mut self, parts: &[Part], b: &mut Builder) {
        for part in parts {
            match part {
                Part::Lit { text, quoted } => {
                    if text.is_empty() && *quoted {
                        b.empty_quote = true;
                    } else {
                        b.text(text, *quoted);
                    }
                }
                Part::Tilde(prefix) => match self.tilde(prefix) {
                    Some(home) => b.text(&home, true),
                    None => {
                        // `~user` whose home cannot be known: shown as written.
                        b.text(&format!("~{prefix}"), true);
                        b.cur.dynamic = true;
                    }
                },
                Part::Param { param, quoted } => self.param(param, *quoted, b),
                Part::CmdSub { .. } | Part::ProcSub { .. } => {
                    b.started = true;
                    b.cur.dynamic = true;
                }
                Part::Arith { expr, quoted } => match self.arith_word(expr) {
                    Some(n) => b.text(&n.to_string(), *quoted),
                    None => {
                        b.started = true;
                        b.cur.dynamic = true;
                    }
                },
                Part::ExtGlob(text) => b.ext_glob(text),
            }
        }
    }

    fn arith_word(&mut self, expr: &Word) -> Option<i64> {
        let text = self.string(expr);
        if text.dynamic {
            return None;
        }
        arith(self.scope, &text.text, 0)
    }
}

/// The escapes of `$'…'` (for `${x@E}` and `echo -e`).
pub fn decode_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('e' | 'E') => out.push('\x1b'),
            Some('f') => out.push('\x0c'),
            Some('v') => out.push('\x0b'),
            Some('\\') => out.push('\\'),
            Some(d @ '0'..='7') => {
                let mut v = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(x) => {
                            v = v * 8 + x;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
            }
            Some(k @ ('x' | 'u' | 'U')) => {
                let max = match k {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(x) => {
                            v = v.wrapping_mul(16).wrapping_add(x);
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    out.push('\\');
                    out.push(k);
                } else {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Accumulates fields.
struct Builder {
    out: Vec<Field>,
    cur: Field,
    pattern: String,
    globbing: bool,
    /// Something was added to the current field (so it exists even if empty).
    started: bool,
    /// A `""` was seen: the field exists even if empty, unless a quoted `"$@"` with no
    /// parameters took it away.
    empty_quote: bool,
    suppress_empty: bool,
    ifs: std::borrow::Cow<'static, str>,
    /// One string (`string()`): never split into fields.
    join: bool,
}

impl Builder {
    fn new(ifs: std::borrow::Cow<'static, str>) -> Self {
        Builder {
            out: Vec::new(),
            cur: Field::default(),
            pattern: String::new(),
            globbing: false,
            started: false,
            empty_quote: false,
            suppress_empty: false,
            ifs,
            join: false,
        }
    }

    fn text(&mut self, s: &str, quoted: bool) {
        if s.is_empty() {
            if quoted {
                self.started = true;
            }
            return;
        }
        self.started = true;
        // The pattern is built only once an unquoted glob character shows up: until
        // then every character of the field is literal, so the text escaped is it.
        if !self.globbing && !quoted && glob::has_meta(s) {
            self.pattern = glob::escape(&self.cur.text);
            self.globbing = true;
        }
        self.cur.text.push_str(s);
        if self.globbing {
            if quoted {
                self.pattern.push_str(&glob::escape(s));
            } else {
                self.pattern.push_str(s);
            }
        }
    }

    /// An extended glob: matched as `*` (anything), which only widens what it reaches.
    fn ext_glob(&mut self, text: &str) {
        if !self.globbing {
            self.pattern = glob::escape(&self.cur.text);
            self.globbing = true;
        }
        self.started = true;
        self.cur.text.push_str(text);
        self.pattern.push('*');
    }

    /// An unquoted expansion's value: split on `IFS`.
    fn split(&mut self, s: &str) {
        if self.join || self.ifs.is_empty() {
            self.text(s, false);
            return;
        }
        let ifs = self.ifs.clone();
        let is_ws = |c: char| ifs.contains(c) && matches!(c, ' ' | '\t' | '\n');
        let is_other = |c: char| ifs.contains(c) && !is_ws(c);
        let leading_ws = s.starts_with(is_ws);
        let trailing = s.ends_with(|c: char| ifs.contains(c));
        let body = s.trim_matches(is_ws);
        let mut pieces: Vec<String> = vec![String::new()];
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            if is_ws(c) || is_other(c) {
                let mut saw_other = is_other(c);
                while let Some(&n) = chars.peek() {
                    if is_ws(n) {
                        chars.next();
                    } else if is_other(n) && !saw_other {
                        saw_other = true;
                        chars.next();
                    } else {
                        break;
                    }
                }
                pieces.push(String::new());
            } else if let Some(p) = pieces.last_mut() {
                p.push(c);
            }
        }
        if body.is_empty() {
            pieces.clear();
        }
        if leading_ws && (self.started || !self.cur.text.is_empty()) {
            self.end();
        }
        for (i, piece) in pieces.iter().enumerate() {
            if i > 0 {
                self.end();
                self.started = true;
            }
            self.text(piece, false);
        }
        if trailing && !pieces.is_empty() {
            self.end();
        }
    }

    fn end(&mut self) {
        if self.started || (self.empty_quote && !self.suppress_empty) || self.cur.dynamic {
            let mut f = std::mem::take(&mut self.cur);
            if self.globbing {
                f.glob = Some(std::mem::take(&mut self.pattern));
            }
            self.out.push(f);
        }
        self.cur = Field::default();
        self.pattern.clear();
        self.globbing = false;
        self.started = false;
        self.empty_quote = false;
        self.suppress_empty = false;
    }
}

// ---------------------------------------------------------------------------------
// Brace expansion

#[derive(Clone, Copy)]
enum Atom<'p> {
    C(char),
    P(&'p Part),
}

fn has_brace(parts: &[Part]) -> bool {
    parts
        .iter()
        .any(|p| matches!(p, Part::Lit { text, quoted: false } if text.contains('{')))
}

fn to_atoms(parts: &[Part]) -> Vec<Atom<'_>> {
    let mut atoms = Vec::new();
    for p in parts {
        match p {
            Part::Lit {
                text,
                quoted: false,
            } => atoms.extend(text.chars().map(Atom::C)),
            other => atoms.push(Atom::P(other)),
        }
    }
    atoms
}

fn from_atoms(atoms: &[Atom]) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    for a in atoms {
        match a {
            Atom::C(c) => lit.push(*c),
            Atom::P(p) => {
                if !lit.is_empty() {
                    parts.push(Part::Lit {
                        text: std::mem::take(&mut lit),
                        quoted: false,
                    });
                }
                parts.push((*p).clone());
            }
        }
    }
    if !lit.is_empty() {
        parts.push(Part::Lit {
            text: lit,
            quoted: false,
        });
    }
    parts
}

/// A word made by brace expansion that starts with an unquoted `~name/`: the tilde
/// prefix becomes a [`Part::Tilde`].
fn tilde_first(mut parts: Vec<Part>) -> Vec<Part> {
    let Some(Part::Lit {
        text,
        quoted: false,
    }) = parts.first()
    else {
        return parts;
    };
    let Some(rest) = text.strip_prefix('~') else {
        return parts;
    };
    let end = rest.find('/').unwrap_or(rest.len());
    let prefix = &rest[..end];
    let ends_word = end < rest.len() || parts.len() == 1;
    if !ends_word
        || !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-+.".contains(c))
    {
        return parts;
    }
    let tilde = Part::Tilde(prefix.to_string());
    let tail = rest[end..].to_string();
    parts.remove(0);
    if !tail.is_empty() {
        parts.insert(
            0,
            Part::Lit {
                text: tail,
                quoted: false,
            },
        );
    }
    parts.insert(0, tilde);
    parts
}

/// How many brace expressions one word may nest or chain.
const MAX_BRACE_DEPTH: usize = 64;

fn brace<'p>(
    atoms: Vec<Atom<'p>>,
    out: &mut Vec<Vec<Atom<'p>>>,
    overflow: &mut bool,
    depth: usize,
) {
    if out.len() >= MAX_FIELDS {
        *overflow = true;
        return;
    }
    if depth > MAX_BRACE_DEPTH {
        *overflow = true;
        out.push(atoms);
        return;
    }
    let is = |a: &Atom, c: char| matches!(a, Atom::C(x) if *x == c);
    let mut i = 0;
    while i < atoms.len() {
        if !is(&atoms[i], '{') {
            i += 1;
            continue;
        }
        // Find the matching `}` and the commas at this level.
        let mut level = 0usize;
        let mut commas = Vec::new();
        let mut close = None;
        for (k, a) in atoms.iter().enumerate().skip(i + 1) {
            if is(a, '{') {
                level += 1;
            } else if is(a, '}') {
                if level == 0 {
                    close = Some(k);
                    break;
                }
                level -= 1;
            } else if is(a, ',') && level == 0 {
                commas.push(k);
            }
        }
        let Some(j) = close else {
            i += 1;
            continue;
        };
        let alternatives: Vec<Vec<Atom<'p>>> = if !commas.is_empty() {
            let mut alts = Vec::new();
            let mut from = i + 1;
            for &c in commas.iter().chain(std::iter::once(&j)) {
                alts.push(atoms[from..c].to_vec());
                from = c + 1;
            }
            alts
        } else {
            let inner: Option<String> = atoms[i + 1..j]
                .iter()
                .map(|a| match a {
                    Atom::C(c) => Some(*c),
                    Atom::P(_) => None,
                })
                .collect();
            match inner.and_then(|s| sequence(&s, overflow)) {
                Some(items) => items
                    .into_iter()
                    .map(|s| s.chars().map(Atom::C).collect())
                    .collect(),
                None => {
                    i += 1;
                    continue;
                }
            }
        };
        for alt in alternatives {
            let mut next = Vec::with_capacity(atoms.len());
            next.extend_from_slice(&atoms[..i]);
            next.extend(alt);
            next.extend_from_slice(&atoms[j + 1..]);
            brace(next, out, overflow, depth + 1);
            if out.len() >= MAX_FIELDS {
                *overflow = true;
                return;
            }
        }
        return;
    }
    out.push(atoms);
}

/// `a..b[..step]` of integers or single characters.
fn sequence(s: &str, overflow: &mut bool) -> Option<Vec<String>> {
    let parts: Vec<&str> = s.split("..").collect();
    if parts.len() < 2 || parts.len() > 3 {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(x) => x.parse().ok()?,
        None => 1,
    };
    let step = step.unsigned_abs().max(1) as i64;
    let mut out = Vec::new();
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let padded = |t: &str| {
            let t = t.trim_start_matches('-');
            t.len() > 1 && t.starts_with('0')
        };
        let width = if padded(parts[0]) || padded(parts[1]) {
            parts[0].len().max(parts[1].len())
        } else {
            0
        };
        let mut v = a;
        loop {
            if out.len() >= MAX_FIELDS {
                *overflow = true;
                break;
            }
            out.push(if width > 0 {
                if v < 0 {
                    format!("-{:0w$}", -v, w = width - 1)
                } else {
                    format!("{v:0width$}")
                }
            } else {
                v.to_string()
            });
            if v == b {
                break;
            }
            if a < b {
                v = v.checked_add(step)?;
                if v > b {
                    break;
                }
            } else {
                v = v.checked_sub(step)?;
                if v < b {
                    break;
                }
            }
        }
        return Some(out);
    }
    let (mut ca, mut cb) = (parts[0].chars(), parts[1].chars());
    let (Some(a), None, Some(b), None) = (ca.next(), ca.next(), cb.next(), cb.next()) else {
        return None;
    };
    if !a.is_ascii_alphabetic() || !b.is_ascii_alphabetic() {
        return None;
    }
    let (a, b) = (a as i64, b as i64);
    let mut v = a;
    loop {
        out.push(char::from_u32(v as u32)?.to_string());
        if v == b {
            break;
        }
        if a < b {
            v += step;
            if v > b {
                break;
            }
        } else {
            v -= step;
            if v < b {
                break;
            }
        }
    }
    Some(out)
}
