//! Time limits, cancellation and teardown (§4.4, §4.7): timeouts, clamping, signals
//! sent to agentbash, commands killed by signals, and no process left behind
//! (issue 2, item 7).

use crate::support::{TestEnv, bin, nonce, procs_with_cmdline, s, wait_for_cmdline};
use std::time::{Duration, Instant};

#[test]
fn timeout_exits_124_in_about_a_second() {
    let env = TestEnv::new();
    let out = env.run(&["run", "-t", "1", "--", "sleep 30"]);
    out.assert_code(124);
    assert!(
        out.elapsed < Duration::from_secs(3),
        "took {:?}",
        out.elapsed
    );
    assert!(
        out.elapsed >= Duration::from_millis(900),
        "took {:?}",
        out.elapsed
    );
    assert_eq!(
        out.stderr.lines().next(),
        Some("[Command timed out after 1 seconds]"),
        "stderr: {:?}",
        out.stderr
    );
}

#[test]
fn timeout_in_json_keeps_the_output_so_far() {
    let env = TestEnv::new();
    let out = env.run(&["run", "--json", "-t", "1", "--", "echo before; sleep 30"]);
    out.assert_code(124);
    let v = out.json();
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["exit_code"], 124);
    assert_eq!(v["timeout_s"], 1);
    let text = s(&v, "text");
    assert_eq!(
        text.lines().next(),
        Some("[Command timed out after 1 seconds]"),
        "{text:?}"
    );
    assert!(s(&v, "output").contains("before"), "{v:#}");
    assert!(text.contains("before"));
}

#[test]
fn timeout_tears_down_the_whole_tree() {
    let env = TestEnv::new();
    let sleep = format!("sleep 377.{}", nonce());
    let cmd = format!("{sleep} & setsid {sleep} & ( {sleep} & ) ; {sleep}");
    let out = env.run(&["run", "--json", "-t", "1", "--", &cmd]);
    out.assert_code(124);
    assert!(
        out.elapsed < Duration::from_secs(4),
        "took {:?}",
        out.elapsed
    );
    let left = procs_with_cmdline(&sleep, Duration::from_secs(2));
    assert!(left.is_empty(), "left running after the timeout: {left:?}");
    let left = env.leftovers(Duration::from_secs(1));
    assert!(left.is_empty(), "left running after the timeout: {left:?}");
}

#[test]
fn timeout_escalates_to_kill_when_term_is_ignored() {
    let env = TestEnv::new();
    let sleep = format!("sleep 376.{}", nonce());
    let out = env.run(&[
        "run",
        "--json",
        "-t",
        "1",
        "--",
        &format!("trap '' TERM; {sleep}; echo after"),
    ]);
    out.assert_code(124);
    // 1 s timeout + 1 s kill_grace_ms, with room for a loaded machine.
    assert!(
        out.elapsed < Duration::from_secs(5),
        "took {:?}",
        out.elapsed
    );
    assert!(procs_with_cmdline(&sleep, Duration::from_secs(2)).is_empty());
}

#[test]
fn huge_timeout_is_clamped_with_a_notice() {
    let env = TestEnv::new();
    let out = env.run(&["run", "--json", "-t", "99999", "--", "true"]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["timeout_s"], 3600);
    assert_eq!(v["requested_timeout_s"], 99999);
    let want = "Timeout clamped to 3600s (requested 99999s; allowed range 1-3600s).";
    assert!(
        v["notices"].as_array().unwrap().iter().any(|n| n == want),
        "{:#}",
        v["notices"]
    );
    let out = env.run(&["run", "-t", "99999", "--", "true"]);
    out.assert_code(0);
    assert!(out.stderr.contains(want), "stderr: {:?}", out.stderr);
}

#[test]
fn zero_and_negative_timeouts_clamp_to_one_second() {
    let env = TestEnv::new();
    for (arg, requested) in [("0", "0"), ("-5", "-5")] {
        let out = env.run(&["run", "--json", "-t", arg, "--", "echo ok"]);
        out.assert_code(0);
        let v = out.json();
        assert_eq!(v["timeout_s"], 1, "-t {arg}");
        let want =
            format!("Timeout clamped to 1s (requested {requested}s; allowed range 1-3600s).");
        assert!(
            v["notices"].as_array().unwrap().iter().any(|n| *n == want),
            "-t {arg}: {:#}",
            v["notices"]
        );
    }
    let out = env.run(&["run", "--json", "--timeout=-1", "--", "sleep 30"]);
    out.assert_code(124);
    assert!(
        out.elapsed < Duration::from_secs(3),
        "took {:?}",
        out.elapsed
    );
}

