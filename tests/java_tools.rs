//! Kafka 3.9's command-line tools against the broker binary (issue 23), run
//! as `java -cp '<jars>/*' <class>` — the classes behind Kafka's `bin/*.sh`
//! scripts in 3.9: kafka-topics (`org.apache.kafka.tools.TopicCommand`),
//! kafka-configs (`kafka.admin.ConfigCommand`), kafka-console-producer
//! (`kafka.tools.ConsoleProducer`), kafka-console-consumer
//! (`org.apache.kafka.tools.consumer.ConsoleConsumer`),
//! kafka-producer-perf-test / kafka-consumer-perf-test
//! (`org.apache.kafka.tools.ProducerPerformance` / `ConsumerPerformance`)
//! kafka-verifiable-producer / -consumer
//! (`org.apache.kafka.tools.VerifiableProducer` / `VerifiableConsumer`)
//! and kafka-delete-records (`org.apache.kafka.tools.DeleteRecordsCommand`).
//! Their outputs are checked, not only their exit codes; what they wrote
//! is also read back from the broker. The two tools that need consumer
//! groups are written and ignored until JoinGroup exists (issue 21).
//! Needs `bash tests/run.sh` (JDK, Kafka jars).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::Write;
use std::process::Stdio;

use common::java::{kafka_tool, run_ok};
use common::{decode_records, unique_topic, Broker, Conn, LATEST_TIMESTAMP};
use serde_json::Value;

const TOPIC_COMMAND: &str = "org.apache.kafka.tools.TopicCommand";
const CONFIG_COMMAND: &str = "kafka.admin.ConfigCommand";

/// Run a tool with `args`; its stdout (the test fails unless it exits 0).
fn tool(class: &str, args: &[&str]) -> String {
    let out = run_ok(kafka_tool(class).args(args), class);
    String::from_utf8(out.stdout).expect("utf8")
}

