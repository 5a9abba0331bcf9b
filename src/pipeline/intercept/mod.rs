//! The interceptor (docs/RULES.md): decides, before anything runs, whether a command should
//! be refused because the caller has a better tool for the job.
//!
//! Its candidates are the simple commands of the line as the one shell parser reads
//! them (`shell::parse::walk`): compound commands, functions and `bash -c` strings
//! looked into, wrappers removed, each written as it appears in the line with what
//! surrounds it (` | NEXT` when its output feeds a pipe, ` &` in the background). The
//! *matcher* ([`intercept`]) checks each candidate against a [`RuleSet`], skipping
//! commands fed by a pipe (`printf x | grep x` is fine) and rules whose tool the caller
//! does not have. `deny` rules are matched against each command's canonical line
//! instead (quotes removed, variables and wrappers resolved), and see every command,
//! those in substitutions and traps included.
//!
//! Nothing here rejects input or panics: a part of the command that does not parse is
//! checked whole, because a false block costs the caller a turn while a miss only lets
//! a command run as it would have without agentbash.

pub mod check;

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use serde::Serialize;

use crate::config::rules::{Action, RuleSet};
use crate::shell::parse::{self, ErrorKind, Origin, SimpleCommand, Walk, walk::Joint};

/// Why part of a command could not be read; that part is checked whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpaqueReason {
    /// a `'`, `"` or `$'` with no closing partner
    UnterminatedQuote,
    /// a `$(`, `${`, `` ` ``, `$((` with no end
    UnterminatedExpansion,
    /// a token bash would not accept there (`fi` without `if`, `echo (`)
    Syntax,
    /// constructs nested deeper than the parser follows
    TooDeep,
}

impl OpaqueReason {
    fn of(kind: &ErrorKind) -> Self {
        match kind {
            ErrorKind::Unterminated { opener, .. } if matches!(*opener, "'" | "\"" | "$'") => {
                OpaqueReason::UnterminatedQuote
            }
            ErrorKind::Unterminated { .. } => OpaqueReason::UnterminatedExpansion,
            ErrorKind::TooDeep => OpaqueReason::TooDeep,
            _ => OpaqueReason::Syntax,
        }
    }
}

impl fmt::Display for OpaqueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpaqueReason::UnterminatedQuote => "unterminated quote",
            OpaqueReason::UnterminatedExpansion => "unterminated substitution or expansion",
            OpaqueReason::Syntax => "syntax error",
            OpaqueReason::TooDeep => "nesting too deep",
        })
    }
}

/// Whether a candidate is a simple command of the line or a part that did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateKind {
    Whole,
    Segment,
}

/// Why a candidate was not checked by `block`/`warn` rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its stdin is the previous segment's output (`printf x | grep x`).
    PipedStdin,
    /// It runs in the background, and the same command waits for or kills it.
    Reaped,
    /// It reads a file an earlier command of the line wrote (`make > log; tail log`).
    OwnOutput,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::PipedStdin => f.write_str("stdin is piped from the previous segment"),
            SkipReason::Reaped => {
                f.write_str("runs in the background, and the command waits for or kills it")
            }
            SkipReason::OwnOutput => f.write_str("reads what an earlier command of the line wrote"),
        }
    }
}

/// The outcome for one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No rule applies.
    Pass,
    /// The first applicable rule blocks.
    Block,
    /// The first applicable rule warns; the command runs.
    Warn,
    /// Not checked; see [`CandidateTrace::skipped`].
    Skipped,
}

/// One rule whose pattern matched a candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleMatch {
    pub rule: String,
    pub pack: String,
    pub tool: String,
    pub action: Action,
    /// False when the rule's tool is not among the caller's tools.
    pub applies: bool,
}

/// Everything the interceptor decided about one candidate (for `rules test`/`explain`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateTrace {
    /// The command as written (what `block`/`warn` rules match).
    pub text: String,
    /// Its canonical line (what `deny` rules match); empty when no `deny` rule is in
    /// the packs, which then never need it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parsed: String,
    pub kind: CandidateKind,
    pub skipped: Option<SkipReason>,
    /// The rule that decided this candidate (first applicable match in pack order).
    pub matched: Option<String>,
    /// Every rule whose pattern matched, in pack order, applicable or not.
    pub matches: Vec<RuleMatch>,
    pub verdict: Verdict,
}

/// A rule that fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub rule: String,
    pub pack: String,
    pub tool: String,
    pub message: String,
    pub action: Action,
    /// The candidate text it fired on.
    pub candidate: String,
}

