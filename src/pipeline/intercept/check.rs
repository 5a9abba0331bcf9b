//! `rules check`: a pack's rules compiled one by one and its examples run through
//! the interceptor, each failure reported with the rule and where it is written.

use super::{Verdict, intercept};
use crate::config::rules::{Action, Location, RuleSet, has_keyword, parse_pack, read_pack};
use serde::Serialize;
use std::fmt;

/// What went wrong with one rule or pack in `rules check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckProblem {
    /// The pack could not be read or parsed.
    Load { error: String },
    /// `pattern` or `unless` does not compile.
    InvalidRegex { field: String, error: String },
    /// The patterns compile alone but not together.
    Combine { error: String },
    /// An `examples.match` entry was not caught by this rule.
    MissedMatch { example: String, got: String },
    /// An `examples.not_match` entry matched this rule.
    UnexpectedMatch { example: String, candidate: String },
}

/// One failure in `rules check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckFailure {
    pub pack: String,
    pub rule: Option<String>,
    pub location: Option<Location>,
    pub problem: CheckProblem,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A load error already names the file (and line) itself.
        if let CheckProblem::Load { error } = &self.problem {
            return f.write_str(error);
        }
        write!(f, "{}", self.pack)?;
        if let Some(at) = self.location {
            write!(f, ":{}:{}", at.line, at.column)?;
        }
        if let Some(rule) = &self.rule {
            write!(f, ": rule `{rule}`")?;
        }
        match &self.problem {
            CheckProblem::Load { error } => f.write_str(error),
            CheckProblem::InvalidRegex { field, error } => {
                write!(f, ": invalid regex in `{field}`:\n{}", indent(error))
            }
            CheckProblem::Combine { error } => write!(f, ": {error}"),
            CheckProblem::MissedMatch { example, got } => write!(
                f,
                ": examples.match {example:?}\n    expected: caught by this rule (with its tool available)\n    got:      {got}"
            ),
            CheckProblem::UnexpectedMatch { example, candidate } => write!(
                f,
                ": examples.not_match {example:?}\n    expected: not matched by this rule\n    got:      matched candidate {candidate:?}"
            ),
        }
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The result of `rules check` for one pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    pub pack: String,
    pub rules: usize,
    pub examples: usize,
    pub failures: Vec<CheckFailure>,
    /// Not failures, but worth fixing: rules with no examples of a kind.
    pub notes: Vec<String>,
}

impl CheckReport {
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }

    fn fail(&mut self, rule: Option<&str>, location: Option<Location>, problem: CheckProblem) {
        self.failures.push(CheckFailure {
            pack: self.pack.clone(),
            rule: rule.map(str::to_string),
            location,
            problem,
        });
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.ok() {
            "ok".to_string()
        } else {
            format!("{} failure(s)", self.failures.len())
        };
        writeln!(
            f,
            "{}: {} rule(s), {} example(s): {verdict}",
            self.pack, self.rules, self.examples
        )?;
        for failure in &self.failures {
            writeln!(f, "  {failure}")?;
        }
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}

