//! Long-lived machine interfaces: NDJSON RPC (§9) and an MCP server (§10). Both turn
//! a caller's request into a [`RunRequest`] the same way ([`build_request`]) and run
//! it through the same engine ([`engine::Engine`]).

pub mod backend;
pub mod engine;
mod lenient;
pub mod mcp;
mod mcp_stdio;
pub mod rpc;

use crate::run::RunRequest;
use backend::BashCall;
use std::path::Path;

/// Validate a call and turn it into a run request. Errors name the field.
pub fn build_request(call: &BashCall, invoking_dir: &Path) -> Result<RunRequest, String> {
    if call.command.trim().is_empty() {
        return Err("`command` is empty: give the shell command to run".into());
    }
    // NUL cannot reach a process: say which field has one instead of failing late.
    let nul = |s: &str| s.contains('\0');
    if nul(&call.command) {
        return Err("`command` contains a NUL byte, which no shell can receive".into());
    }
    if let Some((k, _)) = call.env.iter().find(|(k, v)| nul(k) || nul(v)) {
        return Err(format!(
            "`env` entry {:?} contains a NUL byte",
            k.replace('\0', "\\0")
        ));
    }
    if call.cwd.as_deref().is_some_and(nul) {
        return Err("`cwd` contains a NUL byte".into());
    }
    for k in call.env.keys() {
        if !crate::cli::valid_env_name(k) {
            return Err(format!(
                "`env` key {k:?} is not a valid variable name: use letters, digits and _, not starting with a digit"
            ));
        }
    }
    if let Some(s) = &call.session {
        crate::cli::parse_session_name(s).map_err(|e| format!("`session`: {e}"))?;
    }
    for (name, v) in [("head", call.head), ("tail", call.tail)] {
        if v == Some(0) {
            return Err(format!(
                "`{name}` must be at least 1 (omit it to show all lines)"
            ));
        }
    }
    let mut req = RunRequest::new(call.command.clone());
    req.invoking_dir = invoking_dir.to_path_buf();
    req.cwd = call.cwd.as_ref().map(Into::into);
    req.timeout = call.timeout.map(|t| t.min(i64::MAX as u64) as i64);
    req.head = call.head;
    req.tail = call.tail;
    req.env = call
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    req.session = call.session.clone();
    req.tools = call.tools.clone();
    req.mode = crate::stages::ModeChoice::Print;
    Ok(req)
}
