//! §5.1 Sanitizing: turn whatever bytes a command writes into clean, valid UTF-8 text.
//!
//! A streaming state machine, because commands write in arbitrary chunks: an escape
//! sequence, a UTF-8 character or a CRLF pair may be split across two reads and must
//! come out exactly as if it had arrived in one. CR (alone or in CRLF) becomes LF, so
//! progress redraws become lines; escape sequences and C0/C1 controls other than tab
//! and newline are removed; invalid UTF-8 becomes U+FFFD. The artifact keeps the raw
//! bytes; this is only what people and programs are shown.

/// Control strings (OSC, DCS, ...) longer than this are abandoned, so an
/// unterminated one cannot swallow the rest of the output.
const MAX_STRING_SEQ: usize = 64 * 1024;
/// CSI and other short sequences longer than this are abandoned.
const MAX_SHORT_SEQ: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Ground,
    Esc,
    EscIntermediate,
    Csi,
    /// OSC / DCS / SOS / PM / APC body, ended by BEL or ESC \.
    Str,
    /// ESC seen inside a control string.
    StrEsc,
}

#[derive(Debug, Default, Clone)]
pub struct Sanitizer {
    state: State,
    seq_len: usize,
    pending_cr: bool,
    carry: [u8; 4],
    carry_len: usize,
}

#[inline]
fn is_plain(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t' || b >= 0x80
}

