//! Topic admin against the real broker with real clients (kafka-python
//! KafkaAdminClient, confluent-kafka AdminClient, kcat) and raw requests:
//! create / describe / alter / expand / delete, Kafka's error codes,
//! auto-create through Metadata, persistence across a restart (topic ids
//! included), and InitProducerId.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::process::Command;

use bytes::Bytes;
use common::{kcat, request_frame, round_trip, run_python, Broker};
use std::io::Write;

use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::create_topics_response::CreateTopicsResponse;
use kafka_protocol::messages::delete_topics_request::{DeleteTopicState, DeleteTopicsRequest};
use kafka_protocol::messages::delete_topics_response::DeleteTopicsResponse;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::metadata_response::MetadataResponse;
use kafka_protocol::messages::{ApiKey, ProducerId, ResponseHeader, TopicName, TransactionalId};
use kafka_protocol::protocol::{Decodable, StrBytes};
use serde_json::Value;

/// Run `code` in the venv and parse its last stdout line as JSON.
fn python_json(broker: &Broker, code: &str) -> Value {
    let out = run_python(broker, code);
    let line = out.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// kcat -L for `topic` (or all topics): the "topic ... with N partitions" lines.
fn kcat_list(broker: &Broker, topic: Option<&str>) -> String {
    let mut cmd = Command::new(kcat());
    cmd.args(["-b", &broker.bootstrap(), "-L", "-m", "10"]);
    if let Some(t) = topic {
        cmd.args(["-t", t]);
    }
    let out = cmd.output().expect("kcat");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn partitions_in_listing(listing: &str, topic: &str) -> Option<usize> {
    let prefix = format!("topic \"{topic}\" with ");
    listing.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(&prefix)?;
        rest.split(' ').next()?.parse().ok()
    })
}

fn exchange<T: kafka_protocol::protocol::Encodable, R: Decodable>(
    broker: &Broker,
    api_key: ApiKey,
    version: i16,
    body: &T,
) -> R {
    let mut stream = broker.connect();
    let mut resp: Bytes = round_trip(&mut stream, &request_frame(api_key, version, 7, body));
    let header_version = api_key.response_header_version(version);
    let header = ResponseHeader::decode(&mut resp, header_version).expect("header");
    assert_eq!(header.correlation_id, 7);
    R::decode(&mut resp, version).expect("response body")
}

const KAFKA_PYTHON_ADMIN: &str = r#"
import json, os
from kafka.admin import KafkaAdminClient, NewTopic, NewPartitions, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers=os.environ["BOOTSTRAP"], request_timeout_ms=20000)
out = {}
r = a.create_topics([NewTopic("kp-orders", 3, 1, topic_configs={"retention.ms": "12345"})])
t = r["topics"][0] if isinstance(r, dict) else r.topic_errors[0]
out["create"] = t["error_code"] if isinstance(t, dict) else t[1]
try:
    a.create_topics([NewTopic("kp-orders", 3, 1)])
    out["again"] = "no error"
except Exception as e:
    out["again"] = type(e).__name__
def describe():
    d = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-orders")])
    resp = d[0] if isinstance(d, list) else d
    if hasattr(resp, "resources"):
        res = resp.resources[0]
        return {c[0]: c[1] for c in res[4]}
    return {k: v["value"] for k, v in resp["topic"]["kp-orders"].items()}
out["retention_before"] = describe()["retention.ms"]
a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-orders", configs={"retention.ms": "999"})])
out["retention_after"] = describe()["retention.ms"]
a.create_partitions({"kp-orders": NewPartitions(5)})
out["after_expand"] = sorted(a.list_topics())
# Committed offsets of a deleted topic go with it (Kafka's
# GroupCoordinator.onPartitionsDeleted): OffsetFetch answers none.
import time
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
c = KafkaConsumer(bootstrap_servers=os.environ["BOOTSTRAP"], group_id="kp-g", enable_auto_commit=False)
c.commit({TopicPartition("kp-orders", 0): OffsetAndMetadata(5, "", -1),
          TopicPartition("kp-orders", 4): OffsetAndMetadata(7, "", -1)})
c.close()
def offsets():
    return {f"{k.topic}-{k.partition}": v.offset for k, v in a.list_group_offsets({"kp-g": None})["kp-g"].items()}
