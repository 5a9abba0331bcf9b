//! `write`: create or replace a whole file with the content given, creating missing
//! parent directories. A replaced file keeps its mode and owner and is swapped in
//! atomically (see `files::write`); a new one is `0644`.

use super::args::WriteArgs;
use super::files;
use super::policy::FilePolicy;
use super::{Answer, ToolError};
use serde::Serialize;

/// Largest content `write` takes.
pub const WRITE_MAX_BYTES: usize = 32 * 1024 * 1024;

/// What `write` did.
#[derive(Debug, Clone, Serialize)]
pub struct WriteOutput {
    pub path: String,
    /// Whether the file is new (`false`: an existing file was replaced).
    pub created: bool,
    /// Bytes written.
    pub size: u64,
    /// Lines written (a last line without a line break counts).
    pub lines: usize,
}

pub fn write(policy: &FilePolicy, args: WriteArgs) -> Result<Answer, ToolError> {
    if args.content.len() > WRITE_MAX_BYTES {
        return Err(ToolError::Arguments {
            tool: "write",
            message: format!(
                "`content` is too large ({}; at most {})",
                crate::output::notice::format_size(args.content.len() as u64),
                crate::output::notice::format_size(WRITE_MAX_BYTES as u64)
            ),
        });
    }
    let at = policy.locate(&args.path).map_err(ToolError::Path)?;
    policy.check_write("write", &at)?;
    let existing = match std::fs::symlink_metadata(&at.target) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::Path(format!(
                "{} is a directory: give the path of a file in it",
                at.describe()
            )));
        }
        Ok(meta) => Some(meta),
        Err(_) => None,
    };
    let written = files::write(&at.target, args.content.as_bytes(), existing.as_ref())
        .map_err(|e| ToolError::Path(format!("{}: writing failed: {e}", at.describe())))?;
    let lines = args.content.lines().count();
    let output = WriteOutput {
        path: at.shown.clone(),
        created: written.created,
        size: args.content.len() as u64,
        lines,
    };
    let size = crate::output::notice::format_size(output.size);
    let lines = crate::output::notice::count(lines as u64, "line");
    let text = match (&existing, written.created) {
        (_, true) => format!("Created {} ({size}, {lines}).", at.shown),
        (Some(old), false) => format!(
            "Replaced {} ({size}, {lines}; it had {}).",
            at.shown,
            crate::output::notice::format_size(old.len())
        ),
        (None, false) => format!("Wrote {} ({size}, {lines}).", at.shown),
    };
    Answer::new(text, &output)
}
