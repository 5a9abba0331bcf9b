//! Shared helpers for the integration tests: a hermetic [`TestEnv`] that runs the real
//! `agentbash` binary as a subprocess, and the process-table probes the teardown
//! tests need.
//!
//! Every wait is capped ([`HANG_CAP`]) so a hang fails the test instead of stalling
//! the suite; the cap is never a timing assertion. Tests wait for readiness (a line,
//! a process in /proc, a file, a [`Gate`]), never for time; the settle times of the
//! process-table probes are stretched by `AGENTBASH_TEST_SLOWNESS` ([`scaled`]), as is
//! every time limit a test asserts. `skip!` (tests/it/harness.rs) is how a test that
//! cannot run here says so.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

pub(crate) use crate::harness::{Missing, scaled, skip};

/// Longest any single agentbash invocation may take before the test calls it a hang
/// (stretched by `AGENTBASH_TEST_SLOWNESS` where a test waits for agentbash). The
/// heaviest runs of the suite (2.5 million lines through a PTY) take about 40 s in a
/// debug build on 2 cores loaded eight times over; idle, a few seconds.
pub const HANG_CAP: Duration = Duration::from_secs(60);

/// Variables that change agentbash's behaviour and must not leak in from the
/// developer's shell or the CI runner.
const CLEARED: &[&str] = &[
    "AGENTBASH_PROFILE",
    "NO_COLOR",
    "CLICOLOR_FORCE",
    "GITHUB_ACTIONS",
    "AGENTBASH_NO_PTY",
    "AGENTBASH_NO_CI",
    "AGENTBASH_TRUST_PROJECT",
    "CI",
];

/// Name of the variable that tags every process a test starts, so leftovers can be
/// found in `/proc/*/environ` regardless of how agentbash marks its runs.
pub const TAG_VAR: &str = "AGENTBASH_IT_TAG";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A string unique to this test process and call, e.g. for `sleep 377.<nonce>` so
/// that a process-table probe cannot confuse our sleeps with anyone else's.
pub fn nonce() -> String {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!("{}{:03}", std::process::id(), n % 1000)
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agentbash"))
}

