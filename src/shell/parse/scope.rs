//! What the shell knows while a command line runs, as far as it can be known before:
//! variables (the environment the command gets, then what the line assigns or
//! unsets), positional parameters, the working directory, the functions defined so
//! far. The walker updates it as bash would; expansion reads it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::ast::Function;

/// A variable's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Var {
    Unset,
    Str(String),
    /// An indexed or associative array (its values in order).
    Array(Vec<String>),
    /// Set to something that cannot be known before the command runs.
    Unknown,
}

/// bash's default `IFS`; bash does not take `IFS` from the environment.
pub const DEFAULT_IFS: &str = " \t\n";

#[derive(Debug, Clone)]
pub struct Scope<'e> {
    env: &'e BTreeMap<String, String>,
    /// The environment was emptied (`env -i`, `exec -c`).
    cleared: bool,
    /// Variables the line set or unset; they shadow `env`.
    vars: HashMap<String, Var>,
    /// Of `vars`, the ones exported to child processes.
    exported: HashSet<String>,
    /// `$1…`; `None` when they cannot be known (a function body read where it is
    /// defined).
    pub positional: Option<Vec<String>>,
    pub arg0: String,
    /// `None` once a `cd` went somewhere that cannot be known.
    pub cwd: Option<PathBuf>,
    pub oldpwd: Option<PathBuf>,
    /// `pushd`'s stack below the current directory.
    pub dirs: Vec<PathBuf>,
    /// A `chroot` (or `sudo -R`, `nsenter --root`) the commands run under: their
    /// absolute paths are under it.
    pub root: Option<PathBuf>,
    /// The function running (`$FUNCNAME`).
    pub funcname: Option<String>,
    pub functions: HashMap<String, Arc<Function>>,
    /// `~` when `HOME` is unset: the user's home from the password database, which
    /// agentbash takes to be the `HOME` of the run's environment.
    home_fallback: Option<String>,
}

impl<'e> Scope<'e> {
    pub fn new(env: &'e BTreeMap<String, String>, cwd: Option<PathBuf>) -> Self {
        Scope {
            env,
            cleared: false,
            vars: HashMap::new(),
            exported: HashSet::new(),
            positional: Some(Vec::new()),
            arg0: "bash".into(),
            oldpwd: env.get("OLDPWD").map(PathBuf::from),
            cwd,
            dirs: Vec::new(),
            root: None,
            funcname: None,
            functions: HashMap::new(),
            home_fallback: env.get("HOME").filter(|h| !h.is_empty()).cloned(),
        }
    }

    /// A variable's value as bash would expand it.
    pub fn get(&self, name: &str) -> Var {
        if let Some(v) = self.vars.get(name) {
            return v.clone();
        }
        match name {
            "PWD" => self
                .cwd
                .as_ref()
                .map_or(Var::Unknown, |c| Var::Str(c.to_string_lossy().into_owned())),
            "OLDPWD" => self
                .oldpwd
                .as_ref()
                .map_or(Var::Unset, |c| Var::Str(c.to_string_lossy().into_owned())),
            "IFS" => Var::Str(DEFAULT_IFS.into()),
            "FUNCNAME" => self.funcname.clone().map_or(Var::Unset, Var::Str),
            "RANDOM" | "SRANDOM" | "SECONDS" | "EPOCHSECONDS" | "EPOCHREALTIME" | "LINENO"
            | "BASHPID" | "PPID" | "UID" | "EUID" | "GROUPS" | "HOSTNAME" | "HOSTTYPE"
            | "REPLY" | "PIPESTATUS" | "BASH_COMMAND" | "BASH_SOURCE" | "BASH_LINENO"
            | "BASH_REMATCH" | "COLUMNS" | "LINES" | "OPTARG" | "OPTIND" | "HISTCMD" => {
                Var::Unknown
            }
            _ if self.cleared => Var::Unset,
            _ => self
                .env
                .get(name)
                .map_or(Var::Unset, |v| Var::Str(v.clone())),
        }
    }

    /// A variable the line itself set or unset (not the environment's, not the
    /// shell's specials).
    pub fn get_set(&self, name: &str) -> Option<Var> {
        self.vars.get(name).cloned()
    }

    /// A variable's value as one string (`None`: unset; unknown and arrays give
    /// their first element or `None`).
    pub fn get_str(&self, name: &str) -> Option<String> {
        match self.get(name) {
            Var::Str(s) => Some(s),
            Var::Array(a) => a.first().cloned(),
            Var::Unset | Var::Unknown => None,
        }
    }

    pub fn is_unknown(&self, name: &str) -> bool {
        self.get(name) == Var::Unknown
    }

