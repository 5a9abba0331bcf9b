//! Profiles (docs/CONFIG.md): the built-ins, lookup order, `extends`, and strict validation with
//! file:line:col (issue 2, item 12).

use crate::support::{Test, TestEnv, assert_has, assert_lacks, s};

/// `echo $WHICH` under `-p <spec>`, run from `dir` (relative to the work dir).
#[track_caller]
fn which(env: &TestEnv, spec: &str, dir: &str) -> String {
    let out = env
        .run_json("echo \"$WHICH\"")
        .profile(spec)
        .current_dir(env.work().join(dir))
        .code(0)
        .run();
    s(&out.json(), "output").to_string()
}

fn set_which(value: &str) -> String {
    format!("[env]\nset = {{ WHICH = \"{value}\" }}\n")
}

#[test]
fn builtin_profiles_load() {
    let env = TestEnv::new();
    for name in ["default", "ci", "agent"] {
        let v = env.run_json("echo ok").profile(name).code(0).json();
        assert_eq!(v["profile"], name);
        assert_eq!(v["output"], "ok\n", "-p {name}");
    }
    env.run_text("true").profile("ci").code(0).run();
}

#[test]
fn ci_profile_keeps_artifacts_in_the_workspace() {
    let env = TestEnv::new();
    let v = env
        .run_json("seq 1 100 2>&1 | tail -n 1")
        .profile("ci")
        .json();
    let path = s(&v["artifact"], "path");
    assert!(
        path.starts_with(&env.work_path(".agentbash/artifacts")),
        "ci artifact at {path}"
    );
}

#[test]
fn project_profile_wins_over_the_user_dir() {
    let env = TestEnv::trusting();
    std::fs::create_dir_all(env.work().join("sub/deeper")).unwrap();
    env.write(".agentbash/profiles/x.toml", set_which("project"));
    let user = env.config_dir().join("profiles/x.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, set_which("user")).unwrap();
    assert_eq!(which(&env, "x", "sub/deeper"), "project\n");
    assert_eq!(which(&env, "x", "."), "project\n");
    std::fs::remove_file(env.work().join(".agentbash/profiles/x.toml")).unwrap();
    assert_eq!(which(&env, "x", "sub/deeper"), "user\n");
}

#[test]
fn nearest_project_dir_wins() {
    let env = TestEnv::trusting();
    env.write(".agentbash/profiles/x.toml", set_which("outer"));
    env.write("inner/.agentbash/profiles/x.toml", set_which("inner"));
    std::fs::create_dir_all(env.work().join("inner/deep")).unwrap();
    assert_eq!(which(&env, "x", "inner/deep"), "inner\n");
    assert_eq!(which(&env, "x", "."), "outer\n");
}

#[test]
fn user_dir_wins_over_builtin_and_xdg_default_is_used() {
    let env = TestEnv::new();
    let user = env.config_dir().join("profiles/ci.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, format!("extends = \"ci\"\n{}", set_which("user-ci"))).unwrap();
    assert_eq!(which(&env, "ci", "."), "user-ci\n");
    // Without AGENTBASH_CONFIG_DIR, $XDG_CONFIG_HOME/agentbash is the user dir.
    let xdg = env.root().join("config/agentbash/profiles/y.toml");
    std::fs::write(&xdg, set_which("xdg")).unwrap();
    env.run_json("echo \"$WHICH\"")
        .profile("y")
        .env_remove("AGENTBASH_CONFIG_DIR")
        .code(0)
        .output("xdg\n")
        .run();
}

#[test]
fn project_default_can_extend_the_builtin_default() {
    let env = TestEnv::trusting();
    env.write(
        ".agentbash/profiles/default.toml",
        format!("extends = \"default\"\n{}", set_which("project-default")),
    );
    env.run_json("echo \"$WHICH\"; echo \"$PAGER\"")
        .code(0)
        .output("project-default\ncat\n")
        .run();
}

#[test]
fn profile_paths() {
    let env = TestEnv::new();
    env.write("p.toml", set_which("dot-slash"));
    env.write("dir/q.toml", set_which("subdir"));
    env.write("plain.toml", set_which("bare-toml"));
    assert_eq!(which(&env, "./p.toml", "."), "dot-slash\n");
    assert_eq!(which(&env, "dir/q.toml", "."), "subdir\n");
    assert_eq!(which(&env, "plain.toml", "."), "bare-toml\n");
    let abs = env.work().join("p.toml").display().to_string();
    std::fs::create_dir_all(env.work().join("elsewhere")).unwrap();
    assert_eq!(which(&env, &abs, "elsewhere"), "dot-slash\n");
}