/// Like [`tool`], for a run that must fail: (exit code, stdout + stderr).
fn tool_failing(class: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = kafka_tool(class).args(args).output().expect(class);
    assert!(!out.status.success(), "{class} {args:?} succeeded");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn topics(broker: &Broker, args: &[&str]) -> String {
    let bootstrap = broker.bootstrap();
    let mut all = vec!["--bootstrap-server", &bootstrap];
    all.extend_from_slice(args);
    tool(TOPIC_COMMAND, &all)
}

/// `kafka-topics` that must fail: its output (stdout + stderr).
fn topics_failing(broker: &Broker, args: &[&str]) -> String {
    let bootstrap = broker.bootstrap();
    let mut all = vec!["--bootstrap-server", &bootstrap];
    all.extend_from_slice(args);
    tool_failing(TOPIC_COMMAND, &all).1
}

fn configs(broker: &Broker, args: &[&str]) -> String {
    let bootstrap = broker.bootstrap();
    let mut all = vec!["--bootstrap-server", &bootstrap];
    all.extend_from_slice(args);
    tool(CONFIG_COMMAND, &all)
}

/// kafka-console-consumer on partition 0 of `topic` from the earliest
/// offset, `max` messages, with `extra` arguments; its stdout.
fn console_consume(broker: &Broker, topic: &str, max: usize, extra: &[&str]) -> String {
    let bootstrap = broker.bootstrap();
    let max = max.to_string();
    let mut all = vec![
        "--bootstrap-server",
        &bootstrap,
        "--topic",
        topic,
        "--partition",
        "0",
        "--offset",
        "earliest",
        "--max-messages",
        &max,
    ];
    all.extend_from_slice(extra);
    tool("org.apache.kafka.tools.consumer.ConsoleConsumer", &all)
}

/// The partition lines of `kafka-topics --describe`, tabs kept.
fn partition_lines(describe: &str) -> Vec<&str> {
    describe
        .lines()
        .filter(|l| l.starts_with('\t'))
        .map(str::trim)
        .collect()
}

fn log_end_offset(broker: &Broker, topic: &str, partition: i32) -> i64 {
    Conn::open(broker)
        .list_offset(topic, partition, LATEST_TIMESTAMP)
        .offset
}

#[test]
fn kafka_topics_create_describe_alter_list_delete() {
    let broker = Broker::start();
    let topic = unique_topic("tool-topics");
    let id = broker.broker_id;
    let created = topics(
        &broker,
        &[
            "--create",
            "--topic",
            &topic,
            "--partitions",
            "3",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=123456",
        ],
    );
    assert_eq!(created.trim(), format!("Created topic {topic}."));

    let again = topics_failing(
        &broker,
        &["--create", "--topic", &topic, "--partitions", "1"],
    );
    assert!(
        again.contains(&format!("Topic '{topic}' already exists.")),
        "{again}"
    );

    let describe = topics(&broker, &["--describe", "--topic", &topic]);
    let header = describe.lines().next().unwrap();
    let fields: Vec<&str> = header.split('\t').collect();
    assert_eq!(fields[0], format!("Topic: {topic}"), "{describe}");
    assert!(fields[1].starts_with("TopicId: ") && fields[1].len() > "TopicId: ".len() + 20);
    assert_eq!(
        &fields[2..],
        [
            "PartitionCount: 3",
            "ReplicationFactor: 1",
            "Configs: retention.ms=123456"
        ],
        "{describe}"
    );
    let expect = |n: i32| -> Vec<String> {
        (0..n)
            .map(|p| {
                format!(
                    "Topic: {topic}\tPartition: {p}\tLeader: {id}\tReplicas: {id}\tIsr: {id}\t\
                     Elr: N/A\tLastKnownElr: N/A"
                )
            })
            .collect()
    };
    assert_eq!(partition_lines(&describe), expect(3), "{describe}");

    let altered = topics(
        &broker,
        &["--alter", "--topic", &topic, "--partitions", "5"],
    );
    assert_eq!(altered.trim(), "", "--alter prints nothing on success");
    let describe = topics(&broker, &["--describe", "--topic", &topic]);
    assert!(describe.contains("PartitionCount: 5"), "{describe}");
    assert_eq!(partition_lines(&describe), expect(5), "{describe}");
    // Fewer partitions is refused, as Kafka does.
    let shrink = topics_failing(
        &broker,
        &["--alter", "--topic", &topic, "--partitions", "2"],
    );
    assert!(
        shrink.contains("InvalidPartitionsException"),
        "shrink: {shrink}"
    );

    let list = topics(&broker, &["--list"]);
    assert!(list.lines().any(|l| l == topic), "{list}");

    let deleted = topics(&broker, &["--delete", "--topic", &topic]);
    assert_eq!(deleted.trim(), "");
    let list = topics(&broker, &["--list"]);
    assert!(!list.lines().any(|l| l == topic), "{list}");
    let gone = topics_failing(&broker, &["--describe", "--topic", &topic]);
    // Kafka 3.9 prints the name as `Optional[<topic>]` here (its own quirk).
    assert!(
        gone.contains("does not exist as expected") && gone.contains(&topic),
        "{gone}"
    );
    broker.stop();
}

#[test]
fn kafka_configs_alter_describe_delete_topic_and_describe_broker() {
    let broker = Broker::start();
    let topic = unique_topic("tool-configs");
    Conn::open(&broker).create_topic(&topic, 1, &[]);
    let entity = ["--entity-type", "topics", "--entity-name", &topic];
    let with = |extra: &[&'static str]| -> Vec<String> {
        entity
            .iter()
            .chain(extra.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        configs(&broker, &args)
    };
    let out = run(with(&[
        "--alter",
        "--add-config",
        "retention.ms=86400000,max.message.bytes=2000",
    ]));
    assert_eq!(
        out.trim(),
        format!("Completed updating config for topic {topic}.")
    );
    let describe = run(with(&["--describe"]));
    let lines: Vec<&str> = describe.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        [
            format!("Dynamic configs for topic {topic} are:").as_str(),
            "max.message.bytes=2000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=2000, \
             DEFAULT_CONFIG:message.max.bytes=1048588}",
            "retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000, \
             DEFAULT_CONFIG:log.retention.ms=604800000}",
        ],
        "{describe}"
    );
    let out = run(with(&["--alter", "--delete-config", "max.message.bytes"]));
    assert_eq!(
        out.trim(),
        format!("Completed updating config for topic {topic}.")
    );
    let describe = run(with(&["--describe"]));
    assert!(!describe.contains("max.message.bytes"), "{describe}");
    assert!(describe.contains("retention.ms=86400000 "), "{describe}");
    // An invalid value is refused with the broker's reason.
    let bootstrap = broker.bootstrap();
    let (_, bad) = tool_failing(
        CONFIG_COMMAND,
        &[
            "--bootstrap-server",
            &bootstrap,
            "--entity-type",
            "topics",
            "--entity-name",
            &topic,
            "--alter",
            "--add-config",
            "retention.ms=soon",
        ],
    );
    assert!(
        bad.contains("InvalidConfigurationException") && bad.contains("retention.ms"),
        "{bad}"
    );

    let id = broker.broker_id.to_string();
    let all = configs(
        &broker,
        &[
            "--entity-type",
            "brokers",
            "--entity-name",
            &id,
            "--describe",
            "--all",
        ],
    );
    assert!(
        all.starts_with(&format!("All configs for broker {id} are:")),
        "{all}"
    );
    assert!(
        all.lines().any(|l| l.trim()
            == format!(
                "broker.id={id} sensitive=false synonyms={{STATIC_BROKER_CONFIG:broker.id={id}}}"
            )),
        "{all}"
    );
    broker.stop();
}

#[test]
fn console_producer_then_console_consumer_round_trip() {
    let broker = Broker::start();
    let topic = unique_topic("tool-console");
    Conn::open(&broker).create_topic(&topic, 1, &[]);
    let lines: Vec<String> = (0..50).map(|i| format!("key-{i}:value {i} ü")).collect();
    let mut producer = kafka_tool("kafka.tools.ConsoleProducer")
        .args([
            "--bootstrap-server",
            &broker.bootstrap(),
            "--topic",
            &topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("console producer");
    {
        let mut stdin = producer.stdin.take().unwrap();
        for l in &lines {
            writeln!(stdin, "{l}").unwrap();
        }
    } // EOF: the producer flushes and exits.
    let out = producer.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "console producer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(log_end_offset(&broker, &topic, 0), 50);

    let consumed = console_consume(
        &broker,
        &topic,
        50,
        &[
            "--property",
            "print.key=true",
            "--property",
            "print.offset=true",
            "--property",
            "key.separator=|",
        ],
    );
    let expected: Vec<String> = (0..50)
        .map(|i| format!("Offset:{i}|key-{i}|value {i} ü"))
        .collect();
    assert_eq!(consumed.lines().collect::<Vec<_>>(), expected);
    broker.stop();
}

#[test]
fn producer_perf_test_writes_every_record() {
    let broker = Broker::start();
    let topic = unique_topic("tool-perf");
    Conn::open(&broker).create_topic(&topic, 2, &[]);
    let out = tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            &topic,
            "--num-records",
            "20000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={}", broker.bootstrap()),
            "acks=all",
            "linger.ms=5",
        ],
    );
    // Last line: "20000 records sent, R records/sec (M MB/sec), A ms avg
    // latency, X ms max latency, p50, p95, p99, p99.9" (the figures are
    // load, not checked).
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("20000 records sent, "), "{out}");
    for part in ["records/sec", "ms avg latency", "ms 99th", "ms 99.9th."] {
        assert!(last.contains(part), "{part} missing: {last}");
    }
    let total = log_end_offset(&broker, &topic, 0) + log_end_offset(&broker, &topic, 1);
    assert_eq!(total, 20000);
    let records = decode_records(&Conn::open(&broker).fetch_to_high_watermark(&topic, 0, 0));
    assert!(records
        .iter()
        .all(|r| r.value.as_ref().map(|v| v.len()) == Some(100)));
    broker.stop();
}

