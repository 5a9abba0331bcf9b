//! Leaves handed from one agentbash process to the next.
//!
//! Making a leaf and removing it again is most of what a run's group costs (the
//! kernel sets up and tears down a group each time: `mkdir`, `rmdir` and the work they
//! leave behind). So the first leaf of each agentbash process is a pooled one,
//! `pool-<nonce>` in the user's parent group: taken from the pool when an empty one is
//! free, made for it otherwise (up to [`POOL_MAX`]), and given back empty when the run
//! is over, for the next agentbash process. cgroup v2 cannot rename a group, so a
//! leaf is held, not renamed: whoever holds an exclusive `flock` on the leaf's
//! directory has it (the lock goes with the holder's last descriptor, SIGKILL
//! included), and a leaf is taken only when it holds no process and is not frozen.
//! Between runs, no process can enter an empty leaf: a group is entered by forking
//! from a member or by a write to its `cgroup.procs`, which only its holder makes.
//! The watchdog of the process that holds one ends its runs like its other leaves
//! (see the parent module) until the leaf is given back, once it holds the leaf's lock
//! itself: an empty leaf may have been taken by another agentbash in between.
//!
//! A leaf that has once been killed through `cgroup.kill` is never used again: on the
//! kernels this was written on (6.18), every process cloned into such a group with
//! `CLONE_INTO_CGROUP` is killed at once (the clone compares the kill count of the
//! parent's group with the target's). Whoever kills a pooled leaf first dates it to
//! the epoch ([`mark_killed`]), as does a holder that does not give its leaf back;
//! such a leaf is never taken, and whoever finds it so removes it once it is empty.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Pooled leaves are named `pool-<16 hex digits>`.
pub(super) const POOL_PREFIX: &str = "pool-";
/// How many pooled leaves a parent holds at the most: one for each run of the user
/// at the same moment, up to this; runs beyond it make leaves of their own.
pub(super) const POOL_MAX: usize = 8;

/// A pooled leaf this process holds.
pub(super) struct Held {
    pub dir: PathBuf,
    pub fd: OwnedFd,
    /// The leaf's `cgroup.events`, open: read again (`pread` at 0 makes the kernel
    /// write it anew) when the leaf is given back, with no second lookup of its path.
    pub events: OwnedFd,
}

/// Take a free pooled leaf of `parent` (one of `seen`, the names found there), or
/// make one when fewer than [`POOL_MAX`] exist. `None`: the run makes a leaf of its
/// own.
pub(super) fn take(parent: &Path, seen: &[String]) -> Option<Held> {
    for name in seen {
        if let Some(held) = claim(&parent.join(name)) {
            return Some(held);
        }
    }
    if seen.len() >= POOL_MAX {
        return None;
    }
    let dir = parent.join(format!("{POOL_PREFIX}{}", &crate::ids::nonce()[..16]));
    std::fs::create_dir(&dir).ok()?;
    // Another agentbash may have taken it between the mkdir and the lock: then it is
    // theirs, and this run makes a leaf of its own.
    let fd = lock(&dir)?;
    let events = open_events(&fd)?;
    Some(Held { dir, fd, events })
}

/// The leaf at `dir`, when its lock is free and it holds no process and is not
/// frozen (a leaf whose holder died with processes in it is the watchdog's).
fn claim(dir: &Path) -> Option<Held> {
    let fd = lock(dir)?;
    if killed(&fd) {
        // Never used again: removed once its processes are gone (the lock keeps
        // anyone else from taking it meanwhile, though none would).
        super::remove_tree(dir, 0);
        return None;
    }
    let events = open_events(&fd)?;
    let now = read_events(&events)?;
    let has = |line: &str| now.lines().any(|l| l == line);
    if !has("populated 0") || !has("frozen 0") {
        return None;
    }
    Some(Held {
        dir: dir.to_path_buf(),
        fd,
        events,
    })
}

