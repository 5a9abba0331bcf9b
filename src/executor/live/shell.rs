//! One live shell: its bash program, its start, its end, what its commands may leave
//! behind, and one command run through it.

use crate::executor::{ExecError, pipe};
use crate::output::sink::OutputSink;
use crate::process::cgroup::{RunGroup, watchdog_pid};
use crate::process::spawn::{self, Child, ChildIo};
use crate::process::teardown::Teardown;
use crate::process::{KilledProcess, SpawnSpec};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::HashSet;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::command::{LiveRun, RunResult, Watched};
use super::scanner::read_available;
use super::{LiveJob, READ_BUF, ShellKey};

pub(super) enum RunError {
    /// The shell was gone before it took the command.
    Dead,
    Io(std::io::Error),
}

pub(super) struct LiveShell {
    pub(super) key: ShellKey,
    pub(super) child: Child,
    pub(super) pid: i32,
    pub(super) marker: String,
    /// Marks this shell's completion lines (never stored in the shell next to \x1e).
    pub(super) token: String,
    /// Commands sent so far (the next one is `sent + 1`).
    pub(super) sent: u64,
    pub(super) ctl: std::io::PipeWriter,
    pub(super) out: OwnedFd,
    pub(super) pidfd: Option<OwnedFd>,
    /// For a session shell, the session generation its memory matches.
    pub(super) generation: Option<u64>,
    pub(super) dead: bool,
    /// The last command was stateless and the session shell saved nothing.
    pub(super) unchanged: bool,
    /// The read buffer, kept between commands.
    pub(super) buf: Vec<u8>,
    /// How the shell itself ended during the last command (the command killed it),
    /// for that command's notice.
    pub(super) ended: Option<String>,
    /// The shell's cgroup (dropped after the shell is stopped): everything its
    /// commands start is in it.
    pub(super) group: Option<Arc<RunGroup>>,
    /// The sandbox the shell was started in; its TMPDIR is removed with the shell.
    pub(super) sandbox: Option<Arc<crate::sandbox::Confinement>>,
}

