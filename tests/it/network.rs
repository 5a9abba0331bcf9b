//! The network allowlist (`[sandbox] network = [...]`) through the real binary: the
//! command's only way out is agentbash's proxy, which admits the listed destinations
//! and reports the rest.
//!
//! Loopback only. Every server is one the test starts on 127.0.0.1; the names the
//! lists use (`allowed.test`, `refused.test`, …) reach it through
//! `AGENTBASH_TEST_PROXY_HOSTS`, which the proxy of a debug build honours instead of
//! DNS, and the profiles set `network_allow_local = true` wherever a name must lead to
//! those servers (without it the proxy refuses loopback, which one test checks).

use crate::support::{
    Cmd, LiveServer, TestEnv, assert_has, confining, has_program, is_root, needs_program,
    needs_root, run_json_as_nobody, s, skip, thread_count,
};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The names the proxy answers without DNS in these tests.
const HOSTS: &str = "allowed.test=127.0.0.1,refused.test=127.0.0.1,\
other.allowed.test=127.0.0.1,blocked.allowed.test=127.0.0.1,pypi.test=127.0.0.1,\
git.test=127.0.0.1,npm.test=127.0.0.1,crates.test=127.0.0.1,zero.test=0.0.0.0,\
mapped.test=::ffff:127.0.0.1";

/// A loopback HTTP server answering every request with `body`, counting connections.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

fn server(body: &'static str) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    Server { port, hits }
}

impl Server {
    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// The Python interpreter itself (not a version manager's shim, which would try to
/// write outside the sandbox).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
}

/// A test env and a profile file whose `[sandbox]` is `workspace-write` plus `section`.
struct Net {
    env: TestEnv,
    profile: String,
}

impl Net {
    fn new(section: &str) -> Net {
        Net::with_mode("workspace-write", section)
    }

    /// `network = ["allowed.test:PORT"]`, local addresses allowed (the test servers
    /// are on loopback).
    fn allowing(port: u16) -> Net {
        Net::new(&format!(
            "network = [\"allowed.test:{port}\"]\nnetwork_allow_local = true"
        ))
    }

    fn with_mode(mode: &str, section: &str) -> Net {
        let env = TestEnv::new();
        let profile = env.root().join("net.toml");
        std::fs::write(
            &profile,
            format!(
                "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\n{}\n",
                confining(&format!("mode = \"{mode}\"\n{section}"))
            ),
        )
        .expect("profile");
        Net {
            env,
            profile: profile.display().to_string(),
        }
    }

    /// `agentbash ARGS` with the test hosts.
    fn cmd(&self, args: &[&str]) -> Cmd {
        self.env.cmd(args).env("AGENTBASH_TEST_PROXY_HOSTS", HOSTS)
    }

    /// `run --json -p PROFILE EXTRA -- SCRIPT`.
    fn run(&self, extra: &[&str], script: &str) -> (Option<i32>, Value) {
        let out = self
            .env
            .test()
            .env("AGENTBASH_TEST_PROXY_HOSTS", HOSTS)
            .run_json(script)
            .profile(&self.profile)
            .opts(extra)
            .run();
        (out.code(), out.json())
    }
}

