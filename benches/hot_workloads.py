"""The runs whose code and data a release build lays out together for start-up: what
benches/hot_symbols.py (functions) and benches/hot_data.py (read-only data) trace.

Two homes. Most users have a ~/.bashrc, and a run then sources its snapshot, which it
finds, reads and checks on every run: code and data of their own (left out of the
layout, they cost a quiet run 21 windows of 64 KiB more, docs/BENCHMARKS.md). Others have
none, as the benchmarks' empty HOME. The first `TIGHT` workloads, a quiet run in each
home, are what nearly every run executes: they form the first group of the layout, kept
tightest. Then a run with output, JSON, a failing command, a pipeline, print mode, and
`explain` (which plans without running: it also walks the guard's refusal).

Each home gets one quiet run natively before any is traced (`homes`), so the traces see
a run as every run but the first is: the snapshot taken, the state directories and the
pooled run group made.
"""
import os
import subprocess

# A ~/.bashrc of the usual kinds of lines: exports, an alias, a function.
RC = """# ~/.bashrc of the traced runs (benches/hot_workloads.py)
export EDITOR=vi
export PATH="$HOME/.local/bin:$PATH"
alias ll='ls -l'
greet() { echo "hello $1"; }
"""

TIGHT = 2
WORKLOADS = [
    ("rc", ["run", "-q", "--", "true"]),
    ("plain", ["run", "-q", "--", "true"]),
    ("rc", ["run", "--", "echo hi"]),
    ("rc", ["run", "--json", "--", "echo out; echo err >&2; exit 3"]),
    ("plain", ["run", "-q", "--", "printf '%s\\n' a b c | sort -r"]),
    ("rc", ["run", "--mode", "print", "--", "seq 1 2000"]),
    ("plain", ["explain", "--", "ls -la"]),
    ("rc", ["explain", "--json", "--", "rm -rf /"]),
]


def make_home(home, rc, base=None):
    """Make the directory `home` (with a ~/.bashrc of `RC` when `rc`) and return the
    environment of a run in it: `base` (os.environ by default) without XDG_* (so
    cache and state are all under HOME), its state directory inside."""
    os.makedirs(home)
    if rc:
        with open(os.path.join(home, ".bashrc"), "w") as f:
            f.write(RC)
    env = {k: v for k, v in (base or os.environ).items() if not k.startswith("XDG_")}
    env.update(HOME=home, AGENTBASH_STATE_DIR=os.path.join(home, "state"))
    return env


def homes(tmp, binary):
    """The environment of each home (a directory under `tmp`, its state inside it), each
    warmed up by one quiet run of `binary`."""
    envs = {}
    for name in ("rc", "plain"):
        home = os.path.join(tmp, name)
        env = make_home(home, name == "rc")
        warm = subprocess.run([binary, "run", "-q", "--", "true"], env=env, cwd=home,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=120)
        if warm.returncode != 0:
            raise SystemExit(f"the warm-up run in the {name} home failed ({warm.returncode}): "
                             f"{warm.stderr.decode(errors='replace').strip()}")
        envs[name] = env
    if not any(f.endswith(".sh") for _, _, fs in os.walk(os.path.join(tmp, "rc")) for f in fs):
        raise SystemExit("the warm-up run took no snapshot of the rc home's .bashrc: the traces would miss that path")
    return envs
