//! Turning a dump of what the rc defined into the snapshot: which options, functions
//! and aliases are carried and why each dropped one is not, and the text sourced
//! before commands. Kept apart from the caching and generation in the parent module.

use super::*;

/// Why an option is or is not carried into commands.
pub(super) fn option_verdict(kind: &str, name: &str) -> Result<(), &'static str> {
    const INTERACTIVE: &str = "interactive only; no effect on commands";
    if kind == "shopt" {
        match name {
            "extglob"
            | "globstar"
            | "dotglob"
            | "nocaseglob"
            | "nocasematch"
            | "globasciiranges"
            | "extquote"
            | "cdable_vars"
            | "shift_verbose"
            | "sourcepath"
            | "checkhash"
            | "assoc_expand_once"
            | "localvar_inherit"
            | "localvar_unset"
            | "patsub_replacement"
            | "noexpand_translation"
            | "varredir_close" => Ok(()),
            n if n.starts_with("compat") => Ok(()),
            "nullglob" | "failglob" => Err("changes what an unmatched glob does"),
            "xpg_echo" => Err("changes how echo treats backslashes"),
            "lastpipe" => Err("changes which shell runs the last command of a pipeline"),
            "inherit_errexit" | "execfail" => Err("changes error handling"),
            "extdebug" => Err("debugger support; changes how functions run"),
            "expand_aliases" => Err("managed by agentbash: on whenever aliases are captured"),
            "histappend"
            | "histreedit"
            | "histverify"
            | "cmdhist"
            | "lithist"
            | "checkwinsize"
            | "checkjobs"
            | "huponexit"
            | "autocd"
            | "cdspell"
            | "dirspell"
            | "direxpand"
            | "hostcomplete"
            | "progcomp"
            | "progcomp_alias"
            | "promptvars"
            | "mailwarn"
            | "no_empty_cmd_completion"
            | "complete_fullquote"
            | "force_fignore"
            | "interactive_comments"
            | "login_shell"
            | "restricted_shell"
            | "gnu_errfmt" => Err(INTERACTIVE),
            _ => Err("not known to be safe for non-interactive commands"),
        }
    } else {
        match name {
            "braceexpand" | "hashall" | "interactive-comments" | "physical" => Ok(()),
            "errexit" => Err("-e would end commands at their first failing step"),
            "nounset" => Err("-u would make commands fail on unset variables"),
            "xtrace" => Err("-x would mix a trace into the command's output"),
            "verbose" => Err("-v would echo input into the command's output"),
            "pipefail" => Err("would change the exit status of pipelines"),
            "noclobber" => Err("-C would make `>` refuse to overwrite files"),
            "noglob" => Err("-f would turn off filename expansion"),
            "allexport" => Err("-a would export every variable a command sets"),
            "noexec" => Err("-n would stop commands from running"),
            "onecmd" => Err("-t would exit after one command"),
            "errtrace" | "functrace" => Err("changes which traps functions inherit"),
            "posix" => Err("POSIX mode changes many behaviours"),
            "monitor" | "notify" | "ignoreeof" | "emacs" | "vi" | "history" | "histexpand" => {
                Err(INTERACTIVE)
            }
            _ => Err("not known to be safe for non-interactive commands"),
        }
    }
}

/// `shopt -s x` / `set -o x` lines → (kind, name) → on.
pub(super) fn parse_options(lines: &[String]) -> BTreeMap<(String, String), bool> {
    let mut m = BTreeMap::new();
    for l in lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["shopt", flag, name] => {
                m.insert(("shopt".to_string(), name.to_string()), *flag == "-s");
            }
            ["set", flag, name] if *flag == "-o" || *flag == "+o" => {
                m.insert(("set".to_string(), name.to_string()), *flag == "-o");
            }
            _ => {}
        }
    }
    m
}

/// Words a definition mentions (over-approximates calls; that only keeps more).
pub(super) fn words(def: &str) -> impl Iterator<Item = &str> {
    def.split(|c: char| c.is_whitespace() || ";|&(){}<>\"'`$=\\!,".contains(c))
        .filter(|w| !w.is_empty())
}

pub(super) fn tool_reason(name: &str) -> String {
    format!("shadows the `{name}` command, which agents rely on behaving as documented")
}

