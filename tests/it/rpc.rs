//! `agentbash rpc` driven over real pipes (docs/PROTOCOL.md).

use serde_json::{Value, json};
use std::time::{Duration, Instant};

use crate::support::{
    Gate, HANG_CAP, LiveServer, TestEnv, assert_first_notice_has, assert_has, descendants, nonce,
    scaled, thread_count, wait_for_cmdline, wait_for_path,
};

#[test]
fn bash_request_answers_with_the_result() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    rpc.send(json!({"id": "1", "type": "bash", "command": "echo hi; exit 4"}));
    let msgs = rpc.until_response(&json!("1"));
    let r = msgs.last().expect("response");
    assert_eq!(r["command"], "bash");
    assert_eq!(r["success"], true);
    assert_eq!(r["data"]["exit_code"], 4);
    assert_eq!(r["data"]["output"], "hi\n");
    assert!(
        r["data"]["text"]
            .as_str()
            .unwrap_or("")
            .contains("Command exited with code 4")
    );
    assert_eq!(msgs.len(), 1, "no output events without stream: {msgs:?}");
}

#[test]
fn streamed_output_comes_in_order_before_the_response() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    // `two` waits at a gate the test opens once `one` has arrived on its own.
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = Gate::in_dir(dir.path(), "two");
    let command = format!("echo one; {}; echo two", gate.wait());
    rpc.send(json!({"id": 7, "type": "bash", "command": command, "stream": true}));
    let first = rpc.next(HANG_CAP);
    assert_eq!(
        (&first["type"], &first["data"]),
        (&json!("output"), &json!("one\n")),
        "{first}"
    );
    gate.open();
    let mut msgs = vec![first];
    msgs.extend(rpc.until_response(&json!(7)));
    let data: String = msgs
        .iter()
        .filter(|m| m["type"] == "output")
        .map(|m| m["data"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(data, "one\ntwo\n");
    assert!(
        msgs.iter().filter(|m| m["type"] == "output").count() >= 2,
        "{msgs:?}"
    );
    assert!(msgs.iter().all(|m| m["id"] == 7));
}

/// Four requests are all running at once: each says it started and then waits at a
/// gate the test opens only when all four have said so (one at a time, the first
/// would wait for ever and the others never start).
#[test]
fn requests_run_concurrently() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = Gate::in_dir(dir.path(), "go");
    for i in 0..4 {
        let started = dir.path().join(format!("started-{i}"));
        let command = format!("touch '{}'; {}", started.display(), gate.wait());
        rpc.send(json!({"id": i, "type": "bash", "command": command}));
    }
    for i in 0..4 {
        let started = dir.path().join(format!("started-{i}"));
        assert!(
            wait_for_path(&started, HANG_CAP),
            "request {i} never started while the others ran"
        );
    }
    gate.open();
    let mut done = 0;
    while done < 4 {
        let m = rpc.next(HANG_CAP);
        if m["type"] == "response" {
            assert_eq!(m["data"]["exit_code"], 0, "{m}");
            done += 1;
        }
    }
}

/// Send `sleep 30.<nonce>` with `rest` after it as bash request `id`, and wait until
/// the sleep runs; returns the command.
#[track_caller]
fn start_sleep(rpc: &mut LiveServer, id: &str, rest: &str) -> String {
    let sleep = format!("sleep 30.{}", nonce());
    let command = format!("{sleep}{rest}");
    rpc.send(json!({"id": id, "type": "bash", "command": command}));
    assert!(wait_for_cmdline(&sleep, HANG_CAP), "{sleep} never started");
    command
}

