//! The interceptor (docs/RULES.md): decides, before anything runs, whether a command should
//! be refused because the caller has a better tool for the job.
//!
//! It has three parts. The *splitter* ([`split`], [`lex`]) is a small, lossless shell
//! lexer that cuts a command into flat segments at unquoted `;` `&&` `||` `|` `|&` `&`
//! and newlines, and reports as opaque the syntax it cannot flatten (substitutions,
//! subshells, groups, heredocs, unterminated quotes). The *reader* ([`commands`]) reads
//! that compound syntax instead and yields the simple commands with their wrappers
//! removed and their pipe and background context; those are the candidates. The
//! *matcher* ([`intercept`]) checks each candidate against a [`RuleSet`], skipping
//! commands fed by a pipe (`printf x | grep x` is fine) and rules whose tool the caller
//! does not have.
//!
//! Nothing here rejects input or panics: a command whose quoting does not terminate is
//! checked whole, because a false block costs the caller a turn while a miss only lets
//! a command run as it would have without agentbash.

pub mod check;
pub mod commands;

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::Serialize;

use crate::config::rules::{Action, RuleSet};

/// An unquoted control operator that ends a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Separator {
    /// `;`
    Semicolon,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|`
    Pipe,
    /// `|&` (stdout and stderr into the pipe)
    PipeAll,
    /// a single `&` (run the left side in the background)
    Background,
    /// an unquoted, unescaped newline
    Newline,
}

impl Separator {
    /// The operator as written in shell text (a newline is shown as `\\n`).
    pub fn as_str(self) -> &'static str {
        match self {
            Separator::Semicolon => ";",
            Separator::And => "&&",
            Separator::Or => "||",
            Separator::Pipe => "|",
            Separator::PipeAll => "|&",
            Separator::Background => "&",
            Separator::Newline => "\\n",
        }
    }

    /// Whether the segment after this operator reads the previous one's output.
    pub fn feeds_stdin(self) -> bool {
        matches!(self, Separator::Pipe | Separator::PipeAll)
    }
}

/// Why the splitter declined to split a command; the command is then checked whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpaqueReason {
    /// `$(…)` or `$((…))`
    CommandSubstitution,
    /// `` `…` ``
    Backticks,
    /// `<(…)` or `>(…)`
    ProcessSubstitution,
    /// `( … )`, and any other unquoted parenthesis (functions, arrays, `case` patterns)
    Subshell,
    /// `{ …; }`
    Group,
    /// `<<WORD` (the body lines are data, not commands)
    Heredoc,
    /// a `'` or `"` with no closing partner
    UnterminatedQuote,
    /// a `${` with no closing `}`
    UnterminatedExpansion,
}

impl fmt::Display for OpaqueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpaqueReason::CommandSubstitution => "command substitution $(…)",
            OpaqueReason::Backticks => "backtick command substitution",
            OpaqueReason::ProcessSubstitution => "process substitution <(…) / >(…)",
            OpaqueReason::Subshell => "subshell or parenthesis ( … )",
            OpaqueReason::Group => "command group { …; }",
            OpaqueReason::Heredoc => "heredoc <<",
            OpaqueReason::UnterminatedQuote => "unterminated quote",
            OpaqueReason::UnterminatedExpansion => "unterminated ${…}",
        })
    }
}

/// What a [`Token`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// Segment text: from its first to its last non-blank byte, quotes and inner blanks
    /// included.
    Text,
    /// Spaces and tabs around segment text.
    Space,
    /// A `#` comment, up to (not including) the end of its line.
    Comment,
    /// A control operator.
    Separator(Separator),
}

/// One piece of the lossless token list: the pieces' ranges tile the input exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Token {
    pub kind: TokenKind,
    pub range: Range<usize>,
}

/// The splitter's full result: every byte of the input in [`Lexed::tokens`], plus the
/// first construct that makes splitting unsafe, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub opaque: Option<OpaqueReason>,
}

