//! The simple commands of a command line, as the interceptor's rules see them.
//!
//! The flat splitter ([`super::split`]) declines compound syntax; this pass reads it
//! instead, because agents wrap the very commands the rules route in groups, loops,
//! conditionals and wrappers (`if …; then cat f; fi`, `sudo sed -i …`, `bash -c '…'`).
//! It walks the command once, quote-aware, and yields each simple command with:
//!
//! - compound keywords (`then`, `do`, `{`, `(`, `!`, …), `case` patterns, `for … in …`
//!   heads and function names removed;
//! - wrappers looked through (`sudo`, `env`, `nice`, `time`, `timeout`, `command`,
//!   `exec`, `stdbuf`, `ionice`, `xargs`, leading redirections and assignments, `\cmd`,
//!   `/usr/bin/cmd`), and `bash -c '…'` strings read as commands of their own;
//! - heredoc bodies skipped (they are data), so `tee f <<EOF` is seen as `tee f <<EOF`;
//! - what surrounds it: whether its stdin or stdout is a pipe, whether it runs in the
//!   background, whether a `timeout` bounds it.
//!
//! `$(…)`, backticks and `${…}` stay inside the word they belong to: their contents are
//! not commands of this line as far as routing is concerned (`git commit -m "$(cat <<EOF
//! …)"` is a commit). The pass never panics and never rejects input; it reports
//! [`None`] only for an unterminated quote or substitution, and the interceptor then
//! falls back to checking the whole command.

/// One simple command, with its wrappers removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    /// The command as written from its program name to its end (heredoc bodies, which
    /// follow the line, excluded).
    pub text: String,
    /// Stdin is the previous command's output (`a | b`); cleared by `xargs`, which turns
    /// its stdin into arguments.
    pub piped_stdin: bool,
    /// Stdout goes into the next command of a pipeline.
    pub piped_stdout: bool,
    /// Run in the background (`cmd &`, `(cmd) &`).
    pub background: bool,
    /// A `timeout` wrapper bounds it.
    pub bounded: bool,
    /// Run by `xargs`, which gives it its stdin as arguments.
    pub via_xargs: bool,
    /// The words of [`Simple::text`] (quotes kept).
    pub words: Vec<String>,
}

/// How deep `bash -c '…'` strings are read; deeper ones are left as words.
const MAX_NESTING: usize = 4;

/// The simple commands of `src`, or `None` when its quoting does not terminate.
pub fn simple_commands(src: &str) -> Option<Vec<Simple>> {
    let mut out = Vec::new();
    collect(src, 0, false, &mut out)?;
    Some(out)
}

fn collect(src: &str, depth: usize, bounded: bool, out: &mut Vec<Simple>) -> Option<()> {
    let tokens = tokenize(src)?;
    let text = |w: &Word| src.get(w.start..w.end).unwrap_or_default();
    let mut current: Vec<Word> = Vec::new();
    let mut piped_stdin = false;
    // Inside `case … in`, between an arm's end and its `)`: the words are a pattern.
    let mut case_pattern = false;
    for token in tokens.into_iter().chain(std::iter::once(Tok::Op(Op::End))) {
        match token {
            Tok::Word(w) => {
                if case_pattern {
                    if text(&w) == "esac" {
                        case_pattern = false;
                    }
                    continue;
                }
                let n = current.len();
                if n >= 2 && text(&w) == "in" && current.get(n - 2).map(text) == Some("case") {
                    current.clear();
                    case_pattern = true;
                    continue;
                }
                current.push(w);
            }
            Tok::Op(op) => {
                if case_pattern {
                    if op == Op::Close {
                        case_pattern = false;
                    }
                    continue;
                }
                // A word followed by `()` names a function; its body follows.
                if op == Op::Open && current.len() == 1 {
                    current.clear();
                    continue;
                }
                let piped_out = op == Op::Pipe;
                let background = op == Op::Background;
                if current.is_empty() {
                    // `(cmd) &`, `{ cmd; } &`, `… done &`: the group runs in the
                    // background, which for routing is its last command.
                    if background && let Some(last) = out.last_mut() {
                        last.background = true;
                    }
                } else {
                    let words = std::mem::take(&mut current);
                    simplify(
                        src,
                        &words,
                        Context {
                            piped_stdin,
                            piped_stdout: piped_out,
                            background,
                            bounded,
                            depth,
                        },
                        out,
                    );
                }
                piped_stdin = piped_out;
                if op == Op::CaseEnd {
                    case_pattern = true;
                }
            }
        }
    }
    Some(())
}

