//! The guard: refuses commands that would destroy a protected path, a disk or the
//! machine, whatever tools the caller declared (docs/guard.md).
//!
//! The interceptor is routing advice that a caller opts into by declaring tools; the
//! guard is not optional for the caller. It reads the command the way bash would for
//! the simple cases — quotes, `~`, `$VAR` and `${VAR:-x}` from the environment the
//! command will get (unset is empty, so `"$UNSET/"` is `/`), earlier assignments and
//! `cd`s in the same command, `..` and `//`, globs such as `/*` — looks through
//! wrappers (`sudo`, `env`, `timeout 5`, `xargs`, `bash -c '…'`, `eval`, `$(…)`), and
//! judges each destructive program's targets against `guard.protected`.
//!
//! It is a guard rail, not a sandbox: a target it cannot resolve before the command
//! runs (`rm -rf "$(pwd)"`, a path read from a file, a script that deletes) is not
//! refused. The kernel sandbox is what confines a command that gets past it.

mod words;

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use words::{Op, Piece, Tok, Word};

/// How deep `bash -c '…'`, `eval` and `$(…)` nest before the guard stops looking.
const MAX_DEPTH: usize = 8;

/// What the guard knows about the run before it starts.
pub struct Context<'a> {
    /// The environment the command will get.
    pub env: &'a BTreeMap<String, String>,
    /// Where it will start.
    pub cwd: &'a Path,
    /// `guard.protected`, as written (`/`, `~`, `~/.ssh`, absolute paths).
    pub protected: &'a [String],
}

/// One target of a destructive program, as resolved.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Target {
    /// The word as written.
    pub word: String,
    /// What it resolves to (`null` when it cannot be known before the command runs).
    pub resolved: Option<String>,
    /// The protected path it would destroy, if any.
    pub protected: Option<String>,
}

/// One destructive program the guard looked at.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Checked {
    /// Which check: `delete`, `permissions`, `move`, `device`, `kill-all`, `fork-bomb`.
    pub check: &'static str,
    /// The program and its arguments after expansion.
    pub command: String,
    pub targets: Vec<Target>,
}

/// The guard's refusal.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Refusal {
    /// `guard:<check>` for a structural check, the rule id for a `deny` rule.
    pub rule: String,
    /// Why, in one sentence.
    pub reason: String,
    /// The protected paths or devices involved.
    pub targets: Vec<String>,
}

/// Everything the structural check decided (what `explain` shows).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Verdict {
    pub refused: Option<Refusal>,
    pub checked: Vec<Checked>,
}

/// The text shown for a refused command (exit 77, nothing run).
pub fn refused_message(reason: &str, original: &str) -> String {
    let reason = reason.trim_end_matches('.');
    format!(
        "Refused: {reason}. agentbash's guard refuses this whatever tools the caller declared; nothing was run.\n\nOriginal command: {original}"
    )
}

/// Checks `command` structurally against `ctx.protected`.
pub fn check(command: &str, ctx: &Context<'_>) -> Verdict {
    let mut w = Walker {
        ctx,
        protected: None,
        verdict: Verdict::default(),
    };
    let scope = Scope {
        cwd: Some(ctx.cwd.to_path_buf()),
        vars: HashMap::new(),
    };
    w.script(command, scope, 0);
    w.verdict
}

#[derive(Clone)]
struct Scope {
    /// `None` once a `cd` went somewhere the guard cannot know.
    cwd: Option<PathBuf>,
    /// Shell variables set by the command itself; `None` = unset.
    vars: HashMap<String, Option<String>>,
}

/// One word after expansion.
#[derive(Debug, Clone, Default)]
struct Field {
    text: String,
    /// The glob pattern (quoted metacharacters escaped) when an unquoted `*?[` is in it.
    glob: Option<String>,
    /// Part of it cannot be known before the command runs.
    dynamic: bool,
}

impl Field {
    fn shown(&self) -> String {
        if self.dynamic {
            format!("{}…", self.text)
        } else {
            self.glob.clone().unwrap_or_else(|| self.text.clone())
        }
    }
}

/// A path (or glob) a destructive program would act on.
enum Resolved {
    Path(PathBuf),
    Glob(Vec<String>),
    Unknown,
}

/// How much of a target an operation touches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The path and everything under it (`rm -r`, `chmod -R`, `mv`).
    Tree,
    /// The path itself (`chmod` without `-R`).
    Node,
    /// Only non-directories (`rm` without `-r`): a protected directory survives it,
    /// but not `rm ~/*`'s sweep of its entries.
    Entries,
}

struct Walker<'a> {
    ctx: &'a Context<'a>,
    /// `guard.protected` resolved, on first need (most commands destroy nothing).
    protected: Option<Vec<(String, PathBuf)>>,
    verdict: Verdict,
}

