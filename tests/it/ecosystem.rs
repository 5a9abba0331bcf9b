//! Fitting the ecosystem (issue 7): generated completions and man page (committed,
//! checked for drift, bash/fish/zsh completion driven for real), `profile` and
//! `artifact` commands with their bad inputs, the shipped profiles, GitHub Actions
//! output, and snapshots of help, `profile show`, `rules list` and the text renderer.
//!
//! Regenerate the committed files with `AGENTBASH_REGENERATE=1 cargo test --test it
//! ecosystem::generated`; accept changed snapshots with `cargo insta review` (or
//! `INSTA_UPDATE=always cargo test --test it ecosystem`).

use crate::support::{
    Test, TestEnv, assert_ends_with, assert_has, assert_lacks, assert_starts_with, bin,
    has_program, needs_program, re, s, sh_output, skip, strings,
};
use agentbash::cli::CompletionShell;
use agentbash::cli::generated::{SHELLS, completion_file};
use agentbash::config::profile::{Format, Live, Origin};
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `PATH` with the agentbash under test first, so completion scripts find it.
fn path_with_agentbash() -> String {
    let dir = bin().parent().expect("binary dir").display().to_string();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

// ---------------------------------------------------------------------------
// Generated files

/// (file relative to the repository, arguments that print it).
fn generated_files() -> Vec<(&'static str, Vec<String>)> {
    let mut v: Vec<(&str, Vec<String>)> = SHELLS
        .iter()
        .map(|sh| {
            let name = sh
                .to_possible_value()
                .expect("shell name")
                .get_name()
                .to_string();
            (completion_file(*sh), vec!["completions".to_string(), name])
        })
        .collect();
    v.push(("man/agentbash.1", vec!["man".to_string()]));
    v
}

#[test]
fn generated_files_match_the_clap_definition() {
    let env = TestEnv::new();
    let regenerate = std::env::var("AGENTBASH_REGENERATE").as_deref() == Ok("1");
    let mut drift = Vec::new();
    for (rel, args) in generated_files() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.run(&args);
        out.assert_code(0);
        assert!(
            !out.stdout.is_empty(),
            "`agentbash {}` printed nothing",
            args.join(" ")
        );
        let path = repo().join(rel);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(out.stdout.as_str()) {
            continue;
        }
        if regenerate {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("create dir");
            std::fs::write(&path, &out.stdout).expect("write generated file");
        } else {
            drift.push(format!("{rel} (`cargo run -- {} > {rel}`)", args.join(" ")));
        }
    }
    assert!(
        drift.is_empty(),
        "generated files differ from what the clap definition produces:\n  {}\n\
         Regenerate them all with:\n  AGENTBASH_REGENERATE=1 cargo test --test it ecosystem::generated",
        drift.join("\n  ")
    );
}

const REFERENCE_BEGIN: &str =
    "<!-- BEGIN generated: configuration reference (profiles/default.toml) -->";
const REFERENCE_END: &str = "<!-- END generated: configuration reference -->";

/// Where the configuration reference lives.
const REFERENCE_FILE: &str = "docs/CONFIG.md";

/// The configuration reference, one table per section and one row per key: the
/// default and the meaning from `profiles/default.toml` (every key there carries
/// both), the type from the schema's own words (`config::schema::expected_type`, what
/// a wrong-type error says).
fn configuration_reference() -> String {
    let text = std::fs::read_to_string(repo().join("profiles/default.toml")).unwrap();
    // Markdown: a table cell must not contain a bare `|`, and `*`, `<` and `\` would
    // be taken for emphasis, HTML and escapes.
    let text_cell = |s: &str| {
        s.trim()
            .replace('\\', "\\\\")
            .replace('*', "\\*")
            .replace('<', "&lt;")
            .replace('|', "\\|")
    };
    let code_cell = |s: &str| s.trim().replace('|', "\\|");
    let type_cell = |key: &str| {
        let words = agentbash::config::schema::expected_type(key)
            .unwrap_or_else(|| panic!("config::schema::expected_type has no words for {key}"));
        text_cell(words)
    };
    const HEADER: &str = "| key | type | default | meaning |\n|---|---|---|---|";
    let mut out = vec![
        "## Top level".to_string(),
        String::new(),
        HEADER.to_string(),
        format!(
            "| `description` | {} | `\"\"` | one line shown by `agentbash profile list` |",
            type_cell("description")
        ),
        format!(
            "| `extends` | {} | none | profile name or path this one layers on: tables merge key by key, arrays and scalars replace |",
            type_cell("extends")
        ),
    ];
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[') {
            section = name.split(']').next().unwrap_or("").to_string();
            out.push(String::new());
            out.push(format!("## `[{section}]`"));
            out.push(String::new());
            if let Some((_, about)) = line.split_once(" #") {
                out.push(format!("{}.", text_cell(about).trim_end_matches('.')));
                out.push(String::new());
            }
            out.push(HEADER.to_string());
            continue;
        }
        if line.is_empty() || line.starts_with('#') || section.is_empty() {
            continue;
        }
        let (assignment, meaning) = line.split_once(" #").unwrap_or((line, ""));
        let (key, value) = assignment.split_once('=').expect("key = value");
        let key = format!("{section}.{}", key.trim());
        out.push(format!(
            "| `{key}` | {} | `{}` | {} |",
            type_cell(&key),
            code_cell(value),
            text_cell(meaning)
        ));
    }
    format!("{REFERENCE_BEGIN}\n{}\n{REFERENCE_END}", out.join("\n"))
}

