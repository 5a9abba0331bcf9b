//! `agentbash run` end to end: exit codes, the JSON and NDJSON formats, never hanging,
//! background jobs, working directory and shell errors, and text-format flags
//! (issue 2, items 1, 2, 8, 9, 10 and 13).

use crate::support::{
    Gate, HANG_CAP, Test, TestEnv, assert_lacks, assert_none_running, bin, has_program,
    kill_cmdline, ndjson_with_a_clamp, needs_program, nonce, procs_with_cmdline, re, s, scaled,
    skip, u,
};
use std::process::Command;
use std::time::Duration;

#[test]
fn echo_prints_and_exits_zero() {
    Test::new()
        .args(&["run", "--", "echo", "hi"])
        .code(0)
        .stdout("hi\n")
        .run();
}

/// One word after `--` is a shell command text; several are an argv whose words
/// keep their quoting (issue 22, item 15): `printf '%s\n' 'a b'` printed `anbn` and
/// `echo "it's"` was a syntax error when the words were joined and re-parsed.
#[test]
fn words_after_the_separator_keep_their_quoting() {
    let env = TestEnv::new();
    let out = env.run_text("printf '%s\\n' a b | wc -l").code(0).run();
    assert_eq!(out.stdout.trim(), "2", "one word is a command text");
    let cases: &[(&[&str], &str)] = &[
        (&["printf", "%s\\n", "a b"], "a b\n"),
        (&["echo", "it's"], "it's\n"),
        (&["echo", "$HOME", "*", "a|b", "", "x"], "$HOME * a|b  x\n"),
        (&["printf", "'%s-%s\\n'", "x", "y"], "'x-y\n'"),
    ];
    for (words, want) in cases {
        let mut args = vec!["run", "--"];
        args.extend_from_slice(words);
        let out = env.run(&args);
        out.assert_code(0);
        assert_eq!(out.stdout, *want, "{words:?}");
    }
    // `explain` and the JSON show the quoted form that runs.
    let v = env
        .run(&["explain", "--json", "--", "printf", "%s\\n", "a b"])
        .json();
    assert_eq!(s(&v, "command"), "printf '%s\\n' 'a b'", "{v:#}");
    assert_eq!(
        s(&v["normalize"], "command"),
        "printf '%s\\n' 'a b'",
        "{v:#}"
    );
    env.test()
        .args(&["rules", "test", "--", "cat", "my file"])
        .stdout_has("cat 'my file'")
        .run();
}

/// The README's own example: `curl -w '%{http_code}\n'` printed `200n`.
#[test]
fn the_readme_curl_example_prints_the_status_code() {
    let env = TestEnv::new();
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf);
        let _ =
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    });
    let url = format!("127.0.0.1:{port}");
    env.test()
        .args(&[
            "run",
            "--",
            "curl",
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}\\n",
            &url,
        ])
        .code(0)
        .stdout("200\n")
        .run();
    server.join().expect("server thread");
}

#[test]
fn nonzero_exit_is_passed_through_and_reported_on_stderr() {
    Test::new()
        .run_text("exit 3")
        .code(3)
        .stderr_has("Command exited with code 3")
        .stdout_lacks("Command exited")
        .run();
}

/// Every field of the result object (docs/PROTOCOL.md).
const RESULT_FIELDS: &[&str] = &[
    "command",
    "normalized_command",
    "stripped",
    "profile",
    "cwd",
    "final_cwd",
    "mode",
    "session",
    "exit_code",
    "signal",
    "timed_out",
    "cancelled",
    "blocked",
    "duration_ms",
    "timeout_s",
    "requested_timeout_s",
    "head",
    "tail",
    "output",
    "text",
    "truncated",
    "total_bytes",
    "total_lines",
    "output_bytes",
    "output_lines",
    "truncation",
    "artifact",
    "background_killed",
    "notices",
    "warnings",
];

