//! `[pure]` The group coordinator of one shard (Kafka 3.9's classic
//! `GroupCoordinator` + `GroupMetadataManager`): the groups of the `__consumer_offsets` partitions this shard
//! coordinates, their committed offsets, and the timers of the rebalance
//! protocol (DelayedJoin, InitialDelayedJoin, DelayedHeartbeat).
//!
//! Events in, actions out. Every request carries a [`WaiterId`] the driver
//! chose; its answer comes back as an [`Action::Reply`] — at once, or later
//! (a JoinGroup waits for the rebalance, a follower's SyncGroup for the
//! leader's, a commit for its append). Records to write to
//! `__consumer_offsets` come out as [`Action::Append`]; the driver appends
//! them through the log (acks=all on the offsets partition) and reports
//! the outcome with [`Coordinator::on_appended`]. Time is the `now_ms` each
//! call is given; [`Coordinator::next_deadline`] says when the driver must
//! call [`Coordinator::on_timer`].
//!
//! - `membership`: JoinGroup and the join timers.
//! - `session`: SyncGroup, Heartbeat, LeaveGroup, the heartbeat timers.
//! - `offsets`: OffsetCommit, OffsetFetch, OffsetDelete, offset expiry and
//!   loading a partition's records.
//! - `admin`: DescribeGroups, ListGroups, DeleteGroups.
//! - `deleted`: deleted topics lose their offsets (`onPartitionsDeleted`).
//! - `txn_offsets`: the TxnOffsetCommit offsets held until their
//!   transaction's marker (`PendingTxnOffsets`; the marker's and the
//!   loader's entry points, [`Coordinator::on_txn_marker`] and
//!   [`Coordinator::load_txn_offset`], are here).

mod admin;
mod deleted;
mod membership;
mod metrics;
mod offsets;
mod runtime;
mod session;
mod txn_offsets;
mod types;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

pub use types::*;

use super::partition::coordinator_partition;
use super::records::{OffsetCommitKey, OffsetCommitValue};
use super::state::{Group, GroupState};
use crate::protocol::ErrorCode;
use txn_offsets::PendingTxnOffsets;

/// Records for `__consumer_offsets`: (key, value or `None` for a tombstone).
pub type Records = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Identifies one waiting request; chosen by the driver.
pub type WaiterId = u64;

/// What the coordinator asks its driver to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Answer request `WaiterId`.
    Reply(WaiterId, Answer),
    /// Append these records (key, value or tombstone) to
    /// `__consumer_offsets` partition `partition`, then call
    /// [`Coordinator::on_appended`] with `token`.
    ///
    /// `producer`: a TxnOffsetCommit's producer id and epoch; the records
    /// go in a transactional batch of that producer.
    Append {
        partition: i32,
        records: Records,
        token: u64,
        producer: Option<crate::types::TxnWriter>,
    },
}

/// Broker settings the coordinator follows (Kafka's `GroupConfig` and
/// `OffsetConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms` (6000).
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms` (1800000).
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms` (3000).
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size` (Integer.MAX_VALUE).
    pub max_size: i32,
    /// Kafka's `GroupCoordinator.NewMemberJoinTimeoutMs` (5 minutes): how
    /// long a new member's parked JoinGroup keeps it in the group.
    pub new_member_join_timeout_ms: i64,
    /// `offset.metadata.max.bytes` (4096).
    pub offset_metadata_max_bytes: usize,
    /// `offsets.retention.minutes` (10080) in ms.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms` (600000).
    pub offsets_retention_check_interval_ms: i64,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3000,
            max_size: i32::MAX,
            new_member_join_timeout_ms: 300_000,
            offset_metadata_max_bytes: 4096,
            offsets_retention_ms: 10_080 * 60_000,
            offsets_retention_check_interval_ms: 600_000,
        }
    }
}

