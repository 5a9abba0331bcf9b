//! The run pipeline (docs/ARCHITECTURE.md), top to bottom. [`plan`] decides:
//! validate → mode → normalize → intercept → timeout → env → shell → state → cwd →
//! guard → artifact dir and secrets; [`execute`] refuses what the plan refused, then
//! prepares the state, spawns through an executor, tears down and shapes the result.
//!
//! [`plan`] makes every decision without side effects (it is what `explain` shows);
//! [`execute`] carries a plan out and shapes the [`RunResult`].

pub mod guard;
pub mod intercept;
pub mod normalize;
pub mod sandbox;
pub mod stages;
pub mod terminal;

use crate::config::profile::{LoadedProfile, Packs};
use crate::executor::{self, End, ExecOutcome, Watch};
use crate::exit;
use crate::exit::signal_name;
use crate::output::artifact::{self, ArtifactStore};
use crate::output::notice::count;
use crate::output::redact::Secrets;
use crate::output::sink::{OutputSink, SinkConfig};
use crate::paths::{CwdError, resolve_cwd};
use crate::process::CancelToken;
use crate::process::SpawnSpec;
use crate::request::Mode;
use crate::result::{BlockKind, Blocked, RunResult};
use crate::shell::env::BuiltEnv;
use crate::shell::resolve::ShellError;
use intercept::Interception;
use normalize::Normalized;
use stages::{ModeDecision, Timeout};
use std::path::{Path, PathBuf};

