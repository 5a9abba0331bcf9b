//! §6.3 Live shells for long-lived callers (rpc, mcp, a Rust harness): one bash per
//! key — session, shell, prefix, snapshot, environment, limits — kept running and
//! reused, so a command costs a write and a read instead of a fork, an exec and a bash
//! start-up.
//!
//! A live shell reads NUL-separated frames (sentinel nonce, directory, command) on its
//! stdin and runs each with `eval`, stdin on the null device, output on one pipe read
//! into the same [`OutputSink`] as print mode. Completion is a sentinel line carrying
//! the exit status, written to a saved copy of the output descriptor. Without a
//! session, each command runs in a subshell, so nothing it changes (cwd, variables,
//! functions) leaks into the next caller's command; with one, it runs in the shell
//! itself, which then saves its state for agentbash to commit, exactly as a spawned
//! session run does, and has its options, traps and descriptors reset.
//!
//! A shell found dead is replaced (with a notice in the result). A timeout or cancel
//! tears down that shell's whole tree (its own session id and marker: never another
//! key's shell) and drops it; the next run starts a fresh one from the session's last
//! committed state.

use super::print::{EVENT_INTERVAL, exit_to_end, pidfd_open, pipe, poll_fds};
use super::process::{self, Teardown};
use super::{CancelToken, End, ExecError, ExecOutcome, KilledProcess, Limits, SpawnSpec};
use crate::output::sink::OutputSink;
use crate::profile::Background;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const READ_BUF: usize = 64 * 1024;
const DRAIN_IDLE: Duration = Duration::from_millis(250);
const DRAIN_TOTAL: Duration = Duration::from_secs(2);
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
}

/// Whether a run can go through a live shell: bash with the default `-c`, print mode,
/// no stdin.
pub fn eligible(shell: &Path, args: &[String], print_mode: bool, stdin: bool) -> bool {
    crate::shell::is_bash(shell) && args.len() == 1 && args[0] == "-c" && print_mode && !stdin
}

/// One command for a live shell.
pub struct LiveJob<'a> {
    pub key: ShellKey,
    /// The environment a new shell starts with (the session's exports applied).
    pub start_env: &'a BTreeMap<String, String>,
    /// Bash run once when a shell starts: the snapshot and the session's restore.
    pub setup: String,
    /// For a session: (generation the shell must hold, generation after this run).
    pub generation: Option<(u64, u64)>,
    pub script: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub background: Background,
    pub cancel: &'a CancelToken,
    pub limits: Limits,
}

