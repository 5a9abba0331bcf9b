//! `agentbash run --target NAME`: the local profile's refusals first (a refused
//! command never travels), then the command as an rpc `bash` request with `events`,
//! whose `start`, `output` and `notice` events and final result drive the same
//! renderer a local run drives — so the text, the JSON and the exit code are a local
//! run's.

use super::Target;
use super::conn::{CallError, Connection};
use crate::config::profile::LoadedProfile;
use crate::exit;
use crate::pipeline::{Event, RunRequest, failed, refused_before_running};
use crate::process::CancelToken;
use crate::render::{Renderer, Start};
use crate::request::ModeChoice;
use crate::result::RunResult;
use serde_json::{Map, Value, json};

/// What a remote run cannot do: each is a usage error naming the option.
fn unsupported(req: &RunRequest) -> Option<&'static str> {
    if req.mode == ModeChoice::Pty {
        return Some(
            "--pty is not available with --target: the remote side runs commands in print mode",
        );
    }
    if req.stdin {
        return Some("--stdin is not available with --target: the remote command's stdin is empty");
    }
    if req.stderr_separate {
        return Some(
            "--stderr separate is not available with --target: the remote side sends one output stream",
        );
    }
    None
}

/// The rpc `bash` request for `req` (its fields as `agentbash rpc` takes them).
pub fn bash_request(req: &RunRequest) -> Result<Map<String, Value>, String> {
    let mut m = Map::new();
    m.insert("type".into(), json!("bash"));
    m.insert("command".into(), json!(req.command));
    m.insert("events".into(), json!(true));
    if let Some(t) = req.timeout {
        m.insert("timeout".into(), json!(t));
    }
    if let Some(c) = &req.cwd {
        let c = c
            .to_str()
            .ok_or_else(|| format!("-C {}: a remote cwd must be valid UTF-8", c.display()))?;
        m.insert("cwd".into(), json!(c));
    }
    if let Some(h) = req.head {
        m.insert("head".into(), json!(h));
    }
    if let Some(t) = req.tail {
        m.insert("tail".into(), json!(t));
    }
    if !req.env.is_empty() {
        let env: Map<String, Value> = req.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        m.insert("env".into(), Value::Object(env));
    }
    if let Some(s) = &req.session {
        m.insert("session".into(), json!(s));
    }
    // `--no-intercept`: no tool to route to, so the remote interceptor blocks nothing.
    let tools = if req.no_intercept {
        Some(Vec::new())
    } else {
        req.tools.clone()
    };
    if let Some(t) = tools {
        m.insert("tools".into(), json!(t));
    }
    if let Some(mode) = req.sandbox {
        m.insert(
            "sandbox".into(),
            serde_json::to_value(mode).unwrap_or(Value::Null),
        );
    }
    Ok(m)
}

/// Hand a remote event to the renderer.
pub fn forward_event(e: &Value, renderer: &mut dyn Renderer) {
    match e["type"].as_str() {
        Some("start") => {
            if let Ok(start) = serde_json::from_value::<Start>(e["data"].clone()) {
                renderer.start(&start);
            }
        }
        Some("output") => {
            if let Some(t) = e["data"].as_str() {
                renderer.event(Event::Output(t));
            }
        }
        Some("notice") => {
            if let Some(n) = e["message"].as_str() {
                renderer.event(Event::Notice(n));
            }
        }
        _ => {}
    }
}

/// The run's result from the remote's response: its `data` read back, with what the
/// result does not serialize (the exit code agentbash exits with, the annotation, the
/// output alone) taken from the response itself.
pub fn result_of(response: &Value) -> Result<RunResult, String> {
    let data = response
        .get("data")
        .filter(|d| d.is_object())
        .ok_or_else(|| {
            response["error"]
                .as_str()
                .unwrap_or("no result")
                .to_string()
        })?;
    let mut r: RunResult = serde_json::from_value(data.clone())
        .map_err(|e| format!("the remote answered a result this agentbash cannot read: {e}"))?;
    r.body = r.output.clone();
    r.annotation = response["annotation"].as_str().map(str::to_string);
    r.agentbash_exit = match response["exit"].as_i64() {
        Some(code) => code as i32,
        None => derived_exit(&r),
    };
    Ok(r)
}

/// The exit code of a result from a peer that did not say it (`events` off).
fn derived_exit(r: &RunResult) -> i32 {
    match (r.exit_code, &r.blocked, &r.error, &r.job) {
        (_, Some(_), _, _) => exit::BLOCKED,
        (Some(c), _, _, _) => c,
        (None, _, Some(_), _) => exit::FAILURE,
        (None, _, None, Some(_)) => 0,
        (None, _, None, None) => exit::FAILURE,
    }
}

/// Run `req` on `target`, after `local`'s refusals; events go to `renderer` as they
/// come, the result is returned (for the caller to finish the renderer with).
pub fn run(
    target: &Target,
    req: &RunRequest,
    local: &LoadedProfile,
    cancel: &CancelToken,
    renderer: &mut dyn Renderer,
) -> RunResult {
    if let Some(msg) = unsupported(req) {
        return failed(req, local, exit::USAGE, msg.to_string());
    }
    // This side's policy asks first, the target's may ask the same: asked once.
    let mut once = req.clone();
    once.approver = super::AskedOnce::wrap(req.approver.as_ref());
    let req = &once;
    if let Some(refused) = refused_before_running(req, local, cancel) {
        return refused;
    }
    let request = match bash_request(req) {
        Ok(r) => r,
        Err(e) => return failed(req, local, exit::USAGE, e),
    };
    let conn = Connection::new(target.clone());
    let answer = conn.call_asking(
        request,
        &mut |e| forward_event(e, renderer),
        cancel,
        req.approver.as_ref(),
    );
    let result = match answer {
        Ok(response) => match result_of(&response) {
            Ok(r) => r,
            // Rejected before it ran: what the remote said is wrong with the request.
            Err(e) if is_invalid_request(&response) => failed(
                req,
                local,
                exit::USAGE,
                format!("[target {}] {e}", target.name),
            ),
            Err(e) => failed(req, local, exit::FAILURE, e),
        },
        Err(CallError::Connect(e)) => failed(req, local, exit::FAILURE, e.to_string()),
        Err(CallError::Dropped(m)) => failed(req, local, exit::FAILURE, m),
    };
    conn.close();
    result
}

/// Whether the remote answered that the request itself is wrong (`error_kind`
/// `invalid_request`; from a server older than `error_kind`, an answer without a
/// result).
fn is_invalid_request(response: &Value) -> bool {
    match response["error_kind"].as_str() {
        Some(kind) => kind == "invalid_request",
        None => response["data"].is_null(),
    }
}
