//! `[pure]` What the replica fetchers of a data shard follow: the fetch
//! settings from the broker config and, per metadata snapshot, the
//! partitions this broker follows with their leaders' endpoints and
//! whether the follower replication quota throttles them.

use std::rc::Rc;

use super::state::FetchSettings;
use crate::config::ServerConfig;
use crate::metadata::Snapshot;
use crate::purgatory::view::PartitionRole;
use crate::replication::partition::Partition;
use crate::replication::quota;
use crate::types::BrokerId;

/// One partition this shard follows, as the metadata names it.
#[derive(Clone)]
pub struct FollowTarget {
    pub partition: Rc<Partition>,
    pub leader: BrokerId,
    pub leader_epoch: i32,
    /// The leader's inter-broker endpoint `host:port`, if known.
    pub leader_address: Option<String>,
    /// Throttled by the follower replication quota: named for this broker
    /// in `follower.replication.throttled.replicas` while out of the ISR.
    pub throttled: bool,
    /// Being reassigned, with this broker among its adding replicas
    /// (Kafka's `Partition.isReassigning && isAddingLocalReplica`).
    pub adding_me: bool,
}

/// The fetch settings from the broker config (`replica.fetch.*`). The
/// broker epoch is not known on data shards yet: -1 (Kafka's "unknown",
/// which a 3.9 leader accepts).
pub fn settings_of(server: &ServerConfig) -> FetchSettings {
    FetchSettings {
        replica_id: server.broker_id,
        broker_epoch: -1,
        min_bytes: server.replica_fetch_min_bytes,
        max_bytes: server.replica_fetch_response_max_bytes,
        partition_max_bytes: server.replica_fetch_max_bytes,
        max_wait_ms: server.replica_fetch_wait_max_ms,
        backoff_ms: i64::from(server.replica_fetch_backoff_ms),
        num_fetchers: server.num_replica_fetchers.max(1),
        sessions: server.shardlog_replica_fetch_session_enable,
        socket_receive_buffer_bytes: server.replica_socket_receive_buffer_bytes,
    }
}

/// The partitions of `parts` this broker (`me`) follows per `snapshot`,
/// each with its leader's endpoint on the inter-broker listener
/// (`Snapshot::brokers`; Kafka's `ReplicaManager.makeFollowers` takes
/// `getAliveBrokerNode(leader, interBrokerListenerName)`).
pub fn targets_of(snapshot: &Snapshot, me: BrokerId, parts: &[Rc<Partition>]) -> Vec<FollowTarget> {
    let mut out = Vec::new();
    for p in parts {
        // An offline partition (its log dir failed) is not fetched for
        // whatever the metadata says: Kafka's `handleLogDirFailure` removes
        // its fetcher and `becomeLeaderOrFollower` starts none. Fetching
        // would show the leader a replica that looks caught up, and it
        // would take it back into the ISR.
        if matches!(p.role(), PartitionRole::Leader | PartitionRole::Offline) {
            continue;
        }
        // The hosted view: the leader LeaderAndIsr named (Kafka's
        // `ReplicaManager.makeFollowers`), not UpdateMetadata's.
        let Some(state) = snapshot
            .hosted_topic(&p.tp.topic)
            .and_then(|t| t.partitions.iter().find(|s| s.partition == p.tp.partition))
        else {
            continue;
        };
        if state.leader == me || !state.replicas.contains(&me) {
            continue;
        }
        let leader_address = snapshot
            .brokers
            .iter()
            .find(|b| b.broker_id == state.leader)
            .map(|b| format!("{}:{}", b.host, b.port));
        let throttled = !state.isr.contains(&me)
            && snapshot.hosted_topics.get(&*p.tp.topic).is_some_and(|t| {
                quota::is_throttled(
                    &t.configs,
                    quota::FOLLOWER_THROTTLED_REPLICAS,
                    p.tp.partition,
                    me.0,
                )
            });
        out.push(FollowTarget {
            partition: p.clone(),
            leader: state.leader,
            leader_epoch: state.leader_epoch.0,
            leader_address,
            throttled,
            adding_me: snapshot.is_adding_replica(&p.tp.topic, p.tp.partition, me),
        });
    }
    out
}
