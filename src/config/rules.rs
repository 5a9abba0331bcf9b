//! Rule packs (docs/RULES.md): TOML files of `[[rule]]` tables that tell the interceptor which
//! commands a caller should run through one of its own tools instead.
//!
//! Packs are parsed strictly, because a typo in a rule pack silently disables protection:
//! unknown keys, wrong types and duplicate ids are errors naming file:line:col (with a
//! suggestion for a misspelled key). A rule whose regex does not parse is the one
//! exception: at run time it is skipped with a warning (never silently) so that one bad
//! rule in a user pack does not stop every command, while `rules check` fails on it.
//!
//! Patterns use the `regex` crate's syntax, which matches in linear time, so no pattern
//! can make the interceptor hang on a hostile command. Loading a pack only parses its
//! patterns (to report a bad one with its line); nothing is compiled until a command
//! needs it. From each pattern's syntax tree the loader derives literals one of which
//! every match must contain (`cat`, `tool12`, `--watch`…); one Aho-Corasick pass over a
//! candidate finds the rules whose literals occur, and only those rules' regexes are
//! compiled (once, on first use) and run. Rules with no such literal share one
//! `RegexSet`, built the first time a candidate is checked.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use regex_syntax::hir::Hir;
use serde::{Deserialize, Serialize};
use toml::Spanned;

mod literals;

use literals::required_literals;

/// The shipped pack, embedded so the binary needs no data files.
const DEFAULT_PACK: &str = include_str!("../../rules/default.toml");
/// The guard's `deny` pack, checked on every run (profile key `guard.rules`).
const GUARD_PACK: &str = include_str!("../../rules/guard.toml");
/// The `keywords` of each rule of the built-in guard pack, as its text says (a test
/// holds them equal): [`might_match`] answers for it on every run, and parsing the
/// pack for them cost about as much as the rest of the plan.
const GUARD_KEYWORDS: &[&[&str]] = &[
    &["shutdown", "reboot", "poweroff", "halt", "init", "kexec"],
    &["sysrq"],
    &["kill"],
    &["crontab"],
];

/// Names of the built-in packs, usable in `interceptor.rules` without a path.
pub const BUILTIN_PACKS: &[&str] = &["default", "guard"];

/// Compiled-size ceiling per pattern and for the combined set. The defaults of the
/// `regex` crate are tuned for one pattern; a few hundred rules need more room.
const REGEX_SIZE_LIMIT: usize = 64 * 1024 * 1024;

/// What happens when a rule applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Refuse to run the command (exit 77).
    #[default]
    Block,
    /// Run the command and add the rule's message as a notice.
    Warn,
    /// Refuse to run the command (exit 77) whatever tools the caller declared.
    Deny,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Block => "block",
            Action::Warn => "warn",
            Action::Deny => "deny",
        })
    }
}

/// A 1-based position in a pack file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// One compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub pattern: String,
    /// Optional exclusion: when this regex also matches, the rule does not (the `regex`
    /// crate has no look-around, and "find with -name but without -exec" needs it).
    pub unless: Option<String>,
    pub tool: String,
    pub message: String,
    pub action: Action,
    pub examples_match: Vec<String>,
    pub examples_not_match: Vec<String>,
    /// When set, the rule can only match a candidate containing one of these words,
    /// and a pack whose every rule has keywords is not compiled for a command that
    /// contains none of them (see [`might_match`]).
    pub keywords: Vec<String>,
    /// The rule is about commands that never exit on their own (servers, watchers,
    /// follow modes); it does not apply to a command a `timeout` wrapper bounds.
    pub long_running: bool,
    /// The pack it came from: a built-in name such as `default`, or the pack's path.
    pub pack: String,
    /// Literals one of which every match of `pattern` contains; empty when none could
    /// be derived (then the rule is checked on every candidate).
    needles: Vec<Vec<u8>>,
    /// `pattern` and `unless`, compiled on first use; `None` inside when the pattern
    /// parsed but did not compile (over the size limit), and then the rule never
    /// matches (`rules check` reports it).
    regex: OnceLock<Option<Regex>>,
    unless_regex: OnceLock<Option<Regex>>,
    location: Location,
}

