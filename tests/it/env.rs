//! The command's environment: hardening, its layering under `env.set` and
//! `--env`, `inherit`/`exclude`, `AGENTBASH_NO_CI`, and `-e` validation
//! (issue 2, item 11).

use crate::support::{Test, TestEnv, s};
use std::collections::BTreeMap;

/// The command's environment as `env` prints it.
#[track_caller]
fn command_env(test: Test) -> BTreeMap<String, String> {
    let v = test.code(0).json();
    assert_eq!(v["truncated"], false, "env output was cut: {v:#}");
    s(&v, "output")
        .lines()
        .filter_map(|l| {
            let (k, val) = l.split_once('=')?;
            let valid = !k.is_empty()
                && !k.starts_with(|c: char| c.is_ascii_digit())
                && k.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
            valid.then(|| (k.to_string(), val.to_string()))
        })
        .collect()
}

/// The command's environment under a profile with these `[env]` settings, `vars`
/// set in agentbash's own environment.
#[track_caller]
fn env_under(env: &TestEnv, settings: &str, vars: &[(&str, &str)]) -> BTreeMap<String, String> {
    let profile = format!("[env]\n{settings}\n");
    let mut test = env.run_json("env").profile_file("p.toml", &profile);
    for (k, v) in vars {
        test = test.env(k, v);
    }
    command_env(test)
}

