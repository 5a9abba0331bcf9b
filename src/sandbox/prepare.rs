//! The parent's half: resolve the engine and build everything the child will need.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::caps::Keep;
use super::check::{NamespacesHere, is_root, landlock_abi, namespaces_here};
use super::{
    Engine, IdMaps, Mode, MountStep, Namespaces, Network, Policy, Prepared, ProxyPlan, Resolved,
    SandboxError, dev, seccomp,
};

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

/// Resolve the engine for `policy` and build what the child needs.
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
        Engine::Namespaces | Engine::Auto => namespaces_here(!policy.network.is_on()),
        _ => NamespacesHere::default(),
    };
    let (use_namespaces, use_landlock) = match policy.engine {
        Engine::None => {
            return unavailable(
                policy,
                "[sandbox] engine = \"none\" enforces nothing".into(),
            );
        }
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
    let p = paths(policy, cwd, private_tmpdir, &mut notes)?;

    let (network_namespace, proxy, net_rule) =
        network(policy, use_namespaces, namespaces.network, &mut notes);
    let mut prepared = Prepared::none(None);
    prepared.notes = notes;
    prepared.proxy = proxy;
    prepared.seccomp = seccomp::program();
    if prepared.seccomp.is_none() {
        prepared
            .notes
            .push("no syscall filter: seccomp is not available for this architecture".into());
    }
    if use_namespaces {
        namespace_plan(
            &mut prepared,
            policy,
            cwd,
            &p,
            root,
            namespaces.user,
            network_namespace,
            use_landlock,
        )?;
    } else {
        prepared.resolved = Resolved::Landlock;
        prepared.keep = Keep::Nothing;
        if policy.engine == Engine::Auto {
            prepared.reason = Some(
                "mount namespaces are unavailable: chmod/chown/utime and .git/hooks are not protected"
                    .into(),
            );
        }
    }
    if use_landlock {
        // In the namespaces engine the tmpfs already hides denied paths (and /dev is
        // private), so reads can be granted on the whole tree. Alone, Landlock must
        // withhold the host's /dev, whose disk nodes root owns.
        let read_denied: Vec<PathBuf> = if use_namespaces {
            Vec::new()
        } else {
            let mut d = p.denied.clone();
            d.push(PathBuf::from("/dev"));
            d
        };
        let (ruleset, ruleset_notes) =
            ruleset(&p.writable, &read_denied, net_rule, !use_namespaces)?;
        prepared.ruleset = Some(ruleset);
        prepared.notes.extend(ruleset_notes);
    }
    Ok(prepared)
}

/// The paths a sandbox is made of, resolved once: the private TMPDIR, the writable
/// roots the user named, agentbash's own writable paths and the hidden ones.
struct Paths {
    tmpdir: PathBuf,
    roots: Vec<PathBuf>,
    own_writable: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    denied: Vec<PathBuf>,
}

/// Resolve the policy's paths: the workspace and writable ones must exist; a
/// `deny_read` path that does not is noted (there is nothing to hide).
fn paths(
    policy: &Policy,
    cwd: &Path,
    private_tmpdir: &Path,
    notes: &mut Vec<String>,
) -> Result<Paths, SandboxError> {
    let tmpdir = existing(private_tmpdir, "private TMPDIR", "writable")?;
    let mut roots = Vec::new();
    if policy.mode == Mode::WorkspaceWrite {
        let workspace = existing(
            &expand_home(policy.workspace.as_deref().unwrap_or(cwd)),
            "workspace",
            "workspace",
        )?;
        if policy.workspace_by_default && is_too_wide(&workspace) {
            return Err(SandboxError::WideWorkspace { path: workspace });
        }
        roots.push(workspace);
    }
    for path in &policy.writable {
        roots.push(existing(&expand_home(path), "writable path", "writable")?);
    }
    let mut own_writable = Vec::new();
    for path in &policy.own_writable {
        if let Ok(path) = std::fs::canonicalize(path) {
            own_writable.push(path);
        }
    }
    let mut writable = vec![tmpdir.clone()];
    writable.extend(roots.iter().cloned());
    writable.extend(own_writable.iter().cloned());
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
    Ok(Paths {
        tmpdir,
        roots,
        own_writable,
        writable,
        denied,
    })
}

