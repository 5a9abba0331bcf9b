//! Renderers: text for people, JSON/NDJSON for programs. Each receives the
//! run's events as they happen and the final result once.

pub mod json;
pub mod prompt;
pub mod text;

use crate::pipeline::Event;
use crate::result::RunResult;

pub trait Renderer {
    /// An event of the run; [`Event::Start`] is handed to [`Renderer::start`].
    fn event(&mut self, event: Event<'_>);
    /// The run starts (from the plan, or from a remote target's `start` event).
    fn start(&mut self, start: &Start);
    fn finish(&mut self, result: &RunResult);
}

/// What a renderer shows as a run starts. Taken from the plan of a local run, or
/// from the `start` event a remote target sends (docs/PROTOCOL.md), which carries
/// the serialized fields (secrets already masked).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Start {
    pub command: String,
    pub normalized_command: String,
    pub profile: String,
    pub cwd: Option<String>,
    pub mode: crate::request::Mode,
    pub timeout_s: u64,
    /// What only a local plan knows (`None` for a remote run).
    #[serde(skip)]
    pub local: Option<LocalStart>,
}

/// The local plan's part of [`Start`].
#[derive(Debug, Clone)]
pub struct LocalStart {
    /// The working directory itself (unmasked), to tell whether it is the invoking one.
    pub cwd: Option<String>,
    /// Nothing refused the plan (a run that starts always has this).
    pub runs: bool,
}

impl Start {
    pub fn of(plan: &crate::pipeline::Plan) -> Start {
        Start {
            command: plan.shown_command.clone(),
            normalized_command: plan.shown_normalized.clone(),
            profile: plan.profile_name.clone(),
            cwd: plan.shown_cwd.clone(),
            mode: plan.mode.mode,
            timeout_s: plan.timeout.effective,
            local: Some(LocalStart {
                cwd: plan.cwd.as_ref().ok().map(|c| c.display().to_string()),
                runs: plan.usage_error.is_none()
                    && plan.guard.refused.is_none()
                    && plan.approval.decision != crate::config::approval::Decision::Deny
                    && plan
                        .interception
                        .as_ref()
                        .is_none_or(|i| i.blocked.is_none())
                    && plan.cwd.is_ok(),
            }),
        }
    }

    /// The working directory to compare with the invoking one.
    fn cwd_path(&self) -> Option<&str> {
        match &self.local {
            Some(l) => l.cwd.as_deref(),
            None => self.cwd.as_deref(),
        }
    }

    /// Whether the run goes ahead (a remote `start` event is only sent for one that does).
    fn runs(&self) -> bool {
        self.local.as_ref().is_none_or(|l| l.runs)
    }
}

/// `--color` resolution: `auto` honours `NO_COLOR`, then `CLICOLOR_FORCE`, then
/// GitHub Actions (its job log renders ANSI colour although stdout is a pipe), then
/// whether stdout is a terminal.
/// When to colour (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Color {
    #[default]
    Auto,
    Always,
    Never,
}

pub fn color_enabled(arg: Color, is_tty: bool) -> bool {
    match arg {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty() && v != "0");
            let github = std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true");
            if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                false
            } else {
                set("CLICOLOR_FORCE") || github || is_tty
            }
        }
    }
}

/// Write to stdout, treating a closed pipe as "nobody is listening" rather than an error.
pub fn out(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// [`out`] for text that quotes the caller or a file (a command, a path, a rule pack's
/// words): its control characters are shown escaped, its lines kept.
pub fn out_escaped(s: &str) {
    out(&crate::display::escape_controls_multiline(s));
}

/// `agentbash: <message>` on stderr. Messages quote paths, names and commands, so
/// their control characters are shown escaped.
pub fn report_error(message: impl std::fmt::Display) {
    err(&format!(
        "agentbash: {}\n",
        crate::display::escape_controls_multiline(&message.to_string())
    ));
}

pub fn err(s: &str) {
    use std::io::Write;
    let mut o = std::io::stderr().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}
