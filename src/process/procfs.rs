//! What agentbash reads of /proc about processes: a process's state, parent, group,
//! session and start time, its children, its run marker and command line. Files the
//! kernel formats on every read, each read whole in one go (`read_kernel_file`);
//! teardown finds a run's members with these where no cgroup lists them.

use super::cgroup::watchdog_pid;

/// Field 22 of /proc/<pid>/stat: when the process started (also readable for zombies).
/// With the pid it names one process for good: a pid reused later starts later.
pub fn start_time(pid: i32) -> Option<u64> {
    let s = super::read_kernel_file(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// True when this process has any live or zombie child (any thread's) other than
/// the watchdog.
pub fn has_children() -> bool {
    if !any_child() {
        return false;
    }
    let Ok(rd) = std::fs::read_dir("/proc/self/task") else {
        return true;
    };
    let watchdog = watchdog_pid();
    for t in rd.flatten() {
        match super::read_kernel_file(t.path().join("children")) {
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

/// True when this process has any child at all, live or zombie, of any thread (the
/// watchdog and agentbash's helpers included): one `waitid` that reaps nothing. With
/// none, nothing of a run can be left (what a run leaves running is reparented to us,
/// the subreaper), and the /proc and cgroup reads that would look for it are skipped.
pub fn any_child() -> bool {
    // SAFETY: waitid into a zeroed siginfo on the stack; WNOWAIT leaves a child that
    // ended to whoever waits for it, WNOHANG never blocks.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED
                | libc::WSTOPPED
                | libc::WCONTINUED
                | libc::WNOHANG
                | libc::WNOWAIT
                | libc::__WALL,
        );
        !(r < 0 && *libc::__errno_location() == libc::ECHILD)
    }
}

/// Every thread of `pid` is stopped, or the process is dead or gone.
pub(super) fn is_stopped(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks.flatten().all(|t| {
        let Ok(s) = super::read_kernel_file(t.path().join("stat")) else {
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
pub(super) struct Proc {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
    pub(super) sid: i32,
    pub(super) started: u64,
}

pub(super) fn read_stat(pid: i32) -> Option<Proc> {
    let s = super::read_kernel_file(format!("/proc/{pid}/stat")).ok()?;
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

pub(super) fn all_procs() -> Vec<Proc> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

pub(super) fn has_marker(pid: i32, marker: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|kv| kv == marker))
        .unwrap_or(false)
}

/// Children of this process (every thread's), from /proc; all of /proc when the
/// per-thread lists are unavailable (the caller filters by parent).
pub(super) fn child_pids() -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return all_pids();
    };
    for t in tasks.flatten() {
        match super::read_kernel_file(t.path().join("children")) {
            Ok(c) => out.extend(
                c.split_ascii_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            ),
            Err(_) => return all_pids(),
        }
    }
    out
}

pub(super) fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `/proc/<pid>/cmdline` as one line (at most 200 chars); the process name in
/// brackets when it has no arguments.
pub fn command_line(pid: i32) -> String {
    let mut s = arguments(pid);
    if s.is_empty() {
        s = super::read_kernel_file(format!("/proc/{pid}/comm"))
            .map(|c| format!("[{}]", c.trim()))
            .unwrap_or_default();
    }
    if s.chars().count() > 200 {
        s = s.chars().take(199).collect::<String>() + "…";
    }
    s
}

/// `/proc/<pid>/cmdline`, its arguments joined by spaces.
pub(super) fn arguments(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
