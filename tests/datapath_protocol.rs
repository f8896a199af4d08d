//! Issue 5, data-path protocol behaviour seen on the wire with raw requests
//! (kafka-protocol types): Fetch long poll through the purgatory, the error
//! codes a client can provoke (and that the connection survives them), and
//! ListOffsets by spec and timestamp, the last also through confluent-kafka,
//! and FindCoordinator.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{FetchRequest, ProduceRequest};
use kafka_protocol::records::Compression;

use common::{
    decode_records, encode_batch, error_code, now_ms, run_py_script, Broker, Conn, FetchSpec,
    RawRecord, EARLIEST_TIMESTAMP, FETCH_VERSION, LATEST_TIMESTAMP, MAX_TIMESTAMP,
};

/// A one-record uncompressed batch.
fn one_record(value: &[u8]) -> Bytes {
    encode_batch(&[(None, value, now_ms())], Compression::None)
}

fn latest_offset(conn: &mut Conn, topic: &str) -> i64 {
    let r = conn.list_offset(topic, 0, LATEST_TIMESTAMP);
    assert_eq!(r.error_code, error_code::NONE, "{r:?}");
    r.offset
}

/// Values of every record in partition 0.
fn values(conn: &mut Conn, topic: &str) -> Vec<Bytes> {
    let batches = conn.fetch_to_high_watermark(topic, 0, 0);
    decode_records(&batches)
        .into_iter()
        .map(|r| r.value.expect("value"))
        .collect()
}

// --- long poll (DelayedFetch) ----------------------------------------------
//
// The only timed assertions in these tests, with generous bounds: they
// check that the purgatory parks and wakes fetches, not how fast it does.

#[test]
fn fetch_on_an_idle_partition_answers_empty_after_max_wait_ms() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("idle", 1, &[]);
    let mut spec = FetchSpec::new("idle", 0, 0);
    spec.max_wait_ms = 500;
    spec.min_bytes = 1;
    let started = Instant::now();
    let part = conn.fetch(&spec);
    let waited = started.elapsed();
    assert_eq!(part.error_code, error_code::NONE, "{part:?}");
    assert_eq!(part.high_watermark, 0);
    assert!(
        part.records.as_ref().is_none_or(Bytes::is_empty),
        "{part:?}"
    );
    assert!(
        waited >= Duration::from_millis(400),
        "answered after {waited:?}, max_wait_ms=500"
    );
    assert!(
        waited < Duration::from_secs(5),
        "answered after {waited:?}, max_wait_ms=500"
    );
}

#[test]
fn fetch_waiting_on_an_idle_partition_answers_as_soon_as_a_produce_arrives() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    // Two partitions, so with two shards the wake-up likely crosses shards
    // for one of them (partition owner ≠ the fetching connection's shard).
    conn.create_topic("wakeup", 2, &[]);
    for partition in 0..2 {
        let mut spec = FetchSpec::new("wakeup", partition, 0);
        // Far longer than the produce takes: an answer before it expires
        // can only come from the produce waking the fetch.
        spec.max_wait_ms = 10_000;
        let correlation_id = conn.send(FETCH_VERSION, &spec.request());
        // Give the fetch time to park (ordering, not a measurement: if it
        // has not parked yet it answers with the data just the same).
        std::thread::sleep(Duration::from_millis(300));
        let producer = std::thread::spawn({
            let mut producer = Conn::open(&broker);
            move || {
                let sent = Instant::now();
                let resp = producer.produce("wakeup", partition, one_record(b"wake up"), -1);
                (sent, resp)
            }
        });
        let part = conn.recv_fetch(correlation_id, &spec);
        let answered = Instant::now();
        let (sent, resp) = producer.join().expect("producer thread");
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        assert_eq!(part.error_code, error_code::NONE, "{part:?}");
        let batches = common::whole_batches(part.records.as_ref());
        let got: Vec<_> = decode_records(&batches)
            .into_iter()
            .map(|r| r.value)
            .collect();
        assert_eq!(
            got,
            vec![Some(Bytes::from_static(b"wake up"))],
            "partition {partition}"
        );
        let after_produce = answered.saturating_duration_since(sent);
        assert!(
            after_produce < Duration::from_millis(400),
            "partition {partition}: fetch answered {after_produce:?} after the produce was sent"
        );
    }
}

