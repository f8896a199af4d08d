//! LeaderAndIsr (key 4) and StopReplica (key 5) from a ZooKeeper-mode
//! controller: one shardlog broker in ZooKeeper mode (a real ZooKeeper,
//! Debian's `zookeeper`, started by the test) is told over raw sockets
//! (Kafka 3.9's codec, kafka-protocol 0.15.1) which partitions it hosts.
//! The partition folder appears, kcat produces to it once an
//! UpdateMetadata announces it, a second LeaderAndIsr makes it follower
//! (produce: NOT_LEADER_OR_FOLLOWER) and a third leader again with its
//! data; the epoch fences (broker, controller, leader epochs), StopReplica
//! keeping or deleting the folder, v0 of both requests, a malformed frame,
//! and the controller → broker channel's `send_leader_and_isr` /
//! `send_stop_replica` driving the same broker.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use common::zookeeper::ZkServer;
use common::{executor, Broker, Conn, FetchSpec};
use kafka_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kafka_protocol::records::Compression;
use kafka_protocol_39::messages::leader_and_isr_response::LeaderAndIsrResponse;
use kafka_protocol_39::messages::stop_replica_request::{
    StopReplicaPartitionV0, StopReplicaRequest,
};
use kafka_protocol_39::messages::stop_replica_response::StopReplicaResponse;
use kafka_protocol_39::messages::update_metadata_response::UpdateMetadataResponse;
use kafka_protocol_39::messages::{RequestHeader, ResponseHeader, TopicName};
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};
use shardlog::controller::channel::{
    update_metadata_v8, BrokerAddress, ChannelConfig, ControllerChannel,
};
use shardlog::metadata::leader_and_isr::{
    stop_replica_errors, LeaderAndIsr, LeaderAndIsrPartition, PartitionErrors, StopReplica,
    StopReplicaPartition, EPOCH_DURING_DELETE,
};
use shardlog::metadata::update_metadata::{
    AnnouncedPartition, BrokerListener, LiveBroker, PLAINTEXT,
};
use shardlog::protocol::api::{Api, ZkApi};
use shardlog::protocol::ErrorCode;
use shardlog::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch};
use shardlog::zk::client::ZkStore;
use shardlog::zk::paths::{self, ConfigZNode, TopicZNode};
use shardlog::zk::store::{create_recursive, CreateMode, MetadataStore};

const TOPIC: &str = "hosted";
const TOPIC_ID: u128 = 0x1ead_0000_0000_0000_0000_0000_0000_0004;
/// This broker; broker 1 exists only in what the "controller" says.
const ME: i32 = 0;
/// Well above the broker's own controller's epoch (1, a fresh ZooKeeper),
/// so its own UpdateMetadata cannot override the test's.
const EPOCH: i32 = 5;

fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

