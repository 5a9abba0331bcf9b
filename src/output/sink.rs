//! Retention: everything a command prints flows through one [`OutputSink`].
//!
//! Raw bytes go to the artifact (held in memory only while they still fit the
//! retention budget, so a short run never touches the disk); sanitized text is
//! redacted, column-capped and retained as a bounded head and/or tail. Memory stays
//! bounded whatever the command prints — a gigabyte on one line included.
//!
//! The text path: decode (escapes and controls out, line edits kept) → redact →
//! resolve line edits (CR, BS, erase) → redact again → cap columns → retain. Secrets
//! are looked for both in the text as written and in the lines as finally shown: a
//! secret written whole and then partly overwritten (`SECRET\rxx`) is masked before
//! the overwrite can leave a piece of it showing (`xxCRET`), and a secret put together
//! by overstrike is masked in the line it makes. The second search starts at the
//! stream's first line edit; before it the resolved text is the text as written.

use super::artifact::{Allocated, ArtifactRef, ArtifactStore};
use super::notice::{count, format_size, full_ref};
use super::redact::{Form, Redactor, Secrets};
use super::sanitize::{Decoder, LineEditor, has_line_edit};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::{Duration, Instant};

mod spill;
mod view;

#[derive(Debug, Clone, Default)]
pub struct SinkConfig {
    pub max_bytes: usize,
    pub head_bytes: usize,
    pub max_columns: usize,
    pub head_lines: Option<usize>,
    pub tail_lines: Option<usize>,
    /// A lifted `| head -n N`'s N: once N lines are read, up to [`HEAD_OVERREAD`] more
    /// are (for at most [`HEAD_OVERREAD_TIME`]), then the reader stops, as `head` would
    /// stop the command. `head_lines` alone is a view and never stops anything.
    pub stop_after_lines: Option<usize>,
    /// Secrets to mask as `[REDACTED:NAME]`, in the shown text and in the artifact.
    pub redact: Secrets,
    /// The line limits are a lifted `| head`/`| tail` that received stdout alone: they
    /// view what [`OutputSink::push`] gets (stdout), while what
    /// [`OutputSink::push_stderr`] gets passes in full, where bash would show it.
    pub stdout_only: bool,
}

/// Live text buffered past this is sent at once (bounding memory) instead of
/// waiting for the next 50 ms tick.
const PENDING_CAP: usize = 256 << 10;

/// Once a lifted `| head -n N` has seen its N lines, this much more output is still
/// read and saved, then reading stops and the command meets a closed pipe, as it
/// would have with the real `| head`. Without it, `yes 2>&1 | head -n 3` would run
/// until its timeout and fill the artifact.
pub const HEAD_OVERREAD: u64 = 16 << 20;

/// And for no longer than this: a command that keeps printing slowly (a line a
/// second, or an unbuffered line-by-line writer) is stopped about when `head` would
/// have stopped it, not after minutes.
pub const HEAD_OVERREAD_TIME: Duration = Duration::from_secs(1);

/// How the shown text was cut (the result's `truncation`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Truncation {
    /// Which part is shown: "tail", "head", or "middle" (head and tail shown, middle elided).
    #[serde(deserialize_with = "direction")]
    pub direction: Word,
    /// "bytes" (retention budget or column cap) or "lines" (a head/tail limit).
    #[serde(deserialize_with = "truncated_by")]
    pub truncated_by: Word,
    pub shown_range: [u64; 2],
}

/// A word from a fixed set. (Spelled through this alias so that serde's derive does
/// not take the field for text borrowed from the input, which would tie a
/// deserialized result to `'static` input.)
pub type Word = &'static str;

/// One of the `known` words, read back from a result (a remote target's): the
/// fields that hold them are `&'static str`.
pub fn known_word<'de, D: serde::Deserializer<'de>>(
    d: D,
    known: &[&'static str],
) -> Result<&'static str, D::Error> {
    let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
    known.iter().find(|k| **k == s).copied().ok_or_else(|| {
        serde::de::Error::custom(format!("unknown value {s:?}: expected one of {known:?}"))
    })
}

fn direction<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    known_word(d, &["tail", "head", "middle"])
}

fn truncated_by<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    known_word(d, &["bytes", "lines"])
}

/// The sink's final word: shown text and every count.
#[derive(Debug, Clone, Default)]
pub struct Retained {
    /// Shown text, without notice.
    pub text: String,
    pub truncated: bool,
    pub truncation: Option<Truncation>,
    /// `[Showing lines …]` when anything was cut.
    pub notice: Option<String>,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub output_bytes: u64,
    pub output_lines: u64,
    pub artifact: Option<ArtifactRef>,
    pub warnings: Vec<String>,
}

/// Raw stream keeper: memory while small, the artifact file once it is not.
struct Spill {
    file: Option<BufWriter<File>>,
    artifact: Option<ArtifactRef>,
    /// The directory the artifact was made in (to remove it from there again).
    dir: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// Where the artifact is claimed once the output first needs one: a run that
    /// keeps nothing creates no file and no directory.
    store: Option<ArtifactStore>,
    mem: Vec<u8>,
    mem_cap: usize,
    spilled: bool,
    lost: bool,
    error: Option<String>,
    /// Bytes written to the file, and the most it may hold.
    written: u64,
    file_cap: u64,
    /// The file reached `file_cap`: it holds the start of the stream only.
    capped: bool,
}

