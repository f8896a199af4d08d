#!/usr/bin/env bash
# One measurement for an A/B of two broker builds (perf/compare.sh runs it
# interleaved): start BIN's broker on one pinned shard (core 0), run the
# load generator on core 1 with the same binary, print
# "<case> <MB/s> MB/s <µs> broker-cpu-us/MB": the client-side throughput and
# the broker's CPU time (user + system, /proc/PID/stat) per MB of records
# over the measured run; the second is steady even when the disk or the
# other tenants move the first (compare.sh --match 'MB/s' or
# --match 'broker-cpu-us/MB').
#
#   perf/ab_point.sh BIN p1      produce 1 KiB, acks=1, linger.ms=5,
#                                batch.size=1000000, 6 partitions (P1)
#   perf/ab_point.sh BIN spread  produce 100-byte keyed records (10,000 keys),
#                                acks=1, linger.ms=5, over AB_PARTITIONS
#                                partitions (default 10): partition density,
#                                issue 26 ("msgs/s at 1,000 partitions vs 10");
#                                flat out, or at AB_RATE msgs/s in total
#   perf/ab_point.sh BIN ppt     the same produce as p1 with Kafka's Java
#                                producer (kafka-producer-perf-test, client on
#                                core 1; AB_RECORDS records, default 1000000):
#                                issue 23's open broker-CPU-per-GB row
#   perf/ab_point.sh BIN p4hot   consume from memory: produce N records into a
#                                batch cache larger than the topic, then read
#                                them from the beginning (P4 from memory)
#
# Example (main before vs after a change):
#   perf/compare.sh --rounds 4 --match 'MB/s' \
#     --a 'perf/ab_point.sh /tmp/shardlog-before p1' --b 'perf/ab_point.sh target/release/shardlog p1'
# Env: AB_DURATION (default 10s), AB_MESSAGES (p4hot records, default 2000000),
#      AB_CACHE_BYTES (p4hot batch cache, default 3 GiB),
#      AB_OVERRIDES (more broker keys, space-separated key=value).
set -euo pipefail
. "$(dirname "$0")/pinned_broker.sh"
BIN="${1:?usage: ab_point.sh BIN p1|ppt|p4hot|spread}"
CASE="${2:?usage: ab_point.sh BIN p1|ppt|p4hot|spread}"
DUR="${AB_DURATION:-10s}"
TMP="$(mktemp -d /tmp/ab-point.XXXXXX)"
BROKER_PID=""
cleanup() {
  if [ -n "$BROKER_PID" ]; then kill -TERM "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
extra=()
[ "$CASE" = p4hot ] && extra=(--override "shardlog.batch.cache.bytes=${AB_CACHE_BYTES:-3221225472}" --override log.retention.bytes=-1)
# AB_OVERRIDES: more broker keys, space-separated key=value (perf/metrics_cost.sh).
for o in ${AB_OVERRIDES:-}; do extra+=(--override "$o"); done
start_pinned_broker "$TMP" "${extra[@]}" || exit 1
# The broker's user + system CPU time so far, in microseconds.
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1e6 / hz }' "/proc/$BROKER_PID/stat"; }
# per_mb CPU_BEFORE RECORDS: broker CPU µs per MB of 1 KiB records since CPU_BEFORE.
per_mb() { python3 -c "import sys; print('%.1f' % ((int(sys.argv[1]) - int(sys.argv[2])) / (int(sys.argv[3]) * 1024 / 1e6)))" "$(cpu_us)" "$1" "$2"; }
rec() { python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))$2))" "$1"; }
lg() { "$BIN" loadgen --bootstrap "127.0.0.1:$port" --client-cpus 1 --message-size 1024 --partitions 6 "$@"; }
mb() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('%.1f' % $2)" "$1"; }
case "$CASE" in
  p1)
    c0="$(cpu_us)"
    lg --out "$TMP/p1" --topic p1 --acks 1 --linger-ms 5 --batch-size 1000000 --consumers 0 \
      --flat-out --duration "$DUR" --warmup 2s >"$TMP/p1.log" 2>&1 || { tail -5 "$TMP/p1.log" >&2; exit 1; }
    n="$(rec "$TMP/p1/results.json" "['points'][0]['produced']")"
    echo "p1 $(mb "$TMP/p1/results.json" "j['points'][0]['mb_per_sec']") MB/s $(per_mb "$c0" "$n") broker-cpu-us/MB"
    ;;
  ppt)
    jars="${SHARDLOG_KAFKA_JARS:-$HOME/.cache/shardlog/kafka-jars-3.9.2}"
    [ -f "$jars/kafka-tools-3.9.2.jar" ] || { echo "ab_point.sh: no Kafka jars in $jars: bash tests/java/fetch_jars.sh" >&2; exit 2; }
    n="${AB_RECORDS:-1000000}"
    c0="$(cpu_us)"
    taskset -c 1 java -Xmx1G -XX:+UseG1GC -Dlog4j.configuration="file:$(dirname "$0")/../tests/java/log4j.properties" \
      -cp "$jars/*" org.apache.kafka.tools.ProducerPerformance --topic ppt --num-records "$n" \
      --record-size 1024 --throughput -1 --producer-props "bootstrap.servers=127.0.0.1:$port" \
      acks=1 linger.ms=5 batch.size=1000000 >"$TMP/ppt.log" 2>&1 || { tail -5 "$TMP/ppt.log" >&2; exit 1; }
    rate="$(sed -n 's/^[0-9]* records sent, [0-9.]* records\/sec (\([0-9.]*\) MB\/sec).*/\1/p' "$TMP/ppt.log" | tail -1)"
    echo "ppt $rate MB/s $(per_mb "$c0" "$n") broker-cpu-us/MB"
    ;;
  p4hot)
    lg --out "$TMP/prod" --topic hot --acks 1 --linger-ms 5 --batch-size 1000000 --consumers 0 \
      --messages "${AB_MESSAGES:-2000000}" --warmup 0s >"$TMP/prod.log" 2>&1 || { tail -5 "$TMP/prod.log" >&2; exit 1; }
    c0="$(cpu_us)"
    lg --out "$TMP/cons" --topic hot --consume-only --consumers 1 >"$TMP/cons.log" 2>&1 \
      || { tail -5 "$TMP/cons.log" >&2; exit 1; }
    n="$(rec "$TMP/cons/consume.json" "['records']")"
    echo "p4hot $(mb "$TMP/cons/consume.json" "j['mb_per_sec']") MB/s $(per_mb "$c0" "$n") broker-cpu-us/MB"
    ;;
  spread)
    parts="${AB_PARTITIONS:-10}"
    pace=(--flat-out)
    [ -n "${AB_RATE:-}" ] && pace=(--rate "$AB_RATE")
    c0="$(cpu_us)"
    t0="$(date +%s.%N)"
    "$BIN" loadgen --bootstrap "127.0.0.1:$port" --client-cpus 1 --message-size 100 --keys 10000 \
      --partitions "$parts" --out "$TMP/spread" --topic "spread-$parts" --acks 1 --linger-ms 5 \
      --consumers 0 "${pace[@]}" --duration "$DUR" --warmup 2s >"$TMP/spread.log" 2>&1 \
      || { tail -5 "$TMP/spread.log" >&2; exit 1; }
    [ -n "${AB_SHOW:-}" ] && tail -12 "$TMP/spread.log" >&2
    j="$TMP/spread/results.json"
    # The broker's share of its core over the run (topic creation and
    # warm-up included): near 1.0 the broker is the limit, well below it
    # the client is.
    busy="$(python3 -c "import sys; print('%.2f' % ((int(sys.argv[1]) - int(sys.argv[2])) / 1e6 / (float(sys.argv[3]) - float(sys.argv[4]))))" "$(cpu_us)" "$c0" "$(date +%s.%N)" "$t0")"
    echo "spread$parts $(mb "$j" "j['points'][0]['msgs_per_sec']") msgs/s $(mb "$j" "j['points'][0]['mb_per_sec']") MB/s broker-busy $busy"
    ;;
  *) echo "ab_point.sh: unknown case $CASE" >&2; exit 2 ;;
esac