/// Decide what the snapshot keeps.
pub(super) fn build(src: &Source, key: Key, d: &dump::Dump, timed_out: bool) -> Meta {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let rc = src.rc.display().to_string();
    let mut meta = Meta {
        version: META_VERSION,
        key,
        generated_at: now,
        duration_ms: 0,
        outcome: Outcome::Ok,
        snapshot: None,
        content_hash: 0,
        warnings: vec![],
        persistent_warning: None,
        functions: BTreeMap::new(),
        aliases: BTreeMap::new(),
        options: vec![],
        dropped: vec![],
        refs: BTreeMap::new(),
    };
    let limit = GENERATION_LIMIT.as_secs();
    if timed_out {
        meta.outcome = Outcome::Failed;
        meta.persistent_warning = Some(format!(
            "{rc} took longer than {limit}s to source and was stopped; commands run without its functions and aliases (make it faster, or set shell.snapshot = false; then `agentbash snapshot refresh`)"
        ));
        return meta;
    }
    if !d.complete {
        meta.outcome = Outcome::Failed;
        meta.persistent_warning = Some(format!(
            "{rc} ended its shell before anything could be captured (does it call exec?); commands run without its functions and aliases (`agentbash snapshot refresh` after fixing it)"
        ));
        return meta;
    }
    let mut status = d.status.split_whitespace();
    let phase = status.next().unwrap_or("");
    let code = status.next().unwrap_or("0");
    if phase == "exit" {
        meta.outcome = Outcome::Partial;
        meta.warnings.push(format!(
            "{rc} exited its shell (status {code}) while being sourced; the snapshot holds only what it defined before that (see `agentbash snapshot report`)"
        ));
    } else if code != "0" {
        meta.outcome = Outcome::Partial;
        meta.warnings.push(format!(
            "{rc} returned status {code} when sourced; the snapshot may be incomplete (see `agentbash snapshot report`)"
        ));
    }

    carry_options(&mut meta, d, &rc);
    carry_definitions(&mut meta, d);
    record_refs(&mut meta, d);
    meta.snapshot = Some(src.snapshot_path());
    meta
}

/// Options the rc changed: those safe for commands are carried, the rest dropped
/// with the reason (and a warning for the ones that would break commands).
fn carry_options(meta: &mut Meta, d: &dump::Dump, rc: &str) {
    let before_lines: Vec<String> = d
        .extra
        .get("options-before")
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default();
    let before = parse_options(&before_lines);
    let after = parse_options(&d.options);
    let mut unsafe_set = Vec::new();
    for ((kind, name), on) in &after {
        if before.get(&(kind.clone(), name.clone())) == Some(on) {
            continue;
        }
        let line = match (kind.as_str(), on) {
            ("shopt", true) => format!("shopt -s {name}"),
            ("shopt", false) => format!("shopt -u {name}"),
            (_, true) => format!("set -o {name}"),
            (_, false) => format!("set +o {name}"),
        };
        match option_verdict(kind, name) {
            Ok(()) => meta.options.push(line),
            Err(reason) => {
                if *on
                    && matches!(
                        name.as_str(),
                        "errexit"
                            | "nounset"
                            | "xtrace"
                            | "verbose"
                            | "noexec"
                            | "onecmd"
                            | "noclobber"
                            | "pipefail"
                    )
                {
                    unsafe_set.push(name.clone());
                }
                meta.dropped.push(Dropped {
                    name: line,
                    kind: "option".into(),
                    reason: reason.into(),
                });
            }
        }
    }
    if !unsafe_set.is_empty() {
        meta.warnings.push(format!(
            "{rc} turns on {}; not carried into commands (see `agentbash snapshot report`)",
            unsafe_set.join(", ")
        ));
    }
}

