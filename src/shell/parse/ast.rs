//! The syntax tree the parser builds: bash's own grammar (lists, pipelines, compound
//! commands, function definitions, redirections, heredocs, words with their quoting
//! and expansions), nothing resolved yet.
//!
//! Every node that a reader may want to show keeps its byte range in the source it was
//! parsed from ([`Script::src`]). Nested scripts parsed in place (`$(…)`, `<(…)`) share
//! their parent's source; a backtick substitution, whose text is unescaped first, has a
//! source of its own.

use std::ops::Range;
use std::sync::Arc;

/// A parsed script: a list of commands and the text their ranges point into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub src: Arc<str>,
    pub body: List,
}

/// Commands run one after the other (`a; b`, `a & b`, one per line).
pub type List = Vec<Item>;

/// One and-or list of a [`List`] and the operator that ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub and_or: AndOr,
    pub sep: Sep,
}

/// What ends an [`Item`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sep {
    /// `;`
    Semi,
    /// `&`: the item runs in the background.
    Amp,
    /// A newline.
    Newline,
    /// The end of the list (end of input, `)`, `}`, `fi`, …).
    End,
}

/// `a && b || c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AndOr {
    pub first: Pipeline,
    pub rest: Vec<(Connector, Pipeline)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    And,
    Or,
}

/// `[time [-p]] [!] a | b |& c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    pub time: bool,
    pub bang: bool,
    pub stages: Vec<Stage>,
    pub span: Range<usize>,
}

/// One command of a pipeline and how it feeds the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    pub command: Command,
    /// Followed by `|&`: stderr goes into the pipe too.
    pub pipe_all: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Simple(Simple),
    /// A compound command and the redirections written after it (`{ …; } > f`).
    Compound(Box<Compound>, Vec<Redirect>),
    Function(Box<Function>),
    Coproc(Box<Coproc>),
}

/// `NAME=v… word… redirection…` in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    pub assignments: Vec<Assignment>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// From the first assignment, word or redirection to the last (heredoc bodies,
    /// which follow the line, excluded).
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compound {
    /// `{ …; }`
    Brace(List),
    /// `( … )`
    Subshell(List),
    If {
        /// `if A; then B` and each `elif A; then B`.
        branches: Vec<(List, List)>,
        otherwise: Option<List>,
    },
    /// `while A; do B; done`, or `until` when `until` is set.
    While {
        until: bool,
        condition: List,
        body: List,
    },
    /// `for NAME [in WORDS]; do …; done` (no `in`: the positional parameters), and
    /// `select`, which has the same shape.
    For {
        select: bool,
        var: String,
        words: Option<Vec<Word>>,
        body: List,
    },
    /// `for ((init; test; step)); do …; done`
    ArithFor {
        parts: Vec<Word>,
        body: List,
    },
    Case {
        subject: Word,
        arms: Vec<CaseArm>,
    },
    /// `(( expression ))`
    Arith(Word),
    /// `[[ … ]]`: its words (operators included), for the expansions in them.
    Cond(Vec<Word>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseArm {
    pub patterns: Vec<Word>,
    pub body: List,
}

/// `name () body` or `function name [()] body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub body: Command,
    pub span: Range<usize>,
}

/// `coproc [NAME] command`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coproc {
    pub name: Option<String>,
    pub body: Command,
}

/// `NAME=value`, `NAME+=value`, `NAME[i]=value`, `NAME=(a b c)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub name: String,
    pub index: Option<Word>,
    pub append: bool,
    pub value: Value,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Scalar(Word),
    /// `(a [k]=b …)`: each element with its `[key]` when written.
    Array(Vec<(Option<Word>, Word)>),
}

/// `[fd]op target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub fd: Option<Fd>,
    pub op: RedirOp,
    pub target: Target,
    /// The operator and its target word (a heredoc's body excluded).
    pub span: Range<usize>,
}

