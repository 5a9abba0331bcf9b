//! The adapter: PTY mode as the executor layer calls it. The profile's kill key is
//! read, the run's cgroup made (and kept until nothing of the run is in it), and the
//! engine's failures become the executor layer's `PTY error: ...` (exit 125).

use super::PtyRun;
use super::engine;
use crate::config::kill_key::{KillKey, KillKeyError};
use crate::executor::{ExecError, ExecOutcome};
use crate::output::sink::OutputSink;
use crate::process::cgroup::RunGroup;

/// Run in a PTY, feeding the transcript to `sink` and live text to `on_output`.
pub fn run(
    req: &PtyRun<'_>,
    sink: &mut OutputSink,
    on_output: &mut dyn FnMut(&str),
) -> Result<ExecOutcome, ExecError> {
    let kill_key: KillKey = req
        .kill_key
        .parse()
        .map_err(|e: KillKeyError| ExecError::Pty(e.to_string()))?;
    // Dropped last (declared first): removed once nothing of the run is in it.
    let group = RunGroup::create(req.watch.idle.is_some() && !req.interactive);
    engine::run(req, kill_key, group.as_ref(), sink, on_output)
        .map_err(|e| ExecError::Pty(e.to_string()))
}
