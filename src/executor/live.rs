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

use super::print::exit_to_end;
use super::{
    DRAIN_IDLE, DRAIN_TOTAL, EVENT_INTERVAL, End, ExecError, ExecOutcome, Read, pipe, poll_fds,
    read_some,
};
use crate::config::profile::Background;
use crate::output::sink::OutputSink;
use crate::process::cgroup::{RunGroup, watchdog_pid};
use crate::process::spawn::{self, Child, ChildIo};
use crate::process::teardown::Teardown;
use crate::process::{KilledProcess, Limits, SpawnSpec};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Marks this shell's completion lines (never stored in the shell next to \x1e).
    token: String,
    /// Commands sent so far (the next one is `sent + 1`).
    sent: u64,
    ctl: std::io::PipeWriter,
    out: OwnedFd,
    pidfd: Option<OwnedFd>,
    /// For a session shell, the session generation its memory matches.
    generation: Option<u64>,
    dead: bool,
    /// The last command was stateless and the session shell saved nothing.
    unchanged: bool,
    /// The read buffer, kept between commands.
    buf: Vec<u8>,
    /// How the shell itself ended during the last command (the command killed it),
    /// for that command's notice.
    ended: Option<String>,
    /// The shell's cgroup (dropped after the shell is stopped): everything its
    /// commands start is in it.
    group: Option<Arc<RunGroup>>,
    /// The sandbox the shell was started in; its TMPDIR is removed with the shell.
    sandbox: Option<Arc<crate::sandbox::Confinement>>,
}

