//! `edit`: replace an exact piece of a file, on its bytes.
//!
//! The match is exact and must be unique unless `replace_all` says otherwise: a
//! missing or ambiguous `old_string` is refused with the count, nothing written.
//! Everything that is not replaced stays byte for byte: a UTF-8 byte-order mark,
//! bytes that are not UTF-8, and the line endings — in a file whose lines end in
//! CRLF, the line breaks of `old_string` and `new_string` are taken as CRLF, so an
//! edit neither fails on nor mixes line endings. The file is replaced atomically
//! (see `files::write`), keeping its mode.

use super::args::EditArgs;
use super::files::{self, OpenError, ReadAllError};
use super::policy::FilePolicy;
use super::{Answer, ToolError};
use serde::Serialize;

/// Largest file `edit` changes.
pub const EDIT_MAX_BYTES: u64 = 32 * 1024 * 1024;
/// Lines of the changed region shown in the answer, at most.
const SNIPPET_LINES: usize = 12;

/// What `edit` did.
#[derive(Debug, Clone, Serialize)]
pub struct EditOutput {
    pub path: String,
    /// Occurrences replaced.
    pub replacements: usize,
    /// The 1-based line where the first replacement starts.
    pub first_line: usize,
    /// `lf` or `crlf`: the file's line endings, which the new text was written with.
    pub line_endings: &'static str,
    /// Whether the file starts with a UTF-8 byte-order mark (kept).
    pub bom: bool,
    /// The file's size after the edit, in bytes.
    pub size: u64,
}

pub fn edit(policy: &FilePolicy, args: EditArgs) -> Result<Answer, ToolError> {
    let bad = |message: &str| ToolError::Arguments {
        tool: "edit",
        message: message.into(),
    };
    if args.old_string.is_empty() {
        return Err(bad(
            "`old_string` is empty: give the exact text to replace (use `write` to create a file)",
        ));
    }
    if args.old_string == args.new_string {
        return Err(bad(
            "`old_string` and `new_string` are the same: nothing would change",
        ));
    }
    let at = policy.locate(&args.path).map_err(ToolError::Path)?;
    policy.check_write("edit", &at)?;
    let (bytes, meta) = files::read_all(&at.target, EDIT_MAX_BYTES).map_err(|e| {
        ToolError::Path(match e {
            ReadAllError::Open(OpenError::Missing) => format!(
                "{} does not exist: `edit` changes an existing file (use `write` to create one)",
                at.describe()
            ),
            ReadAllError::TooLarge { size } => format!(
                "{} is too large to edit ({}; at most {})",
                at.describe(),
                crate::output::notice::format_size(size),
                crate::output::notice::format_size(EDIT_MAX_BYTES)
            ),
            e => format!("{}: {e}", at.describe()),
        })
    })?;
    let crlf = is_crlf(&bytes);
    let forms = |s: &str| {
        if crlf {
            to_crlf(s)
        } else {
            s.as_bytes().to_vec()
        }
    };
    let (mut old, mut new) = (forms(&args.old_string), forms(&args.new_string));
    let mut count = memchr::memmem::find_iter(&bytes, &old).count();
    if count == 0 && !crlf && memchr::memmem::find(&bytes, b"\r\n").is_some() {
        // An LF file with some CRLF lines: the text may be in one of those.
        let (o, n) = (to_crlf(&args.old_string), to_crlf(&args.new_string));
        count = memchr::memmem::find_iter(&bytes, &o).count();
        if count > 0 {
            (old, new) = (o, n);
        }
    }
    if count == 0 {
        return Err(ToolError::NoMatch {
            path: at.describe(),
            hint: no_match_hint(&args.old_string, &bytes),
        });
    }
    let replace_all = args.replace_all.unwrap_or(false);
    if count > 1 && !replace_all {
        return Err(ToolError::Ambiguous {
            path: at.describe(),
            count,
        });
    }
    let mut changed = Vec::with_capacity(bytes.len() + count * new.len().saturating_sub(old.len()));
    let mut last = 0;
    let mut first_at = None;
    for at in memchr::memmem::find_iter(&bytes, &old) {
        first_at.get_or_insert(at);
        changed.extend_from_slice(&bytes[last..at]);
        changed.extend_from_slice(&new);
        last = at + old.len();
    }
    changed.extend_from_slice(&bytes[last..]);
    let first_at = first_at.unwrap_or(0);
    files::write(&at.target, &changed, Some(&meta))
        .map_err(|e| ToolError::Path(format!("{}: writing failed: {e}", at.describe())))?;
    let first_line = 1 + bytes[..first_at].iter().filter(|&&b| b == b'\n').count();
    let output = EditOutput {
        path: at.shown.clone(),
        replacements: count,
        first_line,
        line_endings: if crlf { "crlf" } else { "lf" },
        bom: bytes.starts_with(b"\xef\xbb\xbf"),
        size: changed.len() as u64,
    };
    let new_lines = new.iter().filter(|&&b| b == b'\n').count() + 1;
    let mut text = format!(
        "Edited {}: replaced {} (first at line {first_line}).\n",
        at.shown,
        crate::output::notice::count(count as u64, "occurrence")
    );
    text.push_str(&snippet(&changed, first_line, new_lines));
    Answer::new(text, &output)
}

