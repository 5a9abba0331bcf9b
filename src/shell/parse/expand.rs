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

    /// The value of `name` (with `[index]`), before any operator.
    fn base(&mut self, param: &Param) -> Value {
        let scope = self.scope;
        let whole_list = |v: Var, star: bool| match v {
            Var::Str(s) => Value::List(vec![s], star),
            Var::Array(a) => Value::List(a, star),
            Var::Unset => Value::List(vec![], star),
            Var::Unknown => Value::Unknown,
        };
        match &param.name {
            ParamName::Var(name) if name.is_empty() => Value::Unknown,
            ParamName::Var(name) => match &param.index {
                Some(idx) => match idx.literal().as_deref() {
                    Some("@") => whole_list(scope.get(name), false),
                    Some("*") => whole_list(scope.get(name), true),
                    _ => {
                        let i = self.arith_word(idx);
                        match (scope.get(name), i) {
                            (Var::Unknown, _) | (_, None) => Value::Unknown,
                            (Var::Unset, _) => Value::Unset,
                            (Var::Str(s), Some(0)) => Value::Str(s),
                            (Var::Str(_), Some(_)) => Value::Unset,
                            (Var::Array(a), Some(i)) => {
                                let i = if i < 0 { a.len() as i64 + i } else { i };
                                usize::try_from(i)
                                    .ok()
                                    .and_then(|i| a.get(i).cloned())
                                    .map_or(Value::Unset, Value::Str)
                            }
                        }
                    }
                },
                None => match scope.get(name) {
                    Var::Str(s) => Value::Str(s),
                    Var::Array(a) => a.first().cloned().map_or(Value::Unset, Value::Str),
                    Var::Unset => Value::Unset,
                    Var::Unknown => Value::Unknown,
                },
            },
            ParamName::Positional(n) => match &scope.positional {
                Some(p) => p
                    .get(*n as usize - 1)
                    .cloned()
                    .map_or(Value::Unset, Value::Str),
                None => Value::Unknown,
            },
            ParamName::Special(c @ ('@' | '*')) => match &scope.positional {
                Some(p) => Value::List(p.clone(), *c == '*'),
                None => Value::Unknown,
            },
            ParamName::Special('#') => match &scope.positional {
                Some(p) => Value::Str(p.len().to_string()),
                None => Value::Unknown,
            },
            ParamName::Special('0') => Value::Str(scope.arg0.clone()),
            ParamName::Special(_) => Value::Unknown,
        }
    }

    fn param(&mut self, param: &Param, quoted: bool, b: &mut Builder) {
        let mut value = self.base(param);
        if param.indirect {
            value = match value {
                Value::Str(name) if super::parser::valid_name(&name) => {
                    self.scope.get_str(&name).map_or(
                        if self.scope.is_unknown(&name) {
                            Value::Unknown
                        } else {
                            Value::Unset
                        },
                        Value::Str,
                    )
                }
                Value::Str(n) if n.parse::<usize>().is_ok_and(|n| n > 0) => {
                    let n = n.parse::<usize>().unwrap_or(1);
                    match &self.scope.positional {
                        Some(p) => p.get(n - 1).cloned().map_or(Value::Unset, Value::Str),
                        None => Value::Unknown,
                    }
                }
                Value::Unset => Value::Unset,
                _ => Value::Unknown,
            };
        }
        if param.length {
            value = match value {
                Value::Str(s) => Value::Str(s.chars().count().to_string()),
                Value::List(l, _) => Value::Str(l.len().to_string()),
                Value::Unset => Value::Str("0".into()),
                Value::Unknown => Value::Unknown,
            };
        }
        let set_and = |v: &Value, colon: bool| -> Option<bool> {
            match v {
                Value::Unset => Some(false),
                Value::Str(s) => Some(!(colon && s.is_empty())),
                Value::List(l, _) => {
                    Some(!(l.is_empty() || colon && l.iter().all(String::is_empty)))
                }
                Value::Unknown => None,
            }
        };
        let value = match &param.op {
            ParamOp::None => value,
            ParamOp::Default { colon, word } | ParamOp::Assign { colon, word } => {
                match set_and(&value, *colon) {
                    Some(true) => value,
                    Some(false) => {
                        if let (ParamOp::Assign { .. }, ParamName::Var(n)) =
                            (&param.op, &param.name)
                        {
                            let v = self.string(word);
                            if v.dynamic {
                                self.assigned.push((n.clone(), String::new()));
                            } else {
                                self.assigned.push((n.clone(), v.text));
                            }
                        }
                        self.parts(&word.parts, b);
                        return;
                    }
                    None => Value::Unknown,
                }
            }
            ParamOp::Alternative { colon, word } => match set_and(&value, *colon) {
                Some(true) => {
                    self.parts(&word.parts, b);
                    return;
                }
                Some(false) => Value::Unset,
                None => Value::Unknown,
            },
            ParamOp::Error { colon, .. } => match set_and(&value, *colon) {
                Some(true) => value,
                // The shell stops with an error: nothing of this command runs.
                _ => Value::Unknown,
            },
            ParamOp::RemovePrefix { longest, pattern }
            | ParamOp::RemoveSuffix { longest, pattern } => {
                let prefix = matches!(param.op, ParamOp::RemovePrefix { .. });
                match self.pattern(pattern) {
                    Some(p) => map_values(value, |s| remove(s, &p, prefix, *longest)),
                    None => Value::Unknown,
                }
            }
            ParamOp::Replace {
                all,
                anchor,
                pattern,
                replacement,
            } => {
                let rep = self.string(replacement);
                match (self.pattern(pattern), rep.dynamic) {
                    (Some(p), false) => {
                        map_values(value, |s| replace(s, &p, &rep.text, *all, *anchor))
                    }
                    _ => Value::Unknown,
                }
            }
            ParamOp::Substring { offset, length } => {
                let off = self.arith_word(offset);
                let len = match length {
                    Some(l) => self.arith_word(l).map(Some),
                    None => Some(None),
                };
                match (off, len, value) {
                    (Some(o), Some(l), Value::Str(s)) => {
                        let chars: Vec<char> = s.chars().collect();
                        slice(&chars, o, l)
                            .map_or(Value::Unknown, |c| Value::Str(c.iter().collect()))
                    }
                    (Some(o), Some(l), Value::List(items, star)) => {
                        // `${@:1}` counts `$0` as element 0.
                        let items = if matches!(param.name, ParamName::Special('@' | '*')) {
                            let mut all = vec![self.scope.arg0.clone()];
                            all.extend(items);
                            all
                        } else {
                            items
                        };
                        slice(&items, o, l)
                            .map_or(Value::Unknown, |v| Value::List(v.to_vec(), star))
                    }
                    (_, _, Value::Unset) => Value::Unset,
                    _ => Value::Unknown,
                }
            }
            ParamOp::Case {
                upper,
                all,
                pattern,
            } => match self.pattern(pattern) {
                Some(p) => map_values(value, |s| change_case(s, &p, *upper, *all)),
                None => Value::Unknown,
            },
            ParamOp::Transform(t) => match t {
                'Q' => map_values(value, |s| Some(crate::display::quote(&s))),
                'E' => map_values(value, |s| Some(decode_escapes(&s))),
                'U' => map_values(value, |s| Some(s.to_uppercase())),
                'L' => map_values(value, |s| Some(s.to_lowercase())),
                'u' => map_values(value, |s| change_case(s, "", true, false)),
                _ => Value::Unknown,
            },
            ParamOp::Unknown => Value::Unknown,
        };
        match value {
            Value::Unset => {
                if quoted {
                    b.empty_quote = true;
                }
            }
            Value::Unknown => {
                b.started = true;
                b.cur.dynamic = true;
            }
            Value::Str(s) => {
                let s = cap(s, b);
                if quoted {
                    b.text(&s, true);
                } else {
                    b.split(&s);
                }
            }
            Value::List(items, star) => {
                if quoted && star {
                    let sep = b.ifs.chars().next().map(String::from).unwrap_or_default();
                    let joined = cap(items.join(&sep), b);
                    b.text(&joined, true);
                } else if quoted {
                    if items.is_empty() {
                        b.suppress_empty = true;
                    }
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            b.end();
                        }
                        b.text(item, true);
                        b.started = true;
                    }
                } else {
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 && !b.join {
                            b.end();
                        } else if i > 0 {
                            b.text(" ", true);
                        }
                        b.split(item);
                    }
                }
            }
        }
    }
}

