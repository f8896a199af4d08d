//! Kafka's topic admin operations (`AdminZkClient` + `ZkAdminManager` in
//! Kafka 3.9) over any [`MetadataStore`]: create/delete topics, add
//! partitions, load the stored topics. Topic configs are
//! `super::topic_configs`', broker registration and the cluster id
//! `super::brokers`'.
//!
//! Errors are [`AdminError`]s carrying the Kafka error code the
//! CreateTopics / DeleteTopics / CreatePartitions handlers put in their
//! responses.
//!
//! Kafka (ZooKeeper mode) writes the assignment and the controller then
//! creates the partition state znodes; with no separate controller yet we
//! write both in one atomic `multi`: leader = first replica, leader_epoch 0,
//! isr = all replicas (every replica is a live broker by construction).
//!
//! Deletion keeps Kafka's marker protocol: `/admin/delete_topics/<t>` is
//! created first, then the topic's znodes and the marker are removed in one
//! `multi`. A crash in between leaves the marker, and
//! [`complete_pending_deletions`] (call it at start-up, as Kafka's
//! controller resumes `TopicDeletionManager`) finishes the job.

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng;
use uuid::Uuid;

use super::admin_error::{corrupt, unknown_topic, AdminError};
use super::assignment::{assign, AssignmentSeed};
use super::brokers::{controller_epoch, create_top_level_paths};
use crate::config::topic::{BrokerTopicDefaults, TopicConfig};
use crate::protocol::topic_name;
use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch, PartitionId};
use crate::zk::paths::{self, kafka_uuid, ConfigZNode, PartitionStateZNode, TopicZNode};
use crate::zk::store::{join, CreateMode, MetadataStore, Op, StoreError};

/// Not a Kafka limit: a guard so one request cannot make us build an
/// arbitrarily large `multi` (Kafka would fail later, on the controller).
pub const MAX_PARTITIONS_PER_TOPIC: i32 = 100_000;

/// One partition's assignment and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub partition: PartitionId,
    pub replicas: Vec<BrokerId>,
    /// -1 when no state znode exists yet (no leader elected).
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub isr: Vec<BrokerId>,
    pub controller_epoch: ControllerEpoch,
    /// Version of the state znode, for conditional updates (-1 if absent).
    pub zk_version: PartitionEpoch,
    /// KIP-704: 1 (RECOVERING) after an unclean election, else 0.
    pub leader_recovery_state: u8,
}

/// A topic as stored: assignment, state, and config overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    /// Nil for topics written by Kafka before 2.8 (no KIP-516 id).
    pub topic_id: Uuid,
    /// Sorted by partition id.
    pub partitions: Vec<PartitionState>,
    /// The topic's overrides only (`/config/topics/<t>`), not defaults.
    pub configs: BTreeMap<String, String>,
    /// Partitions being reassigned: their adding and removing replicas
    /// (`adding_replicas` / `removing_replicas` of `/brokers/topics/<t>`).
    pub reassigning: BTreeMap<PartitionId, (Vec<BrokerId>, Vec<BrokerId>)>,
}

/// A CreateTopics request entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewTopic {
    pub name: String,
    /// -1 = broker default `num.partitions` (KIP-464).
    pub num_partitions: i32,
    /// -1 = broker default `default.replication.factor` (KIP-464).
    pub replication_factor: i16,
    /// Manual assignment (partition → replicas); empty = automatic.
    pub replica_assignment: BTreeMap<PartitionId, Vec<BrokerId>>,
    pub configs: BTreeMap<String, String>,
}

/// IncrementalAlterConfigs operation types (KIP-339).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterConfigOpType {
    Set = 0,
    Delete = 1,
    Append = 2,
    Subtract = 3,
}

impl AlterConfigOpType {
    pub fn from_i8(v: i8) -> Option<Self> {
        Some(match v {
            0 => Self::Set,
            1 => Self::Delete,
            2 => Self::Append,
            3 => Self::Subtract,
            _ => return None,
        })
    }
}

