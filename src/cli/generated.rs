//! Completions and the man page, generated from the one clap definition (`cli/mod.rs`).
//!
//! clap_complete writes static scripts, but profile names are only known when the
//! user presses TAB: they depend on the directory (project profiles) and on
//! `$AGENTBASH_CONFIG_DIR` (user profiles). So the bash, zsh and fish scripts get a
//! small hook that asks `agentbash profile list --names` for every value whose clap id
//! is `profile`/`profiles`, and offers the built-in rule packs for `packs`. The hooks
//! are driven by the same clap model, so a new `--profile` option is covered without
//! touching this file. Elvish and PowerShell get clap's scripts as they are.
//!
//! clap_mangen renders `after_help` as one filled paragraph and points at per-command
//! pages we do not ship, so the man page is assembled here: clap_mangen's title,
//! synopsis and options, then every subcommand with its options, then EXIT STATUS,
//! ENVIRONMENT and FILES from their single definitions (`exit::TABLE`,
//! `cli::ENVIRONMENT`).
//!
//! The results are committed under `completions/` and `man/`; the `ecosystem`
//! integration test fails when they drift (`AGENTBASH_REGENERATE=1 cargo test --test
//! it ecosystem` rewrites them).

use crate::cli::{Cli, CompletionShell};
use clap::Arg;
use std::fmt::Write as _;

/// The file each shell's script is committed as, relative to the repository root.
pub fn completion_file(shell: CompletionShell) -> &'static str {
    match shell {
        CompletionShell::Bash => "completions/agentbash.bash",
        CompletionShell::Zsh => "completions/agentbash.zsh",
        CompletionShell::Fish => "completions/agentbash.fish",
        CompletionShell::Elvish => "completions/agentbash.elvish",
        CompletionShell::Powershell => "completions/agentbash.ps1",
    }
}

/// Every shell `agentbash completions` supports.
pub const SHELLS: &[CompletionShell] = &[
    CompletionShell::Bash,
    CompletionShell::Zsh,
    CompletionShell::Fish,
    CompletionShell::Elvish,
    CompletionShell::Powershell,
];

pub fn completions(shell: CompletionShell) -> String {
    use clap_complete::Shell;
    let sh = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Elvish => Shell::Elvish,
        CompletionShell::Powershell => Shell::PowerShell,
    };
    let mut buf = Vec::new();
    clap_complete::generate(sh, &mut Cli::definition(), "agentbash", &mut buf);
    let script = String::from_utf8_lossy(&buf).into_owned();
    let model = Model::new();
    match shell {
        CompletionShell::Bash => bash(script, &model),
        CompletionShell::Zsh => zsh(script, &model),
        CompletionShell::Fish => fish(script, &model),
        CompletionShell::Elvish | CompletionShell::Powershell => script,
    }
}

/// What kind of value is only known at completion time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Dynamic {
    Profiles,
    RulePacks,
}

impl Dynamic {
    fn of(arg: &Arg) -> Option<Self> {
        match arg.get_id().as_str() {
            "profile" | "profiles" => Some(Dynamic::Profiles),
            "packs" => Some(Dynamic::RulePacks),
            _ => None,
        }
    }

    /// The shell function (same name in bash, zsh and fish) that offers the values.
    fn function(self, fish: bool) -> &'static str {
        match (self, fish) {
            (Dynamic::Profiles, false) => "_agentbash_profiles",
            (Dynamic::RulePacks, false) => "_agentbash_rule_packs",
            (Dynamic::Profiles, true) => "__fish_agentbash_profiles",
            (Dynamic::RulePacks, true) => "__fish_agentbash_rule_packs",
        }
    }
}

/// A positional whose values are dynamic, under a subcommand path like `["profile", "show"]`.
struct DynamicPositional {
    path: Vec<String>,
    kind: Dynamic,
    multiple: bool,
}

