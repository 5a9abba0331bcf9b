//! The policy the file tools share with `bash`: the profile's `[sandbox]` and
//! `guard.protected`, judged on the path a tool would really touch.
//!
//! A path is first resolved as the kernel resolves it ([`resolve`]: every symbolic
//! link followed, in the path and in its parent directories, also for a file that
//! does not exist yet), and only that resolved target is checked, read and written.
//! So a link in the workspace pointing at `~/.ssh` or `/etc` leads nowhere the policy
//! forbids. The checks mirror what the kernel sandbox enforces on a command
//! (docs/ARCHITECTURE.md, the README's security model):
//!
//! - `deny_read` (sandbox on): the path and everything under it can be neither read
//!   nor written; named directly it is refused, a wider grep or glob skips it without
//!   a word ([`FilePolicy::hidden`]).
//! - `read-only`: nothing is written. `workspace-write`: only the workspace and the
//!   `writable` paths, and there neither `.git/hooks`, `.git/config`,
//!   `.git/commondir`, `.git/info` nor the `.git` entry itself, nor the workspace's
//!   `.agentbash/`, nor agentbash's own state, cache, config and artifact
//!   directories.
//! - `guard.protected` (guard on, whatever the sandbox): a write whose target is a
//!   protected path, or lies inside one other than `/` and `~`, is refused.
//!
//! The tools enforce this themselves, in-process, whatever sandbox engine the machine
//! has: there is no kernel to fall back on, and no engine that can be missing.

use crate::config::profile::Profile;
use crate::sandbox::Mode;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// How many symbolic links one path may go through, as the kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// A tool's path, located.
#[derive(Debug, Clone)]
pub struct Located {
    /// The path as the caller wrote it: what answers and errors show.
    pub shown: String,
    /// The path with every symbolic link resolved: what is checked, read and written.
    pub target: PathBuf,
    /// Whether a symbolic link in the path as written led elsewhere.
    pub via_link: bool,
}

impl Located {
    /// `shown`, followed by where it really leads when a link took it elsewhere.
    pub fn describe(&self) -> String {
        if self.via_link {
            format!("{} (a link to {})", self.shown, self.target.display())
        } else {
            self.shown.clone()
        }
    }
}

/// Why a path may not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "[sandbox: {path} is hidden by [sandbox] deny_read ({entry}); `{tool}` may not read or change it]"
    )]
    Hidden {
        tool: &'static str,
        path: String,
        entry: String,
    },
    #[error(
        "[sandbox read-only: writing {path} was refused: the read-only sandbox lets nothing be written. To allow it, set [sandbox] mode = \"workspace-write\" in the profile (the workspace and [sandbox] writable become writable)]"
    )]
    ReadOnly { path: String },
    #[error(
        "[sandbox workspace-write: writing {path} was refused: the workspace-write sandbox lets the tools write only {allowed}. To allow it, add the path to [sandbox] writable in the profile]"
    )]
    Outside { path: String, allowed: String },
    #[error(
        "[sandbox workspace-write: writing {path} was refused: {what} stays read-only in the sandbox ({why}); [sandbox] writable cannot change that, only [sandbox] mode = \"off\"]"
    )]
    Kept {
        path: String,
        what: String,
        why: &'static str,
    },
    #[error(
        "Refused: {path} is {place} (protected by guard.protected); `{tool}` refused, nothing was written. To allow it, remove \"{entry}\" from guard.protected in the profile"
    )]
    Protected {
        tool: &'static str,
        path: String,
        place: String,
        entry: String,
    },
    #[error(
        "[sandbox workspace-write: writing {path} was refused: the workspace would be {workspace}, which is no sandbox at all (the server was started there); start it in a project directory, or set [sandbox] workspace to this path on purpose]"
    )]
    WideWorkspace { path: String, workspace: String },
}

/// The policy of one tool call: the profile's `[sandbox]` and `guard.protected`,
/// with every configured path expanded (`~`) and resolved as it is now.
#[derive(Debug, Clone)]
pub struct FilePolicy {
    mode: Mode,
    base: PathBuf,
    /// `base` with its own links resolved.
    real_base: PathBuf,
    /// Writable trees (workspace-write), as written for messages and as paths.
    writable: Vec<(String, Vec<PathBuf>)>,
    /// The workspace's own paths (for its `.agentbash/`).
    workspace: Vec<PathBuf>,
    deny_read: Vec<(String, Vec<PathBuf>)>,
    protected: Vec<(String, PathBuf)>,
    /// agentbash's state, cache, config and artifact directories.
    own: Vec<PathBuf>,
    /// The workspace, when it came from where the server started and is `/` or the
    /// home directory itself: `workspace-write` there opens everything, so the tools
    /// write nothing (as the kernel sandbox refuses to run a command).
    wide_workspace: Option<PathBuf>,
}

