//! `[pure]` An ISR change a partition leader asks the controller for, and
//! the answer (Kafka's `AlterPartitionManager` item and
//! `Partition.handleAlterPartitionError`, AlterPartition key 56).
//!
//! The owner shard of a partition leader computes the change (the pure
//! ISR rule, [`super::isr`]) and sends an [`IsrChange`] to the control
//! shard, which adds the partition epoch it last accepted from
//! LeaderAndIsr, batches changes into AlterPartition for the active
//! controller, and answers each with [`IsrChangeAnswer`]. A leader has at
//! most one change in flight per partition.

use crate::protocol::ErrorCode;
use crate::types::{BrokerId, LeaderEpoch, TopicPartition};

/// One partition's proposed ISR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    /// The leader epoch the leader proposes under (the controller refuses
    /// a stale one with FENCED_LEADER_EPOCH).
    pub leader_epoch: LeaderEpoch,
    /// The whole new ISR, leader included.
    pub new_isr: Vec<BrokerId>,
}

/// What became of an [`IsrChange`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrChangeAnswer {
    /// The controller wrote it: the ISR now in force and its leader epoch.
    Committed {
        leader_epoch: LeaderEpoch,
        isr: Vec<BrokerId>,
    },
    /// Refused or not sent. The leader drops its pending change; with
    /// [`retriable`] errors it may propose again at its next check, with
    /// the others it waits for the controller's next LeaderAndIsr.
    Failed(ErrorCode),
}

/// Errors after which the leader proposes again (Kafka retries
/// OPERATION_NOT_ATTEMPTED, UNKNOWN_TOPIC_OR_PARTITION and a lost
/// controller; FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION wait for the
/// controller's LeaderAndIsr).
pub fn retriable(error: ErrorCode) -> bool {
    matches!(
        error,
        ErrorCode::OPERATION_NOT_ATTEMPTED
            | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            | ErrorCode::NOT_CONTROLLER
            | ErrorCode::REQUEST_TIMED_OUT
            | ErrorCode::UNKNOWN_SERVER_ERROR
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fencing_errors_wait_for_leader_and_isr_others_retry() {
        assert!(retriable(ErrorCode::OPERATION_NOT_ATTEMPTED));
        assert!(retriable(ErrorCode::NOT_CONTROLLER));
        assert!(!retriable(ErrorCode::FENCED_LEADER_EPOCH));
        assert!(!retriable(ErrorCode::INVALID_UPDATE_VERSION));
        assert!(!retriable(ErrorCode::NONE));
    }
}
