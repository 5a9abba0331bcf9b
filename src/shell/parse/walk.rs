//! Every simple command a line will run, with its words resolved: the one walk the
//! interceptor, the guard and later policies read (docs/parser.md).
//!
//! The walk follows the line as bash would run it, without running anything: lists,
//! pipelines (each stage in its own subshell), subshells and groups, `if`/`while`/
//! `case` (every branch, since which one runs is not known), `for` over literal words
//! (the body once per value), functions (the body where it is defined, and again at
//! every call with that call's arguments), `trap '…' EXIT` (at the end), `coproc`,
//! scripts run from strings (`bash -c`, `eval`, `su -c`, `watch`, `env -S`, a shell fed
//! a here-string, a heredoc or `echo …`), command substitutions, `xargs` fed by known
//! text, `find -exec`. It keeps what the line changes — assignments, `export`,
//! `unset`, `set --`, `shift`, `read` from known input, `cd`/`pushd`/`popd` — and looks
//! through wrappers (see [`super::wrappers`]). A limit on the work (commands, nesting,
//! calls) is reported as [`Walk::truncated`] rather than ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::ast::{self, Command, Compound, Part, RedirOp, Target, Word};
use super::expand::{Expander, Field, decode_escapes};
use super::options::{Arg, Spec, scan};
use super::parser::{ParseError, Parsed, parse_lines};
use super::scope::{Scope, Var, normalize};
use super::wrappers::{self, Effect, Unwrap};

