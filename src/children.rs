//! agentbash's own helper processes (the init of a sandboxed command's PID namespace,
//! the sandbox's probes): a registry that teardown consults so it never stops, lists or
//! reaps them, and a reaper for the ones whose end need not be waited for. It sits at
//! the bottom of the layers: the sandbox (whose probes fork) and the processes layer
//! (whose spawner starts the inits) both record their helpers here.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

/// Set by the one-run CLI (see [`set_one_run`]).
static ONE_RUN: AtomicBool = AtomicBool::new(false);

/// This process runs one command and exits: helper children need not be reaped.
pub fn set_one_run() {
    ONE_RUN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`set_one_run`] was called: the one-run CLI, which exits after its run.
pub fn one_run() -> bool {
    ONE_RUN.load(std::sync::atomic::Ordering::Relaxed)
}

/// agentbash's own helper children, each with the command it serves (or -1): the init
/// processes of commands running in a PID namespace of their own, and the sandbox's
/// probes. Part of a run at most, never one of its members: teardown neither stops nor
/// lists them (what an init was handed is the run's), and nobody but their owner reaps
/// them.
static HELPERS: Mutex<Vec<(i32, i32)>> = Mutex::new(Vec::new());

pub(crate) fn helpers() -> std::sync::MutexGuard<'static, Vec<(i32, i32)>> {
    HELPERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Record init `init` of command `command` (see [`HELPERS`]).
pub fn register_init(init: i32, command: i32) {
    helpers().push((init, command));
}

/// Record a helper child of agentbash's that serves no command (a probe), which
/// [`reap_later`] then reaps.
pub fn register_helper(pid: i32) {
    helpers().push((pid, -1));
}

/// Forget helper `pid` once it is reaped.
pub fn forget_helper(pid: i32) {
    helpers().retain(|&(i, _)| i != pid);
}

/// Reap helper child `pid` (see [`HELPERS`]) once it has exited, off the caller's
/// path: a process that leaves namespaces behind exits only once the kernel has taken
/// them apart, which takes milliseconds.
pub fn reap_later(pid: i32) {
    if one_run() {
        // The one-run CLI exits in a moment: its zombies go with it, and a thread
        // that waits for them would only be one more thing to schedule.
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("agentbash-reap".into())
        .spawn(move || {
            let mut status = 0;
            // SAFETY: waitpid on a helper child of ours, which nobody else reaps.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            forget_helper(pid);
        });
    if spawned.is_err() {
        // No thread: wait here rather than leave a zombie.
        let mut status = 0;
        // SAFETY: as above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        forget_helper(pid);
    }
}
