//! Masking of secret values in a stream (profile `output.redact`).
//!
//! Secrets can straddle two reads, so the last `longest - 1` bytes of each chunk are
//! held back until the next chunk (or the end) shows whether they start a secret.

use memchr::memmem;

#[derive(Debug, Clone)]
pub struct Redactor {
    /// (secret value, replacement), longest first so overlapping secrets mask fully.
    secrets: Vec<(Vec<u8>, Vec<u8>)>,
    longest: usize,
    hold: Vec<u8>,
}

/// Values shorter than this are too likely to be ordinary words to mask.
pub const MIN_SECRET_LEN: usize = 8;

impl Redactor {
    /// From (NAME, value) pairs; values shorter than [`MIN_SECRET_LEN`] are ignored.
    pub fn new(pairs: &[(String, String)]) -> Option<Self> {
        let mut secrets: Vec<(Vec<u8>, Vec<u8>)> = pairs
            .iter()
            .filter(|(_, v)| v.len() >= MIN_SECRET_LEN)
            .map(|(k, v)| {
                (
                    v.as_bytes().to_vec(),
                    format!("[REDACTED:{k}]").into_bytes(),
                )
            })
            .collect();
        if secrets.is_empty() {
            return None;
        }
        secrets.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
        secrets.dedup_by(|a, b| a.0 == b.0);
        let longest = secrets[0].0.len();
        Some(Redactor {
            secrets,
            longest,
            hold: Vec::new(),
        })
    }

    /// Mask `chunk`, appending what is safe to emit to `out`. With `text`, the held-back
    /// tail is cut on a UTF-8 character boundary.
    pub fn push(&mut self, chunk: &[u8], text: bool, out: &mut Vec<u8>) {
        let mut buf = std::mem::take(&mut self.hold);
        buf.extend_from_slice(chunk);
        let mut safe = buf.len().saturating_sub(self.longest - 1);
        if text {
            while safe > 0 && safe < buf.len() && (buf[safe] & 0xc0) == 0x80 {
                safe -= 1;
            }
        }
        let cursor = self.mask(&buf, safe, out);
        let keep_from = cursor.max(safe);
        out.extend_from_slice(&buf[cursor.min(keep_from)..keep_from]);
        self.hold = buf[keep_from..].to_vec();
    }

    /// Emit what is held back.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let buf = std::mem::take(&mut self.hold);
        let cursor = self.mask(&buf, buf.len(), out);
        out.extend_from_slice(&buf[cursor..]);
    }

    /// Emit `buf` up to the last secret that starts before `limit`, masked; returns
    /// where the unemitted rest begins.
    fn mask(&self, buf: &[u8], limit: usize, out: &mut Vec<u8>) -> usize {
        let mut cursor = 0;
        loop {
            let next = self
                .secrets
                .iter()
                .filter_map(|(s, r)| {
                    memmem::find(&buf[cursor..], s).map(|p| (cursor + p, s.len(), r))
                })
                .min_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            match next {
                Some((start, len, repl)) if start < limit => {
                    out.extend_from_slice(&buf[cursor..start]);
                    out.extend_from_slice(repl);
                    cursor = start + len;
                }
                _ => return cursor,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_across_every_split() {
        let pairs = vec![("API_TOKEN".to_string(), "s3cr3t-value".to_string())];
        let input = b"a s3cr3t-value b s3cr3t-value\xe2\x98\x83 end";
        let want = "a [REDACTED:API_TOKEN] b [REDACTED:API_TOKEN]\u{2603} end";
        for cut in 0..=input.len() {
            let mut r = Redactor::new(&pairs).unwrap();
            let mut out = Vec::new();
            r.push(&input[..cut], false, &mut out);
            r.push(&input[cut..], false, &mut out);
            r.finish(&mut out);
            assert_eq!(String::from_utf8_lossy(&out), want, "cut {cut}");
        }
    }

    #[test]
    fn short_values_ignored() {
        assert!(Redactor::new(&[("K".into(), "short".into())]).is_none());
    }
}
