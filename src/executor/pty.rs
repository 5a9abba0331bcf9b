//! PTY mode: run one command inside a pseudo-terminal.
//!
//! Some programs only behave when they see a terminal (`sudo`, `ssh`, REPLs,
//! progress UIs, test runners that check `isatty`). This module runs the
//! command in a PTY, started by the one spawner (`process::spawn_on_tty`) as in
//! print mode (its own session and cgroup, `[limits]`, parent-death signal), the
//! PTY its controlling terminal, and has two faces that share one single-threaded
//! `poll(2)` loop:
//!
//! * **headless** — the PTY has the profile's size, the raw output goes to the
//!   caller (who sanitizes it), and agentbash's stdin is optionally fed in;
//! * **interactive** — the outer terminal goes raw, the command's screen (kept
//!   by a `vt100` parser) is drawn in a bordered viewport below the cursor and
//!   keys are forwarded; the kill key ends the run.
//!
//! Either way the loop answers the terminal queries programs block on (cursor
//! position, device attributes, status), enforces the deadline and the
//! cancellation token, tears the whole PTY session down when it has to, and
//! never waits for a background job that keeps the PTY open.
//!
//! The loop wakes at least every 20 ms, so cancellation from signal handlers
//! and the outer terminal's size are polled rather than delivered: this module
//! installs no signal handlers (the caller owns signals). It does install a
//! panic hook, once per process, that restores the outer terminal.

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::num::NonZeroU16;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::sys::termios::{
    LocalFlags, SetArg, SpecialCharacterIndices, Termios, cfmakeraw, tcgetattr, tcsetattr,
};
use nix::unistd::{Pid, isatty};
use unicode_width::UnicodeWidthChar;

use super::{DRAIN_IDLE, DRAIN_TOTAL, EVENT_INTERVAL};
use crate::config::kill_key::{KillKey, KillKeyError};
use crate::process::cgroup::RunGroup;
use crate::process::spawn::{self, Child};
use crate::process::{CancelToken, KilledProcess, SpawnSpec};

/// Largest single read from the master; big reads keep syscalls per byte low.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per wake-up before the deadline and the token are looked at again.
const READS_PER_WAKE: usize = 64;
/// Longest sleep of the loop: cancellation is noticed within this.
const TICK: Duration = Duration::from_millis(20);
/// Minimum time between two frames (~60 fps).
const FRAME_INTERVAL: Duration = Duration::from_millis(16);
/// A lone ESC is the Esc key only if nothing follows it within this time.
const ESC_TIMEOUT: Duration = Duration::from_millis(50);
/// Input waiting for the PTY beyond which agentbash's stdin is not read.
const MAX_PENDING_INPUT: usize = 64 * 1024;
/// How long teardown waits to reap the killed leader before a thread takes over.
const REAP_WAIT: Duration = Duration::from_millis(500);

const ESC: u8 = 0x1b;

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

/// One PTY run.
pub struct PtyRequest<'a> {
    pub spawn: &'a SpawnSpec,
    /// Headless PTY size (`pty.cols`/`pty.rows`); interactive runs size the
    /// PTY from the outer terminal instead.
    pub cols: u16,
    pub rows: u16,
    /// Draw the viewport and forward keys; stdin and stdout must be terminals.
    pub interactive: bool,
    /// Shown in the viewport header: `Console <title> [running]`.
    pub title: &'a str,
    pub kill_key: KillKey,
    /// Headless only: copy agentbash's stdin into the PTY, then send EOF.
    pub feed_stdin: bool,
    pub deadline: Instant,
    /// Headless only (`jobs.idle_timeout`): stop a command that has printed nothing
    /// for this long. An interactive run has a person at the keys; it is theirs to end.
    pub idle: Option<Duration>,
    pub kill_grace: Duration,
    pub cancel: &'a CancelToken,
    /// The run's cgroup: the command is started in it, and teardown ends it.
    pub group: Option<&'a RunGroup>,
}

/// How a PTY run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtyEnd {
    Exited(i32),
    /// The command died of this signal.
    Signaled(i32),
    TimedOut,
    /// Nothing printed for this many seconds (headless, `jobs.idle_timeout`).
    Idle(u64),
    /// The cancellation token was set with this signal.
    Cancelled(i32),
    /// The interactive kill key was pressed.
    KillKey,
    /// `on_output` wanted no more (a lifted `| head -n N` was filled): the command
    /// was stopped as `| head` would stop it.
    OutputDone,
}

/// The result of a PTY run.
#[derive(Debug)]
pub struct PtyOutcome {
    pub end: PtyEnd,
    /// Processes teardown had to signal (timeout, cancel, kill key).
    pub killed: Vec<KilledProcess>,
    /// The command's pid, which is also its session and process-group id: a
    /// background job that outlived a normal exit can be found by it.
    pub leader_pid: i32,
}

/// A PTY failure; `Display` is the text after `PTY error: ` (exit 125).
#[derive(thiserror::Error, Debug)]
pub enum PtyError {
    #[error("working directory {} does not exist or is not a directory", .0.display())]
    Cwd(std::path::PathBuf),
    #[error("could not open a pseudo-terminal: {0}")]
    Open(String),
    #[error("could not start {program} in the pseudo-terminal: {message}")]
    Spawn { program: String, message: String },
    #[error(
        "the interactive viewport needs stdin and stdout to be a terminal ({0}); run headless instead"
    )]
    NotATerminal(io::Error),
    #[error("could not switch the terminal to raw mode: {0}")]
    RawMode(io::Error),
    #[error("{what} failed: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
    #[error("could not read the exit status of process {pid}: {source}")]
    Wait { pid: i32, source: io::Error },
}

