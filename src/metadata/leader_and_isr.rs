//! `[pure]` LeaderAndIsr (API key 4) and StopReplica (API key 5) as the
//! broker and the controller see them, independent of the wire version,
//! and the answer to either ([`PartitionErrors`]).
//!
//! A ZooKeeper-mode controller sends LeaderAndIsr to tell a broker which
//! partitions it hosts and in which role (leader or follower, the leader
//! epoch, the replicas and the ISR), and StopReplica to make it stop
//! hosting them (deleting their logs when the topic is deleted or the
//! replica moved away). What the broker does with them is
//! [`super::hosted::HostedPartitions`]. Field meanings and versions follow
//! Kafka 3.9's `LeaderAndIsrRequest.json`, `StopReplicaRequest.json` and
//! their responses (clients/src/main/resources/common/message/):
//! - LeaderAndIsr v0–1 list partition states ungrouped (topic inline), v2+
//!   group them by topic and carry the broker epoch, v3+ adding / removing
//!   replicas, v1+ `IsNew`, v5+ topic ids and `Type`, v6+ the leader
//!   recovery state, v7+ `isKRaftController`;
//! - StopReplica v0 lists (topic, partition) pairs, v1–2 topics with
//!   partition indexes and carry the broker epoch, both with one
//!   `DeletePartitions` flag for the whole request; v3+ carry a leader
//!   epoch and a delete flag per partition (KIP-570); older versions mean
//!   "no epoch" ([`NO_EPOCH`]);
//! - a LeaderAndIsr response groups partition errors by topic id from v5
//!   (names before), a StopReplica response always names topics.

use indexmap::IndexMap;
use kafka_protocol_39::messages::leader_and_isr_request::{
    LeaderAndIsrLiveLeader, LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrTopicState,
};
use kafka_protocol_39::messages::leader_and_isr_response::{
    LeaderAndIsrPartitionError, LeaderAndIsrResponse, LeaderAndIsrTopicError,
};
use kafka_protocol_39::messages::stop_replica_request::{
    StopReplicaPartitionState, StopReplicaRequest, StopReplicaTopicState,
};
use kafka_protocol_39::messages::stop_replica_response::{
    StopReplicaPartitionError, StopReplicaResponse,
};
use kafka_protocol_39::messages::{BrokerId as BrokerId39, TopicName as TopicName39};
use kafka_protocol_39::protocol::StrBytes as StrBytes39;
use uuid::Uuid;

use super::update_metadata::UNKNOWN_BROKER_EPOCH;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch};

/// `LeaderAndIsr.NoEpoch`: a StopReplica below v3 names no leader epoch.
pub const NO_EPOCH: LeaderEpoch = LeaderEpoch(-1);
/// `LeaderAndIsr.EpochDuringDelete`: StopReplica for a topic being deleted
/// (the controller does not bump the epoch then, so it overrides any).
pub const EPOCH_DURING_DELETE: LeaderEpoch = LeaderEpoch(-2);
/// The version a Kafka 3.9 controller sends LeaderAndIsr at.
pub const LEADER_AND_ISR_VERSION: i16 = 7;
/// The version a Kafka 3.9 controller sends StopReplica at.
pub const STOP_REPLICA_VERSION: i16 = 4;

/// One partition's state in a LeaderAndIsr request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderAndIsrPartition {
    pub topic: String,
    pub partition: i32,
    /// The epoch of the controller that made this leadership decision.
    pub controller_epoch: ControllerEpoch,
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub isr: Vec<BrokerId>,
    /// The zkVersion of the partition's `state` znode.
    pub partition_epoch: PartitionEpoch,
    pub replicas: Vec<BrokerId>,
    pub adding_replicas: Vec<BrokerId>,
    pub removing_replicas: Vec<BrokerId>,
    /// The replica should not exist on the broker yet (v1+).
    pub is_new: bool,
    /// 1 after an unclean election (KIP-704, v6+), else 0.
    pub leader_recovery_state: i8,
}

/// A LeaderAndIsr request, independent of its wire version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderAndIsr {
    pub controller_id: BrokerId,
    pub controller_epoch: ControllerEpoch,
    /// The target broker's epoch, or [`UNKNOWN_BROKER_EPOCH`] (v0–1).
    pub broker_epoch: i64,
    pub partitions: Vec<LeaderAndIsrPartition>,
    /// Topic ids of the topic states (v5+; a zero id means none).
    pub topic_ids: Vec<(String, Uuid)>,
    /// The leaders named in `partitions` that are alive: (id, host, port).
    pub live_leaders: Vec<(BrokerId, String, i32)>,
}

