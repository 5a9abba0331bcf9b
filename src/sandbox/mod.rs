//! The kernel sandbox: confine a command's file-system writes, secret reads, network,
//! privileges and view of other processes before it is exec'd, with namespaces,
//! Landlock, a capability drop and a seccomp filter instead of a container runtime.
//!
//! It is split at the fork. [`prepare`] runs in the parent and does everything that may
//! allocate or fail for a reason the user can fix: it resolves the engine, canonicalizes
//! paths, opens the Landlock ruleset and the path fds its rules are built from, compiles
//! the syscall filter, and pre-builds every C string the child will pass to `mount(2)`.
//! The child only issues raw syscalls on that data. With the namespaces engine the
//! spawner clones an init process into the new namespaces, which makes the mounts
//! ([`Prepared::apply_in_init`]) and forks the command, which confines itself last
//! ([`Prepared::apply_in_command`]); the landlock engine needs no init
//! ([`Prepared::apply_in_child`], safe after `vfork`).
//!
//! # What every engine promises
//!
//! - **No privilege over the host**, root included: with the namespaces engine the
//!   command runs in a user namespace of its own (as root the whole id range maps to
//!   itself, so files keep their owners; root inside keeps only the file capabilities,
//!   all of them worthless outside); without one every capability set is emptied and
//!   `SECBIT_NOROOT` locked. `no_new_privs` is set: set-uid programs gain nothing.
//! - **A syscall filter** ([`seccomp`]): mounting, module loading, other namespaces,
//!   the key ring, io_uring, userfaultfd, bpf, perf, the clock and the host name fail
//!   with `EPERM`.
//! - **Only stdin, stdout and stderr** reach the command (the spawner marks every other
//!   descriptor close-on-exec).
//!
//! **namespaces** (user, mount, PID, UTS and IPC namespaces, a network namespace when
//! `network = false`, and Landlock on top whenever the kernel has it):
//! - every mount is read-only except binds of the workspace, `writable` and the private
//!   TMPDIR, which are `nodev,nosuid`; this covers writes, creation, removal, rename,
//!   `chmod`, `chown` and `utime` alike, because the kernel refuses them all on a
//!   read-only mount;
//! - each existing `deny_read` directory is covered by an empty read-only tmpfs, each file
//!   by `/dev/null` (reads return nothing, a socket there refuses connections);
//! - each writable tree's `.git` (and that of each repository directly inside it) is a
//!   mount point, so it cannot be renamed or replaced; its `hooks`, `config`, `info` and
//!   `commondir`, a `.git` file and what it points to, and the workspace's `.agentbash`
//!   are bound read-only, so a command cannot plant code that runs later outside; a git
//!   file that did not exist and that a command creates (`commondir`) is moved aside
//!   after the run ([`Prepared::audit`]);
//! - agentbash's own directories (state, cache, config, sessions, artifacts) are
//!   read-only even inside a writable tree;
//! - a PID namespace with its own `/proc` (read-only): `ps`, `kill` and `pkill` reach
//!   only the run's processes, never the agentbash that runs them;
//! - a private `/dev` ([`dev`]): null, zero, full, random, urandom, tty, its own `pts`
//!   and `shm`, nothing of the host's disks;
//! - with `network = false` the command is in an empty network namespace: loopback is
//!   down, so even `127.0.0.1` is unreachable (`ENETUNREACH`), TCP and UDP alike, and
//!   abstract unix sockets of the host are out of reach;
//! - with `network = [list]` ([`Network::Allow`]) the namespace's loopback is up and
//!   holds one listening socket, `127.0.0.1:3128`, opened by init and served by
//!   agentbash's proxy from the host's namespace (`loopback`, and `crate::netproxy`):
//!   every other address is unreachable, names do not resolve inside, and Landlock
//!   allows TCP connect to that port only; the proxy admits the listed destinations;
//! - Landlock on top: a Landlock-restricted process cannot `mount`, `umount` or
//!   `pivot_root`, and Landlock rules follow inodes, so a directory fd from outside the
//!   namespace does not reopen a way around the mounts.
//!
//! It does not: hide paths that do not exist at prepare time, stop connections to
//! *pathname* unix sockets outside `deny_read` (a read-only mount does not stop
//! `connect(2)` to a socket file: put `/var/run/docker.sock` and the like in `deny_read`),
//! protect a repository the command creates itself, limit what a listed host does
//! with what it is sent (a listed host that relays elsewhere is a way out), or limit
//! CPU, memory or processes.
//!
//! **landlock** alone (no namespaces: works in containers that forbid `unshare`):
//! - writes, creation, removal, rename, linking, truncation and device ioctls are allowed
//!   only beneath the writable set and the minimal device list ([`Mode`]); no device
//!   node can be made anywhere, and the host's `/dev` is unreadable but for that list;
//! - `deny_read` is built into the read allow-list: Landlock can only grant, so every
//!   ancestor of a denied path loses its own read right and each sibling is granted
//!   instead. Consequence: `ls /` or `ls ~` fails when `~/.ssh` is denied, and entries
//!   created in those ancestors after prepare are not readable;
//! - signals reach only the run's own processes (ABI 6);
//! - `network = false` denies TCP `bind`/`connect` (ABI 4) and abstract unix sockets
//!   outside the sandbox (ABI 6). A network allowlist cannot be enforced without a
//!   network namespace (Landlock filters TCP by port, not by address): the command
//!   then gets no network at all, and a note says so.
//!
//! It does not: stop `chmod`, `chown` or `utime` (`touch -d`) anywhere readable, because
//! Landlock does not handle attribute changes; protect `.git/hooks` or `.git/config`
//! inside a writable workspace (Landlock cannot subtract a subtree from a grant); block
//! UDP or other non-TCP protocols; stop writes to a `deny_read` path inside a writable
//! tree; hide a denied file that has a hard link elsewhere; or hide other processes.
//!
//! **none**: nothing is enforced, and [`Prepared::reason`] says why; with
//! `required = true` nothing runs.