impl Rule {
    /// The compiled `pattern` (compiled now if it was not yet); `None` when it does not
    /// compile.
    pub fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| compile(&self.pattern).ok())
            .as_ref()
    }

    fn unless_matches(&self, text: &str) -> bool {
        self.unless.as_ref().is_some_and(|unless| {
            self.unless_regex
                .get_or_init(|| compile(unless).ok())
                .as_ref()
                .is_some_and(|u| u.is_match(text))
        })
    }

    /// The compile errors of `pattern` and `unless`, by field, for `rules check`: a
    /// pattern that parses can still exceed the compiled-size limit.
    pub(crate) fn compile_errors(&self) -> Vec<(&'static str, String)> {
        let mut errors = Vec::new();
        if let Err(e) = compile(&self.pattern) {
            errors.push(("pattern", e));
        }
        if let Some(unless) = &self.unless
            && let Err(e) = compile(unless)
        {
            errors.push(("unless", e));
        }
        errors
    }

    /// Where the rule's `id` is written in its pack.
    pub fn location(&self) -> Location {
        self.location
    }

    /// Whether this rule matches `text` on its own (pattern matches, `unless` does not).
    pub fn is_match(&self, text: &str) -> bool {
        self.regex().is_some_and(|r| r.is_match(text)) && !self.unless_matches(text)
    }
}

/// Errors that make a rule pack unusable; each names the pack and, where it can, the
/// line and column to fix.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("cannot read rule pack {path}: {source}")]
    Read {
        path: PathBuf,
        source: crate::fsguard::ReadError,
    },
    #[error(
        "{file}:{line}:{column}: {message}{}",
        .suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
    )]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
        suggestion: Option<String>,
    },
    #[error("unknown rule pack `{name}`: built-in packs are {}; give a custom pack as a path (containing `/` or ending in `.toml`)", BUILTIN_PACKS.join(", "))]
    UnknownPack { name: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPack {
    /// Free text for people reading the pack; not used by the program.
    #[serde(default, rename = "description")]
    _description: Option<String>,
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: Spanned<String>,
    pattern: Spanned<String>,
    #[serde(default)]
    unless: Option<Spanned<String>>,
    /// Required for `block` and `warn`; a `deny` rule needs none.
    #[serde(default)]
    tool: Option<Spanned<String>>,
    message: Spanned<String>,
    #[serde(default)]
    action: Action,
    #[serde(default)]
    examples: RawExamples,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    long_running: bool,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExamples {
    #[serde(default, rename = "match")]
    matches: Vec<String>,
    #[serde(default)]
    not_match: Vec<String>,
}

/// A rule whose `pattern` or `unless` does not parse.
#[derive(Debug, Clone)]
pub(crate) struct InvalidRule {
    pub(crate) id: String,
    pub(crate) field: &'static str,
    pub(crate) location: Location,
    pub(crate) error: String,
}

/// A parsed pack: the rules and the ones skipped for a bad regex.
pub(crate) struct ParsedPack {
    pub(crate) rules: Vec<Rule>,
    pub(crate) invalid: Vec<InvalidRule>,
}

/// The rules in force for a run: every pack named by the profile, in order, with the
/// literal prefilter that picks which rules a candidate can match.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
    /// Every rule's needles in one automaton; `needle_rule[pattern id]` is its rule.
    needles: Option<AhoCorasick>,
    needle_rule: Vec<usize>,
    /// Rules without needles, checked on every candidate.
    unfiltered: Vec<usize>,
    /// Their patterns in one set, built on first use; `None` inside when they do not
    /// fit one matcher (then each is run on its own).
    unfiltered_set: OnceLock<Option<RegexSet>>,
    warnings: Vec<String>,
    packs: Vec<String>,
}

/// Whether packs hold `deny` rules: those apply even for a caller with no tools, so
/// the packs must then be compiled and checked on every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denies {
    None,
    Some,
}