impl LeaderAndIsr {
    /// From the Kafka 3.9 codec's request at `version` (v0–1 ungrouped,
    /// v2+ by topic; fields a version lacks keep the schema defaults).
    pub fn from_request(req: &LeaderAndIsrRequest, version: i16) -> Self {
        let mut partitions: Vec<LeaderAndIsrPartition> = req
            .ungrouped_partition_states
            .iter()
            .map(|p| partition(p.topic_name.0.as_str(), p))
            .collect();
        let mut topic_ids = Vec::new();
        for t in &req.topic_states {
            let name = t.topic_name.0.as_str();
            partitions.extend(t.partition_states.iter().map(|p| partition(name, p)));
            if version >= 5 {
                topic_ids.push((name.to_owned(), t.topic_id));
            }
        }
        Self {
            controller_id: BrokerId(req.controller_id.0),
            controller_epoch: ControllerEpoch(req.controller_epoch),
            broker_epoch: if version >= 2 {
                req.broker_epoch
            } else {
                UNKNOWN_BROKER_EPOCH
            },
            partitions,
            topic_ids,
            live_leaders: req
                .live_leaders
                .iter()
                .map(|l| {
                    (
                        BrokerId(l.broker_id.0),
                        l.host_name.as_str().to_owned(),
                        l.port,
                    )
                })
                .collect(),
        }
    }

    /// The Kafka 3.9 codec's request in the v7 shape (what a 3.9
    /// controller sends, `ControllerChannelManager.sendLeaderAndIsrRequest`):
    /// partition states grouped by topic in first-seen order with the ids
    /// of `topic_ids` (zero when unknown), `Type` 0 (UNKNOWN) as in plain
    /// ZooKeeper mode.
    pub fn to_request(&self) -> LeaderAndIsrRequest {
        let mut topics: IndexMap<&str, Vec<LeaderAndIsrPartitionState>> = IndexMap::new();
        for p in &self.partitions {
            topics
                .entry(p.topic.as_str())
                .or_default()
                .push(partition_state(p));
        }
        let topic_states = topics
            .into_iter()
            .map(|(name, states)| {
                LeaderAndIsrTopicState::default()
                    .with_topic_name(topic_name39(name))
                    .with_topic_id(self.topic_id(name).unwrap_or(Uuid::nil()))
                    .with_partition_states(states)
            })
            .collect();
        let live_leaders = self
            .live_leaders
            .iter()
            .map(|(id, host, port)| {
                LeaderAndIsrLiveLeader::default()
                    .with_broker_id(BrokerId39(id.0))
                    .with_host_name(StrBytes39::from_string(host.clone()))
                    .with_port(*port)
            })
            .collect();
        LeaderAndIsrRequest::default()
            .with_controller_id(BrokerId39(self.controller_id.0))
            .with_controller_epoch(self.controller_epoch.0)
            .with_broker_epoch(self.broker_epoch)
            .with_type(0)
            .with_topic_states(topic_states)
            .with_live_leaders(live_leaders)
    }

    /// The topic id the request names for `topic`, if any (a zero id is
    /// none, as Kafka's `topicIdFromRequest`).
    pub fn topic_id(&self, topic: &str) -> Option<Uuid> {
        self.topic_ids
            .iter()
            .find(|(t, _)| t == topic)
            .map(|(_, id)| *id)
            .filter(|id| !id.is_nil())
    }

    /// The answer when the whole request is refused (Kafka's
    /// `LeaderAndIsrRequest.getErrorResponse`): `error` at the top and for
    /// every partition.
    pub fn error_response(&self, error: ErrorCode) -> PartitionErrors {
        PartitionErrors {
            error,
            partitions: self
                .partitions
                .iter()
                .map(|p| (p.topic.clone(), p.partition, error))
                .collect(),
        }
    }

    /// `errors` as the Kafka 3.9 codec's response at `version`: partition
    /// errors named by topic before v5, grouped by this request's topic ids
    /// (zero when it named none) from v5.
    pub fn response(&self, errors: &PartitionErrors, version: i16) -> LeaderAndIsrResponse {
        let response = LeaderAndIsrResponse::default().with_error_code(errors.error.0);
        if version < 5 {
            return response.with_partition_errors(
                errors
                    .partitions
                    .iter()
                    .map(|(t, p, e)| {
                        LeaderAndIsrPartitionError::default()
                            .with_topic_name(topic_name39(t))
                            .with_partition_index(*p)
                            .with_error_code(e.0)
                    })
                    .collect(),
            );
        }
        let mut by_id: IndexMap<Uuid, Vec<LeaderAndIsrPartitionError>> = IndexMap::new();
        for (t, p, e) in &errors.partitions {
            let id = self
                .topic_ids
                .iter()
                .find(|(name, _)| name == t)
                .map_or(Uuid::nil(), |(_, id)| *id);
            by_id.entry(id).or_default().push(
                LeaderAndIsrPartitionError::default()
                    .with_partition_index(*p)
                    .with_error_code(e.0),
            );
        }
        response.with_topics(
            by_id
                .into_iter()
                .map(|(id, partition_errors)| {
                    LeaderAndIsrTopicError::default()
                        .with_topic_id(id)
                        .with_partition_errors(partition_errors)
                })
                .collect(),
        )
    }

