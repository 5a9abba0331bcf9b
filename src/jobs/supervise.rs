//! The supervisor: one small detached agentbash process per job (`agentbash job
//! __supervise DIR`). It plans and spawns the job's command, owns its pipe or
//! pseudo-terminal, logs its output, decides readiness, enforces the ttl, answers
//! requests on `DIR/ctl.sock`, tears the job's tree down when it ends, and records
//! every state change in `DIR/state.json`. It holds no output in memory beyond one
//! read buffer, the current line (for `--ready`) and, for a PTY job, the screen.

use super::{JobRecord, JobSpec, ProcId, State, log::LogWriter, now_ms, write_record};
use crate::executor::{Read, pipe, poll_fds, read_some};
use crate::fsguard::{self, Links};
use crate::process::spawn::{self, ChildIo};
use crate::process::teardown::Teardown;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// What a caller asks a supervisor, one JSON line on `ctl.sock`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    Send { bytes: Vec<u8> },
    Screen,
    Stop { reason: String },
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Reply {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<String>>,
}

/// Ask the supervisor of the job in `dir`; a stop is answered once the job is down.
pub fn ask(dir: &Path, req: &Request) -> std::io::Result<Reply> {
    let mut s = UnixStream::connect(dir.join("ctl.sock"))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut line = serde_json::to_vec(req).map_err(std::io::Error::other)?;
    line.push(b'\n');
    s.write_all(&line)?;
    let mut answer = String::new();
    std::io::BufReader::new(s.take_bounded()).read_line(&mut answer)?;
    serde_json::from_str(&answer).map_err(std::io::Error::other)
}

trait TakeBounded {
    fn take_bounded(self) -> std::io::Take<UnixStream>;
}

impl TakeBounded for UnixStream {
    fn take_bounded(self) -> std::io::Take<UnixStream> {
        std::io::Read::take(self, 1 << 20)
    }
}

/// The word after `job` that starts a supervisor: `agentbash job __supervise DIR`.
const SUPERVISE: &str = "__supervise";

/// The job directory when this process was started as a supervisor (see [`spawn`]).
/// `main` asks before the command line is parsed, so the word is no subcommand of
/// clap's: `--help`, the man page and the completions never offer it.
pub fn requested() -> Option<std::path::PathBuf> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != "job" || args.next()? != SUPERVISE {
        return None;
    }
    let dir = args.next()?;
    args.next().is_none().then(|| dir.into())
}

/// Start the supervisor of the job in `dir` (detached: it outlives the caller).
/// `caller_end`, when given, becomes its stdin: the read end of a pipe the caller
/// holds the other end of (see [`JobSpec::stop_with_caller`]).
pub fn spawn(dir: &Path, cwd: &Path, caller_end: Option<OwnedFd>) -> std::io::Result<ProcId> {
    let exe = std::env::current_exe()?;
    let spec = crate::process::SpawnSpec {
        program: exe,
        args: vec!["job".into(), SUPERVISE.into(), dir.display().to_string()],
        // `vars()` would panic on a variable that is not UTF-8; such a one is left out.
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect(),
        cwd: cwd.to_path_buf(),
        detached: true,
        ..Default::default()
    };
    let stdin = caller_end.map_or(ChildIo::Null, ChildIo::Fd);
    let mut child = spawn::spawn(&spec, stdin, ChildIo::Null, ChildIo::Null)?;
    let pid = child.id() as i32;
    let id = ProcId::of(pid).unwrap_or(ProcId { pid, started: 0 });
    // Reaped when it ends, should this process (a server) still be there.
    std::thread::spawn(move || child.wait());
    Ok(id)
}

