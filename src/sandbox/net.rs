//! What `[sandbox] network` asks for: no network, the host's, or a list of
//! destinations a proxy admits (docs/CONFIG.md, "The network allowlist").
//!
//! The list is parsed once, when the profile is read, so a bad entry is an error with
//! its file, line and column; afterwards it only answers one question, whether a
//! destination (a host name or an IP address the client asked for, and a port) is
//! admitted. Addresses are judged separately ([`is_local`]): an allowed name that
//! resolves to a loopback, link-local or private address is still refused unless
//! `network_allow_local = true`, so a name cannot be pointed at the host's own
//! services (DNS rebinding).
//!
//! [`NetworkLog`] is what the proxy refused, counted per destination; a run reads it
//! after the command ended (a live shell's proxy serves many runs: each takes the
//! difference since it started, see [`NetworkLog::since`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[sandbox] network`: `true`, `false`, or a list of destinations.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// The host's network, unrestricted.
    #[default]
    On,
    /// No network at all: an empty network namespace (loopback down).
    Off,
    /// A private network namespace whose only way out is agentbash's proxy, which
    /// admits the listed destinations.
    Allow(Allowlist),
}

impl Network {
    /// Whether the command uses the host's network unrestricted.
    pub fn is_on(&self) -> bool {
        matches!(self, Network::On)
    }

    /// The allowlist, when there is one.
    pub fn allowlist(&self) -> Option<&Allowlist> {
        match self {
            Network::Allow(list) => Some(list),
            _ => None,
        }
    }
}

impl From<bool> for Network {
    fn from(on: bool) -> Network {
        if on { Network::On } else { Network::Off }
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::On => s.serialize_bool(true),
            Network::Off => s.serialize_bool(false),
            Network::Allow(list) => list.entries().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Network, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            B(bool),
            L(Vec<String>),
        }
        let raw = Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "expected true, false or an array of destinations like [\"pypi.org\", \"*.example.org:443\"]",
            )
        })?;
        match raw {
            Raw::B(on) => Ok(on.into()),
            Raw::L(entries) => Allowlist::parse(&entries)
                .map(Network::Allow)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// The destinations of `network = [...]`, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

/// One entry: `[!]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// A `!` entry: refused even when another entry allows it.
    pub deny: bool,
    host: Pattern,
    /// `None`: every port.
    port: Option<u16>,
    /// As configured.
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// `registry.example`: that name only.
    Name(String),
    /// `*.example.org`, kept as `.example.org`: every name below it (not the name
    /// itself).
    Suffix(String),
    /// `192.0.2.7`, `[2001:db8::1]`: the client asked for that address itself.
    Ip(IpAddr),
    /// `localhost`: the name, and the loopback addresses asked for directly.
    Localhost,
}

/// What the list says about a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// A `!` entry matched.
    Denied,
    /// No entry matched.
    NotListed,
}

/// A destination as a client names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A host name, lower-case, without a trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl Destination {
    /// A host as it appears in a request (`Example.ORG.`, `[::1]`, `10.0.0.1`):
    /// `None` when it is neither a valid host name nor an IP address. A name whose
    /// last label is numeric (`0x7f.1`, `127.1`) is refused: the C library would read
    /// it as an address the list never named.
    pub fn parse(host: &str) -> Option<Destination> {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Some(Destination::Ip(canonical_ip(ip)));
        }
        let name = bare.strip_suffix('.').unwrap_or(bare).to_ascii_lowercase();
        valid_name(&name).ok()?;
        Some(Destination::Name(name))
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Name(n) => f.write_str(n),
            Destination::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Destination::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is the IPv4 address it carries.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

const ENTRY_FORMS: &str = "a destination is a host name (registry.example), *.suffix (*.example.org), an IP address or localhost, with an optional :port, and ! in front to refuse it";

