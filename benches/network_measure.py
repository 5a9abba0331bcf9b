"""The network allowlist's proxy under load, on loopback only:

- throughput: a 100 MiB download with curl from a local server (sendfile), inside a
  `workspace-write` sandbox with `network = true` (direct) against `network = [list]`
  (through agentbash's proxy: plain HTTP, and CONNECT with `--proxytunnel`), rounds
  alternated, medians; by address (`127.0.0.1`), so no case pays a name lookup. Two
  rates: over the whole download, and over the transfer alone (after the first byte:
  the proxy's one-time start, its thread waking and its runtime built, is not in it);
- memory: the peak resident set (VmHWM) of the agentbash process itself, sampled from
  /proc while the run lasts, for the download and for 100 connections at once each
  reading 1 MiB, against the same runs with `network = true` (no proxy).

Usage: python3 benches/network_measure.py AGENTBASH [ROUNDS]   (release build advised)
"""
import os, socket, statistics, subprocess, sys, tempfile, threading, time, atexit, shutil

agentbash = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
tmp = tempfile.mkdtemp()
atexit.register(shutil.rmtree, tmp, True)  # its state dir and HOME go with it
work = os.path.join(tmp, "work")
os.makedirs(work)
big = os.path.join(tmp, "big")
with open(big, "wb") as f:
    f.write(os.urandom(1 << 20) * 100)
small = os.path.join(tmp, "small")
with open(small, "wb") as f:
    f.write(os.urandom(1 << 20))


def serve(conn):
    with conn:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                return
            head += chunk
        path = big if b" /big " in head.split(b"\r\n", 1)[0] else small
        size = os.path.getsize(path)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
        with open(path, "rb") as f:
            conn.sendfile(f)


listener = socket.create_server(("127.0.0.1", 0), backlog=512)
port = listener.getsockname()[1]


def accept():
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


threading.Thread(target=accept, daemon=True).start()
env = dict(os.environ, AGENTBASH_STATE_DIR=tmp + "/state", HOME=tmp)
profiles = {}
for name, network in [("direct", "true"), ("proxied", f'["127.0.0.1:{port}"]')]:
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(
            'extends = "default"\n[shell]\nsnapshot = false\n'
            f'[sandbox]\nmode = "workspace-write"\nnetwork = {network}\nnetwork_allow_local = true\n'
        )
    profiles[name] = path
python = subprocess.run(
    ["python3", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
).stdout.strip()
many = f"""{python} -c '
import os, selectors, socket
sel = selectors.DefaultSelector()
proxy = os.environ.get("http_proxy")
for _ in range(100):
    if proxy:
        s = socket.create_connection(("127.0.0.1", int(proxy.rsplit(":", 1)[1])))
        s.sendall(b"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n")
        head = b""
        while not head.endswith(b"\\r\\n\\r\\n"):
            head += s.recv(1)
    else:
        s = socket.create_connection(("127.0.0.1", {port}))
    s.sendall(b"GET /small HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    sel.register(s, selectors.EVENT_READ)
got = 0
while sel.get_map():
    for key, _ in sel.select():
        data = key.fileobj.recv(65536)
        if data:
            got += len(data)
        else:
            sel.unregister(key.fileobj)
            key.fileobj.close()
print(got)
'"""


def run(profile, script):
    """Run SCRIPT under PROFILE; (stdout, peak RSS of agentbash in KiB)."""
    p = subprocess.Popen(
        [agentbash, "run", "-q", "-p", profiles[profile], "--", script],
        env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    peak = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.002)
    out = p.stdout.read().decode()
    if p.returncode != 0:
        sys.exit(f"{profile}: {script!r} failed ({p.returncode}): {out}")
    return out, peak


curl = "curl -s -o /dev/null -w '%{size_download} %{time_starttransfer} %{time_total}' "
url = f"http://127.0.0.1:{port}/big"
cases = [
    ("direct", "direct", curl + url),
    ("proxy, plain HTTP", "proxied", curl + url),
    ("proxy, CONNECT", "proxied", curl + "--proxytunnel " + url),
]
whole = {c[0]: [] for c in cases}
transfer = {c[0]: [] for c in cases}
peaks = {c[0]: [] for c in cases}
for _ in range(rounds):
    for label, profile, script in cases:
        out, peak = run(profile, script)
        size, first, total = (float(x) for x in out.split())
        if size != 100 << 20:
            sys.exit(f"{label}: {size:.0f} bytes")
        whole[label].append(size / total)
        transfer[label].append(size / (total - first))
        peaks[label].append(peak)
print(f"100 MiB download, median of {rounds} rounds (load average {os.getloadavg()[0]:.1f}):")
for label, _, _ in cases:
    w, t = statistics.median(whole[label]), statistics.median(transfer[label])
    w0, t0 = statistics.median(whole["direct"]), statistics.median(transfer["direct"])
    print(
        f"  {label:<18} whole {w / 2**20:7.1f} MiB/s ({w / w0:6.1%})"
        f"  transfer {t / 2**20:7.1f} MiB/s ({t / t0:6.1%})"
        f"  agentbash peak RSS {statistics.median(peaks[label]) / 1024:4.1f} MiB"
    )
many_peaks = {"direct": [], "proxied": []}
for _ in range(rounds):
    for profile in many_peaks:
        out, peak = run(profile, many)
        if int(out) < 100 << 20:
            sys.exit(f"{profile}: 100 connections read only {out} bytes")
        many_peaks[profile].append(peak)
d, p = (statistics.median(many_peaks[k]) / 1024 for k in ("direct", "proxied"))
print(f"100 connections at once, 1 MiB each: agentbash peak RSS {d:.1f} MiB direct, "
      f"{p:.1f} MiB through the proxy: the proxy's share {p - d:+.1f} MiB")
