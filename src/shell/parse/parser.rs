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

    #[inline(never)]
    fn if_clause(&mut self) -> R<Compound> {
        self.pos += 2;
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            let condition = self.body(End::Words(&["then"]))?;
            self.expect_reserved("then")?;
            let body = self.body(End::Words(&["elif", "else", "fi"]))?;
            branches.push((condition, body));
            if self.eat_reserved("elif") {
                continue;
            }
            if self.eat_reserved("else") {
                otherwise = Some(self.body(End::Words(&["fi"]))?);
            }
            self.expect_reserved("fi")?;
            break;
        }
        Ok(Compound::If {
            branches,
            otherwise,
        })
    }

    #[inline(never)]
    fn for_clause(&mut self, select: bool) -> R<Compound> {
        self.blanks();
        if !select && self.starts_with("((") {
            let open = self.pos;
            self.pos += 2;
            let expr = self.arith_word(open, "((")?;
            let parts = split_arith_for(&expr);
            self.blanks();
            if self.peek() == Some(b';') {
                self.pos += 1;
            }
            self.linebreak()?;
            let body = self.do_group()?;
            return Ok(Compound::ArithFor { parts, body });
        }
        let var = match self.at_word().then(|| self.word(Ctx::Arg)).transpose()? {
            Some(w) => match w.plain() {
                Some(name) if valid_name(name) => name.to_string(),
                _ => {
                    return Err(self.error(
                        ErrorKind::Unexpected(self.src.get(w.span.clone()).unwrap_or("").into()),
                        w.span.start,
                    ));
                }
            },
            None => return Err(self.unexpected()),
        };
        self.blanks_and_comment();
        let mut words = None;
        if self.peek() == Some(b';') {
            self.pos += 1;
        } else {
            self.linebreak()?;
            if self.eat_reserved("in") {
                let mut list = Vec::new();
                loop {
                    self.blanks_and_comment();
                    if !self.at_word() {
                        break;
                    }
                    list.push(self.word(Ctx::Arg)?);
                }
                match self.peek() {
                    Some(b';') => self.pos += 1,
                    Some(b'\n') => {
                        self.newline()?;
                    }
                    None => return Err(self.error(ErrorKind::UnexpectedEnd("`do`"), self.pos)),
                    Some(_) => return Err(self.unexpected()),
                }
                words = Some(list);
            }
        }
        self.linebreak()?;
        let body = self.do_group()?;
        Ok(Compound::For {
            select,
            var,
            words,
            body,
        })
    }

    /// `do … done`, or bash's older `{ … }`.
    fn do_group(&mut self) -> R<List> {
        self.blanks_and_comment();
        if self.eat_reserved("{") {
            let body = self.body(End::Words(&["}"]))?;
            self.expect_reserved("}")?;
            return Ok(body);
        }
        self.expect_reserved("do")?;
        let body = self.body(End::Words(&["done"]))?;
        self.expect_reserved("done")?;
        Ok(body)
    }

    #[inline(never)]
    fn case_clause(&mut self) -> R<Compound> {
        self.blanks();
        if !self.at_word() {
            return Err(self.unexpected());
        }
        let subject = self.word(Ctx::Arg)?;
        self.linebreak()?;
        self.expect_reserved("in")?;
        let mut arms = Vec::new();
        loop {
            self.linebreak()?;
            if self.eat_reserved("esac") {
                break;
            }
            if self.peek() == Some(b'(') {
                self.pos += 1;
            }
            let mut patterns = Vec::new();
            loop {
                self.blanks();
                if !self.at_word() {
                    return Err(self.unexpected());
                }
                patterns.push(self.word(Ctx::Arg)?);
                self.blanks();
                match self.peek() {
                    Some(b'|') => self.pos += 1,
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    None => return Err(self.error(ErrorKind::UnexpectedEnd("`)`"), self.pos)),
                    Some(_) => return Err(self.unexpected()),
                }
            }
            let body = self.list(End::CaseArm)?;
            arms.push(CaseArm { patterns, body });
            if self.starts_with(";;&") {
                self.pos += 3;
            } else if self.starts_with(";;") || self.starts_with(";&") {
                self.pos += 2;
            } else {
                self.expect_reserved("esac")?;
                break;
            }
        }
        Ok(Compound::Case { subject, arms })
    }

    /// `[[ … ]]`, after the `[[`.
    #[inline(never)]
    fn cond(&mut self) -> R<Compound> {
        let open = self.pos - 2;
        let mut words = Vec::new();
        loop {
            loop {
                self.blanks();
                if !self.newline()? {
                    break;
                }
            }
            if self.eat_reserved("]]") {
                return Ok(Compound::Cond(words));
            }
            let start = self.pos;
            let single = |p: &Self, s: &str| Word {
                parts: vec![Part::Lit {
                    text: s.to_string(),
                    quoted: false,
                }],
                span: start..p.pos,
            };
            match self.peek() {
                None => return Err(self.unterminated("[[", open)),
                Some(_) if self.starts_with("&&") || self.starts_with("||") => {
                    self.pos += 2;
                    let op = self.src.get(start..self.pos).unwrap_or("&&").to_string();
                    words.push(single(self, &op));
                }
                Some(c @ (b'(' | b')' | b'<' | b'>' | b'!' | b';' | b'&' | b'|')) => {
                    self.pos += 1;
                    words.push(single(self, &(c as char).to_string()));
                }
                Some(_) => {
                    let word = self.word(Ctx::Cond)?;
                    if word.span.is_empty() {
                        return Err(self.unexpected());
                    }
                    words.push(word);
                }
            }
        }
    }

    /// `function name [()] body`, after the keyword.
    #[inline(never)]
    fn function_keyword(&mut self) -> R<Command> {
        let start = self.pos - 8;
        self.blanks();
        if !self.at_word() {
            return Err(self.unexpected());
        }
        let name_word = self.word(Ctx::Arg)?;
        let Some(name) = name_word.plain().map(str::to_string) else {
            return Err(self.error(
                ErrorKind::Unexpected(self.src.get(name_word.span.clone()).unwrap_or("").into()),
                name_word.span.start,
            ));
        };
        self.blanks();
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.blanks();
            if self.peek() != Some(b')') {
                return Err(self.unexpected());
            }
            self.pos += 1;
        }
        self.function_body(name, start)
    }

    fn function_body(&mut self, name: String, start: usize) -> R<Command> {
        self.linebreak()?;
        let starts_compound = matches!(
            self.reserved(),
            Some("{" | "if" | "while" | "until" | "for" | "select" | "case" | "[[")
        ) || self.peek() == Some(b'(');
        if !starts_compound {
            return Err(match self.peek() {
                None => self.error(ErrorKind::UnexpectedEnd("a function body"), self.pos),
                Some(_) => self.unexpected(),
            });
        }
        let body = self.command()?;
        Ok(Command::Function(Box::new(Function {
            name,
            body,
            span: start..self.pos,
        })))
    }

    /// `coproc [NAME] command`, after the keyword.
    #[inline(never)]
    fn coproc(&mut self) -> R<Command> {
        self.blanks();
        let compound_next = |p: &Self| {
            matches!(
                p.reserved(),
                Some("{" | "if" | "while" | "until" | "for" | "select" | "case" | "[[")
            ) || p.peek() == Some(b'(')
        };
        let mut name = None;
        if !compound_next(self) && self.at_word() && !self.at_redirect() {
            let save = self.pos;
            let word = self.word(Ctx::Arg)?;
            self.blanks();
            match word.plain() {
                Some(n) if valid_name(n) && compound_next(self) => name = Some(n.to_string()),
                _ => self.pos = save,
            }
        }
        let body = self.command()?;
        Ok(Command::Coproc(Box::new(Coproc { name, body })))
    }

    /// A simple command, or a function definition `name () body`.
    #[inline(never)]
    fn simple(&mut self) -> R<Command> {
        let start = self.pos;
        let mut simple = Simple {
            assignments: Vec::new(),
            words: Vec::new(),
            redirects: Vec::new(),
            span: start..start,
        };
        let mut end = start;
        loop {
            self.blanks();
            if self.at_redirect() {
                simple.redirects.push(self.redirect()?);
                end = self.pos;
                continue;
            }
            if !self.at_word() || self.peek() == Some(b'#') {
                break;
            }
            if simple.words.is_empty()
                && let Some(a) = self.assignment()?
            {
                simple.assignments.push(a);
                end = self.pos;
                continue;
            }
            let declares = simple.words.first().and_then(Word::plain).is_some_and(|w| {
                matches!(w, "declare" | "typeset" | "local" | "export" | "readonly")
            });
            if declares && let Some(word) = self.declaration_arg()? {
                simple.words.push(word);
                end = self.pos;
                continue;
            }
            let word = self.word(Ctx::Arg)?;
            end = self.pos;
            if simple.words.is_empty()
                && simple.assignments.is_empty()
                && simple.redirects.is_empty()
            {
                let save = self.pos;
                self.blanks();
                if self.peek() == Some(b'(') {
                    let open = self.pos;
                    self.pos += 1;
                    self.blanks();
                    if self.peek() == Some(b')') {
                        self.pos += 1;
                        let Some(name) = word.plain().map(str::to_string) else {
                            return Err(self.error(
                                ErrorKind::Unexpected(
                                    self.src.get(word.span.clone()).unwrap_or("").into(),
                                ),
                                word.span.start,
                            ));
                        };
                        return self.function_body(name, start);
                    }
                    self.pos = open;
                    return Err(self.unexpected());
                }
                self.pos = save;
            }
            simple.words.push(word);
        }
        if simple.words.is_empty() && simple.assignments.is_empty() && simple.redirects.is_empty() {
            return Err(self.unexpected());
        }
        simple.span = start..end;
        Ok(Command::Simple(simple))
    }

    /// `NAME=…`, `NAME+=…`, `NAME[i]=…` at the current position, if that is what is
    /// written there.
    #[inline(never)]
    fn assignment(&mut self) -> R<Option<Assignment>> {
        let start = self.pos;
        let mut i = self.pos;
        let name_len = self.b[i..self.limit]
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
            .unwrap_or(self.limit - i);
        if name_len == 0 || self.b[i].is_ascii_digit() {
            return Ok(None);
        }
        i += name_len;
        let mut index_range = None;
        if self.b.get(i) == Some(&b'[') && i < self.limit {
            // The subscript: balanced brackets, no blank or operator outside quotes.
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match self.b.get(j) {
                    Some(b'[') => depth += 1,
                    Some(b']') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Some(&c) if is_meta(c) && c != b'<' && c != b'>' => return Ok(None),
                    None => return Ok(None),
                    _ => {}
                }
                j += 1;
                if j >= self.limit {
                    return Ok(None);
                }
            }
            index_range = Some(i + 1..j);
            i = j + 1;
        }
        let append = self.b.get(i) == Some(&b'+');
        if append {
            i += 1;
        }
        if i >= self.limit || self.b.get(i) != Some(&b'=') {
            return Ok(None);
        }
        let name = self.src[start..start + name_len].to_string();
        let index = match index_range {
            Some(r) => {
                self.pos = r.start;
                let w = self.word(Ctx::Index)?;
                Some(w)
            }
            None => None,
        };
        self.pos = i + 1;
        let value = if self.peek() == Some(b'(') {
            Value::Array(self.array_elements()?)
        } else {
            Value::Scalar(self.value_word()?)
        };
        Ok(Some(Assignment {
            name,
            index,
            append,
            value,
            span: start..self.pos,
        }))
    }

    /// The value of a scalar assignment (possibly empty: `X= cmd`).
    fn value_word(&mut self) -> Result<Word, ParseError> {
        if self.at_word() {
            self.word(Ctx::Value)
        } else {
            Ok(Word {
                parts: vec![],
                span: self.pos..self.pos,
            })
        }
    }

    /// `(a b [k]=v …)` after `NAME=`.
    fn array_elements(&mut self) -> R<Vec<(Option<Word>, Word)>> {
        let open = self.pos;
        self.pos += 1;
        let mut elements = Vec::new();
        loop {
            self.linebreak()?;
            match self.peek() {
                Some(b')') => {
                    self.pos += 1;
                    return Ok(elements);
                }
                None => return Err(self.unterminated("(", open)),
                _ if !self.at_word() => return Err(self.unexpected()),
                _ => {}
            }
            if self.peek() == Some(b'[')
                && let Some(close) = self.b[self.pos..self.limit].iter().position(|&c| c == b']')
                && self.b.get(self.pos + close + 1) == Some(&b'=')
            {
                let key_end = self.pos + close;
                self.pos += 1;
                let saved = self.limit;
                self.limit = key_end;
                let key = self.word(Ctx::Index);
                self.limit = saved;
                let key = key?;
                self.pos = key_end + 2;
                let value = self.value_word()?;
                elements.push((Some(key), value));
            } else {
                elements.push((None, self.word(Ctx::Value)?));
            }
        }
    }

    /// An argument of `declare`/`export`/`local`/…: an assignment there is read as one
    /// (`export X=~/bin` expands the tilde, `declare -a A=(1 2)` is an array). The word
    /// returned covers it, as written.
    fn declaration_arg(&mut self) -> R<Option<Word>> {
        let start = self.pos;
        let Some(a) = self.assignment()? else {
            return Ok(None);
        };
        let mut parts = vec![Part::Lit {
            text: format!("{}{}=", a.name, if a.append { "+" } else { "" }),
            quoted: false,
        }];
        match a.value {
            Value::Scalar(w) => parts.extend(w.parts),
            Value::Array(_) => {
                // An array value is kept as its text: `declare -a A=(…)` names an
                // array, and the walker reads the elements of an assignment.
                parts = vec![Part::Lit {
                    text: self.src.get(start..self.pos).unwrap_or("").to_string(),
                    quoted: true,
                }];
            }
        }
        Ok(Some(Word {
            parts,
            span: start..self.pos,
        }))
    }

    #[inline(never)]
    fn redirect(&mut self) -> R<Redirect> {
        let start = self.pos;
        let mut fd = None;
        let digits = self.b[self.pos..self.limit]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            let n = self.src[self.pos..self.pos + digits]
                .parse::<u32>()
                .unwrap_or(u32::MAX);
            fd = Some(Fd::Number(n));
            self.pos += digits;
        } else if self.peek() == Some(b'{')
            && let Some(close) = self.b[self.pos..self.limit].iter().position(|&c| c == b'}')
        {
            fd = Some(Fd::Var(
                self.src[self.pos + 1..self.pos + close].to_string(),
            ));
            self.pos += close + 1;
        }
        let ops: [(&str, RedirOp); 12] = [
            ("&>>", RedirOp::AppendOutErr),
            ("<<<", RedirOp::HereString),
            ("<<-", RedirOp::Heredoc),
            ("&>", RedirOp::OutErr),
            ("<<", RedirOp::Heredoc),
            ("<>", RedirOp::ReadWrite),
            ("<&", RedirOp::DupIn),
            (">>", RedirOp::Append),
            (">|", RedirOp::Clobber),
            (">&", RedirOp::DupOut),
            ("<", RedirOp::In),
            (">", RedirOp::Out),
        ];
        let Some(&(text, op)) = ops.iter().find(|(t, _)| self.starts_with(t)) else {
            return Err(self.unexpected());
        };
        self.pos += text.len();
        self.blanks();
        // `> 2>&1`: bash reads `2>` as the next redirection, leaving none for `>`.
        // A `#` there starts a comment, so the target is missing.
        if !self.at_word()
            || self.peek() == Some(b'#')
            || (self.at_redirect() && !matches!(op, RedirOp::DupIn | RedirOp::DupOut))
        {
            return Err(match self.peek() {
                None => self.error(ErrorKind::UnexpectedEnd("a redirection target"), self.pos),
                Some(_) => self.unexpected(),
            });
        }
        let word = self.word(Ctx::Arg)?;
        let target = if op == RedirOp::Heredoc {
            let quoted = word.has_quotes()
                || self
                    .src
                    .get(word.span.clone())
                    .is_some_and(|t| t.contains(['\\', '\'', '"']));
            let delimiter = delimiter_text(self.src, &word);
            let id = self.bodies.len();
            self.bodies.push(None);
            self.pending.push(Pending {
                id,
                delimiter: delimiter.clone(),
                strip_tabs: text == "<<-",
                quoted,
            });
            Target::Heredoc(Heredoc {
                delimiter,
                quoted,
                strip_tabs: text == "<<-",
                body: Word {
                    parts: vec![],
                    span: id..id,
                },
            })
        } else {
            Target::Word(word)
        };
        Ok(Redirect {
            fd,
            op,
            target,
            span: start..self.pos,
        })
    }

    // -----------------------------------------------------------------------------
    // Heredocs

    /// Reads the bodies of the heredocs begun on the line that just ended.
    fn read_heredocs(&mut self) -> R<()> {
        for p in std::mem::take(&mut self.pending) {
            let start = self.pos;
            let mut body_end = self.limit;
            let mut after = self.limit;
            let mut i = start;
            while i < self.limit {
                let line_end = self.b[i..self.limit]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.limit, |n| i + n);
                let line = self.src.get(i..line_end).unwrap_or("");
                let line = if p.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == p.delimiter {
                    body_end = i;
                    after = (line_end + 1).min(self.limit);
                    break;
                }
                i = line_end + 1;
            }
            let body = if p.quoted {
                let mut text = String::new();
                for line in self
                    .src
                    .get(start..body_end)
                    .unwrap_or("")
                    .split_inclusive('\n')
                {
                    text.push_str(if p.strip_tabs {
                        line.trim_start_matches('\t')
                    } else {
                        line
                    });
                }
                Word {
                    parts: vec![Part::Lit { text, quoted: true }],
                    span: start..body_end,
                }
            } else {
                let saved = self.limit;
                self.pos = start;
                self.limit = body_end;
                let body = self.heredoc_body(p.strip_tabs);
                self.limit = saved;
                body?
            };
            if let Some(slot) = self.bodies.get_mut(p.id) {
                *slot = Some(body);
            }
            self.pos = after;
        }
        Ok(())
    }

    /// Heredocs whose line never ended: their bodies are empty, as in bash.
    fn end_heredocs(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            if let Some(slot) = self.bodies.get_mut(p.id) {
                *slot = Some(Word {
                    parts: vec![Part::Lit {
                        text: String::new(),
                        quoted: true,
                    }],
                    span: self.pos..self.pos,
                });
            }
        }
    }

    /// An unquoted heredoc's body (up to `self.limit`): `$…` and backticks expand,
    /// a backslash escapes only `$`, `` ` ``, `\` and newline, quotes are literal.
    fn heredoc_body(&mut self, strip_tabs: bool) -> R<Word> {
        let start = self.pos;
        let mut parts = vec![Part::Lit {
            text: String::new(),
            quoted: true,
        }];
        let mut lit = String::new();
        let mut line_start = true;
        while let Some(c) = self.peek() {
            if line_start && strip_tabs && c == b'\t' {
                self.pos += 1;
                continue;
            }
            line_start = false;
            match c {
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(e @ (b'$' | b'`' | b'\\')) => {
                        lit.push(e as char);
                        self.pos += 2;
                    }
                    _ => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                },
                b'$' => {
                    flush(&mut lit, &mut parts, true);
                    self.dollar(&mut parts, true)?;
                }
                b'`' => {
                    flush(&mut lit, &mut parts, true);
                    self.backtick(&mut parts, true)?;
                }
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                    line_start = ch == '\n';
                }
            }
        }
        flush(&mut lit, &mut parts, true);
        Ok(Word {
            parts,
            span: start..self.pos,
        })
    }

    /// Moves the heredoc bodies read at newlines into their redirections.
    fn fill(&mut self, list: &mut List) {
        if self.bodies.is_empty() {
            return;
        }
        let mut bodies = std::mem::take(&mut self.bodies);
        fill_list(list, &mut bodies);
    }

    // -----------------------------------------------------------------------------
    // Words

    fn word(&mut self, ctx: Ctx) -> R<Word> {
        let start = self.pos;
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        let quoted_ctx = ctx.quoted();
        let mut tilde_ok = !matches!(ctx, Ctx::Index | Ctx::ParamArith);
        // Inside `[[ ]]`, parentheses are part of a word once it has begun.
        let mut paren_depth = 0usize;
        while let Some(c) = self.peek() {
            let begun = self.pos > start;
            match ctx {
                Ctx::ParamArg { .. } => {
                    if c == b'}' {
                        break;
                    }
                }
                Ctx::ParamPattern { .. } => {
                    if c == b'}' || c == b'/' {
                        break;
                    }
                }
                Ctx::ParamArith => {
                    if c == b'}' || (c == b':' && paren_depth == 0) {
                        break;
                    }
                    if c == b'(' {
                        paren_depth += 1;
                    } else if c == b')' {
                        paren_depth = paren_depth.saturating_sub(1);
                    }
                }
                Ctx::Index => {
                    if c == b']' && paren_depth == 0 {
                        break;
                    }
                    if c == b'[' {
                        paren_depth += 1;
                    } else if c == b']' {
                        paren_depth -= 1;
                    }
                }
                Ctx::Cond => {
                    if matches!(c, b' ' | b'\t' | b'\n' | b';' | b'&') {
                        break;
                    }
                    if matches!(c, b'(' | b')' | b'|' | b'<' | b'>') {
                        if c == b'(' && begun {
                            paren_depth += 1;
                        } else if c == b')' && paren_depth > 0 {
                            paren_depth -= 1;
                        } else if !begun || c == b')' {
                            break;
                        }
                        lit.push(c as char);
                        self.pos += 1;
                        continue;
                    }
                }
                Ctx::Arg | Ctx::Value => {
                    if c == b'(' && !lit.is_empty() && lit.ends_with(['@', '!', '?', '*', '+']) {
                        // An extended glob: @(…), !(…), +(…), *(…), ?(…).
                        let op = lit.pop().unwrap_or('@');
                        flush(&mut lit, &mut parts, false);
                        let open = self.pos;
                        let end = self.balanced_parens(open)?;
                        let mut text = op.to_string();
                        text.push_str(self.src.get(open..end).unwrap_or(""));
                        parts.push(Part::ExtGlob(text));
                        self.pos = end;
                        continue;
                    }
                    if (c == b'<' || c == b'>') && !begun && self.peek_at(1) == Some(b'(') {
                        let open = self.pos;
                        self.pos += 2;
                        let script = self.nested(open, if c == b'<' { "<(" } else { ">(" })?;
                        parts.push(Part::ProcSub {
                            script: Box::new(script),
                            output: c == b'>',
                        });
                        continue;
                    }
                    if is_meta(c) {
                        break;
                    }
                }
            }
            if c == b'~'
                && tilde_ok
                && let Some(end) = self.tilde_end(ctx)
            {
                flush(&mut lit, &mut parts, false);
                parts.push(Part::Tilde(self.src[self.pos + 1..end].to_string()));
                self.pos = end;
                tilde_ok = false;
                continue;
            }
            tilde_ok = false;
            match c {
                b'\\' => match self.peek_at(1) {
                    None => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                    Some(b'\n') => self.pos += 2,
                    Some(_) => {
                        flush(&mut lit, &mut parts, quoted_ctx);
                        self.pos += 1;
                        let ch = self.char_here();
                        parts.push(Part::Lit {
                            text: ch.to_string(),
                            quoted: true,
                        });
                        self.pos += ch.len_utf8();
                    }
                },
                b'\'' if !quoted_ctx => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    let open = self.pos;
                    let Some(close) = self.b[open + 1..self.limit]
                        .iter()
                        .position(|&c| c == b'\'')
                    else {
                        return Err(self.unterminated("'", open));
                    };
                    let text = self.src[open + 1..open + 1 + close].to_string();
                    parts.push(Part::Lit { text, quoted: true });
                    self.pos = open + close + 2;
                }
                b'"' => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    self.double_quoted(&mut parts)?;
                }
                b'$' => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    self.dollar(&mut parts, quoted_ctx)?;
                }
                b'`' => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    self.backtick(&mut parts, quoted_ctx)?;
                }
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                    if ctx == Ctx::Value && ch == ':' {
                        tilde_ok = true;
                    }
                }
            }
        }
        flush(&mut lit, &mut parts, quoted_ctx);
        Ok(Word {
            parts,
            span: start..self.pos,
        })
    }

    /// Where a tilde prefix at the current position ends, if it is one bash expands:
    /// `~`, `~name`, `~+`, `~-`, `~+N`, followed by `/` or the end of the word.
    fn tilde_end(&self, ctx: Ctx) -> Option<usize> {
        let mut i = self.pos + 1;
        while i < self.limit
            && self.b.get(i).is_some_and(|&c| {
                c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'.')
            })
        {
            i += 1;
        }
        let next = if i < self.limit {
            self.b.get(i).copied()
        } else {
            None
        };
        let ends = match next {
            None | Some(b'/') => true,
            Some(b':') => ctx == Ctx::Value,
            Some(b'}') => ctx.in_braces(),
            Some(c) => is_meta(c),
        };
        ends.then_some(i)
    }

    /// `"…"` at the current position.
    fn double_quoted(&mut self, parts: &mut Vec<Part>) -> R<()> {
        let open = self.pos;
        self.enter()?;
        self.pos += 1;
        parts.push(Part::Lit {
            text: String::new(),
            quoted: true,
        });
        let mut lit = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("\"", open));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(e @ (b'$' | b'`' | b'"' | b'\\')) => {
                        lit.push(e as char);
                        self.pos += 2;
                    }
                    _ => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                },
                b'$' => {
                    flush(&mut lit, parts, true);
                    self.dollar(parts, true)?;
                }
                b'`' => {
                    flush(&mut lit, parts, true);
                    self.backtick(parts, true)?;
                }
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
        flush(&mut lit, parts, true);
        self.leave();
        Ok(())
    }

    /// `$…` at the current position.
    fn dollar(&mut self, parts: &mut Vec<Part>, quoted: bool) -> R<()> {
        let at = self.pos;
        match self.peek_at(1) {
            Some(b'\'') if !quoted => {
                self.pos += 2;
                let text = self.ansi_c(at)?;
                parts.push(Part::Lit { text, quoted: true });
            }
            Some(b'"') if !quoted => {
                // `$"…"`: a translatable string, otherwise double quotes.
                self.pos += 1;
                self.double_quoted(parts)?;
            }
            Some(b'(') => {
                if self.peek_at(2) == Some(b'(') && self.arith_ahead(at + 3) {
                    self.pos += 3;
                    self.enter()?;
                    let expr = self.arith_word(at, "$((")?;
                    self.leave();
                    parts.push(Part::Arith {
                        expr: Box::new(expr),
                        quoted,
                    });
                } else {
                    self.pos += 2;
                    let script = self.nested(at, "$(")?;
                    parts.push(Part::CmdSub {
                        script: Box::new(script),
                        quoted,
                        backtick: false,
                    });
                }
            }
            Some(b'{') => {
                self.enter()?;
                let param = self.braced(quoted)?;
                self.leave();
                parts.push(Part::Param {
                    param: Box::new(param),
                    quoted,
                });
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let len = self.b[at + 1..self.limit]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
                    .unwrap_or(self.limit - at - 1);
                let name = self.src[at + 1..at + 1 + len].to_string();
                self.pos = at + 1 + len;
                parts.push(simple_param(ParamName::Var(name), quoted));
            }
            Some(c @ b'1'..=b'9') => {
                self.pos += 2;
                parts.push(simple_param(
                    ParamName::Positional(u32::from(c - b'0')),
                    quoted,
                ));
            }
            Some(c @ (b'0' | b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!')) => {
                self.pos += 2;
                parts.push(simple_param(ParamName::Special(c as char), quoted));
            }
            _ => {
                self.pos += 1;
                parts.push(Part::Lit {
                    text: "$".into(),
                    quoted,
                });
            }
        }
        Ok(())
    }

    /// A script nested in place (`$(…)`, `<(…)`), up to its `)`.
    fn nested(&mut self, open: usize, opener: &'static str) -> R<Script> {
        self.enter()?;
        let body = self.list(End::Paren).map_err(|e| match e.kind {
            ErrorKind::UnexpectedEnd(_) => self.unterminated(opener, open),
            _ => e,
        })?;
        if self.peek() != Some(b')') {
            return Err(self.unterminated(opener, open));
        }
        self.pos += 1;
        self.leave();
        Ok(Script {
            src: self.arc.clone(),
            body,
        })
    }

    /// `` `…` `` at the current position: its text unescaped, then parsed on its own.
    #[inline(never)]
    fn backtick(&mut self, parts: &mut Vec<Part>, quoted: bool) -> R<()> {
        let open = self.pos;
        self.enter()?;
        let mut text = String::new();
        self.pos += 1;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("`", open));
            };
            match c {
                b'`' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => {
                    match self.peek_at(1) {
                        Some(e @ (b'$' | b'`' | b'\\')) => {
                            text.push(e as char);
                            self.pos += 2;
                        }
                        Some(b'"') if quoted => {
                            text.push('"');
                            self.pos += 2;
                        }
                        _ => {
                            text.push('\\');
                            self.pos += 1;
                        }
                    }
                    continue;
                }
                _ => {
                    let ch = self.char_here();
                    text.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
        let arc: Arc<str> = Arc::from(text.as_str());
        let mut inner = Parser::new(&text, arc.clone(), self.depth);
        let (body, error, _) = inner.program();
        // bash parses a backtick substitution only when it runs it: one that does not
        // parse is an error of that run, not of the line. Its text stays in `src`
        // for whoever reads it then (the walk does).
        let mut script = Script {
            src: arc,
            body: if error.is_some() { Vec::new() } else { body },
        };
        if error.is_none() {
            inner.fill(&mut script.body);
        }
        self.leave();
        parts.push(Part::CmdSub {
            script: Box::new(script),
            quoted,
            backtick: true,
        });
        Ok(())
    }

    /// `$'…'` after the opening quote, decoded.
    #[inline(never)]
    fn ansi_c(&mut self, open: usize) -> R<String> {
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("$'", open));
            };
            self.pos += 1;
            match c {
                b'\'' => return Ok(out),
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.unterminated("$'", open));
                    };
                    self.pos += 1;
                    match e {
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'r' => out.push('\r'),
                        b'a' => out.push('\x07'),
                        b'b' => out.push('\x08'),
                        b'f' => out.push('\x0c'),
                        b'v' => out.push('\x0b'),
                        b'e' | b'E' => out.push('\x1b'),
                        b'\\' | b'\'' | b'"' | b'?' => out.push(e as char),
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                match self.peek() {
                                    Some(d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
                        }
                        b'x' | b'u' | b'U' => {
                            let max = match e {
                                b'x' => 2,
                                b'u' => 4,
                                _ => 8,
                            };
                            let mut v = 0u32;
                            let mut n = 0;
                            while n < max {
                                match self.peek().and_then(|d| (d as char).to_digit(16)) {
                                    Some(d) => {
                                        v = v.wrapping_mul(16).wrapping_add(d);
                                        self.pos += 1;
                                        n += 1;
                                    }
                                    None => break,
                                }
                            }
                            if n == 0 {
                                out.push('\\');
                                out.push(e as char);
                            } else {
                                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                            }
                        }
                        b'c' => match self.peek() {
                            Some(x) => {
                                self.pos += 1;
                                out.push(char::from(x.to_ascii_uppercase() ^ 0x40));
                            }
                            None => return Err(self.unterminated("$'", open)),
                        },
                        _ => {
                            out.push('\\');
                            self.pos -= 1;
                            let ch = self.char_here();
                            out.push(ch);
                            self.pos += ch.len_utf8();
                        }
                    }
                }
                _ => {
                    self.pos -= 1;
                    let ch = self.char_here();
                    out.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
    }

    /// `${…}` at the current position (on the `$`).
    #[inline(never)]
    fn braced(&mut self, quoted: bool) -> R<Param> {
        let open = self.pos;
        self.pos += 2;
        let mut param = Param {
            name: ParamName::Var(String::new()),
            index: None,
            length: false,
            indirect: false,
            op: ParamOp::None,
        };
        let name_start = |c: Option<u8>| {
            c.is_some_and(|c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, b'_' | b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-')
            })
        };
        if self.peek() == Some(b'#') && name_start(self.peek_at(1)) && self.peek_at(1) != Some(b'}')
        {
            param.length = true;
            self.pos += 1;
        } else if self.peek() == Some(b'!') && name_start(self.peek_at(1)) {
            param.indirect = true;
            self.pos += 1;
        }
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let len = self.b[self.pos..self.limit]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
                    .unwrap_or(self.limit - self.pos);
                param.name = ParamName::Var(self.src[self.pos..self.pos + len].to_string());
                self.pos += len;
            }
            Some(c) if c.is_ascii_digit() => {
                let len = self.b[self.pos..self.limit]
                    .iter()
                    .position(|c| !c.is_ascii_digit())
                    .unwrap_or(self.limit - self.pos);
                let n = self.src[self.pos..self.pos + len]
                    .parse::<u32>()
                    .unwrap_or(u32::MAX);
                param.name = if n == 0 {
                    ParamName::Special('0')
                } else {
                    ParamName::Positional(n)
                };
                self.pos += len;
            }
            Some(c @ (b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!')) => {
                param.name = ParamName::Special(c as char);
                self.pos += 1;
            }
            _ => {
                param.op = ParamOp::Unknown;
                self.skip_braced(open)?;
                return Ok(param);
            }
        }
        if self.peek() == Some(b'[') && matches!(param.name, ParamName::Var(_)) {
            self.pos += 1;
            let index = self.word(Ctx::Index)?;
            if self.peek() != Some(b']') {
                return Err(self.unterminated("${", open));
            }
            self.pos += 1;
            param.index = Some(index);
        }
        let arg = |p: &mut Self| p.word(Ctx::ParamArg { quoted });
        let Some(c) = self.peek() else {
            return Err(self.unterminated("${", open));
        };
        let colon = c == b':';
        let op_char = if colon { self.peek_at(1) } else { Some(c) };
        param.op = match (colon, op_char) {
            (false, Some(b'}')) => ParamOp::None,
            (_, Some(o @ (b'-' | b'=' | b'?' | b'+'))) => {
                self.pos += 1 + usize::from(colon);
                let word = arg(self)?;
                match o {
                    b'-' => ParamOp::Default { colon, word },
                    b'=' => ParamOp::Assign { colon, word },
                    b'?' => ParamOp::Error { colon, word },
                    _ => ParamOp::Alternative { colon, word },
                }
            }
            (true, _) => {
                self.pos += 1;
                let offset = self.word(Ctx::ParamArith)?;
                let length = if self.peek() == Some(b':') {
                    self.pos += 1;
                    Some(self.word(Ctx::ParamArith)?)
                } else {
                    None
                };
                ParamOp::Substring { offset, length }
            }
            (false, Some(o @ (b'#' | b'%'))) => {
                self.pos += 1;
                let longest = self.peek() == Some(o);
                if longest {
                    self.pos += 1;
                }
                let pattern = arg(self)?;
                if o == b'#' {
                    ParamOp::RemovePrefix { longest, pattern }
                } else {
                    ParamOp::RemoveSuffix { longest, pattern }
                }
            }
            (false, Some(b'/')) => {
                self.pos += 1;
                let (all, anchor) = match self.peek() {
                    Some(b'/') => (true, Anchor::None),
                    Some(b'#') => (false, Anchor::Start),
                    Some(b'%') => (false, Anchor::End),
                    _ => (false, Anchor::None),
                };
                if all || anchor != Anchor::None {
                    self.pos += 1;
                }
                let pattern = self.word(Ctx::ParamPattern { quoted })?;
                let replacement = if self.peek() == Some(b'/') {
                    self.pos += 1;
                    arg(self)?
                } else {
                    Word {
                        parts: vec![],
                        span: self.pos..self.pos,
                    }
                };
                ParamOp::Replace {
                    all,
                    anchor,
                    pattern,
                    replacement,
                }
            }
            (false, Some(o @ (b'^' | b','))) => {
                self.pos += 1;
                let all = self.peek() == Some(o);
                if all {
                    self.pos += 1;
                }
                let pattern = arg(self)?;
                ParamOp::Case {
                    upper: o == b'^',
                    all,
                    pattern,
                }
            }
            (false, Some(b'@')) => {
                self.pos += 1;
                match self.peek() {
                    Some(t) if t.is_ascii_alphabetic() => {
                        self.pos += 1;
                        ParamOp::Transform(t as char)
                    }
                    _ => {
                        self.skip_braced(open)?;
                        return Ok(Param {
                            op: ParamOp::Unknown,
                            ..param
                        });
                    }
                }
            }
            _ => {
                self.skip_braced(open)?;
                return Ok(Param {
                    op: ParamOp::Unknown,
                    ..param
                });
            }
        };
        if self.peek() != Some(b'}') {
            return Err(self.unterminated("${", open));
        }
        self.pos += 1;
        Ok(param)
    }

    /// Skips to the `}` that closes the `${` at `open`, past nested braces and quotes.
    fn skip_braced(&mut self, open: usize) -> R<()> {
        // Only a nested `${` nests (bash closes `${x{a}` at its first `}`); quotes and
        // substitutions inside must close, as bash requires.
        let mut depth = 1usize;
        let mut scratch = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.pos += 2,
                b'\'' => {
                    let at = self.pos;
                    match self.b[self.pos + 1..self.limit]
                        .iter()
                        .position(|&c| c == b'\'')
                    {
                        Some(n) => self.pos += n + 2,
                        None => return Err(self.unterminated("'", at)),
                    }
                }
                b'"' => self.double_quoted(&mut scratch)?,
                b'`' => self.backtick(&mut scratch, false)?,
                b'$' if self.peek_at(1) == Some(b'(') => self.dollar(&mut scratch, false)?,
                b'$' if self.peek_at(1) == Some(b'{') => {
                    depth += 1;
                    self.pos += 2;
                }
                b'}' => {
                    depth -= 1;
                    self.pos += 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => self.pos += 1,
            }
            scratch.clear();
        }
        Err(self.unterminated("${", open))
    }

    /// Whether the `((` or `$((` whose body starts at `from` is arithmetic: its first
    /// unmatched `)` is followed by another `)` (else it is `$( (…) )`, nested
    /// subshells).
    fn arith_ahead(&self, from: usize) -> bool {
        let mut depth = 0usize;
        let mut i = from;
        while i < self.limit {
            match self.b.get(i) {
                Some(b'\\') => i += 1,
                Some(b'\'') => {
                    if let Some(n) = self.b[i + 1..self.limit].iter().position(|&c| c == b'\'') {
                        i += n + 1;
                    }
                }
                Some(b'(') => depth += 1,
                Some(b')') => {
                    if depth == 0 {
                        return self.b.get(i + 1) == Some(&b')');
                    }
                    depth -= 1;
                }
                _ => {}
            }
            i += 1;
        }
        true
    }

    /// An arithmetic expression up to its closing `))` (consumed): the text with its
    /// expansions, as a word.
    fn arith_word(&mut self, open: usize, opener: &'static str) -> R<Word> {
        let start = self.pos;
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut depth = 0usize;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated(opener, open));
            };
            match c {
                b')' if depth == 0 => {
                    if self.peek_at(1) != Some(b')') {
                        return Err(self.unterminated(opener, open));
                    }
                    flush(&mut lit, &mut parts, false);
                    let word = Word {
                        parts,
                        span: start..self.pos,
                    };
                    self.pos += 2;
                    return Ok(word);
                }
                b'(' | b')' => {
                    if c == b'(' {
                        depth += 1;
                    } else {
                        depth -= 1;
                    }
                    lit.push(c as char);
                    self.pos += 1;
                }
                b'$' => {
                    flush(&mut lit, &mut parts, false);
                    self.dollar(&mut parts, false)?;
                }
                b'`' => {
                    flush(&mut lit, &mut parts, false);
                    self.backtick(&mut parts, false)?;
                }
                b'"' => {
                    flush(&mut lit, &mut parts, false);
                    self.double_quoted(&mut parts)?;
                }
                b'\\' if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
    }

    /// The end of the balanced parentheses opening at `open` (quotes respected).
    fn balanced_parens(&self, open: usize) -> R<usize> {
        let mut depth = 0usize;
        let mut i = open;
        while i < self.limit {
            match self.b.get(i) {
                Some(b'\\') => i += 1,
                Some(b'\'') => match self.b[i + 1..self.limit].iter().position(|&c| c == b'\'') {
                    Some(n) => i += n + 1,
                    None => return Err(self.unterminated("'", i)),
                },
                Some(b'(') => depth += 1,
                Some(b')') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(i + 1);
                    }
                }
                Some(b'\n') | None => break,
                _ => {}
            }
            i += 1;
        }
        Err(self.unterminated("(", open))
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

