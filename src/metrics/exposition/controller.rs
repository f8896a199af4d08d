//! `[pure]` The `KafkaController` gauges and the `ControllerEventManager`
//! series (Kafka's `controller/KafkaController.scala`,
//! `ControllerEventManager.scala`), named as the parent module says.

use super::more::timer;
use super::{Builder, Kind, Value};
use crate::metrics::report::BrokerReport;

/// `kafka.controller:type=KafkaController` on every broker: the counts
/// are 0 except on the active controller (`KafkaController.updateMetrics`),
/// and `kafka.controller:type=ControllerEventManager`.
pub(super) fn kafka_controller(b: &mut Builder, r: &BrokerReport) {
    let c = &r.controller;
    let on = |v: u64| if c.active { v } else { 0 };
    let stats = &r.control.controller;
    let counts = stats.counts.unwrap_or_default();
    let gauges: [(&str, &str, u64); 13] = [
        (
            "activecontrollercount",
            "ActiveControllerCount",
            u64::from(c.active),
        ),
        (
            "offlinepartitionscount",
            "OfflinePartitionsCount",
            on(c.offline_partitions),
        ),
        (
            "globalpartitioncount",
            "GlobalPartitionCount",
            on(c.global_partitions),
        ),
        ("globaltopiccount", "GlobalTopicCount", on(c.global_topics)),
        (
            "activebrokercount",
            "ActiveBrokerCount",
            on(c.active_brokers),
        ),
        (
            "preferredreplicaimbalancecount",
            "PreferredReplicaImbalanceCount",
            on(counts.preferred_replica_imbalance),
        ),
        // `KafkaController`: "FencedBrokerCount metric is always 0 in the
        // ZK controller" (a KRaft controller fences brokers; ZooKeeper
        // mode has no fencing).
        ("fencedbrokercount", "FencedBrokerCount", 0),
        (
            "topicstodeletecount",
            "TopicsToDeleteCount",
            on(counts.topics_to_delete),
        ),
        (
            "replicastodeletecount",
            "ReplicasToDeleteCount",
            on(counts.replicas_to_delete),
        ),
        (
            "topicsineligibletodeletecount",
            "TopicsIneligibleToDeleteCount",
            on(counts.topics_ineligible_to_delete),
        ),
        (
            "replicasineligibletodeletecount",
            "ReplicasIneligibleToDeleteCount",
            on(counts.replicas_ineligible_to_delete),
        ),
        // What the event thread is processing on every broker (0 = Idle).
        (
            "controllerstate",
            "ControllerState",
            u64::from(stats.state.value()),
        ),
        // `KafkaController` registers `ZkMigrationState` as
        // `ZkMigrationState.ZK.value()` (4): a ZooKeeper-mode controller,
        // never migrating (KIP-866's states belong to KRaft controllers).
        ("zkmigrationstate", "ZkMigrationState", 4),
    ];
    for (name, mbean, v) in gauges {
        b.one(
            &format!("kafka_controller_kafkacontroller_{name}"),
            &format!("kafka.controller:type=KafkaController,name={mbean} (Value)"),
            Kind::Gauge,
            Value::U(v),
        );
    }
    b.one(
        "kafka_controller_controllereventmanager_eventqueuesize",
        "kafka.controller:type=ControllerEventManager,name=EventQueueSize (Value)",
        Kind::Gauge,
        Value::U(stats.event_queue_size),
    );
    timer(
        b,
        "kafka_controller_controllereventmanager_eventqueuetimems",
        "kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs",
        stats.event_queue_time_count,
        stats.event_queue_time_recent.as_ref(),
    );
}
