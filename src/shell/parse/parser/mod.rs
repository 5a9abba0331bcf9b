//! A recursive-descent parser for bash's grammar, reading bytes directly: bash's
//! tokens depend on where they are (a reserved word only in command position, a
//! heredoc body after the next newline, `)` inside a `case` pattern), so the parser
//! drives a small scanner instead of consuming a token list made beforehand.
//!
//! It accepts what `bash -c` accepts and refuses, with a [`ParseError`] saying what and
//! where, what bash refuses (an unterminated quote, `fi` without `if`, `echo (`); the
//! one leniency is a heredoc whose delimiter never comes, which bash runs too (the body
//! ends with the input). It never panics, never loops, and nests at most
//! [`MAX_DEPTH`] constructs deep, so no input can exhaust its stack.

use std::fmt;
use std::sync::Arc;

use super::ast::*;

mod compound;
mod heredoc;
mod param;
mod simple;
mod word;

/// How deeply constructs may nest (compound commands, substitutions, expansions).
pub const MAX_DEPTH: usize = 64;

/// Why a command could not be parsed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ErrorKind,
    /// Byte offset of the problem.
    pub offset: usize,
    /// 1-based line and column (in characters) of `offset`.
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A quote or an expansion that is never closed: what opened it (`'`, `"`, `$(`,
    /// `${`, `` ` ``, `$((`, `((`, `[[`), and where (line, column).
    Unterminated {
        opener: &'static str,
        line: usize,
        column: usize,
    },
    /// A token where bash does not accept one (`)`, `fi`, `;;`, `|`).
    Unexpected(String),
    /// The input ends inside a construct; what was expected.
    UnexpectedEnd(&'static str),
    /// Deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Unterminated {
                opener,
                line,
                column,
            } => write!(
                f,
                "`{opener}` opened at line {line}, column {column} is never closed"
            ),
            ErrorKind::Unexpected(t) => write!(
                f,
                "syntax error near `{t}` at line {}, column {}",
                self.line, self.column
            ),
            ErrorKind::UnexpectedEnd(what) => {
                write!(f, "the command ends where {what} was expected")
            }
            ErrorKind::TooDeep => write!(
                f,
                "constructs nest deeper than {MAX_DEPTH} levels (line {}, column {})",
                self.line, self.column
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses `src` as `bash -c` would, all of it.
pub fn parse(src: &str) -> Result<Script, ParseError> {
    let parsed = parse_lines(src);
    match parsed.error {
        Some(e) => Err(e),
        None => Ok(parsed.script),
    }
}

/// The result of [`parse_lines`].
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The complete lines before the first error (all of them without one).
    pub script: Script,
    pub error: Option<ParseError>,
    /// Where the line that failed starts: bash runs the lines before it, reports the
    /// error and runs nothing from there on.
    pub rest: usize,
}

/// Parses `src` the way `bash -c` reads it: a top-level line (a list up to a newline,
/// with what its constructs carry over to later lines) at a time. On a syntax error the
/// lines before it are kept, since bash has already run them.
pub fn parse_lines(src: &str) -> Parsed {
    let arc: Arc<str> = Arc::from(src);
    let mut p = Parser::new(src, arc.clone(), 0);
    let (body, error, rest) = p.program();
    let mut script = Script { src: arc, body };
    p.fill(&mut script.body);
    Parsed {
        script,
        error,
        rest,
    }
}

/// Where a list ends.
#[derive(Clone, Copy)]
enum End {
    /// `)` of a subshell or `$(…)`.
    Paren,
    /// One of these reserved words in command position.
    Words(&'static [&'static str]),
    /// `;;`, `;&`, `;;&` or `esac`.
    CaseArm,
}

