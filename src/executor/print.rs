//! Print mode: the command writes to one pipe (stdout and stderr interleaved as
//! produced; with `--stderr separate`, stderr to a second one), read by a single poll
//! loop that also watches the deadline, the cancel token and the child's exit. After
//! the shell exits, output is drained until EOF, or 250 ms without output, or 2 s in
//! all, so a background job holding a pipe open never makes the run hang.

use super::idle::{self, IdleClock};
use super::{
    DRAIN_IDLE, DRAIN_TOTAL, EVENT_INTERVAL, End, ExecError, ExecOutcome, Read, Watch, pipe,
    poll_fds, read_some,
};
use crate::config::profile::Background;
use crate::output::sink::OutputSink;
use crate::process::SpawnSpec;
use crate::process::cgroup::RunGroup;
use crate::process::spawn::{self, ChildIo};
use crate::process::teardown::Teardown;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

const READ_BUF: usize = 256 * 1024;

pub struct PrintRequest<'a> {
    pub spawn: &'a SpawnSpec,
    pub stdin_inherit: bool,
    pub marker: &'a str,
    pub watch: Watch<'a>,
    /// A stdout-only lift: stderr gets a pipe of its own, read into the same sink as
    /// stderr ([`OutputSink::push_stderr`]), so the lifted limit views stdout alone.
    pub split_stderr: bool,
}

/// Read what is available (up to a budget, so the loop keeps checking the clock)
/// into `sink`, as stdout or (`stderr`) as stderr. Returns (bytes read, eof).
fn read_available(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    sink: &mut OutputSink,
    stderr: bool,
) -> (usize, bool) {
    let mut total = 0;
    while total < 8 * READ_BUF && !sink.pending_full() && (stderr || sink.wants_more()) {
        match read_some(fd, buf) {
            Read::Bytes(n) if stderr => {
                sink.push_stderr(&buf[..n]);
                total += n;
            }
            Read::Bytes(n) => {
                sink.push(&buf[..n]);
                total += n;
            }
            Read::Empty => return (total, false),
            Read::End => return (total, true),
        }
    }
    (total, false)
}

/// A stdout-only lift's stderr pipe: read into the output's own sink.
struct SplitStderr {
    fd: Option<OwnedFd>,
    eof: bool,
}

impl SplitStderr {
    fn open_fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().filter(|_| !self.eof).map(|f| f.as_fd())
    }

    /// Read what is available into `out` (the output's pipe and sink).
    fn read(&mut self, buf: &mut [u8], out: &mut Pipe<'_>) -> usize {
        let Some(fd) = self.fd.as_ref().filter(|_| !self.eof) else {
            return 0;
        };
        let (n, eof) = read_available(fd.as_fd(), buf, out.sink, true);
        self.eof = eof;
        n
    }
}

/// `--stderr separate`: the command's stderr, read from a pipe of its own into
/// `sink`; `on_output` gets its coalesced live text.
pub struct Stderr<'a> {
    pub sink: &'a mut OutputSink,
    pub on_output: &'a mut dyn FnMut(&str),
}

/// One output pipe of the command, and where what is read from it goes.
struct Pipe<'a> {
    /// Dropped (closing our end of the pipe) when a head limit is filled and the
    /// command is stopped like `| head` would stop it (see `OutputSink::wants_more`).
    fd: Option<OwnedFd>,
    eof: bool,
    sink: &'a mut OutputSink,
    on_output: &'a mut dyn FnMut(&str),
    last_emit: Instant,
}

impl<'a> Pipe<'a> {
    fn new(fd: OwnedFd, sink: &'a mut OutputSink, on_output: &'a mut dyn FnMut(&str)) -> Self {
        Pipe {
            fd: Some(fd),
            eof: false,
            sink,
            on_output,
            last_emit: Instant::now() - EVENT_INTERVAL,
        }
    }