pub use crate::request::{Preview, RequestError, RunRequest};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Streaming callbacks while a run is under way.
pub enum Event<'a> {
    Start(&'a Plan),
    /// Sanitized output text, coalesced (at most one event per 50 ms).
    Output(&'a str),
    /// The command's stderr under [`RunRequest::stderr_separate`], like `Output`.
    Stderr(&'a str),
    Notice(&'a str),
}

/// Every decision of a run, made before anything runs.
#[derive(Debug)]
pub struct Plan {
    pub command: String,
    pub normalized: Normalized,
    /// `output.redact` secrets (from agentbash's environment, the run's and the
    /// session's), masked in everything shown and in the result.
    pub secrets: Secrets,
    /// The command, the normalized command and the cwd as shown (secrets masked).
    pub shown_command: String,
    pub shown_normalized: String,
    /// The guard's verdict: refuses catastrophes whatever the caller declared.
    pub guard: crate::pipeline::guard::GuardPlan,
    pub shown_cwd: Option<String>,
    pub interception: Option<Interception>,
    pub tools: Vec<String>,
    pub rule_warnings: Vec<String>,
    /// A rule pack the profile names cannot be loaded (exit 125, nothing runs).
    pub rules_error: Option<crate::config::profile::PackError>,
    pub cwd: Result<PathBuf, CwdError>,
    pub timeout: Timeout,
    pub mode: ModeDecision,
    pub shell: Result<PathBuf, ShellError>,
    /// The rc snapshot and the session (read-only decisions).
    pub state: crate::shell::state::StatePlan,
    pub script: String,
    pub env: BuiltEnv,
    pub artifact_dir: Option<artifact::ArtifactDir>,
    /// The `[sandbox]` policy this run asks for (the profile's, or `--sandbox`).
    pub sandbox: crate::sandbox::Policy,
    pub profile_name: String,
    /// Usage-level problem with the request itself (exit 2).
    pub usage_error: Option<String>,
}

impl Plan {
    /// The argv that would be spawned.
    pub fn argv(&self, profile: &LoadedProfile) -> Vec<String> {
        let mut v = vec![
            self.shell
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| profile.profile.shell.path.clone()),
        ];
        v.extend(profile.profile.shell.args.iter().cloned());
        v.push(self.script.clone());
        v
    }
}

/// Make every decision for `req` under `profile`; runs nothing. Shows the full
/// interception trace (what `explain` prints).
pub fn plan(req: &RunRequest, profile: &LoadedProfile) -> Plan {
    plan_with(req, profile, true)
}

/// `trace_all`: check the rules even when the caller has no tools (so `explain` can
/// show what would match); a run skips that, since no rule can apply.
fn plan_with(req: &RunRequest, profile: &LoadedProfile, trace_all: bool) -> Plan {
    let p = &profile.profile;
    // A library caller may skip the validation (session names become paths).
    let usage_error = req.validate().err().map(|e| e.to_string());
    // Mode (decided before the env, which differs for a PTY, and before the lift,
    // which a terminal limits: it has one stream where stdout and stderr meet).
    // A program that needs a terminal gets agentbash's, when there is one (`git
    // commit` would not: the hardened editor is `true` in a terminal too).
    let needs_terminal = (req.stdin_tty && req.stdout_tty)
        .then(|| terminal::interactive_program(&req.command))
        .flatten()
        .filter(|i| *i != terminal::Interactive::GitCommit);
    let mode = stages::decide_mode(
        req.mode,
        p.pty.mode,
        std::env::var("AGENTBASH_NO_PTY").as_deref() == Ok("1"),
        req.stdin_tty,
        req.stdout_tty,
        needs_terminal.as_ref().map(terminal::Interactive::program),
    );
    // Normalize: the `| head`/`| tail` lift.
    let mut normalized =
        normalize::normalize(&req.command, p.output.strip_head_tail, req.head, req.tail);
    if mode.mode == Mode::Pty {
        normalized = normalized.keep_stdout_pipe(
            &req.command,
            "the pipe receives stdout only, and in a terminal (PTY mode) stdout and stderr are one stream, so a view of stdout alone cannot be kept: it runs as written",
        );
    }
    // Intercept: the rule packs, for the caller's tools.
    let tools = req
        .tools
        .clone()
        .unwrap_or_else(|| p.interceptor.tools.clone());
    // A pack that cannot be loaded stops the run (exit 125) even when no rule could
    // apply: without tools the packs are only read and parsed, not compiled.
    let mut rules_error = None;
    // A caller without tools needs only the packs' `deny` rules, which apply whatever
    // the tools: without any, the packs are only read and parsed, not compiled.
    let enabled = p.interceptor.enabled && !req.no_intercept;
    let check = enabled
        && (trace_all
            || !tools.is_empty()
            || match profile.rule_packs(Packs::Interceptor).loadable() {
                Ok(denies) => denies == crate::config::rules::Denies::Some,
                Err(e) => {
                    rules_error = Some(e);
                    false
                }
            });
    let (interception, rule_warnings) = if check {
        match profile.rule_packs(Packs::Interceptor).compiled() {
            Ok(set) => (
                Some(intercept::intercept(&normalized.command, &set, &tools)),
                set.warnings().to_vec(),
            ),
            Err(e) => {
                rules_error = Some(e);
                (None, vec![])
            }
        }
    } else {
        (None, vec![])
    };
    // Timeout.
    let timeout = stages::clamp_timeout(req.timeout, &p.timeout);
    let usage_error = usage_error.or_else(|| {
        (req.stderr_separate && mode.mode == Mode::Pty).then(|| {
            "--stderr separate needs print mode: a terminal has one output stream (use --mode print)"
                .to_string()
        })
    });
    let env = crate::shell::env::build(&p.env, std::env::vars(), &req.env, mode.mode == Mode::Pty);
    let shell = crate::shell::resolve::resolve(&p.shell, env.vars.get("PATH").map(String::as_str));
    let script = crate::shell::resolve::with_prefix(&p.shell.prefix, &normalized.command);
    let state = crate::shell::state::plan(
        req.session.as_deref(),
        &p.shell,
        shell.as_ref().ok().map(PathBuf::as_path),
        &env,
    );
    // The cwd, against the session's cwd when there is one
    let cwd = resolve_cwd(&state.base_dir(&req.invoking_dir), req.cwd.as_deref());
    let guard = if p.guard.enabled {
        let base = state.base_dir(&req.invoking_dir);
        crate::pipeline::guard::GuardPlan::decide(
            &req.command,
            &crate::pipeline::guard::Context {
                env: &env.vars,
                cwd: cwd.as_deref().unwrap_or(&base),
                protected: &p.guard.protected,
            },
            |lines| {
                let packs = profile.rule_packs(Packs::Guard);
                packs.might_match(lines).then(|| packs.compiled())
            },
        )
    } else {
        crate::pipeline::guard::GuardPlan::off()
    };
    let artifact_dir = p
        .artifacts
        .enabled
        .then(|| artifact::resolve_dir(&p.artifacts.dir, &req.invoking_dir));
    let exported = state.session.iter().flat_map(|s| &s.exported);
    let secrets = Secrets::for_run(&p.output.redact, &env, exported);
    let (shown_command, shown_normalized) = (
        secrets.mask(&req.command).into_owned(),
        secrets.mask(&normalized.command).into_owned(),
    );
    let shown_cwd = cwd
        .as_ref()
        .ok()
        .map(|c| secrets.mask(&c.display().to_string()).into_owned());
    Plan {
        command: req.command.clone(),
        normalized,
        secrets,
        shown_command,
        shown_normalized,
        guard,
        shown_cwd,
        interception,
        tools,
        rule_warnings,
        rules_error,
        cwd,
        timeout,
        mode,
        shell,
        state,
        script,
        env,
        artifact_dir,
        sandbox: sandbox::plan(&p.sandbox, req.sandbox, &req.invoking_dir),
        profile_name: profile.name.clone(),
        usage_error,
    }
}

impl Plan {
    /// What refuses this command, and the text the caller is shown: the guard first
    /// (a structural check or a `deny` rule of `guard.rules`), then the interceptor (a
    /// `deny` rule there is the guard's kind too: it refuses whatever the tools).
    pub fn blocked(&self) -> Option<(Blocked, String)> {
        if let Some(refusal) = &self.guard.refused {
            let text = guard::refused_message(&refusal.reason, &self.shown_command);
            let blocked = Blocked {
                rule: refusal.rule.clone(),
                tool: None,
                message: refusal.reason.clone(),
                kind: BlockKind::Guard,
            };
            return Some((blocked, text));
        }
        let hit = self.interception.as_ref()?.blocked.as_ref()?;
        if hit.action == crate::config::rules::Action::Deny {
            let blocked = Blocked {
                rule: hit.rule.clone(),
                tool: None,
                message: hit.message.clone(),
                kind: BlockKind::Guard,
            };
            return Some((
                blocked,
                guard::refused_message(&hit.message, &self.shown_command),
            ));
        }
        let blocked = Blocked {
            rule: hit.rule.clone(),
            tool: Some(hit.tool.clone()).filter(|t| !t.is_empty()),
            message: hit.message.clone(),
            kind: BlockKind::Interceptor,
        };
        Some((
            blocked,
            intercept::blocked_message(hit, &self.shown_command),
        ))
    }
}

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
    let mut on_event = |e: Event<'_>| match e {
        Event::Notice(n) => on_event(Event::Notice(&secrets.mask(n))),
        other => on_event(other),
    };
    let mut r = carry_out(req, profile, plan, started, cancel, pool, &mut on_event);
    r.mask_secrets(&secrets);
    if let Some(dir) = artifact_dir {
        let stderr = r.stderr.as_ref().and_then(|e| e.artifact.as_ref());
        for a in r.artifact.iter().chain(stderr) {
            remember_artifact(&profile.profile, dir.clone(), a.id, r.command.clone(), &r);
        }
    }
    r
}