#[test]
fn json_has_every_result_field() {
    let out = Test::new()
        .run_text("echo hi")
        .opts(&["--format", "json"])
        .code(0)
        .run();
    let v = out.json();
    let obj = v.as_object().expect("a JSON object");
    let missing: Vec<&&str> = RESULT_FIELDS
        .iter()
        .filter(|f| !obj.contains_key(**f))
        .collect();
    assert!(
        missing.is_empty(),
        "missing result fields {missing:?} in {v:#}"
    );
    assert_eq!(s(&v, "command"), "echo hi");
    assert_eq!(s(&v, "normalized_command"), "echo hi");
    assert!(v["stripped"].is_null());
    assert_eq!(s(&v, "profile"), "default");
    assert_eq!(s(&v, "mode"), "print");
    assert!(v["session"].is_null());
    assert_eq!(v["exit_code"], 0);
    assert!(v["signal"].is_null());
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["cancelled"], false);
    assert!(v["blocked"].is_null());
    assert!(v["duration_ms"].is_u64());
    assert_eq!(u(&v, "timeout_s"), 300);
    assert_eq!(v["requested_timeout_s"], 300);
    assert_eq!(s(&v, "output"), "hi\n");
    assert_eq!(s(&v, "text"), "hi");
    assert_eq!(v["truncated"], false);
    assert_eq!(u(&v, "total_bytes"), 3);
    assert_eq!(u(&v, "total_lines"), 1);
    assert!(v["truncation"].is_null());
    assert!(v["artifact"].is_null());
    assert_eq!(v["background_killed"], serde_json::json!([]));
    assert_eq!(v["notices"], serde_json::json!([]));
    assert_eq!(v["warnings"], serde_json::json!([]));
    // Exactly one object.
    assert_eq!(out.stdout.trim_end().lines().count(), 1, "{}", out.stdout);
}

#[test]
fn json_flag_is_format_json_and_reports_cwds() {
    let env = TestEnv::new();
    env.run_json("cd /; exit 4")
        .code(4)
        .field("exit_code", 4)
        .field("cwd", env.work().display().to_string())
        .notice_is("Command exited with code 4")
        .run();
}

