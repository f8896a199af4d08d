//! `[pure]` DelayedFetch: a Fetch waiting for `fetch.min.bytes` to become
//! readable, or for a reason to answer early (Kafka's `DelayedFetch`).
//!
//! The op remembers, per partition, where the first read stopped
//! (`fetch_offset` with its log position, Kafka's `startOffsetMetadata`) and
//! which watermark bounds the read: LEO for followers, HW for consumers, LSO
//! for `isolation_level=read_committed` (Kafka's `FetchIsolation`). It
//! decides *when* to answer; on completion or expiry the driver re-reads the
//! log and responds (Kafka's `onComplete` → `readFromLocalLog`).
//!
//! Kafka's `DelayedFetch.tryComplete` cases (3.x numbering) and ours:
//! - A: no longer leader (NOT_LEADER_OR_FOLLOWER) — answer now;
//! - B: replica no longer on this broker (same error) — answer now;
//! - C: partition unknown (UNKNOWN_TOPIC_OR_PARTITION) — answer now;
//! - D: partition in an offline log dir (KAFKA_STORAGE_ERROR) — answer now;
//! - E: request's `current_leader_epoch` fenced (FENCED_LEADER_EPOCH) — now;
//! - F: fetch offset and watermark on different segments (the leader was
//!   truncated, or the fetch fell behind / the log rolled) — answer now;
//! - G: accumulated bytes ≥ `min_bytes` (each partition counted up to its
//!   `partition_max_bytes`) — answer now;
//! - H (diverging epoch via `last_fetched_epoch`) needs the leader-epoch cache
//!   and is left to the fetch handler's first read.
//!
//! In addition, the log having been truncated below the fetch offset
//! (LEO < fetch offset) or retention having passed it (log start > fetch
//! offset) answers now: the read will return OFFSET_OUT_OF_RANGE or make the
//! follower truncate. An HW/LSO temporarily *below* the fetch offset (a new
//! leader still catching its HW up) waits, as Kafka does.

use crate::protocol::ErrorCode;
use crate::purgatory::delayed_operation::DelayedOperation;
use crate::purgatory::view::{LogOffsetMetadata, PartitionRole, PartitionSnapshot, PartitionView};
use crate::types::{LeaderEpoch, TopicPartition};

/// Which watermark bounds the read (Kafka's `FetchIsolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchIsolation {
    /// Followers read to the log end offset.
    LogEnd,
    /// Consumers (`read_uncommitted`) read to the high watermark.
    HighWatermark,
    /// `read_committed` consumers read to the last stable offset.
    TxnCommitted,
}

impl FetchIsolation {
    pub fn watermark(self, s: &PartitionSnapshot) -> LogOffsetMetadata {
        match self {
            FetchIsolation::LogEnd => s.log_end_offset,
            FetchIsolation::HighWatermark => s.high_watermark,
            FetchIsolation::TxnCommitted => s.last_stable_offset,
        }
    }
}

/// One partition of a DelayedFetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionSpec {
    pub tp: TopicPartition,
    /// Where the first read stopped (Kafka's `startOffsetMetadata`).
    pub fetch_offset: LogOffsetMetadata,
    /// Per-partition `partition_max_bytes` from the request.
    pub partition_max_bytes: i32,
    /// The request's `current_leader_epoch` (KIP-320), if sent.
    pub current_leader_epoch: Option<LeaderEpoch>,
}

/// What the caller found for one partition: the current watermark and the
/// bytes between the fetch offset and it, or a reason to answer early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchProbe {
    /// No information yet (no note from the owner shard): contributes nothing.
    Unknown,
    Available {
        watermark: i64,
        bytes_available: i64,
    },
    /// Answer now (cases A–F, truncation, out of range).
    CompleteNow(FetchCompletion),
}

/// Why a DelayedFetch answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchCompletion {
    /// Case G: enough bytes are readable.
    MinBytes { accumulated_bytes: i64 },
    /// Cases A–E: this partition will answer with `error_code`.
    PartitionError {
        partition_index: usize,
        error_code: ErrorCode,
    },
    /// Case F: the fetch offset and the watermark are on different segments.
    SegmentChanged { partition_index: usize },
    /// Log truncated below, or retention passed, the fetch offset.
    OffsetOutOfRange { partition_index: usize },
    /// `max_wait_ms` elapsed.
    Expired,
}