/// What runs out at a deadline.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// The group's DelayedJoin / InitialDelayedJoin.
    Join { group: String },
    /// A member's (or pending member's) DelayedHeartbeat.
    Heartbeat { group: String, member: String },
    /// The periodic expiry of old offsets (`offsets.retention.check.interval.ms`).
    OffsetExpiry,
}

/// One member's protocol timers and parked requests (Kafka keeps these on
/// `MemberMetadata`; [`Group`] keeps what is stored).
#[derive(Debug, Clone, Default)]
struct MemberRuntime {
    join_waiter: Option<WaiterId>,
    sync_waiter: Option<WaiterId>,
    /// Joined in this rebalance for the first time (`MemberMetadata.isNew`).
    is_new: bool,
    last_heartbeat_ms: i64,
    /// The deadline its heartbeat timer was armed with (older timers are
    /// stale and ignored).
    heartbeat_deadline: i64,
}

/// A group's rebalance timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct JoinTimer {
    deadline: i64,
    /// Kafka's `InitialDelayedJoin` (a rebalance of an empty group): it
    /// never completes early and extends by the delay while new members
    /// come, up to the rebalance timeout.
    initial: Option<InitialDelay>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InitialDelay {
    delay_ms: i64,
    remaining_ms: i64,
}

/// A group and what the coordinator keeps beside its stored state.
#[derive(Debug, Clone)]
struct Entry {
    group: Group,
    partition: i32,
    runtime: BTreeMap<String, MemberRuntime>,
    /// Members told MEMBER_ID_REQUIRED (KIP-394), with their heartbeat
    /// deadline: they must rejoin with the id within the session timeout.
    pending: BTreeMap<String, i64>,
    join_timer: Option<JoinTimer>,
    /// A new member joined during the initial delay (`newMemberAdded`).
    new_member_added: bool,
    offsets: BTreeMap<(String, i32), OffsetCommitValue>,
}

impl Entry {
    fn new(group_id: &str, partition: i32, now_ms: i64) -> Self {
        Self {
            group: Group::new(group_id, now_ms),
            partition,
            runtime: BTreeMap::new(),
            pending: BTreeMap::new(),
            join_timer: None,
            new_member_added: false,
            offsets: BTreeMap::new(),
        }
    }
}

/// Whether this shard coordinates a `__consumer_offsets` partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartitionLoad {
    /// Its records are being replayed (COORDINATOR_LOAD_IN_PROGRESS).
    Loading,
    Loaded,
}

/// What an append was for, to finish when it is done.
#[derive(Debug, Clone)]
enum PendingAppend {
    Commit {
        waiter: WaiterId,
        group: String,
        offsets: Vec<((String, i32), OffsetCommitValue)>,
        /// Partitions refused before the append (their errors).
        refused: Vec<(String, i32, ErrorCode)>,
        /// The member committing, whose heartbeat the commit refreshes.
        member: Option<String>,
        /// TxnOffsetCommit: the producer whose transaction holds the
        /// offsets until its marker (`None`: a plain OffsetCommit).
        txn: Option<i64>,
    },
    /// The leader's SyncGroup assignment of `generation`.
    SyncStore {
        group: String,
        generation: i32,
        assignments: BTreeMap<String, Vec<u8>>,
    },
    /// A static member's rejoin in `Stable` (KIP-345): answer it once its
    /// new member id is stored; on failure revert to `old_id`.
    StaticRejoin {
        group: String,
        waiter: WaiterId,
        instance: String,
        old_id: String,
        new_id: String,
        old_protocols: Vec<(String, Vec<u8>)>,
        /// The leader before the replacement, and whether the member
        /// understands `skip_assignment` (KIP-814).
        leader_before: String,
        skip_supported: bool,
    },
    DeleteGroups {
        waiter: WaiterId,
        results: Vec<(String, ErrorCode)>,
    },
    DeleteOffsets {
        waiter: WaiterId,
        results: Vec<(String, i32, ErrorCode)>,
    },
    /// Nothing waits (an empty group's metadata, expired offsets).
    Quiet,
}