out["offsets_before_delete"] = offsets()
a.delete_topics(["kp-orders"])
out["after_delete"] = sorted(t for t in a.list_topics() if t != "__consumer_offsets")
for _ in range(100):
    out["offsets_after_delete"] = offsets()
    if not out["offsets_after_delete"]:
        break
    time.sleep(0.1)
print(json.dumps(out))
"#;

#[test]
fn kafka_python_admin_creates_describes_alters_expands_and_deletes() {
    let broker = Broker::start();
    let out = python_json(&broker, KAFKA_PYTHON_ADMIN);
    assert_eq!(out["create"], 0, "{out}");
    assert_eq!(out["again"], "TopicAlreadyExistsError", "{out}");
    assert_eq!(out["retention_before"], "12345", "{out}");
    assert_eq!(out["retention_after"], "999", "{out}");
    assert_eq!(out["after_expand"], serde_json::json!(["kp-orders"]));
    assert_eq!(out["after_delete"], serde_json::json!([]));
    assert_eq!(
        out["offsets_before_delete"],
        serde_json::json!({"kp-orders-0": 5, "kp-orders-4": 7}),
        "{out}"
    );
    assert_eq!(out["offsets_after_delete"], serde_json::json!({}), "{out}");
}

const CONFLUENT_ADMIN: &str = r#"
import json, os
from confluent_kafka.admin import (AdminClient, NewTopic, NewPartitions, ConfigResource,
    ConfigEntry, AlterConfigOpType)
from confluent_kafka import KafkaException
a = AdminClient({"bootstrap.servers": os.environ["BOOTSTRAP"]})
def wait(fs):
    out = {}
    for k, f in fs.items():
        try:
            f.result(20); out[str(k)] = "OK"
        except KafkaException as e:
            out[str(k)] = e.args[0].name()
    return out
out = {}
out["create"] = wait(a.create_topics([
    NewTopic("ck-compact", 2, 1, config={"cleanup.policy": "compact"}),
    NewTopic("ck-rf2", 1, 2),
    NewTopic("ck-badcfg", 1, 1, config={"retention.ms": "abc"}),
    NewTopic("ck-plain", 4, 1)]))
out["again"] = wait(a.create_topics([NewTopic("ck-compact", 2, 1)]))
r = ConfigResource("topic", "ck-compact")
cfg = a.describe_configs([r])[r].result(20)
out["policy"] = [cfg["cleanup.policy"].value, int(cfg["cleanup.policy"].source)]
out["segment_source"] = int(cfg["segment.bytes"].source)
inc = ConfigResource("topic", "ck-compact", incremental_configs=[
    ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET)])
