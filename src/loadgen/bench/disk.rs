//! How much log the brokers bench starts may keep: a sweep writes hundreds
//! of MB/s for minutes, so each partition replica gets Kafka's
//! `log.retention.bytes` (checked every second) and `log.segment.bytes`
//! sized from the free space of the disk under the work dir, and the
//! bench never fills the disk it runs on (a CI host with a few GB left, a
//! laptop).

use std::path::Path;

use anyhow::{Context, Result};

const MIB: u64 = 1 << 20;
/// The most a replica keeps on a roomy disk (the bench's fixed figures
/// before free space was taken into account).
const MAX_RETENTION: u64 = 512 * MIB;
const MAX_SEGMENT: u64 = 128 * MIB;
/// Below these a segment rolls too often to measure anything but rolling.
const MIN_RETENTION: u64 = 8 * MIB;
const MIN_SEGMENT: u64 = 2 * MIB;

/// Per-replica log limits, as broker config values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBudget {
    /// `log.segment.bytes`.
    pub segment_bytes: u64,
    /// `log.retention.bytes`.
    pub retention_bytes: u64,
}

impl LogBudget {
    /// The `--override` values.
    pub fn overrides(&self) -> [String; 2] {
        [
            format!("log.segment.bytes={}", self.segment_bytes),
            format!("log.retention.bytes={}", self.retention_bytes),
        ]
    }

    /// The most `replicas` replicas hold at once: retention, plus the
    /// active segment (pre-allocated whole), plus one rolled segment the
    /// next retention check has not deleted yet.
    pub fn peak_bytes(&self, replicas: u64) -> u64 {
        replicas * (self.retention_bytes + 2 * self.segment_bytes)
    }
}

/// The limits for `replicas` partition replicas sharing a disk with
/// `free_bytes` available: together they may peak at a third of it, which
/// leaves room for the segments deleted in the last
/// `log.segment.delete.delay.ms` (a second in the bench: a few hundred MB
/// at the rates this host reaches) and the broker's own log.
pub fn log_budget(free_bytes: u64, replicas: u64) -> LogBudget {
    let per_replica = free_bytes / 3 / replicas.max(1);
    // retention + 2 segments = 1.5 × retention ≤ per_replica.
    let retention_bytes = (per_replica * 2 / 3).clamp(MIN_RETENTION, MAX_RETENTION);
    let segment_bytes = (retention_bytes / 4).clamp(MIN_SEGMENT, MAX_SEGMENT);
    LogBudget {
        segment_bytes,
        retention_bytes,
    }
}

/// Bytes an unprivileged writer may still use on the filesystem of `path`.
pub fn free_bytes(path: &Path) -> Result<u64> {
    let st =
        nix::sys::statvfs::statvfs(path).with_context(|| format!("statvfs {}", path.display()))?;
    Ok(st.blocks_available() * st.fragment_size())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_roomy_disk_keeps_kafka_sized_segments_and_half_a_gib_per_replica() {
        let b = log_budget(500 * GIB, 6);
        assert_eq!(b.retention_bytes, MAX_RETENTION);
        assert_eq!(b.segment_bytes, MAX_SEGMENT);
    }

    #[test]
    fn a_nearly_full_disk_shrinks_the_limits_so_the_peak_stays_within_a_third_of_it() {
        for (free, replicas) in [(3 * GIB, 6), (12 * GIB, 6), (3 * GIB, 18), (GIB, 6)] {
            let b = log_budget(free, replicas);
            assert!(
                b.retention_bytes < MAX_RETENTION,
                "{free} {replicas}: {b:?}"
            );
            assert!(
                b.peak_bytes(replicas) <= free / 3,
                "{free} {replicas}: {b:?} peaks at {}",
                b.peak_bytes(replicas)
            );
            assert!(b.segment_bytes <= b.retention_bytes / 4 + 1);
        }
    }

    #[test]
    fn a_disk_too_small_for_the_minimum_still_gets_the_minimum() {
        let b = log_budget(10 * MIB, 6);
        assert_eq!(b.retention_bytes, MIN_RETENTION);
        assert_eq!(b.segment_bytes, MIN_SEGMENT);
    }

    #[test]
    fn the_free_space_of_a_real_dir_is_read() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
        assert!(free_bytes(Path::new("/no/such/dir")).is_err());
    }
}
