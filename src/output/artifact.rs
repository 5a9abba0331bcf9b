//! Artifacts: the complete raw output of a run, spilled to `<dir>/<id>.bash.log`.
//!
//! Ids are decimal and unique in the directory even across concurrent processes: a
//! file is claimed with `O_CREAT|O_EXCL`, so two runs racing for the same number
//! cannot both win. Limits (`max_total_bytes`, `max_age_days`) are enforced when an id
//! is allocated, oldest first. A sidecar `<id>.json` remembers the command for
//! `agentbash artifact list`.
//!
//! The directory is opened once per use and every file in it is created, listed and
//! removed through that descriptor, never by a path walked again: a directory named
//! relative to the invoking directory (the `ci` profile's `.agentbash/artifacts`) is
//! walked from there one component at a time without following a link, so a
//! repository whose `.agentbash` links elsewhere (or a command that swaps it for a link
//! during the run) cannot make agentbash write, or delete, outside the tree.

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub const URL_PREFIX: &str = "artifact://";
const SUFFIX: &str = ".bash.log";
/// The longest command a sidecar keeps (it fits well within its read cap).
const META_COMMAND_MAX: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub struct ArtifactStore {
    pub dir: PathBuf,
    /// The tree `dir` lies in when it was named relative to it (the invoking
    /// directory): no component below it is followed if it is a link.
    pub beneath: Option<PathBuf>,
    pub max_total_bytes: u64,
    pub max_age_days: u64,
}

/// Where a profile's artifacts go (see [`resolve_dir`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactDir {
    pub path: PathBuf,
    /// The invoking directory, when `path` lies in it.
    pub beneath: Option<PathBuf>,
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
    /// The directory it was made in, to remove it again from there.
    pub dir: Arc<OwnedFd>,
}

