#!/usr/bin/env bash
# shardlog host tuning check.
#
# Reads the host settings that matter for a thread-per-core, io_uring,
# O_DIRECT-writing, sendfile-reading Kafka-style broker and prints one row per
# setting: name | current | recommended | OK/CHANGE/UNKNOWN | reason.
# Read-only unless --apply is given; --apply asks before every single change
# and records the exact undo command of each change it made.
# Why each recommendation: tuning/README.md.
#
# Needs only bash, coreutils, procps (sysctl), util-linux (findmnt, prlimit).
set -uo pipefail

usage() {
  cat <<'EOF'
usage: tuning/check.sh [--shard-cpus LIST] [--log-dir DIR] [--json]
                       [--apply [--yes] [--undo-file FILE] [--pid PID]]
  --shard-cpus LIST  cpus the broker's data shards are pinned to (default: all online)
  --log-dir DIR      the broker's log.dirs entry; its block device is checked (default: .)
  --json             machine-readable output (one object, "settings" array)
  --apply            for each CHANGE row, ask y/N (stdin) and apply it; prints and
                     saves the undo command of every change made
  --yes              with --apply only: answer yes to every prompt
  --undo-file FILE   where --apply writes undo commands
                     (default: ./shardlog-tuning-undo-<timestamp>.sh)
  --pid PID          process whose rlimits --apply raises (default: the calling shell)
EOF
}

# Test hook: prefix for /proc/sys, /sys, /proc/irq and /proc/interrupts, so the
# apply path can be exercised on a fake tree. Empty on real hosts.
R="${SHARDLOG_TUNING_SYSROOT:-}"

SHARD_CPUS="" LOG_DIR="." JSON=0 APPLY=0 YES=0 UNDO_FILE="" LIMITS_PID="$PPID"
while [ $# -gt 0 ]; do
  case "$1" in
    --shard-cpus) SHARD_CPUS="${2:?--shard-cpus needs a cpu list}"; shift 2 ;;
    --log-dir) LOG_DIR="${2:?--log-dir needs a directory}"; shift 2 ;;
    --json) JSON=1; shift ;;
    --apply) APPLY=1; shift ;;
    --yes) YES=1; shift ;;
    --undo-file) UNDO_FILE="${2:?--undo-file needs a path}"; shift 2 ;;
    --pid) LIMITS_PID="${2:?--pid needs a pid}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "check.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
if [ "$YES" = 1 ] && [ "$APPLY" = 0 ]; then
  echo "check.sh: --yes only makes sense with --apply" >&2; exit 2
fi

# ---------------------------------------------------------------- helpers

NAMES=() CURS=() RECS=() STATS=() REASONS=() APPLYS=() UNDOS=()

# add NAME CURRENT RECOMMENDED STATUS REASON [APPLY_CMD UNDO_CMD]
# An empty APPLY_CMD on a CHANGE row means "manual": --apply explains, never acts.
add() {
  NAMES+=("$1"); CURS+=("${2:-?}"); RECS+=("$3"); STATS+=("$4"); REASONS+=("$5")
  APPLYS+=("${6:-}"); UNDOS+=("${7:-}")
}

rd() { local f="$1"; [ -r "$f" ] && tr -s '\t\n' '  ' <"$f" 2>/dev/null | sed 's/ *$//'; }

# Value in brackets of a sysfs choice file: "always [madvise] never" -> madvise.
bracketed() { sed -n 's/.*\[\([^]]*\)\].*/\1/p' <<<"$1"; }

# Expand "0-2,5" -> "0 1 2 5".
expand_cpus() {
  local part a b i
  local -a cpus=() parts=()
  IFS=',' read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    [ -z "$part" ] && continue
    if [[ "$part" == *-* ]]; then
      a="${part%-*}"; b="${part#*-}"
      for ((i = a; i <= b; i++)); do cpus+=("$i"); done
    else
      cpus+=("$part")
    fi
  done
  echo "${cpus[*]:-}"
}

# "0 1 2 5" -> "0-2,5".
compress_cpus() {
  local out="" start="" prev="" c
  for c in $(tr ' ' '\n' <<<"$1" | sort -n | uniq); do
    if [ -z "$start" ]; then start=$c; prev=$c; continue; fi
    if [ "$c" -eq $((prev + 1)) ]; then prev=$c; continue; fi
    out+="${out:+,}$start"; [ "$prev" != "$start" ] && out+="-$prev"
    start=$c; prev=$c
  done
  [ -n "$start" ] && { out+="${out:+,}$start"; [ "$prev" != "$start" ] && out+="-$prev"; }
  echo "$out"
}

in_list() { local x; for x in $2; do [ "$x" = "$1" ] && return 0; done; return 1; }

sysctl_path() { echo "$R/proc/sys/${1//.//}"; }

