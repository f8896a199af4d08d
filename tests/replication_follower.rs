//! The follower side of replication between two real shardlog brokers in
//! ZooKeeper mode (a real ZooKeeper started by the test). The test plays
//! the controller (a `/controller` znode naming broker 99 keeps both
//! brokers from electing themselves) and sends UpdateMetadata and
//! LeaderAndIsr itself: broker 1 follows broker 0 for an RF-2 partition;
//! records produced to broker 0 (acks=1) appear in broker 1's log
//! byte-identical (offsets and partition leader epochs kept), with the
//! same leader epoch cache, also while both run, over a KIP-227 fetch
//! session the leader granted (full fetch, then incremental ones); a
//! follower with an unreplicated tail at an older epoch truncates by
//! epoch; and with `num.replica.fetchers=2` two fetchers share a
//! four-partition topic and replicate every partition. Against a stand-in
//! leader that never answers a Fetch: the follower's Fetch carries
//! `replica.fetch.max.bytes` and `replica.fetch.min.bytes`, and it drops
//! the connection after `replica.socket.timeout.ms`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use common::cluster::{wait_for, with_zk};
use common::zookeeper::ZkServer;
use common::{Broker, Conn};
use kafka_protocol::records::Compression;
use kafka_protocol_39::messages::leader_and_isr_response::LeaderAndIsrResponse;
use kafka_protocol_39::messages::update_metadata_response::UpdateMetadataResponse;
use kafka_protocol_39::messages::{RequestHeader, ResponseHeader};
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};
use shardlog::controller::channel::update_metadata_v8;
use shardlog::metadata::leader_and_isr::{LeaderAndIsr, LeaderAndIsrPartition};
use shardlog::metadata::update_metadata::{
    AnnouncedPartition, BrokerListener, LiveBroker, PLAINTEXT,
};
use shardlog::protocol::api::{Api, ZkApi};
use shardlog::protocol::ErrorCode;
use shardlog::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch};
use shardlog::zk::paths::{self, TopicZNode};
use shardlog::zk::store::{create_recursive, CreateMode, MetadataStore};

const TOPIC: &str = "replicated";
const TOPIC_ID: u128 = 0x2e91_0000_0000_0000_0000_0000_0000_0014;
const CONTROLLER_EPOCH: i32 = 5;

fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

/// The follower's log filter: its fetchers' info lines are what the
/// session and fetcher checks read.
const FETCHER_LOG: &str = "warn,shardlog::replication::fetcher=info";

/// ZooKeeper with the topic's assignment (p0 on brokers 0 and 1) and a
/// `/controller` naming broker 99; brokers 0 and 1 registered.
fn start_cluster(zk: &ZkServer) -> (Broker, Broker) {
    start_cluster_with(zk, 1, &[])
}

/// [`start_cluster`] with `partitions` partitions (all on brokers 0 and 1)
/// and `extra` config for both brokers.
fn start_cluster_with(zk: &ZkServer, partitions: i32, extra: &[&str]) -> (Broker, Broker) {
    let addr = zk.address();
    prepare_zk(&addr, partitions);
    let (a, b) = (start_broker(&addr, 0, extra), start_broker(&addr, 1, extra));
    for id in [0, 1] {
        wait_for(20, "the registrations", || {
            let path = paths::broker_id(BrokerId(id));
            with_zk(&addr, move |s| async move { s.get(&path).await.ok() })
        });
    }
    (a, b)
}

