#!/usr/bin/env bash
# The data-path results of issue 8 (P1-P4) and issue 7's loadgen-vs-librdkafka
# comparison, measured side by side with this host's reference figures in one
# run, printed as a markdown section to append to perf/RESULTS.md:
#
#   perf/results.sh [--quick] | tee -a perf/RESULTS.md
#
# P1 produce 1 KiB, acks=1, broker on one pinned shard, client on another core:
#    shardlog loadgen and librdkafka's rdkafka_performance vs iperf3 loopback.
# P2 durable produce (shardlog.flush.every.append=true, acks=all) vs fio
#    O_DIRECT sequential write.
# P3 produce p99 / p99.9 vs loopback echo RTT,
#    with Kafka's default batch.size (16384; see P3_BATCH below), at half
#    the rate the same setting reaches flat out (measured first),
#    each linger.ms on a fresh broker whose shutdown line gives the broker's
#    own share (request latency: produce p99 / p99.9 / max); as a
#    diagnostic, also vs a fixed-rate loopback echo at the same rate.
# P4 consume throughput (loadgen --consume-only and rdkafka_performance -C) vs
#    produce throughput, and
#    user-space bytes copied per fetched byte (the broker's `zerocopy:` line).
# Issue 7: loadgen vs rdkafka_performance producer, msgs/s and CPU per message.
# Issue 23 (step kafka): shardlog beside Apache Kafka 3.9 (perf/kafka_peer.sh,
#    ZooKeeper mode, same cores, same log-dir disk, same clients: loadgen,
#    rdkafka_performance, kafka-producer-perf-test): produce acks=1 and
#    acks=all, consume (the log from the beginning, and recent data from
#    memory: Kafka's page cache, shardlog's batch cache), p99 at half of
#    Kafka's flat-out rate, broker CPU seconds per GB, with a shardlog ÷
#    Kafka column, and each run's client and broker cores busy (the host's
#    limit in the same run).
#
# A step that fails prints why and the run goes on; its cells read "failed".
# Progress goes to stderr, the markdown to stdout.
set -uo pipefail

usage() {
  cat <<'EOF'
usage: perf/results.sh [options]
  --quick              short runs (3 s points, iperf3 2 s, 256 MiB fio): under 3 minutes
  --only LIST          comma list of steps: ref,p1,p3,p4,p2,kafka (default: all; p4
                       needs p1's topics; kafka needs Java, the jars of
                       tests/java/fetch_jars.sh and Debian's zookeeper)
  --bin PATH           shardlog binary (default <repo>/target/release/shardlog, built if missing)
  --rdkafka-perf PATH  rdkafka_performance wrapper (default: $RDKAFKA_PERF or
                       /work/shared/tools/rdkafka-perf or <repo>/../shared/tools/rdkafka-perf)
  --broker-cpus LIST   cores of the broker's data shards (default 0; one shard per core)
  --client-cpus LIST   cores of the clients (default: 1, or 0 on a 1-core host)
  --duration SECS      measured seconds per loadgen run (default 10; --quick 3)
  --p3-rate N          P3 rate in msgs/s (default: half of each setting's flat-out rate)
  --keep               keep the temp dir (broker logs, raw outputs)
  --broker-override K=V  extra broker setting for every broker started (repeatable),
                       e.g. shardlog.batch.cache.bytes=4294967296
EOF
}

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QUICK=0 ONLY="ref,p1,p3,p4,p2,kafka" BIN="" RDK="${RDKAFKA_PERF:-}" BROKER_CPUS="" CLIENT_CPUS=""
DUR="" P3_RATE="" KEEP=0 EXTRA_OVERRIDES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --only) ONLY="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --rdkafka-perf) RDK="$2"; shift 2 ;;
    --broker-cpus) BROKER_CPUS="$2"; shift 2 ;;
    --client-cpus) CLIENT_CPUS="$2"; shift 2 ;;
    --duration) DUR="$2"; shift 2 ;;
    --p3-rate) P3_RATE="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --broker-override) EXTRA_OVERRIDES+=("$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "results.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

if [ "$QUICK" = 1 ]; then
  : "${DUR:=3}"; WARM=1; REF_SECS=2; FIO_SIZE=256m; ECHO_SECS=2; RDK_MIN=50000; RDK_MAX=1500000
else
  : "${DUR:=10}"; WARM=2; REF_SECS=10; FIO_SIZE=1g; ECHO_SECS=5; RDK_MIN=100000; RDK_MAX=5000000
