//! The five tools' arguments, as rpc requests and MCP calls carry them. One type per
//! tool serves both protocols and the MCP `inputSchema` (each field's doc comment is
//! the description a model reads, so each is one line), and every number or flag may
//! come as a string, since some stock MCP clients send every argument that way.

use rmcp::schemars::JsonSchema;
use serde::de::Error;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Lines `read` returns at most, and by default.
pub const READ_PAGE_LINES: usize = 2000;
/// `grep` results (matching lines, files or counts) by default, and at most.
pub const GREP_DEFAULT_RESULTS: usize = 500;
pub const GREP_MAX_RESULTS: usize = 5000;
/// `glob` paths by default, and at most.
pub const GLOB_DEFAULT_RESULTS: usize = 500;
pub const GLOB_MAX_RESULTS: usize = 5000;
/// Context lines `grep` shows around a match at most.
pub const GREP_MAX_CONTEXT: usize = 20;

/// The `read` tool's arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The file to read: an absolute path, or one relative to the server's directory (`~/` is the home directory).
    pub path: String,
    /// First line to return, 0-based (the line `cat -n` numbers offset+1). Default 0.
    #[serde(default, deserialize_with = "offset")]
    pub offset: Option<usize>,
    /// Number of lines to return, 1-2000. Default 2000; when lines are left, the answer gives the next offset.
    #[serde(default, deserialize_with = "limit")]
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<usize>,
}

/// What `grep` answers with. Inlined in the schema: some clients do not follow `$ref`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[schemars(crate = "rmcp::schemars", inline)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// The paths of the files that match.
    #[default]
    Files,
    /// The matching lines, with their path and line number (and `context` lines).
    Lines,
    /// The number of matching lines in each file.
    Count,
}

/// The `grep` tool's arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression to search for (Rust regex syntax, as ripgrep: `fn\s+main`, `TODO|FIXME`; escape `.(){}[]` for a literal).
    pub pattern: String,
    /// File or directory to search in. Default: the server's directory. Ignored files (.gitignore inside a git work tree, .ignore) and `.git` are skipped.
    pub path: Option<String>,
    /// Only files whose path matches this glob, as ripgrep's -g: `*.rs`, `src/**/*.ts`, `*.{js,jsx}`; a leading `!` excludes.
    pub glob: Option<String>,
    /// Match case-insensitively. Default false.
    #[serde(default, deserialize_with = "flag")]
    pub case_insensitive: Option<bool>,
    /// Lines of context to show before and after each match (output_mode `lines` only), 0-20. Default 0.
    #[serde(default, deserialize_with = "context")]
    #[schemars(range(max = 20))]
    pub context: Option<usize>,
    /// `files` (default: paths of matching files), `lines` (matching lines with path and line number) or `count` (matching lines per file).
    pub output_mode: Option<OutputMode>,
    /// Most results to return (lines, files or counts), 1-5000. Default 500; the answer says when more were found.
    #[serde(default, deserialize_with = "limit")]
    #[schemars(range(min = 1, max = 5000))]
    pub limit: Option<usize>,
}

/// The `glob` tool's arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob of file paths relative to `path`: `**/*.rs` (any depth), `src/*.ts` (one level), `*.{json,toml}`, `**/test_*.py`. `*` does not cross `/`.
    pub pattern: String,
    /// Directory to search in. Default: the server's directory. Ignored files (.gitignore inside a git work tree, .ignore) and `.git` are skipped.
    pub path: Option<String>,
    /// Most paths to return, 1-5000. Default 500 (the newest); the answer says when more matched.
    #[serde(default, deserialize_with = "limit")]
    #[schemars(range(min = 1, max = 5000))]
    pub limit: Option<usize>,
}

/// The `edit` tool's arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// The file to change: an absolute path, or one relative to the server's directory.
    pub path: String,
    /// The exact text to replace, as in the file (without the line numbers `read` shows); include enough surrounding lines to make it unique.
    pub old_string: String,
    /// The text to put in its place (different from old_string). In a file with CRLF line endings, its line breaks are written as CRLF.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one. Default false: an old_string found more than once is refused with the count.
    #[serde(default, deserialize_with = "flag")]
    pub replace_all: Option<bool>,
}

/// The `write` tool's arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// The file to create or replace: an absolute path, or one relative to the server's directory. Missing parent directories are created.
    pub path: String,
    /// The whole new content of the file, written as given.
    pub content: String,
}

/// A whole number given as a JSON number or a decimal string (`5`, `"5"`, `" 5 "`);
/// `null` or absent is `None`. Anything else is an error naming the field and `unit`.
pub fn whole_number<'de, D: Deserializer<'de>>(
    d: D,
    name: &str,
    unit: &str,
) -> Result<Option<u64>, D::Error> {
    let bad = |shown: &str| {
        D::Error::custom(format!(
            "`{name}` must be a whole number{unit} such as 5 or \"5\", not {shown}"
        ))
    };
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| bad(&n.to_string())),
        Some(Value::String(text)) => text
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| bad(&Value::String(text.clone()).to_string())),
        Some(other) => Err(bad(&other.to_string())),
    }
}

/// [`whole_number`] as a `usize` count of `unit`.
pub fn count<'de, D: Deserializer<'de>>(
    d: D,
    name: &str,
    unit: &str,
) -> Result<Option<usize>, D::Error> {
    whole_number(d, name, unit)?
        .map(|n| usize::try_from(n).map_err(|_| D::Error::custom(format!("`{name}` is too large"))))
        .transpose()
}

fn offset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    count(d, "offset", " of lines")
}

fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    count(d, "limit", "")
}

fn context<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    count(d, "context", " of lines")
}

/// `true`/`false`, or the strings `"true"`/`"false"` (any case, spaces trimmed).
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(text)) if text.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(text)) if text.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(D::Error::custom(format!(
            "expected true or false (or \"true\"/\"false\"), not {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_and_flags_may_come_as_strings() {
        let read: ReadArgs =
            serde_json::from_value(json!({"path": "a", "offset": "10", "limit": " 5 "}))
                .expect("strings are numbers");
        assert_eq!((read.offset, read.limit), (Some(10), Some(5)));
        let edit: EditArgs = serde_json::from_value(
            json!({"path": "a", "old_string": "x", "new_string": "y", "replace_all": "TRUE"}),
        )
        .expect("a string flag");
        assert_eq!(edit.replace_all, Some(true));
        let grep: GrepArgs = serde_json::from_value(
            json!({"pattern": "x", "context": 2, "output_mode": "lines", "case_insensitive": null}),
        )
        .expect("valid");
        assert_eq!(grep.output_mode, Some(OutputMode::Lines));
        assert_eq!(grep.case_insensitive, None);
    }

    #[test]
    fn bad_values_name_the_field() {
        let message = |v: Value| {
            serde_json::from_value::<GrepArgs>(v)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(message(json!({"pattern": "x", "context": "two"})).contains("`context` must be"));
        assert!(
            message(json!({"pattern": "x", "case_insensitive": "yes"})).contains("true or false")
        );
        assert!(message(json!({"pattern": "x", "output_mode": "all"})).contains("unknown variant"));
        assert!(message(json!({"pattern": "x", "paths": "."})).contains("unknown field `paths`"));
        assert!(message(json!({})).contains("missing field `pattern`"));
    }
}
