//! `jobs.idle_timeout`: when a run counts as idle. A run is busy while it prints or
//! uses CPU; an editor, a pager or a prompt waiting on a terminal that will never
//! answer does neither, while a quiet build, a test run or a download that prints
//! nothing for minutes still computes. So the clock is reset by output and by CPU
//! time the run's processes used — measured as the run's cgroup counts it
//! (`cpu.stat`), or else as the sum of its processes' CPU times in `/proc`, sampled
//! at most once a second while the run is quiet.

use crate::process::cgroup::RunGroup;
use crate::process::teardown::Teardown;
use std::time::{Duration, Instant};

/// How often the CPU time is sampled while the run is quiet, at most.
const SAMPLE: Duration = Duration::from_secs(1);
/// CPU time per second of wall time below which a run counts as waiting (1 % of a
/// core: one scheduler tick a second does not keep a run alive, real work does).
const BUSY_SHARE: u32 = 100;

/// The idle clock of one run.
#[derive(Debug)]
pub struct IdleClock {
    limit: Duration,
    last_active: Instant,
    last_sample: Instant,
    cpu: Duration,
}

impl IdleClock {
    pub fn new(limit: Duration) -> IdleClock {
        let now = Instant::now();
        IdleClock {
            limit,
            last_active: now,
            last_sample: now,
            cpu: Duration::ZERO,
        }
    }

    /// The `jobs.idle_timeout` this clock counts to.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The run printed something.
    pub fn printed(&mut self) {
        self.last_active = Instant::now();
    }

    /// Whether the run has neither printed nor used CPU for the limit. `cpu` gives
    /// the run's CPU time so far; it is called at most once per sample interval, and
    /// only once the run has been quiet for one.
    pub fn expired(&mut self, cpu: impl FnOnce() -> Option<Duration>) -> bool {
        let now = Instant::now();
        let interval = SAMPLE.min(self.limit / 2).max(Duration::from_millis(100));
        if now.duration_since(self.last_active) < interval {
            return false;
        }
        let since = now.duration_since(self.last_sample);
        if since >= interval {
            if let Some(used) = cpu() {
                if used.saturating_sub(self.cpu) >= since / BUSY_SHARE {
                    self.last_active = now;
                }
                self.cpu = used;
            }
            self.last_sample = now;
        }
        now.duration_since(self.last_active) >= self.limit
    }
}

/// The CPU time the processes of a run have used so far: its cgroup's, when its
/// leader joined one, else the sum over its live processes (each with the time of
/// the children it has waited for, so short-lived compilers count too).
pub fn cpu_time(teardown: &Teardown<'_>, group: Option<&RunGroup>) -> Option<Duration> {
    if let Some(g) = group.filter(|g| g.joined())
        && let Some(t) = g.cpu_time()
    {
        return Some(t);
    }
    let ticks: u64 = teardown.members().into_iter().filter_map(proc_ticks).sum();
    // SAFETY: sysconf reads a constant of the system; it has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = u64::try_from(per_second).ok().filter(|&t| t > 0)?;
    Some(Duration::from_micros(
        ticks.saturating_mul(1_000_000) / per_second,
    ))
}

/// utime + stime + cutime + cstime of `pid`, in clock ticks.
fn proc_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces and parentheses: state is
    // field 3, utime field 14 .. cstime field 17.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let at = |i: usize| fields.get(i - 3)?.parse::<i64>().ok();
    let sum = at(14)? + at(15)? + at(16)? + at(17)?;
    u64::try_from(sum).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_use_keeps_a_quiet_run_from_idling() {
        let mut clock = IdleClock::new(Duration::from_millis(200));
        let mut used = Duration::ZERO;
        let start = Instant::now();
        // Busy: every sample sees more CPU time than the share.
        while start.elapsed() < Duration::from_millis(600) {
            used += Duration::from_millis(50);
            assert!(!clock.expired(|| Some(used)));
            std::thread::sleep(Duration::from_millis(20));
        }
        // Then it waits: no CPU, no output.
        let quiet = Instant::now();
        while !clock.expired(|| Some(used)) {
            assert!(quiet.elapsed() < Duration::from_secs(5), "never idle");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(quiet.elapsed() >= Duration::from_millis(150));
    }

    #[test]
    fn this_process_has_cpu_time() {
        let me = std::process::id() as i32;
        assert!(proc_ticks(me).is_some());
    }
}
