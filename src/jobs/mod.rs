//! Jobs: commands that outlive the request that started them (dev servers, watchers,
//! long builds, REPLs), bounded like runs are.
//!
//! A job is started through the same plan as a run (the guard refuses it, the
//! sandbox confines it: `pipeline::job_launch`) and spawned through the one spawner
//! by a small supervisor: agentbash itself re-executed as `agentbash job
//! __supervise DIR`, detached from the caller so the caller may exit. The supervisor
//! owns the job's pipe or pseudo-terminal, writes what it prints to a bounded log
//! (`log`), watches for readiness, enforces the ttl, answers `send`, `screen` and
//! `stop` on a socket, and records the job's state in `state.json`. Every job has a
//! private directory under `<state dir>/jobs/N`; whatever is read back from there is
//! treated as hostile (size-capped, no links followed, owner checked).
//!
//! A supervisor that dies (SIGKILL) leaves its job `lost`: the next look at the jobs
//! (`job list`, any job command) records that and kills what is left of the job's
//! processes, found by its run marker.

pub mod calls;
pub mod log;
mod ready;
pub mod supervise;

use crate::fsguard::{self, Links};
use crate::process::CancelToken;
use crate::shell::store::FileLock;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The largest state or spec file read back.
const MAX_RECORD_BYTES: u64 = 256 * 1024;
/// How much output one `job output` returns by default.
pub const DEFAULT_READ_BYTES: usize = 64 * 1024;

/// When a job counts as ready.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// A TCP port the job's own processes listen on and that accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// A regular expression a line of its output matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
}

/// `jobs.idle_timeout` for a job that is still a foreground run (rpc/mcp
/// `jobs.background_after`): the supervisor stops it when it has neither printed
/// nor used CPU for `secs`, until `until_ms` (when the run is handed off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleWhile {
    pub secs: u64,
    pub until_ms: u64,
}

/// What to start: everything the supervisor needs, written to `spec.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobSpec {
    pub command: String,
    pub name: Option<String>,
    /// The directory the command is started from (and the profile looked up from).
    pub invoking_dir: PathBuf,
    pub cwd: Option<PathBuf>,
    /// The profile, as the caller named it.
    pub profile: String,
    pub env: Vec<(String, String)>,
    pub sandbox: Option<crate::sandbox::Mode>,
    /// The tools the caller has, for the interceptor (`None`: the profile's).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Skip the interceptor (`--no-intercept`).
    #[serde(default)]
    pub no_intercept: bool,
    pub ready: Readiness,
    /// A pseudo-terminal (a REPL, a full-screen program) instead of a pipe.
    pub pty: bool,
    /// Keep a pipe to the job's stdin open for `job send`.
    pub stdin: bool,
    /// Seconds before the job is stopped (`None`: the profile's `jobs.ttl`).
    pub ttl: Option<u64>,
    /// Stop the job when its caller is gone (a server that exits, cleanly or
    /// SIGKILLed): the supervisor's stdin is a pipe whose only writer the caller
    /// holds, so its end of file says the caller went.
    #[serde(default)]
    pub stop_with_caller: bool,
    #[serde(default)]
    pub idle: Option<IdleWhile>,
}

/// Where a job stands. `running` and `ready` are running (`ready`: its readiness
/// check passed); the others are over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Running: no readiness check, or one not met yet (`ready: false`).
    #[serde(alias = "starting")]
    Running,
    Ready,
    /// It ended by itself (`exit_code` or `signal`).
    Exited,
    /// agentbash stopped it: `job stop`, its server's exit, `jobs.idle_timeout`.
    Killed,
    /// Its ttl ran out and it was stopped.
    TimedOut,
    /// Its supervisor died; what was left of it was killed.
    Lost,
}

impl State {
    pub fn running(self) -> bool {
        matches!(self, State::Running | State::Ready)
    }

    pub fn word(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Ready => "ready",
            State::Exited => "exited",
            State::Killed => "killed",
            State::TimedOut => "timed_out",
            State::Lost => "lost",
        }
    }
}

/// A process, named for good by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcId {
    pub pid: i32,
    pub started: u64,
}

impl ProcId {
    pub fn of(pid: i32) -> Option<ProcId> {
        crate::process::procfs::start_time(pid).map(|started| ProcId { pid, started })
    }

