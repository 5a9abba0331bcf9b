//! Deciding a run: [`plan`] makes every decision about a request without side effects
//! (what `explain` shows, and what [`super::execute`] carries out): validate → mode →
//! normalize → intercept → timeout → env → shell → state → cwd → guard → approval →
//! artifact dir and secrets. Kept apart from carrying a run out so that a decision can
//! be read, tested and shown without running anything.

use super::intercept::{self, Interception};
use super::normalize::{self, Normalized};
use super::stages::{self, ModeDecision, Timeout};
use super::{approval, guard, sandbox, terminal};
use crate::config::profile::{LoadedProfile, Packs};
use crate::output::artifact;
use crate::output::redact::Secrets;
use crate::paths::{CwdError, resolve_cwd};
use crate::request::Mode;
use crate::request::RunRequest;
use crate::result::{BlockKind, Blocked};
use crate::shell::env::BuiltEnv;
use crate::shell::resolve::ShellError;
use std::path::PathBuf;

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
    /// The approval policy's decision for each simple command of the line.
    pub approval: approval::ApprovalPlan,
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
    /// How the command runs once started.
    pub execution: Execution,
}

/// How the command runs once started: every number and policy the stages that carry
/// the run out, the executors and the sink get, decided here with the rest, so that
/// `explain` shows them and nothing after planning reads the profile.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Execution {
    /// The shell as the profile names it (`shell.path`) and its arguments before the
    /// script (`shell.args`).
    pub shell_path: String,
    pub shell_args: Vec<String>,
    /// `shell.prefix`, already in front of the script (it tells live shells apart).
    pub shell_prefix: String,
    /// The terminal of PTY mode (`[pty] cols`, `rows`) and the key that stops the
    /// command from it (`pty.kill_key`).
    pub pty_cols: u16,
    pub pty_rows: u16,
    pub kill_key: String,
    /// `[limits]`, set in the child before exec (0: none).
    pub limits: crate::config::schema::LimitsCfg,
    /// TERM, then this long, then KILL (`timeout.kill_grace_ms`).
    pub kill_grace_ms: u64,
    /// What happens to processes that outlive the shell (`process.background`).
    pub background: crate::config::schema::Background,
    /// A run that neither prints nor uses CPU this long is stopped (`jobs.idle_timeout`,
    /// only when the caller set no timeout).
    pub idle_timeout_s: Option<u64>,
    /// What the output sink keeps (`output.max_bytes`, `head_bytes`, `max_columns`).
    pub max_bytes: usize,
    pub head_bytes: usize,
    pub max_columns: usize,
    /// The artifact store's retention (`[artifacts]`).
    pub artifacts: crate::config::schema::ArtifactsCfg,
    /// Per-workspace package caches under the sandbox (`env.sandbox_caches`).
    pub sandbox_caches: bool,
    /// Variables the profile or the caller set by name: a sandbox cache never
    /// replaces them.
    pub explicit_env: Vec<String>,
    /// The job policy: a job started for this request, and a server's hand-off of a
    /// long foreground run (`[jobs]`).
    pub jobs: crate::config::schema::JobsCfg,
}

impl Execution {
    fn decide(req: &RunRequest, p: &crate::config::profile::Profile) -> Execution {
        let mut explicit_env: Vec<String> = p
            .env
            .set
            .keys()
            .cloned()
            .chain(req.env.iter().map(|(k, _)| k.clone()))
            .collect();
        explicit_env.sort_unstable();
        explicit_env.dedup();
        Execution {
            shell_path: p.shell.path.clone(),
            shell_args: p.shell.args.clone(),
            shell_prefix: p.shell.prefix.clone(),
            pty_cols: p.pty.cols,
            pty_rows: p.pty.rows,
            kill_key: p.pty.kill_key.clone(),
            limits: p.limits.clone(),
            kill_grace_ms: p.timeout.kill_grace_ms,
            background: p.process.background,
            idle_timeout_s: super::job::idle_limit(req, p).map(|d| d.as_secs()),
            max_bytes: p.output.max_bytes,
            head_bytes: p.output.head_bytes,
            max_columns: p.output.max_columns,
            artifacts: p.artifacts.clone(),
            sandbox_caches: p.env.sandbox_caches,
            explicit_env,
            jobs: p.jobs.clone(),
        }
    }

