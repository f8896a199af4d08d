//! `[pure]` Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete,
//! the expiry of old offsets, and loading a `__consumer_offsets`
//! partition's records (Kafka 3.9's `GroupCoordinator.handleCommitOffsets`
//! / `handleFetchOffsets` / `handleDeleteOffsets` and
//! `GroupMetadataManager.storeOffsets` / `getOffsets` /
//! `cleanupGroupMetadata` / `loadGroupsAndOffsets`).

use crate::types::mutation::{self, Mutation};
use std::collections::BTreeSet;

use super::{
    offset_key, Action, Answer, CommitRequest, Coordinator, Entry, FetchAnswer, FetchRequest,
    FetchedOffset, FinishedCommit, PartitionLoad, PendingAppend, Records, Timer, WaiterId,
};
use crate::group::records::{
    encode_group_metadata_key, GroupMetadataValue, OffsetCommitValue, RecordKey,
};
use crate::group::state::{Group, GroupState};
use crate::protocol::ErrorCode;

impl Coordinator {
    /// OffsetCommit: the offsets are stored once their records are
    /// appended; until then OffsetFetch shows the old ones.
    pub fn on_commit(&mut self, waiter: WaiterId, req: CommitRequest, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        let all = |e: ErrorCode| -> Answer {
            Answer::Commit(
                req.partitions
                    .iter()
                    .map(|p| (p.topic.clone(), p.partition, e))
                    .collect(),
            )
        };
        let partition = match self.check_coordinator(&req.group_id) {
            Ok(p) => p,
            Err(e) => {
                out.push(Action::Reply(waiter, all(e)));
                return out;
            }
        };
        if req.group_id.is_empty() {
            out.push(Action::Reply(waiter, all(ErrorCode::INVALID_GROUP_ID)));
            return out;
        }
        // Kafka: an unknown group takes a simple commit (generation < 0)
        // and is created `Empty`; any other commit is from a generation the
        // coordinator does not know.
        if !self.groups.contains_key(&req.group_id) && req.generation >= 0 {
            out.push(Action::Reply(waiter, all(ErrorCode::ILLEGAL_GENERATION)));
            return out;
        }
        let max_metadata = self.config.offset_metadata_max_bytes;
        let entry = self.entry_or_new(&req.group_id, partition, now_ms);
        if let Err(e) = entry.group.validate_offset_commit(
            req.generation,
            &req.member_id,
            req.group_instance_id.as_deref(),
        ) {
            out.push(Action::Reply(waiter, all(e)));
            self.drop_if_unused(&req.group_id);
            return out;
        }
        let mut results = Vec::with_capacity(req.partitions.len());
        let mut records = Vec::new();
        let mut offsets = Vec::new();
        for p in &req.partitions {
            let metadata = p.metadata.clone().unwrap_or_default();
            if metadata.len() > max_metadata {
                results.push((
                    p.topic.clone(),
                    p.partition,
                    ErrorCode::OFFSET_METADATA_TOO_LARGE,
                ));
                continue;
            }
            let value = OffsetCommitValue {
                offset: p.offset,
                leader_epoch: p.leader_epoch,
                metadata,
                // Kafka's GroupCoordinatorAdapter.commitOffsets: v1's own
                // timestamp when given, else now.
                commit_timestamp_ms: if p.commit_timestamp_ms == -1 {
                    now_ms
                } else {
                    p.commit_timestamp_ms
                },
                expire_timestamp_ms: if req.retention_ms >= 0 {
                    now_ms.saturating_add(req.retention_ms)
                } else {
                    -1
                },
            };
            records.push((
                offset_key(&req.group_id, &p.topic, p.partition),
                Some(value.encode()),
            ));
            offsets.push(((p.topic.clone(), p.partition), value));
            results.push((p.topic.clone(), p.partition, ErrorCode::NONE));
        }
        if records.is_empty() {
            out.push(Action::Reply(waiter, Answer::Commit(results)));
            self.drop_if_unused(&req.group_id);
            return out;
        }
        let member = entry
            .group
            .has_member(&req.member_id)
            .then(|| req.member_id.clone());
        // The errors decided now travel with the append; the stored ones
        // take the append's outcome.
        let refused: Vec<(String, i32, ErrorCode)> = results
            .into_iter()
            .filter(|(_, _, e)| *e != ErrorCode::NONE)
            .collect();
        self.append_as(
            partition,
            records,
            PendingAppend::Commit {
                waiter,
                group: req.group_id.clone(),
                offsets,
                refused,
                member,
                txn: req.txn.map(|w| w.producer_id),
            },
            req.txn,
            &mut out,
        );
        out
    }

