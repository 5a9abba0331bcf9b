//! Shell-state benchmarks (issue 5), as ratios measured side by side in one process:
//!
//! - `agentbash run -q -- true` with a cached rc snapshot vs with `shell.snapshot =
//!   false` (target: the snapshot adds at most 25%);
//! - a `--session` run vs a plain run;
//! - through the library, 1,000 sequential `true` on one live shell (`ShellPool`) vs
//!   1,000 `bash -c true` spawns (target: at least 2x faster per command), with the
//!   library's spawn path for reference.
//!
//! Run: `cargo bench --bench state` (set `AB_BENCH_QUICK=1` for a fast smoke run).

use agentbash::executor::live::ShellPool;
use agentbash::pipeline::{RunRequest, execute_with};
use agentbash::{CancelToken, Lookup};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An rc of realistic size: a guard, output, functions, helpers, aliases, options.
fn bashrc() -> String {
    let mut rc = String::from(
        "case $- in *i*) ;; *) return;; esac\necho hello\nshopt -s extglob globstar\n",
    );
    for i in 0..40 {
        rc.push_str(&format!(
            "fn{i}() {{ local x=\"$1\"; if [[ -n $x ]]; then _helper{i} \"$x\"; else echo none; fi; }}\n_helper{i}() {{ printf '%s\\n' \"$1\"; }}\nalias a{i}='echo alias {i}'\n"
        ));
    }
    rc.push_str("grep() { command grep --color=auto \"$@\"; }\nalias ls='ls --color=auto'\n");
    rc
}

