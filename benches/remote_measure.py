#!/usr/bin/env python3
"""Measure remote targets (docs/REMOTE.md): the round trip of `true` over a persistent
ssh target against local rpc and against the ssh link's own round trip, 100 concurrent
requests over one transport, and the client's memory per target.

Usage: python3 benches/remote_measure.py target/release/agentbash [N]

Starts its own OpenSSH server on 127.0.0.1 (a free port, host and user keys in a temp
dir, killed by pid at the end), as tests/it/remote.rs does; needs /usr/sbin/sshd,
ssh and ssh-keygen. Everything it starts runs in private state and config dirs.
"""
import json, os, shutil, socket, statistics, subprocess, sys, tempfile, time

B = os.path.abspath(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
tmp = tempfile.TemporaryDirectory(prefix="remote-measure-")
T = tmp.name
for d in ["local/state", "local/config/profiles", "remote/state", "remote/home", "ssh", "work"]:
    os.makedirs(os.path.join(T, d), exist_ok=True)
local_env = dict(os.environ, AGENTBASH_STATE_DIR=f"{T}/local/state", AGENTBASH_CONFIG_DIR=f"{T}/local/config")
local_env.pop("AGENTBASH_PROFILE", None)
remote_words = [
    f"HOME={T}/remote/home",
    f"AGENTBASH_STATE_DIR={T}/remote/state",
    f"AGENTBASH_CONFIG_DIR={T}/remote/config",
    f"PATH={os.environ.get('PATH', '')}",
]

# --- sshd on a free port -------------------------------------------------------
for key in ["host_key", "id"]:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{T}/ssh/{key}"], check=True)
shutil.copy(f"{T}/ssh/id.pub", f"{T}/ssh/authorized_keys")
if os.geteuid() == 0:
    os.makedirs("/run/sshd", exist_ok=True)
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
with open(f"{T}/ssh/sshd_config", "w") as f:
    f.write(f"""ListenAddress 127.0.0.1
Port {port}
HostKey {T}/ssh/host_key
PidFile {T}/ssh/sshd.pid
AuthorizedKeysFile {T}/ssh/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
UsePAM no
UseDNS no
LogLevel ERROR
""")
sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", f"{T}/ssh/sshd_config"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
import atexit
atexit.register(lambda: (sshd.poll() is None) and (os.kill(sshd.pid, 15), sshd.wait()))
user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
ssh = ["ssh", "-T", "-p", str(port), "-i", f"{T}/ssh/id", "-o", "StrictHostKeyChecking=no",
       "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
       f"{user}@127.0.0.1"]
deadline = time.time() + 10
while True:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
    except OSError:
        assert time.time() < deadline, "sshd did not start"; time.sleep(0.02)

def profile(name, transport):
    with open(f"{T}/local/config/profiles/{name}.toml", "w") as f:
        f.write("[target]\ntransport = " + json.dumps(transport) + "\n")
profile("ssh", ssh + ["cd", f"{T}/work", "&&", "env", *remote_words, B, "rpc"])
profile("argv", ["env", *remote_words, B, "rpc"])

class Peer:
    """A process speaking NDJSON on stdin/stdout."""
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=local_env, cwd=f"{T}/work")
    def send(self, v):
        self.p.stdin.write((json.dumps(v) + "\n").encode()); self.p.stdin.flush()
    def read(self):
        line = self.p.stdout.readline()
        assert line, "the peer closed its stdout"
        return json.loads(line)
    def ask(self, v):
        self.send(v)
        while True:
            m = self.read()
            if m.get("type") == "response" and m.get("id") == v["id"]:
                return m
    def close(self):
        self.p.stdin.close(); self.p.wait(timeout=30)