/// Where a simple command sits.
#[derive(Debug, Clone, Copy)]
struct Context {
    piped_stdin: bool,
    piped_stdout: bool,
    background: bool,
    bounded: bool,
    depth: usize,
}

/// Removes keywords and wrappers from one simple command and records it.
fn simplify(src: &str, words: &[Word], ctx: Context, out: &mut Vec<Simple>) {
    let text = |w: &Word| src.get(w.start..w.end).unwrap_or_default();
    let Context {
        mut piped_stdin,
        piped_stdout,
        background,
        mut bounded,
        depth,
    } = ctx;
    let mut via_xargs = false;
    let mut i = 0;
    // Keywords, assignments and redirections in front of the program.
    loop {
        let Some(w) = words.get(i) else { return };
        let t = text(w);
        match t {
            "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "{" | "}" | "fi"
            | "done" | "esac" => i += 1,
            "time" => {
                i += 1;
                if words.get(i).map(text) == Some("-p") {
                    i += 1;
                }
            }
            "for" | "select" | "case" => return,
            // `function name [()]`: the body follows.
            "function" => i += 2,
            _ if is_assignment(t) => i += 1,
            _ if w.redirect => i += if redirect_takes_target(t) { 2 } else { 1 },
            _ => break,
        }
    }
    // Wrappers: each takes its own options, then the command.
    loop {
        let Some(w) = words.get(i) else { return };
        let name = program_name(text(w));
        let skip = |i: &mut usize, with_arg: &[&str]| {
            *i += 1;
            while let Some(w) = words.get(*i) {
                let t = text(w);
                if t == "--" {
                    *i += 1;
                    break;
                }
                if is_assignment(t) && name == "env" {
                    *i += 1;
                    continue;
                }
                if !t.starts_with('-') || t == "-" {
                    break;
                }
                *i += 1;
                if with_arg.contains(&t) {
                    *i += 1;
                }
            }
        };
        match name {
            "sudo" | "doas" => skip(
                &mut i,
                &["-u", "-g", "-p", "-C", "-D", "-r", "-t", "-U", "-h"],
            ),
            "env" => skip(&mut i, &["-u", "-C", "-S", "--unset", "--chdir"]),
            "nice" => skip(&mut i, &["-n", "--adjustment"]),
            "ionice" => skip(&mut i, &["-c", "-n", "-p", "--class", "--classdata"]),
            "stdbuf" => skip(&mut i, &["-i", "-o", "-e"]),
            "exec" => skip(&mut i, &["-a"]),
            "time" => skip(&mut i, &["-f", "-o", "--format", "--output"]),
            "command" => {
                let next = words.get(i + 1).map(text);
                if matches!(next, Some("-v" | "-V")) {
                    return;
                }
                skip(&mut i, &[]);
            }
            "timeout" => {
                skip(&mut i, &["-s", "-k", "--signal", "--kill-after"]);
                // The duration.
                if words.get(i).is_some() {
                    i += 1;
                }
                bounded = true;
            }
            "xargs" => {
                skip(
                    &mut i,
                    &[
                        "-n",
                        "-I",
                        "-P",
                        "-d",
                        "-L",
                        "-E",
                        "-s",
                        "-a",
                        "--max-args",
                        "--max-procs",
                        "--delimiter",
                        "--arg-file",
                    ],
                );
                piped_stdin = false;
                via_xargs = true;
            }
            _ => break,
        }
    }
    let Some(first) = words.get(i) else {
        return;
    };
    let rest = &words[i..];
    let name = program_name(text(first));
    // `bash -c 'script'`: the script is the command.
    if matches!(name, "bash" | "sh" | "zsh" | "dash" | "ksh") && depth < MAX_NESTING {
        let mut j = 1;
        while let Some(w) = rest.get(j) {
            let t = text(w);
            if t == "-c" || (t.starts_with('-') && !t.starts_with("--") && t.ends_with('c')) {
                if let Some(script) = rest.get(j + 1) {
                    let inner = unquote(text(script));
                    let before = out.len();
                    if collect(&inner, depth + 1, bounded, out).is_some() {
                        if background && let Some(last) = out.last_mut() {
                            last.background = true;
                        }
                        if out.len() > before {
                            return;
                        }
                    }
                }
                break;
            }
            if !t.starts_with('-') {
                break;
            }
            j += 1;
        }
    }
    let end = rest.last().map_or(first.end, |w| w.end);
    let mut command = String::new();
    // `\cat` and `/usr/bin/cat` are cat.
    command.push_str(name);
    command.push_str(src.get(first.end..end).unwrap_or_default());
    let mut word_list: Vec<String> = vec![name.to_string()];
    word_list.extend(rest.iter().skip(1).map(|w| text(w).to_string()));
    out.push(Simple {
        text: command,
        piped_stdin,
        piped_stdout,
        background,
        bounded,
        via_xargs,
        words: word_list,
    });
}

