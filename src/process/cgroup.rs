//! A cgroup v2 group per run, and a watchdog that empties them if agentbash dies.
//!
//! Where cgroup v2 is mounted and writable, every run's leader is put into a group of
//! its own before it execs (see `process::spawn_in`). Membership is then the run's
//! attribution: a process that called setsid, double-forked and cleared its
//! environment is still in the group, and two concurrent runs never see each other's
//! processes. Teardown freezes the group (nothing in it can fork), lists it, and ends
//! it with `cgroup.kill`.
//!
//! All of one agentbash process's groups are children of one parent group,
//! `agentbash-<pid>`. A watchdog — one small forked child per agentbash process, not
//! per run — holds the read end of a pipe whose write end only agentbash holds: when
//! agentbash dies by any means (SIGKILL included) the pipe reads end-of-file, and the
//! watchdog writes `cgroup.kill` of the parent group, which ends every run at once,
//! and removes the groups. Where no group can be made, teardown falls back to the
//! /proc scan by run marker (see `process::Teardown`), and nothing outlives a
//! SIGKILL of agentbash but its direct child's parent-death signal.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a freeze may take before teardown goes on without it.
const FREEZE_LIMIT: Duration = Duration::from_millis(500);
/// How long an emptied group's removal is retried.
const RMDIR_LIMIT: Duration = Duration::from_millis(500);

/// This process's parent group, made once.
struct Parent {
    dir: PathBuf,
    /// `cgroup.procs` of the group agentbash itself is in: kept processes go back there.
    home_procs: PathBuf,
    next: AtomicU64,
}

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

/// The cgroup2 mount point, from /proc/self/mountinfo.
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
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

/// This process's cgroup v2 path, from the `0::/path` line of /proc/self/cgroup.
fn own_cgroup() -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim_start_matches('/').to_string())
}

fn make_parent() -> Option<Parent> {
    if disabled() {
        return None;
    }
    let mount = cgroup2_mount()?;
    let own = own_cgroup()?;
    let home = mount.join(&own);
    let name = format!("agentbash-{}", std::process::id());
    let dir = [home.join(&name), mount.join(&name)]
        .into_iter()
        .find(|d| make_dir(d) && d.join("cgroup.kill").exists())?;
    Some(Parent {
        dir,
        home_procs: home.join("cgroup.procs"),
        next: AtomicU64::new(0),
    })
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
            if let Some(home) = parent.home_procs.parent() {
                remove_stale(home);
            }
            start_watchdog(&parent.dir)
        });
    }
}

/// How long a run lasts before the watchdog is started (see [`ensure_watchdog`]).
pub const WATCHDOG_AFTER: Duration = Duration::from_millis(20);

/// Remove the empty groups of agentbash processes that are gone (their watchdog was
/// killed before it could). Never touches a populated group.
fn remove_stale(home: &Path) {
    let Ok(rd) = std::fs::read_dir(home) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("agentbash-"))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(runs) = std::fs::read_dir(e.path()) {
            for r in runs.flatten().filter(|r| r.path().is_dir()) {
                let _ = std::fs::remove_dir(r.path());
            }
        }
        let _ = std::fs::remove_dir(e.path());
    }
}

