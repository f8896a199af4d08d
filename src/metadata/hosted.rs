//! `[pure]` The partitions a ZooKeeper-mode broker hosts, as far as
//! leadership goes: Kafka 3.9's `ReplicaManager.allPartitions` and
//! `controllerEpoch`, changed only by LeaderAndIsr and StopReplica
//! (`ReplicaManager.becomeLeaderOrFollower`, `stopReplicas`;
//! `KafkaApis.handleLeaderAndIsrRequest`, `handleStopReplicaRequest`).
//! Owned by the control shard; every publication in ZooKeeper mode turns
//! it into `Snapshot::topics` ([`HostedPartitions::topic_states`]), which
//! owner shards open, change in place or close logs for.
//!
//! Rules, in the order Kafka applies them:
//! - a broker epoch other than -1 below this broker's own is
//!   STALE_BROKER_EPOCH (KafkaApis; the request was meant for an earlier
//!   registration of this broker);
//! - a controller epoch below the newest one seen is STALE_CONTROLLER_EPOCH
//!   for the whole request; nothing changes. Otherwise the request's epoch
//!   becomes the newest seen (one fence shared with UpdateMetadata, as
//!   Kafka's single `ReplicaManager.controllerEpoch`);
//! - LeaderAndIsr, per partition, against the hosted one (leader epoch -1
//!   when not hosted, Kafka's `LeaderAndIsr.InitialLeaderEpoch - 1`):
//!   both topic ids known and different → INCONSISTENT_TOPIC_ID; a higher
//!   leader epoch is accepted when this broker is among the replicas
//!   (leader when it is the leader, else follower), UNKNOWN_TOPIC_OR_PARTITION
//!   when it is not; a lower epoch → STALE_CONTROLLER_EPOCH; the same
//!   epoch only assigns a topic id the hosted partition lacked (NONE), is
//!   a follower downgrading from topic ids (NONE), else is
//!   STALE_CONTROLLER_EPOCH. (Kafka also accepts an equal epoch from a
//!   KRaft controller during migration; there is none in ZooKeeper mode.)
//! - StopReplica, per partition: a hosted partition stops when the
//!   request's leader epoch is -2 (deletion), -1 (no epoch, v0–2) or at
//!   least the current one, else FENCED_LEADER_EPOCH; a partition not
//!   hosted stops too (NONE), so its leftover log is deleted when asked.
//!   Stopped partitions are no longer hosted; those with `delete` are
//!   returned for their logs to be deleted.

use std::collections::BTreeMap;
use std::sync::Arc;

use indexmap::IndexMap;
use uuid::Uuid;

use super::leader_and_isr::{
    LeaderAndIsr, LeaderAndIsrPartition, PartitionErrors, StopReplica, EPOCH_DURING_DELETE,
    NO_EPOCH,
};
use super::snapshot::{PartitionState, Reassigning, ReassigningPartitions, TopicState};
use super::update_metadata::UNKNOWN_BROKER_EPOCH;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch};

/// Kafka's `KafkaController.InitialControllerEpoch`.
const INITIAL_CONTROLLER_EPOCH: ControllerEpoch = ControllerEpoch(0);
/// The leader epoch of a partition not hosted yet
/// (`LeaderAndIsr.InitialLeaderEpoch - 1`, Kafka's new `Partition`).
const NOT_HOSTED_EPOCH: LeaderEpoch = LeaderEpoch(-1);

/// One hosted partition: the last LeaderAndIsr state accepted for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedPartition {
    pub state: LeaderAndIsrPartition,
    /// The topic id it was hosted with (none from v0–4 requests).
    pub topic_id: Option<Uuid>,
}

/// This broker's hosted partitions (see the module header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedPartitions {
    controller_epoch: ControllerEpoch,
    partitions: BTreeMap<(String, i32), HostedPartition>,
    /// Topic config overrides (`/config/topics/<t>`) of hosted topics,
    /// once read.
    topic_configs: BTreeMap<String, BTreeMap<String, String>>,
}

impl Default for HostedPartitions {
    fn default() -> Self {
        Self::new()
    }
}

fn stale_broker_epoch(req_epoch: i64, own: Option<i64>) -> bool {
    own.is_some_and(|own| req_epoch != UNKNOWN_BROKER_EPOCH && req_epoch < own)
}

impl HostedPartitions {
    pub fn new() -> Self {
        Self {
            controller_epoch: INITIAL_CONTROLLER_EPOCH,
            partitions: BTreeMap::new(),
            topic_configs: BTreeMap::new(),
        }
    }