    pub fn set(&mut self, name: &str, value: Var) {
        self.vars.insert(name.to_string(), value);
    }

    pub fn export(&mut self, name: &str) {
        self.exported.insert(name.to_string());
    }

    pub fn unset(&mut self, name: &str) {
        self.vars.insert(name.to_string(), Var::Unset);
        self.exported.remove(name);
    }

    /// `HOME`, or where `~` goes when it is unset.
    pub fn home(&self) -> Option<String> {
        match self.get("HOME") {
            Var::Str(h) if !h.is_empty() => Some(h),
            Var::Str(_) => None,
            Var::Unset => self.home_fallback.clone(),
            _ => None,
        }
    }

    /// The scope a child process sees (`bash -c`, a wrapper's command): the exported
    /// variables, and `extra` (the command's own `NAME=value` prefixes) on top.
    pub fn child(&self, extra: &[(String, Var)]) -> Scope<'e> {
        let mut vars = HashMap::new();
        let mut exported = HashSet::new();
        for (k, v) in &self.vars {
            let from_env = !self.cleared && self.env.contains_key(k);
            if *v == Var::Unset || self.exported.contains(k) || from_env {
                vars.insert(k.clone(), v.clone());
                if *v != Var::Unset {
                    exported.insert(k.clone());
                }
            }
        }
        for (k, v) in extra {
            vars.insert(k.clone(), v.clone());
            exported.insert(k.clone());
        }
        Scope {
            env: self.env,
            cleared: self.cleared,
            vars,
            exported,
            positional: Some(Vec::new()),
            arg0: "bash".into(),
            cwd: self.cwd.clone(),
            oldpwd: self.oldpwd.clone(),
            dirs: Vec::new(),
            root: self.root.clone(),
            funcname: None,
            functions: HashMap::new(),
            home_fallback: self.home_fallback.clone(),
        }
    }

    /// `env -i`, `exec -c`: nothing of the environment is left.
    pub fn clear_env(&mut self) {
        self.cleared = true;
        self.vars.clear();
        self.exported.clear();
    }

    /// What `sudo` passes on: by default a reset environment whose `HOME` is the
    /// target user's (root's `/root`, another user's unknown); with `-E` everything.
    pub fn sudo_child(
        &self,
        preserve: bool,
        user: Option<&str>,
        extra: &[(String, Var)],
    ) -> Scope<'e> {
        let mut child = self.child(extra);
        if preserve {
            return child;
        }
        const KEPT: &[&str] = &[
            "PATH",
            "TERM",
            "LANG",
            "LANGUAGE",
            "LC_ALL",
            "LC_CTYPE",
            "DISPLAY",
            "XAUTHORITY",
            "COLORS",
            "TZ",
        ];
        let kept: Vec<(String, Var)> = KEPT.iter().map(|k| (k.to_string(), child.get(k))).collect();
        child.clear_env();
        for (k, v) in kept.into_iter().chain(extra.iter().cloned()) {
            if v != Var::Unset {
                child.set(&k, v);
                child.export(&k);
            }
        }
        let home = match user {
            None | Some("root" | "0" | "#0") => Var::Str("/root".into()),
            Some(_) => Var::Unknown,
        };
        child.set("HOME", home.clone());
        child.export("HOME");
        child.home_fallback = match home {
            Var::Str(h) => Some(h),
            _ => None,
        };
        for u in ["USER", "LOGNAME"] {
            child.set(u, Var::Str(user.unwrap_or("root").to_string()));
            child.export(u);
        }
        child
    }

    /// `cd DIR` (or `pushd`): the new directory, as far as it can be known.
    pub fn cd(&mut self, dir: Option<&str>) {
        let next = match dir {
            None => self.home().map(PathBuf::from),
            Some("-") => self.oldpwd.clone(),
            Some("") => self.cwd.clone(),
            Some(d) => normalize(self.cwd.as_deref(), d),
        };
        self.oldpwd = self.cwd.take();
        self.cwd = next;
    }

    /// A path the command names, made absolute against its working directory and
    /// `..`/`.`/`//` folded; `None` when the directory cannot be known.
    pub fn absolute(&self, p: &str) -> Option<PathBuf> {
        normalize(self.cwd.as_deref(), p)
    }

    /// Whether `name` is a function defined so far.
    pub fn function(&self, name: &str) -> Option<Arc<Function>> {
        self.functions.get(name).cloned()
    }
}

/// Lexical `..`/`.`/`//` folding, as the kernel would for a path without symlinks.
pub fn normalize(base: Option<&Path>, p: &str) -> Option<PathBuf> {
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
