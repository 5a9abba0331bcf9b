//! The trailing `| head`/`| tail` lift (issue 12): lifted only when the pipe
//! receives all of the output, so what is shown is what the command as written shows;
//! a lifted head stops the command as `head` would, an explicit `--head`/`--tail` is a
//! view and never stops or changes anything.

use crate::support::{Output, Test, TestEnv, assert_ends_with, assert_has, notices, s, u};
use std::process::Command;

/// What bash shows for `cmd` when its stdout and stderr are one stream (as agentbash
/// reads them): the oracle every non-lifted run must match.
fn bash_shows(env: &TestEnv, cmd: &str) -> String {
    let out = Command::new("bash")
        .args(["-c", "exec 2>&1; eval \"$1\"", "bash", cmd])
        .current_dir(env.work())
        .output()
        .expect("run bash");
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Lines in any order: stderr written around a pipe reaches the stream whenever the
/// writer gets to it.
fn sorted_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort_unstable();
    v
}

/// A producer of `lines` numbered lines that writes `finished` and exits `code` only
/// if it is not stopped (5,000,000 lines are 38.9 MB, more than agentbash reads past a
/// head limit).
pub(crate) fn producer(lines: u32, code: i32) -> String {
    format!(
        "perl -e 'print \"$_\\n\" for 1..{lines}; open(my $f, \">\", \"finished\"); exit {code}'"
    )
}

/// Regression: `echo a; seq 5 | tail -n 1` showed only `5` — the lift applied to the
/// whole list, though the pipe only receives the last pipeline's output.
#[test]
fn a_list_before_the_pipeline_keeps_its_output() {
    let env = TestEnv::new();
    for cmd in [
        "echo a; seq 5 | tail -n 1",
        "echo a; seq 5 2>&1 | tail -n 1",
    ] {
        let v = env.run_json(cmd).json();
        assert_eq!(s(&v, "output"), "a\n5\n", "{cmd}");
        assert_eq!(s(&v, "output"), bash_shows(&env, cmd));
        assert!(v["stripped"].is_null(), "{cmd}: {v:#}");
        assert_eq!(s(&v, "normalized_command"), cmd);
    }
    env.run_text("echo a; seq 5 | tail -n 1")
        .opts(&["-q"])
        .stdout("a\n5\n")
        .run();
}

/// Regression: `echo first && seq 5 | head -n 2` showed `first`, `1` — the head
/// counted `first` as one of its two lines.
#[test]
fn an_and_list_before_the_pipeline_keeps_its_output() {
    for cmd in [
        "echo first && seq 5 | head -n 2",
        "echo first && seq 5 2>&1 | head -n 2",
    ] {
        let v = Test::new().run_json(cmd).json();
        assert_eq!(s(&v, "output"), "first\n1\n2\n", "{cmd}");
        assert!(v["stripped"].is_null(), "{cmd}: {v:#}");
    }
}

/// Regression: `(echo warn >&2; seq 5) | head -n 1` showed only `warn` — stderr is not
/// piped, so bash shows `warn` and `1`. Stderr outside the pipe is shown and never
/// counted: a subshell is run as written, a simple producer is lifted with the limit
/// on its stdout alone.
#[test]
fn stderr_outside_the_pipe_is_shown_and_not_counted() {
    let env = TestEnv::new();
    for (cmd, lifted) in [
        ("(echo warn >&2; seq 5) | head -n 1", false),
        (
            "perl -e 'print STDERR \"warn\\n\"; print \"$_\\n\" for 1..5' | head -n 1",
            true,
        ),
        (
            "perl -e 'print STDERR \"warn\\n\"; print \"$_\\n\" for 1..5' | tail -n 1",
            true,
        ),
    ] {
        let v = env.run_json(cmd).json();
        let want = if cmd.ends_with("tail -n 1") {
            vec!["5", "warn"]
        } else {
            vec!["1", "warn"]
        };
        assert_eq!(sorted_lines(s(&v, "output")), want, "{cmd}");
        assert_eq!(sorted_lines(&bash_shows(&env, cmd)), want, "{cmd}");
        assert_eq!(!v["stripped"].is_null(), lifted, "{cmd}: {v:#}");
    }
}