/// Every key of a TOML table as `a.b.c` (tables flattened, `env.set` kept whole).
fn keys(t: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in t {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(inner) if key != "env.set" => keys(inner, &format!("{key}."), out),
            _ => out.push(key),
        }
    }
}

#[test]
fn default_profile_spells_out_every_key_with_its_meaning() {
    let text = std::fs::read_to_string(repo().join("profiles/default.toml")).unwrap();
    let mut spelled = Vec::new();
    keys(&toml::from_str(&text).unwrap(), "", &mut spelled);
    let mut schema = Vec::new();
    keys(
        &toml::Table::try_from(agentbash::Profile::default()).unwrap(),
        "",
        &mut schema,
    );
    spelled.sort();
    schema.sort();
    assert_eq!(
        spelled, schema,
        "profiles/default.toml and the schema disagree on the keys"
    );
    let mut section = "";
    for line in text.lines() {
        if line.starts_with('[') {
            section = line;
        } else if !line.starts_with('#') && line.contains('=') && !line.starts_with("description") {
            assert!(
                line.contains(" # "),
                "{section} {line:?} has no comment saying what it means"
            );
        }
    }
}

#[test]
fn generated_configuration_reference_in_docs_config() {
    let path = repo().join(REFERENCE_FILE);
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let want = configuration_reference();
    let (Some(start), Some(end)) = (doc.find(REFERENCE_BEGIN), doc.find(REFERENCE_END)) else {
        panic!(
            "{REFERENCE_FILE} has no generated configuration reference: paste this where it \
             belongs (later, `AGENTBASH_REGENERATE=1 cargo test --test it ecosystem::generated` \
             rewrites what is between the markers):\n{want}"
        );
    };
    let current = &doc[start..end + REFERENCE_END.len()];
    if current == want {
        return;
    }
    if std::env::var("AGENTBASH_REGENERATE").as_deref() == Ok("1") {
        let updated = format!(
            "{}{want}{}",
            &doc[..start],
            &doc[end + REFERENCE_END.len()..]
        );
        std::fs::write(&path, updated).expect("write the configuration reference");
        return;
    }
    panic!(
        "{REFERENCE_FILE}'s configuration reference is out of date with profiles/default.toml \
         or the schema; regenerate it with \
         `AGENTBASH_REGENERATE=1 cargo test --test it ecosystem::generated`"
    );
}

/// The README keeps a summary of the configuration, not a second copy of the
/// reference that could drift from the generated one.
#[test]
fn readme_points_at_the_configuration_reference() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        !readme.contains(REFERENCE_BEGIN),
        "README.md holds a copy of the configuration reference; it lives in {REFERENCE_FILE}"
    );
    assert!(
        readme.contains("(docs/CONFIG.md)"),
        "README.md does not link to {REFERENCE_FILE}"
    );
}

/// The README is for users first (issue 22, item 20): it starts with the two commands
/// a newcomer needs (install and run; the test suite), its Quick start has an MCP
/// configuration a client accepts — using the profile meant for models — and it lists
/// every tool that configuration's server offers, no more; the Rust version it names is
/// the crate's `rust-version`.
#[test]
fn readme_quick_start_matches_the_server() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let first_block: Vec<&str> = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the README opens with a sh block")
        .lines()
        .collect();
    assert!(
        first_block[0].starts_with("cargo install --locked --path . && agentbash run -- "),
        "{first_block:?}"
    );
    assert!(first_block[1].starts_with("cargo test "), "{first_block:?}");
    let quick = readme
        .split("\n## Quick start\n")
        .nth(1)
        .and_then(|q| q.split("\n## ").next())
        .expect("a Quick start section");
    // The client configuration parses and starts the server with the agent profile.
    let json = quick
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("an MCP configuration");
    let config: serde_json::Value = serde_json::from_str(json).expect("the configuration is JSON");
    let server = &config["mcpServers"]["agentbash"];
    assert_eq!(server["command"], "agentbash", "{config}");
    let args = strings(server, "args");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(args[0], "mcp");
    // The tools the README lists are those that server offers.
    let listed: std::collections::BTreeSet<String> = quick
        .split("The MCP server's tools:")
        .nth(1)
        .expect("the tool table")
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(name, _)| name.to_string()))
        .collect();
    let env = TestEnv::new();
    let mut mcp = crate::support::LiveServer::start(&env, &args);
    mcp.send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "readme", "version": "0"}}}),
    );
    assert_eq!(mcp.next(Duration::from_secs(20))["id"], 1);
    mcp.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mcp.send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = mcp.next(Duration::from_secs(20));
    let offered: std::collections::BTreeSet<String> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        listed, offered,
        "the README's MCP tool table against `agentbash {args:?}`"
    );
    // The Rust version.
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let version = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"'))
        .expect("Cargo.toml sets rust-version");
    assert!(
        quick.contains(&format!("**Rust {version} or newer**")),
        "Quick start names Rust {version}"
    );
    for must in [
        "`.agentbash/` in `.gitignore`",
        "`CI=true`",
        "-p agent",
        "`strict`",
    ] {
        assert!(quick.contains(must), "the Quick start does not say {must}");
    }
}

