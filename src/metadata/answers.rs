//! `[pure]` ApiVersions and Metadata answers built from a [`Snapshot`].
//!
//! Handlers decode the request, call into here, and encode what comes back;
//! everything here is deterministic and tested without sockets.

use kafka_protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::describe_cluster_response::{
    DescribeClusterBroker, DescribeClusterResponse,
};
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::snapshot::{Snapshot, TopicState};
use crate::protocol::topic_name::is_valid_topic_name;
use crate::protocol::{ApiRange, ErrorCode};

/// ApiVersions answer listing `table`, with `error` (NONE, or
/// UNSUPPORTED_VERSION for the v0 fallback of KIP-511).
///
/// The feature tags (v3+, KIP-584) are what a Kafka 3.9 broker in
/// ZooKeeper mode sends: no SupportedFeatures (`KafkaServer` builds
/// `BrokerFeatures.createEmpty()`), no FinalizedFeatures and
/// FinalizedFeaturesEpoch 0 (the `/feature` znode the controller creates
/// finalizes nothing and is never rewritten, `FeatureZNode`), and
/// ZkMigrationReady false. Only the epoch differs from its default, so it
/// is the one tagged field on the wire (other default-valued tagged
/// fields stay out: librdkafka < 2.2 fails with "Read underflow" on them).
pub fn api_versions_response(table: &[ApiRange], error: ErrorCode) -> ApiVersionsResponse {
    let api_keys = table
        .iter()
        .map(|r| {
            ApiVersion::default()
                .with_api_key(r.api_key.code())
                .with_min_version(r.min)
                .with_max_version(r.max)
        })
        .collect();
    ApiVersionsResponse::default()
        .with_error_code(error.0)
        .with_api_keys(api_keys)
        .with_finalized_features_epoch(FINALIZED_FEATURES_EPOCH)
}

/// The epoch of a ZooKeeper-mode Kafka 3.9 cluster's finalized features:
/// the `/feature` znode's version, 0 as the controller created it
/// (`KafkaController.enableFeatureVersioning`; UpdateFeatures never
/// rewrites it, every update being refused).
pub const FINALIZED_FEATURES_EPOCH: i64 = 0;

/// A Metadata answer plus the topics the caller may try to auto-create
/// (`auto.create.topics.enable` and the request's `allow_auto_topic_creation`).
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataAnswer {
    pub response: MetadataResponse,
    pub auto_create_candidates: Vec<String>,
}

/// Who a Metadata answer is for: the listener the request came in on
/// (Kafka's `request.context.listenerName`), the request version, and
/// whether topic operations were asked for.
#[derive(Debug, Clone, Copy)]
struct Client<'a> {
    listener: &'a str,
    version: i16,
    include_topic_ops: bool,
}

/// Build the Metadata response for `request` at `version`, as a client
/// connected to listener `listener` must see it: brokers at their
/// endpoints of that name only (Kafka's `getAliveBrokerNodes(listenerName)`).
///
/// Kafka's rules (KafkaApis.handleTopicMetadataRequest): a null topic list
/// (v1+) or an empty one at v0 means "all topics"; names are deduplicated;
/// invalid names get INVALID_TOPIC_EXCEPTION, unknown ones
/// UNKNOWN_TOPIC_OR_PARTITION; unknown topic ids (v10+) UNKNOWN_TOPIC_ID.
pub fn metadata_response(
    snapshot: &Snapshot,
    request: &MetadataRequest,
    version: i16,
    listener: &str,
    auto_create_topics_enable: bool,
) -> MetadataAnswer {
    let mut response = MetadataResponse::default();
    response.brokers = snapshot
        .brokers_on(listener)
        .iter()
        .map(|b| {
            let mut broker = MetadataResponseBroker::default();
            broker.node_id = BrokerId(b.broker_id.0);
            broker.host = StrBytes::from_string(b.host.clone());
            broker.port = i32::from(b.port);
            broker.rack = b.rack.clone().map(StrBytes::from_string);
            broker
        })
        .collect();
    response.cluster_id = Some(StrBytes::from_string(snapshot.cluster_id.clone()));
    response.controller_id = BrokerId(snapshot.controller_id.0);
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = ALL_CLUSTER_OPERATIONS;
    }
    let client = Client {
        listener,
        version,
        include_topic_ops: version >= 8 && request.include_topic_authorized_operations,
    };

    let mut auto_create_candidates = Vec::new();
    let all_topics = match &request.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    };
    if all_topics {
        response.topics = snapshot
            .cluster_topics()
            .map(|t| topic_answer(snapshot, t, client))
            .collect();
    } else {
        let allow_auto_create =
            auto_create_topics_enable && (version < 4 || request.allow_auto_topic_creation);
        let mut seen_names: Vec<&str> = Vec::new();
        for requested in request.topics.iter().flatten() {
            let answer = match requested.name.as_ref().map(|n| n.0.as_str()) {
                Some(name) if seen_names.contains(&name) => continue,
                Some(name) => {
                    seen_names.push(name);
                    named_topic_answer(snapshot, name, client, |unknown| {
                        if allow_auto_create {
                            auto_create_candidates.push(unknown.to_owned());
                        }
                    })
                }
                None => id_topic_answer(snapshot, requested.topic_id, client),
            };
            response.topics.push(answer);
        }
    }
    MetadataAnswer {
        response,
        auto_create_candidates,
    }
}