/// The facts about the clap definition the hooks need.
struct Model {
    /// `-p`, `--profile`, ... : options whose value is dynamic.
    options: Vec<(Option<char>, Option<String>, Dynamic)>,
    positionals: Vec<DynamicPositional>,
    /// Every option that takes a value, as `-x` / `--long` (its value is not a subcommand).
    value_options: Vec<String>,
    /// Every subcommand path, e.g. `/profile/show`.
    paths: Vec<String>,
    /// Subcommand paths whose trailing positional is a shell command (`run`, `explain`, ...).
    command_paths: Vec<String>,
}

impl Model {
    fn new() -> Self {
        let mut m = Model {
            options: Vec::new(),
            positionals: Vec::new(),
            value_options: Vec::new(),
            paths: Vec::new(),
            command_paths: Vec::new(),
        };
        let mut cmd = Cli::definition();
        cmd.build();
        m.walk(&cmd, &mut Vec::new());
        m.value_options.sort_unstable();
        m.value_options.dedup();
        m.options.sort_unstable();
        m.options.dedup();
        m
    }

    fn walk(&mut self, cmd: &clap::Command, path: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
            if arg.is_positional() {
                if let Some(kind) = Dynamic::of(arg) {
                    self.positionals.push(DynamicPositional {
                        path: path.clone(),
                        kind,
                        multiple: arg.get_num_args().is_some_and(|n| n.max_values() > 1),
                    });
                }
                if arg.get_value_hint() == clap::ValueHint::CommandWithArguments {
                    self.command_paths.push(format!("/{}", path.join("/")));
                }
                continue;
            }
            if !takes_value {
                continue;
            }
            self.value_options
                .extend(arg.get_short().map(|s| format!("-{s}")));
            self.value_options
                .extend(arg.get_long().map(|l| format!("--{l}")));
            if let Some(kind) = Dynamic::of(arg) {
                self.options
                    .push((arg.get_short(), arg.get_long().map(String::from), kind));
            }
        }
        // clap's generated `help` subcommand takes no dynamic values.
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            path.push(sub.get_name().to_string());
            self.paths.push(format!("/{}", path.join("/")));
            self.walk(sub, path);
            path.pop();
        }
    }

    fn option_words(&self, kind: Dynamic) -> Vec<String> {
        let mut v = Vec::new();
        for (s, l, k) in &self.options {
            if *k == kind {
                v.extend(s.map(|s| format!("-{s}")));
                v.extend(l.as_ref().map(|l| format!("--{l}")));
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}

fn rule_pack_words() -> String {
    crate::config::rules::BUILTIN_PACKS.join(" ")
}

fn bash(mut script: String, m: &Model) -> String {
    let mut positional_cases = String::new();
    for p in &m.positionals {
        let guard = if p.multiple {
            ""
        } else {
            "(( given == 0 )) && "
        };
        let _ = writeln!(
            positional_cases,
            "            /{}) {guard}{{ {} \"$cur\"; return 0; }} ;;",
            p.path.join("/"),
            p.kind.function(false)
        );
    }
    let command_paths = m.command_paths.join("|");
    let _ = write!(
        script,
        r#"
# ---------------------------------------------------------------------------
# Added by agentbash (src/commands/generated.rs) around clap's script: values only
# known at completion time. Profile names come from `agentbash profile list
# --names` (built-in, project and user profiles); after `run --` the shell
# command itself is completed.

_agentbash_profiles() {{
    local cur="$1" IFS=$'\n'
    if [[ "$cur" == */* || "$cur" == *.toml ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(command agentbash profile list --names 2>/dev/null)" -- "$cur"))
    fi
}}

_agentbash_rule_packs() {{
    local cur="$1"
    if [[ "$cur" == */* || "$cur" == *.toml ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -W "{packs}" -- "$cur"))
    fi
}}

# $1: index in COMP_WORDS where the shell command starts; $2: the current word.
_agentbash_command() {{
    if declare -F _command_offset >/dev/null; then
        _command_offset "$1"
    elif (( $1 == COMP_CWORD )); then
        COMPREPLY=($(compgen -c -- "$2" | sort -u))
    else
        COMPREPLY=($(compgen -f -- "$2"))
    fi
}}

_agentbash_with_values() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="" word path="" start=""
    local -i i given=0 dashdash=0
    (( COMP_CWORD > 1 )) && prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    for (( i = 1; i < COMP_CWORD; i++ )); do
        word="${{COMP_WORDS[i]}}"
        if (( dashdash )); then
            given+=1
            continue
        fi
        case "$word" in
            --) dashdash=1; start=$((i + 1)) ;;
            {value_options}) i+=1 ;;
            -*) ;;
            *)
                case "$path/$word" in
                    {paths}) path="$path/$word" ;;
                    *) given+=1; [[ -z "$start" ]] && start=$i ;;
                esac ;;
        esac
    done
    if (( ! dashdash )); then
        case "$prev" in
            {profile_options}) _agentbash_profiles "$cur"; return 0 ;;
            {value_options}) _agentbash "$@"; return ;;
        esac
    fi
    # After the first word of the shell command (or `--`) everything is the command's.
    case "$path" in
        {command_paths})
            if (( dashdash || given > 0 )) || [[ "$cur" != -* ]]; then
                _agentbash_command "${{start:-$COMP_CWORD}}" "$cur"
                return 0
            fi ;;
    esac
    if [[ "$cur" != -* ]]; then
        case "$path" in
{positional_cases}        esac
    fi
    _agentbash "$@"
}}