    pub fn alive(&self) -> bool {
        let zombie = std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .ok()
            .and_then(|s| {
                s.rfind(')')
                    .map(|i| s[i + 2..].starts_with('Z') || s[i + 2..].starts_with('X'))
            })
            .unwrap_or(true);
        !zombie && crate::process::procfs::start_time(self.pid) == Some(self.started)
    }
}

/// A job's recorded state (`state.json`), written by its supervisor (and by whoever
/// finds it lost).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobRecord {
    /// `job://N`.
    pub id: String,
    pub number: u64,
    pub name: Option<String>,
    pub command: String,
    pub state: State,
    /// The readiness condition was met (`None`: there is none).
    pub ready: Option<bool>,
    /// The job's leader (its shell, or what the shell exec'd).
    pub pid: Option<i32>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// Why it ended when agentbash ended it: "stopped", "ttl (N s)", "server exit",
    /// "idle (N s)", "supervisor gone"; or why it never started.
    pub reason: Option<String>,
    pub pty: bool,
    pub stdin: bool,
    pub ttl: Option<u64>,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    pub cwd: String,
    pub log_max_bytes: u64,
    pub supervisor: Option<ProcId>,
    pub leader: Option<ProcId>,
    pub marker: Option<String>,
    /// The sandbox the supervisor confined the job with (the result's `sandbox`).
    #[serde(default)]
    pub sandbox: Option<serde_json::Value>,
    /// What the supervisor has to say about the job: a sandbox that is not
    /// enforced, a write the sandbox refused.
    #[serde(default)]
    pub notices: Vec<String>,
}

impl JobRecord {
    /// The exit code a caller of `job wait` (and a `job start` that saw the job end)
    /// exits with: the job's own, 128+N for death by signal N, 124 when its ttl ran
    /// out, 125 when its supervisor was lost; `None` while it runs.
    pub fn exit_status(&self) -> Option<i32> {
        if self.state.running() {
            return None;
        }
        let by_signal = self
            .signal
            .as_deref()
            .and_then(signal_number)
            .map(|s| 128 + s);
        Some(match self.state {
            State::TimedOut => crate::exit::TIMEOUT,
            State::Lost => crate::exit::FAILURE,
            _ => self.exit_code.or(by_signal).unwrap_or(crate::exit::FAILURE),
        })
    }

    /// `jobs.idle_timeout` ended it (as a foreground run): after how many seconds.
    pub fn idle_secs(&self) -> Option<u64> {
        let r = self.reason.as_deref()?.strip_prefix("idle (")?;
        r.strip_suffix(" s)")?.parse().ok()
    }
}

/// The signal number of a name `exit::signal_name` gives.
pub fn signal_number(name: &str) -> Option<i32> {
    (1..=64).find(|&s| crate::exit::signal_name(s) == name)
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("no job {0}; `agentbash job list --all` shows the jobs")]
    NotFound(String),
    #[error(
        "{count} jobs are running, the most `jobs.max_running` allows; stop one with `agentbash job stop NAME`:\n{list}",
        count = .running.len(),
        list = .running.iter().map(|r| format!("  {}", one_line(r))).collect::<Vec<_>>().join("\n")
    )]
    TooMany { running: Vec<JobRecord> },
    #[error("a running job is already named {0:?} ({1}); pick another --name or stop it")]
    NameTaken(String, String),
    #[error(
        "--name {0:?}: use 1-64 letters, digits, '.', '_' or '-', not only digits (digits name job://N)"
    )]
    BadName(String),
    #[error("the readiness regex {0:?} (--ready, or `ready` over rpc and mcp) is invalid: {1}")]
    BadReady(String, String),
    #[error("{0}")]
    Refused(crate::pipeline::JobRefusal),
    /// The profile could not be loaded; the loader's message names the file and key.
    #[error("{0}")]
    Profile(String),
    /// A field of the request that cannot be honoured (a sandbox the profile does
    /// not let callers choose).
    #[error("{0}")]
    BadRequest(String),
    #[error("{} {what}", .job)]
    NotRunning { job: String, what: String },
    #[error("{0} is still running; stop it first (`agentbash job stop {0}`)")]
    StillRunning(String),
    #[error("jobs directory: {0}")]
    Io(#[from] std::io::Error),
}

