#!/usr/bin/env bash
# What TLS costs, shardlog and Apache Kafka 3.9 side by side, in one run:
# produce (1 KiB, acks=1, linger.ms=5, batch.size=1000000, 6 partitions)
# and consume from memory, each over SSL and over PLAINTEXT, with shardlog's
# loadgen and librdkafka's rdkafka_performance (built with OpenSSL:
# perf/rdkafka_perf_ssl.sh). Every broker runs on core 0 with one listener
# of each protocol (the same process serves both), every client on core 1.
#
#   perf/tls_cost.sh [--bin PATH] [--rounds N] [--duration SECS]
#                    [--consume-messages N] [--only shardlog|kafka]
#                    [--clients lg,rdk] [--protocols LIST] [--out DIR] [--keep]
#
# --protocols (default PLAINTEXT,SSL) may add SASL_SSL: what authentication
# and authorization cost. Both brokers then also serve SASL_SSL with PLAIN
# (user `bench`, from the listener's JAAS config) and run Kafka's
# AclAuthorizer (authorizer.class.name=kafka.security.authorizer.AclAuthorizer,
# allow.everyone.if.no.acl.found=false); User:ANONYMOUS (the PLAINTEXT and
# SSL clients) is a super user, so those runs skip ACL evaluation, while
# `bench` is authorized by ACLs made with Kafka's kafka-acls
# (kafka.admin.AclCommand): ALL on topics prefixed `tls-`, READ on every
# group. The SASL_SSL ÷ SSL ratio is then the price of SASL plus ACLs.
#
# Rounds are interleaved as perf/compare.sh does: per round, for each
# broker, PLAINTEXT then SSL (SSL first on even rounds), each case run
# once; the summary takes the median over rounds.
#
# Cases (each a client run; the broker's CPU is read from /proc/PID/stat
# before and after, the client's from getrusage of its process):
#   produce   loadgen --flat-out for --duration s (2 s warm-up) into
#             topic tls-p; rdkafka_performance -P of as many records as
#             loadgen's rate times --duration (200k..3M) into tls-rdk.
#   consume   --consume-messages records (default 500000, ~0.5 GB) are
#             produced over PLAINTEXT into a fresh topic (not measured),
#             then read from the beginning over the protocol under test by
#             loadgen --consume-only (1 consumer) and by
#             rdkafka_performance -C: from memory on both brokers
#             (shardlog: its batch cache, shardlog.batch.cache.bytes
#             = $TLS_CACHE_BYTES, default 1.5 GiB; Kafka: the page cache).
#
# Figures: MB/s (10^6 bytes of record values per second, as each client
# reports it), broker CPU s/GB (user+system seconds of the broker process
# over the client's whole run ÷ 10^9 record bytes that run moved), and the
# cores busy (CPU seconds ÷ wall seconds of the client's run): a side at
# ≥ 0.90 is what bound the run.
# Output: a Markdown report on stdout and in OUT/report.md, raw rows in
# OUT/runs.tsv (default OUT: results/tls-cost-<UTC time>/).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$REPO/target/release/shardlog" ROUNDS=3 DUR=10 CONS_MSGS=500000 ONLY="shardlog,kafka"
CLIENTS="lg,rdk" OUT="" KEEP=0 PROTOCOLS="PLAINTEXT,SSL"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --duration) DUR="$2"; shift 2 ;;
    --consume-messages) CONS_MSGS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --protocols) PROTOCOLS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
    *) echo "tls_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "tls_cost.sh: $(date -u +%H:%M:%S) $*" >&2; }
die() { log "$*"; exit 1; }
[ -x "$BIN" ] || die "$BIN missing: cargo build --release (or --bin)"
IFS=, read -r -a PROTOS <<<"$PROTOCOLS"
SASL_SSL=0
for pr in "${PROTOS[@]}"; do
  case "$pr" in
    PLAINTEXT|SSL) ;;
    SASL_SSL) SASL_SSL=1 ;;
    *) die "--protocols: $pr is not PLAINTEXT, SSL or SASL_SSL" ;;
  esac
