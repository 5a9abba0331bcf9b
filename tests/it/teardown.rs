//! Time limits, cancellation and teardown: timeouts, clamping, signals
//! sent to agentbash, commands killed by signals, and no process left behind
//! (issue 2, item 7); what a teardown lists and says (issue 12, part 4).

use crate::support::{
    Gate, LiveServer, Missing, Output, Running, Test, TestEnv, assert_has, assert_none_running,
    bin, cgroup2_mount, is_root, ndjson_with_a_clamp, needs_root, nonce, procs_with_cmdline, s,
    scaled, skip, wait_for_cmdline, wait_for_watchdog,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Runs `test` with a 1 s timeout, which must end it (exit 124).
#[track_caller]
fn timed_out(test: Test) -> Output {
    test.opts(&["-t", "1"]).code(124).run()
}

/// A timeout ends the run in about a second (exit 124), says so first, and keeps what
/// the command printed so far: on stdout in text, in `output` and `text` in JSON.
#[test]
fn a_timeout_ends_the_run_saying_so_and_keeps_the_output_so_far() {
    let env = TestEnv::new();
    let said = "[Command timed out after 1 second]";
    let out = timed_out(env.run_text("echo before; sleep 30").stdout("before\n"));
    out.assert_ended_within(3).assert_lasted_at_least_ms(900);
    assert_eq!(
        out.stderr.lines().next(),
        Some(said),
        "stderr: {:?}",
        out.stderr
    );
    let v = timed_out(
        env.run_json("echo before; sleep 30")
            .field("timed_out", true)
            .field("exit_code", 124)
            .field("timeout_s", 1),
    )
    .json();
    let text = s(&v, "text");
    assert_eq!(text.lines().next(), Some(said), "{text:?}");
    assert!(s(&v, "output").contains("before"), "{v:#}");
    assert!(text.contains("before"));
}

#[test]
fn timeout_tears_down_the_whole_tree() {
    let env = TestEnv::new();
    let sleep = format!("sleep 377.{}", nonce());
    let cmd = format!("{sleep} & setsid {sleep} & ( {sleep} & ) ; {sleep}");
    let out = timed_out(env.run_json(&cmd));
    out.assert_ended_within(4);
    assert_nothing_left(&env, &sleep, "the timeout");
}

#[test]
fn timeout_escalates_to_kill_when_term_is_ignored() {
    let env = TestEnv::new();
    let sleep = format!("sleep 376.{}", nonce());
    let out = timed_out(env.run_json(format!("trap '' TERM; {sleep}; echo after")));
    // 1 s timeout + 1 s kill_grace_ms, with room for a loaded machine.
    out.assert_ended_within(5);
    assert_none_running(&sleep, 2, "left running");
}

/// A timeout out of range is clamped into it, and a notice says so repeating the
/// value the user typed (regression, fixed: a value past 32 bits was not repeated).
/// A case is `(what, the profile if not the built-in one, -t, the timeout used, the
/// allowed range)`.
#[test]
fn an_out_of_range_timeout_is_clamped_with_a_notice_repeating_the_request() {
    const LIMITED: &str = "[timeout]\ndefault = 20\nmax = 600\n";
    let cases = [
        ("over the built-in max", None, "99999", 3600, "1-3600"),
        ("past 32 bits", None, "9999999999", 3600, "1-3600"),
        ("zero", None, "0", 1, "1-3600"),
        ("negative", None, "-5", 1, "1-3600"),
        (
            "over the profile's max",
            Some(LIMITED),
            "1000",
            600,
            "1-600",
        ),
    ];
    let env = TestEnv::new();
    for (what, profile, requested, used, range) in cases {
        let mut run = env.run_json("echo ok");
        if let Some(toml) = profile {
            run = run.profile_file("p.toml", toml);
        }
        run.opts(&["-t", requested])
            .case(what)
            .code(0)
            .field("timeout_s", used)
            .notice_is(format!(
                "Timeout clamped to {used}s (requested {requested}s; allowed range {range}s)."
            ))
            .run();
    }
    // The request is in the result, and the text form says the same on stderr.
    env.run_json("true")
        .opts(&["-t", "99999"])
        .field("requested_timeout_s", 99999)
        .run();
    env.run_text("true")
        .opts(&["-t", "99999"])
        .code(0)
        .stderr_has("Timeout clamped to 3600s (requested 99999s; allowed range 1-3600s).")
        .run();
    // A negative timeout clamps to one second, which does end the run.
    env.run_json("sleep 30")
        .opts(&["--timeout=-1"])
        .code(124)
        .run()
        .assert_ended_within(3);
    // Past 64 bits there is no honest number to repeat: a usage error.
    env.run_json("true")
        .opts(&["-t", "99999999999999999999"])
        .code(2)
        .stderr_has("too large")
        .run();
    // Without -t, the profile's default, and nothing to say.
    env.run_json("true")
        .profile_file("p.toml", LIMITED)
        .field("timeout_s", 20)
        .field("notices", json!([]))
        .run();
}

/// Start `echo started; sleep …` under NDJSON, signal agentbash once output arrived,
/// and check the teardown.
fn cancel_with(sig: i32, want_code: i32) {
    let env = TestEnv::new();
    let sleep = format!("sleep 388.{}", nonce());
    let mut run = env
        .cmd(&[
            "run",
            "--format",
            "ndjson",
            "--",
            &format!("echo started; {sleep} & {sleep}; echo never"),
        ])
        .spawn();
    run.wait_for_event("output", Duration::from_secs(10));
    assert!(
        wait_for_cmdline(&sleep, Duration::from_secs(5)),
        "the command never started its sleeps"
    );
    let sent = Instant::now();
    run.signal(sig);
    let out = run.wait();
    let after = sent.elapsed();
    out.assert_code(want_code);
    assert!(
        after < scaled(Duration::from_secs(4)),
        "exit took {after:?} after the signal"
    );
    let events = out.ndjson();
    let result = events.last().expect("events");
    assert_eq!(result["type"], "result", "{}", out.stdout);
    assert_eq!(result["cancelled"], true, "{result:#}");
    assert_eq!(result["exit_code"], want_code, "{result:#}");
    assert!(s(result, "output").contains("started"), "{result:#}");
    assert!(!s(result, "output").contains("never"), "{result:#}");
    assert_eq!(
        s(result, "text").lines().next(),
        Some("[Command cancelled]"),
        "{result:#}"
    );
    // Regression (issue 12): the annotation is a notice, sent as an event before the
    // result, and not part of `output`; the cancelled foreground `sleep` and its
    // sibling job were the shell's own tree, not processes that outlived it.
    assert!(
        !s(result, "output").contains("[Command cancelled]"),
        "{result:#}"
    );
    assert_eq!(result["notices"][0], "[Command cancelled]", "{result:#}");
    assert!(
        events[..events.len() - 1]
            .iter()
            .any(|e| e["type"] == "notice" && e["message"] == "[Command cancelled]"),
        "{}",
        out.stdout
    );
    assert_eq!(result["background_killed"], json!([]), "{result:#}");
    assert_nothing_left(&env, &sleep, "cancel");
}

#[test]
fn sigint_cancels_with_130() {
    cancel_with(libc::SIGINT, 130);
}

#[test]
fn sigterm_cancels_with_143() {
    cancel_with(libc::SIGTERM, 143);
}

#[test]
fn sighup_cancels_with_129() {
    cancel_with(libc::SIGHUP, 129);
}

#[test]
fn cancel_in_json_and_text_keeps_the_output_so_far() {
    let env = TestEnv::new();
    let sleep = format!("sleep 389.{}", nonce());
    let cmd = format!("echo started; {sleep}");
    let run = env.cmd(&["run", "--json", "--", &cmd]).spawn();
    assert!(wait_for_cmdline(&sleep, Duration::from_secs(10)));
    run.signal(libc::SIGTERM);
    let out = run.wait();
    out.assert_code(143);
    let v = out.json();
    assert_eq!(v["cancelled"], true);
    assert_eq!(s(&v, "text").lines().next(), Some("[Command cancelled]"));
    assert!(s(&v, "output").contains("started"));
    assert_none_running(&sleep, 2, "left running");

    let run = env.cmd(&["run", "--", &cmd]).spawn();
    assert!(wait_for_cmdline(&sleep, Duration::from_secs(10)));
    run.signal(libc::SIGINT);
    let out = run.wait();
    out.assert_code(130);
    assert_eq!(out.stdout, "started\n");
    assert_has(&out.stderr, "[Command cancelled]");
    assert_none_running(&sleep, 2, "left running");
}

#[test]
fn command_killed_by_a_signal_exits_128_plus_n() {
    let env = TestEnv::new();
    let v = env.run_json("echo x; kill -9 $$").code(137).json();
    assert_eq!(v["exit_code"], 137);
    assert_eq!(v["signal"], "SIGKILL");
    assert_eq!(v["cancelled"], false);
    assert_eq!(v["timed_out"], false);
    assert!(s(&v, "output").contains('x'));
    env.run_json("kill -TERM $$")
        .code(143)
        .field("signal", "SIGTERM")
        .run();
}

#[test]
fn killing_agentbash_takes_its_child_along() {
    let env = TestEnv::new();
    let sleep = format!("sleep 387.{}", nonce());
    let run = env
        .cmd(&["run", "--json", "--", &format!("exec {sleep}")])
        .spawn();
    assert!(wait_for_cmdline(&sleep, Duration::from_secs(10)));
    run.signal(libc::SIGKILL);
    let _ = run.wait();
    assert_none_running(&sleep, 3, "the direct child outlived agentbash");
}

#[test]
fn agentbash_never_signals_its_own_process_group() {
    let env = TestEnv::new();
    let script = format!(
        "'{}' run -t 1 -- 'sleep 30'; echo \"survived $?\"",
        bin().display()
    );
    let out = env
        .program("sh", &["-c", &script])
        .own_process_group()
        .run();
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout.trim_end(), "survived 124");
}