impl Sanitizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sanitize `input`, appending the clean text to `out`.
    pub fn push(&mut self, input: &[u8], out: &mut String) {
        let mut i = 0;
        let len = input.len();
        while i < len {
            match self.state {
                State::Ground => {
                    let start = i;
                    i = plain_run_end(input, i);
                    if start < i {
                        self.text(&input[start..i], i == len, out);
                    }
                    if i < len {
                        let b = input[i];
                        i += 1;
                        self.flush_carry(out);
                        match b {
                            0x1b => {
                                self.state = State::Esc;
                                self.seq_len = 0;
                            }
                            // CR CR LF (a PTY's ONLCR after a CRLF) is still one line
                            // break: repeated CRs return to the same column.
                            b'\r' => self.pending_cr = true,
                            _ => {} // other C0 controls and DEL: dropped
                        }
                    }
                }
                State::Esc => {
                    let b = input[i];
                    match b {
                        b'[' => self.state = State::Csi,
                        b']' | b'P' | b'X' | b'^' | b'_' => self.state = State::Str,
                        0x20..=0x2f => self.state = State::EscIntermediate,
                        0x1b => {}
                        0x30..=0x7e => self.state = State::Ground,
                        // A control or non-ASCII byte cannot continue the sequence:
                        // abandon it and let Ground handle the byte.
                        _ => {
                            self.state = State::Ground;
                            continue;
                        }
                    }
                    i += 1;
                }
                State::EscIntermediate | State::Csi => {
                    let b = input[i];
                    self.seq_len += 1;
                    let csi = self.state == State::Csi;
                    match b {
                        0x20..=0x2f => {}
                        0x30..=0x3f if csi => {}
                        0x30..=0x7e => self.state = State::Ground,
                        0x1b => {
                            self.state = State::Esc;
                            self.seq_len = 0;
                        }
                        _ => {
                            self.state = State::Ground;
                            continue;
                        }
                    }
                    if self.seq_len > MAX_SHORT_SEQ {
                        self.state = State::Ground;
                    }
                    i += 1;
                }
                State::Str => {
                    // Skip the body quickly: only BEL and ESC matter. Never look past
                    // the length limit, so the string is abandoned at the same byte
                    // however the stream was cut into reads.
                    let room = MAX_STRING_SEQ.saturating_sub(self.seq_len);
                    let rest = &input[i..len.min(i + room)];
                    match rest.iter().position(|&b| b == 0x07 || b == 0x1b) {
                        Some(p) => {
                            self.seq_len += p;
                            i += p + 1;
                            self.state = if rest[p] == 0x07 {
                                State::Ground
                            } else {
                                State::StrEsc
                            };
                        }
                        None => {
                            self.seq_len += rest.len();
                            i += rest.len();
                            if self.seq_len >= MAX_STRING_SEQ {
                                self.state = State::Ground;
                            }
                        }
                    }
                }
                State::StrEsc => {
                    if input[i] == b'\\' {
                        self.state = State::Ground;
                        i += 1;
                    } else {
                        self.state = State::Esc;
                        self.seq_len = 0;
                    }
                }
            }
        }
    }

    /// End of stream: an incomplete character becomes U+FFFD, a trailing CR a newline.
    pub fn finish(&mut self, out: &mut String) {
        self.flush_carry(out);
        if self.pending_cr {
            out.push('\n');
            self.pending_cr = false;
        }
        self.state = State::Ground;
    }

    fn flush_carry(&mut self, out: &mut String) {
        if self.carry_len > 0 {
            self.resolve_cr(false, out);
            out.push('\u{FFFD}');
            self.carry_len = 0;
        }
    }

    /// A pending CR becomes a newline unless the next thing is the LF of a CRLF.
    /// Returns true when it consumed that LF.
    #[inline]
    fn resolve_cr(&mut self, next_is_lf: bool, out: &mut String) -> bool {
        if self.pending_cr {
            self.pending_cr = false;
            out.push('\n');
            return next_is_lf;
        }
        false
    }

    /// A run of plain bytes (printable ASCII, tab, LF, or >= 0x80).
    fn text(&mut self, mut run: &[u8], at_input_end: bool, out: &mut String) {
        if self.resolve_cr(run[0] == b'\n', out) {
            run = &run[1..];
        }
        if self.carry_len > 0 {
            // The carry is the valid start of a character cut by the previous read.
            // Complete it with what this read brings and judge it exactly as
            // `from_utf8` would have judged the bytes in one piece (which
            // continuation bytes a lead accepts depends on the lead: F4 takes 80-8F).
            let c = self.carry_len;
            let take = run.len().min(utf8_len(self.carry[0]) - c);
            let mut buf = [0u8; 4];
            buf[..c].copy_from_slice(&self.carry[..c]);
            buf[c..c + take].copy_from_slice(&run[..take]);
            self.carry_len = 0;
            match std::str::from_utf8(&buf[..c + take]) {
                Ok(s) => {
                    push_visible(s, out);
                    run = &run[take..];
                }
                Err(e) => match e.error_len() {
                    // Still a valid beginning, and this read is used up: wait.
                    None if at_input_end => {
                        self.carry = buf;
                        self.carry_len = c + take;
                        return;
                    }
                    // Cut short by a control byte or the end of the stream.
                    None => {
                        out.push('\u{FFFD}');
                        run = &run[take..];
                    }
                    // The character cannot be completed: one U+FFFD for its
                    // valid beginning (the carry and perhaps some of this read),
                    // and what follows is looked at afresh.
                    Some(n) => {
                        out.push('\u{FFFD}');
                        run = &run[n.saturating_sub(c)..];
                    }
                },
            }
        }
        loop {
            match std::str::from_utf8(run) {
                Ok(s) => {
                    push_visible(s, out);
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // SAFETY-free: the prefix was just validated.
                    push_visible(std::str::from_utf8(&run[..valid]).unwrap_or_default(), out);
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{FFFD}');
                            run = &run[valid + n..];
                        }
                        None => {
                            let tail = &run[valid..];
                            if at_input_end && tail.len() < 4 {
                                self.carry[..tail.len()].copy_from_slice(tail);
                                self.carry_len = tail.len();
                            } else {
                                out.push('\u{FFFD}');
                            }
                            return;
                        }
                    }
                }
            }
        }
    }
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0xf0..=0xf7 => 4,
        0xe0..=0xef => 3,
        _ => 2,
    }
}

/// Append valid text, minus C1 controls (U+0080..U+009F, encoded C2 80..C2 9F).
#[inline]
fn push_visible(s: &str, out: &mut String) {
    if !s.as_bytes().contains(&0xc2) {
        out.push_str(s);
        return;
    }
    out.extend(s.chars().filter(|c| !('\u{80}'..='\u{9f}').contains(c)));
}

/// End of the run of plain bytes starting at `i`. Eight bytes at a time: a word
/// with no byte below 0x20 and no DEL is all plain; only words that contain one
/// (usually a newline) are looked at byte by byte.
#[inline]
fn plain_run_end(input: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let len = input.len();
    while i + 8 <= len {
        let mut w = [0u8; 8];
        w.copy_from_slice(&input[i..i + 8]);
        let x = u64::from_le_bytes(w);
        let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let y = x ^ (ONES * 0x7f);
        let del = y.wrapping_sub(ONES) & !y & HIGH;
        if below_space | del == 0 {
            i += 8;
            continue;
        }
        for k in 0..8 {
            if !is_plain(input[i + k]) {
                return i + k;
            }
        }
        i += 8;
    }
    while i < len && is_plain(input[i]) {
        i += 1;
    }
    i
}

