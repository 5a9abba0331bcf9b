//! Where a destructive program's target is, and whether it is, holds, or sweeps a
//! protected path: resolution against the command's directory and root, `..`/`//`
//! folding, symlinks, and glob patterns matched against the protected paths
//! themselves (`/u*` reaches `/usr`, `~/*` sweeps every entry of home).

use std::path::{Component, Path, PathBuf};

use crate::shell::parse::glob;
use crate::shell::parse::scope::normalize;
use crate::shell::parse::{Field, SimpleCommand};

/// A path (or glob) a destructive program would act on.
pub(super) enum Resolved {
    Path(PathBuf),
    /// The components of an absolute glob pattern.
    Glob(Vec<String>),
    Unknown,
}

/// How much of a target an operation touches.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// The path and everything under it (`rm -r`, `chmod -R`, `mv`).
    Tree,
    /// The path itself (`chmod` without `-R`).
    Node,
    /// Only non-directories (`rm` without `-r`): a protected directory survives it,
    /// but not `rm ~/*`'s sweep of its entries.
    Entries,
}

/// One entry of `guard.protected`, resolved.
#[derive(Clone)]
pub(super) struct Protected {
    /// As written (`~/.ssh`).
    pub entry: String,
    pub path: PathBuf,
    /// A credential store (`~/.ssh`, `~/.gnupg`): a `chmod` that only removes
    /// permissions may touch it.
    pub credentials: bool,
}

/// A protected path a target hits.
pub(super) struct Hit {
    pub protected: Protected,
    pub description: String,
}

/// `guard.protected` with `~` expanded from `home`, plus each path's real name when
/// it is a symlink.
pub(super) fn protected_paths(entries: &[String], home: Option<&str>) -> Vec<Protected> {
    let home = home.filter(|h| !h.is_empty());
    let credentials: Vec<PathBuf> = home
        .map(|h| {
            [".ssh", ".gnupg"]
                .iter()
                .map(|d| Path::new(h).join(d))
                .collect()
        })
        .unwrap_or_default();
    let mut v = Vec::new();
    for entry in entries {
        let expanded = match (entry.strip_prefix('~'), home) {
            (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                format!("{h}{rest}")
            }
            (Some(_), None) => continue,
            _ => entry.clone(),
        };
        let Some(p) = normalize(None, &expanded) else {
            continue;
        };
        let is_store = credentials.contains(&p);
        if let Ok(real) = std::fs::canonicalize(&p)
            && real != p
        {
            v.push(Protected {
                entry: entry.clone(),
                path: real,
                credentials: is_store,
            });
        }
        v.push(Protected {
            entry: entry.clone(),
            path: p,
            credentials: is_store,
        });
    }
    v
}

fn glob_meta(s: &str) -> bool {
    glob::has_meta(s)
}

/// A glob component that matches every (non-hidden, or every hidden) entry.
fn matches_everything(component: &str) -> bool {
    component.contains('*') && component.chars().all(|c| matches!(c, '*' | '?' | '.'))
}

/// `field` as a path of `cmd` (its directory, its root).
pub(super) fn resolve(field: &Field, cmd: &SimpleCommand) -> Resolved {
    if !field.known() || (field.text.is_empty() && field.glob.is_none()) {
        return Resolved::Unknown;
    }
    let rooted = |p: PathBuf| match &cmd.root {
        Some(r) => r.join(p.strip_prefix("/").unwrap_or(&p)),
        None => p,
    };
    match &field.glob {
        None => normalize(cmd.cwd.as_deref(), &field.text)
            .map_or(Resolved::Unknown, |p| Resolved::Path(rooted(p))),
        Some(g) => {
            let absolute = if g.starts_with('/') {
                g.clone()
            } else {
                match &cmd.cwd {
                    Some(c) => format!(
                        "{}/{g}",
                        glob::escape(&c.to_string_lossy()).trim_end_matches('/')
                    ),
                    None => return Resolved::Unknown,
                }
            };
            let absolute = match &cmd.root {
                Some(r) => format!(
                    "{}/{}",
                    glob::escape(&r.to_string_lossy()).trim_end_matches('/'),
                    absolute.trim_start_matches('/')
                ),
                None => absolute,
            };
            let mut comps: Vec<String> = Vec::new();
            for c in absolute.split('/') {
                match c {
                    "" | "." => {}
                    ".." => {
                        comps.pop();
                    }
                    other => comps.push(other.to_string()),
                }
            }
            Resolved::Glob(comps)
        }
    }
}

fn shown(p: &Protected) -> String {
    if p.entry == p.path.to_string_lossy() {
        p.entry.clone()
    } else {
        format!("{} ({})", p.path.display(), p.entry)
    }
}

fn describe(p: &Protected, t: &Path) -> String {
    if p.path == t {
        shown(p)
    } else {
        format!("{}, which holds {}", t.display(), shown(p))
    }
}

/// The protected path `target` would destroy with `reach`, if any.
pub(super) fn hit(target: &Resolved, reach: Reach, protected: &[Protected]) -> Option<Hit> {
    match target {
        Resolved::Unknown => None,
        Resolved::Path(t) => {
            let real = std::fs::canonicalize(t).ok();
            for p in protected {
                for t in std::iter::once(t).chain(real.as_ref()) {
                    let hit = match reach {
                        Reach::Tree => p.path.starts_with(t),
                        Reach::Node => &p.path == t,
                        Reach::Entries => false,
                    };
                    if hit {
                        return Some(Hit {
                            protected: p.clone(),
                            description: describe(p, t),
                        });
                    }
                }
            }
            None
        }
        Resolved::Glob(comps) => {
            // `dir/*`: every entry of dir, which is as bad as dir itself for a
            // recursive operation and empties it for any other.
            if let Some((last, parent)) = comps.split_last()
                && matches_everything(last)
                && !parent.iter().any(|c| glob_meta(c))
            {
                let dir: PathBuf = std::iter::once("/".to_string())
                    .chain(parent.iter().map(|c| glob::unescape(c)))
                    .collect();
                for p in protected {
                    let hit = p.path == dir || (reach == Reach::Tree && p.path.starts_with(&dir));
                    if hit {
                        let description = if p.path == dir {
                            format!("every entry of {}", shown(p))
                        } else {
                            format!("every entry of {}, which holds {}", dir.display(), shown(p))
                        };
                        return Some(Hit {
                            protected: p.clone(),
                            description,
                        });
                    }
                }
            }
            for p in protected {
                let pc: Vec<String> = p
                    .path
                    .components()
                    .filter_map(|c| match c {
                        Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect();
                // The glob names p itself, or (for a tree) one of p's ancestors.
                for len in 1..=pc.len() {
                    if len != comps.len() || (len < pc.len() && reach != Reach::Tree) {
                        continue;
                    }
                    if comps
                        .iter()
                        .zip(&pc[..len])
                        .all(|(g, n)| glob::matches(g, n, true))
                    {
                        return Some(Hit {
                            protected: p.clone(),
                            description: shown(p),
                        });
                    }
                }
            }
            None
        }
    }
}

/// `/dev/sda`, `/dev/nvme0n1p2`, `/dev/mapper/x`, … or anything that is a block device.
pub(super) fn is_block_device(path: &str) -> bool {
    let Some(name) = path.strip_prefix("/dev/") else {
        return false;
    };
    let disk_like = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_alphanumeric()))
    };
    let named = [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "md", "loop", "nbd", "zd", "rbd",
    ]
    .iter()
    .any(|p| disk_like(p))
        || name.starts_with("dm-")
        || name.starts_with("mapper/")
        || name.starts_with("disk/");
    if named {
        return true;
    }
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}
