"""The runs whose code and data a release build lays out together for start-up: what
benches/hot_symbols.py (functions) and benches/hot_data.py (read-only data) trace.

A quiet run first (every run goes that way, so it is kept tightest), then a run with
output, JSON, a failing command, a pipeline, print mode, and `explain` (which plans
without running: it also walks the guard's refusal).
"""
WORKLOADS = [
    ["run", "-q", "--", "true"],
    ["run", "--", "echo hi"],
    ["run", "--json", "--", "echo out; echo err >&2; exit 3"],
    ["run", "-q", "--", "printf '%s\\n' a b c | sort -r"],
    ["run", "--mode", "print", "--", "seq 1 2000"],
    ["explain", "--", "ls -la"],
    ["explain", "--json", "--", "rm -rf /"],
]