/// The first line is streamed while the command is held at a gate: it cannot have
/// come from the end of the run.
#[test]
fn ndjson_streams_output_while_the_command_runs() {
    let env = TestEnv::new();
    let gate = Gate::new(&env, "b");
    let cmd = format!("echo a; {}; echo b", gate.wait());
    let mut run = env.run_text(&cmd).opts(&["--format", "ndjson"]).spawn();
    let (_, first) = run.wait_for_event("start", HANG_CAP);
    assert_eq!(first["command"], cmd.as_str());
    let (_, ev) = run.wait_for_event("output", HANG_CAP);
    assert!(s(&ev, "data").contains('a'), "{ev}");
    assert!(!gate.is_open());
    gate.open();
    let out = run.wait();
    out.assert_code(0);
    let events = out.ndjson();
    assert_eq!(events[0]["type"], "start", "first event: {}", events[0]);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result", "last event: {last}");
    assert_eq!(last["output"], "a\nb\n");
    for f in RESULT_FIELDS {
        assert!(last.get(*f).is_some(), "result event lacks {f}: {last}");
    }
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "output")
        .map(|e| e["data"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(streamed, "a\nb\n");
    assert_eq!(
        events.iter().filter(|e| e["type"] == "result").count(),
        1,
        "{events:?}"
    );
}

/// Regression (fixed): NDJSON sends `start` first; a notice known before the run (a timeout clamp)
/// must not come before it.
#[test]
fn ndjson_start_comes_before_notices() {
    let out = ndjson_with_a_clamp("echo hi", 0);
    let events = out.ndjson();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(
        events.iter().any(|e| e["type"] == "notice"
            && e["message"]
                .as_str()
                .unwrap()
                .starts_with("Timeout clamped to 3600s")),
        "no clamp notice event: {kinds:?}"
    );
    assert_eq!(kinds.first(), Some(&"start"), "event order: {kinds:?}");
    assert_eq!(kinds.last(), Some(&"result"), "event order: {kinds:?}");
}

#[test]
fn background_job_holding_the_pipe_does_not_hang() {
    let env = TestEnv::new();
    let sleep = format!("sleep 5.{}", nonce());
    let out = env
        .run_json(format!("{{ {sleep}; echo late; }} & echo immediate"))
        .code(0)
        .run();
    assert!(
        out.elapsed < scaled(Duration::from_millis(1500)),
        "took {:?}",
        out.elapsed
    );
    let v = out.json();
    assert_eq!(s(&v, "output"), "immediate\n");
    assert_none_running(&sleep, 2, "left running");
}

#[test]
fn stdin_is_the_null_device_by_default() {
    // Even with data waiting on agentbash's stdin, `cat` must not see it.
    Test::new()
        .run_json("cat")
        .stdin("should not be read\n")
        .code(0)
        .output("")
        .field("text", "(no output)")
        .run()
        .assert_ended_within(3);
}

#[test]
fn stdin_flag_passes_stdin_through() {
    Test::new()
        .run_text("cat")
        .opts(&["--stdin"])
        .stdin("piped\n")
        .code(0)
        .stdout("piped\n")
        .run();
}

/// The command has no controlling terminal even when agentbash runs on one: opening
/// /dev/tty fails at once (it cannot wait on a terminal nobody watches). `script` gives
/// agentbash a real terminal; the control shows the same command there, without
/// agentbash, does reach /dev/tty.
#[test]
fn opening_dev_tty_fails_fast() {
    if !has_program("script") {
        skip!(needs_program("script", "bsdutils"));
    }
    let env = TestEnv::new();
    let cmd = "echo via-tty > /dev/tty";
    let on_a_terminal = |inner: &str| {
        let out = env
            .program("script", &["-qec", inner, "/dev/null"])
            .env("SHELL", "/bin/sh")
            .run();
        let shown = out.stdout.replace('\r', "");
        (out, shown)
    };
    let (out, shown) = on_a_terminal(&format!("sh -c '{cmd}'"));
    out.assert_code(0);
    assert_eq!(shown, "via-tty\n", "the control did not reach /dev/tty");
    let (out, shown) = on_a_terminal(&format!("'{}' run --json -- '{cmd}'", bin().display()));
    assert_eq!(out.code(), Some(1), "{shown}");
    let v: serde_json::Value = serde_json::from_str(shown.trim())
        .unwrap_or_else(|e| panic!("not one JSON value ({e}): {shown}"));
    assert_eq!(v["exit_code"], 1, "{v}");
    assert!(
        s(&v, "output").contains("/dev/tty: No such device or address"),
        "{v}"
    );
    out.assert_ended_within(3);
}

#[test]
fn git_log_with_long_history_does_not_wait_on_a_pager() {
    let env = TestEnv::new();
    let repo = env.work().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let setup = Command::new("sh")
        .arg("-c")
        .arg(
            "git init -q . && git config user.name T && git config user.email t@example.com \
             && git config core.pager less \
             && i=1; while [ $i -le 300 ]; do git commit -q --allow-empty -m \"msg $i\" || exit 1; i=$((i+1)); done",
        )
        .current_dir(&repo)
        .env("HOME", env.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git");
    assert!(
        setup.status.success(),
        "git setup failed: {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let v = env
        .run_json("git log")
        .opts(&["-C", "repo"])
        .code(0)
        .output_has("    msg 300")
        .json();
    assert!(u(&v, "total_lines") >= 300 * 5, "{v:#}");
    let out = env
        .run_text("git log --oneline")
        .opts(&["-C", "repo"])
        .code(0)
        .run();
    assert_eq!(out.stdout.lines().count(), 300);
    assert!(out.stdout.lines().last().unwrap().ends_with("msg 1"));
}

#[test]
fn background_kill_lists_and_ends_the_job() {
    let env = TestEnv::new();
    let sleep = format!("sleep 399.{}", nonce());
    let v = env
        .run_json(format!("{sleep} & echo started"))
        .code(0)
        .output("started\n")
        .json();
    let killed = v["background_killed"]
        .as_array()
        .expect("background_killed");
    assert!(
        killed.iter().any(
            |k| k["command"].as_str().is_some_and(|c| c.contains(&sleep))
                && k["pid"].as_u64().is_some()
        ),
        "background_killed does not list {sleep:?}: {v:#}"
    );
    assert_none_running(&sleep, 2, "still running");
}

#[test]
fn background_keep_lets_the_job_survive() {
    let env = TestEnv::new();
    let sleep = format!("sleep 398.{}", nonce());
    let out = env
        .run_json(format!("{sleep} & echo started"))
        .profile_file("keep.toml", "[process]\nbackground = \"keep\"\n")
        .run();
    let alive = procs_with_cmdline(&sleep, Duration::ZERO);
    kill_cmdline(&sleep);
    out.assert_code(0);
    out.assert_ended_within(5);
    let v = out.json();
    assert_eq!(s(&v, "output"), "started\n");
    assert_eq!(v["background_killed"], serde_json::json!([]), "{v:#}");
    assert_eq!(v["notices"], serde_json::json!([]), "{v:#}");
    assert!(!alive.is_empty(), "the kept background job did not survive");
}

#[test]
fn missing_cwd_is_an_error_and_runs_nothing() {
    let env = TestEnv::new();
    let missing = format!("/nonexistent-{}", nonce());
    let out = env
        .run_text("touch ran")
        .opts(&["-C", &missing])
        .code(125)
        .run();
    assert!(
        out.stderr
            .contains(&format!("Working directory does not exist: {missing}")),
        "stderr: {:?}",
        out.stderr
    );
    assert!(!env.work().join("ran").exists());
    let out = env
        .run_json("touch ran")
        .opts(&["-C", &missing])
        .code(125)
        .run();
    assert!(
        out.json()["text"]
            .as_str()
            .unwrap()
            .contains("Working directory does not exist"),
        "{}",
        out.stdout
    );
}

#[test]
fn file_as_cwd_is_an_error() {
    let env = TestEnv::new();
    let f = env.write("f.txt", "x");
    env.run_text("true")
        .opts(&["-C", "f.txt"])
        .code(125)
        .stderr_has(format!(
            "Working directory is not a directory: {}",
            f.display()
        ))
        .run();
}

#[test]
fn relative_cwd_resolves_against_the_invoking_dir() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.work().join("a/sub")).unwrap();
    std::fs::create_dir_all(env.work().join("b")).unwrap();
    let out = env.run_json("pwd -P").opts(&["-C", "a/sub"]).code(0).run();
    let want = env.work().join("a/sub").canonicalize().unwrap();
    assert_eq!(s(&out.json(), "output"), format!("{}\n", want.display()));
    assert_eq!(
        s(&out.json(), "cwd"),
        env.work().join("a/sub").display().to_string()
    );
    let out = env
        .run_json("pwd -P")
        .opts(&["-C", "../b"])
        .current_dir(env.work().join("a"))
        .code(0)
        .run();
    let want = env.work().join("b").canonicalize().unwrap();
    assert_eq!(s(&out.json(), "output"), format!("{}\n", want.display()));
}

#[test]
fn color_always_is_accepted_in_a_pipe() {
    let env = TestEnv::new();
    for when in ["always", "never", "auto"] {
        env.run_text("echo hi")
            .opts(&["--color", when])
            .code(0)
            .stdout("hi\n")
            .run();
    }
    env.run_text("echo hi")
        .opts(&["--color", "sometimes"])
        .code(2)
        .run();
}

#[test]
fn quiet_suppresses_notices() {
    let env = TestEnv::new();
    env.run_text("echo hi; exit 3")
        .opts(&["-q", "-t", "99999"])
        .code(3)
        .stdout("hi\n")
        .stderr("")
        .run();
    // Without -q the same run does talk.
    env.run_text("echo hi; exit 3")
        .opts(&["-t", "99999"])
        .stderr_has("Timeout clamped")
        .stderr_has("Command exited with code 3")
        .run();
}

#[test]
fn a_command_exiting_124_is_not_a_timeout() {
    Test::new()
        .run_json("exit 124")
        .code(124)
        .field("timed_out", false)
        .field("exit_code", 124)
        .run();
}

#[test]
fn daemonized_job_detached_from_the_pipe_is_killed_and_listed() {
    let env = TestEnv::new();
    let sleep = format!("sleep 397.{}", nonce());
    let v = env
        .run_json(format!(
            "( setsid {sleep} > /dev/null 2>&1 < /dev/null & ) ; echo done"
        ))
        .code(0)
        .output("done\n")
        .json();
    assert_none_running(&sleep, 2, "a double-forked setsid job survived");
    assert!(
        v["background_killed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["command"].as_str().is_some_and(|c| c.contains(&sleep))),
        "{:#}",
        v["background_killed"]
    );
}

#[test]
fn auto_mode_in_a_pipe_is_print_mode() {
    Test::new()
        .run_json("test -t 1 && echo tty || echo pipe")
        .profile_file("p.toml", "[pty]\nmode = \"on\"\n")
        .field("mode", "print")
        .output("pipe\n")
        .run();
}

#[test]
fn shell_prefix_and_args_are_applied() {
    let env = TestEnv::new();
    env.run_json("printenv FOO")
        .profile_file("p.toml", "[shell]\nprefix = \"env FOO=bar\"\n")
        .output("bar\n")
        .run();
    env.run_json("echo before; false; echo after")
        .profile_file("q.toml", "[shell]\nargs = [\"-e\", \"-c\"]\n")
        .code(1)
        .output("before\n")
        .run();
    env.run_json("echo hi")
        .profile_file("r.toml", "[shell]\npath = \"sh\"\n")
        .code(0)
        .output("hi\n")
        .run();
}

#[test]
fn command_signalling_its_own_group_does_not_take_agentbash_down() {
    Test::new()
        .run_json("echo x; kill 0")
        .code(143)
        .field("signal", "SIGTERM")
        .output("x\n")
        .run();
}

#[test]
fn closing_stdout_early_still_waits_for_the_exit_status() {
    Test::new()
        .run_json("exec >/dev/null 2>&1; sleep 1; exit 5")
        .code(5)
        .run()
        .assert_lasted_at_least_ms(900);
}

#[test]
fn broken_stdout_pipe_exits_zero() {
    let env = TestEnv::new();
    let script = format!(
        "'{}' run -p ci -- 'seq 1 1000000' | head -n 1; echo \"status ${{PIPESTATUS[0]}}\"",
        crate::support::bin().display()
    );
    let out = env.program("bash", &["-c", &script]).run();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{:?}", out.stdout);
    assert_eq!(lines[1], "status 0", "stderr: {}", out.stderr);
}

/// Regression (fixed): with `render.live = "stream"` (the `ci` profile) stdout is the job
/// log, but fast output loses whole chunks: live text is coalesced for 50 ms and the
/// pending buffer is capped at 2 MiB, so `seq 1 1000000` streams e.g. `595`,
/// `168596`, ... instead of starting at `1`.
#[test]
fn stream_mode_writes_every_line_in_order() {
    let out = Test::new()
        .run_text("seq 1 1000000")
        .profile("ci")
        .code(0)
        .run();
    let gap = out
        .stdout
        .lines()
        .enumerate()
        .find(|(i, l)| *l != (i + 1).to_string());
    assert!(
        gap.is_none(),
        "streamed stdout skips lines: line {} is {:?} ({} lines streamed)",
        gap.map_or(0, |g| g.0 + 1),
        gap.map_or("", |g| g.1),
        out.stdout.lines().count()
    );
    assert_eq!(out.stdout.lines().count(), 1_000_000);
}

/// Regression (fixed): a double-forked job that calls setsid *and* clears its environment
/// (so it has neither the session nor the run marker) is reparented to agentbash (the
/// subreaper) but not recognised as part of the run, and survives it.
#[test]
fn setsid_job_with_a_cleared_env_is_still_killed() {
    let env = TestEnv::new();
    let sleep = format!("sleep 395.{}", nonce());
    let out = env.run_json(format!(
            "( setsid env -i {sleep} > /dev/null 2>&1 & ) ; until pgrep -fx '{sleep}' > /dev/null; do sleep 0.01; done; echo done"
        )).run();
    let left = procs_with_cmdline(&sleep, Duration::from_secs(2));
    kill_cmdline(&sleep);
    out.assert_code(0);
    assert!(left.is_empty(), "survived the run: {left:?}");
}

/// Regression (issue 12): `nohup python3 -m http.server &` printed the banner, exited
/// 0, and the server was silently gone. The process stopped is named where the caller
/// reads: on stderr in text mode, in `notices` and `text` in JSON.
#[test]
fn a_stopped_background_server_is_named_in_the_text() {
    let env = TestEnv::new();
    // Ends once the job is python itself (`python3` may be a shim script that execs
    // it: under load that took over the half second this once slept).
    let cmd = "nohup python3 -m http.server 0 --bind 127.0.0.1 & \
               until readlink /proc/$!/exe | grep -q python; do sleep 0.01; done";
    let notice = re(
        r#"\[Stopped 1 background process the command left running: python3[\d.]* -m http\.server 0 --bind 127\.0\.0\.1 \(pid (\d+)\)\. To keep a process running, start it as a job: `agentbash job start …` \(MCP: `bash` with `background: true`; rpc: `job_start`\)\]"#,
    );
    let out = env.run_text(cmd).code(0).run();
    assert!(notice.is_match(&out.stderr), "stderr: {:?}", out.stderr);
    assert_lacks(&out.stdout, "Stopped");

    let v = env.json_of(cmd);
    let killed = v["background_killed"]
        .as_array()
        .expect("background_killed");
    assert_eq!(killed.len(), 1, "{v:#}");
    let shown = v["notices"]
        .as_array()
        .expect("notices")
        .iter()
        .find_map(|n| notice.captures(n.as_str()?))
        .unwrap_or_else(|| panic!("no notice names the server: {v:#}"));
    assert_eq!(shown[1], killed[0]["pid"].to_string(), "{v:#}");
    assert!(notice.is_match(s(&v, "text")), "{v:#}");
    assert!(!s(&v, "output").contains("Stopped"), "{v:#}");
}

/// Regression (issue 12): the notice names the first five processes and counts the
/// rest; `background_killed` still lists every one.
#[test]
fn the_background_notice_names_five_and_counts_the_rest() {
    let env = TestEnv::new();
    let sleep = format!("sleep 373.{}", nonce());
    let v = env
        .run_json(format!(
            "for i in 1 2 3 4 5 6 7; do {sleep} & done; echo started"
        ))
        .code(0)
        .json();
    assert_eq!(
        v["background_killed"].as_array().map(Vec::len),
        Some(7),
        "{v:#}"
    );
    let notice = v["notices"]
        .as_array()
        .expect("notices")
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("[Stopped 7 background processes the command left running: "))
        .unwrap_or_else(|| panic!("no notice: {v:#}"));
    assert_eq!(notice.matches(&sleep).count(), 5, "{notice}");
    assert!(
        notice.contains(
            "; and 2 more. To keep a process running, start it as a job: `agentbash job start …`"
        ),
        "{notice}"
    );
    assert_none_running(&sleep, 2, "left running");
}
