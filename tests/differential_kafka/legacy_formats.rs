//! The differential checks of magic 0/1 (FORMATS.md, Kafka's
//! `LogValidator` and `LazyDownConversionRecords`): Produce v0/v1 (magic 0)
//! and v2 (magic 1) with good and bad message sets into a fresh topic,
//! then Fetch v0–v3 of the main test's v2 topic `diff` (down-converted)
//! and Fetch v0/v2/v4 of the produced topic (up-converted on append),
//! around the data (an empty read, offsets out of range, a 10-byte
//! partition max), of a conversion that outgrows the declared size, and
//! of a zstd topic before v10. The answers are compared whole (record
//! bytes included: the converted messages, the cut and the overflow
//! padding), throttle times masked. Differences go through
//! `old_apis::KNOWN`.

use bytes::Bytes;
use kafka_protocol_39::messages as m39;
use kafka_protocol_39::protocol::StrBytes as Str39;

use super::common::call39;
use super::{batch, Diffs, Pair};

/// One magic 0 or 1 message: offset, size, CRC32 (IEEE, over magic to the
/// end), magic, attributes (no codec, CreateTime), [timestamp], key, value.
fn message(magic: u8, offset: i64, timestamp: i64, key: Option<&[u8]>, value: &[u8]) -> Vec<u8> {
    let mut body = vec![magic, 0u8];
    if magic == 1 {
        body.extend_from_slice(&timestamp.to_be_bytes());
    }
    match key {
        Some(k) => {
            body.extend_from_slice(&(k.len() as i32).to_be_bytes());
            body.extend_from_slice(k);
        }
        None => body.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
    body.extend_from_slice(value);
    let mut crc = flate2::Crc::new();
    crc.update(&body);
    let mut out = Vec::new();
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc.sum().to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// `n` messages of `magic` (relative offsets 0.., timestamps 2000 + i).
fn message_set(magic: u8, n: usize, tag: &str) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let key = format!("k{i}");
            let value = format!("{tag}-{i}");
            message(
                magic,
                i as i64,
                2000 + i as i64,
                Some(key.as_bytes()),
                value.as_bytes(),
            )
        })
        .collect()
}

fn produce(topic: &str, records: Vec<u8>) -> m39::ProduceRequest {
    use m39::produce_request::{PartitionProduceData, TopicProduceData};
    m39::ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(m39::TopicName(Str39::from_string(topic.to_owned())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(records)))])])
}

fn fetch(topic: &str, offset: i64) -> m39::FetchRequest {
    fetch_at_most(topic, offset, 1 << 20)
}

fn fetch_at_most(topic: &str, offset: i64, partition_max_bytes: i32) -> m39::FetchRequest {
    use m39::fetch_request::{FetchPartition, FetchTopic};
    m39::FetchRequest::default()
        .with_replica_id(m39::BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(m39::TopicName(Str39::from_string(topic.to_owned())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(partition_max_bytes)])])
}

fn call_both<Q, R>(p: &mut Pair, api_key: i16, version: i16, req: &Q) -> (R, R)
where
    Q: kafka_protocol_39::protocol::Encodable,
    R: kafka_protocol_39::protocol::Decodable,
{
    let ours: R = call39(&mut p.shardlog.stream, api_key, version, req);
    let theirs: R = call39(&mut p.kafka.stream, api_key, version, req);
    (ours, theirs)
}

fn check_produce(p: &mut Pair, d: &mut Diffs, name: &str, version: i16, req: &m39::ProduceRequest) {
    let (mut a, mut b): (m39::ProduceResponse, m39::ProduceResponse) =
        call_both(p, 0, version, req);
    a.throttle_time_ms = 0;
    b.throttle_time_ms = 0;
    d.check(name, &a, &b);
}

fn check_fetch(p: &mut Pair, d: &mut Diffs, name: &str, version: i16, topic: &str, offset: i64) {
    check_fetch_request(p, d, name, version, &fetch(topic, offset));
}

fn check_fetch_request(
    p: &mut Pair,
    d: &mut Diffs,
    name: &str,
    version: i16,
    req: &m39::FetchRequest,
) {
    let (mut a, mut b): (m39::FetchResponse, m39::FetchResponse) = call_both(p, 1, version, req);
    a.throttle_time_ms = 0;
    b.throttle_time_ms = 0;
    d.check(name, &a, &b);
}

