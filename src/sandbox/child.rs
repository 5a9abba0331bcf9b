//! The half of the sandbox that runs in the child, between fork (or `vfork`) and exec.
//!
//! Everything here is async-signal-safe: the child may share its memory with the parent
//! (`CLONE_VM | CLONE_VFORK`), or be a fork of a multi-threaded process, so it must not
//! allocate, lock or unwind. It only walks data [`super::prepare`] built and calls raw
//! syscalls on it.
//!
//! With the namespaces engine it runs in two processes: the namespace's init makes the
//! mounts ([`Prepared::apply_in_init`]), and the command, init's child, confines itself
//! last before exec ([`Prepared::apply_in_command`]): its own `/proc`, `no_new_privs`,
//! Landlock, capabilities, seccomp, in that order (each step needs what a later one
//! removes).

use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr;

use super::{MountStep, Prepared};

/// Which step of [`Prepared::apply_in_child`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ChildStep {
    Unshare = 1,
    IdMap,
    MountPropagation,
    Mount,
    Chdir,
    NoNewPrivs,
    Landlock,
    Dev,
    Proc,
    Capabilities,
    Seccomp,
    /// Loopback up, the proxy's listening socket and its handoff (network allowlist).
    Network,
}

/// A failed step and its errno, small and `Copy` so a spawner can send it to the parent
/// over a pipe; [`Prepared::explain`] turns it into a sentence there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildError {
    pub step: ChildStep,
    /// Index into the mount plan for [`ChildStep::Mount`], else 0.
    pub index: u16,
    pub errno: i32,
}

impl fmt::Display for ChildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sandbox step {:?} failed: {}",
            self.step,
            io::Error::from_raw_os_error(self.errno)
        )
    }
}

impl std::error::Error for ChildError {}

impl From<ChildError> for io::Error {
    /// Keeps only the errno: an OS error is the one `io::Error` that needs no allocation.
    fn from(error: ChildError) -> io::Error {
        io::Error::from_raw_os_error(error.errno)
    }
}

pub(super) const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const AT_RECURSIVE: libc::c_uint = 0x8000;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn errno() -> i32 {
    // SAFETY: reading the thread's errno is always allowed.
    unsafe { *libc::__errno_location() }
}

pub(super) fn fail(step: ChildStep, index: usize) -> ChildError {
    ChildError {
        step,
        index: u16::try_from(index).unwrap_or(u16::MAX),
        errno: errno(),
    }
}

fn check(rc: libc::c_long, step: ChildStep, index: usize) -> Result<(), ChildError> {
    if rc < 0 {
        Err(fail(step, index))
    } else {
        Ok(())
    }
}

pub(super) fn set_attr(path: &CStr, set: u64, clear: u64, recursive: bool) -> libc::c_long {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: attr lives on the stack for the call; the size matches the struct.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            size_of::<MountAttr>(),
        )
    }
}

fn bind(source: &CStr, target: &CStr) -> libc::c_long {
    // SAFETY: both paths are NUL-terminated.
    unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            ptr::null(),
        )
        .into()
    }
}

fn run_step(step: &MountStep, devnull: &CStr, hide_options: &CString) -> libc::c_long {
    match step {
        MountStep::Propagation => {
            // SAFETY: a propagation change takes no source, type or data.
            unsafe {
                libc::mount(
                    ptr::null(),
                    c"/".as_ptr(),
                    ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    ptr::null(),
                )
                .into()
            }
        }
        MountStep::BindSelf(path) => bind(path, path),
        MountStep::ReadOnlyTree(path) => set_attr(path, MOUNT_ATTR_RDONLY, 0, true),
        MountStep::WritableTree(path) => {
            // A read-only mount below the bind that the kernel locked (a user namespace
            // cannot clear what its owner set) fails the recursive call as a whole; the
            // bind itself is what matters. Writable trees never honour device nodes or
            // set-uid bits.
            let safe = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            let rc = set_attr(path, safe, MOUNT_ATTR_RDONLY, true);
            if rc < 0 {
                set_attr(path, safe, MOUNT_ATTR_RDONLY, false)
            } else {
                rc
            }
        }
        MountStep::Reopen(path) => set_attr(
            path,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            MOUNT_ATTR_RDONLY,
            false,
        ),
        MountStep::HideDir(path) => {
            // SAFETY: all strings are NUL-terminated and built before fork.
            unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    hide_options.as_ptr().cast(),
                )
                .into()
            }
        }
        MountStep::HideFile(path) => {
            let rc = bind(devnull, path);
            if rc < 0 {
                rc
            } else {
                set_attr(path, MOUNT_ATTR_RDONLY, 0, false)
            }
        }
        MountStep::ReadOnlyBind(path) => {
            let rc = bind(path, path);
            if rc < 0 {
                rc
            } else {
                set_attr(path, MOUNT_ATTR_RDONLY, 0, true)
            }
        }
    }
}

impl Prepared {
    /// Confine the calling process, for the engines that need no namespaces (Landlock
    /// alone, or none). Call it in the child after fork (or `vfork`/`clone` with
    /// `CLONE_VM`) and before exec; it allocates nothing and takes no lock. With the
    /// namespaces engine it fails (`EINVAL`): that engine needs the spawner's init
    /// process (see [`Prepared::namespaces`]).
    pub fn apply_in_child(&self) -> Result<(), ChildError> {
        if !self.is_active() {
            return Ok(());
        }
        if self.namespaces.is_some() {
            // SAFETY: setting the thread's errno.
            unsafe { *libc::__errno_location() = libc::EINVAL };
            return Err(fail(ChildStep::Unshare, 0));
        }
        self.apply_in_command()
    }

