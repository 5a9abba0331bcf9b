//! Shaping the result: what an ended run (or one stopped before its command) looks
//! like to the caller — exit code, output preview and artifact, notices naming what
//! agentbash changed, stopped or killed, and the hints that say what to do next. Kept
//! apart from running so that every way a run ends is turned into a [`RunResult`] in
//! one place.

use super::Event;
use super::plan::{Plan, plan_with};
use super::run::{Gathered, Ran, Sinks, Stop};
use super::{sandbox, terminal};
use crate::config::profile::LoadedProfile;
use crate::executor::{End, ExecOutcome};
use crate::exit;
use crate::exit::signal_name;
use crate::output::artifact::{self, ArtifactStore};
use crate::output::notice::count;
use crate::output::sink::OutputSink;
use crate::paths::CwdError;
use crate::request::Mode;
use crate::request::RunRequest;
use crate::result::RunResult;
use std::path::PathBuf;
use std::time::Instant;

/// The result of a run a stage stopped.
pub(super) fn stopped(
    mut r: RunResult,
    req: &RunRequest,
    plan: Plan,
    stop: Stop,
    g: Gathered,
    started: Instant,
    on_event: &mut dyn FnMut(Event<'_>),
) -> RunResult {
    match stop {
        Stop::Fail(code, message) => fail(r, code, message),
        Stop::Refused(blocked, text) => {
            r.blocked = Some(blocked);
            r.output = text.clone();
            r.text = text;
            r.warnings = g.warnings;
            r.agentbash_exit = exit::BLOCKED;
            r
        }
        Stop::NotStarted(end, line) => {
            // Shaped as a timeout (or a cancel), but the line says what really
            // happened: the command never started.
            let cwd = plan
                .cwd
                .as_ref()
                .map_or_else(|_| req.invoking_dir.clone(), Clone::clone);
            let outcome = ExecOutcome {
                end,
                background_killed: vec![],
            };
            let r = shape(
                r,
                plan,
                outcome,
                Default::default(),
                g.notices,
                g.warnings,
                started,
                cwd,
            );
            let r = did_not_start(r, line);
            announce_the_rest(&r, Vec::new(), on_event);
            r
        }
    }
}

/// The result shaped from what the command did; the session committed (or left as
/// it was) and every notice not yet sent, sent.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    r: RunResult,
    req: &RunRequest,
    plan: Plan,
    mut state: crate::shell::state::Prepared,
    sandbox: &sandbox::RunSandbox,
    cwd: PathBuf,
    sinks: Sinks,
    ran: Ran,
    mut g: Gathered,
    started: Instant,
    on_event: &mut dyn FnMut(Event<'_>),
) -> RunResult {
    let ran_tmpdir = ran.tmpdir;
    let network_denied = ran
        .network_denied
        .unwrap_or_else(|| sandbox.network_denied());
    g.announced.extend(ran.notices.iter().cloned());
    g.notices.extend(ran.notices);
    let outcome = match ran.outcome {
        Ok(o) => o,
        Err(e) => {
            let retained = sinks.out.finish();
            drop(sinks.err.map(OutputSink::finish));
            let mut r = fail(r, exit::FAILURE, e.to_string());
            r.total_bytes = retained.total_bytes;
            return r;
        }
    };
    // An interactive PTY run leaves its final screen in view instead of a preview.
    let viewport = plan.mode.mode == Mode::Pty && req.stdin_tty && req.stdout_tty;
    let preview = req
        .preview
        .filter(|_| !viewport)
        .map(|p| p.lines(!matches!(outcome.end, End::Exited(0))));
    let retained = sinks.out.finish_previewed(preview);
    g.warnings.extend(retained.warnings.iter().cloned());
    let stderr = sinks.err.map(OutputSink::finish);
    let mut said = retained.text.clone();
    if let Some(e) = &stderr {
        g.warnings
            .extend(e.warnings.iter().map(|w| format!("stderr: {w}")));
        g.notices.extend(
            e.notice
                .as_ref()
                .map(|n| n.replacen("[Showing ", "[Showing stderr: ", 1)),
        );
        said.push_str(&e.text);
    }
    g.notices
        .extend(limit_hint(&plan.execution.limits, &outcome.end, &said));
    if plan.mode.mode == Mode::Print && !req.stdin {
        g.notices
            .extend(terminal::hint(&plan.command, &outcome.end, &said));
    }
    let denial = sandbox.denial_notice(&outcome.end, &said, &cwd);
    let hidden = sandbox
        .deny_read_notice(&plan.command, &said)
        .filter(|_| denial.as_ref().is_none_or(|d| !d.contains("deny_read")));
    g.notices.extend(denial.into_iter().chain(hidden));
    g.notices.extend(sandbox.audit());
    g.notices.extend(sandbox.network_notices(&network_denied));
    let committed = matches!(
        outcome.end,
        End::Exited(_) | End::Signaled(_) | End::MissingStatus
    );
    let final_cwd = state
        .finish(committed, ran.session_unchanged)
        .unwrap_or(cwd);
    g.warnings.append(&mut state.warnings);
    let mut r = shape(
        r, plan, outcome, retained, g.notices, g.warnings, started, final_cwd,
    );
    r.sandbox = sandbox.info().map(|mut info| {
        if let Some(used) = &ran_tmpdir {
            info.tmpdir = Some(used.display().to_string());
        }
        info.network_denied = network_denied;
        info
    });
    r.stderr = stderr.map(|e| crate::result::StderrOutput {
        output: e.text.trim_end_matches('\n').to_string(),
        truncated: e.truncated,
        total_bytes: e.total_bytes,
        total_lines: e.total_lines,
        output_bytes: e.output_bytes,
        output_lines: e.output_lines,
        truncation: e.truncation,
        artifact: e.artifact,
    });
    announce_the_rest(&r, g.announced, on_event);
    r
}

/// Send every notice of `r` not yet sent as an event (`announced`: those sent while
/// the command ran), so a stream of events says all the result says, before it.
fn announce_the_rest(
    r: &RunResult,
    mut announced: Vec<String>,
    on_event: &mut dyn FnMut(Event<'_>),
) {
    for n in &r.notices {
        match announced.iter().position(|a| a == n) {
            Some(i) => {
                announced.swap_remove(i);
            }
            None => on_event(Event::Notice(n)),
        }
    }
}

/// The sidecar `artifact list` shows: which command wrote the artifact, where, how
/// it ended.
pub(super) fn remember_artifact(
    artifacts: &crate::config::schema::ArtifactsCfg,
    dir: artifact::ArtifactDir,
    id: u64,
    command: String,
    r: &RunResult,
) {
    ArtifactStore::new(dir, artifacts).write_meta(
        id,
        &artifact::Meta {
            command,
            cwd: r.cwd.clone(),
            exit_code: r.exit_code,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        },
    );
}

#[allow(clippy::too_many_arguments)]
pub(super) fn shape(
    mut r: RunResult,
    plan: Plan,
    outcome: ExecOutcome,
    retained: crate::output::sink::Retained,
    mut notices: Vec<String>,
    warnings: Vec<String>,
    started: Instant,
    cwd: PathBuf,
) -> RunResult {
    let (code, annotation) = ending(&mut r, &plan, &outcome.end, &mut notices);
    notices.retain(|n| !n.is_empty());
    if let Some(n) = &retained.notice {
        notices.push(n.clone());
    }
    notices.extend(crate::output::notice::background_killed(
        &outcome.background_killed,
        r.timed_out || r.cancelled,
    ));
    if code != 0 && !r.timed_out && !r.cancelled {
        // The point of the lift: the producer's status, where the pipeline's would
        // have been its `tail`'s (or `head`'s) 0.
        if let (Some(stripped), Some(producer)) =
            (&plan.normalized.stripped, &plan.normalized.producer)
        {
            notices.push(format!(
                "Exit code is {producer}'s; the stripped `{stripped}` would have returned 0"
            ));
        }
        notices.push(format!("Command exited with code {code}"));
    }
    // `output` is the command's text exactly as sanitized (its final newline, blank
    // lines and all); why the run ended early is a notice and the first line of
    // `text`, which shows the output as lines, with `(no output)` for nothing.
    let output = retained.text.clone();
    r.body = retained.text.clone();
    let lines = output.strip_suffix('\n').unwrap_or(&output);
    let mut text = match &annotation {
        Some(a) if output.is_empty() => a.clone(),
        Some(a) => format!("{a}\n{lines}"),
        None if output.is_empty() => "(no output)".to_string(),
        None => lines.to_string(),
    };
    for n in &notices {
        text.push_str("\n\n");
        text.push_str(n);
    }
    for w in &warnings {
        text.push_str("\n\nWarning: ");
        text.push_str(w);
    }
    r.final_cwd = cwd.display().to_string();
    r.duration_ms = started.elapsed().as_millis() as u64;
    r.output = output;
    r.text = text;
    r.truncated = retained.truncated;
    r.total_bytes = retained.total_bytes;
    r.total_lines = retained.total_lines;
    r.output_bytes = retained.output_bytes;
    r.output_lines = retained.output_lines;
    r.truncation = retained.truncation;
    r.artifact = retained.artifact;
    r.background_killed = outcome.background_killed;
    notices.splice(0..0, annotation.clone());
    r.notices = notices;
    r.warnings = warnings;
    r.agentbash_exit = code;
    r.annotation = annotation;
    let _ = plan;
    r
}

/// How the command ended, in `r`'s fields: the exit code agentbash exits with (the
/// command's, 128+N, 124 or 130) and the line saying why it ended early, if it did
/// (a signal's reason goes to `notices`).
fn ending(
    r: &mut RunResult,
    plan: &Plan,
    end: &End,
    notices: &mut Vec<String>,
) -> (i32, Option<String>) {
    match end {
        End::Exited(c) => {
            r.exit_code = Some(*c);
            let c = *c;
            (c, None)
        }
        End::Signaled(s) => {
            let s = *s;
            r.exit_code = Some(exit::for_signal(s));
            r.signal = Some(signal_name(s));
            notices.push(limit_reason(s));
            (exit::for_signal(s), None)
        }
        End::TimedOut => {
            r.timed_out = true;
            r.exit_code = Some(exit::TIMEOUT);
            (
                exit::TIMEOUT,
                Some(format!(
                    "[Command timed out after {}]",
                    count(plan.timeout.effective, "second")
                )),
            )
        }
        End::Idle(secs) => {
            let secs = *secs;
            r.timed_out = true;
            r.exit_code = Some(exit::TIMEOUT);
            (
                exit::TIMEOUT,
                Some(format!(
                    "[No output for {}; stopped]",
                    count(secs, "second")
                )),
            )
        }
        // Ended as a timeout would have ended it, only sooner.
        End::NeedsTerminal(program) => {
            r.timed_out = true;
            r.exit_code = Some(exit::TIMEOUT);
            (
                exit::TIMEOUT,
                Some(needs_terminal(program.as_str(), &plan.shown_command)),
            )
        }
        End::Cancelled(sig) => {
            let sig = *sig;
            r.cancelled = true;
            r.exit_code = Some(exit::for_signal(sig));
            (
                exit::for_signal(sig),
                Some("[Command cancelled]".to_string()),
            )
        }
        End::Killed => {
            r.cancelled = true;
            r.exit_code = Some(exit::for_signal(libc::SIGINT));
            (
                exit::for_signal(libc::SIGINT),
                Some("[Command cancelled]".to_string()),
            )
        }
        End::MissingStatus => {
            r.exit_code = None;
            r.error = Some("Command failed: missing exit status".into());
            (
                exit::FAILURE,
                Some("Command failed: missing exit status".to_string()),
            )
        }
    }
}

/// Why a program that waited for a terminal was stopped, and how to give it one.
pub(super) fn needs_terminal(program: &str, command: &str) -> String {
    let command = crate::display::shell_word(command);
    format!(
        "[{program} is waiting for a terminal, and print mode has none (stdin is the null device): stopped. Give it one: `agentbash run --pty -- {command}`, or start it as a job and type into it: `agentbash job start --pty -- {command}` and `agentbash job send` (MCP: `bash` with `background: true, pty: true`)]"
    )
}

/// A failed command whose output reports a failed allocation or fork, with the
/// matching `[limits]` key set: say which limit it probably hit. (Memory and process
/// limits send no signal of their own; the command only sees the call fail.)
fn limit_hint(l: &crate::config::profile::LimitsCfg, end: &End, output: &str) -> Option<String> {
    let failed = match end {
        End::Exited(c) => *c != 0,
        End::Signaled(s) => *s != libc::SIGXCPU && *s != libc::SIGXFSZ,
        _ => false,
    };
    if !failed || (l.address_space_mb == 0 && l.processes == 0) {
        return None;
    }
    let lower = output.to_ascii_lowercase();
    let says = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    if l.address_space_mb > 0
        && says(&[
            "cannot allocate",
            "out of memory",
            "memory allocation failed",
            "memory allocation of",
            "failed to allocate",
            "memoryerror",
            "bad_alloc",
            "memory exhausted",
        ])
    {
        return Some(format!(
            "The command ran out of memory under its address-space limit (limits.address_space_mb = {})",
            l.address_space_mb
        ));
    }
    if l.processes > 0
        && says(&[
            "resource temporarily unavailable",
            "fork: retry",
            "cannot fork",
            "can't fork",
            "too many processes",
        ])
    {
        return Some(format!(
            "The command could not start a process under its process limit (limits.processes = {})",
            l.processes
        ));
    }
    None
}

/// Why a signal probably came from a `[limits]` guard.
fn limit_reason(sig: i32) -> String {
    match sig {
        libc::SIGXCPU => "Command exceeded its CPU time limit (limits.cpu_seconds)".into(),
        libc::SIGXFSZ => "Command exceeded its file size limit (limits.file_size_mb)".into(),
        _ => String::new(),
    }
}

pub(super) fn base_result(req: &RunRequest, plan: &Plan) -> RunResult {
    let cwd = match &plan.cwd {
        Ok(c) => c.display().to_string(),
        Err(CwdError::Missing(c) | CwdError::NotADirectory(c)) => c.display().to_string(),
    };
    RunResult {
        command: plan.shown_command.clone(),
        normalized_command: plan.shown_normalized.clone(),
        stripped: plan.normalized.stripped.clone(),
        profile: plan.profile_name.clone(),
        final_cwd: cwd.clone(),
        cwd,
        mode: plan.mode.mode,
        session: req.session.clone(),
        exit_code: None,
        signal: None,
        timed_out: false,
        cancelled: false,
        blocked: None,
        duration_ms: 0,
        timeout_s: plan.timeout.effective,
        requested_timeout_s: plan.timeout.requested,
        head: plan.normalized.head,
        tail: plan.normalized.tail,
        output: String::new(),
        text: String::new(),
        truncated: false,
        total_bytes: 0,
        total_lines: 0,
        output_bytes: 0,
        output_lines: 0,
        truncation: None,
        artifact: None,
        stderr: None,
        background_killed: vec![],
        notices: vec![],
        warnings: vec![],
        error: None,
        sandbox: None,
        job: None,
        body: String::new(),
        agentbash_exit: 0,
        annotation: None,
    }
}

/// The result of a run agentbash could not carry out: exit `code`, `message` as its
/// error and text (a remote target that could not be reached, say).
pub fn failed(req: &RunRequest, profile: &LoadedProfile, code: i32, message: String) -> RunResult {
    let mut here = req.clone();
    here.session = None;
    let plan = plan_with(&here, profile, false);
    let secrets = plan.secrets.clone();
    let mut r = fail(base_result(req, &plan), code, message);
    r.mask_secrets(&secrets);
    r
}

/// The result of a request cancelled by `sig` before it started (a server's queued
/// request): shaped like a cancelled run, with `line` saying why nothing ran.
pub fn not_started(req: &RunRequest, profile: &LoadedProfile, sig: i32, line: String) -> RunResult {
    let plan = plan_with(req, profile, false);
    let r = base_result(req, &plan);
    let cwd = plan
        .cwd
        .as_ref()
        .map_or_else(|_| req.invoking_dir.clone(), Clone::clone);
    let outcome = ExecOutcome {
        end: End::Cancelled(sig),
        background_killed: vec![],
    };
    let r = shape(
        r,
        plan,
        outcome,
        Default::default(),
        vec![],
        vec![],
        Instant::now(),
        cwd,
    );
    did_not_start(r, line)
}

/// A timed-out or cancelled result whose command never started: `line` replaces the
/// generic "[Command timed out …]" / "[Command cancelled]" annotation.
fn did_not_start(mut r: RunResult, line: String) -> RunResult {
    if let Some(generic) = r.annotation.replace(line.clone()) {
        r.text = r.text.replacen(&generic, &line, 1);
        if let Some(n) = r.notices.iter_mut().find(|n| **n == generic) {
            *n = line;
        }
    }
    r
}

fn fail(mut r: RunResult, code: i32, msg: String) -> RunResult {
    r.exit_code = Some(code);
    r.output = msg.clone();
    r.text = msg.clone();
    r.error = Some(msg);
    r.agentbash_exit = code;
    r
}