/// Functions and aliases: those that shadow protected names or are interactive hooks
/// are dropped, `_` helpers kept only when a kept definition reaches them.
fn carry_definitions(meta: &mut Meta, d: &dump::Dump) {
    let mut roots: Vec<&str> = Vec::new();
    let mut helpers: BTreeSet<&str> = BTreeSet::new();
    // Removed in the generator before the dump (they would have broken it).
    let shadowing = d
        .extra
        .get("shadowing-functions")
        .map(String::as_str)
        .unwrap_or("");
    for name in shadowing.lines().filter(|n| !n.is_empty()) {
        meta.dropped.push(Dropped {
            name: name.into(),
            kind: "function".into(),
            reason: protected_name(name).unwrap_or_default(),
        });
    }
    for name in d.functions.keys().map(String::as_str) {
        if name.starts_with(dump::OWN_PREFIX) {
            continue;
        }
        if let Some(reason) = protected_name(name) {
            meta.dropped.push(Dropped {
                name: name.into(),
                kind: "function".into(),
                reason,
            });
        } else if name == "command_not_found_handle" {
            meta.dropped.push(Dropped {
                name: name.into(),
                kind: "function".into(),
                reason: "interactive hook: would change how a missing command is reported".into(),
            });
        } else if name.starts_with('_') {
            helpers.insert(name);
        } else {
            roots.push(name);
        }
    }
    let mut kept_aliases = Vec::new();
    for (name, line) in &d.aliases {
        if let Some(reason) = protected_name(name) {
            meta.dropped.push(Dropped {
                name: name.clone(),
                kind: "alias".into(),
                reason,
            });
        } else {
            kept_aliases.push((name, line));
        }
    }
    // Helpers reachable from kept functions and aliases, transitively.
    let mut kept: BTreeSet<&str> = roots.iter().copied().collect();
    let mut queue: Vec<&str> = roots
        .iter()
        .filter_map(|n| d.functions.get(*n).map(String::as_str))
        .chain(kept_aliases.iter().map(|(_, l)| l.as_str()))
        .collect();
    while let Some(def) = queue.pop() {
        for w in words(def) {
            if helpers.contains(w)
                && kept.insert(w)
                && let Some(body) = d.functions.get(w)
            {
                queue.push(body);
            }
        }
    }
    for h in &helpers {
        if !kept.contains(h) {
            meta.dropped.push(Dropped {
                name: (*h).into(),
                kind: "function".into(),
                reason: "`_` helper not called by any kept function or alias".into(),
            });
        }
    }
    for name in &kept {
        if let Some(def) = d.functions.get(*name) {
            meta.functions
                .insert((*name).to_string(), fnv64(def.as_bytes()));
        }
    }
    for (name, line) in &kept_aliases {
        meta.aliases.insert((*name).clone(), fnv64(line.as_bytes()));
    }
}

/// For each kept definition, the other kept definitions it mentions (a command needs
/// them too when it uses it).
fn record_refs(meta: &mut Meta, d: &dump::Dump) {
    let defined: BTreeSet<&str> = meta
        .functions
        .keys()
        .chain(meta.aliases.keys())
        .map(String::as_str)
        .collect();
    for name in &defined {
        let text = d
            .functions
            .get(*name)
            .or_else(|| d.aliases.get(*name))
            .map(String::as_str)
            .unwrap_or("");
        let mentioned: BTreeSet<&str> = words(text)
            .filter(|w| w != name && defined.contains(w))
            .collect();
        meta.refs.insert(
            (*name).to_string(),
            mentioned.into_iter().map(str::to_string).collect(),
        );
    }
}

/// The snapshot file: options first (function bodies may need extglob to parse), then
/// functions, then aliases (so they cannot change how the functions are parsed).
pub(super) fn render(src: &Source, d: &dump::Dump, meta: &Meta) -> String {
    let mut t = format!(
        "# agentbash snapshot of {} for {} (HOME={}).\n# Regenerate: agentbash snapshot refresh. What was left out and why: agentbash snapshot report.\nunset BASH_ENV\n",
        src.rc.display(),
        src.shell.display(),
        src.home.display()
    );
    for o in &meta.options {
        t.push_str(o);
        t.push('\n');
    }
    // The markers let a run take only the definitions its command can reach.
    for name in meta.functions.keys() {
        if let Some(def) = d.functions.get(name) {
            t.push_str(&format!("{MARK}function {name}\n{def}\n"));
        }
    }
    if !meta.aliases.is_empty() {
        t.push_str("shopt -s expand_aliases\n");
        for name in meta.aliases.keys() {
            if let Some(line) = d.aliases.get(name) {
                t.push_str(&format!("{MARK}alias {name}\n{line}\n"));
            }
        }
    }
    t
}
