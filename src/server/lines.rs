//! The bounded line reader: NDJSON lines read on a thread of their own, none held in
//! memory past [`MAX_LINE`] bytes. The rpc server reads its requests with it, and a
//! remote target's client (`crate::remote`) reads the transport's answers with it, so
//! neither a client nor a misbehaving transport can make agentbash buffer without end.

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
    let mut line = Vec::new();
    let mut too_long = 0usize;
    let mut head = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => &[],
        };
        if buf.is_empty() {
            return if too_long > 0 {
                Some(Input::TooLong(too_long, head))
            } else if line.is_empty() {
                None
            } else {
                Some(Input::Line(line))
            };
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(p) => (&buf[..p], Some(p + 1)),
            None => (buf, None),
        };
        if too_long > 0 || line.len() + chunk.len() > max {
            if too_long == 0 {
                too_long = line.len();
                head = std::mem::take(&mut line);
                let more = HEAD.saturating_sub(head.len()).min(chunk.len());
                head.extend_from_slice(&chunk[..more]);
                head.truncate(HEAD);
            }
            too_long += chunk.len();
        } else {
            line.extend_from_slice(chunk);
        }
        let consumed = done.unwrap_or(buf.len());
        r.consume(consumed);
        if done.is_some() {
            return Some(if too_long > 0 {
                Input::TooLong(too_long, head)
            } else {
                Input::Line(line)
            });
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