#[test]
fn extends_layers_tables_key_by_key_and_replaces_arrays() {
    let env = TestEnv::new();
    env.write(
        "base.toml",
        "extends = \"default\"\n[timeout]\ndefault = 7\nmax = 100\n[env]\nexclude = [\"A_*\"]\n",
    );
    env.write(
        "child.toml",
        "extends = \"./base.toml\"\n[timeout]\nmax = 50\n[env]\nexclude = [\"B_*\"]\n",
    );
    env.run_json("echo \"${A_VAR-unset} ${B_VAR-unset} $PAGER\"")
        .profile("./child.toml")
        .env("A_VAR", "a")
        .env("B_VAR", "b")
        .code(0)
        .field("timeout_s", 7)
        .field("output", "a unset cat\n")
        .run();
    env.run_json("true")
        .opts(&["-p", "./child.toml", "-t", "60"])
        .field("timeout_s", 50)
        .run();
}

#[test]
fn extends_default_keeps_the_other_defaults() {
    let v = Test::new()
        .run_json("seq 1 100000")
        .profile_file("p.toml", "extends = \"default\"\n[timeout]\ndefault = 9\n")
        .field("timeout_s", 9)
        .json();
    assert!(v["output_bytes"].as_u64().unwrap() <= 51200);
    assert!(v["artifact"].is_object());
}

/// A profile that does not load, or names what cannot work, stops the run before
/// anything runs (exit 125), and the message says where (file:line:col) and what.
/// A case is `(what, profile text, where as a regex, what the message must say)`.
/// Regression (issue 12): a wrong type said `invalid type: string "five", expected
/// u64`; it names the key and what it must hold, in words, for every kind of key.
#[test]
fn an_invalid_profile_is_refused_naming_where_and_what() {
    let cases: &[(&str, &str, Option<&str>, &[&str])] = &[
        (
            "misspelled key",
            "[timeout]\ndefualt = 3\n",
            Some(r"p\.toml:2:1:"),
            &["did you mean `default`?"],
        ),
        (
            "misspelled section",
            "description = \"x\"\n\n[outptu]\nmax_bytes = 10\n",
            Some(r"p\.toml:3:"),
            &["did you mean `output`?"],
        ),
        (
            "malformed value",
            "[output]\nmax_bytes = = 3\n",
            Some(r"p\.toml:2:\d+"),
            &[],
        ),
        ("unclosed section", "[output\n", Some(r"p\.toml:1:\d+"), &[]),
        (
            "wrong type after a comment",
            "# comment\n[timeout]\ndefault = \"ten\"\n",
            Some(r"p\.toml:3:\d+"),
            &[],
        ),
        (
            "timeout over the range",
            "[timeout]\nmax = 99999\n",
            Some(r"p\.toml:2:\d+"),
            &[],
        ),
        (
            "unknown background policy",
            "\n[process]\nbackground = \"maybe\"\n",
            Some(r"p\.toml:3:\d+"),
            &[],
        ),
        (
            "unknown inherit word",
            "[env]\ninherit = \"some\"\n",
            Some(r"p\.toml:2:\d+"),
            &[],
        ),
        (
            "missing shell",
            "[shell]\npath = \"/no/such/shell\"\n",
            None,
            &["shell.path", "/no/such/shell"],
        ),
        (
            "zero preview lines",
            "[render]\npreview_lines_on_failure = 0\n",
            None,
            &["preview_lines_on_failure", "at least 1"],
        ),
        (
            "timeout.default, a string",
            "[timeout]\ndefault = \"five\"\n",
            None,
            &[
                "p.toml:2:11: timeout.default: expected a whole number of seconds, found the string \"five\"",
            ],
        ),
        (
            "timeout.kill_grace_ms, a fraction",
            "[timeout]\nkill_grace_ms = 1.5\n",
            None,
            &[
                "p.toml:2:17: timeout.kill_grace_ms: expected a whole number of milliseconds, found the number 1.5",
            ],
        ),
        (
            "output.max_bytes, negative",
            "[output]\nmax_bytes = -1\n",
            None,
            &[
                "p.toml:2:13: output.max_bytes: expected a whole number of bytes, found the negative integer -1",
            ],
        ),
        (
            "pty.cols, too large",
            "[pty]\ncols = 70000\n",
            None,
            &[
                "p.toml:2:8: pty.cols: expected a whole number of columns (at most 65535), found the integer 70000, which is too large",
            ],
        ),
        (
            "shell.snapshot, a string",
            "[shell]\nsnapshot = \"yes\"\n",
            None,
            &["p.toml:2:12: shell.snapshot: expected true or false, found the string \"yes\""],
        ),
        (
            "shell.rc, a boolean",
            "[shell]\nrc = false\n",
            None,
            &[
                "p.toml:2:6: shell.rc: expected a string (the rc file's path), found the boolean false",
            ],
        ),
        (
            "shell.args, a string",
            "[shell]\nargs = \"-c\"\n",
            None,
            &["p.toml:2:8: shell.args: expected an array of strings, found the string \"-c\""],
        ),
        (
            "interceptor.tools, a number in the array",
            "[interceptor]\ntools = [\"read\", 2]\n",
            None,
            &[
                "p.toml:2:18: interceptor.tools: expected an array of strings (tool names), found an array holding the integer 2",
            ],
        ),
        (
            "limits, a number",
            "limits = 5\n",
            None,
            &["p.toml:1:10: limits: expected a table of settings, found the integer 5"],
        ),
        (
            "env.set.A, a number",
            "[env]\nset = { A = 1 }\n",
            None,
            &[
                "p.toml:2:13: env.set.A: expected a string (the variable's value), found the integer 1",
            ],
        ),
        (
            "pty.mode, an unknown word",
            "[pty]\nmode = \"maybe\"\n",
            None,
            &["p.toml:2:8: pty.mode: expected \"off\" or \"on\", found the string \"maybe\""],
        ),
        (
            "render.live, a boolean",
            "[render]\nlive = true\n",
            None,
            &[
                "p.toml:2:8: render.live: expected \"tail\", \"stream\" or \"off\", found the boolean true",
            ],
        ),
        (
            "process.background, a number",
            "[process]\nbackground = 0\n",
            None,
            &[
                "p.toml:2:14: process.background: expected \"kill\" or \"keep\", found the integer 0",
            ],
        ),
        (
            "env.inherit, a number",
            "[env]\ninherit = 5\n",
            None,
            &[
                "p.toml:2:11: env.inherit: expected \"all\", \"none\" or an array of variable-name globs, found the integer 5",
            ],
        ),
    ];
    let env = TestEnv::new();
    for (what, body, place, says) in cases {
        let mut run = env
            .run_text("touch ran")
            .profile_file("p.toml", body)
            .case(*what)
            .code(125)
            .stderr_lacks("expected u");
        if let Some(place) = place {
            run = run.stderr_matches(*place);
        }
        for text in *says {
            run = run.stderr_has(*text);
        }
        run.run();
        assert!(
            !env.work().join("ran").exists(),
            "{what}: an invalid profile ran the command"
        );
    }
}