/// The descriptor written before a redirection operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fd {
    Number(u32),
    /// `{name}>file`: bash picks a free descriptor and stores it in `name`.
    Var(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirOp {
    /// `<`
    In,
    /// `>`
    Out,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `<>`
    ReadWrite,
    /// `<&`
    DupIn,
    /// `>&`
    DupOut,
    /// `&>`
    OutErr,
    /// `&>>`
    AppendOutErr,
    /// `<<` or `<<-`
    Heredoc,
    /// `<<<`
    HereString,
}

impl RedirOp {
    pub fn as_str(self) -> &'static str {
        match self {
            RedirOp::In => "<",
            RedirOp::Out => ">",
            RedirOp::Append => ">>",
            RedirOp::Clobber => ">|",
            RedirOp::ReadWrite => "<>",
            RedirOp::DupIn => "<&",
            RedirOp::DupOut => ">&",
            RedirOp::OutErr => "&>",
            RedirOp::AppendOutErr => "&>>",
            RedirOp::Heredoc => "<<",
            RedirOp::HereString => "<<<",
        }
    }

    /// Whether it opens a file for writing (`>`, `>>`, `>|`, `<>`, `&>`, `&>>`).
    pub fn writes(self) -> bool {
        matches!(
            self,
            RedirOp::Out
                | RedirOp::Append
                | RedirOp::Clobber
                | RedirOp::ReadWrite
                | RedirOp::OutErr
                | RedirOp::AppendOutErr
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Word(Word),
    Heredoc(Heredoc),
}

/// A heredoc: its delimiter, and its body (with expansions unless the delimiter was
/// quoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heredoc {
    pub delimiter: String,
    /// Any part of the delimiter was quoted: the body is literal.
    pub quoted: bool,
    /// `<<-`: leading tabs are removed from the body's lines.
    pub strip_tabs: bool,
    pub body: Word,
}

/// A word as written: its pieces, in order, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    pub parts: Vec<Part>,
    pub span: Range<usize>,
}

impl Word {
    /// The word's text when it is made of literal text only (quotes removed); `None`
    /// when any part expands.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit { text, .. } => out.push_str(text),
                _ => return None,
            }
        }
        Some(out)
    }

    /// The word's text when it is one unquoted literal (how keywords and function
    /// names are written).
    pub fn plain(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [
                Part::Lit {
                    text,
                    quoted: false,
                },
            ] => Some(text),
            _ => None,
        }
    }

    /// Any part quoted (a quoted heredoc delimiter, `"f"` as a command name).
    pub fn has_quotes(&self) -> bool {
        self.parts.iter().any(|p| match p {
            Part::Lit { quoted, .. } => *quoted,
            Part::Param { quoted, .. } | Part::CmdSub { quoted, .. } => *quoted,
            Part::Arith { quoted, .. } => *quoted,
            _ => false,
        })
    }
}

/// One piece of a word. Quoting is recorded per piece (`quoted`): a quoted piece is
/// neither split into fields nor a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Literal text: unquoted (may hold glob and brace characters), or quoted by `'…'`,
    /// `"…"`, a backslash or `$'…'` (decoded). An empty quoted piece (`""`) still
    /// makes a word.
    Lit { text: String, quoted: bool },
    /// `~`, `~user`, `~+`, `~-`, `~+N`: the text after the tilde.
    Tilde(String),
    /// `$NAME`, `${…}`.
    Param { param: Box<Param>, quoted: bool },
    /// `$(…)` or `` `…` ``.
    CmdSub {
        script: Box<Script>,
        quoted: bool,
        backtick: bool,
    },
    /// `$((…))`: the expression as a word (its own expansions included).
    Arith { expr: Box<Word>, quoted: bool },
    /// `<(…)` (`output` false) or `>(…)`.
    ProcSub { script: Box<Script>, output: bool },
    /// An extended glob `@(…)`, `!(…)`, `+(…)`, `*(…)`, `?(…)`, as written.
    ExtGlob(String),
}

/// A parameter expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: ParamName,
    /// `${a[i]}`: the subscript (`@` and `*` are words too).
    pub index: Option<Word>,
    /// `${#x}`
    pub length: bool,
    /// `${!x}`
    pub indirect: bool,
    pub op: ParamOp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamName {
    Var(String),
    /// `$1`, `${10}` (`$0` is [`ParamName::Special`]).
    Positional(u32),
    /// `@ * # ? - $ ! 0`
    Special(char),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamOp {
    None,
    /// `-` / `:-`
    Default {
        colon: bool,
        word: Word,
    },
    /// `=` / `:=`
    Assign {
        colon: bool,
        word: Word,
    },
    /// `?` / `:?`
    Error {
        colon: bool,
        word: Word,
    },
    /// `+` / `:+`
    Alternative {
        colon: bool,
        word: Word,
    },
    /// `#pattern` / `##pattern`
    RemovePrefix {
        longest: bool,
        pattern: Word,
    },
    /// `%pattern` / `%%pattern`
    RemoveSuffix {
        longest: bool,
        pattern: Word,
    },
    /// `/pat/rep`, `//pat/rep`, `/#pat/rep`, `/%pat/rep`
    Replace {
        all: bool,
        anchor: Anchor,
        pattern: Word,
        replacement: Word,
    },
    /// `:offset[:length]` (arithmetic, as words).
    Substring {
        offset: Word,
        length: Option<Word>,
    },
    /// `^ ^^ , ,,` with an optional pattern.
    Case {
        upper: bool,
        all: bool,
        pattern: Word,
    },
    /// `@Q`, `@E`, `@P`, `@A`, `@a`, `@U`, `@u`, `@L`, `@K`, `@k`.
    Transform(char),
    /// `${!prefix*}`, `${!prefix@}`, `${!a[@]}` and anything else it cannot follow.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    None,
    Start,
    End,
}
