//! [`McpServer`]: the protocol's handler, one call at a time — who answers a call's
//! approval question, the run on a blocking thread with its progress and cancellation,
//! the job, file and artifact tools, and the result or tool error sent back.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitResult, Implementation, InputRequest, InputRequiredResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::{Semaphore, watch};

use super::approval::{Answered, Elicitation, NoElicitation, NotAhead, elicitation_form, elicited};
use super::args::{BashArgs, ReadArtifactArgs, ToolInputError, parse_arguments};
use super::progress::{ProgressBuffer, forward_progress};
use super::tools::{file_tool_definitions, tool_definitions};
use super::{
    APPROVAL_INPUT, BASH_TOOL, FILE_TOOLS, JOB_TOOLS, OWN_TOOL_FOR_BACKGROUND,
    PROGRESS_DRAIN_TIMEOUT, READ_ARTIFACT_TOOL,
};
use crate::request::Answer;
use crate::server::backend::{Backend, BashCall, BashOutcome};

/// The MCP face of a [`Backend`].
pub struct McpServer {
    /// One server type for every backend (local engine, remote target): the
    /// protocol's whole async stack is compiled once, not once per backend.
    backend: Arc<dyn Backend>,
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
pub(super) struct Asked {
    /// The call's arguments, as sent: the answer is for this call only.
    arguments: serde_json::Value,
    asks: Vec<crate::request::Ask>,
    /// After this the answer comes too late (`approval.timeout`).
    deadline: std::time::Instant,
}

impl McpServer {
    pub(super) fn new(
        backend: Arc<dyn Backend>,
        closed: watch::Sender<bool>,
    ) -> anyhow::Result<Self> {
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

impl ServerHandler for McpServer {
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

/// Stops the watcher of a run, and the run itself if this call is dropped before the
/// run ends (setting the flag of a finished run is harmless).
pub(super) struct CancelOnDrop(
    Arc<crate::process::CancelToken>,
    tokio::task::JoinHandle<()>,
);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel(libc::SIGINT);
        self.1.abort();
    }
}

pub(super) fn outcome_result(outcome: BashOutcome) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.text)]);
    result.structured_content = Some(outcome.result);
    result.is_error = Some(outcome.is_error);
    result
}

pub(super) fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