const HARDENED: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("BAT_PAGER", "cat"),
    ("DELTA_PAGER", "cat"),
    ("GH_PAGER", "cat"),
    ("GLAB_PAGER", "cat"),
    ("PSQL_PAGER", "cat"),
    ("MYSQL_PAGER", "cat"),
    ("HOMEBREW_PAGER", "cat"),
    ("AWS_PAGER", ""),
    ("LESS", "FRX"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
    ("PYTHONUNBUFFERED", "1"),
    ("GIT_EDITOR", "true"),
    ("VISUAL", "true"),
    ("EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("CI", "true"),
    ("AGENT", "1"),
    ("npm_config_yes", "true"),
    ("npm_config_update_notifier", "false"),
    ("npm_config_fund", "false"),
    ("npm_config_audit", "false"),
    ("npm_config_progress", "false"),
    ("PNPM_DISABLE_SELF_UPDATE_CHECK", "true"),
    ("PNPM_UPDATE_NOTIFIER", "false"),
    ("YARN_ENABLE_TELEMETRY", "0"),
    ("YARN_ENABLE_PROGRESS_BARS", "0"),
    ("CARGO_TERM_PROGRESS_WHEN", "never"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ("TF_INPUT", "0"),
    ("TF_IN_AUTOMATION", "1"),
    ("GH_PROMPT_DISABLED", "1"),
    ("COMPOSER_NO_INTERACTION", "1"),
    ("CLOUDSDK_CORE_DISABLE_PROMPTS", "1"),
];

#[test]
fn hardened_variables_are_set_over_inherited_ones() {
    let env = TestEnv::new();
    let vars = command_env(
        env.run_json("env")
            .env("PAGER", "less")
            .env("TERM", "xterm-256color")
            .env("AWS_PAGER", "less")
            .env("GIT_TERMINAL_PROMPT", "1")
            .env("KEEP_ME", "kept"),
    );
    let wrong: Vec<String> = HARDENED
        .iter()
        .filter(|(k, want)| vars.get(*k).map(String::as_str) != Some(*want))
        .map(|(k, want)| format!("{k}: got {:?}, want {want:?}", vars.get(*k)))
        .collect();
    assert!(wrong.is_empty(), "hardening wrong:\n{}", wrong.join("\n"));
    let askpass = vars.get("SSH_ASKPASS").expect("SSH_ASKPASS set");
    assert!(
        askpass.ends_with("/false") && std::path::Path::new(askpass).exists(),
        "SSH_ASKPASS={askpass:?}, want the path of false"
    );
    assert_eq!(vars.get("KEEP_ME").map(String::as_str), Some("kept"));
}

#[test]
fn no_ci_drops_ci() {
    let env = TestEnv::new();
    let vars = command_env(env.run_json("env").env("AGENTBASH_NO_CI", "1"));
    assert!(!vars.contains_key("CI"), "CI={:?}", vars.get("CI"));
    assert_eq!(vars.get("PAGER").map(String::as_str), Some("cat"));
    let vars = command_env(
        env.run_json("env")
            .env("AGENTBASH_NO_CI", "1")
            .env("CI", "true"),
    );
    assert!(
        !vars.contains_key("CI"),
        "inherited CI={:?}",
        vars.get("CI")
    );
}

#[test]
fn env_flag_wins_over_hardening() {
    let env = TestEnv::new();
    let vars = command_env(env.run_json("env").opts(&[
        "-e",
        "PAGER=less",
        "-e",
        "X=a=b c",
        "-e",
        "EMPTY=",
    ]));
    assert_eq!(vars["PAGER"], "less");
    assert_eq!(vars["X"], "a=b c");
    assert_eq!(vars.get("EMPTY").map(String::as_str), Some(""));
    assert_eq!(vars["GIT_PAGER"], "cat");
}

#[test]
fn profile_set_wins_over_hardening_and_loses_to_the_flag() {
    let env = TestEnv::new();
    env.write(
        "p.toml",
        "[env]\nset = { PAGER = \"more\", FOO = \"bar\", TERM = \"vt100\" }\n",
    );
    let vars = command_env(env.run_json("env").profile("./p.toml"));
    assert_eq!(vars["PAGER"], "more");
    assert_eq!(vars["FOO"], "bar");
    assert_eq!(vars["TERM"], "vt100");
    assert_eq!(vars["GIT_PAGER"], "cat");
    let vars = command_env(
        env.run_json("env")
            .opts(&["-p", "./p.toml", "-e", "PAGER=less"]),
    );
    assert_eq!(vars["PAGER"], "less");
    assert_eq!(vars["FOO"], "bar");
}

#[test]
fn inherit_list_keeps_only_matching_variables() {
    let env = TestEnv::new();
    let inherit = "inherit = [\"PATH\", \"HOME\", \"LANG*\"]";
    let vars = env_under(&env, inherit, &[("MY_VAR", "1"), ("LANGUAGE", "en")]);
    assert!(!vars.contains_key("MY_VAR"), "MY_VAR leaked");
    assert_eq!(vars["HOME"], env.home().display().to_string());
    assert!(vars.contains_key("PATH"));
    assert_eq!(vars.get("LANGUAGE").map(String::as_str), Some("en"));
    // Hardening still applies on top.
    assert_eq!(vars["PAGER"], "cat");
}

#[test]
fn inherit_none_starts_empty() {
    let env = TestEnv::new();
    let settings = "inherit = \"none\"\nset = { PATH = \"/usr/bin:/bin\" }";
    let vars = env_under(&env, settings, &[("MY_VAR", "1")]);
    assert!(!vars.contains_key("MY_VAR"));
    assert!(!vars.contains_key("HOME"), "HOME={:?}", vars.get("HOME"));
    assert_eq!(vars["PAGER"], "cat");
}

#[test]
fn exclude_globs_remove_inherited_variables() {
    let env = TestEnv::new();
    let vars = [
        ("MY_TOKEN", "secret"),
        ("TOKEN_X", "secret"),
        ("OTHER", "1"),
    ];
    let vars = env_under(&env, "exclude = [\"*TOKEN*\"]", &vars);
    assert!(!vars.contains_key("MY_TOKEN"));
    assert!(!vars.contains_key("TOKEN_X"));
    assert_eq!(vars["OTHER"], "1");
}

#[test]
fn harden_false_leaves_the_inherited_env() {
    let env = TestEnv::new();
    let vars = env_under(&env, "harden = false", &[("PAGER", "less")]);
    assert_eq!(vars["PAGER"], "less");
    assert!(!vars.contains_key("CI"));
    assert!(!vars.contains_key("GIT_TERMINAL_PROMPT"));
}

#[test]
fn redacted_values_are_masked_in_output() {
    let env = TestEnv::new();
    env.run_json("echo \"pw=$MY_SECRET\"")
        .profile_file("p.toml", "[output]\nredact = [\"*SECRET*\"]\n")
        .env("MY_SECRET", "hunter2hunter2")
        .code(0)
        .output("pw=[REDACTED:MY_SECRET]\n")
        .stdout_lacks("hunter2")
        .run();
}

#[test]
fn invalid_env_names_are_usage_errors() {
    let env = TestEnv::new();
    for bad in ["1BAD=x", "A-B=1", "NOEQUALS", "=x", "A B=1"] {
        let out = env.run_text("touch ran").opts(&["-e", bad]).code(2).run();
        let key = bad.split('=').next().unwrap();
        assert!(
            out.stderr.contains(key) || out.stderr.contains(bad),
            "-e {bad:?}: the error should quote it: {:?}",
            out.stderr
        );
        assert!(
            !env.work().join("ran").exists(),
            "-e {bad:?} ran the command"
        );
    }
    let out = env.run_text("true").opts(&["-e", "1BAD=x"]).run();
    assert!(
        out.stderr.contains("variable name") || out.stderr.contains("KEY"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_last_env_flag_for_a_key_wins() {
    let env = TestEnv::new();
    let vars = command_env(env.run_json("env").opts(&["-e", "A=1", "-e", "A=2"]));
    assert_eq!(vars["A"], "2");
}