    pub(super) fn finish_commit(
        &mut self,
        group_id: &str,
        done: FinishedCommit,
        error: ErrorCode,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let FinishedCommit {
            waiter,
            offsets,
            refused,
            member,
            txn,
        } = done;
        let mut results: Vec<(String, i32, ErrorCode)> = offsets
            .iter()
            .map(|((t, p), _)| (t.clone(), *p, error))
            .collect();
        results.extend(refused);
        if let (Some(producer_id), ErrorCode::NONE) = (txn, error) {
            // Held until the transaction's marker (`on_txn_marker`).
            self.txn_offsets.hold(producer_id, group_id, offsets);
        } else if error == ErrorCode::NONE {
            if let Some(entry) = self.groups.get_mut(group_id) {
                for (tp, value) in offsets {
                    entry.offsets.insert(tp, value);
                }
                // A commit from a stable member counts as its heartbeat.
                if let Some(m) = member.filter(|_| entry.group.state() == GroupState::Stable) {
                    let session = entry
                        .group
                        .member(&m)
                        .map_or(0, |x| i64::from(x.session_timeout_ms));
                    if let Some(rt) = entry.runtime.get_mut(&m) {
                        rt.last_heartbeat_ms = now_ms;
                        rt.heartbeat_deadline = now_ms + session;
                        let at = rt.heartbeat_deadline;
                        self.arm_heartbeat(group_id, &m, at);
                    }
                }
            }
        }
        out.push(Action::Reply(waiter, Answer::Commit(results)));
    }

    /// OffsetFetch of one group (Kafka's `handleFetchOffsets`): a partition
    /// without a commit answers offset -1; an unknown group answers -1 for
    /// every partition asked, and nothing when all were asked.
    pub fn on_fetch(&mut self, waiter: WaiterId, req: FetchRequest) -> Vec<Action> {
        let answer = match self.check_coordinator(&req.group_id) {
            Err(e) => FetchAnswer {
                error: e,
                partitions: Vec::new(),
            },
            Ok(_) => self.fetch(&req),
        };
        vec![Action::Reply(waiter, Answer::Fetch(answer))]
    }

    fn fetch(&self, req: &FetchRequest) -> FetchAnswer {
        let entry = self.groups.get(&req.group_id);
        let found = |tp: &(String, i32)| -> FetchedOffset {
            if req.require_stable && self.has_pending_txn_offset(&req.group_id, tp) {
                return FetchedOffset {
                    topic: tp.0.clone(),
                    partition: tp.1,
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error: ErrorCode::UNSTABLE_OFFSET_COMMIT,
                };
            }
            match entry.and_then(|e| e.offsets.get(tp)) {
                Some(v) => FetchedOffset {
                    topic: tp.0.clone(),
                    partition: tp.1,
                    offset: v.offset,
                    leader_epoch: v.leader_epoch,
                    metadata: v.metadata.clone(),
                    error: ErrorCode::NONE,
                },
                None => FetchedOffset {
                    topic: tp.0.clone(),
                    partition: tp.1,
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error: ErrorCode::NONE,
                },
            }
        };
        let partitions = match &req.partitions {
            Some(list) => list.iter().map(found).collect(),
            None => entry
                .map(|e| e.offsets.keys().map(found).collect())
                .unwrap_or_default(),
        };
        FetchAnswer {
            error: ErrorCode::NONE,
            partitions,
        }
    }

    /// OffsetDelete (KIP-496): a group's committed offsets of topics it is
    /// not subscribed to are removed (tombstones).
    pub fn on_offset_delete(
        &mut self,
        waiter: WaiterId,
        group_id: &str,
        partitions: Vec<(String, i32)>,
    ) -> Vec<Action> {
        let mut out = Vec::new();
        let reply = |out: &mut Vec<Action>, a: Result<Vec<(String, i32, ErrorCode)>, ErrorCode>| {
            out.push(Action::Reply(waiter, Answer::OffsetDelete(a)));
        };
        let partition = match self.check_coordinator(group_id) {
            Ok(p) => p,
            Err(e) => {
                reply(&mut out, Err(e));
                return out;
            }
        };
        let Some(entry) = self.groups.get_mut(group_id) else {
            reply(&mut out, Err(ErrorCode::GROUP_ID_NOT_FOUND));
            return out;
        };
        if entry.group.state() == GroupState::Dead {
            reply(&mut out, Err(ErrorCode::GROUP_ID_NOT_FOUND));
            return out;
        }
        // Kafka: a non-empty group that is not a consumer group (no
        // subscriptions to read) keeps all its offsets.
        let consumer = entry.group.protocol_type.as_deref() == Some("consumer");
        if !entry.group.is_empty() && !consumer {
            reply(&mut out, Err(ErrorCode::NON_EMPTY_GROUP));
            return out;
        }
        let subscribed = subscribed_topics(entry);
        let mut results = Vec::with_capacity(partitions.len());
        let mut records = Vec::new();
        for (topic, p) in partitions {
            if subscribed.contains(&topic) {
                results.push((topic, p, ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC));
                continue;
            }
            if entry.offsets.remove(&(topic.clone(), p)).is_some() {
                records.push((offset_key(group_id, &topic, p), None));
            }
            results.push((topic, p, ErrorCode::NONE));
        }
        if records.is_empty() {
            reply(&mut out, Ok(results));
            return out;
        }
        self.append(
            partition,
            records,
            PendingAppend::DeleteOffsets { waiter, results },
            &mut out,
        );
        out
    }

