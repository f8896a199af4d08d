#!/usr/bin/env bash
# Record a CPU flamegraph of a shardlog broker (or any process) under load.
#
#   perf/flamegraph.sh --pid PID [--duration 20] [--workload CMD] [--out FILE.svg]
#   perf/flamegraph.sh --start   [--duration 20] [--workload CMD] [--out FILE.svg]
#
# --start launches target/release/shardlog broker on a temp log dir and a free
# port, exports SHARDLOG_BOOTSTRAP=127.0.0.1:PORT for the workload, and stops
# both afterwards. The workload runs in the background while perf samples.
# Sampling is software cpu-clock (no hardware counters in our VMs) with DWARF
# call graphs by default, at 499 Hz (16 KiB of stack per sample; --fp: frame
# pointers at 999 Hz, 999 rather than 1000 to avoid lockstep with timer
# ticks). Release Rust code keeps no frame pointers, so frame-pointer stacks
# end in [unknown] below glommio's executor; DWARF unwinding reaches the
# broker's own call paths (issue 27 measured both: perf/RESULTS.md).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: perf/flamegraph.sh (--pid PID | --start) [options]
  --pid PID            profile this running process (all its threads)
  --start              start target/release/shardlog broker itself (see --broker-args)
  --duration SECS      sampling time (default 20)
  --warmup SECS        let the workload run this long before sampling (default 2 with a workload, else 0)
  --workload CMD       bash command generating load; $SHARDLOG_BOOTSTRAP is exported.
                       Default with --start: rdkafka-perf producing 1 KiB messages
                       (or kcat if rdkafka-perf is not found). Default with --pid: none.
  --bootstrap H:P      SHARDLOG_BOOTSTRAP for --pid mode (default: keep the environment's)
  --out FILE.svg       output (default: flamegraph-<timestamp>.svg)
  --dwarf              --call-graph dwarf,16384 (the default: Rust stacks without frame pointers)
  --fp                 frame-pointer call graphs (-g): smaller and faster, but stacks stop at [unknown]
  --fast-symbols       perf script --no-inline: no inlined frames, but seconds instead of
                       minutes for a debug build
  --freq HZ            sampling frequency (default 499 with DWARF, 999 with --fp)
  --bin PATH           broker binary for --start (default: <repo>/target/release/shardlog)
  --broker-args ARGS   broker arguments for --start; {dir} and {port} are substituted
                       (default: $SHARDLOG_BROKER_ARGS or "broker --override
                       listeners=PLAINTEXT://127.0.0.1:{port} --override log.dirs={dir}")
  --title TEXT         flamegraph title
  --keep               keep perf.data and the collapsed stacks next to the SVG
  --no-install         fail instead of installing missing perf/inferno
EOF
}

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PID="" START=0 DURATION=20 WARMUP="" WORKLOAD="" OUT="" DWARF=1 FREQ="" BIN="" NO_INLINE="" TITLE="" KEEP=0 INSTALL=1
DEFAULT_BROKER_ARGS='broker --override listeners=PLAINTEXT://127.0.0.1:{port} --override log.dirs={dir} --override log.retention.bytes=536870912 --override log.retention.check.interval.ms=1000 --override log.segment.delete.delay.ms=1000'
BROKER_ARGS="${SHARDLOG_BROKER_ARGS:-$DEFAULT_BROKER_ARGS}"
while [ $# -gt 0 ]; do
  case "$1" in
    --pid) PID="$2"; shift 2 ;;
    --start) START=1; shift ;;
    --duration) DURATION="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --workload) WORKLOAD="$2"; shift 2 ;;
    --bootstrap) export SHARDLOG_BOOTSTRAP="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --dwarf) DWARF=1; shift ;;
    --fp) DWARF=0; shift ;;
    --fast-symbols) NO_INLINE=--no-inline; shift ;;
    --freq) FREQ="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --broker-args) BROKER_ARGS="$2"; shift 2 ;;
    --title) TITLE="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --no-install) INSTALL=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "flamegraph.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
log() { echo "flamegraph.sh: $*" >&2; }
die() { log "$*"; exit 1; }
if [ -n "$PID" ] && [ "$START" = 1 ]; then die "--pid and --start are exclusive"; fi
if [ -z "$PID" ] && [ "$START" = 0 ]; then usage >&2; exit 2; fi
[ -n "$OUT" ] || OUT="flamegraph-$(date +%Y%m%d-%H%M%S).svg"

# ---------------------------------------------------------------- tools

export PATH="$PATH:$HOME/.cargo/bin"
ensure_tools() {
  if ! command -v perf >/dev/null; then
    [ "$INSTALL" = 1 ] || die "perf missing: install it with 'apt-get install -y linux-perf'"
    log "perf missing: apt-get install -y linux-perf"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-perf >&2 \
      || die "could not install perf; run 'apt-get install -y linux-perf' as root"
  fi
  if ! command -v inferno-collapse-perf >/dev/null || ! command -v inferno-flamegraph >/dev/null; then
    [ "$INSTALL" = 1 ] || die "inferno missing: install it with 'cargo install inferno --locked'"
    log "inferno missing: cargo install inferno --locked (takes a minute or more)"
    cargo install inferno --locked >&2 || die "could not install inferno; run 'cargo install inferno --locked'"
  fi
}
ensure_tools

# ---------------------------------------------------------------- processes