# Command that sets sysctl KEY to VALUE: sysctl -w on a real host, a plain
# write into the fake tree under the test hook.
sysctl_set_cmd() {
  if [ -z "$R" ]; then echo "sysctl -w $1='$2'"; else echo "echo '$2' > '$(sysctl_path "$1")'"; fi
}

# sysctl_range KEY LO HI APPLY_VALUE RECOMMENDED_TEXT REASON
# OK when LO <= value <= HI (empty bound = unbounded).
sysctl_range() {
  local key="$1" lo="$2" hi="$3" want="$4" rec="$5" why="$6" cur
  cur="$(rd "$(sysctl_path "$key")")"
  if [ -z "$cur" ]; then add "$key" "absent" "$rec" UNKNOWN "not readable on this kernel; $why"; return; fi
  if { [ -z "$lo" ] || [ "$cur" -ge "$lo" ]; } && { [ -z "$hi" ] || [ "$cur" -le "$hi" ]; }; then
    add "$key" "$cur" "$rec" OK "$why"
  else
    add "$key" "$cur" "$rec" CHANGE "$why" "$(sysctl_set_cmd "$key" "$want")" "$(sysctl_set_cmd "$key" "$cur")"
  fi
}

# TCP buffer triplets "min default max": only max matters for us.
sysctl_triplet_max() {
  local key="$1" min_max="$2" why="$3" cur a b c
  cur="$(rd "$(sysctl_path "$key")")"
  if [ -z "$cur" ]; then add "$key" "absent" "max >= $min_max" UNKNOWN "$why"; return; fi
  read -r a b c <<<"$cur"
  if [ "${c:-0}" -ge "$min_max" ]; then
    add "$key" "$cur" "$a $b >=$min_max" OK "$why"
  else
    add "$key" "$cur" "$a $b $min_max" CHANGE "$why" \
      "$(sysctl_set_cmd "$key" "$a $b $min_max")" "$(sysctl_set_cmd "$key" "$cur")"
  fi
}

# sysfs write command pair for FILE: apply NEW, undo OLD.
sysfs_cmd() { echo "echo '$2' > '$1'"; }

# ---------------------------------------------------------------- inputs

ONLINE="$(expand_cpus "$(rd "$R/sys/devices/system/cpu/online")")"
[ -z "$ONLINE" ] && ONLINE="$(seq -s ' ' 0 $(($(nproc) - 1)))"
if [ -z "$SHARD_CPUS" ]; then SHARD="$ONLINE"; else SHARD="$(expand_cpus "$SHARD_CPUS")"; fi
SPARE=""
for c in $ONLINE; do in_list "$c" "$SHARD" || SPARE+="$c "; done
SPARE="${SPARE% }"

# ---------------------------------------------------------------- CPU

check_governor() {
  local f cur="" apply="" undo="" bad=0 g cpu
  for f in "$R"/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
    [ -r "$f" ] || continue
    g="$(rd "$f")"; cpu="${f#"$R"/sys/devices/system/cpu/}"; cpu="${cpu%%/*}"
    cur+="${cur:+,}$cpu=$g"
    if [ "$g" != performance ]; then
      bad=1; apply+="${apply:+; }$(sysfs_cmd "$f" performance)"; undo+="${undo:+; }$(sysfs_cmd "$f" "$g")"
    fi
  done
  local why="shards busy-poll their rings; a ramping governor adds latency and under-clocks short bursts (rpk cpu tuner)"
  if [ -z "$cur" ]; then
    add cpu.governor "no cpufreq" performance UNKNOWN "no cpufreq driver (VM?): the hypervisor owns frequency scaling"
  elif [ "$bad" = 0 ]; then
    add cpu.governor "$cur" performance OK "$why"
  else
    add cpu.governor "$cur" performance CHANGE "$why" "$apply" "$undo"
  fi
}

check_smt() {
  local ctl act c sib s shared=""
  ctl="$(rd "$R/sys/devices/system/cpu/smt/control")"; act="$(rd "$R/sys/devices/system/cpu/smt/active")"
  local rec="off, or shards on distinct cores"
  if [ -z "$ctl" ]; then add cpu.smt "unknown" "$rec" UNKNOWN "no /sys/devices/system/cpu/smt (old kernel)"; return; fi
  for c in $SHARD; do
    sib="$(expand_cpus "$(rd "$R/sys/devices/system/cpu/cpu$c/topology/thread_siblings_list")")"
    for s in $sib; do
      [ "$s" != "$c" ] && in_list "$s" "$SHARD" && shared+="$c+$s "
    done
  done
  if [ -n "$shared" ]; then
    add cpu.smt "control=$ctl active=$act" "$rec" CHANGE \
      "shard cpus share a physical core (${shared% }): two shards then split one core's pipeline; pick one cpu per core with --shard-cpus or 'echo off > /sys/devices/system/cpu/smt/control'"
  else
    add cpu.smt "control=$ctl active=$act" "$rec" OK "no two shard cpus are SMT siblings (one shard per physical core)"
  fi
}

