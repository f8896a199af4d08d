#!/usr/bin/env bash
# Compare two configurations on the same host, interleaved A/B/A/B so slow
# drifts of a shared, noisy machine (other tenants, thermal, page cache) hit
# both sides alike. Prints every round and the median ratio B/A.
#
#   perf/compare.sh --a 'CMD A' --b 'CMD B' [--rounds 5] [--match 'msgs/s']
#   perf/compare.sh --loadgen-a 'ARGS' --loadgen-b 'ARGS' --metric msgs_per_sec
set -euo pipefail

usage() {
  cat <<'EOF'
usage: perf/compare.sh (--a CMD | --loadgen-a ARGS) (--b CMD | --loadgen-b ARGS) [options]
  --a CMD, --b CMD        bash commands, one run each per round
  --loadgen-a/b ARGS      shorthand for '<bin> loadgen ARGS' (bin: --bin, default
                          <repo>/target/release/shardlog)
  --rounds N              A/B pairs (default 5)
  --warmup N              unrecorded A/B pairs first (default 0)
  --match ERE             figure = the number right after (else right before) the last
                          match of ERE in the output (default 'msgs/s|msg/s|MB/s|rate')
  --awk PROGRAM           figure = what this awk program prints (last line) from the output
  --metric COLUMN         figure = COLUMN of the last row of CSV output; read from the
                          file $COMPARE_CSV if the command wrote it, else from stdout
  --unit TEXT             label for the figure (default: derived from --match/--metric)
  --bin PATH              shardlog binary for --loadgen-*
  --quiet                 do not echo command output on failure
Each command sees COMPARE_SIDE=A|B, COMPARE_ROUND=n and COMPARE_CSV=<per-run file>.
Exit status 1 if any run fails or yields no figure.
EOF
}

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CMD_A="" CMD_B="" LG_A="" LG_B="" ROUNDS=5 WARMUP=0 MATCH="" AWKP="" METRIC="" UNIT="" BIN="" QUIET=0
while [ $# -gt 0 ]; do
  case "$1" in
    --a) CMD_A="$2"; shift 2 ;;
    --b) CMD_B="$2"; shift 2 ;;
    --loadgen-a) LG_A="$2"; shift 2 ;;
    --loadgen-b) LG_B="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --match) MATCH="$2"; shift 2 ;;
    --awk) AWKP="$2"; shift 2 ;;
    --metric) METRIC="$2"; shift 2 ;;
    --unit) UNIT="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --quiet) QUIET=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
die() { echo "compare.sh: $*" >&2; exit 1; }
[ -n "$BIN" ] || BIN="$REPO/target/release/shardlog"
[ -n "$LG_A" ] && CMD_A="'$BIN' loadgen $LG_A"
[ -n "$LG_B" ] && CMD_B="'$BIN' loadgen $LG_B"
[ -n "$CMD_A" ] && [ -n "$CMD_B" ] || { usage >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
if { [ -n "$LG_A" ] || [ -n "$LG_B" ]; } && [ ! -x "$BIN" ]; then
  die "$BIN missing: run 'cargo build --release' (or pass --bin)"
fi
if [ -z "$MATCH$AWKP$METRIC" ]; then
  MATCH='msgs/s|msg/s|MB/s|rate'; UNIT="${UNIT:-(as printed)}"
fi
[ -n "$UNIT" ] || UNIT="${METRIC:-${MATCH:-figure}}"

TMP="$(mktemp -d -t shardlog-compare.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
NUM='[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?'

# Figure from output file $1 (and CSV file $2 for --metric).
extract() {
  local out="$1" csv="$2" line
  if [ -n "$METRIC" ]; then
    [ -s "$csv" ] || csv="$out"
    # Header = last line holding METRIC as a whole comma-separated field; the
    # figure is that column in the last later line with as many fields.
    awk -F',' -v m="$METRIC" '
      { for (i = 1; i <= NF; i++) { f = $i; gsub(/^[ "]+|[ "\r]+$/, "", f); if (f == m) { col = i; nf = NF; v = ""; next } } }
      col && NF == nf { v = $col; gsub(/^[ "]+|[ "\r]+$/, "", v) }
      END { if (v != "") print v }' "$csv"
  elif [ -n "$AWKP" ]; then
    awk "$AWKP" "$out" | tail -1
  else
    line="$(grep -E -- "$MATCH" "$out" | tail -1)" || return 0
    # Prefer "rate 100" / "rate: 100"; fall back to "100 msgs/s".
    if grep -qE -- "($MATCH)[[:space:]:=]*$NUM" <<<"$line"; then
      grep -oE -- "($MATCH)[[:space:]:=]*$NUM" <<<"$line" | tail -1 | grep -oE -- "$NUM\$"
    else
      grep -oE -- "${NUM}[[:space:]]*($MATCH)" <<<"$line" | tail -1 | grep -oE -- "^$NUM"
    fi
  fi
}

# run SIDE ROUND -> prints the figure, or fails.
run_one() {
  local side="$1" round="$2" cmd out csv v
  [ "$side" = A ] && cmd="$CMD_A" || cmd="$CMD_B"
  out="$TMP/$side.$round.out"; csv="$TMP/$side.$round.csv"
  if ! COMPARE_SIDE="$side" COMPARE_ROUND="$round" COMPARE_CSV="$csv" bash -c "$cmd" >"$out" 2>&1; then
    [ "$QUIET" = 1 ] || tail -20 "$out" >&2
    die "$side round $round failed: $cmd"
  fi
  v="$(extract "$out" "$csv")"
  if ! [[ "$v" =~ ^$NUM$ ]]; then
    [ "$QUIET" = 1 ] || tail -20 "$out" >&2
    die "$side round $round: no figure found in the output (see --match/--awk/--metric)"
  fi
  echo "$v"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "# A: $CMD_A"
echo "# B: $CMD_B"
echo "# $ROUNDS rounds, interleaved A then B, figure: $UNIT"
for ((w = 1; w <= WARMUP; w++)); do run_one A "w$w" >/dev/null; run_one B "w$w" >/dev/null; done
AS="" BS="" RS=""
for ((r = 1; r <= ROUNDS; r++)); do
  a="$(run_one A "$r")"; b="$(run_one B "$r")"
  ratio="$(awk -v a="$a" -v b="$b" 'BEGIN { if (a == 0) print "inf"; else printf "%.3f", b / a }')"
  printf 'round %d  A %s  B %s  B/A %s\n' "$r" "$a" "$b" "$ratio"
  AS+="$a "; BS+="$b "; [ "$ratio" != inf ] && RS+="$ratio "
done
ma="$(median <<<"$AS")"; mb="$(median <<<"$BS")"
mr="$( [ -n "$RS" ] && median <<<"$RS" || echo inf)"
spread="$(tr ' ' '\n' <<<"$RS" | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.3f..%.3f", lo, hi }')"
echo "median A $ma $UNIT"
echo "median B $mb $UNIT"
printf 'median ratio B/A %s (per-round range %s)\n' "$(awk -v r="$mr" 'BEGIN { if (r == "inf") print r; else printf "%.3f", r }')" "${spread:-n/a}"