/// The JSON lines kafka-verifiable-producer prints, by `name`.
fn events<'a>(lines: &'a [Value], name: &str) -> Vec<&'a Value> {
    lines.iter().filter(|v| v["name"] == name).collect()
}

#[test]
fn verifiable_producer_acks_every_message_in_order() {
    let broker = Broker::start();
    let topic = unique_topic("tool-verifiable");
    Conn::open(&broker).create_topic(&topic, 1, &[]);
    let out = tool(
        "org.apache.kafka.tools.VerifiableProducer",
        &[
            "--bootstrap-server",
            &broker.bootstrap(),
            "--topic",
            &topic,
            "--max-messages",
            "500",
            "--acks",
            "-1",
        ],
    );
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events(&lines, "startup_complete").len(), 1, "{out}");
    assert_eq!(events(&lines, "shutdown_complete").len(), 1, "{out}");
    assert!(events(&lines, "producer_send_error").is_empty(), "{out}");
    let acked = events(&lines, "producer_send_success");
    assert_eq!(acked.len(), 500);
    // Values are "0".."499" sent in order to one partition: offset == value.
    for (i, e) in acked.iter().enumerate() {
        assert_eq!(e["topic"], topic.as_str());
        assert_eq!(e["partition"], 0);
        assert_eq!(e["value"], i.to_string());
        assert_eq!(e["offset"], i as u64, "{e}");
    }
    let data = events(&lines, "tool_data");
    assert_eq!(
        (data[0]["sent"].clone(), data[0]["acked"].clone()),
        (500.into(), 500.into())
    );
    let stored = decode_records(&Conn::open(&broker).fetch_to_high_watermark(&topic, 0, 0));
    let values: Vec<String> = stored
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
        .collect();
    assert_eq!(values, (0..500).map(|i| i.to_string()).collect::<Vec<_>>());
    broker.stop();
}