/// The interceptor's result for one command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Interception {
    pub candidates: Vec<CandidateTrace>,
    /// The first blocking hit; when set, nothing may run.
    pub blocked: Option<Hit>,
    /// `warn` hits, one per rule, in the order met.
    pub warnings: Vec<Hit>,
    /// Set when part of the command could not be parsed and was checked whole.
    pub opaque: Option<OpaqueReason>,
}

impl Interception {
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }
}

/// The walk the interceptor reads: no environment (routing does not depend on it).
pub(crate) fn walk_of(cmd: &str) -> Walk {
    let env = BTreeMap::new();
    parse::walk(
        cmd,
        &parse::Context {
            env: &env,
            cwd: None,
        },
    )
}

/// Checks `cmd` against `rules` for a caller that has `tools`.
///
/// Candidates are the simple commands of `cmd` (see `candidates_of`), and each part
/// that did not parse, whole. A candidate identical to an earlier one is not
/// repeated. For each candidate the first matching rule in pack order that applies
/// decides: `block` blocks (the first such candidate is reported), `warn` adds a
/// notice, `deny` refuses whatever the tools.
pub fn intercept(cmd: &str, rules: &RuleSet, tools: &[String]) -> Interception {
    if cmd.trim().is_empty() {
        return Interception::default();
    }
    intercept_walk(&walk_of(cmd), rules, tools)
}

/// [`intercept`] on a walk already made.
pub fn intercept_walk(walk: &Walk, rules: &RuleSet, tools: &[String]) -> Interception {
    let mut out = Interception::default();
    let has_deny = rules.rules().iter().any(|r| r.action == Action::Deny);
    let mut candidates = candidates_of(&walk.commands, has_deny);
    for part in &walk.unparsed {
        if part.depth == 0 && part.origin == Origin::Line {
            out.opaque.get_or_insert(OpaqueReason::of(&part.error.kind));
        }
        let text = part.text.trim();
        if !text.is_empty() && !candidates.iter().any(|c| c.text == text) {
            candidates.push(Candidate {
                text: text.to_string(),
                parsed: text.to_string(),
                kind: CandidateKind::Whole,
                skipped: None,
                info_only: false,
                bounded: false,
            });
        }
    }
    let listed: HashSet<String> = if has_deny {
        candidates.iter().map(|c| c.parsed.clone()).collect()
    } else {
        HashSet::new()
    };
    for candidate in candidates {
        let trace = check_candidate(candidate, rules, tools, has_deny, &mut out);
        out.candidates.push(trace);
    }
    // `deny` rules see every command, those that are not routing candidates too
    // (substitutions, traps, `find -exec`); one is listed only when a rule matched.
    if has_deny {
        let mut seen = listed;
        for c in &walk.commands {
            let parsed = c.rendered();
            if parsed.is_empty() || !seen.insert(parsed.clone()) {
                continue;
            }
            let candidate = Candidate {
                text: parsed.clone(),
                parsed,
                kind: CandidateKind::Segment,
                skipped: None,
                info_only: false,
                bounded: false,
            };
            if rules.matching(&candidate.parsed).iter().any(|&i| {
                rules
                    .rules()
                    .get(i)
                    .is_some_and(|r| r.action == Action::Deny)
            }) {
                let trace = check_candidate(candidate, rules, tools, true, &mut out);
                out.candidates.push(trace);
            }
        }
    }
    out
}

