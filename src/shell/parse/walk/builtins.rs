//! The builtins the walk follows without running them: those that change the shell
//! (`cd`, `export`, `set --`, `read`, …) and those whose output is known from their
//! words (`echo`, `printf`), and pathname expansion. Apart from the walker because
//! each is a small interpreter of its own.

use std::path::PathBuf;

use super::super::ast;
use super::super::expand::{Expander, Field, decode_escapes};
use super::super::options::{Spec, scan};
use super::super::parser::parse_lines;
use super::super::scope::{Scope, Var};
use super::assignment_value;

/// The builtins that change the shell: directories, variables, parameters.
pub(super) fn builtin(name: &str, argv: &[Field], scope: &mut Scope, stdin: Option<&str>) {
    let args = &argv[1..];
    match name {
        "cd" | "pushd" => cd(name, args, scope),
        "popd" => {
            scope.oldpwd = scope.cwd.take();
            scope.cwd = scope.dirs.pop();
        }
        "export" | "declare" | "typeset" | "local" | "readonly" => declare(name, args, scope),
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
        "set" => set(args, scope),
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
        "read" => read(args, scope, stdin),
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

/// `cd DIR`, `cd -`, `cd`, `pushd DIR` (which remembers the directory it leaves).
fn cd(name: &str, args: &[Field], scope: &mut Scope) {
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

/// `export`, `declare`, `typeset`, `local`, `readonly`: `NAME=value`, `NAME+=value`,
/// `NAME=(…)`, exported with `export` or `-x`; `-f` (functions) changes nothing here.
fn declare(name: &str, args: &[Field], scope: &mut Scope) {
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
        if !super::super::parser::valid_name(n) {
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

/// `set [options] [--] ARGS…`: new positional parameters when there are any (or `--`).
fn set(args: &[Field], scope: &mut Scope) {
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

/// `read [-r] [-a ARRAY] [-d DELIM] NAMES…`: the first line of known input split into
/// the names; from unknown input, unknown values.
fn read(args: &[Field], scope: &mut Scope, stdin: Option<&str>) {
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
            Some(fs) if k + 1 == names.len() => Var::Str(fs.get(k..).unwrap_or_default().join(" ")),
            Some(fs) => Var::Str(fs.get(k).cloned().unwrap_or_default()),
        };
        scope.set(n, v);
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
pub(super) fn output_of(name: &str, argv: &[Field], stdin: Option<&str>) -> Option<String> {
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
pub(super) fn printf(args: &[Field]) -> Option<String> {
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
            if out.len() > super::super::expand::MAX_VALUE {
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
pub(super) fn pathnames(pattern: &str, scope: &Scope) -> Vec<String> {
    const MAX_MATCHES: usize = 4096;
    let absolute = pattern.starts_with('/');
    let base = if absolute {
        Some(PathBuf::from("/"))
    } else {
        scope.cwd.clone()
    };
    let Some(base) = base else {
        return vec![super::super::glob::unescape(pattern)];
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
            if !super::super::glob::has_meta(comp) {
                let name = super::super::glob::unescape(comp);
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
                .filter(|n| super::super::glob::matches(comp, n, true))
                .collect();
            names.sort_unstable();
            for n in names {
                next.push((dir.join(&n), join(&n)));
            }
            if next.len() > MAX_MATCHES {
                return vec![super::super::glob::unescape(pattern)];
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
        vec![super::super::glob::unescape(pattern)]
    } else {
        found
    }
}
