//! The load generator against an in-process mock Kafka broker built from the
//! `kafka-protocol` crate's broker-side codecs (an independent decoder of
//! what loadgen sends). It checks loadgen's client end to end while the
//! shardlog broker's data path is being written: ApiVersions, Metadata,
//! CreateTopics, ListOffsets, InitProducerId, Produce (acks 0/1/all, all
//! codecs), Fetch, plus the sweep outputs.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{decode_request_header_from_buffer, Decodable, Encodable, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;

use common::loadgen::{check_outputs, check_point_verified, run_loadgen};

#[derive(Default)]
struct Log {
    /// (base offset, batch bytes with the base offset patched)
    batches: Vec<(i64, Bytes)>,
    end_offset: i64,
}

#[derive(Default)]
struct State {
    topics: HashMap<String, Vec<Log>>,
    next_producer_id: i64,
    produce_requests: HashMap<i16, u64>,
    /// Answer this many partition appends with NOT_LEADER_OR_FOLLOWER (6).
    fail_appends: u32,
    /// Answer this many partition fetches with NOT_LEADER_OR_FOLLOWER (6).
    fail_fetches: u32,
    /// Next expected sequence per (topic, partition, producer id), as
    /// Kafka's ProducerStateManager checks it.
    sequences: HashMap<(String, i32, i64), i32>,
}

type Shared = Arc<Mutex<State>>;

fn start_mock_broker() -> String {
    start_mock_broker_failing(0, 0)
}

fn start_mock_broker_failing(fail_appends: u32, fail_fetches: u32) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let state: Shared = Arc::new(Mutex::new(State {
        next_producer_id: 1000,
        fail_appends,
        fail_fetches,
        ..State::default()
    }));
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            let state = state.clone();
            let port = addr.port();
            std::thread::spawn(move || serve(s, state, port));
        }
    });
    addr.to_string()
}

fn serve(mut s: TcpStream, state: Shared, port: u16) {
    s.set_nodelay(true).unwrap();
    loop {
        let mut len = [0u8; 4];
        if s.read_exact(&mut len).is_err() {
            return;
        }
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        if s.read_exact(&mut body).is_err() {
            return;
        }
        let mut buf = Bytes::from(body);
        let header = decode_request_header_from_buffer(&mut buf).unwrap();
        let key = ApiKey::try_from(header.request_api_key).unwrap();
        let v = header.request_api_version;
        let mut out = BytesMut::new();
        let respond = handle(key, v, &mut buf, &state, port, &mut out);
        if !respond {
            continue;
        }
        let mut frame = BytesMut::new();
        let mut rh = ResponseHeader::default();
        rh.correlation_id = header.correlation_id;
        rh.encode(&mut frame, key.response_header_version(v))
            .unwrap();
        frame.extend_from_slice(&out);
        let mut whole = (frame.len() as i32).to_be_bytes().to_vec();
        whole.extend_from_slice(&frame);
        if s.write_all(&whole).is_err() {
            return;
        }
    }
}