/// The bash program a live shell runs. Markers are `\x1e<token><kind><n> <status>`:
/// kind `s` (command `n` done; without a session followed by the subshell's pid),
/// `x` (done, and the session's shell is exiting), `c` (subshell `n` has exited).
fn shell_program(job: &LiveJob<'_>, token: &str) -> String {
    // Plain `exec`, never `builtin exec`: only the former makes redirections stick.
    let mut t = format!("exec {{__agentbash_out}}>&1\n__agentbash_t={token}\n__agentbash_i=0\n");
    t.push_str(&job.setup);
    let read =
        "IFS= builtin read -r -d '' __agentbash_d && IFS= builtin read -r -d '' __agentbash_c";
    if job.key.session.is_some() {
        t.push_str(
            "__agentbash_opts=\"$(builtin set +o; builtin shopt -p)\"\n\
             __agentbash_optsig=\"$-:$SHELLOPTS:$BASHOPTS\"\n\
             __agentbash_live_exit() {\n  __agentbash_session_save \"$1\" \"$__agentbash_v\"\n  builtin printf '\\036%sx%s %s\\n' \"$__agentbash_t\" \"$__agentbash_i\" \"$1\" >&\"$__agentbash_out\"\n}\n\
             builtin trap '{ __agentbash_live_exit \"$?\"; } 2>/dev/null' EXIT\n",
        );
        t.push_str(&format!(
            "while {read} && IFS= builtin read -r -d '' __agentbash_v; do\n"
        ));
        t.push_str(
            "  __agentbash_i=$((__agentbash_i+1))\n\
             \x20 __agentbash_k=s\n\
             \x20 case $__agentbash_v in q*) if { builtin declare -F -- \"${__agentbash_v#q}\" || builtin alias -- \"${__agentbash_v#q}\"; } >/dev/null 2>&1; then __agentbash_v=1; else __agentbash_k=u; fi;; esac\n\
             \x20 builtin [ \"$PWD\" = \"$__agentbash_d\" ] || { __agentbash_k=s; builtin cd -- \"$__agentbash_d\"; } && builtin eval \"$__agentbash_c\" </dev/null\n\
             \x20 { __agentbash_s=$?\n",
        );
        // The command may have defined a function named like a builtin used below.
        t.push_str("    ");
        t.push_str(&crate::shell::dump::unshadow(None));
        t.push_str(
            "    builtin [ $__agentbash_k = u ] || __agentbash_session_save \"$__agentbash_s\" \"$__agentbash_v\"; builtin [ \"$-:$SHELLOPTS:$BASHOPTS\" = \"$__agentbash_optsig\" ] || builtin eval \"$__agentbash_opts\"; builtin [ ${#BASH_ALIASES[@]} = 0 ] || builtin shopt -q expand_aliases || { builtin shopt -s expand_aliases; __agentbash_opts=\"$__agentbash_opts\"$'\\n'\"builtin shopt -s expand_aliases\"; __agentbash_optsig=\"$-:$SHELLOPTS:$BASHOPTS\"; }; builtin trap '{ __agentbash_live_exit \"$?\"; } 2>/dev/null' EXIT; } 2>/dev/null\n\
             \x20 exec 1>&\"$__agentbash_out\" 2>&1\n\
             \x20 builtin printf '\\036%s%s%s %s\\n' \"$__agentbash_t\" \"$__agentbash_k\" \"$__agentbash_i\" \"$__agentbash_s\" >&\"$__agentbash_out\"\n\
             done\n",
        );
    } else {
        // A plain program (see `session::plain_command_word`) cannot change the shell:
        // it runs in the shell itself, which then puts back its directory and clears
        // the command hash table (marker `u`). Anything else runs in a subshell so
        // nothing it changes leaks into the next caller's command (marker `s`, with
        // the subshell's pid, then `c` when the subshell has exited).
        t.push_str(&format!(
            "__agentbash_r=\"$AGENTBASH_RUN_ID\" __agentbash_h=\"$PWD\" __agentbash_o=\"${{OLDPWD-}}\" __agentbash_os=\"${{OLDPWD+set}}\"\n\
             while {read} && IFS= builtin read -r -d '' __agentbash_v; do\n\
             \x20 __agentbash_i=$((__agentbash_i+1)) __agentbash_k=s\n\
             \x20 case $__agentbash_v in q*) {{ builtin declare -F -- \"${{__agentbash_v#q}}\" || builtin alias -- \"${{__agentbash_v#q}}\" || __agentbash_k=u; }} >/dev/null 2>&1;; esac\n\
             \x20 if builtin [ $__agentbash_k = u ]; then\n\
             \x20   builtin export AGENTBASH_RUN_ID=\"$__agentbash_r.$__agentbash_i\"\n\
             \x20   builtin cd -- \"$__agentbash_d\" && builtin eval \"$__agentbash_c\" </dev/null\n\
             \x20   __agentbash_s=$?\n\
             \x20   {{ builtin export AGENTBASH_RUN_ID=\"$__agentbash_r\"; builtin cd -- \"$__agentbash_h\"; builtin hash -r\n\
             \x20     if builtin [ \"$__agentbash_os\" = set ]; then OLDPWD=$__agentbash_o; else builtin unset OLDPWD; fi; }} 2>/dev/null\n\
             \x20   builtin printf '\\036%su%s %s\\n' \"$__agentbash_t\" \"$__agentbash_i\" \"$__agentbash_s\" >&\"$__agentbash_out\"\n\
             \x20 else\n\
             \x20 (\n\
             \x20   builtin export AGENTBASH_RUN_ID=\"$__agentbash_r.$__agentbash_i\"\n\
             \x20   builtin trap '__agentbash_s=$?; {unshadow}builtin printf \"\\036%ss%s %s %s\\n\" \"$__agentbash_t\" \"$__agentbash_i\" \"$__agentbash_s\" \"$BASHPID\" >&\"$__agentbash_out\"' EXIT\n\
             \x20   builtin cd -- \"$__agentbash_d\" && builtin eval \"$__agentbash_c\" </dev/null\n\
             \x20 )\n\
             \x20 builtin printf '\\036%sc%s %s\\n' \"$__agentbash_t\" \"$__agentbash_i\" \"$?\" >&\"$__agentbash_out\"\n\
             \x20 fi\n\
             done\n",
            unshadow = crate::shell::dump::unshadow(None),
        ));
    }
    t
}

fn describe_status(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by {}", crate::exit::signal_name(sig)),
        _ => "unknown status".into(),
    }
}

