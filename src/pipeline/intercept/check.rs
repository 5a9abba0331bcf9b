//! `rules check`: a pack's rules compiled one by one and its examples run through
//! the interceptor, each failure reported with the rule and where it is written.

use super::{Verdict, intercept};
use crate::config::rules::{Action, Location, Rule, RuleSet, has_keyword, parse_pack, read_pack};
use serde::Serialize;
use std::fmt;

/// What went wrong with one rule or pack in `rules check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckProblem {
    /// The pack could not be read or parsed.
    Load { error: String },
    /// `pattern` or `unless` does not parse or compile.
    InvalidRegex { field: String, error: String },
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
    let load_failed = |report: &mut CheckReport, error: String| {
        report.fail(None, None, CheckProblem::Load { error });
    };
    let (name, text) = match read_pack(spec, None) {
        Ok(found) => found,
        Err(e) => {
            load_failed(&mut report, e.to_string());
            return report;
        }
    };
    report.pack = name.clone();
    let parsed = match parse_pack(&name, &text) {
        Ok(parsed) => parsed,
        Err(e) => {
            load_failed(&mut report, e.to_string());
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
    let set = RuleSet::assemble(parsed.rules, Vec::new(), vec![name]);
    // Loading only parses patterns; a pattern can still fail to compile (size limit).
    for rule in set.rules() {
        for (field, error) in rule.compile_errors() {
            report.fail(
                Some(&rule.id),
                Some(rule.location()),
                CheckProblem::InvalidRegex {
                    field: field.to_string(),
                    error,
                },
            );
        }
    }
    for rule in set.rules() {
        check_examples(&mut report, &set, rule);
    }
    report
}

/// Run one rule's examples, each with only the rule's own tool available, and note
/// a rule that lacks examples of a kind.
fn check_examples(report: &mut CheckReport, set: &RuleSet, rule: &Rule) {
    let tools = [rule.tool.clone()];
    for example in &rule.examples_match {
        report.examples += 1;
        if let Some(got) = missed_match(set, rule, &tools, example) {
            report.fail(
                Some(&rule.id),
                Some(rule.location()),
                CheckProblem::MissedMatch {
                    example: example.clone(),
                    got,
                },
            );
        }
    }
    for example in &rule.examples_not_match {
        report.examples += 1;
        let result = intercept(example, set, &tools);
        let hit = result
            .candidates
            .iter()
            .find(|c| c.verdict != Verdict::Skipped && c.matches.iter().any(|m| m.rule == rule.id));
        if let Some(candidate) = hit {
            report.fail(
                Some(&rule.id),
                Some(rule.location()),
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

/// What happened instead, when a match example is not caught by `rule` (blocked,
/// or warned about for a warn rule); `None` when it is.
fn missed_match(set: &RuleSet, rule: &Rule, tools: &[String], example: &str) -> Option<String> {
    // A deny rule's keywords are looked for in the canonical lines it sees.
    let seen = if rule.action == Action::Deny {
        super::deny_lines(&super::walk_of(example)).join("\n")
    } else {
        example.to_string()
    };
    if !has_keyword(&rule.keywords, &seen) {
        return Some(format!(
            "it contains none of the rule's keywords {:?}, so the rule can never see it",
            rule.keywords
        ));
    }
    let result = intercept(example, set, tools);
    let caught = match rule.action {
        Action::Block | Action::Deny => result.blocked.as_ref().is_some_and(|h| h.rule == rule.id),
        Action::Warn => result.warnings.iter().any(|h| h.rule == rule.id),
    };
    (!caught).then(|| describe_outcome(&result, &rule.id))
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

/// The thresholds a corpus must meet unless its header sets others (`#: min-precision
/// 99.0`, `#: min-recall 95.0`).
pub const MIN_PRECISION: f64 = 99.0;
pub const MIN_RECALL: f64 = 95.0;

/// One labelled command of a corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorpusCase {
    pub line: usize,
    /// `pass` or the tool the command should be routed to.
    pub expected: String,
    pub command: String,
}

/// A parsed corpus file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Corpus {
    pub cases: Vec<CorpusCase>,
    pub min_precision: f64,
    pub min_recall: f64,
}

/// Reads a corpus: `<expected>\t<command>` per line, `␤` for a newline inside a
/// command, `#` comments, and `#: min-precision N` / `#: min-recall N` headers.
pub fn parse_corpus(name: &str, text: &str) -> Result<Corpus, String> {
    let mut corpus = Corpus {
        cases: Vec::new(),
        min_precision: MIN_PRECISION,
        min_recall: MIN_RECALL,
    };
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if let Some(setting) = line.strip_prefix("#:") {
            let mut parts = setting.split_whitespace();
            let (key, value) = (parts.next(), parts.next().map(str::parse::<f64>));
            match (key, value) {
                (Some("min-precision"), Some(Ok(v))) => corpus.min_precision = v,
                (Some("min-recall"), Some(Ok(v))) => corpus.min_recall = v,
                _ => {
                    return Err(format!(
                        "{name}:{line_no}: unknown setting {line:?}: expected `#: min-precision N` or `#: min-recall N`"
                    ));
                }
            }
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((expected, command)) = line.split_once('\t') else {
            return Err(format!(
                "{name}:{line_no}: expected `<pass|TOOL><TAB><command>`, got {line:?}"
            ));
        };
        if expected.is_empty() || expected.contains(char::is_whitespace) {
            return Err(format!(
                "{name}:{line_no}: the verdict {expected:?} must be `pass` or a tool name"
            ));
        }
        corpus.cases.push(CorpusCase {
            line: line_no,
            expected: expected.to_string(),
            command: command.replace('\u{2424}', "\n"),
        });
    }
    Ok(corpus)
}

/// Blocks and agreements for one tool (or overall).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Score {
    pub tool: String,
    /// Commands labelled with this tool.
    pub expected: usize,
    /// Commands the pack routed to this tool.
    pub blocks: usize,
    /// Commands labelled with this tool and routed to it.
    pub correct: usize,
    /// `correct / blocks` in percent (100 when nothing was blocked).
    pub precision: f64,
    /// `correct / expected` in percent (100 when nothing was expected).
    pub recall: f64,
}

impl Score {
    fn finish(&mut self) {
        let pct = |a: usize, b: usize| {
            if b == 0 {
                100.0
            } else {
                a as f64 * 100.0 / b as f64
            }
        };
        self.precision = pct(self.correct, self.blocks);
        self.recall = pct(self.correct, self.expected);
    }
}

/// A command on which the pack and the corpus disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    pub line: usize,
    pub command: String,
    pub expected: String,
    /// `pass` or the tool the pack routed it to.
    pub got: String,
    /// The rule that blocked, if any.
    pub rule: Option<String>,
    /// The candidate it blocked on, if any.
    pub candidate: Option<String>,
}

/// The result of `rules check --corpus`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorpusReport {
    pub corpus: String,
    pub packs: Vec<String>,
    pub commands: usize,
    pub tools: Vec<Score>,
    pub overall: Score,
    pub min_precision: f64,
    pub min_recall: f64,
    pub disagreements: Vec<Disagreement>,
}

impl CorpusReport {
    /// Whether both overall figures meet the corpus's thresholds.
    pub fn ok(&self) -> bool {
        self.overall.precision >= self.min_precision && self.overall.recall >= self.min_recall
    }
}

/// Scores `rules` on `corpus`: every command is only matched (nothing runs), with every
/// tool of the rules declared, so each rule can route.
pub fn score_corpus(name: &str, corpus: &Corpus, rules: &RuleSet) -> CorpusReport {
    let mut tools: Vec<String> = rules
        .rules()
        .iter()
        .filter(|r| !r.tool.is_empty())
        .map(|r| r.tool.clone())
        .collect();
    for case in &corpus.cases {
        if case.expected != "pass" {
            tools.push(case.expected.clone());
        }
    }
    tools.sort_unstable();
    tools.dedup();
    let mut scores: Vec<Score> = tools
        .iter()
        .map(|t| Score {
            tool: t.clone(),
            ..Score::default()
        })
        .collect();
    let mut disagreements = Vec::new();
    for case in &corpus.cases {
        let result = intercept(&case.command, rules, &tools);
        let (got, rule, candidate) = match &result.blocked {
            Some(hit) if !hit.tool.is_empty() => (
                hit.tool.clone(),
                Some(hit.rule.clone()),
                Some(hit.candidate.clone()),
            ),
            _ => ("pass".to_string(), None, None),
        };
        for score in &mut scores {
            if score.tool == case.expected {
                score.expected += 1;
                score.correct += usize::from(got == case.expected);
            }
            if score.tool == got {
                score.blocks += 1;
            }
        }
        if got != case.expected {
            disagreements.push(Disagreement {
                line: case.line,
                command: case.command.clone(),
                expected: case.expected.clone(),
                got,
                rule,
                candidate,
            });
        }
    }
    let mut overall = Score {
        tool: "overall".to_string(),
        ..Score::default()
    };
    for score in &mut scores {
        score.finish();
        overall.expected += score.expected;
        overall.blocks += score.blocks;
        overall.correct += score.correct;
    }
    overall.finish();
    CorpusReport {
        corpus: name.to_string(),
        packs: rules.packs().to_vec(),
        commands: corpus.cases.len(),
        tools: scores,
        overall,
        min_precision: corpus.min_precision,
        min_recall: corpus.min_recall,
        disagreements,
    }
}

impl fmt::Display for CorpusReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let passes = self.commands - self.overall.expected;
        writeln!(
            f,
            "corpus {}: {} commands ({passes} pass, {} routed), packs {}",
            self.corpus,
            self.commands,
            self.overall.expected,
            self.packs.join(", ")
        )?;
        writeln!(
            f,
            "{:<10} {:>8} {:>7} {:>7} {:>10} {:>8}",
            "tool", "expected", "blocks", "correct", "precision", "recall"
        )?;
        for s in self.tools.iter().chain(std::iter::once(&self.overall)) {
            writeln!(
                f,
                "{:<10} {:>8} {:>7} {:>7} {:>9.1}% {:>7.1}%",
                s.tool, s.expected, s.blocks, s.correct, s.precision, s.recall
            )?;
        }
        for d in &self.disagreements {
            let rule = d
                .rule
                .as_ref()
                .map(|r| format!(" (rule `{r}`)"))
                .unwrap_or_default();
            writeln!(
                f,
                "  line {}: expected {}, got {}{rule}: {}",
                d.line,
                d.expected,
                d.got,
                crate::display::escape_controls(&d.command)
            )?;
        }
        let verdict = if self.ok() { "ok" } else { "BELOW THRESHOLD" };
        write!(
            f,
            "{verdict}: precision {:.1}% (min {:.1}%), recall {:.1}% (min {:.1}%), {} disagreement(s)",
            self.overall.precision,
            self.min_precision,
            self.overall.recall,
            self.min_recall,
            self.disagreements.len()
        )
    }
}