/// `agentbash rules check`: loads one pack (built-in name or path), compiles every
/// pattern and runs every example through the real interceptor with only the rule's own
/// tool available. A match example passes when this rule is the one that blocks (or
/// warns); a not_match example fails when this rule matches any checked candidate, even
/// one an earlier rule already decided, so that shadowing cannot hide a loose pattern.
pub fn check_pack(spec: &str) -> CheckReport {
    let mut report = CheckReport {
        pack: spec.to_string(),
        rules: 0,
        examples: 0,
        failures: Vec::new(),
        notes: Vec::new(),
    };
    let (name, text) = match read_pack(spec, None) {
        Ok(found) => found,
        Err(e) => {
            report.fail(
                None,
                None,
                CheckProblem::Load {
                    error: e.to_string(),
                },
            );
            return report;
        }
    };
    report.pack = name.clone();
    let parsed = match parse_pack(&name, &text) {
        Ok(parsed) => parsed,
        Err(e) => {
            report.fail(
                None,
                None,
                CheckProblem::Load {
                    error: e.to_string(),
                },
            );
            return report;
        }
    };
    report.rules = parsed.rules.len() + parsed.invalid.len();
    for bad in &parsed.invalid {
        report.fail(
            Some(&bad.id),
            Some(bad.location),
            CheckProblem::InvalidRegex {
                field: bad.field.to_string(),
                error: bad.error.clone(),
            },
        );
    }
    let set = match RuleSet::assemble(parsed.rules, Vec::new(), vec![name]) {
        Ok(set) => set,
        Err(e) => {
            report.fail(
                None,
                None,
                CheckProblem::Combine {
                    error: e.to_string(),
                },
            );
            return report;
        }
    };
    for rule in set.rules() {
        let tools = [rule.tool.clone()];
        let at = Some(rule.location());
        for example in &rule.examples_match {
            report.examples += 1;
            if !has_keyword(&rule.keywords, example) {
                report.fail(
                    Some(&rule.id),
                    at,
                    CheckProblem::MissedMatch {
                        example: example.clone(),
                        got: format!(
                            "it contains none of the rule's keywords {:?}, so the rule can never see it",
                            rule.keywords
                        ),
                    },
                );
                continue;
            }
            let result = intercept(example, &set, &tools);
            let caught = match rule.action {
                Action::Block | Action::Deny => {
                    result.blocked.as_ref().is_some_and(|h| h.rule == rule.id)
                }
                Action::Warn => result.warnings.iter().any(|h| h.rule == rule.id),
            };
            if !caught {
                let got = describe_outcome(&result, &rule.id);
                report.fail(
                    Some(&rule.id),
                    at,
                    CheckProblem::MissedMatch {
                        example: example.clone(),
                        got,
                    },
                );
            }
        }
        for example in &rule.examples_not_match {
            report.examples += 1;
            let result = intercept(example, &set, &tools);
            let hit = result.candidates.iter().find(|c| {
                c.verdict != Verdict::Skipped && c.matches.iter().any(|m| m.rule == rule.id)
            });
            if let Some(candidate) = hit {
                report.fail(
                    Some(&rule.id),
                    at,
                    CheckProblem::UnexpectedMatch {
                        example: example.clone(),
                        candidate: candidate.text.clone(),
                    },
                );
            }
        }
        if rule.examples_match.is_empty() || rule.examples_not_match.is_empty() {
            report.notes.push(format!(
                "rule `{}` has no {} examples",
                rule.id,
                if rule.examples_match.is_empty() {
                    "match"
                } else {
                    "not_match"
                }
            ));
        }
    }
    report
}

/// Explains why a match example was not caught by `rule`.
fn describe_outcome(result: &crate::pipeline::intercept::Interception, rule: &str) -> String {
    if let Some(hit) = &result.blocked
        && hit.rule != rule
    {
        return format!("blocked by rule `{}` on {:?}", hit.rule, hit.candidate);
    }
    let shadowed = result
        .candidates
        .iter()
        .find(|c| c.matches.iter().any(|m| m.rule == rule) && c.matched.as_deref() != Some(rule));
    if let Some(candidate) = shadowed {
        return format!(
            "matched {:?} but rule `{}` decided it first",
            candidate.text,
            candidate.matched.as_deref().unwrap_or("?")
        );
    }
    let skipped: Vec<&str> = result
        .candidates
        .iter()
        .filter(|c| c.verdict == Verdict::Skipped)
        .map(|c| c.text.as_str())
        .collect();
    let checked: Vec<String> = result
        .candidates
        .iter()
        .filter(|c| c.verdict != Verdict::Skipped)
        .map(|c| format!("{:?}", c.text))
        .collect();
    let mut got = format!("no match (checked: {})", checked.join(", "));
    if !skipped.is_empty() {
        got.push_str(&format!("; skipped as piped: {skipped:?}"));
    }
    if let Some(reason) = result.opaque {
        got.push_str(&format!("; not split: {reason}"));
    }
    got
}
