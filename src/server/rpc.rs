//! `agentbash rpc` (docs/PROTOCOL.md): JSON requests on stdin, one per line; JSON messages on
//! stdout, one per line. Up to `server.max_concurrent` requests run at once, each on a
//! worker thread; the rest wait in a queue as parsed requests (no thread, no process),
//! and a worker that finishes takes the next. A session's runs are serialized by the
//! session lock. Malformed input is answered, never fatal. EOF on stdin means "no
//! more requests": every accepted request still runs (each within its own timeout)
//! and is answered, then the server exits 0, so a file of requests piped in is a
//! batch. SIGTERM/SIGINT/SIGHUP abort what runs, answer what is queued as cancelled,
//! wait for the aborted runs to answer, and exit 0. Nothing but protocol messages goes
//! to stdout. The file requests (`read`, `grep`, `glob`, `edit`, `write`) are answered
//! by the toolbox (`crate::toolbox`), each on a thread of its own outside the queue.
//! A run the approval policy asks about sends an `approval_request` event and waits
//! for the client's `approve` (read by the reader, like `abort_bash`); at EOF no one
//! can answer any more, and `approval.unattended` decides what still waits.

use super::approve::{Questions, RpcApprover};
use super::backend::BashCall;
use super::engine::Engine;
use super::{CallError, ErrorKind, failure};
use crate::process::CancelToken;
use crate::request::ApproverRef;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::lines::Input;
pub use super::lines::MAX_LINE;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BashRequest {
    #[allow(dead_code)]
    id: Value,
    #[serde(rename = "type")]
    #[allow(dead_code)]
    kind: String,
    command: String,
    #[serde(default, deserialize_with = "super::lenient::timeout")]
    timeout: Option<i64>,
    cwd: Option<String>,
    #[serde(default, deserialize_with = "super::lenient::head")]
    head: Option<usize>,
    #[serde(default, deserialize_with = "super::lenient::tail")]
    tail: Option<usize>,
    env: Option<BTreeMap<String, String>>,
    session: Option<String>,
    tools: Option<Vec<String>>,
    stream: Option<bool>,
    /// Also `start` and `notice` events, and the response's `exit` and `annotation`:
    /// what a remote target's client needs to render the run as a local one.
    events: Option<bool>,
    sandbox: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AbortRequest {
    #[allow(dead_code)]
    id: Value,
    #[serde(rename = "type")]
    #[allow(dead_code)]
    kind: String,
    target: Option<Value>,
}

/// Serialized writes of whole lines to stdout.
#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn send(&self, v: &Value) {
        let line = format!("{v}\n");
        let mut o = match self.0.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        let _ = o.write_all(line.as_bytes());
        let _ = o.flush();
    }

    /// Write the response of pending request `key` and free its id, both under the
    /// stdout lock: a client that reads the answer may reuse the id at once, and
    /// nothing of a request reusing it can come before this answer.
    fn answer(&self, v: &Value, sched: &Scheduler, key: &str) {
        let line = format!("{v}\n");
        let mut o = match self.0.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        sched.pending().remove(key);
        let _ = o.write_all(line.as_bytes());
        let _ = o.flush();
    }

    /// A request this server cannot read (not JSON, no id, an unknown type, a bad
    /// field): `error_kind` `invalid_request`.
    fn error(&self, id: &Value, msg: impl Into<String>) {
        self.send(&failure(id, None, &CallError::invalid(msg)));
    }

    /// A rejected `abort_bash`: its `command` tells it apart from a `bash` answer
    /// under the same id (abort ids are not tracked).
    fn abort_error(&self, id: &Value, e: &CallError) {
        self.send(&failure(id, Some("abort_bash"), e));
    }

    /// A request reusing the id of one not answered yet: answered under `id: null`
    /// (the id belongs to the pending request's answer), the id in `duplicate_id`.
    fn duplicate(&self, id: &Value) {
        let key = id_key(id);
        self.send(&json!({
            "id": null, "type": "response", "command": "bash", "success": false,
            "rejected": true, "duplicate_id": id, "error_kind": ErrorKind::InvalidRequest,
            "error": format!("a request with id {key} is still running or queued; this request was not run: use a new id"),
        }));
    }
}

fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// One accepted `bash` request: what a queued request costs is this, nothing more.
struct Job {
    id: Value,
    key: String,
    call: BashCall,
    stream: bool,
    events: bool,
    token: CancelToken,
}

/// Requests running and waiting. Workers are threads that run jobs back to back;
/// there are never more than `max` of them.
struct Scheduler {
    max: usize,
    state: Mutex<Queue>,
    /// Every accepted request not answered yet (running or queued), by id.
    pending: Mutex<HashMap<String, CancelToken>>,
}

#[derive(Default)]
struct Queue {
    workers: usize,
    waiting: VecDeque<Job>,
}

