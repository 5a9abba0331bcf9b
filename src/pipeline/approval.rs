//! Approval: which commands of a line run, which a person must approve first, and
//! which are refused (README, Approval; docs/CONFIG.md, `[approval]`).
//!
//! Every simple command the shell parser's walk yields is judged — each element of a
//! list or pipeline, subshells, `bash -c` strings, function bodies, substitutions —
//! with its assignments, redirections and wrappers already removed, so `cd x && git
//! push`, `FOO=1 git push 2>&1` and `sudo git push` are all `git push` to a rule. A
//! rule's prefix matches the first words of the command literally (`git -C repo
//! push` is not `git push`); the strictest decision of every rule that matches wins
//! (deny > ask > allow), and a command no rule matches gets `approval.default`. The
//! line's decision is the strictest of its commands'.
//!
//! What the walk cannot see is not let by: a program whose name is not known until
//! the line runs, or a script text run by `eval`/`bash -c`/`su -c` that is not known,
//! is judged `ask` when any rule could match it (any `ask` or `deny` rule, or a
//! default that is not `allow`).
//!
//! This module decides; `pipeline::execute` asks (through the request's
//! [`crate::request::Approver`]) and refuses.

use crate::config::approval::{ApprovalRule, Decision, Prefix, Token, Unattended};
use crate::config::schema::ApprovalCfg;
use crate::output::redact::Secrets;
use crate::request::{Answer, Ask, Question};
use crate::result::{BlockKind, Blocked};
use crate::shell::parse::{Field, Walk, program_name};
use serde::Serialize;

/// How one simple command was judged (what `explain` lists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judged {
    /// The command as matched: its program and arguments, resolved (`…` after a
    /// part that is not known until it runs).
    pub command: String,
    pub decision: Decision,
    /// The rule that decided (its id, else its prefix); `null` when
    /// `approval.default` did.
    pub rule: Option<String>,
    /// Why, when it is not plain: approved for the session, or not known until it
    /// runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The prefix an "always" answer remembers for the session (the asking rule's,
    /// or the command's own words when the default asked); `None`: it cannot be
    /// remembered (a command not known until it runs).
    #[serde(skip)]
    pub remember: Option<String>,
    /// Decided by a pipeline form (`curl ** | sh`) as one of its stages.
    #[serde(skip)]
    pub staged: bool,
}

/// The approval stage of a run, decided before anything runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ApprovalPlan {
    /// `[approval]` has something to decide (a rule, or a default other than allow).
    pub active: bool,
    /// One entry per simple command of the line.
    pub judged: Vec<Judged>,
    /// The line's decision: the strictest of its commands'.
    pub decision: Decision,
    /// What `ask` becomes when no one can be asked (`approval.unattended`).
    pub unattended: Unattended,
    /// Seconds a question waits for its answer (`approval.timeout`).
    pub timeout_s: u64,
}

/// Why an approval refused a command, and the text the caller is shown.
pub struct Refused {
    pub blocked: Blocked,
    pub text: String,
}

impl ApprovalPlan {
    /// The commands with the line's decision, when it is `ask` or `deny`.
    pub fn deciding(&self) -> Vec<&Judged> {
        if self.decision == Decision::Allow {
            return Vec::new();
        }
        self.judged
            .iter()
            .filter(|j| j.decision == self.decision)
            .collect()
    }

    /// The first command that decides the line (`ask` or `deny`).
    pub fn first(&self) -> Option<&Judged> {
        self.deciding().into_iter().next()
    }

    /// The question a person must answer before the line runs (its `ask` commands).
    pub fn question(&self, command: &str, session: Option<&str>, secrets: &Secrets) -> Question {
        Question {
            command: command.to_string(),
            asks: self
                .deciding()
                .into_iter()
                .map(|j| Ask {
                    command: secrets.mask(&j.command).into_owned(),
                    rule: j.rule.clone().unwrap_or_else(|| "approval.default".into()),
                    prefix: j.remember.clone(),
                })
                .collect(),
            session: session.map(str::to_string),
            timeout: std::time::Duration::from_secs(self.timeout_s),
        }
    }

