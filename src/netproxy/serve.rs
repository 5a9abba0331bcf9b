//! One proxy's accept loop and each connection's life: which protocol, which
//! destination, whether the list admits it, the addresses it resolves to, the
//! outward connection, and the relay of bytes both ways until either side is done.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::http::{self, Bad, Target};
use super::socks;
use crate::sandbox::{
    Allowlist, Destination, NetworkLog, Refusal, RefusalReason, Verdict, is_local,
};

/// Connections served at once; more wait in the listening socket's backlog.
const MAX_CONNECTIONS: usize = 512;
/// How long a client may take to say where it is going (a slow one holds only its
/// own connection).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(15);
/// Per address tried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Addresses of one name tried, at most.
const MAX_ADDRESSES: usize = 8;
/// Relay buffer per direction when the zero-copy relay cannot be used (no
/// descriptors left for its pipes): 100 connections cost 6.4 MiB at most.
const RELAY_BUFFER: usize = 32 * 1024;
/// The capacity asked for each relay pipe, and so the most one `splice(2)` moves:
/// on a loopback download it carried 80 % of the direct rate where the default
/// 64 KiB carried 65 % in the same rounds (benches/network_measure.py). It is kernel memory, filled only
/// while a reader lags; past the user's pipe allowance the kernel keeps the default.
const PIPE_CAPACITY: usize = 256 * 1024;

/// What one proxy enforces.
#[derive(Debug)]
pub(super) struct Rules {
    pub allowlist: Allowlist,
    pub allow_local: bool,
    pub log: Arc<NetworkLog>,
    /// Names answered without DNS (tests only; see `super::test_hosts`).
    pub hosts: Vec<(String, IpAddr)>,
}

