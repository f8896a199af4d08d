#!/usr/bin/env bash
# Down-conversion: what an old consumer (Fetch v3: magic 1; Fetch v0:
# magic 0) reads from v2 data per second, shardlog and Apache Kafka 3.9 side
# by side in one run, with the v4 read of the same data as each broker's
# own baseline. Each broker on core 0 (shardlog: one shard; Kafka:
# perf/kafka_peer.sh --cpus 0), the reader (perf/downconvert.py, raw Fetch
# requests, one request for all partitions at a time) on core 1.
#
#   perf/downconvert_cost.sh [--bin PATH] [--rounds N] [--messages N] [--versions LIST]
#
# Data: --messages (default 500000) 1 KiB uncompressed records, produced by
# shardlog's loadgen over 6 partitions into topic dc (linger.ms=5,
# batch.size=1000000), read from memory (shardlog's batch cache, Kafka's page
# cache). Per round and broker, each version in --versions (default 4,3,0;
# rotated per round) reads the whole topic; the broker's CPU seconds (/proc)
# over the read give CPU s per GB. Output: a Markdown table with medians over
# rounds and the shardlog ÷ Kafka ratio per version (goal for v3: ≥ 2).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$REPO/target/release/shardlog" ROUNDS=3 MSGS=500000 VERSIONS="4,3,0"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --messages) MSGS="$2"; shift 2 ;;
    --versions) VERSIONS="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "downconvert_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "downconvert_cost.sh: $(date -u +%H:%M:%S) $*" >&2; }
die() { log "$*"; exit 1; }
[ -x "$BIN" ] || die "$BIN missing: cargo build --release (or --bin)"
TMP="$(mktemp -d /tmp/downconvert.XXXXXX)"
SL_PID="" KAFKA_DIR="$TMP/kafka"
cleanup() {
  if [ -n "$SL_PID" ]; then kill -TERM "$SL_PID" 2>/dev/null || true; wait "$SL_PID" 2>/dev/null || true; fi
  bash "$REPO/perf/kafka_peer.sh" stop --dir "$KAFKA_DIR" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py"; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
log "host: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; commit $(git -C "$REPO" rev-parse --short HEAD)"

declare -A ADDR PID
p="$(free_port)"
"$BIN" broker --override "listeners=PLAINTEXT://127.0.0.1:$p" --override "log.dirs=$TMP/shardlog-data" \
  --override shardlog.shards=1 --override shardlog.cpus=0 --override num.partitions=6 \
  --override shardlog.batch.cache.bytes=1610612736 >"$TMP/shardlog.log" 2>&1 &
SL_PID=$!
for _ in $(seq 1 300); do
  grep -aq 'listening on' "$TMP/shardlog.log" && break
  kill -0 "$SL_PID" 2>/dev/null || { cat "$TMP/shardlog.log" >&2; SL_PID=""; die "shardlog did not start"; }
  sleep 0.1
done
ADDR[shardlog]="127.0.0.1:$p" PID[shardlog]="$SL_PID"
line="$(bash "$REPO/perf/kafka_peer.sh" start --dir "$KAFKA_DIR" --cpus 0)" || die "Kafka did not start"
ADDR[kafka]="$(sed -n 's/.*\bbootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
PID[kafka]="$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' <<<"$line")"
for b in shardlog kafka; do
  "$BIN" loadgen --bootstrap "${ADDR[$b]}" --client-cpus 1 --topic dc --partitions 6 --message-size 1024 \
    --acks 1 --linger-ms 5 --batch-size 1000000 --consumers 0 --messages "$MSGS" --warmup 0s \
    --out "$TMP/fill-$b" >"$TMP/fill-$b.log" 2>&1 || die "filling dc on $b: $(tail -3 "$TMP/fill-$b.log")"
  log "$b: $MSGS records in dc"
done
IFS=, read -r -a VS <<<"$VERSIONS"
echo -e "round\tbroker\tversion\tmb_per_sec\trecords\tbroker_cpu_s" >"$TMP/runs.tsv"
for ((r = 1; r <= ROUNDS; r++)); do
  for b in shardlog kafka; do
    for ((i = 0; i < ${#VS[@]}; i++)); do
      v="${VS[$(((i + r - 1) % ${#VS[@]}))]}"
      c0="$(cpu_s "${PID[$b]}")"
      out="$(taskset -c 1 python3 "$REPO/perf/downconvert.py" "${ADDR[$b]}" dc 6 "$v")" || die "$b Fetch v$v failed"
      c1="$(cpu_s "${PID[$b]}")"
      read -r _ n _ _ _ _ _ mb <<<"$out"
      echo -e "$r\t$b\t$v\t$mb\t$n\t$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')" >>"$TMP/runs.tsv"
      log "round $r $b Fetch v$v: $out, broker $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') s"
    done
  done
done
python3 - "$TMP/runs.tsv" <<'PY'
import statistics, sys
from collections import defaultdict
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()[1:]]
mb, cpu = defaultdict(dict), defaultdict(dict)
for r, b, v, m, n, c in rows:
    mb[(b, v)][r] = float(m)
    cpu[(b, v)][r] = float(c) / (int(n) * 1024 / 1e9)
def med(d): return statistics.median(d.values())
def rat(a, b):
    v = [a[k] / b[k] for k in a if k in b and b[k]]
    return f"**{statistics.median(v):.2f}** ({min(v):.2f}–{max(v):.2f})"
print("| Fetch version (magic served) | shardlog MB/s | Kafka MB/s | shardlog ÷ Kafka | shardlog CPU s/GB | Kafka CPU s/GB | CPU/GB shardlog ÷ Kafka |")
print("|---|---|---|---|---|---|---|")
for v in sorted({v for _, v in mb}, key=int, reverse=True):
    magic = {"0": 0, "1": 0, "2": 1, "3": 1}.get(v, 2)
    s, k = ("shardlog", v), ("kafka", v)
    print(f"| v{v} (magic {magic}) | {med(mb[s]):.1f} | {med(mb[k]):.1f} | {rat(mb[s], mb[k])} | "
          f"{med(cpu[s]):.2f} | {med(cpu[k]):.2f} | {rat(cpu[s], cpu[k])} |")
PY
