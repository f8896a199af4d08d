//! A request as the connection reads it: size-prefixed framing
//! (`protocol::frame`, `socket.request.max.bytes`), the request header
//! (`protocol::header`), routing (`server::dispatch::route`), then the
//! decode the routed handler runs — the schema walk that bounds every
//! array by the bytes left, and the crate's decode. Several frames per
//! input (pipelining). Never panics nor exceeds the memory bound; a
//! header and a body that decode re-encode at the same version to bytes
//! that decode to the same value.
#![no_main]

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{self as m, ApiKey};
use kafka_protocol_39::messages as m39;
use libfuzzer_sys::fuzz_target;
use shardlog::protocol::api::{Api, ZkApi};
use shardlog::protocol::decode::decode_body as decode_wire;
use shardlog::protocol::frame::take_frame;
use shardlog::protocol::header::{decode_request_header, RequestHeader};
use shardlog::server::dispatch::{route, Routing};
use shardlog::server::handlers as h;
use shardlog_fuzz::check_bounded;

/// Kafka's default `socket.request.max.bytes`.
const SOCKET_REQUEST_MAX_BYTES: usize = 104_857_600;

fuzz_target!(|data: &[u8]| {
    check_bounded(data.len(), || {
        let mut buf = BytesMut::from(data);
        while let Ok(Some(mut frame)) = take_frame(&mut buf, SOCKET_REQUEST_MAX_BYTES) {
            let whole = frame.clone();
            let Ok(header) = decode_request_header(&mut frame) else {
                continue;
            };
            header_round_trip(&header, &whole, &frame);
            if let Routing::Run(_) = route(&header) {
                decode_body(&header, frame);
            }
        }
    });
});

/// Re-encode the header at its version: it decodes to the same header and
/// leaves the same body.
fn header_round_trip(header: &RequestHeader, whole: &Bytes, body: &Bytes) {
    let mut wire = m::RequestHeader::default();
    wire.request_api_key = header.api_key.code();
    wire.request_api_version = header.api_version;
    wire.correlation_id = header.correlation_id;
    wire.client_id = header.client_id.clone().map(Into::into);
    let mut out = BytesMut::new();
    if header.header_version == 0 {
        // The fixed part alone (ControlledShutdown v0); the crate encodes
        // header v1–v2 only.
        out.extend_from_slice(&wire.request_api_key.to_be_bytes());
        out.extend_from_slice(&wire.request_api_version.to_be_bytes());
        out.extend_from_slice(&wire.correlation_id.to_be_bytes());
    } else {
        kafka_protocol::protocol::Encodable::encode(&wire, &mut out, header.header_version)
            .expect("a decoded header re-encodes");
    }
    out.extend_from_slice(body);
    let mut again = out.freeze();
    let decoded = decode_request_header(&mut again).expect("a re-encoded header decodes");
    assert_eq!(&decoded, header, "request header does not round-trip");
    assert_eq!(again, *body, "the body after the header moved");
    assert!(whole.len() >= body.len());
}

/// decode → encode → decode → encode gives the same bytes (`kafka-protocol`
/// 0.18). Bytes, not the messages: a float64 field may hold NaN, which
/// is not equal to itself (found by this target in AlterClientQuotas).
fn round_trip<T>(first: &T, version: i16)
where
    T: kafka_protocol::protocol::Decodable + kafka_protocol::protocol::Encodable + Debug,
{
    let mut out = BytesMut::new();
    first
        .encode(&mut out, version)
        .expect("a decoded request re-encodes");
    let wire = out.freeze();
    let again = T::decode(&mut wire.clone(), version).expect("a re-encoded request decodes");
    let mut out = BytesMut::new();
    again.encode(&mut out, version).expect("it re-encodes again");
    assert_eq!(out.freeze(), wire, "v{version} request does not round-trip: {first:?}");
}

/// The same with the Kafka 3.9 codec (`kafka-protocol` 0.15.1).
fn round_trip_39<T>(body: &Bytes, version: i16)
where
    T: kafka_protocol_39::protocol::Decodable + kafka_protocol_39::protocol::Encodable + Debug,
{
    // Only called once the handler's checked decode accepted `body`.
    let first = T::decode(&mut body.clone(), version).expect("the handler's decode accepted it");
    let mut out = BytesMut::new();
    first
        .encode(&mut out, version)
        .expect("a decoded request re-encodes");
    let wire = out.freeze();
    let again = T::decode(&mut wire.clone(), version).expect("a re-encoded request decodes");
    let mut out = BytesMut::new();
    again.encode(&mut out, version).expect("it re-encodes again");
    assert_eq!(out.freeze(), wire, "v{version} request does not round-trip: {first:?}");
}