/// The network plan: whether the command gets a network namespace, the allowlist
/// proxy when it has one, and the rule Landlock applies to TCP.
fn network(
    policy: &Policy,
    use_namespaces: bool,
    network_here: bool,
    notes: &mut Vec<String>,
) -> (bool, Option<ProxyPlan>, NetRule) {
    let confined_network = !policy.network.is_on();
    let network_namespace = use_namespaces && confined_network && network_here;
    if use_namespaces && confined_network && !network_here {
        notes.push("network namespaces are unavailable; only Landlock limits TCP".into());
    }
    // An allowlist needs a namespace whose only way out is the proxy; without one the
    // command gets no network at all rather than more than the list.
    let proxy = match &policy.network {
        Network::Allow(allowlist) if network_namespace => Some(ProxyPlan {
            port: super::PROXY_PORT,
            allowlist: allowlist.clone(),
            allow_local: policy.network_allow_local,
            log: Default::default(),
        }),
        Network::Allow(_) => {
            notes.push(
                "network allowlist: the proxy needs a network namespace, which this engine or machine does not give; the command gets no network at all".into(),
            );
            None
        }
        _ => None,
    };
    let net_rule = match (&proxy, confined_network) {
        (Some(plan), _) => NetRule::ProxyOnly(plan.port),
        (None, true) => NetRule::Closed,
        (None, false) => NetRule::Open,
    };
    (network_namespace, proxy, net_rule)
}

/// The namespaces engine's part: clone flags, id maps, the mount plan (binds, hidden
/// and protected paths) and the private /dev.
#[allow(clippy::too_many_arguments)]
fn namespace_plan(
    prepared: &mut Prepared,
    policy: &Policy,
    cwd: &Path,
    p: &Paths,
    root: bool,
    user_ns_here: bool,
    network_namespace: bool,
    use_landlock: bool,
) -> Result<(), SandboxError> {
    prepared.resolved = Resolved::Namespaces {
        landlock: use_landlock,
        network_namespace,
    };
    // As root, a user namespace of its own still, where the kernel allows one:
    // capabilities there are worth nothing over the host.
    let userns = !root || user_ns_here;
    prepared.keep = if root && userns {
        Keep::NamespaceRoot
    } else {
        Keep::Nothing
    };
    let mut flags =
        libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWUTS | libc::CLONE_NEWIPC;
    if userns {
        flags |= libc::CLONE_NEWUSER;
    }
    if network_namespace {
        flags |= libc::CLONE_NEWNET;
    }
    if root && !userns {
        prepared.notes.push(
            "user namespaces are unavailable: the command runs as root without capabilities, so files of other users are not p.writable".into(),
        );
    }
    let git = git_plan(&p.roots, &p.writable, &mut prepared.notes);
    prepared.git_watch = git.watch.clone();
    let mut protected = git.read_only;
    for dir in workspace_agentbash(policy, &p.roots) {
        protected.push(dir);
    }
    for dir in &policy.own_dirs {
        let dir = expand_home(dir);
        // One that does not exist yet is made now (0700), so the command cannot
        // make it instead: a profile planted in the user's config directory would
        // be trusted by every later run.
        if std::fs::symlink_metadata(&dir).is_err() && p.roots.iter().any(|r| dir.starts_with(r)) {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir);
        }
        if let Ok(dir) = std::fs::canonicalize(&dir)
            && p.roots.iter().any(|r| dir.starts_with(r))
        {
            protected.push(dir);
        }
    }
    protected.sort_by_key(|p| p.as_os_str().len());
    protected.dedup();
    // The run's TMPDIR lives in agentbash's state directory.
    let reopen: Vec<PathBuf> = p
        .own_writable
        .iter()
        .chain(std::iter::once(&p.tmpdir))
        .filter(|p| protected.iter().any(|d| p.starts_with(d)))
        .cloned()
        .collect();
    let mut binds = p.writable.clone();
    binds.extend(git.mount_points);
    binds.sort_by_key(|p| p.as_os_str().len());
    binds.dedup();
    let dev = dev::DevPlan::new(&p.writable, &mut prepared.notes)?;
    prepared.namespaces = Some(Namespaces {
        flags,
        id_maps: userns.then(|| id_maps(root)),
        mounts: mount_plan(&binds, &p.denied, &protected, &reopen)?,
        dev: Some(dev),
        chdir: c_path(cwd)?,
        devnull: c"/dev/null".to_owned(),
        hide_options: c"size=4k,mode=0".to_owned(),
    });
    prepared.landlock_dev = use_landlock;
    if !use_landlock {
        prepared.reason =
            Some("no Landlock: the kernel's second layer over the mounts is missing".into());
    }
    Ok(())
}