// --- errors a client can provoke ---------------------------------------------

/// A batch bigger than the limit is refused whole, whether the limit comes
/// from the broker (`message.max.bytes`) or the topic (`max.message.bytes`):
/// MESSAGE_TOO_LARGE; records larger than the topic's `segment.bytes`:
/// RECORD_LIST_TOO_LARGE (Kafka's `UnifiedLog.append`).
#[test]
fn oversize_batch_gets_message_too_large_and_nothing_is_appended() {
    type TopicConfigs<'a> = &'a [(&'a str, &'a str)];
    // (broker overrides, topic configs, error)
    let cases: [(&[&str], TopicConfigs, i16); 3] = [
        (
            &["message.max.bytes=4096"],
            &[],
            error_code::MESSAGE_TOO_LARGE,
        ),
        (
            &[],
            &[("max.message.bytes", "4096")],
            error_code::MESSAGE_TOO_LARGE,
        ),
        (
            &[],
            &[("segment.bytes", "4096")],
            error_code::RECORD_LIST_TOO_LARGE,
        ),
    ];
    for (overrides, topic_configs, error) in cases {
        let case = format!("overrides {overrides:?}, topic configs {topic_configs:?}");
        let broker = Broker::start_with(overrides);
        let mut conn = Conn::open(&broker);
        conn.create_topic("limits", 1, topic_configs);
        let ok = conn.produce("limits", 0, one_record(b"small"), -1);
        assert_eq!(
            (ok.error_code, ok.base_offset),
            (error_code::NONE, 0),
            "{case}: {ok:?}"
        );

        let big = one_record(&[b'x'; 8192]);
        let refused = conn.produce("limits", 0, big, -1);
        assert_eq!(refused.error_code, error, "{case}: {refused:?}");

        // Same connection: nothing appended, and appends still work.
        assert_eq!(latest_offset(&mut conn, "limits"), 1, "{case}");
        assert_eq!(
            values(&mut conn, "limits"),
            vec![Bytes::from_static(b"small")],
            "{case}"
        );
        let next = conn.produce("limits", 0, one_record(b"after"), -1);
        assert_eq!(
            (next.error_code, next.base_offset),
            (error_code::NONE, 1),
            "{case}: {next:?}"
        );
    }
}

#[test]
fn batch_with_a_broken_crc_gets_corrupt_message_and_nothing_is_appended() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("crc", 1, &[]);
    let ok = conn.produce("crc", 0, one_record(b"good"), -1);
    assert_eq!(
        (ok.error_code, ok.base_offset),
        (error_code::NONE, 0),
        "{ok:?}"
    );

    // Flip a bit in the last byte: inside the record's value, covered by
    // the CRC32C, so only the checksum is wrong.
    let mut corrupt = one_record(b"this batch is damaged in transit").to_vec();
    *corrupt.last_mut().unwrap() ^= 0x01;
    let refused = conn.produce("crc", 0, Bytes::from(corrupt), -1);
    assert_eq!(
        refused.error_code,
        error_code::CORRUPT_MESSAGE,
        "{refused:?}"
    );

    assert_eq!(latest_offset(&mut conn, "crc"), 1);
    assert_eq!(values(&mut conn, "crc"), vec![Bytes::from_static(b"good")]);
    let next = conn.produce("crc", 0, one_record(b"after"), -1);
    assert_eq!(
        (next.error_code, next.base_offset),
        (error_code::NONE, 1),
        "{next:?}"
    );
}

#[test]
fn fetch_past_the_log_end_gets_offset_out_of_range() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("range", 1, &[]);
    let batch = encode_batch(
        &[
            (None, b"a", now_ms()),
            (None, b"b", now_ms()),
            (None, b"c", now_ms()),
        ],
        Compression::None,
    );
    let ok = conn.produce("range", 0, batch, -1);
    assert_eq!(ok.error_code, error_code::NONE, "{ok:?}");

    // (fetch offset, expected error): the log end itself is a valid
    // position with nothing to read yet (Kafka's rule); beyond it, or
    // negative, is out of range.
    let cases = [
        (3, error_code::NONE),
        (4, error_code::OFFSET_OUT_OF_RANGE),
        (1_000_000, error_code::OFFSET_OUT_OF_RANGE),
        (-5, error_code::OFFSET_OUT_OF_RANGE),
    ];
    for (offset, expected) in cases {
        let mut spec = FetchSpec::new("range", 0, offset);
        spec.max_wait_ms = 0;
        let part = conn.fetch(&spec);
        assert_eq!(part.error_code, expected, "fetch at {offset}: {part:?}");
        assert!(
            part.records.as_ref().is_none_or(Bytes::is_empty),
            "fetch at {offset}: {part:?}"
        );
    }
    // Same connection still serves.
    let got = values(&mut conn, "range");
    assert_eq!(
        got,
        [&b"a"[..], b"b", b"c"].map(Bytes::from_static).to_vec()
    );
}

