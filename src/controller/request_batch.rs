//! `[pure]` The controller's requests to brokers, gathered while one event
//! is handled and sent together at its end (Kafka 3.9
//! `ControllerBrokerRequestBatch`): per broker one LeaderAndIsr v7 and one
//! StopReplica v4, and one UpdateMetadata v8 carrying the same partition
//! states to every broker named. The content comes from the
//! [`ControllerContext`] when the batch is built, so a partition changed
//! twice in one event is sent once, as it ends up.

use std::collections::{BTreeMap, BTreeSet};

use super::context::ControllerContext;
use crate::metadata::leader_and_isr::{
    LeaderAndIsr, LeaderAndIsrPartition, StopReplica, StopReplicaPartition,
};
use crate::metadata::update_metadata::{AnnouncedPartition, UpdateMetadata, LEADER_DURING_DELETE};
use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, TopicPartition};

/// One request for one broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControllerRequest {
    LeaderAndIsr(LeaderAndIsr),
    UpdateMetadata(UpdateMetadata),
    StopReplica(StopReplica),
}

impl ControllerRequest {
    /// The partitions a StopReplica with `delete` names (what its answer
    /// reports on); empty for the other requests.
    pub fn deleting(&self) -> Vec<TopicPartition> {
        match self {
            Self::StopReplica(r) => r
                .partitions
                .iter()
                .filter(|p| p.delete)
                .map(|p| TopicPartition::new(p.topic.as_str(), p.partition))
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Debug, Default)]
pub struct RequestBatch {
    /// Per broker: the partitions to lead or follow, and whether each is
    /// new to it (`isNew`, sticky once set in a batch).
    leader_and_isr: BTreeMap<BrokerId, BTreeMap<TopicPartition, bool>>,
    update_metadata_brokers: BTreeSet<BrokerId>,
    update_metadata_partitions: BTreeSet<TopicPartition>,
    /// UpdateMetadata carries every partition with a leadership.
    update_metadata_all: bool,
    /// Per broker: the partitions to stop, and whether to delete them.
    stop_replica: BTreeMap<BrokerId, BTreeMap<TopicPartition, bool>>,
}

impl RequestBatch {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.leader_and_isr.is_empty()
            && self.update_metadata_brokers.is_empty()
            && self.stop_replica.is_empty()
    }

    /// LeaderAndIsr for `tp` to `brokers`, and the partition's state to
    /// every registered broker by UpdateMetadata
    /// (`addLeaderAndIsrRequestForBrokers`).
    pub fn add_leader_and_isr(
        &mut self,
        ctx: &ControllerContext,
        brokers: impl IntoIterator<Item = BrokerId>,
        tp: &TopicPartition,
        is_new: bool,
    ) {
        for b in brokers.into_iter().filter(|b| b.0 >= 0) {
            let entry = self
                .leader_and_isr
                .entry(b)
                .or_default()
                .entry(tp.clone())
                .or_insert(false);
            *entry |= is_new;
        }
        self.add_update_metadata(ctx.live_or_shutting_down(), [tp.clone()]);
    }

    /// UpdateMetadata to `brokers` with (at least) `partitions`
    /// (`addUpdateMetadataRequestForBrokers`); no partitions = brokers only.
    pub fn add_update_metadata(
        &mut self,
        brokers: impl IntoIterator<Item = BrokerId>,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) {
        self.update_metadata_brokers.extend(brokers);
        self.update_metadata_partitions.extend(partitions);
    }

    /// UpdateMetadata to `brokers` with every partition that has a
    /// leadership (Kafka: `addUpdateMetadataRequestForBrokers` given no
    /// partitions sends them all).
    pub fn add_update_metadata_all(&mut self, brokers: impl IntoIterator<Item = BrokerId>) {
        self.update_metadata_brokers.extend(brokers);
        self.update_metadata_all = true;
    }

