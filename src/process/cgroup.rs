//! A cgroup v2 group per run, and a watchdog that empties them if agentbash dies.
//!
//! Where cgroup v2 is mounted and writable, every run's leader is put into a group of
//! its own before it execs (see `process::spawn_in`). Membership is then the run's
//! attribution: a process that called setsid, double-forked and cleared its
//! environment is still in the group, and two concurrent runs never see each other's
//! processes. Teardown freezes the group (nothing in it can fork), lists it, and ends
//! it with `cgroup.kill`.
//!
//! The run groups of one user are leaves of one parent group, `agentbash-user-<uid>`
//! beside agentbash's own group (or at the root of the hierarchy when that one is not
//! writable), made by the first agentbash that needs it and then kept: a run pays for
//! its own leaf only. A parent owned by anyone else is never used. Each agentbash
//! process names its leaves `<pid>-<token>-<n>`, the token telling it apart from an
//! earlier process with the same pid that left a group behind; its first leaf comes
//! from a pool handed from one agentbash process to the next (`pool.rs`). A watchdog —
//! one small forked child per agentbash process, not per run — holds the read end of a
//! pipe whose write end only agentbash holds: when agentbash dies by any means (SIGKILL
//! included) the pipe reads end-of-file, and the watchdog writes `cgroup.kill` of each
//! leaf of its agentbash (never another process's, and its pooled leaf only until it
//! is given back) and removes them. A leaf left behind all the same (agentbash killed
//! before its watchdog started; the one-run CLI not waiting for its sandbox's init to
//! leave) is removed by the next agentbash process when it makes its first leaf. Where no group can be made, teardown falls
//! back to the /proc scan by run marker (see `process::Teardown`), and nothing
//! outlives a SIGKILL of agentbash but its direct child's parent-death signal.

use super::teardown::FREEZE_LIMIT;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long an emptied group's removal is retried.
const RMDIR_LIMIT: Duration = Duration::from_millis(500);
/// How many leaf names a run tries (a name taken is someone else's: the next one).
const LEAF_TRIES: usize = 8;

/// The user's parent group as this process uses it, found (or made) once.
struct Parent {
    /// `<group>/agentbash-user-<uid>`, shared by the user's agentbash processes.
    dir: PathBuf,
    /// `cgroup.procs` of the group agentbash itself is in: kept processes go back there.
    home_procs: PathBuf,
    /// This process's leaves are `<prefix><n>`: `<pid>-<token>-`.
    prefix: String,
    next: AtomicU64,
    /// The pooled leaves (`pool.rs`) found when this process made its parent; taken
    /// (`None`) by its first leaf, the only one that may come from the pool.
    pool_seen: Mutex<Option<Vec<String>>>,
    /// The pooled leaf this process holds, and whether the watchdog was told of it:
    /// one lock for both, so a leaf given back is never one the watchdog still kills.
    pool_held: Mutex<PoolHeld>,
}

#[derive(Default)]
struct PoolHeld {
    name: Option<String>,
    /// The write end of the watchdog's pipe, once it runs.
    watchdog_pipe: Option<libc::c_int>,
}

mod pool;

static PARENT: OnceLock<Option<Parent>> = OnceLock::new();
static WATCHDOG: AtomicI32 = AtomicI32::new(0);

/// The watchdog's pid (0 when there is none). It is agentbash's child but no run's.
pub fn watchdog_pid() -> i32 {
    WATCHDOG.load(Ordering::Relaxed)
}

/// Whether run groups are disabled (`AGENTBASH_NO_CGROUP` set: for tests of the
/// fallback, and for hosts where a cgroup must not be made).
fn disabled() -> bool {
    std::env::var_os("AGENTBASH_NO_CGROUP").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Where cgroup2 is usually mounted: unified, then hybrid.
const USUAL_MOUNTS: [&str; 2] = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];

/// The cgroup2 mount point: where systemd and most distributions put it (unified:
/// `/sys/fs/cgroup`; hybrid: `/sys/fs/cgroup/unified`), asked with one `statfs` each;
/// elsewhere, the first cgroup2 line of /proc/self/mountinfo (a file of a few
/// kilobytes the kernel formats on every read).
fn cgroup2_mount() -> Option<PathBuf> {
    use nix::sys::statfs::{CGROUP2_SUPER_MAGIC, statfs};
    for usual in USUAL_MOUNTS {
        if statfs(usual).is_ok_and(|s| s.filesystem_type() == CGROUP2_SUPER_MAGIC) {
            return Some(PathBuf::from(usual));
        }
    }
    let info = super::read_kernel_file("/proc/self/mountinfo").ok()?;
    mountinfo_cgroup2(&info)
}

