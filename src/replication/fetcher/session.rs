//! `[pure]` The follower's side of a KIP-227 incremental fetch session
//! with one leader (Kafka's `clients/FetchSessionHandler.java` and
//! `FetchMetadata.java`, as `ReplicaFetcherThread` drives them).
//!
//! Each round the fetcher hands [`FetchSession::build`] every partition it
//! wants to fetch now, with its fetch state. The request that comes out is
//! - full (`session_epoch` 0, Kafka's INITIAL_EPOCH) when no session is
//!   open: every partition is sent and the leader is asked to open a
//!   session; `session_id` is 0, or the old session's id when that one is
//!   to be closed and replaced (`nextCloseExistingAttemptNew`);
//! - incremental (`session_id` S, `session_epoch` N > 0) otherwise: only the
//!   partitions whose fetch state changed since they were last sent (any of
//!   topic id, fetch offset, log start offset, partition max bytes, current
//!   leader epoch, last fetched epoch: `FetchRequest.PartitionData.equals`)
//!   and the new ones; the partitions no longer wanted go in
//!   `forgotten_topics_data`. A partition whose topic id changed is sent
//!   anew and its old id forgotten (Kafka's "replaced").
//!
//! [`FetchSession::on_response`] follows `handleResponse`: a top-level
//! FETCH_SESSION_ID_NOT_FOUND starts over without a session id, any other
//! top-level error closes the session and asks for a new one; a full
//! answer that omits or adds partitions, or an incremental one naming a
//! partition outside the session, is not processed and the next fetch is
//! full; a full answer with `session_id` 0 means the leader declined (or
//! closed) the session, so the next fetch is full again (INITIAL: it asks
//! again each time, as Kafka does); otherwise the session continues at
//! the next epoch (`nextEpoch`: +1, `i32::MAX` wraps to 1, never 0). A
//! partition an incremental answer leaves out had nothing new: its state
//! stays as it is. [`FetchSession::on_error`] (a failed send or a new
//! connection) closes the session and asks for a new one on the next fetch.

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::ErrorCode;
use crate::types::TopicPartition;

/// Kafka's `FetchMetadata.INVALID_SESSION_ID`.
pub const INVALID_SESSION_ID: i32 = 0;
/// Kafka's `FetchMetadata.INITIAL_EPOCH`: a full fetch asking for a session.
pub const INITIAL_EPOCH: i32 = 0;
/// Kafka's `FetchMetadata.FINAL_EPOCH`: a sessionless full fetch.
pub const FINAL_EPOCH: i32 = -1;

/// What one partition's entry in a Fetch request carries (Kafka's
/// `FetchRequest.PartitionData`); two equal values mean "unchanged".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRequest {
    pub topic_id: uuid::Uuid,
    pub fetch_offset: i64,
    pub log_start_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    pub last_fetched_epoch: i32,
}

/// Kafka's `FetchMetadata.nextEpoch`.
pub fn next_epoch(prev: i32) -> i32 {
    if prev < 0 {
        FINAL_EPOCH
    } else if prev == i32::MAX {
        1
    } else {
        prev + 1
    }
}

/// The session fields and partition lists of the next Fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFetch {
    pub session_id: i32,
    pub session_epoch: i32,
    /// Partitions the request lists (all of them when full).
    pub to_send: Vec<(TopicPartition, PartitionRequest)>,
    /// `forgotten_topics_data`: partitions (and the topic id they were sent
    /// with) the leader should drop from the session.
    pub forgotten: Vec<(TopicPartition, uuid::Uuid)>,
}

impl SessionFetch {
    pub fn is_full(&self) -> bool {
        self.session_epoch == INITIAL_EPOCH || self.session_epoch == FINAL_EPOCH
    }
}

/// What [`FetchSession::on_response`] concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionVerdict {
    /// Process the partitions of the answer.
    Process,
    /// The leader lost or refused our session (FETCH_SESSION_ID_NOT_FOUND,
    /// INVALID_FETCH_SESSION_EPOCH): nothing to process, fetch again at
    /// once, full.
    Reset,
    /// Another top-level error, or an answer that does not fit the
    /// session: nothing to process; the next fetch is full.
    Invalid,
}