/// One flat simple command (or pipeline stage) of a split command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// The segment as written, trimmed of surrounding blanks.
    pub text: String,
    /// Where [`Segment::text`] sits in the original command (byte offsets).
    pub range: Range<usize>,
    /// The segment with its leading `NAME=value` assignments removed; empty when the
    /// segment is only assignments.
    pub command: String,
    /// The first operator between the previous segment and this one (`None` for the
    /// first segment). `a |` + newline + `b` counts as a pipe, as it does in the shell.
    pub preceded_by: Option<Separator>,
    /// The first operator after this segment, if any.
    pub followed_by: Option<Separator>,
    /// True when stdin comes from the previous segment through `|` or `|&`.
    pub piped_stdin: bool,
}

/// The splitter's verdict: flat segments, or a reason to check only the whole command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Split {
    Segments(Vec<Segment>),
    Opaque(OpaqueReason),
}

/// Cuts `cmd` into a lossless token list; see [`split`] for the segment view.
pub fn lex(cmd: &str) -> Lexed {
    Lexer::new(cmd).run()
}

/// Splits `cmd` into flat segments, or reports why it cannot do so safely.
pub fn split(cmd: &str) -> Split {
    let lexed = lex(cmd);
    if let Some(reason) = lexed.opaque {
        return Split::Opaque(reason);
    }
    let mut segments: Vec<Segment> = Vec::new();
    // The operator that joins the previous segment to the next one is the first one seen
    // after it; later ones (newlines after a trailing `|`) are line continuation.
    let mut joining: Option<Separator> = None;
    for token in &lexed.tokens {
        match token.kind {
            TokenKind::Separator(sep) => {
                if joining.is_none() {
                    joining = Some(sep);
                    if let Some(last) = segments.last_mut()
                        && last.followed_by.is_none()
                    {
                        last.followed_by = Some(sep);
                    }
                }
            }
            TokenKind::Text => {
                let text = cmd.get(token.range.clone()).unwrap_or_default();
                let preceded_by = joining.take();
                segments.push(Segment {
                    text: text.to_string(),
                    range: token.range.clone(),
                    command: strip_assignments(text).to_string(),
                    preceded_by,
                    followed_by: None,
                    piped_stdin: preceded_by.is_some_and(Separator::feeds_stdin),
                });
            }
            TokenKind::Space | TokenKind::Comment => {}
        }
    }
    Split::Segments(segments)
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    tokens: Vec<Token>,
    /// Start of the bytes not yet covered by a token.
    pending: usize,
    /// First and one-past-last non-blank byte of the segment text being accumulated.
    text: Option<(usize, usize)>,
    opaque: Option<OpaqueReason>,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer {
            src,
            bytes: src.as_bytes(),
            tokens: Vec::new(),
            pending: 0,
            text: None,
            opaque: None,
        }
    }

    fn byte(&self, i: usize) -> Option<u8> {
        self.bytes.get(i).copied()
    }

    /// Only the first reason is kept: it is the one a reader meets first.
    fn give_up(&mut self, reason: OpaqueReason) {
        if self.opaque.is_none() {
            self.opaque = Some(reason);
        }
    }

    /// Records `start..end` as segment text (non-blank).
    fn text(&mut self, start: usize, end: usize) {
        self.text = Some(match self.text {
            Some((first, _)) => (first, end),
            None => (start, end),
        });
    }

    /// `#` starts a comment, and `{` a group, only as the first character of a word.
    fn at_word_start(&self, i: usize) -> bool {
        self.text.is_none()
            || matches!(
                i.checked_sub(1).and_then(|p| self.byte(p)),
                Some(b' ' | b'\t')
            )
    }

    fn push(&mut self, kind: TokenKind, range: Range<usize>) {
        if !range.is_empty() {
            self.tokens.push(Token { kind, range });
        }
    }

    /// Emits the pending blanks and text up to `at`, where an operator or comment begins.
    fn flush(&mut self, at: usize) {
        match self.text.take() {
            Some((first, last)) => {
                self.push(TokenKind::Space, self.pending..first);
                self.push(TokenKind::Text, first..last);
                self.push(TokenKind::Space, last..at);
            }
            None => self.push(TokenKind::Space, self.pending..at),
        }
        self.pending = at;
    }

    fn separator(&mut self, at: usize, len: usize, sep: Separator) -> usize {
        self.flush(at);
        self.push(TokenKind::Separator(sep), at..at + len);
        self.pending = at + len;
        at + len
    }

    fn run(mut self) -> Lexed {
        let len = self.bytes.len();
        let mut i = 0;
        while i < len {
            let start = i;
            let Some(c) = self.byte(i) else { break };
            i = match c {
                b' ' | b'\t' => i + 1,
                b'\n' => self.separator(i, 1, Separator::Newline),
                b';' => self.separator(i, 1, Separator::Semicolon),
                b'|' => match self.byte(i + 1) {
                    Some(b'|') => self.separator(i, 2, Separator::Or),
                    Some(b'&') => self.separator(i, 2, Separator::PipeAll),
                    _ => self.separator(i, 1, Separator::Pipe),
                },
                b'&' => match self.byte(i + 1) {
                    Some(b'&') => self.separator(i, 2, Separator::And),
                    // `&>file` and `&>>file` redirect; they do not background anything.
                    Some(b'>') => {
                        let end = if self.byte(i + 2) == Some(b'>') {
                            i + 3
                        } else {
                            i + 2
                        };
                        self.text(start, end);
                        end
                    }
                    _ => self.separator(i, 1, Separator::Background),
                },
                b'#' if self.at_word_start(i) => {
                    let end = self.bytes[i..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(len, |p| i + p);
                    self.flush(i);
                    self.push(TokenKind::Comment, i..end);
                    self.pending = end;
                    end
                }
                _ => {
                    let end = self.word_piece(i);
                    self.text(start, end);
                    end
                }
            };
        }
        self.flush(len);
        Lexed {
            tokens: self.tokens,
            opaque: self.opaque,
        }
    }

    /// Consumes one piece of a word starting at `i` (which is not blank and not an
    /// operator) and returns where it ends. Redirect operators are word pieces: `>|`,
    /// `>&`, `<&`, `2>&1` never split.
    fn word_piece(&mut self, i: usize) -> usize {
        let len = self.bytes.len();
        let Some(c) = self.byte(i) else { return len };
        let next = self.byte(i + 1);
        match c {
            b'\\' => match next {
                // Escaping a multi-byte character skips the whole character, so token
                // boundaries always fall on character boundaries.
                Some(_) => {
                    i + 1
                        + self
                            .src
                            .get(i + 1..)
                            .and_then(|s| s.chars().next())
                            .map_or(1, char::len_utf8)
                }
                None => len,
            },
            b'\'' => match self.bytes[i + 1..].iter().position(|&b| b == b'\'') {
                Some(p) => i + 1 + p + 1,
                None => {
                    self.give_up(OpaqueReason::UnterminatedQuote);
                    len
                }
            },
            b'"' => self.double_quoted(i + 1),
            b'`' => {
                self.give_up(OpaqueReason::Backticks);
                i + 1
            }
            b'$' => match next {
                Some(b'(') => {
                    self.give_up(OpaqueReason::CommandSubstitution);
                    i + 2
                }
                Some(b'\'') => self.ansi_c_quoted(i + 2),
                Some(b'{') => self.braced_expansion(i + 2),
                _ => i + 1,
            },
            b'(' | b')' => {
                self.give_up(OpaqueReason::Subshell);
                i + 1
            }
            b'{' if self.at_word_start(i) && matches!(next, None | Some(b' ' | b'\t' | b'\n')) => {
                self.give_up(OpaqueReason::Group);
                i + 1
            }
            b'>' => match next {
                Some(b'>' | b'|' | b'&') => i + 2,
                Some(b'(') => {
                    self.give_up(OpaqueReason::ProcessSubstitution);
                    i + 2
                }
                _ => i + 1,
            },
            b'<' => match (next, self.byte(i + 2)) {
                // `<<<` is a here-string: one word of data on the same line, harmless.
                (Some(b'<'), Some(b'<')) => i + 3,
                (Some(b'<'), _) => {
                    self.give_up(OpaqueReason::Heredoc);
                    i + 2
                }
                (Some(b'&' | b'>'), _) => i + 2,
                (Some(b'('), _) => {
                    self.give_up(OpaqueReason::ProcessSubstitution);
                    i + 2
                }
                _ => i + 1,
            },
            _ => i + 1,
        }
    }

    /// Scans a `"…"` body starting after the opening quote; returns the end of the
    /// closing quote.
    fn double_quoted(&mut self, mut j: usize) -> usize {
        let len = self.bytes.len();
        while let Some(b) = self.byte(j) {
            match b {
                b'\\' => j += 2,
                b'"' => return j + 1,
                b'`' => {
                    self.give_up(OpaqueReason::Backticks);
                    j += 1;
                }
                b'$' if self.byte(j + 1) == Some(b'(') => {
                    self.give_up(OpaqueReason::CommandSubstitution);
                    j += 2;
                }
                _ => j += 1,
            }
        }
        self.give_up(OpaqueReason::UnterminatedQuote);
        len
    }

    /// Scans a `$'…'` body (backslash escapes apply) starting after the opening quote.
    fn ansi_c_quoted(&mut self, mut j: usize) -> usize {
        let len = self.bytes.len();
        while let Some(b) = self.byte(j) {
            match b {
                b'\\' => j += 2,
                b'\'' => return j + 1,
                _ => j += 1,
            }
        }
        self.give_up(OpaqueReason::UnterminatedQuote);
        len
    }

    /// Scans a `${…}` body starting after the `{`, honouring nested `${…}`; operators
    /// inside (`${x:-a;b}`) belong to the expansion, not to the command line.
    fn braced_expansion(&mut self, mut j: usize) -> usize {
        let len = self.bytes.len();
        let mut depth = 1usize;
        while let Some(b) = self.byte(j) {
            match b {
                b'\\' => j += 2,
                b'{' => {
                    depth += 1;
                    j += 1;
                }
                b'}' => {
                    depth -= 1;
                    j += 1;
                    if depth == 0 {
                        return j;
                    }
                }
                b'`' => {
                    self.give_up(OpaqueReason::Backticks);
                    j += 1;
                }
                b'$' if self.byte(j + 1) == Some(b'(') => {
                    self.give_up(OpaqueReason::CommandSubstitution);
                    j += 2;
                }
                _ => j += 1,
            }
        }
        self.give_up(OpaqueReason::UnterminatedExpansion);
        len
    }
}