#[test]
fn consumer_perf_test_reads_every_record() {
    let broker = Broker::start();
    let topic = unique_topic("tool-consumer-perf");
    Conn::open(&broker).create_topic(&topic, 2, &[]);
    tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            &topic,
            "--num-records",
            "20000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={}", broker.bootstrap()),
        ],
    );
    let out = tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        &[
            "--bootstrap-server",
            &broker.bootstrap(),
            "--topic",
            &topic,
            "--messages",
            "20000",
            "--timeout",
            "30000",
        ],
    );
    // Header, then one CSV row: start, end, MB, MB/s, nMsg, nMsg/s, ...
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("start.time, end.time, data.consumed.in.MB"),
        "{out}"
    );
    let row: Vec<&str> = lines[1].split(", ").collect();
    assert_eq!(row[4], "20000", "data.consumed.in.nMsg: {out}");
    broker.stop();
}

#[test]
fn verifiable_consumer_reads_and_commits_every_message() {
    let broker = Broker::start();
    let topic = unique_topic("tool-verifiable-consumer");
    Conn::open(&broker).create_topic(&topic, 1, &[]);
    tool(
        "org.apache.kafka.tools.VerifiableProducer",
        &[
            "--bootstrap-server",
            &broker.bootstrap(),
            "--topic",
            &topic,
            "--max-messages",
            "500",
        ],
    );
    let out = tool(
        "org.apache.kafka.tools.VerifiableConsumer",
        &[
            "--bootstrap-server",
            &broker.bootstrap(),
            "--topic",
            &topic,
            "--group-id",
            &format!("{topic}-group"),
            "--max-messages",
            "500",
            "--reset-policy",
            "earliest",
        ],
    );
    let lines: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let consumed: u64 = events(&lines, "records_consumed")
        .iter()
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(consumed, 500, "{out}");
    let commits = events(&lines, "offsets_committed");
    assert!(commits.iter().all(|c| c["success"] == true), "{out}");
    let last = commits.last().expect("a commit");
    assert_eq!(last["offsets"][0]["offset"], 500, "{out}");
    broker.stop();
}

