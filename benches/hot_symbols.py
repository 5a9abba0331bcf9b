"""Write link/hot-symbols.txt: the functions a release build of agentbash runs on its
common paths, for the linker to lay out next to each other (build.rs passes the file to
lld as `--symbol-ordering-file` in release builds).

Why: a run's start-up is paid on every command, and about a quarter of agentbash's own
CPU at start-up was page faults on its 9 MB of code — each fault maps the 64 KiB around
the faulting address, and the ~550 functions a run executes were spread over ~75 such
windows. Laid out together they fit in ~14 (docs/BENCHMARKS.md, "Code laid out for
start-up").

How: each workload (benches/hot_workloads.py) runs once under `valgrind
--tool=callgrind`, which lists every function executed; the names the binary's symbol
table knows are written in the order of their address in the given binary. The quiet
runs (what nearly every run does) also run natively, single-stepped under ptrace, for
the code valgrind cannot see: glibc's
start-up sets up the vDSO, which valgrind does not provide (`_dl_new_object`,
`_dl_lookup_symbol_x`, `__strcmp_avx2`), the C runtime's `frame_dummy`, and paths that
depend on the real environment. Left out, each of them cost a 64 KiB window of code of
its own at every start (docs/BENCHMARKS.md, "Two states of the page cache, and the data
laid out for start-up"). Names are mangled with a hash of the crate's build metadata,
so a new Rust version or dependency change leaves some names stale:
lld ignores those (the rest are still laid out), and running this again after such a
change brings the file up to date.

The legacy symbol names rustc gives carry a hash of each function's type, so a hot
function whose signature changes gets a new name, drops out of the order, and start-up
slows without a word (one such function, `RunGroup::create`, cost 11 % of agentbash's
start-up: docs/BENCHMARKS.md). `--check` lists the file's names of agentbash's own
code that a release build lacks (nm only, a second) and exits 1 when there are any.

Usage: python3 benches/hot_symbols.py RELEASE_AGENTBASH [OUT]   (needs valgrind and nm)
       python3 benches/hot_symbols.py --check RELEASE_AGENTBASH
"""
import os, re, subprocess, sys, tempfile, atexit, shutil, bisect, platform

ORDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "link", "hot-symbols.txt")

def symbols_of(binary, *flags):
    try:
        return subprocess.run(["nm", *flags, binary], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"nm could not list the symbols of {binary} (binutils installed? a stripped binary?): {e}")

if len(sys.argv) == 3 and sys.argv[1] == "--check":
    if not os.path.isfile(sys.argv[2]):
        sys.exit(f"--check: no such file: {sys.argv[2]} (a release build, e.g. target/release/agentbash)")
    have = {parts[2] for parts in map(str.split, symbols_of(sys.argv[2]).splitlines()) if len(parts) == 3}
    with open(ORDER) as f:
        listed = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    own = re.compile(r"^(_ZN|_RN\w*?Cs\w+_)\d*9agentbash|agentbash\.\.")
    stale = [n for n in listed if n not in have and own.search(n)]
    print(f"{len(listed)} names in {os.path.normpath(ORDER)}; {len(stale)} of agentbash's own not in {sys.argv[2]}")
    for n in stale:
        print("  " + n)
    if stale:
        print("regenerate: python3 benches/hot_symbols.py " + sys.argv[2])
    sys.exit(1 if stale else 0)

if len(sys.argv) < 2 or not os.path.isfile(sys.argv[1]):
    sys.exit("usage: python3 benches/hot_symbols.py RELEASE_AGENTBASH [OUT]\n"
             "  RELEASE_AGENTBASH: a release build, e.g. target/release/agentbash (cargo build --release)")
binary = os.path.abspath(sys.argv[1])
out = sys.argv[2] if len(sys.argv) > 2 else ORDER

from hot_workloads import TIGHT, WORKLOADS, homes  # noqa: E402 (benches/ is the script's directory)

