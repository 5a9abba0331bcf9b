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

use crate::pipeline::intercept::{Segment, Separator, Split};
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
    // `a || tail -n 5` is an or-list, not a pipe, and an escaped `\|` is not an
    // operator at all.
    if rest.is_empty() || rest.ends_with('|') || rest.ends_with('\\') {
        return out;
    }
    if !quotes_balanced(rest) {
        return out;
    }
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
            Ok(n) => receives(trimmed).map(|r| (n, r)),
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

/// What the last pipe of a command receives, when it can be lifted.
struct Receives {
    /// Stdout only: some stage's stderr goes around the pipe.
    stdout_only: bool,
    /// The program of the pipeline's last stage before the pipe.
    producer: Option<String>,
}

/// Ok when the last pipe of `cmd` (a command ending in `| head`/`| tail`) receives
/// everything the command prints, or all of its stdout while its stderr goes around
/// the pipe; otherwise why not.
fn receives(cmd: &str) -> Result<Receives, String> {
    let segments = match super::intercept::split(cmd) {
        Split::Opaque(reason) => {
            return Err(format!(
                "the command uses {reason}, which agentbash does not look inside"
            ));
        }
        Split::Segments(s) => s,
    };
    let nothing = || "nothing is piped into it".to_string();
    let last = segments.len().checked_sub(1).ok_or_else(nothing)?;
    let mut first = last;
    while first > 0 && segments[first].piped_stdin {
        first -= 1;
    }
    if first == last || !segments[last].piped_stdin {
        return Err(nothing());
    }
    for segment in &segments[..first] {
        silent_before(segment)?;
    }
    let stages = &segments[first..last];
    let first_words = words(&stages[0].command);
    match first_words.first().copied() {
        Some(w @ ("time" | "!" | "coproc")) => {
            return Err(format!(
                "`{w}` applies to the whole pipeline, head/tail included"
            ));
        }
        // One stage lifted out of its pipe would run in the shell itself instead of
        // a subshell, and a session would keep what it changed.
        Some(w) if stages.len() == 1 && crate::shell::session::changes_shell(w) => {
            return Err(format!(
                "`{w}` would change the shell itself once out of the pipe (in a pipe it runs in a subshell)"
            ));
        }
        _ => {}
    }
    let mut stdout_only = false;
    for stage in stages {
        stdout_only |= !stderr_into_pipe(stage)?;
    }
    let producer = stages.last().and_then(|stage| {
        words(&stage.command)
            .into_iter()
            .find(|w| !is_assignment(w))
            .map(|w| w.trim_matches(['\'', '"']).to_string())
    });
    Ok(Receives {
        stdout_only,
        producer,
    })
}

/// `NAME=value` (a prefix assignment, not a program).
fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| crate::config::schema::valid_env_name(name))
}

