//! Opening and replacing files on a path that has already been resolved and checked
//! ([`super::policy`]), so that what is opened is what was checked.
//!
//! Every open goes through `openat2(RESOLVE_NO_SYMLINKS)`: if a component of the
//! resolved path became a symbolic link after the check (a race with another
//! process), the open fails instead of following it. On a kernel without `openat2`
//! (before Linux 5.6, or a seccomp filter refusing it) the last component is still
//! opened with `O_NOFOLLOW`. Opens never block (`O_NONBLOCK`: a FIFO answers at once)
//! and only regular files are read or replaced.
//!
//! A write replaces the file atomically where it can: a temporary file in the same
//! directory (created `O_EXCL`, never through a link), given the old file's mode and
//! owner, then renamed over it — a reader sees the old content or the new, never half.
//! A file with several hard links is rewritten in place instead, so the other names
//! keep seeing it.

use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Open `path` (resolved: no symbolic link in it) with `flags`.
fn open_resolved(path: &Path, flags: OFlag, mode: Mode) -> std::io::Result<OwnedFd> {
    // openat2 refuses any flag but these three beside O_PATH.
    let flags = if flags.contains(OFlag::O_PATH) {
        flags | OFlag::O_CLOEXEC
    } else {
        flags | OFlag::O_CLOEXEC | OFlag::O_NOCTTY
    };
    let how = OpenHow::new()
        .flags(flags)
        .mode(mode)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    match nix::fcntl::openat2(nix::fcntl::AT_FDCWD, path, how) {
        Ok(fd) => Ok(fd),
        Err(nix::errno::Errno::ENOSYS | nix::errno::Errno::EPERM) => {
            nix::fcntl::open(path, flags | OFlag::O_NOFOLLOW, mode).map_err(std::io::Error::from)
        }
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// What kind of thing a path is, when it is not a regular file.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// Why a file could not be opened for reading.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("does not exist")]
    Missing,
    #[error("is {0}, not a regular file")]
    NotAFile(&'static str),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Open the regular file at `path` (resolved) for reading, with its metadata.
pub fn open_read(path: &Path) -> Result<(File, std::fs::Metadata), OpenError> {
    let fd = open_resolved(path, OFlag::O_RDONLY | OFlag::O_NONBLOCK, Mode::empty()).map_err(
        |e| match e.kind() {
            std::io::ErrorKind::NotFound => OpenError::Missing,
            _ => OpenError::Io(e),
        },
    )?;
    let file = File::from(fd);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(OpenError::NotAFile(kind_of(&meta)));
    }
    Ok((file, meta))
}

/// The whole content of the regular file at `path`, refused past `max` bytes.
pub fn read_all(path: &Path, max: u64) -> Result<(Vec<u8>, std::fs::Metadata), ReadAllError> {
    use std::io::Read;
    let (file, meta) = open_read(path)?;
    if meta.len() > max {
        return Err(ReadAllError::TooLarge { size: meta.len() });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte past the cap tells a file that grew since the stat.
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ReadAllError::TooLarge {
            size: bytes.len() as u64,
        });
    }
    Ok((bytes, meta))
}

#[derive(Debug, thiserror::Error)]
pub enum ReadAllError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("is too large ({size} bytes)")]
    TooLarge { size: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// How a write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The file did not exist before.
    pub created: bool,
}

/// Replace (or create) the file at `path` — resolved and checked — with `bytes`,
/// creating missing parent directories. `existing` is the file's metadata when it
/// exists (its mode and owner are kept).
pub fn write(
    path: &Path,
    bytes: &[u8],
    existing: Option<&std::fs::Metadata>,
) -> std::io::Result<Written> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file path",
        ));
    };
    if let Some(meta) = existing {
        if !meta.is_file() {
            return Err(std::io::Error::other(format!(
                "is {}, not a regular file",
                kind_of(meta)
            )));
        }
        if meta.nlink() > 1 {
            let fd = open_resolved(path, OFlag::O_WRONLY | OFlag::O_TRUNC, Mode::empty())?;
            File::from(fd).write_all(bytes)?;
            return Ok(Written { created: false });
        }
    }
    std::fs::create_dir_all(parent)?;
    let dir = open_resolved(parent, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty())?;
    let temp = format!(
        ".{}.agentbash-{}.tmp",
        name.to_string_lossy(),
        crate::ids::nonce()
    );
    let fd = nix::fcntl::openat(
        dir.as_fd(),
        temp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(std::io::Error::from)?;
    let mut file = File::from(fd);
    let finish = |file: &mut File| -> std::io::Result<()> {
        file.write_all(bytes)?;
        match existing {
            Some(meta) => {
                // Root keeps the owner a user's file had; anyone else cannot, and
                // the file is then theirs, as with any editor's save.
                let _ = std::os::unix::fs::fchown(&*file, Some(meta.uid()), Some(meta.gid()));
                file.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
            }
            None => file.set_permissions(std::fs::Permissions::from_mode(0o644))?,
        }
        nix::fcntl::renameat(dir.as_fd(), temp.as_str(), dir.as_fd(), name)
            .map_err(std::io::Error::from)
    };
    if let Err(e) = finish(&mut file) {
        let _ = nix::unistd::unlinkat(
            dir.as_fd(),
            temp.as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
        return Err(e);
    }
    Ok(Written {
        created: existing.is_none(),
    })
}