pub struct OutputSink {
    cfg: SinkConfig,
    decoder: Decoder,
    editor: LineEditor,
    /// Masks the decoded text as written (before line edits are resolved).
    text_redactor: Option<Redactor>,
    /// Masks the resolved lines, from the stream's first line edit on.
    line_redactor: Option<Redactor>,
    line_redacting: bool,
    raw_redactor: Option<Redactor>,
    clean: String,
    resolved: String,
    redacted_lines: Vec<u8>,
    capped: String,
    redacted: Vec<u8>,
    redacted_text: Vec<u8>,
    raw_bytes: u64,
    newlines: u64,
    line_open: bool,
    col: usize,
    capping: bool,
    capped_any: bool,
    head: String,
    head_newlines: usize,
    head_done: bool,
    dropped_after_head: bool,
    tail: String,
    tail_cap: usize,
    tail_trimmed: bool,
    spill: Spill,
    collect_events: bool,
    pending: String,
    /// Raw bytes read up to the end of line `stop_after_lines`, and when, once read.
    head_full_at: Option<(u64, Instant)>,
    /// Raw newlines read (counted only until `head_full_at` is known).
    raw_newlines: u64,
    /// The reader stopped before the end of the stream ([`HEAD_OVERREAD`]).
    stopped_reading: bool,
    /// A stdout-only lift's view of stdout ([`SinkConfig::stdout_only`]).
    view: Option<StdoutView>,
    /// Raw bytes pushed as stderr (all of them are also in `raw_bytes`).
    stderr_bytes: u64,
    /// Plain text skips the work it does not need (see `Decoder::decode` and
    /// `LineEditor::push_unedited`); off only in tests, which compare the two ways.
    fast_text: bool,
}

/// A `| head -n N` / `| tail -n N` lifted off a pipe that received stdout alone,
/// applied to stdout as bash's `head`/`tail` would: head's lines reach the text as
/// they come, in order with stderr; tail's are held (bounded) and reach the text when
/// stdout ends, after all of stderr up to then, as `tail` prints at its end of input.
struct StdoutView {
    head: bool,
    limit: u64,
    /// Newlines stdout has had, and whether its last line is still open.
    newlines: u64,
    line_open: bool,
    /// Tail: the latest stdout bytes, at most about twice `cap` (cut to `cap` when over).
    held: Vec<u8>,
    cap: usize,
    /// Stdout bytes so far: past `cap`, only the last `cap` are shown.
    bytes: u64,
    /// Tail: the held lines were sent on (stdout ended).
    released: bool,
    /// Stdout lines that reached the text.
    shown: u64,
}

impl StdoutView {
    /// Stdout's lines so far, an open last line counted.
    fn lines(&self) -> u64 {
        self.newlines + u64::from(self.line_open)
    }
}

impl OutputSink {
    pub fn new(mut cfg: SinkConfig, artifact: Option<Allocated>, collect_events: bool) -> Self {
        // A stdout-only lift's limits are the view's: retention keeps what is shown.
        let view = match (cfg.stdout_only, cfg.head_lines, cfg.tail_lines) {
            (true, Some(n), _) | (true, None, Some(n)) => Some(StdoutView {
                head: cfg.head_lines.is_some(),
                limit: n as u64,
                newlines: 0,
                line_open: false,
                held: Vec::new(),
                cap: cfg.max_bytes.max(1),
                bytes: 0,
                released: false,
                shown: 0,
            }),
            _ => None,
        };
        if view.is_some() {
            (cfg.head_lines, cfg.tail_lines) = (None, None);
        }
        let (file, art, file_cap, dir) = match artifact {
            Some(a) => (
                Some(BufWriter::with_capacity(64 * 1024, a.file)),
                Some(ArtifactRef {
                    id: a.id,
                    url: super::artifact::url(a.id),
                    path: a.path,
                }),
                a.max_bytes,
                Some(a.dir),
            ),
            None => (None, None, u64::MAX, None),
        };
        let tail_cap = if cfg.head_lines.is_some() {
            0
        } else {
            cfg.max_bytes.saturating_sub(cfg.head_bytes)
        };
        OutputSink {
            text_redactor: cfg.redact.redactor(Form::Text),
            line_redactor: cfg.redact.redactor(Form::Text),
            line_redacting: false,
            // The raw stream is kept only for the artifact.
            raw_redactor: art.as_ref().and_then(|_| cfg.redact.redactor(Form::Raw)),
            decoder: Decoder::new(),
            editor: LineEditor::new(),
            clean: String::new(),
            resolved: String::new(),
            redacted_lines: Vec::new(),
            capped: String::new(),
            redacted: Vec::new(),
            redacted_text: Vec::new(),
            raw_bytes: 0,
            newlines: 0,
            line_open: false,
            col: 0,
            capping: false,
            capped_any: false,
            head: String::new(),
            head_newlines: 0,
            head_done: false,
            dropped_after_head: false,
            tail: String::new(),
            tail_cap,
            tail_trimmed: false,
            spill: Spill {
                file,
                artifact: art,
                dir,
                store: None,
                mem: Vec::new(),
                mem_cap: cfg.max_bytes,
                spilled: false,
                lost: false,
                error: None,
                written: 0,
                file_cap,
                capped: false,
            },
            head_full_at: None,
            raw_newlines: 0,
            stopped_reading: false,
            view,
            stderr_bytes: 0,
            fast_text: true,
            collect_events,
            pending: String::new(),
            cfg,
        }
    }

