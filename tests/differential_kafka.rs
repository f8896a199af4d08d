//! Differential tests (issue 23): the same scripted requests to the
//! shardlog broker and to Apache Kafka 3.9 (ZooKeeper mode, started by the
//! test through perf/kafka_peer.sh), responses compared field by field
//! with what must differ masked (ports, cluster and topic ids, producer
//! ids, throttle times). Every difference found is either fixed or listed
//! in [`KNOWN_DIFFERENCES`] with its reason; the test fails on a difference
//! not listed and on a listed one that no longer happens (so the list stays
//! true). Both brokers have broker.id 0 on 127.0.0.1.
//! Needs `bash tests/run.sh` (JDK, Kafka jars, Debian's zookeeper).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;
#[path = "differential_kafka/legacy_formats.rs"]
mod legacy_formats;
#[path = "differential_kafka/old_apis.rs"]
mod old_apis;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::{topic_name, Broker, Conn, FetchSpec, FETCH_VERSION, LIST_OFFSETS_VERSION};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, DescribeConfigsRequest, FetchResponse, InitProducerIdRequest,
    ListOffsetsRequest, MetadataRequest, ProduceRequest, ProduceResponse, ProducerId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// Differences between shardlog and Kafka 3.9 that stay, each with why.
/// Keys are the check names [`Diffs::check`] records.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    (
        "create_topics.configs",
        "the created topic's configs (v5+): shardlog's topic config table has 33 keys, Kafka 3.9's 36 \
         (see describe_configs.message.format.version and describe_configs.remote.log.*)",
    ),
    (
        "create_topics_duplicate.configs",
        "a refused topic: Kafka sends an empty configs array (v5+), shardlog null",
    ),
    (
        "create_topics_invalid_name.configs",
        "a refused topic: Kafka sends an empty configs array (v5+), shardlog null",
    ),
    (
        "create_topics_replication_factor_above_brokers.configs",
        "a refused topic: Kafka sends an empty configs array (v5+), shardlog null",
    ),
    (
        "describe_configs.message.format.version",
        "not in shardlog's topic config table; deprecated (KIP-724), Kafka 3.9 still lists it (3.0-IV1)",
    ),
    (
        "describe_configs.remote.log.copy.disable",
        "not in shardlog's topic config table: tiered storage (KIP-405/950), which shardlog does not have",
    ),
    (
        "describe_configs.remote.log.delete.on.disable",
        "not in shardlog's topic config table: tiered storage (KIP-405/950), which shardlog does not have",
    ),
    (
        "describe_configs.flush.ms",
        "shardlog lists a DEFAULT_CONFIG synonym log.flush.interval.ms with the topic default; \
         Kafka lists none (that broker key has no default of its own)",
    ),
    (
        "describe_configs.retention.ms",
        "shardlog lists a DEFAULT_CONFIG synonym log.retention.ms=604800000; Kafka lists none \
         (log.retention.ms has no default of its own, the default sits on log.retention.hours)",
    ),
    (
        "describe_configs.segment.ms",
        "shardlog lists a DEFAULT_CONFIG synonym log.roll.ms; Kafka lists none \
         (log.roll.ms has no default of its own, the default sits on log.roll.hours)",
    ),
    (
        "describe_configs.segment.jitter.ms",
        "shardlog lists a DEFAULT_CONFIG synonym log.roll.jitter.ms; Kafka lists none \
         (log.roll.jitter.ms has no default of its own)",
    ),
    (
        "describe_configs.follower.replication.throttled.replicas",
        "shardlog lists the topic key itself as a DEFAULT_CONFIG synonym; it has no broker \
         synonym in Kafka (LogConfig), which lists none",
    ),
    (
        "describe_configs.leader.replication.throttled.replicas",
        "shardlog lists the topic key itself as a DEFAULT_CONFIG synonym; it has no broker \
         synonym in Kafka (LogConfig), which lists none",
    ),
    (
        "describe_configs.remote.storage.enable",
        "shardlog lists the topic key itself as a DEFAULT_CONFIG synonym; it has no broker \
         synonym in Kafka (LogConfig), which lists none",
    ),
    (
        "list_offsets_by_timestamp_after_all",
        "no record at or after the timestamp: Kafka answers leader_epoch -1 (no TimestampAndOffset), \
         shardlog 0",
    ),
    (
        "produce_idempotent_duplicate",
        "a duplicate batch: Kafka answers log_append_time_ms = the first append's max timestamp (1000) \
         although the topic uses CreateTime (its duplicate path reuses the batch metadata), shardlog -1",
    ),
    (
        "produce_idempotent_sequence_gap",
        "OUT_OF_ORDER_SEQUENCE_NUMBER: Kafka answers log_start_offset 0 (the partition's), shardlog -1",
    ),
];