tmp = tempfile.mkdtemp()
atexit.register(shutil.rmtree, tmp, True)  # its homes (state dirs inside) go with it
envs = homes(tmp, binary)
executed = []  # per workload, the functions it ran
for i, (home, args) in enumerate(WORKLOADS):
    trace = os.path.join(tmp, f"callgrind.{i}")
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={trace}",
                    binary] + args, env=envs[home], cwd=envs[home]["HOME"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(trace):
        sys.exit(f"valgrind wrote no trace for `agentbash {' '.join(args)}`: is valgrind installed?")
    ran = set()
    with open(trace, errors="replace") as f:
        for line in f:
            m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
            if m:
                ran.add(m.group(1))
    executed.append(ran)

def native_trace(argv, env):
    """The instruction addresses `argv` executes natively in `env` (in its HOME),
    single-stepped under ptrace (its own process only: the spawned command is not
    followed). ~15 s a workload."""
    import ctypes, signal
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    TRACEME, PEEKUSER, CONT, SINGLESTEP, SETOPTIONS, O_EXITKILL = 0, 3, 7, 9, 0x4200, 0x100000
    RIP = 16 * 8  # offsetof(struct user_regs_struct, rip) on x86_64
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.chdir(env["HOME"])
            libc.ptrace(TRACEME, 0, None, None)
            os.kill(os.getpid(), signal.SIGSTOP)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.waitpid(pid, 0)  # stopped before the exec
    libc.ptrace(SETOPTIONS, pid, None, ctypes.c_void_p(O_EXITKILL))
    libc.ptrace(CONT, pid, None, None)
    _, status = os.waitpid(pid, 0)  # the exec's SIGTRAP
    rips = set()
    while os.WIFSTOPPED(status):
        rips.add(libc.ptrace(PEEKUSER, pid, RIP, None) & 0xFFFFFFFFFFFFFFFF)
        sig = os.WSTOPSIG(status)
        if libc.ptrace(SINGLESTEP, pid, None, 0 if sig == signal.SIGTRAP else sig) < 0:
            break
        _, status = os.waitpid(pid, 0)
    return rips

if platform.machine() == "x86_64":
    starts = []  # (address, size, name) of every function, to name the traced addresses
    for line in symbols_of(binary, "-S").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwWi":
            starts.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    starts.sort()
    keys = [a for a, _, _ in starts]
    for w in range(TIGHT):
        home, args = WORKLOADS[w]
        seen_natively = set()
        for rip in native_trace([binary] + args, envs[home]):
            i = bisect.bisect_right(keys, rip) - 1
            if i >= 0 and rip < starts[i][0] + max(starts[i][1], 1):
                seen_natively.add(starts[i][2])
        print(f"native trace of `{' '.join(args)}` ({home} home): {len(seen_natively - executed[w])} functions callgrind did not see")
        executed[w] |= seen_natively

# Only functions the binary's symbol table names (not valgrind's "(below main)" or bare
# addresses), each once: first what every start runs, then those of the first TIGHT
# workloads (nearly every run goes one of those ways, so they are kept tightest), then
# what each further workload adds; within each group in the order they stand in the
# binary today.
address, ifuncs = {}, []
for line in symbols_of(binary).splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwWi":
        address.setdefault(parts[2], int(parts[0], 16))
        if parts[1] == "i":
            ifuncs.append(parts[2])
# Two kinds of code every run executes that callgrind does not see: the resolvers of
# glibc's IFUNC symbols (memcpy, strlen, …: a static binary runs every one of them at
# start) and the spawner's child between clone and exec (valgrind does not follow it).
CHILD = re.compile(r"9agentbash7process.*\d(child_main|reset_signals\w*|install_stdio|apply_limits)(17h[0-9a-f]{16}E)?$")
CHILD_LIBC = {"__libc_sigaction", "__sigaction", "sigaction", "__sigprocmask", "sigprocmask",
              "__pthread_sigmask", "pthread_sigmask", "__dup2", "dup2", "__libc_fcntl64", "fcntl64",
              "fcntl", "syscall", "__chdir", "chdir", "__setsid", "setsid", "__prctl", "prctl",
              "__getppid", "getppid", "__execve", "execve", "_exit", "_Exit"}
always = set(ifuncs) | {n for n in address if CHILD.search(n) or n in CHILD_LIBC}
# glibc picks a string function's variant for the CPU it runs on (valgrind's CPU is not
# this one's): where a run used one variant of a family, all of them go in.
VARIANT = re.compile(r"^__([a-z0-9]+?)_(sse|avx|evex|erms)")
families = {m.group(1) for n in set().union(*executed) if (m := VARIANT.match(n))}
always |= {n for n in address if (m := VARIANT.match(n)) and m.group(1) in families}
hot, seen = [], set()
for ran in [always, set().union(*executed[:TIGHT])] + executed[TIGHT:]:
    group = sorted((n for n in ran if n in address and n not in seen), key=lambda n: (address[n], n))
    hot += group
    seen.update(group)
names = set().union(*executed)

rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                     capture_output=True, text=True).stdout.strip() or "unknown"
rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
with open(out, "w") as f:
    f.write("# Functions a run executes, laid out together by lld (build.rs, release builds).\n")
    f.write(f"# Written by benches/hot_symbols.py from a release build of {rev} ({rustc}).\n")
    f.write("# Regenerate after a Rust or dependency update; stale names are ignored by the linker.\n")
    for n in hot:
        f.write(n + "\n")
print(f"{len(hot)} functions ({len(names)} executed) -> {out}")
