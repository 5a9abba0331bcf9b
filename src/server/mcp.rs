//! `agentbash mcp`: a Model Context Protocol server on stdio (docs/PROTOCOL.md).
//!
//! Stock MCP clients (desktop, IDE and CLI agents) get `bash`, whose text content is
//! the result's `text` and whose structured content is the whole result (with
//! `background: true`, it starts a job instead), `read_artifact`, which pages through
//! the full output of a run that was cut, and the job tools `job_output`, `job_send`,
//! `job_stop` and `job_list`; with the toolbox (`--toolbox`, `mcp.toolbox`), the file
//! tools `read`, `grep`, `glob`, `edit` and `write` (`crate::toolbox`), under the
//! same sandbox, guard and redaction as `bash`. The interceptor routes a `bash`
//! command only to a tool that exists: this server's own, or one the call declares.
//! the full output of a run that was cut, and the job tools `job_status`, `job_wait`,
//! `job_output`, `job_send`, `job_stop` and `job_list`.
//! This module speaks the protocol (through the official SDK, `rmcp`) and nothing
//! else: running commands is the [`Backend`]'s job, on a blocking thread.
//!
//! Three things the protocol gives us that a plain call would not:
//! - progress: when the client put a `progressToken` in `_meta`, the output is sent
//!   as `notifications/progress` (message = new output) while the command runs;
//! - cancellation: `notifications/cancelled` for a request sets that run's cancel flag;
//! - EOF on stdin (the client went away) sets every running call's cancel flag, so
//!   the server exits promptly instead of waiting for long commands. SIGTERM, SIGINT
//!   and SIGHUP are handled as that same EOF: every call is cancelled and answered,
//!   and the server exits 0, as `agentbash rpc` does;
//! - elicitation: a command the approval policy asks about is put to the person
//!   behind a client that declared the `elicitation` capability, as a form with one
//!   boolean, `remember` — through an `elicitation/create` request on protocols before
//!   2026-07-28, and as an `input_required` result the client answers by calling
//!   again on 2026-07-28 and later (which forbid server-to-client requests).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    InputRequest, InputRequiredResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities, ServerConfig,
    ServerRequest, Tool, ToolAnnotations,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::{RequestContext, ServerInitializeError};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::{Notify, Semaphore, watch};

use super::backend::{Backend, BashCall, BashOutcome};
use super::engine::DEFAULT_ARTIFACT_LINES;
use super::{lenient, mcp_stdio};
use crate::request::{Answer, Approver, Question};

const BASH_TOOL: &str = "bash";
const READ_ARTIFACT_TOOL: &str = "read_artifact";
/// The job tools, each answered by [`Backend::job`] with the request of the same name.
const JOB_TOOLS: [&str; 6] = [
    "job_status",
    "job_wait",
    "job_output",
    "job_send",
    "job_stop",
    "job_list",
];
/// What this server offers for background launches, declared to the interceptor so
/// its background rules point at `bash` with `background: true`.
const OWN_TOOL_FOR_BACKGROUND: &str = "job";
/// The file tools, served with the toolbox.
const FILE_TOOLS: [&str; 5] = crate::toolbox::TOOLS;

/// A progress message carries at most this much of the newest output: progress is for
/// watching a run, the result carries the output, and a client that reads slowly must
/// not make the server hold (or send) megabytes.
const PROGRESS_MESSAGE_MAX_BYTES: usize = 16 * 1024;

/// How long a finished call waits for its last progress notifications to be written
/// before answering anyway (a client that stopped reading must not wedge the call).
const PROGRESS_DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Serve MCP on stdin/stdout until the client closes stdin, or a stop signal
/// (SIGTERM, SIGINT, SIGHUP) arrives; then cancel and answer every call, and return.
///
/// Must run inside a Tokio runtime with IO enabled (`enable_all`). Only protocol
/// messages are written to stdout; diagnostics go to stderr.
pub async fn serve_stdio<B: Backend>(backend: Arc<B>) -> anyhow::Result<()> {
    let (closed, _) = watch::channel(false);
    let server = McpServer::new(backend, closed.clone())?;
    // Installed before anything runs: from here on a stop signal never kills us.
    let stop = stop_signals()?;
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    // stdin → line filter → rmcp → one writer of whole lines → stdout.
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (errors, error_lines) = tokio::sync::mpsc::channel(16);
    // A stop signal ends the filter, which drops rmcp's input: rmcp sees EOF, and
    // the shutdown is the one EOF on stdin makes.
    let filter = tokio::spawn(async move {
        tokio::select! {
            () = mcp_stdio::filter_input(stdin, to_rmcp, errors) => {}
            () = stop => {}
        }
    });
    let writer = tokio::spawn(mcp_stdio::write_output(from_rmcp, error_lines, stdout));
    let transport = (EofSignal::new(rmcp_in, closed), rmcp_out);
    let served = match server.serve(transport).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|error| anyhow::anyhow!("MCP server task failed: {error}")),
        // The client went away before (or while) initializing: nothing to clean up.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(anyhow::anyhow!("MCP initialization failed: {error}")),
    };
    // rmcp has closed its output: let the last lines reach stdout.
    filter.abort();
    let _ = tokio::time::timeout(PROGRESS_DRAIN_TIMEOUT, writer).await;
    served
}

/// Resolves at the first SIGTERM, SIGINT or SIGHUP.
fn stop_signals() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    // tokio's handlers are this process's code: the commands it spawns reset them.
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        crate::process::signals::note_handler(sig);
    }
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut hangup = signal(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
            _ = hangup.recv() => {}
        }
    })
}

/// Buffer of each in-process pipe around rmcp.
const PIPE_BYTES: usize = 64 * 1024;

