//! agentbash inside shell scripts and CI jobs: `--stream` into a pipe, `--stderr
//! separate` for `out=$(agentbash run …)`, and no stray directories in a checkout.

use std::time::Duration;

use std::path::PathBuf;

use crate::support::{Gate, HANG_CAP, Running, Test, TestEnv, notices, s, sh_quote, wait_for_path};

/// Prints a line, says so with a file, waits at a gate the test opens, prints another.
fn slow(env: &TestEnv) -> (String, Gate, PathBuf) {
    let gate = Gate::new(env, "second");
    let reached = env.root().join("first-printed");
    let cmd = format!(
        "echo first; touch '{}'; {}; echo second",
        reached.display(),
        gate.wait()
    );
    (cmd, gate, reached)
}

/// Opens the gate of [`slow`]'s command and checks that the run then ends with both
/// of its lines.
#[track_caller]
fn opened_it_ends_whole(gate: &Gate, run: Running) {
    gate.open();
    let out = run.wait();
    out.assert_code(0);
    assert_eq!(out.stdout, "first\nsecond\n");
}

/// The first line comes through the pipe while the command is still held at the gate:
/// with `--stream`, and with the `ci` profile (which streams).
#[test]
fn stream_sends_output_into_a_pipe_as_it_is_produced() {
    for opts in [&["--stream"][..], &["-p", "ci"]] {
        let env = TestEnv::new();
        let (cmd, gate, _) = slow(&env);
        let mut run = env.run_text(&cmd).opts(opts).spawn();
        let (_, line) = run
            .next_line(HANG_CAP)
            .unwrap_or_else(|| panic!("{opts:?}: no first line"));
        assert_eq!(line, "first\n", "{opts:?}");
        assert!(!gate.is_open(), "{opts:?}");
        opened_it_ends_whole(&gate, run);
    }
}

#[test]
fn without_stream_the_default_profile_prints_into_a_pipe_at_the_end() {
    // The control for the test above: the same wait would be meaningless if the
    // default already streamed. Once the command has printed its first line, nothing
    // comes through for half a second while it is held; all of it comes at the end.
    let env = TestEnv::new();
    let (cmd, gate, reached) = slow(&env);
    let mut run = env.run_text(&cmd).spawn();
    assert!(wait_for_path(&reached, HANG_CAP), "the command never ran");
    let early = run.next_line(Duration::from_millis(500));
    assert!(early.is_none(), "printed while the command ran: {early:?}");
    opened_it_ends_whole(&gate, run);
}

#[test]
fn stream_with_json_is_a_usage_error() {
    Test::new()
        .run_json("true")
        .opts(&["--stream"])
        .code(2)
        .stderr_has("--format ndjson")
        .run();
}

#[test]
fn profile_ci_creates_its_artifacts_dir_only_for_an_artifact() {
    let env = TestEnv::new();
    env.run_text("echo short")
        .profile("ci")
        .code(0)
        .stdout("short\n")
        .run();
    assert!(
        !env.work().join(".agentbash").exists(),
        "a short run left .agentbash/ in the working directory"
    );

    // 1.9 MB of lines overflow ci's 1 MiB: the artifact is kept, in .agentbash/artifacts.
    let v = env.run_json("seq 1 300000").profile("ci").code(0).json();
    let path = std::path::PathBuf::from(s(&v["artifact"], "path"));
    assert!(
        path.starts_with(env.work().join(".agentbash/artifacts")),
        "{path:?}"
    );
    assert_eq!(std::fs::metadata(&path).expect("artifact").len(), 1_988_895);
}

/// A tool that prints JSON on stdout and a warning on stderr.
const TOOL: &str = r#"echo '{"ok": true}'; echo 'warning: config is deprecated' >&2"#;

