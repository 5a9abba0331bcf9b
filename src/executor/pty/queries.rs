//! Terminal queries: programs ask their terminal where the cursor is, what it is and
//! whether it is well, and block until it answers. This room finds those queries in
//! the output stream (across read boundaries) and keeps the cheap cursor model that
//! answers the position query when no viewport holds the screen (headless runs).

use std::io::Write as _;

use super::ESC;

/// A query a program sends to its terminal and waits for an answer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Query {
    /// `ESC[6n` → `ESC[row;colR`
    CursorPosition,
    /// `ESC[c` / `ESC[0c` → `ESC[?1;2c` (a VT100 with advanced video)
    DeviceAttributes,
    /// `ESC[5n` → `ESC[0n` (terminal OK)
    DeviceStatus,
}

impl Query {
    /// Appends the answer to `out`; `cursor` is the zero-based (row, col) the
    /// screen has at the query.
    pub(super) fn answer(self, cursor: (u16, u16), out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = match self {
            Query::CursorPosition => write!(out, "\x1b[{};{}R", cursor.0 + 1, cursor.1 + 1),
            Query::DeviceAttributes => out.write_all(b"\x1b[?1;2c"),
            Query::DeviceStatus => out.write_all(b"\x1b[0n"),
        };
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ScanState {
    #[default]
    Ground,
    Escape,
    Csi,
}

/// Finds queries in the output stream, across read boundaries, without
/// looking at bytes one by one when a chunk has no ESC at all.
#[derive(Default)]
pub(super) struct QueryScanner {
    state: ScanState,
    params: [u8; 8],
    len: usize,
    overflow: bool,
}

impl QueryScanner {
    /// Appends `(offset just past the query, query)` for each query in `chunk`.
    pub(super) fn scan(&mut self, chunk: &[u8], hits: &mut Vec<(usize, Query)>) {
        let mut i = 0;
        while i < chunk.len() {
            match self.state {
                ScanState::Ground => {
                    // `contains` on bytes is memchr: fast even in debug builds.
                    if !chunk[i..].contains(&ESC) {
                        return;
                    }
                    match chunk[i..].iter().position(|&b| b == ESC) {
                        Some(offset) => {
                            i += offset + 1;
                            self.state = ScanState::Escape;
                        }
                        None => return,
                    }
                }
                ScanState::Escape => {
                    let byte = chunk[i];
                    i += 1;
                    if byte == b'[' {
                        self.state = ScanState::Csi;
                        self.len = 0;
                        self.overflow = false;
                    } else if byte != ESC {
                        self.state = ScanState::Ground;
                    }
                }
                ScanState::Csi => {
                    let byte = chunk[i];
                    i += 1;
                    match byte {
                        0x20..=0x3f => {
                            if self.len < self.params.len() {
                                self.params[self.len] = byte;
                                self.len += 1;
                            } else {
                                self.overflow = true;
                            }
                        }
                        0x40..=0x7e => {
                            if !self.overflow
                                && let Some(query) = classify(&self.params[..self.len], byte)
                            {
                                hits.push((i, query));
                            }
                            self.state = ScanState::Ground;
                        }
                        ESC => self.state = ScanState::Escape,
                        // CAN and SUB abort a sequence.
                        0x18 | 0x1a => self.state = ScanState::Ground,
                        // Other controls are executed inside a sequence; skip them.
                        _ => {}
                    }
                }
            }
        }
    }
}

fn classify(params: &[u8], final_byte: u8) -> Option<Query> {
    match (params, final_byte) {
        (b"6", b'n') => Some(Query::CursorPosition),
        (b"5", b'n') => Some(Query::DeviceStatus),
        (b"" | b"0", b'c') => Some(Query::DeviceAttributes),
        _ => None,
    }
}

/// Headless cursor model, just good enough for cursor position reports.
///
/// A full vt100 parser costs more than the PTY itself on bulk output, so
/// headless runs keep only the current line's tail and a clamped line count.
/// Cursor addressing and erasing sequences are not modelled.
pub(super) struct CursorEstimate {
    rows: u16,
    cols: u16,
    row: u16,
    tail: Vec<u8>,
}

/// Longest line tail kept; beyond it the column estimate gives up precision.
const TAIL_LIMIT: usize = 4096;

impl CursorEstimate {
    pub(super) fn new(rows: u16, cols: u16) -> Self {
        Self {
            rows: rows.max(1),
            cols: cols.max(1),
            row: 0,
            tail: Vec::new(),
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) {
        if self.row + 1 < self.rows {
            // Once at the bottom row, newlines scroll and counting can stop.
            let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
            let row = usize::from(self.row) + newlines;
            self.row = u16::try_from(row).unwrap_or(u16::MAX).min(self.rows - 1);
        }
        match bytes.iter().rposition(|&b| b == b'\n' || b == b'\r') {
            Some(last) => {
                self.tail.clear();
                self.tail.extend_from_slice(&bytes[last + 1..]);
            }
            None => self.tail.extend_from_slice(bytes),
        }
        if self.tail.len() > TAIL_LIMIT {
            let excess = self.tail.len() - TAIL_LIMIT;
            self.tail.drain(..excess);
        }
    }

    /// Zero-based (row, col).
    pub(super) fn position(&self) -> (u16, u16) {
        let mut col = 0usize;
        let mut i = 0;
        let tail = &self.tail;
        while i < tail.len() {
            let byte = tail[i];
            i += 1;
            match byte {
                ESC => i = skip_escape(tail, i),
                0x08 => col = col.saturating_sub(1),
                b'\t' => col = (col / 8 + 1) * 8,
                // Other controls and UTF-8 continuation bytes take no cell.
                0x00..=0x1f | 0x7f | 0x80..=0xbf => {}
                _ => col += 1,
            }
        }
        let cols = usize::from(self.cols);
        // A full line leaves the cursor on its last cell until the next character.
        let (wraps, col) = if col == 0 {
            (0, 0)
        } else {
            ((col - 1) / cols, (col - 1) % cols + 1)
        };
        let row = (usize::from(self.row) + wraps).min(usize::from(self.rows - 1));
        let col = col.min(cols - 1);
        (
            u16::try_from(row).unwrap_or(u16::MAX),
            u16::try_from(col).unwrap_or(u16::MAX),
        )
    }
}

/// Returns the index just past the escape sequence whose ESC is at `i - 1`.
fn skip_escape(bytes: &[u8], mut i: usize) -> usize {
    match bytes.get(i) {
        Some(b'[') => {
            i += 1;
            while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                i += 1;
            }
            i + 1
        }
        Some(b']') => {
            // OSC ends with BEL or ST (ESC \).
            while i < bytes.len() && bytes[i] != 0x07 && bytes[i] != ESC {
                i += 1;
            }
            if bytes.get(i) == Some(&ESC) {
                i + 2
            } else {
                i + 1
            }
        }
        Some(_) => i + 1,
        None => i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_in_two(input: &[u8], split: usize) -> Vec<(usize, Query)> {
        let mut scanner = QueryScanner::default();
        let mut hits = Vec::new();
        scanner.scan(&input[..split], &mut hits);
        let mut second = Vec::new();
        scanner.scan(&input[split..], &mut second);
        hits.extend(second.into_iter().map(|(end, q)| (end + split, q)));
        hits
    }

    #[test]
    fn queries_are_answered_as_a_vt100_would() {
        let answer = |query: Query, cursor| {
            let mut out = Vec::new();
            query.answer(cursor, &mut out);
            String::from_utf8(out).expect("ASCII")
        };
        assert_eq!(answer(Query::CursorPosition, (0, 0)), "\x1b[1;1R");
        assert_eq!(answer(Query::CursorPosition, (23, 79)), "\x1b[24;80R");
        assert_eq!(answer(Query::DeviceAttributes, (5, 5)), "\x1b[?1;2c");
        assert_eq!(answer(Query::DeviceStatus, (5, 5)), "\x1b[0n");
    }

    #[test]
    fn queries_are_found_wherever_reads_split_them() {
        let input = b"ab\x1b[6nxy\x1b[c\x1b[0c\x1b[5n\x1b[?6n\x1b[16n\x1b[1;2H\x1b\x1b[6n";
        let expected = vec![
            (6, Query::CursorPosition),
            (11, Query::DeviceAttributes),
            (15, Query::DeviceAttributes),
            (19, Query::DeviceStatus),
            (40, Query::CursorPosition),
        ];
        for split in 0..=input.len() {
            assert_eq!(scan_in_two(input, split), expected, "split at {split}");
        }
    }

    fn estimate(rows: u16, cols: u16, chunks: &[&[u8]]) -> (u16, u16) {
        let mut estimate = CursorEstimate::new(rows, cols);
        for chunk in chunks {
            estimate.feed(chunk);
        }
        estimate.position()
    }

    #[test]
    fn headless_cursor_estimate() {
        assert_eq!(estimate(40, 120, &[b""]), (0, 0));
        assert_eq!(estimate(40, 120, &[b"abc"]), (0, 3));
        assert_eq!(estimate(40, 120, &[b"one\r\ntw", b"o"]), (1, 3));
        assert_eq!(estimate(40, 120, &[b"progress 10%\rprogress 20"]), (0, 11));
        assert_eq!(estimate(40, 120, &["héllo\t".as_bytes()]), (0, 8));
        assert_eq!(
            estimate(40, 120, &[b"\x1b[1;31mred\x1b[0m\x1b]0;title\x07!"]),
            (0, 4)
        );
        assert_eq!(estimate(3, 120, &[b"1\r\n2\r\n3\r\n4\r\n5"]), (2, 1));
        assert_eq!(estimate(40, 10, &[b"0123456789abc"]), (1, 3));
        // A full line keeps the cursor on its last cell.
        assert_eq!(estimate(40, 10, &[b"0123456789"]), (0, 9));
    }
}