/// A temporary directory holding the working directory, HOME, and every config, state
/// and cache directory agentbash may touch.
pub struct TestEnv {
    dir: tempfile::TempDir,
    pub tag: String,
    /// Every command runs with `AGENTBASH_TRUST_PROJECT=1` (see [`TestEnv::trusting`]).
    trust_projects: bool,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("agentbash-it-")
            .tempdir()
            .expect("create temp dir");
        for sub in [
            "work",
            "home",
            "config",
            "state",
            "cache",
            "config/agentbash",
        ] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("create test dirs");
        }
        TestEnv {
            dir,
            tag: format!("it-{}", nonce()),
            trust_projects: false,
        }
    }

    /// An env whose commands trust project profiles (`AGENTBASH_TRUST_PROJECT=1`), for
    /// tests about what project profiles do rather than whether they may.
    pub fn trusting() -> Self {
        let mut env = Self::new();
        env.trust_projects = true;
        env
    }

    /// Record trust in `rel` (relative to the working directory) with
    /// `agentbash trust`, as a user would.
    pub fn trust(&self, rel: &str) -> Output {
        let out = self.run(&["trust", rel]);
        out.assert_code(0);
        out
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The directory agentbash is invoked from.
    pub fn work(&self) -> PathBuf {
        self.root().join("work")
    }

    /// Write the shell's rc file (`~/.bashrc`, what snapshots capture).
    pub fn write_rc(&self, text: impl AsRef<[u8]>) {
        std::fs::write(self.home().join(".bashrc"), text).expect("write ~/.bashrc");
    }

    /// The path of `rel` in the working directory, as text.
    pub fn work_path(&self, rel: &str) -> String {
        self.work().join(rel).display().to_string()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// `$AGENTBASH_CONFIG_DIR`.
    pub fn config_dir(&self) -> PathBuf {
        self.root().join("config/agentbash")
    }

    /// `$AGENTBASH_STATE_DIR`.
    pub fn state_dir(&self) -> PathBuf {
        self.root().join("state/agentbash")
    }

    /// Write `contents` to `rel` (relative to the working directory), creating parents.
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.work().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        std::fs::write(&p, contents).expect("write test file");
        p
    }

    /// Write `toml` as the user profile `name` (found by `-p NAME`, no trust needed).
    pub fn user_profile(&self, name: &str, toml: &str) {
        let dir = self.config_dir().join("profiles");
        std::fs::create_dir_all(&dir).expect("create the profiles dir");
        std::fs::write(dir.join(format!("{name}.toml")), toml).expect("write the profile");
    }

    /// A command line for the binary, hermetic and invoked from [`TestEnv::work`].
    pub fn cmd(&self, args: &[&str]) -> Cmd {
        self.program(bin(), args)
    }

    /// Any program (e.g. a shell wrapping agentbash) with the same hermetic setup.
    pub fn program(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Cmd {
        let mut c = Command::new(program);
        c.args(args).current_dir(self.work());
        let (cleared, set) = self.hermetic_env();
        for k in cleared {
            c.env_remove(k);
        }
        c.envs(set);
        Cmd {
            command: c,
            stdin: None,
        }
    }

    /// The environment of every program a test starts: the variables removed, then
    /// those set (a home, config and state of the test's own, its tag).
    fn hermetic_env(&self) -> (Vec<&'static str>, Vec<(&'static str, std::ffi::OsString)>) {
        // Nothing agentbash itself sets leaks in either: the suite must pass when it is
        // run by agentbash (`agentbash run --profile ci -- cargo test`).
        let cleared = CLEARED
            .iter()
            .copied()
            .chain(agentbash::shell::env::hardened_names())
            .collect();
        let r = self.root();
        let mut set = vec![
            ("HOME", self.home().into_os_string()),
            ("XDG_CONFIG_HOME", r.join("config").into_os_string()),
            ("XDG_STATE_HOME", r.join("state").into_os_string()),
            ("XDG_CACHE_HOME", r.join("cache").into_os_string()),
            ("AGENTBASH_STATE_DIR", self.state_dir().into_os_string()),
            ("AGENTBASH_CONFIG_DIR", self.config_dir().into_os_string()),
            (TAG_VAR, self.tag.clone().into()),
        ];
        if self.trust_projects {
            set.push(("AGENTBASH_TRUST_PROJECT", "1".into()));
        }
        (cleared, set)
    }

    /// Run agentbash with `args` and wait for it (capped at [`HANG_CAP`]).
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).run()
    }

    /// Live processes carrying this env's tag (the test's own agentbash excluded
    /// once it has exited). Waits up to `settle` (scaled) for dying processes to go.
    pub fn leftovers(&self, settle: Duration) -> Vec<Proc> {
        let needle = format!("{TAG_VAR}={}", self.tag);
        let deadline = Instant::now() + scaled(settle);
        loop {
            let found: Vec<Proc> = processes()
                .into_iter()
                .filter(|p| {
                    p.environ
                        .split(|&b| b == 0)
                        .any(|kv| kv == needle.as_bytes())
                })
                .collect();
            if found.is_empty() || Instant::now() >= deadline {
                return found;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL every tagged process (cleanup for tests that expect survivors).
    pub fn kill_leftovers(&self) {
        for p in self.leftovers(Duration::ZERO) {
            // SAFETY: plain syscall; a stale pid just yields ESRCH.
            unsafe {
                libc::kill(p.pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // A failed test must not leave its sleeps behind for the next run.
        self.kill_leftovers();
    }
}

pub struct Cmd {
    command: Command,
    stdin: Option<Vec<u8>>,
}

impl Cmd {
    pub fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Self {
        self.command.env(k, v);
        self
    }

    pub fn env_remove(mut self, k: &str) -> Self {
        self.command.env_remove(k);
        self
    }

    /// Start in a new process group of its own.
    pub fn own_process_group(mut self) -> Self {
        use std::os::unix::process::CommandExt;
        self.command.process_group(0);
        self
    }

    pub fn current_dir(mut self, d: impl AsRef<Path>) -> Self {
        self.command.current_dir(d);
        self
    }

    /// Feed these bytes on stdin (default: the null device).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn run(self) -> Output {
        self.spawn().wait()
    }

    /// The hermetic command itself, for a test that needs its own pipes.
    pub fn into_command(self) -> Command {
        self.command
    }

    /// Start agentbash; stdout is read line by line as it arrives.
    pub fn spawn(mut self) -> Running {
        self.command
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = self.command.spawn().expect("spawn agentbash");
        if let Some(bytes) = self.stdin.take() {
            let mut w = child.stdin.take().expect("stdin pipe");
            thread::spawn(move || {
                let _ = w.write_all(&bytes);
            });
        }
        let (line_tx, lines) = mpsc::channel();
        let mut out = BufReader::new(child.stdout.take().expect("stdout pipe"));
        thread::spawn(move || {
            loop {
                let mut buf = Vec::new();
                match out.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if line_tx.send((Instant::now(), buf)).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let (err_tx, stderr_rx) = mpsc::channel();
        let mut err = child.stderr.take().expect("stderr pipe");
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = err.read_to_end(&mut buf);
            let _ = err_tx.send(buf);
        });
        Running {
            child,
            started,
            lines,
            seen: Vec::new(),
            stderr_rx,
        }
    }
}

/// A running agentbash.
pub struct Running {
    child: Child,
    pub started: Instant,
    lines: Receiver<(Instant, Vec<u8>)>,
    /// Lines already taken with [`Running::next_line`], with their arrival time.
    pub seen: Vec<(Duration, String)>,
    stderr_rx: Receiver<Vec<u8>>,
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The next stdout line (with its arrival time after start), or `None` at EOF or
    /// after `within`.
    pub fn next_line(&mut self, within: Duration) -> Option<(Duration, String)> {
        match self.lines.recv_timeout(within) {
            Ok((at, bytes)) => {
                let item = (
                    at.duration_since(self.started),
                    String::from_utf8_lossy(&bytes).into_owned(),
                );
                self.seen.push(item.clone());
                Some(item)
            }
            Err(_) => None,
        }
    }

    /// Wait for an NDJSON event of `kind` on stdout.
    pub fn wait_for_event(&mut self, kind: &str, within: Duration) -> (Duration, Value) {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some((at, line)) = self.next_line(left) else {
                panic!(
                    "no {kind:?} event within {within:?}; stdout so far: {:?}",
                    self.seen
                );
            };
            let v: Value = serde_json::from_str(line.trim_end())
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            if v["type"] == kind {
                return (at, v);
            }
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain syscall on our own child's pid.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig}) failed", self.pid());
    }

    /// Wait for exit (capped at [`HANG_CAP`]) and collect everything.
    pub fn wait(self) -> Output {
        self.wait_within(scaled(HANG_CAP))
    }

    /// [`Running::wait`] with a longer hang cap, for the heavy (`#[ignore]`d) runs.
    pub fn wait_within(mut self, cap: Duration) -> Output {
        let deadline = self.started + cap;
        let status: ExitStatus = loop {
            match self.child.try_wait().expect("try_wait") {
                Some(s) => break s,
                None if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!(
                        "agentbash did not exit within {cap:?} (hang); stdout so far: {:?}",
                        self.seen
                    );
                }
                None => thread::sleep(Duration::from_millis(5)),
            }
        };
        let elapsed = self.started.elapsed();
        let mut stdout: Vec<u8> = self
            .seen
            .iter()
            .flat_map(|(_, l)| l.as_bytes().to_vec())
            .collect();
        let drain_deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = drain_deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((_, bytes)) => stdout.extend(bytes),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "agentbash exited but its stdout stayed open (a leaked process holds it)"
                    )
                }
            }
        }
        let stderr = self
            .stderr_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("agentbash exited but its stderr stayed open (a leaked process holds it)");
        Output {
            status,
            elapsed,
            stdout_bytes: stdout.clone(),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What one agentbash invocation did.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub elapsed: Duration,
    pub stdout_bytes: Vec<u8>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Assert the exit code, showing both streams when it differs.
    #[track_caller]
    pub fn assert_code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code(),
            Some(want),
            "exit status {:?}, want {want}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// stdout parsed as the single `--format json` object.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim_end()).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON value ({e})\n--- stdout ---\n{}\n--- stderr ---\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// stdout parsed as NDJSON events.
    #[track_caller]
    pub fn ndjson(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("NDJSON line is not JSON ({e}): {l:?}"))
            })
            .collect()
    }

    /// Assert the run lasted at least `ms` milliseconds: it waited for what it had to
    /// (a sleeping command, a grace period), which a lower bound shows whatever the load.
    #[track_caller]
    pub fn assert_lasted_at_least_ms(&self, ms: u64) -> &Self {
        let least = Duration::from_millis(ms);
        assert!(
            self.elapsed >= least,
            "took {:?}, less than {least:?}",
            self.elapsed
        );
        self
    }

    /// Assert the run ended within `secs` seconds ([`scaled`] for a loaded machine):
    /// a bound that catches a hang, not a measurement.
    #[track_caller]
    pub fn assert_ended_within(&self, secs: u64) -> &Self {
        let limit = scaled(Duration::from_secs(secs));
        assert!(self.elapsed < limit, "took {:?}", self.elapsed);
        self
    }
}

