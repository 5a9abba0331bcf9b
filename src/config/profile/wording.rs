//! The wording of a profile's errors: where a type error points, how a value is
//! described, long messages shortened and misspelled keys given a suggestion.

use super::*;

/// Where an error about one entry of an array points: serde's span covers the whole
/// array, so an `invalid entry "X"` error points at `"X"` itself when it is there.
pub(super) fn entry_offset(text: &str, start: usize, message: &str) -> usize {
    let quoted = message
        .strip_prefix("invalid entry ")
        .and_then(|rest| rest.find("\": ").map(|end| &rest[..=end]));
    match quoted.and_then(|q| text.get(start..)?.find(q)) {
        Some(at) => start + at,
        None => start,
    }
}

/// serde's "invalid type: string \"five\", expected u64" in the profile's own words:
/// `timeout.default: expected a whole number of seconds, found the string "five"`.
/// `None` for errors that are not about a value's type (unknown keys, syntax).
pub(super) fn type_error(e: &toml::de::Error, table: &toml::Table, text: &str) -> Option<String> {
    let key = error_key(e)?;
    let msg = e.message();
    // serde's, toml's (an enum given a number) and our own (env.inherit) wordings.
    let about_type = [
        "invalid type:",
        "invalid value:",
        "unknown variant",
        "invalid length",
        "wanted string or table",
        "expected ",
    ]
    .iter()
    .any(|p| msg.starts_with(p));
    if !about_type {
        // Our own deserializers' other messages say what is wrong, not where.
        return (msg.starts_with("unknown value")
            || msg.starts_with("prefix ")
            || msg.starts_with("invalid entry"))
        .then(|| format!("{key}: {msg}"));
    }
    let expected = schema::expected_type(&key)?;
    let mut parts = key.split('.');
    let value = table
        .get(parts.next()?)
        .and_then(|first| parts.try_fold(first, |at, k| at.as_table()?.get(k)))
        .map(|v| describe_value(v, msg, expected.starts_with("an array")));
    // Inside an array of tables the path has no index: the value is where toml points.
    let at_span = e
        .span()
        .and_then(|sp| text.get(sp))
        .filter(|v| !v.is_empty() && v.len() <= 200 && !v.contains('\n'))
        .map(|v| format!("`{v}`"));
    let found = value.or(at_span).unwrap_or_else(|| {
        // The serde wording of what was found: "invalid type: string \"x\", expected …".
        msg.split_once(':')
            .and_then(|(_, rest)| rest.rsplit_once(", expected").map(|(f, _)| f.trim()))
            .unwrap_or("something else")
            .to_string()
    });
    Some(format!("{key}: expected {expected}, found {found}"))
}

/// The dotted key a typing error is about. toml records it, and shows it only when
/// the error carries no input text.
pub(super) fn error_key(e: &toml::de::Error) -> Option<String> {
    let mut bare = e.clone();
    bare.set_input(None);
    let shown = bare.to_string();
    let last = shown.trim_end().lines().last()?;
    let key = last.strip_prefix("in `")?.strip_suffix('`')?;
    (!key.is_empty()).then(|| key.to_string())
}

/// A TOML value as an error message names it: `the string "five"`, `the integer -3`;
/// with `in_array`, an array by the element that is not a string.
pub(super) fn describe_value(v: &toml::Value, msg: &str, in_array: bool) -> String {
    use toml::Value;
    match v {
        Value::String(s) => format!("the string {s:?}"),
        Value::Integer(i) if *i < 0 => format!("the negative integer {i}"),
        Value::Integer(i) if msg.starts_with("invalid value") => {
            format!("the integer {i}, which is too large")
        }
        Value::Integer(i) => format!("the integer {i}"),
        Value::Float(f) => format!("the number {f}"),
        Value::Boolean(b) => format!("the boolean {b}"),
        Value::Datetime(d) => format!("the date-time {d}"),
        Value::Array(items) => match items.iter().find(|i| !i.is_str()).filter(|_| in_array) {
            Some(odd) => format!("an array holding {}", describe_value(odd, msg, false)),
            None => "an array".into(),
        },
        Value::Table(_) => "a table".into(),
    }
}

/// Error messages quote the offending key or value; a hostile profile can make that
/// a megabyte. Keep the start and say how much was left out.
pub(super) fn shorten(msg: &str) -> String {
    const MAX: usize = 1000;
    if msg.len() <= MAX {
        return msg.to_string();
    }
    let mut cut = MAX;
    while !msg.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more bytes]", &msg[..cut], msg.len() - cut)
}

/// serde says "unknown field `tiemout`, expected one of `a`, `b`": add "did you mean".
pub(super) fn with_suggestion(msg: &str) -> String {
    let msg = msg.trim_end().to_string();
    let Some(rest) = msg.strip_prefix("unknown field `") else {
        return msg;
    };
    let Some((bad, expected)) = rest.split_once('`') else {
        return msg;
    };
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    // A key whose length is far from a candidate's cannot be near it: skipping those
    // keeps a hostile megabyte-long key from costing seconds of edit distance.
    let best = candidates
        .iter()
        .filter(|c| bad.len().abs_diff(c.len()) <= 2.max(c.len() / 3))
        .map(|c| (edit_distance(bad, c), *c))
        .min()
        .filter(|(d, c)| *d <= 2.max(c.len() / 3));
    match best {
        Some((_, c)) => format!("{msg}\n  did you mean `{c}`?"),
        None => msg,
    }
}

pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
