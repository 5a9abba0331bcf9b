//! Jobs (issue 15): dev servers, printers, REPLs and full-screen programs started
//! with `agentbash job start`, read, typed into and stopped through the real binary;
//! limits (ttl, max_running) and leaks (a killed supervisor, stop, gc).

use crate::support::{
    LiveServer, Output, TestEnv, assert_has, assert_lacks, assert_none_running, assert_starts_with,
    nonce, procs_with_cmdline, scaled, skip,
};
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

/// What a run stopped by `jobs.idle_timeout = 1` says.
const IDLE_STOP: &str = "[No output for 1 second; stopped]";

/// `job stop NAME`, which must succeed.
#[track_caller]
fn stop_job(env: &TestEnv, name: &str) {
    job(env, &["stop", name]).assert_code(0);
}

/// [`stop_job`], after which nothing of the env's is left running.
#[track_caller]
fn stop_job_leaving_nothing(env: &TestEnv, name: &str) {
    stop_job(env, name);
    assert!(env.leftovers(Duration::from_secs(3)).is_empty());
}

/// Types `text` and Enter into the job's terminal.
#[track_caller]
fn type_line(env: &TestEnv, name: &str, text: &str) {
    job(env, &["send", name, "--text", text, "--keys", "Enter"]).assert_code(0);
}

/// An env with the user profile `idle`, which stops a run after 1 s without output.
fn idle_env() -> TestEnv {
    let env = TestEnv::new();
    jobs_profile(&env, "idle", "idle_timeout = 1");
    env
}

/// The user profile `name`: the default one with these `[jobs]` settings.
fn jobs_profile(env: &TestEnv, name: &str, settings: &str) {
    env.user_profile(
        name,
        &format!("extends = \"default\"\n[jobs]\n{settings}\n"),
    );
}

/// `job start --json OPTS -- command`, parsed.
#[track_caller]
fn start_job(env: &TestEnv, opts: &[&str], command: &str) -> (Option<i32>, Value) {
    let mut args = vec!["start"];
    args.extend_from_slice(opts);
    args.extend(["--", command]);
    job_json(env, &args)
}

/// [`start_job`], which must succeed: its JSON.
#[track_caller]
fn started(env: &TestEnv, opts: &[&str], command: &str) -> Value {
    let (code, v) = start_job(env, opts, command);
    assert_eq!(code, Some(0), "{v}");
    v
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
    let n = v["job"]["id"].as_u64().expect("a job number");
    assert_eq!(v["job"]["url"], format!("job://{n}"));
    assert!(v["job"]["pid"].as_i64().unwrap() > 0);
    out.assert_ended_within(10);
    let url = format!("http://127.0.0.1:{port}/");
    let curl = env
        .run_text(format!("curl -s -o /dev/null -w '%{{http_code}}' {url}"))
        .code(0)
        .run();
    assert_eq!(curl.stdout.trim(), "200");
    let (code, v) = job_json(&env, &["stop", "web"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["job"]["state"], "killed");
    assert!(v["output"].as_str().unwrap().contains("GET / HTTP"), "{v}");
    assert_none_running(&format!("http.server {port}"), 3, "left behind");
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
    stop_job(&env, "1");
}

#[test]
fn ready_waits_for_its_line_and_a_ready_timeout_leaves_the_job_running() {
    let env = TestEnv::new();
    let (code, v) = start_job(
        &env,
        &["--ready", "Listening on"],
        "sleep 0.3; echo Listening on 1; sleep 60",
    );
    assert_eq!(code, Some(0));
    assert_eq!(v["job"]["state"], "ready", "{v}");
    let t = Instant::now();
    let (code, v) = start_job(
        &env,
        &[
            "--name",
            "slow",
            "--ready",
            "never printed",
            "--ready-timeout",
            "2",
        ],
        "sleep 60",
    );
    assert_eq!(code, Some(0));
    assert!(
        t.elapsed() >= Duration::from_millis(1900) && t.elapsed() < scaled(Duration::from_secs(10))
    );
    assert_eq!(v["job"]["ready"], false, "{v}");
    assert_eq!(v["job"]["state"], "running");
    let (_, list) = job_json(&env, &["list"]);
    let slow = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "slow")
        .cloned();
    let slow = slow.unwrap();
    assert_eq!(slow["state"], "running");
    assert_eq!(slow["ready"], false);
    stop_job(&env, "1");
    stop_job_leaving_nothing(&env, "slow");
}