/// `\cat` → `cat`; `/usr/bin/cat` → `cat` (a path into a bin directory names the
/// program, a relative path such as `./cat` does not).
fn program_name(word: &str) -> &str {
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

fn is_assignment(word: &str) -> bool {
    let bytes = word.as_bytes();
    let name_end = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
        .unwrap_or(bytes.len());
    if name_end == 0 || bytes[0].is_ascii_digit() {
        return false;
    }
    match bytes.get(name_end) {
        Some(b'=') => true,
        Some(b'+') => bytes.get(name_end + 1) == Some(&b'='),
        _ => false,
    }
}

/// A redirection operator written apart from its target (`2> f`, `< in`) takes the next
/// word; `2>/dev/null`, `2>&1` carry it.
fn redirect_takes_target(word: &str) -> bool {
    let op = word.trim_start_matches(|c: char| c.is_ascii_digit());
    matches!(op, ">" | ">>" | "<" | ">|" | "&>" | "&>>" | "<>")
}

/// The text of a single shell word with its outer quoting removed (enough for a
/// `bash -c` script: `'…'`, `"…"` with `\"` `\\` `\$` escapes, or a bare word).
fn unquote(word: &str) -> String {
    let bytes = word.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' => {
                let end = word[i + 1..].find('\'').map_or(word.len(), |p| i + 1 + p);
                out.push_str(&word[i + 1..end]);
                i = end + 1;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\'
                        && matches!(bytes.get(i + 1), Some(b'"' | b'\\' | b'$' | b'`'))
                    {
                        i += 1;
                    }
                    let ch_len = word[i..].chars().next().map_or(1, char::len_utf8);
                    out.push_str(&word[i..i + ch_len]);
                    i += ch_len;
                }
                i += 1;
            }
            b'\\' if i + 1 < bytes.len() => {
                let ch_len = word[i + 1..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&word[i + 1..i + 1 + ch_len]);
                i += 1 + ch_len;
            }
            _ => {
                let ch_len = word[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&word[i..i + ch_len]);
                i += ch_len;
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `;` `&&` `||`
    List,
    Pipe,
    Background,
    Newline,
    /// `(`
    Open,
    /// `)`
    Close,
    /// `;;` `;&` `;;&`: a `case` arm ends, the next pattern follows.
    CaseEnd,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Word {
    start: usize,
    end: usize,
    /// The word is (or starts with) a redirection operator.
    redirect: bool,
}

#[derive(Debug)]
enum Tok {
    Word(Word),
    Op(Op),
}

/// Words and operators of `src`; heredoc bodies are skipped. `None` on an unterminated
/// quote, substitution or expansion.
fn tokenize(src: &str) -> Option<Vec<Tok>> {
    let b = src.as_bytes();
    let len = b.len();
    let mut tokens = Vec::new();
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    while i < len {
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\n' => {
                tokens.push(Tok::Op(Op::Newline));
                i += 1;
                for (delim, strip_tabs) in heredocs.drain(..) {
                    i = skip_heredoc(src, i, &delim, strip_tabs);
                }
            }
            b'#' => {
                i = src[i..].find('\n').map_or(len, |p| i + p);
            }
            b';' => {
                if b.get(i + 1) == Some(&b';') {
                    i += if b.get(i + 2) == Some(&b'&') { 3 } else { 2 };
                    tokens.push(Tok::Op(Op::CaseEnd));
                } else if b.get(i + 1) == Some(&b'&') {
                    i += 2;
                    tokens.push(Tok::Op(Op::CaseEnd));
                } else {
                    i += 1;
                    tokens.push(Tok::Op(Op::List));
                }
            }
            b'|' => match b.get(i + 1) {
                Some(b'|') => {
                    tokens.push(Tok::Op(Op::List));
                    i += 2;
                }
                Some(b'&') => {
                    tokens.push(Tok::Op(Op::Pipe));
                    i += 2;
                }
                _ => {
                    tokens.push(Tok::Op(Op::Pipe));
                    i += 1;
                }
            },
            b'&' if b.get(i + 1) == Some(&b'&') => {
                tokens.push(Tok::Op(Op::List));
                i += 2;
            }
            b'&' if b.get(i + 1) != Some(&b'>') => {
                tokens.push(Tok::Op(Op::Background));
                i += 1;
            }
            b'(' => {
                tokens.push(Tok::Op(Op::Open));
                i += 1;
            }
            b')' => {
                tokens.push(Tok::Op(Op::Close));
                i += 1;
            }
            b'<' | b'>' if b.get(i + 1) == Some(&b'(') => {
                let end = substitution(src, i + 2)?;
                tokens.push(Tok::Word(Word {
                    start: i,
                    end,
                    redirect: false,
                }));
                i = end;
            }
            _ => {
                let start = i;
                let mut redirect = false;
                // A redirection operator, with its fd number, is a word of its own.
                let mut j = i;
                while j < len && b[j].is_ascii_digit() {
                    j += 1;
                }
                if j < len && matches!(b[j], b'<' | b'>')
                    || (b[i] == b'&' && b.get(i + 1) == Some(&b'>'))
                {
                    redirect = true;
                    let mut k = if b[i] == b'&' { i + 2 } else { j + 1 };
                    if b[j.min(len - 1)] == b'<' && b.get(k) == Some(&b'<') {
                        // `<<<` here-string, or `<<[-]DELIM` heredoc.
                        if b.get(k + 1) == Some(&b'<') {
                            k += 2;
                        } else {
                            k += 1;
                            let strip_tabs = b.get(k) == Some(&b'-');
                            if strip_tabs {
                                k += 1;
                            }
                            while b.get(k).is_some_and(|&c| c == b' ' || c == b'\t') {
                                k += 1;
                            }
                            let delim_start = k;
                            k = word_end(src, k)?;
                            let delim = unquote(&src[delim_start..k]);
                            heredocs.push((delim, strip_tabs));
                            tokens.push(Tok::Word(Word {
                                start,
                                end: k,
                                redirect: true,
                            }));
                            i = k;
                            continue;
                        }
                    } else if matches!(b.get(k), Some(b'>' | b'&' | b'|')) {
                        k += 1;
                    }
                    i = k;
                    // The target, when written without a blank.
                    if i < len
                        && !matches!(
                            b[i],
                            b' ' | b'\t' | b'\n' | b';' | b'|' | b'&' | b'(' | b')'
                        )
                    {
                        i = word_end(src, i)?;
                    }
                } else {
                    i = word_end(src, i)?;
                }
                if i == start {
                    i += 1;
                }
                tokens.push(Tok::Word(Word {
                    start,
                    end: i,
                    redirect,
                }));
            }
        }
    }
    Some(tokens)
}

