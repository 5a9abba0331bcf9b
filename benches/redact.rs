//! Redaction benchmark (issue 11): the same run with 1,000 redacted names and with
//! none, side by side in one process, reported as the median wall-time ratio plus
//! agentbash's peak RSS. The redactor is one Aho-Corasick automaton over every
//! secret, so the cost should not grow with the number of names × the output size.
//!
//! Run: `cargo bench --bench redact` (set `AB_BENCH_QUICK=1` for a fast smoke run).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Sample {
    wall: Duration,
    max_rss_kb: i64,
}

/// Run `argv` with stdout to /dev/null; wall time and the child's peak RSS (wait4).
// The child is reaped by wait4 below, which also gives its rusage.
#[allow(clippy::zombie_processes)]
fn measure(argv: &[&str], env: &[(String, String)]) -> Sample {
    let start = Instant::now();
    let child = Command::new(argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
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

fn compare(name: &str, iters: usize, ours: &[&str], base: &[&str], env: &[(String, String)]) {
    let (mut a, mut b, mut rss) = (Vec::new(), Vec::new(), 0);
    for _ in 0..iters {
        let s = measure(ours, env);
        rss = rss.max(s.max_rss_kb);
        a.push(s.wall);
        b.push(measure(base, env).wall);
    }
    let (ma, mb) = (median(a), median(b));
    println!(
        "{name:<44} redacted {:>9.1} ms   baseline {:>9.1} ms   ratio {:>5.2}   peak RSS {:.1} MiB",
        ma.as_secs_f64() * 1e3,
        mb.as_secs_f64() * 1e3,
        ma.as_secs_f64() / mb.as_secs_f64(),
        rss as f64 / 1024.0
    );
}

/// A deterministic secret-looking value (xorshift), 20-40 characters.
fn value(seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let len = 20 + (x % 21) as usize;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"[(x % 64) as usize]
                as char
        })
        .collect()
}

fn main() {
    let quick = std::env::var("AB_BENCH_QUICK").is_ok();
    let bin = env!("CARGO_BIN_EXE_agentbash");
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let names = 1000;
    let mut env = vec![
        (
            "AGENTBASH_STATE_DIR".to_string(),
            tmp.path().join("state").display().to_string(),
        ),
        ("HOME".to_string(), home.display().to_string()),
    ];
    let secrets: Vec<(String, String)> = (0..names)
        .map(|i| (format!("BENCH_SECRET_{i:04}"), value(i as u64 + 1)))
        .collect();
    env.extend(secrets.iter().cloned());
    // One glob per name: the worst case for matching names (a real profile has a
    // few globs matching many names).
    let globs: Vec<String> = secrets.iter().map(|(k, _)| format!("\"{k}\"")).collect();
    let redacted = tmp.path().join("redacted.toml");
    std::fs::write(
        &redacted,
        format!("[output]\nredact = [{}]\n", globs.join(", ")),
    )
    .expect("profile");
    let plain = tmp.path().join("plain.toml");
    std::fs::write(&plain, "[output]\nredact = []\n").expect("profile");

    // 27 MB of log-like lines; one line in 500 carries one of the secrets.
    let size: usize = if quick { 4 << 20 } else { 27_000_000 };
    let data = tmp.path().join("output.txt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&data).expect("data"));
    let (mut written, mut n) = (0, 0usize);
    while written < size {
        let line = if n % 500 == 0 {
            format!(
                "{n:08} auth ok token={} scope=read\n",
                secrets[n / 500 % names].1
            )
        } else {
            format!(
                "{n:08} GET /api/v1/items?page={} 200 12ms the quick brown fox\n",
                n % 97
            )
        };
        f.write_all(line.as_bytes()).expect("write");
        written += line.len();
        n += 1;
    }
    f.flush().expect("flush");
    drop(f);
    let cat = format!("cat {}", data.display());
    let (r, p) = (redacted.display().to_string(), plain.display().to_string());

    println!("agentbash redaction benchmark (median of N, same process, alternating runs)");
    let iters = if quick { 3 } else { 7 };
    let mb = size as f64 / 1e6;
    compare(
        &format!("{names} names, {mb:.0} MB, pipe (N={iters})"),
        iters,
        &[bin, "run", "-q", "-p", &r, "--", &cat],
        &[bin, "run", "-q", "-p", &p, "--", &cat],
        &env,
    );
    compare(
        &format!("{names} names, {mb:.0} MB, --json (N={iters})"),
        iters,
        &[bin, "run", "--json", "-p", &r, "--", &cat],
        &[bin, "run", "--json", "-p", &p, "--", &cat],
        &env,
    );
    let short = ["run", "-q", "--", "true"];
    let n_short = if quick { 20 } else { 100 };
    compare(
        &format!("{names} names, start-up: true (N={n_short})"),
        n_short,
        &[bin, short[0], short[1], "-p", &r, short[2], short[3]],
        &[bin, short[0], short[1], "-p", &p, short[2], short[3]],
        &env,
    );
}
