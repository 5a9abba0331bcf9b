//! §4.2 Intercept (placeholder until the interceptor engine lands).
use crate::rules::{Action, RuleSet};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Hit {
    pub rule: String,
    pub tool: String,
    pub message: String,
    pub action: Action,
    pub candidate: String,
}

#[derive(Debug, Clone, Default)]
pub struct Interception {
    pub blocked: Option<Hit>,
    pub warnings: Vec<Hit>,
}

pub fn intercept(_cmd: &str, _rules: &RuleSet, _tools: &[String]) -> Interception {
    Interception::default()
}

pub fn blocked_message(hit: &Hit, original: &str) -> String {
    format!("Blocked: {}\n\nOriginal command: {original}", hit.message)
}

pub fn trace_json(_i: &Interception) -> serde_json::Value {
    serde_json::Value::Array(vec![])
}