#[test]
fn profile_max_bounds_the_clamp() {
    let env = TestEnv::new();
    env.write("p.toml", "[timeout]\ndefault = 20\nmax = 600\n");
    let v = env
        .run(&[
            "run", "--json", "-p", "./p.toml", "-t", "1000", "--", "true",
        ])
        .json();
    assert_eq!(v["timeout_s"], 600);
    assert!(
        v["notices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "Timeout clamped to 600s (requested 1000s; allowed range 1-600s)."),
        "{:#}",
        v["notices"]
    );
    let v = env
        .run(&["run", "--json", "-p", "./p.toml", "--", "true"])
        .json();
    assert_eq!(v["timeout_s"], 20);
    assert_eq!(v["notices"], serde_json::json!([]));
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
        after < Duration::from_secs(4),
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
    let left = procs_with_cmdline(&sleep, Duration::from_secs(2));
    assert!(left.is_empty(), "left running after cancel: {left:?}");
    let left = env.leftovers(Duration::from_secs(1));
    assert!(left.is_empty(), "left running after cancel: {left:?}");
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
    assert!(procs_with_cmdline(&sleep, Duration::from_secs(2)).is_empty());

    let run = env.cmd(&["run", "--", &cmd]).spawn();
    assert!(wait_for_cmdline(&sleep, Duration::from_secs(10)));
    run.signal(libc::SIGINT);
    let out = run.wait();
    out.assert_code(130);
    assert_eq!(out.stdout, "started\n");
    assert!(
        out.stderr.contains("[Command cancelled]"),
        "{:?}",
        out.stderr
    );
    assert!(procs_with_cmdline(&sleep, Duration::from_secs(2)).is_empty());
}

#[test]
fn command_killed_by_a_signal_exits_128_plus_n() {
    let env = TestEnv::new();
    let out = env.run(&["run", "--json", "--", "echo x; kill -9 $$"]);
    out.assert_code(137);
    let v = out.json();
    assert_eq!(v["exit_code"], 137);
    assert_eq!(v["signal"], "SIGKILL");
    assert_eq!(v["cancelled"], false);
    assert_eq!(v["timed_out"], false);
    assert!(s(&v, "output").contains('x'));
    let out = env.run(&["run", "--json", "--", "kill -TERM $$"]);
    out.assert_code(143);
    assert_eq!(out.json()["signal"], "SIGTERM");
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
    let left = procs_with_cmdline(&sleep, Duration::from_secs(3));
    assert!(
        left.is_empty(),
        "the direct child outlived agentbash: {left:?}"
    );
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

#[test]
fn timeout_in_text_format_keeps_the_output_so_far_on_stdout() {
    let env = TestEnv::new();
    let out = env.run(&["run", "-t", "1", "--", "echo before; sleep 30"]);
    out.assert_code(124);
    assert_eq!(out.stdout, "before\n");
}

/// Regression (fixed): the clamp notice repeats the value the user typed; a value
/// past 64 bits is a usage error rather than a notice naming i64::MAX.
#[test]
fn clamp_notice_repeats_the_requested_value() {
    let env = TestEnv::new();
    let out = env.run(&["run", "--json", "-t", "9999999999", "--", "true"]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["timeout_s"], 3600);
    let want = "Timeout clamped to 3600s (requested 9999999999s; allowed range 1-3600s).";
    assert!(
        v["notices"].as_array().unwrap().iter().any(|n| n == want),
        "{:#}",
        v["notices"]
    );
    // Past 64 bits there is no honest number to repeat: a usage error.
    let out = env.run(&["run", "--json", "-t", "99999999999999999999", "--", "true"]);
    out.assert_code(2);
    assert!(out.stderr.contains("too large"), "{}", out.stderr);
}
