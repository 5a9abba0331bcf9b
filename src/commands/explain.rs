//! `agentbash explain`: every decision of a run, nothing run.

use crate::cli::FormatArg;
use crate::config::profile::LoadedProfile;
use crate::display::escape_controls;
use crate::output::redact::Secrets;
use crate::pipeline::guard::GuardPlan;
use crate::pipeline::intercept::Interception;
use crate::pipeline::normalize::Lift;
use crate::pipeline::stages::ModeDecision;
use crate::pipeline::{Plan, RunRequest, plan};
use crate::render::out;
use crate::shell::env::EnvSource;
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything `explain` shows: the plan's decisions as one typed, serializable value.
/// `--format json` prints it as it is; the text form is rendered from the same fields.
#[derive(Serialize)]
pub struct Explanation<'a> {
    pub command: &'a str,
    pub profile: ProfileShown<'a>,
    pub normalize: NormalizeShown<'a>,
    pub guard: &'a GuardPlan,
    /// The approval policy's decision for each simple command (empty when the
    /// profile has no `[approval]` rules and allows by default).
    pub approval: &'a [crate::pipeline::approval::Judged],
    pub intercept: InterceptShown<'a>,
    /// What would refuse the command (`null`: it would run): the shape of a run's
    /// `blocked`.
    pub blocked: Option<crate::result::Blocked>,
    pub cwd: Checked,
    pub timeout: TimeoutShown<'a>,
    pub mode: &'a ModeDecision,
    pub env_changes: &'a BTreeMap<String, EnvSource>,
    pub redact: &'a [String],
    pub shell: Checked,
    pub snapshot: String,
    pub session: Option<SessionShown>,
    pub sandbox: SandboxShown<'a>,
    /// How the command runs once started (limits, grace, terminal, output budgets,
    /// job policy): the plan's, shown whole.
    pub execution: &'a crate::pipeline::Execution,
    pub argv: Vec<String>,
    pub artifact_dir: Option<String>,
    pub usage_error: Option<&'a str>,
    /// The approval stage as `explain`'s text shows it.
    #[serde(skip)]
    approval_lines: Vec<String>,
}

#[derive(Serialize)]
pub struct ProfileShown<'a> {
    pub name: &'a str,
    pub origin: String,
    pub warnings: &'a [String],
}

#[derive(Serialize)]
pub struct NormalizeShown<'a> {
    pub command: &'a str,
    pub stripped: Option<&'a str>,
    pub head: Option<usize>,
    pub tail: Option<usize>,
    pub stop_after: Option<usize>,
    pub lift: Option<&'a Lift>,
    /// The lifted pipe receives stdout only: the limits view stdout, stderr is shown.
    pub stdout_only: bool,
}

#[derive(Serialize)]
pub struct InterceptShown<'a> {
    pub enabled: bool,
    pub tools: &'a [String],
    pub result: Option<&'a Interception>,
    pub warnings: &'a [String],
    pub error: Option<String>,
}

#[derive(Serialize)]
pub struct TimeoutShown<'a> {
    pub requested_s: i64,
    pub effective_s: u64,
    pub notice: Option<&'a str>,
}

#[derive(Serialize)]
pub struct SessionShown {
    pub name: String,
    pub dir: String,
    pub cwd: Option<String>,
}

/// The sandbox as asked, and the engine this machine would enforce it with.
#[derive(Serialize)]
pub struct SandboxShown<'a> {
    pub mode: &'static str,
    pub engine_asked: crate::sandbox::Engine,
    pub engine: Option<&'static str>,
    pub landlock: Option<bool>,
    pub workspace: Option<String>,
    pub writable: Vec<String>,
    pub deny_read: Vec<String>,
    /// `true`, `false`, or the allowlist as configured.
    pub network: &'a crate::sandbox::Network,
    pub network_allow_local: bool,
    pub required: bool,
    pub allow_override: bool,
    pub weaker: Option<String>,
    pub notes: Vec<String>,
    pub error: Option<String>,
    #[serde(skip)]
    policy: &'a crate::sandbox::Policy,
}