/// The mount point of the first cgroup2 line of a mountinfo text.
fn mountinfo_cgroup2(info: &str) -> Option<PathBuf> {
    for line in info.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        if post.split_ascii_whitespace().next() != Some("cgroup2") {
            continue;
        }
        let point = pre.split_ascii_whitespace().nth(4)?;
        return Some(PathBuf::from(unescape_mount(point)));
    }
    None
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4]).ok();
            if let Some(v) = oct.and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup v2 path, from the `0::/path` line of /proc/self/cgroup, and
/// whether the file has other lines too: cgroup v1 hierarchies beside v2, as on a
/// hybrid system, where v2 is usually at `/sys/fs/cgroup/unified`.
fn own_cgroup() -> Option<(String, bool)> {
    parse_own(&super::read_kernel_file("/proc/self/cgroup").ok()?)
}

/// [`own_cgroup`] of the text of /proc/self/cgroup.
fn parse_own(s: &str) -> Option<(String, bool)> {
    let own = s
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim_start_matches('/').to_string())?;
    Some((own, s.lines().any(|l| !l.starts_with("0::"))))
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// The name of the parent group of user `uid`'s runs.
fn parent_name(uid: u32) -> String {
    format!("agentbash-user-{uid}")
}

fn make_parent() -> Option<Parent> {
    if disabled() {
        return None;
    }
    let (own, hybrid) = own_cgroup()?;
    let name = parent_name(euid());
    let (mount, dir, fd) = match existing_parent(&own, hybrid, &name) {
        Some(found) => found,
        None => {
            let mount = cgroup2_mount()?;
            let home = mount.join(&own);
            let dir = [home.join(&name), mount.join(&name)]
                .into_iter()
                .find(|d| usable_parent(d))?;
            let fd = open_parent(&dir)?;
            (mount, dir, fd)
        }
    };
    let home = mount.join(&own);
    // The token only tells this process's leaves apart from those of an earlier
    // process that had the same pid.
    let token = crate::ids::nonce();
    let prefix = format!("{}-{}-", std::process::id(), &token[..16]);
    let pooled = remove_stale_leaves(fd, &dir, &prefix);
    Some(Parent {
        dir,
        home_procs: home.join("cgroup.procs"),
        prefix,
        next: AtomicU64::new(0),
        pool_seen: Mutex::new(Some(pooled)),
        pool_held: Mutex::new(PoolHeld::default()),
    })
}

/// The user's parent group where it already is beside this process's own group, found
/// with one `open` instead of asking the mounts (`statfs`) and the paths (`stat`):
/// `<mount>/<own>/<name>` for each usual mount (on a hybrid system, `…/unified`
/// first), taken when [`open_parent`] vouches for it. For a process in the root group
/// that is also where the parent at the root would be; otherwise a parent missing
/// beside its group is left to [`make_parent`]'s slow path, which makes it there or
/// falls back to the root. Returns the mount, the parent's path and the parent, open.
fn existing_parent(own: &str, hybrid: bool, name: &str) -> Option<(PathBuf, PathBuf, OwnedFd)> {
    let mut mounts = USUAL_MOUNTS;
    if hybrid {
        mounts.reverse();
    }
    mounts.into_iter().find_map(|m| {
        let mount = PathBuf::from(m);
        let dir = mount.join(own).join(name);
        open_parent(&dir).map(|fd| (mount, dir, fd))
    })
}

