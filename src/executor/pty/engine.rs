//! The PTY engine: one command in a pseudo-terminal, driven by a single-threaded
//! `poll(2)` loop that reads the output into the run's sink, writes keys, fed stdin
//! and query answers, watches the deadline, the cancel token and `jobs.idle_timeout`,
//! tears the session down when it must, drains what is left without waiting on a
//! background job and applies the background policy, ending, like every executor,
//! with an `ExecOutcome`. The viewport, the keys and the queries it serves live in
//! their own rooms.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::sys::termios::{LocalFlags, SpecialCharacterIndices, tcgetattr};
use nix::unistd::Pid;

use super::PtyRun;
use super::console::{Console, install_panic_hook};
use super::keys::KeyInput;
use super::queries::{CursorEstimate, Query, QueryScanner};
use crate::config::kill_key::KillKey;
use crate::config::profile::Background;
use crate::executor::idle::{self, IdleClock};
use crate::executor::{DRAIN_IDLE, DRAIN_TOTAL, EVENT_INTERVAL, End, ExecOutcome, Watch};
use crate::output::sink::OutputSink;
use crate::process::cgroup::{self, RunGroup};
use crate::process::spawn::{self, Child};
use crate::process::teardown::Teardown;
use crate::process::{KilledProcess, SpawnSpec};

/// Largest single read from the master; big reads keep syscalls per byte low.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per wake-up before the deadline and the token are looked at again.
const READS_PER_WAKE: usize = 64;
/// Longest sleep of the loop: cancellation is noticed within this.
const TICK: Duration = Duration::from_millis(20);
/// Input waiting for the PTY beyond which agentbash's stdin is not read.
const MAX_PENDING_INPUT: usize = 64 * 1024;
/// How long teardown waits to reap the killed leader before a thread takes over.
const REAP_WAIT: Duration = Duration::from_millis(500);

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

/// Runs `req.spawn` in a PTY, in `group` when there is one, until it exits, times
/// out, goes quiet, is cancelled or is killed with the kill key. What the program
/// writes goes to `sink` in order and in large chunks, its live text to `on_output`
/// (coalesced), and what the run leaves running meets `req.watch.background`.
pub(super) fn run(
    req: &PtyRun<'_>,
    kill_key: KillKey,
    group: Option<&RunGroup>,
    sink: &mut OutputSink,
    on_output: &mut dyn FnMut(&str),
) -> Result<ExecOutcome, PtyError> {
    let deadline = Instant::now() + req.watch.timeout;
    let mut console = if req.interactive {
        install_panic_hook();
        Some(Console::enter(req.title, kill_key)?)
    } else {
        None
    };
    let (rows, cols) = match &console {
        Some(console) => console.inner_size(),
        None => (req.rows.max(1), req.cols.max(1)),
    };
    let pty = match Pty::spawn(req.spawn, group, rows, cols) {
        Ok(pty) => pty,
        Err(error) => {
            // The viewport is already up: leave it saying so, not "running".
            if let Some(console) = &mut console {
                console.finish("failed");
            }
            return Err(error);
        }
    };
    let run = Run {
        req,
        group,
        deadline,
        marker: run_marker(req.spawn),
        sink,
        on_output,
        last_emit: Instant::now(),
        keys: KeyInput::new(kill_key),
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
        idle: req
            .watch
            .idle
            .filter(|_| !req.interactive)
            .map(IdleClock::new),
        output_done: false,
        started: Instant::now(),
        watchdog_due: group.is_some_and(RunGroup::joined),
        pty,
        console,
    };
    // Headless with nothing to feed: nothing is typed into the terminal. A program
    // that reads it waits, as at a terminal nobody types into, until the timeout
    // or `jobs.idle_timeout` ends it; it never gets an end of input it did not ask for.
    run.execute()
}

/// Why the main phase of the loop stopped.
#[derive(Clone, Copy)]
enum Stop {
    /// The command ended by itself (an exit, a signal): nothing to stop.
    Ended(End),
    /// The run is stopped (timeout, quiet, cancel, kill key): its whole tree is
    /// torn down, and the run ended so.
    Stopped(End),
    /// The sink wanted no more (a lifted `| head -n N` was filled): the command is
    /// stopped as `| head` would stop it.
    ReaderDone,
}

