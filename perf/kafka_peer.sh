#!/usr/bin/env bash
# Apache Kafka 3.9 as the reference peer (issue 23): a ZooKeeper-mode Kafka
# broker from the jars tests/java/fetch_jars.sh caches (main class
# kafka.Kafka, Kafka's own JVM settings from bin/kafka-server-start.sh and
# kafka-run-class.sh: -Xmx1g -Xms1g, G1), with Debian's ZooKeeper 3.8
# (package zookeeper) on a free loopback port, both in DIR (put it on the
# disk shardlog's log dir is on).
#
#   perf/kafka_peer.sh start [--dir DIR] [--cpus LIST] [--partitions N] [--set K=V ...]
#                            [--kafka-sizes] [--ssl] [--sasl] [--sasl-ssl-plain USER:PASSWORD]
#       prints "bootstrap=127.0.0.1:PORT pid=PID dir=DIR" (PID = the Kafka JVM);
#       with --ssl also " ssl_bootstrap=127.0.0.1:PORT2 ca=DIR/tls/ca.pem"
#   perf/kafka_peer.sh stop  [--dir DIR]     SIGTERM both (SIGKILL after 30 s)
#   perf/kafka_peer.sh status [--dir DIR]    the start line again, or exit 1
#
# Broker settings: Kafka's defaults except what a single broker needs
# (replication factors 1 for the internal topics, no initial rebalance
# delay), num.partitions (default 6), and the segment/retention sizes
# perf/results.sh gives shardlog (log.segment.bytes=134217728,
# log.retention.bytes=536870912, log.segment.delete.delay.ms=1000), so both
# keep the same data on disk;
# --kafka-sizes keeps Kafka's own (the differential tests compare defaults).
# --ssl adds a second listener, SSL://127.0.0.1:PORT2, beside the PLAINTEXT
# one (same JVM, so a TLS cost run compares the two on one broker): a PKCS12
# keystore (ssl.keystore.type=PKCS12) with a certificate for 127.0.0.1 from a
# throwaway CA (perf/tls_certs.sh, openssl + keytool, in DIR/tls/); clients
# trust DIR/tls/ca.pem. Kafka's other ssl.* defaults (TLSv1.2,TLSv1.3, JVM
# cipher suites, ssl.client.auth=none); inter-broker stays PLAINTEXT.
# --sasl adds SASL_PLAINTEXT://127.0.0.1:PORT3 with SCRAM-SHA-512 (the
# start line then names sasl_bootstrap=; users are made with kafka-configs).
# --sasl-ssl-plain USER:PASSWORD (with --ssl) adds SASL_SSL://127.0.0.1:PORT4
# with PLAIN and that one user in the listener's JAAS config (PlainLoginModule
# user_USER="PASSWORD"); the start line then names sasl_ssl_bootstrap=.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CMD="${1:-}"; [ $# -gt 0 ] && shift
DIR="${TMPDIR:-/tmp}/shardlog-kafka-peer" CPUS="" PARTITIONS=6 SETS=() PERF_SIZES=1 SSL=0 SASL=0 SASL_SSL_PLAIN=
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR="$2"; shift 2 ;;
    --cpus) CPUS="$2"; shift 2 ;;
    --partitions) PARTITIONS="$2"; shift 2 ;;
    --set) SETS+=("$2"); shift 2 ;;
    --kafka-sizes) PERF_SIZES=0; shift ;;
    --ssl) SSL=1; shift ;;
    --sasl) SASL=1; shift ;;
    --sasl-ssl-plain) SASL_SSL_PLAIN="$2"; shift 2 ;;
    *) echo "kafka_peer.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
