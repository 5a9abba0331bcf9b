//! The guard: refuses commands that would destroy a protected path, a disk or the
//! machine, whatever tools the caller declared (docs/guard.md).
//!
//! The interceptor is routing advice that a caller opts into by declaring tools; the
//! guard is not optional for the caller. It reads the command with the one shell
//! parser (`shell::parse`): every simple command the line would run — in lists,
//! pipelines, subshells, `bash -c` strings, function bodies, loops over literal words,
//! traps, substitutions — with its words resolved in the environment the command will
//! get and its wrappers removed, then judges each destructive program's targets
//! against `guard.protected`, and matches the packs' `deny` rules against each
//! command's canonical line.
//!
//! What it cannot read it does not wave through: a part bash would not parse, or a
//! command too large to follow, is refused when it names a destructive program. A
//! target it cannot resolve before the command runs (`rm -rf "$(pwd)"`, a path read
//! from a file) is not judged; the kernel sandbox confines what gets past.

mod programs;
mod targets;

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::shell::parse::{self, Field, SimpleCommand, Walk};
use targets::{Protected, Reach};

/// What the guard knows about the run before it starts.
pub struct Context<'a> {
    /// The environment the command will get.
    pub env: &'a BTreeMap<String, String>,
    /// Where it will start.
    pub cwd: &'a Path,
    /// `guard.protected`, as written (`/`, `~`, `~/.ssh`, absolute paths).
    pub protected: &'a [String],
}

/// One target of a destructive program, as resolved.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Target {
    /// The word, expanded (`…` where a part is unknown).
    pub word: String,
    /// What it resolves to (`null` when it cannot be known before the command runs).
    pub resolved: Option<String>,
    /// The protected path it would destroy, if any.
    pub protected: Option<String>,
}

/// One destructive program the guard looked at.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Checked {
    /// Which check: `delete`, `permissions`, `move`, `device`, `sysrq`, `kill-all`,
    /// `fork-bomb`, `unparsed`, `too-complex`.
    pub check: &'static str,
    /// The program and its arguments after expansion.
    pub command: String,
    pub targets: Vec<Target>,
}

/// The guard's refusal.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Refusal {
    /// `guard:<check>` for a structural check, the rule id for a `deny` rule.
    pub rule: String,
    /// Why, in one sentence.
    pub reason: String,
    /// The protected paths or devices involved.
    pub targets: Vec<String>,
}

/// Everything the structural check decided (what `explain` shows).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Verdict {
    pub refused: Option<Refusal>,
    pub checked: Vec<Checked>,
}

/// The text shown for a refused command (exit 77, nothing run).
pub fn refused_message(reason: &str, original: &str) -> String {
    let reason = reason.trim_end_matches('.');
    format!(
        "Refused: {reason}. agentbash's guard refuses this whatever tools the caller declared; nothing was run.\n\nOriginal command: {original}"
    )
}

/// The walk of `command` the guard judges: from its start directory, in its
/// environment.
/// [`walk`] after a session's saved definitions (see [`parse::walk_after`]).
pub fn walk_after(prelude: &str, command: &str, ctx: &Context<'_>) -> Walk {
    parse::walk_after(
        prelude,
        command,
        &parse::Context {
            env: ctx.env,
            cwd: Some(ctx.cwd),
        },
    )
}

pub fn walk(command: &str, ctx: &Context<'_>) -> Walk {
    parse::walk(
        command,
        &parse::Context {
            env: ctx.env,
            cwd: Some(ctx.cwd),
        },
    )
}

/// Checks `command` structurally against `ctx.protected`.
pub fn check(command: &str, ctx: &Context<'_>) -> Verdict {
    check_walk(&walk(command, ctx), ctx)
}

/// `guard.protected` as paths, each paired with its entry as written: `~` expanded
/// with `home` (an entry under `~` is dropped when there is no home), `.`, `..` and
/// `//` folded, and an entry's real path listed too when a symbolic link leads to it
/// (a protected /home/me that is a link to /data/me is protected under both names).
/// Shared by the guard and the file tools (docs/guard.md).
pub fn protected_paths(entries: &[String], home: Option<&str>) -> Vec<(String, PathBuf)> {
    targets::protected_paths(entries, home.filter(|h| !h.is_empty()))
        .into_iter()
        .map(|p| (p.entry, p.path))
        .collect()
}

