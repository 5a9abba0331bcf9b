//! What a caller asks for: [`RunRequest`], and [`RunRequest::validate`], the one check
//! of a request's own fields that the CLI, rpc and mcp all answer with.

use std::path::PathBuf;

/// What a caller asks for (the library face of `agentbash run`'s options).
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub command: String,
    /// Relative `cwd`s resolve against this (the invoking directory or session cwd).
    pub invoking_dir: PathBuf,
    pub cwd: Option<PathBuf>,
    pub timeout: Option<i64>,
    pub head: Option<usize>,
    pub tail: Option<usize>,
    pub mode: ModeChoice,
    pub tools: Option<Vec<String>>,
    pub no_intercept: bool,
    pub env: Vec<(String, String)>,
    pub session: Option<String>,
    /// Give the command our stdin instead of the null device.
    pub stdin: bool,
    pub stdin_tty: bool,
    pub stdout_tty: bool,
    /// Deliver `Event::Output` while the command runs (off saves copying when
    /// nobody watches live).
    pub live_output: bool,
    /// The caller shows only the last lines of the output (a terminal's collapsed
    /// preview): the artifact is kept whenever that hides any, cut or not.
    pub preview: Option<Preview>,
    /// The command's stderr on a pipe of its own (print mode only): streamed as
    /// [`Event::Stderr`] and retained as the result's `stderr`, apart from `output`.
    pub stderr_separate: bool,
    /// `--sandbox`: this run's sandbox mode instead of the profile's (a server checks
    /// `[sandbox] allow_override` before it sets this).
    pub sandbox: Option<crate::sandbox::Mode>,
    /// Who can answer when the approval policy asks about the command (a terminal,
    /// an MCP client, an rpc client); `None`: no one, `approval.unattended` decides.
    pub approver: Option<ApproverRef>,
}

/// A question the approval policy asks before a command runs (README, Approval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The command line as the caller gave it (secrets masked).
    pub command: String,
    /// Each simple command that asks, with the rule that asked.
    pub asks: Vec<Ask>,
    /// The session an "always" answer would be remembered for.
    pub session: Option<String>,
    /// How long the answer is waited for (`approval.timeout`).
    pub timeout: std::time::Duration,
}

/// One simple command a [`Question`] is about.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ask {
    /// The command as matched (program and arguments, resolved).
    pub command: String,
    /// The rule that asked, as named (`git push`, or its id); `approval.default`
    /// when no rule matched.
    pub rule: String,
    /// What "always" would remember for the session (`None`: it cannot be: the
    /// command is not known until it runs).
    pub prefix: Option<String>,
}

impl Question {
    /// The rules that asked, for one line of text: "rule `git push`", or several.
    pub fn rules(&self) -> String {
        let mut names: Vec<String> = Vec::new();
        for a in &self.asks {
            let name = if a.rule == "approval.default" {
                a.rule.clone()
            } else {
                format!("rule `{}`", a.rule)
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.join(", ")
    }

    /// Whether "always" can be remembered: there is a session, and every command
    /// asked about has a prefix.
    pub fn can_remember(&self) -> bool {
        self.session.is_some() && self.asks.iter().all(|a| a.prefix.is_some())
    }
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run it, this once.
    Once,
    /// Run it, and remember the asking rules' prefixes for the session.
    Always,
    /// Do not run it.
    Deny,
    /// No answer within the timeout.
    TimedOut,
    /// The run was cancelled (a signal, `abort_bash`, the client went away) while it
    /// waited: the signal.
    Cancelled(i32),
    /// No one can be asked after all (why, in a sentence): `approval.unattended`
    /// decides.
    Unavailable(String),
}

/// Whoever can answer a [`Question`]: the terminal agentbash runs in, an MCP client
/// that declared elicitation, an rpc client.
pub trait Approver: Send + Sync {
    /// Ask, and wait (at most `question.timeout`) for the answer. `cancel` set while
    /// waiting ends the wait with [`Answer::Cancelled`].
    fn ask(&self, question: &Question, cancel: &crate::process::CancelToken) -> Answer;
    /// Who answers, as a message names them ("the terminal", "the MCP client").
    fn who(&self) -> String;
}

/// A shared [`Approver`] (compared by identity).
#[derive(Clone)]
pub struct ApproverRef(pub std::sync::Arc<dyn Approver>);

impl std::fmt::Debug for ApproverRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Approver({})", self.0.who())
    }
}

