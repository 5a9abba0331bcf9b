//! The one spawn helper, and process-tree teardown.
//!
//! Every command runs as the leader of a new session (so terminal signals meant for
//! agentbash never reach it directly, and it has no controlling terminal: opening
//! /dev/tty fails at once instead of waiting for input). It dies with agentbash
//! (parent-death signal). agentbash makes itself a child subreaper, so descendants
//! that double-fork or call setsid are reparented to it rather than to init and can
//! still be found and stopped: "no descendant outlives the run" holds for them too.

use super::{KilledProcess, Limits, SpawnSpec};
use std::collections::{HashMap, HashSet};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

static SUBREAPER: Once = Once::new();

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
    cmd.spawn()
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
    Some(Proc {
        pid,
        ppid: f.next()?.parse().ok()?,
        pgrp: f.next()?.parse().ok()?,
        sid: f.next()?.parse().ok()?,
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
                    || (pid == me && !shared_process())
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

    /// Reap members that were reparented to agentbash (we are their subreaper) and
    /// have died, so no zombie outlives the run. The leader is left to its `Child`.
    pub fn reap_orphans(&self) {
        let me = std::process::id() as i32;
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return;
        };
        for pid in rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        {
            if pid == self.leader {
                continue;
            }
            let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(close) = s.rfind(')') else { continue };
            let mut f = s[close + 2..].split_ascii_whitespace();
            let (Some(state), Some(ppid)) = (f.next(), f.next()) else {
                continue;
            };
            let sid = f.nth(1).and_then(|x| x.parse::<i32>().ok());
            if state == "Z"
                && ppid.parse::<i32>().ok() == Some(me)
                && (sid == Some(self.leader) || has_zombie_marker())
            {
                // SAFETY: waitpid on a specific zombie child of ours.
                unsafe {
                    libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
                }
            }
        }
    }
}

/// Zombies have no readable environ, so a zombie orphan of ours outside the
/// leader's session cannot be attributed; in the one-run CLI every orphan is ours.
fn has_zombie_marker() -> bool {
    !crate::exec::process::shared_process()
}

static SHARED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Mark this process as running several commands at once (rpc/mcp), so teardown
/// never reaps an orphan it cannot attribute to its own run.
pub fn set_shared_process() {
    SHARED.store(true, std::sync::atomic::Ordering::SeqCst);
}

pub fn shared_process() -> bool {
    SHARED.load(std::sync::atomic::Ordering::SeqCst)
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