/// Matches one candidate and records the outcome in `out`.
fn check_candidate(
    candidate: Candidate,
    rules: &RuleSet,
    tools: &[String],
    has_deny: bool,
    out: &mut Interception,
) -> CandidateTrace {
    let Candidate {
        text,
        parsed,
        kind,
        skipped,
        info_only,
        bounded,
    } = candidate;
    let mut trace = CandidateTrace {
        text,
        parsed,
        kind,
        skipped,
        matched: None,
        matches: Vec::new(),
        verdict: if skipped.is_some() {
            Verdict::Skipped
        } else {
            Verdict::Pass
        },
    };
    // `block`/`warn` rules read the command as written; `deny` rules its canonical
    // line. Both lists are in pack order.
    let mut indices: Vec<usize> = Vec::new();
    if skipped.is_none() {
        indices.extend(rules.matching(&trace.text).into_iter().filter(|&i| {
            rules
                .rules()
                .get(i)
                .is_some_and(|r| r.action != Action::Deny)
        }));
    }
    if has_deny {
        indices.extend(rules.matching(&trace.parsed).into_iter().filter(|&i| {
            rules
                .rules()
                .get(i)
                .is_some_and(|r| r.action == Action::Deny)
        }));
    }
    indices.sort_unstable();
    indices.dedup();
    for index in indices {
        let Some(rule) = rules.rules().get(index) else {
            continue;
        };
        // `vite --version` prints and exits; `timeout 5 npm run dev` cannot outlive
        // the run. A deny rule refuses whatever the arguments.
        if rule.action != Action::Deny && (info_only || (bounded && rule.long_running)) {
            continue;
        }
        // A deny rule needs no declared tool: it refuses for everyone.
        let applies = rule.action == Action::Deny || tools.contains(&rule.tool);
        trace.matches.push(RuleMatch {
            rule: rule.id.clone(),
            pack: rule.pack.clone(),
            tool: rule.tool.clone(),
            action: rule.action,
            applies,
        });
        if !applies || trace.matched.is_some() {
            continue;
        }
        trace.matched = Some(rule.id.clone());
        let hit = Hit {
            rule: rule.id.clone(),
            pack: rule.pack.clone(),
            tool: rule.tool.clone(),
            message: rule.message.clone(),
            action: rule.action,
            candidate: if rule.action == Action::Deny {
                trace.parsed.clone()
            } else {
                trace.text.clone()
            },
        };
        match rule.action {
            Action::Block | Action::Deny => {
                trace.verdict = Verdict::Block;
                if out.blocked.is_none() {
                    out.blocked = Some(hit);
                }
            }
            Action::Warn => {
                trace.verdict = Verdict::Warn;
                let known = out
                    .warnings
                    .iter()
                    .any(|w| w.rule == hit.rule && w.pack == hit.pack);
                if !known {
                    out.warnings.push(hit);
                }
            }
        }
    }
    trace
}

/// The canonical lines `deny` rules are matched against: every command of the walk,
/// and each part that did not parse, as written.
pub fn deny_lines(walk: &Walk) -> Vec<String> {
    let mut lines: Vec<String> = walk
        .commands
        .iter()
        .map(SimpleCommand::rendered)
        .filter(|l| !l.is_empty())
        .collect();
    lines.extend(walk.unparsed.iter().map(|u| u.text.trim().to_string()));
    lines
}

/// The first `deny` rule of `rules` (in line order, then pack order) that matches one
/// of `lines`.
pub fn deny(lines: &[String], rules: &RuleSet) -> Option<Hit> {
    for line in lines {
        for i in rules.matching(line) {
            let Some(rule) = rules.rules().get(i) else {
                continue;
            };
            if rule.action == Action::Deny {
                return Some(Hit {
                    rule: rule.id.clone(),
                    pack: rule.pack.clone(),
                    tool: rule.tool.clone(),
                    message: rule.message.clone(),
                    action: rule.action,
                    candidate: line.clone(),
                });
            }
        }
    }
    None
}

/// One text the rules are matched against, and what the matcher knows about it.
struct Candidate {
    text: String,
    parsed: String,
    kind: CandidateKind,
    skipped: Option<SkipReason>,
    /// The command only asks for help or a version (`vite --version`).
    info_only: bool,
    /// A `timeout` wrapper bounds the command.
    bounded: bool,
}

/// Whether the interceptor routes this command: one the line (or a script it runs,
/// or a function it calls) runs, not one inside a substitution, a trap or
/// `find -exec`.
fn routable(c: &SimpleCommand) -> bool {
    matches!(c.origin, Origin::Line | Origin::Script | Origin::Call)
        && !c.substituted
        && !c.text.trim().is_empty()
}