fn io_error(what: &'static str) -> impl FnOnce(Errno) -> PtyError {
    move |errno| PtyError::Io {
        what,
        source: io::Error::from(errno),
    }
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

/// Runs `req.spawn` in a PTY until it exits, times out, is cancelled or is
/// killed with the kill key. `on_output` receives the raw bytes the program
/// writes, in order, in large chunks, and returns false once it wants no more.
pub fn run_pty(
    req: PtyRequest<'_>,
    on_output: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<PtyOutcome, PtyError> {
    let mut console = if req.interactive {
        install_panic_hook();
        Some(Console::enter(req.title, req.kill_key)?)
    } else {
        None
    };
    let (rows, cols) = match &console {
        Some(console) => console.inner_size(),
        None => (req.rows.max(1), req.cols.max(1)),
    };
    let pty = match Pty::spawn(req.spawn, req.group, rows, cols) {
        Ok(pty) => pty,
        Err(error) => {
            // The viewport is already up: leave it saying so, not "running".
            if let Some(console) = &mut console {
                console.finish("failed");
            }
            return Err(error);
        }
    };
    let mut run = Run {
        req: &req,
        on_output,
        keys: KeyInput::new(req.kill_key),
        queries: QueryScanner::default(),
        hits: Vec::new(),
        estimate: CursorEstimate::new(rows, cols),
        to_child: Vec::new(),
        to_child_sent: 0,
        buf: vec![0; READ_CHUNK],
        master_open: true,
        stdin_open: req.interactive || req.feed_stdin,
        last_fed: None,
        bytes_out: 0,
        last_output: Instant::now(),
        idle: req
            .idle
            .filter(|_| !req.interactive)
            .map(super::idle::IdleClock::new),
        output_done: false,
        started: Instant::now(),
        watchdog_due: req.group.is_some_and(RunGroup::joined),
        pty,
        console,
    };
    // Headless with nothing to feed: nothing is typed into the terminal. A program
    // that reads it waits, as at a terminal nobody types into, until the timeout
    // or `jobs.idle_timeout` ends it; it never gets an end of input it did not ask for.
    run.execute()
}

/// Why the main phase of the loop stopped.
enum Stop {
    Exited(PtyEnd),
    TimedOut,
    Idle(u64),
    Cancelled(i32),
    KillKey,
    OutputDone,
}

struct Run<'r, 'o> {
    req: &'r PtyRequest<'r>,
    on_output: &'o mut dyn FnMut(&[u8]) -> bool,
    /// `on_output` returned false.
    output_done: bool,
    pty: Pty,
    console: Option<Console>,
    keys: KeyInput,
    queries: QueryScanner,
    /// Queries found in the current chunk: (offset just past it, query).
    hits: Vec<(usize, Query)>,
    /// Headless cursor model for position reports (interactive uses vt100).
    estimate: CursorEstimate,
    /// Bytes for the PTY (keys, fed stdin, query answers) not yet written.
    to_child: Vec<u8>,
    to_child_sent: usize,
    buf: Vec<u8>,
    master_open: bool,
    stdin_open: bool,
    last_fed: Option<u8>,
    /// Total output bytes, so the drain can tell whether anything arrived.
    bytes_out: u64,
    last_output: Instant,
    /// Headless `jobs.idle_timeout`: quiet means neither printing nor using CPU.
    idle: Option<super::idle::IdleClock>,
    started: Instant,
    /// The cgroup watchdog is yet to be started (see `cgroup::ensure_watchdog`).
    watchdog_due: bool,
}

impl Run<'_, '_> {
    fn execute(&mut self) -> Result<PtyOutcome, PtyError> {
        let stop = match self.pump() {
            Ok(stop) => stop,
            Err(error) => {
                self.teardown();
                if let Some(console) = &mut self.console {
                    console.finish("failed");
                }
                return Err(error);
            }
        };
        let cancelled_before_drain = self.req.cancel.reason().is_some();
        let (end, killed) = match stop {
            Stop::Exited(end) => (end, Vec::new()),
            Stop::TimedOut => (PtyEnd::TimedOut, self.teardown()),
            Stop::Idle(secs) => (PtyEnd::Idle(secs), self.teardown()),
            Stop::Cancelled(signal) => (PtyEnd::Cancelled(signal), self.teardown()),
            Stop::KillKey => (PtyEnd::KillKey, self.teardown()),
            // What the stop kills is the pipeline itself, not something left behind.
            Stop::OutputDone => {
                self.teardown();
                (PtyEnd::OutputDone, Vec::new())
            }
        };
        self.drain(cancelled_before_drain);
        if let Some(console) = &mut self.console {
            console.finish(&end_label(end));
        }
        Ok(PtyOutcome {
            end,
            killed,
            leader_pid: self.pty.leader,
        })
    }

    /// The main phase: until the command exits or the run must be stopped.
    fn pump(&mut self) -> Result<Stop, PtyError> {
        let mut next_size_check = Instant::now();
        loop {
            if let Some(signal) = self.req.cancel.reason() {
                return Ok(Stop::Cancelled(signal));
            }
            let now = Instant::now();
            if now >= self.req.deadline {
                return Ok(Stop::TimedOut);
            }
            let (leader, group, spec) = (self.pty.leader, self.req.group, self.req.spawn);
            if let Some(clock) = self.idle.as_mut()
                && clock.expired(|| {
                    let teardown =
                        crate::process::teardown::Teardown::new(leader, &run_marker(spec))
                            .in_group(group);
                    super::idle::cpu_time(&teardown, group)
                })
            {
                return Ok(Stop::Idle(clock.limit().as_secs()));
            }
            if self.watchdog_due
                && now.duration_since(self.started) >= crate::process::cgroup::WATCHDOG_AFTER
            {
                crate::process::cgroup::ensure_watchdog();
                self.watchdog_due = false;
            }
            if let Some(end) = self.try_reap()? {
                return Ok(Stop::Exited(end));
            }
            let mut wait = TICK.min(self.req.deadline - now);
            if let Some(console) = &mut self.console {
                if now >= next_size_check {
                    if let Some((rows, cols)) = console.follow_resize() {
                        self.pty.resize(rows, cols);
                    }
                    next_size_check = now + TICK;
                }
                let app_cursor = console.parser.screen().application_cursor();
                if self.keys.expire(now, app_cursor, &mut self.to_child) {
                    return Ok(Stop::KillKey);
                }
                console.draw_if_due(now);
                for due in [console.next_frame(), self.keys.deadline()]
                    .into_iter()
                    .flatten()
                {
                    wait = wait.min(due.saturating_duration_since(now));
                }
            }
            if self.poll_once(wait, true)? {
                return Ok(Stop::KillKey);
            }
            if self.output_done {
                return Ok(Stop::OutputDone);
            }
        }
    }

    /// Waits up to `wait` for the master (and, if `with_input`, stdin) and
    /// handles what is ready. Returns true when the kill key was pressed.
    fn poll_once(&mut self, wait: Duration, with_input: bool) -> Result<bool, PtyError> {
        let read_stdin = with_input
            && self.stdin_open
            && self.to_child.len() - self.to_child_sent < MAX_PENDING_INPUT;
        let (master_events, stdin_events) = {
            let stdin = io::stdin();
            let mut master_interest = PollFlags::POLLIN;
            if self.to_child_sent < self.to_child.len() {
                master_interest |= PollFlags::POLLOUT;
            }
            // Both slots always exist (no allocation per wake-up); the slice
            // picks the ones in use.
            let mut fds = [
                PollFd::new(self.pty.fd(), master_interest),
                PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
            ];
            let in_use = match (self.master_open, read_stdin) {
                (true, true) => 0..2,
                (true, false) => 0..1,
                (false, true) => 1..2,
                (false, false) => {
                    std::thread::sleep(wait);
                    return Ok(false);
                }
            };
            match poll(&mut fds[in_use.clone()], poll_timeout(wait)) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(errno) => return Err(io_error("waiting for the pseudo-terminal")(errno)),
            }
            let revents = |index: usize| {
                in_use
                    .contains(&index)
                    .then(|| fds[index].revents())
                    .flatten()
                    .unwrap_or_else(PollFlags::empty)
            };
            (revents(0), revents(1))
        };
        let ready = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
        if master_events.intersects(ready) {
            self.read_master()?;
        }
        if master_events.contains(PollFlags::POLLOUT) {
            self.flush_to_child();
        }
        // POLLNVAL: stdin is closed; reading it reports that as end of input.
        if stdin_events.intersects(ready | PollFlags::POLLNVAL) && self.read_stdin() {
            return Ok(true);
        }
        Ok(false)
    }

    /// Reads what the master has (a bounded number of chunks).
    fn read_master(&mut self) -> Result<(), PtyError> {
        let mut buf = std::mem::take(&mut self.buf);
        let mut result = Ok(());
        for _ in 0..READS_PER_WAKE {
            match nix::unistd::read(self.pty.fd(), &mut buf) {
                Ok(0) | Err(Errno::EIO) => {
                    // EIO: every slave descriptor is closed; that is the PTY's EOF.
                    self.master_open = false;
                    break;
                }
                Ok(n) => self.handle_output(&buf[..n]),
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(errno) => {
                    self.master_open = false;
                    result = Err(io_error("reading from the pseudo-terminal")(errno));
                    break;
                }
            }
        }
        self.buf = buf;
        self.flush_to_child();
        result
    }

    fn handle_output(&mut self, chunk: &[u8]) {
        self.bytes_out += chunk.len() as u64;
        self.last_output = Instant::now();
        if let Some(clock) = self.idle.as_mut() {
            clock.printed();
        }
        if !(self.on_output)(chunk) {
            self.output_done = true;
        }
        self.hits.clear();
        self.queries.scan(chunk, &mut self.hits);
        let mut start = 0;
        for index in 0..self.hits.len() {
            let (end, query) = self.hits[index];
            // The answer must describe the screen as it was at the query.
            self.track(&chunk[start..end]);
            self.answer(query);
            start = end;
        }
        self.track(&chunk[start..]);
    }

    fn track(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match &mut self.console {
            Some(console) => console.process(bytes),
            None => self.estimate.feed(bytes),
        }
    }

    fn answer(&mut self, query: Query) {
        // Writing into a Vec cannot fail.
        let _ = match query {
            Query::CursorPosition => {
                let (row, col) = match &self.console {
                    Some(console) => console.parser.screen().cursor_position(),
                    None => self.estimate.position(),
                };
                write!(self.to_child, "\x1b[{};{}R", row + 1, col + 1)
            }
            Query::DeviceAttributes => self.to_child.write_all(b"\x1b[?1;2c"),
            Query::DeviceStatus => self.to_child.write_all(b"\x1b[0n"),
        };
    }

    /// Writes pending input without blocking; the rest waits for POLLOUT.
    fn flush_to_child(&mut self) {
        while self.to_child_sent < self.to_child.len() {
            if !self.master_open {
                // Nobody can read it any more.
                break;
            }
            match nix::unistd::write(self.pty.fd(), &self.to_child[self.to_child_sent..]) {
                Ok(n) => self.to_child_sent += n,
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => return,
                // EIO: the command is gone; dropping its input is all we can do.
                Err(_) => break,
            }
        }
        self.to_child.clear();
        self.to_child_sent = 0;
    }

    /// Reads stdin once. Returns true when the kill key was pressed.
    fn read_stdin(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        let n = match nix::unistd::read(io::stdin().as_fd(), &mut chunk) {
            Ok(n) => n,
            Err(Errno::EINTR | Errno::EAGAIN) => return false,
            // A closed or broken stdin ends the input, not the command: it
            // may not even want input, and a gone terminal brings SIGHUP.
            Err(_) => 0,
        };
        if let Some(console) = &self.console {
            if n == 0 {
                // The terminal went away; the caller's SIGHUP handling ends the run.
                self.stdin_open = false;
                return false;
            }
            let app_cursor = console.parser.screen().application_cursor();
            let kill = self
                .keys
                .feed(&chunk[..n], Instant::now(), app_cursor, &mut self.to_child);
            self.flush_to_child();
            return kill;
        }
        if n == 0 {
            self.stdin_open = false;
            self.send_eof();
        } else {
            self.to_child.extend_from_slice(&chunk[..n]);
            self.last_fed = Some(chunk[n - 1]);
        }
        self.flush_to_child();
        false
    }

    /// Ends the fed input the way a person would: ^D, twice after a partial
    /// line because in canonical mode the first one only flushes that line.
    fn send_eof(&mut self) {
        // The master reports the slave's line settings.
        let (veof, canonical) = match tcgetattr(self.pty.fd()) {
            Ok(t) if t.control_chars[SpecialCharacterIndices::VEOF as usize] != 0 => (
                t.control_chars[SpecialCharacterIndices::VEOF as usize],
                t.local_flags.contains(LocalFlags::ICANON),
            ),
            _ => (0x04, true),
        };
        let partial_line = self.last_fed.is_some_and(|b| b != b'\n');
        self.to_child.push(veof);
        if canonical && partial_line {
            self.to_child.push(veof);
        }
    }

    /// Non-blocking check for the command's exit.
    fn try_reap(&mut self) -> Result<Option<PtyEnd>, PtyError> {
        let Some(child) = &mut self.pty.child else {
            return Ok(None);
        };
        let status = child.try_wait().map_err(|source| PtyError::Wait {
            pid: self.pty.leader,
            source,
        })?;
        let end = match status.map(|s| (s.code(), s.signal())) {
            Some((Some(code), _)) => PtyEnd::Exited(code),
            Some((None, Some(signal))) => PtyEnd::Signaled(signal),
            _ => return Ok(None),
        };
        self.pty.child = None;
        Ok(Some(end))
    }

    /// Kills the PTY session's whole tree while still reading its output (so
    /// TERM handlers that print do not block on a full PTY), then reaps.
    fn teardown(&mut self) -> Vec<KilledProcess> {
        let leader = self.pty.leader;
        let grace = self.req.kill_grace;
        let marker = run_marker(self.req.spawn);
        let marker = marker.as_str();
        let group = self.req.group;
        let killed = std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("pty-teardown".into())
                .spawn_scoped(scope, move || terminate_tree(leader, marker, group, grace));
            match worker {
                Ok(worker) => {
                    while !worker.is_finished() {
                        if self.poll_once(Duration::from_millis(10), false).is_err() {
                            self.master_open = false;
                        }
                        if let Some(console) = &mut self.console {
                            console.draw_if_due(Instant::now());
                        }
                    }
                    worker.join().unwrap_or_default()
                }
                Err(_) => terminate_tree(leader, marker, group, grace),
            }
        });
        let started = Instant::now();
        while self.pty.child.is_some() && started.elapsed() < REAP_WAIT {
            if self.try_reap().is_err() {
                // Someone else reaped it; nothing is left to wait for.
                self.pty.child = None;
            } else if self.pty.child.is_some() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.pty.hand_off();
        killed
    }

    /// Reads what is left after the command ended, until EOF, a quiet spell
    /// or a time cap: a background job may hold the PTY open forever.
    fn drain(&mut self, cancelled_before: bool) {
        let started = Instant::now();
        let mut last_data = started;
        while self.master_open {
            let now = Instant::now();
            if now - started >= DRAIN_TOTAL || now - last_data >= DRAIN_IDLE {
                break;
            }
            // A cancel that arrives now means "stop waiting", not "kill".
            if !cancelled_before && self.req.cancel.reason().is_some() {
                break;
            }
            let wait = TICK.min(DRAIN_IDLE - (now - last_data));
            let before = self.bytes_out;
            if self.poll_once(wait, false).is_err() {
                break;
            }
            if self.bytes_out != before {
                last_data = Instant::now();
            }
            if let Some(console) = &mut self.console {
                console.draw_if_due(Instant::now());
            }
        }
    }
}

