//! What this machine can enforce, probed for real: a forked child tries each
//! `unshare`, since a sysctl, an LSM or a container's seccomp filter can each forbid one
//! while the kernel has it.

use std::ffi::CString;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use serde::Serialize;

/// Which sandbox mechanisms work here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The Landlock ABI version, `None` when Landlock is missing or disabled.
    pub landlock_abi: Option<i32>,
    pub user_namespaces: bool,
    pub mount_namespaces: bool,
    pub network_isolation: bool,
    pub seccomp: bool,
    /// The calls the sandbox's syscall filter refuses (empty when it cannot be built).
    pub seccomp_filter: Vec<String>,
    /// Sandboxed commands get a PID namespace (and their own `/proc`).
    pub pid_namespace: bool,
    pub bwrap: Option<BwrapInfo>,
    pub root: bool,
    /// How long the probes took.
    pub micros: u128,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BwrapInfo {
    pub path: PathBuf,
    pub version: Option<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes = |b: bool| if b { "yes" } else { "no" };
        match self.landlock_abi {
            Some(abi) => writeln!(f, "landlock:          ABI {abi}")?,
            None => writeln!(f, "landlock:          no")?,
        }
        writeln!(f, "user namespaces:   {}", yes(self.user_namespaces))?;
        writeln!(f, "mount namespaces:  {}", yes(self.mount_namespaces))?;
        writeln!(f, "network isolation: {}", yes(self.network_isolation))?;
        writeln!(f, "seccomp:           {}", yes(self.seccomp))?;
        writeln!(f, "pid namespace:     {}", yes(self.pid_namespace))?;
        if self.seccomp && !self.seccomp_filter.is_empty() {
            writeln!(
                f,
                "syscall filter:    refuses (EPERM) {}",
                self.seccomp_filter.join(", ")
            )?;
        }
        match &self.bwrap {
            Some(b) => writeln!(
                f,
                "bubblewrap:        {} ({})",
                b.path.display(),
                b.version.as_deref().unwrap_or("version unknown")
            )?,
            None => writeln!(f, "bubblewrap:        not installed")?,
        }
        writeln!(f, "engine for auto:   {}", self.auto_engine())
    }
}

impl Report {
    fn auto_engine(&self) -> &'static str {
        match (self.mount_namespaces, self.landlock_abi.is_some()) {
            (true, true) => "namespaces + landlock",
            (true, false) => "namespaces",
            (false, true) => "landlock",
            (false, false) => "none",
        }
    }
}

/// Probe every mechanism (a few forks, well under 20 ms), for real: what a run keeps
/// of an earlier probe is forgotten first.
pub fn check() -> Report {
    ProbeCache::forget();
    let started = Instant::now();
    let support = probe();
    Report {
        landlock_abi: landlock_abi(),
        user_namespaces: support.user,
        mount_namespaces: support.mount,
        network_isolation: support.network,
        seccomp: seccomp_available(),
        seccomp_filter: if super::seccomp::program().is_some() {
            super::seccomp::described()
        } else {
            Vec::new()
        },
        pid_namespace: support.mount,
        bwrap: find_bwrap(),
        root: is_root(),
        micros: started.elapsed().as_micros(),
    }
}

pub(super) fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub(super) fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: the version query takes no attribute struct.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(rc).ok().filter(|abi| *abi > 0)
}

fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP only reads; EINVAL means the kernel has no seccomp.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

fn find_bwrap() -> Option<BwrapInfo> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())?;
    let version = std::process::Command::new(&found)
        .arg("--version")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|v| !v.is_empty());
    Some(BwrapInfo {
        path: found,
        version,
    })
}

/// Which namespaces a child of this process can create.
#[derive(Debug, Clone, Copy)]
pub(super) struct NamespaceSupport {
    pub user: bool,
    pub mount: bool,
    pub network: bool,
}

/// The namespaces every sandboxed command gets from the namespaces engine (plus a
/// user namespace, and a network namespace for `network = false`).
const BASE: libc::c_int =
    libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWUTS | libc::CLONE_NEWIPC;

/// Whether a command can get its private namespaces (and, when `network`, an empty
/// network namespace with them), and whether a user namespace is among them (always,
/// for a user other than root; root gets one where the kernel allows it). Probed once
/// per process and only when an engine needs it: the probe forks, which costs more
/// than the rest of preparing a sandbox. The answer does not change while we run.
pub(super) fn namespaces_here(network: bool) -> NamespacesHere {
    static WITHOUT: OnceLock<NamespacesHere> = OnceLock::new();
    static WITH: OnceLock<NamespacesHere> = OnceLock::new();
    let probe = |net: libc::c_int| -> NamespacesHere {
        if let Some(known) = ProbeCache::read(net != 0) {
            return known;
        }
        let root = is_root();
        let found = if try_in_child(libc::CLONE_NEWUSER | BASE | net, !root, true) {
            NamespacesHere {
                mount: true,
                network: net != 0,
                user: true,
            }
        } else if root && try_in_child(BASE | net, false, true) {
            NamespacesHere {
                mount: true,
                network: net != 0,
                user: false,
            }
        } else {
            NamespacesHere::default()
        };
        if found.mount {
            ProbeCache::write(net != 0, found);
        }
        found
    };
    if !network {
        return *WITHOUT.get_or_init(|| probe(0));
    }
    // The full set first, as the command gets it; only a failure needs the probe
    // that tells whether the network namespace is what is missing.
    *WITH.get_or_init(|| {
        let both = probe(libc::CLONE_NEWNET);
        if both.mount {
            both
        } else {
            *WITHOUT.get_or_init(|| probe(0))
        }
    })
}