impl RuleSet {
    /// Loads the packs named by `specs`, in order. A spec is a built-in pack name
    /// (`default`) or a path, relative to `base_dir` (the directory of the profile that
    /// named it) when given, else to the current directory. A spec listed twice is loaded
    /// once.
    pub fn load(specs: &[String], base_dir: Option<&Path>) -> Result<RuleSet, RulesError> {
        let mut rules = Vec::new();
        let mut warnings = Vec::new();
        let mut packs: Vec<String> = Vec::new();
        for spec in specs {
            let (name, text) = read_pack(spec, base_dir)?;
            if packs.contains(&name) {
                continue;
            }
            let parsed = parse_pack(&name, &text)?;
            warnings.extend(parsed.invalid.iter().map(|bad| skipped_warning(&name, bad)));
            rules.extend(parsed.rules);
            packs.push(name);
        }
        Ok(Self::assemble(rules, warnings, packs))
    }

    /// Whether the packs named by `specs` load, without compiling their patterns:
    /// every error [`RuleSet::load`] gives for a missing file, bad TOML, an unknown
    /// key, an empty field or a duplicate id, at the cost of reading and parsing
    /// the files (a fraction of a millisecond, against milliseconds to compile).
    /// Built-in packs are checked by name only; the test suite loads them. Says
    /// whether any rule is a `deny` rule.
    pub fn check_loadable(specs: &[String], base_dir: Option<&Path>) -> Result<Denies, RulesError> {
        let mut denies = Denies::None;
        for spec in specs {
            if !is_path_spec(spec) && BUILTIN_PACKS.contains(&spec.as_str()) {
                // The built-in `guard` pack is all `deny` rules; `default` has none.
                if spec == "guard" {
                    denies = Denies::Some;
                }
                continue;
            }
            let (name, text) = read_pack(spec, base_dir)?;
            let raw = parse_raw(&name, &text)?;
            check_fields(&name, &text, &raw)?;
            if raw.rule.iter().any(|r| r.action == Action::Deny) {
                denies = Denies::Some;
            }
        }
        Ok(denies)
    }

    /// Whether any rule of the set is a `deny` rule (which applies whatever the
    /// caller's tools).
    pub fn has_deny_rules(&self) -> bool {
        self.rules.iter().any(|r| r.action == Action::Deny)
    }

    /// Builds a set from one pack's TOML text; `pack` names it in messages.
    pub fn from_toml(pack: &str, text: &str) -> Result<RuleSet, RulesError> {
        let parsed = parse_pack(pack, text)?;
        let warnings = parsed
            .invalid
            .iter()
            .map(|bad| skipped_warning(pack, bad))
            .collect();
        Ok(Self::assemble(
            parsed.rules,
            warnings,
            vec![pack.to_string()],
        ))
    }

