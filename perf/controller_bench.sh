#!/usr/bin/env bash
# The controller's duties (issue 19), shardlog vs Apache Kafka 3.9 side by
# side: runs perf/controller_bench.py (read its header) with the test venv's
# python (confluent-kafka), the release binary (built when missing) and the
# Kafka jars tests/java/fetch_jars.sh caches.
#
#   perf/controller_bench.sh [controller_bench.py options, e.g. --systems kafka --keep]
#
# Venv: $SHARDLOG_TEST_VENV, default ~/.cache/shardlog/test-venv (tests/run.sh
# creates it). Needs java (openjdk-17-jdk-headless) and Debian's zookeeper.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SHARDLOG_TEST_VENV:-$HOME/.cache/shardlog/test-venv}"
PY="$VENV/bin/python"
log() { echo "controller_bench.sh: $*" >&2; }

"$PY" -c 'import confluent_kafka' 2>/dev/null \
  || { log "no venv with confluent-kafka at $VENV: run 'bash tests/run.sh' (python3 -m venv + pip install confluent-kafka)"; exit 2; }
command -v java >/dev/null || { log "java missing: apt-get install -y --no-install-recommends openjdk-17-jdk-headless"; exit 2; }
[ -f /usr/share/java/zookeeper.jar ] || { log "ZooKeeper missing: apt-get install -y --no-install-recommends zookeeper"; exit 2; }
BIN="$REPO/target/release/shardlog"
if [ ! -x "$BIN" ]; then
  log "building $BIN"
  (cd "$REPO" && CARGO_INCREMENTAL=0 cargo build --release >&2)
fi
JARS="$(bash "$REPO/tests/java/fetch_jars.sh" | tail -1)"
exec "$PY" "$REPO/perf/controller_bench.py" --shardlog "$BIN" --jars "$JARS" "$@"
