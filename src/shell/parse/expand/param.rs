//! Parameter expansion, `${…}` and its operators on known values: kept apart from
//! the word builder because bash's operator table (`%`, `/`, `:-`, `@Q`, …) is long.

use super::super::ast::*;
use super::super::scope::Var;
use super::{Builder, Expander, MAX_PATTERN_SUBJECT, MAX_VALUE, Value, decode_escapes, glob};

impl Expander<'_, '_> {
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

    /// `${…}`: the value, then `!` indirection, `#` length and the operator, added
    /// to the field being built.
    pub(super) fn param(&mut self, param: &Param, quoted: bool, b: &mut Builder) {
        let mut value = self.base(param);
        if param.indirect {
            value = self.indirect(value);
        }
        if param.length {
            value = length(value);
        }
        if let Some(value) = self.operator(param, value, b) {
            emit(value, quoted, b);
        }
    }

    /// `${!name}`: the variable (or positional parameter) the value names.
    fn indirect(&self, value: Value) -> Value {
        match value {
            Value::Str(name) if super::super::parser::valid_name(&name) => {
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
        }
    }

    /// The value after the operator, or `None` when the operator's word was added to
    /// the field instead (`${x:-word}` on an unset `x`, `${x:+word}` on a set one).
    fn operator(&mut self, param: &Param, value: Value, b: &mut Builder) -> Option<Value> {
        let value = match &param.op {
            ParamOp::None => value,
            ParamOp::Default { colon, word } | ParamOp::Assign { colon, word } => {
                match set_and(&value, *colon) {
                    Some(true) => value,
                    Some(false) => {
                        self.default(param, word, b);
                        return None;
                    }
                    None => Value::Unknown,
                }
            }
            ParamOp::Alternative { colon, word } => match set_and(&value, *colon) {
                Some(true) => {
                    self.parts(&word.parts, b);
                    return None;
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
                self.substring(param, value, offset, length.as_ref())
            }
            ParamOp::Case {
                upper,
                all,
                pattern,
            } => match self.pattern(pattern) {
                Some(p) => map_values(value, |s| change_case(s, &p, *upper, *all)),
                None => Value::Unknown,
            },
            ParamOp::Transform(t) => transform(*t, value),
            ParamOp::Unknown => Value::Unknown,
        };
        Some(value)
    }

    /// `${x:-word}`, `${x:=word}` on an unset (or empty) `x`: the word, which `:=`
    /// also assigns.
    fn default(&mut self, param: &Param, word: &Word, b: &mut Builder) {
        if let (ParamOp::Assign { .. }, ParamName::Var(n)) = (&param.op, &param.name) {
            let v = self.string(word);
            if v.dynamic {
                self.assigned.push((n.clone(), String::new()));
            } else {
                self.assigned.push((n.clone(), v.text));
            }
        }
        self.parts(&word.parts, b);
    }

    /// `${x:offset:length}`, `${@:offset:length}`.
    fn substring(
        &mut self,
        param: &Param,
        value: Value,
        offset: &Word,
        length: Option<&Word>,
    ) -> Value {
        let off = self.arith_word(offset);
        let len = match length {
            Some(l) => self.arith_word(l).map(Some),
            None => Some(None),
        };
        match (off, len, value) {
            (Some(o), Some(l), Value::Str(s)) => {
                let chars: Vec<char> = s.chars().collect();
                slice(&chars, o, l).map_or(Value::Unknown, |c| Value::Str(c.iter().collect()))
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
                slice(&items, o, l).map_or(Value::Unknown, |v| Value::List(v.to_vec(), star))
            }
            (_, _, Value::Unset) => Value::Unset,
            _ => Value::Unknown,
        }
    }
}

/// `${#x}`: the length of a value, or the number of values of a list.
fn length(value: Value) -> Value {
    match value {
        Value::Str(s) => Value::Str(s.chars().count().to_string()),
        Value::List(l, _) => Value::Str(l.len().to_string()),
        Value::Unset => Value::Str("0".into()),
        Value::Unknown => Value::Unknown,
    }
}

/// Whether the value counts as set for `:-`, `:+`, … (`colon`: empty counts as
/// unset); `None` when it is unknown.
fn set_and(v: &Value, colon: bool) -> Option<bool> {
    match v {
        Value::Unset => Some(false),
        Value::Str(s) => Some(!(colon && s.is_empty())),
        Value::List(l, _) => Some(!(l.is_empty() || colon && l.iter().all(String::is_empty))),
        Value::Unknown => None,
    }
}

/// `${x@Q}`, `${x@E}`, `${x@U}`, `${x@L}`, `${x@u}`.
fn transform(t: char, value: Value) -> Value {
    match t {
        'Q' => map_values(value, |s| Some(crate::display::quote(&s))),
        'E' => map_values(value, |s| Some(decode_escapes(&s))),
        'U' => map_values(value, |s| Some(s.to_uppercase())),
        'L' => map_values(value, |s| Some(s.to_lowercase())),
        'u' => map_values(value, |s| change_case(s, "", true, false)),
        _ => Value::Unknown,
    }
}

/// Adds the final value to the field: split unless quoted, lists as several fields
/// (`"$@"`) or one (`"$*"`).
fn emit(value: Value, quoted: bool, b: &mut Builder) {
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
