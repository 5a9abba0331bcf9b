//! Rule packs (placeholder until the interceptor engine lands).
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Block,
    Warn,
}

#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    warnings: Vec<String>,
}

impl RuleSet {
    pub fn load(_specs: &[String], _base: Option<&Path>) -> Result<RuleSet, RulesError> {
        Ok(RuleSet::default())
    }
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
