//! A raw protocol client: kafka-protocol's typed requests over a blocking
//! `TcpStream`, correlation ids checked, plus the versions and constants
//! the data-path tests speak.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    fetch_request::{FetchPartition, FetchTopic},
    fetch_response::PartitionData,
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    list_offsets_response::ListOffsetsPartitionResponse,
    metadata_request::MetadataRequestTopic,
    produce_request::{PartitionProduceData, TopicProduceData},
    produce_response::PartitionProduceResponse,
    ApiKey, ApiVersionsRequest, BrokerId, CreateTopicsRequest, FetchRequest, ListOffsetsRequest,
    MetadataRequest, MetadataResponse, ProduceRequest, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Request, StrBytes};

use super::broker::{Broker, STARTUP_LIMIT};
use super::frames::{read_frame, request_frame_as, TEST_CLIENT_ID};
use super::records::{batch_last_offset, whole_batches};

/// Versions the raw helpers speak: inside the ranges the broker serves
/// (Produce 3–10, Fetch 4–16, ListOffsets 1–8, Metadata 0–13) and the first
/// flexible (compact, tagged) version of each, as current clients send.
pub const PRODUCE_VERSION: i16 = 9;
/// v12: topics by name (v13+ switch to topic ids).
pub const FETCH_VERSION: i16 = 12;
/// v7: adds MAX_TIMESTAMP (-3), KIP-734.
pub const LIST_OFFSETS_VERSION: i16 = 7;
/// v10: topic ids in the response.
pub const METADATA_VERSION: i16 = 12;

/// Kafka error codes the data-path tests expect.
pub mod error_code {
    pub const NONE: i16 = 0;
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    pub const RECORD_LIST_TOO_LARGE: i16 = 18;
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
}

/// ListOffsets special timestamps.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;

/// One connection speaking typed requests, with correlation ids checked.
pub struct Conn {
    pub stream: TcpStream,
    next_correlation_id: i32,
    client_id: String,
}

impl Conn {
    pub fn open(broker: &Broker) -> Conn {
        Conn {
            stream: broker.connect(),
            next_correlation_id: 1,
            client_id: TEST_CLIENT_ID.to_owned(),
        }
    }

    /// The same connection sending `client_id` in its request headers.
    pub fn with_client_id(mut self, client_id: &str) -> Conn {
        self.client_id = client_id.to_owned();
        self
    }

