//! Execution: how a command value is spawned, watched, and torn down.
//!
//! A [`SpawnSpec`] is the command *value* (program, args, env, cwd); `process` owns
//! *how* it is spawned (its own session and cgroup, parent-death signal, limits) and
//! how its tree is stopped (freeze it, then "TERM, wait a grace period, KILL");
//! `cgroup` makes the run groups and the watchdog that ends them if agentbash dies;
//! `print` and `pty` are the two ways of wiring its terminal.

pub mod cgroup;
pub mod env;
pub mod live;
pub mod print;
pub mod process;
pub mod pty;
pub mod session;
pub mod snapshot;
pub mod state;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// The command value: what to run, with exactly which environment, where.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The complete environment (the child's is cleared first).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// setrlimit values applied in the child (0 = unlimited).
    pub limits: Limits,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub address_space_mb: u64,
    pub file_size_mb: u64,
    pub processes: u64,
    pub cpu_seconds: u64,
}

/// A process agentbash had to kill.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KilledProcess {
    pub pid: i32,
    pub command: String,
}

/// Cancellation shared between a run and whoever may stop it (signal handlers,
/// an RPC `abort_bash`, an MCP cancel). Cheap to clone; checked by the run loops at
/// least every 50 ms.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicI32>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel with the signal number that caused it (the first reason wins).
    pub fn cancel(&self, signal: i32) {
        let _ = self
            .0
            .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    }

    pub fn reason(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The raw atomic, for async-signal-safe handlers.
    pub fn atomic(&self) -> &Arc<AtomicI32> {
        &self.0
    }
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