    /// A response to this request (at `version`) as [`PartitionErrors`]:
    /// v5+ topic ids are named back through the request's `topic_ids`
    /// (an id it does not know keeps an empty name).
    pub fn errors_from_response(
        &self,
        resp: &LeaderAndIsrResponse,
        version: i16,
    ) -> PartitionErrors {
        let partitions = if version < 5 {
            resp.partition_errors
                .iter()
                .map(|p| {
                    (
                        p.topic_name.0.as_str().to_owned(),
                        p.partition_index,
                        ErrorCode(p.error_code),
                    )
                })
                .collect()
        } else {
            resp.topics
                .iter()
                .flat_map(|t| {
                    let name = self.topic_named_by(t.topic_id, &t.partition_errors);
                    t.partition_errors
                        .iter()
                        .map(move |p| (name.clone(), p.partition_index, ErrorCode(p.error_code)))
                })
                .collect()
        };
        PartitionErrors {
            error: ErrorCode(resp.error_code),
            partitions,
        }
    }

    /// The request's topic with id `id`; for a zero id (topics without
    /// ids share it) the first such topic holding the first partition.
    fn topic_named_by(&self, id: Uuid, errors: &[LeaderAndIsrPartitionError]) -> String {
        let candidates: Vec<&str> = self
            .topic_ids
            .iter()
            .filter(|(_, t)| *t == id)
            .map(|(n, _)| n.as_str())
            .collect();
        let first = errors.first().map(|e| e.partition_index);
        candidates
            .iter()
            .find(|n| {
                self.partitions
                    .iter()
                    .any(|p| p.topic == **n && Some(p.partition) == first)
            })
            .or(candidates.first())
            .map_or_else(String::new, |n| (*n).to_owned())
    }
}

fn ids(v: &[BrokerId39]) -> Vec<BrokerId> {
    v.iter().map(|b| BrokerId(b.0)).collect()
}

fn ids39(v: &[BrokerId]) -> Vec<BrokerId39> {
    v.iter().map(|b| BrokerId39(b.0)).collect()
}

fn topic_name39(name: &str) -> TopicName39 {
    TopicName39(StrBytes39::from_string(name.to_owned()))
}

fn partition(topic: &str, p: &LeaderAndIsrPartitionState) -> LeaderAndIsrPartition {
    LeaderAndIsrPartition {
        topic: topic.to_owned(),
        partition: p.partition_index,
        controller_epoch: ControllerEpoch(p.controller_epoch),
        leader: BrokerId(p.leader.0),
        leader_epoch: LeaderEpoch(p.leader_epoch),
        isr: ids(&p.isr),
        partition_epoch: PartitionEpoch(p.partition_epoch),
        replicas: ids(&p.replicas),
        adding_replicas: ids(&p.adding_replicas),
        removing_replicas: ids(&p.removing_replicas),
        is_new: p.is_new,
        leader_recovery_state: p.leader_recovery_state,
    }
}

fn partition_state(p: &LeaderAndIsrPartition) -> LeaderAndIsrPartitionState {
    LeaderAndIsrPartitionState::default()
        .with_partition_index(p.partition)
        .with_controller_epoch(p.controller_epoch.0)
        .with_leader(BrokerId39(p.leader.0))
        .with_leader_epoch(p.leader_epoch.0)
        .with_isr(ids39(&p.isr))
        .with_partition_epoch(p.partition_epoch.0)
        .with_replicas(ids39(&p.replicas))
        .with_adding_replicas(ids39(&p.adding_replicas))
        .with_removing_replicas(ids39(&p.removing_replicas))
        .with_is_new(p.is_new)
        .with_leader_recovery_state(p.leader_recovery_state)
}

/// One partition of a StopReplica request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReplicaPartition {
    pub topic: String,
    pub partition: i32,
    /// [`NO_EPOCH`] below v3; [`EPOCH_DURING_DELETE`] for a topic deletion.
    pub leader_epoch: LeaderEpoch,
    /// Delete the partition's log too.
    pub delete: bool,
}