/// How deeply scripts run from strings may nest (`bash -c` in `eval` in …).
pub const MAX_SCRIPT_DEPTH: usize = 8;
/// How deeply function calls are followed.
pub const MAX_CALL_DEPTH: usize = 8;
/// How many simple commands one walk yields at most.
pub const MAX_COMMANDS: usize = 100_000;
/// How many items `xargs` is given from known input, at most.
const MAX_XARGS_ITEMS: usize = 4096;

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

    /// The canonical line `deny` rules are matched against (see [`super::render`]).
    pub fn rendered(&self) -> String {
        super::render::render(self)
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

/// `\cat` → `cat`; `/usr/bin/cat` → `cat` (a path into a `bin` directory names the
/// program; `./cat` does not).
pub fn program_name(word: &str) -> &str {
    let word = word.strip_prefix('\\').unwrap_or(word);
    if word.starts_with('/')
        && let Some((dir, base)) = word.rsplit_once('/')
        && (dir.ends_with("/bin") || dir.ends_with("/sbin"))
        && !base.is_empty()
    {
        return base;
    }
    word
}

/// The simple commands of `src`, resolved in `ctx`.
pub fn walk(src: &str, ctx: &Context) -> Walk {
    walk_with(src, ctx, parse_lines)
}

/// [`walk`] with another parser for the line and every string run as a script (how
/// docs/parser.md compares parsers on the same walk).
pub fn walk_with(src: &str, ctx: &Context, parse: fn(&str) -> Parsed) -> Walk {
    let mut scope = Scope::new(ctx.env, ctx.cwd.map(Path::to_path_buf));
    let mut w = Walker {
        parse,
        out: Walk::default(),
        next_pipeline: 0,
        frames: Vec::new(),
        exit_traps: Vec::new(),
    };
    let at = At::top(Arc::from(""));
    w.script_text(src, &mut scope, &at);
    w.out
}

/// Where the walk is.
#[derive(Clone)]
struct At {
    src: Arc<str>,
    origin: Origin,
    depth: usize,
    defining: bool,
    substituted: bool,
    background: bool,
    bounded: bool,
    /// The text of an enclosing command whose wrapper the interceptor shows.
    routed_text: Option<Arc<str>>,
    /// Redirections of enclosing compound commands (`{ …; } > f`).
    inherited: Arc<Vec<Redirection>>,
    pipeline: usize,
    stage: usize,
    joint: Joint,
    piped_stdin: bool,
    piped_stdout: bool,
    /// What the command reads on stdin, when known.
    stdin: Option<Arc<str>>,
}

impl At {
    fn top(src: Arc<str>) -> Self {
        At {
            src,
            origin: Origin::Line,
            depth: 0,
            defining: false,
            substituted: false,
            background: false,
            bounded: false,
            routed_text: None,
            inherited: Arc::new(Vec::new()),
            pipeline: 0,
            stage: 0,
            joint: Joint::First,
            piped_stdin: false,
            piped_stdout: false,
            stdin: None,
        }
    }

    /// A script run from a string, inside this command.
    fn nested(&self, origin: Origin) -> Self {
        At {
            origin,
            depth: self.depth + 1,
            substituted: self.substituted || origin == Origin::Substitution,
            inherited: Arc::new(Vec::new()),
            joint: Joint::First,
            piped_stdin: false,
            piped_stdout: false,
            stdin: None,
            ..self.clone()
        }
    }

    fn concurrent(&self) -> bool {
        self.background || self.piped_stdin || self.piped_stdout
    }
}

struct Frame {
    name: String,
    recursive: usize,
    concurrent: bool,
}

struct Walker {
    parse: fn(&str) -> Parsed,
    out: Walk,
    next_pipeline: usize,
    frames: Vec<Frame>,
    exit_traps: Vec<Vec<String>>,
}

impl Walker {
    fn full(&mut self) -> bool {
        if self.out.commands.len() >= MAX_COMMANDS {
            self.out.truncated = true;
            return true;
        }
        false
    }

    /// Parses and walks `text` (the line, or a string run as a script).
    fn script_text(&mut self, text: &str, scope: &mut Scope, at: &At) {
        if at.depth > MAX_SCRIPT_DEPTH {
            self.out.truncated = true;
            return;
        }
        let parsed = (self.parse)(text);
        let at = At {
            src: parsed.script.src.clone(),
            ..at.clone()
        };
        self.exit_traps.push(Vec::new());
        self.list(&parsed.script.body, scope, &at);
        if let Some(error) = parsed.error {
            self.out.unparsed.push(Unparsed {
                text: text.get(parsed.rest..).unwrap_or(text).to_string(),
                error,
                origin: at.origin,
                depth: at.depth,
            });
        }
        for trap in self.exit_traps.pop().unwrap_or_default() {
            self.script_text(&trap, scope, &at.nested(Origin::Trap));
        }
    }

    fn list(&mut self, list: &ast::List, scope: &mut Scope, at: &At) {
        let mut joint = at.joint;
        for item in list {
            let at = At {
                background: at.background || item.sep == ast::Sep::Amp,
                joint,
                ..at.clone()
            };
            self.and_or(&item.and_or, scope, &at);
            joint = Joint::Seq;
        }
    }

    fn and_or(&mut self, and_or: &ast::AndOr, scope: &mut Scope, at: &At) {
        self.pipeline(&and_or.first, scope, at);
        for (connector, p) in &and_or.rest {
            let joint = match connector {
                ast::Connector::And => Joint::And,
                ast::Connector::Or => Joint::Or,
            };
            self.pipeline(
                p,
                scope,
                &At {
                    joint,
                    ..at.clone()
                },
            );
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, scope: &mut Scope, at: &At) {
        let id = self.next_pipeline;
        self.next_pipeline += 1;
        let n = p.stages.len();
        let mut stdin: Option<Arc<str>> = at.stdin.clone();
        for (i, stage) in p.stages.iter().enumerate() {
            let stage_at = At {
                pipeline: id,
                stage: i,
                joint: if i == 0 { at.joint } else { Joint::Pipe },
                piped_stdin: i > 0 || at.piped_stdin,
                piped_stdout: i + 1 < n || at.piped_stdout,
                stdin: stdin.take(),
                ..at.clone()
            };
            // Every stage of a pipeline runs in a subshell of its own.
            let produced = if n > 1 {
                let mut sub = scope.clone();
                self.command(&stage.command, &mut sub, &stage_at)
            } else {
                self.command(&stage.command, scope, &stage_at)
            };
            stdin = produced.map(Arc::from);
        }
    }

    /// Walks one command; returns its output when it is known (`echo`, `printf`).
    fn command(&mut self, command: &Command, scope: &mut Scope, at: &At) -> Option<String> {
        if self.full() {
            return None;
        }
        match command {
            Command::Simple(s) => self.simple(s, scope, at),
            Command::Compound(c, redirects) => {
                let (resolved, stdin) = self.redirections(redirects, scope, at);
                let mut inherited = (*at.inherited).clone();
                inherited.extend(resolved);
                let inner = At {
                    inherited: Arc::new(inherited),
                    piped_stdin: false,
                    piped_stdout: false,
                    stdin: match stdin {
                        Stdin::Inherit => at.stdin.clone(),
                        Stdin::Known(s) => Some(Arc::from(s)),
                        Stdin::Unknown => None,
                    },
                    ..at.clone()
                };
                let start = self.out.commands.len();
                self.compound(c, scope, &inner);
                self.mark_ends(start, at);
                None
            }
            Command::Function(f) => {
                scope
                    .functions
                    .insert(f.name.clone(), Arc::new((**f).clone()));
                // The body where it is defined, its parameters unknown: the routing
                // candidates, and what it would do whatever its arguments.
                let mut def = scope.clone();
                def.positional = None;
                def.funcname = Some(f.name.clone());
                self.frames.push(Frame {
                    name: f.name.clone(),
                    recursive: 0,
                    concurrent: false,
                });
                let body_at = At {
                    defining: true,
                    background: false,
                    piped_stdin: false,
                    piped_stdout: false,
                    stdin: None,
                    ..at.clone()
                };
                self.command(&f.body, &mut def, &body_at);
                self.end_frame();
                None
            }
            Command::Coproc(c) => {
                let mut sub = scope.clone();
                self.command(
                    &c.body,
                    &mut sub,
                    &At {
                        background: true,
                        ..at.clone()
                    },
                );
                None
            }
        }
    }

    /// A compound command's first command reads its stdin, its last feeds its stdout.
    fn mark_ends(&mut self, start: usize, at: &At) {
        let own = |c: &SimpleCommand| c.depth == at.depth && !c.substituted || at.substituted;
        if at.piped_stdin
            && let Some(c) = self.out.commands[start..].iter_mut().find(|c| own(c))
        {
            c.piped_stdin = true;
        }
        if at.piped_stdout
            && let Some(c) = self.out.commands[start..].iter_mut().rev().find(|c| own(c))
        {
            c.piped_stdout = true;
        }
    }

    fn end_frame(&mut self) {
        if let Some(frame) = self.frames.pop()
            && frame.recursive >= 2
            && frame.concurrent
            && !self.out.fork_bombs.contains(&frame.name)
        {
            self.out.fork_bombs.push(frame.name);
        }
    }

    fn compound(&mut self, c: &Compound, scope: &mut Scope, at: &At) {
        match c {
            Compound::Brace(list) => self.list(list, scope, at),
            Compound::Subshell(list) => self.list(list, &mut scope.clone(), at),
            Compound::If {
                branches,
                otherwise,
            } => {
                for (condition, body) in branches {
                    self.list(condition, scope, at);
                    self.list(body, scope, at);
                }
                if let Some(o) = otherwise {
                    self.list(o, scope, at);
                }
            }
            Compound::While {
                condition, body, ..
            } => {
                self.list(condition, scope, at);
                self.list(body, scope, at);
            }
            Compound::For {
                var, words, body, ..
            } => {
                let values: Option<Vec<String>> = match words {
                    Some(words) => {
                        let mut values = Some(Vec::new());
                        for w in words {
                            self.substitutions(w, scope, at);
                            for f in Expander::new(scope).fields(w) {
                                match (&mut values, f.known()) {
                                    (Some(v), true) => match &f.glob {
                                        Some(pattern) => v.extend(pathnames(pattern, scope)),
                                        None => v.push(f.text),
                                    },
                                    _ => values = None,
                                }
                            }
                        }
                        values
                    }
                    None => scope.positional.clone(),
                };
                match values {
                    Some(values) => {
                        for v in values {
                            if self.full() {
                                return;
                            }
                            scope.set(var, Var::Str(v));
                            self.list(body, scope, at);
                        }
                    }
                    None => {
                        scope.set(var, Var::Unknown);
                        self.list(body, scope, at);
                    }
                }
            }
            Compound::ArithFor { parts, body } => {
                for w in parts {
                    self.substitutions(w, scope, at);
                }
                self.list(body, scope, at);
            }
            Compound::Case { subject, arms } => {
                self.substitutions(subject, scope, at);
                for arm in arms {
                    for p in &arm.patterns {
                        self.substitutions(p, scope, at);
                    }
                    self.list(&arm.body, scope, at);
                }
            }
            Compound::Arith(w) => self.substitutions(w, scope, at),
            Compound::Cond(words) => {
                for w in words {
                    self.substitutions(w, scope, at);
                }
            }
        }
    }

    /// Walks the scripts inside a word's substitutions (each in a subshell).
    fn substitutions(&mut self, word: &Word, scope: &Scope, at: &At) {
        for part in &word.parts {
            match part {
                Part::CmdSub {
                    script,
                    backtick: true,
                    ..
                } => {
                    // Its own text, parsed as bash will when it runs it: what does
                    // not parse is reported like the line's.
                    let mut sub = scope.clone();
                    self.script_text(&script.src, &mut sub, &at.nested(Origin::Substitution));
                }
                Part::CmdSub { script, .. } | Part::ProcSub { script, .. } => {
                    let mut sub = scope.clone();
                    let inner = At {
                        src: script.src.clone(),
                        ..at.nested(Origin::Substitution)
                    };
                    // A substitution nests like a script, but costs no string depth.
                    let inner = At {
                        depth: at.depth,
                        ..inner
                    };
                    self.list(&script.body, &mut sub, &inner);
                }
                Part::Param { param, .. } => {
                    if let Some(i) = &param.index {
                        self.substitutions(i, scope, at);
                    }
                    match &param.op {
                        ast::ParamOp::Default { word, .. }
                        | ast::ParamOp::Assign { word, .. }
                        | ast::ParamOp::Error { word, .. }
                        | ast::ParamOp::Alternative { word, .. } => {
                            self.substitutions(word, scope, at)
                        }
                        ast::ParamOp::RemovePrefix { pattern, .. }
                        | ast::ParamOp::RemoveSuffix { pattern, .. }
                        | ast::ParamOp::Case { pattern, .. } => {
                            self.substitutions(pattern, scope, at)
                        }
                        ast::ParamOp::Replace {
                            pattern,
                            replacement,
                            ..
                        } => {
                            self.substitutions(pattern, scope, at);
                            self.substitutions(replacement, scope, at);
                        }
                        ast::ParamOp::Substring { offset, length } => {
                            self.substitutions(offset, scope, at);
                            if let Some(l) = length {
                                self.substitutions(l, scope, at);
                            }
                        }
                        _ => {}
                    }
                }
                Part::Arith { expr, .. } => self.substitutions(expr, scope, at),
                _ => {}
            }
        }
    }

    fn redirections(
        &mut self,
        rs: &[ast::Redirect],
        scope: &mut Scope,
        at: &At,
    ) -> (Vec<Redirection>, Stdin) {
        let mut out = Vec::with_capacity(rs.len());
        let mut stdin = Stdin::Inherit;
        for r in rs {
            let fd = match &r.fd {
                Some(ast::Fd::Number(n)) => Some(*n),
                Some(ast::Fd::Var(_)) => Some(u32::MAX),
                None => None,
            };
            let text = at.src.get(r.span.clone()).unwrap_or("").to_string();
            let (target, here) = match &r.target {
                Target::Word(w) => {
                    self.substitutions(w, scope, at);
                    let mut ex = Expander::new(scope);
                    if r.op == RedirOp::HereString {
                        let f = ex.string(w);
                        (None, f.known().then(|| f.text + "\n"))
                    } else {
                        let mut fields = ex.fields(w);
                        let f = if fields.len() == 1 {
                            fields.pop().unwrap_or_default()
                        } else {
                            // An ambiguous redirection: bash refuses the command.
                            Field {
                                dynamic: true,
                                ..Field::default()
                            }
                        };
                        (Some(f), None)
                    }
                }
                Target::Heredoc(h) => {
                    if h.quoted {
                        (None, h.body.literal())
                    } else {
                        self.substitutions(&h.body, scope, at);
                        let f = Expander::new(scope).string(&h.body);
                        (None, f.known().then_some(f.text))
                    }
                }
            };
            let redirection = Redirection {
                fd,
                op: r.op,
                target,
                here,
                text,
            };
            if redirection.fd() == 0 {
                stdin = match (&redirection.op, &redirection.here) {
                    (RedirOp::Heredoc | RedirOp::HereString, Some(h)) => Stdin::Known(h.clone()),
                    _ => Stdin::Unknown,
                };
            }
            out.push(redirection);
        }
        (out, stdin)
    }

    fn simple(&mut self, s: &ast::Simple, scope: &mut Scope, at: &At) -> Option<String> {
        for a in &s.assignments {
            if let Some(i) = &a.index {
                self.substitutions(i, scope, at);
            }
            match &a.value {
                ast::Value::Scalar(w) => self.substitutions(w, scope, at),
                ast::Value::Array(elements) => {
                    for (k, v) in elements {
                        if let Some(k) = k {
                            self.substitutions(k, scope, at);
                        }
                        self.substitutions(v, scope, at);
                    }
                }
            }
        }
        for w in &s.words {
            self.substitutions(w, scope, at);
        }
        let mut argv = Vec::new();
        let mut word_of = Vec::new();
        let mut values: Vec<(String, Var, Field)> = Vec::new();
        let side_effects;
        {
            let mut ex = Expander::new(scope);
            for a in &s.assignments {
                values.push(assignment_value(&mut ex, a, scope));
            }
            for (wi, w) in s.words.iter().enumerate() {
                for f in ex.fields(w) {
                    argv.push(f);
                    word_of.push(wi);
                }
            }
            side_effects = std::mem::take(&mut ex.assigned);
        }
        for (name, value) in side_effects {
            scope.set(&name, Var::Str(value));
        }
        let (redirects, stdin) = self.redirections(&s.redirects, scope, at);
        let stdin = match stdin {
            Stdin::Inherit => at.stdin.clone(),
            Stdin::Known(s) => Some(Arc::from(s)),
            Stdin::Unknown => None,
        };
        if argv.is_empty() {
            for (name, value, _) in &values {
                scope.set(name, value.clone());
            }
            if !redirects.is_empty() {
                self.emit(
                    Vec::new(),
                    &[],
                    &redirects,
                    &[],
                    s,
                    &[],
                    0,
                    scope,
                    at,
                    false,
                    false,
                );
            }
            return None;
        }
        let env: Vec<(String, Var)> = values
            .iter()
            .map(|(n, v, _)| (n.clone(), v.clone()))
            .collect();
        let shown: Vec<(String, Field)> = values.into_iter().map(|(n, _, f)| (n, f)).collect();
        let cmd = Cmd {
            s,
            word_of: &word_of,
            redirects: &redirects,
            assignments: &shown,
            env: &env,
            stdin,
        };
        self.run(argv, &cmd, scope, at)
    }

    /// Looks through the wrappers, then runs the program.
    fn run(&mut self, argv: Vec<Field>, cmd: &Cmd, scope: &mut Scope, at: &At) -> Option<String> {
        let mut i = 0;
        let mut wrappers: Vec<String> = Vec::new();
        let mut route_at: Option<usize> = None;
        let mut child: Option<Scope> = None;
        let mut bounded = at.bounded;
        let mut xargs: Option<(Option<String>, Option<char>)> = None;
        loop {
            let f = argv.get(i)?;
            if !f.known() {
                break;
            }
            let name = program_name(&f.text);
            match wrappers::unwrap(name, &argv[i..]) {
                Unwrap::No => break,
                Unwrap::Nothing => {
                    if !cmd.redirects.is_empty() {
                        let tail = argv[i..].to_vec();
                        self.emit_cmd(
                            tail,
                            i,
                            &wrappers,
                            route_at,
                            cmd,
                            scope,
                            child.as_ref(),
                            at,
                            bounded,
                            false,
                        );
                    }
                    return None;
                }
                Unwrap::Command { skip, effects } => {
                    self.runner(&argv[i..], at);
                    if wrappers::routed(name) && route_at.is_none() {
                        route_at = Some(i);
                    }
                    apply(
                        &effects,
                        &mut child,
                        scope,
                        cmd.env,
                        &mut bounded,
                        &mut xargs,
                    );
                    wrappers.push(name.to_string());
                    i += skip;
                }
                Unwrap::Script { text, effects } => {
                    self.runner(&argv[i..], at);
                    self.hidden_if_unknown(&argv[i..], &argv[i + 1..], at);
                    if wrappers::routed(name) && route_at.is_none() {
                        route_at = Some(i);
                    }
                    apply(
                        &effects,
                        &mut child,
                        scope,
                        cmd.env,
                        &mut bounded,
                        &mut xargs,
                    );
                    let mut inner = child.unwrap_or_else(|| scope.child(cmd.env));
                    let routed_text = self.routed_text(route_at, cmd, at);
                    let nested = At {
                        bounded,
                        routed_text,
                        ..at.nested(Origin::Script)
                    };
                    self.script_text(&text, &mut inner, &nested);
                    return None;
                }
            }
        }
        // `command`, `builtin` and `exec` run in the shell itself; other wrappers are
        // programs, and what they run cannot change this shell.
        let in_shell = wrappers
            .iter()
            .all(|w| matches!(w.as_str(), "command" | "builtin" | "exec" | "time"));
        let bypass_functions = wrappers.iter().any(|w| w == "command" || w == "builtin");
        let mut tail = argv;
        tail.drain(..i);
        let runs: Vec<Vec<Field>> = match (&xargs, &cmd.stdin) {
            (Some((replace, delimiter)), Some(input)) => {
                xargs_runs(&tail, input, replace.as_deref(), *delimiter)
            }
            _ => vec![tail],
        };
        let mut output = None;
        for run in runs {
            let p = Program {
                argv: run,
                start: i,
                wrappers: &wrappers,
                route_at,
                in_shell,
                bypass_functions,
                bounded,
                via_xargs: xargs.is_some(),
            };
            output = match child.as_mut() {
                Some(c) => self.program(p, cmd, c, at),
                None => self.program(p, cmd, scope, at),
            };
        }
        output
    }

    /// Records a program looked through (see [`Walk::runners`]).
    fn runner(&mut self, argv: &[Field], at: &At) {
        if self.full() {
            return;
        }
        self.out.runners.push(Runner {
            argv: argv.to_vec(),
            pipeline: at.pipeline,
            stage: at.stage,
        });
    }

    /// Records `argv` in [`Walk::hidden`] when a word of `script` (the words its
    /// script text is made of) is not known.
    fn hidden_if_unknown(&mut self, argv: &[Field], script: &[Field], at: &At) {
        if script.iter().all(Field::known) {
            return;
        }
        let text = argv.iter().map(Field::shown).collect::<Vec<_>>().join(" ");
        self.out.hidden.push(Hidden {
            text,
            origin: at.origin,
            depth: at.depth,
        });
    }

    /// The text of an enclosing routed wrapper, for the commands of the script it runs.
    fn routed_text(&self, route_at: Option<usize>, cmd: &Cmd, at: &At) -> Option<Arc<str>> {
        match route_at {
            Some(r) => Some(Arc::from(raw_text(cmd.s, cmd.word_of, r, at).as_str())),
            None => at.routed_text.clone(),
        }
    }

    /// Runs a program (wrappers already removed): functions, shells and the builtins
    /// that change the shell are followed; every program is recorded.
    fn program(&mut self, p: Program, cmd: &Cmd, scope: &mut Scope, at: &At) -> Option<String> {
        let first = p.argv.first()?;
        let name = if first.known() {
            program_name(&first.text).to_string()
        } else {
            String::new()
        };
        let at = &At {
            bounded: p.bounded,
            piped_stdin: at.piped_stdin && !p.via_xargs,
            ..at.clone()
        };
        let argv = p.argv.as_slice();
        let mut output = None;
        // Where it runs, before a `cd` of its own moves the shell.
        let place = (scope.cwd.clone(), scope.root.clone());
        // A function defined in this line.
        if p.in_shell
            && !p.bypass_functions
            && let Some(f) = scope.function(&name)
        {
            self.call(&f, argv, cmd, scope, at);
        } else {
            match name.as_str() {
                "bash" | "sh" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "rbash" => {
                    let before = self.out.commands.len();
                    self.shell(argv, cmd, scope, at, &p);
                    if self.out.commands.len() != before {
                        self.runner(argv, at);
                        return None;
                    }
                }
                "eval" if p.in_shell => {
                    self.runner(argv, at);
                    self.hidden_if_unknown(argv, &argv[1..], at);
                    let text: Vec<&str> = argv[1..].iter().map(|f| f.text.as_str()).collect();
                    let nested = At {
                        routed_text: self.routed_text(p.route_at, cmd, at),
                        ..at.nested(Origin::Script)
                    };
                    let mut env_scope;
                    let target = if cmd.env.is_empty() {
                        &mut *scope
                    } else {
                        env_scope = scope.clone();
                        for (k, v) in cmd.env {
                            env_scope.set(k, v.clone());
                        }
                        &mut env_scope
                    };
                    self.script_text(&text.join(" "), target, &nested);
                    return None;
                }
                "source" | "." if p.in_shell => {
                    if argv
                        .get(1)
                        .is_some_and(|f| matches!(f.text.as_str(), "/dev/stdin" | "-"))
                        && let Some(input) = cmd.stdin.clone()
                    {
                        let nested = at.nested(Origin::Script);
                        self.script_text(&input, scope, &nested);
                    }
                }
                "trap" if p.in_shell => self.trap(argv, scope, at),
                _ => {}
            }
            if p.in_shell {
                builtin(&name, argv, scope, cmd.stdin.as_deref());
            }
            if name == "find" {
                self.find_exec(argv, cmd, scope, at);
            }
            let stdout_redirected = cmd
                .redirects
                .iter()
                .any(|r| r.fd() == 1 && r.op != RedirOp::In);
            // What it prints matters only to the next stage of its pipeline.
            if at.piped_stdout && !stdout_redirected {
                output = output_of(&name, argv, cmd.stdin.as_deref());
            }
        }
        let (cwd, root) = place;
        let before = (
            std::mem::replace(&mut scope.cwd, cwd),
            std::mem::replace(&mut scope.root, root),
        );
        self.emit_cmd(
            p.argv,
            p.start,
            p.wrappers,
            p.route_at,
            cmd,
            scope,
            None,
            at,
            p.bounded,
            p.via_xargs,
        );
        (scope.cwd, scope.root) = before;
        output
    }

    fn call(
        &mut self,
        f: &Arc<ast::Function>,
        argv: &[Field],
        cmd: &Cmd,
        scope: &mut Scope,
        at: &At,
    ) {
        if let Some(frame) = self.frames.iter_mut().rev().find(|fr| fr.name == f.name) {
            frame.recursive += 1;
            frame.concurrent |= at.concurrent();
            return;
        }
        if self.frames.len() >= MAX_CALL_DEPTH {
            self.out.truncated = true;
            return;
        }
        self.frames.push(Frame {
            name: f.name.clone(),
            recursive: 0,
            concurrent: false,
        });
        let args: Option<Vec<String>> = argv[1..]
            .iter()
            .map(|a| a.known().then(|| a.text.clone()))
            .collect();
        for (k, v) in cmd.env {
            scope.set(k, v.clone());
        }
        let saved_positional = std::mem::replace(&mut scope.positional, args);
        let saved_name = scope.funcname.replace(f.name.clone());
        let body_at = At {
            origin: if at.origin == Origin::Line {
                Origin::Call
            } else {
                at.origin
            },
            ..at.clone()
        };
        let start = self.out.commands.len();
        self.command(
            &f.body,
            scope,
            &At {
                piped_stdin: false,
                piped_stdout: false,
                ..body_at
            },
        );
        self.mark_ends(start, at);
        scope.positional = saved_positional;
        scope.funcname = saved_name;
        self.end_frame();
    }

    /// `bash -c STRING [NAME [ARGS…]]`, or a shell reading its script from known stdin.
    fn shell(&mut self, argv: &[Field], cmd: &Cmd, scope: &Scope, at: &At, p: &Program) {
        const SHELL: Spec = Spec {
            stop_at_operand: true,
            ..Spec::new(
                "oO",
                &[
                    ("rcfile", Arg::Required),
                    ("init-file", Arg::Required),
                    ("login", Arg::No),
                    ("noprofile", Arg::No),
                    ("norc", Arg::No),
                    ("posix", Arg::No),
                    ("restricted", Arg::No),
                    ("verbose", Arg::No),
                    ("noediting", Arg::No),
                    ("debugger", Arg::No),
                    ("dump-strings", Arg::No),
                    ("pretty-print", Arg::No),
                ],
            )
        };
        let words: Vec<&str> = argv[1..].iter().map(|f| f.text.as_str()).collect();
        let s = scan(&words, &SHELL, |i| !argv[i + 1].known());
        let c_flag = s.opts.iter().any(|o| o.name == "-c");
        // `-n`: read the script, run nothing.
        if s.has('n', "") {
            return;
        }
        let operands: Vec<&Field> = argv[1 + s.end..].iter().collect();
        let routed_text = self.routed_text(p.route_at, cmd, at);
        let nested = At {
            routed_text,
            bounded: p.bounded,
            ..at.nested(Origin::Script)
        };
        let mut inner = scope.child(cmd.env);
        if c_flag {
            let Some(script) = operands.first() else {
                return;
            };
            if !script.known() {
                self.hidden_if_unknown(argv, std::slice::from_ref(*script), at);
                return;
            }
            if let Some(name) = operands.get(1) {
                inner.arg0 = name.text.clone();
            }
            inner.positional = operands
                .get(2..)
                .unwrap_or_default()
                .iter()
                .map(|f| f.known().then(|| f.text.clone()))
                .collect();
            self.script_text(&script.text, &mut inner, &nested);
        } else if (operands.is_empty()
            || s.has('s', "")
            || operands
                .first()
                .is_some_and(|f| f.text == "-" || f.text == "/dev/stdin"))
            && let Some(input) = cmd.stdin.clone()
        {
            if s.has('s', "") {
                inner.positional = operands
                    .iter()
                    .map(|f| f.known().then(|| f.text.clone()))
                    .collect();
            }
            self.script_text(&input, &mut inner, &nested);
        }
    }

    /// `trap ACTION SIGNAL…`: an `EXIT` action runs when the script ends, others are
    /// read at once (they may run at any point).
    fn trap(&mut self, argv: &[Field], scope: &mut Scope, at: &At) {
        let args: Vec<&Field> = argv[1..].iter().skip_while(|f| f.text == "--").collect();
        if args
            .first()
            .is_some_and(|f| f.text == "-p" || f.text == "-l")
        {
            return;
        }
        let [action, signals @ ..] = args.as_slice() else {
            return;
        };
        if signals.is_empty() || !action.known() || action.text == "-" || action.text.is_empty() {
            return;
        }
        let on_exit = signals.iter().any(|s| {
            matches!(
                s.text.to_ascii_uppercase().as_str(),
                "EXIT" | "0" | "SIGEXIT"
            )
        });
        if on_exit {
            if let Some(level) = self.exit_traps.last_mut() {
                level.push(action.text.clone());
            }
        } else {
            let mut sub = scope.clone();
            self.script_text(&action.text, &mut sub, &at.nested(Origin::Trap));
        }
    }

    /// The commands `find … -exec CMD {} ;` runs, with `{}` unknown.
    fn find_exec(&mut self, argv: &[Field], cmd: &Cmd, scope: &mut Scope, at: &At) {
        let mut i = 1;
        while i < argv.len() {
            if matches!(
                argv[i].text.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            ) {
                let start = i + 1;
                let mut end = start;
                while end < argv.len() && !matches!(argv[end].text.as_str(), ";" | "+") {
                    end += 1;
                }
                let exec: Vec<Field> = argv[start..end]
                    .iter()
                    .map(|f| {
                        if f.text.contains("{}") {
                            Field {
                                text: f.text.replace("{}", ""),
                                dynamic: true,
                                ..Field::default()
                            }
                        } else {
                            f.clone()
                        }
                    })
                    .collect();
                if !exec.is_empty() {
                    let nested = At {
                        routed_text: None,
                        ..at.nested(Origin::Exec)
                    };
                    let nested = At {
                        depth: at.depth,
                        ..nested
                    };
                    let inner = Cmd {
                        stdin: None,
                        ..*cmd
                    };
                    let mut sub = scope.child(&[]);
                    self.run(exec, &inner, &mut sub, &nested);
                }
                i = end;
            }
            i += 1;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_cmd(
        &mut self,
        argv: Vec<Field>,
        start: usize,
        wrappers: &[String],
        route_at: Option<usize>,
        cmd: &Cmd,
        scope: &Scope,
        child: Option<&Scope>,
        at: &At,
        bounded: bool,
        via_xargs: bool,
    ) {
        let scope = child.unwrap_or(scope);
        self.emit(
            argv,
            cmd.word_of,
            cmd.redirects,
            cmd.assignments,
            cmd.s,
            wrappers,
            route_at.unwrap_or(start),
            scope,
            at,
            bounded,
            via_xargs,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        argv: Vec<Field>,
        word_of: &[usize],
        redirects: &[Redirection],
        assignments: &[(String, Field)],
        s: &ast::Simple,
        wrappers: &[String],
        text_from: usize,
        scope: &Scope,
        at: &At,
        bounded: bool,
        via_xargs: bool,
    ) {
        if self.full() {
            return;
        }
        let text = match &at.routed_text {
            Some(t) => t.to_string(),
            None => {
                let mut text = raw_text(s, word_of, text_from, at);
                for r in at.inherited.iter() {
                    text.push(' ');
                    text.push_str(&r.text);
                }
                text
            }
        };
        let mut all_redirects = redirects.to_vec();
        for r in at.inherited.iter() {
            if !all_redirects
                .iter()
                .any(|x| x.fd() == r.fd() && x.op != RedirOp::In)
            {
                all_redirects.push(r.clone());
            }
        }
        self.out.commands.push(SimpleCommand {
            argv,
            assignments: assignments.to_vec(),
            redirects: all_redirects,
            wrappers: wrappers.to_vec(),
            text,
            cwd: scope.cwd.clone(),
            root: scope.root.clone(),
            origin: at.origin,
            depth: at.depth,
            defining: at.defining,
            substituted: at.substituted,
            pipeline: at.pipeline,
            stage: at.stage,
            joint: at.joint,
            piped_stdin: at.piped_stdin && !via_xargs,
            piped_stdout: at.piped_stdout,
            background: at.background,
            bounded,
            via_xargs,
        });
    }
}

/// What a simple command's expansion produced, for the steps after it.
struct Cmd<'a> {
    s: &'a ast::Simple,
    word_of: &'a [usize],
    redirects: &'a [Redirection],
    assignments: &'a [(String, Field)],
    /// Its `NAME=value` prefixes, for the programs it starts.
    env: &'a [(String, Var)],
    stdin: Option<Arc<str>>,
}

/// A program to run, wrappers removed.
struct Program<'a> {
    argv: Vec<Field>,
    /// Where the program is among the command's fields.
    start: usize,
    wrappers: &'a [String],
    route_at: Option<usize>,
    in_shell: bool,
    bypass_functions: bool,
    bounded: bool,
    via_xargs: bool,
}

enum Stdin {
    /// No redirection of stdin.
    Inherit,
    Known(String),
    Unknown,
}

/// The source text of a command from field `from` to its end (see
/// [`SimpleCommand::text`]).
fn raw_text(s: &ast::Simple, word_of: &[usize], from: usize, at: &At) -> String {
    let src = &at.src;
    let end = s.span.end;
    let Some(&wi) = word_of.get(from) else {
        return src.get(s.span.clone()).unwrap_or("").to_string();
    };
    let Some(word) = s.words.get(wi) else {
        return String::new();
    };
    let first_of_word = from == 0 || word_of.get(from - 1) != Some(&wi);
    let rest = src.get(word.span.end..end).unwrap_or("");
    if first_of_word && let Some(lit) = word.literal() {
        format!("{}{rest}", program_name(&lit))
    } else {
        src.get(word.span.start..end).unwrap_or("").to_string()
    }
}

/// An assignment's name, value and value as a field.
fn assignment_value(ex: &mut Expander, a: &ast::Assignment, scope: &Scope) -> (String, Var, Field) {
    match &a.value {
        ast::Value::Scalar(w) => {
            let f = ex.string(w);
            let mut value = if f.known() {
                Var::Str(f.text.clone())
            } else {
                Var::Unknown
            };
            if a.index.is_some() {
                // `a[i]=v`: the array is known only as far as this element.
                value = match (scope.get(&a.name), value) {
                    (Var::Array(mut items), Var::Str(v)) => {
                        items.push(v);
                        Var::Array(items)
                    }
                    (Var::Unset, Var::Str(v)) => Var::Array(vec![v]),
                    _ => Var::Unknown,
                };
            } else if a.append {
                value = match (scope.get(&a.name), value) {
                    (Var::Str(old), Var::Str(v)) => Var::Str(old + &v),
                    (Var::Unset, v) => v,
                    (Var::Array(mut items), Var::Str(v)) => {
                        items.push(v);
                        Var::Array(items)
                    }
                    _ => Var::Unknown,
                };
            }
            (a.name.clone(), value, f)
        }
        ast::Value::Array(elements) => {
            let mut items = Vec::new();
            let mut known = true;
            for (_, v) in elements {
                for f in ex.fields(v) {
                    known &= f.known();
                    items.push(f.text);
                }
            }
            let shown = Field::literal(format!("({})", items.join(" ")));
            let value = if !known {
                Var::Unknown
            } else if a.append {
                match scope.get(&a.name) {
                    Var::Array(mut old) => {
                        old.extend(items);
                        Var::Array(old)
                    }
                    Var::Str(s) => {
                        let mut old = vec![s];
                        old.extend(items);
                        Var::Array(old)
                    }
                    Var::Unset => Var::Array(items),
                    Var::Unknown => Var::Unknown,
                }
            } else {
                Var::Array(items)
            };
            (a.name.clone(), value, shown)
        }
    }
}

/// Applies a wrapper's effects to the scope of the command it runs.
fn apply<'e>(
    effects: &[Effect],
    child: &mut Option<Scope<'e>>,
    scope: &Scope<'e>,
    env: &[(String, Var)],
    bounded: &mut bool,
    xargs: &mut Option<(Option<String>, Option<char>)>,
) {
    for e in effects {
        let c = || scope.child(env);
        match e {
            Effect::Bounded => *bounded = true,
            Effect::Xargs { replace, delimiter } => *xargs = Some((replace.clone(), *delimiter)),
            Effect::ClearEnv => child.get_or_insert_with(c).clear_env(),
            Effect::Unset(n) => child.get_or_insert_with(c).unset(n),
            Effect::Set(k, v) => {
                let s = child.get_or_insert_with(c);
                s.set(k, Var::Str(v.clone()));
                s.export(k);
            }
            Effect::Chdir(d) => child.get_or_insert_with(c).cd(Some(d)),
            Effect::Chroot(r) => {
                let s = child.get_or_insert_with(c);
                let root = match (&s.root, s.absolute(r)) {
                    (Some(old), Some(new)) => {
                        normalize(Some(old), new.to_string_lossy().trim_start_matches('/'))
                    }
                    (None, new) => new,
                    (Some(_), None) => None,
                };
                // An unknown root could be anything, `/` included.
                s.root = root.filter(|r| r != Path::new("/"));
            }
            Effect::Sudo {
                preserve_env,
                user,
                login,
            } => {
                let base = child.take().unwrap_or_else(c);
                let mut s = base.sudo_child(*preserve_env, user.as_deref(), env);
                s.cwd = base.cwd.clone();
                s.root = base.root.clone();
                if *login {
                    let home = s.home();
                    s.cd(home.as_deref());
                }
                *child = Some(s);
            }
        }
    }
}

/// The commands `xargs` runs with `input` as its stdin.
fn xargs_runs(
    argv: &[Field],
    input: &str,
    replace: Option<&str>,
    delimiter: Option<char>,
) -> Vec<Vec<Field>> {
    let items: Vec<String> = match (replace, delimiter) {
        (_, Some(d)) => input
            .split(d)
            .filter(|s| !s.is_empty())
            .map(|s| s.strip_suffix('\n').unwrap_or(s).to_string())
            .collect(),
        (Some(_), None) => input
            .lines()
            .map(|l| l.trim_start().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
        (None, None) => xargs_words(input),
    };
    let items: Vec<String> = items.into_iter().take(MAX_XARGS_ITEMS).collect();
    match replace {
        Some(r) if !r.is_empty() => items
            .iter()
            .map(|item| {
                argv.iter()
                    .map(|f| {
                        if f.text.contains(r) {
                            Field {
                                text: f.text.replace(r, item),
                                glob: None,
                                ..f.clone()
                            }
                        } else {
                            f.clone()
                        }
                    })
                    .collect()
            })
            .collect(),
        _ => {
            let mut run = argv.to_vec();
            run.extend(items.into_iter().map(Field::literal));
            vec![run]
        }
    }
}

/// xargs's default input words: blanks separate, quotes and backslashes quote.
fn xargs_words(input: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut started = false;
    let mut quote: Option<char> = None;
    let mut chars = input.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '\\') => {
                cur.extend(chars.next());
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                started = false;
            }
            (None, c) => cur.push(c),
        }
        if out.len() >= MAX_XARGS_ITEMS {
            break;
        }
    }
    if started || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The builtins that change the shell: directories, variables, parameters.
fn builtin(name: &str, argv: &[Field], scope: &mut Scope, stdin: Option<&str>) {
    let args = &argv[1..];
    match name {
        "cd" | "pushd" => {
            let dir = args
                .iter()
                .find(|f| !f.text.starts_with('-') || f.text == "-");
            if name == "pushd"
                && let Some(c) = scope.cwd.clone()
            {
                scope.dirs.push(c);
            }
            match dir {
                Some(d) if !d.known() || d.glob.is_some() => {
                    scope.oldpwd = scope.cwd.take();
                }
                Some(d) => scope.cd(Some(&d.text)),
                None if name == "pushd" => scope.cwd = None,
                None => scope.cd(None),
            }
        }
        "popd" => {
            scope.oldpwd = scope.cwd.take();
            scope.cwd = scope.dirs.pop();
        }
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            let export = name == "export"
                || args
                    .iter()
                    .any(|f| f.text.starts_with('-') && f.text.contains('x'));
            if args
                .iter()
                .any(|f| f.text.starts_with('-') && f.text.contains('f'))
            {
                return;
            }
            for f in args
                .iter()
                .filter(|f| !f.text.starts_with('-') && !f.text.starts_with('+'))
            {
                let (n, value) = match f.text.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (f.text.as_str(), None),
                };
                let (n, append) = match n.strip_suffix('+') {
                    Some(n) => (n, true),
                    None => (n, false),
                };
                if !super::parser::valid_name(n) {
                    continue;
                }
                if let Some(v) = value {
                    let var = if !f.known() {
                        Var::Unknown
                    } else if v.starts_with('(') && v.ends_with(')') {
                        array_literal(n, v, scope)
                    } else if append {
                        match scope.get(n) {
                            Var::Str(old) => Var::Str(old + v),
                            Var::Unset => Var::Str(v.to_string()),
                            _ => Var::Unknown,
                        }
                    } else {
                        Var::Str(v.to_string())
                    };
                    scope.set(n, var);
                } else if name != "export" && scope.get(n) == Var::Unset {
                    continue;
                }
                if export {
                    scope.export(n);
                }
            }
        }
        "unset" => {
            let functions = args.iter().any(|f| f.text == "-f");
            for f in args.iter().filter(|f| !f.text.starts_with('-')) {
                if functions {
                    scope.functions.remove(&f.text);
                } else {
                    scope.unset(&f.text);
                }
            }
        }
        "set" => {
            let mut i = 0;
            while let Some(f) = args.get(i) {
                if f.text == "--" {
                    i += 1;
                    break;
                }
                if (f.text.starts_with('-') || f.text.starts_with('+')) && f.text.len() > 1 {
                    i += if matches!(f.text.as_str(), "-o" | "+o") {
                        2
                    } else {
                        1
                    };
                    continue;
                }
                break;
            }
            if i < args.len() || args.get(i.wrapping_sub(1)).is_some_and(|f| f.text == "--") {
                scope.positional = args[i.min(args.len())..]
                    .iter()
                    .map(|f| f.known().then(|| f.text.clone()))
                    .collect();
            }
        }
        "shift" => {
            let n = args
                .first()
                .map_or(Some(1), |f| f.text.parse::<usize>().ok());
            match (n, scope.positional.as_mut()) {
                (Some(n), Some(p)) => {
                    let n = n.min(p.len());
                    p.drain(..n);
                }
                _ => scope.positional = None,
            }
        }
        "read" => {
            const READ: Spec = Spec::new("adinNptu", &[]);
            let words: Vec<&str> = args.iter().map(|f| f.text.as_str()).collect();
            let s = scan(&words, &READ, |i| !args[i].known());
            let names: Vec<&str> = s.operands.iter().map(|&i| words[i]).collect();
            let names = if names.is_empty() {
                vec!["REPLY"]
            } else {
                names
            };
            let array = s.value('a', "");
            let raw = s.has('r', "");
            let delim = s
                .value('d', "")
                .map_or('\n', |d| d.chars().next().unwrap_or('\0'));
            let line = stdin.map(|input| {
                let line = input.split(delim).next().unwrap_or("");
                if raw {
                    line.to_string()
                } else {
                    decode_backslashes(line)
                }
            });
            let fields = line.map(|l| {
                l.split([' ', '\t', '\n'])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            });
            if let Some(a) = array {
                scope.set(a, fields.map_or(Var::Unknown, Var::Array));
                return;
            }
            for (k, n) in names.iter().enumerate() {
                let v = match &fields {
                    None => Var::Unknown,
                    Some(fs) if k + 1 == names.len() => {
                        Var::Str(fs.get(k..).unwrap_or_default().join(" "))
                    }
                    Some(fs) => Var::Str(fs.get(k).cloned().unwrap_or_default()),
                };
                scope.set(n, v);
            }
        }
        "printf" => {
            if args.first().is_some_and(|f| f.text == "-v")
                && let Some(var) = args.get(1)
            {
                let value = printf(&args[2..]).map_or(Var::Unknown, Var::Str);
                scope.set(&var.text, value);
            }
        }
        "mapfile" | "readarray" => {
            if let Some(n) = args.iter().rev().find(|f| !f.text.starts_with('-')) {
                scope.set(&n.text, Var::Unknown);
            }
        }
        "getopts" => {
            if let Some(n) = args.get(1) {
                scope.set(&n.text, Var::Unknown);
            }
        }
        _ => {}
    }
}

