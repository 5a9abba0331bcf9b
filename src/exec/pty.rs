//! §4.8 PTY mode (placeholder until the PTY engine lands).

use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillKey {
    Esc,
    Ctrl(u8),
}

impl FromStr for KillKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let l = s.trim().to_ascii_lowercase();
        if l == "esc" || l == "escape" {
            return Ok(KillKey::Esc);
        }
        if let Some(k) = l.strip_prefix("ctrl-").or_else(|| l.strip_prefix("ctrl+")) {
            let b = k.as_bytes();
            if b.len() == 1 && (b[0].is_ascii_lowercase() || b"\\]^_".contains(&b[0])) {
                return Ok(KillKey::Ctrl(b[0].to_ascii_uppercase() & 0x1f));
            }
        }
        Err(format!("unknown kill key {s:?}"))
    }
}

use super::{CancelToken, ExecError, ExecOutcome, SpawnSpec};
use crate::output::sink::OutputSink;
use std::time::Duration;

pub struct PtyRun<'a> {
    pub spawn: &'a SpawnSpec,
    pub cols: u16,
    pub rows: u16,
    pub interactive: bool,
    pub title: &'a str,
    pub kill_key: &'a str,
    pub feed_stdin: bool,
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub cancel: &'a CancelToken,
}

pub fn run(
    _req: &PtyRun<'_>,
    _sink: &mut OutputSink,
    _on_output: &mut dyn FnMut(&str),
) -> Result<ExecOutcome, ExecError> {
    Err(ExecError::Pty("PTY mode is not available in this build".into()))
}
