//! Masking of secret values (profile `output.redact`): which values are secrets, and
//! replacing them with `[REDACTED:NAME]` in streams and in strings.
//!
//! A secret is the value of a variable whose NAME matches one of the globs
//! (case-insensitively), taken from agentbash's own environment (a secret excluded from
//! the run's env can still reach the output through a file), from the run's env
//! (`env.set`, `--env`) and from what the run's session exported earlier. With any glob
//! set, the password of a URL with userinfo (`scheme://user:password@host`) in any of
//! those variables is a secret too, named after the variable.
//!
//! All values are found in one pass, whatever their number (a skipping multi-value
//! search for the long ones, an Aho-Corasick automaton for the short ones): the cost
//! is that of reading the output once, not once per secret. A value
//! can straddle two reads, so a stream holds back the last `longest - 1` bytes of each
//! chunk until the next chunk (or the end) shows whether they start a secret. Each value
//! is looked for in the form it takes where it is looked for: as given and with its LF
//! line breaks as CRLF (a terminal's ONLCR) in the raw stream (the artifact), and in
//! the shown text both as written (escapes and controls removed, CR and BS kept: the
//! text before line edits are resolved) and as the sanitizer finally shows it.

use super::sanitize::{decode, sanitize};
use aho_corasick::{AhoCorasick, MatchKind};
use std::borrow::Cow;
use std::sync::Arc;

/// Values shorter than this are too likely to be ordinary words to mask. (A URL's
/// password is masked at any length where it appears as `:password@`.)
pub const MIN_SECRET_LEN: usize = 8;

/// Where a value is looked for, which decides the form it takes there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The command's raw bytes (the artifact).
    Raw,
    /// Sanitized text (what is shown and retained).
    Text,
}

/// The secrets of one run, compiled once and shared (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    inner: Option<Arc<Compiled>>,
}

#[derive(Debug)]
struct Compiled {
    /// The variable names the secrets came from (sorted, deduplicated).
    names: Vec<String>,
    raw: Arc<Needles>,
    text: Arc<Needles>,
    /// Both forms, for strings of any origin (the command, a path, a message).
    any: Arc<Needles>,
}

/// Values to find and what replaces each. Values of [`LONG_LEN`] bytes or more (most
/// secrets: tokens, keys, passwords) are found by a [`LongFinder`], which skips
/// through text that cannot hold one; the others by an Aho-Corasick automaton. Both
/// take a single pass whatever the number of values.
#[derive(Debug)]
struct Needles {
    /// Every value looked for (for [`Redactor::flush_idle`]).
    values: Vec<Box<[u8]>>,
    long: Option<LongFinder>,
    short: Option<AhoCorasick>,
    /// The index in `replacements` of each value `short` finds.
    short_ids: Vec<usize>,
    replacements: Vec<Box<[u8]>>,
    longest: usize,
}

/// A match: start, end, index of the replacement.
type Found = (usize, usize, usize);

impl Needles {
    /// Deduplicated list (the first entry for a value wins; pairs arrive sorted by
    /// name), for comparing the forms before building.
    fn dedup(mut list: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut seen = std::collections::HashSet::new();
        list.retain(|(needle, _)| !needle.is_empty() && seen.insert(needle.clone()));
        list
    }