/// Regression (issue 12): a timeout stops the command's own tree, and its foreground
/// `sleep` is no background process: `background_killed` stays empty. A job whose
/// parent had already exited did outlive it, and is listed and named.
#[test]
fn timeout_lists_only_what_outlived_its_parent() {
    let env = TestEnv::new();
    let sleep = format!("sleep 375.{}", nonce());
    let out = timed_out(env.run_json(format!("echo before; {sleep} & {sleep}; true")));
    let v = out.json();
    assert_eq!(v["background_killed"], json!([]), "{v:#}");
    assert!(!s(&v, "text").contains("background process"), "{v:#}");

    let orphan = format!("sleep 374.{}", nonce());
    let out = timed_out(env.run_json(format!("( {orphan} & ); {sleep}; true")));
    let v = out.json();
    let killed = v["background_killed"]
        .as_array()
        .expect("background_killed");
    assert_eq!(killed.len(), 1, "{v:#}");
    assert_eq!(killed[0]["command"], orphan.as_str(), "{v:#}");
    let want = format!(
        "[Also stopped 1 background process the command had left running: {orphan} (pid {}). {}]",
        killed[0]["pid"],
        agentbash::output::notice::KEEP_RUNNING_HINT
    );
    assert!(
        v["notices"]
            .as_array()
            .expect("notices")
            .iter()
            .any(|n| *n == *want),
        "{v:#}"
    );
    assert!(s(&v, "text").contains(&want), "{v:#}");
    assert_none_running(&sleep, 2, "left running");
    assert!(env.leftovers(Duration::from_secs(1)).is_empty());
}