#[test]
fn man_page_documents_exit_codes_and_environment() {
    let env = TestEnv::new();
    let out = env.run_ok(&["man"]);
    let man = &out.stdout;
    for needle in [
        ".SH \"EXIT STATUS\"",
        "\\fB77\\fR",
        "\\fB124\\fR",
        "\\fB125\\fR",
        ".SH ENVIRONMENT",
        "\\fBAGENTBASH_PROFILE\\fR",
        "\\fBAGENTBASH_NO_PTY\\fR",
        "\\fBNO_COLOR\\fR",
        ".SH FILES",
        ".SS \"agentbash profile check",
        ".SS \"agentbash artifact show",
    ] {
        assert_has(man, needle);
    }
    // Subcommands are documented in this page, not in pages we do not ship.
    assert!(
        !man.contains("agentbash\\-run(1)"),
        "man page points at agentbash-run(1)"
    );
    if !has_program("groff") {
        skip!(needs_program("groff", "groff-base"));
    }
    let page = env.write("agentbash.1", man);
    let o = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&page)
        .output()
        .expect("run groff");
    let warnings = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && warnings.trim().is_empty(),
        "groff: {warnings}"
    );
}

// ---------------------------------------------------------------------------
// Completion, driven for real

/// An environment with a project profile `projzz` and a user profile `userzz`.
fn completion_env() -> TestEnv {
    let env = TestEnv::trusting();
    env.write(
        ".agentbash/profiles/projzz.toml",
        "description = \"project\"\n",
    );
    let user = env.config_dir().join("profiles/userzz.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "description = \"user\"\n").unwrap();
    env
}

/// What bash offers for `words` (the last one is being completed), through the
/// function the committed script registers with `complete`.
fn bash_complete(env: &TestEnv, words: &[&str]) -> Vec<String> {
    const DRIVER: &str = r#"
source "$1" || exit 90
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
spec=$(complete -p agentbash) || exit 91
func=$(sed -E 's/.* -F ([^ ]+) .*/\1/' <<<"$spec")
"$func" agentbash "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"#;
    let script = repo().join(completion_file(CompletionShell::Bash));
    let script = script.display().to_string();
    let mut args = vec!["-c", DRIVER, "bash", script.as_str()];
    args.extend_from_slice(words);
    let out = env
        .program("bash", &args)
        .env("PATH", path_with_agentbash())
        .run();
    out.assert_code(0);
    out.stdout.lines().map(String::from).collect()
}

#[track_caller]
fn assert_offers(got: &[String], want: &[&str], context: &str) {
    for w in want {
        assert!(
            got.iter().any(|g| g == w),
            "{context}: {w:?} not offered; got {got:?}"
        );
    }
}

#[test]
fn bash_completion_offers_subcommands_and_profile_names() {
    let env = completion_env();
    let top = bash_complete(&env, &["agentbash", ""]);
    assert_offers(
        &top,
        &[
            "run",
            "explain",
            "rpc",
            "mcp",
            "profile",
            "rules",
            "artifact",
            "completions",
            "man",
        ],
        "agentbash <TAB>",
    );
    let profiles = ["default", "ci", "agent", "projzz", "userzz"];
    for words in [
        &["agentbash", "run", "-p", ""][..],
        &["agentbash", "run", "--profile", ""],
        &["agentbash", "explain", "-t", "5", "-p", ""],
        &["agentbash", "rules", "list", "-p", ""],
        &["agentbash", "artifact", "list", "--profile", ""],
        &["agentbash", "mcp", "-p", ""],
        &["agentbash", "profile", "show", ""],
        &["agentbash", "profile", "check", "ci", ""],
    ] {
        assert_offers(&bash_complete(&env, words), &profiles, &words.join(" "));
    }
    assert_eq!(
        bash_complete(&env, &["agentbash", "run", "-p", "pro"]),
        ["projzz"]
    );
    assert_eq!(
        bash_complete(&env, &["agentbash", "rules", "check", ""]),
        ["default", "guard"]
    );
    // Other option values and subcommands still come from clap's script.
    assert_offers(
        &bash_complete(&env, &["agentbash", "run", "--mode", ""]),
        &["auto", "print", "pty"],
        "--mode",
    );
    assert_offers(
        &bash_complete(&env, &["agentbash", "profile", ""]),
        &["list", "show", "check"],
        "profile <TAB>",
    );
    assert_offers(
        &bash_complete(&env, &["agentbash", "run", "-"]),
        &["--timeout", "--json"],
        "run -",
    );
    // After `--`, or once the command has started, the words are the command's.
    assert!(
        !bash_complete(&env, &["agentbash", "run", "-t", "5", "ls", "--colo"])
            .contains(&"--color".to_string())
    );
    let cmd = bash_complete(&env, &["agentbash", "run", "--", "ech"]);
    assert!(cmd.iter().any(|c| c == "echo"), "{cmd:?}");
    assert!(
        bash_complete(&env, &["agentbash", "run", "--", "grep", "-p", ""])
            .iter()
            .all(|c| c != "projzz")
    );
}

#[test]
fn fish_completion_offers_profile_names() {
    if !has_program("fish") {
        skip!(needs_program("fish", "fish"));
    }
    let env = completion_env();
    let script = repo().join(completion_file(CompletionShell::Fish));
    let complete = |line: &str| -> Vec<String> {
        let cmd = format!("source '{}'; complete -C '{line}'", script.display());
        let out = env
            .program("fish", &["--no-config", "-c", &cmd])
            .env("PATH", path_with_agentbash())
            .run();
        out.assert_code(0);
        out.stdout
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect()
    };
    let profiles = ["default", "ci", "agent", "projzz", "userzz"];
    assert_offers(&complete("agentbash run -p "), &profiles, "fish run -p");
    assert_offers(
        &complete("agentbash profile show "),
        &profiles,
        "fish profile show",
    );
    assert_offers(
        &complete("agentbash rules check "),
        &["default"],
        "fish rules check",
    );
    assert_offers(
        &complete("agentbash "),
        &["run", "explain", "profile"],
        "fish top level",
    );
}

