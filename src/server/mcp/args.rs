//! The tools' arguments as the model sends them: the serde types whose doc comments
//! become the JSON schemas' descriptions, and the one error a client's input can raise.

use std::collections::BTreeMap;

use rmcp::model::JsonObject;
use rmcp::schemars::JsonSchema;
use serde::Deserialize;

use crate::server::backend::BashCall;
use crate::server::engine::DEFAULT_ARTIFACT_LINES;
use crate::server::lenient;

/// The `bash` tool's arguments. Field doc comments become the JSON schema
/// descriptions the model reads, so each is one line (schemars keeps line breaks).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub(super) struct BashArgs {
    /// The shell command to run, as one string (pipes, `&&`, redirects and `2>&1` are fine). It runs non-interactively: stdin is empty, pagers and prompts are off.
    pub(super) command: String,
    /// Timeout in seconds. Default and maximum come from the profile (values outside the allowed range are clamped, with a notice). On timeout the whole process tree is killed and the output so far is returned.
    #[serde(default, deserialize_with = "lenient::timeout")]
    pub(super) timeout: Option<i64>,
    /// Working directory for this command. A relative path is resolved against the server's directory, or the session's directory when `session` is set.
    pub(super) cwd: Option<String>,
    /// Show only the first N lines of the output. The command still runs to completion, and the full output stays available through `read_artifact`.
    #[serde(default, deserialize_with = "lenient::head")]
    #[schemars(range(min = 1))]
    pub(super) head: Option<usize>,
    /// Show only the last N lines of the output. The command still runs to completion, and the full output stays available through `read_artifact`.
    #[serde(default, deserialize_with = "lenient::tail")]
    #[schemars(range(min = 1))]
    pub(super) tail: Option<usize>,
    /// Extra environment variables for this command, as an object of strings, e.g. `{"RUST_LOG": "debug"}`. Names must match `^[A-Za-z_][A-Za-z0-9_]*$`.
    #[schemars(extend("propertyNames" = { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }))]
    pub(super) env: Option<BTreeMap<String, String>>,
    /// Name of a persistent shell session: the working directory, exported variables, functions and aliases carry over between calls that use the same name (so `cd` and `source venv/bin/activate` stick). Calls on one session run one at a time. Omit for a fresh shell.
    #[schemars(pattern(r"^[A-Za-z0-9._-]{1,64}$"))]
    pub(super) session: Option<String>,
    /// Tools you have besides this server's own (e.g. `["Read", "WebFetch"]`); interceptor rules that point at one of them, or at one of this server's tools, block the command and say which tool to use.
    pub(super) tools: Option<Vec<String>>,
    /// Sandbox mode for this command: "off", "read-only" or "workspace-write". Refused unless the server's profile allows overrides; omit it to use the profile's.
    pub(super) sandbox: Option<String>,
    /// Start the command as a background job (dev servers, watchers, long builds, REPLs) and answer at once with its id (job://N); read it with `job_output`, type into it with `job_send`, stop it with `job_stop`.
    pub(super) background: Option<bool>,
    /// Background only: a name to refer to the job by.
    pub(super) name: Option<String>,
    /// Background only: answer once this TCP port accepts and the job's own processes listen on it.
    pub(super) ready_port: Option<u16>,
    /// Background only: answer once a line of output matches this regular expression.
    pub(super) ready: Option<String>,
    /// Background only: seconds to wait for readiness (default 30; the job keeps running after).
    pub(super) ready_timeout: Option<f64>,
    /// Background only: run on a pseudo-terminal (REPLs, full-screen programs), for `job_send` keys and `job_output` `screen`.
    pub(super) pty: Option<bool>,
    /// Background only: keep a pipe to the job's stdin open for `job_send`.
    pub(super) stdin: Option<bool>,
    /// Background only: seconds before the job is stopped (default: the profile's jobs.ttl).
    pub(super) ttl: Option<u64>,
    /// Background only: keep the job running after this server exits (by default it is stopped then).
    pub(super) detached: Option<bool>,
}

impl BashArgs {
    /// The `job_start` arguments of a `background: true` call.
    pub(super) fn job_start(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "command": self.command });
        let o = v.as_object_mut().expect("an object");
        let mut put = |k: &str, x: serde_json::Value| {
            if !x.is_null() {
                o.insert(k.into(), x);
            }
        };
        put("name", serde_json::json!(self.name));
        put("ready_port", serde_json::json!(self.ready_port));
        put("ready", serde_json::json!(self.ready));
        put("ready_timeout", serde_json::json!(self.ready_timeout));
        put("pty", serde_json::json!(self.pty));
        put("stdin", serde_json::json!(self.stdin));
        put("ttl", serde_json::json!(self.ttl));
        put("cwd", serde_json::json!(self.cwd));
        put("env", serde_json::json!(self.env));
        put("tools", serde_json::json!(self.tools));
        put("sandbox", serde_json::json!(self.sandbox));
        put("detached", serde_json::json!(self.detached));
        v
    }
}