/// Regression (issue 12): a job that ignores TERM and starts a child every 10 ms.
/// Chased one TERM per new child it listed ~80 `sleep` entries; frozen first, it is
/// one entry per process that outlived the shell, each once, and the children it
/// starts during the grace period die with it (no TERM each, no "Terminated" flood).
#[test]
fn a_term_ignoring_job_that_keeps_forking_is_frozen_then_killed() {
    let env = TestEnv::new();
    env.write("p.toml", "[timeout]\nkill_grace_ms = 500\n");
    let tag = nonce();
    let job = format!("(trap '' TERM; while :; do sleep 0.01{tag}; done) &");
    let v = env
        .run_json(format!("{job} sleep 0.3; echo started"))
        .profile("./p.toml")
        .code(0)
        .json();
    assert_eq!(s(&v, "output"), "started\n", "{v:#}");
    let killed = v["background_killed"]
        .as_array()
        .expect("background_killed");
    // The loop's subshell and the sleep it was running (under load, a child caught
    // between fork and exec too).
    assert!((1..=3).contains(&killed.len()), "{v:#}");
    let mut pids: Vec<u64> = killed.iter().filter_map(|k| k["pid"].as_u64()).collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), killed.len(), "listed twice: {v:#}");
    assert!(
        killed.iter().all(|k| !s(k, "command").is_empty()),
        "named after it died: {v:#}"
    );
    assert!(s(&v, "text").matches("Terminated").count() <= 1, "{v:#}");
    assert_none_running(&tag, 2, "left running");
    assert!(env.leftovers(Duration::from_secs(1)).is_empty());

    // Text on a pipe: the notice on stderr, stdout the command's output only.
    let out = env
        .run_text(format!("{job} sleep 0.3; echo started"))
        .profile("./p.toml")
        .code(0)
        .run();
    assert_eq!(out.stdout, "started\n");
    assert_has(&out.stderr, "the command left running: ");
    assert!(
        out.stderr.matches("Terminated").count() <= 1,
        "{}",
        out.stderr
    );

    // The same job when the run times out: the shell's own tree, nothing listed.
    let out = env
        .run_json(format!("{job} sleep 30.{tag}"))
        .opts(&["-p", "./p.toml", "-t", "1"])
        .code(124)
        .run();
    out.assert_ended_within(4);
    let v = out.json();
    assert_eq!(v["background_killed"], json!([]), "{v:#}");
    assert_none_running(&tag, 2, "left running");
    assert!(env.leftovers(Duration::from_secs(1)).is_empty());
}

