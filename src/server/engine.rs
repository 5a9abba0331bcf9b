//! The real engine behind rpc and mcp: one loaded profile, the run pipeline, and
//! artifact reading.

use super::CallError;
use super::backend::{Backend, BashCall, BashOutcome};
use crate::config::profile::LoadedProfile;
use crate::executor::End;
use crate::executor::live::ShellPool;
use crate::output::artifact::{self, ArtifactStore};
use crate::pipeline::{Event, JobRun, execute_with};
use crate::process::CancelToken;
use crate::result::RunResult;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Lines `read_artifact` returns when the caller gives no limit.
pub const DEFAULT_ARTIFACT_LINES: usize = 2000;

pub struct Engine {
    pub profile: LoadedProfile,
    pub invoking_dir: PathBuf,
    /// Live shells kept per key and reused across requests (see `executor::live`).
    pub pool: ShellPool,
    /// The profile as the server was told it (a job's supervisor loads it again).
    pub profile_spec: String,
    /// Jobs this server started, not detached, each with the only writer of its
    /// supervisor's stdin: stopped when the server exits, and by their supervisors
    /// when it dies without a word (the pipe closes with the process).
    owned_jobs: std::sync::Mutex<Vec<(u64, std::os::fd::OwnedFd)>>,
    /// The file tools, under the profile (rpc always serves them).
    pub toolbox: crate::toolbox::Toolbox,
    /// Whether `agentbash mcp` declares the file tools (`--toolbox`, `mcp.toolbox`).
    pub mcp_toolbox: bool,
    /// Set when the server stops taking requests: job requests that wait (`job_wait`,
    /// `job_output` with `wait`, `job_send`'s window) end their wait.
    closing: CancelToken,
}

impl Engine {
    pub fn new(profile: LoadedProfile, invoking_dir: PathBuf) -> Self {
        crate::process::teardown::set_shared_process();
        let toolbox = crate::toolbox::Toolbox::new(&profile.profile, &invoking_dir);
        Engine {
            toolbox,
            mcp_toolbox: false,
            profile,
            invoking_dir,
            pool: ShellPool::new(),
            profile_spec: "default".into(),
            owned_jobs: Default::default(),
            closing: CancelToken::new(),
        }
    }

    /// The server is closing: end the waits of job requests now.
    pub fn close(&self) {
        self.closing.cancel(libc::SIGTERM);
    }