/// Regression: in `perl … && touch done | head -n 5` the pipe belongs to `touch`
/// only, yet the lift stopped perl after 16 MiB and `touch` never ran.
#[test]
fn a_pipe_belongs_to_its_last_command_only() {
    let env = TestEnv::new();
    let cmd = "perl -e 'print \"$_\\n\" for 1..5000000' && touch done | head -n 5";
    let v = env.json_of(cmd);
    assert!(v["stripped"].is_null(), "{v:#}");
    assert_eq!(u(&v, "total_lines"), 5_000_000);
    assert!(s(&v, "output").ends_with("4999999\n5000000\n"));
    assert!(env.work().join("done").exists(), "touch never ran");
}

/// Regression: `--head 5` stopped a command printing 5 M lines (it never finished its
/// work, and its exit 1 was reported as 0). An explicit limit is a view only: the
/// command runs to completion, its exit code is reported, the artifact has it all.
#[test]
fn explicit_head_and_tail_are_views_and_never_stop_the_command() {
    let env = TestEnv::new();
    for limit in ["--head", "--tail"] {
        let _ = std::fs::remove_file(env.work().join("finished"));
        let v = env
            .run_json(producer(5_000_000, 1))
            .opts(&[limit, "5"])
            .code(1)
            .json();
        assert!(
            env.work().join("finished").exists(),
            "{limit}: stopped early"
        );
        assert_eq!(u(&v, "total_lines"), 5_000_000, "{limit}");
        assert_eq!(u(&v, "total_bytes"), 38_888_896, "{limit}");
        let want = if limit == "--head" {
            "1\n2\n3\n4\n5\n"
        } else {
            "4999996\n4999997\n4999998\n4999999\n5000000\n"
        };
        assert_eq!(s(&v, "output"), want, "{limit}");
        let path = v["artifact"]["path"].as_str().expect("artifact");
        assert_eq!(std::fs::metadata(path).unwrap().len(), 38_888_896);
        assert!(
            notices(&v).iter().all(|n| !n.contains("stopped")),
            "{:?}",
            notices(&v)
        );
    }
}

/// The same in PTY mode: an explicit `--head` never stops the command there either.
#[test]
fn explicit_head_never_stops_the_command_in_pty_mode() {
    let env = TestEnv::new();
    let v = env
        .run_json(producer(2_500_000, 3))
        .opts(&["--pty", "--head", "2"])
        .code(3)
        .field("mode", "pty")
        .output("1\n2\n")
        .json();
    assert_eq!(u(&v, "total_lines"), 2_500_000);
    assert!(env.work().join("finished").exists(), "stopped early");
}

