//! A live shell's output stream read: the end marker of one command found in it, the
//! rest passed to the sink.

use crate::executor::{Read, read_some};
use crate::output::sink::OutputSink;
use std::os::fd::BorrowedFd;

/// How a command's end was marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Marker {
    /// `s`, `x` or `c` (see [`shell_program`](super::shell::shell_program)).
    pub(super) kind: u8,
    pub(super) status: Option<i32>,
    /// The subshell that ran the command (non-session shells).
    pub(super) pid: Option<i32>,
}

/// Finds command `seq`'s end marker in the output stream. Everything else goes to
/// the sink, except markers of earlier commands (dropped) and any bytes that may yet
/// turn out to start a marker (held back).
pub(super) struct Scanner {
    prefix: Vec<u8>,
    seq: u64,
    carry: Vec<u8>,
    pub(super) found: Option<Marker>,
    /// The shell reported that command `seq`'s subshell has exited (marker `c`).
    pub(super) subshell_done: bool,
}

impl Scanner {
    pub(super) fn new(token: &str, seq: u64) -> Self {
        let mut prefix = vec![0x1e];
        prefix.extend_from_slice(token.as_bytes());
        Scanner {
            prefix,
            seq,
            carry: Vec::new(),
            found: None,
            subshell_done: false,
        }
    }

    pub(super) fn feed(&mut self, data: &[u8], sink: &mut OutputSink) {
        self.carry.extend_from_slice(data);
        while let Some(i) = memchr::memmem::find(&self.carry, &self.prefix) {
            if i > 0 {
                sink.push(&self.carry[..i]);
                self.carry.drain(..i);
            }
            let rest = &self.carry[self.prefix.len()..];
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                return; // the rest of the marker is still on its way
            };
            let line = String::from_utf8_lossy(&rest[..nl]).into_owned();
            self.carry.drain(..self.prefix.len() + nl + 1);
            let Some(kind) = line.bytes().next() else {
                continue;
            };
            let mut words = line[1..].split(' ');
            let seq: Option<u64> = words.next().and_then(|w| w.parse().ok());
            // Other markers (a subshell reporting its exit) are never output.
            if seq == Some(self.seq) && kind == b'c' {
                self.subshell_done = true;
            }
            if seq == Some(self.seq) && self.found.is_none() {
                self.found = Some(Marker {
                    kind,
                    status: words.next().and_then(|w| w.parse().ok()),
                    pid: words.next().and_then(|w| w.parse().ok()),
                });
            }
        }
        let keep = (1..self.prefix.len())
            .rev()
            .find(|&k| self.carry.ends_with(&self.prefix[..k]))
            .unwrap_or(0);
        let cut = self.carry.len() - keep;
        if cut > 0 {
            sink.push(&self.carry[..cut]);
            self.carry.drain(..cut);
        }
    }

    /// No marker is coming: pass on what was held back.
    pub(super) fn flush(&mut self, sink: &mut OutputSink) {
        if !self.carry.is_empty() {
            sink.push(&self.carry);
            self.carry.clear();
        }
    }
}

/// Read what is available into `f`. Returns (bytes, eof).
pub(super) fn read_available(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    budget: usize,
    mut f: impl FnMut(&[u8]),
) -> (usize, bool) {
    let mut total = 0;
    while total < budget {
        match read_some(fd, buf) {
            Read::Bytes(n) => {
                f(&buf[..n]);
                total += n;
            }
            Read::Empty => return (total, false),
            Read::End => return (total, true),
        }
    }
    (total, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sink::SinkConfig;

    fn sink() -> OutputSink {
        OutputSink::new(
            SinkConfig {
                max_bytes: 1 << 20,
                ..Default::default()
            },
            None,
            false,
        )
    }

    #[test]
    fn marker_split_across_reads() {
        let mut s = sink();
        let mut sc = Scanner::new("abc", 2);
        sc.feed(b"hello\x1ea", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"bcs2 4", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"2 77\nlate", &mut s);
        assert_eq!(
            sc.found,
            Some(Marker {
                kind: b's',
                status: Some(42),
                pid: Some(77)
            })
        );
        assert_eq!(s.finish().text, "hellolate");
    }

    #[test]
    fn earlier_markers_and_lookalikes_are_not_the_end() {
        let mut s = sink();
        let mut sc = Scanner::new("abc", 3);
        sc.feed(b"\x1eabcc2 0\nx\x1eab!", &mut s);
        assert!(sc.found.is_none());
        sc.feed(b"\x1eabcx3 3\n", &mut s);
        assert_eq!(sc.found.map(|m| (m.kind, m.status)), Some((b'x', Some(3))));
        // The lookalike's control byte is sanitized away; its text is output.
        assert_eq!(s.finish().text, "xab!");
    }
}