#[test]
fn zsh_completion_offers_profile_names() {
    if !has_program("zsh") {
        skip!(needs_program("zsh", "zsh"));
    }
    // zsh completes only in an interactive line editor: drive one through zpty and
    // read the listing it prints.
    const DRIVER: &str = r#"
zmodload zsh/zpty || exit 90
zpty z zsh -f -i
zpty -w z "PS1='>'; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w -n z "$2"$'\t'
local all="" chunk
for i in {1..150}; do
    while zpty -r -t z chunk; do all+=$chunk; done
    [[ $all == *"$3"* ]] && break
    sleep 0.1
done
print -r -- "$all"
zpty -d z
"#;
    let env = completion_env();
    let fpath = env.root().join("zfunc");
    std::fs::create_dir_all(&fpath).unwrap();
    std::fs::copy(
        repo().join(completion_file(CompletionShell::Zsh)),
        fpath.join("_agentbash"),
    )
    .unwrap();
    let fpath = fpath.display().to_string();
    for line in ["agentbash run -p ", "agentbash profile show "] {
        let out = env
            .program("zsh", &["-f", "-c", DRIVER, "zsh", &fpath, line, "userzz"])
            .env("PATH", path_with_agentbash())
            .run();
        let listing = re(r"\x1b\[[0-9;?]*[A-Za-z]").replace_all(&out.stdout, "");
        for name in ["default", "ci", "agent", "projzz", "userzz"] {
            assert!(
                listing.contains(name),
                "zsh `{line}<TAB>`: {name} not offered:\n{listing}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// profile list | show | check

#[test]
fn profile_list_shows_origin_description_and_shadowing() {
    let env = TestEnv::trusting();
    let out = env.run_ok(&["profile", "list"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("NAME")
            && lines[0].contains("ORIGIN")
            && lines[0].contains("DESCRIPTION")
    );
    for name in ["default", "ci", "agent"] {
        let row = lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{}", out.stdout));
        assert!(row.contains(&format!("built-in:{name}")), "{row}");
    }
    assert!(out.stdout.contains("Headless CI"), "ci description missing");

    // A project `ci` shadows the built-in; an invalid profile is listed as such.
    env.write(
        ".agentbash/profiles/ci.toml",
        "description = \"our CI\"\nextends = \"ci\"\n",
    );
    env.write(
        ".agentbash/profiles/broken.toml",
        "[timeout]\ndefualt = 3\n",
    );
    let out = env.run_ok(&["profile", "list"]);
    let project_ci = env.work_path(".agentbash/profiles/ci.toml");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("ci "))
        .expect("ci row");
    assert_has(lines[i], &project_ci);
    assert_ends_with(lines[i], "our CI");
    assert!(
        lines[i + 1].trim_start().starts_with("built-in:ci")
            && lines[i + 1].contains(&format!("(shadowed by {project_ci})")),
        "shadowed built-in not shown under the project ci:\n{}",
        out.stdout
    );
    let broken = lines
        .iter()
        .find(|l| l.starts_with("broken "))
        .expect("broken row");
    assert!(
        broken.contains("INVALID") && broken.contains("agentbash profile check broken"),
        "{broken}"
    );

    env.test()
        .args(&["profile", "list", "--names"])
        .code(0)
        .stdout("agent\nbroken\nci\ndefault\nstrict\n")
        .run();
    // The completion helper is not advertised.
    assert!(
        !env.run(&["profile", "list", "--help"])
            .stdout
            .contains("--names")
    );
}

#[test]
fn profile_show_prints_the_resolved_toml_with_origins() {
    let env = TestEnv::trusting();
    let out = env.run_ok(&["profile", "show", "ci"]);
    assert!(out.stdout.starts_with(
        "# profile ci from built-in:ci\n# layers, lowest first: built-in:default < built-in:ci\n"
    ));
    let table: toml::Table = toml::from_str(&out.stdout).expect("profile show prints TOML");
    assert_eq!(table["render"]["live"].as_str(), Some("stream"));
    assert_eq!(
        table["timeout"]["max"].as_integer(),
        Some(3600),
        "merged from the built-in"
    );
    assert!(
        table.get("extends").is_none(),
        "the resolved profile has no extends"
    );

    // --origin: each value says which layer set it, nested tables included.
    env.write(
        ".agentbash/profiles/mine.toml",
        "extends = \"ci\"\n[env]\nset = { FOO = \"bar\" }\n[timeout]\ndefault = 60\n",
    );
    let mine = env.work_path(".agentbash/profiles/mine.toml");
    let out = env.run_ok(&["profile", "show", "--origin", "mine"]);
    for line in [
        format!("default = 60  # from {mine}"),
        format!("FOO = \"bar\"  # from {mine}"),
        "live = \"stream\"  # from built-in:ci".to_string(),
        "max = 3600  # from built-in:ci".to_string(),
        "preview_lines = 10  # from built-in:default".to_string(),
    ] {
        assert!(
            out.stdout.lines().any(|l| l == line),
            "missing {line:?} in:\n{}",
            out.stdout
        );
    }

    // What `show` prints loads back as the same profile.
    let shown = env.run(&["profile", "show", "mine"]);
    env.write("shown.toml", &shown.stdout);
    let again = env.run_ok(&["profile", "show", "./shown.toml"]);
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&again.stdout), body(&shown.stdout));

    // The default is AGENTBASH_PROFILE, then `default`.
    let out = env
        .cmd(&["profile", "show"])
        .env("AGENTBASH_PROFILE", "agent")
        .run();
    assert_starts_with(&out.stdout, "# profile agent from built-in:agent\n");
    assert!(
        env.run(&["profile", "show"])
            .stdout
            .starts_with("# profile default from built-in:default\n")
    );
}

#[test]
fn profile_show_unknown_profile_is_a_clear_error() {
    let env = TestEnv::new();
    for args in [
        &["profile", "show", "nope"][..],
        &["profile", "show", "./missing.toml"],
    ] {
        let out = env.run(args);
        out.assert_code(125);
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        assert!(out.stderr.starts_with("agentbash: "), "{}", out.stderr);
    }
    env.test()
        .args(&["profile", "show", "nope"])
        .stderr_has("profile \"nope\" not found")
        .stderr_has("agentbash profile list")
        .run();
}

#[test]
fn profile_check_reports_file_line_col() {
    let env = TestEnv::trusting();
    env.test().args(&["profile", "check"]).code(0).stdout("ok       built-in:agent\nok       built-in:ci\nok       built-in:default\nok       built-in:strict\n4 profiles checked, 0 invalid\n").run();

    let bad = env.write(
        ".agentbash/profiles/bad.toml",
        "description = \"x\"\n\n[timeout]\ndefualt = 30\n",
    );
    let range = env.write("range.toml", "[timeout]\nmax = 99999\n");
    let syntax = env.write("syntax.toml", "[output\nmax_bytes = 1\n");
    let out = env
        .test()
        .args(&["profile", "check"])
        .code(1)
        .stdout_has(format!(
            "invalid  {}:4:1: unknown field `defualt`",
            bad.display()
        ))
        .stdout_has("did you mean `default`?")
        .run();
    assert_ends_with(&out.stdout, "5 profiles checked, 1 invalid\n");

    let out = env
        .test()
        .args(&["profile", "check", "range.toml", "./syntax.toml"])
        .code(1)
        .run();
    assert!(
        out.stdout.contains(&format!(
            "{}:2:1: timeout.max: 99999 is out of range",
            range.display()
        )),
        "{}",
        out.stdout
    );
    assert_has(&out.stdout, format!("{}:1:", syntax.display()));

    // Names and files that are fine pass; an unknown name fails the check.
    env.run(&["profile", "check", "ci", "agent"]).assert_code(0);
    env.test()
        .args(&["profile", "check", "default", "nope"])
        .code(1)
        .stdout_has("invalid  profile \"nope\" not found")
        .run();
}

#[test]
fn profile_check_checks_shadowed_definitions_too() {
    let env = TestEnv::trusting();
    // A valid project ci shadows the built-in; a broken user ci sits between them.
    env.write(".agentbash/profiles/ci.toml", "description = \"ours\"\n");
    let user = env.config_dir().join("profiles/ci.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "[render]\nlive = \"loud\"\n").unwrap();
    let out = env.test().args(&["profile", "check"]).code(1).run();
    assert_has(&out.stdout, format!("invalid  {}:2:8", user.display()));
    assert_has(&out.stdout, "ok       built-in:ci");
    // Checking the name checks what `-p ci` would load, which is fine.
    env.run(&["profile", "check", "ci"]).assert_code(0);
}

// ---------------------------------------------------------------------------
// artifact list | show | path | rm | gc

/// Run `seq 1 <n>` with a one-line view, so the whole output spills to an artifact.
fn spill(env: &TestEnv, n: u32) {
    env.run_text(format!("seq 1 {n}"))
        .opts(&["--tail", "1"])
        .run()
        .assert_code(0);
}

#[test]
fn artifact_commands_accept_ids_and_urls() {
    let env = TestEnv::new();
    spill(&env, 3000);
    spill(&env, 5);
    let seq = sh_output("seq 1 3000");

    let list = env.run_ok(&["artifact", "list"]);
    let rows: Vec<&str> = list.stdout.lines().collect();
    assert!(rows[0].starts_with("ID") && rows[0].contains("SIZE") && rows[0].contains("AGE"));
    assert_eq!(rows.len(), 3, "{}", list.stdout);
    let row1 = rows
        .iter()
        .find(|r| r.starts_with("artifact://1 "))
        .expect("row for 1");
    assert_has(row1, "13.6KB");
    assert!(rows.iter().any(|r| r.starts_with("artifact://2 ")));

    for id in ["1", "artifact://1", " 1 "] {
        let out = env.run_ok(&["artifact", "show", id]);
        assert_eq!(out.stdout_bytes, seq, "artifact show {id:?}");
    }
    env.test()
        .args(&["artifact", "show", "artifact://1", "--head", "3"])
        .stdout("1\n2\n3\n")
        .run();
    env.test()
        .args(&["artifact", "show", "1", "--tail", "2"])
        .stdout("2999\n3000\n")
        .run();
    env.test()
        .args(&["artifact", "show", "1", "--head", "10", "--tail", "2"])
        .stdout("9\n10\n")
        .run();
    env.run(&["artifact", "show", "1", "--head", "0"])
        .assert_code(2);

    let out = env.run_ok(&["artifact", "path", "artifact://2"]);
    let path = PathBuf::from(out.stdout.trim_end());
    assert_eq!(path, env.state_dir().join("artifacts/2.bash.log"));
    assert_eq!(std::fs::read(&path).unwrap(), b"1\n2\n3\n4\n5\n");

    env.test()
        .args(&["artifact", "rm", "2"])
        .code(0)
        .stdout("removed artifact://2\n")
        .run();
    assert!(!path.exists());
    env.test()
        .args(&["artifact", "show", "2"])
        .code(1)
        .stderr_has("no artifact artifact://2")
        .stderr_has("agentbash artifact list")
        .run();
    env.run(&["artifact", "rm", "artifact://2"]).assert_code(1);
    env.run(&["artifact", "path", "2"]).assert_code(1);
}

#[test]
fn artifact_ids_are_validated() {
    let env = TestEnv::new();
    spill(&env, 10);
    // Something a traversal would reach, to prove it is never read or removed.
    env.write("x", "secret");
    std::fs::write(env.state_dir().join("x.bash.log"), "secret").unwrap();
    for bad in [
        "../x",
        "-1",
        "abc",
        "1/../../x",
        "artifact://../x",
        "artifact://",
        "",
        "3.bash.log",
        "+1",
        "0x1",
    ] {
        for sub in ["show", "path", "rm"] {
            let out = env
                .test()
                .args(&["artifact", sub, bad])
                .code(2)
                .stderr_has(format!("invalid artifact id {bad:?}"))
                .run();
            assert!(out.stdout.is_empty());
        }
    }
    assert!(env.work().join("x").exists() && env.state_dir().join("x.bash.log").exists());
    env.run(&["artifact", "show", "1"]).assert_code(0);
}

#[test]
fn artifact_list_with_nothing_spilled() {
    let out = Test::new().args(&["artifact", "list"]).code(0).run();
    assert!(out.stdout.is_empty());
    assert!(out.stderr.starts_with("no artifacts in "), "{}", out.stderr);
}

/// Write an artifact of `size` bytes last modified `age_days` ago.
fn old_artifact(dir: &Path, id: u64, size: usize, age_days: u64) {
    let path = dir.join(format!("{id}.bash.log"));
    std::fs::write(&path, vec![b'x'; size]).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), "{}").unwrap();
    let when = SystemTime::now() - Duration::from_secs(age_days * 86_400 + 60);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(when))
        .expect("set mtime");
}

