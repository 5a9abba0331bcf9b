//! The one place where agentbash's own exit codes live (README, Exit codes).
//!
//! A command that ran reports its own code; everything below is what agentbash
//! itself says when it did not get that far or had to step in.

/// Bad command-line usage (clap's own convention).
pub const USAGE: i32 = 2;
/// An interceptor rule blocked the command, or the guard refused it; nothing ran.
pub const BLOCKED: i32 = 77;
/// The command ran out of time and was torn down.
pub const TIMEOUT: i32 = 124;
/// agentbash failed: bad profile/rules, bad cwd, spawn or PTY failure, missing exit status.
pub const FAILURE: i32 = 125;
/// Base for "died of signal N" (128 + N).
pub const SIGNAL_BASE: i32 = 128;

/// Exit code for "killed by / interrupted by signal `sig`".
pub fn for_signal(sig: i32) -> i32 {
    SIGNAL_BASE + sig
}

/// The table printed in `--help`, the man page and the README.
pub const TABLE: &[(&str, &str)] = &[
    ("N", "the command ran and exited with N"),
    ("2", "usage error"),
    (
        "77",
        "blocked by an interceptor rule, or refused by the guard or the approval policy; nothing ran",
    ),
    (
        "124",
        "timed out, or stopped early: no output for jobs.idle_timeout, or waiting for a terminal it does not have",
    ),
    (
        "125",
        "agentbash failed: bad profile/rules, bad cwd, spawn or PTY failure, missing exit status",
    ),
    (
        "128+N",
        "the command died of signal N; agentbash interrupted: 129 HUP, 130 INT, 143 TERM",
    ),
];

/// `SIGKILL` for 9, etc.: the kernel's name of every signal the platform has,
/// `SIG<n>` for a number it has none for (the real-time signals).
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map_or_else(|_| format!("SIG{sig}"), |s| s.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_have_the_kernels_names_and_others_their_number() {
        for (sig, name) in [
            (libc::SIGHUP, "SIGHUP"),
            (libc::SIGKILL, "SIGKILL"),
            (libc::SIGPIPE, "SIGPIPE"),
            (libc::SIGXFSZ, "SIGXFSZ"),
            (libc::SIGSYS, "SIGSYS"),
            (libc::SIGWINCH, "SIGWINCH"),
            (40, "SIG40"),
            (0, "SIG0"),
        ] {
            assert_eq!(signal_name(sig), name, "{sig}");
        }
    }
}