#[test]
fn stderr_separate_keeps_stdout_parseable_for_scripts() {
    let env = TestEnv::new();
    // As a script would: out=$(agentbash run --stderr separate -- tool); parse "$out".
    let script = format!(
        "out=$('{}' run --stderr separate -- {}) || exit 9; printf %s \"$out\" | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"ok\"])'",
        crate::support::bin().display(),
        sh_quote(TOOL)
    );
    let out = env.program("bash", &["-c", &script]).run();
    out.assert_code(0);
    assert_eq!(out.stdout, "True\n");
    assert_eq!(out.stderr, "warning: config is deprecated\n");

    // The control: merged (the default) puts the warning into $out.
    env.run_text(TOOL)
        .code(0)
        .stdout("{\"ok\": true}\nwarning: config is deprecated\n")
        .run();
    let out = env.run_json(TOOL).opts(&["--stderr", "merged"]).run();
    assert!(out.json().get("stderr").is_none(), "{}", out.stdout);
}

#[test]
fn stderr_separate_passes_stderr_through_as_it_is_produced() {
    use std::io::BufRead;
    let env = TestEnv::new();
    // The first stderr line is read while the command is held at a gate.
    let gate = Gate::new(&env, "late");
    let command = format!("echo early >&2; {}; echo late >&2; echo out", gate.wait());
    let mut cmd = env
        .run_text(&command)
        .opts(&["--stderr", "separate"])
        .into_command();
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("agentbash starts");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    stderr.read_line(&mut first).expect("a stderr line");
    assert_eq!(first, "early\n");
    gate.open();
    let status = child.wait().expect("agentbash ends");
    assert!(status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("rest of stderr");
    assert_eq!(rest, "late\n");
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut stdout)
        .expect("stdout");
    assert_eq!(stdout, "out\n");
}

#[test]
fn stderr_separate_in_json_has_its_own_field_and_retention() {
    let env = TestEnv::new();
    let v = env
        .run_json("echo out1; seq 1 30000 >&2; echo out2")
        .opts(&["--stderr", "separate"])
        .code(0)
        .output("out1\nout2\n")
        .field("truncated", false)
        .json();
    assert!(v["artifact"].is_null(), "stdout was not cut: {v}");
    let e = &v["stderr"];
    assert_eq!(e["truncated"], true, "{e}");
    assert_eq!(e["total_lines"], 30000);
    assert!(s(e, "output").ends_with("\n29999\n30000"), "{e}");
    // The full stderr is its own artifact, named in a notice.
    let path = s(&e["artifact"], "path");
    let full = std::fs::read_to_string(path).expect("stderr artifact");
    assert_eq!(full.lines().count(), 30000);
    assert!(full.starts_with("1\n2\n"));
    let url = s(&e["artifact"], "url");
    let notices = notices(&v);
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("[Showing stderr: lines ")
                && n.ends_with(&format!("Full: {url}]"))),
        "{notices:?}"
    );

    // NDJSON tells the streams apart.
    let out = env
        .run_text("echo o; echo e >&2")
        .opts(&["--format", "ndjson", "--stderr", "separate"])
        .run();
    let events = out.ndjson();
    let data = |kind: &str| -> String {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| s(e, "data").to_string())
            .collect()
    };
    assert_eq!(
        (data("output"), data("stderr")),
        ("o\n".into(), "e\n".into())
    );
}

#[test]
fn stderr_separate_is_redacted_like_the_output() {
    let out = Test::new()
        .run_text("echo \"token $MY_TOKEN\" >&2")
        .opts(&[
            "-p",
            "agent",
            "--stderr",
            "separate",
            "-e",
            "MY_TOKEN=supersecretvalue123",
        ])
        .code(0)
        .run();
    let v = out.json();
    assert_eq!(s(&v["stderr"], "output"), "token [REDACTED:MY_TOKEN]");
    assert!(!out.stdout.contains("supersecretvalue123"));
}

#[test]
fn stderr_separate_refuses_a_terminal() {
    let env = TestEnv::new();
    env.run_text("touch ran")
        .opts(&["--pty", "--stderr", "separate"])
        .code(2)
        .stderr_has("needs print mode")
        .run();
    assert!(!env.work().join("ran").exists(), "the command ran");
    // Auto mode picks print mode for it, even where the profile asks for a PTY.
    env.write("on.toml", "[pty]\nmode = \"on\"\n");
    let out = env
        .run_text("echo o; echo e >&2")
        .opts(&["-p", "./on.toml", "--stderr", "separate"])
        .code(0)
        .run();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("o\n", "e\n"));
}