#[test]
fn cursor_reads_join_into_the_exact_output_and_tail_shows_the_end() {
    let env = TestEnv::new();
    let printer = "for i in $(seq 1 400); do echo \"line $i\"; sleep 0.01; done";
    started(&env, &["--name", "printer"], printer);
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
        let running = matches!(v["job"]["state"].as_str(), Some("running" | "ready"));
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
    jobs_profile(&env, "small", "log_max_bytes = 1048576");
    let v = started(
        &env,
        &["-p", "small", "--name", "flood"],
        "head -c 268435456 /dev/zero | tr '\\0' x; echo; echo done",
    );
    let out = wait_for_output(&env, "flood", "done", Duration::from_secs(120));
    assert!(
        out.ends_with("done\n"),
        "{}",
        &out[out.len().saturating_sub(200)..]
    );
    let dir = env
        .state_dir()
        .join("jobs")
        .join(v["job"]["id"].to_string())
        .join("log");
    let logged: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(logged <= 1 << 20, "{logged} bytes of log");
    // The head is kept too: a read from the start gets the first bytes, and the
    // read after it skips the dropped middle, saying how much.
    let (_, v) = job_json(
        &env,
        &["output", "flood", "--cursor", "0", "--max-bytes", "2000000"],
    );
    let head = v["output"].as_str().unwrap();
    assert!(
        head.len() > 300_000 && head.bytes().all(|b| b == b'x'),
        "{}",
        head.len()
    );
    assert_eq!(v["skipped_bytes"], 0, "{v}");
    let next = v["next"].to_string();
    let (_, v) = job_json(
        &env,
        &["output", "flood", "--cursor", &next, "--max-bytes", "10"],
    );
    assert!(
        v["skipped_bytes"].as_u64().unwrap() > 200 << 20,
        "{}",
        v["skipped_bytes"]
    );
}

#[test]
fn a_python_repl_on_a_pty_answers_and_c_c_interrupts() {
    let env = TestEnv::new();
    started(&env, &["--pty", "--name", "py"], "python3 -q");
    wait_for_output(&env, "py", ">>>", Duration::from_secs(20));
    type_line(&env, "py", "print(6*7)");
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
    assert_has(&out, "KeyboardInterrupt");
    // The REPL itself lived through it and answers again.
    type_line(&env, "py", "print(6*9)");
    let out = wait_for_output(&env, "py", "54", Duration::from_secs(20));
    assert!(out.lines().any(|l| l.trim() == "54"), "{out}");
    let (_, v) = job_json(&env, &["list"]);
    assert_eq!(v["jobs"][0]["state"], "running", "{v}");
    stop_job_leaving_nothing(&env, "py");
}

#[test]
fn the_screen_of_a_curses_program_reads_as_rows() {
    let env = TestEnv::new();
    let tag = nonce();
    let prog = format!(
        "python3 -c 'import curses\ndef main(s):\n    s.addstr(5, 10, \"HELLO SCREEN {tag}\")\n    s.refresh()\n    s.getch()\ncurses.wrapper(main)'"
    );
    started(&env, &["--pty", "--name", "tui", "--ready", "HELLO"], &prog);
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
    stop_job(&env, "tui");
}

#[test]
fn a_stdin_job_takes_what_is_sent_through_a_pipe() {
    let env = TestEnv::new();
    started(&env, &["--stdin", "--name", "echo"], "cat");
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
    stop_job(&env, "echo");
}