    /// The refusal of a line a `deny` decided.
    pub fn denied(&self, original: &str, profile: &str, secrets: &Secrets) -> Option<Refused> {
        if self.decision != Decision::Deny {
            return None;
        }
        let j = self.first()?;
        let rule = j.rule.clone().unwrap_or_else(|| "approval.default".into());
        let by = match &j.rule {
            Some(r) => format!("rule `{r}`"),
            None => "approval.default".into(),
        };
        // A pipeline form names the pipeline its stages make.
        let command = if j.staged {
            self.deciding()
                .into_iter()
                .filter(|o| o.staged && o.rule == j.rule)
                .map(|o| o.command.as_str())
                .collect::<Vec<_>>()
                .join(" | ")
        } else {
            j.command.clone()
        };
        let command = secrets.mask(&command);
        let reason = match &j.note {
            Some(note) => format!(
                "`{command}` is denied by {by} of the approval policy (profile {profile}): {note}"
            ),
            None => {
                format!("`{command}` is denied by {by} of the approval policy (profile {profile})")
            }
        };
        let text = format!(
            "Refused: {reason}. Nothing was run. For it to run, a person must change that decision in the profile's [approval] table.\n\nOriginal command: {original}"
        );
        Some(refused(rule, reason, text))
    }

    /// The refusal of a line that asked and was not approved: `answer` is what came
    /// back (or [`Answer::Unavailable`] when no one could be asked).
    pub fn not_approved(
        &self,
        question: &Question,
        answer: &Answer,
        who: &str,
        profile: &str,
        original: &str,
    ) -> Refused {
        let commands = question
            .asks
            .iter()
            .map(|a| format!("`{}`", a.command))
            .collect::<Vec<_>>()
            .join(", ");
        let rules = question.rules();
        let needs = format!("{commands} needs approval ({rules} asks)");
        let (reason, advice) = match answer {
            Answer::Deny => (format!("{needs}, and {who} declined it"), String::new()),
            Answer::TimedOut => (
                format!(
                    "{needs}, and {who} did not answer within approval.timeout ({} s)",
                    self.timeout_s
                ),
                String::new(),
            ),
            Answer::Unavailable(why) => (
                format!(
                    "{needs}, and no one can be asked here ({why}); approval.unattended = \"deny\" refuses it"
                ),
                format!(
                    " A person must approve it: run it where they can answer (agentbash run on a terminal, an MCP client that supports elicitation, an rpc client that answers approval_request), or change profile {profile}'s [approval] policy ({rules}: its decision; or approval.unattended = \"allow\")."
                ),
            ),
            Answer::Once | Answer::Always | Answer::Cancelled(_) => {
                (format!("{needs}, and it was not approved"), String::new())
            }
        };
        let text =
            format!("Refused: {reason}. Nothing was run.{advice}\n\nOriginal command: {original}");
        let rule = question
            .asks
            .first()
            .map_or_else(|| "approval.default".to_string(), |a| a.rule.clone());
        refused(rule, reason, text)
    }

    /// One line per decision, for `explain`.
    pub fn describe(&self) -> Vec<String> {
        if !self.active {
            return vec!["allow (no [approval] rules)".into()];
        }
        let mut v = vec![match self.decision {
            Decision::Allow => "allow".to_string(),
            Decision::Ask => "ASK: a person must approve it before it runs".to_string(),
            Decision::Deny => "DENY: refused, nothing runs".to_string(),
        }];
        for j in &self.judged {
            let by = j
                .rule
                .as_ref()
                .map_or_else(|| "approval.default".to_string(), |r| format!("rule `{r}`"));
            let note = j
                .note
                .as_ref()
                .map(|n| format!(" — {n}"))
                .unwrap_or_default();
            v.push(format!(
                "  {:<5} {}  ({by}){note}",
                j.decision.as_str(),
                j.command
            ));
        }
        v
    }
}

fn refused(rule: String, reason: String, text: String) -> Refused {
    Refused {
        blocked: Blocked {
            rule,
            tool: None,
            message: reason,
            kind: BlockKind::Approval,
        },
        text,
    }
}

