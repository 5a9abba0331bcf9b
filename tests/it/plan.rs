//! The plan holds every decision of a run: `explain` shows how the command would run
//! once started (limits, grace, terminal, output budgets, job policy), in JSON and in
//! text, field for field, and the run does what it showed.

use crate::support::TestEnv;

const PROFILE: &str = "extends = \"default\"\n\
    [pty]\ncols = 101\nrows = 33\nkill_key = \"ctrl-g\"\n\
    [limits]\nprocesses = 4242\ncpu_seconds = 77\n\
    [timeout]\nkill_grace_ms = 1234\n\
    [output]\nmax_bytes = 9999\n\
    [jobs]\nidle_timeout = 55\nbackground_after = 9\n\
    [env.set]\nPLANNED = \"1\"\n";

#[test]
fn explain_shows_every_execution_decision_in_json_and_text() {
    let env = TestEnv::new();
    env.user_profile("planned", PROFILE);
    let json = env
        .run(&[
            "explain", "-p", "planned", "--format", "json", "-e", "MINE=2", "--", "true",
        ])
        .json();
    let e = &json["execution"];
    assert_eq!(e["pty_cols"], 101, "{e}");
    assert_eq!(e["pty_rows"], 33, "{e}");
    assert_eq!(e["kill_key"], "ctrl-g", "{e}");
    assert_eq!(e["limits"]["processes"], 4242, "{e}");
    assert_eq!(e["limits"]["cpu_seconds"], 77, "{e}");
    assert_eq!(e["kill_grace_ms"], 1234, "{e}");
    assert_eq!(e["max_bytes"], 9999, "{e}");
    assert_eq!(e["idle_timeout_s"], 55, "{e}");
    assert_eq!(e["jobs"]["background_after"], 9, "{e}");
    assert_eq!(
        e["explicit_env"],
        serde_json::json!(["MINE", "PLANNED"]),
        "{e}"
    );
    // A caller's timeout turns the idle limit off: the plan says so.
    let timed = env
        .run(&[
            "explain",
            "-p",
            "planned",
            "--format",
            "json",
            "--timeout",
            "5",
            "--",
            "true",
        ])
        .json();
    assert_eq!(
        timed["execution"]["idle_timeout_s"],
        serde_json::Value::Null
    );

    // The text form has a line for every field the JSON has, in the same order.
    let text = env.run(&["explain", "-p", "planned", "--", "true"]).stdout;
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("execution"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    let labels: Vec<&str> = section
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let keys: Vec<&str> = e
        .as_object()
        .expect("execution is an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(labels, keys, "{text}");
    assert!(
        section.iter().any(|l| l.contains("processes=4242")),
        "{text}"
    );
}

/// What the plan shows is what the run gets: the limits and the kill grace.
#[test]
fn the_run_gets_the_limits_the_plan_shows() {
    let env = TestEnv::new();
    env.user_profile("planned", PROFILE);
    let out = env
        .run_text("ulimit -u; ulimit -t")
        .profile("planned")
        .code(0)
        .run();
    assert_eq!(out.stdout, "4242\n77\n");
}
