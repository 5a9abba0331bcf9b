//! Jobs (issue 15): dev servers, printers, REPLs and full-screen programs started
//! with `agentbash job start`, read, typed into and stopped through the real binary;
//! limits (ttl, max_running) and leaks (a killed supervisor, stop, gc).

use crate::support::{LiveServer, Output, TestEnv, nonce, procs_with_cmdline, scaled, skip};
use serde_json::Value;
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

fn job(env: &TestEnv, args: &[&str]) -> Output {
    let mut a = vec!["job"];
    a.extend_from_slice(args);
    env.run(&a)
}

/// `job ARGS --json`, parsed.
#[track_caller]
fn job_json(env: &TestEnv, args: &[&str]) -> (Option<i32>, Value) {
    let mut a = vec!["job"];
    a.extend_from_slice(&args[..1]);
    a.push("--json");
    a.extend_from_slice(&args[1..]);
    let out = env.run(&a);
    (out.code(), out.json())
}

/// Poll `job output NAME --tail 200` until it contains `needle` (at most `within`).
fn wait_for_output(env: &TestEnv, name: &str, needle: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let out = job(env, &["output", name, "--tail", "200"]);
        if out.stdout.contains(needle) || Instant::now() >= deadline {
            return out.stdout;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A user profile `name` (in the test's config dir) with `toml` as its text.
fn user_profile(env: &TestEnv, name: &str, toml: &str) {
    let dir = env.config_dir().join("profiles");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.toml")), toml).unwrap();
}

#[test]
fn a_dev_server_is_ready_outlives_its_caller_and_stop_ends_it() {
    let env = TestEnv::new();
    let port = free_port().to_string();
    let bin = crate::support::bin();
    // The caller is a shell that exits right after starting the job.
    let script = format!(
        "{} job start --json --name web --ready-port {port} -- python3 -m http.server {port}; exit 0",
        bin.display()
    );
    let out = env.program("bash", &["-c", &script]).run();
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["job"]["state"], "ready", "{v}");
    assert_eq!(v["job"]["ready"], true);
    assert!(v["job"]["id"].as_str().unwrap().starts_with("job://"));
    assert!(v["job"]["pid"].as_i64().unwrap() > 0);
    assert!(
        out.elapsed < scaled(Duration::from_secs(10)),
        "took {:?}",
        out.elapsed
    );
    let url = format!("http://127.0.0.1:{port}/");
    let curl = env.run(&[
        "run",
        "--",
        &format!("curl -s -o /dev/null -w '%{{http_code}}' {url}"),
    ]);
    curl.assert_code(0);
    assert_eq!(curl.stdout.trim(), "200");
    let (code, v) = job_json(&env, &["stop", "web"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["job"]["state"], "killed");
    assert!(v["output"].as_str().unwrap().contains("GET / HTTP"), "{v}");
    let left = procs_with_cmdline(&format!("http.server {port}"), Duration::from_secs(3));
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_second_server_on_a_taken_port_exits_at_once_and_is_never_ready() {
    let env = TestEnv::new();
    let port = free_port().to_string();
    let (code, v) = job_json(
        &env,
        &[
            "start",
            "--ready-port",
            &port,
            "--",
            &format!("python3 -m http.server {port}"),
        ],
    );
    assert_eq!(code, Some(0), "{v}");
    let (code, v) = job_json(
        &env,
        &[
            "start",
            "--ready-port",
            &port,
            "--ready-timeout",
            "20",
            "--",
            &format!("python3 -m http.server {port}"),
        ],
    );
    assert_eq!(v["job"]["state"], "exited", "{v}");
    assert_eq!(v["job"]["exit_code"], 1);
    assert_eq!(code, Some(1));
    assert!(
        v["output"]
            .as_str()
            .unwrap()
            .contains("Address already in use"),
        "{v}"
    );
    job(&env, &["gc"]).assert_code(0);
}

#[test]
fn ready_waits_for_its_line_and_a_ready_timeout_leaves_the_job_running() {
    let env = TestEnv::new();
    let (code, v) = job_json(
        &env,
        &[
            "start",
            "--ready",
            "Listening on",
            "--",
            "sleep 0.3; echo Listening on 1; sleep 60",
        ],
    );
    assert_eq!(code, Some(0));
    assert_eq!(v["job"]["state"], "ready", "{v}");
    let t = Instant::now();
    let (code, v) = job_json(
        &env,
        &[
            "start",
            "--name",
            "slow",
            "--ready",
            "never printed",
            "--ready-timeout",
            "2",
            "--",
            "sleep 60",
        ],
    );
    assert_eq!(code, Some(0));
    assert!(
        t.elapsed() >= Duration::from_millis(1900) && t.elapsed() < scaled(Duration::from_secs(10))
    );
    assert_eq!(v["job"]["ready"], false, "{v}");
    assert_eq!(v["job"]["state"], "starting");
    let (_, list) = job_json(&env, &["list"]);
    let slow = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "slow")
        .cloned();
    assert_eq!(slow.unwrap()["state"], "starting");
    job(&env, &["gc"]).assert_code(0);
    assert!(env.leftovers(Duration::from_secs(3)).is_empty());
}

#[test]
fn cursor_reads_join_into_the_exact_output_and_tail_shows_the_end() {
    let env = TestEnv::new();
    let printer = "for i in $(seq 1 400); do echo \"line $i\"; sleep 0.01; done";
    let (code, v) = job_json(&env, &["start", "--name", "printer", "--", printer]);
    assert_eq!(code, Some(0), "{v}");
    let mut got = String::new();
    let mut cursor = 0u64;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, v) = job_json(
            &env,
            &[
                "output",
                "printer",
                "--cursor",
                &cursor.to_string(),
                "--wait",
                "1",
                "--max-bytes",
                "300",
            ],
        );
        got.push_str(v["output"].as_str().unwrap());
        cursor = v["next"].as_u64().unwrap();
        let running = matches!(v["job"]["state"].as_str(), Some("starting" | "ready"));
        if (!running && v["more"] == false) || Instant::now() >= deadline {
            break;
        }
    }
    let want: String = (1..=400).map(|i| format!("line {i}\n")).collect();
    assert_eq!(got, want);
    let tail = job(&env, &["output", "printer", "--tail", "20"]);
    let want: String = (381..=400).map(|i| format!("line {i}\n")).collect();
    assert_eq!(tail.stdout, want);
}

#[test]
fn a_huge_printer_keeps_its_log_bounded() {
    let env = TestEnv::new();
    user_profile(
        &env,
        "small",
        "extends = \"default\"\n[jobs]\nlog_max_bytes = 1048576\n",
    );
    let (code, v) = job_json(
        &env,
        &[
            "start",
            "-p",
            "small",
            "--name",
            "flood",
            "--",
            "head -c 268435456 /dev/zero | tr '\\0' x; echo; echo done",
        ],
    );
    assert_eq!(code, Some(0), "{v}");
    let out = wait_for_output(&env, "flood", "done", Duration::from_secs(120));
    assert!(
        out.ends_with("done\n"),
        "{}",
        &out[out.len().saturating_sub(200)..]
    );
    let dir = env.state_dir().join("jobs").join(
        v["job"]["id"]
            .as_str()
            .unwrap()
            .trim_start_matches("job://"),
    );
    let logged: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("log."))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(logged <= 1 << 20, "{logged} bytes of log");
    let (_, v) = job_json(&env, &["output", "flood", "--cursor", "0"]);
    assert!(
        v["dropped"].as_u64().unwrap() > 200 << 20,
        "{}",
        v["dropped"]
    );
}

