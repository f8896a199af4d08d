//! The leader side of replication (issue 20) over real sockets: one
//! ZooKeeper-mode shardlog broker (a real ZooKeeper), told by a hand-played
//! controller (LeaderAndIsr, UpdateMetadata) that it leads `replicated-0`
//! with replicas {0, 1}; the test then plays follower 1 with Fetch v17
//! (`replica_state.replica_id = 1`) and asks OffsetForLeaderEpoch v4.
//!
//! Checked: an acks=all produce waits until the follower's fetch moves the
//! HW, consumers read to the HW while the follower reads to the LEO,
//! KIP-320 diverging epochs (also on a KIP-227 incremental fetch session),
//! `current_leader_epoch` fencing, unassigned
//! replicas, OffsetForLeaderEpoch lookups, acks=all timing out
//! (REQUEST_TIMED_OUT) without the follower, and acks=all with the ISR below
//! `min.insync.replicas` → NOT_ENOUGH_REPLICAS with nothing appended.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use common::cluster::{wait_for, with_zk};
use common::zookeeper::ZkServer;
use common::{Broker, Conn, FetchSpec};
use kafka_protocol::messages::fetch_request::{
    FetchPartition, FetchRequest, FetchTopic, ReplicaState,
};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::offset_for_leader_epoch_response::EpochEndOffset;
use kafka_protocol::messages::{ApiVersionsRequest, BrokerId as WireBrokerId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use kafka_protocol_39::messages::leader_and_isr_response::LeaderAndIsrResponse;
use kafka_protocol_39::messages::update_metadata_response::UpdateMetadataResponse;
use kafka_protocol_39::messages::{RequestHeader, ResponseHeader};
use kafka_protocol_39::protocol::{Decodable, Encodable};
use shardlog::controller::channel::update_metadata_v8;
use shardlog::metadata::leader_and_isr::{LeaderAndIsr, LeaderAndIsrPartition, PartitionErrors};
use shardlog::metadata::update_metadata::{
    AnnouncedPartition, BrokerListener, LiveBroker, PLAINTEXT,
};
use shardlog::protocol::api::{Api, ZkApi};
use shardlog::protocol::ErrorCode;
use shardlog::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch};
use shardlog::zk::paths::{self, ConfigZNode, TopicZNode};
use shardlog::zk::store::{create_recursive, CreateMode, MetadataStore};

const TOPIC: &str = "replicated";
const TOPIC_ID: u128 = 0x1ead_0000_0000_0000_0000_0000_0000_0020;
const ME: i32 = 0;
const FOLLOWER: i32 = 1;
/// Above the broker's own controller's epoch (a fresh ZooKeeper).
const CONTROLLER_EPOCH: i32 = 5;
const LEADER_EPOCH: i32 = 3;

fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