/// `cgroup.events` of the leaf open at `leaf`, opened relative to it.
fn open_events(leaf: &OwnedFd) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: a NUL-terminated name of ours; the descriptor returned is new and ours.
    let fd = unsafe {
        libc::openat(
            leaf.as_raw_fd(),
            c"cgroup.events".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    // SAFETY: `fd` was just opened and nothing else owns it.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What `cgroup.events` (open at `events`) says now: one `pread` from its start,
/// which has the kernel write the file anew (two short lines: `populated`, `frozen`).
fn read_events(events: &OwnedFd) -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: reads into our own buffer, within its length.
    let n = unsafe { libc::pread(events.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    let n = usize::try_from(n).ok().filter(|&n| n < buf.len())?;
    String::from_utf8(buf[..n].to_vec()).ok()
}

/// Whether the leaf open at `fd` was marked as killed (or cannot be asked).
fn killed(fd: &OwnedFd) -> bool {
    stat(fd).is_none_or(|st| st.st_mtime == 0)
}

/// `fstat` of the leaf open at `fd`.
pub(super) fn stat(fd: &OwnedFd) -> Option<libc::stat> {
    // SAFETY: fstat fills the zeroed struct we pass; the descriptor is ours.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd.as_raw_fd(), &mut st) == 0).then_some(st)
    }
}

/// Date the leaf at `path` (NUL-terminated) to the epoch: it was killed, and is never
/// taken again. Async-signal-safe: the watchdog calls it too.
pub(super) fn mark_killed(path: &std::ffi::CStr) {
    let epoch = [libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    }; 2];
    // SAFETY: a path and two timespecs of ours; nothing is kept.
    unsafe { libc::utimensat(libc::AT_FDCWD, path.as_ptr(), epoch.as_ptr(), 0) };
}

/// `dir` opened and locked (exclusive, not waiting), or `None` when another holds it.
fn lock(dir: &Path) -> Option<OwnedFd> {
    let fd: OwnedFd = std::fs::File::open(dir).ok()?.into();
    // SAFETY: flock on a descriptor we own; no memory is passed.
    let locked = unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    locked.then_some(fd)
}

/// Make the held leaf `dir` (open at `held`) fit for the next run: its processes gone
/// (kept ones are moved out by `release`, see `RunGroup::release`), thawed, no group
/// under it (a nested agentbash's), never killed. Waits for the kernel to empty it, bounded by
/// `limit`; `false` when it cannot be given back, and the leaf is then removed like a
/// leaf of one's own.
pub(super) fn fit_for_reuse(
    dir: &Path,
    held: &OwnedFd,
    events: &OwnedFd,
    killed: bool,
    limit: Duration,
    release: impl Fn(),
    only_helpers_left: impl Fn() -> bool,
) -> bool {
    if killed {
        return false;
    }
    let events = || read_events(events).unwrap_or_default();
    let mut now = events();
    if now.lines().any(|l| l == "populated 1") {
        release();
        let deadline = Instant::now() + limit;
        loop {
            now = events();
            if now.lines().any(|l| l == "populated 0") {
                break;
            }
            // The one-run CLI does not wait for its own helpers (see `RunGroup`'s
            // drop): the leaf goes the way of a leaf of one's own.
            if Instant::now() >= deadline || only_helpers_left() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    if now.lines().any(|l| l == "frozen 1")
        && std::fs::write(dir.join("cgroup.freeze"), "0").is_err()
    {
        return false;
    }
    no_groups_under(held)
}

/// Whether no group was made under the leaf open at `fd` (a nested agentbash's): a
/// cgroup directory's link count is 2 and one more for each group in it, which answers
/// what `cgroup.stat`'s `nr_descendants 0` would, with an `fstat` instead of a read.
fn no_groups_under(fd: &OwnedFd) -> bool {
    stat(fd).is_some_and(|st| st.st_nlink == 2)
}
