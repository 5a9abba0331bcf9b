//! Normalize: a trailing `| head -n N` / `| tail -n N` becomes a line limit.
//!
//! Agents habitually append `| tail -n 50` to keep output short. Run literally, that
//! throws the rest of the output away for good; lifted into a limit, the caller still
//! sees the same lines while the full stream lands in an artifact.
//!
//! The lift is only made when it cannot change what is shown. The command must be one
//! pipeline, optionally after commands that print nothing (`cd DIR &&`, `export
//! NAME=value`, `NAME=value`). When every stage sends its stderr into the pipe too
//! (`2>&1`, `|&`, or away to a file), the pipe receives *all* of the output and the
//! limit views it all. When stderr goes around the pipe (`pytest | tail -n 20`), the
//! pipe receives stdout only: the limit then views stdout alone and stderr is shown in
//! full, where bash shows it ([`Normalized::stdout_only`]; the executor keeps the two
//! streams apart). Anything else runs as written, through the shell's own
//! `head`/`tail`, and [`Normalized::lift`] says why.

use crate::shell::parse::ast::{
    self, Command, Compound, Connector, Part, RedirOp, Script, Sep, Target, Word,
};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Normalized {
    /// The command that will run.
    pub command: String,
    /// The stripped suffix exactly as written (e.g. `| tail -n 5`), if any.
    pub stripped: Option<String>,
    /// View limits: explicit ones, or the lifted one.
    pub head: Option<usize>,
    pub tail: Option<usize>,
    /// A lifted `| head -n N`'s N: past it the command is stopped the way `head`
    /// would stop it. Explicit limits are views only and never set this.
    pub stop_after: Option<usize>,
    /// What became of a trailing `| head`/`| tail` (none when the command has none).
    pub lift: Option<Lift>,
    /// The lifted pipe received stdout only (stderr went around it): the limits view
    /// stdout, and stderr is shown in full.
    pub stdout_only: bool,
    /// The program whose exit status the lifted command reports (the last stage of
    /// what is left of the pipeline), for the notice when it differs from what the
    /// stripped `| tail` would have returned.
    pub producer: Option<String>,
}

impl Normalized {
    /// Undo a stdout-only lift: the command runs as written (`original`), and `why`
    /// says so. For runs that cannot keep stdout and stderr apart (a terminal).
    pub fn keep_stdout_pipe(self, original: &str, why: &str) -> Normalized {
        if !self.stdout_only {
            return self;
        }
        Normalized {
            command: original.trim().to_string(),
            lift: Some(Lift {
                lifted: false,
                reason: why.to_string(),
            }),
            ..Default::default()
        }
    }
}

/// Whether a trailing `| head`/`| tail` was lifted into a limit, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Lift {
    pub lifted: bool,
    pub reason: String,
}

impl fmt::Display for Lift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.lifted { "lifted" } else { "not lifted" };
        write!(f, "{verdict} — {}", self.reason)
    }
}

