#!/usr/bin/env bash
# Replication's cost (issue 20): 3 brokers RF=3 min.insync=2 at acks=all
# and acks=1 vs one broker RF=1 acks=1, side by side in one run. Runs
# perf/replication_bench.py (read its header) with the test venv's python,
# the release binary (built when missing) and Debian's ZooKeeper.
#
#   perf/replication_bench.sh [replication_bench.py options, e.g. --duration 20s]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SHARDLOG_TEST_VENV:-$HOME/.cache/shardlog/test-venv}"
PY="$VENV/bin/python"
log() { echo "replication_bench.sh: $*" >&2; }
"$PY" -c 'import confluent_kafka' 2>/dev/null \
  || { log "no venv with confluent-kafka at $VENV: run 'bash tests/run.sh' (python3 -m venv + pip install confluent-kafka)"; exit 2; }
command -v java >/dev/null || { log "java missing: apt-get install -y --no-install-recommends openjdk-17-jdk-headless"; exit 2; }
[ -f /usr/share/java/zookeeper.jar ] || { log "ZooKeeper missing: apt-get install -y --no-install-recommends zookeeper"; exit 2; }
BIN="$REPO/target/release/shardlog"
if [ ! -x "$BIN" ]; then
  log "building $BIN"
  (cd "$REPO" && CARGO_INCREMENTAL=0 cargo build --release >&2)
fi
exec "$PY" "$REPO/perf/replication_bench.py" --shardlog "$BIN" "$@"