/// The topic's assignment (`partitions` partitions on brokers 0 and 1)
/// and a `/controller` naming broker 99.
fn prepare_zk(addr: &str, partitions: i32) {
    with_zk(addr, move |s| async move {
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
        let assignment = (0..partitions).map(|p| (p, ids(&[0, 1]))).collect();
        let topic = TopicZNode::new(uuid::Uuid::from_u128(TOPIC_ID), assignment);
        create_recursive(
            &s,
            &paths::topic(TOPIC),
            &topic.encode(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    });
}

/// Broker `id` on ZooKeeper `addr`, with `extra` config.
fn start_broker(addr: &str, id: i32, extra: &[&str]) -> Broker {
    let zk = format!("zookeeper.connect={addr}");
    let broker_id = format!("broker.id={id}");
    let mut config = vec![
        zk.as_str(),
        "zookeeper.session.timeout.ms=6000",
        broker_id.as_str(),
        // Leaders stay where the scenarios put them.
        "auto.leader.rebalance.enable=false",
        // Fast retries so a test waiting on a backoff stays short.
        "replica.fetch.backoff.ms=200",
        "replica.fetch.wait.max.ms=100",
        // KIP-227 sessions with the leader (the default, stated: the
        // session assertions below depend on it; `extra` may turn
        // them off).
        "shardlog.replica.fetch.session.enable=true",
    ];
    config.extend_from_slice(extra);
    Broker::start_logging(common::new_log_dir(), &config, Some(FETCHER_LOG))
}

fn frame(api: ZkApi, version: i16, body: &[u8]) -> Vec<u8> {
    let api = Api::Zk(api);
    let header = RequestHeader::default()
        .with_request_api_key(api.code())
        .with_request_api_version(version)
        .with_correlation_id(41)
        .with_client_id(Some(StrBytes::from_static_str("99")));
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

fn exchange(broker: &Broker, api: ZkApi, version: i16, body: &[u8]) -> Bytes {
    let mut stream = broker.connect();
    let mut resp = common::round_trip(&mut stream, &frame(api, version, body));
    let header =
        ResponseHeader::decode(&mut resp, Api::Zk(api).response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 41);
    resp
}

/// UpdateMetadata v8 to `to`: both brokers live, p0 led by `leader`.
fn announce(to: &Broker, brokers: [&Broker; 2], leader: i32, leader_epoch: i32) {
    announce_n(to, brokers, 1, leader, leader_epoch);
}

/// A broker's id and PLAINTEXT endpoint (host, port).
type Endpoint = (i32, String, u16);

fn endpoint(b: &Broker) -> Endpoint {
    (b.broker_id, b.host.clone(), b.port)
}

/// [`announce`] for partitions `0..partitions`.
fn announce_n(to: &Broker, brokers: [&Broker; 2], partitions: i32, leader: i32, leader_epoch: i32) {
    announce_endpoints(to, &brokers.map(endpoint), partitions, leader, leader_epoch);
}

/// [`announce_n`] with the live brokers as endpoints.
fn announce_endpoints(
    to: &Broker,
    brokers: &[Endpoint],
    partitions: i32,
    leader: i32,
    leader_epoch: i32,
) {
    let live: Vec<LiveBroker> = brokers
        .iter()
        .map(|(id, host, port)| LiveBroker {
            id: BrokerId(*id),
            endpoints: vec![BrokerListener {
                listener: "PLAINTEXT".into(),
                host: host.clone(),
                port: i32::from(*port),
                security_protocol: PLAINTEXT,
            }],
            rack: None,
        })
        .collect();
    let announced: Vec<AnnouncedPartition> = (0..partitions)
        .map(|partition| AnnouncedPartition {
            topic: TOPIC.into(),
            partition,
            controller_epoch: ControllerEpoch(CONTROLLER_EPOCH),
            leader: BrokerId(leader),
            leader_epoch: LeaderEpoch(leader_epoch),
            isr: ids(&[leader]),
            zk_version: PartitionEpoch(leader_epoch),
            replicas: ids(&[0, 1]),
            offline_replicas: vec![],
        })
        .collect();
    let req = update_metadata_v8(
        BrokerId(99),
        ControllerEpoch(CONTROLLER_EPOCH),
        -1,
        &live,
        &announced,
        &[(TOPIC.into(), uuid::Uuid::from_u128(TOPIC_ID))],
    );
    let mut body = BytesMut::new();
    req.to_request().encode(&mut body, 8).unwrap();
    let mut resp = exchange(to, ZkApi::UpdateMetadata, 8, &body);
    assert_eq!(
        UpdateMetadataResponse::decode(&mut resp, 8)
            .unwrap()
            .error_code,
        0
    );
}

/// LeaderAndIsr v7 to `to`: p0 led by `leader` at `leader_epoch`, the
/// leader alone in the ISR (no ISR expansion is being tested here, and
/// an ISR naming the follower would hold the leader's HW back).
fn leader_and_isr(to: &Broker, leader: &Broker, leader_epoch: i32) {
    leader_and_isr_n(to, leader, 1, leader_epoch);
}

/// [`leader_and_isr`] for partitions `0..partitions`.
fn leader_and_isr_n(to: &Broker, leader: &Broker, partitions: i32, leader_epoch: i32) {
    leader_and_isr_endpoint(to, &endpoint(leader), partitions, leader_epoch);
}

/// [`leader_and_isr_n`] with the leader as an endpoint.
fn leader_and_isr_endpoint(to: &Broker, leader: &Endpoint, partitions: i32, leader_epoch: i32) {
    let (leader_id, leader_host, leader_port) = leader;
    let req = LeaderAndIsr {
        controller_id: BrokerId(99),
        controller_epoch: ControllerEpoch(CONTROLLER_EPOCH),
        broker_epoch: -1,
        partitions: (0..partitions)
            .map(|partition| LeaderAndIsrPartition {
                topic: TOPIC.into(),
                partition,
                controller_epoch: ControllerEpoch(CONTROLLER_EPOCH),
                leader: BrokerId(*leader_id),
                leader_epoch: LeaderEpoch(leader_epoch),
                isr: ids(&[*leader_id]),
                partition_epoch: PartitionEpoch(leader_epoch),
                replicas: ids(&[0, 1]),
                adding_replicas: vec![],
                removing_replicas: vec![],
                is_new: false,
                leader_recovery_state: 0,
            })
            .collect(),
        topic_ids: vec![(TOPIC.into(), uuid::Uuid::from_u128(TOPIC_ID))],
        live_leaders: vec![(
            BrokerId(*leader_id),
            leader_host.clone(),
            i32::from(*leader_port),
        )],
    };
    let mut body = BytesMut::new();
    req.to_request().encode(&mut body, 7).unwrap();
    let mut resp = exchange(to, ZkApi::LeaderAndIsr, 7, &body);
    let answer = LeaderAndIsrResponse::decode(&mut resp, 7).unwrap();
    let errors = req.errors_from_response(&answer, 7);
    assert_eq!(errors.error, ErrorCode::NONE, "{errors:?}");
    for p in 0..partitions {
        assert_eq!(
            errors.partition(TOPIC, p),
            Some(ErrorCode::NONE),
            "{errors:?}"
        );
    }
}

fn produce(broker: &Broker, values: std::ops::Range<u32>) {
    produce_to(broker, 0, values);
}

fn produce_to(broker: &Broker, partition: i32, values: std::ops::Range<u32>) {
    let mut conn = Conn::open(broker);
    for i in values {
        let value = format!("value-{i}-{}", "x".repeat((i as usize * 37) % 300));
        let batch = common::encode_batch(
            &[(None, value.as_bytes(), common::now_ms())],
            Compression::None,
        );
        let r = conn.produce(TOPIC, partition, batch, 1);
        assert_eq!(r.error_code, 0, "produce {i}: {r:?}");
    }
}

fn high_watermark(broker: &Broker) -> i64 {
    high_watermark_of(broker, 0)
}

fn high_watermark_of(broker: &Broker, partition: i32) -> i64 {
    Conn::open(broker).high_watermark(TOPIC, partition)
}

/// Every batch of p0 up to the HW, as the broker serves them.
fn batches(broker: &Broker) -> Vec<Bytes> {
    batches_of(broker, 0)
}

fn batches_of(broker: &Broker, partition: i32) -> Vec<Bytes> {
    Conn::open(broker).fetch_to_high_watermark(TOPIC, partition, 0)
}

fn epoch_checkpoint(broker: &Broker) -> String {
    std::fs::read_to_string(
        broker
            .log_dir
            .path()
            .join(format!("{TOPIC}-0"))
            .join("leader-epoch-checkpoint"),
    )
    .unwrap_or_default()
}

/// partitionLeaderEpoch of a v2 batch (bytes 12..16).
fn batch_epoch(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[12], b[13], b[14], b[15]])
}

#[test]
fn follower_log_matches_the_leader_byte_for_byte_with_epochs_kept() {
    let zk = ZkServer::standalone();
    let (a, b) = start_cluster(&zk);
    // Broker 0 leads p0 at epoch 3 and takes 40 batches before broker 1
    // follows (catch-up), then 25 more while it follows (live tail).
    announce(&a, [&a, &b], 0, 3);
    leader_and_isr(&a, &a, 3);
    produce(&a, 0..40);
    assert_eq!(high_watermark(&a), 40);
    announce(&b, [&a, &b], 0, 3);
    leader_and_isr(&b, &a, 3);
    wait_for(30, "the follower to catch up", || {
        (high_watermark(&b) == 40).then_some(())
    });
    produce(&a, 40..65);
    wait_for(30, "the follower to follow the tail", || {
        (high_watermark(&b) == 65).then_some(())
    });
    // The tail came over a KIP-227 session: the leader granted one on the
    // first (full) fetch, and the incremental fetches after it were never
    // refused (a wrong epoch or unknown id would log a reset).
    let lines = common::fetcher_lines(&b);
    let granted: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("fetch session established"))
        .collect();
    assert_eq!(
        granted.len(),
        1,
        "one session for the whole run: {lines:#?}"
    );
    assert!(
        !granted[0].contains("session_id=0"),
        "a real session id: {granted:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("fetch session reset")),
        "no session was refused: {lines:#?}"
    );
    // replica.socket.receive.buffer.bytes (65536 by default) is on the
    // fetcher's socket: Linux reports twice what was set.
    let connected = lines
        .iter()
        .find(|l| l.contains("replica fetcher connected"))
        .expect("the fetcher's connect line");
    let rcvbuf: usize = connected
        .split("receive_buffer_bytes=Some(")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no receive buffer size in {connected}"));
    assert!(rcvbuf >= 65_536, "SO_RCVBUF {rcvbuf} < 65536");
    let (from_a, from_b) = (batches(&a), batches(&b));
    assert_eq!(from_a.len(), 65);
    assert!(
        from_a == from_b,
        "the follower's batches differ from the leader's"
    );
    assert!(from_b.iter().all(|batch| batch_epoch(batch) == 3));
    assert_eq!(epoch_checkpoint(&b), "0\n1\n3 0\n");
    assert_eq!(epoch_checkpoint(&b), epoch_checkpoint(&a));
    // A follower refuses produce.
    let batch = common::encode_batch(&[(None, b"no", common::now_ms())], Compression::None);
    let r = Conn::open(&b).produce(TOPIC, 0, batch, 1);
    assert_eq!(r.error_code, ErrorCode::NOT_LEADER_OR_FOLLOWER.0);
    a.stop();
    b.stop();
}

