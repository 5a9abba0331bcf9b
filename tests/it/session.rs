//! Persistent sessions (issue 5): what carries over between runs with one
//! `--session NAME`, what a timed-out or cancelled run leaves (nothing), serialization
//! of concurrent runs, the session commands, and — through the library — live shells
//! reused by long-lived callers.

use crate::support::{
    Gate, HANG_CAP, TestEnv, assert_has, assert_lacks, assert_none_running, has_program, mode_of,
    needs_program, procs_with_cmdline, s, scaled, skip, wait_for_path,
};
use std::time::{Duration, Instant};

/// The commit count in a session's `state.sh` header.
#[track_caller]
fn saved_generation(state_file: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(state_file).expect("state.sh");
    let header: serde_json::Value = serde_json::from_str(
        text.lines()
            .next()
            .and_then(|l| l.strip_prefix("#agentbash-session "))
            .expect("header"),
    )
    .expect("header json");
    header["generation"].as_u64().expect("generation")
}

/// `agentbash run --json -s NAME -- CMD`: the result.
fn session_json(env: &TestEnv, name: &str, cmd: &str) -> serde_json::Value {
    env.run_json(cmd).opts(&["-s", name]).json()
}

/// `agentbash run --json -s NAME -- CMD`, its output.
#[track_caller]
fn in_session(env: &TestEnv, name: &str, cmd: &str) -> String {
    let v = session_json(env, name, cmd);
    // The lines, without the final newline (the output itself keeps it).
    let out = s(&v, "output");
    out.strip_suffix('\n').unwrap_or(out).to_string()
}

/// Asserts what `cmd`, run in session `name`, prints ([`in_session`]).
#[track_caller]
fn assert_session_says(env: &TestEnv, name: &str, cmd: &str, want: &str) {
    assert_eq!(in_session(env, name, cmd), want, "{cmd} in session {name}");
}

#[test]
fn cwd_persists_and_cwd_flag_is_relative_to_it() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.work().join("a/b")).expect("mkdir");
    let work = env.work().display().to_string();
    let v = session_json(&env, "w", "cd a");
    assert_eq!(s(&v, "cwd"), work);
    assert_eq!(s(&v, "final_cwd"), format!("{work}/a"));
    assert_eq!(v["session"], "w");
    assert_eq!(in_session(&env, "w", "pwd"), format!("{work}/a"));
    let v = env.run_json("pwd").opts(&["-s", "w", "-C", "b"]).json();
    assert_eq!(s(&v, "output"), format!("{work}/a/b\n"));
    assert_eq!(
        s(&v, "final_cwd"),
        format!("{work}/a/b"),
        "-C moves the session"
    );
    assert_eq!(in_session(&env, "w", "cd ..; pwd"), format!("{work}/a"));
    // Another session and a session-less run are unaffected.
    assert_eq!(in_session(&env, "other", "pwd"), work);
    assert_eq!(
        s(&env.run_json("pwd").json(), "output"),
        format!("{work}\n")
    );
}

#[test]
fn exports_unsets_variables_functions_and_aliases_persist() {
    let env = TestEnv::new();
    in_session(
        &env,
        "st",
        r#"export X=1 Q=$'line1\nline2 "quoted" $dollar \\back'; plain=kept; arr=(a "b c"); f() { echo "f:$1"; }; alias hi='echo hi-alias'"#,
    );
    assert_eq!(
        in_session(
            &env,
            "st",
            r#"echo "$X"; printf '%s\n' "$Q"; echo "$plain ${arr[1]}"; f x; hi; env | grep -c '^X=1$'"#
        ),
        "1\nline1\nline2 \"quoted\" $dollar \\back\nkept b c\nf:x\nhi-alias\n1"
    );
    in_session(&env, "st", "unset X plain; unset -f f; unalias hi");
    assert_eq!(
        in_session(
            &env,
            "st",
            r#"echo "${X-unset} ${plain-unset}"; type -t f hi || echo gone"#
        ),
        "unset unset\ngone"
    );
    // An inherited variable unset in the session stays unset; one it never touched
    // is inherited.
    let with_parent = |cmd: &str| {
        let v = env
            .run_json(cmd)
            .opts(&["-s", "st"])
            .env("FROM_PARENT", "inherited")
            .env("UNTOUCHED", "inherited")
            .json();
        s(&v, "output").to_string()
    };
    assert_eq!(
        with_parent("echo $FROM_PARENT; unset FROM_PARENT"),
        "inherited\n"
    );
    assert_eq!(
        with_parent("echo ${FROM_PARENT-unset} $UNTOUCHED"),
        "unset inherited\n"
    );
}

#[test]
fn functions_defined_indirectly_are_saved() {
    let env = TestEnv::new();
    env.write_rc("mkfn() { eval 'made() { echo made-by-mkfn; }'; }\n");
    env.write(
        "defs.sh",
        "sourced() { echo from-file; }\nalias al2='echo al2'\n",
    );
    in_session(&env, "ind", "mkfn");
    in_session(&env, "ind", "source defs.sh");
    in_session(&env, "ind", "true"); // saves without re-reading definitions
    assert_session_says(
        &env,
        "ind",
        "made; sourced; al2",
        "made-by-mkfn\nfrom-file\nal2",
    );
}

