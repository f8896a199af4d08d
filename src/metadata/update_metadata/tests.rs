use super::*;
use kafka_protocol_39::protocol::{Decodable, Encodable};

fn broker(id: i32, port: i32, rack: Option<&str>) -> LiveBroker {
    LiveBroker {
        id: BrokerId(id),
        endpoints: vec![
            BrokerListener {
                listener: "PLAINTEXT".into(),
                host: format!("h{id}"),
                port,
                security_protocol: PLAINTEXT,
            },
            BrokerListener {
                listener: "INTERNAL".into(),
                host: format!("i{id}"),
                port: port + 1,
                security_protocol: PLAINTEXT,
            },
        ],
        rack: rack.map(str::to_owned),
    }
}

fn partition(topic: &str, p: i32, leader: i32) -> AnnouncedPartition {
    AnnouncedPartition {
        topic: topic.into(),
        partition: p,
        controller_epoch: ControllerEpoch(1),
        leader: BrokerId(leader),
        leader_epoch: LeaderEpoch(4),
        isr: vec![BrokerId(0), BrokerId(1)],
        zk_version: PartitionEpoch(6),
        replicas: vec![BrokerId(0), BrokerId(1), BrokerId(2)],
        offline_replicas: vec![BrokerId(2)],
    }
}

fn request(controller_epoch: i32, broker_epoch: i64) -> UpdateMetadata {
    UpdateMetadata {
        controller_id: BrokerId(2),
        is_kraft_controller: false,
        controller_epoch: ControllerEpoch(controller_epoch),
        broker_epoch,
        partition_states: vec![partition("t", 0, 1), partition("t", 1, 0)],
        topic_ids: vec![("t".into(), Uuid::from_u128(9))],
        live_brokers: vec![
            broker(2, 9002, None),
            broker(0, 9000, Some("r0")),
            broker(1, 9001, Some("r1")),
        ],
    }
}

fn base() -> Snapshot {
    Snapshot::single_broker(
        "c",
        BrokerEndpoint {
            broker_id: BrokerId(0),
            host: "self".into(),
            port: 1,
            rack: None,
        },
    )
}

#[test]
fn an_accepted_request_replaces_brokers_and_controller_and_adds_partitions() {
    let mut cache = MetadataCache::new();
    assert_eq!(cache.overlay(base(), "PLAINTEXT"), base());
    assert_eq!(
        cache.on_update_metadata(request(3, 100), Some(100)),
        ErrorCode::NONE
    );
    assert_eq!(cache.controller_epoch(), ControllerEpoch(3));
    let s = cache.overlay(base(), "PLAINTEXT");
    s.check_invariants().unwrap();
    assert_eq!(s.controller_id, BrokerId(2));
    let brokers: Vec<_> = s
        .brokers
        .iter()
        .map(|b| (b.broker_id.0, b.host.as_str(), b.port, b.rack.as_deref()))
        .collect();
    assert_eq!(
        brokers,
        [
            (0, "h0", 9000, Some("r0")),
            (1, "h1", 9001, Some("r1")),
            (2, "h2", 9002, None)
        ]
    );
    let t = s.cluster_topic("t").unwrap();
    assert_eq!(t.topic_id, Uuid::from_u128(9));
    assert_eq!(t.partitions.len(), 2);
    assert_eq!(t.partitions[0].leader, BrokerId(1));
    assert_eq!(t.partitions[0].offline_replicas, [BrokerId(2)]);
    assert!(
        s.hosted_topic("t").is_none(),
        "announced topics are not hosted"
    );
    assert_eq!(
        cache.partition("t", 1).unwrap().zk_version,
        PartitionEpoch(6)
    );
    // The inter-broker listener picks the data path's endpoints; every
    // listener name keeps its own view for the clients connected to it.
    let internal = cache.overlay(base(), "INTERNAL");
    assert_eq!(internal.brokers[0].host, "i0");
    assert_eq!(
        internal.broker_on("PLAINTEXT", BrokerId(1)).unwrap().host,
        "h1"
    );
    assert_eq!(
        internal.broker_on("INTERNAL", BrokerId(1)).unwrap().port,
        9002
    );
    assert_eq!(internal.brokers_on("PLAINTEXT").len(), 3);
    assert!(internal.brokers_on("OTHER").is_empty());
    assert!(cache.overlay(base(), "OTHER").brokers.is_empty());
}

