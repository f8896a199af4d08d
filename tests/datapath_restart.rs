//! Issue 5, what survives a restart on the same log dir, and how fetched
//! bytes leave the broker: tail reads from the batch cache by `sendmsg`,
//! cold reads from segment files by `sendfile` (ARCHITECTURE.md §4), as
//! counted by the `zerocopy:` line the broker prints at shutdown.
//! Needs `bash tests/run.sh` (the venv with confluent-kafka).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::records::Compression;

use common::{
    assert_all_consumed, assert_all_delivered, decode_records, encode_batch, error_code,
    run_py_script, Broker, Conn, RawRecord, RoundTrip, LATEST_TIMESTAMP,
};

/// Topic name → (topic id, partition count) from Metadata v12.
fn topic_ids(conn: &mut Conn) -> BTreeMap<String, (uuid::Uuid, usize)> {
    conn.metadata(None)
        .topics
        .iter()
        .map(|t| {
            let name = t.name.as_ref().expect("topic name").0.to_string();
            (name, (t.topic_id, t.partitions.len()))
        })
        .collect()
}

fn latest_offsets(conn: &mut Conn, topic: &str, partitions: i32) -> Vec<i64> {
    (0..partitions)
        .map(|p| {
            let r = conn.list_offset(topic, p, LATEST_TIMESTAMP);
            assert_eq!(
                r.error_code,
                error_code::NONE,
                "ListOffsets latest {topic}-{p}: {r:?}"
            );
            r.offset
        })
        .collect()
}

#[test]
fn restart_on_the_same_log_dir_keeps_messages_offsets_and_topic_ids() {
    const PARTITIONS: i32 = 3;
    let trip = RoundTrip {
        topic: "durable",
        count: 20_000,
        partitions: PARTITIONS,
        size: 300,
    };
    let broker = Broker::start();
    let cluster_id = broker.cluster_id.clone();
    let mut conn = Conn::open(&broker);
    conn.create_topic("durable", PARTITIONS, &[]);
    conn.create_topic("durable-empty", 2, &[]);
    let ids_before = topic_ids(&mut conn);
    assert_eq!(ids_before.len(), 2, "{ids_before:?}");
    assert!(
        ids_before.values().all(|(id, _)| !id.is_nil()),
        "{ids_before:?}"
    );

    let report = run_py_script(
        &["confluent_kafka"],
        "confluent_roundtrip.py",
        &trip.args(&broker, "produce"),
    );
    assert_all_delivered(&report, trip.count);
    let latest_before = latest_offsets(&mut conn, "durable", PARTITIONS);
    assert_eq!(
        latest_before.iter().sum::<i64>(),
        trip.count as i64,
        "{latest_before:?}"
    );
    drop(conn);

    let stopped = broker.stop_with_logs();
    assert_eq!(stopped.status.code(), Some(0), "{:?}", stopped.log_lines);
    let broker = Broker::start_in(stopped.log_dir, &[]);
    assert_eq!(broker.cluster_id, cluster_id, "cluster.id after restart");
    let mut conn = Conn::open(&broker);
    conn.wait_for_leaders("durable", PARTITIONS);
    assert_eq!(
        topic_ids(&mut conn),
        ids_before,
        "topics and ids after restart"
    );
    assert_eq!(
        latest_offsets(&mut conn, "durable", PARTITIONS),
        latest_before
    );

    let report = run_py_script(
        &["confluent_kafka"],
        "confluent_roundtrip.py",
        &trip.args(&broker, "consume"),
    );
    assert_all_consumed(&report, trip.count, PARTITIONS);

    // The log continues where it ended: the next append gets the next offset.
    let batch = encode_batch(
        &[(None, b"after restart", common::now_ms())],
        Compression::None,
    );
    let resp = conn.produce("durable", 0, batch, -1);
    assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    assert_eq!(resp.base_offset, latest_before[0]);
}

