//! A command waiting for a terminal that print mode does not have.
//!
//! In print mode a command's stdin is the null device and it has no controlling
//! terminal. Most interactive programs notice and end at once (`nano`: "Standard input
//! is not a terminal"; `python3` reads an empty script; opening `/dev/tty` fails). A
//! few wait instead, until the timeout: `vim`, finding no terminal on stdin, makes its
//! stderr — the write end of agentbash's output pipe — its input and polls it for keys
//! that can never come.
//!
//! [`TerminalWait`] watches for that state and nothing else. After [`QUIET`] without
//! output it samples the run's processes from `/proc`, and reports a process once two
//! samples [`SAMPLE_EVERY`] apart agree that: every process of the run is asleep (none
//! running, none in uninterruptible I/O), the run used no CPU time between them, and
//! that process waits in `select` or `poll` on its stdin alone, and its stdin is open
//! write-only — a descriptor nothing will ever make readable. Quiet honest work never
//! looks like that: `sleep` waits in `nanosleep`, a build waiting on the network polls a
//! socket (and its stdin is the null device, opened for reading), a reader of the null
//! device gets end of file at once, a server whose stdin was made write-only still
//! polls its sockets.

use std::time::{Duration, Instant};

/// Silence before the run's processes are looked at: long enough that a command
/// between two bursts of output is not sampled at all, short next to a timeout.
pub const QUIET: Duration = Duration::from_secs(2);
/// Time between the two samples that must agree.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// The short name of a program (its `comm`, at most 15 bytes), kept by value so the
/// way a run ended stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ProgramName {
    bytes: [u8; 16],
    len: u8,
}

impl ProgramName {
    pub fn new(name: &str) -> Self {
        let mut bytes = [0u8; 16];
        let mut len = name.len().min(15);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
        ProgramName {
            bytes,
            len: len as u8,
        }
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("the program")
    }
}

impl std::fmt::Debug for ProgramName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl std::fmt::Display for ProgramName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Watches one run (see the module documentation).
#[derive(Debug)]
pub struct TerminalWait {
    next_sample: Option<Instant>,
    /// The previous sample: the waiting program and the run's CPU ticks then.
    previous: Option<(ProgramName, u64)>,
}

impl Default for TerminalWait {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalWait {
    pub fn new() -> Self {
        TerminalWait {
            next_sample: None,
            previous: None,
        }
    }

    /// Called from a run's watch loop: `last_output` is when the command last printed,
    /// `members` lists the run's processes (called only when a sample is due). The
    /// program that waits for a terminal, once two samples agree.
    pub fn check(
        &mut self,
        now: Instant,
        last_output: Instant,
        members: impl FnOnce() -> Vec<i32>,
    ) -> Option<ProgramName> {
        if now.duration_since(last_output) < QUIET {
            self.previous = None;
            self.next_sample = None;
            return None;
        }
        if self.next_sample.is_some_and(|at| now < at) {
            return None;
        }
        self.next_sample = Some(now + SAMPLE_EVERY);
        let sample = sample(&members());
        let verdict = match (self.previous, sample) {
            (Some((was, cpu_then)), Some((is, cpu_now))) if was == is && cpu_then == cpu_now => {
                Some(is)
            }
            _ => None,
        };
        self.previous = sample;
        verdict
    }

