//! Text from the command (its text, cwd, names, errors quoting them) is shown with
//! its control characters escaped wherever a person's terminal or a CI log shows
//! it; JSON keeps the real text (issue 11).
//!
//! The terminal tests run agentbash in a real terminal (tmux, see [`crate::tmux`])
//! whose server accepts OSC 52 clipboard writes (`set-clipboard on`) into a paste
//! buffer, and check the clipboard and the pane title after the run, then prove
//! the check can fail by letting a shell print the same sequences.

use crate::support::{TestEnv, assert_has, assert_starts_with, bin};
use crate::tmux::TmuxTerminal;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

/// Returns the cursor to the start of the line, erases it and prints a fake
/// header; sets the clipboard to "hacked"; sets the window title (OSC 0 and 2).
const EVIL: &str =
    "\r\x1b[2K$ echo harmless \x1b]52;c;aGFja2Vk\x07 \x1b]0;pwned-title\x07 \x1b]2;pwned-2\x07";
/// [`EVIL`] as [`crate::display`] shows it.
const EVIL_SHOWN: &str =
    r"\r\e[2K$ echo harmless \e]52;c;aGFja2Vk\x07 \e]0;pwned-title\x07 \e]2;pwned-2\x07";

/// bash's `$'…'` form of `s` (ANSI-C quoting), so the terminal's shell line carries
/// the raw control characters.
fn ansi_c_quote(s: &str) -> String {
    let mut q = String::from("$'");
    for c in s.chars() {
        match c {
            '\'' | '\\' => {
                q.push('\\');
                q.push(c);
            }
            c if c.is_control() => q.push_str(&format!("\\x{:02x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('\'');
    q
}

/// A terminal that runs `agentbash run <options> -- <command>`, then, after a key
/// press, prints `control` (OSC 52 "control", OSC 2 "control-title") itself.
/// The shell stays after `control-done` (a last `read`): a pane whose process exits
/// the moment it has printed may lose that last output in tmux under load.
fn terminal(env: &TestEnv, options: &str, command: &str) -> TmuxTerminal {
    let line = format!(
        "'{}' run {options} -- {}; echo ab-exit=$?; read -r _; \
         printf '\\033]52;c;Y29udHJvbA==\\a\\033]2;control-title\\a'; echo control-done; \
         read -r _",
        bin().display(),
        ansi_c_quote(command)
    );
    env.terminal(&line)
        .size(220, 30)
        .config("set -g set-clipboard on")
        .start()
        .expect("tmux starts")
}

/// After the run: nothing reached the clipboard or the title. Then the control:
/// the same kind of sequences printed by the shell do reach both.
#[track_caller]
fn assert_terminal_untouched_then_control(term: &TmuxTerminal) -> String {
    let all = term
        .wait_for_in_history("ab-exit=", WAIT)
        .expect("agentbash finishes");
    let buffers = term.buffers().expect("list buffers");
    assert!(!buffers.contains("hacked"), "clipboard set: {buffers:?}");
    let title = term.pane_title().expect("pane title");
    assert!(!title.contains("pwned"), "title set: {title:?}");
    term.send_keys(&["Enter"]).expect("send Enter");
    term.wait_for_in_history("control-done", WAIT)
        .expect("control step");
    assert!(
        term.buffers().expect("list buffers").contains("control"),
        "the control OSC 52 did not land in a buffer: the check above proves nothing"
    );
    assert_eq!(term.pane_title().expect("pane title"), "control-title");
    all
}

#[test]
fn the_header_shows_a_commands_controls_escaped_on_a_real_terminal() {
    let env = TestEnv::new();
    let command = format!("true # {EVIL}");
    let term = terminal(&env, "", &command);
    let all = assert_terminal_untouched_then_control(&term);
    let header = all
        .lines()
        .find(|l| l.starts_with("$ true # "))
        .unwrap_or_else(|| panic!("no header:\n{all}"));
    assert_eq!(header.trim_end(), format!("$ true # {EVIL_SHOWN}"), "{all}");
    assert!(
        !all.lines()
            .any(|l| l.trim_start().starts_with("$ echo harmless")),
        "the fake header was drawn:\n{all}"
    );
    assert_has(&all, "ab-exit=0");
}

#[test]
fn the_pty_viewport_header_shows_a_commands_controls_escaped() {
    let env = TestEnv::new();
    let command = "true # \x1b]2;pwned-pty\x07 \x1b]52;c;aGFja2Vk\x07";
    let term = terminal(&env, "--pty", command);
    let all = assert_terminal_untouched_then_control(&term);
    assert!(
        all.contains(r"Console true # \e]2;pwned-pty\x07 \e]52;c;aGFja2Vk\x07 [exit 0]"),
        "{all}"
    );
}

/// Into a pipe: stdout carries the output, stderr agentbash's notices and errors,
/// each with the controls it quotes escaped (a CI log renders them otherwise).
#[test]
fn notices_and_errors_on_stderr_are_escaped() {
    let env = TestEnv::new();
    env.write(
        "warn.toml",
        "[[rule]]\nid = \"evil\"\npattern = '^true'\ntool = \"x\"\naction = \"warn\"\n\
         message = \"careful\\r\\u001b[2Kfake\\u001b]0;pwned\\u0007 line\\nnext\"\n",
    );
    env.write(
        "p.toml",
        "[interceptor]\nrules = [\"./warn.toml\"]\ntools = [\"x\"]\n",
    );
    let out = env.run_text("true").profile("./p.toml").code(0).run();
    assert!(
        out.stderr
            .lines()
            .any(|l| l == r"careful\r\e[2Kfake\e]0;pwned\x07 line\nnext"),
        "{:?}",
        out.stderr
    );
    assert!(!out.stderr.contains('\x1b'), "{:?}", out.stderr);
    // JSON keeps the real text.
    let out = env.run_json("true").profile("./p.toml").run();
    assert_eq!(
        out.json()["notices"][0],
        "careful\r\x1b[2Kfake\x1b]0;pwned\x07 line\nnext"
    );

    let dir = "gone\x1b]0;pwned\x07\rdir";
    let out = env.run_text("true").opts(&["-C", dir]).code(125).run();
    assert_has(&out.stderr, "Working directory does not exist: ");
    assert_escaped(&out.stderr, r"gone\e]0;pwned\x07\rdir");
}

/// `text` shows `escaped` (controls written out as `\e`, `\x07`, `\r`) and holds no
/// raw ESC.
#[track_caller]
fn assert_escaped(text: &str, escaped: &str) {
    assert!(text.contains(escaped), "lacks {escaped:?}: {text:?}");
    assert!(!text.contains('\x1b'), "a raw ESC: {text:?}");
}

/// GitHub Actions lines, `explain`, `artifact list` and `session list`.
#[test]
fn ci_lines_explain_artifact_and_session_lists_are_escaped() {
    let env = TestEnv::new();
    let command = "seq 1 100000 # \x1b]0;pwned\x07\r::error::fake";
    let escaped = r"seq 1 100000 # \e]0;pwned\x07\r::error::fake";
    let ci = env
        .run_text(command)
        .env("GITHUB_ACTIONS", "true")
        .code(0)
        .stdout_lacks("\x1b")
        .stdout_lacks("\r")
        .run();
    assert_starts_with(&ci.stdout, format!("::group::$ {escaped}\n"));
    assert_escaped(&env.run_ok(&["artifact", "list"]).stdout, escaped);
    let explain = env.run_ok(&["explain", "--", command]).stdout;
    assert_escaped(&explain, &format!("command     {escaped}"));
    env.explain_json(command).field("command", command).run();

    let dir = env.work().join("d\x1b]0;pwned\x07");
    std::fs::create_dir_all(&dir).expect("mkdir");
    env.run_text("true")
        .opts(&["-s", "s1", "-C", dir.to_str().unwrap()])
        .code(0)
        .run();
    for args in [&["session", "list"][..], &["session", "show", "s1"]] {
        assert_escaped(&env.run_ok(args).stdout, r"d\e]0;pwned\x07");
    }
}

/// `rules test` echoed the command raw in its verdict and in the block message (an
/// OSC sequence in a command reached the terminal); `rules check`, `profile check`,
/// `trust` and the job commands' errors echoed paths and names raw (issue 22,
/// item 13). Every one shows the controls escaped.
#[test]
fn rules_test_checks_and_errors_escape_what_they_echo() {
    let env = TestEnv::new();
    let evil = "\x1b]0;pwned\x07";
    let shown = r"\e]0;pwned\x07";
    let (tools, cmd) = (format!("read,r{evil}"), format!("cat x{evil}"));
    let (echo, pack, profile) = (
        format!("echo {evil}"),
        format!("./pack{evil}.toml"),
        format!("./p{evil}.toml"),
    );
    let (dir, job) = (format!("d{evil}"), format!("j{evil}"));
    // (arguments, exit code; `None`: any failure)
    let cases: [(&[&str], Option<i32>); 6] = [
        (&["rules", "test", "--tools", &tools, "--", &cmd], Some(77)),
        (&["rules", "test", "--", &echo], Some(0)),
        (&["rules", "check", &pack], Some(1)),
        (&["profile", "check", &profile], Some(1)),
        (&["trust", &dir], Some(1)),
        (&["job", "stop", &job], None),
    ];
    for (args, code) in cases {
        let out = env.run(args);
        match code {
            Some(code) => {
                out.assert_code(code);
            }
            None => assert_ne!(out.code(), Some(0), "{args:?}"),
        }
        let both = format!("{}{}", out.stdout, out.stderr);
        assert!(
            !both.contains('\x1b') && !both.contains('\x07'),
            "{args:?}: {both:?}"
        );
        assert!(both.contains(shown), "{args:?}: {both}");
    }
}