fn make_dir(d: &Path) -> bool {
    match std::fs::create_dir(d) {
        Ok(()) => true,
        // Left by an earlier process with our pid whose watchdog could not remove it.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => d.is_dir(),
        Err(_) => false,
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
    /// The group's directory, for `clone3(CLONE_INTO_CGROUP)`.
    dir_fd: Option<std::os::fd::OwnedFd>,
}

impl RunGroup {
    /// A new group, or `None` where cgroup v2 is unavailable or not writable.
    pub fn create() -> Option<RunGroup> {
        let parent = PARENT.get_or_init(make_parent).as_ref()?;
        let n = parent.next.fetch_add(1, Ordering::Relaxed);
        let dir = parent
            .dir
            .join(format!("agentbash-{}-{n}", std::process::id()));
        // Without a watchdog the parent is removed after each run (nothing else
        // would): made again here.
        let made = make_dir(&dir) || (make_dir(&parent.dir) && make_dir(&dir));
        if !made {
            return None;
        }
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok()?;
        let dir_fd = std::fs::File::open(&dir).ok().map(Into::into);
        Some(RunGroup {
            dir,
            home_procs: parent.home_procs.clone(),
            procs,
            joined: AtomicBool::new(false),
            dir_fd,
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
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|s| {
                s.split_ascii_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The CPU time the group's processes have used (`cpu.stat` `usage_usec`, which
    /// cgroup v2 keeps whether or not the cpu controller is enabled).
    pub fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?;
        let usec = stat
            .lines()
            .find_map(|l| l.strip_prefix("usage_usec "))?
            .trim()
            .parse()
            .ok()?;
        Some(Duration::from_micros(usec))
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
            let done = std::fs::read_to_string(&events)
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
        std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
    }

    /// Move the processes in the group, except `spare`, back to agentbash's own
    /// group: they are no longer this run's (a kept background job).
    pub fn release(&self, spare: &[i32]) {
        let deadline = Instant::now() + RMDIR_LIMIT;
        loop {
            let left: Vec<i32> = self
                .pids()
                .into_iter()
                .filter(|p| !spare.contains(p))
                .collect();
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

impl Drop for RunGroup {
    fn drop(&mut self) {
        self.release(&[]);
        let deadline = Instant::now() + RMDIR_LIMIT;
        // An exiting process leaves the group a moment after it is gone from procs.
        while std::fs::remove_dir(&self.dir).is_err()
            && self.dir.exists()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        if watchdog_pid() == 0 {
            // Fails while another run's group is in it.
            if let Some(parent) = self.dir.parent() {
                let _ = std::fs::remove_dir(parent);
            }
        }
    }
}

/// Fork the watchdog (see the module doc). Returns whether it runs.
fn start_watchdog(dir: &Path) -> bool {
    let Ok(dir_c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    if dir_c.as_bytes().len() > PATH_ROOM - 300 {
        return false;
    }
    let mut fds = [0; 2];
    // SAFETY: pipe2 with a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return false;
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
        unsafe { watchdog_main(r, &dir_c, args) }
    }
    // SAFETY: closing our copy of the read end; the write end stays open for good.
    unsafe { libc::close(r) };
    if pid < 0 {
        // SAFETY: the write end is ours.
        unsafe { libc::close(w) };
        return false;
    }
    WATCHDOG.store(pid, Ordering::Relaxed);
    true
}

/// Where this process's argv and environment strings live: `arg_start`, `arg_end`,
/// `env_start`, `env_end` (fields 48 to 51 of /proc/self/stat).
fn argv_span() -> Option<[usize; 4]> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split_ascii_whitespace().skip(45);
    let mut out = [0usize; 4];
    for v in out.iter_mut() {
        *v = f.next()?.parse().ok()?;
    }
    Some(out)
}

const PATH_ROOM: usize = 4096;

/// The watchdog: wait for end-of-file on `r`, then kill and remove every group under
/// `dir`. Async-signal-safe calls only, no allocation.
unsafe fn watchdog_main(r: libc::c_int, dir: &CString, args: Option<[usize; 4]>) -> ! {
    // SAFETY: plain syscalls; every buffer is on this stack or prepared before fork.
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
        if fd == 3 {
            let mut b = [0u8; 64];
            loop {
                let n = libc::read(3, b.as_mut_ptr().cast(), b.len());
                if n > 0 || (n < 0 && *libc::__errno_location() == libc::EINTR) {
                    continue;
                }
                break;
            }
        }
        let mut path = [0u8; PATH_ROOM];
        let d = dir.as_bytes();
        path[..d.len()].copy_from_slice(d);
        let at = |path: &mut [u8; PATH_ROOM], tail: &[u8]| -> bool {
            if d.len() + 1 + tail.len() + 1 > PATH_ROOM {
                return false;
            }
            path[d.len()] = b'/';
            path[d.len() + 1..d.len() + 1 + tail.len()].copy_from_slice(tail);
            path[d.len() + 1 + tail.len()] = 0;
            true
        };
        at(&mut path, b"cgroup.kill");
        let k = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if k >= 0 {
            libc::write(k, b"1".as_ptr().cast(), 1);
            libc::close(k);
        }
        // Remove the groups as their processes go (bounded: two seconds).
        for _ in 0..200 {
            let dfd = libc::open(dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            if dfd >= 0 {
                let mut buf = [0u8; 4096];
                loop {
                    let n = libc::syscall(libc::SYS_getdents64, dfd, buf.as_mut_ptr(), buf.len());
                    if n <= 0 {
                        break;
                    }
                    let mut off = 0usize;
                    while off + 19 < n as usize {
                        let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                        let kind = buf[off + 18];
                        let name = &buf[off + 19..off + reclen];
                        let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                        let name = &name[..len];
                        if kind == libc::DT_DIR && name != b"." && name != b".." {
                            let mut tail = [0u8; 256];
                            let l = name.len().min(255);
                            tail[..l].copy_from_slice(&name[..l]);
                            if at(&mut path, &tail[..l]) {
                                libc::rmdir(path.as_ptr().cast());
                            }
                        }
                        if reclen == 0 {
                            break;
                        }
                        off += reclen;
                    }
                }
                libc::close(dfd);
            }
            if libc::rmdir(dir.as_ptr()) == 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape_mount("/sys/fs/a\\040b"), "/sys/fs/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
        assert_eq!(unescape_mount("/end\\04"), "/end\\04");
    }
}