/// Sanitize a complete byte string in one go.
pub fn sanitize(input: &[u8]) -> String {
    let mut s = Sanitizer::new();
    let mut out = String::with_capacity(input.len());
    s.push(input, &mut out);
    s.finish(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&[u8], &str)] = &[
            (b"hello\n", "hello\n"),
            (b"a\r\nb\r\n", "a\nb\n"),
            (b"10%\r20%\r30%\n", "10%\n20%\n30%\n"),
            (b"\x1b[31mred\x1b[0m\n", "red\n"),
            (b"\x1b]0;title\x07text", "text"),
            (b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
            (b"\x1b(Bx", "x"),
            (b"a\x00b\x07c\x08d\x7fe", "abcde"),
            (b"tab\there", "tab\there"),
            (b"bad \xff byte", "bad \u{FFFD} byte"),
            (b"trunc \xe2\x82", "trunc \u{FFFD}"),
            ("c1 \u{85}x".as_bytes(), "c1 x"),
            ("snow \u{2603}".as_bytes(), "snow \u{2603}"),
            (b"end\r", "end\n"),
            (b"\r\x1b[2Kprogress\r\x1b[2Kdone\n", "\nprogress\ndone\n"),
        ];
        for (input, want) in cases {
            assert_eq!(
                sanitize(input),
                *want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    /// Found by fuzz/fuzz_targets/sink.rs: F4 accepts only 80-8F after it, so
    /// `F4 B7` is two errors whether or not a read ends between them.
    #[test]
    fn a_carried_lead_is_judged_like_one_piece() {
        let cases: &[&[u8]] = &[
            b":\xd7\x84\xdd\xf4\xb7\xfa",
            b"\xf4\x90\x80\x80",
            b"\xf0\x80\x80\x80",
            b"\xe0\x80\xaf",
            b"\xed\xa0\x80",
            b"\xe2\x82",
            b"\xe2\x82\x1b[m",
            b"\xf0\x9f\x98\x80\xf0\x9f",
            b"\xc2\x85\xc2",
        ];
        for input in cases {
            let whole = sanitize(input);
            for a in 0..=input.len() {
                for b in a..=input.len() {
                    let mut s = Sanitizer::new();
                    let mut out = String::new();
                    s.push(&input[..a], &mut out);
                    s.push(&input[a..b], &mut out);
                    s.push(&input[b..], &mut out);
                    s.finish(&mut out);
                    assert_eq!(out, whole, "{input:x?} cut at {a} and {b}");
                }
            }
        }
    }

    #[test]
    fn an_unterminated_string_is_abandoned_at_the_same_byte_for_any_reads() {
        let mut input = b"\x1b]".to_vec();
        input.resize(200_000, b'x');
        input.extend_from_slice(b"\nend");
        let whole = sanitize(&input);
        assert_eq!(whole.len(), 200_000 - 2 - MAX_STRING_SEQ + 4);
        for step in [1, 7, 4096, 65_536, 100_000] {
            let mut s = Sanitizer::new();
            let mut out = String::new();
            for c in input.chunks(step) {
                s.push(c, &mut out);
            }
            s.finish(&mut out);
            assert_eq!(out, whole, "reads of {step}");
        }
    }

    #[test]
    fn every_split_point_gives_the_same_text() {
        let mut input = "a\r\nb\rc \x1b[1;31mx\x1b[0m \u{2603}\u{1F600} \x1b]0;t\x07"
            .as_bytes()
            .to_vec();
        input.extend_from_slice(b"\xff\r\n");
        input.extend_from_slice(b"\xe2\x82 z\r");
        let whole = sanitize(&input);
        for cut in 0..=input.len() {
            let mut s = Sanitizer::new();
            let mut out = String::new();
            s.push(&input[..cut], &mut out);
            s.push(&input[cut..], &mut out);
            s.finish(&mut out);
            assert_eq!(out, whole, "cut at {cut}");
        }
    }
}