mod caps;
mod check;
mod child;
mod dev;
mod loopback;
mod net;
mod policy;
mod prepare;
mod seccomp;
#[cfg(test)]
mod tests;

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;

pub use check::{BwrapInfo, Report, check};

/// The namespaces could not be made after all: the next run probes again instead of
/// trusting what an earlier probe of this boot found.
pub fn forget_probe() {
    check::ProbeCache::forget();
}
pub use child::{ChildError, ChildStep};
pub use loopback::receive_listener;
pub use net::{
    Allowlist, Destination, Network, NetworkLog, Refusal, RefusalReason, Verdict, is_local,
};
pub use policy::{Engine, Mode, Policy};
pub use prepare::prepare;

/// A [`Prepared`] sandbox and the private TMPDIR it lets the command write: what a
/// spawner holds while the command (or a live shell started under it) may still run.
/// Dropping the last holder removes the TMPDIR.
#[derive(Debug)]
pub struct Confinement {
    pub prepared: Prepared,
    pub tmpdir: Option<tempfile::TempDir>,
}

/// The engine [`prepare`] settled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resolved {
    /// Nothing is enforced.
    None,
    /// Landlock alone.
    Landlock,
    /// Namespaces; `landlock` says whether Landlock is layered on top.
    Namespaces {
        landlock: bool,
        network_namespace: bool,
    },
}

/// Everything the child needs, built before fork. Dropping it closes the ruleset and
/// path fds, so keep it alive until the child has exec'd.
#[derive(Debug)]
pub struct Prepared {
    resolved: Resolved,
    reason: Option<String>,
    notes: Vec<String>,
    /// The namespaces engine's plan: a spawner starts the command under an init
    /// process of its own (see [`Prepared::namespaces`]).
    namespaces: Option<Namespaces>,
    ruleset: Option<OwnedFd>,
    /// Add rules for the private `/dev` to `ruleset` in the child (it exists only there).
    landlock_dev: bool,
    /// What the command keeps of its capabilities.
    keep: caps::Keep,
    /// The syscall filter; `None` only where seccomp cannot be compiled or used.
    seccomp: Option<&'static [libc::sock_filter]>,
    /// Git files that did not exist at prepare time and would change what git runs if a
    /// command created them (`.git/commondir`): checked after the run (see
    /// [`Prepared::audit`]).
    git_watch: Vec<PathBuf>,
    /// A network allowlist enforced by agentbash's proxy (namespaces engine only).
    proxy: Option<ProxyPlan>,
}

/// The port inside the command's network namespace where agentbash's proxy listens
/// (the namespace is the command's alone, so any port is free).
pub const PROXY_PORT: u16 = 3128;

