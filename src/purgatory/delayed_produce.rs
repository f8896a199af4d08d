//! `[pure]` DelayedProduce: an acks=-1 (`acks=all`) produce waiting for the
//! high watermark to pass what it appended on every partition (Kafka's
//! `DelayedProduce` + `Partition.checkEnoughReplicasReachOffset`).
//!
//! Per partition the op holds `required_offset` (last appended offset + 1)
//! and a status: pending, or done with an error code. It completes when no
//! partition is pending; on expiry the pending ones become
//! REQUEST_TIMED_OUT (7) and the done ones keep their result.

use crate::protocol::ErrorCode;
use crate::purgatory::delayed_operation::DelayedOperation;
use crate::purgatory::view::{PartitionRole, PartitionSnapshot, PartitionView};
use crate::types::{Offset, TopicPartition};

/// Status of one partition of a DelayedProduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducePartitionStatus {
    /// Waiting for HW ≥ `required_offset` (Kafka's `acksPending = true`).
    Pending { required_offset: Offset },
    /// Finished with this error code (0 = success).
    Done { error_code: ErrorCode },
}

/// The result of appending to one partition before parking the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendResult {
    /// Appended; the last offset written.
    Appended { last_offset: Offset },
    /// The append itself failed; this partition never waits (Kafka sets
    /// `acksPending = false` for errored appends).
    Failed { error_code: ErrorCode },
}

/// What a DelayedProduce answers: one error code per partition, in the
/// order they were given, and whether it expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceOutcome {
    pub partitions: Vec<(TopicPartition, ErrorCode)>,
    pub expired: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayedProduce {
    /// The request's `timeout_ms` (ProduceRequest field; Kafka's delayMs).
    pub timeout_ms: i64,
    partitions: Vec<(TopicPartition, ProducePartitionStatus)>,
}

impl DelayedProduce {
    pub fn new(timeout_ms: i64, appended: Vec<(TopicPartition, AppendResult)>) -> Self {
        let partitions = appended
            .into_iter()
            .map(|(tp, r)| {
                let status = match r {
                    AppendResult::Appended { last_offset } => ProducePartitionStatus::Pending {
                        required_offset: last_offset + 1,
                    },
                    AppendResult::Failed { error_code } => {
                        ProducePartitionStatus::Done { error_code }
                    }
                };
                (tp, status)
            })
            .collect();
        Self {
            timeout_ms,
            partitions,
        }
    }

    pub fn partitions(&self) -> &[(TopicPartition, ProducePartitionStatus)] {
        &self.partitions
    }

    /// The partitions this op watches (all of them; done ones are harmless).
    pub fn keys(&self) -> Vec<TopicPartition> {
        self.partitions.iter().map(|(tp, _)| tp.clone()).collect()
    }

    pub fn is_satisfied(&self) -> bool {
        self.partitions
            .iter()
            .all(|(_, s)| matches!(s, ProducePartitionStatus::Done { .. }))
    }