    /// This sink with every read taking the general way through the decoder and the
    /// line editor, for tests that compare it with the fast one.
    #[cfg(test)]
    fn general_text_only(mut self) -> Self {
        self.fast_text = false;
        self
    }

    /// Claim the artifact from `store` only when the output first needs one (it
    /// outgrows `max_bytes`, or [`finish_previewed`](Self::finish_previewed) keeps it)
    /// instead of up front. A failed claim is a warning, never fatal.
    pub fn spill_to(mut self, store: ArtifactStore) -> Self {
        if self.spill.file.is_none() {
            self.raw_redactor = self.cfg.redact.redactor(Form::Raw);
            self.spill.store = Some(store);
        }
        self
    }

    /// The artifact this run spills to, if one was claimed.
    pub fn artifact(&self) -> Option<&ArtifactRef> {
        self.spill.artifact.as_ref()
    }

    /// Feed raw bytes from the command (its stdout, under a stdout-only lift).
    pub fn push(&mut self, raw: &[u8]) {
        if let Some(n) = self.cfg.stop_after_lines
            && self.head_full_at.is_none()
        {
            self.find_stop_line(raw, n as u64);
        }
        if self.view.is_some() {
            self.push_viewed(raw);
            return;
        }
        self.raw_bytes += raw.len() as u64;
        // Same secrets and same held bytes in both redactors: if the sanitizer leaves
        // this chunk as it is, the text redactor would give what the raw one gives.
        let twins = match (&self.text_redactor, &self.raw_redactor) {
            (Some(t), Some(r)) => t.in_step_with(r),
            _ => false,
        };
        if let Some(r) = self.raw_redactor.as_mut() {
            let mut out = std::mem::take(&mut self.redacted);
            out.clear();
            r.push(raw, &mut out);
            self.spill.push(&out);
            self.redacted = out;
        } else {
            self.spill.push(raw);
        }
        let mut clean = std::mem::take(&mut self.clean);
        clean.clear();
        let (decoded, edits) = self.decode(raw, &mut clean);
        let unchanged = std::ptr::eq(decoded.as_bytes(), raw) || decoded.as_bytes() == raw;
        if twins
            && unchanged
            && let (Some(t), Some(r)) = (self.text_redactor.as_mut(), &self.raw_redactor)
        {
            // One search serves both streams (most output is plain text).
            t.catch_up(r);
            let out = std::mem::take(&mut self.redacted);
            match std::str::from_utf8(&out) {
                // What the redactor released may include an edit it held back from
                // an earlier read: looked for (`edits: None`).
                Ok(s) => self.resolve(s, false, None),
                Err(_) => self.resolve(&String::from_utf8_lossy(&out), false, None),
            }
            self.redacted = out;
        } else {
            self.text(decoded, edits);
        }
        self.clean = clean;
    }

    /// Feed the command's stderr, under a stdout-only lift (see
    /// [`SinkConfig::stdout_only`]): kept whole, shown in the order it comes.
    /// Without one, the same as [`push`](Self::push).
    pub fn push_stderr(&mut self, raw: &[u8]) {
        if self.view.is_none() {
            self.push(raw);
            return;
        }
        self.raw_bytes += raw.len() as u64;
        self.stderr_bytes += raw.len() as u64;
        self.keep_raw(raw);
        self.show_raw(raw);
    }

    /// Stdout under a stdout-only lift: all of it to the artifact; to the text, a
    /// head's first lines now, a tail's last lines when stdout ends.
    fn push_viewed(&mut self, raw: &[u8]) {
        self.raw_bytes += raw.len() as u64;
        self.keep_raw(raw);
        let Some(v) = self.view.as_mut() else { return };
        let before = v.newlines;
        v.newlines += memchr::memchr_iter(b'\n', raw).count() as u64;
        v.bytes += raw.len() as u64;
        if !raw.is_empty() {
            v.line_open = raw.last() != Some(&b'\n');
        }
        if v.head {
            if before >= v.limit {
                return;
            }
            let want = (v.limit - before) as usize;
            let cut = memchr::memchr_iter(b'\n', raw)
                .nth(want - 1)
                .map_or(raw.len(), |p| p + 1);
            self.show_raw(&raw[..cut]);
            return;
        }
        if v.released {
            // Stdout again after it ended: there is nothing more to it.
            return;
        }
        v.held.extend_from_slice(raw);
        if v.held.len() > v.cap.saturating_mul(2) {
            let cut = v.held.len() - v.cap;
            v.held.drain(..cut);
        }
    }