#[test]
fn ttl_ends_a_job_on_time() {
    let env = TestEnv::new();
    let (_, v) = start_job(&env, &["--ttl", "1", "--name", "brief"], "sleep 60");
    assert_eq!(v["job"]["ttl"], 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    let v = loop {
        let (_, v) = job_json(&env, &["list", "--all"]);
        let j = v["jobs"][0].clone();
        if j["state"] != "running" || Instant::now() >= deadline {
            break j;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(v["state"], "timed_out", "{v}");
    assert!(v["reason"].as_str().unwrap().starts_with("ttl"), "{v}");
    assert!(env.leftovers(Duration::from_secs(3)).is_empty());
}

#[test]
fn max_running_refuses_the_next_start_naming_the_running_jobs() {
    let env = TestEnv::new();
    jobs_profile(&env, "one", "max_running = 1");
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
    assert_has(&out.stderr, "jobs.max_running");
    assert_has(&out.stderr, "job://1 first");
    stop_job_leaving_nothing(&env, "first");
}

#[test]
fn a_killed_supervisor_leaves_a_lost_job_and_no_process() {
    let env = TestEnv::new();
    let n = nonce();
    let cmd = format!("sleep 371.{n} & sleep 372.{n}");
    let v = started(&env, &["--name", "doomed"], &cmd);
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
        let (_, v) = job_json(&env, &["list", "--all"]);
        if v["jobs"][0]["state"] == "lost" || Instant::now() >= deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(v["jobs"][0]["state"], "lost", "{v}");
    assert_none_running(&format!(".{n}"), 3, "left behind");
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
    env.user_profile(
        "guarded",
        &format!(
            "extends = \"default\"\n[guard]\nprotected = [\"/\", \"~\", {:?}]\n",
            precious.display().to_string()
        ),
    );
    let rm = |dir: &std::path::Path| format!("rm -rf {}", dir.display());
    let out = job(&env, &["start", "-p", "guarded", "--", &rm(&precious)]);
    out.assert_code(77);
    assert_starts_with(
        &out.stderr,
        "agentbash: Refused: `rm` would recursively delete",
    );
    let (_, v) = job_json(&env, &["list", "--all"]);
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
    let mut server = env.rpc(&[]);
    let started = server.ask(serde_json::json!({"id": 1, "type": "job_start", "command": format!("echo up; sleep 373.{n}"), "name": "kept", "ready": "up"}));
    assert_eq!(started["success"], true, "{started}");
    assert_eq!(started["data"]["job"]["state"], "ready", "{started}");
    let owned = server.ask(serde_json::json!({"id": 2, "type": "job_start", "command": format!("sleep 374.{n}"), "name": "owned"}));
    assert_eq!(owned["success"], true, "{owned}");
    let read =
        server.ask(serde_json::json!({"id": 3, "type": "job_output", "job": "kept", "wait": 2}));
    assert_eq!(read["data"]["output"], "up\n", "{read}");
    assert!(server.close().success());
    assert_eq!(job(&env, &["output", "kept"]).stdout, "up\n");
    // Neither was detached: the server stopped both as it exited.
    let (_, v) = job_json(&env, &["list", "--all"]);
    for j in v["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "killed", "{v}");
        assert_eq!(j["reason"], "server exit", "{v}");
    }
    assert_none_running(&format!(".{n}"), 3, "left running");
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
    assert_has(&out.stdout, "\"success\":true");
    let (_, v) = job_json(&env, &["list"]);
    assert_eq!(v["jobs"][0]["state"], "running", "{v}");
    // (Running as soon as it is started: its shell may not have become `sleep` yet.)
    assert!(
        crate::support::wait_for_cmdline(&sleep, crate::support::HANG_CAP),
        "the detached job's {sleep} is gone with the server"
    );
    stop_job(&env, "free");
    assert_none_running(&sleep, 3, "stop left it running");
}

#[test]
fn idle_timeout_stops_a_run_that_prints_nothing() {
    let env = idle_env();
    let out = env
        .run_text("echo hi; sleep 30")
        .profile("idle")
        .code(124)
        .stderr_has(IDLE_STOP)
        .run();
    out.assert_ended_within(10);
    assert_eq!(out.stdout, "hi\n");
    // Output keeps it alive: a line every 0.3 s for 2 s is never idle for 1 s.
    env.run_text("for i in 1 2 3 4 5 6; do echo $i; sleep 0.3; done")
        .profile("idle")
        .code(0)
        .run();
}

#[test]
fn idle_timeout_stops_a_pty_run_that_prints_nothing() {
    let env = idle_env();
    let n = nonce();
    let cmd = format!("echo hi; sleep 30.{n}");
    let out = env
        .run_text(&cmd)
        .opts(&["-p", "idle", "--pty"])
        .code(124)
        .stderr_has(IDLE_STOP)
        .run();
    out.assert_ended_within(10);
    assert_has(&out.stdout, "hi");
    assert_none_running(&format!("sleep 30.{n}"), 3, "left running");
}

#[test]
fn the_sandbox_confines_a_job_as_it_confines_a_run() {
    let env = TestEnv::new();
    // The control: a run under the same sandbox cannot write either.
    let touch = "touch probe-run; echo rc=$?";
    let run = env.run_text(touch).opts(&["--sandbox", "read-only"]).run();
    if !run.stdout.contains("rc=1") {
        skip!(
            format!(
                "the sandbox cannot enforce read-only here (a sandboxed touch said {:?})",
                run.stdout.trim()
            ),
            "run as root on a kernel with Landlock or mount namespaces, as .ci/run does"
        );
    }
    started(
        &env,
        &[
            "--sandbox",
            "read-only",
            "--name",
            "boxed",
            "--ready",
            "done",
        ],
        "touch probe-job; echo rc=$?; echo done; sleep 30",
    );
    let out = job(&env, &["output", "boxed"]);
    assert_has(&out.stdout, "rc=1");
    assert!(!env.work().join("probe-job").exists());
    stop_job(&env, "boxed");
}

#[test]
fn jobs_of_a_sigkilled_rpc_server_stop_unless_detached() {
    let env = TestEnv::new();
    let n = nonce();
    let mut rpc = env.rpc(&[]);
    let owned = rpc.ask(serde_json::json!({"id": 1, "type": "job_start",
        "command": format!("sleep 381.{n} & sleep 382.{n}"), "name": "owned"}));
    assert_eq!(owned["success"], true, "{owned}");
    let free = rpc.ask(serde_json::json!({"id": 2, "type": "job_start",
        "command": format!("sleep 383.{n}"), "name": "free", "detached": true}));
    assert_eq!(free["success"], true, "{free}");
    assert!(!procs_with_cmdline(&format!("sleep 381.{n}"), Duration::ZERO).is_empty());
    rpc.sigkill();
    let list = || {
        let (_, v) = job_json(&env, &["list", "--all"]);
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
    while !(gone() && job_named(&v, "owned")["state"] != "running") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        v = list();
    }
    for tag in ["381", "382"] {
        assert_none_running(&format!("sleep {tag}.{n}"), 0, "outlived a SIGKILLed rpc");
    }
    let state = |name: &str| job_named(&v, name);
    assert_eq!(state("owned")["state"], "killed", "{v}");
    assert_eq!(state("owned")["reason"], "server exit", "{v}");
    assert_eq!(state("free")["state"], "running", "{v}");
    assert!(!procs_with_cmdline(&format!("sleep 383.{n}"), Duration::ZERO).is_empty());
    stop_job(&env, "free");
    assert_none_running(&format!(".{n}"), 3, "left running");
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
    let mut rpc = env.rpc(&["-p", "after5"]);
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
    let mut rpc = env.rpc(&["-p", "after1"]);
    let cmd = "for i in $(seq 1 50); do echo $i; sleep 0.2; done";
    let long = rpc.ask(serde_json::json!({"id": 1, "type": "bash", "command": cmd}));
    assert_eq!(long["success"], true, "{long}");
    let data = &long["data"];
    let id = data["job"]["url"].as_str().expect("a job url").to_string();
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

/// A job's JSON record with every field the contract lists.
#[track_caller]
fn assert_record(j: &Value) {
    for key in [
        "id",
        "url",
        "name",
        "pid",
        "supervisor_pid",
        "state",
        "ready",
        "exit_code",
        "signal",
        "started_at",
        "ended_at",
        "command",
        "cwd",
        "log_path",
        "cursor",
    ] {
        assert!(j.get(key).is_some(), "no {key} in {j}");
    }
    let n = j["id"].as_u64().expect("id is the job's number");
    assert_eq!(j["url"], format!("job://{n}"), "{j}");
}

#[test]
fn status_wait_rm_and_list_all_answer_for_a_job() {
    let env = TestEnv::new();
    started(
        &env,
        &["--name", "three", "--ready", "begun"],
        "echo begun; read x < /dev/null; sleep 1; echo over; exit 3",
    );
    let (code, status) = job_json(&env, &["status", "three"]);
    assert_eq!(code, Some(0), "{status}");
    assert_record(&status);
    assert_eq!(status["name"], "three");
    assert!(
        status["log_path"].as_str().unwrap().ends_with("/log"),
        "{status}"
    );
    assert!(status["started_at"].as_u64().unwrap() > 0, "{status}");
    // Waits for the end; exits with the job's own code.
    let waited = job(&env, &["wait", "three"]);
    waited.assert_code(3);
    assert_has(&waited.stdout, "exited 3");
    assert_has(&waited.stdout, "over");
    let (_, status) = job_json(&env, &["status", "three"]);
    assert_eq!(status["state"], "exited", "{status}");
    assert_eq!(status["exit_code"], 3, "{status}");
    assert!(
        status["ended_at"].as_u64() >= status["started_at"].as_u64(),
        "{status}"
    );
    // A wait that runs out exits 124 and says the job still runs.
    job(&env, &["start", "--name", "long", "--", "sleep 60"]).assert_code(0);
    let (code, v) = job_json(&env, &["wait", "long", "-t", "0.3"]);
    assert_eq!(code, Some(124), "{v}");
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(v["job"]["state"], "running", "{v}");
    // list: the running ones; --all: the finished ones too.
    let (_, list) = job_json(&env, &["list"]);
    let names: Vec<&str> = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["long"], "{list}");
    let (_, all) = job_json(&env, &["list", "--all"]);
    assert_eq!(all["jobs"].as_array().unwrap().len(), 2, "{all}");
    all["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(assert_record);
    // rm: a running job is refused, a finished one removed with its log.
    let refused = job(&env, &["rm", "long"]);
    refused.assert_code(125);
    assert_has(&refused.stderr, "still running");
    let log_path = status["log_path"].as_str().unwrap().to_string();
    job(&env, &["rm", "three"]).assert_code(0);
    assert!(!std::path::Path::new(&log_path).exists());
    job(&env, &["status", "three"]).assert_code(125);
    stop_job(&env, "long");
}

#[test]
fn output_follow_streams_until_the_job_ends() {
    let env = TestEnv::new();
    let printer = "for i in $(seq 1 30); do echo \"line $i\"; sleep 0.05; done; exit 4";
    job(&env, &["start", "--name", "printer", "--", printer]).assert_code(0);
    let out = job(&env, &["output", "printer", "--follow"]);
    out.assert_code(0);
    let want: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    assert_eq!(out.stdout, want);
    assert_has(&out.stderr, "exited 4");
    // From a cursor on, the rest only.
    let out = job(&env, &["output", "printer", "--follow", "--cursor", "7"]);
    assert_eq!(out.stdout, want[7..]);
}

#[test]
fn send_answers_with_what_the_job_printed_in_its_window() {
    let env = TestEnv::new();
    job(&env, &["start", "--stdin", "--name", "cat", "--", "cat"]).assert_code(0);
    let (code, v) = job_json(
        &env,
        &["send", "cat", "--text", "hello\n", "--wait-ms", "3000"],
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["output"], "hello\n", "{v}");
    assert_eq!(v["sent"], 6, "{v}");
    assert_eq!(v["cursor"], 6, "{v}");
    let out = job(
        &env,
        &["send", "cat", "--text", "again\n", "--wait-ms", "3000"],
    );
    out.assert_code(0);
    assert_eq!(out.stdout, "again\n");
    stop_job(&env, "cat");
    // A REPL answers in the window.
    job(
        &env,
        &[
            "start",
            "--pty",
            "--name",
            "py",
            "--ready",
            ">>>",
            "--",
            "python3 -q",
        ],
    )
    .assert_code(0);
    let out = job(
        &env,
        &[
            "send",
            "py",
            "--text",
            "print(6*7)",
            "--keys",
            "Enter",
            "--wait-ms",
            "5000",
        ],
    );
    out.assert_code(0);
    assert!(
        out.stdout.lines().any(|l| l.trim() == "42"),
        "{}",
        out.stdout
    );
    stop_job(&env, "py");
}

#[test]
fn output_json_names_the_cursor_the_next_read_starts_at() {
    let env = TestEnv::new();
    let (_, v) = start_job(&env, &["--name", "p"], "printf 'abcdef'; exit 2");
    let (_, v) = job_json(&env, &["wait", v["job"]["url"].as_str().unwrap()]);
    assert_eq!(v["job"]["exit_code"], 2, "{v}");
    let (_, v) = job_json(&env, &["output", "p", "--max-bytes", "4"]);
    for key in [
        "output",
        "cursor",
        "next",
        "state",
        "exit_code",
        "skipped_bytes",
    ] {
        assert!(v.get(key).is_some(), "no {key} in {v}");
    }
    assert_eq!(v["output"], "abcd");
    assert_eq!(v["cursor"], 4, "{v}");
    assert_eq!(v["next"], 4, "{v}");
    assert_eq!(v["state"], "exited");
    assert_eq!(v["exit_code"], 2);
    assert_eq!(v["skipped_bytes"], 0);
    let (_, v) = job_json(&env, &["output", "p", "--cursor", "4"]);
    assert_eq!(v["output"], "ef", "{v}");
    assert_eq!(v["cursor"], 6, "{v}");
}

#[test]
fn start_answers_with_the_output_so_far_and_the_sandbox() {
    let env = TestEnv::new();
    let v = started(
        &env,
        &["--sandbox", "read-only", "--ready", "listening"],
        "echo booting; echo listening; sleep 60",
    );
    assert_eq!(v["output"], "booting\nlistening\n", "{v}");
    assert_eq!(v["sandbox"]["mode"], "read-only", "{v}");
    assert_eq!(v["job"]["cursor"], 18, "{v}");
    let out = job(&env, &["start", "--ready", "up", "--", "echo up; sleep 60"]);
    out.assert_code(0);
    assert!(out.stdout.ends_with("up\n"), "{}", out.stdout);
    stop_job(&env, "1");
    stop_job(&env, "2");
}

#[test]
fn a_job_that_fails_at_once_is_reported_exited_and_stops_an_and_list() {
    let env = TestEnv::new();
    // A generous wait, so a loaded machine cannot make the failure late; the answer
    // comes as soon as the job ends, not when the wait is over.
    jobs_profile(&env, "settle", "start_wait_ms = 20000");
    let fails = "echo 'OSError: [Errno 98] Address already in use' >&2; exit 1";
    let out = env
        .run_text(format!(
            "{} job start -p settle --name web -- \"{fails}\" && echo CARRIED-ON",
            crate::support::bin().display()
        ))
        .stdout_has("exited 1")
        .run();
    assert_has(&out.stdout, "Address already in use");
    assert_lacks(&out.stdout, "CARRIED-ON");
    let (_, v) = job_json(&env, &["status", "web"]);
    assert_eq!(v["state"], "exited", "{v}");
    // Without a readiness check a healthy job is answered as running, exit 0.
    let v = started(&env, &["--name", "ok"], "sleep 60");
    assert_eq!(v["job"]["state"], "running", "{v}");
    stop_job(&env, "ok");
}

#[test]
fn the_log_keeps_the_head_and_the_tail_and_cursors_stay_exact() {
    let env = TestEnv::new();
    jobs_profile(&env, "small", "log_max_bytes = 30000");
    let (code, v) = start_job(&env, &["-p", "small", "--name", "seq"], "seq 1 200000");
    assert!(code == Some(0), "{v}");
    job(&env, &["wait", "seq"]).assert_code(0);
    let all: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    let mut got = String::new();
    let mut skipped = 0;
    let mut cursor = 0u64;
    let mut reads = 0;
    loop {
        let (_, v) = job_json(
            &env,
            &[
                "output",
                "seq",
                "--cursor",
                &cursor.to_string(),
                "--max-bytes",
                "7000",
            ],
        );
        let out = v["output"].as_str().unwrap();
        let skip = v["skipped_bytes"].as_u64().unwrap();
        if skip > 0 {
            assert!(skipped == 0, "skipped twice: {v}");
            skipped = got.len() as u64 + skip;
        }
        got.push_str(out);
        cursor = v["cursor"].as_u64().unwrap();
        reads += 1;
        if out.is_empty() && skip == 0 {
            break;
        }
        assert!(reads < 100, "never ended: {v}");
    }
    // The head: the first bytes exactly; the tail: the last bytes exactly; between
    // them the dropped middle, counted.
    let head = 10_000; // a third of the budget
    assert_eq!(&got[..head], &all[..head]);
    assert!(skipped > 1_000_000, "{skipped}");
    assert_eq!(&got[head..], &all[skipped as usize..]);
    assert!(got.ends_with("199999\n200000\n"));
    assert_eq!(cursor, all.len() as u64);
    // The text a terminal or a model reads marks the gap.
    let v = env
        .rpc(&[])
        .ask(serde_json::json!({"id": 1, "type": "job_output", "job": "seq", "cursor": head}));
    assert!(
        v["data"]["text"].as_str().unwrap().starts_with("[… "),
        "{v}"
    );
}

#[test]
fn start_takes_the_run_options_and_rejects_unknown_ones() {
    let env = TestEnv::new();
    let out = job(&env, &["start", "--bogus", "x", "--", "echo hi"]);
    out.assert_code(2);
    assert_has(&out.stderr, "--bogus");
    let (_, v) = job_json(&env, &["list", "--all"]);
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(0), "{v}");
    std::fs::create_dir_all(env.work().join("sub")).unwrap();
    let v = started(
        &env,
        &[
            "-C",
            "sub",
            "-e",
            "GREETING=hi there",
            "--timeout",
            "30",
            "--ready",
            "done",
        ],
        "echo \"$GREETING from $(basename \"$PWD\")\"; echo done; sleep 60",
    );
    assert!(
        v["output"]
            .as_str()
            .unwrap()
            .starts_with("hi there from sub\n"),
        "{v}"
    );
    assert_eq!(v["job"]["ttl"], 30, "{v}");
    stop_job(&env, "1");
}

#[test]
fn the_interceptor_applies_to_job_start_except_its_job_rules() {
    let env = TestEnv::new();
    env.write("notes.txt", "x\n");
    env.run_text("cat notes.txt")
        .opts(&["--tools", "read,job"])
        .code(77)
        .run();
    let out = job(
        &env,
        &["start", "--tools", "read,job", "--", "cat notes.txt"],
    );
    out.assert_code(77);
    assert_has(&out.stderr, "`read` tool");
    // What routes to `job` is what `job start` is for.
    env.run_text("tail -f notes.txt")
        .opts(&["--tools", "read,job"])
        .run()
        .assert_code(77);
    let v = started(&env, &["--tools", "read,job"], "tail -f notes.txt");
    assert_eq!(v["job"]["state"], "running", "{v}");
    stop_job(&env, "1");
    let (_, v) = job_json(&env, &["list", "--all"]);
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(1), "{v}");
}

#[test]
fn gc_keeps_running_jobs_ends_lost_ones_and_removes_old_finished_ones() {
    let env = TestEnv::new();
    let n = nonce();
    job(
        &env,
        &[
            "start",
            "--name",
            "healthy",
            "--",
            &format!("sleep 391.{n}"),
        ],
    )
    .assert_code(0);
    job(&env, &["start", "--name", "done", "--", "true"]).assert_code(0);
    job(&env, &["wait", "done"]).assert_code(0);
    // The default keeps finished jobs an hour: nothing goes, nothing stops.
    let (code, v) = job_json(&env, &["gc"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["removed"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["running"], 1, "{v}");
    assert!(!procs_with_cmdline(&format!("sleep 391.{n}"), Duration::ZERO).is_empty());
    // keep_exited = 0: the finished one goes, the running one stays.
    jobs_profile(&env, "nokeep", "keep_exited = 0");
    let (_, v) = job_json(&env, &["gc", "-p", "nokeep"]);
    assert_eq!(v["removed"], serde_json::json!(["job://2"]), "{v}");
    let (_, v) = job_json(&env, &["status", "healthy"]);
    assert_eq!(v["state"], "running", "{v}");
    stop_job(&env, "healthy");
}

#[test]
fn a_bad_profile_is_named_by_job_start_and_gc() {
    let env = TestEnv::new();
    jobs_profile(&env, "typo", "max_runing = 3");
    for args in [
        &["start", "-p", "typo", "--", "true"][..],
        &["gc", "-p", "typo"][..],
    ] {
        let out = job(&env, args);
        out.assert_code(125);
        assert_has(&out.stderr, "max_runing");
        assert_lacks(&out.stderr, "jobs directory");
    }
}

#[test]
fn a_headless_pty_run_types_nothing_into_its_terminal() {
    let env = idle_env();
    // Reading the terminal: it waits, as at a terminal nobody types into, until
    // idle_timeout ends it; it never gets an end of input (^D) it did not ask for.
    let out = env
        .run_text("read -r line; echo \"read rc=$?\"")
        .opts(&["-p", "idle", "--pty"])
        .code(124)
        .stderr_has(IDLE_STOP)
        .run();
    assert_lacks(&out.stdout, "read rc=");
    assert_lacks(&out.stdout, "^D");
}

#[test]
fn idle_timeout_spares_a_run_with_a_timeout_and_a_run_using_cpu() {
    let env = idle_env();
    // The caller gave a timeout: quiet waiting is theirs to allow.
    env.run_text("sleep 2.5; echo slept")
        .opts(&["-p", "idle", "-t", "30"])
        .code(0)
        .stdout("slept\n")
        .run();
    // No timeout, nothing printed, but computing: not idle.
    let busy = "python3 -c 'import time\nt = time.time()\nwhile time.time() - t < 3: pass\nprint(\"computed\")'";
    env.run_text(busy)
        .profile("idle")
        .code(0)
        .stdout("computed\n")
        .run();
    // The same in a headless PTY.
    env.run_text(busy)
        .opts(&["-p", "idle", "--pty"])
        .code(0)
        .stdout_has("computed")
        .run();
}

/// A profile on top of `agent` for the rpc tests of `jobs.background_after`.
fn agent_profile(env: &TestEnv, name: &str, jobs: &str) {
    env.user_profile(name, &format!("extends = \"agent\"\n[jobs]\n{jobs}\n"));
}

#[test]
fn background_after_under_agent_keeps_the_sandbox_and_leaves_no_record() {
    let env = TestEnv::new();
    agent_profile(&env, "agent1", "background_after = 1\nidle_timeout = 0");
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let probe = outside.join("probe");
    let mut rpc = env.rpc(&["-p", "agent1"]);
    // Seven calls that end in time: answered as runs, no job left behind.
    for i in 0..7 {
        let r = rpc
            .ask(serde_json::json!({"id": i, "type": "bash", "command": format!("echo call {i}")}));
        assert_eq!(r["data"]["output"], format!("call {i}\n"), "{r}");
        assert_eq!(r["data"]["sandbox"]["mode"], "workspace-write", "{r}");
        assert!(r["data"].get("job").is_none(), "{r}");
    }
    let (_, v) = job_json(&env, &["list", "--all"]);
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(0), "{v}");
    // One the sandbox refuses a write to, ending in time: the run's notice.
    let cmd = format!("touch {}; exit 1", probe.display());
    let r = rpc.ask(serde_json::json!({"id": 10, "type": "bash", "command": cmd}));
    let d = &r["data"];
    if probe.exists() || d["sandbox"]["engine"] == "none" {
        crate::support::skip!(
            "the sandbox does not enforce workspace-write here",
            "a kernel with Landlock or user and mount namespaces (`agentbash sandbox check`)"
        );
    }
    assert!(
        d["text"].as_str().unwrap().contains("[sandbox: writing"),
        "{r}"
    );
    assert!(d["sandbox"]["tmpdir"].is_string(), "{r}");
    // Handed off: the sandbox object and the notice stay.
    let cmd = format!("touch {}; sleep 30", probe.display());
    let r = rpc.ask(serde_json::json!({"id": 11, "type": "bash", "command": cmd}));
    let d = &r["data"];
    assert!(
        d["job"]["url"]
            .as_str()
            .is_some_and(|u| u.starts_with("job://")),
        "{r}"
    );
    assert_eq!(d["sandbox"]["mode"], "workspace-write", "{r}");
    assert!(
        d["text"].as_str().unwrap().contains("[sandbox: writing"),
        "{r}"
    );
    let (_, v) = job_json(&env, &["list", "--all"]);
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(1), "{v}");
    drop(rpc);
    // Its server gone, the job is stopped (readiness: wait for that).
    job(&env, &["wait", "1", "-t", "20"]);
    let (_, v) = job_json(&env, &["status", "1"]);
    assert_eq!(v["state"], "killed", "{v}");
    // A new server lists no job of the old one.
    let r = env
        .rpc(&["-p", "agent1"])
        .ask(serde_json::json!({"id": 1, "type": "job_list"}));
    assert_eq!(r["data"]["jobs"], serde_json::json!([]), "{r}");
}

#[test]
fn background_after_idle_counts_cpu_and_spares_a_call_with_a_timeout() {
    let env = TestEnv::new();
    agent_profile(&env, "agent5", "background_after = 8\nidle_timeout = 1");
    let mut rpc = env.rpc(&["-p", "agent5"]);
    let busy = "python3 -c 'import time\nt = time.time()\nwhile time.time() - t < 3: pass\nprint(\"computed\")'";
    let r = rpc.ask(serde_json::json!({"id": 1, "type": "bash", "command": busy}));
    assert_eq!(r["data"]["exit_code"], 0, "{r}");
    assert_eq!(r["data"]["output"], "computed\n", "{r}");
    let r = rpc.ask(serde_json::json!({"id": 2, "type": "bash", "command": "sleep 3; echo slept", "timeout": 30}));
    assert_eq!(r["data"]["exit_code"], 0, "{r}");
    assert_eq!(r["data"]["output"], "slept\n", "{r}");
    // Without a timeout, waiting quietly is what idle_timeout ends.
    let r = rpc.ask(serde_json::json!({"id": 3, "type": "bash", "command": "sleep 30"}));
    assert_eq!(r["data"]["exit_code"], 124, "{r}");
    assert!(
        r["data"]["text"]
            .as_str()
            .unwrap()
            .contains("[No output for 1 second; stopped]"),
        "{r}"
    );
    // The same without background_after (the live shells).
    agent_profile(&env, "agentfg", "background_after = 0\nidle_timeout = 1");
    let mut rpc = env.rpc(&["-p", "agentfg"]);
    let r = rpc.ask(serde_json::json!({"id": 1, "type": "bash", "command": busy}));
    assert_eq!(r["data"]["exit_code"], 0, "{r}");
    let r = rpc.ask(serde_json::json!({"id": 2, "type": "bash", "command": "sleep 3; echo slept", "timeout": 30}));
    assert_eq!(r["data"]["output"], "slept\n", "{r}");
}

#[test]
fn rpc_has_job_status_wait_and_send_with_a_window() {
    let (_env, mut rpc) = TestEnv::with_rpc();
    let r = rpc.ask(serde_json::json!({"id": 1, "type": "job_start", "command": "cat", "stdin": true, "name": "c"}));
    assert_eq!(r["success"], true, "{r}");
    let r = rpc.ask(serde_json::json!({"id": 2, "type": "job_send", "job": "c", "text": "ping\n", "wait_ms": 3000}));
    assert_eq!(r["data"]["output"], "ping\n", "{r}");
    let r = rpc.ask(serde_json::json!({"id": 3, "type": "job_status", "job": "c"}));
    assert_record(&r["data"]);
    assert_eq!(r["data"]["state"], "running", "{r}");
    let r = rpc.ask(serde_json::json!({"id": 4, "type": "job_wait", "job": "c", "timeout": 0.2}));
    assert_eq!(r["data"]["timed_out"], true, "{r}");
    let r = rpc.ask(serde_json::json!({"id": 5, "type": "job_start", "command": "echo bye; exit 5", "name": "e"}));
    assert_eq!(r["success"], true, "{r}");
    let r = rpc.ask(serde_json::json!({"id": 6, "type": "job_wait", "job": "e", "timeout": 20}));
    assert_eq!(r["data"]["timed_out"], false, "{r}");
    assert_eq!(r["data"]["job"]["exit_code"], 5, "{r}");
    assert_eq!(r["data"]["output"], "bye\n", "{r}");
    let r = rpc.ask(serde_json::json!({"id": 7, "type": "job_list", "all": true}));
    assert_eq!(r["data"]["jobs"].as_array().map(Vec::len), Some(2), "{r}");
}

#[test]
fn completions_and_help_do_not_offer_the_supervisor() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        env.test()
            .args(&["completions", shell])
            .code(0)
            .stdout_lacks("__supervise")
            .run();
    }
    env.test()
        .args(&["job", "--help"])
        .stdout_lacks("supervise")
        .run();
}