    /// How long until the next sample is due (for a loop's poll timeout), if one is
    /// pending.
    pub fn due_in(&self, now: Instant) -> Option<Duration> {
        self.next_sample.map(|at| at.saturating_duration_since(now))
    }
}

/// One look at `pids`: the program waiting for a terminal and the run's CPU ticks,
/// when every process is asleep and one of them waits that way.
fn sample(pids: &[i32]) -> Option<(ProgramName, u64)> {
    let mut cpu = 0u64;
    let mut waiting = None;
    for &pid in pids {
        let Some(stat) = Stat::read(pid) else {
            continue;
        };
        match stat.state {
            // Asleep, idle, or already gone.
            'S' | 'I' | 'Z' | 'X' => {}
            _ => return None,
        }
        cpu += stat.cpu_ticks;
        if waiting.is_none() && stat.state == 'S' && waits_on_unreadable_stdin(pid) {
            waiting = Some(ProgramName::new(&stat.comm));
        }
    }
    waiting.map(|name| (name, cpu))
}

struct Stat {
    comm: String,
    state: char,
    cpu_ticks: u64,
}

impl Stat {
    fn read(pid: i32) -> Option<Stat> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // "pid (comm) state ppid …": comm may hold spaces and ')'.
        let open = s.find('(')?;
        let close = s.rfind(')')?;
        let comm = s.get(open + 1..close)?.to_string();
        let mut f = s.get(close + 2..)?.split_ascii_whitespace();
        let state = f.next()?.chars().next()?;
        // utime and stime are fields 14 and 15 (state is field 3).
        let mut f = f.skip(10);
        let utime: u64 = f.next()?.parse().ok()?;
        let stime: u64 = f.next()?.parse().ok()?;
        Some(Stat {
            comm,
            state,
            cpu_ticks: utime + stime,
        })
    }
}

/// Whether `pid` waits for input on a stdin it opened write-only: its fd 0 has
/// `O_WRONLY`, and its main thread sleeps in a `select` or `poll` on fd 0 alone.
fn waits_on_unreadable_stdin(pid: i32) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/0")) else {
        return false;
    };
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok());
    if flags.is_none_or(|f| f & libc::O_ACCMODE as u32 != libc::O_WRONLY as u32) {
        return false;
    }
    polls_stdin_alone(pid)
}

/// The main thread sleeps in `select`/`pselect6` with `nfds` 1 (only fd 0 can be in
/// its sets), or in `poll`/`ppoll` on one descriptor that is fd 0 (read from the
/// process's memory, which a parent may read). Anything else — `epoll`, several
/// descriptors, a call that cannot be read — is not taken for a wait on stdin.
fn polls_stdin_alone(pid: i32) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/syscall")) else {
        return false;
    };
    let mut fields = s.split_ascii_whitespace();
    let Some(nr) = fields.next().and_then(|n| n.parse::<i64>().ok()) else {
        return false;
    };
    let args: Vec<u64> = fields
        .take(2)
        .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .collect();
    let [first, second] = args[..] else {
        return false;
    };
    if SELECT.contains(&nr) {
        return first == 1;
    }
    if POLL.contains(&nr) && second == 1 {
        return first_pollfd_is_stdin(pid, first);
    }
    false
}

/// Whether the `struct pollfd` at `address` in `pid`'s memory names fd 0.
fn first_pollfd_is_stdin(pid: i32, address: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut mem) = std::fs::File::open(format!("/proc/{pid}/mem")) else {
        return false;
    };
    let mut fd = [0u8; 4];
    mem.seek(SeekFrom::Start(address)).is_ok()
        && mem.read_exact(&mut fd).is_ok()
        && i32::from_ne_bytes(fd) == 0
}

#[cfg(target_arch = "x86_64")]
const SELECT: &[i64] = &[libc::SYS_select, libc::SYS_pselect6];
#[cfg(not(target_arch = "x86_64"))]
const SELECT: &[i64] = &[libc::SYS_pselect6];
#[cfg(target_arch = "x86_64")]
const POLL: &[i64] = &[libc::SYS_poll, libc::SYS_ppoll];
#[cfg(not(target_arch = "x86_64"))]
const POLL: &[i64] = &[libc::SYS_ppoll];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_names_are_cut_to_what_comm_holds() {
        assert_eq!(ProgramName::new("vim").as_str(), "vim");
        assert_eq!(
            ProgramName::new("a-very-long-program-name").as_str(),
            "a-very-long-pro"
        );
        assert_eq!(ProgramName::new("ééééééééé").as_str(), "ééééééé");
    }
}