    /// Stdout ended (its pipe reached end of file): a lifted tail's lines now reach
    /// the text, after the stderr read so far, as `tail` prints them. Harmless to
    /// call again.
    pub fn stdout_ended(&mut self) {
        let Some(v) = self.view.as_mut().filter(|v| !v.head && !v.released) else {
            return;
        };
        v.released = true;
        let mut held = std::mem::take(&mut v.held);
        // The last `cap` bytes: the same window however the reads fell.
        let cut = v.bytes > v.cap as u64;
        if held.len() > v.cap {
            held.drain(..held.len() - v.cap);
        }
        let from = nth_line_start_from_end_bytes(&held, v.limit as usize);
        if from == 0 && cut {
            // A cut first line: keep whole lines only, when there is one.
            if let Some(p) = memchr::memchr(b'\n', &held).filter(|p| p + 1 < held.len()) {
                held.drain(..=p);
            }
        } else {
            held.drain(..from);
        }
        v.shown = memchr::memchr_iter(b'\n', &held).count() as u64
            + u64::from(held.last().is_some_and(|&b| b != b'\n'));
        self.show_raw(&held);
    }

    /// Raw bytes to the artifact (masked when there are secrets).
    fn keep_raw(&mut self, raw: &[u8]) {
        if let Some(r) = self.raw_redactor.as_mut() {
            let mut out = std::mem::take(&mut self.redacted);
            out.clear();
            r.push(raw, &mut out);
            self.spill.push(&out);
            self.redacted = out;
        } else {
            self.spill.push(raw);
        }
    }

    /// Raw bytes to the shown text: decoded, masked, line edits resolved, retained.
    fn show_raw(&mut self, raw: &[u8]) {
        let mut clean = std::mem::take(&mut self.clean);
        clean.clear();
        let (decoded, edits) = self.decode(raw, &mut clean);
        self.text(decoded, edits);
        self.clean = clean;
    }

    /// Bytes of the stream the line limits count: stdout under a stdout-only lift,
    /// else everything.
    fn counted_bytes(&self) -> u64 {
        self.raw_bytes - self.stderr_bytes
    }

    /// Where line `n` of the raw stream ends, if it does in `raw` (which follows the
    /// bytes already read). Raw newlines, as `head` counts them.
    fn find_stop_line(&mut self, raw: &[u8], n: u64) {
        for pos in memchr::memchr_iter(b'\n', raw) {
            self.raw_newlines += 1;
            if self.raw_newlines >= n {
                self.head_full_at = Some((self.counted_bytes() + pos as u64 + 1, Instant::now()));
                return;
            }
        }
    }

    /// False once a lifted head has seen its lines and [`HEAD_OVERREAD`] more bytes
    /// were read, or [`HEAD_OVERREAD_TIME`] passed: the reader should stop and close
    /// its end of the pipe, as `| head` would.
    pub fn wants_more(&self) -> bool {
        self.head_full_at.is_none_or(|(at, when)| {
            // Under a stdout-only lift the producer's stderr is shown: reading on
            // would let it print what `head` would have stopped it before printing.
            self.view.is_none()
                && self.counted_bytes() - at < HEAD_OVERREAD
                && when.elapsed() < HEAD_OVERREAD_TIME
        })
    }

    /// The reader stopped before the end of the stream (after [`wants_more`]
    /// said so): the counts are then those of the pipeline with its `head` (the
    /// first `stop_after_lines` lines), and the notice says the command was stopped.
    ///
    /// [`wants_more`]: Self::wants_more
    pub fn stopped_reading(&mut self) {
        self.stopped_reading = true;
    }

