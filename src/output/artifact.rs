//! Artifacts: the complete raw output of a run, spilled to `<dir>/<id>.bash.log`.
//!
//! Ids are decimal and unique in the directory even across concurrent processes: a
//! file is claimed with `O_CREAT|O_EXCL`, so two runs racing for the same number
//! cannot both win. Limits (`max_total_bytes`, `max_age_days`) are enforced when an id
//! is allocated, oldest first. A sidecar `<id>.json` remembers the command for
//! `agentbash artifact list`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub const URL_PREFIX: &str = "artifact://";
const SUFFIX: &str = ".bash.log";
/// The longest command a sidecar keeps (it fits well within its read cap).
const META_COMMAND_MAX: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub struct ArtifactStore {
    pub dir: PathBuf,
    pub max_total_bytes: u64,
    pub max_age_days: u64,
}

/// A claimed artifact file, open for writing.
#[derive(Debug)]
pub struct Allocated {
    pub id: u64,
    pub path: PathBuf,
    pub file: File,
    /// The most this artifact may hold (`artifacts.max_total_bytes`): a command that
    /// prints forever must not fill the disk before its timeout.
    pub max_bytes: u64,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ArtifactRef {
    pub id: u64,
    pub url: String,
    pub path: PathBuf,
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub id: u64,
    pub path: PathBuf,
    pub size: u64,
    pub modified: SystemTime,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    pub command: String,
    pub cwd: String,
    pub exit_code: Option<i32>,
    pub created_unix: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ArtifactIdError {
    #[error("invalid artifact id {0:?}: expected a number like 3 or artifact://3")]
    Malformed(String),
}

/// `3` or `artifact://3` → 3. Anything else (paths, `..`, signs) is rejected.
pub fn parse_id(s: &str) -> Result<u64, ArtifactIdError> {
    let t = s.trim();
    let digits = t.strip_prefix(URL_PREFIX).unwrap_or(t);
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ArtifactIdError::Malformed(s.to_string()));
    }
    digits
        .parse()
        .map_err(|_| ArtifactIdError::Malformed(s.to_string()))
}

/// The bytes of an artifact that `artifact show --head N --tail M` prints: the
/// first `head` lines, then the last `tail` of those (a line ends at `\n`; a last
/// line without one still counts). `pad`: the selection ends with a line that has no
/// `\n`, which the caller prints with one (as every shown line ends). Memory is
/// bounded by `tail` offsets, never by a line's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineRange {
    pub start: u64,
    pub end: u64,
    pub pad: bool,
}

pub fn line_range(
    mut r: impl io::BufRead,
    head: Option<usize>,
    tail: Option<usize>,
) -> io::Result<LineRange> {
    let mut starts = std::collections::VecDeque::new();
    let (mut pos, mut line_start, mut count) = (0u64, 0u64, 0usize);
    let mut last = LineRange::default();
    let keep = |starts: &mut std::collections::VecDeque<u64>, s: u64| {
        starts.push_back(s);
        // Without a tail only the first start matters.
        let cap = tail.unwrap_or(1);
        if starts.len() > cap {
            if tail.is_some() {
                starts.pop_front();
            } else {
                starts.pop_back();
            }
        }
    };
    while head.is_none_or(|h| count < h) {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        match memchr::memchr(b'\n', buf) {
            Some(p) => {
                keep(&mut starts, line_start);
                count += 1;
                pos += p as u64 + 1;
                r.consume(p + 1);
                last.end = pos;
                last.pad = false;
                line_start = pos;
            }
            None => {
                let n = buf.len();
                r.consume(n);
                pos += n as u64;
            }
        }
    }
    if head.is_none_or(|h| count < h) && pos > line_start {
        keep(&mut starts, line_start);
        last.end = pos;
        last.pad = true;
    }
    Ok(match starts.front() {
        Some(&start) => LineRange { start, ..last },
        None => LineRange::default(),
    })
}

pub fn url(id: u64) -> String {
    format!("{URL_PREFIX}{id}")
}

impl ArtifactStore {
    /// The store a profile's `[artifacts]` names, in `dir`.
    pub fn new(dir: PathBuf, cfg: &crate::config::profile::ArtifactsCfg) -> Self {
        ArtifactStore {
            dir,
            max_total_bytes: cfg.max_total_bytes,
            max_age_days: cfg.max_age_days,
        }
    }

    /// The store of a profile, with its directory resolved against `invoking_dir`.
    pub fn for_profile(cfg: &crate::config::profile::ArtifactsCfg, invoking_dir: &Path) -> Self {
        Self::new(resolve_dir(&cfg.dir, invoking_dir), cfg)
    }

