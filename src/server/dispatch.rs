//! `[drv]` Request dispatch: THE table of supported APIs.
//!
//! Each row names a Kafka API, the version range its handler file declares,
//! and the handler. ApiVersions advertises exactly these rows. To add an API:
//! write `handlers/<api>.rs` with `VERSIONS` and `handle`, add a row.

use kafka_protocol::messages::ApiKey;

use super::handlers::{self, HandlerFn};
use super::out::OutPart;
use crate::protocol::header::{response_head, response_header_version, RequestHeader};
use crate::protocol::ApiRange;

/// One supported API.
pub struct Route {
    pub range: ApiRange,
    pub handle: HandlerFn,
}

/// The supported APIs. librdkafka infers features from the whole list
/// (PLATFORM.md), so only list what is implemented.
pub const ROUTES: &[Route] = &[
    Route {
        range: handlers::api_versions::VERSIONS,
        handle: handlers::api_versions::handle,
    },
    // Served here only after authentication (ILLEGAL_SASL_STATE); before
    // it on a SASL listener by `server::sasl_conn`.
    Route {
        range: handlers::sasl_handshake::VERSIONS,
        handle: handlers::sasl_handshake::handle,
    },
    Route {
        range: handlers::sasl_authenticate::VERSIONS,
        handle: handlers::sasl_authenticate::handle,
    },
    Route {
        range: handlers::metadata::VERSIONS,
        handle: handlers::metadata::handle,
    },
    Route {
        range: handlers::produce::VERSIONS,
        handle: handlers::produce::handle,
    },
    Route {
        range: handlers::fetch::VERSIONS,
        handle: handlers::fetch::handle,
    },
    Route {
        range: handlers::list_offsets::VERSIONS,
        handle: handlers::list_offsets::handle,
    },
    Route {
        range: handlers::delete_records::VERSIONS,
        handle: handlers::delete_records::handle,
    },
    Route {
        range: handlers::elect_leaders::VERSIONS,
        handle: handlers::elect_leaders::handle,
    },
    Route {
        range: handlers::allocate_producer_ids::VERSIONS,
        handle: handlers::allocate_producer_ids::handle,
    },
    Route {
        range: handlers::describe_acls::VERSIONS,
        handle: handlers::describe_acls::handle,
    },
    Route {
        range: handlers::create_acls::VERSIONS,
        handle: handlers::create_acls::handle,
    },
    Route {
        range: handlers::delete_acls::VERSIONS,
        handle: handlers::delete_acls::handle,
    },
    Route {
        range: handlers::describe_client_quotas::VERSIONS,
        handle: handlers::describe_client_quotas::handle,
    },
    Route {
        range: handlers::alter_client_quotas::VERSIONS,
        handle: handlers::alter_client_quotas::handle,
    },
    Route {
        range: handlers::describe_user_scram_credentials::VERSIONS,
        handle: handlers::describe_user_scram_credentials::handle,
    },
    Route {
        range: handlers::alter_user_scram_credentials::VERSIONS,
        handle: handlers::alter_user_scram_credentials::handle,
    },
    Route {
        range: handlers::alter_partition_reassignments::VERSIONS,
        handle: handlers::alter_partition_reassignments::handle,
    },
    Route {
        range: handlers::list_partition_reassignments::VERSIONS,
        handle: handlers::list_partition_reassignments::handle,
    },
    // --- log dirs (KIP-113) ---
    Route {
        range: handlers::describe_log_dirs::VERSIONS,
        handle: handlers::describe_log_dirs::handle,
    },
    Route {
        range: handlers::alter_replica_log_dirs::VERSIONS,
        handle: handlers::alter_replica_log_dirs::handle,
    },
    Route {
        range: handlers::offset_for_leader_epoch::VERSIONS,
        handle: handlers::offset_for_leader_epoch::handle,
    },
    Route {
        range: handlers::find_coordinator::VERSIONS,
        handle: handlers::find_coordinator::handle,
    },
    // --- consumer groups ---
    Route {
        range: handlers::join_group::VERSIONS,
        handle: handlers::join_group::handle,
    },
    Route {
        range: handlers::sync_group::VERSIONS,
        handle: handlers::sync_group::handle,
    },
    Route {
        range: handlers::heartbeat::VERSIONS,
        handle: handlers::heartbeat::handle,
    },
    Route {
        range: handlers::leave_group::VERSIONS,
        handle: handlers::leave_group::handle,
    },
    Route {
        range: handlers::offset_commit::VERSIONS,
        handle: handlers::offset_commit::handle,
    },
    Route {
        range: handlers::offset_fetch::VERSIONS,
        handle: handlers::offset_fetch::handle,
    },
    Route {
        range: handlers::describe_groups::VERSIONS,
        handle: handlers::describe_groups::handle,
    },
    Route {
        range: handlers::list_groups::VERSIONS,
        handle: handlers::list_groups::handle,
    },
    Route {
        range: handlers::delete_groups::VERSIONS,
        handle: handlers::delete_groups::handle,
    },
    Route {
        range: handlers::offset_delete::VERSIONS,
        handle: handlers::offset_delete::handle,
    },
    // --- topic admin ---
    Route {
        range: handlers::create_topics::VERSIONS,
        handle: handlers::create_topics::handle,
    },
    Route {
        range: handlers::delete_topics::VERSIONS,
        handle: handlers::delete_topics::handle,
    },
    Route {
        range: handlers::create_partitions::VERSIONS,
        handle: handlers::create_partitions::handle,
    },
    Route {
        range: handlers::describe_configs::VERSIONS,
        handle: handlers::describe_configs::handle,
    },
    Route {
        range: handlers::alter_configs::VERSIONS,
        handle: handlers::alter_configs::handle,
    },
    Route {
        range: handlers::incremental_alter_configs::VERSIONS,
        handle: handlers::incremental_alter_configs::handle,
    },
    Route {
        range: handlers::init_producer_id::VERSIONS,
        handle: handlers::init_producer_id::handle,
    },
    Route {
        range: handlers::write_txn_markers::VERSIONS,
        handle: handlers::write_txn_markers::handle,
    },
    Route {
        range: handlers::add_partitions_to_txn::VERSIONS,
        handle: handlers::add_partitions_to_txn::handle,
    },
    Route {
        range: handlers::add_offsets_to_txn::VERSIONS,
        handle: handlers::add_offsets_to_txn::handle,
    },
    Route {
        range: handlers::end_txn::VERSIONS,
        handle: handlers::end_txn::handle,
    },
    Route {
        range: handlers::txn_offset_commit::VERSIONS,
        handle: handlers::txn_offset_commit::handle,
    },
    Route {
        range: handlers::describe_transactions::VERSIONS,
        handle: handlers::describe_transactions::handle,
    },
    Route {
        range: handlers::list_transactions::VERSIONS,
        handle: handlers::list_transactions::handle,
    },
    // --- end topic admin ---
    Route {
        range: handlers::describe_cluster::VERSIONS,
        handle: handlers::describe_cluster::handle,
    },
    // --- features (KIP-584) and producer state (KIP-664) ---
    Route {
        range: handlers::update_features::VERSIONS,
        handle: handlers::update_features::handle,
    },
    Route {
        range: handlers::describe_producers::VERSIONS,
        handle: handlers::describe_producers::handle,
    },
    // --- ZooKeeper mode: controller → broker. A Kafka 3.9 ZK broker lists
    // these in ApiVersions too (`ApiKeys.zkBrokerApis`, ListenerType.ZK_BROKER).
    Route {
        range: handlers::leader_and_isr::VERSIONS,
        handle: handlers::leader_and_isr::handle,
    },
    Route {
        range: handlers::stop_replica::VERSIONS,
        handle: handlers::stop_replica::handle,
    },
    Route {
        range: handlers::update_metadata::VERSIONS,
        handle: handlers::update_metadata::handle,
    },
    // --- broker → controller.
    Route {
        range: handlers::alter_partition::VERSIONS,
        handle: handlers::alter_partition::handle,
    },
    Route {
        range: handlers::controlled_shutdown::VERSIONS,
        handle: handlers::controlled_shutdown::handle,
    },
];