impl<'a> SandboxShown<'a> {
    fn of(plan: &'a Plan) -> Self {
        use crate::pipeline::sandbox::{describe, mode_name};
        let policy = &plan.sandbox;
        let shown = |paths: &[std::path::PathBuf]| -> Vec<String> {
            paths.iter().map(|p| p.display().to_string()).collect()
        };
        let (info, error) = match plan.cwd.as_ref().ok().map(|cwd| describe(policy, cwd)) {
            Some(Ok(info)) => (info, None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        let workspace = match (&info, policy.mode) {
            (Some(i), _) => i.workspace.clone(),
            (None, crate::sandbox::Mode::WorkspaceWrite) => policy
                .workspace
                .as_ref()
                .map(|w| w.display().to_string())
                .or_else(|| plan.shown_cwd.clone()),
            _ => None,
        };
        SandboxShown {
            mode: mode_name(policy.mode),
            engine_asked: policy.engine,
            engine: info.as_ref().map(|i| i.engine),
            landlock: info.as_ref().map(|i| i.landlock),
            workspace,
            writable: shown(&policy.writable),
            deny_read: shown(&policy.deny_read),
            network: &policy.network,
            network_allow_local: policy.network_allow_local,
            required: policy.required,
            allow_override: policy.allow_override,
            weaker: info.as_ref().and_then(|i| i.weaker.clone()),
            notes: info.map(|i| i.notes).unwrap_or_default(),
            error,
            policy,
        }
    }

    fn is_off(&self) -> bool {
        self.policy.mode == crate::sandbox::Mode::Off
    }
}

/// A decision that either found its value or says why not.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Checked {
    Ok(String),
    Error(String),
}

impl Checked {
    fn of<E: ToString>(r: Result<&std::path::PathBuf, &E>) -> Self {
        match r {
            Ok(p) => Checked::Ok(p.display().to_string()),
            Err(e) => Checked::Error(e.to_string()),
        }
    }

    fn text(&self) -> &str {
        match self {
            Checked::Ok(s) | Checked::Error(s) => s,
        }
    }
}

impl<'a> Explanation<'a> {
    pub fn of(plan: &'a Plan, profile: &'a LoadedProfile) -> Self {
        Explanation {
            command: &plan.shown_command,
            profile: ProfileShown {
                name: &profile.name,
                origin: profile.origin().to_string(),
                warnings: &profile.warnings,
            },
            normalize: NormalizeShown {
                command: &plan.shown_normalized,
                stripped: plan.normalized.stripped.as_deref(),
                head: plan.normalized.head,
                tail: plan.normalized.tail,
                stop_after: plan.normalized.stop_after,
                lift: plan.normalized.lift.as_ref(),
                stdout_only: plan.normalized.stdout_only,
            },
            guard: &plan.guard,
            approval: &plan.approval.judged,
            intercept: InterceptShown {
                enabled: plan.interception.is_some(),
                tools: &plan.tools,
                result: plan.interception.as_ref(),
                warnings: &plan.rule_warnings,
                error: plan.rules_error.as_ref().map(ToString::to_string),
            },
            blocked: plan.blocked().map(|(b, _)| b),
            cwd: Checked::of(plan.cwd.as_ref()),
            timeout: TimeoutShown {
                requested_s: plan.timeout.requested,
                effective_s: plan.timeout.effective,
                notice: plan.timeout.notice.as_deref(),
            },
            mode: &plan.mode,
            env_changes: &plan.env.changes,
            redact: plan.secrets.names(),
            shell: Checked::of(plan.shell.as_ref()),
            snapshot: plan.state.snapshot.describe(),
            session: plan.state.session.as_ref().map(|s| SessionShown {
                name: s.name.clone(),
                dir: s.dir.display().to_string(),
                cwd: s.cwd.as_ref().map(|c| c.display().to_string()),
            }),
            sandbox: SandboxShown::of(plan),
            execution: &plan.execution,
            argv: plan.argv(),
            artifact_dir: plan
                .artifact_dir
                .as_ref()
                .map(|d| d.path.display().to_string()),
            usage_error: plan.usage_error.as_deref(),
            approval_lines: plan.approval.describe(),
        }
    }

    /// The JSON form, every string masked (the argv and the interception trace
    /// included).
    pub fn to_json(&self, secrets: &Secrets) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        secrets.mask_json(&mut v);
        v
    }

    /// The text form: one decision per line, every value masked and its controls
    /// escaped.
    pub fn to_text(&self, secrets: &Secrets) -> String {
        let show = |s: &str| escape_controls(&secrets.mask(s)).into_owned();
        let opt = |n: Option<usize>| n.map_or("-".to_string(), |n| n.to_string());
        let list = |items: &[String]| {
            let masked: Vec<String> = items.iter().map(|s| secrets.mask(s).into_owned()).collect();
            escape_controls(&serde_json::to_string(&masked).unwrap_or_default()).into_owned()
        };
        let mut t = String::new();
        // A label pads its value into the column; a line without one is as given.
        let mut line = |label: &str, value: String| {
            if label.is_empty() {
                t.push_str(&format!("{value}\n"));
            } else {
                t.push_str(&format!("{label:<12}{value}\n"));
            }
        };
        self.head_text(&mut line, &show, &opt);
        self.intercept_text(&mut line, &show, &list);
        self.run_text(&mut line, &show);
        self.sandbox_text(&mut line, &show);
        self.tail_text(&mut line, &show, &list);
        t
    }