/// Run `f` against ZooKeeper on a glommio executor (as the broker does).
fn with_zk<T, F, Fut>(zk: &str, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce(ZkStore) -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
{
    let zk = zk.to_string();
    executor::spawn(move || {
        Box::pin(async move {
            let store = ZkStore::connect(&zk, 10_000, 10_000)
                .await
                .expect("connect");
            let out = f(store.clone()).await;
            store.close().await;
            out
        })
    })
    .join()
    .expect("executor thread")
}

fn wait_for<T>(secs: u64, what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A ZooKeeper-mode broker 0 (2 data shards) and its registration epoch
/// (the czxid of `/brokers/ids/0`), with TOPIC's assignment and configs
/// written as CreateTopics would. The test is the controller: a
/// `/controller` znode naming broker 99 (persistent, so it outlives the
/// set-up session) keeps broker 0 from winning the election and doing the
/// controller's duties itself.
fn start(zk: &ZkServer) -> (Broker, i64) {
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
        let topic = TopicZNode::new(
            uuid::Uuid::from_u128(TOPIC_ID),
            [(0, ids(&[0, 1])), (1, ids(&[1]))].into(),
        );
        create_recursive(
            &s,
            &paths::topic(TOPIC),
            &topic.encode(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
        let config =
            ConfigZNode::new([("retention.ms".to_string(), "86400001".to_string())].into());
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
    ]);
    let epoch = wait_for(20, "the registration", || {
        let path = paths::broker_id(BrokerId(ME));
        with_zk(&addr, move |s| async move { s.get(&path).await.ok() }).map(|(_, st)| st.czxid)
    });
    (broker, epoch)
}

fn partition(p: i32, leader: i32, leader_epoch: i32, replicas: &[i32]) -> LeaderAndIsrPartition {
    LeaderAndIsrPartition {
        topic: TOPIC.into(),
        partition: p,
        controller_epoch: ControllerEpoch(EPOCH),
        leader: BrokerId(leader),
        leader_epoch: LeaderEpoch(leader_epoch),
        // The leader alone in the ISR: the fake broker 1 never fetches, so
        // an ISR naming it would hold the high watermark back.
        isr: ids(&[leader]),
        partition_epoch: PartitionEpoch(leader_epoch),
        replicas: ids(replicas),
        adding_replicas: vec![],
        removing_replicas: vec![],
        is_new: leader_epoch == 0,
        leader_recovery_state: 0,
    }
}

fn leader_and_isr(controller_epoch: i32, partitions: Vec<LeaderAndIsrPartition>) -> LeaderAndIsr {
    LeaderAndIsr {
        controller_id: BrokerId(1),
        controller_epoch: ControllerEpoch(controller_epoch),
        broker_epoch: -1,
        partitions,
        topic_ids: vec![(TOPIC.into(), uuid::Uuid::from_u128(TOPIC_ID))],
        live_leaders: vec![(BrokerId(ME), "127.0.0.1".into(), 0)],
    }
}

fn stop(controller_epoch: i32, p: i32, leader_epoch: i32, delete: bool) -> StopReplica {
    StopReplica {
        controller_id: BrokerId(1),
        controller_epoch: ControllerEpoch(controller_epoch),
        broker_epoch: -1,
        partitions: vec![StopReplicaPartition {
            topic: TOPIC.into(),
            partition: p,
            leader_epoch: LeaderEpoch(leader_epoch),
            delete,
        }],
    }
}

/// Size prefix, request header (v1, or v2 when flexible) and `body`.
fn frame(api: ZkApi, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let api = Api::Zk(api);
    let header = RequestHeader::default()
        .with_request_api_key(api.code())
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("1")));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, api.request_header_version(version))
        .unwrap();
    buf.put_slice(body);
    let mut out = Vec::with_capacity(buf.len() + 4);
    out.put_i32(buf.len() as i32);
    out.extend_from_slice(&buf);
    out
}

/// One request on a fresh connection; the response body after its header.
fn exchange(broker: &Broker, api: ZkApi, version: i16, body: &[u8]) -> Bytes {
    let mut stream = broker.connect();
    let mut resp = common::round_trip(&mut stream, &frame(api, version, 41, body));
    let header =
        ResponseHeader::decode(&mut resp, Api::Zk(api).response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 41);
    resp
}

fn send_leader_and_isr(broker: &Broker, req: &LeaderAndIsr, version: i16) -> PartitionErrors {
    let mut wire = req.to_request();
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
    let mut body = BytesMut::new();
    wire.encode(&mut body, version).unwrap();
    let mut resp = exchange(broker, ZkApi::LeaderAndIsr, version, &body);
    let answer = LeaderAndIsrResponse::decode(&mut resp, version).unwrap();
    assert!(resp.is_empty(), "v{version}: trailing bytes");
    req.errors_from_response(&answer, version)
}

fn send_stop_replica(broker: &Broker, req: &StopReplica) -> PartitionErrors {
    let mut body = BytesMut::new();
    req.to_request().encode(&mut body, 4).unwrap();
    let mut resp = exchange(broker, ZkApi::StopReplica, 4, &body);
    let answer = StopReplicaResponse::decode(&mut resp, 4).unwrap();
    stop_replica_errors(&answer)
}