/// How a live run went.
#[derive(Debug)]
pub struct LiveOutcome {
    pub outcome: ExecOutcome,
    pub notices: Vec<String>,
    /// The shell that ran it.
    pub shell_pid: i32,
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
        process::set_shared_process();
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
        let mut ended = shell.run(job, sink, on_output, &self.pids);
        if let Err(RunError::Dead) = ended {
            // It died after the health check, before taking the command.
            let how = shell
                .exited()
                .unwrap_or_else(|| "it stopped reading commands".into());
            notices.push(replaced_notice(&job.key, &how));
            self.stop(shell);
            shell = self.start(job)?;
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
        if healthy {
            shell.generation = job.generation.map(|(_, next)| next);
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

enum RunError {
    /// The shell was gone before it took the command.
    Dead,
    Io(std::io::Error),
}

struct LiveShell {
    key: ShellKey,
    child: Child,
    pid: i32,
    marker: String,
    ctl: std::io::PipeWriter,
    out: OwnedFd,
    pidfd: Option<OwnedFd>,
    /// For a session shell, the session generation its memory matches.
    generation: Option<u64>,
    dead: bool,
}

/// The bash program a live shell runs.
fn shell_program(job: &LiveJob<'_>) -> String {
    let session = job.key.session.is_some();
    // Plain `exec`, never `builtin exec`: only the former makes redirections stick.
    let mut t = String::from("exec {__agentbash_out}>&1\n");
    t.push_str(&job.setup);
    let run = if session {
        t.push_str(
            "__agentbash_opts=\"$(builtin set +o; builtin shopt -p)\"\n\
             __agentbash_live_exit() {\n  __agentbash_session_save \"$1\"\n  builtin printf '\\036%s\\036x%s\\n' \"$__agentbash_n\" \"$1\" >&\"$__agentbash_out\"\n}\n\
             builtin trap '{ __agentbash_live_exit \"$?\"; } 2>/dev/null' EXIT\n",
        );
        "  [ \"$PWD\" = \"$__agentbash_d\" ] || builtin cd -- \"$__agentbash_d\" && builtin eval \"$__agentbash_c\" </dev/null\n\
         \x20 { __agentbash_s=$?; __agentbash_session_save \"$__agentbash_s\"; builtin eval \"$__agentbash_opts\"; builtin trap '{ __agentbash_live_exit \"$?\"; } 2>/dev/null' EXIT; } 2>/dev/null\n\
         \x20 exec 1>&\"$__agentbash_out\" 2>&1\n"
    } else {
        "  ( builtin cd -- \"$__agentbash_d\" && builtin eval \"$__agentbash_c\" ) </dev/null\n\
         \x20 __agentbash_s=$?\n"
    };
    t.push_str(
        "while IFS= builtin read -r -d '' __agentbash_n && IFS= builtin read -r -d '' __agentbash_d && IFS= builtin read -r -d '' __agentbash_c; do\n",
    );
    t.push_str(run);
    t.push_str("  builtin printf '\\036%s\\036%s\\n' \"$__agentbash_n\" \"$__agentbash_s\" >&\"$__agentbash_out\"\ndone\n");
    t
}

fn describe_status(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by {}", crate::result::signal_name(sig)),
        _ => "unknown status".into(),
    }
}

/// Finds the completion sentinel in the output stream; everything before it goes to
/// the sink, and no byte that may start it is passed on early.
struct Scanner {
    sentinel: Vec<u8>,
    carry: Vec<u8>,
    /// (exit status, the shell is exiting) once the sentinel line is complete.
    found: Option<(Option<i32>, bool)>,
}

impl Scanner {
    fn new(nonce: &str) -> Self {
        let mut sentinel = vec![0x1e];
        sentinel.extend_from_slice(nonce.as_bytes());
        sentinel.push(0x1e);
        Scanner {
            sentinel,
            carry: Vec::new(),
            found: None,
        }
    }

    fn feed(&mut self, data: &[u8], sink: &mut OutputSink) {
        if self.found.is_some() {
            if !data.is_empty() {
                sink.push(data);
            }
            return;
        }
        self.carry.extend_from_slice(data);
        if let Some(i) = memchr::memmem::find(&self.carry, &self.sentinel) {
            if i > 0 {
                sink.push(&self.carry[..i]);
                self.carry.drain(..i);
            }
            let rest = &self.carry[self.sentinel.len()..];
            if let Some(nl) = memchr::memchr(b'\n', rest) {
                let line = String::from_utf8_lossy(&rest[..nl]).into_owned();
                let (exiting, digits) = match line.strip_prefix('x') {
                    Some(d) => (true, d.to_string()),
                    None => (false, line),
                };
                let after = rest[nl + 1..].to_vec();
                self.carry.clear();
                self.found = Some((digits.trim().parse().ok(), exiting));
                if !after.is_empty() {
                    sink.push(&after);
                }
            }
            return;
        }
        let keep = (1..self.sentinel.len())
            .rev()
            .find(|&k| self.carry.ends_with(&self.sentinel[..k]))
            .unwrap_or(0);
        let cut = self.carry.len() - keep;
        if cut > 0 {
            sink.push(&self.carry[..cut]);
            self.carry.drain(..cut);
        }
    }

    /// No sentinel is coming: pass on what was held back.
    fn flush(&mut self, sink: &mut OutputSink) {
        if !self.carry.is_empty() {
            sink.push(&self.carry);
            self.carry.clear();
        }
    }
}

/// Read what is available into `f`. Returns (bytes, eof).
fn read_available(
    fd: i32,
    buf: &mut [u8],
    budget: usize,
    mut f: impl FnMut(&[u8]),
) -> (usize, bool) {
    let mut total = 0;
    while total < budget {
        // SAFETY: reading into a buffer we own, within its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            f(&buf[..n as usize]);
            total += n as usize;
        } else if n == 0 {
            return (total, true);
        } else {
            match std::io::Error::last_os_error().kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock => return (total, false),
                _ => return (total, true),
            }
        }
    }
    (total, false)
}

/// Children of this process (every thread's).
fn own_children() -> Option<Vec<i32>> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let c = std::fs::read_to_string(t.path().join("children")).ok()?;
        out.extend(
            c.split_ascii_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    Some(out)
}