    pub(crate) fn assemble(rules: Vec<Rule>, warnings: Vec<String>, packs: Vec<String>) -> RuleSet {
        let mut needles: Vec<&[u8]> = Vec::new();
        let mut needle_rule = Vec::new();
        let mut unfiltered = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if rule.needles.is_empty() {
                unfiltered.push(index);
            }
            for needle in &rule.needles {
                needles.push(needle);
                needle_rule.push(index);
            }
        }
        // Overlapping search reports every needle that occurs, so no rule is missed
        // because another rule's needle overlaps its own.
        let automaton = if needles.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(&needles)
                .ok()
        };
        if automaton.is_none() {
            // No needles, or too many for one automaton: every rule is checked.
            unfiltered = (0..rules.len()).collect();
            needle_rule.clear();
        }
        RuleSet {
            rules,
            needles: automaton,
            needle_rule,
            unfiltered,
            unfiltered_set: OnceLock::new(),
            warnings,
            packs,
        }
    }

    /// The compiled rules, in pack order (rules skipped for a bad regex are absent).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// One message per skipped rule, naming the pack, the rule id and the regex error.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The packs loaded, as named in [`Rule::pack`].
    pub fn packs(&self) -> &[String] {
        &self.packs
    }

    /// Indices (into [`RuleSet::rules`], ascending = pack order) of the rules matching
    /// `text`. One Aho-Corasick pass picks the rules whose needles occur and only their
    /// regexes run; rules without needles go through one `RegexSet` pass. `unless`
    /// exclusions are then checked only for the rules that matched.
    pub fn matching(&self, text: &str) -> Vec<usize> {
        // (rule, whether its pattern is already known to match)
        let mut picked: Vec<(usize, bool)> = Vec::new();
        if let Some(automaton) = &self.needles {
            picked.extend(
                automaton
                    .find_overlapping_iter(text)
                    .filter_map(|m| self.needle_rule.get(m.pattern().as_usize()))
                    .map(|&rule| (rule, false)),
            );
        }
        if !self.unfiltered.is_empty() {
            match self.unfiltered_set() {
                Some(set) => picked.extend(
                    set.matches(text)
                        .into_iter()
                        .filter_map(|i| self.unfiltered.get(i))
                        .map(|&rule| (rule, true)),
                ),
                None => picked.extend(self.unfiltered.iter().map(|&rule| (rule, false))),
            }
        }
        picked.sort_unstable();
        picked.dedup_by_key(|(rule, _)| *rule);
        picked
            .into_iter()
            .filter(|&(i, known)| {
                self.rules.get(i).is_some_and(|r| {
                    has_keyword(&r.keywords, text)
                        && (known || r.regex().is_some_and(|re| re.is_match(text)))
                        && !r.unless_matches(text)
                })
            })
            .map(|(i, _)| i)
            .collect()
    }

    fn unfiltered_set(&self) -> Option<&RegexSet> {
        self.unfiltered_set
            .get_or_init(|| {
                // The lazy DFA's cache must hold the states of many rules at once; with
                // the default cache a few hundred patterns keep clearing it.
                RegexSetBuilder::new(
                    self.unfiltered
                        .iter()
                        .filter_map(|&i| self.rules.get(i))
                        .map(|r| r.pattern.as_str()),
                )
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_SIZE_LIMIT)
                .build()
                .ok()
            })
            .as_ref()
    }
}

/// True when `keywords` is empty or `text` contains one of them.
pub(crate) fn has_keyword(keywords: &[String], text: &str) -> bool {
    keywords.is_empty() || keywords.iter().any(|k| text.contains(k.as_str()))
}

/// Whether any rule of the packs `specs` could match `text`, judged from the rules'
/// `keywords` without compiling a pattern: false only when every rule has keywords
/// and `text` contains none. A pack that cannot be read or parsed answers true, so
/// that loading it reports the error.
pub fn might_match(specs: &[String], base_dir: Option<&Path>, text: &str) -> bool {
    #[derive(Deserialize)]
    struct Keyworded {
        #[serde(default)]
        rule: Vec<KeywordedRule>,
    }
    #[derive(Deserialize)]
    struct KeywordedRule {
        #[serde(default)]
        keywords: Vec<String>,
    }
    specs.iter().any(|spec| {
        if spec == "guard" {
            return GUARD_KEYWORDS
                .iter()
                .any(|k| k.is_empty() || k.iter().any(|k| text.contains(k)));
        }
        let Ok((_, pack)) = read_pack(spec, base_dir) else {
            return true;
        };
        match toml::from_str::<Keyworded>(&pack) {
            Ok(k) => k
                .rule
                .iter()
                .any(|r| r.keywords.is_empty() || has_keyword(&r.keywords, text)),
            Err(_) => true,
        }
    })
}

fn skipped_warning(pack: &str, bad: &InvalidRule) -> String {
    format!(
        "rule pack {pack}: rule `{}` (line {}) skipped: invalid regex in `{}`: {}",
        bad.id,
        bad.location.line,
        bad.field,
        one_line(&bad.error)
    )
}

