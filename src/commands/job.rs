//! `agentbash job …`: start, read, type into, stop, list and clean up jobs (see
//! `crate::jobs`), each answer as text or `--json`.

use crate::cli::{JobCommand, JobStartArgs};
use crate::jobs::{self, JobError, Jobs, State};
use crate::render::{err, out};
use std::time::Duration;

pub fn command(c: JobCommand) -> i32 {
    if let JobCommand::Supervise { dir } = &c {
        return jobs::supervise::main(dir);
    }
    let json = match &c {
        JobCommand::Start(a) => a.json,
        JobCommand::Output { json, .. }
        | JobCommand::Send { json, .. }
        | JobCommand::Stop { json, .. }
        | JobCommand::List { json }
        | JobCommand::Gc { json } => *json,
        JobCommand::Supervise { .. } => false,
    };
    match run(c) {
        Ok((code, value, text)) => {
            if json {
                out(&format!("{value}\n"));
            } else {
                out(&text);
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

type Answer = (i32, serde_json::Value, String);

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

fn run(c: JobCommand) -> Result<Answer, JobError> {
    let jobs = Jobs::open()?;
    match c {
        JobCommand::Start(a) => start(&jobs, a),
        JobCommand::Output {
            name,
            cursor,
            wait,
            tail,
            screen,
            max_bytes,
            ..
        } => {
            let r = jobs.find(&name)?;
            if screen {
                let rows = jobs.screen(&r)?;
                let text = rows.join("\n") + "\n";
                let v = serde_json::json!({ "job": record_json(&r), "screen": rows });
                return Ok((0, v, text));
            }
            if let Some(n) = tail {
                let text = jobs.tail_text(&r, n);
                let v = serde_json::json!({ "job": record_json(&r), "output": text });
                return Ok((0, v, text));
            }
            let (r, chunk) = jobs.output(&r, cursor, secs(wait), max_bytes);
            let text = String::from_utf8_lossy(&chunk.bytes).into_owned();
            let v = serde_json::json!({
                "job": record_json(&r),
                "output": text,
                "cursor": cursor.unwrap_or(0),
                "next": chunk.next,
                "dropped": chunk.dropped,
                "end": chunk.end,
                "more": chunk.next < chunk.end,
            });
            // Exact bytes into a pipe (cursor reads join up); a terminal is shown them
            // sanitized, never the job's escape sequences.
            let mut shown = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                crate::output::sanitize::sanitize(&chunk.bytes)
            } else {
                text
            };
            if chunk.dropped > 0 {
                err(&format!(
                    "agentbash: {} bytes before this were rotated out of the log (jobs.log_max_bytes)\n",
                    chunk.dropped
                ));
            }
            // The cursor for the next read, where a script can find it without JSON.
            err(&format!(
                "[next cursor: {}; {}]\n",
                chunk.next,
                r.state.word()
            ));
            if !shown.is_empty() && !shown.ends_with('\n') && !r.state.running() {
                shown.push('\n');
            }
            Ok((0, v, shown))
        }
        JobCommand::Send {
            name, text, keys, ..
        } => {
            let r = jobs.find(&name)?;
            let mut bytes = text.unwrap_or_default().into_bytes();
            for k in &keys {
                bytes.extend(jobs::key_bytes(k).map_err(|e| JobError::NotRunning {
                    job: r.id.clone(),
                    what: format!("cannot be sent that: {e}"),
                })?);
            }
            jobs.send(&r, &bytes)?;
            let v = serde_json::json!({ "job": record_json(&r), "sent": bytes.len() });
            Ok((0, v, format!("sent {} bytes to {}\n", bytes.len(), r.id)))
        }
        JobCommand::Stop { name, .. } => {
            let r = jobs.find(&name)?;
            let after = jobs.stop(&r, "stopped")?;
            let tail = jobs.tail_text(&after, 20);
            let v = serde_json::json!({ "job": record_json(&after), "output": tail });
            Ok((0, v, format!("{}\n{tail}", jobs::one_line(&after))))
        }
        JobCommand::List { .. } => {
            let all = jobs.list();
            let text: String = all.iter().map(|r| jobs::one_line(r) + "\n").collect();
            let v = serde_json::json!({ "jobs": all.iter().map(record_json).collect::<Vec<_>>() });
            Ok((0, v, text))
        }
        JobCommand::Gc { .. } => {
            let (stopped, removed) = jobs.gc();
            let text = format!(
                "stopped {} running, removed {} finished\n",
                stopped.len(),
                removed.len()
            );
            let v = serde_json::json!({
                "stopped": stopped.iter().map(record_json).collect::<Vec<_>>(),
                "removed": removed.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
            });
            Ok((0, v, text))
        }
        JobCommand::Supervise { .. } => unreachable!("handled in command()"),
    }
}

fn start(jobs: &Jobs, a: JobStartArgs) -> Result<Answer, JobError> {
    let profile = super::load_profile(a.profile.as_deref())
        .map_err(|_| JobError::Io(std::io::Error::other("the profile could not be loaded")))?;
    let spec = jobs::JobSpec {
        command: crate::request::command_from_words(&a.command),
        name: a.name,
        invoking_dir: std::env::current_dir().unwrap_or_else(|_| "/".into()),
        cwd: a.cwd,
        profile: a.profile.unwrap_or_else(|| "default".into()),
        env: a.env,
        sandbox: a.sandbox.map(crate::cli::SandboxArg::mode),
        ready: jobs::Readiness {
            port: a.ready_port,
            regex: a.ready,
        },
        pty: a.pty,
        stdin: a.stdin,
        ttl: a.ttl,
        stop_with_caller: false,
    };
    let started = jobs.start(&spec, &profile, secs(a.ready_timeout))?;
    let r = &started.record;
    let code = match r.state {
        State::Exited => r.exit_code.unwrap_or(crate::exit::FAILURE),
        State::Killed | State::Lost => crate::exit::FAILURE,
        _ => 0,
    };
    let v = serde_json::json!({ "job": record_json(r), "output": started.output });
    let mut text = jobs::one_line(r) + "\n";
    text.push_str(&started.output);
    Ok((code, v, text))
}

pub use crate::jobs::calls::record_json;