fn denied(v: &Value) -> Vec<(String, u64, u64, String)> {
    v["sandbox"]["network_denied"]
        .as_array()
        .unwrap_or_else(|| panic!("no sandbox.network_denied: {v}"))
        .iter()
        .map(|r| {
            (
                r["host"].as_str().unwrap_or_default().to_string(),
                r["port"].as_u64().unwrap_or_default(),
                r["count"].as_u64().unwrap_or_default(),
                r["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn refusal(host: &str, port: u16, count: u64, reason: &str) -> (String, u64, u64, String) {
    (host.to_string(), u64::from(port), count, reason.to_string())
}

/// The run reports these refusals, in order, and its text carries `notice`.
#[track_caller]
fn assert_refusals(v: &Value, want: &[(String, u64, u64, String)], notice: &str) {
    assert_eq!(denied(v), want, "{v}");
    assert!(s(v, "text").contains(notice), "lacks {notice:?}: {v}");
}

/// The run reports one refusal: `host:port`, which is not listed.
#[track_caller]
fn assert_refused_once(v: &Value, host: &str, port: u16) {
    assert_eq!(denied(v), vec![refusal(host, port, 1, "not-listed")]);
}

#[test]
fn a_listed_destination_is_reached_and_an_unlisted_one_refused_and_reported() {
    let (a, b) = (server("from-a"), server("from-b"));
    let t = Net::new(&format!(
        "network = [\"allowed.test:{a}\", \"localhost:{a}\"]\nnetwork_allow_local = true",
        a = a.port
    ));
    let script = format!(
        "curl -sS http://allowed.test:{a}/; echo; curl -sS http://localhost:{a}/; echo; \
         curl -sS https://refused.test:{b}/; echo curl=$?; curl -sS http://allowed.test:{b}/; echo",
        a = a.port,
        b = b.port
    );
    let (code, v) = t.run(&[], &script);
    assert_eq!(code, Some(0), "{v}");
    let out = s(&v, "output");
    assert_eq!(out.matches("from-a").count(), 2, "{v}");
    assert!(out.contains("403"), "the client was told: {v}");
    assert_eq!(a.hits(), 2, "{v}");
    assert_eq!(b.hits(), 0, "nothing reached the unlisted server: {v}");
    assert_eq!(
        v["sandbox"]["network"],
        json!([
            format!("allowed.test:{}", a.port),
            format!("localhost:{}", a.port)
        ])
    );
    let want = format!(
        "[sandbox: network access to refused.test:{b} was refused; allowed: allowed.test:{a}, localhost:{a}. Add it to sandbox.network]",
        a = a.port,
        b = b.port
    );
    assert_refusals(
        &v,
        &[
            refusal("refused.test", b.port, 1, "not-listed"),
            refusal("allowed.test", b.port, 1, "not-listed"),
        ],
        &want,
    );
    assert!(
        v["notices"]
            .as_array()
            .is_some_and(|n| n.contains(&json!(want))),
        "{v}"
    );
}

#[test]
fn a_refused_connect_is_a_403_and_a_request_that_is_no_proxy_request_a_400() {
    let t = Net::new("network = [\"allowed.test\"]");
    let script = "exec 3<>/dev/tcp/127.0.0.1/3128; \
        printf 'CONNECT refused.test:443 HTTP/1.1\\r\\nHost: refused.test:443\\r\\n\\r\\n' >&3; \
        head -n 1 <&3; exec 3<&-; \
        exec 3<>/dev/tcp/127.0.0.1/3128; printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3; \
        head -n 1 <&3";
    let (code, v) = t.run(&[], script);
    assert_eq!(code, Some(0), "{v}");
    let lines: Vec<&str> = s(&v, "output").lines().map(str::trim_end).collect();
    assert_eq!(
        lines,
        ["HTTP/1.1 403 Forbidden", "HTTP/1.1 400 Bad Request"],
        "{v}"
    );
    assert_refused_once(&v, "refused.test", 443);
}

#[test]
fn a_socket_that_bypasses_the_proxy_and_dns_inside_fail_fast() {
    let a = server("from-a");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    udp.set_nonblocking(true).expect("nonblocking");
    let udp_port = udp.local_addr().expect("addr").port();
    let t = Net::allowing(a.port);
    let started = Instant::now();
    let script = format!(
        "(echo hi > /dev/tcp/127.0.0.1/{a}) 2>/dev/null && echo TCP-OK; \
         curl -sS -m 5 --noproxy '*' http://127.0.0.1:{a}/ 2>/dev/null && echo DIRECT-OK; \
         (echo hi > /dev/udp/127.0.0.1/{udp_port}) 2>/dev/null; \
         getent hosts example.com && echo DNS-OK; \
         {py} -c 'import socket; socket.getaddrinfo(\"example.com\", 443)' 2>/dev/null && echo PY-DNS-OK; \
         curl -sS http://allowed.test:{a}/",
        a = a.port,
        py = python()
    );
    let (_, v) = t.run(&[], &script);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "nothing waits for a timeout: {v}"
    );
    let out = s(&v, "output");
    for ok in ["TCP-OK", "DIRECT-OK", "DNS-OK", "PY-DNS-OK"] {
        assert!(!out.contains(ok), "{ok}: {v}");
    }
    assert!(out.contains("from-a"), "the proxy still works: {v}");
    assert_eq!(a.hits(), 1, "only the proxied request arrived: {v}");
    let mut buf = [0u8; 8];
    assert!(
        udp.recv(&mut buf).is_err(),
        "no datagram left the namespace"
    );
}

#[test]
fn local_addresses_are_refused_unless_allowed_whatever_form_they_take() {
    let a = server("from-a");
    let t = Net::new("network = [\"allowed.test\", \"*.test\"]");
    let script = format!(
        "curl -sS http://allowed.test:{a}/; curl -sS http://zero.test:{a}/; \
         curl -sS http://mapped.test:{a}/; curl -sS http://127.0.0.1:{a}/; \
         curl -sS -x socks5://127.0.0.1:3128 'http://[::ffff:127.0.0.1]:{a}/'; true",
        a = a.port
    );
    let (_, v) = t.run(&[], &script);
    assert_eq!(a.hits(), 0, "{v}");
    assert!(!s(&v, "output").contains("from-a"), "{v}");
    let p = a.port;
    assert_refusals(
        &v,
        &[
            refusal("allowed.test", p, 1, "local-address"),
            refusal("zero.test", p, 1, "local-address"),
            refusal("mapped.test", p, 1, "local-address"),
            refusal("127.0.0.1", p, 2, "not-listed"),
        ],
        &format!(
            "[sandbox: network access to allowed.test:{p} was refused: it resolves only to loopback, link-local or private addresses. Set sandbox.network_allow_local = true to allow them]"
        ),
    );

    let t = Net::new("network = [\"allowed.test\"]\nnetwork_allow_local = true");
    let (code, v) = t.run(&[], &format!("curl -sS http://allowed.test:{p}/"));
    assert_eq!((code, s(&v, "output")), (Some(0), "from-a"), "{v}");
    assert!(denied(&v).is_empty(), "{v}");
}

#[test]
fn socks5_with_names_and_python_through_the_environment() {
    let (a, b) = (server("from-a"), server("from-b"));
    let t = Net::allowing(a.port);
    let script = format!(
        "curl -sS -x socks5h://127.0.0.1:3128 http://allowed.test:{a}/; echo; \
         curl -sS -x \"$ALL_PROXY\" http://refused.test:{b}/; echo socks=$?; \
         {py} -c 'import urllib.request; print(urllib.request.urlopen(\"http://allowed.test:{a}/\").read().decode())'",
        a = a.port,
        b = b.port,
        py = python()
    );
    let (_, v) = t.run(&[], &script);
    let out = s(&v, "output");
    assert_eq!(out.matches("from-a").count(), 2, "{v}");
    assert!(
        out.contains("socks=97"),
        "curl's 'connection not allowed': {v}"
    );
    assert_eq!(b.hits(), 0, "{v}");
    assert_refused_once(&v, "refused.test", b.port);
}

#[test]
fn a_deny_entry_wins_over_a_wildcard() {
    let a = server("from-a");
    let t = Net::new(
        "network = [\"*.allowed.test\", \"!blocked.allowed.test\"]\nnetwork_allow_local = true",
    );
    let script = format!(
        "curl -sS http://other.allowed.test:{a}/; echo; curl -sS http://blocked.allowed.test:{a}/; \
         echo; curl -sS http://allowed.test:{a}/",
        a = a.port
    );
    let (_, v) = t.run(&[], &script);
    assert_eq!(s(&v, "output").matches("from-a").count(), 1, "{v}");
    assert_eq!(a.hits(), 1, "{v}");
    assert_refusals(
        &v,
        &[
            refusal("blocked.allowed.test", a.port, 1, "denied"),
            refusal("allowed.test", a.port, 1, "not-listed"),
        ],
        &format!(
            "[sandbox: network access to blocked.allowed.test:{} was refused: a ! entry of sandbox.network denies it; allowed: *.allowed.test]",
            a.port
        ),
    );
}

/// A directory served over loopback by Python's `http.server` (killed on drop).
struct StaticServer {
    child: std::process::Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl StaticServer {
    /// Serve a new directory, which `fill` fills first.
    fn start(fill: impl FnOnce(&Path)) -> StaticServer {
        let dir = tempfile::tempdir().expect("served dir");
        fill(dir.path());
        let serve = "import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
print(server.server_address[1], flush=True)
server.serve_forever()";
        let mut child = std::process::Command::new(python())
            .args(["-c", serve])
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its port");
        let port = line.trim().parse().expect("a port number");
        StaticServer { child, port, dir }
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PEP 503 index of one hand-made wheel, `tinypkg`.
fn pep503_index(dir: &Path) {
    let make = r#"
import base64, hashlib, os, sys, zipfile
os.chdir(sys.argv[1])
name, ver = "tinypkg", "1.0"
files = {
    f"{name}/__init__.py": "GREETING = 'hello from tinypkg'\n",
    f"{name}-{ver}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n",
    f"{name}-{ver}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(text.encode())}")
record.append(f"{name}-{ver}.dist-info/RECORD,,")
files[f"{name}-{ver}.dist-info/RECORD"] = "\n".join(record) + "\n"
os.makedirs("packages"); os.makedirs(f"simple/{name}")
wheel = f"packages/{name}-{ver}-py3-none-any.whl"
with zipfile.ZipFile(wheel, "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
sha = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
with open(f"simple/{name}/index.html", "w") as f:
    f.write(f'<html><body><a href="../../{wheel}#sha256={sha}">{os.path.basename(wheel)}</a></body></html>\n')
"#;
    let made = std::process::Command::new(python())
        .args(["-c", make])
        .arg(dir)
        .status()
        .expect("python3 makes the wheel");
    assert!(made.success());
}

#[test]
fn pip_installs_from_a_local_index_through_the_proxy_and_not_without_it() {
    let index = StaticServer::start(pep503_index);
    let script = format!(
        "unset PIP_FIND_LINKS; export PIP_CONFIG_FILE=/dev/null; \
         {py} -m pip install --no-cache-dir --disable-pip-version-check --retries 0 --timeout 5 \
           --target \"$TMPDIR/site\" --index-url http://pypi.test:{port}/simple --trusted-host pypi.test tinypkg \
         && PYTHONPATH=\"$TMPDIR/site\" {py} -c 'import tinypkg; print(tinypkg.GREETING)'",
        py = python(),
        port = index.port
    );
    let t = Net::new("network = [\"pypi.test\"]\nnetwork_allow_local = true");
    let (code, v) = t.run(&[], &script);
    assert_eq!(code, Some(0), "{v}");
    assert!(s(&v, "output").contains("hello from tinypkg"), "{v}");
    assert!(denied(&v).is_empty(), "{v}");

    let t = Net::new("network = false");
    let (code, v) = t.run(&[], &script);
    assert_ne!(code, Some(0), "{v}");
    assert!(!s(&v, "output").contains("hello from tinypkg"), "{v}");
}

#[test]
fn git_clones_over_http_through_the_proxy() {
    let repo = tempfile::tempdir().expect("repo dir");
    let git = |args: &[&str], dir: &Path| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("git runs");
        assert!(ok.success(), "git {args:?}");
    };
    let src = repo.path().join("src");
    std::fs::create_dir(&src).expect("src");
    git(&["init", "-q", "-b", "main"], &src);
    std::fs::write(src.join("README"), "cloned through the proxy\n").expect("file");
    git(&["add", "README"], &src);
    git(
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "one",
        ],
        &src,
    );
    // The dumb HTTP protocol: a bare repository with its info files, served as files.
    let http = StaticServer::start(|served| {
        let bare = served.join("repo.git");
        let bare = bare.to_str().expect("utf-8 path");
        git(&["clone", "-q", "--bare", ".", bare], &src);
        git(&["update-server-info"], Path::new(bare));
    });
    let t = Net::new("network = [\"git.test\"]\nnetwork_allow_local = true");
    let (code, v) = t.run(
        &[],
        &format!(
            "GIT_CONFIG_GLOBAL=/dev/null git clone -q http://git.test:{}/repo.git copy && cat copy/README",
            http.port
        ),
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(s(&v, "output"), "cloned through the proxy\n", "{v}");
}

#[test]
fn a_slow_client_stalls_neither_other_connections_nor_other_runs() {
    let a = server("from-a");
    let t = Net::allowing(a.port);
    // Twenty clients that start a request and never finish it, held open while
    // another request goes through.
    let hold = format!(
        "{py} -c '
import socket, time
held = []
for _ in range(20):
    s = socket.create_connection((\"127.0.0.1\", 3128))
    s.sendall(b\"CONNECT allowed.test:{a} HT\")
    held.append(s)
print(\"holding\", flush=True)
time.sleep(60)
' &",
        py = python(),
        a = a.port
    );
    let script = format!(
        "{hold} sleep 0.2; until curl -sS http://allowed.test:{a}/; do sleep 0.1; done; echo; kill %1",
        a = a.port
    );
    let mut slow = t
        .cmd(&[
            "run",
            "--json",
            "-p",
            &t.profile,
            "--",
            &format!("{hold} wait"),
        ])
        .spawn();
    let (code, v) = t.run(&[], &script);
    assert_eq!(code, Some(0), "{v}");
    assert!(s(&v, "output").contains("from-a"), "{v}");
    // Meanwhile another run, whose own proxy holds twenty slow clients, is still going.
    assert!(
        slow.next_line(Duration::ZERO).is_none(),
        "the slow run is still running"
    );
    slow.signal(libc::SIGTERM);
    let _ = slow.wait();
}

#[test]
fn the_proxy_holds_a_hundred_connections_at_once() {
    // Each connection is answered only once a hundred are open together.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let open = Arc::new((Mutex::new(0usize), std::sync::Condvar::new()));
    let most = Arc::new(AtomicUsize::new(0));
    let (open2, most2) = (open.clone(), most.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let (open, most) = (open2.clone(), most2.clone());
            std::thread::spawn(move || {
                let mut ping = [0u8; 5];
                if conn.read_exact(&mut ping).is_err() {
                    return;
                }
                let (count, all) = &*open;
                let mut n = count.lock().expect("lock");
                *n += 1;
                most.fetch_max(*n, Ordering::SeqCst);
                all.notify_all();
                let deadline = Instant::now() + Duration::from_secs(30);
                while *n < 100 && Instant::now() < deadline {
                    n = all
                        .wait_timeout(n, Duration::from_millis(100))
                        .expect("wait")
                        .0;
                }
                drop(n);
                let _ = conn.write_all(b"pong\n");
            });
        }
    });
    let t = Net::allowing(port);
    let script = format!(
        "{py} -c '
import socket
conns = []
for _ in range(100):
    s = socket.create_connection((\"127.0.0.1\", 3128))
    s.sendall(b\"CONNECT allowed.test:{port} HTTP/1.1\\r\\n\\r\\n\")
    conns.append(s)
for s in conns:
    head = b\"\"
    while not head.endswith(b\"\\r\\n\\r\\n\"):
        head += s.recv(1)
    assert head.startswith(b\"HTTP/1.1 200\"), head
    s.sendall(b\"ping\\n\")
pongs = sum(1 for s in conns if s.makefile().readline() == \"pong\\n\")
print(\"pongs\", pongs)
'",
        py = python()
    );
    let (code, v) = t.run(&[], &script);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(s(&v, "output"), "pongs 100\n", "{v}");
    assert_eq!(most.load(Ordering::SeqCst), 100);
}

/// Descriptors open in `pid`.
fn fd_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Threads of `pid` named after the proxy.
fn proxy_threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("agentbash-netpr"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// What `probe` gives once it gave the same twice, 100 ms apart (bounded).
fn steady(probe: impl Fn() -> usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = probe();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = probe();
        if now == last || Instant::now() >= deadline {
            return now;
        }
        last = now;
    }
}

/// Wait (bounded) until `probe` gives `want`; the last value seen.
fn settles(want: usize, probe: impl Fn() -> usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = probe();
        if got == want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_proxy_ends_with_the_run_leaving_no_thread_and_no_descriptor() {
    let a = server("from-a");
    // `--noprofile -c`: not a live shell, so every request is a run of its own.
    let t = Net::allowing(a.port);
    let profile = std::fs::read_to_string(&t.profile)
        .expect("profile")
        .replace(
            "snapshot = false",
            "snapshot = false\nargs = [\"--noprofile\", \"-c\"]",
        );
    std::fs::write(&t.profile, profile).expect("profile");
    let mut rpc = LiveServer::start_cmd(t.cmd(&["rpc", "-p", &t.profile]));
    let pid = rpc.pid();
    // A first run through the proxy, long enough that the server has started what it
    // keeps for good: the cgroup watchdog (once a run lasts 20 ms) and tokio's
    // process-wide signal pipe (made by the first runtime).
    let warm = rpc.ask(json!({"id": 1, "type": "bash",
        "command": format!("curl -sS http://allowed.test:{}/; sleep 0.2", a.port)}));
    assert_eq!(warm["data"]["output"], "from-a", "{warm}");
    settles(0, || proxy_threads(pid));
    // The request's worker thread ends right after it answered.
    let (fds, threads) = (steady(|| fd_count(pid)), steady(|| thread_count(pid)));
    let command = format!(
        "for i in 1 2 3 4 5; do curl -sS http://allowed.test:{a}/; done; curl -sS http://refused.test:{a}/; \
         (sleep 30 </dev/null >/dev/null 2>&1 &); exec 3<>/dev/tcp/127.0.0.1/3128",
        a = a.port
    );
    let during = std::thread::spawn(move || {
        // The proxy exists while the run does (asleep or serving).
        let deadline = Instant::now() + Duration::from_secs(10);
        while proxy_threads(pid) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        proxy_threads(pid)
    });
    let r = rpc.ask(json!({"id": 2, "type": "bash", "command": command}));
    let refused_body = format!(
        "[sandbox: network access to refused.test:{a} was refused; allowed: allowed.test:{a}. Add it to sandbox.network]\n",
        a = a.port
    );
    assert_eq!(
        r["data"]["output"],
        format!("{}{refused_body}", "from-a".repeat(5)),
        "{r}"
    );
    assert_eq!(
        during.join().expect("probe"),
        1,
        "one proxy thread served the run"
    );
    assert_eq!(
        settles(0, || proxy_threads(pid)),
        0,
        "the proxy's thread ended"
    );
    assert_eq!(
        settles(threads, || thread_count(pid)),
        threads,
        "no thread left"
    );
    assert_eq!(settles(fds, || fd_count(pid)), fds, "no descriptor left");
}

#[test]
fn pty_mode_goes_through_the_proxy_too() {
    let a = server("from-a");
    let t = Net::allowing(a.port);
    let (code, v) = t.run(
        &["--pty"],
        &format!(
            "curl -sS http://allowed.test:{a}/; echo; curl -sS http://refused.test:{a}/ >/dev/null",
            a = a.port
        ),
    );
    assert_eq!(v["mode"], "pty", "{v}");
    assert_eq!(code, Some(0), "{v}");
    assert!(s(&v, "output").contains("from-a"), "{v}");
    assert_refused_once(&v, "refused.test", a.port);
}

#[test]
fn each_run_of_a_session_reports_its_own_refusals() {
    let a = server("from-a");
    let t = Net::allowing(a.port);
    let (_, v) = t.run(
        &["--session", "s1"],
        &format!(
            "export WHERE=allowed.test:{}; curl -sS http://refused.test:1/",
            a.port
        ),
    );
    assert_refused_once(&v, "refused.test", 1);
    let (code, v) = t.run(&["--session", "s1"], "curl -sS http://$WHERE/");
    assert_eq!((code, s(&v, "output")), (Some(0), "from-a"), "{v}");
    assert!(denied(&v).is_empty(), "{v}");
}

#[test]
fn a_live_rpc_shell_keeps_its_proxy_and_each_request_reports_only_its_own() {
    let a = server("from-a");
    let t = Net::allowing(a.port);
    let mut rpc = LiveServer::start_cmd(t.cmd(&["rpc", "-p", &t.profile]));
    let ask = |rpc: &mut LiveServer, id: u64, command: String| {
        let r = rpc.ask(json!({"id": id, "type": "bash", "command": command}));
        assert_eq!(r["success"], true, "{r}");
        r["data"].clone()
    };
    let first = ask(
        &mut rpc,
        1,
        "echo $$; curl -sS http://refused.test:1/".into(),
    );
    assert_refused_once(&first, "refused.test", 1);
    let second = ask(
        &mut rpc,
        2,
        format!("echo $$; curl -sS http://allowed.test:{}/", a.port),
    );
    let shell = |v: &Value| {
        s(v, "output")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        shell(&first),
        shell(&second),
        "the same live shell: {second}"
    );
    assert!(s(&second, "output").contains("from-a"), "{second}");
    assert!(
        denied(&second).is_empty(),
        "the first request's refusal is not repeated: {second}"
    );
    let third = ask(
        &mut rpc,
        3,
        "curl -sS http://refused.test:1/; curl -sS http://refused.test:2/".into(),
    );
    assert_eq!(
        denied(&third),
        vec![
            refusal("refused.test", 1, 1, "not-listed"),
            refusal("refused.test", 2, 1, "not-listed"),
        ]
    );
}

#[test]
fn an_mcp_shell_goes_through_the_proxy() {
    let a = server("from-a");
    let profile = tempfile::NamedTempFile::new().expect("profile");
    std::fs::write(
        profile.path(),
        format!(
            "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\nmode = \"read-only\"\nnetwork = [\"allowed.test:{}\"]\nnetwork_allow_local = true\n",
            a.port
        ),
    )
    .expect("write profile");
    let path = profile.path().display().to_string();
    let env = TestEnv::new();
    let mut server = LiveServer::mcp_raw(
        env.cmd(&["mcp", "-p", &path])
            .env("AGENTBASH_TEST_PROXY_HOSTS", HOSTS),
    );
    server.initialize();
    server.call(
        2,
        "bash",
        json!({"command": format!("curl -sS http://allowed.test:{a}/; curl -sS http://refused.test:{a}/ >/dev/null", a = a.port)}),
    );
    let answer = server.answer(2, Duration::from_secs(30));
    let result = &answer["result"]["structuredContent"];
    assert!(s(result, "output").contains("from-a"), "{answer}");
    assert_eq!(
        denied(result),
        vec![refusal("refused.test", a.port, 1, "not-listed")]
    );
}

#[test]
fn a_jobs_proxy_lives_in_its_supervisor_as_long_as_the_job() {
    let a = server("from-a");
    let t = Net::allowing(a.port);
    // The job reaches out only after the command that started it has exited.
    let command = format!(
        "sleep 1; curl -sS http://allowed.test:{a}/; echo; curl -sS http://refused.test:{a}/ >/dev/null; echo done",
        a = a.port
    );
    let out = t
        .cmd(&[
            "job", "start", "-p", &t.profile, "--name", "net", "--", &command,
        ])
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    // By the job's end its output holds the refusal: the supervisor writes the notice
    // when it next looks at the proxy's log, which may be after the command's `done`
    // (polling for `done` alone raced with it: it failed once in a full run of the suite).
    let waited = t.cmd(&["job", "wait", "net", "-t", "30"]).run();
    assert_eq!(
        waited.code(),
        Some(0),
        "{} {}",
        waited.stdout,
        waited.stderr
    );
    let text = t
        .cmd(&["job", "output", "net", "--tail", "50"])
        .run()
        .stdout;
    assert_has(&text, "done");
    assert_has(&text, "from-a");
    assert!(
        text.contains(&format!(
            "[sandbox: network access to refused.test:{} was refused",
            a.port
        )),
        "{text}"
    );
}

#[test]
fn explain_shows_the_list_and_a_bad_entry_is_an_error_at_its_place() {
    let t = Net::new("network = [\"pypi.org\", \"*.example.org:443\", \"!bad.example.org\"]");
    let out = t.cmd(&["explain", "-p", &t.profile, "--", "true"]).run();
    assert_has(&out.stdout, "network allowlist");
    assert_has(
        &out.stdout,
        "pypi.org *.example.org:443 !bad.example.org; local addresses refused",
    );
    let out = t
        .cmd(&["explain", "--json", "-p", &t.profile, "--", "true"])
        .run();
    assert_eq!(
        out.json()["sandbox"]["network"],
        json!(["pypi.org", "*.example.org:443", "!bad.example.org"])
    );

    let bad = t.env.root().join("bad.toml");
    std::fs::write(
        &bad,
        "[sandbox]\nmode = \"read-only\"\nnetwork = [\n  \"pypi.org\",\n  \"https://evil.example/x\",\n]\n",
    )
    .expect("write");
    let bad = bad.display().to_string();
    let out = t.cmd(&["run", "-p", &bad, "--", "true"]).run();
    assert_eq!(out.code(), Some(125));
    assert!(
        out.stderr.contains(&format!(
            "{bad}:5:3: sandbox.network: invalid entry \"https://evil.example/x\": it is a URL or a path"
        )),
        "{}",
        out.stderr
    );
    let local = t.env.root().join("local.toml");
    std::fs::write(
        &local,
        "[sandbox]\nmode = \"read-only\"\nnetwork = [\"localhost:8080\"]\n",
    )
    .expect("write");
    let out = t
        .cmd(&["profile", "check", &local.display().to_string()])
        .run();
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert_has(
        &out.stdout,
        "local.toml:3:1: sandbox.network: \"localhost:8080\" names a local address, which the proxy refuses unless sandbox.network_allow_local = true",
    );
}

#[test]
fn npm_reads_a_local_registry_through_the_proxy() {
    if !has_program("npm") {
        skip!(needs_program("npm", "npm"));
    }
    let registry = StaticServer::start(|dir| {
        let packument = r#"{"name":"tinypkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tinypkg","version":"1.0.0","description":"served through the proxy","dist":{"tarball":"http://npm.test/tinypkg-1.0.0.tgz","shasum":"0000000000000000000000000000000000000000"}}}}"#;
        std::fs::write(dir.join("tinypkg"), packument).expect("packument");
    });
    let t = Net::new("network = [\"npm.test\"]\nnetwork_allow_local = true");
    let script = format!(
        "export npm_config_cache=\"$TMPDIR/npm\" npm_config_update_notifier=false; \
         npm view tinypkg description --registry http://npm.test:{}/",
        registry.port
    );
    let (code, v) = t.run(&[], &script);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(s(&v, "output"), "served through the proxy\n", "{v}");
}

#[test]
fn cargo_fetches_from_a_local_sparse_registry_through_the_proxy() {
    // The toolchain's own cargo and rustc (not rustup's proxies, which would write
    // their home outside the sandbox).
    let cargo = PathBuf::from(env!("CARGO"));
    let rustc = cargo.with_file_name("rustc");
    let registry = StaticServer::start(|dir| {
        let src = dir.join("tinycrate-0.1.0");
        std::fs::create_dir_all(src.join("src")).expect("crate dir");
        std::fs::write(
            src.join("Cargo.toml"),
            "[package]\nname = \"tinycrate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .expect("manifest");
        std::fs::write(src.join("src/lib.rs"), "pub fn hello() {}\n").expect("lib");
        std::fs::create_dir_all(dir.join("dl")).expect("dl");
        let packed = std::process::Command::new("tar")
            .args(["czf", "dl/tinycrate-0.1.0.crate", "tinycrate-0.1.0"])
            .current_dir(dir)
            .status()
            .expect("tar");
        assert!(packed.success());
        let bytes = std::fs::read(dir.join("dl/tinycrate-0.1.0.crate")).expect("crate");
        let sum: String = {
            use sha2::Digest;
            sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        std::fs::create_dir_all(dir.join("index/ti/ny")).expect("index");
        std::fs::write(
            dir.join("index/ti/ny/tinycrate"),
            format!(
                "{{\"name\":\"tinycrate\",\"vers\":\"0.1.0\",\"deps\":[],\"cksum\":\"{sum}\",\"features\":{{}},\"yanked\":false}}\n"
            ),
        )
        .expect("entry");
    });
    std::fs::write(
        registry.dir.path().join("index/config.json"),
        format!(
            "{{\"dl\":\"http://crates.test:{}/dl/{{crate}}-{{version}}.crate\",\"api\":null}}",
            registry.port
        ),
    )
    .expect("config.json");
    let t = Net::new("network = [\"crates.test\"]\nnetwork_allow_local = true");
    t.env.write(
        "Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntinycrate = { version = \"0.1\", registry = \"local\" }\n",
    );
    t.env.write("src/main.rs", "fn main() {}\n");
    let script = format!(
        "export CARGO_HOME=\"$TMPDIR/cargo\" RUSTC={rustc}; mkdir -p \"$CARGO_HOME\"; \
         printf '[registries.local]\\nindex = \"sparse+http://crates.test:{port}/index/\"\\n' > \"$CARGO_HOME/config.toml\"; \
         {cargo} fetch -q && ls \"$CARGO_HOME\"/registry/cache/*/",
        rustc = rustc.display(),
        cargo = cargo.display(),
        port = registry.port
    );
    let (code, v) = t.run(&[], &script);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(s(&v, "output"), "tinycrate-0.1.0.crate\n", "{v}");
}

#[test]
fn without_a_network_namespace_a_list_means_no_network_at_all() {
    let a = server("from-a");
    let t = Net::new(&format!(
        "engine = \"landlock\"\nnetwork = [\"allowed.test:{a}\", \"localhost:{a}\"]\nnetwork_allow_local = true",
        a = a.port
    ));
    let (_, v) = t.run(
        &[],
        &format!(
            "curl -sS -m 5 http://allowed.test:{a}/; curl -sS -m 5 --noproxy '*' http://127.0.0.1:{a}/; true",
            a = a.port
        ),
    );
    assert_eq!(v["sandbox"]["engine"], "landlock", "{v}");
    assert_eq!(a.hits(), 0, "{v}");
    assert_eq!(v["sandbox"]["network"], false, "{v}");
    assert!(
        v["sandbox"]["notes"].as_array().is_some_and(|n| n
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("network allowlist")))),
        "{v}"
    );
}

#[test]
fn a_list_with_the_sandbox_off_is_not_dropped_silently() {
    let t = Net::with_mode("off", "network = [\"pypi.org\"]");
    let (code, v) = t.run(&[], "true");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["sandbox"], Value::Null, "{v}");
    assert!(
        v["warnings"].as_array().is_some_and(|w| w.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("network lists destinations, but the sandbox is off")))),
        "{v}"
    );
}

#[test]
fn a_user_other_than_root_gets_the_proxy_too() {
    if !is_root() {
        skip!(needs_root("to run the command as nobody"));
    }
    if !has_program("setpriv") {
        skip!(needs_program("setpriv", "util-linux"));
    }
    let a = server("from-a");
    let root = tempfile::tempdir().expect("temp");
    let profile = root.path().join("net.toml");
    std::fs::write(
        &profile,
        format!(
            "extends = \"default\"\n[shell]\nsnapshot = false\n[sandbox]\nmode = \"workspace-write\"\nnetwork = [\"allowed.test:{}\"]\nnetwork_allow_local = true\n",
            a.port
        ),
    )
    .expect("profile");
    let command = format!(
        "id -u; curl -sS http://allowed.test:{a}/; echo; curl -sS http://refused.test:{a}/ >/dev/null",
        a = a.port
    );
    let args = [
        "run",
        "--json",
        "-p",
        profile.to_str().expect("utf-8"),
        "--",
        &command,
    ];
    let v = run_json_as_nobody(root.path(), &args, &[("AGENTBASH_TEST_PROXY_HOSTS", HOSTS)]);
    assert_eq!(v["sandbox"]["engine"], "namespaces", "{v}");
    assert_eq!(s(&v, "output"), "65534\nfrom-a\n", "{v}");
    assert_refused_once(&v, "refused.test", a.port);
}
