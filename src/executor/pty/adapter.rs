//! The adapter: PTY mode as the executor layer calls it. It takes the pipeline's
//! request (profile strings, the shared `Watch`), runs the engine in the run's
//! cgroup, feeds the output to the sink with live text coalesced, and applies the
//! background policy once the command has ended.

use std::time::Instant;

use super::engine::{PtyEnd, PtyRequest, run_marker, run_pty};
use crate::config::kill_key::{KillKey, KillKeyError};
use crate::executor::EVENT_INTERVAL;
use crate::process::cgroup::RunGroup;
use crate::process::spawn;
use crate::process::{KilledProcess, SpawnSpec};

/// What the pipeline asks of PTY mode.
pub struct PtyRun<'a> {
    pub spawn: &'a SpawnSpec,
    pub cols: u16,
    pub rows: u16,
    pub interactive: bool,
    pub title: &'a str,
    pub kill_key: &'a str,
    pub feed_stdin: bool,
    pub watch: crate::executor::Watch<'a>,
}

/// Run in a PTY, feeding the transcript to `sink` and live text to `on_output`.
pub fn run(
    req: &PtyRun<'_>,
    sink: &mut crate::output::sink::OutputSink,
    on_output: &mut dyn FnMut(&str),
) -> Result<crate::executor::ExecOutcome, crate::executor::ExecError> {
    use crate::executor::{End, ExecError, ExecOutcome};
    let kill_key: KillKey = req
        .kill_key
        .parse()
        .map_err(|e: KillKeyError| ExecError::Pty(e.to_string()))?;
    // Dropped last (declared first): removed once nothing of the run is in it.
    let group = RunGroup::create();
    let mut last_emit = Instant::now();
    let outcome = run_pty(
        PtyRequest {
            spawn: req.spawn,
            cols: req.cols,
            rows: req.rows,
            interactive: req.interactive,
            title: req.title,
            kill_key,
            feed_stdin: req.feed_stdin,
            deadline: Instant::now() + req.watch.timeout,
            idle: req.watch.idle,
            kill_grace: req.watch.kill_grace,
            cancel: req.watch.cancel,
            group: group.as_ref(),
        },
        &mut |bytes| {
            sink.push(bytes);
            if (sink.pending_full() || last_emit.elapsed() >= EVENT_INTERVAL)
                && let Some(t) = sink.take_pending()
            {
                on_output(&t);
                last_emit = Instant::now();
            }
            sink.wants_more()
        },
    )
    .map_err(|e| ExecError::Pty(e.to_string()))?;
    if matches!(outcome.end, PtyEnd::OutputDone) {
        sink.stopped_reading();
    }
    // Release what the sanitizer and redactors hold back into the live stream.
    sink.end_input();
    if let Some(t) = sink.take_pending() {
        on_output(&t);
    }
    let teardown =
        spawn::Teardown::new(outcome.leader_pid, &run_marker(req.spawn)).in_group(group.as_ref());
    let mut background_killed: Vec<KilledProcess> = outcome
        .killed
        .into_iter()
        .filter(|k| k.pid != outcome.leader_pid)
        .collect();
    // As in print mode: with no children and an empty group there is nothing to find.
    let in_group = teardown.grouped() && group.as_ref().is_some_and(|g| !g.pids().is_empty());
    if req.watch.background == crate::config::profile::Background::Kill
        && (in_group || spawn::has_children())
    {
        background_killed.extend(teardown.terminate(req.watch.kill_grace, true));
    }
    teardown.reap_orphans();
    let end = match outcome.end {
        PtyEnd::Exited(c) => End::Exited(c),
        PtyEnd::Signaled(s) => End::Signaled(s),
        PtyEnd::TimedOut => End::TimedOut,
        PtyEnd::Idle(secs) => End::Idle(secs),
        PtyEnd::Cancelled(s) => End::Cancelled(s),
        PtyEnd::KillKey => End::Killed,
        // Like `| head`: the pipeline ended because its reader had enough.
        PtyEnd::OutputDone => End::Exited(0),
    };
    Ok(ExecOutcome {
        end,
        background_killed,
    })
}