/// The note of a command a session's "always" answer lets run.
pub const REMEMBERED: &str = "approved for this session";

/// What a rule is matched against: a simple command of the walk, or a program it
/// looked through to reach one (a wrapper, a shell running a script), which only a
/// rule naming it decides about.
struct Subject<'w> {
    argv: &'w [Field],
    pipeline: usize,
    stage: usize,
    /// A wrapper or script runner (see `Walk::runners`).
    runner: bool,
    /// Reached without a wrapper (a session's function or alias could be meant).
    bare: bool,
}

/// How surely a pattern matches a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fit {
    No,
    /// It would if a word not known until the command runs had the right value.
    Maybe,
    Yes,
}

/// A rule as the matcher uses it.
struct Rule<'a> {
    rule: &'a ApprovalRule,
    /// Approved "always" in this session: an `ask` rule that allows.
    remembered: bool,
}

impl Rule<'_> {
    fn name(&self) -> String {
        self.rule
            .id
            .clone()
            .unwrap_or_else(|| self.rule.prefix.text().to_string())
    }

    fn decision(&self) -> Decision {
        if self.remembered && self.rule.decision == Decision::Ask {
            Decision::Allow
        } else {
            self.rule.decision
        }
    }
}

/// `[approval]` with the prefixes a session remembered, ready to judge walks.
pub struct Policy<'a> {
    default: Decision,
    rules: Vec<Rule<'a>>,
    /// Exact prefixes approved "always" when the default asked.
    remembered: Vec<Prefix>,
    /// Functions and aliases a session holds: a command of that name runs a body
    /// the line does not show.
    definitions: &'a [String],
    unattended: Unattended,
    timeout_s: u64,
    /// Rules whose first stage starts with this program (the first word of the
    /// pattern), and the ones that start with `*`.
    by_program: std::collections::HashMap<&'a str, Vec<usize>>,
    any_program: Vec<usize>,
    /// Rules of more than one stage.
    pipelines: Vec<usize>,
    /// The strictest decision a rule (not remembered) could give a command the walk
    /// cannot see: `ask` when there is any `ask`/`deny` rule or the default is not
    /// `allow`, else `allow`.
    unseen: Decision,
}

impl<'a> Policy<'a> {
    /// The policy of `cfg`, with `remembered` (a session's "always" prefixes).
    pub fn new(cfg: &'a ApprovalCfg, remembered: &[String]) -> Self {
        Self::for_session(cfg, remembered, &[])
    }

    /// [`Policy::new`] for a session holding the functions and aliases `definitions`.
    pub fn for_session(
        cfg: &'a ApprovalCfg,
        remembered: &[String],
        definitions: &'a [String],
    ) -> Self {
        let mut by_program: std::collections::HashMap<&str, Vec<usize>> = Default::default();
        let (mut any_program, mut pipelines) = (Vec::new(), Vec::new());
        let rules: Vec<Rule> = cfg
            .rule
            .iter()
            .map(|rule| Rule {
                rule,
                remembered: remembered.iter().any(|r| r == rule.prefix.text()),
            })
            .collect();
        for (i, r) in rules.iter().enumerate() {
            let stages = r.rule.prefix.stages();
            if stages.len() > 1 {
                pipelines.push(i);
                continue;
            }
            match stages.first().and_then(|s| s.first()) {
                Some(Token::Word(w)) => by_program.entry(w.as_str()).or_default().push(i),
                _ => any_program.push(i),
            }
        }
        let strict_rule = rules.iter().any(|r| r.decision() != Decision::Allow);
        let unseen = if strict_rule || cfg.default != Decision::Allow {
            Decision::Ask
        } else {
            Decision::Allow
        };
        Policy {
            default: cfg.default,
            remembered: remembered
                .iter()
                .filter_map(|r| Prefix::parse(r).ok())
                .collect(),
            definitions,
            unattended: cfg.unattended,
            timeout_s: cfg.timeout,
            rules,
            by_program,
            any_program,
            pipelines,
            unseen,
        }
    }