/// The bash program a live shell runs. Markers are `\x1e<token><kind><n> <status>`:
/// kind `s` (command `n` done; without a session followed by the subshell's pid),
/// `x` (done, and the session's shell is exiting), `c` (subshell `n` has exited).
fn shell_program(job: &LiveJob<'_>, token: &str) -> String {
    // Plain `exec`, never `builtin exec`: only the former makes redirections stick.
    let mut t = format!("exec {{__agentbash_out}}>&1\n__agentbash_t={token}\n__agentbash_i=0\n");
    t.push_str(&job.setup);
    let read =
        "IFS= builtin read -r -d '' __agentbash_d && IFS= builtin read -r -d '' __agentbash_c";
    if job.key.session.is_some() {
        // The EXIT trap saves the session and says the shell is exiting only in the
        // shell itself: a fork of it stopped by teardown before it ran its program
        // runs the trap too.
        t.push_str(
            "__agentbash_opts=\"$(builtin set +o; builtin shopt -p)\"\n\
             __agentbash_optsig=\"$-:$SHELLOPTS:$BASHOPTS\"\n\
             __agentbash_live_exit() {\n  __agentbash_session_save \"$1\" \"$__agentbash_v\"\n  builtin printf '\\036%sx%s %s\\n' \"$__agentbash_t\" \"$__agentbash_i\" \"$1\" >&\"$__agentbash_out\"\n}\n\
             builtin trap '{ __agentbash_e=$?; builtin [ \"$BASHPID\" = \"$$\" ] && __agentbash_live_exit \"$__agentbash_e\"; } 2>/dev/null' EXIT\n",
        );
        t.push_str(&format!(
            "while {read} && IFS= builtin read -r -d '' __agentbash_v; do\n"
        ));
        t.push_str(
            "  __agentbash_i=$((__agentbash_i+1))\n\
             \x20 __agentbash_k=s\n\
             \x20 case $__agentbash_v in q*) if { builtin declare -F -- \"${__agentbash_v#q}\" || builtin alias -- \"${__agentbash_v#q}\"; } >/dev/null 2>&1; then __agentbash_v=1; else __agentbash_k=u; fi;; esac\n\
             \x20 builtin [ \"$PWD\" = \"$__agentbash_d\" ] || { __agentbash_k=s; builtin cd -- \"$__agentbash_d\"; } && builtin eval \"$__agentbash_c\" </dev/null\n\
             \x20 { __agentbash_s=$?\n",
        );
        // The command may have defined a function named like a builtin used below.
        t.push_str("    ");
        t.push_str(&crate::shell::dump::unshadow(None));
        t.push_str(
            "    builtin [ $__agentbash_k = u ] || __agentbash_session_save \"$__agentbash_s\" \"$__agentbash_v\"; builtin [ \"$-:$SHELLOPTS:$BASHOPTS\" = \"$__agentbash_optsig\" ] || builtin eval \"$__agentbash_opts\"; builtin [ ${#BASH_ALIASES[@]} = 0 ] || builtin shopt -q expand_aliases || { builtin shopt -s expand_aliases; __agentbash_opts=\"$__agentbash_opts\"$'\\n'\"builtin shopt -s expand_aliases\"; __agentbash_optsig=\"$-:$SHELLOPTS:$BASHOPTS\"; }; builtin trap '{ __agentbash_e=$?; builtin [ \"$BASHPID\" = \"$$\" ] && __agentbash_live_exit \"$__agentbash_e\"; } 2>/dev/null' EXIT; } 2>/dev/null\n\
             \x20 exec 1>&\"$__agentbash_out\" 2>&1\n\
             \x20 builtin printf '\\036%s%s%s %s\\n' \"$__agentbash_t\" \"$__agentbash_k\" \"$__agentbash_i\" \"$__agentbash_s\" >&\"$__agentbash_out\"\n\
             done\n",
        );
    } else {
        // A plain program (see `session::plain_command_word`) cannot change the shell:
        // it runs in the shell itself, which then puts back its directory and clears
        // the command hash table (marker `u`). Anything else runs in a subshell so
        // nothing it changes leaks into the next caller's command (marker `s`, with
        // the subshell's pid, then `c` when the subshell has exited).
        // A fork of the subshell that teardown stops before it has run its program
        // (`cmd &` under load) still holds the subshell's EXIT trap and runs it: the
        // trap prints its marker only in the subshell itself, and its stderr is
        // /dev/null, where bash 5.2 writes `wait_for: No record of process N` from
        // such a fork (tests/it/reliability.rs
        // `a_fork_stopped_before_its_program_prints_nothing_and_is_named_plainly`).
        t.push_str(&format!(
            "__agentbash_r=\"$AGENTBASH_RUN_ID\" __agentbash_h=\"$PWD\" __agentbash_o=\"${{OLDPWD-}}\" __agentbash_os=\"${{OLDPWD+set}}\"\n\
             while {read} && IFS= builtin read -r -d '' __agentbash_v; do\n\
             \x20 __agentbash_i=$((__agentbash_i+1)) __agentbash_k=s\n\
             \x20 case $__agentbash_v in q*) {{ builtin declare -F -- \"${{__agentbash_v#q}}\" || builtin alias -- \"${{__agentbash_v#q}}\" || __agentbash_k=u; }} >/dev/null 2>&1;; esac\n\
             \x20 if builtin [ $__agentbash_k = u ]; then\n\
             \x20   builtin export AGENTBASH_RUN_ID=\"$__agentbash_r.$__agentbash_i\"\n\
             \x20   builtin cd -- \"$__agentbash_d\" && builtin eval \"$__agentbash_c\" </dev/null\n\
             \x20   __agentbash_s=$?\n\
             \x20   {{ builtin export AGENTBASH_RUN_ID=\"$__agentbash_r\"; builtin cd -- \"$__agentbash_h\"; builtin hash -r\n\
             \x20     if builtin [ \"$__agentbash_os\" = set ]; then OLDPWD=$__agentbash_o; else builtin unset OLDPWD; fi; }} 2>/dev/null\n\
             \x20   builtin printf '\\036%su%s %s\\n' \"$__agentbash_t\" \"$__agentbash_i\" \"$__agentbash_s\" >&\"$__agentbash_out\"\n\
             \x20 else\n\
             \x20 (\n\
             \x20   builtin export AGENTBASH_RUN_ID=\"$__agentbash_r.$__agentbash_i\"; __agentbash_w=$BASHPID\n\
             \x20   builtin trap '{{ __agentbash_s=$?; {unshadow}builtin [ \"$BASHPID\" = \"$__agentbash_w\" ] && builtin printf \"\\036%ss%s %s %s\\n\" \"$__agentbash_t\" \"$__agentbash_i\" \"$__agentbash_s\" \"$BASHPID\" >&\"$__agentbash_out\"; }} 2>/dev/null' EXIT\n\
             \x20   builtin cd -- \"$__agentbash_d\" && builtin eval \"$__agentbash_c\" </dev/null\n\
             \x20 )\n\
             \x20 builtin printf '\\036%sc%s %s\\n' \"$__agentbash_t\" \"$__agentbash_i\" \"$?\" >&\"$__agentbash_out\"\n\
             \x20 fi\n\
             done\n",
            unshadow = crate::shell::dump::unshadow(None),
        ));
    }
    t
}

