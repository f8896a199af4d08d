#!/usr/bin/env bash
# The fuzz step of the one test command (tests/run.sh, issue 26): build every
# cargo-fuzz target in tests/fuzz and run each for a fixed number of
# executions on its committed seeds (tests/fuzz/seeds/<target>), failing on
# any crash (panic, failed contract assertion, allocation past the bound).
#
#   SHARDLOG_FUZZ_RUNS   executions per target (default 20000; 0 skips)
#   SHARDLOG_FUZZ_RELEASE=1  an optimized build (cargo fuzz's --release)
#                        instead of the dev profile: for long runs (10 M
#                        executions take minutes per target, not hours)
#
# Stable Rust is enough: no sanitizer (`-s none`, libFuzzer's coverage
# passes are stable flags) and the dev profile of tests/fuzz/Cargo.toml
# (opt-level 1, no debug info, debug assertions on). An ASan release build
# took 39 minutes; this one builds in minutes. The working corpus is a
# temporary folder, so the committed seeds never change; a crash is saved
# under tests/fuzz/artifacts/<target>/ (reproduce with
# `cargo fuzz run --fuzz-dir tests/fuzz -s none --dev <target> <file>`).
#
# cargo-fuzz is installed with `cargo install --locked` when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

RUNS="${SHARDLOG_FUZZ_RUNS:-20000}"
if [ "$RUNS" = 0 ]; then
    echo "tests/fuzz/ci.sh: skipped (SHARDLOG_FUZZ_RUNS=0)" >&2
    exit 0
fi

export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "tests/fuzz/ci.sh: cargo install cargo-fuzz --locked" >&2
    cargo install --quiet --locked cargo-fuzz
fi

FUZZ=(cargo fuzz)
PROFILE=--dev
[ "${SHARDLOG_FUZZ_RELEASE:-0}" = 1 ] && PROFILE=--release
FLAGS=(--fuzz-dir tests/fuzz --sanitizer none "$PROFILE")

start=$(date +%s)
echo "tests/fuzz/ci.sh: building the fuzz targets" >&2
"${FUZZ[@]}" build "${FLAGS[@]}"
echo "tests/fuzz/ci.sh: built in $(($(date +%s) - start)) s" >&2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
for target in $("${FUZZ[@]}" list --fuzz-dir tests/fuzz); do
    seeds="tests/fuzz/seeds/$target"
    [ -d "$seeds" ] || {
        echo "tests/fuzz/ci.sh: no seeds at $seeds" >&2
        exit 1
    }
    mkdir -p "$work/$target"
    echo "tests/fuzz/ci.sh: $target, $RUNS executions" >&2
    if ! "${FUZZ[@]}" run "${FLAGS[@]}" "$target" "$work/$target" "$seeds" -- \
        -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$work/$target.log" 2>&1; then
        tail -40 "$work/$target.log" >&2
        failed+=("$target")
        continue
    fi
    grep -E "^(Done|stat::number_of_executed_units)" "$work/$target.log" >&2 || true
done
echo "tests/fuzz/ci.sh: done in $(($(date +%s) - start)) s" >&2
if [ ${#failed[@]} -gt 0 ]; then
    echo "tests/fuzz/ci.sh: FAILED: ${failed[*]} (inputs under tests/fuzz/artifacts/)" >&2
    exit 1
fi