#[test]
fn env_flag_wins_for_one_run_without_persisting() {
    let env = TestEnv::new();
    in_session(&env, "e", "export MODE=session");
    let v = env
        .run_json("echo $MODE")
        .opts(&["-s", "e", "-e", "MODE=flag"])
        .json();
    assert_eq!(s(&v, "output"), "flag\n");
    assert_eq!(in_session(&env, "e", "echo $MODE"), "session");
}

#[test]
fn snapshot_names_removed_in_a_session_stay_removed() {
    let env = TestEnv::new();
    env.write_rc(crate::snapshot::BASHRC);
    assert_session_says(&env, "r", "greet s; unalias hey; unset -f greet", "hello s");
    assert_session_says(&env, "r", "type -t greet hey || echo gone", "gone");
    // Only the session's own definitions are stored, not the snapshot's.
    let show = env
        .test()
        .args(&["session", "show", "r"])
        .stdout_has("functions  -")
        .run();
    assert_has(&show.stdout, "removed    functions: greet; aliases: hey");
}

#[test]
fn session_definitions_win_over_the_snapshot_whatever_the_command_names() {
    let env = TestEnv::new();
    env.write_rc(crate::snapshot::BASHRC);
    in_session(&env, "o", "greet() { echo mine; }");
    // Named directly (only part of the snapshot is sourced), then dynamically.
    assert_eq!(in_session(&env, "o", "greet"), "mine");
    assert_eq!(in_session(&env, "o", "f=greet; $f"), "mine");
    in_session(&env, "o", "unset -f greet");
    let v = session_json(&env, "o", "greet x");
    assert_eq!(v["exit_code"], 127, "{v:#}");
    // A run that sources only part of the snapshot does not forget the removal.
    in_session(&env, "o", "true");
    let v = session_json(&env, "o", "greet x");
    assert_eq!(v["exit_code"], 127, "{v:#}");
    assert_eq!(in_session(&env, "o", "hey"), "hey-from-alias");
}

#[test]
fn venv_activation_and_deactivation_carry_over() {
    let env = TestEnv::new();
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("import venv")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        skip!(
            "python3 cannot import venv",
            "apt-get install python3-venv, as .ci/run does"
        );
    }
    let work = env.work().display().to_string();
    let v = session_json(
        &env,
        "py",
        "python3 -m venv --without-pip v && source v/bin/activate",
    );
    assert_eq!(v["exit_code"], 0, "{v:#}");
    assert_session_says(
        &env,
        "py",
        "command -v python; echo $VIRTUAL_ENV",
        &format!("{work}/v/bin/python\n{work}/v"),
    );
    in_session(&env, "py", "deactivate");
    let after = in_session(
        &env,
        "py",
        "command -v python || echo none; echo ${VIRTUAL_ENV-unset}; declare -F deactivate || echo no-deactivate",
    );
    assert!(!after.contains(&format!("{work}/v/bin/python")), "{after}");
    assert!(after.ends_with("unset\nno-deactivate"), "{after}");
}

#[test]
fn exit_code_passes_through_and_state_is_still_saved() {
    let env = TestEnv::new();
    let v = session_json(&env, "x", "export AFTER_EXIT=yes; mkdir -p d; cd d; exit 3");
    assert_eq!(v["exit_code"], 3);
    assert_session_says(
        &env,
        "x",
        "echo $AFTER_EXIT; pwd",
        &format!("yes\n{}/d", env.work().display()),
    );
    // set -e in one run does not leak into the next.
    let v = session_json(&env, "x", "set -e; false; echo unreachable");
    assert_eq!(v["exit_code"], 1);
    assert_session_says(
        &env,
        "x",
        "false; echo next-run-continues",
        "next-run-continues",
    );
}

#[test]
fn a_timed_out_run_leaves_the_session_unchanged() {
    let env = TestEnv::new();
    in_session(&env, "t", "export KEEP=before; mkdir -p sub");
    let n = crate::support::nonce();
    let v = env
        .run_json(format!(
            "export KEEP=during; cd sub; f() {{ :; }}; sleep 41.{n}"
        ))
        .opts(&["-s", "t", "-t", "1"])
        .json();
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["exit_code"], 124);
    assert_eq!(s(&v, "final_cwd"), env.work().display().to_string());
    assert_session_says(
        &env,
        "t",
        "echo $KEEP; pwd; type -t f || echo no-f",
        &format!("before\n{}\nno-f", env.work().display()),
    );
    assert_none_running(&format!("sleep 41.{n}"), 2, "left running");
}