    /// Judge every simple command of `walk`, and what it could not see.
    pub fn judge(&self, walk: &Walk) -> ApprovalPlan {
        let commands = walk
            .commands
            .iter()
            .filter(|c| !c.argv.is_empty())
            .map(|c| Subject {
                argv: &c.argv,
                pipeline: c.pipeline,
                stage: c.stage,
                runner: false,
                bare: c.wrappers.is_empty(),
            });
        let runners = walk.runners.iter().map(|r| Subject {
            argv: &r.argv,
            pipeline: r.pipeline,
            stage: r.stage,
            runner: true,
            bare: false,
        });
        let subjects: Vec<Subject> = commands.chain(runners).collect();
        // Pipeline forms: which rules match each command as a stage of a pipeline.
        let mut staged: Vec<Vec<(usize, Fit)>> = vec![Vec::new(); subjects.len()];
        if !self.pipelines.is_empty() {
            let mut at: std::collections::HashMap<(usize, usize), Vec<usize>> =
                std::collections::HashMap::new();
            for (i, c) in subjects.iter().enumerate() {
                at.entry((c.pipeline, c.stage)).or_default().push(i);
            }
            for &r in &self.pipelines {
                self.match_pipeline(r, &subjects, &at, &mut staged);
            }
        }
        let mut judged: Vec<Judged> = subjects
            .iter()
            .zip(staged)
            .filter_map(|(c, staged)| self.judge_command(c, staged))
            .collect();
        for hidden in &walk.hidden {
            judged.push(self.unseen_command(
                hidden.text.clone(),
                "it runs a script whose text is not known until the line runs",
            ));
        }
        if walk.truncated {
            judged.push(self.unseen_command(
                "…".into(),
                "the line is too large or nested too deep to be read to its end",
            ));
        }
        for part in &walk.unparsed {
            judged.push(self.unseen_command(
                part.text.clone(),
                "it could not be parsed (bash would not run it as written either)",
            ));
        }
        let decision = judged
            .iter()
            .map(|j| j.decision)
            .max()
            .unwrap_or(Decision::Allow);
        ApprovalPlan {
            active: true,
            judged,
            decision,
            unattended: self.unattended,
            timeout_s: self.timeout_s,
        }
    }

    /// A command the walk cannot see into.
    fn unseen_command(&self, command: String, why: &str) -> Judged {
        let rule = (self.unseen != Decision::Allow)
            .then(|| {
                let strictest = self.rules.iter().map(Rule::decision).max()?;
                self.rules
                    .iter()
                    .find(|r| r.decision() == strictest && strictest != Decision::Allow)
                    .map(Rule::name)
            })
            .flatten();
        let note = match (&rule, self.unseen) {
            (_, Decision::Allow) => None,
            (Some(r), _) => Some(format!("{why}; rule `{r}` could match it")),
            (None, _) => Some(format!(
                "{why}; approval.default ({}) could apply to it",
                self.default.as_str()
            )),
        };
        Judged {
            command,
            decision: self.unseen,
            rule,
            note,
            remember: None,
            staged: false,
        }
    }