const METADATA_VERSION: i16 = 12;
const PRODUCE_VERSION: i16 = 9;
const CREATE_TOPICS_VERSION: i16 = 7;
const DESCRIBE_CONFIGS_VERSION: i16 = 4;
const INIT_PRODUCER_ID_VERSION: i16 = 4;

/// The Kafka 3.9 peer of perf/kafka_peer.sh in a temp dir; stopped on drop
/// (also when the test panics).
struct KafkaPeer {
    dir: tempfile::TempDir,
    bootstrap: String,
}

fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("perf/kafka_peer.sh")
}

impl KafkaPeer {
    fn start() -> KafkaPeer {
        common::java::kafka_jars();
        assert!(
            std::path::Path::new("/usr/share/java/zookeeper.jar").is_file(),
            "Debian's ZooKeeper missing: run `bash tests/run.sh` \
             (apt-get install -y --no-install-recommends zookeeper)"
        );
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("peer dir");
        let out = Command::new("bash")
            .arg(peer_script())
            .args(["start", "--dir"])
            .arg(dir.path())
            .args(["--partitions", "1", "--kafka-sizes"])
            .output()
            .expect("run perf/kafka_peer.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "perf/kafka_peer.sh start failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bootstrap = stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix("bootstrap="))
            .expect("bootstrap=")
            .to_owned();
        KafkaPeer { dir, bootstrap }
    }
}

impl Drop for KafkaPeer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(peer_script())
            .args(["stop", "--dir"])
            .arg(self.dir.path())
            .status();
    }
}

/// Differences found, by check name: (shardlog, Kafka) as pretty Debug.
#[derive(Default)]
struct Diffs(BTreeMap<String, (String, String)>);

impl Diffs {
    fn check<T: Debug + PartialEq>(&mut self, name: &str, shardlog: &T, kafka: &T) {
        if shardlog != kafka {
            self.0.insert(
                name.to_owned(),
                (format!("{shardlog:#?}"), format!("{kafka:#?}")),
            );
        }
    }

    fn assert_only_known(&self) {
        let known: BTreeMap<&str, &str> = KNOWN_DIFFERENCES.iter().copied().collect();
        let mut report = String::new();
        for (name, (ours, theirs)) in &self.0 {
            if !known.contains_key(name.as_str()) {
                report += &format!(
                    "\n=== {name}: not in KNOWN_DIFFERENCES\n--- shardlog:\n{ours}\n--- Kafka 3.9:\n{theirs}\n"
                );
            }
        }
        for name in known.keys() {
            if !self.0.contains_key(*name) {
                report += &format!("\n=== {name}: listed but no longer differs: remove it\n");
            }
        }
        assert!(report.is_empty(), "shardlog vs Kafka 3.9:{report}");
    }
}

/// One magic-v2 batch: (timestamp, value) records, the given producer
/// id / epoch / first sequence (-1s for a plain producer).
fn batch(records: &[(i64, &[u8])], producer: (i64, i16), first_sequence: i32) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (timestamp, value))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: producer.0,
            producer_epoch: producer.1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: if first_sequence < 0 {
                i as i32 - 1
            } else {
                first_sequence + i as i32
            },
            timestamp: *timestamp,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::copy_from_slice(value)),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).expect("encode batch");
    buf.freeze()
}

