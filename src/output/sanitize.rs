//! Sanitizing: turn whatever bytes a command writes into clean, valid UTF-8 text, each
//! line as a terminal would finally show it.
//!
//! Two streaming stages, because commands write in arbitrary chunks: an escape
//! sequence, a UTF-8 character or a CRLF pair may be split across two reads and must
//! come out exactly as if it had arrived in one.
//!
//! 1. [`Decoder`] removes escape sequences and C0/C1 controls other than tab and
//!    newline, and turns invalid UTF-8 into U+FFFD. It keeps the controls that edit the
//!    current line, for the next stage: CR and BS as they are, and the few escape
//!    sequences progress bars use as one-byte stand-ins (`ESC[K`, `ESC[1K`, `ESC[2K`
//!    erase in line; `ESC[G`/`ESC[1G` is a CR; `ESC[<n>D` is n BS).
//! 2. [`LineEditor`] resolves those edits on the line being written, like a terminal:
//!    a CR returns to column 0, a BS moves back one character, text overwrites from
//!    the cursor, LF ends the line. Only a line's final state is kept: a progress bar
//!    redrawn 20,000 times is one line, `abc\rX` is `Xbc`, and the overstrike of man
//!    pages (`N\bN` bold, `_\bN` underline) is `N`. CRLF (and `\r\r\n`) is one line
//!    break. Cursor movement to other lines is not followed: a multi-line redraw keeps
//!    its lines.
//!
//! The open line is held until its LF (or the end of the stream), at most
//! [`MAX_OPEN_LINE`] bytes of it: past that, what is held is passed on as it stands,
//! and a later CR on that line starts a new line instead of returning over text
//! already passed on. Memory stays bounded on an endless line.
//!
//! [`Sanitizer`] is both stages in a row. The output sink runs them apart, with the
//! secret redactor between them and after them (see `sink.rs`). The artifact keeps
//! the raw bytes; this is only what people and programs are shown.

/// Control strings (OSC, DCS, ...) longer than this are abandoned, so an
/// unterminated one cannot swallow the rest of the output.
const MAX_STRING_SEQ: usize = 64 * 1024;
/// CSI and other short sequences longer than this are abandoned.
const MAX_SHORT_SEQ: usize = 256;
/// The most of one line held back for CR and BS to edit (overwriting with wider
/// characters can grow what is held to four times this).
pub const MAX_OPEN_LINE: usize = 64 * 1024;
/// `ESC[<n>D` moves back at most this many characters.
const MAX_CURSOR_BACK: u32 = 1024;

/// Stand-ins the [`Decoder`] writes for the line-editing escape sequences (bytes it
/// never writes otherwise).
const ERASE_TO_END: u8 = 0x01;
const ERASE_TO_CURSOR: u8 = 0x02;
const ERASE_LINE: u8 = 0x03;
const BS: u8 = 0x08;
const CR: u8 = b'\r';

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

/// Sanitize a stream: [`Decoder`] then [`LineEditor`].
#[derive(Debug, Default, Clone)]
pub struct Sanitizer {
    decoder: Decoder,
    editor: LineEditor,
    decoded: String,
}

impl Sanitizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sanitize `input`, appending the clean text to `out`.
    pub fn push(&mut self, input: &[u8], out: &mut String) {
        self.decoded.clear();
        self.decoder.push(input, &mut self.decoded);
        self.editor.push(&self.decoded, out);
    }

    /// End of stream: an incomplete character becomes U+FFFD, the open line is
    /// passed on as it stands.
    pub fn finish(&mut self, out: &mut String) {
        self.decoded.clear();
        self.decoder.finish(&mut self.decoded);
        self.editor.push(&self.decoded, out);
        self.editor.finish(out);
    }
}

/// The first stage: valid text without escape sequences or controls, except tab, LF
/// and the line edits (CR, BS and the erase stand-ins) that [`LineEditor`] resolves.
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    state: State,
    seq_len: usize,
    /// A CSI sequence's numeric parameter, and whether it is only digits so far.
    csi_param: u32,
    csi_plain: bool,
    carry: [u8; 4],
    carry_len: usize,
    /// A line edit (CR, BS, an erase stand-in) was written since
    /// [`take_wrote_edit`](Self::take_wrote_edit).
    wrote_edit: bool,
}