/// A network allowlist as the namespaces engine enforces it: init listens on
/// `127.0.0.1:port` inside the command's network namespace (see `loopback`), and
/// agentbash's proxy, holding that socket, admits what `allowlist` lists.
#[derive(Debug)]
pub struct ProxyPlan {
    pub port: u16,
    pub allowlist: Allowlist,
    /// Connect to loopback, link-local and private addresses too.
    pub allow_local: bool,
    /// What the proxy refused (read by the run when it ends).
    pub log: Arc<NetworkLog>,
}

/// The namespaces engine: which namespaces the command's init process is cloned into,
/// the id maps the parent writes for it, and the mounts init makes.
#[derive(Debug)]
pub struct Namespaces {
    /// `CLONE_NEW*` flags for the clone that creates init.
    pub flags: libc::c_int,
    id_maps: Option<IdMaps>,
    mounts: Vec<MountStep>,
    dev: Option<dev::DevPlan>,
    chdir: CString,
    devnull: CString,
    hide_options: CString,
}

#[derive(Debug)]
struct IdMaps {
    /// Write `deny` to `setgroups` first (needed when the writer maps only its own id).
    deny_setgroups: bool,
    uid_map: String,
    gid_map: String,
}

/// One mount operation of the namespaces engine, in the order init runs them.
#[derive(Debug)]
enum MountStep {
    /// Make every mount a slave, so nothing done here propagates back to the host.
    Propagation,
    /// Bind a writable path onto itself, so it is a mount of its own (a `.git`
    /// directory too: a mount point cannot be renamed or replaced).
    BindSelf(CString),
    /// Set read-only on a whole tree.
    ReadOnlyTree(CString),
    /// Clear read-only on a writable bind (recursively), and make it nodev and nosuid.
    WritableTree(CString),
    /// Clear read-only on one mount only: an agentbash-owned path inside a protected
    /// directory that the command's shell must write (a session's pending state).
    Reopen(CString),
    /// Cover a denied directory with an empty read-only tmpfs.
    HideDir(CString),
    /// Cover a denied file with `/dev/null`.
    HideFile(CString),
    /// Bind a path onto itself read-only (`.git/hooks`, `.git/config`, `.agentbash`,
    /// agentbash's own directories inside a writable tree).
    ReadOnlyBind(CString),
}

impl MountStep {
    fn path(&self) -> &std::ffi::CStr {
        match self {
            MountStep::Propagation => c"/",
            MountStep::BindSelf(p)
            | MountStep::ReadOnlyTree(p)
            | MountStep::WritableTree(p)
            | MountStep::Reopen(p)
            | MountStep::HideDir(p)
            | MountStep::HideFile(p)
            | MountStep::ReadOnlyBind(p) => p,
        }
    }
}

impl Prepared {
    /// The engine that will enforce the policy.
    pub fn resolved(&self) -> Resolved {
        self.resolved
    }

    /// Why the engine is weaker than asked (or `None` when it is what was asked).
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Degradations worth telling the user (a missing Landlock feature, a skipped path).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether the child does anything at all.
    pub fn is_active(&self) -> bool {
        self.resolved != Resolved::None
    }

    /// The namespaces engine's plan: when `Some`, the spawner must clone an init
    /// process with [`Namespaces::flags`], write its id maps
    /// ([`Prepared::write_id_maps`]), run [`Prepared::apply_in_init`] there, and
    /// start the command as init's child with [`Prepared::apply_in_command`].
    pub fn namespaces(&self) -> Option<&Namespaces> {
        self.namespaces.as_ref()
    }

    /// Whether the command gets a PID namespace (and with it a `/proc` of its own).
    pub fn pid_namespace(&self) -> bool {
        self.namespaces
            .as_ref()
            .is_some_and(|n| n.flags & libc::CLONE_NEWPID != 0)
    }