fn end_label(end: PtyEnd) -> String {
    match end {
        PtyEnd::Exited(code) => format!("exit {code}"),
        PtyEnd::Signaled(signal) => format!("killed by {}", crate::exit::signal_name(signal)),
        PtyEnd::TimedOut => "timed out".to_string(),
        PtyEnd::Idle(_) => "stopped (no output)".to_string(),
        PtyEnd::Cancelled(_) | PtyEnd::KillKey => "killed".to_string(),
        PtyEnd::OutputDone => "stopped (head limit)".to_string(),
    }
}

/// Rounds up so that a 0.3 ms wait does not become a busy 0 ms poll loop.
fn poll_timeout(wait: Duration) -> PollTimeout {
    let millis = wait.as_micros().div_ceil(1000).min(u128::from(u16::MAX));
    PollTimeout::from(u16::try_from(millis).unwrap_or(u16::MAX))
}

// ---------------------------------------------------------------------------
// The pseudo-terminal and its process
// ---------------------------------------------------------------------------

struct Pty {
    master: OwnedFd,
    /// The command's pid: a session leader, so also its session and process-group id.
    leader: i32,
    /// The command, until its exit status has been collected (or handed to a thread).
    child: Option<Child>,
}

impl Pty {
    /// A pseudo-terminal of `rows` × `cols` with `spec` started on it by the one
    /// spawner (`process::spawn_on_tty`), in `group` when there is one.
    fn spawn(
        spec: &SpawnSpec,
        group: Option<&RunGroup>,
        rows: u16,
        cols: u16,
    ) -> Result<Self, PtyError> {
        let (master, slave) = spawn::open_pty().map_err(PtyError::Open)?;
        spawn::set_window_size(slave.as_fd(), rows, cols)
            .map_err(|e| PtyError::Open(format!("cannot set its size: {e}")))?;
        // Non-blocking so that one loop can read, write and watch the clock;
        // no one else uses this open file description.
        crate::process::set_nonblocking(&master).map_err(|e| PtyError::Io {
            what: "fcntl(O_NONBLOCK)",
            source: e,
        })?;
        // The slave is moved into the spawn and closed here once the child has it,
        // or the master would never report EOF.
        let child = spawn::spawn_on_tty(spec, group, slave).map_err(|e| {
            if spawn::is_bad_cwd(&e) {
                PtyError::Cwd(spec.cwd.clone())
            } else {
                PtyError::Spawn {
                    program: spec.program.display().to_string(),
                    message: e.to_string(),
                }
            }
        })?;
        Ok(Pty {
            master,
            leader: child.id() as i32,
            child: Some(child),
        })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.master.as_fd()
    }

    fn resize(&self, rows: u16, cols: u16) {
        // A failed TIOCSWINSZ only leaves the old size; not worth ending the run.
        let _ = spawn::set_window_size(self.fd(), rows, cols);
    }