#[inline]
fn is_plain(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t' || b >= 0x80
}

/// Whether `input` is all printable ASCII, tab and LF: text the decoder passes on as
/// it is. A fold over blocks, without an early exit inside one, so that it compiles
/// to vector compares.
fn is_plain_ascii(input: &[u8]) -> bool {
    input.chunks(64).all(|block| {
        block.iter().fold(true, |ok, &b| {
            ok & ((0x20..0x7f).contains(&b) | (b == b'\n') | (b == b'\t'))
        })
    })
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode `input` as [`push`](Self::push) does, returning the text: `input`
    /// itself when decoding changes nothing (plain ASCII text with no control but tab
    /// and LF, nothing held from the previous read), else what it appended to `out`.
    /// Most output is such text, and is then neither copied nor looked at twice.
    pub fn decode<'a>(&mut self, input: &'a [u8], out: &'a mut String) -> &'a str {
        if self.state == State::Ground
            && self.carry_len == 0
            && is_plain_ascii(input)
            && let Ok(text) = std::str::from_utf8(input)
        {
            return text;
        }
        let start = out.len();
        self.push(input, out);
        &out[start..]
    }

    /// Whether a line edit (CR, BS, an erase) was written since the last call: text
    /// without one needs no [`LineEditor`] work but finding its line ends.
    pub fn take_wrote_edit(&mut self) -> bool {
        std::mem::take(&mut self.wrote_edit)
    }

    /// Decode `input`, appending to `out`.
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
                            CR | BS => {
                                out.push(char::from(b));
                                self.wrote_edit = true;
                            }
                            _ => {} // other C0 controls and DEL: dropped
                        }
                    }
                }
                State::Esc => {
                    let b = input[i];
                    match b {
                        b'[' => {
                            self.state = State::Csi;
                            self.csi_param = 0;
                            self.csi_plain = true;
                        }
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
                        0x20..=0x2f => self.csi_plain = false,
                        b'0'..=b'9' if csi => {
                            self.csi_param =
                                (self.csi_param * 10 + u32::from(b - b'0')).min(MAX_CURSOR_BACK);
                        }
                        0x3a..=0x3f if csi => self.csi_plain = false,
                        0x30..=0x7e => {
                            self.state = State::Ground;
                            if csi && self.csi_plain {
                                self.line_edit(b, out);
                            }
                        }
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

    /// A complete CSI sequence with a plain numeric parameter, ended by `fin`: the
    /// ones that edit the current line become stand-ins; the rest are dropped.
    fn line_edit(&mut self, fin: u8, out: &mut String) {
        self.wrote_edit |= matches!(
            (fin, self.csi_param),
            (b'K', 0..=2) | (b'G', 0 | 1) | (b'D', _)
        );
        match (fin, self.csi_param) {
            (b'K', 0) => out.push(char::from(ERASE_TO_END)),
            (b'K', 1) => out.push(char::from(ERASE_TO_CURSOR)),
            (b'K', 2) => out.push(char::from(ERASE_LINE)),
            (b'G', 0 | 1) => out.push(char::from(CR)),
            (b'D', n) => out.extend(std::iter::repeat_n(char::from(BS), n.max(1) as usize)),
            _ => {}
        }
    }

    /// End of stream: an incomplete character becomes U+FFFD.
    pub fn finish(&mut self, out: &mut String) {
        self.flush_carry(out);
        self.state = State::Ground;
    }

    fn flush_carry(&mut self, out: &mut String) {
        if self.carry_len > 0 {
            out.push('\u{FFFD}');
            self.carry_len = 0;
        }
    }

    /// A run of plain bytes (printable ASCII, tab, LF, or >= 0x80).
    fn text(&mut self, mut run: &[u8], at_input_end: bool, out: &mut String) {
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

/// The second stage: resolves CR, BS and the erase stand-ins of [`Decoder`] on the
/// line being written, and passes each line on once it is finished.
#[derive(Debug, Default, Clone)]
pub struct LineEditor {
    /// The open line (held until its LF).
    line: String,
    /// The cursor, a byte offset into `line` on a character boundary...
    cur: usize,
    /// ...plus the columns it stands past the end of `line` (after an erase).
    pad: usize,
    /// Part of the open line was passed on already (it outgrew [`MAX_OPEN_LINE`]).
    passed_on: bool,
    /// Where in the output of the [`push`](Self::push) that met the stream's first
    /// line edit the text after it begins (taken by [`first_edit`](Self::first_edit)).
    first_edit: Option<usize>,
    edited: bool,
}

impl LineEditor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Edit with `input` (decoded text), appending finished text to `out`.
    pub fn push(&mut self, input: &str, out: &mut String) {
        let b = input.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let end = edit_run_end(b, i);
            if end > i {
                // Edits are ASCII bytes: both ends are character boundaries.
                self.text(&input[i..end], out);
            }
            if end == b.len() {
                break;
            }
            self.edit(b[end], out);
            i = end + 1;
        }
    }

    /// [`push`](Self::push) for text without line edits (the decoder wrote none):
    /// the same result, but whole lines with nothing held before them are not copied.
    /// What is finished is the returned part of `input`, followed by what is appended
    /// to `out`.
    pub fn push_unedited<'a>(&mut self, input: &'a str, out: &mut String) -> &'a str {
        debug_assert_eq!(edit_run_end(input.as_bytes(), 0), input.len());
        // Not even a search: memchr's first one asks the CPU what it can do, which
        // costs a run that printed nothing tens of microseconds in a virtual machine.
        if input.is_empty() {
            return "";
        }
        if self.line.is_empty()
            && self.pad == 0
            && let Some(last) = memchr::memrchr(b'\n', input.as_bytes())
        {
            // As `text` does, without the copy of the lines.
            self.reset_line();
            self.write(&input[last + 1..], out);
            return &input[..=last];
        }
        self.text(input, out);
        ""
    }

    /// End of stream: the open line is passed on as it stands (without a newline:
    /// the command did not print one).
    pub fn finish(&mut self, out: &mut String) {
        out.push_str(&self.line);
        self.reset_line();
    }

    /// Once: the offset in `out` of the push that met the first line edit of the
    /// stream, from where the output may differ from the input (before it, the
    /// output is the input, only held back until each LF).
    pub fn first_edit(&mut self) -> Option<usize> {
        self.first_edit.take()
    }

    fn reset_line(&mut self) {
        self.line.clear();
        self.cur = 0;
        self.pad = 0;
        self.passed_on = false;
    }

    /// Text without edits, perhaps with line breaks.
    fn text(&mut self, t: &str, out: &mut String) {
        let Some(last) = memchr::memrchr(b'\n', t.as_bytes()) else {
            return self.write(t, out);
        };
        if self.line.is_empty() && self.pad == 0 {
            // Nothing to edit: whole lines go straight through.
            out.push_str(&t[..=last]);
        } else {
            let first = memchr::memchr(b'\n', t.as_bytes()).unwrap_or(last);
            self.write(&t[..first], out);
            out.push_str(&self.line);
            out.push_str(&t[first..=last]);
        }
        self.reset_line();
        self.write(&t[last + 1..], out);
    }

    /// Text within the line: overwrites from the cursor, then extends the line.
    fn write(&mut self, mut t: &str, out: &mut String) {
        if t.is_empty() {
            return;
        }
        if self.cur < self.line.len() {
            // ASCII over ASCII (a redrawn progress bar): byte for byte.
            let under = &self.line.as_bytes()[self.cur..];
            let n = t.len().min(under.len());
            if t.as_bytes()[..n].is_ascii() && under[..n].is_ascii() {
                // SAFETY: ASCII bytes replace ASCII bytes, so `line` stays UTF-8.
                let bytes = unsafe { self.line.as_bytes_mut() };
                bytes[self.cur..self.cur + n].copy_from_slice(&t.as_bytes()[..n]);
                self.cur += n;
                t = &t[n..];
                if t.is_empty() {
                    return;
                }
            }
        }
        if self.cur < self.line.len() {
            let mut over = t.char_indices();
            let mut under = self.line[self.cur..].char_indices();
            let split = loop {
                match over.next() {
                    None => {
                        let end = under.next().map_or(self.line.len(), |(k, _)| self.cur + k);
                        self.line.replace_range(self.cur..end, t);
                        self.cur += t.len();
                        return;
                    }
                    Some((j, _)) => {
                        if under.next().is_none() {
                            break j;
                        }
                    }
                }
            };
            self.line.replace_range(self.cur.., &t[..split]);
            t = &t[split..];
        }
        const SPACES: &str = "                                                                ";
        while self.pad > 0 {
            let n = self.pad.min(SPACES.len());
            self.pad -= n;
            self.append(&SPACES[..n], out);
        }
        self.append(t, out);
    }

    /// Extend the line at its end, passing it on whenever it would outgrow
    /// [`MAX_OPEN_LINE`] (at the same character however the text arrives).
    fn append(&mut self, mut t: &str, out: &mut String) {
        if self.line.is_empty() {
            // Nothing held: the parts that will be passed on at once go straight
            // out, cut where the held line would have been.
            while t.len() > MAX_OPEN_LINE {
                let mut cut = MAX_OPEN_LINE;
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.push_str(&t[..cut]);
                t = &t[cut..];
                self.passed_on = true;
            }
        }
        loop {
            let room = MAX_OPEN_LINE.saturating_sub(self.line.len());
            if t.len() <= room {
                self.line.push_str(t);
                self.cur = self.line.len();
                return;
            }
            let mut cut = room;
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            self.line.push_str(&t[..cut]);
            t = &t[cut..];
            out.push_str(&self.line);
            self.reset_line();
            self.passed_on = true;
        }
    }

    fn edit(&mut self, e: u8, out: &mut String) {
        if !self.edited {
            self.edited = true;
            self.first_edit = Some(out.len());
        }
        match e {
            CR => {
                if self.passed_on {
                    // The line's start is gone: show the redraw as a new line.
                    out.push_str(&self.line);
                    out.push('\n');
                    self.reset_line();
                }
                self.cur = 0;
                self.pad = 0;
            }
            BS => {
                if self.pad > 0 {
                    self.pad -= 1;
                } else if let Some(c) = self.line[..self.cur].chars().next_back() {
                    self.cur -= c.len_utf8();
                }
            }
            ERASE_TO_END => self.line.truncate(self.cur),
            ERASE_TO_CURSOR => {
                let before = self.line[..self.cur].chars().count();
                match self.line[self.cur..].chars().next() {
                    Some(c) => {
                        let end = self.cur + c.len_utf8();
                        self.line.replace_range(..end, &" ".repeat(before + 1));
                        self.cur = before;
                    }
                    None => {
                        self.pad += before;
                        self.line.clear();
                        self.cur = 0;
                    }
                }
            }
            ERASE_LINE => {
                self.pad += self.line[..self.cur].chars().count();
                self.line.clear();
                self.cur = 0;
            }
            _ => {}
        }
    }
}