/// Accept and serve until `stop` becomes readable (its writer closed it).
pub(super) async fn run(listener: std::net::TcpListener, stop: OwnedFd, rules: Arc<Rules>) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    // SAFETY: an OwnedFd is open for as long as the AsyncFd owns it, and always
    // names the same descriptor.
    let Ok(stop) = (unsafe { AsyncFd::register_with_interest(stop, Interest::READABLE) }) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            _ = stop.readable() => return,
            permit = slots.clone().acquire_owned() => permit,
        };
        let Ok(permit) = permit else { return };
        let accepted = tokio::select! {
            _ = stop.readable() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((client, _)) => {
                let rules = rules.clone();
                tokio::spawn(async move {
                    let _ = serve(client, &rules).await;
                    drop(permit);
                });
            }
            // Out of descriptors or memory for a moment: let connections end first.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Why a destination is not served, as the client is told.
enum Refused {
    /// The sandbox refused it (recorded in the log).
    Policy(String),
    /// The name does not resolve.
    Unresolved(String),
    /// No address of it took the connection; `refused`: one answered with a reset.
    Unreachable { why: String, refused: bool },
}

async fn serve(mut client: TcpStream, rules: &Rules) -> std::io::Result<()> {
    client.set_nodelay(true)?;
    let first = match tokio::time::timeout(REQUEST_TIMEOUT, client.read_u8()).await {
        Ok(byte) => byte?,
        Err(_) => return Ok(()),
    };
    match first {
        5 => serve_socks(client, rules).await,
        // SOCKS4: "request rejected".
        4 => client.write_all(&[0, 0x5b, 0, 0, 0, 0, 0, 0]).await,
        first => serve_http(client, first, rules).await,
    }
}

async fn serve_socks(mut client: TcpStream, rules: &Rules) -> std::io::Result<()> {
    let Some(target) = socks::request(&mut client, REQUEST_TIMEOUT).await? else {
        return Ok(());
    };
    let upstream = match open(&target, rules).await {
        Ok(upstream) => upstream,
        Err(Refused::Policy(_)) => return socks::reply(&mut client, socks::NOT_ALLOWED).await,
        Err(Refused::Unresolved(_)) => {
            return socks::reply(&mut client, socks::HOST_UNREACHABLE).await;
        }
        Err(Refused::Unreachable { refused, .. }) => {
            let code = if refused {
                socks::CONNECTION_REFUSED
            } else {
                socks::GENERAL_FAILURE
            };
            return socks::reply(&mut client, code).await;
        }
    };
    socks::reply(&mut client, 0).await?;
    relay(client, upstream, &[]).await
}

async fn serve_http(mut client: TcpStream, first: u8, rules: &Rules) -> std::io::Result<()> {
    let mut buf = vec![first];
    let read_head = async {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = http::head_end(&buf) {
                return Ok(Some(end));
            }
            if buf.len() >= http::MAX_HEAD {
                return Ok(None);
            }
            let n = client.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    let end = match tokio::time::timeout(REQUEST_TIMEOUT, read_head).await {
        Ok(Ok(Some(end))) => end,
        Ok(Ok(None)) => {
            let body = "agentbash sandbox proxy: the request head is larger than 64 KiB";
            return client
                .write_all(&http::reply("431 Request Header Fields Too Large", body))
                .await;
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            let body = "agentbash sandbox proxy: the request took too long to arrive";
            return client
                .write_all(&http::reply("408 Request Timeout", body))
                .await;
        }
    };
    let head = match http::parse(&buf, end) {
        Ok(head) => head,
        Err(Bad(status, why)) => {
            return client
                .write_all(&http::reply(
                    status,
                    &format!("agentbash sandbox proxy: {why}"),
                ))
                .await;
        }
    };
    let mut upstream = match open(&head.target, rules).await {
        Ok(upstream) => upstream,
        Err(Refused::Policy(why)) => {
            return client.write_all(&http::reply("403 Forbidden", &why)).await;
        }
        Err(Refused::Unresolved(why) | Refused::Unreachable { why, .. }) => {
            let body = format!("agentbash sandbox proxy: {why}");
            return client
                .write_all(&http::reply("502 Bad Gateway", &body))
                .await;
        }
    };
    match &head.forward {
        Some(forward) => upstream.write_all(forward).await?,
        None => client.write_all(http::ESTABLISHED).await?,
    }
    relay(client, upstream, &buf[head.len..]).await
}

/// Judge `target` against the list, resolve it, refuse local addresses unless they
/// are allowed, and connect. Every refusal by the sandbox is logged.
async fn open(target: &Target, rules: &Rules) -> Result<TcpStream, Refused> {
    let refuse = |reason: RefusalReason| {
        let host = target.destination.to_string();
        rules.log.record(&host, target.port, reason);
        let refusal = Refusal {
            host,
            port: target.port,
            count: 1,
            reason,
        };
        Refused::Policy(refusal.notice(&rules.allowlist))
    };
    match rules.allowlist.verdict(&target.destination, target.port) {
        Verdict::Allowed => {}
        Verdict::Denied => return Err(refuse(RefusalReason::Denied)),
        Verdict::NotListed => return Err(refuse(RefusalReason::NotListed)),
    }
    let addresses = resolve(&target.destination, target.port, rules)
        .await
        .map_err(|e| Refused::Unresolved(format!("cannot resolve {}: {e}", target.host)))?;
    let usable: Vec<SocketAddr> = addresses
        .into_iter()
        .filter(|a| rules.allow_local || !is_local(a.ip()))
        .take(MAX_ADDRESSES)
        .collect();
    if usable.is_empty() {
        return Err(refuse(RefusalReason::LocalAddress));
    }
    let (mut last, mut refused) = (String::new(), false);
    for address in usable {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => {
                refused = e.kind() == std::io::ErrorKind::ConnectionRefused;
                last = e.to_string();
            }
            Err(_) => last = "connection timed out".into(),
        }
    }
    Err(Refused::Unreachable {
        why: format!(
            "connecting to {}:{} failed: {last}",
            target.host, target.port
        ),
        refused,
    })
}

/// The addresses of a destination: itself for an address, else the system resolver's
/// answer (or a test's override).
async fn resolve(
    destination: &Destination,
    port: u16,
    rules: &Rules,
) -> std::io::Result<Vec<SocketAddr>> {
    let name = match destination {
        Destination::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, port)]),
        Destination::Name(name) => name,
    };
    if let Some((_, ip)) = rules.hosts.iter().find(|(h, _)| h == name) {
        return Ok(vec![SocketAddr::new(*ip, port)]);
    }
    let found = tokio::time::timeout(
        RESOLVE_TIMEOUT,
        tokio::net::lookup_host((name.as_str(), port)),
    )
    .await
    .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let mut addresses: Vec<SocketAddr> = Vec::new();
    for mut address in found {
        // An IPv4-mapped answer is the IPv4 address it carries (judged as such).
        if let IpAddr::V6(v6) = address.ip()
            && let Some(v4) = v6.to_ipv4_mapped()
        {
            address.set_ip(IpAddr::V4(v4));
        }
        if !addresses.contains(&address) {
            addresses.push(address);
        }
    }
    Ok(addresses)
}

