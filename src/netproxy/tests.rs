//! The proxy in-process, on a loopback listener of the host (no namespace needed): the
//! relay's bytes both ways and its half-close, both protocols' answers, and that
//! dropping a proxy closes the connections it holds.

use super::Proxy;
use crate::sandbox::{Allowlist, NetworkLog, ProxyPlan, RefusalReason};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// A proxy on 127.0.0.1 admitting `allow` (local addresses allowed), and its address.
fn proxy(allow: &[&str]) -> (Proxy, u16, Arc<NetworkLog>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let plan = ProxyPlan {
        port,
        allowlist: Allowlist::parse(&allow.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("list"),
        allow_local: true,
        log: Arc::default(),
    };
    let log = plan.log.clone();
    let proxy = Proxy::start(listener.into(), &plan).expect("proxy starts");
    (proxy, port, log)
}

/// A server that reads everything until end of file, then answers with the bytes
/// reversed and closes.
fn reversing_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            std::thread::spawn(move || {
                let mut all = Vec::new();
                if conn.read_to_end(&mut all).is_ok() {
                    all.reverse();
                    let _ = conn.write_all(&all);
                }
            });
        }
    });
    port
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s
}

/// Read a response head (up to the blank line).
fn head(s: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[test]
fn a_tunnel_carries_megabytes_both_ways_and_half_closes() {
    let upstream = reversing_server();
    let (_proxy, port, log) = proxy(&[&format!("localhost:{upstream}")]);
    let mut s = connect(port);
    write!(s, "CONNECT localhost:{upstream} HTTP/1.1\r\n\r\n").expect("write");
    assert!(head(&mut s).starts_with("HTTP/1.1 200"));
    let payload: Vec<u8> = (0..8u32 << 20).map(|i| (i * 7 + i / 251) as u8).collect();
    let writer = {
        let mut s = s.try_clone().expect("clone");
        let payload = payload.clone();
        std::thread::spawn(move || {
            s.write_all(&payload).expect("send");
            // The server answers only once it has read to end of file.
            s.shutdown(Shutdown::Write).expect("half-close");
        })
    };
    let mut back = Vec::new();
    s.read_to_end(&mut back).expect("read back");
    writer.join().expect("writer");
    let mut want = payload;
    want.reverse();
    assert!(back == want, "{} bytes back of {}", back.len(), want.len());
    assert!(log.snapshot().is_empty());
}

#[test]
fn early_bytes_after_the_request_head_are_not_lost() {
    let upstream = reversing_server();
    let (_proxy, port, _) = proxy(&[&format!("localhost:{upstream}")]);
    let mut s = connect(port);
    write!(s, "CONNECT localhost:{upstream} HTTP/1.1\r\n\r\nearly").expect("write");
    s.shutdown(Shutdown::Write).expect("half-close");
    let mut all = String::new();
    s.read_to_string(&mut all).expect("read");
    assert!(all.ends_with("\r\n\r\nylrae"), "{all:?}");
}

#[test]
fn socks5_answers_success_refusal_and_unsupported_commands() {
    let upstream = reversing_server();
    let (_proxy, port, log) = proxy(&[&format!("localhost:{upstream}")]);
    let socks = |name: &str, command: u8| {
        let mut s = connect(port);
        let mut req = vec![5, 1, 0, 5, command, 0, 3, name.len() as u8];
        req.extend_from_slice(name.as_bytes());
        req.extend_from_slice(&upstream.to_be_bytes());
        s.write_all(&req).expect("write");
        let mut answer = [0u8; 12];
        s.read_exact(&mut answer).expect("answer");
        assert_eq!(answer[..2], [5, 0], "no authentication");
        (s, answer[3])
    };
    let (mut s, code) = socks("localhost", 1);
    assert_eq!(code, 0, "succeeded");
    s.write_all(b"abc").expect("write");
    s.shutdown(Shutdown::Write).expect("half-close");
    let mut back = String::new();
    s.read_to_string(&mut back).expect("read");
    assert_eq!(back, "cba");
    assert_eq!(socks("elsewhere.example", 1).1, 2, "not allowed by ruleset");
    assert_eq!(socks("localhost", 2).1, 7, "BIND is not supported");
    let refused = log.snapshot();
    assert_eq!(refused.len(), 1);
    assert_eq!(
        (refused[0].host.as_str(), refused[0].reason),
        ("elsewhere.example", RefusalReason::NotListed)
    );
}

#[test]
fn dropping_the_proxy_closes_its_tunnels_and_its_port() {
    // A server that holds every connection open without a word.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let upstream = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    let (proxy, port, _) = proxy(&[&format!("localhost:{upstream}")]);
    let mut s = connect(port);
    write!(s, "CONNECT localhost:{upstream} HTTP/1.1\r\n\r\n").expect("write");
    assert!(head(&mut s).starts_with("HTTP/1.1 200"));
    drop(proxy);
    let mut rest = Vec::new();
    // End of file or a reset: either way the tunnel is gone, not hanging.
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty());
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nobody listens any more"
    );
}

#[test]
fn a_proxy_that_never_had_a_connection_stops_at_once() {
    let (proxy, port, _) = proxy(&["pypi.org"]);
    drop(proxy);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn an_allowed_destination_that_refuses_is_a_502_or_a_socks_refusal_not_a_sandbox_one() {
    // A port nobody listens on (bound, then closed).
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let (_proxy, port, log) = proxy(&[&format!("localhost:{closed}")]);
    let mut s = connect(port);
    write!(s, "CONNECT localhost:{closed} HTTP/1.1\r\n\r\n").expect("write");
    assert!(head(&mut s).starts_with("HTTP/1.1 502"));
    let mut s = connect(port);
    let mut req = vec![5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1];
    req.extend_from_slice(&closed.to_be_bytes());
    s.write_all(&req).expect("write");
    let mut answer = [0u8; 12];
    s.read_exact(&mut answer).expect("answer");
    assert_eq!(answer[3], 5, "connection refused");
    assert!(log.snapshot().is_empty(), "not the sandbox's refusal");
}
