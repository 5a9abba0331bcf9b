//! Core benchmarks (issue 2): agentbash against the bare shell, side by side in one
//! process, reported as median wall-time ratios plus agentbash's peak RSS.
//!
//! Run: `cargo bench --bench core` (set `AB_BENCH_QUICK=1` for a fast smoke run, and
//! `AB_BENCH_BASELINE=/path/to/agentbash` to time another build beside this one).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Sample {
    wall: Duration,
    max_rss_kb: i64,
}

/// Run `argv` with stdout to /dev/null; wall time and the child's peak RSS (wait4).
// The child is reaped by wait4 below, which also gives its rusage.
#[allow(clippy::zombie_processes)]
fn measure(argv: &[&str], env: &[(&str, &str)]) -> Sample {
    let start = Instant::now();
    let child = Command::new(argv[0])
        .args(&argv[1..])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn benchmark command");
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child with valid out-pointers.
    unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    Sample {
        wall: start.elapsed(),
        max_rss_kb: ru.ru_maxrss,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn compare(name: &str, iters: usize, ours: &[&str], bare: &[&str], env: &[(&str, &str)]) {
    let (mut a, mut b, mut rss) = (Vec::new(), Vec::new(), 0);
    for _ in 0..iters {
        let s = measure(ours, env);
        rss = rss.max(s.max_rss_kb);
        a.push(s.wall);
        b.push(measure(bare, env).wall);
    }
    let (ma, mb) = (median(a), median(b));
    println!(
        "{name:<34} agentbash {:>9.3} ms   bare {:>9.3} ms   ratio {:>5.2}   agentbash peak RSS {:.1} MiB",
        ma.as_secs_f64() * 1e3,
        mb.as_secs_f64() * 1e3,
        ma.as_secs_f64() / mb.as_secs_f64(),
        rss as f64 / 1024.0
    );
}

fn main() {
    let quick = std::env::var("AB_BENCH_QUICK").is_ok();
    let bin = env!("CARGO_BIN_EXE_agentbash");
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let state_s = state.display().to_string();
    let home_s = home.display().to_string();
    let env = [
        ("AGENTBASH_STATE_DIR", state_s.as_str()),
        ("HOME", home_s.as_str()),
    ];
    let out_file = tmp.path().join("bare.out").display().to_string();

    println!("agentbash core benchmarks (median of N, same process, alternating runs)");
    let n = if quick { 20 } else { 200 };
    compare(
        &format!("startup: true (N={n})"),
        n,
        &[bin, "run", "-q", "--", "true"],
        &["bash", "-c", "true"],
        &env,
    );
    // The run cgroup's share of start-up: the same binary without it.
    let no_cgroup: Vec<(&str, &str)> = env
        .iter()
        .copied()
        .chain([("AGENTBASH_NO_CGROUP", "1")])
        .collect();
    compare(
        &format!("startup: true, no run cgroup (N={n})"),
        n,
        &[bin, "run", "-q", "--", "true"],
        &["bash", "-c", "true"],
        &no_cgroup,
    );
    // Another build side by side (AB_BENCH_BASELINE=/path/to/agentbash): a change's
    // start-up cost against the binary before it, in the same minute.
    if let Ok(baseline) = std::env::var("AB_BENCH_BASELINE") {
        compare(
            &format!("startup: true, baseline {baseline} (N={n})"),
            n,
            &[&baseline, "run", "-q", "--", "true"],
            &["bash", "-c", "true"],
            &env,
        );
    }
    compare(
        &format!("startup ref: timeout 300 (N={n})"),
        n,
        &["timeout", "300", "bash", "-c", "true"],
        &["bash", "-c", "true"],
        &env,
    );
    let gib: u64 = if quick { 64 << 20 } else { 1 << 30 };
    let lines =
        format!("yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c {gib}");
    let one_line = format!("head -c {gib} /dev/zero | tr '\\0' a");
    let bare_lines = format!("{lines} | cat > {out_file}");
    let bare_one = format!("{one_line} | cat > {out_file}");
    let iters = if quick { 2 } else { 3 };
    let label = if quick { "64 MiB" } else { "1 GiB" };
    compare(
        &format!("throughput: {label} of lines (N={iters})"),
        iters,
        &[bin, "run", "-q", "--", &lines],
        &["bash", "-c", &bare_lines],
        &env,
    );
    let _ = std::fs::remove_dir_all(state.join("artifacts"));
    compare(
        &format!("throughput: {label} on one line (N={iters})"),
        iters,
        &[bin, "run", "-q", "--", &one_line],
        &["bash", "-c", &bare_one],
        &env,
    );
}