/// Several bad requests in a row on one connection, then good ones: the
/// connection stays open and answers in order.
#[test]
fn connection_keeps_serving_after_every_kind_of_refused_request() {
    let broker = Broker::start_with(&["message.max.bytes=4096"]);
    let mut conn = Conn::open(&broker);
    conn.create_topic("mixed", 1, &[]);
    let mut corrupt = one_record(b"damaged").to_vec();
    *corrupt.last_mut().unwrap() ^= 0x80;
    let refused = [
        conn.produce("mixed", 0, one_record(&[0u8; 8192]), -1)
            .error_code,
        conn.produce("mixed", 0, Bytes::from(corrupt), -1)
            .error_code,
        {
            let mut spec = FetchSpec::new("mixed", 0, 7);
            spec.max_wait_ms = 0;
            conn.fetch(&spec).error_code
        },
    ];
    assert_eq!(
        refused,
        [
            error_code::MESSAGE_TOO_LARGE,
            error_code::CORRUPT_MESSAGE,
            error_code::OFFSET_OUT_OF_RANGE
        ]
    );
    let ok = conn.produce("mixed", 0, one_record(b"fine"), -1);
    assert_eq!(
        (ok.error_code, ok.base_offset),
        (error_code::NONE, 0),
        "{ok:?}"
    );
    // Pipelined: two fetches in flight, answered in request order.
    let spec = FetchSpec::new("mixed", 0, 0);
    let first = conn.send(FETCH_VERSION, &spec.request());
    let second = conn.send(FETCH_VERSION, &spec.request());
    for id in [first, second] {
        let resp = conn.recv::<FetchRequest>(FETCH_VERSION, id);
        assert_eq!(resp.responses[0].partitions[0].error_code, error_code::NONE);
    }
}

// --- ordering -----------------------------------------------------------------

/// Kafka keeps per-partition order for requests pipelined on one connection
/// (librdkafka has up to 1M in flight without idempotence): request i's
/// batch must land before request i+1's, whichever shard owns the partition.
/// Several connections do this at once, since the reordering seen with
/// confluent-kafka needed a busy broker to show.
#[test]
fn pipelined_produce_requests_on_one_connection_append_in_request_order() {
    const CONNECTIONS: usize = 6;
    let broker = Broker::start();
    let topics: Vec<String> = (0..CONNECTIONS).map(|c| format!("pipelined-{c}")).collect();
    let mut conn = Conn::open(&broker);
    for topic in &topics {
        conn.create_topic(topic, PIPELINE_PARTITIONS, &[]);
    }
    std::thread::scope(|scope| {
        for topic in &topics {
            let mut conn = Conn::open(&broker);
            scope.spawn(move || pipeline_produce_and_check_order(&mut conn, topic));
        }
    });
}

/// `shardlog.flush.every.append`: pipelined appends are group-committed
/// (one fdatasync covers the appends that queued behind the previous one),
/// yet each is acknowledged in request order and only once synced.
#[test]
fn durable_pipelined_produce_requests_are_group_committed_in_request_order() {
    let broker = Broker::start_with(&["shardlog.flush.every.append=true"]);
    let mut conn = Conn::open(&broker);
    conn.create_topic("durable-pipelined", PIPELINE_PARTITIONS, &[]);
    pipeline_produce_and_check_order(&mut conn, "durable-pipelined");
    let (status, lines) = broker.stop_collect();
    assert!(status.success(), "{status:?}");
    let line = lines
        .iter()
        .find_map(|l| l.strip_prefix("durable: "))
        .unwrap_or_else(|| panic!("no `durable:` line at shutdown: {lines:?}"));
    let count = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {line}"))
    };
    let (appends, syncs) = (count("appends="), count("syncs="));
    assert_eq!(appends, PIPELINE_REQUESTS as u64, "{line}");
    assert!(
        (1..appends).contains(&syncs),
        "every append synced on its own: {line}"
    );
}