/// One fetcher's session with its leader.
#[derive(Debug, Clone)]
pub struct FetchSession {
    /// Kafka's `nextMetadata`.
    session_id: i32,
    epoch: i32,
    /// What the leader's session holds for us, as we last sent it.
    partitions: BTreeMap<TopicPartition, PartitionRequest>,
    /// Whether the session's partitions were named by topic id (Fetch v13+).
    by_topic_id: bool,
}

impl Default for FetchSession {
    fn default() -> Self {
        Self::new()
    }
}

impl FetchSession {
    pub fn new() -> Self {
        Self {
            session_id: INVALID_SESSION_ID,
            epoch: INITIAL_EPOCH,
            partitions: BTreeMap::new(),
            by_topic_id: true,
        }
    }

    /// The session id of the next request (0: none).
    pub fn session_id(&self) -> i32 {
        self.session_id
    }

    /// The epoch of the next request.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    pub fn is_full(&self) -> bool {
        self.epoch == INITIAL_EPOCH || self.epoch == FINAL_EPOCH
    }

    /// Whether the session's partitions are named by topic id (v13+).
    pub fn by_topic_id(&self) -> bool {
        self.by_topic_id
    }

    /// With nothing to fetch, whether a request must still go out: an open
    /// session still holds partitions, which it must forget (a partition
    /// backing off after an error leaves the session and comes back as
    /// added, so the leader reads it again). Kafka's
    /// `ReplicaFetcherThread.buildFetch` sends such a forget-only fetch
    /// (it skips the fetch only when nothing is wanted and nothing to forget).
    pub fn must_forget(&self) -> bool {
        !self.is_full() && !self.partitions.is_empty()
    }

    /// The request for `wanted` (every partition to fetch now). `by_topic_id`:
    /// the request names topics by id (v13+); a change of naming cannot
    /// continue a session (Kafka's leader answers FETCH_SESSION_TOPIC_ID_ERROR),
    /// so it closes the session and asks for a new one, full.
    pub fn build(
        &mut self,
        wanted: &[(TopicPartition, PartitionRequest)],
        by_topic_id: bool,
    ) -> SessionFetch {
        if !self.is_full() && by_topic_id != self.by_topic_id {
            self.epoch = INITIAL_EPOCH;
        }
        self.by_topic_id = by_topic_id;
        if self.is_full() {
            self.partitions = wanted.iter().cloned().collect();
            let out = SessionFetch {
                session_id: self.session_id,
                session_epoch: self.epoch,
                to_send: self
                    .partitions
                    .iter()
                    .map(|(t, p)| (t.clone(), *p))
                    .collect(),
                forgotten: Vec::new(),
            };
            self.check_invariants();
            return out;
        }
        let next: BTreeMap<&TopicPartition, &PartitionRequest> =
            wanted.iter().map(|(t, p)| (t, p)).collect();
        let mut to_send = Vec::new();
        let mut forgotten = Vec::new();
        let mut kept = BTreeMap::new();
        for (tp, prev) in &self.partitions {
            match next.get(tp) {
                None => forgotten.push((tp.clone(), prev.topic_id)),
                Some(now) => {
                    let replaced = prev.topic_id != now.topic_id
                        && !prev.topic_id.is_nil()
                        && !now.topic_id.is_nil();
                    // By name (v < 13) a replaced partition is simply sent
                    // again; by id the old id is forgotten too.
                    if replaced && by_topic_id {
                        forgotten.push((tp.clone(), prev.topic_id));
                    }
                    if replaced || prev != *now {
                        to_send.push((tp.clone(), **now));
                    }
                    kept.insert(tp.clone(), **now);
                }
            }
        }
        for (tp, now) in &next {
            if !self.partitions.contains_key(*tp) {
                to_send.push(((*tp).clone(), **now));
                kept.insert((*tp).clone(), **now);
            }
        }
        to_send.sort_by(|a, b| a.0.cmp(&b.0));
        self.partitions = kept;
        let out = SessionFetch {
            session_id: self.session_id,
            session_epoch: self.epoch,
            to_send,
            forgotten,
        };
        self.check_invariants();
        out
    }

    /// The leader's answer to the last [`FetchSession::build`]: its
    /// top-level error, its `session_id`, whether it was throttled and
    /// empty (KIP-219), and the partitions it names.
    pub fn on_response(
        &mut self,
        error_code: i16,
        response_session_id: i32,
        throttle_time_ms: i32,
        answered: &[TopicPartition],
    ) -> SessionVerdict {
        let verdict = self.verdict(error_code, response_session_id, throttle_time_ms, answered);
        self.check_invariants();
        verdict
    }

    fn verdict(
        &mut self,
        error_code: i16,
        response_session_id: i32,
        throttle_time_ms: i32,
        answered: &[TopicPartition],
    ) -> SessionVerdict {
        let code = ErrorCode(error_code);
        if code != ErrorCode::NONE {
            let lost = code == ErrorCode::FETCH_SESSION_ID_NOT_FOUND;
            if lost {
                self.session_id = INVALID_SESSION_ID;
            }
            self.epoch = INITIAL_EPOCH;
            return if lost || code == ErrorCode::INVALID_FETCH_SESSION_EPOCH {
                SessionVerdict::Reset
            } else {
                SessionVerdict::Invalid
            };
        }
        let names: BTreeSet<&TopicPartition> = answered.iter().collect();
        let extra = names.iter().any(|tp| !self.partitions.contains_key(*tp));
        if self.is_full() {
            let omitted = self.partitions.keys().any(|tp| !names.contains(tp));
            let throttled = answered.is_empty() && throttle_time_ms > 0;
            if throttled || omitted || extra {
                self.forget_session();
                return SessionVerdict::Invalid;
            }
            if response_session_id == INVALID_SESSION_ID {
                self.forget_session();
            } else {
                self.session_id = response_session_id;
                self.epoch = next_epoch(INITIAL_EPOCH);
            }
            return SessionVerdict::Process;
        }
        if extra {
            self.epoch = INITIAL_EPOCH;
            return SessionVerdict::Invalid;
        }
        if response_session_id == INVALID_SESSION_ID {
            // The leader closed the session.
            self.forget_session();
        } else {
            self.epoch = next_epoch(self.epoch);
        }
        SessionVerdict::Process
    }

    /// The request failed to go out or come back (Kafka's `handleError`):
    /// the next fetch closes the session and asks for a new one, full.
    /// No session any more: the next fetch is full and asks for a new one.
    fn forget_session(&mut self) {
        self.session_id = INVALID_SESSION_ID;
        self.epoch = INITIAL_EPOCH;
    }

    pub fn on_error(&mut self) {
        self.epoch = INITIAL_EPOCH;
        self.check_invariants();
    }

    pub fn check_invariants(&self) {
        debug_assert!(
            self.epoch >= INITIAL_EPOCH,
            "the follower never sends FINAL_EPOCH"
        );
        debug_assert!(
            self.session_id != INVALID_SESSION_ID || self.epoch == INITIAL_EPOCH,
            "an incremental epoch needs a session"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn id(n: u8) -> uuid::Uuid {
        uuid::Uuid::from_bytes([n; 16])
    }

    fn req(offset: i64) -> PartitionRequest {
        PartitionRequest {
            topic_id: id(1),
            fetch_offset: offset,
            log_start_offset: 0,
            partition_max_bytes: 1 << 20,
            current_leader_epoch: 3,
            last_fetched_epoch: 3,
        }
    }

    fn sent(f: &SessionFetch) -> Vec<(i32, i64)> {
        f.to_send
            .iter()
            .map(|(t, p)| (t.partition, p.fetch_offset))
            .collect()
    }

    fn forgotten(f: &SessionFetch) -> Vec<i32> {
        f.forgotten.iter().map(|(t, _)| t.partition).collect()
    }

    /// A session open at epoch 1 on partitions 0 and 1 (offsets 10, 20).
    fn opened() -> FetchSession {
        let mut s = FetchSession::new();
        let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!((f.session_id, f.session_epoch), (0, INITIAL_EPOCH));
        assert_eq!(
            s.on_response(0, 77, 0, &[tp(0), tp(1)]),
            SessionVerdict::Process
        );
        s
    }

    #[test]
    fn a_full_fetch_opens_the_session_and_the_next_is_incremental() {
        let mut s = opened();
        assert_eq!((s.session_id(), s.epoch()), (77, 1));
        let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert!(!f.is_full());
        assert_eq!((f.session_id, f.session_epoch), (77, 1));
        assert!(f.to_send.is_empty(), "nothing changed: nothing listed");
        assert!(f.forgotten.is_empty());
        assert_eq!(s.on_response(0, 77, 0, &[]), SessionVerdict::Process);
        assert_eq!(s.epoch(), 2, "one epoch per request");
    }

    #[test]
    fn incremental_fetch_lists_changed_and_added_and_forgets_removed() {
        let mut s = opened();
        let mut changed_lso = req(20);
        changed_lso.log_start_offset = 5;
        let f = s.build(&[(tp(1), changed_lso), (tp(2), req(0))], true);
        assert_eq!(sent(&f), vec![(1, 20), (2, 0)]);
        assert_eq!(forgotten(&f), vec![0]);
        s.on_response(0, 77, 0, &[tp(2)]);
        // Each field of PartitionData counts as a change.
        let mut variants = Vec::new();
        for k in 0..6 {
            let mut v = changed_lso;
            match k {
                0 => v.fetch_offset += 1,
                1 => v.log_start_offset += 1,
                2 => v.partition_max_bytes += 1,
                3 => v.current_leader_epoch += 1,
                4 => v.last_fetched_epoch += 1,
                _ => v = changed_lso,
            }
            variants.push((k, v));
        }
        for (k, v) in variants {
            let f = s.build(&[(tp(1), v), (tp(2), req(0))], true);
            let want = if k == 5 {
                vec![]
            } else {
                vec![(1, v.fetch_offset)]
            };
            assert_eq!(sent(&f), want, "field {k}");
            assert!(f.forgotten.is_empty());
            assert_eq!(s.on_response(0, 77, 0, &[]), SessionVerdict::Process);
            // Back to the session's value for the next row.
            s.build(&[(tp(1), changed_lso), (tp(2), req(0))], true);
            s.on_response(0, 77, 0, &[]);
        }
    }

    #[test]
    fn a_partition_left_out_of_an_incremental_answer_keeps_its_state() {
        let mut s = opened();
        s.build(&[(tp(0), req(15)), (tp(1), req(20))], true);
        // The answer names only partition 0: partition 1 had no news.
        assert_eq!(s.on_response(0, 77, 0, &[tp(0)]), SessionVerdict::Process);
        let f = s.build(&[(tp(0), req(15)), (tp(1), req(20))], true);
        assert!(f.to_send.is_empty(), "neither changed since last sent");
        assert!(
            f.forgotten.is_empty(),
            "partition 1 is still in the session"
        );
    }

    #[test]
    fn a_partition_backing_off_is_forgotten_and_added_back() {
        let mut s = opened();
        assert!(
            !FetchSession::new().must_forget(),
            "no session: nothing to forget"
        );
        // Partition 1 backs off: the next request forgets it.
        let f = s.build(&[(tp(0), req(10))], true);
        assert_eq!(forgotten(&f), vec![1]);
        s.on_response(0, 77, 0, &[]);
        // Then partition 0 backs off too: nothing to fetch, but a request
        // must go out to forget it.
        assert!(s.must_forget());
        let f = s.build(&[], true);
        assert_eq!((f.to_send.len(), forgotten(&f)), (0, vec![0]));
        s.on_response(0, 77, 0, &[]);
        assert!(!s.must_forget(), "the session is empty now");
        // Back from the backoff: sent as added, state unchanged or not.
        let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!(sent(&f), vec![(0, 10), (1, 20)]);
    }

    #[test]
    fn a_topic_id_change_forgets_the_old_id_and_sends_the_new_one() {
        let mut s = opened();
        let mut renewed = req(0);
        renewed.topic_id = id(2);
        let f = s.build(&[(tp(0), renewed), (tp(1), req(20))], true);
        assert_eq!(sent(&f), vec![(0, 0)]);
        assert_eq!(f.forgotten, vec![(tp(0), id(1))]);
    }

    #[test]
    fn next_epoch_wraps_to_one_and_never_reaches_zero() {
        for (prev, next) in [
            (0, 1),
            (1, 2),
            (i32::MAX - 1, i32::MAX),
            (i32::MAX, 1),
            (-1, -1),
        ] {
            assert_eq!(next_epoch(prev), next, "{prev}");
        }
        let mut s = opened();
        s.epoch = i32::MAX;
        let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!(f.session_epoch, i32::MAX);
        s.on_response(0, 77, 0, &[]);
        assert_eq!(s.epoch(), 1);
    }

    #[test]
    fn session_errors_reset_to_a_full_fetch() {
        // (top-level error, verdict, next session id)
        let table = [
            (
                ErrorCode::FETCH_SESSION_ID_NOT_FOUND,
                SessionVerdict::Reset,
                0,
            ),
            (
                ErrorCode::INVALID_FETCH_SESSION_EPOCH,
                SessionVerdict::Reset,
                77,
            ),
            (ErrorCode::UNKNOWN_SERVER_ERROR, SessionVerdict::Invalid, 77),
        ];
        for (code, verdict, next_id) in table {
            let mut s = opened();
            s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
            assert_eq!(s.on_response(code.0, 0, 0, &[]), verdict, "{code:?}");
            let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
            assert!(f.is_full(), "{code:?}");
            assert_eq!((f.session_id, f.session_epoch), (next_id, INITIAL_EPOCH));
            assert_eq!(sent(&f), vec![(0, 10), (1, 20)], "full: every partition");
        }
    }

    #[test]
    fn a_leader_that_declines_sessions_gets_full_fetches() {
        let mut s = FetchSession::new();
        for _ in 0..3 {
            let f = s.build(&[(tp(0), req(10))], true);
            assert_eq!((f.session_id, f.session_epoch), (0, INITIAL_EPOCH));
            assert_eq!(sent(&f), vec![(0, 10)]);
            assert_eq!(s.on_response(0, 0, 0, &[tp(0)]), SessionVerdict::Process);
        }
    }

    #[test]
    fn an_answer_that_does_not_fit_the_session_is_not_processed() {
        // A full answer omitting a partition.
        let mut s = FetchSession::new();
        s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!(s.on_response(0, 77, 0, &[tp(0)]), SessionVerdict::Invalid);
        assert!(s.build(&[(tp(0), req(10))], true).is_full());
        // An incremental answer naming a partition outside the session.
        let mut s = opened();
        s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!(s.on_response(0, 77, 0, &[tp(9)]), SessionVerdict::Invalid);
        let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!((f.session_id, f.session_epoch), (77, INITIAL_EPOCH));
        // A throttled, empty full answer (KIP-219).
        let mut s = FetchSession::new();
        s.build(&[(tp(0), req(10))], true);
        assert_eq!(s.on_response(0, 77, 100, &[]), SessionVerdict::Invalid);
    }

    #[test]
    fn a_failed_request_or_a_new_connection_starts_over_full() {
        let mut s = opened();
        s.build(&[(tp(0), req(11)), (tp(1), req(20))], true);
        s.on_error();
        let f = s.build(&[(tp(0), req(11)), (tp(1), req(20))], true);
        assert_eq!((f.session_id, f.session_epoch), (77, INITIAL_EPOCH));
        assert_eq!(sent(&f), vec![(0, 11), (1, 20)]);
    }

    #[test]
    fn a_change_of_topic_naming_starts_a_new_session() {
        let mut s = opened();
        let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], false);
        assert!(f.is_full());
        assert_eq!(f.to_send.len(), 2);
    }

    #[test]
    fn the_leader_closing_the_session_makes_the_next_fetch_full() {
        let mut s = opened();
        s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!(s.on_response(0, 0, 0, &[]), SessionVerdict::Process);
        let f = s.build(&[(tp(0), req(10)), (tp(1), req(20))], true);
        assert_eq!((f.session_id, f.session_epoch), (0, INITIAL_EPOCH));
    }
}
