//! Executors: the three ways a command runs once the pipeline has decided how.
//! `print` wires it to pipes, `pty` to a pseudo-terminal (with a live viewport), and
//! `live` hands it to a warm shell from the pool that rpc and mcp reuse. Each starts
//! its processes through the one spawner in `process`, watches the timeout and the
//! cancel token, and ends with an [`ExecOutcome`].

pub mod idle;
pub mod live;
pub mod print;
pub mod pty;
pub mod terminal_wait;

use crate::config::profile::Background;
use crate::process::{CancelToken, KilledProcess};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

/// After the command exits, its output is read on until it has been quiet this long:
/// what it wrote just before exiting can still be in flight (a pipe's last chunk, a
/// background job's closing line), and a quarter second covers that on a loaded
/// machine while adding nothing a person notices to a run that is over.
pub const DRAIN_IDLE: Duration = Duration::from_millis(250);
/// ...or until this long in total: a background job that keeps the pipe or PTY open
/// and keeps writing would otherwise hold the run forever. Two seconds is well past
/// any real tail of output and still short next to a command's own run time.
pub const DRAIN_TOTAL: Duration = Duration::from_secs(2);
/// Live output events (a JSON line, a status redraw) are coalesced to at most one per
/// this interval: twenty a second reads as continuous, and a command that writes a
/// byte at a time does not cost an event per write.
pub const EVENT_INTERVAL: Duration = Duration::from_millis(50);

/// How a run is watched, the same for every executor: how long it may take, how
/// long TERM is given before KILL, what becomes of processes it leaves running, and
/// the token that cancels it.
#[derive(Debug, Clone, Copy)]
pub struct Watch<'a> {
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub background: Background,
    pub cancel: &'a CancelToken,
    /// `jobs.idle_timeout`: stop a run that has printed nothing for this long (a
    /// pager, an editor, `watch` waiting on a terminal it does not have).
    pub idle: Option<Duration>,
}

/// How a run ended, before it is shaped into a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    /// Nothing printed for this many seconds (`jobs.idle_timeout`).
    Idle(u64),
    /// This program waits for a terminal the run does not have (print mode); see
    /// [`terminal_wait`].
    NeedsTerminal(terminal_wait::ProgramName),
    Cancelled(i32),
    /// PTY kill key pressed.
    Killed,
    MissingStatus,
}

#[derive(Debug, Clone)]
pub struct ExecOutcome {
    pub end: End,
    pub background_killed: Vec<KilledProcess>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot start {}: {err}", program.display())]
    Spawn {
        program: PathBuf,
        err: std::io::Error,
    },
    #[error("PTY error: {0}")]
    Pty(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A pipe for a command's output: both ends close-on-exec, the read end (ours)
/// non-blocking so one loop can read several pipes and watch the clock, and (Linux)
/// enlarged to 1 MiB so a fast writer blocks less often between two reads.
pub(crate) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // Failures here only mean a smaller pipe.
    #[cfg(target_os = "linux")]
    let _ = fcntl(&r, FcntlArg::F_SETPIPE_SZ(1 << 20));
    let _ = crate::process::set_nonblocking(&r);
    Ok((r, w))
}

/// What one read of a non-blocking descriptor gave.
pub(crate) enum Read {
    Bytes(usize),
    /// Nothing to read now; more may come.
    Empty,
    /// End of file, or an error that ends the stream just the same.
    End,
}

/// Read once from `fd` into `buf`, retrying a read interrupted by a signal.
pub(crate) fn read_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Read {
    loop {
        match nix::unistd::read(fd, buf) {
            Ok(0) => return Read::End,
            Ok(n) => return Read::Bytes(n),
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => return Read::Empty,
            Err(_) => return Read::End,
        }
    }
}

/// Wait until one of `fds` (output pipes, the child's pidfd) is readable, or
/// `timeout` passes.
pub(crate) fn poll_fds(fds: &[Option<BorrowedFd<'_>>], timeout: Duration) {
    let mut p: Vec<PollFd<'_>> = fds
        .iter()
        .flatten()
        .map(|&fd| PollFd::new(fd, PollFlags::POLLIN))
        .collect();
    if p.is_empty() {
        std::thread::sleep(timeout);
        return;
    }
    let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
    // An error (EINTR) only ends the wait early: callers loop and check again.
    let _ = poll(&mut p, timeout);
}