# Idle states: how long a shard's cpu takes to wake when a request arrives.
# In a KVM guest with the haltpoll cpuidle driver the knob is
# guest_halt_poll_ns (Documentation/virt/guest-halt-polling.rst; the
# kernel's default is 200000): at 0 an idle vCPU halts at once, and every
# wake-up is a round trip through the hypervisor. On bare metal the knob is
# the per-cpu C-state `disable` files (the rpk cpu tuner disables C-states).
HALTPOLL_NS_WANT=200000
CSTATE_MAX_LATENCY_US=10
check_cpu_idle() {
  local drv p cur st cpu lat dis name apply="" undo="" deep=""
  drv="$(rd "$R/sys/devices/system/cpu/cpuidle/current_driver")"
  if [ -z "$drv" ]; then
    add cpu.idle "no cpuidle" "shallow idle states on shard cpus" UNKNOWN "no cpuidle driver: the kernel idles with its default loop"; return
  fi
  if [ "$drv" = haltpoll ]; then
    p="$R/sys/module/haltpoll/parameters/guest_halt_poll_ns"
    cur="$(rd "$p")"
    local why="VM guest: an idle vCPU polls this long before it halts; at 0 each request that wakes a shard waits for the hypervisor to run the vCPU again (perf/RESULTS.md: loopback echo p50 54 -> 12 us on a 2-vCPU guest)"
    if [ -z "$cur" ]; then
      add cpu.idle "driver=haltpoll" "guest_halt_poll_ns=$HALTPOLL_NS_WANT" UNKNOWN "$why"
    elif [ "$cur" -ge "$HALTPOLL_NS_WANT" ]; then
      add cpu.idle "driver=haltpoll guest_halt_poll_ns=$cur" "guest_halt_poll_ns>=$HALTPOLL_NS_WANT" OK "$why"
    else
      add cpu.idle "driver=haltpoll guest_halt_poll_ns=$cur" "guest_halt_poll_ns=$HALTPOLL_NS_WANT" CHANGE "$why" \
        "$(sysfs_cmd "$p" "$HALTPOLL_NS_WANT")" "$(sysfs_cmd "$p" "$cur")"
    fi
    return
  fi
  for cpu in $SHARD; do
    for st in "$R"/sys/devices/system/cpu/cpu"$cpu"/cpuidle/state[0-9]*; do
      [ -d "$st" ] || continue
      lat="$(rd "$st/latency")"; dis="$(rd "$st/disable")"; name="$(rd "$st/name")"
      if [ -n "$lat" ] && [ "$lat" -gt "$CSTATE_MAX_LATENCY_US" ] && [ "$dis" = 0 ]; then
        deep+="${deep:+,}cpu$cpu:$name(${lat}us)"
        apply+="${apply:+; }$(sysfs_cmd "$st/disable" 1)"; undo+="${undo:+; }$(sysfs_cmd "$st/disable" 0)"
      fi
    done
  done
  local rec="no idle state with exit latency > ${CSTATE_MAX_LATENCY_US}us on shard cpus"
  local why2="a shard that sleeps in a deep C-state pays its exit latency on the next request (rpk cpu tuner disables C-states)"
  if [ -z "$deep" ]; then
    add cpu.idle "driver=$drv" "$rec" OK "$why2"
  else
    add cpu.idle "driver=$drv enabled: $deep" "$rec" CHANGE "$why2" "$apply" "$undo"
  fi
}

# ---------------------------------------------------------------- IRQs

# IRQ numbers whose /proc/interrupts name starts with PREFIX (config IRQs and
# nvme admin queue q0 excluded: they carry no data).
irqs_named() {
  awk -v p="$1" 'NR > 1 && $1 ~ /^[0-9]+:$/ && $NF ~ "^" p && $NF !~ /config$/ && $NF !~ /q0$/ { sub(":", "", $1); print $1 }' \
    "$R/proc/interrupts" 2>/dev/null
}

# Data-queue IRQs of the device behind a /sys/class/{net,block}/X/device link.
device_irqs() {
  local dev="$1" base
  [ -e "$dev" ] || return 0
  base="$(basename "$(readlink -f "$dev")")"
  case "$base" in
    virtio*) irqs_named "$base-" ;;
    nvme*) irqs_named "${base}q" ;;
    *) [ -d "$dev/msi_irqs" ] && ls "$dev/msi_irqs" ;;
  esac
}