#[test]
fn follower_with_an_unreplicated_tail_truncates_by_leader_epoch() {
    let zk = ZkServer::standalone();
    let (a, b) = start_cluster(&zk);
    // Broker 1 led at epoch 1 and took 3 batches nobody replicated.
    announce(&b, [&a, &b], 1, 1);
    leader_and_isr(&b, &b, 1);
    produce(&b, 100..103);
    // Broker 0 leads at epoch 2 with its own history.
    announce(&a, [&a, &b], 0, 2);
    leader_and_isr(&a, &a, 2);
    produce(&a, 0..5);
    // Broker 1 follows broker 0 at epoch 2: it asks where epoch 1 ends on
    // the leader (0: the leader has no epoch 1), cuts its tail and copies.
    announce(&b, [&a, &b], 0, 2);
    leader_and_isr(&b, &a, 2);
    // The follower's HW reaches 5 only once it has cut its 3-batch tail
    // and copied the leader's 5 (its LEO bounds its HW); reading its
    // batches earlier races the truncation (OFFSET_OUT_OF_RANGE mid-read).
    wait_for(30, "the follower to converge", || {
        (high_watermark(&b) == 5).then_some(())
    });
    assert!(
        batches(&b) == batches(&a),
        "the follower's batches differ from the leader's"
    );
    assert_eq!(epoch_checkpoint(&b), "0\n1\n2 0\n");
    a.stop();
    b.stop();
}

