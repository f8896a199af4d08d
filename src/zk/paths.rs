//! `[pure]` Kafka's ZooKeeper layout: znode paths as functions and the JSON
//! payloads exactly as Kafka 3.9 writes them (`kafka.zk.ZkData`), so a broker
//! here and a Kafka broker (or `zookeeper-shell`) read each other's znodes.
//!
//! Field order inside the JSON objects follows the examples in our design
//! notes; Kafka's own order comes from Java hash maps and carries no meaning,
//! so decoders accept any order and ignore unknown fields.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionId};

// ---------------------------------------------------------------- paths

/// Kafka's `ZkData.PersistentZkPaths` plus the config entity-type roots:
/// created at broker start-up (`KafkaZkClient.createTopLevelPaths`).
pub const PERSISTENT_PATHS: &[&str] = &[
    "/consumers",
    "/brokers/ids",
    "/brokers/topics",
    "/config/changes",
    "/admin/delete_topics",
    "/brokers/seqid",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
];

pub const BROKERS: &str = "/brokers";
pub const BROKER_IDS: &str = "/brokers/ids";
pub const TOPICS: &str = "/brokers/topics";
pub const BROKER_SEQUENCE_ID: &str = "/brokers/seqid";
pub const CONTROLLER: &str = "/controller";
pub const CONTROLLER_EPOCH: &str = "/controller_epoch";
pub const ADMIN: &str = "/admin";
pub const DELETE_TOPICS: &str = "/admin/delete_topics";
pub const REASSIGN_PARTITIONS: &str = "/admin/reassign_partitions";
pub const PREFERRED_REPLICA_ELECTION: &str = "/admin/preferred_replica_election";
pub const CONFIG: &str = "/config";
pub const CONFIG_CHANGES: &str = "/config/changes";
/// Sequential-node prefix under [`CONFIG_CHANGES`].
pub const CONFIG_CHANGE_PREFIX: &str = "config_change_";
pub const ISR_CHANGE_NOTIFICATION: &str = "/isr_change_notification";
/// Sequential-node prefix under [`ISR_CHANGE_NOTIFICATION`].
pub const ISR_CHANGE_PREFIX: &str = "isr_change_";
pub const LOG_DIR_EVENT_NOTIFICATION: &str = "/log_dir_event_notification";
pub const LATEST_PRODUCER_ID_BLOCK: &str = "/latest_producer_id_block";
pub const CLUSTER_ID: &str = "/cluster/id";
/// Kafka's `ConsumerPathZNode`: old (v0) consumers' offsets live below it.
pub const CONSUMERS: &str = "/consumers";
/// `ConfigType.Topic` in Kafka: the entity type under `/config`.
pub const CONFIG_ENTITY_TOPICS: &str = "topics";

/// `/brokers/ids/<id>` (ephemeral broker registration).
pub fn broker_id(id: BrokerId) -> String {
    format!("{BROKER_IDS}/{id}")
}

/// `/brokers/topics/<topic>` (replica assignment + topic id).
pub fn topic(topic: &str) -> String {
    format!("{TOPICS}/{topic}")
}

/// `/brokers/topics/<topic>/partitions`.
pub fn topic_partitions(topic_name: &str) -> String {
    format!("{}/partitions", topic(topic_name))
}

/// `/brokers/topics/<topic>/partitions/<p>`.
pub fn topic_partition(topic_name: &str, partition: PartitionId) -> String {
    format!("{}/{partition}", topic_partitions(topic_name))
}

/// `/brokers/topics/<topic>/partitions/<p>/state` (leader, isr, epochs).
pub fn partition_state(topic_name: &str, partition: PartitionId) -> String {
    format!("{}/state", topic_partition(topic_name, partition))
}

/// `/admin/delete_topics/<topic>`: the deletion marker the controller acts on.
pub fn delete_topic_marker(topic: &str) -> String {
    format!("{DELETE_TOPICS}/{topic}")
}

/// `/config/<entity_type>/<entity>` (e.g. `/config/topics/orders`).
pub fn config_entity(entity_type: &str, entity: &str) -> String {
    format!("{CONFIG}/{entity_type}/{entity}")
}