impl JobError {
    /// The exit code the CLI ends with.
    pub fn exit_code(&self) -> i32 {
        match self {
            JobError::Refused(r) => r.exit,
            JobError::BadName(_) | JobError::BadReady(..) | JobError::BadRequest(_) => {
                crate::exit::USAGE
            }
            _ => crate::exit::FAILURE,
        }
    }
}

/// `job://3 web  ready  python3 -m http.server 8765`.
pub fn one_line(r: &JobRecord) -> String {
    let name = r
        .name
        .as_deref()
        .map(|n| format!(" {n}"))
        .unwrap_or_default();
    let mut state = r.state.word().to_string();
    if let Some(c) = r.exit_code {
        state.push_str(&format!(" {c}"));
    } else if let Some(s) = &r.signal {
        state.push_str(&format!(" {s}"));
    }
    if r.state == State::Running && r.ready == Some(false) {
        state.push_str(" (not ready)");
    }
    let pid = r.pid.map(|p| format!("  pid {p}")).unwrap_or_default();
    format!(
        "{}{name}  {state}{pid}  {}",
        r.id,
        crate::display::escape_controls(&r.command)
    )
}

fn valid_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && !n.chars().all(|c| c.is_ascii_digit())
}

/// A job's output as callers get it. This is the one place where what a job logged
/// becomes strings (so the one place to mask secrets in it): `exact` is the bytes as
/// UTF-8 (lossy), for the JSON `output` and a pipe, where cursor reads must join up;
/// `text` is sanitized, for a terminal and a model.
#[derive(Debug, Clone, Default)]
pub struct JobText {
    pub exact: String,
    pub text: String,
}

impl JobText {
    pub fn of(bytes: &[u8]) -> JobText {
        JobText {
            exact: String::from_utf8_lossy(bytes).into_owned(),
            text: crate::output::sanitize::sanitize(bytes),
        }
    }
}

/// The jobs directory and everything done to it.
pub struct Jobs {
    root: PathBuf,
}

/// How long `job start` waits for readiness when the caller does not say.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// What `start` answers: the record as it stood when the wait ended.
#[derive(Debug)]
pub struct Started {
    pub record: JobRecord,
    /// The output so far (its last [`DEFAULT_READ_BYTES`] when there is more).
    pub output: log::Chunk,
    /// For a `stop_with_caller` job: the only writer of the supervisor's stdin.
    /// Dropping it (or the caller dying) stops the job.
    pub owner: Option<std::os::fd::OwnedFd>,
}

/// How long `start` waits: for readiness when the job has a check (at most
/// `ready_timeout`), else `settle`, so a command that fails at once (a port in use)
/// is answered as ended; both end early when the job ends.
#[derive(Debug, Clone, Copy)]
pub struct StartWait {
    pub ready_timeout: Duration,
    pub settle: Duration,
}

/// How often a waiting caller looks at a job's record again, at most.
const POLL_MAX: Duration = Duration::from_millis(20);

impl Jobs {
    pub fn open() -> Result<Jobs, JobError> {
        let root = crate::paths::state_dir().join("jobs");
        crate::paths::private_dir(&root).map_err(std::io::Error::from)?;
        Ok(Jobs { root })
    }

    pub fn dir(&self, number: u64) -> PathBuf {
        self.root.join(number.to_string())
    }