impl Allowlist {
    /// Parse the configured entries; the error names the first bad one and says what
    /// a destination looks like.
    pub fn parse(entries: &[String]) -> Result<Allowlist, String> {
        let mut parsed = Vec::with_capacity(entries.len());
        for text in entries {
            let entry = Entry::parse(text)
                .map_err(|why| format!("invalid entry {text:?}: {why}; {ENTRY_FORMS}"))?;
            parsed.push(entry);
        }
        Ok(Allowlist { entries: parsed })
    }

    /// The entries as configured.
    pub fn entries(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.text.as_str()).collect()
    }

    /// The allowing entries (not the `!` ones), as the refusal notice lists them.
    pub fn allowed_text(&self) -> String {
        let allowed: Vec<&str> = self
            .entries
            .iter()
            .filter(|e| !e.deny)
            .map(|e| e.text.as_str())
            .collect();
        if allowed.is_empty() {
            "nothing".into()
        } else {
            allowed.join(", ")
        }
    }

    /// Allowing entries that name a local address (`localhost`, `127.0.0.1`,
    /// `10.1.2.3`): refused at connection time unless `network_allow_local = true`.
    pub fn local_entries(&self) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|e| {
                !e.deny
                    && match &e.host {
                        Pattern::Localhost => true,
                        Pattern::Ip(ip) => is_local(*ip),
                        _ => false,
                    }
            })
            .map(|e| e.text.as_str())
            .collect()
    }

    /// Whether `destination:port` is admitted. `!` entries win over the others.
    pub fn verdict(&self, destination: &Destination, port: u16) -> Verdict {
        let matching = |e: &&Entry| e.matches(destination, port);
        if self.entries.iter().filter(|e| e.deny).any(|e| matching(&e)) {
            Verdict::Denied
        } else if self
            .entries
            .iter()
            .filter(|e| !e.deny)
            .any(|e| matching(&e))
        {
            Verdict::Allowed
        } else {
            Verdict::NotListed
        }
    }
}

impl Entry {
    fn parse(text: &str) -> Result<Entry, String> {
        let (deny, rest) = match text.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if rest.is_empty() {
            return Err("it is empty".into());
        }
        if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("it contains a space or a control character".into());
        }
        if rest.contains("://") || rest.contains('/') {
            return Err("it is a URL or a path, not a host: write the host alone".into());
        }
        let (host, port) = split_port(rest)?;
        let lower = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        let pattern = if let Ok(ip) = lower.parse::<IpAddr>() {
            Pattern::Ip(canonical_ip(ip))
        } else if lower == "localhost" {
            Pattern::Localhost
        } else if lower == "*" {
            return Err("a lone * would allow every host: use network = true for that".into());
        } else if let Some(suffix) = lower.strip_prefix("*.") {
            valid_name(suffix)?;
            Pattern::Suffix(format!(".{suffix}"))
        } else if lower.contains('*') {
            return Err("* may only be the first label (*.example.org)".into());
        } else {
            valid_name(&lower)?;
            Pattern::Name(lower)
        };
        Ok(Entry {
            deny,
            host: pattern,
            port,
            text: text.to_string(),
        })
    }

    fn matches(&self, destination: &Destination, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match (&self.host, destination) {
            (Pattern::Name(n), Destination::Name(d)) => n == d,
            (Pattern::Suffix(s), Destination::Name(d)) => d.ends_with(s.as_str()),
            (Pattern::Ip(ip), Destination::Ip(d)) => ip == d,
            (Pattern::Localhost, Destination::Name(d)) => d == "localhost",
            (Pattern::Localhost, Destination::Ip(d)) => d.is_loopback(),
            _ => false,
        }
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let port = |p: &str| -> Result<Option<u16>, String> {
        match p.parse::<u16>() {
            Ok(0) | Err(_) => Err(format!("{p:?} is not a port (1-65535)")),
            Ok(n) => Ok(Some(n)),
        }
    };
    if let Some(inner) = text.strip_prefix('[') {
        let Some((host, after)) = inner.split_once(']') else {
            return Err("an IPv6 address in [ ] has no closing ]".into());
        };
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(format!("{host:?} in [ ] is not an IPv6 address"));
        }
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host, port(p)?)),
                None => Err(format!("{after:?} after ] is not :port")),
            },
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, p) = text.split_once(':').unwrap_or((text, ""));
            Ok((host, port(p)?))
        }
        _ if text.parse::<Ipv6Addr>().is_ok() => Ok((text, None)),
        _ => Err("more than one : (write an IPv6 address with a port as [2001:db8::1]:443)".into()),
    }
}