fn time_cli(argv: &[&str], env: &[(&str, String)]) -> Duration {
    let start = Instant::now();
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn benchmark command");
    assert!(status.success(), "{argv:?} failed");
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Alternate `a` and `b` `n` times; print medians and the ratio a/b.
fn compare(
    name: &str,
    n: usize,
    a: (&str, &[&str]),
    b: (&str, &[&str]),
    env: &[(&str, String)],
) -> f64 {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..n {
        ta.push(time_cli(a.1, env));
        tb.push(time_cli(b.1, env));
    }
    let (ma, mb) = (median(ta), median(tb));
    let ratio = ma.as_secs_f64() / mb.as_secs_f64();
    println!(
        "{name:<44} {} {:>7.3} ms   {} {:>7.3} ms   ratio {ratio:>5.2}",
        a.0,
        ms(ma),
        b.0,
        ms(mb)
    );
    ratio
}

fn main() {
    let quick = std::env::var("AB_BENCH_QUICK").is_ok();
    let bin = env!("CARGO_BIN_EXE_agentbash");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = |s: &str| {
        let p = tmp.path().join(s);
        std::fs::create_dir_all(&p).expect("mkdir");
        p
    };
    let (home, state, cache, work) = (dir("home"), dir("state"), dir("cache"), dir("work"));
    std::fs::write(home.join(".bashrc"), bashrc()).expect("write rc");
    let nosnap = work.join("nosnap.toml");
    std::fs::write(&nosnap, "[shell]\nsnapshot = false\n").expect("write profile");
    let env: Vec<(&str, String)> = vec![
        ("HOME", home.display().to_string()),
        ("AGENTBASH_STATE_DIR", state.display().to_string()),
        ("XDG_CACHE_HOME", cache.display().to_string()),
        ("SHELL", "/bin/bash".into()),
    ];
    // The library below reads these from our own environment; set them while this
    // process is still single-threaded.
    for (k, v) in &env {
        // SAFETY: no other thread exists yet.
        unsafe { std::env::set_var(k, v) };
    }
    std::env::set_current_dir(&work).expect("cd");
    let nosnap_s = nosnap.display().to_string();

    println!("agentbash shell-state benchmarks (medians, alternating runs)");
    // Warm the snapshot cache (and check it is used).
    time_cli(&[bin, "run", "-q", "--", "fn1 x"], &env);
    let n = if quick { 20 } else { 200 };
    let snap = compare(
        &format!("snapshot: run -q -- true (N={n})"),
        n,
        ("cached snapshot", &[bin, "run", "-q", "--", "true"]),
        (
            "no snapshot",
            &[bin, "run", "-q", "-p", &nosnap_s, "--", "true"],
        ),
        &env,
    );
    println!(
        "  snapshot overhead {:+.0}% (target <= +25%)",
        (snap - 1.0) * 100.0
    );
    time_cli(
        &[
            bin,
            "run",
            "-q",
            "-s",
            "bench",
            "--",
            "cd /tmp; export A=1; f() { :; }",
        ],
        &env,
    );
    let sess = compare(
        &format!("session: run -q -s NAME -- true (N={n})"),
        n,
        ("session", &[bin, "run", "-q", "-s", "bench", "--", "true"]),
        ("plain", &[bin, "run", "-q", "--", "true"]),
        &env,
    );
    println!("  session overhead {:+.0}%", (sess - 1.0) * 100.0);

    // Library: live shell vs spawns, through the whole pipeline (`execute_with`), with
    // the default profile and with a lean one (no interceptor, no artifacts) that
    // isolates what the live shell itself costs.
    let profile = Lookup::new(&work).load("default").expect("profile");
    let lean_path = work.join("lean.toml");
    std::fs::write(
        &lean_path,
        "[interceptor]\nenabled = false\n[artifacts]\nenabled = false\n",
    )
    .expect("write profile");
    let lean = Lookup::new(&work)
        .load(&lean_path.display().to_string())
        .expect("profile");
    let k = if quick { 100 } else { 1000 };
    let cancel = CancelToken::new();
    // Per-command latency: back to back (the ratio the issue asks for), and with a
    // pause before each command, as an agent's calls come (the shell has forked the
    // next subshell by then).
    let pause = Duration::from_millis(2);
    let spawn_bash = || {
        let s = Command::new("bash")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .status()
            .expect("bash");
        assert!(s.success());
    };
    let sample = |paused: bool, f: &mut dyn FnMut()| {
        let mut v = Vec::with_capacity(k);
        for _ in 0..k {
            if paused {
                std::thread::sleep(pause);
            }
            let t = Instant::now();
            f();
            v.push(t.elapsed());
        }
        let mean = v.iter().sum::<Duration>() / k as u32;
        (mean, median(v))
    };
    let (bare, bare_med) = sample(false, &mut || spawn_bash());
    let (_, bare_paused) = sample(true, &mut || spawn_bash());
    println!(
        "live shell: {k} x true; bash -c true spawn: mean {:.3} ms (median {:.3}, paused {:.3})",
        ms(bare),
        ms(bare_med),
        ms(bare_paused)
    );
    for (name, p) in [("lean profile", &lean), ("default profile", &profile)] {
        let pool = ShellPool::new();
        let mut req = RunRequest::new("true");
        req.invoking_dir = work.clone();
        req.live_output = false;
        let mut sreq = req.clone();
        sreq.session = Some(format!("bench-{}", name.len()));
        let go = |r: &RunRequest, pool: Option<&ShellPool>| {
            let res = execute_with(r, p, &cancel, pool, &mut |_| {});
            assert_eq!(res.exit_code, Some(0), "{res:?}");
        };
        go(&req, Some(&pool));
        go(&sreq, Some(&pool));
        let (live, _) = sample(false, &mut || go(&req, Some(&pool)));
        let (_, live_paused) = sample(true, &mut || go(&req, Some(&pool)));
        let (spawned, _) = sample(false, &mut || go(&req, None));
        let (live_session, _) = sample(false, &mut || go(&sreq, Some(&pool)));
        println!(
            "  {name:<16} pool {:>6.3} ms = {:>4.2}x faster than bash -c true (target >= 2x); paused {:>6.3} ms = {:>4.2}x",
            ms(live),
            bare.as_secs_f64() / live.as_secs_f64(),
            ms(live_paused),
            bare_paused.as_secs_f64() / live_paused.as_secs_f64()
        );
        println!(
            "  {:<16} no pool {:>6.3} ms; pool with a session (`true` is a plain program: no state save) {:>6.3} ms",
            "",
            ms(spawned),
            ms(live_session)
        );
    }
}