done
# SASL_SSL: both brokers' PLAIN user and Kafka's authorizer settings.
SASL_USER=bench SASL_PASSWORD=bench-secret
PLAIN_JAAS="org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER=\"$SASL_PASSWORD\";"
AUTHZ=(authorizer.class.name=kafka.security.authorizer.AclAuthorizer super.users=User:ANONYMOUS
  allow.everyone.if.no.acl.found=false)
[ -n "$OUT" ] || OUT="$REPO/results/tls-cost-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
RDK="" TMP_PROBE="$(mktemp)"
if [[ ",$CLIENTS," == *",rdk,"* ]]; then
  RDK="$REPO/perf/rdkafka_perf_ssl.sh"
  # Builds it once; a build without OpenSSL refuses security.protocol=ssl.
  "$RDK" -X security.protocol=ssl -h >"$TMP_PROBE" 2>&1 || true
  grep -q "not available at build time" "$TMP_PROBE" && die "$RDK has no SSL support"
fi
TMP="$(mktemp -d /tmp/tls-cost.XXXXXX)"
SL_PID=""
KAFKA_DIR="$TMP/kafka"
cleanup() {
  if [ -n "$SL_PID" ]; then kill -TERM "$SL_PID" 2>/dev/null || true; wait "$SL_PID" 2>/dev/null || true; fi
  if [[ ",$ONLY," == *",kafka,"* ]]; then bash "$REPO/perf/kafka_peer.sh" stop --dir "$KAFKA_DIR" >/dev/null 2>&1 || true; fi
  rm -f "$TMP_PROBE"
  if [ "$KEEP" = 1 ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
free_port() { python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py"; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
pyjson() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }
# timed FILE CMD...: runs CMD, writes "client_cpu_s wall_s" to FILE.
timed() {
  local f="$1"; shift
  python3 - "$f" "$@" <<'EOF'
import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[2:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.3f %.3f\n" % (u.ru_utime + u.ru_stime, time.monotonic() - t))
sys.exit(rc)
EOF
}

# ------------------------------------------------------------- brokers
declare -A ADDR CA PID
host_line() { echo "load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"; }
log "host: $(host_line); results in $OUT"
{
  echo "started_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)"
  echo "host=$(host_line) at start"
  printf '%s\n' "rounds=$ROUNDS" "duration=$DUR" "consume_messages=$CONS_MSGS" "clients=$CLIENTS" \
    "protocols=$PROTOCOLS"
} >"$OUT/run.env"
if [[ ",$ONLY," == *",shardlog,"* ]]; then
  bash "$REPO/perf/tls_certs.sh" "$TMP/tls"
  p="$(free_port)"; s="$(free_port)"; q=""
  sasl_args=()
  if [ "$SASL_SSL" = 1 ]; then
    q="$(free_port)"
    sasl_args=(--override listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN
      --override "listener.name.sasl_ssl.plain.sasl.jaas.config=$PLAIN_JAAS")
    for a in "${AUTHZ[@]}"; do sasl_args+=(--override "$a"); done
  fi
  "$BIN" broker --override "listeners=PLAINTEXT://127.0.0.1:$p,SSL://127.0.0.1:$s${q:+,SASL_SSL://127.0.0.1:$q}" \
    "${sasl_args[@]}" \
    --override ssl.keystore.type=PEM --override "ssl.keystore.location=$TMP/tls/broker-keystore.pem" \
    --override "log.dirs=$TMP/shardlog-data" --override shardlog.shards=1 --override shardlog.cpus=0 \
    --override auto.create.topics.enable=true --override num.partitions=6 \
    --override log.segment.bytes=134217728 --override log.retention.bytes=536870912 \
    --override log.retention.check.interval.ms=1000 \
    --override "shardlog.batch.cache.bytes=${TLS_CACHE_BYTES:-1610612736}" >"$TMP/shardlog.log" 2>&1 &
  SL_PID=$!
  for _ in $(seq 1 300); do
    grep -aq 'listening on' "$TMP/shardlog.log" && break
    kill -0 "$SL_PID" 2>/dev/null || { cat "$TMP/shardlog.log" >&2; SL_PID=""; die "shardlog did not start"; }
    sleep 0.1
  done
  ADDR[shardlog,PLAINTEXT]="127.0.0.1:$p" ADDR[shardlog,SSL]="127.0.0.1:$s" ADDR[shardlog,SASL_SSL]="127.0.0.1:$q"
  CA[shardlog]="$TMP/tls/ca.pem" PID[shardlog]="$SL_PID"
  log "shardlog pid $SL_PID: PLAINTEXT 127.0.0.1:$p, SSL 127.0.0.1:$s"
fi
if [[ ",$ONLY," == *",kafka,"* ]]; then
  peer_args=()
  if [ "$SASL_SSL" = 1 ]; then
    peer_args=(--sasl-ssl-plain "$SASL_USER:$SASL_PASSWORD")
    for a in "${AUTHZ[@]}"; do peer_args+=(--set "$a"); done
  fi
  line="$(bash "$REPO/perf/kafka_peer.sh" start --dir "$KAFKA_DIR" --cpus 0 --ssl "${peer_args[@]}")" \
    || die "Kafka did not start"
  ADDR[kafka,SASL_SSL]="$(sed -n 's/.*\bsasl_ssl_bootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
  ADDR[kafka,PLAINTEXT]="$(sed -n 's/.*\bbootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
  ADDR[kafka,SSL]="$(sed -n 's/.*\bssl_bootstrap=\([^ ]*\).*/\1/p' <<<"$line")"
  CA[kafka]="$(sed -n 's/.* ca=\([^ ]*\).*/\1/p' <<<"$line")"
  PID[kafka]="$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' <<<"$line")"
  log "Kafka: $line"
fi

# ------------------------------------------------------------- clients
# sec_lg BROKER PROTO / sec_rdk BROKER PROTO: the clients' security flags.
sec_lg() {
  case "$2" in
    SSL) echo "--security-protocol SSL --ssl-ca-location ${CA[$1]}" ;;
    SASL_SSL) echo "--security-protocol SASL_SSL --ssl-ca-location ${CA[$1]} --sasl-mechanism PLAIN" \
      "--sasl-username $SASL_USER --sasl-password $SASL_PASSWORD" ;;
  esac
}
sec_rdk() {
  case "$2" in
    SSL) echo "-X security.protocol=ssl -X ssl.ca.location=${CA[$1]}" ;;
    SASL_SSL) echo "-X security.protocol=sasl_ssl -X ssl.ca.location=${CA[$1]} -X sasl.mechanism=PLAIN" \
      "-X sasl.username=$SASL_USER -X sasl.password=$SASL_PASSWORD" ;;
  esac
}
# LG / RDKC: the client command lines for BROKER PROTO (timed runs them).
lg_cmd() {
  # shellcheck disable=SC2046,SC2207
  LG=("$BIN" loadgen --bootstrap "${ADDR[$1,$2]}" $(sec_lg "$1" "$2") --client-cpus 1 --message-size 1024 --partitions 6)
}
rdk_cmd() {
  # shellcheck disable=SC2046,SC2207
  RDKC=(timeout $((DUR * 6 + 60)) taskset -c 1 "$RDK" -b "${ADDR[$1,$2]}" $(sec_rdk "$1" "$2"))
}
lg() { lg_cmd "$1" "$2"; shift 2; "${LG[@]}" "$@"; }
echo -e "round\tbroker\tprotocol\tcase\tclient\tmb_per_sec\trecords\tbroker_cpu_s\tclient_cpu_s\twall_s" >"$OUT/runs.tsv"
# row ROUND BROKER PROTO CASE CLIENT MBPS RECORDS CPU0 TIMEFILE
row() {
  local cpu1; cpu1="$(cpu_s "${PID[$2]}")"
  local bcpu; bcpu="$(awk -v a="$8" -v b="$cpu1" 'BEGIN { printf "%.2f", b - a }')"
  read -r ccpu wall <"$9"
  echo -e "$1\t$2\t$3\t$4\t$5\t$6\t$7\t$bcpu\t$ccpu\t$wall" >>"$OUT/runs.tsv"
  log "  $2 $3 $4 $5: $6 MB/s, $7 records, broker $bcpu s, client $ccpu s, wall $wall s"
}
fail() { log "  $2 $3 $4 $5 FAILED: $(tail -3 "$6" | tr '\n' ' ')"; echo -e "$1\t$2\t$3\t$4\t$5\tFAILED\t\t\t\t" >>"$OUT/runs.tsv"; }
rdk_rate() { # LOG produced|consumed -> "records MB/s"
  python3 - "$1" "$2" <<'EOF' 2>/dev/null
import re, sys
t = open(sys.argv[1], errors="replace").read()
if sys.argv[2] == "produced":
    m = re.findall(r"(\d+) delivered \(offset -?\d+, (\d+) failed\) in \d+ms: \d+ msgs/s and ([\d.]+) MB/s", t)
    if m and int(m[-1][0]) > 0 and m[-1][1] == "0": print(m[-1][0], m[-1][2])
else:
    m = re.findall(r"(\d+) messages \(\d+ bytes\) consumed in \d+ms: \d+ msgs/s \(([\d.]+) MB/s\)", t)
    if m and int(m[-1][0]) > 0: print(m[-1][0], m[-1][1])
EOF
}
declare -A RDK_COUNT
one_protocol() { # ROUND BROKER PROTO
  local r="$1" b="$2" pr="$3" pre="$TMP/r$1-$2-$3" c0 s n mb
  if [[ ",$CLIENTS," == *",lg,"* ]]; then
    c0="$(cpu_s "${PID[$b]}")"
    lg_cmd "$b" "$pr"
    if timed "$pre-plg.t" "${LG[@]}" --out "$pre-plg" --topic tls-p --acks 1 --linger-ms 5 \
      --batch-size 1000000 --consumers 0 --flat-out --duration "${DUR}s" --warmup 2s >"$pre-plg.log" 2>&1; then
      mb="$(pyjson "$pre-plg/results.json" "'%.1f' % j['points'][0]['mb_per_sec']")"
      n="$(pyjson "$pre-plg/results.json" "j['points'][0]['produced']")"
      row "$r" "$b" "$pr" produce loadgen "$mb" "$n" "$c0" "$pre-plg.t"
      RDK_COUNT[$b]="$(pyjson "$pre-plg/results.json" "max(200000, min(3000000, int(j['points'][0]['msgs_per_sec'] * $DUR)))")"
    else fail "$r" "$b" "$pr" produce loadgen "$pre-plg.log"; fi
  fi
  if [ -n "$RDK" ]; then
    c0="$(cpu_s "${PID[$b]}")"
    rdk_cmd "$b" "$pr"
    if timed "$pre-prdk.t" "${RDKC[@]}" -P -t tls-rdk -s 1024 -c "${RDK_COUNT[$b]:-1000000}" -X acks=1 \
      -X linger.ms=5 -X batch.size=1000000 >"$pre-prdk.log" 2>&1 && s="$(rdk_rate "$pre-prdk.log" produced)" && [ -n "$s" ]; then
      read -r n mb <<<"$s"
      row "$r" "$b" "$pr" produce rdkafka_performance "$mb" "$n" "$c0" "$pre-prdk.t"
    else fail "$r" "$b" "$pr" produce rdkafka_performance "$pre-prdk.log"; fi
  fi
  # Consume from memory: a fresh topic, produced over PLAINTEXT right before.
  local topic="tls-c-$r-$pr"
  lg "$b" PLAINTEXT --out "$pre-fill" --topic "$topic" --acks 1 --linger-ms 5 --batch-size 1000000 \
    --consumers 0 --messages "$CONS_MSGS" --warmup 0s >"$pre-fill.log" 2>&1 \
    || { fail "$r" "$b" "$pr" consume fill "$pre-fill.log"; return 0; }
  if [[ ",$CLIENTS," == *",lg,"* ]]; then
    c0="$(cpu_s "${PID[$b]}")"
    lg_cmd "$b" "$pr"
    if timed "$pre-clg.t" "${LG[@]}" --out "$pre-clg" --topic "$topic" --consume-only --consumers 1 \
      >"$pre-clg.log" 2>&1; then
      mb="$(pyjson "$pre-clg/consume.json" "'%.1f' % j['mb_per_sec']")"
      n="$(pyjson "$pre-clg/consume.json" "j['records']")"
      row "$r" "$b" "$pr" consume loadgen "$mb" "$n" "$c0" "$pre-clg.t"
    else fail "$r" "$b" "$pr" consume loadgen "$pre-clg.log"; fi
  fi
  if [ -n "$RDK" ]; then
    local parts=() p
    for ((p = 0; p < 6; p++)); do parts+=(-p "$p"); done
    c0="$(cpu_s "${PID[$b]}")"
    rdk_cmd "$b" "$pr"
    if timed "$pre-crdk.t" "${RDKC[@]}" -C -t "$topic" "${parts[@]}" -o beginning -e >"$pre-crdk.log" 2>&1 \
      && s="$(rdk_rate "$pre-crdk.log" consumed)" && [ -n "$s" ]; then
      read -r n mb <<<"$s"
      row "$r" "$b" "$pr" consume rdkafka_performance "$mb" "$n" "$c0" "$pre-crdk.t"
    else fail "$r" "$b" "$pr" consume rdkafka_performance "$pre-crdk.log"; fi
  fi
}

