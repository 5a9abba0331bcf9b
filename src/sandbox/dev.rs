//! The command's own `/dev`: a small tmpfs with only the devices a program needs (null,
//! zero, full, random, urandom, tty), a private pseudo-terminal instance (`pts`, with
//! `ptmx` pointing into it), a private `shm`, and the usual `/proc/self/fd` links, as
//! bubblewrap's `--dev` makes. Without it, the host's `/dev` stays visible under the
//! read-only root, and uid 0 passes owner checks on the disk nodes (`/dev/vda` is
//! `root:disk 0660`): even without a single capability it could read a raw disk, past
//! every `deny_read`.
//!
//! The devices are the host's own nodes, bound in with `open_tree`/`move_mount` (the
//! command cannot create nodes: it has no `CAP_MKNOD` over the host). Writable paths the
//! run needs under `/dev` (a session's state in `/dev/shm`) are bound back in at their
//! own path. Runs in the namespace's init, between fork and exec: raw syscalls on data
//! built in the parent.

use std::ffi::{CStr, CString};

use super::child::{ChildError, ChildStep};

/// Devices bound into the private `/dev`, when the host has them.
pub(super) const DEVICES: &[&CStr] = &[
    c"/dev/null",
    c"/dev/zero",
    c"/dev/full",
    c"/dev/random",
    c"/dev/urandom",
    c"/dev/tty",
];

/// At most this many paths are bound in (devices plus writable paths under `/dev`).
const MAX_BINDS: usize = 32;

/// A writable path of the run that lies under `/dev`, bound back in after `/dev` is
/// replaced.
#[derive(Debug)]
pub(super) struct Reattach {
    pub path: CString,
    /// Directories to create in the new `/dev` first, parents first.
    pub parents: Vec<CString>,
    pub is_dir: bool,
}

/// What [`DevPlan::apply`] does, built in the parent.
#[derive(Debug)]
pub(super) struct DevPlan {
    pub devices: Vec<CString>,
    pub reattach: Vec<Reattach>,
}

impl DevPlan {
    /// The plan for this machine: the devices that exist, and `writable` paths under
    /// `/dev` (at most [`MAX_BINDS`] in all; more are left out with a note).
    pub fn new(
        writable: &[std::path::PathBuf],
        notes: &mut Vec<String>,
    ) -> Result<DevPlan, super::SandboxError> {
        use std::os::unix::ffi::OsStrExt;
        let devices: Vec<CString> = DEVICES
            .iter()
            .filter(|d| std::path::Path::new(d.to_str().unwrap_or("/")).exists())
            .map(|d| (*d).to_owned())
            .collect();
        let mut reattach = Vec::new();
        for path in writable {
            let Ok(rest) = path.strip_prefix("/dev") else {
                continue;
            };
            if devices.len() + reattach.len() >= MAX_BINDS {
                notes.push(format!(
                    "{} is not available in the sandbox: too many writable paths under /dev",
                    path.display()
                ));
                continue;
            }
            let mut parents = Vec::new();
            let mut at = std::path::PathBuf::from("/dev");
            let components: Vec<_> = rest.components().collect();
            for c in components.iter().take(components.len().saturating_sub(1)) {
                at.push(c);
                // /dev/pts and /dev/shm are mounts of their own, made before this.
                if at != std::path::Path::new("/dev/shm") && at != std::path::Path::new("/dev/pts")
                {
                    parents.push(super::prepare::c_path(&at)?);
                }
            }
            reattach.push(Reattach {
                path: CString::new(path.as_os_str().as_bytes()).map_err(|_| {
                    super::SandboxError::Nul {
                        path: path.to_path_buf(),
                    }
                })?,
                parents,
                is_dir: path.is_dir(),
            });
        }
        Ok(DevPlan { devices, reattach })
    }

