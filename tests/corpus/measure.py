#!/usr/bin/env python3
"""Measure the interceptor against tests/corpus/intercept.tsv (issue 16).

Throwaway helper until `agentbash rules check --corpus` exists. Each command is only
*evaluated* with `agentbash explain --json` (a dry run: nothing is executed).

  python3 tests/corpus/measure.py [--bin target/debug/agentbash] [--corpus FILE]
                                  [--json OUT] [--jobs N]

Precision = correct blocks / all blocks; recall = correct blocks / commands expected to be
blocked. A block routed to the wrong tool counts against both (a wrong block for the tool
it named, a miss for the tool expected). The pack's tool `hub` is counted as `job`.
"""
import argparse, json, os, subprocess, sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

TOOLS = ["read", "write", "edit", "grep", "glob", "job"]
ALIASES = {"hub": "job"}
NL = "\u2424"  # ␤ stands for a newline inside a command


def load(path):
    rows, group = [], ""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("# =="):
                group = line.strip("# =").strip()
            if not line.strip() or line.startswith("#"):
                continue
            exp, sep, cmd = line.partition("\t")
            if not sep or exp not in TOOLS + ["pass"]:
                sys.exit(f"{path}:{n}: bad line: {line!r}")
            rows.append({"line": n, "group": group, "expected": exp,
                         "command": cmd.replace(NL, "\n")})
    return rows


def verdict(binary, cmd):
    tools = ",".join(TOOLS + ["hub"])
    p = subprocess.run([binary, "explain", "--json", "-p", "default", "--tools", tools,
                        "--", cmd], capture_output=True, text=True)
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"got": "error", "rule": None, "candidate": None,
                "detail": (p.stderr or p.stdout).strip()[:200]}
    ic = d.get("intercept") or {}
    res = ic.get("result") or {}
    b = res.get("blocked")
    if not b:
        return {"got": "pass", "rule": None, "candidate": None,
                "detail": ic.get("error") or res.get("opaque")}
    tool = ALIASES.get(b.get("tool"), b.get("tool"))
    return {"got": tool, "rule": b.get("rule"), "candidate": b.get("candidate"),
            "detail": None}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(root, "target/debug/agentbash"))
    ap.add_argument("--corpus", default=os.path.join(here, "intercept.tsv"))
    ap.add_argument("--json", help="write every row with its verdict to this file")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    a = ap.parse_args()

    rows = load(a.corpus)
    with ThreadPoolExecutor(a.jobs) as ex:
        for r, v in zip(rows, ex.map(lambda r: verdict(a.bin, r["command"]), rows)):
            r.update(v)

    blocks = Counter()      # tool -> blocks naming it
    right = Counter()       # tool -> correct blocks
    expected = Counter()    # tool -> commands expected to route to it
    for r in rows:
        if r["expected"] != "pass":
            expected[r["expected"]] += 1
        if r["got"] not in ("pass", "error"):
            blocks[r["got"]] += 1
            if r["got"] == r["expected"]:
                right[r["got"]] += 1

    def pct(x, y):
        return f"{100.0 * x / y:6.1f}%" if y else "     - "

    n_pass = sum(r["expected"] == "pass" for r in rows)
    print(f"corpus: {len(rows)} commands ({n_pass} pass, {len(rows) - n_pass} routed)")
    print(f"{'tool':<8}{'expected':>9}{'blocks':>8}{'correct':>8}{'precision':>11}{'recall':>9}")
    for t in TOOLS:
        print(f"{t:<8}{expected[t]:>9}{blocks[t]:>8}{right[t]:>8}"
              f"{pct(right[t], blocks[t]):>11}{pct(right[t], expected[t]):>9}")
    E, B, R = sum(expected.values()), sum(blocks.values()), sum(right.values())
    print(f"{'overall':<8}{E:>9}{B:>8}{R:>8}{pct(R, B):>11}{pct(R, E):>9}")
    wrong_pass = sum(r["expected"] == "pass" and r["got"] != "pass" for r in rows)
    print(f"false blocks of pass commands: {wrong_pass}/{n_pass}; "
          f"misses: {sum(r['expected'] != 'pass' and r['got'] == 'pass' for r in rows)}; "
          f"wrong tool: {sum(r['expected'] != 'pass' and r['got'] not in ('pass', r['expected']) for r in rows)}; "
          f"errors: {sum(r['got'] == 'error' for r in rows)}")

    bad = [r for r in rows if r["got"] != r["expected"]]
    print(f"\ndisagreements: {len(bad)}")
    by_group = defaultdict(list)
    for r in bad:
        by_group[r["group"]].append(r)
    for g, rs in by_group.items():
        print(f"\n## {g} ({len(rs)})")
        for r in rs:
            how = f"rule {r['rule']} on {r['candidate']!r}" if r["rule"] else (r["detail"] or "")
            print(f"  line {r['line']}: expected {r['expected']}, got {r['got']}  "
                  f"{r['command']!r}  {how}".rstrip())
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