if [[ "${{BASH_VERSINFO[0]}}" -eq 4 && "${{BASH_VERSINFO[1]}}" -ge 4 || "${{BASH_VERSINFO[0]}}" -gt 4 ]]; then
    complete -F _agentbash_with_values -o nosort -o bashdefault -o default agentbash
else
    complete -F _agentbash_with_values -o bashdefault -o default agentbash
fi
"#,
        packs = rule_pack_words(),
        value_options = m.value_options.join("|"),
        paths = m.paths.join("|"),
        profile_options = m.option_words(Dynamic::Profiles).join("|"),
    );
    script
}

fn zsh(script: String, m: &Model) -> String {
    let mut out = String::with_capacity(script.len() + 1024);
    for line in script.lines() {
        out.push_str(&zsh_line(line, m).unwrap_or_else(|| line.to_string()));
        out.push('\n');
    }
    let functions = format!(
        r#"# Added by agentbash (src/commands/generated.rs): values only known at completion time.
(( $+functions[_agentbash_profiles] )) ||
_agentbash_profiles() {{
    if [[ $PREFIX == */* || $PREFIX == *.toml ]]; then
        _files -g '*.toml'
    else
        local -a profiles
        profiles=(${{(f)"$(command agentbash profile list --names 2>/dev/null)"}})
        _wanted profiles expl 'profile' compadd -a profiles
    fi
}}
(( $+functions[_agentbash_rule_packs] )) ||
_agentbash_rule_packs() {{
    if [[ $PREFIX == */* || $PREFIX == *.toml ]]; then
        _files -g '*.toml'
    else
        local -a packs
        packs=({packs})
        _wanted packs expl 'rule pack' compadd -a packs
    fi
}}

"#,
        packs = rule_pack_words()
    );
    // The functions must exist before the trailer calls `_agentbash` (autoload case).
    const TRAILER: &str = "if [ \"$funcstack[1]\" = \"_agentbash\" ]; then";
    match out.rfind(TRAILER) {
        Some(at) => out.insert_str(at, &functions),
        None => out.push_str(&functions),
    }
    out
}