    /// The descriptor to wait on, while there is more to read.
    fn open_fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().filter(|_| !self.eof).map(|f| f.as_fd())
    }

    /// Send the live text when it is due (at once with `now_anyway`).
    fn emit(&mut self, now: Instant, now_anyway: bool) {
        if self.sink.has_pending()
            && (now_anyway
                || self.sink.pending_full()
                || now.duration_since(self.last_emit) >= EVENT_INTERVAL)
        {
            if let Some(t) = self.sink.take_pending() {
                (self.on_output)(&t);
            }
            self.last_emit = now;
        }
    }

    /// Read what is available; returns the bytes read.
    fn read(&mut self, buf: &mut [u8]) -> usize {
        let Some(fd) = self.fd.as_ref().filter(|_| !self.eof) else {
            return 0;
        };
        let (n, eof) = read_available(fd.as_fd(), buf, self.sink, false);
        self.eof = eof;
        if eof {
            // A lifted `| tail` prints once its input ends.
            self.sink.stdout_ended();
        }
        n
    }
}

/// Run `req` in print mode, feeding `sink`; `on_output` gets coalesced live text.
/// With `stderr`, the command's stderr has a pipe of its own (one poll loop reads
/// both); without, stdout and stderr share one pipe, interleaved as produced.
pub fn run(
    req: &PrintRequest<'_>,
    sink: &mut OutputSink,
    on_output: &mut dyn FnMut(&str),
    stderr: Option<Stderr<'_>>,
) -> Result<ExecOutcome, ExecError> {
    let (r, w) = pipe()?;
    let err_pipe = (stderr.is_some() || req.split_stderr)
        .then(pipe)
        .transpose()?;
    let (err_r, err_w) = match err_pipe {
        Some((er, ew)) => (Some(er), ew),
        None => (None, w.try_clone()?),
    };
    let stdin = if req.stdin_inherit {
        ChildIo::Inherit
    } else {
        ChildIo::Null
    };
    // Dropped last (declared first): removed once nothing of the run is in it.
    let group = RunGroup::create(req.watch.idle.is_some());
    let child = spawn::spawn_in(
        req.spawn,
        group.as_ref(),
        stdin,
        ChildIo::Fd(w),
        ChildIo::Fd(err_w),
    )
    .map_err(|err| ExecError::Spawn {
        program: req.spawn.program.clone(),
        err,
    })?;
    // pipes[0] is the output; pipes[1], when there is one, stderr.
    let mut pipes = vec![Pipe::new(r, sink, on_output)];
    let mut split = None;
    match (err_r, stderr) {
        (Some(fd), Some(e)) => pipes.push(Pipe::new(fd, e.sink, e.on_output)),
        (Some(fd), None) => {
            split = Some(SplitStderr {
                fd: Some(fd),
                eof: false,
            })
        }
        (None, _) => {}
    }
    let mut run = PrintRun::new(req, child, group.as_ref(), pipes, split);
    while !run.step() {}
    Ok(run.finish())
}

/// A print-mode run from its spawn to its end: what the poll loop watches (the
/// pipes, the child, the clocks) and what it found out, one step at a time.
struct PrintRun<'r, 'q, 'g, 'p> {
    req: &'r PrintRequest<'q>,
    child: spawn::Child,
    leader: i32,
    pidfd: Option<OwnedFd>,
    group: Option<&'g RunGroup>,
    teardown: Teardown<'g>,
    start: Instant,
    deadline: Instant,
    buf: Vec<u8>,
    pipes: Vec<Pipe<'p>>,
    split: Option<SplitStderr>,
    closed_early: bool,
    status: Option<std::process::ExitStatus>,
    exited_at: Option<Instant>,
    last_output: Instant,
    idle: Option<IdleClock>,
    stopped: Option<End>,
    killed: Vec<crate::process::KilledProcess>,
    watchdog_due: bool,
    terminal_wait: Option<super::terminal_wait::TerminalWait>,
}

impl<'r, 'q, 'g, 'p> PrintRun<'r, 'q, 'g, 'p> {
    fn new(
        req: &'r PrintRequest<'q>,
        child: spawn::Child,
        group: Option<&'g RunGroup>,
        pipes: Vec<Pipe<'p>>,
        split: Option<SplitStderr>,
    ) -> Self {
        let leader = child.id() as i32;
        let pidfd = child.exit_watch();
        let teardown = Teardown::new(leader, req.marker).in_group(group);
        let start = Instant::now();
        let watchdog_due = teardown.grouped();
        PrintRun {
            req,
            child,
            leader,
            pidfd,
            group,
            teardown,
            start,
            deadline: start + req.watch.timeout,
            buf: vec![0u8; READ_BUF],
            pipes,
            split,
            closed_early: false,
            status: None,
            exited_at: None,
            last_output: Instant::now(),
            idle: req.watch.idle.map(IdleClock::new),
            stopped: None,
            killed: Vec::new(),
            watchdog_due,
            // With agentbash's own stdin the command may well be read from a person.
            terminal_wait: (!req.stdin_inherit).then(super::terminal_wait::TerminalWait::new),
        }
    }