/// kafka-delete-records (`org.apache.kafka.tools.DeleteRecordsCommand`)
/// with an offset JSON file: each partition's new low watermark, or the
/// broker's error for an offset past the high watermark; the earliest
/// offset follows, and a consumer from the start begins there.
#[test]
fn delete_records_command_moves_the_log_start_and_reports_errors() {
    use kafka_protocol::records::Compression;
    let broker = Broker::start();
    let topic = unique_topic("tool-delete-records");
    let mut conn = Conn::open(&broker);
    conn.create_topic(&topic, 2, &[]);
    for p in 0..2 {
        for i in 0..50i64 {
            let value = format!("v{i}");
            let batch = common::encode_batch(
                &[(None, value.as_bytes(), common::now_ms())],
                Compression::None,
            );
            assert_eq!(conn.produce(&topic, p, batch, 1).error_code, 0);
        }
    }
    let dir = common::new_log_dir();
    let file = dir.path().join("offsets.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"offset":30}},{{"topic":"{topic}","partition":1,"offset":500}}]}}"#
        ),
    )
    .unwrap();
    let out = tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        &[
            "--bootstrap-server",
            &broker.bootstrap(),
            "--offset-json-file",
            &file.display().to_string(),
        ],
    );
    assert!(
        out.contains(&format!("partition: {topic}-0\tlow_watermark: 30")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("partition: {topic}-1\terror:"))
                && l.contains("OffsetOutOfRangeException")),
        "{out}"
    );
    let earliest = |p| {
        Conn::open(&broker)
            .list_offset(&topic, p, common::EARLIEST_TIMESTAMP)
            .offset
    };
    assert_eq!((earliest(0), earliest(1)), (30, 0));
    let consumed = console_consume(&broker, &topic, 20, &[]);
    let expected: Vec<String> = (30..50).map(|i| format!("v{i}")).collect();
    assert_eq!(consumed.lines().collect::<Vec<_>>(), expected);
    broker.stop();
}

/// kafka-producer-perf-test with `--transactional-id` (transactions of
/// `--transaction-duration-ms`), then kafka-transactions (`TransactionsCommand`)
/// `list` and `describe` the id (issue 25: ListTransactions,
/// DescribeTransactions); a read_committed fetch reads every record.
#[test]
fn transactional_perf_test_then_kafka_transactions_list_and_describe() {
    let broker = Broker::start_with(&["transaction.state.log.num.partitions=4"]);
    let topic = unique_topic("tool-txn");
    Conn::open(&broker).create_topic(&topic, 1, &[]);
    let out = tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            &topic,
            "--num-records",
            "5000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--transactional-id",
            "tool-txn-id",
            "--transaction-duration-ms",
            "50",
            "--producer-props",
            &format!("bootstrap.servers={}", broker.bootstrap()),
        ],
    );
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("5000 records sent, "), "{out}");
    let bootstrap = broker.bootstrap();
    let command = "org.apache.kafka.tools.TransactionsCommand";
    let list = tool(command, &["--bootstrap-server", &bootstrap, "list"]);
    let rows: Vec<Vec<&str>> = list
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "TransactionalId",
            "Coordinator",
            "ProducerId",
            "TransactionState"
        ],
        "{list}"
    );
    let row = rows
        .iter()
        .find(|r| r.first() == Some(&"tool-txn-id"))
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(row[1], broker.broker_id.to_string(), "{list}");
    assert_eq!(row[3], "CompleteCommit", "{list}");
    let describe = tool(
        command,
        &[
            "--bootstrap-server",
            &bootstrap,
            "describe",
            "--transactional-id",
            "tool-txn-id",
        ],
    );
    let lines: Vec<Vec<&str>> = describe
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0][..5],
        [
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState"
        ],
        "{describe}"
    );
    assert_eq!(lines[1][1], "tool-txn-id", "{describe}");
    assert_eq!(lines[1][2], row[2], "same producer id: {describe}");
    assert_eq!(lines[1][4], "CompleteCommit", "{describe}");
    producers_hanging_and_features(&broker, &topic, row[2]);
    // read_committed: every record, and nothing past the LSO (= HW).
    let mut c = Conn::open(&broker);
    let mut spec = common::FetchSpec::new(&topic, 0, 0);
    spec.isolation_level = 1;
    spec.max_wait_ms = 10;
    let mut read = 0usize;
    loop {
        let part = c.fetch(&spec);
        assert_eq!(part.error_code, 0);
        let batches = common::whole_batches(part.records.as_ref());
        if batches.is_empty() {
            assert_eq!(part.last_stable_offset, part.high_watermark);
            break;
        }
        for b in &batches {
            spec.fetch_offset = common::batch_last_offset(b) + 1;
        }
        read += decode_records(&batches)
            .iter()
            .filter(|r| !r.control)
            .count();
    }
    assert_eq!(read, 5000);
    broker.stop();
}