/// The coordinator of one shard's `__consumer_offsets` partitions.
#[derive(Debug)]
pub struct Coordinator {
    config: GroupConfig,
    /// The partition count of `__consumer_offsets` (maps groups to
    /// partitions).
    num_partitions: i32,
    partitions: BTreeMap<i32, PartitionLoad>,
    groups: BTreeMap<String, Entry>,
    timers: BTreeSet<(i64, u64, Timer)>,
    timer_seq: u64,
    pending_appends: BTreeMap<u64, PendingAppend>,
    next_token: u64,
    /// The deadline of the armed offset-expiry timer, if any.
    expiry_deadline: Option<i64>,
    /// TxnOffsetCommit offsets waiting for their transaction's marker
    /// (Kafka's `pendingTransactionalOffsetCommits`).
    txn_offsets: PendingTxnOffsets,
}

/// A commit whose append finished (see `finish_commit`).
struct FinishedCommit {
    pub waiter: WaiterId,
    pub offsets: Vec<((String, i32), OffsetCommitValue)>,
    pub refused: Vec<(String, i32, ErrorCode)>,
    pub member: Option<String>,
    pub txn: Option<i64>,
}

impl Coordinator {
    pub fn new(config: GroupConfig, num_partitions: i32) -> Self {
        Self {
            config,
            num_partitions: num_partitions.max(1),
            partitions: BTreeMap::new(),
            groups: BTreeMap::new(),
            timers: BTreeSet::new(),
            timer_seq: 0,
            pending_appends: BTreeMap::new(),
            next_token: 0,
            expiry_deadline: None,
            txn_offsets: PendingTxnOffsets::default(),
        }
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The `__consumer_offsets` partition of `group_id`.
    pub fn partition_of(&self, group_id: &str) -> i32 {
        coordinator_partition(group_id, self.num_partitions)
    }

    /// The partitions this coordinator has (loaded or loading).
    pub fn owned_partitions(&self) -> Vec<i32> {
        self.partitions.keys().copied().collect()
    }

    /// Whether `partition` is loaded.
    pub fn is_loaded(&self, partition: i32) -> bool {
        self.partitions.get(&partition) == Some(&PartitionLoad::Loaded)
    }

    /// The partition count changed (the topic was re-created); only
    /// meaningful with no partition owned.
    pub fn set_num_partitions(&mut self, n: i32) {
        self.num_partitions = n.max(1);
    }

    /// The earliest deadline a timer waits for.
    pub fn next_deadline(&self) -> Option<i64> {
        self.timers.first().map(|(at, _, _)| *at)
    }

    /// Run every timer due at `now_ms`.
    pub fn on_timer(&mut self, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        while let Some(first) = self.timers.first().cloned() {
            if first.0 > now_ms {
                break;
            }
            self.timers.remove(&first);
            let (deadline, _, timer) = first;
            match timer {
                Timer::Join { group } => self.on_join_deadline(&group, deadline, now_ms, &mut out),
                Timer::Heartbeat { group, member } => {
                    self.on_heartbeat_deadline(&group, &member, deadline, now_ms, &mut out);
                }
                Timer::OffsetExpiry => self.on_offset_expiry(deadline, now_ms, &mut out),
            }
        }
        out
    }

    fn arm(&mut self, at: i64, timer: Timer) {
        self.timer_seq += 1;
        self.timers.insert((at, self.timer_seq, timer));
    }

    fn append(
        &mut self,
        partition: i32,
        records: Records,
        pending: PendingAppend,
        out: &mut Vec<Action>,
    ) {
        self.append_as(partition, records, pending, None, out);
    }

    fn append_as(
        &mut self,
        partition: i32,
        records: Records,
        pending: PendingAppend,
        producer: Option<crate::types::TxnWriter>,
        out: &mut Vec<Action>,
    ) {
        self.next_token += 1;
        let token = self.next_token;
        self.pending_appends.insert(token, pending);
        out.push(Action::Append {
            partition,
            records,
            token,
            producer,
        });
    }

    /// Where a request for `group_id` stands: NOT_COORDINATOR when this
    /// shard does not have its partition, COORDINATOR_LOAD_IN_PROGRESS
    /// while loading it (Kafka's `validateGroupStatus`).
    fn check_coordinator(&self, group_id: &str) -> Result<i32, ErrorCode> {
        let p = self.partition_of(group_id);
        match self.partitions.get(&p) {
            None => Err(ErrorCode::NOT_COORDINATOR),
            Some(PartitionLoad::Loading) => Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS),
            Some(PartitionLoad::Loaded) => Ok(p),
        }
    }