fn valid_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `NAME=value` (or `NAME+=value`) → (NAME, value).
fn split_assignment(s: &str) -> Option<(&str, &str)> {
    let (name, value) = s.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    valid_name(name).then_some((name, value))
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Lexical `..`/`.`/`//` folding, as the kernel would for a path without symlinks.
fn normalize(base: Option<&Path>, p: &str) -> Option<PathBuf> {
    let joined = if p.starts_with('/') {
        PathBuf::from(p)
    } else {
        base?.join(p)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    Some(out)
}

fn glob_meta(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// fnmatch for one path component: `*`, `?`, `[…]`, `\x`; a leading `.` is matched
/// only by a pattern that starts with `.` (bash's default).
fn component_matches(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') && !pattern.starts_with("\\.") {
        return false;
    }
    enum Item {
        Star,
        One(Box<dyn Fn(char) -> bool>),
    }
    let p: Vec<char> = pattern.chars().collect();
    let mut items: Vec<Item> = Vec::new();
    let mut i = 0;
    while let Some(&c) = p.get(i) {
        i += 1;
        items.push(match c {
            '*' => Item::Star,
            '?' => Item::One(Box::new(|_| true)),
            '\\' if i < p.len() => {
                let lit = p[i];
                i += 1;
                Item::One(Box::new(move |n| n == lit))
            }
            '[' => match p
                .iter()
                .skip(i + 1)
                .position(|&c| c == ']')
                .map(|k| k + i + 1)
            {
                Some(close) => {
                    let mut set: Vec<char> = p[i..close].to_vec();
                    i = close + 1;
                    let negate = matches!(set.first(), Some('!' | '^'));
                    if negate {
                        set.remove(0);
                    }
                    Item::One(Box::new(move |n| {
                        let mut hit = false;
                        let mut k = 0;
                        while k < set.len() {
                            if k + 2 < set.len() && set[k + 1] == '-' {
                                hit |= set[k] <= n && n <= set[k + 2];
                                k += 3;
                            } else {
                                hit |= set[k] == n;
                                k += 1;
                            }
                        }
                        hit != negate
                    }))
                }
                None => Item::One(Box::new(|n| n == '[')),
            },
            lit => Item::One(Box::new(move |n| n == lit)),
        });
    }
    // Greedy matching with one backtrack point per star: O(pattern × name), never
    // exponential, whatever a hostile glob looks like.
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match items.get(pi) {
            Some(Item::Star) => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(Item::One(f)) if f(n[ni]) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    items[pi.min(items.len())..]
        .iter()
        .all(|it| matches!(it, Item::Star))
}

/// A glob component that matches every (non-hidden, or every hidden) entry.
fn matches_everything(component: &str) -> bool {
    component.contains('*') && component.chars().all(|c| matches!(c, '*' | '?' | '.'))
}

/// `/dev/sda`, `/dev/nvme0n1p2`, `/dev/mapper/x`, … or anything that is a block device.
fn is_block_device(path: &str) -> bool {
    let Some(name) = path.strip_prefix("/dev/") else {
        return false;
    };
    let disk_like = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_alphanumeric()))
    };
    let named = [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "md", "loop", "nbd", "zd", "rbd",
    ]
    .iter()
    .any(|p| disk_like(p))
        || name.starts_with("dm-")
        || name.starts_with("mapper/")
        || name.starts_with("disk/");
    if named {
        return true;
    }
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

impl Walker<'_> {
    fn script(&mut self, text: &str, scope: Scope, depth: usize) {
        if depth > MAX_DEPTH || self.verdict.refused.is_some() {
            return;
        }
        let parsed = words::parse(text);
        self.fork_bombs(&parsed.toks);
        let mut stack = vec![scope];
        let mut words: Vec<Word> = Vec::new();
        let mut redirects: Vec<(String, Word)> = Vec::new();
        for tok in parsed.toks {
            match tok {
                Tok::Word(w) => words.push(w),
                Tok::Redirect { op, target } => redirects.push((op, target)),
                Tok::Op(_) | Tok::Open | Tok::Close => {
                    if let Some(top) = stack.last_mut() {
                        self.simple(&std::mem::take(&mut words), &redirects, top, depth);
                    }
                    redirects.clear();
                    match tok {
                        Tok::Open => {
                            let top = stack.last().cloned();
                            stack.extend(top);
                        }
                        Tok::Close if stack.len() > 1 => {
                            stack.pop();
                        }
                        _ => {}
                    }
                }
            }
            if self.verdict.refused.is_some() {
                return;
            }
        }
        if let Some(mut s) = stack.pop() {
            self.simple(&words, &redirects, &mut s, depth);
            for nested in parsed.nested {
                self.script(&nested, s.clone(), depth + 1);
            }
        }
    }

    fn lookup(&self, scope: &Scope, name: &str) -> Option<String> {
        match scope.vars.get(name) {
            Some(v) => v.clone(),
            None => self.ctx.env.get(name).cloned(),
        }
    }

    fn home(&self, scope: &Scope) -> Option<String> {
        self.lookup(scope, "HOME").filter(|h| !h.is_empty())
    }

    /// Expands a word into fields (none for an unquoted empty expansion).
    fn expand(&self, word: &Word, scope: &Scope) -> Vec<Field> {
        let mut fields: Vec<Field> = Vec::new();
        let mut cur = Field::default();
        let mut started = false;
        self.expand_pieces(&word.pieces, scope, &mut fields, &mut cur, &mut started);
        if started {
            fields.push(cur);
        }
        fields
    }

    fn expand_pieces(
        &self,
        pieces: &[Piece],
        scope: &Scope,
        fields: &mut Vec<Field>,
        cur: &mut Field,
        started: &mut bool,
    ) {
        let push_text = |cur: &mut Field, text: &str, quoted: bool| {
            cur.text.push_str(text);
            let escaped: String;
            let part = if quoted {
                escaped = text
                    .chars()
                    .flat_map(|c| {
                        let esc = matches!(c, '*' | '?' | '[' | '\\');
                        esc.then_some('\\').into_iter().chain(std::iter::once(c))
                    })
                    .collect();
                escaped.as_str()
            } else {
                text
            };
            let had = cur.glob.is_some();
            if had || (!quoted && glob_meta(text)) {
                let base = cur.glob.take().unwrap_or_else(|| {
                    // Everything before the first glob metacharacter, escaped.
                    let before = &cur.text[..cur.text.len() - text.len()];
                    before
                        .chars()
                        .flat_map(|c| {
                            let esc = matches!(c, '*' | '?' | '[' | '\\');
                            esc.then_some('\\').into_iter().chain(std::iter::once(c))
                        })
                        .collect()
                });
                cur.glob = Some(base + part);
            }
        };
        for piece in pieces {
            match piece {
                Piece::Lit { text, quoted } => {
                    *started |= *quoted || !text.is_empty();
                    push_text(cur, text, *quoted);
                }
                Piece::Tilde(user) => {
                    *started = true;
                    match (user.as_str(), self.home(scope)) {
                        ("", Some(h)) => push_text(cur, &h, true),
                        ("root", _) => push_text(cur, "/root", true),
                        _ => cur.dynamic = true,
                    }
                }
                Piece::Dynamic => {
                    *started = true;
                    cur.dynamic = true;
                }
                Piece::Var {
                    name,
                    quoted,
                    default,
                } => {
                    let value = self.lookup(scope, name);
                    let use_default = match (&value, default) {
                        (_, None) => false,
                        (None, Some(_)) => true,
                        (Some(v), Some(d)) => d.colon && v.is_empty(),
                    };
                    if let (true, Some(d)) = (use_default, default) {
                        self.expand_pieces(&d.word, scope, fields, cur, started);
                        continue;
                    }
                    let value = value.unwrap_or_default();
                    if *quoted {
                        *started = true;
                        push_text(cur, &value, true);
                        continue;
                    }
                    // Unquoted: split on blanks (the default IFS).
                    let mut parts = value.split([' ', '\t', '\n']).peekable();
                    let mut first = true;
                    while let Some(part) = parts.next() {
                        if !first {
                            if *started {
                                fields.push(std::mem::take(cur));
                            }
                            *started = false;
                        }
                        first = false;
                        if !part.is_empty() {
                            *started = true;
                            push_text(cur, part, false);
                        }
                        if parts.peek().is_none() {
                            break;
                        }
                    }
                }
            }
        }
    }

    fn expand_all(&self, words: &[Word], scope: &Scope) -> Vec<Field> {
        words.iter().flat_map(|w| self.expand(w, scope)).collect()
    }

    fn protected(&mut self) -> &[(String, PathBuf)] {
        if self.protected.is_none() {
            let home = self.ctx.env.get("HOME").map(String::as_str);
            self.protected = Some(protected_paths(self.ctx.protected, home));
        }
        self.protected.as_deref().unwrap_or_default()
    }

    fn resolve(&self, field: &Field, scope: &Scope) -> Resolved {
        if field.dynamic || (field.text.is_empty() && field.glob.is_none()) {
            return Resolved::Unknown;
        }
        match &field.glob {
            None => normalize(scope.cwd.as_deref(), &field.text)
                .map_or(Resolved::Unknown, Resolved::Path),
            Some(g) => {
                let absolute = if g.starts_with('/') {
                    g.clone()
                } else {
                    match &scope.cwd {
                        Some(c) => format!("{}/{g}", c.display().to_string().trim_end_matches('/')),
                        None => return Resolved::Unknown,
                    }
                };
                let mut comps: Vec<String> = Vec::new();
                for c in absolute.split('/') {
                    match c {
                        "" | "." => {}
                        ".." => {
                            comps.pop();
                        }
                        other => comps.push(other.to_string()),
                    }
                }
                Resolved::Glob(comps)
            }
        }
    }

    /// The protected path `target` would destroy with `reach`, if any.
    fn hits(&mut self, target: &Resolved, reach: Reach) -> Option<String> {
        let protected = self.protected().to_vec();
        match target {
            Resolved::Unknown => None,
            Resolved::Path(t) => {
                let real = std::fs::canonicalize(t).ok();
                for (entry, p) in &protected {
                    for t in std::iter::once(t).chain(real.as_ref()) {
                        let hit = match reach {
                            Reach::Tree => p.starts_with(t),
                            Reach::Node => p == t,
                            Reach::Entries => false,
                        };
                        if hit {
                            return Some(describe_hit(entry, p, t));
                        }
                    }
                }
                None
            }
            Resolved::Glob(comps) => {
                // `dir/*`: every entry of dir, which is as bad as dir itself for a
                // recursive operation and empties it for any other.
                if let Some((last, parent)) = comps.split_last()
                    && matches_everything(last)
                    && !parent.iter().any(|c| glob_meta(c))
                {
                    let dir: PathBuf = std::iter::once("/".to_string())
                        .chain(parent.iter().map(|c| unescape(c)))
                        .collect();
                    for (entry, p) in &protected {
                        let hit = p == &dir || (reach == Reach::Tree && p.starts_with(&dir));
                        if hit {
                            return Some(if p == &dir {
                                format!("every entry of {}", shown_protected(entry, p))
                            } else {
                                format!(
                                    "every entry of {}, which holds {}",
                                    dir.display(),
                                    shown_protected(entry, p)
                                )
                            });
                        }
                    }
                }
                for (entry, p) in &protected {
                    let pc: Vec<String> = p
                        .components()
                        .filter_map(|c| match c {
                            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                            _ => None,
                        })
                        .collect();
                    // The glob names p itself, or (for a tree) one of p's ancestors.
                    for len in 1..=pc.len() {
                        if len != comps.len() || (len < pc.len() && reach != Reach::Tree) {
                            continue;
                        }
                        if comps
                            .iter()
                            .zip(&pc[..len])
                            .all(|(g, n)| component_matches(g, n))
                        {
                            return Some(shown_protected(entry, p));
                        }
                    }
                }
                None
            }
        }
    }

    fn judge(&mut self, field: &Field, scope: &Scope, reach: Reach) -> Target {
        let resolved = self.resolve(field, scope);
        let protected = self.hits(&resolved, reach);
        Target {
            word: field.shown(),
            resolved: match &resolved {
                Resolved::Path(p) => Some(p.display().to_string()),
                Resolved::Glob(c) => Some(format!("/{}", c.join("/"))),
                Resolved::Unknown => None,
            },
            protected,
        }
    }

    fn record(&mut self, check: &'static str, argv: &[Field], targets: Vec<Target>, verb: &str) {
        let command = argv.iter().map(Field::shown).collect::<Vec<_>>().join(" ");
        if self.verdict.refused.is_none()
            && let Some(t) = targets.iter().find(|t| t.protected.is_some())
        {
            let program = argv.first().map_or(String::new(), |f| f.text.clone());
            self.verdict.refused = Some(Refusal {
                rule: format!("guard:{check}"),
                reason: format!(
                    "`{}` would {verb} {}",
                    basename(&program),
                    t.protected.clone().unwrap_or_default()
                ),
                targets: targets.iter().filter_map(|t| t.protected.clone()).collect(),
            });
        }
        self.verdict.checked.push(Checked {
            check,
            command,
            targets,
        });
    }

    fn refuse(&mut self, check: &'static str, argv: &[Field], reason: String, target: String) {
        let command = argv.iter().map(Field::shown).collect::<Vec<_>>().join(" ");
        self.verdict.checked.push(Checked {
            check,
            command,
            targets: vec![Target {
                word: target.clone(),
                resolved: Some(target.clone()),
                protected: Some(target.clone()),
            }],
        });
        if self.verdict.refused.is_none() {
            self.verdict.refused = Some(Refusal {
                rule: format!("guard:{check}"),
                reason,
                targets: vec![target],
            });
        }
    }

    /// One simple command: assignments, redirections, words.
    fn simple(
        &mut self,
        words: &[Word],
        redirects: &[(String, Word)],
        scope: &mut Scope,
        depth: usize,
    ) {
        for (op, target) in redirects {
            if matches!(op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | "<>") {
                for f in self.expand(target, scope) {
                    if !f.dynamic && is_block_device(&f.text) {
                        let argv: Vec<Field> =
                            words.iter().flat_map(|w| self.expand(w, scope)).collect();
                        self.refuse(
                            "device",
                            &argv,
                            format!("`{op} {}` would overwrite the disk {}", f.text, f.text),
                            f.text.clone(),
                        );
                    }
                }
            }
        }
        // Leading NAME=value words: the command's environment, or (alone) shell variables.
        let first_cmd = words
            .iter()
            .position(|w| {
                !matches!(w.pieces.first(), Some(Piece::Lit { quoted: false, text }) if split_assignment(text).is_some())
            })
            .unwrap_or(words.len());
        let (assignments, rest) = words.split_at(first_cmd);
        if rest.is_empty() {
            for a in assignments {
                let value = self.expand(a, scope);
                let text: Vec<String> = value.iter().map(|f| f.text.clone()).collect();
                let text = text.join(" ");
                if let Some((name, v)) = split_assignment(&text) {
                    let dynamic = value.iter().any(|f| f.dynamic);
                    let (name, v) = (name.to_string(), v.to_string());
                    scope
                        .vars
                        .insert(name, (!dynamic).then_some(v).or(Some(String::new())));
                }
            }
            return;
        }
        let argv = self.expand_all(rest, scope);
        self.command(argv, scope, depth);
    }

    /// Looks through keywords and wrappers to the program that runs, then judges it.
    fn command(&mut self, mut argv: Vec<Field>, scope: &mut Scope, depth: usize) {
        loop {
            let Some(first) = argv.first() else { return };
            if first.dynamic {
                return;
            }
            let name = basename(&first.text).to_string();
            let skip = match name.as_str() {
                "!" | "{" | "}" | "then" | "do" | "else" | "elif" | "if" | "while" | "until"
                | "fi" | "done" | "esac" | "builtin" | "nohup" | "exec" | "unbuffer" => 1,
                "for" | "case" | "select" | "function" | "in" => return,
                "time" => 1 + usize::from(argv.get(1).is_some_and(|f| f.text == "-p")),
                "sudo" | "doas" | "pkexec" | "run0" => wrapper_args(
                    &argv,
                    &[
                        "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R",
                    ],
                    true,
                ),
                "command" => {
                    if argv
                        .iter()
                        .skip(1)
                        .take_while(|f| f.text.starts_with('-'))
                        .any(|f| f.text.contains('v') || f.text.contains('V'))
                    {
                        return; // `command -v rm` only looks rm up
                    }
                    wrapper_args(&argv, &[], false)
                }
                "env" => {
                    let mut i = 1;
                    while let Some(f) = argv.get(i) {
                        let t = f.text.as_str();
                        if t == "--" {
                            i += 1;
                            break;
                        } else if t == "-u" || t == "--unset" {
                            if let Some(n) = argv.get(i + 1) {
                                scope.vars.insert(n.text.clone(), None);
                            }
                            i += 2;
                        } else if t == "-C" || t == "--chdir" {
                            let dir = argv.get(i + 1).cloned().unwrap_or_default();
                            self.cd(&dir, scope);
                            i += 2;
                        } else if t == "-S" || t == "--split-string" {
                            let s = argv.get(i + 1).map(|f| f.text.clone()).unwrap_or_default();
                            let tail: Vec<String> =
                                argv.iter().skip(i + 2).map(|f| f.text.clone()).collect();
                            let joined = format!("{s} {}", tail.join(" "));
                            self.script(&joined, scope.clone(), depth + 1);
                            return;
                        } else if t.starts_with('-') {
                            i += 1;
                        } else if let Some((n, v)) = split_assignment(t) {
                            scope.vars.insert(n.to_string(), Some(v.to_string()));
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i
                }
                "nice" => wrapper_args(&argv, &["-n", "--adjustment"], false),
                "ionice" => wrapper_args(&argv, &["-c", "-n", "-p", "-P", "-u"], false),
                "chrt" | "taskset" => {
                    // option(s), then a priority/mask, then the command
                    let i = wrapper_args(&argv, &[], false);
                    i + 1
                }
                "stdbuf" => wrapper_args(&argv, &["-i", "-o", "-e"], false),
                "setsid" => wrapper_args(&argv, &[], false),
                "timeout" => {
                    let i = wrapper_args(&argv, &["-s", "--signal", "-k", "--kill-after"], false);
                    i + 1 // the duration
                }
                "xargs" => wrapper_args(
                    &argv,
                    &[
                        "-I",
                        "-n",
                        "-P",
                        "-L",
                        "-d",
                        "-E",
                        "-s",
                        "-a",
                        "--arg-file",
                        "--delimiter",
                        "--max-args",
                        "--max-procs",
                        "--max-lines",
                    ],
                    false,
                ),
                "busybox" => 1,
                "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" => {
                    if let Some(s) = shell_c_script(&argv) {
                        self.script(&s, scope.clone(), depth + 1);
                    }
                    return;
                }
                "su" => {
                    let mut it = argv.iter().skip(1);
                    while let Some(f) = it.next() {
                        let s = if f.text == "-c" || f.text == "--command" {
                            it.next().map(|f| f.text.clone())
                        } else {
                            f.text.strip_prefix("--command=").map(str::to_string)
                        };
                        if let Some(s) = s {
                            self.script(&s, scope.clone(), depth + 1);
                        }
                    }
                    return;
                }
                "eval" => {
                    let s: Vec<String> = argv.iter().skip(1).map(|f| f.text.clone()).collect();
                    self.script(&s.join(" "), scope.clone(), depth + 1);
                    return;
                }
                _ => 0,
            };
            if skip == 0 {
                break;
            }
            argv.drain(..skip.min(argv.len()));
        }
        let Some(first) = argv.first() else { return };
        let name = basename(&first.text).to_string();
        match name.as_str() {
            "cd" | "pushd" => {
                let dir = argv
                    .iter()
                    .skip(1)
                    .find(|f| !f.text.starts_with('-') || f.text == "-")
                    .cloned();
                match dir {
                    Some(d) => self.cd(&d, scope),
                    None => {
                        let home = self.home(scope);
                        scope.cwd = home.map(PathBuf::from);
                    }
                }
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for f in argv.iter().skip(1) {
                    if let Some((n, v)) = split_assignment(&f.text) {
                        let value = (!f.dynamic).then(|| v.to_string());
                        scope
                            .vars
                            .insert(n.to_string(), value.or(Some(String::new())));
                    }
                }
            }
            "unset" => {
                for f in argv.iter().skip(1).filter(|f| !f.text.starts_with('-')) {
                    scope.vars.insert(f.text.clone(), None);
                }
            }
            "rm" | "unlink" | "rmdir" => self.rm(&argv, scope),
            "find" => self.find(&argv, scope),
            "chmod" | "chown" | "chgrp" | "setfacl" | "chattr" => self.permissions(&argv, scope),
            "mv" => self.mv(&argv, scope),
            "rsync" => self.rsync(&argv, scope),
            "dd" => {
                for f in &argv[1..] {
                    if let Some(dev) = f.text.strip_prefix("of=")
                        && is_block_device(dev)
                    {
                        self.refuse(
                            "device",
                            &argv,
                            format!("`dd` would overwrite the disk {dev}"),
                            dev.to_string(),
                        );
                    }
                }
            }
            n if is_disk_tool(n) => {
                for f in &argv[1..] {
                    let dev = f.text.split_once('=').map_or(f.text.as_str(), |(_, v)| v);
                    if is_block_device(dev) {
                        self.refuse(
                            "device",
                            &argv,
                            format!("`{n}` would destroy the data on the disk {dev}"),
                            dev.to_string(),
                        );
                    }
                }
            }
            "cp" | "tee" | "truncate" | "install" | "cat" | "pv" => {
                let dest: Vec<&Field> = match name.as_str() {
                    "cp" | "install" => argv
                        .last()
                        .into_iter()
                        .skip(usize::from(argv.len() < 3))
                        .collect(),
                    "tee" | "truncate" => argv.iter().skip(1).collect(),
                    _ => vec![],
                };
                for f in dest {
                    if !f.dynamic && is_block_device(&f.text) {
                        self.refuse(
                            "device",
                            &argv,
                            format!("`{name}` would overwrite the disk {}", f.text),
                            f.text.clone(),
                        );
                    }
                }
            }
            "kill" => self.kill(&argv),
            _ => {}
        }
    }

    fn cd(&mut self, dir: &Field, scope: &mut Scope) {
        scope.cwd = if dir.dynamic || dir.glob.is_some() || dir.text == "-" {
            None
        } else if dir.text.is_empty() {
            scope.cwd.clone()
        } else {
            normalize(scope.cwd.as_deref(), &dir.text)
        };
    }

    fn rm(&mut self, argv: &[Field], scope: &Scope) {
        let (flags, operands) = split_options(argv);
        let recursive = flags.iter().any(|f| {
            f == "--recursive" || f == "-R" || (short(f) && (f.contains('r') || f.contains('R')))
        });
        let reach = if recursive {
            Reach::Tree
        } else {
            Reach::Entries
        };
        let targets: Vec<Target> = operands
            .iter()
            .map(|f| self.judge(f, scope, reach))
            .collect();
        let verb = if recursive {
            "recursively delete"
        } else {
            "delete"
        };
        self.record("delete", argv, targets, verb);
    }

    fn find(&mut self, argv: &[Field], scope: &Scope) {
        let args = &argv[1..];
        // Leading options -H -L -P -D x -Ox, then start paths up to the expression.
        let mut i = 0;
        while let Some(f) = args.get(i) {
            match f.text.as_str() {
                "-H" | "-L" | "-P" => i += 1,
                "-D" => i += 2,
                t if t.starts_with("-O") => i += 1,
                _ => break,
            }
        }
        let mut starts: Vec<Field> = Vec::new();
        while let Some(f) = args.get(i) {
            if f.text.starts_with('-') || f.text == "(" || f.text == "!" {
                break;
            }
            starts.push(f.clone());
            i += 1;
        }
        let expr = &args[i.min(args.len())..];
        let mut destructive = false;
        let mut narrowed = false;
        let mut j = 0;
        while let Some(f) = expr.get(j) {
            let t = f.text.as_str();
            match t {
                "-delete" => destructive = true,
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let cmd: Vec<Field> = expr[j + 1..]
                        .iter()
                        .take_while(|f| f.text != ";" && f.text != "+")
                        .cloned()
                        .collect();
                    let prog = cmd.first().map(|f| basename(&f.text).to_string());
                    if matches!(prog.as_deref(), Some("rm" | "shred" | "unlink" | "rmdir")) {
                        destructive = true;
                    } else if matches!(prog.as_deref(), Some("sh" | "bash" | "dash" | "zsh"))
                        && let Some(s) = shell_c_script(&cmd)
                    {
                        let inner = s.replace("{}", "/dev/null/{}");
                        destructive |= ["rm ", "rm\t", "shred ", "unlink "]
                            .iter()
                            .any(|p| inner.contains(p));
                    }
                    j += cmd.len();
                }
                "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename"
                | "-regex" | "-iregex" | "-lname" | "-ilname" | "-samefile" | "-inum"
                | "-newer" | "-mtime" | "-mmin" | "-ctime" | "-cmin" | "-atime" | "-amin"
                | "-size" | "-user" | "-uid" | "-group" | "-gid" | "-perm" | "-links"
                | "-empty" | "-used" | "-newermt" | "-newerct" | "-newerat" | "-nouser"
                | "-nogroup" => narrowed = true,
                _ => {}
            }
            j += 1;
        }
        if !destructive || narrowed {
            return;
        }
        if starts.is_empty() {
            starts.push(Field {
                text: ".".into(),
                ..Field::default()
            });
        }
        let targets: Vec<Target> = starts
            .iter()
            .map(|f| self.judge(f, scope, Reach::Tree))
            .collect();
        self.record("delete", argv, targets, "delete everything under");
    }

    fn permissions(&mut self, argv: &[Field], scope: &Scope) {
        let (flags, operands) = split_options(argv);
        let recursive = flags.iter().any(|f| {
            f == "--recursive"
                || (short(f) && f.contains('R'))
                || (argv[0].text.ends_with("setfacl") && short(f) && f.contains('R'))
        });
        let program = basename(&argv[0].text);
        // chmod MODE / chown OWNER come first unless --reference names the model file.
        let takes_spec = !flags.iter().any(|f| f.starts_with("--reference"))
            && matches!(program, "chmod" | "chown" | "chgrp" | "chattr");
        let operands: &[Field] = if takes_spec && !operands.is_empty() {
            &operands[1..]
        } else {
            &operands
        };
        // setfacl takes its ACL as an option argument; its operands are all files.
        let reach = if recursive { Reach::Tree } else { Reach::Node };
        let targets: Vec<Target> = operands
            .iter()
            .map(|f| self.judge(f, scope, reach))
            .collect();
        let verb = if recursive {
            "recursively change the permissions or owner of"
        } else {
            "change the permissions or owner of"
        };
        self.record("permissions", argv, targets, verb);
    }

    fn mv(&mut self, argv: &[Field], scope: &Scope) {
        let (flags, operands) = split_options(argv);
        let explicit_target = flags
            .iter()
            .any(|f| f == "-t" || f.starts_with("--target-directory"));
        let sources: &[Field] = if explicit_target || operands.len() < 2 {
            &operands
        } else {
            &operands[..operands.len() - 1]
        };
        let targets: Vec<Target> = sources
            .iter()
            .map(|f| self.judge(f, scope, Reach::Tree))
            .collect();
        self.record("move", argv, targets, "move away");
    }

    fn rsync(&mut self, argv: &[Field], scope: &Scope) {
        let (flags, operands) = split_options(argv);
        if !flags
            .iter()
            .any(|f| f.starts_with("--delete") || f == "--remove-source-files")
        {
            return;
        }
        // With --delete, the destination loses whatever the source lacks.
        let Some(dest) = operands.last().filter(|_| operands.len() >= 2) else {
            return;
        };
        if dest.text.contains(':') {
            return; // a remote host
        }
        let target = self.judge(dest, scope, Reach::Node);
        self.record("delete", argv, vec![target], "delete files in");
    }

    fn kill(&mut self, argv: &[Field]) {
        let mut i = 1;
        // A signal spec first (-9, -KILL, -s KILL, -n 9), then pids.
        if let Some(f) = argv.get(1) {
            match f.text.as_str() {
                "-s" | "-n" | "--signal" => i = 3,
                "--" => i = 2,
                t if t.starts_with('-') && t.len() > 1 => i = 2,
                _ => {}
            }
        }
        if argv.get(i).is_some_and(|f| f.text == "--") {
            i += 1;
        }
        // `kill -1` alone is signal 1 with no pid; `-1` as a pid is every process.
        let only_signal = argv.len() == 2 && argv[1].text == "-1";
        if !only_signal && argv.iter().skip(i).any(|f| f.text == "-1") {
            self.refuse(
                "kill-all",
                argv,
                "`kill` with pid -1 would signal every process the user can reach".into(),
                "-1".into(),
            );
        }
    }

    /// `name() { … name | name & … }` and `function name { … }`: a function that
    /// starts two copies of itself per call.
    fn fork_bombs(&mut self, toks: &[Tok]) {
        fn word_text(t: &Tok) -> Option<&str> {
            match t {
                Tok::Word(w) => Some(w.raw.as_str()),
                _ => None,
            }
        }
        for (i, t) in toks.iter().enumerate() {
            let Some(name) = word_text(t) else { continue };
            let body_start = if matches!(toks.get(i + 1), Some(Tok::Open))
                && matches!(toks.get(i + 2), Some(Tok::Close))
            {
                i + 3
            } else if i > 0 && word_text(&toks[i - 1]) == Some("function") {
                i + 1 + 2 * usize::from(matches!(toks.get(i + 1), Some(Tok::Open)))
            } else {
                continue;
            };
            let mut depth = 0i32;
            let mut calls = 0;
            let mut spawns = false;
            // A body is short; bounding the scan keeps `f() f() f() …` linear.
            for t in toks.iter().skip(body_start).take(4096) {
                match t {
                    Tok::Word(w) if w.raw == "{" => depth += 1,
                    Tok::Word(w) if w.raw == "}" => {
                        depth -= 1;
                        if depth <= 0 {
                            break;
                        }
                    }
                    Tok::Open => depth += 1,
                    Tok::Close => {
                        depth -= 1;
                        if depth <= 0 {
                            break;
                        }
                    }
                    Tok::Word(w) if w.raw == name => calls += 1,
                    Tok::Op(Op::Pipe | Op::PipeAll | Op::Background) => spawns = true,
                    _ => {}
                }
            }
            if calls >= 2 && spawns {
                let argv = vec![Field {
                    text: name.to_string(),
                    ..Field::default()
                }];
                self.refuse(
                    "fork-bomb",
                    &argv,
                    format!("function `{name}` starts copies of itself without end (a fork bomb)"),
                    name.to_string(),
                );
                return;
            }
        }
    }
}

fn unescape(c: &str) -> String {
    let mut out = String::new();
    let mut chars = c.chars();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            out.extend(chars.next());
        } else {
            out.push(ch);
        }
    }
    out
}

