//! PTY mode end to end (issue 4): the interactive viewport driven
//! through a real terminal (tmux, see [`crate::tmux`]) like a person would, and
//! headless runs (`--pty` into a pipe) as plain subprocess tests.
//!
//! Interactive tests run `agentbash run --pty … -- CMD` from `bash -c`, which then
//! prints agentbash's exit status and the terminal's state, so what agentbash left
//! the terminal in is checked after it is gone. Every wait polls for up to
//! [`WAIT`]; no test asserts how fast anything was.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{
    Test, TestEnv, assert_first_notice_has, assert_has, bin, nonce, processes, s, scaled, sh_quote,
    u,
};
use crate::tmux::TmuxTerminal;

/// Longest wait for anything to appear on the screen.
const WAIT: Duration = Duration::from_secs(15);

/// Printed when the whole `bash -c` line is done. Waiting for it rather than for
/// the pane to die keeps the tests independent of when tmux reaps.
const LINE_DONE: &str = "shell-line-done";

/// Run after agentbash in the terminal: whether `stty -g` is what it was before
/// agentbash started, and the line-discipline flags a cooked terminal has, one
/// short line each (a long `stty -a` would be wrapped mid-word by the pane).
const TTY_REPORT: &str = "if [ \"$(stty -g)\" = \"$before\" ]; then echo tty-restored; else echo tty-changed; fi; \
     echo \"flags: $(stty -a | tr -s ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo|isig|icrnl|opost)' | tr '\\n' ' ')\"";

/// `agentbash run <options> -- <command>` in a `cols`×`rows` terminal, followed
/// by the exit status and the terminal report.
pub(crate) fn interactive(
    env: &TestEnv,
    options: &str,
    command: &str,
    cols: u16,
    rows: u16,
) -> TmuxTerminal {
    let line = format!(
        "before=$(stty -g); {} run {options} -- {}; echo ab-exit=$?; {TTY_REPORT}; echo {LINE_DONE}",
        sh_quote(&bin().to_string_lossy()),
        sh_quote(command),
    );
    env.start_terminal(&line, cols, rows)
}

/// `agentbash run --pty -- command` without a terminal (the text result).
fn headless<'e>(env: &'e TestEnv, command: &str) -> Test<'e> {
    env.run_text(command).opts(&["--pty"])
}

/// `agentbash run --json --pty -- command` without a terminal.
fn headless_json<'e>(env: &'e TestEnv, command: &str) -> Test<'e> {
    env.run_json(command).opts(&["--pty"])
}

/// `agentbash run --pty -- command` ([`interactive`]) in a 100×30 terminal.
fn console(env: &TestEnv, command: &str) -> TmuxTerminal {
    interactive(env, "--pty", command, 100, 30)
}

/// Waits for the line to end; asserts its exit status and that the terminal was
/// restored; returns history + screen.
#[track_caller]
fn finished_restored(term: &TmuxTerminal, code: i32) -> String {
    let all = finished(term);
    assert_exit(&all, code);
    assert_restored(&all);
    all
}

/// [`finished_restored`] of a run agentbash ended: the header shows `badge`
/// (`[killed]`, `[timed out]`) and `annotation` stands after the run.
#[track_caller]
fn ended_restored(term: &TmuxTerminal, code: i32, badge: &str, annotation: &str) {
    let all = finished_restored(term, code);
    assert_has(&all, badge);
    assert_annotated(&all, annotation);
}

/// The kill key (Escape) ends the run: exit 130. Returns history + screen.
#[track_caller]
fn escape(term: &TmuxTerminal) -> String {
    term.send_keys(&["Escape"]).unwrap();
    let all = finished(term);
    assert_exit(&all, 130);
    all
}

/// Waits for the whole `bash -c` line to end; returns history + screen.
pub(crate) fn finished(term: &TmuxTerminal) -> String {
    term.wait_for_in_history(LINE_DONE, WAIT)
        .expect("the shell line ends")
}

