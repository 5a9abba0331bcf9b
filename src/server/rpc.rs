//! `agentbash rpc` (SPEC §9): JSON requests on stdin, one per line; JSON messages on
//! stdout, one per line. Requests run concurrently on their own threads; a session's
//! runs are serialized by the session lock. Malformed input is answered, never fatal.
//! EOF on stdin (or SIGTERM/SIGINT/SIGHUP) aborts what runs, waits for the aborted
//! runs to answer, and exits 0. Nothing but protocol messages goes to stdout.

use super::backend::BashCall;
use super::engine::Engine;
use crate::exec::CancelToken;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// Longest request line accepted; longer lines are answered with an error and skipped.
pub const MAX_LINE: usize = 16 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BashRequest {
    #[allow(dead_code)]
    id: Value,
    #[serde(rename = "type")]
    #[allow(dead_code)]
    kind: String,
    command: String,
    timeout: Option<i64>,
    cwd: Option<String>,
    head: Option<usize>,
    tail: Option<usize>,
    env: Option<BTreeMap<String, String>>,
    session: Option<String>,
    tools: Option<Vec<String>>,
    stream: Option<bool>,
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

    fn error(&self, id: &Value, msg: impl Into<String>) {
        self.send(&json!({"id": id, "type": "response", "success": false, "error": msg.into()}));
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

enum Input {
    Line(Vec<u8>),
    TooLong(usize),
    Eof,
}

/// Read lines on a thread so the main loop can also watch for signals.
fn reader() -> mpsc::Receiver<Input> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut r = stdin.lock();
        loop {
            let mut line = Vec::new();
            let mut too_long = 0usize;
            loop {
                let buf = match r.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => &[],
                };
                if buf.is_empty() {
                    let _ = tx.send(if line.is_empty() && too_long == 0 {
                        Input::Eof
                    } else if too_long > 0 {
                        Input::TooLong(too_long)
                    } else {
                        Input::Line(std::mem::take(&mut line))
                    });
                    if !line.is_empty() || too_long > 0 {
                        let _ = tx.send(Input::Eof);
                    }
                    return;
                }
                let (chunk, done) = match memchr::memchr(b'\n', buf) {
                    Some(p) => (&buf[..p], Some(p + 1)),
                    None => (buf, None),
                };
                if too_long > 0 || line.len() + chunk.len() > MAX_LINE {
                    too_long = too_long.max(line.len()) + chunk.len();
                    line = Vec::new();
                } else {
                    line.extend_from_slice(chunk);
                }
                let consumed = done.unwrap_or(buf.len());
                r.consume(consumed);
                if done.is_some() {
                    break;
                }
            }
            let msg = if too_long > 0 {
                Input::TooLong(too_long)
            } else {
                Input::Line(line)
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
    });
    rx
}

pub fn serve(engine: Engine) -> i32 {
    // The handler only stores to an atomic; the reader thread polls it.
    crate::exec::process::on_stop_signals(on_stop);
    let engine = Arc::new(engine);
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    let running: Arc<Mutex<HashMap<String, CancelToken>>> = Arc::new(Mutex::new(HashMap::new()));
    let mut threads = Vec::new();
    let rx = reader();
    loop {
        if STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
            break;
        }
        let input = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(i) => i,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let line = match input {
            Input::Eof => break,
            Input::TooLong(n) => {
                out.error(
                    &Value::Null,
                    format!("request line too long ({n} bytes; at most {MAX_LINE} bytes)"),
                );
                continue;
            }
            Input::Line(l) => l,
        };
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let v: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(e) => {
                out.error(&Value::Null, format!("malformed JSON: {e}"));
                continue;
            }
        };
        let id = v.get("id").cloned().unwrap_or(Value::Null);
        let Some(obj) = v.as_object() else {
            out.error(&id, "a request must be a JSON object");
            continue;
        };
        if !matches!(id, Value::String(_) | Value::Number(_)) {
            out.error(&id, "missing or invalid `id`: use a string or a number");
            continue;
        }
        match obj.get("type").and_then(Value::as_str) {
            Some("bash") => {
                let req: BashRequest = match serde_json::from_value(v.clone()) {
                    Ok(r) => r,
                    Err(e) => {
                        out.error(&id, format!("invalid bash request: {e}"));
                        continue;
                    }
                };
                let key = id_key(&id);
                let token = CancelToken::new();
                {
                    let mut map = running.lock().unwrap_or_else(|p| p.into_inner());
                    if map.contains_key(&key) {
                        out.error(
                            &id,
                            format!("a request with id {key} is still running; use a new id"),
                        );
                        continue;
                    }
                    map.insert(key.clone(), token.clone());
                }
                let (engine, out2, running2) = (engine.clone(), out.clone(), running.clone());
                threads.push(std::thread::spawn(move || {
                    run_bash(&engine, &out2, id, req, &token);
                    running2
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&key);
                }));
                threads.retain(|t| !t.is_finished());
            }
            Some("abort_bash") => {
                let req: AbortRequest = match serde_json::from_value(v.clone()) {
                    Ok(r) => r,
                    Err(e) => {
                        out.error(&id, format!("invalid abort_bash request: {e}"));
                        continue;
                    }
                };
                let map = running.lock().unwrap_or_else(|p| p.into_inner());
                match req.target {
                    Some(t) => match map.get(&id_key(&t)) {
                        Some(tok) => tok.cancel(libc::SIGINT),
                        None => {
                            out.error(&id, format!("no running request with id {}", id_key(&t)));
                            continue;
                        }
                    },
                    None => map.values().for_each(|t| t.cancel(libc::SIGINT)),
                }
                out.send(&json!({"id": id, "type": "response", "command": "abort_bash", "success": true}));
            }
            Some(other) => out.error(
                &id,
                format!("unknown request type {other:?}: use \"bash\" or \"abort_bash\""),
            ),
            None => out.error(&id, "missing `type`: use \"bash\" or \"abort_bash\""),
        }
    }
    // EOF or a stop signal: abort what runs and let each answer.
    for t in running.lock().unwrap_or_else(|p| p.into_inner()).values() {
        t.cancel(libc::SIGINT);
    }
    for t in threads {
        let _ = t.join();
    }
    0
}

fn run_bash(engine: &Engine, out: &Out, id: Value, req: BashRequest, token: &CancelToken) {
    let call = BashCall {
        command: req.command,
        timeout: req.timeout.map(|t| t.max(0) as u64),
        cwd: req.cwd,
        head: req.head,
        tail: req.tail,
        env: req.env.unwrap_or_default(),
        session: req.session,
        tools: req.tools,
    };
    let stream = req.stream.unwrap_or(false);
    let mut on_output = |t: &str| {
        if stream {
            out.send(&json!({"id": id, "type": "output", "data": t}));
        }
    };
    match engine.run(&call, token, &mut on_output) {
        Ok(r) => {
            let data = serde_json::to_value(&r).unwrap_or(Value::Null);
            match &r.error {
                Some(e) => out.send(&json!({"id": id, "type": "response", "command": "bash", "success": false, "error": e, "data": data})),
                None => out.send(&json!({"id": id, "type": "response", "command": "bash", "success": true, "data": data})),
            }
        }
        Err(e) => out.error(&id, e),
    }
}