    /// This shard became the coordinator of `partition`: its records are
    /// replayed next ([`Self::load_record`]) until [`Self::finish_load`].
    pub fn begin_load(&mut self, partition: i32) {
        self.partitions.insert(partition, PartitionLoad::Loading);
        self.groups.retain(|_, e| e.partition != partition);
    }

    /// The partition is no longer ours (Kafka's `onResignation`): its
    /// groups go, every request waiting on them gets NOT_COORDINATOR.
    pub fn unload(&mut self, partition: i32) -> Vec<Action> {
        self.partitions.remove(&partition);
        let mut out = Vec::new();
        let gone: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, e)| e.partition == partition)
            .map(|(g, _)| g.clone())
            .collect();
        for g in gone {
            if let Some(e) = self.groups.remove(&g) {
                for (member, rt) in &e.runtime {
                    if let Some(w) = rt.join_waiter {
                        let a = JoinAnswer::error(member, ErrorCode::NOT_COORDINATOR);
                        out.push(Action::Reply(w, Answer::Join(a)));
                    }
                    if let Some(w) = rt.sync_waiter {
                        let a = SyncAnswer::error(ErrorCode::NOT_COORDINATOR);
                        out.push(Action::Reply(w, Answer::Sync(a)));
                    }
                }
            }
        }
        out
    }

    /// The groups this coordinator has, for tests and metrics.
    pub fn group_state(&self, group_id: &str) -> Option<GroupState> {
        self.groups.get(group_id).map(|e| e.group.state())
    }

    /// A driver-side failure of an append: the same as [`Self::on_appended`]
    /// with the error.
    pub fn on_appended(&mut self, token: u64, result: ErrorCode, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(pending) = self.pending_appends.remove(&token) else {
            return out;
        };
        // Kafka's `GroupMetadataManager` maps append errors to what the
        // group clients understand (storeGroup / storeOffsets).
        let is_offsets = matches!(
            pending,
            PendingAppend::Commit { .. } | PendingAppend::DeleteOffsets { .. }
        );
        let mapped = map_append_error(result, is_offsets);
        match pending {
            PendingAppend::Commit {
                waiter,
                group,
                offsets,
                refused,
                member,
                txn,
            } => {
                let done = FinishedCommit {
                    waiter,
                    offsets,
                    refused,
                    member,
                    txn,
                };
                self.finish_commit(&group, done, mapped, now_ms, &mut out);
            }
            PendingAppend::SyncStore {
                group,
                generation,
                assignments,
            } => self.finish_sync_store(&group, generation, assignments, mapped, now_ms, &mut out),
            PendingAppend::StaticRejoin {
                group,
                waiter,
                instance,
                old_id,
                new_id,
                old_protocols,
                leader_before,
                skip_supported,
            } => {
                let rejoin = StaticRejoin {
                    waiter,
                    instance,
                    old_id,
                    new_id,
                    old_protocols,
                    leader_before,
                    skip_supported,
                };
                self.finish_static_rejoin(&group, rejoin, mapped, &mut out);
            }
            PendingAppend::DeleteGroups { waiter, results } => {
                out.push(Action::Reply(waiter, Answer::DeleteGroups(results)));
            }
            PendingAppend::DeleteOffsets { waiter, results } => {
                let results = results
                    .into_iter()
                    .map(|(t, p, e)| (t, p, if e == ErrorCode::NONE { mapped } else { e }))
                    .collect();
                out.push(Action::Reply(waiter, Answer::OffsetDelete(Ok(results))));
            }
            PendingAppend::Quiet => {}
        }
        out
    }

    /// A group's entry, created `Empty` when missing.
    fn entry_or_new(&mut self, group_id: &str, partition: i32, now_ms: i64) -> &mut Entry {
        self.groups
            .entry(group_id.to_owned())
            .or_insert_with(|| Entry::new(group_id, partition, now_ms))
    }

    /// The marker of `producer_id`'s transaction reached `__consumer_offsets`
    /// partition `partition`: its offsets of groups there become committed
    /// (COMMIT) or are dropped (ABORT) (Kafka's `handleTxnCompletion`).
    pub fn on_txn_marker(&mut self, partition: i32, producer_id: i64, commit: bool) {
        let num_partitions = self.num_partitions;
        let here = self.txn_offsets.take_marked(producer_id, |group| {
            coordinator_partition(group, num_partitions) == partition
        });
        if !commit {
            return;
        }
        for (group, tp, value) in here {
            let entry = self.entry_or_new(&group, partition, value.commit_timestamp_ms);
            entry.offsets.insert(tp, value);
        }
    }

    /// Loading: an offset commit record in a transactional batch of
    /// `producer_id` (held until its marker is replayed).
    pub fn load_txn_offset(&mut self, producer_id: i64, key: &OffsetCommitKey, value: &[u8]) {
        match OffsetCommitValue::decode(value) {
            Ok(v) => self.txn_offsets.hold(
                producer_id,
                &key.group,
                [((key.topic.clone(), key.partition), v)],
            ),
            Err(e) => {
                tracing::warn!(group = %key.group, error = %e, "transactional offset record skipped")
            }
        }
    }

    /// Whether `group` has offsets of an open transaction on `tp`
    /// (OffsetFetch v7+ `require_stable` answers UNSTABLE_OFFSET_COMMIT).
    pub fn has_pending_txn_offset(&self, group: &str, tp: &(String, i32)) -> bool {
        self.txn_offsets.contains(group, tp)
    }
}