/// Regression (issue 12): `output` is only what the command printed. The timeout
/// annotation is the first notice and the first line of `text`, goes to stderr in a
/// pipe, and NDJSON sends every notice as an event before the result.
#[test]
fn the_timeout_annotation_is_a_notice_not_output() {
    let env = TestEnv::new();
    let cmd = "echo before; sleep 30";
    let v = env.run_json(cmd).opts(&["-t", "1"]).run().json();
    let annotation = "[Command timed out after 1 second]";
    assert_eq!(s(&v, "output"), "before\n", "{v:#}");
    assert_eq!(v["notices"], json!([annotation]), "{v:#}");
    assert_eq!(s(&v, "text"), format!("{annotation}\nbefore"), "{v:#}");

    let out = timed_out(env.run_text(cmd));
    assert_eq!(out.stdout, "before\n");
    assert_eq!(out.stderr, format!("{annotation}\n"));

    let out = env
        .run_text(cmd)
        .opts(&["--format", "ndjson", "-t", "1"])
        .code(124)
        .run();
    let events = out.ndjson();
    let notices: Vec<&Value> = events.iter().filter(|e| e["type"] == "notice").collect();
    assert_eq!(notices, [&json!({"type": "notice", "message": annotation})]);
    let result = events.last().expect("events");
    assert_eq!(result["type"], "result");
    assert_eq!(result["output"], "before\n");

    // Nothing printed: `output` is empty; `text` is the annotation alone.
    let v = env
        .run(&["run", "--json", "-t", "2", "--", "sleep 30"])
        .json();
    assert_eq!(s(&v, "output"), "", "{v:#}");
    assert_eq!(
        s(&v, "text"),
        "[Command timed out after 2 seconds]",
        "{v:#}"
    );
}

/// Regression (issue 12): NDJSON sent no notice events. Every notice of the result
/// is an event, before the result: the clamp notice, a warn rule, a non-zero exit.
#[test]
fn ndjson_sends_every_notice_before_the_result() {
    let out = ndjson_with_a_clamp("echo x; exit 3", 3);
    let events = out.ndjson();
    let result = events.last().expect("events");
    assert_eq!(result["type"], "result", "{}", out.stdout);
    let sent: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "notice")
        .map(|e| &e["message"])
        .collect();
    let notices: Vec<&Value> = result["notices"]
        .as_array()
        .expect("notices")
        .iter()
        .collect();
    assert_eq!(sent, notices, "{}", out.stdout);
    assert!(
        sent.iter().any(|n| *n == "Command exited with code 3"),
        "{}",
        out.stdout
    );
    assert!(
        sent.iter()
            .any(|n| n.as_str().is_some_and(|n| n.starts_with("Timeout clamped"))),
        "{}",
        out.stdout
    );
}

// Nothing of a run outlives it, even when agentbash is SIGKILLed (issue 13, part 2):
// where a cgroup can be made each run has one, and a watchdog empties them when
// agentbash dies; membership also attributes what cleared its environment.

/// Why the tests that need a run cgroup skip when not root: as root they must run
/// (cgroup v2 is writable); elsewhere no group can be expected.
fn no_run_groups() -> Missing {
    needs_root("a run cgroup (a writable cgroup v2 tree)")
}

/// Skips the test (visibly, see `skip!`) where agentbash cannot make run groups.
macro_rules! needs_run_groups {
    () => {
        if !is_root() {
            skip!(no_run_groups());
        }
    };
}

/// The cgroup v2 mount run groups are made in; skips the test where there is none.
macro_rules! run_groups_mount {
    () => {{
        needs_run_groups!();
        let Some(mount) = cgroup2_mount() else {
            skip!(no_run_groups());
        };
        mount
    }};
}

/// Asserts that nothing whose command line holds `needle`, and none of the env's
/// tagged processes, is left running after `what`.
#[track_caller]
fn assert_nothing_left(env: &TestEnv, needle: &str, what: &str) {
    let left = procs_with_cmdline(needle, Duration::from_secs(2));
    assert!(left.is_empty(), "left running after {what}: {left:?}");
    let left = env.leftovers(Duration::from_secs(1));
    assert!(left.is_empty(), "left running after {what}: {left:?}");
}

/// SIGKILLs agentbash's `run` and asserts that nothing whose command line holds
/// `needle` outlives it.
#[track_caller]
fn sigkill_leaves_nothing(run: Running, needle: &str) {
    run.signal(libc::SIGKILL);
    let _ = run.wait();
    let left = left_after(needle, Duration::from_secs(2));
    assert!(left.is_empty(), "outlived a SIGKILLed agentbash: {left:?}");
}