/// On the transactional test's broker: `kafka-transactions
/// describe-producers` (DescribeProducers, KIP-664) lists the perf test's
/// producer with its last sequence and no open transaction, `find-hanging`
/// finds none; `kafka-features describe` (ApiVersions' feature tags) lists
/// no feature, as against a Kafka 3.9 ZooKeeper-mode broker, and
/// `kafka-features upgrade` is refused per feature as Kafka 3.9 refuses it.
fn producers_hanging_and_features(broker: &Broker, topic: &str, producer_id: &str) {
    let bootstrap = broker.bootstrap();
    let command = "org.apache.kafka.tools.TransactionsCommand";
    let producers = tool(
        command,
        &[
            "--bootstrap-server",
            &bootstrap,
            "describe-producers",
            "--topic",
            topic,
            "--partition",
            "0",
        ],
    );
    let rows: Vec<Vec<&str>> = producers
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "ProducerId",
            "ProducerEpoch",
            "LatestCoordinatorEpoch",
            "LastSequence",
            "LastTimestamp",
            "CurrentTransactionStartOffset"
        ],
        "{producers}"
    );
    assert_eq!(rows.len(), 2, "one producer: {producers}");
    assert_eq!(rows[1][0], producer_id, "{producers}");
    assert!(
        rows[1][3].parse::<i32>().expect("last sequence") >= 0,
        "{producers}"
    );
    assert_eq!(rows[1][5], "None", "no open transaction: {producers}");
    let id = broker.broker_id.to_string();
    let hanging = tool(
        command,
        &[
            "--bootstrap-server",
            &bootstrap,
            "find-hanging",
            "--broker-id",
            &id,
        ],
    );
    assert_eq!(hanging.lines().count(), 1, "only the header: {hanging}");
    assert!(
        hanging.starts_with("Topic\tPartition\tProducerId"),
        "{hanging}"
    );
    let features = "org.apache.kafka.tools.FeatureCommand";
    let described = tool(features, &["--bootstrap-server", &bootstrap, "describe"]);
    assert_eq!(described.trim(), "", "no supported or finalized feature");
    let (code, refused) = tool_failing(
        features,
        &[
            "--bootstrap-server",
            &bootstrap,
            "upgrade",
            "--feature",
            "group.version=1",
        ],
    );
    assert_eq!(code, Some(1), "{refused}");
    assert!(
        refused.contains(
            "Could not upgrade group.version to 1. Could not apply finalized feature \
             update because the provided feature is not supported."
        ),
        "{refused}"
    );
}
