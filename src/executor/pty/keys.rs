//! Keys: what a person types at the interactive viewport, on its way to the PTY.
//! Input goes through unchanged except that cursor keys follow the program's
//! cursor-key mode and the kill key is taken out, a lone Esc only once nothing
//! followed it in time.

use std::time::{Duration, Instant};

use super::ESC;
use crate::config::kill_key::KillKey;

/// A lone ESC is the Esc key only if nothing follows it within this time.
const ESC_TIMEOUT: Duration = Duration::from_millis(50);

/// Turns raw keyboard bytes into bytes for the PTY.
///
/// Input is forwarded unchanged except that cursor keys follow the inner
/// program's cursor-key mode (`ESC [ A` vs `ESC O A`) and the kill key is
/// taken out. A lone ESC is only known to be the Esc key when nothing follows
/// it within [`ESC_TIMEOUT`], so an ESC at the end of a read is held.
pub(super) struct KeyInput {
    kill: u8,
    pending: Vec<u8>,
    pending_since: Option<Instant>,
}

/// How an escape sequence at the start of a buffer is shaped.
enum EscShape {
    /// More bytes are needed to know.
    Incomplete,
    /// ESC followed by something that does not start a sequence (Alt+key).
    Prefix,
    /// A whole sequence of this many bytes.
    Complete(usize),
}

/// Input sequences longer than this are not sequences; forward them as they are.
const MAX_SEQUENCE: usize = 32;

impl KeyInput {
    pub(super) fn new(kill_key: KillKey) -> Self {
        Self {
            kill: kill_key.byte(),
            pending: Vec::new(),
            pending_since: None,
        }
    }

    /// Appends what to forward to `out`. Returns true on the kill key.
    pub(super) fn feed(
        &mut self,
        bytes: &[u8],
        now: Instant,
        app_cursor: bool,
        out: &mut Vec<u8>,
    ) -> bool {
        let mut input = std::mem::take(&mut self.pending);
        input.extend_from_slice(bytes);
        let mut i = 0;
        while i < input.len() {
            let byte = input[i];
            if byte == self.kill && self.kill != ESC {
                self.pending_since = None;
                return true;
            }
            if byte != ESC {
                out.push(byte);
                i += 1;
                continue;
            }
            match esc_shape(&input[i..]) {
                EscShape::Incomplete => {
                    self.pending.extend_from_slice(&input[i..]);
                    self.pending_since.get_or_insert(now);
                    return false;
                }
                EscShape::Prefix => {
                    out.push(ESC);
                    i += 1;
                }
                EscShape::Complete(len) => {
                    translate_cursor_key(&input[i..i + len], app_cursor, out);
                    i += len;
                }
            }
        }
        self.pending_since = None;
        false
    }

    /// When the held bytes must be decided on.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.pending_since.map(|since| since + ESC_TIMEOUT)
    }

    /// Decides on held bytes once nothing followed them in time. Returns true
    /// when they were a lone Esc and Esc is the kill key.
    pub(super) fn expire(&mut self, now: Instant, app_cursor: bool, out: &mut Vec<u8>) -> bool {
        match self.pending_since {
            Some(since) if now >= since + ESC_TIMEOUT => {
                self.pending_since = None;
                let held = std::mem::take(&mut self.pending);
                if held == [ESC] && self.kill == ESC {
                    return true;
                }
                translate_cursor_key(&held, app_cursor, out);
                false
            }
            _ => false,
        }
    }
}

fn esc_shape(input: &[u8]) -> EscShape {
    match input.get(1) {
        None => EscShape::Incomplete,
        Some(b'[') => {
            for (index, &byte) in input.iter().enumerate().skip(2) {
                if (0x40..=0x7e).contains(&byte) {
                    return EscShape::Complete(index + 1);
                }
                if !(0x20..=0x3f).contains(&byte) {
                    // Not a well-formed sequence: pass the bytes so far on.
                    return EscShape::Complete(index);
                }
            }
            if input.len() >= MAX_SEQUENCE {
                EscShape::Complete(input.len())
            } else {
                EscShape::Incomplete
            }
        }
        Some(b'O') if input.len() >= 3 => EscShape::Complete(3),
        Some(b'O') => EscShape::Incomplete,
        Some(_) => EscShape::Prefix,
    }
}

