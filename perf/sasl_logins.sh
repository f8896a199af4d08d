#!/usr/bin/env bash
# SCRAM-SHA-512 logins, shardlog and Apache Kafka 3.9 side by side in one
# run (perf/sasl_logins.py: raw frames, standard-library Python, the same
# client cost against both):
#   rate   new authenticated connections per second (connect, SaslHandshake,
#          two SCRAM rounds, close) from --threads clients for --seconds;
#   storm  one authenticated client's ApiVersions round trip (p50/p99/max)
#          alone, then while --failures logins with a wrong password arrive
#          from 32 threads (Kafka's connection.failed.authentication.delay.ms,
#          100 ms, holds each failed connection before the close).
# Each broker on core 0 (shardlog: one shard), SASL_PLAINTEXT (TLS left out:
# perf/tls_cost.sh and perf/tls_handshake_burst.sh measure it), clients on
# core 1.
#
#   perf/sasl_logins.sh [--bin PATH] [--threads N] [--seconds S]
#                       [--failures K] [--rounds R] [--only shardlog|kafka]
#
# Output: one JSON line per (round, broker, case) in OUT/runs.jsonl and a
# Markdown summary (medians over rounds) on stdout and in OUT/report.md
# (default OUT: results/sasl-logins-<UTC time>/).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$REPO/target/release/shardlog" THREADS=4 SECS=10 FAILURES=10000 ROUNDS=3 ONLY="shardlog,kafka" OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --seconds) SECS="$2"; shift 2 ;;
    --failures) FAILURES="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "sasl_logins.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "sasl_logins.sh: $(date -u +%H:%M:%S) $*" >&2; }
die() { log "$*"; exit 1; }
[ -x "$BIN" ] || die "$BIN missing: cargo build --release (or --bin)"
[ -n "$OUT" ] || OUT="$REPO/results/sasl-logins-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
TMP="$(mktemp -d /tmp/sasl-logins.XXXXXX)"
SL_PID="" KAFKA_DIR="$TMP/kafka"
cleanup() {
  if [ -n "$SL_PID" ]; then kill -TERM "$SL_PID" 2>/dev/null || true; wait "$SL_PID" 2>/dev/null || true; fi
  if [[ ",$ONLY," == *",kafka,"* ]]; then bash "$REPO/perf/kafka_peer.sh" stop --dir "$KAFKA_DIR" >/dev/null 2>&1 || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py"; }
JARS="$(bash "$REPO/tests/java/fetch_jars.sh" | tail -1)"
# add_user PLAINTEXT_ADDR: alice's SCRAM-SHA-512 credential (AlterUserScramCredentials).
add_user() {
  java -cp "$JARS/*" kafka.admin.ConfigCommand --bootstrap-server "$1" --alter \
    --add-config 'SCRAM-SHA-512=[password=alice-secret]' --entity-type users --entity-name alice >"$TMP/configs.log" 2>&1 \
    || die "kafka-configs on $1: $(tail -3 "$TMP/configs.log")"
}
declare -A SASL
log "host: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; results in $OUT"
if [[ ",$ONLY," == *",shardlog,"* ]]; then
  p="$(free_port)"; s="$(free_port)"
  "$BIN" broker --override "listeners=PLAINTEXT://127.0.0.1:$p,SASL_PLAINTEXT://127.0.0.1:$s" \
    --override listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512 \
    --override "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;" \
    --override "log.dirs=$TMP/shardlog-data" --override shardlog.shards=1 --override shardlog.cpus=0 \
    >"$TMP/shardlog.log" 2>&1 &
  SL_PID=$!
  for _ in $(seq 1 300); do
    grep -aq 'listening on' "$TMP/shardlog.log" && break
    kill -0 "$SL_PID" 2>/dev/null || { cat "$TMP/shardlog.log" >&2; SL_PID=""; die "shardlog did not start"; }
    sleep 0.1
  done
  add_user "127.0.0.1:$p"
  SASL[shardlog]="127.0.0.1:$s"
  log "shardlog pid $SL_PID: SASL_PLAINTEXT 127.0.0.1:$s"
fi
if [[ ",$ONLY," == *",kafka,"* ]]; then
  line="$(bash "$REPO/perf/kafka_peer.sh" start --dir "$KAFKA_DIR" --cpus 0 --sasl)" || die "Kafka did not start"
  add_user "$(sed -n 's/.*\bbootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
  SASL[kafka]="$(sed -n 's/.*sasl_bootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
  log "Kafka: $line"
fi
# A new user reaches a broker through the change notification: wait for one login.
for b in "${!SASL[@]}"; do
  for _ in $(seq 1 100); do
    python3 "$REPO/perf/sasl_logins.py" rate "${SASL[$b]}" alice alice-secret --threads 1 --seconds 0.2 \
      | grep -q '"logins": [1-9]' && break
    sleep 0.2
  done
done
: >"$OUT/runs.jsonl"
for ((r = 1; r <= ROUNDS; r++)); do
  for b in "${!SASL[@]}"; do
    log "round $r: $b rate"
    j="$(taskset -c 1 python3 "$REPO/perf/sasl_logins.py" rate "${SASL[$b]}" alice alice-secret \
      --threads "$THREADS" --seconds "$SECS")"
    echo "{\"round\": $r, \"broker\": \"$b\", \"case\": \"rate\", \"result\": $j}" >>"$OUT/runs.jsonl"
    log "  $j"
    log "round $r: $b storm"
    j="$(taskset -c 1 python3 "$REPO/perf/sasl_logins.py" storm "${SASL[$b]}" alice alice-secret \
      --threads 32 --failures "$FAILURES" --seconds "$SECS")"
    echo "{\"round\": $r, \"broker\": \"$b\", \"case\": \"storm\", \"result\": $j}" >>"$OUT/runs.jsonl"
    log "  $j"
  done
done
python3 - "$OUT/runs.jsonl" <<'PY' | tee "$OUT/report.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(b, case, f):
    xs = [f(r["result"]) for r in rows if r["broker"] == b and r["case"] == case]
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
brokers = sorted({r["broker"] for r in rows})
print("| broker | SCRAM logins/s | login p99 ms | probe p99 ms alone | probe p99 ms during failed logins | failed logins took s |")
print("|---|---|---|---|---|---|")
for b in brokers:
    print("| %s | %.0f | %.1f | %.2f | %.2f | %.1f |" % (
        b, med(b, "rate", lambda r: r["per_sec"]), med(b, "rate", lambda r: r["p99_ms"]),
        med(b, "storm", lambda r: r["baseline"]["p99_ms"]), med(b, "storm", lambda r: r["during"]["p99_ms"]),
        med(b, "storm", lambda r: r["storm_s"])))
if set(brokers) == {"shardlog", "kafka"}:
    print("\nshardlog ÷ Kafka SCRAM login rate: %.2f" % (
        med("shardlog", "rate", lambda r: r["per_sec"]) / med("kafka", "rate", lambda r: r["per_sec"])))
PY