#[test]
fn abort_with_and_without_target() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    start_sleep(&mut rpc, "a", "");
    start_sleep(&mut rpc, "b", "");
    rpc.send(json!({"id": "x", "type": "abort_bash", "target": "a"}));
    let msgs = rpc.until_response(&json!("a"));
    let ack = msgs
        .iter()
        .find(|m| m["id"] == "x")
        .expect("abort acknowledged");
    assert_eq!(ack["success"], true);
    assert_eq!(ack["command"], "abort_bash");
    let a = msgs.last().expect("response");
    assert_eq!(a["data"]["cancelled"], true);
    rpc.send(json!({"id": "y", "type": "abort_bash"}));
    let msgs = rpc.until_response(&json!("b"));
    assert_eq!(msgs.last().expect("b")["data"]["cancelled"], true);
    let r = rpc.ask(json!({"id": "z", "type": "abort_bash", "target": "nope"}));
    assert_eq!(r["success"], false);
}

/// Regression (issue 12): an aborted run listed agentbash's own live shell (and the
/// cancelled `sleep`) in `background_killed`. The shell's tree is the command being
/// stopped; nothing outlived it. The annotation leads `text` and is not `output`.
#[test]
fn abort_lists_no_live_shell_as_background() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    for (id, rest) in [("s", "; true"), ("p", "")] {
        let command = start_sleep(&mut rpc, id, rest);
        rpc.send(json!({"id": "x", "type": "abort_bash", "target": id}));
        let msgs = rpc.until_response(&json!(id));
        let data = &msgs.last().expect("response")["data"];
        assert_eq!(data["cancelled"], true, "{data:#}");
        assert_eq!(data["background_killed"], json!([]), "{command}: {data:#}");
        assert_eq!(
            data["text"].as_str().and_then(|t| t.lines().next()),
            Some("[Command cancelled]"),
            "{data:#}"
        );
        assert_eq!(data["output"], "", "{data:#}");
        assert_eq!(data["notices"], json!(["[Command cancelled]"]), "{data:#}");
    }
}

#[test]
fn malformed_input_is_answered_and_the_server_keeps_serving() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "malformed JSON"),
        (
            r#"{"id":"u","type":"launch"}"#.into(),
            "unknown request type",
        ),
        (
            r#"{"id":"m","type":"bash"}"#.into(),
            "missing field `command`",
        ),
        (
            r#"{"id":"e","type":"bash","command":"true","env":{"1X":"a"}}"#.into(),
            "not a valid variable name",
        ),
        (
            r#"{"id":"t","type":"bash","command":"true","timeout":"soon"}"#.into(),
            "`timeout` must be a whole number",
        ),
        (
            r#"{"id":"s","type":"bash","command":"true","session":"../x"}"#.into(),
            "invalid session name",
        ),
        (
            r#"{"id":"k","type":"bash","command":"true","tial":3}"#.into(),
            "unknown field `tial`",
        ),
        (
            r#"{"type":"bash","command":"true"}"#.into(),
            "missing or invalid `id`",
        ),
        ("[1,2]".into(), "must be a JSON object"),
    ];
    for (line, want) in &cases {
        rpc.send_raw(line);
        let m = rpc.next(HANG_CAP);
        assert_eq!(m["success"], false, "{line}: {m}");
        assert!(
            m["error"].as_str().unwrap_or("").contains(want),
            "{line}: {m}"
        );
    }
    let huge = format!(
        r#"{{"id":"big","type":"bash","command":"echo {}"}}"#,
        "a".repeat(20 << 20)
    );
    rpc.send_raw(&huge);
    let m = rpc.next(HANG_CAP);
    assert_eq!(m["success"], false);
    assert!(
        m["error"].as_str().unwrap_or("").contains("too long"),
        "{m}"
    );
    let r = rpc.ask(json!({"id": "ok", "type": "bash", "command": "echo still here"}));
    assert_eq!(r["data"]["output"], "still here\n");
}

