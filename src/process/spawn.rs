//! The one spawn helper, and process-tree teardown.
//!
//! Every command runs as the leader of a new session (so terminal signals meant for
//! agentbash never reach it directly, and it has no controlling terminal: opening
//! /dev/tty fails at once instead of waiting for input; in PTY mode it is the
//! pseudo-terminal's, see [`spawn_on_tty`]). It dies with agentbash
//! (parent-death signal). agentbash makes itself a child subreaper, so descendants
//! that double-fork or call setsid are reparented to it rather than to init and can
//! still be found and stopped: "no descendant outlives the run" holds for them too.
//! A tree is frozen before it is signalled, so nothing in it can fork while it is
//! being found and killed: with the run's cgroup (see `cgroup`) by `cgroup.freeze`
//! and ended by `cgroup.kill`; without one, by SIGSTOP to every member the /proc scan
//! finds.

use super::cgroup::{RunGroup, watchdog_pid};
pub use super::pidns::host_pid_of_child;
use super::{KilledProcess, Limits, SpawnSpec};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, Once, OnceLock, mpsc};
use std::time::{Duration, Instant};

static SUBREAPER: Once = Once::new();

/// What this process knows about its children, so that teardown reaps dead orphans
/// (no zombie outlives a run) without ever reaping a child someone else will wait
/// for: a run's leader, a live shell, or, when agentbash is a library, a child the
/// embedding program spawned itself. A zombie's environment is unreadable, so it
/// is attributed by what was recorded while it lived.
#[derive(Default)]
struct Attribution {
    /// (pid, start time) of children whose `Child` a caller owns: never reaped here.
    owned: Vec<(i32, u64)>,
    /// Recent run leaders: a zombie in one of their sessions or process groups is an
    /// orphan of a run.
    leaders: VecDeque<i32>,
    /// (pid, start time) of processes seen alive as members of a run.
    seen: VecDeque<(i32, u64)>,
}

const MAX_REMEMBERED: usize = 4096;

use crate::children::{helpers as inits, register_init};
pub use crate::children::{reap_later, register_helper};

static ATTRIBUTION: Mutex<Attribution> = Mutex::new(Attribution {
    owned: Vec::new(),
    leaders: VecDeque::new(),
    seen: VecDeque::new(),
});

/// The registry, locked. Held across a fork, so a fresh child cannot be reaped
/// before it is registered.
fn attribution() -> std::sync::MutexGuard<'static, Attribution> {
    ATTRIBUTION.lock().unwrap_or_else(|p| p.into_inner())
}

impl Attribution {
    fn register_leader(&mut self, pid: i32) {
        // Forget entries whose process is gone (reaped) or is now someone else.
        self.owned.retain(|&(p, t)| start_time(p) == Some(t));
        self.owned.push((pid, start_time(pid).unwrap_or(0)));
        remember(&mut self.leaders, pid);
    }

    fn saw_member(&mut self, pid: i32, started: u64) {
        if !self.seen.contains(&(pid, started)) {
            remember(&mut self.seen, (pid, started));
        }
    }
}

fn remember<T: PartialEq>(q: &mut VecDeque<T>, item: T) {
    if q.len() >= MAX_REMEMBERED {
        q.pop_front();
    }
    q.push_back(item);
}

/// Field 22 of /proc/<pid>/stat: when the process started (also readable for zombies).
/// With the pid it names one process for good: a pid reused later starts later.
pub fn start_time(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// Make this process the reaper of its orphaned descendants (Linux only; harmless
/// elsewhere). Called once, before the first spawn.
pub fn become_subreaper() {
    SUBREAPER.call_once(|| {
        #[cfg(target_os = "linux")]
        // SAFETY: prctl with integer arguments has no memory effects.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
    });
}

/// A descriptor that becomes readable when process `pid` exits (Linux 5.3+), so a
/// loop waiting on output wakes at once for the exit too instead of polling for it.
/// `None` where the kernel has no pidfds.
pub fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open(2) takes a pid and flags, touches no memory of ours, and
        // returns a new descriptor or -1. (nix has no wrapper for it.)
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
            return Some(unsafe { OwnedFd::from_raw_fd(fd as i32) });
        }
    }
    let _ = pid;
    None
}

/// Where a child's standard descriptor comes from.
pub enum ChildIo {
    /// The null device.
    Null,
    /// The same descriptor as agentbash's.
    Inherit,
    /// This descriptor (moved into the child, closed here once it is spawned).
    Fd(OwnedFd),
}

/// A spawned command: its pid, and its exit status once reaped. (Not
/// `std::process::Child`: std forks a copy of agentbash, we start the child with
/// `CLONE_VM | CLONE_VFORK`, which costs no page-table copy.)
///
/// In the sandbox's namespaces the command is the child of an init process of its own
/// (see `pidns`): `id` is then the command's pid as agentbash sees it, and its exit
/// status comes from init.
#[derive(Debug)]
pub struct Child {
    pub(super) pid: i32,
    pub(super) status: Option<ExitStatus>,
    /// It wrote itself into its run's cgroup before it exec'd.
    pub(super) joined: bool,
    pub(super) init: Option<super::pidns::Init>,
}

impl Child {
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// The init process of the command's PID namespace, when it has one: part of the
    /// run, but never stopped or listed by teardown (it leaves once its children are
    /// gone).
    pub fn init_pid(&self) -> Option<i32> {
        self.init.as_ref().map(|i| i.pid)
    }

    /// A descriptor that becomes readable when the command exits, for a poll loop:
    /// its pidfd, or in a PID namespace the pipe its init reports the exit on (the
    /// command's pidfd would wake the loop before its status can be read).
    pub fn exit_watch(&self) -> Option<OwnedFd> {
        match &self.init {
            Some(init) => init.status_watch(),
            None => pidfd_open(self.pid),
        }
    }

    /// SIGKILL the child (unless it has already been reaped); in a PID namespace,
    /// its init, which takes every process of the namespace with it.
    pub fn kill(&mut self) -> std::io::Result<()> {
        if let Some(init) = &self.init {
            init.kill();
            return Ok(());
        }
        if self.status.is_some() {
            return Ok(());
        }
        // SAFETY: kill(2) on our own, not yet reaped, child.
        if unsafe { libc::kill(self.pid, libc::SIGKILL) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The exit status if the child has exited (reaping it), else `None`.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if let Some(init) = &mut self.init {
            if self.status.is_none() {
                self.status = init.command_status(false)?;
            }
            init.reap(false);
            return Ok(self.status);
        }
        self.wait_with(libc::WNOHANG)
    }

    /// Wait for the child to exit.
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(init) = &mut self.init {
            let status = match self.status {
                Some(s) => s,
                None => init.command_status(true)?.ok_or_else(|| {
                    std::io::Error::other("the sandbox's init gave no exit status")
                })?,
            };
            self.status = Some(status);
            init.reap(false);
            return Ok(status);
        }
        loop {
            if let Some(s) = self.wait_with(0)? {
                return Ok(s);
            }
        }
    }