struct Run<'r, 'o> {
    req: &'r PtyRun<'r>,
    group: Option<&'r RunGroup>,
    deadline: Instant,
    /// The run's marker value, so teardown also finds descendants that left the session.
    marker: String,
    sink: &'o mut OutputSink,
    on_output: &'o mut dyn FnMut(&str),
    last_emit: Instant,
    /// The sink wants no more of the output.
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
    /// Headless `jobs.idle_timeout`: quiet means neither printing nor using CPU.
    idle: Option<IdleClock>,
    started: Instant,
    /// The cgroup watchdog is yet to be started (see `cgroup::ensure_watchdog`).
    watchdog_due: bool,
}

impl Run<'_, '_> {
    /// The loop, the stop, the drain and the final frame; then the transcript is
    /// finished and the background policy applied.
    fn execute(mut self) -> Result<ExecOutcome, PtyError> {
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
        let cancelled_before_drain = self.req.watch.cancel.reason().is_some();
        let (end, killed) = match stop {
            Stop::Ended(end) => (end, Vec::new()),
            Stop::Stopped(end) => (end, self.teardown()),
            // What the stop kills is the pipeline itself, not something left behind;
            // like `| head`, the pipeline ended because its reader had enough.
            Stop::ReaderDone => {
                self.teardown();
                (End::Exited(0), Vec::new())
            }
        };
        self.drain(cancelled_before_drain);
        if let Some(console) = &mut self.console {
            console.finish(&end_label(stop));
        }
        self.finish_transcript(matches!(stop, Stop::ReaderDone));
        let leader = self.pty.leader;
        // The terminal goes away (the master closes) before what the command left
        // running is looked for.
        drop(self.pty);
        let background_killed =
            settle_background(leader, &self.marker, self.group, &self.req.watch, killed);
        Ok(ExecOutcome {
            end,
            background_killed,
        })
    }