/// Broker 0 in ZooKeeper mode; `/controller` names broker 99 so the test
/// is the controller. The topic asks for `min.insync.replicas=2`.
fn start(zk: &ZkServer) -> Broker {
    let addr = zk.address();
    with_zk(&addr, |s| async move {
        shardlog::controller::brokers::create_top_level_paths(&s)
            .await
            .unwrap();
        s.create(
            paths::CONTROLLER,
            br#"{"version":2,"brokerid":99,"timestamp":"1","kraftControllerEpoch":-1}"#,
            CreateMode::Persistent,
        )
        .await
        .unwrap();
        let topic = TopicZNode::new(uuid::Uuid::from_u128(TOPIC_ID), [(0, ids(&[0, 1]))].into());
        create_recursive(
            &s,
            &paths::topic(TOPIC),
            &topic.encode(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
        let config =
            ConfigZNode::new([("min.insync.replicas".to_string(), "2".to_string())].into());
        create_recursive(
            &s,
            &paths::topic_config(TOPIC),
            &config.encode(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    });
    let broker = Broker::start_with(&[
        &format!("zookeeper.connect={addr}"),
        "zookeeper.session.timeout.ms=6000",
        &format!("broker.id={ME}"),
        "shardlog.shards=1",
        // The ISR check runs every lag/2: short enough to see it propose.
        "replica.lag.time.max.ms=2000",
    ]);
    wait_for(20, "the registration", || {
        let path = paths::broker_id(BrokerId(ME));
        with_zk(&addr, move |s| async move { s.get(&path).await.ok() })
    });
    broker
}

fn leader_and_isr(leader_epoch: i32, isr: &[i32]) -> LeaderAndIsr {
    LeaderAndIsr {
        controller_id: BrokerId(99),
        controller_epoch: ControllerEpoch(CONTROLLER_EPOCH),
        broker_epoch: -1,
        partitions: vec![LeaderAndIsrPartition {
            topic: TOPIC.into(),
            partition: 0,
            controller_epoch: ControllerEpoch(CONTROLLER_EPOCH),
            leader: BrokerId(ME),
            leader_epoch: LeaderEpoch(leader_epoch),
            isr: ids(isr),
            partition_epoch: PartitionEpoch(leader_epoch),
            replicas: ids(&[0, 1]),
            adding_replicas: vec![],
            removing_replicas: vec![],
            is_new: false,
            leader_recovery_state: 0,
        }],
        topic_ids: vec![(TOPIC.into(), uuid::Uuid::from_u128(TOPIC_ID))],
        live_leaders: vec![(BrokerId(ME), "127.0.0.1".into(), 0)],
    }
}

fn exchange(broker: &Broker, api: Api, version: i16, body: &[u8]) -> bytes::Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(api.code())
        .with_request_api_version(version)
        .with_correlation_id(41)
        .with_client_id(Some(
            kafka_protocol_39::protocol::StrBytes::from_static_str("99"),
        ));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, api.request_header_version(version))
        .unwrap();
    buf.put_slice(body);
    let mut frame = Vec::with_capacity(buf.len() + 4);
    frame.put_i32(buf.len() as i32);
    frame.extend_from_slice(&buf);
    let mut stream = broker.connect();
    let mut resp = common::round_trip(&mut stream, &frame);
    let h = ResponseHeader::decode(&mut resp, api.response_header_version(version)).unwrap();
    assert_eq!(h.correlation_id, 41);
    resp
}

fn send_leader_and_isr(broker: &Broker, req: &LeaderAndIsr) -> PartitionErrors {
    let mut body = BytesMut::new();
    req.to_request().encode(&mut body, 7).unwrap();
    let mut resp = exchange(broker, Api::Zk(ZkApi::LeaderAndIsr), 7, &body);
    let answer = LeaderAndIsrResponse::decode(&mut resp, 7).unwrap();
    req.errors_from_response(&answer, 7)
}

/// UpdateMetadata: broker 0 live, the partition led by 0.
fn announce(broker: &Broker, leader_epoch: i32, isr: &[i32]) {
    let live = LiveBroker {
        id: BrokerId(ME),
        endpoints: vec![BrokerListener {
            listener: "PLAINTEXT".into(),
            host: broker.host.clone(),
            port: i32::from(broker.port),
            security_protocol: PLAINTEXT,
        }],
        rack: None,
    };
    let announced = AnnouncedPartition {
        topic: TOPIC.into(),
        partition: 0,
        controller_epoch: ControllerEpoch(CONTROLLER_EPOCH),
        leader: BrokerId(ME),
        leader_epoch: LeaderEpoch(leader_epoch),
        isr: ids(isr),
        zk_version: PartitionEpoch(leader_epoch),
        replicas: ids(&[0, 1]),
        offline_replicas: vec![],
    };
    let req = update_metadata_v8(
        BrokerId(99),
        ControllerEpoch(CONTROLLER_EPOCH),
        -1,
        &[live],
        &[announced],
        &[(TOPIC.into(), uuid::Uuid::from_u128(TOPIC_ID))],
    );
    let mut body = BytesMut::new();
    req.to_request().encode(&mut body, 8).unwrap();
    let mut resp = exchange(broker, Api::Zk(ZkApi::UpdateMetadata), 8, &body);
    assert_eq!(
        UpdateMetadataResponse::decode(&mut resp, 8)
            .unwrap()
            .error_code,
        0
    );
}

/// What follower `replica` sends (Fetch v17: topic ids, ReplicaState).
struct FollowerFetch {
    replica: i32,
    offset: i64,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
    max_wait_ms: i32,
}

impl FollowerFetch {
    fn at(offset: i64) -> Self {
        Self {
            replica: FOLLOWER,
            offset,
            current_leader_epoch: LEADER_EPOCH,
            last_fetched_epoch: -1,
            max_wait_ms: 0,
        }
    }

    fn request(&self) -> FetchRequest {
        FetchRequest::default()
            .with_replica_state(
                ReplicaState::default()
                    .with_replica_id(WireBrokerId(self.replica))
                    .with_replica_epoch(-1),
            )
            .with_max_wait_ms(self.max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic_id(uuid::Uuid::from_u128(TOPIC_ID))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(self.current_leader_epoch)
                    .with_fetch_offset(self.offset)
                    .with_last_fetched_epoch(self.last_fetched_epoch)
                    .with_log_start_offset(0)
                    .with_partition_max_bytes(1 << 20)])])
    }

    fn send(&self, conn: &mut Conn) -> PartitionData {
        let resp = conn.call(17, &self.request());
        assert_eq!(resp.error_code, 0, "{resp:?}");
        let [t] = &resp.responses[..] else {
            panic!("one topic expected: {resp:?}")
        };
        assert_eq!(t.topic_id, uuid::Uuid::from_u128(TOPIC_ID));
        t.partitions[0].clone()
    }
}