#[test]
fn artifact_gc_honours_age_and_size_limits() {
    let env = TestEnv::trusting();
    env.write(
        ".agentbash/profiles/small.toml",
        "[artifacts]\ndir = \"arts\"\nmax_total_bytes = 1000\nmax_age_days = 2\n",
    );
    let dir = env.work().join("arts");
    std::fs::create_dir_all(&dir).unwrap();
    old_artifact(&dir, 1, 600, 10); // too old
    old_artifact(&dir, 2, 600, 1); // oldest of the rest: removed to fit 1000 bytes
    old_artifact(&dir, 3, 600, 0);
    old_artifact(&dir, 4, 300, 0);
    let exists = |id: u64| dir.join(format!("{id}.bash.log")).exists();

    let out = env.run_ok(&["artifact", "gc", "--dry-run", "-p", "small"]);
    assert_has(&out.stdout, "would remove artifact://1 (600B, 10d old)");
    assert_has(&out.stdout, "would remove artifact://2 (600B, 1d old)");
    assert!(!out.stdout.contains("artifact://3") && !out.stdout.contains("artifact://4"));
    assert_ends_with(&out.stdout, "would free 2 artifact(s), 1.2KB; 2 kept\n");
    assert!((1..=4).all(exists), "--dry-run removed something");

    let out = env
        .cmd(&["artifact", "gc"])
        .env("AGENTBASH_PROFILE", "small")
        .run();
    out.assert_code(0);
    assert_has(&out.stdout, "removed artifact://1 ");
    assert_ends_with(&out.stdout, "freed 2 artifact(s), 1.2KB; 2 kept\n");
    assert!(!exists(1) && !exists(2) && exists(3) && exists(4));
    assert!(
        !dir.join("1.json").exists(),
        "the sidecar goes with the artifact"
    );
    // The sidecar's command is listed on one line, its line break shown escaped.
    std::fs::write(
        dir.join("3.json"),
        r#"{"command":"cargo test\n--all","cwd":"/x","exit_code":1,"created_unix":0}"#,
    )
    .unwrap();
    let listed = env.run(&["artifact", "list", "-p", "small"]).stdout;
    let row = listed
        .lines()
        .find(|l| l.starts_with("artifact://3 "))
        .expect("row 3");
    assert!(row.ends_with(r"  cargo test\n--all"), "{row}");
    assert_lacks(&listed, "artifact://1 ");

    let out = env.run(&["artifact", "gc", "-p", "small"]);
    assert_ends_with(&out.stdout, "freed 0 artifact(s), 0B; 2 kept\n");
}