impl LiveShell {
    fn spawn(job: &LiveJob<'_>) -> Result<LiveShell, ExecError> {
        let (out_r, out_w) = pipe()?;
        let out_w2 = out_w.try_clone()?;
        let (ctl_r, ctl_w) = std::io::pipe()?;
        let marker = format!("live-{}", super::state::nonce());
        let mut env: Vec<(String, String)> = job
            .start_env
            .iter()
            .filter(|(k, _)| k.as_str() != super::env::RUN_MARKER)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push((super::env::RUN_MARKER.to_string(), marker.clone()));
        let spec = SpawnSpec {
            program: job.key.shell.clone(),
            args: vec![
                "--norc".into(),
                "--noprofile".into(),
                "-c".into(),
                shell_program(job),
            ],
            env,
            cwd: job.cwd.to_path_buf(),
            limits: job.limits,
        };
        let child = process::spawn(
            &spec,
            Stdio::from(ctl_r),
            Stdio::from(out_w),
            Stdio::from(out_w2),
        )
        .map_err(|err| ExecError::Spawn {
            program: spec.program.clone(),
            err,
        })?;
        let pid = child.id() as i32;
        Ok(LiveShell {
            key: job.key.clone(),
            pidfd: pidfd_open(pid),
            child,
            pid,
            marker,
            ctl: ctl_w,
            out: out_r,
            generation: job.generation.map(|(want, _)| want),
            dead: false,
        })
    }

