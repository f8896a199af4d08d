//! The requests each case sends as the user under test, one or two per
//! API of SECURITY.md §6 that a client sends (inter-broker APIs are covered
//! by tests/security_acls.rs), on the resources the cases' ACLs name:
//! topic `acl-t` (and `acl-other`, `zz-hidden`), group `acl-g` (and
//! `zz-g`), transactional id `acl-tx`, the cluster. Requests that would
//! change state are validate-only, aimed at what does not exist, or undone
//! within the case, so every case starts from the same state.

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::alter_configs_request::{self, AlterableConfig};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::incremental_alter_configs_request;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AlterConfigsRequest, BrokerId,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteGroupsRequest, DeleteRecordsRequest,
    DeleteTopicsRequest, DescribeClusterRequest, DescribeConfigsRequest, DescribeGroupsRequest,
    DescribeProducersRequest, DescribeTransactionsRequest, DescribeUserScramCredentialsRequest,
    EndTxnRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    IncrementalAlterConfigsRequest, InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, ListTransactionsRequest, MetadataRequest,
    MetadataResponse, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
    OffsetForLeaderEpochRequest, ProducerId, SyncGroupRequest, TransactionalId,
    TxnOffsetCommitRequest,
};
use kafka_protocol::records::Compression;

use super::acls::s;
use super::{check, check2, Diffs, Pair};
use crate::common::{encode_batch, produce_request, topic_name, FetchSpec, FETCH_VERSION};

fn group(name: &str) -> GroupId {
    GroupId(s(name))
}

fn txn(name: &str) -> TransactionalId {
    TransactionalId(s(name))
}

/// Every request of one case, compared as `<case>.<request>`.
pub fn battery(p: &mut Pair, d: &mut Diffs, case: &str) {
    metadata(p, d, case);
    data_path(p, d, case);
    groups(p, d, case);
    transactions(p, d, case);
    topic_admin(p, d, case);
    configs(p, d, case);
    cluster_admin(p, d, case);
    super::cluster_ops::battery(p, d, case);
    super::acls::create_and_delete(p, d, case);
}

fn sort_topics(r: &mut MetadataResponse) {
    r.topics
        .sort_by_key(|t| t.name.as_ref().map(|n| n.0.to_string()));
}

fn metadata(p: &mut Pair, d: &mut Diffs, case: &str) {
    // All topics (v10: the cluster's and topics' authorized operations,
    // KIP-430): unauthorized topics left out.
    let all = MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false)
        .with_include_cluster_authorized_operations(true)
        .with_include_topic_authorized_operations(true);
    check2(
        p,
        d,
        &format!("{case}.metadata_all"),
        10,
        (&all, &all),
        sort_topics,
    );
    // Named: an unauthorized one answered TOPIC_AUTHORIZATION_FAILED; an
    // unknown one UNKNOWN_TOPIC_OR_PARTITION only when DESCRIBE is allowed.
    let named = MetadataRequest::default()
        .with_topics(Some(
            ["acl-t", "zz-hidden", "acl-unknown"]
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(topic_name(t))))
                .collect(),
        ))
        .with_allow_auto_topic_creation(false)
        .with_include_topic_authorized_operations(true);
    check2(
        p,
        d,
        &format!("{case}.metadata_named"),
        12,
        (&named, &named),
        sort_topics,
    );
}

fn data_path(p: &mut Pair, d: &mut Diffs, case: &str) {
    let records = encode_batch(&[(Some(b"k"), b"v", 1_000)], Compression::None);
    for topic in ["acl-t", "acl-other"] {
        let req = produce_request(topic, 0, records.clone(), -1);
        check(p, d, &format!("{case}.produce.{topic}"), 9, &req);
    }
    let mut spec = FetchSpec::new("acl-t", 0, 0);
    spec.max_wait_ms = 0;
    check(
        p,
        d,
        &format!("{case}.fetch"),
        FETCH_VERSION,
        &spec.request(),
    );
    let list = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name("acl-t"))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_current_leader_epoch(-1)
                .with_timestamp(-1)])]);
    check(p, d, &format!("{case}.list_offsets"), 7, &list);
    let epochs = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![OffsetForLeaderTopic::default()
            .with_topic(topic_name("acl-t"))
            .with_partitions(vec![OffsetForLeaderPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(-1)
                .with_leader_epoch(0)])]);
    check(p, d, &format!("{case}.offset_for_leader_epoch"), 4, &epochs);
    let producers = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(topic_name("acl-t"))
        .with_partition_indexes(vec![0])]);
    check(p, d, &format!("{case}.describe_producers"), 0, &producers);
    // KIP-679: IDEMPOTENT_WRITE on the cluster or WRITE on any topic.
    let idempotent = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    check(p, d, &format!("{case}.init_producer_id"), 4, &idempotent);
}

