//! The MCP server, driven over real stdio: by the official Python SDK client
//! (`tests/mcp_client.py`) and by hand-written JSON-RPC lines for the cases a stock
//! client cannot provoke (EOF mid-run, EOF before initialize, junk on stdin).

use crate::support::{LiveServer, TestEnv, assert_has};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_agentbash");

fn python_sdk_available() -> bool {
    Command::new("python3")
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The Python SDK client's checks whose name contains `only`, against `agentbash mcp
/// -p PROFILE` started in `env` (`None`, with a note, when the SDK is missing). Fails
/// the test unless every selected check passed (and there was one).
pub(crate) fn python_client_checks(env: &crate::support::TestEnv, only: &str, profile: &str) {
    python_client_checks_with(env, only, profile, &[]);
}

/// [`python_client_checks`] with variables set for the client (`MCP_CHECKS` picks
/// another set of checks).
pub(crate) fn python_client_checks_with(
    env: &crate::support::TestEnv,
    only: &str,
    profile: &str,
    vars: &[(&str, &str)],
) {
    python_client_checks_on(env, only, &["-p", profile], vars);
}

/// [`python_client_checks_with`] against `agentbash mcp SERVER_ARGS`.
pub(crate) fn python_client_checks_on(
    env: &crate::support::TestEnv,
    only: &str,
    server_args: &[&str],
    vars: &[(&str, &str)],
) {
    if !python_sdk_available() {
        crate::support::skip!(
            "python3 cannot import `mcp` (the official MCP SDK)",
            "python3 -m pip install 'mcp==2.3.0', as .ci/run does"
        );
    }
    let script = client_script();
    let script = script.display().to_string();
    let mut args = vec![script.as_str(), "--only", only, SERVER, "mcp"];
    args.extend_from_slice(server_args);
    let mut cmd = env.program("python3", &args);
    for (k, v) in vars {
        cmd = cmd.env(k, v);
    }
    let out = cmd.run();
    let summary = out.stdout.lines().last().unwrap_or_default();
    let passed = summary
        .split_once(" passed, 0 failed")
        .and_then(|(passed, _)| passed.parse::<u32>().ok());
    assert!(
        out.code() == Some(0) && passed.is_some_and(|n| n > 0),
        "the Python MCP client's {only:?} checks failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn python_sdk_client_passes() {
    if !python_sdk_available() {
        crate::support::skip!(
            "python3 cannot import `mcp` (the official MCP SDK)",
            "python3 -m pip install 'mcp==2.3.0', as .ci/run does"
        );
    }
    let script = client_script();
    let state = tempfile::tempdir().expect("temp dir");
    // The server's directory: what its commands create (a session's `sub/.venv`) goes
    // there, not into the source tree.
    let work = tempfile::tempdir().expect("temp dir");
    let mut python = Command::new("python3");
    python
        .arg(&script)
        .arg(SERVER)
        .arg("mcp")
        .env("AGENTBASH_STATE_DIR", state.path())
        .current_dir(work.path());
    let summary = assert_python_client_passes(python);
    // An older SDK leaves cases out (the client says `, K skipped`): a skip too.
    if let Some((_, skipped)) = summary.split_once(" passed, 0 failed, ") {
        crate::support::Missing::new(
            format!("the installed MCP SDK is too old: {skipped} of the client's cases"),
            "python3 -m pip install 'mcp==2.3.0', as .ci/run does",
        )
        .skip_part();
    }
}

/// `false` (and the test skips, or fails under `AGENTBASH_REQUIRE_ALL=1`) when python3
/// cannot import the MCP SDK.
fn python_client_available() -> bool {
    if python_sdk_available() {
        return true;
    }
    crate::harness::skipped(
        "python3 cannot import `mcp` (the official MCP SDK)",
        "python3 -m pip install 'mcp==2.3.0', as .ci/run does",
    );
    false
}

fn client_script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/mcp_client.py")
}

/// The file tools through the official client: `agentbash mcp --toolbox` under a
/// workspace-write profile with `deny_read` and redaction (the checks are in
/// `tests/mcp/mcp_client.py --toolbox`).
#[test]
fn python_sdk_client_passes_the_toolbox_checks() {
    if !python_client_available() {
        return;
    }
    let env = crate::support::TestEnv::new();
    let secret = "tok-51c0ffee77ab";
    env.user_profile(
        "files",
        &format!(
            "extends = \"default\"\n[sandbox]\nmode = \"workspace-write\"\ndeny_read = [\"~/.secrets\"]\n\
             [env]\nset = {{ DEPLOY_TOKEN = \"{secret}\" }}\n[output]\nredact = [\"*TOKEN*\"]\n"
        ),
    );
    let script = client_script().display().to_string();
    let python = env
        .program(
            "python3",
            &[
                &script,
                "--toolbox",
                SERVER,
                "mcp",
                "--toolbox",
                "-p",
                "files",
            ],
        )
        .env("TOOLBOX_SECRET", secret)
        .into_command();
    assert_python_client_passes(python);
}

/// Runs the official client and asserts it passed (`N passed, 0 failed`, N > 0);
/// returns that summary line.
#[track_caller]
fn assert_python_client_passes(mut python: Command) -> String {
    let output = python.output().expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python MCP client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // `N passed, 0 failed` (maybe `, K skipped`), with N > 0.
    let summary = stdout.lines().last().unwrap_or_default();
    let passed = summary
        .split_once(" passed, 0 failed")
        .and_then(|(passed, _)| passed.parse::<u32>().ok());
    assert!(
        passed.is_some_and(|n| n > 0),
        "unexpected summary `{summary}`:\n{stdout}"
    );
    summary.to_string()
}

#[test]
fn python_sdk_client_sees_background_after_keep_the_sandbox_under_agent() {
    if !python_sdk_available() {
        crate::support::skip!(
            "python3 cannot import `mcp` (the official MCP SDK)",
            "python3 -m pip install 'mcp==2.3.0', as .ci/run does"
        );
    }
    let script = client_script();
    let root = tempfile::tempdir().expect("temp dir");
    let (state, config, work) = (
        root.path().join("state"),
        root.path().join("config"),
        root.path().join("work"),
    );
    std::fs::create_dir_all(config.join("profiles")).expect("config dir");
    std::fs::create_dir_all(&work).expect("work dir");
    std::fs::write(
        config.join("profiles/agent1.toml"),
        "extends = \"agent\"\n[jobs]\nbackground_after = 1\n",
    )
    .expect("profile");
    let output = Command::new("python3")
        .arg(&script)
        .args([SERVER, "mcp", "-p", "agent1"])
        .current_dir(&work)
        .env("MCP_CHECKS", "agent-jobs")
        .env("AGENTBASH_STATE_DIR", &state)
        .env("AGENTBASH_CONFIG_DIR", &config)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(" passed, 0 failed"),
        "the Python MCP client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

/// `agentbash mcp ARGS` in `env`, before the handshake, every line read as JSON-RPC.
fn mcp_raw(env: &TestEnv, args: &[&str]) -> LiveServer {
    let mut argv = vec!["mcp"];
    argv.extend_from_slice(args);
    LiveServer::mcp_raw(env.cmd(&argv))
}

/// The framing tests below can fail: a line that is not JSON, written by a strict
/// server even as it exits, fails the reading test with the line (it used to end the
/// reader thread only, and an "exits and writes nothing more" check still passed).
#[test]
fn a_line_that_is_not_json_fails_the_test_that_reads_it() {
    let env = TestEnv::new();
    let script = r#"echo '{"jsonrpc":"2.0","id":1}'; echo 'not json'"#;
    let server = LiveServer::mcp_raw(env.program("sh", &["-c", script]));
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        server.exit(crate::support::HANG_CAP)
    }));
    let message = read.expect_err("a line that is not JSON was let through");
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert_has(&text, "not json");
}

