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
//! All values are found in one pass with an Aho-Corasick automaton, whatever their
//! number: the cost is that of reading the output once, not once per secret. A value
//! can straddle two reads, so a stream holds back the last `longest - 1` bytes of each
//! chunk until the next chunk (or the end) shows whether they start a secret. Each value
//! is looked for in the form it takes where it is looked for: as given and with its LF
//! line breaks as CRLF (a terminal's ONLCR) in the raw stream (the artifact), and as the
//! sanitizer rewrites it (CRLF/CR → LF, controls removed) in the shown text.

use super::sanitize::sanitize;
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
    raw: Needles,
    text: Needles,
    /// Both forms, for strings of any origin (the command, a path, a message).
    any: Needles,
}

/// Values to find and what replaces each, in one automaton.
#[derive(Debug)]
struct Needles {
    /// `None` when there is nothing to find in this form.
    ac: Option<AhoCorasick>,
    replacements: Vec<Box<[u8]>>,
    longest: usize,
}

impl Needles {
    fn build(mut list: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        // The first entry for a value wins (pairs arrive sorted by name).
        let mut seen = std::collections::HashSet::new();
        list.retain(|(needle, _)| !needle.is_empty() && seen.insert(needle.clone()));
        let longest = list.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        // Building fails only past 2^31 automaton states; the values come from
        // environments the kernel has accepted (a few MiB at most), far below that.
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(list.iter().map(|(n, _)| n))
            .ok()
            .filter(|_| !list.is_empty());
        Needles {
            ac,
            replacements: list
                .into_iter()
                .map(|(_, r)| r.into_boxed_slice())
                .collect(),
            longest,
        }
    }

    /// Emit `buf` masked, up to the last secret that starts before `limit`; returns
    /// where the unemitted rest begins. A match starting before `limit` is final: the
    /// longest candidate starting there, or anywhere earlier, ends inside `buf`.
    fn mask(&self, buf: &[u8], limit: usize, out: &mut Vec<u8>) -> usize {
        let Some(ac) = &self.ac else {
            return 0;
        };
        let mut cursor = 0;
        for m in ac.find_iter(buf) {
            if m.start() >= limit {
                break;
            }
            out.extend_from_slice(&buf[cursor..m.start()]);
            out.extend_from_slice(&self.replacements[m.pattern().as_usize()]);
            cursor = m.end();
        }
        cursor
    }

    fn mask_str<'a>(&self, s: &'a str) -> Cow<'a, str> {
        match &self.ac {
            Some(ac) if ac.is_match(s) => {
                let mut out = Vec::with_capacity(s.len());
                let cursor = self.mask(s.as_bytes(), s.len(), &mut out);
                out.extend_from_slice(&s.as_bytes()[cursor..]);
                Cow::Owned(into_string(out))
            }
            _ => Cow::Borrowed(s),
        }
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
        run_env: &crate::exec::env::BuiltEnv,
        session_env: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Self {
        if globs.is_empty() {
            return Secrets::default();
        }
        let hardened = |k: &str, v: &str| {
            run_env.changes.get(k) == Some(&crate::exec::env::EnvSource::Hardening)
                && run_env.vars.get(k).is_some_and(|h| h == v)
        };
        let mut vars: Vec<(String, String)> = std::env::vars()
            .chain(run_env.vars.iter().map(|(k, v)| (k.clone(), v.clone())))
            .chain(session_env.into_iter().map(|(k, v)| (k.clone(), v.clone())))
            .filter(|(k, v)| !hardened(k, v))
            .collect();
        vars.sort();
        vars.dedup();
        let (named, others): (Vec<_>, Vec<_>) =
            vars.into_iter().partition(|(k, _)| name_matches(globs, k));
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
            raw.push((value.as_bytes().to_vec(), m.clone()));
            if value.contains('\n') {
                raw.push((value.replace('\n', "\r\n").into_bytes(), m.clone()));
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
        names.sort();
        names.dedup();
        let any: Vec<_> = raw.iter().chain(&text).cloned().collect();
        Secrets {
            inner: Some(Arc::new(Compiled {
                names,
                raw: Needles::build(raw),
                text: Needles::build(text),
                any: Needles::build(any),
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

    fn mask_in_place(&self, s: &mut String) {
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
        needles.ac.as_ref()?;
        Some(Redactor {
            secrets: Arc::clone(c),
            form,
            hold: Vec::new(),
        })
    }

    /// Every string of a result masked: what a run returns goes to a terminal, a CI
    /// log, a model's context, an RPC peer. Secrets in the output are already masked
    /// as it streamed; the other fields can carry them too (a directory named after
    /// one, an error quoting the command, a background job's command line).
    pub fn mask_result(&self, r: &mut crate::result::RunResult) {
        if self.is_empty() {
            return;
        }
        // Destructured so that a new field cannot be forgotten here.
        let crate::result::RunResult {
            command,
            normalized_command,
            stripped,
            profile,
            cwd,
            final_cwd,
            mode: _,
            session,
            exit_code: _,
            signal,
            timed_out: _,
            cancelled: _,
            blocked,
            duration_ms: _,
            timeout_s: _,
            requested_timeout_s: _,
            head: _,
            tail: _,
            output,
            text,
            truncated: _,
            total_bytes: _,
            total_lines: _,
            output_bytes: _,
            output_lines: _,
            truncation: _,
            artifact,
            background_killed,
            notices,
            warnings,
            error,
            body,
            agentbash_exit: _,
        } = r;
        for s in [
            command,
            normalized_command,
            profile,
            cwd,
            final_cwd,
            output,
            text,
            body,
        ] {
            self.mask_in_place(s);
        }
        for s in [stripped, session, signal, error].into_iter().flatten() {
            self.mask_in_place(s);
        }
        if let Some(b) = blocked {
            for s in [&mut b.rule, &mut b.tool, &mut b.message] {
                self.mask_in_place(s);
            }
        }
        if let Some(a) = artifact {
            let path = a.path.display().to_string();
            if let Cow::Owned(p) = self.mask(&path) {
                a.path = p.into();
            }
        }
        for k in background_killed {
            self.mask_in_place(&mut k.command);
        }
        for s in notices.iter_mut().chain(warnings.iter_mut()) {
            self.mask_in_place(s);
        }
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
    let name = name.to_ascii_lowercase();
    globs
        .iter()
        .any(|g| crate::exec::env::glob_match(&g.to_ascii_lowercase(), &name))
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

    /// Mask `chunk`, appending what is safe to emit to `out`. In the text form the
    /// held-back tail is cut on a UTF-8 character boundary.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let mut buf = std::mem::take(&mut self.hold);
        buf.extend_from_slice(chunk);
        let needles = self.needles();
        let mut safe = buf.len().saturating_sub(needles.longest.saturating_sub(1));
        if self.form == Form::Text {
            while safe > 0 && safe < buf.len() && (buf[safe] & 0xc0) == 0x80 {
                safe -= 1;
            }
        }
        let cursor = needles.mask(&buf, safe, out);
        let keep_from = cursor.max(safe);
        out.extend_from_slice(&buf[cursor..keep_from]);
        buf.drain(..keep_from);
        self.hold = buf;
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
        let env = crate::exec::env::BuiltEnv::default();
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