    /// Answer a job request (see [`Backend::job`]).
    pub fn job_call(
        &self,
        kind: &str,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, CallError> {
        use crate::jobs::calls;
        fn parse<T: serde::de::DeserializeOwned>(
            kind: &str,
            v: serde_json::Value,
        ) -> Result<T, CallError> {
            serde_json::from_value(v)
                .map_err(|e| CallError::invalid(format!("invalid {kind} request: {e}")))
        }
        let jobs = crate::jobs::Jobs::open().map_err(|e| CallError::failed(e.to_string()))?;
        let answer = match kind {
            "job_start" => {
                let a: calls::StartArgs = parse(kind, args)?;
                let (r, v, owner) = calls::start(
                    &jobs,
                    &self.profile,
                    &self.profile_spec,
                    &self.invoking_dir,
                    a,
                )?;
                if let Some(owner) = owner {
                    self.owned_jobs
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((r.number, owner));
                }
                Ok(v)
            }
            "job_status" => calls::status(&jobs, parse(kind, args)?),
            "job_wait" => {
                let max = Duration::from_secs(self.profile.profile.timeout.max);
                calls::wait(&jobs, parse(kind, args)?, max, &self.closing).map(|(_, v)| v)
            }
            "job_output" => calls::output(&jobs, parse(kind, args)?, &self.closing),
            "job_send" => calls::send(&jobs, parse(kind, args)?, &self.closing),
            "job_stop" => calls::stop(&jobs, parse(kind, args)?),
            "job_list" => Ok(calls::list(&jobs, parse(kind, args)?)),
            other => return Err(CallError::invalid(format!("unknown job request {other:?}"))),
        };
        answer.map_err(CallError::from)
    }

    /// Stop the jobs this server started without `detached` (it is exiting).
    pub fn stop_owned_jobs(&self) {
        let owned = std::mem::take(&mut *self.owned_jobs.lock().unwrap_or_else(|p| p.into_inner()));
        let Ok(jobs) = crate::jobs::Jobs::open() else {
            return;
        };
        for (n, _owner) in owned {
            if let Some(r) = jobs.read(n) {
                let _ = jobs.stop(&r, "server exit");
            }
        }
    }

    /// Run a validated call; `on_output` gets live text.
    pub fn run(
        &self,
        call: &BashCall,
        cancel: &CancelToken,
        on_output: &mut dyn FnMut(&str),
    ) -> Result<RunResult, CallError> {
        self.run_events(call, cancel, &mut |e| {
            if let Event::Output(t) = e {
                on_output(t);
            }
        })
    }

    /// [`Engine::run`], handing over every event of the run (start, notices, output).
    pub fn run_events(
        &self,
        call: &BashCall,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunResult, CallError> {
        let mut req =
            super::build_request(call, &self.invoking_dir, &self.profile.profile.sandbox)?;
        if !call.server_tools.is_empty() {
            // The MCP server: its own tools plus the call's, never the profile's list
            // (see `BashCall::server_tools`).
            let mut tools = req.tools.take().unwrap_or_default();
            tools.extend(call.server_tools.iter().cloned());
            req.tools = Some(tools);
        }
        let after = Duration::from_secs(self.profile.profile.jobs.background_after);
        if !after.is_zero()
            && let Some(job_run) = JobRun::eligible(&req, &self.profile, after)
            && let Some(r) = self.run_as_job(&req, job_run, after, cancel, &mut |t| {
                on_event(Event::Output(t))
            })
        {
            return Ok(r);
        }
        Ok(execute_with(
            &req,
            &self.profile,
            cancel,
            Some(&self.pool),
            on_event,
        ))
    }

    /// `jobs.background_after`: carry `req` out as a job (started as `job_start`
    /// starts one, so the guard, the interceptor and the sandbox apply), wait up to
    /// `after` for it to end, and answer as the run would; a job still running then
    /// is handed off, the answer carrying its id and the output so far. A job that
    /// ended within the wait leaves nothing behind (its record and log are removed).
    /// `None` when no job could be started (too many running, say): the caller runs
    /// it in the foreground.
    fn run_as_job(
        &self,
        req: &crate::RunRequest,
        mut job_run: JobRun,
        after: Duration,
        cancel: &CancelToken,
        on_output: &mut dyn FnMut(&str),
    ) -> Option<RunResult> {
        use crate::jobs::{Jobs, StartWait, log};
        let jobs = Jobs::open().ok()?;
        let spec = self.job_spec(req, after);
        let wait = StartWait {
            ready_timeout: crate::jobs::DEFAULT_READY_TIMEOUT,
            settle: Duration::ZERO,
        };
        let started = jobs.start(&spec, &self.profile, wait).ok()?;
        // Refused or failed inside its supervisor: the run says why, as a run.
        if started.record.pid.is_none() {
            let _ = jobs.remove(&started.record);
            return None;
        }
        let (mut record, owner) = (started.record, started.owner);
        let dir = jobs.dir(record.number);
        let deadline = Instant::now() + after;
        let mut cursor = 0;
        let mut stopped = None;
        let mut terminal_wait = crate::executor::terminal_wait::TerminalWait::new();
        let mut last_output = Instant::now();
        loop {
            let c = log::read(
                &dir,
                record.log_max_bytes,
                cursor,
                crate::jobs::DEFAULT_READ_BYTES,
            );
            if !c.bytes.is_empty() {
                job_run.push(&c.bytes, on_output);
                cursor = c.next;
                last_output = Instant::now();
                continue;
            }
            if !record.state.running() {
                break;
            }
            // A program that waits for a terminal nobody will give it (vim in print
            // mode) is stopped with the fix, as a run is.
            if stopped.is_none()
                && let Some(pid) = record.pid
            {
                let marker = record.marker.clone().unwrap_or_default();
                let members = || crate::process::teardown::Teardown::new(pid, &marker).members();
                if let Some(end) = terminal_wait
                    .check(Instant::now(), last_output, members)
                    .map(End::NeedsTerminal)
                {
                    stopped = Some(end);
                    if let Ok(r) = jobs.stop(&record, "stopped") {
                        record = r;
                    }
                    continue;
                }
            }
            if stopped.is_none()
                && let Some(sig) = cancel.reason()
            {
                stopped = Some(End::Cancelled(sig));
                if let Ok(r) = jobs.stop(&record, "stopped") {
                    record = r;
                }
                continue;
            }
            if Instant::now() >= deadline {
                if let Some(owner) = owner {
                    self.owned_jobs
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((record.number, owner));
                }
                let job = crate::result::ContinuedAs {
                    id: record.number,
                    url: record.id.clone(),
                    name: record.name.clone(),
                    pid: record.pid,
                    state: record.state.word().to_string(),
                    ready: record.ready,
                    cursor,
                };
                let tmpdir = job_tmpdir(&record);
                return Some(job_run.handed_off(after, job, tmpdir));
            }
            std::thread::sleep(Duration::from_millis(10));
            if let Ok(r) = jobs.find(&record.id) {
                record = r;
            }
        }
        let end = job_end(stopped, &record);
        let tmpdir = job_tmpdir(&record);
        drop(owner);
        // Answered as a run: no job is left to list.
        let _ = jobs.remove(&record);
        Some(job_run.finish(end, tmpdir))
    }

    /// The job a foreground request runs as (see [`Engine::run_as_job`]). Until it is
    /// handed off it is a foreground run: `jobs.idle_timeout` ends it (its supervisor
    /// watches the output and the CPU), cancellation too.
    fn job_spec(&self, req: &crate::RunRequest, after: Duration) -> crate::jobs::JobSpec {
        use crate::jobs::{IdleWhile, JobSpec, now_ms};
        let idle = crate::pipeline::idle_limit(req, &self.profile.profile).map(|d| IdleWhile {
            secs: d.as_secs(),
            until_ms: now_ms() + after.as_millis() as u64,
        });
        JobSpec {
            command: req.command.clone(),
            name: None,
            invoking_dir: req.invoking_dir.clone(),
            cwd: req.cwd.clone(),
            profile: self.profile_spec.clone(),
            env: req.env.clone(),
            sandbox: req.sandbox,
            tools: req.tools.clone(),
            no_intercept: req.no_intercept,
            ready: Default::default(),
            pty: false,
            stdin: false,
            ttl: None,
            stop_with_caller: true,
            idle,
        }
    }

    /// The answer to a call cancelled while it waited for one of the `max_concurrent`
    /// run slots: shaped like a cancelled run, but nothing was started.
    pub fn not_started(
        &self,
        call: &BashCall,
        max_concurrent: usize,
    ) -> Result<RunResult, CallError> {
        let req = super::build_request(call, &self.invoking_dir, &self.profile.profile.sandbox)?;
        Ok(crate::pipeline::not_started(
            &req,
            &self.profile,
            libc::SIGINT,
            format!(
                "[Cancelled while queued behind {} (server.max_concurrent = {max_concurrent}); the command did not start]",
                crate::output::notice::count(max_concurrent as u64, "busy run")
            ),
        ))
    }

    pub fn store(&self) -> ArtifactStore {
        ArtifactStore::for_profile(&self.profile.profile.artifacts, &self.invoking_dir)
    }

    /// Lines `offset..offset+limit` of an artifact, with a footer saying what is left.
    pub fn read_artifact_lines(
        &self,
        id: &str,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<String, CallError> {
        let id = artifact::parse_id(id).map_err(|e| CallError::invalid(e.to_string()))?;
        let store = self.store();
        let path = store.path(id);
        let f = std::fs::File::open(&path).map_err(|_| {
            CallError::not_found(format!(
                "no artifact {} (it may have been removed by gc)",
                artifact::url(id)
            ))
        })?;
        // The MCP server refuses 0; a library caller asking for none gets one.
        let limit = limit.unwrap_or(DEFAULT_ARTIFACT_LINES).max(1);
        let mut out = Vec::new();
        let mut total = 0usize;
        for line in std::io::BufReader::new(f).split(b'\n') {
            let Ok(line) = line else { break };
            if total >= offset && total < offset + limit {
                out.extend_from_slice(&line);
                out.push(b'\n');
            }
            total += 1;
        }
        let mut text = crate::output::sanitize::sanitize(&out);
        let end = (offset + limit).min(total);
        if offset >= total {
            text = format!(
                "[artifact://{id} has {}; offset {offset} is past the end]",
                crate::output::notice::count(total as u64, "line")
            );
        } else if end < total {
            text.push_str(&format!(
                "\n[Lines {}-{end} of {total}. Next: offset={end}]",
                offset + 1
            ));
        }
        Ok(text)
    }

    /// How this server runs commands, for the `bash` tool's description: one
    /// sentence per fact, each said once.
    pub fn description(&self) -> String {
        let p = &self.profile.profile;
        let path = std::env::var("PATH").ok();
        let shell = match crate::shell::resolve::resolve(&p.shell, path.as_deref()) {
            Ok(s) => s.file_name().map_or_else(
                || s.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            Err(_) => p.shell.path.clone(),
        };
        let mut d = format!(
            "Commands run in {shell} (profile `{}`), non-interactively: stdin is empty and pagers and prompts are off.\n",
            self.profile.name
        );
        d.push_str(&format!(
            "Timeout: {}s by default, at most {}s; on timeout the whole process tree is killed.\n",
            p.timeout.default, p.timeout.max
        ));
        let size = crate::output::notice::format_size;
        let kept = if p.output.head_bytes > 0 {
            format!(
                "the first {} and the last {} are",
                size(p.output.head_bytes as u64),
                size((p.output.max_bytes - p.output.head_bytes) as u64)
            )
        } else {
            format!("the last {} is", size(p.output.max_bytes as u64))
        };
        d.push_str(&format!(
            "Output: {kept} kept.{}\n",
            if p.output.strip_head_tail {
                " A trailing `2>&1 | tail -n N` (or `|& head -n N`: the pipe must receive all of the output) becomes a line limit, the rest saved."
            } else {
                ""
            }
        ));
        if p.artifacts.enabled {
            d.push_str("When output is cut, the text ends with a notice naming artifact://N: read the full output with `read_artifact` instead of running the command again.");
        } else {
            d.push_str(
                "When output is cut, the rest is not saved (artifacts are off in this profile).",
            );
        }
        if p.jobs.background_after > 0 {
            d.push_str(&format!(
                "\nA command still running after {}s goes on as a background job: the answer gives its job://N and the output so far; read the rest with `job_output`, stop it with `job_stop`.",
                p.jobs.background_after
            ));
        }
        if p.jobs.idle_timeout > 0 {
            d.push_str(&format!(
                "\nA command called without `timeout` that neither prints nor uses CPU for {n}s is stopped (exit 124, `[No output for {n} seconds; stopped]`): an editor or a prompt waiting for input. Give quiet work that waits (a sleep, a slow download) a `timeout`; then only the timeout applies.",
                n = p.jobs.idle_timeout
            ));
        }
        if p.interceptor.enabled && self.mcp_toolbox {
            d.push_str(&format!(
                "\nCommands that should use one of this server's file tools ({}) instead are blocked with a message naming the tool; so are those for a tool you declare in `tools`.",
                crate::toolbox::TOOLS.join(", ")
            ));
        }
        d
    }
}

impl Backend for Engine {
    fn check(&self, call: &BashCall) -> Result<(), String> {
        super::build_request(call, &self.invoking_dir, &self.profile.profile.sandbox)
            .map(drop)
            .map_err(String::from)
    }

    fn bash(
        &self,
        call: BashCall,
        on_progress: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<BashOutcome, String> {
        outcome(self.run(&call, cancel, on_progress)?)
    }

    fn max_concurrent(&self) -> usize {
        self.profile.profile.server.max_concurrent
    }

    fn not_started(&self, call: BashCall) -> Result<BashOutcome, String> {
        outcome(Engine::not_started(self, &call, self.max_concurrent())?)
    }

    fn read_artifact(
        &self,
        id: &str,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<String, String> {
        self.read_artifact_lines(id, offset, limit)
            .map_err(String::from)
    }

    fn job(&self, kind: &str, args: serde_json::Value) -> Result<serde_json::Value, String> {
        self.job_call(kind, args).map_err(String::from)
    }

    fn describe(&self) -> String {
        self.description()
    }

    fn toolbox(&self) -> bool {
        self.mcp_toolbox
    }

    fn describe_toolbox(&self) -> (String, String) {
        (
            self.toolbox.describe_reads(),
            self.toolbox.describe_writes(),
        )
    }

    fn file_tool(
        &self,
        name: &str,
        args: serde_json::Value,
    ) -> Result<crate::toolbox::Answer, String> {
        self.toolbox.call(name, args).map_err(|e| e.to_string())
    }
    fn close(&self) {
        Engine::close(self);
    }

    fn approval(&self, call: &BashCall) -> Option<crate::request::Question> {
        let req =
            super::build_request(call, &self.invoking_dir, &self.profile.profile.sandbox).ok()?;
        let plan = crate::pipeline::plan_run(&req, &self.profile);
        (plan.approval.decision == crate::config::approval::Decision::Ask).then(|| {
            plan.approval
                .question(&plan.shown_command, req.session.as_deref(), &plan.secrets)
        })
    }
}

/// How a foreground run carried out as a job ended: stopped by this server, ended
/// idle, or the job's own exit status.
fn job_end(stopped: Option<End>, record: &crate::jobs::JobRecord) -> End {
    match (
        stopped,
        record.idle_secs(),
        record.exit_code,
        &record.signal,
    ) {
        (Some(end), ..) => end,
        (None, Some(secs), ..) => End::Idle(secs),
        (None, None, Some(code), _) => End::Exited(code),
        (None, None, None, Some(name)) => {
            crate::jobs::signal_number(name).map_or(End::MissingStatus, End::Signaled)
        }
        (None, None, None, None) => End::MissingStatus,
    }
}

/// The private TMPDIR a job's supervisor made for its sandbox.
fn job_tmpdir(r: &crate::jobs::JobRecord) -> Option<PathBuf> {
    r.sandbox.as_ref()?["tmpdir"].as_str().map(PathBuf::from)
}

/// A result as the MCP server answers it: agentbash's own failure is an error
/// message, anything else the text and the whole result.
fn outcome(r: RunResult) -> Result<BashOutcome, String> {
    if let Some(e) = &r.error {
        return Err(e.clone());
    }
    // A run handed off to a job has no exit code yet, and is no failure.
    let is_error =
        r.job.is_none() && (r.exit_code != Some(0) || r.timed_out || r.blocked.is_some());
    Ok(BashOutcome {
        text: r.text.clone(),
        result: serde_json::to_value(&r).map_err(|e| e.to_string())?,
        is_error,
    })
}