/// Regression: `yes '' | head -n 10000000` reported 16,850,944 lines. A lifted head
/// that stops the producer reports what the pipeline would have: its N lines, exit 0
/// (a pipeline's status is head's), and a notice saying agentbash stopped it.
#[test]
fn a_lifted_head_that_stops_the_producer_reports_the_pipelines_counts() {
    let env = TestEnv::new();
    let v = env
        .run_json("yes '' 2>&1 | head -n 10000000")
        .code(0)
        .field("stripped", "| head -n 10000000")
        .json();
    assert_eq!(u(&v, "total_lines"), 10_000_000);
    assert_eq!(u(&v, "total_bytes"), 10_000_000);
    let n = notices(&v);
    assert!(
        n.iter().any(|n| n.starts_with("[Showing lines 1-51200 of 10000000 (50.0KB limit); agentbash stopped the command after line 10000000, as `| head` would. Full: artifact://")),
        "{n:?}"
    );
    // Run as written (in a subshell), bash's own head stops `yes`: the same counts.
    let v = env.run_json("(yes '') | head -n 10000000").json();
    assert!(v["stripped"].is_null(), "{v:#}");
    assert_eq!(
        (v["exit_code"].as_i64(), u(&v, "total_lines")),
        (Some(0), 10_000_000)
    );
    // Lifted with stderr around the pipe: the limit on stdout, the same counts.
    let v = env.run_json("yes '' | head -n 10000000").json();
    assert_eq!(s(&v, "stripped"), "| head -n 10000000", "{v:#}");
    assert_eq!(
        (v["exit_code"].as_i64(), u(&v, "total_lines")),
        (Some(0), 10_000_000)
    );
    // A producer that takes the broken pipe as an error of its own (exit 3) still
    // ends the pipeline with head's status.
    let cmd = "perl -e '$SIG{PIPE} = \"IGNORE\"; $| = 1; while (1) { print \"y\" x 999, \"\\n\" or exit 3 }' 2>&1 | head -n 2";
    let v = env.run_json(cmd).opts(&["-t", "60"]).code(0).json();
    assert_eq!(u(&v, "total_lines"), 2);
    assert_eq!(u(&v, "total_bytes"), 2000);
    assert!(
        notices(&v)
            .iter()
            .any(|n| n.contains("agentbash stopped the command"))
    );
}

/// Regression: a lifted head read 16 MiB past its lines whatever the time it took, so
/// a command printing slowly ran on (here: until the timeout) where `head` stops it at
/// its next line. agentbash now reads on for at most a second.
#[test]
fn a_lifted_head_stops_a_slow_producer_about_when_head_would() {
    let cmd = "perl -e '$| = 1; for (1..300) { print \"$_\\n\"; select(undef, undef, undef, 0.1) }' 2>&1 | head -n 2";
    let out = Test::new()
        .run_json(cmd)
        .opts(&["-t", "20"])
        .code(0)
        .output("1\n2\n")
        .run();
    let v = out.json();
    assert_eq!(u(&v, "total_lines"), 2);
    assert!(
        notices(&v)
            .iter()
            .any(|n| n.contains("agentbash stopped the command after line 2"))
    );
    out.assert_ended_within(12);
}

/// What is lifted: one pipeline whose every stage sends stderr into the pipe, after
/// silent `cd`/`export`/assignments. The shown lines are bash's; the full output is
/// in the artifact.
#[test]
fn a_pipe_that_receives_all_of_the_output_is_lifted() {
    let env = TestEnv::new();
    std::fs::create_dir(env.work().join("sub")).unwrap();
    for (cmd, stripped) in [
        (
            "cd sub && export X=1 && Y=2 seq 100 2>&1 | tail -n 3",
            "| tail -n 3",
        ),
        ("seq 100 |& tail -n 3", "|& tail -n 3"),
        ("seq 100 2>&1 | grep -v 7 2>&1 | tail -n 3", "| tail -n 3"),
    ] {
        let v = env.run_json(cmd).json();
        assert_eq!(s(&v, "stripped"), stripped, "{cmd}: {v:#}");
        assert_eq!(s(&v, "output"), bash_shows(&env, cmd), "{cmd}");
        let path = v["artifact"]["path"].as_str().expect("artifact");
        assert!(
            std::fs::read_to_string(path)
                .unwrap()
                .starts_with("1\n2\n3\n")
        );
    }
}

/// With an explicit limit the trailing pipe is not lifted: the explicit limit views
/// what the command as written prints (`--tail 7` on `… | tail -n 5` shows 5 lines,
/// as the command does; lifted, it showed 7).
#[test]
fn explicit_limits_view_the_command_as_written() {
    let env = TestEnv::new();
    let cmd = "seq 100 2>&1 | tail -n 5";
    let v = env
        .run_json(cmd)
        .opts(&["--tail", "7"])
        .output("96\n97\n98\n99\n100\n")
        .json();
    assert!(v["stripped"].is_null(), "{v:#}");
    env.run_json(cmd)
        .opts(&["--head", "3"])
        .output("96\n97\n98\n")
        .run();
}