#[test]
fn sessionless_follower_fetches_in_full_and_matches_the_leader() {
    let zk = ZkServer::standalone();
    let (a, b) = start_cluster_with(&zk, 1, &["shardlog.replica.fetch.session.enable=false"]);
    announce(&a, [&a, &b], 0, 3);
    leader_and_isr(&a, &a, 3);
    produce(&a, 0..30);
    announce(&b, [&a, &b], 0, 3);
    leader_and_isr(&b, &a, 3);
    produce(&a, 30..45);
    wait_for(30, "the follower to replicate", || {
        (high_watermark(&b) == 45).then_some(())
    });
    // Every fetch was a full one (session epoch -1): no session granted.
    let lines = common::fetcher_lines(&b);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("replica fetcher connected")),
        "the fetcher ran: {lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("fetch session established")),
        "no session asked for: {lines:#?}"
    );
    assert!(batches(&a) == batches(&b), "the follower's batches differ");
    a.stop();
    b.stop();
}

#[test]
fn two_replica_fetchers_share_the_partitions_and_replicate_them_all() {
    const PARTITIONS: i32 = 4;
    let zk = ZkServer::standalone();
    let (a, b) = start_cluster_with(&zk, PARTITIONS, &["num.replica.fetchers=2"]);
    announce_n(&a, [&a, &b], PARTITIONS, 0, 3);
    leader_and_isr_n(&a, &a, PARTITIONS, 3);
    for p in 0..PARTITIONS {
        produce_to(&a, p, 0..(10 + p as u32));
    }
    announce_n(&b, [&a, &b], PARTITIONS, 0, 3);
    leader_and_isr_n(&b, &a, PARTITIONS, 3);
    for p in 0..PARTITIONS {
        produce_to(&a, p, 100..105);
    }
    for p in 0..PARTITIONS {
        let want = 15 + i64::from(p);
        wait_for(30, "the follower to replicate every partition", || {
            (high_watermark_of(&b, p) == want).then_some(())
        });
        assert!(
            batches_of(&b, p) == batches_of(&a, p),
            "p{p}: the follower's batches differ from the leader's"
        );
    }
    // Kafka's getFetcherId puts replicated-0/2 on fetcher 1 and
    // replicated-1/3 on fetcher 0 (jshell: abs(31 * hashCode + p) % 2):
    // both fetchers of leader 0 ran, each with its own session.
    let lines = common::fetcher_lines(&b);
    for id in [0, 1] {
        let started = format!("fetcher_id={id}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("replica fetcher started") && l.contains(&started)),
            "fetcher {id} started: {lines:#?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("fetch session established") && l.contains(&started)),
            "fetcher {id} has a session: {lines:#?}"
        );
    }
    a.stop();
    b.stop();
}