/// A compacted topic refuses a batch with records without a key
/// (INVALID_RECORD), each named in `record_errors` with Kafka's
/// `validateKey` message and the whole in `processRecordErrors`' (KIP-467).
fn keyless_to_compacted(p: &mut Pair, d: &mut Diffs) {
    for conn in [&mut p.shardlog, &mut p.kafka] {
        conn.create_topic("diff-compacted", 1, &[("cleanup.policy", "compact")]);
    }
    // One batch (`encode_batch`): records 1 and 3 have no key.
    let batch = common::records::encode_batch(
        &[
            (Some(&b"a"[..]), b"v", 1000),
            (None, b"v", 1000),
            (Some(&b"c"[..]), b"v", 1000),
            (None, b"v", 1000),
        ],
        Compression::None,
    );
    let req = common::produce_request("diff-compacted", 0, batch, -1);
    let (ours, _): (ProduceResponse, ProduceResponse) = p.call(PRODUCE_VERSION, &req);
    let errors: Vec<i32> = ours.responses[0].partition_responses[0]
        .record_errors
        .iter()
        .map(|e| e.batch_index)
        .collect();
    assert_eq!(errors, [1, 3], "the keyless records named: {ours:?}");
    check_produce(p, d, "produce_keyless_to_compacted", &req);
}

struct Pair {
    shardlog: Conn,
    kafka: Conn,
}

impl Pair {
    /// The same request to both; (shardlog's answer, Kafka's).
    fn call<Q: kafka_protocol::protocol::Request>(
        &mut self,
        version: i16,
        req: &Q,
    ) -> (Q::Response, Q::Response) {
        (
            self.shardlog.call(version, req),
            self.kafka.call(version, req),
        )
    }
}

fn metadata(topics: &[&str]) -> MetadataRequest {
    MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(
            topics
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(topic_name(t))))
                .collect(),
        ))
}

fn check_metadata(p: &mut Pair, d: &mut Diffs, name: &str, topics: &[&str]) {
    let (mut a, mut b) = p.call(METADATA_VERSION, &metadata(topics));
    for r in [&mut a, &mut b] {
        r.throttle_time_ms = 0;
        r.cluster_id = None;
        for broker in &mut r.brokers {
            broker.port = 0;
        }
        for t in &mut r.topics {
            t.topic_id = Default::default();
        }
    }
    d.check(name, &a, &b);
}

fn check_produce(p: &mut Pair, d: &mut Diffs, name: &str, req: &ProduceRequest) {
    let (mut a, mut b) = p.call(PRODUCE_VERSION, req);
    for r in [&mut a, &mut b] {
        r.throttle_time_ms = 0;
    }
    // Error messages are prose: compared apart, so the codes still count.
    let messages = |r: &mut ProduceResponse| -> Vec<Option<StrBytes>> {
        let mut out = Vec::new();
        for t in &mut r.responses {
            for part in &mut t.partition_responses {
                out.push(part.error_message.take());
            }
        }
        out
    };
    let (ma, mb) = (messages(&mut a), messages(&mut b));
    d.check(&format!("{name}.error_message"), &ma, &mb);
    d.check(name, &a, &b);
}

fn check_list_offsets(p: &mut Pair, d: &mut Diffs, name: &str, topic: &str, timestamp: i64) {
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_current_leader_epoch(-1)
                .with_timestamp(timestamp)])]);
    let (mut a, mut b) = p.call(LIST_OFFSETS_VERSION, &req);
    a.throttle_time_ms = 0;
    b.throttle_time_ms = 0;
    d.check(name, &a, &b);
}

fn check_fetch(p: &mut Pair, d: &mut Diffs, name: &str, spec: &FetchSpec) {
    let (mut a, mut b): (FetchResponse, FetchResponse) = p.call(FETCH_VERSION, &spec.request());
    for r in [&mut a, &mut b] {
        r.throttle_time_ms = 0;
    }
    d.check(name, &a, &b);
}

fn create_topics(topics: Vec<CreatableTopic>) -> CreateTopicsRequest {
    CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(topics)
}

fn topic(name: &str, partitions: i32, replication_factor: i16) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(topic_name(name))
        .with_num_partitions(partitions)
        .with_replication_factor(replication_factor)
}

