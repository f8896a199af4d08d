//! Test helpers of the shard layer: a metadata snapshot and a bare shard
//! context to run mesh and routing tests on.

use std::rc::Rc;
use std::sync::Arc;

use super::context::{Role, RolePart, ShardBase, ShardContext};
use crate::io::clock::ManualClock;
use crate::metadata::{BrokerEndpoint, PartitionState, Snapshot, TopicState};
use crate::types::{BrokerId, LeaderEpoch};

pub fn snapshot(version: u64, topic: Option<&str>) -> Snapshot {
    let mut s = Snapshot::single_broker(
        "c",
        BrokerEndpoint {
            broker_id: BrokerId(0),
            host: "h".into(),
            port: 1,
            rack: None,
        },
    );
    s.version = version;
    if let Some(name) = topic {
        s = s.with_topic(TopicState {
            configs: Default::default(),
            name: name.into(),
            topic_id: uuid::Uuid::from_u128(9),
            is_internal: false,
            partitions: vec![PartitionState {
                partition: 0,
                leader: BrokerId(0),
                leader_epoch: LeaderEpoch(0),
                replicas: vec![BrokerId(0)],
                isr: vec![BrokerId(0)],
                offline_replicas: vec![],
            }],
        });
    }
    s
}

pub fn context(role: Role) -> Rc<ShardContext> {
    let base = ShardBase {
        n_shards: 1,
        config: Arc::new(crate::config::ServerConfig::default()),
        api_table: vec![],
        clock: Rc::new(ManualClock::new(0)),
        snapshot: snapshot(1, None),
        broker_tls: crate::io::broker_stream::BrokerTls::default(),
    };
    ShardContext::new(base, RolePart::Bare(role))
}
