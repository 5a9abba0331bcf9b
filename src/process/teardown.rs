//! Process-tree teardown: finding every process of a run and stopping it.
//!
//! A tree is frozen before it is signalled, so nothing in it can fork while it is
//! being found and killed: with the run's cgroup (see `cgroup`) by `cgroup.freeze`
//! and ended by `cgroup.kill`; without one, by SIGSTOP to every member the /proc scan
//! finds (`procfs`). agentbash being the subreaper of what its commands leave, the
//! zombies of a run are reaped here too, never a child someone else will wait for
//! (the attribution of children this module keeps, which the spawner feeds).

use super::KilledProcess;
use super::cgroup::{RunGroup, watchdog_pid};
use super::procfs::{
    Proc, all_procs, any_child, arguments, child_pids, command_line, has_marker, is_stopped,
    read_stat, start_time,
};
use super::signals::{signal, signal_group};
use crate::children::helpers as inits;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What this process knows about its children, so that teardown reaps dead orphans
/// (no zombie outlives a run) without ever reaping a child someone else will wait
/// for: a run's leader, a live shell, or, when agentbash is a library, a child the
/// embedding program spawned itself. A zombie's environment is unreadable, so it
/// is attributed by what was recorded while it lived.
#[derive(Default)]
pub(super) struct Attribution {
    /// Children whose `Child` a caller owns, never reaped here: each until that
    /// `Child` reaps it ([`forget_reaped`]; until then its pid cannot be reused).
    owned: Vec<i32>,
    /// (pid, start time) of the inits of commands in a PID namespace of their own,
    /// also never reaped here: they may be reaped off a caller's path (see
    /// `children::reap_later`), so they are told by their start time instead.
    owned_inits: Vec<(i32, u64)>,
    /// Recent run leaders: a zombie in one of their sessions or process groups is an
    /// orphan of a run.
    leaders: VecDeque<i32>,
    /// (pid, start time) of processes seen alive as members of a run.
    seen: VecDeque<(i32, u64)>,
}

const MAX_REMEMBERED: usize = 4096;

static ATTRIBUTION: Mutex<Attribution> = Mutex::new(Attribution {
    owned: Vec::new(),
    owned_inits: Vec::new(),
    leaders: VecDeque::new(),
    seen: VecDeque::new(),
});

/// The registry, locked. Held across a fork, so a fresh child cannot be reaped
/// before it is registered.
pub(super) fn attribution() -> std::sync::MutexGuard<'static, Attribution> {
    ATTRIBUTION.lock().unwrap_or_else(|p| p.into_inner())
}

/// A caller's `Child` reaped `pid`: it is no longer owned (called after the reap, so
/// a teardown never reaps it first and takes its status).
pub(super) fn forget_reaped(pid: i32) {
    attribution().owned.retain(|&p| p != pid);
}

impl Attribution {
    /// Child `pid` leads a run, and a caller's `Child` owns it, or owns init `init`
    /// of its PID namespace.
    pub(super) fn register_leader(&mut self, pid: i32, init: Option<i32>) {
        match init {
            Some(init) => {
                // Forget inits that are gone (reaped) or whose pid is now someone else's.
                self.owned_inits.retain(|&(p, t)| start_time(p) == Some(t));
                self.owned_inits.push((init, start_time(init).unwrap_or(0)));
            }
            None => self.owned.push(pid),
        }
        remember(&mut self.leaders, pid);
    }

    /// Whether child `pid`, started at `started`, is one a caller's `Child` owns.
    pub(super) fn owns(&self, pid: i32, started: u64) -> bool {
        self.owned.contains(&pid) || self.owned_inits.contains(&(pid, started))
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

/// How long one freeze may take before teardown goes on without it (a run group's
/// `cgroup.freeze`, or rounds of SIGSTOP; see [`Teardown::freeze`]).
pub(super) const FREEZE_LIMIT: Duration = Duration::from_millis(500);
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
        let mut roots = Vec::new();
        for pid in child_pids() {
            if spared(pid) || pid == self.leader {
                continue;
            }
            let Some(p) = read_stat(pid) else { continue };
            if attribution().owns(pid, p.started) {
                continue;
            }
            let in_a_group = super::read_kernel_file(format!("/proc/{pid}/cgroup"))
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
            let kids = super::read_kernel_file(format!("/proc/{0}/task/{0}/children", p.pid))
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
        if !any_child() {
            return;
        }
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
        let Ok(s) = super::read_kernel_file(format!("/proc/{pid}/stat")) else {
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
        if a.owns(pid, started) {
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

static SHARED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Mark this process as running several commands at once (rpc/mcp), so teardown
/// never touches a process it cannot attribute to its own run.
pub fn set_shared_process() {
    SHARED.store(true, std::sync::atomic::Ordering::SeqCst);
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