#[test]
fn eof_before_initialize_exits_zero_silently() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.close_stdin();
    let (code, _, rest) = server.exit(Duration::from_secs(5));
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn eof_cancels_a_running_command_and_exits_zero() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    let sleep = format!("sleep 30.{}", crate::support::nonce());
    server.call(2, "bash", serde_json::json!({ "command": sleep }));
    assert!(
        crate::support::wait_for_cmdline(&sleep, crate::support::HANG_CAP),
        "{sleep} never started"
    );
    server.close_stdin();
    // rmcp alone would wait 5 s for in-flight handlers before cancelling them.
    let (code, took, rest) = server.exit(Duration::from_secs(10));
    assert_eq!(code, Some(0));
    assert!(
        took < crate::support::scaled(Duration::from_secs(3)),
        "exit took {took:?}"
    );
    // The cancelled run still answered, as JSON-RPC, before the server left.
    let answers = &rest;
    let answer = answers
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to the running call: {rest:?}"));
    assert_eq!(answer["result"]["structuredContent"]["cancelled"], true);
    assert_eq!(answer["result"]["isError"], true);
    // The annotation leads the text content; the structured `output` is the
    // command's own (issue 12).
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text.lines().next(), Some("[Command cancelled]"), "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["output"], "",
        "{answer}"
    );
}

