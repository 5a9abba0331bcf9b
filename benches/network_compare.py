"""What a network allowlist costs a run that opens no socket: `run -q -- true` under
`workspace-write` with `network = false` (an empty network namespace) against the same
with `network = [list]` (the namespace, loopback brought up, the proxy's socket handed
over, and the proxy's thread, asleep), plus `network = true` and `bash -c true` for
scale. Every case alternates in every round, so a change in machine load hits each
alike. Medians of N rounds; the allowlist's cost is its median minus network = false's,
in wall time and in CPU time (user + system of agentbash and what it waited for, from
wait4: on a loaded machine the wall time also holds the waits for a CPU).

Usage: python3 benches/network_compare.py AGENTBASH [N]    (release build advised)
"""
import os, statistics, sys, tempfile, time, atexit, shutil

agentbash = os.path.abspath(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
tmp = tempfile.mkdtemp()
atexit.register(shutil.rmtree, tmp, True)  # its state dir and HOME go with it
work = os.path.join(tmp, "work")
os.makedirs(work)
env = dict(os.environ, AGENTBASH_STATE_DIR=tmp + "/state", HOME=tmp)
profiles = {}
for name, network in [
    ("true", "true"),
    ("false", "false"),
    ("list", '["pypi.org", "files.pythonhosted.org", "*.crates.io", "!evil.example"]'),
]:
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(
            'extends = "default"\n[shell]\nsnapshot = false\n'
            f'[sandbox]\nmode = "workspace-write"\nnetwork = {network}\n'
        )
    profiles[name] = path
cases = [("bash -c true", ["/bin/bash", "-c", "true"])]
for p in ("true", "false", "list"):
    cases.append((f"network = {p}", [agentbash, "run", "-q", "-p", profiles[p], "--", "true"]))
times = {c[0]: [] for c in cases}
cpu = {c[0]: [] for c in cases}
devnull = os.open("/dev/null", os.O_RDWR)
fa = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
os.chdir(work)
for _ in range(n):
    for name, argv in cases:
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=fa)
        _, status, usage = os.wait4(pid, 0)
        times[name].append(time.perf_counter() - t)
        cpu[name].append(usage.ru_utime + usage.ru_stime)
        if status != 0:
            sys.exit(f"{name} failed with status {status}")
med = {name: statistics.median(v) for name, v in times.items()}
mcpu = {name: statistics.median(v) for name, v in cpu.items()}
for name, _ in cases:
    print(f"{name:<18} wall {med[name] * 1e3:7.3f} ms   cpu {mcpu[name] * 1e3:7.3f} ms")
cost = med["network = list"] - med["network = false"]
cost_cpu = mcpu["network = list"] - mcpu["network = false"]
print(f"allowlist over network = false: wall {cost * 1e3:+.3f} ms, cpu {cost_cpu * 1e3:+.3f} ms "
      f"(medians of {n} rounds; load average {os.getloadavg()[0]:.1f})")