impl Scheduler {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancelToken>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `job` now if a worker is free, else queue it. Returns a new worker thread.
    fn submit(
        self: &Arc<Self>,
        job: Job,
        engine: &Arc<Engine>,
        out: &Out,
    ) -> Option<std::thread::JoinHandle<()>> {
        {
            let mut q = self.queue();
            if q.workers >= self.max {
                q.waiting.push_back(job);
                return None;
            }
            q.workers += 1;
        }
        let (sched, engine, out) = (self.clone(), engine.clone(), out.clone());
        Some(std::thread::spawn(move || {
            let mut next = Some(job);
            let mut queued = false;
            while let Some(job) = next {
                if queued && job.token.reason().is_some() {
                    // Aborted between the queue and this worker.
                    answer_unstarted(&engine, &out, &sched, job);
                } else {
                    let answer = run_bash(&engine, &out, &job);
                    out.answer(&answer, &sched, &job.key);
                }
                let mut q = sched.queue();
                next = q.waiting.pop_front();
                queued = true;
                if next.is_none() {
                    q.workers -= 1;
                }
            }
        }))
    }

    /// Take the queued request `key` out of the queue, if it is there.
    fn unqueue(&self, key: &str) -> Option<Job> {
        let mut q = self.queue();
        let at = q.waiting.iter().position(|j| j.key == key)?;
        q.waiting.remove(at)
    }

    fn unqueue_all(&self) -> Vec<Job> {
        self.queue().waiting.drain(..).collect()
    }
}

/// Answer a request that was cancelled while it waited in the queue.
fn answer_unstarted(engine: &Engine, out: &Out, sched: &Scheduler, job: Job) {
    let answer = match engine.not_started(&job.call, sched.max) {
        Ok(r) => {
            let data = serde_json::to_value(&r).unwrap_or(Value::Null);
            json!({"id": job.id, "type": "response", "command": "bash", "success": true, "data": data})
        }
        Err(e) => failure(&job.id, None, &e),
    };
    out.answer(&answer, sched, &job.key);
}

pub fn serve(engine: Engine) -> i32 {
    // The handler only stores to an atomic; the reader thread polls it.
    crate::process::signals::on_stop_signals(on_stop);
    let mut server = Server::new(engine);
    let rx = super::lines::spawn_reader(std::io::stdin(), MAX_LINE);
    while let Some(input) = next_input(&rx) {
        match input {
            Input::Eof => break,
            Input::TooLong(n, _) => server.out.error(
                &Value::Null,
                format!("request line too long ({n} bytes; at most {MAX_LINE} bytes)"),
            ),
            Input::Line(l) => server.request(&l),
        }
    }
    server.finish();
    0
}