/// Judges a walk already made (see [`walk`]).
pub fn check_walk(walk: &Walk, ctx: &Context<'_>) -> Verdict {
    let mut judge = Judge {
        ctx_protected: ctx.protected,
        home: ctx.env.get("HOME").filter(|h| !h.is_empty()).cloned(),
        protected: std::cell::OnceCell::new(),
        verdict: Verdict::default(),
    };
    for name in &walk.fork_bombs {
        judge.refuse(
            "fork-bomb",
            name.clone(),
            format!("function `{name}` starts copies of itself without end (a fork bomb)"),
            name.clone(),
        );
    }
    for cmd in &walk.commands {
        judge.command(cmd);
    }
    for part in &walk.unparsed {
        if let Some(program) = destructive_word(&part.text) {
            judge.refuse(
                "unparsed",
                part.text.clone(),
                format!(
                    "the command could not be parsed ({}) and it runs `{program}`, which the guard must be able to read to judge; fix the quoting or the syntax (bash would not run it as written either) and run it again",
                    part.error
                ),
                program,
            );
        }
    }
    // Past the limits the guard cannot read: a destructive program among what it
    // walked, or named anywhere in a string nested too deep to follow, refuses.
    let unread = || walk.too_deep.iter().find_map(|text| destructive_word(text));
    if walk.truncated
        && let Some(program) = walk
            .commands
            .iter()
            .filter_map(SimpleCommand::name)
            .find(|n| programs::is_destructive(n))
            .map(str::to_string)
            .or_else(unread)
    {
        judge.refuse(
            "too-complex",
            program.to_string(),
            format!(
                "the command is too large for the guard to follow to its end (over {} commands, or nested more than {} levels) and it runs `{program}`; split it into smaller commands",
                parse::walk::MAX_COMMANDS,
                parse::walk::MAX_SCRIPT_DEPTH
            ),
            program.to_string(),
        );
    }
    judge.verdict
}

/// A program a conservative word scan of unparsed text finds: the first word (quotes
/// and backslashes dropped, path reduced to its name) that names a destructive program.
fn destructive_word(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || ";|&()<>`".contains(c))
        .map(|w| {
            w.chars()
                .filter(|c| !matches!(c, '\'' | '"' | '\\' | '{' | '}' | '$'))
                .collect::<String>()
        })
        .find_map(|w| {
            let name = w.rsplit('/').next().unwrap_or(&w);
            (programs::is_destructive(name) || name == "sysrq-trigger").then(|| name.to_string())
        })
}

struct Judge<'a> {
    ctx_protected: &'a [String],
    home: Option<String>,
    /// `guard.protected` resolved, on first need (most commands destroy nothing, and
    /// resolving costs a `realpath` per entry).
    protected: std::cell::OnceCell<Vec<Protected>>,
    verdict: Verdict,
}

fn shown_argv(argv: &[Field]) -> String {
    argv.iter().map(Field::shown).collect::<Vec<_>>().join(" ")
}

impl Judge<'_> {
    fn protected(&self) -> &[Protected] {
        self.protected
            .get_or_init(|| targets::protected_paths(self.ctx_protected, self.home.as_deref()))
    }

    fn command(&mut self, cmd: &SimpleCommand) {
        programs::redirections(self, cmd);
        let Some(name) = cmd.name() else { return };
        programs::program(self, name, cmd);
    }

    /// Judges `field` as a target of `cmd` reached by `reach`.
    fn judge(
        &self,
        field: &Field,
        cmd: &SimpleCommand,
        reach: Reach,
    ) -> (Target, Option<targets::Hit>) {
        let resolved = targets::resolve(field, cmd);
        let hit = targets::hit(&resolved, reach, self.protected());
        let target = Target {
            word: field.shown(),
            resolved: match &resolved {
                targets::Resolved::Path(p) => Some(p.display().to_string()),
                targets::Resolved::Glob(c) => Some(format!("/{}", c.join("/"))),
                targets::Resolved::Unknown => None,
            },
            protected: hit.as_ref().map(|h| h.description.clone()),
        };
        (target, hit)
    }

    fn record(&mut self, check: &'static str, argv: &[Field], targets: Vec<Target>, verb: &str) {
        let command = shown_argv(argv);
        if self.verdict.refused.is_none()
            && let Some(t) = targets.iter().find(|t| t.protected.is_some())
        {
            let program = argv.first().map_or(String::new(), |f| f.text.clone());
            self.verdict.refused = Some(Refusal {
                rule: format!("guard:{check}"),
                reason: format!(
                    "`{}` would {verb} {}",
                    parse::program_name(&program),
                    t.protected.clone().unwrap_or_default()
                ),
                targets: targets.iter().filter_map(|t| t.protected.clone()).collect(),
            });
        }
        self.verdict.checked.push(Checked {
            check,
            command,
            targets,
        });
    }

    fn refuse(&mut self, check: &'static str, command: String, reason: String, target: String) {
        self.verdict.checked.push(Checked {
            check,
            command,
            targets: vec![Target {
                word: target.clone(),
                resolved: Some(target.clone()),
                protected: Some(target.clone()),
            }],
        });
        if self.verdict.refused.is_none() {
            self.verdict.refused = Some(Refusal {
                rule: format!("guard:{check}"),
                reason,
                targets: vec![target],
            });
        }
    }
}