/// A trailing `| head|tail -n N` / `| head|tail -N` (or `|&`) split off `s`: (what precedes the
/// pipe with its trailing whitespace trimmed, the suffix from the `|` on without its
/// trailing whitespace, true for head, N as written). Hand-written because compiling
/// the equivalent regex costs more than the rest of start-up's decisions together;
/// the regex stays in the tests as the oracle.
fn trailing(s: &str) -> Option<(&str, &str, bool, &str)> {
    // The suffix holds no `|` of its own, so the operator is the last one.
    let bar = s.rfind('|')?;
    let suffix = s[bar..].trim_end_matches(char::is_whitespace);
    // `|&` pipes stderr as well: `cmd |& tail -n 5` receives all of the output.
    let after = suffix[1..].strip_prefix('&').unwrap_or(&suffix[1..]);
    let after = after.trim_start_matches(char::is_whitespace);
    let (is_head, after) = if let Some(a) = after.strip_prefix("head") {
        (true, a)
    } else {
        (false, after.strip_prefix("tail")?)
    };
    let after = after.trim_start_matches(char::is_whitespace);
    let digits = if let Some(a) = after.strip_prefix("-n") {
        a.trim_start_matches(char::is_whitespace)
    } else {
        after.strip_prefix('-')?
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((
        s[..bar].trim_end_matches(char::is_whitespace),
        suffix,
        is_head,
        digits,
    ))
}

/// Trim outer whitespace and, with `strip`, lift one trailing head/tail into a limit
/// when the pipe receives all of the output. With an explicit `--head`/`--tail` the
/// trailing pipe is not lifted: the explicit limits then view what the command as
/// written prints (a lifted `| tail -n 5` under `--tail 7` would show 7 lines where
/// the command shows 5).
pub fn normalize(
    command: &str,
    strip: bool,
    explicit_head: Option<usize>,
    explicit_tail: Option<usize>,
) -> Normalized {
    let trimmed = command.trim();
    let mut out = Normalized {
        command: trimmed.to_string(),
        head: explicit_head,
        tail: explicit_tail,
        ..Default::default()
    };
    let Some((rest, suffix, is_head, digits)) = trailing(trimmed) else {
        return out;
    };
    if rest.is_empty() {
        return out;
    }
    // The suffix must be what the parser reads as the last stage of the last pipeline
    // (`a || tail -n 5`, `echo 'a | tail -n 5'`, `echo a \| tail -n 2` are not).
    let Ok(script) = crate::shell::parse::parse(trimmed) else {
        return out;
    };
    let Some(line) = Line::of(&script, suffix) else {
        return out;
    };
    let verdict = if !strip {
        Err("output.strip_head_tail is off".to_string())
    } else if explicit_head.is_some() || explicit_tail.is_some() {
        Err(
            "an explicit head/tail limit is given; it views what the command as written prints"
                .to_string(),
        )
    } else {
        match digits.parse::<usize>() {
            Ok(0) => Err(format!("`{suffix}` prints nothing; it is not a line limit")),
            Err(_) => Err(format!("the count in `{suffix}` is too large")),
            Ok(n) => receives(&script, &line).map(|r| (n, r)),
        }
    };
    let (n, receives) = match verdict {
        Ok(v) => v,
        Err(reason) => {
            out.lift = Some(Lift {
                lifted: false,
                reason,
            });
            return out;
        }
    };
    out.command = rest.to_string();
    out.stripped = Some(suffix.to_string());
    out.stdout_only = receives.stdout_only;
    out.producer = receives.producer;
    let (receives, limit, line) = if receives.stdout_only {
        (
            "stdout only",
            "a line limit on stdout, stderr shown in full",
            "stdout line",
        )
    } else {
        ("all of the output", "a line limit", "line")
    };
    let reason = if is_head {
        out.head = Some(n);
        out.stop_after = Some(n);
        format!(
            "`{suffix}` receives {receives}: it becomes {limit}, and the command is stopped after {line} {n} as head would stop it"
        )
    } else {
        out.tail = Some(n);
        format!("`{suffix}` receives {receives}: it becomes {limit}")
    };
    out.lift = Some(Lift {
        lifted: true,
        reason,
    });
    out
}

/// What follows a command of the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joint {
    And,
    Or,
    Pipe,
    Semicolon,
    Newline,
    Background,
}

impl Joint {
    fn as_str(self) -> &'static str {
        match self {
            Joint::And => "&&",
            Joint::Or => "||",
            Joint::Pipe => "|",
            Joint::Semicolon => ";",
            Joint::Newline => "\\n",
            Joint::Background => "&",
        }
    }
}

/// The line around a trailing `| head`/`| tail`: the commands before its pipeline,
/// each with what follows it, and the pipeline's stages before the head/tail.
struct Line<'s> {
    before: Vec<(&'s Command, Option<Joint>)>,
    pipeline: &'s ast::Pipeline,
}

