//! agentbash's signal handling as its commands see it: the handlers agentbash
//! installs are noted, so that a child between clone and exec puts back to the
//! default just those (and the signals a command expects live) instead of asking
//! about all 64; the stop signals routed to a handler; signals sent to a process or
//! group, never agentbash's own group.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The bit of signal `sig` in a mask of signals (bit 0: signal 1).
const fn signal_bit(sig: libc::c_int) -> u64 {
    1 << (sig - 1)
}

/// Put back to their default in every command, whatever agentbash inherited: the
/// signals a command expects to stop it, and SIGPIPE (which Rust's runtime ignores
/// in agentbash, and a pipeline needs).
const DEFAULT_IN_COMMAND: u64 = signal_bit(libc::SIGINT)
    | signal_bit(libc::SIGTERM)
    | signal_bit(libc::SIGHUP)
    | signal_bit(libc::SIGQUIT)
    | signal_bit(libc::SIGPIPE);

/// The signals this process handles with code of its own, which a child must not run
/// between clone and exec: those noted by [`note_handler`], and from the start the
/// SIGSEGV and SIGBUS handlers of Rust's runtime (its stack overflow report).
static HANDLED: AtomicU64 = AtomicU64::new(signal_bit(libc::SIGSEGV) | signal_bit(libc::SIGBUS));

/// Set once the program says every handler it installs is noted (the agentbash
/// binary); until then a child looks at every signal, as a program that links this
/// library may have handlers of its own.
static HANDLERS_NOTED: AtomicBool = AtomicBool::new(false);

/// Note that this process now handles `sig` with code of its own (a handler that
/// [`on_stop_signals`] or tokio installs): the children it spawns reset it.
pub fn note_handler(sig: libc::c_int) {
    if (1..=64).contains(&sig) {
        HANDLED.fetch_or(signal_bit(sig), Ordering::SeqCst);
    }
}

/// Declare that every signal handler this process installs goes through
/// [`note_handler`] (or [`on_stop_signals`]): its children then reset only those,
/// instead of asking the kernel about each of the 64 signals. For the agentbash
/// binary, which knows its handlers; a program linking the library need not call it.
pub fn every_handler_is_noted() {
    HANDLERS_NOTED.store(true, Ordering::SeqCst);
}

/// Back to the default for every signal agentbash handles (handlers are the
/// parent's code) and the ones a command expects live ([`DEFAULT_IN_COMMAND`]);
/// ignored ones agentbash inherited stay ignored; nothing blocked. Runs between clone
/// and exec.
///
/// # Safety
/// Only in a freshly cloned child, before exec.
pub(super) unsafe fn reset_signals() {
    let noted = HANDLERS_NOTED.load(Ordering::SeqCst);
    let handled = HANDLED.load(Ordering::SeqCst);
    // SAFETY: as `reset_signals_with`'s.
    unsafe { reset_signals_with(noted.then_some(handled)) }
}

/// [`reset_signals`] with the handled signals given (`None`: unknown, every one of
/// the 64 is asked for its disposition).
///
/// # Safety
/// Only in a freshly cloned child, before exec.
unsafe fn reset_signals_with(handled: Option<u64>) {
    // SAFETY: sigaction/signal/sigprocmask on valid stack data.
    unsafe {
        let reset = match handled {
            Some(handled) => handled | DEFAULT_IN_COMMAND,
            None => {
                let mut caught = DEFAULT_IN_COMMAND;
                let mut act: libc::sigaction = std::mem::zeroed();
                for sig in 1..=64 {
                    if libc::sigaction(sig, std::ptr::null(), &mut act) == 0
                        && act.sa_sigaction != libc::SIG_DFL
                        && act.sa_sigaction != libc::SIG_IGN
                    {
                        caught |= signal_bit(sig);
                    }
                }
                caught
            }
        };
        for sig in 1..=64 {
            if reset & signal_bit(sig) != 0 {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

pub(super) fn signal(pid: i32, sig: i32) {
    if pid > 1 {
        // SAFETY: kill(2) with a specific positive pid.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

pub(super) fn signal_group(pgid: i32, sig: i32) {
    let me = unsafe { libc::getpgrp() };
    // Never signal our own process group.
    if pgid > 1 && pgid != me {
        // SAFETY: kill(2) with a negative pid addresses that process group only.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// Route SIGINT, SIGTERM and SIGHUP to `handler`, which must be async-signal-safe
/// (an atomic store is). The one place agentbash installs its stop signals.
pub fn on_stop_signals(handler: extern "C" fn(libc::c_int)) {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        note_handler(sig);
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn a_handler(_: libc::c_int) {}

    /// What a child's dispositions are after `reset_signals_with(handled)`, when
    /// before it SIGUSR2 had a handler of ours, SIGWINCH was ignored (as inherited)
    /// and SIGPIPE ignored (as Rust's runtime does), and every signal was blocked:
    /// (SIGUSR2 default, SIGWINCH still ignored, SIGPIPE default, nothing blocked).
    fn dispositions_after_reset(handled: Option<u64>) -> (bool, bool, bool, bool) {
        // SAFETY: the forked child makes only async-signal-safe calls and _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above; every struct is zeroed on this stack.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = a_handler as *const () as usize;
                libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut());
                libc::signal(libc::SIGWINCH, libc::SIG_IGN);
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
                let mut all: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
                reset_signals_with(handled);
                let is = |sig, want| {
                    let mut now: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(sig, std::ptr::null(), &mut now);
                    now.sa_sigaction == want
                };
                let mut blocked: libc::sigset_t = std::mem::zeroed();
                libc::sigprocmask(libc::SIG_SETMASK, std::ptr::null(), &mut blocked);
                let none_blocked = (1..32).all(|sig| libc::sigismember(&blocked, sig) == 0);
                let code = i32::from(is(libc::SIGUSR2, libc::SIG_DFL))
                    | i32::from(is(libc::SIGWINCH, libc::SIG_IGN)) << 1
                    | i32::from(is(libc::SIGPIPE, libc::SIG_DFL)) << 2
                    | i32::from(none_blocked) << 3;
                libc::_exit(code);
            }
        }
        assert!(pid > 0, "fork");
        let mut status = 0;
        // SAFETY: waiting for the child just forked.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "{status:#x}");
        let code = libc::WEXITSTATUS(status);
        (code & 1 != 0, code & 2 != 0, code & 4 != 0, code & 8 != 0)
    }

    /// A child resets the handlers of its parent (their code is the parent's) and
    /// the signals a command expects live, keeps what agentbash inherited ignored,
    /// and blocks nothing. Told which signals the parent handles, it resets those
    /// alone, without asking about all 64; not told (a program linking the library,
    /// with handlers of its own), it asks about every one.
    #[test]
    fn a_child_resets_the_parents_handlers_and_keeps_inherited_ignores() {
        let usr2 = signal_bit(libc::SIGUSR2);
        assert_eq!(dispositions_after_reset(None), (true, true, true, true));
        assert_eq!(
            dispositions_after_reset(Some(usr2)),
            (true, true, true, true)
        );
        // Only what is noted: a handler nobody noted is left (exec resets it, but a
        // signal between clone and exec would run it).
        assert_eq!(dispositions_after_reset(Some(0)), (false, true, true, true));
        // Noted from the start: the runtime's handlers; then whatever is noted.
        note_handler(libc::SIGUSR2);
        let handled = HANDLED.load(Ordering::SeqCst);
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGUSR2] {
            assert_ne!(handled & signal_bit(sig), 0, "signal {sig} not noted");
        }
    }
}