fi
PARTITIONS=6 SIZE=1024 LINGER=5 BATCH=1000000
# P3 measures latency with Kafka's default batch.size (producer config
# batch.size=16384), what a latency-sensitive producer runs. With P1's 1 MB
# batches at half P1's rate a batch never fills within linger.ms, so the
# first record of each waits the whole linger and then a ~3 MB request
# (six partitions' batches) crosses loopback: more than 3 x echo p99.9 by
# construction, on any broker.
P3_BATCH=16384
NPROC="$(nproc)"
: "${BROKER_CPUS:=0}"
if [ -z "$CLIENT_CPUS" ]; then [ "$NPROC" -ge 2 ] && CLIENT_CPUS=1 || CLIENT_CPUS=0; fi
count_cpus() { # "0-1,3" -> 3
  local n=0 part parts
  IFS=',' read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ "$part" == *-* ]]; then n=$((n + ${part#*-} - ${part%-*} + 1)); elif [ -n "$part" ]; then n=$((n + 1)); fi
  done
  echo "$n"
}
NSHARDS="$(count_cpus "$BROKER_CPUS")"  # shardlog.shards: one data shard per broker core
FIRST_BROKER_CPU="${BROKER_CPUS%%[,-]*}" FIRST_CLIENT_CPU="${CLIENT_CPUS%%[,-]*}"
[ -n "$BIN" ] || BIN="$REPO/target/release/shardlog"
if [ -z "$RDK" ]; then
  for c in /work/shared/tools/rdkafka-perf "$REPO/../shared/tools/rdkafka-perf" "$REPO/../../shared/tools/rdkafka-perf"; do
    [ -x "$c" ] && { RDK="$c"; break; }
  done
fi

# Error chains, not backtraces, in the failure cells.
export RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0
log() { echo "results.sh: $(date -u +%H:%M:%S) $*" >&2; }
want() { [[ ",$ONLY," == *",$1,"* ]]; }
command -v python3 >/dev/null || { log "python3 is needed to read JSON outputs"; exit 1; }

TMP="$(mktemp -d -t shardlog-results.XXXXXX)"
BROKER_PID="" BROKER_ADDR="" BROKER_LOG="" BROKER_CMD="" ZC_LINE="" BROKER_NAME="" BROKER_EXITS=""
cleanup() {
  [ -f "$TMP/kafka/peer.env" ] && "$REPO/perf/kafka_peer.sh" stop --dir "$TMP/kafka" >/dev/null 2>&1
  [ -n "$BROKER_PID" ] && { kill -KILL "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null; }
  if [ "$KEEP" = 1 ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Results: R[key]=value; a failed figure's cell shows NOTE[key].
declare -A R NOTE
CMDS=()
set_fail() { local why="${2//|//}"; NOTE[$1]="failed: $why"; log "$1 failed: $why"; }
cell() { # key [unit] -> the value, or why it is missing
  if [ -n "${R[$1]:-}" ]; then echo "${R[$1]}${2:+ $2}"; else echo "${NOTE[$1]:-not measured}"; fi
}
opt() { [ -z "${R[$1]:-}" ] || echo " (${R[$1]} $2)"; }  # a secondary figure, if any
first() { local v="${R[$1]:-}"; echo "${v%% *}"; }  # a figure without its remarks
record_cmd() { local q; q="$(printf '%q ' "$@")"; CMDS+=("${q% }"); }
calc() { awk "BEGIN { v = $1; if (v != v) exit 1; printf \"%.${2:-2}f\", v }" 2>/dev/null; }
ratio() { # key numerator denominator digits
  [ -n "${2:-}" ] && [ -n "${3:-}" ] && R[$1]="$(calc "$2 / $3" "${4:-2}")"
}
meets() { # value op target -> yes/no/—
  [ -n "${1:-}" ] || { echo "—"; return; }
  awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { ok = (op == ">=") ? v >= t : v <= t; print ok ? "yes" : "no" }'
}
pyjson() { # file expression(j)
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}
tail_of() { tail -n "${2:-8}" "$1" 2>/dev/null | tr '\n' ' ' | cut -c1-160; }

free_port() {
  python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py"
}
HZ="$(getconf CLK_TCK)"
proc_cpu() { # user+system CPU seconds of a live process
  if [ -z "${1:-}" ] || [ ! -r "/proc/$1/stat" ]; then echo ""; return; fi
  # Drop "pid (comm) " first: comm may hold spaces; utime/stime are then $12/$13.
  sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$HZ" '{ printf "%.3f", ($12 + $13) / hz }'
}

# timed PREFIX cmd... : output in PREFIX.log, client CPU seconds in
# C_CPU, broker CPU seconds over the run in B_CPU.
timed() {
  local pre="$1"; shift
  record_cmd "$@"
  local b0 b1 rc
  b0="$(proc_cpu "$BROKER_PID")"
  /usr/bin/time -f '%U %S %e' -o "$pre.time" "$@" >"$pre.log" 2>&1; rc=$?
  b1="$(proc_cpu "$BROKER_PID")"
  C_CPU="$(awk '/^[0-9.]+ [0-9.]+ [0-9.]+$/ { printf "%.3f", $1 + $2 }' "$pre.time" 2>/dev/null)"
  B_CPU=""; [ -n "$b0" ] && [ -n "$b1" ] && B_CPU="$(calc "$b1 - $b0" 3)"
  return $rc
}

# ------------------------------------------------------------- broker

start_broker() { # name extra-override...
  local name="$1"; shift
  local dir="$TMP/$name" port
  mkdir -p "$dir"; port="$(free_port)"
  BROKER_LOG="$dir/broker.log" BROKER_NAME="$name"
  local args=(broker --override "listeners=PLAINTEXT://127.0.0.1:$port" --override "log.dirs=$dir/data"
    --override "shardlog.shards=$NSHARDS" --override "shardlog.cpus=$BROKER_CPUS"
    --override auto.create.topics.enable=true --override "num.partitions=$PARTITIONS"
    --override log.segment.bytes=134217728 --override log.retention.bytes=536870912
    --override log.retention.check.interval.ms=1000 --override log.segment.delete.delay.ms=1000)
  local o; for o in "${EXTRA_OVERRIDES[@]}" "$@"; do args+=(--override "$o"); done
  BROKER_CMD="$(printf '%q ' "$BIN" "${args[@]}")"
  CMDS+=("${BROKER_CMD% }")
  log "starting broker $name on 127.0.0.1:$port (cpus $BROKER_CPUS)"
  "$BIN" "${args[@]}" >"$BROKER_LOG" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 1 300); do
    grep -aq 'listening on' "$BROKER_LOG" && { BROKER_ADDR="127.0.0.1:$port"; return 0; }
    kill -0 "$BROKER_PID" 2>/dev/null || break
    sleep 0.1
  done
  BROKER_ERR="broker did not become ready: $(tail_of "$BROKER_LOG" 5)"
  kill -KILL "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null; BROKER_PID=""
  log "$BROKER_ERR"
  return 1
}

stop_broker() { # SIGTERM, wait 15 s, then SIGKILL with a warning; sets ZC_LINE
  [ -n "$BROKER_PID" ] || return 0
  kill -TERM "$BROKER_PID" 2>/dev/null
  for _ in $(seq 1 150); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$BROKER_PID" 2>/dev/null; then
    log "warning: broker ignored SIGTERM for 15 s; SIGKILL"
    kill -KILL "$BROKER_PID" 2>/dev/null
  fi
  wait "$BROKER_PID" 2>/dev/null; local rc=$?
  [ "$rc" = 0 ] || log "warning: broker exited with status $rc"
  BROKER_EXITS+="$BROKER_NAME: $rc; "
  ZC_LINE="$(grep -a 'zerocopy:' "$BROKER_LOG" | tail -1 | sed 's/^.*zerocopy:/zerocopy:/')"
  BROKER_PID=""
  return 0
}

# ------------------------------------------------------------- clients

# loadgen PREFIX args... against the running broker, pinned to the client cores.
loadgen() {
  local pre="$1"; shift
  timed "$pre" "$BIN" loadgen --bootstrap "$BROKER_ADDR" --client-cpus "$CLIENT_CPUS" \
    --message-size "$SIZE" --partitions "$PARTITIONS" --out "$pre.out" "$@"
}
# lg_point PREFIX INDEX EXPR [DIGITS] -> a field of a loadgen results.json
# point (formatted to DIGITS decimals when given), or nothing.
lg_point() {
  local v; v="$(pyjson "$1.out/results.json" "j['points'][$2]$3")"
  [[ "$v" =~ ^-?[0-9.eE+-]+$ ]] || return 0
  if [ -n "${4:-}" ]; then printf "%.${4}f" "$v"; else echo "$v"; fi
}

rdk() { # PREFIX rdkafka_performance args...
  local pre="$1"; shift
  [ -n "$RDK" ] || { echo "rdkafka-perf not found (pass --rdkafka-perf)" >"$pre.log"; return 1; }
  # Counts are sized to take about DUR seconds; a stuck run is cut off.
  local limit=$((DUR * 6 + 30)) rc
  timed "$pre" timeout "$limit" taskset -c "$CLIENT_CPUS" "$RDK" "$@"; rc=$?
  [ "$rc" = 124 ] && echo "results.sh: rdkafka_performance cut off after $limit s" >>"$pre.log"
  return $rc
}
# rdk_summary PREFIX produced|consumed -> "msgs msgs_per_sec MB_per_sec failed"
rdk_summary() {
  python3 - "$1.log" "$2" <<'EOF' 2>/dev/null
import re, sys
text = open(sys.argv[1], errors="replace").read()
if sys.argv[2] == "produced":
    m = re.findall(r"(\d+) delivered \(offset -?\d+, (\d+) failed\) in \d+ms: (\d+) msgs/s and ([\d.]+) MB/s", text)
    if m and int(m[-1][0]) > 0: d, f, r, mb = m[-1]; print(d, r, mb, f)
else:
    m = re.findall(r"(\d+) messages \(\d+ bytes\) consumed in \d+ms: (\d+) msgs/s \(([\d.]+) MB/s\)", text)
    if m and int(m[-1][0]) > 0: n, r, mb = m[-1]; print(n, r, mb, 0)
EOF
}
# rdk_why PREFIX -> a short reason an rdkafka_performance run gave no figure
rdk_why() {
  python3 - "$1.log" <<'EOF' 2>/dev/null || tail_of "$1.log" 2
import re, sys
t = open(sys.argv[1], errors="replace").read()
parts = []
cut = re.search(r"cut off after \d+ s", t)
if cut: parts.append(cut.group(0))
done = re.findall(r"(\d+) (delivered|messages \(\d+ bytes\) consumed)", t)
if done: parts.append(done[-1][0] + (" delivered" if done[-1][1] == "delivered" else " consumed"))
for pat in (r"produce error: [^\n]*", r"[Cc]onsume(?:r)? error[^\n]*", r"ERROR[^\n]*"):
    err = re.search(pat, t)
    if err:
        parts.append(err.group(0).strip()[:100])
        break
lines = t.strip().splitlines()
print("; ".join(parts) if parts else (lines[-1][:160] if lines else "no output"))
EOF
}
# lg_consume PREFIX TOPIC KEY: loadgen --consume-only (1 consumer) reads TOPIC
# from the beginning; sets R[KEY_mb], R[KEY_msgs], R[KEY_count], R[KEY_cpu]
# (client CPU µs per record), or why KEY_mb failed.
lg_consume() {
  local out="$1.out/consume.json"
  if loadgen "$1" --topic "$2" --consume-only --consumers 1; then
    R[$3_mb]="$(pyjson "$out" "'%.1f' % j['mb_per_sec']")"
    R[$3_msgs]="$(pyjson "$out" "'%.0f' % j['msgs_per_sec']")"
    R[$3_count]="$(pyjson "$out" "j['records']")"
    R[$3_cpu]="$(per_msg_us "$C_CPU" "${R[$3_count]:-}")"
  else
    set_fail "$3_mb" "$(tail_of "$1.log" 4)"
    return 1
  fi
}
# rdk_consume PREFIX TOPIC: rdkafka_performance reads every partition of
# TOPIC from the beginning to its end; RDK_S="msgs msgs_per_sec MB_per_sec 0".
rdk_consume() {
  local parts=() p
  RDK_S=""
  for ((p = 0; p < PARTITIONS; p++)); do parts+=(-p "$p"); done
  rdk "$1" -C -t "$2" -b "$BROKER_ADDR" "${parts[@]}" -o beginning -e \
    && RDK_S="$(rdk_summary "$1" consumed)" && [ -n "$RDK_S" ]
}
# The log dir's block device as /proc/diskstats names it ("" if unknown).
disk_of() { basename "$(findmnt -n -o SOURCE --target "$1" 2>/dev/null)" 2>/dev/null; }
# diskstats_now: "sectors_read io_ms" of $DISK.
diskstats_now() { awk -v d="$DISK" '$3 == d { print $6, $13 }' /proc/diskstats; }
# disk_use BEFORE AFTER SECONDS -> "read N MB/s, busy P%".
disk_use() {
  python3 - "$1" "$2" "$3" <<'EOF' 2>/dev/null
import sys
a, b = [list(map(int, x.split())) for x in sys.argv[1:3]]
dt = float(sys.argv[3])
print("read %.0f MB/s, busy %.0f%%" % ((b[0] - a[0]) * 512 / dt / 1e6, (b[1] - a[1]) / 10 / dt))
EOF
}
per_msg_us() { [ -n "${1:-}" ] && [ -n "${2:-}" ] && [ "${2:-0}" != 0 ] && calc "$1 * 1e6 / $2" 2; }

# ------------------------------------------------------------- steps

step_ref() {
  log "reference: iperf3 loopback, fio O_DIRECT sequential write, echo RTT"
  local out
  record_cmd "$REPO/perf/reference.sh" --only iperf3 --seconds "$REF_SECS"
  if out="$("$REPO/perf/reference.sh" --only iperf3 --seconds "$REF_SECS" 2>"$TMP/ref-iperf3.err")"; then
    R[iperf3_gbit]="$(awk '/^iperf3_loopback_1stream/ { print $2 }' <<<"$out")"
    R[iperf3_mb]="$(calc "${R[iperf3_gbit]} * 125" 0)"
  else set_fail iperf3_mb "$(tail_of "$TMP/ref-iperf3.err" 3)"; fi
  # fio in the temp dir: the filesystem the brokers' log dirs are on.
  record_cmd "$REPO/perf/reference.sh" --only seqwrite --size "$FIO_SIZE" --dir "$TMP"
  if out="$("$REPO/perf/reference.sh" --only seqwrite --size "$FIO_SIZE" --dir "$TMP" 2>"$TMP/ref-fio.err")"; then
    R[fio_mb]="$(awk '/^fio_seqwrite/ { print $2 }' <<<"$out")"
  else set_fail fio_mb "$(tail_of "$TMP/ref-fio.err" 3)"; fi
  # Echo client on the client core, server on the broker core: the broker's layout.
  if timed "$TMP/echo" "$BIN" loadgen --echo-rtt --duration "${ECHO_SECS}s" --warmup 1s \
    --client-cpus "$FIRST_CLIENT_CPU,$FIRST_BROKER_CPU" --out "$TMP/echo.out"; then
    R[echo_p99]="$(pyjson "$TMP/echo.out/echo.json" "'%.1f' % j['rtt']['p99_us']")"
    R[echo_p999]="$(pyjson "$TMP/echo.out/echo.json" "'%.1f' % j['rtt']['p999_us']")"
  else set_fail echo_p999 "$(tail_of "$TMP/echo.log" 3)"; NOTE[echo_p99]="${NOTE[echo_p999]}"; fi
}

step_p1() {
  log "P1: produce 1 KiB acks=1 linger.ms=$LINGER batch.size=$BATCH, $PARTITIONS partitions"
  if loadgen "$TMP/p1lg" --topic p1-loadgen --acks 1 --linger-ms "$LINGER" --batch-size "$BATCH" \
    --consumers 0 --flat-out --duration "${DUR}s" --warmup "${WARM}s"; then
    R[p1_lg_msgs]="$(lg_point "$TMP/p1lg" 0 "['msgs_per_sec']" 0)"
    R[p1_lg_mb]="$(lg_point "$TMP/p1lg" 0 "['mb_per_sec']" 1)"
    local produced; produced="$(lg_point "$TMP/p1lg" 0 "['produced']")"
    R[p1_lg_cpu]="$(per_msg_us "$C_CPU" "$produced")"
    R[p1_lg_bcpu]="$(per_msg_us "$B_CPU" "$produced")"
  else set_fail p1_lg_mb "$(tail_of "$TMP/p1lg.log" 4)"; fi
  # Count sized to last about as long as the loadgen run.
  local count=$((QUICK ? 300000 : 1000000))
  [ -n "${R[p1_lg_msgs]:-}" ] && count="$(awk -v r="${R[p1_lg_msgs]}" -v d="$DUR" -v lo="$RDK_MIN" -v hi="$RDK_MAX" \
    'BEGIN { c = int(r * d); if (c < lo) c = lo; if (c > hi) c = hi; print c }')"
  # Create the topic with $PARTITIONS partitions first (num.partitions also says so).
  timed "$TMP/p1pre" "$BIN" loadgen --bootstrap "$BROKER_ADDR" --topic p1-rdkafka --partitions "$PARTITIONS" \
    --messages 10 --consumers 0 --acks 1 || log "pre-creating p1-rdkafka failed: $(tail_of "$TMP/p1pre.log" 2)"
  R[p1_rdk_count]="$count"
  local s
  if rdk "$TMP/p1rdk" -P -t p1-rdkafka -b "$BROKER_ADDR" -s "$SIZE" -c "$count" \
    -X acks=1 -X "linger.ms=$LINGER" -X "batch.size=$BATCH" && s="$(rdk_summary "$TMP/p1rdk" produced)" && [ -n "$s" ]; then
    read -r d r mb f <<<"$s"
    R[p1_rdk_msgs]="$r" R[p1_rdk_mb]="$(printf '%.1f' "$mb")" R[p1_rdk_delivered]="$d"
    [ "$f" = 0 ] || R[p1_rdk_mb]+=" ($f failed)"
    R[p1_rdk_cpu]="$(per_msg_us "$C_CPU" "$d")"
    R[p1_rdk_bcpu]="$(per_msg_us "$B_CPU" "$d")"
  else set_fail p1_rdk_mb "$(rdk_why "$TMP/p1rdk")"; fi
  ratio p1_lg_ratio "${R[p1_lg_mb]:-}" "${R[iperf3_mb]:-}"
  ratio p1_rdk_ratio "$(first p1_rdk_mb)" "${R[iperf3_mb]:-}"
  ratio lg_vs_rdk "${R[p1_lg_msgs]:-}" "${R[p1_rdk_msgs]:-}"
}

step_p3() {
  # "50% of the max rate": the max of the setting being measured (same
  # linger.ms and batch.size), run flat out on a broker of its own first;
  # --p3-rate fixes the rate instead.
  # Each linger.ms on a broker of its own, so the broker's shutdown line
  # (\`request latency: produce ...\`: from a request read off the socket
  # to its response in the kernel) covers that point alone.
  local l rate
  for l in 0 "$LINGER"; do
    rate="${P3_RATE:-}"
    if [ -z "$rate" ]; then
      log "P3: flat-out rate, linger.ms=$l batch.size=$P3_BATCH"
      start_broker "max-l$l" || { set_fail "p3_p999_$l" "$BROKER_ERR"; continue; }
      if loadgen "$TMP/p3max-l$l" --topic p3-max --acks 1 --linger-ms "$l" --batch-size "$P3_BATCH" \
        --consumers 0 --flat-out --duration "${DUR}s" --warmup "${WARM}s"; then
        R[p3_max_$l]="$(lg_point "$TMP/p3max-l$l" 0 "['msgs_per_sec']" 0)"
      fi
      stop_broker
      [ -n "${R[p3_max_$l]:-}" ] || { set_fail "p3_p999_$l" "flat-out run: $(tail_of "$TMP/p3max-l$l.log" 3)"; continue; }
      rate="$(calc "${R[p3_max_$l]} / 2" 0)"
    fi
    R[p3_rate_$l]="$rate"
    log "P3: produce latency at $rate msgs/s, linger.ms=$l"
    start_broker "latency-l$l" || { set_fail "p3_p999_$l" "$BROKER_ERR"; continue; }
    if loadgen "$TMP/p3-l$l" --topic p3-latency --acks 1 --linger-ms "$l" --batch-size "$P3_BATCH" \
      --rate "$rate" --consumers 0 --duration "${DUR}s" --warmup "${WARM}s"; then
      R[p3_p99_$l]="$(lg_point "$TMP/p3-l$l" 0 "['ack_latency_intended']['p99_us']" 0)"
      R[p3_p999_$l]="$(lg_point "$TMP/p3-l$l" 0 "['ack_latency_intended']['p999_us']" 0)"
      R[p3_sent_p999_$l]="$(lg_point "$TMP/p3-l$l" 0 "['ack_latency']['p999_us']" 0)"
      R[p3_msgs_$l]="$(lg_point "$TMP/p3-l$l" 0 "['msgs_per_sec']" 0)"
      # Target: p99.9 <= 3 x echo p99.9 + linger.ms.
      [ -n "${R[echo_p999]:-}" ] && R[p3_bound_$l]="$(calc "3 * ${R[echo_p999]} + $l * 1000" 0)" \
        && ratio "p3_ratio_$l" "${R[p3_p999_$l]}" "${R[p3_bound_$l]}"
    else set_fail "p3_p999_$l" "$(tail_of "$TMP/p3-l$l.log" 4)"; fi
    stop_broker
    local line; line="$(grep -a '^request latency: produce' "$BROKER_LOG" | tail -1)"
    if [ -n "$line" ]; then
      R[p3_broker_p99_$l]="$(sed -n 's/.* p99=\([0-9]*\)us.*/\1/p' <<<"$line")"
      R[p3_broker_p999_$l]="$(sed -n 's/.* p99\.9=\([0-9]*\)us.*/\1/p' <<<"$line")"
      R[p3_broker_max_$l]="$(sed -n 's/.* max=\([0-9]*\)us.*/\1/p' <<<"$line")"
    else NOTE[p3_broker_p999_$l]="no \`request latency\` line"; fi
    # The host's own open-loop tail at this rate: 1 KiB messages on the same
    # fixed-rate grid to a loopback server that answers each with 8 bytes,
    # latency from the intended send time (a stall of the host delays every
    # message due during it, as it does records; the closed-loop echo above
    # counts it once).
    log "P3: fixed-rate loopback echo at $rate msgs/s"
    if timed "$TMP/echo-rate-l$l" "$BIN" loadgen --echo-rtt --rate "$rate" --echo-size "$SIZE" \
      --duration "${DUR}s" --warmup "${WARM}s" --client-cpus "$FIRST_CLIENT_CPU,$FIRST_BROKER_CPU" \
      --out "$TMP/echo-rate-l$l.out"; then
      R[p3_echo_rate_p99_$l]="$(pyjson "$TMP/echo-rate-l$l.out/echo.json" "'%.0f' % j['rtt']['p99_us']")"
      R[p3_echo_rate_p999_$l]="$(pyjson "$TMP/echo-rate-l$l.out/echo.json" "'%.0f' % j['rtt']['p999_us']")"
      [ -n "${R[p3_echo_rate_p999_$l]}" ] \
        && R[p3_bound_rate_$l]="$(calc "3 * ${R[p3_echo_rate_p999_$l]} + $l * 1000" 0)" \
        && ratio "p3_ratio_rate_$l" "${R[p3_p999_$l]:-}" "${R[p3_bound_rate_$l]}"
    else set_fail "p3_echo_rate_p999_$l" "$(tail_of "$TMP/echo-rate-l$l.log" 3)"; fi
  done
}

step_p4() {
  # Each client reads the topic its own P1 run produced, so both read cold
  # data (segments are written with O_DIRECT, so nothing of them is in the
  # page cache until the broker's read-ahead brings it in).
  if [ -n "${R[p1_lg_mb]:-}" ]; then
    log "P4: consume p1-loadgen from the beginning (loadgen --consume-only)"
    local d0 t0 d1 t1
    DISK="$(disk_of "$TMP")"; d0="$(diskstats_now)"; t0="$(date +%s.%N)"
    lg_consume "$TMP/p4lg" p1-loadgen p4_lg && ratio p4_lg_ratio "${R[p4_lg_mb]:-}" "${R[p1_lg_mb]:-}"
    d1="$(diskstats_now)"; t1="$(date +%s.%N)"
    [ -n "$d0" ] && [ -n "$d1" ] && R[p4_lg_disk]="$DISK $(disk_use "$d0" "$d1" "$(calc "$t1 - $t0" 3)")"
  else set_fail p4_lg_mb "needs P1's loadgen topic"; fi
  [ -n "${R[p1_rdk_delivered]:-}" ] || { set_fail p4_mb "needs P1's rdkafka_performance topic"; return; }
  log "P4: consume p1-rdkafka from the beginning (rdkafka_performance -C)"
  if rdk_consume "$TMP/p4" p1-rdkafka; then
    read -r n r mb _ <<<"$RDK_S"
    R[p4_msgs]="$r" R[p4_mb]="$(printf '%.1f' "$mb")" R[p4_count]="$n"
    R[p4_bytes]="$((n * SIZE))"
    R[p4_rdk_cpu]="$(per_msg_us "$C_CPU" "$n")"
    ratio p4_ratio "${R[p4_mb]}" "$(first p1_rdk_mb)"
  else set_fail p4_mb "$(rdk_why "$TMP/p4")"; fi
}

step_p4hot() {
  # P4 from memory: a consumer reading data recent enough to be in memory,
  # what a Kafka consumer reading the page cache gets. A broker of its own
  # with a batch cache (shardlog.batch.cache.bytes) larger than the topic;
  # the topic is produced with P1's settings, then read from the beginning.
  local gib=$((QUICK ? 1 : 6)) msgs=$((QUICK ? 600000 : 5000000))
  local avail; avail="$(awk '/MemAvailable/ { print int($2 / 1048576) }' /proc/meminfo)"
  if [ "${avail:-0}" -lt $((3 * gib * NSHARDS)) ]; then gib=1 msgs=600000; fi
  R[p4h_cache]="$gib GiB"
  # No retention.bytes limit here: the consumers read the whole topic.
  start_broker hot "shardlog.batch.cache.bytes=$((gib << 30))" log.retention.bytes=-1 \
    || { for k in p4h_lg_mb p4h_mb; do set_fail "$k" "$BROKER_ERR"; done; return; }
  R[p4h_broker]="$BROKER_CMD"
  log "P4 from memory: produce $msgs records into a $gib GiB batch cache"
  if loadgen "$TMP/p4hp" --topic p4-hot --acks 1 --linger-ms "$LINGER" --batch-size "$BATCH" \
    --consumers 0 --messages "$msgs" --warmup 0s; then
    R[p4h_prod_mb]="$(lg_point "$TMP/p4hp" 0 "['mb_per_sec']" 1)"
    R[p4h_prod_msgs]="$(lg_point "$TMP/p4hp" 0 "['produced']")"
  else set_fail p4h_prod_mb "$(tail_of "$TMP/p4hp.log" 4)"; fi
  log "P4 from memory: consume p4-hot from the beginning (loadgen --consume-only)"
  lg_consume "$TMP/p4hlg" p4-hot p4h_lg && ratio p4h_lg_ratio "${R[p4h_lg_mb]:-}" "${R[p4h_prod_mb]:-}"
  log "P4 from memory: consume p4-hot from the beginning (rdkafka_performance -C)"
  if rdk_consume "$TMP/p4h" p4-hot; then
    read -r n _ mb _ <<<"$RDK_S"
    R[p4h_mb]="$(printf '%.1f' "$mb")" R[p4h_count]="$n"
    R[p4h_rdk_cpu]="$(per_msg_us "$C_CPU" "$n")"
    ratio p4h_ratio "${R[p4h_mb]}" "$(first p1_rdk_mb)"
  else set_fail p4h_mb "$(rdk_why "$TMP/p4h")"; fi
  stop_broker
  # Where the fetched bytes came from: sendmsg (batch cache) vs sendfile.
  [ -n "$ZC_LINE" ] || { NOTE[p4h_from_cache]="n/a: no \`zerocopy:\` line"; return; }
  R[p4h_zc_line]="$ZC_LINE"
  R[p4h_from_cache]="$(zc_share "$ZC_LINE" sendmsg)"
  R[p4h_copied]="$(zc_share "$ZC_LINE" copied)"
}

zc_share() { # "zerocopy: sendmsg=.. sendfile=.. copied=.. glommio=.." key -> key's share of all bytes
  python3 - "$1" "$2" <<'EOF' 2>/dev/null
import sys
kv = dict(p.split("=", 1) for p in sys.argv[1].split()[1:] if "=" in p)
vals = {k: float(v.rstrip(",")) for k, v in kv.items()}
total = sum(vals.values())
print("%.3f" % (vals.get(sys.argv[2], 0.0) / total) if total else "")
EOF
}

# The disk's read ceiling right after the cold P4 read (broker stopped): the
# cold read is served from segment files, so it can at most reach this.
step_fio_read() {
  local out
  record_cmd "$REPO/perf/reference.sh" --only seqread --size "$FIO_SIZE" --dir "$TMP"
  if out="$("$REPO/perf/reference.sh" --only seqread --size "$FIO_SIZE" --dir "$TMP" 2>"$TMP/ref-fior.err")"; then
    R[fio_read_mb]="$(awk '/^fio_seqread/ { print $2 }' <<<"$out")"
    ratio p4_lg_disk_ratio "${R[p4_lg_mb]:-}" "${R[fio_read_mb]:-}"
  else set_fail fio_read_mb "$(tail_of "$TMP/ref-fior.err" 3)"; fi
}

# The host's cold page-cache read in the same run (no broker): a file written
# with O_DIRECT read back buffered; its MB/s and system seconds per GB are what
# a reader of pages just read from disk pays on this host (the rdkafka_performance
# consume from the beginning reads shardlog's sendfile'd page-cache pages).
step_pcread() {
  local out
  record_cmd "$REPO/perf/reference.sh" --only pcread --size "$FIO_SIZE" --dir "$TMP"
  if out="$("$REPO/perf/reference.sh" --only pcread --size "$FIO_SIZE" --dir "$TMP" 2>"$TMP/ref-pcread.err")"; then
    R[pcread_mb]="$(awk '/^pagecache_cold_read_1MiB/ { print $2 }' <<<"$out")"
    R[pcread_sys]="$(awk '/^pagecache_cold_read_system/ { print $2 }' <<<"$out")"
  else set_fail pcread_mb "$(tail_of "$TMP/ref-pcread.err" 3)"; fi
}

zerocopy_figure() { # after broker A stopped
  if [ -z "$ZC_LINE" ]; then
    NOTE[p4_copied]="n/a: the broker printed no \`zerocopy:\` line at shutdown"
    return
  fi
  R[p4_zc_line]="$ZC_LINE"
  # Counters are bytes by path; copied / all = user-space copies per fetched byte.
  R[p4_copied]="$(zc_share "$ZC_LINE" copied)"
  R[p4_from_file]="$(zc_share "$ZC_LINE" sendfile)"
  [ -n "${R[p4_copied]}" ] || NOTE[p4_copied]="n/a: could not read \`$ZC_LINE\`"
}

step_p2() {
  log "P2: durable produce (shardlog.flush.every.append=true), acks=all"
  start_broker durable shardlog.flush.every.append=true || { set_fail p2_lg_mb "$BROKER_ERR"; NOTE[p2_rdk_mb]="${NOTE[p2_lg_mb]}"; return; }
  R[p2_broker]="$BROKER_CMD"
  if loadgen "$TMP/p2lg" --topic p2-loadgen --acks all --linger-ms "$LINGER" --batch-size "$BATCH" \
    --consumers 0 --flat-out --duration "${DUR}s" --warmup "${WARM}s"; then
    R[p2_lg_msgs]="$(lg_point "$TMP/p2lg" 0 "['msgs_per_sec']" 0)"
    R[p2_lg_mb]="$(lg_point "$TMP/p2lg" 0 "['mb_per_sec']" 1)"
  else set_fail p2_lg_mb "$(tail_of "$TMP/p2lg.log" 4)"; fi
  local count=$((QUICK ? 100000 : 300000)) s
  [ -n "${R[p2_lg_msgs]:-}" ] && count="$(awk -v r="${R[p2_lg_msgs]}" -v d="$DUR" -v lo="$RDK_MIN" -v hi="$RDK_MAX" \
    'BEGIN { c = int(r * d); if (c < lo) c = lo; if (c > hi) c = hi; print c }')"
  if rdk "$TMP/p2rdk" -P -t p2-rdkafka -b "$BROKER_ADDR" -s "$SIZE" -c "$count" \
    -X acks=all -X "linger.ms=$LINGER" -X "batch.size=$BATCH" && s="$(rdk_summary "$TMP/p2rdk" produced)" && [ -n "$s" ]; then
    read -r _ r mb f <<<"$s"
    R[p2_rdk_msgs]="$r" R[p2_rdk_mb]="$(printf '%.1f' "$mb")"
    [ "$f" = 0 ] || R[p2_rdk_mb]+=" ($f failed)"
  else set_fail p2_rdk_mb "$(rdk_why "$TMP/p2rdk")"; fi
  stop_broker
  ratio p2_lg_ratio "${R[p2_lg_mb]:-}" "${R[fio_mb]:-}"
  ratio p2_rdk_ratio "$(first p2_rdk_mb)" "${R[fio_mb]:-}"
}

# ------------------------------------------------------------- Kafka 3.9 side by side

# ppt PREFIX args...: kafka-producer-perf-test (ProducerPerformance) on the client cores.
ppt() {
  local pre="$1"; shift
  [ -n "$JARS" ] || { echo "Kafka jars missing: bash tests/java/fetch_jars.sh" >"$pre.log"; return 1; }
  timed "$pre" timeout $((DUR * 6 + 60)) taskset -c "$CLIENT_CPUS" java -Xmx1G -XX:+UseG1GC \
    -Dlog4j.configuration="file:$REPO/tests/java/log4j.properties" -cp "$JARS/*" \
    org.apache.kafka.tools.ProducerPerformance "$@"
}
# ppt_summary PREFIX -> "records_per_sec MB_per_sec" of its final line.
ppt_summary() {
  sed -n 's/^[0-9]* records sent, \([0-9.]*\) records\/sec (\([0-9.]*\) MB\/sec).*99\.9th\.$/\1 \2/p' "$1.log" | tail -1
}
gb_of() { calc "$1 * $SIZE / 1e9" 6; }  # records -> GB (10^9 payload bytes)
cpu_per_gb() { [ -n "${1:-}" ] && [ -n "${2:-}" ] && [ "${2:-0}" != 0 ] && calc "$1 / $(gb_of "$2")" 2; }
# cores KEY PREFIX: right after PREFIX's timed run, the cores its client and
# the broker kept busy over its wall time (CPU seconds ÷ elapsed seconds)
# into R[KEY_ccores] and R[KEY_bcores]: this host's limit for that run is
# whichever side had its one core full (client and broker have one each).
# A consume passes SECONDS, the client's own read time: a read of 1-2 s is
# otherwise diluted by the client's start in the wall time.
cores() {
  local e="${3:-}"
  [ -n "$e" ] || e="$(awk '/^[0-9.]+ [0-9.]+ [0-9.]+$/ { print $3 }' "$2.time" 2>/dev/null)"
  [ -n "$e" ] && [ "$e" != 0 ] && [ "$e" != 0.00 ] || return 0
  [ -n "${C_CPU:-}" ] && R[$1_ccores]="$(calc "$C_CPU / $e" 2)"
  [ -n "${B_CPU:-}" ] && R[$1_bcores]="$(calc "$B_CPU / $e" 2)"
  return 0
}
# bound_by KEY -> which side's core limited that run: a side whose core
# was at least 90% busy (client, broker, both), else neither.
bound_by() {
  local c="${R[$1_ccores]:-}" b="${R[$1_bcores]:-}"
  [ -n "$c" ] && [ -n "$b" ] || { echo "—"; return; }
  awk -v c="$c" -v b="$b" 'BEGIN {
    if (c >= 0.9 && b >= 0.9) print "client and broker"; else if (c >= 0.9) print "client";
    else if (b >= 0.9) print "broker"; else print "neither" }'
}
busy_cell() { # KEY -> "client / broker (bound by)"
  if [ -n "${R[$1_ccores]:-}" ]; then echo "${R[$1_ccores]} / ${R[$1_bcores]:-?} ($(bound_by "$1"))"
  else echo "not measured"; fi
}

# vs_side NAME: the produce, consume and latency runs against the broker
# running now (BROKER_PID, BROKER_ADDR), into R[vs_NAME_*].
vs_side() {
  local n="$1" pre="$TMP/vs-$1" produced count s d
  log "vs Kafka ($n): produce acks=1, loadgen"
  if loadgen "$pre-a1" --topic vs-acks1 --acks 1 --linger-ms "$LINGER" --batch-size "$BATCH" \
    --consumers 0 --flat-out --duration "${DUR}s" --warmup "${WARM}s"; then
    R[vs_${n}_a1_mb]="$(lg_point "$pre-a1" 0 "['mb_per_sec']" 1)"
    R[vs_${n}_a1_msgs]="$(lg_point "$pre-a1" 0 "['msgs_per_sec']" 0)"
    produced="$(lg_point "$pre-a1" 0 "['produced']")"
    R[vs_${n}_a1_cpugb]="$(cpu_per_gb "$B_CPU" "$produced")"
    cores "vs_${n}_a1" "$pre-a1"
  else set_fail "vs_${n}_a1_mb" "$(tail_of "$pre-a1.log" 4)"; fi
  log "vs Kafka ($n): produce acks=all, loadgen"
  if loadgen "$pre-aall" --topic vs-acksall --acks all --linger-ms "$LINGER" --batch-size "$BATCH" \
    --consumers 0 --flat-out --duration "${DUR}s" --warmup "${WARM}s"; then
    R[vs_${n}_aall_mb]="$(lg_point "$pre-aall" 0 "['mb_per_sec']" 1)"
    produced="$(lg_point "$pre-aall" 0 "['produced']")"
    R[vs_${n}_aall_cpugb]="$(cpu_per_gb "$B_CPU" "$produced")"
    cores "vs_${n}_aall" "$pre-aall"
  else set_fail "vs_${n}_aall_mb" "$(tail_of "$pre-aall.log" 4)"; fi
  # Client counts sized to about DUR seconds at the loadgen's rate.
  count=$((QUICK ? 300000 : 1000000))
  [ -n "${R[vs_${n}_a1_msgs]:-}" ] && count="$(awk -v r="${R[vs_${n}_a1_msgs]}" -v d="$DUR" -v lo="$RDK_MIN" -v hi="$RDK_MAX" \
    'BEGIN { c = int(r * d); if (c < lo) c = lo; if (c > hi) c = hi; print c }')"
  timed "$pre-pre" "$BIN" loadgen --bootstrap "$BROKER_ADDR" --topic vs-rdkafka --partitions "$PARTITIONS" \
    --messages 10 --consumers 0 --acks 1 || log "pre-creating vs-rdkafka failed: $(tail_of "$pre-pre.log" 2)"
  log "vs Kafka ($n): produce acks=1, rdkafka_performance ($count records)"
  if rdk "$pre-rdk" -P -t vs-rdkafka -b "$BROKER_ADDR" -s "$SIZE" -c "$count" \
    -X acks=1 -X "linger.ms=$LINGER" -X "batch.size=$BATCH" && s="$(rdk_summary "$pre-rdk" produced)" && [ -n "$s" ]; then
    read -r d _ mb f <<<"$s"
    R[vs_${n}_rdk_mb]="$(printf '%.1f' "$mb")"
    [ "$f" = 0 ] || R[vs_${n}_rdk_mb]+=" ($f failed)"
    R[vs_${n}_rdk_cpugb]="$(cpu_per_gb "$B_CPU" "$d")"
    cores "vs_${n}_rdk" "$pre-rdk"
  else set_fail "vs_${n}_rdk_mb" "$(rdk_why "$pre-rdk")"; fi
  log "vs Kafka ($n): produce acks=1, kafka-producer-perf-test ($count records)"
  if ppt "$pre-ppt" --topic vs-ppt --num-records "$count" --record-size "$SIZE" --throughput -1 \
    --producer-props "bootstrap.servers=$BROKER_ADDR" acks=1 "linger.ms=$LINGER" "batch.size=$BATCH" \
    && s="$(ppt_summary "$pre-ppt")" && [ -n "$s" ]; then
    read -r _ mb <<<"$s"
    R[vs_${n}_ppt_mb]="$mb"
    R[vs_${n}_ppt_cpugb]="$(cpu_per_gb "$B_CPU" "$count")"
    cores "vs_${n}_ppt" "$pre-ppt"
  else set_fail "vs_${n}_ppt_mb" "$(tail_of "$pre-ppt.log" 3)"; fi
  log "vs Kafka ($n): consume vs-acks1 from the beginning (loadgen --consume-only)"
  vs_lg_consume "$n" "$pre-c" vs-acks1 c
  log "vs Kafka ($n): consume vs-rdkafka from the beginning (rdkafka_performance -C)"
  vs_rdk_consume "$n" "$pre-rc" vs-rdkafka rc
}

# vs_lg_consume NAME PREFIX TOPIC KEY: loadgen --consume-only reads TOPIC
# from the beginning: R[vs_NAME_KEY_mb] and the rest (lg_consume), the
# broker's CPU per GB, the cores busy.
vs_lg_consume() {
  lg_consume "$2" "$3" "vs_$1_$4" || return 0
  R[vs_$1_$4_cpugb]="$(cpu_per_gb "$B_CPU" "${R[vs_$1_$4_count]:-}")"
  cores "vs_$1_$4" "$2" "$(pyjson "$2.out/consume.json" "j['seconds']")"
}

# vs_rdk_consume NAME PREFIX TOPIC KEY: the same with rdkafka_performance -C.
vs_rdk_consume() {
  local d mb
  if rdk_consume "$2" "$3"; then
    read -r d _ mb _ <<<"$RDK_S"
    R[vs_$1_$4_mb]="$(printf '%.1f' "$mb")"
    R[vs_$1_$4_cpugb]="$(cpu_per_gb "$B_CPU" "$d")"
    # The client's system seconds per GB: its kernel's copy out of the
    # socket, whose pages sendfile took from the page cache.
    R[vs_$1_$4_csys]="$(cpu_per_gb "$(awk '/^[0-9.]+ [0-9.]+ [0-9.]+$/ { print $2 }' "$2.time" 2>/dev/null)" "$d")"
    cores "vs_$1_$4" "$2" "$(sed -n 's/.* consumed in \([0-9]*\)ms.*/\1/p' "$2.log" | tail -1 |
      awk '$1 > 0 { printf "%.3f", $1 / 1000 }')"
  else set_fail "vs_$1_$4_mb" "$(rdk_why "$2")"; fi
}

# vs_hot NAME: recent data read from memory on both sides: HOT_MSGS records
# produced with the throughput settings, then read from the beginning by each
# consumer. Kafka serves them from the page cache (it writes buffered), shardlog
# from its batch cache, on a broker of its own whose shardlog.batch.cache.bytes
# holds the topic (as P4 from memory): the consume rows above read shardlog's
# log cold from disk (O_DIRECT writes leave nothing in the page cache) while
# Kafka's came from the page cache.
vs_hot() {
  local n="$1" pre="$TMP/vs-$1-hot"
  log "vs Kafka ($n): produce $HOT_MSGS records to read back from memory"
  if ! loadgen "$pre-p" --topic vs-hot --acks 1 --linger-ms "$LINGER" --batch-size "$BATCH" \
    --consumers 0 --messages "$HOT_MSGS" --warmup 0s; then
    set_fail "vs_${n}_hc_mb" "$(tail_of "$pre-p.log" 4)"; NOTE[vs_${n}_hrc_mb]="${NOTE[vs_${n}_hc_mb]}"
    return
  fi
  log "vs Kafka ($n): consume vs-hot from the beginning (loadgen --consume-only)"
  vs_lg_consume "$n" "$pre-c" vs-hot hc
  log "vs Kafka ($n): consume vs-hot from the beginning (rdkafka_performance -C)"
  vs_rdk_consume "$n" "$pre-rc" vs-hot hrc
}

# vs_echo: the consume ceiling of the rows from memory (loadgen, rdkafka_performance):
# perf/fetch_echo.py on the broker's cores answers every Fetch at once from
# one prebuilt ~1 MB batch per partition (HOT_MSGS records of SIZE bytes),
# no log behind it. What the same client reads from it, with the same cores,
# bounds what any broker's row can show: R[vs_echo_hc_mb], R[vs_echo_hrc_mb].
vs_echo() {
  local pre="$TMP/vs-echo" port
  port="$(free_port)"
  record_cmd taskset -c "$BROKER_CPUS" python3 "$REPO/perf/fetch_echo.py" "$port" vs-echo "$PARTITIONS" \
    "$((HOT_MSGS / PARTITIONS))" "$SIZE"
  taskset -c "$BROKER_CPUS" python3 "$REPO/perf/fetch_echo.py" "$port" vs-echo "$PARTITIONS" \
    "$((HOT_MSGS / PARTITIONS))" "$SIZE" >"$pre.echo.log" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 1 300); do
    grep -q listening "$pre.echo.log" 2>/dev/null && break
    sleep 0.1
  done
  if grep -q listening "$pre.echo.log"; then
    BROKER_ADDR="127.0.0.1:$port"
    log "consume ceiling: loadgen --consume-only from perf/fetch_echo.py"
    vs_lg_consume echo "$pre-c" vs-echo hc
    log "consume ceiling: rdkafka_performance -C from perf/fetch_echo.py"
    vs_rdk_consume echo "$pre-rc" vs-echo hrc
  else set_fail vs_echo_hrc_mb "fetch_echo did not start: $(tail_of "$pre.echo.log" 3)"; fi
  kill "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null
  BROKER_PID="" BROKER_ADDR=""
}

# vs_latency NAME: on a fresh broker (no retention deleting the gigabytes
# the throughput runs wrote, as P3 runs on a broker of its own), p99 at half
# of Kafka's flat-out rate (measured on Kafka first), with P3's settings:
# acks=1, linger.ms=0, batch.size=16384.
vs_latency() {
  local n="$1" pre="$TMP/vs-$1"
  if [ "$n" = kafka ]; then
    log "vs Kafka ($n): flat-out rate, acks=1 linger.ms=0 batch.size=$P3_BATCH"
    if loadgen "$pre-max" --topic vs-max --acks 1 --linger-ms 0 --batch-size "$P3_BATCH" \
      --consumers 0 --flat-out --duration "${DUR}s" --warmup "${WARM}s"; then
      R[vs_kafka_max]="$(lg_point "$pre-max" 0 "['msgs_per_sec']" 0)"
      [ -n "${R[vs_kafka_max]}" ] && R[vs_rate]="$(calc "${R[vs_kafka_max]} / 2" 0)"
    fi
  fi
  [ -n "${R[vs_rate]:-}" ] || { set_fail "vs_${n}_p99" "no flat-out rate of Kafka's"; return; }
  log "vs Kafka ($n): produce latency at ${R[vs_rate]} msgs/s"
  if loadgen "$pre-lat" --topic vs-latency --acks 1 --linger-ms 0 --batch-size "$P3_BATCH" \
    --rate "${R[vs_rate]}" --consumers 0 --duration "${DUR}s" --warmup "${WARM}s"; then
    R[vs_${n}_p99]="$(lg_point "$pre-lat" 0 "['ack_latency_intended']['p99_us']" 0)"
    R[vs_${n}_p999]="$(lg_point "$pre-lat" 0 "['ack_latency_intended']['p999_us']" 0)"
  else set_fail "vs_${n}_p99" "$(tail_of "$pre-lat.log" 4)"; fi
}

step_kafka() {
  # The read-from-memory rows: 2 GB (quick: 600 MB) under a 3 GiB (1 GiB)
  # batch cache, below Kafka's retention of 512 MiB per partition.
  HOT_MSGS=$((QUICK ? 600000 : 2000000)) HOT_CACHE=$(((QUICK ? 1 : 3) << 30))
  JARS="$(bash "$REPO/tests/java/fetch_jars.sh" 2>"$TMP/jars.err" | tail -1)" || JARS=""
  KAFKA_VER="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$REPO/tests/java/pom.xml")"
  # Kafka first: its flat-out rate sets both sides' latency rate.
  log "vs Kafka: starting Apache Kafka $KAFKA_VER (perf/kafka_peer.sh, cpus $BROKER_CPUS)"
  record_cmd "$REPO/perf/kafka_peer.sh" start --dir "$TMP/kafka" --cpus "$BROKER_CPUS" --partitions "$PARTITIONS"
  local line k
  if line="$("$REPO/perf/kafka_peer.sh" start --dir "$TMP/kafka" --cpus "$BROKER_CPUS" \
    --partitions "$PARTITIONS" 2>"$TMP/kafka-start.err")"; then
    BROKER_PID="$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' <<<"$line")"
    BROKER_ADDR="$(sed -n 's/^bootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
    R[vs_kafka_cmd]="$(grep -v -e '^broker.id' -e '^listeners' -e '^log.dirs' -e '^zookeeper.connect' \
      "$TMP/kafka/server.properties" | tr '\n' ' ')"
    vs_side kafka
    vs_hot kafka
    "$REPO/perf/kafka_peer.sh" stop --dir "$TMP/kafka" >&2
    BROKER_PID="" BROKER_ADDR=""
    rm -rf "$TMP/kafka/kafka-logs"
    # A fresh Kafka (start wipes the dir) for the latency runs.
    if line="$("$REPO/perf/kafka_peer.sh" start --dir "$TMP/kafka" --cpus "$BROKER_CPUS" \
      --partitions "$PARTITIONS" 2>"$TMP/kafka-start2.err")"; then
      BROKER_PID="$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' <<<"$line")"
      BROKER_ADDR="$(sed -n 's/^bootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
      vs_latency kafka
      "$REPO/perf/kafka_peer.sh" stop --dir "$TMP/kafka" >&2
      BROKER_PID="" BROKER_ADDR=""
      rm -rf "$TMP/kafka/kafka-logs"
    else set_fail vs_kafka_p99 "Kafka did not start again: $(tail_of "$TMP/kafka-start2.err" 3)"; fi
  else
    local why; why="Kafka did not start: $(tail_of "$TMP/kafka-start.err" 3)"
    for k in vs_kafka_a1_mb vs_kafka_aall_mb vs_kafka_rdk_mb vs_kafka_ppt_mb vs_kafka_c_mb vs_kafka_rc_mb \
      vs_kafka_hc_mb vs_kafka_hrc_mb vs_kafka_p99; do
      set_fail "$k" "$why"
    done
  fi
  if start_broker versus; then
    vs_side shardlog
    stop_broker
    if start_broker versus-hot "shardlog.batch.cache.bytes=$HOT_CACHE"; then
      vs_hot shardlog
      stop_broker
    else set_fail vs_shardlog_hc_mb "$BROKER_ERR"; NOTE[vs_shardlog_hrc_mb]="${NOTE[vs_shardlog_hc_mb]}"; fi
    vs_echo
    # The disk's sequential read in the same run: shardlog's consume rows
    # from the beginning read what fell out of its batch cache from disk
    # (O_DIRECT writes leave nothing in the page cache).
    [ -n "${R[fio_read_mb]:-}" ] || step_fio_read
    step_pcread
    if start_broker versus-latency; then
      vs_latency shardlog
      stop_broker
    else set_fail vs_shardlog_p99 "$BROKER_ERR"; fi
  else
    for k in vs_shardlog_a1_mb vs_shardlog_aall_mb vs_shardlog_rdk_mb vs_shardlog_ppt_mb vs_shardlog_c_mb \
      vs_shardlog_rc_mb vs_shardlog_hc_mb vs_shardlog_hrc_mb vs_shardlog_p99; do
      set_fail "$k" "$BROKER_ERR"
    done
  fi
  for k in a1_mb aall_mb rdk_mb ppt_mb c_mb rc_mb hc_mb hrc_mb p99 p999 a1_cpugb aall_cpugb rdk_cpugb \
    ppt_cpugb c_cpugb rc_cpugb hc_cpugb hrc_cpugb; do
    ratio "vs_ratio_$k" "$(first "vs_shardlog_$k")" "$(first "vs_kafka_$k")"
  done
  for k in hc hrc; do
    ratio "vs_echo_shardlog_$k" "$(first "vs_shardlog_${k}_mb")" "$(first "vs_echo_${k}_mb")"
    ratio "vs_echo_kafka_$k" "$(first "vs_kafka_${k}_mb")" "$(first "vs_echo_${k}_mb")"
    ratio "vs_echo_room_$k" "$(first "vs_echo_${k}_mb")" "$(first "vs_kafka_${k}_mb")"
  done
  ratio vs_disk_c "$(first vs_shardlog_c_mb)" "${R[fio_read_mb]:-}"
  ratio vs_disk_rc "$(first vs_shardlog_rc_mb)" "${R[fio_read_mb]:-}"
  # The most shardlog ÷ Kafka a read from disk allows: the disk ÷ Kafka's row.
  ratio vs_disk_room_c "${R[fio_read_mb]:-}" "$(first vs_kafka_c_mb)"
  ratio vs_disk_room_rc "${R[fio_read_mb]:-}" "$(first vs_kafka_rc_mb)"
  # Bytes per broker CPU-second, shardlog ÷ Kafka: the inverse of the
  # CPU-per-GB ratio (what each broker would move with a core to spare).
  for k in a1 aall rdk ppt c rc hc hrc; do
    ratio "vs_eff_$k" "$(first "vs_kafka_${k}_cpugb")" "$(first "vs_shardlog_${k}_cpugb")"
  done
}

