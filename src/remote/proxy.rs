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
use crate::pipeline::RunRequest;
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
    let (v, id) = read_request(shared, line)?;
    let kind = v.get("type").and_then(Value::as_str).map(str::to_string);
    if answered_here(shared, &v, &id, kind.as_deref()) {
        return None;
    }
    let forward = prepare(shared, &v, id, kind.unwrap_or_default())?;
    let shared = Arc::clone(shared);
    Some(std::thread::spawn(move || run_forward(&shared, forward)))
}

/// The request object and its id, or `None` once a blank line is skipped or a bad
/// one answered (the id is checked before anything else reads the request).
fn read_request(shared: &Shared, line: &[u8]) -> Option<(Value, Value)> {
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
    if !v.is_object() {
        shared.error(&id, "a request must be a JSON object");
        return None;
    }
    if !matches!(id, Value::String(_) | Value::Number(_)) {
        shared.error(&id, "missing or invalid `id`: use a string or a number");
        return None;
    }
    Some((v, id))
}

/// The types this side answers itself (never forwarded); true when `kind` was one.
fn answered_here(shared: &Shared, v: &Value, id: &Value, kind: Option<&str>) -> bool {
    match kind {
        Some("hello") => hello(shared, id),
        Some("abort_bash") => abort(shared, id, v.get("target")),
        Some("approve") => answer_approve(v, id, &shared.questions, &|m| shared.send(m)),
        None => shared.error(id, "missing `type`: use \"bash\" or \"abort_bash\""),
        _ => return false,
    }
    true
}

/// `hello`: this side's protocol and version, the target's capabilities and profile.
fn hello(shared: &Shared, id: &Value) {
    let remote = shared.conn.hello().unwrap_or(Value::Null);
    shared.send(
        &json!({"id": id, "type": "response", "command": "hello", "success": true, "data": {
            "protocol": crate::server::PROTOCOL,
            "version": env!("CARGO_PKG_VERSION"),
            "capabilities": remote["capabilities"].clone(),
            "profile": remote["profile"].clone(),
            "description": remote["description"].clone(),
            "target": {"name": shared.conn.target.name, "version": remote["version"].clone()},
        }}),
    );
}

/// A request on its way to the target: what the forwarding thread needs.
struct Forward {
    id: Value,
    key: String,
    kind: String,
    /// The request as sent, without the caller's id.
    request: serde_json::Map<String, Value>,
    events: bool,
    /// A `bash` request's local view (judged here before it travels) and the token
    /// that aborts it; `None` for the other types.
    bash: Option<(RunRequest, CancelToken)>,
}

/// Judge a request before it travels: a duplicate `bash` id, an invalid `bash`
/// request and a refused `job_start` are answered here (`None`). A `bash` request
/// is registered as pending under the caller's id.
fn prepare(shared: &Shared, v: &Value, id: Value, kind: String) -> Option<Forward> {
    let key = id_key(&id);
    if kind == "bash" && shared.pending().contains_key(&key) {
        shared.send(&json!({
            "id": null, "type": "response", "command": "bash", "success": false,
            "rejected": true, "duplicate_id": id, "error_kind": crate::server::ErrorKind::InvalidRequest,
            "error": format!("a request with id {key} is still running or queued; this request was not run: use a new id"),
        }));
        return None;
    }
    let mut request = v.as_object().cloned().unwrap_or_default();
    request.remove("id");
    let events = v["events"] == true;
    let mut bash = None;
    if kind == "bash" {
        let call = match crate::server::rpc::parse_bash(v) {
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
        let token = CancelToken::new();
        shared.pending().insert(key.clone(), token.clone());
        bash = Some((req, token));
    } else if kind == "job_start"
        && let Some(command) = v.get("command").and_then(Value::as_str)
        && let Some(refused) = job_refusal(command, &shared.local, &shared.invoking_dir)
    {
        let refused = Failure {
            kind: crate::server::ErrorKind::Refused,
            message: refused,
        };
        shared.send(&crate::server::failure(&id, Some(&kind), &refused));
        return None;
    }
    Some(Forward {
        id,
        key,
        kind,
        request,
        events,
        bash,
    })
}

/// The forwarding thread: a `bash` request the local policy refuses is answered
/// here; anything else travels, its events and answer coming back under the
/// caller's id.
fn run_forward(shared: &Arc<Shared>, mut f: Forward) {
    // The client answers what this side's policy and the target's ask about a
    // run (`approval_request` / `approve`, as from `agentbash rpc`), once each.
    let approver = f.bash.as_ref().and_then(|_| {
        let to = Arc::clone(shared);
        AskedOnce::wrap(Some(&ApproverRef(Arc::new(RpcApprover {
            send: Arc::new(move |m| to.send(m)),
            questions: Arc::clone(&shared.questions),
            request: f.id.clone(),
        }))))
    });
    if let Some((req, tok)) = &f.bash
        && refused_here(shared, &f, req, tok, approver.clone())
    {
        return;
    }
    let wire = shared.conn.next_id();
    let request = std::mem::take(&mut f.request);
    let answer = shared.conn.call_as(
        wire,
        request,
        &mut |e| {
            let mut e = e.clone();
            e["id"] = f.id.clone();
            shared.send(&e);
        },
        f.bash.as_ref().map(|(_, tok)| tok),
        approver.as_ref(),
    );
    let answer = match answer {
        Ok(mut a) => {
            a["id"] = f.id.clone();
            a
        }
        Err(e) => failed_answer(shared, &f, &e),
    };
    if f.bash.is_some() {
        shared.answer(&answer, &f.key);
    } else {
        shared.send(&answer);
    }
}

/// Answer a `bash` request the local guard, interceptor or approval refuses (true);
/// such a request never travels.
fn refused_here(
    shared: &Shared,
    f: &Forward,
    req: &RunRequest,
    tok: &CancelToken,
    approver: Option<ApproverRef>,
) -> bool {
    let mut req = req.clone();
    req.approver = approver;
    let Some(refused) = crate::pipeline::refused_before_running(&req, &shared.local, tok) else {
        return false;
    };
    let mut answer = json!({"id": f.id, "type": "response", "command": "bash", "success": true, "data": refused});
    if f.events {
        answer["exit"] = json!(refused.agentbash_exit);
        answer["annotation"] = json!(refused.annotation);
    }
    shared.answer(&answer, &f.key);
    true
}

/// The caller's answer when the call could not reach the target or the connection
/// ended: a `bash` request still gets a whole result (exit 125) to read.
fn failed_answer(shared: &Shared, f: &Forward, e: &CallError) -> Value {
    let message = match e {
        CallError::Connect(c) => c.to_string(),
        CallError::Dropped(m) => m.clone(),
    };
    let data = match &f.bash {
        Some((req, _)) => serde_json::to_value(crate::pipeline::failed(
            req,
            &shared.local,
            crate::exit::FAILURE,
            message.clone(),
        ))
        .unwrap_or(Value::Null),
        None => json!({"exit_code": crate::exit::FAILURE, "error": message}),
    };
    json!({"id": f.id, "type": "response", "command": f.kind, "success": false, "error": message, "error_kind": crate::server::ErrorKind::Failed, "data": data})
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