/// `explain` says why a pipe was or was not lifted, in text and JSON.
#[test]
fn explain_says_why_a_pipe_was_or_was_not_lifted() {
    let env = TestEnv::new();
    let out = env.run_ok(&["explain", "--", "echo a; seq 5 2>&1 | tail -n 1"]);
    assert_has(
        &out.stdout,
        "lift        not lifted — \"echo a\" before the pipeline may also print\n",
    );
    env.test().args(&["explain", "--", "make | tail -n 5"]).stdout_has("lift        lifted — `| tail -n 5` receives stdout only: it becomes a line limit on stdout, stderr shown in full\n").run();
    env.test().args(&["explain", "--pty", "--", "make | tail -n 5"]).stdout_has("lift        not lifted — the pipe receives stdout only, and in a terminal (PTY mode) stdout and stderr are one stream").run();
    let v = env
        .explain_json("(echo warn >&2; seq 5) | head -n 1")
        .json();
    assert!(v["normalize"]["stripped"].is_null(), "{v:#}");
    assert_eq!(v["normalize"]["lift"]["lifted"], false);
    assert!(
        v["normalize"]["lift"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("subshell")),
        "{v:#}"
    );
    let v = env
        .explain_json("cd src && cargo test 2>&1 | tail -n 20")
        .json();
    assert_eq!(v["normalize"]["stripped"], "| tail -n 20");
    assert_eq!(v["normalize"]["command"], "cd src && cargo test 2>&1");
    assert_eq!(v["normalize"]["lift"]["lifted"], true, "{v:#}");
    env.test().args(&["explain", "--", "yes 2>&1 | head -n 3"]).stdout_has("lift        lifted — `| head -n 3` receives all of the output: it becomes a line limit, and the command is stopped after line 3 as head would stop it").run();
    // No trailing head/tail, no lift line.
    env.test()
        .args(&["explain", "--", "seq 5"])
        .stdout_lacks("lift ")
        .run();
}

/// 40 lines to stdout and 40 to stderr, alternating and unbuffered, then exit 3.
const BOTH_STREAMS_THEN_EXIT_3: &str =
    "perl -e '$| = 1; for (1..40) { print \"out $_\\n\"; print STDERR \"err $_\\n\" } exit 3'";

/// A trailing `| tail`/`| head` that receives stdout only is lifted too (issue 22,
/// item 8): the limit views stdout, stderr is shown in full where bash shows it (a
/// tail's lines after all of stderr), the exit code is the producer's with a notice
/// saying so, and the artifact keeps both streams. Before, `pytest | tail -n 20` ran
/// as written: exit 0 whatever the tests did, and nothing saved.
#[test]
fn a_pipe_that_receives_stdout_only_is_lifted() {
    let env = TestEnv::new();
    let cmd = format!("{BOTH_STREAMS_THEN_EXIT_3} | tail -n 5");
    let out = env.run_json(&cmd).code(3).run();
    let v = out.json();
    assert_eq!(s(&v, "stripped"), "| tail -n 5", "{v:#}");
    // Exactly what bash shows: all of stderr, then tail's lines.
    let mut want: Vec<String> = (1..=40).map(|i| format!("err {i}\n")).collect();
    want.extend((36..=40).map(|i| format!("out {i}\n")));
    assert_eq!(s(&v, "output"), want.concat());
    assert_eq!(s(&v, "output"), bash_shows(&env, &cmd));
    assert_eq!(u(&v, "total_lines"), 80, "{v:#}");
    assert_eq!(
        v["truncation"]["shown_range"],
        serde_json::json!([36, 40]),
        "{v:#}"
    );
    let n = notices(&v);
    assert!(
        n.contains(
            &"[Showing the last 5 of 40 stdout lines and all of stderr. Full: artifact://1]"
                .to_string()
        ) && n.contains(
            &"Exit code is perl's; the stripped `| tail -n 5` would have returned 0".to_string()
        ),
        "{n:?}"
    );
    assert!(s(&v, "text").contains("Exit code is perl's"), "{v:#}");
    let path = v["artifact"]["path"].as_str().expect("an artifact");
    let saved = std::fs::read_to_string(path).expect("artifact");
    assert_eq!(
        (saved.matches("out ").count(), saved.matches("err ").count()),
        (40, 40),
        "both streams saved: {saved}"
    );
    // The simplest failure signal.
    let out = env.run_text("false | tail -n 1").code(1).run();
    assert_has(
        &out.stderr,
        "Exit code is false's; the stripped `| tail -n 1` would have returned 0",
    );
    // Into a pipe, stdout carries what bash's terminal would.
    let out = env
        .run_text(format!("{BOTH_STREAMS_THEN_EXIT_3} | tail -n 2"))
        .run();
    assert_ends_with(&out.stdout, "err 40\nout 39\nout 40\n");
}