/// `/config/topics/<topic>`.
pub fn topic_config(topic: &str) -> String {
    config_entity(CONFIG_ENTITY_TOPICS, topic)
}

/// The path handed to a sequential create under `/config/changes`.
pub fn config_change_sequential_prefix() -> String {
    format!("{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}")
}

/// `/config/changes/config_change_<seq>` (10-digit sequence).
pub fn config_change(sequence: i64) -> String {
    format!("{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}{sequence:010}")
}

/// `/consumers/<group>/offsets/<topic>/<partition>`: where OffsetCommit v0
/// keeps a group's offset in ZooKeeper mode (Kafka 3.9 `ConsumerOffset.path`,
/// written by `KafkaZkClient.setOrCreateConsumerOffset`).
pub fn consumer_offset(group: &str, topic: &str, partition: PartitionId) -> String {
    format!("{CONSUMERS}/{group}/offsets/{topic}/{partition}")
}

/// A consumer offset znode's data: the offset in decimal (Kafka's
/// `ConsumerOffset.encode`, `offset.toString`).
pub fn encode_consumer_offset(offset: i64) -> Vec<u8> {
    offset.to_string().into_bytes()
}

/// Its inverse (`ConsumerOffset.decode`, `payload.toLong`); `None` for
/// data that is not a decimal i64.
pub fn decode_consumer_offset(data: &[u8]) -> Option<i64> {
    std::str::from_utf8(data).ok()?.trim().parse().ok()
}

/// The path handed to a sequential create under `/isr_change_notification`.
pub fn isr_change_sequential_prefix() -> String {
    format!("{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}")
}

/// Kafka's `Topic.validate` rules are checked elsewhere; this only tells
/// whether `name` is usable as one znode path component.
pub fn is_valid_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

// ---------------------------------------------------------------- Kafka Uuid

/// Kafka's `Uuid` text form: 16 bytes, base64url without padding (22 chars),
/// as `org.apache.kafka.common.Uuid.toString` writes it.
pub mod kafka_uuid {
    use rand::Rng;
    use serde::{Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    /// Encodes like `Uuid.toString` (big-endian most/least significant bits).
    pub fn to_string(id: &Uuid) -> String {
        let bytes = id.as_bytes();
        let mut out = String::with_capacity(22);
        let mut acc: u32 = 0;
        let mut bits = 0;
        for &b in bytes {
            acc = (acc << 8) | u32::from(b);
            bits += 8;
            while bits >= 6 {
                bits -= 6;
                out.push(ALPHABET[((acc >> bits) & 63) as usize] as char);
            }
        }
        if bits > 0 {
            out.push(ALPHABET[((acc << (6 - bits)) & 63) as usize] as char);
        }
        out
    }

    /// Decodes a 22-character Kafka Uuid; rejects anything that would not
    /// re-encode to the same text.
    pub fn parse(text: &str) -> Option<Uuid> {
        if text.len() != 22 {
            return None;
        }
        let mut out = [0u8; 16];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut n = 0;
        for c in text.bytes() {
            let v = ALPHABET.iter().position(|&a| a == c)? as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                *out.get_mut(n)? = (acc >> bits) as u8;
                n += 1;
            }
        }
        // 22 chars carry 132 bits: the 4 spare bits must be zero.
        if n != 16 || acc & ((1 << bits) - 1) != 0 {
            return None;
        }
        Some(Uuid::from_bytes(out))
    }

    /// `Uuid.randomUuid`: a v4 uuid, never the zero id, never Kafka's
    /// reserved metadata topic id (0,1), never text starting with '-'
    /// (it would read as a command-line flag).
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Uuid {
        loop {
            let id = uuid::Builder::from_random_bytes(rng.gen()).into_uuid();
            let reserved = id.as_u128() <= 1;
            if !reserved && !to_string(&id).starts_with('-') {
                return id;
            }
        }
    }

    pub fn serialize<S: Serializer>(id: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&to_string(id))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).ok_or_else(|| serde::de::Error::custom("invalid Kafka Uuid"))
    }
}