/// Relay bytes both ways (`early`: what the client sent after its request head) until
/// both directions are done. Through a pipe per direction with `splice(2)`, so the
/// bytes never enter agentbash's memory; with a buffer when the pipes cannot be made.
async fn relay(
    mut client: TcpStream,
    mut upstream: TcpStream,
    early: &[u8],
) -> std::io::Result<()> {
    if !early.is_empty() {
        upstream.write_all(early).await?;
    }
    if let (Ok(up), Ok(down)) = (Pipe::new(), Pipe::new()) {
        // A failure either way ends both (a reset connection has nothing more to say).
        return tokio::try_join!(
            pump(&client, &upstream, &up),
            pump(&upstream, &client, &down)
        )
        .map(drop);
    }
    tokio::io::copy_bidirectional_with_sizes(&mut client, &mut upstream, RELAY_BUFFER, RELAY_BUFFER)
        .await
        .map(drop)
}

/// A pipe for one direction of a relay.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// What it holds at most.
    capacity: usize,
}

impl Pipe {
    fn new() -> std::io::Result<Pipe> {
        let flags = nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK;
        let (read, write) = nix::unistd::pipe2(flags).map_err(std::io::Error::from)?;
        let fd = write.as_raw_fd();
        let wanted = PIPE_CAPACITY as libc::c_int;
        // SAFETY: fcntl on a pipe we own; F_SETPIPE_SZ returns the capacity it set,
        // F_GETPIPE_SZ only reads.
        let capacity = match unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, wanted) } {
            set if set > 0 => set,
            _ => unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) },
        };
        Ok(Pipe {
            read,
            write,
            capacity: usize::try_from(capacity)
                .ok()
                .filter(|&c| c > 0)
                .unwrap_or(4096),
        })
    }
}

/// `splice(2)` between two descriptors, never blocking (the sockets and the pipe are
/// non-blocking).
fn splice(from: RawFd, to: RawFd, len: usize) -> std::io::Result<usize> {
    // SAFETY: both descriptors are open for the call; no offsets are passed.
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

/// Move everything `from` sends to `to` through `pipe`, then shut `to`'s sending side
/// (the other direction may go on: a half-closed connection stays usable).
async fn pump(from: &TcpStream, to: &TcpStream, pipe: &Pipe) -> std::io::Result<()> {
    loop {
        let filled = loop {
            from.readable().await?;
            match from.try_io(Interest::READABLE, || {
                splice(from.as_raw_fd(), pipe.write.as_raw_fd(), pipe.capacity)
            }) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        };
        if filled == 0 {
            // SAFETY: shutdown(2) on a socket this connection holds.
            unsafe { libc::shutdown(to.as_raw_fd(), libc::SHUT_WR) };
            return Ok(());
        }
        let mut left = filled;
        while left > 0 {
            to.writable().await?;
            match to.try_io(Interest::WRITABLE, || {
                splice(pipe.read.as_raw_fd(), to.as_raw_fd(), left)
            }) {
                Ok(n) => left -= n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}
