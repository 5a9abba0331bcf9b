//! Bad input gets a clear error, never a panic or a hang (issue 2, "Bad input" and
//! item 14's size limits).

use crate::support::{Test, TestEnv, assert_warning, s, u};

/// `agentbash ARGS` is a usage error (exit 2) whose message names `mention`, with no
/// panic, and the command (`touch ran`) did not run.
#[track_caller]
fn assert_usage_error(env: &TestEnv, args: &[&str], mention: &str) {
    let out = env.test().args(args).run();
    let shown = format!(
        "{args:?}: exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status, out.stdout, out.stderr
    );
    assert_eq!(out.code(), Some(2), "{shown}");
    assert!(out.stderr.contains(mention), "lacks {mention:?}: {shown}");
    assert!(!out.stderr.contains("panicked"), "{shown}");
    assert!(!env.work().join("ran").exists(), "{args:?} ran the command");
}

/// [`assert_usage_error`] of `agentbash run OPTS -- touch ran` for each `(OPTS,
/// mention)`.
#[track_caller]
fn assert_run_usage_errors(cases: &[(&[&str], &str)]) {
    let env = TestEnv::new();
    for (opts, mention) in cases {
        let args: Vec<&str> = ["run"]
            .iter()
            .chain(opts.iter())
            .chain(["--", "touch ran"].iter())
            .copied()
            .collect();
        assert_usage_error(&env, &args, mention);
    }
}

/// Zero or non-numeric line limits, a non-numeric timeout, bad enum values and
/// flags that contradict each other are usage errors naming the value or option.
#[test]
fn bad_option_values_are_usage_errors() {
    assert_run_usage_errors(&[
        (&["--head", "0"], "--head"),
        (&["--tail", "0"], "--tail"),
        (&["--head", "abc"], "abc"),
        (&["--tail", "-3"], "--tail"),
        (&["-t", "abc"], "abc"),
        (&["-t", "1.5"], "1.5"),
        (&["-t", ""], "--timeout"),
        (&["--format", "xml"], "xml"),
        (&["--mode", "tty"], "tty"),
        (&["--json", "--format", "text"], "--format"),
    ]);
}

#[test]
fn empty_command_is_a_usage_error() {
    let env = TestEnv::new();
    for cmd in ["", "   ", "\n\t"] {
        let out = env.run_text(cmd).code(2).run();
        assert!(
            out.stderr.to_lowercase().contains("empty command"),
            "{cmd:?}: stderr: {:?}",
            out.stderr
        );
    }
    env.run_json("").code(2).run();
    env.test().args(&["run"]).code(2).run();
}

#[test]
fn missing_program_is_the_shells_127() {
    Test::new()
        .run_text("no-such-program-agentbash-it")
        .code(127)
        .stderr_has("Command exited with code 127")
        .stdout_has("not found")
        .run();
}

#[test]
fn one_megabyte_command_runs() {
    let env = TestEnv::new();
    let word = "a".repeat(100 * 1024);
    let mut args = vec!["run", "--json", "--", "echo"];
    args.extend(std::iter::repeat_n(word.as_str(), 10));
    let out = env.run(&args);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(u(&v, "total_bytes"), 10 * 100 * 1024 + 9 + 1);
    assert!(
        u(&v, "output_bytes") <= 51200,
        "output_bytes {}",
        v["output_bytes"]
    );
    assert!(v["artifact"].is_object(), "{:#}", v["artifact"]);
    let output = s(&v, "output").strip_suffix('\n').expect("echo's newline");
    assert!(output.ends_with(&word[..100]));
    assert!(output.bytes().all(|b| b == b'a' || b == b' '));
    assert_eq!(s(&v, "command").len(), 10 * 100 * 1024 + 4 + 10);
}

#[test]
fn artifact_dir_that_cannot_be_created_is_a_warning() {
    let env = TestEnv::new();
    env.write("p.toml", "[artifacts]\ndir = \"/proc/nope\"\n");
    let v = env
        .run_json("seq 1 100000")
        .profile("./p.toml")
        .code(0)
        .json();
    assert_warning(&v, "/proc/nope");
    assert!(v["artifact"].is_null());
    assert!(u(&v, "output_bytes") <= 51200);
    assert!(s(&v, "output").ends_with("100000\n"));
    // Text format still runs the command and says why nothing was saved.
    let out = env
        .run_text("seq 1 100000")
        .profile("./p.toml")
        .code(0)
        .run();
    assert!(out.stdout.ends_with("\n100000\n"));
    assert!(
        out.stderr.contains("/proc/nope"),
        "stderr: {:?}",
        out.stderr
    );
    // A run with nothing to save never tries the directory (artifacts are claimed
    // when first needed), so it has nothing to warn about.
    let out = env.run_text("echo hi").profile("./p.toml").code(0).run();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("hi\n", ""));
}

/// Regression (fixed): an unknown option before the command is swallowed into the command
/// text (`--jsn -- echo hi` is handed to the shell) instead of being rejected.
#[test]
fn unknown_option_before_the_command_is_a_usage_error() {
    assert_run_usage_errors(&[(&["--jsn"], "--jsn")]);
    let env = TestEnv::new();
    assert_usage_error(
        &env,
        &["run", "--no-such-flag", "touch ran"],
        "--no-such-flag",
    );
}
