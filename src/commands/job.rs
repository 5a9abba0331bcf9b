//! `agentbash job …`: start, inspect, read, type into, wait for, stop, list and clean
//! up jobs (see `crate::jobs`). Each answer is the JSON object the rpc request of the
//! same name answers with (`--json`, without its `text`), or text: what a job printed
//! on stdout — exact into a pipe, sanitized on a terminal — and what agentbash says
//! about it (cursors, markers for dropped bytes) on stderr.

use crate::cli::{JobCommand, JobStartArgs};
use crate::jobs::{self, JobError, Jobs, calls, log};
use crate::process::CancelToken;
use crate::render::{err, out};
use serde_json::Value;
use std::io::IsTerminal;
use std::time::Duration;

pub fn command(c: JobCommand) -> i32 {
    let json = match &c {
        JobCommand::Start(a) => a.json,
        JobCommand::Status { json, .. }
        | JobCommand::Wait { json, .. }
        | JobCommand::Output { json, .. }
        | JobCommand::Send { json, .. }
        | JobCommand::Stop { json, .. }
        | JobCommand::List { json, .. }
        | JobCommand::Rm { json, .. }
        | JobCommand::Gc { json, .. } => *json,
    };
    match run(c) {
        Ok(Answer {
            code,
            value,
            text,
            lead,
            notes,
        }) => {
            if json {
                let mut value = value;
                if let Some(o) = value.as_object_mut() {
                    o.remove("text");
                }
                out(&format!("{value}\n"));
            } else {
                for n in lead {
                    err(&format!("{n}\n"));
                }
                out(&text);
                for n in notes {
                    err(&format!("{n}\n"));
                }
            }
            code
        }
        Err(e) => {
            if json {
                out(&format!(
                    "{}\n",
                    serde_json::json!({ "error": e.to_string() })
                ));
            } else {
                crate::render::report_error(&e);
            }
            e.exit_code()
        }
    }
}

/// What a job command answers: its exit code, the JSON object, and the text for
/// stdout with what agentbash says on stderr: `lead` before it (a marker for dropped
/// bytes), `notes` after it (cursors, hints).
struct Answer {
    code: i32,
    value: Value,
    text: String,
    lead: Vec<String>,
    notes: Vec<String>,
}