brokers=()
[[ ",$ONLY," == *",shardlog,"* ]] && brokers+=(shardlog)
[[ ",$ONLY," == *",kafka,"* ]] && brokers+=(kafka)
# SASL_SSL: bench's ACLs on each broker, made over PLAINTEXT (ANONYMOUS is
# a super user) with Kafka's kafka-acls.
if [ "$SASL_SSL" = 1 ]; then
  JARS="$(bash "$REPO/tests/java/fetch_jars.sh" | tail -1)"
  for b in "${brokers[@]}"; do
    acl() {
      java -cp "$JARS/*" kafka.admin.AclCommand --bootstrap-server "${ADDR[$b,PLAINTEXT]}" --add --force \
        --allow-principal "User:$SASL_USER" "$@" >"$TMP/acls-$b.log" 2>&1 \
        || die "kafka-acls on $b: $(tail -3 "$TMP/acls-$b.log")"
    }
    acl --operation All --topic tls- --resource-pattern-type prefixed
    acl --operation Read --group '*'
  done
fi
# Pre-create rdkafka_performance's topic with 6 partitions.
for b in "${brokers[@]}"; do
  lg "$b" PLAINTEXT --topic tls-rdk --messages 10 --consumers 0 --acks 1 --out "$TMP/pre-$b" >"$TMP/pre-$b.log" 2>&1 \
    || die "pre-creating tls-rdk on $b: $(tail -3 "$TMP/pre-$b.log")"
done
for ((r = 1; r <= ROUNDS; r++)); do
  # The protocols in turn, starting one further each round.
  order=()
  for ((i = 0; i < ${#PROTOS[@]}; i++)); do order+=("${PROTOS[$(((i + r - 1) % ${#PROTOS[@]}))]}"); done
  for b in "${brokers[@]}"; do
    for pr in "${order[@]}"; do
      log "round $r: $b $pr"
      one_protocol "$r" "$b" "$pr"
    done
  done
done
echo "ended_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$OUT/run.env"
echo "host_at_end=$(host_line)" >>"$OUT/run.env"
python3 "$REPO/perf/tls_cost_report.py" "$OUT" | tee "$OUT/report.md"