/// EOF means "no more requests": what was accepted still runs and is answered.
#[test]
fn eof_lets_every_accepted_request_finish_and_answer_then_exits_zero() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    rpc.send(json!({"id": "slow", "type": "bash", "command": "sleep 0.5; echo done"}));
    rpc.send(json!({"id": "fast", "type": "bash", "command": "echo quick"}));
    let (status, rest) = rpc.finish();
    assert!(status.success(), "{status}");
    let answer = |id: &str| {
        rest.iter()
            .find(|m| m["id"] == id && m["type"] == "response")
            .unwrap_or_else(|| panic!("{id} was not answered: {rest:?}"))
            .clone()
    };
    let slow = answer("slow");
    assert_eq!(slow["data"]["cancelled"], false, "{slow}");
    assert_eq!(slow["data"]["exit_code"], 0, "{slow}");
    assert_eq!(slow["data"]["output"], "done\n");
    assert_eq!(answer("fast")["data"]["output"], "quick\n");
}

/// `printf '%s\n' "$req" | agentbash rpc` works as a batch.
#[test]
fn requests_piped_in_are_a_batch() {
    let env = crate::support::TestEnv::new();
    let lines: String = (0..3)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": i, "type": "bash", "command": format!("sleep 0.2; echo {i}")})
            )
        })
        .collect();
    let out = env.cmd(&["rpc"]).stdin(lines).run();
    out.assert_code(0);
    let mut outputs: Vec<String> = out
        .ndjson()
        .iter()
        .filter(|m| m["type"] == "response")
        .map(|m| crate::support::s(&m["data"], "output").to_string())
        .collect();
    outputs.sort();
    assert_eq!(outputs, ["0\n", "1\n", "2\n"]);
}

/// A stop signal still aborts what runs after EOF (the batch is being finished).
#[test]
fn a_stop_signal_after_eof_aborts_what_still_runs() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    start_sleep(&mut rpc, "long", "");
    rpc.close_stdin();
    rpc.signal(libc::SIGTERM);
    let start = Instant::now();
    let (status, rest) = rpc.finish();
    assert!(status.success(), "{status}");
    assert!(start.elapsed() < scaled(Duration::from_secs(5)));
    let r = rest
        .iter()
        .find(|m| m["id"] == "long")
        .expect("aborted run still answers");
    assert_eq!(r["data"]["cancelled"], true);
}

/// The handshake a remote target's client starts with (docs/PROTOCOL.md).
#[test]
fn hello_answers_the_protocol_version_and_capabilities() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let m = rpc.ask(json!({"id": "h", "type": "hello"}));
    assert_eq!(m["success"], true, "{m}");
    assert_eq!(m["command"], "hello");
    assert_eq!(m["data"]["protocol"], agentbash::server::PROTOCOL);
    assert_eq!(m["data"]["version"], env!("CARGO_PKG_VERSION"));
    let caps = m["data"]["capabilities"].as_array().expect("capabilities");
    assert!(caps.iter().any(|c| c == "events"), "{m}");
}

/// `events`: the start and notice events and the exit code `agentbash run` would
/// exit with, so a remote run renders as a local one.
#[test]
fn events_add_start_notices_and_the_exit_code() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    rpc.send(
        json!({"id": "e", "type": "bash", "command": "echo hi", "timeout": 99999, "events": true}),
    );
    let msgs = rpc.until_response(&json!("e"));
    let kinds: Vec<&str> = msgs
        .iter()
        .map(|m| m["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds.first(), Some(&"start"), "{msgs:?}");
    assert!(kinds.contains(&"notice"), "the clamp notice: {msgs:?}");
    assert!(kinds.contains(&"output"), "{msgs:?}");
    let r = msgs.last().expect("response");
    assert_eq!(r["exit"], 0, "{r}");
    assert_eq!(msgs[0]["data"]["command"], "echo hi");
    // Without `events` none of it is sent.
    rpc.send(json!({"id": "p", "type": "bash", "command": "echo hi"}));
    let plain = rpc.until_response(&json!("p"));
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert!(plain[0].get("exit").is_none(), "{plain:?}");
}

#[test]
fn sigterm_aborts_and_exits_zero() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    start_sleep(&mut rpc, "long", "");
    rpc.signal(libc::SIGTERM);
    let r = rpc.until_response(&json!("long"));
    assert_eq!(r.last().expect("long")["data"]["cancelled"], true);
    let (status, _) = rpc.finish();
    assert!(status.success(), "{status}");
}