#[test]
fn junk_on_stdin_does_not_stop_the_server() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    server.send_raw("this is not json");
    let reply = server.jsonrpc(Duration::from_secs(10));
    assert_eq!(reply["id"], serde_json::Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    server.send_raw(r#"{"jsonrpc":"2.0","id":7,"method":"no/such/method"}"#);
    let reply = server.jsonrpc(Duration::from_secs(10));
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    server.send_raw(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo alive"}}}"#,
    );
    let reply = server.jsonrpc(Duration::from_secs(10));
    assert_eq!(reply["id"], 8);
    assert_eq!(reply["result"]["content"][0]["text"], "alive");
    assert_eq!(reply["result"]["isError"], false);
    server.close_stdin();
    let (code, _, _) = server.exit(Duration::from_secs(5));
    assert_eq!(code, Some(0));
}

#[test]
fn progress_arrives_before_the_result_when_a_token_is_sent() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    server.send_raw(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"tok-1"},"name":"bash","arguments":{"command":"echo one; sleep 0.3; echo two"}}}"#,
    );
    let mut progress = Vec::new();
    let result = loop {
        let message = server.jsonrpc(Duration::from_secs(10));
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "tok-1", "{message}");
            progress.push(
                message["params"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        } else {
            break message;
        }
    };
    assert_eq!(result["id"], 3);
    assert_eq!(progress.concat(), "one\ntwo\n", "{progress:?}");

    // Without a token: no progress at all, just the answer.
    server.send_raw(
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo quiet"}}}"#,
    );
    let reply = server.jsonrpc(Duration::from_secs(10));
    assert_eq!(reply["id"], 4, "{reply}");
    server.close_stdin();
    let _ = server.exit(Duration::from_secs(5));
}

#[test]
fn malformed_and_oversized_lines_are_answered_and_the_server_keeps_serving() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    for junk in [r#"{"jsonrpc":"2.0","id":5,"method":"#, "\u{1}\u{2}", "[1,2"] {
        server.send_raw(junk);
        let reply = server.jsonrpc(Duration::from_secs(10));
        assert_eq!(reply["id"], serde_json::Value::Null, "{junk}: {reply}");
        assert_eq!(reply["error"]["code"], -32700, "{junk}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Parse error"), "{message}");
    }
    // 20 MB on one line: more than the 16 MiB limit, never buffered whole.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"bash","arguments":{{"command":"echo {}"}}}}}}"#,
        "x".repeat(20 << 20)
    );
    server.send_raw(&huge);
    let reply = server.jsonrpc(crate::support::HANG_CAP);
    assert_eq!(reply["id"], serde_json::Value::Null, "{}", reply["error"]);
    assert_eq!(reply["error"]["code"], -32600, "{}", reply["error"]);
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert_has(message, "more than the limit of 16777216 bytes");
    server.call(8, "bash", serde_json::json!({"command": "echo still here"}));
    let reply = server.answer(8, Duration::from_secs(10));
    assert_eq!(
        reply["result"]["content"][0]["text"], "still here",
        "{reply}"
    );
    server.close_stdin();
    let (code, _, _) = server.exit(Duration::from_secs(5));
    assert_eq!(code, Some(0));
}

/// A `tools/call` whose `arguments` is not an object is invalid params (-32602) for
/// that request's id (issue 22, item 14; `rmcp` answered -32601, "method not
/// found"), and the server keeps serving.
#[test]
fn non_object_arguments_are_invalid_params() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    let cases = [
        (2, serde_json::json!("echo hi"), "a string"),
        (3, serde_json::json!(["echo hi"]), "an array"),
        (4, serde_json::json!(7), "a number"),
        (5, serde_json::json!(true), "a boolean"),
    ];
    for (id, arguments, what) in cases {
        server.call(id, "bash", arguments);
        let reply = server.answer(id, Duration::from_secs(10));
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert_eq!(
            reply["error"]["message"],
            format!("Invalid params: `arguments` of tools/call must be an object, not {what}"),
            "{reply}"
        );
    }
    server.call(6, "bash", serde_json::json!({"command": "echo still here"}));
    let reply = server.answer(6, Duration::from_secs(10));
    assert_eq!(
        reply["result"]["content"][0]["text"], "still here",
        "{reply}"
    );
}