#[test]
fn unknown_profile_lists_where_it_looked() {
    let env = TestEnv::new();
    env.run_text("true")
        .profile("nope")
        .code(125)
        .stderr_has("nope")
        .stderr_has(".agentbash/profiles/nope.toml")
        .stderr_has(
            env.config_dir()
                .join("profiles/nope.toml")
                .display()
                .to_string(),
        )
        .stderr_has("built-in")
        .run();
}

#[test]
fn missing_profile_file_says_so() {
    Test::new()
        .run_text("true")
        .profile("./missing.toml")
        .code(125)
        .stderr_has("missing.toml")
        .run();
}

#[test]
fn circular_extends_is_an_error_not_a_hang() {
    let env = TestEnv::new();
    env.write("a.toml", "extends = \"./b.toml\"\n");
    env.write("b.toml", "extends = \"./a.toml\"\n");
    env.run_text("true")
        .profile("./a.toml")
        .code(125)
        .stderr_has("extends")
        .run();
}

#[test]
fn agentbash_profile_env_selects_the_profile() {
    let env = TestEnv::new();
    env.write("p.toml", set_which("from-env"));
    env.run_json("echo \"$WHICH\"")
        .env("AGENTBASH_PROFILE", "./p.toml")
        .code(0)
        .output("from-env\n")
        .run();
    env.run_json("true")
        .env("AGENTBASH_PROFILE", "ci")
        .field("profile", "ci")
        .run();
    // The flag beats the variable.
    env.run_json("true")
        .profile("default")
        .env("AGENTBASH_PROFILE", "ci")
        .field("profile", "default")
        .run();
}

