//! The MCP server, driven over real stdio: by the official Python SDK client
//! (`tests/mcp_client.py`) and by hand-written JSON-RPC lines for the cases a stock
//! client cannot provoke (EOF mid-run, EOF before initialize, junk on stdin).

use crate::support::{Cmd, HANG_CAP, LiveServer, Output, TestEnv, assert_has, scaled};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_agentbash");

/// How long a test waits for the answer to a quick request.
const ANSWER: Duration = Duration::from_secs(10);

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
    if !python_client_available() {
        return;
    }
    let mut python = python_client(env, &["--only", only], server_args);
    for (k, v) in vars {
        python = python.env(k, v);
    }
    assert_python_client_passes(&format!("{only:?} checks"), python.run());
}

/// `python3 tests/mcp/mcp_client.py CLIENT_ARGS AGENTBASH mcp SERVER_ARGS` in `env`:
/// the official client against the server it starts.
fn python_client(env: &TestEnv, client_args: &[&str], server_args: &[&str]) -> Cmd {
    let script = client_script().display().to_string();
    let mut args = vec![script.as_str()];
    args.extend_from_slice(client_args);
    args.extend([SERVER, "mcp"]);
    args.extend_from_slice(server_args);
    env.program("python3", &args)
}

#[test]
fn python_sdk_client_passes() {
    if !python_client_available() {
        return;
    }
    // The server's directory is the env's: what its commands create (a session's
    // `sub/.venv`) goes there, not into the source tree.
    let env = TestEnv::new();
    let out = run_python_client(python_client(&env, &[], &[]));
    let summary = assert_python_client_passes("checks", out);
    // An older SDK leaves cases out (the client says `, K skipped`): a skip too.
    if let Some((_, skipped)) = summary.split_once(" passed, 0 failed, ") {
        crate::support::Missing::new(
            format!("the installed MCP SDK is too old: {skipped} of the client's cases"),
            "python3 -m pip install 'mcp==2.3.0' (.ci/run installs it in a venv first on PATH)",
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
        "python3 -m pip install 'mcp==2.3.0' (.ci/run installs it in a venv first on PATH)",
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
    let python = python_client(&env, &["--toolbox"], &["--toolbox", "-p", "files"]);
    let out = run_python_client(python.env("TOOLBOX_SECRET", secret));
    assert_python_client_passes("toolbox checks", out);
}

/// The whole of the official client's run, which may take longer than one command
/// (capped at five hang caps, to catch a hang only).
fn run_python_client(python: Cmd) -> Output {
    python.spawn().wait_within(scaled(HANG_CAP * 5))
}

/// Asserts that the official client's run `out` passed its `what` (`N passed, 0
/// failed`, N > 0); returns that summary line.
#[track_caller]
fn assert_python_client_passes(what: &str, out: Output) -> String {
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.success(),
        "the Python MCP client's {what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // `N passed, 0 failed` (maybe `, K skipped`), with N > 0.
    let summary = stdout.lines().last().unwrap_or_default();
    let passed = summary
        .split_once(" passed, 0 failed")
        .and_then(|(passed, _)| passed.parse::<u32>().ok());
    assert!(
        passed.is_some_and(|n| n > 0),
        "the Python MCP client's {what}: unexpected summary `{summary}`:\n{stdout}"
    );
    summary.to_string()
}

#[test]
fn python_sdk_client_sees_background_after_keep_the_sandbox_under_agent() {
    if !python_client_available() {
        return;
    }
    let env = TestEnv::new();
    env.user_profile(
        "agent1",
        "extends = \"agent\"\n[jobs]\nbackground_after = 1\n",
    );
    let python = python_client(&env, &[], &["-p", "agent1"]);
    let out = run_python_client(python.env("MCP_CHECKS", "agent-jobs"));
    assert_python_client_passes("agent-jobs checks", out);
}

/// `agentbash mcp ARGS` in `env`, before the handshake, every line read as JSON-RPC.
fn mcp_raw(env: &TestEnv, args: &[&str]) -> LiveServer {
    let mut argv = vec!["mcp"];
    argv.extend_from_slice(args);
    LiveServer::mcp_raw(env.cmd(&argv))
}

/// [`mcp_raw`] with the MCP handshake done.
fn mcp_ready(env: &TestEnv, args: &[&str]) -> LiveServer {
    let mut server = mcp_raw(env, args);
    server.initialize();
    server
}

/// The server still answers a `bash` call (`echo still here`, as request `id`).
#[track_caller]
fn assert_still_serving(server: &mut LiveServer, id: u64) {
    let command = serde_json::json!({"command": "echo still here"});
    let reply = server.tool_answer(id, "bash", command, ANSWER);
    assert_eq!(text_of(&reply), "still here", "{reply}");
}

/// Send `line` as it is: the answer, within `within`, must be the JSON-RPC error
/// `code` for request `id`. Returns the answer.
#[track_caller]
fn assert_raw_error(
    server: &mut LiveServer,
    line: &str,
    id: Value,
    code: i64,
    within: Duration,
) -> Value {
    server.send_raw(line);
    let reply = server.jsonrpc(within);
    assert_eq!(reply["id"], id, "{line:.80}: {reply}");
    assert_eq!(reply["error"]["code"], code, "{line:.80}: {reply}");
    reply
}

/// At the end of its input the server exits 0 (within 5 s).
#[track_caller]
fn assert_exits_zero(server: LiveServer) {
    let (code, _, rest) = server.exit(Duration::from_secs(5));
    assert_eq!(code, Some(0), "{rest:?}");
}

/// A fresh env and `agentbash mcp` in it, the handshake done.
fn mcp_session() -> (TestEnv, LiveServer) {
    let env = TestEnv::new();
    let server = mcp_ready(&env, &[]);
    (env, server)
}

/// `agentbash mcp` (handshake done) under a profile that allows `max` concurrent
/// runs, written to a temp dir of the test's own (for its marks, too).
fn mcp_limited(max: u32) -> (tempfile::TempDir, TestEnv, LiveServer) {
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("limit.toml");
    let toml = format!("[server]\nmax_concurrent = {max}\n");
    std::fs::write(&profile, toml).expect("write profile");
    let env = TestEnv::new();
    let server = mcp_ready(&env, &["--profile", &profile.display().to_string()]);
    (dir, env, server)
}

/// The text content of a `tools/call` answer (empty when there is none).
fn text_of(reply: &serde_json::Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
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
    let server = mcp_raw(&env, &[]);
    let (code, _, rest) = server.exit(Duration::from_secs(5));
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn eof_cancels_a_running_command_and_exits_zero() {
    let (_env, mut server) = mcp_session();
    let sleep = format!("sleep 30.{}", crate::support::nonce());
    server.call(2, "bash", serde_json::json!({ "command": sleep }));
    assert!(
        crate::support::wait_for_cmdline(&sleep, crate::support::HANG_CAP),
        "{sleep} never started"
    );
    // End of input: rmcp alone would wait 5 s for in-flight handlers before
    // cancelling them.
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
    let text = text_of(answer);
    assert_eq!(text.lines().next(), Some("[Command cancelled]"), "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["output"], "",
        "{answer}"
    );
}

#[test]
fn junk_on_stdin_does_not_stop_the_server() {
    let (_env, mut server) = mcp_session();
    assert_raw_error(&mut server, "this is not json", Value::Null, -32700, ANSWER);
    let line = r#"{"jsonrpc":"2.0","id":7,"method":"no/such/method"}"#;
    assert_raw_error(&mut server, line, 7.into(), -32601, ANSWER);
    server.send_raw(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo alive"}}}"#,
    );
    let reply = server.jsonrpc(ANSWER);
    assert_eq!(reply["id"], 8);
    assert_eq!(reply["result"]["content"][0]["text"], "alive");
    assert_eq!(reply["result"]["isError"], false);
    assert_exits_zero(server);
}

#[test]
fn progress_arrives_before_the_result_when_a_token_is_sent() {
    let (_env, mut server) = mcp_session();
    server.send_raw(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"tok-1"},"name":"bash","arguments":{"command":"echo one; sleep 0.3; echo two"}}}"#,
    );
    let mut progress = Vec::new();
    let result = loop {
        let message = server.jsonrpc(ANSWER);
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
    let reply = server.jsonrpc(ANSWER);
    assert_eq!(reply["id"], 4, "{reply}");
    let _ = server.exit(Duration::from_secs(5));
}

#[test]
fn malformed_and_oversized_lines_are_answered_and_the_server_keeps_serving() {
    let (_env, mut server) = mcp_session();
    for junk in [r#"{"jsonrpc":"2.0","id":5,"method":"#, "\u{1}\u{2}", "[1,2"] {
        let reply = assert_raw_error(&mut server, junk, Value::Null, -32700, ANSWER);
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Parse error"), "{message}");
    }
    // 20 MB on one line: more than the 16 MiB limit, never buffered whole.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"bash","arguments":{{"command":"echo {}"}}}}}}"#,
        "x".repeat(20 << 20)
    );
    let reply = assert_raw_error(&mut server, &huge, Value::Null, -32600, HANG_CAP);
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert_has(message, "more than the limit of 16777216 bytes");
    assert_still_serving(&mut server, 8);
    assert_exits_zero(server);
}

