//! Whole-number request fields given as JSON numbers or as decimal strings: some stock
//! MCP clients (the MCP inspector's CLI among them) send every argument as a string,
//! and the RPC server takes `timeout`, `head` and `tail` the same way, so one request
//! means the same on either. Anything else is an error naming the field. The file
//! tools' arguments read their numbers the same way (`toolbox::args`).

use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

fn lines<'de, D: Deserializer<'de>>(d: D, name: &str) -> Result<Option<usize>, D::Error> {
    crate::toolbox::args::count(d, name, " of lines")
}

/// Seconds, signed like the CLI's `--timeout`: a negative value is clamped (with a
/// notice naming it), not refused.
pub fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let bad = |shown: &str| {
        D::Error::custom(format!(
            "`timeout` must be a whole number of seconds such as 5 or \"5\", not {shown}"
        ))
    };
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        // Beyond i64 is far past any profile's maximum: saturate, the clamp says so.
        Some(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
            (Some(v), _) => Ok(Some(v)),
            (None, Some(_)) => Ok(Some(i64::MAX)),
            _ => Err(bad(&n.to_string())),
        },
        Some(Value::String(text)) => text
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| bad(&Value::String(text.clone()).to_string())),
        Some(other) => Err(bad(&other.to_string())),
    }
}
pub fn head<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    lines(d, "head")
}
pub fn tail<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    lines(d, "tail")
}
pub fn offset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    lines(d, "offset")
}
pub fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    lines(d, "limit")
}