#[test]
fn artifact_commands_with_a_bad_profile_fail_like_run() {
    Test::new()
        .args(&["artifact", "list", "-p", "nope"])
        .code(125)
        .stderr_has("profile \"nope\" not found")
        .run();
}

// ---------------------------------------------------------------------------
// Shipped profiles

fn builtin(name: &str) -> agentbash::LoadedProfile {
    agentbash::Lookup::new("/")
        .load_origin(name.to_string(), Origin::Builtin(name.to_string()))
        .unwrap_or_else(|e| panic!("built-in {name}: {e}"))
}

#[test]
fn shipped_profiles_are_real_configurations() {
    let default = builtin("default").profile;
    let spec = agentbash::Profile {
        description: default.description.clone(),
        ..Default::default()
    };
    assert_eq!(
        default, spec,
        "the built-in default is the schema's defaults"
    );

    let ci = builtin("ci").profile;
    assert_eq!(ci.render.live, Live::Stream, "ci streams live output");
    assert!(ci.timeout.default >= 3600 && ci.timeout.max >= ci.timeout.default);
    assert_eq!(ci.artifacts.dir, ".agentbash/artifacts");
    assert!(ci.artifacts.enabled);
    assert_ne!(
        ci.render.ci_annotations,
        agentbash::config::profile::CiAnnotations::Never
    );
    assert_eq!(ci.render.format, Format::Text);
    assert!(ci.output.max_bytes > default.output.max_bytes);

    let agent = builtin("agent");
    let a = &agent.profile;
    assert!(
        a.output.head_bytes > 0 && a.output.head_bytes < a.output.max_bytes,
        "agent keeps head and tail"
    );
    assert!(a.output.max_columns > 0, "agent caps columns");
    assert_eq!(a.render.format, Format::Json);
    assert!(a.interceptor.enabled);
    let rules = agent
        .rule_packs(agentbash::config::profile::Packs::Interceptor)
        .compiled()
        .expect("agent's rule packs load");
    for tool in ["read", "grep", "glob", "edit", "write"] {
        assert!(
            a.interceptor.tools.iter().any(|t| t == tool),
            "agent declares {tool}"
        );
        assert!(
            rules.rules().iter().any(|r| r.tool == tool),
            "no rule routes to `{tool}`: the name would be dead"
        );
    }
}