/// What the stand-in leader saw on its connection number `.0`.
enum Seen {
    Fetch(usize, Instant, Box<kafka_protocol::messages::FetchRequest>),
    Closed(usize, Instant),
}

/// A leader that answers ApiVersions (Fetch v4–v12, nothing else: no
/// OffsetForLeaderEpoch, so an empty follower fetches straight away) and
/// never a Fetch, recording each Fetch as it arrives and each connection
/// the follower closes.
struct SilentLeader {
    port: u16,
    seen: mpsc::Receiver<Seen>,
}

impl SilentLeader {
    fn start() -> SilentLeader {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, seen) = mpsc::channel();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(stream) = stream else { return };
                let tx = tx.clone();
                std::thread::spawn(move || serve_silently(stream, n, &tx));
            }
        });
        SilentLeader { port, seen }
    }

    fn next(&self, what: &str) -> Seen {
        self.seen
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{what}: {e}"))
    }
}

fn serve_silently(mut s: TcpStream, conn: usize, tx: &mpsc::Sender<Seen>) {
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, FetchRequest};
    use kafka_protocol::protocol::{
        decode_request_header_from_buffer, Decodable as _, Encodable as _,
    };
    loop {
        let mut len = [0u8; 4];
        if s.read_exact(&mut len).is_err() {
            let _ = tx.send(Seen::Closed(conn, Instant::now()));
            return;
        }
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).unwrap();
        let mut buf = Bytes::from(body);
        let header = decode_request_header_from_buffer(&mut buf).unwrap();
        let version = header.request_api_version;
        match ApiKey::try_from(header.request_api_key) {
            Ok(ApiKey::ApiVersions) => {
                let fetch = ApiVersion::default()
                    .with_api_key(ApiKey::Fetch as i16)
                    .with_min_version(4)
                    .with_max_version(12);
                let mut out = BytesMut::new();
                out.put_i32(0);
                out.put_i32(header.correlation_id);
                ApiVersionsResponse::default()
                    .with_api_keys(vec![fetch])
                    .encode(&mut out, version)
                    .unwrap();
                let size = (out.len() - 4) as i32;
                out[..4].copy_from_slice(&size.to_be_bytes());
                s.write_all(&out).unwrap();
            }
            Ok(ApiKey::Fetch) => {
                let req = FetchRequest::decode(&mut buf, version).unwrap();
                let _ = tx.send(Seen::Fetch(conn, Instant::now(), Box::new(req)));
            }
            // Anything else is left unanswered too.
            _ => {}
        }
    }
}

