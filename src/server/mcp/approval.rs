//! Approval questions put to the person behind the client: as an elicitation form
//! (protocols before 2026-07-28), as an answer the client sent with its repeated call
//! (2026-07-28 and later), or to no one when the client cannot be asked.

use std::time::Duration;

use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ServerRequest,
};
use rmcp::{Peer, RoleServer};

use crate::request::{Answer, Approver, Question};

/// What a client's elicitation answer means: accept runs (`remember` true: always),
/// decline and cancel refuse.
pub(super) fn elicited(r: &ElicitResult) -> Answer {
    match r.action {
        ElicitationAction::Accept => {
            let remember = r
                .content
                .as_ref()
                .and_then(|c| c.get("remember"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            if remember {
                Answer::Always
            } else {
                Answer::Once
            }
        }
        _ => Answer::Deny,
    }
}

/// The approval question as an elicitation form: the command and the rule in the
/// message, one boolean `remember`.
pub(super) fn elicitation_form(q: &Question) -> ElicitRequestParams {
    let mut message = format!(
        "agentbash: approve this command before it runs?\n$ {}\n",
        q.command
    );
    for a in &q.asks {
        if a.rule == "approval.default" {
            message.push_str(&format!("{}  (approval.default asks)\n", a.command));
        } else {
            message.push_str(&format!("{}  (rule `{}` asks)\n", a.command, a.rule));
        }
    }
    message.push_str("Accept runs it; decline refuses it.");
    let remember = if q.can_remember() {
        let prefixes: Vec<String> = q
            .asks
            .iter()
            .filter_map(|a| a.prefix.as_ref().map(|p| format!("`{p}`")))
            .collect();
        format!(
            "Also run commands starting with {} without asking again in session {}.",
            prefixes.join(", "),
            q.session.as_deref().unwrap_or_default()
        )
    } else if q.session.is_none() {
        "There is no session to remember it in: it counts as once.".to_string()
    } else {
        "What it runs is not known until it runs: it counts as once.".to_string()
    };
    let requested_schema = rmcp::model::ElicitationSchema::builder()
        .optional_bool_with("remember", |b| {
            b.title("Always, for this session")
                .description(remember)
                .with_default(false)
        })
        .build_unchecked();
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    }
}

/// A client without the `elicitation` capability: no one can be asked.
pub(super) struct NoElicitation;

impl Approver for NoElicitation {
    fn ask(&self, _: &Question, _: &crate::process::CancelToken) -> Answer {
        Answer::Unavailable(
            "the MCP client did not declare the elicitation capability, so it cannot put the question to a person"
                .into(),
        )
    }

    fn who(&self) -> String {
        "the MCP client".into()
    }
}

/// A client on protocol 2026-07-28 is asked only before its call runs (it answers by
/// calling again): a question that comes up while the call runs, as a remote
/// target's does, finds no one to put it to.
pub(super) struct NotAhead;

impl Approver for NotAhead {
    fn ask(&self, _: &Question, _: &crate::process::CancelToken) -> Answer {
        Answer::Unavailable(
            "the MCP client answers approval questions by calling again (protocol 2026-07-28), and this one came up only once the call ran (a remote target's policy asked)"
                .into(),
        )
    }

    fn who(&self) -> String {
        "the MCP client".into()
    }
}

/// An answer the client already gave (2026-07-28: sent with its repeated call), for
/// the question it was given.
pub(super) struct Answered {
    pub(super) asks: Vec<crate::request::Ask>,
    pub(super) answer: Answer,
}

impl Approver for Answered {
    fn ask(&self, q: &Question, _: &crate::process::CancelToken) -> Answer {
        if q.asks == self.asks {
            self.answer.clone()
        } else {
            Answer::Unavailable(
                "what the command asks about changed between the question and the answer".into(),
            )
        }
    }

    fn who(&self) -> String {
        "the MCP client's user".into()
    }
}

/// Asks through `elicitation/create` (protocols before 2026-07-28), from the blocking
/// thread the run is on.
pub(super) struct Elicitation {
    pub(super) peer: Peer<RoleServer>,
    pub(super) runtime: tokio::runtime::Handle,
}

impl Approver for Elicitation {
    fn ask(&self, q: &Question, cancel: &crate::process::CancelToken) -> Answer {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(elicitation_form(q)));
        let peer = self.peer.clone();
        let timeout = q.timeout;
        self.runtime.block_on(async move {
            let asked = peer.send_request(request);
            let cancelled = async {
                loop {
                    if let Some(sig) = cancel.reason() {
                        return sig;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            };
            tokio::select! {
                answer = tokio::time::timeout(timeout, asked) => match answer {
                    Err(_) => Answer::TimedOut,
                    Ok(Ok(ClientResult::ElicitResult(r))) => elicited(&r),
                    Ok(Ok(other)) => Answer::Unavailable(format!(
                        "the MCP client answered the question with something else ({other:?})"
                    )),
                    Ok(Err(e)) => Answer::Unavailable(format!(
                        "the MCP client could not put the question to a person ({e})"
                    )),
                },
                sig = cancelled => Answer::Cancelled(sig),
            }
        })
    }

    fn who(&self) -> String {
        "the MCP client's user".into()
    }
}
