use super::*;
use crate::metadata::snapshot::{BrokerEndpoint, PartitionState};
use crate::protocol::encode::encode;
use crate::types::LeaderEpoch;
use kafka_protocol::messages::api_versions_response::ApiVersionsResponse;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Decodable;

fn snapshot() -> Snapshot {
    Snapshot::single_broker(
        "cluster-A",
        BrokerEndpoint {
            broker_id: crate::types::BrokerId(3),
            host: "127.0.0.1".into(),
            port: 19092,
            rack: Some("r1".into()),
        },
    )
    .with_topic(TopicState {
        configs: Default::default(),
        name: "orders".into(),
        topic_id: Uuid::from_u128(0xfeed),
        is_internal: false,
        partitions: (0..2)
            .map(|p| PartitionState {
                partition: p,
                leader: crate::types::BrokerId(3),
                leader_epoch: LeaderEpoch(5),
                replicas: vec![crate::types::BrokerId(3)],
                isr: vec![crate::types::BrokerId(3)],
                offline_replicas: vec![],
            })
            .collect(),
    })
}

fn request(names: Option<&[&str]>) -> MetadataRequest {
    let mut r = MetadataRequest::default();
    r.topics = names.map(|ns| {
        ns.iter()
            .map(|n| {
                let mut t = MetadataRequestTopic::default();
                t.name = Some(TopicName(StrBytes::from_string((*n).to_owned())));
                t
            })
            .collect()
    });
    r
}

fn round_trip(resp: &MetadataResponse, version: i16) -> MetadataResponse {
    let mut bytes = encode(resp, version).unwrap();
    let decoded = MetadataResponse::decode(&mut bytes, version).unwrap();
    assert!(bytes.is_empty(), "v{version}: trailing bytes");
    decoded
}

#[test]
fn every_metadata_version_encodes_brokers_and_cluster_identity() {
    let snap = snapshot();
    for version in 0..=13 {
        let req = request(if version == 0 { Some(&[]) } else { None });
        let answer = metadata_response(&snap, &req, version, "PLAINTEXT", true);
        let decoded = round_trip(&answer.response, version);
        assert_eq!(decoded.brokers.len(), 1);
        assert_eq!(decoded.brokers[0].node_id, BrokerId(3));
        assert_eq!(decoded.brokers[0].host.as_str(), "127.0.0.1");
        assert_eq!(decoded.brokers[0].port, 19092);
        assert_eq!(decoded.topics.len(), 1, "v{version}: all topics");
        assert_eq!(decoded.topics[0].partitions.len(), 2);
        if version >= 1 {
            assert_eq!(decoded.controller_id, BrokerId(3));
            assert_eq!(
                decoded.brokers[0].rack.as_ref().map(|r| r.as_str()),
                Some("r1")
            );
        }
        if version >= 2 {
            assert_eq!(
                decoded.cluster_id.as_ref().map(|c| c.as_str()),
                Some("cluster-A")
            );
        }
        if version >= 7 {
            assert_eq!(decoded.topics[0].partitions[1].leader_epoch, 5);
        }
        if version >= 10 {
            assert_eq!(decoded.topics[0].topic_id, Uuid::from_u128(0xfeed));
        }
    }
}

#[test]
fn requested_topics_get_kafka_error_codes() {
    // (requested name, expected error, auto-create candidate?)
    let rows = [
        ("orders", ErrorCode::NONE, false),
        ("missing", ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, true),
        ("bad name!", ErrorCode::INVALID_TOPIC_EXCEPTION, false),
        ("..", ErrorCode::INVALID_TOPIC_EXCEPTION, false),
    ];
    let names: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let answer = metadata_response(&snapshot(), &request(Some(&names)), 12, "PLAINTEXT", true);
    for (i, (name, error, candidate)) in rows.iter().enumerate() {
        let topic = &answer.response.topics[i];
        assert_eq!(topic.name.as_ref().unwrap().0.as_str(), *name);
        assert_eq!(ErrorCode(topic.error_code), *error, "{name}");
        assert_eq!(
            answer.auto_create_candidates.contains(&name.to_string()),
            *candidate
        );
    }
}

#[test]
fn auto_create_needs_both_the_broker_config_and_the_request_flag() {
    let mut req = request(Some(&["missing"]));
    assert!(metadata_response(&snapshot(), &req, 12, "PLAINTEXT", false)
        .auto_create_candidates
        .is_empty());
    req.allow_auto_topic_creation = false;
    assert!(metadata_response(&snapshot(), &req, 12, "PLAINTEXT", true)
        .auto_create_candidates
        .is_empty());
    // v0–v3 have no flag: the broker config alone decides.
    assert_eq!(
        metadata_response(&snapshot(), &req, 3, "PLAINTEXT", true)
            .auto_create_candidates
            .len(),
        1
    );
}

