//! Helpers for the idempotent-producer tests: idempotent record batches
//! built with kafka-protocol's encoder, raw InitProducerId / CreateTopics /
//! Produce / ListOffsets exchanges, and a `kill -9` that keeps the log dir.
#![allow(dead_code)]

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use kafka_protocol::messages::create_topics_response::CreateTopicsResponse;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use kafka_protocol::messages::list_offsets_response::ListOffsetsResponse;
use kafka_protocol::messages::produce_request::{
    PartitionProduceData, ProduceRequest, TopicProduceData,
};
use kafka_protocol::messages::produce_response::ProduceResponse;
use kafka_protocol::messages::{ApiKey, BrokerId, ProducerId, ResponseHeader, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::common::{request_frame, round_trip, Broker};

/// One v2 batch of `count` records from an idempotent producer, sequence
/// numbers `first_seq..first_seq + count`, values tagged with `tag`.
pub fn idempotent_batch(
    producer_id: i64,
    epoch: i16,
    first_seq: i32,
    count: i32,
    value_bytes: usize,
    tag: &str,
) -> Bytes {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let records: Vec<Record> = (0..count)
        .map(|i| {
            let mut value = format!("{tag}-{}", first_seq + i).into_bytes();
            value.resize(value_bytes.max(value.len()), b'.');
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id,
                producer_epoch: epoch,
                timestamp_type: TimestampType::Creation,
                offset: i64::from(i),
                sequence: first_seq + i,
                timestamp: now,
                key: None,
                value: Some(Bytes::from(value)),
                headers: Default::default(),
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &opts).expect("encode batch");
    buf.freeze()
}

/// One request, one response, decoded.
pub fn exchange<T: Encodable, R: Decodable>(
    broker: &Broker,
    api_key: ApiKey,
    version: i16,
    body: &T,
) -> R {
    let mut stream = broker.connect();
    let mut resp = round_trip(&mut stream, &request_frame(api_key, version, 11, body));
    let header = ResponseHeader::decode(&mut resp, api_key.response_header_version(version))
        .expect("response header");
    assert_eq!(header.correlation_id, 11);
    R::decode(&mut resp, version).expect("response body")
}

/// InitProducerId v4 without a transactional id: (producer id, epoch).
pub fn init_producer_id(broker: &Broker, producer_id: i64, epoch: i16) -> (i64, i16) {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = None;
    req.transaction_timeout_ms = 60_000;
    req.producer_id = ProducerId(producer_id);
    req.producer_epoch = epoch;
    let resp: InitProducerIdResponse = exchange(broker, ApiKey::InitProducerId, 4, &req);
    assert_eq!(resp.error_code, 0, "InitProducerId: {resp:?}");
    (resp.producer_id.0, resp.producer_epoch)
}

/// CreateTopics v7 with topic configs; asserts success.
pub fn create_topic(broker: &Broker, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    let topic = CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_string(name.into())))
        .with_num_partitions(partitions)
        .with_replication_factor(1)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_string((*k).into()))
                        .with_value(Some(StrBytes::from_string((*v).into())))
                })
                .collect(),
        );
    let req = CreateTopicsRequest::default()
        .with_topics(vec![topic])
        .with_timeout_ms(20_000);
    let resp: CreateTopicsResponse = exchange(broker, ApiKey::CreateTopics, 7, &req);
    assert_eq!(resp.topics[0].error_code, 0, "CreateTopics: {resp:?}");
}

/// Produce v9 (acks=all) of one batch to `topic`-`partition`:
/// (error code, base offset).
pub fn produce(broker: &Broker, topic: &str, partition: i32, batch: &Bytes) -> (i16, i64) {
    let data = TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_string(topic.into())))
        .with_partition_data(vec![PartitionProduceData::default()
            .with_index(partition)
            .with_records(Some(batch.clone()))]);
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(20_000)
        .with_topic_data(vec![data]);
    let resp: ProduceResponse = exchange(broker, ApiKey::Produce, 9, &req);
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// ListOffsets v5, latest: the high watermark (= LEO on one replica).
pub fn latest_offset(broker: &Broker, topic: &str, partition: i32) -> i64 {
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.into())))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_current_leader_epoch(-1)
                .with_timestamp(-1)])]);
    let resp: ListOffsetsResponse = exchange(broker, ApiKey::ListOffsets, 5, &req);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "ListOffsets: {resp:?}");
    p.offset
}

/// SIGKILL the broker (no shutdown path runs) and keep its log dir.
pub fn kill_keeping_dir(broker: Broker) -> tempfile::TempDir {
    broker.kill_keeping_dir()
}

/// Offsets of the `<offset>.snapshot` files in a partition dir.
pub fn snapshot_offsets(partition_dir: &std::path::Path) -> Vec<i64> {
    let mut out: Vec<i64> = std::fs::read_dir(partition_dir)
        .expect("partition dir")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".snapshot")?;
            (stem.len() == 20).then(|| stem.parse().ok())?
        })
        .collect();
    out.sort_unstable();
    out
}