    fn wait_with(&mut self, flags: i32) -> std::io::Result<Option<ExitStatus>> {
        if let Some(s) = self.status {
            return Ok(Some(s));
        }
        let mut status = 0;
        loop {
            // SAFETY: waitpid on our own child with a valid out-pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, flags) };
            if r == self.pid {
                let s = ExitStatus::from_raw(status);
                self.status = Some(s);
                return Ok(Some(s));
            }
            if r == 0 {
                return Ok(None);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Everything the child needs, prepared (allocated) before it exists: between
/// clone and exec the child shares our memory and may not allocate or lock.
pub(super) struct Launch {
    pub(super) program: CString,
    pub(super) argv: Vec<CString>,
    pub(super) envp: Vec<CString>,
    pub(super) cwd: CString,
    /// Descriptors for 0, 1 and 2 (`None`: inherit).
    pub(super) fds: [Option<OwnedFd>; 3],
    pub(super) limits: Limits,
    /// The run group's `cgroup.procs`, which the child joins before it execs.
    pub(super) cgroup_procs: Option<CString>,
    /// The run group's directory, for `clone3(CLONE_INTO_CGROUP)`.
    pub(super) cgroup_fd: Option<libc::c_int>,
    /// Make descriptor 0 (a terminal) the new session's controlling terminal.
    pub(super) controlling_tty: bool,
    /// Entered last, right before exec; kept alive (its fds open) until then.
    pub(super) sandbox: Option<std::sync::Arc<crate::sandbox::Confinement>>,
    /// No parent-death signal (see [`SpawnSpec::detached`]).
    pub(super) detached: bool,
    /// Processes the command leaves may outlive agentbash (`background = "keep"`).
    pub(super) keep_background: bool,
}

/// Spawn `spec` with the given stdio as a new session leader.
pub fn spawn(
    spec: &SpawnSpec,
    stdin: ChildIo,
    stdout: ChildIo,
    stderr: ChildIo,
) -> std::io::Result<Child> {
    spawn_in(spec, None, stdin, stdout, stderr)
}

/// [`spawn`], the child joining `group` before it execs (when it can: else the run
/// is attributed by the /proc scan, see [`RunGroup::joined`]).
pub fn spawn_in(
    spec: &SpawnSpec,
    group: Option<&RunGroup>,
    stdin: ChildIo,
    stdout: ChildIo,
    stderr: ChildIo,
) -> std::io::Result<Child> {
    spawn_with(spec, group, [stdin, stdout, stderr], false)
}

/// [`spawn_in`] on a terminal: `tty` (a pseudo-terminal's slave) becomes the
/// child's stdin, stdout and stderr and the controlling terminal of its session, so
/// it is the terminal's foreground process group and `/dev/tty` is that terminal.
pub fn spawn_on_tty(
    spec: &SpawnSpec,
    group: Option<&RunGroup>,
    tty: OwnedFd,
) -> std::io::Result<Child> {
    // Copies made here are close-on-exec, like `tty`: only 0, 1 and 2 reach the command.
    let (out, err) = (tty.try_clone()?, tty.try_clone()?);
    spawn_with(
        spec,
        group,
        [ChildIo::Fd(tty), ChildIo::Fd(out), ChildIo::Fd(err)],
        true,
    )
}

/// Set a terminal's window size (a pseudo-terminal's, from its master): what the
/// command reads with TIOCGWINSZ; its foreground process group gets SIGWINCH.
pub fn set_window_size(tty: BorrowedFd<'_>, rows: u16, cols: u16) -> std::io::Result<()> {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize through a valid pointer; `tty` is open.
    if unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCSWINSZ, &size) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A terminal's rows and columns (TIOCGWINSZ); `None` when `tty` is not one.
pub fn window_size(tty: BorrowedFd<'_>) -> Option<(u16, u16)> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ fills the winsize we pass and nothing else; `tty` is open.
    let ok = unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCGWINSZ, &mut size) } == 0;
    ok.then_some((size.ws_row, size.ws_col))
}

fn spawn_with(
    spec: &SpawnSpec,
    group: Option<&RunGroup>,
    [stdin, stdout, stderr]: [ChildIo; 3],
    controlling_tty: bool,
) -> std::io::Result<Child> {
    become_subreaper();
    let cstr = |s: &[u8]| {
        CString::new(s).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a NUL byte in the command, its arguments or its environment",
            )
        })
    };
    let program = cstr(
        resolve_program(&spec.program, &spec.env)?
            .as_os_str()
            .as_bytes(),
    )?;
    let mut argv = vec![cstr(spec.program.as_os_str().as_bytes())?];
    for a in &spec.args {
        argv.push(cstr(a.as_bytes())?);
    }
    let envp = spec
        .env
        .iter()
        .map(|(k, v)| cstr(format!("{k}={v}").as_bytes()))
        .collect::<std::io::Result<Vec<_>>>()?;
    let fd = |io: ChildIo| -> std::io::Result<Option<OwnedFd>> {
        Ok(match io {
            ChildIo::Inherit => None,
            ChildIo::Fd(fd) => Some(fd),
            ChildIo::Null => Some(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/null")?
                    .into(),
            ),
        })
    };
    let launch = Launch {
        program,
        argv,
        envp,
        cwd: cstr(spec.cwd.as_os_str().as_bytes())?,
        fds: [fd(stdin)?, fd(stdout)?, fd(stderr)?],
        limits: spec.limits,
        cgroup_procs: group.map(|g| g.procs_path().clone()),
        cgroup_fd: group.and_then(|g| g.dir_fd()),
        controlling_tty,
        sandbox: spec.sandbox.clone().filter(|s| s.prepared.is_active()),
        detached: spec.detached,
        keep_background: spec.keep_background,
    };
    let child = on_spawner_thread(launch)?;
    if let (Some(g), true) = (group, child.joined) {
        g.set_joined();
    }
    Ok(child)
}

/// `program` as execve wants it: a path, found on the child's PATH when it has no `/`.
/// `name` found as an executable file in `path_var` (else `$PATH`).
pub fn on_path(name: impl AsRef<std::ffi::OsStr>, path_var: Option<&str>) -> Option<PathBuf> {
    let name = name.as_ref();
    let path_var = path_var
        .map(str::to_string)
        .or_else(|| std::env::var("PATH").ok())?;
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| is_executable(p))
}

pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A new pseudo-terminal, (master, slave), both close-on-exec from the start (a
/// command another thread starts meanwhile inherits neither), and neither becoming
/// agentbash's controlling terminal.
pub fn open_pty() -> Result<(OwnedFd, OwnedFd), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let master = nix::pty::posix_openpt(
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_NOCTTY | nix::fcntl::OFlag::O_CLOEXEC,
    )
    .map_err(|e| format!("posix_openpt: {e}"))?;
    nix::pty::grantpt(&master).map_err(|e| format!("grantpt: {e}"))?;
    nix::pty::unlockpt(&master).map_err(|e| format!("unlockpt: {e}"))?;
    let name = nix::pty::ptsname_r(&master).map_err(|e| format!("ptsname: {e}"))?;
    // std opens with O_CLOEXEC.
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&name)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok((master.into(), slave.into()))
}

fn resolve_program(program: &Path, env: &[(String, String)]) -> std::io::Result<PathBuf> {
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Ok(program.to_path_buf());
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_else(|| "/usr/bin:/bin".into());
    if let Some(found) = on_path(program, Some(&path)) {
        return Ok(found);
    }
    Err(std::io::Error::from_raw_os_error(libc::ENOENT))
}

/// A command to start, and where to send the child.
type SpawnJob = (Launch, mpsc::Sender<std::io::Result<Child>>);

