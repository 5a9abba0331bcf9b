//! One connection to a target: the transport process, the handshake, and requests
//! multiplexed over it by id.
//!
//! The transport is started through the one spawner (a session of its own, so a
//! terminal's Ctrl-C reaches agentbash, which aborts the remote run, and not the
//! transport; killed with agentbash). It is asked `hello` first and must answer with
//! this agentbash's protocol within `connect_timeout`. Then every request gets an id
//! of the connection's own, its events and its response are routed back to its
//! caller, and any number of callers share the one process. When the transport ends,
//! every request in flight is answered with `[target NAME: the connection ended]`
//! (and what the transport last said on stderr); the next request starts a new one.
//! Every line read is bounded ([`crate::server::lines`]); the transport's stderr is
//! kept only as a short tail for those messages.

use super::{Target, TargetError};
use crate::process::CancelToken;
use crate::process::SpawnSpec;
use crate::process::spawn::ChildIo;
use crate::server::lines::{self, Input, MAX_LINE};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

/// The transport's stderr kept for error messages.
const STDERR_TAIL: usize = 4096;
/// How long a cancelled request may go unanswered before its connection is given up.
const ABORT_GRACE: Duration = Duration::from_secs(30);
/// How long closing waits for the transport to exit before it is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// What a caller receives for its request, in order: events, then the response.
#[derive(Debug)]
enum Msg {
    Event(Value),
    Response(Value),
}

/// Why a request got no answer from the target.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// The transport could not be started, or its handshake failed.
    #[error("{0}")]
    Connect(TargetError),
    /// The transport ended (or could not be written to) before the answer came.
    #[error("{0}")]
    Dropped(String),
}

/// A persistent, reconnecting connection to one target.
pub struct Connection {
    pub target: Target,
    link: Mutex<Option<Arc<Link>>>,
    next_id: AtomicU64,
    /// The `data` of the last handshake's answer.
    hello: Mutex<Option<Value>>,
}

/// One transport process and what routes its answers.
struct Link {
    pid: i32,
    /// A pidfd for the transport: signals through it cannot reach another process
    /// that reused the pid after the reaper waited for ours.
    pidfd: Option<OwnedFd>,
    stdin: Mutex<Option<File>>,
    pending: Mutex<HashMap<String, mpsc::Sender<Msg>>>,
    ended: AtomicBool,
    stderr: Arc<StderrTail>,
    /// Set by the reaper once the process has been waited for (its pid is free).
    exited: Arc<(Mutex<bool>, Condvar)>,
}

/// The last [`STDERR_TAIL`] bytes the transport wrote to stderr.
#[derive(Default)]
struct StderrTail {
    bytes: Mutex<Vec<u8>>,
    done: (Mutex<bool>, Condvar),
}

impl StderrTail {
    fn push(&self, chunk: &[u8]) {
        let mut b = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        b.extend_from_slice(chunk);
        if b.len() > STDERR_TAIL {
            let cut = b.len() - STDERR_TAIL;
            b.drain(..cut);
        }
    }

    /// The tail as text (controls escaped), after waiting up to `wait` for the
    /// transport to close its stderr (it usually explains why it ended).
    fn text(&self, wait: Duration) -> String {
        let (lock, cv) = &self.done;
        let done = lock.lock().unwrap_or_else(|p| p.into_inner());
        drop(cv.wait_timeout_while(done, wait, |d| !*d));
        let b = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&b);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let last = &lines[lines.len().saturating_sub(8)..];
        crate::display::escape_controls_multiline(&last.join("\n")).into_owned()
    }
}

impl Link {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<Msg>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write_line(&self, v: &Value) -> std::io::Result<()> {
        let mut w = self.stdin.lock().unwrap_or_else(|p| p.into_inner());
        let f = w
            .as_mut()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        f.write_all(format!("{v}\n").as_bytes())?;
        f.flush()
    }