/// UpdateMetadata v8 at EPOCH: broker 0 live (broker 1 is not: two ids
/// at one address confuse librdkafka), TOPIC-0 led by `p0_leader`,
/// TOPIC-1 by broker 1.
fn announce(broker: &Broker, p0_leader: i32) {
    let live = |id: i32| LiveBroker {
        id: BrokerId(id),
        endpoints: vec![BrokerListener {
            listener: "PLAINTEXT".into(),
            host: broker.host.clone(),
            port: i32::from(broker.port),
            security_protocol: PLAINTEXT,
        }],
        rack: None,
    };
    let announced = |p: i32, leader: i32, replicas: &[i32]| AnnouncedPartition {
        topic: TOPIC.into(),
        partition: p,
        controller_epoch: ControllerEpoch(EPOCH),
        leader: BrokerId(leader),
        leader_epoch: LeaderEpoch(1),
        isr: ids(replicas),
        zk_version: PartitionEpoch(1),
        replicas: ids(replicas),
        offline_replicas: vec![],
    };
    let req = update_metadata_v8(
        BrokerId(1),
        ControllerEpoch(EPOCH),
        -1,
        &[live(0)],
        &[announced(0, p0_leader, &[0, 1]), announced(1, 1, &[1])],
        &[(TOPIC.into(), uuid::Uuid::from_u128(TOPIC_ID))],
    );
    let mut body = BytesMut::new();
    req.to_request().encode(&mut body, 8).unwrap();
    let mut resp = exchange(broker, ZkApi::UpdateMetadata, 8, &body);
    let answer = UpdateMetadataResponse::decode(&mut resp, 8).unwrap();
    assert_eq!(answer.error_code, 0);
}

fn dir(broker: &Broker, name: &str) -> PathBuf {
    broker.log_dir.path().join(name)
}

fn produce(broker: &Broker, p: i32, value: &[u8]) -> (ErrorCode, i64) {
    let batch = common::encode_batch(&[(None, value, common::now_ms())], Compression::None);
    let r = Conn::open(broker).produce(TOPIC, p, batch, 1);
    (ErrorCode(r.error_code), r.base_offset)
}

fn ok_for_all(errors: &PartitionErrors) -> bool {
    errors.error == ErrorCode::NONE
        && errors
            .partitions
            .iter()
            .all(|(_, _, e)| *e == ErrorCode::NONE)
}