/// Pipelined requests that carry several partitions each, to new topics
/// (Java's producer sends one request per broker with a batch for every
/// ready partition): request i's batch must land before request i+1's on
/// every partition, although request i appends its partitions one after
/// another on the owner and a new log's first append waits for I/O (its
/// segment file is opened for DMA then). Request i carries partitions
/// `i % P ..P`, so a later request often starts on a partition an earlier
/// one has not reached yet: the case that reordered the Java client's
/// batches when a request's place on a partition was taken only once its
/// appends to the partitions before it had finished.
#[test]
fn pipelined_multi_partition_produce_requests_append_in_request_order_on_new_topics() {
    const TOPICS: usize = 4;
    const PARTITIONS: i32 = 8;
    const REQUESTS: usize = 48;
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    let topics: Vec<String> = (0..TOPICS)
        .map(|t| common::unique_topic(&format!("multi-pipelined-{t}")))
        .collect();
    for topic in &topics {
        conn.create_topic(topic, PARTITIONS, &[]);
    }
    for topic in &topics {
        // request index → the partitions it carries.
        let carried = |i: usize| (i % PARTITIONS as usize) as i32..PARTITIONS;
        let requests: Vec<ProduceRequest> = (0..REQUESTS)
            .map(|i| {
                use kafka_protocol::messages::produce_request::{
                    PartitionProduceData, TopicProduceData,
                };
                let parts = carried(i)
                    .map(|p| {
                        let value = format!("{i:08}");
                        let batch =
                            encode_batch(&[(None, value.as_bytes(), now_ms())], Compression::None);
                        PartitionProduceData::default()
                            .with_index(p)
                            .with_records(Some(batch))
                    })
                    .collect();
                ProduceRequest::default()
                    .with_acks(1)
                    .with_timeout_ms(30_000)
                    .with_topic_data(vec![TopicProduceData::default()
                        .with_name(common::topic_name(topic))
                        .with_partition_data(parts)])
            })
            .collect();
        // Encoded first, written in one go: the broker reads them together.
        let mut frames = Vec::new();
        let mut ids = Vec::new();
        for (i, req) in requests.iter().enumerate() {
            let id = i32::try_from(1000 + i).unwrap();
            frames.extend(common::request_frame(
                kafka_protocol::messages::ApiKey::Produce,
                common::PRODUCE_VERSION,
                id,
                req,
            ));
            ids.push(id);
        }
        std::io::Write::write_all(&mut conn.stream, &frames).unwrap();
        let mut next = [0i64; PARTITIONS as usize];
        let mut misplaced = Vec::new();
        for (i, id) in ids.into_iter().enumerate() {
            let resp = conn.recv::<ProduceRequest>(common::PRODUCE_VERSION, id);
            for part in &resp.responses[0].partition_responses {
                assert_eq!(
                    part.error_code,
                    error_code::NONE,
                    "{topic} request {i}: {part:?}"
                );
                let p = part.index as usize;
                if part.base_offset != next[p] {
                    misplaced.push((i, part.index, part.base_offset, next[p]));
                }
                next[p] += 1;
            }
        }
        assert!(
            misplaced.is_empty(),
            "{topic}: (request, partition, base offset, expected) out of request order: {misplaced:?}"
        );
        for p in 0..PARTITIONS {
            let batches = conn.fetch_to_high_watermark(topic, p, 0);
            let stored: Vec<usize> = decode_records(&batches)
                .iter()
                .map(|r| {
                    let v = r.value.as_ref().expect("value");
                    std::str::from_utf8(v).unwrap().parse().unwrap()
                })
                .collect();
            let sent: Vec<usize> = (0..REQUESTS).filter(|&i| carried(i).contains(&p)).collect();
            assert_eq!(
                stored, sent,
                "{topic} partition {p}: log order differs from request order"
            );
        }
    }
    broker.stop();
}