/// Every file under `dir`, with its bytes.
fn all_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push((p, bytes));
        }
    }
    out
}

#[test]
fn secrets_are_masked_in_every_job_path() {
    let env = TestEnv::new();
    env.user_profile(
        "red",
        "extends = \"default\"\n[output]\nredact = [\"*TOKEN*\"]\n",
    );
    // One secret in agentbash's own environment, one given with --env.
    const OWN: &str = "own-secret-value-4711";
    const FLAG: &str = "flag-secret-value-0815";
    let n = nonce();
    let leaked = |what: &str, text: &str| {
        assert!(
            !text.contains(OWN) && !text.contains(FLAG),
            "{what} shows a secret:\n{text}"
        );
    };
    // The command line names a secret too; the last line has no newline (a prompt).
    let command =
        format!("echo \"$API_TOKEN / $RUN_TOKEN\"; echo {OWN}; printf 'prompt> '; sleep 384.{n}");
    let cli = |args: &[&str]| env.cmd(args).env("API_TOKEN", OWN).run();
    let flag = format!("RUN_TOKEN={FLAG}");
    let started = cli(&[
        "job", "start", "--json", "-p", "red", "--name", "sec", "--env", &flag, "--", &command,
    ]);
    assert_eq!(started.code(), Some(0), "{}", started.stderr);
    leaked("job start --json", &started.stdout);
    let shown = wait_for_output(&env, "sec", "prompt> ", Duration::from_secs(10));
    assert!(
        shown.contains(
            "[REDACTED:API_TOKEN] / [REDACTED:RUN_TOKEN]\n[REDACTED:API_TOKEN]\nprompt> "
        ),
        "the job's output, masked, the prompt shown without waiting for more: {shown:?}"
    );
    for args in [
        &["job", "output", "sec"][..],
        &["job", "output", "--json", "sec"],
        &["job", "output", "sec", "--tail", "5"],
        &["job", "list"],
        &["job", "list", "--json"],
    ] {
        let out = cli(args);
        assert_eq!(out.code(), Some(0), "{args:?}: {}", out.stderr);
        leaked(
            &format!("{args:?}"),
            &format!("{}{}", out.stdout, out.stderr),
        );
    }
    let listed = cli(&["job", "list", "--json"]).json();
    assert!(
        listed.to_string().contains("echo [REDACTED:API_TOKEN]"),
        "the record's command is masked, not dropped: {listed}"
    );
    // A PTY job's screen.
    let pty = cli(&[
        "job", "start", "--json", "-p", "red", "--pty", "--name", "screen", "--", &command,
    ]);
    assert_eq!(pty.code(), Some(0), "{}", pty.stderr);
    wait_for_output(&env, "screen", "prompt>", Duration::from_secs(10));
    let screen = cli(&["job", "output", "--json", "screen", "--screen"]);
    leaked("job output --screen", &screen.stdout);
    assert_has(&screen.stdout, "[REDACTED:API_TOKEN]");
    // Over rpc: job_start, job_output, job_list, job_stop.
    let mut rpc = LiveServer::start_cmd(env.cmd(&["rpc", "-p", "red"]).env("API_TOKEN", OWN));
    let answers = [
        rpc.ask(
            serde_json::json!({"id": 1, "type": "job_start", "command": command,
            "name": "rpc", "env": {"RUN_TOKEN": FLAG}}),
        ),
        rpc.ask(serde_json::json!({"id": 2, "type": "job_output", "job": "rpc", "wait": 5})),
        rpc.ask(serde_json::json!({"id": 3, "type": "job_list"})),
        rpc.ask(serde_json::json!({"id": 4, "type": "job_stop", "job": "rpc"})),
    ];
    for a in &answers {
        assert_eq!(a["success"], true, "{a}");
        leaked("rpc", &a.to_string());
    }
    assert!(
        answers[1].to_string().contains("[REDACTED:RUN_TOKEN]"),
        "{}",
        answers[1]
    );
    for name in ["sec", "screen"] {
        let out = cli(&["job", "stop", "--json", name]);
        leaked("job stop", &out.stdout);
    }
    // Nothing on disk holds them: records, logs, the spec the supervisor read.
    for (path, bytes) in all_files(&env.state_dir().join("jobs")) {
        leaked(
            &path.display().to_string(),
            &String::from_utf8_lossy(&bytes),
        );
    }
}

#[test]
fn job_tools_over_mcp_mask_secrets_with_the_python_client() {
    let env = TestEnv::new();
    // The built-in agent profile masks *TOKEN* (and runs jobs in its sandbox).
    crate::mcp::python_client_checks(&env, "job tools mask secrets", "agent");
}