/// Every check of this module (the main test's `diff` holds v2 data).
pub fn check_legacy_formats(p: &mut Pair, d: &mut Diffs) {
    let topic = "diff-legacy";
    create_on_both(p, topic, &[]);
    // Good message sets: magic 0 by v0 and v1, magic 1 by v2.
    check_produce(
        p,
        d,
        "produce_v0_magic0",
        0,
        &produce(topic, message_set(0, 3, "v0")),
    );
    check_produce(
        p,
        d,
        "produce_v1_magic0",
        1,
        &produce(topic, message_set(0, 2, "v1")),
    );
    check_produce(
        p,
        d,
        "produce_v2_magic1",
        2,
        &produce(topic, message_set(1, 3, "v2")),
    );
    // Bad ones: a CRC that does not match, a value length past the end
    // (its CRC right), and a v2 batch on Produce v2.
    let mut bad_crc = message_set(0, 2, "bad");
    bad_crc[12] ^= 0xff;
    check_produce(p, d, "produce_v0_bad_crc", 0, &produce(topic, bad_crc));
    let mut body = vec![1u8, 0];
    body.extend_from_slice(&3000i64.to_be_bytes());
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.extend_from_slice(&100i32.to_be_bytes());
    body.extend_from_slice(b"short");
    let mut crc = flate2::Crc::new();
    crc.update(&body);
    let mut short = Vec::new();
    short.extend_from_slice(&0i64.to_be_bytes());
    short.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    short.extend_from_slice(&crc.sum().to_be_bytes());
    short.extend_from_slice(&body);
    check_produce(p, d, "produce_v2_value_past_end", 2, &produce(topic, short));
    let v2 = batch(&[(1000, b"x")], (-1, -1), -1).to_vec();
    check_produce(p, d, "produce_v2_with_a_v2_batch", 2, &produce(topic, v2));
    // Down-conversion of the main test's v2 data, and what the produced
    // messages became.
    for version in 0..=3 {
        check_fetch(
            p,
            d,
            &format!("fetch_v{version}_of_v2_data"),
            version,
            "diff",
            0,
        );
    }
    check_fetch(p, d, "fetch_v1_from_offset_1", 1, "diff", 1);
    // What LazyDownConversionRecords sends around the data: an empty read
    // (at the log end, or an error) is one overflow header; a partition
    // max_bytes below the first batch still gets that batch whole.
    let (a, b): (m39::FetchResponse, m39::FetchResponse) = call_both(p, 1, 4, &fetch("diff", 0));
    let end = a.responses[0].partitions[0].high_watermark;
    assert_eq!(
        end, b.responses[0].partitions[0].high_watermark,
        "diff's HW"
    );
    check_fetch(p, d, "fetch_v0_at_the_log_end", 0, "diff", end);
    check_fetch(p, d, "fetch_v1_past_the_log_end", 1, "diff", 1 << 40);
    check_fetch(p, d, "fetch_v2_below_the_log_start", 2, "diff", -5);
    check_fetch_request(
        p,
        d,
        "fetch_v3_of_v2_data_10_bytes_at_most",
        3,
        &fetch_at_most("diff", 0, 10),
    );
    for version in [0, 2, 4] {
        check_fetch(
            p,
            d,
            &format!("fetch_v{version}_of_legacy_produce"),
            version,
            topic,
            0,
        );
    }
    zstd_topic(p, d);
    growing_conversion(p, d);
}

/// v2 batches of many small records grow when converted (a message
/// header per record): the first batch's messages set the declared size,
/// and the stream is cut there, the last message partial.
fn growing_conversion(p: &mut Pair, d: &mut Diffs) {
    let topic = "diff-grow";
    create_on_both(p, topic, &[]);
    let values: Vec<Vec<u8>> = (0..40).map(|i| format!("g{i}").into_bytes()).collect();
    for round in 0..3 {
        let records: Vec<(i64, &[u8])> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (5000 + round * 100 + i as i64, v.as_slice()))
            .collect();
        let v2 = batch(&records, (-1, -1), -1).to_vec();
        check_produce(
            p,
            d,
            &format!("produce_v3_growing_{round}"),
            3,
            &produce(topic, v2),
        );
    }
    for version in [0, 1, 3] {
        check_fetch(
            p,
            d,
            &format!("fetch_v{version}_growing"),
            version,
            topic,
            0,
        );
    }
}

/// A topic whose `compression.type` is zstd: Fetch before v10 answers
/// UNSUPPORTED_COMPRESSION_TYPE (KafkaApis' `maybeConvertFetchedData`),
/// v10 reads it.
fn zstd_topic(p: &mut Pair, d: &mut Diffs) {
    create_on_both(p, "diff-zstd", &[("compression.type", "zstd")]);
    for version in [1, 3, 4, 9, 10] {
        check_fetch(
            p,
            d,
            &format!("fetch_v{version}_of_a_zstd_topic"),
            version,
            "diff-zstd",
            0,
        );
    }
}

/// One single-partition topic with `configs`, created on both brokers.
fn create_on_both(p: &mut Pair, topic: &str, configs: &[(&str, &str)]) {
    use m39::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let configs = configs
        .iter()
        .map(|(k, v)| {
            CreatableTopicConfig::default()
                .with_name(Str39::from_string((*k).to_owned()))
                .with_value(Some(Str39::from_string((*v).to_owned())))
        })
        .collect();
    let req = m39::CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(m39::TopicName(Str39::from_string(topic.to_owned())))
            .with_num_partitions(1)
            .with_replication_factor(1)
            .with_configs(configs)]);
    let (a, b): (m39::CreateTopicsResponse, m39::CreateTopicsResponse) = call_both(p, 19, 2, &req);
    assert_eq!(
        (a.topics[0].error_code, b.topics[0].error_code),
        (0, 0),
        "creating {topic}"
    );
}