/// The reader's next input; `None` once a stop signal arrived or the reader is gone.
fn next_input(rx: &mpsc::Receiver<Input>) -> Option<Input> {
    loop {
        if STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
            return None;
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(i) => return Some(i),
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// What the serve loop holds: the engine, the queue, the output, the approval
/// questions asked, and the threads whose answers are still to come.
struct Server {
    engine: Arc<Engine>,
    sched: Arc<Scheduler>,
    out: Out,
    questions: Arc<Questions>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Server {
    fn new(engine: Engine) -> Self {
        let sched = Arc::new(Scheduler {
            max: engine.profile.profile.server.max_concurrent.max(1),
            state: Mutex::default(),
            pending: Mutex::default(),
        });
        Self {
            engine: Arc::new(engine),
            sched,
            out: Out(Arc::new(Mutex::new(std::io::stdout()))),
            questions: Arc::new(Questions::default()),
            threads: Vec::new(),
        }
    }

    /// One request line: checked, then answered or started.
    fn request(&mut self, line: &[u8]) {
        let out = &self.out;
        // A byte-order mark some editors and Windows tools put first is not JSON.
        let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                out.error(&Value::Null, format!("malformed JSON: {e}"));
                return;
            }
        };
        let id = v.get("id").cloned().unwrap_or(Value::Null);
        let Some(obj) = v.as_object() else {
            out.error(&id, "a request must be a JSON object");
            return;
        };
        if !matches!(id, Value::String(_) | Value::Number(_)) {
            out.error(&id, "missing or invalid `id`: use a string or a number");
            return;
        }
        let kind = obj.get("type").and_then(Value::as_str);
        if kind == Some("hello") {
            out.send(&json!({"id": id, "type": "response", "command": "hello", "success": true, "data": super::hello(&self.engine)}));
            return;
        }
        if kind == Some("approve") {
            super::approve::answer_approve(&v, &id, &self.questions, &|m| out.send(m));
            return;
        }
        // Any answer carrying a pending id could be taken for that request's answer:
        // reject the newcomer under `id: null`, naming the id, before anything else.
        if kind != Some("abort_bash") && self.sched.pending().contains_key(&id_key(&id)) {
            out.duplicate(&id);
            return;
        }
        match kind {
            Some("bash") => self.bash(&v, id),
            Some("abort_bash") => self.abort(&v, id),
            Some(
                kind @ ("job_start" | "job_status" | "job_wait" | "job_output" | "job_send"
                | "job_stop" | "job_list" | "read_artifact" | "artifact_read"),
            ) => self.side(kind, obj, id),
            Some(kind) if crate::toolbox::TOOLS.contains(&kind) => self.file_tool(kind, obj, id),
            Some(other) => out.error(
                &id,
                format!("unknown request type {other:?}: use \"hello\", \"bash\", \"abort_bash\", \"approve\", a file request (read, grep, glob, edit, write), a job request (job_start, job_status, job_wait, job_output, job_send, job_stop, job_list) or an artifact request (read_artifact, artifact_read)"),
            ),
            None => out.error(&id, "missing `type`: use \"bash\" or \"abort_bash\""),
        }
    }

    /// A `bash` request: checked now, then run when a slot frees.
    fn bash(&mut self, v: &Value, id: Value) {
        let out = &self.out;
        let req: BashRequest = match serde_json::from_value(v.clone()) {
            Ok(r) => r,
            Err(e) => {
                out.error(&id, format!("invalid bash request: {e}"));
                return;
            }
        };
        let events = req.events.unwrap_or(false);
        let stream = req.stream.unwrap_or(false) || events;
        let mut call = bash_call(req);
        let to = out.clone();
        call.approver = Some(ApproverRef(Arc::new(RpcApprover {
            send: Arc::new(move |m| to.send(m)),
            questions: Arc::clone(&self.questions),
            request: id.clone(),
        })));
        // Answered now, not when a concurrency slot frees.
        if let Err(e) = super::build_request(
            &call,
            &self.engine.invoking_dir,
            &self.engine.profile.profile.sandbox,
        ) {
            out.error(&id, e);
            return;
        }
        let key = id_key(&id);
        let token = CancelToken::new();
        self.sched.pending().insert(key.clone(), token.clone());
        let job = Job {
            id,
            key,
            stream,
            events,
            call,
            token,
        };
        self.threads
            .extend(self.sched.submit(job, &self.engine, &self.out));
        self.threads.retain(|t| !t.is_finished());
    }

    /// An `abort_bash` request: one run (or every run) cancelled, its queued requests
    /// answered.
    fn abort(&mut self, v: &Value, id: Value) {
        let (out, sched) = (&self.out, &self.sched);
        let req: AbortRequest = match serde_json::from_value(v.clone()) {
            Ok(r) => r,
            Err(e) => {
                out.abort_error(
                    &id,
                    &CallError::invalid(format!("invalid abort_bash request: {e}")),
                );
                return;
            }
        };
        // A queued request is answered at once, without running; a running
        // one answers when its teardown is done.
        let unstarted = match req.target {
            Some(t) => {
                let key = id_key(&t);
                let token = sched.pending().get(&key).cloned();
                match token {
                    Some(tok) => {
                        tok.cancel(libc::SIGINT);
                        sched.unqueue(&key).into_iter().collect()
                    }
                    None => {
                        out.abort_error(
                            &id,
                            &CallError::not_found(format!(
                                "no running or queued request with id {key}"
                            )),
                        );
                        return;
                    }
                }
            }
            None => {
                sched
                    .pending()
                    .values()
                    .for_each(|t| t.cancel(libc::SIGINT));
                sched.unqueue_all()
            }
        };
        out.send(&json!({"id": id, "type": "response", "command": "abort_bash", "success": true}));
        for job in unstarted {
            answer_unstarted(&self.engine, out, sched, job);
        }
    }

    /// A job or artifact request, answered off the reader: a start waits for
    /// readiness, an output read for output, an artifact read for the disk.
    fn side(&mut self, kind: &str, obj: &serde_json::Map<String, Value>, id: Value) {
        let mut args = obj.clone();
        args.remove("id");
        args.remove("type");
        let (engine, out, kind) = (Arc::clone(&self.engine), self.out.clone(), kind.to_string());
        self.threads.push(std::thread::spawn(move || {
            let answer = match side_call(&engine, &kind, Value::Object(args)) {
                Ok(data) => {
                    json!({"id": id, "type": "response", "command": kind, "success": true, "data": data})
                }
                Err(e) => failure(&id, Some(&kind), &e),
            };
            out.send(&answer);
        }));
        self.threads.retain(|t| !t.is_finished());
    }

    /// A file request, answered off the reader: a grep may search for seconds.
    fn file_tool(&mut self, kind: &str, obj: &serde_json::Map<String, Value>, id: Value) {
        let mut args = obj.clone();
        args.remove("id");
        args.remove("type");
        let (engine, out, kind) = (Arc::clone(&self.engine), self.out.clone(), kind.to_string());
        self.threads.push(std::thread::spawn(move || {
            out.send(&file_tool_answer(&engine, &id, &kind, Value::Object(args)));
        }));
        self.threads.retain(|t| !t.is_finished());
    }

    /// After the last request: every accepted one runs and is answered.
    fn finish(mut self) {
        let (engine, out, sched) = (&self.engine, &self.out, &self.sched);
        // No answer to a question can come any more.
        self.questions.close();
        // EOF: no more requests, but every accepted one runs and is answered (a job
        // request's wait within its own bound). A stop signal, then or during that wait:
        // abort what runs and let each answer; what waits is answered as cancelled
        // without running, and a job request that waits is answered now.
        let mut aborted = false;
        loop {
            if !aborted && STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
                aborted = true;
                for t in sched.pending().values() {
                    t.cancel(libc::SIGINT);
                }
                for job in sched.unqueue_all() {
                    answer_unstarted(engine, out, sched, job);
                }
                engine.close();
            }
            self.threads.retain(|t| !t.is_finished());
            // Workers take queued requests themselves; a queue with no worker left
            // cannot happen, but would leave requests unanswered: check both.
            if self.threads.is_empty() && sched.queue().waiting.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        engine.stop_owned_jobs();
    }
}

/// A request answered off the reader thread: jobs and artifacts.
fn side_call(engine: &Engine, kind: &str, args: Value) -> Result<Value, CallError> {
    match kind {
        "read_artifact" | "artifact_read" => super::artifact_calls::call(engine, kind, args),
        _ => engine.job_call(kind, args),
    }
}

/// A `bash` request's fields, read as this server reads them (its errors are the
/// ones this server answers with): for a remote target's proxy, which judges a
/// request before it forwards it.
pub fn parse_bash(v: &Value) -> Result<BashCall, String> {
    let req: BashRequest =
        serde_json::from_value(v.clone()).map_err(|e| format!("invalid bash request: {e}"))?;
    Ok(bash_call(req))
}

fn bash_call(req: BashRequest) -> BashCall {
    BashCall {
        command: req.command,
        timeout: req.timeout,
        cwd: req.cwd,
        head: req.head,
        tail: req.tail,
        env: req.env.unwrap_or_default(),
        session: req.session,
        tools: req.tools,
        sandbox: req.sandbox,
        server_tools: Vec::new(),
        approver: None,
    }
}

/// The response to a file request: `data` is the tool's structured result (the MCP
/// `structuredContent`), `image` the image `read` found; a refusal or a bad argument
/// is `success: false` with the message in `error`.
fn file_tool_answer(engine: &Engine, id: &Value, kind: &str, args: Value) -> Value {
    match engine.toolbox.call(kind, args) {
        Ok(answer) => {
            let mut v = json!({"id": id, "type": "response", "command": kind, "success": true, "data": answer.data, "text": answer.text});
            if let Some(image) = answer.image {
                v["image"] = json!({"mime_type": image.mime_type, "data": image.data});
            }
            v
        }
        Err(e) => failure(id, Some(kind), &CallError::from(e)),
    }
}

/// Run a job, streaming its output; returns its response (not sent yet).
fn run_bash(engine: &Engine, out: &Out, job: &Job) -> Value {
    let (id, token, stream) = (&job.id, &job.token, job.stream);
    let events = job.events;
    let mut on_event = |e: crate::pipeline::Event<'_>| match e {
        crate::pipeline::Event::Output(t) if stream => {
            out.send(&json!({"id": id, "type": "output", "data": t}));
        }
        crate::pipeline::Event::Start(plan) if events => {
            let start = crate::render::Start::of(plan);
            out.send(&json!({"id": id, "type": "start", "data": start}));
        }
        crate::pipeline::Event::Notice(n) if events => {
            out.send(&json!({"id": id, "type": "notice", "message": n}));
        }
        _ => {}
    };
    match engine.run_events(&job.call, token, &mut on_event) {
        Ok(r) => {
            let data = serde_json::to_value(&r).unwrap_or(Value::Null);
            let mut answer = match &r.error {
                Some(e) => {
                    json!({"id": id, "type": "response", "command": "bash", "success": false, "error": e, "error_kind": ErrorKind::Failed, "data": data})
                }
                None => {
                    json!({"id": id, "type": "response", "command": "bash", "success": true, "data": data})
                }
            };
            if events {
                answer["exit"] = json!(r.agentbash_exit);
                answer["annotation"] = json!(r.annotation);
            }
            answer
        }
        Err(e) => failure(id, None, &e),
    }
}