#[test]
fn a_python_repl_on_a_pty_answers_and_c_c_interrupts() {
    let env = TestEnv::new();
    let (code, v) = job_json(
        &env,
        &["start", "--pty", "--name", "py", "--", "python3 -q"],
    );
    assert_eq!(code, Some(0), "{v}");
    wait_for_output(&env, "py", ">>>", Duration::from_secs(20));
    job(
        &env,
        &["send", "py", "--text", "print(6*7)", "--keys", "Enter"],
    )
    .assert_code(0);
    let out = wait_for_output(&env, "py", "42", Duration::from_secs(20));
    assert!(out.lines().any(|l| l.trim() == "42"), "{out}");
    // The loop says it has started ("spin" + "ning": the echoed line never holds the
    // word), and C-c is sent only once that is seen.
    job(
        &env,
        &[
            "send",
            "py",
            "--text",
            "print('spin' + 'ning'); exec('while True: pass')",
            "--keys",
            "Enter",
        ],
    )
    .assert_code(0);
    let out = wait_for_output(&env, "py", "spinning", Duration::from_secs(20));
    assert!(out.lines().any(|l| l.trim() == "spinning"), "{out}");
    job(&env, &["send", "py", "--keys", "C-c"]).assert_code(0);
    let out = wait_for_output(&env, "py", "KeyboardInterrupt", Duration::from_secs(20));
    assert!(out.contains("KeyboardInterrupt"), "{out}");
    // The REPL itself lived through it and answers again.
    job(
        &env,
        &["send", "py", "--text", "print(6*9)", "--keys", "Enter"],
    )
    .assert_code(0);
    let out = wait_for_output(&env, "py", "54", Duration::from_secs(20));
    assert!(out.lines().any(|l| l.trim() == "54"), "{out}");
    let (_, v) = job_json(&env, &["list"]);
    assert_eq!(v["jobs"][0]["state"], "ready", "{v}");
    job(&env, &["stop", "py"]).assert_code(0);
    assert!(env.leftovers(Duration::from_secs(3)).is_empty());
}

