//! `[pure]` Follower truncation by leader epoch (KIP-101, KIP-279): where a
//! follower cuts its log after the leader answers OffsetForLeaderEpoch.
//!
//! The follower asks for the end offset of its latest epoch. The leader
//! answers (epoch, end offset): the largest epoch it knows ≤ the one asked
//! and where that epoch ends in its log. If the follower knows that epoch
//! too, both logs agree up to min(leader end, follower end of that epoch,
//! LEO) — truncate there, done. If not (KIP-279: diverging histories of
//! several epochs), cut to the end of the follower's largest epoch below
//! the leader's answer and ask again with that epoch, until they agree.
//! Kafka's `AbstractFetcherThread.getOffsetTruncationState` and
//! `LeaderEpochFileCache.endOffsetFor`; HW-only truncation is never used.

pub use super::leader_epoch::{UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};
use crate::types::mutation::{self, Mutation};

/// The end offset of `requested` in an epoch cache `epochs` ((epoch,
/// start offset), ascending) of a log ending at `leo`, as Kafka's
/// `LeaderEpochFileCache.endOffsetFor`:
/// - `requested` is the latest epoch → (it, LEO);
/// - an epoch above `requested` exists → (largest epoch ≤ `requested`,
///   or `requested` itself when none is, start of the next larger epoch);
/// - else (undefined, above every epoch, or an empty cache) →
///   `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`.
pub fn end_offset_for(epochs: &[(i32, i64)], requested: i32, leo: i64) -> (i32, i64) {
    // One rule for both sides: the leader answers OffsetForLeaderEpoch
    // with it, the follower applies it to its own cache.
    let e = super::leader_epoch::end_offset_for(epochs, requested, leo);
    (e.leader_epoch, e.end_offset)
}

/// What the follower does with the leader's OffsetForLeaderEpoch answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncationState {
    /// Truncate the log to this offset (≤ LEO; equal to it means keep all).
    pub offset: i64,
    /// `false`: ask again (KIP-279) with [`Self::next_epoch`].
    pub completed: bool,
    /// The epoch for the next OffsetForLeaderEpoch when not completed.
    pub next_epoch: Option<i32>,
}

/// Kafka's `getOffsetTruncationState`: the leader answered
/// (`leader_epoch`, `leader_end_offset`) for the epoch we asked about;
/// our epoch cache is `epochs`, our log ends at `leo`, and we started
/// fetching at `initial_fetch_offset` (the HW for a follower; used only
/// when the leader knows no offset, as Kafka does).
pub fn offset_truncation_state(
    epochs: &[(i32, i64)],
    leo: i64,
    initial_fetch_offset: i64,
    leader_epoch: i32,
    leader_end_offset: i64,
) -> TruncationState {
    let done = |offset: i64| TruncationState {
        offset: offset.min(leo),
        completed: true,
        next_epoch: None,
    };
    if mutation::active(Mutation::TruncationSkipped) {
        return done(leo);
    }
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET {
        return done(initial_fetch_offset);
    }
    if leader_epoch == UNDEFINED_EPOCH {
        // A pre-KIP-279 leader (OffsetForLeaderEpoch v0): its offset only.
        return done(leader_end_offset);
    }
    match end_offset_for(epochs, leader_epoch, leo) {
        (UNDEFINED_EPOCH, _) => done(leader_end_offset),
        (follower_epoch, follower_end) if follower_epoch != leader_epoch => TruncationState {
            offset: follower_end.min(leo),
            completed: false,
            next_epoch: Some(follower_epoch),
        },
        (_, follower_end) => done(follower_end.min(leader_end_offset)),
    }
}

/// Kafka's `handleOutOfRangeError` decision: the leader's LEO below ours
/// (an unclean election) → truncate to it; else fetch from the larger of
/// our LEO and the leader's log start offset, dropping our whole log if
/// it lies entirely below the leader's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfRangeAction {
    TruncateTo(i64),
    TruncateFullyAndStartAt(i64),
    FetchFrom(i64),
}