fn named_topic_answer(
    snapshot: &Snapshot,
    name: &str,
    client: Client<'_>,
    mut on_unknown: impl FnMut(&str),
) -> MetadataResponseTopic {
    if let Some(topic) = snapshot.cluster_topic(name) {
        return topic_answer(snapshot, topic, client);
    }
    let mut answer = MetadataResponseTopic::default();
    answer.name = Some(TopicName(StrBytes::from_string(name.to_owned())));
    answer.error_code = if is_valid_topic_name(name) {
        on_unknown(name);
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0
    } else {
        ErrorCode::INVALID_TOPIC_EXCEPTION.0
    };
    answer
}

fn id_topic_answer(
    snapshot: &Snapshot,
    topic_id: Uuid,
    client: Client<'_>,
) -> MetadataResponseTopic {
    match snapshot.cluster_topic_by_id(topic_id) {
        Some(topic) => topic_answer(snapshot, topic, client),
        None => {
            let mut answer = MetadataResponseTopic::default();
            answer.name = None;
            answer.topic_id = topic_id;
            answer.error_code = ErrorCode::UNKNOWN_TOPIC_ID.0;
            answer
        }
    }
}

fn topic_answer(
    snapshot: &Snapshot,
    topic: &TopicState,
    client: Client<'_>,
) -> MetadataResponseTopic {
    let mut answer = MetadataResponseTopic::default();
    answer.name = Some(TopicName(StrBytes::from_string(topic.name.to_string())));
    answer.topic_id = topic.topic_id;
    answer.is_internal = topic.is_internal;
    if client.include_topic_ops {
        answer.topic_authorized_operations = ALL_TOPIC_OPERATIONS;
    }
    answer.partitions = topic
        .partitions
        .iter()
        .map(|p| {
            let mut partition = MetadataResponsePartition::default();
            // Kafka reports LEADER_NOT_AVAILABLE, leader -1, for a partition
            // without a live leader (none, or one not among the live
            // brokers: `ZkMetadataCache.getPartitionMetadata`), and the rest
            // of the state as known. A live leader without an endpoint on
            // the client's listener is LISTENER_NOT_FOUND from v6 on
            // (`errorUnavailableListeners`), LEADER_NOT_AVAILABLE before.
            let alive = p.leader != crate::types::BrokerId::NONE && snapshot.broker_alive(p.leader);
            let live_leader = alive && snapshot.broker_on(client.listener, p.leader).is_some();
            partition.error_code = if live_leader {
                ErrorCode::NONE.0
            } else if alive && client.version >= 6 {
                ErrorCode::LISTENER_NOT_FOUND.0
            } else {
                ErrorCode::LEADER_NOT_AVAILABLE.0
            };
            partition.partition_index = p.partition;
            partition.leader_id = BrokerId(if live_leader { p.leader.0 } else { -1 });
            partition.leader_epoch = p.leader_epoch.0;
            partition.replica_nodes = p.replicas.iter().map(|b| BrokerId(b.0)).collect();
            partition.isr_nodes = p.isr.iter().map(|b| BrokerId(b.0)).collect();
            partition.offline_replicas = p.offline_replicas.iter().map(|b| BrokerId(b.0)).collect();
            partition
        })
        .collect();
    answer
}