    /// Text emitted since the last call (for live streaming), if any.
    pub fn take_pending(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.pending))
        }
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// So much live text is waiting that it must go out now, whatever the pacing.
    pub fn pending_full(&self) -> bool {
        self.pending.len() >= PENDING_CAP
    }

    /// `raw` decoded, and whether the decoder wrote a line edit: plain text comes
    /// back as `raw` itself (see `Decoder::decode`), anything else in `clean`.
    fn decode<'a>(&mut self, raw: &'a [u8], clean: &'a mut String) -> (&'a str, bool) {
        let text = if self.fast_text {
            self.decoder.decode(raw, clean)
        } else {
            self.decoder.push(raw, clean);
            clean.as_str()
        };
        (text, self.decoder.take_wrote_edit())
    }

    /// Decoded text on to the line editor, through the text redactor. `edits`: the
    /// decoder wrote a line edit into `clean` (or may have).
    fn text(&mut self, clean: &str, edits: bool) {
        if clean.is_empty() {
            return;
        }
        if let Some(r) = self.text_redactor.as_mut() {
            // Reused between chunks: a flood of output allocates nothing per read.
            let mut out = std::mem::take(&mut self.redacted_text);
            out.clear();
            r.push(clean.as_bytes(), &mut out);
            // Valid: clean text with whole replacements, held back on character
            // boundaries. What it releases may include an edit it held back from an
            // earlier read: looked for (`None`).
            match std::str::from_utf8(&out) {
                Ok(s) => self.resolve(s, false, None),
                Err(_) => self.resolve(&String::from_utf8_lossy(&out), false, None),
            }
            self.redacted_text = out;
        } else {
            self.resolve(clean, false, Some(edits));
        }
    }

    /// Resolve the line edits in `s`; the finished lines go on, masked again from the
    /// first line edit on. `last`: end of the input (release everything held).
    /// `edits`: whether `s` holds a line edit, when known (`None`: looked for).
    fn resolve(&mut self, s: &str, last: bool, edits: Option<bool>) {
        // A quick look (the editor's own) when not known spares its copy when none.
        let edits = !self.fast_text || edits.unwrap_or_else(|| has_line_edit(s));
        if !edits && !self.line_redacting {
            // Text without edits: the lines pass on as they are, not copied.
            let mut resolved = std::mem::take(&mut self.resolved);
            resolved.clear();
            let lines = self.editor.push_unedited(s, &mut resolved);
            if last {
                self.editor.finish(&mut resolved);
            }
            self.after_redact(lines);
            self.after_redact(&resolved);
            self.resolved = resolved;
            return;
        }
        let mut resolved = std::mem::take(&mut self.resolved);
        resolved.clear();
        self.editor.push(s, &mut resolved);
        if last {
            self.editor.finish(&mut resolved);
        }
        let mut from = resolved.len();
        if let Some(at) = self.editor.first_edit()
            && self.line_redactor.is_some()
        {
            self.line_redacting = true;
            from = at;
        } else if self.line_redacting {
            from = 0;
        }
        self.after_redact(&resolved[..from]);
        if let Some(r) = self.line_redactor.as_mut().filter(|_| self.line_redacting) {
            let mut out = std::mem::take(&mut self.redacted_lines);
            out.clear();
            r.push(&resolved.as_bytes()[from..], &mut out);
            if last {
                r.finish(&mut out);
            }
            match std::str::from_utf8(&out) {
                Ok(s) => self.after_redact(s),
                Err(_) => self.after_redact(&String::from_utf8_lossy(&out)),
            }
            self.redacted_lines = out;
        }
        self.resolved = resolved;
    }

    fn after_redact(&mut self, s: &str) {
        if self.cfg.max_columns > 0 {
            let mut capped = std::mem::take(&mut self.capped);
            capped.clear();
            self.cap_columns(s, &mut capped);
            self.retain(&capped);
            self.capped = capped;
        } else {
            self.retain(s);
        }
    }

    fn cap_columns(&mut self, s: &str, out: &mut String) {
        let max = self.cfg.max_columns;
        for piece in s.split_inclusive('\n') {
            let (body, nl) = match piece.strip_suffix('\n') {
                Some(b) => (b, true),
                None => (piece, false),
            };
            if !self.capping {
                let room = max - self.col;
                if body.len() <= room {
                    out.push_str(body);
                    self.col += body.len();
                } else {
                    let mut cut = room;
                    while !body.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    out.push_str(&body[..cut]);
                    out.push('…');
                    self.capping = true;
                    self.capped_any = true;
                }
            }
            if nl {
                out.push('\n');
                self.col = 0;
                self.capping = false;
            }
        }
    }

    fn retain(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let nl = memchr::memchr_iter(b'\n', s.as_bytes()).count();
        self.newlines += nl as u64;
        self.line_open = !s.ends_with('\n');
        if self.collect_events {
            self.pending.push_str(s);
        }
        if let Some(h) = self.cfg.head_lines {
            self.retain_head_lines(s, h);
            return;
        }
        let mut rest = s;
        if self.cfg.head_bytes > 0 && !self.head_done {
            let room = self.cfg.head_bytes - self.head.len();
            let mut cut = rest.len().min(room);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            self.head.push_str(&rest[..cut]);
            rest = &rest[cut..];
            if !rest.is_empty() {
                self.head_done = true;
            }
        }
        if rest.is_empty() {
            return;
        }
        if rest.len() > self.tail_cap {
            // Only its last `tail_cap` bytes can stay (cut where `trim_tail` would cut
            // them): not copied whole only to be cut.
            let mut cut = rest.len() - self.tail_cap;
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            self.tail.clear();
            self.tail.push_str(&rest[cut..]);
            self.tail_trimmed = true;
            return;
        }
        self.tail.push_str(rest);
        // Trim in amortized steps so a flood of small chunks costs O(1) each.
        if self.tail.len() > self.tail_cap.saturating_mul(2).max(self.tail_cap + 65536) {
            self.trim_tail();
        }
    }

    fn trim_tail(&mut self) {
        if self.tail.len() <= self.tail_cap {
            return;
        }
        let mut cut = self.tail.len() - self.tail_cap;
        while !self.tail.is_char_boundary(cut) {
            cut += 1;
        }
        self.tail.drain(..cut);
        self.tail_trimmed = true;
    }

    fn retain_head_lines(&mut self, s: &str, limit: usize) {
        if self.head_done {
            self.dropped_after_head = true;
            return;
        }
        let mut take = s.len();
        let mut lines_in = 0;
        for (n, pos) in memchr::memchr_iter(b'\n', s.as_bytes()).enumerate() {
            if self.head_newlines + n + 1 >= limit {
                take = pos + 1;
                lines_in = n + 1;
                self.head_done = true;
                break;
            }
            lines_in = n + 1;
        }
        let room = self.cfg.max_bytes - self.head.len();
        if take > room {
            take = room;
            while !s.is_char_boundary(take) {
                take -= 1;
            }
            lines_in = memchr::memchr_iter(b'\n', &s.as_bytes()[..take]).count();
            self.head_done = true;
        }
        self.head.push_str(&s[..take]);
        self.head_newlines += lines_in;
        if take < s.len() {
            self.dropped_after_head = true;
        }
    }

    /// End of stream: flush partial state, apply line limits, decide on the artifact.
    pub fn finish(self) -> Retained {
        self.finish_previewed(None)
    }

    /// [`finish`](Self::finish), for a caller that shows only the last `preview`
    /// lines of the text (a terminal's collapsed preview): when that hides lines, the
    /// artifact is kept although nothing was cut, so no line shown nowhere is lost.
    pub fn finish_previewed(mut self, preview: Option<usize>) -> Retained {
        self.end_input();
        self.trim_tail();
        let mut total_lines = self.newlines + u64::from(self.line_open);
        if let Some(n) = self
            .cfg
            .stop_after_lines
            .filter(|_| self.stopped_reading && self.view.is_none())
        {
            total_lines = total_lines.min(n as u64);
        }
        let view = if self.cfg.head_lines.is_some() {
            self.head_view()
        } else if self.head_done && self.tail_trimmed && self.cfg.tail_lines.is_none() {
            self.middle_view(total_lines)
        } else {
            self.tail_view(total_lines)
        };
        let view = self.apply_tail_lines(view);
        self.conclude(view, total_lines, preview)
    }

    /// End of the command's output: release what the sanitizer and the redactors
    /// were holding back (an incomplete character, a possible start of a secret), so
    /// it reaches the live text ([`take_pending`](Self::take_pending)) before the run
    /// ends rather than only the final result. [`finish`](Self::finish) calls it too;
    /// calling it again is harmless, and so is more input after it (still redacted).
    pub fn end_input(&mut self) {
        self.stdout_ended();
        let mut rest = String::new();
        self.decoder.finish(&mut rest);
        if let Some(r) = self.text_redactor.as_mut() {
            let mut out = Vec::new();
            r.push(rest.as_bytes(), &mut out);
            r.finish(&mut out);
            rest = String::from_utf8_lossy(&out).into_owned();
        }
        self.resolve(&rest, true, None);
        if let Some(r) = self.raw_redactor.as_mut() {
            let mut out = Vec::new();
            r.finish(&mut out);
            self.spill.push(&out);
        }
    }
}