#[test]
fn agent_profile_runs_as_json_with_head_and_tail() {
    let env = TestEnv::new();
    let v = env.run_text("seq 1 20000").profile("agent").code(0).json();
    let output = s(&v, "output");
    assert!(output.starts_with("1\n2\n3\n"), "head kept");
    assert!(output.ends_with("19999\n20000\n"), "tail kept");
    assert_eq!(v["truncation"]["direction"], "middle");
    env.run_text("cat Cargo.toml")
        .profile("agent")
        .code(77)
        .run();
}

// ---------------------------------------------------------------------------
// GitHub Actions

fn github(env: &TestEnv, args: &[&str]) -> crate::support::Output {
    env.cmd(args).env("GITHUB_ACTIONS", "true").run()
}

#[test]
fn github_actions_groups_output_and_annotates_failures() {
    let env = TestEnv::trusting();
    for profile in ["ci", "default"] {
        // Success: a group, no annotation.
        let out = github(&env, &["run", "-p", profile, "--", "echo hi"]);
        out.assert_code(0);
        assert_eq!(
            out.stdout, "::group::$ echo hi\nhi\n::endgroup::\n",
            "-p {profile}"
        );

        // Failure: the annotation names the exit code.
        let out = github(&env, &["run", "-p", profile, "--", "echo hi; exit 3"]);
        out.assert_code(3);
        assert_eq!(
            out.stdout,
            "::group::$ echo hi; exit 3\nhi\n::endgroup::\n\
             ::error title=agentbash::Command `echo hi; exit 3` exited with code 3\n",
            "-p {profile}"
        );
    }

    // Failure with cut output: the annotation points at the artifact to upload.
    let out = github(
        &env,
        &["run", "-p", "ci", "--tail", "2", "--", "seq 1 10; exit 4"],
    );
    out.assert_code(4);
    let error = out.stdout.lines().last().unwrap_or_default();
    let m = re(r"^::error title=agentbash::Command `seq 1 10; exit 4` exited with code 4; full output: (.+/\.agentbash/artifacts/(\d+)\.bash\.log)$")
        .captures(error)
        .unwrap_or_else(|| panic!("annotation: {error}"))
        .get(1)
        .unwrap()
        .as_str()
        .to_string();
    assert!(m.starts_with(&env.work().display().to_string()), "{m}");
    assert_eq!(std::fs::read(&m).unwrap(), sh_output("seq 1 10"));

    // Timeout and agentbash's own failures are annotated too; no group for a run
    // that never started.
    let out = github(&env, &["run", "-p", "ci", "-t", "1", "--", "sleep 5"]);
    out.assert_code(124);
    assert!(out.stdout.ends_with("::endgroup::\n::error title=agentbash::Command `sleep 5` timed out after 1s (exit 124)\n"), "{}", out.stdout);
    let out = github(&env, &["run", "-p", "ci", "-C", "nowhere", "--", "true"]);
    out.assert_code(125);
    assert_lacks(&out.stdout, "::group::");
    assert!(out.stdout.starts_with("::error title=agentbash::Command `true` did not run (exit 125): Working directory does not exist"), "{}", out.stdout);

    // Without GITHUB_ACTIONS, or with annotations off, nothing of the sort.
    env.run_text("echo hi; exit 3")
        .profile("ci")
        .stdout("hi\n")
        .run();
    env.write(
        ".agentbash/profiles/quiet-ci.toml",
        "extends = \"ci\"\n[render]\nci_annotations = \"never\"\n",
    );
    let out = github(&env, &["run", "-p", "quiet-ci", "--", "echo hi; exit 3"]);
    assert_eq!(out.stdout, "hi\n");
}

#[test]
fn github_actions_stream_opens_the_group_before_the_output() {
    let env = TestEnv::new();
    // The first line is streamed while the command is held at a gate.
    let gate = crate::support::Gate::new(&env, "second");
    let cmd = format!("echo first; {}; echo second; exit 1", gate.wait());
    let mut run = env
        .run_text(&cmd)
        .profile("ci")
        .env("GITHUB_ACTIONS", "true")
        .spawn();
    let (_, group) = run.next_line(Duration::from_secs(10)).expect("group line");
    assert_eq!(group, format!("::group::$ {cmd}\n"));
    let (_, first) = run.next_line(crate::support::HANG_CAP).expect("first line");
    assert_eq!(first, "first\n");
    gate.open();
    let out = run.wait();
    out.assert_code(1);
    assert!(
        out.stdout.ends_with(&format!(
            "second\n::endgroup::\n::error title=agentbash::Command `{cmd}` exited with code 1\n"
        )),
        "{}",
        out.stdout
    );
}