fn offsets_in(part: &PartitionData) -> Vec<i64> {
    let mut out = Vec::new();
    for batch in common::whole_batches(part.records.as_ref()) {
        let base = i64::from_be_bytes(batch[..8].try_into().unwrap());
        out.extend(base..=common::batch_last_offset(&batch));
    }
    out
}

fn batch(value: &[u8]) -> bytes::Bytes {
    common::encode_batch(&[(None, value, common::now_ms())], Compression::None)
}

fn epoch_lookup(conn: &mut Conn, current: i32, epoch: i32) -> EpochEndOffset {
    conn.epoch_end_offset(TOPIC, 0, FOLLOWER, current, epoch)
}

#[test]
fn a_hand_played_follower_moves_the_hw_and_is_checked_by_epoch() {
    // The broker says at info when it proposes an ISR change (one test in
    // this binary: no other thread reads the environment meanwhile).
    std::env::set_var("RUST_LOG", "warn,shardlog::shard::router=info");
    let zk = ZkServer::standalone();
    let broker = start(&zk);
    let errors = send_leader_and_isr(&broker, &leader_and_isr(LEADER_EPOCH, &[0, 1]));
    assert_eq!(
        errors.partition(TOPIC, 0),
        Some(ErrorCode::NONE),
        "{errors:?}"
    );
    announce(&broker, LEADER_EPOCH, &[0, 1]);
    let mut client = Conn::open(&broker);
    let mut follower = Conn::open(&broker);

    // ApiVersions advertises Fetch v17 and OffsetForLeaderEpoch v0-v4 (as Kafka 3.9).
    let versions = client.call(
        3,
        &ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("t"))
            .with_client_software_version(StrBytes::from_static_str("0")),
    );
    let range = |key: i16| {
        let k = versions.api_keys.iter().find(|k| k.api_key == key).unwrap();
        (k.min_version, k.max_version)
    };
    assert_eq!(range(1).1, 17);
    assert_eq!(range(23), (0, 4));

    acks_all_waits_for_the_follower(&mut client, &mut follower);
    consumers_read_to_the_hw_followers_to_the_leo(&mut client, &mut follower);
    diverging_and_fenced_follower_fetches(&mut follower);
    offset_for_leader_epoch_answers(&mut follower);
    old_offset_for_leader_epoch_versions(&broker);
    acks_all_times_out_without_the_follower(&mut client);
    the_isr_check_proposes_a_shrink(&broker);

    // A new epoch with the ISR = {0} alone: min.insync.replicas=2 refuses
    // acks=all before the append; acks=1 still appends.
    let errors = send_leader_and_isr(&broker, &leader_and_isr(LEADER_EPOCH + 1, &[0]));
    assert_eq!(
        errors.partition(TOPIC, 0),
        Some(ErrorCode::NONE),
        "{errors:?}"
    );
    let before = client
        .list_offset(TOPIC, 0, common::LATEST_TIMESTAMP)
        .offset;
    let r = client.produce(TOPIC, 0, batch(b"refused"), -1);
    assert_eq!(r.error_code, ErrorCode::NOT_ENOUGH_REPLICAS.0, "{r:?}");
    let after = client
        .list_offset(TOPIC, 0, common::LATEST_TIMESTAMP)
        .offset;
    assert_eq!(before, after, "nothing appended");
    let mut spec = FollowerFetch::at(0);
    spec.current_leader_epoch = LEADER_EPOCH + 1;
    let part = spec.send(&mut follower);
    assert_eq!(part.high_watermark, before, "no record past the HW");
    let r = client.produce(TOPIC, 0, batch(b"acks1"), 1);
    assert_eq!((r.error_code, r.base_offset), (0, before));
    broker.stop();
}

