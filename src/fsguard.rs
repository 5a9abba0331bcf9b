//! The files agentbash trusts and the directories it writes, checked before use.
//!
//! Profiles, rule packs, session state, snapshot files and artifact sidecars decide
//! what agentbash runs and how, so they are read through [`read_file`] alone: opened
//! without blocking (a FIFO does not hang the open), checked on the opened descriptor
//! (a regular file, owned by us or root, no larger than the caller's cap), then read to
//! at most the cap plus one byte. A FIFO, a device such as `/dev/zero`, a socket, a
//! directory or a sparse 5 GiB file is an error naming the path and the reason, at once,
//! and with no memory growth.
//!
//! The directories agentbash writes (state, artifacts, sessions, snapshot cache, trust
//! records) go through [`private_dir`]: a missing one is created 0700; an existing one
//! is checked, never changed (no chmod, no chown): it must be a real directory (a
//! symbolic link is refused, not followed), owned by us, and not writable by group or
//! others. Checks are made on the path right before it is used; what remains is a
//! process of the same user (or root) replacing the file between check and use, which
//! that user could do to the user's own shell rc anyway.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Largest profile or rule pack read (real ones are a few KiB).
pub const CONFIG_CAP: u64 = 1 << 20;
/// Largest session `state.sh` (or pending state dump) read: variables, functions and
/// aliases of one shell.
pub const SESSION_STATE_CAP: u64 = 8 << 20;
/// Largest rc snapshot, its cut parts, its metadata and the rc file itself
/// (bash-completion-sized rc files stay far below it).
pub const SNAPSHOT_CAP: u64 = 32 << 20;
/// Largest artifact sidecar (`<id>.json`); the command it stores is cut to fit.
pub const ARTIFACT_META_CAP: u64 = 1 << 20;
/// Largest trust record.
pub const TRUST_RECORD_CAP: u64 = 4 << 20;

/// Whether a symbolic link at the path itself is followed (its target is then checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Dotfile managers link profiles and rc files into place.
    Follow,
    /// Files only agentbash writes (session state): a link there is someone's trick.
    Refuse,
}

/// Why a file was not read. The message is the reason only; the caller names the
/// file (see [`ReadError::path`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("it is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("it is a symbolic link, which agentbash does not follow for this file")]
    Symlink { path: PathBuf },
    #[error("it is owned by uid {owner}, not by you (uid {me}) or root")]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error("it is {size} bytes, more than the {cap} bytes agentbash reads from such a file")]
    TooLarge { path: PathBuf, size: u64, cap: u64 },
}

impl ReadError {
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::NotRegular { path, .. }
            | ReadError::Symlink { path }
            | ReadError::Foreign { path, .. }
            | ReadError::TooLarge { path, .. } => path,
        }
    }

    /// The file was not there (callers often treat that as "nothing saved yet").
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io { err, .. } if err.kind() == std::io::ErrorKind::NotFound)
    }
}

impl From<ReadError> for std::io::Error {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Io { err, .. } => err,
            // The reason only: callers name the file.
            other => std::io::Error::other(other.to_string()),
        }
    }
}

/// The effective uid (files and directories must be its own).
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Open `path` and check the descriptor; the file is returned with its size.
fn open_checked(path: &Path, cap: u64, links: Links) -> Result<(std::fs::File, u64), ReadError> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    // std adds O_CLOEXEC.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => f,
        Err(err) => {
            // Say what the path is when the open itself refused it: a socket gives
            // ENXIO, a link under O_NOFOLLOW gives ELOOP.
            let path = path.to_path_buf();
            return Err(match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() && links == Links::Refuse => {
                    ReadError::Symlink { path }
                }
                Ok(m) if m.file_type().is_socket() => ReadError::NotRegular {
                    path,
                    kind: "a socket",
                },
                _ => ReadError::Io { path, err },
            });
        }
    };
    let meta = file.metadata().map_err(|err| ReadError::Io {
        path: path.to_path_buf(),
        err,
    })?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    let me = euid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(ReadError::Foreign {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            cap,
        });
    }
    Ok((file, meta.len()))
}

/// Read a file agentbash trusts: a regular file owned by us or root, at most `cap`
/// bytes (a file that grows past the cap while being read is refused too).
pub fn read_file(path: &Path, cap: u64, links: Links) -> Result<Vec<u8>, ReadError> {
    let (file, size) = open_checked(path, cap, links)?;
    let mut buf = Vec::with_capacity(size as usize);
    file.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(|err| ReadError::Io {
            path: path.to_path_buf(),
            err,
        })?;
    if buf.len() as u64 > cap {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: buf.len() as u64,
            cap,
        });
    }
    Ok(buf)
}

