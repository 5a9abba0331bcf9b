//! The approval question on a terminal (README, Approval): `agentbash run` with stdin
//! and stdout on a terminal asks the person there before a command the approval
//! policy asks about runs. One key answers: `y` once, `a` always for the session,
//! `n` no; nothing runs until then, and no answer within `approval.timeout` is a no.
//!
//! The question is written to and read from `/dev/tty`, the controlling terminal, so
//! it reaches the person even with `--json` on stdout. The terminal is put in
//! non-canonical mode without echo only while the question waits (Ctrl-C still
//! interrupts: it cancels the run, which did not start), and restored after.

use crate::display::escape_controls;
use crate::process::CancelToken;
use crate::request::{Answer, Approver, Question};
use nix::sys::termios::{LocalFlags, SetArg, SpecialCharacterIndices, tcgetattr, tcsetattr};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// Asks the person at the controlling terminal.
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn ask(&self, question: &Question, cancel: &CancelToken) -> Answer {
        let mut tty = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags_noctty()
            .open("/dev/tty")
        {
            Ok(t) => t,
            Err(e) => return Answer::Unavailable(format!("the terminal cannot be opened: {e}")),
        };
        let _ = tty.write_all(prompt(question).as_bytes());
        let _ = tty.flush();
        let answer = {
            let _mode = KeyMode::enter(&tty);
            read_answer(&tty, question, cancel)
        };
        let said = match &answer {
            Answer::Once => "y — running it once\n".to_string(),
            Answer::Always if question.can_remember() => format!(
                "a — running it, and commands it was asked about run without asking in session {}\n",
                escape_controls(question.session.as_deref().unwrap_or_default())
            ),
            Answer::Always => "a — running it once (nothing to remember it in)\n".to_string(),
            Answer::Deny => "n — not running it\n".to_string(),
            Answer::TimedOut => format!(
                "\nno answer within {} s — not running it\n",
                question.timeout.as_secs()
            ),
            Answer::Cancelled(_) => "\ncancelled — not running it\n".to_string(),
            Answer::Unavailable(why) => format!("\n{why} — not asked\n"),
        };
        let _ = tty.write_all(said.as_bytes());
        let _ = tty.flush();
        answer
    }

    fn who(&self) -> String {
        "the person at the terminal".into()
    }
}

/// `OpenOptions` with `O_NOCTTY`: opening the terminal must never make it ours.
trait NoCtty {
    fn custom_flags_noctty(&mut self) -> &mut Self;
}

impl NoCtty for std::fs::OpenOptions {
    fn custom_flags_noctty(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
    }
}

/// The question as the terminal shows it.
fn prompt(q: &Question) -> String {
    let mut t = String::from("\nagentbash: approval needed before this runs\n");
    t.push_str(&format!("  $ {}\n", escape_controls(&q.command)));
    for a in &q.asks {
        let by = if a.rule == "approval.default" {
            "approval.default asks".to_string()
        } else {
            format!("rule `{}` asks", escape_controls(&a.rule))
        };
        t.push_str(&format!("  {}  ({by})\n", escape_controls(&a.command)));
    }
    let always = if q.can_remember() {
        let prefixes = q
            .asks
            .iter()
            .filter_map(|a| a.prefix.as_deref())
            .map(|p| format!("`{}`", escape_controls(p)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "[a] always in session {} (commands starting with {prefixes})",
            escape_controls(q.session.as_deref().unwrap_or_default())
        )
    } else if q.session.is_none() {
        "[a] always: there is no session to remember it in (-s NAME), so once".to_string()
    } else {
        "[a] always: what it runs is not known until it runs, so once".to_string()
    };
    t.push_str(&format!(
        "[y] yes, once   {always}   [n] no   (answer within {} s) ",
        q.timeout.as_secs()
    ));
    t
}

/// Waits for `y`, `a` or `n` (Enter and other keys are ignored; Ctrl-D and Esc say
/// no), the deadline, or the cancel token.
fn read_answer(tty: &std::fs::File, q: &Question, cancel: &CancelToken) -> Answer {
    let mut reader = tty;
    let deadline = Instant::now() + q.timeout;
    loop {
        if let Some(sig) = cancel.reason() {
            return Answer::Cancelled(sig);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Answer::TimedOut;
        }
        let wait = left.min(Duration::from_millis(100));
        let mut fds = [nix::poll::PollFd::new(
            tty.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let timeout = nix::poll::PollTimeout::try_from(wait.as_millis() as i32)
            .unwrap_or(nix::poll::PollTimeout::ZERO);
        match nix::poll::poll(&mut fds, timeout) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Answer::Unavailable(format!("the terminal cannot be read: {e}")),
        }
        let mut byte = [0u8; 1];
        match reader.read(&mut byte) {
            Ok(0) => return Answer::Deny,
            Ok(_) => match byte[0] {
                b'y' | b'Y' => return Answer::Once,
                b'a' | b'A' => return Answer::Always,
                b'n' | b'N' | 0x04 | 0x1b => return Answer::Deny,
                _ => {}
            },
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Answer::Unavailable(format!("the terminal cannot be read: {e}")),
        }
    }
}

/// The terminal in key-at-a-time mode without echo, restored when dropped.
struct KeyMode<'a> {
    tty: &'a std::fs::File,
    saved: Option<nix::sys::termios::Termios>,
}

impl<'a> KeyMode<'a> {
    fn enter(tty: &'a std::fs::File) -> Self {
        let saved = tcgetattr(tty.as_fd()).ok();
        if let Some(saved) = &saved {
            let mut keys = saved.clone();
            keys.local_flags
                .remove(LocalFlags::ICANON | LocalFlags::ECHO);
            keys.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
            keys.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
            let _ = tcsetattr(tty.as_fd(), SetArg::TCSANOW, &keys);
        }
        KeyMode { tty, saved }
    }
}

impl Drop for KeyMode<'_> {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = tcsetattr(self.tty.as_fd(), SetArg::TCSANOW, saved);
        }
    }
}
