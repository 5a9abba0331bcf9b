//! The one spawn helper: every process agentbash starts for a command goes through it.
//!
//! Every command runs as the leader of a new session (so terminal signals meant for
//! agentbash never reach it directly, and it has no controlling terminal: opening
//! /dev/tty fails at once instead of waiting for input; in PTY mode it is the
//! pseudo-terminal's, see [`spawn_on_tty`]). It dies with agentbash
//! (parent-death signal). agentbash makes itself a child subreaper, so descendants
//! that double-fork or call setsid are reparented to it rather than to init and can
//! still be found and stopped by `teardown`. The child between clone and exec resets
//! what it inherited of agentbash's signal handling (`signals`), takes its standard
//! descriptors and limits, joins the run's group, and execs.

use super::cgroup::RunGroup;
pub use super::pidns::host_pid_of_child;
use super::signals::reset_signals;
use super::teardown::attribution;
use super::{Limits, SpawnSpec};
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, Once, OnceLock, mpsc};

static SUBREAPER: Once = Once::new();

use crate::children::register_init;
pub use crate::children::{reap_later, register_helper};

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
    /// Registered as owned (see `teardown::Attribution`): forgotten there once
    /// reaped. A child whose start failed never was (it is reaped with the registry
    /// still locked).
    pub(super) owned: bool,
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
                if self.owned {
                    super::teardown::forget_reaped(self.pid);
                }
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
    let cstring = |s: Vec<u8>| {
        CString::new(s).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a NUL byte in the command, its arguments or its environment",
            )
        })
    };
    let cstr = |s: &[u8]| cstring(s.to_vec());
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
        .map(|(k, v)| {
            // One allocation, of the right size (room for the NUL `CString` adds).
            let mut kv = Vec::with_capacity(k.len() + v.len() + 2);
            kv.extend_from_slice(k.as_bytes());
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(kv)
        })
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
    let mut child = start(&launch)?;
    a.register_leader(child.pid, child.init_pid());
    child.owned = child.init.is_none();
    if let Some(init) = child.init_pid() {
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

/// Memory for a child's stack, `CHILD_STACK` bytes at its pointer: not zeroed (a
/// stack is written before it is read), so only the few pages the child uses are
/// ever touched, instead of sixteen page faults for zeros on every spawn.
fn child_stack() -> Vec<u8> {
    Vec::with_capacity(CHILD_STACK)
}

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
        owned: false,
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
    let mut stack = child_stack();
    // SAFETY: the stack (its capacity) outlives the child's use of it (CLONE_VFORK
    // suspends us until the child execs or exits); the top is 16-byte aligned as the
    // ABI wants.
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
    let mut stack = child_stack();
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

    /// Another run's teardown never reaps a leader that its `Child` has not reaped
    /// yet (it would take that run's exit status); once reaped, it is not owned.
    #[test]
    fn a_teardown_leaves_alone_a_leader_its_child_has_not_reaped() {
        let mut first = quiet(&spec("sleep", &["30"], "/")).expect("spawn");
        let mut second = quiet(&spec("sh", &["-c", "exit 7"], "/")).expect("spawn");
        let pid = second.id() as i32;
        let zombie = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.starts_with(" Z")))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !zombie() {
            assert!(std::time::Instant::now() < deadline, "never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        super::super::teardown::Teardown::new(first.id() as i32, "m").reap_orphans();
        assert_eq!(second.wait().expect("wait").code(), Some(7));
        assert!(!super::super::teardown::attribution().owns(pid, 0));
        first.kill().expect("kill");
        first.wait().expect("wait");
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
