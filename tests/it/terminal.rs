//! What a person at a real terminal (tmux, see [`crate::tmux`]) is shown by the
//! text renderer, and that nothing it hides is lost: a collapsed preview keeps the
//! output as an artifact and names the command that shows it.

use std::time::Duration;

use crate::support::{TestEnv, agentbash_line, assert_has, assert_lacks};

const WAIT: Duration = Duration::from_secs(15);
const LINE_DONE: &str = "shell-line-done";

/// `agentbash run <options> -- <command>` in a 100×60 terminal (tall enough for
/// a 40-line preview), then its exit status; returns the history and screen once
/// the line is done.
fn run_in_terminal(env: &TestEnv, options: &str, command: &str) -> String {
    let line = agentbash_line(options, command, LINE_DONE);
    let term = env.start_terminal(&line, 100, 60);
    term.wait_for_in_history(LINE_DONE, WAIT)
        .expect("the shell line ends")
}

/// The lines of the terminal that are exactly `line N` for some N.
fn numbered(all: &str) -> Vec<u32> {
    all.lines()
        .filter_map(|l| l.trim_end().strip_prefix("line ")?.parse().ok())
        .collect()
}

/// The id in `… N earlier lines hidden · agentbash artifact show ID`.
fn hidden_note(all: &str) -> Option<(u32, String)> {
    all.lines().find_map(|l| {
        let rest = l.trim_end().strip_prefix("… ")?;
        let (count, rest) = rest.split_once(" earlier lines hidden · agentbash artifact show ")?;
        Some((count.parse().ok()?, rest.to_string()))
    })
}

fn artifacts(env: &TestEnv) -> Vec<String> {
    std::fs::read_dir(env.state_dir().join("artifacts"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".bash.log"))
                .collect()
        })
        .unwrap_or_default()
}

/// `agentbash artifact show <args>` as the person would type it next.
fn artifact_show(env: &TestEnv, args: &str) -> String {
    let mut argv = vec!["artifact", "show"];
    argv.extend(args.split_whitespace());
    let out = env.run(&argv);
    out.assert_code(0);
    out.stdout
}

const LINES: &str = "for i in $(seq 30); do echo line $i; done";

/// [`LINES`] run with these options in a terminal, which must exit 0: what it showed.
fn lines_in_terminal(env: &TestEnv, options: &str) -> String {
    let all = run_in_terminal(env, options, LINES);
    assert_has(&all, "ab-exit=0");
    all
}

#[test]
fn a_collapsed_preview_keeps_what_it_hides_as_an_artifact() {
    let env = TestEnv::new();
    let all = lines_in_terminal(&env, "");
    assert_eq!(numbered(&all), (21..=30).collect::<Vec<_>>(), "{all}");
    let (count, args) = hidden_note(&all).unwrap_or_else(|| panic!("no hidden note:\n{all}"));
    assert_eq!(count, 20, "{all}");
    assert_lacks(&all, "--expand");
    // Nothing was cut, yet the 20 hidden lines are kept, and the named command shows them.
    let shown = artifact_show(&env, &args);
    assert_eq!(numbered(&shown), (1..=30).collect::<Vec<_>>(), "{shown}");
}