#[test]
fn requests_beyond_max_concurrent_queue_without_threads_or_processes() {
    const REQUESTS: usize = 300;
    let env = TestEnv::new();
    let mut rpc = LiveServer::rpc_with_profile(&env, "[server]\nmax_concurrent = 4\n");
    let pid = rpc.pid();
    let idle_threads = thread_count(pid);
    rpc.send(json!({"id": "first", "type": "bash", "command": "sleep 30"}));
    for i in 0..REQUESTS {
        rpc.send(json!({"id": i, "type": "bash", "command": "sleep 0.05; echo $((6 * 7))"}));
    }
    rpc.send(json!({"id": "last", "type": "bash", "command": "touch \"$HOME/ran\""}));
    // Sample while most requests wait.
    let (mut max_threads, mut max_procs) = (0, 0);
    let mut answered = Vec::new();
    let sampling = Instant::now();
    while sampling.elapsed() < Duration::from_millis(1500) {
        max_threads = max_threads.max(thread_count(pid));
        max_procs = max_procs.max(descendants(pid).len());
        answered.extend(rpc.drain());
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "rpc, max_concurrent 4, {REQUESTS} queued: threads idle {idle_threads}, at most {max_threads}; descendants at most {max_procs}"
    );
    assert!(
        answered.len() < REQUESTS,
        "the queue drained while sampling: the test proves nothing"
    );
    // Each run holds one worker thread and at most a shell, a subshell and the
    // command (plus a live shell per pool key).
    assert!(
        max_threads <= idle_threads + 4 * 3,
        "{max_threads} threads (idle {idle_threads})"
    );
    assert!(max_procs <= 4 * 4, "{max_procs} descendant processes");

    // A queued request aborted: answered at once, cancelled, never run.
    rpc.send(json!({"id": "abort", "type": "abort_bash", "target": "last"}));
    let mut got = answered;
    let aborted = loop {
        let m = rpc.next(HANG_CAP);
        if m["id"] == "last" {
            break m;
        }
        got.push(m);
    };
    assert_eq!(aborted["success"], true, "{aborted}");
    assert_eq!(aborted["data"]["cancelled"], true, "{aborted}");
    let text = aborted["data"]["text"].as_str().unwrap_or_default();
    assert_has(text, "the command did not start");
    rpc.send(json!({"id": "stop", "type": "abort_bash", "target": "first"}));
    let deadline = Instant::now() + Duration::from_secs(60);
    while got
        .iter()
        .filter(|m| m["type"] == "response" && m["command"] == "bash")
        .count()
        < REQUESTS + 1
    {
        assert!(Instant::now() < deadline, "only {} answers", got.len());
        got.push(rpc.next(HANG_CAP));
    }
    let bash: Vec<&Value> = got.iter().filter(|m| m["command"] == "bash").collect();
    for i in 0..REQUESTS {
        let answers: Vec<&&Value> = bash.iter().filter(|m| m["id"] == i).collect();
        assert_eq!(answers.len(), 1, "request {i}: {answers:?}");
        assert_eq!(answers[0]["data"]["output"], "42\n", "{}", answers[0]);
    }
    assert!(!env.home().join("ran").exists(), "the aborted request ran");
}

