//! Starting a command inside the sandbox's namespaces, under an init process of ours.
//!
//! The namespaces engine gives a command its own user, mount, PID, UTS and IPC
//! namespaces (and network, for `network = false`). The first process of a PID
//! namespace is its init: orphans are handed to it, it receives only the signals it
//! has handlers for, and when it exits the kernel kills everything left in the
//! namespace. A shell makes a poor init (it would ignore a timeout's SIGTERM, and its
//! exit would kill background processes before agentbash could list them), so init is
//! ours: a fork of agentbash (copy-on-write, never exec'd) that
//!
//! 1. waits until the parent has written its user namespace's id maps (as root the
//!    whole range maps to itself, which only a process outside the namespace may
//!    write: hence a fork, not the `vfork` used elsewhere, whose parent is suspended),
//! 2. makes the sandbox's mounts ([`crate::sandbox::Prepared::apply_in_init`]),
//! 3. forks the command, which reports its pid as the host sees it, mounts its own
//!    `/proc`, confines itself ([`crate::sandbox::Prepared::apply_in_command`]) and
//!    execs,
//! 4. reaps whatever is handed to it, sends the command's wait status to the parent
//!    when the command exits, and leaves once it has no children left.
//!
//! So the run sees the same thing as without a namespace: the command's exit status
//! when the command exits, and its background processes still alive, to be listed and
//! stopped by teardown (which never touches init: see `Teardown::member_procs`). Init has the
//! parent-death signal, so a namespace never outlives agentbash (unless processes are
//! kept on purpose, `background = "keep"`).
//!
//! Between the clone and exec both processes are forks of a multi-threaded program:
//! raw syscalls on data built before the clone only, no allocation, no lock.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::signals::reset_signals;
use super::spawn::{BadCwd, Child, Launch, apply_limits, install_stdio};
use crate::sandbox::{ChildError, ChildStep, Prepared};

/// A PID namespace's init, as its parent holds it.
#[derive(Debug)]
pub struct Init {
    pub pid: i32,
    /// Init writes the command's wait status here (non-blocking on our side).
    status: OwnedFd,
    reaped: bool,
    /// Not killed when dropped: it may outlive agentbash (`background = "keep"`).
    keep: bool,
    /// The network allowlist's proxy, serving the socket init opened in the
    /// namespace: it lives as long as the command (dropped after init).
    _proxy: Option<crate::netproxy::Proxy>,
}

/// One message from init or the command to the parent, over a pipe.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Record {
    kind: u8,
    step: u8,
    index: u16,
    value: i32,
}

const HOST_PID: u8 = 1;
const JOINED: u8 = 2;
const FAILED: u8 = 3;
const BAD_CWD: u8 = 4;
const SANDBOX_FAILED: u8 = 5;
const STATUS: u8 = 6;
const READY: u8 = 7;

/// Everything init and the command read, built before the clone (they see a copy).
struct InitArgs<'a> {
    launch: &'a Launch,
    prepared: &'a Prepared,
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    fds: [libc::c_int; 3],
    go: libc::c_int,
    report: libc::c_int,
    status: libc::c_int,
    /// Where init sends the proxy's listening socket (-1: no network allowlist).
    handoff: libc::c_int,
    /// Descriptors init keeps (sorted); every other one is closed at once, so init holds
    /// no other run's pipe open.
    keep: [libc::c_int; 10],
    keep_len: usize,
    /// Joined the run's cgroup by the clone itself.
    in_group: bool,
    pdeathsig: bool,
    /// Be dumpable while the parent writes the id maps (see [`init_main`]).
    dumpable_for_maps: bool,
}

/// A pipe whose ends are close-on-exec and above 2 (a caller started with a closed
/// stdin must not get a pipe end where the command's stdio goes).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
    Ok((above_two(r)?, above_two(w)?))
}

/// The unix socket pair init hands the network allowlist's listening socket over:
/// (ours, init's), close-on-exec and above 2 like [`pipe`]'s.
fn handoff_channel() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    let flags = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC;
    // SAFETY: socketpair fills the two-element array.
    if unsafe { libc::socketpair(libc::AF_UNIX, flags, 0, fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both just created, owned by nobody else.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_two(ours)?, above_two(theirs)?))
}