# ------------------------------------------------------------- run

if [ ! -x "$BIN" ]; then
  log "$BIN missing: cargo build --release"
  (cd "$REPO" && cargo build --release >&2) || log "cargo build --release failed; steps needing $BIN will fail"
fi
RDK_VER=""
# The first use of the wrapper builds librdkafka: do it before measuring.
[ -n "$RDK" ] && RDK_VER="$("$RDK" -h 2>&1 | sed -n 's/^librdkafka version \([0-9.]*\).*/\1/p' | head -1)"
START="$(date -u '+%Y-%m-%d %H:%M UTC')"
LOAD0="$(cut -d' ' -f1-3 /proc/loadavg)"
# Idle-state setting (tuning/check.sh cpu.idle): it moves wake-up latency.
IDLE="$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none)"
[ -r /sys/module/haltpoll/parameters/guest_halt_poll_ns ] &&
  IDLE+=" guest_halt_poll_ns=$(cat /sys/module/haltpoll/parameters/guest_halt_poll_ns)"
log "host $(uname -n): $NPROC cpus, kernel $(uname -r); broker cpus $BROKER_CPUS ($NSHARDS shard(s)), client cpus $CLIENT_CPUS"

want ref && step_ref
if want p1 || want p4; then
  if start_broker fast; then
    R[a_broker]="$BROKER_CMD"
    want p1 && step_p1
    want p4 && step_p4
    stop_broker
    want p4 && zerocopy_figure
    want p4 && step_fio_read
  else
    for k in p1_lg_mb p1_rdk_mb p4_lg_mb p4_mb p4_copied; do set_fail "$k" "$BROKER_ERR"; done
  fi