/// Assert that `text` contains `want`, showing the text when it does not.
#[track_caller]
pub fn assert_has(text: impl AsRef<str>, want: impl AsRef<str>) {
    assert_text(text.as_ref(), |t, w| t.contains(w), "lacks", want.as_ref());
}

/// Assert that `text` does not contain `unwanted`, showing the text when it does.
#[track_caller]
pub fn assert_lacks(text: impl AsRef<str>, unwanted: impl AsRef<str>) {
    assert_text(
        text.as_ref(),
        |t, w| !t.contains(w),
        "has",
        unwanted.as_ref(),
    );
}

/// Assert that `text` ends with `want`, showing the text when it does not.
#[track_caller]
pub fn assert_ends_with(text: impl AsRef<str>, want: impl AsRef<str>) {
    assert_text(
        text.as_ref(),
        |t, w| t.ends_with(w),
        "does not end with",
        want.as_ref(),
    );
}

/// Assert that `text` starts with `want`, showing the text when it does not.
#[track_caller]
pub fn assert_starts_with(text: impl AsRef<str>, want: impl AsRef<str>) {
    let (text, want) = (text.as_ref(), want.as_ref());
    assert_text(text, |t, w| t.starts_with(w), "does not start with", want);
}

/// Assert that `holds(text, part)`, else fail with `failing`, `part` and the text.
#[track_caller]
fn assert_text(text: &str, holds: fn(&str, &str) -> bool, failing: &str, part: &str) {
    assert!(holds(text, part), "{failing} {part:?}:\n{text}");
}

/// The permission bits of `path` (with setuid, setgid and sticky: `st_mode & 0o7777`).
#[track_caller]
pub fn mode_of(path: impl AsRef<Path>) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let path = path.as_ref();
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta.permissions().mode() & 0o7777
}

/// `json["output"]` as a `&str` (panics with the object when missing).
#[track_caller]
pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v:#}"))
}

#[track_caller]
pub fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an unsigned integer in {v:#}"))
}

/// One entry of the process table.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub cmdline: String,
    environ: Vec<u8>,
}

/// Every process we can inspect (zombies read as empty and are skipped).
pub fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            if cmdline.is_empty() {
                return None;
            }
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .trim_end()
                .to_string();
            Some(Proc {
                pid,
                cmdline,
                environ,
            })
        })
        .collect()
}

/// Assert that no process whose command line contains `needle` is left once `secs`
/// seconds (scaled) have passed for dying ones to go; the failure starts with `what`.
#[track_caller]
pub fn assert_none_running(needle: &str, secs: u64, what: &str) {
    let left = procs_with_cmdline(needle, Duration::from_secs(secs));
    assert!(left.is_empty(), "{what}: {left:?}");
}