/// acks=all with ISR {0, 1}: appended at once, answered only once the
/// follower's next fetch (at the LEO) moves the HW.
fn acks_all_waits_for_the_follower(client: &mut Conn, follower: &mut Conn) {
    let req = kafka_protocol::messages::ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![
            kafka_protocol::messages::produce_request::TopicProduceData::default()
                .with_name(common::topic_name(TOPIC))
                .with_partition_data(vec![
                    kafka_protocol::messages::produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(batch(b"zero"))),
                ]),
        ]);
    let produce_id = client.send(9, &req);
    // The follower sees the record (up to the LEO) while the HW is 0.
    let part = wait_for(10, "the record at the follower", || {
        let p = FollowerFetch::at(0).send(follower);
        (!offsets_in(&p).is_empty()).then_some(p)
    });
    assert_eq!(part.error_code, 0);
    assert_eq!(offsets_in(&part), [0]);
    assert_eq!(part.high_watermark, 0, "the follower has not confirmed yet");
    // The fetch at 1 says the follower has offset 0: HW → 1, produce answers.
    let part = FollowerFetch::at(1).send(follower);
    assert_eq!(part.error_code, 0);
    assert_eq!(part.high_watermark, 1);
    let resp = client.recv::<kafka_protocol::messages::ProduceRequest>(9, produce_id);
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 0), "{resp:?}");
}

/// acks=1 appends offset 1: the follower reads it (LEO 2), a consumer
/// stops at the HW (1) until the follower confirms.
fn consumers_read_to_the_hw_followers_to_the_leo(client: &mut Conn, follower: &mut Conn) {
    let r = client.produce(TOPIC, 0, batch(b"one"), 1);
    assert_eq!((r.error_code, r.base_offset), (0, 1));
    let consumer = client.fetch(&FetchSpec::new(TOPIC, 0, 0));
    assert_eq!(consumer.high_watermark, 1);
    assert_eq!(offsets_in(&consumer), [0], "consumers stop at the HW");
    let part = FollowerFetch::at(1).send(follower);
    assert_eq!(offsets_in(&part), [1], "followers read to the LEO");
    let part = FollowerFetch::at(2).send(follower);
    assert_eq!(part.high_watermark, 2);
    let consumer = client.fetch(&FetchSpec::new(TOPIC, 0, 0));
    assert_eq!(offsets_in(&consumer), [0, 1]);
}

fn diverging_and_fenced_follower_fetches(follower: &mut Conn) {
    // Last fetched epoch 2 (before our first epoch, 3, which starts at 0):
    // the follower must truncate to 0 (KIP-320).
    let mut spec = FollowerFetch::at(2);
    spec.last_fetched_epoch = 2;
    spec.max_wait_ms = 5_000;
    let started = Instant::now();
    let part = spec.send(follower);
    assert_eq!(part.error_code, 0);
    assert_eq!(
        (part.diverging_epoch.epoch, part.diverging_epoch.end_offset),
        (2, 0)
    );
    assert!(offsets_in(&part).is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "answered without waiting"
    );
    // The same in a KIP-227 session: the full fetch opening it and an
    // incremental one that lists nothing (the session remembers the
    // follower's last fetched epoch, as Kafka's CachedPartition does).
    spec.max_wait_ms = 0;
    let opening = spec.request().with_session_epoch(0);
    let resp = follower.call(17, &opening);
    assert_eq!(resp.error_code, 0, "{resp:?}");
    assert_ne!(resp.session_id, 0, "the leader opened a session");
    let part = &resp.responses[0].partitions[0];
    assert_eq!(part.diverging_epoch.epoch, 2, "{resp:?}");
    let incremental = spec
        .request()
        .with_session_id(resp.session_id)
        .with_session_epoch(1)
        .with_topics(vec![]);
    let resp = follower.call(17, &incremental);
    assert_eq!(resp.error_code, 0, "{resp:?}");
    let [t] = &resp.responses[..] else {
        panic!("the diverging partition is answered: {resp:?}")
    };
    assert_eq!(
        (
            t.partitions[0].diverging_epoch.epoch,
            t.partitions[0].diverging_epoch.end_offset
        ),
        (2, 0),
        "an incremental fetch is checked by epoch too"
    );
    // Our own epoch at the LEO: no divergence.
    spec.last_fetched_epoch = LEADER_EPOCH;
    let part = spec.send(follower);
    assert_eq!(part.diverging_epoch.epoch, -1);

    let rows = [
        (FOLLOWER, LEADER_EPOCH - 1, ErrorCode::FENCED_LEADER_EPOCH),
        (FOLLOWER, LEADER_EPOCH + 1, ErrorCode::UNKNOWN_LEADER_EPOCH),
        (7, LEADER_EPOCH, ErrorCode::NOT_LEADER_OR_FOLLOWER),
        (ME, LEADER_EPOCH, ErrorCode::NOT_LEADER_OR_FOLLOWER),
        // A consumer (replica id -1) is fenced by its epoch too (KIP-320).
        (-1, LEADER_EPOCH - 1, ErrorCode::FENCED_LEADER_EPOCH),
        (-1, LEADER_EPOCH + 1, ErrorCode::UNKNOWN_LEADER_EPOCH),
    ];
    for (replica, epoch, want) in rows {
        let mut spec = FollowerFetch::at(0);
        spec.replica = replica;
        spec.current_leader_epoch = epoch;
        let part = spec.send(follower);
        assert_eq!(part.error_code, want.0, "replica {replica} epoch {epoch}");
        assert!(offsets_in(&part).is_empty());
    }
}