    fn build(list: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        let longest = list.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let (mut long, mut short, mut short_ids) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (n, _)) in list.iter().enumerate() {
            if n.len() >= LONG_LEN {
                long.push((n.clone(), i));
            } else {
                short.push(n.clone());
                short_ids.push(i);
            }
        }
        // Building fails only past 2^31 automaton states; the values come from
        // environments the kernel has accepted (a few MiB at most), far below that.
        let short = (!short.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&short)
                    .ok()
            })
            .flatten();
        Needles {
            values: list
                .iter()
                .map(|(n, _)| n.clone().into_boxed_slice())
                .collect(),
            long: (!long.is_empty()).then(|| LongFinder::new(long)),
            short,
            short_ids,
            replacements: list
                .into_iter()
                .map(|(_, r)| r.into_boxed_slice())
                .collect(),
            longest,
        }
    }

    fn is_empty(&self) -> bool {
        self.long.is_none() && self.short.is_none()
    }

    fn find_short(&self, buf: &[u8], from: usize) -> Option<Found> {
        let ac = self.short.as_ref()?;
        let m = ac.find(aho_corasick::Input::new(buf).span(from..buf.len()))?;
        Some((m.start(), m.end(), self.short_ids[m.pattern().as_usize()]))
    }

    /// Emit `buf` masked, up to the last secret that starts before `limit`; returns
    /// where the unemitted rest begins. Matches are leftmost-longest over all values
    /// (the earlier of the two finders' next matches; at the same start, the longer).
    /// A match starting before `limit` is final: the longest candidate starting
    /// there, or anywhere earlier, ends inside `buf`.
    fn mask(&self, buf: &[u8], limit: usize, out: &mut Vec<u8>) -> usize {
        let mut cursor = 0;
        // Each finder's next match at or after `cursor` (searched again only once
        // the cursor has passed its start).
        let mut next_long: Option<Option<Found>> = None;
        let mut next_short: Option<Option<Found>> = None;
        loop {
            let stale = |n: &Option<Option<Found>>| match n {
                None => true,
                Some(Some((start, _, _))) => *start < cursor,
                Some(None) => false,
            };
            if stale(&next_long) {
                next_long = Some(self.long.as_ref().and_then(|f| f.find(buf, cursor)));
            }
            if stale(&next_short) {
                next_short = Some(self.find_short(buf, cursor));
            }
            let best = match (next_long.flatten(), next_short.flatten()) {
                (Some(a), Some(b)) => Some(if (b.0, a.1) < (a.0, b.1) { b } else { a }),
                (a, b) => a.or(b),
            };
            match best {
                Some((start, end, id)) if start < limit => {
                    out.extend_from_slice(&buf[cursor..start]);
                    out.extend_from_slice(&self.replacements[id]);
                    cursor = end;
                }
                _ => return cursor,
            }
        }
    }

    fn mask_str<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut out = Vec::new();
        let cursor = self.mask(s.as_bytes(), s.len(), &mut out);
        if cursor == 0 {
            return Cow::Borrowed(s);
        }
        out.extend_from_slice(&s.as_bytes()[cursor..]);
        Cow::Owned(into_string(out))
    }
}

/// Values at least this long go to the [`LongFinder`].
const LONG_LEN: usize = 16;

/// Finds values of at least [`LONG_LEN`] bytes, leftmost-longest (Wu-Manber): a
/// window as long as the shortest value slides over the text; a table says, for the
/// window's last three bytes, how far it can move without passing the start of a
/// value (most of the time: the whole window). Only where it cannot move is the
/// window's first 8 bytes looked up, and the values starting with them compared.
struct LongFinder {
    /// The window: the length of the shortest value (at most 64).
    window: usize,
    shift: Box<[u8]>,
    prefix: PrefixTable,
}

/// First 8 bytes → the values starting with them (longest first), with the index of
/// each one's replacement.
type PrefixTable = std::collections::HashMap<u64, Vec<(Box<[u8]>, usize)>, PrefixHash>;

impl std::fmt::Debug for LongFinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LongFinder")
            .field("window", &self.window)
            .field("prefixes", &self.prefix.len())
            .finish()
    }
}

const BLOCK: usize = 3;
const SHIFT_BITS: u32 = 16;

/// The hashed last [`BLOCK`] bytes of the window ending at `end`.
#[inline]
fn block_at(b: &[u8], end: usize) -> usize {
    let x = u32::from(b[end - 2]) | (u32::from(b[end - 1]) << 8) | (u32::from(b[end]) << 16);
    (x.wrapping_mul(0x9E37_79B1) >> (32 - SHIFT_BITS)) as usize
}