    /// Write the id maps of init process `pid` (just cloned into a new user namespace,
    /// waiting for them). Runs in the parent, which may allocate. As root the whole id
    /// range maps to itself, so files keep their owners and root inside is root over
    /// its own files, with capabilities worth nothing outside; otherwise the user's own
    /// ids only.
    pub fn write_id_maps(&self, pid: i32) -> std::io::Result<()> {
        let Some(maps) = self.namespaces.as_ref().and_then(|n| n.id_maps.as_ref()) else {
            return Ok(());
        };
        let write = |name: &str, content: &str| {
            std::fs::write(format!("/proc/{pid}/{name}"), content.as_bytes())
        };
        if maps.deny_setgroups {
            write("setgroups", "deny")?;
        }
        write("uid_map", &maps.uid_map)?;
        write("gid_map", &maps.gid_map)
    }

    /// The namespace's init, after its id maps are written: every mount, then the
    /// working directory again (the old one pointed below the new mounts). `tty` is
    /// the command's terminal, when it runs on one (see the private `/dev`).
    pub fn apply_in_init(&self, tty: Option<libc::c_int>) -> Result<(), ChildError> {
        let Some(ns) = &self.namespaces else {
            return Ok(());
        };
        for (index, step) in ns.mounts.iter().enumerate() {
            let rc = run_step(step, &ns.devnull, &ns.hide_options);
            let kind = if matches!(step, MountStep::Propagation) {
                ChildStep::MountPropagation
            } else {
                ChildStep::Mount
            };
            check(rc, kind, index)?;
        }
        if let Some(dev) = &ns.dev {
            dev.apply(tty)?;
        }
        // SAFETY: chdir is NUL-terminated.
        check(
            unsafe { libc::chdir(ns.chdir.as_ptr()) }.into(),
            ChildStep::Chdir,
            0,
        )
    }

    /// The command's own process, last before exec: its `/proc` (in a PID namespace),
    /// `no_new_privs`, Landlock, the capability drop and the syscall filter.
    pub fn apply_in_command(&self) -> Result<(), ChildError> {
        if self.pid_namespace() {
            // Read-only: as uid 0 the command still owns /proc/sys and
            // /proc/sysrq-trigger by their owner bits.
            // SAFETY: all strings are NUL-terminated and static.
            check(
                unsafe {
                    libc::mount(
                        c"proc".as_ptr(),
                        c"/proc".as_ptr(),
                        c"proc".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
                        ptr::null(),
                    )
                }
                .into(),
                ChildStep::Proc,
                0,
            )?;
        }
        // SAFETY: prctl with integer arguments only.
        check(
            unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }.into(),
            ChildStep::NoNewPrivs,
            0,
        )?;
        if let Some(ruleset) = &self.ruleset {
            if self.landlock_dev {
                grant_private_dev(ruleset.as_raw_fd())?;
            }
            // SAFETY: the fd is a Landlock ruleset the parent created and still owns.
            check(
                unsafe {
                    libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
                },
                ChildStep::Landlock,
                0,
            )?;
        }
        super::caps::drop(self.keep).map_err(|errno| ChildError {
            step: ChildStep::Capabilities,
            index: 0,
            errno,
        })?;
        if let Some(program) = self.seccomp {
            super::seccomp::install(program).map_err(|errno| ChildError {
                step: ChildStep::Seccomp,
                index: 0,
                errno,
            })?;
        }
        Ok(())
    }
}

/// Landlock's `struct landlock_path_beneath_attr` (packed in the kernel's header).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// Landlock rights (ABI 5 numbering).
const LL_WRITE_FILE: u64 = 1 << 1;
const LL_READ_FILE: u64 = 1 << 2;
const LL_READ_DIR: u64 = 1 << 3;
const LL_REMOVE_DIR: u64 = 1 << 4;
const LL_REMOVE_FILE: u64 = 1 << 5;
const LL_MAKE_DIR: u64 = 1 << 7;
const LL_MAKE_REG: u64 = 1 << 8;
const LL_MAKE_SOCK: u64 = 1 << 9;
const LL_MAKE_FIFO: u64 = 1 << 10;
const LL_MAKE_SYM: u64 = 1 << 12;
const LL_TRUNCATE: u64 = 1 << 14;
const LL_IOCTL_DEV: u64 = 1 << 15;

/// The private `/dev` exists only in the command's mount namespace, so its rights are
/// added to the ruleset here: its devices (and its own pty instance) may be written,
/// and `/dev/shm` is a scratch directory like TMPDIR.
fn grant_private_dev(ruleset: libc::c_int) -> Result<(), ChildError> {
    let devices = LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE | LL_IOCTL_DEV | LL_READ_DIR;
    let scratch = devices
        | LL_REMOVE_DIR
        | LL_REMOVE_FILE
        | LL_MAKE_DIR
        | LL_MAKE_REG
        | LL_MAKE_SOCK
        | LL_MAKE_FIFO
        | LL_MAKE_SYM;
    for (path, access) in [(c"/dev", devices), (c"/dev/shm", scratch)] {
        // SAFETY: path is NUL-terminated; the attr lives on the stack for the call.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            check(fd.into(), ChildStep::Landlock, 0)?;
            let attr = PathBeneath {
                allowed_access: access,
                parent_fd: fd,
            };
            let rc = libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                1, /* LANDLOCK_RULE_PATH_BENEATH */
                &attr as *const PathBeneath,
                0u32,
            );
            libc::close(fd);
            check(rc, ChildStep::Landlock, 0)?;
        }
    }
    Ok(())
}