    /// Leave the command to a thread that waits for it: never hang on an
    /// unkillable process, but do not leave a zombie either.
    fn hand_off(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = std::thread::Builder::new()
                .name("pty-reaper".into())
                .spawn(move || child.wait());
        }
    }
}

impl Drop for Pty {
    /// Last resort when the run unwinds (a panic in `on_output`, say): the
    /// command must not outlive it. Normal paths reap before getting here.
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = nix::sys::signal::killpg(Pid::from_raw(self.leader), Signal::SIGKILL);
            let _ = child.kill();
        }
        self.hand_off();
    }
}

// ---------------------------------------------------------------------------
// Terminal queries
// ---------------------------------------------------------------------------

/// A query a program sends to its terminal and waits for an answer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Query {
    /// `ESC[6n` → `ESC[row;colR`
    CursorPosition,
    /// `ESC[c` / `ESC[0c` → `ESC[?1;2c` (a VT100 with advanced video)
    DeviceAttributes,
    /// `ESC[5n` → `ESC[0n` (terminal OK)
    DeviceStatus,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ScanState {
    #[default]
    Ground,
    Escape,
    Csi,
}

/// Finds queries in the output stream, across read boundaries, without
/// looking at bytes one by one when a chunk has no ESC at all.
#[derive(Default)]
struct QueryScanner {
    state: ScanState,
    params: [u8; 8],
    len: usize,
    overflow: bool,
}

impl QueryScanner {
    /// Appends `(offset just past the query, query)` for each query in `chunk`.
    fn scan(&mut self, chunk: &[u8], hits: &mut Vec<(usize, Query)>) {
        let mut i = 0;
        while i < chunk.len() {
            match self.state {
                ScanState::Ground => {
                    // `contains` on bytes is memchr: fast even in debug builds.
                    if !chunk[i..].contains(&ESC) {
                        return;
                    }
                    match chunk[i..].iter().position(|&b| b == ESC) {
                        Some(offset) => {
                            i += offset + 1;
                            self.state = ScanState::Escape;
                        }
                        None => return,
                    }
                }
                ScanState::Escape => {
                    let byte = chunk[i];
                    i += 1;
                    if byte == b'[' {
                        self.state = ScanState::Csi;
                        self.len = 0;
                        self.overflow = false;
                    } else if byte != ESC {
                        self.state = ScanState::Ground;
                    }
                }
                ScanState::Csi => {
                    let byte = chunk[i];
                    i += 1;
                    match byte {
                        0x20..=0x3f => {
                            if self.len < self.params.len() {
                                self.params[self.len] = byte;
                                self.len += 1;
                            } else {
                                self.overflow = true;
                            }
                        }
                        0x40..=0x7e => {
                            if !self.overflow
                                && let Some(query) = classify(&self.params[..self.len], byte)
                            {
                                hits.push((i, query));
                            }
                            self.state = ScanState::Ground;
                        }
                        ESC => self.state = ScanState::Escape,
                        // CAN and SUB abort a sequence.
                        0x18 | 0x1a => self.state = ScanState::Ground,
                        // Other controls are executed inside a sequence; skip them.
                        _ => {}
                    }
                }
            }
        }
    }
}

fn classify(params: &[u8], final_byte: u8) -> Option<Query> {
    match (params, final_byte) {
        (b"6", b'n') => Some(Query::CursorPosition),
        (b"5", b'n') => Some(Query::DeviceStatus),
        (b"" | b"0", b'c') => Some(Query::DeviceAttributes),
        _ => None,
    }
}

/// Headless cursor model, just good enough for cursor position reports.
///
/// A full vt100 parser costs more than the PTY itself on bulk output, so
/// headless runs keep only the current line's tail and a clamped line count.
/// Cursor addressing and erasing sequences are not modelled.
struct CursorEstimate {
    rows: u16,
    cols: u16,
    row: u16,
    tail: Vec<u8>,
}

/// Longest line tail kept; beyond it the column estimate gives up precision.
const TAIL_LIMIT: usize = 4096;

impl CursorEstimate {
    fn new(rows: u16, cols: u16) -> Self {
        Self {
            rows: rows.max(1),
            cols: cols.max(1),
            row: 0,
            tail: Vec::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if self.row + 1 < self.rows {
            // Once at the bottom row, newlines scroll and counting can stop.
            let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
            let row = usize::from(self.row) + newlines;
            self.row = u16::try_from(row).unwrap_or(u16::MAX).min(self.rows - 1);
        }
        match bytes.iter().rposition(|&b| b == b'\n' || b == b'\r') {
            Some(last) => {
                self.tail.clear();
                self.tail.extend_from_slice(&bytes[last + 1..]);
            }
            None => self.tail.extend_from_slice(bytes),
        }
        if self.tail.len() > TAIL_LIMIT {
            let excess = self.tail.len() - TAIL_LIMIT;
            self.tail.drain(..excess);
        }
    }

    /// Zero-based (row, col).
    fn position(&self) -> (u16, u16) {
        let mut col = 0usize;
        let mut i = 0;
        let tail = &self.tail;
        while i < tail.len() {
            let byte = tail[i];
            i += 1;
            match byte {
                ESC => i = skip_escape(tail, i),
                0x08 => col = col.saturating_sub(1),
                b'\t' => col = (col / 8 + 1) * 8,
                // Other controls and UTF-8 continuation bytes take no cell.
                0x00..=0x1f | 0x7f | 0x80..=0xbf => {}
                _ => col += 1,
            }
        }
        let cols = usize::from(self.cols);
        // A full line leaves the cursor on its last cell until the next character.
        let (wraps, col) = if col == 0 {
            (0, 0)
        } else {
            ((col - 1) / cols, (col - 1) % cols + 1)
        };
        let row = (usize::from(self.row) + wraps).min(usize::from(self.rows - 1));
        let col = col.min(cols - 1);
        (
            u16::try_from(row).unwrap_or(u16::MAX),
            u16::try_from(col).unwrap_or(u16::MAX),
        )
    }
}

/// Returns the index just past the escape sequence whose ESC is at `i - 1`.
fn skip_escape(bytes: &[u8], mut i: usize) -> usize {
    match bytes.get(i) {
        Some(b'[') => {
            i += 1;
            while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                i += 1;
            }
            i + 1
        }
        Some(b']') => {
            // OSC ends with BEL or ST (ESC \).
            while i < bytes.len() && bytes[i] != 0x07 && bytes[i] != ESC {
                i += 1;
            }
            if bytes.get(i) == Some(&ESC) {
                i + 2
            } else {
                i + 1
            }
        }
        Some(_) => i + 1,
        None => i,
    }
}

// ---------------------------------------------------------------------------
// Keyboard input (interactive)
// ---------------------------------------------------------------------------

/// Turns raw keyboard bytes into bytes for the PTY.
///
/// Input is forwarded unchanged except that cursor keys follow the inner
/// program's cursor-key mode (`ESC [ A` vs `ESC O A`) and the kill key is
/// taken out. A lone ESC is only known to be the Esc key when nothing follows
/// it within [`ESC_TIMEOUT`], so an ESC at the end of a read is held.
struct KeyInput {
    kill: u8,
    pending: Vec<u8>,
    pending_since: Option<Instant>,
}

/// How an escape sequence at the start of a buffer is shaped.
enum EscShape {
    /// More bytes are needed to know.
    Incomplete,
    /// ESC followed by something that does not start a sequence (Alt+key).
    Prefix,
    /// A whole sequence of this many bytes.
    Complete(usize),
}

/// Input sequences longer than this are not sequences; forward them as they are.
const MAX_SEQUENCE: usize = 32;

impl KeyInput {
    fn new(kill_key: KillKey) -> Self {
        Self {
            kill: kill_key.byte(),
            pending: Vec::new(),
            pending_since: None,
        }
    }