/// A StopReplica request, independent of its wire version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReplica {
    pub controller_id: BrokerId,
    pub controller_epoch: ControllerEpoch,
    /// The target broker's epoch, or [`UNKNOWN_BROKER_EPOCH`] (v0).
    pub broker_epoch: i64,
    pub partitions: Vec<StopReplicaPartition>,
}

impl StopReplica {
    /// From the Kafka 3.9 codec's request at `version` (Kafka's
    /// `StopReplicaRequest.partitionStates`): v0–2 apply the top-level
    /// `DeletePartitions` to every partition with no leader epoch, v3+
    /// carry both per partition.
    pub fn from_request(req: &StopReplicaRequest, version: i16) -> Self {
        let stop = |topic: &str, partition: i32| StopReplicaPartition {
            topic: topic.to_owned(),
            partition,
            leader_epoch: NO_EPOCH,
            delete: req.delete_partitions,
        };
        let partitions = match version {
            0 => req
                .ungrouped_partitions
                .iter()
                .map(|p| stop(p.topic_name.0.as_str(), p.partition_index))
                .collect(),
            1 | 2 => req
                .topics
                .iter()
                .flat_map(|t| {
                    t.partition_indexes
                        .iter()
                        .map(|p| stop(t.name.0.as_str(), *p))
                })
                .collect(),
            _ => req
                .topic_states
                .iter()
                .flat_map(|t| {
                    t.partition_states.iter().map(|p| StopReplicaPartition {
                        topic: t.topic_name.0.as_str().to_owned(),
                        partition: p.partition_index,
                        leader_epoch: LeaderEpoch(p.leader_epoch),
                        delete: p.delete_partition,
                    })
                })
                .collect(),
        };
        Self {
            controller_id: BrokerId(req.controller_id.0),
            controller_epoch: ControllerEpoch(req.controller_epoch),
            broker_epoch: if version >= 1 {
                req.broker_epoch
            } else {
                UNKNOWN_BROKER_EPOCH
            },
            partitions,
        }
    }

    /// The Kafka 3.9 codec's request in the v4 shape (what a 3.9
    /// controller sends): partitions grouped by topic in first-seen order.
    pub fn to_request(&self) -> StopReplicaRequest {
        let mut topics: IndexMap<&str, Vec<StopReplicaPartitionState>> = IndexMap::new();
        for p in &self.partitions {
            topics.entry(p.topic.as_str()).or_default().push(
                StopReplicaPartitionState::default()
                    .with_partition_index(p.partition)
                    .with_leader_epoch(p.leader_epoch.0)
                    .with_delete_partition(p.delete),
            );
        }
        StopReplicaRequest::default()
            .with_controller_id(BrokerId39(self.controller_id.0))
            .with_controller_epoch(self.controller_epoch.0)
            .with_broker_epoch(self.broker_epoch)
            .with_topic_states(
                topics
                    .into_iter()
                    .map(|(name, states)| {
                        StopReplicaTopicState::default()
                            .with_topic_name(topic_name39(name))
                            .with_partition_states(states)
                    })
                    .collect(),
            )
    }
}

/// `errors` as the Kafka 3.9 codec's StopReplica response (one shape for
/// every version).
pub fn stop_replica_response(errors: &PartitionErrors) -> StopReplicaResponse {
    StopReplicaResponse::default()
        .with_error_code(errors.error.0)
        .with_partition_errors(
            errors
                .partitions
                .iter()
                .map(|(t, p, e)| {
                    StopReplicaPartitionError::default()
                        .with_topic_name(topic_name39(t))
                        .with_partition_index(*p)
                        .with_error_code(e.0)
                })
                .collect(),
        )
}

/// A StopReplica response as [`PartitionErrors`].
pub fn stop_replica_errors(resp: &StopReplicaResponse) -> PartitionErrors {
    PartitionErrors {
        error: ErrorCode(resp.error_code),
        partitions: resp
            .partition_errors
            .iter()
            .map(|p| {
                (
                    p.topic_name.0.as_str().to_owned(),
                    p.partition_index,
                    ErrorCode(p.error_code),
                )
            })
            .collect(),
    }
}

/// A response: top-level error and per-partition errors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionErrors {
    pub error: ErrorCode,
    /// (topic, partition, error), in the order the request named them.
    pub partitions: Vec<(String, i32, ErrorCode)>,
}

impl PartitionErrors {
    /// Only a top-level error (StopReplica fenced: Kafka lists no
    /// partitions then).
    pub fn top_level(error: ErrorCode) -> Self {
        Self {
            error,
            partitions: Vec::new(),
        }
    }

    /// The error for one partition, if the response names it.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<ErrorCode> {
        self.partitions
            .iter()
            .find(|(t, p, _)| t == topic && *p == partition)
            .map(|(_, _, e)| *e)
    }
}

#[cfg(test)]
mod tests;
