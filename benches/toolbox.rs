//! The file tools' benchmark (issue 23), side by side in one process:
//!
//! - `read` of a page of a 1 GiB file (sparse: 3,000 text lines, then a hole): the
//!   median time per call and this process's peak RSS after the reads (targets:
//!   < 5 ms, < 16 MiB);
//! - `grep` of a fixed pattern over this repository, in-process through the library
//!   (ripgrep's crates), against `rg` run as a subprocess with the same walk (hidden
//!   files searched, `.git` skipped, .gitignore respected), alternated each round;
//!   the ratio is ours / rg's median (target ≤ 1: no process to start).
//!
//! Run: `cargo bench --bench toolbox` (release; `AB_BENCH_QUICK=1` for a smoke run).
//! Without `rg` on PATH the comparison is skipped, saying so.

use agentbash::toolbox::Toolbox;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// This process's peak resident set, in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let quick = std::env::var("AB_BENCH_QUICK").is_ok();
    let repo = env!("CARGO_MANIFEST_DIR");
    let profile = agentbash::Lookup::new(repo)
        .load("builtin:default")
        .expect("built-in profile");

    // read: one page of a 1 GiB file.
    let dir = tempfile::tempdir().expect("temp dir");
    let huge = dir.path().join("huge.log");
    let head: String = (1..=3000)
        .map(|n| format!("{n:>8} INFO request handled in {} ms\n", n % 97))
        .collect();
    std::fs::write(&huge, head).expect("write");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&huge)
        .and_then(|f| f.set_len(1 << 30))
        .expect("extend to 1 GiB");
    let files = Toolbox::new(&profile.profile, dir.path());
    let rss_before = peak_rss_kib();
    let reads = if quick { 20 } else { 200 };
    let mut times = Vec::new();
    for i in 0..reads {
        let offset = if i % 2 == 0 { 0 } else { 1000 };
        let started = Instant::now();
        let answer = files
            .call("read", json!({"path": "huge.log", "offset": offset}))
            .expect("read answers");
        times.push(started.elapsed());
        assert_eq!(answer.data["lines"], 2000);
    }
    println!(
        "read: a 2000-line page of a 1 GiB file        median {:>7.3} ms   peak RSS {:.1} MiB (before the reads {:.1} MiB)   target < 5 ms, < 16 MiB",
        ms(median(times)),
        peak_rss_kib() as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );

    // grep over this repository vs rg.
    let rg_present = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !rg_present {
        println!("grep: skipped, no `rg` on PATH (apt-get install ripgrep)");
        return;
    }
    let repo_files = Toolbox::new(&profile.profile, std::path::Path::new(repo));
    let rounds = if quick { 5 } else { 40 };
    for (label, mode, rg_flag) in [
        ("files with a match (rg -l)", "files", "-l"),
        ("matching lines (rg -n)", "lines", "-n"),
    ] {
        let pattern = "CancelToken";
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let (mut our_count, mut rg_count) = (0, 0);
        for _ in 0..rounds {
            let started = Instant::now();
            let answer = repo_files
                .call(
                    "grep",
                    json!({"pattern": pattern, "path": repo, "output_mode": mode, "limit": 5000}),
                )
                .expect("grep answers");
            ours.push(started.elapsed());
            our_count = answer.text.lines().count();
            let started = Instant::now();
            let out = Command::new("rg")
                .args([rg_flag, "--hidden", "-g", "!.git", "--", pattern, repo])
                .stderr(Stdio::null())
                .output()
                .expect("rg runs");
            theirs.push(started.elapsed());
            rg_count = String::from_utf8_lossy(&out.stdout).lines().count();
        }
        let (a, b) = (median(ours), median(theirs));
        println!(
            "grep {label:<30} ours {:>7.2} ms ({our_count} lines)   rg {:>7.2} ms ({rg_count} lines)   ratio {:>5.2}   target <= 1",
            ms(a),
            ms(b),
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
}