    /// Appends what to forward to `out`. Returns true on the kill key.
    fn feed(&mut self, bytes: &[u8], now: Instant, app_cursor: bool, out: &mut Vec<u8>) -> bool {
        let mut input = std::mem::take(&mut self.pending);
        input.extend_from_slice(bytes);
        let mut i = 0;
        while i < input.len() {
            let byte = input[i];
            if byte == self.kill && self.kill != ESC {
                self.pending_since = None;
                return true;
            }
            if byte != ESC {
                out.push(byte);
                i += 1;
                continue;
            }
            match esc_shape(&input[i..]) {
                EscShape::Incomplete => {
                    self.pending.extend_from_slice(&input[i..]);
                    self.pending_since.get_or_insert(now);
                    return false;
                }
                EscShape::Prefix => {
                    out.push(ESC);
                    i += 1;
                }
                EscShape::Complete(len) => {
                    translate_cursor_key(&input[i..i + len], app_cursor, out);
                    i += len;
                }
            }
        }
        self.pending_since = None;
        false
    }

    /// When the held bytes must be decided on.
    fn deadline(&self) -> Option<Instant> {
        self.pending_since.map(|since| since + ESC_TIMEOUT)
    }

    /// Decides on held bytes once nothing followed them in time. Returns true
    /// when they were a lone Esc and Esc is the kill key.
    fn expire(&mut self, now: Instant, app_cursor: bool, out: &mut Vec<u8>) -> bool {
        match self.pending_since {
            Some(since) if now >= since + ESC_TIMEOUT => {
                self.pending_since = None;
                let held = std::mem::take(&mut self.pending);
                if held == [ESC] && self.kill == ESC {
                    return true;
                }
                translate_cursor_key(&held, app_cursor, out);
                false
            }
            _ => false,
        }
    }
}

fn esc_shape(input: &[u8]) -> EscShape {
    match input.get(1) {
        None => EscShape::Incomplete,
        Some(b'[') => {
            for (index, &byte) in input.iter().enumerate().skip(2) {
                if (0x40..=0x7e).contains(&byte) {
                    return EscShape::Complete(index + 1);
                }
                if !(0x20..=0x3f).contains(&byte) {
                    // Not a well-formed sequence: pass the bytes so far on.
                    return EscShape::Complete(index);
                }
            }
            if input.len() >= MAX_SEQUENCE {
                EscShape::Complete(input.len())
            } else {
                EscShape::Incomplete
            }
        }
        Some(b'O') if input.len() >= 3 => EscShape::Complete(3),
        Some(b'O') => EscShape::Incomplete,
        Some(_) => EscShape::Prefix,
    }
}

/// Arrows, Home and End are sent the way xterm (the inner `TERM`) sends
/// them: `ESC O x` when the program asked for application cursor keys
/// (DECCKM), `ESC [ x` otherwise. Home and End also arrive as `ESC [ 1 ~` /
/// `ESC [ 4 ~` (tmux, screen, the Linux console) or `ESC [ 7 ~` / `ESC [ 8 ~`
/// (rxvt), which programs told they run in an xterm would not recognise.
fn translate_cursor_key(sequence: &[u8], app_cursor: bool, out: &mut Vec<u8>) {
    let key = match sequence {
        [
            ESC,
            b'[' | b'O',
            key @ (b'A' | b'B' | b'C' | b'D' | b'H' | b'F'),
        ] => *key,
        [ESC, b'[', b'1' | b'7', b'~'] => b'H',
        [ESC, b'[', b'4' | b'8', b'~'] => b'F',
        _ => {
            out.extend_from_slice(sequence);
            return;
        }
    };
    let introducer = if app_cursor { b'O' } else { b'[' };
    out.extend_from_slice(&[ESC, introducer, key]);
}

// ---------------------------------------------------------------------------
// The interactive viewport
// ---------------------------------------------------------------------------

/// The outer terminal's settings while a viewport is up, for the panic hook.
static SAVED_TERMINAL: Mutex<Option<Termios>> = Mutex::new(None);

/// Rows from the real cursor to the viewport's last row, so that the panic
/// hook can put its message below the viewport instead of over it.
static ROWS_BELOW_CURSOR: AtomicU16 = AtomicU16::new(0);

fn saved_terminal() -> std::sync::MutexGuard<'static, Option<Termios>> {
    SAVED_TERMINAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Restores the terminal before the panic message is printed (in raw mode it
/// would be garbled), whether or not unwinding later runs `Console::drop`.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // try_lock: never deadlock inside a panic.
            let saved = match SAVED_TERMINAL.try_lock() {
                Ok(mut guard) => guard.take(),
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner().take(),
                Err(std::sync::TryLockError::WouldBlock) => None,
            };
            if let Some(termios) = saved {
                restore_termios(&termios);
                let mut out = String::from("\x1b[0m\x1b[?25h");
                let below = ROWS_BELOW_CURSOR.load(Ordering::Relaxed);
                if below > 0 {
                    let _ = write!(out, "\x1b[{below}B");
                }
                out.push_str("\r\n");
                let _ = write_stdout(out.as_bytes());
            }
            previous(info);
        }));
    });
}

fn restore_termios(termios: &Termios) {
    // Nothing better to do if this fails: the terminal is probably gone.
    let _ = tcsetattr(io::stdin().as_fd(), SetArg::TCSANOW, termios);
}

/// Writes all of `bytes` to stdout, bypassing Rust's buffered (and locked)
/// `Stdout`, which a panic hook must not touch.
fn write_stdout(mut bytes: &[u8]) -> io::Result<()> {
    let stdout = io::stdout();
    while !bytes.is_empty() {
        match nix::unistd::write(stdout.as_fd(), bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::POLLOUT)];
                let _ = poll(&mut fds, PollTimeout::from(50u16));
            }
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

/// Rows and columns of the outer terminal (24 × 80 when it cannot say).
fn outer_size() -> (u16, u16) {
    spawn::window_size(std::io::stdout().as_fd())
        .filter(|&(rows, cols)| rows > 0 && cols > 0)
        .unwrap_or((24, 80))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    /// Viewport rows including the header and footer lines.
    height: u16,
    width: u16,
    inner_rows: u16,
    inner_cols: u16,
}

impl Layout {
    /// 80% of the terminal's rows (at least 5, at most all), full width.
    fn for_terminal((rows, cols): (u16, u16)) -> Self {
        let height = u16::try_from(u32::from(rows) * 4 / 5).unwrap_or(u16::MAX);
        let height = height.max(5).min(rows).max(3);
        let width = cols.max(3);
        Layout {
            height,
            width,
            inner_rows: height - 2,
            inner_cols: width - 2,
        }
    }
}

fn non_zero(value: u16) -> NonZeroU16 {
    NonZeroU16::new(value).unwrap_or(NonZeroU16::MIN)
}

/// The outer terminal while a viewport is up: raw mode, the command's screen
/// and what is currently drawn. Dropping it restores the terminal.
struct Console {
    parser: vt100::Parser,
    outer: (u16, u16),
    layout: Layout,
    title: String,
    footer: String,
    state: String,
    running: bool,
    /// Viewport row the real cursor is on, to find the top again.
    cursor_row: u16,
    dirty: bool,
    force_full: bool,
    last_draw: Option<Instant>,
    /// What each viewport row shows now, so unchanged rows are skipped.
    drawn: Vec<String>,
    line: String,
    frame: String,
}

