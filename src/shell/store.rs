//! What the snapshot and the session share: bash quoting, private (0600) file
//! writes, the runtime directory, ids, and the flock used to serialize writers.

use crate::process::CancelToken;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A private (0700, ours, not a symlink) directory on a memory filesystem, for the
/// short-lived files a shell writes line by line: `$XDG_RUNTIME_DIR/agentbash`, else
/// `/dev/shm/agentbash-<uid>`. `None` when neither is usable.
pub fn runtime_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let candidates = [
            std::env::var_os("XDG_RUNTIME_DIR")
                .filter(|d| !d.is_empty())
                .map(|d| PathBuf::from(d).join("agentbash")),
            Some(PathBuf::from(format!("/dev/shm/agentbash-{uid}"))),
        ];
        candidates.into_iter().flatten().find(|d| {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let parent_ok = d.parent().is_some_and(Path::is_dir);
            parent_ok
                && crate::paths::private_dir(d).is_ok()
                && std::fs::symlink_metadata(d).is_ok_and(|m| {
                    m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0
                })
        })
    })
    .clone()
}

/// An exclusive `flock` on a file, released when dropped (or when the process dies).
#[derive(Debug)]
pub struct FileLock {
    _file: std::fs::File,
}

#[derive(Debug)]
pub enum LockWait {
    TimedOut,
    Cancelled(i32),
    Io(std::io::Error),
}

impl FileLock {
    /// Take the lock, waiting until `deadline` (checking `cancel` meanwhile).
    pub fn acquire(
        path: &Path,
        cancel: Option<&CancelToken>,
        deadline: Instant,
    ) -> Result<FileLock, LockWait> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(LockWait::Io)?;
        let mut pause = Duration::from_millis(1);
        loop {
            // flock(2), exclusive, without blocking.
            match file.try_lock() {
                Ok(()) => return Ok(FileLock { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e))
                    if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(LockWait::Io(e)),
            }
            if let Some(sig) = cancel.and_then(CancelToken::reason) {
                return Err(LockWait::Cancelled(sig));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(LockWait::TimedOut);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Whether the locked file is still the one at `path` (not removed and recreated).
    pub fn is_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self._file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        }
    }

    /// Take the lock only if nobody holds it.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FileLock>> {
        match Self::acquire(path, None, Instant::now()) {
            Ok(l) => Ok(Some(l)),
            Err(LockWait::Io(e)) => Err(e),
            Err(_) => Ok(None),
        }
    }
}
