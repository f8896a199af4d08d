//! `[pure]` One replica fetcher's partitions and what it sends (Kafka's
//! `AbstractFetcherThread.partitionStates` and `ReplicaFetcherThread.buildFetch`).
//!
//! Each partition is `Truncating` (ask OffsetForLeaderEpoch first, KIP-101)
//! or `Fetching` from its fetch offset, possibly delayed until a time
//! after an error (`replica.fetch.backoff.ms`). Every round the fetching
//! partitions not delayed are handed to the KIP-227 session
//! ([`super::session`]), which decides what the request lists; partitions
//! are in a stable order. [`fetcher_id`] places a partition on one of a
//! leader's `num.replica.fetchers` fetchers.

use std::collections::BTreeMap;

use crate::group::partition::{java_string_hash_code, kafka_utils_abs};
use crate::protocol::ErrorCode;
use crate::types::TopicPartition;

/// Where one followed partition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchPhase {
    /// Ask the leader where our latest epoch ends (`ask_epoch`: the epoch
    /// of a KIP-279 repeated lookup; `None`: our latest epoch).
    Truncating {
        ask_epoch: Option<i32>,
    },
    Fetching,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionFetchState {
    pub topic_id: uuid::Uuid,
    /// The leader epoch LeaderAndIsr named (`current_leader_epoch`).
    pub leader_epoch: i32,
    pub fetch_offset: i64,
    /// Epoch of the last batch we hold (`last_fetched_epoch`, v12+).
    pub last_fetched_epoch: i32,
    pub log_start_offset: i64,
    pub phase: FetchPhase,
    /// Not fetched before this time (ms, monotonic); 0 = not delayed.
    pub delayed_until_ms: i64,
    /// Kafka's `FetcherLagMetrics` `ConsumerLag`: the leader's high
    /// watermark minus the fetch offset after the last answer (-1 before
    /// the first, as Kafka's gauge starts).
    pub lag: i64,
}

/// The fetch settings (Kafka's `replica.fetch.*` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchSettings {
    pub replica_id: i32,
    /// This broker's epoch (czxid of its `/brokers/ids` znode), -1 unknown.
    pub broker_epoch: i64,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partition_max_bytes: i32,
    pub max_wait_ms: i32,
    pub backoff_ms: i64,
    /// `num.replica.fetchers` (≥ 1): fetchers per leader broker and shard.
    pub num_fetchers: i32,
    /// `replica.socket.receive.buffer.bytes` (-1: the OS default).
    pub socket_receive_buffer_bytes: i32,
    /// `shardlog.replica.fetch.session.enable`: KIP-227 sessions with leaders.
    pub sessions: bool,
}

/// Which of a leader's `num.replica.fetchers` fetchers takes `tp`:
/// Kafka's `AbstractFetcherManager.getFetcherId`,
/// `Utils.abs(31 * topic.hashCode + partition) % numFetchersPerBroker`
/// (Java `int` arithmetic, wrapping).
pub fn fetcher_id(tp: &TopicPartition, num_replica_fetchers: i32) -> i32 {
    let n = num_replica_fetchers.max(1);
    let h = java_string_hash_code(&tp.topic)
        .wrapping_mul(31)
        .wrapping_add(tp.partition);
    kafka_utils_abs(h) % n
}

/// What a partition's answer in a fetch response calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchOutcome {
    /// Append the records (possibly none), take HW and log start offset.
    Append,
    /// The leader says our log diverges (Fetch v12+ `diverging_epoch`):
    /// truncate as the OffsetForLeaderEpoch answer (epoch, end offset).
    Diverging { epoch: i32, end_offset: i64 },
    /// OFFSET_OUT_OF_RANGE: `truncation::on_out_of_range`.
    OutOfRange,
    /// Leadership moved or the leader is not ready (FENCED_LEADER_EPOCH,
    /// NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_*):
    /// back off until new metadata.
    BackOff,
}

/// Kafka's `processFetchRequest` error dispatch for one partition.
pub fn classify(error_code: i16, diverging_epoch: i32, diverging_end_offset: i64) -> FetchOutcome {
    match ErrorCode(error_code) {
        ErrorCode::NONE if diverging_epoch >= 0 => FetchOutcome::Diverging {
            epoch: diverging_epoch,
            end_offset: diverging_end_offset,
        },
        ErrorCode::NONE => FetchOutcome::Append,
        ErrorCode::OFFSET_OUT_OF_RANGE => FetchOutcome::OutOfRange,
        _ => FetchOutcome::BackOff,
    }
}

