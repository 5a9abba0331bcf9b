//! Sandbox start-up cost (issue 14): `run -q -- true` under each engine against the same
//! run with the sandbox off, alternating, in one process; medians and their ratio.
//!
//! Run: `cargo bench --bench sandbox` (set `AB_BENCH_QUICK=1` for a fast smoke run).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn measure(argv: &[&str], env: &[(&str, &str)], cwd: &std::path::Path) -> Duration {
    let start = Instant::now();
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn benchmark command");
    assert!(status.success(), "{argv:?} failed: {status}");
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::var("AB_BENCH_QUICK").is_ok();
    let bin = env!("CARGO_BIN_EXE_agentbash");
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&work).expect("work");
    let state = tmp.path().join("state").display().to_string();
    let home_s = home.display().to_string();
    let env = [
        ("AGENTBASH_STATE_DIR", state.as_str()),
        ("HOME", home_s.as_str()),
    ];
    let profile = |name: &str, section: &str| {
        let path = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!("extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\n{section}\n"),
        )
        .expect("profile");
        path.display().to_string()
    };
    let off = profile("off", "mode = \"off\"");
    let cases = [
        (
            "landlock",
            profile(
                "landlock",
                "mode = \"workspace-write\"\nengine = \"landlock\"",
            ),
        ),
        (
            "namespaces + landlock",
            profile("ns", "mode = \"workspace-write\"\nengine = \"namespaces\""),
        ),
        (
            "namespaces + landlock + netns",
            profile(
                "netns",
                "mode = \"workspace-write\"\nengine = \"namespaces\"\nnetwork = false",
            ),
        ),
    ];
    let n = if quick { 20 } else { 200 };
    println!("sandbox start-up: `run -q -- true`, median of {n}, alternating with sandbox off");
    let run = |p: &str| measure(&[bin, "run", "-q", "-p", p, "--", "true"], &env, &work);
    for (name, p) in &cases {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for _ in 0..n {
            with.push(run(p));
            without.push(run(&off));
        }
        let (a, b) = (median(with), median(without));
        println!(
            "{name:<32} {:>8.3} ms   off {:>8.3} ms   +{:>6.3} ms   ratio {:>5.2}",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            (a.as_secs_f64() - b.as_secs_f64()) * 1e3,
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
}