/// `'-p+[help]:NAME|PATH:_default' \` → `...:_agentbash_profiles' \` for dynamic values.
fn zsh_line(line: &str, m: &Model) -> Option<String> {
    const DEFAULT: &str = ":_default'";
    let at = line.rfind(DEFAULT)?;
    let spec = line.strip_prefix('\'')?.trim_start_matches('*');
    let kind = m
        .options
        .iter()
        .find(|(s, l, _)| {
            s.is_some_and(|s| spec.starts_with(&format!("-{s}+[")))
                || l.as_ref()
                    .is_some_and(|l| spec.starts_with(&format!("--{l}=[")))
        })
        .map(|o| o.2)
        .or_else(|| {
            let name = spec.trim_start_matches(':');
            m.positionals.iter().find_map(|p| {
                let id = match p.kind {
                    Dynamic::Profiles if p.multiple => "profiles",
                    Dynamic::Profiles => "profile",
                    Dynamic::RulePacks => "packs",
                };
                (name.starts_with(&format!("{id} -- ")) || name.starts_with(&format!("{id}:")))
                    .then_some(p.kind)
            })
        })?;
    Some(format!(
        "{}:{}'{}",
        &line[..at],
        kind.function(false),
        &line[at + DEFAULT.len()..]
    ))
}

fn fish(script: String, m: &Model) -> String {
    let mut out = String::with_capacity(script.len() + 1024);
    for line in script.lines() {
        out.push_str(line);
        let kind = m.options.iter().find_map(|(s, l, k)| {
            let by_short = s.is_some_and(|s| line.contains(&format!(" -s {s} ")));
            let by_long = l
                .as_ref()
                .is_some_and(|l| line.contains(&format!(" -l {l} ")));
            (by_long || (by_short && l.is_none())).then_some(*k)
        });
        if let Some(k) = kind
            && line.ends_with(" -r")
        {
            let _ = write!(out, " -f -a \"({})\"", k.function(true));
        }
        out.push('\n');
    }
    let _ = write!(
        out,
        r#"
# Added by agentbash (src/commands/generated.rs): values only known at completion time.
function __fish_agentbash_profiles
    set -l token (commandline -ct)
    if string match -q -- '*/*' $token; or string match -q -- '*.toml' $token
        __fish_complete_path $token
    else
        command agentbash profile list --names 2>/dev/null
    end
end

function __fish_agentbash_rule_packs
    set -l token (commandline -ct)
    if string match -q -- '*/*' $token; or string match -q -- '*.toml' $token
        __fish_complete_path $token
    else
        string split ' ' -- {packs}
    end
end

"#,
        packs = rule_pack_words()
    );
    for p in &m.positionals {
        let condition = match p.path.as_slice() {
            [] => "__fish_agentbash_needs_command".to_string(),
            [one] => format!("__fish_agentbash_using_subcommand {one}"),
            [first, rest @ ..] => format!(
                "__fish_agentbash_using_subcommand {first}; and __fish_seen_subcommand_from {}",
                rest.join(" ")
            ),
        };
        let _ = writeln!(
            out,
            "complete -c agentbash -n \"{condition}\" -f -a \"({})\"",
            p.kind.function(true)
        );
    }
    out
}

/// The roff man page: clap_mangen's header and top-level options, then every
/// subcommand, exit status, environment and files.
pub fn man_page() -> String {
    let mut cmd = Cli::definition();
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone()).date("");
    let mut buf = Vec::new();
    let _ = man.render_title(&mut buf);
    let _ = man.render_name_section(&mut buf);
    let _ = man.render_synopsis_section(&mut buf);
    let mut s = String::from_utf8_lossy(&buf).into_owned();

    s.push_str(".SH DESCRIPTION\n");
    for para in DESCRIPTION {
        s.push_str(".PP\n");
        s.push_str(&roff_text(para));
        s.push('\n');
    }

    let mut opts = Vec::new();
    let _ = man.render_options_section(&mut opts);
    s.push_str(&String::from_utf8_lossy(&opts));

    s.push_str(".SH COMMANDS\n");
    let mut seen = Vec::new();
    for sub in cmd.get_subcommands() {
        man_subcommand(&mut s, sub, &mut seen);
    }

    s.push_str(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in crate::exit::TABLE {
        let _ = write!(
            s,
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_escape(code),
            roff_text(meaning)
        );
    }
    s.push_str(".SH ENVIRONMENT\n");
    for (name, meaning) in crate::cli::ENVIRONMENT {
        let _ = write!(
            s,
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_escape(name),
            roff_text(meaning)
        );
    }
    s.push_str(".SH FILES\n");
    for (path, meaning) in FILES {
        let _ = write!(
            s,
            ".TP\n\\fI{}\\fR\n{}\n",
            roff_escape(path),
            roff_text(meaning)
        );
    }
    let mut version = Vec::new();
    let _ = man.render_version_section(&mut version);
    s.push_str(&String::from_utf8_lossy(&version));
    s
}