pub fn on_out_of_range(
    leo: i64,
    leader_log_end_offset: i64,
    leader_log_start_offset: i64,
) -> OutOfRangeAction {
    if leader_log_end_offset < leo {
        OutOfRangeAction::TruncateTo(leader_log_end_offset)
    } else if leader_log_start_offset > leo {
        OutOfRangeAction::TruncateFullyAndStartAt(leader_log_start_offset)
    } else {
        OutOfRangeAction::FetchFrom(leo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_offset_for_matches_leader_epoch_file_cache() {
        let epochs = [(1, 0), (3, 10), (5, 20)];
        let rows = [
            (-1, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),
            // Below every epoch: the first epoch's start (data long gone).
            (0, (0, 0)),
            (1, (1, 10)),
            (2, (1, 10)),
            (3, (3, 20)),
            (4, (3, 20)),
            (5, (5, 30)),
            (9, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),
        ];
        for (requested, want) in rows {
            assert_eq!(
                end_offset_for(&epochs, requested, 30),
                want,
                "epoch {requested}"
            );
        }
        assert_eq!(
            end_offset_for(&[], 3, 7),
            (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        );
    }

    #[test]
    fn truncation_table_follows_get_offset_truncation_state() {
        // (epochs, leo, initial fetch offset, leader epoch, leader end) → want
        let epochs: &[(i32, i64)] = &[(1, 0), (2, 10), (4, 20)];
        let rows: &[(&str, i64, i32, i64, TruncationState)] = &[
            ("same epoch, leader shorter", 30, 4, 25, done(25)),
            ("same epoch, leader longer: keep ours", 30, 4, 40, done(30)),
            ("older epoch known: its end bounds", 30, 2, 18, done(18)),
            (
                "older epoch known, leader went past its end",
                30,
                2,
                50,
                done(20),
            ),
            (
                "leader epoch unknown to us (3): ask again with 2",
                30,
                3,
                15,
                again(20, 2),
            ),
            (
                "leader epoch below all ours: our first epoch's start",
                30,
                0,
                5,
                done(0),
            ),
            (
                "leader epoch above all ours: leader's offset",
                30,
                7,
                25,
                done(25),
            ),
            (
                "leader knows no offset: initial fetch offset",
                30,
                4,
                -1,
                done(12),
            ),
            (
                "pre-KIP-279 leader (no epoch): its offset",
                30,
                -1,
                8,
                done(8),
            ),
        ];
        for &(name, leo, le, lend, want) in rows {
            assert_eq!(
                offset_truncation_state(epochs, leo, 12, le, lend),
                want,
                "{name}"
            );
        }
        fn done(offset: i64) -> TruncationState {
            TruncationState {
                offset,
                completed: true,
                next_epoch: None,
            }
        }
        fn again(offset: i64, epoch: i32) -> TruncationState {
            TruncationState {
                offset,
                completed: false,
                next_epoch: Some(epoch),
            }
        }
    }

    #[test]
    fn kip_279_repeated_lookup_converges_on_diverging_histories() {
        // Leader history: epochs 1@0, 3@10, 5@30, LEO 40.
        // Follower: 1@0, 2@8, 4@12, LEO 25 (epochs 2 and 4 never reached
        // the leader). Asking 4: the leader answers (3, 30), unknown to
        // us → cut to the end of our epoch 2 (12), ask 2: the leader
        // answers (1, 10), ours ends at 8 → cut to 8, done.
        let leader = [(1, 0), (3, 10), (5, 30)];
        let mut follower: Vec<(i32, i64)> = vec![(1, 0), (2, 8), (4, 12)];
        let mut leo = 25;
        let mut ask = follower.last().unwrap().0;
        for _round in 0..10 {
            let (le, lend) = end_offset_for(&leader, ask, 40);
            let st = offset_truncation_state(&follower, leo, 0, le, lend);
            leo = st.offset;
            follower.retain(|&(_, s)| s < leo);
            if st.completed {
                break;
            }
            ask = st.next_epoch.unwrap();
        }
        assert_eq!(leo, 8);
        assert_eq!(follower, vec![(1, 0)]);
    }

    #[test]
    fn out_of_range_follows_handle_out_of_range_error() {
        assert_eq!(on_out_of_range(50, 40, 0), OutOfRangeAction::TruncateTo(40));
        assert_eq!(
            on_out_of_range(5, 100, 60),
            OutOfRangeAction::TruncateFullyAndStartAt(60)
        );
        assert_eq!(
            on_out_of_range(70, 100, 60),
            OutOfRangeAction::FetchFrom(70)
        );
    }
}