/// agentbash left the terminal exactly as it found it: cooked, echoing.
#[track_caller]
fn assert_restored(all: &str) {
    assert!(
        all.contains("tty-restored"),
        "stty -g differs after the run:\n{all}"
    );
    let flags = all
        .lines()
        .find_map(|line| line.trim().strip_prefix("flags: "))
        .unwrap_or_else(|| panic!("no flags line:\n{all}"));
    let flags: Vec<&str> = flags.split_whitespace().collect();
    for flag in ["icanon", "echo", "isig", "icrnl", "opost"] {
        assert!(
            flags.contains(&flag),
            "{flag} is off after the run: {flags:?}\n{all}"
        );
    }
}

/// The run's annotation is on the terminal after the run, on a
/// line of its own (the viewport header shows only `[killed]`/`[timed out]`).
#[track_caller]
fn assert_annotated(all: &str, annotation: &str) {
    assert!(
        all.lines().any(|line| line.trim() == annotation),
        "{annotation} is not shown after the run:\n{all}"
    );
}

pub(crate) fn exit_code(all: &str) -> Option<i32> {
    all.lines()
        .find_map(|line| line.trim().strip_prefix("ab-exit="))
        .and_then(|code| code.trim().parse().ok())
}

#[track_caller]
fn assert_exit(all: &str, want: i32) {
    assert_eq!(
        exit_code(all),
        Some(want),
        "agentbash's exit status:\n{all}"
    );
}