# check_irqs NAME IRQ_LIST WHAT
check_irqs() {
  local name="$1" irqs="$2" what="$3" i eff cur="" apply="" undo="" ok=1 k=0 target old
  local -a shard_arr=()
  read -ra shard_arr <<<"$SHARD"
  if [ -z "$irqs" ]; then
    add "$name" "no $what queue IRQs" "n/a" UNKNOWN "no $what queue interrupts found (loopback-only or unsupported device)"; return
  fi
  local rec why
  if [ -n "$SPARE" ]; then
    rec="cpus $(compress_cpus "$SPARE") (non-shard)"
    why="spare cores exist: keep $what softirq work off the shard cores (Seastar/rpk sq_split idea)"
  else
    rec="spread over shard cpus $(compress_cpus "$SHARD")"
    why="no spare core: spread $what queues one per shard core (rpk mq mode); stop irqbalance if it fights this"
  fi
  declare -A per_cpu=()
  for i in $irqs; do
    eff="$(rd "$R/proc/irq/$i/effective_affinity_list")"; [ -z "$eff" ] && eff="$(rd "$R/proc/irq/$i/smp_affinity_list")"
    old="$(rd "$R/proc/irq/$i/smp_affinity_list")"
    cur+="${cur:+,}$i:$eff"
    if [ -n "$SPARE" ]; then
      target="$(compress_cpus "$SPARE")"
      for c in $(expand_cpus "$eff"); do in_list "$c" "$SPARE" || ok=0; done
    else
      target="${shard_arr[$((k % ${#shard_arr[@]}))]}"
      for c in $(expand_cpus "$eff"); do per_cpu[$c]=$((${per_cpu[$c]:-0} + 1)); done
    fi
    k=$((k + 1))
    apply+="${apply:+; }$(sysfs_cmd "$R/proc/irq/$i/smp_affinity_list" "$target")"
    undo+="${undo:+; }$(sysfs_cmd "$R/proc/irq/$i/smp_affinity_list" "${old:-$eff}")"
  done
  if [ -z "$SPARE" ]; then
    # Balanced = no shard cpu takes 2+ more queue IRQs than another, and none
    # lands outside the shard set.
    local lo=999999 hi=0 n
    for c in $SHARD; do n=${per_cpu[$c]:-0}; [ "$n" -lt "$lo" ] && lo=$n; [ "$n" -gt "$hi" ] && hi=$n; done
    for c in "${!per_cpu[@]}"; do in_list "$c" "$SHARD" || ok=0; done
    [ $((hi - lo)) -gt 1 ] && ok=0
  fi
  if pgrep -x irqbalance >/dev/null 2>&1; then why+="; irqbalance is running and will rewrite manual affinities"; fi
  if [ "$ok" = 1 ]; then add "$name" "$cur" "$rec" OK "$why"; else add "$name" "$cur" "$rec" CHANGE "$why" "$apply" "$undo"; fi
}

