//! RPC benchmark (issue 6): sequential `true` requests over one `agentbash rpc`
//! connection (one session, so a warm live shell) against `agentbash run -q -- true`
//! processes and bare `bash -c true` spawns, in one process; plus 8 concurrent
//! clients' throughput.
//!
//! Run: `cargo bench --bench rpc` (`AB_BENCH_QUICK=1` for a smoke run).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn spawn_wait(argv: &[&str], env: &[(&str, &str)]) {
    let _ = Command::new(argv[0])
        .args(&argv[1..])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// One rpc connection running `n` sequential requests; returns the elapsed time.
fn rpc_sequential(
    bin: &str,
    env: &[(&str, &str)],
    n: usize,
    session: Option<&str>,
    command: &str,
) -> Duration {
    let mut child = Command::new(bin)
        .arg("rpc")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("agentbash rpc");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut one = |i: usize| {
        let mut req = json!({"id": i, "type": "bash", "command": command});
        if let Some(s) = session {
            req["session"] = json!(s);
        }
        writeln!(stdin, "{req}").expect("write");
        stdin.flush().expect("flush");
        loop {
            let line = lines.next().expect("a line").expect("read");
            let v: Value = serde_json::from_str(&line).expect("json");
            if v["type"] == "response" {
                assert_eq!(v["success"], true, "{v}");
                break;
            }
        }
    };
    one(usize::MAX); // warm the live shell
    let start = Instant::now();
    for i in 0..n {
        one(i);
    }
    let took = start.elapsed();
    drop(stdin);
    let _ = child.wait();
    took
}

fn per_call(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e3 / n as f64
}

fn main() {
    let quick = std::env::var("AB_BENCH_QUICK").is_ok();
    let n = if quick { 50 } else { 1000 };
    let bin = env!("CARGO_BIN_EXE_agentbash");
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let (state_s, home_s) = (state.display().to_string(), home.display().to_string());
    let env = [
        ("AGENTBASH_STATE_DIR", state_s.as_str()),
        ("HOME", home_s.as_str()),
    ];

    println!("agentbash rpc benchmark, N={n} sequential `true`");
    let bare = {
        let s = Instant::now();
        for _ in 0..n {
            spawn_wait(&["bash", "-c", "true"], &env);
        }
        s.elapsed()
    };
    let procs = {
        let s = Instant::now();
        for _ in 0..n {
            spawn_wait(&[bin, "run", "-q", "--", "true"], &env);
        }
        s.elapsed()
    };
    let warm = rpc_sequential(bin, &env, n, Some("bench"), "true");
    let saving = rpc_sequential(bin, &env, n, Some("bench"), "x=$((x+1))");
    let fresh = rpc_sequential(bin, &env, n, None, "true");
    let b = per_call(bare, n);
    println!(
        "bash -c true (spawn)               {:>8.3} ms/call   1.00x",
        b
    );
    println!(
        "agentbash run -q -- true (process) {:>8.3} ms/call   {:.2}x",
        per_call(procs, n),
        per_call(procs, n) / b
    );
    println!(
        "rpc, one session (warm shell)      {:>8.3} ms/call   {:.2}x",
        per_call(warm, n),
        per_call(warm, n) / b
    );
    println!(
        "rpc, one session, x=$((x+1)) (saved) {:>6.3} ms/call   {:.2}x",
        per_call(saving, n),
        per_call(saving, n) / b
    );
    println!(
        "rpc, no session (reused live shell){:>8.3} ms/call   {:.2}x",
        per_call(fresh, n),
        per_call(fresh, n) / b
    );

    let clients = 8;
    let per_client = n / clients;
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let bin = bin.to_string();
            std::thread::spawn(move || {
                let env: Vec<(&str, &str)> =
                    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                rpc_sequential(&bin, &env, per_client, Some(&format!("c{c}")), "true")
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    let total = start.elapsed();
    println!(
        "8 concurrent rpc clients             {:>8.1} requests/s ({} requests in {:.2}s)",
        (per_client * clients) as f64 / total.as_secs_f64(),
        per_client * clients,
        total.as_secs_f64()
    );
}