/// Group `dir` open, when it can be a parent for this user's runs: what
/// [`usable_parent`] asks of a path (a directory, not a symlink, owned by us, with
/// `cgroup.kill`), asked of the descriptor, and it is on a cgroup2 file system.
fn open_parent(dir: &Path) -> Option<OwnedFd> {
    use nix::sys::statfs::{CGROUP2_SUPER_MAGIC, fstatfs};
    use std::os::fd::{AsRawFd, FromRawFd};
    let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path of ours; the descriptor returned is new and ours.
    let fd = unsafe { libc::open(path.as_ptr(), flags) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if fstatfs(&fd).ok()?.filesystem_type() != CGROUP2_SUPER_MAGIC {
        return None;
    }
    let ours = pool::stat(&fd).is_some_and(|st| st.st_uid == euid())
        // SAFETY: a literal name, relative to our descriptor; nothing is kept.
        && unsafe { libc::faccessat(fd.as_raw_fd(), c"cgroup.kill".as_ptr(), libc::F_OK, 0) } == 0;
    ours.then_some(fd)
}

/// How old the leaf of an agentbash process that is gone must be before another one
/// removes it: a process of the same name in another PID namespace (a sandboxed
/// agentbash sharing the hierarchy) may look gone from here, and its leaf is empty
/// only for the moment between its making and the first process joining it.
const STALE_AFTER: Duration = Duration::from_secs(2);

/// Remove the leaves in `parent` of agentbash processes that are gone, once they are
/// empty (a run's leaf the one-run CLI did not wait for, see `RunGroup`'s drop; the
/// leaves of one killed before its watchdog started). Done when a process makes its
/// first leaf, so leaves left behind never pile up; one read of the parent's entries
/// (its interface files and few leaves), nothing more unless a leaf is another's.
/// Returns the names of the pooled leaves (`pool.rs`), which are never stale.
/// `fd`: the parent, open (read here, then closed).
fn remove_stale_leaves(fd: OwnedFd, parent: &Path, mine: &str) -> Vec<String> {
    let mut pooled = Vec::new();
    let Ok(mut rd) = nix::dir::Dir::from_fd(fd) else {
        return pooled;
    };
    for e in rd.iter().flatten() {
        // The type comes with the entry: no `stat` for the interface files.
        if e.file_type() != Some(nix::dir::Type::Directory) {
            continue;
        }
        let Ok(name) = e.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        if name.starts_with(pool::POOL_PREFIX) {
            pooled.push(name.to_string());
            continue;
        }
        let owner = name.split('-').next().unwrap_or_default();
        if name.starts_with(mine) || !pid_gone(owner) {
            continue;
        }
        let path = parent.join(name);
        let old = std::fs::symlink_metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= STALE_AFTER));
        if old {
            remove_tree(&path, 0);
        }
    }
    pooled
}

/// Whether `pid` (decimal) names no process of this PID namespace.
fn pid_gone(pid: &str) -> bool {
    pid.parse::<u32>()
        .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
}

/// How deep [`remove_tree`] goes: a run's leaf holds the parent group of an
/// agentbash run inside it, which holds that one's leaves; deeper nesting is rare.
const TREE_DEPTH: usize = 8;

/// Remove group `dir` and the groups under it, deepest first, each only once it is
/// empty (the kernel refuses a populated group, and one with groups under it).
/// Returns whether `dir` is gone.
fn remove_tree(dir: &Path, depth: usize) -> bool {
    if std::fs::remove_dir(dir).is_ok() {
        return true;
    }
    if depth >= TREE_DEPTH {
        return false;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&e.path(), depth + 1);
        }
    }
    std::fs::remove_dir(dir).is_ok()
}

/// Whether `dir` is a parent group for this user's runs, made here when it is not
/// there yet: a directory owned by us (one another user made in a group they can
/// write is not ours to fill) of a kernel that has `cgroup.kill` (5.14).
fn usable_parent(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::create_dir(dir) {
                // Made by another agentbash at the same moment: as good.
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return false,
                _ => {}
            }
            match std::fs::symlink_metadata(dir) {
                Ok(m) => m,
                Err(_) => return false,
            }
        }
        Err(_) => return false,
    };
    meta.is_dir() && meta.uid() == euid() && dir.join("cgroup.kill").exists()
}

impl Parent {
    /// A pooled leaf for this process's first run (`pool.rs`); `None` for any later
    /// run, or when the pool has none to give.
    fn take_pooled(&self) -> Option<pool::Held> {
        let seen = self
            .pool_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        // Locked while the leaf is taken: a watchdog started meanwhile (another
        // thread's run) knows it from its first moment.
        let mut known = self
            .pool_held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let held = pool::take(&self.dir, &seen)?;
        known.name = Some(held.dir.file_name()?.to_str()?.to_string());
        Some(held)
    }

    /// The pooled leaf is given back: the watchdog (if it runs) is told to leave it
    /// alone before the lock is let go, so it never ends the next holder's runs.
    fn give_back(&self) {
        let mut held = self
            .pool_held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        held.name = None;
        if let Some(w) = held.watchdog_pipe {
            // SAFETY: one byte from a static buffer to the pipe's write end, ours.
            unsafe { libc::write(w, b"r".as_ptr().cast(), 1) };
        }
    }

    /// A new leaf for one run.
    fn make_leaf(&self) -> Option<PathBuf> {
        for _ in 0..LEAF_TRIES {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let dir = self.dir.join(format!("{}{n}", self.prefix));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Some(dir),
                // The parent is gone (removed by hand): made again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if !usable_parent(&self.dir) {
                        return None;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(_) => return None,
            }
        }
        None
    }
}