nic_irqs() {
  local n irqs=""
  for n in "$R"/sys/class/net/*; do
    [ "$(basename "$n")" = lo ] && continue
    [ -e "$n/device" ] || continue
    irqs+=" $(device_irqs "$n/device" | tr '\n' ' ')"
  done
  echo "$irqs" | xargs
}

# ---------------------------------------------------------------- memory, sysctls

check_thp() {
  local knob="$1" okset="$2" want="$3" why="$4" f raw cur
  f="$R/sys/kernel/mm/transparent_hugepage/$knob"
  raw="$(rd "$f")"; cur="$(bracketed "$raw")"
  if [ -z "$cur" ]; then add "thp.$knob" "absent" "$want" UNKNOWN "no THP in this kernel; $why"; return; fi
  if in_list "$cur" "$okset"; then add "thp.$knob" "$cur" "$want" OK "$why"
  else add "thp.$knob" "$cur" "$want" CHANGE "$why" "$(sysfs_cmd "$f" "$want")" "$(sysfs_cmd "$f" "$cur")"; fi
}

check_io_uring() {
  local cur kv major minor
  cur="$(rd "$(sysctl_path kernel.io_uring_disabled)")"
  local why="glommio does all shard I/O through io_uring; 1 or 2 makes the broker fail to start"
  if [ -n "$cur" ]; then
    if [ "$cur" = 0 ]; then add kernel.io_uring_disabled "$cur" 0 OK "$why"
    else add kernel.io_uring_disabled "$cur" 0 CHANGE "$why" \
      "$(sysctl_set_cmd kernel.io_uring_disabled 0)" "$(sysctl_set_cmd kernel.io_uring_disabled "$cur")"; fi
    return
  fi
  kv="$(uname -r)"; major="${kv%%.*}"; minor="${kv#*.}"; minor="${minor%%[!0-9]*}"
  if [ "$major" -gt 5 ] || { [ "$major" -eq 5 ] && [ "$minor" -ge 8 ]; }; then
    add kernel.io_uring_disabled "absent (kernel $kv)" 0 OK "sysctl predates 6.6; io_uring is on by default in $kv ($why)"
  else
    add kernel.io_uring_disabled "absent (kernel $kv)" "kernel >= 5.8" CHANGE "glommio needs io_uring from Linux 5.8+"
  fi
}

# ---------------------------------------------------------------- disk

check_disk() {
  local majmin src node dev q why
  majmin="$(findmnt -no MAJ:MIN -T "$LOG_DIR" 2>/dev/null | head -1 | tr -d ' ')"
  src="$(findmnt -no SOURCE,FSTYPE -T "$LOG_DIR" 2>/dev/null | head -1)"
  node=""
  [ -n "$majmin" ] && [ -e "$R/sys/dev/block/$majmin" ] && node="$(readlink -f "$R/sys/dev/block/$majmin")"
  # A partition's queue/ lives on its parent disk.
  [ -n "$node" ] && [ -e "$node/partition" ] && node="$(dirname "$node")"
  # device-mapper/md: follow the first underlying disk.
  while [ -n "$node" ] && [ -d "$node/slaves" ] && [ -n "$(ls "$node/slaves" 2>/dev/null)" ]; do
    node="$(readlink -f "$node/slaves/$(ls "$node/slaves" | head -1)")"
    [ -e "$node/partition" ] && node="$(dirname "$node")"
  done
  if [ -z "$node" ] || [ ! -d "$node/queue" ]; then
    for k in scheduler discard nr_requests read_ahead_kb rotational io_poll; do
      add "disk.$k" "no block device" "n/a" UNKNOWN "log dir $LOG_DIR is on '$src' (no block queue: tmpfs/overlay/network fs?)"
    done
    add irq.disk "no block device" "n/a" UNKNOWN "log dir $LOG_DIR has no block device"
    return
  fi
  dev="$(basename "$node")"; q="$node/queue"
  DISK_NAME="$dev"
  local rot sched_raw sched want
  rot="$(rd "$q/rotational")"
  sched_raw="$(rd "$q/scheduler")"; sched="$(bracketed "$sched_raw")"; [ -z "$sched" ] && sched="$sched_raw"
  # virtio/nvme/xen disks are multi-queue and usually SSD-backed even when the
  # guest sees rotational=1; only real spinning disks want mq-deadline.
  case "$dev" in
    vd*|nvme*|xvd*) want=none; why="$dev is a multi-queue virtual/NVMe disk: let the device (or host) schedule; O_DIRECT appends gain nothing from merging (rpk disk_scheduler)" ;;
    *) if [ "$rot" = 1 ]; then want=mq-deadline; why="spinning disk: deadline bounds read latency behind long sequential writes"
       else want=none; why="SSD: no seek cost to optimise, skip scheduler overhead (rpk disk_scheduler)"; fi ;;
  esac
  if [ "$sched" = "$want" ] || [ "$sched" = noop ]; then add disk.scheduler "$dev:$sched" "$want" OK "$why"
  elif [ -z "$sched" ]; then add disk.scheduler "$dev:?" "$want" UNKNOWN "scheduler not readable"
  else add disk.scheduler "$dev:$sched" "$want" CHANGE "$why" "$(sysfs_cmd "$q/scheduler" "$want")" "$(sysfs_cmd "$q/scheduler" "$sched")"; fi

  # Online discard: every block freed is trimmed at once. Retention frees a
  # whole segment at a time; on this project's test VM (ext4, virtio) the
  # trims stalled the broker's writes: produce p99.9 58-107 ms with
  # `discard` vs 8.4-9.5 ms after `mount -o remount,nodiscard`
  # (perf/RESULTS.md, 2026-11-30). Periodic `fstrim` gives the SSD the same
  # information off the write path.
  local mnt opts
  mnt="$(findmnt -no TARGET -T "$LOG_DIR" 2>/dev/null | head -1)"
  opts="$(findmnt -no OPTIONS -T "$LOG_DIR" 2>/dev/null | head -1)"
  why="online discard trims every freed block when retention deletes a segment, stalling the disk's writes; prefer nodiscard plus a periodic fstrim (fstrim.timer)"
  if [ -z "$opts" ]; then add disk.discard "${mnt:-?}:?" "nodiscard" UNKNOWN "$why"
  elif [[ ",$opts," == *,discard,* ]]; then
    # Manual: a remount affects everything on that filesystem.
    add disk.discard "$mnt:discard" "nodiscard" CHANGE "$why; manual: mount -o remount,nodiscard '$mnt' (undo: remount,discard) and drop discard in /etc/fstab"
  else add disk.discard "$mnt:nodiscard" "nodiscard" OK "$why"; fi

  local nr; nr="$(rd "$q/nr_requests")"
  why="io_uring keeps many O_DIRECT writes in flight per shard; a short queue throttles them in the block layer"
  if [ -z "$nr" ]; then add disk.nr_requests "$dev:?" ">= 256" UNKNOWN "$why"
  elif [ "$nr" -ge 256 ]; then add disk.nr_requests "$dev:$nr" ">= 256" OK "$why"
  else add disk.nr_requests "$dev:$nr" ">= 256" CHANGE "$why" "$(sysfs_cmd "$q/nr_requests" 256)" "$(sysfs_cmd "$q/nr_requests" "$nr")"; fi

  local ra; ra="$(rd "$q/read_ahead_kb")"
  why="cold Fetch reads sendfile() whole segments sequentially from page cache; read-ahead keeps them streaming (writes are O_DIRECT, unaffected)"
  if [ -z "$ra" ]; then add disk.read_ahead_kb "$dev:?" ">= 128" UNKNOWN "$why"
  elif [ "$ra" -ge 128 ]; then add disk.read_ahead_kb "$dev:$ra" ">= 128" OK "$why"
  else add disk.read_ahead_kb "$dev:$ra" ">= 128" CHANGE "$why" "$(sysfs_cmd "$q/read_ahead_kb" 128)" "$(sysfs_cmd "$q/read_ahead_kb" "$ra")"; fi

  case "$dev" in
    vd*|xvd*)
      if [ "$rot" = 0 ]; then add disk.rotational "$dev:$rot" 0 OK "non-rotational: no seek-avoidance heuristics"
      else add disk.rotational "$dev:$rot" "0 (if host storage is SSD)" CHANGE \
        "virtio reports 1 by default; if the host disk is SSD/NVMe, 0 stops seek-oriented heuristics (check with your provider)" \
        "$(sysfs_cmd "$q/rotational" 0)" "$(sysfs_cmd "$q/rotational" "$rot")"; fi ;;
    *)
      if [ "$rot" = 0 ]; then add disk.rotational "$dev:$rot" 0 OK "SSD/NVMe: sustains O_DIRECT appends and random cold reads"
      else add disk.rotational "$dev:${rot:-?}" "0 (SSD/NVMe)" CHANGE "spinning disk: move log.dirs to SSD/NVMe (hardware change, not a knob)"; fi ;;
  esac

  local ip; ip="$(rd "$q/io_poll")"
  if [ "$ip" = 1 ]; then add disk.io_poll "$dev:1" "0 or 1" OK "poll queues present: glommio may use its IOPOLL ring for reads"
  elif [ "$ip" = 0 ]; then add disk.io_poll "$dev:0" "0 or 1" OK "no poll queues; shardlog's DMA probe workaround (src/io/dma.rs) keeps reads off glommio's IOPOLL ring"
  else add disk.io_poll "$dev:?" "0 or 1" UNKNOWN "io_poll not readable"; fi

  check_irqs irq.disk "$(device_irqs "$node/device" | tr '\n' ' ')" "disk ($dev)"
}

# ---------------------------------------------------------------- limits, clock

# prlimit prints bytes for memlock, "unlimited" or a number.
check_limits() {
  local soft hard target_hard cap_ipc=0 capeff
  read -r soft hard < <(prlimit --pid $$ --noheadings --output SOFT,HARD --memlock 2>/dev/null)
  capeff="$(awk '/^CapEff/ {print $2}' /proc/self/status)"
  [ -n "$capeff" ] && (( (16#$capeff >> 14) & 1 )) && cap_ipc=1
  local why="glommio registers io_memory (10 MiB default) per ring for io_uring fixed buffers"
  local rec="unlimited (>= 64 MiB)"
  if [ -z "$soft" ]; then add rlimit.memlock "?" "$rec" UNKNOWN "prlimit unavailable"
  elif [ "$soft" = unlimited ] || [ "$soft" -ge 67108864 ]; then add rlimit.memlock "$soft" "$rec" OK "$why"
  elif [ "$cap_ipc" = 1 ]; then add rlimit.memlock "$soft bytes" "$rec" OK "$why; not enforced here: this user has CAP_IPC_LOCK"
  else add rlimit.memlock "$soft bytes" "$rec" CHANGE "$why; below it registration fails and glommio runs unregistered (WARN)" \
    "prlimit --pid $LIMITS_PID --memlock=unlimited:unlimited" "prlimit --pid $LIMITS_PID --memlock=$soft:$hard"; fi

  read -r soft hard < <(prlimit --pid $$ --noheadings --output SOFT,HARD --nofile 2>/dev/null)
  why="one fd per connection plus .log/.index/.timeindex per segment (Kafka docs: at least 100000)"
  if [ -z "$soft" ]; then add rlimit.nofile "?" ">= 100000" UNKNOWN "prlimit unavailable"
  elif [ "$soft" = unlimited ] || [ "$soft" -ge 100000 ]; then add rlimit.nofile "$soft" ">= 100000" OK "$why"
  else
    target_hard="$hard"; [ "$hard" != unlimited ] && [ "$hard" -lt 100000 ] && target_hard=100000
    add rlimit.nofile "$soft" ">= 100000" CHANGE "$why" \
      "prlimit --pid $LIMITS_PID --nofile=100000:$target_hard" "prlimit --pid $LIMITS_PID --nofile=$soft:$hard"
  fi
}

check_clocksource() {
  local f cur avail
  f="$R/sys/devices/system/clocksource/clocksource0/current_clocksource"
  cur="$(rd "$f")"; avail="$(rd "$R/sys/devices/system/clocksource/clocksource0/available_clocksource")"
  local why="timestamps, timers and the purgatory wheel read the clock constantly; tsc is read in the vDSO without a VM exit (rpk clocksource)"
  if [ -z "$cur" ]; then add clocksource "?" tsc UNKNOWN "clocksource not readable"
  elif [ "$cur" = tsc ]; then add clocksource tsc tsc OK "$why"
  elif in_list tsc "$avail"; then add clocksource "$cur" tsc CHANGE "$why" "$(sysfs_cmd "$f" tsc)" "$(sysfs_cmd "$f" "$cur")"
  else add clocksource "$cur" tsc OK "tsc not offered (unstable on this host); $cur is the best available"; fi
}

# ---------------------------------------------------------------- run checks

DISK_NAME=""
check_governor
check_smt
check_cpu_idle
check_irqs irq.nic "$(nic_irqs)" "NIC"
check_thp enabled "madvise always" madvise \
  "huge pages where asked (madvise) cut TLB misses; 'always' is also acceptable"
check_thp defrag "madvise defer+madvise defer never" madvise \
  "'always' compacts memory synchronously in page faults: multi-ms stalls on a shard thread"
sysctl_range vm.swappiness "" 1 1 "1" \
  "never swap shard memory out for page cache (Kafka/Confluent: vm.swappiness=1)"
sysctl_range vm.dirty_ratio 20 80 40 "20..80" \
  "segments are O_DIRECT (no dirty pages); the Kafka 60-80 advice is for buffered logs, defaults are fine"
sysctl_range vm.dirty_background_ratio 1 5 5 "<= 5" \
  "start writeback of other dirty files (indexes, checkpoints, tools) early so it does not burst into the log disk"
sysctl_range vm.dirty_expire_centisecs 500 3000 1000 "500..3000" \
  "bounds how long dirty index/checkpoint pages wait; very long waits make writeback bursty"
sysctl_range net.core.somaxconn 4096 "" 4096 ">= 4096" \
  "caps the listen backlog shardlog asks for; producer connection storms overflow a short queue"
sysctl_range net.core.rmem_max 16777216 "" 16777216 ">= 16777216" \
  "caps SO_RCVBUF set via socket.receive.buffer.bytes; large produce batches need big windows"
sysctl_range net.core.wmem_max 16777216 "" 16777216 ">= 16777216" \
  "caps SO_SNDBUF set via socket.send.buffer.bytes; sendfile Fetch responses are MBs"
sysctl_triplet_max net.ipv4.tcp_rmem 16777216 \
  "max autotuned receive window: produce throughput on high-BDP and loopback links"
sysctl_triplet_max net.ipv4.tcp_wmem 16777216 \
  "max autotuned send buffer: a 4 MiB cap stalls sendfile of large Fetch responses"
sysctl_range net.core.netdev_max_backlog 5000 "" 5000 ">= 5000" \
  "per-cpu input backlog; loopback benchmarks deliver every packet through it (drops = retransmits)"
sysctl_range net.ipv4.tcp_max_syn_backlog 4096 "" 4096 ">= 4096" \
  "half-open connection queue during client reconnect storms (rpk net tuner)"
sysctl_range net.ipv4.tcp_slow_start_after_idle 0 0 0 "0" \
  "keep the congestion window across idle gaps between produce/fetch bursts on long-lived connections"
sysctl_range net.ipv4.tcp_no_metrics_save 1 1 1 "1 (optional)" \
  "optional: do not carry cwnd/ssthresh from one benchmark run into the next (repeatable A/B runs)"
sysctl_range fs.aio-max-nr 1048576 "" 1048576 ">= 1048576" \
  "io_uring does not count, but libaio users (fio --ioengine=libaio, aio fallbacks) do (rpk aio_events)"
check_disk
check_limits
check_clocksource
check_io_uring

# ---------------------------------------------------------------- output

json_str() {
  local s="$1"
  s="${s//\\/\\\\}"; s="${s//\"/\\\"}"; s="${s//$'\t'/\\t}"; s="${s//$'\n'/\\n}"
  printf '"%s"' "$s"
}

print_json() {
  local i n=${#NAMES[@]}
  printf '{"shard_cpus":%s,"log_dir":%s,"disk":%s,"settings":[' \
    "$(json_str "$(compress_cpus "$SHARD")")" "$(json_str "$LOG_DIR")" "$(json_str "$DISK_NAME")"
  for ((i = 0; i < n; i++)); do
    [ "$i" -gt 0 ] && printf ','
    printf '\n  {"name":%s,"current":%s,"recommended":%s,"status":%s,"reason":%s,"applicable":%s}' \
      "$(json_str "${NAMES[i]}")" "$(json_str "${CURS[i]}")" "$(json_str "${RECS[i]}")" \
      "$(json_str "${STATS[i]}")" "$(json_str "${REASONS[i]}")" \
      "$([ -n "${APPLYS[i]}" ] && echo true || echo false)"
  done
  printf '\n]}\n'
}

print_table() {
  local i n=${#NAMES[@]} w1=7 w2=7 w3=11
  for ((i = 0; i < n; i++)); do
    [ ${#NAMES[i]} -gt $w1 ] && w1=${#NAMES[i]}
    [ ${#CURS[i]} -gt $w2 ] && w2=${#CURS[i]}
    [ ${#RECS[i]} -gt $w3 ] && w3=${#RECS[i]}
  done
  echo "# shardlog host check: shard cpus $(compress_cpus "$SHARD"), log dir $LOG_DIR${DISK_NAME:+ ($DISK_NAME)}, kernel $(uname -r)"
  printf "%-${w1}s | %-${w2}s | %-${w3}s | %-7s | %s\n" setting current recommended status reason
  for ((i = 0; i < n; i++)); do
    printf "%-${w1}s | %-${w2}s | %-${w3}s | %-7s | %s\n" "${NAMES[i]}" "${CURS[i]}" "${RECS[i]}" "${STATS[i]}" "${REASONS[i]}"
  done
  local ok=0 ch=0 un=0
  for ((i = 0; i < n; i++)); do
    case "${STATS[i]}" in OK) ok=$((ok + 1)) ;; CHANGE) ch=$((ch + 1)) ;; *) un=$((un + 1)) ;; esac
  done
  echo "# $n settings: $ok OK, $ch CHANGE, $un UNKNOWN. Explanations and persistence: tuning/README.md"
}

# Ask one question; only an explicit y/yes counts. EOF or anything else is no.
confirm() {
  [ "$YES" = 1 ] && { echo "$1 [y/N] y (--yes)"; return 0; }
  printf '%s [y/N] ' "$1"
  local ans=""
  read -r ans || ans=""
  [ -t 0 ] || echo "$ans"
  case "$ans" in y|Y|yes|YES) return 0 ;; *) return 1 ;; esac
}

do_apply() {
  local i n=${#NAMES[@]} applied=0
  [ -z "$UNDO_FILE" ] && UNDO_FILE="$PWD/shardlog-tuning-undo-$(date +%Y%m%d-%H%M%S).sh"
  echo
  echo "# --apply: each change is asked for; nothing is changed without a yes."
  for ((i = 0; i < n; i++)); do
    [ "${STATS[i]}" = CHANGE ] || continue
    if [ -z "${APPLYS[i]}" ]; then
      echo "- ${NAMES[i]}: manual change (${REASONS[i]})"; continue
    fi
    if ! confirm "- ${NAMES[i]}: ${CURS[i]} -> ${RECS[i]}: run: ${APPLYS[i]} ?"; then
      echo "  skipped"; continue
    fi
    if bash -c "set -e; ${APPLYS[i]}" 2>/tmp/shardlog-tuning.err.$$; then
      if [ "$applied" = 0 ]; then
        { echo "#!/usr/bin/env bash"; echo "# Undo shardlog tuning applied $(date -u +%FT%TZ) by tuning/check.sh --apply"; } >"$UNDO_FILE"
        chmod +x "$UNDO_FILE"
      fi
      echo "${UNDOS[i]}" >>"$UNDO_FILE"
      applied=$((applied + 1))
      echo "  applied. undo: ${UNDOS[i]}"
    else
      echo "  FAILED: $(tr '\n' ' ' </tmp/shardlog-tuning.err.$$)(not root?)"
    fi
    rm -f /tmp/shardlog-tuning.err.$$
  done
  if [ "$applied" -gt 0 ]; then
    echo "# $applied change(s) applied; undo them all with: bash $UNDO_FILE"
    echo "# These last until reboot; to persist see tuning/README.md (sysctl.d, udev rules, limits)."
  else
    echo "# nothing applied"
  fi
}

if [ "$JSON" = 1 ]; then print_json; else print_table; fi
[ "$APPLY" = 1 ] && do_apply
exit 0
