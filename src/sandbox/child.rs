//! The half of the sandbox that runs in the child, between fork (or `vfork`) and exec.
//!
//! Everything here is async-signal-safe: the child may share its memory with the parent
//! (`CLONE_VM | CLONE_VFORK`), so it must not allocate, lock or unwind. It only walks
//! data [`super::prepare`] built and calls raw syscalls on it.

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

const MOUNT_ATTR_RDONLY: u64 = 0x1;
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

fn fail(step: ChildStep, index: usize) -> ChildError {
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

fn write_file(path: &CStr, content: &[u8]) -> Result<(), ChildError> {
    // SAFETY: path is NUL-terminated; content outlives the call.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd.into(), ChildStep::IdMap, 0)?;
        let written = libc::write(fd, content.as_ptr().cast(), content.len());
        let result = if written == content.len() as isize {
            Ok(())
        } else {
            Err(fail(ChildStep::IdMap, 0))
        };
        libc::close(fd);
        result
    }
}

fn set_attr(path: &CStr, set: u64, clear: u64, recursive: bool) -> libc::c_long {
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
            // bind itself is what matters.
            let rc = set_attr(path, 0, MOUNT_ATTR_RDONLY, true);
            if rc < 0 {
                set_attr(path, 0, MOUNT_ATTR_RDONLY, false)
            } else {
                rc
            }
        }
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
    /// Confine the calling process. Call it in the child after fork (or `vfork`/`clone`
    /// with `CLONE_VM`) and before exec; it allocates nothing and takes no lock.
    ///
    /// With the namespaces engine it changes the current directory back to the run's cwd
    /// (the old one pointed below the new read-only mounts), so anything a spawner does
    /// with the cwd must come before this call or use an absolute path.
    ///
    /// A spawner that changes uid or gid before this call must set `PR_SET_DUMPABLE`
    /// back to 1 first: the change makes the process undumpable, its `/proc/self` files
    /// then belong to root, and the user namespace's id maps cannot be written.
    pub fn apply_in_child(&self) -> Result<(), ChildError> {
        if self.unshare_flags != 0 {
            // SAFETY: unshare takes only flags.
            check(
                unsafe { libc::unshare(self.unshare_flags) }.into(),
                ChildStep::Unshare,
                0,
            )?;
        }
        self.apply_in_cloned_child()
    }

    /// The namespace flags to pass to `clone(2)` for a child that then calls
    /// [`Prepared::apply_in_cloned_child`] instead of [`Prepared::apply_in_child`]
    /// (a `CLONE_VM` child cannot `unshare` a user namespace).
    pub fn clone_flags(&self) -> libc::c_int {
        self.unshare_flags
    }

    /// [`Prepared::apply_in_child`] for a child created with [`Prepared::clone_flags`]:
    /// already in its namespaces, so everything but the `unshare`.
    pub fn apply_in_cloned_child(&self) -> Result<(), ChildError> {
        if let Some(maps) = &self.id_maps {
            write_file(&maps.setgroups_path, b"deny")?;
            write_file(&maps.uid_map_path, maps.uid_map.as_bytes())?;
            write_file(&maps.gid_map_path, maps.gid_map.as_bytes())?;
        }
        for (index, step) in self.mounts.iter().enumerate() {
            let rc = run_step(step, &self.devnull, &self.hide_options);
            let kind = if matches!(step, MountStep::Propagation) {
                ChildStep::MountPropagation
            } else {
                ChildStep::Mount
            };
            check(rc, kind, index)?;
        }
        if let Some(cwd) = &self.chdir {
            // SAFETY: cwd is NUL-terminated.
            check(
                unsafe { libc::chdir(cwd.as_ptr()) }.into(),
                ChildStep::Chdir,
                0,
            )?;
        }
        if let Some(ruleset) = &self.ruleset {
            // SAFETY: prctl with integer arguments only.
            check(
                unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }.into(),
                ChildStep::NoNewPrivs,
                0,
            )?;
            // SAFETY: the fd is a Landlock ruleset the parent created and still owns.
            check(
                unsafe {
                    libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
                },
                ChildStep::Landlock,
                0,
            )?;
        }
        Ok(())
    }
}