const PIPELINE_REQUESTS: usize = 120;
const PIPELINE_RECORDS: usize = 200;
const PIPELINE_PARTITIONS: i32 = 4;

/// Send every produce request before reading any response, round-robin over
/// the partitions; then check base offsets and the log's record order.
fn pipeline_produce_and_check_order(conn: &mut Conn, topic: &str) {
    let filler = [b'p'; 1000];
    // Build every request first, then send them back to back: built one
    // by one between sends (a debug build, other tests on the cores) they
    // reached the broker so far apart that each fdatasync ended before the
    // next append came, and the group-commit test saw no grouping.
    let mut requests = Vec::with_capacity(PIPELINE_REQUESTS);
    for i in 0..PIPELINE_REQUESTS {
        let partition = (i % PIPELINE_PARTITIONS as usize) as i32;
        let values: Vec<Vec<u8>> = (0..PIPELINE_RECORDS)
            .map(|r| {
                [
                    format!("{:08}:", i * PIPELINE_RECORDS + r).as_bytes(),
                    &filler,
                ]
                .concat()
            })
            .collect();
        let records: Vec<RawRecord> = values
            .iter()
            .map(|v| (None, v.as_slice(), now_ms()))
            .collect();
        let req = produce_request(topic, partition, encode_batch(&records, Compression::None));
        requests.push((partition, req));
    }
    let sent: Vec<_> = requests
        .iter()
        .map(|(partition, req)| (*partition, conn.send(common::PRODUCE_VERSION, req)))
        .collect();
    let mut next_base = [0i64; PIPELINE_PARTITIONS as usize];
    for (i, (partition, id)) in sent.into_iter().enumerate() {
        let resp = conn.recv::<ProduceRequest>(common::PRODUCE_VERSION, id);
        let part = &resp.responses[0].partition_responses[0];
        assert_eq!(
            part.error_code,
            error_code::NONE,
            "{topic} request {i}: {part:?}"
        );
        assert_eq!(
            part.base_offset, next_base[partition as usize],
            "{topic} request {i} (partition {partition}) appended out of order"
        );
        next_base[partition as usize] += PIPELINE_RECORDS as i64;
    }
    for partition in 0..PIPELINE_PARTITIONS {
        let batches = conn.fetch_to_high_watermark(topic, partition, 0);
        let seqs: Vec<usize> = decode_records(&batches)
            .iter()
            .map(|r| {
                let v = r.value.as_ref().expect("value");
                std::str::from_utf8(&v[..8]).unwrap().parse().unwrap()
            })
            .collect();
        let expected: Vec<usize> = (0..PIPELINE_REQUESTS)
            .filter(|i| i % PIPELINE_PARTITIONS as usize == partition as usize)
            .flat_map(|i| i * PIPELINE_RECORDS..(i + 1) * PIPELINE_RECORDS)
            .collect();
        assert!(
            seqs == expected,
            "{topic} partition {partition}: log order differs from request order"
        );
    }
}

fn produce_request(topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(common::topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])])
}

// --- ListOffsets -------------------------------------------------------------

/// Three batches with out-of-order timestamps; offsets 0..8.
/// `(offset, timestamp delta from t0)`; the maximum (t0+90) is offset 4,
/// in the middle of the second batch.
const TIMED_BATCHES: [&[(i64, i64)]; 3] = [
    &[(0, 0), (1, 10), (2, 20)],
    &[(3, 30), (4, 90), (5, 40)],
    &[(6, 50), (7, 60)],
];

