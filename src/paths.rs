//! Where agentbash keeps things: home, state and cache directories, and path
//! resolution relative to the invoking directory.

use std::path::{Component, Path, PathBuf};

pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `$AGENTBASH_STATE_DIR`, else `$XDG_STATE_HOME/agentbash`, else `~/.local/state/agentbash`.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("AGENTBASH_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("agentbash");
    }
    home()
        .unwrap_or_else(std::env::temp_dir)
        .join(".local/state/agentbash")
}

/// `$XDG_CACHE_HOME/agentbash`, else `~/.cache/agentbash`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("agentbash");
    }
    home()
        .unwrap_or_else(std::env::temp_dir)
        .join(".cache/agentbash")
}

/// Expand a leading `~/`.
pub fn expand_tilde(p: &str) -> PathBuf {
    if p == "~" {
        return home().unwrap_or_else(|| PathBuf::from(p));
    }
    match (p.strip_prefix("~/"), home()) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => PathBuf::from(p),
    }
}

/// `p` made absolute against `base`, with `.` and `..` folded lexically (no symlinks
/// resolved, so the path the user sees in errors is the one they typed).
pub fn absolute(base: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

/// Create `dir` 0700 if missing, and check it and every directory between it and the
/// state or cache directory it lives under (see [`crate::fsguard::private_dir`]): an
/// existing directory is never chmod'ed, a symbolic link is never followed, and one
/// owned by someone else or writable by group or others is refused.
pub fn private_dir(dir: &Path) -> Result<(), crate::fsguard::DirError> {
    for root in [state_dir(), cache_dir()] {
        if dir.starts_with(&root) {
            return crate::fsguard::private_dir_under(&root, dir);
        }
    }
    crate::fsguard::private_dir(dir)
}

/// Why a working directory cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CwdError {
    #[error("Working directory does not exist: {}", .0.display())]
    Missing(PathBuf),
    #[error("Working directory is not a directory: {}", .0.display())]
    NotADirectory(PathBuf),
}

pub fn resolve_cwd(base: &Path, requested: Option<&Path>) -> Result<PathBuf, CwdError> {
    let abs = match requested {
        Some(p) => absolute(base, p),
        None => base.to_path_buf(),
    };
    match std::fs::metadata(&abs) {
        Ok(m) if m.is_dir() => Ok(abs),
        Ok(_) => Err(CwdError::NotADirectory(abs)),
        Err(_) => Err(CwdError::Missing(abs)),
    }
}