/// One fetcher's partitions (all led by the same broker).
#[derive(Debug, Default, Clone)]
pub struct FetcherState {
    partitions: BTreeMap<TopicPartition, PartitionFetchState>,
}

impl FetcherState {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<&PartitionFetchState> {
        self.partitions.get(tp)
    }

    pub fn partitions(&self) -> impl Iterator<Item = (&TopicPartition, &PartitionFetchState)> {
        self.partitions.iter()
    }

    /// Follow `tp` at `leader_epoch`: it truncates before fetching (Kafka's
    /// `addPartitions`: a new or re-added partition starts truncating). The
    /// same partition at the same epoch is left as it is.
    pub fn on_add(&mut self, tp: TopicPartition, topic_id: uuid::Uuid, leader_epoch: i32) -> bool {
        if self
            .partitions
            .get(&tp)
            .is_some_and(|s| s.leader_epoch == leader_epoch && s.topic_id == topic_id)
        {
            return false;
        }
        self.partitions.insert(
            tp,
            PartitionFetchState {
                topic_id,
                leader_epoch,
                fetch_offset: -1,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                phase: FetchPhase::Truncating { ask_epoch: None },
                delayed_until_ms: 0,
                lag: -1,
            },
        );
        self.check_invariants();
        true
    }

    pub fn on_remove(&mut self, tp: &TopicPartition) -> Option<PartitionFetchState> {
        self.partitions.remove(tp)
    }

    /// Partitions to ask OffsetForLeaderEpoch about now.
    pub fn to_truncate(&self, now_ms: i64) -> Vec<(TopicPartition, PartitionFetchState)> {
        self.partitions
            .iter()
            .filter(|(_, s)| {
                matches!(s.phase, FetchPhase::Truncating { .. }) && s.delayed_until_ms <= now_ms
            })
            .map(|(tp, s)| (tp.clone(), *s))
            .collect()
    }

    /// Truncation done (or not needed): fetch from `leo`.
    pub fn on_fetch_from(
        &mut self,
        tp: &TopicPartition,
        leo: i64,
        latest_epoch: i32,
        log_start: i64,
    ) {
        if let Some(s) = self.partitions.get_mut(tp) {
            s.phase = FetchPhase::Fetching;
            s.fetch_offset = leo;
            s.last_fetched_epoch = latest_epoch;
            s.log_start_offset = log_start;
        }
        self.check_invariants();
    }

    /// A fetch answer named the leader's `high_watermark`
    /// (`AbstractFetcherThread.processFetchRequest`: lag = max(0, HW -
    /// next fetch offset)).
    pub fn on_lag(&mut self, tp: &TopicPartition, high_watermark: i64) {
        if let Some(s) = self.partitions.get_mut(tp) {
            s.lag = (high_watermark - s.fetch_offset).max(0);
        }
    }

    /// KIP-279: ask again about `epoch`.
    pub fn on_truncate_again(&mut self, tp: &TopicPartition, epoch: i32) {
        if let Some(s) = self.partitions.get_mut(tp) {
            s.phase = FetchPhase::Truncating {
                ask_epoch: Some(epoch),
            };
        }
    }

    /// Go back to truncating (a diverging epoch seen in a fetch, or a
    /// failed truncation to retry).
    pub fn on_retruncate(&mut self, tp: &TopicPartition) {
        if let Some(s) = self.partitions.get_mut(tp) {
            s.phase = FetchPhase::Truncating { ask_epoch: None };
        }
    }

    /// `replica.fetch.backoff.ms` for `tp`.
    pub fn on_delay(&mut self, tp: &TopicPartition, until_ms: i64) {
        if let Some(s) = self.partitions.get_mut(tp) {
            s.delayed_until_ms = until_ms;
        }
    }

    /// Fetching partitions not delayed at `now_ms`, in order.
    pub fn fetchable(&self, now_ms: i64) -> Vec<(TopicPartition, PartitionFetchState)> {
        self.partitions
            .iter()
            .filter(|(_, s)| s.phase == FetchPhase::Fetching && s.delayed_until_ms <= now_ms)
            .map(|(tp, s)| (tp.clone(), *s))
            .collect()
    }

    /// The earliest time a delayed partition becomes ready, if any.
    pub fn next_ready_ms(&self) -> Option<i64> {
        self.partitions
            .values()
            .map(|s| s.delayed_until_ms)
            .filter(|&t| t > 0)
            .min()
    }

