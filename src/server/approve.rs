//! The rpc side of the approval policy (docs/PROTOCOL.md, `approve`): a question put
//! to the client as an `approval_request` event and answered by its `approve`
//! request. `agentbash rpc` asks about its own runs this way, and `agentbash rpc
//! --target` passes a target's questions on to its client the same way, so both keep
//! one registry of waiting questions and one reading of the answer.

use crate::process::CancelToken;
use crate::request::{Answer, Approver, Question};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// The client's answer to an `approval_request`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveRequest {
    id: Value,
    #[serde(rename = "type")]
    #[allow(dead_code)]
    kind: String,
    decision: ApproveDecision,
    #[serde(default)]
    remember: bool,
    /// With `unavailable`: why no one can answer (a remote target's client says
    /// what it lacks), for the refusal's text.
    reason: Option<String>,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum ApproveDecision {
    Allow,
    Deny,
    /// The client cannot put the question to anyone: `approval.unattended` decides.
    Unavailable,
}

/// The approval questions waiting for an `approve`, by approval id.
#[derive(Default)]
pub struct Questions {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, mpsc::Sender<Answer>>>,
    /// Stdin ended: no answer can come any more.
    closed: AtomicBool,
}

impl Questions {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<Answer>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// No more input: every question still waiting is answered "no one can be asked".
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for (_, tx) in self.waiting().drain() {
            let _ = tx.send(Answer::Unavailable(CLOSED.into()));
        }
    }
}

/// The most of an `unavailable` answer's `reason` that a refusal quotes.
const MAX_REASON: usize = 400;

const CLOSED: &str = "the rpc client closed its input, so it cannot answer";

/// Writes one message line to the client.
pub type Send = Arc<dyn Fn(&Value) + std::marker::Send + Sync>;

/// Asks the rpc client: an `approval_request` event naming the request, answered by
/// an `approve` request with the same id.
pub struct RpcApprover {
    pub send: Send,
    pub questions: Arc<Questions>,
    /// The id of the request the question is about, as the client sent it.
    pub request: Value,
}

impl Approver for RpcApprover {
    fn ask(&self, q: &Question, cancel: &CancelToken) -> Answer {
        let (tx, rx) = mpsc::channel();
        let n = self.questions.next.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("approval-{n}");
        {
            // Registered before the question is sent, and not after the input ended.
            let mut waiting = self.questions.waiting();
            if self.questions.closed.load(Ordering::SeqCst) {
                return Answer::Unavailable(CLOSED.into());
            }
            waiting.insert(id.clone(), tx);
        }
        (self.send)(&json!({
            "type": "approval_request",
            "id": id,
            "request": self.request,
            "command": q.command,
            "rule": q.asks.first().map(|a| a.rule.as_str()).unwrap_or("approval.default"),
            "asks": q.asks,
            "session": q.session,
            "remember": q.can_remember(),
            "timeout": q.timeout.as_secs(),
        }));
        let deadline = std::time::Instant::now() + q.timeout;
        let answer = loop {
            if let Some(sig) = cancel.reason() {
                break Answer::Cancelled(sig);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break Answer::TimedOut;
            }
            match rx.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(a) => break a,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Answer::Unavailable(CLOSED.into());
                }
            }
        };
        self.questions.waiting().remove(&id);
        answer
    }

    fn who(&self) -> String {
        "the rpc client".into()
    }
}

fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An `approve`: the answer to the `approval_request` with its id, handed to the run
/// that waits for it; answered itself (through `send`) with success, or with why it
/// fits no question.
pub fn answer_approve(v: &Value, id: &Value, questions: &Questions, send: &dyn Fn(&Value)) {
    let error = |e: super::CallError| send(&super::failure(id, Some("approve"), &e));
    let req: ApproveRequest = match serde_json::from_value(v.clone()) {
        Ok(r) => r,
        Err(e) => {
            return error(super::CallError::invalid(format!(
                "invalid approve request: {e} (send {{\"type\":\"approve\",\"id\":ID,\"decision\":\"allow\"|\"deny\",\"remember\":BOOL}})"
            )));
        }
    };
    let key = id_key(&req.id);
    let waiting = questions.waiting().remove(&key);
    let Some(tx) = waiting else {
        return error(super::CallError::not_found(format!(
            "no approval question waits with id {key} (it was answered, timed out or cancelled, or never asked)"
        )));
    };
    let answer = match (req.decision, req.remember) {
        (ApproveDecision::Allow, true) => Answer::Always,
        (ApproveDecision::Allow, false) => Answer::Once,
        (ApproveDecision::Deny, _) => Answer::Deny,
        (ApproveDecision::Unavailable, _) => Answer::Unavailable(
            req.reason
                .map(|r| {
                    let r: String = r.chars().take(MAX_REASON).collect();
                    crate::display::escape_controls(&r).into_owned()
                })
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "the rpc client cannot put the question to anyone".into()),
        ),
    };
    match tx.send(answer) {
        Ok(()) => {
            send(&json!({"id": id, "type": "response", "command": "approve", "success": true}))
        }
        Err(_) => error(super::CallError::not_found(format!(
            "the approval question {key} stopped waiting (timed out or cancelled) before this answer"
        ))),
    }
}