/// `/` and the home directory itself are no workspace: `workspace-write` there is no
/// sandbox at all. Refused unless the profile names such a workspace on purpose.
fn is_too_wide(workspace: &Path) -> bool {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| std::fs::canonicalize(h).ok());
    workspace == Path::new("/") || home.as_deref() == Some(workspace)
}

/// The workspace's `.agentbash/` (profiles, rule packs, artifacts): a command must not
/// rewrite the profiles it runs under.
fn workspace_agentbash(policy: &Policy, roots: &[PathBuf]) -> Vec<PathBuf> {
    if policy.mode != Mode::WorkspaceWrite {
        return Vec::new();
    }
    roots
        .first()
        .map(|w| w.join(".agentbash"))
        .filter(|d| d.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .into_iter()
        .collect()
}

/// What the mounts do to the git repositories of the writable trees.
#[derive(Debug, Default)]
struct GitPlan {
    /// `.git` directories made mount points (so they cannot be renamed or replaced),
    /// writable like their tree.
    mount_points: Vec<PathBuf>,
    /// Bound read-only: hooks, config, info, commondir, `.git` files and what they
    /// point to.
    read_only: Vec<PathBuf>,
    /// Files git would honour if a command created them.
    watch: Vec<PathBuf>,
}

/// The repositories the sandbox protects: each writable tree's own `.git` and that of
/// every directory directly inside it (found now; one a command creates later is its
/// own, and nothing outside trusts it).
fn git_plan(roots: &[PathBuf], writable: &[PathBuf], notes: &mut Vec<String>) -> GitPlan {
    let mut plan = GitPlan::default();
    let within = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    for root in roots {
        let mut candidates = vec![root.clone()];
        if let Ok(entries) = std::fs::read_dir(root) {
            for entry in entries.flatten().take(10_000) {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    candidates.push(entry.path());
                }
            }
        }
        for repo in candidates {
            let git = repo.join(".git");
            let Ok(meta) = git.symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                plan.mount_points.push(git.clone());
                protect_gitdir(&git, &within, &mut plan, true);
            } else if meta.is_file() {
                // A worktree or submodule: the pointer itself, and the gitdir it names
                // where the command could otherwise write it.
                plan.read_only.push(git.clone());
                if let Some(gitdir) = read_gitdir(&git, &repo)
                    && within(&gitdir)
                {
                    protect_gitdir(&gitdir, &within, &mut plan, false);
                }
            } else {
                notes.push(format!(
                    "{} is neither a directory nor a file; it is not protected",
                    git.display()
                ));
            }
        }
    }
    plan
}

fn protect_gitdir(gitdir: &Path, within: &dyn Fn(&Path) -> bool, plan: &mut GitPlan, watch: bool) {
    for name in ["hooks", "config", "info", "commondir"] {
        let path = gitdir.join(name);
        if path.symlink_metadata().is_ok() {
            plan.read_only.push(path);
        } else if watch {
            plan.watch.push(path);
        }
    }
    // The gitdirs of its linked worktrees and submodules hold config, hooks and
    // pointers that git follows when it runs in those checkouts (a few levels of
    // nested submodules at most).
    nested_gitdirs(gitdir, plan, 3);
    // A linked worktree's common directory holds the config and hooks git runs.
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        let common = gitdir.join(common.trim());
        if let Ok(common) = std::fs::canonicalize(common)
            && within(&common)
        {
            for name in ["hooks", "config", "info"] {
                let path = common.join(name);
                if path.symlink_metadata().is_ok() {
                    plan.read_only.push(path);
                }
            }
        }
    }
}

/// `gitdir/worktrees/*` and `gitdir/modules/*` (recursively, to `depth`): their
/// `hooks`, `config`, `config.worktree`, `info`, `commondir` and `gitdir` bound
/// read-only.
fn nested_gitdirs(gitdir: &Path, plan: &mut GitPlan, depth: u32) {
    if depth == 0 {
        return;
    }
    for kind in ["worktrees", "modules"] {
        let Ok(entries) = std::fs::read_dir(gitdir.join(kind)) else {
            continue;
        };
        for entry in entries.flatten().take(256) {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let inner = entry.path();
            for name in [
                "hooks",
                "config",
                "config.worktree",
                "info",
                "commondir",
                "gitdir",
            ] {
                let path = inner.join(name);
                if path.symlink_metadata().is_ok() {
                    plan.read_only.push(path);
                }
            }
            nested_gitdirs(&inner, plan, depth - 1);
        }
    }
}