/// The parent-death signal fires when the *thread* that forked the child exits, not
/// when the process does. So every child is forked by one thread that lives as long
/// as agentbash: a command, or a live shell reused across requests, started from a
/// short-lived request thread (rpc, mcp) must not be killed when that thread ends.
fn on_spawner_thread(launch: Launch) -> std::io::Result<Child> {
    // The main thread lives exactly as long as the process: it may start children
    // itself, and a single-run CLI never pays for the thread.
    if is_main_thread() {
        return launch_and_register(launch);
    }
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<SpawnJob>>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("agentbash-spawner".into())
            .spawn(move || {
                for (launch, reply) in rx {
                    let _ = reply.send(launch_and_register(launch));
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let (reply, answer) = mpsc::channel();
    let sent = match spawner {
        Some(tx) => {
            let tx = tx.lock().unwrap_or_else(|p| p.into_inner()).clone();
            tx.send((launch, reply)).map_err(|e| e.0.0)
        }
        None => Err(launch),
    };
    match sent {
        Ok(()) => answer
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone"))),
        // No spawner thread (it could not be started): start it from this one.
        Err(launch) => launch_and_register(launch),
    }
}

fn is_main_thread() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and getpid take no arguments and cannot fail.
        unsafe { libc::gettid() == libc::getpid() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

fn launch_and_register(launch: Launch) -> std::io::Result<Child> {
    let mut a = attribution();
    let child = start(&launch)?;
    a.register_leader(child.pid);
    if let Some(init) = child.init_pid() {
        a.owned.push((init, start_time(init).unwrap_or(0)));
        register_init(init, child.pid);
    }
    Ok(child)
    // `launch` drops here: our copies of the child's descriptors are closed.
}

/// What the child reads, by raw pointer: it runs on its own stack in our memory.
struct ChildArgs {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    fds: [libc::c_int; 3],
    limits: Limits,
    parent: libc::pid_t,
    /// The run group's `cgroup.procs` (null: none).
    cgroup_procs: *const libc::c_char,
    /// Set by the child once it is in the group.
    joined: AtomicI32,
    controlling_tty: bool,
    /// errno of the step that failed, written by the child before it exits.
    err: AtomicI32,
    /// Set when that step was entering `cwd`.
    cwd_failed: AtomicI32,
    /// The sandbox to enter (null: none), and the step that failed there.
    sandbox: *const crate::sandbox::Prepared,
    sandbox_failed: std::cell::Cell<Option<crate::sandbox::ChildError>>,
    detached: bool,
}

const CHILD_STACK: usize = 64 * 1024;

fn start(l: &Launch) -> std::io::Result<Child> {
    if let Some(sandbox) = l.sandbox.as_deref()
        && sandbox.prepared.namespaces().is_some()
    {
        return super::pidns::start(l, &sandbox.prepared);
    }
    let ptrs = |v: &[CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let (argv, envp) = (ptrs(&l.argv), ptrs(&l.envp));
    let raw = |f: &Option<OwnedFd>| f.as_ref().map_or(-1, |f| f.as_raw_fd());
    let mut args = ChildArgs {
        program: l.program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: l.cwd.as_ptr(),
        fds: [raw(&l.fds[0]), raw(&l.fds[1]), raw(&l.fds[2])],
        limits: l.limits,
        // SAFETY: getpid cannot fail.
        parent: unsafe { libc::getpid() },
        cgroup_procs: l
            .cgroup_procs
            .as_ref()
            .map_or(std::ptr::null(), |c| c.as_ptr()),
        joined: AtomicI32::new(0),
        controlling_tty: l.controlling_tty,
        err: AtomicI32::new(0),
        cwd_failed: AtomicI32::new(0),
        sandbox: l
            .sandbox
            .as_deref()
            .map_or(std::ptr::null(), |s| &s.prepared as *const _),
        sandbox_failed: std::cell::Cell::new(None),
        detached: l.detached,
    };
    let namespaces = 0;
    // No signal handler may run in the child while it shares our memory: block
    // everything around the clone; the child resets dispositions, then unblocks.
    // SAFETY: sigset operations on local, initialised sets.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // Straight into the run's group when the kernel can (no migration after the
    // fact, which costs a threadgroup lock round); else the child joins it itself.
    let mut pid = -1;
    let mut in_group = false;
    if let Some(fd) = l.cgroup_fd {
        let procs = std::mem::replace(&mut args.cgroup_procs, std::ptr::null());
        pid = clone_into_cgroup(&args, fd, namespaces);
        in_group = pid > 0;
        args.cgroup_procs = procs;
    }
    if pid <= 0 {
        pid = clone_child(&args, namespaces);
    }
    let clone_err = std::io::Error::last_os_error();
    // SAFETY: restoring the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(clone_err);
    }
    let mut child = Child {
        pid,
        status: None,
        joined: in_group || args.joined.load(Ordering::Acquire) != 0,
        init: None,
    };
    // With CLONE_VFORK we resume once the child has exec'd or exited: `err` is final.
    let err = args.err.load(Ordering::Acquire);
    if let (Some(failed), Some(sandbox)) = (args.sandbox_failed.get(), l.sandbox.as_deref()) {
        let _ = child.wait();
        return Err(std::io::Error::other(sandbox.prepared.explain(failed)));
    }
    if err != 0 {
        let _ = child.wait();
        let e = std::io::Error::from_raw_os_error(err);
        if args.cwd_failed.load(Ordering::Acquire) != 0 {
            return Err(std::io::Error::new(e.kind(), BadCwd(e)));
        }
        return Err(e);
    }
    Ok(child)
}

/// The child could not enter its working directory: the inner error of what
/// [`spawn`] returns then, which reads (and has the kind of) the OS error.
#[derive(Debug)]
pub(super) struct BadCwd(pub(super) std::io::Error);

impl std::fmt::Display for BadCwd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BadCwd {}

/// Whether a spawn failed because the child could not enter its working directory.
pub fn is_bad_cwd(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<BadCwd>())
}

#[cfg(target_os = "linux")]
fn clone_child(args: &ChildArgs, namespaces: libc::c_int) -> libc::pid_t {
    let mut stack = vec![0u8; CHILD_STACK];
    // SAFETY: the stack outlives the child's use of it (CLONE_VFORK suspends us
    // until the child execs or exits); the top is 16-byte aligned as the ABI wants.
    unsafe {
        let top = stack.as_mut_ptr().add(CHILD_STACK);
        let top = top.sub(top as usize % 16);
        libc::clone(
            child_main,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | namespaces,
            (args as *const ChildArgs).cast_mut().cast(),
        )
    }
}

/// `clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP)` running `child_main` on its
/// own stack, as [`clone_child`] does, the child born in the cgroup `cgroup_fd`.
/// glibc has no clone3 wrapper that runs a function, hence the few instructions
/// below. Returns the pid, or a negative value (the caller falls back).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn clone_into_cgroup(
    args: &ChildArgs,
    cgroup_fd: libc::c_int,
    namespaces: libc::c_int,
) -> libc::pid_t {
    #[repr(C)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
        set_tid: u64,
        set_tid_size: u64,
        cgroup: u64,
    }
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    let mut stack = vec![0u8; CHILD_STACK];
    let base = stack.as_mut_ptr() as usize;
    // The kernel starts the child at stack + stack_size: keep that 16-byte aligned.
    let top = (base + CHILD_STACK) & !15;
    let ca = CloneArgs {
        flags: (libc::CLONE_VM | libc::CLONE_VFORK | namespaces) as u64 | CLONE_INTO_CGROUP,
        pidfd: 0,
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: base as u64,
        stack_size: (top - base) as u64,
        tls: 0,
        set_tid: 0,
        set_tid_size: 0,
        cgroup: cgroup_fd as u64,
    };
    let f: extern "C" fn(*mut libc::c_void) -> libc::c_int = child_main;
    let ret: i64;
    // SAFETY: as for `clone_child`: the parent is suspended (CLONE_VFORK) until the
    // child execs or exits, the stack outlives that, and the child only runs
    // `child_main`, which never returns into this frame (it execs or _exits; should
    // it return, the child exits). rcx and r11 are clobbered by `syscall`; r12 and
    // r13 survive it in the child.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r12",
            "call r13",
            "mov edi, eax",
            "mov eax, 60",
            "syscall",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 => ret,
            in("rdi") &ca as *const CloneArgs,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") (args as *const ChildArgs).cast_mut().cast::<libc::c_void>(),
            in("r13") f,
            lateout("rcx") _,
            lateout("r11") _,
        );
    }
    drop(stack);
    ret as libc::pid_t
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn clone_into_cgroup(
    _args: &ChildArgs,
    _cgroup_fd: libc::c_int,
    _namespaces: libc::c_int,
) -> libc::pid_t {
    -1
}