    pub fn check_invariants(&self) {
        if cfg!(debug_assertions) {
            for s in self.partitions.values() {
                if s.phase == FetchPhase::Fetching {
                    debug_assert!(s.fetch_offset >= 0, "a fetching partition has an offset");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    #[test]
    fn new_partitions_truncate_before_they_fetch() {
        let mut s = FetcherState::new();
        let id = uuid::Uuid::from_bytes([1; 16]);
        assert!(s.on_add(tp(0), id, 3));
        assert!(!s.on_add(tp(0), id, 3), "same epoch: unchanged");
        assert!(s.fetchable(0).is_empty());
        assert_eq!(s.to_truncate(0).len(), 1);
        s.on_fetch_from(&tp(0), 42, 3, 0);
        assert_eq!(s.fetchable(0)[0].1.fetch_offset, 42);
        // A new leader epoch: truncate again.
        assert!(s.on_add(tp(0), id, 4));
        assert!(s.fetchable(0).is_empty());
    }

    #[test]
    fn delayed_partitions_wait_for_their_backoff() {
        let mut s = FetcherState::new();
        s.on_add(tp(1), uuid::Uuid::nil(), 0);
        s.on_fetch_from(&tp(1), 0, -1, 0);
        s.on_delay(&tp(1), 1_000);
        assert!(s.fetchable(999).is_empty());
        assert_eq!(s.fetchable(1_000).len(), 1);
        assert_eq!(s.next_ready_ms(), Some(1_000));
    }

    #[test]
    fn classify_follows_the_fetcher_thread_error_dispatch() {
        assert_eq!(classify(0, -1, -1), FetchOutcome::Append);
        assert_eq!(
            classify(0, 2, 17),
            FetchOutcome::Diverging {
                epoch: 2,
                end_offset: 17
            }
        );
        assert_eq!(classify(1, -1, -1), FetchOutcome::OutOfRange);
        for code in [6, 74, 76, 3, 100] {
            assert_eq!(classify(code, -1, -1), FetchOutcome::BackOff, "{code}");
        }
    }

    /// Expected ids computed by Kafka's rule in jshell (Java 17):
    /// `Utils.abs(31 * topic.hashCode() + partition) % n`.
    #[test]
    fn fetcher_id_is_kafkas_get_fetcher_id() {
        let table: &[(&str, i32, i32, i32)] = &[
            ("replicated", 0, 1, 0),
            ("replicated", 0, 8, 3),
            ("replicated", 1, 3, 0),
            ("replicated", 2, 2, 1),
            ("replicated", 7, 1, 0),
            ("replicated", 7, 8, 4),
            ("replicated", 31, 3, 0),
            ("t", 0, 2, 0),
            ("t", 1, 1, 0),
            ("t", 1, 8, 5),
            ("t", 2, 3, 1),
            ("t", 7, 2, 1),
            ("t", 31, 1, 0),
            ("t", 31, 8, 3),
            ("orders", 0, 3, 2),
            ("orders", 1, 2, 0),
            ("orders", 2, 1, 0),
            ("orders", 2, 8, 3),
            ("orders", 7, 3, 1),
            ("orders", 31, 2, 0),
            ("__consumer_offsets", 0, 1, 0),
            ("__consumer_offsets", 0, 8, 7),
            ("__consumer_offsets", 1, 3, 1),
            ("__consumer_offsets", 2, 2, 1),
            ("__consumer_offsets", 7, 1, 0),
            ("__consumer_offsets", 7, 8, 0),
            ("__consumer_offsets", 31, 3, 1),
            ("topic-with-long-name-0123456789", 0, 2, 1),
            ("topic-with-long-name-0123456789", 1, 1, 0),
            ("topic-with-long-name-0123456789", 1, 8, 6),
            ("topic-with-long-name-0123456789", 2, 3, 2),
            ("topic-with-long-name-0123456789", 7, 2, 0),
            ("topic-with-long-name-0123456789", 31, 1, 0),
            ("topic-with-long-name-0123456789", 31, 8, 0),
            ("ünïcode", 0, 3, 0),
            ("ünïcode", 1, 2, 1),
            ("ünïcode", 2, 1, 0),
            ("ünïcode", 2, 8, 0),
            ("ünïcode", 7, 3, 2),
            ("ünïcode", 31, 2, 1),
        ];
        for &(topic, p, n, want) in table {
            assert_eq!(
                fetcher_id(&TopicPartition::new(topic, p), n),
                want,
                "{topic}-{p} of {n}"
            );
        }
        assert_eq!(
            fetcher_id(&TopicPartition::new("t", 0), 0),
            0,
            "n < 1 counts as 1"
        );
    }
}