/// What the guard is given for its `deny` packs: `None` when no rule of theirs could
/// match the command's canonical lines (so they were not compiled), else the packs or
/// why they could not be loaded.
pub type PackLoad = Option<
    Result<std::sync::Arc<crate::config::rules::RuleSet>, crate::config::profile::PackError>,
>;

/// The guard stage of a run: the structural verdict plus the `deny` rules of
/// `guard.rules`, decided before anything runs.
#[derive(Debug, Clone, Serialize)]
pub struct GuardPlan {
    pub enabled: bool,
    /// The first refusal, structural or by a `deny` rule.
    pub refused: Option<Refusal>,
    /// The destructive programs looked at, with their resolved targets.
    pub checked: Vec<Checked>,
    /// The pack of the `deny` rule that refused, when one did.
    pub pack: Option<String>,
    /// A guard pack that could not be loaded: nothing may run (exit 125).
    pub error: Option<String>,
}

impl GuardPlan {
    /// The guard of a profile with `guard.enabled = false`.
    pub fn off() -> Self {
        GuardPlan {
            enabled: false,
            refused: None,
            checked: vec![],
            pack: None,
            error: None,
        }
    }

    /// Judges `command`: the structural check first, then the guard packs' `deny`
    /// rules against each command's canonical line. `rules` is asked for the packs
    /// with the text the rules would see (every canonical line): it answers `None`
    /// when no rule of theirs could match it, so they need not be compiled.
    pub fn decide(command: &str, ctx: &Context<'_>, rules: impl FnOnce(&str) -> PackLoad) -> Self {
        Self::decide_walk(&walk(command, ctx), ctx, rules)
    }

    /// [`GuardPlan::decide`] on a walk already made (see [`walk`]).
    pub fn decide_walk(
        walk: &Walk,
        ctx: &Context<'_>,
        rules: impl FnOnce(&str) -> PackLoad,
    ) -> Self {
        let verdict = check_walk(walk, ctx);
        let mut plan = GuardPlan {
            enabled: true,
            refused: verdict.refused,
            checked: verdict.checked,
            pack: None,
            error: None,
        };
        let lines = crate::pipeline::intercept::deny_lines(walk);
        match rules(&lines.join("\n")) {
            None => {}
            Some(Err(e)) => plan.error = Some(e.to_string()),
            Some(Ok(set)) if plan.refused.is_none() => {
                if let Some(hit) = crate::pipeline::intercept::deny(&lines, &set) {
                    plan.refused = Some(Refusal {
                        rule: hit.rule,
                        reason: hit.message,
                        targets: vec![],
                    });
                    plan.pack = Some(hit.pack);
                }
            }
            Some(Ok(_)) => {}
        }
        plan
    }

    /// One line per decision, for `explain` and `rules test`.
    pub fn describe(&self) -> Vec<String> {
        if !self.enabled {
            return vec!["off (guard.enabled = false in the profile)".into()];
        }
        let mut v = vec![match (&self.error, &self.refused) {
            (Some(e), _) => format!("ERROR, nothing may run: {e}"),
            (None, Some(r)) if self.pack.is_some() => format!(
                "REFUSED by rule `{}` (pack {}): {}",
                r.rule,
                self.pack.as_deref().unwrap_or_default(),
                r.reason
            ),
            (None, Some(r)) => format!("REFUSED ({}): {}", r.rule, r.reason),
            (None, None) => "passes".into(),
        }];
        for c in &self.checked {
            v.push(format!("  {} `{}`", c.check, c.command));
            for t in &c.targets {
                v.push(format!(
                    "    {} -> {}{}",
                    t.word,
                    t.resolved
                        .as_deref()
                        .unwrap_or("(unknown until it runs: not judged)"),
                    t.protected
                        .as_ref()
                        .map(|p| format!("  PROTECTED: {p}"))
                        .unwrap_or_default()
                ));
            }
        }
        v
    }
}