impl Console {
    fn enter(title: &str, kill_key: KillKey) -> Result<Self, PtyError> {
        let stdin = io::stdin();
        let stdout = io::stdout();
        for (fd, name) in [(stdin.as_fd(), "stdin"), (stdout.as_fd(), "stdout")] {
            match isatty(fd) {
                Ok(true) => {}
                Ok(false) => {
                    let message = format!("{name} is not a terminal");
                    return Err(PtyError::NotATerminal(io::Error::other(message)));
                }
                Err(errno) => return Err(PtyError::NotATerminal(errno.into())),
            }
        }
        let saved = tcgetattr(stdin.as_fd()).map_err(|e| PtyError::RawMode(e.into()))?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        ROWS_BELOW_CURSOR.store(0, Ordering::Relaxed);
        // Text still in Rust's buffer must land before the viewport does.
        let _ = stdout.lock().flush();
        // Saved before switching so that a panic from here on restores it.
        *saved_terminal() = Some(saved);
        if let Err(errno) = tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw) {
            saved_terminal().take();
            return Err(PtyError::RawMode(errno.into()));
        }
        let outer = outer_size();
        let layout = Layout::for_terminal(outer);
        let title = crate::display::escape_controls(title).into_owned();
        let mut console = Console {
            parser: vt100::Parser::new(non_zero(layout.inner_rows), non_zero(layout.inner_cols), 0),
            outer,
            layout,
            title,
            footer: format!(" {kill_key} force-kill · input forwarded "),
            state: "running".to_string(),
            running: true,
            cursor_row: 0,
            dirty: true,
            force_full: true,
            last_draw: None,
            drawn: Vec::new(),
            line: String::new(),
            frame: String::new(),
        };
        let mut reserve = String::new();
        console.reserve(&mut reserve);
        let _ = write_stdout(reserve.as_bytes());
        console.draw(Instant::now());
        Ok(console)
    }

    fn inner_size(&self) -> (u16, u16) {
        (self.layout.inner_rows, self.layout.inner_cols)
    }

    /// Makes room for the viewport below the cursor (scrolling once if the
    /// cursor is near the bottom) and leaves the cursor on its top-left cell.
    fn reserve(&mut self, out: &mut String) {
        let below = self.layout.height - 1;
        out.push_str("\x1b[?25l\r");
        for _ in 0..below {
            out.push('\n');
        }
        if below > 0 {
            let _ = write!(out, "\x1b[{below}A");
        }
        self.cursor_row = 0;
        self.force_full = true;
        self.dirty = true;
    }

    fn process(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        self.dirty = true;
    }

    /// Follows a change of the outer terminal's size. Returns the new inner
    /// size for the PTY.
    fn follow_resize(&mut self) -> Option<(u16, u16)> {
        let outer = outer_size();
        if outer == self.outer {
            return None;
        }
        let mut out = String::from("\x1b[?25l");
        if outer.1 < self.outer.1 {
            // A narrower terminal may re-wrap the old full-width lines, and no
            // relative move finds the viewport again: start on a clean screen.
            out.push_str("\x1b[H\x1b[2J");
        } else {
            out.push('\r');
            if self.cursor_row > 0 {
                let _ = write!(out, "\x1b[{}A", self.cursor_row);
            }
            out.push_str("\x1b[J");
        }
        self.outer = outer;
        self.layout = Layout::for_terminal(outer);
        self.reserve(&mut out);
        let _ = write_stdout(out.as_bytes());
        self.parser.screen_mut().set_size(
            non_zero(self.layout.inner_rows),
            non_zero(self.layout.inner_cols),
        );
        Some(self.inner_size())
    }

    fn next_frame(&self) -> Option<Instant> {
        if !self.dirty {
            return None;
        }
        Some(
            self.last_draw
                .map_or_else(Instant::now, |t| t + FRAME_INTERVAL),
        )
    }

    fn draw_if_due(&mut self, now: Instant) {
        if self.next_frame().is_some_and(|due| now >= due) {
            self.draw(now);
        }
    }

    /// Draws the viewport in place: up to its top, each changed row, then the
    /// cursor where the inner program has it.
    fn draw(&mut self, now: Instant) {
        self.last_draw = Some(now);
        self.dirty = false;
        let Layout {
            height,
            width,
            inner_rows,
            inner_cols,
        } = self.layout;
        let screen = self.parser.screen();
        self.frame.clear();
        self.frame.push_str("\x1b[?25l\r");
        if self.cursor_row > 0 {
            let _ = write!(self.frame, "\x1b[{}A", self.cursor_row);
        }
        self.drawn.resize(usize::from(height), String::new());
        for row in 0..height {
            self.line.clear();
            if row == 0 {
                let label = header_label(&self.title, &self.state, width);
                border_line(&mut self.line, '┌', '┐', &label, width);
            } else if row == height - 1 {
                border_line(&mut self.line, '└', '┘', &self.footer, width);
            } else {
                render_row(screen, row - 1, inner_cols, &mut self.line);
            }
            let slot = &mut self.drawn[usize::from(row)];
            if self.force_full || *slot != self.line {
                self.frame.push('\r');
                self.frame.push_str(&self.line);
                std::mem::swap(slot, &mut self.line);
            }
            if row + 1 < height {
                // CUD never scrolls, unlike a newline.
                self.frame.push_str("\x1b[B");
            }
        }
        self.force_full = false;
        let (cursor_row, cursor_col) = screen.cursor_position();
        if self.running
            && !screen.hide_cursor()
            && cursor_row < inner_rows
            && cursor_col < inner_cols
        {
            let target = cursor_row + 1;
            let up = height - 1 - target;
            if up > 0 {
                let _ = write!(self.frame, "\x1b[{up}A");
            }
            let _ = write!(self.frame, "\x1b[{}G\x1b[?25h", cursor_col + 2);
            self.cursor_row = target;
        } else {
            self.cursor_row = height - 1;
        }
        ROWS_BELOW_CURSOR.store(height - 1 - self.cursor_row, Ordering::Relaxed);
        // A terminal that cannot be written to cannot be drawn on; the run
        // itself goes on and its output still reaches the caller.
        let _ = write_stdout(self.frame.as_bytes());
    }

    /// Draws the final frame with `state` in the header and hands the
    /// terminal back.
    fn finish(&mut self, state: &str) {
        self.state = state.to_string();
        self.running = false;
        self.draw(Instant::now());
        self.leave();
    }

    /// Puts the cursor below the viewport, shows it and restores the
    /// terminal's settings. Idempotent, and a no-op after the panic hook ran.
    fn leave(&mut self) {
        let Some(saved) = saved_terminal().take() else {
            return;
        };
        let mut out = String::new();
        let down = self.layout.height - 1 - self.cursor_row.min(self.layout.height - 1);
        if down > 0 {
            let _ = write!(out, "\x1b[{down}B");
        }
        out.push_str("\r\n\x1b[0m\x1b[?25h");
        let _ = write_stdout(out.as_bytes());
        restore_termios(&saved);
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.leave();
    }
}

fn display_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to `max` columns, with `…` when something was cut.
fn fit(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// ` Console <title> [<state>] `, the title shortened first when narrow.
fn header_label(title: &str, state: &str, width: u16) -> String {
    let budget = usize::from(width).saturating_sub(3);
    let fixed = display_width(" Console  [] ") + display_width(state);
    let title = fit(title, budget.saturating_sub(fixed));
    format!(" Console {title} [{state}] ")
}

/// `┌─ label ───┐` (or └ ┘) exactly `width` columns wide.
fn border_line(out: &mut String, left: char, right: char, label: &str, width: u16) {
    let inner = usize::from(width).saturating_sub(3);
    let label = fit(label, inner);
    out.push(left);
    out.push('─');
    out.push_str("\x1b[1m");
    out.push_str(&label);
    out.push_str("\x1b[0m");
    for _ in display_width(&label)..inner {
        out.push('─');
    }
    out.push(right);
}

/// The attributes a cell is drawn with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pen {
    fg: vt100::Color,
    bg: vt100::Color,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    inverse: bool,
}

impl Pen {
    fn of(cell: &vt100::Cell) -> Self {
        Pen {
            fg: cell.fgcolor(),
            bg: cell.bgcolor(),
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        }
    }

    /// One SGR that resets and then sets everything this pen has.
    fn write_sgr(&self, out: &mut String) {
        out.push_str("\x1b[0");
        for (on, code) in [
            (self.bold, ";1"),
            (self.dim, ";2"),
            (self.italic, ";3"),
            (self.underline, ";4"),
            (self.inverse, ";7"),
        ] {
            if on {
                out.push_str(code);
            }
        }
        write_color(out, self.fg, 30, 90, 38);
        write_color(out, self.bg, 40, 100, 48);
        out.push('m');
    }
}

fn write_color(out: &mut String, color: vt100::Color, base: u8, bright: u8, extended: u8) {
    let _ = match color {
        vt100::Color::Default => Ok(()),
        vt100::Color::Idx(n) if n < 8 => write!(out, ";{}", base + n),
        vt100::Color::Idx(n) if n < 16 => write!(out, ";{}", bright + n - 8),
        vt100::Color::Idx(n) => write!(out, ";{extended};5;{n}"),
        vt100::Color::Rgb(r, g, b) => write!(out, ";{extended};2;{r};{g};{b}"),
    };
}