/// Where a word is read, which decides what ends it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// An ordinary word: ends at a blank or an operator character.
    Arg,
    /// An assignment's value: like `Arg`, and `~` expands after each `:`.
    Value,
    /// Inside `[[ … ]]`: `(`, `)`, `|`, `<`, `>` inside a word are part of it.
    Cond,
    /// The word of `${x:-word}`: ends at `}`; blanks and operators are literal.
    ParamArg { quoted: bool },
    /// The pattern of `${x/pattern/…}`: ends at `/` or `}`.
    ParamPattern { quoted: bool },
    /// An arithmetic part of `${x:offset:length}`: ends at `:` or `}`.
    ParamArith,
    /// An array subscript: ends at `]`.
    Index,
}

impl Ctx {
    fn quoted(self) -> bool {
        matches!(
            self,
            Ctx::ParamArg { quoted: true } | Ctx::ParamPattern { quoted: true }
        )
    }

    fn in_braces(self) -> bool {
        matches!(
            self,
            Ctx::ParamArg { .. } | Ctx::ParamPattern { .. } | Ctx::ParamArith
        )
    }
}

struct Pending {
    id: usize,
    delimiter: String,
    strip_tabs: bool,
    quoted: bool,
}

pub(super) fn is_meta(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

pub(super) fn valid_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

const RESERVED: &[&str] = &[
    "if", "then", "elif", "else", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "select", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    arc: Arc<str>,
    pos: usize,
    /// Reads stop here (a heredoc body is parsed within its own lines).
    limit: usize,
    depth: usize,
    pending: Vec<Pending>,
    bodies: Vec<Option<Word>>,
}

type R<T> = Result<T, ParseError>;

impl<'a> Parser<'a> {
    fn new(src: &'a str, arc: Arc<str>, depth: usize) -> Self {
        Parser {
            src,
            b: src.as_bytes(),
            arc,
            pos: 0,
            limit: src.len(),
            depth,
            pending: Vec::new(),
            bodies: Vec::new(),
        }
    }

    // -----------------------------------------------------------------------------
    // Scanning

    fn peek(&self) -> Option<u8> {
        if self.pos < self.limit {
            self.b.get(self.pos).copied()
        } else {
            None
        }
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        let i = self.pos + n;
        if i < self.limit {
            self.b.get(i).copied()
        } else {
            None
        }
    }

    fn starts_with(&self, s: &str) -> bool {
        self.b
            .get(self.pos..self.limit.min(self.b.len()))
            .is_some_and(|rest| rest.starts_with(s.as_bytes()))
    }

    fn char_here(&self) -> char {
        self.src
            .get(self.pos..)
            .and_then(|s| s.chars().next())
            .unwrap_or('\u{fffd}')
    }

    fn line_col(&self, offset: usize) -> (usize, usize) {
        let upto = self.src.get(..offset.min(self.src.len())).unwrap_or("");
        let line = upto.bytes().filter(|&c| c == b'\n').count() + 1;
        let col = upto.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    fn error(&self, kind: ErrorKind, offset: usize) -> ParseError {
        let (line, column) = self.line_col(offset);
        ParseError {
            kind,
            offset,
            line,
            column,
        }
    }

    fn unterminated(&self, opener: &'static str, at: usize) -> ParseError {
        let (line, column) = self.line_col(at);
        self.error(
            ErrorKind::Unterminated {
                opener,
                line,
                column,
            },
            at,
        )
    }

    /// The token at the current position, for an error message.
    fn unexpected(&self) -> ParseError {
        let Some(c) = self.peek() else {
            return self.error(ErrorKind::UnexpectedEnd("a command"), self.pos);
        };
        let ops = [
            ";;&", "&>>", "&&", "||", ";;", ";&", "|&", "<<", ">>", "&>", ";", "&", "|", "(", ")",
            "<", ">",
        ];
        let token = if c == b'\n' {
            "newline".to_string()
        } else if let Some(op) = ops.iter().find(|op| self.starts_with(op)) {
            op.to_string()
        } else {
            let end = (self.pos..self.limit)
                .find(|&i| self.b.get(i).is_none_or(|&c| is_meta(c)))
                .unwrap_or(self.limit)
                .max(self.pos + 1);
            let mut end = end.min(self.src.len());
            while !self.src.is_char_boundary(end) {
                end += 1;
            }
            self.src.get(self.pos..end).unwrap_or("?").to_string()
        };
        self.error(ErrorKind::Unexpected(token), self.pos)
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(ErrorKind::TooDeep, self.pos));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Spaces, tabs and line continuations.
    fn blanks(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                _ => break,
            }
        }
    }

    /// Blanks, then a comment up to (not including) the end of its line.
    fn blanks_and_comment(&mut self) {
        self.blanks();
        if self.peek() == Some(b'#') {
            while self.peek().is_some_and(|c| c != b'\n') {
                self.pos += 1;
            }
        }
    }

    /// Consumes one newline (and the heredoc bodies that follow it).
    fn newline(&mut self) -> R<bool> {
        if self.peek() != Some(b'\n') {
            return Ok(false);
        }
        self.pos += 1;
        self.read_heredocs()?;
        Ok(true)
    }

    /// Any number of blank lines and comments.
    fn linebreak(&mut self) -> R<()> {
        loop {
            self.blanks_and_comment();
            if !self.newline()? {
                return Ok(());
            }
        }
    }

    /// The reserved word at the current position, if the word there is one.
    fn reserved(&self) -> Option<&'static str> {
        let rest = self.b.get(self.pos..self.limit.min(self.b.len()))?;
        let end = rest.iter().position(|&c| is_meta(c)).unwrap_or(rest.len());
        let word = std::str::from_utf8(rest.get(..end)?).ok()?;
        RESERVED.iter().copied().find(|r| *r == word)
    }

    fn eat_reserved(&mut self, word: &'static str) -> bool {
        if self.reserved() == Some(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn expect_reserved(&mut self, word: &'static str) -> R<()> {
        self.blanks_and_comment();
        if self.eat_reserved(word) {
            return Ok(());
        }
        match self.peek() {
            None => Err(self.error(ErrorKind::UnexpectedEnd(quoted_word(word)), self.pos)),
            Some(_) => Err(self.unexpected()),
        }
    }

    /// A redirection operator starts here (with its descriptor: `2>`, `{fd}>`).
    fn at_redirect(&self) -> bool {
        let mut i = 0;
        while self.peek_at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == 0 && self.peek() == Some(b'{') {
            let mut j = 1;
            while self
                .peek_at(j)
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            {
                j += 1;
            }
            if j > 1
                && self.peek_at(j) == Some(b'}')
                && matches!(self.peek_at(j + 1), Some(b'<' | b'>'))
            {
                return self.peek_at(j + 2) != Some(b'(');
            }
        }
        match self.peek_at(i) {
            Some(b'<' | b'>') => self.peek_at(i + 1) != Some(b'('),
            Some(b'&') if i == 0 => self.peek_at(1) == Some(b'>'),
            _ => false,
        }
    }

    /// Nothing more of a pipeline follows: a separator, a closing token or the end.
    fn at_pipeline_end(&self) -> bool {
        match self.peek() {
            None | Some(b'\n' | b';' | b'#') => true,
            Some(_) => matches!(
                self.reserved(),
                Some("}" | "then" | "do" | "done" | "fi" | "elif" | "else" | "esac")
            ),
        }
    }

    /// A word starts here.
    fn at_word(&self) -> bool {
        match self.peek() {
            None => false,
            Some(b'<' | b'>') => self.peek_at(1) == Some(b'('),
            Some(c) => !is_meta(c),
        }
    }

    // -----------------------------------------------------------------------------
    // Lists and commands

    /// The top level, a line at a time (see [`parse_lines`]).
    fn program(&mut self) -> (List, Option<ParseError>, usize) {
        let mut items: List = Vec::new();
        // Items before this index are on lines bash has finished reading.
        let mut complete = 0;
        let mut rest = 0;
        loop {
            if let Err(e) = self.linebreak() {
                items.truncate(complete);
                return (items, Some(e), rest);
            }
            if self.peek().is_none() {
                break;
            }
            if complete == items.len() {
                rest = self.pos;
            }
            match self.item() {
                Ok(item) => {
                    let sep = item.sep;
                    items.push(item);
                    match sep {
                        Sep::Newline => complete = items.len(),
                        Sep::End => {
                            self.blanks_and_comment();
                            if self.peek().is_some() {
                                let e = self.unexpected();
                                items.truncate(complete);
                                return (items, Some(e), rest);
                            }
                            break;
                        }
                        _ => {}
                    }
                }
                Err(e) => {
                    items.truncate(complete);
                    return (items, Some(e), rest);
                }
            }
        }
        self.end_heredocs();
        (items, None, self.src.len())
    }

    /// One and-or list and its separator.
    fn item(&mut self) -> R<Item> {
        let and_or = self.and_or()?;
        self.blanks_and_comment();
        let sep = match self.peek() {
            Some(b';') if !matches!(self.peek_at(1), Some(b';' | b'&')) => {
                self.pos += 1;
                Sep::Semi
            }
            Some(b'&') if !matches!(self.peek_at(1), Some(b'&' | b'>')) => {
                self.pos += 1;
                Sep::Amp
            }
            Some(b'\n') => {
                self.newline()?;
                Sep::Newline
            }
            _ => Sep::End,
        };
        Ok(Item { and_or, sep })
    }

    fn at_end(&self, end: End) -> bool {
        match end {
            End::Paren => self.peek() == Some(b')'),
            End::Words(words) => self.reserved().is_some_and(|r| words.contains(&r)),
            End::CaseArm => {
                self.starts_with(";;") || self.starts_with(";&") || self.reserved() == Some("esac")
            }
        }
    }

    /// A list inside a construct, up to `end` (not consumed).
    fn list(&mut self, end: End) -> R<List> {
        let mut items = Vec::new();
        loop {
            self.linebreak()?;
            if self.at_end(end) || self.peek().is_none() {
                break;
            }
            let item = self.item()?;
            let sep = item.sep;
            items.push(item);
            if sep == Sep::End {
                break;
            }
        }
        self.blanks_and_comment();
        if !self.at_end(end) {
            return Err(match self.peek() {
                None => self.error(ErrorKind::UnexpectedEnd(end_name(end)), self.pos),
                Some(_) => self.unexpected(),
            });
        }
        Ok(items)
    }

    /// A list that must not be empty (`if`, `while`, `{ }` bodies).
    fn body(&mut self, end: End) -> R<List> {
        let list = self.list(end)?;
        if list.is_empty() {
            return Err(self.unexpected());
        }
        Ok(list)
    }

    fn and_or(&mut self) -> R<AndOr> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.blanks_and_comment();
            let connector = if self.starts_with("&&") {
                Connector::And
            } else if self.starts_with("||") {
                Connector::Or
            } else {
                break;
            };
            self.pos += 2;
            self.linebreak()?;
            rest.push((connector, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn pipeline(&mut self) -> R<Pipeline> {
        self.blanks();
        let start = self.pos;
        let (mut time, mut bang) = (false, false);
        loop {
            self.blanks();
            match self.reserved() {
                Some("time") => {
                    self.pos += 4;
                    self.blanks();
                    if self.starts_with("-p") && self.peek_at(2).is_none_or(is_meta) {
                        self.pos += 2;
                    }
                    time = true;
                }
                Some("!") => {
                    self.pos += 1;
                    bang = true;
                }
                _ => break,
            }
        }
        let mut stages = Vec::new();
        // `!` or `time` alone: bash accepts them, and they run nothing.
        self.blanks();
        if (time || bang) && self.at_pipeline_end() {
            return Ok(Pipeline {
                time,
                bang,
                stages,
                span: start..self.pos,
            });
        }
        loop {
            let command = self.command()?;
            self.blanks_and_comment();
            let pipe_all = if self.starts_with("|&") {
                self.pos += 2;
                true
            } else if self.peek() == Some(b'|') && self.peek_at(1) != Some(b'|') {
                self.pos += 1;
                false
            } else {
                stages.push(Stage {
                    command,
                    pipe_all: false,
                });
                break;
            };
            stages.push(Stage { command, pipe_all });
            self.linebreak()?;
        }
        Ok(Pipeline {
            time,
            bang,
            stages,
            span: start..self.pos,
        })
    }

    fn command(&mut self) -> R<Command> {
        self.blanks();
        self.enter()?;
        let command = self.command_inner();
        self.leave();
        command
    }

    fn command_inner(&mut self) -> R<Command> {
        let compound = match self.reserved() {
            Some("{") => {
                self.pos += 1;
                let list = self.body(End::Words(&["}"]))?;
                self.expect_reserved("}")?;
                Compound::Brace(list)
            }
            Some("if") => self.if_clause()?,
            Some(w @ ("while" | "until")) => {
                self.pos += w.len();
                let condition = self.body(End::Words(&["do"]))?;
                self.expect_reserved("do")?;
                let body = self.body(End::Words(&["done"]))?;
                self.expect_reserved("done")?;
                Compound::While {
                    until: w == "until",
                    condition,
                    body,
                }
            }
            Some(w @ ("for" | "select")) => {
                self.pos += w.len();
                self.for_clause(w == "select")?
            }
            Some("case") => {
                self.pos += 4;
                self.case_clause()?
            }
            Some("[[") => {
                self.pos += 2;
                self.cond()?
            }
            Some("function") => {
                self.pos += 8;
                return self.function_keyword();
            }
            Some("coproc") => {
                self.pos += 6;
                return self.coproc();
            }
            Some(w @ ("then" | "elif" | "else" | "fi" | "do" | "done" | "esac" | "}")) => {
                return Err(self.error(ErrorKind::Unexpected(w.to_string()), self.pos));
            }
            _ if self.peek() == Some(b'(') => {
                if self.peek_at(1) == Some(b'(') && self.arith_ahead(self.pos + 2) {
                    let open = self.pos;
                    self.pos += 2;
                    let expr = self.arith_word(open, "((")?;
                    Compound::Arith(expr)
                } else {
                    self.pos += 1;
                    let list = self.body(End::Paren)?;
                    self.pos += 1;
                    Compound::Subshell(list)
                }
            }
            _ => return self.simple(),
        };
        let redirects = self.trailing_redirects()?;
        Ok(Command::Compound(Box::new(compound), redirects))
    }

    fn trailing_redirects(&mut self) -> R<Vec<Redirect>> {
        let mut redirects = Vec::new();
        loop {
            self.blanks();
            if !self.at_redirect() {
                return Ok(redirects);
            }
            redirects.push(self.redirect()?);
        }
    }
}

fn flush(lit: &mut String, parts: &mut Vec<Part>, quoted: bool) {
    if !lit.is_empty() {
        parts.push(Part::Lit {
            text: std::mem::take(lit),
            quoted,
        });
    }
}

fn simple_param(name: ParamName, quoted: bool) -> Part {
    Part::Param {
        param: Box::new(Param {
            name,
            index: None,
            length: false,
            indirect: false,
            op: ParamOp::None,
        }),
        quoted,
    }
}

fn quoted_word(word: &'static str) -> &'static str {
    match word {
        "}" => "`}`",
        "fi" => "`fi`",
        "then" => "`then`",
        "do" => "`do`",
        "done" => "`done`",
        "esac" => "`esac`",
        "in" => "`in`",
        "]]" => "`]]`",
        _ => "a keyword",
    }
}

fn end_name(end: End) -> &'static str {
    match end {
        End::Paren => "`)`",
        End::Words(w) => w.last().map_or("a keyword", |w| quoted_word(w)),
        End::CaseArm => "`;;` or `esac`",
    }
}