    /// StopReplica for `tp` to `brokers` (`addStopReplicaRequestForBrokers`);
    /// a delete asked once in a batch stays asked.
    pub fn add_stop_replica(
        &mut self,
        brokers: impl IntoIterator<Item = BrokerId>,
        tp: &TopicPartition,
        delete: bool,
    ) {
        for b in brokers.into_iter().filter(|b| b.0 >= 0) {
            let entry = self
                .stop_replica
                .entry(b)
                .or_default()
                .entry(tp.clone())
                .or_insert(false);
            *entry |= delete;
        }
    }

    /// The requests, per registered target broker, in Kafka's order
    /// (LeaderAndIsr, UpdateMetadata, StopReplica). `listener` is the
    /// inter-broker listener LeaderAndIsr's live leaders are given on.
    pub fn build(
        self,
        ctx: &ControllerContext,
        controller_id: BrokerId,
        listener: &str,
    ) -> Vec<(BrokerId, ControllerRequest)> {
        let registered = ctx.live_or_shutting_down();
        let mut out = Vec::new();
        for (broker, parts) in &self.leader_and_isr {
            if registered.contains(broker) {
                if let Some(r) = leader_and_isr_for(ctx, controller_id, listener, *broker, parts) {
                    out.push((*broker, r));
                }
            }
        }
        out.extend(self.update_metadata_requests(ctx, controller_id, &registered));
        for (broker, parts) in &self.stop_replica {
            if registered.contains(broker) {
                out.push((
                    *broker,
                    stop_replica_for(ctx, controller_id, *broker, parts),
                ));
            }
        }
        out
    }

    /// One UpdateMetadata per named (registered) broker, all with the
    /// same partition states.
    fn update_metadata_requests(
        &self,
        ctx: &ControllerContext,
        controller_id: BrokerId,
        registered: &BTreeSet<BrokerId>,
    ) -> Vec<(BrokerId, ControllerRequest)> {
        if self.update_metadata_brokers.is_empty() {
            return Vec::new();
        }
        let all: BTreeSet<TopicPartition>;
        let wanted = if self.update_metadata_all {
            all = ctx.leadership.keys().cloned().collect();
            &all
        } else {
            &self.update_metadata_partitions
        };
        let partitions: Vec<AnnouncedPartition> = wanted
            .iter()
            .filter_map(|tp| announced_partition(ctx, tp))
            .collect();
        let ids = topic_ids(ctx, partitions.iter().map(|p| p.topic.as_str()));
        let live: Vec<_> = ctx.live_brokers.iter().map(|b| b.announced()).collect();
        self.update_metadata_brokers
            .iter()
            .filter(|b| registered.contains(b))
            .map(|&broker| {
                (
                    broker,
                    ControllerRequest::UpdateMetadata(UpdateMetadata {
                        controller_id,
                        is_kraft_controller: false,
                        controller_epoch: ControllerEpoch(ctx.epoch),
                        broker_epoch: ctx.broker_epoch(broker),
                        partition_states: partitions.clone(),
                        topic_ids: ids.clone(),
                        live_brokers: live.clone(),
                    }),
                )
            })
            .collect()
    }
}

/// The LeaderAndIsr for `broker` naming `parts` (with their `isNew`);
/// `None` when none of them has a leadership yet.
fn leader_and_isr_for(
    ctx: &ControllerContext,
    controller_id: BrokerId,
    listener: &str,
    broker: BrokerId,
    parts: &BTreeMap<TopicPartition, bool>,
) -> Option<ControllerRequest> {
    let partitions: Vec<LeaderAndIsrPartition> = parts
        .iter()
        .filter_map(|(tp, is_new)| leader_and_isr_partition(ctx, tp, *is_new))
        .collect();
    if partitions.is_empty() {
        return None;
    }
    let leaders: BTreeSet<BrokerId> = partitions.iter().map(|p| p.leader).collect();
    let live_leaders = ctx
        .live_brokers
        .iter()
        .filter(|b| leaders.contains(&b.id))
        .filter_map(|b| {
            let e = b
                .announced()
                .endpoints
                .into_iter()
                .find(|e| e.listener == listener)?;
            Some((b.id, e.host, e.port))
        })
        .collect();
    Some(ControllerRequest::LeaderAndIsr(LeaderAndIsr {
        controller_id,
        controller_epoch: ControllerEpoch(ctx.epoch),
        broker_epoch: ctx.broker_epoch(broker),
        topic_ids: topic_ids(ctx, partitions.iter().map(|p| p.topic.as_str())),
        partitions,
        live_leaders,
    }))
}