pub(super) fn describe_status(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by {}", crate::exit::signal_name(sig)),
        _ => "unknown status".into(),
    }
}

/// Children of this process (every thread's).
fn own_children() -> Option<Vec<i32>> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let c = std::fs::read_to_string(t.path().join("children")).ok()?;
        out.extend(
            c.split_ascii_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                .filter(|&p| p != watchdog_pid()),
        );
    }
    Some(out)
}

/// Has agentbash a child that is none of the pool's shells (an orphan of a command,
/// handed to us as the subreaper)? True when that cannot be told.
fn orphans_handed_to_us(pool_pids: &Mutex<HashSet<i32>>) -> bool {
    let Some(ours) = own_children() else {
        return true;
    };
    let Ok(known) = pool_pids.lock() else {
        return true;
    };
    ours.iter().any(|p| !known.contains(p))
}

impl LiveShell {
    /// Name what a command's teardown stopped: a process that is still a copy of
    /// this shell (a subshell of the command, or a fork caught before it ran its
    /// program) would otherwise be listed by the shell's whole internal program.
    pub(super) fn name_subshells(&self, killed: &mut [KilledProcess]) {
        let own = format!(
            "{} --norc --noprofile -c exec {{__agentbash_out}}>&1",
            self.key.shell.display()
        );
        for k in killed.iter_mut().filter(|k| k.command.starts_with(&own)) {
            k.command = format!("{} (a subshell of the command)", self.key.shell.display());
        }
    }

    /// The log of the network proxy this shell's namespace goes out through, when its
    /// sandbox has a network allowlist.
    pub(super) fn network_log(&self) -> Option<Arc<crate::sandbox::NetworkLog>> {
        self.sandbox
            .as_ref()
            .and_then(|c| c.prepared.proxy())
            .map(|plan| plan.log.clone())
    }

    /// What the proxy refused so far, to tell a run's refusals from earlier ones.
    pub(super) fn network_mark(&self) -> Option<Vec<crate::sandbox::Refusal>> {
        self.network_log().map(|log| log.snapshot())
    }

