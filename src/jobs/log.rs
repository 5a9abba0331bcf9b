//! A job's output log, bounded, keeping its head and its tail: what the job printed,
//! as raw bytes, in numbered segment files under the job's `log/` directory. Segment
//! `k` (file `log/000000000k`) holds bytes `[k*S, (k+1)*S)` of the whole output, with
//! `S` a third of `jobs.log_max_bytes`. Segment 0, the head, is never removed; of the
//! later ones at most the last two are kept, the tail. So the log holds at most
//! `jobs.log_max_bytes`: the first `S` bytes the job printed and its last `S`..`2S`,
//! and what lies between is dropped.
//!
//! A cursor is an absolute byte offset of the whole output, so a read from it is
//! exact: the bytes it returns are the next ones the job printed, none lost, none
//! repeated — unless they were dropped, which the read says (`skipped`). A read never
//! spans a gap: it stops where the kept bytes stop, and the next one, from there,
//! skips to where they resume. `cat log/*` shows what is kept, in order.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The smallest segment: below this, rotation would run on every line. The smallest
/// `jobs.log_max_bytes` (8192) gives segments above it.
const MIN_SEGMENT: u64 = 1024;

/// The log's directory inside a job's directory.
pub const DIR: &str = "log";

/// The segment size for a log budget.
pub fn segment_size(max_bytes: u64) -> u64 {
    (max_bytes / 3).max(MIN_SEGMENT)
}

fn segment_path(dir: &Path, k: u64) -> PathBuf {
    dir.join(DIR).join(format!("{k:010}"))
}

/// The supervisor's end: appends, rotating.
pub struct LogWriter {
    dir: PathBuf,
    segment: u64,
    /// Bytes written in all (the offset the next byte gets).
    written: u64,
    file: std::fs::File,
}

impl LogWriter {
    pub fn create(dir: &Path, max_bytes: u64) -> std::io::Result<LogWriter> {
        crate::paths::private_dir(&dir.join(DIR)).map_err(std::io::Error::from)?;
        let file = open_segment(dir, 0)?;
        Ok(LogWriter {
            dir: dir.to_path_buf(),
            segment: segment_size(max_bytes),
            written: 0,
            file,
        })
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn append(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let room = self.segment - self.written % self.segment;
            let n = (room as usize).min(bytes.len());
            self.file.write_all(&bytes[..n])?;
            self.written += n as u64;
            bytes = &bytes[n..];
            if self.written.is_multiple_of(self.segment) {
                let k = self.written / self.segment;
                self.file = open_segment(&self.dir, k)?;
                // The head (0) stays; of the rest, the current and the one before.
                if k >= 3 {
                    let _ = std::fs::remove_file(segment_path(&self.dir, k - 2));
                }
            }
        }
        Ok(())
    }
}

fn open_segment(dir: &Path, k: u64) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(segment_path(dir, k))
}

fn open_for_reading(dir: &Path, k: u64) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(segment_path(dir, k))
}

/// What a read from a cursor found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    /// The cursor to read from next.
    pub next: u64,
    /// Bytes right before `bytes` that the log dropped (0: none): the read began at
    /// its cursor plus these.
    pub skipped: u64,
    /// Bytes written so far in all.
    pub end: u64,
}

/// The segments present, lowest first, each with its length.
fn segments(dir: &Path) -> Vec<(u64, u64)> {
    let mut ks: Vec<(u64, u64)> = std::fs::read_dir(dir.join(DIR))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let k = e.file_name().to_str()?.parse().ok()?;
                    // A link or a directory is nothing the supervisor wrote.
                    let meta = std::fs::symlink_metadata(e.path()).ok()?;
                    meta.is_file().then_some((k, meta.len()))
                })
                .collect()
        })
        .unwrap_or_default();
    ks.sort_unstable();
    ks
}

/// Bytes written so far to the log in `dir`.
pub fn end(dir: &Path, max_bytes: u64) -> u64 {
    let seg = segment_size(max_bytes);
    segments(dir)
        .last()
        .map_or(0, |&(k, len)| k.saturating_mul(seg).saturating_add(len))
}