#[test]
fn numeric_arguments_may_be_strings() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    server.call(
        2,
        "bash",
        serde_json::json!({"command": "seq 1 100", "head": "5", "timeout": "7"}),
    );
    let reply = server.answer(2, Duration::from_secs(10));
    let result = &reply["result"]["structuredContent"];
    assert_eq!(result["head"], 5, "{reply}");
    assert_eq!(result["timeout_s"], 7, "{reply}");
    assert_eq!(result["output"], "1\n2\n3\n4\n5\n", "{reply}");
    let url = result["artifact"]["url"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(url.starts_with("artifact://"), "{reply}");

    server.call(
        3,
        "read_artifact",
        serde_json::json!({"id": url, "offset": "3", "limit": "2"}),
    );
    let reply = server.answer(3, Duration::from_secs(10));
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("4\n5\n"), "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");

    server.call(
        4,
        "bash",
        serde_json::json!({"command": "touch ran", "timeout": "soon"}),
    );
    let reply = server.answer(4, Duration::from_secs(10));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_has(text, "`timeout` must be a whole number");
    assert!(!env.work().join("ran").exists());

    // A negative timeout is clamped as on the CLI and over rpc, and the notice names
    // the value asked for (it was refused here, and said `requested 0s` over rpc).
    server.call(
        5,
        "bash",
        serde_json::json!({"command": "true", "timeout": "-5"}),
    );
    let reply = server.answer(5, Duration::from_secs(10));
    let result = &reply["result"]["structuredContent"];
    assert_eq!(result["timeout_s"], 1, "{reply}");
    assert!(
        result["notices"].to_string().contains("requested -5s"),
        "{reply}"
    );
    server.close_stdin();
    let _ = server.exit(Duration::from_secs(5));
}

/// Descendants of `pid` whose command line contains `needle`.
fn descendants_named(pid: u32, needle: &str) -> usize {
    crate::support::processes()
        .iter()
        .filter(|p| p.cmdline.contains(needle) && crate::support::descends_from(p.pid, pid as i32))
        .count()
}

#[test]
fn calls_beyond_max_concurrent_wait_and_a_queued_call_never_starts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("two.toml");
    std::fs::write(&profile, "[server]\nmax_concurrent = 2\n").expect("write profile");
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &["--profile", &profile.display().to_string()]);
    server.initialize();
    // Each call leaves a mark as it starts: whatever happens later, a mark of the
    // queued call would show that it ran at some point.
    let sleep = format!("sleep 41.{}", crate::support::nonce());
    let marks = || {
        std::fs::read_dir(dir.path())
            .expect("list marks")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("started-"))
            .count()
    };
    for id in 10..13 {
        let mark = dir.path().join(format!("started-{id}"));
        let command = format!("touch '{}'; {sleep}", mark.display());
        server.call(id, "bash", serde_json::json!({"command": command}));
    }
    let pid = server.pid() as u32;
    let deadline = Instant::now() + crate::support::HANG_CAP;
    while descendants_named(pid, &sleep) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        descendants_named(pid, &sleep),
        2,
        "only max_concurrent calls run"
    );
    // The client leaves: the two runs are cancelled, the queued call answers too.
    server.close_stdin();
    let (code, _, rest) = server.exit(Duration::from_secs(10));
    assert_eq!(code, Some(0));
    let answers = &rest;
    let texts: Vec<&str> = (10..13)
        .map(|id| {
            let answer = answers
                .iter()
                .find(|a| a["id"] == id)
                .unwrap_or_else(|| panic!("no answer to {id}: {rest:?}"));
            assert_eq!(
                answer["result"]["structuredContent"]["cancelled"], true,
                "{answer}"
            );
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
        })
        .collect();
    let unstarted = texts
        .iter()
        .filter(|t| t.contains("the command did not start"))
        .count();
    assert_eq!(unstarted, 1, "{texts:?}");
    assert_eq!(marks(), 2, "the queued call ran at some point: {texts:?}");
}