/// `pid=N` printed by the command (the header shows the unexpanded `pid=$$`).
fn pid_in(screen: &str) -> Option<i32> {
    screen.split("pid=").skip(1).find_map(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Whether `pid` is gone within a few seconds.
fn dies(pid: i32) -> bool {
    let deadline = Instant::now() + scaled(Duration::from_secs(5));
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Processes whose command line is exactly `cmdline`, once dying ones had a few
/// seconds to go (an exact match: tmux and bash carry the text in longer lines).
fn survivors(cmdline: &str) -> Vec<crate::support::Proc> {
    let deadline = Instant::now() + scaled(Duration::from_secs(5));
    loop {
        let found: Vec<_> = processes()
            .into_iter()
            .filter(|p| p.cmdline == cmdline)
            .collect();
        if found.is_empty() || Instant::now() >= deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------
// Interactive: the viewport in a real terminal
// ---------------------------------------------------------------------------

#[test]
fn typed_text_reaches_cat_and_is_echoed() {
    let env = TestEnv::new();
    let term = console(&env, "cat");
    term.wait_for("Console cat [running]", WAIT).unwrap();
    term.wait_for("esc force-kill · input forwarded", WAIT)
        .unwrap();
    term.send_text("hello wörld").unwrap();
    term.send_keys(&["Enter"]).unwrap();
    // Once echoed by the PTY, once written back by cat.
    term.wait_until(WAIT, |screen| screen.matches("hello wörld").count() >= 2)
        .unwrap();
    term.send_keys(&["C-d"]).unwrap();
    let all = finished_restored(&term, 0);
    assert_has(&all, "Console cat [exit 0]");
}

#[test]
fn read_prompt_gets_the_answer() {
    let env = TestEnv::new();
    let term = interactive(&env, "--pty", "read -p 'Name? ' n; echo hello $n", 90, 20);
    term.wait_for("Name? ", WAIT).unwrap();
    term.send_text("Ada").unwrap();
    term.send_keys(&["Enter"]).unwrap();
    term.wait_for_in_history("hello Ada", WAIT).unwrap();
    let all = finished_restored(&term, 0);
    assert_has(&all, "[exit 0]");
}

#[test]
fn escape_kills_the_command_and_its_processes() {
    let env = TestEnv::new();
    let sleep = format!("sleep 100.{}", nonce());
    let term = console(&env, &format!("{sleep} & echo pid=$$; exec {sleep}"));
    let screen = term
        .wait_until(WAIT, |screen| pid_in(screen).is_some())
        .unwrap();
    let pid = pid_in(&screen).expect("pid printed");
    term.send_keys(&["Escape"]).unwrap();
    ended_restored(&term, 130, "[killed]", "[Command cancelled]");
    assert!(dies(pid), "the command ({pid}) survived the kill key");
    let left = survivors(&sleep);
    assert!(left.is_empty(), "survived the kill key: {left:?}");
}

#[test]
fn another_kill_key_lets_escape_through() {
    let env = TestEnv::new();
    env.write("p.toml", "[pty]\nkill_key = \"ctrl-]\"\n");
    let term = interactive(&env, "-p ./p.toml --pty", "cat -v", 100, 30);
    term.wait_for("ctrl-] force-kill · input forwarded", WAIT)
        .unwrap();
    term.send_keys(&["Escape"]).unwrap();
    term.send_text("x").unwrap();
    term.send_keys(&["Enter"]).unwrap();
    // cat -v shows the forwarded ESC as ^[, once in the PTY's echo, once from cat.
    term.wait_until(WAIT, |screen| screen.matches("^[x").count() >= 2)
        .unwrap();
    term.send_keys(&["C-]"]).unwrap();
    ended_restored(&term, 130, "[killed]", "[Command cancelled]");
}

#[test]
fn resizing_the_terminal_resizes_the_pty() {
    let env = TestEnv::new();
    let program = "while :; do echo cols=$(tput cols) lines=$(tput lines); sleep 0.2; done";
    let term = console(&env, program);
    // Viewport: full width minus the two borders; 80% of the rows minus two.
    term.wait_for("cols=98 lines=22", WAIT).unwrap();
    term.resize(80, 20).unwrap();
    let screen = term.wait_for("cols=78 lines=14", WAIT).unwrap();
    let header = screen
        .lines()
        .find(|line| line.contains("Console"))
        .expect("header on screen");
    assert_eq!(
        header.chars().count(),
        80,
        "header fits the new width: {header:?}"
    );
    term.resize(120, 40).unwrap();
    term.wait_for("cols=118 lines=30", WAIT).unwrap();
    assert_restored(&escape(&term));
}

#[test]
fn arrows_follow_the_programs_cursor_key_mode() {
    let env = TestEnv::new();
    let term = console(&env, "cat -v");
    term.wait_for("[running]", WAIT).unwrap();
    term.send_keys(&["Up", "Enter"]).unwrap();
    term.wait_until(WAIT, |s| s.matches("^[[A").count() >= 2)
        .unwrap();
    escape(&term);

    // DECCKM on: the same keys must arrive as ESC O A etc. Keys sent before
    // agentbash has seen the mode switch would rightly go out in normal mode, so
    // wait for the output that follows it (the header shows `$((1+1))`).
    let term = console(&env, "printf '\\033[?1h'; echo app-mode-$((1+1)); cat -v");
    term.wait_for("app-mode-2", WAIT).unwrap();
    term.send_keys(&["Up", "Left", "Home", "End", "Enter"])
        .unwrap();
    term.wait_until(WAIT, |s| s.matches("^[OA^[OD^[OH^[OF").count() >= 2)
        .unwrap();
    escape(&term);
}

#[test]
fn ctrl_c_and_alt_keys_are_forwarded() {
    let env = TestEnv::new();
    let term = console(&env, "trap 'echo got-int' INT; cat -v; cat -v; echo after");
    term.wait_for("[running]", WAIT).unwrap();
    term.send_keys(&["M-x", "Enter"]).unwrap();
    term.wait_until(WAIT, |s| s.matches("^[x").count() >= 2)
        .unwrap();
    // Ctrl-C is a key for the command (its first cat dies, its trap runs), not a
    // signal to agentbash: the run goes on.
    term.send_keys(&["C-c"]).unwrap();
    let screen = term.wait_for("got-int", WAIT).unwrap();
    assert_has(&screen, "[running]");
    let all = escape(&term);
    assert!(
        !all.contains("\nafter"),
        "the second cat was not reached: {all}"
    );
    assert_restored(&all);
}

#[test]
fn timeout_restores_the_terminal() {
    let env = TestEnv::new();
    let term = interactive(&env, "--pty -t 1", "sleep 100", 100, 30);
    ended_restored(
        &term,
        124,
        "[timed out]",
        "[Command timed out after 1 second]",
    );
}

#[test]
fn sigterm_restores_the_terminal() {
    let env = TestEnv::new();
    // Started in the background (a non-interactive shell keeps it in its own,
    // foreground, process group, so it still owns the terminal) and signalled
    // like a supervisor would, once its viewport is up.
    let line = format!(
        "before=$(stty -g); {} run --pty -- 'sleep 100' </dev/tty & echo $! >agentbash.pid; wait $!; echo ab-exit=$?; {TTY_REPORT}; echo {LINE_DONE}",
        sh_quote(&bin().to_string_lossy()),
    );
    let term = env.start_terminal(&line, 100, 30);
    term.wait_for("Console sleep 100 [running]", WAIT).unwrap();
    let pid: i32 = std::fs::read_to_string(env.work().join("agentbash.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    // SAFETY: plain syscall on the agentbash the test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    ended_restored(&term, 143, "[killed]", "[Command cancelled]");
}

#[test]
fn cursor_position_query_is_answered_from_the_screen() {
    let env = TestEnv::new();
    let program = "printf '\\n\\nabc\\033[6n'; read -rs -d R pos; echo; echo \"got ${pos#*[}\"";
    let term = console(&env, program);
    let all = finished(&term);
    assert_has(&all, "got 3;4");
    assert_has(&all, "[exit 0]");
    assert_exit(&all, 0);
}

#[test]
fn print_mode_flags_win_over_the_profile_in_a_terminal() {
    let env = TestEnv::new();
    env.write("on.toml", "[pty]\nmode = \"on\"\n");
    // `$?` of `test -t 1`: 0 in a PTY, 1 without a terminal. The header shows the
    // command with `$?` unexpanded, so only the output can match.
    let run = |label: &str, options: &str| {
        format!(
            "{} run -p ./on.toml {options} -- 'test -t 1; echo {label}-$?'",
            sh_quote(&bin().to_string_lossy())
        )
    };
    let line = format!(
        "{}; {}; {}; AGENTBASH_NO_PTY=1 {}; echo {LINE_DONE}",
        run("auto", ""),
        run("noflag", "--no-pty"),
        run("modeprint", "--mode print"),
        run("noptyenv", ""),
    );
    let term = env.start_terminal(&line, 100, 30);
    let all = finished(&term);
    assert!(all.contains("auto-0"), "auto picks the PTY: {all}");
    assert!(all.contains("noflag-1"), "--no-pty wins: {all}");
    assert!(all.contains("modeprint-1"), "--mode print wins: {all}");
    assert!(all.contains("noptyenv-1"), "AGENTBASH_NO_PTY=1 wins: {all}");
}

// ---------------------------------------------------------------------------
// Headless: --pty into pipes
// ---------------------------------------------------------------------------

#[test]
fn tty_is_a_pts_device() {
    let out = Test::new().run_text("tty").opts(&["--pty"]).code(0).run();
    let re = crate::support::re(r"^/dev/pts/\d+\n$");
    assert!(re.is_match(&out.stdout), "{:?}", out.stdout);
}

#[test]
fn stdin_and_stdout_are_terminals() {
    let env = TestEnv::new();
    let command = "test -t 0 && test -t 1 && echo both-terminals";
    headless(&env, command)
        .code(0)
        .stdout("both-terminals\n")
        .run();
    // Without --pty they are not.
    env.run_text(command).run().assert_code(1);
}

/// The command leads a session of its own whose controlling terminal is the PTY, as in
/// a terminal emulator: its process group is the terminal's foreground group (so ^C
/// and job control reach it) and `/dev/tty` opens.
#[test]
fn the_pty_is_the_controlling_terminal_of_the_commands_session() {
    let command = "tty; ps -o pid=,sid=,pgid=,tpgid=,tty= -p $$; echo via-dev-tty > /dev/tty";
    let out = Test::new().run_text(command).opts(&["--pty"]).code(0).run();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{:?}", out.stdout);
    let tty = lines[0].strip_prefix("/dev/").expect("a /dev path");
    let fields: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(fields.len(), 5, "{:?}", lines[1]);
    let (pid, sid, pgid, tpgid) = (fields[0], fields[1], fields[2], fields[3]);
    assert_eq!(sid, pid, "a session leader: {:?}", lines[1]);
    assert_eq!(pgid, pid, "a process-group leader: {:?}", lines[1]);
    assert_eq!(
        tpgid, pid,
        "the terminal's foreground group: {:?}",
        lines[1]
    );
    assert_eq!(fields[4], tty, "controlling terminal: {:?}", lines[1]);
    assert_eq!(lines[2], "via-dev-tty");
}

/// Only the slave reaches the command: agentbash's master side of the PTY is
/// close-on-exec (a command holding it would keep the PTY open and could read
/// its own output back).
#[test]
fn the_command_gets_the_slave_and_not_the_master() {
    let out = Test::new()
        .run_text("exec ls -l /proc/self/fd/")
        .opts(&["--pty"])
        .code(0)
        .stdout_lacks("ptmx")
        .run();
    for fd in ["0", "1", "2"] {
        let re = crate::support::re(&format!(r"(?m) {fd} -> /dev/pts/\d+\s*$"));
        assert!(re.is_match(&out.stdout), "fd {fd}: {}", out.stdout);
    }
}

/// A working directory that is missing or not a directory is refused with the same
/// message and exit status as in print mode, and nothing runs.
#[test]
fn a_bad_cwd_is_refused_as_in_print_mode() {
    let env = TestEnv::new();
    env.write("a-file", "");
    for (cwd, says) in [
        ("missing", "Working directory does not exist"),
        ("a-file", "Working directory is not a directory"),
    ] {
        let print = env.run_text("touch ran").opts(&["-C", cwd]).run();
        let pty = env.run_text("touch ran").opts(&["--pty", "-C", cwd]).run();
        for out in [&print, &pty] {
            out.assert_code(125);
            assert!(out.stderr.contains(says), "{cwd}: {}", out.stderr);
        }
        assert_eq!(print.stderr, pty.stderr);
        assert!(!env.work().join("ran").exists());
    }
}

#[test]
fn pty_has_the_profile_size() {
    let env = TestEnv::new();
    headless(&env, "stty size").code(0).stdout("40 120\n").run();
    env.write("p.toml", "[pty]\ncols = 77\nrows = 13\n");
    env.run_text("stty size")
        .opts(&["-p", "./p.toml", "--pty"])
        .code(0)
        .stdout("13 77\n")
        .run();
}

#[test]
fn stdin_is_fed_to_the_pty_with_stdin() {
    let env = TestEnv::new();
    env.run_text("read -r x; echo got=$x")
        .opts(&["--pty", "--stdin"])
        .stdin("abc\n")
        .code(0)
        .stdout_has("got=abc")
        .run();

    // A last line without a newline still arrives, and EOF follows it.
    env.run_text("n=$(cat | wc -c); echo n=$n")
        .opts(&["--pty", "--stdin"])
        .stdin("one\ntwo")
        .code(0)
        .stdout_has("n=7")
        .run();

    // Without --stdin the PTY gets nothing.
    headless(&env, "read -t 1 x && echo read=$x || echo no-input")
        .stdin("abc\n")
        .code(0)
        .stdout_has("no-input")
        .run();
}

#[test]
fn timeout_kills_the_whole_tree() {
    let env = TestEnv::new();
    let sleep = format!("sleep 100.{}", nonce());
    let command = format!("{sleep} & {sleep} & ({sleep} &); echo started; wait");

    let out = env
        .run_text(&command)
        .opts(&["--pty", "-t", "1"])
        .code(124)
        .run();
    assert_eq!(
        out.stderr.lines().next(),
        Some("[Command timed out after 1 second]"),
        "{}",
        out.stderr
    );
    assert_has(&out.stdout, "started");
    let left = survivors(&sleep);
    assert!(left.is_empty(), "survived the timeout: {left:?}");

    let out = env
        .run_json(&command)
        .opts(&["--pty", "-t", "1"])
        .code(124)
        .run();
    let v = out.json();
    assert_eq!(
        s(&v, "text").lines().next(),
        Some("[Command timed out after 1 second]"),
        "{v:#}"
    );
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["exit_code"], 124);
    let left = survivors(&sleep);
    assert!(left.is_empty(), "survived the timeout: {left:?}");
}

#[test]
fn json_mode_is_pty() {
    let env = TestEnv::new();
    let out = headless_json(&env, "true").code(0).run();
    assert_eq!(s(&out.json(), "mode"), "pty");
    let out = env.run_json("true").run();
    assert_eq!(s(&out.json(), "mode"), "print");
}

#[test]
fn env_is_hardened_for_a_terminal() {
    let env = TestEnv::new();
    let has = |out: &str, line: &str| out.lines().any(|l| l == line);
    // Even an inherited TERM=dumb gives way to the PTY's terminal type.
    let out = env
        .run_text("env")
        .opts(&["--pty"])
        .env("TERM", "dumb")
        .code(0)
        .run();
    let pty = &out.stdout;
    assert!(has(pty, "TERM=xterm-256color"), "{pty}");
    assert!(!pty.lines().any(|l| l.starts_with("NO_COLOR=")), "{pty}");
    for line in [
        "GIT_PAGER=cat",
        "PAGER=cat",
        "CI=true",
        "LESS=FRX",
        "AGENT=1",
    ] {
        assert!(has(pty, line), "{line} missing in the PTY env:\n{pty}");
    }

    // Print mode hardens TERM and NO_COLOR (the contrast the PTY drops).
    let out = env.run_text("env").run();
    assert!(has(&out.stdout, "TERM=dumb"), "{}", out.stdout);
    assert!(has(&out.stdout, "NO_COLOR=1"), "{}", out.stdout);
}

#[test]
fn transcript_line_endings_are_normalized() {
    let env = TestEnv::new();
    headless(&env, "printf 'a\\nb\\n'")
        .code(0)
        .stdout("a\nb\n")
        .run();
    let v = headless_json(&env, "printf 'a\\nb\\n'").json();
    assert_eq!(s(&v, "output"), "a\nb\n", "{v:#}");
    assert_eq!(u(&v, "output_lines"), 2, "{v:#}");
}

#[test]
fn no_pty_env_runs_a_forced_pty_without_a_terminal() {
    let env = TestEnv::new();
    let notice = "PTY requested but disabled by AGENTBASH_NO_PTY; ran without a terminal";
    headless(&env, "tty")
        .env("AGENTBASH_NO_PTY", "1")
        .code(1)
        .stdout("not a tty\n")
        .stderr_has(notice)
        .run();

    headless_json(&env, "tty")
        .env("AGENTBASH_NO_PTY", "1")
        .code(1)
        .field("mode", "print")
        .output("not a tty\n")
        .notice_is(notice)
        .run();
}

#[test]
fn explain_shows_the_mode() {
    let env = TestEnv::new();
    let mode_line = |out: &crate::support::Output| {
        out.stdout
            .lines()
            .find(|l| l.starts_with("mode "))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    let out = env.run_ok(&["explain", "--pty", "--", "echo", "hi"]);
    assert_eq!(
        mode_line(&out).as_deref(),
        Some("mode pty"),
        "{}",
        out.stdout
    );
    let out = env.run(&["explain", "--", "echo", "hi"]);
    assert_eq!(
        mode_line(&out).as_deref(),
        Some("mode print"),
        "{}",
        out.stdout
    );
    let out = env
        .cmd(&["explain", "--pty", "--", "echo", "hi"])
        .env("AGENTBASH_NO_PTY", "1")
        .run();
    assert_eq!(
        mode_line(&out).as_deref(),
        Some("mode print"),
        "{}",
        out.stdout
    );
}

#[test]
fn big_output_is_retained_like_print_mode() {
    let env = TestEnv::new();
    let mask = crate::support::re(r"artifact://\d+");
    let notice = |out: &crate::support::Output| {
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with("[Showing lines"))
            .unwrap_or_else(|| panic!("no retention notice:\n{}", out.stderr))
            .to_string();
        mask.replace(&line, "artifact://N").into_owned()
    };
    let print = env.run_text("seq 100000").code(0).run();
    let pty = env.run_text("seq 100000").opts(&["--pty"]).code(0).run();
    assert_eq!(notice(&pty), notice(&print));
    assert_eq!(pty.stdout, print.stdout);

    let v = env
        .run_json("seq 100000")
        .opts(&["--pty"])
        .field("mode", "pty")
        .field("truncated", true)
        .json();
    assert_eq!(u(&v, "total_lines"), 100_000);
    let path = v["artifact"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("no artifact: {v:#}"));
    // The artifact keeps the raw transcript: every line, with the PTY's CRLF.
    let raw = std::fs::read(Path::new(path)).expect("artifact file");
    let text = String::from_utf8(raw).expect("UTF-8 artifact");
    let expected: String = (1..=100_000).map(|n| format!("{n}\r\n")).collect();
    assert!(text == expected, "artifact is not the full raw transcript");
}

/// A lifted `| head -n N` stops an endless producer in PTY mode as in print mode
/// (regression: it ran until the timeout).
#[test]
fn lifted_head_stops_the_producer_in_pty_mode() {
    let env = TestEnv::new();
    let out = crate::lift::yes_stopped_by_head(env.test(), "yes 2>&1 | head -n 3", &["--pty"]);
    let v = out.json();
    assert_eq!(v["mode"], "pty", "{v:#}");
    // The counts are the pipeline's: head's three lines.
    assert_eq!(v["total_lines"], 3);
    assert_first_notice_has(&v, "as `| head` would");
    out.assert_ended_within(30);
    assert!(env.leftovers(Duration::from_millis(200)).is_empty());
}

#[test]
fn terminal_queries_are_answered_headless() {
    let env = TestEnv::new();
    headless(
        &env,
        "printf 'abc\\033[6n'; read -rs -d R pos; echo; echo \"got ${pos#*[}\"",
    )
    .code(0)
    .stdout_has("got 1;4")
    .run();

    env.run_text("printf '\\033[c'; read -rs -d c da; printf '\\033[5n'; read -rs -d n st; echo; echo \"da=${da#*[} st=${st#*[}\"").opts(&["--pty"]).code(0).stdout_has("da=?1;2 st=0").run();
}

#[test]
fn exit_codes_and_signals_are_reported() {
    let env = TestEnv::new();
    headless(&env, "exit 3")
        .code(3)
        .stderr_has("Command exited with code 3")
        .run();
    headless(&env, "kill -KILL $$").run().assert_code(137);
}

#[test]
fn background_job_holding_the_pty_is_killed_not_waited_for() {
    let env = TestEnv::new();
    let sleep = format!("sleep 100.{}", nonce());
    // The job ignores the hangup the PTY sends when the shell exits, and is
    // known to have done so (the file) before the shell exits.
    let command = format!(
        "(trap '' HUP; touch job-ready; exec {sleep}) & \
         while [ ! -e job-ready ]; do sleep 0.05; done; echo started"
    );
    let v = headless_json(&env, &command).code(0).json();
    assert_eq!(s(&v, "output"), "started\n", "{v:#}");
    let killed = v["background_killed"]
        .as_array()
        .expect("background_killed");
    assert!(
        killed.iter().any(|k| k["command"] == sleep.as_str()),
        "{v:#}"
    );
    let left = survivors(&sleep);
    assert!(left.is_empty(), "the background job survived: {left:?}");
}

// Not ported from the scratch crate: `panic_restores_the_terminal` drove a
// panic hook through a demo-only trigger (`PTY_DEMO_PANIC_ON`); the real binary
// has no way to make the engine panic on purpose.