    pub(super) fn spawn(job: &LiveJob<'_>) -> Result<LiveShell, ExecError> {
        let (out_r, out_w) = pipe()?;
        let out_w2 = out_w.try_clone()?;
        let (ctl_r, ctl_w) = std::io::pipe()?;
        let marker = format!("live-{}", crate::ids::nonce());
        let token = crate::ids::nonce();
        let mut env: Vec<(String, String)> = job
            .start_env
            .iter()
            .filter(|(k, _)| k.as_str() != crate::process::RUN_MARKER)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push((crate::process::RUN_MARKER.to_string(), marker.clone()));
        let spec = SpawnSpec {
            program: job.key.shell.clone(),
            args: vec![
                "--norc".into(),
                "--noprofile".into(),
                "-c".into(),
                shell_program(job, &token),
            ],
            env,
            cwd: job.cwd.to_path_buf(),
            limits: job.limits,
            sandbox: job.sandbox.clone(),
            detached: false,
            keep_background: false,
        };
        // The shell outlives its commands; any of them may have an idle clock.
        let group = RunGroup::create(true).map(Arc::new);
        if group.is_some() {
            crate::process::cgroup::ensure_watchdog();
        }
        let child = spawn::spawn_in(
            &spec,
            group.as_deref(),
            ChildIo::Fd(ctl_r.into()),
            ChildIo::Fd(out_w),
            ChildIo::Fd(out_w2),
        )
        .map_err(|err| ExecError::Spawn {
            program: spec.program.clone(),
            err,
        })?;
        let pid = child.id() as i32;
        Ok(LiveShell {
            key: job.key.clone(),
            pidfd: child.exit_watch(),
            child,
            pid,
            marker,
            token,
            sent: 0,
            ctl: ctl_w,
            out: out_r,
            generation: job.generation.map(|(want, _)| want),
            dead: false,
            unchanged: false,
            buf: Vec::new(),
            ended: None,
            group,
            sandbox: job.sandbox.clone(),
        })
    }

