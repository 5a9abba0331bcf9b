//! The `agentbash` binary: parse arguments, call the library, map to an exit code.
//!
//! With glibc on Linux the binary brings its own C `main` instead of Rust's runtime
//! start (`no_main`): that start asks for the main thread's stack bounds (glibc reads
//! and parses `/proc/self/maps` for it), maps a signal stack and installs stack
//! overflow handlers — about 0.1 ms of every run on a loaded 2-core VM, for a start-up
//! that is paid on every command (docs/BENCHMARKS.md). What of it agentbash relies on
//! is done here: fds 0–2 opened on /dev/null when closed, SIGPIPE ignored, standard
//! output flushed at the end, a panic exiting with 101. What is given up: the message
//! Rust prints when the main thread overflows its stack (it then dies of SIGSEGV),
//! and the main thread's name in a panic message. Elsewhere (musl, where Rust reads
//! the arguments only in its own start) and in the test build of this file (whose
//! `main` is the test harness's) the ordinary `main` runs.
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

/// The program itself; the exit code.
fn run() -> i32 {
    agentbash::process::spawn::make_non_dumpable();
    // Every handler the binary installs is noted (`on_stop_signals`, the MCP
    // server's tokio handlers): its commands reset just those.
    agentbash::process::signals::every_handler_is_noted();
    if let Some(dir) = agentbash::jobs::supervise::requested() {
        return agentbash::jobs::supervise::main(&dir).clamp(0, 255);
    }
    let cli = agentbash::cli::Cli::parse_args();
    agentbash::commands::dispatch(cli).clamp(0, 255)
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    use std::io::Write;
    // What Rust's start does first: a closed standard fd would otherwise be reused by
    // the next file opened, and output meant for it would land there.
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three pollfd; a zero timeout never blocks.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0 {
        for p in fds.iter().filter(|p| p.revents & libc::POLLNVAL != 0) {
            // SAFETY: a NUL-terminated literal; the lowest free fd is the closed one.
            let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if fd != p.fd {
                // Nothing sane to run with: as Rust's start does.
                std::process::abort();
            }
        }
    }
    // SAFETY: setting a disposition; Rust's start ignores SIGPIPE the same way, and
    // writes to a closed pipe then fail with EPIPE, which agentbash handles.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = std::panic::catch_unwind(run).unwrap_or(101);
    // `std::process::exit` flushes standard output; returning from `main` does not.
    let _ = std::io::stdout().flush();
    code
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(test))))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run() as u8)
}
