//! Admin operations in the simulation, as Kafka's ZooKeeper-mode tools
//! start them: a partition reassignment (`/admin/reassign_partitions`,
//! what `kafka-reassign-partitions --zookeeper` writes) and a preferred
//! leader election (`/admin/preferred_replica_election`). The real
//! controller carries them out (adding replicas, waiting for them to join
//! the ISR, electing, stopping and deleting the removed ones) under the
//! same faults; the invariants and the heal's liveness check cover them:
//! a reassignment must end with the target replicas as a full ISR.

use rand::seq::SliceRandom as _;
use rand::Rng as _;
use shardlog::types::BrokerId;
use shardlog::zk::paths::{
    self, IsrChangePartition, PreferredReplicaElectionZNode, ReassignPartition,
    ReassignPartitionsZNode,
};
use shardlog::zk::store::{CreateMode, MetadataStore};

use super::world::{World, TOPIC};

impl World {
    /// Maybe start one admin operation (at most one of each kind at a time,
    /// as the znodes allow).
    pub(super) async fn maybe_admin(&mut self) {
        let roll: f64 = self.rng.gen();
        if roll < 0.004 {
            let p = self.rng.gen_range(0..self.cfg.partitions);
            let mut brokers: Vec<i32> = (1..=self.cfg.brokers).collect();
            brokers.shuffle(&mut self.rng);
            brokers.truncate(self.cfg.replication as usize);
            let z = ReassignPartitionsZNode {
                version: 1,
                partitions: vec![ReassignPartition {
                    topic: TOPIC.to_string(),
                    partition: p,
                    replicas: brokers.iter().map(|b| BrokerId(*b)).collect(),
                }],
            };
            let what = format!("reassign {TOPIC}-{p} to {brokers:?}");
            self.start_admin(paths::REASSIGN_PARTITIONS, &z.encode(), what)
                .await;
        } else if roll < 0.008 {
            let z = PreferredReplicaElectionZNode {
                version: 1,
                partitions: (0..self.cfg.partitions)
                    .map(|p| IsrChangePartition {
                        topic: TOPIC.to_string(),
                        partition: p,
                    })
                    .collect(),
            };
            let what = "preferred leader election of every partition".to_string();
            self.start_admin(paths::PREFERRED_REPLICA_ELECTION, &z.encode(), what)
                .await;
        }
    }

    /// Creates the admin znode at `path`; one already there (the same
    /// kind of operation in progress) is left as it is, unlogged.
    async fn start_admin(&mut self, path: &str, data: &[u8], what: String) {
        let created = self.root.create(path, data, CreateMode::Persistent).await;
        if created.is_ok() {
            self.log(format!("admin: {what}"));
        }
    }
}