#[inline]
fn prefix_at(b: &[u8], at: usize) -> u64 {
    let mut k = [0u8; 8];
    k.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(k)
}

/// Multiply-shift hashing of the 8-byte prefixes (SipHash would cost more than the
/// lookup it guards).
#[derive(Debug, Default, Clone, Copy)]
struct PrefixHash;

#[derive(Debug, Default, Clone, Copy)]
struct PrefixHasher(u64);

impl std::hash::Hasher for PrefixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(26);
    }
}

impl std::hash::BuildHasher for PrefixHash {
    type Hasher = PrefixHasher;
    fn build_hasher(&self) -> PrefixHasher {
        PrefixHasher(0)
    }
}

impl LongFinder {
    /// From (value, replacement index); every value is at least [`LONG_LEN`] long.
    fn new(values: Vec<(Vec<u8>, usize)>) -> Self {
        let window = values
            .iter()
            .map(|(v, _)| v.len())
            .min()
            .unwrap_or(LONG_LEN)
            .min(64);
        let mut shift = vec![(window - BLOCK + 1) as u8; 1 << SHIFT_BITS].into_boxed_slice();
        let mut prefix = PrefixTable::default();
        for (v, id) in values {
            for q in BLOCK - 1..window {
                let h = block_at(&v, q);
                shift[h] = shift[h].min((window - 1 - q) as u8);
            }
            prefix
                .entry(prefix_at(&v, 0))
                .or_default()
                .push((v.into_boxed_slice(), id));
        }
        for list in prefix.values_mut() {
            list.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        }
        LongFinder {
            window,
            shift,
            prefix,
        }
    }

    /// The leftmost-longest value starting at or after `from`.
    fn find(&self, b: &[u8], from: usize) -> Option<Found> {
        let mut end = from + self.window - 1;
        while end < b.len() {
            let s = self.shift[block_at(b, end)];
            if s > 0 {
                end += usize::from(s);
                continue;
            }
            let start = end + 1 - self.window;
            if let Some(list) = self.prefix.get(&prefix_at(b, start))
                && let Some((v, id)) = list.iter().find(|(v, _)| b[start..].starts_with(v))
            {
                return Some((start, start + v.len(), *id));
            }
            end += 1;
        }
        None
    }
}

fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `[REDACTED:NAME]`.
fn masked(name: &str) -> String {
    format!("[REDACTED:{name}]")
}

impl Secrets {
    /// From (NAME, value) pairs: every value at least [`MIN_SECRET_LEN`] long is a
    /// secret; shorter ones are ignored.
    pub fn new(pairs: &[(String, String)]) -> Self {
        Self::build(pairs, &[])
    }

    /// The secrets of a run: the variables `globs` name (case-insensitively) in
    /// agentbash's environment, the run's environment and the session's exports,
    /// plus the URL passwords in all of them. No globs, no secrets. Values the
    /// hardening layer sets (`SSH_ASKPASS`, ...) are agentbash's own, not secrets.
    pub fn for_run<'a>(
        globs: &[String],
        run_env: &crate::shell::env::BuiltEnv,
        session_env: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Self {
        if globs.is_empty() {
            return Secrets::default();
        }
        let hardened = |k: &str, v: &str| {
            run_env.changes.get(k) == Some(&crate::shell::env::EnvSource::Hardening)
                && run_env.vars.get(k).is_some_and(|h| h == v)
        };
        let mut vars: Vec<(String, String)> = std::env::vars()
            .chain(run_env.vars.iter().map(|(k, v)| (k.clone(), v.clone())))
            .chain(session_env.into_iter().map(|(k, v)| (k.clone(), v.clone())))
            .filter(|(k, v)| !hardened(k, v))
            .collect();
        vars.sort_unstable();
        vars.dedup();
        let globs = LoweredGlobs::new(globs);
        let (named, others): (Vec<_>, Vec<_>) =
            vars.into_iter().partition(|(k, _)| globs.matches(k));
        Self::build(&named, &others)
    }