/// The `bash` tool's arguments. Field doc comments become the JSON schema
/// descriptions the model reads, so each is one line (schemars keeps line breaks).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
struct BashArgs {
    /// The shell command to run, as one string (pipes, `&&`, redirects and `2>&1` are fine). It runs non-interactively: stdin is empty, pagers and prompts are off.
    command: String,
    /// Timeout in seconds. Default and maximum come from the profile (values outside the allowed range are clamped, with a notice). On timeout the whole process tree is killed and the output so far is returned.
    #[serde(default, deserialize_with = "lenient::timeout")]
    timeout: Option<i64>,
    /// Working directory for this command. A relative path is resolved against the server's directory, or the session's directory when `session` is set.
    cwd: Option<String>,
    /// Show only the first N lines of the output. The command still runs to completion, and the full output stays available through `read_artifact`.
    #[serde(default, deserialize_with = "lenient::head")]
    #[schemars(range(min = 1))]
    head: Option<usize>,
    /// Show only the last N lines of the output. The command still runs to completion, and the full output stays available through `read_artifact`.
    #[serde(default, deserialize_with = "lenient::tail")]
    #[schemars(range(min = 1))]
    tail: Option<usize>,
    /// Extra environment variables for this command, as an object of strings, e.g. `{"RUST_LOG": "debug"}`. Names must match `^[A-Za-z_][A-Za-z0-9_]*$`.
    #[schemars(extend("propertyNames" = { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }))]
    env: Option<BTreeMap<String, String>>,
    /// Name of a persistent shell session: the working directory, exported variables, functions and aliases carry over between calls that use the same name (so `cd` and `source venv/bin/activate` stick). Calls on one session run one at a time. Omit for a fresh shell.
    #[schemars(pattern(r"^[A-Za-z0-9._-]{1,64}$"))]
    session: Option<String>,
    /// Tools you have besides this server's own (e.g. `["Read", "WebFetch"]`); interceptor rules that point at one of them, or at one of this server's tools, block the command and say which tool to use.
    tools: Option<Vec<String>>,
    /// Sandbox mode for this command: "off", "read-only" or "workspace-write". Refused unless the server's profile allows overrides; omit it to use the profile's.
    sandbox: Option<String>,
    /// Start the command as a background job (dev servers, watchers, long builds, REPLs) and answer at once with its id (job://N); read it with `job_output`, type into it with `job_send`, stop it with `job_stop`.
    background: Option<bool>,
    /// Background only: a name to refer to the job by.
    name: Option<String>,
    /// Background only: answer once this TCP port accepts and the job's own processes listen on it.
    ready_port: Option<u16>,
    /// Background only: answer once a line of output matches this regular expression.
    ready: Option<String>,
    /// Background only: seconds to wait for readiness (default 30; the job keeps running after).
    ready_timeout: Option<f64>,
    /// Background only: run on a pseudo-terminal (REPLs, full-screen programs), for `job_send` keys and `job_output` `screen`.
    pty: Option<bool>,
    /// Background only: keep a pipe to the job's stdin open for `job_send`.
    stdin: Option<bool>,
    /// Background only: seconds before the job is stopped (default: the profile's jobs.ttl).
    ttl: Option<u64>,
    /// Background only: keep the job running after this server exits (by default it is stopped then).
    detached: Option<bool>,
}