/// A job as the model names it: `job://3`, `3`, or its name.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars", inline)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum JobRefArg {
    Number(u64),
    Text(String),
}

/// The `job_status` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct JobStatusArgs {
    /// The job: job://N, N or its name.
    job: JobRefArg,
}

/// The `job_wait` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct JobWaitArgs {
    /// The job: job://N, N or its name.
    job: JobRefArg,
    /// Seconds to wait for it to end (default 60, at most the profile's timeout.max); the answer says `timed_out` when it still runs.
    timeout: Option<f64>,
}

/// The `job_output` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct JobOutputArgs {
    /// The job: job://N, N or its name.
    job: JobRefArg,
    /// Byte offset to read from: the `next` of the previous answer (default: from the start of what is kept). Reads are exact: nothing lost, nothing repeated.
    cursor: Option<u64>,
    /// Seconds to wait for output when there is none yet (at most 60).
    wait: Option<f64>,
    /// Only the last N lines instead.
    tail: Option<usize>,
    /// The screen of a `pty` job as text rows instead.
    screen: Option<bool>,
    /// At most this many bytes (default 65536).
    max_bytes: Option<usize>,
}

/// The `job_send` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct JobSendArgs {
    /// The job: job://N, N or its name.
    job: JobRefArg,
    /// Text to type (sent before the keys).
    text: Option<String>,
    /// Keys to send after the text: Enter, Tab, Esc, Space, Backspace, Up, Down, Left, Right, C-<letter> (C-c interrupts).
    keys: Option<Vec<String>>,
    /// Milliseconds of output to collect after sending, returned as `output` (default 500, at most 60000).
    wait_ms: Option<u64>,
}

/// The `job_stop` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct JobStopArgs {
    /// The job: job://N, N or its name.
    job: JobRefArg,
}

/// The `job_list` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct JobListArgs {
    /// Finished jobs too (by default only the running ones).
    all: Option<bool>,
}

impl From<BashArgs> for BashCall {
    fn from(args: BashArgs) -> Self {
        BashCall {
            command: args.command,
            timeout: args.timeout,
            cwd: args.cwd,
            head: args.head,
            tail: args.tail,
            env: args.env.unwrap_or_default(),
            session: args.session,
            tools: args.tools,
            sandbox: args.sandbox,
            server_tools: Vec::new(),
            approver: None,
        }
    }
}

/// The `read_artifact` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub(super) struct ReadArtifactArgs {
    /// The artifact to read, as named in a notice: `artifact://3`, or just `3`.
    pub(super) id: ArtifactRef,
    /// First line to return, 0-based. Default 0.
    #[serde(default, deserialize_with = "lenient::offset")]
    pub(super) offset: Option<usize>,
    /// Number of lines to return, at least 1. Default 2000 (one page); when lines are left, the text ends with the offset of the next page.
    #[serde(default, deserialize_with = "lenient::limit")]
    #[schemars(range(min = 1))]
    pub(super) limit: Option<usize>,
}

/// An artifact id as a model writes it: a number or a string (`"3"`, `"artifact://3"`).
/// Inlined in the schema: some clients do not follow `$ref`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars", inline)]
#[serde(untagged, expecting = "an artifact id such as 3 or \"artifact://3\"")]
pub(super) enum ArtifactRef {
    Number(u64),
    Text(String),
}

impl ArtifactRef {
    /// The bare decimal id, or an error naming what was wrong.
    pub(super) fn resolve(&self) -> Result<String, ToolInputError> {
        match self {
            ArtifactRef::Number(id) => Ok(id.to_string()),
            ArtifactRef::Text(text) => {
                let trimmed = text.trim();
                let id = trimmed.strip_prefix("artifact://").unwrap_or(trimmed);
                if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
                    Ok(id.to_owned())
                } else {
                    Err(ToolInputError::ArtifactId(text.clone()))
                }
            }
        }
    }
}

/// Input a client can get wrong; answered as a tool error the model can read.
#[derive(Debug, thiserror::Error)]
pub(super) enum ToolInputError {
    #[error("invalid arguments for tool `{tool}`: {source}")]
    Arguments {
        tool: &'static str,
        source: serde_json::Error,
    },
    #[error("invalid artifact id `{0}`: expected a number such as 3 or artifact://3")]
    ArtifactId(String),
    #[error("`limit` must be at least 1 (omit it for {DEFAULT_ARTIFACT_LINES} lines, one page)")]
    ZeroLimit,
}

pub(super) fn parse_arguments<T: serde::de::DeserializeOwned>(
    tool: &'static str,
    arguments: Option<JsonObject>,
) -> Result<T, ToolInputError> {
    let value = serde_json::Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|source| ToolInputError::Arguments { tool, source })
}