/// Candidates from the simple commands of a command line (see [`parse::walk`]): each
/// command as written from its program name, followed by ` | NEXT…` when its stdout
/// feeds a pipeline (so a rule can tell `cat f | less` from `cat f | jq .`; `xargs`
/// keeps its name there, without its options) and by ` &` when it runs in the
/// background. Within a pipeline the later stages come first: in
/// `find … | xargs sed -i …` the stage that acts decides, not the one that lists.
/// A command that writes a temporary file which the next one moves over an input of
/// the first (`sed … f > f.tmp && mv f.tmp f`) is also checked as the pair.
fn candidates_of(commands: &[SimpleCommand], parsed: bool) -> Vec<Candidate> {
    let simples: Vec<&SimpleCommand> = commands.iter().filter(|c| routable(c)).collect();
    // `srv & pid=$!; …; kill $pid` and `a & b & wait` clean up after themselves.
    let reaped = simples.iter().any(|s| match s.name() {
        Some("wait") => true,
        Some("kill") => s
            .argv
            .iter()
            .skip(1)
            .any(|w| w.text.starts_with('%') || !w.known()),
        _ => false,
    });
    // A command's output feeds the next one when the next reads a pipe.
    let feeds = |i: usize| {
        simples[i].piped_stdout
            && simples
                .get(i + 1)
                .is_some_and(|n| n.piped_stdin || n.via_xargs)
    };
    let mut order: Vec<usize> = Vec::with_capacity(simples.len());
    let mut start = 0;
    for i in 0..simples.len() {
        if !feeds(i) {
            order.extend((start..=i).rev());
            start = i + 1;
        }
    }
    // A set, not a scan: a generated command may have many thousands of commands, and
    // checking must stay linear.
    let mut seen: HashSet<(String, Option<SkipReason>)> = HashSet::new();
    let mut out = Vec::with_capacity(order.len());
    // Files the line writes, by the index of the first command that writes each.
    let mut written: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, s) in simples.iter().enumerate() {
        for r in &s.redirects {
            if r.op.writes()
                && let Some(t) = r.target.as_ref().filter(|t| t.known())
            {
                written.entry(t.text.as_str()).or_insert(i);
            }
        }
    }
    let own_output = |i: usize| {
        let s = simples[i];
        matches!(
            s.name(),
            Some("cat" | "head" | "tail" | "less" | "more" | "bat" | "nl" | "grep" | "rg")
        ) && {
            let files: Vec<&str> = s.argv[1..]
                .iter()
                .map(|f| f.text.as_str())
                .filter(|t| !t.starts_with('-') && !t.chars().all(|c| c.is_ascii_digit()))
                .collect();
            files
                .last()
                .is_some_and(|f| written.get(f).is_some_and(|&w| w < i))
        }
    };
    for i in order {
        let s = simples[i];
        let mut text = s.text.clone();
        let mut k = i;
        // The rest of the pipeline its output goes through.
        while feeds(k)
            && let Some(next) = simples.get(k + 1)
        {
            text.push_str(" | ");
            if next.via_xargs {
                text.push_str("xargs ");
            }
            text.push_str(&next.text);
            k += 1;
        }
        if s.background && !text.ends_with('&') {
            text.push_str(" &");
        }
        let skipped = if s.background && reaped {
            Some(SkipReason::Reaped)
        } else if s.piped_stdin && !s.background {
            Some(SkipReason::PipedStdin)
        } else if own_output(i) {
            Some(SkipReason::OwnOutput)
        } else {
            None
        };
        let parsed = if parsed { s.rendered() } else { String::new() };
        if seen.insert((text.clone(), skipped)) {
            out.push(Candidate {
                text,
                parsed: parsed.clone(),
                kind: CandidateKind::Segment,
                skipped,
                info_only: is_info_only(s),
                bounded: s.bounded,
            });
        }
        if let Some(pair) = rewrite_pair(s, simples.get(i + 1).copied())
            && seen.insert((pair.clone(), None))
        {
            out.push(Candidate {
                text: pair,
                parsed,
                kind: CandidateKind::Segment,
                skipped: None,
                info_only: false,
                bounded: s.bounded,
            });
        }
    }
    out
}

/// `CMD … F … > T && mv T F`: a command whose output replaces one of its inputs, the
/// pair as written.
fn rewrite_pair(a: &SimpleCommand, b: Option<&SimpleCommand>) -> Option<String> {
    let b = b?;
    if !matches!(b.joint, Joint::And | Joint::Seq)
        || b.name()? != "mv"
        || a.piped_stdout
        || a.background
    {
        return None;
    }
    let tmp = a.redirects.iter().rev().find(|r| {
        r.fd() == 1
            && matches!(
                r.op,
                parse::ast::RedirOp::Out | parse::ast::RedirOp::Clobber
            )
    })?;
    let tmp = tmp.target.as_ref().filter(|t| t.known())?;
    let operands: Vec<&str> = b.argv[1..]
        .iter()
        .map(|f| f.text.as_str())
        .filter(|t| !t.starts_with('-'))
        .collect();
    let [from, to] = operands.as_slice() else {
        return None;
    };
    let reads_target = a.argv[1..].iter().any(|f| f.text == *to)
        || a.redirects.iter().any(|r| {
            r.fd() == 0
                && r.op == parse::ast::RedirOp::In
                && r.target.as_ref().is_some_and(|t| t.text == *to)
        });
    (*from == tmp.text && reads_target && from != to).then(|| format!("{} && {}", a.text, b.text))
}

