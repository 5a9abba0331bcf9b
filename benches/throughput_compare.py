"""Output throughput of two agentbash builds side by side (the P2 case of `--bench
core`): 1 GiB of text lines through `run -q` of OLD and NEW against the same text
through `| cat > file`, the three alternated in every round so a change in machine load
hits each alike. Medians of N rounds, wall and CPU time (user + system of the whole
process tree, from wait4's rusage).

Usage: python3 benches/throughput_compare.py OLD_AGENTBASH NEW_AGENTBASH [N] [BYTES]
"""
import os, sys, time, statistics, tempfile, shutil
old, new = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
size = int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 30
tmp = tempfile.mkdtemp()
env = dict(os.environ, AGENTBASH_STATE_DIR=tmp + "/state", HOME=tmp)
lines = f"yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c {size}"
out = os.path.join(tmp, "out")
cases = [("old run -q", [old, "run", "-q", "--", lines]),
         ("new run -q", [new, "run", "-q", "--", lines]),
         ("| cat > file", ["/bin/bash", "-c", f"{lines} | cat > {out}"])]
times = {c[0]: [] for c in cases}
cpu = {c[0]: [] for c in cases}
devnull = os.open("/dev/null", os.O_RDWR)
fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
      (os.POSIX_SPAWN_DUP2, devnull, 2)]
for i in range(n):
    for name, argv in cases:
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=fa)
        _, _, ru = os.wait4(pid, 0)
        times[name].append(time.perf_counter() - t)
        cpu[name].append(ru.ru_utime + ru.ru_stime)
        shutil.rmtree(os.path.join(tmp, "state", "artifacts"), ignore_errors=True)
bare = statistics.median(times["| cat > file"])
bare_cpu = statistics.median(cpu["| cat > file"])
print(f"{'':<16} {'wall':>10} {'ratio':>6}   {'cpu':>10} {'ratio':>6}")
for name, _ in cases:
    m, c = statistics.median(times[name]), statistics.median(cpu[name])
    print(f"{name:<16} {m*1e3:8.0f} ms {m/bare:6.2f}   {c*1e3:8.0f} ms {c/bare_cpu:6.2f}")
shutil.rmtree(tmp, ignore_errors=True)
