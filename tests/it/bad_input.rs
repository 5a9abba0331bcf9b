//! Bad input gets a clear error, never a panic or a hang (issue 2, "Bad input" and
//! item 14's size limits).

use crate::support::{Test, TestEnv, assert_warning, s, u};

#[track_caller]
fn assert_usage_error(env: &TestEnv, args: &[&str], mention: &str) {
    let usage_error = env.test().args(args).code(2).stderr_has(mention);
    usage_error.stderr_lacks("panicked").run();
    assert!(!env.work().join("ran").exists(), "{args:?} ran the command");
}

#[test]
fn zero_or_non_numeric_line_limits_are_usage_errors() {
    let env = TestEnv::new();
    assert_usage_error(&env, &["run", "--head", "0", "--", "touch ran"], "--head");
    assert_usage_error(&env, &["run", "--tail", "0", "--", "touch ran"], "--tail");
    assert_usage_error(&env, &["run", "--head", "abc", "--", "touch ran"], "abc");
    assert_usage_error(&env, &["run", "--tail", "-3", "--", "touch ran"], "--tail");
}

#[test]
fn non_numeric_timeout_is_a_usage_error() {
    let env = TestEnv::new();
    assert_usage_error(&env, &["run", "-t", "abc", "--", "touch ran"], "abc");
    assert_usage_error(&env, &["run", "-t", "1.5", "--", "touch ran"], "1.5");
    assert_usage_error(&env, &["run", "-t", "", "--", "touch ran"], "--timeout");
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
fn bad_enum_values_and_flags_are_usage_errors() {
    let env = TestEnv::new();
    assert_usage_error(&env, &["run", "--format", "xml", "--", "touch ran"], "xml");
    assert_usage_error(&env, &["run", "--mode", "tty", "--", "touch ran"], "tty");
    assert_usage_error(
        &env,
        &["run", "--json", "--format", "text", "--", "touch ran"],
        "--format",
    );
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
    let env = TestEnv::new();
    assert_usage_error(&env, &["run", "--jsn", "--", "touch ran"], "--jsn");
    assert_usage_error(
        &env,
        &["run", "--no-such-flag", "touch ran"],
        "--no-such-flag",
    );
}