/// Skips heredoc body lines from `i` (the start of the line after the operator) up to
/// and including the line that is exactly `delim`.
fn skip_heredoc(src: &str, mut i: usize, delim: &str, strip_tabs: bool) -> usize {
    while i < src.len() {
        let end = src[i..].find('\n').map_or(src.len(), |p| i + p);
        let line = &src[i..end];
        let line = if strip_tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        i = (end + 1).min(src.len());
        if line == delim {
            break;
        }
    }
    i
}

/// The end of the word starting at `i`: quotes, escapes and `$(…)`/`${…}`/backticks are
/// consumed whole. `None` when one of them does not terminate.
fn word_end(src: &str, mut i: usize) -> Option<usize> {
    let b = src.as_bytes();
    let len = b.len();
    while i < len {
        match b[i] {
            b' ' | b'\t' | b'\n' | b';' | b'|' | b'&' | b'(' | b')' | b'<' | b'>' => break,
            b'\\' => {
                i += 1;
                if i < len {
                    i += src[i..].chars().next().map_or(1, char::len_utf8);
                }
            }
            b'\'' => i = i + 1 + src[i + 1..].find('\'')? + 1,
            b'"' => i = double_quoted(src, i + 1)?,
            b'`' => i = backticks(src, i + 1)?,
            b'$' => match b.get(i + 1) {
                Some(b'(') => i = substitution(src, i + 2)?,
                Some(b'{') => i = braced(src, i + 2)?,
                Some(b'\'') => i = ansi_c(src, i + 2)?,
                _ => i += 1,
            },
            _ => i += src[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    Some(i)
}

fn double_quoted(src: &str, mut j: usize) -> Option<usize> {
    let b = src.as_bytes();
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            b'`' => j = backticks(src, j + 1)?,
            b'$' if b.get(j + 1) == Some(&b'(') => j = substitution(src, j + 2)?,
            b'$' if b.get(j + 1) == Some(&b'{') => j = braced(src, j + 2)?,
            _ => j += 1,
        }
    }
    None
}

fn backticks(src: &str, mut j: usize) -> Option<usize> {
    let b = src.as_bytes();
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'`' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

fn ansi_c(src: &str, mut j: usize) -> Option<usize> {
    let b = src.as_bytes();
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'\'' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

fn braced(src: &str, mut j: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut depth = 1usize;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'{' => {
                depth += 1;
                j += 1;
            }
            b'}' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            b'\'' => j = j + 1 + src[j + 1..].find('\'')? + 1,
            b'"' => j = double_quoted(src, j + 1)?,
            b'$' if b.get(j + 1) == Some(&b'(') => j = substitution(src, j + 2)?,
            _ => j += 1,
        }
    }
    None
}

/// Scans a `$(…)` body starting after the `(` and returns the end of its `)`: words,
/// nested parentheses and heredocs inside it are honoured.
fn substitution(src: &str, mut j: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut depth = 1usize;
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    while j < b.len() {
        match b[j] {
            b'(' => {
                depth += 1;
                j += 1;
            }
            b')' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            b'\n' => {
                j += 1;
                for (delim, strip_tabs) in heredocs.drain(..) {
                    j = skip_heredoc(src, j, &delim, strip_tabs);
                }
            }
            b'<' if b.get(j + 1) == Some(&b'<') && b.get(j + 2) != Some(&b'<') => {
                let mut k = j + 2;
                let strip_tabs = b.get(k) == Some(&b'-');
                if strip_tabs {
                    k += 1;
                }
                while b.get(k).is_some_and(|&c| c == b' ' || c == b'\t') {
                    k += 1;
                }
                let start = k;
                k = word_end(src, k)?.max(k + 1).min(b.len());
                heredocs.push((unquote(&src[start..k]), strip_tabs));
                j = k;
            }
            b' ' | b'\t' | b';' | b'|' | b'&' | b'<' | b'>' => j += 1,
            b'#' if matches!(j.checked_sub(1).map(|p| b[p]), Some(b' ' | b'\t' | b'\n')) => {
                j = src[j..].find('\n').map_or(b.len(), |p| j + p);
            }
            _ => j = word_end(src, j)?.max(j + 1),
        }
    }
    None
}