/// The MCP `bash` tool: a lifted `| head` stops the producer (regression: in the live
/// shell it ran until the timeout); an explicit `head` is a view only — the command
/// runs to completion and its exit code is reported, as on the CLI and over rpc.
#[test]
fn lifted_head_stops_the_producer_and_explicit_head_never_does() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    server.call(
        2,
        "bash",
        serde_json::json!({"command": "yes 2>&1 | head -n 3", "timeout": 60}),
    );
    let reply = server.answer(2, crate::support::HANG_CAP);
    let result = &reply["result"]["structuredContent"];
    assert_eq!(result["exit_code"], 0, "{reply}");
    assert_eq!(result["output"], "y\ny\ny\n", "{reply}");
    assert_eq!(result["total_lines"], 3, "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    server.call(
        3,
        "bash",
        serde_json::json!({"head": 2, "command":
            "perl -e 'print \"$_\\n\" for 1..5000000; open(my $f, \">\", \"finished\"); exit 1'"}),
    );
    let reply = server.answer(3, crate::support::HANG_CAP);
    let result = &reply["result"]["structuredContent"];
    assert_eq!(result["exit_code"], 1, "{reply}");
    assert_eq!(result["output"], "1\n2\n", "{reply}");
    assert_eq!(result["total_lines"], 5_000_000, "{reply}");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(env.work().join("finished").exists());
    server.close_stdin();
    let _ = server.exit(Duration::from_secs(5));
}

/// The tool descriptions a model reads, over the raw protocol: `tools/list`.
fn tool_descriptions(args: &[&str]) -> (String, serde_json::Value) {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, args);
    server.initialize();
    server.send_raw(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let reply = server.answer(2, Duration::from_secs(10));
    let tools = reply["result"]["tools"].as_array().expect("tools").clone();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} tool: {reply}"))
            .clone()
    };
    let bash = find("bash")["description"]
        .as_str()
        .expect("bash description")
        .to_string();
    (bash, find("read_artifact"))
}

#[test]
fn the_bash_tool_description_reads_naturally_and_says_each_thing_once() {
    let (bash, read) = tool_descriptions(&[]);
    assert_has(
        &bash,
        "Commands run in bash (profile `default`), non-interactively",
    );
    assert!(
        !bash.contains("with auto"),
        "the raw `auto` shell setting: {bash}"
    );
    assert_has(&bash, "the last 50.0KB is kept");
    assert_eq!(bash.matches("artifact://N").count(), 1, "{bash}");
    assert_eq!(bash.matches("interleaved").count(), 1, "{bash}");
    assert!(!bash.contains("blocked"), "no tools declared: {bash}");

    // read_artifact states the page size it really uses (2000 lines).
    let limit = &read["inputSchema"]["properties"]["limit"];
    assert_eq!(limit["default"], 2000, "{read}");
    assert!(
        read["description"]
            .as_str()
            .is_some_and(|d| d.contains("(default 2000)")),
        "{read}"
    );

    let (bash, _) = tool_descriptions(&["-p", "agent"]);
    assert_has(&bash, "the first 8.0KB and the last 24.0KB are kept");
    assert_has(&bash, "(read, grep, glob, edit, write) instead are blocked");
    assert_eq!(bash.matches("artifact://N").count(), 1, "{bash}");
}

#[test]
fn read_artifact_pages_by_the_stated_default() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    server.call(2, "bash", serde_json::json!({"command": "seq 1 30000"}));
    let reply = server.answer(2, crate::support::HANG_CAP);
    let id = reply["result"]["structuredContent"]["artifact"]["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("no artifact: {reply}"));
    server.call(3, "read_artifact", serde_json::json!({"id": id}));
    let reply = server.answer(3, Duration::from_secs(10));
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.starts_with("1\n2\n"), "{text:.40}");
    assert!(
        text.ends_with("2000\n\n[Lines 1-2000 of 30000. Next: offset=2000]"),
        "{}",
        &text[text.len().saturating_sub(80)..]
    );
}