/// A rule pack that cannot be loaded stops every run of its profile (exit 125, with
/// a message naming the pack and what to fix), whether or not the caller declared
/// tools; `profile check` fails on it; rpc answers the request as a failure.
#[test]
fn a_rule_pack_that_cannot_load_stops_the_run() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("missing file", None, "cannot read rule pack"),
        ("invalid TOML", Some("[[rule]\nid = 1\n"), "pack.toml:1:"),
        (
            "unknown key",
            Some("[[rule]]\nid = \"a\"\npattern = 'x'\ntool = \"t\"\nmessage = \"m\"\ntol = 1\n"),
            "unknown field `tol`",
        ),
        (
            "duplicate id",
            Some(
                "[[rule]]\nid = \"a\"\npattern = 'x'\ntool = \"t\"\nmessage = \"m\"\n[[rule]]\nid = \"a\"\npattern = 'y'\ntool = \"t\"\nmessage = \"m\"\n",
            ),
            "duplicate rule id `a`",
        ),
    ];
    for (what, pack, want) in cases {
        let env = TestEnv::new();
        env.write(
            "p.toml",
            "extends = \"default\"\n[interceptor]\nrules = [\"default\", \"packs/pack.toml\"]\n",
        );
        if let Some(text) = pack {
            env.write("packs/pack.toml", text);
        }
        for tools in [None, Some("read")] {
            let mut args = vec!["run", "-p", "p.toml"];
            if let Some(t) = tools {
                args.extend(["--tools", t]);
            }
            args.extend(["--", "touch ran"]);
            let out = env.run(&args);
            out.assert_code(125);
            assert!(
                out.stderr.contains(want)
                    && out.stderr.contains("packs/pack.toml")
                    && out
                        .stderr
                        .contains("Fix the pack, or remove it from interceptor.rules"),
                "{what}, tools {tools:?}: {}",
                out.stderr
            );
            assert_lacks(&out.stderr, "interceptor disabled");
            assert!(!env.work().join("ran").exists(), "{what}: the command ran");
        }
        env.test()
            .args(&["profile", "check", "p.toml"])
            .code(1)
            .stdout_has(*want)
            .run();
    }

    // An unknown built-in pack name, over rpc.
    let env = TestEnv::new();
    env.write(
        "q.toml",
        "extends = \"default\"\n[interceptor]\nrules = [\"strict\"]\n",
    );
    let out = env
        .cmd(&["rpc", "-p", "q.toml"])
        .stdin(r#"{"id":1,"type":"bash","command":"touch ran"}"#.to_string() + "\n")
        .run();
    let answer: serde_json::Value =
        serde_json::from_str(out.stdout.lines().next().unwrap_or_default()).unwrap_or_default();
    assert_eq!(answer["success"], false, "{}", out.stdout);
    let error = answer["error"].as_str().unwrap_or_default();
    assert_has(error, "unknown rule pack `strict`");
    assert_eq!(answer["data"]["exit_code"], 125, "{answer}");
    assert!(!env.work().join("ran").exists());
}

/// One rule with a bad regex in an otherwise valid pack: skipped with a warning at run
/// time (when rules apply), `profile check` passes with the warning, `rules check`
/// fails.
#[test]
fn an_invalid_regex_in_a_valid_pack_is_only_skipped() {
    let env = TestEnv::new();
    env.write(
        "p.toml",
        "extends = \"default\"\n[interceptor]\nrules = [\"packs/pack.toml\"]\n",
    );
    env.write(
        "packs/pack.toml",
        "[[rule]]\nid = \"bad\"\npattern = '(x'\ntool = \"t\"\nmessage = \"m\"\n",
    );
    let v = env
        .run_json("echo ok")
        .opts(&["-p", "p.toml", "--tools", "t"])
        .code(0)
        .field("output", "ok\n")
        .json();
    assert!(
        v["warnings"]
            .to_string()
            .contains("rule `bad` (line 3) skipped"),
        "{v}"
    );
    env.test()
        .args(&["profile", "check", "p.toml"])
        .code(0)
        .stdout_has("warning: rule pack")
        .run();
    let rules = env.run(&["rules", "check", "packs/pack.toml"]);
    assert_ne!(rules.code(), Some(0), "{}", rules.stdout);
}

#[test]
fn server_max_concurrent_is_range_checked() {
    let env = TestEnv::new();
    for (value, ok) in [("0", false), ("1", true), ("1024", true), ("1025", false)] {
        env.write("s.toml", format!("[server]\nmax_concurrent = {value}\n"));
        let out = env.run(&["profile", "check", "s.toml"]);
        if ok {
            out.assert_code(0);
        } else {
            out.assert_code(1);
            assert!(
                out.stdout.contains("s.toml:2:")
                    && out.stdout.contains(&format!(
                        "server.max_concurrent: {value} is out of range: must be 1-1024"
                    )),
                "{}",
                out.stdout
            );
        }
    }
}
