//! `[pure]` The metadata image the controller publishes: the snapshot
//! every data shard answers from, built from the stored topics, and the
//! specs of topics created on first use (Kafka's internal topics).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::topic_admin::{NewTopic, TopicInfo};
use crate::metadata::{PartitionState, Snapshot, TopicState};
use crate::types::{BrokerId, LeaderEpoch, PartitionId};

/// Kafka's `AutoTopicCreationManager.creatableTopic`: the internal topics
/// get their own partition count, replication factor and configs
/// (`offsets.topic.*`, `transaction.state.log.*`, as GroupCoordinator /
/// TransactionStateManager define them); any other topic the broker
/// defaults (`num.partitions`, `default.replication.factor`, KIP-464 -1).
pub fn auto_created_topic(name: &str, config: &crate::config::ServerConfig) -> NewTopic {
    let configs = |pairs: &[(&str, String)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    };
    match name {
        OFFSETS_TOPIC => NewTopic {
            name: name.to_owned(),
            num_partitions: config.offsets_topic_num_partitions,
            replication_factor: config.offsets_topic_replication_factor,
            configs: configs(&[
                ("cleanup.policy", "compact".into()),
                ("compression.type", "producer".into()),
                (
                    "segment.bytes",
                    config.offsets_topic_segment_bytes.to_string(),
                ),
            ]),
            ..Default::default()
        },
        TRANSACTION_STATE_TOPIC => NewTopic {
            name: name.to_owned(),
            num_partitions: config.transaction_state_log_num_partitions,
            replication_factor: config.transaction_state_log_replication_factor,
            configs: configs(&[
                ("cleanup.policy", "compact".into()),
                ("compression.type", "uncompressed".into()),
                (
                    "min.insync.replicas",
                    config.transaction_state_log_min_isr.to_string(),
                ),
                // `transaction.state.log.segment.bytes` default 104857600.
                ("segment.bytes", "104857600".into()),
                ("unclean.leader.election.enable", "false".into()),
            ]),
            ..Default::default()
        },
        _ => NewTopic {
            name: name.to_owned(),
            num_partitions: -1,
            replication_factor: -1,
            ..Default::default()
        },
    }
}

/// Kafka's internal topic names (`Topic.GROUP_METADATA_TOPIC_NAME`,
/// `Topic.TRANSACTION_STATE_TOPIC_NAME`).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// The snapshot for `topics` over `base`'s brokers and cluster id. A
/// partition whose state znode is missing gets this broker as leader when
/// it is a replica (a single broker is its own controller).
pub fn build_snapshot(
    base: &Snapshot,
    version: u64,
    broker_id: BrokerId,
    topics: &[TopicInfo],
) -> Snapshot {
    let mut snapshot = base.clone();
    snapshot.version = version;
    snapshot.hosted_topics = topics
        .iter()
        .map(|t| {
            let state = topic_state(t, broker_id);
            (state.name.clone(), state)
        })
        .collect();
    snapshot
}

fn topic_state(info: &TopicInfo, broker_id: BrokerId) -> TopicState {
    let partitions = info
        .partitions
        .iter()
        .map(|p| {
            let elected = p.leader != BrokerId::NONE || !p.replicas.contains(&broker_id);
            let (leader, leader_epoch, isr) = if elected {
                (p.leader, p.leader_epoch, p.isr.clone())
            } else {
                (broker_id, LeaderEpoch(0), vec![broker_id])
            };
            PartitionState {
                partition: p.partition as PartitionId,
                leader,
                leader_epoch,
                replicas: p.replicas.clone(),
                isr,
                offline_replicas: Vec::new(),
            }
        })
        .collect();
    TopicState {
        name: Arc::from(info.name.as_str()),
        topic_id: info.topic_id,
        // Kafka's `Topic.isInternal`.
        is_internal: info.name == OFFSETS_TOPIC || info.name == TRANSACTION_STATE_TOPIC,
        partitions,
        configs: info.configs.clone(),
    }
}