#[test]
fn a_failing_command_previews_preview_lines_on_failure() {
    let env = TestEnv::new();
    // The example: 31 lines and a failure fit the 40-line failure preview,
    // so all are shown and nothing needs keeping.
    let all = run_in_terminal(&env, "", &format!("{LINES}; echo oops >&2; exit 1"));
    assert_has(&all, "ab-exit=1");
    assert_eq!(numbered(&all), (1..=30).collect::<Vec<_>>(), "{all}");
    assert!(all.lines().any(|l| l.trim_end() == "oops"), "{all}");
    assert!(hidden_note(&all).is_none(), "{all}");
    assert!(artifacts(&env).is_empty(), "{:?}", artifacts(&env));

    // 60 lines: the last 40 are shown, the first 20 kept.
    let all = run_in_terminal(
        &env,
        "",
        "for i in $(seq 60); do echo line $i; done; exit 2",
    );
    assert_has(&all, "ab-exit=2");
    assert_eq!(numbered(&all), (21..=60).collect::<Vec<_>>(), "{all}");
    let (count, args) = hidden_note(&all).unwrap_or_else(|| panic!("no hidden note:\n{all}"));
    assert_eq!(count, 20, "{all}");
    let shown = artifact_show(&env, &args);
    assert_eq!(numbered(&shown), (1..=60).collect::<Vec<_>>(), "{shown}");

    // The profile key sets it.
    env.write(
        "p.toml",
        "extends = \"default\"\n[render]\npreview_lines_on_failure = 15\n",
    );
    let all = run_in_terminal(
        &env,
        "-p ./p.toml",
        "for i in $(seq 60); do echo line $i; done; exit 2",
    );
    assert_eq!(numbered(&all), (46..=60).collect::<Vec<_>>(), "{all}");
    let (count, args) = hidden_note(&all).unwrap_or_else(|| panic!("no hidden note:\n{all}"));
    assert_eq!(
        (count, args.starts_with("-p ./p.toml ")),
        (45, true),
        "{all}"
    );
    assert_eq!(numbered(&artifact_show(&env, &args)).len(), 60);
}

#[test]
fn output_that_fits_the_preview_keeps_no_artifact() {
    let env = TestEnv::new();
    let all = run_in_terminal(&env, "", "for i in $(seq 10); do echo line $i; done");
    assert_eq!(numbered(&all), (1..=10).collect::<Vec<_>>(), "{all}");
    assert!(hidden_note(&all).is_none(), "{all}");
    // --expand and --quiet hide nothing either.
    run_in_terminal(&env, "--expand", LINES);
    let all = run_in_terminal(&env, "-q", LINES);
    assert_eq!(numbered(&all).len(), 30, "{all}");
    assert!(artifacts(&env).is_empty(), "{:?}", artifacts(&env));
    assert!(
        !env.state_dir().join("artifacts").exists(),
        "a run that keeps nothing created the artifacts dir"
    );
}

#[test]
fn without_artifacts_a_terminal_is_shown_everything() {
    let env = TestEnv::new();
    env.write(
        "p.toml",
        "extends = \"default\"\n[artifacts]\nenabled = false\n",
    );
    let all = run_in_terminal(&env, "-p ./p.toml", LINES);
    assert_eq!(numbered(&all), (1..=30).collect::<Vec<_>>(), "{all}");
    assert!(hidden_note(&all).is_none(), "{all}");
}

#[test]
fn stream_on_a_terminal_prints_everything_as_produced() {
    let env = TestEnv::new();
    let all = lines_in_terminal(&env, "--stream");
    assert_eq!(numbered(&all), (1..=30).collect::<Vec<_>>(), "{all}");
    assert!(hidden_note(&all).is_none(), "{all}");
    assert!(all.contains("exit 0 ·"), "the footer follows: {all}");
    assert!(artifacts(&env).is_empty(), "{:?}", artifacts(&env));
}

#[test]
fn stderr_separate_on_a_terminal_shows_whole_stderr_lines_above_the_preview() {
    let env = TestEnv::new();
    let all = run_in_terminal(
        &env,
        "--stderr separate",
        "for i in $(seq 15); do echo line $i; echo warn $i >&2; sleep 0.02; done; printf tail >&2",
    );
    assert_has(&all, "ab-exit=0");
    let warns: Vec<&str> = all
        .lines()
        .map(str::trim_end)
        .filter(|l| l.starts_with("warn "))
        .collect();
    let want: Vec<String> = (1..=15).map(|i| format!("warn {i}")).collect();
    assert_eq!(warns, want, "every stderr line whole, in order:\n{all}");
    assert!(all.lines().any(|l| l.trim_end() == "tail"), "{all}");
    // stdout alone is previewed (and what the preview hides is kept).
    assert_eq!(numbered(&all), (6..=15).collect::<Vec<_>>(), "{all}");
    let (count, args) = hidden_note(&all).unwrap_or_else(|| panic!("no hidden note:\n{all}"));
    assert_eq!(count, 5, "{all}");
    let shown = artifact_show(&env, &args);
    assert_eq!(numbered(&shown), (1..=15).collect::<Vec<_>>(), "{shown}");
    assert_lacks(&shown, "warn");
}
