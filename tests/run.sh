#!/usr/bin/env bash
# The one test command (README "Test"; .ci/run runs exactly this).
# Installs what the integration tests need, idempotently, then runs cargo test.
#   - kcat, python3-venv, linux-perf, fio, iperf3 and iproute2 (ss) from Debian (skipped
#     when present; one `apt-get update` first)
#   - inferno (flamegraph SVGs) with `cargo install` (skipped when present)
#   - a Python venv with confluent-kafka, kafka-python (with python-snappy, lz4
#     and xxhash for its codecs) and aiokafka (each
#     installed only when missing)
#   - kafkajs with npm into a cache folder (nodejs/npm from Debian if missing)
#   - a JDK, Maven and ZooKeeper (for the Kafka 3.9 peer of
#     tests/differential_kafka.rs) from Debian (skipped when present), and the Apache Kafka
#     3.9 jars from Maven Central via tests/java/fetch_jars.sh (skipped when
#     its cache folder is complete), for tests/java_*.rs
#   - prometheus from Debian (skipped when present) for tests/metrics_prometheus.rs
#   - gcc, pkg-config, libfuse3-dev and fuse3 from Debian (skipped when
#     present) to build tests/support/faultfs.c, the fault-injecting FUSE
#     mount of the log-dir failure tests
#   - nftables from Debian (skipped when present): tests/cluster_netns.rs
#     drops packets between network namespaces with `nft` rules
#   - cargo-fuzz (`cargo install --locked`, skipped when present) for the
#     fuzz step after the cargo tests (tests/fuzz/ci.sh; SHARDLOG_FUZZ_RUNS=0
#     skips it)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

need_apt=()
command -v kcat >/dev/null || need_apt+=(kcat)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
command -v perf >/dev/null || need_apt+=(linux-perf)
command -v fio >/dev/null || need_apt+=(fio)
command -v iperf3 >/dev/null || need_apt+=(iperf3)
command -v ss >/dev/null || need_apt+=(iproute2)
command -v npm >/dev/null || need_apt+=(nodejs npm)
{ command -v java >/dev/null && command -v javac >/dev/null; } || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need_apt+=(maven)
[ -f /usr/share/java/zookeeper.jar ] || need_apt+=(zookeeper)
# tests/metrics_prometheus.rs scrapes the brokers with a real Prometheus.
command -v prometheus >/dev/null || need_apt+=(prometheus)
# tests/support/faultfs.c (the log-dir failure tests of tests/storage_log_dir_failure.rs).
command -v gcc >/dev/null || need_apt+=(gcc)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
pkg-config --exists fuse3 2>/dev/null || need_apt+=(libfuse3-dev)
command -v fusermount3 >/dev/null || need_apt+=(fuse3)
# tests/cluster_netns.rs: partitions and loss between network namespaces.
command -v nft >/dev/null || need_apt+=(nftables)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "tests/run.sh: installing ${need_apt[*]}" >&2
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v inferno-flamegraph >/dev/null || ! command -v inferno-collapse-perf >/dev/null; then
    echo "tests/run.sh: cargo install inferno" >&2
    cargo install --quiet --locked inferno
fi

VENV="${SHARDLOG_TEST_VENV:-$HOME/.cache/shardlog/test-venv}"
[ -x "$VENV/bin/python" ] || {
    echo "tests/run.sh: creating Python venv at $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
}
# PyPI name -> import name; install only the ones the venv lacks.
need_pip=()
# python-snappy, lz4 and xxhash: kafka-python's snappy and LZ4 codecs (xxhash
# for the magic-0 LZ4 header checksum) in tests/formats_legacy.rs.
for pair in confluent-kafka:confluent_kafka kafka-python:kafka aiokafka:aiokafka \
    python-snappy:snappy lz4:lz4.frame xxhash:xxhash; do
    "$VENV/bin/python" -c "import ${pair#*:}" 2>/dev/null || need_pip+=("${pair%%:*}")
done
if [ ${#need_pip[@]} -gt 0 ]; then
    echo "tests/run.sh: pip installing ${need_pip[*]} into $VENV" >&2
    "$VENV/bin/pip" install --quiet "${need_pip[@]}"
fi
export SHARDLOG_TEST_VENV="$VENV"

# kafkajs (the Node group consumer tests) into a cache folder, once.
NODE_CACHE="${SHARDLOG_TEST_NODE:-$HOME/.cache/shardlog/node}"
KAFKAJS_VERSION=2.2.4
if [ ! -f "$NODE_CACHE/node_modules/kafkajs/package.json" ] ||
    ! grep -q "\"version\": \"$KAFKAJS_VERSION\"" "$NODE_CACHE/node_modules/kafkajs/package.json"; then
    echo "tests/run.sh: npm installing kafkajs@$KAFKAJS_VERSION into $NODE_CACHE" >&2
    mkdir -p "$NODE_CACHE"
    npm install --silent --no-audit --no-fund --prefix "$NODE_CACHE" "kafkajs@$KAFKAJS_VERSION"
fi
export SHARDLOG_TEST_NODE_MODULES="$NODE_CACHE/node_modules"
# The Kafka 3.9 jars (its last line is the folder).
SHARDLOG_KAFKA_JARS="$(bash tests/java/fetch_jars.sh | tail -1)"
export SHARDLOG_KAFKA_JARS

# Dependencies are optimised even in dev builds (Cargo.toml), so a debug
# build of our crate is the faster way through build + tests.
cargo test "$@"

# Then the decoders' fuzz targets, a short fixed run each (tests/fuzz/ci.sh;
# SHARDLOG_FUZZ_RUNS=0 skips it). Only on the whole run (no arguments, as
# .ci/run calls it): `bash tests/run.sh --test X` runs just X.
if [ $# -eq 0 ]; then
    echo "tests/run.sh: cargo tests passed; fuzz step (tests/fuzz/ci.sh, SHARDLOG_FUZZ_RUNS=${SHARDLOG_FUZZ_RUNS:-20000})" >&2
    bash tests/fuzz/ci.sh
fi