/// Read up to `max` bytes from `cursor` of the log in `dir` whose budget is
/// `max_bytes`. A read never ends inside a UTF-8 sequence it could finish later
/// (the cursor stays before it), so text cut at chunk boundaries joins back exactly.
pub fn read(dir: &Path, max_bytes: u64, cursor: u64, max: usize) -> Chunk {
    let seg = segment_size(max_bytes);
    // The writer may rotate while we read: a segment gone between listing and
    // opening means the listing is stale; list again (bounded).
    for _ in 0..4 {
        let ks = segments(dir);
        let Some(&(last, last_len)) = ks.last() else {
            return Chunk {
                next: cursor,
                ..Chunk::default()
            };
        };
        let end = last.saturating_mul(seg).saturating_add(last_len);
        let mut at = cursor.min(end);
        // The first kept segment that ends past `at`: the read starts there.
        let Some(&(first, _)) = ks.iter().find(|(k, _)| (k + 1).saturating_mul(seg) > at) else {
            return Chunk {
                next: at,
                end,
                ..Chunk::default()
            };
        };
        let skipped = (first * seg).saturating_sub(at);
        at += skipped;
        let want = ((end - at) as usize).min(max);
        let mut bytes = Vec::with_capacity(want.min(1 << 20));
        let mut stale = false;
        while bytes.len() < want {
            let k = at / seg;
            if !ks.iter().any(|&(present, _)| present == k) {
                break; // a gap: the next read skips it
            }
            let mut f = match open_for_reading(dir, k) {
                Ok(f) => f,
                Err(_) => {
                    stale = true;
                    break;
                }
            };
            if f.seek(SeekFrom::Start(at % seg)).is_err() {
                stale = true;
                break;
            }
            let room = ((seg - at % seg) as usize).min(want - bytes.len());
            let before = bytes.len();
            if f.take(room as u64).read_to_end(&mut bytes).is_err() {
                stale = true;
                break;
            }
            let got = bytes.len() - before;
            if got == 0 {
                break;
            }
            at += got as u64;
        }
        if stale && bytes.is_empty() {
            continue;
        }
        let keep = complete_utf8(&bytes);
        at -= (bytes.len() - keep) as u64;
        bytes.truncate(keep);
        return Chunk {
            bytes,
            next: at,
            skipped,
            end,
        };
    }
    Chunk {
        next: cursor,
        ..Chunk::default()
    }
}

/// How much of `b` to keep so it does not end inside a UTF-8 sequence (an invalid
/// tail that can never become valid is kept: it is what the job printed).
fn complete_utf8(b: &[u8]) -> usize {
    for back in 1..=3.min(b.len()) {
        let c = b[b.len() - back];
        if c & 0xC0 == 0x80 {
            continue;
        }
        let need = match c {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return b.len(),
        };
        return if need > back && back < b.len() {
            b.len() - back
        } else {
            b.len()
        };
    }
    b.len()
}

/// Where the kept bytes that reach the end of the log begin (the tail, or the head
/// while nothing was dropped).
fn last_run_start(ks: &[(u64, u64)], seg: u64) -> u64 {
    let Some(&(mut k, _)) = ks.last() else {
        return 0;
    };
    while k > 0 && ks.iter().any(|&(present, _)| present == k - 1) {
        k -= 1;
    }
    k * seg
}

/// The last `lines` lines of what the log still holds (at most `max` bytes read),
/// never reaching back across dropped bytes; `skipped` is how many were dropped right
/// before them when they begin where the kept tail begins.
pub fn tail(dir: &Path, max_bytes: u64, lines: usize, max: usize) -> Chunk {
    let seg = segment_size(max_bytes);
    let ks = segments(dir);
    let end = ks
        .last()
        .map_or(0, |&(k, len)| k.saturating_mul(seg).saturating_add(len));
    let run = last_run_start(&ks, seg);
    let from = end.saturating_sub(max as u64).max(run);
    let mut c = read(dir, max_bytes, from, max);
    let gap_before = if from == run && run > 0 {
        // What is kept before the tail: the head, whole.
        run - seg.min(run)
    } else {
        0
    };
    let text = &c.bytes;
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let cut = body
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(lines.saturating_sub(1))
        .map(|(i, _)| i + 1)
        // Read from the middle of the log: the first line is a part of one.
        .or_else(|| (from > run).then(|| memchr::memchr(b'\n', body).map_or(0, |i| i + 1)))
        .unwrap_or(0);
    c.bytes.drain(..cut);
    c.skipped = if cut == 0 { gap_before } else { 0 };
    c
}