/// Live processes whose command line contains `needle`, waiting up to `settle`
/// (scaled, see [`scaled`]) for dying ones to disappear.
pub fn procs_with_cmdline(needle: &str, settle: Duration) -> Vec<Proc> {
    let deadline = Instant::now() + scaled(settle);
    loop {
        let found: Vec<Proc> = processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(needle) && p.pid != std::process::id() as i32)
            .collect();
        if found.is_empty() || Instant::now() >= deadline {
            return found;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Kill every process whose command line contains `needle`.
pub fn kill_cmdline(needle: &str) {
    for p in procs_with_cmdline(needle, Duration::ZERO) {
        // SAFETY: plain syscall; a stale pid just yields ESRCH.
        unsafe {
            libc::kill(p.pid, libc::SIGKILL);
        }
    }
}

/// The real output of `sh -c script` (for byte-for-byte artifact comparisons).
pub fn sh_output(script: &str) -> Vec<u8> {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .output()
        .expect("run sh")
        .stdout
}

/// [`sh_output`] as text.
pub fn sh_text(script: &str) -> String {
    String::from_utf8(sh_output(script)).expect("UTF-8 output")
}

/// Whether the tests run as root (mounts, chown to `nobody`, cgroups, setpriv).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The cgroup2 mount point, when there is one.
pub fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        if post.split_whitespace().next() != Some("cgroup2") {
            return None;
        }
        pre.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The `[sandbox]` lines of a test profile: `section`, plus `required = true` unless it
/// says otherwise or turns the sandbox off. A test that means to confine its command
/// must never run it unconfined when no engine works here: its escape attempts are real
/// commands (mount, remount, chroot), and `.ci/run` runs the suite as root. agentbash
/// then refuses (exit 125) and the test fails, instead of acting on the host.
pub fn confining(section: &str) -> String {
    if section.contains("required") || section.contains("mode = \"off\"") {
        section.to_string()
    } else {
        format!("{section}\nrequired = true")
    }
}

/// What a test that needs root says when it is not (see [`skip!`]).
pub fn needs_root(why: &str) -> Missing {
    Missing::new(
        format!("{why} needs root"),
        "run the suite as root, as .ci/run does",
    )
}

/// Whether `program` is on `PATH`.
pub fn has_program(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(dir.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// What a test that needs `program` says when it is missing: the Debian package that
/// has it (the one .ci/run installs).
pub fn needs_program(program: &str, package: &str) -> Missing {
    Missing::new(
        format!("{program} is not installed"),
        format!("apt-get install {package}, as .ci/run does"),
    )
}

/// Compile a test regex.
pub fn re(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).expect("test regex")
}

/// Wait (up to `within`) until a process whose command line is exactly `cmdline`
/// (arguments joined with spaces) runs.
pub fn wait_for_cmdline(cmdline: &str, within: Duration) -> bool {
    let deadline = Instant::now() + scaled(within);
    while Instant::now() < deadline {
        if processes().iter().any(|p| p.cmdline == cmdline) {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Wait (up to `within`) until `path` exists: the readiness signal of a command that
/// touches a file when it has reached a point.
pub fn wait_for_path(path: &Path, within: Duration) -> bool {
    let deadline = Instant::now() + scaled(within);
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        thread::sleep(Duration::from_millis(10));
    }
    path.exists()
}

/// A gate a command waits at until the test opens it, so a test knows what the
/// command has and has not done yet without guessing from time: [`Gate::wait`] is
/// shell text that polls for a file, [`Gate::open`] creates it.
pub struct Gate {
    path: PathBuf,
}

impl Gate {
    /// A closed gate, named `name`, in the env's temp root.
    pub fn new(env: &TestEnv, name: &str) -> Gate {
        Gate::in_dir(env.root(), name)
    }

    /// A closed gate, named `name`, in `dir` (a temp dir of the test's own).
    pub fn in_dir(dir: &Path, name: &str) -> Gate {
        Gate {
            path: dir.join(format!("gate-{name}")),
        }
    }

    /// Shell text that returns once the gate is open.
    pub fn wait(&self) -> String {
        format!(
            "until [ -e '{}' ]; do sleep 0.01; done",
            self.path.display()
        )
    }

    pub fn open(&self) {
        std::fs::write(&self.path, "").expect("open the gate");
    }

    pub fn is_open(&self) -> bool {
        self.path.exists()
    }
}

/// The parent of `pid`, from `/proc/PID/stat` (the field after the parenthesised
/// command name, which may itself contain spaces or parentheses).
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` is `ancestor` or one of its descendants.
pub fn descends_from(pid: i32, ancestor: i32) -> bool {
    let mut p = pid;
    for _ in 0..64 {
        if p == ancestor {
            return true;
        }
        match parent_of(p) {
            Some(parent) if parent > 1 => p = parent,
            _ => return false,
        }
    }
    false
}

/// Every live descendant of `ancestor` (not counting it).
pub fn descendants(ancestor: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| p != ancestor && descends_from(p, ancestor))
        .collect()
}

/// Wait until agentbash `pid` has forked its cgroup watchdog (a child that names
/// itself `agentbash-watch`): from then on a SIGKILL of agentbash leaves nothing of its
/// runs. A run starts it once it has lasted 20 ms; a test that kills agentbash waits
/// for it instead of sleeping past that.
/// Returns the watchdog's pid.
#[track_caller]
pub fn wait_for_watchdog(pid: i32) -> i32 {
    let deadline = Instant::now() + HANG_CAP;
    loop {
        let started = descendants(pid).into_iter().find(|&c| {
            parent_of(c) == Some(pid)
                && std::fs::read_to_string(format!("/proc/{c}/comm"))
                    .is_ok_and(|n| n.trim_end() == "agentbash-watch")
        });
        if let Some(watchdog) = started {
            return watchdog;
        }
        assert!(
            Instant::now() < deadline,
            "agentbash {pid} never started its cgroup watchdog (no run cgroup?)"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// The number of threads of `pid` (`Threads:` in `/proc/PID/status`).
pub fn thread_count(pid: i32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// `agentbash rpc` (or `mcp`) with the test's hermetic environment, stdin kept open.
/// Where a strict server's reader puts a line that was not JSON (see `LiveServer::recv`).
const NOT_JSON: &str = "agentbash-test: not JSON";

#[track_caller]
fn fail_on_non_json(m: &Value) {
    if let Some(line) = m.get(NOT_JSON) {
        panic!("a line on the server's stdout that is not JSON: {line}");
    }
}

pub struct LiveServer {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl LiveServer {
    pub fn start(env: &TestEnv, args: &[&str]) -> LiveServer {
        Self::start_cmd(env.cmd(args))
    }

    /// A server started from a command line of the test's own (extra variables).
    pub fn start_cmd(cmd: Cmd) -> LiveServer {
        Self::launch(cmd, false)
    }

    /// The next message (an event or a response), within `within`; `None` when none
    /// came.
    pub fn try_next(&self, within: Duration) -> Option<Value> {
        self.recv(within).ok()
    }

    pub fn send(&mut self, v: Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    }

    /// The rpc response to each of `ids`, whatever order they come in.
    pub fn responses(&self, ids: &[&str]) -> Vec<Value> {
        let mut got: Vec<Option<Value>> = vec![None; ids.len()];
        while got.iter().any(Option::is_none) {
            let m = self.recv(HANG_CAP).expect("a message within the hang cap");
            if m["type"] != "response" {
                continue;
            }
            if let Some(i) = ids.iter().position(|id| m["id"] == *id) {
                got[i] = Some(m["data"].clone());
            }
        }
        got.into_iter().flatten().collect()
    }

    /// The next message the server writes (any kind), within `within`.
    #[track_caller]
    pub fn next(&self, within: Duration) -> Value {
        self.recv(within)
            .expect("a message from the server in time")
    }

    /// Send one request and wait for its response.
    #[track_caller]
    pub fn ask(&mut self, req: Value) -> Value {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{req}").expect("write");
        stdin.flush().expect("flush");
        loop {
            let m = self.recv(HANG_CAP).expect("a response within the hang cap");
            if m["type"] == "response" && m["id"] == req["id"] {
                return m;
            }
        }
    }

    /// [`LiveServer::ask`]: the response's `data`.
    #[track_caller]
    pub fn ask_data(&mut self, req: Value) -> Value {
        self.ask(req)["data"].take()
    }

    /// Send `answer` (an rpc `approve`) and collect both the server's ack and the
    /// response to the run it answers (`run_id`), in whichever order they come: the
    /// run may finish before the ack is written.
    pub fn approve(&mut self, answer: Value, run_id: &str) -> (Value, Value) {
        let qid = answer["id"].clone();
        self.send(answer);
        let (mut ack, mut run) = (None, None);
        while ack.is_none() || run.is_none() {
            let m = self.next(HANG_CAP);
            if m["type"] != "response" {
                continue;
            }
            if m["command"] == "approve" && m["id"] == qid {
                ack = Some(m);
            } else if m["id"] == run_id {
                run = Some(m);
            }
        }
        (ack.unwrap_or_default(), run.unwrap_or_default())
    }

    /// `agentbash mcp ARGS`, with the MCP handshake done.
    pub fn mcp(env: &TestEnv, args: &[&str]) -> LiveServer {
        let mut args = args.to_vec();
        args.insert(0, "mcp");
        let mut server = LiveServer::start(env, &args);
        server.initialize();
        server
    }

    /// `agentbash mcp ARGS` (`cmd`: the test's own command line) before any
    /// handshake, strict: every line it writes must be JSON-RPC (for tests of the
    /// framing itself; [`LiveServer::jsonrpc`] reads them).
    pub fn mcp_raw(cmd: Cmd) -> LiveServer {
        Self::launch(cmd, true)
    }

    /// The MCP handshake: `initialize`, its answer checked, `initialized`.
    #[track_caller]
    pub fn initialize(&mut self) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "it", "version": "0"}}}),
        );
        let reply = self.message_with_id(&Value::from("init"));
        assert_eq!(
            reply["result"]["serverInfo"]["name"], "agentbash",
            "{reply}"
        );
        self.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// The next message, which must be JSON-RPC 2.0.
    #[track_caller]
    pub fn jsonrpc(&self, within: Duration) -> Value {
        let m = self.next(within);
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        m
    }

    /// Send an MCP `tools/call` without waiting for its answer.
    pub fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}),
        );
    }

    /// [`LiveServer::call`], then its [`LiveServer::answer`] within `within`.
    #[track_caller]
    pub fn tool_answer(
        &mut self,
        id: u64,
        tool: &str,
        arguments: Value,
        within: Duration,
    ) -> Value {
        self.call(id, tool, arguments);
        self.answer(id, within)
    }

    /// The JSON-RPC answer to request `id`, skipping other messages, within `within`.
    #[track_caller]
    pub fn answer(&self, id: u64, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let m = self.jsonrpc(deadline.saturating_duration_since(Instant::now()));
            if m["id"] == id {
                return m;
            }
        }
    }

    /// Close the server's input (end of input, if not done yet) and wait for it to
    /// exit, within `within`: its exit code, how long that took, and every message it
    /// wrote after the last one read (each must be JSON when the server is strict).
    #[track_caller]
    pub fn exit(self, within: Duration) -> (Option<i32>, Duration, Vec<Value>) {
        let (status, took, rest) = self.end(within);
        (status.code(), took, rest)
    }

    /// [`LiveServer::exit`] with the exit status.
    #[track_caller]
    fn end(mut self, within: Duration) -> (ExitStatus, Duration, Vec<Value>) {
        self.close_stdin();
        let (status, took) = self.wait_exit(within);
        (status, took, self.rest())
    }

    /// Wait up to `within` for the server's exit (killing it and failing the test
    /// past that): its status and how long the wait took.
    #[track_caller]
    fn wait_exit(&mut self, within: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return (status, started.elapsed());
            }
            if started.elapsed() > within {
                let _ = self.child.kill();
                panic!("the server did not exit within {within:?} of the end of its input");
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Every message the server wrote after the last one read, once it has exited:
    /// the reader may still be reading the last lines from the pipe.
    fn rest(&self) -> Vec<Value> {
        let mut rest = Vec::new();
        while let Ok(m) = self.recv(Duration::from_secs(5)) {
            rest.push(m);
        }
        rest
    }

    /// An MCP request (`tools/list`, `tools/call`, …); its JSON-RPC answer.
    #[track_caller]
    pub fn mcp_request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        self.message_with_id(&Value::from(id))
    }

    /// An MCP `tools/call`; the call's `result`.
    #[track_caller]
    pub fn call_tool(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let reply = self.mcp_request(
            id,
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
        );
        assert!(reply["error"].is_null(), "{tool}: {reply}");
        reply["result"].clone()
    }

    /// The next message carrying `id`, skipping the others (progress, logs).
    #[track_caller]
    fn message_with_id(&self, id: &Value) -> Value {
        loop {
            let m = self
                .recv(Duration::from_secs(30))
                .expect("an answer within 30 s");
            if &m["id"] == id {
                return m;
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Close the server's stdin (end of input) and wait for it to exit, capped at
    /// [`HANG_CAP`].
    #[track_caller]
    pub fn close(mut self) -> ExitStatus {
        self.close_stdin();
        self.wait_exit(HANG_CAP).0
    }

    /// Send the server the signal `sig`.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the server this test started.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig}) failed", self.pid());
    }

    pub fn sigkill(mut self) {
        // SAFETY: kill(2) on the server this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------
// The test builder: one agentbash invocation stated as what differs from the default.

/// One agentbash invocation, built up from what the test cares about and checked
/// against what it expects, in the manner of
/// `Test::new().run_json("echo hi").output("hi\n").json()`:
///
/// - where it runs: [`Test::new`] (a fresh [`TestEnv`] of its own), [`Test::trusting`],
///   or [`TestEnv::test`] (an env the test keeps, for several runs or a look at its
///   files afterwards);
/// - what it runs: [`Test::run_json`] / [`Test::run_text`] (`agentbash run [--json]
///   OPTS -- CMD`) or [`Test::explain_json`], with [`Test::opts`] and
///   [`Test::profile`] / [`Test::profile_file`] / [`Test::user_profile`], or any argv
///   with [`Test::args`];
///   [`Test::env`], [`Test::stdin`], [`Test::current_dir`] as on [`Cmd`];
/// - what it expects: [`Test::code`], [`Test::stdout`] / [`Test::stderr`] (exact),
///   [`Test::stdout_has`] / [`Test::stderr_has`] and [`Test::stdout_lacks`] /
///   [`Test::stderr_lacks`] (text in them or not), [`Test::stdout_matches`] /
///   [`Test::stderr_matches`] (a regex), and for a JSON result
///   [`Test::output`], [`Test::output_has`], [`Test::notice`] / [`Test::notice_is`]
///   and [`Test::field`];
///   in a table-driven test, [`Test::case`] names the case in every failure;
/// - the end: [`Test::run`] (the [`Output`]) or [`Test::json`] (the result object),
///   both after every expectation is checked.
///
/// An owned env is dropped (its tagged processes killed, its files deleted) when the
/// builder is used up, so a test that looks afterwards for leftover processes or at
/// files the run wrote (artifacts, state) keeps its own [`TestEnv`]; `spawn` and
/// `into_cmd` refuse an owned env.
#[must_use = "a Test does nothing until .run() or .json()"]
pub struct Test<'e> {
    env: Holder<'e>,
    args: Vec<String>,
    opts: Vec<String>,
    /// `Some((verb, json, command))`: `agentbash VERB [--json] OPTS -- command`.
    shell: Option<(&'static str, bool, String)>,
    vars: Vec<(String, Option<std::ffi::OsString>)>,
    stdin: Option<Vec<u8>>,
    dir: Option<PathBuf>,
    process_group: bool,
    /// The case of a table this run is, named in every failed expectation.
    case: Option<String>,
    code: Option<i32>,
    /// What a text must be: the run's stdout or stderr, or its JSON result's output.
    texts: Vec<(Text, Want)>,
    /// Parts one of the notices must contain.
    notices: Vec<String>,
    /// Notices that must stand among the result's notices, whole.
    whole_notices: Vec<String>,
    fields: Vec<(String, Value)>,
}

/// A text of the run a [`Test`] checks.
#[derive(Clone, Copy)]
enum Text {
    Stdout,
    Stderr,
    /// The JSON result's `output`.
    Output,
}

/// What a [`Test`] expects of a [`Text`].
enum Want {
    Exactly(String),
    Has(String),
    Lacks(String),
    /// A regex it matches.
    Matches(String),
}

enum Holder<'e> {
    Owned(Box<TestEnv>),
    Shared(&'e TestEnv),
}

impl TestEnv {
    /// A [`Test`] run in this env.
    pub fn test(&self) -> Test<'_> {
        Test::with(Holder::Shared(self))
    }

    /// `agentbash ARGS`, which must exit 0.
    #[track_caller]
    pub fn run_ok(&self, args: &[&str]) -> Output {
        self.test().args(args).code(0).run()
    }

    /// `env.test().run_json(command)`: a [`Test`] of `agentbash run --json -- command`
    /// in this env (it runs at `.run()` or `.json()`).
    pub fn run_json(&self, command: impl AsRef<str>) -> Test<'_> {
        self.test().run_json(command)
    }

    /// The JSON result of `agentbash run --json -- command`, which must exit 0.
    #[track_caller]
    pub fn json_of(&self, command: impl AsRef<str>) -> Value {
        self.run_json(command).code(0).json()
    }

    /// `env.test().run_text(command)`: a [`Test`] of `agentbash run -- command`.
    pub fn run_text(&self, command: impl AsRef<str>) -> Test<'_> {
        self.test().run_text(command)
    }

    /// `env.test().explain_json(command)`: a [`Test`] of `agentbash explain --json`.
    pub fn explain_json(&self, command: impl AsRef<str>) -> Test<'_> {
        self.test().explain_json(command)
    }

    /// A fresh env and `agentbash rpc` in it (see [`LiveServer::rpc`]).
    pub fn with_rpc() -> (TestEnv, LiveServer) {
        let env = TestEnv::new();
        let rpc = env.rpc(&[]);
        (env, rpc)
    }

    /// `agentbash rpc ARGS` in this env (see [`LiveServer::rpc`]).
    pub fn rpc(&self, args: &[&str]) -> LiveServer {
        LiveServer::rpc(self, args)
    }
}

impl Default for Test<'static> {
    fn default() -> Self {
        Self::new()
    }
}