impl BashArgs {
    /// The `job_start` arguments of a `background: true` call.
    fn job_start(&self) -> serde_json::Value {
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
enum JobRefArg {
    Number(u64),
    Text(String),
}

/// The `job_status` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct JobStatusArgs {
    /// The job: job://N, N or its name.
    job: JobRefArg,
}

/// The `job_wait` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct JobWaitArgs {
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
struct JobOutputArgs {
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
struct JobSendArgs {
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
struct JobStopArgs {
    /// The job: job://N, N or its name.
    job: JobRefArg,
}

/// The `job_list` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct JobListArgs {
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
struct ReadArtifactArgs {
    /// The artifact to read, as named in a notice: `artifact://3`, or just `3`.
    id: ArtifactRef,
    /// First line to return, 0-based. Default 0.
    #[serde(default, deserialize_with = "lenient::offset")]
    offset: Option<usize>,
    /// Number of lines to return, at least 1. Default 2000 (one page); when lines are left, the text ends with the offset of the next page.
    #[serde(default, deserialize_with = "lenient::limit")]
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

/// An artifact id as a model writes it: a number or a string (`"3"`, `"artifact://3"`).
/// Inlined in the schema: some clients do not follow `$ref`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars", inline)]
#[serde(untagged, expecting = "an artifact id such as 3 or \"artifact://3\"")]
enum ArtifactRef {
    Number(u64),
    Text(String),
}

impl ArtifactRef {
    /// The bare decimal id, or an error naming what was wrong.
    fn resolve(&self) -> Result<String, ToolInputError> {
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
enum ToolInputError {
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

fn parse_arguments<T: serde::de::DeserializeOwned>(
    tool: &'static str,
    arguments: Option<JsonObject>,
) -> Result<T, ToolInputError> {
    let value = serde_json::Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|source| ToolInputError::Arguments { tool, source })
}

/// The MCP face of a [`Backend`].
pub struct McpServer<B: Backend> {
    backend: Arc<B>,
    tools: Vec<Tool>,
    /// One permit per run allowed at once (`server.max_concurrent`); a call waits for
    /// one as a task, so queued calls cost no thread and no process.
    slots: Arc<Semaphore>,
    /// Becomes `true` when stdin reaches EOF: every running call is cancelled.
    closed: watch::Sender<bool>,
    /// Approval questions handed to a 2026-07-28 client as `input_required`, by the
    /// `requestState` it must send back with the answer.
    asked: Mutex<BTreeMap<String, Asked>>,
}

/// An approval question a client was given to answer on its next call.
struct Asked {
    /// The call's arguments, as sent: the answer is for this call only.
    arguments: serde_json::Value,
    asks: Vec<crate::request::Ask>,
    /// After this the answer comes too late (`approval.timeout`).
    deadline: std::time::Instant,
}

/// The input request key of the approval question in an `input_required` result.
const APPROVAL_INPUT: &str = "approval";

impl<B: Backend> McpServer<B> {
    fn new(backend: Arc<B>, closed: watch::Sender<bool>) -> anyhow::Result<Self> {
        let mut tools = tool_definitions(&backend.describe())?;
        if backend.toolbox() {
            tools.extend(file_tool_definitions(&backend.describe_toolbox())?);
        }
        let slots = Arc::new(Semaphore::new(backend.max_concurrent().max(1)));
        Ok(Self {
            backend,
            tools,
            slots,
            closed,
            asked: Mutex::new(BTreeMap::new()),
        })
    }

    fn asked(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Asked>> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Who answers this call's approval question (see the module doc): the client by
    /// `elicitation/create`, the answer it sent with this call (2026-07-28), or no
    /// one. `Err`: the question goes back to the client first, as `input_required`.
    fn approver_for(
        &self,
        call: &BashCall,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<crate::request::ApproverRef, Box<InputRequiredResult>> {
        use crate::request::ApproverRef;
        let elicits = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !elicits {
            return Ok(ApproverRef(Arc::new(NoElicitation)));
        }
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if !modern {
            return Ok(ApproverRef(Arc::new(Elicitation {
                peer: context.peer.clone(),
                runtime: tokio::runtime::Handle::current(),
            })));
        }
        let arguments = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        // The answer to a question this server asked, for these very arguments.
        if let Some(state) = &request.request_state {
            let asked = self.asked().remove(state);
            if let Some(asked) = asked.filter(|a| a.arguments == arguments) {
                let answer = if std::time::Instant::now() > asked.deadline {
                    Answer::TimedOut
                } else {
                    request
                        .input_responses
                        .as_ref()
                        .and_then(|r| r.get(APPROVAL_INPUT))
                        .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
                        .map_or(Answer::Deny, |r| elicited(&r))
                };
                return Ok(ApproverRef(Arc::new(Answered {
                    asks: asked.asks,
                    answer,
                })));
            }
        }
        let Some(question) = self.backend.approval(call) else {
            // Nothing asks before the call runs; a question that comes up only while
            // it runs (a remote target's) cannot go back to this client any more.
            return Ok(ApproverRef(Arc::new(NotAhead)));
        };
        let state = format!("approval-{}", crate::ids::nonce());
        let mut asked = self.asked();
        let now = std::time::Instant::now();
        asked.retain(|_, a| a.deadline > now);
        asked.insert(
            state.clone(),
            Asked {
                arguments,
                asks: question.asks.clone(),
                deadline: now + question.timeout,
            },
        );
        let mut requests = rmcp::model::InputRequests::new();
        requests.insert(
            APPROVAL_INPUT.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(elicitation_form(&question))),
        );
        Err(Box::new(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    async fn call_bash(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let args = match parse_arguments::<BashArgs>(BASH_TOOL, request.arguments.clone()) {
            Ok(args) => args,
            Err(error) => return tool_error(error.to_string()).into(),
        };
        if args.background == Some(true) {
            return self.call_job("job_start", args.job_start()).await.into();
        }
        let mut call: BashCall = args.into();
        call.server_tools = vec![OWN_TOOL_FOR_BACKGROUND.to_string()];
        if self.backend.toolbox() {
            call.server_tools
                .extend(FILE_TOOLS.iter().map(|t| t.to_string()));
        }
        // A bad request is answered now, not once a run slot frees.
        if let Err(message) = self.backend.check(&call) {
            return tool_error(message).into();
        }
        match self.approver_for(&call, &request, &context) {
            Ok(approver) => call.approver = Some(approver),
            Err(input_required) => return (*input_required).into(),
        }
        self.run_bash(call, context).await.into()
    }

    async fn run_bash(
        &self,
        call: BashCall,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        // Wait for a run slot; a call cancelled meanwhile (or the client leaving) is
        // answered as cancelled without starting anything.
        let permit = {
            let mut closed = self.closed.subscribe();
            tokio::select! {
                permit = Arc::clone(&self.slots).acquire_owned() => permit.ok(),
                () = context.ct.cancelled() => None,
                _ = closed.wait_for(|closed| *closed) => None,
            }
        };
        let Some(permit) = permit else {
            let backend = Arc::clone(&self.backend);
            return match tokio::task::spawn_blocking(move || backend.not_started(call)).await {
                Ok(Ok(outcome)) => outcome_result(outcome),
                Ok(Err(message)) => tool_error(message),
                Err(error) => tool_error(format!("agentbash failed: {error}")),
            };
        };

        let cancel = Arc::new(crate::process::CancelToken::new());
        let canceller = CancelOnDrop(
            Arc::clone(&cancel),
            tokio::spawn({
                let cancel = Arc::clone(&cancel);
                let request_cancelled = context.ct.clone();
                let mut closed = self.closed.subscribe();
                async move {
                    tokio::select! {
                        () = request_cancelled.cancelled() => {}
                        // Err: the server is being torn down, which also ends the run.
                        _ = closed.wait_for(|closed| *closed) => {}
                    }
                    cancel.cancel(libc::SIGINT);
                }
            }),
        );

        let progress = context.meta.get_progress_token().map(|token| {
            let buffer = Arc::new(ProgressBuffer::default());
            let forwarder = tokio::spawn(forward_progress(
                context.peer.clone(),
                token,
                Arc::clone(&buffer),
            ));
            (buffer, forwarder)
        });

        let backend = Arc::clone(&self.backend);
        let sink = progress.as_ref().map(|(buffer, _)| Arc::clone(buffer));
        let run_cancel = Arc::clone(&cancel);
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut on_progress = |text: &str| {
                if let Some(sink) = &sink {
                    sink.push(text);
                }
            };
            backend.bash(call, &mut on_progress, &run_cancel)
        })
        .await;
        drop(canceller);

        // Progress goes out before the result: a client drops progress for a request
        // it already has the answer to.
        if let Some((buffer, mut forwarder)) = progress {
            buffer.finish();
            if tokio::time::timeout(PROGRESS_DRAIN_TIMEOUT, &mut forwarder)
                .await
                .is_err()
            {
                forwarder.abort();
            }
        }

        match joined {
            Ok(Ok(outcome)) => outcome_result(outcome),
            Ok(Err(message)) => tool_error(message),
            Err(error) => tool_error(format!(
                "agentbash failed: the run did not finish ({error})"
            )),
        }
    }

    /// A job request on a blocking thread; the answer's `text` is the content.
    async fn call_job(&self, kind: &'static str, args: serde_json::Value) -> CallToolResult {
        let backend = Arc::clone(&self.backend);
        let mut call = tokio::task::spawn_blocking(move || backend.job(kind, args));
        // The client went away: a call that waits (job_wait, job_output's wait)
        // ends its wait and answers.
        let mut closed = self.closed.subscribe();
        let joined = tokio::select! {
            joined = &mut call => joined,
            () = async { drop(closed.wait_for(|closed| *closed).await) } => {
                self.backend.close();
                call.await
            }
        };
        match joined {
            Ok(Ok(v)) => {
                let text = v["text"].as_str().unwrap_or_default().to_string();
                let failed = matches!(v["job"]["state"].as_str(), Some("lost" | "timed_out"))
                    || (v["job"]["state"] == "exited" && v["job"]["exit_code"] != 0);
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(v);
                result.is_error = Some(kind == "job_start" && failed);
                result
            }
            Ok(Err(message)) => tool_error(message),
            Err(error) => tool_error(format!("agentbash failed: {kind} did not finish ({error})")),
        }
    }

    /// A file tool on a blocking thread: bounded by the tool itself (a page, a
    /// result cap, a time budget), so it needs no run slot.
    async fn call_file_tool(
        &self,
        name: &'static str,
        arguments: Option<JsonObject>,
    ) -> CallToolResult {
        let backend = Arc::clone(&self.backend);
        let args = serde_json::Value::Object(arguments.unwrap_or_default());
        match tokio::task::spawn_blocking(move || backend.file_tool(name, args)).await {
            Ok(Ok(answer)) => {
                let mut content = vec![ContentBlock::text(answer.text)];
                if let Some(image) = answer.image {
                    content.push(ContentBlock::image(image.data, image.mime_type));
                }
                let mut result = CallToolResult::success(content);
                result.structured_content = Some(answer.data);
                result.is_error = Some(false);
                result
            }
            Ok(Err(message)) => tool_error(message),
            Err(error) => tool_error(format!(
                "agentbash failed: `{name}` did not finish ({error})"
            )),
        }
    }

    async fn call_read_artifact(&self, arguments: Option<JsonObject>) -> CallToolResult {
        let parsed =
            parse_arguments::<ReadArtifactArgs>(READ_ARTIFACT_TOOL, arguments).and_then(|args| {
                if args.limit == Some(0) {
                    return Err(ToolInputError::ZeroLimit);
                }
                Ok((args.id.resolve()?, args.offset, args.limit))
            });
        let (id, offset, limit) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => return tool_error(error.to_string()),
        };
        let backend = Arc::clone(&self.backend);
        let joined = tokio::task::spawn_blocking(move || {
            backend.read_artifact(&id, offset.unwrap_or(0), limit)
        })
        .await;
        match joined {
            Ok(Ok(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Ok(Err(message)) => tool_error(message),
            Err(error) => tool_error(format!(
                "agentbash failed: reading the artifact did not finish ({error})"
            )),
        }
    }
}

impl<B: Backend> ServerHandler for McpServer<B> {
    fn get_info(&self) -> ServerConfig {
        let mut instructions = String::from(
            "Run shell commands with the `bash` tool. Long output is cut to fit; the \
             notice at the end of a cut output names an artifact (artifact://N) whose \
             full text the `read_artifact` tool returns, a range of lines at a time.",
        );
        if self.backend.toolbox() {
            instructions.push_str(
                " Read, search and change files with `read`, `grep`, `glob`, `edit` and \
                 `write`: they obey the same sandbox as `bash`, and `bash` commands that \
                 should use them are blocked with a message naming the tool.",
            );
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("agentbash", env!("CARGO_PKG_VERSION")).with_title("agentbash"),
            )
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            BASH_TOOL => return Ok(self.call_bash(request, context).await),
            READ_ARTIFACT_TOOL => self.call_read_artifact(request.arguments).await,
            name if self.backend.toolbox() && FILE_TOOLS.contains(&name) => {
                let tool = FILE_TOOLS
                    .into_iter()
                    .find(|t| *t == name)
                    .unwrap_or("read");
                self.call_file_tool(tool, request.arguments).await
            }
            name if JOB_TOOLS.contains(&name) => {
                let kind = JOB_TOOLS
                    .into_iter()
                    .find(|t| *t == name)
                    .unwrap_or("job_list");
                let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
                self.call_job(kind, args).await
            }
            other => {
                let names: Vec<String> =
                    self.tools.iter().map(|t| format!("`{}`", t.name)).collect();
                let hint = if FILE_TOOLS.contains(&other) {
                    " (the file tools are served with `agentbash mcp --toolbox` or mcp.toolbox = true)"
                } else {
                    ""
                };
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool `{other}`; this server has {}{hint}",
                        names.join(", ")
                    ),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

/// What a client's elicitation answer means: accept runs (`remember` true: always),
/// decline and cancel refuse.
fn elicited(r: &ElicitResult) -> Answer {
    match r.action {
        ElicitationAction::Accept => {
            let remember = r
                .content
                .as_ref()
                .and_then(|c| c.get("remember"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            if remember {
                Answer::Always
            } else {
                Answer::Once
            }
        }
        _ => Answer::Deny,
    }
}

/// The approval question as an elicitation form: the command and the rule in the
/// message, one boolean `remember`.
fn elicitation_form(q: &Question) -> ElicitRequestParams {
    let mut message = format!(
        "agentbash: approve this command before it runs?\n$ {}\n",
        q.command
    );
    for a in &q.asks {
        if a.rule == "approval.default" {
            message.push_str(&format!("{}  (approval.default asks)\n", a.command));
        } else {
            message.push_str(&format!("{}  (rule `{}` asks)\n", a.command, a.rule));
        }
    }
    message.push_str("Accept runs it; decline refuses it.");
    let remember = if q.can_remember() {
        let prefixes: Vec<String> = q
            .asks
            .iter()
            .filter_map(|a| a.prefix.as_ref().map(|p| format!("`{p}`")))
            .collect();
        format!(
            "Also run commands starting with {} without asking again in session {}.",
            prefixes.join(", "),
            q.session.as_deref().unwrap_or_default()
        )
    } else if q.session.is_none() {
        "There is no session to remember it in: it counts as once.".to_string()
    } else {
        "What it runs is not known until it runs: it counts as once.".to_string()
    };
    let requested_schema = rmcp::model::ElicitationSchema::builder()
        .optional_bool_with("remember", |b| {
            b.title("Always, for this session")
                .description(remember)
                .with_default(false)
        })
        .build_unchecked();
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    }
}

/// A client without the `elicitation` capability: no one can be asked.
struct NoElicitation;

impl Approver for NoElicitation {
    fn ask(&self, _: &Question, _: &crate::process::CancelToken) -> Answer {
        Answer::Unavailable(
            "the MCP client did not declare the elicitation capability, so it cannot put the question to a person"
                .into(),
        )
    }

    fn who(&self) -> String {
        "the MCP client".into()
    }
}

/// A client on protocol 2026-07-28 is asked only before its call runs (it answers by
/// calling again): a question that comes up while the call runs, as a remote
/// target's does, finds no one to put it to.
struct NotAhead;

impl Approver for NotAhead {
    fn ask(&self, _: &Question, _: &crate::process::CancelToken) -> Answer {
        Answer::Unavailable(
            "the MCP client answers approval questions by calling again (protocol 2026-07-28), and this one came up only once the call ran (a remote target's policy asked)"
                .into(),
        )
    }

    fn who(&self) -> String {
        "the MCP client".into()
    }
}

/// An answer the client already gave (2026-07-28: sent with its repeated call), for
/// the question it was given.
struct Answered {
    asks: Vec<crate::request::Ask>,
    answer: Answer,
}

impl Approver for Answered {
    fn ask(&self, q: &Question, _: &crate::process::CancelToken) -> Answer {
        if q.asks == self.asks {
            self.answer.clone()
        } else {
            Answer::Unavailable(
                "what the command asks about changed between the question and the answer".into(),
            )
        }
    }

    fn who(&self) -> String {
        "the MCP client's user".into()
    }
}

/// Asks through `elicitation/create` (protocols before 2026-07-28), from the blocking
/// thread the run is on.
struct Elicitation {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
}

impl Approver for Elicitation {
    fn ask(&self, q: &Question, cancel: &crate::process::CancelToken) -> Answer {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(elicitation_form(q)));
        let peer = self.peer.clone();
        let timeout = q.timeout;
        self.runtime.block_on(async move {
            let asked = peer.send_request(request);
            let cancelled = async {
                loop {
                    if let Some(sig) = cancel.reason() {
                        return sig;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            };
            tokio::select! {
                answer = tokio::time::timeout(timeout, asked) => match answer {
                    Err(_) => Answer::TimedOut,
                    Ok(Ok(ClientResult::ElicitResult(r))) => elicited(&r),
                    Ok(Ok(other)) => Answer::Unavailable(format!(
                        "the MCP client answered the question with something else ({other:?})"
                    )),
                    Ok(Err(e)) => Answer::Unavailable(format!(
                        "the MCP client could not put the question to a person ({e})"
                    )),
                },
                sig = cancelled => Answer::Cancelled(sig),
            }
        })
    }

    fn who(&self) -> String {
        "the MCP client's user".into()
    }
}

fn tool_definitions(profile_description: &str) -> anyhow::Result<Vec<Tool>> {
    let bash_schema = schema_for_input::<BashArgs>()
        .map_err(|error| anyhow::anyhow!("bash tool schema: {error}"))?;
    let read_schema = with_defaults(
        schema_for_input::<ReadArtifactArgs>()
            .map_err(|error| anyhow::anyhow!("read_artifact tool schema: {error}"))?
            .as_ref(),
        &[
            ("offset", serde_json::json!(0)),
            ("limit", serde_json::json!(DEFAULT_ARTIFACT_LINES)),
        ],
    );

    // The backend's description says how this server runs commands (shell,
    // timeouts, how much output is kept, where the rest goes), once each.
    let mut bash_description = String::from(
        "Run a shell command and return its output (stdout and stderr interleaved) and exit \
         status. The structured result has exit_code, timed_out, truncated, artifact and more.",
    );
    let profile_description = profile_description.trim();
    if !profile_description.is_empty() {
        bash_description.push('\n');
        bash_description.push_str(profile_description);
    }

    let job_tool = |name: &'static str,
                    title: &'static str,
                    description: &'static str,
                    schema: Result<Arc<JsonObject>, String>,
                    read_only: bool|
     -> anyhow::Result<Tool> {
        let schema = schema.map_err(|error| anyhow::anyhow!("{name} tool schema: {error}"))?;
        Ok(Tool::new(name, description, schema)
            .with_title(title)
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(read_only)
                    .destructive(!read_only)
                    .idempotent(read_only)
                    .open_world(false),
            ))
    };
    let str_err = |e: &dyn std::fmt::Display| e.to_string();
    let jobs = [
        job_tool(
            "job_status",
            "A background job's state",
            "The record of a background job started with `bash` and `background: true`: state (running, ready, exited, killed, timed_out, lost), exit_code, pid, cursor (where new output will start), log_path, and its sandbox.",
            schema_for_input::<JobStatusArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
        job_tool(
            "job_wait",
            "Wait for a background job to end",
            "Wait until a background job ends (at most `timeout` seconds, default 60) and answer with its exit_code and last lines; `timed_out: true` when it still runs.",
            schema_for_input::<JobWaitArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
        job_tool(
            "job_output",
            "Read a background job's output",
            "Read the output of a background job started with `bash` and `background: true`: from `cursor` (the `next` of the previous answer; exact, nothing lost or repeated), waiting up to `wait` seconds for new output; or its last `tail` lines; or, for a `pty` job, its `screen` as text rows.",
            schema_for_input::<JobOutputArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
        job_tool(
            "job_send",
            "Type into a background job",
            "Send `text` and then `keys` (Enter, Tab, Esc, Up, Down, C-c, ...) to a background job started with `pty: true` (a REPL, a full-screen program) or `stdin: true`; answers with what it printed in the next `wait_ms` (default 500).",
            schema_for_input::<JobSendArgs>().map_err(|e| str_err(&e)),
            false,
        )?,
        job_tool(
            "job_stop",
            "Stop a background job",
            "Stop a background job and its whole process tree (TERM, then KILL after a grace period); answers with its last output.",
            schema_for_input::<JobStopArgs>().map_err(|e| str_err(&e)),
            false,
        )?,
        job_tool(
            "job_list",
            "List background jobs",
            "List the running background jobs (with `all: true`, finished ones too): id, name, state (running, ready, exited, killed, timed_out, lost), pid and command.",
            schema_for_input::<JobListArgs>().map_err(|e| str_err(&e)),
            true,
        )?,
    ];
    let mut tools = vec![
        Tool::new(BASH_TOOL, bash_description, bash_schema)
            .with_title("Run a shell command")
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(true)
                    .idempotent(false)
                    .open_world(true),
            ),
        Tool::new(
            READ_ARTIFACT_TOOL,
            format!(
                "Read lines of an artifact: the complete output of a `bash` run whose shown \
                 output was cut (named artifact://N in the notice). `offset` is the 0-based \
                 first line (default 0), `limit` the number of lines (default \
                 {DEFAULT_ARTIFACT_LINES})."
            ),
            read_schema,
        )
        .with_title("Read a saved command output")
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
    ];
    tools.extend(jobs);
    Ok(tools)
}

/// The file tools' definitions; `reads` and `writes` say what this profile's sandbox
/// lets them read and write.
fn file_tool_definitions((reads, writes): &(String, String)) -> anyhow::Result<Vec<Tool>> {
    use crate::toolbox::args::{
        EditArgs, GLOB_DEFAULT_RESULTS, GREP_DEFAULT_RESULTS, GlobArgs, GrepArgs, READ_PAGE_LINES,
        ReadArgs, WriteArgs,
    };
    let policy = |writing: bool| {
        let mut lines: Vec<&str> = vec![reads.trim()];
        if writing {
            lines.push(writes.trim());
        }
        lines.retain(|l| !l.is_empty());
        lines.join(" ")
    };
    let with_policy = |text: String, writing: bool| {
        let policy = policy(writing);
        if policy.is_empty() {
            text
        } else {
            format!("{text}\n{policy}")
        }
    };
    let schema = |name: &str, s: Result<Arc<JsonObject>, String>| {
        s.map_err(|error| anyhow::anyhow!("{name} tool schema: {error}"))
    };
    let str_err = |e: &dyn std::fmt::Display| e.to_string();
    let annotations = |read_only: bool, idempotent: bool| {
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(!read_only)
            .idempotent(idempotent)
            .open_world(false)
    };
    let defaults = |schema: Arc<JsonObject>, values: &[(&str, serde_json::Value)]| {
        with_defaults(&schema, values)
    };
    use serde_json::json;
    let page = READ_PAGE_LINES;
    let budget = crate::toolbox::TIME_BUDGET.as_secs();
    Ok(vec![
        Tool::new(
            "read",
            with_policy(format!(
                "Read a text file as numbered lines (as `cat -n` numbers them), at most {page} lines per call: `offset` is the 0-based first line, and while lines are left the answer gives `next_offset`. Long lines are cut with a marker. Images (PNG, JPEG, GIF, WebP) come back as images; other binary files are described (type, size), never dumped. Paths are absolute or relative to the server's directory."
            ), false),
            defaults(
                schema("read", schema_for_input::<ReadArgs>().map_err(|e| str_err(&e)))?,
                &[("offset", json!(0)), ("limit", json!(READ_PAGE_LINES))],
            ),
        )
        .with_title("Read a file")
        .with_annotations(annotations(true, true)),
        Tool::new(
            "grep",
            with_policy(format!(
                "Search file contents for a regular expression (ripgrep's engine, in-process) in a file or a directory tree. Skips what ripgrep skips: files ignored by .gitignore (inside a git work tree) or .ignore, `.git`, binary files. `output_mode`: `files` (default, the matching files), `lines` (`path:line:text`, with `context` lines around) or `count` (matching lines per file). At most `limit` results (default 500) and {budget} s of searching: the answer says when it stopped early."
            ), false),
            defaults(
                schema("grep", schema_for_input::<GrepArgs>().map_err(|e| str_err(&e)))?,
                &[
                    ("case_insensitive", json!(false)),
                    ("context", json!(0)),
                    ("output_mode", json!("files")),
                    ("limit", json!(GREP_DEFAULT_RESULTS)),
                ],
            ),
        )
        .with_title("Search file contents")
        .with_annotations(annotations(true, true)),
        Tool::new(
            "glob",
            with_policy(format!(
                "Find files by path pattern under a directory, newest first: `**/*.rs` (any depth), `src/*.ts` (one level), `*.{{json,toml}}`. Ignore-aware like `grep`. At most `limit` paths (default 500, the newest) and {budget} s of walking: the answer says when more matched."
            ), false),
            defaults(
                schema("glob", schema_for_input::<GlobArgs>().map_err(|e| str_err(&e)))?,
                &[("limit", json!(GLOB_DEFAULT_RESULTS))],
            ),
        )
        .with_title("Find files by name")
        .with_annotations(annotations(true, true)),
        Tool::new(
            "edit",
            with_policy(
                "Replace an exact piece of a file: `old_string` must occur exactly once (or set `replace_all`); a missing or ambiguous match is refused with the count, and nothing changes. Line endings (CRLF), a byte-order mark and bytes that are not UTF-8 are kept. `read` the file first: old_string is the text without the line numbers."
                    .to_string(),
                true,
            ),
            defaults(
                schema("edit", schema_for_input::<EditArgs>().map_err(|e| str_err(&e)))?,
                &[("replace_all", json!(false))],
            ),
        )
        .with_title("Edit a file")
        .with_annotations(annotations(false, false)),
        Tool::new(
            "write",
            with_policy(
                "Create a file, or replace one whole, with `content`; missing parent directories are created. A replaced file keeps its mode and is swapped in atomically."
                    .to_string(),
                true,
            ),
            (*schema("write", schema_for_input::<WriteArgs>().map_err(|e| str_err(&e)))?).clone(),
        )
        .with_title("Write a file")
        .with_annotations(annotations(false, true)),
    ])
}

/// `schema` with each named property's `default` set (schemars writes `null` for an
/// optional argument, which tells a client nothing about what it gets).
fn with_defaults(schema: &JsonObject, defaults: &[(&str, serde_json::Value)]) -> JsonObject {
    let mut schema = schema.clone();
    if let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, value) in defaults {
            if let Some(property) = properties
                .get_mut(*name)
                .and_then(serde_json::Value::as_object_mut)
            {
                property.insert("default".into(), value.clone());
            }
        }
    }
    schema
}

/// Stops the watcher of a run, and the run itself if this call is dropped before the
/// run ends (setting the flag of a finished run is harmless).
struct CancelOnDrop(
    Arc<crate::process::CancelToken>,
    tokio::task::JoinHandle<()>,
);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel(libc::SIGINT);
        self.1.abort();
    }
}

fn outcome_result(outcome: BashOutcome) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.text)]);
    result.structured_content = Some(outcome.result);
    result.is_error = Some(outcome.is_error);
    result
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Output waiting to be sent as progress, filled on the blocking thread and emptied by
/// [`forward_progress`]. Bounded: only the newest output is kept between sends.
#[derive(Default)]
struct ProgressBuffer {
    state: Mutex<ProgressState>,
    wake: Notify,
}

#[derive(Default)]
struct ProgressState {
    pending: String,
    /// Bytes of output seen so far: the progress value (it only grows).
    total_bytes: u64,
    finished: bool,
}

impl ProgressBuffer {
    fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.pending.push_str(text);
            state.total_bytes = state.total_bytes.saturating_add(text.len() as u64);
            keep_tail(&mut state.pending, PROGRESS_MESSAGE_MAX_BYTES);
        }
        self.wake.notify_one();
    }

    fn finish(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finished = true;
        self.wake.notify_one();
    }

    fn take(&self) -> (String, u64, bool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (
            std::mem::take(&mut state.pending),
            state.total_bytes,
            state.finished,
        )
    }
}

/// Drop the front of `text` so that it is at most about `max` bytes, on a char boundary,
/// marking the cut.
fn keep_tail(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut cut = text.len() - max;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.replace_range(..cut, "…");
}

async fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    buffer: Arc<ProgressBuffer>,
) {
    loop {
        buffer.wake.notified().await;
        let (message, total_bytes, finished) = buffer.take();
        if !message.is_empty() {
            // Precision loss past 2^53 bytes is harmless: the value only has to grow.
            let progress = total_bytes as f64;
            let notification =
                ProgressNotificationParam::new(token.clone(), progress).with_message(message);
            if let Err(error) = peer.notify_progress(notification).await {
                eprintln!("agentbash mcp: cannot send progress: {error}");
                return;
            }
        }
        if finished {
            return;
        }
    }
}

/// Stdin that announces its EOF (or a read error) on a watch channel, so running
/// calls can be cancelled as soon as the client has gone.
struct EofSignal<R> {
    inner: R,
    closed: watch::Sender<bool>,
}

impl<R> EofSignal<R> {
    fn new(inner: R, closed: watch::Sender<bool>) -> Self {
        Self { inner, closed }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let wants_bytes = buf.remaining() > 0;
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        let at_end = match &poll {
            Poll::Ready(Ok(())) => wants_bytes && buf.filled().len() == before,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if at_end {
            this.closed.send_replace(true);
        }
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: serde_json::Value) -> Option<JsonObject> {
        match value {
            serde_json::Value::Object(map) => Some(map),
            _ => None,
        }
    }

    #[test]
    fn bash_schema_describes_every_parameter() -> anyhow::Result<()> {
        let tools = tool_definitions("profile line")?;
        let bash = tools
            .iter()
            .find(|tool| tool.name == BASH_TOOL)
            .ok_or_else(|| anyhow::anyhow!("no bash tool"))?;
        let properties = bash
            .input_schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .ok_or_else(|| anyhow::anyhow!("no properties"))?;
        for name in [
            "command", "timeout", "cwd", "head", "tail", "env", "session",
        ] {
            let description = properties
                .get(name)
                .and_then(|p| p.get("description"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            assert!(!description.is_empty(), "{name} has no description");
        }
        assert_eq!(
            bash.input_schema.get("required"),
            Some(&serde_json::json!(["command"]))
        );
        assert!(
            bash.description
                .as_deref()
                .is_some_and(|d| d.contains("profile line"))
        );
        Ok(())
    }

    #[test]
    fn read_artifact_states_its_real_page_size() -> anyhow::Result<()> {
        let tools = tool_definitions("")?;
        let read = tools
            .iter()
            .find(|tool| tool.name == READ_ARTIFACT_TOOL)
            .ok_or_else(|| anyhow::anyhow!("no read_artifact tool"))?;
        let limit = &read.input_schema["properties"]["limit"];
        assert_eq!(limit["default"], serde_json::json!(DEFAULT_ARTIFACT_LINES));
        let page = format!("Default {DEFAULT_ARTIFACT_LINES} ");
        assert!(
            limit["description"]
                .as_str()
                .is_some_and(|d| d.contains(&page))
        );
        Ok(())
    }

    #[test]
    fn artifact_ids_accept_numbers_and_urls() {
        let cases = [
            (serde_json::json!({"id": 3}), Some("3")),
            (serde_json::json!({"id": "3"}), Some("3")),
            (serde_json::json!({"id": "artifact://12"}), Some("12")),
            (serde_json::json!({"id": " artifact://7 "}), Some("7")),
            (serde_json::json!({"id": "artifact://"}), None),
            (serde_json::json!({"id": "../etc/passwd"}), None),
            (serde_json::json!({"id": -1}), None),
            (serde_json::json!({"id": true}), None),
            (serde_json::json!({}), None),
        ];
        for (input, expected) in cases {
            let resolved =
                parse_arguments::<ReadArtifactArgs>(READ_ARTIFACT_TOOL, args(input.clone()))
                    .and_then(|a| a.id.resolve());
            assert_eq!(resolved.ok().as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn argument_errors_name_the_problem() {
        let missing = parse_arguments::<BashArgs>(BASH_TOOL, args(serde_json::json!({})));
        let message = missing.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("missing field `command`"), "{message}");

        let unknown = parse_arguments::<BashArgs>(
            BASH_TOOL,
            args(serde_json::json!({"command": "true", "timeout_s": 3})),
        );
        let message = unknown.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("unknown field `timeout_s`"), "{message}");

        let bad_env = parse_arguments::<BashArgs>(
            BASH_TOOL,
            args(serde_json::json!({"command": "true", "env": {"A": 1}})),
        );
        assert!(bad_env.is_err());

        let bad_id = parse_arguments::<ReadArtifactArgs>(
            READ_ARTIFACT_TOOL,
            args(serde_json::json!({"id": [1]})),
        );
        let message = bad_id.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("artifact://3"), "{message}");
    }

    #[test]
    fn numbers_may_come_as_strings() -> anyhow::Result<()> {
        let parsed: BashArgs = parse_arguments(
            BASH_TOOL,
            args(serde_json::json!({"command": "ls", "timeout": "5", "head": " 10 ", "tail": 3})),
        )?;
        assert_eq!(
            (parsed.timeout, parsed.head, parsed.tail),
            (Some(5), Some(10), Some(3))
        );
        // Negative, like the CLI's --timeout: clamped with a notice naming it.
        for timeout in [serde_json::json!(-5), serde_json::json!(" -5")] {
            let parsed: BashArgs = parse_arguments(
                BASH_TOOL,
                args(serde_json::json!({"command": "ls", "timeout": timeout})),
            )?;
            assert_eq!(parsed.timeout, Some(-5));
        }
        let parsed: ReadArtifactArgs = parse_arguments(
            READ_ARTIFACT_TOOL,
            args(serde_json::json!({"id": "3", "offset": "3", "limit": "20"})),
        )?;
        assert_eq!((parsed.offset, parsed.limit), (Some(3), Some(20)));
        for (field, value) in [
            ("timeout", serde_json::json!("five")),
            ("timeout", serde_json::json!(1.5)),
            ("timeout", serde_json::json!("-")),
            ("head", serde_json::json!("1.5")),
            ("tail", serde_json::json!(true)),
        ] {
            let mut call = serde_json::json!({"command": "ls"});
            call[field] = value.clone();
            let message = parse_arguments::<BashArgs>(BASH_TOOL, args(call))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                message.contains(&format!("`{field}` must be a whole number")),
                "{field}={value}: {message}"
            );
        }
        Ok(())
    }

    #[test]
    fn nulls_mean_defaults() -> anyhow::Result<()> {
        let parsed: BashArgs = parse_arguments(
            BASH_TOOL,
            args(serde_json::json!({"command": "ls", "timeout": null, "env": null})),
        )?;
        let call = BashCall::from(parsed);
        assert_eq!(call.command, "ls");
        assert_eq!(call.timeout, None);
        assert!(call.env.is_empty());
        Ok(())
    }

    #[test]
    fn progress_keeps_the_newest_output_on_a_char_boundary() {
        let mut text = "é".repeat(10);
        keep_tail(&mut text, 5);
        assert!(text.starts_with('…'));
        assert!(text.ends_with("éé"));
        assert!(text.len() <= 5 + '…'.len_utf8() + 1);

        let buffer = ProgressBuffer::default();
        buffer.push("a");
        buffer.push("");
        buffer.push("bc");
        buffer.finish();
        assert_eq!(buffer.take(), ("abc".to_owned(), 3, true));
    }
}