/// `Option<Uuid>` in Kafka text form (topics created before KIP-516 have none).
mod opt_kafka_uuid {
    use serde::{Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub fn serialize<S: Serializer>(id: &Option<Uuid>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => super::kafka_uuid::serialize(id, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Uuid>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => super::kafka_uuid::parse(&text)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("invalid Kafka Uuid")),
        }
    }
}

/// Kafka writes longs as JSON strings in some znodes (`"block_start":"0"`).
mod long_as_string {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        String::deserialize(d)?
            .trim()
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

// ---------------------------------------------------------------- payloads

/// A znode payload failed to decode.
#[derive(Debug, thiserror::Error)]
#[error("malformed znode payload: {0}")]
pub struct DecodeError(pub String);

pub(crate) fn decode_json<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, DecodeError> {
    serde_json::from_slice(bytes).map_err(|e| DecodeError(e.to_string()))
}

pub(crate) fn encode_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these plain structs into a Vec cannot fail (no maps with
    // non-string keys that serde_json rejects: integer keys are stringified).
    serde_json::to_vec(value).unwrap_or_default()
}

/// `/brokers/topics/<t>` (TopicZNode, version 3 since Kafka 3.0 with topic ids).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicZNode {
    pub version: i32,
    #[serde(
        default,
        with = "opt_kafka_uuid",
        skip_serializing_if = "Option::is_none"
    )]
    pub topic_id: Option<uuid::Uuid>,
    /// Partition → replicas (the first is the preferred leader).
    pub partitions: BTreeMap<PartitionId, Vec<BrokerId>>,
    #[serde(default)]
    pub adding_replicas: BTreeMap<PartitionId, Vec<BrokerId>>,
    #[serde(default)]
    pub removing_replicas: BTreeMap<PartitionId, Vec<BrokerId>>,
}

impl TopicZNode {
    pub const VERSION: i32 = 3;

    pub fn new(topic_id: uuid::Uuid, partitions: BTreeMap<PartitionId, Vec<BrokerId>>) -> Self {
        Self {
            version: Self::VERSION,
            topic_id: Some(topic_id),
            partitions,
            adding_replicas: BTreeMap::new(),
            removing_replicas: BTreeMap::new(),
        }
    }
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// `/brokers/topics/<t>/partitions/<p>/state` (TopicPartitionStateZNode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionStateZNode {
    pub controller_epoch: ControllerEpoch,
    pub leader: BrokerId,
    pub version: i32,
    pub leader_epoch: LeaderEpoch,
    pub isr: Vec<BrokerId>,
    /// KIP-704: written only when not RECOVERED (0); 1 = RECOVERING.
    #[serde(default, skip_serializing_if = "is_zero_u8")]
    pub leader_recovery_state: u8,
}

fn is_zero_u8(v: &u8) -> bool {
    *v == 0
}

impl PartitionStateZNode {
    pub fn new(
        leader: BrokerId,
        leader_epoch: LeaderEpoch,
        isr: Vec<BrokerId>,
        controller_epoch: ControllerEpoch,
    ) -> Self {
        Self {
            controller_epoch,
            leader,
            version: 1,
            leader_epoch,
            isr,
            leader_recovery_state: 0,
        }
    }
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// Feature range in a v5 broker registration (KIP-584).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupportedVersionRange {
    pub min_version: i16,
    pub max_version: i16,
}

/// `/brokers/ids/<id>` (BrokerIdZNode, version 5 since Kafka 2.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerIdZNode {
    /// Listener name → security protocol name.
    #[serde(default)]
    pub listener_security_protocol_map: BTreeMap<String, String>,
    /// `LISTENER://host:port` strings.
    pub endpoints: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    pub jmx_port: i32,
    /// First PLAINTEXT endpoint's host (for pre-0.10 clients); may be null.
    pub host: Option<String>,
    pub port: i32,
    /// Registration wall-clock time, milliseconds, as a JSON string.
    #[serde(with = "long_as_string")]
    pub timestamp: i64,
    #[serde(default)]
    pub features: BTreeMap<String, SupportedVersionRange>,
    pub version: i32,
}