fn api(key: ApiKey, min: i16, max: i16) -> ApiVersion {
    let mut a = ApiVersion::default();
    a.api_key = key as i16;
    a.min_version = min;
    a.max_version = max;
    a
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Handles one request; returns false when no response is due (acks=0).
#[allow(
    clippy::too_many_lines,
    reason = "one mock broker loop answering every API the loadgen sends"
)]
fn handle(
    key: ApiKey,
    v: i16,
    buf: &mut Bytes,
    state: &Shared,
    port: u16,
    out: &mut BytesMut,
) -> bool {
    match key {
        ApiKey::ApiVersions => {
            let mut r = ApiVersionsResponse::default();
            r.api_keys = vec![
                api(ApiKey::Produce, 3, 9),
                api(ApiKey::Fetch, 4, 12),
                api(ApiKey::ListOffsets, 1, 7),
                api(ApiKey::Metadata, 1, 12),
                api(ApiKey::ApiVersions, 0, 3),
                api(ApiKey::CreateTopics, 2, 7),
                api(ApiKey::InitProducerId, 0, 4),
            ];
            r.encode(out, v).unwrap();
        }
        ApiKey::Metadata => {
            let req = MetadataRequest::decode(buf, v).unwrap();
            let st = state.lock().unwrap();
            let mut r = MetadataResponse::default();
            let mut b = MetadataResponseBroker::default();
            b.node_id = BrokerId(0);
            b.host = StrBytes::from_static_str("127.0.0.1");
            b.port = port as i32;
            r.brokers = vec![b];
            r.controller_id = BrokerId(0);
            for t in req.topics.unwrap_or_default() {
                let n = t.name.unwrap().0.to_string();
                let mut mt = MetadataResponseTopic::default();
                mt.name = Some(name(&n));
                match st.topics.get(&n) {
                    Some(logs) => {
                        mt.partitions = (0..logs.len() as i32)
                            .map(|p| {
                                let mut mp = MetadataResponsePartition::default();
                                mp.partition_index = p;
                                mp.leader_id = BrokerId(0);
                                mp.replica_nodes = vec![BrokerId(0)];
                                mp.isr_nodes = vec![BrokerId(0)];
                                mp
                            })
                            .collect()
                    }
                    None => mt.error_code = 3,
                }
                r.topics.push(mt);
            }
            r.encode(out, v).unwrap();
        }
        ApiKey::CreateTopics => {
            let req = CreateTopicsRequest::decode(buf, v).unwrap();
            let mut st = state.lock().unwrap();
            let mut r = CreateTopicsResponse::default();
            for t in req.topics {
                let n = t.name.0.to_string();
                let mut res = CreatableTopicResult::default();
                res.name = t.name.clone();
                match st.topics.entry(n) {
                    std::collections::hash_map::Entry::Occupied(_) => res.error_code = 36,
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert((0..t.num_partitions).map(|_| Log::default()).collect());
                    }
                }
                r.topics.push(res);
            }
            r.encode(out, v).unwrap();
        }
        ApiKey::ListOffsets => {
            let req = ListOffsetsRequest::decode(buf, v).unwrap();
            let st = state.lock().unwrap();
            let mut r = ListOffsetsResponse::default();
            for t in req.topics {
                let logs = &st.topics[&t.name.0.to_string()];
                let mut rt = ListOffsetsTopicResponse::default();
                rt.name = t.name.clone();
                for p in t.partitions {
                    let mut rp = ListOffsetsPartitionResponse::default();
                    rp.partition_index = p.partition_index;
                    // -1 latest (loadgen), -2 earliest (kcat -o beginning).
                    rp.offset = match p.timestamp {
                        -1 => logs[p.partition_index as usize].end_offset,
                        -2 => 0,
                        t => panic!("mock broker: ListOffsets timestamp {t}"),
                    };
                    rp.timestamp = -1;
                    rt.partitions.push(rp);
                }
                r.topics.push(rt);
            }
            r.encode(out, v).unwrap();
        }
        ApiKey::InitProducerId => {
            let _ = InitProducerIdRequest::decode(buf, v).unwrap();
            let mut st = state.lock().unwrap();
            let mut r = InitProducerIdResponse::default();
            r.producer_id = ProducerId(st.next_producer_id);
            st.next_producer_id += 1;
            r.producer_epoch = 0;
            r.encode(out, v).unwrap();
        }
        ApiKey::Produce => return produce(v, buf, state, out),
        ApiKey::Fetch => fetch(v, buf, state, out),
        other => panic!("mock broker got unexpected {other:?}"),
    }
    true
}

fn produce(v: i16, buf: &mut Bytes, state: &Shared, out: &mut BytesMut) -> bool {
    let req = ProduceRequest::decode(buf, v).unwrap();
    let mut st = state.lock().unwrap();
    *st.produce_requests.entry(req.acks).or_default() += 1;
    let mut r = ProduceResponse::default();
    for t in req.topic_data {
        let mut rt = TopicProduceResponse::default();
        rt.name = t.name.clone();
        for p in t.partition_data {
            let topic = t.name.0.to_string();
            let records = p.records.unwrap();
            // Validates CRC, codec and record layout independently of loadgen.
            // (LZ4 batches are inflated by the broker's reader first:
            // kafka-protocol's LZ4 is the C `lz4` crate, left out.)
            let mut check = common::decodable_region(&records);
            let sets = RecordBatchDecoder::decode_all(&mut check).unwrap();
            assert_eq!(sets.len(), 1, "one batch per partition");
            let n = sets[0].records.len() as i64;
            let first = &sets[0].records[0];
            let mut rp = PartitionProduceResponse::default();
            rp.index = p.index;
            if st.fail_appends > 0 {
                st.fail_appends -= 1;
                rp.error_code = 6;
                rt.partition_responses.push(rp);
                continue;
            }
            if first.producer_id >= 0 {
                let key = (topic.clone(), p.index, first.producer_id);
                let expected = st.sequences.get(&key).copied().unwrap_or(0);
                if first.sequence != expected {
                    // 46 for a batch already written, 45 for a gap.
                    rp.error_code = if first.sequence < expected { 46 } else { 45 };
                    rt.partition_responses.push(rp);
                    continue;
                }
                st.sequences.insert(key, expected + n as i32);
            }
            let log = &mut st.topics.get_mut(&topic).unwrap()[p.index as usize];
            let mut stored = BytesMut::from(&records[..]);
            stored[..8].copy_from_slice(&log.end_offset.to_be_bytes());
            let base = log.end_offset;
            log.batches.push((base, stored.freeze()));
            log.end_offset += n;
            rp.base_offset = base;
            rp.log_append_time_ms = -1;
            rt.partition_responses.push(rp);
        }
        r.responses.push(rt);
    }
    r.encode(out, v).unwrap();
    req.acks != 0
}