/// `prog --help`, `prog sub --version`, `prog help`, `npm start -- --help`: the last
/// word asks for information, so the program prints and exits; so does a server
/// asked only to check its configuration (`nginx -t`, `--check-config`).
fn is_info_only(c: &SimpleCommand) -> bool {
    let words: Vec<&str> = c.argv.iter().map(|f| f.text.as_str()).collect();
    let checks = |w: &&str| {
        matches!(
            *w,
            "--check-config"
                | "--config-check"
                | "--check"
                | "--configtest"
                | "--test-config"
                | "--validate"
                | "--dry-run"
        )
    };
    if words.iter().skip(1).any(checks) {
        return true;
    }
    match words.as_slice() {
        [_, only] if matches!(*only, "help" | "version") => true,
        [_, .., last] => matches!(
            *last,
            "--help" | "-h" | "--version" | "-V" | "--type-list" | "-help" | "-version"
        ),
        _ => false,
    }
}

/// The exact text shown for a blocked command (docs/RULES.md).
pub fn blocked_message(hit: &Hit, original: &str) -> String {
    format!("Blocked: {}\n\nOriginal command: {}", hit.message, original)
}

/// The report of `agentbash rules test`: every candidate, every rule that matched it,
/// whether that rule applies with `tools`, and the final verdict.
pub fn format_test(cmd: &str, interception: &Interception, tools: &[String]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let tools_text = if tools.is_empty() {
        "(none: no rule can block)".to_string()
    } else {
        tools.join(", ")
    };
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(out, "command: {}", crate::display::escape_controls(cmd));
    let _ = writeln!(out, "tools:   {tools_text}");
    let _ = writeln!(
        out,
        "parse:   {} candidate(s): simple commands, wrappers removed, later pipeline stages first; a repeat is not listed",
        interception.candidates.len()
    );
    if let Some(reason) = interception.opaque {
        let _ = writeln!(
            out,
            "         part of it does not parse ({reason}): that part is checked whole"
        );
    }
    if interception.candidates.is_empty() {
        let _ = writeln!(out, "candidates: none (empty command)");
    }
    for (n, candidate) in interception.candidates.iter().enumerate() {
        let kind = match candidate.kind {
            CandidateKind::Whole => "whole",
            CandidateKind::Segment => "segment",
        };
        let _ = writeln!(
            out,
            "{:>3}. [{kind}] {}",
            n + 1,
            crate::display::escape_controls(&candidate.text)
        );
        if candidate.parsed != candidate.text
            && candidate.matches.iter().any(|m| m.action == Action::Deny)
        {
            let _ = writeln!(
                out,
                "       parsed: {}",
                crate::display::escape_controls(&candidate.parsed)
            );
        }
        if let Some(reason) = candidate.skipped {
            let _ = writeln!(out, "       skipped: {reason}");
            continue;
        }
        if candidate.matches.is_empty() {
            let _ = writeln!(out, "       no rule matches");
        }
        // The first applicable match decided the candidate (see `intercept`).
        let decider = candidate.matches.iter().position(|m| m.applies);
        for (index, m) in candidate.matches.iter().enumerate() {
            let status = if !m.applies {
                format!("tool `{}` absent: does not apply", m.tool)
            } else if decider == Some(index) {
                match m.action {
                    Action::Block => "BLOCKS".to_string(),
                    Action::Deny => "REFUSES (deny: whatever the tools)".to_string(),
                    Action::Warn => "WARNS (command runs)".to_string(),
                }
            } else {
                "applies, but an earlier rule decided".to_string()
            };
            let _ = writeln!(
                out,
                "       rule `{}` ({}, {}, tool `{}`): {status}",
                m.rule, m.pack, m.action, m.tool
            );
        }
    }
    match &interception.blocked {
        Some(hit) => {
            let _ = writeln!(
                out,
                "result:  BLOCKED by rule `{}` (pack {}, tool `{}`) on `{}`",
                hit.rule, hit.pack, hit.tool, hit.candidate
            );
            let _ = writeln!(out);
            let _ = writeln!(out, "{}", blocked_message(hit, cmd));
        }
        None => {
            let _ = writeln!(out, "result:  would run");
        }
    }
    for warning in &interception.warnings {
        let _ = writeln!(
            out,
            "notice:  rule `{}` (tool `{}`): {}",
            warning.rule, warning.tool, warning.message
        );
    }
    out
}