impl BrokerIdZNode {
    pub const VERSION: i32 = 5;

    /// A registration with one PLAINTEXT listener, as a single-listener
    /// Kafka broker writes it (`jmx_port` -1 = JMX disabled).
    pub fn plaintext(host: &str, port: i32, timestamp_ms: i64) -> Self {
        Self {
            listener_security_protocol_map: BTreeMap::from([(
                "PLAINTEXT".to_string(),
                "PLAINTEXT".to_string(),
            )]),
            endpoints: vec![format!("PLAINTEXT://{host}:{port}")],
            rack: None,
            jmx_port: -1,
            host: Some(host.to_string()),
            port,
            timestamp: timestamp_ms,
            features: BTreeMap::new(),
            version: Self::VERSION,
        }
    }
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// `/config/<type>/<entity>` (ConfigEntityZNode).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConfigZNode {
    pub version: i32,
    pub config: BTreeMap<String, String>,
}

impl ConfigZNode {
    pub fn new(config: BTreeMap<String, String>) -> Self {
        Self { version: 1, config }
    }
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    /// Kafka treats empty data as "no overrides".
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        if bytes.is_empty() {
            return Ok(Self::new(BTreeMap::new()));
        }
        decode_json(bytes)
    }
}

/// `/config/changes/config_change_<seq>` payload (version 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigChangeZNode {
    pub version: i32,
    /// `<entity_type>/<entity>`, e.g. `topics/orders`.
    pub entity_path: String,
}

impl ConfigChangeZNode {
    pub fn topic(topic: &str) -> Self {
        Self {
            version: 2,
            entity_path: format!("{CONFIG_ENTITY_TOPICS}/{topic}"),
        }
    }
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// `/latest_producer_id_block` (ProducerIdBlockZNode, version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerIdBlockZNode {
    pub version: i32,
    pub broker: BrokerId,
    #[serde(with = "long_as_string")]
    pub block_start: i64,
    #[serde(with = "long_as_string")]
    pub block_end: i64,
}

impl ProducerIdBlockZNode {
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// `/cluster/id` (ClusterIdZNode; note the version is a string).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterIdZNode {
    pub version: String,
    pub id: String,
}

impl ClusterIdZNode {
    pub fn new(id: &str) -> Self {
        Self {
            version: "1".to_string(),
            id: id.to_string(),
        }
    }
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// `/controller` (ControllerZNode, ephemeral). Kafka 3.9 writes version 2
/// with `kraftControllerEpoch` -1 in ZooKeeper mode (ZkData.scala
/// `ControllerZNode.encode`); version 1 (no epoch field) still decodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerZNode {
    pub version: i32,
    pub brokerid: BrokerId,
    #[serde(with = "long_as_string")]
    pub timestamp: i64,
    #[serde(rename = "kraftControllerEpoch", default = "no_kraft_epoch")]
    pub kraft_controller_epoch: i32,
}

fn no_kraft_epoch() -> i32 {
    -1
}

impl ControllerZNode {
    pub fn new(brokerid: BrokerId, timestamp_ms: i64) -> Self {
        Self {
            version: 2,
            brokerid,
            timestamp: timestamp_ms,
            kraft_controller_epoch: -1,
        }
    }
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// `/controller_epoch` holds a bare decimal integer (ControllerEpochZNode).
pub fn encode_controller_epoch(epoch: ControllerEpoch) -> Vec<u8> {
    epoch.to_string().into_bytes()
}

pub fn decode_controller_epoch(bytes: &[u8]) -> Result<ControllerEpoch, DecodeError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| DecodeError("controller epoch is not an integer".into()))
}

/// One entry of an `/isr_change_notification/isr_change_<seq>` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsrChangePartition {
    pub topic: String,
    pub partition: PartitionId,
}

/// `/isr_change_notification/isr_change_<seq>` (version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsrChangeNotificationZNode {
    pub version: i32,
    pub partitions: Vec<IsrChangePartition>,
}