    /// Apply a LeaderAndIsr for broker `me`, whose own epoch is
    /// `own_broker_epoch` (`None` before it registered: nothing is stale).
    pub fn on_leader_and_isr(
        &mut self,
        req: &LeaderAndIsr,
        me: BrokerId,
        own_broker_epoch: Option<i64>,
    ) -> PartitionErrors {
        if stale_broker_epoch(req.broker_epoch, own_broker_epoch) {
            return req.error_response(ErrorCode::STALE_BROKER_EPOCH);
        }
        if req.controller_epoch < self.controller_epoch {
            return req.error_response(ErrorCode::STALE_CONTROLLER_EPOCH);
        }
        self.controller_epoch = req.controller_epoch;
        // Kafka answers from a map keyed by partition: one error each.
        let mut errors: IndexMap<(String, i32), ErrorCode> = IndexMap::new();
        for p in &req.partitions {
            let error = self.become_leader_or_follower(p, req.topic_id(&p.topic), me);
            errors.insert((p.topic.clone(), p.partition), error);
        }
        self.check_invariants();
        PartitionErrors {
            error: ErrorCode::NONE,
            partitions: errors.into_iter().map(|((t, p), e)| (t, p, e)).collect(),
        }
    }

    /// One partition of an accepted LeaderAndIsr (see the module header).
    fn become_leader_or_follower(
        &mut self,
        p: &LeaderAndIsrPartition,
        request_id: Option<Uuid>,
        me: BrokerId,
    ) -> ErrorCode {
        let key = (p.topic.clone(), p.partition);
        let hosted = self.partitions.get_mut(&key);
        let current = hosted
            .as_ref()
            .map_or(NOT_HOSTED_EPOCH, |h| h.state.leader_epoch);
        let hosted_id = hosted.as_ref().and_then(|h| h.topic_id);
        if let (Some(ours), Some(theirs)) = (hosted_id, request_id) {
            if ours != theirs {
                return ErrorCode::INCONSISTENT_TOPIC_ID;
            }
        }
        if p.leader_epoch > current {
            if !p.replicas.contains(&me) {
                return ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
            }
            let topic_id = hosted_id.or(request_id);
            self.partitions.insert(
                key,
                HostedPartition {
                    state: p.clone(),
                    topic_id,
                },
            );
            return ErrorCode::NONE;
        }
        if p.leader_epoch < current {
            return ErrorCode::STALE_CONTROLLER_EPOCH;
        }
        match (hosted, request_id) {
            // The controller upgrades a partition to topic ids without
            // bumping its epoch.
            (Some(h), Some(id)) if h.topic_id.is_none() => {
                h.topic_id = Some(id);
                ErrorCode::NONE
            }
            // Downgrading from topic ids: only a follower's fetch state
            // changes in Kafka; nothing here.
            (Some(h), None) if h.topic_id.is_some() && p.leader != me => ErrorCode::NONE,
            _ => ErrorCode::STALE_CONTROLLER_EPOCH,
        }
    }

    /// Apply a StopReplica; the partitions whose logs must be deleted.
    pub fn on_stop_replica(
        &mut self,
        req: &StopReplica,
        own_broker_epoch: Option<i64>,
    ) -> (PartitionErrors, Vec<(String, i32)>) {
        if stale_broker_epoch(req.broker_epoch, own_broker_epoch) {
            return (
                PartitionErrors::top_level(ErrorCode::STALE_BROKER_EPOCH),
                Vec::new(),
            );
        }
        if req.controller_epoch < self.controller_epoch {
            return (
                PartitionErrors::top_level(ErrorCode::STALE_CONTROLLER_EPOCH),
                Vec::new(),
            );
        }
        self.controller_epoch = req.controller_epoch;
        let mut errors: IndexMap<(String, i32), ErrorCode> = IndexMap::new();
        let mut delete = Vec::new();
        for p in &req.partitions {
            let key = (p.topic.clone(), p.partition);
            let stops = match self.partitions.get(&key) {
                None => true,
                Some(h) => {
                    p.leader_epoch == EPOCH_DURING_DELETE
                        || p.leader_epoch == NO_EPOCH
                        || p.leader_epoch >= h.state.leader_epoch
                }
            };
            if !stops {
                errors.insert(key, ErrorCode::FENCED_LEADER_EPOCH);
                continue;
            }
            self.partitions.remove(&key);
            if p.delete && !delete.contains(&key) {
                delete.push(key.clone());
            }
            errors.insert(key, ErrorCode::NONE);
        }
        // Configs are read again if a topic comes back (it may have been
        // deleted and re-created meanwhile).
        let partitions = &self.partitions;
        self.topic_configs
            .retain(|t, _| partitions.keys().any(|(name, _)| name == t));
        self.check_invariants();
        let errors = PartitionErrors {
            error: ErrorCode::NONE,
            partitions: errors.into_iter().map(|((t, p), e)| (t, p, e)).collect(),
        };
        (errors, delete)
    }