    /// How `c` is judged; `None` for a runner no rule names.
    fn judge_command(&self, c: &Subject, staged: Vec<(usize, Fit)>) -> Option<Judged> {
        let command = shown(c.argv);
        let Some(first) = c.argv.first().filter(|f| f.known()) else {
            return Some(self.unseen_command(command, "its program is not known until it runs"));
        };
        let name = program_name(&first.text);
        if c.bare && self.definitions.iter().any(|d| d == name) {
            return Some(self.unseen_command(
                command,
                "it is a function or alias the session holds, whose body is not in the line",
            ));
        }
        let mut fits = staged;
        let candidates = self
            .by_program
            .get(name)
            .into_iter()
            .flatten()
            .chain(
                self.by_program
                    .get(first.text.as_str())
                    .into_iter()
                    .flatten(),
            )
            .chain(&self.any_program);
        for &r in candidates {
            let fit = fit_stage(&self.rules[r].rule.prefix.stages()[0], c.argv);
            if fit != Fit::No && !fits.iter().any(|(i, _)| *i == r) {
                fits.push((r, fit));
            }
        }
        // The strictest sure match decides; a rule that could match (a word not known
        // until the command runs) can only make it `ask`, never `allow` or `deny`.
        let sure = fits
            .iter()
            .filter(|(_, f)| *f == Fit::Yes)
            .map(|(r, _)| (self.rules[*r].decision(), *r))
            .max_by_key(|(d, r)| (*d, std::cmp::Reverse(*r)));
        let unsure = fits
            .iter()
            .filter(|(r, f)| *f == Fit::Maybe && self.rules[*r].decision() != Decision::Allow)
            .map(|(r, _)| *r)
            .min();
        // A runner is judged by the rules that name it, never by the default: what it
        // runs is judged itself.
        if c.runner && sure.is_none() && unsure.is_none() {
            return None;
        }
        let remembered_default = self.default == Decision::Ask
            && self
                .remembered
                .iter()
                .any(|p| fit_stage(&p.stages()[0], c.argv) == Fit::Yes);
        let (mut decision, mut rule, mut note) = match sure {
            Some((d, r)) => {
                let note = (self.rules[r].remembered
                    && self.rules[r].rule.decision == Decision::Ask)
                    .then(|| REMEMBERED.to_string());
                (d, Some(r), note)
            }
            None if remembered_default => (Decision::Allow, None, Some(REMEMBERED.to_string())),
            None => (self.default, None, None),
        };
        if let Some(r) = unsure
            && decision < Decision::Ask
        {
            decision = Decision::Ask;
            rule = Some(r);
            note = Some(format!(
                "a word is not known until it runs, and {} could match it",
                self.rules[r].rule.name()
            ));
        }
        let remember = match rule {
            Some(r) => Some(self.rules[r].rule.prefix.text().to_string()),
            None => exact_prefix(c.argv),
        }
        .filter(|_| {
            decision == Decision::Ask && note.as_deref().is_none_or(|n| !n.starts_with("a word"))
        });
        Some(Judged {
            command,
            decision,
            staged: rule.is_some_and(|r| self.rules[r].rule.prefix.stages().len() > 1),
            rule: rule.map(|r| self.rules[r].name()),
            note,
            remember,
        })
    }

    /// Marks the commands rule `r` (a pipeline form) matches: consecutive stages of
    /// one pipeline, each matching its stage of the pattern as a prefix.
    fn match_pipeline(
        &self,
        r: usize,
        commands: &[Subject],
        index: &std::collections::HashMap<(usize, usize), Vec<usize>>,
        staged: &mut [Vec<(usize, Fit)>],
    ) {
        let stages = self.rules[r].rule.prefix.stages();
        let at = |pipeline: usize, stage: usize| {
            index
                .get(&(pipeline, stage))
                .into_iter()
                .flatten()
                .map(|&i| (i, &commands[i]))
        };
        for (start, c) in commands.iter().enumerate() {
            let first = fit_command(&stages[0], c);
            if first == Fit::No {
                continue;
            }
            // Follow the stages; each may be any command of that pipeline stage (a
            // group or subshell holds several).
            let mut chain = vec![(start, first)];
            for (k, pattern) in stages.iter().enumerate().skip(1) {
                let next = at(c.pipeline, c.stage + k)
                    .map(|(i, cmd)| (i, fit_command(pattern, cmd)))
                    .filter(|(_, f)| *f != Fit::No)
                    .max_by_key(|(_, f)| *f);
                match next {
                    Some(hit) => chain.push(hit),
                    None => {
                        chain.clear();
                        break;
                    }
                }
            }
            let fit = chain.iter().map(|(_, f)| *f).min().unwrap_or(Fit::No);
            for (i, _) in chain {
                if !staged[i].iter().any(|(x, _)| *x == r) {
                    staged[i].push((r, fit));
                }
            }
        }
    }
}

/// The words of `argv` as shown.
fn shown(argv: &[Field]) -> String {
    argv.iter().map(Field::shown).collect::<Vec<_>>().join(" ")
}