    /// The Landlock ruleset's descriptor, which the child must keep open until it
    /// enforces it.
    pub fn ruleset_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.ruleset.as_ref().map(|fd| fd.as_raw_fd())
    }

    /// The network allowlist's proxy plan, when the command's only way out is
    /// agentbash's proxy: the spawner passes init a channel for
    /// [`Prepared::open_proxy_port`] and serves the socket it receives.
    pub fn proxy(&self) -> Option<&ProxyPlan> {
        self.proxy.as_ref()
    }

    /// Whether the syscall filter is applied.
    pub fn filtered(&self) -> bool {
        self.seccomp.is_some()
    }

    /// Git files that a command must not create (`.git/commondir` and the like, which
    /// did not exist when the run started): each one that exists after the run is
    /// renamed aside, and a sentence per file says so. Call it once nothing of the run
    /// is left running.
    pub fn audit(&self) -> Vec<String> {
        let mut out = Vec::new();
        for path in &self.git_watch {
            if std::fs::symlink_metadata(path).is_err() {
                continue;
            }
            let aside = path.with_file_name(format!(
                "{}.refused-by-agentbash",
                path.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            ));
            let moved = std::fs::rename(path, &aside).is_ok();
            out.push(if moved {
                format!(
                    "[sandbox: the command created {}, which would change what git runs outside the sandbox; agentbash moved it to {}]",
                    path.display(),
                    aside.display()
                )
            } else {
                format!(
                    "[sandbox: the command created {}, which would change what git runs outside the sandbox, and agentbash could not move it aside: remove it before running git]",
                    path.display()
                )
            });
        }
        out
    }

    /// A sentence for a [`ChildError`] the child reported: what failed, on which path,
    /// and what to do.
    pub fn explain(&self, error: ChildError) -> String {
        let os = std::io::Error::from_raw_os_error(error.errno);
        let mounts = self.namespaces.as_ref().map(|n| n.mounts.as_slice());
        match error.step {
            ChildStep::Mount | ChildStep::MountPropagation => {
                let path = mounts
                    .and_then(|m| m.get(usize::from(error.index)))
                    .map(|step| step.path().to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!(
                    "sandbox: mounting over {path} failed: {os}; set [sandbox] engine = \"landlock\" if this machine forbids mounts"
                )
            }
            ChildStep::Dev => format!(
                "sandbox: making the private /dev failed: {os}; set [sandbox] engine = \"landlock\" if this machine forbids mounts"
            ),
            ChildStep::Proc => format!(
                "sandbox: mounting the command's own /proc failed: {os}; set [sandbox] engine = \"landlock\" if this machine forbids it"
            ),
            ChildStep::Unshare | ChildStep::IdMap => format!(
                "sandbox: creating namespaces failed: {os}; set [sandbox] engine = \"landlock\" or check `agentbash sandbox check`"
            ),
            ChildStep::Chdir => format!(
                "sandbox: changing back to the working directory failed: {os}; is the cwd under a deny_read path?"
            ),
            ChildStep::NoNewPrivs | ChildStep::Landlock => format!(
                "sandbox: enforcing Landlock failed: {os}; set [sandbox] engine = \"namespaces\" or \"none\""
            ),
            ChildStep::Capabilities => format!(
                "sandbox: dropping the command's capabilities failed: {os}; run `agentbash sandbox check`"
            ),
            ChildStep::Seccomp => format!(
                "sandbox: installing the syscall filter failed: {os}; run `agentbash sandbox check`"
            ),
            ChildStep::Network => format!(
                "sandbox: opening the network allowlist's proxy port inside the command's network namespace failed ({}): {os}; set [sandbox] network = false or true, or run `agentbash sandbox check`",
                [
                    "bringing loopback up",
                    "creating the socket",
                    "binding 127.0.0.1",
                    "listening",
                    "handing the socket over"
                ]
                .get(usize::from(error.index))
                .copied()
                .unwrap_or("setting up")
            ),
        }
    }
}

/// Why [`prepare`] refused a policy.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox: {what} {path} cannot be used: {source}; create it or change [sandbox] {key}")]
    Path {
        what: &'static str,
        key: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "sandbox: [sandbox] required = true but no engine can enforce it here: {reason}; run `agentbash sandbox check`, or set required = false to run unconfined"
    )]
    Unavailable { reason: String },
    #[error(
        "sandbox: engine \"bwrap\" is not available in-process yet; set [sandbox] engine = \"auto\", \"namespaces\" or \"landlock\""
    )]
    BwrapUnsupported,
    #[error(
        "sandbox: building the Landlock ruleset failed at {path}: {message}; remove the path from [sandbox] or set engine = \"namespaces\""
    )]
    Landlock { path: PathBuf, message: String },
    #[error(
        "sandbox: the workspace would be {path}, which is no sandbox at all (agentbash was started there); start it in a project directory, or set [sandbox] workspace to this path on purpose"
    )]
    WideWorkspace { path: PathBuf },
    #[error("sandbox: the path {path} contains a NUL byte; remove it from [sandbox]")]
    Nul { path: PathBuf },
}