log() { echo "kafka_peer.sh: $*" >&2; }
free_port() { python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/free_port.py"; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pin() { if [ -n "$CPUS" ]; then echo taskset -c "$CPUS"; fi; }

status() {
  [ -f "$DIR/peer.env" ] || return 1
  # shellcheck disable=SC1091
  . "$DIR/peer.env"
  alive "$KAFKA_PID" || return 1
  local ssl="" sasl="" sasl_ssl=""
  [ -n "${SSL_PORT:-}" ] && ssl=" ssl_bootstrap=127.0.0.1:$SSL_PORT ca=$DIR/tls/ca.pem"
  [ -n "${SASL_PORT:-}" ] && sasl=" sasl_bootstrap=127.0.0.1:$SASL_PORT"
  [ -n "${SASL_SSL_PORT:-}" ] && sasl_ssl=" sasl_ssl_bootstrap=127.0.0.1:$SASL_SSL_PORT"
  echo "bootstrap=127.0.0.1:$KAFKA_PORT pid=$KAFKA_PID dir=$DIR$ssl$sasl$sasl_ssl"
}

stop() {
  [ -f "$DIR/peer.env" ] || { log "nothing running in $DIR"; return 0; }
  # shellcheck disable=SC1091
  . "$DIR/peer.env"
  local pid
  for pid in "$KAFKA_PID" "$ZK_PID"; do
    alive "$pid" || continue
    kill -TERM "$pid"
    for _ in $(seq 1 300); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && { log "pid $pid ignored SIGTERM for 30 s: SIGKILL"; kill -KILL "$pid"; }
  done
  rm -f "$DIR/peer.env"
}

start() {
  if status >/dev/null 2>&1; then status; return 0; fi
  command -v java >/dev/null || { log "java missing: apt-get install -y --no-install-recommends openjdk-17-jdk-headless"; exit 2; }
  if [ ! -f /usr/share/java/zookeeper.jar ]; then
    log "ZooKeeper missing: apt-get install -y --no-install-recommends zookeeper"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends zookeeper >&2 \
      || { log "could not install zookeeper; run 'apt-get install -y zookeeper' as root"; exit 2; }
  fi
  local jars; jars="$(bash "$REPO/tests/java/fetch_jars.sh" | tail -1)"
  rm -rf "$DIR"; mkdir -p "$DIR/zk" "$DIR/kafka-logs"
  local zk_port kafka_port ssl_port="" sasl_port="" sasl_ssl_port=""
  zk_port="$(free_port)"; kafka_port="$(free_port)"
  [ "$SASL" = 1 ] && sasl_port="$(free_port)"
  if [ -n "$SASL_SSL_PLAIN" ]; then
    [ "$SSL" = 1 ] || { log "--sasl-ssl-plain needs --ssl (the keystore)"; exit 2; }
    [[ "$SASL_SSL_PLAIN" == *:* ]] || { log "--sasl-ssl-plain takes USER:PASSWORD"; exit 2; }
    sasl_ssl_port="$(free_port)"
  fi
  if [ "$SSL" = 1 ]; then
    ssl_port="$(free_port)"
    TLS_STORE_PASSWORD=kafka-peer bash "$REPO/perf/tls_certs.sh" "$DIR/tls" \
      || { log "could not make the TLS keys (perf/tls_certs.sh)"; exit 2; }
  fi

  # ZooKeeper as CLUSTER.md §4 starts it: standalone, no admin server.
  printf '%s\n' "tickTime=2000" "dataDir=$DIR/zk" "clientPort=$zk_port" "clientPortAddress=127.0.0.1" \
    "admin.enableServer=false" "maxClientCnxns=0" >"$DIR/zoo.cfg"
  local sj=/usr/share/java
  java -Xmx256m -XX:+UseSerialGC -cp "$sj/zookeeper.jar:$sj/zookeeper-jute.jar:$sj/slf4j-api.jar:$sj/slf4j-simple.jar" \
    org.apache.zookeeper.server.ZooKeeperServerMain "$DIR/zoo.cfg" >"$DIR/zookeeper.log" 2>&1 &
  local zk_pid=$!
  echo "ZK_PID=$zk_pid KAFKA_PID= KAFKA_PORT=$kafka_port ZK_PORT=$zk_port SSL_PORT=$ssl_port SASL_PORT=$sasl_port SASL_SSL_PORT=$sasl_ssl_port" >"$DIR/peer.env"
  local ok=""
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$zk_port" && printf srvr >&3 && timeout 1 cat <&3) 2>/dev/null | grep -q '^Mode:'; then ok=1; break; fi
    alive "$zk_pid" || break
    sleep 0.1
  done
  [ -n "$ok" ] || { log "ZooKeeper did not start: $(tail -3 "$DIR/zookeeper.log")"; stop; exit 1; }

  {
    echo "broker.id=0"
    local listeners="PLAINTEXT://127.0.0.1:$kafka_port"
    if [ "$SSL" = 1 ]; then
      listeners+=",SSL://127.0.0.1:$ssl_port"
      echo "ssl.keystore.type=PKCS12"
      echo "ssl.keystore.location=$DIR/tls/broker.p12"
      echo "ssl.keystore.password=kafka-peer"
      echo "ssl.key.password=kafka-peer"
    fi
    if [ "$SASL" = 1 ]; then
      # SCRAM-SHA-512 on SASL_PLAINTEXT; the users are made with
      # kafka-configs (perf/sasl_logins.sh).
      listeners+=",SASL_PLAINTEXT://127.0.0.1:$sasl_port"
      echo "listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512"
      echo "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    fi
    if [ -n "$SASL_SSL_PLAIN" ]; then
      listeners+=",SASL_SSL://127.0.0.1:$sasl_ssl_port"
      echo "listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN"
      echo "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${SASL_SSL_PLAIN%%:*}=\"${SASL_SSL_PLAIN#*:}\";"
    fi
    echo "listeners=$listeners"
    echo "log.dirs=$DIR/kafka-logs"
    echo "zookeeper.connect=127.0.0.1:$zk_port"
    echo "num.partitions=$PARTITIONS"
    echo "offsets.topic.replication.factor=1"
    echo "transaction.state.log.replication.factor=1"
    echo "transaction.state.log.min.isr=1"
    echo "group.initial.rebalance.delay.ms=0"
    if [ "$PERF_SIZES" = 1 ]; then
      echo "log.segment.bytes=134217728"
      echo "log.retention.bytes=536870912"
      echo "log.retention.check.interval.ms=1000"
      echo "log.segment.delete.delay.ms=1000"
    fi
    local s; for s in "${SETS[@]}"; do echo "$s"; done
  } >"$DIR/server.properties"
  cat >"$DIR/log4j.properties" <<EOL
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$DIR/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
EOL
  # bin/kafka-server-start.sh + kafka-run-class.sh defaults (Kafka 3.9).
  $(pin) java -Xmx1G -Xms1G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$DIR/log4j.properties" -Dkafka.logs.dir="$DIR" \
    -cp "$jars/*" kafka.Kafka "$DIR/server.properties" >"$DIR/kafka.out" 2>&1 &
  local kafka_pid=$!
  echo "ZK_PID=$zk_pid KAFKA_PID=$kafka_pid KAFKA_PORT=$kafka_port ZK_PORT=$zk_port SSL_PORT=$ssl_port SASL_PORT=$sasl_port SASL_SSL_PORT=$sasl_ssl_port" >"$DIR/peer.env"
  for _ in $(seq 1 600); do
    grep -q 'started (kafka.server.KafkaServer)' "$DIR/server.log" 2>/dev/null && { status; return 0; }
    alive "$kafka_pid" || break
    sleep 0.1
  done
  log "Kafka did not start: $(tail -5 "$DIR/kafka.out" "$DIR/server.log" 2>/dev/null)"
  stop
  exit 1
}

case "$CMD" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: perf/kafka_peer.sh start|stop|status [--dir DIR] [--cpus LIST] [--partitions N] [--set K=V] [--kafka-sizes] [--ssl] [--sasl]" >&2; exit 2 ;;
esac
