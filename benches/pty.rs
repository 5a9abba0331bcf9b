//! PTY throughput (issue 4): `seq 1 1000000` through `agentbash run -q --pty`
//! (headless: stdout is /dev/null, so no viewport) against `script(1)` running the
//! same command in a PTY, alternating runs in one process. Reports the median wall
//! times, their ratio (target: at most 1.5) and agentbash's peak RSS.
//!
//! Run: `cargo bench --bench pty` (set `AB_BENCH_QUICK=1` for a fast smoke run).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The command both sides run.
const WORKLOAD: &str = "seq 1 1000000";

/// Variables that would change what agentbash does.
const CLEARED: &[&str] = &[
    "AGENTBASH_PROFILE",
    "AGENTBASH_NO_PTY",
    "AGENTBASH_NO_CI",
    "NO_COLOR",
    "CLICOLOR_FORCE",
    "GITHUB_ACTIONS",
];

struct Sample {
    wall: Duration,
    max_rss_kb: i64,
}

/// Runs `argv` with stdin and stdout on /dev/null; wall time and the child's peak
/// RSS (wait4). Panics when the command fails: a failed run is not a measurement.
// wait4 reaps the child (it alone gives the rusage), so `Child::wait` is not used.
#[allow(clippy::zombie_processes)]
fn measure(argv: &[&str], env: &[(&str, &Path)]) -> Sample {
    let mut command = Command::new(argv[0]);
    command.args(&argv[1..]);
    for key in CLEARED {
        command.env_remove(key);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let start = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", argv[0]));
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child with valid out-pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert!(
        pid > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{argv:?} failed (wait status {status:#x})"
    );
    Sample {
        wall,
        max_rss_kb: usage.ru_maxrss,
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let quick = std::env::var_os("AB_BENCH_QUICK").is_some();
    let runs = if quick { 3 } else { 11 };
    let bin = env!("CARGO_BIN_EXE_agentbash");
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tmp.path().join("home");
    let state = tmp.path().join("state");
    std::fs::create_dir_all(&home).expect("home dir");
    let env: [(&str, &Path); 6] = [
        ("HOME", &home),
        ("AGENTBASH_STATE_DIR", &state),
        ("AGENTBASH_CONFIG_DIR", &tmp.path().join("config")),
        ("XDG_CONFIG_HOME", &tmp.path().join("config")),
        ("XDG_STATE_HOME", &tmp.path().join("xdg-state")),
        ("XDG_CACHE_HOME", &tmp.path().join("cache")),
    ];
    let ours = [bin, "run", "-q", "--pty", "--", WORKLOAD];
    let bare = ["script", "-qec", WORKLOAD, "/dev/null"];

    // One unmeasured run each: page cache, the shell snapshot, the artifact dir.
    measure(&ours, &env);
    measure(&bare, &env);
    let (mut a, mut b, mut rss) = (Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        let sample = measure(&ours, &env);
        rss = rss.max(sample.max_rss_kb);
        a.push(sample.wall);
        b.push(measure(&bare, &env).wall);
        // Each run spills the whole transcript to an artifact; do not let them pile up.
        let _ = std::fs::remove_dir_all(state.join("artifacts"));
    }
    let (ma, mb) = (median(a), median(b));
    println!("agentbash PTY benchmark (median of {runs}, same process, alternating runs)");
    println!(
        "pty: {WORKLOAD:<16} agentbash --pty {:>8.1} ms   script -qec {:>8.1} ms   ratio {:>5.2}   agentbash peak RSS {:.1} MiB",
        ma.as_secs_f64() * 1e3,
        mb.as_secs_f64() * 1e3,
        ma.as_secs_f64() / mb.as_secs_f64(),
        rss as f64 / 1024.0
    );
}
