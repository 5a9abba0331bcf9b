//! Sandbox cost (issue 14): `run -q -- true` under each engine against the same run with
//! the sandbox off, and a build-like workload (`cargo build` of a tiny crate in the
//! workspace, `CARGO_HOME` there too) under `workspace-write` against off; alternating,
//! in one process; medians and their ratio.
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
        report(name, median(with), median(without));
    }
    build_workload(
        bin,
        &env,
        &work,
        &off,
        &cases[1].1,
        if quick { 3 } else { 11 },
    );
}

fn report(name: &str, with: Duration, without: Duration) {
    let (a, b) = (with.as_secs_f64(), without.as_secs_f64());
    println!(
        "{name:<32} {:>8.3} ms   off {:>8.3} ms   +{:>6.3} ms   ratio {:>5.2}",
        a * 1e3,
        b * 1e3,
        (a - b) * 1e3,
        a / b
    );
}

/// A clean `cargo build` of a dependency-free crate in the workspace, through
/// agentbash with the sandbox on and off. Skipped when `cargo` is not on PATH.
fn build_workload(
    bin: &str,
    env: &[(&str, &str)],
    work: &std::path::Path,
    off: &str,
    sandboxed: &str,
    n: usize,
) {
    let crate_dir = work.join("tiny");
    std::fs::create_dir_all(crate_dir.join("src")).expect("crate dir");
    std::fs::write(
        crate_dir.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .expect("manifest");
    std::fs::write(
        crate_dir.join("src/main.rs"),
        "fn main() { println!(\"{}\", (1..100u64).sum::<u64>()); }\n",
    )
    .expect("main.rs");
    // rustup finds its toolchains through RUSTUP_HOME, which defaults under the real
    // home the benchmark replaces.
    let rustup_home = std::env::var("RUSTUP_HOME")
        .ok()
        .or_else(|| std::env::var("HOME").ok().map(|h| format!("{h}/.rustup")));
    let mut env = env.to_vec();
    if let Some(home) = rustup_home.as_deref() {
        env.push(("RUSTUP_HOME", home));
    }
    let script = "rm -rf tiny/target && CARGO_HOME=$PWD/.cargo cargo build -q --offline \
                  --manifest-path tiny/Cargo.toml --target-dir tiny/target";
    let run = |p: &str| {
        measure(
            &[bin, "run", "-q", "-t", "300", "-p", p, "--", script],
            &env,
            work,
        )
    };
    let probe = Command::new("cargo")
        .arg("--version")
        .envs(env.iter().copied())
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        println!("build workload skipped: no cargo");
        return;
    }
    run(off);
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..n {
        with.push(run(sandboxed));
        without.push(run(off));
    }
    println!("build workload: clean `cargo build` of a tiny crate in the workspace, median of {n}");
    report(
        "workspace-write (namespaces)",
        median(with),
        median(without),
    );
}