    /// The limits as the spawner takes them.
    pub fn process_limits(&self) -> crate::process::Limits {
        crate::process::Limits {
            address_space_mb: self.limits.address_space_mb,
            file_size_mb: self.limits.file_size_mb,
            processes: self.limits.processes,
            cpu_seconds: self.limits.cpu_seconds,
        }
    }

    /// `jobs.idle_timeout` as a limit for the run, when it applies.
    pub fn idle_limit(&self) -> Option<std::time::Duration> {
        self.idle_timeout_s.map(std::time::Duration::from_secs)
    }
}

impl Plan {
    /// The argv that would be spawned.
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec![
            self.shell
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| self.execution.shell_path.clone()),
        ];
        v.extend(self.execution.shell_args.iter().cloned());
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
pub(super) fn plan_with(req: &RunRequest, profile: &LoadedProfile, trace_all: bool) -> Plan {
    let p = &profile.profile;
    // A library caller may skip the validation (session names become paths).
    let usage_error = req.validate().err().map(|e| e.to_string());
    let mode = decide_mode(req, p);
    let normalized = normalize_for(req, p, &mode);
    let Intercepted {
        interception,
        tools,
        rule_warnings,
        rules_error,
    } = intercept_stage(req, profile, &normalized, trace_all);
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
    let (guard, approval) = judge(req, profile, &env, &state, &cwd);
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
        approval,
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
        execution: Execution::decide(req, p),
    }
}

/// The mode, decided before the env (which differs for a PTY) and before the lift
/// (which a terminal limits: it has one stream where stdout and stderr meet). A
/// program that needs a terminal gets agentbash's, when there is one (`git commit`
/// would not: the hardened editor is `true` in a terminal too).
fn decide_mode(req: &RunRequest, p: &crate::config::profile::Profile) -> ModeDecision {
    let needs_terminal = (req.stdin_tty && req.stdout_tty)
        .then(|| terminal::interactive_program(&req.command))
        .flatten()
        .filter(|i| *i != terminal::Interactive::GitCommit);
    stages::decide_mode(
        req.mode,
        p.pty.mode,
        std::env::var("AGENTBASH_NO_PTY").as_deref() == Ok("1"),
        req.stdin_tty,
        req.stdout_tty,
        needs_terminal.as_ref().map(terminal::Interactive::program),
    )
}

/// Normalize: the `| head`/`| tail` lift, kept off in a terminal.
fn normalize_for(
    req: &RunRequest,
    p: &crate::config::profile::Profile,
    mode: &ModeDecision,
) -> Normalized {
    let normalized =
        normalize::normalize(&req.command, p.output.strip_head_tail, req.head, req.tail);
    if mode.mode != Mode::Pty {
        return normalized;
    }
    normalized.keep_stdout_pipe(
        &req.command,
        "the pipe receives stdout only, and in a terminal (PTY mode) stdout and stderr are one stream, so a view of stdout alone cannot be kept: it runs as written",
    )
}

/// What the interceptor stage decided.
struct Intercepted {
    interception: Option<Interception>,
    tools: Vec<String>,
    rule_warnings: Vec<String>,
    rules_error: Option<crate::config::profile::PackError>,
}

/// Intercept: the rule packs, for the caller's tools.
fn intercept_stage(
    req: &RunRequest,
    profile: &LoadedProfile,
    normalized: &Normalized,
    trace_all: bool,
) -> Intercepted {
    let p = &profile.profile;
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
    Intercepted {
        interception,
        tools,
        rule_warnings,
        rules_error,
    }
}