    /// Re-checks every pending partition against `lookup` and returns true
    /// when none is pending. A partition with no snapshot yet (its owner's
    /// first note has not arrived) stays pending.
    pub fn try_complete_with<'a>(
        &mut self,
        lookup: impl Fn(&TopicPartition) -> Option<&'a PartitionSnapshot>,
    ) -> bool {
        for (tp, status) in &mut self.partitions {
            if let ProducePartitionStatus::Pending { required_offset } = *status {
                if let Some(snapshot) = lookup(tp) {
                    if let Some(error_code) =
                        check_enough_replicas_reach_offset(snapshot, required_offset)
                    {
                        *status = ProducePartitionStatus::Done { error_code };
                    }
                }
            }
        }
        self.is_satisfied()
    }

    pub fn try_complete(&mut self, view: &PartitionView) -> bool {
        self.try_complete_with(|tp| view.get(tp))
    }

    pub fn on_complete(self) -> ProduceOutcome {
        self.into_outcome(false)
    }

    /// Kafka's `DelayedProduce.onExpiration` + `onComplete`: partitions still
    /// pending answer REQUEST_TIMED_OUT; finished ones keep their code.
    pub fn on_expire(mut self) -> ProduceOutcome {
        for (_, status) in &mut self.partitions {
            if let ProducePartitionStatus::Pending { .. } = status {
                *status = ProducePartitionStatus::Done {
                    error_code: ErrorCode::REQUEST_TIMED_OUT,
                };
            }
        }
        self.into_outcome(true)
    }

    fn into_outcome(self, expired: bool) -> ProduceOutcome {
        let partitions = self
            .partitions
            .into_iter()
            .map(|(tp, s)| match s {
                ProducePartitionStatus::Done { error_code } => (tp, error_code),
                // Only reachable via on_complete of an unsatisfied op, which
                // the purgatory never does; answer as Kafka would on expiry.
                ProducePartitionStatus::Pending { .. } => (tp, ErrorCode::REQUEST_TIMED_OUT),
            })
            .collect();
        ProduceOutcome {
            partitions,
            expired,
        }
    }
}

