//! The file tools the interceptor routes to — `read`, `grep`, `glob`, `edit` and
//! `write` — served next to `bash` by `agentbash mcp --toolbox` and by every
//! `agentbash rpc` (docs/PROTOCOL.md), under the very policy that confines `bash`:
//! the profile's sandbox (`deny_read`, read-only, workspace-write), `guard.protected`
//! and `output.redact` (see [`policy`]).
//!
//! Each tool takes its arguments ([`args`]) and answers with an [`Answer`]: the text a
//! model reads, the structured result (the same keys over MCP and rpc) and, for an
//! image, the image itself. A refusal or a bad argument is a [`ToolError`] whose
//! message says what to do. Everything shown — file contents, matching lines, paths,
//! error messages — is redacted as `bash` output is.

pub mod args;
pub mod edit;
mod files;
pub mod glob;
pub mod grep;
pub mod policy;
pub mod read;
mod walk;
pub mod write;

use crate::config::profile::Profile;
use crate::output::redact::Secrets;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The tools, in the order they are listed.
pub const TOOLS: [&str; 5] = ["read", "grep", "glob", "edit", "write"];

pub use walk::TIME_BUDGET;

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a tool answers.
#[derive(Debug, Clone)]
pub struct Answer {
    /// What a model should be shown.
    pub text: String,
    /// The structured result (MCP `structuredContent`, rpc `data`).
    pub data: serde_json::Value,
    /// `read` of an image: the image (MCP image content, rpc `image`).
    pub image: Option<read::Image>,
}

impl Answer {
    fn new<T: Serialize>(text: String, output: &T) -> Result<Answer, ToolError> {
        let data = serde_json::to_value(output)
            .map_err(|e| ToolError::Internal(format!("cannot encode the result: {e}")))?;
        Ok(Answer {
            text,
            data,
            image: None,
        })
    }

    fn text_only(text: String) -> Answer {
        Answer {
            text,
            data: serde_json::Value::Null,
            image: None,
        }
    }
}

/// Why a tool did nothing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments for `{tool}`: {message}")]
    Arguments { tool: &'static str, message: String },
    /// The path cannot be used (missing, a directory, unreadable, …): the message
    /// names it and says why.
    #[error("{0}")]
    Path(String),
    /// The sandbox or the guard refused.
    #[error(transparent)]
    Refused(#[from] policy::Refusal),
    #[error("old_string was not found in {path} (0 matches), nothing was changed: {hint}")]
    NoMatch { path: String, hint: String },
    #[error(
        "old_string matches {count} times in {path}, nothing was changed: add surrounding lines to old_string to make it unique, or set replace_all to replace all {count}"
    )]
    Ambiguous { path: String, count: usize },
    #[error("unknown tool `{0}`: the file tools are read, grep, glob, edit and write")]
    Unknown(String),
    #[error("agentbash failed: {0}")]
    Internal(String),
}

/// The five tools under one profile, serving paths relative to one directory.
#[derive(Debug, Clone)]
pub struct Toolbox {
    profile: Profile,
    base: PathBuf,
    secrets: Secrets,
}

impl Toolbox {
    /// The tools under `profile`, with relative paths taken from `base` (the server's
    /// directory, also the workspace when the profile names none). Secrets to redact
    /// are those `bash` output would be masked for: the `output.redact` variables of
    /// agentbash's environment and the profile's `env.set`.
    pub fn new(profile: &Profile, base: &Path) -> Toolbox {
        let env = crate::shell::env::build(&profile.env, std::env::vars(), &[], false);
        let secrets = Secrets::for_run(
            &profile.output.redact,
            &env,
            std::iter::empty::<(&String, &String)>(),
        );
        Toolbox {
            profile: profile.clone(),
            base: base.to_path_buf(),
            secrets,
        }
    }