    /// The main phase: until the command exits or the run must be stopped.
    fn pump(&mut self) -> Result<Stop, PtyError> {
        let mut next_size_check = Instant::now();
        loop {
            if let Some(signal) = self.req.watch.cancel.reason() {
                return Ok(Stop::Stopped(End::Cancelled(signal)));
            }
            let now = Instant::now();
            if now >= self.deadline {
                return Ok(Stop::Stopped(End::TimedOut));
            }
            let (leader, group, marker) = (self.pty.leader, self.group, self.marker.as_str());
            if let Some(clock) = self.idle.as_mut()
                && clock.expired(|| {
                    idle::cpu_time(&Teardown::new(leader, marker).in_group(group), group)
                })
            {
                return Ok(Stop::Stopped(End::Idle(clock.limit().as_secs())));
            }
            if self.watchdog_due && now.duration_since(self.started) >= cgroup::WATCHDOG_AFTER {
                cgroup::ensure_watchdog();
                self.watchdog_due = false;
            }
            if let Some(end) = self.try_reap()? {
                return Ok(Stop::Ended(end));
            }
            let mut wait = TICK.min(self.deadline - now);
            if let Some(console) = &mut self.console {
                if now >= next_size_check {
                    if let Some((rows, cols)) = console.follow_resize() {
                        self.pty.resize(rows, cols);
                    }
                    next_size_check = now + TICK;
                }
                let app_cursor = console.application_cursor();
                if self.keys.expire(now, app_cursor, &mut self.to_child) {
                    return Ok(Stop::Stopped(End::Killed));
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
                return Ok(Stop::Stopped(End::Killed));
            }
            if self.output_done {
                return Ok(Stop::ReaderDone);
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
        if let Some(clock) = self.idle.as_mut() {
            clock.printed();
        }
        self.record(chunk);
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

    /// The chunk into the sink, its live text out when due (at most one event per
    /// [`EVENT_INTERVAL`] unless much is waiting); notes when the sink wants no more.
    fn record(&mut self, chunk: &[u8]) {
        self.sink.push(chunk);
        if (self.sink.pending_full() || self.last_emit.elapsed() >= EVENT_INTERVAL)
            && let Some(text) = self.sink.take_pending()
        {
            (self.on_output)(&text);
            self.last_emit = Instant::now();
        }
        if !self.sink.wants_more() {
            self.output_done = true;
        }
    }

    /// After the last read: a reader that stopped early is recorded as such, and
    /// what the sanitizer and redactors held back goes into the live stream.
    fn finish_transcript(&mut self, reader_done: bool) {
        if reader_done {
            self.sink.stopped_reading();
        }
        self.sink.end_input();
        if let Some(text) = self.sink.take_pending() {
            (self.on_output)(&text);
        }
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
        let cursor = match &self.console {
            Some(console) => console.cursor(),
            None => self.estimate.position(),
        };
        query.answer(cursor, &mut self.to_child);
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
            let app_cursor = console.application_cursor();
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
    fn try_reap(&mut self) -> Result<Option<End>, PtyError> {
        let Some(child) = &mut self.pty.child else {
            return Ok(None);
        };
        let status = child.try_wait().map_err(|source| PtyError::Wait {
            pid: self.pty.leader,
            source,
        })?;
        let end = match status.map(|s| (s.code(), s.signal())) {
            Some((Some(code), _)) => End::Exited(code),
            Some((None, Some(signal))) => End::Signaled(signal),
            _ => return Ok(None),
        };
        self.pty.child = None;
        Ok(Some(end))
    }

    /// Kills the PTY session's whole tree while still reading its output (so
    /// TERM handlers that print do not block on a full PTY), then reaps.
    fn teardown(&mut self) -> Vec<KilledProcess> {
        let leader = self.pty.leader;
        let grace = self.req.watch.kill_grace;
        let marker = self.marker.clone();
        let marker = marker.as_str();
        let group = self.group;
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
            if !cancelled_before && self.req.watch.cancel.reason().is_some() {
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

/// The viewport header's last word on the run.
fn end_label(stop: Stop) -> String {
    let end = match stop {
        Stop::ReaderDone => return "stopped (head limit)".to_string(),
        Stop::Ended(end) | Stop::Stopped(end) => end,
    };
    match end {
        End::Exited(code) => format!("exit {code}"),
        End::Signaled(signal) => format!("killed by {}", crate::exit::signal_name(signal)),
        End::TimedOut => "timed out".to_string(),
        End::Idle(_) => "stopped (no output)".to_string(),
        End::Cancelled(_) | End::Killed => "killed".to_string(),
        // Print mode's ends, never the engine's.
        End::NeedsTerminal(_) => "stopped (needs a terminal)".to_string(),
        End::MissingStatus => "exit status unknown".to_string(),
    }
}

/// The background policy, once the command has ended: with `kill`, what it left
/// running in its session, its cgroup or under its marker is torn down. Returns
/// every process the run had to kill besides the command itself.
fn settle_background(
    leader: i32,
    marker: &str,
    group: Option<&RunGroup>,
    watch: &Watch<'_>,
    killed: Vec<KilledProcess>,
) -> Vec<KilledProcess> {
    let teardown = Teardown::new(leader, marker).in_group(group);
    let mut background_killed: Vec<KilledProcess> =
        killed.into_iter().filter(|k| k.pid != leader).collect();
    // As in print mode: with no child at all (one `waitid`) there is nothing to find:
    // no cgroup read, no /proc scan.
    let in_group = || teardown.grouped() && group.is_some_and(|g| !g.pids().is_empty());
    if watch.background == Background::Kill
        && crate::process::procfs::any_child()
        && (in_group() || crate::process::procfs::has_children())
    {
        background_killed.extend(teardown.terminate(watch.kill_grace, true));
    }
    teardown.reap_orphans();
    background_killed
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
        crate::process::set_nonblocking(&master)
            .map_err(io_error("making the pseudo-terminal non-blocking"))?;
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
    Teardown::new(leader, marker)
        .in_group(group)
        .terminate_run(grace)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::output::sink::SinkConfig;
    use crate::process::CancelToken;

    fn headless(spawn: &SpawnSpec) -> Result<ExecOutcome, PtyError> {
        let cancel = CancelToken::new();
        let req = PtyRun {
            spawn,
            cols: 80,
            rows: 24,
            interactive: false,
            title: "test",
            kill_key: "esc",
            feed_stdin: false,
            watch: Watch {
                timeout: Duration::from_secs(10),
                kill_grace: Duration::from_millis(200),
                // Nothing of this test process's other children is looked for.
                background: Background::Keep,
                cancel: &cancel,
                idle: None,
            },
        };
        let config = SinkConfig {
            max_bytes: 1 << 20,
            ..Default::default()
        };
        let mut sink = OutputSink::new(config, None, false);
        run(&req, KillKey::Esc, None, &mut sink, &mut |_| {})
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
            End::Exited(0)
        );
    }
}