/// A heredoc delimiter as bash compares it: the word with quotes removed and nothing
/// expanded.
fn delimiter_text(src: &str, word: &Word) -> String {
    let raw = src.get(word.span.clone()).unwrap_or("");
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '\\') | (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// `for ((a; b; c))`: the expression split at its top-level `;`.
fn split_arith_for(expr: &Word) -> Vec<Word> {
    let mut out = vec![Word {
        parts: vec![],
        span: expr.span.clone(),
    }];
    for part in &expr.parts {
        match part {
            Part::Lit { text, quoted } => {
                let mut pieces = text.split(';');
                if let Some(first) = pieces.next()
                    && let Some(w) = out.last_mut()
                    && !first.is_empty()
                {
                    w.parts.push(Part::Lit {
                        text: first.to_string(),
                        quoted: *quoted,
                    });
                }
                for piece in pieces {
                    out.push(Word {
                        parts: if piece.is_empty() {
                            vec![]
                        } else {
                            vec![Part::Lit {
                                text: piece.to_string(),
                                quoted: *quoted,
                            }]
                        },
                        span: expr.span.clone(),
                    });
                }
            }
            other => {
                if let Some(w) = out.last_mut() {
                    w.parts.push(other.clone());
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------
// Filling heredoc bodies in

fn fill_list(list: &mut List, bodies: &mut [Option<Word>]) {
    for item in list {
        fill_pipeline(&mut item.and_or.first, bodies);
        for (_, p) in &mut item.and_or.rest {
            fill_pipeline(p, bodies);
        }
    }
}

fn fill_pipeline(p: &mut Pipeline, bodies: &mut [Option<Word>]) {
    for stage in &mut p.stages {
        fill_command(&mut stage.command, bodies);
    }
}

fn fill_command(c: &mut Command, bodies: &mut [Option<Word>]) {
    match c {
        Command::Simple(s) => {
            for a in &mut s.assignments {
                fill_assignment(a, bodies);
            }
            for w in &mut s.words {
                fill_word(w, bodies);
            }
            fill_redirects(&mut s.redirects, bodies);
        }
        Command::Compound(compound, redirects) => {
            match compound.as_mut() {
                Compound::Brace(l) | Compound::Subshell(l) => fill_list(l, bodies),
                Compound::If {
                    branches,
                    otherwise,
                } => {
                    for (a, b) in branches {
                        fill_list(a, bodies);
                        fill_list(b, bodies);
                    }
                    if let Some(l) = otherwise {
                        fill_list(l, bodies);
                    }
                }
                Compound::While {
                    condition, body, ..
                } => {
                    fill_list(condition, bodies);
                    fill_list(body, bodies);
                }
                Compound::For { words, body, .. } => {
                    for w in words.iter_mut().flatten() {
                        fill_word(w, bodies);
                    }
                    fill_list(body, bodies);
                }
                Compound::ArithFor { parts, body } => {
                    for w in parts {
                        fill_word(w, bodies);
                    }
                    fill_list(body, bodies);
                }
                Compound::Case { subject, arms } => {
                    fill_word(subject, bodies);
                    for arm in arms {
                        for w in &mut arm.patterns {
                            fill_word(w, bodies);
                        }
                        fill_list(&mut arm.body, bodies);
                    }
                }
                Compound::Arith(w) => fill_word(w, bodies),
                Compound::Cond(words) => {
                    for w in words {
                        fill_word(w, bodies);
                    }
                }
            }
            fill_redirects(redirects, bodies);
        }
        Command::Function(f) => fill_command(&mut f.body, bodies),
        Command::Coproc(c) => fill_command(&mut c.body, bodies),
    }
}

fn fill_assignment(a: &mut Assignment, bodies: &mut [Option<Word>]) {
    if let Some(i) = &mut a.index {
        fill_word(i, bodies);
    }
    match &mut a.value {
        Value::Scalar(w) => fill_word(w, bodies),
        Value::Array(elements) => {
            for (k, v) in elements {
                if let Some(k) = k {
                    fill_word(k, bodies);
                }
                fill_word(v, bodies);
            }
        }
    }
}

fn fill_redirects(redirects: &mut [Redirect], bodies: &mut [Option<Word>]) {
    for r in redirects {
        match &mut r.target {
            Target::Word(w) => fill_word(w, bodies),
            Target::Heredoc(h) => {
                let id = h.body.span.start;
                if h.body.parts.is_empty()
                    && h.body.span.end == id
                    && let Some(body) = bodies.get_mut(id).and_then(Option::take)
                {
                    h.body = body;
                    fill_word(&mut h.body, bodies);
                }
            }
        }
    }
}

fn fill_word(w: &mut Word, bodies: &mut [Option<Word>]) {
    for part in &mut w.parts {
        match part {
            Part::Param { param, .. } => {
                if let Some(i) = &mut param.index {
                    fill_word(i, bodies);
                }
                match &mut param.op {
                    ParamOp::Default { word, .. }
                    | ParamOp::Assign { word, .. }
                    | ParamOp::Error { word, .. }
                    | ParamOp::Alternative { word, .. } => fill_word(word, bodies),
                    ParamOp::RemovePrefix { pattern, .. }
                    | ParamOp::RemoveSuffix { pattern, .. }
                    | ParamOp::Case { pattern, .. } => fill_word(pattern, bodies),
                    ParamOp::Replace {
                        pattern,
                        replacement,
                        ..
                    } => {
                        fill_word(pattern, bodies);
                        fill_word(replacement, bodies);
                    }
                    ParamOp::Substring { offset, length } => {
                        fill_word(offset, bodies);
                        if let Some(l) = length {
                            fill_word(l, bodies);
                        }
                    }
                    ParamOp::None | ParamOp::Transform(_) | ParamOp::Unknown => {}
                }
            }
            Part::CmdSub {
                script,
                backtick: false,
                ..
            }
            | Part::ProcSub { script, .. } => fill_list(&mut script.body, bodies),
            Part::Arith { expr, .. } => fill_word(expr, bodies),
            _ => {}
        }
    }
}