    /// `named`: whole values are secrets; `urls_only`: only the URL passwords in them.
    fn build(named: &[(String, String)], urls_only: &[(String, String)]) -> Self {
        let (mut raw, mut text) = (Vec::new(), Vec::new());
        let mut names = Vec::new();
        let add = |name: &str, value: &str, raw: &mut Vec<_>, text: &mut Vec<_>| {
            if value.len() < MIN_SECRET_LEN {
                return false;
            }
            let m = masked(name).into_bytes();
            let crlf = value.contains('\n').then(|| value.replace('\n', "\r\n"));
            // The shown text is searched as written (decoded, line edits not yet
            // resolved) and as finally shown (sanitized): a value in both forms.
            for form in std::iter::once(value).chain(crlf.as_deref()) {
                raw.push((form.as_bytes().to_vec(), m.clone()));
                let written = decode(form.as_bytes());
                if written.len() >= MIN_SECRET_LEN {
                    text.push((written.into_bytes(), m.clone()));
                }
            }
            let clean = sanitize(value.as_bytes());
            if clean.len() >= MIN_SECRET_LEN {
                text.push((clean.into_bytes(), m));
            }
            true
        };
        for (name, value) in named {
            if add(name, value, &mut raw, &mut text) {
                names.push(name.clone());
            }
        }
        for (name, value) in named.iter().chain(urls_only) {
            for pw in url_passwords(value) {
                // In its URL the password is unmistakable, however short.
                let in_url = format!(":{pw}@").into_bytes();
                let m = format!(":{}@", masked(name)).into_bytes();
                raw.push((in_url.clone(), m.clone()));
                text.push((in_url, m));
                add(name, pw, &mut raw, &mut text);
                if let Some(decoded) = percent_decode(pw) {
                    add(name, &decoded, &mut raw, &mut text);
                }
                names.push(name.clone());
            }
        }
        if raw.is_empty() && text.is_empty() {
            return Secrets::default();
        }
        names.sort_unstable();
        names.dedup();
        // Usually a value looks the same in both forms: one finder then serves all.
        let (raw, text) = (Needles::dedup(raw), Needles::dedup(text));
        let any = Needles::dedup(raw.iter().chain(&text).cloned().collect());
        let same_text = text == raw;
        let same_any = any == raw;
        let raw = Arc::new(Needles::build(raw));
        let text = if same_text {
            Arc::clone(&raw)
        } else {
            Arc::new(Needles::build(text))
        };
        let any = if same_any {
            Arc::clone(&raw)
        } else {
            Arc::new(Needles::build(any))
        };
        Secrets {
            inner: Some(Arc::new(Compiled {
                names,
                raw,
                text,
                any,
            })),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// The variables whose values are masked.
    pub fn names(&self) -> &[String] {
        self.inner.as_ref().map_or(&[], |c| &c.names)
    }

    /// `s` with every secret masked (borrowed when there is none in it).
    pub fn mask<'a>(&self, s: &'a str) -> Cow<'a, str> {
        match &self.inner {
            Some(c) => c.any.mask_str(s),
            None => Cow::Borrowed(s),
        }
    }

    pub fn mask_in_place(&self, s: &mut String) {
        if let Cow::Owned(m) = self.mask(s) {
            *s = m;
        }
    }

    /// A streaming redactor for `form`, or `None` when there is nothing to mask.
    pub fn redactor(&self, form: Form) -> Option<Redactor> {
        let c = self.inner.as_ref()?;
        let needles = match form {
            Form::Raw => &c.raw,
            Form::Text => &c.text,
        };
        if needles.is_empty() {
            return None;
        }
        Some(Redactor {
            secrets: Arc::clone(c),
            form,
            hold: Vec::new(),
        })
    }

    /// Every string in a JSON value masked (object keys are names, left alone).
    pub fn mask_json(&self, v: &mut serde_json::Value) {
        if self.is_empty() {
            return;
        }
        match v {
            serde_json::Value::String(s) => self.mask_in_place(s),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.mask_json(x)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| self.mask_json(x)),
            _ => {}
        }
    }
}