    /// `Some(how)` when the shell has exited.
    pub(super) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(s)) => Some(describe_status(s)),
            Ok(None) => None,
            Err(_) => Some("status unknown".into()),
        }
    }

    /// Stop the shell and everything it started.
    pub(super) fn kill(&mut self) {
        if !self.dead {
            self.teardown().terminate(Duration::from_millis(200), true);
            let _ = self.child.wait();
            self.dead = true;
        }
    }

    /// The shell's whole tree: its group when it joined one, else found by marker.
    pub(super) fn teardown(&self) -> Teardown<'_> {
        Teardown::new(self.pid, &self.marker).in_group(self.group.as_deref())
    }

    /// The shell's group, when its members are the shell's.
    pub(super) fn joined_group(&self) -> Option<&RunGroup> {
        self.group.as_deref().filter(|g| g.joined())
    }

    /// Could anything but the shell itself be left from the last command? A cheap
    /// check first (the shell's children, then ours), the full scan only if needed.
    pub(super) fn maybe_has_others(&self, pool_pids: &Mutex<HashSet<i32>>) -> bool {
        let kids = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.pid));
        match kids {
            Ok(k) if k.trim().is_empty() => {}
            _ => return true,
        }
        orphans_handed_to_us(pool_pids)
    }

    /// Could command subshell `pid` have left processes behind? It has children as it
    /// exits, or orphans were handed to us; the full scan only if so.
    pub(super) fn subshell_may_have_left(
        &self,
        pid: Option<i32>,
        pool_pids: &Mutex<HashSet<i32>>,
    ) -> bool {
        let Some(pid) = pid else { return true };
        match std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
            Ok(k) if !k.trim().is_empty() => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return true,
        }
        orphans_handed_to_us(pool_pids)
    }

    /// Stop what command subshell `child` left running: its children, orphans of this
    /// shell's commands handed to us, and anything carrying the command's marker —
    /// never the shell itself or the subshell it forked for the next command.
    pub(super) fn stop_leftovers(
        &self,
        child: Option<i32>,
        command_marker: &str,
        grace: Duration,
    ) -> Vec<KilledProcess> {
        let me = std::process::id() as i32;
        let needle = format!("{}={command_marker}", crate::process::RUN_MARKER).into_bytes();
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut roots = Vec::new();
        for pid in rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        {
            if pid == self.pid || Some(pid) == child {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(close) = stat.rfind(')') else {
                continue;
            };
            let f: Vec<&str> = stat[close + 1..].split_ascii_whitespace().take(4).collect();
            let (Some(state), Some(ppid), Some(sid)) = (f.first(), f.get(1), f.get(3)) else {
                continue;
            };
            if *state == "Z" {
                continue;
            }
            let (ppid, sid) = (
                ppid.parse::<i32>().unwrap_or(0),
                sid.parse::<i32>().unwrap_or(0),
            );
            let orphan = (ppid == me || Some(ppid) == self.child.init_pid()) && sid == self.pid;
            let marked = || {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_slice()))
            };
            if Some(ppid) == child || orphan || marked() {
                roots.push(pid);
            }
        }
        let mut killed = Vec::new();
        for root in roots {
            killed.extend(Teardown::new(root, command_marker).terminate(grace, true));
        }
        killed.sort_unstable_by_key(|k| k.pid);
        killed.dedup_by_key(|k| k.pid);
        killed
    }

    /// Run one command. Ok((end, background killed, shell still usable)).
    pub(super) fn run(
        &mut self,
        job: &LiveJob<'_>,
        sink: &mut OutputSink,
        on_output: &mut dyn FnMut(&str),
        pool_pids: &Mutex<HashSet<i32>>,
    ) -> Result<RunResult, RunError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(READ_BUF, 0);
        let r = self.run_with(&mut buf, job, sink, on_output, pool_pids);
        self.buf = buf;
        r
    }

    fn run_with(
        &mut self,
        buf: &mut [u8],
        job: &LiveJob<'_>,
        sink: &mut OutputSink,
        on_output: &mut dyn FnMut(&str),
        pool_pids: &Mutex<HashSet<i32>>,
    ) -> Result<RunResult, RunError> {
        self.unchanged = false;
        // Whatever a kept background job printed since the last command is not ours.
        read_available(self.out.as_fd(), &mut *buf, usize::MAX, |_| {});
        let seq = self.send(job)?;
        let group = self.group.clone();
        self.ended = None;
        let mut run = LiveRun::new(
            self,
            buf,
            job,
            sink,
            on_output,
            pool_pids,
            group.as_deref(),
            seq,
        );
        let exit_status = match run.watch() {
            Watched::Marked => None,
            Watched::Stopped(end, killed) => return Ok(run.stopped(end, killed)),
            Watched::ShellExited(s) => match run.shell_died(s) {
                Some(ended) => return Ok(ended),
                None => Some(s),
            },
        };
        Ok(run.conclude(exit_status))
    }

    /// Write command `job`'s frame (directory, command, what to save) to the shell.
    /// Returns the command's sequence number.
    fn send(&mut self, job: &LiveJob<'_>) -> Result<u64, RunError> {
        let mut frame = Vec::with_capacity(job.script.len() + job.cwd.as_os_str().len() + 2);
        frame.extend_from_slice(job.cwd.as_os_str().as_bytes());
        frame.push(0);
        frame.extend_from_slice(job.script.as_bytes());
        frame.push(0);
        match (job.save_definitions, job.stateless_word) {
            (true, _) => frame.extend_from_slice(b"1\0"),
            (false, Some(w)) => {
                frame.push(b'q');
                frame.extend_from_slice(w.as_bytes());
                frame.push(0);
            }
            (false, None) => frame.extend_from_slice(b"0\0"),
        }
        if let Err(e) = self.ctl.write_all(&frame).and_then(|_| self.ctl.flush()) {
            return Err(if e.kind() == std::io::ErrorKind::BrokenPipe {
                RunError::Dead
            } else {
                RunError::Io(e)
            });
        }
        self.sent += 1;
        Ok(self.sent)
    }
}

impl Drop for LiveShell {
    fn drop(&mut self) {
        if !self.dead {
            // The shell's own process group (it is a session leader).
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
            if let Some(g) = self.joined_group() {
                g.kill();
            }
            let _ = self.child.wait();
        }
    }
}