fn fetch(v: i16, buf: &mut Bytes, state: &Shared, out: &mut BytesMut) {
    let req = FetchRequest::decode(buf, v).unwrap();
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    loop {
        let mut st = state.lock().unwrap();
        let mut r = FetchResponse::default();
        let mut bytes = 0usize;
        for t in &req.topics {
            let mut rt = FetchableTopicResponse::default();
            rt.topic = t.topic.clone();
            for p in &t.partitions {
                if st.fail_fetches > 0 {
                    st.fail_fetches -= 1;
                    let mut pd = PartitionData::default();
                    pd.partition_index = p.partition;
                    pd.error_code = 6;
                    rt.partitions.push(pd);
                    continue;
                }
                let log = &st.topics[&t.topic.0.to_string()][p.partition as usize];
                let mut data = BytesMut::new();
                for (base, b) in &log.batches {
                    let n = i32::from_be_bytes(b[23..27].try_into().unwrap()) as i64 + 1;
                    if base + n <= p.fetch_offset {
                        continue;
                    }
                    if !data.is_empty() && data.len() + b.len() > p.partition_max_bytes as usize {
                        break;
                    }
                    data.extend_from_slice(b);
                }
                bytes += data.len();
                let mut pd = PartitionData::default();
                pd.partition_index = p.partition;
                pd.high_watermark = log.end_offset;
                pd.last_stable_offset = log.end_offset;
                pd.records = Some(data.freeze());
                rt.partitions.push(pd);
            }
            r.responses.push(rt);
        }
        if bytes > 0 || Instant::now() >= deadline {
            r.encode(out, v).unwrap();
            return;
        }
        drop(st);
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn sweep_over_acks_produces_and_consumes_every_record_in_order() {
    let bootstrap = start_mock_broker();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = run_loadgen(&[
        "--bootstrap",
        &bootstrap,
        "--topic",
        "sweep",
        "--partitions",
        "3",
        "--producers",
        "2",
        "--message-size",
        "200",
        "--messages",
        "3000",
        "--sweep",
        "acks=0,1,all",
        "--sweep",
        "linger.ms=0,5",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.contains("acks=all linger.ms=5"),
        "table on stdout:\n{stdout}"
    );
    let points = check_outputs(&out, &["0", "1", "all"]);
    assert_eq!(points.len(), 6);
    for p in &points {
        check_point_verified(p, 3000);
    }
    let idempotent: Vec<bool> = points.iter().map(|p| p["idempotent"] == true).collect();
    assert_eq!(idempotent, vec![false, false, false, false, true, true]);
}

#[test]
fn keyed_records_and_every_codec_round_trip() {
    let bootstrap = start_mock_broker();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    run_loadgen(&[
        "--bootstrap",
        &bootstrap,
        "--topic",
        "codecs",
        "--partitions",
        "4",
        "--keys",
        "50",
        "--consumers",
        "2",
        "--messages",
        "2000",
        "--acks",
        "1",
        "--sweep",
        "compression.type=none,gzip,snappy,lz4,zstd",
        "--out",
        out.to_str().unwrap(),
    ]);
    let points = check_outputs(&out, &["1"]);
    assert_eq!(points.len(), 5);
    for p in &points {
        check_point_verified(p, 2000);
    }
}

#[test]
fn omb_workload_at_fixed_rate_reports_intended_latency() {
    let bootstrap = start_mock_broker();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let workload = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/omb/1-topic-3-partitions-1kb.yaml"
    );
    run_loadgen(&[
        "--bootstrap",
        &bootstrap,
        "--workload",
        workload,
        "--duration",
        "2s",
        "--warmup",
        "500ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    let points = check_outputs(&out, &["all"]);
    let p = &points[0];
    assert_eq!(p["errors"], 0);
    // 2000 msgs/s x 2 s: records are counted by intended send time on the
    // fixed-rate grid, so the count does not depend on machine speed.
    let measured = p["measured_records"].as_u64().unwrap();
    assert!((3_998..=4_002).contains(&measured), "measured {measured}");
    assert!(p["ack_latency_intended"]["count"].as_u64().unwrap() > 0);
    assert_eq!(p["missing"], 0);
    assert_eq!(p["offset_gaps"], 0);
}

#[test]
fn leader_errors_are_retried_in_sequence_order_without_loss() {
    // The first 5 appends fail with NOT_LEADER_OR_FOLLOWER; with up to 5
    // requests in flight the idempotent producer must refresh metadata,
    // resend in sequence order (later batches see OUT_OF_ORDER_SEQUENCE
    // until the gap is filled) and lose or duplicate nothing. The first 3
    // partition fetches fail the same way: the consumer refreshes leaders.
    let bootstrap = start_mock_broker_failing(5, 3);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    run_loadgen(&[
        "--bootstrap",
        &bootstrap,
        "--topic",
        "retries",
        "--partitions",
        "2",
        "--messages",
        "2000",
        "--acks",
        "all",
        "--linger-ms",
        "0",
        "--batch-size",
        "2048",
        "--set",
        "retry.backoff.ms=5",
        "--out",
        out.to_str().unwrap(),
    ]);
    let points = check_outputs(&out, &["all"]);
    let p = &points[0];
    println!("errors by code: {}", p["errors_by_code"]);
    check_point_verified(p, 2000);
    assert_eq!(p["idempotent"], true);
    assert!(p["retries"].as_u64().unwrap() >= 5, "{p}");
    assert!(
        p["errors_by_code"]["6 NotLeaderOrFollower (retried)"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn all_requests_failing_stops_with_error_codes() {
    let bootstrap = start_mock_broker_failing(u32::MAX, 0);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "loadgen",
            "--bootstrap",
            &bootstrap,
            "--messages",
            "200",
            "--acks",
            "1",
            "--set",
            "retries=0",
        ])
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing could be produced"), "{err}");
    assert!(err.contains("6 NotLeaderOrFollower"), "{err}");
}

#[test]
fn unreachable_broker_stops_with_a_clear_message() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "loadgen",
            "--bootstrap",
            &format!("127.0.0.1:{port}"),
            "--duration",
            "1s",
        ])
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing can be produced"), "{err}");
    assert!(err.contains("no bootstrap server reachable"), "{err}");
}

/// An independent decoder: librdkafka (kcat) reads back what loadgen
/// produced, with every codec, idempotent, through the mock broker.
#[test]
fn produced_batches_are_readable_by_librdkafka() {
    let kcat = std::process::Command::new("kcat").arg("-V").output();
    assert!(
        kcat.is_ok_and(|o| o.status.success()),
        "kcat is required: apt-get install -y kcat"
    );
    let bootstrap = start_mock_broker();
    let dir = tempfile::tempdir().unwrap();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("kcat-{codec}");
        let out = dir.path().join(codec);
        run_loadgen(&[
            "--out",
            out.to_str().unwrap(),
            "--bootstrap",
            &bootstrap,
            "--topic",
            &topic,
            "--partitions",
            "2",
            "--keys",
            "10",
            "--messages",
            "300",
            "--consumers",
            "0",
            "--compression",
            codec,
        ]);
        check_kcat_reads(&bootstrap, &topic, 300);
    }
}

fn check_kcat_reads(bootstrap: &str, topic: &str, expected: usize) {
    let out = std::process::Command::new("kcat")
        .args([
            "-C",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-q",
        ])
        .args(["-f", "%p %o %k %S\\n"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kcat failed on {topic}: {err}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        expected,
        "{topic}: kcat output:\n{text}\n{err}"
    );
    let mut next_offset = [0i64; 2];
    for l in &lines {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 4, "{l}");
        let k: u32 = f[2].trim_start_matches("key-").parse().unwrap();
        assert!(k < 10, "{l}");
        // murmur2 placement, as the Java client would choose.
        let p = shardlog::loadgen::partitioner::partition_for_key(f[2].as_bytes(), 2).unwrap();
        assert_eq!(f[0], p.to_string(), "{l}");
        let offset: i64 = f[1].parse().unwrap();
        assert_eq!(offset, next_offset[p as usize], "contiguous offsets {l}");
        next_offset[p as usize] += 1;
        assert_eq!(f[3], "1024", "value size {l}");
    }
}