/// Processes whose command line contains `needle` still there after `within`.
fn left_after(needle: &str, within: Duration) -> Vec<String> {
    procs_with_cmdline(needle, within)
        .into_iter()
        .map(|p| format!("{} {}", p.pid, p.cmdline))
        .collect()
}

/// A background job, a setsid daemon and one that also cleared its environment.
fn escapees(tag: &str) -> String {
    format!("sleep 300.{tag} & setsid sleep 301.{tag} & setsid env -i sleep 302.{tag} &")
}

fn wait_started(tag: &str) {
    for n in ["300", "301", "302"] {
        let p = format!("sleep {n}.{tag}");
        assert!(
            wait_for_cmdline(&p, Duration::from_secs(10)),
            "{p} never started"
        );
    }
}

/// `agentbash run OPTS -- 'BEFORE escapees; exec sleep 303.TAG'` SIGKILLed once all
/// of it runs: nothing of the run is left.
#[track_caller]
fn sigkill_mid_run_leaves_nothing(opts: &[&str], before: &str) {
    let env = TestEnv::new();
    let tag = nonce();
    let cmd = format!("{before}{} exec sleep 303.{tag}", escapees(&tag));
    let mut args = vec!["run"];
    args.extend_from_slice(opts);
    args.extend(["--", &cmd]);
    let run = env.cmd(&args).spawn();
    wait_started(&tag);
    let leader = format!("sleep 303.{tag}");
    assert!(
        wait_for_cmdline(&leader, Duration::from_secs(10)),
        "{leader} never started"
    );
    // The watchdog starts once a run has lasted 20 ms (a shorter run never pays for
    // it); a SIGKILL before that is the documented gap.
    wait_for_watchdog(run.pid());
    sigkill_leaves_nothing(run, &tag);
}

#[test]
fn sigkill_of_agentbash_run_leaves_nothing_of_the_run() {
    needs_run_groups!();
    sigkill_mid_run_leaves_nothing(&[], "");
}

/// The same for a `--pty` run: its leader is started in the run's group too.
#[test]
fn sigkill_of_agentbash_pty_run_leaves_nothing_of_the_run() {
    needs_run_groups!();
    // `trap '' HUP`: the PTY's hangup must not be what ends them.
    sigkill_mid_run_leaves_nothing(&["--pty"], "trap '' HUP; ");
}

/// Without a run group, a PTY command that ignores the hangup still dies with
/// agentbash: its parent-death signal.
#[test]
fn a_pty_command_dies_with_a_sigkilled_agentbash_without_a_group() {
    let env = TestEnv::new();
    let sleep = format!("sleep 304.{}", nonce());
    let cmd = format!("trap '' HUP; exec {sleep}");
    let run = env
        .cmd(&["run", "--pty", "--", &cmd])
        .env("AGENTBASH_NO_CGROUP", "1")
        .spawn();
    assert!(
        wait_for_cmdline(&sleep, Duration::from_secs(10)),
        "{sleep} never started"
    );
    sigkill_leaves_nothing(run, &sleep);
}

#[test]
fn sigkill_of_agentbash_rpc_ends_every_run_in_flight() {
    needs_run_groups!();
    let env = TestEnv::new();
    let mut rpc = LiveServer::start(&env, &["rpc"]);
    let tags: Vec<String> = (0..3).map(|i| format!("{}{i}", nonce())).collect();
    for (i, tag) in tags.iter().enumerate() {
        let cmd = format!("{} sleep 303.{tag}", escapees(tag));
        rpc.send(json!({"id": i.to_string(), "type": "bash", "command": cmd}));
    }
    for tag in &tags {
        wait_started(tag);
    }
    wait_for_watchdog(rpc.pid());
    rpc.sigkill();
    for tag in &tags {
        let left = left_after(tag, Duration::from_secs(2));
        assert!(left.is_empty(), "outlived a SIGKILLed rpc: {left:?}");
    }
}

#[test]
fn sigkill_of_agentbash_mcp_ends_the_run_in_flight() {
    needs_run_groups!();
    let env = TestEnv::new();
    // The MCP server declares the tool `job` for its own `bash`, so the default pack
    // would block these background launches (pointing at `background: true`): this
    // test is about the teardown of the ones that got through.
    std::fs::create_dir_all(env.config_dir().join("profiles")).expect("profiles dir");
    std::fs::write(
        env.config_dir().join("profiles/unintercepted.toml"),
        "extends = \"default\"\n[interceptor]\nenabled = false\n",
    )
    .expect("write profile");
    let mut mcp = LiveServer::start(&env, &["mcp", "-p", "unintercepted"]);
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}),
    );
    mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tag = nonce();
    let cmd = format!("{} sleep 303.{tag}", escapees(&tag));
    mcp.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": cmd}}}));
    wait_started(&tag);
    wait_for_watchdog(mcp.pid());
    mcp.sigkill();
    let left = left_after(&tag, Duration::from_secs(2));
    assert!(left.is_empty(), "outlived a SIGKILLed mcp: {left:?}");
}