    /// Replace `/dev`. Runs in init, in the new mount namespace.
    ///
    /// `tty`, when the command runs on a terminal, is that terminal's descriptor: its
    /// node is bound in as `/dev/console`, so `ttyname` (which falls back to searching
    /// `/dev` for the device) names it although the private `pts` does not hold it.
    pub fn apply(&self, tty: Option<libc::c_int>) -> Result<(), ChildError> {
        let mut fds = [-1; MAX_BINDS];
        let console = tty.map_or(-1, console_tree);
        self.open_sources(&mut fds)?;
        self.mount_devices(&fds)?;
        mount_pts_and_shm()?;
        if console >= 0 {
            bind_console(console)?;
        }
        link_std_fds()?;
        self.reattach_writable(&fds)?;
        // Nothing new may be created in /dev itself (its mounts keep their own flags).
        if super::child::set_attr(c"/dev", super::child::MOUNT_ATTR_RDONLY, 0, false) < 0 {
            return Err(fail(104));
        }
        Ok(())
    }

    /// Detach a copy of every node to bind in while the host's `/dev` is still in
    /// view (the tmpfs about to be mounted hides it); `fds` is indexed as the binds.
    fn open_sources(&self, fds: &mut [libc::c_int; MAX_BINDS]) -> Result<(), ChildError> {
        let sources = self
            .devices
            .iter()
            .map(|d| d.as_c_str())
            .chain(self.reattach.iter().map(|r| r.path.as_c_str()));
        for (i, source) in sources.enumerate().take(MAX_BINDS) {
            fds[i] = open_tree(source);
            if fds[i] < 0 {
                return Err(fail(i));
            }
        }
        Ok(())
    }

    /// The new `/dev` tmpfs, with the devices bound in at their own names.
    fn mount_devices(&self, fds: &[libc::c_int; MAX_BINDS]) -> Result<(), ChildError> {
        // SAFETY: all strings are NUL-terminated and built before fork; each fd is a
        // detached tree from `open_sources`, closed once moved.
        unsafe {
            if libc::mount(
                c"tmpfs".as_ptr(),
                c"/dev".as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NOEXEC | libc::MS_NODEV,
                c"mode=0755,size=1m".as_ptr().cast(),
            ) != 0
            {
                return Err(fail(100));
            }
            for (i, device) in self.devices.iter().enumerate() {
                if !make_file(device) || move_into(fds[i], device) != 0 {
                    return Err(fail(i));
                }
                libc::close(fds[i]);
            }
        }
        Ok(())
    }

    /// Bind the run's writable paths under `/dev` back in, creating their parents.
    fn reattach_writable(&self, fds: &[libc::c_int; MAX_BINDS]) -> Result<(), ChildError> {
        let base = self.devices.len();
        // SAFETY: all strings are NUL-terminated and built before fork; each fd is a
        // detached tree from `open_sources`, closed once moved.
        unsafe {
            for (i, r) in self.reattach.iter().enumerate() {
                for dir in &r.parents {
                    if libc::mkdir(dir.as_ptr(), 0o700) != 0
                        && *libc::__errno_location() != libc::EEXIST
                    {
                        return Err(fail(base + i));
                    }
                }
                let made = if r.is_dir {
                    libc::mkdir(r.path.as_ptr(), 0o700) == 0
                } else {
                    make_file(&r.path)
                };
                if !made || move_into(fds[base + i], &r.path) != 0 {
                    return Err(fail(base + i));
                }
                libc::close(fds[base + i]);
            }
        }
        Ok(())
    }
}

/// The failed `/dev` step `index` (a bind's index, or 100 and up for the fixed steps),
/// with the errno of the call that just failed.
fn fail(index: usize) -> ChildError {
    super::child::fail(ChildStep::Dev, index)
}