impl Test<'static> {
    /// A test in a fresh hermetic env of its own.
    pub fn new() -> Self {
        Test::with(Holder::Owned(Box::default()))
    }

    /// A test in a fresh env that trusts project profiles ([`TestEnv::trusting`]).
    pub fn trusting() -> Self {
        Test::with(Holder::Owned(Box::new(TestEnv::trusting())))
    }
}

/// The expectations on a [`Text`], a method each, written once: `NAME: TEXT WANT;`
/// makes `fn NAME(self, text)`, which expects `Want::WANT(text)` of `Text::TEXT`.
macro_rules! text_wants {
    ($($(#[$doc:meta])* $name:ident: $text:ident $want:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(self, text: impl Into<String>) -> Self {
            self.want(Text::$text, Want::$want(text.into()))
        }
    )*};
}

impl<'e> Test<'e> {
    fn with(env: Holder<'e>) -> Self {
        Test {
            env,
            args: Vec::new(),
            opts: Vec::new(),
            shell: None,
            vars: Vec::new(),
            stdin: None,
            dir: None,
            process_group: false,
            case: None,
            code: None,
            texts: Vec::new(),
            notices: Vec::new(),
            whole_notices: Vec::new(),
            fields: Vec::new(),
        }
    }

    /// The env the test runs in (to write files or profiles before the run).
    pub fn test_env(&self) -> &TestEnv {
        match &self.env {
            Holder::Owned(env) => env,
            Holder::Shared(env) => env,
        }
    }