/// The directory a `.git` file (`gitdir: <path>`) points to, resolved.
fn read_gitdir(git_file: &Path, repo: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    std::fs::canonicalize(repo.join(target)).ok()
}

impl Prepared {
    fn none(reason: Option<String>) -> Prepared {
        Prepared {
            resolved: Resolved::None,
            reason,
            notes: Vec::new(),
            namespaces: None,
            ruleset: None,
            landlock_dev: false,
            keep: Keep::Nothing,
            seccomp: None,
            git_watch: Vec::new(),
            proxy: None,
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

pub(super) fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Nul {
        path: path.to_path_buf(),
    })
}

/// As root, the whole id range maps to itself (written by the parent, which holds
/// `CAP_SETUID` over the host's ids); otherwise only the user's own ids, which the
/// kernel lets a user map without privilege once `setgroups` is denied.
fn id_maps(root: bool) -> IdMaps {
    if root {
        return IdMaps {
            deny_setgroups: false,
            uid_map: "0 0 4294967295\n".into(),
            gid_map: "0 0 4294967295\n".into(),
        };
    }
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    IdMaps {
        deny_setgroups: true,
        uid_map: format!("{uid} {uid} 1\n"),
        gid_map: format!("{gid} {gid} 1\n"),
    }
}

/// The mount steps, in order: private propagation, writable binds (and `.git`
/// directories, so they are mount points), everything read-only, writable binds
/// read-write again (nodev, nosuid), denied paths covered, then the protected pieces
/// inside writable trees read-only again (git metadata, `.agentbash`, agentbash's own
/// directories), and last the agentbash-owned paths inside those that must stay
/// writable. Each list is sorted parents first, so a nested bind lands on top of its
/// parent's.
fn mount_plan(
    binds: &[PathBuf],
    denied: &[PathBuf],
    protected: &[PathBuf],
    reopen: &[PathBuf],
) -> Result<Vec<MountStep>, SandboxError> {
    let mut plan = vec![MountStep::Propagation];
    for path in binds {
        plan.push(MountStep::BindSelf(c_path(path)?));
    }
    plan.push(MountStep::ReadOnlyTree(c"/".to_owned()));
    for path in binds {
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
    for path in protected {
        plan.push(MountStep::ReadOnlyBind(c_path(path)?));
    }
    for path in reopen {
        plan.push(MountStep::Reopen(c_path(path)?));
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
/// What Landlock lets the command do with TCP.
#[derive(Debug, Clone, Copy)]
enum NetRule {
    /// Nothing handled: the host's network.
    Open,
    /// No TCP bind or connect at all.
    Closed,
    /// Connect to this port only (the proxy's, on the namespace's loopback).
    ProxyOnly(u16),
}

fn ruleset(
    writable: &[PathBuf],
    denied: &[PathBuf],
    network: NetRule,
    host_dev: bool,
) -> Result<(std::os::fd::OwnedFd, Vec<String>), SandboxError> {
    let root = Path::new("/");
    // Signals reach only the run's own processes (ABI 6; ignored before): `pkill -f
    // agentbash` inside cannot stop the server that runs the command.
    let mut attr = Ruleset::default()
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(|e| landlock_error(root, e))?
        .scope(Scope::Signal)
        .map_err(|e| landlock_error(root, e))?;
    if !matches!(network, NetRule::Open) {
        attr = attr
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(|e| landlock_error(root, e))?
            .scope(Scope::AbstractUnixSocket)
            .map_err(|e| landlock_error(root, e))?;
    }
    let mut ruleset = attr.create().map_err(|e| landlock_error(root, e))?;
    if let NetRule::ProxyOnly(port) = network {
        ruleset = ruleset
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| landlock_error(root, e))?;
    }
    let read = AccessFs::from_read(FS_ABI);
    // No device nodes in a writable tree, whoever asks.
    let write = AccessFs::from_write(FS_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
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
    // With namespaces the command's /dev is private and granted in the child; alone,
    // Landlock grants the host's harmless devices one by one.
    for device in DEVICES.iter().filter(|_| host_dev) {
        let path = Path::new(device);
        if path.exists() {
            let access =
                AccessFs::WriteFile | AccessFs::ReadFile | AccessFs::Truncate | AccessFs::IoctlDev;
            let access = if path.is_dir() {
                access | AccessFs::ReadDir
            } else {
                access
            };
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
