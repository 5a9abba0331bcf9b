//! One command in a live shell, from the moment its frame is written to its end: the
//! wait for its end marker (or the shell's death, or a reason to stop it), the drain,
//! and what it left running. A struct holds the run's state so that each step is a
//! method of its own.

use crate::config::profile::Background;
use crate::executor::print::exit_to_end;
use crate::executor::terminal_wait::TerminalWait;
use crate::executor::{DRAIN_IDLE, DRAIN_TOTAL, EVENT_INTERVAL, End, poll_fds};
use crate::output::sink::OutputSink;
use crate::process::KilledProcess;
use crate::process::cgroup::RunGroup;
use crate::process::spawn;
use crate::process::teardown::Teardown;
use std::collections::HashSet;
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::LiveJob;
use super::READ_BUF;
use super::scanner::{Marker, Scanner, read_available};
use super::shell::{LiveShell, describe_status};

/// How the wait for a command's end came out.
pub(super) enum Watched {
    /// Its end marker was read.
    Marked,
    /// The shell itself exited, with this status.
    ShellExited(std::process::ExitStatus),
    /// It was stopped (timeout, cancel, idle, a terminal wanted); these were killed.
    Stopped(End, Vec<KilledProcess>),
}

/// One command's run: the shell it runs in, where its output goes, and what the loop
/// has seen so far.
pub(super) struct LiveRun<'a, 'j, 'g, 'o> {
    shell: &'a mut LiveShell,
    buf: &'a mut [u8],
    job: &'a LiveJob<'j>,
    sink: &'a mut OutputSink,
    on_output: &'a mut (dyn FnMut(&str) + 'o),
    pool_pids: &'a Mutex<HashSet<i32>>,
    group: Option<&'g RunGroup>,
    teardown: Teardown<'g>,
    scan: Scanner,
    /// What command `seq` starts carries this marker (non-session subshells).
    command_marker: String,
    start: Instant,
    deadline: Instant,
    last_emit: Instant,
}

/// The result of one command: (end, background killed, shell still usable).
pub(super) type RunResult = (End, Vec<KilledProcess>, bool);