    pub fn path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{id}{SUFFIX}"))
    }

    pub fn meta_path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Every artifact in the directory, oldest first.
    pub fn list(&self) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        for ent in rd.flatten() {
            let name = ent.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(SUFFIX))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if let Ok(meta) = ent.metadata() {
                out.push(Entry {
                    id,
                    path: ent.path(),
                    size: meta.len(),
                    modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                });
            }
        }
        out.sort_by_key(|e| (e.modified, e.id));
        Ok(out)
    }

    /// What `gc` would remove: too old, then oldest first until the total fits.
    /// `reserve` leaves room for an artifact about to be written.
    pub fn gc_plan(&self, entries: &[Entry], reserve: u64) -> Vec<Entry> {
        let now = SystemTime::now();
        let max_age = Duration::from_secs(self.max_age_days.saturating_mul(86_400));
        let mut total: u64 = entries.iter().map(|e| e.size).sum();
        let mut out = Vec::new();
        for e in entries {
            let too_old = self.max_age_days > 0
                && now.duration_since(e.modified).unwrap_or_default() > max_age;
            let too_big = total.saturating_add(reserve) > self.max_total_bytes;
            if too_old || too_big {
                total -= e.size;
                out.push(e.clone());
            }
        }
        out
    }

    pub fn remove(&self, id: u64) -> io::Result<()> {
        let _ = std::fs::remove_file(self.meta_path(id));
        std::fs::remove_file(self.path(id))
    }

    /// Claim the next id, enforcing the limits first.
    pub fn allocate(&self) -> io::Result<Allocated> {
        crate::paths::private_dir(&self.dir)?;
        let entries = self.list()?;
        for e in self.gc_plan(&entries, 0) {
            let _ = self.remove(e.id);
        }
        let mut next = entries.iter().map(|e| e.id).max().unwrap_or(0) + 1;
        for _ in 0..1000 {
            let path = self.path(next);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Allocated {
                        id: next,
                        path,
                        file,
                        max_bytes: self.max_total_bytes,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => next += 1,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(
            "could not claim an artifact id after 1000 tries",
        ))
    }

    pub fn write_meta(&self, id: u64, meta: &Meta) {
        // The sidecar is read back under a cap: a command of megabytes (rpc allows
        // 16 MiB) is kept to its start.
        let mut meta = meta.clone();
        if meta.command.len() > META_COMMAND_MAX {
            let mut cut = META_COMMAND_MAX;
            while !meta.command.is_char_boundary(cut) {
                cut -= 1;
            }
            meta.command.truncate(cut);
            meta.command.push('…');
        }
        let Ok(json) = serde_json::to_vec(&meta) else {
            return;
        };
        let _ = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(self.meta_path(id))
            .and_then(|mut f| io::Write::write_all(&mut f, &json));
    }

    /// The sidecar, when it is a regular file of ours within
    /// [`crate::fsguard::ARTIFACT_META_CAP`].
    pub fn read_meta(&self, id: u64) -> Result<Meta, crate::fsguard::ReadError> {
        let path = self.meta_path(id);
        let bytes = crate::fsguard::read_file(
            &path,
            crate::fsguard::ARTIFACT_META_CAP,
            crate::fsguard::Links::Refuse,
        )?;
        serde_json::from_slice(&bytes).map_err(|e| crate::fsguard::ReadError::Io {
            path,
            err: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })
    }
}

/// Resolve the artifact directory of a profile: "" means the state dir; relative
/// paths are relative to the invoking directory.
pub fn resolve_dir(configured: &str, invoking_dir: &Path) -> PathBuf {
    if configured.is_empty() {
        crate::paths::state_dir().join("artifacts")
    } else {
        crate::paths::absolute(invoking_dir, &crate::paths::expand_tilde(configured))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `artifact show --head/--tail` prints, line by line (the reference).
    fn shown(text: &[u8], head: Option<usize>, tail: Option<usize>) -> Vec<u8> {
        let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        if text.ends_with(b"\n") || text.is_empty() {
            lines.pop();
        }
        if let Some(h) = head {
            lines.truncate(h);
        }
        if let Some(t) = tail {
            let n = lines.len().saturating_sub(t);
            lines.drain(..n);
        }
        lines.iter().flat_map(|l| [*l, b"\n"].concat()).collect()
    }

    #[test]
    fn line_range_selects_what_head_and_tail_show() {
        let texts: [&[u8]; 6] = [b"", b"a", b"a\n", b"a\nb\nc\n", b"a\n\nb\nccc", b"\n\n\n"];
        let limits = [None, Some(1), Some(2), Some(5)];
        for text in texts {
            for head in limits {
                for tail in limits {
                    let r = line_range(std::io::Cursor::new(text), head, tail).unwrap();
                    let mut got = text[r.start as usize..r.end as usize].to_vec();
                    if r.pad {
                        got.push(b'\n');
                    }
                    assert_eq!(
                        got,
                        shown(text, head, tail),
                        "{:?} head {head:?} tail {tail:?}",
                        String::from_utf8_lossy(text)
                    );
                }
            }
        }
    }
    #[test]
    fn ids() {
        assert_eq!(parse_id("3").unwrap(), 3);
        assert_eq!(parse_id("artifact://42").unwrap(), 42);
        for bad in [
            "",
            "-1",
            "../3",
            "3.bash.log",
            "artifact://",
            "1/2",
            "99999999999999999999",
        ] {
            assert!(parse_id(bad).is_err(), "{bad}");
        }
    }
}
