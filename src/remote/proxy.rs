//! `agentbash rpc --target NAME`: an rpc server whose requests run on the target.
//!
//! Each request is judged here first (a `bash` request's command and a `job_start`'s
//! by the local profile's guard and interceptor: a refusal is answered here and never
//! travels), then forwarded over the one connection under an id of the connection's
//! own; its events and its response come back under the caller's id. `hello` and
//! `abort_bash` are answered here (an abort cancels the forwarded request, which
//! aborts it on the remote side). The rules of `agentbash rpc` hold: ids pending are
//! not reused, EOF on stdin lets every accepted request finish and be answered, a
//! stop signal aborts them, and the exit is 0. A dropped transport answers every
//! request in flight with `[target NAME: the connection ended]`; the next request
//! reconnects. Approval questions about a `bash` request, this side's policy's and
//! the target's, go to the client as `approval_request` events about its own request
//! id; its `approve` is answered here and passed on (docs/REMOTE.md, Approval).

use super::AskedOnce;
use super::backend::{job_refusal, local_request};
use super::conn::{CallError, Connection};
use crate::config::profile::LoadedProfile;
use crate::process::CancelToken;
use crate::request::ApproverRef;
use crate::server::CallError as Failure;
use crate::server::approve::{Questions, RpcApprover, answer_approve};
use crate::server::lines::{Input, MAX_LINE};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// What the proxy shares between the reader and the forwarding threads.
struct Shared {
    conn: Connection,
    local: LoadedProfile,
    invoking_dir: PathBuf,
    out: Mutex<std::io::Stdout>,
    /// `bash` requests not answered yet, by the caller's id (as text).
    pending: Mutex<HashMap<String, CancelToken>>,
    /// Approval questions put to the client, waiting for its `approve`.
    questions: Arc<Questions>,
}

impl Shared {
    fn send(&self, v: &Value) {
        let mut o = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = o.write_all(format!("{v}\n").as_bytes());
        let _ = o.flush();
    }

    /// The response of pending request `key`, its id freed under the same lock (as
    /// `agentbash rpc` does: the id may be reused as soon as the answer is read).
    fn answer(&self, v: &Value, key: &str) {
        let mut o = self.out.lock().unwrap_or_else(|p| p.into_inner());
        self.pending().remove(key);
        let _ = o.write_all(format!("{v}\n").as_bytes());
        let _ = o.flush();
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancelToken>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(&self, id: &Value, msg: impl Into<String>) {
        self.send(&crate::server::failure(id, None, &Failure::invalid(msg)));
    }
}

fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Serve rpc on stdin/stdout through `conn`; returns the exit code. The transport
/// is started (and its handshake checked) before any input is read: a target that
/// cannot be reached is exit 125.
pub fn serve(conn: Connection, local: LoadedProfile, invoking_dir: PathBuf) -> i32 {
    if let Err(e) = conn.connect() {
        crate::render::report_error(e);
        return crate::exit::FAILURE;
    }
    crate::process::signals::on_stop_signals(on_stop);
    let shared = Arc::new(Shared {
        conn,
        local,
        invoking_dir,
        out: Mutex::new(std::io::stdout()),
        pending: Mutex::default(),
        questions: Arc::default(),
    });
    let rx = crate::server::lines::spawn_reader(std::io::stdin(), MAX_LINE);
    let mut threads: Vec<std::thread::JoinHandle<()>> = Vec::new();
    loop {
        if STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
            break;
        }
        let line = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Input::Line(l)) => l,
            Ok(Input::TooLong(n, _)) => {
                shared.error(
                    &Value::Null,
                    format!("request line too long ({n} bytes; at most {MAX_LINE} bytes)"),
                );
                continue;
            }
            Ok(Input::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
        };
        threads.retain(|t| !t.is_finished());
        if let Some(t) = accept(&shared, &line) {
            threads.push(t);
        }
    }
    // No answer to a question can come any more.
    shared.questions.close();
    // EOF: every accepted request finishes and is answered. A stop signal (then or
    // during that wait): every forwarded run is aborted, and still answered.
    let mut aborted = false;
    loop {
        if !aborted && STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
            aborted = true;
            for t in shared.pending().values() {
                t.cancel(libc::SIGINT);
            }
        }
        threads.retain(|t| !t.is_finished());
        if threads.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    shared.conn.close();
    0
}