/// `path` as configured (`~` expanded, relative to `base`), and its real path when it
/// exists and differs: a check against both holds whichever name a target arrives by.
fn forms(base: &Path, path: &Path) -> Vec<PathBuf> {
    let lexical =
        crate::paths::absolute(base, &crate::paths::expand_tilde(&path.to_string_lossy()));
    let mut v = vec![lexical.clone()];
    if let Ok(real) = resolve(&lexical)
        && real != lexical
    {
        v.push(real);
    }
    v
}

impl FilePolicy {
    /// The policy `profile` sets for tools serving from `base` (the server's directory:
    /// relative paths resolve against it, and it is the workspace when the profile
    /// names none, as for `bash`).
    pub fn new(profile: &Profile, base: &Path) -> FilePolicy {
        let sandbox = crate::pipeline::sandbox::plan(&profile.sandbox, None, base);
        let mut writable = Vec::new();
        let mut workspace = Vec::new();
        if let Some(ws) = &sandbox.workspace {
            workspace = forms(base, ws);
            writable.push((ws.display().to_string(), workspace.clone()));
        }
        for w in &sandbox.writable {
            writable.push((w.display().to_string(), forms(base, w)));
        }
        let deny_read = sandbox
            .deny_read
            .iter()
            .map(|d| (d.display().to_string(), forms(base, d)))
            .collect();
        let protected = if profile.guard.enabled {
            let home = crate::paths::home().map(|h| h.display().to_string());
            crate::pipeline::guard::protected_paths(&profile.guard.protected, home.as_deref())
        } else {
            Vec::new()
        };
        let mut own = Vec::new();
        let artifacts = crate::output::artifact::resolve_dir(&profile.artifacts.dir, base);
        // The same directories the kernel sandbox keeps read-only for a command.
        for dir in crate::pipeline::sandbox::own_dirs()
            .into_iter()
            .chain(std::iter::once(artifacts.path))
        {
            own.extend(forms(base, &dir));
        }
        let home = crate::paths::home().and_then(|h| resolve(&h).ok());
        let wide_workspace = sandbox
            .workspace
            .as_ref()
            .filter(|_| sandbox.workspace_by_default)
            .and_then(|ws| resolve(&crate::paths::absolute(base, ws)).ok())
            .filter(|ws| ws == Path::new("/") || Some(ws) == home.as_ref());
        FilePolicy {
            wide_workspace,
            mode: sandbox.mode,
            base: base.to_path_buf(),
            real_base: resolve(base).unwrap_or_else(|_| base.to_path_buf()),
            writable,
            workspace,
            deny_read,
            protected,
            own,
        }
    }

    /// Where `given` leads: `~/` expanded, a relative path taken from the server's
    /// directory, every symbolic link resolved. `Err` when a link loops or a directory
    /// on the way cannot be read.
    pub fn locate(&self, given: &str) -> Result<Located, String> {
        if given.is_empty() {
            return Err("`path` is empty: give a file or directory path".into());
        }
        if given.contains('\0') {
            return Err("`path` contains a NUL byte".into());
        }
        let expanded = crate::paths::expand_tilde(given);
        let absolute = crate::paths::absolute(&self.base, &expanded);
        let target =
            resolve(&absolute).map_err(|e| format!("{given}: cannot resolve the path: {e}"))?;
        // The server's directory may itself be reached through a link: only a link
        // in the part the caller wrote is worth a word.
        let written = crate::paths::absolute(&self.real_base, &expanded);
        Ok(Located {
            shown: given.to_string(),
            via_link: target != written && target != absolute,
            target,
        })
    }

    /// The directory relative paths resolve against.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The `deny_read` entry that hides `path` (resolved), when the sandbox is on.
    fn hiding(&self, path: &Path) -> Option<&str> {
        if self.mode == Mode::Off {
            return None;
        }
        self.deny_read
            .iter()
            .find(|(_, forms)| forms.iter().any(|d| path.starts_with(d)))
            .map(|(entry, _)| entry.as_str())
    }

    /// Whether a walk (grep, glob) must skip `path` — a resolved path — silently.
    pub fn hidden(&self, path: &Path) -> bool {
        self.hiding(path).is_some()
    }

