//! The directory walk `grep` and `glob` share: ripgrep's `ignore` crate, set up as
//! ripgrep is by default — `.gitignore` (inside a git work tree), `.git/info/exclude`,
//! the global git excludes and `.ignore` files respected — except that hidden files
//! are searched (`.github/`, `.env.example` are a project's files too) while `.git`
//! itself is not. Symbolic links are not followed.
//!
//! The walk starts at the resolved root, so every path it yields is a real path (no
//! link in it), and anything `deny_read` hides is cut out before it is entered: no
//! name, size or content of it reaches the answer.

use super::policy::FilePolicy;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a `grep` or `glob` may walk and search before answering with what it
/// has (and saying so): well inside any client's tool timeout.
pub const TIME_BUDGET: Duration = Duration::from_secs(10);

/// A walker over `root` (resolved, already checked readable) under `policy`.
pub fn walker(policy: &FilePolicy, root: &Path) -> ignore::WalkBuilder {
    let policy = Arc::new(policy.clone());
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(true)
        .follow_links(false)
        .threads(threads())
        .filter_entry(move |entry| entry.file_name() != ".git" && !policy.hidden(entry.path()));
    builder
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// A deadline `budget` from now.
pub fn deadline(budget: Duration) -> Instant {
    Instant::now() + budget
}

/// How a path is shown: relative to the server's directory when it is under it (so
/// it can be passed back to `read` or `edit` as is), else absolute.
#[derive(Debug, Clone)]
pub struct Shown {
    base: PathBuf,
}

impl Shown {
    pub fn new(policy: &FilePolicy) -> Shown {
        let base = policy.base();
        Shown {
            base: super::policy::resolve(base).unwrap_or_else(|_| base.to_path_buf()),
        }
    }

    pub fn path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.base) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            Ok(_) => ".".into(),
            Err(_) => path.display().to_string(),
        }
    }
}