#[test]
fn a_cancelled_run_leaves_the_session_unchanged() {
    let env = TestEnv::new();
    in_session(&env, "c", "export KEEP=before");
    let n = crate::support::nonce();
    let mut r = env
        .run_text(format!("export KEEP=during; echo go; sleep 43.{n}"))
        .opts(&["--format", "ndjson", "-s", "c"])
        .spawn();
    r.wait_for_event("output", Duration::from_secs(10));
    r.signal(libc::SIGINT);
    let out = r.wait();
    assert_eq!(out.code(), Some(130), "{}", out.stderr);
    assert_eq!(in_session(&env, "c", "echo $KEEP"), "before");
}

#[test]
fn concurrent_runs_on_one_session_are_serialized() {
    let env = TestEnv::new();
    in_session(&env, "par", "export V=");
    let runs: Vec<_> = (1..=8)
        .map(|i| {
            env.run_text(format!("export V=\"$V {i}\"; sleep 0.05"))
                .opts(&["-q", "-s", "par"])
                .spawn()
        })
        .collect();
    for r in runs {
        r.wait().assert_code(0);
    }
    let v = in_session(&env, "par", "echo $V");
    let mut got: Vec<u32> = v
        .split_whitespace()
        .map(|x| x.parse().expect("number"))
        .collect();
    got.sort();
    assert_eq!(
        got,
        (1..=8).collect::<Vec<_>>(),
        "every run saw the previous one's state: {v:?}"
    );
}

#[test]
fn a_run_waiting_for_a_busy_session_times_out_without_running() {
    let env = TestEnv::new();
    // The holder has the session from the moment its command runs (it says so with a
    // file) until the test opens its gate.
    let gate = Gate::new(&env, "holder");
    let held = env.root().join("held");
    let hold = format!(
        "touch '{}'; {}; export HOLDER=done",
        held.display(),
        gate.wait()
    );
    let holder = env.run_text(&hold).opts(&["-q", "-s", "busy"]).spawn();
    assert!(wait_for_path(&held, HANG_CAP), "the holder never ran");
    let started = Instant::now();
    // The same wait seen by a person (text on a pipe) and by a program (JSON).
    let text_run = env
        .run_text("touch ran-anyway")
        .opts(&["-s", "busy", "-t", "2"])
        .spawn();
    let v = env
        .run_json("touch ran-anyway")
        .opts(&["-s", "busy", "-t", "2"])
        .json();
    assert!(
        started.elapsed() < scaled(Duration::from_millis(3500)),
        "{:?}",
        started.elapsed()
    );
    let line =
        "[Waited 2 seconds for session \"busy\", held by another run; the command did not start]";
    assert_eq!(v["timed_out"], true, "{v:#}");
    assert_eq!(v["exit_code"], 124);
    assert_eq!(s(&v, "output"), "", "{v:#}");
    assert_eq!(v["notices"][0], line, "{v:#}");
    assert!(s(&v, "text").starts_with(line), "{v:#}");
    assert!(!s(&v, "text").contains("Command timed out"), "{v:#}");
    let text = text_run.wait();
    text.assert_code(124);
    assert!(text.stderr.starts_with(line), "{}", text.stderr);
    assert_lacks(&text.stderr, "Command timed out");
    assert!(!env.work().join("ran-anyway").exists());
    gate.open();
    holder.wait().assert_code(0);
    assert_eq!(in_session(&env, "busy", "echo $HOLDER"), "done");
}

#[test]
fn pty_mode_runs_keep_the_session_too() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.work().join("p")).expect("mkdir");
    let v = env
        .run_json("cd p; export VIA=pty")
        .opts(&["--pty", "-s", "tty"])
        .json();
    assert_eq!(v["mode"], "pty", "{v:#}");
    assert_eq!(v["exit_code"], 0, "{v:#}");
    assert_session_says(
        &env,
        "tty",
        "pwd; echo $VIA",
        &format!("{}/p\npty", env.work().display()),
    );
}

#[test]
fn a_deleted_session_directory_is_a_cwd_error_with_a_hint() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.work().join("gone")).expect("mkdir");
    in_session(&env, "g", "cd gone");
    std::fs::remove_dir(env.work().join("gone")).expect("rmdir");
    let out = env.run_text("pwd").opts(&["-s", "g"]).code(125).run();
    let want = format!(
        "Working directory does not exist: {}/gone",
        env.work().display()
    );
    assert_has(&out.stderr, &want);
    assert_has(&out.stderr, "agentbash session rm g");
    // An absolute -C still works, and moves the session somewhere that exists.
    let work = env.work().display().to_string();
    let v = env.run_json("pwd").opts(&["-s", "g", "-C", &work]).json();
    assert_eq!(s(&v, "output"), format!("{work}\n"));
    assert_eq!(in_session(&env, "g", "pwd"), work);
}

#[test]
fn invalid_names_are_usage_errors() {
    let env = TestEnv::new();
    let long = "x".repeat(65);
    for name in ["../x", "", ".", "..", "a/b", long.as_str()] {
        env.run_text("true")
            .opts(&["-s", name])
            .code(2)
            .stderr_has("invalid session name")
            .run();
        env.run(&["session", "show", name]).assert_code(2);
        env.run(&["session", "rm", name]).assert_code(2);
    }
    assert!(!env.state_dir().join("x").exists());
    let ok = "y".repeat(64);
    env.run_text("true")
        .opts(&["-q", "-s", &ok])
        .run()
        .assert_code(0);
}