/// Why a run ended before (or instead of) its command: each stage that can stop the
/// run says so with one of these, and [`carry_out`] turns it into the result.
enum Stop {
    /// agentbash could not do what was asked: exit `code` with `message` as the text.
    Fail(i32, String),
    /// The guard or the interceptor refused the command: nothing ran.
    Refused(Blocked, String),
    /// Waiting for the session ended (a timeout, a cancel) before the command started.
    NotStarted(End, String),
}

/// What the stages gather for the result on the way: the notices and warnings.
#[derive(Default)]
struct Gathered {
    notices: Vec<String>,
    warnings: Vec<String>,
    /// The notices already sent as events.
    announced: Vec<String>,
    /// The working directory, once resolved.
    cwd: Option<PathBuf>,
}

/// Everything the executor stage starts the command with.
struct Launch {
    spec: SpawnSpec,
    marker: String,
    /// The environment a live shell starts with (a live run only).
    start_env: Option<std::collections::BTreeMap<String, String>>,
    live_setup: String,
    /// A long command spilled to a file, kept until the command is over.
    _script_file: Option<tempfile::NamedTempFile>,
}

/// What the executor stage reports besides its outcome.
struct Ran {
    outcome: Result<ExecOutcome, crate::executor::ExecError>,
    notices: Vec<String>,
    session_unchanged: bool,
    /// The TMPDIR a live shell gave the command (its own, from when it started).
    tmpdir: Option<PathBuf>,
    /// What a live shell's network proxy refused during this run (a new process's
    /// proxy is the run's own: read from its sandbox).
    network_denied: Option<Vec<crate::sandbox::Refusal>>,
}

