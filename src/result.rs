//! The result of a run: one struct, serialized as-is for `--format json`, the last NDJSON
//! event, the RPC response and the MCP structured content.

use crate::output::artifact::ArtifactRef;
use crate::output::redact::Secrets;
use crate::output::sink::Truncation;
use crate::process::KilledProcess;
use crate::request::Mode;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Why nothing ran: the same shape in the JSON of `run` and `explain`, the rpc `data`
/// and the MCP structured content.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Blocked {
    /// The interceptor rule id, `guard:<check>`, or a `deny` rule's id.
    pub rule: String,
    /// The tool to use instead; `null` when the guard or a `deny` rule refused.
    pub tool: Option<String>,
    pub message: String,
    pub kind: BlockKind,
}

/// Who refused: the guard (a structural check or a `deny` rule, whatever the caller's
/// tools), an interceptor rule routing the caller to a tool it has, or the approval
/// policy (a `deny` rule, or an `ask` no one approved).
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BlockKind {
    Guard,
    Interceptor,
    Approval,
}

/// Read back (`Deserialize`) only from a remote target's answer, whose fields are
/// these; the skipped ones are filled in from that answer by `crate::remote`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub command: String,
    pub normalized_command: String,
    pub stripped: Option<String>,
    pub profile: String,
    pub cwd: String,
    pub final_cwd: String,
    pub mode: Mode,
    pub session: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub blocked: Option<Blocked>,
    pub duration_ms: u64,
    pub timeout_s: u64,
    pub requested_timeout_s: i64,
    pub head: Option<usize>,
    pub tail: Option<usize>,
    pub output: String,
    pub text: String,
    pub truncated: bool,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub output_bytes: u64,
    pub output_lines: u64,
    pub truncation: Option<Truncation>,
    pub artifact: Option<ArtifactRef>,
    /// `--stderr separate`: the command's stderr, kept apart from `output` (which then
    /// holds stdout only). Absent when stderr is merged.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stderr: Option<StderrOutput>,
    pub background_killed: Vec<KilledProcess>,
    pub notices: Vec<String>,
    pub warnings: Vec<String>,
    /// agentbash's own failure (exit 125), when it did not get to run the command.
    pub error: Option<String>,
    /// How the kernel sandbox confined the command; `null` when `[sandbox] mode = "off"`.
    pub sandbox: Option<SandboxInfo>,
    /// rpc/mcp `jobs.background_after`: the command still ran when the wait ended and
    /// goes on as this job (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub job: Option<ContinuedAs>,
    /// The command's shaped output alone: no annotation, no `(no output)` (what a
    /// pipe receives).
    #[serde(skip)]
    pub body: String,
    /// The exit code agentbash itself exits with.
    #[serde(skip)]
    pub agentbash_exit: i32,
    /// The line that says why the run ended early (`[Command timed out after 5
    /// seconds]`, `[Command cancelled]`, a session wait), also the first line of
    /// `text` and the first notice (never part of `output`); renderers show it first.
    #[serde(skip)]
    pub annotation: Option<String>,
}

/// The job a long foreground run continues as (the job record's fields a caller
/// needs): its number and `job://N`, and the cursor its output (read with
/// `job_output`) goes on from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ContinuedAs {
    pub id: u64,
    pub url: String,
    pub name: Option<String>,
    pub pid: Option<i32>,
    /// `running` (it has no readiness check).
    pub state: String,
    pub ready: Option<bool>,
    pub cursor: u64,
}

fn engine_word<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    crate::output::sink::known_word(d, &["namespaces", "landlock", "none"])
}

