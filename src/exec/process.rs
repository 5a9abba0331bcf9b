//! The one spawn helper, and process-tree teardown.
//!
//! Every command runs as the leader of a new session (so terminal signals meant for
//! agentbash never reach it directly, and it has no controlling terminal: opening
//! /dev/tty fails at once instead of waiting for input). It dies with agentbash
//! (parent-death signal). agentbash makes itself a child subreaper, so descendants
//! that double-fork or call setsid are reparented to it rather than to init and can
//! still be found and stopped: "no descendant outlives the run" holds for them too.

use super::{KilledProcess, Limits, SpawnSpec};
use std::collections::{HashMap, HashSet, VecDeque};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
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

/// Register a child spawned outside [`spawn`] (e.g. by a PTY library) whose owner
/// will wait for it and which leads a run: concurrent teardowns never reap it, and
/// dead orphans of its session are recognised.
pub fn register_owned(pid: i32) {
    attribution().register_leader(pid);
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
fn start_time(pid: i32) -> Option<u64> {
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

/// Spawn `spec` with the given stdio as a new session leader.
pub fn spawn(
    spec: &SpawnSpec,
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
) -> std::io::Result<Child> {
    become_subreaper();
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr);
    let limits = spec.limits;
    // SAFETY: the closure only calls async-signal-safe functions (setsid, prctl,
    // getppid, setrlimit, sigprocmask, signal) between fork and exec.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != parent {
                    libc::_exit(125);
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
            apply_limits(&limits)
        });
    }
    on_spawner_thread(cmd)
}