    /// Arguments of the invocation, in order (all of them, for anything but `run`).
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// `agentbash run --json OPTS -- command`.
    pub fn run_json(mut self, command: impl AsRef<str>) -> Self {
        self.shell = Some(("run", true, command.as_ref().to_string()));
        self
    }

    /// `agentbash run OPTS -- command` (the text the caller reads).
    pub fn run_text(mut self, command: impl AsRef<str>) -> Self {
        self.shell = Some(("run", false, command.as_ref().to_string()));
        self
    }

    /// `agentbash explain --json OPTS -- command`: what a run would do.
    pub fn explain_json(mut self, command: impl AsRef<str>) -> Self {
        self.shell = Some(("explain", true, command.as_ref().to_string()));
        self
    }

    /// Options of `run` (or `explain`), before the `--`.
    pub fn opts(mut self, opts: &[&str]) -> Self {
        self.opts.extend(opts.iter().map(|a| a.to_string()));
        self
    }

    /// `-p NAME` among the options.
    pub fn profile(self, name: &str) -> Self {
        self.opts(&["-p", name])
    }

    /// Write `toml` to `rel` in the working directory and select it (`-p ./REL`).
    pub fn profile_file(self, rel: &str, toml: &str) -> Self {
        self.test_env().write(rel, toml);
        self.profile(&format!("./{rel}"))
    }

    /// Write `toml` as the user profile `name` and select it (`-p NAME`).
    pub fn user_profile(self, name: &str, toml: &str) -> Self {
        self.test_env().user_profile(name, toml);
        self.profile(name)
    }

    pub fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Self {
        self.vars.push((k.to_string(), Some(v.as_ref().to_owned())));
        self
    }

    pub fn env_remove(mut self, k: &str) -> Self {
        self.vars.push((k.to_string(), None));
        self
    }

