//! The job operations as callers ask for them — `agentbash job …`, rpc `job_start`
//! …, mcp `bash` with `background` and the `job_*` tools: typed arguments (parsed
//! from JSON by the servers), each answered with one JSON object. The CLI's `--json`
//! prints that object; rpc's `data` and mcp's `structuredContent` are the same object
//! with a `text` for a model to read.

use super::{JobError, JobRecord, JobSpec, JobText, Jobs, Readiness, StartWait, log};
use crate::process::CancelToken;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Duration;

/// A job as a caller names it: `job://3`, `3`, or its name.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum JobRef {
    Number(u64),
    Text(String),
}

impl JobRef {
    pub fn text(&self) -> String {
        match self {
            JobRef::Number(n) => n.to_string(),
            JobRef::Text(t) => t.trim().to_string(),
        }
    }
}

impl From<String> for JobRef {
    fn from(s: String) -> Self {
        JobRef::Text(s)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    pub command: String,
    pub name: Option<String>,
    pub ready_port: Option<u16>,
    pub ready: Option<String>,
    pub ready_timeout: Option<f64>,
    #[serde(default)]
    pub pty: bool,
    #[serde(default)]
    pub stdin: bool,
    pub ttl: Option<u64>,
    pub cwd: Option<String>,
    pub env: Option<BTreeMap<String, String>>,
    /// The tools the caller has, for the interceptor (its rules that route to `job`
    /// do not apply to a job).
    pub tools: Option<Vec<String>>,
    /// A sandbox mode of the caller's; refused unless the profile allows overrides.
    pub sandbox: Option<String>,
    /// Keep running after the server that started it exits.
    #[serde(default)]
    pub detached: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobArgs {
    pub job: JobRef,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    pub job: JobRef,
    /// Seconds to wait (default [`DEFAULT_WAIT_SECS`]).
    pub timeout: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputArgs {
    pub job: JobRef,
    pub cursor: Option<u64>,
    pub wait: Option<f64>,
    pub tail: Option<usize>,
    #[serde(default)]
    pub screen: bool,
    pub max_bytes: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    pub job: JobRef,
    pub text: Option<String>,
    #[serde(default)]
    pub keys: Vec<String>,
    /// Milliseconds of output to collect after sending (default 500).
    pub wait_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Finished jobs too.
    #[serde(default)]
    pub all: bool,
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// The longest a server request may wait for output (a model can poll again).
const MAX_WAIT_SECS: f64 = 60.0;
/// How long `job_wait` waits when the caller does not say.
pub const DEFAULT_WAIT_SECS: f64 = 60.0;
/// How long `job send` collects output when the caller does not say.
pub const DEFAULT_SEND_WAIT_MS: u64 = 500;
/// The longest `job send` collects output.
const MAX_SEND_WAIT_MS: u64 = 60_000;
/// Lines of output the answers of `stop` and `wait` carry.
const ENDING_LINES: usize = 20;

/// The text of a chunk, with the dropped-bytes marker before it.
fn shown(c: &log::Chunk) -> (JobText, String) {
    let t = JobText::of(&c.bytes);
    let mut text = t.text.clone();
    if c.skipped > 0 {
        text.insert_str(0, &format!("{}\n", log::marker(c.skipped)));
    }
    (t, text)
}

/// Lines of notices after a text, each on its own line.
fn with_notices(mut text: String, notices: &[String]) -> String {
    for n in notices {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(n);
        text.push('\n');
    }
    text
}

/// Start a job: the answer's `job` is the record, `output` what it printed so far.
/// `Ok` with the record also when the job exited at once. A job not `detached` comes
/// back with its owner pipe: it stops when that closes (when the server holding it
/// exits or is killed). `wait` is how long to wait (see [`StartWait`]).
pub fn start(
    jobs: &Jobs,
    profile: &crate::LoadedProfile,
    profile_spec: &str,
    invoking_dir: &Path,
    a: StartArgs,
) -> Result<(JobRecord, Value, Option<OwnedFd>), JobError> {
    let sandbox =
        crate::pipeline::sandbox::peer_override(&profile.profile.sandbox, a.sandbox.as_deref())
            .map_err(JobError::BadRequest)?;
    let spec = JobSpec {
        command: a.command,
        name: a.name,
        invoking_dir: invoking_dir.to_path_buf(),
        cwd: a.cwd.map(Into::into),
        profile: profile_spec.to_string(),
        env: a.env.unwrap_or_default().into_iter().collect(),
        sandbox,
        tools: a.tools,
        no_intercept: false,
        ready: Readiness {
            port: a.ready_port,
            regex: a.ready,
        },
        pty: a.pty,
        stdin: a.stdin,
        ttl: a.ttl,
        stop_with_caller: !a.detached,
        idle: None,
    };
    let wait = StartWait {
        ready_timeout: a
            .ready_timeout
            .map_or(super::DEFAULT_READY_TIMEOUT, |s| secs(s.min(MAX_WAIT_SECS))),
        settle: Duration::from_millis(profile.profile.jobs.start_wait_ms),
    };
    let (record, value, owner) = start_spec(jobs, &spec, profile, wait)?;
    Ok((record, value, owner))
}

/// [`start`] for a spec the caller built (the CLI's).
pub fn start_spec(
    jobs: &Jobs,
    spec: &JobSpec,
    profile: &crate::LoadedProfile,
    wait: StartWait,
) -> Result<(JobRecord, Value, Option<OwnedFd>), JobError> {
    let started = jobs.start(spec, profile, wait)?;
    let r = started.record;
    let (out, shown_text) = shown(&started.output);
    let mut text = super::one_line(&r) + "\n";
    text.push_str(&shown_text);
    let mut text = with_notices(text, &r.notices);
    if r.state.running() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[Read its output with job_output {{\"job\": \"{}\", \"cursor\": {}}}; stop it with job_stop]\n",
            r.id, started.output.end
        ));
    }
    let v = json!({
        "job": record_json(jobs, &r),
        "output": out.exact,
        "skipped_bytes": started.output.skipped,
        "sandbox": r.sandbox,
        "notices": r.notices,
        "text": text,
    });
    Ok((r, v, started.owner))
}

/// `job status`: the record, with the sandbox it runs in and what the supervisor
/// noticed.
pub fn status(jobs: &Jobs, a: JobArgs) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    let mut v = record_json(jobs, &r);
    let mut text = super::one_line(&r) + "\n";
    if let Some(reason) = &r.reason {
        text.push_str(&format!(
            "reason: {}\n",
            crate::display::escape_controls(reason)
        ));
    }
    text = with_notices(text, &r.notices);
    v["sandbox"] = r.sandbox.clone().unwrap_or(Value::Null);
    v["notices"] = json!(r.notices);
    v["text"] = json!(text);
    Ok(v)
}

/// `job wait`: until the job ends or `timeout` (at most `max`) runs out. The answer
/// carries the record, its last lines and `timed_out`.
pub fn wait(
    jobs: &Jobs,
    a: WaitArgs,
    max: Duration,
    stop: &CancelToken,
) -> Result<(JobRecord, Value), JobError> {
    let r = jobs.find(&a.job.text())?;
    let limit = secs(a.timeout.unwrap_or(DEFAULT_WAIT_SECS)).min(max);
    let r = jobs.wait(&r, limit, stop);
    let timed_out = r.state.running();
    let tail = jobs.tail(&r, ENDING_LINES);
    let (out, shown_text) = shown(&tail);
    let mut text = format!("{}\n{shown_text}", super::one_line(&r));
    if timed_out {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[Still running after waiting {} s]\n",
            limit.as_secs_f64()
        ));
    }
    let text = with_notices(text, &r.notices);
    let v = json!({
        "job": record_json(jobs, &r),
        "timed_out": timed_out,
        "output": out.exact,
        "notices": r.notices,
        "text": text,
    });
    Ok((r, v))
}

/// `job output`: from a cursor (exact reads), the last lines, or the screen.
pub fn output(jobs: &Jobs, a: OutputArgs, stop: &CancelToken) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    if a.screen {
        let rows = jobs.screen(&r)?;
        let text = rows.join("\n");
        return Ok(json!({ "job": record_json(jobs, &r), "screen": rows, "text": text }));
    }
    if let Some(n) = a.tail {
        let c = jobs.tail(&r, n);
        let (out, text) = shown(&c);
        return Ok(json!({
            "job": record_json(jobs, &r),
            "output": out.exact,
            "cursor": c.end,
            "skipped_bytes": c.skipped,
            "text": text,
        }));
    }
    let wait = secs(a.wait.unwrap_or(0.0).min(MAX_WAIT_SECS));
    let max = a.max_bytes.unwrap_or(super::DEFAULT_READ_BYTES).max(1);
    let (r, c) = jobs.output(&r, a.cursor, wait, max, stop);
    let (out, mut text) = shown(&c);
    let more = c.next < c.end;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "[{}; next cursor {}{}]",
        r.state.word(),
        c.next,
        if more { ", more to read" } else { "" }
    ));
    Ok(chunk_json(jobs, &r, &c, out, text))
}