def rss_mib(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"):
            return int(l.split()[1]) / 1024

def parent(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None

def round_trips(peer, n):
    xs = []
    for i in range(n):
        t = time.perf_counter()
        m = peer.ask({"id": f"t{i}", "type": "bash", "command": "true"})
        xs.append((time.perf_counter() - t) * 1000)
        assert m["data"]["exit_code"] == 0, m
    xs.sort()
    print(f"  {peer.p.args[1:]}: p10 {xs[len(xs)//10]:.2f} p50 {xs[len(xs)//2]:.2f} p90 {xs[len(xs)*9//10]:.2f} max {xs[-1]:.2f} ms", file=sys.stderr)
    return statistics.median(xs), min(xs)

def concurrent(peer, n=100):
    t = time.perf_counter()
    for i in range(n):
        peer.send({"id": f"c{i}", "type": "bash", "command": f"echo {i}"})
    got = {}
    while len(got) < n:
        m = peer.read()
        if m.get("type") == "response":
            got[m["id"]] = m
    took = (time.perf_counter() - t) * 1000
    assert all(got[f"c{i}"]["data"]["output"] == f"{i}\n" for i in range(n))
    return took

# --- the ssh link's own round trip: one line echoed by `cat` over one session ----
link = subprocess.Popen(ssh + ["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
xs = []
for i in range(N + 20):
    t = time.perf_counter()
    link.stdin.write(b"x\n"); link.stdin.flush(); link.stdout.readline()
    xs.append((time.perf_counter() - t) * 1000)
link.stdin.close(); link.wait()
link_rtt = statistics.median(xs[20:]), min(xs[20:])

# --- local rpc --------------------------------------------------------------------
local = Peer([B, "rpc"])
base_rss = rss_mib(local.p.pid)
round_trips(local, 20)
local_rtt = round_trips(local, N)
local_100 = concurrent(local)
local.close()

# --- rpc through targets ------------------------------------------------------------
def through(name):
    peer = Peer([B, "rpc", "--target", name])
    peer.ask({"id": "h", "type": "hello"})
    idle = rss_mib(peer.p.pid)
    round_trips(peer, 20)
    rtt = round_trips(peer, N)
    c100 = concurrent(peer)
    after = rss_mib(peer.p.pid)
    kids = [p for p in os.listdir("/proc") if p.isdigit() and parent(p) == peer.p.pid]
    peer.close()
    return rtt, c100, idle, after, len(kids)

ssh_rtt, ssh_100, ssh_idle, ssh_after, ssh_kids = through("ssh")
argv_rtt, argv_100, argv_idle, argv_after, argv_kids = through("argv")


print(f"binary: {B}; N = {N} sequential `true` requests after 20 warm-up ones (median, min)")
print(f"ssh link's own round trip (one line through `cat` over one session): {link_rtt[0]:.2f} ms, {link_rtt[1]:.2f} ms")
print(f"local rpc: {local_rtt[0]:.2f} ms, {local_rtt[1]:.2f} ms")
print(f"rpc --target over ssh: {ssh_rtt[0]:.2f} ms, {ssh_rtt[1]:.2f} ms; bound 2 x local + link = {2 * local_rtt[0] + link_rtt[0]:.2f} ms; ratio to (local + link) {ssh_rtt[0] / (local_rtt[0] + link_rtt[0]):.2f}")
print(f"rpc --target over a local argv (no link): {argv_rtt[0]:.2f} ms, {argv_rtt[1]:.2f} ms; ratio to local {argv_rtt[0] / local_rtt[0]:.2f}")
print(f"100 concurrent `echo` requests: local rpc {local_100:.0f} ms; over ssh {ssh_100:.0f} ms; over a local argv {argv_100:.0f} ms; transport processes per client: ssh {ssh_kids}, argv {argv_kids}")
print(f"client RSS: a fresh local `agentbash rpc` {base_rss:.1f} MiB; `rpc --target ssh` connected {ssh_idle:.1f} MiB, after the 100 {ssh_after:.1f} MiB (delta over the fresh server {ssh_after - base_rss:+.1f} MiB); `rpc --target argv` after the 100 {argv_after:.1f} MiB")