impl IsrChangeNotificationZNode {
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

/// `/admin/preferred_replica_election` (version 1): the same
/// `{"version":1,"partitions":[{"topic":…,"partition":…}]}` payload
/// (Kafka's `PreferredReplicaElectionZNode`), written by
/// `kafka-preferred-replica-election` / `kafka-leader-election` of old and
/// deleted by the controller once it has run the elections.
pub type PreferredReplicaElectionZNode = IsrChangeNotificationZNode;

/// One entry of `/admin/reassign_partitions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReassignPartition {
    pub topic: String,
    pub partition: PartitionId,
    pub replicas: Vec<BrokerId>,
}

/// `/admin/reassign_partitions` (version 1, Kafka's
/// `ReassignPartitionsZNode`): the legacy way to ask for a reassignment,
/// `{"version":1,"partitions":[{"topic":…,"partition":…,"replicas":[…]}]}`;
/// the controller removes each partition once it is done and deletes the
/// znode when none is left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReassignPartitionsZNode {
    pub version: i32,
    pub partitions: Vec<ReassignPartition>,
}

impl ReassignPartitionsZNode {
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use uuid::Uuid;

    const ID_TEXT: &str = "MtxDMT7QRMWE1WHyQzPmUA";

    fn id() -> Uuid {
        kafka_uuid::parse(ID_TEXT).expect("golden id parses")
    }