/// The answer of a read: `cursor` and `next` are both where the next read starts
/// (`next` is kept for callers written before `cursor` meant that).
pub fn chunk_json(jobs: &Jobs, r: &JobRecord, c: &log::Chunk, out: JobText, text: String) -> Value {
    json!({
        "job": record_json(jobs, r),
        "output": out.exact,
        "cursor": c.next,
        "next": c.next,
        "state": r.state,
        "exit_code": r.exit_code,
        "skipped_bytes": c.skipped,
        "end": c.end,
        "more": c.next < c.end,
        "text": text,
    })
}

/// The bytes `text` and `keys` stand for.
pub fn input_bytes(
    r: &JobRecord,
    text: Option<String>,
    keys: &[String],
) -> Result<Vec<u8>, JobError> {
    let mut bytes = text.unwrap_or_default().into_bytes();
    for k in keys {
        bytes.extend(super::key_bytes(k).map_err(|e| JobError::NotRunning {
            job: r.id.clone(),
            what: format!("cannot be sent that: {e}"),
        })?);
    }
    Ok(bytes)
}

/// `job send`: type into a job, then answer with what it printed in `wait_ms`.
pub fn send(jobs: &Jobs, a: SendArgs, stop: &CancelToken) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    let bytes = input_bytes(&r, a.text, &a.keys)?;
    let window = Duration::from_millis(
        a.wait_ms
            .unwrap_or(DEFAULT_SEND_WAIT_MS)
            .min(MAX_SEND_WAIT_MS),
    );
    let (r, c) = jobs.send_and_read(&r, &bytes, window, stop)?;
    let (out, shown_text) = shown(&c);
    let mut v = chunk_json(jobs, &r, &c, out, shown_text);
    v["sent"] = json!(bytes.len());
    Ok(v)
}