/// How a command's end was marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Marker {
    /// `s`, `x` or `c` (see [`shell_program`]).
    kind: u8,
    status: Option<i32>,
    /// The subshell that ran the command (non-session shells).
    pid: Option<i32>,
}

/// Finds command `seq`'s end marker in the output stream. Everything else goes to
/// the sink, except markers of earlier commands (dropped) and any bytes that may yet
/// turn out to start a marker (held back).
struct Scanner {
    prefix: Vec<u8>,
    seq: u64,
    carry: Vec<u8>,
    found: Option<Marker>,
    /// The shell reported that command `seq`'s subshell has exited (marker `c`).
    subshell_done: bool,
}

impl Scanner {
    fn new(token: &str, seq: u64) -> Self {
        let mut prefix = vec![0x1e];
        prefix.extend_from_slice(token.as_bytes());
        Scanner {
            prefix,
            seq,
            carry: Vec::new(),
            found: None,
            subshell_done: false,
        }
    }

    fn feed(&mut self, data: &[u8], sink: &mut OutputSink) {
        self.carry.extend_from_slice(data);
        while let Some(i) = memchr::memmem::find(&self.carry, &self.prefix) {
            if i > 0 {
                sink.push(&self.carry[..i]);
                self.carry.drain(..i);
            }
            let rest = &self.carry[self.prefix.len()..];
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                return; // the rest of the marker is still on its way
            };
            let line = String::from_utf8_lossy(&rest[..nl]).into_owned();
            self.carry.drain(..self.prefix.len() + nl + 1);
            let Some(kind) = line.bytes().next() else {
                continue;
            };
            let mut words = line[1..].split(' ');
            let seq: Option<u64> = words.next().and_then(|w| w.parse().ok());
            // Other markers (a subshell reporting its exit) are never output.
            if seq == Some(self.seq) && kind == b'c' {
                self.subshell_done = true;
            }
            if seq == Some(self.seq) && self.found.is_none() {
                self.found = Some(Marker {
                    kind,
                    status: words.next().and_then(|w| w.parse().ok()),
                    pid: words.next().and_then(|w| w.parse().ok()),
                });
            }
        }
        let keep = (1..self.prefix.len())
            .rev()
            .find(|&k| self.carry.ends_with(&self.prefix[..k]))
            .unwrap_or(0);
        let cut = self.carry.len() - keep;
        if cut > 0 {
            sink.push(&self.carry[..cut]);
            self.carry.drain(..cut);
        }
    }

    /// No marker is coming: pass on what was held back.
    fn flush(&mut self, sink: &mut OutputSink) {
        if !self.carry.is_empty() {
            sink.push(&self.carry);
            self.carry.clear();
        }
    }
}

/// Read what is available into `f`. Returns (bytes, eof).
fn read_available(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    budget: usize,
    mut f: impl FnMut(&[u8]),
) -> (usize, bool) {
    let mut total = 0;
    while total < budget {
        match read_some(fd, buf) {
            Read::Bytes(n) => {
                f(&buf[..n]);
                total += n;
            }
            Read::Empty => return (total, false),
            Read::End => return (total, true),
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
                .filter_map(|p| p.parse::<i32>().ok())
                .filter(|&p| p != watchdog_pid()),
        );
    }
    Some(out)
}

impl LiveShell {
    /// The log of the network proxy this shell's namespace goes out through, when its
    /// sandbox has a network allowlist.
    fn network_log(&self) -> Option<Arc<crate::sandbox::NetworkLog>> {
        self.sandbox
            .as_ref()
            .and_then(|c| c.prepared.proxy())
            .map(|plan| plan.log.clone())
    }

    /// What the proxy refused so far, to tell a run's refusals from earlier ones.
    fn network_mark(&self) -> Option<Vec<crate::sandbox::Refusal>> {
        self.network_log().map(|log| log.snapshot())
    }