/// Removes leading `NAME=value` words (`FOO=1 BAR="a b" cmd` → `cmd`), which the shell
/// treats as environment for the command rather than as the command.
fn strip_assignments(segment: &str) -> &str {
    let bytes = segment.as_bytes();
    let len = bytes.len();
    let mut i = 0;
    loop {
        while matches!(bytes.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let word_start = i;
        if !matches!(bytes.get(i), Some(b) if b.is_ascii_alphabetic() || *b == b'_') {
            return segment.get(word_start..).unwrap_or_default();
        }
        while matches!(bytes.get(i), Some(b) if b.is_ascii_alphanumeric() || *b == b'_') {
            i += 1;
        }
        if bytes.get(i) == Some(&b'+') {
            i += 1;
        }
        if bytes.get(i) != Some(&b'=') {
            return segment.get(word_start..).unwrap_or_default();
        }
        i += 1;
        // The value runs to the next unquoted blank.
        while let Some(&b) = bytes.get(i) {
            match b {
                b' ' | b'\t' | b'\n' => break,
                b'\\' => i += 2,
                b'\'' => {
                    i = bytes[i + 1..]
                        .iter()
                        .position(|&q| q == b'\'')
                        .map_or(len, |p| i + 1 + p + 1);
                }
                b'"' => {
                    let mut j = i + 1;
                    i = len;
                    while let Some(&q) = bytes.get(j) {
                        match q {
                            b'\\' => j += 2,
                            b'"' => {
                                i = j + 1;
                                break;
                            }
                            _ => j += 1,
                        }
                    }
                }
                _ => i += 1,
            }
        }
        if i >= len {
            return "";
        }
    }
}

/// Whether a candidate is the whole command or one of its segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateKind {
    Whole,
    Segment,
}

