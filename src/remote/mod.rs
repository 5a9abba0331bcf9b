//! Remote targets (docs/REMOTE.md): the client half of `agentbash rpc`. A profile's
//! `[target]` names a transport — any argv whose stdin and stdout speak the rpc
//! protocol: `ssh host agentbash rpc`, `docker exec -i`, `kubectl exec -i` — and
//! `--target NAME` sends commands there instead of running them here.
//!
//! The parts: [`conn::Connection`] (one transport process, the handshake, requests
//! multiplexed by id, reconnection after a drop), [`run`] (`agentbash run --target`:
//! the local refusal first, then the remote run rendered as a local one), [`proxy`]
//! (`agentbash rpc --target`), [`backend::RemoteBackend`] (`agentbash mcp --target`)
//! and [`artifact`] (`agentbash artifact show --target`). The local profile's guard and
//! interceptor run before anything travels; the remote profile decides the rest.

pub mod artifact;
pub mod backend;
pub mod conn;
pub mod proxy;
pub mod run;

use crate::config::profile::{LoadedProfile, Lookup};
use std::path::Path;
use std::time::Duration;

/// A target, loaded from a profile's `[target]`.
#[derive(Debug, Clone)]
pub struct Target {
    /// The profile it came from (the `NAME` of `--target NAME`).
    pub name: String,
    /// The transport's argv, program first (never empty).
    pub transport: Vec<String>,
    /// How long the transport has to start and answer the handshake.
    pub connect_timeout: Duration,
}

/// Why a target cannot be used. Every one is exit 125 (docs/REMOTE.md).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("--target {name}: {message}")]
    Profile { name: String, message: String },
    #[error(
        "--target {0}: the profile has no [target] transport; add one, e.g.\n  [target]\n  transport = [\"ssh\", \"-T\", \"build-host\", \"agentbash\", \"rpc\"]"
    )]
    NoTransport(String),
    #[error("[target {name}: {message}]")]
    Connect { name: String, message: String },
    #[error(
        "[target {name}: the remote agentbash speaks protocol {remote}, this one speaks protocol {local}; install the same agentbash version on both sides]"
    )]
    Protocol {
        name: String,
        remote: u64,
        local: u32,
    },
}

impl Target {
    /// Load profile `name` by the usual lookup (from `cwd`) and take its `[target]`.
    pub fn load(name: &str, cwd: &Path) -> Result<Target, TargetError> {
        let profile = Lookup::new(cwd)
            .load(name)
            .map_err(|e| TargetError::Profile {
                name: name.to_string(),
                message: e.to_string(),
            })?;
        Target::of(&profile, name)
    }

    /// The target of an already loaded profile.
    pub fn of(profile: &LoadedProfile, name: &str) -> Result<Target, TargetError> {
        let t = &profile.profile.target;
        if t.transport.is_empty() {
            return Err(TargetError::NoTransport(name.to_string()));
        }
        Ok(Target {
            name: name.to_string(),
            transport: t.transport.clone(),
            connect_timeout: Duration::from_secs(t.connect_timeout),
        })
    }

    /// The transport as a person would type it (each word shell-quoted as needed).
    pub fn shown_transport(&self) -> String {
        self.transport
            .iter()
            .map(|w| crate::display::quote_word(w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The error every request in flight gets when the transport goes away.
    pub fn dropped_message(&self, stderr: &str) -> String {
        let mut m = format!("[target {}: the connection ended]", self.name);
        if !stderr.trim().is_empty() {
            m.push_str("\ntransport stderr (last lines): ");
            m.push_str(stderr.trim_end());
        }
        m
    }
}

/// Who answers for one run through a target (docs/REMOTE.md, Approval): `inner`,
/// asked once per question. This side's policy asks before the command travels and
/// the target's may ask the very same question about the same run; the person's
/// "yes" to it is not asked for twice.
pub struct AskedOnce {
    inner: crate::request::ApproverRef,
    yes: std::sync::Mutex<Vec<(Vec<crate::request::Ask>, crate::request::Answer)>>,
}

impl AskedOnce {
    /// `approver` wrapped for one run (`None` stays `None`: no one to ask).
    pub fn wrap(
        approver: Option<&crate::request::ApproverRef>,
    ) -> Option<crate::request::ApproverRef> {
        approver.map(|a| {
            crate::request::ApproverRef(std::sync::Arc::new(AskedOnce {
                inner: a.clone(),
                yes: std::sync::Mutex::default(),
            }))
        })
    }
}

impl crate::request::Approver for AskedOnce {
    fn ask(
        &self,
        question: &crate::request::Question,
        cancel: &crate::process::CancelToken,
    ) -> crate::request::Answer {
        use crate::request::Answer;
        let mut yes = self.yes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, answer)) = yes.iter().find(|(asks, _)| *asks == question.asks) {
            return answer.clone();
        }
        let answer = self.inner.0.ask(question, cancel);
        if matches!(answer, Answer::Once | Answer::Always) {
            yes.push((question.asks.clone(), answer.clone()));
        }
        answer
    }

    fn who(&self) -> String {
        self.inner.0.who()
    }
}