/// What retention kept, before the notice is written.
struct View {
    text: String,
    first: u64,
    by_bytes: bool,
    by_lines: bool,
    direction: &'static str,
    middle: Option<Middle>,
}

/// Where a head+tail view's two parts sit in the stream.
struct Middle {
    head_last: u64,
    head_partial: bool,
    tail_first: u64,
    tail_partial: bool,
}

pub fn count_lines(s: &str) -> u64 {
    if s.is_empty() {
        return 0;
    }
    let nl = memchr::memchr_iter(b'\n', s.as_bytes()).count() as u64;
    nl + u64::from(!s.ends_with('\n'))
}

/// Byte offset where the last `n` lines of `s` begin.
fn nth_line_start_from_end(s: &str, n: usize) -> usize {
    let body = s.strip_suffix('\n').unwrap_or(s);
    memchr::memrchr_iter(b'\n', body.as_bytes())
        .nth(n.saturating_sub(1))
        .map_or(0, |p| p + 1)
}

/// [`nth_line_start_from_end`] for raw bytes.
fn nth_line_start_from_end_bytes(s: &[u8], n: usize) -> usize {
    let body = s.strip_suffix(b"\n").unwrap_or(s);
    memchr::memrchr_iter(b'\n', body)
        .nth(n.saturating_sub(1))
        .map_or(0, |p| p + 1)
}