/// Start the watchdog unless it runs (or could not be started). Not at the first
/// spawn: a run that ends within a few milliseconds (`run -- true`) never pays for
/// the fork; the run loops call this once a run has lasted [`WATCHDOG_AFTER`], and a
/// live shell, which lasts, as it starts. A SIGKILL of agentbash before then leaves
/// the run's group in place, its processes running.
pub fn ensure_watchdog() {
    static STARTED: OnceLock<bool> = OnceLock::new();
    if let Some(Some(parent)) = PARENT.get() {
        STARTED.get_or_init(|| {
            remove_stale(parent);
            // Held across the fork: a pooled leaf is given back either before (the
            // watchdog never knows it) or after (the watchdog is told).
            let mut held = parent
                .pool_held
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let pipe = start_watchdog(&parent.dir, &parent.prefix, held.name.as_deref());
            held.watchdog_pipe = pipe;
            pipe.is_some()
        });
    }
}

/// How long a run lasts before the watchdog is started (see [`ensure_watchdog`]).
pub const WATCHDOG_AFTER: Duration = Duration::from_millis(20);

/// Remove the empty per-process parents (`agentbash-<pid>`) that agentbash versions
/// before the shared per-user parent left beside agentbash's own group, with the run
/// groups in them. Never touches a populated group: the kernel refuses to remove one.
fn remove_stale(parent: &Parent) {
    let Some(home) = parent.home_procs.parent() else {
        return;
    };
    let Ok(rd) = std::fs::read_dir(home) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("agentbash-")) else {
            continue;
        };
        if pid_gone(pid) {
            remove_tree(&e.path(), 0);
        }
    }
}

/// One run's group. Removed when dropped; processes still in it then (kept
/// background jobs) are first moved back to agentbash's own group.
#[derive(Debug)]
pub struct RunGroup {
    dir: PathBuf,
    home_procs: PathBuf,
    /// `cgroup.procs`, prepared for the spawned child to write itself into.
    procs: CString,
    /// The leader joined before it exec'd: membership is the run's attribution.
    joined: AtomicBool,
    /// The group's directory, for `clone3(CLONE_INTO_CGROUP)`; for a pooled leaf,
    /// it also holds the leaf's lock.
    dir_fd: Option<OwnedFd>,
    /// A pooled leaf (`pool.rs`): given back, not removed, when the run is over. Its
    /// `cgroup.events`, open, to see it empty then.
    pooled: Option<OwnedFd>,
    /// `cgroup.kill` was written: the leaf can never be given back.
    killed: AtomicBool,
    /// What the leaf's `cpu.stat` said when this run got it (earlier runs' time);
    /// `None` when the run's CPU time is not asked for (see [`RunGroup::create`]).
    cpu_base: Option<Duration>,
}

impl RunGroup {
    /// A new group, or `None` where cgroup v2 is unavailable or not writable.
    /// `cpu_clock`: the run's CPU time will be asked for ([`RunGroup::cpu_time`], by
    /// `jobs.idle_timeout`), so a pooled leaf's earlier runs' time is read now, to be
    /// taken off; a run without an idle clock spares the read.
    pub fn create(cpu_clock: bool) -> Option<RunGroup> {
        let parent = PARENT.get_or_init(make_parent).as_ref()?;
        let (dir, dir_fd, pooled, cpu_base) = match parent.take_pooled() {
            Some(held) => {
                let base = cpu_clock.then(|| usage(&held.dir)).flatten();
                (held.dir, Some(held.fd), Some(held.events), base)
            }
            None => {
                let dir = parent.make_leaf()?;
                let fd = std::fs::File::open(&dir).ok().map(Into::into);
                (dir, fd, None, Some(Duration::ZERO))
            }
        };
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok()?;
        Some(RunGroup {
            dir,
            home_procs: parent.home_procs.clone(),
            procs,
            joined: AtomicBool::new(false),
            dir_fd,
            pooled,
            killed: AtomicBool::new(false),
            cpu_base,
        })
    }

    /// The path the child writes `0` to (itself) before it execs.
    pub(crate) fn procs_path(&self) -> &CString {
        &self.procs
    }

    pub(crate) fn dir_fd(&self) -> Option<libc::c_int> {
        use std::os::fd::AsRawFd;
        self.dir_fd.as_ref().map(|f| f.as_raw_fd())
    }

    pub(crate) fn set_joined(&self) {
        self.joined.store(true, Ordering::SeqCst);
    }

    /// Whether the run's leader is in the group (else attribution falls back).
    pub fn joined(&self) -> bool {
        self.joined.load(Ordering::SeqCst)
    }