#[test]
fn colour_in_ci_logs() {
    let env = TestEnv::new();
    let esc = |s: &str| s.contains('\x1b');
    // Into a pipe: no colour, unless forced or on GitHub Actions (which renders it).
    let plain = env.run_text("echo hi; exit 3").run();
    assert!(!esc(&plain.stderr) && !esc(&plain.stdout));
    let forced = env
        .run_text("echo hi; exit 3")
        .opts(&["--color", "always"])
        .run();
    assert!(esc(&forced.stderr), "{:?}", forced.stderr);
    assert_eq!(
        forced.stdout, "hi\n",
        "the command's output stays sanitized"
    );
    let clicolor = env.run_text("exit 3").env("CLICOLOR_FORCE", "1").run();
    assert!(esc(&clicolor.stderr));
    let gha = github(&env, &["run", "-p", "ci", "--", "exit 3"]);
    assert!(esc(&gha.stderr), "{:?}", gha.stderr);
    let no_color = env
        .run_text("exit 3")
        .profile("ci")
        .env("GITHUB_ACTIONS", "true")
        .env("NO_COLOR", "1")
        .run();
    assert!(!esc(&no_color.stderr), "{:?}", no_color.stderr);
    let never = github(&env, &["run", "--color", "never", "--", "exit 3"]);
    assert!(!esc(&never.stderr));
}

// ---------------------------------------------------------------------------
// Snapshots

#[test]
fn snapshot_help() {
    let env = TestEnv::new();
    let top = env.cmd(&["--help"]).env("COLUMNS", "100").run();
    top.assert_code(0);
    insta::assert_snapshot!("help", top.stdout);
    let run = env.cmd(&["run", "--help"]).env("COLUMNS", "100").run();
    run.assert_code(0);
    insta::assert_snapshot!("run_help", run.stdout);
}

#[test]
fn snapshot_profile_show_default() {
    let out = Test::new()
        .args(&["profile", "show", "default"])
        .code(0)
        .run();
    insta::assert_snapshot!("profile_show_default", out.stdout);
}

#[test]
fn snapshot_rules_list() {
    let out = Test::new().args(&["rules", "list"]).code(0).run();
    insta::assert_snapshot!("rules_list", out.stdout);
}

/// The final screen of a terminal that received `raw`, with colours and weights
/// written as tags (`<bold red>exit 3</>`), trailing blanks trimmed.
fn screen(raw: &[u8], rows: u16, cols: u16) -> String {
    let nz = |n: u16| std::num::NonZeroU16::new(n).expect("non-zero size");
    let mut parser = vt100::Parser::new(nz(rows), nz(cols), 0);
    parser.process(raw);
    let screen = parser.screen();
    let mut out = Vec::new();
    for row in 0..rows {
        let mut line = String::new();
        let mut style = String::new();
        for col in 0..cols {
            let Some(cell) = screen.cell(row, col) else {
                continue;
            };
            if cell.is_wide_continuation() {
                continue;
            }
            let mut tags = Vec::new();
            if cell.bold() {
                tags.push("bold".to_string());
            }
            if cell.dim() {
                tags.push("dim".to_string());
            }
            const NAMES: [&str; 8] = [
                "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
            ];
            match cell.fgcolor() {
                vt100::Color::Default => {}
                vt100::Color::Idx(i) if i < 8 => tags.push(NAMES[i as usize].to_string()),
                vt100::Color::Idx(i) => tags.push(format!("fg{i}")),
                vt100::Color::Rgb(r, g, b) => tags.push(format!("#{r:02x}{g:02x}{b:02x}")),
            }
            let text = if cell.has_contents() {
                cell.contents()
            } else {
                " "
            };
            let tags = tags.join(" ");
            if tags != style {
                if !style.is_empty() {
                    line.push_str("</>");
                }
                if !tags.is_empty() {
                    line.push_str(&format!("<{tags}>"));
                }
                style = tags;
            }
            line.push_str(text);
        }
        if !style.is_empty() {
            line.push_str("</>");
        }
        out.push(line.trim_end().to_string());
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out.join("\n")
}

/// Run agentbash with `args` on a 100x40 terminal (`script` gives it one) and return
/// the final screen with durations filtered, and the exit code.
fn on_a_terminal(env: &TestEnv, args: &[&str]) -> (String, Option<i32>) {
    assert!(
        has_program("script"),
        "`script` (util-linux) is needed to give agentbash a terminal"
    );
    let quote = |a: &str| format!("'{}'", a.replace('\'', "'\\''"));
    let inner = format!(
        "stty cols 100 rows 40 2>/dev/null; exec {} {}",
        quote(&bin().display().to_string()),
        args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
    );
    let out = env
        .program("script", &["-qec", &inner, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .run();
    let shown = screen(&out.stdout_bytes, 40, 100);
    let shown = re(r"· \d+(\.\d+)?m?s · |· \d+m\d+s · ").replace_all(&shown, "· [duration] · ");
    (shown.into_owned(), out.code())
}

#[test]
fn snapshot_text_renderer_on_a_terminal() {
    let env = TestEnv::new();
    let (shown, code) = on_a_terminal(&env, &["run", "--color", "always", "--", "echo hi; exit 3"]);
    assert_eq!(code, Some(3));
    insta::assert_snapshot!("text_renderer_tty_exit_3", shown);

    // A longer output collapses to the last preview_lines lines.
    let (shown, code) = on_a_terminal(&env, &["run", "--color", "always", "--", "seq 1 25"]);
    assert_eq!(code, Some(0));
    insta::assert_snapshot!("text_renderer_tty_preview", shown);
}
