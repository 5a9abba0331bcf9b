//! The parent's half: resolve the engine and build everything the child will need.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::check::{NamespacesHere, is_root, landlock_abi, mount_namespaces};
use super::{Engine, IdMaps, Mode, MountStep, Policy, Prepared, Resolved, SandboxError};

/// The newest file-system rights we handle: read, write, create, remove, rename
/// (refer), truncate and device ioctls. Pinned rather than "latest" so a newer kernel
/// does not silently start denying something (ABI 9 would deny unix socket connects).
const FS_ABI: ABI = ABI::V5;

/// Devices every mode may write (see [`Mode`]).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Resolve the engine for `policy` and build what [`Prepared::apply_in_child`] needs.
///
/// `cwd` is the run's working directory (the workspace when the policy names none) and
/// `private_tmpdir` the run's own TMPDIR, writable in every mode. Call it before fork;
/// the result may be reused for any number of children.
pub fn prepare(
    policy: &Policy,
    cwd: &Path,
    private_tmpdir: &Path,
) -> Result<Prepared, SandboxError> {
    if policy.mode == Mode::Off {
        return Ok(Prepared::none(None));
    }
    let abi = landlock_abi();
    let root = is_root();
    // Only the engines that may use namespaces pay for probing them.
    let namespaces = match policy.engine {
        Engine::Namespaces | Engine::Auto => mount_namespaces(!policy.network),
        _ => NamespacesHere {
            mount: false,
            network: false,
        },
    };
    let (use_namespaces, use_landlock) = match policy.engine {
        Engine::None => return Ok(Prepared::none(Some("[sandbox] engine = \"none\"".into()))),
        Engine::Bwrap => return Err(SandboxError::BwrapUnsupported),
        Engine::Namespaces if !namespaces.mount => {
            return unavailable(policy, "mount namespaces cannot be created here".into());
        }
        Engine::Namespaces => (true, abi.is_some()),
        Engine::Landlock if abi.is_none() => {
            return unavailable(
                policy,
                "the kernel has no Landlock (or it is disabled)".into(),
            );
        }
        Engine::Landlock => (false, true),
        Engine::Auto if namespaces.mount => (true, abi.is_some()),
        Engine::Auto if abi.is_some() => (false, true),
        Engine::Auto => {
            return unavailable(
                policy,
                "neither mount namespaces nor Landlock are available".into(),
            );
        }
    };

    let mut notes = Vec::new();
    let tmpdir = existing(private_tmpdir, "private TMPDIR", "writable")?;
    let mut writable = vec![tmpdir];
    if policy.mode == Mode::WorkspaceWrite {
        let workspace = policy.workspace.as_deref().unwrap_or(cwd);
        writable.push(existing(&expand_home(workspace), "workspace", "workspace")?);
    }
    for path in &policy.writable {
        writable.push(existing(&expand_home(path), "writable path", "writable")?);
    }
    writable.sort_by_key(|p| p.as_os_str().len());
    writable.dedup();
    let mut denied = Vec::new();
    for path in &policy.deny_read {
        match std::fs::canonicalize(expand_home(path)) {
            Ok(canonical) => denied.push(canonical),
            Err(_) => notes.push(format!(
                "deny_read {} does not exist; nothing to hide",
                path.display()
            )),
        }
    }

    let network_namespace = use_namespaces && !policy.network && namespaces.network;
    if use_namespaces && !policy.network && !namespaces.network {
        notes.push("network namespaces are unavailable; only Landlock limits TCP".into());
    }
    let mut prepared = Prepared::none(None);
    prepared.notes = notes;
    if use_namespaces {
        prepared.resolved = Resolved::Namespaces {
            landlock: use_landlock,
            network_namespace,
        };
        prepared.unshare_flags = libc::CLONE_NEWNS
            | if root { 0 } else { libc::CLONE_NEWUSER }
            | if network_namespace {
                libc::CLONE_NEWNET
            } else {
                0
            };
        if !root {
            prepared.id_maps = Some(id_maps());
        }
        prepared.mounts = mount_plan(&writable, &denied, &mut prepared.notes)?;
        prepared.chdir = Some(c_path(cwd)?);
        if !use_landlock {
            prepared.reason =
                Some("no Landlock: root inside the sandbox could undo the mounts".into());
        }
    } else {
        prepared.resolved = Resolved::Landlock;
        if policy.engine == Engine::Auto {
            prepared.reason = Some(
                "mount namespaces are unavailable: chmod/chown/utime and .git/hooks are not protected"
                    .into(),
            );
        }
    }
    if use_landlock {
        // In the namespaces engine the tmpfs already hides denied paths, so reads can be
        // granted on the whole tree.
        let read_denied: &[PathBuf] = if use_namespaces { &[] } else { &denied };
        let (ruleset, ruleset_notes) = ruleset(&writable, read_denied, policy.network)?;
        prepared.ruleset = Some(ruleset);
        prepared.notes.extend(ruleset_notes);
    }
    Ok(prepared)
}

impl Prepared {
    fn none(reason: Option<String>) -> Prepared {
        Prepared {
            resolved: Resolved::None,
            reason,
            notes: Vec::new(),
            unshare_flags: 0,
            id_maps: None,
            mounts: Vec::new(),
            chdir: None,
            ruleset: None,
            devnull: c"/dev/null".to_owned(),
            hide_options: c"size=4k,mode=0".to_owned(),
        }
    }
}

fn unavailable(policy: &Policy, reason: String) -> Result<Prepared, SandboxError> {
    if policy.required {
        Err(SandboxError::Unavailable { reason })
    } else {
        Ok(Prepared::none(Some(reason)))
    }
}

fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

fn existing(path: &Path, what: &'static str, key: &'static str) -> Result<PathBuf, SandboxError> {
    std::fs::canonicalize(path).map_err(|source| SandboxError::Path {
        what,
        key,
        path: path.to_path_buf(),
        source,
    })
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Nul {
        path: path.to_path_buf(),
    })
}

fn id_maps() -> IdMaps {
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    IdMaps {
        setgroups_path: c"/proc/self/setgroups".to_owned(),
        uid_map_path: c"/proc/self/uid_map".to_owned(),
        gid_map_path: c"/proc/self/gid_map".to_owned(),
        uid_map: format!("{uid} {uid} 1\n"),
        gid_map: format!("{gid} {gid} 1\n"),
    }
}

/// The mount steps, in order: private propagation, writable binds, everything
/// read-only, writable binds read-write again, denied paths covered, git metadata of
/// each writable tree read-only again. `writable` is sorted parents first, so a nested
/// bind lands on top of its parent's.
fn mount_plan(
    writable: &[PathBuf],
    denied: &[PathBuf],
    notes: &mut Vec<String>,
) -> Result<Vec<MountStep>, SandboxError> {
    let mut plan = vec![MountStep::Propagation];
    for path in writable {
        plan.push(MountStep::BindSelf(c_path(path)?));
    }
    plan.push(MountStep::ReadOnlyTree(c"/".to_owned()));
    for path in writable {
        plan.push(MountStep::WritableTree(c_path(path)?));
    }
    for path in denied {
        let step = if path.is_dir() {
            MountStep::HideDir(c_path(path)?)
        } else {
            MountStep::HideFile(c_path(path)?)
        };
        plan.push(step);
    }
    for tree in writable {
        let git = tree.join(".git");
        if !git.is_dir() {
            continue;
        }
        for name in ["hooks", "config"] {
            let path = git.join(name);
            if path.exists() {
                plan.push(MountStep::ReadOnlyBind(c_path(&path)?));
            } else {
                notes.push(format!(
                    "{} does not exist, so the command may create it",
                    path.display()
                ));
            }
        }
    }
    Ok(plan)
}

fn landlock_error(path: &Path, error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}

fn add(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, SandboxError> {
    let fd = PathFd::new(path).map_err(|e| landlock_error(path, e))?;
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| landlock_error(path, e))
}

/// Build the Landlock ruleset and return its fd (the path fds are closed once their
/// rules are in the kernel). Reads are granted on `/` unless paths are denied, in which
/// case on everything but them (see [`read_roots`]).
fn ruleset(
    writable: &[PathBuf],
    denied: &[PathBuf],
    network: bool,
) -> Result<(std::os::fd::OwnedFd, Vec<String>), SandboxError> {
    let root = Path::new("/");
    let mut attr = Ruleset::default()
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(|e| landlock_error(root, e))?;
    if !network {
        attr = attr
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(|e| landlock_error(root, e))?
            .scope(Scope::AbstractUnixSocket)
            .map_err(|e| landlock_error(root, e))?;
    }
    let mut ruleset = attr.create().map_err(|e| landlock_error(root, e))?;
    let read = AccessFs::from_read(FS_ABI);
    let write = AccessFs::from_write(FS_ABI);
    let mut notes = Vec::new();
    if denied.is_empty() {
        ruleset = add(ruleset, root, read)?;
    } else {
        let mut roots = BTreeSet::new();
        let mut visited = BTreeSet::new();
        read_roots(root, denied, &mut roots, &mut visited, &mut notes);
        for path in &roots {
            // Listed a moment ago, gone now (another process's temp dir): nothing is
            // left to grant, and a run must not fail because a sibling went away.
            let fd = match PathFd::new(path) {
                Ok(fd) => fd,
                Err(_) if !path.exists() => continue,
                Err(e) => return Err(landlock_error(path, e)),
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, read))
                .map_err(|e| landlock_error(path, e))?;
        }
    }
    for path in writable {
        ruleset = add(ruleset, path, write)?;
    }
    for device in DEVICES {
        let path = Path::new(device);
        if path.exists() {
            let access =
                AccessFs::WriteFile | AccessFs::ReadFile | AccessFs::Truncate | AccessFs::IoctlDev;
            ruleset = add(ruleset, path, access)?;
        }
    }
    let fd: Option<std::os::fd::OwnedFd> = ruleset.into();
    let fd = fd.ok_or_else(|| landlock_error(root, "the kernel refused every Landlock right"))?;
    Ok((fd, notes))
}

/// The read allow-list for the landlock engine with denied paths: Landlock can only
/// grant, so `dir`, an ancestor of a denied path, gets no grant of its own; each child
/// that leads to no denied path is granted whole, the others are descended into.
/// Symlinks are resolved first, so a link pointing into a denied path grants nothing.
fn read_roots(
    dir: &Path,
    denied: &[PathBuf],
    roots: &mut BTreeSet<PathBuf>,
    visited: &mut BTreeSet<PathBuf>,
    notes: &mut Vec<String>,
) {
    if !visited.insert(dir.to_path_buf()) {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            notes.push(format!("cannot list {}: {error}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        let Ok(target) = std::fs::canonicalize(entry.path()) else {
            continue;
        };
        if denied.iter().any(|d| target.starts_with(d)) {
            continue;
        }
        if denied.iter().any(|d| d.starts_with(&target)) {
            read_roots(&target, denied, roots, visited, notes);
        } else {
            roots.insert(target);
        }
    }
}