impl<'s> Line<'s> {
    /// `None` when `suffix` is not the last stage of the last pipeline.
    fn of(script: &'s Script, suffix: &str) -> Option<Self> {
        let last_item = script.body.last()?;
        if last_item.sep == Sep::Amp {
            return None;
        }
        let pipeline = last_item
            .and_or
            .rest
            .last()
            .map_or(&last_item.and_or.first, |(_, p)| p);
        let stages = &pipeline.stages;
        if stages.len() < 2 {
            return None;
        }
        let Command::Simple(last) = &stages.last()?.command else {
            return None;
        };
        let after_bar = suffix.get(1..)?.trim_start_matches('&').trim();
        if script.src.get(last.span.clone())? != after_bar || last.span.end != script.src.len() {
            return None;
        }
        let mut before = Vec::new();
        for item in &script.body {
            let is_last = std::ptr::eq(item, last_item);
            let mut pipelines: Vec<(&ast::Pipeline, Option<Joint>)> = Vec::new();
            let mut joints = item.and_or.rest.iter().map(|(c, _)| match c {
                Connector::And => Joint::And,
                Connector::Or => Joint::Or,
            });
            pipelines.push((&item.and_or.first, joints.next()));
            for (_, p) in &item.and_or.rest {
                pipelines.push((p, joints.next()));
            }
            if let Some(last) = pipelines.last_mut()
                && last.1.is_none()
            {
                last.1 = match item.sep {
                    Sep::Semi => Some(Joint::Semicolon),
                    Sep::Newline => Some(Joint::Newline),
                    Sep::Amp => Some(Joint::Background),
                    Sep::End => None,
                };
            }
            if is_last {
                pipelines.pop();
            }
            for (p, joint) in pipelines {
                for (i, stage) in p.stages.iter().enumerate() {
                    let j = if i + 1 < p.stages.len() {
                        Some(Joint::Pipe)
                    } else {
                        joint
                    };
                    before.push((&stage.command, j));
                }
            }
        }
        Some(Line { before, pipeline })
    }
}

/// The first construct normalize does not look inside, if any (in the order met).
fn opaque(list: &ast::List) -> Option<&'static str> {
    fn word(w: &Word) -> Option<&'static str> {
        for p in &w.parts {
            match p {
                Part::CmdSub { backtick: true, .. } => {
                    return Some("backtick command substitution");
                }
                Part::CmdSub { .. } | Part::Arith { .. } => {
                    return Some("command substitution $(…)");
                }
                Part::ProcSub { .. } => return Some("process substitution <(…) / >(…)"),
                Part::Param { param, .. } => {
                    if let ast::ParamOp::Default { word: w, .. }
                    | ast::ParamOp::Assign { word: w, .. }
                    | ast::ParamOp::Alternative { word: w, .. } = &param.op
                        && let Some(r) = word(w)
                    {
                        return Some(r);
                    }
                }
                _ => {}
            }
        }
        None
    }
    fn command(c: &Command) -> Option<&'static str> {
        match c {
            Command::Simple(s) => {
                for a in &s.assignments {
                    if let ast::Value::Scalar(w) = &a.value
                        && let Some(r) = word(w)
                    {
                        return Some(r);
                    }
                }
                for w in &s.words {
                    if let Some(r) = word(w) {
                        return Some(r);
                    }
                }
                for r in &s.redirects {
                    match &r.target {
                        Target::Heredoc(_) => return Some("heredoc <<"),
                        Target::Word(w) => {
                            if let Some(r) = word(w) {
                                return Some(r);
                            }
                        }
                    }
                }
                None
            }
            Command::Compound(c, _) => match c.as_ref() {
                Compound::Subshell(_) => Some("subshell or parenthesis ( … )"),
                Compound::Brace(_) => Some("command group { …; }"),
                _ => None,
            },
            Command::Function(_) => Some("subshell or parenthesis ( … )"),
            Command::Coproc(_) => None,
        }
    }
    for item in list {
        let pipelines =
            std::iter::once(&item.and_or.first).chain(item.and_or.rest.iter().map(|(_, p)| p));
        for p in pipelines {
            for stage in &p.stages {
                if let Some(r) = command(&stage.command) {
                    return Some(r);
                }
            }
        }
    }
    None
}

/// A compound command's kind, for messages.
fn compound_name(c: &Compound) -> &'static str {
    match c {
        Compound::If { .. } => "an `if`",
        Compound::While { until: false, .. } => "a `while` loop",
        Compound::While { until: true, .. } => "an `until` loop",
        Compound::For { select: true, .. } => "a `select`",
        Compound::For { .. } | Compound::ArithFor { .. } => "a `for` loop",
        Compound::Case { .. } => "a `case`",
        Compound::Arith(_) => "an arithmetic command",
        Compound::Cond(_) => "a `[[ … ]]` test",
        Compound::Brace(_) => "a command group",
        Compound::Subshell(_) => "a subshell",
    }
}

/// What the last pipe of a command receives, when it can be lifted.
struct Receives {
    /// Stdout only: some stage's stderr goes around the pipe.
    stdout_only: bool,
    /// The program of the pipeline's last stage before the pipe.
    producer: Option<String>,
}