/// Why a candidate was not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its stdin is the previous segment's output (`printf x | grep x`).
    PipedStdin,
    /// It runs in the background, and the same command waits for or kills it.
    Reaped,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::PipedStdin => f.write_str("stdin is piped from the previous segment"),
            SkipReason::Reaped => {
                f.write_str("runs in the background, and the command waits for or kills it")
            }
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
    pub text: String,
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
    /// Set when the splitter declined and only the whole command was checked.
    pub opaque: Option<OpaqueReason>,
}

impl Interception {
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }
}

/// Checks `cmd` against `rules` for a caller that has `tools`.
///
/// Candidates are the simple commands of `cmd` (see `candidates_of`); only when its
/// quoting does not terminate, the whole command and its flat segments. A candidate
/// identical to an earlier one is not repeated. For each candidate the first matching rule in pack order whose tool is available
/// decides: `block` blocks (the first such candidate is reported), `warn` adds a notice.
pub fn intercept(cmd: &str, rules: &RuleSet, tools: &[String]) -> Interception {
    let mut out = Interception::default();
    let whole = cmd.trim();
    if whole.is_empty() {
        return out;
    }
    let candidates = match commands::simple_commands(cmd) {
        Some(simples) => candidates_of(simples),
        None => {
            let (candidates, opaque) = fallback_candidates(cmd, whole);
            out.opaque = opaque;
            candidates
        }
    };
    for candidate in candidates {
        let Candidate {
            text,
            kind,
            skipped,
            info_only,
            bounded,
        } = candidate;
        let mut trace = CandidateTrace {
            text,
            kind,
            skipped,
            matched: None,
            matches: Vec::new(),
            verdict: Verdict::Skipped,
        };
        if skipped.is_none() {
            trace.verdict = Verdict::Pass;
            for index in rules.matching(&trace.text) {
                let Some(rule) = rules.rules().get(index) else {
                    continue;
                };
                // `vite --version` prints and exits; `timeout 5 npm run dev` cannot
                // outlive the run. A deny rule refuses whatever the arguments.
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
                    candidate: trace.text.clone(),
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
        }
        out.candidates.push(trace);
    }
    out
}

/// One text the rules are matched against, and what the matcher knows about it.
struct Candidate {
    text: String,
    kind: CandidateKind,
    skipped: Option<SkipReason>,
    /// The command only asks for help or a version (`vite --version`).
    info_only: bool,
    /// A `timeout` wrapper bounds the command.
    bounded: bool,
}

/// Candidates from the simple commands of a command line (see [`commands`]): each
/// command as written from its program name, followed by ` | NEXT` when its stdout
/// feeds a pipeline (so a rule can tell `cat f | less` from `cat f | jq .`; `xargs`
/// keeps its name there, without its options) and by ` &`
/// when it runs in the background. Within a pipeline the later stages come first: in
/// `find … | xargs sed -i …` the stage that acts decides, not the one that lists.
fn candidates_of(mut simples: Vec<commands::Simple>) -> Vec<Candidate> {
    // A pipeline sent to the background runs there as a whole.
    for i in (1..simples.len()).rev() {
        if simples[i].background && simples[i].piped_stdin {
            simples[i - 1].background = true;
        }
    }
    // `srv & pid=$!; …; kill $pid` and `a & b & wait` clean up after themselves.
    let reaped = simples
        .iter()
        .any(|s| match s.words.first().map(String::as_str) {
            Some("wait") => true,
            Some("kill") => s.words.iter().skip(1).any(|w| w.starts_with(['$', '%'])),
            _ => false,
        });
    let mut order: Vec<usize> = Vec::with_capacity(simples.len());
    let mut start = 0;
    for i in 0..simples.len() {
        if !simples[i].piped_stdout || i + 1 == simples.len() {
            order.extend((start..=i).rev());
            start = i + 1;
        }
    }
    // A set, not a scan: a generated command may have many thousands of commands, and
    // checking must stay linear.
    let mut seen: HashSet<(String, Option<SkipReason>)> = HashSet::new();
    let mut out = Vec::with_capacity(order.len());
    for i in order {
        let s = &simples[i];
        let mut text = s.text.clone();
        if s.piped_stdout
            && let Some(next) = simples.get(i + 1)
        {
            text.push_str(" | ");
            if next.via_xargs {
                text.push_str("xargs ");
            }
            text.push_str(&next.text);
        }
        if s.background {
            text.push_str(" &");
        }
        let skipped = if s.background && reaped {
            Some(SkipReason::Reaped)
        } else if s.piped_stdin && !s.background {
            Some(SkipReason::PipedStdin)
        } else {
            None
        };
        if !seen.insert((text.clone(), skipped)) {
            continue;
        }
        out.push(Candidate {
            text,
            kind: CandidateKind::Segment,
            skipped,
            info_only: is_info_only(&s.words),
            bounded: s.bounded,
        });
    }
    out
}

/// `prog --help`, `prog sub --version`, `prog help`, `npm start -- --help`: the last
/// word asks for information, so the program prints and exits.
fn is_info_only(words: &[String]) -> bool {
    match words {
        [_, only] if matches!(only.as_str(), "help" | "version") => true,
        [_, .., last] => matches!(
            last.as_str(),
            "--help" | "-h" | "--version" | "-V" | "--type-list" | "-help" | "-version"
        ),
        _ => false,
    }
}

/// The flat splitter's candidates, for a command whose quoting does not terminate: the
/// whole command, then its segments.
fn fallback_candidates(cmd: &str, whole: &str) -> (Vec<Candidate>, Option<OpaqueReason>) {
    let plain = |text: &str, kind, skipped| Candidate {
        text: text.to_string(),
        kind,
        skipped,
        info_only: false,
        bounded: false,
    };
    let mut candidates = vec![plain(whole, CandidateKind::Whole, None)];
    // The whole command too is checked without its leading assignments
    // (`X=1 cat a; echo $(date)`).
    let bare = strip_assignments(whole).trim();
    if !bare.is_empty() && bare != whole {
        candidates.push(plain(bare, CandidateKind::Whole, None));
    }
    match split(cmd) {
        Split::Segments(segments) => {
            let mut seen: HashSet<(String, Option<SkipReason>)> = HashSet::new();
            seen.insert((whole.to_string(), None));
            seen.insert((bare.to_string(), None));
            for segment in segments {
                let skipped = segment.piped_stdin.then_some(SkipReason::PipedStdin);
                if segment.command.is_empty() || !seen.insert((segment.command.clone(), skipped)) {
                    continue;
                }
                candidates.push(plain(&segment.command, CandidateKind::Segment, skipped));
            }
            // Unterminated quoting that the flat splitter accepted: keep its segments.
            (candidates, None)
        }
        Split::Opaque(reason) => (candidates, Some(reason)),
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
    match interception.opaque {
        Some(reason) => {
            let _ = writeln!(
                out,
                "split:   not split ({reason}); whole command checked only"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "split:   {} candidate(s): simple commands, wrappers removed, later pipeline stages first; a repeat is not listed",
                interception.candidates.len()
            );
        }
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