    fn spawn(job: &LiveJob<'_>) -> Result<LiveShell, ExecError> {
        let (out_r, out_w) = pipe()?;
        let out_w2 = out_w.try_clone()?;
        let (ctl_r, ctl_w) = std::io::pipe()?;
        let marker = format!("live-{}", crate::ids::nonce());
        let token = crate::ids::nonce();
        let mut env: Vec<(String, String)> = job
            .start_env
            .iter()
            .filter(|(k, _)| k.as_str() != crate::process::RUN_MARKER)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push((crate::process::RUN_MARKER.to_string(), marker.clone()));
        let spec = SpawnSpec {
            program: job.key.shell.clone(),
            args: vec![
                "--norc".into(),
                "--noprofile".into(),
                "-c".into(),
                shell_program(job, &token),
            ],
            env,
            cwd: job.cwd.to_path_buf(),
            limits: job.limits,
            sandbox: job.sandbox.clone(),
            detached: false,
            keep_background: false,
        };
        let group = RunGroup::create().map(Arc::new);
        if group.is_some() {
            crate::process::cgroup::ensure_watchdog();
        }
        let child = spawn::spawn_in(
            &spec,
            group.as_deref(),
            ChildIo::Fd(ctl_r.into()),
            ChildIo::Fd(out_w),
            ChildIo::Fd(out_w2),
        )
        .map_err(|err| ExecError::Spawn {
            program: spec.program.clone(),
            err,
        })?;
        let pid = child.id() as i32;
        Ok(LiveShell {
            key: job.key.clone(),
            pidfd: child.exit_watch(),
            child,
            pid,
            marker,
            token,
            sent: 0,
            ctl: ctl_w,
            out: out_r,
            generation: job.generation.map(|(want, _)| want),
            dead: false,
            unchanged: false,
            buf: Vec::new(),
            ended: None,
            group,
            sandbox: job.sandbox.clone(),
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
            self.teardown().terminate(Duration::from_millis(200), true);
            let _ = self.child.wait();
            self.dead = true;
        }
    }

    /// The shell's whole tree: its group when it joined one, else found by marker.
    fn teardown(&self) -> Teardown<'_> {
        Teardown::new(self.pid, &self.marker).in_group(self.group.as_deref())
    }

    /// The shell's group, when its members are the shell's.
    fn joined_group(&self) -> Option<&RunGroup> {
        self.group.as_deref().filter(|g| g.joined())
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

    /// Could command subshell `pid` have left processes behind? It has children as it
    /// exits, or orphans were handed to us; the full scan only if so.
    fn subshell_may_have_left(&self, pid: Option<i32>, pool_pids: &Mutex<HashSet<i32>>) -> bool {
        let Some(pid) = pid else { return true };
        match std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
            Ok(k) if !k.trim().is_empty() => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return true,
        }
        let Some(ours) = own_children() else {
            return true;
        };
        let Ok(known) = pool_pids.lock() else {
            return true;
        };
        ours.iter().any(|p| !known.contains(p))
    }