/// A stdout-only `| head`: its lines and stderr in the order they come; the producer
/// is stopped once its lines are read (no reading on: what the producer would print
/// on stderr after `head` is gone must not show), and what it prints on stderr once
/// its stdout is closed is still shown, as bash shows it. The exit is the pipeline's.
#[test]
fn a_stdout_only_head_shows_what_bash_shows() {
    let env = TestEnv::new();
    let cmd = "perl -e '$| = 1; $SIG{PIPE} = \"IGNORE\"; for (1..5) { print \"out $_\\n\"; print STDERR \"err $_\\n\" } while (print \"more\\n\") {} print STDERR \"pipe closed\\n\"; exit 3' | head -n 5";
    let out = env.run_json(cmd).opts(&["-t", "60"]).code(0).run();
    let v = out.json();
    assert_eq!(s(&v, "stripped"), "| head -n 5", "{v:#}");
    let mut want = vec!["pipe closed".to_string()];
    want.extend((1..=5).flat_map(|i| [format!("err {i}"), format!("out {i}")]));
    want.sort();
    assert_eq!(sorted_lines(s(&v, "output")), want, "{v:#}");
    assert_eq!(sorted_lines(&bash_shows(&env, cmd)), want);
    let outs: Vec<&str> = s(&v, "output")
        .lines()
        .filter(|l| l.starts_with("out"))
        .collect();
    assert_eq!(outs, ["out 1", "out 2", "out 3", "out 4", "out 5"]);
    assert_eq!(u(&v, "total_lines"), 11, "{v:#}");
    assert!(
        notices(&v)
            .iter()
            .any(|n| n
                .contains("agentbash stopped the command after stdout line 5, as `| head` would")),
        "{v:#}"
    );
    assert!(
        !notices(&v).iter().any(|n| n.starts_with("Exit code is")),
        "{v:#}"
    );
    // A producer that ends by itself before the head is full: its own exit code.
    let cmd = format!("{BOTH_STREAMS_THEN_EXIT_3} | head -n 50");
    let v = env.run_json(&cmd).code(3).json();
    assert_eq!(u(&v, "total_lines"), 80, "{v:#}");
    assert!(
        notices(&v).contains(
            &"Exit code is perl's; the stripped `| head -n 50` would have returned 0".to_string()
        ),
        "{v:#}"
    );
}

/// `agentbash run --json -t 60 OPTS -- COMMAND`, COMMAND being `yes … | head -n 3`:
/// the lifted head stops `yes` as head would, so the run answers head's three lines,
/// exit 0, not timed out.
#[track_caller]
pub(crate) fn yes_stopped_by_head(test: Test<'_>, command: &str, opts: &[&str]) -> Output {
    let run = test.run_json(command).opts(&["-t", "60"]).opts(opts);
    run.code(0)
        .output("y\ny\ny\n")
        .field("timed_out", false)
        .run()
}