static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// The supervisor's life; returns its exit code.
pub fn main(dir: &Path) -> i32 {
    crate::process::signals::on_stop_signals(on_signal);
    let read =
        |name: &str| fsguard::read_text(&dir.join(name), super::MAX_RECORD_BYTES, Links::Refuse);
    let (Ok(spec), Ok(record)) = (read("spec.json"), read("state.json")) else {
        return crate::exit::FAILURE;
    };
    let (Ok(spec), Ok(mut record)) = (
        serde_json::from_str::<JobSpec>(&spec),
        serde_json::from_str::<JobRecord>(&record),
    ) else {
        return crate::exit::FAILURE;
    };
    // The command and its environment (values of `--env` included) were for us
    // alone: nothing else reads them back.
    let _ = std::fs::remove_file(dir.join("spec.json"));
    record.supervisor = ProcId::of(std::process::id() as i32);
    let Ok(mut log) = LogWriter::create(dir, record.log_max_bytes) else {
        return crate::exit::FAILURE;
    };
    match Supervisor::start(dir, &spec, &mut record, &mut log) {
        Ok(s) => s.run(&mut record, &mut log),
        // Masked already: the refusal may quote the command.
        Err((code, message)) => {
            let _ = log.append(format!("agentbash: {message}\n").as_bytes());
            record.state = State::Exited;
            record.exit_code = Some(code);
            record.reason = Some(message);
            record.ended_at_ms = Some(now_ms());
            let _ = write_record(dir, &record);
        }
    }
    let _ = std::fs::remove_file(dir.join("ctl.sock"));
    0
}

struct Supervisor<'d> {
    dir: &'d Path,
    child: spawn::Child,
    group: Option<crate::process::cgroup::RunGroup>,
    marker: String,
    output: Option<OwnedFd>,
    /// Where `send` writes: the PTY master or the stdin pipe.
    input: Option<OwnedFd>,
    screen: Option<vt100::Parser>,
    pidfd: Option<OwnedFd>,
    /// Our stdin when the job stops with its caller: end of file means it is gone.
    caller: Option<OwnedFd>,
    listener: UnixListener,
    ready_port: Option<u16>,
    ready_regex: Option<regex::Regex>,
    line: Vec<u8>,
    /// The last byte logged ended a line (a notice starts on a line of its own).
    at_line_start: bool,
    /// Network destinations the job's proxy refused that its output already names.
    refused: Vec<crate::sandbox::Refusal>,
    deadline: Option<Instant>,
    /// `jobs.idle_timeout` while the job is still a foreground run, until then.
    idle: Option<(crate::executor::idle::IdleClock, u64)>,
    grace: Duration,
    /// Masks the secrets (`output.redact`) in what is logged and shown, so that no
    /// reader of the job — `job output`, its screen, `job start`'s answer, the log on
    /// disk — sees them.
    redactor: Option<crate::output::redact::Redactor>,
    secrets: crate::output::redact::Secrets,
    /// Masked output, reused between reads.
    masked: Vec<u8>,
    launch: crate::pipeline::JobLaunch,
}

/// The longest partial line kept for `--ready` matching.
const MAX_LINE: usize = 8192;