const DESCRIPTION: &[&str] = &[
    "agentbash runs shell commands the way a careful coding agent or CI job needs them run: \
     declared by TOML profiles, guarded by interceptor rules, bounded in time and output, \
     never hanging on a pager or a background job, never leaking a process, and reporting \
     what happened in a form both people and programs can read.",
    "The words after `--` are joined with single spaces into one shell command: \
     `agentbash run -- 'cargo test 2>&1 | tail -n 20'` and `agentbash run -- ls -la` both work. \
     Output beyond the profile's limits is kept whole in an artifact (artifact://ID) that \
     `agentbash artifact show` prints.",
];

const FILES: &[(&str, &str)] = &[
    (
        ".agentbash/profiles/NAME.toml",
        "project profiles, in the invoking directory or its nearest ancestor that has one",
    ),
    ("$AGENTBASH_CONFIG_DIR/profiles/NAME.toml", "user profiles"),
    (
        "$AGENTBASH_STATE_DIR/artifacts/ID.bash.log",
        "the complete raw output of a run whose shown output was cut (profile artifacts.dir \
         overrides the directory; the ci profile uses .agentbash/artifacts)",
    ),
    (
        "$XDG_CACHE_HOME/agentbash",
        "snapshots of the user's shell rc",
    ),
];

/// One `.SS` per leaf command: usage, about, arguments. A command whose arguments
/// repeat an earlier one's (`explain` and `run`) points there instead.
/// `seen` holds (rendered arguments, command name) of the commands written so far.
fn man_subcommand(s: &mut String, cmd: &clap::Command, seen: &mut Vec<(String, String)>) {
    if cmd.is_hide_set() || cmd.get_name() == "help" {
        return;
    }
    if cmd.has_subcommands() {
        for sub in cmd.get_subcommands() {
            man_subcommand(s, sub, seen);
        }
        return;
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim_start_matches("Usage:").trim().to_string();
    let _ = writeln!(s, ".SS \"{}\"", roff_escape(&usage).replace('"', "\\(dq"));
    if let Some(about) = cmd.get_long_about().or_else(|| cmd.get_about()) {
        s.push_str(&roff_text(&about.to_string()));
        s.push('\n');
    }
    let mut args = String::new();
    for arg in cmd.get_arguments() {
        if arg.is_hide_set() || matches!(arg.get_id().as_str(), "help" | "version") {
            continue;
        }
        args.push_str(".TP\n");
        args.push_str(&man_arg_label(arg));
        args.push('\n');
        args.push_str(&roff_text(&man_arg_help(arg)));
        args.push('\n');
    }
    // Only a long list is worth a cross-reference; one or two options are just repeated.
    let long = args.matches(".TP\n").count() >= 4;
    match seen.iter().find(|(a, _)| long && *a == args) {
        Some((_, first)) => {
            let _ = writeln!(
                s,
                ".PP\nTakes the same arguments as \\fB{}\\fR.",
                roff_escape(first)
            );
        }
        None => {
            s.push_str(&args);
            let name = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string();
            seen.push((args, name));
        }
    }
}

fn man_arg_label(arg: &Arg) -> String {
    let values = arg
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
    if arg.is_positional() {
        let dots = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
            "..."
        } else {
            ""
        };
        return format!("\\fI{}\\fR{dots}", roff_escape(&values));
    }
    let mut names = Vec::new();
    if let Some(c) = arg.get_short() {
        names.push(format!("\\fB\\-{}\\fR", roff_escape(&c.to_string())));
    }
    if let Some(l) = arg.get_long() {
        names.push(format!("\\fB\\-\\-{}\\fR", roff_escape(l)));
    }
    let mut label = names.join(", ");
    if arg.get_num_args().is_some_and(|n| n.takes_values()) {
        let _ = write!(label, " \\fI{}\\fR", roff_escape(&values));
    }
    label
}