#[test]
fn empty_topic_list_means_none_from_v1_and_all_at_v0() {
    let req = request(Some(&[]));
    assert_eq!(
        metadata_response(&snapshot(), &req, 1, "PLAINTEXT", true)
            .response
            .topics
            .len(),
        0
    );
    assert_eq!(
        metadata_response(&snapshot(), &req, 0, "PLAINTEXT", true)
            .response
            .topics
            .len(),
        1
    );
}

#[test]
fn duplicate_names_are_answered_once() {
    let req = request(Some(&["orders", "orders"]));
    assert_eq!(
        metadata_response(&snapshot(), &req, 9, "PLAINTEXT", true)
            .response
            .topics
            .len(),
        1
    );
}

#[test]
fn topic_ids_are_resolved_and_unknown_ids_reported() {
    let mut req = MetadataRequest::default();
    let mut known = MetadataRequestTopic::default();
    known.name = None;
    known.topic_id = Uuid::from_u128(0xfeed);
    let mut unknown = known.clone();
    unknown.topic_id = Uuid::from_u128(1);
    req.topics = Some(vec![known, unknown]);
    let resp = round_trip(
        &metadata_response(&snapshot(), &req, 12, "PLAINTEXT", true).response,
        12,
    );
    assert_eq!(resp.topics[0].name.as_ref().unwrap().0.as_str(), "orders");
    assert_eq!(
        ErrorCode(resp.topics[1].error_code),
        ErrorCode::UNKNOWN_TOPIC_ID
    );
    assert!(resp.topics[1].name.is_none());
}

#[test]
fn authorized_operations_only_when_asked_and_supported() {
    let mut req = request(None);
    req.include_cluster_authorized_operations = true;
    req.include_topic_authorized_operations = true;
    for version in [7, 8, 10, 11, 12] {
        let resp = round_trip(
            &metadata_response(&snapshot(), &req, version, "PLAINTEXT", true).response,
            version,
        );
        let cluster_ops = resp.cluster_authorized_operations;
        assert_eq!(
            cluster_ops != i32::MIN,
            (8..=10).contains(&version),
            "v{version}"
        );
        let topic_ops = resp.topics[0].topic_authorized_operations;
        assert_eq!(topic_ops != i32::MIN, version >= 8, "v{version}");
    }
}

