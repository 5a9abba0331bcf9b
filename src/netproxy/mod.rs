//! The network allowlist's proxy: the only way out of a sandboxed command's network
//! namespace when `[sandbox] network` is a list (docs/CONFIG.md, "The network
//! allowlist"; docs/ARCHITECTURE.md).
//!
//! The namespace's init listens on `127.0.0.1:PORT` inside the namespace and hands the
//! socket to agentbash (see `sandbox::loopback`); the spawner starts a [`Proxy`] on it,
//! owned by the command's `Child`, so it lives exactly as long as the namespace's
//! command (a run, a live shell, a job's supervisor) and ends with it. The command's
//! environment points `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` there.
//!
//! One port speaks three protocols, told apart by the first byte: SOCKS5 (`0x05`),
//! SOCKS4 (`0x04`, refused), else HTTP — `CONNECT host:port` (what every HTTPS client
//! sends through a proxy) and plain-HTTP requests in absolute form (`GET http://…`).
//! Each destination is judged by the list ([`crate::sandbox::Allowlist`]), resolved
//! here (the namespace has no resolver: names fail fast inside), and its addresses
//! judged again ([`crate::sandbox::is_local`]) before agentbash connects from the
//! host's namespace. Refusals are answered `403 Forbidden` (SOCKS: "connection not
//! allowed by ruleset") and counted in the run's [`crate::sandbox::NetworkLog`].
//!
//! Parts, and why:
//! - **Lazy.** [`Proxy::start`] only spawns a thread that sleeps in `poll(2)` on the
//!   listening socket; the tokio runtime is built when the first connection arrives.
//!   A run that opens no socket pays for a thread it never wakes (README, "The
//!   sandbox", measures it).
//! - **One current-thread tokio runtime per proxy.** Connections are tasks: a slow or
//!   stuck client holds its own task, never the others; another run has another
//!   proxy. tokio was already a dependency (the MCP server).
//! - **A minimal request-head parser, not hyper.** A forwarding proxy needs the
//!   request line and a few headers to route; the rest (the TLS inside `CONNECT`, the
//!   body, the response) is relayed as bytes. hyper would parse and re-serialize every
//!   response and pull in its HTTP machinery for nothing; the head parser is 200
//!   lines, unit-tested, bounded (64 KiB, 30 s). Plain HTTP is forwarded with
//!   `Connection: close`, one request per connection, so no response needs parsing.
//! - **Bounded.** At most 512 connections at once (more wait in the backlog); the
//!   bytes of a connection move by `splice(2)` through a 256 KiB pipe per direction
//!   (a 32 KiB buffer per direction when no descriptor is left for the pipes); the
//!   request head within 30 s.
//!
//! Tests name hosts without DNS through `AGENTBASH_TEST_PROXY_HOSTS`
//! (`name=address,…`), honoured only in debug builds (see [`test_hosts`]).

mod http;
mod serve;
mod socks;
#[cfg(test)]
mod tests;

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sandbox::ProxyPlan;

/// A running proxy (its thread asleep until the first connection). Dropping it stops
/// the proxy and closes every connection it holds.
#[derive(Debug)]
pub struct Proxy {
    /// Closing this (the write end of a pipe) tells the thread to stop.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Serve `listener` (the socket init opened in the command's namespace) under
    /// `plan`.
    pub fn start(listener: OwnedFd, plan: &ProxyPlan) -> std::io::Result<Proxy> {
        let (stop_r, stop_w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK)
                .map_err(std::io::Error::from)?;
        let rules = Arc::new(serve::Rules {
            allowlist: plan.allowlist.clone(),
            allow_local: plan.allow_local,
            log: plan.log.clone(),
            hosts: test_hosts(),
        });
        let thread = std::thread::Builder::new()
            .name("agentbash-netproxy".into())
            .spawn(move || proxy_main(listener, stop_r, rules))?;
        Ok(Proxy {
            stop: Some(stop_w),
            thread: Some(thread),
        })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The proxy's thread: asleep until the first connection (or the stop), then a
/// runtime that serves until the stop.
fn proxy_main(listener: OwnedFd, stop: OwnedFd, rules: Arc<serve::Rules>) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    // Signals are the rest of the program's business; and `splice(2)` to a socket
    // whose peer is gone raises SIGPIPE in the thread that called it, which must not
    // end the process of a library caller that left SIGPIPE at its default.
    let _ = nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_BLOCK,
        Some(&nix::sys::signal::SigSet::all()),
        None,
    );
    loop {
        let mut fds = [
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        if fds[1].revents().is_some_and(|r| !r.is_empty()) {
            return;
        }
        if fds[0].revents().is_some_and(|r| !r.is_empty()) {
            break;
        }
    }
    let listener = std::net::TcpListener::from(listener);
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(4)
        .thread_keep_alive(Duration::from_millis(500))
        .thread_name("agentbash-netproxy-dns")
        .build()
    else {
        return;
    };
    runtime.block_on(serve::run(listener, stop, rules));
    // Resolver threads still blocked in the C library are left to finish alone.
    runtime.shutdown_timeout(Duration::from_millis(200));
}

/// Names the proxy answers without DNS, from `AGENTBASH_TEST_PROXY_HOSTS`
/// (`name=address,name=address`): how the integration tests give loopback servers
/// names of their own, never reaching a resolver. Debug builds only: a release build
/// resolves every name through the system.
fn test_hosts() -> Vec<(String, std::net::IpAddr)> {
    if !cfg!(debug_assertions) {
        return Vec::new();
    }
    let Ok(text) = std::env::var("AGENTBASH_TEST_PROXY_HOSTS") else {
        return Vec::new();
    };
    text.split(',')
        .filter_map(|pair| {
            let (name, ip) = pair.split_once('=')?;
            Some((name.trim().to_ascii_lowercase(), ip.trim().parse().ok()?))
        })
        .collect()
}