/// [`read_file`] as UTF-8 text (invalid bytes are an error naming the file).
pub fn read_text(path: &Path, cap: u64, links: Links) -> Result<String, ReadError> {
    String::from_utf8(read_file(path, cap, links)?).map_err(|_| ReadError::Io {
        path: path.to_path_buf(),
        err: std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not valid UTF-8"),
    })
}

/// Open a file for streaming after the checks of [`read_file`] (`cap`: `u64::MAX` for
/// none), e.g. an artifact of gigabytes.
pub fn open(path: &Path, cap: u64, links: Links) -> Result<std::fs::File, ReadError> {
    open_checked(path, cap, links).map(|(f, _)| f)
}

/// Check a file as [`read_file`] would, without reading it (for a file bash is about
/// to source).
pub fn check_file(path: &Path, cap: u64, links: Links) -> Result<(), ReadError> {
    open_checked(path, cap, links).map(|_| ())
}

/// Why a directory agentbash writes was refused.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("cannot create or inspect {}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },
    #[error(
        "{} is a symbolic link; agentbash does not follow links for its own directories (point the variable that names it at the real directory)",
        path.display()
    )]
    Symlink { path: PathBuf },
    #[error("{} is not a directory", path.display())]
    NotDir { path: PathBuf },
    #[error(
        "{} is owned by uid {owner}, not by you (uid {me}); agentbash only writes directories of its own",
        path.display()
    )]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{} is writable by group or others (mode {mode:04o}); agentbash will not use it (if it is yours: chmod go-w {})",
        path.display(),
        path.display()
    )]
    Writable { path: PathBuf, mode: u32 },
}

impl From<DirError> for std::io::Error {
    fn from(e: DirError) -> Self {
        match e {
            DirError::Io { err, .. } => err,
            other => std::io::Error::new(std::io::ErrorKind::PermissionDenied, other.to_string()),
        }
    }
}

/// Check an existing directory without changing it (see the module doc).
pub fn check_dir(dir: &Path) -> Result<(), DirError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|err| DirError::Io {
        path: dir.to_path_buf(),
        err,
    })?;
    let path = dir.to_path_buf();
    if meta.file_type().is_symlink() {
        return Err(DirError::Symlink { path });
    }
    if !meta.is_dir() {
        return Err(DirError::NotDir { path });
    }
    let me = euid();
    if meta.uid() != me {
        return Err(DirError::Foreign {
            path,
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(DirError::Writable { path, mode });
    }
    Ok(())
}

/// Create `dir` (and missing parents) 0700 if it does not exist, then check it.
pub fn private_dir(dir: &Path) -> Result<(), DirError> {
    use std::os::unix::fs::DirBuilderExt;
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|err| DirError::Io {
                path: dir.to_path_buf(),
                err,
            })?;
    }
    check_dir(dir)
}

/// [`private_dir`] for `dir` and every directory between it and `root` (inclusive):
/// whoever can write one of them can swap what is below it.
pub fn private_dir_under(root: &Path, dir: &Path) -> Result<(), DirError> {
    let Ok(rel) = dir.strip_prefix(root) else {
        return private_dir(dir);
    };
    private_dir(root)?;
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        private_dir(&at)?;
    }
    Ok(())
}

/// Write `bytes` to `path` atomically (temp file + rename), mode 0600.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id(),
        crate::ids::nonce()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.flush()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Create (or truncate) `path` empty with mode 0600.
pub fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = read_file(d.path(), CONFIG_CAP, Links::Follow).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_file(Path::new("/dev/zero"), CONFIG_CAP, Links::Follow).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let big = d.path().join("big");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(CONFIG_CAP + 1))
            .expect("sparse");
        let e = read_file(&big, CONFIG_CAP, Links::Follow).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
        let ok = d.path().join("ok");
        std::fs::write(&ok, "x").expect("write");
        assert_eq!(read_file(&ok, 1, Links::Follow).expect("read"), b"x");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&ok, &link).expect("symlink");
        assert_eq!(read_file(&link, 1, Links::Follow).expect("read"), b"x");
        let e = read_file(&link, 1, Links::Refuse).unwrap_err();
        assert!(matches!(e, ReadError::Symlink { .. }), "{e}");
    }

    #[test]
    fn existing_dirs_are_checked_not_changed() {
        let d = tempfile::tempdir().expect("tempdir");
        let open = d.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        private_dir(&open).expect("0755 is fine");
        let mode = std::fs::metadata(&open).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o775)).expect("chmod");
        assert!(matches!(private_dir(&open), Err(DirError::Writable { .. })));
        let new = d.path().join("a/b");
        private_dir(&new).expect("create");
        let mode = std::fs::metadata(&new).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&new, &link).expect("symlink");
        assert!(matches!(private_dir(&link), Err(DirError::Symlink { .. })));
    }
}