/// Kafka's mapping of a failed `__consumer_offsets` append to the error a
/// group client gets: `GroupMetadataManager.storeOffsets` for offsets
/// (which passes a timeout past `offsets.commit.timeout.ms` on as
/// REQUEST_TIMED_OUT), `storeGroup` for a group's metadata (which reports
/// a timeout as a rebalance and an oversize group as UNKNOWN_SERVER_ERROR).
fn map_append_error(e: ErrorCode, offsets: bool) -> ErrorCode {
    match e {
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        | ErrorCode::NOT_ENOUGH_REPLICAS
        | ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND => ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::KAFKA_STORAGE_ERROR => {
            ErrorCode::NOT_COORDINATOR
        }
        ErrorCode::REQUEST_TIMED_OUT if !offsets => ErrorCode::REBALANCE_IN_PROGRESS,
        ErrorCode::MESSAGE_TOO_LARGE
        | ErrorCode::RECORD_LIST_TOO_LARGE
        | ErrorCode::INVALID_FETCH_SIZE
            if offsets =>
        {
            ErrorCode::INVALID_COMMIT_OFFSET_SIZE
        }
        ErrorCode::MESSAGE_TOO_LARGE
        | ErrorCode::RECORD_LIST_TOO_LARGE
        | ErrorCode::INVALID_FETCH_SIZE => ErrorCode::UNKNOWN_SERVER_ERROR,
        other => other,
    }
}

/// The key of an offset commit record.
fn offset_key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
    OffsetCommitKey {
        group: group.to_owned(),
        topic: topic.to_owned(),
        partition,
    }
    .encode()
}

/// A static rejoin waiting for its store.
struct StaticRejoin {
    waiter: WaiterId,
    instance: String,
    old_id: String,
    new_id: String,
    old_protocols: Vec<(String, Vec<u8>)>,
    leader_before: String,
    skip_supported: bool,
}