fi
want p3 && step_p3
want p2 && step_p2
JARS="" KAFKA_VER="" HOT_MSGS=0 HOT_CACHE=0
want kafka && step_kafka
# Last: its broker reserves and touches a 6 GiB cache, and the latency runs
# measured right after it were several times slower (P3 linger.ms=0 p99
# 5.7 ms after it, 0.43 ms without it, 2026-11-30).
want p4 && step_p4hot

# ------------------------------------------------------------- markdown

MODE=""; [ "$QUICK" = 1 ] && MODE=" --quick"
cat <<EOF

### Run of $START (\`perf/results.sh$MODE\`)

Host \`$(uname -n)\`: nproc $NPROC, kernel $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo),
load average at start $LOAD0 and end $(cut -d' ' -f1-3 /proc/loadavg) (other tenants share the cores),
cpuidle $IDLE.
shardlog $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo "?") ($BIN); broker data shards on CPU(s) $BROKER_CPUS
($NSHARDS shard(s)), clients pinned to CPU(s) $CLIENT_CPUS. Records 1 KiB, $PARTITIONS partitions,
${DUR} s measured after ${WARM} s warm-up per loadgen run. MB/s = 10^6 payload bytes per second.
One run, not a median: figures on this shared VM swing 2-3x between runs.
EOF
# The data-path tables only when one of their steps ran.
if want ref || want p1 || want p2 || want p3 || want p4; then
cat <<EOF

| figure | shardlog | reference | ratio | target | met |
|---|---|---|---|---|---|
| P1 produce, acks=1, linger.ms=$LINGER, batch.size=$BATCH (loadgen) | $(cell p1_lg_mb MB/s)$(opt p1_lg_msgs msgs/s) | iperf3 1 stream: $(cell iperf3_mb MB/s) | $(cell p1_lg_ratio) | ≥ 0.50 | $(meets "${R[p1_lg_ratio]:-}" '>=' 0.5) |
| P1 same, rdkafka_performance | $(cell p1_rdk_mb MB/s)$(opt p1_rdk_msgs msgs/s) | iperf3 1 stream: $(cell iperf3_mb MB/s) | $(cell p1_rdk_ratio) | ≥ 0.50 | $(meets "${R[p1_rdk_ratio]:-}" '>=' 0.5) |
| P2 durable produce, acks=all, flush every append (loadgen) | $(cell p2_lg_mb MB/s) | fio O_DIRECT 1 MiB seq write: $(cell fio_mb MB/s) | $(cell p2_lg_ratio) | ≥ 0.60 | $(meets "${R[p2_lg_ratio]:-}" '>=' 0.6) |
| P2 same, rdkafka_performance | $(cell p2_rdk_mb MB/s) | fio: $(cell fio_mb MB/s) | $(cell p2_rdk_ratio) | ≥ 0.60 | $(meets "${R[p2_rdk_ratio]:-}" '>=' 0.6) |
| P3 produce p99 / p99.9 at $(cell p3_rate_0 msgs/s) (half of $(cell p3_max_0 msgs/s) flat out), linger.ms=0, batch.size=$P3_BATCH | $(cell p3_p99_0 µs) / $(cell p3_p999_0 µs) | echo RTT p99 / p99.9: $(cell echo_p99 µs) / $(cell echo_p999 µs); bound 3×p99.9+linger = $(cell p3_bound_0 µs) | $(cell p3_ratio_0) | ≤ 1.00 | $(meets "${R[p3_ratio_0]:-}" '<=' 1) |
| P3 same, linger.ms=$LINGER, at $(cell p3_rate_5 msgs/s) (half of $(cell p3_max_5 msgs/s)) | $(cell p3_p99_5 µs) / $(cell p3_p999_5 µs) | bound: $(cell p3_bound_5 µs) | $(cell p3_ratio_5) | ≤ 1.00 | $(meets "${R[p3_ratio_5]:-}" '<=' 1) |
| P3 diagnostic, not the target: linger.ms=0 against a fixed-rate loopback echo at the same rate | $(cell p3_p99_0 µs) / $(cell p3_p999_0 µs) | fixed-rate echo p99 / p99.9: $(cell p3_echo_rate_p99_0 µs) / $(cell p3_echo_rate_p999_0 µs); 3×p99.9 = $(cell p3_bound_rate_0 µs) | $(cell p3_ratio_rate_0) | | |
| P3 diagnostic, linger.ms=$LINGER, same | $(cell p3_p99_5 µs) / $(cell p3_p999_5 µs) | fixed-rate echo p99 / p99.9: $(cell p3_echo_rate_p99_5 µs) / $(cell p3_echo_rate_p999_5 µs); 3×p99.9+linger = $(cell p3_bound_rate_5 µs) | $(cell p3_ratio_rate_5) | | |
| P4 consume from the beginning (loadgen --consume-only, 1 consumer) | $(cell p4_lg_mb MB/s)$(opt p4_lg_count msgs) | P1 produce, loadgen: $(cell p1_lg_mb MB/s) | $(cell p4_lg_ratio) | ≥ 1.50 | $(meets "${R[p4_lg_ratio]:-}" '>=' 1.5) |
| P4 consume from the beginning (rdkafka_performance -C) | $(cell p4_mb MB/s)$(opt p4_count msgs) | P1 produce, rdkafka_performance: $(cell p1_rdk_mb MB/s) | $(cell p4_ratio) | ≥ 1.50 | $(meets "${R[p4_ratio]:-}" '>=' 1.5) |
| P4 cold diagnostic, not the target: the loadgen's cold read against the disk's read speed, measured right after it (share of fetched bytes sent from segment files: $(cell p4_from_file)) | $(cell p4_lg_mb MB/s) | fio O_DIRECT 1 MiB seq read, iodepth 8: $(cell fio_read_mb MB/s); the disk during the loadgen's read: ${R[p4_lg_disk]:-not measured} | $(cell p4_lg_disk_ratio) | | |
| P4 user-space bytes copied per fetched byte | $(cell p4_copied) | ${R[p4_zc_line]:-—} | | | |
| P4 from memory: consume a topic that fits in the batch cache ($(cell p4h_cache)) (loadgen --consume-only, 1 consumer) | $(cell p4h_lg_mb MB/s)$(opt p4h_lg_count msgs) | producing that topic on the same broker, loadgen: $(cell p4h_prod_mb MB/s)$(opt p4h_prod_msgs msgs) | $(cell p4h_lg_ratio) | ≥ 1.50 | $(meets "${R[p4h_lg_ratio]:-}" '>=' 1.5) |
| P4 from memory, rdkafka_performance -C | $(cell p4h_mb MB/s)$(opt p4h_count msgs) | P1 produce, rdkafka_performance: $(cell p1_rdk_mb MB/s) | $(cell p4h_ratio) | ≥ 1.50 | $(meets "${R[p4h_ratio]:-}" '>=' 1.5) |
| P4 from memory: share of fetched bytes sent from the batch cache / copied in user space | $(cell p4h_from_cache) / $(cell p4h_copied) | ${R[p4h_zc_line]:-—} | | | |

P3 latencies are from the intended send time on the fixed-rate schedule
(coordinated omission corrected); from the actual send, p99.9 was
$(cell p3_sent_p999_0 µs) (linger 0) and $(cell p3_sent_p999_5 µs) (linger $LINGER).
What the broker added (its \`request latency\` shutdown line: a Produce request
read off the socket until its response is in the kernel; each linger.ms on a
broker of its own): p99 / p99.9 / max $(cell p3_broker_p99_0 µs) / $(cell p3_broker_p999_0 µs) / $(cell p3_broker_max_0 µs)
(linger 0) and $(cell p3_broker_p99_5 µs) / $(cell p3_broker_p999_5 µs) / $(cell p3_broker_max_5 µs) (linger $LINGER).
P3's rate is half of what the same setting (linger.ms, batch.size) reached
flat out on a broker of its own just before. The diagnostic rows set the same
produce latencies against \`loadgen --echo-rtt --rate\` at that rate: 1 KiB
messages on the same fixed-rate grid to a loopback server that answers each
with 8 bytes, timed from the intended send time, so a stall of the host
delays every message due during it (the closed-loop echo of the target row
counts such a stall once). P4: each consumer reads the topic
its own P1 run produced, from the earliest offset, right after P1: what is
still in the batch cache is sent from memory (sendmsg), the rest is cold
(segments are written with O_DIRECT, so not in the page cache: each fetch
from a file asks the kernel to read shardlog.fetch.readahead.bytes past it,
and sendfile sends from the page cache); client CPU per record: loadgen $(cell p4_lg_cpu µs),
rdkafka_performance $(cell p4_rdk_cpu µs). The copy figure counts every fetch
the broker served in this run (only P4 consumed). P4 from memory: a broker of
its own with shardlog.batch.cache.bytes of $(cell p4h_cache), larger than the topic, as a Kafka
consumer of recent data reads the page cache; the topic was produced there first
with P1's settings (the loadgen row's reference). The rdkafka_performance consumer
is set against P1's rdkafka_performance producer (that broker's topic);
client CPU per record: loadgen $(cell p4h_lg_cpu µs), rdkafka_performance $(cell p4h_rdk_cpu µs). Broker exit status after SIGTERM:
$([ -n "$BROKER_EXITS" ] && echo "${BROKER_EXITS%; }" || echo "no broker started").

#### loadgen vs rdkafka_performance (issue 7: 1 KiB, acks=1, linger.ms=$LINGER, $PARTITIONS partitions)

| producer | msgs/s | MB/s | client CPU µs/msg | broker CPU µs/msg |
|---|---|---|---|---|
| shardlog loadgen | $(cell p1_lg_msgs) | $(cell p1_lg_mb) | $(cell p1_lg_cpu) | $(cell p1_lg_bcpu) |
| rdkafka_performance (librdkafka ${RDK_VER:-?}) | $(cell p1_rdk_msgs) | $(cell p1_rdk_mb) | $(cell p1_rdk_cpu) | $(cell p1_rdk_bcpu) |

loadgen / rdkafka_performance msgs/s: $(cell lg_vs_rdk) (target ≥ 1.00: $(meets "${R[lg_vs_rdk]:-}" '>=' 1)).
CPU is user+system seconds (\`/usr/bin/time\`, broker: \`/proc/<pid>/stat\`) over
the whole run including warm-up, divided by the records it acknowledged.

EOF
fi
if want kafka; then
cat <<EOF

#### shardlog ÷ Apache Kafka ${KAFKA_VER:-3.9} (issue 23: single broker, same cores, same log-dir disk, same clients)

Kafka ${KAFKA_VER:-3.9} in ZooKeeper mode from Maven Central's jars (\`perf/kafka_peer.sh\`: \`kafka.Kafka\`,
-Xmx1G -Xms1G G1 as \`bin/kafka-server-start.sh\`, Debian's ZooKeeper), pinned to CPU(s) $BROKER_CPUS
like shardlog's shards; Kafka's defaults but: ${R[vs_kafka_cmd]:-not started}.
1 KiB records, $PARTITIONS partitions, linger.ms=$LINGER batch.size=$BATCH for throughput; the latency
rows use P3's settings (acks=1, linger.ms=0, batch.size=$P3_BATCH) at half of Kafka's flat-out rate
($(cell vs_kafka_max msgs/s) → $(cell vs_rate msgs/s)), from the intended send time, each side on a
fresh broker (as P3), not the one that just took the throughput runs' gigabytes.
Broker CPU = user+system seconds of the broker process over the client's whole run (warm-up
included) ÷ GB (10^9 payload bytes) that run acknowledged or read. One run each.

| figure | shardlog | Kafka | shardlog ÷ Kafka | goal | met |
|---|---|---|---|---|---|
| produce acks=1, loadgen | $(cell vs_shardlog_a1_mb MB/s) | $(cell vs_kafka_a1_mb MB/s) | $(cell vs_ratio_a1_mb) | ≥ 3 | $(meets "${R[vs_ratio_a1_mb]:-}" '>=' 3) |
| produce acks=all, loadgen | $(cell vs_shardlog_aall_mb MB/s) | $(cell vs_kafka_aall_mb MB/s) | $(cell vs_ratio_aall_mb) | ≥ 3 | $(meets "${R[vs_ratio_aall_mb]:-}" '>=' 3) |
| produce acks=1, rdkafka_performance | $(cell vs_shardlog_rdk_mb MB/s) | $(cell vs_kafka_rdk_mb MB/s) | $(cell vs_ratio_rdk_mb) | ≥ 3 | $(meets "${R[vs_ratio_rdk_mb]:-}" '>=' 3) |
| produce acks=1, kafka-producer-perf-test | $(cell vs_shardlog_ppt_mb MB/s) | $(cell vs_kafka_ppt_mb MB/s) | $(cell vs_ratio_ppt_mb) | ≥ 3 | $(meets "${R[vs_ratio_ppt_mb]:-}" '>=' 3) |
| consume from the beginning, loadgen --consume-only | $(cell vs_shardlog_c_mb MB/s) | $(cell vs_kafka_c_mb MB/s) | $(cell vs_ratio_c_mb) | ≥ 2 | $(meets "${R[vs_ratio_c_mb]:-}" '>=' 2) |
| consume from the beginning, rdkafka_performance -C | $(cell vs_shardlog_rc_mb MB/s) | $(cell vs_kafka_rc_mb MB/s) | $(cell vs_ratio_rc_mb) | ≥ 2 | $(meets "${R[vs_ratio_rc_mb]:-}" '>=' 2) |
| consume recent data from memory ($HOT_MSGS records; Kafka: page cache, shardlog: a $((HOT_CACHE >> 30)) GiB batch cache), loadgen --consume-only | $(cell vs_shardlog_hc_mb MB/s) | $(cell vs_kafka_hc_mb MB/s) | $(cell vs_ratio_hc_mb) | ≥ 2 | $(meets "${R[vs_ratio_hc_mb]:-}" '>=' 2) |
| same, rdkafka_performance -C | $(cell vs_shardlog_hrc_mb MB/s) | $(cell vs_kafka_hrc_mb MB/s) | $(cell vs_ratio_hrc_mb) | ≥ 2 | $(meets "${R[vs_ratio_hrc_mb]:-}" '>=' 2) |
| produce p99 at $(cell vs_rate msgs/s), loadgen --rate | $(cell vs_shardlog_p99 µs) | $(cell vs_kafka_p99 µs) | $(cell vs_ratio_p99) | ≤ 0.33 | $(meets "${R[vs_ratio_p99]:-}" '<=' 0.334) |
| produce p99.9, same run | $(cell vs_shardlog_p999 µs) | $(cell vs_kafka_p999 µs) | $(cell vs_ratio_p999) | | |
| broker CPU s/GB, produce acks=1, loadgen | $(cell vs_shardlog_a1_cpugb) | $(cell vs_kafka_a1_cpugb) | $(cell vs_ratio_a1_cpugb) | ≤ 0.25 | $(meets "${R[vs_ratio_a1_cpugb]:-}" '<=' 0.25) |
| broker CPU s/GB, produce acks=all, loadgen | $(cell vs_shardlog_aall_cpugb) | $(cell vs_kafka_aall_cpugb) | $(cell vs_ratio_aall_cpugb) | ≤ 0.25 | $(meets "${R[vs_ratio_aall_cpugb]:-}" '<=' 0.25) |
| broker CPU s/GB, produce acks=1, rdkafka_performance | $(cell vs_shardlog_rdk_cpugb) | $(cell vs_kafka_rdk_cpugb) | $(cell vs_ratio_rdk_cpugb) | ≤ 0.25 | $(meets "${R[vs_ratio_rdk_cpugb]:-}" '<=' 0.25) |
| broker CPU s/GB, produce acks=1, kafka-producer-perf-test | $(cell vs_shardlog_ppt_cpugb) | $(cell vs_kafka_ppt_cpugb) | $(cell vs_ratio_ppt_cpugb) | ≤ 0.25 | $(meets "${R[vs_ratio_ppt_cpugb]:-}" '<=' 0.25) |
| broker CPU s/GB, consume, loadgen | $(cell vs_shardlog_c_cpugb) | $(cell vs_kafka_c_cpugb) | $(cell vs_ratio_c_cpugb) | | |
| broker CPU s/GB, consume, rdkafka_performance -C | $(cell vs_shardlog_rc_cpugb) | $(cell vs_kafka_rc_cpugb) | $(cell vs_ratio_rc_cpugb) | | |
| broker CPU s/GB, consume from memory, loadgen | $(cell vs_shardlog_hc_cpugb) | $(cell vs_kafka_hc_cpugb) | $(cell vs_ratio_hc_cpugb) | | |
| broker CPU s/GB, consume from memory, rdkafka_performance -C | $(cell vs_shardlog_hrc_cpugb) | $(cell vs_kafka_hrc_cpugb) | $(cell vs_ratio_hrc_cpugb) | | |

This host's limit in the same runs: the client and the broker have one core
each, so a throughput row shows the brokers only where the client's core had
room to spare. Cores busy = CPU seconds (user+system) ÷ the run's wall seconds,
warm-up included (a consume: ÷ the client's own read time, its start left out
of the denominator but not of the CPU seconds); "bound by" names a side whose
core was at least 90% busy.
Where shardlog's rows are bound by the client, the last column is the
broker-bound comparison: bytes moved per broker CPU-second, shardlog ÷ Kafka
(the inverse of the CPU-per-GB ratio), what each broker would move with the
client off its back.

| throughput run | shardlog: client / broker cores busy | Kafka: client / broker cores busy | bytes per broker CPU-second, shardlog ÷ Kafka |
|---|---|---|---|
| produce acks=1, loadgen | $(busy_cell vs_shardlog_a1) | $(busy_cell vs_kafka_a1) | $(cell vs_eff_a1) |
| produce acks=all, loadgen | $(busy_cell vs_shardlog_aall) | $(busy_cell vs_kafka_aall) | $(cell vs_eff_aall) |
| produce acks=1, rdkafka_performance | $(busy_cell vs_shardlog_rdk) | $(busy_cell vs_kafka_rdk) | $(cell vs_eff_rdk) |
| produce acks=1, kafka-producer-perf-test | $(busy_cell vs_shardlog_ppt) | $(busy_cell vs_kafka_ppt) | $(cell vs_eff_ppt) |
| consume, loadgen --consume-only | $(busy_cell vs_shardlog_c) | $(busy_cell vs_kafka_c) | $(cell vs_eff_c) |
| consume, rdkafka_performance -C | $(busy_cell vs_shardlog_rc) | $(busy_cell vs_kafka_rc) | $(cell vs_eff_rc) |
| consume from memory, loadgen --consume-only | $(busy_cell vs_shardlog_hc) | $(busy_cell vs_kafka_hc) | $(cell vs_eff_hc) |
| consume from memory, rdkafka_performance -C | $(busy_cell vs_shardlog_hrc) | $(busy_cell vs_kafka_hrc) | $(cell vs_eff_hrc) |

The consume ceiling of each client here: loadgen --consume-only and
rdkafka_performance -C, same flags and cores, reading the same number of
records from perf/fetch_echo.py, a
broker that answers every Fetch at once from one prebuilt batch per
partition (no log, no copy in user space). No broker's row can pass it; the
last column is the most shardlog ÷ Kafka this client and host allow.

| run | MB/s | client / broker cores busy | shardlog ÷ ceiling | Kafka ÷ ceiling | ceiling ÷ Kafka |
|---|---|---|---|---|---|
| consume from memory, loadgen --consume-only, from fetch_echo | $(cell vs_echo_hc_mb MB/s) | $(busy_cell vs_echo_hc) | $(cell vs_echo_shardlog_hc) | $(cell vs_echo_kafka_hc) | $(cell vs_echo_room_hc) |
| consume from memory, rdkafka_performance -C, from fetch_echo | $(cell vs_echo_hrc_mb MB/s) | $(busy_cell vs_echo_hrc) | $(cell vs_echo_shardlog_hrc) | $(cell vs_echo_kafka_hrc) | $(cell vs_echo_room_hrc) |

The disk in the same run, for the rows read from the beginning (shardlog
reads what left its batch cache from disk; Kafka reads its page cache):
fio O_DIRECT 1 MiB sequential read $(cell fio_read_mb MB/s); shardlog's
consume from the beginning ÷ that: loadgen $(cell vs_disk_c), rdkafka_performance $(cell vs_disk_rc);
the disk ÷ Kafka's row, the most shardlog ÷ Kafka a read from this disk allows:
loadgen $(cell vs_disk_room_c), rdkafka_performance $(cell vs_disk_room_rc).
shardlog sends those reads with sendfile, so its consumers copy out of
page-cache pages just filled from disk. The same host's cold page-cache read
in this run (\`perf/reference.sh --only pcread\`: a file written with O_DIRECT,
read back buffered by dd, no broker): $(cell pcread_mb MB/s) at $(cell pcread_sys) system
seconds per GB. rdkafka_performance's own system seconds per GB: from
shardlog's beginning $(cell vs_shardlog_rc_csys), from shardlog's batch cache $(cell vs_shardlog_hrc_csys),
from Kafka's page cache $(cell vs_kafka_rc_csys).
EOF
fi
cat <<EOF

Commands:
\`\`\`
EOF
for c in "${CMDS[@]}"; do echo "$c"; done
echo '```'