/// Whether most line breaks of `bytes` are CRLF.
fn is_crlf(bytes: &[u8]) -> bool {
    let crlf = memchr::memmem::find_iter(bytes, b"\r\n").count();
    let lf = memchr::memchr_iter(b'\n', bytes).count();
    crlf > 0 && crlf >= lf - crlf
}

/// `text` with every line break as CRLF.
fn to_crlf(text: &str) -> Vec<u8> {
    text.replace("\r\n", "\n")
        .replace('\n', "\r\n")
        .into_bytes()
}

/// Why an `old_string` may not have been found, when something tells.
fn no_match_hint(old: &str, file: &[u8]) -> String {
    let numbered = !old.is_empty()
        && old.lines().filter(|l| !l.is_empty()).all(|l| {
            let t = l.trim_start();
            let digits = t.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && t[digits..].starts_with('\t')
        });
    if numbered {
        return "old_string seems to hold the line numbers `read` shows (`   12\\t`): leave them out".into();
    }
    if old.contains("[REDACTED:") {
        return "old_string holds a [REDACTED:…] mask: the file has the secret itself there, which the tools never show; edit around it".into();
    }
    if file.starts_with(b"\xff\xfe") || file.starts_with(b"\xfe\xff") {
        return "the file is UTF-16, and old_string is matched as UTF-8 bytes; convert it with `iconv` through `bash`".into();
    }
    "it must match the file exactly, whitespace and indentation included; `read` the lines again"
        .into()
}

/// The changed region of `bytes`, numbered as `read` numbers it, with a line of
/// context on each side.
fn snippet(bytes: &[u8], first_line: usize, lines: usize) -> String {
    let from = first_line.saturating_sub(1).max(1);
    let to = (first_line + lines).min(from + SNIPPET_LINES - 1);
    let mut page =
        match super::read::page(&mut std::io::Cursor::new(bytes), from - 1, to + 1 - from) {
            Ok(page) => page.content,
            Err(_) => return String::new(),
        };
    if first_line + lines > to + 1 {
        page.push_str("     …\n");
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_are_told_by_the_majority() {
        assert!(is_crlf(b"a\r\nb\r\nc\n"));
        assert!(!is_crlf(b"a\nb\nc\r\n"));
        assert!(!is_crlf(b"no newline"));
        assert_eq!(to_crlf("a\nb\r\nc"), b"a\r\nb\r\nc");
    }

    #[test]
    fn hints_name_the_likely_mistake() {
        assert!(no_match_hint("    12\tfn main() {\n    13\t}", b"").contains("line numbers"));
        assert!(no_match_hint("key = [REDACTED:TOKEN]", b"").contains("mask"));
        assert!(no_match_hint("x", b"\xff\xfex\0").contains("UTF-16"));
        assert!(no_match_hint("x", b"y").contains("exactly"));
    }
}
