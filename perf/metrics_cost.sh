#!/usr/bin/env bash
# The cost of /metrics: P1 produce and P4 consume (from memory) with the
# metrics listener on and scraped every second by a real Prometheus (B)
# against the listener off (A), interleaved A/B in one run by
# perf/compare.sh over perf/ab_point.sh (broker pinned to core 0, client to
# core 1, Prometheus to core 2 when there is one). The target is B/A >= 0.98
# for both points. Each B run also prints the scrapes Prometheus made and
# their mean duration (its `scrape_duration_seconds`).
#
#   perf/metrics_cost.sh [BIN] [ROUNDS]        both points, ROUNDS A/B pairs (default 4)
#   perf/metrics_cost.sh --one on|off BIN p1|p4hot   one measurement (compare.sh runs these)
#   perf/metrics_cost.sh --scrape BIN [PARTITIONS] [SCRAPES]
#       the scrape's own cost: a broker on core 0 with PARTITIONS partitions
#       (default 1000) holding records, SCRAPES (default 200) GETs of
#       /metrics one after another from core 1; prints the exposition's
#       size, the wall time per scrape and the broker's CPU time per scrape
#       (user + system, /proc/PID/stat), for text and for OpenMetrics
#
# Needs a release build (cargo build --release) and Debian's `prometheus`.
# Not run by the tests (benchmarks are for the lead's runs).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"

free_port() { python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py"; }

one() {
  local side="$1" bin="$2" case="$3"
  if [ "$side" = off ]; then
    exec "$HERE/ab_point.sh" "$bin" "$case"
  fi
  command -v prometheus >/dev/null || { echo "metrics_cost.sh: prometheus missing (apt-get install -y --no-install-recommends prometheus)" >&2; exit 2; }
  local tmp mport pport prom_pid cpu=()
  tmp="$(mktemp -d /tmp/metrics-cost.XXXXXX)"
  mport="$(free_port)"
  pport="$(free_port)"
  cat >"$tmp/prom.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: shardlog
    metrics_path: /metrics
    static_configs:
      - targets: ['127.0.0.1:$mport']
YML
  [ "$(nproc)" -gt 2 ] && cpu=(taskset -c 2)
  "${cpu[@]}" prometheus --config.file="$tmp/prom.yml" --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$tmp/prom.log" 2>&1 &
  prom_pid=$!
  # Expanded now: the trap runs at exit, after this function's locals are
  # gone (under `set -u` a deferred "$prom_pid" would fail and leave
  # Prometheus running).
  trap "kill $prom_pid 2>/dev/null || true; wait $prom_pid 2>/dev/null || true; rm -rf '$tmp'" EXIT
  # Prometheus's own CPU over the measurement (on a 2-core host it shares
  # the broker's and the client's cores: what it takes, they lose).
  local pc0 pc1 t0 t1
  pc0="$(awk '{ print $14 + $15 }' "/proc/$prom_pid/stat")"; t0="$(date +%s.%N)"
  AB_OVERRIDES="shardlog.metrics.listener=127.0.0.1:$mport" "$HERE/ab_point.sh" "$bin" "$case"
  pc1="$(awk '{ print $14 + $15 }' "/proc/$prom_pid/stat")"; t1="$(date +%s.%N)"
  python3 -c 'import sys; a, b, hz, t0, t1 = sys.argv[1:]
print("prometheus: %.3f of a core over the run (%.1f s)" % ((int(b) - int(a)) / int(hz) / (float(t1) - float(t0)), float(t1) - float(t0)))' \
    "$pc0" "$pc1" "$(getconf CLK_TCK)" "$t0" "$t1" >&2
  # What the scrapes were: their count and mean duration over the run.
  for q in 'count_over_time(scrape_duration_seconds{job="shardlog"}[10m])' \
           'avg_over_time(scrape_duration_seconds{job="shardlog"}[10m])' \
           'max_over_time(scrape_samples_scraped{job="shardlog"}[10m])'; do
    v="$(curl -s "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$q" \
      | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")')"
    echo "prometheus: $q = $v" >&2
  done
}