/// The version table ApiVersions advertises.
pub fn api_table() -> Vec<ApiRange> {
    ROUTES.iter().map(|r| r.range).collect()
}

/// How the connection must treat a request before running it.
pub enum Routing {
    Run(HandlerFn),
    /// Kafka closes the connection on a version it does not support
    /// (except ApiVersions, which gets the v0 fallback).
    Close(String),
}

/// Pick the handler for `header`.
pub fn route(header: &RequestHeader) -> Routing {
    let Some(route) = ROUTES.iter().find(|r| r.range.api_key == header.api_key) else {
        return Routing::Close(format!("unsupported api {:?}", header.api_key));
    };
    if route.range.supports(header.api_version) {
        return Routing::Run(route.handle);
    }
    // Kafka (RequestContext.isUnsupportedApiVersionsRequest): any
    // unsupported ApiVersions version gets the v0 fallback.
    if header.api_key == ApiKey::ApiVersions {
        return Routing::Run(handlers::api_versions::handle_unsupported_version);
    }
    Routing::Close(format!(
        "unsupported version {} of {:?} (supported {}..={})",
        header.api_version, header.api_key, route.range.min, route.range.max
    ))
}

/// The APIs whose handlers authorize each request as Kafka 3.9's
/// `KafkaApis` does (SECURITY.md §6). ApiVersions, SaslHandshake and
/// SaslAuthenticate need no authorization.
const AUTHORIZING: &[ApiKey] = &[
    ApiKey::ApiVersions,
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::AlterUserScramCredentials,
    ApiKey::DeleteAcls,
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::InitProducerId,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::DeleteGroups,
    ApiKey::DeleteRecords,
    ApiKey::OffsetDelete,
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::ElectLeaders,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
    ApiKey::DescribeLogDirs,
    ApiKey::AlterReplicaLogDirs,
    ApiKey::AlterClientQuotas,
    ApiKey::DescribeClientQuotas,
    ApiKey::DescribeCluster,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::ListTransactions,
    ApiKey::DescribeTransactions,
    ApiKey::AlterPartition,
    ApiKey::AllocateProducerIds,
    ApiKey::WriteTxnMarkers,
    ApiKey::UpdateFeatures,
    ApiKey::DescribeProducers,
];

