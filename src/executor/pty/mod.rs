//! PTY mode: run one command inside a pseudo-terminal.
//!
//! Some programs only behave when they see a terminal (`sudo`, `ssh`, REPLs,
//! progress UIs, test runners that check `isatty`). This module runs the
//! command in a PTY, started by the one spawner (`process::spawn_on_tty`) as in
//! print mode (its own session and cgroup, `[limits]`, parent-death signal), the
//! PTY its controlling terminal, and has two faces that share one single-threaded
//! `poll(2)` loop:
//!
//! * **headless** — the PTY has the profile's size, the raw output goes to the
//!   run's sink (which sanitizes it), and agentbash's stdin is optionally fed in;
//! * **interactive** — the outer terminal goes raw, the command's screen (kept
//!   by a `vt100` parser) is drawn in a bordered viewport below the cursor and
//!   keys are forwarded; the kill key ends the run.
//!
//! Either way the loop answers the terminal queries programs block on (cursor
//! position, device attributes, status), enforces the deadline and the
//! cancellation token, tears the whole PTY session down when it has to, and
//! never waits for a background job that keeps the PTY open.
//!
//! The loop wakes at least every 20 ms, so cancellation from signal handlers
//! and the outer terminal's size are polled rather than delivered: this module
//! installs no signal handlers (the caller owns signals). It does install a
//! panic hook, once per process, that restores the outer terminal.
//!
//! The rooms: `adapter` (what the executor layer calls: [`run`] with a [`PtyRun`];
//! the profile's kill key read, the run's cgroup made, failures worded), `engine`
//! (the `poll(2)` loop, the pseudo-terminal and its process, teardown, the drain,
//! the sink and the background policy, ending with the executors' shared
//! `ExecOutcome`), `console` (the interactive viewport drawn on the outer terminal),
//! `keys` (keyboard input and the kill key) and `queries` (the terminal queries found
//! in the output and the headless cursor model that answers them).

mod adapter;
mod console;
mod engine;
mod keys;
mod queries;

pub use adapter::run;

use crate::executor::Watch;
use crate::process::SpawnSpec;

/// What the pipeline asks of PTY mode.
pub struct PtyRun<'a> {
    pub spawn: &'a SpawnSpec,
    /// Headless PTY size (`pty.cols`/`pty.rows`); interactive runs size the
    /// PTY from the outer terminal instead.
    pub cols: u16,
    pub rows: u16,
    /// Draw the viewport and forward keys; stdin and stdout must be terminals.
    pub interactive: bool,
    /// Shown in the viewport header: `Console <title> [running]`.
    pub title: &'a str,
    /// The profile's `pty.kill_key`, as written there.
    pub kill_key: &'a str,
    /// Headless only: copy agentbash's stdin into the PTY, then send EOF.
    pub feed_stdin: bool,
    /// The timeout, the kill grace, the background policy and the cancel token. Its
    /// `idle` (`jobs.idle_timeout`) applies headless only: an interactive run has a
    /// person at the keys; it is theirs to end.
    pub watch: Watch<'a>,
}

const ESC: u8 = 0x1b;