/// Regression: `agentbash mcp` died at once on SIGTERM, without answering, and left
/// the running command behind (reparented to init). Now each stop signal cancels and
/// answers every call, tears the runs down and exits 0, as rpc does.
#[test]
fn stop_signals_cancel_and_answer_every_call_then_exit_zero() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let env = TestEnv::new();
        let mut server = mcp_raw(&env, &[]);
        server.initialize();
        let sleep = format!("sleep 300.{}", crate::support::nonce());
        server.call(2, "bash", serde_json::json!({"command": sleep}));
        let pid = server.pid() as u32;
        let deadline = Instant::now() + Duration::from_secs(10);
        while descendants_named(pid, &sleep) == 0 {
            assert!(Instant::now() < deadline, "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, signal) };
        let answer = server.answer(2, Duration::from_secs(10));
        assert_eq!(
            answer["result"]["structuredContent"]["cancelled"], true,
            "signal {signal}: {answer}"
        );
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let (code, took, _) = server.exit(Duration::from_secs(10));
        assert_eq!(code, Some(0), "signal {signal}");
        assert!(
            took < crate::support::scaled(Duration::from_secs(5)),
            "exit took {took:?}"
        );
        let left: Vec<i32> = crate::support::processes()
            .iter()
            .filter(|p| p.cmdline.contains(&sleep))
            .map(|p| p.pid)
            .collect();
        assert!(
            left.is_empty(),
            "signal {signal}: {sleep} survives: {left:?}"
        );
    }
}

/// Regression: a bad request was checked only once a run slot freed, so it was
/// answered seconds late behind a long run. Now it is answered at once.
#[test]
fn bad_requests_are_answered_at_once_behind_a_busy_slot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("one.toml");
    std::fs::write(&profile, "[server]\nmax_concurrent = 1\n").expect("write profile");
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &["--profile", &profile.display().to_string()]);
    server.initialize();
    // The one slot is held until the test opens the gate: every answer below comes
    // while it is taken.
    let gate = crate::support::Gate::in_dir(dir.path(), "long");
    let started = dir.path().join("started");
    let long = format!("touch '{}'; {}", started.display(), gate.wait());
    server.call(2, "bash", serde_json::json!({ "command": long }));
    assert!(
        crate::support::wait_for_path(&started, crate::support::HANG_CAP),
        "the long run never started"
    );
    let cases = [
        (serde_json::json!({"command": "  "}), "empty command"),
        (serde_json::json!({"command": "a\u{0}b"}), "NUL"),
        (
            serde_json::json!({"command": "true", "env": {"1X": "a"}}),
            "not a valid variable name",
        ),
        (
            serde_json::json!({"command": "true", "session": "../x"}),
            "invalid session name",
        ),
        (
            serde_json::json!({"command": "true", "head": 0}),
            "`head` must be at least 1",
        ),
    ];
    for (id, (arguments, want)) in (10..).zip(cases) {
        server.call(id, "bash", arguments.clone());
        let reply = server.answer(id, crate::support::HANG_CAP);
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains(want), "{arguments}: {text}");
    }
    // The long run held the slot all along: it answers only now (an earlier answer
    // would have been passed over above).
    gate.open();
    let reply = server.answer(2, crate::support::HANG_CAP);
    assert_eq!(
        reply["result"]["structuredContent"]["exit_code"], 0,
        "{reply}"
    );
    server.close_stdin();
    let _ = server.exit(Duration::from_secs(10));
}

/// `read_artifact` refuses `limit` 0 by name (it used to read one line), and the
/// schemas state the minimum the server enforces for `limit`, `head` and `tail`.
#[test]
fn zero_limits_are_refused_as_the_schemas_say() {
    let env = TestEnv::new();
    let mut server = mcp_raw(&env, &[]);
    server.initialize();
    server.send_raw(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let tools = server.answer(1, Duration::from_secs(10))["result"]["tools"].clone();
    for (tool, argument) in [
        ("bash", "head"),
        ("bash", "tail"),
        ("read_artifact", "limit"),
    ] {
        let schema = tools
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == tool))
            .map(|t| t["inputSchema"]["properties"][argument].clone())
            .unwrap_or_default();
        assert_eq!(schema["minimum"], 1, "{tool}.{argument}: {schema}");
    }
    server.call(
        2,
        "bash",
        serde_json::json!({"command": "seq 1 10", "tail": 1}),
    );
    let reply = server.answer(2, Duration::from_secs(10));
    let url = reply["result"]["structuredContent"]["artifact"]["url"].clone();
    assert!(url.is_string(), "{reply}");
    server.call(
        3,
        "read_artifact",
        serde_json::json!({"id": url, "limit": 0}),
    );
    let reply = server.answer(3, Duration::from_secs(10));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_has(text, "`limit` must be at least 1");
    server.close_stdin();
    let _ = server.exit(Duration::from_secs(5));
}