/// Handle one request line: answered here, or forwarded on a thread (returned).
fn accept(shared: &Arc<Shared>, line: &[u8]) -> Option<std::thread::JoinHandle<()>> {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return None;
    }
    let v: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            shared.error(&Value::Null, format!("malformed JSON: {e}"));
            return None;
        }
    };
    let id = v.get("id").cloned().unwrap_or(Value::Null);
    let Some(obj) = v.as_object() else {
        shared.error(&id, "a request must be a JSON object");
        return None;
    };
    if !matches!(id, Value::String(_) | Value::Number(_)) {
        shared.error(&id, "missing or invalid `id`: use a string or a number");
        return None;
    }
    let kind = obj.get("type").and_then(Value::as_str).map(str::to_string);
    let key = id_key(&id);
    match kind.as_deref() {
        Some("hello") => {
            let remote = shared.conn.hello().unwrap_or(Value::Null);
            shared.send(&json!({"id": id, "type": "response", "command": "hello", "success": true, "data": {
                "protocol": crate::server::PROTOCOL,
                "version": env!("CARGO_PKG_VERSION"),
                "capabilities": remote["capabilities"].clone(),
                "profile": remote["profile"].clone(),
                "description": remote["description"].clone(),
                "target": {"name": shared.conn.target.name, "version": remote["version"].clone()},
            }}));
            return None;
        }
        Some("abort_bash") => {
            abort(shared, &id, obj.get("target"));
            return None;
        }
        Some("approve") => {
            answer_approve(&v, &id, &shared.questions, &|m| shared.send(m));
            return None;
        }
        None => {
            shared.error(&id, "missing `type`: use \"bash\" or \"abort_bash\"");
            return None;
        }
        _ => {}
    }
    let kind = kind.unwrap_or_default();
    if kind == "bash" && shared.pending().contains_key(&key) {
        shared.send(&json!({
            "id": null, "type": "response", "command": "bash", "success": false,
            "rejected": true, "duplicate_id": id, "error_kind": crate::server::ErrorKind::InvalidRequest,
            "error": format!("a request with id {key} is still running or queued; this request was not run: use a new id"),
        }));
        return None;
    }
    let mut request = obj.clone();
    request.remove("id");
    let events = v["events"] == true;
    let mut token = None;
    let mut local_req = None;
    if kind == "bash" {
        let call = match crate::server::rpc::parse_bash(&v) {
            Ok(c) => c,
            Err(e) => {
                shared.error(&id, e);
                return None;
            }
        };
        let req = local_request(&call, &shared.local, &shared.invoking_dir);
        if let Err(e) = req.validate() {
            shared.error(&id, e.to_string());
            return None;
        }
        let t = CancelToken::new();
        shared.pending().insert(key.clone(), t.clone());
        token = Some(t);
        local_req = Some(req);
    } else if kind == "job_start"
        && let Some(command) = obj.get("command").and_then(Value::as_str)
        && let Some(refused) = job_refusal(command, &shared.local, &shared.invoking_dir)
    {
        let refused = Failure {
            kind: crate::server::ErrorKind::Refused,
            message: refused,
        };
        shared.send(&crate::server::failure(&id, Some(&kind), &refused));
        return None;
    }
    let shared = Arc::clone(shared);
    Some(std::thread::spawn(move || {
        // The client answers what this side's policy and the target's ask about a
        // run (`approval_request` / `approve`, as from `agentbash rpc`), once each.
        let approver = local_req.as_ref().and_then(|_| {
            let to = Arc::clone(&shared);
            AskedOnce::wrap(Some(&ApproverRef(Arc::new(RpcApprover {
                send: Arc::new(move |m| to.send(m)),
                questions: Arc::clone(&shared.questions),
                request: id.clone(),
            }))))
        });
        if let (Some(req), Some(tok)) = (&local_req, &token) {
            let mut req = req.clone();
            req.approver = approver.clone();
            if let Some(refused) = crate::pipeline::refused_before_running(&req, &shared.local, tok)
            {
                let mut answer = json!({"id": id, "type": "response", "command": "bash", "success": true, "data": refused});
                if events {
                    answer["exit"] = json!(refused.agentbash_exit);
                    answer["annotation"] = json!(refused.annotation);
                }
                shared.answer(&answer, &key);
                return;
            }
        }
        let wire = shared.conn.next_id();
        let answer = shared.conn.call_as(
            wire,
            request,
            &mut |e| {
                let mut e = e.clone();
                e["id"] = id.clone();
                shared.send(&e);
            },
            token.as_ref(),
            approver.as_ref(),
        );
        let answer = match answer {
            Ok(mut a) => {
                a["id"] = id.clone();
                a
            }
            Err(e) => {
                let message = match &e {
                    CallError::Connect(c) => c.to_string(),
                    CallError::Dropped(m) => m.clone(),
                };
                let data = match &local_req {
                    Some(req) => serde_json::to_value(crate::pipeline::failed(
                        req,
                        &shared.local,
                        crate::exit::FAILURE,
                        message.clone(),
                    ))
                    .unwrap_or(Value::Null),
                    None => json!({"exit_code": crate::exit::FAILURE, "error": message}),
                };
                json!({"id": id, "type": "response", "command": kind, "success": false, "error": message, "error_kind": crate::server::ErrorKind::Failed, "data": data})
            }
        };
        if local_req.is_some() {
            shared.answer(&answer, &key);
        } else {
            shared.send(&answer);
        }
    }))
}

/// `abort_bash`: cancel the forwarded request(s); each still answers (cancelled).
fn abort(shared: &Shared, id: &Value, target: Option<&Value>) {
    let ack = json!({"id": id, "type": "response", "command": "abort_bash", "success": true});
    match target.filter(|t| !t.is_null()) {
        Some(t) => {
            let key = id_key(t);
            let token = shared.pending().get(&key).cloned();
            match token {
                Some(tok) => {
                    tok.cancel(libc::SIGINT);
                    shared.send(&ack);
                }
                None => shared.send(&crate::server::failure(
                    id,
                    Some("abort_bash"),
                    &Failure::not_found(format!("no running or queued request with id {key}")),
                )),
            }
        }
        None => {
            for t in shared.pending().values() {
                t.cancel(libc::SIGINT);
            }
            shared.send(&ack);
        }
    }
}
