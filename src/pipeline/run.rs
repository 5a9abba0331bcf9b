//! Carrying a plan out: [`execute`] runs the stages one call each (`carry_out`):
//! the plan's refusals, the approval question, the session's state, the working
//! directory, the sinks, the sandbox, the launch through an executor and the wait.
//! A stage that ends the run early says why with a [`Stop`]; the result is shaped in
//! `super::shape`. Also here: what a caller that runs elsewhere needs from this side
//! ([`refused_before_running`], for a remote target).

use super::Event;
use super::plan::{Plan, plan_with};
use super::shape::{base_result, finish, remember_artifact, stopped};
use super::{approval, sandbox};
use crate::config::profile::LoadedProfile;
use crate::executor::{self, End, ExecOutcome, Watch};
use crate::exit;
use crate::output::artifact::ArtifactStore;
use crate::output::notice::count;
use crate::output::sink::{OutputSink, SinkConfig};
use crate::paths::resolve_cwd;
use crate::process::CancelToken;
use crate::process::SpawnSpec;
use crate::request::Mode;
use crate::request::RunRequest;
use crate::result::{Blocked, RunResult};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

fn run_marker() -> String {
    let n = RUN_COUNTER.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{}-{n}-{nanos}", std::process::id())
}

/// Scripts past this size go through a temporary file: Linux caps one argv string
/// at 128 KiB.
const MAX_INLINE_SCRIPT: usize = 100 * 1024;