/// What the handler for `header.api_key` decodes, as its `handle` does.
fn decode_body(header: &RequestHeader, body: Bytes) {
    let v = header.api_version;
    macro_rules! checked {
        ($module:ident, $ty:ty) => {
            if let Ok(r) = h::$module::API.decode::<$ty>(body, v) {
                round_trip(&r, v);
            }
        };
    }
    match header.api_key {
        // The body is informational; the handler does not decode it.
        Api::Kafka(ApiKey::ApiVersions) => {}
        Api::Kafka(ApiKey::Metadata) => {
            if let Ok(r) = h::metadata::decode_request(body, v) {
                round_trip(&r, v);
            }
        }
        Api::Kafka(ApiKey::Produce) => {
            if v > h::produce::LAST_OF_THE_39_CODEC {
                checked!(produce, m::ProduceRequest);
            } else if h::produce::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::ProduceRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::Fetch) => {
            if v > h::fetch::LAST_OF_THE_39_CODEC {
                checked!(fetch, m::FetchRequest);
            } else if h::fetch::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::FetchRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::ListOffsets) if v == 0 => {
            if h::list_offsets::decode_v0(body.clone()).is_ok() {
                round_trip_39::<m39::ListOffsetsRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::ListOffsets) => checked!(list_offsets, m::ListOffsetsRequest),
        Api::Kafka(ApiKey::DeleteRecords) => checked!(delete_records, m::DeleteRecordsRequest),
        Api::Kafka(ApiKey::ElectLeaders) => checked!(elect_leaders, m::ElectLeadersRequest),
        Api::Kafka(ApiKey::DescribeLogDirs) => {
            if h::describe_log_dirs::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::DescribeLogDirsRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::AlterReplicaLogDirs) => {
            if h::alter_replica_log_dirs::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::AlterReplicaLogDirsRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::AllocateProducerIds) => {
            checked!(allocate_producer_ids, m::AllocateProducerIdsRequest)
        }
        Api::Kafka(ApiKey::DescribeClientQuotas) => {
            checked!(describe_client_quotas, m::DescribeClientQuotasRequest)
        }
        Api::Kafka(ApiKey::AlterClientQuotas) => {
            checked!(alter_client_quotas, m::AlterClientQuotasRequest)
        }
        Api::Kafka(ApiKey::AlterPartitionReassignments) => checked!(
            alter_partition_reassignments,
            m::AlterPartitionReassignmentsRequest
        ),
        Api::Kafka(ApiKey::ListPartitionReassignments) => checked!(
            list_partition_reassignments,
            m::ListPartitionReassignmentsRequest
        ),
        Api::Kafka(ApiKey::OffsetForLeaderEpoch) => {
            if h::offset_for_leader_epoch::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::OffsetForLeaderEpochRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::FindCoordinator) => {
            if let Ok(r) = h::find_coordinator::decode_request(body, v) {
                round_trip(&r, v);
            }
        }
        Api::Kafka(ApiKey::JoinGroup) => checked!(join_group, m::JoinGroupRequest),
        Api::Kafka(ApiKey::SyncGroup) => checked!(sync_group, m::SyncGroupRequest),
        Api::Kafka(ApiKey::Heartbeat) => checked!(heartbeat, m::HeartbeatRequest),
        Api::Kafka(ApiKey::LeaveGroup) => checked!(leave_group, m::LeaveGroupRequest),
        Api::Kafka(ApiKey::OffsetCommit) => {
            if h::offset_commit::decode_request(body.clone(), v).is_ok() {
                if v > h::offset_commit::LAST_OF_THE_39_CODEC {
                    checked!(offset_commit, m::OffsetCommitRequest);
                } else {
                    round_trip_39::<m39::OffsetCommitRequest>(&body, v);
                }
            }
        }
        Api::Kafka(ApiKey::OffsetFetch) => {
            if v == h::offset_fetch::STORED_IN_ZOOKEEPER {
                if h::offset_fetch::decode_v0(body.clone()).is_ok() {
                    round_trip_39::<m39::OffsetFetchRequest>(&body, v);
                }
            } else {
                checked!(offset_fetch, m::OffsetFetchRequest);
            }
        }
        Api::Kafka(ApiKey::DescribeGroups) => checked!(describe_groups, m::DescribeGroupsRequest),
        Api::Kafka(ApiKey::ListGroups) => checked!(list_groups, m::ListGroupsRequest),
        Api::Kafka(ApiKey::DeleteGroups) => checked!(delete_groups, m::DeleteGroupsRequest),
        Api::Kafka(ApiKey::OffsetDelete) => checked!(offset_delete, m::OffsetDeleteRequest),
        // v0 and v1 are decoded as v2 (v0 with validate_only appended).
        Api::Kafka(ApiKey::CreateTopics) => {
            if let Ok(r) = h::create_topics::decode_request(body, v) {
                round_trip(&r, v.max(2));
            }
        }
        // v0 is decoded as v1.
        Api::Kafka(ApiKey::DeleteTopics) => {
            if let Ok(r) = h::delete_topics::decode_request(body, v) {
                round_trip(&r, v.max(1));
            }
        }
        Api::Kafka(ApiKey::CreatePartitions) => {
            checked!(create_partitions, m::CreatePartitionsRequest)
        }
        // v0 is decoded as v1 (include_synonyms appended).
        Api::Kafka(ApiKey::DescribeConfigs) => {
            if let Ok(r) = h::describe_configs::decode_request(body, v) {
                round_trip(&r, v.max(1));
            }
        }
        Api::Kafka(ApiKey::UpdateFeatures) => {
            checked!(update_features, m::UpdateFeaturesRequest)
        }
        Api::Kafka(ApiKey::DescribeProducers) => {
            checked!(describe_producers, m::DescribeProducersRequest)
        }
        Api::Kafka(ApiKey::AlterConfigs) => checked!(alter_configs, m::AlterConfigsRequest),
        Api::Kafka(ApiKey::IncrementalAlterConfigs) => {
            checked!(incremental_alter_configs, m::IncrementalAlterConfigsRequest)
        }
        Api::Kafka(ApiKey::InitProducerId) => {
            if let Ok(r) = h::init_producer_id::decode_request(body, v) {
                round_trip(&r, v);
            }
        }
        Api::Kafka(ApiKey::DescribeCluster) => {
            if let Ok(r) = h::describe_cluster::decode_request(body, v) {
                round_trip(&r, v);
            }
        }
        Api::Kafka(ApiKey::AlterPartition) => {
            let known = |_: &str| Some(uuid_of_name());
            if h::alter_partition::decode_request(body.clone(), v, known).is_ok() {
                round_trip_39::<m39::AlterPartitionRequest>(&body, v);
            }
        }
        Api::Zk(ZkApi::LeaderAndIsr) => {
            if h::leader_and_isr::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::LeaderAndIsrRequest>(&body, v);
            }
        }
        Api::Zk(ZkApi::StopReplica) => {
            if h::stop_replica::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::StopReplicaRequest>(&body, v);
            }
        }
        Api::Zk(ZkApi::UpdateMetadata) => {
            if h::update_metadata::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::UpdateMetadataRequest>(&body, v);
            }
        }
        Api::Zk(ZkApi::ControlledShutdown) => {
            if h::controlled_shutdown::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::ControlledShutdownRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::WriteTxnMarkers) => {
            if h::write_txn_markers::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::WriteTxnMarkersRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::AddPartitionsToTxn) => {
            if h::add_partitions_to_txn::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::AddPartitionsToTxnRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::AddOffsetsToTxn) => {
            if h::add_offsets_to_txn::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::AddOffsetsToTxnRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::EndTxn) => {
            if h::end_txn::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::EndTxnRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::TxnOffsetCommit) => {
            if h::txn_offset_commit::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::TxnOffsetCommitRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::DescribeTransactions) => {
            if h::describe_transactions::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::DescribeTransactionsRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::ListTransactions) => {
            if h::list_transactions::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::ListTransactionsRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::SaslHandshake) => {
            if let Ok(r) = decode_wire::<m::SaslHandshakeRequest>(&mut body.clone(), v) {
                round_trip(&r, v);
            }
        }
        Api::Kafka(ApiKey::SaslAuthenticate) => {
            if let Ok(r) = decode_wire::<m::SaslAuthenticateRequest>(&mut body.clone(), v) {
                round_trip(&r, v);
            }
        }
        Api::Kafka(ApiKey::DescribeUserScramCredentials) => checked!(
            describe_user_scram_credentials,
            m::DescribeUserScramCredentialsRequest
        ),
        Api::Kafka(ApiKey::AlterUserScramCredentials) => checked!(
            alter_user_scram_credentials,
            m::AlterUserScramCredentialsRequest
        ),
        Api::Kafka(ApiKey::DescribeAcls) => {
            if h::describe_acls::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::DescribeAclsRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::CreateAcls) => {
            if h::create_acls::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::CreateAclsRequest>(&body, v);
            }
        }
        Api::Kafka(ApiKey::DeleteAcls) => {
            if h::delete_acls::decode_request(body.clone(), v).is_ok() {
                round_trip_39::<m39::DeleteAclsRequest>(&body, v);
            }
        }
        Api::Kafka(other) => panic!("{other:?} is routed but the fuzz target does not decode it"),
    }
}

/// Every name resolves (v0–v1 AlterPartition), so the whole body is read.
fn uuid_of_name() -> uuid::Uuid {
    uuid::Uuid::from_u128(1)
}
