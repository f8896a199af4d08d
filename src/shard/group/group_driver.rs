//! `[drv]` Runs a data shard's group coordinator ([`GroupHost`]): serving
//! [`GroupCall`]s, the timer and appender tasks, loading and unloading
//! `__consumer_offsets` partitions on every snapshot, and the connection
//! side that sends a group's call to its coordinator's shard.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use glommio::channels::local_channel;

use super::group_host::{GroupCall, GroupHost, GroupReply, QueuedAppend};
use super::internal_log::{self, Replayed};
use crate::controller::image::OFFSETS_TOPIC;
use crate::group::coordinator::{Answer, Records};
use crate::group::records::RecordKey;
use crate::protocol::ErrorCode;
use crate::shard::context::{ShardContext, ShardRequest, ShardResponse};
use crate::shard::data_shard::{DataRequest, DataResponse};
use crate::shard::placement::coordinator_partition;
use crate::types::TopicPartition;

/// A call's kind and member, for the debug log.
fn call_name(call: &GroupCall) -> String {
    match call {
        GroupCall::Join(r) => format!("JoinGroup {} {}", r.group_id, r.member_id),
        GroupCall::Sync(r) => format!(
            "SyncGroup {} {} gen {}",
            r.group_id, r.member_id, r.generation
        ),
        GroupCall::Heartbeat(r) => format!(
            "Heartbeat {} {} gen {}",
            r.group_id, r.member_id, r.generation
        ),
        GroupCall::Leave(r) => format!("LeaveGroup {}", r.group_id),
        _ => "other".into(),
    }
}

/// Wait before loading a partition again after a failed load.
const LOAD_RETRY: Duration = Duration::from_secs(1);

/// A shard's side of its group coordinator: serving a group call here,
/// following snapshots, sending a connection's call to the coordinator's
/// shard ([`ShardContext::group_driver`]).
pub struct GroupDriver {
    ctx: Rc<ShardContext>,
}

impl GroupDriver {
    pub fn new(ctx: &Rc<ShardContext>) -> Self {
        Self { ctx: ctx.clone() }
    }

    /// Serve a group call on this shard (its coordinator's partitions).
    pub async fn serve_group_call(&self, call: GroupCall) -> GroupReply {
        let Some(host) = self.ctx.data().map(|d| d.groups.clone()) else {
            return GroupReply::NotCoordinator;
        };
        start_tasks(&self.ctx, &host);
        let now = self.ctx.clock.wall_ms();
        let id = host.next_waiter.get() + 1;
        host.next_waiter.set(id);
        tracing::debug!(waiter = id, call = call_name(&call), "group call");
        let actions = {
            let mut core = host.core.borrow_mut();
            match call {
                GroupCall::List(states) => {
                    let (e, groups) = core.list(&states);
                    return GroupReply::List(e, groups);
                }
                GroupCall::Describe(g) => {
                    return GroupReply::Answer(Answer::Describe(core.describe(&g)));
                }
                GroupCall::TxnMarker {
                    partition,
                    producer_id,
                    commit,
                } => {
                    core.on_txn_marker(partition, producer_id, commit);
                    return GroupReply::Done;
                }
                GroupCall::Join(r) => core.on_join(id, r, now),
                GroupCall::Sync(r) => core.on_sync(id, r, now),
                GroupCall::Heartbeat(r) => core.on_heartbeat(id, r, now),
                GroupCall::Leave(r) => core.on_leave(id, r, now),
                GroupCall::Commit(r) => core.on_commit(id, r, now),
                GroupCall::Fetch(r) => core.on_fetch(id, r),
                GroupCall::DeleteGroups(g) => core.on_delete_groups(id, g, now),
                GroupCall::OffsetDelete {
                    group_id,
                    partitions,
                } => core.on_offset_delete(id, &group_id, partitions),
            }
        };
        let (tx, rx) = local_channel::new_bounded(1);
        host.waiters.borrow_mut().insert(id, tx);
        host.execute(actions);
        let reply = rx.recv().await;
        host.waiters.borrow_mut().remove(&id);
        if let Some(GroupReply::Answer(a)) = &reply {
            tracing::debug!(waiter = id, answer = ?a, "group call answered");
        }
        reply.unwrap_or(GroupReply::NotCoordinator)
    }

