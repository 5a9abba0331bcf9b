//! A job's output log, bounded: what the job printed, as raw bytes, in numbered
//! segment files of half the budget each. Segment `k` holds bytes
//! `[k*S, (k+1)*S)` of the whole output, so a cursor is an absolute byte offset and
//! a read from it is exact: the bytes it returns are the next ones the job printed,
//! none lost, none repeated — unless they were rotated out, which the read says. At
//! most two segments exist, so a job printing a gibibyte keeps `jobs.log_max_bytes`
//! on disk and a few kilobytes in memory.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The smallest segment: below this, rotation would run on every line.
const MIN_SEGMENT: u64 = 4096;

/// The segment size for a log budget.
pub fn segment_size(max_bytes: u64) -> u64 {
    (max_bytes / 2).max(MIN_SEGMENT)
}

fn segment_path(dir: &Path, k: u64) -> PathBuf {
    dir.join(format!("log.{k}"))
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
                if k >= 2 {
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

/// What a read from a cursor found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    /// The cursor to read from next.
    pub next: u64,
    /// Bytes before `bytes` that were rotated out of the log (0: none).
    pub dropped: u64,
    /// Bytes written so far in all.
    pub end: u64,
}

/// The segments present, lowest first.
fn segments(dir: &Path) -> Vec<u64> {
    let mut ks: Vec<u64> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("log.")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    ks.sort_unstable();
    ks
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
        let (Some(&first), Some(&last)) = (ks.first(), ks.last()) else {
            return Chunk::default();
        };
        let last_len = std::fs::symlink_metadata(segment_path(dir, last))
            .map(|m| m.len())
            .unwrap_or(0);
        let end = last * seg + last_len;
        let start = first * seg;
        let mut at = cursor.min(end);
        let dropped = start.saturating_sub(at);
        at = at.max(start);
        let want = ((end - at) as usize).min(max);
        let mut bytes = Vec::with_capacity(want);
        let mut stale = false;
        while bytes.len() < want {
            let k = at / seg;
            let mut f = match std::fs::File::open(segment_path(dir, k)) {
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
            dropped,
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

/// The last `lines` lines of what the log still holds (at most `max` bytes read).
pub fn tail(dir: &Path, max_bytes: u64, lines: usize, max: usize) -> Chunk {
    let end = read(dir, max_bytes, u64::MAX, 0).end;
    let mut c = read(dir, max_bytes, end.saturating_sub(max as u64), max);
    c.dropped = 0;
    let text = &c.bytes;
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let cut = body
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(lines.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1);
    c.bytes.drain(..cut);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_from_a_cursor_are_exact_across_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 2 * MIN_SEGMENT).unwrap();
        let mut all = Vec::new();
        let mut got = Vec::new();
        let mut cursor = 0;
        for i in 0..3000 {
            let line = format!("line {i}\n");
            w.append(line.as_bytes()).unwrap();
            all.extend_from_slice(line.as_bytes());
            if i % 7 == 0 {
                let c = read(dir.path(), 2 * MIN_SEGMENT, cursor, 100);
                assert_eq!(c.dropped, 0);
                got.extend_from_slice(&c.bytes);
                cursor = c.next;
            }
        }
        loop {
            let c = read(dir.path(), 2 * MIN_SEGMENT, cursor, 1 << 20);
            if c.bytes.is_empty() {
                break;
            }
            got.extend_from_slice(&c.bytes);
            cursor = c.next;
        }
        // Reads kept up: nothing was rotated out before it was read.
        assert_eq!(got, all);
        assert!(segments(dir.path()).len() <= 2);
    }

    #[test]
    fn a_reader_left_behind_is_told_how_much_it_lost() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 2 * MIN_SEGMENT).unwrap();
        w.append(&vec![b'x'; 5 * MIN_SEGMENT as usize + 10])
            .unwrap();
        let c = read(dir.path(), 2 * MIN_SEGMENT, 0, usize::MAX);
        assert_eq!(c.dropped, 4 * MIN_SEGMENT);
        assert_eq!(c.bytes.len() as u64, MIN_SEGMENT + 10);
        assert_eq!(c.end, 5 * MIN_SEGMENT + 10);
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
    }
}