/// Every run group is a leaf of one parent per user, made once and kept: after a run
/// its leaf is gone, or given back to the pool empty (`leaf_pool.rs`), and the next
/// agentbash process finds the same parent.
#[test]
fn runs_are_leaves_of_one_kept_parent_group_per_user() {
    let mount = run_groups_mount!();
    let env = TestEnv::new();
    let group = || {
        let out = env.run_text("cat /proc/self/cgroup").code(0).run();
        let line = out.stdout.lines().find_map(|l| l.strip_prefix("0::"));
        PathBuf::from(line.unwrap_or_else(|| panic!("no cgroup v2 line: {}", out.stdout)))
    };
    let (first, second) = (group(), group());
    let parent = first.parent().expect("a parent group");
    assert_eq!(second.parent(), Some(parent), "{first:?} {second:?}");
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(
        parent.file_name().and_then(|n| n.to_str()),
        Some(format!("agentbash-user-{uid}").as_str())
    );
    let on_disk = |g: &Path| mount.join(g.strip_prefix("/").unwrap_or(g));
    assert!(on_disk(parent).is_dir(), "the parent is kept: {parent:?}");
    for leaf in [&first, &second] {
        let pooled = leaf
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("pool-"));
        // A pooled leaf given back may already be another run's here (the suite runs
        // in parallel): what it may hold is `leaf_pool.rs`'s to check, in a parent of
        // its own.
        if !pooled {
            assert!(
                !on_disk(leaf).exists(),
                "a run's group outlived it: {leaf:?}"
            );
        }
    }
}