#[test]
fn a_command_defining_builtin_functions_does_not_break_the_live_shell() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let hijack = "builtin() { echo hijacked; }; printf() { echo hijacked; }";
    let requests = [
        (
            json!({"session": "s", "command": format!("{hijack}; export Z=3")}),
            "",
            0,
        ),
        (
            json!({"session": "s", "command": "echo $Z; type -t builtin printf"}),
            "3\nbuiltin\nbuiltin\n",
            0,
        ),
        (
            json!({"command": format!("{hijack}; echo sub; exit 3")}),
            "sub\n",
            3,
        ),
        (json!({"command": "echo next"}), "next\n", 0),
    ];
    for (id, (mut request, output, code)) in requests.into_iter().enumerate() {
        request["id"] = json!(id);
        request["type"] = json!("bash");
        rpc.send(request);
        let r = rpc.until_response(&json!(id));
        let data = &r.last().expect("response")["data"];
        assert_eq!(data["output"], output, "{id}: {data}");
        assert_eq!(data["exit_code"], code, "{id}: {data}");
    }
}

/// A lifted `| head` stops the producer in a live shell too (regression: the live
/// shell never closed its pipe, so `yes 2>&1 | head -n 3` ran until the timeout), and
/// the session around it is kept. An explicit `head` — a number or a string, as MCP
/// takes it — is a view: the command runs to completion with its own exit code.
#[test]
fn lifted_head_stops_the_producer_and_explicit_head_never_does() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let dir = tempfile::tempdir().expect("temp dir");
    let cwd = dir.path().display().to_string();
    let d =
        rpc.ask_data(json!({"id": "1", "type": "bash", "command": "export X=7", "session": "s"}));
    assert_eq!(d["exit_code"], 0, "{d}");
    for (id, session) in [("2", json!("s")), ("3", Value::Null)] {
        let started = Instant::now();
        let r = rpc.ask(
            json!({"id": id, "type": "bash", "command": "yes 2>&1 | head -n 3",
            "session": session, "timeout": 60}),
        );
        let d = &r["data"];
        assert_eq!(
            (d["exit_code"].as_i64(), d["output"].as_str()),
            (Some(0), Some("y\ny\ny\n")),
            "{r}"
        );
        assert_eq!(d["stripped"], "| head -n 3");
        assert_eq!(d["total_lines"], 3);
        assert_first_notice_has(d, "agentbash stopped the command");
        assert!(
            started.elapsed() < scaled(Duration::from_secs(15)),
            "{:?}",
            started.elapsed()
        );
    }
    let d = rpc.ask_data(json!({"id": "4", "type": "bash", "command": "echo $X", "session": "s"}));
    assert_eq!(d["output"], "7\n", "{d}");
    for (id, head) in [("5", json!(2)), ("6", json!("2"))] {
        let marker = dir.path().join("finished");
        let _ = std::fs::remove_file(&marker);
        let command = crate::lift::producer(5_000_000, 1);
        let r = rpc
            .ask(json!({"id": id, "type": "bash", "cwd": cwd, "head": head, "command": command}));
        let d = &r["data"];
        assert_eq!(
            (d["exit_code"].as_i64(), d["output"].as_str()),
            (Some(1), Some("1\n2\n")),
            "{r}"
        );
        assert_eq!(d["head"], 2);
        assert_eq!(d["total_lines"], 5_000_000);
        assert!(marker.exists(), "the command was stopped");
    }
}