    /// Feed these bytes on stdin (default: the null device).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn current_dir(mut self, d: impl AsRef<Path>) -> Self {
        self.dir = Some(d.as_ref().to_path_buf());
        self
    }

    /// Start in a new process group of its own.
    pub fn own_process_group(mut self) -> Self {
        self.process_group = true;
        self
    }

    /// Name the case of a table-driven test this run is: every failed expectation
    /// starts with it, so a failure says which case failed.
    pub fn case(mut self, name: impl Into<String>) -> Self {
        self.case = Some(name.into());
        self
    }

    /// Expect this exit code.
    pub fn code(mut self, want: i32) -> Self {
        self.code = Some(want);
        self
    }

    fn want(mut self, text: Text, want: Want) -> Self {
        self.texts.push((text, want));
        self
    }

    text_wants! {
        /// Expect exactly this stdout.
        stdout: Stdout Exactly;
        /// Expect stdout to contain this text.
        stdout_has: Stdout Has;
        /// Expect stderr to contain this text.
        stderr_has: Stderr Has;
        /// Expect stdout not to contain this text.
        stdout_lacks: Stdout Lacks;
        /// Expect stderr not to contain this text.
        stderr_lacks: Stderr Lacks;
        /// Expect exactly this stderr.
        stderr: Stderr Exactly;
        /// Expect stdout to match this regex.
        stdout_matches: Stdout Matches;
        /// Expect stderr to match this regex.
        stderr_matches: Stderr Matches;
        /// Expect the JSON result's `output` to contain this text.
        output_has: Output Has;
        /// Expect the JSON result's `output` to be exactly this.
        output: Output Exactly;
    }

    /// Expect one of the JSON result's notices to contain this text.
    pub fn notice(mut self, part: impl Into<String>) -> Self {
        self.notices.push(part.into());
        self
    }

    /// Expect one of the JSON result's notices to be exactly this.
    pub fn notice_is(mut self, want: impl Into<String>) -> Self {
        self.whole_notices.push(want.into());
        self
    }

    /// Expect the JSON result's `key` to equal `want`.
    pub fn field(mut self, key: &str, want: impl Into<Value>) -> Self {
        self.fields.push((key.to_string(), want.into()));
        self
    }

    /// The hermetic command line the builder describes, for a test that drives it
    /// itself (its expectations are not checked). Only for a test on a [`TestEnv`] the
    /// test keeps: an env of the builder's own would go, and its files with it.
    #[track_caller]
    pub fn into_cmd(self) -> Cmd {
        assert!(
            matches!(self.env, Holder::Shared(_)),
            "into_cmd needs env.test(): the command would outlive Test::new()'s env"
        );
        self.command()
    }

    /// [`Test::into_cmd`] as a [`Command`], for a test that needs its own pipes.
    #[track_caller]
    pub fn into_command(self) -> Command {
        self.into_cmd().into_command()
    }

    fn command(&self) -> Cmd {
        let mut argv: Vec<&str> = self.args.iter().map(String::as_str).collect();
        if let Some((verb, json, command)) = &self.shell {
            argv.push(verb);
            if *json {
                argv.push("--json");
            }
            argv.extend(self.opts.iter().map(String::as_str));
            argv.push("--");
            argv.push(command);
        } else {
            assert!(
                self.opts.is_empty(),
                "opts() goes with run_json or run_text"
            );
        }
        let mut cmd = self.test_env().cmd(&argv);
        for (k, v) in &self.vars {
            cmd = match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(d) = &self.dir {
            cmd = cmd.current_dir(d);
        }
        if let Some(bytes) = &self.stdin {
            cmd = cmd.stdin(bytes.clone());
        }
        if self.process_group {
            cmd = cmd.own_process_group();
        }
        cmd
    }

    /// Start it without waiting (nothing is checked).
    #[track_caller]
    pub fn spawn(self) -> Running {
        self.into_cmd().spawn()
    }

    /// Run it (capped at [`HANG_CAP`]) and check every expectation.
    #[track_caller]
    pub fn run(self) -> Output {
        let out = self.command().run();
        self.check(&out);
        out
    }

    /// Run it, check every expectation, and return stdout as the JSON result object.
    #[track_caller]
    pub fn json(self) -> Value {
        self.run().json()
    }

    #[track_caller]
    fn check(&self, out: &Output) {
        let case = match &self.case {
            Some(name) => format!("[{name}] "),
            None => String::new(),
        };
        let streams = format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            out.stdout, out.stderr
        );
        if let Some(want) = self.code {
            assert_eq!(
                out.code(),
                Some(want),
                "{case}exit status {:?}, want {want}\n{streams}",
                out.status
            );
        }
        let uses_json = !self.notices.is_empty()
            || !self.whole_notices.is_empty()
            || !self.fields.is_empty()
            || self.texts.iter().any(|(t, _)| matches!(t, Text::Output));
        let v = if uses_json { out.json() } else { Value::Null };
        let result = format!("{v:#}");
        for (text, want) in &self.texts {
            let (name, text, shown) = match text {
                Text::Stdout => ("stdout", out.stdout.as_str(), &streams),
                Text::Stderr => ("stderr", out.stderr.as_str(), &streams),
                Text::Output => ("output", s(&v, "output"), &result),
            };
            match want {
                Want::Exactly(want) => {
                    assert_eq!(text, want.as_str(), "{case}{name}\n{shown}")
                }
                Want::Has(want) => assert!(
                    text.contains(want.as_str()),
                    "{case}{name} lacks {want:?}\n{shown}"
                ),
                Want::Lacks(unwanted) => assert!(
                    !text.contains(unwanted.as_str()),
                    "{case}{name} has {unwanted:?}\n{shown}"
                ),
                Want::Matches(pattern) => assert!(
                    re(pattern).is_match(text),
                    "{case}{name} does not match {pattern:?}\n{shown}"
                ),
            }
        }
        if uses_json {
            let all = notices(&v);
            for part in &self.notices {
                assert!(
                    all.iter().any(|n| n.contains(part.as_str())),
                    "{case}no notice has {part:?}: {all:?}"
                );
            }
            for want in &self.whole_notices {
                assert!(all.contains(want), "{case}no notice is {want:?}: {all:?}");
            }
            for (key, want) in &self.fields {
                assert_eq!(&v[key], want, "{case}{key} of {v:#}");
            }
        }
    }
}

impl LiveServer {
    /// `agentbash rpc ARGS` in `env`, strict: every line it writes must be JSON (a line
    /// that is not ends the conversation, so the next wait fails and shows it).
    pub fn rpc(env: &TestEnv, args: &[&str]) -> LiveServer {
        let mut argv = vec!["rpc"];
        argv.extend_from_slice(args);
        Self::launch(env.cmd(&argv), true)
    }