/// A DNS name: labels of letters, digits, `-` and `_`, 1-63 characters each, 253 in
/// all; the last label not all digits (that would be an address in disguise).
fn valid_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the host is empty".into());
    }
    if !name.is_ascii() {
        return Err(
            "the host is not ASCII: write an internationalized name in its xn-- form".into(),
        );
    }
    if name.len() > 253 {
        return Err("the host is longer than 253 characters".into());
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(format!(
                "{name:?} has an empty label or one longer than 63 characters"
            ));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "{name:?} has a character a host name cannot hold (letters, digits, - and _ only)"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("a label of {name:?} starts or ends with -"));
        }
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if last.bytes().all(|b| b.is_ascii_digit()) || name.starts_with("0x") {
        return Err(format!("{name:?} is neither a host name nor an IP address"));
    }
    Ok(())
}

/// Whether `ip` is on this machine or its local networks, or no real destination:
/// loopback, link-local, private (RFC 1918, unique local, shared address space),
/// unspecified, multicast, broadcast and reserved ranges. IPv6 forms that carry an
/// IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that address.
pub fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_local_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return is_local_v4(v4);
            }
            let s = v6.segments();
            v6.is_unspecified()
                || v6.is_loopback()
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xff00) == 0xff00 // multicast
        }
    }
}

fn is_local_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0 // "this network", 0.0.0.0 included
        || a == 10
        || a == 127
        || (a == 100 && (b & 0xc0) == 64) // 100.64/10, shared address space
        || (a == 169 && b == 254)
        || (a == 172 && (b & 0xf0) == 16)
        || (a == 192 && b == 0 && c == 0) // 192.0.0/24, protocol assignments
        || (a == 192 && b == 168)
        || (a == 198 && (b & 0xfe) == 18) // 198.18/15, benchmarking
        || a >= 224 // multicast, reserved, broadcast
}

/// The IPv4 address an IPv6 address stands for, when it is one of the forms that
/// carry one.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    // IPv4-compatible (::a.b.c.d, deprecated; :: and ::1 are not).
    if s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1) {
        return Some(tail);
    }
    // NAT64 well-known prefix 64:ff9b::/96.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail);
    }
    // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// Why the proxy refused a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalReason {
    /// No entry of the list names it.
    NotListed,
    /// A `!` entry names it.
    Denied,
    /// Listed, but it resolves only to local addresses (`network_allow_local`).
    LocalAddress,
}

/// One refused destination and how many times it was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Refusal {
    pub host: String,
    pub port: u16,
    pub count: u64,
    pub reason: RefusalReason,
}

impl Refusal {
    /// The sentence that tells the caller (the run's notice, the proxy's 403): what was
    /// refused, what is allowed, and which key to change.
    pub fn notice(&self, allowlist: &Allowlist) -> String {
        let what = format!("network access to {}:{} was refused", self.host, self.port);
        match self.reason {
            RefusalReason::NotListed => format!(
                "[sandbox: {what}; allowed: {}. Add it to sandbox.network]",
                allowlist.allowed_text()
            ),
            RefusalReason::Denied => format!(
                "[sandbox: {what}: a ! entry of sandbox.network denies it; allowed: {}]",
                allowlist.allowed_text()
            ),
            RefusalReason::LocalAddress => format!(
                "[sandbox: {what}: it resolves only to loopback, link-local or private addresses. Set sandbox.network_allow_local = true to allow them]"
            ),
        }
    }
}

/// Distinct destinations kept; refusals of others are counted in one more entry.
const MAX_DISTINCT: usize = 256;

