//! Long-lived machine interfaces: NDJSON RPC and an MCP server (docs/PROTOCOL.md). Both turn
//! a caller's request into a [`RunRequest`] the same way ([`build_request`]) and run
//! it through the same engine ([`engine::Engine`]).

pub mod approve;
mod artifact_calls;
pub mod backend;
pub mod engine;
mod lenient;
pub mod lines;
pub mod mcp;
mod mcp_stdio;
pub mod rpc;

use crate::pipeline::RunRequest;

/// What kind of failure a request met: the rpc answer's `error_kind`
/// (docs/PROTOCOL.md), so a caller acts on it without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request itself is wrong (a field, a value, a request type): fixed and
    /// sent again, it can succeed.
    InvalidRequest,
    /// What it names is not there (a job, an artifact, a path).
    NotFound,
    /// The guard, the sandbox, the approval policy or a rule refused it.
    Refused,
    /// It could not be carried out (agentbash's own failure: a profile, a missing
    /// shell, a file it cannot read).
    Failed,
}

/// A request that failed: its kind and the message for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    pub kind: ErrorKind,
    pub message: String,
}

impl CallError {
    pub fn invalid(message: impl Into<String>) -> CallError {
        CallError {
            kind: ErrorKind::InvalidRequest,
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> CallError {
        CallError {
            kind: ErrorKind::NotFound,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> CallError {
        CallError {
            kind: ErrorKind::Failed,
            message: message.into(),
        }
    }
}

/// A `success: false` rpc answer: the message in `error`, its kind in `error_kind`.
pub fn failure(id: &serde_json::Value, command: Option<&str>, e: &CallError) -> serde_json::Value {
    let mut v = serde_json::json!({"id": id, "type": "response"});
    if let Some(c) = command {
        v["command"] = serde_json::json!(c);
    }
    v["success"] = false.into();
    v["error"] = e.message.clone().into();
    v["error_kind"] = serde_json::json!(e.kind);
    v
}

/// The message alone, where the caller is a model that reads it (the MCP tools).
impl From<CallError> for String {
    fn from(e: CallError) -> String {
        e.message
    }
}

impl From<crate::jobs::JobError> for CallError {
    fn from(e: crate::jobs::JobError) -> CallError {
        use crate::jobs::JobError as J;
        let kind = match &e {
            J::NotFound(_) => ErrorKind::NotFound,
            J::BadName(_) | J::BadReady(..) | J::BadRequest(_) | J::NameTaken(..) => {
                ErrorKind::InvalidRequest
            }
            J::Refused(_) => ErrorKind::Refused,
            _ => ErrorKind::Failed,
        };
        CallError {
            kind,
            message: e.to_string(),
        }
    }
}

impl From<crate::toolbox::ToolError> for CallError {
    fn from(e: crate::toolbox::ToolError) -> CallError {
        use crate::toolbox::ToolError as T;
        let kind = match &e {
            T::Arguments { .. } | T::Unknown(_) | T::NoMatch { .. } | T::Ambiguous { .. } => {
                ErrorKind::InvalidRequest
            }
            T::Refused(_) => ErrorKind::Refused,
            T::Path(_) | T::Internal(_) => ErrorKind::Failed,
        };
        CallError {
            kind,
            message: e.to_string(),
        }
    }
}

/// The rpc protocol's version, answered to `hello` (docs/PROTOCOL.md). A remote
/// target's client refuses a server speaking another one. Raise it when a request,
/// an answer or an event changes in a way an older peer would misread.
pub const PROTOCOL: u32 = 1;

/// What this server offers, answered to `hello`: the request types beyond `bash`
/// and `abort_bash`, and the `events` field.
pub const CAPABILITIES: &[&str] = &[
    "bash",
    "abort_bash",
    "events",
    "jobs",
    "read_artifact",
    "artifact_read",
    "approval",
];

/// The `data` of the answer to `hello`: the protocol, this agentbash's version and
/// capabilities, and the profile with the sentence a model is told about it.
pub fn hello(engine: &engine::Engine) -> serde_json::Value {
    serde_json::json!({
        "protocol": PROTOCOL,
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": CAPABILITIES,
        "profile": engine.profile.name,
        "description": engine.description(),
    })
}
use backend::BashCall;
use std::path::Path;

/// Turn a call into a validated run request ([`RunRequest::validate`]). Errors name
/// the field. Both servers call this as soon as a request is parsed, before it waits
/// for a concurrency slot, so a bad request is answered at once. A `sandbox` field is
/// refused unless `sandbox` (the profile's policy) has `allow_override = true`.
pub fn build_request(
    call: &BashCall,
    invoking_dir: &Path,
    sandbox: &crate::sandbox::Policy,
) -> Result<RunRequest, CallError> {
    let mut req = RunRequest::new(call.command.clone());
    req.invoking_dir = invoking_dir.to_path_buf();
    req.cwd = call.cwd.as_ref().map(Into::into);
    req.timeout = call.timeout;
    req.head = call.head;
    req.tail = call.tail;
    req.env = call
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    req.session = call.session.clone();
    req.tools = call.tools.clone();
    req.mode = crate::request::ModeChoice::Print;
    req.sandbox = crate::pipeline::sandbox::peer_override(sandbox, call.sandbox.as_deref())
        .map_err(CallError::invalid)?;
    req.approver = call.approver.clone();
    req.validate()
        .map_err(|e| CallError::invalid(e.to_string()))?;
    Ok(req)
}
