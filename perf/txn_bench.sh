#!/usr/bin/env bash
# Transactions' cost (issue 25): idempotent vs transactional produce
# (transactions of 10,000 and of 100 records) and read_committed vs
# read_uncommitted consume, side by side in one run on one broker. Runs
# perf/txn_bench.py (read its header) with the test venv's python and the
# release binary (built when missing).
#
#   perf/txn_bench.sh [txn_bench.py options, e.g. --records 500000]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SHARDLOG_TEST_VENV:-$HOME/.cache/shardlog/test-venv}"
PY="$VENV/bin/python"
log() { echo "txn_bench.sh: $*" >&2; }
"$PY" -c 'import confluent_kafka' 2>/dev/null \
  || { log "no venv with confluent-kafka at $VENV: run 'bash tests/run.sh' (python3 -m venv + pip install confluent-kafka)"; exit 2; }
BIN="$REPO/target/release/shardlog"
if [ ! -x "$BIN" ] || [ -n "$(find "$REPO/src" -newer "$BIN" -name '*.rs' -print -quit)" ]; then
  log "building $BIN"
  (cd "$REPO" && CARGO_INCREMENTAL=0 cargo build --release >&2)
fi
exec "$PY" "$REPO/perf/txn_bench.py" --shardlog "$BIN" "$@"
