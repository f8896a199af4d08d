//! The cluster-level admin APIs of SECURITY.md §6 that the other request
//! groups leave out: AlterReplicaLogDirs (34), DescribeLogDirs (35),
//! ElectLeaders (43), AlterPartitionReassignments (45),
//! ListPartitionReassignments (46), DescribeClientQuotas (48),
//! AlterClientQuotas (49), AlterUserScramCredentials (51) and
//! UpdateFeatures (57). Each checks one operation on the `kafka-cluster`
//! resource (Kafka's `KafkaApis`: ALTER, DESCRIBE, DESCRIBE_CONFIGS or
//! ALTER_CONFIGS); the cases give none, DESCRIBE, a DENY of DESCRIBE, ALTER
//! and ALTER_CONFIGS (which imply DESCRIBE and DESCRIBE_CONFIGS,
//! `AclAuthorizer`'s implied operations), or the super user. When allowed,
//! every request is one that changes nothing: a move to a log dir that is
//! not configured, a preferred election of the partition's leader, the
//! cancelling of a reassignment that is not in progress, a validate-only
//! quota, the deletion of a SCRAM credential that does not exist, a
//! validate-only update of a feature no broker supports.

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialDeletion;
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterPartitionReassignmentsRequest, AlterReplicaLogDirsRequest,
    AlterUserScramCredentialsRequest, DescribeClientQuotasRequest, DescribeLogDirsRequest,
    ElectLeadersRequest, ListPartitionReassignmentsRequest, UpdateFeaturesRequest,
};

use super::acls::s;
use super::{check, Diffs, Pair};
use crate::common::topic_name;

/// Every request of this group, compared as `<case>.<request>`.
pub fn battery(p: &mut Pair, d: &mut Diffs, case: &str) {
    log_dirs(p, d, case);
    leaders_and_reassignments(p, d, case);
    quotas(p, d, case);
    scram_and_features(p, d, case);
}

/// AlterReplicaLogDirs (ALTER on the cluster; else every partition
/// CLUSTER_AUTHORIZATION_FAILED) to a path that is not in `log.dirs`
/// (`LogManager.isLogDirOnline`: LOG_DIR_NOT_FOUND), and DescribeLogDirs
/// (DESCRIBE on the cluster; else no results and a top-level
/// CLUSTER_AUTHORIZATION_FAILED, v3+) of `acl-t`'s partition.
fn log_dirs(p: &mut Pair, d: &mut Diffs, case: &str) {
    let alter =
        AlterReplicaLogDirsRequest::default().with_dirs(vec![AlterReplicaLogDir::default()
            .with_path(s("/shardlog-acl-no-such-dir"))
            .with_topics(vec![AlterReplicaLogDirTopic::default()
                .with_name(topic_name("acl-t"))
                .with_partitions(vec![0])])]);
    check(p, d, &format!("{case}.alter_replica_log_dirs"), 2, &alter);
    let describe =
        DescribeLogDirsRequest::default()
            .with_topics(Some(vec![DescribableLogDirTopic::default()
                .with_topic(topic_name("acl-t"))
                .with_partitions(vec![0])]));
    check(p, d, &format!("{case}.describe_log_dirs"), 4, &describe);
}

/// ElectLeaders (ALTER on the cluster, checked before the controller) of
/// the preferred leader `acl-t-0` already has (ELECTION_NOT_NEEDED);
/// AlterPartitionReassignments (ALTER, thrown) cancelling a reassignment
/// that is not in progress (NO_REASSIGNMENT_IN_PROGRESS);
/// ListPartitionReassignments (DESCRIBE, thrown) of all of them (none).
fn leaders_and_reassignments(p: &mut Pair, d: &mut Diffs, case: &str) {
    let elect = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(topic_name("acl-t"))
            .with_partitions(vec![0])]))
        .with_timeout_ms(30_000);
    check(p, d, &format!("{case}.elect_leaders"), 2, &elect);
    let cancel = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(topic_name("acl-t"))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(None)])]);
    check(
        p,
        d,
        &format!("{case}.alter_partition_reassignments"),
        0,
        &cancel,
    );
    let list = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(None);
    check(
        p,
        d,
        &format!("{case}.list_partition_reassignments"),
        0,
        &list,
    );
}

/// DescribeClientQuotas (DESCRIBE_CONFIGS on the cluster) of a user
/// without quotas, and a validate-only AlterClientQuotas (ALTER_CONFIGS;
/// else every entry CLUSTER_AUTHORIZATION_FAILED) of two entries.
fn quotas(p: &mut Pair, d: &mut Diffs, case: &str) {
    let describe = DescribeClientQuotasRequest::default()
        .with_components(vec![ComponentData::default()
            .with_entity_type(s("user"))
            .with_match_type(0)
            .with_match(Some(s("acl-quota-user")))])
        .with_strict(false);
    check(
        p,
        d,
        &format!("{case}.describe_client_quotas"),
        1,
        &describe,
    );
    let entry = |user: &str, key: &str| {
        EntryData::default()
            .with_entity(vec![EntityData::default()
                .with_entity_type(s("user"))
                .with_entity_name(Some(s(user)))])
            .with_ops(vec![OpData::default()
                .with_key(s(key))
                .with_value(1024.0)
                .with_remove(false)])
    };
    let alter = AlterClientQuotasRequest::default()
        .with_validate_only(true)
        .with_entries(vec![
            entry("acl-quota-user", "producer_byte_rate"),
            entry("acl-quota-other", "consumer_byte_rate"),
        ]);
    check(p, d, &format!("{case}.alter_client_quotas"), 1, &alter);
}

/// AlterUserScramCredentials (ALTER on the cluster, after the controller
/// check) deleting credentials that do not exist, users named out of
/// order; UpdateFeatures (ALTER) validating an update of a feature
/// nobody supports.
fn scram_and_features(p: &mut Pair, d: &mut Diffs, case: &str) {
    let scram = AlterUserScramCredentialsRequest::default().with_deletions(
        ["zz-acl-nobody", "acl-nobody"]
            .iter()
            .map(|u| {
                ScramCredentialDeletion::default()
                    .with_name(s(u))
                    .with_mechanism(1)
            })
            .collect(),
    );
    check(
        p,
        d,
        &format!("{case}.alter_user_scram_credentials"),
        0,
        &scram,
    );
    let features = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_validate_only(true)
        .with_feature_updates(vec![FeatureUpdateKey::default()
            .with_feature(s("acl.test.feature"))
            .with_max_version_level(1)
            .with_upgrade_type(1)]);
    check(p, d, &format!("{case}.update_features"), 1, &features);
}
