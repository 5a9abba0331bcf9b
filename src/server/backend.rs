//! The seam between the MCP server and the engine that runs commands.
//!
//! The server (`mcp.rs`) speaks the protocol and nothing else; everything about
//! running a command — profiles, interception, sessions, artifacts — sits behind
//! [`Backend`], so the protocol layer can be tested with a stand-in engine and the
//! real engine can be tested without a protocol.

use std::collections::BTreeMap;

/// One `bash` tool call, as the client asked for it (nothing resolved yet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BashCall {
    /// The shell command text.
    pub command: String,
    /// Requested timeout in seconds; the profile clamps it into its range (a negative
    /// value too, and the clamp notice names the value as requested).
    pub timeout: Option<i64>,
    /// Working directory, relative to the server's directory or the session's cwd.
    pub cwd: Option<String>,
    /// Show only the first N lines of the output.
    pub head: Option<usize>,
    /// Show only the last N lines of the output.
    pub tail: Option<usize>,
    /// Extra environment variables, layered over the profile's environment.
    pub env: BTreeMap<String, String>,
    /// Persistent session name (see `shell::session`).
    pub session: Option<String>,
    /// Tools the caller has (interceptor); `None` = the profile's list.
    pub tools: Option<Vec<String>>,
    /// Sandbox mode for this call; refused unless `[sandbox] allow_override = true`.
    pub sandbox: Option<String>,
    /// Tools the server itself offers (the MCP server's `job`, through `bash` with
    /// `background`, and the file tools when it serves them). When there are any (the
    /// MCP server), the interceptor routes to these plus the call's `tools`, and the
    /// profile's `interceptor.tools` does not apply: it describes a caller this server
    /// cannot see, and a route to a tool nobody has leaves the model stuck.
    pub server_tools: Vec<String>,
    /// Who answers when the approval policy asks about the command (the rpc or MCP
    /// client); `None`: no one, `approval.unattended` decides.
    pub approver: Option<crate::request::ApproverRef>,
}

/// What a finished run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct BashOutcome {
    /// The result's `text`: exactly what the model should be shown.
    pub text: String,
    /// The whole result object (`RunResult`).
    pub result: serde_json::Value,
    /// Non-zero exit, timeout or block.
    pub is_error: bool,
}

/// The engine the MCP server drives.
pub trait Backend: Send + Sync + 'static {
    /// Check a call before it waits for a run slot: `Err` is the message for a bad
    /// request (empty command, NUL, bad env or session name, `head` 0), answered at
    /// once as a tool error.
    fn check(&self, call: &BashCall) -> Result<(), String>;

    /// Blocking; called on a blocking thread. `on_progress` receives output text as it
    /// arrives (coalesced). `cancel` is set when the client cancels the request (or
    /// the connection closes); the run must then stop and answer as cancelled.
    ///
    /// `Err` is a clear message for bad input (invalid env name, bad cwd, ...); the
    /// server turns it into a tool error the model can read.
    fn bash(
        &self,
        call: BashCall,
        on_progress: &mut dyn FnMut(&str),
        cancel: &crate::process::CancelToken,
    ) -> Result<BashOutcome, String>;

    /// How many `bash` calls may run at once; the server keeps further calls waiting
    /// (as tasks: no thread, no process) until one finishes.
    fn max_concurrent(&self) -> usize;

    /// The answer to a call cancelled while it waited for a run slot: shaped like a
    /// cancelled run, and nothing was started.
    fn not_started(&self, call: BashCall) -> Result<BashOutcome, String>;

    /// Lines `offset..offset+limit` (0-based; `limit: None` = to the end) of artifact
    /// `id`, a bare decimal id (the server strips `artifact://`).
    fn read_artifact(
        &self,
        id: &str,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<String, String>;

    /// A few lines telling the model what this profile does (limits, interception,
    /// artifacts) — used in the `bash` tool description.
    /// A job request (`job_start`, `job_status`, `job_wait`, `job_output`, `job_send`,
    /// `job_stop`, `job_list`)
    /// with its JSON arguments; blocking. The answer carries a `text` for the model.
    fn job(&self, kind: &str, args: serde_json::Value) -> Result<serde_json::Value, String> {
        let _ = args;
        Err(format!("{kind}: this server has no jobs"))
    }

    fn describe(&self) -> String;

    /// Whether the server serves the file tools (`read`, `grep`, `glob`, `edit`,
    /// `write`; see `crate::toolbox`).
    fn toolbox(&self) -> bool {
        false
    }

    /// What the file tools may read and write under this profile, a sentence each
    /// (empty: nothing to say), for their descriptions.
    fn describe_toolbox(&self) -> (String, String) {
        (String::new(), String::new())
    }

    /// One file tool call with its JSON arguments; blocking. `Err` is the message of
    /// a refusal or a bad argument, for the model.
    fn file_tool(
        &self,
        name: &str,
        args: serde_json::Value,
    ) -> Result<crate::toolbox::Answer, String> {
        let _ = args;
        Err(format!("`{name}`: this server has no file tools"))
    }
    /// The server stops taking requests: job requests that wait end their wait.
    fn close(&self) {}

    /// The question the approval policy would ask before running `call` (`None`:
    /// it would not ask), for a client that must be given it before the call runs.
    fn approval(&self, call: &BashCall) -> Option<crate::request::Question> {
        let _ = call;
        None
    }
}