/// `EndpointType` (KIP-919): 1 = brokers, 2 = controllers.
const ENDPOINT_TYPE_BROKER: i8 = 1;
const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

/// The DescribeCluster answer (KIP-700) at `version`, following Kafka 3.9's
/// `AuthHelper.computeDescribeClusterResponse` for a ZooKeeper-mode broker
/// (its endpoint type is BROKER): an unknown endpoint type gets
/// UNSUPPORTED_ENDPOINT_TYPE, the controllers' type MISMATCHED_ENDPOINT_TYPE
/// (both INVALID_REQUEST at v0, which cannot name a type anyway); a
/// controller id not among the brokers is reported as -1; authorized
/// operations are the schema default (`Int.MinValue`) unless asked for,
/// then every cluster operation (no authorizer). Brokers are listed at
/// their endpoints on the client's `listener`
/// (`getAliveBrokerNodes(request.context.listenerName)`).
pub fn describe_cluster_response(
    snapshot: &Snapshot,
    request: &DescribeClusterRequest,
    version: i16,
    listener: &str,
) -> DescribeClusterResponse {
    let mut response = DescribeClusterResponse::default();
    response.throttle_time_ms = 0;
    response.endpoint_type = ENDPOINT_TYPE_BROKER;
    let refuse = |code: ErrorCode, message: String| {
        let mut refused = DescribeClusterResponse::default();
        refused.error_code = if version == 0 {
            ErrorCode::INVALID_REQUEST.0
        } else {
            code.0
        };
        refused.error_message = Some(StrBytes::from_string(message));
        refused
    };
    match request.endpoint_type {
        ENDPOINT_TYPE_BROKER => {}
        ENDPOINT_TYPE_CONTROLLER => {
            return refuse(
                ErrorCode::MISMATCHED_ENDPOINT_TYPE,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint \
                 of type CONTROLLER"
                    .into(),
            )
        }
        other => {
            return refuse(
                ErrorCode::UNSUPPORTED_ENDPOINT_TYPE,
                format!("Unsupported endpoint type {other}"),
            )
        }
    }
    response.error_code = ErrorCode::NONE.0;
    response.cluster_id = StrBytes::from_string(snapshot.cluster_id.clone());
    response.brokers = snapshot
        .brokers_on(listener)
        .iter()
        .map(|b| {
            let mut broker = DescribeClusterBroker::default();
            broker.broker_id = BrokerId(b.broker_id.0);
            broker.host = StrBytes::from_string(b.host.clone());
            broker.port = i32::from(b.port);
            broker.rack = b.rack.clone().map(StrBytes::from_string);
            broker
        })
        .collect();
    response.controller_id = if snapshot.broker_alive(snapshot.controller_id) {
        BrokerId(snapshot.controller_id.0)
    } else {
        BrokerId(-1)
    };
    response.cluster_authorized_operations = if request.include_cluster_authorized_operations {
        ALL_CLUSTER_OPERATIONS
    } else {
        i32::MIN
    };
    response
}

/// Operation bit sets (KIP-430, `AclOperation` codes) reported when a
/// client asks for authorized operations. shardlog has no authorizer, so
/// everything is allowed, as on a Kafka broker without `authorizer.class.name`.
const fn ops(codes: &[u8]) -> i32 {
    let mut bits = 0i32;
    let mut i = 0;
    while i < codes.len() {
        bits |= 1 << codes[i];
        i += 1;
    }
    bits
}
/// READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
/// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
const ALL_TOPIC_OPERATIONS: i32 = ops(&[3, 4, 5, 6, 7, 8, 10, 11]);
/// CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
/// ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
const ALL_CLUSTER_OPERATIONS: i32 = ops(&[5, 7, 8, 9, 10, 11, 12]);

#[cfg(test)]
mod tests;
