#!/usr/bin/env bash
# Reference figures of this host, the ceilings shardlog's own numbers are read
# against: loopback TCP (what a local produce/fetch benchmark can at most move),
# O_DIRECT sequential write (what segment appends can at most reach), and small
# write + fdatasync (the price of a durable, fsync-per-batch produce), and
# O_DIRECT sequential read (what a consumer of data no longer in memory can at
# most get), and the cold page-cache read (a file written with O_DIRECT read
# back buffered: the kernel copies out of page-cache pages it has just filled,
# the copy a consumer of sendfile'd pages makes).
# Each figure is printed as one line: "name value unit".
#
#   perf/reference.sh [--quick] [--only iperf3,seqwrite,fsync,seqread,pcread] [--dir DIR]
set -euo pipefail

usage() {
  cat <<'EOF'
usage: perf/reference.sh [options]
  --quick            short runs (iperf3 2 s, 256 MiB sequential write, 4 KiB fsync 2 s)
  --only LIST        comma list of: iperf3, seqwrite, fsync, seqread, pcread (default: all)
  --dir DIR          run fio in a temp dir under DIR: use the broker's log dir so the
                     figures are for its filesystem (default: .)
  --size SIZE        sequential write and read size, and pcread's (default 1g; --quick 256m)
  --seconds N        iperf3 and fsync run time (default 10; --quick 2)
  --ioengine E       fio engine for the sequential write: io_uring (default) or libaio
  --iodepth N        sequential write queue depth (default 4)
  --fsync-sizes LIST block sizes for the fdatasync test (default 4k,16k; --quick 4k)
EOF
}

QUICK=0 ONLY="iperf3,seqwrite,fsync,seqread,pcread" DIR="." SIZE="" SECS="" ENGINE=io_uring IODEPTH=4 FSIZES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --only) ONLY="$2"; shift 2 ;;
    --dir) DIR="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    --seconds) SECS="$2"; shift 2 ;;
    --ioengine) ENGINE="$2"; shift 2 ;;
    --iodepth) IODEPTH="$2"; shift 2 ;;
    --fsync-sizes) FSIZES="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "reference.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then : "${SIZE:=256m}" "${SECS:=2}" "${FSIZES:=4k}"; else : "${SIZE:=1g}" "${SECS:=10}" "${FSIZES:=4k,16k}"; fi
log() { echo "reference.sh: $*" >&2; }
die() { log "$*"; exit 1; }
want() { [[ ",$ONLY," == *",$1,"* ]]; }

# Install a missing tool once; a no-op when it is already there.
ensure() {
  command -v "$1" >/dev/null && return 0
  log "$1 missing: apt-get install -y $1"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >&2 || die "could not install $1; run 'apt-get install -y $1' as root"
}
command -v python3 >/dev/null || die "python3 is needed to read iperf3/fio JSON"
jget() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

TMP="$(mktemp -d -t shardlog-ref.XXXXXX)"
WORK=""
SERVER_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  [ -n "$WORK" ] && rm -rf "$WORK"
  rm -rf "$TMP"
}
trap cleanup EXIT