/// End of the run of bytes starting at `i` that are not line edits (CR, BS, the
/// erase stand-ins): eight bytes at a time, as in [`plain_run_end`].
#[inline]
fn edit_run_end(input: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let is_edit = |b: u8| b < b'\t' || b == CR;
    let len = input.len();
    while i + 8 <= len {
        let mut w = [0u8; 8];
        w.copy_from_slice(&input[i..i + 8]);
        let x = u64::from_le_bytes(w);
        let below_tab = x.wrapping_sub(ONES * u64::from(b'\t')) & !x & HIGH;
        let y = x ^ (ONES * u64::from(CR));
        let cr = y.wrapping_sub(ONES) & !y & HIGH;
        if below_tab | cr == 0 {
            i += 8;
            continue;
        }
        for k in 0..8 {
            if is_edit(input[i + k]) {
                return i + k;
            }
        }
        i += 8;
    }
    while i < len && !is_edit(input[i]) {
        i += 1;
    }
    i
}

/// Whether decoded text holds a line edit (CR, BS, an erase stand-in) for
/// [`LineEditor`] to resolve.
pub fn has_line_edit(text: &str) -> bool {
    edit_run_end(text.as_bytes(), 0) < text.len()
}

/// Decode a complete byte string in one go: the text as written, line edits
/// unresolved (what the redactor between the two stages searches).
pub fn decode(input: &[u8]) -> String {
    let mut d = Decoder::new();
    let mut out = String::with_capacity(input.len());
    d.push(input, &mut out);
    d.finish(&mut out);
    out
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
            (b"10%\r20%\r30%\n", "30%\n"),
            (b"\x1b[31mred\x1b[0m\n", "red\n"),
            (b"\x1b]0;title\x07text", "text"),
            (b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
            (b"\x1b(Bx", "x"),
            (b"a\x00b\x07c\x0bd\x7fe", "abcde"),
            (b"tab\there", "tab\there"),
            (b"bad \xff byte", "bad \u{FFFD} byte"),
            (b"trunc \xe2\x82", "trunc \u{FFFD}"),
            ("c1 \u{85}x".as_bytes(), "c1 x"),
            ("snow \u{2603}".as_bytes(), "snow \u{2603}"),
            (b"end\r", "end"),
            (b"\r\x1b[2Kprogress\r\x1b[2Kdone\n", "done\n"),
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

    /// Line edits, resolved as a terminal shows the line.
    #[test]
    fn line_edits_keep_the_final_state_of_each_line() {
        let cases: &[(&[u8], &str)] = &[
            (b"abc\rX", "Xbc"),
            (b"abc\rX\n", "Xbc\n"),
            (b"a\r\nb\r\r\nc", "a\nb\nc"),
            (b"1%\r2%\r100%\ndone\n", "100%\ndone\n"),
            (b"long line\rshort\n", "shortline\n"),
            (b"long line\r\x1b[Kshort\n", "short\n"),
            (b"long line\r\x1b[2Kshort\n", "short\n"),
            (b"long line\x1b[2K\rshort\n", "short\n"),
            (b"long line\x1b[1G\x1b[0Kshort\n", "short\n"),
            (b"abcdef\x1b[3D\x1b[KX\n", "abcX\n"),
            (b"abcdef\x1b[3D\x1b[1KX", "   Xef"),
            (b"abc\x1b[2KX", "   X"),
            (b"N\x08NA\x08AM\x08ME\x08E\n", "NAME\n"),
            (b"_\x08A_\x08B\n", "AB\n"),
            (b"ab\x08\x08\x08\x08X", "Xb"),
            (b"ab\x08", "ab"),
            (b"\x08\rX", "X"),
            ("h\u{e9}\u{2603}\rxy".as_bytes(), "xy\u{2603}"),
            ("abc\r\u{e9}\u{1F600}".as_bytes(), "\u{e9}\u{1F600}c"),
            ("\u{1F600}\u{1F600}\x08x".as_bytes(), "\u{1F600}x"),
            (b"a\tb\rX", "X\tb"),
            (b"keep\x1b[5Gx", "keepx"),
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

    #[test]
    fn a_progress_bar_is_one_line_and_the_open_line_is_bounded() {
        let mut bar = Vec::new();
        for i in 0..20_000 {
            bar.extend_from_slice(format!("\r[{:<50}] {i}", "#".repeat(i % 50)).as_bytes());
        }
        bar.extend_from_slice(b"\ndone\n");
        let text = sanitize(&bar);
        assert_eq!(
            text,
            format!("\r[{:<50}] 19999\ndone\n", "#".repeat(49))[1..]
        );

        // An endless line: held up to the cap, then passed on; a CR after that
        // starts a new line rather than rewriting what was passed on.
        let mut s = Sanitizer::new();
        let mut out = String::new();
        let chunk = vec![b'a'; 10_000];
        for _ in 0..100 {
            s.push(&chunk, &mut out);
            assert!(s.editor.line.len() <= MAX_OPEN_LINE);
        }
        assert_eq!(out.len(), 1_000_000 / MAX_OPEN_LINE * MAX_OPEN_LINE);
        s.push(b"\rX", &mut out);
        s.finish(&mut out);
        assert_eq!(out.len(), 1_000_000 + 2);
        assert!(out.ends_with("a\nX"), "{:?}", &out[out.len() - 5..]);

        // Redraws that never print LF: memory stays that of one state.
        let mut s = Sanitizer::new();
        let mut out = String::new();
        for i in 0..100_000 {
            s.push(format!("{i:>8} bytes\r").as_bytes(), &mut out);
        }
        assert!(out.is_empty() && s.editor.line.len() == 14);
        s.finish(&mut out);
        assert_eq!(out, "   99999 bytes");
    }

    /// Every cut of each input into three reads sanitizes as one read does.
    fn assert_every_split_is_one_read(inputs: &[&[u8]]) {
        for input in inputs {
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

    /// Split inside a CRLF, between a BS and what overwrites, inside the escape
    /// sequences that erase or move, and inside the characters they move over.
    #[test]
    fn every_split_of_line_edits_gives_the_same_text() {
        let inputs: &[&[u8]] = &[
            "h\u{e9}llo\r\nw\u{2603}rld\rW\r\r\nx\u{1F600}y\x08\x08Z\n".as_bytes(),
            b"N\x08NA\x08A_\x08B\r\n10%\r\x1b[2K20%\x1b[K\r\x1b[1G30\x1b[2D4\n",
            b"ab\xc3\xa9\xe2\x98\x83\x1b[3D\x1b[1K\xf0\x9f\x98\x80\r\xe2\x82\x08\xff\r",
            b"\x1b[12Dabc\x1b[2K\x08\x08x\r\n\r",
        ];
        assert_every_split_is_one_read(inputs);
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
        assert_every_split_is_one_read(cases);
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

    /// `Decoder::decode` with `LineEditor::push_unedited` for reads without a line
    /// edit (the way the output sink takes) sanitizes as one read through the
    /// general way does, however the stream is cut.
    mod fast_way {
        use super::*;
        use proptest::prelude::*;

        fn stream() -> impl Strategy<Value = Vec<&'static [u8]>> {
            let atoms: Vec<&'static [u8]> = vec![
                b"text ",
                b"line\n",
                b"\n",
                b"\t",
                b"\r",
                b"\r\n",
                b"\x08",
                b"\x1b[2K",
                b"\x1b[1K",
                b"\x1b[K",
                b"\x1b[2D",
                b"\x1b[1G",
                b"\x1b[1;31m",
                b"\x1b]0;t\x07",
                b"\x1b",
                b"[",
                b"\x00",
                b"\x7f",
                b"\xc3\xa9",
                b"\xe2\x98",
                b"\x83",
                b"\xc2\x85",
                b"\xf4",
                b"\xff",
                &[b'x'; 40_000],
                // A line exactly as long as what is held of one: passed on whole.
                &[b'z'; MAX_OPEN_LINE],
            ];
            prop::collection::vec(prop::sample::select(atoms), 0..80)
        }

        /// Where reads end: at the end of an atom (as a program's writes do), or
        /// anywhere.
        fn read_ends(atoms: &[&[u8]], cuts: &[(bool, usize)]) -> Vec<usize> {
            let ends: Vec<usize> = atoms
                .iter()
                .scan(0, |at, a| {
                    *at += a.len();
                    Some(*at)
                })
                .collect();
            let len = ends.last().copied().unwrap_or(0);
            let mut points: Vec<usize> = cuts
                .iter()
                .map(|&(aligned, n)| match aligned {
                    true if !ends.is_empty() => ends[n % ends.len()],
                    _ => n % (len + 1),
                })
                .chain([len])
                .collect();
            points.sort_unstable();
            points
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn the_fast_way_sanitizes_as_the_general_way(
                atoms in stream(),
                cuts in prop::collection::vec((any::<bool>(), any::<usize>()), 0..16),
            ) {
                let data = atoms.concat();
                let whole = sanitize(&data);
                let (mut decoder, mut editor) = (Decoder::new(), LineEditor::new());
                let (mut out, mut scratch, mut held) = (String::new(), String::new(), String::new());
                let mut at = 0;
                for p in read_ends(&atoms, &cuts) {
                    scratch.clear();
                    let text = decoder.decode(&data[at..p.max(at)], &mut scratch);
                    if decoder.take_wrote_edit() {
                        editor.push(text, &mut out);
                    } else {
                        held.clear();
                        let lines = editor.push_unedited(text, &mut held);
                        out.push_str(lines);
                        out.push_str(&held);
                    }
                    at = p.max(at);
                }
                scratch.clear();
                decoder.finish(&mut scratch);
                editor.push(&scratch, &mut out);
                editor.finish(&mut out);
                prop_assert_eq!(out, whole);
            }
        }
    }
}
