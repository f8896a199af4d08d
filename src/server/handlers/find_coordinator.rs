//! `[drv]` FindCoordinator (key 10), v0–v6 as Kafka 3.9 lists it (v4+:
//! batched `coordinator_keys`, KIP-699; v5 may answer
//! TRANSACTION_ABORTABLE, KIP-890; v6 may ask for a share group, KIP-932).
//!
//! Kafka's rule (KafkaApis.getCoordinator): the coordinator of group `g`
//! is the leader of `__consumer_offsets` partition
//! `coordinator_partition(g, offsets.topic.num.partitions)`. A group
//! lookup creates `__consumer_offsets` when it does not exist yet
//! (`offsets.topic.num.partitions`, `offsets.topic.replication.factor`,
//! compacted; KafkaApis.getOrCreateInternalTopic), and answers
//! COORDINATOR_NOT_AVAILABLE while it cannot be created or its partition
//! has no live leader.
//!
//! Key type 1 (transactions): the leader of `__transaction_state`
//! partition `coordinator_partition(id, transaction.state.log.num.partitions)`;
//! the lookup creates the topic as a group lookup creates
//! `__consumer_offsets` (`transaction.state.log.*` keys).
//! Key type 2 (share groups, KIP-932): below v6 INVALID_REQUEST (42), as
//! Kafka 3.9's `getCoordinator` refuses it; at v6 COORDINATOR_NOT_AVAILABLE
//! (15), its answer on a broker whose `group.coordinator.rebalance.protocols`
//! has no `share` (the default; shardlog has no share groups). Any other key
//! type: INVALID_REQUEST, as Kafka's `CoordinatorType.forId` refuses it.
//!
//! Advertising this API matters beyond groups: librdkafka turns on its LZ4
//! feature only when FindCoordinator is listed (its feature map ties
//! RD_KAFKA_FEATURE_LZ4 to FindCoordinator), and otherwise sends lz4
//! batches uncompressed.

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
use kafka_protocol::messages::{ApiKey, BrokerId};
use kafka_protocol::protocol::StrBytes;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::image::{OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use crate::metadata::{BrokerEndpoint, Snapshot};
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::auto_create::ensure_topic_auto_created;
use crate::server::out::OutPart;
use crate::shard::placement::coordinator_partition;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::FindCoordinator, 0, 6);

/// First version with batched `coordinator_keys` (KIP-699).
const FIRST_BATCHED: i16 = 4;

/// Kafka's `FindCoordinatorRequest.CoordinatorType` ids.
pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_TRANSACTION: i8 = 1;
pub const KEY_TYPE_SHARE: i8 = 2;

/// The first version that may ask for a share group's coordinator.
const FIRST_SHARE: i16 = 6;

/// FindCoordinatorRequest.json: Key, KeyType from v1; from v4 KeyType
/// and the batched CoordinatorKeys instead; flexible from v3.
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 3,
    schema: Schema::PerVersion(schema),
};

fn schema(version: i16) -> &'static [Field] {
    match version {
        0 => &[Field::Str],
        1..FIRST_BATCHED => &[Field::Str, INT8],
        _ => &[INT8, Field::StrArray],
    }
}

