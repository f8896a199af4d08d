//! `[pure]` Where a response carries `throttle_time_ms`, for the request
//! quota (`request_percentage`, Kafka's `ClientRequestQuotaManager`),
//! which any API's response reports: the APIs whose response body starts
//! with the field (from the version given, per Kafka 3.9's message JSON
//! schemas), and the cluster actions the request quota exempts (Kafka's
//! `maybeRecordExempt` for inter-broker requests). Produce (field last)
//! and ApiVersions (field after the key table) are not listed: their
//! answer carries no request throttle, only the mute.

use kafka_protocol::messages::ApiKey;

use super::api::Api;

/// (API, first version whose response body opens with `throttle_time_ms`).
const LEADS_WITH_THROTTLE: &[(ApiKey, i16)] = &[
    (ApiKey::Fetch, 1),
    (ApiKey::ListOffsets, 2),
    (ApiKey::Metadata, 3),
    (ApiKey::OffsetCommit, 3),
    (ApiKey::OffsetFetch, 3),
    (ApiKey::FindCoordinator, 1),
    (ApiKey::JoinGroup, 2),
    (ApiKey::Heartbeat, 1),
    (ApiKey::LeaveGroup, 1),
    (ApiKey::SyncGroup, 1),
    (ApiKey::DescribeGroups, 1),
    (ApiKey::ListGroups, 1),
    (ApiKey::CreateTopics, 2),
    (ApiKey::DeleteTopics, 1),
    (ApiKey::DeleteRecords, 0),
    (ApiKey::InitProducerId, 0),
    (ApiKey::OffsetForLeaderEpoch, 2),
    (ApiKey::DescribeAcls, 0),
    (ApiKey::CreateAcls, 0),
    (ApiKey::DeleteAcls, 0),
    (ApiKey::DescribeConfigs, 0),
    (ApiKey::AlterConfigs, 0),
    (ApiKey::CreatePartitions, 0),
    (ApiKey::DeleteGroups, 0),
    (ApiKey::ElectLeaders, 0),
    (ApiKey::IncrementalAlterConfigs, 0),
    (ApiKey::AlterPartitionReassignments, 0),
    (ApiKey::ListPartitionReassignments, 0),
    (ApiKey::OffsetDelete, 0),
    (ApiKey::DescribeClientQuotas, 0),
    (ApiKey::AlterClientQuotas, 0),
    (ApiKey::DescribeCluster, 0),
    (ApiKey::AlterReplicaLogDirs, 0),
    (ApiKey::DescribeLogDirs, 0),
];

/// Whether the response body of `api` at `version` opens with
/// `throttle_time_ms` (an INT32).
pub fn leads_with_throttle_time(api: Api, version: i16) -> bool {
    LEADS_WITH_THROTTLE
        .iter()
        .any(|(k, from)| api == *k && version >= *from)
}

/// Requests the request quota does not measure: the controller's and
/// other brokers' cluster actions.
pub fn exempt_from_request_quota(api: Api) -> bool {
    matches!(api, Api::Zk(_)) || api == ApiKey::AlterPartition || api == ApiKey::AllocateProducerIds
}

/// `body` with its leading `throttle_time_ms` raised to `ms` (kept when
/// already larger).
pub fn raise_throttle_time(body: &[u8], ms: i32) -> Option<Vec<u8>> {
    let head: [u8; 4] = body.get(..4)?.try_into().ok()?;
    let current = i32::from_be_bytes(head);
    let mut out = body.to_vec();
    out[..4].copy_from_slice(&current.max(ms).to_be_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::api::ZkApi;
    use crate::protocol::encode::encode;
    use kafka_protocol::messages::{HeartbeatResponse, MetadataResponse};

    #[test]
    fn the_table_names_where_responses_open_with_the_throttle_time() {
        // Encoded by the codec with a throttle, the first four bytes hold it.
        let m = MetadataResponse::default().with_throttle_time_ms(1234);
        for v in 3..=12 {
            assert!(leads_with_throttle_time(Api::Kafka(ApiKey::Metadata), v));
            let body = encode(&m, v).expect("encode");
            assert_eq!(&body[..4], &1234i32.to_be_bytes(), "Metadata v{v}");
        }
        assert!(!leads_with_throttle_time(Api::Kafka(ApiKey::Metadata), 2));
        let h = HeartbeatResponse::default().with_throttle_time_ms(77);
        for v in 1..=4 {
            let body = encode(&h, v).expect("encode");
            assert_eq!(&body[..4], &77i32.to_be_bytes(), "Heartbeat v{v}");
        }
        assert!(!leads_with_throttle_time(Api::Kafka(ApiKey::Produce), 9));
        assert!(!leads_with_throttle_time(
            Api::Kafka(ApiKey::ApiVersions),
            3
        ));
    }

    #[test]
    fn raising_keeps_the_larger_throttle_and_the_rest_of_the_body() {
        let body = [0, 0, 0, 5, 9, 9];
        assert_eq!(
            raise_throttle_time(&body, 300).unwrap(),
            [0, 0, 1, 44, 9, 9]
        );
        assert_eq!(raise_throttle_time(&body, 2).unwrap(), body);
        assert_eq!(raise_throttle_time(&[1, 2], 5), None);
    }

    #[test]
    fn cluster_actions_are_exempt() {
        assert!(exempt_from_request_quota(Api::Zk(ZkApi::UpdateMetadata)));
        assert!(exempt_from_request_quota(Api::Kafka(
            ApiKey::AlterPartition
        )));
        assert!(!exempt_from_request_quota(Api::Kafka(ApiKey::Metadata)));
    }
}