/// A detached copy of the terminal `fd` refers to, found through `/proc/self/fd`
/// (stack buffers only: this runs between fork and exec); -1 when there is none.
fn console_tree(fd: libc::c_int) -> libc::c_int {
    let mut link = [0u8; 40];
    let mut path = [0u8; 128];
    let mut n = 0;
    for &b in b"/proc/self/fd/" {
        link[n] = b;
        n += 1;
    }
    n += write_decimal(&mut link[n..], fd);
    link[n] = 0;
    // SAFETY: both buffers are on our stack and NUL-terminated by hand.
    let len = unsafe {
        libc::readlink(
            link.as_ptr().cast(),
            path.as_mut_ptr().cast(),
            path.len() - 1,
        )
    };
    if len > 0 && (len as usize) < path.len() - 1 {
        path[len as usize] = 0;
        if let Ok(p) = CStr::from_bytes_until_nul(&path) {
            return open_tree(p);
        }
    }
    -1
}

/// A private `devpts` instance (`ptmx` pointing into it) and a private `shm`.
fn mount_pts_and_shm() -> Result<(), ChildError> {
    // SAFETY: all strings are NUL-terminated literals.
    unsafe {
        if libc::mkdir(c"/dev/pts".as_ptr(), 0o755) != 0
            || libc::mount(
                c"devpts".as_ptr(),
                c"/dev/pts".as_ptr(),
                c"devpts".as_ptr(),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                c"newinstance,ptmxmode=0666,mode=620".as_ptr().cast(),
            ) != 0
            || libc::symlink(c"pts/ptmx".as_ptr(), c"/dev/ptmx".as_ptr()) != 0
        {
            return Err(fail(101));
        }
        if libc::mkdir(c"/dev/shm".as_ptr(), 0o1777) != 0
            || libc::mount(
                c"tmpfs".as_ptr(),
                c"/dev/shm".as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=1777".as_ptr().cast(),
            ) != 0
        {
            return Err(fail(102));
        }
    }
    Ok(())
}

/// The terminal's node as `/dev/console` (`console` is its tree from [`console_tree`]).
fn bind_console(console: libc::c_int) -> Result<(), ChildError> {
    if !make_file(c"/dev/console") || move_into(console, c"/dev/console") != 0 {
        return Err(fail(105));
    }
    // SAFETY: console is our descriptor, moved into place and no longer needed.
    unsafe { libc::close(console) };
    Ok(())
}

/// `/dev/fd` and the standard streams, as links into `/proc/self/fd`.
fn link_std_fds() -> Result<(), ChildError> {
    for (link, target) in [
        (c"/dev/fd", c"/proc/self/fd"),
        (c"/dev/stdin", c"/proc/self/fd/0"),
        (c"/dev/stdout", c"/proc/self/fd/1"),
        (c"/dev/stderr", c"/proc/self/fd/2"),
    ] {
        // SAFETY: both strings are NUL-terminated literals.
        if unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) } != 0 {
            return Err(fail(103));
        }
    }
    Ok(())
}

/// `value` in decimal into `buf`; returns the number of bytes written.
fn write_decimal(buf: &mut [u8], value: libc::c_int) -> usize {
    let mut digits = [0u8; 12];
    let mut v = value.unsigned_abs();
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        buf[i] = digits[n - 1 - i];
    }
    n
}

fn open_tree(path: &CStr) -> libc::c_int {
    const OPEN_TREE_CLONE: libc::c_uint = 1;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    // SAFETY: path is NUL-terminated; the call returns a new descriptor or -1.
    unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | AT_RECURSIVE | libc::O_CLOEXEC as libc::c_uint,
        ) as libc::c_int
    }
}

fn move_into(fd: libc::c_int, target: &CStr) -> libc::c_long {
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    // SAFETY: fd is a detached mount from open_tree; both strings are NUL-terminated.
    unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    }
}

/// An empty regular file to mount over.
fn make_file(path: &CStr) -> bool {
    // SAFETY: path is NUL-terminated.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
            0o600,
        );
        if fd < 0 {
            return false;
        }
        libc::close(fd);
        true
    }
}