#[test]
fn session_files_are_private() {
    let env = TestEnv::new();
    in_session(&env, "m", "export SECRET_ISH=1");
    let dir = env.state_dir().join("sessions/m");
    let mode = |p: &std::path::Path| mode_of(p) & 0o777;
    assert_eq!(mode(&env.state_dir().join("sessions")), 0o700);
    assert_eq!(mode(&dir), 0o700);
    for e in std::fs::read_dir(&dir).expect("read dir").flatten() {
        assert_eq!(mode(&e.path()), 0o600, "{}", e.path().display());
    }
    assert!(dir.join("state.sh").is_file());
}

#[test]
fn list_show_and_rm() {
    let env = TestEnv::new();
    env.test()
        .args(&["session", "list"])
        .code(0)
        .stderr_has("no sessions")
        .run();
    std::fs::create_dir_all(env.work().join("proj")).expect("mkdir");
    in_session(
        &env,
        "alpha",
        "cd proj; export TOKEN_VALUE=hunter2; myfn() { :; }; alias al='true'; localvar=1",
    );
    in_session(&env, "beta", "true");
    let out = env.run_ok(&["session", "list"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", out.stdout);
    assert!(
        lines[1].starts_with("alpha")
            && lines[1].ends_with(&format!("{}/proj", env.work().display())),
        "{}",
        out.stdout
    );
    assert!(lines[2].starts_with("beta"), "{}", out.stdout);
    let out = env.run_ok(&["session", "show", "alpha"]);
    for want in [
        "exported   TOKEN_VALUE",
        "functions  myfn",
        "aliases    al",
        "variables  localvar",
        "/proj",
    ] {
        assert_has(&out.stdout, want);
    }
    // Values are never shown.
    assert_lacks(&out.stdout, "hunter2");
    env.run(&["session", "rm", "alpha"]).assert_code(0);
    assert!(!env.state_dir().join("sessions/alpha").exists());
    env.run(&["session", "show", "alpha"]).assert_code(1);
    env.run(&["session", "rm", "alpha"]).assert_code(1);
    // A removed session starts afresh.
    assert_session_says(
        &env,
        "alpha",
        "echo ${TOKEN_VALUE-unset}; pwd",
        &format!("unset\n{}", env.work().display()),
    );
}

#[test]
fn sessions_need_bash() {
    let env = TestEnv::new();
    // A shell that is certainly not bash (/bin/sh may be bash).
    if !has_program("dash") {
        skip!(needs_program("dash", "dash"));
    }
    env.write("sh.toml", "[shell]\npath = \"dash\"\n");
    env.run_text("true")
        .opts(&["-p", "./sh.toml", "-s", "x"])
        .code(125)
        .stderr_has("--session needs bash")
        .run();
}

/// The library's live shells: what rpc and mcp use. These tests run in a
/// process of their own ([`pool_tests_in_their_own_process`]): a pool marks its
/// process as running several commands at once and relies on it being the subreaper
/// of its orphans, process-wide settings other tests in this binary change.
mod pool {
    use super::*;
    use agentbash::executor::live::ShellPool;
    use agentbash::pipeline::{RunRequest, execute, execute_with};
    use agentbash::{CancelToken, LoadedProfile, Lookup, RunResult};

    /// Set in the process that runs the `child_` tests.
    fn in_child() -> bool {
        std::env::var_os("AGENTBASH_IT_POOL_WORK").is_some()
    }

    /// A profile that touches no state or cache directory.
    fn profile(dir: &std::path::Path) -> LoadedProfile {
        let p = dir.join("pool.toml");
        std::fs::write(
            &p,
            "[shell]\nsnapshot = false\n[artifacts]\nenabled = false\n",
        )
        .expect("write profile");
        Lookup::new(dir)
            .load(&p.display().to_string())
            .expect("profile")
    }

    fn req(dir: &std::path::Path, cmd: &str) -> RunRequest {
        let mut r = RunRequest::new(cmd);
        r.invoking_dir = dir.to_path_buf();
        r.live_output = true;
        r
    }

    fn run(pool: &ShellPool, p: &LoadedProfile, r: &RunRequest) -> RunResult {
        execute_with(r, p, &CancelToken::new(), Some(pool), &mut |_| {})
    }

    fn pid_of(pool: &ShellPool, p: &LoadedProfile, r: &RunRequest) -> i32 {
        let mut r = r.clone();
        r.command = "echo $$".into();
        let res = run(pool, p, &r);
        res.output
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("pid: {res:?}"))
    }

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
    }

    /// SIGKILL a pool's shell and wait until it is dead (gone or a zombie).
    fn kill_shell(pid: i32) {
        // SAFETY: plain syscall on the pool's shell.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let deadline = Instant::now() + crate::support::HANG_CAP;
        while alive(pid) {
            assert!(Instant::now() < deadline, "shell {pid} survived SIGKILL");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A pool, its profile and a hermetic env, for one `child_` test; `None` outside
    /// the child process. (Fields drop in order: the pool's shells go first.)
    struct Live {
        pool: ShellPool,
        p: LoadedProfile,
        env: TestEnv,
    }

    impl Live {
        fn new() -> Option<Live> {
            if !in_child() {
                return None;
            }
            let env = TestEnv::new();
            Some(Live {
                pool: ShellPool::new(),
                p: profile(env.root()),
                env,
            })
        }

        /// A request for `cmd` from the env's working directory.
        fn req(&self, cmd: &str) -> RunRequest {
            req(&self.env.work(), cmd)
        }

        /// Run `cmd` through the pool.
        fn run(&self, cmd: &str) -> RunResult {
            self.run_req(&self.req(cmd))
        }

        fn run_req(&self, r: &RunRequest) -> RunResult {
            run(&self.pool, &self.p, r)
        }

        fn pid_of(&self, r: &RunRequest) -> i32 {
            pid_of(&self.pool, &self.p, r)
        }
    }

    #[test]
    #[ignore = "run by pool_tests_in_their_own_process"]
    fn child_one_shell_is_reused_and_runs_are_isolated() {
        let Some(live) = Live::new() else {
            return;
        };
        let base = live.req("");
        let pid = live.pid_of(&base);
        assert!(live.pool.pids().contains(&pid));
        let r = live
            .run("cd /; export LEAK=1; f() { :; }; echo out; echo err >&2; printf tail; exit 7");
        assert_eq!(r.exit_code, Some(7));
        assert_eq!(r.output, "out\nerr\ntail");
        assert!(r.text.contains("Command exited with code 7"));
        let r = live.run("pwd; echo ${LEAK-unset}; type -t f || echo no-f");
        assert_eq!(
            r.output,
            format!("{}\nunset\nno-f\n", live.env.work().display())
        );
        assert_eq!(r.final_cwd, live.env.work().display().to_string());
        // Commands that replace the subshell or its EXIT trap still end cleanly.
        let r = live.run("exec echo via-exec");
        assert_eq!((r.exit_code, r.output.as_str()), (Some(0), "via-exec\n"));
        let r = live.run("trap 'echo bye' EXIT; echo hi; exit 4");
        assert_eq!((r.exit_code, r.output.as_str()), (Some(4), "hi\nbye\n"));
        let r = live.run("cat; read -r x || echo stdin-is-empty");
        assert_eq!(r.output, "stdin-is-empty\n");
        // A plain program runs in the shell itself (no subshell: its parent is the
        // shell), in its own directory, and leaves the shell as it was.
        std::fs::create_dir_all(live.env.work().join("plain")).expect("mkdir");
        let before = live.run("pwd; echo \"${OLDPWD-unset}\"; hash").output;
        let mut plain = live.req("cat /proc/self/stat");
        plain.cwd = Some(live.env.work().join("plain"));
        let r = live.run_req(&plain);
        let ppid: i32 = r
            .output
            .rsplit(')')
            .next()
            .and_then(|f| f.split_whitespace().nth(1))
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("stat: {r:?}"));
        assert_eq!(ppid, pid, "run by the shell itself");
        assert_eq!(
            r.final_cwd,
            live.env.work().join("plain").display().to_string()
        );
        let r = live.run("pwd; echo \"${OLDPWD-unset}\"; hash");
        assert_eq!(
            r.output, before,
            "cwd, OLDPWD and the hash table are put back"
        );
        let r = live.run("false");
        assert_eq!(r.exit_code, Some(1));
        // What a plain program leaves running is stopped like anything else.
        let tag = format!("402.{}", crate::support::nonce());
        let r = live.run(&format!("setsid -f sleep {tag}"));
        assert_eq!(r.exit_code, Some(0), "{r:?}");
        assert!(!r.background_killed.is_empty(), "{r:?}");
        assert!(procs_with_cmdline(&tag, Duration::from_millis(200)).is_empty());
        assert_eq!(live.pid_of(&base), pid, "the same shell served every run");
        assert_eq!(live.pool.len(), 1);
        // Live output events arrive as in print mode.
        let mut seen = String::new();
        let r = execute_with(
            &live.req("seq 1 3000"),
            &live.p,
            &CancelToken::new(),
            Some(&live.pool),
            &mut |e| {
                if let agentbash::Event::Output(t) = e {
                    seen.push_str(t);
                }
            },
        );
        assert_eq!(r.total_lines, 3000);
        assert_eq!(seen.lines().count(), 3000);
        drop(live.pool);
        assert!(!alive(pid), "dropping the pool stops its shells");
    }

    #[test]
    #[ignore = "run by pool_tests_in_their_own_process"]
    fn child_a_dead_shell_is_replaced_with_a_notice() {
        let Some(live) = Live::new() else {
            return;
        };
        let base = live.req("");
        let pid = live.pid_of(&base);
        kill_shell(pid);
        let r = live.run("echo $$");
        assert_eq!(r.exit_code, Some(0), "{r:?}");
        let new_pid: i32 = r.output.trim_end().parse().expect("pid");
        assert_ne!(new_pid, pid);
        assert!(
            r.notices
                .iter()
                .any(|n| n.contains("live shell had exited (killed by SIGKILL)")),
            "{:?}",
            r.notices
        );
        let r = live.run("true");
        assert!(r.notices.is_empty(), "{:?}", r.notices);
    }

    #[test]
    #[ignore = "run by pool_tests_in_their_own_process"]
    fn child_a_timeout_stops_only_that_keys_shell() {
        let Some(live) = Live::new() else {
            return;
        };
        let mut a = live.req("");
        a.env = vec![("KEY".into(), "a".into())];
        let mut b = live.req("");
        b.env = vec![("KEY".into(), "b".into())];
        let pid_a = live.pid_of(&a);
        let pid_b = live.pid_of(&b);
        assert_ne!(pid_a, pid_b, "different env, different shell");
        let n = crate::support::nonce();
        let mut slow = a.clone();
        slow.command = format!("sleep 47.{n} & sleep 46.{n}");
        slow.timeout = Some(1);
        let started = Instant::now();
        let r = live.run_req(&slow);
        assert!(r.timed_out, "{r:?}");
        assert_eq!(r.exit_code, Some(124));
        assert!(r.text.starts_with("[Command timed out after 1 second]"));
        assert!(started.elapsed() < scaled(Duration::from_secs(5)));
        assert!(!alive(pid_a), "the timed-out shell is gone");
        assert!(alive(pid_b), "another key's shell is untouched");
        assert_none_running(&format!(".{n}"), 2, "left running");
        assert_eq!(live.pid_of(&b), pid_b);
        let again = live.pid_of(&a);
        assert_ne!(again, pid_a, "a fresh shell for the timed-out key");
    }

    #[test]
    #[ignore = "run by pool_tests_in_their_own_process"]
    fn child_cancel_and_background_jobs() {
        let Some(live) = Live::new() else {
            return;
        };
        let n = crate::support::nonce();
        let r = live.run(&format!("sleep 48.{n} & echo started"));
        assert_eq!(r.output, "started\n");
        // (Under load the job may be caught between fork and exec: listed as bash.)
        assert!(!r.background_killed.is_empty(), "{r:?}");
        assert_none_running(&format!("sleep 48.{n}"), 2, "left running");
        let token = CancelToken::new();
        let t = token.clone();
        let running = format!("sleep 49.{n}");
        let h = std::thread::spawn(move || {
            // Cancelled once the command runs, not after a guessed time.
            assert!(
                crate::support::wait_for_cmdline(&running, crate::support::HANG_CAP),
                "{running} never started"
            );
            t.cancel(libc::SIGINT);
        });
        let started = Instant::now();
        let r = execute_with(
            &live.req(&format!("sleep 49.{n}")),
            &live.p,
            &token,
            Some(&live.pool),
            &mut |_| {},
        );
        h.join().expect("thread");
        assert!(r.cancelled);
        assert_eq!(r.exit_code, Some(130));
        assert!(started.elapsed() < scaled(Duration::from_secs(5)));
        assert_eq!(live.run("echo fine").output, "fine\n");
    }

    #[test]
    #[ignore = "run by pool_tests_in_their_own_process"]
    fn child_the_pool_serves_several_threads() {
        let Some(live) = Live::new() else {
            return;
        };
        std::thread::scope(|sc| {
            for t in 0..4 {
                let (pool, p, work) = (&live.pool, &live.p, live.env.work());
                sc.spawn(move || {
                    for i in 0..5 {
                        let r = run(pool, p, &req(&work, &format!("echo {t}-{i}")));
                        assert_eq!(r.output, format!("{t}-{i}\n"));
                    }
                });
            }
        });
        assert!(!live.pool.is_empty());
    }

    /// Session runs through the pool, in a process of its own (sessions live in
    /// `$AGENTBASH_STATE_DIR`, which the library reads from the environment).
    #[test]
    fn pool_tests_in_their_own_process() {
        let env = TestEnv::new();
        env.write_rc(crate::snapshot::BASHRC);
        // Not current_exe(): a concurrent rebuild may have replaced that file.
        let exe = std::path::PathBuf::from("/proc/self/exe");
        let out = env
            .program(
                &exe,
                &["session::pool::child_", "--ignored", "--test-threads=2"],
            )
            .env("AGENTBASH_IT_POOL_WORK", env.work())
            .run();
        assert!(
            out.status.success() && out.stdout.contains("6 passed"),
            "pool tests failed:\n{}\n{}",
            out.stdout,
            out.stderr
        );
    }

    #[test]
    #[ignore = "run by pool_tests_in_their_own_process"]
    fn child_sessions_through_the_pool() {
        let Some(work) = std::env::var_os("AGENTBASH_IT_POOL_WORK").map(std::path::PathBuf::from)
        else {
            return;
        };
        let p = Lookup::new(&work).load("default").expect("profile");
        let pool = ShellPool::new();
        let sreq = |cmd: &str| {
            let mut r = req(&work, cmd);
            r.session = Some("live".into());
            r
        };
        let go = |cmd: &str| run(&pool, &p, &sreq(cmd));
        std::fs::create_dir_all(work.join("sub")).expect("mkdir");
        let r = go("cd sub && export X=1 && y=2 && g() { echo g-$1; } && alias al='echo al-alias'");
        assert_eq!(r.exit_code, Some(0), "{r:?}");
        assert_eq!(r.final_cwd, work.join("sub").display().to_string());
        let r = go("pwd; echo $X $y; g a; al; greet live; hey; echo $$");
        let lines: Vec<&str> = r.output.lines().collect();
        assert_eq!(
            &lines[..6],
            [
                &*work.join("sub").display().to_string(),
                "1 2",
                "g-a",
                "al-alias",
                "hello live",
                "hey-from-alias"
            ],
            "{r:?}"
        );
        let pid: i32 = lines[6].parse().expect("pid");
        let r = go("echo $$");
        assert_eq!(
            r.output,
            format!("{pid}\n"),
            "the session's shell is reused: {r:?}"
        );
        // What the live shell did is saved for any other run of the session.
        let cli = execute(
            &sreq("echo $X; pwd; export X=2"),
            &p,
            &CancelToken::new(),
            &mut |_| {},
        );
        assert_eq!(cli.output, format!("1\n{}\n", work.join("sub").display()));
        // ...and what another run did is picked up (a fresh shell from the saved state).
        let r = go("echo $X $y; echo $$");
        assert_eq!(r.output.lines().next(), Some("2 2"), "{r:?}");
        let pid: i32 = r
            .output
            .lines()
            .nth(1)
            .and_then(|l| l.parse().ok())
            .expect("pid");
        // set -e does not leak into the next command, nor does a redirection.
        go("set -e; exec >/dev/null 2>&1");
        assert_eq!(go("false; echo still-here").output, "still-here\n");
        // Nor do shopt and set -o options (restored only when they changed).
        go("shopt -s nullglob; set -o noclobber");
        assert_eq!(
            go("shopt -q nullglob || echo no-nullglob; [[ -o noclobber ]] || echo no-noclobber")
                .output,
            "no-nullglob\nno-noclobber\n"
        );
        // A timeout kills the shell and leaves the session as it was.
        let mut slow = sreq("export X=3; cd /; sleep 30");
        slow.timeout = Some(1);
        let r = run(&pool, &p, &slow);
        assert!(r.timed_out);
        let r = go("echo $X; pwd; echo $$");
        let lines: Vec<&str> = r.output.lines().collect();
        assert_eq!(
            &lines[..2],
            ["2", &*work.join("sub").display().to_string()],
            "{r:?}"
        );
        assert_ne!(lines[2], pid.to_string());
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        // exit N: that code, the state saved, no notice next time.
        let r = go("export X=4; exit 3");
        assert_eq!(r.exit_code, Some(3));
        let r = go("echo $X");
        assert_eq!(r.output, "4\n");
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        // A shell killed between runs is replaced, restoring the session.
        let pid: i32 = go("echo $$").output.trim_end().parse().expect("pid");
        kill_shell(pid);
        let r = go("echo $X $y");
        assert_eq!(r.output, "4 2\n");
        assert!(
            r.notices.iter().any(|n| n.contains("session live")),
            "{:?}",
            r.notices
        );
        // A plain program changes nothing: no commit (the saved generation stays),
        // the same shell keeps going, and what it holds is still the session.
        let state =
            std::path::PathBuf::from(std::env::var_os("AGENTBASH_STATE_DIR").expect("state"))
                .join("sessions/live/state.sh");
        let generation = || saved_generation(&state);
        let pid: i32 = go("echo $$").output.trim_end().parse().expect("pid");
        let g = generation();
        for cmd in ["true", "cat /dev/null", "/bin/echo plain", "env --version"] {
            let r = go(cmd);
            assert_eq!(r.exit_code, Some(0), "{cmd}: {r:?}");
            assert!(r.warnings.is_empty(), "{cmd}: {:?}", r.warnings);
        }
        assert_eq!(generation(), g, "stateless commands commit nothing");
        assert_eq!(go("echo $$ $X").output, format!("{pid} 4\n"));
        // ...but a function or alias of that name can change state: saved.
        go("hop() { cd /; export X=5; }; alias skip='cd /tmp'");
        let g = generation();
        let r = go("hop");
        assert_eq!(r.final_cwd, "/");
        assert!(generation() > g);
        let r = go("skip");
        assert_eq!(r.final_cwd, "/tmp");
        // ...and so does a plain command run in another directory (--cwd).
        let mut elsewhere = sreq("true");
        elsewhere.cwd = Some(work.clone());
        let r = run(&pool, &p, &elsewhere);
        assert_eq!(r.final_cwd, work.display().to_string());
        let r = go("pwd; echo $X; echo $$");
        assert_eq!(
            r.output,
            format!("{}\n5\n{pid}\n", work.display()),
            "the shell is still the session's and saw every change"
        );
        // A process on the session (not this pool) sees the same state.
        let cli = execute(&sreq("pwd; echo $X"), &p, &CancelToken::new(), &mut |_| {});
        assert_eq!(cli.output, format!("{}\n5\n", work.display()));
        // A function that unsets itself (as a venv's `deactivate` does): the check is
        // made before the command runs, and the definitions are saved too.
        go("bye() { unset -f bye; export GONE=1; }");
        go("bye");
        let cli = execute(
            &sreq("echo ${GONE-unset}; declare -F bye || echo no-bye"),
            &p,
            &CancelToken::new(),
            &mut |_| {},
        );
        assert_eq!(cli.output, "1\nno-bye\n");
        // A new session whose first command is a plain one is still created, and its
        // shell is reused from then on.
        let fresh = |cmd: &str| {
            let mut r = req(&work, cmd);
            r.session = Some("fresh".into());
            run(&pool, &p, &r)
        };
        assert_eq!(fresh("true").exit_code, Some(0));
        assert!(
            state
                .with_file_name("")
                .parent()
                .expect("sessions")
                .join("fresh/state.sh")
                .is_file()
        );
        let a = fresh("echo $$").output;
        fresh("true");
        assert_eq!(
            fresh("echo $$").output,
            a,
            "the fresh session's shell is reused"
        );
    }
}

/// Regression: with no SHELL in the environment (a bare CI runner), bash sets SHELL
/// itself; that is the shell's bookkeeping, not session state.
#[test]
fn shell_set_by_bash_is_not_session_state() {
    let env = TestEnv::new();
    env.run_text("mine=1")
        .opts(&["-q", "-s", "bare"])
        .env_remove("SHELL")
        .run()
        .assert_code(0);
    let out = env.run_ok(&["session", "show", "bare"]);
    let vars = out
        .stdout
        .lines()
        .find(|l| l.starts_with("variables"))
        .unwrap_or_default();
    assert_eq!(
        vars.split_whitespace().collect::<Vec<_>>(),
        ["variables", "mine"],
        "{}",
        out.stdout
    );
}

/// `explain` shows the state stage: the snapshot it would use and the session
/// (new, then with its saved cwd), and runs nothing.
#[test]
fn explain_shows_snapshot_and_session() {
    let env = TestEnv::new();
    env.write_rc("hello() { echo hi; }\n");
    let out = env
        .test()
        .args(&["explain", "-s", "dev", "--", "cd /"])
        .code(0)
        .stdout_has("(to be generated from")
        .run();
    assert_has(&out.stdout, "session     dev (");
    assert_has(&out.stdout, "new: created by this run");
    assert!(
        !env.state_dir().join("sessions/dev").exists(),
        "explain runs nothing"
    );
    env.run_text("cd /")
        .opts(&["-q", "-s", "dev"])
        .run()
        .assert_code(0);
    let v = env
        .run(&["explain", "--format", "json", "-s", "dev", "--", "ls"])
        .json();
    assert_eq!(v["session"]["name"], "dev");
    assert_eq!(v["session"]["cwd"], "/");
    assert!(s(&v, "snapshot").contains("(cached, from"), "{v}");
    let v = env.run(&["explain", "--format", "json", "--", "ls"]).json();
    assert!(v["session"].is_null());
}

/// A CLI session run of a plain program in the session's directory commits nothing
/// (the saved generation stays) unless its word is a session function or alias; in
/// another directory (`-C`) it is saved, since the cwd changed.
#[test]
fn plain_programs_on_the_cli_leave_the_session_untouched() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.work().join("sub")).expect("mkdir");
    let generation = || saved_generation(&env.state_dir().join("sessions/a/state.sh"));
    in_session(&env, "a", "cd sub; export X=1; hop() { cd /; }");
    let g = generation();
    for cmd in ["true", "cat /dev/null", "env --version"] {
        let v = session_json(&env, "a", cmd);
        assert_eq!(v["exit_code"], 0, "{cmd}: {v}");
        assert!(
            v["warnings"].as_array().is_some_and(|w| w.is_empty()),
            "{v}"
        );
    }
    assert_eq!(generation(), g, "plain programs commit nothing");
    assert_session_says(
        &env,
        "a",
        "echo $X; pwd",
        &format!("1\n{}", env.work().join("sub").display()),
    );
    // A session function of that name may change state: saved.
    let v = session_json(&env, "a", "hop");
    assert_eq!(s(&v, "final_cwd"), "/");
    assert_eq!(in_session(&env, "a", "pwd"), "/");
    // A plain program elsewhere moves the session there.
    let g = generation();
    let work = env.work().display().to_string();
    let v = env.run_json("true").opts(&["-s", "a", "-C", &work]).json();
    assert_eq!(s(&v, "final_cwd"), work);
    assert!(generation() > g);
    assert_eq!(in_session(&env, "a", "pwd"), work);
}
