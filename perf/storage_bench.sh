#!/usr/bin/env bash
# Storage engine vs. the raw disk, side by side in one run (PLATFORM.md:
# figures swing 2-3x between runs, so only same-run ratios mean much).
#
#   fio O_DIRECT sequential write, 1 MiB blocks   vs  append_16k_nofsync (MB/s)
#     (fio runs before and after criterion; the ratio uses their mean)
#   fio 16 KiB O_DIRECT writes + fdatasync each    vs  append_16k_fsync_each (ops/s)
#
# plus the other criterion figures (recovery scan, index lookup, CRC32C).
# Usage: perf/storage_bench.sh [--short]   (--short: 256 MiB fio, 2 s criterion)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v fio >/dev/null || { echo "fio missing: apt-get install -y fio" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing: apt-get install -y python3" >&2; exit 1; }

SIZE=1G; MEAS=3; SYNC_SIZE=64M
if [[ "${1:-}" == "--short" ]]; then SIZE=256M; MEAS=2; SYNC_SIZE=16M; fi

# Same file system as the work tree (not tmpfs).
mkdir -p target/storage-bench
WORK=$(mktemp -d target/storage-bench/fio.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# fio's sequential write runs before and after criterion: the disk is
# shared and drifts, so the ratio is given against both.
seq_fio() {
    echo "== fio: O_DIRECT sequential write, 1 MiB blocks, $SIZE ($1)"
    fio --name=seqwrite --directory="$WORK" --rw=write --bs=1M --size="$SIZE" \
        --direct=1 --ioengine=psync --end_fsync=1 --output-format=json > "$WORK/$1.json"
    rm -f "$WORK"/seqwrite*
}
seq_fio seq
echo "== fio: 16 KiB O_DIRECT writes + fdatasync each, $SYNC_SIZE"
fio --name=syncwrite --directory="$WORK" --rw=write --bs=16k --size="$SYNC_SIZE" \
    --direct=1 --ioengine=psync --fdatasync=1 --output-format=json > "$WORK/sync.json"
rm -f "$WORK"/syncwrite*

echo "== criterion: benches/storage.rs"
STORAGE_BENCH_DIR="$WORK" cargo bench --bench storage -- \
    --warm-up-time 1 --measurement-time "$MEAS" --noplot 2>&1 | grep -E '^storage/|time:|thrpt:|^append rig' || true
seq_fio seq_after

python3 - "$WORK" <<'PY'
import json, sys, os
work = sys.argv[1]
def fio(name):
    j = json.load(open(os.path.join(work, name)))["jobs"][0]["write"]
    return j["bw_bytes"] / 1e6, j["iops"]
def crit(path):
    p = os.path.join("target/criterion", path, "new/estimates.json")
    e = json.load(open(p))
    # criterion's headline figure: the slope when it sampled linearly.
    return (e.get("slope") or e["mean"])["point_estimate"]  # ns per iteration
seq_before, _ = fio("seq.json")
seq_after, _ = fio("seq_after.json")
seq_mb = (seq_before + seq_after) / 2
_, sync_iops = fio("sync.json")
app_ns = crit("storage/append_16k_nofsync")
fs_ns = crit("storage/append_16k_fsync_each")
app_mb = 16384 / app_ns * 1e3
nc_mb = 16384 / crit("storage/append_16k_nofsync_nocache") * 1e3
fs_ops = 1e9 / fs_ns
scan_gb = (64 << 20) // 16384 * 16384 / crit("storage/recovery_scan_64m")
rec_gb = (128 << 20) // 16384 * 16384 / crit("storage/recover_segment_128m")
idx_ns = crit("storage/index_lookup")
crc16 = 16384 / crit("storage/crc32c/16384")
crc1m = (1 << 20) / crit("storage/crc32c/1048576")
print()
print(f"{'metric':42} {'shardlog':>12} {'fio':>12} {'ratio':>7}")
print(f"{'fio seq write before / after (MB/s)':42} {'':12} {seq_before:5.0f}/{seq_after:<6.0f}")
print(f"{'seq write 16 KiB batches, no fsync (MB/s)':42} {app_mb:12.0f} {seq_mb:12.0f} {app_mb/seq_mb:7.2f}")
print(f"{'  ratio to fio before / after':42} {'':12} {'':12} {app_mb/seq_before:.2f}/{app_mb/seq_after:.2f}")
print(f"{'  same, batch cache off (MB/s)':42} {nc_mb:12.0f} {seq_mb:12.0f} {nc_mb/seq_mb:7.2f}")
print(f"{'16 KiB append + fdatasync each (ops/s)':42} {fs_ops:12.0f} {sync_iops:12.0f} {fs_ops/sync_iops:7.2f}")
print(f"{'recovery scan in memory (GB/s)':42} {scan_gb:12.2f}")
print(f"{'recover 128 MiB segment from disk (GB/s)':42} {rec_gb:12.2f}")
print(f"{'index lookup (ns)':42} {idx_ns:12.1f}")
print(f"{'CRC32C 16 KiB / 1 MiB (GB/s)':42} {crc16:8.1f} / {crc1m:.1f}")
PY