/// Does any of the `output.redact` globs name `name`? Case-insensitive: `*token*`
/// and `*TOKEN*` both catch `GITHUB_TOKEN` and `npm_token`.
pub fn name_matches(globs: &[String], name: &str) -> bool {
    LoweredGlobs::new(globs).matches(name)
}

/// Globs lowercased once; those without a wildcard looked up in a set (a profile
/// may list many exact names).
struct LoweredGlobs {
    exact: std::collections::HashSet<String>,
    patterns: Vec<String>,
}

impl LoweredGlobs {
    fn new(globs: &[String]) -> Self {
        let (exact, patterns): (Vec<String>, Vec<String>) = globs
            .iter()
            .map(|g| g.to_ascii_lowercase())
            .partition(|g| !g.contains(['*', '?']));
        LoweredGlobs {
            exact: exact.into_iter().collect(),
            patterns,
        }
    }

    fn matches(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        self.exact.contains(&name)
            || self
                .patterns
                .iter()
                .any(|g| crate::shell::env::glob_match(g, &name))
    }
}

/// The passwords of the URLs with userinfo in `value` (`postgres://u:pw@host/db`,
/// also when the URL is one item of a list or sits inside other text).
pub fn url_passwords(value: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let b = value.as_bytes();
    let mut from = 0;
    while let Some(p) = value[from..].find("://") {
        let sep = from + p;
        from = sep + 3;
        // The scheme: a letter, then letters, digits, `+`, `-`, `.`, right before.
        let scheme_start = b[..sep]
            .iter()
            .rposition(|c| !(c.is_ascii_alphanumeric() || b"+-.".contains(c)))
            .map_or(0, |i| i + 1);
        if scheme_start == sep || !b[scheme_start].is_ascii_alphabetic() {
            continue;
        }
        // The authority ends at the path, query or fragment, or at a character no
        // URL has unencoded (the end of the list item).
        let rest = &value[from..];
        let end = rest
            .find(|c: char| "/?#".contains(c) || c.is_whitespace() || "\"'<>`".contains(c))
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        let Some(at) = authority.rfind('@') else {
            continue;
        };
        if let Some((_, pw)) = authority[..at].split_once(':')
            && !pw.is_empty()
        {
            found.push(pw);
        }
    }
    found
}

/// `p%40ss` → `p@ss`, when the password is percent-encoded (`None` when it is not,
/// or does not decode to UTF-8).
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return None;
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok().filter(|d| d != s)
}

/// `at`, moved back to the start of the UTF-8 character it falls in (at most 3 bytes:
/// raw bytes need not be UTF-8, and a run of continuation bytes must not make the
/// held tail grow).
fn char_boundary_before(buf: &[u8], mut at: usize) -> usize {
    let floor = at.saturating_sub(3);
    while at > floor && at < buf.len() && (buf[at] & 0xc0) == 0x80 {
        at -= 1;
    }
    at
}

/// Masks one stream ([`Secrets::redactor`]).
#[derive(Debug, Clone)]
pub struct Redactor {
    secrets: Arc<Compiled>,
    form: Form,
    hold: Vec<u8>,
}

impl Redactor {
    fn needles(&self) -> &Needles {
        match self.form {
            Form::Raw => &self.secrets.raw,
            Form::Text => &self.secrets.text,
        }
    }

    /// Would this redactor, given the same bytes, give what `other` gives? (The same
    /// values to find and the same bytes held back.)
    pub fn in_step_with(&self, other: &Redactor) -> bool {
        std::ptr::eq(self.needles(), other.needles()) && self.hold == other.hold
    }

    /// After `other` masked a chunk this one would have been given too, with
    /// [`in_step_with`](Self::in_step_with) true before: take its state.
    pub fn catch_up(&mut self, other: &Redactor) {
        self.hold.clone_from(&other.hold);
    }