fn groups(p: &mut Pair, d: &mut Diffs, case: &str) {
    for (key_type, key) in [(0, "acl-g"), (1, "acl-tx")] {
        let req = FindCoordinatorRequest::default()
            .with_key_type(key_type)
            .with_coordinator_keys(vec![s(key)]);
        check(p, d, &format!("{case}.find_coordinator.{key}"), 4, &req);
    }
    let commit = OffsetCommitRequest::default()
        .with_group_id(group("acl-g"))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic_name("acl-t"))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(1)
                .with_committed_leader_epoch(-1)])]);
    check(p, d, &format!("{case}.offset_commit"), 8, &commit);
    let fetch = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(group("acl-g"))
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(topic_name("acl-t"))
                .with_partition_indexes(vec![0])])),
        // All partitions: topics without DESCRIBE silently left out.
        OffsetFetchRequestGroup::default()
            .with_group_id(group("acl-g"))
            .with_topics(None),
        OffsetFetchRequestGroup::default()
            .with_group_id(group("zz-g"))
            .with_topics(None),
    ]);
    check(p, d, &format!("{case}.offset_fetch"), 8, &fetch);
    let describe = DescribeGroupsRequest::default()
        .with_groups(vec![group("acl-g"), group("zz-g")])
        .with_include_authorized_operations(true);
    check(p, d, &format!("{case}.describe_groups"), 5, &describe);
    check2(
        p,
        d,
        &format!("{case}.list_groups"),
        4,
        (&ListGroupsRequest::default(), &ListGroupsRequest::default()),
        |r| r.groups.sort_by_key(|g| g.group_id.0.to_string()),
    );
    // A new member: MEMBER_ID_REQUIRED (KIP-394) when READ on the group is
    // allowed; the rest with a member the group does not know.
    let join = JoinGroupRequest::default()
        .with_group_id(group("acl-g"))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(s(""))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from_static(b"\0\0\0\0\0\0"))]);
    check(p, d, &format!("{case}.join_group"), 7, &join);
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(group("acl-g"))
        .with_generation_id(1)
        .with_member_id(s("nobody"));
    check(p, d, &format!("{case}.heartbeat"), 4, &heartbeat);
    let sync = SyncGroupRequest::default()
        .with_group_id(group("acl-g"))
        .with_generation_id(1)
        .with_member_id(s("nobody"))
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(Some(s("range")));
    check(p, d, &format!("{case}.sync_group"), 5, &sync);
    let leave = LeaveGroupRequest::default()
        .with_group_id(group("acl-g"))
        .with_members(vec![MemberIdentity::default().with_member_id(s("nobody"))]);
    check(p, d, &format!("{case}.leave_group"), 4, &leave);
    let delete = DeleteGroupsRequest::default().with_groups_names(vec![group("acl-g-none")]);
    check(p, d, &format!("{case}.delete_groups"), 2, &delete);
    // OffsetDelete of a partition the group has an offset for: deleted
    // when allowed, then committed again for the next case.
    let offset_delete = OffsetDeleteRequest::default()
        .with_group_id(group("acl-g"))
        .with_topics(vec![OffsetDeleteRequestTopic::default()
            .with_name(topic_name("acl-t"))
            .with_partitions(vec![
                OffsetDeleteRequestPartition::default().with_partition_index(0)
            ])]);
    check(p, d, &format!("{case}.offset_delete"), 0, &offset_delete);
    check(p, d, &format!("{case}.offset_commit_again"), 8, &commit);
}

fn transactions(p: &mut Pair, d: &mut Diffs, case: &str) {
    let init = InitProducerIdRequest::default()
        .with_transactional_id(Some(txn("acl-tx")))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let (a, b) = check2(
        p,
        d,
        &format!("{case}.init_producer_id.acl-tx"),
        4,
        (&init, &init),
        |_| {},
    );
    // Each broker's own producer id and epoch from here on.
    let ids = [
        (a.producer_id, a.producer_epoch),
        (b.producer_id, b.producer_epoch),
    ];
    // v3: the client's form (v4+ is broker-only, CLUSTER_ACTION).
    let add = ids.map(|(pid, epoch)| {
        AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(txn("acl-tx"))
            .with_v3_and_below_producer_id(pid)
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(topic_name("acl-t"))
                    .with_partitions(vec![0]),
                AddPartitionsToTxnTopic::default()
                    .with_name(topic_name("zz-hidden"))
                    .with_partitions(vec![0]),
            ])
    });
    check2(
        p,
        d,
        &format!("{case}.add_partitions_to_txn"),
        3,
        (&add[0], &add[1]),
        |_| {},
    );
    let offsets = ids.map(|(pid, epoch)| {
        AddOffsetsToTxnRequest::default()
            .with_transactional_id(txn("acl-tx"))
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_group_id(group("acl-g"))
    });
    check2(
        p,
        d,
        &format!("{case}.add_offsets_to_txn"),
        3,
        (&offsets[0], &offsets[1]),
        |_| {},
    );
    let commit = ids.map(|(pid, epoch)| {
        TxnOffsetCommitRequest::default()
            .with_transactional_id(txn("acl-tx"))
            .with_group_id(group("acl-g"))
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_generation_id(-1)
            .with_member_id(s(""))
            .with_topics(vec![TxnOffsetCommitRequestTopic::default()
                .with_name(topic_name("acl-t"))
                .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(1)
                    .with_committed_leader_epoch(-1)])])
    });
    check2(
        p,
        d,
        &format!("{case}.txn_offset_commit"),
        3,
        (&commit[0], &commit[1]),
        |_| {},
    );
    describe_transactions(p, d, case);
    let end = ids.map(|(pid, epoch)| {
        EndTxnRequest::default()
            .with_transactional_id(txn("acl-tx"))
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_committed(false)
    });
    check2(
        p,
        d,
        &format!("{case}.end_txn"),
        3,
        (&end[0], &end[1]),
        |_| {},
    );
}