fn produce_timed_batches(conn: &mut Conn, topic: &str, t0: i64) {
    for batch in TIMED_BATCHES {
        let values: Vec<String> = batch.iter().map(|(o, _)| format!("offset {o}")).collect();
        let records: Vec<RawRecord> = batch
            .iter()
            .zip(&values)
            .map(|((_, dt), v)| (None, v.as_bytes(), t0 + dt))
            .collect();
        let resp = conn.produce(topic, 0, encode_batch(&records, Compression::None), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        assert_eq!(resp.base_offset, batch[0].0);
    }
}

/// Target timestamp delta → (offset, timestamp delta) Kafka answers: the
/// first record in offset order whose timestamp is ≥ the target.
const BY_TIMESTAMP: [(i64, Option<(i64, i64)>); 7] = [
    (-1000, Some((0, 0))),
    (0, Some((0, 0))),
    (5, Some((1, 10))),
    (25, Some((3, 30))),
    (31, Some((4, 90))),
    (90, Some((4, 90))),
    (91, None),
];

#[test]
fn list_offsets_answers_earliest_latest_max_timestamp_and_by_timestamp() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("times", 1, &[]);
    // An hour ago: inside any timestamp-validation window.
    let t0 = now_ms() - 3_600_000;
    produce_timed_batches(&mut conn, "times", t0);

    let mut spec = |ts| {
        let r = conn.list_offset("times", 0, ts);
        assert_eq!(r.error_code, error_code::NONE, "ListOffsets {ts}: {r:?}");
        (r.offset, r.timestamp)
    };
    assert_eq!(spec(EARLIEST_TIMESTAMP), (0, -1), "earliest");
    assert_eq!(spec(LATEST_TIMESTAMP), (8, -1), "latest");
    assert_eq!(spec(MAX_TIMESTAMP), (4, t0 + 90), "max timestamp (KIP-734)");
    for (dt, expected) in BY_TIMESTAMP {
        let expected = expected.map_or((-1, -1), |(o, t)| (o, t0 + t));
        assert_eq!(spec(t0 + dt), expected, "timestamp t0{dt:+}");
    }
}

#[test]
fn confluent_kafka_sees_the_same_watermarks_and_offsets_for_times() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("times-ck", 1, &[]);
    let t0 = now_ms() - 3_600_000;
    produce_timed_batches(&mut conn, "times-ck", t0);

    let mut args = vec![broker.bootstrap(), "times-ck".into(), "0".into()];
    args.extend(BY_TIMESTAMP.iter().map(|(dt, _)| (t0 + dt).to_string()));
    let report = run_py_script(&["confluent_kafka"], "confluent_offsets.py", &args);
    assert_eq!(report["watermarks"], serde_json::json!([0, 8]), "{report}");
    assert_eq!(
        report["offsets_for_times_errors"],
        serde_json::json!([]),
        "{report}"
    );
    let listed = &report["list_offsets"];
    assert_eq!(listed["earliest"][0], 0, "{report}");
    assert_eq!(listed["latest"][0], 8, "{report}");
    assert_eq!(
        listed["max_timestamp"],
        serde_json::json!([4, t0 + 90]),
        "{report}"
    );
    for (dt, expected) in BY_TIMESTAMP {
        let ts = (t0 + dt).to_string();
        // librdkafka reports "no such offset" as OFFSET_END (-1).
        let offset = expected.map_or(-1, |(o, _)| o);
        assert_eq!(
            report["offsets_for_times"][&ts], offset,
            "offsets_for_times t0{dt:+}: {report}"
        );
        assert_eq!(
            listed[format!("ts:{ts}")][0],
            offset,
            "list_offsets t0{dt:+}: {report}"
        );
    }
}

// --- FindCoordinator -----------------------------------------------------------

/// Error codes FindCoordinator answers with.
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const INVALID_REQUEST: i16 = 42;

/// A partition Metadata shows with a leader is already open on its owner:
/// the control shard publishes in two phases (owners open their logs, then
/// every shard shows the snapshot). A shard used to show a new snapshot
/// before opening its partitions; `shardlog loadgen` on a loaded host once
/// got UNKNOWN_TOPIC_OR_PARTITION from its first ListOffsets. The window is
/// timing-dependent, so this test polls as hard as a client can and checks
/// every partition of ten fresh topics.
#[test]
fn a_partition_metadata_shows_is_open_on_its_owner_at_once() {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::MetadataRequest;
    let broker = Broker::start_with(&["auto.create.topics.enable=true", "num.partitions=8"]);
    let mut conn = Conn::open(&broker);
    for round in 0..10 {
        let topic = format!("fresh-{round}");
        let req = MetadataRequest::default()
            .with_allow_auto_topic_creation(true)
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(common::topic_name(&topic)))
            ]));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let md = conn.call(common::METADATA_VERSION, &req);
            let t = &md.topics[0];
            if t.error_code == 0
                && t.partitions.len() == 8
                && t.partitions.iter().all(|p| p.leader_id.0 >= 0)
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{topic} never got leaders: {md:?}"
            );
            // Poll as fast as a client would: no pause, so the test looks
            // right into the window between creation and open logs.
        }
        for partition in 0..8 {
            let r = conn.list_offset(&topic, partition, LATEST_TIMESTAMP);
            assert_eq!(r.error_code, error_code::NONE, "{topic}-{partition}: {r:?}");
            assert_eq!(r.offset, 0, "{topic}-{partition}: {r:?}");
        }
    }
}

