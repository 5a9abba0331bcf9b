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
) -> Result<RunRequest, String> {
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
    req.sandbox = crate::pipeline::sandbox::peer_override(sandbox, call.sandbox.as_deref())?;
    req.approver = call.approver.clone();
    req.validate().map_err(|e| e.to_string())?;
    Ok(req)
}
