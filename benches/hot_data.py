"""Write link/hot-data.ld: the read-only data a release build of agentbash reads on its
common paths, gathered by the linker into one output section at the start of the
read-only segment (build.rs passes the script to lld in release builds, beside
link/hot-symbols.txt, which does the same for code).

Why: a start faults in every 64 KiB window of the binary it touches, and in the page
cache state of an installed binary (read back by its own faults, in single pages) each
window costs ~6-12 us to map and unmap. A quiet run read ~13 KiB of constants spread
over 15 windows of .rodata: the ~180 constants of agentbash and its crates (string
literals, jump tables, ~6.5 KiB in all), the linker's merged constant pools
(.rodata.cst4/8/16/32 and the C strings of .rodata.str1.1, ~130 KiB), and a few of
glibc's objects (its start-up tables) — docs/BENCHMARKS.md, "Data laid out for
start-up".

How: a release build linked with a map (`AGENTBASH_LINK_MAP=/tmp/agentbash.map cargo
build --release`, build.rs) says which input section each address came from; each
workload of benches/hot_workloads.py runs once under `valgrind --tool=lackey
--trace-mem=yes`, which lists every address read; the input sections of .rodata read
are written as linker-script patterns, those of the first workload first. Rust names an
anonymous constant's section after its crate and a counter (`.rodata..Lanon.<hash>.<n>`),
which a change in that crate renumbers: regenerate after code changes, as for
hot-symbols.txt (a stale pattern matches nothing, or a constant that is not hot; the
layout stays correct either way). `--check MAP` says how many of the file's patterns
that build's map still has, and how many now name a section of another size (a
renumbered constant: other data).

Usage: python3 benches/hot_data.py RELEASE_AGENTBASH MAP [OUT]   (needs valgrind)
       python3 benches/hot_data.py --check MAP
"""
import os, re, subprocess, sys, tempfile, atexit, shutil, bisect

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "link", "hot-data.ld")
# Where the read-only data a run reads can come from: .rodata, or .rodata.hot in a
# build already laid out by this script. Not the others: exception tables and unwind
# info are read when a panic unwinds, and .rela.dyn, read at every start, is the
# linker's own (and already first).
MOVABLE_FROM = {".rodata", ".rodata.hot"}


def input_sections(map_path):
    """(address, size, output section, file, section) of every input section in an lld
    map: `VMA LMA Size Align Out In Symbol`, an output section's name after the Align
    column, an input section's `file:(section)` 8 columns further in."""
    found, out = [], None
    try:
        f = open(map_path, errors="replace")
    except OSError as e:
        sys.exit(f"cannot read the link map {map_path}: {e} (made by AGENTBASH_LINK_MAP=PATH cargo build --release)")
    with f:
        for line in f:
            m = re.match(r"^\s*([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(\d+) (\s*)(\S.*)$", line.rstrip("\n"))
            if not m:
                continue
            indent, rest = len(m.group(5)), m.group(6)
            if indent == 0:
                out = rest
            elif ":(" in rest and rest.endswith(")") and indent <= 8:
                file, sec = rest[:-1].rsplit(":(", 1)
                found.append((int(m.group(1), 16), int(m.group(3), 16), out, file, sec))
    if not found:
        sys.exit(f"{map_path}: no input sections found (not a map written by lld's -Map?)")
    return found


def pattern(file, sec):
    """The linker-script pattern that matches this input section in a later link: by
    section name alone (the LTO object's file name changes with every build, and the
    merged pools are one per name), or by archive member for a C library's object,
    whose data sections are all named plain `.rodata`."""
    m = re.search(r"([^/]+\.a)\(([^)]+)\)$", file)
    if m and not file.startswith("<"):
        return f"*{m.group(1)}:{m.group(2)}({sec})"
    return f"*({sec})"