/// What a proxy refused, shared between the proxy (which records) and the run (which
/// reports). Bounded: a command that tries a million hosts costs 256 entries.
#[derive(Debug, Default)]
pub struct NetworkLog {
    refused: Mutex<Vec<Refusal>>,
}

impl NetworkLog {
    /// Count one refusal of `host:port`.
    pub fn record(&self, host: &str, port: u16, reason: RefusalReason) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = refused
            .iter_mut()
            .find(|r| r.host == host && r.port == port && r.reason == reason)
        {
            r.count += 1;
            return;
        }
        if refused.len() < MAX_DISTINCT {
            refused.push(Refusal {
                host: host.to_string(),
                port,
                count: 1,
                reason,
            });
            return;
        }
        // The overflow entry: host "…", port 0.
        match refused.iter_mut().find(|r| r.host == "…") {
            Some(r) => r.count += 1,
            None => {
                if let Some(last) = refused.last_mut() {
                    *last = Refusal {
                        host: "…".into(),
                        port: 0,
                        count: last.count + 1,
                        reason,
                    };
                }
            }
        }
    }

    /// Everything refused so far.
    pub fn snapshot(&self) -> Vec<Refusal> {
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// What was refused after `mark` (an earlier [`NetworkLog::snapshot`]).
    pub fn since(&self, mark: &[Refusal]) -> Vec<Refusal> {
        self.snapshot()
            .into_iter()
            .filter_map(|mut r| {
                let before = mark
                    .iter()
                    .find(|m| m.host == r.host && m.port == r.port && m.reason == r.reason)
                    .map_or(0, |m| m.count);
                r.count = r.count.checked_sub(before).filter(|&c| c > 0)?;
                Some(r)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Allowlist {
        Allowlist::parse(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("valid list")
    }

    fn dest(host: &str) -> Destination {
        Destination::parse(host).expect("valid destination")
    }

    #[test]
    fn names_suffixes_ports_addresses_and_denials() {
        let l = list(&[
            "registry.example",
            "*.example.org",
            "git.example.com:22",
            "192.0.2.7",
            "[2001:db8::1]:443",
            "!blocked.example.org",
            "!*.bad.example.org:443",
        ]);
        use Verdict::*;
        for (host, port, want) in [
            ("registry.example", 443, Allowed),
            ("REGISTRY.Example.", 80, Allowed),
            ("sub.registry.example", 443, NotListed),
            ("a.example.org", 443, Allowed),
            ("a.b.example.org", 80, Allowed),
            ("example.org", 443, NotListed),
            ("badexample.org", 443, NotListed),
            ("git.example.com", 22, Allowed),
            ("git.example.com", 443, NotListed),
            ("192.0.2.7", 8080, Allowed),
            ("[::ffff:192.0.2.7]", 8080, Allowed),
            ("192.0.2.8", 8080, NotListed),
            ("[2001:db8::1]", 443, Allowed),
            ("2001:db8::1", 80, NotListed),
            ("blocked.example.org", 443, Denied),
            ("x.bad.example.org", 443, Denied),
            ("x.bad.example.org", 80, Allowed),
        ] {
            assert_eq!(l.verdict(&dest(host), port), want, "{host}:{port}");
        }
        assert_eq!(
            l.allowed_text(),
            "registry.example, *.example.org, git.example.com:22, 192.0.2.7, [2001:db8::1]:443"
        );
        assert!(l.local_entries().is_empty());
    }

    #[test]
    fn localhost_covers_the_name_and_the_loopback_addresses() {
        let l = list(&["localhost:8080", "10.1.2.3"]);
        assert_eq!(l.verdict(&dest("localhost"), 8080), Verdict::Allowed);
        assert_eq!(l.verdict(&dest("127.0.0.1"), 8080), Verdict::Allowed);
        assert_eq!(l.verdict(&dest("[::1]"), 8080), Verdict::Allowed);
        assert_eq!(l.verdict(&dest("localhost"), 8081), Verdict::NotListed);
        assert_eq!(l.local_entries(), vec!["localhost:8080", "10.1.2.3"]);
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        for (entry, says) in [
            ("", "empty"),
            ("!", "empty"),
            ("*", "network = true"),
            ("a.*.org", "first label"),
            ("https://pypi.org", "URL"),
            ("pypi.org/simple", "URL"),
            ("pypi.org:0", "port"),
            ("pypi.org:70000", "port"),
            ("pypi.org:http", "port"),
            ("py pi.org", "space"),
            ("pypi..org", "empty label"),
            ("-pypi.org", "starts or ends"),
            ("pypi_org$", "character"),
            ("bücher.de", "xn--"),
            ("127.1", "neither"),
            ("0x7f.example", "neither"),
            ("a:b:c", "more than one"),
            ("[::1", "closing"),
            ("[pypi.org]:443", "IPv6"),
        ] {
            let err = Allowlist::parse(&[entry.to_string()]).expect_err(entry);
            assert!(err.contains(says), "{entry}: {err}");
            assert!(err.contains("a destination is"), "{err}");
        }
    }

    #[test]
    fn destinations_in_disguise_are_not_names() {
        for host in [
            "127.1",
            "0x7f000001",
            "2130706433",
            "a b",
            "",
            "ex ample.org",
        ] {
            assert_eq!(Destination::parse(host), None, "{host}");
        }
        assert_eq!(
            Destination::parse("[::ffff:127.0.0.1]"),
            Some(Destination::Ip("127.0.0.1".parse().expect("ip")))
        );
    }

    #[test]
    fn local_ranges_include_every_disguise() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fd00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:0101::1",
        ] {
            assert!(is_local(ip.parse().expect(ip)), "{ip} is local");
        }
        for ip in [
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:93.184.216.34",
            "2002:5db8:d822::1",
        ] {
            assert!(!is_local(ip.parse().expect(ip)), "{ip} is not local");
        }
    }

    #[test]
    fn the_log_counts_per_destination_and_since_a_mark() {
        let log = NetworkLog::default();
        log.record("evil.example", 443, RefusalReason::NotListed);
        log.record("evil.example", 443, RefusalReason::NotListed);
        let mark = log.snapshot();
        log.record("evil.example", 443, RefusalReason::NotListed);
        log.record("other.example", 80, RefusalReason::Denied);
        assert_eq!(log.snapshot()[0].count, 3);
        let since = log.since(&mark);
        assert_eq!(since.len(), 2);
        assert_eq!(
            (since[0].host.as_str(), since[0].count),
            ("evil.example", 1)
        );
        assert_eq!(since[1].reason, RefusalReason::Denied);
        assert!(log.since(&log.snapshot()).is_empty());
    }

    #[test]
    fn the_log_is_bounded() {
        let log = NetworkLog::default();
        for i in 0..1000 {
            log.record(&format!("h{i}.example"), 443, RefusalReason::NotListed);
        }
        let all = log.snapshot();
        assert_eq!(all.len(), MAX_DISTINCT);
        assert_eq!(all.iter().map(|r| r.count).sum::<u64>(), 1000);
    }

    #[test]
    fn the_section_reads_bools_and_lists_and_writes_them_back() {
        #[derive(Deserialize, Serialize)]
        struct S {
            network: Network,
        }
        let on: S = toml::from_str("network = true").expect("bool");
        assert_eq!(on.network, Network::On);
        let list: S = toml::from_str("network = [\"pypi.org\", \"!x.org\"]").expect("list");
        assert_eq!(
            list.network.allowlist().map(Allowlist::entries),
            Some(vec!["pypi.org", "!x.org"])
        );
        assert_eq!(
            toml::to_string(&list).expect("ser").trim(),
            "network = [\"pypi.org\", \"!x.org\"]"
        );
        let bad = toml::from_str::<S>("network = [\"a b\"]")
            .err()
            .expect("bad");
        assert!(bad.message().starts_with("invalid entry"), "{bad}");
        let wrong = toml::from_str::<S>("network = 3")
            .err()
            .expect("wrong type");
        assert!(wrong.message().starts_with("expected true"), "{wrong}");
    }
}