/// `zerocopy: sendmsg=<bytes> sendfile=<bytes> copied=<bytes> glommio=<bytes>`,
/// printed once at shutdown, summed over shards.
#[derive(Debug, Default, PartialEq)]
struct ZeroCopyLine {
    sendmsg: u64,
    sendfile: u64,
    copied: u64,
    glommio: u64,
    tls: u64,
}

fn parse_zerocopy_line(log_lines: &[String]) -> ZeroCopyLine {
    let found: Vec<&str> = log_lines
        .iter()
        .filter_map(|l| l.split_once("zerocopy: ").map(|(_, rest)| rest))
        .filter(|rest| rest.starts_with("sendmsg="))
        .collect();
    let [line] = found[..] else {
        panic!("expected one `zerocopy: sendmsg=...` line at shutdown, got {found:?} in {log_lines:#?}");
    };
    let mut stats = ZeroCopyLine::default();
    for field in line.split_whitespace() {
        let (key, value) = field.split_once('=').unwrap_or((field, ""));
        let value: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad field {field:?} in {line:?}"));
        match key {
            "sendmsg" => stats.sendmsg = value,
            "sendfile" => stats.sendfile = value,
            "copied" => stats.copied = value,
            "glommio" => stats.glommio = value,
            "tls" => stats.tls = value,
            _ => panic!("unknown field {field:?} in {line:?}"),
        }
    }
    stats
}

/// 64 batches × 64 records × 1 KiB ≈ 4 MiB.
const ZC_BATCHES: usize = 64;
const ZC_RECORDS_PER_BATCH: usize = 64;

fn produce_zerocopy_data(conn: &mut Conn, topic: &str) {
    let timestamp = common::now_ms();
    for b in 0..ZC_BATCHES {
        let values: Vec<Vec<u8>> = (0..ZC_RECORDS_PER_BATCH)
            .map(|r| {
                let seq = b * ZC_RECORDS_PER_BATCH + r;
                let mut v = format!("{seq:010}:").into_bytes();
                v.resize(1024, (seq % 251) as u8);
                v
            })
            .collect();
        let records: Vec<RawRecord> = values
            .iter()
            .map(|v| (None, v.as_slice(), timestamp))
            .collect();
        let resp = conn.produce(topic, 0, encode_batch(&records, Compression::None), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        assert_eq!(resp.base_offset, (b * ZC_RECORDS_PER_BATCH) as i64);
    }
}

fn fetched_bytes(batches: &[Bytes]) -> u64 {
    batches.iter().map(|b| b.len() as u64).sum()
}

#[test]
fn tail_fetches_leave_by_sendmsg_and_cold_fetches_by_sendfile() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("zerocopy", 1, &[]);
    produce_zerocopy_data(&mut conn, "zerocopy");
    let tail = conn.fetch_to_high_watermark("zerocopy", 0, 0);
    assert_eq!(
        decode_records(&tail).len(),
        ZC_BATCHES * ZC_RECORDS_PER_BATCH
    );
    let tail_bytes = fetched_bytes(&tail);
    drop(conn);
    let stopped = broker.stop_with_logs();
    assert_eq!(stopped.status.code(), Some(0));
    let hot = parse_zerocopy_line(&stopped.log_lines);
    assert!(
        hot.sendmsg >= tail_bytes / 2,
        "tail read of {tail_bytes} bytes: {hot:?}"
    );
    assert!(
        hot.copied < tail_bytes / 10,
        "tail read of {tail_bytes} bytes: {hot:?}"
    );

    // After a restart the batch cache is empty: the same bytes come from
    // the segment file.
    let broker = Broker::start_in(stopped.log_dir, &[]);
    let mut conn = Conn::open(&broker);
    conn.wait_for_leaders("zerocopy", 1);
    let cold = conn.fetch_to_high_watermark("zerocopy", 0, 0);
    assert!(cold == tail, "cold read differs from the tail read");
    let cold_bytes = fetched_bytes(&cold);
    drop(conn);
    let (status, log_lines) = broker.stop_collect();
    assert_eq!(status.code(), Some(0));
    let cold_stats = parse_zerocopy_line(&log_lines);
    assert!(
        cold_stats.sendfile >= cold_bytes / 2,
        "cold read of {cold_bytes} bytes: {cold_stats:?}"
    );
    assert!(
        cold_stats.sendmsg > 0,
        "response headers go by sendmsg: {cold_stats:?}"
    );
    assert!(
        cold_stats.copied < cold_bytes / 10,
        "cold read of {cold_bytes} bytes: {cold_stats:?}"
    );
}