/// `regex` errors are multi-line with a caret diagram; a warning needs one line.
fn one_line(error: &str) -> String {
    let reason = error
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error:").map(str::trim));
    match reason {
        Some(reason) => reason.to_string(),
        None => error.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// Whether a spec names a file rather than a built-in pack (same rule as profiles).
fn is_path_spec(spec: &str) -> bool {
    spec.contains('/') || spec.ends_with(".toml")
}

/// Returns the pack's display name and its text.
pub(crate) fn read_pack(
    spec: &str,
    base_dir: Option<&Path>,
) -> Result<(String, String), RulesError> {
    if !is_path_spec(spec) {
        return match spec {
            "default" => Ok(("default".to_string(), DEFAULT_PACK.to_string())),
            "guard" => Ok(("guard".to_string(), GUARD_PACK.to_string())),
            _ => Err(RulesError::UnknownPack {
                name: spec.to_string(),
            }),
        };
    }
    let path = match base_dir {
        Some(base) if Path::new(spec).is_relative() => base.join(spec),
        _ => PathBuf::from(spec),
    };
    let text = crate::fsguard::read_text(
        &path,
        crate::fsguard::CONFIG_CAP,
        crate::fsguard::Links::Follow,
    )
    .map_err(|source| RulesError::Read {
        path: path.clone(),
        source,
    })?;
    Ok((path.display().to_string(), text))
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn location(text: &str, offset: usize) -> Location {
    Lines::new(text).location(offset)
}

/// Where a pack's lines start, so that placing each of its rules is a binary search
/// instead of a scan from the top (the built-in pack is ~25 KB and has ~30 rules).
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|p| p + 1))
            .collect();
        Lines { text, starts }
    }

    fn location(&self, offset: usize) -> Location {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset).max(1);
        let line_start = self.starts.get(line - 1).copied().unwrap_or(0);
        Location {
            line,
            column: self.text[line_start..offset].chars().count() + 1,
        }
    }
}

/// Parses `pattern` as the `regex` crate would (same defaults: Unicode, UTF-8 only),
/// without compiling it: a syntax error is reported here, at load, with its line.
fn parse_regex(pattern: &str) -> Result<Hir, String> {
    regex_syntax::Parser::new()
        .parse(pattern)
        .map_err(|e| e.to_string())
}

fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

fn parse_raw(name: &str, text: &str) -> Result<RawPack, RulesError> {
    toml::from_str(text).map_err(|e| {
        let at = location(text, e.span().map_or(0, |s| s.start));
        let message = e.message().trim().to_string();
        RulesError::Invalid {
            file: name.to_string(),
            line: at.line,
            column: at.column,
            suggestion: suggest_from_serde(&message),
            message,
        }
    })
}

/// The checks on a parsed pack that do not need its patterns compiled: required
/// fields are not empty, ids are unique.
fn check_fields(name: &str, text: &str, raw: &RawPack) -> Result<(), RulesError> {
    let invalid_at = |span: std::ops::Range<usize>, message: String| {
        let at = location(text, span.start);
        RulesError::Invalid {
            file: name.to_string(),
            line: at.line,
            column: at.column,
            message,
            suggestion: None,
        }
    };

    let lines = Lines::new(text);
    let mut seen: Vec<(String, Location)> = Vec::new();
    for raw_rule in &raw.rule {
        let id = raw_rule.id.get_ref().trim().to_string();
        let at = lines.location(raw_rule.id.span().start);
        for (key, value) in [
            ("id", &raw_rule.id),
            ("pattern", &raw_rule.pattern),
            ("message", &raw_rule.message),
        ]
        .into_iter()
        .chain(raw_rule.tool.as_ref().map(|t| ("tool", t)))
        {
            if value.get_ref().trim().is_empty() {
                return Err(invalid_at(
                    value.span(),
                    format!("rule `{id}`: `{key}` must not be empty"),
                ));
            }
        }
        if raw_rule.tool.is_none() && raw_rule.action != Action::Deny {
            return Err(invalid_at(
                raw_rule.id.span(),
                format!(
                    "rule `{id}`: missing `tool` (the tool the caller should use instead); only an `action = \"deny\"` rule may omit it"
                ),
            ));
        }
        if let Some((_, first)) = seen.iter().find(|(seen_id, _)| *seen_id == id) {
            return Err(invalid_at(
                raw_rule.id.span(),
                format!(
                    "duplicate rule id `{id}` (first defined at line {})",
                    first.line
                ),
            ));
        }
        seen.push((id, at));
    }
    Ok(())
}

