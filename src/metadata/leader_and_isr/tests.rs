use super::*;
use bytes::BytesMut;
use kafka_protocol_39::protocol::{Decodable, Encodable};

fn b(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

fn state(topic: &str, partition: i32) -> LeaderAndIsrPartition {
    LeaderAndIsrPartition {
        topic: topic.into(),
        partition,
        controller_epoch: ControllerEpoch(3),
        leader: BrokerId(1),
        leader_epoch: LeaderEpoch(7),
        isr: b(&[1, 2]),
        partition_epoch: PartitionEpoch(9),
        replicas: b(&[1, 2, 3]),
        adding_replicas: b(&[3]),
        removing_replicas: b(&[]),
        is_new: true,
        leader_recovery_state: 1,
    }
}

fn request() -> LeaderAndIsr {
    LeaderAndIsr {
        controller_id: BrokerId(2),
        controller_epoch: ControllerEpoch(4),
        broker_epoch: 88,
        partitions: vec![state("a", 0), state("b", 1), state("a", 2)],
        topic_ids: vec![
            ("a".into(), Uuid::from_u128(1)),
            ("b".into(), Uuid::from_u128(2)),
        ],
        live_leaders: vec![(BrokerId(1), "h1".into(), 9092)],
    }
}

/// Encode at `version` what a controller of that version would send, and
/// decode it back through the codec.
fn wire_round_trip(req: &LeaderAndIsrRequest, version: i16) -> LeaderAndIsrRequest {
    let mut buf = BytesMut::new();
    req.encode(&mut buf, version).unwrap();
    let mut bytes = buf.freeze();
    LeaderAndIsrRequest::decode(&mut bytes, version).unwrap()
}

/// The v7 request reshaped for `version` (v0–1 ungrouped, no ids below v5).
pub(crate) fn leader_and_isr_at(req: &LeaderAndIsr, version: i16) -> LeaderAndIsrRequest {
    let mut wire = req.to_request();
    if version < 7 {
        wire.is_k_raft_controller = false;
    }
    if version < 5 {
        wire._type = 0;
    }
    if version < 6 {
        for t in &mut wire.topic_states {
            for p in &mut t.partition_states {
                p.leader_recovery_state = 0;
            }
        }
    }
    if version <= 1 {
        wire.ungrouped_partition_states = wire
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
    wire
}

#[test]
fn v7_round_trips_every_field() {
    let req = request();
    let back = LeaderAndIsr::from_request(&wire_round_trip(&req.to_request(), 7), 7);
    // Grouped by topic in first-seen order.
    let order: Vec<(&str, i32)> = back
        .partitions
        .iter()
        .map(|p| (p.topic.as_str(), p.partition))
        .collect();
    assert_eq!(order, [("a", 0), ("a", 2), ("b", 1)]);
    let mut expected = req.clone();
    expected.partitions = vec![state("a", 0), state("a", 2), state("b", 1)];
    assert_eq!(back, expected);
    assert_eq!(back.topic_id("a"), Some(Uuid::from_u128(1)));
    assert_eq!(back.topic_id("zzz"), None);
}

#[test]
fn older_versions_drop_what_they_do_not_carry() {
    let req = request();
    for version in 0..=7 {
        let back = LeaderAndIsr::from_request(
            &wire_round_trip(&leader_and_isr_at(&req, version), version),
            version,
        );
        let p = &back.partitions[0];
        assert_eq!(
            (p.leader, p.leader_epoch),
            (BrokerId(1), LeaderEpoch(7)),
            "v{version}"
        );
        assert_eq!(p.isr, b(&[1, 2]));
        assert_eq!(p.partition_epoch, PartitionEpoch(9));
        assert_eq!(back.partitions.len(), 3);
        assert_eq!(back.controller_epoch, ControllerEpoch(4));
        assert_eq!(back.live_leaders, req.live_leaders);
        assert_eq!(back.broker_epoch, if version >= 2 { 88 } else { -1 });
        assert_eq!(p.is_new, version >= 1);
        assert_eq!(
            p.adding_replicas,
            if version >= 3 { b(&[3]) } else { vec![] }
        );
        assert_eq!(p.leader_recovery_state, if version >= 6 { 1 } else { 0 });
        assert_eq!(back.topic_ids.is_empty(), version < 5);
    }
}

#[test]
fn a_zero_topic_id_is_no_topic_id() {
    let mut req = request();
    req.topic_ids[0].1 = Uuid::nil();
    assert_eq!(req.topic_id("a"), None);
}

#[test]
fn responses_name_topics_before_v5_and_group_by_topic_id_from_v5() {
    let req = request();
    let errors = PartitionErrors {
        error: ErrorCode::NONE,
        partitions: vec![
            ("a".into(), 0, ErrorCode::NONE),
            ("b".into(), 1, ErrorCode::FENCED_LEADER_EPOCH),
            ("a".into(), 2, ErrorCode::STALE_CONTROLLER_EPOCH),
        ],
    };
    for version in 0..=7 {
        let resp = req.response(&errors, version);
        let mut buf = BytesMut::new();
        resp.encode(&mut buf, version).unwrap();
        let mut bytes = buf.freeze();
        let decoded = LeaderAndIsrResponse::decode(&mut bytes, version).unwrap();
        if version >= 5 {
            assert_eq!(decoded.topics.len(), 2, "v{version}");
            assert_eq!(decoded.topics[0].topic_id, Uuid::from_u128(1));
            assert_eq!(decoded.topics[0].partition_errors.len(), 2);
        } else {
            assert_eq!(decoded.partition_errors.len(), 3);
        }
        let mut back = req.errors_from_response(&decoded, version);
        back.partitions.sort();
        let mut want = errors.clone();
        want.partitions.sort();
        assert_eq!(back, want, "v{version}");
    }
}

#[test]
fn the_error_response_names_every_partition() {
    let r = request().error_response(ErrorCode::STALE_BROKER_EPOCH);
    assert_eq!(r.error, ErrorCode::STALE_BROKER_EPOCH);
    assert_eq!(r.partitions.len(), 3);
    assert_eq!(r.partition("b", 1), Some(ErrorCode::STALE_BROKER_EPOCH));
    assert_eq!(r.partition("b", 0), None);
}

fn stop() -> StopReplica {
    StopReplica {
        controller_id: BrokerId(2),
        controller_epoch: ControllerEpoch(4),
        broker_epoch: 88,
        partitions: vec![
            StopReplicaPartition {
                topic: "a".into(),
                partition: 0,
                leader_epoch: LeaderEpoch(5),
                delete: true,
            },
            StopReplicaPartition {
                topic: "a".into(),
                partition: 1,
                leader_epoch: EPOCH_DURING_DELETE,
                delete: false,
            },
        ],
    }
}

#[test]
fn stop_replica_v4_round_trips() {
    let req = stop();
    let mut buf = BytesMut::new();
    req.to_request().encode(&mut buf, 4).unwrap();
    let mut bytes = buf.freeze();
    let back = StopReplica::from_request(&StopReplicaRequest::decode(&mut bytes, 4).unwrap(), 4);
    assert_eq!(back, req);
}

#[test]
fn stop_replica_below_v3_applies_the_top_level_delete_flag_without_epochs() {
    use kafka_protocol_39::messages::stop_replica_request::{
        StopReplicaPartitionV0, StopReplicaTopicV1,
    };
    for version in 0..=2 {
        let mut wire = StopReplicaRequest::default()
            .with_controller_epoch(4)
            .with_broker_epoch(if version >= 1 { 88 } else { -1 })
            .with_delete_partitions(true);
        if version == 0 {
            wire.ungrouped_partitions = vec![StopReplicaPartitionV0::default()
                .with_topic_name(topic_name39("a"))
                .with_partition_index(3)];
        } else {
            wire.topics = vec![StopReplicaTopicV1::default()
                .with_name(topic_name39("a"))
                .with_partition_indexes(vec![3, 4])];
        }
        let mut buf = BytesMut::new();
        wire.encode(&mut buf, version).unwrap();
        let mut bytes = buf.freeze();
        let back = StopReplica::from_request(
            &StopReplicaRequest::decode(&mut bytes, version).unwrap(),
            version,
        );
        assert!(back
            .partitions
            .iter()
            .all(|p| p.delete && p.leader_epoch == NO_EPOCH));
        assert_eq!(back.partitions[0].partition, 3);
        assert_eq!(back.partitions.len(), if version == 0 { 1 } else { 2 });
        assert_eq!(back.broker_epoch, if version >= 1 { 88 } else { -1 });
    }
}

#[test]
fn stop_replica_responses_encode_at_every_version() {
    let errors = PartitionErrors {
        error: ErrorCode::NONE,
        partitions: vec![("a".into(), 0, ErrorCode::FENCED_LEADER_EPOCH)],
    };
    for version in 0..=4 {
        let mut buf = BytesMut::new();
        stop_replica_response(&errors)
            .encode(&mut buf, version)
            .unwrap();
        let mut bytes = buf.freeze();
        let back = StopReplicaResponse::decode(&mut bytes, version).unwrap();
        assert_eq!(stop_replica_errors(&back), errors);
    }
}