/// The watchdog of a SIGKILLed agentbash ends that agentbash's runs and no other's:
/// the runs of another agentbash in the same parent group go on.
#[test]
fn a_sigkilled_agentbash_ends_its_own_runs_and_no_one_elses() {
    needs_run_groups!();
    let env = TestEnv::new();
    let (mine, theirs) = (format!("{}1", nonce()), format!("{}2", nonce()));
    let start = |tag: &str| {
        let cmd = format!("{} exec sleep 303.{tag}", escapees(tag));
        env.cmd(&["run", "--", &cmd]).spawn()
    };
    let (killed, other) = (start(&mine), start(&theirs));
    wait_started(&mine);
    wait_started(&theirs);
    let watchdog = wait_for_watchdog(killed.pid());
    wait_for_watchdog(other.pid());
    killed.signal(libc::SIGKILL);
    let _ = killed.wait();
    let left = left_after(&mine, Duration::from_secs(2));
    assert!(left.is_empty(), "outlived a SIGKILLed agentbash: {left:?}");
    // Once its watchdog is gone, it has killed all it ever will.
    let deadline = Instant::now() + scaled(Duration::from_secs(10));
    while std::fs::read_to_string(format!("/proc/{watchdog}/stat"))
        .is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(
            Instant::now() < deadline,
            "the watchdog {watchdog} never ended"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    for n in ["300", "301", "302", "303"] {
        let p = format!("sleep {n}.{theirs}");
        assert!(
            !procs_with_cmdline(&p, Duration::ZERO).is_empty(),
            "{p}, of the other agentbash, was killed"
        );
    }
    other.signal(libc::SIGTERM);
    let _ = other.wait();
    let left = left_after(&theirs, Duration::from_secs(2));
    assert!(left.is_empty(), "outlived its run: {left:?}");
}

/// The parent group of this user's runs, on disk (from where a run finds itself).
fn runs_parent(env: &TestEnv, mount: &Path) -> PathBuf {
    let out = env.run_text("cat /proc/self/cgroup").run();
    let group = out.stdout.lines().find_map(|l| l.strip_prefix("0::"));
    let group = PathBuf::from(group.unwrap_or_else(|| panic!("{}", out.stdout)));
    let parent = group.parent().expect("parent");
    mount.join(parent.strip_prefix("/").expect("absolute"))
}

/// Make `dir`'s modification time an hour old: a leaf left long ago.
fn age(dir: &Path) {
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    match std::fs::File::open(dir).and_then(|f| f.set_modified(an_hour_ago)) {
        // Removed meanwhile by another agentbash of the suite: nothing left to age.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        r => r.unwrap_or_else(|e| panic!("{dir:?}: {e}")),
    }
}

/// A leaf left by an agentbash that is gone is removed by the next agentbash process
/// when it makes its first leaf (no watchdog needed: a run of `true`), with the groups
/// a nested agentbash made in it; the leaf of a live agentbash, one that still holds
/// a process, and one just made (its owner may live in another PID namespace) are
/// left alone.
#[test]
fn the_next_agentbash_removes_the_empty_leaves_of_gone_ones_only() {
    let mount = run_groups_mount!();
    let env = TestEnv::new();
    let parent = runs_parent(&env, &mount);
    // No process has a pid above pid_max.
    let gone: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .expect("pid_max")
        .trim()
        .parse::<u64>()
        .expect("a number")
        + 1;
    let token = format!("{:0>16}", nonce());
    let leaf = |owner: &dyn std::fmt::Display, n: u32| parent.join(format!("{owner}-{token}-{n}"));
    let (dead, nested, held, fresh) = (
        leaf(&gone, 0),
        leaf(&gone, 1),
        leaf(&gone, 2),
        leaf(&gone, 3),
    );
    let alive = leaf(&std::process::id(), 0);
    let inner = nested
        .join("agentbash-user-0")
        .join(format!("{gone}-{token}-0"));
    for dir in [&dead, &nested, &held, &fresh, &alive, &inner] {
        std::fs::create_dir_all(dir).expect("a leaf");
    }
    // The process joins `held` before it looks old: an old empty leaf of a gone
    // owner may be removed at once by any agentbash the suite runs meanwhile.
    // The sleeper killed and the groups removed however the test ends (the shared
    // parent group is every agentbash's of this user).
    struct Cleanup(std::process::Child, Vec<PathBuf>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
            for dir in &self.1 {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
    let tag = nonce();
    let sleeper = std::process::Command::new("sleep")
        .arg(format!("305.{tag}"))
        .spawn()
        .expect("sleep");
    let inner_parent = inner.parent().expect("inner parent").to_path_buf();
    let cleanup = Cleanup(
        sleeper,
        [&inner, &inner_parent, &nested, &held, &fresh, &alive, &dead]
            .map(PathBuf::clone)
            .to_vec(),
    );
    std::fs::write(held.join("cgroup.procs"), cleanup.0.id().to_string()).expect("join");
    for dir in [&dead, &nested, &held, &alive] {
        age(dir);
    }
    env.run_text("true").run().assert_code(0);
    let left = |d: &PathBuf| d.exists();
    let (dead_left, nested_left, held_left, fresh_left, alive_left) = (
        left(&dead),
        left(&nested),
        left(&held),
        left(&fresh),
        left(&alive),
    );
    drop(cleanup);
    assert!(!dead_left, "the empty leaf of a gone agentbash stayed");
    assert!(
        !nested_left,
        "a leaf with a nested agentbash's groups in it stayed"
    );
    assert!(held_left, "a leaf with a process in it was removed");
    assert!(fresh_left, "a leaf just made was removed");
    assert!(alive_left, "the leaf of a live agentbash was removed");
}

/// What a command inherits of signal dispositions: ignored ones agentbash inherited
/// stay ignored (`nohup` keeps working through it), except the stop signals and
/// SIGPIPE, which a command expects live; agentbash's own handlers are not its.
#[test]
fn a_command_keeps_inherited_ignores_but_not_agentbash_handlers_or_stop_signals() {
    let env = TestEnv::new();
    let out = env
        .program(
            "bash",
            &[
                "-c",
                "trap '' USR1 INT; exec \"$0\" run -- 'exec cat /proc/self/status'",
                bin().to_str().expect("utf-8"),
            ],
        )
        .run();
    out.assert_code(0);
    let mask = |field: &str| {
        let hex = out.stdout.lines().find_map(|l| l.strip_prefix(field));
        u64::from_str_radix(hex.expect(field).trim(), 16).expect("hex")
    };
    let bit = |sig: i32| 1u64 << (sig - 1);
    let ignored = mask("SigIgn:");
    assert_ne!(ignored & bit(libc::SIGUSR1), 0, "{}", out.stdout);
    for sig in [libc::SIGINT, libc::SIGPIPE, libc::SIGTERM, libc::SIGHUP] {
        assert_eq!(ignored & bit(sig), 0, "signal {sig}: {}", out.stdout);
    }
    assert_eq!(mask("SigCgt:"), 0, "{}", out.stdout);
    assert_eq!(mask("SigBlk:"), 0, "{}", out.stdout);
}

/// Between clone and exec a child runs agentbash's code, so every handler agentbash
/// installed must be back to the default there. The sandbox's init never execs: what
/// it holds shows what a child of agentbash holds (nothing but the C library's own).
#[test]
fn the_sandbox_init_holds_none_of_agentbash_handlers() {
    let env = TestEnv::new();
    let profile = env.write(
        "ns.toml",
        "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\nmode = \"workspace-write\"\nengine = \"namespaces\"\n",
    );
    let grep = "grep -E '^(Name|SigCgt):' /proc/1/status";
    let v = env
        .run_json(grep)
        .profile(profile.to_str().expect("utf-8"))
        .json();
    if v["sandbox"]["engine"] != "namespaces" {
        skip!(Missing::new(
            "user and PID namespaces for the sandbox",
            "run the suite where unprivileged namespaces are allowed, or as root"
        ));
    }
    let text = s(&v, "output");
    let caught = text
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or_else(|| panic!("{v}"));
    // Signals 32 to 34 are the C library's own (thread cancellation, set*id), which
    // no program can change.
    let libc_own = 0b111u64 << 31;
    assert_eq!(
        caught & !libc_own,
        0,
        "init still runs agentbash handlers: {text}"
    );
}

/// Each killed list as "pid command" strings.
fn killed(data: &Value) -> Vec<String> {
    data["background_killed"]
        .as_array()
        .unwrap_or_else(|| panic!("background_killed: {data:#}"))
        .iter()
        .map(|k| format!("{} {}", k["pid"], s(k, "command")))
        .collect()
}

#[test]
fn rpc_attributes_a_setsid_env_cleared_job_to_its_own_run_only() {
    needs_run_groups!();
    let env = TestEnv::new();
    let mut rpc = LiveServer::start(&env, &["rpc"]);
    let (a, b) = (format!("{}1", nonce()), format!("{}2", nonce()));
    let gate = Gate::new(&env, "both");
    for (id, tag) in [("a", &a), ("b", &b)] {
        // Both running at once (held at the gate until both jobs run), each with a job
        // that left the session and the environment (so no run marker) behind.
        let cmd = format!("setsid env -i sleep 300.{tag} & {}; echo {id}", gate.wait());
        rpc.send(json!({"id": id, "type": "bash", "command": cmd}));
    }
    for tag in [&a, &b] {
        let job = format!("sleep 300.{tag}");
        assert!(
            wait_for_cmdline(&job, Duration::from_secs(10)),
            "{job} never started"
        );
    }
    gate.open();
    let got = rpc.responses(&["a", "b"]);
    for (data, (mine, theirs)) in got.iter().zip([(&a, &b), (&b, &a)]) {
        let k = killed(data);
        assert!(
            k.len() == 1 && k[0].ends_with(&format!("sleep 300.{mine}")),
            "{mine}: {k:?}"
        );
        assert!(!k.iter().any(|c| c.contains(theirs.as_str())), "{k:?}");
        let left = left_after(&format!("sleep 300.{mine}"), Duration::from_millis(500));
        assert!(left.is_empty(), "outlived its run: {left:?}");
    }
}

/// A process that forks its successor and exits every few milliseconds (for at most
/// ten seconds, whatever happens), out of the session and without the run marker.
fn hopper(env: &TestEnv, tag: &str) -> String {
    let hop = env.write(
        "hop.sh",
        "[ \"$(date +%s)\" -lt \"$1\" ] || exit 0\nsleep 0.005\nsetsid env -i sh \"$0\" \"$1\" \"$2\" &\n",
    );
    format!(
        "setsid env -i sh {} $(( $(date +%s) + 10 )) hop.{tag} & sleep 0.5; echo up",
        hop.display()
    )
}

/// Nothing matching `needle` for a whole second.
fn never_seen_for_a_second(needle: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        let now = left_after(needle, Duration::ZERO);
        if !now.is_empty() {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Vec::new()
}

#[test]
fn a_re_forking_process_is_caught_in_run_and_in_rpc() {
    needs_run_groups!();
    let env = TestEnv::new();
    let tag = nonce();
    env.run_json(hopper(&env, &tag))
        .code(0)
        .output("up\n")
        .run();
    let needle = format!("hop.{tag}");
    let left = never_seen_for_a_second(&needle);
    assert!(
        left.is_empty(),
        "run: the hopper outlived its run: {left:?}"
    );

    let tag = nonce();
    let mut rpc = LiveServer::start(&env, &["rpc"]);
    rpc.send(json!({"id": "h", "type": "bash", "command": hopper(&env, &tag)}));
    let data = &rpc.responses(&["h"])[0];
    assert_eq!(data["output"], "up\n", "{data:#}");
    assert!(!killed(data).is_empty(), "{data:#}");
    let left = never_seen_for_a_second(&format!("hop.{tag}"));
    assert!(
        left.is_empty(),
        "rpc: the hopper outlived its run: {left:?}"
    );
}