fn above_two(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor we then own.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just created, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Start `l` under an init process in the namespaces of `prepared`.
pub(super) fn start(l: &Launch, prepared: &Prepared) -> std::io::Result<Child> {
    let Some(ns) = prepared.namespaces() else {
        return Err(std::io::Error::other("no namespaces to start in"));
    };
    let (go_r, go_w) = pipe()?;
    let (report_r, report_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    let handoff = match prepared.proxy() {
        Some(_) => Some(handoff_channel()?),
        None => None,
    };
    let ptrs = |v: &[std::ffi::CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let (argv, envp) = (ptrs(&l.argv), ptrs(&l.envp));
    let raw = |f: &Option<OwnedFd>| f.as_ref().map_or(-1, |f| f.as_raw_fd());
    let fds = [raw(&l.fds[0]), raw(&l.fds[1]), raw(&l.fds[2])];
    let ours = [go_r.as_raw_fd(), report_w.as_raw_fd(), status_w.as_raw_fd()];
    let theirs = handoff.as_ref().map(|(_, theirs)| theirs.as_raw_fd());
    let (keep_arr, keep_len) = kept_fds(ours, fds, prepared.ruleset_fd(), theirs);
    let mut args = InitArgs {
        launch: l,
        prepared,
        program: l.program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        fds,
        go: go_r.as_raw_fd(),
        report: report_w.as_raw_fd(),
        status: status_w.as_raw_fd(),
        handoff: handoff
            .as_ref()
            .map_or(-1, |(_, theirs)| theirs.as_raw_fd()),
        keep: keep_arr,
        keep_len,
        in_group: false,
        pdeathsig: !l.detached && !l.keep_background,
        // SAFETY: geteuid cannot fail.
        dumpable_for_maps: unsafe { libc::geteuid() } != 0 && ns.flags & libc::CLONE_NEWUSER != 0,
    };
    let (pid, clone_err) = fork_init(&mut args, ns.flags, l.cgroup_fd);
    if pid < 0 {
        crate::sandbox::forget_probe();
        return Err(std::io::Error::new(
            clone_err.kind(),
            format!(
                "sandbox: creating namespaces failed: {clone_err}; set [sandbox] engine = \"landlock\" or check `agentbash sandbox check`"
            ),
        ));
    }
    let handoff = handoff.map(|(ours, _theirs)| ours);
    drop((go_r, report_w, status_w));
    let mut init = Init {
        pid,
        status: status_r,
        reaped: false,
        keep: l.keep_background,
        _proxy: None,
    };
    let mut file = std::fs::File::from(report_r);
    if args.dumpable_for_maps && read_record(&mut file).is_none_or(|r| r.kind != READY) {
        init.kill();
        init.reap(true);
        return Err(std::io::Error::other(
            "sandbox: the namespace's init ended before its id maps were written",
        ));
    }
    if let Err(e) = prepared.write_id_maps(pid) {
        crate::sandbox::forget_probe();
        init.kill();
        init.reap(true);
        return Err(std::io::Error::other(format!(
            "sandbox: writing the user namespace's id maps failed: {e}; set [sandbox] engine = \"landlock\" or check `agentbash sandbox check`"
        )));
    }
    // The go byte: init may proceed. (If we die first, init reads EOF and leaves.)
    let _ = nix::unistd::write(&go_w, b"g");
    drop(go_w);
    let (host_pid, joined, failure) = read_start(&mut file, args.in_group, prepared);
    let _ = super::set_nonblocking(&init.status);
    if let Some(e) = failure {
        init.reap(true);
        return Err(e);
    }
    let Some(pid) = host_pid else {
        init.kill();
        init.reap(true);
        return Err(std::io::Error::other(
            "sandbox: the namespace's init ended before the command started",
        ));
    };
    if let (Some(channel), Some(plan)) = (&handoff, prepared.proxy()) {
        let started = crate::sandbox::receive_listener(channel)
            .and_then(|listener| crate::netproxy::Proxy::start(listener, plan));
        match started {
            Ok(proxy) => init._proxy = Some(proxy),
            Err(e) => {
                init.kill();
                init.reap(true);
                return Err(std::io::Error::other(format!(
                    "sandbox: the network allowlist's proxy could not start: {e}; set [sandbox] network = false or true"
                )));
            }
        }
    }
    Ok(Child {
        pid,
        status: None,
        joined,
        init: Some(init),
        owned: false,
    })
}

/// The descriptors init keeps open (the others it closes): `ours`, the pipes to
/// agentbash; the command's three (an inherited one, -1, is agentbash's own 0, 1 or
/// 2); the Landlock ruleset; the proxy's hand-off socket. Sorted, without repeats.
fn kept_fds(
    ours: [libc::c_int; 3],
    fds: [libc::c_int; 3],
    ruleset: Option<libc::c_int>,
    handoff: Option<libc::c_int>,
) -> ([libc::c_int; 10], usize) {
    let mut keep: Vec<libc::c_int> = ours.to_vec();
    for (i, fd) in fds.iter().enumerate() {
        keep.push(if *fd < 0 { i as libc::c_int } else { *fd });
    }
    keep.extend(ruleset);
    keep.extend(handoff);
    keep.sort_unstable();
    keep.dedup();
    let mut out = [-1; 10];
    out[..keep.len()].copy_from_slice(&keep);
    (out, keep.len())
}

/// Clone init into new namespaces `flags` (into the run's group `cgroup_fd` when it
/// can), every signal blocked around the clone: no handler may run in the child
/// before it has reset them. The pid (-1 on failure) and the clone's error.
fn fork_init(
    args: &mut InitArgs<'_>,
    flags: libc::c_int,
    cgroup_fd: Option<libc::c_int>,
) -> (libc::pid_t, std::io::Error) {
    // SAFETY: sigset operations on local, initialised sets.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    let mut pid = -1;
    if let Some(fd) = cgroup_fd {
        args.in_group = true;
        pid = fork_into(flags, Some(fd));
        if pid == 0 {
            init_main(args);
        }
        if pid < 0 {
            args.in_group = false;
        }
    }
    if pid < 0 {
        pid = fork_into(flags, None);
        if pid == 0 {
            init_main(args);
        }
    }
    let clone_err = std::io::Error::last_os_error();
    // SAFETY: restoring the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    (pid, clone_err)
}

/// What init reported of the command's start, until it closed the report pipe: the
/// command's host pid, whether it joined the run's group (`joined`: already, init
/// having been cloned into it), and why it did not start.
fn read_start(
    file: &mut std::fs::File,
    mut joined: bool,
    prepared: &Prepared,
) -> (Option<i32>, bool, Option<std::io::Error>) {
    let mut host_pid = None;
    let mut failure: Option<std::io::Error> = None;
    while let Some(record) = read_record(file) {
        match record.kind {
            HOST_PID => host_pid = Some(record.value),
            JOINED => joined = true,
            BAD_CWD => {
                let e = std::io::Error::from_raw_os_error(record.value);
                failure = Some(std::io::Error::new(e.kind(), BadCwd(e)));
            }
            SANDBOX_FAILED => {
                crate::sandbox::forget_probe();
                let error = ChildError {
                    step: step_from(record.step),
                    index: record.index,
                    errno: record.value,
                };
                failure = Some(std::io::Error::other(prepared.explain(error)));
            }
            FAILED => failure = Some(std::io::Error::from_raw_os_error(record.value)),
            _ => {}
        }
    }
    (host_pid, joined, failure)
}

fn read_record(file: &mut std::fs::File) -> Option<Record> {
    use std::io::Read;
    let mut buf = [0u8; size_of::<Record>()];
    match file.read_exact(&mut buf) {
        // SAFETY: Record is plain data of exactly this size, any bit pattern valid.
        Ok(()) => Some(unsafe { std::mem::transmute::<[u8; 8], Record>(buf) }),
        Err(_) => None,
    }
}

fn step_from(raw: u8) -> ChildStep {
    use ChildStep::*;
    [
        Unshare,
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
        Network,
    ]
    .into_iter()
    .find(|s| *s as u8 == raw)
    .unwrap_or(Unshare)
}

impl Init {
    /// The command's wait status once init reported it; with `block`, waits for it.
    /// When init is gone without a word (killed), its own end stands for the
    /// command's: the kernel killed the command with it.
    pub fn command_status(&mut self, block: bool) -> std::io::Result<Option<ExitStatus>> {
        loop {
            let mut buf = [0u8; size_of::<Record>()];
            match nix::unistd::read(&self.status, &mut buf) {
                Ok(n) if n == buf.len() => {
                    // SAFETY: plain data of exactly this size.
                    let r: Record = unsafe { std::mem::transmute::<[u8; 8], Record>(buf) };
                    if r.kind == STATUS {
                        return Ok(Some(ExitStatus::from_raw(r.value)));
                    }
                }
                Ok(0) => {
                    let status = self.reap(true);
                    return Ok(Some(status.unwrap_or(ExitStatus::from_raw(libc::SIGKILL))));
                }
                Ok(_) => {
                    return Err(std::io::Error::other(
                        "a short status from the sandbox's init",
                    ));
                }
                Err(nix::errno::Errno::EAGAIN) if block => {
                    let fd = std::os::fd::AsFd::as_fd(&self.status);
                    let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN)];
                    let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE);
                }
                Err(nix::errno::Errno::EAGAIN) => return Ok(None),
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reap init once it has exited (with `block`, wait for it). Returns its status
    /// when this call reaped it.
    pub fn reap(&mut self, block: bool) -> Option<ExitStatus> {
        if self.reaped {
            return None;
        }
        let mut status = 0;
        loop {
            let flags = if block { 0 } else { libc::WNOHANG };
            // SAFETY: waitpid on our own child with a valid out-pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, flags) };
            if r == self.pid {
                self.reaped = true;
                crate::children::forget_helper(self.pid);
                return Some(ExitStatus::from_raw(status));
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if r < 0 {
                // Not ours any more (reaped elsewhere): nothing to wait for.
                self.reaped = true;
                crate::children::forget_helper(self.pid);
            }
            return None;
        }
    }

    /// A copy of the status pipe's read end: readable once init reports the command's
    /// exit (or is gone).
    pub fn status_watch(&self) -> Option<OwnedFd> {
        self.status.try_clone().ok()
    }

    /// SIGKILL init: the kernel kills every process of its namespace.
    pub fn kill(&self) {
        if !self.reaped {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

impl Drop for Init {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        if self.reap(false).is_some() || self.keep {
            return;
        }
        // The run is over: nothing of its namespace may stay. (Usually init is on its
        // way out already, once it reported the command's exit.)
        self.kill();
        // Its end waits for the kernel to dismantle the namespaces (mounts, RCU grace
        // periods): milliseconds no caller should wait for. Reaped off the run's path.
        crate::children::reap_later(self.pid);
        self.reaped = true;
    }
}

/// clone(2) with fork semantics (a copy of our memory, no `CLONE_VM`) into `flags`'
/// namespaces, born in cgroup `cgroup` when given (clone3). 0 in the child.
fn fork_into(flags: libc::c_int, cgroup: Option<libc::c_int>) -> libc::pid_t {
    if let Some(fd) = cgroup {
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
        let ca = CloneArgs {
            flags: flags as u64 | CLONE_INTO_CGROUP,
            pidfd: 0,
            child_tid: 0,
            parent_tid: 0,
            exit_signal: libc::SIGCHLD as u64,
            stack: 0,
            stack_size: 0,
            tls: 0,
            set_tid: 0,
            set_tid_size: 0,
            cgroup: fd as u64,
        };
        // SAFETY: without CLONE_VM the child gets a copy of our memory and returns
        // here like fork's child; `ca` is valid for the call.
        return unsafe { libc::syscall(libc::SYS_clone3, &ca, size_of::<CloneArgs>()) }
            as libc::pid_t;
    }
    // SAFETY: as above; clone's raw argument order is the architecture's, and a null
    // stack means "the caller's" (a copy of it, in the child).
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as libc::pid_t
    }
}

/// Send one record to the parent (best effort: a parent that is gone reads nothing).
fn send(fd: libc::c_int, kind: u8, step: u8, index: u16, value: i32) {
    let r = Record {
        kind,
        step,
        index,
        value,
    };
    // SAFETY: writing a plain struct from the stack.
    unsafe {
        libc::write(fd, (&r as *const Record).cast(), size_of::<Record>());
    }
}

fn errno() -> i32 {
    // SAFETY: reading the thread's errno.
    unsafe { *libc::__errno_location() }
}

/// Close every descriptor but the sorted `keep` ones.
fn close_all_but(keep: &[libc::c_int]) {
    let mut from: u32 = 0;
    for &fd in keep {
        if fd < 0 {
            continue;
        }
        if (fd as u32) > from {
            // SAFETY: close_range on a range of descriptor numbers.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd as u32 - 1, 0u32) };
        }
        from = fd as u32 + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32) };
}

/// Init: see the module documentation. Never returns.
fn init_main(a: &InitArgs<'_>) -> ! {
    // SAFETY: raw syscalls on our copy of data built before the clone.
    unsafe {
        reset_signals();
        // A status write to a parent that stopped listening must not kill init (and
        // with it the namespace) by SIGPIPE.
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        close_all_but(&a.keep[..a.keep_len]);
        if a.pdeathsig {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        }
        // agentbash is not dumpable (its memory holds its environment), and neither is
        // this copy of it; but then its /proc files belong to root, and a user other
        // than root cannot write its id maps. Dumpable only until they are written,
        // before anything of the command runs; the command's exec makes it dumpable in
        // its own right.
        if a.dumpable_for_maps {
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
            send(a.report, READY, 0, 0, 0);
        }
        let mut go = [0u8; 1];
        if libc::read(a.go, go.as_mut_ptr().cast(), 1) != 1 {
            libc::_exit(1);
        }
        libc::close(a.go);
        if a.dumpable_for_maps {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        libc::setsid();
        if !a.in_group
            && let Some(procs) = a.launch.cgroup_procs.as_ref()
        {
            // Writing 0 moves the writer: everything init starts is in the run's group.
            let g = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if g >= 0 {
                if libc::write(g, b"0".as_ptr().cast(), 1) == 1 {
                    send(a.report, JOINED, 0, 0, 0);
                }
                libc::close(g);
            }
        }
        if libc::chdir(a.launch.cwd.as_ptr()) != 0 {
            send(a.report, BAD_CWD, 0, 0, errno());
            libc::_exit(127);
        }
        let tty = a.launch.controlling_tty.then_some(a.fds[0]);
        if let Err(e) = a.prepared.apply_in_init(tty) {
            send_failure(a.report, e);
            libc::_exit(127);
        }
        if a.handoff >= 0
            && let Err(e) = a.prepared.open_proxy_port(a.handoff)
        {
            send_failure(a.report, e);
            libc::_exit(127);
        }
        let pid = fork_into(0, None);
        if pid == 0 {
            command_main(a);
        }
        if pid < 0 {
            send(a.report, FAILED, 0, 0, errno());
            libc::_exit(127);
        }
        // Init keeps only the status pipe: the command's stdio is the command's.
        for &fd in &a.keep[..a.keep_len] {
            if fd != a.status && fd >= 0 {
                libc::close(fd);
            }
        }
        loop {
            let mut status = 0;
            let r = libc::waitpid(-1, &mut status, 0);
            if r == pid {
                send(a.status, STATUS, 0, 0, status);
            } else if r < 0 {
                match errno() {
                    libc::EINTR => continue,
                    _ => libc::_exit(0),
                }
            }
        }
    }
}

fn send_failure(fd: libc::c_int, e: ChildError) {
    send(fd, SANDBOX_FAILED, e.step as u8, e.index, e.errno);
}

/// The command, init's child: report our pid as the host sees it, then the usual
/// setup, the sandbox's last steps, and exec. Never returns.
fn command_main(a: &InitArgs<'_>) -> ! {
    // SAFETY: raw syscalls on our copy of data built before the clone.
    unsafe {
        // Before our own /proc is mounted, /proc is still the host's: its `self` names
        // us by the host's pid.
        let mut buf = [0u8; 16];
        let n = libc::readlink(c"/proc/self".as_ptr(), buf.as_mut_ptr().cast(), buf.len());
        let host = if n > 0 {
            buf[..n as usize]
                .iter()
                .try_fold(0i32, |acc, &b| {
                    b.is_ascii_digit()
                        .then(|| acc.wrapping_mul(10).wrapping_add(i32::from(b - b'0')))
                })
                .unwrap_or(0)
        } else {
            0
        };
        if host <= 0 {
            send(a.report, FAILED, 0, 0, libc::ESRCH);
            libc::_exit(127);
        }
        send(a.report, HOST_PID, 0, 0, host);
        reset_signals();
        let fail = |a: &InitArgs<'_>| -> ! {
            send(a.report, FAILED, 0, 0, errno());
            libc::_exit(127)
        };
        if !install_stdio(&a.fds) {
            fail(a);
        }
        if libc::setsid() < 0 {
            fail(a);
        }
        if a.launch.controlling_tty && libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
            fail(a);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != 1 {
            libc::_exit(125);
        }
        if apply_limits(&a.launch.limits).is_err() {
            fail(a);
        }
        if let Err(e) = a.prepared.apply_in_command() {
            send_failure(a.report, e);
            libc::_exit(127);
        }
        libc::execve(a.program, a.argv, a.envp);
        fail(a)
    }
}

/// The `/proc/<pid>/status` line `NSpid:` of `pid`: its pid in each namespace, the
/// host's first.
fn ns_pids(pid: i32) -> Option<Vec<i32>> {
    let status = super::read_kernel_file(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    Some(
        line["NSpid:".len()..]
            .split_ascii_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect(),
    )
}

/// The host pid of the process numbered `inner` in the PID namespace of `parent`'s
/// children (a shell reports `$BASHPID` in its own numbering): found among the
/// children of `parent` (host pid).
pub fn host_pid_of_child(parent: i32, inner: i32) -> Option<i32> {
    let kids = super::read_kernel_file(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    kids.split_ascii_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .find(|&p| ns_pids(p).and_then(|v| v.last().copied()) == Some(inner))
}

const _: () = assert!(size_of::<Record>() == 8);