/// The command's own words as a prefix (what "always" remembers when the default
/// asked): only when every word is known and plain.
fn exact_prefix(argv: &[Field]) -> Option<String> {
    if !argv.iter().all(|f| f.known() && f.glob.is_none()) {
        return None;
    }
    let mut words: Vec<&str> = argv.iter().map(|f| f.text.as_str()).collect();
    if let Some(w) = words.first_mut() {
        *w = program_name(w);
    }
    let text = words.join(" ");
    Prefix::parse(&text)
        .ok()
        .filter(|p| p.stages().len() == 1 && p.stages()[0].len() == words.len())
        .map(|p| p.text().to_string())
}

fn fit_command(pattern: &[Token], c: &Subject) -> Fit {
    match c.argv.first() {
        Some(f) if !f.known() => Fit::Maybe,
        Some(_) => fit_stage(pattern, c.argv),
        None => Fit::No,
    }
}

/// How `pattern` (one stage) fits the first words of `argv`: literal words compare
/// equal (the first against the program's name, `/usr/bin/git` being `git`), `*`
/// takes one word, `**` any number; words after the pattern do not matter.
fn fit_stage(pattern: &[Token], argv: &[Field]) -> Fit {
    // Most commands are not the program a rule names: say so before any work.
    if let (Some(Token::Word(w)), Some(f)) = (pattern.first(), argv.first())
        && f.known()
        && !w.contains('/')
        && program_name(&f.text) != w
    {
        return Fit::No;
    }
    let word_fit = |i: usize, w: &str| -> Fit {
        let f = &argv[i];
        if !f.known() {
            return Fit::Maybe;
        }
        let same = if i == 0 && !w.contains('/') {
            program_name(&f.text) == w
        } else {
            f.text == w
        };
        if same { Fit::Yes } else { Fit::No }
    };
    // `reach[j]`: how surely the pattern so far can end just before word j.
    let mut reach = vec![Fit::No; argv.len() + 1];
    reach[0] = Fit::Yes;
    for token in pattern {
        let mut next = vec![Fit::No; argv.len() + 1];
        match token {
            Token::Any => {
                let mut best = Fit::No;
                for j in 0..=argv.len() {
                    best = best.max(reach[j]);
                    next[j] = best;
                }
            }
            Token::One => next[1..].copy_from_slice(&reach[..argv.len()]),
            Token::Word(w) => {
                for j in 0..argv.len() {
                    if reach[j] != Fit::No {
                        next[j + 1] = reach[j].min(word_fit(j, w));
                    }
                }
            }
        }
        reach = next;
        if reach.iter().all(|f| *f == Fit::No) {
            return Fit::No;
        }
    }
    reach.into_iter().max().unwrap_or(Fit::No)
}