#[test]
fn fencing_rules_follow_kafka() {
    // (controller epoch, broker epoch in the request, own epoch) → error
    let rows = [
        (5, 100, Some(100), ErrorCode::NONE),
        (5, -1, Some(100), ErrorCode::NONE),
        (5, 101, Some(100), ErrorCode::NONE),
        (5, 99, Some(100), ErrorCode::STALE_BROKER_EPOCH),
        (5, 99, None, ErrorCode::NONE),
        (4, 100, Some(100), ErrorCode::STALE_CONTROLLER_EPOCH),
        // The broker epoch is checked first (KafkaApis before ReplicaManager).
        (4, 99, Some(100), ErrorCode::STALE_BROKER_EPOCH),
    ];
    for (controller_epoch, broker_epoch, own, expected) in rows {
        let mut cache = MetadataCache::new();
        assert_eq!(
            cache.on_update_metadata(request(5, -1), None),
            ErrorCode::NONE
        );
        let before = cache.clone();
        let mut req = request(controller_epoch, broker_epoch);
        req.controller_id = BrokerId(7);
        let got = cache.on_update_metadata(req, own);
        assert_eq!(got, expected, "{controller_epoch} {broker_epoch} {own:?}");
        if expected != ErrorCode::NONE {
            assert_eq!(cache, before, "a fenced request changes nothing");
        } else {
            assert_eq!(cache.controller_id(), BrokerId(7));
        }
    }
}

#[test]
fn leader_during_delete_removes_the_partition_and_empty_partition_states_keep_them() {
    let mut cache = MetadataCache::new();
    cache.on_update_metadata(request(1, -1), None);
    let mut keep = request(1, -1);
    keep.partition_states.clear();
    keep.topic_ids.clear();
    keep.live_brokers.truncate(1);
    cache.on_update_metadata(keep, None);
    assert!(cache.partition("t", 0).is_some());
    assert_eq!(cache.live_brokers().len(), 1);
    let mut delete = request(1, -1);
    delete.topic_ids.clear();
    delete.partition_states = vec![partition("t", 0, -2)];
    cache.on_update_metadata(delete.clone(), None);
    assert!(cache.partition("t", 0).is_none());
    assert_eq!(cache.topic_id("t"), Some(Uuid::from_u128(9)));
    delete.partition_states = vec![partition("t", 1, -2)];
    cache.on_update_metadata(delete, None);
    assert!(cache
        .overlay(base(), "PLAINTEXT")
        .cluster_topic("t")
        .is_none());
    assert_eq!(cache.topic_id("t"), None, "no partitions left, no id");
}

#[test]
fn stored_topics_shadow_announced_ones_of_the_same_name() {
    let mut cache = MetadataCache::new();
    cache.on_update_metadata(request(1, -1), None);
    let stored = TopicState {
        name: "t".into(),
        topic_id: Uuid::from_u128(1),
        is_internal: false,
        partitions: vec![],
        configs: Default::default(),
    };
    let s = cache.overlay(base().with_topic(stored), "PLAINTEXT");
    assert_eq!(s.cluster_topic("t").unwrap().topic_id, Uuid::from_u128(1));
    assert_eq!(s.cluster_topics().count(), 1);
}

#[test]
fn every_version_round_trips_through_the_kafka_3_9_codec() {
    let ours = request(3, 77);
    let wire = ours.to_request();
    for version in 0..=8i16 {
        let mut req = wire.clone();
        if version < 8 {
            req.is_k_raft_controller = false;
        }
        if version <= 4 {
            // Ungrouped partition states before v5 (topic name inline).
            req.ungrouped_partition_states = req
                .topic_states
                .drain(..)
                .flat_map(|t| {
                    let name = t.topic_name.clone();
                    t.partition_states
                        .into_iter()
                        .map(move |p| p.with_topic_name(name.clone()))
                })
                .collect();
        }
        if version == 0 {
            for b in &mut req.live_brokers {
                b.v0_host = b.endpoints[0].host.clone();
                b.v0_port = b.endpoints[0].port;
            }
        }
        let mut buf = bytes::BytesMut::new();
        req.encode(&mut buf, version).unwrap();
        let decoded = UpdateMetadataRequest::decode(&mut buf.freeze(), version).unwrap();
        let back = UpdateMetadata::from_request(&decoded, version);
        assert_eq!(back.controller_id, ours.controller_id, "v{version}");
        assert_eq!(back.controller_epoch, ours.controller_epoch);
        assert_eq!(
            back.broker_epoch,
            if version >= 5 { 77 } else { -1 },
            "v{version}"
        );
        let mut expected_parts = ours.partition_states.clone();
        if version < 4 {
            for p in &mut expected_parts {
                p.offline_replicas.clear();
            }
        }
        assert_eq!(back.partition_states, expected_parts, "v{version}");
        assert_eq!(back.topic_ids.len(), usize::from(version >= 7));
        let b = &back.live_brokers[0];
        assert_eq!(b.endpoints[0].listener, "PLAINTEXT", "v{version}");
        assert_eq!(b.endpoints[0].port, 9002);
        assert_eq!(b.rack, None);
        if version >= 2 {
            assert_eq!(back.live_brokers[1].rack.as_deref(), Some("r0"));
        }
        if version >= 3 {
            assert_eq!(b.endpoints[1].listener, "INTERNAL");
        } else if version >= 1 {
            // Named after the security protocol before v3.
            assert_eq!(b.endpoints[1].listener, "PLAINTEXT");
        }
    }
}