    /// One turn of the loop; `true` once the output is drained after the exit.
    fn step(&mut self) -> bool {
        let now = Instant::now();
        if self.watchdog_due
            && now.duration_since(self.start) >= crate::process::cgroup::WATCHDOG_AFTER
        {
            crate::process::cgroup::ensure_watchdog();
            self.watchdog_due = false;
        }
        for p in self.pipes.iter_mut() {
            p.emit(now, false);
        }
        self.check_exit(now);
        if self.stopped.is_none()
            && self.status.is_none()
            && let Some(end) = self.stop_reason(now)
        {
            self.stop(end);
        }
        if self.drained(now) {
            return true;
        }
        self.wait_and_read(now);
        false
    }

    /// Note the child's exit, if it has exited.
    fn check_exit(&mut self, now: Instant) {
        if self.status.is_some() {
            return;
        }
        match self.child.try_wait() {
            Ok(Some(s)) => {
                self.status = Some(s);
                self.exited_at = Some(now);
            }
            Ok(None) => {}
            Err(_) => {
                self.exited_at = Some(now);
                self.stopped.get_or_insert(End::MissingStatus);
            }
        }
    }

    /// Why the running command must be stopped now, if it must.
    fn stop_reason(&mut self, now: Instant) -> Option<End> {
        let (teardown, group) = (&self.teardown, self.group);
        if let Some(sig) = self.req.watch.cancel.reason() {
            Some(End::Cancelled(sig))
        } else if now >= self.deadline {
            Some(End::TimedOut)
        } else if let Some(clock) = self.idle.as_mut()
            && clock.expired(|| idle::cpu_time(teardown, group))
        {
            Some(End::Idle(clock.limit().as_secs()))
        } else {
            let last_output = self.last_output;
            self.terminal_wait
                .as_mut()
                .and_then(|w| w.check(now, last_output, || teardown.members()))
                .map(End::NeedsTerminal)
        }
    }

    /// Stop the command for `end`, reading while the tree winds down so nothing is
    /// lost or blocked.
    fn stop(&mut self, end: End) {
        self.stopped = Some(end);
        self.killed = terminate_while_draining(
            &self.teardown,
            self.req.watch.kill_grace,
            &mut self.pipes,
            self.split.as_mut(),
            &mut self.buf,
        );
        self.status = self.child.wait().ok();
        self.exited_at = Some(Instant::now());
        for p in self.pipes.iter_mut() {
            p.emit(Instant::now(), true);
        }
    }

    /// After the exit: every pipe at EOF, or quiet long enough, or drained long enough.
    fn drained(&self, now: Instant) -> bool {
        let Some(at) = self.exited_at else {
            return false;
        };
        let idle = now.duration_since(self.last_output);
        let eof = self.pipes.iter().all(|p| p.open_fd().is_none())
            && self.split.as_ref().is_none_or(|e| e.open_fd().is_none());
        eof || idle >= DRAIN_IDLE || now.duration_since(at) >= DRAIN_TOTAL
    }

