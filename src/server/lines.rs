//! The bounded line reader: NDJSON lines read on a thread of their own, none held in
//! memory past [`MAX_LINE`] bytes. The rpc server reads its requests with it, and a
//! remote target's client (`crate::remote`) reads the transport's answers with it, and
//! the MCP server's stdio filter builds its lines with [`LineBuilder`], so neither a
//! client nor a misbehaving transport can make agentbash buffer without end.

use std::io::{BufRead, Read};
use std::sync::mpsc;

/// Longest line accepted; a longer one is reported as [`Input::TooLong`] and skipped.
pub const MAX_LINE: usize = 16 << 20;

/// How much of a skipped line is kept.
pub const HEAD: usize = 256;

/// What the reader thread hands over, in order.
#[derive(Debug)]
pub enum Input {
    /// One line, without its `\n`.
    Line(Vec<u8>),
    /// A line longer than the limit was skipped: its length in bytes, and its first
    /// [`HEAD`] bytes (where a reader may find what it was about, such as its `id`).
    TooLong(usize, Vec<u8>),
    /// End of input (or a read error): nothing follows.
    Eof,
}

/// Read `source` line by line on a new thread. The thread ends at EOF (after sending
/// [`Input::Eof`]) or when the receiver is dropped.
pub fn spawn_reader<R: Read + Send + 'static>(source: R, max: usize) -> mpsc::Receiver<Input> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = std::io::BufReader::with_capacity(64 << 10, source);
        loop {
            let msg = match read_line(&mut r, max) {
                Some(m) => m,
                None => {
                    let _ = tx.send(Input::Eof);
                    return;
                }
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
    });
    rx
}

/// The next line, or `None` at EOF with nothing pending. A last line without its
/// `\n` is still a line.
fn read_line(r: &mut impl BufRead, max: usize) -> Option<Input> {
    let mut lines = LineBuilder::new(max);
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => &[],
        };
        if buf.is_empty() {
            return lines.finish();
        }
        let (used, line) = lines.feed(buf);
        r.consume(used);
        if line.is_some() {
            return line;
        }
    }
}

/// The part of reading lines that does not read: bytes in, whole lines out, nothing
/// held past the limit. The blocking reader above and the MCP server's asynchronous
/// filter (`server::mcp_stdio`) both build their lines with it.
#[derive(Debug)]
pub struct LineBuilder {
    max: usize,
    line: Vec<u8>,
    /// Bytes of the current line seen so far, once it is known to be too long.
    too_long: usize,
    head: Vec<u8>,
}

impl LineBuilder {
    pub fn new(max: usize) -> LineBuilder {
        LineBuilder {
            max,
            line: Vec::new(),
            too_long: 0,
            head: Vec::new(),
        }
    }

    /// Take what `buf` holds of the current line: how many bytes of it were used (up
    /// to and with the first `\n`), and the line when that `\n` ended it.
    pub fn feed(&mut self, buf: &[u8]) -> (usize, Option<Input>) {
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(p) => (&buf[..p], true),
            None => (buf, false),
        };
        if self.too_long > 0 || self.line.len() + chunk.len() > self.max {
            if self.too_long == 0 {
                self.too_long = self.line.len();
                self.head = std::mem::take(&mut self.line);
                let more = HEAD.saturating_sub(self.head.len()).min(chunk.len());
                self.head.extend_from_slice(&chunk[..more]);
                self.head.truncate(HEAD);
            }
            self.too_long += chunk.len();
        } else {
            self.line.extend_from_slice(chunk);
        }
        let used = chunk.len() + usize::from(done);
        (used, done.then(|| self.take()))
    }

    /// At the end of the input: the last line when it had no `\n`.
    pub fn finish(&mut self) -> Option<Input> {
        (self.too_long > 0 || !self.line.is_empty()).then(|| self.take())
    }

    fn take(&mut self) -> Input {
        if self.too_long > 0 {
            let n = std::mem::take(&mut self.too_long);
            Input::TooLong(n, std::mem::take(&mut self.head))
        } else {
            Input::Line(std::mem::take(&mut self.line))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<String> {
        let rx = spawn_reader(std::io::Cursor::new(input.to_vec()), max);
        let mut got = Vec::new();
        while let Ok(m) = rx.recv() {
            got.push(match m {
                Input::Line(l) => String::from_utf8_lossy(&l).into_owned(),
                Input::TooLong(n, head) => format!("<{n} {}>", String::from_utf8_lossy(&head)),
                Input::Eof => "EOF".into(),
            });
        }
        got
    }

    #[test]
    fn lines_long_lines_and_a_last_line_without_newline() {
        assert_eq!(all(b"a\nbb\n", 4), ["a", "bb", "EOF"]);
        assert_eq!(all(b"a\n123456\nc", 4), ["a", "<6 123456>", "c", "EOF"]);
        assert_eq!(all(b"123456", 4), ["<6 123456>", "EOF"]);
        assert_eq!(all(b"", 4), ["EOF"]);
    }
}