/// Arrows, Home and End are sent the way xterm (the inner `TERM`) sends
/// them: `ESC O x` when the program asked for application cursor keys
/// (DECCKM), `ESC [ x` otherwise. Home and End also arrive as `ESC [ 1 ~` /
/// `ESC [ 4 ~` (tmux, screen, the Linux console) or `ESC [ 7 ~` / `ESC [ 8 ~`
/// (rxvt), which programs told they run in an xterm would not recognise.
fn translate_cursor_key(sequence: &[u8], app_cursor: bool, out: &mut Vec<u8>) {
    let key = match sequence {
        [
            ESC,
            b'[' | b'O',
            key @ (b'A' | b'B' | b'C' | b'D' | b'H' | b'F'),
        ] => *key,
        [ESC, b'[', b'1' | b'7', b'~'] => b'H',
        [ESC, b'[', b'4' | b'8', b'~'] => b'F',
        _ => {
            out.extend_from_slice(sequence);
            return;
        }
    };
    let introducer = if app_cursor { b'O' } else { b'[' };
    out.extend_from_slice(&[ESC, introducer, key]);
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Duration = Duration::ZERO;

    fn keys(kill: KillKey, reads: &[&[u8]], app_cursor: bool) -> (Vec<u8>, bool) {
        let mut input = KeyInput::new(kill);
        let now = Instant::now();
        let mut out = Vec::new();
        for read in reads {
            if input.feed(read, now, app_cursor, &mut out) {
                return (out, true);
            }
        }
        let later = now + ESC_TIMEOUT + T0;
        let killed = input.expire(later, app_cursor, &mut out);
        (out, killed)
    }

    #[test]
    fn keys_are_forwarded_unchanged() {
        let typed: &[u8] = "héllo\r\t\x7f\x03\x1bx\x1b[3~\x1b[5~\x1b[1;5C\x1b[11~".as_bytes();
        assert_eq!(keys(KillKey::Esc, &[typed], false), (typed.to_vec(), false));
    }

    #[test]
    fn cursor_keys_follow_the_programs_mode() {
        let arrows: &[u8] = b"\x1b[A\x1b[B\x1bOC\x1b[D\x1b[H\x1b[F";
        assert_eq!(
            keys(KillKey::Esc, &[arrows], false).0,
            b"\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F"
        );
        assert_eq!(
            keys(KillKey::Esc, &[arrows], true).0,
            b"\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF"
        );
        // Home and End in the encodings other terminals use.
        assert_eq!(
            keys(KillKey::Esc, &[b"\x1b[1~\x1b[4~\x1b[7~\x1b[8~"], true).0,
            b"\x1bOH\x1bOF\x1bOH\x1bOF"
        );
        // Split across reads, the sequence is still recognised.
        assert_eq!(
            keys(KillKey::Esc, &[b"a\x1b", b"[", b"Ab"], true).0,
            b"a\x1bOAb"
        );
    }

    #[test]
    fn a_lone_escape_is_the_kill_key_only_after_the_timeout() {
        let (out, killed) = keys(KillKey::Esc, &[b"ab\x1b"], false);
        assert_eq!((out.as_slice(), killed), (&b"ab"[..], true));

        let mut input = KeyInput::new(KillKey::Esc);
        let now = Instant::now();
        let mut out = Vec::new();
        assert!(!input.feed(b"\x1b", now, false, &mut out));
        assert_eq!(input.deadline(), Some(now + ESC_TIMEOUT));
        assert!(!input.expire(now + ESC_TIMEOUT / 2, false, &mut out));
        assert!(input.expire(now + ESC_TIMEOUT, false, &mut out));
        assert!(out.is_empty());

        // With another kill key, the lone Esc goes to the program.
        assert_eq!(
            keys(KillKey::CtrlRightBracket, &[b"\x1b"], false),
            (vec![ESC], false)
        );
    }

    #[test]
    fn control_kill_keys_act_at_once() {
        let (out, killed) = keys(KillKey::CtrlBackslash, &[b"ab\x1ccd"], false);
        assert_eq!((out.as_slice(), killed), (&b"ab"[..], true));
        let (out, killed) = keys(KillKey::CtrlC, &[b"x\x03"], false);
        assert_eq!((out.as_slice(), killed), (&b"x"[..], true));
        // Esc is the kill key, so ^C goes through.
        assert_eq!(keys(KillKey::Esc, &[b"\x03"], false), (vec![0x03], false));
    }
}
