#!/usr/bin/env bash
# Bounded fuzzing of agentbash's parsers (issue 8, suite 5).
#
#   fuzz/run.sh                 every target for 60 s each
#   fuzz/run.sh sink 300        one target for 300 s
#   FUZZ_JOBS=2 fuzz/run.sh     libFuzzer workers per target
#
# Targets: normalizer (the | head/tail lift), parser (the shell parser, its walk and the interceptor), sink (sanitizer, redaction,
# retention; arbitrary chunkings must equal one chunk), profile (the loader), guard
# (the guard judges any text without panicking).
#
# cargo-fuzz needs a nightly compiler for -Zsanitizer=address. With a nightly
# toolchain installed (`rustup toolchain install nightly`) this uses `cargo +nightly`;
# without one it falls back to RUSTC_BOOTSTRAP=1 on the stable compiler, which
# cargo-fuzz accepts. Install cargo-fuzz once with `cargo install cargo-fuzz`.
#
# A crash leaves its input in fuzz/artifacts/<target>/; reproduce it with
# `cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>` and turn it into
# a regression test in tests/it/reliability.rs (see `fuzz_regressions`).
# Corpora grow in fuzz/corpus/<target>/ (not committed).
set -euo pipefail

cd "$(dirname "$0")/.."
secs="${2:-${FUZZ_SECONDS:-60}}"
jobs="${FUZZ_JOBS:-1}"
if [[ $# -ge 1 && "$1" != all ]]; then
    targets=("$1")
else
    targets=(normalizer parser sink profile guard)
fi

if ! command -v cargo-fuzz >/dev/null; then
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
    exit 2
fi
if rustup run nightly rustc --version >/dev/null 2>&1; then
    fuzz=(cargo +nightly fuzz)
else
    echo "no nightly toolchain; using RUSTC_BOOTSTRAP=1 with the default compiler" >&2
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
fi

status=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    log="fuzz/artifacts/$t.log"
    mkdir -p "fuzz/artifacts/$t"
    echo "== $t: ${secs}s, $jobs job(s)" >&2
    extra=()
    if [[ "$jobs" -gt 1 ]]; then
        extra=(-jobs="$jobs" -workers="$jobs")
    fi
    if ! "${fuzz[@]}" run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${extra[@]}" 2>"$log"; then
        echo "== $t: FAILED (crash input in fuzz/artifacts/$t/, log $log)" >&2
        status=1
    fi
    # libFuzzer's summary: executions, time, corpus.
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+.*DONE' "$log" | tail -4 >&2 || true
done
exit "$status"