out["incremental"] = list(wait(a.incremental_alter_configs([inc])).values())
cfg = a.describe_configs([r])[r].result(20)
out["after_incremental"] = [cfg["retention.ms"].value, cfg["cleanup.policy"].value]
bad = ConfigResource("topic", "ck-compact", incremental_configs=[
    ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
out["bad_incremental"] = list(wait(a.incremental_alter_configs([bad])).values())
missing = ConfigResource("topic", "ck-missing")
try:
    a.describe_configs([missing])[missing].result(20); out["describe_missing"] = "OK"
except KafkaException as e:
    out["describe_missing"] = e.args[0].name()
b = ConfigResource("broker", "0")
bcfg = a.describe_configs([b])[b].result(20)
out["broker_num_partitions"] = [bcfg["num.partitions"].value, int(bcfg["num.partitions"].source),
    bcfg["num.partitions"].is_read_only]
balter = ConfigResource("broker", "0", incremental_configs=[
    ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
out["broker_alter"] = list(wait(a.incremental_alter_configs([balter])).values())
out["expand"] = wait(a.create_partitions([NewPartitions("ck-plain", 6)]))
out["shrink"] = wait(a.create_partitions([NewPartitions("ck-plain", 2)]))
md = a.list_topics(timeout=20)
out["partitions"] = {t: len(m.partitions) for t, m in md.topics.items()}
out["delete"] = wait(a.delete_topics(["ck-compact", "ck-never"]))
out["after_delete"] = sorted(a.list_topics(timeout=20).topics)
print(json.dumps(out))
"#;

#[test]
fn confluent_admin_round_trip_and_kafka_error_codes() {
    let broker = Broker::start();
    let out = python_json(&broker, CONFLUENT_ADMIN);
    let create = &out["create"];
    // (what, got, expected)
    let rows = [
        ("create compact", &create["ck-compact"], "OK"),
        (
            "rf 2 on one broker",
            &create["ck-rf2"],
            "INVALID_REPLICATION_FACTOR",
        ),
        ("bad config value", &create["ck-badcfg"], "INVALID_CONFIG"),
        ("create plain", &create["ck-plain"], "OK"),
        (
            "create twice",
            &out["again"]["ck-compact"],
            "TOPIC_ALREADY_EXISTS",
        ),
        (
            "describe unknown",
            &out["describe_missing"],
            "UNKNOWN_TOPIC_OR_PART",
        ),
        ("incremental set", &out["incremental"][0], "OK"),
        (
            "incremental invalid",
            &out["bad_incremental"][0],
            "INVALID_CONFIG",
        ),
        ("alter broker", &out["broker_alter"][0], "INVALID_REQUEST"),
        ("expand", &out["expand"]["ck-plain"], "OK"),
        ("shrink", &out["shrink"]["ck-plain"], "INVALID_PARTITIONS"),
        ("delete", &out["delete"]["ck-compact"], "OK"),
        (
            "delete unknown",
            &out["delete"]["ck-never"],
            "UNKNOWN_TOPIC_OR_PART",
        ),
    ];
    for (what, got, expected) in rows {
        assert_eq!(got, expected, "{what}: {out}");
    }
    // DYNAMIC_TOPIC_CONFIG (1) for the override, DEFAULT_CONFIG (5) else.
    assert_eq!(out["policy"], serde_json::json!(["compact", 1]), "{out}");
    assert_eq!(out["segment_source"], 5, "{out}");
    assert_eq!(
        out["after_incremental"],
        serde_json::json!(["5000", "compact"]),
        "{out}"
    );
    assert_eq!(
        out["broker_num_partitions"],
        serde_json::json!(["1", 5, true]),
        "{out}"
    );
    assert_eq!(out["partitions"]["ck-plain"], 6, "{out}");
    assert_eq!(out["partitions"]["ck-compact"], 2, "{out}");
    assert_eq!(
        out["after_delete"],
        serde_json::json!(["ck-plain"]),
        "{out}"
    );
}

const CONFLUENT_CREATE_AND_IDS: &str = r#"
import json, os, sys
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka import TopicCollection
a = AdminClient({"bootstrap.servers": os.environ["BOOTSTRAP"]})
if sys.argv[-1] == "create":
    for f in a.create_topics([NewTopic("keep-a", 3, 1, config={"retention.ms": "4242"}),
                              NewTopic("keep-b", 1, 1)]).values():
        f.result(20)
out = {}
for name, f in a.describe_topics(TopicCollection(["keep-a", "keep-b"])).items():
    d = f.result(20)
    out[name] = [str(d.topic_id), len(d.partitions)]
from confluent_kafka.admin import ConfigResource
r = ConfigResource("topic", "keep-a")
out["retention"] = a.describe_configs([r])[r].result(20)["retention.ms"].value
print(json.dumps(out))
"#;

#[test]
fn topics_partition_counts_configs_and_ids_survive_a_restart() {
    let broker = Broker::start();
    let create = CONFLUENT_CREATE_AND_IDS.replace("sys.argv[-1]", "\"create\"");
    let before = python_json(&broker, &create);
    assert_eq!(before["keep-a"][1], 3, "{before}");
    assert_eq!(before["retention"], "4242", "{before}");
    let listing = kcat_list(&broker, None);
    assert_eq!(
        partitions_in_listing(&listing, "keep-a"),
        Some(3),
        "{listing}"
    );
    assert_eq!(
        partitions_in_listing(&listing, "keep-b"),
        Some(1),
        "{listing}"
    );

    let (status, dir) = broker.stop_keeping_dir();
    assert!(status.success(), "{status}");
    let broker = Broker::start_in(dir, &[]);
    let check = CONFLUENT_CREATE_AND_IDS.replace("sys.argv[-1]", "\"check\"");
    let after = python_json(&broker, &check);
    assert_eq!(before, after);
    assert_ne!(before["keep-a"][0], before["keep-b"][0]);
}

#[test]
fn metadata_auto_creates_unknown_topics_with_broker_defaults() {
    let broker = Broker::start_with(&["num.partitions=3"]);
    // The first Metadata creates the topic; the second sees its partitions.
    let _ = kcat_list(&broker, Some("auto-made"));
    let listing = kcat_list(&broker, Some("auto-made"));
    assert_eq!(
        partitions_in_listing(&listing, "auto-made"),
        Some(3),
        "{listing}"
    );

    let ask = |name: &str, allow: bool| -> MetadataResponse {
        let mut req = MetadataRequest::default();
        let mut t = MetadataRequestTopic::default();
        t.name = Some(TopicName(StrBytes::from_string(name.into())));
        req.topics = Some(vec![t]);
        req.allow_auto_topic_creation = allow;
        exchange(&broker, ApiKey::Metadata, 12, &req)
    };
    // allow_auto_topic_creation=false (v4+) leaves it unknown.
    assert_eq!(ask("not-made", false).topics[0].error_code, 3);
    assert_eq!(ask("not-made", false).topics[0].error_code, 3);
    // Kafka answers a just-created topic with LEADER_NOT_AVAILABLE.
    let first = ask("made-now", true);
    assert_eq!(first.topics[0].error_code, 5);
    let second = ask("made-now", true);
    assert_eq!(second.topics[0].error_code, 0);
    assert_eq!(second.topics[0].partitions.len(), 3);
    assert!(!second.topics[0].topic_id.is_nil());
    assert_eq!(ask("bad/name", true).topics[0].error_code, 17);
}

#[test]
fn metadata_does_not_auto_create_when_disabled() {
    let broker = Broker::start_with(&["auto.create.topics.enable=false"]);
    let _ = kcat_list(&broker, Some("stays-unknown"));
    let listing = kcat_list(&broker, None);
    assert_eq!(partitions_in_listing(&listing, "stays-unknown"), None);
}

fn init_producer_id(
    broker: &Broker,
    transactional_id: Option<&str>,
    producer_id: i64,
    epoch: i16,
) -> InitProducerIdResponse {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id =
        transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.into())));
    req.transaction_timeout_ms = 60_000;
    req.producer_id = ProducerId(producer_id);
    req.producer_epoch = epoch;
    exchange(broker, ApiKey::InitProducerId, 4, &req)
}

#[test]
fn init_producer_id_hands_out_a_new_id_at_epoch_0_every_time() {
    let broker = Broker::start();
    let first = init_producer_id(&broker, None, -1, -1);
    let second = init_producer_id(&broker, None, -1, -1);
    assert_eq!((first.error_code, second.error_code), (0, 0));
    assert!(second.producer_id.0 > first.producer_id.0);
    assert_eq!((first.producer_epoch, second.producer_epoch), (0, 0));

    // A re-initialisation naming an existing id and epoch (v3+, KIP-360)
    // gets a new id at epoch 0, as from Kafka without a transactional id.
    let again = init_producer_id(&broker, None, first.producer_id.0, 0);
    assert_eq!(again.error_code, 0);
    assert_eq!(again.producer_epoch, 0);
    assert!(again.producer_id.0 > second.producer_id.0);
    let exhausted = init_producer_id(&broker, None, again.producer_id.0, i16::MAX - 1);
    assert_eq!(exhausted.producer_epoch, 0);
    assert!(exhausted.producer_id.0 > again.producer_id.0);

    // A transactional id before any FindCoordinator created
    // `__transaction_state`: this broker coordinates no transactional id
    // yet, NOT_COORDINATOR (16), as Kafka answers a broker that does not
    // lead the id's partition.
    let txn = init_producer_id(&broker, Some("tx-1"), -1, -1);
    assert_eq!(txn.error_code, 16);
    assert_eq!(txn.producer_id.0, -1);

    // Ids come from a reserved block in the store: a restart continues
    // past everything handed out before.
    let (_, dir) = broker.stop_keeping_dir();
    let broker = Broker::start_in(dir, &[]);
    let after = init_producer_id(&broker, None, -1, -1);
    assert!(after.producer_id.0 > exhausted.producer_id.0);
}

fn creatable(name: &str, partitions: i32) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_string(name.into())))
        .with_num_partitions(partitions)
        .with_replication_factor(1)
}