    /// Kafka's `cleanupGroupMetadata` on its timer: offsets of groups
    /// without members expire `offsets.retention.minutes` after the group
    /// became empty (or after their own expiry, commit v1); a group left
    /// with nothing becomes `Dead` and is removed.
    pub(super) fn on_offset_expiry(&mut self, deadline: i64, now_ms: i64, out: &mut Vec<Action>) {
        if self.expiry_deadline != Some(deadline) {
            return;
        }
        self.expiry_deadline = None;
        let retention = self.config.offsets_retention_ms;
        let mut by_partition: std::collections::BTreeMap<i32, Records> = Default::default();
        let mut dead = Vec::new();
        for (group_id, entry) in &mut self.groups {
            if !self.partitions.contains_key(&entry.partition) {
                continue;
            }
            let expired = expired_offsets(entry, retention, now_ms);
            let records = by_partition.entry(entry.partition).or_default();
            for tp in expired {
                entry.offsets.remove(&tp);
                records.push((offset_key(group_id, &tp.0, tp.1), None));
            }
            if entry.group.state() == GroupState::Empty
                && entry.offsets.is_empty()
                && entry.pending.is_empty()
            {
                let _ = entry.group.transition_to(GroupState::Dead, now_ms);
                records.push((encode_group_metadata_key(group_id), None));
                dead.push(group_id.clone());
            }
        }
        for g in dead {
            self.groups.remove(&g);
        }
        for (partition, records) in by_partition {
            if !records.is_empty() {
                self.append(partition, records, PendingAppend::Quiet, out);
            }
        }
        self.arm_offset_expiry(now_ms);
    }

    fn arm_offset_expiry(&mut self, now_ms: i64) {
        if self.expiry_deadline.is_some() || self.partitions.is_empty() {
            return;
        }
        let at = now_ms + self.config.offsets_retention_check_interval_ms.max(1);
        self.expiry_deadline = Some(at);
        self.arm(at, Timer::OffsetExpiry);
    }