/// The output sinks: the command's output, and its stderr when kept apart.
struct Sinks {
    out: OutputSink,
    err: Option<OutputSink>,
}

/// Carry out `plan`, streaming events; the result is not masked yet. One function
/// per stage, in the order they happen.
fn carry_out(
    req: &RunRequest,
    profile: &LoadedProfile,
    plan: Plan,
    started: Instant,
    cancel: &CancelToken,
    pool: Option<&crate::executor::live::ShellPool>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> RunResult {
    let p = &profile.profile;
    let mut g = Gathered {
        warnings: plan.rule_warnings.clone(),
        ..Default::default()
    };
    let stages = (|| -> Result<_, Stop> {
        let shell = refusal(&plan, &mut g)?;
        let limit = Duration::from_secs(plan.timeout.effective);
        let mut state = session_state(req, &plan, &shell, cancel, limit, &mut g)?;
        let cwd = working_dir(req, &plan, &state, &mut g)?;
        let mut sinks = sinks(p, &plan, req);
        announce_start(&plan, &mut g, on_event);
        let live = pool.filter(|_| live_eligible(req, p, &plan, &shell));
        let sandbox = confinement(p, &plan, &cwd, &mut state, &mut g)?;
        let launch = launch(
            req,
            p,
            &plan,
            &mut state,
            &sandbox,
            &shell,
            &cwd,
            live.is_some(),
            &mut g,
        )?;
        let watch = Watch {
            timeout: limit
                .saturating_sub(state.waited)
                .max(Duration::from_millis(1)),
            kill_grace: Duration::from_millis(p.timeout.kill_grace_ms),
            background: p.process.background,
            cancel,
            idle: idle_limit(req, p),
        };
        let ran = execute_command(
            req, p, &plan, &state, &sandbox, &launch, live, watch, &mut sinks, on_event,
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
        base, req, p, plan, state, &sandbox, cwd, sinks, ran, g, started, on_event,
    )
}

/// The result of a run a stage stopped.
fn stopped(
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

/// The decisions of [`plan`] that stop a run before anything starts: a usage error,
/// a rule pack that cannot load, the guard, the interceptor, a missing working
/// directory, no shell. Else the shell to run.
fn refusal(plan: &Plan, g: &mut Gathered) -> Result<PathBuf, Stop> {
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
fn sinks(p: &crate::config::profile::Profile, plan: &Plan, req: &RunRequest) -> Sinks {
    let config = |lines: bool| SinkConfig {
        max_bytes: p.output.max_bytes,
        head_bytes: p.output.head_bytes,
        max_columns: p.output.max_columns,
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
        let store = ArtifactStore::new(dir.clone(), &p.artifacts);
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
fn live_eligible(
    req: &RunRequest,
    p: &crate::config::profile::Profile,
    plan: &Plan,
    shell: &Path,
) -> bool {
    crate::executor::live::eligible(
        shell,
        &p.shell.args,
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
    p: &crate::config::profile::Profile,
    plan: &Plan,
    cwd: &Path,
    state: &mut crate::shell::state::Prepared,
    g: &mut Gathered,
) -> Result<sandbox::RunSandbox, Stop> {
    let sandbox = sandbox::prepare(plan, cwd, state.session_exchange(), p.env.sandbox_caches)
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
    p: &crate::config::profile::Profile,
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
    let explicit = |k: &str| p.env.set.contains_key(k) || req.env.iter().any(|(f, _)| f == k);
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
    let mut args = p.shell.args.clone();
    args.push(script);
    let spec = SpawnSpec {
        program: shell.to_path_buf(),
        args,
        env: env.into_iter().collect(),
        cwd: cwd.to_path_buf(),
        limits: crate::process::Limits {
            address_space_mb: p.limits.address_space_mb,
            file_size_mb: p.limits.file_size_mb,
            processes: p.limits.processes,
            cpu_seconds: p.limits.cpu_seconds,
        },
        sandbox: sandbox.confinement(),
        detached: false,
        keep_background: p.process.background == crate::config::schema::Background::Keep,
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
    p: &crate::config::profile::Profile,
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
                    prefix: p.shell.prefix.clone(),
                    snapshot: state.snapshot_id(),
                    env: plan
                        .env
                        .vars
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    limits: [
                        p.limits.address_space_mb,
                        p.limits.file_size_mb,
                        p.limits.processes,
                        p.limits.cpu_seconds,
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
                cols: p.pty.cols,
                rows: p.pty.rows,
                interactive: req.stdin_tty && req.stdout_tty,
                title: &plan.shown_normalized,
                kill_key: &p.pty.kill_key,
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

/// The result shaped from what the command did; the session committed (or left as
/// it was) and every notice not yet sent, sent.
#[allow(clippy::too_many_arguments)]
fn finish(
    r: RunResult,
    req: &RunRequest,
    p: &crate::config::profile::Profile,
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
    g.notices.extend(limit_hint(&p.limits, &outcome.end, &said));
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
fn remember_artifact(
    p: &crate::config::profile::Profile,
    dir: artifact::ArtifactDir,
    id: u64,
    command: String,
    r: &RunResult,
) {
    ArtifactStore::new(dir, &p.artifacts).write_meta(
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
fn shape(
    mut r: RunResult,
    plan: Plan,
    outcome: ExecOutcome,
    retained: crate::output::sink::Retained,
    mut notices: Vec<String>,
    warnings: Vec<String>,
    started: Instant,
    cwd: PathBuf,
) -> RunResult {
    // The exit code: the command's, 128+N, 124 or 130.
    let (code, annotation) = match outcome.end {
        End::Exited(c) => {
            r.exit_code = Some(c);
            (c, None)
        }
        End::Signaled(s) => {
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
    };
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

/// Why a program that waited for a terminal was stopped, and how to give it one.
fn needs_terminal(program: &str, command: &str) -> String {
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

fn base_result(req: &RunRequest, plan: &Plan) -> RunResult {
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

/// For a caller that carries the run out elsewhere (a remote target, see
/// `crate::remote`): what this profile refuses before anything runs — a usage error
/// (exit 2), a rule pack or guard rule that cannot be loaded (125), a guard refusal
/// or an interceptor block (77) — as the result a run would give; `None` when the
/// command may go. The cwd, the shell and the session are the other side's, so they
/// are neither checked nor read here.
pub fn refused_before_running(req: &RunRequest, profile: &LoadedProfile) -> Option<RunResult> {
    let usage = req.validate().err();
    let mut here = req.clone();
    here.session = None;
    let plan = plan_with(&here, profile, false);
    let r = base_result(req, &plan);
    let stop = if let Some(e) = usage {
        Stop::Fail(exit::USAGE, e.to_string())
    } else {
        let mut g = Gathered::default();
        match refusal(&plan, &mut g) {
            Err(stop @ (Stop::Fail(..) | Stop::Refused(..))) => stop,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_names_the_field_at_fault() {
        let ok = RunRequest::new("echo hi");
        assert_eq!(ok.validate(), Ok(()));
        let cases: Vec<(RunRequest, &str)> = vec![
            (RunRequest::new(" \n"), "empty command"),
            (RunRequest::new("a\0b"), "`command` contains a NUL"),
            (
                RunRequest {
                    env: vec![("A".into(), "x\0".into())],
                    ..ok.clone()
                },
                "`env` entry \"A\" contains a NUL",
            ),
            (
                RunRequest {
                    cwd: Some("a\0b".into()),
                    ..ok.clone()
                },
                "`cwd` contains a NUL",
            ),
            (
                RunRequest {
                    env: vec![("1X".into(), "x".into())],
                    ..ok.clone()
                },
                "`env` key \"1X\" is not a valid variable name",
            ),
            (
                RunRequest {
                    session: Some("..".into()),
                    ..ok.clone()
                },
                "`session`: invalid session name",
            ),
            (
                RunRequest {
                    tail: Some(0),
                    ..ok.clone()
                },
                "`tail` must be at least 1",
            ),
        ];
        for (req, want) in cases {
            let message = req
                .validate()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.starts_with(want), "{req:?}: {message}");
        }
    }
}

/// A job's command made ready to spawn: the same plan, refusals, state, working
/// directory and sandbox as a run's, stopped right before an executor would start
/// it. Kept alive as long as the job runs (the sandbox's files, a spilled script).
pub struct JobLaunch {
    pub spec: SpawnSpec,
    /// The run marker set in the command's environment.
    pub marker: String,
    pub cwd: PathBuf,
    /// The secrets (`output.redact`) masked in all the job shows: its log, its
    /// screen, its record.
    pub secrets: Secrets,
    _state: crate::shell::state::Prepared,
    sandbox: sandbox::RunSandbox,
    _script_file: Option<tempfile::NamedTempFile>,
}

impl JobLaunch {
    /// The sandbox the job is confined by (its `sandbox` object, its notices).
    pub fn sandbox(&self) -> &sandbox::RunSandbox {
        &self.sandbox
    }

    /// What the job's network proxy has refused so far (`None` without a network
    /// allowlist): its supervisor reports each new destination in the job's output.
    pub fn network_denied(&self) -> Option<Vec<crate::sandbox::Refusal>> {
        self.sandbox.network_log().map(|log| log.snapshot())
    }

    /// The notices for `denied` (see [`sandbox::RunSandbox::network_notices`]).
    pub fn network_notices(&self, denied: &[crate::sandbox::Refusal]) -> Vec<String> {
        self.sandbox.network_notices(denied)
    }
}

/// Why a job's command did not get ready: the exit code a run would have had
/// (2 usage, 77 refused, 125 failed) and what to tell the caller.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct JobRefusal {
    pub exit: i32,
    pub message: String,
}

/// Plan `req` and carry it out up to the spawn, for a job (see [`JobLaunch`]). The
/// guard, a usage error, a bad cwd and the sandbox refuse exactly as for a run.
pub fn job_launch(req: &RunRequest, profile: &LoadedProfile) -> Result<JobLaunch, JobRefusal> {
    let plan = plan_with(req, profile, false);
    job_refusal(&plan)?;
    let p = &profile.profile;
    let mut g = Gathered::default();
    let cancel = CancelToken::new();
    let refused = |stop: Stop| JobRefusal::from(stop).masked(&plan.secrets);
    let shell = refusal(&plan, &mut g).map_err(refused)?;
    let limit = Duration::from_secs(plan.timeout.effective);
    let mut state = session_state(req, &plan, &shell, &cancel, limit, &mut g).map_err(refused)?;
    let cwd = working_dir(req, &plan, &state, &mut g).map_err(refused)?;
    let sandbox = confinement(p, &plan, &cwd, &mut state, &mut g).map_err(refused)?;
    let launch = launch(
        req, p, &plan, &mut state, &sandbox, &shell, &cwd, false, &mut g,
    )
    .map_err(refused)?;
    Ok(JobLaunch {
        spec: launch.spec,
        marker: launch.marker,
        cwd,
        secrets: plan.secrets.clone(),
        _state: state,
        sandbox,
        _script_file: launch._script_file,
    })
}

/// The refusals of [`job_launch`] that need nothing prepared (usage, rule packs, the
/// guard): what a caller checks before it starts a job's supervisor, so a refused
/// command is answered at once.
pub fn job_refusal(plan: &Plan) -> Result<(), JobRefusal> {
    let mut g = Gathered::default();
    refusal(plan, &mut g)
        .map(drop)
        .map_err(|stop| JobRefusal::from(stop).masked(&plan.secrets))
}

impl JobRefusal {
    /// The message with the run's secrets masked (it may quote the command).
    fn masked(mut self, secrets: &Secrets) -> Self {
        secrets.mask_in_place(&mut self.message);
        self
    }
}

impl From<Stop> for JobRefusal {
    fn from(stop: Stop) -> Self {
        match stop {
            Stop::Fail(exit, message) => JobRefusal { exit, message },
            Stop::Refused(_, message) => JobRefusal {
                exit: exit::BLOCKED,
                message,
            },
            Stop::NotStarted(_, message) => JobRefusal {
                exit: exit::FAILURE,
                message,
            },
        }
    }
}

/// `jobs.idle_timeout` for a foreground run: only when the caller set no timeout (a
/// caller who gave one expects quiet work to take that long).
pub fn idle_limit(req: &RunRequest, p: &crate::config::profile::Profile) -> Option<Duration> {
    Some(Duration::from_secs(p.jobs.idle_timeout)).filter(|d| !d.is_zero() && req.timeout.is_none())
}

/// [`plan`] as a run makes it (no interception trace for rules that cannot apply).
pub fn plan_run(req: &RunRequest, profile: &LoadedProfile) -> Plan {
    plan_with(req, profile, false)
}

/// A foreground request carried out as a job (rpc/mcp `jobs.background_after`): what
/// the job prints goes through the run's own sink, so the answer is bounded and
/// shaped as the run's would be, whether the job ends in time or is handed off.
pub struct JobRun {
    plan: Plan,
    base: RunResult,
    sink: OutputSink,
    notices: Vec<String>,
    started: Instant,
}

impl JobRun {
    /// `None` when `req` must run in the foreground: a session, PTY mode, a refusal
    /// of any kind (the run answers it), or a timeout no longer than `after`.
    pub fn eligible(req: &RunRequest, profile: &LoadedProfile, after: Duration) -> Option<JobRun> {
        let plan = plan_with(req, profile, false);
        let mut g = Gathered::default();
        let ok = req.session.is_none()
            && !req.stdin
            && !req.stderr_separate
            // A job's log is one stream; a stdout-only lift needs stdout apart.
            && !plan.normalized.stdout_only
            && plan.mode.mode == Mode::Print
            && Duration::from_secs(plan.timeout.effective) > after
            && plan.cwd.is_ok()
            && refusal(&plan, &mut g).is_ok();
        if !ok {
            return None;
        }
        let Sinks { out, .. } = sinks(&profile.profile, &plan, req);
        let mut base = base_result(req, &plan);
        if let Ok(cwd) = &plan.cwd {
            base.cwd = cwd.display().to_string();
        }
        Some(JobRun {
            plan,
            base,
            sink: out,
            notices: g.notices,
            started: Instant::now(),
        })
    }

    /// Take what the job printed; `on_output` gets live text, as a run's events.
    pub fn push(&mut self, bytes: &[u8], on_output: &mut dyn FnMut(&str)) {
        self.sink.push(bytes);
        if let Some(t) = self.sink.take_pending() {
            on_output(&self.plan.secrets.mask(&t));
        }
    }

    /// The job ended (or was stopped) within the wait: the run's result. `tmpdir` is
    /// the private TMPDIR the job's supervisor made for it, when sandboxed.
    pub fn finish(self, end: End, profile: &LoadedProfile, tmpdir: Option<PathBuf>) -> RunResult {
        self.shaped(end, end, profile, tmpdir)
    }

    /// The result shaped for `end`, with the notices the job's sandbox gives for how
    /// it ended (`ended`) and what it printed.
    fn shaped(
        self,
        end: End,
        ended: End,
        profile: &LoadedProfile,
        tmpdir: Option<PathBuf>,
    ) -> RunResult {
        let secrets = self.plan.secrets.clone();
        let artifact_dir = self.plan.artifact_dir.clone();
        let cwd = PathBuf::from(&self.base.cwd);
        let retained = self.sink.finish();
        let mut warnings = self.plan.rule_warnings.clone();
        let mut notices = self.notices;
        // The job's sandbox, as its supervisor prepared it (the same policy, paths
        // and TMPDIR): the same `sandbox` object and notices as the run's.
        let confined = sandbox::described(&self.plan, &cwd, tmpdir.as_deref());
        if let Ok(sandbox) = &confined {
            warnings.extend(sandbox.warnings());
            notices.extend(sandbox.denial_notice(&ended, &retained.text, &cwd));
        }
        let outcome = ExecOutcome {
            end,
            background_killed: vec![],
        };
        let mut r = shape(
            self.base,
            self.plan,
            outcome,
            retained,
            notices,
            warnings,
            self.started,
            cwd,
        );
        r.sandbox = confined.ok().and_then(|s| s.info());
        r.mask_secrets(&secrets);
        if let Some(dir) = artifact_dir
            && let Some(a) = &r.artifact
        {
            remember_artifact(&profile.profile, dir, a.id, r.command.clone(), &r);
        }
        r
    }

    /// The job still runs after `after`: the output so far, and where it goes on.
    pub fn handed_off(
        self,
        after: Duration,
        job: crate::result::ContinuedAs,
        profile: &LoadedProfile,
        tmpdir: Option<PathBuf>,
    ) -> RunResult {
        let line = format!(
            "[Still running after {}; continues as {} — read it with job_output (cursor {}), stop it with job_stop]",
            count(after.as_secs(), "second"),
            job.url,
            job.cursor
        );
        // It has not ended: a write its sandbox refused is said as for a run that has
        // not succeeded (yet), not hidden as for one that did.
        let mut r = self.shaped(End::Exited(0), End::MissingStatus, profile, tmpdir);
        r.exit_code = None;
        r.agentbash_exit = 0;
        let rest = match r.text.strip_prefix("(no output)") {
            Some(rest) => rest.to_string(),
            None => format!("\n{}", r.text),
        };
        r.text = format!("{line}{rest}");
        r.notices.insert(0, line.clone());
        r.annotation = Some(line);
        r.job = Some(job);
        r
    }
}