impl Answer {
    fn ok(value: Value, text: String) -> Answer {
        Answer {
            code: 0,
            value,
            text,
            lead: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// `marker` before the text, when the log dropped bytes before it.
    fn skipped(mut self, skipped: u64) -> Answer {
        if skipped > 0 {
            self.lead.push(log::marker(skipped));
        }
        self
    }

    fn note(mut self, n: String) -> Answer {
        self.notes.push(n);
        self
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// The job's bytes for stdout: exact into a pipe (cursor reads join up), sanitized on
/// a terminal (never the job's escape sequences).
fn for_stdout(bytes: &[u8]) -> String {
    let t = jobs::JobText::of(bytes);
    if std::io::stdout().is_terminal() {
        t.text
    } else {
        t.exact
    }
}

fn text_of(v: &Value) -> String {
    v["text"].as_str().unwrap_or_default().to_string()
}

fn load_profile(spec: Option<&str>) -> Result<crate::LoadedProfile, JobError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let p = crate::Lookup::new(cwd)
        .load(spec.unwrap_or("default"))
        .map_err(|e| JobError::Profile(e.to_string()))?;
    super::warn_profile(&p);
    Ok(p)
}

fn run(c: JobCommand) -> Result<Answer, JobError> {
    let jobs = Jobs::open()?;
    // The CLI's waits end with the process (Ctrl-C); nothing else cancels them.
    let never = CancelToken::new();
    match c {
        JobCommand::Start(a) => start(&jobs, a),
        JobCommand::Status { name, .. } => {
            let v = calls::status(&jobs, calls::JobArgs { job: name.into() })?;
            Ok(Answer::ok(v.clone(), text_of(&v)))
        }
        JobCommand::Wait { name, timeout, .. } => wait(&jobs, name, timeout, &never),
        JobCommand::Output {
            name,
            cursor,
            wait,
            tail,
            screen,
            follow,
            max_bytes,
            ..
        } => {
            if follow {
                return follow_output(&jobs, &name, cursor);
            }
            if screen || tail.is_some() {
                return screen_or_tail(&jobs, name, tail, screen, &never);
            }
            read_output(&jobs, &name, cursor, wait, max_bytes, &never)
        }
        JobCommand::Send {
            name,
            text,
            keys,
            wait_ms,
            ..
        } => send(&jobs, name, text, keys, wait_ms, &never),
        JobCommand::Stop { name, .. } => {
            let v = calls::stop(&jobs, calls::JobArgs { job: name.into() })?;
            Ok(Answer::ok(v.clone(), text_of(&v)))
        }
        JobCommand::List { all, .. } => Ok(list(&jobs, all)),
        JobCommand::Rm { name, .. } => {
            let v = calls::rm(&jobs, calls::JobArgs { job: name.into() })?;
            Ok(Answer::ok(v.clone(), text_of(&v)))
        }
        JobCommand::Gc { profile, .. } => {
            let p = load_profile(profile.as_deref())?;
            let v = calls::gc(&jobs, Duration::from_secs(p.profile.jobs.keep_exited));
            Ok(Answer::ok(v.clone(), text_of(&v)))
        }
    }
}

/// `job wait`: the job's own exit code once it ended; 124 when the wait ran out first.
fn wait(
    jobs: &Jobs,
    name: String,
    timeout: Option<f64>,
    never: &CancelToken,
) -> Result<Answer, JobError> {
    let a = calls::WaitArgs {
        job: name.into(),
        timeout: Some(timeout.unwrap_or(f64::INFINITY)),
    };
    let (r, v) = calls::wait(jobs, a, Duration::MAX, never)?;
    let code = r.exit_status().unwrap_or(crate::exit::TIMEOUT);
    Ok(Answer {
        code,
        text: text_of(&v),
        value: v,
        lead: Vec::new(),
        notes: Vec::new(),
    })
}

/// `job output --screen` / `--tail N`: a view of the job's output, not a cursor read.
fn screen_or_tail(
    jobs: &Jobs,
    name: String,
    tail: Option<usize>,
    screen: bool,
    never: &CancelToken,
) -> Result<Answer, JobError> {
    let a = calls::OutputArgs {
        job: name.into(),
        cursor: None,
        wait: None,
        tail,
        screen,
        max_bytes: None,
    };
    let v = calls::output(jobs, a, never)?;
    let mut text = text_of(&v);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(Answer::ok(v, text))
}

/// `job output [--cursor N]`: the exact bytes from the cursor, and the next cursor in
/// a note where a script can find it without JSON.
fn read_output(
    jobs: &Jobs,
    name: &str,
    cursor: Option<u64>,
    wait: f64,
    max_bytes: usize,
    never: &CancelToken,
) -> Result<Answer, JobError> {
    let r = jobs.find(name)?;
    let (r, chunk) = jobs.output(&r, cursor, secs(wait), max_bytes, never);
    // The JSON of the same read, so it and the text agree.
    let v = calls::chunk_json(
        jobs,
        &r,
        &chunk,
        jobs::JobText::of(&chunk.bytes),
        String::new(),
    );
    let mut shown = for_stdout(&chunk.bytes);
    if !shown.is_empty() && !shown.ends_with('\n') && !r.state.running() {
        shown.push('\n');
    }
    let note = format!("[next cursor: {}; {}]", chunk.next, r.state.word());
    Ok(Answer::ok(v, shown).skipped(chunk.skipped).note(note))
}

/// `job send`: what the job printed in the window after the input, and the cursor.
fn send(
    jobs: &Jobs,
    name: String,
    text: Option<String>,
    keys: Vec<String>,
    wait_ms: u64,
    never: &CancelToken,
) -> Result<Answer, JobError> {
    let a = calls::SendArgs {
        job: name.into(),
        text,
        keys,
        wait_ms: Some(wait_ms),
    };
    let v = calls::send(jobs, a, never)?;
    let note = format!(
        "[sent {} bytes to {}; next cursor: {}]",
        v["sent"],
        v["job"]["url"].as_str().unwrap_or_default(),
        v["cursor"]
    );
    let skipped = v["skipped_bytes"].as_u64().unwrap_or(0);
    let mut shown = for_stdout(v["output"].as_str().unwrap_or_default().as_bytes());
    // On a terminal the note starts a line of its own (a prompt the job printed
    // last has no newline); a pipe gets the exact bytes.
    if std::io::stdout().is_terminal() && !shown.is_empty() && !shown.ends_with('\n') {
        shown.push('\n');
    }
    Ok(Answer::ok(v, shown).skipped(skipped).note(note))
}

/// `job list [--all]`: a line per job, and how many finished ones were not shown.
fn list(jobs: &Jobs, all: bool) -> Answer {
    let v = calls::list(jobs, calls::ListArgs { all });
    let lines: String = jobs
        .list()
        .iter()
        .filter(|r| all || r.state.running())
        .map(|r| jobs::one_line(r) + "\n")
        .collect();
    let hidden = if all {
        0
    } else {
        jobs.list().iter().filter(|r| !r.state.running()).count()
    };
    let answer = Answer::ok(v, lines);
    if hidden > 0 {
        return answer.note(format!(
            "[{} not shown: `agentbash job list --all`]",
            crate::output::notice::count(hidden as u64, "finished job")
        ));
    }
    answer
}

/// `job output --follow`: what the job prints, as it prints it, until it has ended
/// and everything is read.
fn follow_output(jobs: &Jobs, name: &str, cursor: Option<u64>) -> Result<Answer, JobError> {
    let never = CancelToken::new();
    let mut r = jobs.find(name)?;
    let mut at = cursor.unwrap_or(0);
    loop {
        let (now, c) = jobs.output(
            &r,
            Some(at),
            Duration::from_secs(1),
            jobs::DEFAULT_READ_BYTES,
            &never,
        );
        r = now;
        if c.skipped > 0 {
            err(&format!("{}\n", log::marker(c.skipped)));
        }
        if !c.bytes.is_empty() {
            out(&for_stdout(&c.bytes));
        }
        at = c.next;
        if !r.state.running() && c.bytes.is_empty() && c.skipped == 0 && c.next >= c.end {
            break;
        }
    }
    err(&format!("[{}; next cursor: {at}]\n", jobs::one_line(&r)));
    Ok(Answer::ok(Value::Null, String::new()))
}

fn start(jobs: &Jobs, a: JobStartArgs) -> Result<Answer, JobError> {
    let profile = load_profile(a.profile.as_deref())?;
    let spec = jobs::JobSpec {
        command: crate::request::command_from_words(&a.command),
        name: a.name,
        invoking_dir: std::env::current_dir().unwrap_or_else(|_| "/".into()),
        cwd: a.cwd,
        profile: a.profile.unwrap_or_else(|| "default".into()),
        env: a.env,
        sandbox: a.sandbox.map(crate::cli::SandboxArg::mode),
        tools: a.tools,
        no_intercept: a.no_intercept,
        ready: jobs::Readiness {
            port: a.ready_port,
            regex: a.ready,
        },
        pty: a.pty,
        stdin: a.stdin,
        ttl: a.ttl,
        stop_with_caller: false,
        idle: None,
    };
    let wait = jobs::StartWait {
        ready_timeout: secs(a.ready_timeout),
        settle: Duration::from_millis(profile.profile.jobs.start_wait_ms),
    };
    let (r, v, _) = calls::start_spec(jobs, &spec, &profile, wait)?;
    // Running: 0, so `job start … && next` goes on; ended: its own exit code.
    let code = r.exit_status().unwrap_or(0);
    let mut text = jobs::one_line(&r) + "\n";
    let skipped = v["skipped_bytes"].as_u64().unwrap_or(0);
    if skipped > 0 {
        text.push_str(&format!("{}\n", log::marker(skipped)));
    }
    text.push_str(&crate::output::sanitize::sanitize(
        v["output"].as_str().unwrap_or_default().as_bytes(),
    ));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let mut notes = r.notices.clone();
    if r.state.running() {
        notes.push(format!(
            "[{} runs on: `agentbash job output {} --cursor {}` reads on, `agentbash job stop {}` stops it]",
            r.id, r.id, v["job"]["cursor"], r.id
        ));
    }
    Ok(Answer {
        code,
        value: v,
        text,
        lead: Vec::new(),
        notes,
    })
}