/// The examples of every rule of `cfg` that fail: `match` examples the rule does not
/// match, `not_match` ones it does; each as a sentence naming the rule and example.
pub fn failing_examples(cfg: &ApprovalCfg) -> Vec<String> {
    let env = std::collections::BTreeMap::new();
    let ctx = crate::shell::parse::Context {
        env: &env,
        cwd: None,
    };
    let mut failures = Vec::new();
    for rule in &cfg.rule {
        let alone = ApprovalCfg {
            default: Decision::Allow,
            rule: vec![ApprovalRule {
                decision: Decision::Deny,
                ..rule.clone()
            }],
            ..ApprovalCfg::default()
        };
        let policy = Policy::new(&alone, &[]);
        let matched = |example: &str| {
            let walk = crate::shell::parse::walk(example, &ctx);
            policy
                .judge(&walk)
                .judged
                .iter()
                .any(|j| j.decision == Decision::Deny)
        };
        for example in &rule.matches {
            if !matched(example) {
                failures.push(format!(
                    "approval {}: example {example:?} should match, and does not",
                    rule.name()
                ));
            }
        }
        for example in &rule.not_match {
            if matched(example) {
                failures.push(format!(
                    "approval {}: example {example:?} should not match, and does",
                    rule.name()
                ));
            }
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_toml(toml: &str) -> ApprovalCfg {
        #[derive(serde::Deserialize)]
        struct Wrap {
            approval: ApprovalCfg,
        }
        toml::from_str::<Wrap>(toml).expect("valid").approval
    }

    fn judge(cfg: &ApprovalCfg, remembered: &[&str], line: &str) -> ApprovalPlan {
        let env: std::collections::BTreeMap<String, String> =
            [("HOME".to_string(), "/home/me".to_string())].into();
        let walk = crate::shell::parse::walk(
            line,
            &crate::shell::parse::Context {
                env: &env,
                cwd: None,
            },
        );
        let remembered: Vec<String> = remembered.iter().map(|s| s.to_string()).collect();
        Policy::new(cfg, &remembered).judge(&walk)
    }

    const POLICY: &str = r#"
[approval]
[[approval.rule]]
prefix = "git push"
decision = "ask"
[[approval.rule]]
prefix = "npm run *"
decision = "allow"
[[approval.rule]]
prefix = "curl ** | sh"
decision = "deny"
[[approval.rule]]
id = "force"
prefix = "git push --force"
decision = "deny"
"#;

    /// (line, the line's decision, the deciding rule: `None` for the default)
    #[test]
    fn every_simple_command_is_judged_and_the_strictest_wins() {
        let cfg = policy_toml(POLICY);
        let cases: &[(&str, Decision, Option<&str>)] = &[
            ("git status", Decision::Allow, None),
            ("git push", Decision::Ask, Some("git push")),
            ("git push origin main", Decision::Ask, Some("git push")),
            ("/usr/bin/git push", Decision::Ask, Some("git push")),
            ("cd x && git push", Decision::Ask, Some("git push")),
            ("FOO=1 git push 2>&1", Decision::Ask, Some("git push")),
            ("sudo git push", Decision::Ask, Some("git push")),
            (
                "env A=1 timeout 5 git push",
                Decision::Ask,
                Some("git push"),
            ),
            ("bash -c 'git push'", Decision::Ask, Some("git push")),
            ("(cd sub; git push)", Decision::Ask, Some("git push")),
            ("echo $(git push)", Decision::Ask, Some("git push")),
            ("f() { git push; }; f", Decision::Ask, Some("git push")),
            ("git -C repo push", Decision::Allow, None),
            ("git pushy", Decision::Allow, None),
            ("echo git push", Decision::Allow, None),
            ("git push --force", Decision::Deny, Some("force")),
            (
                "git status; git push --force origin",
                Decision::Deny,
                Some("force"),
            ),
            ("npm run build", Decision::Allow, Some("npm run *")),
            ("npm run", Decision::Allow, None),
            (
                "curl -fsSL https://x | sh",
                Decision::Deny,
                Some("curl ** | sh"),
            ),
            ("curl x | sudo sh -s", Decision::Deny, Some("curl ** | sh")),
            ("curl x | tee f | sh", Decision::Allow, None),
            ("curl x > f; sh f", Decision::Allow, None),
            ("sh | curl x", Decision::Allow, None),
        ];
        for (line, want, rule) in cases {
            let plan = judge(&cfg, &[], line);
            assert_eq!(plan.decision, *want, "{line}: {:?}", plan.judged);
            let first = plan.first().and_then(|j| j.rule.as_deref());
            if *want != Decision::Allow {
                assert_eq!(first, *rule, "{line}: {:?}", plan.judged);
            } else if let Some(rule) = rule {
                assert!(
                    plan.judged.iter().any(|j| j.rule.as_deref() == Some(rule)),
                    "{line}: {:?}",
                    plan.judged
                );
            }
        }
    }

    /// Wrappers and shells the walk looks through are judged by the rules that name
    /// them, never by the default; what they run is judged itself.
    #[test]
    fn runners_are_judged_by_the_rules_that_name_them() {
        let cfg = policy_toml(
            r#"
[approval]
default = "ask"
[[approval.rule]]
prefix = "sudo"
decision = "deny"
[[approval.rule]]
prefix = "printf ** | sh"
decision = "deny"
[[approval.rule]]
prefix = "ls"
decision = "allow"
"#,
        );
        let plan = judge(&cfg, &[], "sudo ls /root");
        assert_eq!(plan.decision, Decision::Deny, "{:?}", plan.judged);
        assert_eq!(plan.first().and_then(|j| j.rule.as_deref()), Some("sudo"));
        // A shell reading a known script: the pipeline form sees the shell, the
        // default sees what it runs.
        let plan = judge(&cfg, &[], "printf 'ls' | sh");
        assert_eq!(plan.decision, Decision::Deny, "{:?}", plan.judged);
        let plan = judge(&cfg, &[], "env A=1 ls");
        assert_eq!(plan.decision, Decision::Allow, "{:?}", plan.judged);
        assert_eq!(plan.judged.len(), 1, "{:?}", plan.judged);
    }

    #[test]
    fn what_the_walk_cannot_see_asks_when_a_rule_could_match() {
        let cfg = policy_toml(POLICY);
        for line in [
            "eval \"$(cat cmd.txt)\"",
            "$(cat prog.txt) push",
            "`cat prog.txt` push",
            "bash -c \"$(cat cmd.txt)\"",
            "su -c \"$(cat cmd.txt)\"",
            "git $(cat sub.txt)",
        ] {
            let plan = judge(&cfg, &[], line);
            assert_eq!(plan.decision, Decision::Ask, "{line}: {:?}", plan.judged);
            let j = plan.first().expect("an ask");
            assert!(j.note.is_some() && j.remember.is_none(), "{line}: {j:?}");
        }
        // Static text inside `$(…)` and `eval` is read like the line.
        assert_eq!(
            judge(&cfg, &[], "eval 'git status'").decision,
            Decision::Allow
        );
        assert_eq!(judge(&cfg, &[], "echo $(date)").decision, Decision::Allow);
        // With only allow rules and an allow default, nothing unseen can be refused.
        let lenient =
            policy_toml("[approval]\n[[approval.rule]]\nprefix = \"ls\"\ndecision = \"allow\"\n");
        assert_eq!(
            judge(&lenient, &[], "eval \"$(cat cmd.txt)\"").decision,
            Decision::Allow
        );
    }

    #[test]
    fn a_remembered_prefix_allows_its_rule_and_nothing_wider() {
        let cfg = policy_toml(POLICY);
        let plan = judge(&cfg, &["git push"], "git push origin");
        assert_eq!(plan.decision, Decision::Allow, "{:?}", plan.judged);
        assert_eq!(
            plan.judged[0].note.as_deref(),
            Some("approved for this session")
        );
        // The deny rule is not softened by it.
        assert_eq!(
            judge(&cfg, &["git push"], "git push --force").decision,
            Decision::Deny
        );
        // The default's exact command.
        let asking = policy_toml("[approval]\ndefault = \"ask\"\n");
        let plan = judge(&asking, &[], "make test");
        assert_eq!(
            plan.first().and_then(|j| j.remember.as_deref()),
            Some("make test")
        );
        assert_eq!(
            judge(&asking, &["make test"], "make test -j2").decision,
            Decision::Allow
        );
        assert_eq!(
            judge(&asking, &["make test"], "make install").decision,
            Decision::Ask
        );
    }

    #[test]
    fn patterns_take_one_or_any_words() {
        let f = |p: &str, line: &str| {
            let prefix = Prefix::parse(p).expect("valid");
            let argv: Vec<Field> = line.split(' ').map(Field::literal).collect();
            fit_stage(&prefix.stages()[0], &argv)
        };
        assert_eq!(f("git ** push", "git -C repo push"), Fit::Yes);
        assert_eq!(f("git ** push", "git push"), Fit::Yes);
        assert_eq!(f("git ** push", "git pull"), Fit::No);
        assert_eq!(f("docker run * *", "docker run a"), Fit::No);
        assert_eq!(f("docker run * *", "docker run a b c"), Fit::Yes);
        assert_eq!(f("npm **", "npm"), Fit::Yes);
    }

    #[test]
    fn examples_are_checked() {
        let cfg = policy_toml(
            r#"
[approval]
[[approval.rule]]
prefix = "git push"
decision = "ask"
match = ["git push", "cd x && git push origin"]
not_match = ["git -C x push", "git push"]
"#,
        );
        let failures = failing_examples(&cfg);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].contains("\"git push\" should not match"),
            "{failures:?}"
        );
    }
}
