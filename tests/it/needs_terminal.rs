//! Programs that need a terminal, in print mode (issue 22, item 16): none waits out
//! the timeout. One that waits for keys (vim) is stopped within seconds, one that ends
//! at once (nano, top, a REPL with nothing to read, `git commit` with no message) gets
//! a notice; each names the program and how to give it a terminal. With agentbash
//! itself on a terminal, such a program gets one. Quiet honest work is never stopped.

use crate::support::{Test, TestEnv, notices, s};
use std::time::Duration;

/// Longest wait for anything to appear on a terminal's screen.
const WAIT: Duration = Duration::from_secs(15);

fn require(program: &str) {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "{program} is not installed (.ci/run installs it)");
}

fn git_repo(env: &TestEnv) {
    for args in [
        &["init", "-q", "."][..],
        &["config", "user.email", "t@example.com"],
        &["config", "user.name", "T"],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(env.work())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }
    env.write("staged.txt", "x\n");
    std::process::Command::new("git")
        .args(["add", "staged.txt"])
        .current_dir(env.work())
        .status()
        .expect("git add");
}

/// Each program, run in print mode with a timeout it must never reach: the exit
/// code, and the line that names the program and the fix.
#[test]
fn interactive_programs_in_print_mode_end_with_the_fix() {
    for program in ["vim", "nano", "less", "top", "python3", "git"] {
        require(program);
    }
    let env = TestEnv::new();
    git_repo(&env);
    env.write("README.md", "readme text\n");
    let fix = |p: &str, command: &str| {
        vec![
            p.to_string(),
            format!("`agentbash run --pty -- {command}`"),
            format!("`agentbash job start --pty -- {command}`"),
        ]
    };
    let cases: Vec<(&str, i32, Vec<String>)> = vec![
        (
            "vim notes.txt",
            124,
            fix(
                "[vim is waiting for a terminal, and print mode has none",
                "'vim notes.txt'",
            ),
        ),
        (
            "nano notes.txt",
            1,
            fix(
                "[nano needs a terminal, and print mode has none",
                "'nano notes.txt'",
            ),
        ),
        (
            "top",
            1,
            fix("[top needs a terminal, and print mode has none", "top"),
        ),
        (
            "python3",
            0,
            fix(
                "[python3 started without a script reads its commands from stdin",
                "python3",
            ),
        ),
        (
            "git commit",
            1,
            vec![
                "[git commit asked an editor for the message".into(),
                "Give it with `-m".into(),
            ],
        ),
    ];
    for (command, code, want) in &cases {
        let out = env.run_json(command).opts(&["-t", "120"]).run();
        out.assert_code(*code);
        let v = out.json();
        let text = s(&v, "text");
        for piece in want {
            assert!(
                text.contains(piece.as_str()),
                "{command}: {piece:?} not in\n{text}"
            );
        }
        assert!(!text.contains("[Command timed out"), "{command}: {text}");
        if *code == 124 {
            // Stopped for waiting, not for the timeout: the notice says which.
            assert_eq!(notices(&v)[0], s(&v, "text").lines().next().unwrap_or(""));
        }
    }
    // A pager with a file to show simply shows it: no notice.
    let v = env
        .run_json("less README.md")
        .output("readme text\n")
        .json();
    assert!(notices(&v).is_empty(), "{v:#}");
    // A server's live shell stops it the same way.
    let mut rpc = env.rpc(&[]);
    let v = rpc.ask(
        serde_json::json!({"id": "v", "type": "bash", "command": "vim notes.txt", "timeout": 120}),
    );
    let data = &v["data"];
    assert_eq!(data["exit_code"], 124, "{v:#}");
    assert!(
        s(data, "text").starts_with("[vim is waiting for a terminal"),
        "{v:#}"
    );
    // And a server whose runs go on as jobs past `jobs.background_after` (`agent`).
    let mut rpc = env.rpc(&["-p", "agent"]);
    let v = rpc.ask(serde_json::json!({"id": "a", "type": "bash", "command": "vim notes.txt"}));
    assert!(
        s(&v["data"], "text").starts_with("[vim is waiting for a terminal"),
        "{v:#}"
    );
    assert!(!env.work().join("notes.txt").exists(), "vim wrote nothing");
}

/// Quiet honest work is never taken for a program waiting for a terminal: a sleep,
/// a wait on a socket, a read of the null device, a sleep and a wait on a socket with
/// their stdin made write-only — each runs well past the few seconds a waiting editor
/// gets.
#[test]
fn quiet_work_is_not_stopped() {
    for command in [
        "sleep 4; echo slept",
        "python3 -c 'import socket, select; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); select.select([s], [], [], 4); print(\"waited\")'",
        "python3 -c 'import select, sys; select.select([sys.stdin], [], [], 4); print(\"read\")'",
        "sleep 4 0>&1; echo slept",
        "python3 -c 'import socket, select; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); select.select([s], [], [], 4); print(\"served\")' 0>&1",
    ] {
        let v = Test::new()
            .run_json(command)
            .opts(&["-t", "60"])
            .code(0)
            .json();
        assert!(
            !s(&v, "text").contains("waiting for a terminal"),
            "{command}: {v:#}"
        );
        assert!(
            s(&v, "output").ends_with("\n") && !s(&v, "output").is_empty(),
            "{command}: {v:#}"
        );
    }
}

/// With agentbash on a terminal, `auto` gives a program that needs one a PTY even
/// where the profile's `pty.mode` is "off" (the default): vim opens in the viewport,
/// the keys reach it and it writes the file.
#[test]
fn an_editor_gets_agentbashs_terminal() {
    require("vim");
    let env = TestEnv::new();
    let term = crate::pty::interactive(&env, "", "vim -u NONE notes.txt", 100, 30);
    term.wait_for("notes.txt", WAIT)
        .expect("vim shows the file");
    term.send_text("ihello from vim").expect("keys");
    term.send_keys(&["Escape"]).expect("escape");
    term.send_text(":wq").expect("keys");
    term.send_keys(&["Enter"]).expect("enter");
    let all = crate::pty::finished(&term);
    assert_eq!(crate::pty::exit_code(&all), Some(0), "{all}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("notes.txt")).expect("the file vim wrote"),
        "hello from vim\n"
    );
    // `explain` says why.
    env.test()
        .args(&["explain", "--", "vim notes.txt"])
        .stdout_has("mode        print")
        .run();
}