/// Ok when `segment`, run before the pipeline, cannot print: `cd DIR`, `export
/// NAME=value…` or plain assignments. A failing `cd` prints an error, so it must be
/// joined with `&&` (the pipeline then does not run, and the error is all the output).
fn silent_before(segment: &Segment) -> Result<(), String> {
    let words = words(&segment.command);
    let may_print = || format!("\"{}\" before the pipeline may also print", segment.text);
    let valid_export = |w: &&str| {
        let name = w.split_once('=').map_or(*w, |(n, _)| n);
        crate::config::schema::valid_env_name(name.strip_suffix('+').unwrap_or(name))
    };
    if segment.followed_by == Some(Separator::Background) {
        return Err(format!(
            "\"{}\" runs in the background next to the pipeline",
            segment.text
        ));
    }
    let cannot_fail = match words.as_slice() {
        [] => true,
        ["export", rest @ ..] if !rest.is_empty() && rest.iter().all(valid_export) => true,
        ["cd"] => false,
        ["cd", dir] if !dir.starts_with('-') && !has_unquoted(dir, b"<>") => false,
        _ => return Err(may_print()),
    };
    match segment.followed_by {
        Some(Separator::And) => Ok(()),
        Some(Separator::Semicolon | Separator::Newline) if cannot_fail => Ok(()),
        Some(Separator::Semicolon | Separator::Newline) => Err(format!(
            "\"{}\" before the pipeline prints an error if it fails, and `;` runs the pipeline anyway (join them with && to lift)",
            segment.text
        )),
        Some(sep) => Err(format!(
            "\"{}\" is joined to what follows by `{}`",
            segment.text,
            sep.as_str()
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
fn stderr_into_pipe(stage: &Segment) -> Result<bool, String> {
    let unknown = || {
        format!(
            "\"{}\" has a redirection agentbash does not follow",
            stage.text
        )
    };
    let (mut out, mut err) = (Dest::Pipe, Dest::Terminal);
    let words = words(&stage.text);
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        i += 1;
        let Some((fd, dup, mut operand)) = redirection(word) else {
            if has_unquoted(word, b">") {
                return Err(unknown());
            }
            continue;
        };
        if operand.is_empty() {
            operand = words.get(i).copied().unwrap_or_default();
            i += 1;
        }
        let target = |out: Dest, err: Dest| -> Option<Dest> {
            match operand.trim_matches(['\'', '"']) {
                "1" if dup => Some(out),
                "2" if dup => Some(err),
                "-" if dup => Some(Dest::Elsewhere),
                n if dup && n.bytes().all(|b| b.is_ascii_digit()) => None,
                "/dev/stdout" | "/dev/fd/1" => Some(out),
                "/dev/stderr" | "/dev/fd/2" => Some(err),
                "/dev/tty" => Some(Dest::Terminal),
                "" => None,
                _ => Some(Dest::Elsewhere),
            }
        };
        if has_unquoted(operand, b"<>") {
            return Err(unknown());
        }
        let to = target(out, err).ok_or_else(unknown)?;
        let names_file = !operand.bytes().all(|b| b.is_ascii_digit() || b == b'-');
        match fd {
            // `&>file`, and `>&file` naming a file rather than a descriptor.
            Fd::Both => (out, err) = (to, to),
            Fd::Out(None) if dup && names_file => (out, err) = (to, to),
            Fd::Out(Some(1)) if dup && names_file => return Err(unknown()),
            Fd::Out(None | Some(1)) => out = to,
            Fd::Out(Some(2)) => err = to,
            Fd::Out(Some(_)) | Fd::Input(0) => {}
            Fd::Input(_) => return Err(unknown()),
        }
    }
    // `|&` is `2>&1 |`, applied after the stage's own redirections.
    if stage.followed_by == Some(Separator::PipeAll) {
        err = out;
    }
    if out == Dest::Terminal {
        return Err(format!(
            "the output of \"{}\" goes around the pipe",
            stage.text
        ));
    }
    Ok(err != Dest::Terminal)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fd {
    /// An output redirection of this descriptor (`None`: written without one, fd 1).
    Out(Option<u32>),
    /// `&>` / `&>>`
    Both,
    /// An input redirection (`<`, `<&`, `<>`, `<<<`) of this descriptor.
    Input(u32),
}

/// A redirection word: (descriptor, whether it duplicates (`>&`), operand — empty
/// when it is the next word).
fn redirection(word: &str) -> Option<(Fd, bool, &str)> {
    if let Some(rest) = word.strip_prefix("&>") {
        return Some((Fd::Both, false, rest.strip_prefix('>').unwrap_or(rest)));
    }
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    let explicit = word[..digits].parse::<u32>().ok();
    let rest = &word[digits..];
    if let Some(r) = rest.strip_prefix('<') {
        let r = r.trim_start_matches(['<', '&', '>']);
        return Some((Fd::Input(explicit.unwrap_or(0)), false, r));
    }
    let r = rest.strip_prefix('>')?;
    let fd = Fd::Out(explicit);
    Some(match r.as_bytes().first() {
        Some(b'&') => (fd, true, &r[1..]),
        Some(b'>' | b'|') => (fd, false, &r[1..]),
        _ => (fd, false, r),
    })
}

/// The blank-separated words of a flat segment, quotes kept (`a "b c"` → `a`, `"b c"`).
fn words(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while matches!(b.get(i), Some(b' ' | b'\t' | b'\n')) {
            i += 1;
        }
        let start = i;
        while let Some(&c) = b.get(i) {
            if matches!(c, b' ' | b'\t' | b'\n') {
                break;
            }
            i = skip_quoted(b, i).unwrap_or(i + 1);
        }
        if i > start {
            out.push(s.get(start..i.min(b.len())).unwrap_or_default());
        }
    }
    out
}

/// True when `word` holds one of `bytes` outside quotes and escapes.
fn has_unquoted(word: &str, bytes: &[u8]) -> bool {
    let b = word.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if bytes.contains(&c) {
            return true;
        }
        i = skip_quoted(b, i).unwrap_or(i + 1);
    }
    false
}

/// When a quote, an escape or `${…}` starts at `i`: the index just past it.
fn skip_quoted(b: &[u8], i: usize) -> Option<usize> {
    let close = |from: usize, q: u8, escapes: bool| {
        let mut j = from;
        while let Some(&c) = b.get(j) {
            if escapes && c == b'\\' {
                j += 2;
            } else if c == q {
                return j + 1;
            } else {
                j += 1;
            }
        }
        b.len()
    };
    match (b[i], b.get(i + 1)) {
        (b'\\', _) => Some(i + 2),
        (b'\'', _) => Some(close(i + 1, b'\'', false)),
        (b'"', _) => Some(close(i + 1, b'"', true)),
        (b'$', Some(b'\'')) => Some(close(i + 2, b'\'', true)),
        (b'$', Some(b'{')) => {
            let mut depth = 0usize;
            let mut j = i + 1;
            while let Some(&c) = b.get(j) {
                match c {
                    b'\\' => j += 1,
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Some(b.len())
        }
        _ => None,
    }
}

/// True when `s` ends outside any quote (so the `|` we found is a real operator).
fn quotes_balanced(s: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for ch in s.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match ch {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    !single && !double && !escaped
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
                "make>out 2>&1 | tail -n 5",
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
            // syntax the splitter does not look into
            ("(echo warn >&2; seq 5) | head -n 1", "subshell"),
            ("{ make; } 2>&1 | tail -n 1", "command group"),
            ("echo $(date) 2>&1 | tail -n 1", "command substitution"),
            ("cat <<EOF\nx\nEOF\nmake 2>&1 | tail -n 1", "heredoc"),
            (
                "for i in 1 2; do echo $i; done 2>&1 | tail -n 1",
                "may also print",
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