/// Kafka's `Partition.checkEnoughReplicasReachOffset` (plus
/// `getPartitionOrError`): `None` while still waiting, else the final code.
///
/// - not the leader any more → NOT_LEADER_OR_FOLLOWER (6);
/// - partition unknown → UNKNOWN_TOPIC_OR_PARTITION (3); offline log dir →
///   KAFKA_STORAGE_ERROR (56);
/// - HW ≥ required offset and ISR ≥ `min.insync.replicas` → NONE;
/// - HW ≥ required offset but ISR < `min.insync.replicas` →
///   NOT_ENOUGH_REPLICAS_AFTER_APPEND (20): the data is committed by the
///   shrunken ISR, but not as durably as the producer asked;
/// - HW below the required offset → keep waiting.
pub fn check_enough_replicas_reach_offset(
    snapshot: &PartitionSnapshot,
    required_offset: Offset,
) -> Option<ErrorCode> {
    match snapshot.role {
        PartitionRole::Leader => {}
        PartitionRole::Follower => return Some(ErrorCode::NOT_LEADER_OR_FOLLOWER),
        PartitionRole::Unknown => return Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
        PartitionRole::Offline => return Some(ErrorCode::KAFKA_STORAGE_ERROR),
    }
    if snapshot.high_watermark.offset < required_offset {
        return None;
    }
    if snapshot.isr_size >= snapshot.min_insync_replicas {
        Some(ErrorCode::NONE)
    } else {
        Some(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    }
}

impl DelayedOperation for DelayedProduce {
    type Key = TopicPartition;
    type View = PartitionView;
    type Outcome = ProduceOutcome;

    fn delay_ms(&self) -> i64 {
        self.timeout_ms
    }
    fn try_complete(&mut self, _now_ms: i64, view: &PartitionView) -> bool {
        DelayedProduce::try_complete(self, view)
    }
    fn on_complete(self) -> ProduceOutcome {
        DelayedProduce::on_complete(self)
    }
    fn on_expire(self) -> ProduceOutcome {
        DelayedProduce::on_expire(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::purgatory::view::LogOffsetMetadata;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn snap(role: PartitionRole, hw: Offset, isr: u32, min_isr: u32) -> PartitionSnapshot {
        let mut s = PartitionSnapshot::leader_at(hw, 0);
        s.role = role;
        s.log_end_offset = LogOffsetMetadata::new(hw + 10, 0, 0);
        s.isr_size = isr;
        s.min_insync_replicas = min_isr;
        s
    }

    #[test]
    fn check_enough_replicas_reach_offset_follows_kafka_table() {
        use PartitionRole::*;
        // (case, snapshot, required offset, expected) — Kafka's
        // Partition.checkEnoughReplicasReachOffset / DelayedProduce.tryComplete.
        let rows: &[(&str, PartitionSnapshot, Offset, Option<ErrorCode>)] = &[
            (
                "hw below required: keep waiting",
                snap(Leader, 9, 3, 2),
                10,
                None,
            ),
            (
                "hw reaches required: success",
                snap(Leader, 10, 3, 2),
                10,
                Some(ErrorCode(0)),
            ),
            (
                "hw beyond required: success",
                snap(Leader, 50, 2, 2),
                10,
                Some(ErrorCode(0)),
            ),
            (
                "isr shrank below min.insync.replicas after append",
                snap(Leader, 10, 1, 2),
                10,
                Some(ErrorCode(20)),
            ),
            (
                "isr too small but hw not there yet: keep waiting",
                snap(Leader, 5, 1, 2),
                10,
                None,
            ),
            (
                "leadership lost",
                snap(Follower, 50, 3, 2),
                10,
                Some(ErrorCode(6)),
            ),
            (
                "partition deleted",
                snap(Unknown, 50, 3, 2),
                10,
                Some(ErrorCode(3)),
            ),
            (
                "log dir offline",
                snap(Offline, 50, 3, 2),
                10,
                Some(ErrorCode(56)),
            ),
        ];
        for (case, s, required, want) in rows {
            assert_eq!(
                check_enough_replicas_reach_offset(s, *required),
                *want,
                "{case}"
            );
        }
    }

    #[test]
    fn produce_completes_only_when_every_partition_is_done() {
        let mut op = DelayedProduce::new(
            30_000,
            vec![
                (tp(0), AppendResult::Appended { last_offset: 9 }),
                (tp(1), AppendResult::Appended { last_offset: 4 }),
            ],
        );
        let mut view = PartitionView::new();
        view.update(tp(0), snap(PartitionRole::Leader, 10, 1, 1));
        assert!(!op.try_complete(&view), "tp1 has no snapshot yet");
        view.update(tp(1), snap(PartitionRole::Leader, 4, 1, 1));
        assert!(!op.try_complete(&view), "tp1 hw 4 < required 5");
        view.update(tp(1), snap(PartitionRole::Leader, 5, 1, 1));
        assert!(op.try_complete(&view));
        let out = op.on_complete();
        assert!(!out.expired);
        assert_eq!(
            out.partitions,
            vec![(tp(0), ErrorCode(0)), (tp(1), ErrorCode(0))]
        );
    }

    #[test]
    fn expiry_times_out_pending_partitions_and_keeps_finished_results() {
        let mut op = DelayedProduce::new(
            100,
            vec![
                (tp(0), AppendResult::Appended { last_offset: 9 }),
                (tp(1), AppendResult::Appended { last_offset: 9 }),
                (
                    tp(2),
                    AppendResult::Failed {
                        error_code: ErrorCode(87),
                    },
                ),
                (tp(3), AppendResult::Appended { last_offset: 0 }),
            ],
        );
        let mut view = PartitionView::new();
        view.update(tp(0), snap(PartitionRole::Leader, 10, 1, 1));
        view.update(tp(1), snap(PartitionRole::Leader, 3, 1, 1));
        view.update(tp(3), snap(PartitionRole::Follower, 3, 1, 1));
        assert!(!op.try_complete(&view));
        let out = op.on_expire();
        assert!(out.expired);
        assert_eq!(
            out.partitions,
            vec![
                (tp(0), ErrorCode(0)),
                (tp(1), ErrorCode(7)),
                (tp(2), ErrorCode(87)),
                (tp(3), ErrorCode(6))
            ]
        );
    }

    #[test]
    fn produce_whose_appends_all_failed_is_complete_immediately() {
        let mut op = DelayedProduce::new(
            100,
            vec![(
                tp(0),
                AppendResult::Failed {
                    error_code: ErrorCode(2),
                },
            )],
        );
        assert!(op.try_complete(&PartitionView::new()));
        assert_eq!(op.on_complete().partitions, vec![(tp(0), ErrorCode(2))]);
    }
}