/// The follower's Fetch as the `replica.*` keys shape it (Kafka's
/// `ReplicaFetcherThread`): `replica.fetch.max.bytes` is each partition's
/// `partition_max_bytes`, `replica.fetch.min.bytes` the request's
/// `min_bytes`; a leader that does not answer is dropped after
/// `replica.socket.timeout.ms` (Kafka's `NetworkClient` request timeout
/// of the fetcher) and fetched from again on a new connection.
#[test]
fn the_followers_fetch_carries_the_replica_fetch_keys_and_a_silent_leader_times_out() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    prepare_zk(&addr, 1);
    let follower = start_broker(
        &addr,
        1,
        &[
            "replica.fetch.max.bytes=65432",
            "replica.fetch.min.bytes=7",
            "replica.socket.timeout.ms=1500",
        ],
    );
    let leader = SilentLeader::start();
    let at: Endpoint = (0, "127.0.0.1".into(), leader.port);
    announce_endpoints(&follower, &[at.clone(), endpoint(&follower)], 1, 0, 3);
    leader_and_isr_endpoint(&follower, &at, 1, 3);
    for round in 0..2 {
        let (conn, when, fetch) = match leader.next("a Fetch") {
            Seen::Fetch(conn, when, fetch) => (conn, when, fetch),
            Seen::Closed(conn, _) => panic!("connection {conn} closed before a Fetch"),
        };
        assert_eq!(conn, round, "one connection per round");
        assert_eq!(
            (fetch.replica_id.0, fetch.min_bytes, fetch.max_wait_ms),
            (1, 7, 100)
        );
        let parts: Vec<(&str, i32, i32)> = fetch
            .topics
            .iter()
            .flat_map(|t| {
                let name = t.topic.0.as_str();
                t.partitions
                    .iter()
                    .map(move |p| (name, p.partition, p.partition_max_bytes))
            })
            .collect();
        assert_eq!(parts, vec![(TOPIC, 0, 65432)]);
        // Unanswered, the connection goes after the socket timeout (well
        // before Kafka's default 30 s).
        let closed = match leader.next("the connection closed") {
            Seen::Closed(c, closed) if c == conn => closed,
            Seen::Closed(c, _) => panic!("connection {c} closed, not {conn}"),
            Seen::Fetch(c, ..) => panic!("a second Fetch on connection {c} before an answer"),
        };
        let waited = closed - when;
        assert!(
            waited >= Duration::from_millis(1400) && waited < Duration::from_secs(10),
            "closed {waited:?} after the Fetch"
        );
    }
    follower.stop();
}