fn metadata_for(broker: &Broker, name: &str) -> MetadataResponse {
    let mut req = MetadataRequest::default();
    let mut t = MetadataRequestTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(name.into())));
    req.topics = Some(vec![t]);
    exchange(broker, ApiKey::Metadata, 12, &req)
}

#[test]
fn create_topics_v7_returns_the_topic_id_and_delete_topics_v6_deletes_by_id() {
    let broker = Broker::start_with(&["auto.create.topics.enable=false"]);
    let create = |validate_only: bool| -> CreateTopicsResponse {
        let req = CreateTopicsRequest::default()
            .with_topics(vec![creatable("by-id", 2)])
            .with_timeout_ms(10_000)
            .with_validate_only(validate_only);
        exchange(&broker, ApiKey::CreateTopics, 7, &req)
    };
    // validate_only checks without creating.
    assert_eq!(create(true).topics[0].error_code, 0);
    assert_eq!(metadata_for(&broker, "by-id").topics[0].error_code, 3);

    let created = create(false);
    let t = &created.topics[0];
    assert_eq!(
        (t.error_code, t.num_partitions, t.replication_factor),
        (0, 2, 1)
    );
    let configs = t.configs.as_ref().expect("v5+ configs");
    assert!(configs.iter().any(|c| c.name.as_str() == "retention.ms"));
    let md = metadata_for(&broker, "by-id");
    assert_eq!(md.topics[0].topic_id, t.topic_id);
    assert!(!t.topic_id.is_nil());

    let delete = |id: uuid::Uuid| -> DeleteTopicsResponse {
        let req = DeleteTopicsRequest::default()
            .with_topics(vec![DeleteTopicState::default().with_topic_id(id)])
            .with_timeout_ms(10_000);
        exchange(&broker, ApiKey::DeleteTopics, 6, &req)
    };
    let deleted = delete(t.topic_id);
    assert_eq!(deleted.responses[0].error_code, 0);
    assert_eq!(
        deleted.responses[0].name.as_ref().map(|n| n.0.as_str()),
        Some("by-id")
    );
    assert_eq!(metadata_for(&broker, "by-id").topics[0].error_code, 3);
    // UNKNOWN_TOPIC_ID (100) once gone.
    assert_eq!(delete(t.topic_id).responses[0].error_code, 100);
}

