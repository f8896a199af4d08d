#!/usr/bin/env bash
# What a burst of TLS handshakes costs the other connections of a shard.
# One shardlog broker (release build, one data shard on core 0, a
# PLAINTEXT and an SSL listener, keys from perf/tls_certs.sh: RSA 2048, as
# keytool makes by default) with shardlog.stall.detect.ms=1. On core 1, a
# probe connection sends ApiVersions back to back over PLAINTEXT (at
# real-time priority, so the burst's client threads do not delay it on
# its own core): first alone, then while --handshakes new TLS
# connections, --workers at a time, handshake and make one request each.
#
#   perf/tls_handshake_burst.sh [--bin PATH] [--handshakes N] [--workers N]
#                               [--out DIR]
#
# Report (stdout and OUT/report.md): handshakes per second; the probe's
# round trips alone and during the burst (p50/p99/p99.9/max); the broker's
# exit line `tls handshakes: … longest_step_us=… mean_us=…` (each poll of
# a handshake timed on the shard: the longest is the longest task a
# handshake put in front of the probe); and the stall detector's
# warnings (tasks over their time slice by > 1 ms).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$REPO/target/release/shardlog" N=3000 WORKERS=32 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --handshakes) N="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "tls_handshake_burst.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "tls_handshake_burst.sh: $(date -u +%H:%M:%S) $*" >&2; }
[ -x "$BIN" ] || { log "$BIN missing: cargo build --release (or --bin)"; exit 1; }
[ -n "$OUT" ] || OUT="$REPO/results/tls-handshake-burst-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
TMP="$(mktemp -d)" PID=""
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
free_port() { python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py"; }
bash "$REPO/perf/tls_certs.sh" "$TMP/tls" >/dev/null
P="$(free_port)" S="$(free_port)"
"$BIN" broker --override "listeners=PLAINTEXT://127.0.0.1:$P,SSL://127.0.0.1:$S" \
  --override ssl.keystore.type=PEM --override "ssl.keystore.location=$TMP/tls/broker-keystore.pem" \
  --override "log.dirs=$TMP/data" --override shardlog.shards=1 --override shardlog.cpus=0 \
  --override shardlog.stall.detect.ms=1 >"$OUT/broker.log" 2>&1 &
PID=$!
for _ in $(seq 1 300); do
  grep -aq 'listening on' "$OUT/broker.log" && break
  kill -0 "$PID" 2>/dev/null || { cat "$OUT/broker.log" >&2; exit 1; }
  sleep 0.1
done
PY="$REPO/perf/tls_handshake_burst.py"
PROBE=(taskset -c 1 chrt -f 10 python3 "$PY" probe "127.0.0.1:$P")
log "probe alone (5 s)"
"${PROBE[@]}" 5 >"$OUT/probe_alone.json"
log "burst: $N handshakes, $WORKERS at a time, with the probe"
taskset -c 1 python3 "$PY" burst "127.0.0.1:$S" "$TMP/tls/ca.pem" "$N" "$WORKERS" >"$OUT/burst.json" &
BURST=$!
sleep 0.3
"${PROBE[@]}" 5 >"$OUT/probe_burst.json" &
PROBE_PID=$!
wait "$BURST"
wait "$PROBE_PID"
kill -TERM "$PID"; wait "$PID" || true; PID=""
HS="$(grep -a '^tls handshakes:' "$OUT/broker.log" || echo 'tls handshakes: (no line)')"
STALLS="$(grep -ac 'stall-detector' "$OUT/broker.log" || true)"
python3 - "$OUT" "$HS" "$STALLS" "$N" "$WORKERS" "$(git -C "$REPO" rev-parse --short HEAD)" <<'PYEOF' | tee "$OUT/report.md"
import json, sys
out, hs, stalls, n, workers, commit = sys.argv[1:]
alone = json.load(open(f"{out}/probe_alone.json"))
during = json.load(open(f"{out}/probe_burst.json"))
burst = json.load(open(f"{out}/burst.json"))
print(f"TLS handshake burst at {commit}: {n} handshakes (RSA 2048 server key, TLS 1.3), {workers} at a time, "
      f"one data shard; the probe on PLAINTEXT. Handshakes: {burst['completed']} completed, "
      f"{burst['failed']} failed, {burst['per_second']}/s over {burst['seconds']} s.\n")
print("| probe round trip (µs) | p50 | p99 | p99.9 | max | requests |")
print("|---|---|---|---|---|---|")
for name, j in (("alone", alone), ("during the burst", during)):
    print(f"| {name} | {j['p50_us']} | {j['p99_us']} | {j['p999_us']} | {j['max_us']} | {j['count']} |")
print(f"\nBroker: `{hs}`; stall detector (shardlog.stall.detect.ms=1): {stalls} warnings.")
PYEOF