    /// May `tool` read `at`?
    pub fn check_read(&self, tool: &'static str, at: &Located) -> Result<(), Refusal> {
        match self.hiding(&at.target) {
            Some(entry) => Err(Refusal::Hidden {
                tool,
                path: at.describe(),
                entry: entry.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// May `tool` write `at` (create, replace or change it)?
    pub fn check_write(&self, tool: &'static str, at: &Located) -> Result<(), Refusal> {
        let target = &at.target;
        self.check_protected(tool, at)?;
        if self.mode == Mode::Off {
            return Ok(());
        }
        self.check_read(tool, at)?;
        let path = at.describe();
        if self.mode == Mode::ReadOnly {
            return Err(Refusal::ReadOnly { path });
        }
        if let Some(ws) = &self.wide_workspace {
            return Err(Refusal::WideWorkspace {
                path,
                workspace: ws.display().to_string(),
            });
        }
        let inside = |forms: &[PathBuf]| forms.iter().any(|w| target.starts_with(w));
        if !self.writable.iter().any(|(_, forms)| inside(forms)) {
            let allowed = self
                .writable
                .iter()
                .map(|(shown, _)| shown.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(Refusal::Outside { path, allowed });
        }
        if let Some(dir) = self.own.iter().find(|d| target.starts_with(d)) {
            return Err(Refusal::Kept {
                path,
                what: format!("agentbash's own state ({})", dir.display()),
                why: "no command or tool may rewrite the records, sessions and outputs agentbash trusts",
            });
        }
        if let Some(what) = git_metadata(target) {
            return Err(Refusal::Kept {
                path,
                what,
                why: "code planted there would run later, outside the sandbox",
            });
        }
        if self
            .workspace
            .iter()
            .any(|ws| target.starts_with(ws.join(".agentbash")))
        {
            return Err(Refusal::Kept {
                path,
                what: "the workspace's .agentbash/".into(),
                why: "a command must not rewrite the profiles it runs under",
            });
        }
        Ok(())
    }

    /// `guard.protected`: the nearest protected path at or above the target decides.
    /// `/` and `~` protect only themselves (a file in the home directory may be
    /// written); any other entry protects everything under it too.
    fn check_protected(&self, tool: &'static str, at: &Located) -> Result<(), Refusal> {
        let target = &at.target;
        let nearest = self
            .protected
            .iter()
            .filter(|(_, p)| target.starts_with(p))
            .max_by_key(|(entry, p)| {
                // On a tie (HOME=/root with /root protected too), `~` wins: the home
                // directory is where a user's files are.
                (p.components().count(), entry == "~" || entry == "/")
            });
        let Some((entry, p)) = nearest else {
            return Ok(());
        };
        let shallow = entry == "/" || entry == "~";
        if p != target && shallow {
            return Ok(());
        }
        let shown = if entry.as_str() == p.to_string_lossy() {
            entry.clone()
        } else {
            format!("{} ({entry})", p.display())
        };
        let place = if p == target {
            format!("the protected path {shown}")
        } else {
            format!("inside {shown}")
        };
        Err(Refusal::Protected {
            tool,
            path: at.describe(),
            place,
            entry: entry.clone(),
        })
    }
}

/// The git metadata the kernel sandbox keeps read-only in a writable tree, when
/// `path` is in it: the `.git` entry itself (it cannot be swapped), and its `hooks`,
/// `config`, `commondir` and `info`.
fn git_metadata(path: &Path) -> Option<String> {
    let names: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        if *name != ".git" {
            continue;
        }
        match names.get(i + 1).and_then(|n| n.to_str()) {
            None => return Some(".git".into()),
            Some(inner @ ("hooks" | "config" | "commondir" | "info")) => {
                return Some(format!(".git/{inner}"));
            }
            // A linked worktree's or a submodule's own gitdir: its hooks, config,
            // info, commondir and gitdir pointer are read as code and config too.
            Some(kind @ ("worktrees" | "modules")) => {
                if let (Some(name), Some(inner)) = (
                    names.get(i + 2).and_then(|n| n.to_str()),
                    names.get(i + 3).and_then(|n| n.to_str()),
                ) && matches!(inner, "hooks" | "config" | "commondir" | "info" | "gitdir")
                {
                    return Some(format!(".git/{kind}/{name}/{inner}"));
                }
            }
            Some(_) => {}
        }
    }
    None
}

/// `path` (absolute) with every symbolic link resolved, component by component as the
/// kernel walks it; from the first component that does not exist on, the rest is kept
/// as written (`.` dropped, `..` folded). A dangling link is followed to where its
/// target would be, so writing through it cannot land anywhere else.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut pending: VecDeque<OsString> = components(path).into();
    let mut out = PathBuf::from("/");
    let mut missing = false;
    let mut links = 0;
    while let Some(c) = pending.pop_front() {
        if c == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&c);
        if !missing {
            match std::fs::symlink_metadata(&next) {
                Ok(m) if m.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
                    }
                    let link = std::fs::read_link(&next)?;
                    if link.is_absolute() {
                        out = PathBuf::from("/");
                    }
                    for c in components(&link).into_iter().rev() {
                        pending.push_front(c);
                    }
                    continue;
                }
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    missing = true;
                }
                Err(e) => return Err(e),
            }
        }
        out = next;
    }
    Ok(out)
}