/// What the driver acts on: re-read these partitions and respond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOutcome {
    pub reason: FetchCompletion,
    pub partitions: Vec<FetchPartitionSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayedFetch {
    /// Request `max_wait_ms` (consumer `fetch.max.wait.ms`, default 500).
    pub max_wait_ms: i64,
    /// Request `min_bytes` (consumer `fetch.min.bytes`, default 1).
    pub min_bytes: i32,
    /// Request `max_bytes` (consumer `fetch.max.bytes`); used by the re-read.
    pub max_bytes: i32,
    pub isolation: FetchIsolation,
    partitions: Vec<FetchPartitionSpec>,
    completion: Option<FetchCompletion>,
}

impl DelayedFetch {
    pub fn new(
        max_wait_ms: i64,
        min_bytes: i32,
        max_bytes: i32,
        isolation: FetchIsolation,
        partitions: Vec<FetchPartitionSpec>,
    ) -> Self {
        Self {
            max_wait_ms,
            min_bytes,
            max_bytes,
            isolation,
            partitions,
            completion: None,
        }
    }

    pub fn partitions(&self) -> &[FetchPartitionSpec] {
        &self.partitions
    }

    pub fn keys(&self) -> Vec<TopicPartition> {
        self.partitions.iter().map(|p| p.tp.clone()).collect()
    }

    /// The core rule with caller-computed probes. Returns true (and records
    /// why) when the fetch should answer now.
    pub fn try_complete_with(
        &mut self,
        mut probe: impl FnMut(usize, &FetchPartitionSpec) -> FetchProbe,
    ) -> bool {
        if self.completion.is_some() {
            return true;
        }
        let mut accumulated: i64 = 0;
        for (i, spec) in self.partitions.iter().enumerate() {
            match probe(i, spec) {
                FetchProbe::Unknown => {}
                FetchProbe::Available {
                    bytes_available, ..
                } => {
                    // Kafka caps each partition's contribution at its
                    // partition_max_bytes.
                    accumulated += bytes_available.clamp(0, spec.partition_max_bytes.max(0) as i64);
                }
                FetchProbe::CompleteNow(reason) => {
                    self.completion = Some(reason);
                    return true;
                }
            }
        }
        if accumulated >= self.min_bytes as i64 {
            self.completion = Some(FetchCompletion::MinBytes {
                accumulated_bytes: accumulated,
            });
            return true;
        }
        false
    }

    pub fn try_complete(&mut self, view: &PartitionView) -> bool {
        let isolation = self.isolation;
        self.try_complete_with(|i, spec| probe_snapshot(i, spec, isolation, view.get(&spec.tp)))
    }

    pub fn on_complete(self) -> FetchOutcome {
        FetchOutcome {
            reason: self.completion.unwrap_or(FetchCompletion::Expired),
            partitions: self.partitions,
        }
    }

    pub fn on_expire(self) -> FetchOutcome {
        FetchOutcome {
            reason: FetchCompletion::Expired,
            partitions: self.partitions,
        }
    }
}

/// Computes a [`FetchProbe`] from a partition snapshot, following Kafka's
/// `DelayedFetch.tryComplete` (see the module doc for the cases).
pub fn probe_snapshot(
    index: usize,
    spec: &FetchPartitionSpec,
    isolation: FetchIsolation,
    snapshot: Option<&PartitionSnapshot>,
) -> FetchProbe {
    let Some(s) = snapshot else {
        return FetchProbe::Unknown;
    };
    let error = |error_code| {
        FetchProbe::CompleteNow(FetchCompletion::PartitionError {
            partition_index: index,
            error_code,
        })
    };
    match s.role {
        PartitionRole::Leader => {}
        PartitionRole::Follower => return error(ErrorCode::NOT_LEADER_OR_FOLLOWER), // A, B
        PartitionRole::Unknown => return error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), // C
        PartitionRole::Offline => return error(ErrorCode::KAFKA_STORAGE_ERROR),     // D
    }
    if matches!(spec.current_leader_epoch, Some(e) if e < s.leader_epoch) {
        return error(ErrorCode::FENCED_LEADER_EPOCH); // E
    }
    let fetch = spec.fetch_offset;
    if s.log_end_offset.offset < fetch.offset || s.log_start_offset > fetch.offset {
        return FetchProbe::CompleteNow(FetchCompletion::OffsetOutOfRange {
            partition_index: index,
        });
    }
    let end = isolation.watermark(s);
    // Same offset: nothing new (and a just-rolled segment must not look like
    // case F, as Kafka notes).
    if end.offset == fetch.offset {
        return FetchProbe::Available {
            watermark: end.offset,
            bytes_available: 0,
        };
    }
    if end.on_older_segment(&fetch) || fetch.on_older_segment(&end) {
        return FetchProbe::CompleteNow(FetchCompletion::SegmentChanged {
            partition_index: index,
        }); // F
    }
    let bytes_available = if fetch.offset < end.offset {
        end.position_diff(&fetch)
    } else {
        0 // HW/LSO behind the fetch offset: wait for it to catch up.
    };
    FetchProbe::Available {
        watermark: end.offset,
        bytes_available,
    }
}