    /// A connection to any Kafka-protocol broker at `addr` (host:port),
    /// e.g. the Apache Kafka peer of the differential tests.
    pub fn open_addr(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            next_correlation_id: 1,
            client_id: TEST_CLIENT_ID.to_owned(),
        }
    }

    /// Send a request; returns its correlation id.
    pub fn send<Q: Request>(&mut self, version: i16, req: &Q) -> i32 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let key = ApiKey::try_from(Q::KEY).expect("known api key");
        let frame = request_frame_as(&self.client_id, key, version, correlation_id, req);
        self.stream.write_all(&frame).expect("write request");
        correlation_id
    }

    /// Read the response to `correlation_id`; `None` if the broker closed
    /// the connection.
    pub fn try_recv<Q: Request>(
        &mut self,
        version: i16,
        correlation_id: i32,
    ) -> Option<Q::Response> {
        let mut body = read_frame(&mut self.stream)?;
        let key = ApiKey::try_from(Q::KEY).expect("known api key");
        let header = ResponseHeader::decode(&mut body, key.response_header_version(version))
            .expect("response header");
        assert_eq!(
            header.correlation_id, correlation_id,
            "responses out of order"
        );
        let resp = Q::Response::decode(&mut body, version)
            .unwrap_or_else(|e| panic!("decode {key:?} v{version} response: {e}"));
        assert!(
            body.is_empty(),
            "{} trailing bytes after {key:?} v{version}",
            body.len()
        );
        Some(resp)
    }

    pub fn recv<Q: Request>(&mut self, version: i16, correlation_id: i32) -> Q::Response {
        self.try_recv::<Q>(version, correlation_id)
            .expect("broker closed the connection instead of answering")
    }

    pub fn call<Q: Request>(&mut self, version: i16, req: &Q) -> Q::Response {
        let correlation_id = self.send(version, req);
        self.recv::<Q>(version, correlation_id)
    }

    /// Highest version of `Q` both the broker and the kafka-protocol crate
    /// speak, at most `max` (ApiVersions v3).
    pub fn negotiate<Q: Request>(&mut self, max: i16) -> i16 {
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("shardlog-test"))
            .with_client_software_version(StrBytes::from_static_str("0"));
        let resp = self.call(3, &req);
        assert_eq!(resp.error_code, 0, "ApiVersions error");
        let range = resp
            .api_keys
            .iter()
            .find(|k| k.api_key == Q::KEY)
            .unwrap_or_else(|| panic!("broker does not advertise API key {}", Q::KEY));
        range.max_version.min(max)
    }

    /// Produce one encoded batch (or several concatenated) to one partition.
    pub fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        records: Bytes,
        acks: i16,
    ) -> PartitionProduceResponse {
        self.produce_as(topic, partition, records, acks, None)
    }

    /// [`Conn::produce`] naming the request's transactional id
    /// (transactional records need one).
    pub fn produce_as(
        &mut self,
        topic: &str,
        partition: i32,
        records: Bytes,
        acks: i16,
        transactional_id: Option<&str>,
    ) -> PartitionProduceResponse {
        let req = produce_request(topic, partition, records, acks).with_transactional_id(
            transactional_id.map(|t| {
                kafka_protocol::messages::TransactionalId(StrBytes::from_string(t.into()))
            }),
        );
        let resp = self.call(PRODUCE_VERSION, &req);
        let [topic_resp] = &resp.responses[..] else {
            panic!("one topic expected in {resp:?}");
        };
        let [part] = &topic_resp.partition_responses[..] else {
            panic!("one partition expected in {resp:?}");
        };
        assert_eq!(part.index, partition);
        part.clone()
    }

    /// One Fetch of one partition (no fetch session: session_id 0, epoch -1).
    pub fn fetch(&mut self, spec: &FetchSpec) -> PartitionData {
        let correlation_id = self.send(FETCH_VERSION, &spec.request());
        self.recv_fetch(correlation_id, spec)
    }

    /// The response to a Fetch sent with `send(FETCH_VERSION, &spec.request())`.
    pub fn recv_fetch(&mut self, correlation_id: i32, spec: &FetchSpec) -> PartitionData {
        let resp = self.recv::<FetchRequest>(FETCH_VERSION, correlation_id);
        assert_eq!(resp.error_code, 0, "top-level fetch error in {resp:?}");
        let [topic] = &resp.responses[..] else {
            panic!("one topic expected, got {} topics", resp.responses.len());
        };
        assert_eq!(topic.topic.0.as_str(), spec.topic);
        let [part] = &topic.partitions[..] else {
            panic!("one partition expected, got {}", topic.partitions.len());
        };
        assert_eq!(part.partition_index, spec.partition);
        part.clone()
    }

    /// Fetch `[from, hw)` of a partition: every whole batch, in order.
    pub fn fetch_to_high_watermark(
        &mut self,
        topic: &str,
        partition: i32,
        from: i64,
    ) -> Vec<Bytes> {
        let mut spec = FetchSpec::new(topic, partition, from);
        spec.max_wait_ms = 100;
        let mut batches = Vec::new();
        loop {
            let part = self.fetch(&spec);
            assert_eq!(
                part.error_code, 0,
                "fetch at {}: {part:?}",
                spec.fetch_offset
            );
            if spec.fetch_offset >= part.high_watermark {
                return batches;
            }
            let got = whole_batches(part.records.as_ref());
            assert!(
                !got.is_empty(),
                "fetch at {} below hw {} returned no whole batch (KIP-74)",
                spec.fetch_offset,
                part.high_watermark
            );
            for batch in got {
                let next = batch_last_offset(&batch) + 1;
                // A batch may start before the fetch offset (Kafka returns
                // the whole batch holding it); it must still move us on.
                assert!(next > spec.fetch_offset, "batch ends before fetch offset");
                spec.fetch_offset = next;
                batches.push(batch);
            }
        }
    }

    /// OffsetForLeaderEpoch v4 for one partition, asked by `replica_id`
    /// (-1: a consumer, KIP-320; a broker id: a follower).
    pub fn epoch_end_offset(
        &mut self,
        topic: &str,
        partition: i32,
        replica_id: i32,
        current_leader_epoch: i32,
        leader_epoch: i32,
    ) -> kafka_protocol::messages::offset_for_leader_epoch_response::EpochEndOffset {
        use kafka_protocol::messages::offset_for_leader_epoch_request::{
            OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
        };
        let req = OffsetForLeaderEpochRequest::default()
            .with_replica_id(BrokerId(replica_id))
            .with_topics(vec![OffsetForLeaderTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![OffsetForLeaderPartition::default()
                    .with_partition(partition)
                    .with_current_leader_epoch(current_leader_epoch)
                    .with_leader_epoch(leader_epoch)])]);
        let resp = self.call(4, &req);
        resp.topics[0].partitions[0].clone()
    }

    /// The replica's HW, leader or follower, as a consumer's Fetch
    /// reports it (a follower serves consumer fetches, KIP-392; ListOffsets
    /// answers clients only on the leader, as Kafka's); -1 while the
    /// broker answers the fetch with an error (not hosted yet).
    pub fn high_watermark(&mut self, topic: &str, partition: i32) -> i64 {
        let mut spec = FetchSpec::new(topic, partition, 0);
        spec.max_wait_ms = 0;
        spec.partition_max_bytes = 1;
        let p = self.fetch(&spec);
        if p.error_code == 0 {
            p.high_watermark
        } else {
            -1
        }
    }

    pub fn list_offset(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> ListOffsetsPartitionResponse {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_current_leader_epoch(-1)
                    .with_timestamp(timestamp)])]);
        let resp = self.call(LIST_OFFSETS_VERSION, &req);
        let [t] = &resp.topics[..] else {
            panic!("one topic expected in {resp:?}");
        };
        let [p] = &t.partitions[..] else {
            panic!("one partition expected in {resp:?}");
        };
        p.clone()
    }

    /// Metadata for `topics` (`None` = all topics), no auto-creation.
    pub fn metadata(&mut self, topics: Option<&[&str]>) -> MetadataResponse {
        let req = MetadataRequest::default()
            .with_allow_auto_topic_creation(false)
            .with_topics(topics.map(|names| {
                names
                    .iter()
                    .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
                    .collect()
            }));
        self.call(METADATA_VERSION, &req)
    }

    /// Create a topic with CreateTopics (at the highest version both sides
    /// speak, ≤ 7) and wait until Metadata shows every partition with a
    /// leader. Panics on any error but TOPIC_ALREADY_EXISTS.
    pub fn create_topic(&mut self, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
        let version = self.negotiate::<CreateTopicsRequest>(7);
        let configs = configs
            .iter()
            .map(|(k, v)| {
                CreatableTopicConfig::default()
                    .with_name(StrBytes::from_string(k.to_string()))
                    .with_value(Some(StrBytes::from_string(v.to_string())))
            })
            .collect();
        let req = CreateTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(topic_name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(configs)]);
        let resp = self.call(version, &req);
        let result = &resp.topics[0];
        assert!(
            [error_code::NONE, error_code::TOPIC_ALREADY_EXISTS].contains(&result.error_code),
            "CreateTopics {topic}: {result:?}"
        );
        self.wait_for_leaders(topic, partitions);
    }

    /// Topic creation completes asynchronously (controller → shards), as
    /// in Kafka; poll Metadata until every partition has a leader.
    pub fn wait_for_leaders(&mut self, topic: &str, partitions: i32) {
        let deadline = std::time::Instant::now() + STARTUP_LIMIT;
        loop {
            let md = self.metadata(Some(&[topic]));
            let ready = md.topics.first().is_some_and(|t| {
                t.error_code == 0
                    && t.partitions.len() == partitions as usize
                    && t.partitions
                        .iter()
                        .all(|p| p.error_code == 0 && p.leader_id.0 >= 0)
            });
            if ready {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "topic {topic} never got {partitions} partitions with leaders: {md:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The knobs of a one-partition Fetch.
#[derive(Debug, Clone)]
pub struct FetchSpec {
    pub topic: String,
    pub partition: i32,
    pub fetch_offset: i64,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partition_max_bytes: i32,
    /// 0 = read_uncommitted, 1 = read_committed.
    pub isolation_level: i8,
}

impl FetchSpec {
    pub fn new(topic: &str, partition: i32, fetch_offset: i64) -> FetchSpec {
        FetchSpec {
            topic: topic.to_owned(),
            partition,
            fetch_offset,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 8 << 20,
            partition_max_bytes: 1 << 20,
            isolation_level: 0,
        }
    }

    pub fn request(&self) -> FetchRequest {
        FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(self.max_wait_ms)
            .with_min_bytes(self.min_bytes)
            .with_max_bytes(self.max_bytes)
            .with_isolation_level(self.isolation_level)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(&self.topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(self.partition)
                    .with_current_leader_epoch(-1)
                    .with_fetch_offset(self.fetch_offset)
                    .with_log_start_offset(-1)
                    .with_partition_max_bytes(self.partition_max_bytes)])])
    }
}

pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// A unique-enough topic name per test (tests share nothing, but distinct
/// names make broker logs readable).
pub fn unique_topic(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// A Produce (v[`PRODUCE_VERSION`]) of `records` to one partition.
pub fn produce_request(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])])
}