    /// Another request (UpdateMetadata) was accepted at `epoch`: the fence
    /// is one for all three, as in Kafka.
    pub fn observe_controller_epoch(&mut self, epoch: ControllerEpoch) {
        self.controller_epoch = self.controller_epoch.max(epoch);
    }

    /// The newest controller epoch accepted so far.
    pub fn controller_epoch(&self) -> ControllerEpoch {
        self.controller_epoch
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&HostedPartition> {
        self.partitions.get(&(topic.to_owned(), partition))
    }

    /// The controller accepted this broker's AlterPartition: the ISR and
    /// partition epoch it wrote replace the hosted ones, unless a newer
    /// LeaderAndIsr (another leader epoch) came meanwhile. True if applied.
    pub fn isr_committed(
        &mut self,
        topic: &str,
        partition: i32,
        leader_epoch: LeaderEpoch,
        isr: &[BrokerId],
        partition_epoch: crate::types::PartitionEpoch,
        leader_recovery_state: i8,
    ) -> bool {
        match self.partitions.get_mut(&(topic.to_owned(), partition)) {
            Some(h) if h.state.leader_epoch == leader_epoch => {
                h.state.isr = isr.to_vec();
                h.state.partition_epoch = h.state.partition_epoch.max(partition_epoch);
                // AlterPartition's answer carries the committed state: a
                // RECOVERING leader (unclean election) is RECOVERED once
                // its first ISR change commits (KIP-704).
                h.state.leader_recovery_state = leader_recovery_state;
                true
            }
            _ => false,
        }
    }

    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// Hosted topics whose configs were not read yet, by name.
    pub fn topics_missing_configs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (t, _) in self.partitions.keys() {
            if !self.topic_configs.contains_key(t) && out.last() != Some(t) {
                out.push(t.clone());
            }
        }
        out
    }

    /// `topic`'s config overrides, read from `/config/topics/<topic>`.
    pub fn set_topic_configs(&mut self, topic: &str, configs: BTreeMap<String, String>) {
        if self.partitions.keys().any(|(t, _)| t == topic) {
            self.topic_configs.insert(topic.to_owned(), configs);
        }
    }

    /// The hosted partitions as `Snapshot::topics`: topics by name,
    /// partitions ascending (any subset of a topic's partitions), leader,
    /// epoch, replicas and ISR as LeaderAndIsr said.
    pub fn topic_states(&self) -> IndexMap<Arc<str>, TopicState> {
        let mut topics: IndexMap<Arc<str>, TopicState> = IndexMap::new();
        for ((topic, _), h) in &self.partitions {
            let name: Arc<str> = Arc::from(topic.as_str());
            let entry = topics.entry(name.clone()).or_insert_with(|| TopicState {
                name,
                topic_id: h.topic_id.unwrap_or(Uuid::nil()),
                // Kafka's `Topic.isInternal`.
                is_internal: topic == "__consumer_offsets" || topic == "__transaction_state",
                partitions: Vec::new(),
                configs: self.topic_configs.get(topic).cloned().unwrap_or_default(),
            });
            entry.partitions.push(PartitionState {
                partition: h.state.partition,
                leader: h.state.leader,
                leader_epoch: h.state.leader_epoch,
                replicas: h.state.replicas.clone(),
                isr: h.state.isr.clone(),
                offline_replicas: Vec::new(),
            });
        }
        topics
    }

    /// The hosted partitions being reassigned: those whose last
    /// LeaderAndIsr named adding or removing replicas (Kafka's
    /// `Partition.assignmentState` is then `OngoingReassignmentState`).
    pub fn reassigning(&self) -> ReassigningPartitions {
        let mut out = ReassigningPartitions::new();
        for ((topic, partition), h) in &self.partitions {
            let s = &h.state;
            if s.adding_replicas.is_empty() && s.removing_replicas.is_empty() {
                continue;
            }
            out.entry(Arc::from(topic.as_str())).or_default().insert(
                *partition,
                Reassigning {
                    adding: s.adding_replicas.clone(),
                    removing: s.removing_replicas.clone(),
                },
            );
        }
        out
    }

    /// Every hosted partition has a leader epoch of at least 0 (a new one
    /// needs one above -1) and configs only for hosted topics.
    pub fn check_invariants(&self) {
        debug_assert!(self
            .partitions
            .values()
            .all(|h| h.state.leader_epoch > NOT_HOSTED_EPOCH));
        debug_assert!(self
            .topic_configs
            .keys()
            .all(|t| self.partitions.keys().any(|(name, _)| name == t)));
    }
}

#[cfg(test)]
mod tests;
