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
    /// Refused or not sent; [`after_refusal`] says what the leader does.
    Failed(ErrorCode),
}

/// What a leader does with its pending change after the controller
/// refused it (Kafka 3.9's `Partition.handleAlterPartitionError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterRefusal {
    /// The controller surely did not apply it (OPERATION_NOT_ATTEMPTED,
    /// INELIGIBLE_REPLICA): back to the committed ISR; the next check may
    /// propose again.
    Reset,
    /// The leader's state is out of date (FENCED_LEADER_EPOCH,
    /// INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION): the change may
    /// have been written before an earlier answer was lost, so it stays
    /// pending (the HW keeps counting the maximal ISR) until the
    /// controller's next LeaderAndIsr replaces the state.
    AwaitLeaderAndIsr,
    /// Anything else: the same change is sent again.
    Resend,
}

pub fn after_refusal(error: ErrorCode) -> AfterRefusal {
    match error {
        ErrorCode::OPERATION_NOT_ATTEMPTED | ErrorCode::INELIGIBLE_REPLICA => AfterRefusal::Reset,
        ErrorCode::FENCED_LEADER_EPOCH
        | ErrorCode::INVALID_UPDATE_VERSION
        | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION => AfterRefusal::AwaitLeaderAndIsr,
        _ => AfterRefusal::Resend,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fencing_errors_keep_the_change_until_leader_and_isr_others_resend_it() {
        use AfterRefusal::*;
        let rows = [
            (ErrorCode::OPERATION_NOT_ATTEMPTED, Reset),
            (ErrorCode::INELIGIBLE_REPLICA, Reset),
            (ErrorCode::FENCED_LEADER_EPOCH, AwaitLeaderAndIsr),
            (ErrorCode::INVALID_UPDATE_VERSION, AwaitLeaderAndIsr),
            (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, AwaitLeaderAndIsr),
            (ErrorCode::NOT_CONTROLLER, Resend),
            (ErrorCode::REQUEST_TIMED_OUT, Resend),
            (ErrorCode::UNKNOWN_SERVER_ERROR, Resend),
            (ErrorCode::INVALID_REQUEST, Resend),
        ];
        for (error, expected) in rows {
            assert_eq!(after_refusal(error), expected, "{error:?}");
        }
    }
}