fn man_arg_help(arg: &Arg) -> String {
    let mut help = arg
        .get_long_help()
        .or_else(|| arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if !possible.is_empty() && arg.get_num_args().is_some_and(|n| n.takes_values()) {
        let _ = write!(help, " [possible values: {}]", possible.join(", "));
    }
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && takes_value {
        let _ = write!(help, " [default: {}]", defaults.join(", "));
    }
    if let Some(env) = arg.get_env() {
        let _ = write!(help, " [env: {}]", env.to_string_lossy());
    }
    help.trim().to_string()
}

/// Escape text for roff: backslashes and hyphens.
fn roff_escape(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

/// Running text: escaped, `code` spans in bold, and no line starting with a
/// character roff would take for a request.
fn roff_text(s: &str) -> String {
    s.lines()
        .map(|l| {
            let l = bold_code_spans(&roff_escape(l.trim()));
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `` `x` `` → `\fBx\fR` when the backticks pair up; otherwise the text is left alone.
fn bold_code_spans(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for (i, p) in parts.iter().enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "\\fB{p}\\fR");
        } else {
            out.push_str(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_value_is_hooked_in_zsh_and_fish() {
        let zsh = completions(CompletionShell::Zsh);
        assert!(
            !zsh.contains("NAME|PATH:_default'"),
            "an unhooked --profile in zsh"
        );
        assert!(zsh.contains("'::profile -- "), "{zsh}");
        for id in ["::profile -- ", "*::profiles -- ", "*::packs -- "] {
            let line = zsh
                .lines()
                .find(|l| l.contains(id))
                .unwrap_or_else(|| panic!("no zsh line for {id}"));
            assert!(!line.ends_with(":_default' \\"), "{line}");
        }
        let fish = completions(CompletionShell::Fish);
        for line in fish.lines().filter(|l| l.contains(" -l profile ")) {
            assert!(
                line.ends_with("-f -a \"(__fish_agentbash_profiles)\""),
                "{line}"
            );
        }
        assert!(
            fish.contains(
                "__fish_seen_subcommand_from show\" -f -a \"(__fish_agentbash_profiles)\""
            )
        );
        assert!(
            fish.contains(
                "__fish_seen_subcommand_from check\" -f -a \"(__fish_agentbash_profiles)\""
            )
        );
        assert!(fish.contains(
            "__fish_seen_subcommand_from check\" -f -a \"(__fish_agentbash_rule_packs)\""
        ));
    }

    #[test]
    fn model_sees_the_dynamic_values() {
        let m = Model::new();
        assert_eq!(m.option_words(Dynamic::Profiles), ["--profile", "-p"]);
        let paths: Vec<String> = m.positionals.iter().map(|p| p.path.join(" ")).collect();
        assert_eq!(paths, ["profile show", "profile check", "rules check"]);
        assert!(m.command_paths.contains(&"/run".to_string()));
        assert!(m.value_options.contains(&"--mode".to_string()));
    }

    #[test]
    fn man_page_has_the_tables() {
        let man = man_page();
        for needle in [
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            "AGENTBASH_NO_PTY",
            "\\fB124\\fR",
        ] {
            assert!(man.contains(needle), "{needle}");
        }
    }
}