/// The named components of `path`, `..` kept as a name, `.` and `/` dropped.
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn resolve_follows_links_in_parents_and_dangling_ends() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("real/sub")).expect("dirs");
        symlink(root.join("real"), root.join("link")).expect("link");
        symlink("../elsewhere/file", root.join("real/dangling")).expect("dangling");
        symlink("loop", root.join("loop")).expect("loop");
        assert_eq!(
            resolve(&root.join("link/sub/new.txt")).expect("resolves"),
            root.join("real/sub/new.txt")
        );
        assert_eq!(
            resolve(&root.join("link/dangling")).expect("resolves"),
            root.join("elsewhere/file")
        );
        assert_eq!(
            resolve(&root.join("link/../real/./sub")).expect("resolves"),
            root.join("real/sub"),
            "`..` after a link goes up from where the link leads"
        );
        assert_eq!(
            resolve(&root.join("missing/a/../b")).expect("resolves"),
            root.join("missing/b")
        );
        let looped = resolve(&root.join("loop")).expect_err("a loop");
        assert_eq!(looped.raw_os_error(), Some(libc::ELOOP));
    }

    #[test]
    fn git_metadata_is_found_at_any_depth() {
        for (path, want) in [
            ("/w/.git/hooks/pre-commit", Some(".git/hooks")),
            ("/w/.git/config", Some(".git/config")),
            ("/w/vendor/x/.git/info/exclude", Some(".git/info")),
            ("/w/.git", Some(".git")),
            ("/w/.git/objects/ab", None),
            ("/w/src/git/config", None),
            ("/w/.gitignore", None),
        ] {
            assert_eq!(git_metadata(Path::new(path)).as_deref(), want, "{path}");
        }
    }

    fn policy(mode: Mode, base: &Path) -> FilePolicy {
        let mut profile = Profile::default();
        profile.sandbox.mode = mode;
        profile.artifacts.dir = "outputs".into();
        profile.sandbox.deny_read = vec![base.join("secret")];
        profile.guard.protected = vec![
            "/".into(),
            "/etc".into(),
            base.join("keep").display().to_string(),
        ];
        FilePolicy::new(&profile, base)
    }

    #[test]
    fn writes_follow_the_sandbox_mode_and_the_guard() {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = std::fs::canonicalize(dir.path()).expect("canonical");
        let write = |mode, path: &str| {
            let p = policy(mode, &base);
            let at = p.locate(path).expect("locates");
            p.check_write("write", &at)
        };
        assert_eq!(write(Mode::WorkspaceWrite, "a/b.txt"), Ok(()));
        assert!(matches!(
            write(Mode::WorkspaceWrite, "/elsewhere/x"),
            Err(Refusal::Outside { .. })
        ));
        assert!(matches!(
            write(Mode::ReadOnly, "a/b.txt"),
            Err(Refusal::ReadOnly { .. })
        ));
        assert!(matches!(
            write(Mode::WorkspaceWrite, "secret/x"),
            Err(Refusal::Hidden { .. })
        ));
        assert!(matches!(
            write(Mode::WorkspaceWrite, ".git/hooks/pre-commit"),
            Err(Refusal::Kept { .. })
        ));
        assert!(matches!(
            write(Mode::WorkspaceWrite, ".agentbash/profiles/x.toml"),
            Err(Refusal::Kept { .. })
        ));
        // agentbash's own directories, here the artifacts, even inside the workspace.
        let own = write(Mode::WorkspaceWrite, "outputs/3.bash.log").expect_err("own state");
        assert!(own.to_string().contains("agentbash's own state"), "{own}");
        // The guard holds with the sandbox off; `/` protects only itself.
        assert_eq!(write(Mode::Off, "/elsewhere/x"), Ok(()));
        assert_eq!(
            write(Mode::Off, "secret/x"),
            Ok(()),
            "deny_read needs the sandbox on"
        );
        let refused = write(Mode::Off, "/etc/hosts").expect_err("inside /etc");
        assert!(
            refused
                .to_string()
                .contains("inside /etc (protected by guard.protected)"),
            "{refused}"
        );
        assert!(matches!(
            write(Mode::Off, "keep/x"),
            Err(Refusal::Protected { .. })
        ));
    }
}
