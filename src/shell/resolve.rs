//! Which shell runs the command, and the argv it gets (the profile's `[shell]`).

use crate::config::profile::ShellCfg;
use crate::process::spawn::{is_executable, on_path};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error(
        "shell not found: {0:?} (profile key shell.path); install it or set shell.path to an existing shell"
    )]
    NotFound(String),
}

/// `auto`: `$SHELL` if it is bash, else bash on PATH, else /bin/sh. A bare name is
/// looked up on PATH; a path must exist and be executable.
pub fn resolve(cfg: &ShellCfg, path_var: Option<&str>) -> Result<PathBuf, ShellError> {
    let p = cfg.path.trim();
    if p == "auto" {
        if let Ok(sh) = std::env::var("SHELL")
            && Path::new(&sh).file_name().is_some_and(|n| n == "bash")
            && is_executable(Path::new(&sh))
        {
            return Ok(PathBuf::from(sh));
        }
        if let Some(b) = on_path("bash", path_var) {
            return Ok(b);
        }
        return Ok(PathBuf::from("/bin/sh"));
    }
    let expanded = crate::paths::expand_tilde(p);
    if p.contains('/') {
        if is_executable(&expanded) {
            return Ok(expanded);
        }
        return Err(ShellError::NotFound(p.to_string()));
    }
    on_path(p, path_var).ok_or_else(|| ShellError::NotFound(p.to_string()))
}

pub fn is_bash(shell: &Path) -> bool {
    shell.file_name().is_some_and(|n| n == "bash")
}

/// `<prefix> <command>` when a prefix is set.
pub fn with_prefix(prefix: &str, command: &str) -> String {
    let p = prefix.trim();
    if p.is_empty() {
        command.to_string()
    } else {
        format!("{p} {command}")
    }
}