#[test]
fn api_versions_v3_carries_only_the_finalized_features_epoch_tag() {
    let table = [
        ApiRange::new(ApiKey::Metadata, 0, 12),
        ApiRange::new(ApiKey::ApiVersions, 0, 4),
    ];
    let resp = api_versions_response(&table, ErrorCode::NONE);
    let bytes = encode(&resp, 3).unwrap();
    // error_code(2) + compact array len(1) + 2 × (key, min, max, tags)(7)
    // + throttle_time_ms(4) + the tagged-field section a Kafka 3.9
    // ZooKeeper-mode broker sends: one field, tag 1
    // (FinalizedFeaturesEpoch), 8 bytes, 0.
    let tags = [1u8, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(bytes.len(), 2 + 1 + 2 * 7 + 4 + tags.len());
    assert_eq!(&bytes[bytes.len() - tags.len()..], &tags);
    let decoded = ApiVersionsResponse::decode(&mut bytes.clone(), 3).unwrap();
    assert_eq!(decoded.api_keys.len(), 2);
    assert_eq!(decoded.api_keys[0].max_version, 12);
}

#[test]
fn api_versions_fallback_is_v0_with_unsupported_version() {
    let table = [ApiRange::new(ApiKey::ApiVersions, 0, 4)];
    let resp = api_versions_response(&table, ErrorCode::UNSUPPORTED_VERSION);
    let mut bytes = encode(&resp, 0).unwrap();
    let decoded = ApiVersionsResponse::decode(&mut bytes, 0).unwrap();
    assert_eq!(decoded.error_code, 35);
    assert_eq!(decoded.api_keys[0].max_version, 4);
}

fn describe(endpoint_type: i8, include_ops: bool, version: i16) -> DescribeClusterResponse {
    let mut req = DescribeClusterRequest::default();
    req.endpoint_type = endpoint_type;
    req.include_cluster_authorized_operations = include_ops;
    describe_cluster_response(&snapshot(), &req, version, "PLAINTEXT")
}

#[test]
fn describe_cluster_lists_the_snapshot_brokers_and_controller() {
    for version in 0..=1 {
        let resp = describe(1, false, version);
        assert_eq!(resp.error_code, 0);
        assert_eq!(resp.cluster_id.as_str(), "cluster-A");
        assert_eq!(resp.controller_id, 3);
        assert_eq!(resp.endpoint_type, 1);
        assert_eq!(resp.cluster_authorized_operations, i32::MIN);
        assert_eq!(resp.brokers.len(), 1);
        let b = &resp.brokers[0];
        assert_eq!((b.broker_id.0, b.port), (3, 19092));
        assert_eq!(b.rack.as_ref().map(|r| r.as_str()), Some("r1"));
        let bytes = encode(&resp, version).unwrap();
        let back = DescribeClusterResponse::decode(&mut bytes.clone(), version).unwrap();
        assert_eq!(back.brokers.len(), 1);
    }
    assert_eq!(
        describe(1, true, 1).cluster_authorized_operations,
        ALL_CLUSTER_OPERATIONS
    );
}

#[test]
fn describe_cluster_refuses_other_endpoint_types_as_a_zookeeper_broker() {
    assert_eq!(
        describe(2, false, 1).error_code,
        ErrorCode::MISMATCHED_ENDPOINT_TYPE.0
    );
    assert_eq!(
        describe(9, false, 1).error_code,
        ErrorCode::UNSUPPORTED_ENDPOINT_TYPE.0
    );
    assert_eq!(
        describe(9, false, 0).error_code,
        ErrorCode::INVALID_REQUEST.0
    );
    assert!(describe(2, false, 1).brokers.is_empty());
}

#[test]
fn describe_cluster_reports_an_unknown_controller_as_minus_one() {
    let mut s = snapshot();
    s.controller_id = crate::types::BrokerId(9);
    let resp = describe_cluster_response(&s, &DescribeClusterRequest::default(), 1, "PLAINTEXT");
    assert_eq!(resp.controller_id, -1);
}

#[test]
fn announced_topics_are_served_unless_a_stored_topic_shadows_them() {
    let mut s = snapshot();
    let announced = |name: &str, id: u128| TopicState {
        configs: Default::default(),
        name: name.into(),
        topic_id: Uuid::from_u128(id),
        is_internal: false,
        partitions: vec![PartitionState {
            partition: 4,
            leader: crate::types::BrokerId(1),
            leader_epoch: LeaderEpoch(2),
            replicas: vec![crate::types::BrokerId(1)],
            isr: vec![crate::types::BrokerId(1)],
            offline_replicas: vec![],
        }],
    };
    s.announced.insert("remote".into(), announced("remote", 7));
    s.announced.insert("orders".into(), announced("orders", 8));
    s.check_invariants().unwrap();
    let all = metadata_response(&s, &request(None), 12, "PLAINTEXT", false).response;
    let names: Vec<_> = all
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().0.to_string())
        .collect();
    assert_eq!(names, ["orders", "remote"]);
    let remote = &all.topics[1];
    assert_eq!(remote.partitions[0].partition_index, 4);
    assert_eq!(remote.topic_id, Uuid::from_u128(7));
    assert!(s.cluster_topic_by_id(Uuid::from_u128(8)).is_none());
    assert_eq!(all.topics[0].partitions.len(), 2);
}

#[test]
fn answers_list_the_endpoints_of_the_clients_listener() {
    let at = |id: i32, host: &str, port: u16| BrokerEndpoint {
        broker_id: crate::types::BrokerId(id),
        host: host.into(),
        port,
        rack: None,
    };
    let mut s = snapshot();
    // Broker 3 has both listeners; broker 4 (the leader of "orders"
    // partition 1) only the internal one.
    s.brokers = vec![at(3, "i3", 1), at(4, "i4", 2)];
    s.listener_brokers
        .insert("INTERNAL".into(), s.brokers.clone());
    s.listener_brokers
        .insert("EXTERNAL".into(), vec![at(3, "e3.example.com", 3)]);
    let mut orders = s.hosted_topics["orders"].clone();
    orders.partitions[1].leader = crate::types::BrokerId(4);
    orders.partitions[1]
        .replicas
        .push(crate::types::BrokerId(4));
    s = s.with_topic(orders);
    let hosts = |listener: &str, version: i16| {
        let r = metadata_response(&s, &request(None), version, listener, false).response;
        let brokers: Vec<String> = r
            .brokers
            .iter()
            .map(|b| format!("{}:{}", b.host.as_str(), b.port))
            .collect();
        let errors: Vec<i16> = r.topics[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        (brokers, errors)
    };
    assert_eq!(
        hosts("INTERNAL", 12),
        (vec!["i3:1".into(), "i4:2".into()], vec![0, 0])
    );
    assert_eq!(
        hosts("EXTERNAL", 12),
        (
            vec!["e3.example.com:3".into()],
            vec![0, ErrorCode::LISTENER_NOT_FOUND.0]
        )
    );
    assert_eq!(
        hosts("EXTERNAL", 5).1,
        vec![0, ErrorCode::LEADER_NOT_AVAILABLE.0]
    );
    assert!(hosts("OTHER", 12).0.is_empty());
    let described =
        describe_cluster_response(&s, &DescribeClusterRequest::default(), 1, "EXTERNAL");
    assert_eq!(described.brokers.len(), 1);
    assert_eq!(described.brokers[0].host.as_str(), "e3.example.com");
}