/// `guard.protected` as paths, each paired with its entry as written: `~` expanded
/// with `home` (an entry under `~` is dropped when there is no home), `.`, `..` and
/// `//` folded, and an entry's real path listed too when a symbolic link leads to it
/// (a protected /home/me that is a link to /data/me is protected under both names).
/// Shared by the guard and the file tools (docs/guard.md).
pub fn protected_paths(entries: &[String], home: Option<&str>) -> Vec<(String, PathBuf)> {
    let home = home.filter(|h| !h.is_empty());
    let mut v = Vec::new();
    for entry in entries {
        let expanded = match (entry.strip_prefix('~'), home) {
            (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                format!("{h}{rest}")
            }
            (Some(_), None) => continue,
            _ => entry.clone(),
        };
        let Some(p) = normalize(None, &expanded) else {
            continue;
        };
        if let Ok(real) = std::fs::canonicalize(&p)
            && real != p
        {
            v.push((entry.clone(), real));
        }
        v.push((entry.clone(), p));
    }
    v
}

fn shown_protected(entry: &str, p: &Path) -> String {
    if entry == p.to_string_lossy() {
        entry.to_string()
    } else {
        format!("{} ({entry})", p.display())
    }
}

fn describe_hit(entry: &str, p: &Path, t: &Path) -> String {
    if p == t {
        shown_protected(entry, p)
    } else {
        format!("{}, which holds {}", t.display(), shown_protected(entry, p))
    }
}