/// Every version Kafka 3.9 lists (0–6), group and transaction keys and an
/// unknown key type: the single broker coordinates every group and every
/// transactional id, and unknown key types are invalid. v4+
/// answers each batched key. A share group (key type 2) is invalid below
/// v6 and has no coordinator at v6, as Kafka 3.9 without share groups.
#[test]
fn find_coordinator_names_this_broker_for_groups_and_transactions_at_every_version() {
    use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest};
    use kafka_protocol::protocol::StrBytes;

    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    let me = (
        BrokerId(broker.broker_id),
        broker.host.clone(),
        i32::from(broker.port),
    );
    let no_node = (BrokerId(-1), String::new(), -1);
    // (key type, expected error, expected node); v0 only knows groups.
    let cases = [
        (0i8, error_code::NONE, me.clone()),
        // Transactions: `__transaction_state` is created (the sample
        // config's replication factor 1) and this broker leads it.
        (1, error_code::NONE, me.clone()),
        (5, INVALID_REQUEST, no_node.clone()),
    ];
    for version in 0..=3i16 {
        for (key_type, error, node) in &cases {
            if version == 0 && *key_type != 0 {
                continue;
            }
            let req = FindCoordinatorRequest::default()
                .with_key(StrBytes::from_static_str("my-group"))
                .with_key_type(*key_type);
            let r = conn.call(version, &req);
            let got = (r.node_id, r.host.to_string(), r.port);
            assert_eq!(
                (r.error_code, &got),
                (*error, node),
                "v{version} key type {key_type}"
            );
        }
    }
    let keys = ["g1", "g2", "console-consumer-1"].map(StrBytes::from_static_str);
    for version in 4..=6i16 {
        let share = if version >= 6 {
            COORDINATOR_NOT_AVAILABLE
        } else {
            INVALID_REQUEST
        };
        let mut batched = cases.to_vec();
        batched.push((2, share, no_node.clone()));
        for (key_type, error, node) in &batched {
            let req = FindCoordinatorRequest::default()
                .with_key_type(*key_type)
                .with_coordinator_keys(keys.to_vec());
            let r = conn.call(version, &req);
            let answered: Vec<String> = r.coordinators.iter().map(|c| c.key.to_string()).collect();
            assert_eq!(
                answered,
                ["g1", "g2", "console-consumer-1"],
                "key type {key_type}"
            );
            for c in &r.coordinators {
                let got = (c.node_id, c.host.to_string(), c.port);
                assert_eq!(
                    (c.error_code, &got),
                    (*error, node),
                    "v{version} key type {key_type}"
                );
            }
        }
    }
    // A group lookup created the offsets topic (Kafka's
    // getOrCreateInternalTopic), with the broker's offsets.topic.* specs.
    let md = conn.metadata(Some(&["__consumer_offsets"]));
    let t = &md.topics[0];
    assert_eq!(t.error_code, error_code::NONE, "{t:?}");
    assert!(t.is_internal, "{t:?}");
    assert_eq!(t.partitions.len(), 50, "offsets.topic.num.partitions");
}

// --- stored batches whose records are hostile --------------------------------
//
// Produce checks a batch's header and CRC, not its records (as the broker
// never decodes them on the data path). ListOffsets by timestamp reads
// records back: these batches must cost it neither the broker's memory nor
// a wrong answer.