/// `│cells│` for one row of the inner screen, exactly `cols + 2` columns.
fn render_row(screen: &vt100::Screen, row: u16, cols: u16, out: &mut String) {
    out.push('│');
    let mut pen = Pen::default();
    for col in 0..cols {
        match screen.cell(row, col) {
            Some(cell) if cell.is_wide_continuation() => {}
            Some(cell) => {
                let cell_pen = Pen::of(cell);
                if cell_pen != pen {
                    cell_pen.write_sgr(out);
                    pen = cell_pen;
                }
                if cell.has_contents() {
                    out.push_str(cell.contents());
                } else {
                    out.push(' ');
                }
            }
            None => out.push(' '),
        }
    }
    if pen != Pen::default() {
        out.push_str("\x1b[0m");
    }
    out.push('│');
}

// ---------------------------------------------------------------------------
// Adapter: the engine above, wired into the run pipeline (sink, teardown policy).

/// The run's marker value, so teardown also finds descendants that left the session.
fn run_marker(spec: &SpawnSpec) -> String {
    spec.env
        .iter()
        .find(|(k, _)| k == crate::process::RUN_MARKER)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn terminate_tree(
    leader: i32,
    marker: &str,
    group: Option<&RunGroup>,
    grace: Duration,
) -> Vec<KilledProcess> {
    crate::process::teardown::Teardown::new(leader, marker)
        .in_group(group)
        .terminate_run(grace)
}

/// What the pipeline asks of PTY mode.
pub struct PtyRun<'a> {
    pub spawn: &'a SpawnSpec,
    pub cols: u16,
    pub rows: u16,
    pub interactive: bool,
    pub title: &'a str,
    pub kill_key: &'a str,
    pub feed_stdin: bool,
    pub watch: super::Watch<'a>,
}