fn short(flag: &str) -> bool {
    flag.starts_with('-') && !flag.starts_with("--")
}

/// Options (before `--`) and operands of a GNU-style command line.
fn split_options(argv: &[Field]) -> (Vec<String>, Vec<Field>) {
    let mut flags = Vec::new();
    let mut operands = Vec::new();
    let mut it = argv.iter().skip(1);
    while let Some(f) = it.next() {
        if f.text == "--" {
            operands.extend(it.cloned());
            break;
        }
        if f.text.starts_with('-') && f.text.len() > 1 && !f.dynamic {
            if f.text == "-t" {
                // mv -t DIR: the directory is the option's argument.
                it.next();
            }
            flags.push(f.text.clone());
        } else {
            operands.push(f.clone());
        }
    }
    (flags, operands)
}

/// How many leading words a wrapper takes before the command it runs: its name, its
/// options (those in `with_arg` take the next word), and for `sudo` `NAME=value`s.
fn wrapper_args(argv: &[Field], with_arg: &[&str], assignments: bool) -> usize {
    let mut i = 1;
    while let Some(f) = argv.get(i) {
        let t = f.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if t.starts_with('-') && t.len() > 1 {
            let takes = with_arg.contains(&t);
            // `-n5`, `--signal=KILL` carry their argument.
            i += 1 + usize::from(takes);
            // `nice -5`, `nice -n 5`: numbers are arguments too.
            continue;
        }
        if assignments && split_assignment(t).is_some() {
            i += 1;
            continue;
        }
        break;
    }
    i
}

