//! What the walk yields: the simple commands with their words, origins, joints and
//! redirections, what it could not read, and the context it starts from. Apart from
//! the walker so a reader of the walk finds its output in one place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::super::ast::RedirOp;
use super::super::expand::Field;
use super::super::parser::ParseError;
use super::program_name;

/// What the walk knows before the command runs.
pub struct Context<'a> {
    /// The environment the command gets.
    pub env: &'a BTreeMap<String, String>,
    /// Where it starts (`None`: unknown).
    pub cwd: Option<&'a Path>,
}

/// Where a simple command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The line itself, its compound commands, and function bodies where defined.
    Line,
    /// A string run as a script (`bash -c`, `eval`, `su -c`, `watch`, a shell's stdin).
    Script,
    /// A command substitution or process substitution.
    Substitution,
    /// A function body, run by a call.
    Call,
    /// A trap's action.
    Trap,
    /// `find -exec`.
    Exec,
}

/// How a command follows the previous one of its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joint {
    First,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `;`, `&` or a newline
    Seq,
    /// `|`
    Pipe,
}

/// One redirection, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirection {
    /// The descriptor written before the operator.
    pub fd: Option<u32>,
    pub op: RedirOp,
    /// The target word (`None` for a heredoc).
    pub target: Option<Field>,
    /// A here-string's or heredoc's text, when known.
    pub here: Option<String>,
    /// As written.
    pub text: String,
}

impl Redirection {
    /// The descriptor it redirects (`>` is 1, `<` is 0, `&>` is both, shown as 1).
    pub fn fd(&self) -> u32 {
        self.fd.unwrap_or(match self.op {
            RedirOp::In
            | RedirOp::ReadWrite
            | RedirOp::DupIn
            | RedirOp::Heredoc
            | RedirOp::HereString => 0,
            _ => 1,
        })
    }
}

/// One simple command of the line, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The program and its arguments after expansion and after the wrappers (empty
    /// for a command of redirections only).
    pub argv: Vec<Field>,
    /// Its `NAME=value` prefixes.
    pub assignments: Vec<(String, Field)>,
    pub redirects: Vec<Redirection>,
    /// The wrappers looked through, outermost first (`sudo`, `timeout`, …).
    pub wrappers: Vec<String>,
    /// The command as written, from its program name (or the first wrapper the
    /// interceptor shows, see [`wrappers::routed`]) to its end, with its program name
    /// reduced (`\cat` and `/usr/bin/cat` are `cat`), and the redirections of the
    /// compound commands around it appended; heredoc bodies excluded.
    pub text: String,
    /// The directory it runs in (`None`: unknown).
    pub cwd: Option<PathBuf>,
    /// A root it runs under (`chroot`), `None` for `/`.
    pub root: Option<PathBuf>,
    pub origin: Origin,
    /// How many strings-run-as-scripts deep it is.
    pub depth: usize,
    /// Read where its function is defined: its parameters are unknown.
    pub defining: bool,
    /// Inside a command substitution (its output is data for another command).
    pub substituted: bool,
    /// Which pipeline it is in (unique in the walk) and its stage.
    pub pipeline: usize,
    pub stage: usize,
    pub joint: Joint,
    pub piped_stdin: bool,
    pub piped_stdout: bool,
    pub background: bool,
    /// A `timeout` bounds it.
    pub bounded: bool,
    /// Run by `xargs`, which turned its stdin into arguments.
    pub via_xargs: bool,
}

impl SimpleCommand {
    /// The program's name, when known (`/usr/bin/rm` is `rm`).
    pub fn name(&self) -> Option<&str> {
        self.argv
            .first()
            .filter(|f| f.known())
            .map(|f| program_name(&f.text))
    }

    /// The canonical line `deny` rules are matched against (see [`super::super::render`]).
    pub fn rendered(&self) -> String {
        super::super::render::render(self)
    }
}

/// A part of the text that could not be parsed (bash would stop there with a syntax
/// error, having run what came before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsed {
    pub text: String,
    pub error: ParseError,
    pub origin: Origin,
    pub depth: usize,
}

/// Everything the walk found.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    pub commands: Vec<SimpleCommand>,
    pub unparsed: Vec<Unparsed>,
    /// Functions that start two copies of themselves at once, directly or through
    /// other functions (fork bombs).
    pub fork_bombs: Vec<String>,
    /// A limit (commands, nesting, calls) stopped part of the walk.
    pub truncated: bool,
    /// Strings run as scripts nested past [`MAX_SCRIPT_DEPTH`], not walked (the first
    /// few, each up to 64 KiB): what they run is not among [`Walk::commands`], and a
    /// policy must judge them unread (each is among [`Walk::hidden`] too).
    pub too_deep: Vec<String>,
    /// Strings run as scripts whose text is not known before the line runs (`eval
    /// "$X"`, `bash -c "$(cmd)"`, `su -c "$CMD"`): whatever commands they hold are not
    /// among [`Walk::commands`]. For policies that must not let an unseen command by.
    pub hidden: Vec<Hidden>,
    /// The programs the walk looked through to the command they run — wrappers
    /// (`sudo`, `env`, `timeout`, …) and shells or `eval` running a script it read —
    /// with their words from the program on, where they stand in their pipeline: for
    /// policies about the runner itself (`sudo`, `… | sh`). Not among
    /// [`Walk::commands`], which holds what they run.
    pub runners: Vec<Runner>,
}

/// A program the walk looked through (see [`Walk::runners`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runner {
    /// The program and its arguments, the command it runs included.
    pub argv: Vec<Field>,
    /// The pipeline it is in and its stage (as [`SimpleCommand::pipeline`]).
    pub pipeline: usize,
    pub stage: usize,
}

/// A string run as a script whose text is not known (see [`Walk::hidden`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The program that runs it and its arguments, as shown (`…` after unknown parts).
    pub text: String,
    pub origin: Origin,
    pub depth: usize,
}