fn check_create_topics(p: &mut Pair, d: &mut Diffs, name: &str, req: &CreateTopicsRequest) {
    let (mut a, mut b) = p.call(CREATE_TOPICS_VERSION, req);
    for r in [&mut a, &mut b] {
        r.throttle_time_ms = 0;
        for t in &mut r.topics {
            t.topic_id = Default::default();
        }
    }
    let messages = |r: &mut kafka_protocol::messages::CreateTopicsResponse| {
        r.topics
            .iter_mut()
            .map(|t| t.error_message.take())
            .collect::<Vec<_>>()
    };
    let (ma, mb) = (messages(&mut a), messages(&mut b));
    d.check(&format!("{name}.error_message"), &ma, &mb);
    // The configs a created topic reports (v5+) are compared apart: the
    // two brokers' topic config tables differ in size (see describe_configs).
    let configs = |r: &mut kafka_protocol::messages::CreateTopicsResponse| {
        r.topics
            .iter_mut()
            .map(|t| t.configs.take().map(|c| c.len()))
            .collect::<Vec<_>>()
    };
    let (ca, cb) = (configs(&mut a), configs(&mut b));
    d.check(&format!("{name}.configs"), &ca, &cb);
    d.check(name, &a, &b);
}

/// DescribeConfigs of a topic: per config (name → value, source,
/// read-only, sensitive, type, synonyms), so one differing entry names itself.
fn check_describe_configs(p: &mut Pair, d: &mut Diffs, topic: &str) {
    let req = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.to_owned()))
            .with_configuration_keys(None)]);
    let (a, b) = p.call(DESCRIBE_CONFIGS_VERSION, &req);
    let table = |r: &kafka_protocol::messages::DescribeConfigsResponse| {
        let res = &r.results[0];
        let mut map = BTreeMap::new();
        for c in &res.configs {
            let synonyms: Vec<String> = c
                .synonyms
                .iter()
                .map(|s| format!("{}={:?}@{}", s.name, s.value, s.source))
                .collect();
            map.insert(
                c.name.to_string(),
                format!(
                    "value={:?} source={} read_only={} sensitive={} type={} synonyms={synonyms:?}",
                    c.value, c.config_source, c.read_only, c.is_sensitive, c.config_type
                ),
            );
        }
        (res.error_code, map)
    };
    let (ea, ta) = table(&a);
    let (eb, tb) = table(&b);
    d.check("describe_configs.error_code", &ea, &eb);
    let names: Vec<&String> = ta.keys().chain(tb.keys()).collect();
    for name in names {
        d.check(
            &format!("describe_configs.{name}"),
            &ta.get(name),
            &tb.get(name),
        );
    }
}