pub(crate) fn parse_pack(name: &str, text: &str) -> Result<ParsedPack, RulesError> {
    let raw = parse_raw(name, text)?;
    check_fields(name, text, &raw)?;
    let lines = Lines::new(text);
    let mut rules = Vec::new();
    let mut invalid = Vec::new();
    for raw_rule in raw.rule {
        let id = raw_rule.id.get_ref().trim().to_string();
        let at = lines.location(raw_rule.id.span().start);
        let hir = match parse_regex(raw_rule.pattern.get_ref()) {
            Ok(hir) => hir,
            Err(error) => {
                invalid.push(InvalidRule {
                    id,
                    field: "pattern",
                    location: lines.location(raw_rule.pattern.span().start),
                    error,
                });
                continue;
            }
        };
        if let Some(unless) = &raw_rule.unless
            && let Err(error) = parse_regex(unless.get_ref())
        {
            invalid.push(InvalidRule {
                id,
                field: "unless",
                location: lines.location(unless.span().start),
                error,
            });
            continue;
        }
        rules.push(Rule {
            id,
            pattern: raw_rule.pattern.into_inner(),
            unless: raw_rule.unless.map(Spanned::into_inner),
            tool: raw_rule
                .tool
                .map(|t| t.into_inner().trim().to_string())
                .unwrap_or_default(),
            message: raw_rule.message.into_inner().trim().to_string(),
            action: raw_rule.action,
            examples_match: raw_rule.examples.matches,
            examples_not_match: raw_rule.examples.not_match,
            keywords: raw_rule.keywords,
            long_running: raw_rule.long_running,
            pack: name.to_string(),
            needles: required_literals(&hir).unwrap_or_default(),
            regex: OnceLock::new(),
            unless_regex: OnceLock::new(),
            location: at,
        });
    }
    Ok(ParsedPack { rules, invalid })
}

/// For serde's "unknown field `x`, expected one of `a`, `b`" (and "unknown variant"),
/// suggests the closest expected name.
fn suggest_from_serde(message: &str) -> Option<String> {
    if !(message.starts_with("unknown field") || message.starts_with("unknown variant")) {
        return None;
    }
    let mut quoted = message.split('`').skip(1).step_by(2);
    let unknown = quoted.next()?;
    quoted
        .map(|candidate| (levenshtein(unknown, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.chars().count() / 3).max(1) + 1)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.to_string())
}

/// Edit distance, for "did you mean" suggestions.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The `rules list` table: id, tool, action, pack, pattern; skipped rules follow as
/// warnings so that they are never invisible.
pub fn format_list(set: &RuleSet) -> String {
    let header = ["ID", "TOOL", "ACTION", "PACK", "PATTERN"];
    let rows: Vec<[String; 5]> = set
        .rules()
        .iter()
        .map(|r| {
            let pattern = match &r.unless {
                Some(unless) => format!("{}  (unless {unless})", r.pattern),
                None => r.pattern.clone(),
            };
            [
                r.id.clone(),
                r.tool.clone(),
                r.action.to_string(),
                r.pack.clone(),
                pattern,
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 5]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(cell);
                let pad = widths[i].saturating_sub(cell.chars().count()) + 2;
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header);
    for row in &rows {
        line([&row[0], &row[1], &row[2], &row[3], &row[4]]);
    }
    if rows.is_empty() {
        out.push_str("(no rules)\n");
    }
    for warning in set.warnings() {
        out.push_str("warning: ");
        out.push_str(warning);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `might_match` knows of the guard pack's keywords is what the pack says.
    #[test]
    fn the_guard_keywords_are_the_packs_own() {
        #[derive(Deserialize)]
        struct Pack {
            rule: Vec<Rule>,
        }
        #[derive(Deserialize)]
        struct Rule {
            #[serde(default)]
            keywords: Vec<String>,
        }
        let pack: Pack = toml::from_str(GUARD_PACK).expect("the guard pack parses");
        let said: Vec<Vec<String>> = pack.rule.into_iter().map(|r| r.keywords).collect();
        let known: Vec<Vec<String>> = GUARD_KEYWORDS
            .iter()
            .map(|k| k.iter().map(|w| w.to_string()).collect())
            .collect();
        assert_eq!(known, said, "update GUARD_KEYWORDS to rules/guard.toml");
        for (command, could) in [("reboot", true), ("kill 1", true), ("ls -l", false)] {
            assert_eq!(
                might_match(&["guard".into()], None, command),
                could,
                "{command}"
            );
        }
    }
}