    /// Mask `chunk`, appending what is safe to emit to `out`. The held-back tail is
    /// cut on a UTF-8 character boundary (in both forms, so that redactors of the two
    /// forms fed the same bytes stay in step).
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let reach = self.needles().longest.saturating_sub(1);
        if chunk.len() > 2 * reach + 64 {
            return self.push_long(chunk, reach, out);
        }
        let mut buf = std::mem::take(&mut self.hold);
        buf.extend_from_slice(chunk);
        self.mask_held(buf, out);
    }

    /// [`push`](Self::push) for a chunk much longer than any secret, without copying
    /// it behind what was held: first the secrets starting in the held bytes (they
    /// end within `reach` bytes of the chunk), then the chunk from where they end.
    fn push_long(&mut self, chunk: &[u8], reach: usize, out: &mut Vec<u8>) {
        let mut start = 0;
        if !self.hold.is_empty() {
            let held = self.hold.len();
            let mut edge = std::mem::take(&mut self.hold);
            edge.extend_from_slice(&chunk[..reach]);
            let cursor = self.needles().mask(&edge, held, out);
            if cursor < held {
                out.extend_from_slice(&edge[cursor..held]);
            } else {
                start = cursor - held;
            }
            edge.clear();
            self.hold = edge;
        }
        let rest = &chunk[start..];
        let safe = char_boundary_before(rest, rest.len().saturating_sub(reach));
        let cursor = self.needles().mask(rest, safe, out);
        let keep_from = cursor.max(safe);
        out.extend_from_slice(&rest[cursor..keep_from]);
        self.hold.extend_from_slice(&rest[keep_from..]);
    }

    /// Mask `buf` (what was held plus the new chunk), holding back its tail.
    fn mask_held(&mut self, mut buf: Vec<u8>, out: &mut Vec<u8>) {
        let needles = self.needles();
        let safe = char_boundary_before(
            &buf,
            buf.len().saturating_sub(needles.longest.saturating_sub(1)),
        );
        let cursor = needles.mask(&buf, safe, out);
        let keep_from = cursor.max(safe);
        out.extend_from_slice(&buf[cursor..keep_from]);
        buf.drain(..keep_from);
        self.hold = buf;
    }

    /// Whether bytes are held back, waiting for the next chunk.
    pub fn holds(&self) -> bool {
        !self.hold.is_empty()
    }

    /// The stream paused (nothing more arrived for a while): emit what is held back,
    /// except a tail that could still be the start of a secret. A stream read by
    /// someone while it is still being written (a job's log) shows a prompt without
    /// `longest - 1` bytes of delay, and still never a secret cut in two by the pause.
    pub fn flush_idle(&mut self, out: &mut Vec<u8>) {
        let buf = std::mem::take(&mut self.hold);
        let needles = self.needles();
        let starts_a_value = |tail: &[u8]| {
            needles
                .values
                .iter()
                .any(|v| v.len() > tail.len() && v.starts_with(tail))
        };
        let keep = (0..buf.len())
            .find(|&k| starts_a_value(&buf[k..]))
            .unwrap_or(buf.len());
        let cursor = needles.mask(&buf, keep, out);
        let keep_from = cursor.max(keep);
        out.extend_from_slice(&buf[cursor..keep_from]);
        self.hold = buf[keep_from..].to_vec();
    }

    /// Emit what is held back.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let buf = std::mem::take(&mut self.hold);
        let cursor = self.needles().mask(&buf, buf.len(), out);
        out.extend_from_slice(&buf[cursor..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn stream(s: &Secrets, form: Form, chunks: &[&[u8]]) -> String {
        let mut r = s.redactor(form).expect("secrets");
        let mut out = Vec::new();
        for c in chunks {
            r.push(c, &mut out);
        }
        r.finish(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn an_idle_flush_keeps_only_what_may_start_a_secret() {
        let s = Secrets::new(&pairs(&[("API_TOKEN", "s3cr3t-value-1234")]));
        let mut r = s.redactor(Form::Raw).expect("secrets");
        let mut out = Vec::new();
        r.push(b">>> ", &mut out);
        assert!(r.holds());
        r.flush_idle(&mut out);
        assert_eq!(out, b">>> ", "a prompt is shown at once");
        r.push(b"x s3cr3t-v", &mut out);
        r.flush_idle(&mut out);
        assert_eq!(out, b">>> x ", "the start of the secret stays held");
        r.push(b"alue-1234 y", &mut out);
        r.finish(&mut out);
        assert_eq!(
            String::from_utf8_lossy(&out),
            ">>> x [REDACTED:API_TOKEN] y"
        );
    }

    #[test]
    fn masks_across_every_split() {
        let s = Secrets::new(&pairs(&[("API_TOKEN", "s3cr3t-value")]));
        let input = b"a s3cr3t-value b s3cr3t-value\xe2\x98\x83 end";
        let want = "a [REDACTED:API_TOKEN] b [REDACTED:API_TOKEN]\u{2603} end";
        for form in [Form::Raw, Form::Text] {
            for cut in 0..=input.len() {
                let got = stream(&s, form, &[&input[..cut], &input[cut..]]);
                assert_eq!(got, want, "{form:?} cut {cut}");
            }
        }
    }

    /// The two finders together give exactly what one leftmost-longest automaton
    /// over all values gives, over every split of the stream.
    #[test]
    fn agrees_with_one_automaton_over_all_values() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for round in 0..300 {
            let count = 1 + rnd(12);
            let values: Vec<Vec<u8>> = (0..count)
                .map(|_| {
                    let len = if rnd(2) == 0 {
                        3 + rnd(13)
                    } else {
                        16 + rnd(30)
                    };
                    (0..len).map(|_| b"abc"[rnd(3) as usize]).collect()
                })
                .collect();
            let hay: Vec<u8> = (0..400).map(|_| b"abc"[rnd(3) as usize]).collect();
            let list: Vec<(Vec<u8>, Vec<u8>)> = values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), format!("<{i}>").into_bytes()))
                .collect();
            let list = Needles::dedup(list);
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(list.iter().map(|(v, _)| v))
                .unwrap();
            let mut want = Vec::new();
            let mut at = 0;
            for m in ac.find_iter(&hay) {
                want.extend_from_slice(&hay[at..m.start()]);
                want.extend_from_slice(&list[m.pattern().as_usize()].1);
                at = m.end();
            }
            want.extend_from_slice(&hay[at..]);
            let needles = Arc::new(Needles::build(list));
            let compiled = Arc::new(Compiled {
                names: vec![],
                raw: Arc::clone(&needles),
                text: Arc::clone(&needles),
                any: needles,
            });
            let secrets = Secrets {
                inner: Some(compiled),
            };
            // Short and long chunks, with and without held bytes before them.
            for (a, b) in [(0, 0), (1, 2), (7, 200), (50, 210), (199, 200), (170, 399)] {
                let got = stream(&secrets, Form::Raw, &[&hay[..a], &hay[a..b], &hay[b..]]);
                assert_eq!(
                    got,
                    String::from_utf8_lossy(&want),
                    "round {round} cuts {a} {b}"
                );
            }
        }
    }

    #[test]
    fn overlapping_secrets_mask_the_longest_leftmost() {
        let s = Secrets::new(&pairs(&[
            ("SHORT_KEY", "abcdefgh"),
            ("LONG_KEY", "abcdefghijkl"),
            ("MID_KEY", "fghijklmnop"),
        ]));
        let input = b"xx abcdefghijkl yy abcdefgh zz fghijklmnop";
        let want = "xx [REDACTED:LONG_KEY] yy [REDACTED:SHORT_KEY] zz [REDACTED:MID_KEY]";
        for cut in 0..=input.len() {
            for cut2 in cut..=input.len() {
                let got = stream(
                    &s,
                    Form::Raw,
                    &[&input[..cut], &input[cut..cut2], &input[cut2..]],
                );
                assert_eq!(got, want, "cuts {cut} {cut2}");
            }
        }
    }

    #[test]
    fn a_multi_line_value_is_found_in_each_form_its_line_breaks_take() {
        let s = Secrets::new(&pairs(&[("PRIVATE_KEY", "line-one\r\nline-two\nline-3")]));
        // As given, and as a terminal's ONLCR turns its LFs into CRLFs.
        assert_eq!(
            stream(&s, Form::Raw, &[b"<line-one\r\nline-two\nline-3>"]),
            "<[REDACTED:PRIVATE_KEY]>"
        );
        assert_eq!(
            stream(&s, Form::Raw, &[b"<line-one\r\r\nline-two\r\nline-3>"]),
            "<[REDACTED:PRIVATE_KEY]>"
        );
        // As the sanitizer rewrites it: CRLF and CR become LF.
        assert_eq!(
            stream(&s, Form::Text, &[b"<line-one\nline-", b"two\nline-3>"]),
            "<[REDACTED:PRIVATE_KEY]>"
        );
    }

    #[test]
    fn short_values_ignored_and_no_globs_no_secrets() {
        assert!(Secrets::new(&pairs(&[("K", "short")])).is_empty());
        let env = crate::shell::env::BuiltEnv::default();
        assert!(Secrets::for_run(&[], &env, &BTreeMap::new()).is_empty());
    }

    #[test]
    fn globs_match_names_case_insensitively() {
        let globs = vec!["*token*".to_string(), "*_PWD".to_string()];
        for name in ["GITHUB_TOKEN", "npm_Token", "DB_PWD", "db_pwd"] {
            assert!(name_matches(&globs, name), "{name}");
        }
        for name in ["PWD", "OLDPWD", "TOKE"] {
            assert!(!name_matches(&globs, name), "{name}");
        }
    }

    #[test]
    fn url_passwords_are_found_wherever_the_url_is() {
        let cases: &[(&str, &[&str])] = &[
            ("postgres://u:secret@h/db", &["secret"]),
            ("redis://:pw@h:6379", &["pw"]),
            ("https://user@h/x", &[]),
            ("https://h/x?u=a:b@c", &[]),
            ("a,mysql://r:p%40ss@h1,https://x:y@z", &["p%40ss", "y"]),
            ("DSN=amqp://guest:gu:est@rabbit/vhost", &["gu:est"]),
            ("://u:p@h", &[]),
            ("1x://u:p@h", &[]),
            ("x postgres://u:pa,ss@h1,h2/db", &["pa,ss"]),
            ("plain value", &[]),
        ];
        for (value, want) in cases {
            assert_eq!(url_passwords(value), *want, "{value}");
        }
    }

    #[test]
    fn a_url_password_is_masked_in_its_url_and_alone_when_long() {
        let s = Secrets::build(
            &[],
            &pairs(&[
                ("DATABASE_URL", "postgres://u:secret@h/db"),
                ("CACHE_URL", "redis://u:p%40ssw0rd-long@h"),
            ]),
        );
        assert_eq!(
            s.mask("connect postgres://u:secret@h/db; secret word"),
            "connect postgres://u:[REDACTED:DATABASE_URL]@h/db; secret word"
        );
        assert_eq!(
            s.mask("pw p@ssw0rd-long / p%40ssw0rd-long"),
            "pw [REDACTED:CACHE_URL] / [REDACTED:CACHE_URL]"
        );
        assert_eq!(s.names(), ["CACHE_URL", "DATABASE_URL"]);
    }

    #[test]
    fn strings_are_borrowed_when_nothing_matches() {
        let s = Secrets::new(&pairs(&[("A_TOKEN", "tok-12345678")]));
        assert!(matches!(s.mask("nothing here"), Cow::Borrowed(_)));
        assert_eq!(s.mask("x tok-12345678"), "x [REDACTED:A_TOKEN]");
    }
}