/// acks=all, the follower silent: appended, answered REQUEST_TIMED_OUT at
/// `timeout_ms` (the HW stays below the batch).
fn acks_all_times_out_without_the_follower(client: &mut Conn) {
    let req = kafka_protocol::messages::ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(300)
        .with_topic_data(vec![
            kafka_protocol::messages::produce_request::TopicProduceData::default()
                .with_name(common::topic_name(TOPIC))
                .with_partition_data(vec![
                    kafka_protocol::messages::produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(batch(b"unconfirmed"))),
                ]),
        ]);
    let resp = client.call(9, &req);
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!(p.error_code, ErrorCode::REQUEST_TIMED_OUT.0, "{resp:?}");
    assert_eq!(
        client
            .list_offset(TOPIC, 0, common::LATEST_TIMESTAMP)
            .offset,
        2,
        "HW"
    );
}

fn offset_for_leader_epoch_answers(conn: &mut Conn) {
    // LEO 2, epochs {3@0}.
    let rows = [
        (LEADER_EPOCH, LEADER_EPOCH, 0, LEADER_EPOCH, 2),
        (-1, LEADER_EPOCH, 0, LEADER_EPOCH, 2),
        (LEADER_EPOCH, 2, 0, 2, 0),
        (LEADER_EPOCH, 9, 0, -1, -1),
        (
            LEADER_EPOCH - 1,
            LEADER_EPOCH,
            ErrorCode::FENCED_LEADER_EPOCH.0,
            -1,
            -1,
        ),
        (
            LEADER_EPOCH + 1,
            LEADER_EPOCH,
            ErrorCode::UNKNOWN_LEADER_EPOCH.0,
            -1,
            -1,
        ),
    ];
    for (current, epoch, error, want_epoch, want_end) in rows {
        let a = epoch_lookup(conn, current, epoch);
        assert_eq!(
            (a.error_code, a.leader_epoch, a.end_offset),
            (error, want_epoch, want_end),
            "current {current} epoch {epoch}"
        );
    }
}

/// v0 and v1 (Kafka 3.9 still serves them; no current_leader_epoch, and
/// a v0 answer carries no epoch), encoded with the Kafka 3.9 codec.
fn old_offset_for_leader_epoch_versions(broker: &Broker) {
    use kafka_protocol_39::messages::offset_for_leader_epoch_request as q;
    use kafka_protocol_39::messages::offset_for_leader_epoch_response::OffsetForLeaderEpochResponse;
    for (version, epoch, want) in [
        (0, 2, (0, -1, 0)),
        (1, 2, (0, 2, 0)),
        (1, LEADER_EPOCH, (0, LEADER_EPOCH, 2)),
    ] {
        let req = q::OffsetForLeaderEpochRequest::default().with_topics(vec![
            q::OffsetForLeaderTopic::default()
                .with_topic(kafka_protocol_39::messages::TopicName(
                    kafka_protocol_39::protocol::StrBytes::from_static_str(TOPIC),
                ))
                .with_partitions(vec![q::OffsetForLeaderPartition::default()
                    .with_partition(0)
                    .with_leader_epoch(epoch)]),
        ]);
        let mut body = BytesMut::new();
        req.encode(&mut body, version).unwrap();
        let api = Api::Kafka(kafka_protocol::messages::ApiKey::OffsetForLeaderEpoch);
        let mut resp = exchange(broker, api, version, &body);
        let r = OffsetForLeaderEpochResponse::decode(&mut resp, version).unwrap();
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.leader_epoch, p.end_offset),
            want,
            "v{version} epoch {epoch}"
        );
    }
}

/// With the follower silent past `replica.lag.time.max.ms`, the leader's
/// periodic check proposes the shrink (the controller side answers later
/// work; this broker is not the controller).
fn the_isr_check_proposes_a_shrink(broker: &Broker) {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen
        .iter()
        .any(|l: &String| l.contains("proposing ISR change"))
    {
        assert!(
            Instant::now() < deadline,
            "no ISR shrink proposal in the broker's log: {seen:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
        seen.extend(broker.log_lines());
    }
}
