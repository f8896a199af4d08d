# Sourced by perf scripts (ab_point.sh, cold_consume.sh): start "$BIN"'s
# broker on one pinned shard (core 0, the client gets core 1) with the
# settings these single-broker measurements share, and wait for its
# readiness line.
#
#   start_pinned_broker DIR [--override KEY=VALUE ...]
#
# Data in DIR/data, output in DIR/broker.log; later overrides win. Sets
# `port` (a free loopback port) and `BROKER_PID`. Returns 1, with the
# broker's output on stderr, if the broker exits before it is ready.
start_pinned_broker() {
  local dir="$1"
  shift
  port="$(python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py")"
  "$BIN" broker --override "listeners=PLAINTEXT://127.0.0.1:$port" --override "log.dirs=$dir/data" \
    --override shardlog.shards=1 --override shardlog.cpus=0 --override auto.create.topics.enable=true \
    --override num.partitions=6 --override log.segment.bytes=134217728 \
    --override log.retention.check.interval.ms=1000 --override log.segment.delete.delay.ms=1000 "$@" >"$dir/broker.log" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 1 300); do
    grep -aq 'listening on' "$dir/broker.log" && return 0
    kill -0 "$BROKER_PID" 2>/dev/null || { cat "$dir/broker.log" >&2; return 1; }
    sleep 0.1
  done
}