TMP="$(mktemp -d -t shardlog-flame.XXXXXX)"
BROKER_PID="" WORKLOAD_PID=""
cleanup() {
  # Workload and broker run in their own process groups (setsid) so one kill
  # stops each with its children.
  [ -n "$WORKLOAD_PID" ] && kill -TERM -- "-$WORKLOAD_PID" 2>/dev/null || true
  [ -n "$BROKER_PID" ] && kill -TERM -- "-$BROKER_PID" 2>/dev/null || true
  [ -n "$BROKER_PID" ] && wait "$BROKER_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_listening() {
  local hex; hex="$(printf '%04X' "$1")"
  # State 0A = LISTEN in /proc/net/tcp{,6}.
  awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

free_port() {
  python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py" || die "no free port found"
}

start_broker() {
  [ -n "$BIN" ] || BIN="$REPO/target/release/shardlog"
  [ -x "$BIN" ] || die "broker binary $BIN missing: run 'cargo build --release' (or pass --bin)"
  local port args
  port="$(free_port)"
  mkdir -p "$TMP/log"
  args="${BROKER_ARGS//\{dir\}/$TMP/log}"; args="${args//\{port\}/$port}"
  log "starting: $BIN $args"
  # shellcheck disable=SC2086 # broker args are a word list by design
  setsid "$BIN" $args >"$TMP/broker.log" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 1 300); do
    port_listening "$port" && break
    kill -0 "$BROKER_PID" 2>/dev/null || { tail -20 "$TMP/broker.log" >&2; die "broker exited during startup"; }
    sleep 0.1
  done
  port_listening "$port" || { tail -20 "$TMP/broker.log" >&2; die "broker did not listen on $port within 30 s"; }
  export SHARDLOG_BOOTSTRAP="127.0.0.1:$port"
  PID="$BROKER_PID"
  log "broker pid $PID listening on $SHARDLOG_BOOTSTRAP"
}

default_workload() {
  local rdk=""
  for c in /work/shared/tools/rdkafka-perf "$REPO/../shared/tools/rdkafka-perf" "$REPO/../../shared/tools/rdkafka-perf"; do
    [ -x "$c" ] && { rdk="$c"; break; }
  done
  if [ -n "$rdk" ]; then
    # The wrapper compiles librdkafka on first use: do it now, not while sampling.
    log "preparing $rdk (first use builds librdkafka, a few minutes)"
    "$rdk" -h >/dev/null 2>&1 || true
    echo "'$rdk' -P -t flamegraph -b \"\$SHARDLOG_BOOTSTRAP\" -s 1024 -c 100000000 -X acks=1 -X linger.ms=5"
  elif command -v kcat >/dev/null; then
    echo "yes 'shardlog flamegraph payload 0123456789abcdef' | head -n 100000000 | kcat -P -b \"\$SHARDLOG_BOOTSTRAP\" -t flamegraph"
  else
    die "no default workload: neither rdkafka-perf nor kcat found; pass --workload"
  fi
}

[ "$START" = 1 ] && start_broker
kill -0 "$PID" 2>/dev/null || die "no process $PID"
if [ -z "$WORKLOAD" ] && [ "$START" = 1 ]; then WORKLOAD="$(default_workload)" || exit 1; fi
if [ -n "$WORKLOAD" ]; then
  log "workload: $WORKLOAD"
  setsid bash -c "$WORKLOAD" >"$TMP/workload.log" 2>&1 &
  WORKLOAD_PID=$!
  sleep "${WARMUP:-2}"
  kill -0 "$WORKLOAD_PID" 2>/dev/null || log "note: workload already exited (see its output below)"
elif [ -n "$WARMUP" ]; then
  sleep "$WARMUP"
fi

# ---------------------------------------------------------------- record, render

CG=(-g); [ "$DWARF" = 1 ] && CG=(--call-graph dwarf,16384)
[ -n "$FREQ" ] || { FREQ=999; [ "$DWARF" = 1 ] && FREQ=499; }
log "perf record -e cpu-clock -F $FREQ ${CG[*]} -p $PID for ${DURATION}s"
perf record -e cpu-clock -F "$FREQ" "${CG[@]}" -p "$PID" -o "$TMP/perf.data" -- sleep "$DURATION" 2>"$TMP/perf.err" \
  || { cat "$TMP/perf.err" >&2; die "perf record failed (kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null); non-root needs <= 1)"; }
if [ -n "$WORKLOAD_PID" ]; then
  kill -TERM -- "-$WORKLOAD_PID" 2>/dev/null || true
  wait "$WORKLOAD_PID" 2>/dev/null || true
  log "workload output (tail):"; tail -5 "$TMP/workload.log" >&2 || true
  WORKLOAD_PID=""
fi

# Inlined frames are resolved by default: in a release build the broker's
# async fns are inlined into glommio's task poll, and without them 36% of
# samples named a shardlog function instead of 62% (perf/RESULTS.md). That
# runs addr2line per address: 12-25 s for a release recording, but 3 min for
# 467 samples of a debug build, which --fast-symbols (--no-inline) renders
# in under a second.
perf script $NO_INLINE -i "$TMP/perf.data" 2>/dev/null >"$TMP/perf.script"
inferno-collapse-perf <"$TMP/perf.script" >"$TMP/collapsed.txt"
[ -s "$TMP/collapsed.txt" ] || die "no samples collected (was process $PID on-CPU?)"
[ -n "$TITLE" ] || TITLE="shardlog: pid $PID, ${DURATION}s cpu-clock @${FREQ}Hz${WORKLOAD:+, load: ${WORKLOAD:0:80}}"
inferno-flamegraph --title "$TITLE" <"$TMP/collapsed.txt" >"$OUT"
if [ "$KEEP" = 1 ]; then
  cp "$TMP/perf.data" "${OUT%.svg}.perf.data"; cp "$TMP/collapsed.txt" "${OUT%.svg}.collapsed.txt"
fi
# perf script prints one unindented header line per sample, then its stack.
echo "flamegraph: $OUT ($(grep -c '^[^[:space:]]' "$TMP/perf.script") samples, $(wc -l <"$TMP/collapsed.txt") distinct stacks)"