#[test]
fn the_screen_of_a_curses_program_reads_as_rows() {
    let env = TestEnv::new();
    let tag = nonce();
    let prog = format!(
        "python3 -c 'import curses\ndef main(s):\n    s.addstr(5, 10, \"HELLO SCREEN {tag}\")\n    s.refresh()\n    s.getch()\ncurses.wrapper(main)'"
    );
    let (code, v) = job_json(
        &env,
        &[
            "start", "--pty", "--name", "tui", "--ready", "HELLO", "--", &prog,
        ],
    );
    assert_eq!(code, Some(0), "{v}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let rows = loop {
        let (_, v) = job_json(&env, &["output", "tui", "--screen"]);
        let rows: Vec<String> = v["screen"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|x| x.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default();
        if rows.iter().any(|r| r.contains(&tag)) || Instant::now() >= deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        rows.get(5).map(|r| r.trim()),
        Some(format!("HELLO SCREEN {tag}").as_str()),
        "{rows:?}"
    );
    assert!(rows[5].starts_with("          HELLO"), "{rows:?}");
    job(&env, &["stop", "tui"]).assert_code(0);
}

#[test]
fn a_stdin_job_takes_what_is_sent_through_a_pipe() {
    let env = TestEnv::new();
    let (code, v) = job_json(&env, &["start", "--stdin", "--name", "echo", "--", "cat"]);
    assert_eq!(code, Some(0), "{v}");
    job(
        &env,
        &["send", "echo", "--text", "hello through the pipe\n"],
    )
    .assert_code(0);
    let out = wait_for_output(
        &env,
        "echo",
        "hello through the pipe",
        Duration::from_secs(10),
    );
    assert_eq!(out, "hello through the pipe\n");
    let refused = job(&env, &["send", "nope", "--text", "x"]);
    refused.assert_code(125);
    job(&env, &["stop", "echo"]).assert_code(0);
}

#[test]
fn ttl_ends_a_job_on_time() {
    let env = TestEnv::new();
    let (_, v) = job_json(
        &env,
        &["start", "--ttl", "1", "--name", "brief", "--", "sleep 60"],
    );
    assert_eq!(v["job"]["ttl"], 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    let v = loop {
        let (_, v) = job_json(&env, &["list"]);
        let j = v["jobs"][0].clone();
        if j["state"] != "ready" || Instant::now() >= deadline {
            break j;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(v["state"], "killed", "{v}");
    assert!(v["reason"].as_str().unwrap().starts_with("ttl"), "{v}");
    assert!(env.leftovers(Duration::from_secs(3)).is_empty());
}

#[test]
fn max_running_refuses_the_next_start_naming_the_running_jobs() {
    let env = TestEnv::new();
    user_profile(
        &env,
        "one",
        "extends = \"default\"\n[jobs]\nmax_running = 1\n",
    );
    job(
        &env,
        &["start", "-p", "one", "--name", "first", "--", "sleep 60"],
    )
    .assert_code(0);
    let out = job(
        &env,
        &["start", "-p", "one", "--name", "second", "--", "sleep 61"],
    );
    out.assert_code(125);
    assert!(out.stderr.contains("jobs.max_running"), "{}", out.stderr);
    assert!(out.stderr.contains("job://1 first"), "{}", out.stderr);
    job(&env, &["gc"]).assert_code(0);
    assert!(env.leftovers(Duration::from_secs(3)).is_empty());
}

#[test]
fn a_killed_supervisor_leaves_a_lost_job_and_no_process() {
    let env = TestEnv::new();
    let n = nonce();
    let cmd = format!("sleep 371.{n} & sleep 372.{n}");
    let (code, v) = job_json(&env, &["start", "--name", "doomed", "--", &cmd]);
    assert_eq!(code, Some(0), "{v}");
    let sup = v["job"]["supervisor_pid"].as_i64().unwrap() as i32;
    assert!(!procs_with_cmdline(&format!("sleep 371.{n}"), Duration::ZERO).is_empty());
    // SAFETY: kill(2) of the supervisor this test started.
    unsafe {
        libc::kill(sup, libc::SIGKILL);
    }
    // Dead once /proc has no live process of that pid (gone, or a zombie).
    let deadline = Instant::now() + crate::support::HANG_CAP;
    while std::fs::read_to_string(format!("/proc/{sup}/stat"))
        .is_ok_and(|s| s.rfind(')').is_some_and(|i| !s[i + 2..].starts_with('Z')))
    {
        assert!(Instant::now() < deadline, "the supervisor survived SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }
    // (A zombie is reaped by its parent soon after; until then it may look alive.)
    let v = loop {
        let (_, v) = job_json(&env, &["list"]);
        if v["jobs"][0]["state"] != "ready" || Instant::now() >= deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(v["jobs"][0]["state"], "lost", "{v}");
    let left = procs_with_cmdline(&format!(".{n}"), Duration::from_secs(3));
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// On a directory the test creates and protects, never on a real one: the control (the
/// same job on an unprotected sibling) shows the job would have deleted it.
#[test]
fn the_guard_refuses_a_job_as_it_refuses_a_run() {
    let env = TestEnv::new();
    let precious = env.work().join("precious");
    let scratch = env.work().join("scratch");
    for dir in [&precious, &scratch] {
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::write(dir.join("inner/data"), "keep").unwrap();
    }
    user_profile(
        &env,
        "guarded",
        &format!(
            "extends = \"default\"\n[guard]\nprotected = [\"/\", \"~\", {:?}]\n",
            precious.display().to_string()
        ),
    );
    let rm = |dir: &std::path::Path| format!("rm -rf {}", dir.display());
    let out = job(&env, &["start", "-p", "guarded", "--", &rm(&precious)]);
    out.assert_code(77);
    assert!(
        out.stderr
            .starts_with("agentbash: Refused: `rm` would recursively delete"),
        "{}",
        out.stderr
    );
    let (_, v) = job_json(&env, &["list"]);
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(0), "{v}");
    assert!(precious.join("inner/data").exists(), "the job ran");
    // The control: the same job on the unprotected sibling starts, runs and deletes it.
    let (code, v) = job_json(
        &env,
        &[
            "start",
            "-p",
            "guarded",
            "--name",
            "rm",
            "--",
            &rm(&scratch),
        ],
    );
    assert_eq!(code, Some(0), "{v}");
    let deadline = Instant::now() + crate::support::HANG_CAP;
    while scratch.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !scratch.exists(),
        "the control job never deleted its directory"
    );
    assert!(precious.join("inner/data").exists());
}

#[test]
fn rpc_starts_reads_and_stops_a_job_and_stops_its_own_jobs_at_exit() {
    let env = TestEnv::new();
    let n = nonce();
    let requests = format!(
        "{}\n{}\n{}\n",
        // Requests run concurrently: the read may come before the start answers.
        serde_json::json!({"id": 1, "type": "job_start", "command": format!("echo up; sleep 373.{n}"), "name": "kept", "ready": "up"}),
        serde_json::json!({"id": 2, "type": "job_start", "command": format!("sleep 374.{n}"), "name": "owned"}),
        serde_json::json!({"id": 3, "type": "job_output", "job": "kept", "wait": 2}),
    );
    let out = env.cmd(&["rpc"]).stdin(requests).run();
    out.assert_code(0);
    let answers: Vec<Value> = out.ndjson();
    let by_id = |id: i64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(by_id(1)["success"], true, "{answers:?}");
    assert_eq!(by_id(1)["data"]["job"]["state"], "ready");
    let read = by_id(3);
    assert!(
        read["data"]["output"] == "up\n"
            || read["error"]
                .as_str()
                .is_some_and(|e| e.contains("no job kept")),
        "{read}"
    );
    assert_eq!(job(&env, &["output", "kept"]).stdout, "up\n");
    // Neither was detached: the server stopped both as it exited.
    let (_, v) = job_json(&env, &["list"]);
    for j in v["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "killed", "{v}");
        assert_eq!(j["reason"], "server exit", "{v}");
    }
    assert!(procs_with_cmdline(&format!(".{n}"), Duration::from_secs(3)).is_empty());
}

/// The detached job's own process is alive after the server is gone (checked in
/// /proc, not only in the job's record), and `stop` ends it.
#[test]
fn rpc_jobs_started_detached_outlive_the_server() {
    let env = TestEnv::new();
    let sleep = format!("sleep 375.{}", nonce());
    let req = serde_json::json!({"id": 1, "type": "job_start", "command": sleep, "name": "free", "detached": true});
    let out = env.cmd(&["rpc"]).stdin(format!("{req}\n")).run();
    out.assert_code(0);
    assert!(out.stdout.contains("\"success\":true"), "{}", out.stdout);
    let (_, v) = job_json(&env, &["list"]);
    assert_eq!(v["jobs"][0]["state"], "ready", "{v}");
    // (Ready as soon as it is started: its shell may not have become `sleep` yet.)
    assert!(
        crate::support::wait_for_cmdline(&sleep, crate::support::HANG_CAP),
        "the detached job's {sleep} is gone with the server"
    );
    job(&env, &["stop", "free"]).assert_code(0);
    let left = procs_with_cmdline(&sleep, Duration::from_secs(3));
    assert!(left.is_empty(), "stop left it running: {left:?}");
}

#[test]
fn idle_timeout_stops_a_run_that_prints_nothing() {
    let env = TestEnv::new();
    user_profile(
        &env,
        "idle",
        "extends = \"default\"\n[jobs]\nidle_timeout = 1\n",
    );
    let out = env.run(&["run", "-p", "idle", "--", "echo hi; sleep 30"]);
    out.assert_code(124);
    assert!(
        out.elapsed < scaled(Duration::from_secs(10)),
        "took {:?}",
        out.elapsed
    );
    assert_eq!(out.stdout, "hi\n");
    assert!(
        out.stderr.contains("[No output for 1 second; stopped]"),
        "{}",
        out.stderr
    );
    // Output keeps it alive: a line every 0.3 s for 2 s is never idle for 1 s.
    let out = env.run(&[
        "run",
        "-p",
        "idle",
        "--",
        "for i in 1 2 3 4 5 6; do echo $i; sleep 0.3; done",
    ]);
    out.assert_code(0);
}

#[test]
fn idle_timeout_stops_a_pty_run_that_prints_nothing() {
    let env = TestEnv::new();
    user_profile(
        &env,
        "idle",
        "extends = \"default\"\n[jobs]\nidle_timeout = 1\n",
    );
    let n = nonce();
    let cmd = format!("echo hi; sleep 30.{n}");
    let out = env.run(&["run", "-p", "idle", "--pty", "--", &cmd]);
    out.assert_code(124);
    assert!(
        out.elapsed < scaled(Duration::from_secs(10)),
        "took {:?}",
        out.elapsed
    );
    assert!(out.stdout.contains("hi"), "{}", out.stdout);
    assert!(
        out.stderr.contains("[No output for 1 second; stopped]"),
        "{}",
        out.stderr
    );
    assert!(procs_with_cmdline(&format!("sleep 30.{n}"), Duration::from_secs(3)).is_empty());
}

#[test]
fn the_sandbox_confines_a_job_as_it_confines_a_run() {
    let env = TestEnv::new();
    let run = env.run(&[
        "run",
        "--sandbox",
        "read-only",
        "--",
        "touch probe-run; echo rc=$?",
    ]);
    if !run.stdout.contains("rc=1") {
        skip!(
            format!(
                "the sandbox cannot enforce read-only here (a sandboxed touch said {:?})",
                run.stdout.trim()
            ),
            "run as root on a kernel with Landlock or mount namespaces, as .ci/run does"
        );
    }
    let (code, v) = job_json(
        &env,
        &[
            "start",
            "--sandbox",
            "read-only",
            "--name",
            "boxed",
            "--ready",
            "done",
            "--",
            "touch probe-job; echo rc=$?; echo done; sleep 30",
        ],
    );
    assert_eq!(code, Some(0), "{v}");
    let out = job(&env, &["output", "boxed"]);
    assert!(out.stdout.contains("rc=1"), "{}", out.stdout);
    assert!(!env.work().join("probe-job").exists());
    job(&env, &["stop", "boxed"]).assert_code(0);
}

#[test]
fn jobs_of_a_sigkilled_rpc_server_stop_unless_detached() {
    let env = TestEnv::new();
    let n = nonce();
    let mut rpc = LiveServer::start(&env, &["rpc"]);
    let owned = rpc.ask(serde_json::json!({"id": 1, "type": "job_start",
        "command": format!("sleep 381.{n} & sleep 382.{n}"), "name": "owned"}));
    assert_eq!(owned["success"], true, "{owned}");
    let free = rpc.ask(serde_json::json!({"id": 2, "type": "job_start",
        "command": format!("sleep 383.{n}"), "name": "free", "detached": true}));
    assert_eq!(free["success"], true, "{free}");
    assert!(!procs_with_cmdline(&format!("sleep 381.{n}"), Duration::ZERO).is_empty());
    rpc.sigkill();
    let list = || {
        let (_, v) = job_json(&env, &["list"]);
        v
    };
    let job_named = |v: &Value, name: &str| {
        v["jobs"]
            .as_array()
            .and_then(|a| a.iter().find(|j| j["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    let gone = || {
        ["381", "382"]
            .iter()
            .all(|t| procs_with_cmdline(&format!("sleep {t}.{n}"), Duration::ZERO).is_empty())
    };
    // Within 2 s its processes are gone and the record says how it ended.
    let deadline = Instant::now() + scaled(Duration::from_secs(2));
    let mut v = list();
    while !(gone() && job_named(&v, "owned")["state"] != "ready") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        v = list();
    }
    for tag in ["381", "382"] {
        let left = procs_with_cmdline(&format!("sleep {tag}.{n}"), Duration::ZERO);
        assert!(left.is_empty(), "outlived a SIGKILLed rpc: {left:?}");
    }
    let state = |name: &str| job_named(&v, name);
    assert_eq!(state("owned")["state"], "killed", "{v}");
    assert_eq!(state("owned")["reason"], "server exit", "{v}");
    assert_eq!(state("free")["state"], "ready", "{v}");
    assert!(!procs_with_cmdline(&format!("sleep 383.{n}"), Duration::ZERO).is_empty());
    job(&env, &["stop", "free"]).assert_code(0);
    assert!(procs_with_cmdline(&format!(".{n}"), Duration::from_secs(3)).is_empty());
}

#[test]
fn background_after_turns_a_long_rpc_run_into_a_job_and_leaves_a_short_one_alone() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.config_dir().join("profiles")).unwrap();
    for (name, secs, idle) in [("after5", 5, 2), ("after1", 1, 0)] {
        std::fs::write(
            env.config_dir().join(format!("profiles/{name}.toml")),
            format!(
                "extends = \"default\"\n[jobs]\nbackground_after = {secs}\nidle_timeout = {idle}\n"
            ),
        )
        .unwrap();
    }
    // Ends within the wait: a normal result.
    let mut rpc = LiveServer::start(&env, &["rpc", "-p", "after5"]);
    let short =
        rpc.ask(serde_json::json!({"id": 1, "type": "bash", "command": "sleep 1; echo done"}));
    assert_eq!(short["success"], true, "{short}");
    assert_eq!(short["data"]["exit_code"], 0, "{short}");
    assert_eq!(short["data"]["output"], "done\n", "{short}");
    assert_eq!(short["data"]["text"], "done", "{short}");
    assert!(short["data"].get("job").is_none(), "{short}");
    let failing =
        rpc.ask(serde_json::json!({"id": 2, "type": "bash", "command": "echo no; exit 3"}));
    assert_eq!(failing["data"]["exit_code"], 3, "{failing}");
    assert!(
        failing["data"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Command exited with code 3")),
        "{failing}"
    );
    // Silent for idle_timeout within the wait: stopped as the run would be.
    let asked = Instant::now();
    let silent =
        rpc.ask(serde_json::json!({"id": 3, "type": "bash", "command": "echo hi; sleep 30"}));
    assert!(asked.elapsed() < scaled(Duration::from_secs(5)), "{silent}");
    assert_eq!(silent["data"]["exit_code"], 124, "{silent}");
    assert_eq!(
        silent["data"]["text"], "[No output for 2 seconds; stopped]\nhi",
        "{silent}"
    );
    drop(rpc);

    // Still going after 1 s: the job id and the first lines; job_output reads the rest.
    let mut rpc = LiveServer::start(&env, &["rpc", "-p", "after1"]);
    let cmd = "for i in $(seq 1 50); do echo $i; sleep 0.2; done";
    let long = rpc.ask(serde_json::json!({"id": 1, "type": "bash", "command": cmd}));
    assert_eq!(long["success"], true, "{long}");
    let data = &long["data"];
    let id = data["job"]["id"].as_str().expect("a job id").to_string();
    let text = data["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with(&format!(
            "[Still running after 1 second; continues as {id} — read it with job_output"
        )),
        "{text}"
    );
    let mut all = data["output"].as_str().unwrap_or_default().to_string();
    assert!(all.starts_with("1\n"), "{all}");
    assert!(all.lines().count() < 40, "{all}");
    let mut cursor = data["job"]["cursor"].as_u64().expect("a cursor");
    let deadline = Instant::now() + Duration::from_secs(30);
    for n in 2.. {
        let r = rpc.ask(serde_json::json!({"id": n, "type": "job_output", "job": id, "cursor": cursor, "wait": 2}));
        let d = &r["data"];
        all.push_str(d["output"].as_str().unwrap_or_default());
        cursor = d["next"].as_u64().expect("next");
        if d["job"]["state"] == "exited" && d["more"] == false && d["output"] == "" {
            assert_eq!(d["job"]["exit_code"], 0, "{r}");
            break;
        }
        assert!(Instant::now() < deadline, "never ended: {r}");
    }
    let want: String = (1..=50).map(|i| format!("{i}\n")).collect();
    assert_eq!(all, want);
}