fn stop_replica_for(
    ctx: &ControllerContext,
    controller_id: BrokerId,
    broker: BrokerId,
    parts: &BTreeMap<TopicPartition, bool>,
) -> ControllerRequest {
    let partitions = parts
        .iter()
        .map(|(tp, delete)| StopReplicaPartition {
            topic: tp.topic.to_string(),
            partition: tp.partition,
            // Kafka: `LeaderAndIsr.EpochDuringDelete` (-2) when the topic
            // is being deleted, else the current leader epoch (-1,
            // `NoEpoch`, when none is known).
            leader_epoch: if ctx.topics_to_delete.contains(&*tp.topic) {
                LeaderEpoch(-2)
            } else {
                ctx.leadership
                    .get(tp)
                    .map_or(LeaderEpoch(-1), |l| l.leader_isr.leader_epoch)
            },
            delete: *delete,
        })
        .collect();
    ControllerRequest::StopReplica(StopReplica {
        controller_id,
        controller_epoch: ControllerEpoch(ctx.epoch),
        broker_epoch: ctx.broker_epoch(broker),
        partitions,
    })
}

fn topic_ids<'a>(
    ctx: &ControllerContext,
    topics: impl Iterator<Item = &'a str>,
) -> Vec<(String, uuid::Uuid)> {
    let names: BTreeSet<&str> = topics.collect();
    names
        .into_iter()
        .filter_map(|t| ctx.topic_ids.get(t).map(|id| (t.to_owned(), *id)))
        .collect()
}

fn leader_and_isr_partition(
    ctx: &ControllerContext,
    tp: &TopicPartition,
    is_new: bool,
) -> Option<LeaderAndIsrPartition> {
    let l = ctx.leadership.get(tp)?;
    Some(LeaderAndIsrPartition {
        topic: tp.topic.to_string(),
        partition: tp.partition,
        controller_epoch: l.controller_epoch,
        leader: l.leader_isr.leader,
        leader_epoch: l.leader_isr.leader_epoch,
        isr: l.leader_isr.isr.clone(),
        partition_epoch: l.leader_isr.partition_epoch,
        replicas: ctx.replicas(tp).to_vec(),
        adding_replicas: ctx
            .reassignments
            .get(tp)
            .map_or_else(Vec::new, |m| m.adding.clone()),
        removing_replicas: ctx
            .reassignments
            .get(tp)
            .map_or_else(Vec::new, |m| m.removing.clone()),
        is_new,
        leader_recovery_state: l.leader_isr.leader_recovery_state.value(),
    })
}

/// UpdateMetadata's state of `tp`: a topic queued for deletion is
/// announced with leader -2 (`LeaderAndIsr.LeaderDuringDelete`), which
/// makes brokers drop it (`updateMetadataRequestPartitionInfo`).
fn announced_partition(ctx: &ControllerContext, tp: &TopicPartition) -> Option<AnnouncedPartition> {
    let l = ctx.leadership.get(tp)?;
    let deleting = ctx.topics_to_delete.contains(&*tp.topic);
    Some(AnnouncedPartition {
        topic: tp.topic.to_string(),
        partition: tp.partition,
        controller_epoch: l.controller_epoch,
        leader: if deleting {
            LEADER_DURING_DELETE
        } else {
            l.leader_isr.leader
        },
        leader_epoch: l.leader_isr.leader_epoch,
        isr: l.leader_isr.isr.clone(),
        zk_version: l.leader_isr.partition_epoch,
        replicas: ctx.replicas(tp).to_vec(),
        offline_replicas: ctx.offline_replicas(tp),
    })
}

#[cfg(test)]
mod tests;