/// One IncrementalAlterConfigs entry for a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigOp {
    pub name: String,
    pub op: AlterConfigOpType,
    /// None is allowed only for DELETE.
    pub value: Option<String>,
}

/// Kafka's `Topic.validate` (the one rule: `protocol::topic_name`).
pub fn validate_topic_name(name: &str) -> Result<(), AdminError> {
    topic_name::validate_topic_name(name).map_err(|e| AdminError::InvalidTopic(e.to_string()))
}

/// Kafka's `Topic.unifyCollisionChars`: `.` and `_` collide in metric names.
fn unify_collision_chars(name: &str) -> String {
    name.replace('.', "_")
}

/// Checks a manual assignment (Kafka's `validateReplicaAssignment`, plus
/// KRaft's rule that every replica is a registered broker).
fn validate_manual_assignment(
    assignment: &BTreeMap<PartitionId, Vec<BrokerId>>,
    live: &[BrokerId],
    expected_rf: Option<usize>,
) -> Result<(), AdminError> {
    let bad = |m: String| Err(AdminError::InvalidReplicaAssignment(m));
    let mut rf = expected_rf;
    for (partition, replicas) in assignment {
        if replicas.is_empty() {
            return bad(format!(
                "Cannot have replication factor of 0 for partition id {partition}."
            ));
        }
        let distinct: BTreeSet<_> = replicas.iter().collect();
        if distinct.len() != replicas.len() {
            return bad(format!(
                "Duplicate brokers not allowed in replica assignment: {replicas:?} for partition id {partition}."
            ));
        }
        if let Some(unknown) = replicas.iter().find(|r| !live.contains(r)) {
            return bad(format!(
                "The manual partition assignment includes broker {unknown}, but no such broker is registered."
            ));
        }
        match rf {
            Some(n) if n != replicas.len() => {
                return bad("All partitions should have the same number of replicas".into());
            }
            _ => rf = Some(replicas.len()),
        }
    }
    Ok(())
}