/// The script of `bash -c 'script'` (any option cluster holding `c`).
fn shell_c_script(argv: &[Field]) -> Option<String> {
    let mut i = 1;
    let mut saw_c = false;
    while let Some(f) = argv.get(i) {
        let t = f.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t == "-o" || t == "+o" || t == "-O" || t == "+O" {
            i += 2;
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            saw_c |= t.starts_with('-') && !t.starts_with("--") && t.contains('c');
            i += 1;
            continue;
        }
        break;
    }
    if !saw_c {
        return None;
    }
    argv.get(i).filter(|f| !f.dynamic).map(|f| f.text.clone())
}

fn is_disk_tool(name: &str) -> bool {
    name.starts_with("mkfs")
        || matches!(
            name,
            "mke2fs"
                | "mkswap"
                | "mkntfs"
                | "mkdosfs"
                | "mkexfatfs"
                | "wipefs"
                | "shred"
                | "blkdiscard"
                | "fdisk"
                | "sfdisk"
                | "cfdisk"
                | "gdisk"
                | "sgdisk"
                | "parted"
                | "pvcreate"
                | "cryptsetup"
                | "badblocks"
                | "hdparm"
                | "nvme"
                | "zpool"
        )
}

#[cfg(test)]
mod tests;

/// The guard stage of a run: the structural verdict plus the `deny` rules of
/// `guard.rules`, decided before anything runs.
#[derive(Debug, Clone, Serialize)]
pub struct GuardPlan {
    pub enabled: bool,
    /// The first refusal, structural or by a `deny` rule.
    pub refused: Option<Refusal>,
    /// The destructive programs looked at, with their resolved targets.
    pub checked: Vec<Checked>,
    /// The pack of the `deny` rule that refused, when one did.
    pub pack: Option<String>,
    /// A guard pack that could not be loaded: nothing may run (exit 125).
    pub error: Option<String>,
}

