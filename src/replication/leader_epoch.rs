//! `[pure]` Leader-epoch lookups a partition leader answers (KIP-101,
//! KIP-279, KIP-320): OffsetForLeaderEpoch and a follower fetch's
//! diverging-epoch check.
//!
//! The table is the log's leader-epoch cache (`leader-epoch-checkpoint`):
//! `(epoch, start_offset)` pairs, epochs and start offsets ascending. The
//! lookup follows Kafka's `LeaderEpochFileCache.endOffsetFor`: for a
//! requested epoch E, the largest epoch ≤ E and its end offset (the start
//! offset of the next larger epoch, or the LEO when E is the latest).

use crate::protocol::ErrorCode;
use crate::types::Offset;

/// Kafka's `RecordBatch.NO_PARTITION_LEADER_EPOCH` / `UNDEFINED_EPOCH`.
pub const UNDEFINED_EPOCH: i32 = -1;
/// Kafka's `EpochEndOffset.UNDEFINED_EPOCH_OFFSET`.
pub const UNDEFINED_EPOCH_OFFSET: Offset = -1;

/// An epoch and where it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub leader_epoch: i32,
    pub end_offset: Offset,
}

impl EpochEndOffset {
    pub const UNDEFINED: EpochEndOffset = EpochEndOffset {
        leader_epoch: UNDEFINED_EPOCH,
        end_offset: UNDEFINED_EPOCH_OFFSET,
    };
}

/// Kafka's `LeaderEpochFileCache.endOffsetFor(requestedEpoch, logEndOffset)`:
/// - E undefined (-1), or E past the latest epoch, or an empty table →
///   undefined;
/// - E the latest epoch → (E, LEO);
/// - E below the first epoch → (E, first epoch's start offset): the
///   follower's E never had data here, so it truncates to where ours begins;
/// - otherwise → (largest epoch ≤ E, start offset of the next epoch).
pub fn end_offset_for(
    epochs: &[(i32, Offset)],
    requested_epoch: i32,
    log_end_offset: Offset,
) -> EpochEndOffset {
    if requested_epoch == UNDEFINED_EPOCH {
        return EpochEndOffset::UNDEFINED;
    }
    match epochs.last() {
        Some(&(latest, _)) if latest == requested_epoch => {
            return EpochEndOffset {
                leader_epoch: requested_epoch,
                end_offset: log_end_offset,
            }
        }
        _ => {}
    }
    let Some(&(_, higher_start)) = epochs.iter().find(|(e, _)| *e > requested_epoch) else {
        return EpochEndOffset::UNDEFINED;
    };
    let floor = epochs
        .iter()
        .rev()
        .find(|(e, _)| *e <= requested_epoch)
        .map_or(requested_epoch, |(e, _)| *e);
    EpochEndOffset {
        leader_epoch: floor,
        end_offset: higher_start,
    }
}

/// Kafka's `Partition.fetchRecords` diverging-epoch test (KIP-320): a
/// follower whose last fetched epoch ends, on the leader, before its fetch
/// offset (or is not the epoch the leader knows) must truncate first; the
/// answer is the epoch and end offset to truncate to.
pub fn diverging_epoch(
    epochs: &[(i32, Offset)],
    last_fetched_epoch: i32,
    fetch_offset: Offset,
    log_end_offset: Offset,
) -> Option<EpochEndOffset> {
    if last_fetched_epoch < 0 {
        return None;
    }
    let end = end_offset_for(epochs, last_fetched_epoch, log_end_offset);
    (end.end_offset < fetch_offset || end.leader_epoch < last_fetched_epoch).then_some(end)
}

/// Kafka's `Partition.checkCurrentLeaderEpoch`: a request's
/// `current_leader_epoch` (-1: not given, no check) older than ours is
/// fenced, newer is one we have not heard of yet.
pub fn check_current_leader_epoch(requested: i32, local: i32) -> ErrorCode {
    if requested < 0 || requested == local {
        ErrorCode::NONE
    } else if requested < local {
        ErrorCode::FENCED_LEADER_EPOCH
    } else {
        ErrorCode::UNKNOWN_LEADER_EPOCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: EpochEndOffset = EpochEndOffset::UNDEFINED;

    fn at(leader_epoch: i32, end_offset: Offset) -> EpochEndOffset {
        EpochEndOffset {
            leader_epoch,
            end_offset,
        }
    }

    #[test]
    fn end_offset_for_follows_leader_epoch_file_cache() {
        // epochs 2@10, 4@30, 7@50; LEO 80.
        let table = [(2, 10), (4, 30), (7, 50)];
        let rows: &[(&str, i32, EpochEndOffset)] = &[
            ("undefined epoch", -1, E),
            (
                "below the first epoch: its own epoch, first start",
                1,
                at(1, 10),
            ),
            ("epoch 0 below the first", 0, at(0, 10)),
            ("first epoch ends where the next starts", 2, at(2, 30)),
            ("a gap epoch answers the floor", 3, at(2, 30)),
            ("middle epoch", 4, at(4, 50)),
            ("gap before the latest", 6, at(4, 50)),
            ("the latest epoch ends at the LEO", 7, at(7, 80)),
            ("past the latest: undefined", 8, E),
        ];
        for (case, epoch, want) in rows {
            assert_eq!(end_offset_for(&table, *epoch, 80), *want, "{case}");
        }
    }

    #[test]
    fn current_leader_epoch_older_is_fenced_newer_is_unknown() {
        assert_eq!(check_current_leader_epoch(-1, 5), ErrorCode::NONE);
        assert_eq!(check_current_leader_epoch(5, 5), ErrorCode::NONE);
        assert_eq!(
            check_current_leader_epoch(4, 5),
            ErrorCode::FENCED_LEADER_EPOCH
        );
        assert_eq!(
            check_current_leader_epoch(6, 5),
            ErrorCode::UNKNOWN_LEADER_EPOCH
        );
    }

    #[test]
    fn an_empty_epoch_table_answers_undefined() {
        assert_eq!(end_offset_for(&[], 0, 5), E);
        assert_eq!(end_offset_for(&[], 3, 5), E);
    }

    #[test]
    fn diverging_epoch_only_when_the_followers_epoch_ends_before_its_offset() {
        let table = [(2, 10), (4, 30), (7, 50)];
        let rows: &[(&str, i32, Offset, Option<EpochEndOffset>)] = &[
            ("no last fetched epoch", -1, 40, None),
            ("latest epoch, at the LEO", 7, 80, None),
            ("latest epoch, inside the log", 7, 60, None),
            ("epoch 4 ends at 50: fetch at 50 is fine", 4, 50, None),
            (
                "epoch 4 ends at 50: fetch at 55 diverges",
                4,
                55,
                Some(at(4, 50)),
            ),
            (
                "unknown gap epoch 5: floor 4 < 5 diverges",
                5,
                45,
                Some(at(4, 50)),
            ),
            ("epoch past ours diverges (undefined)", 9, 10, Some(E)),
        ];
        for (case, epoch, offset, want) in rows {
            assert_eq!(
                diverging_epoch(&table, *epoch, *offset, 80),
                *want,
                "{case}"
            );
        }
    }
}
