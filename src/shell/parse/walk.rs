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

use std::path::Path;
use std::sync::Arc;

use super::ast::{self, Command, Compound, Part, RedirOp, Target, Word};
use super::expand::{Expander, Field};
use super::options::{Arg, Spec, scan};
use super::parser::{Parsed, parse_lines};
use super::scope::{Scope, Var, normalize};
use super::wrappers::{self, Effect, Unwrap};

mod builtins;
mod output;
mod program;
use builtins::pathnames;
pub use output::*;

/// How deeply scripts run from strings may nest (`bash -c` in `eval` in …).
pub const MAX_SCRIPT_DEPTH: usize = 8;
/// How deeply function calls are followed.
pub const MAX_CALL_DEPTH: usize = 8;
/// How many simple commands one walk yields at most.
pub const MAX_COMMANDS: usize = 100_000;
/// How many items `xargs` is given from known input, at most.
const MAX_XARGS_ITEMS: usize = 4096;

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

/// [`walk`] of `src` after `prelude` has run in the same scope (a session's saved
/// functions and aliases): a call in `src` to a function the prelude defined is walked
/// through its body. What the prelude itself runs is not in the result.
pub fn walk_after(prelude: &str, src: &str, ctx: &Context) -> Walk {
    let mut scope = Scope::new(ctx.env, ctx.cwd.map(Path::to_path_buf));
    let mut w = Walker {
        parse: parse_lines,
        out: Walk::default(),
        next_pipeline: 0,
        frames: Vec::new(),
        exit_traps: Vec::new(),
    };
    let at = At::top(Arc::from(""));
    w.script_text(prelude, &mut scope, &at);
    w.out = Walk::default();
    w.next_pipeline = 0;
    w.frames.clear();
    w.exit_traps.clear();
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
            if self.out.too_deep.len() < 16 {
                let mut end = text.len().min(64 << 10);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                self.out.too_deep.push(text[..end].to_string());
                self.out.hidden.push(Hidden {
                    text: text[..end].to_string(),
                    origin: at.origin,
                    depth: at.depth,
                });
            }
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
