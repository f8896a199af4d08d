//! Real Kafka clients against the broker binary: kcat (Debian's, librdkafka
//! 2.0.2), confluent-kafka and kafka-python read correct broker and cluster
//! metadata. Needs `bash tests/run.sh` to have installed them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use common::{kcat, run_python, Broker};
use std::process::Command;

#[test]
fn kcat_lists_the_broker_as_controller_and_no_topics() {
    let kcat = kcat();
    let broker = Broker::start();
    let out = Command::new(kcat)
        .args(["-L", "-b", &broker.bootstrap(), "-m", "20"])
        .output()
        .expect("run kcat");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kcat failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = format!(
        "broker {} at {} (controller)",
        broker.broker_id,
        broker.bootstrap()
    );
    assert!(stdout.contains(" 1 brokers:"), "{stdout}");
    assert!(
        stdout.contains(&expected),
        "missing {expected:?} in:\n{stdout}"
    );
    assert!(stdout.contains(" 0 topics:"), "{stdout}");
}

#[test]
fn kcat_json_metadata_names_controller_and_broker() {
    let kcat = kcat();
    let broker = Broker::start_with(&["broker.id=7"]);
    let out = Command::new(kcat)
        .args(["-L", "-J", "-b", &broker.bootstrap(), "-m", "20"])
        .output()
        .expect("run kcat");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kcat -J output");
    assert_eq!(json["controllerid"], 7, "{json}");
    assert_eq!(json["brokers"][0]["id"], 7, "{json}");
    assert_eq!(json["brokers"][0]["name"], broker.bootstrap(), "{json}");
    assert_eq!(json["topics"].as_array().map(Vec::len), Some(0), "{json}");
}

#[test]
fn kcat_reports_unknown_topic_for_a_missing_topic() {
    let kcat = kcat();
    // With auto.create.topics.enable (Kafka's default true) the Metadata
    // request would create the topic.
    let broker = Broker::start_with(&["auto.create.topics.enable=false"]);
    let out = Command::new(kcat)
        .args([
            "-L",
            "-b",
            &broker.bootstrap(),
            "-t",
            "no-such-topic",
            "-m",
            "20",
        ])
        .output()
        .expect("run kcat");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("topic \"no-such-topic\""), "{stdout}");
    assert!(stdout.contains("Unknown topic or partition"), "{stdout}");
}

#[test]
fn confluent_kafka_list_topics_sees_cluster_id_controller_and_broker() {
    let broker = Broker::start();
    let out = run_python(
        &broker,
        r#"
import os
from confluent_kafka.admin import AdminClient
md = AdminClient({"bootstrap.servers": os.environ["BOOTSTRAP"]}).list_topics(timeout=20)
b = md.brokers
print(md.cluster_id)
print(md.controller_id)
print(";".join(f"{i}@{v.host}:{v.port}" for i, v in sorted(b.items())))
print(len(md.topics))
"#,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        vec![
            broker.cluster_id.as_str(),
            &broker.broker_id.to_string(),
            &format!("{}@{}", broker.broker_id, broker.bootstrap()),
            "0",
        ]
    );
}

#[test]
fn kafka_python_admin_and_consumer_see_the_cluster() {
    let broker = Broker::start();
    let out = run_python(
        &broker,
        r#"
import os
from kafka import KafkaAdminClient, KafkaConsumer
bs = os.environ["BOOTSTRAP"]
admin = KafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=20000)
c = admin.describe_cluster()
print(c["cluster_id"])
print(c["controller_id"])
print(";".join(f'{b.get("node_id", b.get("broker_id"))}@{b["host"]}:{b["port"]}' for b in c["brokers"]))
admin.close()
consumer = KafkaConsumer(bootstrap_servers=bs, request_timeout_ms=20000)
print(len(consumer.topics()))
consumer.close()
"#,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        vec![
            broker.cluster_id.as_str(),
            &broker.broker_id.to_string(),
            &format!("{}@{}", broker.broker_id, broker.bootstrap()),
            "0",
        ]
    );
}

#[test]
fn sigterm_stops_the_broker_with_exit_code_zero() {
    let broker = Broker::start();
    let mut stream = broker.connect();
    let frame = common::request_frame(
        kafka_protocol::messages::ApiKey::ApiVersions,
        3,
        1,
        &kafka_protocol::messages::ApiVersionsRequest::default(),
    );
    let _ = common::round_trip(&mut stream, &frame);
    let status = broker.stop();
    assert_eq!(status.code(), Some(0), "{status:?}");
}