#[test]
fn zerocopy_line_parser_reads_every_field_behind_a_log_prefix() {
    let lines = vec![
        "shardlog: stopping".to_owned(),
        "2026-11-30T00:00:00Z INFO shardlog: zerocopy: sendmsg=10 sendfile=20 copied=3 glommio=4 tls=5"
            .to_owned(),
    ];
    assert_eq!(
        parse_zerocopy_line(&lines),
        ZeroCopyLine {
            sendmsg: 10,
            sendfile: 20,
            copied: 3,
            glommio: 4,
            tls: 5,
        }
    );
}

/// `topic partition offset` entries of a Kafka checkpoint file of the
/// broker's log dir (empty when the file is not there yet).
fn checkpoint_entries(dir: &std::path::Path, file: &str, topic: &str) -> BTreeMap<i32, i64> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
    text.lines()
        .skip(2)
        .filter_map(|line| {
            let mut f = line.split(' ');
            let (t, p, o) = (f.next()?, f.next()?, f.next()?);
            (t == topic).then(|| (p.parse().unwrap(), o.parse().unwrap()))
        })
        .collect()
}

/// The three checkpoint files are written while the broker runs (Kafka's
/// `highwatermark-checkpoint` task every
/// `replica.high.watermark.checkpoint.interval.ms`, and LogManager's
/// recovery-point and log-start tasks), not only at a clean shutdown: a
/// kill -9 leaves the last round's offsets behind for the next start.
#[test]
fn checkpoints_are_written_while_running_and_outlive_a_kill_9() {
    let overrides = [
        "replica.high.watermark.checkpoint.interval.ms=200",
        "log.flush.offset.checkpoint.interval.ms=300",
        "log.flush.start.offset.checkpoint.interval.ms=300",
        "log.flush.interval.messages=1",
    ];
    let broker = Broker::start_with(&overrides);
    let topic = common::unique_topic("ckpt");
    let mut conn = Conn::open(&broker);
    conn.create_topic(&topic, 2, &[]);
    conn.wait_for_leaders(&topic, 2);
    for i in 0..9 {
        let value = format!("checkpointed-{i}");
        let batch = encode_batch(
            &[(None, value.as_bytes(), common::now_ms())],
            Compression::None,
        );
        let r = conn.produce(&topic, i % 2, batch, 1);
        assert_eq!(r.error_code, 0, "produce {i}: {r:?}");
    }
    let want: BTreeMap<i32, i64> = [(0, 5), (1, 4)].into();
    let dir = broker.log_dir.path().to_path_buf();
    // Each file has its own task and interval: wait for all three (the
    // log-start one may not have run since the topic was created when the
    // other two have).
    let starts: BTreeMap<i32, i64> = [(0, 0), (1, 0)].into();
    common::cluster::wait_for(30, "the running broker's checkpoints", || {
        (checkpoint_entries(&dir, "replication-offset-checkpoint", &topic) == want
            && checkpoint_entries(&dir, "recovery-point-offset-checkpoint", &topic) == want
            && checkpoint_entries(&dir, "log-start-offset-checkpoint", &topic) == starts)
            .then_some(())
    });
    drop(conn);
    let kept = broker.kill_keeping_dir();
    assert_eq!(
        checkpoint_entries(kept.path(), "replication-offset-checkpoint", &topic),
        want,
        "the HW checkpoint after kill -9"
    );
    let broker = Broker::start_in(kept, &overrides);
    let mut conn = Conn::open(&broker);
    assert_eq!(latest_offsets(&mut conn, &topic, 2), vec![5, 4]);
    drop(conn);
    broker.stop();
}
