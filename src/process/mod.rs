//! Processes: the one spawner every process agentbash starts goes through (`spawn`),
//! the run groups that bind a run's processes to it and the watchdog that ends them
//! if agentbash dies (`cgroup`), tree teardown (`teardown`), what is read of /proc
//! (`procfs`), and the signal dispositions commands inherit (`signals`).

pub mod cgroup;
mod pidns;
pub mod procfs;
pub mod signals;
pub mod spawn;
pub mod teardown;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// Makes `fd` non-blocking (its other status flags kept), so that one loop can read,
/// write and watch the clock: output pipes, a PTY's master, a job's control socket.
pub fn set_nonblocking(fd: impl std::os::fd::AsFd) -> nix::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let fd = fd.as_fd();
    let flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).map(drop)
}

/// Set in every command so teardown can find descendants that left the process
/// group (setsid, double fork) but kept the environment.
pub const RUN_MARKER: &str = "AGENTBASH_RUN_ID";

/// Read a small file the kernel generates (`/proc`, cgroupfs) whole, with reads as
/// large as such a file usually is: `std::fs::read_to_string` sizes its buffer from
/// the file's length, which these files report as 0, and so starts with 32 bytes and
/// doubles, a system call each time (and a `statx` first). Errors as `read_to_string`
/// (invalid UTF-8 included).
pub fn read_kernel_file(path: impl AsRef<std::path::Path>) -> std::io::Result<String> {
    use std::io::Read;
    /// Most of these files fit: a `stat` line, `cgroup.procs` of a run, `cpu.stat`.
    const FIRST_READ: usize = 4096;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; FIRST_READ];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

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
    /// The kernel sandbox the child enters right before it execs (`None`: none).
    pub sandbox: Option<Arc<crate::sandbox::Confinement>>,
    /// Outlive agentbash: no parent-death signal (a job's supervisor, which must
    /// survive the CLI that started it). Everything else is spawned bound to us.
    pub detached: bool,
    /// What the command leaves running may outlive agentbash (`process.background =
    /// "keep"`): in the sandbox's PID namespace, its init then outlives us too.
    pub keep_background: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub address_space_mb: u64,
    pub file_size_mb: u64,
    pub processes: u64,
    pub cpu_seconds: u64,
}

/// A process agentbash had to kill.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