    /// After a snapshot is applied: load the offsets partitions this shard
    /// now leads, unload the ones it lost.
    ///
    /// Groups are mapped with the topic's partition count (the cluster
    /// view, Kafka's `groupMetadataTopicPartitionCount`), the count
    /// FindCoordinator and [`Self::group_shard`] use on every broker, never
    /// with how many partitions this broker hosts: with more brokers than
    /// replicas each hosts a subset. Until the cluster view names the
    /// topic (a LeaderAndIsr may come before the controller's
    /// UpdateMetadata) nothing is loaded; the next snapshot loads.
    pub fn on_group_snapshot(&self) {
        let Some(data) = self.ctx.data() else { return };
        let host = data.groups.clone();
        let snapshot = self.ctx.snapshot();
        let me = crate::types::BrokerId(self.ctx.config.broker_id);
        let count = snapshot.cluster_partition_count(OFFSETS_TOPIC);
        let hosted = snapshot.hosted_topic(OFFSETS_TOPIC);
        let mine: BTreeMap<i32, i32> = match (hosted, count) {
            (Some(t), Some(n)) => {
                if host.core.borrow().owned_partitions().is_empty() {
                    host.core.borrow_mut().set_num_partitions(n);
                }
                t.partitions
                    .iter()
                    .filter(|p| {
                        p.leader == me
                            && self.ctx.owner_of(OFFSETS_TOPIC, p.partition) == self.ctx.peer_id()
                    })
                    .map(|p| (p.partition, p.leader_epoch.0))
                    .collect()
            }
            _ => BTreeMap::new(),
        };
        self.forget_deleted_topics(&host, &snapshot);
        let owned: BTreeSet<i32> = host.core.borrow().owned_partitions().into_iter().collect();
        for p in owned.iter().filter(|p| !mine.contains_key(p)) {
            let actions = host.core.borrow_mut().unload(*p);
            host.execute(actions);
        }
        for (p, &epoch) in mine.iter().filter(|(p, _)| !owned.contains(p)) {
            if !host.loading.borrow_mut().insert(*p) {
                continue;
            }
            host.core.borrow_mut().begin_load(*p);
            start_tasks(&self.ctx, &host);
            let ctx = self.ctx.clone();
            let host = host.clone();
            let p = *p;
            glommio::spawn_local(async move {
                let loaded = load_partition(&ctx, &host, p, epoch).await;
                host.loading.borrow_mut().remove(&p);
                let now = ctx.clock.wall_ms();
                match loaded {
                    Ok(records) => {
                        host.core.borrow_mut().finish_load(p, now);
                        tracing::debug!(partition = p, records, "group coordinator loaded offsets partition");
                    }
                    Err(e) => {
                        // Kafka leaves the partition unloaded; clients
                        // retry and a later snapshot tries again.
                        let actions = host.core.borrow_mut().unload(p);
                        host.execute(actions);
                        tracing::warn!(partition = p, error = ?e, "offsets partition load failed; retrying");
                        glommio::timer::sleep(LOAD_RETRY).await;
                        GroupDriver::new(&ctx).on_group_snapshot();
                    }
                }
                host.wake_timer.notify();
            })
            .detach();
        }
    }