scrape_cost() {
  local bin="$1" parts="${2:-1000}" n="${3:-200}" tmp mport
  BIN="$bin"
  . "$HERE/pinned_broker.sh"
  tmp="$(mktemp -d /tmp/metrics-scrape.XXXXXX)"
  mport="$(free_port)"
  start_pinned_broker "$tmp" --override "shardlog.metrics.listener=127.0.0.1:$mport" \
    --override "num.partitions=$parts" || exit 1
  trap "kill $BROKER_PID 2>/dev/null || true; wait $BROKER_PID 2>/dev/null || true; rm -rf '$tmp'" EXIT
  # Records in every partition, so each one has its per-partition series.
  taskset -c 1 "$bin" loadgen --bootstrap "127.0.0.1:$port" --client-cpus 1 --message-size 100 \
    --partitions "$parts" --out "$tmp/fill" --topic scrape --acks 1 --linger-ms 5 --consumers 0 \
    --flat-out --duration 3s --warmup 0s >"$tmp/fill.log" 2>&1 || { tail -5 "$tmp/fill.log" >&2; exit 1; }
  cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$BROKER_PID/stat"; }
  local hz accept
  hz="$(getconf CLK_TCK)"
  for accept in 'text/plain' 'application/openmetrics-text; version=1.0.0'; do
    curl -s -H "Accept: $accept" "http://127.0.0.1:$mport/metrics" >/dev/null  # warm
    local c0 c1 t0 t1 bytes
    bytes="$(curl -s -H "Accept: $accept" "http://127.0.0.1:$mport/metrics" | wc -c)"
    c0="$(cpu_ticks)"; t0="$(date +%s.%N)"
    for _ in $(seq 1 "$n"); do
      taskset -c 1 curl -s -o /dev/null -H "Accept: $accept" "http://127.0.0.1:$mport/metrics"
    done
    t1="$(date +%s.%N)"; c1="$(cpu_ticks)"
    python3 -c 'import sys; a, b, n, hz, t0, t1, size, kind, parts = sys.argv[1:]; n = int(n)
print("scrape %s, %s partitions: %d bytes, %.2f ms wall per scrape, broker CPU %.2f ms per scrape (%d scrapes)"
      % (kind, parts, int(size), (float(t1) - float(t0)) * 1e3 / n, (int(b) - int(a)) * 1e3 / int(hz) / n, n))' \
      "$c0" "$c1" "$n" "$hz" "$t0" "$t1" "$bytes" "${accept%%;*}" "$parts"
  done
}

if [ "${1:-}" = --scrape ]; then
  scrape_cost "${2:?BIN}" "${3:-1000}" "${4:-200}"
  exit
fi
if [ "${1:-}" = --one ]; then
  one "${2:?on|off}" "${3:?BIN}" "${4:?p1|p4hot}"
  exit
fi
BIN="${1:-$REPO/target/release/shardlog}"
ROUNDS="${2:-4}"
[ -x "$BIN" ] || { echo "metrics_cost.sh: $BIN missing: cargo build --release" >&2; exit 2; }
# The figure: ab_point.sh prints "<case> <X> MB/s <Y> broker-cpu-us/MB", and
# compare.sh --match 'MB/s' would take the number *after* "MB/s" (Y, the CPU
# figure), so the throughput is picked by field. METRICS_COST_FIGURE=cpu
# compares the broker's CPU per MB instead (steadier on a noisy host; there
# B/A <= 1.02 is the target).
case "${METRICS_COST_FIGURE:-mbps}" in
  mbps) figure=(--awk '$3 == "MB/s" { v = $2 } END { if (v != "") print v }' --unit 'MB/s') ;;
  cpu) figure=(--match 'broker-cpu-us/MB') ;;
  *) echo "metrics_cost.sh: METRICS_COST_FIGURE is mbps or cpu" >&2; exit 2 ;;
esac
for case in p1 p4hot; do
  echo "== $case: A = metrics off, B = metrics on, scraped every second"
  "$HERE/compare.sh" --rounds "$ROUNDS" "${figure[@]}" \
    --a "'$HERE/metrics_cost.sh' --one off '$BIN' $case" \
    --b "'$HERE/metrics_cost.sh' --one on '$BIN' $case"
done