impl DelayedOperation for DelayedFetch {
    type Key = TopicPartition;
    type View = PartitionView;
    type Outcome = FetchOutcome;

    fn delay_ms(&self) -> i64 {
        self.max_wait_ms
    }
    fn try_complete(&mut self, _now_ms: i64, view: &PartitionView) -> bool {
        DelayedFetch::try_complete(self, view)
    }
    fn on_complete(self) -> FetchOutcome {
        DelayedFetch::on_complete(self)
    }
    fn on_expire(self) -> FetchOutcome {
        DelayedFetch::on_expire(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn spec(p: i32, offset: i64, position: i64) -> FetchPartitionSpec {
        FetchPartitionSpec {
            tp: tp(p),
            fetch_offset: LogOffsetMetadata::new(offset, 0, position),
            partition_max_bytes: 1_048_576,
            current_leader_epoch: Some(LeaderEpoch(5)),
        }
    }

    /// LEO at (100, pos 10 000), HW at (90, pos 9 000), LSO at (80, pos 8 000).
    fn leader() -> PartitionSnapshot {
        PartitionSnapshot {
            role: PartitionRole::Leader,
            leader_epoch: LeaderEpoch(5),
            log_start_offset: 0,
            log_end_offset: LogOffsetMetadata::new(100, 0, 10_000),
            high_watermark: LogOffsetMetadata::new(90, 0, 9_000),
            last_stable_offset: LogOffsetMetadata::new(80, 0, 8_000),
            isr_size: 1,
            min_insync_replicas: 1,
        }
    }

    fn with(f: impl Fn(&mut PartitionSnapshot)) -> PartitionSnapshot {
        let mut s = leader();
        f(&mut s);
        s
    }

    type ProbeRow = (
        &'static str,
        Option<PartitionSnapshot>,
        FetchIsolation,
        (i64, i64, i64),
        FetchProbe,
    );

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "one table-driven test: a row per early-answer case"
    )]
    fn probe_snapshot_follows_kafka_delayed_fetch_cases() {
        use FetchIsolation::*;
        let err = |c| {
            FetchProbe::CompleteNow(FetchCompletion::PartitionError {
                partition_index: 0,
                error_code: c,
            })
        };
        let avail = |w, b| FetchProbe::Available {
            watermark: w,
            bytes_available: b,
        };
        // (case, snapshot, isolation, fetch (offset, segment, position), expected probe)
        let rows: Vec<ProbeRow> = vec![
            (
                "no note yet",
                None,
                HighWatermark,
                (50, 0, 5_000),
                FetchProbe::Unknown,
            ),
            (
                "A: leadership moved",
                Some(with(|s| s.role = PartitionRole::Follower)),
                HighWatermark,
                (50, 0, 5_000),
                err(ErrorCode(6)),
            ),
            (
                "C: partition deleted",
                Some(with(|s| s.role = PartitionRole::Unknown)),
                HighWatermark,
                (50, 0, 5_000),
                err(ErrorCode(3)),
            ),
            (
                "D: log dir offline",
                Some(with(|s| s.role = PartitionRole::Offline)),
                HighWatermark,
                (50, 0, 5_000),
                err(ErrorCode(56)),
            ),
            (
                "E: request epoch fenced",
                Some(with(|s| s.leader_epoch = LeaderEpoch(6))),
                HighWatermark,
                (50, 0, 5_000),
                err(ErrorCode(74)),
            ),
            (
                "G: consumer counts bytes up to HW",
                Some(leader()),
                HighWatermark,
                (50, 0, 5_000),
                avail(90, 4_000),
            ),
            (
                "G: follower counts bytes up to LEO",
                Some(leader()),
                LogEnd,
                (50, 0, 5_000),
                avail(100, 5_000),
            ),
            (
                "G: read_committed counts bytes up to LSO",
                Some(leader()),
                TxnCommitted,
                (50, 0, 5_000),
                avail(80, 3_000),
            ),
            (
                "nothing new at the watermark",
                Some(leader()),
                HighWatermark,
                (90, 0, 9_000),
                avail(90, 0),
            ),
            (
                "HW behind fetch offset (new leader): wait",
                Some(leader()),
                HighWatermark,
                (95, 0, 9_500),
                avail(90, 0),
            ),
            (
                "F: leader truncated to an older segment",
                Some(with(|s| {
                    s.high_watermark = LogOffsetMetadata::new(60, 0, 6_000)
                })),
                HighWatermark,
                (70, 70, 100),
                FetchProbe::CompleteNow(FetchCompletion::SegmentChanged { partition_index: 0 }),
            ),
            (
                "F: log rolled past the fetch segment",
                Some(with(|s| {
                    s.high_watermark = LogOffsetMetadata::new(90, 85, 500)
                })),
                HighWatermark,
                (50, 0, 5_000),
                FetchProbe::CompleteNow(FetchCompletion::SegmentChanged { partition_index: 0 }),
            ),
            (
                "truncated below fetch offset",
                Some(with(|s| {
                    s.log_end_offset = LogOffsetMetadata::new(40, 0, 4_000)
                })),
                LogEnd,
                (50, 0, 5_000),
                FetchProbe::CompleteNow(FetchCompletion::OffsetOutOfRange { partition_index: 0 }),
            ),
            (
                "retention passed fetch offset",
                Some(with(|s| s.log_start_offset = 60)),
                HighWatermark,
                (50, 0, 5_000),
                FetchProbe::CompleteNow(FetchCompletion::OffsetOutOfRange { partition_index: 0 }),
            ),
        ];
        for (case, snapshot, isolation, (offset, segment, position), want) in rows {
            let mut s = spec(0, offset, position);
            s.fetch_offset.segment_base_offset = segment;
            assert_eq!(
                probe_snapshot(0, &s, isolation, snapshot.as_ref()),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn fetch_completes_when_bytes_across_partitions_reach_min_bytes() {
        let mut op = DelayedFetch::new(
            500,
            6_000,
            52_428_800,
            FetchIsolation::HighWatermark,
            vec![spec(0, 50, 5_000), spec(1, 50, 5_000)],
        );
        let mut view = PartitionView::new();
        view.update(tp(0), leader()); // 4 000 bytes readable
        assert!(!op.try_complete(&view), "4 000 < 6 000 and tp1 unknown");
        view.update(
            tp(1),
            with(|s| s.high_watermark = LogOffsetMetadata::new(60, 0, 7_000)),
        );
        assert!(op.try_complete(&view), "4 000 + 2 000 >= 6 000");
        let out = op.on_complete();
        assert_eq!(
            out.reason,
            FetchCompletion::MinBytes {
                accumulated_bytes: 6_000
            }
        );
        assert_eq!(out.partitions.len(), 2);
    }

    #[test]
    fn partition_max_bytes_caps_each_partitions_contribution() {
        let mut s = spec(0, 50, 5_000);
        s.partition_max_bytes = 1_000;
        let mut op = DelayedFetch::new(500, 1_001, 1 << 20, FetchIsolation::HighWatermark, vec![s]);
        let mut view = PartitionView::new();
        view.update(tp(0), leader()); // 4 000 readable, capped to 1 000
        assert!(!op.try_complete(&view));
    }

    #[test]
    fn caller_computed_probe_drives_completion() {
        let mut op = DelayedFetch::new(
            500,
            1,
            1 << 20,
            FetchIsolation::LogEnd,
            vec![spec(0, 50, 0)],
        );
        assert!(!op.try_complete_with(|_, _| FetchProbe::Available {
            watermark: 50,
            bytes_available: 0
        }));
        assert!(op.try_complete_with(|_, _| FetchProbe::Available {
            watermark: 51,
            bytes_available: 70
        }));
        assert_eq!(
            op.on_complete().reason,
            FetchCompletion::MinBytes {
                accumulated_bytes: 70
            }
        );
    }

    #[test]
    fn expired_fetch_reports_expiry_for_the_driver_to_reread() {
        let op = DelayedFetch::new(
            500,
            1,
            1 << 20,
            FetchIsolation::HighWatermark,
            vec![spec(0, 50, 0)],
        );
        let out = op.on_expire();
        assert_eq!(out.reason, FetchCompletion::Expired);
        assert_eq!(out.partitions, vec![spec(0, 50, 0)]);
    }
}