/// Regression: value errors (bad env name, bad session name, NUL, `head` 0, an empty
/// command) were found only once a concurrency slot freed, seconds late behind a long
/// run. They are answered as soon as the line is read.
#[test]
fn bad_requests_are_answered_at_once_behind_a_busy_slot() {
    let env = TestEnv::new();
    let mut rpc = LiveServer::rpc_with_profile(&env, "[server]\nmax_concurrent = 1\n");
    // The one slot is held until the test opens the gate: every answer below comes
    // while it is taken.
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = Gate::in_dir(dir.path(), "long");
    let started = dir.path().join("started");
    let long = format!("touch '{}'; {}", started.display(), gate.wait());
    rpc.send(json!({"id": "long", "type": "bash", "command": long}));
    assert!(
        wait_for_path(&started, HANG_CAP),
        "the long run never started"
    );
    let cases = [
        (json!({"command": " "}), "empty command"),
        (json!({"command": "a\u{0}b"}), "NUL"),
        (
            json!({"command": "true", "env": {"1X": "a"}}),
            "not a valid variable name",
        ),
        (
            json!({"command": "true", "session": "../x"}),
            "invalid session name",
        ),
        (
            json!({"command": "true", "head": 0}),
            "`head` must be at least 1",
        ),
        (
            json!({"command": "true", "cwd": "a\u{0}"}),
            "`cwd` contains a NUL byte",
        ),
    ];
    for (i, (mut request, want)) in cases.into_iter().enumerate() {
        request["id"] = json!(i);
        request["type"] = json!("bash");
        rpc.send(request.clone());
        let m = rpc.next(HANG_CAP);
        assert_eq!(m["id"], i, "{request}: answered {m} first");
        assert_eq!(m["success"], false, "{m}");
        assert!(
            m["error"].as_str().unwrap_or("").contains(want),
            "{request}: {m}"
        );
    }
    assert!(!gate.is_open());
    gate.open();
    let r = rpc.until_response(&json!("long"));
    assert_eq!(r.last().expect("long")["data"]["exit_code"], 0);
}

/// Regression: a request reusing a pending id was rejected under that same id and
/// without `command`, so a client could take it for the real answer. It is answered
/// under `id: null`, marked `rejected`, with the id in `duplicate_id` — whatever else
/// is wrong with it — and the pending request still gets its own answer.
#[test]
fn a_duplicate_pending_id_is_rejected_unmistakably() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    rpc.send(json!({"id": "a", "type": "bash", "command": "sleep 1; echo real"}));
    for dup in [
        json!({"id": "a", "type": "bash", "command": "echo dup"}),
        json!({"id": "a", "type": "bash", "command": "true", "tial": 3}),
        json!({"id": "a", "type": "launch"}),
    ] {
        rpc.send(dup.clone());
        let m = rpc.next(HANG_CAP);
        assert_eq!(m["id"], Value::Null, "{dup}: {m}");
        assert_eq!(m["rejected"], true, "{m}");
        assert_eq!(m["duplicate_id"], "a", "{m}");
        assert_eq!(m["command"], "bash", "{m}");
        assert_eq!(m["success"], false, "{m}");
        assert!(m.get("data").is_none(), "{m}");
        assert!(m["error"].as_str().unwrap_or("").contains("id a"), "{m}");
    }
    let r = rpc.until_response(&json!("a"));
    assert_eq!(r.last().expect("a")["data"]["output"], "real\n");
    // Answered: the id may be used again.
    let r = rpc.ask(json!({"id": "a", "type": "bash", "command": "echo again"}));
    assert_eq!(r["data"]["output"], "again\n");
}

/// rpc reads requests as mcp does: `timeout`, `head` and `tail` may be numeric
/// strings, and a UTF-8 byte-order mark before a line is skipped (both were
/// rejected). A negative timeout is clamped, and the notice names it as requested
/// (it said `requested 0s`).
#[test]
fn numeric_strings_a_bom_and_negative_timeouts_are_read_as_mcp_reads_them() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let d = rpc.ask(
        json!({"id": "t", "type": "bash", "command": "seq 1 9", "timeout": "5", "tail": " 2 "}),
    )["data"]
        .clone();
    assert_eq!(
        (d["timeout_s"].as_i64(), d["output"].as_str()),
        (Some(5), Some("8\n9\n")),
        "{d}"
    );
    rpc.send_raw("\u{feff}{\"id\":\"bom\",\"type\":\"bash\",\"command\":\"echo bom\"}");
    let r = rpc.until_response(&json!("bom")).pop().expect("bom");
    assert_eq!(r["data"]["output"], "bom\n", "{r}");
    for (id, timeout) in [("n", json!(-5)), ("ns", json!("-5"))] {
        let d =
            rpc.ask_data(json!({"id": id, "type": "bash", "command": "true", "timeout": timeout}));
        assert_eq!(d["timeout_s"], 1, "{d}");
        assert_eq!(d["requested_timeout_s"], -5, "{d}");
        let notices = d["notices"].to_string();
        assert_has(&notices, "requested -5s");
    }
    rpc.send(json!({"id": "bad", "type": "bash", "command": "true", "timeout": "1.5"}));
    let m = rpc.next(HANG_CAP);
    assert!(
        m["error"]
            .as_str()
            .unwrap_or("")
            .contains("`timeout` must be a whole number"),
        "{m}"
    );
}