/// Decode a FindCoordinator request, refusing a `coordinator_keys` count
/// larger than the body and a tag the crate would misread (see
/// `controlled_shutdown::decode_request`).
pub fn decode_request(body: Bytes, version: i16) -> Result<FindCoordinatorRequest, DecodeError> {
    API.decode(body, version)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request = decode_request(req.body, version)?;
        let internal = match request.key_type {
            KEY_TYPE_GROUP => Some(OFFSETS_TOPIC),
            KEY_TYPE_TRANSACTION => Some(TRANSACTION_STATE_TOPIC),
            _ => None,
        };
        if let Some(topic) = internal {
            if ctx.snapshot().cluster_topic(topic).is_none() {
                let created = ensure_topic_auto_created(&ctx, topic).await;
                if created != ErrorCode::NONE {
                    let live = ctx.snapshot().brokers.len();
                    let why = creation_failure(topic, created, &ctx.config, live);
                    tracing::warn!("cannot create {topic}: {why}");
                }
            }
        }
        let snapshot = ctx.snapshot();
        // Kafka's `getCoordinator`: DESCRIBE on the group or the
        // transactional id first.
        let lookup = |key: &str| match request.key_type {
            KEY_TYPE_GROUP if !authz.group(Operation::Describe, key) => {
                Err(ErrorCode::GROUP_AUTHORIZATION_FAILED)
            }
            KEY_TYPE_TRANSACTION if !authz.transactional_id(Operation::Describe, key) => {
                Err(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            }
            _ => coordinator_for(&snapshot, &req.listener, version, request.key_type, key),
        };
        let mut response = FindCoordinatorResponse::default();
        if version >= FIRST_BATCHED {
            response.coordinators = request
                .coordinator_keys
                .iter()
                .map(|key| coordinator_entry(key.clone(), lookup(key)))
                .collect();
        } else {
            let c = coordinator_entry(request.key.clone(), lookup(&request.key));
            response.error_code = c.error_code;
            response.error_message = c.error_message;
            response.node_id = c.node_id;
            response.host = c.host;
            response.port = c.port;
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// Why an internal topic could not be created, for the broker's log: the
/// error's name and, when a replication factor set in the config exceeds
/// the live brokers (Kafka's `AutoTopicCreationManager` fails the creation
/// with INVALID_REPLICATION_FACTOR and FindCoordinator keeps answering
/// COORDINATOR_NOT_AVAILABLE), the config key to change.
pub fn creation_failure(
    topic: &str,
    code: ErrorCode,
    config: &crate::config::ServerConfig,
    live_brokers: usize,
) -> String {
    let (key, factor) = match topic {
        OFFSETS_TOPIC => (
            "offsets.topic.replication.factor",
            config.offsets_topic_replication_factor,
        ),
        TRANSACTION_STATE_TOPIC => (
            "transaction.state.log.replication.factor",
            config.transaction_state_log_replication_factor,
        ),
        _ => return code.to_string(),
    };
    let exceeds = usize::try_from(factor).is_ok_and(|f| f > live_brokers);
    if code != ErrorCode::INVALID_REPLICATION_FACTOR || !exceeds {
        return code.to_string();
    }
    let brokers = if live_brokers == 1 {
        "broker"
    } else {
        "brokers"
    };
    let advice = if live_brokers <= 1 {
        "set it to 1 for a single broker".to_owned()
    } else {
        format!("set it to at most {live_brokers}")
    };
    format!("{code}: {key}={factor} but {live_brokers} live {brokers}; {advice}")
}

/// The broker coordinating `key` of `key_type` (asked at `version`), at
/// its endpoint on the client's `listener` (Kafka's
/// `getAliveBrokerNode(leader, request.context.listenerName)`), or why
/// there is none.
/// Kafka maps keys with the partition count of
/// the existing `__consumer_offsets` (`offsets.topic.num.partitions` only
/// sizes its creation).
pub fn coordinator_for<'a>(
    snapshot: &'a Snapshot,
    listener: &str,
    version: i16,
    key_type: i8,
    key: &str,
) -> Result<&'a BrokerEndpoint, ErrorCode> {
    let internal = match key_type {
        KEY_TYPE_GROUP => OFFSETS_TOPIC,
        KEY_TYPE_TRANSACTION => TRANSACTION_STATE_TOPIC,
        KEY_TYPE_SHARE if version >= FIRST_SHARE => {
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)
        }
        _ => return Err(ErrorCode::INVALID_REQUEST),
    };
    // The topic as Metadata knows it (in ZooKeeper mode the controller's
    // UpdateMetadata, whichever partitions this broker hosts).
    let leader = match snapshot.cluster_topic(internal) {
        // Kafka reads the partition count of the existing topic, the one
        // every coordinator maps its keys with (`on_group_snapshot`).
        Some(topic) => {
            let p = coordinator_partition(key, topic.partition_count());
            topic
                .partitions
                .iter()
                .find(|s| s.partition == p)
                .map_or(crate::types::BrokerId::NONE, |s| s.leader)
        }
        // Not created (yet): Kafka's answer while it cannot be.
        None => return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
    };
    // No leader (-1), a leader not alive or one without an endpoint on
    // the client's listener: Kafka's COORDINATOR_NOT_AVAILABLE.
    snapshot
        .broker_on(listener, leader)
        .ok_or(ErrorCode::COORDINATOR_NOT_AVAILABLE)
}