impl Allocated {
    /// Remove the file again (it turned out not to be needed).
    pub fn remove_from(dir: &OwnedFd, id: u64) {
        let _ = nix::unistd::unlinkat(
            dir,
            file_name(id).as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
}

fn file_name(id: u64) -> String {
    format!("{id}{SUFFIX}")
}

fn meta_name(id: u64) -> String {
    format!("{id}.json")
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
    pub fn new(dir: ArtifactDir, cfg: &crate::config::profile::ArtifactsCfg) -> Self {
        ArtifactStore {
            dir: dir.path,
            beneath: dir.beneath,
            max_total_bytes: cfg.max_total_bytes,
            max_age_days: cfg.max_age_days,
        }
    }

    /// The store of a profile, with its directory resolved against `invoking_dir`.
    pub fn for_profile(cfg: &crate::config::profile::ArtifactsCfg, invoking_dir: &Path) -> Self {
        Self::new(resolve_dir(&cfg.dir, invoking_dir), cfg)
    }

    pub fn path(&self, id: u64) -> PathBuf {
        self.dir.join(file_name(id))
    }

    pub fn meta_path(&self, id: u64) -> PathBuf {
        self.dir.join(meta_name(id))
    }

    /// The directory, opened (`None`: it does not exist and `create` is false).
    /// `create` makes what is missing, 0700. Below [`ArtifactStore::beneath`] every
    /// component is opened without following a link; elsewhere the directory is
    /// checked as agentbash's own (see `paths::private_dir`). Either way it must be
    /// ours and not writable by group or others. The error names the path and why.
    fn open_dir(&self, create: bool) -> io::Result<Option<OwnedFd>> {
        let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let (start, rel) = match &self.beneath {
            Some(tree) if self.dir.starts_with(tree) => (
                tree.clone(),
                self.dir
                    .strip_prefix(tree)
                    .unwrap_or(Path::new(""))
                    .to_path_buf(),
            ),
            _ => {
                if create {
                    crate::paths::private_dir(&self.dir)?;
                }
                (self.dir.clone(), PathBuf::new())
            }
        };
        let follow = if self.beneath.is_some() {
            OFlag::empty()
        } else {
            OFlag::O_NOFOLLOW
        };
        let mut fd = match nix::fcntl::open(&start, dir_flags | follow, Mode::empty()) {
            Ok(fd) => fd,
            Err(nix::errno::Errno::ENOENT) if !create => return Ok(None),
            Err(e) => {
                let kind = io::Error::from(e).kind();
                return Err(io::Error::new(kind, format!("{}: {e}", start.display())));
            }
        };
        let mut at = start;
        for c in rel.components() {
            let Component::Normal(name) = c else {
                continue;
            };
            at.push(name);
            let opened =
                || nix::fcntl::openat(&fd, name, dir_flags | OFlag::O_NOFOLLOW, Mode::empty());
            let next = match opened() {
                Err(nix::errno::Errno::ENOENT) if !create => return Ok(None),
                Err(nix::errno::Errno::ENOENT) => {
                    match nix::sys::stat::mkdirat(&fd, name, Mode::from_bits_truncate(0o700)) {
                        Ok(()) | Err(nix::errno::Errno::EEXIST) => opened(),
                        Err(e) => Err(e),
                    }
                }
                other => other,
            };
            fd = next.map_err(|e| not_followed(&at, e))?;
        }
        let st = nix::sys::stat::fstat(&fd)?;
        let me = crate::fsguard::euid();
        if st.st_uid != me {
            return Err(io::Error::other(format!(
                "{} is owned by uid {}, not by you (uid {me})",
                at.display(),
                st.st_uid
            )));
        }
        if st.st_mode & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "{} is writable by group or others (mode {:04o})",
                at.display(),
                st.st_mode & 0o7777
            )));
        }
        Ok(Some(fd))
    }

    /// Every artifact in the directory, oldest first.
    pub fn list(&self) -> io::Result<Vec<Entry>> {
        match self.open_dir(false)? {
            Some(fd) => self.list_in(&fd),
            None => Ok(Vec::new()),
        }
    }

    fn list_in(&self, fd: &OwnedFd) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut dir = nix::dir::Dir::from_fd(fd.try_clone()?)?;
        for ent in dir.iter().flatten() {
            let Some(id) = ent
                .file_name()
                .to_str()
                .ok()
                .and_then(|n| n.strip_suffix(SUFFIX))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            let Ok(st) = nix::sys::stat::fstatat(
                fd,
                ent.file_name(),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            ) else {
                continue;
            };
            if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                continue;
            }
            let modified = SystemTime::UNIX_EPOCH
                + Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec.max(0) as u32);
            out.push(Entry {
                id,
                path: self.path(id),
                size: st.st_size.max(0) as u64,
                modified,
            });
        }
        out.sort_unstable_by_key(|e| (e.modified, e.id));
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
        match self.open_dir(false)? {
            Some(fd) => remove_in(&fd, id),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    /// Claim the next id, enforcing the limits first.
    pub fn allocate(&self) -> io::Result<Allocated> {
        let fd = self
            .open_dir(true)?
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let entries = self.list_in(&fd)?;
        for e in self.gc_plan(&entries, 0) {
            let _ = remove_in(&fd, e.id);
        }
        let mut next = entries.iter().map(|e| e.id).max().unwrap_or(0) + 1;
        let create =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        for _ in 0..1000 {
            match nix::fcntl::openat(
                &fd,
                file_name(next).as_str(),
                create,
                Mode::from_bits_truncate(0o600),
            ) {
                Ok(file) => {
                    return Ok(Allocated {
                        id: next,
                        path: self.path(next),
                        file: File::from(file),
                        max_bytes: self.max_total_bytes,
                        dir: Arc::new(fd),
                    });
                }
                Err(nix::errno::Errno::EEXIST) => next += 1,
                Err(e) => return Err(e.into()),
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
        let Ok(Some(fd)) = self.open_dir(false) else {
            return;
        };
        let flags = OFlag::O_WRONLY
            | OFlag::O_CREAT
            | OFlag::O_TRUNC
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC;
        if let Ok(f) = nix::fcntl::openat(
            &fd,
            meta_name(id).as_str(),
            flags,
            Mode::from_bits_truncate(0o600),
        ) {
            let _ = io::Write::write_all(&mut File::from(f), &json);
        }
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

fn remove_in(fd: &OwnedFd, id: u64) -> io::Result<()> {
    use nix::unistd::{UnlinkatFlags, unlinkat};
    let _ = unlinkat(fd, meta_name(id).as_str(), UnlinkatFlags::NoRemoveDir);
    unlinkat(fd, file_name(id).as_str(), UnlinkatFlags::NoRemoveDir).map_err(io::Error::from)
}

/// Why a component of the artifact directory's path could not be opened, naming it
/// (a link is the case that matters: it could lead out of the tree).
fn not_followed(at: &Path, e: nix::errno::Errno) -> io::Error {
    let is_link = std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        let target = std::fs::read_link(at)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        return io::Error::other(format!(
            "{} is a symbolic link{target}; agentbash does not follow links on the way to its artifact directory, which could lead out of the tree: make it a real directory, or set artifacts.dir elsewhere",
            at.display()
        ));
    }
    io::Error::new(io::Error::from(e).kind(), format!("{}: {e}", at.display()))
}

/// Resolve the artifact directory of a profile: "" means the state dir; relative
/// paths are relative to the invoking directory (and walked from it, see
/// [`ArtifactStore::beneath`]).
pub fn resolve_dir(configured: &str, invoking_dir: &Path) -> ArtifactDir {
    if configured.is_empty() {
        return ArtifactDir {
            path: crate::paths::state_dir().join("artifacts"),
            beneath: None,
        };
    }
    let path = crate::paths::absolute(invoking_dir, &crate::paths::expand_tilde(configured));
    let beneath = path
        .starts_with(invoking_dir)
        .then(|| invoking_dir.to_path_buf());
    ArtifactDir { path, beneath }
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