impl PartialEq for ApproverRef {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ApproverRef {}

/// How many lines of output a terminal's collapsed preview shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preview {
    /// `render.preview_lines`.
    pub lines: usize,
    /// `render.preview_lines_on_failure`: at least this many for a run that did not
    /// exit 0 (the error is rarely in the last few lines).
    pub on_failure: usize,
}

impl Preview {
    pub fn for_profile(r: &crate::config::profile::RenderCfg) -> Self {
        Preview {
            lines: r.preview_lines,
            on_failure: r.preview_lines_on_failure,
        }
    }

    /// The lines shown for a run that succeeded or `failed`.
    pub fn lines(&self, failed: bool) -> usize {
        if failed {
            self.lines.max(self.on_failure)
        } else {
            self.lines
        }
    }
}

/// The command text of the words a caller typed after `--`: one word is a shell
/// command string, run as written (`agentbash run -- 'ls | wc -l'`); several are an
/// argv, each word shell-quoted before the words are joined, so the command runs
/// exactly as typed (`agentbash run -- printf '%s\n' 'a b'` prints `a b`), as
/// `timeout`, `env` and `sudo` treat their arguments. `run`, `explain`, `rules test`
/// and `job start` all build their command with this.
pub fn command_from_words(words: &[String]) -> String {
    match words {
        [one] => one.clone(),
        many => many
            .iter()
            .map(|w| crate::display::shell_word(w))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

impl RunRequest {
    pub fn new(command: impl Into<String>) -> Self {
        RunRequest {
            command: command.into(),
            invoking_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            live_output: true,
            ..Default::default()
        }
    }

    /// Check what the request itself can get wrong, before it waits for anything (a
    /// concurrency slot, a session): the CLI, rpc and mcp all answer with this, and
    /// [`plan`] repeats it for a library caller that did not ask.
    pub fn validate(&self) -> Result<(), RequestError> {
        if self.command.trim().is_empty() {
            return Err(RequestError::EmptyCommand);
        }
        // NUL cannot reach a process: say which field has one instead of failing late.
        let nul = |s: &str| s.contains('\0');
        if nul(&self.command) {
            return Err(RequestError::Nul("command"));
        }
        if let Some((k, _)) = self.env.iter().find(|(k, v)| nul(k) || nul(v)) {
            return Err(RequestError::NulInEnv(k.replace('\0', "\\0")));
        }
        if self
            .cwd
            .as_deref()
            .is_some_and(|c| c.as_os_str().as_encoded_bytes().contains(&0))
        {
            return Err(RequestError::Nul("cwd"));
        }
        if let Some((k, _)) = self
            .env
            .iter()
            .find(|(k, _)| !crate::config::schema::valid_env_name(k))
        {
            return Err(RequestError::EnvName(k.clone()));
        }
        if let Some(s) = &self.session {
            crate::shell::session::parse_session_name(s).map_err(RequestError::Session)?;
        }
        for (name, v) in [("head", self.head), ("tail", self.tail)] {
            if v == Some(0) {
                return Err(RequestError::ZeroLines(name));
            }
        }
        Ok(())
    }
}

/// What is wrong with a request itself (a usage error: exit 2, or a rejected request
/// over rpc and mcp). Each message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("empty command: give the shell command to run")]
    EmptyCommand,
    #[error("`{0}` contains a NUL byte, which no process can receive")]
    Nul(&'static str),
    #[error("`env` entry {0:?} contains a NUL byte, which no process can receive")]
    NulInEnv(String),
    #[error(
        "`env` key {0:?} is not a valid variable name: use letters, digits and _, not starting with a digit"
    )]
    EnvName(String),
    #[error("`session`: {0}")]
    Session(String),
    #[error("`{0}` must be at least 1 (omit it to show all lines)")]
    ZeroLines(&'static str),
}

/// How the command was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Print,
    Pty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModeChoice {
    #[default]
    Auto,
    Print,
    Pty,
}
