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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Starting,
    Ready,
    Exited,
    Killed,
    Lost,
}

impl State {
    pub fn running(self) -> bool {
        matches!(self, State::Starting | State::Ready)
    }

    pub fn word(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Exited => "exited",
            State::Killed => "killed",
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
        crate::process::spawn::start_time(pid).map(|started| ProcId { pid, started })
    }

    pub fn alive(&self) -> bool {
        let zombie = std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .ok()
            .and_then(|s| {
                s.rfind(')')
                    .map(|i| s[i + 2..].starts_with('Z') || s[i + 2..].starts_with('X'))
            })
            .unwrap_or(true);
        !zombie && crate::process::spawn::start_time(self.pid) == Some(self.started)
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
    /// Why it ended when agentbash ended it: "stopped", "ttl", "gc", "server exit",
    /// "supervisor gone"; or why it never started.
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
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("no job {0}; `agentbash job list` shows the jobs")]
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
    #[error("{} {what}", .job)]
    NotRunning { job: String, what: String },
    #[error("jobs directory: {0}")]
    Io(#[from] std::io::Error),
}

impl JobError {
    /// The exit code the CLI ends with.
    pub fn exit_code(&self) -> i32 {
        match self {
            JobError::Refused(r) => r.exit,
            JobError::BadName(_) | JobError::BadReady(..) => crate::exit::USAGE,
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
    if r.state == State::Starting && r.ready == Some(false) {
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
    /// The last output, when the job already ended.
    pub output: String,
    /// For a `stop_with_caller` job: the only writer of the supervisor's stdin.
    /// Dropping it (or the caller dying) stops the job.
    pub owner: Option<std::os::fd::OwnedFd>,
}

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
            crate::process::spawn::kill_orphans(marker, r.leader.map(|l| (l.pid, l.started)));
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

    /// Start `spec` under `profile` and wait (at most `ready_timeout`) until it is
    /// ready or has ended. The guard's refusal comes back at once, nothing started.
    pub fn start(
        &self,
        spec: &JobSpec,
        profile: &crate::LoadedProfile,
        ready_timeout: Duration,
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
        let req = run_request(spec);
        let plan = crate::pipeline::plan_run(&req, profile);
        crate::pipeline::job_refusal(&plan).map_err(JobError::Refused)?;
        let jobs = &profile.profile.jobs;
        let (number, dir) = {
            let _lock = self.lock()?;
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
            let record = JobRecord {
                id: format!("job://{number}"),
                number,
                name: spec.name.clone(),
                command: spec.command.clone(),
                state: State::Starting,
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
                cwd: spec.invoking_dir.display().to_string(),
                log_max_bytes: jobs.log_max_bytes,
                supervisor: None,
                leader: None,
                marker: None,
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
        let deadline = Instant::now() + ready_timeout;
        let mut pause = Duration::from_micros(500);
        loop {
            let r = self.read(number);
            if let Some(r) = &r
                && (r.state != State::Starting || (r.ready.is_none() && r.pid.is_some()))
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
            if Instant::now() >= deadline {
                let mut r = r.ok_or_else(|| JobError::NotFound(format!("job://{number}")))?;
                r.ready = Some(false);
                return Ok(self.started(r, owner));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    fn started(&self, record: JobRecord, owner: Option<std::os::fd::OwnedFd>) -> Started {
        let output = if record.state.running() {
            String::new()
        } else {
            self.tail_text(&record, 20)
        };
        let owner = owner.filter(|_| record.state.running());
        Started {
            record,
            output,
            owner,
        }
    }

    /// The last `lines` lines of a job's output, as text.
    pub fn tail_text(&self, r: &JobRecord, lines: usize) -> String {
        let c = log::tail(
            &self.dir(r.number),
            r.log_max_bytes,
            lines,
            DEFAULT_READ_BYTES,
        );
        crate::output::sanitize::sanitize(&c.bytes)
    }

    /// Output from `cursor` (`None`: from the start of what is kept), waiting up to
    /// `wait` for some when there is none yet and the job runs.
    pub fn output(
        &self,
        r: &JobRecord,
        cursor: Option<u64>,
        wait: Duration,
        max: usize,
    ) -> (JobRecord, log::Chunk) {
        let dir = self.dir(r.number);
        let deadline = Instant::now() + wait;
        let mut r = r.clone();
        loop {
            let c = log::read(&dir, r.log_max_bytes, cursor.unwrap_or(0), max);
            if !c.bytes.is_empty() || !r.state.running() || Instant::now() >= deadline {
                return (r, c);
            }
            std::thread::sleep(Duration::from_millis(5));
            if let Some(now) = self.read(r.number) {
                r = self.check(now);
            }
        }
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

    /// Stop every running job (or those `only` names) and remove the directories of
    /// the jobs that are over. Returns what was stopped and what was removed.
    pub fn gc(&self) -> (Vec<JobRecord>, Vec<JobRecord>) {
        let mut stopped = Vec::new();
        let mut removed = Vec::new();
        for r in self.list() {
            if r.state.running() {
                if let Ok(s) = self.stop(&r, "gc") {
                    stopped.push(s);
                }
                continue;
            }
            if std::fs::remove_dir_all(self.dir(r.number)).is_ok() {
                removed.push(r);
            }
        }
        (stopped, removed)
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

fn write_record(dir: &Path, r: &JobRecord) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?;
    fsguard::write_private(&dir.join("state.json"), &json)
}

/// The run request a job's command is planned with: no interception (starting it
/// as a job is what the background rules ask for), the guard and sandbox as a run.
pub fn run_request(spec: &JobSpec) -> crate::RunRequest {
    crate::RunRequest {
        command: spec.command.clone(),
        invoking_dir: spec.invoking_dir.clone(),
        cwd: spec.cwd.clone(),
        mode: if spec.pty {
            crate::request::ModeChoice::Pty
        } else {
            crate::request::ModeChoice::Print
        },
        tools: None,
        no_intercept: true,
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