    /// Topics of the previous snapshot's cluster view that this one no
    /// longer has (or has with another topic id) were deleted: their
    /// committed offsets go (Kafka's `GroupCoordinator.onPartitionsDeleted`,
    /// which KafkaApis calls on a StopReplica with deletion in ZooKeeper
    /// mode; here every broker sees the controller's UpdateMetadata drop
    /// the topic). The first snapshot only records what exists.
    fn forget_deleted_topics(&self, host: &Rc<GroupHost>, snapshot: &crate::metadata::Snapshot) {
        let now: std::collections::HashMap<std::sync::Arc<str>, uuid::Uuid> = snapshot
            .cluster_topics()
            .map(|t| (t.name.clone(), t.topic_id))
            .collect();
        let before = std::mem::replace(&mut *host.known_topics.borrow_mut(), now);
        let deleted: BTreeSet<String> = {
            let known = host.known_topics.borrow();
            before
                .iter()
                .filter(|(name, id)| match known.get(*name) {
                    None => true,
                    // Re-created under the same name. A nil id (an
                    // UpdateMetadata before v7 carries none) is no sign.
                    Some(now) => !now.is_nil() && !id.is_nil() && now != *id,
                })
                .map(|(name, _)| name.to_string())
                .collect()
        };
        if deleted.is_empty() {
            return;
        }
        tracing::debug!(topics = ?deleted, "deleted topics: removing their committed offsets");
        let actions = host
            .core
            .borrow_mut()
            .on_topics_deleted(&deleted, self.ctx.clock.wall_ms());
        start_tasks(&self.ctx, host);
        host.execute(actions);
    }

    /// Connection side: send `call` to the shard coordinating `group_id`
    /// (the owner of its `__consumer_offsets` partition). NotCoordinator
    /// while that topic does not exist.
    pub async fn ask_group(&self, group_id: &str, call: GroupCall) -> GroupReply {
        match self.group_shard(group_id) {
            Some(owner) => self.ask_shard_group(owner, call).await,
            None => GroupReply::NotCoordinator,
        }
    }

    /// The shard that would coordinate `group_id`: the owner of its
    /// `__consumer_offsets` partition; `None` while that topic does not
    /// exist.
    pub fn group_shard(&self, group_id: &str) -> Option<usize> {
        let n = self.ctx.snapshot().cluster_partition_count(OFFSETS_TOPIC)?;
        Some(
            self.ctx
                .owner_of(OFFSETS_TOPIC, coordinator_partition(group_id, n)),
        )
    }

    /// Send `call` to shard `shard`'s coordinator.
    pub async fn ask_shard_group(&self, shard: usize, call: GroupCall) -> GroupReply {
        if shard == self.ctx.peer_id() {
            // A panic must fail this request, not the shard (as `ask_owner`).
            let run = std::panic::AssertUnwindSafe(self.serve_group_call(call));
            return futures_lite::FutureExt::catch_unwind(run)
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("a group request panicked on its coordinator");
                    GroupReply::NotCoordinator
                });
        }
        let req = ShardRequest::Data(DataRequest::Group(call));
        match self.ctx.call(shard, req).await {
            Ok(ShardResponse::Data(DataResponse::Group(reply))) => reply,
            _ => GroupReply::NotCoordinator,
        }
    }
}

