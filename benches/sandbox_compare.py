"""Sandbox start-up of two agentbash builds side by side: `run -q -- true` of OLD and
NEW, each with the sandbox off and with `workspace-write` (the default engine:
namespaces + Landlock), plus `bash -c true`, every case alternated in every round so a
change in machine load hits each alike. Medians of N rounds, ratios against bash, and
each build's sandbox cost (sandboxed minus off), in wall time and in CPU time (user +
system of the whole process tree, which a loaded machine disturbs far less).

Usage: python3 benches/sandbox_compare.py OLD_AGENTBASH NEW_AGENTBASH [N]
"""
import os, sys, time, statistics, tempfile, atexit, shutil
old, new = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
tmp = tempfile.mkdtemp()
atexit.register(shutil.rmtree, tmp, True)  # its state dir and HOME go with it
work = os.path.join(tmp, "work")
os.makedirs(work)
env = dict(os.environ, AGENTBASH_STATE_DIR=tmp + "/state", HOME=tmp)
profiles = {}
for name, section in [("off", 'mode = "off"'), ("ws", 'mode = "workspace-write"')]:
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write('extends = "default"\n[shell]\nsnapshot = false\n[sandbox]\n' + section + "\n")
    profiles[name] = path
cases = [("bash -c true", ["/bin/bash", "-c", "true"])]
for label, binary in [("old", old), ("new", new)]:
    for p in ("off", "ws"):
        cases.append((f"{label} {p}", [binary, "run", "-q", "-p", profiles[p], "--", "true"]))
times = {c[0]: [] for c in cases}
cpu = {c[0]: [] for c in cases}
devnull = os.open("/dev/null", os.O_RDWR)
fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
      (os.POSIX_SPAWN_DUP2, devnull, 2)]
os.chdir(work)
for i in range(n):
    for name, argv in cases:
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=fa)
        _, status, usage = os.wait4(pid, 0)
        times[name].append(time.perf_counter() - t)
        cpu[name].append(usage.ru_utime + usage.ru_stime)
        if status != 0:
            sys.exit(f"{name} failed with status {status}")
med = {name: statistics.median(v) for name, v in times.items()}
mcpu = {name: statistics.mean(v) for name, v in cpu.items()}
bare = med["bash -c true"]
print(f"{'case':<16} {'wall (median)':>14} {'ratio':>6} {'cpu (mean)':>11}")
for name, _ in cases:
    print(f"{name:<16} {med[name]*1e3:11.3f} ms {med[name]/bare:6.2f} {mcpu[name]*1e3:8.3f} ms")
for label in ("old", "new"):
    wall = (med[label + ' ws'] - med[label + ' off']) * 1e3
    used = (mcpu[label + ' ws'] - mcpu[label + ' off']) * 1e3
    print(f"{label} sandbox cost: wall +{wall:.3f} ms, cpu +{used:.3f} ms")
print(f"new - old, sandboxed: wall {(med['new ws'] - med['old ws'])*1e3:+.3f} ms, "
      f"cpu {(mcpu['new ws'] - mcpu['old ws'])*1e3:+.3f} ms")