    /// Replay one record of a partition being loaded, in log order: the
    /// last value of a key wins; a tombstone removes it.
    pub fn load_record(&mut self, partition: i32, key: RecordKey, value: Option<&[u8]>) {
        match key {
            RecordKey::OffsetCommit(_) if mutation::active(Mutation::CommitsNotLoaded) => {}
            RecordKey::OffsetCommit(k) => {
                let decoded = value.map(OffsetCommitValue::decode);
                match decoded {
                    Some(Ok(v)) => {
                        let entry = self.entry_or_new(&k.group, partition, 0);
                        entry.offsets.insert((k.topic, k.partition), v);
                    }
                    None => {
                        if let Some(e) = self.groups.get_mut(&k.group) {
                            e.offsets.remove(&(k.topic, k.partition));
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!(group = %k.group, error = %e, "offset commit record skipped");
                    }
                }
            }
            RecordKey::GroupMetadata { group } => match value.map(GroupMetadataValue::decode) {
                Some(Ok(v)) => {
                    let entry = self.entry_or_new(&group, partition, 0);
                    entry.group = Group::restore(&group, &v, v.current_state_timestamp_ms.max(0));
                    entry.runtime.clear();
                }
                None => {
                    // A removed group: its offsets were tombstoned before.
                    if let Some(e) = self.groups.get_mut(&group) {
                        e.group = Group::new(&group, 0);
                        e.runtime.clear();
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!(group = %group, error = %e, "group metadata record skipped");
                }
            },
        }
    }

    /// The partition's records are all replayed: its groups serve
    /// requests, members of loaded groups must heartbeat within their
    /// session timeout (Kafka schedules every loaded member's expiry).
    pub fn finish_load(&mut self, partition: i32, now_ms: i64) {
        self.partitions.insert(partition, PartitionLoad::Loaded);
        let mut heartbeats = Vec::new();
        let mut unused = Vec::new();
        for (group_id, entry) in &mut self.groups {
            if entry.partition != partition {
                continue;
            }
            for m in entry.group.members() {
                let at = now_ms + i64::from(m.session_timeout_ms);
                let rt = entry.runtime.entry(m.member_id.clone()).or_default();
                rt.last_heartbeat_ms = now_ms;
                rt.heartbeat_deadline = at;
                heartbeats.push((group_id.clone(), m.member_id.clone(), at));
            }
            if entry.group.is_empty() && entry.offsets.is_empty() && entry.group.generation == 0 {
                unused.push(group_id.clone());
            }
        }
        for g in unused {
            self.groups.remove(&g);
        }
        for (g, m, at) in heartbeats {
            self.arm_heartbeat(&g, &m, at);
        }
        self.arm_offset_expiry(now_ms);
    }
}

/// Offsets of `entry` past their retention (Kafka's
/// `GroupMetadata.removeExpiredOffsets`): only a group without members
/// (`Empty`) loses offsets, `retention` after it became empty — or a
/// commit's own expiry (v1 records) — and a consumer group in `Stable`
/// loses those of topics no member subscribes to any more.
fn expired_offsets(entry: &Entry, retention: i64, now_ms: i64) -> Vec<(String, i32)> {
    // Only -1 means "no expiry of its own" (Kafka's
    // `OffsetCommitRequest.DEFAULT_TIMESTAMP`); any other value, negative
    // ones included, is one (already past when negative).
    let own_expiry = |v: &OffsetCommitValue| v.has_own_expiry() && v.expire_timestamp_ms <= now_ms;
    match entry.group.state() {
        // A group that only stores offsets (no protocol type: simple
        // commits) counts from each commit; a consumer group from when it
        // became Empty (Kafka's `currentStateTimestamp`).
        GroupState::Empty => {
            let simple = entry.group.protocol_type.is_none();
            entry
                .offsets
                .iter()
                .filter(|(_, v)| {
                    let base = if simple {
                        v.commit_timestamp_ms
                    } else {
                        entry.group.state_since_ms()
                    };
                    own_expiry(v)
                        || (!v.has_own_expiry() && base.saturating_add(retention) <= now_ms)
                })
                .map(|(tp, _)| tp.clone())
                .collect()
        }
        GroupState::Stable if entry.group.protocol_type.as_deref() == Some("consumer") => {
            let subscribed = subscribed_topics(entry);
            entry
                .offsets
                .iter()
                .filter(|(tp, v)| {
                    own_expiry(v)
                        || (!subscribed.contains(&tp.0)
                            && !v.has_own_expiry()
                            && v.commit_timestamp_ms.saturating_add(retention) <= now_ms)
                })
                .map(|(tp, _)| tp.clone())
                .collect()
        }
        _ => entry
            .offsets
            .iter()
            .filter(|(_, v)| own_expiry(v))
            .map(|(tp, _)| tp.clone())
            .collect(),
    }
}

/// The topics a consumer group's members subscribe to, read from their
/// `ConsumerProtocolSubscription` metadata (version int16, then an array
/// of topic names); metadata that does not parse names none.
fn subscribed_topics(entry: &Entry) -> BTreeSet<String> {
    let protocol = entry.group.protocol.clone().unwrap_or_default();
    entry
        .group
        .members()
        .filter_map(|m| m.metadata_for(&protocol))
        .flat_map(parse_subscription_topics)
        .collect()
}

/// The topics of a `ConsumerProtocolSubscription` (v0–v3 share the
/// leading `version: int16, topics: [string]`; flexible versions are not
/// used by the classic protocol).
pub fn parse_subscription_topics(metadata: &[u8]) -> Vec<String> {
    let mut topics = Vec::new();
    let Some(rest) = metadata.get(2..) else {
        return topics;
    };
    let Some(n) = rest
        .get(..4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    else {
        return topics;
    };
    let mut at = 4usize;
    for _ in 0..n.max(0) {
        let Some(len) = rest
            .get(at..at + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
        else {
            return Vec::new();
        };
        at += 2;
        let Ok(len) = usize::try_from(len) else {
            return Vec::new();
        };
        let Some(name) = rest.get(at..at + len) else {
            return Vec::new();
        };
        at += len;
        topics.push(String::from_utf8_lossy(name).into_owned());
    }
    topics
}