/// The guard and the approval policy, on one walk of the command in the environment
/// the command will get (the session's exports included).
fn judge(
    req: &RunRequest,
    profile: &LoadedProfile,
    env: &BuiltEnv,
    state: &crate::shell::state::StatePlan,
    cwd: &Result<PathBuf, CwdError>,
) -> (guard::GuardPlan, approval::ApprovalPlan) {
    let p = &profile.profile;
    let base = state.base_dir(&req.invoking_dir);
    let walk_env = walk_env(&env.vars, state.session.as_ref());
    let ctx = guard::Context {
        env: &walk_env,
        cwd: cwd.as_deref().unwrap_or(&base),
        protected: &p.guard.protected,
    };
    // A session's saved functions are walked first, so that a call to one is judged by
    // its body; its aliases too, each read as a function that runs its text with the
    // call's arguments (those that do not parse stay unseen).
    let (prelude, unread_aliases) = match state
        .session
        .as_ref()
        .and_then(|s| s.saved_definitions.as_deref())
    {
        Some(defs) => {
            let (as_functions, unread) = aliases_as_functions(defs, &ctx);
            (Some(format!("{defs}\n{as_functions}")), unread)
        }
        None => (None, Vec::new()),
    };
    let walk = (p.guard.enabled || !p.approval.is_inert()).then(|| match &prelude {
        Some(prelude) => guard::walk_after(prelude, &req.command, &ctx),
        None => guard::walk(&req.command, &ctx),
    });
    let guard = match &walk {
        Some(walk) if p.guard.enabled => guard::GuardPlan::decide_walk(walk, &ctx, |lines| {
            let packs = profile.rule_packs(Packs::Guard);
            packs.might_match(lines).then(|| packs.compiled())
        }),
        _ => guard::GuardPlan::off(),
    };
    let approval = match &walk {
        Some(walk) if !p.approval.is_inert() => {
            // Functions whose bodies were walked are judged by them; aliases (and
            // functions whose bodies could not be read) stay unseen.
            let (approved, definitions) = state.session.as_ref().map_or((&[][..], &[][..]), |s| {
                let names = if s.saved_definitions.is_some() {
                    &unread_aliases[..]
                } else {
                    &s.definitions[..]
                };
                (&s.approved[..], names)
            });
            approval::Policy::for_session(&p.approval, approved, definitions).judge(walk)
        }
        _ => approval::ApprovalPlan::default(),
    };
    (guard, approval)
}

/// The aliases `defs` (a session's saved definitions) makes, as functions for a walk:
/// `alias ll='ls -l'` is read as `ll() { ls -l "$@"; }`, which is what the alias runs
/// for a judge. The names of those whose text does not parse on its own are returned:
/// they stay unseen.
fn aliases_as_functions(defs: &str, ctx: &guard::Context<'_>) -> (String, Vec<String>) {
    let (mut functions, mut unread) = (String::new(), Vec::new());
    for c in guard::walk(defs, ctx).commands {
        if c.name() != Some("alias") || !c.wrappers.is_empty() {
            continue;
        }
        for field in c.argv.iter().skip(1) {
            let Some((name, text)) = field.text.split_once('=') else {
                continue;
            };
            let plain_name = !name.is_empty()
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_-.".contains(ch));
            if field.known() && plain_name && crate::shell::parse::parse(text).is_ok() {
                functions.push_str(&format!("{name}() {{\n{text} \"$@\"\n}}\n"));
            } else if !name.is_empty() {
                unread.push(name.to_string());
            }
        }
    }
    (functions, unread)
}

/// The environment a walk of the command resolves variables in: the run's, with
/// what a session exported and unset applied, as the command will see it.
fn walk_env<'a>(
    env: &'a std::collections::BTreeMap<String, String>,
    session: Option<&crate::shell::state::SessionPlan>,
) -> std::borrow::Cow<'a, std::collections::BTreeMap<String, String>> {
    let Some(s) = session.filter(|s| !s.exported.is_empty() || !s.unset.is_empty()) else {
        return std::borrow::Cow::Borrowed(env);
    };
    let mut env = env.clone();
    for k in &s.unset {
        env.remove(k);
    }
    env.extend(s.exported.iter().map(|(k, v)| (k.clone(), v.clone())));
    std::borrow::Cow::Owned(env)
}

impl Plan {
    /// What refuses this command, and the text the caller is shown: the guard first
    /// (a structural check or a `deny` rule of `guard.rules`), then a `deny` of the
    /// approval policy, then the interceptor (a `deny` rule there is the guard's kind
    /// too: it refuses whatever the tools).
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
        if let Some(r) =
            self.approval
                .denied(&self.shown_command, &self.profile_name, &self.secrets)
        {
            return Some((r.blocked, r.text));
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

/// [`plan`] as a run makes it (no interception trace for rules that cannot apply).
pub fn plan_run(req: &RunRequest, profile: &LoadedProfile) -> Plan {
    plan_with(req, profile, false)
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
