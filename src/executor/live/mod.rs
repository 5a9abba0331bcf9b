//! Live shells for long-lived callers (rpc, mcp, a Rust harness): one bash per
//! key — session, shell, prefix, snapshot, environment, limits — kept running and
//! reused, so a command costs a write and a read instead of a fork, an exec and a bash
//! start-up.
//!
//! A live shell reads NUL-separated frames (directory, command) on its stdin and runs
//! each with `eval`, stdin on the null device, output on one pipe read into the same
//! [`OutputSink`] as print mode. Completion is a marker line — a per-shell token, the
//! command's sequence number and its exit status — written to a saved copy of the
//! output descriptor. Without a session, each command runs in a subshell so nothing it
//! changes (cwd, variables, functions) leaks into the next caller's command — except a
//! plain program (`session::plain_command_word`: words only, not a function, alias or
//! state-changing builtin), which cannot change the shell and runs in it directly, the
//! shell putting back its directory afterwards. With a session, the command runs in the
//! shell itself, which then saves its state for agentbash to commit, exactly as a
//! spawned session run does (a plain program skips the save), and has its options,
//! traps and descriptors reset.
//!
//! A shell found dead is replaced (with a notice in the result). A timeout or cancel
//! tears down that shell's whole tree (its own session id and marker: never another
//! key's shell) and drops it; the next run starts a fresh one from the session's last
//! committed state.

mod command;
mod scanner;
mod shell;

use shell::{LiveShell, RunError};

use crate::executor::{ExecError, ExecOutcome};
use crate::output::sink::OutputSink;
use crate::process::Limits;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const READ_BUF: usize = 64 * 1024;
/// Idle shells kept by default; the least recently used beyond this are stopped.
pub const DEFAULT_CAPACITY: usize = 16;

/// What makes two runs able to share a shell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShellKey {
    pub session: Option<String>,
    pub shell: PathBuf,
    pub prefix: String,
    /// Snapshot path and content hash.
    pub snapshot: Option<(PathBuf, u64)>,
    /// The environment agentbash built (before the session's exports).
    pub env: Vec<(String, String)>,
    /// setrlimit values (address space, file size, processes, cpu seconds).
    pub limits: [u64; 4],
    /// The sandbox the shell runs in (`None`: unconfined): a sandboxed and an
    /// unsandboxed run never share a shell.
    pub sandbox: Option<String>,
}

/// Whether a run can go through a live shell: bash with the default `-c`, print mode,
/// no stdin.
pub fn eligible(shell: &Path, args: &[String], print_mode: bool, stdin: bool) -> bool {
    crate::shell::resolve::is_bash(shell)
        && args.len() == 1
        && args[0] == "-c"
        && print_mode
        && !stdin
}

/// One command for a live shell.
pub struct LiveJob<'a> {
    pub key: ShellKey,
    /// The environment a new shell starts with (the session's exports applied).
    pub start_env: &'a BTreeMap<String, String>,
    /// Bash run once when a shell starts: the snapshot and the session's restore.
    pub setup: String,
    /// For a session: tags of the saved state the shell must hold, and of the state
    /// after this run commits (see `ActiveSession::generation_tags`).
    pub generation: Option<(u64, u64)>,
    pub script: &'a str,
    /// A session shell saves functions and aliases after this command (it may have
    /// changed them).
    pub save_definitions: bool,
    /// A command that cannot change the shell's state unless this word names a
    /// function or alias (see `session::plain_command_word`): the shell checks, and
    /// when it names neither, a session shell skips the save and a session-less one
    /// runs it without a subshell.
    pub stateless_word: Option<&'a str>,
    pub cwd: &'a Path,
    pub watch: super::Watch<'a>,
    pub limits: Limits,
    /// Applied when a new shell starts, and held (its TMPDIR with it) while it lives.
    pub sandbox: Option<Arc<crate::sandbox::Confinement>>,
}

/// How a live run went.
#[derive(Debug)]
pub struct LiveOutcome {
    pub outcome: ExecOutcome,
    pub notices: Vec<String>,
    /// The shell that ran it.
    pub shell_pid: i32,
    /// A session shell ran a stateless command and saved nothing: nothing to commit.
    pub session_unchanged: bool,
    /// The private TMPDIR of the sandbox the shell was started in: the one the command
    /// used, which for a reused shell is not the one its own run prepared.
    pub tmpdir: Option<std::path::PathBuf>,
    /// What the shell's network proxy refused during this run (its proxy serves every
    /// run of the shell); `None` without a network allowlist.
    pub network_denied: Option<Vec<crate::sandbox::Refusal>>,
}

/// Live shells, reusable across threads. Runs on one session are serialized by the
/// session lock; concurrent runs on one non-session key each get their own shell.
pub struct ShellPool {
    idle: Mutex<Vec<LiveShell>>,
    pids: Mutex<HashSet<i32>>,
    capacity: usize,
}