#[cfg(not(target_os = "linux"))]
fn clone_child(args: &ChildArgs, _namespaces: libc::c_int) -> libc::pid_t {
    // SAFETY: the child only runs `child_main` (async-signal-safe calls) and exits.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            child_main((args as *const ChildArgs).cast_mut().cast());
        }
        pid
    }
}

/// The child between clone and exec: async-signal-safe calls only, no allocation,
/// no locks (it shares the parent's memory). Any failure records errno and exits 127.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the parent's ChildArgs, alive while we run.
    let a = unsafe { &*(arg as *const ChildArgs) };
    let fail = |a: &ChildArgs| -> ! {
        // SAFETY: reading errno and leaving without running any destructor.
        unsafe {
            a.err.store(*libc::__errno_location(), Ordering::Release);
            libc::_exit(127)
        }
    };
    // SAFETY: plain syscalls on values prepared by the parent.
    unsafe {
        reset_signals();
        if !install_stdio(&a.fds) {
            fail(a);
        }
        if libc::chdir(a.cwd) != 0 {
            a.cwd_failed.store(1, Ordering::Release);
            fail(a);
        }
        if libc::setsid() < 0 {
            fail(a);
        }
        // A session leader without a controlling terminal acquires this one; its
        // process group becomes the terminal's foreground group.
        if a.controlling_tty && libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
            fail(a);
        }
        #[cfg(target_os = "linux")]
        if !a.detached {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != a.parent {
                libc::_exit(125);
            }
        }
        if !a.cgroup_procs.is_null() {
            // Writing 0 moves the writer: from here on everything this command
            // starts is in its run's group. Failing to join is not fatal.
            let g = libc::open(a.cgroup_procs, libc::O_WRONLY | libc::O_CLOEXEC);
            if g >= 0 {
                if libc::write(g, b"0".as_ptr().cast(), 1) == 1 {
                    a.joined.store(1, Ordering::Release);
                }
                libc::close(g);
            }
        }
        if apply_limits(&a.limits).is_err() {
            fail(a);
        }
        // Last: the sandbox forbids what the steps above may need (the cgroup file).
        if let Some(sandbox) = a.sandbox.as_ref()
            && let Err(e) = sandbox.apply_in_child()
        {
            a.sandbox_failed.set(Some(e));
            *libc::__errno_location() = e.errno;
            fail(a);
        }
        libc::execve(a.program, a.argv, a.envp);
        fail(a)
    }
}

/// Back to the default for every caught signal (handlers are the parent's code;
/// ignored ones stay ignored), the ones a command expects live, and nothing blocked.
/// Runs between clone and exec.
///
/// # Safety
/// Only in a freshly cloned child, before exec.
pub(super) unsafe fn reset_signals() {
    // SAFETY: sigaction/signal/sigprocmask on valid stack data.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        for sig in 1..libc::SIGRTMAX() {
            if libc::sigaction(sig, std::ptr::null(), &mut act) == 0
                && act.sa_sigaction != libc::SIG_DFL
                && act.sa_sigaction != libc::SIG_IGN
            {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

/// Make `fds` the child's 0, 1 and 2 (-1: keep agentbash's), then mark every other
/// descriptor close-on-exec: only 0–2 reach the command, whatever agentbash itself
/// inherited from its caller (a descriptor left open there would let the command
/// around the sandbox, or hold the caller's pipe open). Runs between clone and exec.
///
/// # Safety
/// Only in a freshly cloned child, before exec.
pub(super) unsafe fn install_stdio(fds: &[libc::c_int; 3]) -> bool {
    // SAFETY: fcntl/dup2/close_range on descriptor numbers.
    unsafe {
        for (target, &fd) in fds.iter().enumerate() {
            let target = target as libc::c_int;
            if fd < 0 {
                continue;
            }
            if fd == target {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return false;
                }
            } else if libc::dup2(fd, target) < 0 {
                return false;
            }
        }
        // Kernels before 5.11 lack the flag: every descriptor agentbash opens itself
        // is close-on-exec already, so only inherited ones would pass there.
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
        true
    }
}

/// setrlimit in the child; runs between clone and exec (no allocation).
pub(super) fn apply_limits(l: &Limits) -> std::io::Result<()> {
    let set = |res, v: u64| -> std::io::Result<()> {
        if v == 0 {
            return Ok(());
        }
        // The CPU hard limit one second above the soft one: the soft limit sends
        // SIGXCPU (reported as the limit firing), the hard one SIGKILL if ignored.
        let hard = if res == libc::RLIMIT_CPU { v + 1 } else { v };
        let lim = libc::rlimit {
            rlim_cur: v as libc::rlim_t,
            rlim_max: hard as libc::rlim_t,
        };
        // SAFETY: pointer to a valid rlimit on the stack.
        if unsafe { libc::setrlimit(res, &lim) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    set(libc::RLIMIT_AS, l.address_space_mb.saturating_mul(1 << 20))?;
    set(libc::RLIMIT_FSIZE, l.file_size_mb.saturating_mul(1 << 20))?;
    set(libc::RLIMIT_NPROC, l.processes)?;
    set(libc::RLIMIT_CPU, l.cpu_seconds)?;
    Ok(())
}

/// True when this process has any live or zombie child (any thread's) other than
/// the watchdog.
pub fn has_children() -> bool {
    let Ok(rd) = std::fs::read_dir("/proc/self/task") else {
        return true;
    };
    let watchdog = watchdog_pid();
    for t in rd.flatten() {
        match std::fs::read_to_string(t.path().join("children")) {
            Ok(c) => {
                let other = c
                    .split_ascii_whitespace()
                    .any(|p| p.parse::<i32>() != Ok(watchdog));
                if other {
                    return true;
                }
            }
            Err(_) => return true,
        }
    }
    false
}

/// How long one freeze may take (see [`Teardown::freeze`]).
const FREEZE_LIMIT: Duration = Duration::from_millis(500);
/// How long one round of a freeze waits for its processes to stop.
const STOP_WAIT: Duration = Duration::from_millis(100);
/// How long one teardown waits, in all, for members caught inside an exec to finish
/// it, so they are listed by their new command line (see [`command_line_past_exec`]).
const NAME_WAIT: Duration = Duration::from_millis(200);
/// How long the final KILL rounds may take (an unkillable process never hangs a run).
const KILL_LIMIT: Duration = Duration::from_secs(2);
/// How long teardown waits for the processes it killed to become reapable.
const SETTLE_LIMIT: Duration = Duration::from_millis(500);

/// A member as found at the first freeze.
struct FrozenProcess {
    pid: i32,
    ppid: i32,
    killed: KilledProcess,
}

/// Wait until every process of `procs` is stopped (each of its threads) or gone, or
/// `deadline` passes.
fn wait_stopped(procs: &[Proc], deadline: Instant) {
    let mut waiting: Vec<i32> = procs.iter().map(|p| p.pid).collect();
    loop {
        waiting.retain(|&pid| !is_stopped(pid));
        if waiting.is_empty() || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Every thread of `pid` is stopped, or the process is dead or gone.
fn is_stopped(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks.flatten().all(|t| {
        let Ok(s) = std::fs::read_to_string(t.path().join("stat")) else {
            return true;
        };
        let state = s
            .rfind(')')
            .and_then(|i| s.get(i + 2..i + 3))
            .unwrap_or("X");
        matches!(state, "T" | "t" | "Z" | "X")
    })
}

#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    sid: i32,
    started: u64,
}

fn read_stat(pid: i32) -> Option<Proc> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp session ..." — comm may contain spaces and ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?;
    if state == "Z" || state == "X" {
        return None; // already dead, only waiting to be reaped
    }
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    let sid = f.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgrp,
        sid,
        started: f.nth(15)?.parse().ok()?,
    })
}

fn all_procs() -> Vec<Proc> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

fn has_marker(pid: i32, marker: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|kv| kv == marker))
        .unwrap_or(false)
}