    /// The live processes in the group.
    pub fn pids(&self) -> Vec<i32> {
        super::read_kernel_file(self.dir.join("cgroup.procs"))
            .map(|s| {
                s.split_ascii_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The CPU time the group's processes have used (`cpu.stat` `usage_usec`, which
    /// cgroup v2 keeps whether or not the cpu controller is enabled); `None` for a
    /// pooled leaf taken without `cpu_clock`, whose earlier runs' time is not known.
    pub fn cpu_time(&self) -> Option<Duration> {
        let base = self.cpu_base?;
        usage(&self.dir).map(|t| t.saturating_sub(base))
    }

    /// Freeze (or thaw) the group; a freeze waits, bounded, until it is frozen.
    pub fn freeze(&self, frozen: bool) {
        let want = if frozen { "1" } else { "0" };
        if std::fs::write(self.dir.join("cgroup.freeze"), want).is_err() || !frozen {
            return;
        }
        let deadline = Instant::now() + FREEZE_LIMIT;
        let events = self.dir.join("cgroup.events");
        while Instant::now() < deadline {
            let done = super::read_kernel_file(&events)
                .map(|e| e.lines().any(|l| l == "frozen 1"))
                .unwrap_or(true);
            if done {
                return;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// SIGKILL every process in the group (atomically: none can fork past it).
    pub fn kill(&self) -> bool {
        let first = !self.killed.swap(true, Ordering::SeqCst);
        if self.pooled.is_some() && first {
            pool::mark_killed(&self.dir_c());
        }
        std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
    }

    fn dir_c(&self) -> CString {
        CString::new(self.dir.as_os_str().as_bytes()).unwrap_or_default()
    }

    /// Move the processes in the group, except `spare`, back to agentbash's own
    /// group: they are no longer this run's (a kept background job).
    /// agentbash's own helpers (a sandbox's init on its way out, see
    /// `crate::children`) are not moved: no job to keep, and moving a process between
    /// groups waits for the kernel's cgroup lock, which its exit holds a while.
    pub fn release(&self, spare: &[i32]) {
        let deadline = Instant::now() + RMDIR_LIMIT;
        loop {
            let left = self.members_but(spare);
            if left.is_empty() || Instant::now() >= deadline {
                return;
            }
            for p in left {
                let _ = std::fs::write(&self.home_procs, p.to_string());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl RunGroup {
    /// The processes in the group but `spare` and agentbash's helpers.
    fn members_but(&self, spare: &[i32]) -> Vec<i32> {
        let pids = self.pids();
        if pids.is_empty() {
            return pids;
        }
        let helpers: Vec<i32> = crate::children::helpers().iter().map(|&(p, _)| p).collect();
        pids.into_iter()
            .filter(|p| !spare.contains(p) && !helpers.contains(p))
            .collect()
    }
}

impl Drop for RunGroup {
    fn drop(&mut self) {
        let one_run = crate::children::one_run();
        // Given back while the lock is held (`dir_fd` goes after this body).
        if let Some(events) = &self.pooled
            && let Some(held) = &self.dir_fd
            && pool::fit_for_reuse(
                &self.dir,
                held,
                events,
                self.killed.load(Ordering::SeqCst),
                RMDIR_LIMIT,
                || self.release(&[]),
                || one_run && self.members_but(&[]).is_empty(),
            )
        {
            if let Some(Some(parent)) = PARENT.get() {
                parent.give_back();
            }
            return;
        }
        // Not given back: marked while the lock is still held, so no agentbash takes it
        // in the moment between our exit and the watchdog's turn (it may still hold
        // our helpers, or a group under it); removed below, or later once empty.
        if self.pooled.is_some() && self.dir_fd.is_some() {
            pool::mark_killed(&self.dir_c());
        }
        // Usually empty by now, and removed at once; the parent stays for the next run.
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        self.release(&[]);
        let deadline = Instant::now() + RMDIR_LIMIT;
        // An exiting process leaves the group a moment after it is gone from procs;
        // a group of a nested agentbash (a run of agentbash inside this run) goes
        // first.
        while !remove_tree(&self.dir, 0) && self.dir.exists() && Instant::now() < deadline {
            // The one-run CLI does not wait for its own helpers to leave (a sandbox's
            // init exits only once the kernel has taken its namespaces apart): it
            // exits, and the next agentbash removes the leaf (`remove_stale_leaves`).
            // Nothing of the run is in it: the helpers are agentbash's.
            if one_run && !self.pids().is_empty() && self.members_but(&[]).is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// The CPU time used in group `dir` since it was made (`cpu.stat` `usage_usec`, which
/// cgroup v2 keeps whether or not the cpu controller is enabled).
fn usage(dir: &Path) -> Option<Duration> {
    let stat = super::read_kernel_file(dir.join("cpu.stat")).ok()?;
    let usec = stat
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec "))?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_micros(usec))
}

/// Fork the watchdog (see the module doc) of the leaves named `prefix…` in `dir` and
/// of the pooled leaf `pooled` this process holds. Returns the write end of its pipe
/// (a byte written there: the pooled leaf was given back), or `None` when it does
/// not run.
fn start_watchdog(dir: &Path, prefix: &str, pooled: Option<&str>) -> Option<libc::c_int> {
    let dir_c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    if dir_c.as_bytes().len() > PATH_ROOM - 300 || prefix.is_empty() {
        return None;
    }
    let prefix = prefix.as_bytes();
    let pooled = pooled.map(str::as_bytes).unwrap_or_default();
    let mut fds = [0; 2];
    // SAFETY: pipe2 with a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    let (r, w) = (fds[0], fds[1]);
    // Where our argv lives, so the watchdog can name itself instead of showing
    // agentbash's command line (with the run's command in it) in the process table.
    let args = argv_span();
    // SAFETY: the child only makes async-signal-safe calls on memory prepared above
    // (it may be a copy of a multithreaded process) and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: see above.
        unsafe { watchdog_main(r, &dir_c, [prefix, pooled], args) }
    }
    // SAFETY: closing our copy of the read end; the write end stays open for good.
    unsafe { libc::close(r) };
    if pid < 0 {
        // SAFETY: the write end is ours.
        unsafe { libc::close(w) };
        return None;
    }
    WATCHDOG.store(pid, Ordering::Relaxed);
    Some(w)
}

/// Where this process's argv and environment strings live: `arg_start`, `arg_end`,
/// `env_start`, `env_end` (fields 48 to 51 of /proc/self/stat).
fn argv_span() -> Option<[usize; 4]> {
    let s = super::read_kernel_file("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split_ascii_whitespace().skip(45);
    let mut out = [0usize; 4];
    for v in out.iter_mut() {
        *v = f.next()?.parse().ok()?;
    }
    Some(out)
}

const PATH_ROOM: usize = 4096;

/// The watchdog: wait for end-of-file on `r`, then kill and remove the leaves of
/// `dir` whose names start with `prefix` (its agentbash's runs; the parent and the
/// other processes' leaves stay), and the pooled leaf named `pooled` (empty: none)
/// unless a byte on `r` said it was given back. Async-signal-safe calls only, no
/// allocation.
unsafe fn watchdog_main(
    r: libc::c_int,
    dir: &CString,
    [prefix, pooled]: [&[u8]; 2],
    args: Option<[usize; 4]>,
) -> ! {
    // SAFETY: plain syscalls; every buffer is on this stack or prepared before fork.
    unsafe {
        let fd = watchdog_detach(r, args);
        let given_back = fd == 3 && wait_for_end(fd);
        let pooled: &[u8] = if given_back { &[] } else { pooled };
        let mut path = [0u8; PATH_ROOM];
        let d = dir.as_bytes();
        path[..d.len()].copy_from_slice(d);
        // `dir/leaf` or `dir/leaf/file` into `path`, NUL-terminated.
        let at = |path: &mut [u8; PATH_ROOM], leaf: &[u8], file: &[u8]| -> bool {
            let mut tail = [0u8; 300];
            let extra = if file.is_empty() { 0 } else { 1 + file.len() };
            if leaf.len() + extra > tail.len() || d.len() + 1 + leaf.len() + extra + 1 > PATH_ROOM {
                return false;
            }
            tail[..leaf.len()].copy_from_slice(leaf);
            if !file.is_empty() {
                tail[leaf.len()] = b'/';
                tail[leaf.len() + 1..leaf.len() + extra].copy_from_slice(file);
            }
            let tail = &tail[..leaf.len() + extra];
            path[d.len()] = b'/';
            path[d.len() + 1..d.len() + 1 + tail.len()].copy_from_slice(tail);
            path[d.len() + 1 + tail.len()] = 0;
            true
        };
        // A pooled leaf is ours only once we hold its lock (another agentbash may have
        // taken it empty since ours exited: then it is theirs); held until we exit, it
        // is marked before it is killed: never to be taken again.
        let pooled = if !pooled.is_empty() && at(&mut path, pooled, b"") && hold_leaf(&mut path) {
            pool::mark_killed(std::ffi::CStr::from_bytes_until_nul(&path).unwrap_or_default());
            pooled
        } else {
            &[]
        };
        // Every leaf of ours killed first (cgroup.kill: none can fork past it), ...
        let mut kill = |leaf: &[u8]| {
            if at(&mut path, leaf, b"cgroup.kill") {
                let k = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
                if k >= 0 {
                    libc::write(k, b"1".as_ptr().cast(), 1);
                    libc::close(k);
                }
            }
        };
        for_each_leaf(dir, prefix, &mut kill);
        if !pooled.is_empty() {
            kill(pooled);
        }
        // ... then removed as their processes go (bounded: two seconds), until a pass
        // finds none (one that removed some may have missed an entry: the directory
        // changed while it was read).
        let mut pooled_left = !pooled.is_empty();
        for _ in 0..200 {
            let mut found = false;
            for_each_leaf(dir, prefix, |leaf| {
                found = true;
                if at(&mut path, leaf, b"") {
                    libc::rmdir(path.as_ptr().cast());
                }
            });
            if pooled_left && at(&mut path, pooled, b"") {
                let gone = libc::rmdir(path.as_ptr().cast()) == 0
                    || *libc::__errno_location() == libc::ENOENT;
                pooled_left = !gone;
                found |= pooled_left;
            }
            if !found {
                break;
            }
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::nanosleep(&ts, std::ptr::null_mut());
        }
        libc::_exit(0)
    }
}

/// The watchdog's start: a name of its own in the process table, out of the caller's
/// session and signals, `r` moved to descriptor 3 and nothing else open but /dev/null
/// on 0–2. Returns the descriptor `r` is now on (3 unless the move failed).
/// Async-signal-safe.
unsafe fn watchdog_detach(r: libc::c_int, args: Option<[usize; 4]>) -> libc::c_int {
    // SAFETY: plain syscalls; the argv and environment spans are this process's own.
    unsafe {
        // Our copy of agentbash's argv and environment (Rust keeps its own copies):
        // the process table shows a name, not the run's command, and our environ
        // holds none of agentbash's variables.
        if let Some([arg_start, arg_end, env_start, env_end]) = args {
            if arg_end > arg_start {
                let name = b"agentbash-watchdog\0";
                let p = arg_start as *mut u8;
                std::ptr::write_bytes(p, 0, arg_end - arg_start);
                let n = name.len().min(arg_end - arg_start);
                std::ptr::copy_nonoverlapping(name.as_ptr(), p, n);
            }
            if env_end > env_start {
                std::ptr::write_bytes(env_start as *mut u8, 0, env_end - env_start);
            }
        }
        libc::prctl(libc::PR_SET_NAME, c"agentbash-watch".as_ptr(), 0, 0, 0);
        // Out of the caller's session: a Ctrl-C or hangup meant for agentbash's
        // terminal does not end the watchdog before it is needed.
        libc::setsid();
        for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let fd = if r == 3 { 3 } else { libc::dup2(r, 3) };
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for target in 0..3 {
            if null >= 0 {
                libc::dup2(null, target);
            }
        }
        // Nothing else stays open: not agentbash's output (a reader waiting for its
        // end-of-file must not wait for us), nor the write end of our own pipe.
        libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        fd
    }
}

/// Lock the pooled leaf at `path` (NUL-terminated; a directory) for the watchdog, which
/// keeps the lock until it exits: `false` when the leaf is gone, or when another
/// agentbash holds it and nothing of ours is in it (it holds no process, or holds that
/// agentbash's: an empty leaf is all one takes). A holder that only looked (it found
/// our processes there) lets go at once, so a busy lock is tried again, for up to two
/// seconds. Async-signal-safe; `path` is the leaf again when it returns.
unsafe fn hold_leaf(path: &mut [u8; PATH_ROOM]) -> bool {
    let Some(end) = path.iter().position(|&c| c == 0) else {
        return false;
    };
    let events = b"/cgroup.events\0";
    if end + events.len() > PATH_ROOM {
        return false;
    }
    // SAFETY: open/flock/read/close on this stack's buffers; the one descriptor kept
    // open is the lock, closed by the watchdog's exit.
    unsafe {
        for _ in 0..200 {
            let fd = libc::open(
                path.as_ptr().cast(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return false;
            }
            if libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) == 0 {
                return true;
            }
            libc::close(fd);
            path[end..end + events.len()].copy_from_slice(events);
            let mut buf = [0u8; 256];
            let e = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
            let n = if e >= 0 {
                let n = libc::read(e, buf.as_mut_ptr().cast(), buf.len());
                libc::close(e);
                n
            } else {
                -1
            };
            path[end] = 0;
            let populated = n > 0 && buf[..n as usize].windows(11).any(|w| w == b"populated 1");
            if !populated {
                return false;
            }
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::nanosleep(&ts, std::ptr::null_mut());
        }
        false
    }
}

/// Read `fd` to its end (agentbash is gone); whether a byte came first (the pooled
/// leaf was given back). Async-signal-safe.
unsafe fn wait_for_end(fd: libc::c_int) -> bool {
    let mut given_back = false;
    let mut b = [0u8; 64];
    loop {
        // SAFETY: a read into a buffer on this stack; errno is this thread's.
        let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
        given_back |= n > 0;
        if n > 0 || (n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR) {
            continue;
        }
        return given_back;
    }
}

/// Call `f` with the name of every directory in `dir` that starts with `prefix`.
/// Async-signal-safe: for the watchdog.
unsafe fn for_each_leaf(dir: &CString, prefix: &[u8], mut f: impl FnMut(&[u8])) {
    // SAFETY: open/getdents64/close on a buffer of this stack; every entry is read
    // within the length the kernel returned.
    unsafe {
        let dfd = libc::open(
            dir.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dfd < 0 {
            return;
        }
        let mut buf = [0u8; 4096];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dfd, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off + 19 < n as usize {
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                if reclen == 0 || off + reclen > n as usize {
                    break;
                }
                let kind = buf[off + 18];
                let name = &buf[off + 19..off + reclen];
                let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                let name = &name[..len];
                if kind == libc::DT_DIR && name.starts_with(prefix) {
                    f(name);
                }
                off += reclen;
            }
        }
        libc::close(dfd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape_mount("/sys/fs/a\\040b"), "/sys/fs/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
        assert_eq!(unescape_mount("/end\\04"), "/end\\04");
    }

    #[test]
    fn the_cgroup2_mount_is_the_first_cgroup2_line() {
        let info = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
                    31 30 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                    32 30 0:28 / /sys/fs/cgroup/uni\\040fied rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mountinfo_cgroup2(info),
            Some(PathBuf::from("/sys/fs/cgroup/uni fied"))
        );
        assert_eq!(
            mountinfo_cgroup2("22 27 0:21 / /proc rw - proc proc rw\n"),
            None
        );
    }

    #[test]
    fn the_own_group_and_whether_v1_is_beside_it() {
        assert_eq!(
            parse_own("0::/user.slice/session-2.scope\n"),
            Some(("user.slice/session-2.scope".into(), false))
        );
        assert_eq!(
            parse_own("9:name=systemd:/\n8:pids:/\n0::/\n"),
            Some((String::new(), true))
        );
        assert_eq!(parse_own("9:name=systemd:/\n"), None, "v1 only");
    }

    /// A parent found by opening it (the fast path) is a cgroup2 group: a directory
    /// of ours with a `cgroup.kill` on any other file system is not one.
    #[test]
    fn an_opened_parent_must_be_of_cgroup2() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join(parent_name(euid()));
        std::fs::create_dir(&dir).expect("dir");
        std::fs::write(dir.join("cgroup.kill"), "").expect("cgroup.kill");
        assert!(usable_parent(&dir), "what the path checks see");
        assert!(open_parent(&dir).is_none(), "a tmpfs directory was taken");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).expect("symlink");
        assert!(open_parent(&link).is_none(), "a symlink was followed");
        assert!(open_parent(&tmp.path().join("missing")).is_none());
    }

    /// Where this machine has a writable cgroup2 tree, the fast path finds the very
    /// parent the slow path picks (and made, when it was missing).
    #[test]
    fn the_fast_path_finds_the_parent_the_slow_path_picks() {
        use crate::harness::{Missing, skip};
        let none = || {
            Missing::new(
                "no writable cgroup v2 tree for a parent group",
                "run as root on a kernel with cgroup v2 (5.14 or later), as .ci/run does",
            )
        };
        let (Some(mount), Some((own, hybrid))) = (cgroup2_mount(), own_cgroup()) else {
            skip!(none());
        };
        let name = parent_name(euid());
        let home = mount.join(&own);
        let Some(slow) = [home.join(&name), mount.join(&name)]
            .into_iter()
            .find(|d| usable_parent(d))
        else {
            skip!(none());
        };
        if slow != home.join(&name) {
            // Beside a group we cannot write in: the fast path leaves it to the slow one.
            assert!(existing_parent(&own, hybrid, &name).is_none());
            return;
        }
        let (found_mount, found, _fd) =
            existing_parent(&own, hybrid, &name).expect("an existing parent was not found");
        assert_eq!((found_mount, found), (mount, slow));
    }

    /// The user's parent group is made when missing and used only when it is a
    /// directory of ours with `cgroup.kill` (here a plain directory stands in for the
    /// group, and a file for its `cgroup.kill`): one another user made is never
    /// filled with our runs.
    #[test]
    fn a_parent_group_is_used_only_when_it_is_ours() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join(parent_name(euid()));
        assert!(
            !usable_parent(&dir),
            "no cgroup.kill: not a cgroup v2 group"
        );
        assert!(dir.is_dir(), "made when missing");
        std::fs::write(dir.join("cgroup.kill"), "").expect("cgroup.kill");
        assert!(usable_parent(&dir));
        let file = tmp.path().join("a-file");
        std::fs::write(&file, "").expect("file");
        assert!(!usable_parent(&file));
        if euid() == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
            assert!(!usable_parent(&dir), "another user's group");
        }
    }
}