/// A command to fork, and where to send the child.
type SpawnJob = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The parent-death signal fires when the *thread* that forked the child exits, not
/// when the process does. So every child is forked by one thread that lives as long
/// as agentbash: a command, or a live shell reused across requests, started from a
/// short-lived request thread (rpc, mcp) must not be killed when that thread ends.
fn on_spawner_thread(cmd: Command) -> std::io::Result<Child> {
    // The main thread lives exactly as long as the process: it may fork itself, and
    // a single-run CLI never pays for the thread (nor for the TLB shootdowns a fork
    // costs in a multi-threaded process).
    if is_main_thread() {
        return fork_and_register(cmd);
    }
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<SpawnJob>>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("agentbash-spawner".into())
            .spawn(move || {
                for (cmd, reply) in rx {
                    let _ = reply.send(fork_and_register(cmd));
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let (reply, answer) = mpsc::channel();
    let sent = match spawner {
        Some(tx) => {
            let tx = tx.lock().unwrap_or_else(|p| p.into_inner()).clone();
            tx.send((cmd, reply)).map_err(|e| e.0.0)
        }
        None => Err(cmd),
    };
    match sent {
        Ok(()) => answer
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone"))),
        // No spawner thread (it could not be started): fork from this one.
        Err(cmd) => fork_and_register(cmd),
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

fn fork_and_register(mut cmd: Command) -> std::io::Result<Child> {
    let mut a = attribution();
    let child = cmd.spawn()?;
    a.register_leader(child.id() as i32);
    Ok(child)
}

/// setrlimit in the child; runs between fork and exec.
fn apply_limits(l: &Limits) -> std::io::Result<()> {
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

/// True when this process has any live or zombie child (any thread's).
pub fn has_children() -> bool {
    let Ok(rd) = std::fs::read_dir("/proc/self/task") else {
        return true;
    };
    for t in rd.flatten() {
        match std::fs::read_to_string(t.path().join("children")) {
            Ok(c) if c.trim().is_empty() => {}
            _ => return true,
        }
    }
    false
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

/// A process tree to stop: the session led by `leader`, plus every descendant of
/// agentbash that carries the run's marker or descends from a member.
pub struct Teardown {
    pub leader: i32,
    marker: Vec<u8>,
}

impl Teardown {
    pub fn new(leader: i32, marker_value: &str) -> Self {
        Teardown {
            leader,
            marker: format!("{}={marker_value}", super::env::RUN_MARKER).into_bytes(),
        }
    }

    /// Live members of the run's tree, the leader included if alive.
    pub fn members(&self) -> Vec<i32> {
        let me = std::process::id() as i32;
        let procs = all_procs();
        let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
        for p in &procs {
            children.entry(p.ppid).or_default().push(p);
        }
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        // Walk agentbash's descendants; membership is inherited down the tree.
        let mut stack: Vec<(i32, bool)> = vec![(me, false)];
        while let Some((pid, parent_member)) = stack.pop() {
            for c in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
                if !seen.insert(c.pid) {
                    continue;
                }
                // In the one-run CLI every orphan handed to us (subreaper) is the
                // run's, even one that cleared its environment after setsid.
                let member = parent_member
                    || (pid == me && exclusive_process())
                    || c.pid == self.leader
                    || c.sid == self.leader
                    || c.pgrp == self.leader
                    || has_marker(c.pid, &self.marker);
                if member {
                    out.push(c.pid);
                }
                stack.push((c.pid, member));
            }
        }
        // A member reparented elsewhere (no subreaper support) still shares the session.
        for p in &procs {
            if p.sid == self.leader && seen.insert(p.pid) {
                out.push(p.pid);
            }
        }
        // Remember them: once dead, a zombie can no longer be told apart.
        let members: HashSet<i32> = out.iter().copied().collect();
        let mut a = attribution();
        for p in procs.iter().filter(|p| members.contains(&p.pid)) {
            a.saw_member(p.pid, p.started);
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

    /// TERM (and CONT, so stopped processes see it) to every member, wait up to
    /// `grace` for them to go, then KILL whatever remains. Returns what was signalled.
    pub fn terminate(&self, grace: Duration, include_leader: bool) -> Vec<KilledProcess> {
        let pick = |t: &Self| {
            if include_leader {
                t.members()
            } else {
                t.others()
            }
        };
        let first = pick(self);
        let mut killed: Vec<KilledProcess> = first
            .iter()
            .map(|&pid| KilledProcess {
                pid,
                command: command_line(pid),
            })
            .collect();
        let mut known: HashSet<i32> = first.iter().copied().collect();
        if include_leader {
            signal_group(self.leader, libc::SIGTERM);
            signal_group(self.leader, libc::SIGCONT);
        }
        for &p in &first {
            signal(p, libc::SIGTERM);
            signal(p, libc::SIGCONT);
        }
        let deadline = Instant::now() + grace;
        loop {
            self.reap_orphans();
            let left = pick(self);
            for &p in &left {
                if known.insert(p) {
                    killed.push(KilledProcess {
                        pid: p,
                        command: command_line(p),
                    });
                    signal(p, libc::SIGTERM);
                }
            }
            if left.is_empty() {
                return killed;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_all(include_leader, &mut killed, &mut known);
        killed
    }

    /// SIGKILL until nothing is left (a forking process can add members meanwhile).
    fn kill_all(
        &self,
        include_leader: bool,
        killed: &mut Vec<KilledProcess>,
        known: &mut HashSet<i32>,
    ) {
        for _ in 0..200 {
            if include_leader {
                signal_group(self.leader, libc::SIGKILL);
            }
            let left: Vec<i32> = if include_leader {
                self.members()
            } else {
                self.others()
            };
            if left.is_empty() {
                break;
            }
            for p in left {
                if known.insert(p) {
                    killed.push(KilledProcess {
                        pid: p,
                        command: command_line(p),
                    });
                }
                signal(p, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(5));
            self.reap_orphans();
        }
        self.reap_orphans();
    }

    /// Reap descendants that were reparented to agentbash (we are their subreaper)
    /// and have died, so no zombie outlives the run. Children whose `Child` someone
    /// owns (this run's leader, other runs' leaders, live shells) are left to it.
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

/// True unless this is the one-run CLI ([`exclusive_process`]).
pub fn shared_process() -> bool {
    !exclusive_process()
}

static EXCLUSIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Declare this process the one-run CLI (see [`exclusive_process`]).
pub fn set_exclusive_process() {
    EXCLUSIVE.store(true, std::sync::atomic::Ordering::SeqCst);
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
    // Never signal our own process group (SPEC §4.7).
    if pgid > 1 && pgid != me {
        // SAFETY: kill(2) with a negative pid addresses that process group only.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// `/proc/<pid>/cmdline` as one line (at most 200 chars).
pub fn command_line(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut s: String = String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
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