/// DescribeTransactions / ListTransactions while `acl-tx` is ongoing.
fn describe_transactions(p: &mut Pair, d: &mut Diffs, case: &str) {
    let describe =
        DescribeTransactionsRequest::default().with_transactional_ids(vec![txn("acl-tx")]);
    check(p, d, &format!("{case}.describe_transactions"), 0, &describe);
    check2(
        p,
        d,
        &format!("{case}.list_transactions"),
        0,
        (
            &ListTransactionsRequest::default(),
            &ListTransactionsRequest::default(),
        ),
        |r| {
            r.transaction_states
                .sort_by_key(|t| t.transactional_id.0.to_string())
        },
    );
}

fn topic_admin(p: &mut Pair, d: &mut Diffs, case: &str) {
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_validate_only(true)
        .with_topics(
            ["acl-new", "zz-new"]
                .iter()
                .map(|t| {
                    CreatableTopic::default()
                        .with_name(topic_name(t))
                        .with_num_partitions(1)
                        .with_replication_factor(1)
                })
                .collect(),
        );
    // The configs a topic would get are compared in
    // tests/differential_kafka.rs (the config tables differ in size).
    check2(
        p,
        d,
        &format!("{case}.create_topics"),
        7,
        (&create, &create),
        |r| {
            for t in &mut r.topics {
                t.configs = None;
            }
        },
    );
    let delete = DeleteTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![
            DeleteTopicState::default().with_name(Some(topic_name("acl-gone")))
        ]);
    check(p, d, &format!("{case}.delete_topics"), 6, &delete);
    let partitions = CreatePartitionsRequest::default()
        .with_timeout_ms(30_000)
        .with_validate_only(true)
        .with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(topic_name("acl-t"))
                .with_count(2),
            CreatePartitionsTopic::default()
                .with_name(topic_name("zz-hidden"))
                .with_count(2),
        ]);
    check(p, d, &format!("{case}.create_partitions"), 3, &partitions);
    let records = DeleteRecordsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![DeleteRecordsTopic::default()
            .with_name(topic_name("acl-t"))
            .with_partitions(vec![DeleteRecordsPartition::default()
                .with_partition_index(0)
                .with_offset(0)])]);
    check(p, d, &format!("{case}.delete_records"), 2, &records);
}

fn configs(p: &mut Pair, d: &mut Diffs, case: &str) {
    let describe = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("acl-t"))
            .with_configuration_keys(Some(vec![s("cleanup.policy")])),
        DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s("0"))
            .with_configuration_keys(Some(vec![s("num.partitions")])),
    ]);
    check(p, d, &format!("{case}.describe_configs"), 4, &describe);
    let alter = AlterConfigsRequest::default()
        .with_validate_only(true)
        .with_resources(vec![alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("acl-t"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s("retention.ms"))
                .with_value(Some(s("86400000")))])]);
    check(p, d, &format!("{case}.alter_configs"), 2, &alter);
    let incremental = IncrementalAlterConfigsRequest::default()
        .with_validate_only(true)
        .with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("acl-t"))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(s("retention.ms"))
                        .with_config_operation(0)
                        .with_value(Some(s("86400000"))),
                ]),
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(s("0"))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(s("log.cleaner.threads"))
                        .with_config_operation(0)
                        .with_value(Some(s("1"))),
                ]),
        ]);
    check(
        p,
        d,
        &format!("{case}.incremental_alter_configs"),
        1,
        &incremental,
    );
}

fn cluster_admin(p: &mut Pair, d: &mut Diffs, case: &str) {
    let cluster =
        DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
    check(p, d, &format!("{case}.describe_cluster"), 1, &cluster);
    // Named users: a denied request with a null list makes Kafka 3.9 close
    // the connection (DescribeUserScramCredentialsRequest.getErrorResponse
    // iterates the null list). Neither user has SCRAM credentials.
    let scram = DescribeUserScramCredentialsRequest::default().with_users(Some(
        ["alice", "nobody"]
            .iter()
            .map(|u| UserName::default().with_name(s(u)))
            .collect(),
    ));
    check(
        p,
        d,
        &format!("{case}.describe_user_scram_credentials"),
        0,
        &scram,
    );
}