    /// SIGKILL the transport, unless it has already been reaped.
    fn kill(&self) {
        let (lock, _) = &*self.exited;
        let exited = lock.lock().unwrap_or_else(|p| p.into_inner());
        if *exited {
            return;
        }
        match &self.pidfd {
            Some(fd) => {
                use std::os::fd::AsRawFd;
                // SAFETY: pidfd_send_signal(2) with a pidfd we own, a valid signal, no
                // siginfo and no flags; it touches no memory of ours.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd.as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    )
                };
            }
            // SAFETY: kill(2) on our own child, which the reaper had not recorded as
            // waited for when we took this lock (a narrow window remains where the
            // kernel has no pidfd to give).
            None => unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            },
        }
    }

    /// Wait up to `wait` for the transport to exit.
    fn wait_exit(&self, wait: Duration) -> bool {
        let (lock, cv) = &*self.exited;
        let exited = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (exited, _) = cv
            .wait_timeout_while(exited, wait, |e| !*e)
            .unwrap_or_else(|p| p.into_inner());
        *exited
    }
}

impl Connection {
    pub fn new(target: Target) -> Connection {
        Connection {
            target,
            link: Mutex::new(None),
            next_id: AtomicU64::new(1),
            hello: Mutex::new(None),
        }
    }

    /// Start the transport now (and shake hands), rather than at the first request.
    pub fn connect(&self) -> Result<(), TargetError> {
        self.link().map(drop)
    }