    /// Wait for output (or the exit, or the next thing due) and read it.
    fn wait_and_read(&mut self, now: Instant) {
        let open: Vec<Option<BorrowedFd<'_>>> = self
            .pipes
            .iter()
            .map(Pipe::open_fd)
            .chain(self.split.iter().map(SplitStderr::open_fd))
            .filter(Option::is_some)
            .collect();
        if open.is_empty() {
            if self.exited_at.is_none() {
                // The command closed its output but is still running: wait for it.
                let cap = if self.pidfd.is_some() {
                    EVENT_INTERVAL
                } else {
                    Duration::from_millis(5)
                };
                poll_fds(
                    &[self.pidfd.as_ref().map(|f| f.as_fd())],
                    cap.min(self.deadline.saturating_duration_since(now)),
                );
            }
            return;
        }
        let mut wait = if self.exited_at.is_some() {
            Duration::from_millis(10)
        } else {
            self.deadline
                .saturating_duration_since(now)
                .min(EVENT_INTERVAL)
        };
        for p in self.pipes.iter().filter(|p| p.sink.has_pending()) {
            wait = wait.min(EVENT_INTERVAL.saturating_sub(now.duration_since(p.last_emit)));
        }
        if self.watchdog_due {
            let due = crate::process::cgroup::WATCHDOG_AFTER
                .saturating_sub(now.duration_since(self.start));
            wait = wait.min(due.max(Duration::from_millis(1)));
        }
        let pid_watch = if self.status.is_none() {
            self.pidfd.as_ref().map(|f| f.as_fd())
        } else {
            None
        };
        let mut fds = open;
        fds.push(pid_watch);
        poll_fds(&fds, wait);
        let mut n = 0;
        // Stderr first: what it wrote before stdout ended is shown before a
        // lifted tail's lines, as bash's terminal would show it.
        if let Some(e) = self.split.as_mut() {
            n += e.read(&mut self.buf, &mut self.pipes[0]);
        }
        for p in self.pipes.iter_mut() {
            n += p.read(&mut self.buf);
        }
        if n > 0 {
            self.last_output = Instant::now();
            if let Some(clock) = self.idle.as_mut() {
                clock.printed();
            }
        }
        let out = &mut self.pipes[0];
        if out.open_fd().is_some() && !out.sink.wants_more() {
            // Writers now get SIGPIPE (or EPIPE), exactly as with `| head`.
            out.fd = None;
            self.closed_early = true;
            out.sink.stopped_reading();
        }
    }

    /// The run's end: the last output sent, what is left of the tree dealt with, and
    /// the end named.
    fn finish(mut self) -> ExecOutcome {
        drop(self.split.take());
        for p in self.pipes.iter_mut() {
            p.fd = None;
            // What the sanitizer and redactors held back is output too: stream it now.
            p.sink.end_input();
            p.emit(Instant::now(), true);
        }
        drop(std::mem::take(&mut self.pipes));
        let (teardown, group) = (&self.teardown, self.group);
        let mut background_killed = Vec::new();
        // Descendants left behind are reparented to us (we are their subreaper), so
        // with no child at all (one `waitid`) there is nothing to look for: no cgroup
        // read, no /proc scan.
        let in_group = || teardown.grouped() && group.is_some_and(|g| !g.pids().is_empty());
        if crate::process::procfs::any_child()
            && (in_group() || crate::process::procfs::has_children())
        {
            if self.req.watch.background == Background::Kill && !teardown.others().is_empty() {
                background_killed = teardown.terminate(self.req.watch.kill_grace, false);
            }
            teardown.reap_orphans();
        }
        let leader = self.leader;
        if self.stopped.is_some() {
            background_killed.extend(self.killed.into_iter().filter(|k| k.pid != leader));
        }
        let end = match self.stopped {
            Some(e) => e,
            None => match self.status {
                // We closed the pipe as the lifted `| head` would have: the pipeline's
                // status is then head's, 0, however the producer took the broken pipe
                // (SIGPIPE, or an EPIPE error and an exit code of its own).
                Some(_) if self.closed_early => End::Exited(0),
                Some(s) => exit_to_end(s),
                None => End::MissingStatus,
            },
        };
        ExecOutcome {
            end,
            background_killed,
        }
    }
}

fn terminate_while_draining(
    teardown: &Teardown<'_>,
    grace: Duration,
    pipes: &mut [Pipe<'_>],
    mut split: Option<&mut SplitStderr>,
    buf: &mut [u8],
) -> Vec<crate::process::KilledProcess> {
    std::thread::scope(|s| {
        let h = s.spawn(|| teardown.terminate_run(grace));
        while !h.is_finished() {
            let fds: Vec<Option<BorrowedFd<'_>>> = pipes
                .iter()
                .map(Pipe::open_fd)
                .chain(split.iter().map(|e| e.open_fd()))
                .collect();
            poll_fds(&fds, Duration::from_millis(10));
            if let Some(e) = split.as_mut() {
                e.read(buf, &mut pipes[0]);
            }
            for p in pipes.iter_mut() {
                p.read(buf);
            }
        }
        h.join().unwrap_or_default()
    })
}

pub fn exit_to_end(s: std::process::ExitStatus) -> End {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => End::Exited(c),
        (None, Some(sig)) => End::Signaled(sig),
        _ => End::MissingStatus,
    }
}