impl<'d> Supervisor<'d> {
    fn start(
        dir: &'d Path,
        spec: &JobSpec,
        record: &mut JobRecord,
        log: &mut LogWriter,
    ) -> Result<Supervisor<'d>, (i32, String)> {
        let failed = |e: String| (crate::exit::FAILURE, e);
        let profile = crate::Lookup::new(spec.invoking_dir.clone())
            .load(&spec.profile)
            .map_err(|e| failed(e.to_string()))?;
        let ready_regex = spec
            .ready
            .regex
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| (crate::exit::USAGE, format!("--ready: {e}")))?;
        let req = super::run_request(spec, &profile);
        let launch =
            crate::pipeline::job_launch(&req, &profile).map_err(|r| (r.exit, r.message))?;
        let _ = std::fs::remove_file(dir.join("ctl.sock"));
        let listener = UnixListener::bind(dir.join("ctl.sock"))
            .map_err(|e| failed(format!("ctl.sock: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| failed(e.to_string()))?;
        let group = crate::process::cgroup::RunGroup::create(spec.idle.is_some());
        let spawned = if spec.pty {
            let (master, slave) = spawn::open_pty().map_err(failed)?;
            let pty = &profile.profile.pty;
            let _ = spawn::set_window_size(master.as_fd(), pty.rows, pty.cols);
            let child = spawn::spawn_on_tty(&launch.spec, group.as_ref(), slave);
            let input = master.try_clone().ok();
            let _ = crate::process::set_nonblocking(&master);
            let screen = vt100::Parser::new(non_zero(pty.rows), non_zero(pty.cols), 0);
            child.map(|c| (c, master, input, Some(screen)))
        } else {
            let (r, w) = pipe().map_err(|e| failed(e.to_string()))?;
            let w2 = w.try_clone().map_err(|e| failed(e.to_string()))?;
            let (stdin, input) = if spec.stdin {
                let (ir, iw) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                    .map_err(|e| failed(e.to_string()))?;
                (ChildIo::Fd(ir), Some(iw))
            } else {
                (ChildIo::Null, None)
            };
            spawn::spawn_in(
                &launch.spec,
                group.as_ref(),
                stdin,
                ChildIo::Fd(w),
                ChildIo::Fd(w2),
            )
            .map(|c| (c, r, input, None))
        };
        let (child, output, input, screen) = spawned.map_err(|e| {
            (
                if spawn::is_bad_cwd(&e) {
                    crate::exit::FAILURE
                } else {
                    127
                },
                format!("cannot start {}: {e}", launch.spec.program.display()),
            )
        })?;
        crate::process::cgroup::ensure_watchdog();
        let pid = child.id() as i32;
        record.pid = Some(pid);
        record.leader = ProcId::of(pid);
        record.marker = Some(launch.marker.clone());
        launch.secrets.mask_in_place(&mut record.command);
        launch.secrets.mask_in_place(&mut record.cwd);
        let waits = spec.ready.port.is_some() || ready_regex.is_some();
        record.ready = waits.then_some(false);
        record.state = State::Running;
        let sandbox = launch.sandbox();
        record.sandbox = sandbox.info().and_then(|i| serde_json::to_value(i).ok());
        record.notices.extend(sandbox.warnings());
        let _ = write_record(dir, record);
        let _ = log.written();
        let caller = if spec.stop_with_caller {
            std::io::stdin().as_fd().try_clone_to_owned().ok()
        } else {
            None
        };
        if let Some(fd) = &caller {
            let _ = crate::process::set_nonblocking(fd);
        }
        Ok(Supervisor {
            dir,
            caller,
            pidfd: child.exit_watch(),
            child,
            group,
            marker: launch.marker.clone(),
            output: Some(output),
            input,
            screen,
            listener,
            ready_port: spec.ready.port,
            ready_regex,
            line: Vec::new(),
            at_line_start: true,
            refused: Vec::new(),
            deadline: record.ttl.map(|t| Instant::now() + Duration::from_secs(t)),
            idle: spec.idle.map(|i| {
                (
                    crate::executor::idle::IdleClock::new(Duration::from_secs(i.secs)),
                    i.until_ms,
                )
            }),
            grace: Duration::from_millis(profile.profile.timeout.kill_grace_ms),
            redactor: launch.secrets.redactor(crate::output::redact::Form::Raw),
            secrets: launch.secrets.clone(),
            masked: Vec::new(),
            launch,
        })
    }

    fn waiting(&self, record: &JobRecord) -> bool {
        record.state == State::Running && record.ready == Some(false)
    }

    /// `jobs.idle_timeout` ran out while the job was still a foreground run.
    fn idle_expired(&mut self) -> Option<u64> {
        let (clock, until) = self.idle.as_mut()?;
        if now_ms() >= *until {
            self.idle = None;
            return None;
        }
        let (leader, marker, group) = (self.child.id() as i32, &self.marker, self.group.as_ref());
        clock
            .expired(|| {
                let teardown = Teardown::new(leader, marker).in_group(group);
                crate::executor::idle::cpu_time(&teardown, group)
            })
            .then(|| clock.limit().as_secs())
    }

    fn run(mut self, record: &mut JobRecord, log: &mut LogWriter) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut last_port_check = Instant::now() - Duration::from_secs(1);
        loop {
            let tick = if self.waiting(record) && self.ready_port.is_some() {
                Duration::from_millis(5)
            } else {
                Duration::from_millis(200)
            };
            let tick = self.deadline.map_or(tick, |d| {
                tick.min(d.saturating_duration_since(Instant::now()))
            });
            // Held back by the redactor: shown soon, once the output pauses.
            let holding = self.redactor.as_ref().is_some_and(|r| r.holds());
            let tick = if holding {
                tick.min(Duration::from_millis(20))
            } else {
                tick
            };
            poll_fds(
                &[
                    self.output.as_ref().map(|f| f.as_fd()),
                    Some(self.listener.as_fd()),
                    self.pidfd.as_ref().map(|f| f.as_fd()),
                    self.caller.as_ref().map(|f| f.as_fd()),
                ],
                tick,
            );
            if !self.read_output(&mut buf, record, log) && holding {
                self.flush_redactor(log, false);
            }
            self.report_refusals(log);
            if let Some(fd) = &self.caller
                && matches!(read_some(fd.as_fd(), &mut buf), Read::End)
            {
                self.end(record, log, State::Killed, Some("server exit".into()), None);
                return;
            }
            if self.waiting(record)
                && let Some(port) = self.ready_port
                && last_port_check.elapsed() >= Duration::from_millis(5)
            {
                last_port_check = Instant::now();
                let mut pids = vec![self.child.id() as i32];
                pids.extend(super::ready::descendants(self.child.id() as i32));
                if super::ready::owns_listener(&pids, port) && super::ready::accepts(port) {
                    self.became_ready(record);
                }
            }
            while let Ok((conn, _)) = self.listener.accept() {
                if let Some(stop) = self.answer(conn, record) {
                    self.end(record, log, State::Killed, Some(stop.0), Some(stop.1));
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.drain(&mut buf, record, log);
                use std::os::unix::process::ExitStatusExt;
                record.exit_code = status.code();
                record.signal = status
                    .signal()
                    .map(|s| crate::exit::signal_name(s).to_string());
                self.end(record, log, State::Exited, None, None);
                return;
            }
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                let ttl = record.ttl.unwrap_or(0);
                self.end(
                    record,
                    log,
                    State::TimedOut,
                    Some(format!("ttl ({ttl} s)")),
                    None,
                );
                return;
            }
            if let Some(secs) = self.idle_expired() {
                let why = Some(format!("idle ({secs} s)"));
                self.end(record, log, State::Killed, why, None);
                return;
            }
            let sig = STOP_SIGNAL.load(Ordering::SeqCst);
            if sig != 0 {
                let why = format!("supervisor got {}", crate::exit::signal_name(sig));
                self.end(record, log, State::Killed, Some(why), None);
                return;
            }
        }
    }

    fn became_ready(&self, record: &mut JobRecord) {
        record.state = State::Ready;
        record.ready = Some(true);
        let _ = write_record(self.dir, record);
    }

    /// Read what the job printed (bounded per turn); whether anything came.
    fn read_output(&mut self, buf: &mut [u8], record: &mut JobRecord, log: &mut LogWriter) -> bool {
        let mut got = false;
        // Bounded per turn, so requests and the ttl are served under a flood.
        for _ in 0..64 {
            let Some(fd) = self.output.as_ref() else {
                break;
            };
            match read_some(fd.as_fd(), buf) {
                Read::Bytes(n) => {
                    got = true;
                    self.took(&buf[..n], record, log);
                }
                Read::Empty => break,
                Read::End => {
                    self.output = None;
                    self.flush_redactor(log, true);
                    break;
                }
            }
        }
        got
    }

    /// A notice in the job's output for each destination its network proxy refused
    /// for the first time (the count goes on in the proxy's log, not in the output).
    fn report_refusals(&mut self, log: &mut LogWriter) {
        let Some(denied) = self.launch.network_denied() else {
            return;
        };
        let new: Vec<crate::sandbox::Refusal> = denied
            .iter()
            .filter(|r| {
                !self
                    .refused
                    .iter()
                    .any(|o| o.host == r.host && o.port == r.port && o.reason == r.reason)
            })
            .cloned()
            .collect();
        for notice in self.launch.network_notices(&new) {
            let line = if self.at_line_start {
                format!("{notice}\n")
            } else {
                format!("\n{notice}\n")
            };
            let _ = log.append(line.as_bytes());
            self.at_line_start = true;
        }
        self.refused = denied;
    }

    /// Log (and show on the screen) what the redactor held back: all of it at the
    /// end, or at a pause all but what may still start a secret.
    fn flush_redactor(&mut self, log: &mut LogWriter, end: bool) {
        let Some(r) = self.redactor.as_mut() else {
            return;
        };
        let mut out = std::mem::take(&mut self.masked);
        out.clear();
        if end {
            r.finish(&mut out);
        } else {
            r.flush_idle(&mut out);
        }
        self.logged(&out, log);
        self.masked = out;
    }

    /// Masked output into the log and the screen.
    fn logged(&mut self, bytes: &[u8], log: &mut LogWriter) {
        if bytes.is_empty() {
            return;
        }
        if log.append(bytes).is_err() {
            // A full disk: the job runs on; its output is lost, not its life.
        }
        if let Some(last) = bytes.last() {
            self.at_line_start = *last == b'\n';
        }
        if let Some(p) = self.screen.as_mut() {
            p.process(bytes);
        }
    }

    fn took(&mut self, bytes: &[u8], record: &mut JobRecord, log: &mut LogWriter) {
        if let Some((clock, _)) = self.idle.as_mut() {
            clock.printed();
        }
        match self.redactor.as_mut() {
            Some(r) => {
                let mut out = std::mem::take(&mut self.masked);
                out.clear();
                r.push(bytes, &mut out);
                self.logged(&out, log);
                self.masked = out;
            }
            None => self.logged(bytes, log),
        }
        if self.waiting(record)
            && let Some(re) = &self.ready_regex
        {
            let mut hit = false;
            for piece in bytes.split_inclusive(|&b| b == b'\n') {
                self.line.extend_from_slice(piece);
                let text = String::from_utf8_lossy(&self.line);
                if re.is_match(text.trim_end_matches(['\n', '\r'])) {
                    hit = true;
                }
                if self.line.ends_with(b"\n") || self.line.len() > MAX_LINE {
                    self.line.clear();
                }
            }
            if hit {
                self.line = Vec::new();
                self.became_ready(record);
            }
        }
    }

    /// What is left in the pipe after the leader exits: until EOF, 250 ms without
    /// output or 2 s in all (a background child holding the pipe cannot hang us).
    fn drain(&mut self, buf: &mut [u8], record: &mut JobRecord, log: &mut LogWriter) {
        let start = Instant::now();
        let mut last = Instant::now();
        while self.output.is_some()
            && last.elapsed() < Duration::from_millis(250)
            && start.elapsed() < Duration::from_secs(2)
        {
            poll_fds(
                &[self.output.as_ref().map(|f| f.as_fd())],
                Duration::from_millis(20),
            );
            if self.read_output(buf, record, log) {
                last = Instant::now();
            }
        }
    }

    /// Serve one request; a stop comes back as (reason, the connection to answer).
    fn answer(&mut self, conn: UnixStream, record: &JobRecord) -> Option<(String, UnixStream)> {
        let _ = conn.set_nonblocking(false);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let mut line = String::new();
        let Ok(reader) = conn.try_clone() else {
            return None;
        };
        if std::io::BufReader::new(std::io::Read::take(reader, 1 << 20))
            .read_line(&mut line)
            .is_err()
        {
            return None;
        }
        let reply = match serde_json::from_str::<Request>(&line) {
            Err(e) => Reply {
                error: Some(format!("bad request: {e}")),
                ..Reply::default()
            },
            Ok(Request::Stop { reason }) => return Some((reason, conn)),
            Ok(Request::Send { bytes }) => match self.input.as_ref() {
                None => Reply {
                    error: Some(
                        "takes no input: start it with --pty or --stdin to send to it".into(),
                    ),
                    ..Reply::default()
                },
                Some(fd) => match write_all(fd, &bytes) {
                    Ok(()) => Reply::default(),
                    Err(e) => Reply {
                        error: Some(format!("cannot take input: {e}")),
                        ..Reply::default()
                    },
                },
            },
            Ok(Request::Screen) => match &self.screen {
                None => Reply {
                    error: Some("has no screen: only a --pty job has one".into()),
                    ..Reply::default()
                },
                Some(p) => Reply {
                    rows: Some(
                        p.screen()
                            .rows(0, p.screen().size().1.get())
                            .map(|r| r.trim_end().to_string())
                            .collect(),
                    ),
                    ..Reply::default()
                },
            },
        };
        let _ = record;
        reply_to(conn, &reply);
        None
    }

    /// Tear the job's tree down and record how it ended.
    fn end(
        mut self,
        record: &mut JobRecord,
        log: &mut LogWriter,
        state: State,
        reason: Option<String>,
        answer: Option<UnixStream>,
    ) {
        let group = self.group.take();
        let teardown = Teardown::new(self.child.id() as i32, &self.marker).in_group(group.as_ref());
        let killing = matches!(state, State::Killed | State::TimedOut);
        teardown.terminate(self.grace, killing);
        if killing {
            let mut buf = vec![0u8; 64 * 1024];
            if let Ok(status) = self.child.wait() {
                use std::os::unix::process::ExitStatusExt;
                record.exit_code = status.code();
                record.signal = status
                    .signal()
                    .map(|s| crate::exit::signal_name(s).to_string());
            }
            self.drain(&mut buf, record, log);
        }
        teardown.reap_orphans();
        self.flush_redactor(log, true);
        self.report_refusals(log);
        record.state = state;
        record.reason = reason.map(|r| self.secrets.mask(&r).into_owned());
        record.ended_at_ms = Some(now_ms());
        // A write the sandbox refused, as the job's last output shows it.
        let tail = super::log::tail(
            self.dir,
            record.log_max_bytes,
            usize::MAX,
            super::DEFAULT_READ_BYTES,
        );
        let said = crate::output::sanitize::sanitize(&tail.bytes);
        let end = match (record.exit_code, record.signal.as_deref()) {
            (Some(c), _) => crate::executor::End::Exited(c),
            (None, Some(s)) => super::signal_number(s).map_or(
                crate::executor::End::MissingStatus,
                crate::executor::End::Signaled,
            ),
            (None, None) => crate::executor::End::MissingStatus,
        };
        let cwd = std::path::PathBuf::from(&record.cwd);
        record
            .notices
            .extend(self.launch.sandbox().denial_notice(&end, &said, &cwd));
        record.notices.extend(self.launch.sandbox().audit());
        let _ = write_record(self.dir, record);
        let _ = std::fs::remove_file(self.dir.join("ctl.sock"));
        if let Some(conn) = answer {
            reply_to(conn, &Reply::default());
        }
    }
}

fn non_zero(v: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(v).unwrap_or(std::num::NonZeroU16::MIN)
}

fn reply_to(mut conn: UnixStream, reply: &Reply) {
    if let Ok(mut line) = serde_json::to_vec(reply) {
        line.push(b'\n');
        let _ = conn.write_all(&line);
    }
}

/// Write all of `bytes` to a descriptor that may be non-blocking (bounded wait).
fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