/// Every live process that carries run marker `marker_value` or is in the session
/// `leader` leads (when `leader` is given), found by a /proc scan: what is left of a
/// run whose agentbash is gone (a job whose supervisor was killed), and nobody
/// else's — a marker is a hard-to-guess token, and a session id is only trusted
/// with the leader's start time (see [`start_time`]).
pub fn orphans_of(marker_value: &str, leader: Option<(i32, u64)>) -> Vec<i32> {
    let marker = format!("{}={marker_value}", crate::process::RUN_MARKER).into_bytes();
    let session = leader.filter(|&(pid, started)| start_time(pid) == Some(started));
    all_procs()
        .into_iter()
        .filter(|p| session.is_some_and(|(l, _)| p.sid == l) || has_marker(p.pid, &marker))
        .map(|p| p.pid)
        .collect()
}

/// SIGKILL what [`orphans_of`] finds, stopping each first (so none forks between the
/// scan and the kill), until a scan finds nothing (bounded). Returns the pids killed.
pub fn kill_orphans(marker_value: &str, leader: Option<(i32, u64)>) -> Vec<i32> {
    let mut killed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let found = orphans_of(marker_value, leader);
        if found.is_empty() || Instant::now() >= deadline {
            return killed;
        }
        for &p in &found {
            signal(p, libc::SIGSTOP);
        }
        for &p in &found {
            signal(p, libc::SIGKILL);
            if !killed.contains(&p) {
                killed.push(p);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A process tree to stop: with a run group the leader joined, every process in
/// the group; otherwise the session led by `leader`, plus every descendant of
/// agentbash that carries the run's marker or descends from a member.
pub struct Teardown<'g> {
    pub leader: i32,
    marker: Vec<u8>,
    group: Option<&'g RunGroup>,
    /// Members never stopped here (a live shell, the subshell that just ran).
    spare: Vec<i32>,
}

impl Teardown<'static> {
    pub fn new(leader: i32, marker_value: &str) -> Self {
        Teardown {
            leader,
            marker: format!("{}={marker_value}", crate::process::RUN_MARKER).into_bytes(),
            group: None,
            spare: Vec::new(),
        }
    }
}

impl<'g> Teardown<'g> {
    /// Attribute by membership of `group` when its leader joined it.
    pub fn in_group(self, group: Option<&'g RunGroup>) -> Teardown<'g> {
        Teardown {
            leader: self.leader,
            marker: self.marker,
            group: group.filter(|g| g.joined()),
            spare: self.spare,
        }
    }

    /// Never stop these pids (they are members, but not this teardown's).
    pub fn sparing(mut self, pids: impl IntoIterator<Item = i32>) -> Self {
        self.spare.extend(pids);
        self
    }

    /// Whether members are found by cgroup membership.
    pub fn grouped(&self) -> bool {
        self.group.is_some()
    }

    /// Live members of the run's tree, the leader included if alive.
    pub fn members(&self) -> Vec<i32> {
        self.member_procs().into_iter().map(|p| p.pid).collect()
    }

    fn member_procs(&self) -> Vec<Proc> {
        let inits: Vec<(i32, i32)> = inits().clone();
        let is_init = |pid: i32| inits.iter().any(|&(i, _)| i == pid);
        // The init of this run's own PID namespace: whatever it holds is the run's.
        let own_init = inits
            .iter()
            .find(|&&(_, command)| command == self.leader)
            .map(|&(i, _)| i);
        let spared = |pid: i32| pid == watchdog_pid() || self.spare.contains(&pid) || is_init(pid);
        if let Some(g) = self.group {
            let mut out: Vec<Proc> = g
                .pids()
                .into_iter()
                .filter(|&p| !spared(p))
                .filter_map(read_stat)
                .collect();
            for p in self.escapees(&spared) {
                if !out.iter().any(|o| o.pid == p.pid) {
                    out.push(p);
                }
            }
            let mut a = attribution();
            for p in &out {
                a.saw_member(p.pid, p.started);
            }
            return out;
        }
        let me = std::process::id() as i32;
        let procs = all_procs();
        let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
        for p in &procs {
            children.entry(p.ppid).or_default().push(p);
        }
        let mut out: Vec<&Proc> = Vec::new();
        let mut seen = HashSet::new();
        // Walk agentbash's descendants; membership is inherited down the tree.
        let mut stack: Vec<(i32, bool)> = vec![(me, false)];
        while let Some((pid, parent_member)) = stack.pop() {
            for c in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
                if !seen.insert(c.pid) {
                    continue;
                }
                if is_init(c.pid) {
                    stack.push((c.pid, own_init == Some(c.pid)));
                    continue;
                }
                // In the one-run CLI every orphan handed to us (subreaper) is the
                // run's, even one that cleared its environment after setsid.
                if spared(c.pid) {
                    continue;
                }
                let member = parent_member
                    || (pid == me && exclusive_process())
                    || c.pid == self.leader
                    || c.sid == self.leader
                    || c.pgrp == self.leader
                    || has_marker(c.pid, &self.marker);
                if member {
                    out.push(c);
                }
                stack.push((c.pid, member));
            }
        }
        // A member reparented elsewhere (no subreaper support) still shares the session.
        for p in &procs {
            if p.sid == self.leader && !spared(p.pid) && seen.insert(p.pid) {
                out.push(p);
            }
        }
        // Remember them: once dead, a zombie can no longer be told apart.
        let mut a = attribution();
        for p in &out {
            a.saw_member(p.pid, p.started);
        }
        out.into_iter().cloned().collect()
    }

    /// Processes of this run that left its group (a root command can write its pid
    /// into another cgroup's `cgroup.procs`), with their descendants: once their
    /// parent in the group is gone they are handed to agentbash, the subreaper, so
    /// they are found among its children that are in none of its run groups — this
    /// run's by marker, or any such child in the one-run CLI. Cheap: agentbash's
    /// children only, usually none.
    fn escapees(&self, spared: &dyn Fn(i32) -> bool) -> Vec<Proc> {
        let ours = format!("/agentbash-{}/", std::process::id());
        let exclusive = exclusive_process();
        let owned: Vec<(i32, u64)> = attribution().owned.clone();
        let mut roots = Vec::new();
        for pid in child_pids() {
            if spared(pid) || pid == self.leader {
                continue;
            }
            let Some(p) = read_stat(pid) else { continue };
            if owned.contains(&(pid, p.started)) {
                continue;
            }
            let in_a_group = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
                .is_ok_and(|c| c.lines().any(|l| l.starts_with("0::") && l.contains(&ours)));
            if in_a_group {
                continue;
            }
            if exclusive || has_marker(pid, &self.marker) {
                roots.push(p);
            }
        }
        let mut out = Vec::new();
        while let Some(p) = roots.pop() {
            let kids = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", p.pid))
                .unwrap_or_default();
            roots.extend(
                kids.split_ascii_whitespace()
                    .filter_map(|k| k.parse::<i32>().ok())
                    .filter(|&k| !spared(k))
                    .filter_map(read_stat),
            );
            out.push(p);
        }
        out
    }

    /// Everything except the leader (whose exit status the caller collects).
    pub fn others(&self) -> Vec<i32> {
        self.members()
            .into_iter()
            .filter(|&p| p != self.leader)
            .collect()
    }

    fn pick(&self, include_leader: bool) -> Vec<Proc> {
        let mut v = self.member_procs();
        if !include_leader {
            v.retain(|p| p.pid != self.leader);
        }
        v
    }

    /// Stop every member where it stands, so none can fork while the tree is being
    /// found: SIGSTOP each one, wait until it (every thread of it) is stopped, and
    /// scan again, until a scan after everything stopped finds nothing new. Bounded
    /// in time: a process the kernel holds (a vfork parent, uninterruptible I/O)
    /// cannot fork either, and is not waited for past the bound.
    fn freeze(&self, include_leader: bool) -> Vec<Proc> {
        let deadline = Instant::now() + FREEZE_LIMIT;
        let mut frozen: Vec<Proc> = Vec::new();
        let mut known: HashSet<(i32, u64)> = HashSet::new();
        let mut settled = false;
        loop {
            if include_leader {
                // Atomic for the whole process group: the kernel lets no member
                // fork past a group signal.
                signal_group(self.leader, libc::SIGSTOP);
            }
            let fresh: Vec<Proc> = self
                .pick(include_leader)
                .into_iter()
                .filter(|p| !known.contains(&(p.pid, p.started)))
                .collect();
            if fresh.is_empty() && settled {
                return frozen;
            }
            for p in &fresh {
                signal(p.pid, libc::SIGSTOP);
                known.insert((p.pid, p.started));
            }
            frozen.extend(fresh);
            wait_stopped(&frozen, deadline.min(Instant::now() + STOP_WAIT));
            settled = true;
            if Instant::now() >= deadline {
                return frozen;
            }
        }
    }

    /// Freeze, then TERM (and CONT, so the TERM is seen) every member, wait up to
    /// `grace` for them to go, then freeze what remains and KILL it. A process
    /// that ignores TERM and keeps forking meanwhile gets no TERM chasing each new
    /// child (no flood of "Terminated" lines): what it started during the grace is
    /// killed with it. Returns the processes found at the first freeze (the leader
    /// too, when included and alive), each once, named while they were still alive.
    pub fn terminate(&self, grace: Duration, include_leader: bool) -> Vec<KilledProcess> {
        let frozen = self.stop_tree(grace, include_leader);
        frozen.into_iter().map(|p| p.killed).collect()
    }

    /// [`Teardown::terminate`] of a run stopped while its leader is alive (timeout,
    /// cancel): the leader's own tree is the command being stopped, not background
    /// jobs that outlived it, so only members outside it are returned (orphans handed
    /// to agentbash, processes found by the run's marker or session).
    pub fn terminate_run(&self, grace: Duration) -> Vec<KilledProcess> {
        let frozen = self.stop_tree(grace, true);
        let mut tree: HashSet<i32> = HashSet::new();
        if frozen.iter().any(|p| p.pid == self.leader) {
            tree.insert(self.leader);
            // Parents come before children only by chance: iterate to a fixed point.
            loop {
                let before = tree.len();
                for p in &frozen {
                    if tree.contains(&p.ppid) {
                        tree.insert(p.pid);
                    }
                }
                if tree.len() == before {
                    break;
                }
            }
        }
        frozen
            .into_iter()
            .filter(|p| p.pid != self.leader && !tree.contains(&p.pid))
            .map(|p| p.killed)
            .collect()
    }

    fn stop_tree(&self, grace: Duration, include_leader: bool) -> Vec<FrozenProcess> {
        if let Some(g) = self.group {
            return self.stop_group(g, grace, include_leader);
        }
        let frozen = self.freeze(include_leader);
        let named_by = Instant::now() + NAME_WAIT;
        let first: Vec<FrozenProcess> = frozen
            .into_iter()
            // One that ended by itself between the scan and its SIGSTOP (a zombie now,
            // or already reaped by its parent) was not stopped by us: not listed.
            .filter(|p| read_stat(p.pid).is_some_and(|now| now.started == p.started))
            .map(|p| FrozenProcess {
                ppid: p.ppid,
                killed: KilledProcess {
                    pid: p.pid,
                    command: command_line_past_exec(p.pid, named_by),
                },
                pid: p.pid,
            })
            .collect();
        if first.is_empty() {
            self.reap_orphans();
            return first;
        }
        for sig in [libc::SIGTERM, libc::SIGCONT] {
            if include_leader {
                signal_group(self.leader, sig);
            }
            for p in &first {
                signal(p.pid, sig);
            }
        }
        let deadline = Instant::now() + grace;
        loop {
            self.reap_orphans();
            if self.pick(include_leader).is_empty() {
                self.settle(&first);
                return first;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_all(include_leader);
        self.settle(&first);
        first
    }

    /// [`Teardown::stop_tree`] with a run group: freeze the group (nothing in it can
    /// fork), list it, TERM the members and thaw, wait up to `grace`, then
    /// `cgroup.kill` — or, when a spared process (a live shell) is in the group and
    /// must live, freeze and SIGKILL the others by pid until none is left.
    fn stop_group(
        &self,
        g: &RunGroup,
        grace: Duration,
        include_leader: bool,
    ) -> Vec<FrozenProcess> {
        let pick = || self.pick(include_leader);
        g.freeze(true);
        let named_by = Instant::now() + NAME_WAIT;
        let first: Vec<FrozenProcess> = pick()
            .into_iter()
            .map(|p| FrozenProcess {
                ppid: p.ppid,
                killed: KilledProcess {
                    pid: p.pid,
                    command: command_line_past_exec(p.pid, named_by),
                },
                pid: p.pid,
            })
            .collect();
        if first.is_empty() {
            g.freeze(false);
            self.reap_orphans();
            return first;
        }
        for p in &first {
            signal(p.pid, libc::SIGTERM);
            signal(p.pid, libc::SIGCONT);
        }
        g.freeze(false);
        let deadline = Instant::now() + grace;
        loop {
            self.reap_orphans();
            if pick().is_empty() {
                self.settle(&first);
                return first;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let members = g.pids();
        let keep_some = members
            .iter()
            .any(|p| self.spare.contains(p) || (!include_leader && *p == self.leader));
        let deadline = Instant::now() + KILL_LIMIT;
        loop {
            if keep_some {
                g.freeze(true);
                for p in pick() {
                    signal(p.pid, libc::SIGKILL);
                }
                g.freeze(false);
            } else {
                g.kill();
                // Members that left the group are not reached by cgroup.kill.
                for p in pick() {
                    signal(p.pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
            self.reap_orphans();
            if pick().is_empty() || Instant::now() >= deadline {
                break;
            }
        }
        self.settle(&first);
        first
    }

    /// Freeze and SIGKILL until nothing is left.
    fn kill_all(&self, include_leader: bool) {
        let deadline = Instant::now() + KILL_LIMIT;
        loop {
            let left = self.freeze(include_leader);
            if left.is_empty() {
                break;
            }
            if include_leader {
                signal_group(self.leader, libc::SIGKILL);
            }
            for p in &left {
                signal(p.pid, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(5));
            self.reap_orphans();
            if Instant::now() >= deadline {
                break;
            }
        }
        self.reap_orphans();
    }

    /// Reap descendants that were reparented to agentbash (we are their subreaper)
    /// and have died, so no zombie outlives the run. Children whose `Child` someone
    /// owns (this run's leader, other runs' leaders, live shells) are left to it.
    /// Reap `procs` once they are dead. A killed process leaves its group (and the
    /// scans) before it becomes a zombie, so "none left" can come a moment before the
    /// last of them can be reaped; a server has no later run that would reap it.
    /// Bounded: waits only while one of them is still our child and not yet reaped.
    fn settle(&self, procs: &[FrozenProcess]) {
        let me = std::process::id() as i32;
        let deadline = Instant::now() + SETTLE_LIMIT;
        // A live child of ours among them: dying, not yet a zombie (read_stat skips
        // zombies). Checked before reaping, so the reap after sees it dead.
        let dying = |p: &FrozenProcess| {
            p.pid != self.leader && read_stat(p.pid).is_some_and(|s| s.ppid == me)
        };
        loop {
            let pending = procs.iter().any(dying);
            self.reap_orphans();
            if !pending || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn reap_orphans(&self) {
        if !exclusive_process() {
            // Record what is still alive, so it can be reaped once it has died.
            let _ = self.members();
        }
        reap_dead_orphans(self.leader);
    }
}

/// See [`Teardown::reap_orphans`]; `leader` is never reaped here either.
///
/// When agentbash runs one command per process (the CLI), every zombie child nobody
/// owns is an orphan of that run. Otherwise (rpc, mcp, a program using the library)
/// the process may have children of its own, so only zombies that were seen as run
/// members, or that sit in a run leader's session or process group, are reaped.
fn reap_dead_orphans(leader: i32) {
    let me = std::process::id() as i32;
    let exclusive = exclusive_process();
    // Under the lock throughout: a child spawned meanwhile is registered before we
    // look, and no pid we judged can be reaped and reused before we act on it.
    let a = attribution();
    for pid in child_pids() {
        if pid == leader {
            continue;
        }
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = s.rfind(')') else { continue };
        let f: Vec<&str> = s[close + 2..].split_ascii_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok());
        if f.first() != Some(&"Z") || num(1) != Some(i64::from(me)) {
            continue;
        }
        let (pgrp, sid) = (num(2).unwrap_or(0) as i32, num(3).unwrap_or(0) as i32);
        let started = num(19).unwrap_or(-1) as u64;
        if a.owned.contains(&(pid, started)) {
            continue;
        }
        let ours = exclusive
            || a.seen.contains(&(pid, started))
            || a.leaders.contains(&sid)
            || a.leaders.contains(&pgrp);
        if ours {
            // SAFETY: waitpid on a specific zombie child of ours that nobody owns.
            unsafe {
                libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
    }
}

/// Children of this process (every thread's), from /proc; all of /proc when the
/// per-thread lists are unavailable (the caller filters by parent).
fn child_pids() -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return all_pids();
    };
    for t in tasks.flatten() {
        match std::fs::read_to_string(t.path().join("children")) {
            Ok(c) => out.extend(
                c.split_ascii_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            ),
            Err(_) => return all_pids(),
        }
    }
    out
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

static SHARED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Mark this process as running several commands at once (rpc/mcp), so teardown
/// never touches a process it cannot attribute to its own run.
pub fn set_shared_process() {
    SHARED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Make agentbash non-dumpable: its `/proc/<pid>/environ`, `mem` and the like then
/// belong to root, so a command running as the same user cannot read the environment
/// agentbash was given (tokens included) through `/proc/$PPID/environ`, nor ptrace
/// it. Nothing agentbash does needs its own `/proc` entries readable by others (it
/// reads its own and its descendants'; a process may always read its own). Children
/// are unaffected: execve of a normal binary makes a process dumpable again.
/// Returns whether it took effect.
pub fn make_non_dumpable() -> bool {
    // SAFETY: PR_SET_DUMPABLE takes one integer argument and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 }
}

static EXCLUSIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Declare this process the one-run CLI (see [`exclusive_process`]).
pub fn set_exclusive_process() {
    EXCLUSIVE.store(true, std::sync::atomic::Ordering::SeqCst);
    crate::children::set_one_run();
}

/// The `agentbash` binary running one command: every process handed to it (as
/// subreaper) belongs to that run, even one that cleared its environment after
/// setsid, and may be stopped and reaped. Anywhere else — rpc, mcp, or a program
/// that embeds the library and has children of its own — only processes attributed
/// to a run are. Declared with [`set_exclusive_process`]; until the CLI does, a
/// process whose executable is named `agentbash` counts as declared.
pub fn exclusive_process() -> bool {
    static AGENTBASH_BINARY: OnceLock<bool> = OnceLock::new();
    use std::sync::atomic::Ordering::SeqCst;
    !SHARED.load(SeqCst)
        && (EXCLUSIVE.load(SeqCst)
            || *AGENTBASH_BINARY.get_or_init(|| {
                std::env::current_exe()
                    .ok()
                    .and_then(|p| p.file_stem().map(|s| s == "agentbash"))
                    .unwrap_or(false)
            }))
}

fn signal(pid: i32, sig: i32) {
    if pid > 1 {
        // SAFETY: kill(2) with a specific positive pid.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

fn signal_group(pgid: i32, sig: i32) {
    let me = unsafe { libc::getpgrp() };
    // Never signal our own process group.
    if pgid > 1 && pgid != me {
        // SAFETY: kill(2) with a negative pid addresses that process group only.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// `/proc/<pid>/cmdline` as one line (at most 200 chars); the process name in
/// brackets when it has no arguments.
pub fn command_line(pid: i32) -> String {
    let mut s = arguments(pid);
    if s.is_empty() {
        s = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| format!("[{}]", c.trim()))
            .unwrap_or_default();
    }
    if s.chars().count() > 200 {
        s = s.chars().take(199).collect::<String>() + "…";
    }
    s
}

/// `/proc/<pid>/cmdline`, its arguments joined by spaces.
fn arguments(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`command_line`] of a member being stopped, read once it is past any exec it was
/// inside. During execve the kernel installs the new image before its arguments, and
/// a read in between finds none: `setsid sleep 300`, caught so, was listed as
/// `[setsid]`. Neither SIGSTOP nor the cgroup freezer can stop a process inside an
/// exec (both act on its return to user space), and a freeze gives up waiting after
/// its bound, which a loaded machine can pass; so a member without arguments is read
/// again until it has them, is stopped (then no exec is in flight: its arguments are
/// truly empty), is gone, or `deadline` passes. The deadline is shared by one
/// teardown's members, so this never costs a run more than [`NAME_WAIT`].
fn command_line_past_exec(pid: i32, deadline: Instant) -> String {
    while arguments(pid).is_empty()
        && Instant::now() < deadline
        && read_stat(pid).is_some()
        && !is_stopped(pid)
    {
        std::thread::sleep(Duration::from_micros(500));
    }
    command_line(pid)
}

/// Route SIGINT, SIGTERM and SIGHUP to `handler`, which must be async-signal-safe
/// (an atomic store is). The one place agentbash installs its stop signals.
pub fn on_stop_signals(handler: extern "C" fn(libc::c_int)) {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod spawn_tests {
    use super::*;
    use std::io::Read;

    fn spec(program: &str, args: &[&str], cwd: &str) -> SpawnSpec {
        SpawnSpec {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("ONLY".into(), "this".into()),
            ],
            cwd: cwd.into(),
            ..Default::default()
        }
    }

    /// Spawn with every standard descriptor on the null device.
    fn quiet(s: &SpawnSpec) -> std::io::Result<Child> {
        spawn(s, ChildIo::Null, ChildIo::Null, ChildIo::Null)
    }

    fn output(s: &SpawnSpec) -> (String, ExitStatus) {
        let (mut r, w) = std::io::pipe().expect("pipe");
        let w2 = w.try_clone().expect("dup");
        let mut child = spawn(
            s,
            ChildIo::Null,
            ChildIo::Fd(w.into()),
            ChildIo::Fd(w2.into()),
        )
        .expect("spawn");
        let mut out = String::new();
        r.read_to_string(&mut out).expect("read");
        (out, child.wait().expect("wait"))
    }

    #[test]
    fn runs_with_exactly_the_given_env_cwd_and_stdio() {
        let (out, status) = output(&spec(
            "sh",
            &[
                "-c",
                "pwd; env | sort | tr '\\n' ' '; echo err >&2; read x || echo eof; exit 3",
            ],
            "/tmp",
        ));
        assert_eq!(status.code(), Some(3));
        assert_eq!(
            out,
            "/tmp\nONLY=this PATH=/usr/bin:/bin PWD=/tmp err\neof\n"
        );
    }

    #[test]
    fn a_new_session_with_default_signals_and_an_empty_mask() {
        let (out, _) = output(&spec(
            "sh",
            &[
                "-c",
                // `exec`: the shell itself may block every signal while it forks.
                "ps -o sid=,pgid= -p $$; exec grep -E '^Sig(Blk|Ign)' /proc/self/status",
            ],
            "/",
        ));
        let mut lines = out.lines();
        let ids: Vec<&str> = lines.next().expect("ids").split_whitespace().collect();
        assert_eq!(ids[0], ids[1], "session leader: {out}");
        assert_eq!(lines.next(), Some("SigBlk:\t0000000000000000"), "{out}");
        // sh itself ignores nothing we care about; SIGPIPE (13) is not ignored.
        let ign = u64::from_str_radix(
            lines
                .next()
                .expect("SigIgn")
                .trim_start_matches("SigIgn:\t"),
            16,
        )
        .expect("hex");
        assert_eq!(ign & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
    }

    #[test]
    fn failures_are_errors_not_children() {
        let e = quiet(&spec("/nonexistent/prog", &[], "/")).expect_err("missing program");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        let e = quiet(&spec("no-such-prog-anywhere", &[], "/")).expect_err("not on PATH");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        let e = quiet(&spec("sh", &["-c", "true"], "/nonexistent-dir")).expect_err("missing cwd");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        let e = quiet(&spec("/etc/hostname", &[], "/")).expect_err("not executable");
        // EACCES, or ENOEXEC for root (who may exec any file with an x bit).
        assert!(
            matches!(e.raw_os_error(), Some(libc::EACCES | libc::ENOEXEC)),
            "{e}"
        );
        let mut bad = spec("sh", &["-c", "true"], "/");
        bad.args.push("a\0b".into());
        let e = quiet(&bad).expect_err("NUL");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_bad_cwd_is_told_apart_from_other_failures() {
        let e = quiet(&spec("sh", &["-c", "true"], "/nonexistent-dir")).expect_err("missing cwd");
        assert!(is_bad_cwd(&e), "{e}");
        assert_eq!(
            e.to_string(),
            std::io::Error::from_raw_os_error(libc::ENOENT).to_string()
        );
        let e = quiet(&spec("sh", &["-c", "true"], "/etc/hostname")).expect_err("a file");
        assert!(is_bad_cwd(&e), "{e}");
        assert_eq!(e.kind(), std::io::ErrorKind::NotADirectory);
        let e = quiet(&spec("/nonexistent/prog", &[], "/")).expect_err("missing program");
        assert!(!is_bad_cwd(&e), "{e}");
    }

    #[test]
    fn on_a_tty_the_child_leads_a_session_whose_controlling_terminal_it_is() {
        let (master, slave) = super::open_pty().expect("a pty");
        let script = "cat /proc/self/stat; ls -l /proc/self/fd/";
        let mut child =
            spawn_on_tty(&spec("sh", &["-c", script], "/"), None, slave).expect("spawn");
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once the last slave descriptor (the child's) is closed.
        while let Ok(n @ 1..) = nix::unistd::read(&master, &mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
        assert!(child.wait().expect("wait").success());
        let out = String::from_utf8_lossy(&out);
        let stat = out.lines().next().expect("stat");
        let f: Vec<i64> = stat[stat.rfind(')').expect("comm") + 2..]
            .split_whitespace()
            .skip(1)
            .take(5)
            .map(|v| v.parse().expect("number"))
            .collect();
        // cat's pgrp, session, tty_nr and tpgid: the shell leads both, the terminal
        // is its controlling one, and its process group the terminal's foreground.
        let sh = i64::from(child.id() as i32);
        let (pgrp, session, tty_nr, tpgid) = (f[1], f[2], f[3], f[4]);
        assert_eq!((pgrp, session, tpgid), (sh, sh, sh), "{out}");
        assert_ne!(tty_nr, 0, "{out}");
        // The master stayed with us.
        assert!(!out.contains("ptmx"), "{out}");
    }

    #[test]
    fn try_wait_kill_and_wait() {
        let mut c = quiet(&spec("sleep", &["30"], "/")).expect("spawn");
        assert!(c.try_wait().expect("try_wait").is_none());
        c.kill().expect("kill");
        let s = c.wait().expect("wait");
        assert_eq!(s.signal(), Some(libc::SIGKILL));
        assert_eq!(
            c.try_wait().expect("cached").map(|s| s.signal()),
            Some(Some(libc::SIGKILL))
        );
        c.kill().expect("no-op once reaped");
    }
}