/// The ZooKeeper-mode inter-broker APIs whose handlers authorize
/// CLUSTER_ACTION themselves (answering CLUSTER_AUTHORIZATION_FAILED as
/// Kafka's `authorizeClusterOperation` does).
const AUTHORIZING_ZK: &[crate::protocol::api::ZkApi] = &[
    crate::protocol::api::ZkApi::LeaderAndIsr,
    crate::protocol::api::ZkApi::StopReplica,
    crate::protocol::api::ZkApi::UpdateMetadata,
    crate::protocol::api::ZkApi::ControlledShutdown,
];

/// Security never fails open: with the AclAuthorizer on, a request of an
/// API whose handler does not authorize yet is served to `super.users`
/// only; anyone else's closes the connection (the reason, for the
/// warning). `None` when it may run.
pub fn authorization_gap(
    ctx: &crate::shard::ShardContext,
    header: &RequestHeader,
    principal: &str,
) -> Option<String> {
    use crate::protocol::api::Api;
    let policy = &ctx.authorizer;
    let authorizes = AUTHORIZING.iter().any(|k| header.api_key == *k)
        || AUTHORIZING_ZK.iter().any(|k| header.api_key == Api::Zk(*k));
    if !policy.enabled || authorizes || policy.is_super_user(principal) {
        return None;
    }
    Some(format!(
        "{:?} from {principal}: shardlog does not authorize this API yet, only super.users may send it",
        header.api_key
    ))
}

/// Prepend the size prefix and response header to a handler's body parts.
pub fn frame_response(header: &RequestHeader, body: Vec<OutPart>) -> Vec<OutPart> {
    let body_len: usize = body.iter().map(OutPart::len).sum();
    // The ApiVersions v0 fallback answers at v0 whatever was asked.
    let version = if header.api_key == ApiKey::ApiVersions {
        header.api_version.min(handlers::api_versions::VERSIONS.max)
    } else {
        header.api_version
    };
    let head_version = response_header_version(header.api_key, version);
    let mut parts = Vec::with_capacity(body.len() + 1);
    parts.push(OutPart::Bytes(response_head(
        header.correlation_id,
        head_version,
        body_len,
    )));
    parts.extend(body);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::api;

    #[test]
    fn the_route_table_is_consistent_with_the_codec() {
        assert!(
            api::table_problems(&api_table()).is_empty(),
            "{:?}",
            api::table_problems(&api_table())
        );
    }

    fn header(api_key: ApiKey, api_version: i16) -> RequestHeader {
        RequestHeader {
            api_key: api_key.into(),
            api_version,
            correlation_id: 1,
            client_id: None,
            header_version: 1,
        }
    }

    #[test]
    fn unsupported_versions_close_except_api_versions() {
        assert!(matches!(
            route(&header(ApiKey::Metadata, 0)),
            Routing::Run(_)
        ));
        assert!(matches!(
            route(&header(ApiKey::Metadata, 99)),
            Routing::Close(_)
        ));
        assert!(matches!(
            route(&header(ApiKey::ApiVersions, 99)),
            Routing::Run(_)
        ));
        assert!(matches!(
            route(&header(ApiKey::ApiVersions, -1)),
            Routing::Run(_)
        ));
        assert!(matches!(
            route(&header(ApiKey::CreateDelegationToken, 0)),
            Routing::Close(_)
        ));
    }
}