/// Ok when the last pipe of the line (a command ending in `| head`/`| tail`) receives
/// everything the command prints, or all of its stdout while its stderr goes around
/// the pipe; otherwise why not.
fn receives(script: &Script, line: &Line) -> Result<Receives, String> {
    if let Some(reason) = opaque(&script.body) {
        return Err(format!(
            "the command uses {reason}, which agentbash does not look inside"
        ));
    }
    let src: &str = &script.src;
    for (command, joint) in &line.before {
        silent_before(command, *joint, src)?;
    }
    let pipeline = line.pipeline;
    let stages = &pipeline.stages[..pipeline.stages.len() - 1];
    if pipeline.time || pipeline.bang {
        let w = if pipeline.time { "time" } else { "!" };
        return Err(format!(
            "`{w}` applies to the whole pipeline, head/tail included"
        ));
    }
    match &stages[0].command {
        Command::Coproc(_) => {
            return Err("`coproc` applies to the whole pipeline, head/tail included".to_string());
        }
        // One stage lifted out of its pipe would run in the shell itself instead of
        // a subshell, and a session would keep what it changed.
        Command::Simple(s) if stages.len() == 1 => {
            if let Some(w) = s.words.first().and_then(|w| src.get(w.span.clone()))
                && crate::shell::session::changes_shell(w)
            {
                return Err(format!(
                    "`{w}` would change the shell itself once out of the pipe (in a pipe it runs in a subshell)"
                ));
            }
        }
        _ => {}
    }
    let mut stdout_only = false;
    for stage in stages {
        stdout_only |= !stderr_into_pipe(&stage.command, stage.pipe_all, src)?;
    }
    let producer = stages.last().and_then(|stage| match &stage.command {
        Command::Simple(s) => s.words.first().map(|w| {
            w.literal().unwrap_or_else(|| {
                let text = src.get(w.span.clone()).unwrap_or("");
                text.trim_matches(['\'', '"']).to_string()
            })
        }),
        _ => None,
    });
    Ok(Receives {
        stdout_only,
        producer,
    })
}

/// Ok when `command`, run before the pipeline, cannot print: `cd DIR`, `export
/// NAME=value…` or plain assignments. A failing `cd` prints an error, so it must be
/// joined with `&&` (the pipeline then does not run, and the error is all the output).
fn silent_before(command: &Command, joint: Option<Joint>, src: &str) -> Result<(), String> {
    let text = |span: &std::ops::Range<usize>| src.get(span.clone()).unwrap_or("").to_string();
    let Command::Simple(s) = command else {
        let what = match command {
            Command::Compound(c, _) => compound_name(c),
            _ => "a definition",
        };
        return Err(format!("{what} before the pipeline may also print"));
    };
    let segment = text(&s.span);
    let may_print = || format!("\"{segment}\" before the pipeline may also print");
    if joint == Some(Joint::Background) {
        return Err(format!(
            "\"{segment}\" runs in the background next to the pipeline"
        ));
    }
    let words: Vec<String> = s.words.iter().map(|w| text(&w.span)).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let valid_export = |w: &&str| {
        let name = w.split_once('=').map_or(*w, |(n, _)| n);
        crate::config::schema::valid_env_name(name.strip_suffix('+').unwrap_or(name))
    };
    if !s.redirects.is_empty() {
        return Err(may_print());
    }
    let cannot_fail = match words.as_slice() {
        [] => true,
        ["export", rest @ ..] if !rest.is_empty() && rest.iter().all(valid_export) => true,
        ["cd"] => false,
        ["cd", dir] if !dir.starts_with('-') => false,
        _ => return Err(may_print()),
    };
    match joint {
        Some(Joint::And) => Ok(()),
        Some(Joint::Semicolon | Joint::Newline) if cannot_fail => Ok(()),
        Some(Joint::Semicolon | Joint::Newline) => Err(format!(
            "\"{segment}\" before the pipeline prints an error if it fails, and `;` runs the pipeline anyway (join them with && to lift)"
        )),
        Some(j) => Err(format!(
            "\"{segment}\" is joined to what follows by `{}`",
            j.as_str()
        )),
        None => Err(may_print()),
    }
}

/// Where a pipeline stage's stdout or stderr ends up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    /// The pipe to the next stage (and so, in the end, the lifted head/tail).
    Pipe,
    /// agentbash's stream, around the pipe.
    Terminal,
    /// A file, the null device, a closed descriptor: not shown at all.
    Elsewhere,
}