/// One answer; errors carry Kafka's `Node.noNode()` (-1, "", -1).
fn coordinator_entry(key: StrBytes, found: Result<&BrokerEndpoint, ErrorCode>) -> Coordinator {
    let mut c = Coordinator::default();
    c.key = key;
    match found {
        Ok(b) => {
            c.node_id = BrokerId(b.broker_id.0);
            c.host = StrBytes::from_string(b.host.clone());
            c.port = i32::from(b.port);
        }
        Err(code) => {
            c.error_code = code.0;
            c.error_message = code.name().map(StrBytes::from_static_str);
            c.node_id = BrokerId(-1);
            c.host = StrBytes::from_static_str("");
            c.port = -1;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerConfig;
    use crate::metadata::{PartitionState, TopicState};
    use crate::types::{BrokerId, LeaderEpoch};

    #[test]
    fn an_internal_topic_replication_factor_above_the_live_brokers_names_its_config_key() {
        let defaults = ServerConfig::default();
        let irf = ErrorCode::INVALID_REPLICATION_FACTOR;
        assert_eq!(
            creation_failure(OFFSETS_TOPIC, irf, &defaults, 1),
            "INVALID_REPLICATION_FACTOR(38): offsets.topic.replication.factor=3 but 1 live \
             broker; set it to 1 for a single broker"
        );
        assert_eq!(
            creation_failure(TRANSACTION_STATE_TOPIC, irf, &defaults, 2),
            "INVALID_REPLICATION_FACTOR(38): transaction.state.log.replication.factor=3 but 2 \
             live brokers; set it to at most 2"
        );
        // Enough brokers, another error, or another topic: the name alone.
        assert_eq!(
            creation_failure(OFFSETS_TOPIC, irf, &defaults, 3),
            "INVALID_REPLICATION_FACTOR(38)"
        );
        assert_eq!(
            creation_failure(OFFSETS_TOPIC, ErrorCode::NOT_CONTROLLER, &defaults, 1),
            "NOT_CONTROLLER(41)"
        );
        assert_eq!(
            creation_failure("orders", irf, &defaults, 1),
            "INVALID_REPLICATION_FACTOR(38)"
        );
    }

    fn endpoint(broker_id: i32, port: u16) -> BrokerEndpoint {
        BrokerEndpoint {
            broker_id: BrokerId(broker_id),
            host: format!("host{broker_id}"),
            port,
            rack: None,
        }
    }

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::single_broker("c", endpoint(1, 9092));
        s.brokers.push(endpoint(2, 9093));
        s
    }

    /// `__consumer_offsets` with 3 partitions led by brokers 1, 2 and none.
    fn with_offsets_topic(s: Snapshot) -> Snapshot {
        let partitions = [1, 2, -1]
            .iter()
            .enumerate()
            .map(|(p, leader)| PartitionState {
                partition: p as i32,
                leader: BrokerId(*leader),
                leader_epoch: LeaderEpoch(0),
                replicas: vec![],
                isr: vec![],
                offline_replicas: vec![],
            })
            .collect();
        s.with_topic(TopicState {
            name: OFFSETS_TOPIC.into(),
            topic_id: uuid::Uuid::from_u128(7),
            is_internal: true,
            partitions,
            configs: Default::default(),
        })
    }

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            let key = StrBytes::from_static_str("g");
            let req = FindCoordinatorRequest::default().with_key_type(KEY_TYPE_GROUP);
            if v >= FIRST_BATCHED {
                req.with_coordinator_keys(vec![key.clone(), key])
            } else {
                req.with_key(key)
            }
        });
    }

    /// See `init_producer_id`'s test of the same name.
    #[test]
    fn an_overlong_tag_varint_is_refused() {
        let body = [2, b'g', 0, 1, 0xe0, 0xff, 0xff, 0xff, 0xff, 1, 0];
        assert!(decode_request(Bytes::copy_from_slice(&body), 3).is_err());
        assert!(decode_request(Bytes::copy_from_slice(&[2, b'g', 0, 0]), 3).is_ok());
    }

    crate::protocol::schema::schema_fuzz_test!(API, FindCoordinatorRequest);

    #[test]
    fn without_the_offsets_topic_no_broker_coordinates_a_group() {
        let s = snapshot();
        for group in ["", "g", "console-consumer-12345"] {
            let got = coordinator_for(&s, "PLAINTEXT", 4, KEY_TYPE_GROUP, group).map(|b| b.port);
            assert_eq!(
                got,
                Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
                "group {group:?}"
            );
        }
    }

    #[test]
    fn with_the_offsets_topic_the_leader_of_the_groups_partition_coordinates() {
        let s = with_offsets_topic(snapshot());
        // Find a group for each partition via Kafka's hash rule.
        let group_on = |p: i32| {
            (0..1000)
                .map(|i| format!("group-{i}"))
                .find(|g| coordinator_partition(g, 3) == p)
                .expect("a group on every partition")
        };
        let table = [
            (0, Ok(BrokerId(1))),
            (1, Ok(BrokerId(2))),
            (2, Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)),
        ];
        for (partition, expected) in table {
            let got = coordinator_for(&s, "PLAINTEXT", 6, KEY_TYPE_GROUP, &group_on(partition))
                .map(|b| b.broker_id);
            assert_eq!(got, expected, "partition {partition}");
        }
    }

    #[test]
    fn transaction_keys_have_no_coordinator_and_unknown_key_types_are_invalid() {
        let s = snapshot();
        // (version, key type, answer)
        let table = [
            (
                1,
                KEY_TYPE_TRANSACTION,
                ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ),
            (
                6,
                KEY_TYPE_TRANSACTION,
                ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ),
            (4, KEY_TYPE_SHARE, ErrorCode::INVALID_REQUEST),
            (5, KEY_TYPE_SHARE, ErrorCode::INVALID_REQUEST),
            (6, KEY_TYPE_SHARE, ErrorCode::COORDINATOR_NOT_AVAILABLE),
            (6, 3, ErrorCode::INVALID_REQUEST),
            (6, -1, ErrorCode::INVALID_REQUEST),
            (6, i8::MAX, ErrorCode::INVALID_REQUEST),
        ];
        for (version, key_type, expected) in table {
            assert_eq!(
                coordinator_for(&s, "PLAINTEXT", version, key_type, "k").map(|b| b.broker_id),
                Err(expected),
                "v{version} key type {key_type}"
            );
        }
    }

    #[test]
    fn error_entries_carry_kafkas_no_node() {
        let c = coordinator_entry(
            StrBytes::from_static_str("k"),
            Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
        );
        assert_eq!(
            (c.error_code, c.node_id, c.host.as_str(), c.port),
            (15, kafka_protocol::messages::BrokerId(-1), "", -1)
        );
        let b = endpoint(3, 19092);
        let c = coordinator_entry(StrBytes::from_static_str("k"), Ok(&b));
        assert_eq!(
            (c.error_code, c.node_id, c.host.as_str(), c.port),
            (0, kafka_protocol::messages::BrokerId(3), "host3", 19092)
        );
    }
}