port_listening() {
  awk -v p=":$(printf '%04X' "$1")" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

run_iperf3() {
  ensure iperf3
  # Up to three tries: a client that reached another iperf3 server (tests
  # run side by side; the free-port check can race) exits 0 with an
  # "error" in its JSON and no figure.
  local port attempt gbit=""
  for attempt in 1 2 3; do
    for _ in $(seq 1 50); do port=$((20000 + RANDOM % 40000)); port_listening "$port" || break; done
    # -1: serve one client, then exit.
    iperf3 -s -1 -B 127.0.0.1 -p "$port" >"$TMP/iperf3-server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do port_listening "$port" && break; sleep 0.05; done
    iperf3 -c 127.0.0.1 -p "$port" -t "$SECS" -J >"$TMP/iperf3.json" 2>"$TMP/iperf3.err" || true
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    gbit="$(jget "$TMP/iperf3.json" '"%.1f" % (j["end"]["sum_received"]["bits_per_second"] / 1e9)' 2>/dev/null)" || gbit=""
    [ -n "$gbit" ] && break
    log "iperf3 try $attempt gave no figure: $(head -c 300 "$TMP/iperf3.err" "$TMP/iperf3.json" | tr '\n' ' ')"
  done
  [ -n "$gbit" ] || die "iperf3 gave no figure in 3 tries"
  echo "iperf3_loopback_1stream $gbit Gbit/s"
}

fio_dir() {
  if [ -z "$WORK" ]; then
    mkdir -p "$DIR"
    WORK="$(mktemp -d "$(cd "$DIR" && pwd)/shardlog-ref.XXXXXX")"
  fi
}

# fio_seq NAME RW IODEPTH [fio options]: one O_DIRECT 1 MiB sequential job
# over $SIZE in $WORK with $ENGINE (libaio if io_uring fails); sets FIO_MB
# (MB/s of RW) and FIO_ENG (the engine that ran).
fio_seq() {
  local name="$1" rw="$2" depth="$3"; shift 3
  local args=(--name="$name" --directory="$WORK" --rw="$rw" --bs=1M --size="$SIZE" --direct=1
    --iodepth="$depth" --output-format=json "$@")
  FIO_ENG="$ENGINE"
  if ! fio "${args[@]}" --ioengine="$FIO_ENG" >"$TMP/$name.json" 2>"$TMP/$name.err"; then
    [ "$FIO_ENG" = io_uring ] || { rm -f "$WORK/$name".*; cat "$TMP/$name.err" >&2; die "fio $name failed"; }
    log "io_uring engine failed ($(head -c 200 "$TMP/$name.err")); retrying with libaio"
    FIO_ENG=libaio
    fio "${args[@]}" --ioengine="$FIO_ENG" >"$TMP/$name.json" 2>"$TMP/$name.err" \
      || { rm -f "$WORK/$name".*; cat "$TMP/$name.err" >&2; die "fio $name failed"; }
  fi
  rm -f "$WORK/$name".*
  FIO_MB="$(jget "$TMP/$name.json" "'%.0f' % (j['jobs'][0]['$rw']['bw_bytes'] / 1e6)")"
}

run_seqwrite() {
  ensure fio; fio_dir
  # end_fsync: the figure includes getting the data to stable storage.
  fio_seq seqwrite write "$IODEPTH" --end_fsync=1
  echo "fio_seqwrite_1MiB_direct_${FIO_ENG} $FIO_MB MB/s"
}

run_seqread() {
  ensure fio; fio_dir
  # fio lays the file out first (not timed), then reads it with O_DIRECT,
  # so the page cache does not serve it; iodepth 8 as the broker's
  # read-ahead keeps several reads in flight.
  fio_seq seqread read 8
  echo "fio_seqread_1MiB_direct_${FIO_ENG} $FIO_MB MB/s"
}

# The cold page-cache read: SIZE written with O_DIRECT (none of it in the page
# cache), then read back buffered by dd with 1 MiB reads. Its system seconds
# per GB are the kernel's cost of reading the disk into fresh page-cache
# pages and copying them out; on a VM whose balloon reports free pages to
# the host (virtio-balloon free page reporting), every fresh page costs a
# host fault on its first touch, which an O_DIRECT read into a reused buffer
# does not pay.
run_pcread() {
  fio_dir
  command -v dd >/dev/null || die "dd missing (coreutils)"
  local f="$WORK/pcread"
  python3 - "$f" "$SIZE" <<'PY' || die "could not write $f with O_DIRECT"
import mmap, os, sys
units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
s = sys.argv[2].lower()
size = int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
buf = mmap.mmap(-1, 4 << 20)  # page-aligned, as O_DIRECT needs
buf.write(os.urandom(4 << 20))
for _ in range(max(1, size // (4 << 20))):
    os.write(fd, buf)
os.close(fd)
PY
  local bytes; bytes="$(stat -c %s "$f")"
  /usr/bin/time -f '%e %S' -o "$TMP/pcread.time" dd if="$f" of=/dev/null bs=1M 2>/dev/null \
    || { rm -f "$f"; die "dd read of $f failed"; }
  rm -f "$f"
  local e sys; read -r e sys <"$TMP/pcread.time"
  awk -v b="$bytes" -v e="$e" -v s="$sys" 'BEGIN {
    if (e <= 0) e = 0.001
    printf "pagecache_cold_read_1MiB %.0f MB/s\n", b / e / 1e6
    printf "pagecache_cold_read_system %.2f s/GB\n", s / (b / 1e9) }'
}

run_fsync() {
  ensure fio; fio_dir
  local bs
  for bs in ${FSIZES//,/ }; do
    # Appends of bs bytes, each followed by fdatasync (--fdatasync=1): the
    # cost of acknowledging a produce only once it is on stable storage.
    fio --name="fsync$bs" --directory="$WORK" --rw=write --bs="$bs" --size=1g --ioengine=psync \
      --fdatasync=1 --time_based --runtime="$SECS" --output-format=json >"$TMP/fsync.json" 2>"$TMP/fsync.err" \
      || { cat "$TMP/fsync.err" >&2; die "fio fdatasync test failed"; }
    rm -f "$WORK"/fsync*
    local up; up="$(tr '[:lower:]' '[:upper:]' <<<"$bs")"
    echo "fio_write_${up}iB_fdatasync $(jget "$TMP/fsync.json" '"%.0f" % j["jobs"][0]["write"]["iops"]') writes/s"
    echo "fio_write_${up}iB_fdatasync_p99 $(jget "$TMP/fsync.json" '"%.0f" % (j["jobs"][0]["sync"]["lat_ns"]["percentile"]["99.000000"] / 1e3)') us"
  done
}

log "host $(uname -n), $(nproc) cpus, kernel $(uname -r); fio dir: $DIR"
want iperf3 && run_iperf3
want seqwrite && run_seqwrite
want fsync && run_fsync
want seqread && run_seqread
want pcread && run_pcread
exit 0