impl<'a, 'j, 'g, 'o> LiveRun<'a, 'j, 'g, 'o> {
    /// The run of command `seq`, whose frame the shell was just sent.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        shell: &'a mut LiveShell,
        buf: &'a mut [u8],
        job: &'a LiveJob<'j>,
        sink: &'a mut OutputSink,
        on_output: &'a mut (dyn FnMut(&str) + 'o),
        pool_pids: &'a Mutex<HashSet<i32>>,
        group: Option<&'g RunGroup>,
        seq: u64,
    ) -> Self {
        let command_marker = format!("{}.{seq}", shell.marker);
        let teardown = Teardown::new(shell.pid, &shell.marker).in_group(group);
        let scan = Scanner::new(&shell.token, seq);
        let start = Instant::now();
        LiveRun {
            shell,
            buf,
            job,
            sink,
            on_output,
            pool_pids,
            group,
            teardown,
            scan,
            command_marker,
            start,
            deadline: start + job.watch.timeout,
            last_emit: start - EVENT_INTERVAL,
        }
    }

    /// Send the live text when it is due (at once with `force`).
    fn emit(&mut self, force: bool) {
        let now = Instant::now();
        if self.sink.has_pending()
            && (force
                || self.sink.pending_full()
                || now.duration_since(self.last_emit) >= EVENT_INTERVAL)
        {
            if let Some(t) = self.sink.take_pending() {
                (self.on_output)(&t);
            }
            self.last_emit = now;
        }
    }

    /// Read up to `budget` bytes of what is available through the scanner. Returns
    /// (bytes, eof).
    fn read(&mut self, budget: usize) -> (usize, bool) {
        let (scan, sink) = (&mut self.scan, &mut *self.sink);
        read_available(self.shell.out.as_fd(), self.buf, budget, |d| {
            scan.feed(d, sink)
        })
    }

    /// Wait until the command's end is marked, the shell exits, or the command must
    /// be stopped (and is).
    pub(super) fn watch(&mut self) -> Watched {
        let mut found_at = None;
        let mut idle = self
            .job
            .watch
            .idle
            .map(crate::executor::idle::IdleClock::new);
        let mut last_output = self.start;
        let mut terminal_wait = TerminalWait::new();
        loop {
            self.emit(false);
            let now = Instant::now();
            if let Some(m) = self.scan.found {
                // A subshell's end (`s`) comes before the shell's `c`, and the command
                // may have killed the shell itself (`kill $$`): wait for one or the
                // other, so that this run, not the next, reports how the shell ended.
                let at = *found_at.get_or_insert(now);
                if m.kind != b's'
                    || self.job.key.session.is_some()
                    || self.scan.subshell_done
                    || now.duration_since(at) >= DRAIN_IDLE
                {
                    return Watched::Marked;
                }
            }
            if let Ok(Some(s)) = self.shell.child.try_wait() {
                return Watched::ShellExited(s);
            }
            let (teardown, group) = (&self.teardown, self.group);
            let reason = match self.job.watch.cancel.reason() {
                _ if self.scan.found.is_some() => None,
                Some(sig) => Some(End::Cancelled(sig)),
                None if now >= self.deadline => Some(End::TimedOut),
                None => idle
                    .as_mut()
                    .and_then(|clock| {
                        clock
                            .expired(|| crate::executor::idle::cpu_time(teardown, group))
                            .then(|| End::Idle(clock.limit().as_secs()))
                    })
                    .or_else(|| {
                        terminal_wait
                            .check(now, last_output, || teardown.members())
                            .map(End::NeedsTerminal)
                    }),
            };
            if let Some(end) = reason {
                let killed = self.stop();
                return Watched::Stopped(end, killed);
            }
            let mut wait = self
                .deadline
                .saturating_duration_since(now)
                .min(EVENT_INTERVAL);
            if self.sink.has_pending() {
                wait = wait.min(EVENT_INTERVAL.saturating_sub(now.duration_since(self.last_emit)));
            }
            poll_fds(
                &[
                    Some(self.shell.out.as_fd()),
                    self.shell.pidfd.as_ref().map(|f| f.as_fd()),
                ],
                wait,
            );
            let budget = if self.sink.pending_full() {
                0
            } else {
                8 * READ_BUF
            };
            let got = self.read(budget).0 > 0;
            if got {
                last_output = Instant::now();
            }
            if got && let Some(clock) = idle.as_mut() {
                clock.printed();
            }
        }
    }

    /// Tear down the shell's tree (reading while it winds down); the shell is dead.
    fn stop(&mut self) -> Vec<KilledProcess> {
        let grace = self.job.watch.kill_grace;
        let teardown = &self.teardown;
        let fd = self.shell.out.as_fd();
        let (buf, scan, sink) = (&mut *self.buf, &mut self.scan, &mut *self.sink);
        let mut killed = std::thread::scope(|s| {
            let h = s.spawn(|| teardown.terminate_run(grace));
            while !h.is_finished() {
                poll_fds(&[Some(fd)], Duration::from_millis(10));
                read_available(fd, &mut *buf, 8 * READ_BUF, |d| scan.feed(d, sink));
            }
            h.join().unwrap_or_default()
        });
        if self.job.key.session.is_none() && !teardown.grouped() {
            // Whatever left the shell's session still carries the command's marker.
            killed.extend(Teardown::new(-1, &self.command_marker).terminate(grace, false));
        }
        killed.retain(|k| k.pid != self.shell.pid);
        self.shell.name_subshells(&mut killed);
        let _ = self.shell.child.wait();
        self.shell.dead = true;
        killed
    }

    /// A stopped command's end: the output held back sent, the tree reaped.
    pub(super) fn stopped(mut self, end: End, killed: Vec<KilledProcess>) -> RunResult {
        self.scan.flush(self.sink);
        self.emit(true);
        self.teardown.reap_orphans();
        (end, killed, false)
    }

    /// The shell died during the command: take what it printed (its EXIT trap may
    /// still have written the sentinel), as print mode drains a dead shell. Without
    /// the marker, the shell's end is the command's, and the run ends here.
    pub(super) fn shell_died(&mut self, s: std::process::ExitStatus) -> Option<RunResult> {
        self.shell.dead = true;
        let at = Instant::now();
        let mut last_output = at;
        loop {
            let (n, eof) = self.read(8 * READ_BUF);
            let now = Instant::now();
            if n > 0 {
                last_output = now;
            }
            if eof
                || now.duration_since(last_output) >= DRAIN_IDLE
                || now.duration_since(at) >= DRAIN_TOTAL
            {
                break;
            }
            poll_fds(&[Some(self.shell.out.as_fd())], Duration::from_millis(10));
        }
        if self.scan.found.is_some() {
            return None;
        }
        self.scan.flush(self.sink);
        self.emit(true);
        let mut bg = Vec::new();
        if self.job.watch.background == Background::Kill {
            bg = self.teardown.terminate(self.job.watch.kill_grace, false);
            self.shell.name_subshells(&mut bg);
        }
        self.teardown.reap_orphans();
        self.shell.ended = Some(describe_status(s));
        Some((exit_to_end(s), bg, false))
    }

    /// The marked end: what the command left running dealt with, and the command's
    /// (or the shell's) end. `exit_status` is the shell's, when it exited.
    pub(super) fn conclude(mut self, exit_status: Option<std::process::ExitStatus>) -> RunResult {
        let mut found = self.scan.found.unwrap_or(Marker {
            kind: b's',
            status: None,
            pid: None,
        });
        if self.shell.child.init_pid().is_some() {
            // In the sandbox's PID namespace the shell numbers its subshell its own way.
            let pid = self.shell.pid;
            found.pid = found
                .pid
                .and_then(|inner| spawn::host_pid_of_child(pid, inner));
        }
        let background_killed = self.leftovers(found);
        self.emit(true);
        let shell = &mut *self.shell;
        shell.unchanged = found.kind == b'u';
        let mut shell_status = exit_status;
        if found.kind == b'x' || shell.dead {
            // `exit N` in a session: the shell is on its way out; let it go.
            shell_status = shell_status.or_else(|| shell.child.wait().ok());
            shell.dead = true;
        }
        let code = found.status;
        let mut end = match code {
            Some(c) => End::Exited(c),
            None => End::MissingStatus,
        };
        // The command killed the shell it ran in (`kill -TERM $$`): the shell's end
        // is the command's, as when the shell is spawned for one command. A session's
        // `exit N` is an ordinary end, already in the marker.
        if let Some(s) = shell_status {
            let shell_end = exit_to_end(s);
            if exit_status.is_some() || matches!(shell_end, End::Signaled(_)) {
                end = shell_end;
                shell.ended = Some(describe_status(s));
            }
        }
        (end, background_killed, !shell.dead)
    }

    /// Anything the command left running? (A cheap look first: the full scan only
    /// when something may be there — background jobs, or orphans handed to us.)
    /// Returns what was killed (`background = "kill"`).
    fn leftovers(&mut self, found: Marker) -> Vec<KilledProcess> {
        let job = self.job;
        let mut background_killed = Vec::new();
        let by_marker = Teardown::new(found.pid.unwrap_or(-1), &self.command_marker);
        // The subshell that ran the command may still be on its way out.
        let spare = [Some(self.shell.pid), found.pid];
        // The shell's group, when the shell is in it (`LiveShell::joined_group`).
        if let Some(g) = self.group.filter(|g| g.joined()) {
            // Membership answers it: the shell's group holds the shell, maybe the
            // exiting subshell, and whatever the command left, however it got there.
            // (Members include processes of the command that left the group.)
            let left = !Teardown::new(self.shell.pid, &self.command_marker)
                .in_group(Some(g))
                .sparing(spare.into_iter().flatten())
                .members()
                .is_empty();
            if left && job.watch.background == Background::Kill {
                background_killed = Teardown::new(self.shell.pid, &self.command_marker)
                    .in_group(Some(g))
                    .sparing(spare.into_iter().flatten())
                    .terminate(job.watch.kill_grace, false);
                if !background_killed.is_empty() {
                    self.read(8 * READ_BUF);
                }
            } else if left {
                // Kept running: no longer this shell's, nor the next command's. Seen
                // as members first, so that they are reaped once they exit.
                let _ = Teardown::new(self.shell.pid, &self.command_marker)
                    .in_group(Some(g))
                    .sparing(spare.into_iter().flatten())
                    .members();
                g.release(&[self.shell.pid]);
            }
            self.teardown.reap_orphans();
        }
        let (suspect, by_marker_scope) = match job.key.session {
            _ if self.shell.joined_group().is_some() => (false, false),
            // Background jobs are the shell's own children.
            Some(_) => (self.shell.maybe_has_others(self.pool_pids), false),
            // A plain program run in the shell itself: whatever it left is a child
            // of the shell, an orphan handed to us, or carries its marker.
            None if found.kind == b'u' => (self.shell.maybe_has_others(self.pool_pids), true),
            // They were started by the command's subshell and carry its marker.
            None => (
                self.shell.subshell_may_have_left(found.pid, self.pool_pids),
                true,
            ),
        };
        if suspect {
            if job.watch.background == Background::Kill {
                background_killed = match job.key.session {
                    Some(_) if !self.teardown.others().is_empty() => {
                        self.teardown.terminate(job.watch.kill_grace, false)
                    }
                    Some(_) => Vec::new(),
                    None => self.shell.stop_leftovers(
                        found.pid,
                        &self.command_marker,
                        job.watch.kill_grace,
                    ),
                };
                if !background_killed.is_empty() {
                    self.read(8 * READ_BUF);
                }
            }
            // Reap what died, and note what is kept running (background = "keep") so
            // that it is reaped in turn once it exits: no zombie outlives its run.
            let scope = if by_marker_scope {
                &by_marker
            } else {
                &self.teardown
            };
            scope.reap_orphans();
            self.teardown.reap_orphans();
        }
        self.shell.name_subshells(&mut background_killed);
        background_killed
    }
}