/// Run in a PTY, feeding the transcript to `sink` and live text to `on_output`.
pub fn run(
    req: &PtyRun<'_>,
    sink: &mut crate::output::sink::OutputSink,
    on_output: &mut dyn FnMut(&str),
) -> Result<super::ExecOutcome, super::ExecError> {
    use super::{End, ExecError, ExecOutcome};
    let kill_key: KillKey = req
        .kill_key
        .parse()
        .map_err(|e: KillKeyError| ExecError::Pty(e.to_string()))?;
    // Dropped last (declared first): removed once nothing of the run is in it.
    let group = RunGroup::create();
    let mut last_emit = Instant::now();
    let outcome = run_pty(
        PtyRequest {
            spawn: req.spawn,
            cols: req.cols,
            rows: req.rows,
            interactive: req.interactive,
            title: req.title,
            kill_key,
            feed_stdin: req.feed_stdin,
            deadline: Instant::now() + req.watch.timeout,
            idle: req.watch.idle,
            kill_grace: req.watch.kill_grace,
            cancel: req.watch.cancel,
            group: group.as_ref(),
        },
        &mut |bytes| {
            sink.push(bytes);
            if (sink.pending_full() || last_emit.elapsed() >= EVENT_INTERVAL)
                && let Some(t) = sink.take_pending()
            {
                on_output(&t);
                last_emit = Instant::now();
            }
            sink.wants_more()
        },
    )
    .map_err(|e| ExecError::Pty(e.to_string()))?;
    if matches!(outcome.end, PtyEnd::OutputDone) {
        sink.stopped_reading();
    }
    // Release what the sanitizer and redactors hold back into the live stream.
    sink.end_input();
    if let Some(t) = sink.take_pending() {
        on_output(&t);
    }
    let teardown =
        crate::process::teardown::Teardown::new(outcome.leader_pid, &run_marker(req.spawn))
            .in_group(group.as_ref());
    let mut background_killed: Vec<KilledProcess> = outcome
        .killed
        .into_iter()
        .filter(|k| k.pid != outcome.leader_pid)
        .collect();
    // As in print mode: with no children and an empty group there is nothing to find.
    let in_group = || teardown.grouped() && group.as_ref().is_some_and(|g| !g.pids().is_empty());
    if req.watch.background == crate::config::profile::Background::Kill
        && crate::process::procfs::any_child()
        && (in_group() || crate::process::procfs::has_children())
    {
        background_killed.extend(teardown.terminate(req.watch.kill_grace, true));
    }
    teardown.reap_orphans();
    let end = match outcome.end {
        PtyEnd::Exited(c) => End::Exited(c),
        PtyEnd::Signaled(s) => End::Signaled(s),
        PtyEnd::TimedOut => End::TimedOut,
        PtyEnd::Idle(secs) => End::Idle(secs),
        PtyEnd::Cancelled(s) => End::Cancelled(s),
        PtyEnd::KillKey => End::Killed,
        // Like `| head`: the pipeline ended because its reader had enough.
        PtyEnd::OutputDone => End::Exited(0),
    };
    Ok(ExecOutcome {
        end,
        background_killed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headless(spawn: &SpawnSpec) -> Result<PtyOutcome, PtyError> {
        let cancel = CancelToken::new();
        run_pty(
            PtyRequest {
                spawn,
                cols: 80,
                rows: 24,
                interactive: false,
                title: "test",
                kill_key: KillKey::Esc,
                feed_stdin: false,
                deadline: Instant::now() + Duration::from_secs(10),
                idle: None,
                kill_grace: Duration::from_millis(200),
                cancel: &cancel,
                group: None,
            },
            &mut |_| true,
        )
    }

    #[test]
    fn a_bad_cwd_is_the_cwd_error_and_a_bad_program_the_spawn_error() {
        let spec = |program: &str, cwd: &str| SpawnSpec {
            program: program.into(),
            args: vec!["-c".into(), "true".into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: cwd.into(),
            ..Default::default()
        };
        for cwd in ["/nonexistent-agentbash-cwd", "/etc/hostname"] {
            let error = headless(&spec("sh", cwd)).expect_err("bad cwd");
            assert!(
                matches!(&error, PtyError::Cwd(p) if p.as_os_str() == cwd),
                "{error}"
            );
            assert_eq!(
                error.to_string(),
                format!("working directory {cwd} does not exist or is not a directory")
            );
        }
        let error = headless(&spec("/nonexistent/sh", "/")).expect_err("bad program");
        assert!(
            matches!(&error, PtyError::Spawn { program, .. } if program == "/nonexistent/sh"),
            "{error}"
        );
        assert_eq!(
            headless(&spec("sh", "/")).expect("runs").end,
            PtyEnd::Exited(0)
        );
    }

    #[test]
    fn kill_keys_parse_from_profile_strings() {
        let cases = [
            ("esc", KillKey::Esc),
            ("Escape", KillKey::Esc),
            ("ctrl-[", KillKey::Esc),
            ("ctrl-c", KillKey::CtrlC),
            ("CTRL+C", KillKey::CtrlC),
            ("ctrl-\\", KillKey::CtrlBackslash),
            ("ctrl-]", KillKey::CtrlRightBracket),
            ("c-g", KillKey::CtrlLetter('g')),
            (" ctrl-x ", KillKey::CtrlLetter('x')),
        ];
        for (text, key) in cases {
            assert_eq!(text.parse::<KillKey>(), Ok(key), "{text}");
        }
        for key in [
            KillKey::Esc,
            KillKey::CtrlBackslash,
            KillKey::CtrlLetter('x'),
        ] {
            assert_eq!(key.to_string().parse::<KillKey>(), Ok(key));
        }
        assert_eq!(KillKey::CtrlBackslash.byte(), 0x1c);
        assert_eq!(KillKey::CtrlLetter('x').byte(), 0x18);
    }

    #[test]
    fn bad_kill_keys_say_what_to_use() {
        let error = "alt-x".parse::<KillKey>().unwrap_err().to_string();
        assert!(
            error.contains("\"alt-x\"") && error.contains("ctrl-<letter>"),
            "{error}"
        );
        let error = "ctrl-m".parse::<KillKey>().unwrap_err().to_string();
        assert!(error.contains("Enter"), "{error}");
        for bad in ["", "ctrl-", "ctrl-1", "ctrl-ab", "f1"] {
            assert!(bad.parse::<KillKey>().is_err(), "{bad:?}");
        }
    }

    fn scan_in_two(input: &[u8], split: usize) -> Vec<(usize, Query)> {
        let mut scanner = QueryScanner::default();
        let mut hits = Vec::new();
        scanner.scan(&input[..split], &mut hits);
        let mut second = Vec::new();
        scanner.scan(&input[split..], &mut second);
        hits.extend(second.into_iter().map(|(end, q)| (end + split, q)));
        hits
    }

    #[test]
    fn queries_are_found_wherever_reads_split_them() {
        let input = b"ab\x1b[6nxy\x1b[c\x1b[0c\x1b[5n\x1b[?6n\x1b[16n\x1b[1;2H\x1b\x1b[6n";
        let expected = vec![
            (6, Query::CursorPosition),
            (11, Query::DeviceAttributes),
            (15, Query::DeviceAttributes),
            (19, Query::DeviceStatus),
            (40, Query::CursorPosition),
        ];
        for split in 0..=input.len() {
            assert_eq!(scan_in_two(input, split), expected, "split at {split}");
        }
    }

    const T0: Duration = Duration::ZERO;

    fn keys(kill: KillKey, reads: &[&[u8]], app_cursor: bool) -> (Vec<u8>, bool) {
        let mut input = KeyInput::new(kill);
        let now = Instant::now();
        let mut out = Vec::new();
        for read in reads {
            if input.feed(read, now, app_cursor, &mut out) {
                return (out, true);
            }
        }
        let later = now + ESC_TIMEOUT + T0;
        let killed = input.expire(later, app_cursor, &mut out);
        (out, killed)
    }

    #[test]
    fn keys_are_forwarded_unchanged() {
        let typed: &[u8] = "héllo\r\t\x7f\x03\x1bx\x1b[3~\x1b[5~\x1b[1;5C\x1b[11~".as_bytes();
        assert_eq!(keys(KillKey::Esc, &[typed], false), (typed.to_vec(), false));
    }

    #[test]
    fn cursor_keys_follow_the_programs_mode() {
        let arrows: &[u8] = b"\x1b[A\x1b[B\x1bOC\x1b[D\x1b[H\x1b[F";
        assert_eq!(
            keys(KillKey::Esc, &[arrows], false).0,
            b"\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F"
        );
        assert_eq!(
            keys(KillKey::Esc, &[arrows], true).0,
            b"\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF"
        );
        // Home and End in the encodings other terminals use.
        assert_eq!(
            keys(KillKey::Esc, &[b"\x1b[1~\x1b[4~\x1b[7~\x1b[8~"], true).0,
            b"\x1bOH\x1bOF\x1bOH\x1bOF"
        );
        // Split across reads, the sequence is still recognised.
        assert_eq!(
            keys(KillKey::Esc, &[b"a\x1b", b"[", b"Ab"], true).0,
            b"a\x1bOAb"
        );
    }

    #[test]
    fn a_lone_escape_is_the_kill_key_only_after_the_timeout() {
        let (out, killed) = keys(KillKey::Esc, &[b"ab\x1b"], false);
        assert_eq!((out.as_slice(), killed), (&b"ab"[..], true));

        let mut input = KeyInput::new(KillKey::Esc);
        let now = Instant::now();
        let mut out = Vec::new();
        assert!(!input.feed(b"\x1b", now, false, &mut out));
        assert_eq!(input.deadline(), Some(now + ESC_TIMEOUT));
        assert!(!input.expire(now + ESC_TIMEOUT / 2, false, &mut out));
        assert!(input.expire(now + ESC_TIMEOUT, false, &mut out));
        assert!(out.is_empty());

        // With another kill key, the lone Esc goes to the program.
        assert_eq!(
            keys(KillKey::CtrlRightBracket, &[b"\x1b"], false),
            (vec![ESC], false)
        );
    }

    #[test]
    fn control_kill_keys_act_at_once() {
        let (out, killed) = keys(KillKey::CtrlBackslash, &[b"ab\x1ccd"], false);
        assert_eq!((out.as_slice(), killed), (&b"ab"[..], true));
        let (out, killed) = keys(KillKey::CtrlC, &[b"x\x03"], false);
        assert_eq!((out.as_slice(), killed), (&b"x"[..], true));
        // Esc is the kill key, so ^C goes through.
        assert_eq!(keys(KillKey::Esc, &[b"\x03"], false), (vec![0x03], false));
    }

    fn estimate(rows: u16, cols: u16, chunks: &[&[u8]]) -> (u16, u16) {
        let mut estimate = CursorEstimate::new(rows, cols);
        for chunk in chunks {
            estimate.feed(chunk);
        }
        estimate.position()
    }

    #[test]
    fn headless_cursor_estimate() {
        assert_eq!(estimate(40, 120, &[b""]), (0, 0));
        assert_eq!(estimate(40, 120, &[b"abc"]), (0, 3));
        assert_eq!(estimate(40, 120, &[b"one\r\ntw", b"o"]), (1, 3));
        assert_eq!(estimate(40, 120, &[b"progress 10%\rprogress 20"]), (0, 11));
        assert_eq!(estimate(40, 120, &["héllo\t".as_bytes()]), (0, 8));
        assert_eq!(
            estimate(40, 120, &[b"\x1b[1;31mred\x1b[0m\x1b]0;title\x07!"]),
            (0, 4)
        );
        assert_eq!(estimate(3, 120, &[b"1\r\n2\r\n3\r\n4\r\n5"]), (2, 1));
        assert_eq!(estimate(40, 10, &[b"0123456789abc"]), (1, 3));
        // A full line keeps the cursor on its last cell.
        assert_eq!(estimate(40, 10, &[b"0123456789"]), (0, 9));
    }

    #[test]
    fn viewport_is_80_percent_of_the_rows_but_at_least_5() {
        let height = |rows| Layout::for_terminal((rows, 80)).height;
        assert_eq!(height(30), 24);
        assert_eq!(height(50), 40);
        assert_eq!(height(6), 5);
        assert_eq!(height(4), 4);
        assert_eq!(height(1), 3);
        let layout = Layout::for_terminal((30, 100));
        assert_eq!((layout.inner_rows, layout.inner_cols), (22, 98));
    }

    fn visible_width(line: &str) -> usize {
        let mut plain = String::new();
        let mut in_escape = false;
        for c in line.chars() {
            match (in_escape, c) {
                (false, '\x1b') => in_escape = true,
                (true, c) if c.is_ascii_alphabetic() => in_escape = false,
                (true, _) => {}
                (false, c) => plain.push(c),
            }
        }
        display_width(&plain)
    }

    #[test]
    fn border_lines_are_exactly_as_wide_as_the_terminal() {
        for width in [3u16, 10, 24, 40, 80, 200] {
            for title in [
                "ls",
                "cargo test --workspace -- --nocapture",
                "日本語のコマンド",
            ] {
                let mut line = String::new();
                border_line(
                    &mut line,
                    '┌',
                    '┐',
                    &header_label(title, "running", width),
                    width,
                );
                assert_eq!(
                    visible_width(&line),
                    usize::from(width),
                    "{title} at {width}"
                );
            }
        }
        let mut line = String::new();
        border_line(&mut line, '┌', '┐', &header_label("make", "exit 0", 40), 40);
        assert!(line.contains(" Console make [exit 0] "), "{line}");
    }

    #[test]
    fn rows_are_drawn_cell_for_cell() {
        let mut parser = vt100::Parser::new(non_zero(2), non_zero(10), 0);
        parser.process("日本\x1b[31mred\x1b[0m!".as_bytes());
        let mut line = String::new();
        render_row(parser.screen(), 0, 10, &mut line);
        assert_eq!(visible_width(&line), 12, "{line:?}");
        assert!(line.starts_with("│日本\x1b[0;31mred\x1b[0m!"), "{line:?}");
    }
}
