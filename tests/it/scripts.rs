//! agentbash inside shell scripts and CI jobs: `--stream` into a pipe, `--stderr
//! separate` for `out=$(agentbash run …)`, and no stray directories in a checkout.

use std::time::Duration;

use crate::support::{TestEnv, s};

/// Prints a line, sleeps 2 s, prints another.
const SLOW: &str = "echo first; sleep 2; echo second";

#[test]
fn stream_sends_output_into_a_pipe_as_it_is_produced() {
    let env = TestEnv::new();
    let mut run = env.cmd(&["run", "--stream", "--", SLOW]).spawn();
    let (at, line) = run
        .next_line(Duration::from_secs(10))
        .expect("a first line");
    assert_eq!(line, "first\n");
    let out = run.wait();
    out.assert_code(0);
    assert_eq!(out.stdout, "first\nsecond\n");
    assert!(
        at + Duration::from_millis(1000) < out.elapsed,
        "the first line came at {at:?}, the run ended at {:?}: not streamed",
        out.elapsed
    );
}

#[test]
fn without_stream_the_default_profile_prints_into_a_pipe_at_the_end() {
    // The control for the test above: the same wait would be meaningless if the
    // default already streamed.
    let env = TestEnv::new();
    let mut run = env.cmd(&["run", "--", SLOW]).spawn();
    let (at, _) = run
        .next_line(Duration::from_secs(10))
        .expect("a first line");
    let out = run.wait();
    assert!(at + Duration::from_millis(1000) > out.elapsed, "{at:?}");
}

#[test]
fn stream_with_json_is_a_usage_error() {
    let env = TestEnv::new();
    let out = env.run(&["run", "--stream", "--json", "--", "true"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--format ndjson"), "{}", out.stderr);
}

#[test]
fn profile_ci_creates_its_artifacts_dir_only_for_an_artifact() {
    let env = TestEnv::new();
    let out = env.run(&["run", "-p", "ci", "--", "echo short"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "short\n");
    assert!(
        !env.work().join(".agentbash").exists(),
        "a short run left .agentbash/ in the working directory"
    );

    // 1.9 MB of lines overflow ci's 1 MiB: the artifact is kept, in .agentbash/artifacts.
    let out = env.run(&["run", "-p", "ci", "--json", "--", "seq 1 300000"]);
    out.assert_code(0);
    let v = out.json();
    let path = std::path::PathBuf::from(s(&v["artifact"], "path"));
    assert!(
        path.starts_with(env.work().join(".agentbash/artifacts")),
        "{path:?}"
    );
    assert_eq!(std::fs::metadata(&path).expect("artifact").len(), 1_988_895);
}
