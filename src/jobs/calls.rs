//! The job requests as the servers take them (rpc `job_start` …, mcp `bash` with
//! `background` and the `job_*` tools): typed arguments parsed from JSON, answered
//! with the same JSON the CLI's `--json` prints, plus a `text` for a model to read.

use super::{JobError, JobRecord, JobSpec, Jobs, Readiness, State};
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
    fn text(&self) -> String {
        match self {
            JobRef::Number(n) => n.to_string(),
            JobRef::Text(t) => t.trim().to_string(),
        }
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
    /// Keep running after the server that started it exits.
    #[serde(default)]
    pub detached: bool,
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
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopArgs {
    pub job: JobRef,
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// The longest a server request may wait for output (a model can poll again).
const MAX_WAIT_SECS: f64 = 60.0;

/// Start a job; the answer's `job` is the record, `output` the last output when it
/// already ended. `Ok` with the record also when the job exited at once. A job not
/// `detached` comes back with its owner pipe: it stops when that closes (when the
/// server holding it exits or is killed).
pub fn start(
    jobs: &Jobs,
    profile: &crate::LoadedProfile,
    profile_spec: &str,
    invoking_dir: &Path,
    a: StartArgs,
) -> Result<(JobRecord, Value, Option<OwnedFd>), JobError> {
    let spec = JobSpec {
        command: a.command,
        name: a.name,
        invoking_dir: invoking_dir.to_path_buf(),
        cwd: a.cwd.map(Into::into),
        profile: profile_spec.to_string(),
        env: a.env.unwrap_or_default().into_iter().collect(),
        sandbox: None,
        ready: Readiness {
            port: a.ready_port,
            regex: a.ready,
        },
        pty: a.pty,
        stdin: a.stdin,
        ttl: a.ttl,
        stop_with_caller: !a.detached,
    };
    let timeout = a
        .ready_timeout
        .map_or(super::DEFAULT_READY_TIMEOUT, |s| secs(s.min(MAX_WAIT_SECS)));
    let started = jobs.start(&spec, profile, timeout)?;
    let r = started.record;
    let mut text = super::one_line(&r) + "\n";
    text.push_str(&started.output);
    if r.state.running() {
        text.push_str(&format!(
            "Read its output with job_output {{\"job\": \"{}\"}}; stop it with job_stop.\n",
            r.id
        ));
    }
    let v = json!({ "job": record_json(&r), "output": started.output, "text": text });
    Ok((r, v, started.owner))
}

pub fn output(jobs: &Jobs, a: OutputArgs) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    if a.screen {
        let rows = jobs.screen(&r)?;
        let text = rows.join("\n");
        return Ok(json!({ "job": record_json(&r), "screen": rows, "text": text }));
    }
    if let Some(n) = a.tail {
        let text = jobs.tail_text(&r, n);
        return Ok(json!({ "job": record_json(&r), "output": text, "text": text }));
    }
    let wait = secs(a.wait.unwrap_or(0.0).min(MAX_WAIT_SECS));
    let max = a.max_bytes.unwrap_or(super::DEFAULT_READ_BYTES).max(1);
    let (r, c) = jobs.output(&r, a.cursor, wait, max);
    let out = String::from_utf8_lossy(&c.bytes).into_owned();
    let mut text = crate::output::sanitize::sanitize(&c.bytes);
    if c.dropped > 0 {
        text.insert_str(
            0,
            &format!("[{} bytes rotated out of the log before this]\n", c.dropped),
        );
    }
    text.push_str(&format!(
        "\n[{}; next cursor {}{}]",
        r.state.word(),
        c.next,
        if c.next < c.end { ", more to read" } else { "" }
    ));
    Ok(json!({
        "job": record_json(&r),
        "output": out,
        "cursor": a.cursor.unwrap_or(0),
        "next": c.next,
        "dropped": c.dropped,
        "end": c.end,
        "more": c.next < c.end,
        "text": text,
    }))
}

pub fn send(jobs: &Jobs, a: SendArgs) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    let mut bytes = a.text.unwrap_or_default().into_bytes();
    for k in &a.keys {
        bytes.extend(super::key_bytes(k).map_err(|e| JobError::NotRunning {
            job: r.id.clone(),
            what: format!("cannot be sent that: {e}"),
        })?);
    }
    jobs.send(&r, &bytes)?;
    let text = format!("sent {} bytes to {}", bytes.len(), r.id);
    Ok(json!({ "job": record_json(&r), "sent": bytes.len(), "text": text }))
}

pub fn stop(jobs: &Jobs, a: StopArgs) -> Result<Value, JobError> {
    let r = jobs.find(&a.job.text())?;
    let after = jobs.stop(&r, "stopped")?;
    let tail = jobs.tail_text(&after, 20);
    let text = format!("{}\n{tail}", super::one_line(&after));
    Ok(json!({ "job": record_json(&after), "output": tail, "text": text }))
}

pub fn list(jobs: &Jobs) -> Value {
    let all = jobs.list();
    let text: String = if all.is_empty() {
        "no jobs\n".into()
    } else {
        all.iter().map(|r| super::one_line(r) + "\n").collect()
    };
    json!({ "jobs": all.iter().map(record_json).collect::<Vec<_>>(), "text": text })
}

/// A record as callers see it (the supervisor's bookkeeping left out).
pub fn record_json(r: &JobRecord) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "command": r.command,
        "state": r.state,
        "ready": r.ready,
        "pid": r.pid,
        "supervisor_pid": r.supervisor.map(|s| s.pid),
        "exit_code": r.exit_code,
        "signal": r.signal,
        "reason": r.reason,
        "pty": r.pty,
        "stdin": r.stdin,
        "ttl": r.ttl,
        "cwd": r.cwd,
        "started_at_ms": r.started_at_ms,
        "ended_at_ms": r.ended_at_ms,
    })
}

/// Whether a job ended badly enough for a tool call to be flagged as an error.
pub fn failed(r: &JobRecord) -> bool {
    matches!(r.state, State::Lost) || (r.state == State::Exited && r.exit_code != Some(0))
}
