//! `[drv]` One file per Kafka API. Each declares `VERSIONS` (the range it
//! implements, listed by ApiVersions) and `handle`.
//!
//! The types every handler speaks live here, below the handlers and below
//! `dispatch` (which routes to them): a handler imports this module and
//! the shared pieces it needs (`admin_common`, `config_resources`,
//! `server::auto_create`), never `dispatch` and never another handler.

use std::cell::RefCell;
use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;

use crate::io::local_sync::FifoTicket;
use crate::protocol::decode::DecodeError;
use crate::protocol::header::RequestHeader;
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub mod acl_common;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod admin_common;
pub mod allocate_producer_ids;
pub mod alter_client_quotas;
pub mod alter_configs;
pub mod alter_partition;
pub mod alter_partition_reassignments;
pub mod alter_replica_log_dirs;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod authz;
pub mod config_resources;
pub mod controlled_shutdown;
pub mod create_acls;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod group_common;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod join_group;
pub mod leader_and_isr;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod quota_common;
pub mod sasl_authenticate;
pub mod sasl_handshake;
pub mod stop_replica;
pub mod sync_group;
pub mod txn_common;
pub mod txn_offset_commit;
pub mod update_features;
pub mod update_metadata;
pub mod write_txn_markers;

/// A decoded request header and its still-encoded body.
#[derive(Debug)]
pub struct Request {
    pub header: RequestHeader,
    pub body: Bytes,
    /// "/" + the client's address (what group membership reports).
    pub client_host: Rc<str>,
    /// Kafka's principal of the connection (`User:ANONYMOUS`, from an
    /// SSL client certificate via `ssl.principal.mapping.rules`, or
    /// `User:<authorization id>` after SASL).
    pub principal: Rc<str>,
    /// The name of the listener the connection came in on (Kafka's
    /// `RequestContext.listenerName`): Metadata, FindCoordinator and
    /// DescribeCluster answer with the endpoints of that name.
    pub listener: Rc<str>,
    /// A Produce request's place in its connection's produce order, taken
    /// as the request was read (`produce::handle` says why); `None` for
    /// other requests.
    pub produce_turn: Option<FifoTicket>,
    /// The connection's authorization decisions under the shard's current
    /// ACLs ([`crate::acl::decisions`]).
    pub decisions: Rc<RefCell<crate::acl::decisions::Decisions>>,
}

/// What a handler produces.
#[derive(Debug)]
pub enum Response {
    /// The encoded response body (without size prefix or header), as parts.
    Body(Vec<OutPart>),
    /// No response at all (Produce with acks=0).
    NoResponse,
    /// A response whose client is over its quota (KIP-219): sent at once,
    /// then the connection reads nothing more for `throttle_ms`.
    Throttled {
        parts: Vec<OutPart>,
        throttle_ms: u64,
    },
    /// No response (acks=0) from a client over its quota: the connection
    /// reads nothing more for `throttle_ms`.
    MuteOnly { throttle_ms: u64 },
}

/// A request the handler cannot serve; Kafka closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    #[error("malformed request body: {0}")]
    Malformed(String),
    #[error("cannot encode response: {0}")]
    Encode(String),
}

/// A body the protocol layer refused to decode closes the connection.
impl From<DecodeError> for HandlerError {
    fn from(e: DecodeError) -> Self {
        HandlerError::Malformed(e.to_string())
    }
}

/// Every handler's signature: `handle(ctx, request)`.
pub type HandlerFn = fn(Rc<ShardContext>, Request) -> BoxedLocal<Result<Response, HandlerError>>;