/// Start the timer and appender tasks once.
fn start_tasks(ctx: &Rc<ShardContext>, host: &Rc<GroupHost>) {
    if host.started.replace(true) {
        return;
    }
    let weak = Rc::downgrade(ctx);
    let wake = host.wake_timer.clone();
    glommio::spawn_local(async move {
        loop {
            let Some(ctx) = weak.upgrade() else { return };
            let Some(host) = ctx.data().map(|d| d.groups.clone()) else {
                return;
            };
            if ctx.stopping.is_fired() {
                return;
            }
            let now = ctx.clock.wall_ms();
            let actions = host.core.borrow_mut().on_timer(now);
            if !actions.is_empty() {
                host.execute(actions);
            }
            let next = host.core.borrow().next_deadline();
            drop(host);
            drop(ctx);
            match next {
                Some(at) => {
                    let sleep = Duration::from_millis(u64::try_from(at - now).unwrap_or(0).max(1));
                    let timer = async {
                        glommio::timer::Timer::new(sleep).await;
                    };
                    futures_lite::future::or(timer, wake.notified()).await;
                }
                // Re-check now and then for a stopping shard.
                None => {
                    let idle = async {
                        glommio::timer::Timer::new(Duration::from_secs(1)).await;
                    };
                    futures_lite::future::or(idle, wake.notified()).await;
                }
            }
        }
    })
    .detach();
    let weak = Rc::downgrade(ctx);
    let wake = host.wake_appender.clone();
    glommio::spawn_local(async move {
        loop {
            let Some(ctx) = weak.upgrade() else { return };
            let Some(host) = ctx.data().map(|d| d.groups.clone()) else {
                return;
            };
            let batch = take_batch(&host);
            if batch.is_empty() {
                drop(host);
                drop(ctx);
                wake.notified().await;
                continue;
            }
            let (partition, producer) = (batch[0].0, batch[0].3);
            let records: Records = batch
                .iter()
                .flat_map(|(_, r, _, _)| r.iter().cloned())
                .collect();
            let result = append_acks_all(&ctx, partition, &records, producer).await;
            let now = ctx.clock.wall_ms();
            for (_, _, token, _) in batch {
                let actions = host.core.borrow_mut().on_appended(token, result, now);
                host.execute(actions);
            }
        }
    })
    .detach();
}

/// The queued appends at the front for one partition and one producer
/// (one batch: a transactional batch holds one producer's records only).
fn take_batch(host: &GroupHost) -> Vec<QueuedAppend> {
    let mut q = host.appends.borrow_mut();
    let mut out = Vec::new();
    while let Some(front) = q.front() {
        if out
            .first()
            .is_some_and(|first: &QueuedAppend| (first.0, first.3) != (front.0, front.3))
        {
            break;
        }
        if let Some(item) = q.pop_front() {
            out.push(item);
        }
    }
    out
}

/// Append `records` to `__consumer_offsets` partition `partition` and wait
/// until the HW covers them (acks=all).
async fn append_acks_all(
    ctx: &Rc<ShardContext>,
    partition: i32,
    records: &Records,
    producer: Option<crate::types::TxnWriter>,
) -> ErrorCode {
    let Some(host) = ctx.data().map(|d| d.groups.clone()) else {
        return ErrorCode::NOT_LEADER_OR_FOLLOWER;
    };
    let tp = TopicPartition::new(OFFSETS_TOPIC, partition);
    internal_log::append_acks_all(ctx, tp, records, producer, host.commit_timeout_ms).await
}

/// Replay partition `p` of `__consumer_offsets` from its log start to its
/// HW into the coordinator, as its leader in `leader_epoch`; returns the
/// records replayed.
async fn load_partition(
    ctx: &Rc<ShardContext>,
    host: &GroupHost,
    p: i32,
    leader_epoch: i32,
) -> Result<u64, String> {
    let tp = TopicPartition::new(OFFSETS_TOPIC, p);
    internal_log::replay(ctx, &tp, leader_epoch, |item| {
        let (offset, key, value, txn_producer) = match item {
            Replayed::Marker {
                producer_id,
                commit,
            } => {
                host.core.borrow_mut().on_txn_marker(p, producer_id, commit);
                return true;
            }
            Replayed::Record {
                offset,
                key,
                value,
                txn_producer,
            } => (offset, key, value, txn_producer),
        };
        match (RecordKey::decode(key), txn_producer, value) {
            (Ok(RecordKey::OffsetCommit(k)), Some(pid), Some(v)) => {
                host.core.borrow_mut().load_txn_offset(pid, &k, v);
                true
            }
            (Ok(k), _, _) => {
                host.core.borrow_mut().load_record(p, k, value);
                true
            }
            (Err(e), _, _) => {
                tracing::warn!(partition = p, offset, error = %e, "offsets record key skipped");
                false
            }
        }
    })
    .await
}