    #[test]
    fn paths_follow_kafka_layout() {
        let rows: &[(String, &str)] = &[
            (broker_id(BrokerId(3)), "/brokers/ids/3"),
            (topic("orders"), "/brokers/topics/orders"),
            (
                topic_partitions("orders"),
                "/brokers/topics/orders/partitions",
            ),
            (
                topic_partition("orders", 2),
                "/brokers/topics/orders/partitions/2",
            ),
            (
                partition_state("orders", 2),
                "/brokers/topics/orders/partitions/2/state",
            ),
            (delete_topic_marker("orders"), "/admin/delete_topics/orders"),
            (topic_config("orders"), "/config/topics/orders"),
            (
                config_change(42),
                "/config/changes/config_change_0000000042",
            ),
            (
                config_change_sequential_prefix(),
                "/config/changes/config_change_",
            ),
            (
                isr_change_sequential_prefix(),
                "/isr_change_notification/isr_change_",
            ),
            (
                consumer_offset("g1", "orders", 3),
                "/consumers/g1/offsets/orders/3",
            ),
        ];
        for (got, want) in rows {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn consumer_offsets_are_decimal_text() {
        for offset in [0, 42, -1, i64::MAX] {
            let data = encode_consumer_offset(offset);
            assert_eq!(data, offset.to_string().as_bytes());
            assert_eq!(decode_consumer_offset(&data), Some(offset));
        }
        assert_eq!(decode_consumer_offset(b"12x"), None);
        assert_eq!(decode_consumer_offset(b""), None);
        assert_eq!(decode_consumer_offset(&[0xff]), None);
    }

    #[test]
    fn kafka_uuid_text_matches_java_base64url() {
        // Uuid(0, 1) is Kafka's METADATA_TOPIC_ID, printed "AAAAAAAAAAAAAAAAAAAAAQ".
        let meta = Uuid::from_u128(1);
        assert_eq!(kafka_uuid::to_string(&meta), "AAAAAAAAAAAAAAAAAAAAAQ");
        let all_ones = Uuid::from_u128(u128::MAX);
        assert_eq!(kafka_uuid::to_string(&all_ones), "_____________________w");
        assert_eq!(kafka_uuid::to_string(&id()), ID_TEXT);
    }

    #[test]
    fn kafka_uuid_parse_rejects_malformed_text() {
        for bad in [
            "",
            "short",
            "AAAAAAAAAAAAAAAAAAAAA+",
            "AAAAAAAAAAAAAAAAAAAAAB",
            "AAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(kafka_uuid::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn random_kafka_uuid_avoids_reserved_ids_and_leading_dash() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let id = kafka_uuid::random(&mut rng);
            let text = kafka_uuid::to_string(&id);
            assert_eq!(text.len(), 22);
            assert!(!text.starts_with('-'));
            assert!(id.as_u128() > 1);
            assert_eq!(id.get_version_num(), 4);
        }
    }

    #[test]
    fn topic_znode_golden() {
        let z = TopicZNode::new(
            id(),
            BTreeMap::from([(0, vec![BrokerId(1)]), (1, vec![BrokerId(2), BrokerId(1)])]),
        );
        let text = String::from_utf8(z.encode()).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"version":3,"topic_id":"{ID_TEXT}","partitions":{{"0":[1],"1":[2,1]}},"adding_replicas":{{}},"removing_replicas":{{}}}}"#
            )
        );
        assert_eq!(TopicZNode::decode(text.as_bytes()).unwrap(), z);
    }

    #[test]
    fn topic_znode_decodes_kafka_order_and_pre_kip516_topics() {
        let kafka = format!(
            r#"{{"removing_replicas":{{}},"partitions":{{"10":[3,1],"2":[1,3]}},"topic_id":"{ID_TEXT}","adding_replicas":{{"2":[3]}},"version":3}}"#
        );
        let z = TopicZNode::decode(kafka.as_bytes()).unwrap();
        assert_eq!(z.partitions[&10], vec![3, 1]);
        assert_eq!(z.adding_replicas[&2], vec![3]);
        assert_eq!(z.topic_id, Some(id()));
        let old = TopicZNode::decode(br#"{"version":1,"partitions":{"0":[1]}}"#).unwrap();
        assert_eq!(old.topic_id, None);
        assert!(TopicZNode::decode(br#"{"version":3,"topic_id":"nope","partitions":{}}"#).is_err());
    }

    #[test]
    fn reassign_partitions_golden() {
        let text =
            r#"{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3]}]}"#;
        let z = ReassignPartitionsZNode::decode(text.as_bytes()).unwrap();
        assert_eq!(
            z.partitions[0].replicas,
            vec![BrokerId(1), BrokerId(2), BrokerId(3)]
        );
        assert_eq!(String::from_utf8(z.encode()).unwrap(), text);
        assert!(ReassignPartitionsZNode::decode(br#"{"version":1}"#).is_err());
    }

    #[test]
    fn partition_state_golden() {
        let s = PartitionStateZNode::new(
            BrokerId(1),
            LeaderEpoch(0),
            vec![BrokerId(1)],
            ControllerEpoch(1),
        );
        let text = String::from_utf8(s.encode()).unwrap();
        assert_eq!(
            text,
            r#"{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}"#
        );
        assert_eq!(PartitionStateZNode::decode(text.as_bytes()).unwrap(), s);
        let recovering = PartitionStateZNode {
            leader_recovery_state: 1,
            ..s
        };
        let text = String::from_utf8(recovering.encode()).unwrap();
        assert!(
            text.ends_with(r#""isr":[1],"leader_recovery_state":1}"#),
            "{text}"
        );
    }

    #[test]
    fn broker_registration_v5_golden() {
        let b = BrokerIdZNode::plaintext("localhost", 9092, 1700000000000);
        let text = String::from_utf8(b.encode()).unwrap();
        assert_eq!(
            text,
            r#"{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"host":"localhost","port":9092,"timestamp":"1700000000000","features":{},"version":5}"#
        );
        assert_eq!(BrokerIdZNode::decode(text.as_bytes()).unwrap(), b);
        // As a Kafka 3.9 broker wrote it (hash-map order, rack, features).
        let kafka = br#"{"features":{"metadata.version":{"min_version":1,"max_version":21}},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka-1:9092"],"rack":"r1","jmx_port":-1,"port":9092,"host":"kafka-1","version":5,"timestamp":"1690000000000"}"#;
        let b = BrokerIdZNode::decode(kafka).unwrap();
        assert_eq!(b.rack.as_deref(), Some("r1"));
        assert_eq!(b.features["metadata.version"].max_version, 21);
        assert_eq!(b.timestamp, 1690000000000);
    }

    #[test]
    fn topic_config_golden() {
        let c = ConfigZNode::new(BTreeMap::from([("retention.ms".into(), "1000".into())]));
        let text = String::from_utf8(c.encode()).unwrap();
        assert_eq!(text, r#"{"version":1,"config":{"retention.ms":"1000"}}"#);
        assert_eq!(ConfigZNode::decode(text.as_bytes()).unwrap(), c);
        assert!(ConfigZNode::decode(b"").unwrap().config.is_empty());
    }

    #[test]
    fn producer_id_block_golden() {
        let p = ProducerIdBlockZNode {
            version: 1,
            broker: BrokerId(1),
            block_start: 0,
            block_end: 999,
        };
        let text = String::from_utf8(p.encode()).unwrap();
        assert_eq!(
            text,
            r#"{"version":1,"broker":1,"block_start":"0","block_end":"999"}"#
        );
        assert_eq!(ProducerIdBlockZNode::decode(text.as_bytes()).unwrap(), p);
        assert!(ProducerIdBlockZNode::decode(
            br#"{"version":1,"broker":1,"block_start":"x","block_end":"9"}"#
        )
        .is_err());
    }

    #[test]
    fn cluster_id_golden() {
        let c = ClusterIdZNode::new(ID_TEXT);
        let text = String::from_utf8(c.encode()).unwrap();
        assert_eq!(text, format!(r#"{{"version":"1","id":"{ID_TEXT}"}}"#));
        assert_eq!(ClusterIdZNode::decode(text.as_bytes()).unwrap(), c);
    }

    #[test]
    fn controller_and_notifications_golden() {
        let c = ControllerZNode::new(BrokerId(2), 1700000000000);
        assert_eq!(
            String::from_utf8(c.encode()).unwrap(),
            r#"{"version":2,"brokerid":2,"timestamp":"1700000000000","kraftControllerEpoch":-1}"#
        );
        assert_eq!(ControllerZNode::decode(&c.encode()).unwrap(), c);
        let v1 = ControllerZNode::decode(br#"{"version":1,"brokerid":3,"timestamp":"1"}"#).unwrap();
        assert_eq!((v1.brokerid, v1.kraft_controller_epoch), (BrokerId(3), -1));
        assert_eq!(encode_controller_epoch(ControllerEpoch(7)), b"7");
        assert_eq!(decode_controller_epoch(b"7").unwrap(), ControllerEpoch(7));
        assert!(decode_controller_epoch(b"x").is_err());
        let change = ConfigChangeZNode::topic("orders");
        assert_eq!(
            String::from_utf8(change.encode()).unwrap(),
            r#"{"version":2,"entity_path":"topics/orders"}"#
        );
        let isr = IsrChangeNotificationZNode {
            version: 1,
            partitions: vec![IsrChangePartition {
                topic: "orders".into(),
                partition: 0,
            }],
        };
        assert_eq!(
            String::from_utf8(isr.encode()).unwrap(),
            r#"{"version":1,"partitions":[{"topic":"orders","partition":0}]}"#
        );
        assert_eq!(
            IsrChangeNotificationZNode::decode(&isr.encode()).unwrap(),
            isr
        );
    }

    proptest! {
        #[test]
        fn kafka_uuid_round_trips(v in any::<u128>()) {
            let id = Uuid::from_u128(v);
            let text = kafka_uuid::to_string(&id);
            prop_assert_eq!(text.len(), 22);
            prop_assert_eq!(kafka_uuid::parse(&text), Some(id));
        }

        #[test]
        fn topic_znode_round_trips(
            v in any::<u128>(),
            parts in proptest::collection::btree_map(0i32..5000, proptest::collection::vec((0i32..100).prop_map(BrokerId), 1..4), 0..20),
        ) {
            let z = TopicZNode::new(Uuid::from_u128(v), parts);
            prop_assert_eq!(TopicZNode::decode(&z.encode()).unwrap(), z);
        }

        #[test]
        fn decoders_never_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = TopicZNode::decode(&bytes);
            let _ = PartitionStateZNode::decode(&bytes);
            let _ = BrokerIdZNode::decode(&bytes);
            let _ = ConfigZNode::decode(&bytes);
            let _ = ProducerIdBlockZNode::decode(&bytes);
            let _ = ClusterIdZNode::decode(&bytes);
            let _ = decode_controller_epoch(&bytes);
        }
    }
}
