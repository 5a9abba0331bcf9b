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
    let group = RunGroup::create();
    let mut child = spawn::spawn_in(
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
    let leader = child.id() as i32;
    let pidfd = child.exit_watch();
    let teardown = Teardown::new(leader, req.marker).in_group(group.as_ref());
    let start = Instant::now();
    let deadline = start + req.watch.timeout;
    let mut buf = vec![0u8; READ_BUF];
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
    let mut closed_early = false;
    let mut status: Option<std::process::ExitStatus> = None;
    let mut exited_at: Option<Instant> = None;
    let mut last_output = Instant::now();
    let mut idle = req.watch.idle.map(IdleClock::new);
    let mut stopped: Option<End> = None;
    let mut killed = Vec::new();
    let mut watchdog_due = teardown.grouped();
    // With agentbash's own stdin the command may well be read from a person.
    let mut terminal_wait = (!req.stdin_inherit).then(super::terminal_wait::TerminalWait::new);

    loop {
        let now = Instant::now();
        if watchdog_due && now.duration_since(start) >= crate::process::cgroup::WATCHDOG_AFTER {
            crate::process::cgroup::ensure_watchdog();
            watchdog_due = false;
        }
        for p in pipes.iter_mut() {
            p.emit(now, false);
        }
        if status.is_none() {
            match child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    exited_at = Some(now);
                }
                Ok(None) => {}
                Err(_) => {
                    exited_at = Some(now);
                    stopped.get_or_insert(End::MissingStatus);
                }
            }
        }
        if stopped.is_none() && status.is_none() {
            let reason = if let Some(sig) = req.watch.cancel.reason() {
                Some(End::Cancelled(sig))
            } else if now >= deadline {
                Some(End::TimedOut)
            } else if let Some(clock) = idle.as_mut()
                && clock.expired(|| idle::cpu_time(&teardown, group.as_ref()))
            {
                Some(End::Idle(clock.limit().as_secs()))
            } else {
                terminal_wait
                    .as_mut()
                    .and_then(|w| w.check(now, last_output, || teardown.members()))
                    .map(End::NeedsTerminal)
            };
            if let Some(end) = reason {
                stopped = Some(end);
                // Keep reading while the tree winds down so nothing is lost or blocked.
                killed = terminate_while_draining(
                    &teardown,
                    req.watch.kill_grace,
                    &mut pipes,
                    split.as_mut(),
                    &mut buf,
                );
                status = child.wait().ok();
                exited_at = Some(Instant::now());
                for p in pipes.iter_mut() {
                    p.emit(Instant::now(), true);
                }
            }
        }
        if let Some(at) = exited_at {
            let idle = now.duration_since(last_output);
            let eof = pipes.iter().all(|p| p.open_fd().is_none())
                && split.as_ref().is_none_or(|e| e.open_fd().is_none());
            if eof || idle >= DRAIN_IDLE || now.duration_since(at) >= DRAIN_TOTAL {
                break;
            }
        }
        let open: Vec<Option<BorrowedFd<'_>>> = pipes
            .iter()
            .map(Pipe::open_fd)
            .chain(split.iter().map(SplitStderr::open_fd))
            .filter(Option::is_some)
            .collect();
        if !open.is_empty() {
            let mut wait = if exited_at.is_some() {
                Duration::from_millis(10)
            } else {
                deadline.saturating_duration_since(now).min(EVENT_INTERVAL)
            };
            for p in pipes.iter().filter(|p| p.sink.has_pending()) {
                wait = wait.min(EVENT_INTERVAL.saturating_sub(now.duration_since(p.last_emit)));
            }
            if watchdog_due {
                let due = crate::process::cgroup::WATCHDOG_AFTER
                    .saturating_sub(now.duration_since(start));
                wait = wait.min(due.max(Duration::from_millis(1)));
            }
            let pid_watch = if status.is_none() {
                pidfd.as_ref().map(|f| f.as_fd())
            } else {
                None
            };
            let mut fds = open;
            fds.push(pid_watch);
            poll_fds(&fds, wait);
            let mut n = 0;
            // Stderr first: what it wrote before stdout ended is shown before a
            // lifted tail's lines, as bash's terminal would show it.
            if let Some(e) = split.as_mut() {
                n += e.read(&mut buf, &mut pipes[0]);
            }
            for p in pipes.iter_mut() {
                n += p.read(&mut buf);
            }
            if n > 0 {
                last_output = Instant::now();
                if let Some(clock) = idle.as_mut() {
                    clock.printed();
                }
            }
            let out = &mut pipes[0];
            if out.open_fd().is_some() && !out.sink.wants_more() {
                // Writers now get SIGPIPE (or EPIPE), exactly as with `| head`.
                out.fd = None;
                closed_early = true;
                out.sink.stopped_reading();
            }
        } else if exited_at.is_none() {
            // The command closed its output but is still running: wait for it.
            let cap = if pidfd.is_some() {
                EVENT_INTERVAL
            } else {
                Duration::from_millis(5)
            };
            poll_fds(
                &[pidfd.as_ref().map(|f| f.as_fd())],
                cap.min(deadline.saturating_duration_since(now)),
            );
        }
    }
    drop(split);
    for p in pipes.iter_mut() {
        p.fd = None;
        // What the sanitizer and redactors held back is output too: stream it now.
        p.sink.end_input();
        p.emit(Instant::now(), true);
    }
    drop(pipes);
    let mut background_killed = Vec::new();
    // Descendants left behind are reparented to us (we are their subreaper), so
    // with no child at all (one `waitid`) there is nothing to look for: no cgroup
    // read, no /proc scan.
    let in_group = || teardown.grouped() && group.as_ref().is_some_and(|g| !g.pids().is_empty());
    if crate::process::procfs::any_child() && (in_group() || crate::process::procfs::has_children())
    {
        if req.watch.background == Background::Kill && !teardown.others().is_empty() {
            background_killed = teardown.terminate(req.watch.kill_grace, false);
        }
        teardown.reap_orphans();
    }
    if stopped.is_some() {
        background_killed.extend(killed.into_iter().filter(|k| k.pid != leader));
    }
    let end = match stopped {
        Some(e) => e,
        None => match status {
            // We closed the pipe as the lifted `| head` would have: the pipeline's
            // status is then head's, 0, however the producer took the broken pipe
            // (SIGPIPE, or an EPIPE error and an exit code of its own).
            Some(_) if closed_early => End::Exited(0),
            Some(s) => exit_to_end(s),
            None => End::MissingStatus,
        },
    };
    Ok(ExecOutcome {
        end,
        background_killed,
    })
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