    /// What the tools may read under this profile, in a sentence (for the tools'
    /// descriptions); empty when nothing is hidden.
    pub fn describe_reads(&self) -> String {
        let sandbox = &self.profile.sandbox;
        if sandbox.mode == crate::sandbox::Mode::Off || sandbox.deny_read.is_empty() {
            return String::new();
        }
        format!(
            "Hidden by the sandbox (deny_read), as from every command: {}.",
            list(&sandbox.deny_read)
        )
    }

    /// Where `edit` and `write` may write under this profile, in a sentence.
    pub fn describe_writes(&self) -> String {
        use crate::sandbox::Mode;
        let sandbox = &self.profile.sandbox;
        let mut d = match sandbox.mode {
            Mode::Off => "Sandbox off: files are written with the server's rights".to_string(),
            Mode::ReadOnly => "Sandbox read-only: nothing may be written".to_string(),
            Mode::WorkspaceWrite => {
                let mut writable = vec![
                    sandbox
                        .workspace
                        .clone()
                        .unwrap_or_else(|| self.base.clone()),
                ];
                writable.extend(sandbox.writable.iter().cloned());
                format!(
                    "Sandbox workspace-write: only files under {} may be written (not .git/hooks, .git/config or .agentbash/)",
                    list(&writable)
                )
            }
        };
        if self.profile.guard.enabled {
            d.push_str(", never onto or into a guard.protected path");
        }
        d.push('.');
        d
    }

    /// Run tool `name` with its JSON arguments (as an rpc request or an MCP call
    /// carries them). Blocking; `grep` and `glob` take at most their time budget.
    pub fn call(&self, name: &str, arguments: serde_json::Value) -> Result<Answer, ToolError> {
        fn parse<T: serde::de::DeserializeOwned>(
            tool: &'static str,
            v: serde_json::Value,
        ) -> Result<T, ToolError> {
            // `null` (no arguments at all) is an empty object.
            let v = if v.is_null() {
                serde_json::Value::Object(Default::default())
            } else {
                v
            };
            serde_json::from_value(v).map_err(|e| ToolError::Arguments {
                tool,
                message: e.to_string(),
            })
        }
        let policy = policy::FilePolicy::new(&self.profile, &self.base);
        let answer = match name {
            "read" => read::read(&policy, parse("read", arguments)?),
            "grep" => grep::grep(&policy, parse("grep", arguments)?),
            "glob" => glob::glob(&policy, parse("glob", arguments)?),
            "edit" => {
                let args: args::EditArgs = parse("edit", arguments)?;
                let masked = self.holds_mask(&args.new_string);
                edit::edit(&policy, args).map(|a| self.with_mask_notice(a, masked))
            }
            "write" => {
                let args: args::WriteArgs = parse("write", arguments)?;
                let masked = self.holds_mask(&args.content);
                write::write(&policy, args).map(|a| self.with_mask_notice(a, masked))
            }
            other => Err(ToolError::Unknown(other.to_string())),
        };
        match answer {
            Ok(mut a) => {
                self.secrets.mask_in_place(&mut a.text);
                self.secrets.mask_json(&mut a.data);
                Ok(a)
            }
            Err(e) => Err(self.mask_error(e)),
        }
    }

    /// Whether `text` holds a `[REDACTED:NAME]` mask of a secret this profile hides:
    /// written to a file, the mask replaces the secret there.
    fn holds_mask(&self, text: &str) -> bool {
        self.secrets
            .names()
            .iter()
            .any(|n| text.contains(&format!("[REDACTED:{n}]")))
    }

    fn with_mask_notice(&self, mut answer: Answer, masked: bool) -> Answer {
        if masked {
            answer.text.push_str(
                "\n[The new text holds [REDACTED:…] masks: the file now has the mask text there, not the secret. The tools never show a secret; put it back with `bash` if that was not meant]",
            );
        }
        answer
    }

    fn mask_error(&self, e: ToolError) -> ToolError {
        let shown = e.to_string();
        match self.secrets.mask(&shown) {
            std::borrow::Cow::Borrowed(_) => e,
            std::borrow::Cow::Owned(masked) => ToolError::Path(masked),
        }
    }
}