/// After a byte cut, the first retained line is usually a fragment: drop it when a
/// whole line follows. Returns true when the text now starts at a line start.
fn drop_partial_first_line(s: &mut String) -> bool {
    match s.find('\n') {
        Some(p) if p + 1 < s.len() => {
            s.drain(..=p);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sanitize::sanitize;

    const TOKEN: &str = "token-value-0123456789";
    const KEY: &str = "crlf-key\r\nvalue-xy";

    /// The live text and the artifact of `chunks` through a sink that spills.
    fn run(chunks: &[&[u8]]) -> (String, Vec<u8>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.bash.log");
        let file = File::create(&path).expect("artifact file");
        let cfg = SinkConfig {
            max_bytes: 64,
            redact: Secrets::new(&[
                ("A_TOKEN".into(), TOKEN.into()),
                ("B_KEY".into(), KEY.into()),
            ]),
            ..Default::default()
        };
        let artifact = Allocated {
            id: 1,
            path: path.clone(),
            file,
            max_bytes: u64::MAX,
            dir: std::sync::Arc::new(File::open(dir.path()).expect("dir").into()),
        };
        let mut sink = OutputSink::new(cfg, Some(artifact), true);
        let mut live = String::new();
        for c in chunks {
            sink.push(c);
            live.extend(sink.take_pending());
        }
        sink.end_input();
        live.extend(sink.take_pending());
        let retained = sink.finish();
        assert!(retained.artifact.is_some(), "the output was cut");
        (live, std::fs::read(&path).expect("artifact"))
    }

    /// A stdout-only lift: a head's lines reach the text in order with stderr, a
    /// tail's after the stderr read before stdout ended; stderr is kept whole, the
    /// counts are the command's; however stdout is chunked.
    #[test]
    fn a_stdout_view_keeps_stderr_whole_and_in_place() {
        let stdout: Vec<u8> = (1..=30)
            .map(|i| format!("o{i}\n"))
            .collect::<String>()
            .into_bytes();
        let first3 = "o1\no2\no3\n";
        for head in [true, false] {
            for cut in 0..=stdout.len() {
                let cfg = SinkConfig {
                    max_bytes: 1 << 16,
                    head_lines: head.then_some(3),
                    tail_lines: (!head).then_some(3),
                    stdout_only: true,
                    ..Default::default()
                };
                let mut sink = OutputSink::new(cfg, None, true);
                sink.push_stderr(b"e1\n");
                sink.push(&stdout[..cut]);
                sink.push_stderr(b"e2\n");
                sink.push(&stdout[cut..]);
                sink.stdout_ended();
                sink.push_stderr(b"e3\n");
                let r = sink.finish();
                let want = if head {
                    let at = cut.min(first3.len());
                    format!("e1\n{}e2\n{}e3\n", &first3[..at], &first3[at..])
                } else {
                    "e1\ne2\no28\no29\no30\ne3\n".to_string()
                };
                assert_eq!(r.text, want, "head {head}, cut {cut}");
                assert_eq!(r.total_lines, 33, "head {head}, cut {cut}");
                assert!(r.truncated, "27 stdout lines hidden");
            }
        }
    }

    /// A tail view holds at most about twice the retention budget, whatever stdout
    /// prints, and still shows its last lines.
    #[test]
    fn a_stdout_tail_view_is_bounded() {
        let cfg = SinkConfig {
            max_bytes: 1024,
            tail_lines: Some(3),
            stdout_only: true,
            ..Default::default()
        };
        let mut sink = OutputSink::new(cfg, None, false);
        let line = [b'x'; 99];
        for _ in 0..100_000 {
            sink.push(&line);
            sink.push(b"\n");
            let held = sink.view.as_ref().map_or(0, |v| v.held.len());
            assert!(held <= 2048 + 100, "{held}");
        }
        sink.push(b"last\n");
        let r = sink.finish();
        assert!(
            r.text.ends_with("x\nlast\n") && r.text.lines().count() == 3,
            "{:?}",
            r.text
        );
        assert_eq!(r.total_lines, 100_001);
    }

    /// A secret written whole and then partly overwritten is masked before the
    /// overwrite (no `xx…CRET`); one put together by overstrike or a CR redraw is
    /// masked in the line it makes; however the reads fall.
    #[test]
    fn line_edits_cannot_reveal_a_secret() {
        let cases: [(String, &str); 4] = [
            (format!("{TOKEN}\rxx\n"), "xxEDACTED:A_TOKEN]\n"),
            (
                format!("{}\x08\x08{}\n", &TOKEN[..TOKEN.len() - 2], "xx"),
                &format!("{}xx\n", &TOKEN[..TOKEN.len() - 4]),
            ),
            (
                format!(
                    "{}ZZ\x08\x08{}\n",
                    &TOKEN[..TOKEN.len() - 2],
                    &TOKEN[TOKEN.len() - 2..]
                ),
                "[REDACTED:A_TOKEN]\n",
            ),
            (
                format!("xxxxxx{}\rtoken-", &TOKEN[6..]),
                "[REDACTED:A_TOKEN]",
            ),
        ];
        for (raw, want) in &cases {
            let raw = raw.as_bytes();
            for a in 0..=raw.len() {
                for b in [a, (a + 3).min(raw.len()), raw.len()] {
                    let (live, _) = run(&[&raw[..a], &raw[a..b], &raw[b..], &[b'\n'; 70]]);
                    let live = live.trim_end_matches('\n');
                    assert_eq!(live, want.trim_end_matches('\n'), "{raw:?} cut at {a} {b}");
                }
            }
        }
    }

    /// Plain stretches (one search serves both streams) and stretches the
    /// sanitizer changes (each stream searched on its own), cut anywhere.
    #[test]
    fn both_streams_are_masked_however_the_reads_fall() {
        let mut raw = String::new();
        for i in 0..90 {
            match if i < 30 { 0 } else { i % 5 } {
                0 => raw.push_str(&format!("line {i} {TOKEN} plain\n")),
                1 => raw.push_str(&format!("\x1b[1mbold {i}\x1b[0m {TOKEN}\r\n")),
                2 => raw.push_str(&format!("key {KEY} é {i}\n")),
                _ => raw.push_str(&format!("filler {i} the quick brown fox jumps\n")),
            }
        }
        let raw = raw.as_bytes();
        let want_raw = String::from_utf8_lossy(raw)
            .replace(TOKEN, "[REDACTED:A_TOKEN]")
            .replace(KEY, "[REDACTED:B_KEY]");
        let want_text = sanitize(want_raw.as_bytes());
        for a in (0..raw.len()).step_by(41) {
            for b in [a, a + 1, a + 150, a + 700] {
                let b = b.min(raw.len());
                let (live, artifact) = run(&[&raw[..a], &raw[a..b], &raw[b..]]);
                assert_eq!(live, want_text, "text, cuts {a} {b}");
                assert_eq!(
                    String::from_utf8_lossy(&artifact),
                    want_raw,
                    "artifact, cuts {a} {b}"
                );
            }
        }
    }

    /// The fast way for plain text (no copy of what the decoder and the line editor
    /// leave as it is) gives exactly what the general way gives, for any bytes, any
    /// reads and any settings: text, counts, cuts and the live stream.
    mod fast_text {
        use super::*;
        use proptest::prelude::*;

        fn stream() -> impl Strategy<Value = Vec<&'static [u8]>> {
            let atoms: Vec<&'static [u8]> = vec![
                b"plain text ",
                b"a line\n",
                b"\n",
                b"\t",
                b"\r",
                b"\r\n",
                b"\x08",
                b"\x1b[2K",
                b"\x1b[K",
                b"\x1b[3D",
                b"\x1b[G",
                b"\x1b[31m",
                b"\x1b]0;title\x07",
                b"\x1b",
                b"\x00",
                b"\x7f",
                b"\xc3\xa9",
                b"\xe2\x98",
                b"\x83",
                b"\xc2\x85",
                b"\xff",
                b"token-value-",
                b"0123456789",
                b"crlf-key\r\nvalue-xy",
                &[b'x'; 9000],
                &[b'y'; 70_000],
                &[b'z'; crate::output::sanitize::MAX_OPEN_LINE],
            ];
            prop::collection::vec(prop::sample::select(atoms), 0..60)
        }

        fn config() -> impl Strategy<Value = SinkConfig> {
            (200usize..3000, any::<u8>(), 1usize..20).prop_map(|(max_bytes, flags, lines)| {
                SinkConfig {
                    max_bytes,
                    head_bytes: if flags & 1 == 1 { max_bytes / 3 } else { 0 },
                    max_columns: if flags & 2 == 2 { 12 + lines } else { 0 },
                    head_lines: (flags & 4 == 4).then_some(lines),
                    tail_lines: (flags & 8 == 8).then_some(lines),
                    stop_after_lines: None,
                    redact: if flags & 16 == 16 {
                        Secrets::new(&[
                            ("A_TOKEN".into(), TOKEN.into()),
                            ("B_KEY".into(), KEY.into()),
                        ])
                    } else {
                        Secrets::default()
                    },
                    stdout_only: flags & 32 == 32,
                }
            })
        }

        /// `atoms` in reads that end at `cuts` (at the end of an atom, as a program's
        /// writes do, or anywhere; every other read as stderr when `stderr`) through
        /// `sink`: what it retains, and its live text.
        fn feed(
            mut sink: OutputSink,
            atoms: &[&[u8]],
            cuts: &[(bool, usize)],
            stderr: bool,
        ) -> (Retained, String) {
            let data = atoms.concat();
            let ends: Vec<usize> = atoms
                .iter()
                .scan(0, |at, a| {
                    *at += a.len();
                    Some(*at)
                })
                .collect();
            let mut points: Vec<usize> = cuts
                .iter()
                .map(|&(aligned, n)| match aligned {
                    true if !ends.is_empty() => ends[n % ends.len()],
                    _ => n % (data.len() + 1),
                })
                .collect();
            points.sort_unstable();
            let (mut at, mut live) = (0, String::new());
            for (n, p) in points.into_iter().chain([data.len()]).enumerate() {
                let read = &data[at..p.max(at)];
                if stderr && n % 2 == 1 {
                    sink.push_stderr(read);
                } else {
                    sink.push(read);
                }
                at = p.max(at);
                live.extend(sink.take_pending());
            }
            sink.end_input();
            live.extend(sink.take_pending());
            (sink.finish(), live)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(384))]

            #[test]
            fn fast_and_general_text_agree(
                atoms in stream(),
                cuts in prop::collection::vec((any::<bool>(), any::<usize>()), 0..16),
                cfg in config(),
                stderr in any::<bool>(),
            ) {
                let fast = feed(OutputSink::new(cfg.clone(), None, true), &atoms, &cuts, stderr);
                let general = feed(
                    OutputSink::new(cfg, None, true).general_text_only(),
                    &atoms,
                    &cuts,
                    stderr,
                );
                let counts = |r: &Retained| {
                    (r.total_bytes, r.total_lines, r.output_bytes, r.output_lines, r.truncated)
                };
                prop_assert_eq!(&fast.0.text, &general.0.text);
                prop_assert_eq!(&fast.0.notice, &general.0.notice);
                prop_assert_eq!(&fast.0.truncation, &general.0.truncation);
                prop_assert_eq!(counts(&fast.0), counts(&general.0));
                prop_assert_eq!(&fast.1, &general.1);
            }
        }
    }
}