/// kcat: produce `values` to TOPIC-0, then read TOPIC-0 from the start.
fn kcat_round_trip(broker: &Broker, values: &[&str]) -> Vec<String> {
    let mut child = Command::new(common::kcat())
        .args(["-P", "-b", &broker.bootstrap(), "-t", TOPIC, "-p", "0"])
        .args(["-X", "topic.request.required.acks=-1"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat");
    {
        let mut stdin = child.stdin.take().unwrap();
        for v in values {
            writeln!(stdin, "{v}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kcat -P: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reader = Command::new(common::kcat())
        .args(["-C", "-b", &broker.bootstrap(), "-t", TOPIC, "-p", "0"])
        .args(["-o", "beginning", "-e", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat");
    // A consumer that never reaches the end fails the test, not hangs it.
    let mut reader = reader;
    let deadline = Instant::now() + Duration::from_secs(60);
    while reader.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            reader.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = reader.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kcat -C: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn leader_and_isr_hosts_partitions_and_stop_replica_closes_or_deletes_them() {
    let zk = ZkServer::standalone();
    let (broker, broker_epoch) = start(&zk);
    let p0 = dir(&broker, &format!("{TOPIC}-0"));
    become_leader_and_serve_clients(&broker, &p0);
    follow_then_lead_again_through_the_fences(&broker, broker_epoch, &p0);
    stop_keeping_then_deleting_the_folder(&broker, &p0);
    broker.stop();
}

/// Leader of TOPIC-0: its folder, kcat once announced, the errors for
/// partitions not hosted.
fn become_leader_and_serve_clients(broker: &Broker, p0: &std::path::Path) {
    let p1 = dir(broker, &format!("{TOPIC}-1"));
    // In ZooKeeper mode nothing is hosted before LeaderAndIsr, even with
    // the topic in ZooKeeper.
    assert!(!p0.exists());
    assert_eq!(
        produce(broker, 0, b"early").0,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );

    // Leader of TOPIC-0; TOPIC-1 does not name this broker as a replica.
    let first = leader_and_isr(
        EPOCH,
        vec![partition(0, ME, 1, &[0, 1]), partition(1, 1, 1, &[1])],
    );
    let errors = send_leader_and_isr(broker, &first, 7);
    assert_eq!(errors.error, ErrorCode::NONE);
    assert_eq!(errors.partition(TOPIC, 0), Some(ErrorCode::NONE));
    assert_eq!(
        errors.partition(TOPIC, 1),
        Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
    assert!(
        p0.is_dir(),
        "the partition folder appears before the answer"
    );
    assert!(!p1.exists());
    let metadata = std::fs::read_to_string(p0.join("partition.metadata")).unwrap();
    assert!(metadata.contains("topic_id: "), "{metadata}");

    // Metadata answers from UpdateMetadata alone; then a real client
    // produces and consumes.
    announce(broker, ME);
    let got = kcat_round_trip(broker, &["a", "b", "c"]);
    assert_eq!(got, ["a", "b", "c"]);
    // Announced but not hosted: NOT_LEADER_OR_FOLLOWER; unknown: UNKNOWN.
    assert_eq!(
        produce(broker, 1, b"x").0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
    assert_eq!(
        produce(broker, 7, b"x").0,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    let mut conn = Conn::open(broker);
    assert_eq!(
        conn.fetch(&FetchSpec::new(TOPIC, 1, 0)).error_code,
        ErrorCode::NOT_LEADER_OR_FOLLOWER.0
    );
    assert_eq!(
        conn.list_offset(TOPIC, 1, -1).error_code,
        ErrorCode::NOT_LEADER_OR_FOLLOWER.0
    );
    assert_eq!(conn.list_offset(TOPIC, 0, -1).offset, 3);
    // The topic's configs were read from /config/topics.
    let req =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(kafka_protocol::protocol::StrBytes::from_static_str(TOPIC))
            .with_configuration_keys(Some(vec![
                kafka_protocol::protocol::StrBytes::from_static_str("retention.ms"),
            ]))]);
    let resp = conn.call(1, &req);
    let config = &resp.results[0].configs[0];
    assert_eq!(config.value.as_deref(), Some("86400001"), "{resp:?}");
}

/// Follower, then leader again, with fenced requests in between that
/// change nothing.
fn follow_then_lead_again_through_the_fences(
    broker: &Broker,
    broker_epoch: i64,
    p0: &std::path::Path,
) {
    // Follower of broker 1 at epoch 2: produce is refused, the log stays.
    let follow = leader_and_isr(EPOCH, vec![partition(0, 1, 2, &[0, 1])]);
    assert!(ok_for_all(&send_leader_and_isr(broker, &follow, 7)));
    announce(broker, 1);
    assert_eq!(
        produce(broker, 0, b"refused").0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
    assert!(p0.is_dir());

    // An older controller epoch: refused whole, nothing changes.
    let old = leader_and_isr(EPOCH - 1, vec![partition(0, ME, 9, &[0, 1])]);
    let errors = send_leader_and_isr(broker, &old, 7);
    assert_eq!(errors.error, ErrorCode::STALE_CONTROLLER_EPOCH);
    assert_eq!(
        errors.partition(TOPIC, 0),
        Some(ErrorCode::STALE_CONTROLLER_EPOCH)
    );
    assert_eq!(
        produce(broker, 0, b"refused").0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
    // A stale leader epoch: the per-partition error, nothing changes.
    let stale = leader_and_isr(EPOCH, vec![partition(0, ME, 1, &[0, 1])]);
    let errors = send_leader_and_isr(broker, &stale, 7);
    assert_eq!(errors.error, ErrorCode::NONE);
    assert_eq!(
        errors.partition(TOPIC, 0),
        Some(ErrorCode::STALE_CONTROLLER_EPOCH)
    );
    assert_eq!(
        produce(broker, 0, b"refused").0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
    // A broker epoch below this broker's registration.
    let mut fenced = leader_and_isr(EPOCH, vec![partition(0, ME, 7, &[0, 1])]);
    fenced.broker_epoch = broker_epoch - 1;
    let errors = send_leader_and_isr(broker, &fenced, 7);
    assert_eq!(errors.error, ErrorCode::STALE_BROKER_EPOCH);
    assert_eq!(
        errors.partition(TOPIC, 0),
        Some(ErrorCode::STALE_BROKER_EPOCH)
    );
    // Its own epoch is fine: leader again at epoch 3, the data still there.
    let mut lead = leader_and_isr(EPOCH, vec![partition(0, ME, 3, &[0, 1])]);
    lead.broker_epoch = broker_epoch;
    assert!(ok_for_all(&send_leader_and_isr(broker, &lead, 7)));
    assert_eq!(produce(broker, 0, b"d"), (ErrorCode::NONE, 3));
}

/// StopReplica fenced, delete=false (folder kept, reopened with its data),
/// delete=true (folder gone).
fn stop_keeping_then_deleting_the_folder(broker: &Broker, p0: &std::path::Path) {
    // StopReplica: a stale leader epoch is fenced; delete=false closes the
    // partition and keeps its folder.
    let errors = send_stop_replica(broker, &stop(EPOCH, 0, 2, false));
    assert_eq!(
        errors.partition(TOPIC, 0),
        Some(ErrorCode::FENCED_LEADER_EPOCH)
    );
    assert_eq!(produce(broker, 0, b"e"), (ErrorCode::NONE, 4));
    let errors = send_stop_replica(broker, &stop(EPOCH - 1, 0, 3, true));
    assert_eq!(
        errors,
        PartitionErrors::top_level(ErrorCode::STALE_CONTROLLER_EPOCH)
    );
    assert!(ok_for_all(&send_stop_replica(
        broker,
        &stop(EPOCH, 0, 3, false)
    )));
    assert!(p0.is_dir(), "delete=false keeps the files");
    assert_eq!(
        produce(broker, 0, b"x").0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
    // Hosted again, the log reopens with its five records.
    let again = leader_and_isr(EPOCH, vec![partition(0, ME, 4, &[0, 1])]);
    assert!(ok_for_all(&send_leader_and_isr(broker, &again, 7)));
    assert_eq!(Conn::open(broker).list_offset(TOPIC, 0, -1).offset, 5);
    // delete=true (a topic deletion's epoch) removes the folder.
    let delete = stop(EPOCH, 0, EPOCH_DURING_DELETE.0, true);
    assert!(ok_for_all(&send_stop_replica(broker, &delete)));
    assert!(!p0.exists(), "delete=true removes the folder");
    assert_eq!(
        produce(broker, 0, b"x").0,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
}

#[test]
fn version_zero_requests_decode_and_answer_and_a_malformed_one_closes_the_connection() {
    let zk = ZkServer::standalone();
    let (broker, _) = start(&zk);
    let p2 = dir(&broker, &format!("{TOPIC}-2"));
    // v0: ungrouped partition states, no broker epoch, no topic ids.
    let v0 = leader_and_isr(EPOCH, vec![partition(2, ME, 0, &[0])]);
    let errors = send_leader_and_isr(&broker, &v0, 0);
    assert!(ok_for_all(&errors), "{errors:?}");
    assert_eq!(errors.partitions.len(), 1);
    assert!(p2.is_dir());
    assert!(
        !p2.join("partition.metadata").exists(),
        "v0 names no topic id"
    );
    assert_eq!(produce(&broker, 2, b"v0"), (ErrorCode::NONE, 0));

    // StopReplica v0: (topic, partition) pairs and one delete flag.
    let wire = StopReplicaRequest::default()
        .with_controller_id(kafka_protocol_39::messages::BrokerId(1))
        .with_controller_epoch(EPOCH)
        .with_delete_partitions(true)
        .with_ungrouped_partitions(vec![StopReplicaPartitionV0::default()
            .with_topic_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_index(2)]);
    let mut body = BytesMut::new();
    wire.encode(&mut body, 0).unwrap();
    let mut resp = exchange(&broker, ZkApi::StopReplica, 0, &body);
    let answer = StopReplicaResponse::decode(&mut resp, 0).unwrap();
    assert!(ok_for_all(&stop_replica_errors(&answer)));
    assert_eq!(answer.partition_errors.len(), 1);
    assert!(!p2.exists(), "v0 delete_partitions removes the folder");

    // A malformed LeaderAndIsr closes that connection; the broker serves on.
    let mut bad = broker.connect();
    bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    bad.write_all(&frame(ZkApi::LeaderAndIsr, 7, 9, &[0, 0, 0, 1, 0, 0xff]))
        .unwrap();
    assert!(common::read_frame(&mut bad).is_none(), "connection closed");
    let again = leader_and_isr(EPOCH, vec![partition(2, ME, 1, &[0])]);
    assert!(ok_for_all(&send_leader_and_isr(&broker, &again, 7)));
    let (_, logs) = broker.stop_collect();
    assert!(
        logs.iter()
            .any(|l| l.contains("WARN") && l.contains("LeaderAndIsr")),
        "a warning names the request: {logs:#?}"
    );
}

#[test]
fn the_controller_channel_sends_leader_and_isr_v7_and_stop_replica_v4() {
    let zk = ZkServer::standalone();
    let (broker, broker_epoch) = start(&zk);
    let (host, port) = (broker.host.clone(), broker.port);
    let mut lead = leader_and_isr(
        EPOCH,
        vec![partition(0, ME, 1, &[0, 1]), partition(1, 1, 1, &[1])],
    );
    lead.broker_epoch = broker_epoch;
    let mut stop_it = stop(EPOCH, 0, 1, true);
    stop_it.broker_epoch = broker_epoch;
    let p0 = dir(&broker, &format!("{TOPIC}-0"));
    let (hosted, stopped) = executor::spawn(move || {
        Box::pin(async move {
            let channel = ControllerChannel::new(BrokerId(1), ChannelConfig::default());
            channel.add_broker(BrokerId(ME), broker_epoch, BrokerAddress { host, port });
            let hosted = channel.send_leader_and_isr(BrokerId(ME), &lead).await;
            let stopped = channel.send_stop_replica(BrokerId(ME), &stop_it).await;
            (hosted, stopped)
        })
    })
    .join()
    .unwrap();
    let hosted = hosted.unwrap();
    assert_eq!(hosted.error, ErrorCode::NONE);
    // v7 answers by topic id; the channel names them back.
    assert_eq!(hosted.partition(TOPIC, 0), Some(ErrorCode::NONE));
    assert_eq!(
        hosted.partition(TOPIC, 1),
        Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
    assert_eq!(
        stopped.unwrap(),
        PartitionErrors {
            error: ErrorCode::NONE,
            partitions: vec![(TOPIC.into(), 0, ErrorCode::NONE)],
        }
    );
    assert!(!p0.exists());
    broker.stop();
}

/// ListOffsets and OffsetForLeaderEpoch from a client across leader
/// changes (Kafka's `Partition.fetchOffsetForTimestamp` and
/// `lastOffsetForLeaderEpoch`, both `fetchOnlyFromLeader` for a client):
/// - a new leader epoch before its first append is its own epoch, ending
///   at the LEO (`makeLeader` assigns it in the epoch cache at once);
///   before, a consumer validating its position under it (KIP-320) got
///   UNDEFINED and took it for a truncation;
/// - a leader whose HW lags the start of its epoch (KIP-207) answers
///   "latest" and a lookup past the HW with OFFSET_NOT_AVAILABLE, and
///   "earliest" and a lookup below the HW as usual;
/// - a follower answers a client NOT_LEADER_OR_FOLLOWER, never its own HW.
#[test]
fn client_offset_lookups_follow_the_leader_epoch_and_the_hw() {
    let zk = ZkServer::standalone();
    let (broker, _) = start(&zk);
    let lead = |epoch: i32, isr: &[i32]| {
        let mut p = partition(0, ME, epoch, &[0, 1]);
        p.isr = ids(isr);
        let errors = send_leader_and_isr(&broker, &leader_and_isr(EPOCH, vec![p]), 7);
        assert!(ok_for_all(&errors), "epoch {epoch}: {errors:?}");
    };
    let produce_at = |value: &[u8], ts: i64| {
        let batch = common::encode_batch(&[(None, value, ts)], Compression::None);
        let r = Conn::open(&broker).produce(TOPIC, 0, batch, 1);
        assert_eq!(r.error_code, 0, "{r:?}");
        r.base_offset
    };
    let mut conn = Conn::open(&broker);
    let lookup = |conn: &mut Conn, ts: i64| {
        let p = conn.list_offset(TOPIC, 0, ts);
        (ErrorCode(p.error_code), p.offset)
    };

    // Epoch 1, the leader alone in the ISR: offsets 0-2, HW 3.
    lead(1, &[0]);
    for (i, v) in [b"a", b"b", b"c"].iter().enumerate() {
        assert_eq!(produce_at(*v, 1_000 + i as i64), i as i64);
    }
    assert_eq!(
        lookup(&mut conn, common::LATEST_TIMESTAMP),
        (ErrorCode::NONE, 3)
    );

    // Epoch 2, nothing appended in it yet.
    lead(2, &[0]);
    let e = conn.epoch_end_offset(TOPIC, 0, -1, 2, 2);
    assert_eq!(
        (e.error_code, e.leader_epoch, e.end_offset),
        (0, 2, 3),
        "the current epoch ends at the LEO: {e:?}"
    );
    let e = conn.epoch_end_offset(TOPIC, 0, -1, 2, 1);
    assert_eq!((e.error_code, e.leader_epoch, e.end_offset), (0, 1, 3));
    assert_eq!(
        lookup(&mut conn, common::LATEST_TIMESTAMP),
        (ErrorCode::NONE, 3)
    );

    // Epoch 3 with broker 1 (which never fetches) in the ISR: acks=1
    // records at 3 and 4 stay above the HW.
    lead(3, &[0, 1]);
    assert_eq!(produce_at(b"d", 2_000), 3);
    assert_eq!(produce_at(b"e", 2_001), 4);
    assert_eq!(
        lookup(&mut conn, common::LATEST_TIMESTAMP),
        (ErrorCode::NONE, 3),
        "epoch 3 started at 3, the HW: not lagging"
    );
    // Epoch 4 starts at the LEO, 5, above the HW.
    lead(4, &[0, 1]);
    assert_eq!(
        lookup(&mut conn, common::LATEST_TIMESTAMP),
        (ErrorCode::OFFSET_NOT_AVAILABLE, -1)
    );
    assert_eq!(
        lookup(&mut conn, common::EARLIEST_TIMESTAMP),
        (ErrorCode::NONE, 0)
    );
    assert_eq!(
        lookup(&mut conn, 1_001),
        (ErrorCode::NONE, 1),
        "below the HW"
    );
    assert_eq!(
        lookup(&mut conn, 2_000),
        (ErrorCode::OFFSET_NOT_AVAILABLE, -1),
        "the record found lies past the HW"
    );
    let e = conn.epoch_end_offset(TOPIC, 0, -1, 4, 4);
    assert_eq!((e.error_code, e.leader_epoch, e.end_offset), (0, 4, 5));
    // Epoch 5, the leader alone again: the HW reaches the LEO.
    lead(5, &[0]);
    assert_eq!(
        lookup(&mut conn, common::LATEST_TIMESTAMP),
        (ErrorCode::NONE, 5)
    );
    assert_eq!(lookup(&mut conn, 2_000), (ErrorCode::NONE, 3));

    // Follower of broker 1 at epoch 6: a client is sent to the leader.
    let follow = leader_and_isr(EPOCH, vec![partition(0, 1, 6, &[0, 1])]);
    assert!(ok_for_all(&send_leader_and_isr(&broker, &follow, 7)));
    for ts in [common::LATEST_TIMESTAMP, common::EARLIEST_TIMESTAMP, 1_000] {
        assert_eq!(
            lookup(&mut conn, ts).0,
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            "timestamp {ts}"
        );
    }
    broker.stop();
}