#[test]
fn a_nested_array_count_beyond_the_body_closes_only_that_connection() {
    let broker = Broker::start();
    // CreateTopics v4 (classic encoding): one topic whose configs array
    // claims 2^31-1 entries.
    let mut body = Vec::new();
    body.extend_from_slice(&1i32.to_be_bytes());
    body.extend_from_slice(&1i16.to_be_bytes());
    body.push(b'x');
    body.extend_from_slice(&1i32.to_be_bytes()); // num_partitions
    body.extend_from_slice(&1i16.to_be_bytes()); // replication_factor
    body.extend_from_slice(&0i32.to_be_bytes()); // assignments
    body.extend_from_slice(&i32::MAX.to_be_bytes()); // configs
    let mut frame = request_frame(ApiKey::CreateTopics, 4, 1, &RawBody(&[]));
    frame.extend_from_slice(&body);
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    let mut stream = broker.connect();
    stream.write_all(&frame).unwrap();
    assert!(
        common::read_frame(&mut stream).is_none(),
        "expected a close"
    );
    // The broker still serves others.
    assert_eq!(metadata_for(&broker, "x").topics.len(), 1);
}

/// An already-encoded body.
struct RawBody<'a>(&'a [u8]);

impl kafka_protocol::protocol::Encodable for RawBody<'_> {
    fn encode<B: kafka_protocol::protocol::buf::ByteBufMut>(
        &self,
        buf: &mut B,
        _version: i16,
    ) -> anyhow::Result<()> {
        buf.put_slice(self.0);
        Ok(())
    }
    fn compute_size(&self, _version: i16) -> anyhow::Result<usize> {
        Ok(self.0.len())
    }
}