if len(sys.argv) == 3 and sys.argv[1] == "--check":
    # A renumbered constant keeps its name but (almost always) not its size, so each
    # pattern's size when written (a comment; none for the merged pools, which grow
    # with any string) is compared with this build's.
    have = {}
    for _, size, _, file, sec in input_sections(sys.argv[2]):
        have.setdefault(pattern(file, sec), set()).add(size)
    with open(SCRIPT) as f:
        listed = re.findall(r"^\s+(\*\S+\))\s*(?:/\* (\d+) \*/)?\s*$", f.read(), re.M)
    missing = [p for p, _ in listed if p not in have]
    moved = [p for p, n in listed if p in have and n and int(n) not in have[p]]
    if not listed:
        sys.exit(f"{os.path.normpath(SCRIPT)} lists no input section: regenerate it")
    print(f"{len(listed)} patterns in {os.path.normpath(SCRIPT)}: {len(missing)} not in {sys.argv[2]}, "
          f"{len(moved)} naming a section of another size (renumbered: other data)")
    if missing or moved:
        print("regenerate: python3 benches/hot_data.py RELEASE_AGENTBASH MAP: AGENTBASH_LINK_MAP=/tmp/agentbash.map cargo build --release makes both")
    sys.exit(1 if missing or moved else 0)

if len(sys.argv) < 3 or not os.path.isfile(sys.argv[1]):
    sys.exit("usage: python3 benches/hot_data.py RELEASE_AGENTBASH MAP [OUT]\n"
             "  RELEASE_AGENTBASH, MAP: a release build and its link map, from\n"
             "  AGENTBASH_LINK_MAP=/tmp/agentbash.map cargo build --release")
binary, map_path = os.path.abspath(sys.argv[1]), sys.argv[2]
out = sys.argv[3] if len(sys.argv) > 3 else SCRIPT
sections = sorted(input_sections(map_path))
starts = [s[0] for s in sections]

from hot_workloads import WORKLOADS, homes  # noqa: E402 (benches/ is the script's directory)

tmp = tempfile.mkdtemp()
atexit.register(shutil.rmtree, tmp, True)  # its homes (state dirs inside) go with it
envs = homes(tmp, binary)
hot, reads = [], {}  # input sections in the order first read; reads of each
for i, (home, args) in enumerate(WORKLOADS):
    trace = os.path.join(tmp, f"lackey.{i}")
    subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", binary] + args,
                   env=envs[home], cwd=envs[home]["HOME"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    if not os.path.exists(trace):
        sys.exit(f"valgrind wrote no trace for `agentbash {' '.join(args)}`: is valgrind installed?")
    with open(trace, errors="replace") as f:
        for line in f:
            if line[:2] not in (" L", " M", " S"):
                continue
            addr = int(line[3:].split(",", 1)[0], 16)
            j = bisect.bisect_right(starts, addr) - 1
            if j < 0 or addr >= sections[j][0] + sections[j][1] or sections[j][2] not in MOVABLE_FROM:
                continue
            s = sections[j]
            if s not in reads:
                reads[s] = 0
                hot.append(s)
            reads[s] += 1
    os.remove(trace)

patterns, sizes, size = [], {}, 0
for s in hot:
    p = pattern(s[3], s[4])
    if p not in sizes:
        patterns.append(p)
        # The merged pools (file "<internal>") have no size of their own to check.
        sizes[p] = None if s[3].startswith("<") else s[1]
        size += s[1]
rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                     capture_output=True, text=True).stdout.strip() or "unknown"
rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
with open(out, "w") as f:
    f.write("/* The read-only data a run reads, gathered after the ELF headers and the IRELATIVE\n"
            " * relocations that every start reads anyway (build.rs, release builds linked by lld).\n"
            f" * Written by benches/hot_data.py from a release build of {rev} ({rustc}):\n"
            f" * {len(patterns)} input sections, {size} bytes. Regenerate after code changes (a stale\n"
            " * pattern matches nothing, or data that is not hot). */\n"
            "SECTIONS\n{\n  .rodata.hot : {\n")
    for p in patterns:
        f.write(f"    {p}\n" if sizes[p] is None else f"    {p}  /* {sizes[p]} */\n")
    f.write("  }\n}\nINSERT BEFORE .gcc_except_table;\n")
print(f"{len(patterns)} input sections, {size} bytes -> {out}")
if not patterns:
    sys.exit("no read-only data was read in the traced runs: is this a release build of agentbash, and its map?")