/// The sandbox a command ran in, as enforced (which may be weaker than asked).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SandboxInfo {
    pub mode: crate::sandbox::Mode,
    /// The engine actually used: `namespaces`, `landlock` or `none` (nothing enforced).
    #[serde(deserialize_with = "engine_word")]
    pub engine: crate::output::sink::Word,
    /// Landlock is enforced (alone, or on top of the namespaces).
    pub landlock: bool,
    /// The command's network: `true` (the host's), `false` (none), or the allowlist
    /// as configured, enforced by agentbash's proxy.
    pub network: NetworkShown,
    /// With an allowlist: local addresses may be reached (`network_allow_local`).
    pub network_allow_local: bool,
    /// What the allowlist's proxy refused during the run, per destination.
    pub network_denied: Vec<crate::sandbox::Refusal>,
    /// The tree `workspace-write` opens for writing.
    pub workspace: Option<String>,
    pub writable: Vec<String>,
    pub deny_read: Vec<String>,
    /// The run's private TMPDIR (removed after the run).
    pub tmpdir: Option<String>,
    /// The workspace's package cache the package managers' cache variables point at
    /// (`workspace-write` with `env.sandbox_caches`; kept between runs).
    pub package_cache: Option<String>,
    /// Why the sandbox is weaker than asked, when it is.
    pub weaker: Option<String>,
    /// Smaller degradations (a deny_read path that does not exist, a missing hooks dir).
    pub notes: Vec<String>,
}

/// `sandbox.network` as the result shows it: a bool, or the list of destinations.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum NetworkShown {
    Open(bool),
    List(Vec<String>),
}

/// The command's stderr under `--stderr separate`: retained like the output (its own
/// `output.max_bytes` budget, head and column cap; line limits are the output's
/// alone, as a real `| head` would see only stdout), with its own artifact when cut.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StderrOutput {
    pub output: String,
    pub truncated: bool,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub output_bytes: u64,
    pub output_lines: u64,
    pub truncation: Option<Truncation>,
    pub artifact: Option<ArtifactRef>,
}

impl RunResult {
    /// Every string of a result masked: what a run returns goes to a terminal, a CI
    /// log, a model's context, an RPC peer. Secrets in the output are already masked
    /// as it streamed; the other fields can carry them too (a directory named after
    /// one, an error quoting the command, a background job's command line).
    pub fn mask_secrets(&mut self, secrets: &Secrets) {
        if secrets.is_empty() {
            return;
        }
        // Destructured so that a new field cannot be forgotten here.
        let RunResult {
            command,
            normalized_command,
            stripped,
            profile,
            cwd,
            final_cwd,
            mode: _,
            session,
            exit_code: _,
            signal,
            timed_out: _,
            cancelled: _,
            blocked,
            duration_ms: _,
            timeout_s: _,
            requested_timeout_s: _,
            head: _,
            tail: _,
            output,
            text,
            truncated: _,
            total_bytes: _,
            total_lines: _,
            output_bytes: _,
            output_lines: _,
            truncation: _,
            artifact,
            stderr,
            background_killed,
            notices,
            warnings,
            error,
            sandbox,
            body,
            annotation,
            agentbash_exit: _,
            job: _,
        } = self;
        for s in [
            command,
            normalized_command,
            profile,
            cwd,
            final_cwd,
            output,
            text,
            body,
        ] {
            secrets.mask_in_place(s);
        }
        for s in [stripped, session, signal, error, annotation]
            .into_iter()
            .flatten()
        {
            secrets.mask_in_place(s);
        }
        if let Some(b) = blocked {
            for s in [&mut b.rule, &mut b.message]
                .into_iter()
                .chain(b.tool.as_mut())
            {
                secrets.mask_in_place(s);
            }
        }
        let stderr_artifact = stderr.as_mut().and_then(|e| {
            secrets.mask_in_place(&mut e.output);
            e.artifact.as_mut()
        });
        for a in artifact.iter_mut().chain(stderr_artifact) {
            let path = a.path.display().to_string();
            if let Cow::Owned(p) = secrets.mask(&path) {
                a.path = p.into();
            }
        }
        for k in background_killed {
            secrets.mask_in_place(&mut k.command);
        }
        if let Some(s) = sandbox {
            for p in s.workspace.iter_mut().chain(s.tmpdir.iter_mut()) {
                secrets.mask_in_place(p);
            }
            for p in s.writable.iter_mut().chain(s.deny_read.iter_mut()) {
                secrets.mask_in_place(p);
            }
            // A command can put anything in a host name it tries.
            for r in &mut s.network_denied {
                secrets.mask_in_place(&mut r.host);
            }
        }
        for s in notices.iter_mut().chain(warnings.iter_mut()) {
            secrets.mask_in_place(s);
        }
    }
}