    /// The `data` of the remote's answer to `hello` (after a connection was made).
    pub fn hello(&self) -> Option<Value> {
        self.hello.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live link, started (again) when there is none.
    fn link(&self) -> Result<Arc<Link>, TargetError> {
        let mut slot = self.link.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = slot.as_ref()
            && !l.ended.load(Ordering::SeqCst)
        {
            return Ok(Arc::clone(l));
        }
        if let Some(old) = slot.take() {
            old.kill();
        }
        let (link, hello) = start(&self.target)?;
        *self.hello.lock().unwrap_or_else(|p| p.into_inner()) = Some(hello);
        *slot = Some(Arc::clone(&link));
        Ok(link)
    }

    /// Send `request` (an rpc request without `id`) and wait for its response,
    /// handing its events (`output`, `start`, `notice`) to `on_event` as they come.
    /// The response is returned as the remote sent it, under the connection's own id.
    /// When `cancel` is set meanwhile, the remote run is aborted (`abort_bash`) and
    /// its answer still awaited.
    pub fn call(
        &self,
        request: Map<String, Value>,
        on_event: &mut dyn FnMut(&Value),
        cancel: Option<&CancelToken>,
    ) -> Result<Value, CallError> {
        self.call_as(self.next_id(), request, on_event, cancel, None)
    }

    /// [`Connection::call`] for a run whose target may ask about its command (the
    /// target's approval policy): its `approval_request` is put to `approver` here
    /// (no one: declined) and the answer sent back as `approve`.
    pub fn call_asking(
        &self,
        request: Map<String, Value>,
        on_event: &mut dyn FnMut(&Value),
        cancel: &CancelToken,
        approver: Option<&crate::request::ApproverRef>,
    ) -> Result<Value, CallError> {
        self.call_as(self.next_id(), request, on_event, Some(cancel), approver)
    }

    /// A fresh id of this connection's own, for [`Connection::call_as`].
    pub fn next_id(&self) -> String {
        format!("c{}", self.next_id.fetch_add(1, Ordering::SeqCst))
    }

    /// [`Connection::call`] under an id from [`Connection::next_id`].
    pub fn call_as(
        &self,
        id: String,
        mut request: Map<String, Value>,
        on_event: &mut dyn FnMut(&Value),
        cancel: Option<&CancelToken>,
        approver: Option<&crate::request::ApproverRef>,
    ) -> Result<Value, CallError> {
        let link = self.link().map_err(CallError::Connect)?;
        request.insert("id".into(), Value::String(id.clone()));
        let (tx, rx) = mpsc::channel();
        link.pending().insert(id.clone(), tx);
        // Ended meanwhile: its pending requests were already dropped, this one with them.
        if link.ended.load(Ordering::SeqCst) || link.write_line(&Value::Object(request)).is_err() {
            link.pending().remove(&id);
            return Err(self.dropped(&link));
        }
        let mut aborted_at: Option<Instant> = None;
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Msg::Event(e)) if e["type"] == "approval_request" => {
                    let approve = answer_question(&self.target.name, &e, approver, cancel);
                    if let Some(approve) = approve
                        && link.write_line(&approve).is_err()
                    {
                        link.pending().remove(&id);
                        return Err(self.dropped(&link));
                    }
                }
                Ok(Msg::Event(e)) => on_event(&e),
                Ok(Msg::Response(r)) => return Ok(r),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.dropped(&link)),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    match aborted_at {
                        None if cancel.is_some_and(|c| c.reason().is_some()) => {
                            aborted_at = Some(Instant::now());
                            let abort = json!({
                                "id": format!("abort-{}", self.next_id()),
                                "type": "abort_bash",
                                "target": id,
                            });
                            if link.write_line(&abort).is_err() {
                                link.pending().remove(&id);
                                return Err(self.dropped(&link));
                            }
                        }
                        // The remote does not answer even an abort: give the
                        // connection up (every request on it is answered).
                        Some(at) if at.elapsed() > ABORT_GRACE => {
                            link.kill();
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn dropped(&self, link: &Link) -> CallError {
        CallError::Dropped(
            self.target
                .dropped_message(&link.stderr.text(Duration::from_millis(500))),
        )
    }

    /// Close the transport's stdin (the remote answers what it has, then exits), wait
    /// a little for it to exit, then kill it.
    pub fn close(&self) {
        let link = self.link.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(link) = link {
            drop(link.stdin.lock().unwrap_or_else(|p| p.into_inner()).take());
            if !link.wait_exit(CLOSE_GRACE) {
                link.kill();
                link.wait_exit(CLOSE_GRACE);
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close();
    }
}

/// A pipe whose ends are both close-on-exec (the spawner moves one into the child).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

/// Start the transport and shake hands: the link, and the remote's `hello` data.
fn start(target: &Target) -> Result<(Arc<Link>, Value), TargetError> {
    let (link, out_r) = launch(target)?;
    let lines = lines::spawn_reader(File::from(out_r), MAX_LINE);
    let hello = match handshake(&link, &lines, target.connect_timeout) {
        Ok(h) => h,
        Err(message) => {
            link.kill();
            let tail = link.stderr.text(Duration::from_millis(500));
            let said = if tail.is_empty() {
                String::new()
            } else {
                format!("; transport stderr (last lines): {tail}")
            };
            return Err(connect_error(target, format!("{message}{said}")));
        }
    };
    let remote = hello["protocol"].as_u64().unwrap_or(0);
    if remote != u64::from(crate::server::PROTOCOL) {
        link.kill();
        return Err(TargetError::Protocol {
            name: target.name.clone(),
            remote,
            local: crate::server::PROTOCOL,
        });
    }
    let router = Arc::clone(&link);
    std::thread::spawn(move || route(&router, lines));
    Ok((link, hello))
}

fn connect_error(target: &Target, message: String) -> TargetError {
    TargetError::Connect {
        name: target.name.clone(),
        message,
    }
}

/// Spawn the transport with its three pipes and the threads that watch its exit
/// and keep its stderr tail: the link, and the read end of its stdout.
fn launch(target: &Target) -> Result<(Arc<Link>, OwnedFd), TargetError> {
    let (program, args) = target
        .transport
        .split_first()
        .ok_or_else(|| TargetError::NoTransport(target.name.clone()))?;
    let spec = SpawnSpec {
        program: program.into(),
        args: args.to_vec(),
        // `vars()` would panic on a variable that is not UTF-8; such a one is left out.
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
        cwd: std::env::current_dir().unwrap_or_else(|_| "/".into()),
        ..Default::default()
    };
    let io = |e: std::io::Error| connect_error(target, format!("cannot start the transport: {e}"));
    let (in_r, in_w) = pipe().map_err(io)?;
    let (out_r, out_w) = pipe().map_err(io)?;
    let (err_r, err_w) = pipe().map_err(io)?;
    let child = crate::process::spawn::spawn(
        &spec,
        ChildIo::Fd(in_r),
        ChildIo::Fd(out_w),
        ChildIo::Fd(err_w),
    )
    .map_err(|e| {
        connect_error(
            target,
            format!(
                "cannot start the transport `{}`: {e}",
                crate::display::escape_controls(program)
            ),
        )
    })?;
    let pid = child.id() as i32;
    let pidfd = crate::process::spawn::pidfd_open(pid);
    let exited = reap(child);
    let stderr = keep_stderr(err_r);
    let link = Arc::new(Link {
        pid,
        pidfd,
        stdin: Mutex::new(Some(File::from(in_w))),
        pending: Mutex::default(),
        ended: AtomicBool::new(false),
        stderr,
        exited,
    });
    Ok((link, out_r))
}

/// Wait for the transport on a thread of its own; the flag says its pid is free.
fn reap(mut child: crate::process::spawn::Child) -> Arc<(Mutex<bool>, Condvar)> {
    let exited = Arc::new((Mutex::new(false), Condvar::new()));
    let flag = Arc::clone(&exited);
    std::thread::spawn(move || {
        let _ = child.wait();
        let (lock, cv) = &*flag;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    });
    exited
}

/// Drain the transport's stderr on a thread, keeping its tail for error messages
/// (a pipe left unread would block the transport once full).
fn keep_stderr(err_r: OwnedFd) -> Arc<StderrTail> {
    let stderr = Arc::new(StderrTail::default());
    let tail = Arc::clone(&stderr);
    let mut r = File::from(err_r);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => tail.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let (lock, cv) = &tail.done;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    });
    stderr
}

const ENDED: &str = "the transport ended before it answered the handshake (is `agentbash rpc` at the end of its argv, and installed on the other side?)";

/// Send `hello` and read the first line back: the remote's `hello` data, or why
/// the other end is not a working `agentbash rpc`.
fn handshake(
    link: &Link,
    lines: &mpsc::Receiver<Input>,
    connect_timeout: Duration,
) -> Result<Value, String> {
    // A transport that already exited cannot be written to: it ended, as below.
    link.write_line(&json!({"id": "hello", "type": "hello"}))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => ENDED.to_string(),
            _ => format!("cannot write to the transport: {e}"),
        })?;
    let first = match lines.recv_timeout(connect_timeout) {
        Ok(Input::Line(l)) => l,
        Ok(Input::TooLong(n, _)) => {
            return Err(format!(
                "the transport answered the handshake with a {n}-byte line, not an rpc answer"
            ));
        }
        Ok(Input::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => {
            return Err(ENDED.to_string());
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            return Err(format!(
                "no answer to the handshake within {} s (target.connect_timeout)",
                connect_timeout.as_secs()
            ));
        }
    };
    let v: Value = serde_json::from_slice(&first).map_err(|_| {
        let shown: String = String::from_utf8_lossy(&first).chars().take(200).collect();
        format!(
            "the transport did not answer the handshake with rpc: it said {:?}",
            crate::display::escape_controls(&shown)
        )
    })?;
    if v["id"] != "hello" || v["type"] != "response" {
        return Err(format!(
            "the transport did not answer the handshake with rpc: it said {}",
            crate::display::escape_controls(&v.to_string().chars().take(200).collect::<String>())
        ));
    }
    if v["success"] != true {
        return Err(format!(
            "the remote agentbash does not know the handshake (older than protocol 1?): {}",
            crate::display::escape_controls(v["error"].as_str().unwrap_or(""))
        ));
    }
    Ok(v["data"].clone())
}

/// Hand each line the transport writes to the request it belongs to; when it ends,
/// drop every pending request's channel (each caller answers with the drop).
fn route(link: &Link, lines: mpsc::Receiver<Input>) {
    while let Ok(input) = lines.recv() {
        let (v, too_long) = match input {
            Input::Line(l) => match serde_json::from_slice::<Value>(&l) {
                Ok(v) => (v, None),
                // Not an answer: nobody to give it to.
                Err(_) => continue,
            },
            // Too long to hold: answer its request (named at the start of the line,
            // where the server writes `id`) with what happened.
            Input::TooLong(n, head) => match id_at_start(&head) {
                Some(id) => (json!({"id": id, "type": "response"}), Some(n)),
                None => continue,
            },
            Input::Eof => break,
        };
        // A question is about the request it names; everything else carries its id.
        let key = if v["type"] == "approval_request" {
            &v["request"]
        } else {
            &v["id"]
        };
        let Some(id) = key.as_str().map(str::to_string) else {
            continue;
        };
        if v["type"] == "response" {
            let to = link.pending().remove(&id);
            if let Some(to) = to {
                let v = match too_long {
                    None => v,
                    Some(n) => crate::server::failure(
                        &json!(id),
                        None,
                        &crate::server::CallError::failed(format!(
                            "the remote answer is {n} bytes, more than the {MAX_LINE} a protocol line may hold; lower output.max_bytes in the target's profile"
                        )),
                    ),
                };
                let _ = to.send(Msg::Response(v));
            }
        } else if let Some(to) = link.pending().get(&id) {
            let _ = to.send(Msg::Event(v));
        }
    }
    link.ended.store(true, Ordering::SeqCst);
    link.pending().clear();
    // Nothing more can be read: make sure the process is gone too.
    drop(link.stdin.lock().unwrap_or_else(|p| p.into_inner()).take());
    if !link.wait_exit(CLOSE_GRACE) {
        link.kill();
    }
}

/// The `approve` answering a target's `approval_request` (docs/REMOTE.md, Approval):
/// what `approver` answered, or `unavailable` with why when no one can be asked here
/// (the target's `approval.unattended` then decides). `None` for no answer at all: a
/// wait that timed out here has timed out there too, and a cancelled one is followed
/// by `abort_bash`, so the target says what happened.
fn answer_question(
    target: &str,
    e: &Value,
    approver: Option<&crate::request::ApproverRef>,
    cancel: Option<&CancelToken>,
) -> Option<Value> {
    use crate::request::{Answer, Question};
    let question = Question {
        command: e["command"].as_str().unwrap_or_default().to_string(),
        asks: serde_json::from_value(e["asks"].clone()).unwrap_or_default(),
        session: e["session"].as_str().map(str::to_string),
        timeout: Duration::from_secs(e["timeout"].as_u64().unwrap_or(300)),
    };
    let answer = match approver {
        Some(a) => a.0.ask(&question, cancel.unwrap_or(&CancelToken::new())),
        None => Answer::Unavailable(format!(
            "the client of target {target} has no one to ask either: no terminal, and no rpc or MCP client that answers"
        )),
    };
    let (decision, remember, reason) = match answer {
        Answer::Once => ("allow", false, None),
        Answer::Always => ("allow", true, None),
        Answer::Deny => ("deny", false, None),
        Answer::Unavailable(why) => ("unavailable", false, Some(why)),
        Answer::TimedOut | Answer::Cancelled(_) => return None,
    };
    let mut approve =
        json!({"type": "approve", "id": e["id"], "decision": decision, "remember": remember});
    if let Some(why) = reason {
        approve["reason"] = json!(why);
    }
    Some(approve)
}

/// The `id` of a line that starts `{"id":"c7",…` (how the rpc server writes them).
fn id_at_start(head: &[u8]) -> Option<String> {
    let rest = head.strip_prefix(b"{\"id\":\"")?;
    let end = memchr::memchr(b'"', rest)?;
    String::from_utf8(rest[..end].to_vec()).ok()
}