fn cap(s: String, b: &mut Builder) -> String {
    if s.len() <= MAX_VALUE {
        return s;
    }
    b.cur.overflow = true;
    let mut end = MAX_VALUE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn map_values(v: Value, f: impl Fn(String) -> Option<String>) -> Value {
    match v {
        Value::Str(s) => f(s).map_or(Value::Unknown, Value::Str),
        Value::List(l, star) => {
            let mut out = Vec::with_capacity(l.len());
            for s in l {
                match f(s) {
                    Some(s) => out.push(s),
                    None => return Value::Unknown,
                }
            }
            Value::List(out, star)
        }
        other => other,
    }
}

/// `${s#p}`, `${s##p}`, `${s%p}`, `${s%%p}`.
fn remove(s: String, pattern: &str, prefix: bool, longest: bool) -> Option<String> {
    if s.len() > MAX_PATTERN_SUBJECT {
        return None;
    }
    let bounds: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
        .collect();
    let try_at = |cut: usize| {
        if prefix {
            glob::matches(pattern, &s[..cut], false).then(|| s[cut..].to_string())
        } else {
            glob::matches(pattern, &s[cut..], false).then(|| s[..cut].to_string())
        }
    };
    // Shortest prefix: cut from the left; shortest suffix: cut from the right.
    let order: Box<dyn Iterator<Item = &usize>> = match (prefix, longest) {
        (true, false) | (false, true) => Box::new(bounds.iter()),
        (true, true) | (false, false) => Box::new(bounds.iter().rev()),
    };
    for &cut in order {
        if let Some(r) = try_at(cut) {
            return Some(r);
        }
    }
    Some(s)
}

/// `${s/p/r}` and its variants.
fn replace(s: String, pattern: &str, rep: &str, all: bool, anchor: Anchor) -> Option<String> {
    if s.len() > MAX_PATTERN_SUBJECT {
        return None;
    }
    if pattern.is_empty() {
        return Some(s);
    }
    let bounds: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
        .collect();
    match anchor {
        Anchor::Start => {
            for &end in bounds.iter().rev() {
                if glob::matches(pattern, &s[..end], false) {
                    return Some(format!("{rep}{}", &s[end..]));
                }
            }
            Some(s)
        }
        Anchor::End => {
            for &start in &bounds {
                if glob::matches(pattern, &s[start..], false) {
                    return Some(format!("{}{rep}", &s[..start]));
                }
            }
            Some(s)
        }
        Anchor::None => {
            let mut out = String::new();
            let mut i = 0;
            let mut done = false;
            while i + 1 < bounds.len() {
                let start = bounds[i];
                let mut matched = None;
                if !done {
                    // Longest match at this position.
                    for (k, &end) in bounds.iter().enumerate().skip(i + 1).rev() {
                        if glob::matches(pattern, &s[start..end], false) {
                            matched = Some(k);
                            break;
                        }
                    }
                }
                match matched {
                    Some(k) => {
                        out.push_str(rep);
                        i = k;
                        if !all {
                            done = true;
                        }
                    }
                    None => {
                        out.push_str(&s[start..bounds[i + 1]]);
                        i += 1;
                    }
                }
            }
            Some(out)
        }
    }
}

fn slice<T: Clone>(items: &[T], offset: i64, length: Option<i64>) -> Option<&[T]> {
    let n = items.len() as i64;
    let start = if offset < 0 { n + offset } else { offset };
    if start < 0 {
        return Some(&[]);
    }
    let start = start.min(n);
    let end = match length {
        None => n,
        Some(l) if l < 0 => n + l,
        Some(l) => start.saturating_add(l).min(n),
    };
    if end < start {
        return None; // bash: "substring expression < 0", an error
    }
    items.get(start as usize..end as usize)
}

fn change_case(s: String, pattern: &str, upper: bool, all: bool) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut changed = false;
    for c in s.chars() {
        let applies = (all || !changed)
            && (pattern.is_empty() || glob::matches(pattern, &c.to_string(), false));
        if applies && (all || !changed) {
            if upper {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
        } else {
            out.push(c);
        }
        changed = true;
    }
    Some(out)
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

// ---------------------------------------------------------------------------------
// Arithmetic

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
        if !super::parser::valid_name(tok) {
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