/// InitProducerId (no transactional id) on `conn`, retrying what Kafka's
/// producer retries while the transaction coordinator loads.
fn init_producer_id(conn: &mut Conn) -> (i16, i64, i16) {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = conn.call(INIT_PRODUCER_ID_VERSION, &req);
        if ![14, 15, 16].contains(&r.error_code) || Instant::now() > deadline {
            return (r.error_code, r.producer_id.0, r.producer_epoch);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An idempotent producer (its own InitProducerId on each broker, ids
/// masked): sequence 0 accepted, the same batch again (a duplicate: Kafka
/// answers NONE with the first append's offset), then a gap (sequence 5
/// after 0: OUT_OF_ORDER_SEQUENCE_NUMBER).
fn idempotent_produce(p: &mut Pair, d: &mut Diffs) {
    let (ea, pid_a, epoch_a) = init_producer_id(&mut p.shardlog);
    let (eb, pid_b, epoch_b) = init_producer_id(&mut p.kafka);
    d.check("init_producer_id", &(ea, epoch_a), &(eb, epoch_b));
    for (name, sequence) in [
        ("produce_idempotent_first", 0),
        ("produce_idempotent_duplicate", 0),
        ("produce_idempotent_sequence_gap", 5),
    ] {
        let records: &[(i64, &[u8])] = &[(1000, b"s")];
        let (ra, rb) = (
            common::produce_request(
                "diff-idem",
                0,
                batch(records, (pid_a, epoch_a), sequence),
                -1,
            ),
            common::produce_request(
                "diff-idem",
                0,
                batch(records, (pid_b, epoch_b), sequence),
                -1,
            ),
        );
        let (mut a, mut b) = (
            p.shardlog.call(PRODUCE_VERSION, &ra),
            p.kafka.call(PRODUCE_VERSION, &rb),
        );
        a.throttle_time_ms = 0;
        b.throttle_time_ms = 0;
        d.check(name, &a, &b);
    }
}

#[test]
fn shardlog_answers_as_kafka_3_9_does() {
    let kafka = KafkaPeer::start();
    let broker = Broker::start_with(&["num.partitions=1"]);
    let mut p = Pair {
        shardlog: Conn::open(&broker),
        kafka: Conn::open_addr(&kafka.bootstrap),
    };
    let mut d = Diffs::default();

    // Topics: the one the data-path checks use, then the refused ones.
    check_create_topics(
        &mut p,
        &mut d,
        "create_topics",
        &create_topics(vec![topic("diff", 1, 1), topic("diff-idem", 1, 1)]),
    );
    for t in ["diff", "diff-idem"] {
        p.shardlog.wait_for_leaders(t, 1);
        p.kafka.wait_for_leaders(t, 1);
    }
    check_create_topics(
        &mut p,
        &mut d,
        "create_topics_duplicate",
        &create_topics(vec![topic("diff", 1, 1)]),
    );
    check_create_topics(
        &mut p,
        &mut d,
        "create_topics_invalid_name",
        &create_topics(vec![topic("bad/name", 1, 1), topic(&"x".repeat(250), 1, 1)]),
    );
    check_create_topics(
        &mut p,
        &mut d,
        "create_topics_replication_factor_above_brokers",
        &create_topics(vec![topic("diff-rf3", 1, 3)]),
    );

    check_metadata(&mut p, &mut d, "metadata_known_topic", &["diff"]);
    check_metadata(&mut p, &mut d, "metadata_unknown_topic", &["no-such-topic"]);

    // Three records with timestamps 1000, 3000, 2000 (offsets 0, 1, 2).
    let good = batch(&[(1000, b"a"), (3000, b"b"), (2000, b"c")], (-1, -1), -1);
    check_produce(
        &mut p,
        &mut d,
        "produce",
        &common::produce_request("diff", 0, good.clone(), -1),
    );
    let mut corrupt = BytesMut::from(&good[..]);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff; // a record byte: the CRC no longer matches
    check_produce(
        &mut p,
        &mut d,
        "produce_bad_crc",
        &common::produce_request("diff", 0, corrupt.freeze(), -1),
    );
    let big = vec![b'x'; 1_100_000];
    check_produce(
        &mut p,
        &mut d,
        "produce_oversize_batch",
        &common::produce_request("diff", 0, batch(&[(1000, &big)], (-1, -1), -1), -1),
    );
    check_produce(
        &mut p,
        &mut d,
        "produce_unknown_partition",
        &common::produce_request("diff", 7, good.clone(), -1),
    );
    idempotent_produce(&mut p, &mut d);
    keyless_to_compacted(&mut p, &mut d);

    for (name, ts) in [
        ("list_offsets_earliest", -2),
        ("list_offsets_latest", -1),
        ("list_offsets_max_timestamp", -3),
        ("list_offsets_by_timestamp_1500", 1500),
        ("list_offsets_by_timestamp_after_all", 9999),
    ] {
        check_list_offsets(&mut p, &mut d, name, "diff", ts);
    }

    let mut spec = FetchSpec::new("diff", 0, 0);
    spec.max_wait_ms = 0;
    check_fetch(&mut p, &mut d, "fetch_at_log_start", &spec);
    spec.fetch_offset = 100;
    check_fetch(&mut p, &mut d, "fetch_beyond_log_end", &spec);
    spec.fetch_offset = 0;
    spec.max_bytes = 1;
    spec.partition_max_bytes = 1;
    check_fetch(&mut p, &mut d, "fetch_tiny_max_bytes", &spec);
    let mut unknown = FetchSpec::new("diff", 7, 0);
    unknown.max_wait_ms = 0;
    check_fetch(&mut p, &mut d, "fetch_unknown_partition", &unknown);

    check_describe_configs(&mut p, &mut d, "diff");
    let old = old_apis::check_old_apis(&mut p);

    drop(p);
    broker.stop();
    drop(kafka);
    d.assert_only_known();
    old_apis::assert_only_known(&old);
}
