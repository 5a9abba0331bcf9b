//! The HTTP side of the proxy: the request head of a `CONNECT` (authority form) or of a
//! plain-HTTP request in absolute form, and the replies the proxy itself writes.
//!
//! Only the head is parsed, and only as far as routing needs: the method, the target
//! and the header lines. What follows the head (a request body, a tunnel's bytes, the
//! response) is relayed as bytes, unread. A plain-HTTP request is forwarded with
//! `Connection: close`, so one client connection carries one request to one host.

use crate::sandbox::Destination;

/// The longest request head accepted.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Head {
    pub method: String,
    pub target: Target,
    /// The head re-written for the destination (plain HTTP only): origin-form request
    /// line, no `Proxy-*` headers, `Connection: close`.
    pub forward: Option<Vec<u8>>,
    /// Bytes of the buffer the head took (what follows is the body or tunnel data).
    pub len: usize,
}

/// Where a request goes.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Target {
    /// The host as the client wrote it (for messages).
    pub host: String,
    pub destination: Destination,
    pub port: u16,
}

/// Why a head cannot be served: the status line and the sentence for the body.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Bad(pub &'static str, pub String);

/// The end of the head in `buf` (the index after its blank line), once it is there.
pub(super) fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = memchr::memmem::find(buf, b"\r\n\r\n").map(|i| i + 4);
    let lf = memchr::memmem::find(buf, b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Parse the complete head `buf[..end]`.
pub(super) fn parse(buf: &[u8], end: usize) -> Result<Head, Bad> {
    let bad = |why: &str| Bad("400 Bad Request", why.to_string());
    let text =
        std::str::from_utf8(&buf[..end]).map_err(|_| bad("the request head is not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request = lines.next().unwrap_or_default();
    let mut words = request.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(bad("the request line is not METHOD TARGET VERSION"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad("only HTTP/1.x requests are proxied"));
    }
    let headers: Vec<(&str, &str)> = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    if method.eq_ignore_ascii_case("CONNECT") {
        let target = authority(target, None)?;
        return Ok(Head {
            method: method.to_string(),
            target,
            forward: None,
            len: end,
        });
    }
    let Some(rest) = strip_prefix_ignore_case(target, "http://") else {
        return Err(if strip_prefix_ignore_case(target, "https://").is_some() {
            bad(
                "an https:// URL must be fetched through CONNECT (set HTTPS_PROXY, not only HTTP_PROXY)",
            )
        } else {
            bad("this is agentbash's sandbox proxy: send absolute http:// URLs or CONNECT")
        });
    };
    let (authority_text, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    // user:password@ in a proxied URL goes nowhere.
    let authority_text = authority_text.rsplit('@').next().unwrap_or(authority_text);
    let target = authority(authority_text, Some(80))?;
    let upgrade = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("upgrade"));
    let mut forward = format!("{method} {path} {version}\r\n");
    let mut has_host = false;
    for (k, v) in &headers {
        let drop = k.eq_ignore_ascii_case("proxy-connection")
            || k.eq_ignore_ascii_case("proxy-authorization")
            || (!upgrade
                && (k.eq_ignore_ascii_case("connection") || k.eq_ignore_ascii_case("keep-alive")));
        has_host |= k.eq_ignore_ascii_case("host");
        if !drop {
            forward.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    if !has_host {
        forward.push_str(&format!("Host: {authority_text}\r\n"));
    }
    if !upgrade {
        forward.push_str("Connection: close\r\n");
    }
    forward.push_str("\r\n");
    Ok(Head {
        method: method.to_string(),
        target,
        forward: Some(forward.into_bytes()),
        len: end,
    })
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    (text.len() >= prefix.len() && text[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &text[prefix.len()..])
}

/// `host:port` (`[v6]:port`); `default` when the port may be left out.
fn authority(text: &str, default: Option<u16>) -> Result<Target, Bad> {
    let bad = |why: String| Bad("400 Bad Request", why);
    let (host, port) = if let Some(inner) = text.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or_else(|| bad(format!("{text:?} has no closing ]")))?;
        (format!("[{host}]"), after.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (text.to_string(), None),
        }
    };
    let port = match (port, default) {
        (Some(p), _) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| bad(format!("{p:?} is not a port")))?,
        (None, Some(d)) => d,
        (None, None) => return Err(bad(format!("{text:?} has no port"))),
    };
    let destination = Destination::parse(&host)
        .ok_or_else(|| bad(format!("{host:?} is neither a host name nor an IP address")))?;
    Ok(Target {
        host,
        destination,
        port,
    })
}

/// A reply the proxy writes itself, with a one-line body.
pub(super) fn reply(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}\n",
        body.len() + 1
    )
    .into_bytes()
}

/// The answer to a `CONNECT` the proxy made good.
pub(super) const ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Head, Bad> {
        let end = head_end(text.as_bytes()).expect("complete");
        parse(text.as_bytes(), end)
    }

    #[test]
    fn connect_names_host_and_port() {
        let h = head("CONNECT Example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\nTLS")
            .expect("ok");
        assert_eq!(h.method, "CONNECT");
        assert_eq!(
            h.target.destination,
            Destination::Name("example.org".into())
        );
        assert_eq!(h.target.port, 443);
        assert_eq!(h.forward, None);
        assert_eq!(
            &"CONNECT Example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\nTLS"[h.len..],
            "TLS"
        );
        let v6 = head("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").expect("v6");
        assert_eq!(
            v6.target.destination,
            Destination::Ip("::1".parse().expect("ip"))
        );
        assert!(
            head("CONNECT example.org HTTP/1.1\r\n\r\n").is_err(),
            "no port"
        );
    }

    #[test]
    fn absolute_form_is_rewritten_for_the_origin() {
        let h = head(
            "GET http://files.example:8080/simple/pkg/?x=1 HTTP/1.1\r\nHost: files.example:8080\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nAccept: */*\r\n\r\n",
        )
        .expect("ok");
        assert_eq!(h.target.port, 8080);
        let forward = String::from_utf8(h.forward.expect("forward")).expect("utf8");
        assert_eq!(
            forward,
            "GET /simple/pkg/?x=1 HTTP/1.1\r\nHost: files.example:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let bare = head("GET http://files.example HTTP/1.0\n\n").expect("bare");
        assert_eq!(bare.target.port, 80);
        let forward = String::from_utf8(bare.forward.expect("forward")).expect("utf8");
        assert!(
            forward.starts_with("GET / HTTP/1.0\r\nHost: files.example\r\n"),
            "{forward}"
        );
    }

    #[test]
    fn what_is_not_a_proxy_request_is_a_400_saying_why() {
        for (text, says) in [
            ("GET / HTTP/1.1\r\n\r\n", "absolute"),
            ("GET https://x.example/ HTTP/1.1\r\n\r\n", "CONNECT"),
            ("GET http://x.example/ HTTP/2\r\n\r\n", "HTTP/1"),
            ("GET  http://x.example/ HTTP/1.1\r\n\r\n", "METHOD"),
            ("CONNECT 127.1:80 HTTP/1.1\r\n\r\n", "neither"),
            ("CONNECT x.example:0 HTTP/1.1\r\n\r\n", "port"),
            ("CONNECT x.example:99999 HTTP/1.1\r\n\r\n", "port"),
        ] {
            let err = head(text).expect_err(text);
            assert_eq!(err.0, "400 Bad Request");
            assert!(err.1.contains(says), "{text}: {}", err.1);
        }
        assert_eq!(head_end(b"GET http://x/ HTTP/1.1\r\nHost: x\r\n"), None);
    }
}