    fn lock(&self) -> Result<FileLock, JobError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        FileLock::acquire(&self.root.join(".lock"), None, deadline).map_err(|e| {
            JobError::Io(std::io::Error::other(format!(
                "cannot lock the jobs directory: {e:?}"
            )))
        })
    }

    fn numbers(&self) -> Vec<u64> {
        let mut v: Vec<u64> = std::fs::read_dir(&self.root)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable();
        v
    }

    /// The record of job `number`, as its files say (no liveness check).
    pub fn read(&self, number: u64) -> Option<JobRecord> {
        let dir = self.dir(number);
        fsguard::check_dir(&dir).ok()?;
        let text =
            fsguard::read_text(&dir.join("state.json"), MAX_RECORD_BYTES, Links::Refuse).ok()?;
        serde_json::from_str::<JobRecord>(&text)
            .ok()
            .filter(|r| r.number == number)
    }

    fn write(&self, r: &JobRecord) -> std::io::Result<()> {
        write_record(&self.dir(r.number), r)
    }

    /// Every job, oldest first, a job whose supervisor is gone recorded as `lost`
    /// and what is left of its processes killed.
    pub fn list(&self) -> Vec<JobRecord> {
        self.numbers()
            .into_iter()
            .filter_map(|n| self.read(n))
            .map(|r| self.check(r))
            .collect()
    }

    /// `r` itself, or `lost` when its supervisor is gone while the record says it
    /// runs (its leftovers killed).
    fn check(&self, r: JobRecord) -> JobRecord {
        if !r.state.running() || r.supervisor.is_none_or(|s| s.alive()) {
            return r;
        }
        let Ok(_lock) = self.lock() else {
            return r;
        };
        // Re-read under the lock: the supervisor may have finished meanwhile.
        let Some(mut r) = self.read(r.number) else {
            return r;
        };
        if !r.state.running() {
            return r;
        }
        if let Some(marker) = &r.marker {
            crate::process::teardown::kill_orphans(marker, r.leader.map(|l| (l.pid, l.started)));
        }
        r.state = State::Lost;
        r.reason = Some("supervisor gone".into());
        r.ended_at_ms = Some(now_ms());
        let _ = self.write(&r);
        r
    }

    /// The job `name` names: `job://N`, `N`, or a name (the newest job with it).
    pub fn find(&self, name: &str) -> Result<JobRecord, JobError> {
        let number = name
            .strip_prefix("job://")
            .unwrap_or(name)
            .parse::<u64>()
            .ok();
        let found = match number {
            Some(n) => self.read(n),
            None => self
                .numbers()
                .into_iter()
                .rev()
                .filter_map(|n| self.read(n))
                .find(|r| r.name.as_deref() == Some(name)),
        };
        found
            .map(|r| self.check(r))
            .ok_or_else(|| JobError::NotFound(name.to_string()))
    }

    /// Start `spec` under `profile` and wait as `wait` says. The interceptor's and
    /// the guard's refusals come back at once, nothing started.
    pub fn start(
        &self,
        spec: &JobSpec,
        profile: &crate::LoadedProfile,
        wait: StartWait,
    ) -> Result<Started, JobError> {
        if let Some(n) = &spec.name
            && !valid_name(n)
        {
            return Err(JobError::BadName(n.clone()));
        }
        // Checked before anything starts: the supervisor would only fail on it.
        if let Some(re) = &spec.ready.regex
            && let Err(e) = regex::Regex::new(re)
        {
            let reason = e.to_string();
            let reason = reason.lines().last().unwrap_or(&reason).trim();
            let reason = reason.strip_prefix("error: ").unwrap_or(reason);
            return Err(JobError::BadReady(re.clone(), reason.to_string()));
        }
        let req = run_request(spec, profile);
        let plan = crate::pipeline::plan_run(&req, profile);
        crate::pipeline::job_refusal(&plan).map_err(JobError::Refused)?;
        let jobs = &profile.profile.jobs;
        let (number, dir) = {
            let _lock = self.lock()?;
            self.expire(Duration::from_secs(jobs.keep_exited));
            let running: Vec<JobRecord> = self
                .numbers()
                .into_iter()
                .filter_map(|n| self.read(n))
                .filter(|r| r.state.running() && r.supervisor.is_none_or(|s| s.alive()))
                .collect();
            if let Some(n) = &spec.name
                && let Some(r) = running.iter().find(|r| r.name.as_deref() == Some(n))
            {
                return Err(JobError::NameTaken(n.clone(), r.id.clone()));
            }
            if running.len() >= jobs.max_running {
                return Err(JobError::TooMany { running });
            }
            let number = self.numbers().last().map_or(1, |n| n + 1);
            let dir = self.dir(number);
            crate::paths::private_dir(&dir).map_err(std::io::Error::from)?;
            // What is written here is read by every `job list` and `job status`: with
            // the secrets (`output.redact`) masked, as a run's result has them.
            let shown = |t: &str| plan.secrets.mask(t).into_owned();
            let record = JobRecord {
                id: format!("job://{number}"),
                number,
                name: spec.name.as_deref().map(shown),
                command: shown(&spec.command),
                state: State::Running,
                ready: None,
                pid: None,
                exit_code: None,
                signal: None,
                reason: None,
                pty: spec.pty,
                stdin: spec.stdin,
                ttl: spec.ttl.or(Some(jobs.ttl)).filter(|&t| t > 0),
                started_at_ms: now_ms(),
                ended_at_ms: None,
                cwd: shown(&spec.invoking_dir.display().to_string()),
                log_max_bytes: jobs.log_max_bytes,
                supervisor: None,
                leader: None,
                marker: None,
                sandbox: None,
                notices: Vec::new(),
            };
            let json = serde_json::to_vec(spec).map_err(std::io::Error::other)?;
            fsguard::write_private(&dir.join("spec.json"), &json)?;
            write_record(&dir, &record)?;
            (number, dir)
        };
        // Close-on-exec on both ends: only the supervisor gets the read end (as its
        // stdin), and nothing else this process starts holds the write end.
        let (caller_end, owner) = if spec.stop_with_caller {
            let (r, w) =
                nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        let supervisor = supervise::spawn(&dir, &spec.invoking_dir, caller_end)?;
        let checks = spec.ready.port.is_some() || spec.ready.regex.is_some();
        let ready_by = after(wait.ready_timeout);
        // Without a check, `settle` counts from the job's own start.
        let mut settled_by = None;
        let mut pause = Duration::from_micros(500);
        loop {
            let r = self.read(number);
            if !checks && settled_by.is_none() && r.as_ref().is_some_and(|r| r.pid.is_some()) {
                settled_by = Some(after(wait.settle));
            }
            let settled = settled_by.is_some_and(|by| by.is_none_or(|by| Instant::now() >= by));
            if let Some(r) = &r
                && (!r.state.running() || r.ready == Some(true) || settled)
            {
                return Ok(self.started(r.clone(), owner));
            }
            if !supervisor.alive() {
                // It may have written its last state right before it went.
                let r = self
                    .read(number)
                    .ok_or_else(|| JobError::NotFound(format!("job://{number}")))?;
                let r = if r.state.running() { self.check(r) } else { r };
                return Ok(self.started(r, owner));
            }
            if checks && ready_by.is_some_and(|by| Instant::now() >= by) {
                let mut r = r.ok_or_else(|| JobError::NotFound(format!("job://{number}")))?;
                r.ready = Some(false);
                return Ok(self.started(r, owner));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    fn started(&self, record: JobRecord, owner: Option<std::os::fd::OwnedFd>) -> Started {
        let output = self.tail(&record, usize::MAX);
        let owner = owner.filter(|_| record.state.running());
        Started {
            record,
            output,
            owner,
        }
    }

    /// The last `lines` lines of a job's output (at most [`DEFAULT_READ_BYTES`]).
    pub fn tail(&self, r: &JobRecord, lines: usize) -> log::Chunk {
        log::tail(
            &self.dir(r.number),
            r.log_max_bytes,
            lines,
            DEFAULT_READ_BYTES,
        )
    }

    /// Where the next byte the job prints will be: a cursor that reads only what
    /// comes from now on.
    pub fn cursor(&self, r: &JobRecord) -> u64 {
        log::end(&self.dir(r.number), r.log_max_bytes)
    }

    /// The job's log directory (`log_path`).
    pub fn log_path(&self, r: &JobRecord) -> PathBuf {
        self.dir(r.number).join(log::DIR)
    }

    /// Output from `cursor` (`None`: from the start of what is kept), waiting up to
    /// `wait` for some when there is none yet and the job runs (`stop` ends the wait).
    pub fn output(
        &self,
        r: &JobRecord,
        cursor: Option<u64>,
        wait: Duration,
        max: usize,
        stop: &CancelToken,
    ) -> (JobRecord, log::Chunk) {
        let dir = self.dir(r.number);
        let deadline = after(wait);
        let mut r = r.clone();
        loop {
            let c = log::read(&dir, r.log_max_bytes, cursor.unwrap_or(0), max);
            if !c.bytes.is_empty()
                || !r.state.running()
                || deadline.is_some_and(|d| Instant::now() >= d)
                || stop.reason().is_some()
            {
                return (r, c);
            }
            std::thread::sleep(Duration::from_millis(5));
            if let Some(now) = self.read(r.number) {
                r = self.check(now);
            }
        }
    }

    /// Wait up to `limit` for the job to end (`stop` ends the wait early). The
    /// record as it then stands; it still runs when the wait ran out.
    pub fn wait(&self, r: &JobRecord, limit: Duration, stop: &CancelToken) -> JobRecord {
        let deadline = after(limit);
        let mut r = r.clone();
        let mut pause = Duration::from_millis(1);
        let left = || {
            deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            })
        };
        while r.state.running() && !left().is_zero() && stop.reason().is_none() {
            std::thread::sleep(pause.min(left()));
            pause = (pause * 2).min(POLL_MAX);
            if let Some(now) = self.read(r.number) {
                r = self.check(now);
            }
        }
        r
    }

    /// Write `bytes` to a job's terminal or stdin.
    pub fn send(&self, r: &JobRecord, bytes: &[u8]) -> Result<(), JobError> {
        let reply = self.ask(
            r,
            &supervise::Request::Send {
                bytes: bytes.to_vec(),
            },
        )?;
        reply.error.map_or(Ok(()), |e| {
            Err(JobError::NotRunning {
                job: r.id.clone(),
                what: e,
            })
        })
    }

    /// [`Jobs::send`], then what the job printed in the next `window` (at most
    /// [`DEFAULT_READ_BYTES`]; the wait ends early when the job does).
    pub fn send_and_read(
        &self,
        r: &JobRecord,
        bytes: &[u8],
        window: Duration,
        stop: &CancelToken,
    ) -> Result<(JobRecord, log::Chunk), JobError> {
        let from = self.cursor(r);
        self.send(r, bytes)?;
        let r = self.wait(r, window, stop);
        let c = log::read(
            &self.dir(r.number),
            r.log_max_bytes,
            from,
            DEFAULT_READ_BYTES,
        );
        Ok((r, c))
    }

    /// The screen of a PTY job, one string per row.
    pub fn screen(&self, r: &JobRecord) -> Result<Vec<String>, JobError> {
        let reply = self.ask(r, &supervise::Request::Screen)?;
        if let Some(e) = reply.error {
            return Err(JobError::NotRunning {
                job: r.id.clone(),
                what: e,
            });
        }
        Ok(reply.rows.unwrap_or_default())
    }

    /// Stop a job: its whole tree (TERM, `timeout.kill_grace_ms`, KILL). Answers
    /// once the supervisor is gone, with the record it left.
    pub fn stop(&self, r: &JobRecord, reason: &str) -> Result<JobRecord, JobError> {
        if !r.state.running() {
            return Ok(r.clone());
        }
        let asked = self.ask(
            r,
            &supervise::Request::Stop {
                reason: reason.into(),
            },
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while r.supervisor.is_some_and(|s| s.alive()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let after = self.read(r.number).map(|n| self.check(n));
        match (after, asked) {
            (Some(a), _) => Ok(a),
            (None, Err(e)) => Err(e),
            (None, Ok(_)) => Err(JobError::NotFound(r.id.clone())),
        }
    }

    /// Remove a job that is over: its record and its log.
    pub fn remove(&self, r: &JobRecord) -> Result<(), JobError> {
        if r.state.running() {
            return Err(JobError::StillRunning(r.id.clone()));
        }
        let _lock = self.lock()?;
        std::fs::remove_dir_all(self.dir(r.number))?;
        Ok(())
    }

    /// `job gc`: end what is left of lost jobs' processes, and remove the records
    /// and logs of the jobs that ended more than `keep` ago. A running job is never
    /// touched. Returns the lost jobs seen and the jobs removed.
    pub fn gc(&self, keep: Duration) -> (Vec<JobRecord>, Vec<JobRecord>) {
        let all = self.list();
        let lost: Vec<JobRecord> = all
            .iter()
            .filter(|r| r.state == State::Lost)
            .cloned()
            .collect();
        for r in &lost {
            if let Some(marker) = &r.marker {
                crate::process::teardown::kill_orphans(
                    marker,
                    r.leader.map(|l| (l.pid, l.started)),
                );
            }
        }
        let removed = match self.lock() {
            Ok(_lock) => self.expire(keep),
            Err(_) => Vec::new(),
        };
        (lost, removed)
    }

    /// Remove the jobs that ended more than `keep` ago (the caller holds the lock).
    fn expire(&self, keep: Duration) -> Vec<JobRecord> {
        let now = now_ms();
        let keep = keep.as_millis() as u64;
        let mut removed = Vec::new();
        for r in self.numbers().into_iter().filter_map(|n| self.read(n)) {
            let over = !r.state.running() && r.ended_at_ms.is_some_and(|e| now >= e + keep);
            if over && std::fs::remove_dir_all(self.dir(r.number)).is_ok() {
                removed.push(r);
            }
        }
        removed
    }

    fn ask(&self, r: &JobRecord, req: &supervise::Request) -> Result<supervise::Reply, JobError> {
        if !r.state.running() {
            return Err(JobError::NotRunning {
                job: r.id.clone(),
                what: format!("has {}", r.state.word()),
            });
        }
        supervise::ask(&self.dir(r.number), req).map_err(|e| JobError::NotRunning {
            job: r.id.clone(),
            what: format!("does not answer ({e})"),
        })
    }
}

/// `d` from now, or `None` for a wait longer than the clock can count (forever).
fn after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

fn write_record(dir: &Path, r: &JobRecord) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?;
    fsguard::write_private(&dir.join("state.json"), &json)
}

/// The run request a job's command is planned with: the guard, the sandbox and the
/// interceptor as for a run, except the interceptor's rules that route to the `job`
/// tool (starting it as a job is what they ask for).
pub fn run_request(spec: &JobSpec, profile: &crate::LoadedProfile) -> crate::RunRequest {
    let tools = spec
        .tools
        .clone()
        .unwrap_or_else(|| profile.profile.interceptor.tools.clone())
        .into_iter()
        .filter(|t| t != "job")
        .collect();
    crate::RunRequest {
        command: spec.command.clone(),
        invoking_dir: spec.invoking_dir.clone(),
        cwd: spec.cwd.clone(),
        mode: if spec.pty {
            crate::request::ModeChoice::Pty
        } else {
            crate::request::ModeChoice::Print
        },
        tools: Some(tools),
        no_intercept: spec.no_intercept,
        env: spec.env.clone(),
        stdin: spec.stdin,
        sandbox: spec.sandbox,
        ..Default::default()
    }
}

/// Key names `job send --keys` takes, as bytes: `Enter`, `Tab`, `Esc`, `Space`,
/// `Backspace`, `Up`/`Down`/`Left`/`Right`, `C-<letter>`; anything else is sent as
/// its text.
pub fn key_bytes(key: &str) -> Result<Vec<u8>, String> {
    let b: &[u8] = match key {
        "Enter" | "Return" => b"\r",
        "Tab" => b"\t",
        "Esc" | "Escape" => b"\x1b",
        "Space" => b" ",
        "Backspace" | "BSpace" => b"\x7f",
        "Up" => b"\x1b[A",
        "Down" => b"\x1b[B",
        "Right" => b"\x1b[C",
        "Left" => b"\x1b[D",
        k => {
            if let Some(c) = k.strip_prefix("C-").or_else(|| k.strip_prefix("^"))
                && c.len() == 1
            {
                let c = c.as_bytes()[0].to_ascii_lowercase();
                if c.is_ascii_lowercase() {
                    return Ok(vec![c - b'a' + 1]);
                }
                return match c {
                    b'[' => Ok(vec![0x1b]),
                    b'\\' => Ok(vec![0x1c]),
                    b']' => Ok(vec![0x1d]),
                    _ => Err(format!("--keys {k}: C- takes a letter, [, \\ or ]")),
                };
            }
            return Err(format!(
                "--keys {k}: not a key name (Enter, Tab, Esc, Space, Backspace, Up, Down, Left, Right, C-<letter>); use --text for text"
            ));
        }
    };
    Ok(b.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_become_bytes() {
        assert_eq!(key_bytes("Enter").unwrap(), b"\r");
        assert_eq!(key_bytes("C-c").unwrap(), b"\x03");
        assert_eq!(key_bytes("C-D").unwrap(), b"\x04");
        assert!(key_bytes("Hyper").is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(valid_name("web"));
        assert!(valid_name("web-2.dev"));
        assert!(!valid_name("12"));
        assert!(!valid_name("a b"));
        assert!(!valid_name(""));
    }
}