    /// The command, the profile it ran under, its normalized form, the guard and approval.
    fn head_text(
        &self,
        line: &mut dyn FnMut(&str, String),
        show: &dyn Fn(&str) -> String,
        opt: &dyn Fn(Option<usize>) -> String,
    ) {
        line("command", show(self.command));
        line(
            "profile",
            format!(
                "{} ({})",
                show(self.profile.name),
                show(&self.profile.origin)
            ),
        );
        for w in self.profile.warnings {
            line("  warning", show(w));
        }
        let n = &self.normalize;
        line(
            "normalize",
            format!(
                "{}  (stripped: {}, head: {}, tail: {})",
                show(n.command),
                n.stripped.map_or("-".into(), show),
                opt(n.head),
                opt(n.tail)
            ),
        );
        if let Some(lift) = n.lift {
            line("lift", lift.to_string());
        }
        for (i, g) in self.guard.describe().iter().enumerate() {
            line(if i == 0 { "guard" } else { "" }, show(g));
        }
        for (i, a) in self.approval_lines.iter().enumerate() {
            line(if i == 0 { "approval" } else { "" }, show(a));
        }
    }

    /// The interceptor: the caller's tools, each candidate checked and the verdict.
    fn intercept_text(
        &self,
        mut line: &mut dyn FnMut(&str, String),
        show: &dyn Fn(&str) -> String,
        list: &dyn Fn(&[String]) -> String,
    ) {
        let i = &self.intercept;
        if i.enabled {
            line("intercept", format!("tools: {}", list(i.tools)));
            if let Some(result) = i.result {
                for c in &result.candidates {
                    let why = match (&c.matched, &c.skipped) {
                        (Some(rule), _) => format!(" (rule {})", show(rule)),
                        (None, Some(skip)) => {
                            format!(" ({})", json_word(skip).replace('_', " "))
                        }
                        _ => String::new(),
                    };
                    t_push(
                        &mut line,
                        format!(
                            "  [{}] {} → {}{why}",
                            json_word(&c.kind),
                            show(&c.text),
                            json_word(&c.verdict)
                        ),
                    );
                    for m in c.matches.iter().filter(|m| !m.applies) {
                        t_push(
                            &mut line,
                            format!(
                                "      rule {} matches but tool `{}` is not among the caller's tools",
                                show(&m.rule),
                                show(&m.tool)
                            ),
                        );
                    }
                }
                if let Some(o) = &result.opaque {
                    t_push(
                        &mut line,
                        format!(
                            "  (checked as a whole only: {})",
                            json_word(o).replace('_', " ")
                        ),
                    );
                }
            }
            match i.result.and_then(|r| r.blocked.as_ref()) {
                Some(b) if b.action == crate::config::rules::Action::Deny => line(
                    "  verdict",
                    format!(
                        "REFUSE by deny rule {} (whatever the caller's tools)",
                        show(&b.rule)
                    ),
                ),
                Some(b) => line(
                    "  verdict",
                    format!("BLOCK by rule {} (tool {})", show(&b.rule), show(&b.tool)),
                ),
                None => line("  verdict", "run".into()),
            }
        } else {
            line("intercept", "disabled".into());
        }
        for w in i.warnings {
            line("  warning", show(w));
        }
    }

    /// Where and how the command runs: cwd, timeout, mode, env, redaction, shell,
    /// snapshot and session.
    fn run_text(&self, mut line: &mut dyn FnMut(&str, String), show: &dyn Fn(&str) -> String) {
        line("cwd", show(self.cwd.text()));
        line(
            "timeout",
            format!(
                "{}s (requested {}s){}",
                self.timeout.effective_s,
                self.timeout.requested_s,
                self.timeout
                    .notice
                    .map(|n| format!(" — {}", show(n)))
                    .unwrap_or_default()
            ),
        );
        line("mode", json_word(&self.mode.mode));
        for r in &self.mode.reasons {
            line("  because", show(r));
        }
        line("env", "(keys only; values are not shown)".into());
        for (k, src) in self.env_changes {
            t_push(
                &mut line,
                format!("  {:<32} {}", escape_controls(k), json_word(src)),
            );
        }
        if !self.redact.is_empty() {
            let names: Vec<String> = self.redact.iter().map(|n| show(n)).collect();
            line("redact", format!("{} (values masked)", names.join(" ")));
        }
        line("shell", show(self.shell.text()));
        line("snapshot", show(&self.snapshot));
        match &self.session {
            Some(s) => line(
                "session",
                format!(
                    "{} ({}), {}",
                    show(&s.name),
                    show(&s.dir),
                    match &s.cwd {
                        Some(c) => format!("saved cwd {}", show(c)),
                        None => "new: created by this run".into(),
                    }
                ),
            ),
            None => line("session", "none".into()),
        }
    }