/// Regression: a command that killed its own live shell was reported as exit 0 with
/// no signal (the CLI says 143, SIGTERM), and the "live shell had exited" notice
/// landed on the next request. Now that run reports the shell's end, with its own
/// notice, and the next request gets a fresh shell silently.
#[test]
fn a_command_killing_its_live_shell_reports_the_shells_end() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let cases = [
        ("kill -TERM $$", "", 143, "SIGTERM"),
        ("echo a; kill -KILL $$", "a\n", 137, "SIGKILL"),
    ];
    let mut n = 0;
    for session in [Value::Null, json!("s")] {
        for (command, output, code, signal) in cases {
            n += 1;
            let id = format!("k{n}");
            let d = rpc.ask_data(
                json!({"id": id, "type": "bash", "command": command, "session": session}),
            );
            let what = format!("{command} (session {session})");
            assert_eq!(d["exit_code"], code, "{what}: {d:#}");
            assert_eq!(d["signal"], signal, "{what}: {d:#}");
            assert_eq!(d["output"], output, "{what}: {d:#}");
            let notices = d["notices"].to_string();
            assert!(
                notices.contains("ended during this command") && notices.contains(signal),
                "{what}: {notices}"
            );
            let id = format!("n{n}");
            let d = rpc.ask_data(
                json!({"id": id, "type": "bash", "command": "echo next", "session": session}),
            );
            assert_eq!(
                (d["exit_code"].as_i64(), d["output"].as_str()),
                (Some(0), Some("next\n")),
                "{d:#}"
            );
            assert_eq!(d["notices"], json!([]), "after {what}: {d:#}");
        }
    }
}

/// rpc `job_start` with a `ready` regex that does not compile is refused before
/// anything starts (issue 22, item 14): no supervisor, no record, no command run —
/// it used to start a job that failed with exit 2.
#[test]
fn job_start_with_an_invalid_ready_regex_starts_nothing() {
    let env = crate::support::TestEnv::new();
    let req = json!({"id": "1", "type": "job_start", "command": "touch started; sleep 30",
        "ready": "(unclosed", "detached": true});
    let out = env.cmd(&["rpc"]).stdin(format!("{req}\n")).run();
    out.assert_code(0);
    let v: Value =
        serde_json::from_str(out.stdout.lines().next().expect("an answer")).expect("json");
    assert_eq!(v["success"], false, "{v}");
    assert_eq!(
        v["error"],
        "the readiness regex \"(unclosed\" (--ready, or `ready` over rpc and mcp) is invalid: unclosed group",
        "{v}"
    );
    let jobs = env.test().args(&["job", "list", "--json"]).json();
    assert_eq!(jobs["jobs"], json!([]), "{jobs}");
    assert!(!env.work().join("started").exists(), "the command ran");
    // The CLI refuses it the same way, as a usage error.
    let out = env
        .test()
        .args(&["job", "start", "--ready", "(", "--", "touch started"])
        .code(2)
        .run();
    assert_has(&out.stderr, "the readiness regex \"(\"");
    assert!(!env.work().join("started").exists(), "the command ran");
}