    /// `Some(how)` when the shell has exited.
    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(s)) => Some(describe_status(s)),
            Ok(None) => None,
            Err(_) => Some("status unknown".into()),
        }
    }

    /// Stop the shell and everything it started.
    fn kill(&mut self) {
        if !self.dead {
            Teardown::new(self.pid, &self.marker).terminate(Duration::from_millis(200), true);
            let _ = self.child.wait();
            self.dead = true;
        }
    }

    /// Could anything but the shell itself be left from the last command? A cheap
    /// check first (the shell's children, then ours), the full scan only if needed.
    fn maybe_has_others(&self, pool_pids: &Mutex<HashSet<i32>>) -> bool {
        let kids = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.pid));
        match kids {
            Ok(k) if k.trim().is_empty() => {}
            _ => return true,
        }
        let Some(ours) = own_children() else {
            return true;
        };
        let Ok(known) = pool_pids.lock() else {
            return true;
        };
        ours.iter().any(|p| !known.contains(p))
    }

    /// Run one command. Ok((end, background killed, shell still usable)).
    fn run(
        &mut self,
        job: &LiveJob<'_>,
        sink: &mut OutputSink,
        on_output: &mut dyn FnMut(&str),
        pool_pids: &Mutex<HashSet<i32>>,
    ) -> Result<(End, Vec<KilledProcess>, bool), RunError> {
        let mut buf = vec![0u8; READ_BUF];
        let fd = self.out.as_raw_fd();
        // Whatever a kept background job printed since the last command is not ours.
        read_available(fd, &mut buf, usize::MAX, |_| {});
        let nonce = super::state::nonce();
        let mut frame = Vec::with_capacity(job.script.len() + 128);
        frame.extend_from_slice(nonce.as_bytes());
        frame.push(0);
        frame.extend_from_slice(job.cwd.as_os_str().as_bytes());
        frame.push(0);
        frame.extend_from_slice(job.script.as_bytes());
        frame.push(0);
        if let Err(e) = self.ctl.write_all(&frame).and_then(|_| self.ctl.flush()) {
            return Err(if e.kind() == std::io::ErrorKind::BrokenPipe {
                RunError::Dead
            } else {
                RunError::Io(e)
            });
        }
        let teardown = Teardown::new(self.pid, &self.marker);
        let mut scan = Scanner::new(&nonce);
        let start = Instant::now();
        let deadline = start + job.timeout;
        let mut last_emit = start - EVENT_INTERVAL;
        let mut emit = |sink: &mut OutputSink, last_emit: &mut Instant, force: bool| {
            let now = Instant::now();
            if sink.has_pending()
                && (force
                    || sink.pending_full()
                    || now.duration_since(*last_emit) >= EVENT_INTERVAL)
            {
                if let Some(t) = sink.take_pending() {
                    on_output(&t);
                }
                *last_emit = now;
            }
        };
        let mut stopped: Option<End> = None;
        let mut killed = Vec::new();
        let mut exit_status = None;
        loop {
            emit(sink, &mut last_emit, false);
            if scan.found.is_some() {
                break;
            }
            let now = Instant::now();
            if let Ok(Some(s)) = self.child.try_wait() {
                exit_status = Some(s);
                break;
            }
            let reason = match job.cancel.reason() {
                Some(sig) => Some(End::Cancelled(sig)),
                None if now >= deadline => Some(End::TimedOut),
                None => None,
            };
            if let Some(end) = reason {
                stopped = Some(end);
                killed = std::thread::scope(|s| {
                    let h = s.spawn(|| teardown.terminate(job.kill_grace, true));
                    while !h.is_finished() {
                        poll_fds(&[Some(fd)], Duration::from_millis(10));
                        read_available(fd, &mut buf, 8 * READ_BUF, |d| scan.feed(d, sink));
                    }
                    h.join().unwrap_or_default()
                });
                killed.retain(|k| k.pid != self.pid);
                let _ = self.child.wait();
                self.dead = true;
                break;
            }
            let mut wait = deadline.saturating_duration_since(now).min(EVENT_INTERVAL);
            if sink.has_pending() {
                wait = wait.min(EVENT_INTERVAL.saturating_sub(now.duration_since(last_emit)));
            }
            poll_fds(
                &[Some(fd), self.pidfd.as_ref().map(|f| f.as_raw_fd())],
                wait,
            );
            let budget = if sink.pending_full() { 0 } else { 8 * READ_BUF };
            read_available(fd, &mut buf, budget, |d| scan.feed(d, sink));
        }
        if let Some(s) = exit_status {
            // The shell died during the command: take what it printed (its EXIT trap
            // may still have written the sentinel), as print mode drains a dead shell.
            self.dead = true;
            let at = Instant::now();
            let mut last_output = at;
            loop {
                let (n, eof) = read_available(fd, &mut buf, 8 * READ_BUF, |d| scan.feed(d, sink));
                let now = Instant::now();
                if n > 0 {
                    last_output = now;
                }
                if eof
                    || now.duration_since(last_output) >= DRAIN_IDLE
                    || now.duration_since(at) >= DRAIN_TOTAL
                {
                    break;
                }
                poll_fds(&[Some(fd)], Duration::from_millis(10));
            }
            if scan.found.is_none() {
                scan.flush(sink);
                emit(sink, &mut last_emit, true);
                let mut bg = Vec::new();
                if job.background == Background::Kill {
                    bg = teardown.terminate(job.kill_grace, false);
                }
                teardown.reap_orphans();
                return Ok((exit_to_end(s), bg, false));
            }
        }
        if let Some(end) = stopped {
            scan.flush(sink);
            emit(sink, &mut last_emit, true);
            teardown.reap_orphans();
            return Ok((end, killed, false));
        }
        let (code, exiting) = scan.found.unwrap_or((None, false));
        let mut background_killed = Vec::new();
        if job.background == Background::Kill
            && self.maybe_has_others(pool_pids)
            && !teardown.others().is_empty()
        {
            background_killed = teardown.terminate(job.kill_grace, false);
            read_available(fd, &mut buf, 8 * READ_BUF, |d| scan.feed(d, sink));
            teardown.reap_orphans();
        }
        emit(sink, &mut last_emit, true);
        if exiting || self.dead {
            // `exit N` in a session: the shell is on its way out; let it go.
            let _ = self.child.wait();
            self.dead = true;
        }
        let end = match code {
            Some(c) => End::Exited(c),
            None => End::MissingStatus,
        };
        Ok((end, background_killed, !self.dead))
    }
}

impl Drop for LiveShell {
    fn drop(&mut self) {
        if !self.dead {
            // SAFETY: kill(2) on the shell's own process group (it is a session leader).
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
            }
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sink::SinkConfig;

    fn sink() -> OutputSink {
        OutputSink::new(
            SinkConfig {
                max_bytes: 1 << 20,
                ..Default::default()
            },
            None,
            false,
        )
    }

    #[test]
    fn sentinel_split_across_reads() {
        let mut s = sink();
        let mut sc = Scanner::new("abc");
        sc.feed(b"hello\x1ea", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"bc\x1e4", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"2\nlate", &mut s);
        assert_eq!(sc.found, Some((Some(42), false)));
        let r = s.finish();
        assert_eq!(r.text, "hellolate");
    }

    #[test]
    fn lookalike_is_output() {
        let mut s = sink();
        let mut sc = Scanner::new("abc");
        sc.feed(b"x\x1eab!", &mut s);
        sc.feed(b"\x1eabc\x1ex3\n", &mut s);
        assert_eq!(sc.found, Some((Some(3), true)));
        // The lookalike's control byte is sanitized away; its text is output.
        assert_eq!(s.finish().text, "xab!");
    }
}