/// `job stop`: the whole tree, answered with the record and its last lines.
pub fn stop(jobs: &Jobs, a: JobArgs) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    let after = jobs.stop(&r, "stopped")?;
    let tail = jobs.tail(&after, ENDING_LINES);
    let (out, shown_text) = shown(&tail);
    let text = with_notices(
        format!("{}\n{shown_text}", super::one_line(&after)),
        &after.notices,
    );
    Ok(json!({
        "job": record_json(jobs, &after),
        "output": out.exact,
        "notices": after.notices,
        "text": text,
    }))
}

/// `job list`: the running jobs, or with `all` every job.
pub fn list(jobs: &Jobs, a: ListArgs) -> Value {
    let all = jobs.list();
    let finished = all.iter().filter(|r| !r.state.running()).count();
    let shown: Vec<&JobRecord> = all.iter().filter(|r| a.all || r.state.running()).collect();
    let mut text: String = shown.iter().map(|r| super::one_line(r) + "\n").collect();
    if shown.is_empty() {
        text.push_str(if a.all {
            "no jobs\n"
        } else {
            "no running jobs\n"
        });
    }
    if !a.all && finished > 0 {
        text.push_str(&format!(
            "[{} not shown; `all: true` (`job list --all`) lists them]\n",
            crate::output::notice::count(finished as u64, "finished job")
        ));
    }
    json!({ "jobs": shown.iter().map(|r| record_json(jobs, r)).collect::<Vec<_>>(), "text": text })
}

/// `job rm`: remove a job that is over, record and log.
pub fn rm(jobs: &Jobs, a: JobArgs) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    jobs.remove(&r)?;
    let text = format!("removed {}\n", super::one_line(&r));
    Ok(json!({ "job": record_json(jobs, &r), "removed": true, "text": text }))
}

/// `job gc` with the profile's `jobs.keep_exited`.
pub fn gc(jobs: &Jobs, keep: Duration) -> Value {
    let (lost, removed) = jobs.gc(keep);
    let running = jobs.list().iter().filter(|r| r.state.running()).count();
    let text = format!(
        "removed {} (ended more than {} s ago); ended what was left of {}; {} left running\n",
        crate::output::notice::count(removed.len() as u64, "finished job"),
        keep.as_secs(),
        crate::output::notice::count(lost.len() as u64, "lost job"),
        running
    );
    json!({
        "removed": removed.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        "lost": lost.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        "running": running,
        "text": text,
    })
}

/// A record as callers see it (the supervisor's bookkeeping left out): `id` is the
/// number, `url` `job://N`, times are Unix milliseconds, `log_path` the directory of
/// the log's segment files, `cursor` where the next byte the job prints will be.
pub fn record_json(jobs: &Jobs, r: &JobRecord) -> Value {
    json!({
        "id": r.number,
        "url": r.id,
        "name": r.name,
        "pid": r.pid,
        "supervisor_pid": r.supervisor.map(|s| s.pid),
        "state": r.state,
        "ready": r.ready,
        "exit_code": r.exit_code,
        "signal": r.signal,
        "started_at": r.started_at_ms,
        "ended_at": r.ended_at_ms,
        "command": r.command,
        "cwd": r.cwd,
        "log_path": jobs.log_path(r).display().to_string(),
        "cursor": jobs.cursor(r),
        "reason": r.reason,
        "pty": r.pty,
        "stdin": r.stdin,
        "ttl": r.ttl,
    })
}