/// Validates name, existence and collisions for a new topic.
async fn validate_topic_create<S: MetadataStore>(store: &S, name: &str) -> Result<(), AdminError> {
    validate_topic_name(name)?;
    if store
        .exists(&paths::delete_topic_marker(name))
        .await?
        .is_some()
    {
        return Err(AdminError::TopicAlreadyExists(format!(
            "Topic '{name}' is marked for deletion."
        )));
    }
    let existing = match store.children(paths::TOPICS).await {
        Ok(names) => names,
        Err(StoreError::NoNode(_)) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    if existing.iter().any(|t| t == name) {
        return Err(AdminError::TopicAlreadyExists(format!(
            "Topic '{name}' already exists."
        )));
    }
    if name.contains(['.', '_']) {
        let unified = unify_collision_chars(name);
        let colliding: Vec<&str> = existing
            .iter()
            .filter(|t| unify_collision_chars(t) == unified)
            .map(String::as_str)
            .collect();
        if !colliding.is_empty() {
            return Err(AdminError::InvalidTopic(format!(
                "Topic '{name}' collides with existing topics: {}",
                colliding.join(", ")
            )));
        }
    }
    Ok(())
}

/// Resolves -1 defaults and builds the assignment for a new topic.
fn plan_assignment<R: Rng + ?Sized>(
    topic: &NewTopic,
    brokers: &[(BrokerId, Option<String>)],
    defaults: &BrokerTopicDefaults,
    rng: &mut R,
) -> Result<BTreeMap<PartitionId, Vec<BrokerId>>, AdminError> {
    if !topic.replica_assignment.is_empty() {
        if topic.num_partitions != -1 || topic.replication_factor != -1 {
            return Err(AdminError::InvalidRequest(
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time."
                    .into(),
            ));
        }
        let n = topic.replica_assignment.len() as i32;
        if topic.replica_assignment.keys().copied().ne(0..n) {
            return Err(AdminError::InvalidReplicaAssignment(
                "partitions should be a consecutive 0-based integer sequence".into(),
            ));
        }
        if n > MAX_PARTITIONS_PER_TOPIC {
            return Err(AdminError::InvalidPartitions(format!(
                "Number of partitions {n} exceeds {MAX_PARTITIONS_PER_TOPIC}."
            )));
        }
        validate_manual_assignment(&topic.replica_assignment, &ids(brokers), None)?;
        return Ok(topic.replica_assignment.clone());
    }
    let partitions = if topic.num_partitions == -1 {
        defaults.num_partitions
    } else {
        topic.num_partitions
    };
    let rf = if topic.replication_factor == -1 {
        defaults.default_replication_factor
    } else {
        topic.replication_factor
    };
    if partitions > MAX_PARTITIONS_PER_TOPIC {
        return Err(AdminError::InvalidPartitions(format!(
            "Number of partitions {partitions} exceeds {MAX_PARTITIONS_PER_TOPIC}."
        )));
    }
    let seed = AssignmentSeed::random(rng, brokers.len());
    // Rack-aware when the brokers have racks (Kafka's `AdminUtils.assignReplicasToBrokers`).
    Ok(assign(brokers, partitions, i32::from(rf), seed, 0)?)
}

/// The ids of `brokers`.
fn ids(brokers: &[(BrokerId, Option<String>)]) -> Vec<BrokerId> {
    brokers.iter().map(|(id, _)| *id).collect()
}

fn partition_ops(
    topic: &str,
    assignment: &BTreeMap<PartitionId, Vec<BrokerId>>,
    controller_epoch: ControllerEpoch,
) -> (Vec<Op>, Vec<PartitionState>) {
    let mut ops = Vec::with_capacity(assignment.len() * 2);
    let mut states = Vec::with_capacity(assignment.len());
    for (&partition, replicas) in assignment {
        let leader = replicas.first().copied().unwrap_or(BrokerId::NONE);
        let state =
            PartitionStateZNode::new(leader, LeaderEpoch(0), replicas.clone(), controller_epoch);
        ops.push(create_op(
            paths::topic_partition(topic, partition),
            Vec::new(),
        ));
        ops.push(create_op(
            paths::partition_state(topic, partition),
            state.encode(),
        ));
        states.push(PartitionState {
            partition,
            replicas: replicas.clone(),
            leader,
            leader_epoch: LeaderEpoch(0),
            isr: replicas.clone(),
            controller_epoch,
            zk_version: PartitionEpoch(0),
            leader_recovery_state: 0,
        });
    }
    (ops, states)
}

pub(super) fn create_op(path: String, data: Vec<u8>) -> Op {
    Op::Create {
        path,
        data,
        mode: CreateMode::Persistent,
    }
}

/// CreateTopics for one topic. `live_brokers` are the registered brokers
/// with their racks (`broker.rack`); `rng` drives the topic id and the assignment's start index.
/// With `validate_only` nothing is written. With `write_states` false
/// (ZooKeeper mode, Kafka's `AdminZkClient.createTopicWithAssignment`)
/// only the config and the assignment are written: the controller creates
/// the partition state znodes when its watch fires.
pub async fn create_topic<S: MetadataStore, R: Rng + ?Sized>(
    store: &S,
    topic: &NewTopic,
    live_brokers: &[(BrokerId, Option<String>)],
    defaults: &BrokerTopicDefaults,
    validate_only: bool,
    write_states: bool,
    rng: &mut R,
) -> Result<TopicInfo, AdminError> {
    validate_topic_create(store, &topic.name).await?;
    let assignment = plan_assignment(topic, live_brokers, defaults, rng)?;
    TopicConfig::resolve(&topic.configs, defaults)?;
    let topic_id = kafka_uuid::random(rng);
    let epoch = controller_epoch(store).await?;
    let name = topic.name.as_str();
    let (state_ops, partitions) = partition_ops(name, &assignment, epoch);
    let info = TopicInfo {
        name: name.to_string(),
        topic_id,
        partitions,
        configs: topic.configs.clone(),
        reassigning: BTreeMap::new(),
    };
    if validate_only {
        return Ok(info);
    }
    create_top_level_paths(store).await?;
    // Kafka writes the config znode before the assignment, so a broker that
    // sees the topic always finds its config.
    let mut ops = vec![
        create_op(
            paths::topic_config(name),
            ConfigZNode::new(topic.configs.clone()).encode(),
        ),
        create_op(
            paths::topic(name),
            TopicZNode::new(topic_id, assignment).encode(),
        ),
    ];
    if write_states {
        ops.push(create_op(paths::topic_partitions(name), Vec::new()));
        ops.extend(state_ops);
    }
    match store.multi(ops).await {
        Ok(_) => Ok(info),
        Err(StoreError::NodeExists(_)) => Err(AdminError::TopicAlreadyExists(format!(
            "Topic '{name}' already exists."
        ))),
        Err(e) => Err(e.into()),
    }
}

/// Reads one topic; `UnknownTopicOrPartition` if absent.
/// The moving partitions of a topic znode: per partition its adding and
/// removing replicas.
pub fn reassigning_of(z: &TopicZNode) -> BTreeMap<PartitionId, (Vec<BrokerId>, Vec<BrokerId>)> {
    let mut out: BTreeMap<PartitionId, (Vec<BrokerId>, Vec<BrokerId>)> = BTreeMap::new();
    for (p, a) in &z.adding_replicas {
        if !a.is_empty() {
            out.entry(*p).or_default().0 = a.clone();
        }
    }
    for (p, r) in &z.removing_replicas {
        if !r.is_empty() {
            out.entry(*p).or_default().1 = r.clone();
        }
    }
    out
}

pub async fn load_topic<S: MetadataStore>(store: &S, name: &str) -> Result<TopicInfo, AdminError> {
    let topic_path = paths::topic(name);
    let (data, _) = match store.get(&topic_path).await {
        Ok(found) => found,
        Err(StoreError::NoNode(_)) => return Err(unknown_topic(name)),
        Err(e) => return Err(e.into()),
    };
    let znode = TopicZNode::decode(&data).map_err(|e| corrupt(&topic_path, e))?;
    let mut partitions = Vec::with_capacity(znode.partitions.len());
    for (&partition, replicas) in &znode.partitions {
        let state_path = paths::partition_state(name, partition);
        let state = match store.get(&state_path).await {
            Ok((data, stat)) => {
                let s = PartitionStateZNode::decode(&data).map_err(|e| corrupt(&state_path, e))?;
                PartitionState {
                    partition,
                    replicas: replicas.clone(),
                    leader: s.leader,
                    leader_epoch: s.leader_epoch,
                    isr: s.isr,
                    controller_epoch: s.controller_epoch,
                    zk_version: PartitionEpoch(stat.version),
                    leader_recovery_state: s.leader_recovery_state,
                }
            }
            Err(StoreError::NoNode(_)) => PartitionState {
                partition,
                replicas: replicas.clone(),
                leader: BrokerId::NONE,
                leader_epoch: LeaderEpoch::UNKNOWN,
                isr: Vec::new(),
                controller_epoch: ControllerEpoch(-1),
                zk_version: PartitionEpoch(-1),
                leader_recovery_state: 0,
            },
            Err(e) => return Err(e.into()),
        };
        partitions.push(state);
    }
    Ok(TopicInfo {
        name: name.to_string(),
        topic_id: znode.topic_id.unwrap_or(Uuid::nil()),
        partitions,
        configs: read_topic_overrides(store, name).await?.0,
        reassigning: reassigning_of(&znode),
    })
}

/// Every topic under `/brokers/topics`, sorted by name.
pub async fn load_topics<S: MetadataStore>(store: &S) -> Result<Vec<TopicInfo>, AdminError> {
    let names = match store.children(paths::TOPICS).await {
        Ok(names) => names,
        Err(StoreError::NoNode(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut topics = Vec::with_capacity(names.len());
    for name in names {
        match load_topic(store, &name).await {
            Ok(info) => topics.push(info),
            // Deleted between listing and reading.
            Err(AdminError::UnknownTopicOrPartition(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(topics)
}

/// The topic's overrides and the config znode version (-1 if no znode).
pub(super) async fn read_topic_overrides<S: MetadataStore>(
    store: &S,
    name: &str,
) -> Result<(BTreeMap<String, String>, Option<i32>), AdminError> {
    let path = paths::topic_config(name);
    match store.get(&path).await {
        Ok((data, stat)) => {
            let z = ConfigZNode::decode(&data).map_err(|e| corrupt(&path, e))?;
            Ok((z.config, Some(stat.version)))
        }
        Err(StoreError::NoNode(_)) => Ok((BTreeMap::new(), None)),
        Err(e) => Err(e.into()),
    }
}

/// Post-order delete ops for the subtree at `path` (children first).
pub(crate) async fn subtree_delete_ops<S: MetadataStore>(
    store: &S,
    path: &str,
) -> Result<Vec<Op>, AdminError> {
    let mut order = Vec::new();
    let mut stack = vec![path.to_string()];
    while let Some(node) = stack.pop() {
        match store.children(&node).await {
            Ok(kids) => stack.extend(kids.iter().map(|k| join(&node, k))),
            Err(StoreError::NoNode(_)) => continue,
            Err(e) => return Err(e.into()),
        }
        order.push(node);
    }
    // Pre-order reversed = every child before its parent.
    Ok(order
        .into_iter()
        .rev()
        .map(|path| Op::Delete {
            path,
            expected_version: None,
        })
        .collect())
}

/// DeleteTopics for one topic. Returns what was deleted (the caller drops
/// the local logs of these partitions).
pub async fn delete_topic<S: MetadataStore>(
    store: &S,
    name: &str,
) -> Result<TopicInfo, AdminError> {
    let info = load_topic(store, name).await?;
    create_top_level_paths(store).await?;
    match store
        .create(
            &paths::delete_topic_marker(name),
            &[],
            CreateMode::Persistent,
        )
        .await
    {
        Ok(_) | Err(StoreError::NodeExists(_)) => {}
        Err(e) => return Err(e.into()),
    }
    finish_deletion(store, name).await?;
    Ok(info)
}

/// DeleteTopics in ZooKeeper mode (Kafka's `AdminZkClient.deleteTopic`):
/// only the marker `/admin/delete_topics/<t>`; the controller stops and
/// deletes the replicas, then removes the topic's znodes and the marker.
pub async fn mark_for_deletion<S: MetadataStore>(
    store: &S,
    name: &str,
) -> Result<TopicInfo, AdminError> {
    let info = load_topic(store, name).await?;
    create_top_level_paths(store).await?;
    match store
        .create(
            &paths::delete_topic_marker(name),
            &[],
            CreateMode::Persistent,
        )
        .await
    {
        // Kafka: TopicAlreadyMarkedForDeletion, answered as success.
        Ok(_) | Err(StoreError::NodeExists(_)) => Ok(info),
        Err(e) => Err(e.into()),
    }
}

/// Removes the topic znodes, its config and the marker in one `multi`.
async fn finish_deletion<S: MetadataStore>(store: &S, name: &str) -> Result<(), AdminError> {
    let mut ops = subtree_delete_ops(store, &paths::topic(name)).await?;
    if store.exists(&paths::topic_config(name)).await?.is_some() {
        ops.push(Op::Delete {
            path: paths::topic_config(name),
            expected_version: None,
        });
    }
    ops.push(Op::Delete {
        path: paths::delete_topic_marker(name),
        expected_version: None,
    });
    store.multi(ops).await?;
    Ok(())
}

/// Finishes deletions a crash interrupted (markers under
/// `/admin/delete_topics`). Returns the topics deleted.
pub async fn complete_pending_deletions<S: MetadataStore>(
    store: &S,
) -> Result<Vec<String>, AdminError> {
    let marked = match store.children(paths::DELETE_TOPICS).await {
        Ok(names) => names,
        Err(StoreError::NoNode(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    for name in &marked {
        finish_deletion(store, name).await?;
    }
    Ok(marked)
}

/// CreatePartitions for one topic: grows it to `new_total` partitions.
/// `assignments` (optional) gives the replicas of each new partition.
pub async fn create_partitions<S: MetadataStore>(
    store: &S,
    name: &str,
    new_total: i32,
    assignments: Option<&[Vec<BrokerId>]>,
    live_brokers: &[(BrokerId, Option<String>)],
    validate_only: bool,
    write_states: bool,
) -> Result<TopicInfo, AdminError> {
    let topic_path = paths::topic(name);
    let (data, stat) = match store.get(&topic_path).await {
        Ok(found) => found,
        Err(StoreError::NoNode(_)) => return Err(unknown_topic(name)),
        Err(e) => return Err(e.into()),
    };
    let mut znode = TopicZNode::decode(&data).map_err(|e| corrupt(&topic_path, e))?;
    let old = znode.partitions.len() as i32;
    if new_total == old {
        return Err(AdminError::InvalidPartitions(format!(
            "Topic already has {old} partitions."
        )));
    }
    if new_total < old {
        return Err(AdminError::InvalidPartitions(format!(
            "Topic currently has {old} partitions, which is higher than the requested {new_total}."
        )));
    }
    if new_total > MAX_PARTITIONS_PER_TOPIC {
        return Err(AdminError::InvalidPartitions(format!(
            "Number of partitions {new_total} exceeds {MAX_PARTITIONS_PER_TOPIC}."
        )));
    }
    let first = znode
        .partitions
        .get(&0)
        .cloned()
        .ok_or_else(|| corrupt(&topic_path, "partition 0 is missing"))?;
    let added = plan_new_partitions(old, new_total, assignments, &first, live_brokers)?;
    let epoch = controller_epoch(store).await?;
    let (state_ops, new_states) = partition_ops(name, &added, epoch);
    let mut ops = if write_states { state_ops } else { Vec::new() };
    if validate_only {
        let mut info = load_topic(store, name).await?;
        info.partitions.extend(new_states);
        return Ok(info);
    }
    znode.partitions.extend(added);
    // Guarded by the assignment's version: a concurrent change fails the
    // whole multi instead of being overwritten.
    ops.insert(
        0,
        Op::Set {
            path: topic_path,
            data: znode.encode(),
            expected_version: Some(stat.version),
        },
    );
    store.multi(ops).await?;
    load_topic(store, name).await
}

/// Kafka's `createNewPartitionsAssignment`: manual, or continue the
/// round-robin from partition 0's leader with partition 0's replication
/// factor.
fn plan_new_partitions(
    old: i32,
    new_total: i32,
    assignments: Option<&[Vec<BrokerId>]>,
    partition0: &[BrokerId],
    brokers: &[(BrokerId, Option<String>)],
) -> Result<BTreeMap<PartitionId, Vec<BrokerId>>, AdminError> {
    let to_add = new_total - old;
    let live = ids(brokers);
    if let Some(manual) = assignments {
        if manual.len() as i32 != to_add {
            return Err(AdminError::InvalidReplicaAssignment(format!(
                "Increasing the number of partitions by {to_add} but {} assignments provided.",
                manual.len()
            )));
        }
        let planned: BTreeMap<PartitionId, Vec<BrokerId>> =
            (old..).zip(manual.iter().cloned()).collect();
        validate_manual_assignment(&planned, &live, Some(partition0.len()))?;
        return Ok(planned);
    }
    let mut sorted = live;
    sorted.sort_unstable();
    let leader0 = partition0.first().copied().unwrap_or(BrokerId(0));
    let start = sorted.iter().position(|&b| b >= leader0).unwrap_or(0);
    let rf = partition0.len() as i32;
    Ok(assign(
        brokers,
        to_add,
        rf,
        AssignmentSeed::fixed(start),
        old,
    )?)
}

#[cfg(test)]
mod tests;