    /// Stop what command subshell `child` left running: its children, orphans of this
    /// shell's commands handed to us, and anything carrying the command's marker —
    /// never the shell itself or the subshell it forked for the next command.
    fn stop_leftovers(
        &self,
        child: Option<i32>,
        command_marker: &str,
        grace: Duration,
    ) -> Vec<KilledProcess> {
        let me = std::process::id() as i32;
        let needle = format!("{}={command_marker}", crate::process::RUN_MARKER).into_bytes();
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut roots = Vec::new();
        for pid in rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        {
            if pid == self.pid || Some(pid) == child {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(close) = stat.rfind(')') else {
                continue;
            };
            let f: Vec<&str> = stat[close + 1..].split_ascii_whitespace().take(4).collect();
            let (Some(state), Some(ppid), Some(sid)) = (f.first(), f.get(1), f.get(3)) else {
                continue;
            };
            if *state == "Z" {
                continue;
            }
            let (ppid, sid) = (
                ppid.parse::<i32>().unwrap_or(0),
                sid.parse::<i32>().unwrap_or(0),
            );
            let orphan = (ppid == me || Some(ppid) == self.child.init_pid()) && sid == self.pid;
            let marked = || {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_slice()))
            };
            if Some(ppid) == child || orphan || marked() {
                roots.push(pid);
            }
        }
        let mut killed = Vec::new();
        for root in roots {
            killed.extend(Teardown::new(root, command_marker).terminate(grace, true));
        }
        killed.sort_by_key(|k| k.pid);
        killed.dedup_by_key(|k| k.pid);
        killed
    }

    /// Run one command. Ok((end, background killed, shell still usable)).
    fn run(
        &mut self,
        job: &LiveJob<'_>,
        sink: &mut OutputSink,
        on_output: &mut dyn FnMut(&str),
        pool_pids: &Mutex<HashSet<i32>>,
    ) -> Result<(End, Vec<KilledProcess>, bool), RunError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(READ_BUF, 0);
        let r = self.run_with(&mut buf, job, sink, on_output, pool_pids);
        self.buf = buf;
        r
    }

    fn run_with(
        &mut self,
        buf: &mut [u8],
        job: &LiveJob<'_>,
        sink: &mut OutputSink,
        on_output: &mut dyn FnMut(&str),
        pool_pids: &Mutex<HashSet<i32>>,
    ) -> Result<(End, Vec<KilledProcess>, bool), RunError> {
        let fd = self.out.as_fd();
        self.unchanged = false;
        // Whatever a kept background job printed since the last command is not ours.
        read_available(fd, &mut *buf, usize::MAX, |_| {});
        let mut frame = Vec::with_capacity(job.script.len() + job.cwd.as_os_str().len() + 2);
        frame.extend_from_slice(job.cwd.as_os_str().as_bytes());
        frame.push(0);
        frame.extend_from_slice(job.script.as_bytes());
        frame.push(0);
        {
            match (job.save_definitions, job.stateless_word) {
                (true, _) => frame.extend_from_slice(b"1\0"),
                (false, Some(w)) => {
                    frame.push(b'q');
                    frame.extend_from_slice(w.as_bytes());
                    frame.push(0);
                }
                (false, None) => frame.extend_from_slice(b"0\0"),
            }
        }
        if let Err(e) = self.ctl.write_all(&frame).and_then(|_| self.ctl.flush()) {
            return Err(if e.kind() == std::io::ErrorKind::BrokenPipe {
                RunError::Dead
            } else {
                RunError::Io(e)
            });
        }
        self.sent += 1;
        let seq = self.sent;
        // What command `seq` starts carries this marker (non-session subshells).
        let command_marker = format!("{}.{seq}", self.marker);
        let group = self.group.clone();
        let teardown = Teardown::new(self.pid, &self.marker).in_group(group.as_deref());
        let mut scan = Scanner::new(&self.token, seq);
        let start = Instant::now();
        let deadline = start + job.watch.timeout;
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
        self.ended = None;
        let mut found_at = None;
        let mut idle = job.watch.idle.map(super::idle::IdleClock::new);
        let mut last_output = start;
        let mut terminal_wait = super::terminal_wait::TerminalWait::new();
        loop {
            emit(sink, &mut last_emit, false);
            let now = Instant::now();
            if let Some(m) = scan.found {
                // A subshell's end (`s`) comes before the shell's `c`, and the command
                // may have killed the shell itself (`kill $$`): wait for one or the
                // other, so that this run, not the next, reports how the shell ended.
                let at = *found_at.get_or_insert(now);
                if m.kind != b's'
                    || job.key.session.is_some()
                    || scan.subshell_done
                    || now.duration_since(at) >= DRAIN_IDLE
                {
                    break;
                }
            }
            if let Ok(Some(s)) = self.child.try_wait() {
                exit_status = Some(s);
                break;
            }
            let reason = match job.watch.cancel.reason() {
                _ if scan.found.is_some() => None,
                Some(sig) => Some(End::Cancelled(sig)),
                None if now >= deadline => Some(End::TimedOut),
                None => idle
                    .as_mut()
                    .and_then(|clock| {
                        clock
                            .expired(|| super::idle::cpu_time(&teardown, group.as_deref()))
                            .then(|| End::Idle(clock.limit().as_secs()))
                    })
                    .or_else(|| {
                        terminal_wait
                            .check(now, last_output, || teardown.members())
                            .map(End::NeedsTerminal)
                    }),
            };
            if let Some(end) = reason {
                stopped = Some(end);
                killed = std::thread::scope(|s| {
                    let h = s.spawn(|| teardown.terminate_run(job.watch.kill_grace));
                    while !h.is_finished() {
                        poll_fds(&[Some(fd)], Duration::from_millis(10));
                        read_available(fd, &mut *buf, 8 * READ_BUF, |d| scan.feed(d, sink));
                    }
                    h.join().unwrap_or_default()
                });
                if job.key.session.is_none() && !teardown.grouped() {
                    // Whatever left the shell's session still carries the command's marker.
                    killed.extend(
                        Teardown::new(-1, &command_marker).terminate(job.watch.kill_grace, false),
                    );
                }
                killed.retain(|k| k.pid != self.pid);
                let _ = self.child.wait();
                self.dead = true;
                break;
            }
            let mut wait = deadline.saturating_duration_since(now).min(EVENT_INTERVAL);
            if sink.has_pending() {
                wait = wait.min(EVENT_INTERVAL.saturating_sub(now.duration_since(last_emit)));
            }
            poll_fds(&[Some(fd), self.pidfd.as_ref().map(|f| f.as_fd())], wait);
            let budget = if sink.pending_full() { 0 } else { 8 * READ_BUF };
            let mut got = false;
            read_available(fd, &mut *buf, budget, |d| {
                got = true;
                scan.feed(d, sink)
            });
            if got {
                last_output = Instant::now();
            }
            if got && let Some(clock) = idle.as_mut() {
                clock.printed();
            }
        }
        if let Some(s) = exit_status {
            // The shell died during the command: take what it printed (its EXIT trap
            // may still have written the sentinel), as print mode drains a dead shell.
            self.dead = true;
            let at = Instant::now();
            let mut last_output = at;
            loop {
                let (n, eof) = read_available(fd, &mut *buf, 8 * READ_BUF, |d| scan.feed(d, sink));
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
                if job.watch.background == Background::Kill {
                    bg = teardown.terminate(job.watch.kill_grace, false);
                }
                teardown.reap_orphans();
                self.ended = Some(describe_status(s));
                return Ok((exit_to_end(s), bg, false));
            }
        }
        if let Some(end) = stopped {
            scan.flush(sink);
            emit(sink, &mut last_emit, true);
            teardown.reap_orphans();
            return Ok((end, killed, false));
        }
        let mut found = scan.found.unwrap_or(Marker {
            kind: b's',
            status: None,
            pid: None,
        });
        if self.child.init_pid().is_some() {
            // In the sandbox's PID namespace the shell numbers its subshell its own way.
            found.pid = found
                .pid
                .and_then(|inner| spawn::host_pid_of_child(self.pid, inner));
        }
        // Anything the command left running? (A cheap look first: the full scan only
        // when something may be there — background jobs, or orphans handed to us.)
        let mut background_killed = Vec::new();
        let by_marker = Teardown::new(found.pid.unwrap_or(-1), &command_marker);
        // The subshell that ran the command may still be on its way out.
        let spare = [Some(self.pid), found.pid];
        if let Some(g) = self.joined_group() {
            // Membership answers it: the shell's group holds the shell, maybe the
            // exiting subshell, and whatever the command left, however it got there.
            // (Members include processes of the command that left the group.)
            let left = !Teardown::new(self.pid, &command_marker)
                .in_group(Some(g))
                .sparing(spare.into_iter().flatten())
                .members()
                .is_empty();
            if left && job.watch.background == Background::Kill {
                background_killed = Teardown::new(self.pid, &command_marker)
                    .in_group(Some(g))
                    .sparing(spare.into_iter().flatten())
                    .terminate(job.watch.kill_grace, false);
                if !background_killed.is_empty() {
                    read_available(fd, &mut *buf, 8 * READ_BUF, |d| scan.feed(d, sink));
                }
            } else if left {
                // Kept running: no longer this shell's, nor the next command's. Seen
                // as members first, so that they are reaped once they exit.
                let _ = Teardown::new(self.pid, &command_marker)
                    .in_group(Some(g))
                    .sparing(spare.into_iter().flatten())
                    .members();
                g.release(&[self.pid]);
            }
            teardown.reap_orphans();
        }
        let (suspect, scope) = match job.key.session {
            _ if self.joined_group().is_some() => (false, &teardown),
            // Background jobs are the shell's own children.
            Some(_) => (self.maybe_has_others(pool_pids), &teardown),
            // A plain program run in the shell itself: whatever it left is a child
            // of the shell, an orphan handed to us, or carries its marker.
            None if found.kind == b'u' => (self.maybe_has_others(pool_pids), &by_marker),
            // They were started by the command's subshell and carry its marker.
            None => (
                self.subshell_may_have_left(found.pid, pool_pids),
                &by_marker,
            ),
        };
        if suspect {
            if job.watch.background == Background::Kill {
                background_killed = match job.key.session {
                    Some(_) if !teardown.others().is_empty() => {
                        teardown.terminate(job.watch.kill_grace, false)
                    }
                    Some(_) => Vec::new(),
                    None => self.stop_leftovers(found.pid, &command_marker, job.watch.kill_grace),
                };
                if !background_killed.is_empty() {
                    read_available(fd, &mut *buf, 8 * READ_BUF, |d| scan.feed(d, sink));
                }
            }
            // Reap what died, and note what is kept running (background = "keep") so
            // that it is reaped in turn once it exits: no zombie outlives its run.
            scope.reap_orphans();
            teardown.reap_orphans();
        }
        emit(sink, &mut last_emit, true);
        self.unchanged = found.kind == b'u';
        let mut shell_status = exit_status;
        if found.kind == b'x' || self.dead {
            // `exit N` in a session: the shell is on its way out; let it go.
            shell_status = shell_status.or_else(|| self.child.wait().ok());
            self.dead = true;
        }
        let code = found.status;
        let mut end = match code {
            Some(c) => End::Exited(c),
            None => End::MissingStatus,
        };
        // The command killed the shell it ran in (`kill -TERM $$`): the shell's end
        // is the command's, as when the shell is spawned for one command. A session's
        // `exit N` is an ordinary end, already in the marker.
        if let Some(s) = shell_status {
            let shell_end = exit_to_end(s);
            if exit_status.is_some() || matches!(shell_end, End::Signaled(_)) {
                end = shell_end;
                self.ended = Some(describe_status(s));
            }
        }
        Ok((end, background_killed, !self.dead))
    }
}

impl Drop for LiveShell {
    fn drop(&mut self) {
        if !self.dead {
            // The shell's own process group (it is a session leader).
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
            if let Some(g) = self.joined_group() {
                g.kill();
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
    fn marker_split_across_reads() {
        let mut s = sink();
        let mut sc = Scanner::new("abc", 2);
        sc.feed(b"hello\x1ea", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"bcs2 4", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"2 77\nlate", &mut s);
        assert_eq!(
            sc.found,
            Some(Marker {
                kind: b's',
                status: Some(42),
                pid: Some(77)
            })
        );
        assert_eq!(s.finish().text, "hellolate");
    }

    #[test]
    fn earlier_markers_and_lookalikes_are_not_the_end() {
        let mut s = sink();
        let mut sc = Scanner::new("abc", 3);
        sc.feed(b"\x1eabcc2 0\nx\x1eab!", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"\x1eabcx3 3\n", &mut s);
        assert_eq!(sc.found.map(|m| (m.kind, m.status)), Some((b'x', Some(3))));
        // The lookalike's control byte is sanitized away; its text is output.
        assert_eq!(s.finish().text, "xab!");
    }
}