impl GuardPlan {
    /// The guard of a profile with `guard.enabled = false`.
    pub fn off() -> Self {
        GuardPlan {
            enabled: false,
            refused: None,
            checked: vec![],
            pack: None,
            error: None,
        }
    }

    /// Judges `command`: the structural check first, then the guard packs' rules
    /// (`None` when no rule of theirs could match, so they were not compiled).
    pub fn decide(
        command: &str,
        ctx: &Context<'_>,
        rules: Option<Result<std::sync::Arc<crate::config::rules::RuleSet>, String>>,
    ) -> Self {
        let verdict = check(command, ctx);
        let mut plan = GuardPlan {
            enabled: true,
            refused: verdict.refused,
            checked: verdict.checked,
            pack: None,
            error: None,
        };
        match rules {
            None => {}
            Some(Err(e)) => plan.error = Some(e),
            Some(Ok(set)) if plan.refused.is_none() => {
                let i = crate::pipeline::intercept::intercept(command, &set, &[]);
                if let Some(hit) = i.blocked {
                    plan.refused = Some(Refusal {
                        rule: hit.rule,
                        reason: hit.message,
                        targets: vec![],
                    });
                    plan.pack = Some(hit.pack);
                }
            }
            Some(Ok(_)) => {}
        }
        plan
    }

    /// One line per decision, for `explain` and `rules test`.
    pub fn describe(&self) -> Vec<String> {
        if !self.enabled {
            return vec!["off (guard.enabled = false in the profile)".into()];
        }
        let mut v = vec![match (&self.error, &self.refused) {
            (Some(e), _) => format!("ERROR, nothing may run: {e}"),
            (None, Some(r)) if self.pack.is_some() => format!(
                "REFUSED by rule `{}` (pack {}): {}",
                r.rule,
                self.pack.as_deref().unwrap_or_default(),
                r.reason
            ),
            (None, Some(r)) => format!("REFUSED ({}): {}", r.rule, r.reason),
            (None, None) => "passes".into(),
        }];
        for c in &self.checked {
            v.push(format!("  {} `{}`", c.check, c.command));
            for t in &c.targets {
                v.push(format!(
                    "    {} -> {}{}",
                    t.word,
                    t.resolved
                        .as_deref()
                        .unwrap_or("(unknown until it runs: not judged)"),
                    t.protected
                        .as_ref()
                        .map(|p| format!("  PROTECTED: {p}"))
                        .unwrap_or_default()
                ));
            }
        }
        v
    }
}