/// A `tools/call` whose `arguments` is not an object is invalid params (-32602) for
/// that request's id (issue 22, item 14; `rmcp` answered -32601, "method not
/// found"), and the server keeps serving.
#[test]
fn non_object_arguments_are_invalid_params() {
    let (_env, mut server) = mcp_session();
    let cases = [
        (2, serde_json::json!("echo hi"), "a string"),
        (3, serde_json::json!(["echo hi"]), "an array"),
        (4, serde_json::json!(7), "a number"),
        (5, serde_json::json!(true), "a boolean"),
    ];
    for (id, arguments, what) in cases {
        let reply = server.tool_answer(id, "bash", arguments, ANSWER);
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert_eq!(
            reply["error"]["message"],
            format!("Invalid params: `arguments` of tools/call must be an object, not {what}"),
            "{reply}"
        );
    }
    assert_still_serving(&mut server, 6);
}

#[test]
fn numeric_arguments_may_be_strings() {
    let (env, mut server) = mcp_session();
    let reply = server.tool_answer(
        2,
        "bash",
        serde_json::json!({"command": "seq 1 100", "head": "5", "timeout": "7"}),
        ANSWER,
    );
    let result = &reply["result"]["structuredContent"];
    assert_eq!(result["head"], 5, "{reply}");
    assert_eq!(result["timeout_s"], 7, "{reply}");
    assert_eq!(result["output"], "1\n2\n3\n4\n5\n", "{reply}");
    let url = result["artifact"]["url"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(url.starts_with("artifact://"), "{reply}");

    let reply = server.tool_answer(
        3,
        "read_artifact",
        serde_json::json!({"id": url, "offset": "3", "limit": "2"}),
        ANSWER,
    );
    let text = text_of(&reply);
    assert!(text.starts_with("4\n5\n"), "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");

    let reply = server.tool_answer(
        4,
        "bash",
        serde_json::json!({"command": "touch ran", "timeout": "soon"}),
        ANSWER,
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = text_of(&reply);
    assert_has(text, "`timeout` must be a whole number");
    assert!(!env.work().join("ran").exists());

    // A negative timeout is clamped as on the CLI and over rpc, and the notice names
    // the value asked for (it was refused here, and said `requested 0s` over rpc).
    let reply = server.tool_answer(
        5,
        "bash",
        serde_json::json!({"command": "true", "timeout": "-5"}),
        ANSWER,
    );
    let result = &reply["result"]["structuredContent"];
    assert_eq!(result["timeout_s"], 1, "{reply}");
    assert!(
        result["notices"].to_string().contains("requested -5s"),
        "{reply}"
    );
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
    let (dir, _env, mut server) = mcp_limited(2);
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
            text_of(answer)
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
    let (env, mut server) = mcp_session();
    let endless = crate::lift::producer(5_000_000, 1);
    let cases = [
        // (id, arguments, exit code, output, total lines, isError)
        (
            2,
            serde_json::json!({"command": "yes 2>&1 | head -n 3", "timeout": 60}),
            0,
            "y\ny\ny\n",
            3,
            false,
        ),
        (
            3,
            serde_json::json!({"head": 2, "command": endless}),
            1,
            "1\n2\n",
            5_000_000,
            true,
        ),
    ];
    for (id, arguments, exit_code, output, total_lines, is_error) in cases {
        let reply = server.tool_answer(id, "bash", arguments, HANG_CAP);
        let result = &reply["result"]["structuredContent"];
        assert_eq!(result["exit_code"], exit_code, "{id}: {reply}");
        assert_eq!(result["output"], output, "{id}: {reply}");
        assert_eq!(result["total_lines"], total_lines, "{id}: {reply}");
        assert_eq!(reply["result"]["isError"], is_error, "{id}: {reply}");
    }
    assert!(env.work().join("finished").exists());
    let _ = server.exit(Duration::from_secs(5));
}

/// The tool descriptions a model reads, over the raw protocol: `tools/list`.
fn tool_descriptions(args: &[&str]) -> (String, serde_json::Value) {
    let env = TestEnv::new();
    let mut server = mcp_ready(&env, args);
    server.send_raw(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let reply = server.answer(2, ANSWER);
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
    let (_env, mut server) = mcp_session();
    let reply = server.tool_answer(
        2,
        "bash",
        serde_json::json!({"command": "seq 1 30000"}),
        crate::support::HANG_CAP,
    );
    let id = reply["result"]["structuredContent"]["artifact"]["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("no artifact: {reply}"));
    let reply = server.tool_answer(3, "read_artifact", serde_json::json!({"id": id}), ANSWER);
    let text = text_of(&reply);
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
        let (_env, mut server) = mcp_session();
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
        let answer = server.answer(2, ANSWER);
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
    let (dir, _env, mut server) = mcp_limited(1);
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
        let reply = server.tool_answer(id, "bash", arguments.clone(), crate::support::HANG_CAP);
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = text_of(&reply);
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
    let _ = server.exit(Duration::from_secs(10));
}

/// `read_artifact` refuses `limit` 0 by name (it used to read one line), and the
/// schemas state the minimum the server enforces for `limit`, `head` and `tail`.
#[test]
fn zero_limits_are_refused_as_the_schemas_say() {
    let (_env, mut server) = mcp_session();
    server.send_raw(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let tools = server.answer(1, ANSWER)["result"]["tools"].clone();
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
    let reply = server.tool_answer(
        2,
        "bash",
        serde_json::json!({"command": "seq 1 10", "tail": 1}),
        ANSWER,
    );
    let url = reply["result"]["structuredContent"]["artifact"]["url"].clone();
    assert!(url.is_string(), "{reply}");
    let reply = server.tool_answer(
        3,
        "read_artifact",
        serde_json::json!({"id": url, "limit": 0}),
        ANSWER,
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = text_of(&reply);
    assert_has(text, "`limit` must be at least 1");
    let _ = server.exit(Duration::from_secs(5));
}