/// A lifted head still stops a producer that never ends (`yes | head -n 3`), and the
/// run reports the pipeline's exit, 0, and its counts.
#[test]
fn a_stdout_only_head_stops_the_producer() {
    let v = yes_stopped_by_head(Test::new(), "yes | head -n 3", &[]).json();
    assert_eq!(u(&v, "total_lines"), 3);
    assert!(
        notices(&v)
            .iter()
            .any(|n| n.contains("agentbash stopped the command after stdout line 3")),
        "{v:#}"
    );
}

/// Where stdout and stderr cannot be kept apart the pipe is not lifted: a terminal
/// (PTY mode) runs it as written. `--stderr separate` keeps the limit on stdout and
/// all of stderr on agentbash's stderr. rpc (which would use a live shell) lifts it
/// like the CLI.
#[test]
fn a_stdout_only_lift_in_pty_mode_rpc_and_with_separate_stderr() {
    let env = TestEnv::new();
    let v = env.run_json("seq 10 | tail -n 2").opts(&["--pty"]).json();
    assert!(v["stripped"].is_null(), "{v:#}");
    assert_eq!(s(&v, "output"), "9\n10\n");
    let cmd = format!("{BOTH_STREAMS_THEN_EXIT_3} | tail -n 2");
    let out = env
        .run_text(&cmd)
        .opts(&["--stderr", "separate"])
        .code(3)
        .stdout("out 39\nout 40\n")
        .run();
    assert!(out.stderr.starts_with("err 1\nerr 2\n"), "{}", out.stderr);
    assert_has(&out.stderr, "err 40\n");
    let mut rpc = env.rpc(&[]);
    let v = rpc.ask(serde_json::json!({"id": "1", "type": "bash", "command": cmd}));
    let data = &v["data"];
    assert_eq!(data["exit_code"], 3, "{v:#}");
    assert_eq!(s(data, "output"), bash_shows(&env, &cmd));
    assert!(data["artifact"]["path"].is_string(), "{v:#}");
}

/// The issue's own example: `cargo build | head` of a crate that does not compile
/// showed cargo's errors and exited 0; lifted, it exits with cargo's code, every
/// error shown, and says why the exit code is not head's.
#[test]
fn cargo_build_piped_to_head_keeps_its_failure() {
    let env = TestEnv::new();
    let real_home = std::env::var("HOME").unwrap_or_default();
    let rustup = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{real_home}/.rustup"));
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{real_home}/.cargo"));
    let probe = Command::new("cargo").arg("--version").output();
    if !probe.is_ok_and(|o| o.status.success()) {
        crate::support::skip!("cargo is not on PATH", "run the suite with cargo installed");
    }
    env.write(
        "broken/Cargo.toml",
        "[package]\nname = \"broken\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    env.write(
        "broken/src/main.rs",
        "fn main() { let x: u8 = \"not a number\"; }\n",
    );
    let rustup_env = format!("RUSTUP_HOME={rustup}");
    let cargo_env = format!("CARGO_HOME={cargo_home}");
    let v = env
        .run_json("cargo build --offline | head -n 5")
        .opts(&[
            "-t",
            "300",
            "-C",
            "broken",
            "-e",
            &rustup_env,
            "-e",
            &cargo_env,
        ])
        .code(101)
        .json();
    assert_eq!(s(&v, "stripped"), "| head -n 5", "{v:#}");
    assert!(
        s(&v, "output").contains("error[E0308]: mismatched types"),
        "{v:#}"
    );
    assert!(
        notices(&v).contains(
            &"Exit code is cargo's; the stripped `| head -n 5` would have returned 0".to_string()
        ),
        "{v:#}"
    );
}