/// A v2 batch at base offset 0 with a valid CRC around `body`.
fn raw_batch(codec: i16, record_count: i32, timestamp: i64, body: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(61 + body.len());
    b.extend_from_slice(&0i64.to_be_bytes()); // baseOffset
    b.extend_from_slice(&((49 + body.len()) as i32).to_be_bytes()); // batchLength
    b.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
    b.push(2); // magic
    b.extend_from_slice(&[0; 4]); // crc, below
    b.extend_from_slice(&codec.to_be_bytes()); // attributes
    b.extend_from_slice(&(record_count - 1).to_be_bytes()); // lastOffsetDelta
    b.extend_from_slice(&timestamp.to_be_bytes()); // baseTimestamp
    b.extend_from_slice(&timestamp.to_be_bytes()); // maxTimestamp
    b.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    b.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    b.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    b.extend_from_slice(&record_count.to_be_bytes());
    b.extend_from_slice(body);
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(b)
}

#[test]
fn list_offsets_by_timestamp_reads_a_record_claiming_2_billion_headers() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("headers", 1, &[]);
    let ts = now_ms() - 60_000;
    // One record: attributes, timestampDelta 0, offsetDelta 0, null key,
    // value "abcd", then a header count of 2^31-1 (zig-zag varint) and no
    // headers. A decoder that sizes a map from that count reserves ~36 GiB.
    let mut record = vec![0u8, 0, 0, 1, 8];
    record.extend_from_slice(b"abcd");
    record.extend_from_slice(&[0xfe, 0xff, 0xff, 0xff, 0x0f]);
    let mut body = vec![(record.len() as u8) << 1];
    body.extend_from_slice(&record);
    let r = conn.produce("headers", 0, raw_batch(0, 1, ts, &body), 1);
    assert_eq!(r.error_code, error_code::NONE, "{r:?}");

    let hit = conn.list_offset("headers", 0, ts - 1);
    assert_eq!(hit.error_code, error_code::NONE, "{hit:?}");
    assert_eq!((hit.offset, hit.timestamp), (0, ts));
    let max = conn.list_offset("headers", 0, MAX_TIMESTAMP);
    assert_eq!(
        (max.error_code, max.offset),
        (error_code::NONE, 0),
        "{max:?}"
    );
}

/// A small zstd body that inflates to 320 MiB of 8-byte records. A search
/// by timestamp stops at the first record that matches; the max-timestamp
/// lookup (KIP-734), which must see every record, is refused after the
/// lookup's limit (CORRUPT_MESSAGE for that partition), with the broker
/// alive and the connection serving. Inflated whole, the body would take
/// the broker's memory.
#[test]
fn list_offsets_by_timestamp_refuses_a_batch_inflating_past_its_limit() {
    use std::io::Write;
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    // The MAX_TIMESTAMP walk inflates up to its limit (hundreds of MB in a
    // debug build, ~30 s on a loaded 2-core host): a wider guard than the
    // default 30 s read timeout, not a speed check.
    conn.stream
        .set_read_timeout(Some(std::time::Duration::from_secs(180)))
        .unwrap();
    conn.create_topic("bomb", 1, &[]);
    let ts = now_ms() - 60_000;
    // length 7, attributes, timestampDelta 0, offsetDelta 0, null key,
    // null value, no headers.
    let record = [14u8, 0, 0, 0, 1, 1, 0, 0];
    let chunk: Vec<u8> = record.iter().copied().cycle().take(1 << 16).collect();
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).expect("zstd encoder");
    for _ in 0..(320 << 20) / chunk.len() {
        enc.write_all(&chunk).expect("compress");
    }
    let body = enc.finish().expect("zstd finish");
    assert!(
        body.len() < 1 << 20,
        "bomb compressed to {} bytes",
        body.len()
    );
    let r = conn.produce("bomb", 0, raw_batch(4, i32::MAX, ts, &body), 1);
    assert_eq!(r.error_code, error_code::NONE, "{r:?}");

    let first = conn.list_offset("bomb", 0, ts - 1);
    assert_eq!(
        (first.error_code, first.offset),
        (error_code::NONE, 0),
        "{first:?}"
    );
    let refused = conn.list_offset("bomb", 0, MAX_TIMESTAMP);
    assert_eq!(
        refused.error_code,
        error_code::CORRUPT_MESSAGE,
        "{refused:?}"
    );
    let latest = conn.list_offset("bomb", 0, LATEST_TIMESTAMP);
    assert_eq!(
        (latest.error_code, latest.offset),
        (error_code::NONE, i64::from(i32::MAX)),
        "{latest:?}"
    );
    let mut broker = broker;
    assert!(broker.is_running(), "the broker must survive the lookup");
}
