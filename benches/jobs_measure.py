#!/usr/bin/env python3
"""Measure jobs (README "Jobs"): `job start` to ready for `sleep 60`, the `job output`
round trip, and the supervisor's RSS, idle and while its job prints 1 GiB.

Usage: python3 benches/jobs_measure.py target/release/agentbash
Runs in a private AGENTBASH_STATE_DIR and AGENTBASH_CONFIG_DIR; every job it starts is
stopped with `job stop`. The start is timed with `jobs.start_wait_ms = 0` (a profile of
its own): the time to a running job, not the wait for an early failure.
"""
import os, subprocess, sys, time, json, statistics, tempfile
B = sys.argv[1]
_dir = tempfile.TemporaryDirectory(prefix="jobs-measure-")
st = _dir.name
os.makedirs(os.path.join(st, "config", "profiles"))
with open(os.path.join(st, "config", "profiles", "nowait.toml"), "w") as f:
    f.write('extends = "default"\n[jobs]\nstart_wait_ms = 0\n')
env = dict(os.environ, AGENTBASH_STATE_DIR=st, AGENTBASH_CONFIG_DIR=os.path.join(st, "config"))
def run(*a):
    return subprocess.run([B, *a], env=env, capture_output=True, text=True)
def ms(f, n=20):
    xs = []
    for _ in range(n):
        t = time.perf_counter(); f(); xs.append((time.perf_counter() - t) * 1000)
    return statistics.median(xs), min(xs)
bare = ms(lambda: subprocess.run(["sleep", "0"]))
def timed_start():
    xs = []
    for _ in range(20):
        t = time.perf_counter(); r = run("job", "start", "-p", "nowait", "--json", "--", "sleep 60"); xs.append((time.perf_counter() - t) * 1000)
        job = json.loads(r.stdout)["job"]
        assert job["state"] == "running", r.stdout
        run("job", "stop", job["url"])
    return statistics.median(xs), min(xs)
start = timed_start()
r = json.loads(run("job", "start", "--json", "--name", "p", "--", "echo hello; sleep 60").stdout)
out = ms(lambda: run("job", "output", "p", "--cursor", "0"))
sup = r["job"]["supervisor_pid"]
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) / 1024
idle_rss = rss(sup)
run("job", "stop", "p")
r = json.loads(run("job", "start", "--json", "--name", "flood", "--", "head -c 1073741824 /dev/zero | tr '\\0' x").stdout)
sup = r["job"]["supervisor_pid"]; peak = 0; t = time.time()
while os.path.exists(f"/proc/{sup}") and time.time() - t < 120:
    try: peak = max(peak, rss(sup))
    except Exception: break
    time.sleep(0.05)
flood_s = time.time() - t
log = r["job"]["log_path"]
logs = sum(os.path.getsize(os.path.join(log, f)) for f in os.listdir(log))
run("job", "stop", "flood")
print(f"bare `sleep 0` spawn: median {bare[0]:.1f} ms")
print(f"job start -- sleep 60 (to running, start_wait_ms 0): median {start[0]:.1f} ms, min {start[1]:.1f} ms")
print(f"job output --cursor 0 round trip: median {out[0]:.1f} ms, min {out[1]:.1f} ms")
print(f"supervisor RSS, idle job: {idle_rss:.1f} MiB")
print(f"supervisor RSS peak while the job printed 1 GiB: {peak:.1f} MiB ({flood_s:.1f} s; log on disk {logs} bytes, jobs.log_max_bytes 8388608)")
