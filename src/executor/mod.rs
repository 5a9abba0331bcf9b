//! Executors: the three ways a command runs once the pipeline has decided how.
//! `print` wires it to pipes, `pty` to a pseudo-terminal (with a live viewport), and
//! `live` hands it to a warm shell from the pool that rpc and mcp reuse. Each starts
//! its processes through the one spawner in `process`, watches the timeout and the
//! cancel token, and ends with an [`ExecOutcome`].

pub mod live;
pub mod print;
pub mod pty;

use crate::config::profile::Background;
use crate::process::{CancelToken, KilledProcess};
use std::path::PathBuf;
use std::time::Duration;

/// How a run is watched, the same for every executor: how long it may take, how
/// long TERM is given before KILL, what becomes of processes it leaves running, and
/// the token that cancels it.
#[derive(Debug, Clone, Copy)]
pub struct Watch<'a> {
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub background: Background,
    pub cancel: &'a CancelToken,
}

/// How a run ended, before it is shaped into a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Exited(i32),
    Signaled(i32),
    TimedOut,
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