/// What the probe found, kept in agentbash's cache directory for the rest of this
/// boot: a CLI run is one process, and probing (a fork that creates the namespaces and
/// waits for them) cost every sandboxed `agentbash run` a millisecond or more. Only a
/// positive answer is kept: a file that says the namespaces work when they do not
/// makes the run fail (the spawn reports it and [`ProbeCache::forget`] removes the
/// file), never run weaker. The file is read only when it is ours, regular and small,
/// and it names this boot, this user and this kernel.
pub(super) struct ProbeCache;

impl ProbeCache {
    fn path() -> std::path::PathBuf {
        crate::paths::cache_dir().join("sandbox-probe")
    }

    /// `boot_id uid release`: when any of them changes the answer may have too.
    fn key() -> Option<String> {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
        Some(format!(
            "{} {} {}",
            boot.trim(),
            crate::fsguard::euid(),
            release.trim()
        ))
    }

    fn line(network: bool, found: NamespacesHere) -> String {
        format!(
            "{} network={} user={}",
            Self::key().unwrap_or_default(),
            u8::from(network),
            u8::from(found.user)
        )
    }

    fn read(network: bool) -> Option<NamespacesHere> {
        let text =
            crate::fsguard::read_text(&Self::path(), 4096, crate::fsguard::Links::Refuse).ok()?;
        let key = Self::key()?;
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(key.as_str())?;
            let user = match rest.trim() {
                r if r == format!("network={} user=1", u8::from(network)) => true,
                r if r == format!("network={} user=0", u8::from(network)) => false,
                _ => return None,
            };
            Some(NamespacesHere {
                mount: true,
                network,
                user,
            })
        })
    }

    fn write(network: bool, found: NamespacesHere) {
        let path = Self::path();
        let Some(dir) = path.parent() else { return };
        if crate::fsguard::private_dir(dir).is_err() {
            return;
        }
        let key = Self::key().unwrap_or_default();
        let mut lines: Vec<String> =
            crate::fsguard::read_text(&path, 4096, crate::fsguard::Links::Refuse)
                .map(|t| {
                    t.lines()
                        .filter(|l| l.starts_with(key.as_str()))
                        .filter(|l| !l.contains(&format!("network={}", u8::from(network))))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
        lines.push(Self::line(network, found));
        let _ = crate::fsguard::write_private(&path, (lines.join("\n") + "\n").as_bytes());
    }

    /// The namespaces failed after all: probe again next time.
    pub(super) fn forget() {
        let _ = std::fs::remove_file(Self::path());
    }
}

/// What [`namespaces_here`] found.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct NamespacesHere {
    pub mount: bool,
    /// Meaningful only when the network namespace was asked for.
    pub network: bool,
    /// The command's namespaces include a user namespace.
    pub user: bool,
}

/// Every probe, for `sandbox check`.
fn probe() -> NamespaceSupport {
    let root = is_root();
    let user_flag = if root { 0 } else { libc::CLONE_NEWUSER };
    NamespaceSupport {
        user: try_in_child(libc::CLONE_NEWUSER, !root, false),
        mount: namespaces_here(false).mount,
        network: try_in_child(user_flag | libc::CLONE_NEWNET, false, false),
    }
}

/// Fork a child that unshares `flags` (writing its id maps when `maps`) and, when
/// `mount`, changes propagation as the real engine's first step does. An LSM can let
/// `unshare` succeed and still deny the mount, which is why the mount is tried too.
fn try_in_child(flags: libc::c_int, maps: bool, mount: bool) -> bool {
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let (Ok(uid_map), Ok(gid_map)) = (
        CString::new(format!("{uid} {uid} 1\n")),
        CString::new(format!("{gid} {gid} 1\n")),
    ) else {
        return false;
    };
    let Ok((answer, report)) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) else {
        return false;
    };
    use std::os::fd::AsRawFd;
    let report_fd = report.as_raw_fd();
    // SAFETY: the child only calls async-signal-safe functions on data built above,
    // then _exits.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return false;
        }
        if pid == 0 {
            // agentbash is not dumpable, nor this fork of it; its /proc files would
            // then belong to root, and a user's id maps could not be written.
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
            if libc::unshare(flags) != 0 {
                libc::_exit(1);
            }
            if maps {
                let ok = write_all(c"/proc/self/setgroups", b"deny")
                    && write_all(c"/proc/self/uid_map", uid_map.as_bytes())
                    && write_all(c"/proc/self/gid_map", gid_map.as_bytes());
                if !ok {
                    libc::_exit(2);
                }
            }
            if mount
                && libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    std::ptr::null(),
                ) != 0
            {
                libc::_exit(3);
            }
            libc::write(report_fd, b"y".as_ptr().cast(), 1);
            libc::_exit(0);
        }
        crate::children::register_helper(pid);
        drop(report);
        // The answer comes before the child's exit, which waits for the kernel to take
        // its namespaces apart: that wait is not ours.
        let mut byte = [0u8; 1];
        let ok = loop {
            match nix::unistd::read(&answer, &mut byte) {
                Ok(1) => break byte[0] == b'y',
                Err(nix::errno::Errno::EINTR) => continue,
                _ => break false,
            }
        };
        crate::children::reap_later(pid);
        ok
    }
}

/// # Safety
/// Async-signal-safe; `path` must be NUL-terminated.
unsafe fn write_all(path: &std::ffi::CStr, content: &[u8]) -> bool {
    // SAFETY: the caller passes a valid path; content outlives the call.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let ok = libc::write(fd, content.as_ptr().cast(), content.len()) == content.len() as isize;
        libc::close(fd);
        ok
    }
}