/// Where `stage`'s stderr ends up: `Ok(true)` through the pipe (or nowhere shown),
/// `Ok(false)` around it, on agentbash's stream; an error when its stdout goes around
/// the pipe or a redirection cannot be followed.
fn stderr_into_pipe(stage: &Command, pipe_all: bool, src: &str) -> Result<bool, String> {
    let Command::Simple(s) = stage else {
        let what = match stage {
            Command::Compound(c, _) => compound_name(c),
            _ => "a definition",
        };
        return Err(format!(
            "the command uses {what}, which agentbash does not look inside"
        ));
    };
    let text = src.get(s.span.clone()).unwrap_or("");
    let unknown = || format!("\"{text}\" has a redirection agentbash does not follow");
    let (mut out, mut err) = (Dest::Pipe, Dest::Terminal);
    for r in &s.redirects {
        let fd = match &r.fd {
            Some(ast::Fd::Number(n)) => Some(*n),
            Some(ast::Fd::Var(_)) => return Err(unknown()),
            None => None,
        };
        let operand = match &r.target {
            Target::Word(w) => w.literal(),
            Target::Heredoc(_) => Some(String::new()),
        };
        let dup = matches!(r.op, RedirOp::DupOut | RedirOp::DupIn);
        let target = |out: Dest, err: Dest| -> Option<Dest> {
            match operand.as_deref() {
                // A word that expands: a file, whatever its name.
                None => (!dup).then_some(Dest::Elsewhere),
                Some("1") if dup => Some(out),
                Some("2") if dup => Some(err),
                Some("-") if dup => Some(Dest::Elsewhere),
                Some(n) if dup && n.bytes().all(|b| b.is_ascii_digit()) => None,
                Some("/dev/stdout" | "/dev/fd/1") => Some(out),
                Some("/dev/stderr" | "/dev/fd/2") => Some(err),
                Some("/dev/tty") => Some(Dest::Terminal),
                Some(_) => Some(Dest::Elsewhere),
            }
        };
        let names_file = operand
            .as_deref()
            .is_none_or(|o| !o.bytes().all(|b| b.is_ascii_digit() || b == b'-'));
        match r.op {
            RedirOp::In
            | RedirOp::Heredoc
            | RedirOp::HereString
            | RedirOp::ReadWrite
            | RedirOp::DupIn => {
                if fd.unwrap_or(0) != 0 {
                    return Err(unknown());
                }
            }
            RedirOp::OutErr | RedirOp::AppendOutErr => {
                let to = target(out, err).ok_or_else(unknown)?;
                (out, err) = (to, to);
            }
            RedirOp::DupOut if names_file && fd.is_none() => {
                let to = target(out, err).ok_or_else(unknown)?;
                (out, err) = (to, to);
            }
            RedirOp::DupOut if names_file && fd == Some(1) => return Err(unknown()),
            RedirOp::Out | RedirOp::Append | RedirOp::Clobber | RedirOp::DupOut => {
                let to = target(out, err).ok_or_else(unknown)?;
                match fd {
                    None | Some(1) => out = to,
                    Some(2) => err = to,
                    Some(_) => {}
                }
            }
        }
    }
    // `|&` is `2>&1 |`, applied after the stage's own redirections.
    if pipe_all {
        err = out;
    }
    if out == Dest::Terminal {
        return Err(format!("the output of \"{text}\" goes around the pipe"));
    }
    Ok(err != Dest::Terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lifted: the pipe receives all of the output. (input, command that runs,
    /// stripped suffix, head, tail)
    #[test]
    fn lifted() {
        type Case<'a> = (&'a str, &'a str, &'a str, Option<usize>, Option<usize>);
        let cases: &[Case] = &[
            (
                "seq 1 100 2>&1 | tail -n 5",
                "seq 1 100 2>&1",
                "| tail -n 5",
                None,
                Some(5),
            ),
            (
                "seq 1 100 2>&1 | tail -5",
                "seq 1 100 2>&1",
                "| tail -5",
                None,
                Some(5),
            ),
            (
                "seq 1 100 2>&1|head -n3",
                "seq 1 100 2>&1",
                "|head -n3",
                Some(3),
                None,
            ),
            (
                "  ls -la 2>&1  |  head -20  ",
                "ls -la 2>&1",
                "|  head -20",
                Some(20),
                None,
            ),
            (
                "seq 10 |& tail -n 2",
                "seq 10",
                "|& tail -n 2",
                None,
                Some(2),
            ),
            (
                "make 2>/dev/null | tail -n 2",
                "make 2>/dev/null",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "make >log 2>&1 | tail -n 2",
                "make >log 2>&1",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "make>out 2>&1 | tail -n 5",
                "make>out 2>&1",
                "| tail -n 5",
                None,
                Some(5),
            ),
            (
                "make &>log | tail -n 2",
                "make &>log",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "make 2>&1 >/dev/null | tail -n 2",
                "make 2>&1 >/dev/null",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "make 2>&1 >&2 | tail -n 2",
                "make 2>&1 >&2",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "make 2> err.txt | tail -n 2",
                "make 2> err.txt",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "a 2>&1 | grep -v x 2>&1 | tail -n 2",
                "a 2>&1 | grep -v x 2>&1",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "a |& b |& tail -n 2",
                "a |& b",
                "|& tail -n 2",
                None,
                Some(2),
            ),
            (
                "cd src && cargo test 2>&1 | tail -n 20",
                "cd src && cargo test 2>&1",
                "| tail -n 20",
                None,
                Some(20),
            ),
            (
                "cd 'my dir' && export A=1 B=\"x y\" && X=1 make 2>&1 | tail -n 2",
                "cd 'my dir' && export A=1 B=\"x y\" && X=1 make 2>&1",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "export A=1; B=2\nmake 2>&1 | tail -n 2",
                "export A=1; B=2\nmake 2>&1",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "# build\nmake 2>&1 | tail -n 2",
                "# build\nmake 2>&1",
                "| tail -n 2",
                None,
                Some(2),
            ),
            (
                "make 2>&1 |\n  tail -n 2",
                "make 2>&1",
                "|\n  tail -n 2",
                None,
                Some(2),
            ),
        ];
        for (input, cmd, stripped, head, tail) in cases {
            let n = normalize(input, true, None, None);
            assert_eq!(n.command, *cmd, "{input}");
            assert_eq!(n.stripped.as_deref(), Some(*stripped), "{input}");
            assert_eq!((n.head, n.tail), (*head, *tail), "{input}");
            assert_eq!(
                n.stop_after, *head,
                "a lifted head stops the command: {input}"
            );
            assert!(
                n.lift.as_ref().is_some_and(|l| l.lifted),
                "{input}: {:?}",
                n.lift
            );
        }
    }

    /// Not lifted: the command runs as written. (input, part of the reason; "" when the
    /// command has no trailing head/tail at all and no decision is reported)
    #[test]
    fn not_lifted() {
        let cases: &[(&str, &str)] = &[
            ("seq 10 | head -c 5", ""),
            ("seq 10 | head", ""),
            ("seq 10 | tail -f", ""),
            ("false || tail -n 5", ""),
            ("echo 'a | tail -n 5'", ""),
            ("| tail -n 5", ""),
            ("a  b | tail -n 2 x", ""),
            ("echo a \\| tail -n 2", ""),
            ("seq 10 2>&1 | tail -n 0", "prints nothing"),
            ("seq 10 2>&1 | tail -n 99999999999999999999999", "too large"),
            // stdout goes around the pipe
            (
                "make >&2 2>&1 | tail -n 5",
                "output of \"make >&2 2>&1\" goes around the pipe",
            ),
            (
                "make 2>&1 >/dev/tty | tail -n 5",
                "output of \"make 2>&1 >/dev/tty\" goes around the pipe",
            ),
            (
                "make 2>&3 | tail -n 5",
                "redirection agentbash does not follow",
            ),
            (
                "make 2>&1 1<&2 | tail -n 5",
                "redirection agentbash does not follow",
            ),
            // what runs before the pipeline prints around it
            (
                "echo a; seq 5 2>&1 | tail -n 1",
                "\"echo a\" before the pipeline may also print",
            ),
            (
                "echo first && seq 5 2>&1 | head -n 2",
                "\"echo first\" before the pipeline",
            ),
            ("cd src; make 2>&1 | tail -n 1", "join them with &&"),
            ("cd - && make 2>&1 | tail -n 1", "may also print"),
            ("export && make 2>&1 | tail -n 1", "may also print"),
            ("sleep 1 & make 2>&1 | tail -n 1", "background"),
            (
                "X=1 || make 2>&1 | tail -n 1",
                "joined to what follows by `||`",
            ),
            (
                "perl -e 'print 1' && touch done 2>&1 | head -n 5",
                "before the pipeline may also print",
            ),
            // constructs normalize does not look inside
            ("(echo warn >&2; seq 5) | head -n 1", "subshell"),
            ("{ make; } 2>&1 | tail -n 1", "command group"),
            ("echo $(date) 2>&1 | tail -n 1", "command substitution"),
            ("cat <<EOF\nx\nEOF\nmake 2>&1 | tail -n 1", "heredoc"),
            (
                "for i in 1 2; do echo $i; done 2>&1 | tail -n 1",
                "a `for` loop, which agentbash does not look inside",
            ),
            (
                "for i in 1 2; do make; done; seq 3 2>&1 | tail -n 1",
                "a `for` loop before the pipeline may also print",
            ),
            // a stage lifted out of its pipe would run in the shell itself
            (
                "time make 2>&1 | tail -n 1",
                "`time` applies to the whole pipeline",
            ),
            ("! make 2>&1 | tail -n 1", "`!` applies"),
            (
                "source venv/bin/activate 2>&1 | tail -n 1",
                "`source` would change the shell",
            ),
            ("cd /tmp 2>&1 | tail -n 1", "`cd` would change the shell"),
        ];
        for (input, why) in cases {
            let n = normalize(input, true, None, None);
            assert_eq!(n.command, input.trim(), "{input}");
            assert_eq!(
                (n.stripped.as_deref(), n.head, n.tail, n.stop_after),
                (None, None, None, None),
                "{input}"
            );
            match &n.lift {
                None => assert!(why.is_empty(), "{input}: no decision reported"),
                Some(l) => {
                    assert!(
                        !l.lifted && !why.is_empty() && l.reason.contains(why),
                        "{input}: {l}"
                    );
                }
            }
        }
    }

    /// Lifted, the pipe receiving stdout only: the limit views stdout, stderr passes
    /// in full; the producer is the program whose status is reported. (input, command
    /// that runs, head, tail, producer)
    #[test]
    fn lifted_stdout_only() {
        type Case<'a> = (&'a str, &'a str, Option<usize>, Option<usize>, &'a str);
        let cases: &[Case] = &[
            ("seq 1 100 | tail -n 5", "seq 1 100", None, Some(5), "seq"),
            // A line that ends in `|` continues on the next.
            ("seq 3 |\n  tail -n 1", "seq 3", None, Some(1), "seq"),
            (
                "pytest -x | tail -n 20",
                "pytest -x",
                None,
                Some(20),
                "pytest",
            ),
            ("cargo build | head", "cargo build | head", None, None, ""),
            (
                "cargo build | head -n 9",
                "cargo build",
                Some(9),
                None,
                "cargo",
            ),
            (
                "make 2>&1 | grep x | tail -n 5",
                "make 2>&1 | grep x",
                None,
                Some(5),
                "grep",
            ),
            (
                "make 2>/dev/stderr | tail -n 5",
                "make 2>/dev/stderr",
                None,
                Some(5),
                "make",
            ),
            (
                "cd src && CI=1 npm test | tail -n 3",
                "cd src && CI=1 npm test",
                None,
                Some(3),
                "npm",
            ),
            // A line that ends in `|` continues on the next.
            ("seq 3 |\n  tail -n 1", "seq 3", None, Some(1), "seq"),
        ];
        for (input, cmd, head, tail, producer) in cases {
            let n = normalize(input, true, None, None);
            assert_eq!(n.command, *cmd, "{input}");
            assert_eq!((n.head, n.tail), (*head, *tail), "{input}");
            if producer.is_empty() {
                assert!(n.lift.is_none() && !n.stdout_only, "{input}: {n:?}");
                continue;
            }
            assert!(n.stdout_only, "{input}");
            assert_eq!(n.producer.as_deref(), Some(*producer), "{input}");
            let lift = n.lift.as_ref().expect("a decision");
            assert!(
                lift.lifted && lift.reason.contains("receives stdout only"),
                "{input}: {lift}"
            );
        }
        // All of the output, as before: not stdout-only.
        let n = normalize("seq 9 2>&1 | tail -n 2", true, None, None);
        assert!(!n.stdout_only && n.producer.as_deref() == Some("seq"));
        // A terminal keeps the pipe: the command runs as written.
        let n = normalize(" seq 9 | tail -n 2 ", true, None, None)
            .keep_stdout_pipe(" seq 9 | tail -n 2 ", "why");
        assert_eq!(
            (n.command.as_str(), n.tail, n.stripped, n.stdout_only),
            ("seq 9 | tail -n 2", None, None, false)
        );
        assert!(n.lift.is_some_and(|l| !l.lifted && l.reason == "why"));
    }

    /// Explicit limits are views of what the command as written prints: with one,
    /// nothing is lifted (a lifted `| tail -n 5` under `--tail 7` would show 7 lines).
    #[test]
    fn explicit_limits_and_strip_off_keep_the_pipe() {
        let n = normalize("seq 100 2>&1 | tail -n 5", true, None, Some(7));
        assert_eq!(
            (n.command.as_str(), n.head, n.tail),
            ("seq 100 2>&1 | tail -n 5", None, Some(7))
        );
        assert!(
            n.lift
                .is_some_and(|l| !l.lifted && l.reason.contains("explicit"))
        );
        let n = normalize("yes 2>&1 | head -n 5", true, Some(2), None);
        assert_eq!((n.head, n.stop_after, n.stripped), (Some(2), None, None));
        let n = normalize(" seq 100 2>&1 | tail -n 5 ", false, None, None);
        assert_eq!(
            (n.command.as_str(), n.stripped),
            ("seq 100 2>&1 | tail -n 5", None)
        );
        assert!(
            n.lift
                .is_some_and(|l| l.to_string() == "not lifted — output.strip_head_tail is off")
        );
    }

    /// Whatever the input, no panic, and a lift is consistent: the suffix is the end of
    /// the input, the command what precedes it, the decision recorded.
    #[test]
    fn any_command_normalizes_consistently() {
        use proptest::prelude::*;
        let piece = prop::sample::select(vec![
            " ",
            "\n",
            "|",
            "|&",
            "||",
            "&&",
            "&",
            ";",
            "2>&1",
            ">&2",
            "2>",
            ">",
            "<",
            "&>",
            "/dev/null",
            "cd",
            "export",
            "X=1",
            "seq 9",
            "'",
            "\"",
            "$'",
            "${x",
            "}",
            "\\",
            "(",
            "#",
            "head -n 3",
            "tail -3",
            "time",
            "é",
        ]);
        proptest!(ProptestConfig::with_cases(4000), |(parts in prop::collection::vec(piece, 0..14))| {
            let s: String = parts.concat();
            let n = normalize(&s, true, None, None);
            match &n.stripped {
                Some(suffix) => {
                    prop_assert!(n.lift.as_ref().is_some_and(|l| l.lifted));
                    prop_assert!(s.trim().ends_with(suffix.as_str()));
                    prop_assert!(s.trim().starts_with(&n.command) && !n.command.is_empty());
                    prop_assert!(n.head.is_some() != n.tail.is_some());
                    prop_assert_eq!(n.stop_after, n.head);
                }
                None => {
                    prop_assert_eq!(&n.command, s.trim());
                    prop_assert!(n.lift.as_ref().is_none_or(|l| !l.lifted));
                    prop_assert_eq!((n.head, n.tail, n.stop_after), (None, None, None));
                }
            }
        });
    }

    /// The hand-written splitter against the regex it replaced, on inputs built from
    /// the pieces that matter (pipes, names, flags, digits, Unicode whitespace).
    #[test]
    fn trailing_agrees_with_the_regex_oracle() {
        use proptest::prelude::*;
        let oracle = regex::Regex::new(
            r"(?s)^(.*?)\s*(\|&?\s*(head|tail)\s*(?:-n\s*([0-9]+)|-([0-9]+)))\s*$",
        )
        .expect("oracle");
        let piece = prop::sample::select(vec![
            "|", "||", "|&", " ", "\t", "\u{3000}", "\n", "head", "tail", "hea", "-n", "-", "n",
            "5", "0", "42", "x", "'", "\"", "\\", "é", "seq 1 9",
        ]);
        proptest!(ProptestConfig::with_cases(4000), |(parts in prop::collection::vec(piece, 0..12))| {
            let s: String = parts.concat();
            let want = oracle.captures(&s).map(|c| {
                (
                    c.get(1).map_or("", |m| m.as_str()).to_string(),
                    c[2].to_string(),
                    &c[3] == "head",
                    c.get(4).or(c.get(5)).map_or("", |m| m.as_str()).to_string(),
                )
            });
            let got = trailing(&s).map(|(r, suf, h, d)| (r.to_string(), suf.to_string(), h, d.to_string()));
            prop_assert_eq!(got, want, "{:?}", s);
        });
    }
}
