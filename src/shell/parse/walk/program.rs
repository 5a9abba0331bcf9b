//! Running a program once its words are known: wrappers looked through, builtins,
//! function calls, shells and `eval` run from strings, traps, `find -exec` and `xargs`
//! fed by known text. Apart from the walker over the syntax tree, which calls it for
//! every simple command.

use super::builtins::{builtin, output_of};
use super::*;

impl Walker {
    /// Looks through the wrappers, then runs the program.
    pub(super) fn run(
        &mut self,
        argv: Vec<Field>,
        cmd: &Cmd,
        scope: &mut Scope,
        at: &At,
    ) -> Option<String> {
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