impl Default for ShellPool {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ShellPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellPool")
            .field("idle", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl ShellPool {
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// Keep at most `capacity` idle shells.
    pub fn with_capacity(capacity: usize) -> Self {
        // Several commands run at once from now on: teardown must only ever touch
        // what it can attribute to its own run.
        crate::process::teardown::set_shared_process();
        ShellPool {
            idle: Mutex::new(Vec::new()),
            pids: Mutex::new(HashSet::new()),
            capacity: capacity.max(1),
        }
    }

    /// Idle shells.
    pub fn len(&self) -> usize {
        self.idle.lock().map(|v| v.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pids of every shell the pool owns (idle or running a command).
    pub fn pids(&self) -> Vec<i32> {
        self.pids
            .lock()
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Stop every idle shell.
    pub fn clear(&self) {
        let shells: Vec<LiveShell> = self
            .idle
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        for s in shells {
            self.stop(s);
        }
    }

    fn stop(&self, mut s: LiveShell) {
        s.kill();
        if let Ok(mut p) = self.pids.lock() {
            p.remove(&s.pid);
        }
    }

    fn take(&self, key: &ShellKey) -> Option<LiveShell> {
        let mut idle = self.idle.lock().ok()?;
        let i = idle.iter().position(|s| &s.key == key)?;
        Some(idle.remove(i))
    }

    fn put_back(&self, shell: LiveShell) {
        let evicted = match self.idle.lock() {
            Ok(mut idle) => {
                idle.push(shell);
                if idle.len() > self.capacity {
                    Some(idle.remove(0))
                } else {
                    None
                }
            }
            Err(_) => Some(shell),
        };
        if let Some(s) = evicted {
            self.stop(s);
        }
    }

    fn start(&self, job: &LiveJob<'_>) -> Result<LiveShell, ExecError> {
        let s = LiveShell::spawn(job)?;
        if let Ok(mut p) = self.pids.lock() {
            p.insert(s.pid);
        }
        Ok(s)
    }

    /// Run `job` on the key's live shell (starting or replacing it as needed).
    pub fn run(
        &self,
        job: &LiveJob<'_>,
        sink: &mut OutputSink,
        on_output: &mut dyn FnMut(&str),
    ) -> Result<LiveOutcome, ExecError> {
        let mut notices = Vec::new();
        let mut shell = match self.take(&job.key) {
            Some(mut s) => {
                if let Some(how) = s.exited() {
                    notices.push(replaced_notice(&job.key, &how));
                    self.stop(s);
                    self.start(job)?
                } else if job
                    .generation
                    .is_some_and(|(want, _)| s.generation != Some(want))
                {
                    // The session changed outside this shell: restart from what was saved.
                    self.stop(s);
                    self.start(job)?
                } else {
                    s
                }
            }
            None => self.start(job)?,
        };
        let mut network_mark = shell.network_mark();
        let mut ended = shell.run(job, sink, on_output, &self.pids);
        if let Err(RunError::Dead) = ended {
            // It died after the health check, before taking the command.
            let how = shell
                .exited()
                .unwrap_or_else(|| "it stopped reading commands".into());
            notices.push(replaced_notice(&job.key, &how));
            self.stop(shell);
            shell = self.start(job)?;
            network_mark = shell.network_mark();
            ended = shell.run(job, sink, on_output, &self.pids);
        }
        let pid = shell.pid;
        let (end, background_killed, healthy) = match ended {
            Ok(r) => r,
            Err(RunError::Dead) => {
                self.stop(shell);
                return Err(ExecError::Io(std::io::Error::other(
                    "the live shell stopped reading commands",
                )));
            }
            Err(RunError::Io(e)) => {
                self.stop(shell);
                return Err(ExecError::Io(e));
            }
        };
        if let Some(how) = shell.ended.take() {
            notices.push(ended_notice(&job.key, &how));
        }
        let unchanged = shell.unchanged && healthy;
        let network_denied = shell
            .network_log()
            .zip(network_mark)
            .map(|(log, mark)| log.since(&mark));
        let tmpdir = shell
            .sandbox
            .as_ref()
            .and_then(|c| c.tmpdir.as_ref())
            .map(|t| t.path().to_path_buf());
        if healthy {
            shell.generation = job
                .generation
                .map(|(want, next)| if unchanged { want } else { next });
            self.put_back(shell);
        } else {
            self.stop(shell);
        }
        Ok(LiveOutcome {
            outcome: ExecOutcome {
                end,
                background_killed,
            },
            notices,
            shell_pid: pid,
            session_unchanged: unchanged,
            tmpdir,
            network_denied,
        })
    }
}

impl Drop for ShellPool {
    fn drop(&mut self) {
        self.clear();
    }
}

fn replaced_notice(key: &ShellKey, how: &str) -> String {
    match &key.session {
        Some(s) => format!(
            "The live shell of session {s} had exited ({how}); started a new one from the session's last saved state"
        ),
        None => format!("The live shell had exited ({how}); started a new one"),
    }
}

fn ended_notice(key: &ShellKey, how: &str) -> String {
    match &key.session {
        Some(s) => format!(
            "The live shell of session {s} ended during this command ({how}); the next command starts a new one from the session's last saved state"
        ),
        None => format!(
            "The live shell ended during this command ({how}); the next command starts a new one"
        ),
    }
}