/// `NAME=(…)` given to `declare`/`local`: its elements, expanded.
fn array_literal(name: &str, value: &str, scope: &Scope) -> Var {
    let parsed = parse_lines(&format!("{name}={value}"));
    let Some(ast::Command::Simple(s)) = parsed
        .script
        .body
        .first()
        .and_then(|i| i.and_or.first.stages.first())
        .map(|s| &s.command)
    else {
        return Var::Unknown;
    };
    match s.assignments.first() {
        Some(a) => assignment_value(&mut Expander::new(scope), a, scope).1,
        None => Var::Unknown,
    }
}

/// `read` without `-r`: backslash escapes the next character, `\`-newline joins.
fn decode_backslashes(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// What `echo`, `printf` or `cat` (reading known stdin) prints, when known.
fn output_of(name: &str, argv: &[Field], stdin: Option<&str>) -> Option<String> {
    let args = &argv[1..];
    if args.iter().any(|f| !f.known()) {
        return None;
    }
    match name {
        "echo" => {
            let mut newline = true;
            let mut escapes = false;
            let mut i = 0;
            while let Some(f) = args.get(i) {
                let t = f.text.as_str();
                if t.len() > 1
                    && t.starts_with('-')
                    && t[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
                {
                    newline &= !t.contains('n');
                    if t.contains('e') {
                        escapes = true;
                    }
                    if t.contains('E') {
                        escapes = false;
                    }
                    i += 1;
                } else {
                    break;
                }
            }
            let words: Vec<String> = args[i..]
                .iter()
                .map(|f| {
                    if escapes {
                        decode_escapes(&f.text)
                    } else {
                        f.text.clone()
                    }
                })
                .collect();
            let mut out = words.join(" ");
            if newline {
                out.push('\n');
            }
            Some(out)
        }
        "printf" => printf(args),
        "cat" if args.is_empty() || args.iter().all(|f| f.text == "-") => stdin.map(str::to_string),
        _ => None,
    }
}

/// `printf FORMAT ARGS…` for `%s`, `%b`, `%d`, `%i`, `%c`, `%%` and backslash escapes;
/// `None` for anything else.
fn printf(args: &[Field]) -> Option<String> {
    let format = args.first()?;
    if format.text == "--" {
        return printf(&args[1..]);
    }
    let format = decode_escapes(&format.text);
    let mut rest = args[1..].iter().map(|f| f.text.as_str());
    let mut out = String::new();
    loop {
        let mut used = false;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            // Flags and widths are not followed.
            if chars.peek().is_some_and(|c| "-+ #0123456789.".contains(*c)) {
                return None;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some('s') => {
                    used = true;
                    out.push_str(rest.next().unwrap_or(""));
                }
                Some('b') => {
                    used = true;
                    out.push_str(&decode_escapes(rest.next().unwrap_or("")));
                }
                Some('d' | 'i') => {
                    used = true;
                    let v = rest.next().unwrap_or("0");
                    out.push_str(&v.trim().parse::<i64>().ok()?.to_string());
                }
                Some('c') => {
                    used = true;
                    out.extend(rest.next().unwrap_or("").chars().next());
                }
                _ => return None,
            }
            if out.len() > super::expand::MAX_VALUE {
                return None;
            }
        }
        if !used || rest.clone().next().is_none() {
            return Some(out);
        }
    }
}

/// Pathname expansion of `pattern` against the filesystem, as bash would do it for a
/// `for` loop's words (a pattern that matches nothing stays as it is).
fn pathnames(pattern: &str, scope: &Scope) -> Vec<String> {
    const MAX_MATCHES: usize = 4096;
    let absolute = pattern.starts_with('/');
    let base = if absolute {
        Some(PathBuf::from("/"))
    } else {
        scope.cwd.clone()
    };
    let Some(base) = base else {
        return vec![super::glob::unescape(pattern)];
    };
    let mut paths: Vec<(PathBuf, String)> = vec![(base, String::new())];
    let comps: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    for comp in &comps {
        let mut next = Vec::new();
        for (dir, shown) in &paths {
            let join = |name: &str| {
                if shown.is_empty() && !absolute {
                    name.to_string()
                } else {
                    format!("{}/{name}", shown.trim_end_matches('/'))
                }
            };
            if !super::glob::has_meta(comp) {
                let name = super::glob::unescape(comp);
                next.push((dir.join(&name), join(&name)));
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .flatten()
                .take(MAX_MATCHES)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| super::glob::matches(comp, n, true))
                .collect();
            names.sort();
            for n in names {
                next.push((dir.join(&n), join(&n)));
            }
            if next.len() > MAX_MATCHES {
                return vec![super::glob::unescape(pattern)];
            }
        }
        paths = next;
    }
    let found: Vec<String> = paths
        .into_iter()
        .filter(|(p, _)| p.exists())
        .map(|(_, shown)| {
            if absolute && !shown.starts_with('/') {
                format!("/{shown}")
            } else {
                shown
            }
        })
        .collect();
    if found.is_empty() {
        vec![super::glob::unescape(pattern)]
    } else {
        found
    }
}
