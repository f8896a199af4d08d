#!/usr/bin/env bash
# Issue 23's consume-from-the-beginning oddity: rdkafka_performance -C read
# shardlog's log (written with O_DIRECT, so read cold through the page cache
# and sendfile) far below the disk's speed in some runs. This repeats what
# results.sh does on one broker (pinned to core 0, client on core 1, its
# retention settings): produce N records to a fresh topic with
# rdkafka_performance, wait for retention, then read every partition from the
# beginning, ROUNDS times; and after each round, the same host's cold
# page-cache read with no broker: a file written with O_DIRECT read back
# buffered by dd (reference.sh --only pcread: the copy a consumer of
# sendfile'd pages makes). Per round:
# the consumer's MB/s and its user/system CPU seconds, the disk's busy ms and
# bytes read, the broker's CPU ticks, MemFree, and dd's MB/s and system
# seconds per GB. With --clients LIST (rdk, lg: rdkafka_performance -C, shardlog
# loadgen --consume-only) each round produces one topic per entry, then reads
# them in that order: whichever reads first gets the pages freed last, the
# next ones what the host handed out longest ago (see perf/RESULTS.md,
# 2026-12-05).
#
#   perf/cold_consume.sh [--bin PATH] [--rounds 4] [--records 4000000]
#                        [--clients rdk[,lg...]] [--rdkafka-perf PATH] [--keep]
set -euo pipefail
. "$(dirname "$0")/pinned_broker.sh"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$REPO/target/release/shardlog"
ROUNDS=4
COUNT=4000000
RDK="${RDKAFKA_PERF:-}"
KEEP=0
CLIENTS=rdk
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --records) COUNT="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --rdkafka-perf) RDK="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "cold_consume.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$RDK" ]; then
  for c in /work/shared/tools/rdkafka-perf "$REPO/../shared/tools/rdkafka-perf"; do
    [ -x "$c" ] && RDK="$c" && break
  done
fi
[ -n "$RDK" ] || { echo "cold_consume.sh: rdkafka-perf not found (pass --rdkafka-perf)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "cold_consume.sh: no $BIN (cargo build --release)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "cold_consume.sh: needs python3" >&2; exit 2; }
D="$(mktemp -d /tmp/cold-consume.XXXXXX)"
BROKER_PID=""
cleanup() {
  if [ -n "$BROKER_PID" ]; then kill "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; fi
  [ "$KEEP" = 1 ] && echo "kept $D" >&2 || rm -rf "$D"
}
trap cleanup EXIT
start_pinned_broker "$D" --override log.retention.bytes=536870912 || exit 1
DISK="$(basename "$(findmnt -n -o SOURCE --target "$D")")"
diskstats() { awk -v d="$DISK" '$3 == d { print $6, $13 }' /proc/diskstats; }
broker_ticks() { awk '{ print $14 + $15 }' "/proc/$BROKER_PID/stat"; }
mem_free_mib() { awk '/^MemFree:/ { print int($2 / 1024) }' /proc/meminfo; }
# cold_page_cache_read: perf/reference.sh's pcread (1 GiB written with
# O_DIRECT, read back buffered by dd) on the client's core; prints
# "MB/s system-seconds-per-GB".
cold_page_cache_read() {
  taskset -c 1 "$REPO/perf/reference.sh" --only pcread --size 1g --dir "$D" 2>/dev/null |
    awk '/^pagecache_cold_read_1MiB/ { mb = $2 } /^pagecache_cold_read_system/ { s = $2 } END { print mb, s }'
}
for c in ${CLIENTS//,/ }; do
  case "$c" in rdk|lg) ;; *) echo "cold_consume.sh: --clients takes rdk and lg, not $c" >&2; exit 2 ;; esac
done
# consume CLIENT TOPIC PREFIX: read TOPIC from the beginning on core 1;
# prints "MB/s user-seconds system-seconds".
consume() {
  if [ "$1" = rdk ]; then
    /usr/bin/time -f "%U %S" -o "$3.time" timeout 180 taskset -c 1 "$RDK" -C -t "$2" -b "127.0.0.1:$port" \
      -p 0 -p 1 -p 2 -p 3 -p 4 -p 5 -o beginning -e >"$3.log" 2>&1
    echo "$(sed -n 's/.* consumed in [0-9]*ms: [0-9]* msgs\/s (\([0-9.]*\) MB\/s).*/\1/p' "$3.log" | tail -1) $(cat "$3.time")"
  else
    /usr/bin/time -f "%U %S" -o "$3.time" timeout 180 "$BIN" loadgen --bootstrap "127.0.0.1:$port" --client-cpus 1 \
      --message-size 1024 --partitions 6 --out "$3.out" --topic "$2" --consume-only --consumers 1 >"$3.log" 2>&1
    echo "$(python3 -c 'import json, sys; print("%.1f" % json.load(open(sys.argv[1]))["mb_per_sec"])' "$3.out/consume.json" 2>/dev/null) $(cat "$3.time")"
  fi
}
echo "# $ROUNDS rounds of $COUNT × 1 KiB records per topic, 6 partitions, read by $CLIENTS; broker on core 0, client on core 1"
for i in $(seq 1 "$ROUNDS"); do
  for c in ${CLIENTS//,/ }; do
    t="cold$i$c"
    "$BIN" loadgen --bootstrap "127.0.0.1:$port" --topic "$t" --partitions 6 --messages 10 --consumers 0 --acks 1 >/dev/null 2>&1
    timeout 180 taskset -c 1 "$RDK" -P -t "$t" -b "127.0.0.1:$port" -s 1024 -c "$COUNT" \
      -X acks=1 -X linger.ms=5 -X batch.size=1000000 >"$D/p$i$c.log" 2>&1
  done
  sleep 4 # retention.check.interval.ms=1000: the topics are cut to their retention before the reads
  for c in ${CLIENTS//,/ }; do
    read -r s0 io0 < <(diskstats); b0="$(broker_ticks)"
    read -r mb cu cs < <(consume "$c" "cold$i$c" "$D/c$i$c")
    read -r s1 io1 < <(diskstats); b1="$(broker_ticks)"
    echo "round $i $c: consume ${mb:-?} MB/s, client user ${cu:-?}s system ${cs:-?}s, disk read $(((s1 - s0) / 2048)) MiB busy $((io1 - io0)) ms, broker CPU $((b1 - b0)) ticks, MemFree $(mem_free_mib) MiB"
  done
  read -r dd_mb dd_sys < <(cold_page_cache_read)
  echo "round $i: cold page-cache read (dd, 1 GiB): ${dd_mb:-?} MB/s, system ${dd_sys:-?} s/GB"
done