    /// The sandbox: off, or its engine, network and paths.
    fn sandbox_text(&self, line: &mut dyn FnMut(&str, String), show: &dyn Fn(&str) -> String) {
        let sb = &self.sandbox;
        if sb.is_off() {
            line("sandbox", "off".into());
        } else {
            let engine = match (sb.engine, sb.landlock) {
                (Some("namespaces"), Some(true)) => "namespaces + landlock".to_string(),
                (Some(e), _) => e.to_string(),
                (None, _) => "-".to_string(),
            };
            line(
                "sandbox",
                format!(
                    "{}, engine {engine} (asked: {}), network {}{}",
                    sb.mode,
                    json_word(&sb.engine_asked),
                    match sb.network {
                        crate::sandbox::Network::On => "on",
                        crate::sandbox::Network::Off => "off",
                        crate::sandbox::Network::Allow(_) =>
                            "allowlist (through agentbash's proxy)",
                    },
                    if sb.required { ", required" } else { "" },
                ),
            );
            let words = |items: &[String]| {
                if items.is_empty() {
                    "-".to_string()
                } else {
                    items.iter().map(|s| show(s)).collect::<Vec<_>>().join(" ")
                }
            };
            line(
                "  workspace",
                sb.workspace.as_deref().map_or("-".into(), show),
            );
            line(
                "  writable",
                format!("{} (and a private TMPDIR)", words(&sb.writable)),
            );
            line("  deny_read", words(&sb.deny_read));
            if let Some(list) = sb.network.allowlist() {
                let entries: Vec<String> = list.entries().into_iter().map(str::to_owned).collect();
                line(
                    "  network",
                    format!(
                        "{}; local addresses {}",
                        words(&entries),
                        if sb.network_allow_local {
                            "allowed"
                        } else {
                            "refused"
                        }
                    ),
                );
            }
            for w in sb.weaker.iter().chain(sb.error.iter()) {
                line("  warning", show(w));
            }
            for n in &sb.notes {
                line("  note", show(n));
            }
        }
    }

    /// The execution fields, the argv, the artifact directory and any error.
    fn tail_text(
        &self,
        line: &mut dyn FnMut(&str, String),
        show: &dyn Fn(&str) -> String,
        list: &dyn Fn(&[String]) -> String,
    ) {
        line("execution", "(every field, as in --format json)".into());
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(self.execution) {
            for (key, value) in &fields {
                line("", format!("  {key:<16}{}", show(&field_text(value))));
            }
        }
        line("argv", list(&self.argv));
        line(
            "artifacts",
            self.artifact_dir.as_deref().map_or("-".into(), show),
        );
        if let Some(u) = self.usage_error {
            line("error", show(u));
        }
        if let Some(e) = self.intercept.error.as_deref() {
            line("error", show(e));
        }
    }
}

/// One field of the execution plan as text: a scalar as it is, `-` for none, a list
/// as JSON, a table as `key=value` pairs.
fn field_text(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "-".into(),
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", field_text(v)))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// A line with no label of its own.
fn t_push(line: &mut impl FnMut(&str, String), text: String) {
    line("", text);
}

/// How a unit enum variant is spelled in the JSON form (`"pass"`, `"segment"`).
fn json_word(v: &impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Build the explanation as JSON (the text form is rendered from the same value).
pub fn explanation(req: &RunRequest, profile: &LoadedProfile) -> serde_json::Value {
    let plan = plan(req, profile);
    Explanation::of(&plan, profile).to_json(&plan.secrets)
}

/// `explain`, and with `--target` where the command would go: the plan shown is this
/// side's (its guard and interceptor judge the command first); the target's own
/// profile decides the rest there, and nothing is sent to find out.
pub fn explain(
    req: &RunRequest,
    profile: &LoadedProfile,
    format: FormatArg,
    target: Option<&crate::remote::Target>,
) -> i32 {
    let plan = plan(req, profile);
    let explanation = Explanation::of(&plan, profile);
    // A rule pack that cannot be loaded would stop the run: so it fails here too.
    let code = if plan.rules_error.is_some()
        || plan.guard.error.is_some()
        || explanation.sandbox.error.is_some()
    {
        crate::exit::FAILURE
    } else {
        0
    };
    if format == FormatArg::Text {
        let mut text = explanation.to_text(&plan.secrets);
        if let Some(t) = target {
            text.push_str(&format!(
                "target      {}: the command runs there, through `{}`; its profile decides the cwd, timeout, sandbox and the rest (after this side's guard and interceptor)\n",
                escape_controls(&t.name),
                escape_controls(&t.shown_transport())
            ));
        }
        out(&text);
    } else {
        let mut v = explanation.to_json(&plan.secrets);
        if let (Some(t), Some(o)) = (target, v.as_object_mut()) {
            o.insert(
                "target".into(),
                serde_json::json!({"name": t.name, "transport": t.transport}),
            );
        }
        out(&format!("{v}\n"));
    }
    code
}