/// The line shown where a log dropped `skipped` bytes (never part of `output`: the
/// text a reader is shown, and the CLI's stderr, carry it).
pub fn marker(skipped: u64) -> String {
    format!(
        "[… {skipped} bytes dropped here: the log keeps the head and the tail of a job's output (jobs.log_max_bytes) …]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read everything from `cursor` on, chunk by chunk, as a caller would.
    fn read_all(dir: &Path, max_bytes: u64, mut cursor: u64, step: usize) -> (Vec<u8>, u64) {
        let mut got = Vec::new();
        let mut skipped = 0;
        loop {
            let c = read(dir, max_bytes, cursor, step);
            skipped += c.skipped;
            if c.bytes.is_empty() && c.skipped == 0 {
                return (got, skipped);
            }
            got.extend_from_slice(&c.bytes);
            cursor = c.next;
        }
    }

    #[test]
    fn reads_from_a_cursor_are_exact_across_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let max = 3 * MIN_SEGMENT;
        let mut w = LogWriter::create(dir.path(), max).unwrap();
        let mut all = Vec::new();
        let mut got = Vec::new();
        let mut cursor = 0;
        for i in 0..3000 {
            let line = format!("line {i}\n");
            w.append(line.as_bytes()).unwrap();
            all.extend_from_slice(line.as_bytes());
            if i % 7 == 0 {
                let c = read(dir.path(), max, cursor, 100);
                assert_eq!(c.skipped, 0);
                got.extend_from_slice(&c.bytes);
                cursor = c.next;
            }
        }
        let (rest, skipped) = read_all(dir.path(), max, cursor, 1 << 20);
        got.extend_from_slice(&rest);
        // Reads kept up: nothing was dropped before it was read.
        assert_eq!(skipped, 0);
        assert_eq!(got, all);
        assert!(segments(dir.path()).len() <= 3);
    }

    #[test]
    fn the_head_and_the_tail_are_kept_and_a_reader_is_told_what_was_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let max = 3 * MIN_SEGMENT;
        let mut w = LogWriter::create(dir.path(), max).unwrap();
        let all: Vec<u8> = (0..5000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        w.append(&all).unwrap();
        let kept: u64 = segments(dir.path()).iter().map(|(_, len)| len).sum();
        assert!(kept <= max, "{kept} bytes kept");
        let (got, skipped) = read_all(dir.path(), max, 0, 100);
        let seg = MIN_SEGMENT as usize;
        assert_eq!(&got[..seg], &all[..seg], "the head");
        let kept_tail = got.len() - seg;
        let from = all.len() - kept_tail;
        assert_eq!(&got[seg..], &all[from..], "the tail");
        assert_eq!(got.len() as u64 + skipped, all.len() as u64);
        // A read from inside the dropped middle starts at the tail, saying so.
        let c = read(dir.path(), max, seg as u64 + 1, 10);
        assert_eq!(c.skipped, (from - seg - 1) as u64);
        assert_eq!(c.bytes, &all[from..from + 10]);
        // The tail never reaches back into the head.
        let t = tail(dir.path(), max, 1_000_000, 1 << 20);
        assert_eq!(t.bytes.len(), kept_tail);
        assert_eq!(t.skipped, (from - seg) as u64);
        assert_eq!(end(dir.path(), max), all.len() as u64);
    }

    #[test]
    fn a_read_does_not_split_a_character() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 1 << 20).unwrap();
        w.append("aé".as_bytes()).unwrap();
        let c = read(dir.path(), 1 << 20, 0, 2);
        assert_eq!(c.bytes, b"a");
        assert_eq!(c.next, 1);
        let c = read(dir.path(), 1 << 20, 1, 2);
        assert_eq!(c.bytes, "é".as_bytes());
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 1 << 20).unwrap();
        w.append(b"1\n2\n3\n4\n").unwrap();
        assert_eq!(tail(dir.path(), 1 << 20, 2, 1 << 16).bytes, b"3\n4\n");
        assert_eq!(tail(dir.path(), 1 << 20, 9, 1 << 16).bytes, b"1\n2\n3\n4\n");
        assert_eq!(tail(dir.path(), 1 << 20, 9, 1 << 16).skipped, 0);
    }
}