    /// Start `cmd` with its stdin kept open and its stdout read as JSON lines; a line
    /// that is not JSON is skipped, or, when `strict`, ends the conversation.
    fn launch(cmd: Cmd, strict: bool) -> LiveServer {
        let mut c = cmd.into_command();
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().expect("the server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let v = match serde_json::from_str::<Value>(&line) {
                    Ok(v) => v,
                    Err(e) if strict => {
                        // Reported to the test thread, which fails on it (see `recv`).
                        let _ = tx.send(serde_json::json!({ NOT_JSON: format!("{e}: {line}") }));
                        break;
                    }
                    Err(_) => continue,
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        LiveServer {
            child,
            stdin: Some(stdin),
            lines,
        }
    }

    /// `agentbash rpc --profile FILE` with `toml` written to FILE in the env's root.
    pub fn rpc_with_profile(env: &TestEnv, toml: &str) -> LiveServer {
        let path = env.root().join("server.toml");
        std::fs::write(&path, toml).expect("write the server profile");
        LiveServer::rpc(env, &["--profile", &path.display().to_string()])
    }

    /// End the server's input (EOF) without waiting for it.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Every message already read and not yet taken, without waiting.
    pub fn drain(&self) -> Vec<Value> {
        let got: Vec<Value> = self.lines.try_iter().collect();
        got.iter().for_each(fail_on_non_json);
        got
    }

    /// The next message within `within`. A line a strict server wrote that was not
    /// JSON fails the test here, naming the line.
    fn recv(&self, within: Duration) -> Result<Value, mpsc::RecvTimeoutError> {
        let m = self.lines.recv_timeout(within)?;
        fail_on_non_json(&m);
        Ok(m)
    }

    /// Write `bytes` and a newline as they are (a malformed line, a BOM, a huge one).
    pub fn send_raw(&mut self, bytes: impl AsRef<[u8]>) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes.as_ref()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    /// Every message up to and including the response to `id`.
    #[track_caller]
    pub fn until_response(&self, id: &Value) -> Vec<Value> {
        let mut got = Vec::new();
        loop {
            let m = self
                .recv(HANG_CAP)
                .unwrap_or_else(|_| panic!("no response to {id} within the hang cap: {got:#?}"));
            let done = m["type"] == "response" && &m["id"] == id;
            got.push(m);
            if done {
                return got;
            }
        }
    }

    /// Every message until `n` responses (of any id) have come.
    #[track_caller]
    pub fn first_responses(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + HANG_CAP;
        let mut got: Vec<Value> = Vec::new();
        let count = |got: &[Value]| got.iter().filter(|m| m["type"] == "response").count();
        while count(&got) < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.recv(left) {
                Ok(m) => got.push(m),
                Err(_) => panic!(
                    "only {} of {n} responses within {HANG_CAP:?}: {got:#?}",
                    count(&got)
                ),
            }
        }
        got
    }

    /// Close stdin, wait for the exit (capped at [`HANG_CAP`]) and take what the
    /// server wrote after the last message read.
    #[track_caller]
    pub fn finish(self) -> (ExitStatus, Vec<Value>) {
        let (status, _, rest) = self.end(HANG_CAP);
        (status, rest)
    }
}

impl TestEnv {
    /// [`TestEnv::terminal`] of this size, started.
    pub fn start_terminal(&self, line: &str, cols: u16, rows: u16) -> crate::tmux::TmuxTerminal {
        let builder = self.terminal(line).size(cols, rows);
        builder.start().expect("tmux starts")
    }

    /// A tmux terminal (not started) running `bash -c line` from the working
    /// directory, with the hermetic environment of [`TestEnv::cmd`].
    pub fn terminal(&self, line: &str) -> crate::tmux::TmuxBuilder {
        let mut b =
            crate::tmux::TmuxTerminal::builder(&["bash", "--norc", "--noprofile", "-c", line])
                .cwd(self.work());
        let (cleared, set) = self.hermetic_env();
        for k in cleared {
            b = b.env_remove(k);
        }
        for (k, v) in set {
            b = b.env(k, v);
        }
        b
    }
}

/// `agentbash run --format ndjson -t 99999 -- command`, which must exit `code`: the
/// timeout is clamped, so a notice is known before the run starts.
#[track_caller]
pub fn ndjson_with_a_clamp(command: &str, code: i32) -> Output {
    Test::new()
        .run_text(command)
        .opts(&["--format", "ndjson", "-t", "99999"])
        .code(code)
        .run()
}

/// `text` quoted for a POSIX shell (in single quotes).
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A shell line (for a terminal) that runs `agentbash run OPTIONS -- COMMAND`, then
/// prints its exit status as `ab-exit=N` and the line `done`, for the test to wait on.
pub fn agentbash_line(options: &str, command: &str, done: &str) -> String {
    let bin = sh_quote(&bin().to_string_lossy());
    let command = sh_quote(command);
    format!("{bin} run {options} -- {command}; echo ab-exit=$?; echo {done}")
}

/// Run a program a test needs for its setup (chown, git, touch) and assert it worked.
#[track_caller]
pub fn must_run(cmd: &mut Command) {
    let status = cmd.status().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(status.success(), "{cmd:?}: {status}");
}

/// `agentbash ARGS` as nobody (uid and gid 65534, through setpriv(1)), for what a user
/// other than root gets: it runs from `root/ws` with HOME `root/home` and its state in
/// `root/state`, the whole of `root` given to nobody first. `vars` are added to its
/// environment. Returns the JSON result.
#[track_caller]
pub fn run_json_as_nobody(root: &Path, args: &[&str], vars: &[(&str, &str)]) -> Value {
    for d in ["ws", "home", "state"] {
        std::fs::create_dir_all(root.join(d)).expect("dir");
    }
    must_run(Command::new("chown").args(["-R", "65534:65534"]).arg(root));
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(bin())
        .args(args)
        .current_dir(root.join("ws"))
        .env("HOME", root.join("home"))
        .env("AGENTBASH_STATE_DIR", root.join("state"))
        .envs(vars.iter().copied())
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .expect("agentbash as nobody");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The text of an MCP tool result that must be an error (`isError: true`).
#[track_caller]
pub fn tool_error_text(result: &Value) -> &str {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The strings of the JSON result's array `key` (`notices`, `warnings`); none when
/// it is missing.
pub fn strings(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

/// The result's notices ([`strings`]).
pub fn notices(v: &Value) -> Vec<String> {
    strings(v, "notices")
}

/// Assert that one of the result's notices contains `part`.
#[track_caller]
pub fn assert_notice(v: &Value, part: &str) {
    let all = notices(v);
    assert!(
        all.iter().any(|n| n.contains(part)),
        "no notice has {part:?}: {all:?}"
    );
}

/// Assert that the result's first notice contains `part`.
#[track_caller]
pub fn assert_first_notice_has(v: &Value, part: &str) {
    let first = v["notices"][0].as_str();
    assert!(
        first.is_some_and(|n| n.contains(part)),
        "the first notice lacks {part:?}: {v:#}"
    );
}

/// Assert that one of the result's notices is exactly `want`.
#[track_caller]
pub fn assert_notice_is(v: &Value, want: &str) {
    let notices = v["notices"].as_array().unwrap();
    assert!(notices.iter().any(|n| n == want), "{:#}", v["notices"]);
}

/// Assert that one of the result's warnings contains `part`.
#[track_caller]
pub fn assert_warning(v: &Value, part: &str) {
    let all = strings(v, "warnings");
    assert!(
        all.iter().any(|w| w.contains(part)),
        "no warning has {part:?}: {all:?}"
    );
}

/// Assert that none of the result's notices contains `part`.
#[track_caller]
pub fn assert_no_notice(v: &Value, part: &str) {
    let all = notices(v);
    assert!(
        !all.iter().any(|n| n.contains(part)),
        "a notice has {part:?}: {all:?}"
    );
}