/// Run `req` under `profile`, streaming events, and return the result.
pub fn execute(
    req: &RunRequest,
    profile: &LoadedProfile,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(Event<'_>),
) -> RunResult {
    execute_with(req, profile, cancel, None, on_event)
}

/// [`execute`], reusing live shells from `pool` when the run allows it (for
/// long-lived callers such as rpc and mcp).
///
/// Every way out of a run passes here, so this is where the result and the notice
/// events have their secrets masked (the output already was, as it streamed).
pub fn execute_with(
    req: &RunRequest,
    profile: &LoadedProfile,
    cancel: &CancelToken,
    pool: Option<&crate::executor::live::ShellPool>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> RunResult {
    let started = Instant::now();
    let plan = plan_with(req, profile, false);
    let (secrets, artifact_dir) = (plan.secrets.clone(), plan.artifact_dir.clone());
    let artifacts = plan.execution.artifacts.clone();
    let mut on_event = |e: Event<'_>| match e {
        Event::Notice(n) => on_event(Event::Notice(&secrets.mask(n))),
        other => on_event(other),
    };
    let mut r = carry_out(req, plan, started, cancel, pool, &mut on_event);
    r.mask_secrets(&secrets);
    if let Some(dir) = artifact_dir {
        let stderr = r.stderr.as_ref().and_then(|e| e.artifact.as_ref());
        for a in r.artifact.iter().chain(stderr) {
            remember_artifact(&artifacts, dir.clone(), a.id, r.command.clone(), &r);
        }
    }
    r
}

/// Why a run ended before (or instead of) its command: each stage that can stop the
/// run says so with one of these, and [`carry_out`] turns it into the result.
pub(super) enum Stop {
    /// agentbash could not do what was asked: exit `code` with `message` as the text.
    Fail(i32, String),
    /// The guard or the interceptor refused the command: nothing ran.
    Refused(Blocked, String),
    /// Waiting for the session ended (a timeout, a cancel) before the command started.
    NotStarted(End, String),
}

/// What the stages gather for the result on the way: the notices and warnings.
#[derive(Default)]
pub(super) struct Gathered {
    pub(super) notices: Vec<String>,
    pub(super) warnings: Vec<String>,
    /// The notices already sent as events.
    pub(super) announced: Vec<String>,
    /// The working directory, once resolved.
    pub(super) cwd: Option<PathBuf>,
}

/// Everything the executor stage starts the command with.
pub(super) struct Launch {
    pub(super) spec: SpawnSpec,
    pub(super) marker: String,
    /// The environment a live shell starts with (a live run only).
    pub(super) start_env: Option<std::collections::BTreeMap<String, String>>,
    pub(super) live_setup: String,
    /// A long command spilled to a file, kept until the command is over.
    pub(super) _script_file: Option<tempfile::NamedTempFile>,
}

/// What the executor stage reports besides its outcome.
pub(super) struct Ran {
    pub(super) outcome: Result<ExecOutcome, crate::executor::ExecError>,
    pub(super) notices: Vec<String>,
    pub(super) session_unchanged: bool,
    /// The TMPDIR a live shell gave the command (its own, from when it started).
    pub(super) tmpdir: Option<PathBuf>,
    /// What a live shell's network proxy refused during this run (a new process's
    /// proxy is the run's own: read from its sandbox).
    pub(super) network_denied: Option<Vec<crate::sandbox::Refusal>>,
}

/// The output sinks: the command's output, and its stderr when kept apart.
pub(super) struct Sinks {
    pub(super) out: OutputSink,
    pub(super) err: Option<OutputSink>,
}

/// Carry out `plan`, streaming events; the result is not masked yet. One function
/// per stage, in the order they happen.
fn carry_out(
    req: &RunRequest,
    plan: Plan,
    started: Instant,
    cancel: &CancelToken,
    pool: Option<&crate::executor::live::ShellPool>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> RunResult {
    let mut g = Gathered {
        warnings: plan.rule_warnings.clone(),
        ..Default::default()
    };
    let stages = (|| -> Result<_, Stop> {
        let ready = prepare(req, &plan, cancel, &mut g, |shell, g| {
            let sinks = sinks(&plan, req);
            announce_start(&plan, g, on_event);
            let live = pool.filter(|_| live_eligible(req, &plan, shell));
            let warm = live.is_some();
            ((sinks, live), warm)
        })?;
        let Ready {
            state,
            cwd,
            sandbox,
            launch,
            before: (mut sinks, live),
        } = ready;
        let watch = Watch {
            timeout: Duration::from_secs(plan.timeout.effective)
                .saturating_sub(state.waited)
                .max(Duration::from_millis(1)),
            kill_grace: Duration::from_millis(plan.execution.kill_grace_ms),
            background: plan.execution.background,
            cancel,
            idle: plan.execution.idle_limit(),
        };
        let ran = execute_command(
            req, &plan, &state, &sandbox, &launch, live, watch, &mut sinks, on_event,
        );
        Ok((state, sandbox, cwd, sinks, ran))
    })();
    let mut base = base_result(req, &plan);
    if let Some(cwd) = &g.cwd {
        base.cwd = cwd.display().to_string();
    }
    let (state, sandbox, cwd, sinks, ran) = match stages {
        Ok(done) => done,
        Err(stop) => return stopped(base, req, plan, stop, g, started, on_event),
    };
    finish(
        base, req, plan, state, &sandbox, cwd, sinks, ran, g, started, on_event,
    )
}

/// A command made ready to spawn by [`prepare`], and what the caller's step before
/// the sandbox made.
pub(super) struct Ready<T> {
    pub(super) state: crate::shell::state::Prepared,
    pub(super) cwd: PathBuf,
    pub(super) sandbox: sandbox::RunSandbox,
    pub(super) launch: Launch,
    pub(super) before: T,
}

/// The one stage order from a plan to the spawn, for runs and jobs alike: the plan's
/// refusals, the approval question, the session's state, the working directory, then
/// the caller's `before_sandbox` step (a run's sinks and start event; the `bool` it
/// returns says whether a warm shell runs the command), the sandbox, the "always"
/// answers recorded under it, and the launch.
pub(super) fn prepare<T>(
    req: &RunRequest,
    plan: &Plan,
    cancel: &CancelToken,
    g: &mut Gathered,
    before_sandbox: impl FnOnce(&Path, &mut Gathered) -> (T, bool),
) -> Result<Ready<T>, Stop> {
    let shell = refusal(plan, g)?;
    let approved = approval_stage(req, plan, cancel, g)?;
    let limit = Duration::from_secs(plan.timeout.effective);
    let mut state = session_state(req, plan, &shell, cancel, limit, g)?;
    let cwd = working_dir(req, plan, &state, g)?;
    let (before, live) = before_sandbox(&shell, g);
    let sandbox = confinement(plan, &cwd, &mut state, g)?;
    remember_approvals(approved, &mut state, &sandbox, g);
    let launch = launch(req, plan, &mut state, &sandbox, &shell, &cwd, live, g)?;
    Ok(Ready {
        state,
        cwd,
        sandbox,
        launch,
        before,
    })
}

/// The decisions of [`plan`] that stop a run before anything starts: a usage error,
/// a rule pack that cannot load, the guard, the interceptor, a missing working
/// directory, no shell. Else the shell to run.
pub(super) fn refusal(plan: &Plan, g: &mut Gathered) -> Result<PathBuf, Stop> {
    if let Some(e) = &plan.usage_error {
        return Err(Stop::Fail(exit::USAGE, e.clone()));
    }
    let pack_error = plan.rules_error.as_ref().map(ToString::to_string);
    if let Some(e) = pack_error.or_else(|| plan.guard.error.clone()) {
        return Err(Stop::Fail(exit::FAILURE, e));
    }
    if let Some((blocked, text)) = plan.blocked() {
        return Err(Stop::Refused(blocked, text));
    }
    if let Some(i) = &plan.interception {
        g.notices
            .extend(i.warnings.iter().map(|h| h.message.clone()));
    }
    if plan.state.session.is_none()
        && let Err(e) = &plan.cwd
    {
        return Err(Stop::Fail(exit::FAILURE, e.to_string()));
    }
    match &plan.shell {
        Ok(s) => Ok(s.clone()),
        Err(e) => Err(Stop::Fail(exit::FAILURE, e.to_string())),
    }
}

/// The approval stage (README, Approval): a line the policy asks about waits for an
/// answer from whoever can give one (`req.approver`: the terminal, the MCP client,
/// the rpc client), and nothing runs until then; with no one to ask,
/// `approval.unattended` decides. What an "always" answer remembers for the session
/// is returned (recorded once the session is locked and its policy adopted).
pub(super) fn approval_stage(
    req: &RunRequest,
    plan: &Plan,
    cancel: &CancelToken,
    g: &mut Gathered,
) -> Result<Vec<crate::shell::session::Approved>, Stop> {
    use crate::config::approval::{Decision, Unattended};
    use crate::request::Answer;
    let a = &plan.approval;
    if a.decision != Decision::Ask {
        // Say so when only a session's earlier "always" let it run unasked.
        let remembered: Vec<String> = a
            .judged
            .iter()
            .filter(|j| j.note.as_deref() == Some(approval::REMEMBERED))
            .map(|j| format!("`{}`", plan.secrets.mask(&j.command)))
            .collect();
        if a.decision == Decision::Allow && !remembered.is_empty() {
            g.notices.push(format!(
                "[Runs without asking: approved \"always\" earlier in session {}: {}]",
                req.session.as_deref().unwrap_or_default(),
                remembered.join(", ")
            ));
        }
        return Ok(Vec::new());
    }
    let question = a.question(&plan.shown_command, req.session.as_deref(), &plan.secrets);
    let (answer, who) = match &req.approver {
        Some(approver) => (approver.0.ask(&question, cancel), approver.0.who()),
        None => (
            Answer::Unavailable(
                "it runs without a terminal, and its caller has no way to ask".into(),
            ),
            String::new(),
        ),
    };
    let asked = question
        .asks
        .iter()
        .map(|a| format!("`{}`", a.command))
        .collect::<Vec<_>>()
        .join(", ");
    let rules = question.rules();
    match answer {
        Answer::Once => {
            g.notices
                .push(format!("[Approved once by {who}: {asked} ({rules})]"));
            Ok(Vec::new())
        }
        Answer::Always if question.can_remember() => {
            let session = question.session.clone().unwrap_or_default();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let remembered: Vec<crate::shell::session::Approved> = question
                .asks
                .iter()
                .filter_map(|a| {
                    Some(crate::shell::session::Approved {
                        prefix: a.prefix.clone()?,
                        rule: (a.rule != "approval.default").then(|| a.rule.clone()),
                        command: a.command.clone(),
                        by: who.clone(),
                        at: now,
                    })
                })
                .collect();
            let prefixes = remembered
                .iter()
                .map(|r| format!("`{}`", r.prefix))
                .collect::<Vec<_>>()
                .join(", ");
            g.notices.push(format!(
                "[Approved by {who} for session {session}: commands starting with {prefixes} run without asking in it from now on]"
            ));
            Ok(remembered)
        }
        Answer::Always => {
            let why = if question.session.is_none() {
                "\"always\" needs a session to remember it in (-s NAME)"
            } else {
                "\"always\" cannot be remembered for a command not known until it runs"
            };
            g.notices.push(format!(
                "[Approved once by {who}: {asked} ({rules}); {why}]"
            ));
            Ok(Vec::new())
        }
        Answer::Cancelled(sig) => Err(Stop::NotStarted(
            End::Cancelled(sig),
            "[Cancelled while waiting for approval; the command did not start]".into(),
        )),
        Answer::Unavailable(why) if a.unattended == Unattended::Allow => {
            g.notices.push(format!(
                "[{asked} needs approval ({rules} asks) and no one can be asked here ({why}); approval.unattended = \"allow\" let it run]"
            ));
            Ok(Vec::new())
        }
        answer => {
            let r = a.not_approved(
                &question,
                &answer,
                &who,
                &plan.profile_name,
                &plan.shown_command,
            );
            Err(Stop::Refused(r.blocked, r.text))
        }
    }
}

/// Record what an "always" answer approved for the session (a warning when it cannot
/// be written: the run goes on, approved once).
fn remember_approvals(
    approved: Vec<crate::shell::session::Approved>,
    state: &mut crate::shell::state::Prepared,
    sandbox: &sandbox::RunSandbox,
    g: &mut Gathered,
) {
    if approved.is_empty() {
        return;
    }
    if let Some(session) = state.session.as_mut()
        && let Err(e) = session.remember_approvals(approved, &sandbox.fingerprint())
    {
        g.warnings.push(format!(
            "approval: the \"always\" answer could not be recorded, so it counts for this run only: {e}"
        ));
    }
}

/// The rc snapshot made ready and the session locked until this run is over (waiting
/// at most `limit` for another run holding it).
fn session_state(
    req: &RunRequest,
    plan: &Plan,
    shell: &Path,
    cancel: &CancelToken,
    limit: Duration,
    g: &mut Gathered,
) -> Result<crate::shell::state::Prepared, Stop> {
    use crate::shell::state::Stopped;
    let mut state = match crate::shell::state::prepare(
        &plan.state,
        shell,
        &plan.env,
        cancel,
        limit,
        &plan.sandbox,
    ) {
        Ok(s) => s,
        Err(Stopped::Failed(e)) => return Err(Stop::Fail(exit::FAILURE, e)),
        Err(Stopped::Cancelled(sig)) => {
            let session = req.session.as_deref().unwrap_or("");
            return Err(Stop::NotStarted(
                End::Cancelled(sig),
                format!(
                    "[Cancelled while waiting for session \"{session}\", held by another run; the command did not start]"
                ),
            ));
        }
        Err(Stopped::TimedOut(waited)) => {
            let session = req.session.as_deref().unwrap_or("");
            return Err(Stop::NotStarted(
                End::TimedOut,
                format!(
                    "[Waited {} for session \"{session}\", held by another run; the command did not start]",
                    count(waited.as_secs_f64().round() as u64, "second")
                ),
            ));
        }
    };
    g.warnings.append(&mut state.warnings);
    g.notices.append(&mut state.notices);
    Ok(state)
}

/// The working directory, against the session's when there is one.
fn working_dir(
    req: &RunRequest,
    plan: &Plan,
    state: &crate::shell::state::Prepared,
    g: &mut Gathered,
) -> Result<PathBuf, Stop> {
    let cwd = resolve_cwd(&state.base_dir(&req.invoking_dir), req.cwd.as_deref())
        .map_err(|e| Stop::Fail(exit::FAILURE, state.cwd_error(&e, req.cwd.as_deref())))?;
    g.notices.extend(plan.timeout.notice.clone());
    g.notices.extend(plan.mode.notice.clone());
    g.cwd = Some(cwd.clone());
    Ok(cwd)
}

/// The sinks the output flows into, spilling to an artifact claimed when first
/// needed (never fatal: a failed claim is a warning).
pub(super) fn sinks(plan: &Plan, req: &RunRequest) -> Sinks {
    let config = |lines: bool| SinkConfig {
        max_bytes: plan.execution.max_bytes,
        head_bytes: plan.execution.head_bytes,
        max_columns: plan.execution.max_columns,
        head_lines: plan.normalized.head.filter(|_| lines),
        tail_lines: plan.normalized.tail.filter(|_| lines),
        stop_after_lines: plan.normalized.stop_after.filter(|_| lines),
        redact: plan.secrets.clone(),
        // With `--stderr separate` the output's sink sees stdout alone anyway.
        stdout_only: plan.normalized.stdout_only && !req.stderr_separate,
    };
    let mut out = OutputSink::new(config(true), None, req.live_output);
    // Retained like the output, with a budget and an artifact of its own; line
    // limits are the output's alone (a real `| head` sees stdout only).
    let mut err = req
        .stderr_separate
        .then(|| OutputSink::new(config(false), None, true));
    if let Some(dir) = &plan.artifact_dir {
        let store = ArtifactStore::new(dir.clone(), &plan.execution.artifacts);
        err = err.map(|s| s.spill_to(store.clone()));
        out = out.spill_to(store);
    }
    Sinks { out, err }
}

fn announce_start(plan: &Plan, g: &mut Gathered, on_event: &mut dyn FnMut(Event<'_>)) {
    on_event(Event::Start(plan));
    for n in &g.notices {
        on_event(Event::Notice(n));
    }
    g.announced = g.notices.clone();
}

/// Whether a warm shell from the pool may run this command. A live shell's output
/// pipe outlives the command, so it cannot be closed to stop a producer the way a
/// lifted `| head` must, and it carries stdout and stderr as one stream, which a
/// stdout-only lift must keep apart: such runs get a shell of their own.
fn live_eligible(req: &RunRequest, plan: &Plan, shell: &Path) -> bool {
    crate::executor::live::eligible(
        shell,
        &plan.execution.shell_args,
        plan.mode.mode == Mode::Print,
        req.stdin,
    ) && plan.normalized.stop_after.is_none()
        && !plan.normalized.stdout_only
        && !req.stderr_separate
}

/// The kernel sandbox the run asks for, prepared for the spawner (and its private
/// TMPDIR made); off, it confines nothing.
///
/// A session made under another sandbox policy is refused here, before its state is
/// sourced: state made inside a sandbox must not carry code into a run confined less
/// (or differently).
fn confinement(
    plan: &Plan,
    cwd: &Path,
    state: &mut crate::shell::state::Prepared,
    g: &mut Gathered,
) -> Result<sandbox::RunSandbox, Stop> {
    let sandbox = sandbox::prepare(
        plan,
        cwd,
        state.session_exchange(),
        plan.execution.sandbox_caches,
    )
    .map_err(|e| Stop::Fail(exit::FAILURE, e))?;
    state
        .adopt_policy(sandbox.fingerprint())
        .map_err(|e| Stop::Fail(exit::FAILURE, e))?;
    g.warnings.extend(sandbox.warnings());
    Ok(sandbox)
}

/// The command value: its environment (with the session's state and the run
/// marker), the script (spilled to a file when very long) and the limits.
#[allow(clippy::too_many_arguments)]
fn launch(
    req: &RunRequest,
    plan: &Plan,
    state: &mut crate::shell::state::Prepared,
    sandbox: &sandbox::RunSandbox,
    shell: &Path,
    cwd: &Path,
    live: bool,
    g: &mut Gathered,
) -> Result<Launch, Stop> {
    use crate::shell::state::PreludeError;
    let mut env = plan.env.vars.clone();
    // Under the session's exports, which win (as the profile's and the flags' do).
    let explicit = |k: &str| plan.execution.explicit_env.iter().any(|e| e == k);
    sandbox.apply_cache_env(&mut env, &explicit);
    state.apply_env(&mut env, &req.env);
    sandbox.apply_tmpdir(&mut env);
    let start_env = live.then(|| env.clone());
    if !live {
        match state.install_prelude(&mut env, &plan.script, cwd) {
            Ok(()) => {}
            Err(PreludeError::Refused(e)) => return Err(Stop::Fail(exit::FAILURE, e)),
            Err(PreludeError::Unwritten(w)) => g.warnings.push(w),
        }
    }
    // A session's state file refused right before a live shell would source it.
    let live_setup = if live {
        state
            .live_setup()
            .map_err(|e| Stop::Fail(exit::FAILURE, e))?
    } else {
        String::new()
    };
    let marker = run_marker();
    env.insert(crate::process::RUN_MARKER.to_string(), marker.clone());
    let (script, script_file) = if plan.script.len() > MAX_INLINE_SCRIPT {
        let (s, f) = spill_script(&plan.script).map_err(|e| {
            Stop::Fail(
                exit::FAILURE,
                format!("cannot stage a {}-byte command: {e}", plan.script.len()),
            )
        })?;
        (s, Some(f))
    } else {
        (plan.script.clone(), None)
    };
    let mut args = plan.execution.shell_args.clone();
    args.push(script);
    let spec = SpawnSpec {
        program: shell.to_path_buf(),
        args,
        env: env.into_iter().collect(),
        cwd: cwd.to_path_buf(),
        limits: plan.execution.process_limits(),
        sandbox: sandbox.confinement(),
        detached: false,
        keep_background: plan.execution.background == crate::config::schema::Background::Keep,
    };
    Ok(Launch {
        spec,
        marker,
        start_env,
        live_setup,
        _script_file: script_file,
    })
}

/// The command run by the executor the plan chose: a live shell, print mode or PTY.
#[allow(clippy::too_many_arguments)]
fn execute_command(
    req: &RunRequest,
    plan: &Plan,
    state: &crate::shell::state::Prepared,
    sandbox: &sandbox::RunSandbox,
    launch: &Launch,
    live: Option<&crate::executor::live::ShellPool>,
    watch: Watch<'_>,
    sinks: &mut Sinks,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Ran {
    // Two streams, one consumer.
    let on_event = std::cell::RefCell::new(on_event);
    let mut on_output = |t: &str| (on_event.borrow_mut())(Event::Output(t));
    let mut on_stderr = |t: &str| (on_event.borrow_mut())(Event::Stderr(t));
    let spec = &launch.spec;
    let (mut notices, mut session_unchanged, mut tmpdir) = (Vec::new(), false, None);
    let mut network_denied = None;
    let outcome = match plan.mode.mode {
        Mode::Print if let Some(pool) = live => {
            let job = crate::executor::live::LiveJob {
                key: crate::executor::live::ShellKey {
                    session: req.session.clone(),
                    shell: spec.program.clone(),
                    prefix: plan.execution.shell_prefix.clone(),
                    snapshot: state.snapshot_id(),
                    env: plan
                        .env
                        .vars
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    limits: [
                        plan.execution.limits.address_space_mb,
                        plan.execution.limits.file_size_mb,
                        plan.execution.limits.processes,
                        plan.execution.limits.cpu_seconds,
                    ],
                    sandbox: sandbox.key(),
                },
                start_env: launch.start_env.as_ref().unwrap_or(&plan.env.vars),
                setup: launch.live_setup.clone(),
                generation: state.generation(),
                script: &plan.script,
                save_definitions: state.saves_definitions(&plan.script),
                stateless_word: state.stateless_word(&plan.script, &spec.cwd),
                cwd: &spec.cwd,
                watch,
                limits: spec.limits,
                sandbox: spec.sandbox.clone(),
            };
            pool.run(&job, &mut sinks.out, &mut on_output).map(|o| {
                notices = o.notices;
                session_unchanged = o.session_unchanged;
                tmpdir = o.tmpdir;
                network_denied = o.network_denied;
                o.outcome
            })
        }
        Mode::Print => executor::print::run(
            &executor::print::PrintRequest {
                spawn: spec,
                stdin_inherit: req.stdin,
                marker: &launch.marker,
                watch,
                split_stderr: plan.normalized.stdout_only,
            },
            &mut sinks.out,
            &mut on_output,
            sinks.err.as_mut().map(|sink| executor::print::Stderr {
                sink,
                on_output: &mut on_stderr,
            }),
        ),
        Mode::Pty => executor::pty::run(
            &executor::pty::PtyRun {
                spawn: spec,
                cols: plan.execution.pty_cols,
                rows: plan.execution.pty_rows,
                interactive: req.stdin_tty && req.stdout_tty,
                title: &plan.shown_normalized,
                kill_key: &plan.execution.kill_key,
                feed_stdin: req.stdin,
                watch,
            },
            &mut sinks.out,
            &mut on_output,
        ),
    };
    let on_event = on_event.into_inner();
    for n in &notices {
        on_event(Event::Notice(n));
    }
    Ran {
        outcome,
        notices,
        session_unchanged,
        tmpdir,
        network_denied,
    }
}

/// For a caller that carries the run out elsewhere (a remote target, see
/// `crate::remote`): what this profile refuses before anything runs — a usage error
/// (exit 2), a rule pack or guard rule that cannot be loaded (125), a guard refusal
/// or an interceptor block (77) — as the result a run would give; `None` when the
/// command may go. The cwd, the shell and the session are the other side's, so they
/// are neither checked nor read here.
pub fn refused_before_running(
    req: &RunRequest,
    profile: &LoadedProfile,
    cancel: &CancelToken,
) -> Option<RunResult> {
    let usage = req.validate().err();
    let mut here = req.clone();
    here.session = None;
    let plan = plan_with(&here, profile, false);
    let r = base_result(req, &plan);
    let stop = if let Some(e) = usage {
        Stop::Fail(exit::USAGE, e.to_string())
    } else {
        let mut g = Gathered::default();
        // The approval policy of this side asks here, before the command is sent.
        match refusal(&plan, &mut g).and_then(|_| approval_stage(&here, &plan, cancel, &mut g)) {
            Err(stop @ (Stop::Fail(..) | Stop::Refused(..) | Stop::NotStarted(..))) => stop,
            _ => return None,
        }
    };
    // A cwd or a shell this side lacks is no refusal: the other side decides.
    if let Stop::Fail(code, _) = &stop
        && *code == exit::FAILURE
        && plan.rules_error.is_none()
        && plan.guard.error.is_none()
    {
        return None;
    }
    let secrets = plan.secrets.clone();
    let mut r = stopped(
        r,
        req,
        plan,
        stop,
        Gathered::default(),
        Instant::now(),
        &mut |_| {},
    );
    r.mask_secrets(&secrets);
    Some(r)
}

/// Write a very long command to a private temp file and source it instead.
fn spill_script(script: &str) -> std::io::Result<(String, tempfile::NamedTempFile)> {
    use std::io::Write;
    let dir = crate::paths::state_dir().join("tmp");
    crate::paths::private_dir(&dir)?;
    let mut f = tempfile::Builder::new()
        .prefix("cmd-")
        .suffix(".sh")
        .tempfile_in(&dir)?;
    f.write_all(script.as_bytes())?;
    f.flush()?;
    let path = f.path().display().to_string().replace('\'', r"'\''");
    Ok((format!(". '{path}'"), f))
}
