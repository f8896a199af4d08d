//! `[pure]` Supported API version ranges.
//!
//! The one table of (ApiKey → version range) lives with the handlers in
//! `server::dispatch` (each handler file declares its range); this module
//! holds the row type and the lookups ApiVersions and dispatch share.
//!
//! [`Api`] names an API this broker can speak: one of `kafka-protocol`
//! 0.18's (Kafka 4.1 schemas), or one of the ZooKeeper-mode inter-broker
//! APIs Kafka 4 removed, whose schemas come from `kafka-protocol` 0.15.1
//! (Kafka 3.9; CLUSTER.md §1).

use std::fmt;

use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::ApiKey as ApiKey39;

/// The ZooKeeper-mode controller ↔ broker APIs (Kafka 3.9,
/// `ApiKeys.zkBrokerApis`) that `kafka-protocol` 0.18 no longer has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZkApi {
    LeaderAndIsr,
    StopReplica,
    UpdateMetadata,
    ControlledShutdown,
}

impl ZkApi {
    const ALL: [ZkApi; 4] = [
        ZkApi::LeaderAndIsr,
        ZkApi::StopReplica,
        ZkApi::UpdateMetadata,
        ZkApi::ControlledShutdown,
    ];

    /// The 3.9 codec's key (header versions, version ranges).
    pub fn key(self) -> ApiKey39 {
        match self {
            ZkApi::LeaderAndIsr => ApiKey39::LeaderAndIsr,
            ZkApi::StopReplica => ApiKey39::StopReplica,
            ZkApi::UpdateMetadata => ApiKey39::UpdateMetadata,
            ZkApi::ControlledShutdown => ApiKey39::ControlledShutdown,
        }
    }
}

/// Client APIs whose handlers decode and encode (some versions) with the
/// Kafka 3.9 codec (`kafka-protocol` 0.15.1) because the newer crate
/// dropped versions Kafka 3.9 still serves (KIP-896: OffsetForLeaderEpoch
/// v0–v1, OffsetCommit v0–v1, OffsetFetch v0, AlterPartition v0–v1);
/// their ranges and header versions are the 3.9 codec's.
/// The transaction APIs too: Kafka 4's KIP-890 part 2 versions and its
/// dropped WriteTxnMarkers v0 are not Kafka 3.9's. Produce, Fetch and
/// ListOffsets for their header versions and ranges: their old versions
/// (Produce v0–v2, Fetch v0–v3, ListOffsets v0: message formats 0 and 1)
/// exist only in the 3.9 codec; the newer versions' headers agree.
const SERVED_WITH_THE_39_CODEC: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::AlterPartition,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::WriteTxnMarkers,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::DescribeTransactions,
    ApiKey::ListTransactions,
    // v0 (Kafka 3.9 serves it; the 0.18 codec starts at v1).
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    // CreateTopics v0–v1, DeleteTopics v0, DescribeConfigs v0 (KIP-896
    // dropped them from the 0.18 codec).
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::DescribeConfigs,
    // v0 (Kafka 3.9 serves it; the 0.18 codec starts at v1).
    ApiKey::DescribeLogDirs,
    ApiKey::AlterReplicaLogDirs,
];

/// The 3.9 codec's key for an API served with it.
fn key_39(key: ApiKey) -> Option<ApiKey39> {
    if SERVED_WITH_THE_39_CODEC.contains(&key) {
        ApiKey39::try_from(key as i16).ok()
    } else {
        None
    }
}

/// An API key this broker knows how to frame.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Kafka(ApiKey),
    Zk(ZkApi),
}

impl Api {
    /// The key for a wire code: 0.18's table first, then the ZooKeeper-mode
    /// APIs it dropped.
    pub fn from_code(code: i16) -> Option<Api> {
        if let Ok(key) = ApiKey::try_from(code) {
            return Some(Api::Kafka(key));
        }
        ZkApi::ALL
            .into_iter()
            .find(|z| z.key() as i16 == code)
            .map(Api::Zk)
    }

    /// The wire code.
    pub fn code(self) -> i16 {
        match self {
            Api::Kafka(key) => key as i16,
            Api::Zk(z) => z.key() as i16,
        }
    }

    pub fn request_header_version(self, version: i16) -> i16 {
        match self {
            Api::Kafka(key) => match key_39(key) {
                Some(k) => k.request_header_version(version),
                None => key.request_header_version(version),
            },
            Api::Zk(z) => z.key().request_header_version(version),
        }
    }

    pub fn response_header_version(self, version: i16) -> i16 {
        match self {
            Api::Kafka(key) => match key_39(key) {
                Some(k) => k.response_header_version(version),
                None => key.response_header_version(version),
            },
            Api::Zk(z) => z.key().response_header_version(version),
        }
    }

    /// The versions the codec can encode: (min, max).
    pub fn valid_versions(self) -> (i16, i16) {
        match self {
            Api::Kafka(key) if SERVED_WITH_THE_39_CODEC.contains(&key) => match key_39(key) {
                Some(k) => {
                    let v = k.valid_versions();
                    (v.min, v.max)
                }
                None => (0, -1),
            },
            Api::Kafka(key) => {
                let v = key.valid_versions();
                (v.min, v.max)
            }
            Api::Zk(z) => {
                let v = z.key().valid_versions();
                (v.min, v.max)
            }
        }
    }
}

impl From<ZkApi> for Api {
    fn from(z: ZkApi) -> Self {
        Api::Zk(z)
    }
}

impl From<ApiKey> for Api {
    fn from(key: ApiKey) -> Self {
        Api::Kafka(key)
    }
}

impl PartialEq<ApiKey> for Api {
    fn eq(&self, other: &ApiKey) -> bool {
        *self == Api::Kafka(*other)
    }
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Api::Kafka(key) => write!(f, "{key:?}"),
            Api::Zk(z) => write!(f, "{z:?}"),
        }
    }
}

/// One row of the supported-API table: we implement `api_key` for every
/// version in `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRange {
    pub api_key: Api,
    pub min: i16,
    pub max: i16,
}

impl ApiRange {
    pub const fn new(api_key: ApiKey, min: i16, max: i16) -> Self {
        Self {
            api_key: Api::Kafka(api_key),
            min,
            max,
        }
    }

    /// A row for one of the ZooKeeper-mode inter-broker APIs.
    pub const fn zk(api: ZkApi, min: i16, max: i16) -> Self {
        Self {
            api_key: Api::Zk(api),
            min,
            max,
        }
    }

    pub fn supports(&self, version: i16) -> bool {
        (self.min..=self.max).contains(&version)
    }
}

/// The row for `api_key`, if we implement it at all.
pub fn find(table: &[ApiRange], api_key: impl Into<Api>) -> Option<&ApiRange> {
    let api_key = api_key.into();
    table.iter().find(|r| r.api_key == api_key)
}

/// Rows whose range is empty, duplicated, or outside what the
/// `kafka-protocol` crate can encode; a correct table returns nothing.
pub fn table_problems(table: &[ApiRange]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, row) in table.iter().enumerate() {
        let (valid_min, valid_max) = row.api_key.valid_versions();
        if row.min > row.max {
            problems.push(format!("{:?}: empty range", row.api_key));
        }
        if row.min < valid_min || row.max > valid_max {
            problems.push(format!(
                "{:?}: {}..={} outside codec range {valid_min}..={valid_max}",
                row.api_key, row.min, row.max
            ));
        }
        if table[..i].iter().any(|r| r.api_key == row.api_key) {
            problems.push(format!("{:?}: listed twice", row.api_key));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_problems_flags_bad_rows() {
        let table = [
            ApiRange::new(ApiKey::Metadata, 0, 12),
            ApiRange::new(ApiKey::Metadata, 0, 1),
            ApiRange::new(ApiKey::ApiVersions, 0, 9),
            ApiRange::new(ApiKey::Fetch, 5, 4),
        ];
        let problems = table_problems(&table);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(table_problems(&table[..1]).is_empty());
    }

    #[test]
    fn find_and_supports_follow_the_row() {
        let table = [ApiRange::new(ApiKey::ApiVersions, 0, 4)];
        let row = find(&table, ApiKey::ApiVersions).unwrap();
        assert!(row.supports(0) && row.supports(4));
        assert!(!row.supports(5) && !row.supports(-1));
        assert!(find(&table, ApiKey::Produce).is_none());
    }

    #[test]
    fn zookeeper_mode_apis_use_the_kafka_3_9_tables() {
        assert_eq!(Api::from_code(6), Some(Api::Zk(ZkApi::UpdateMetadata)));
        assert_eq!(Api::from_code(4), Some(Api::Zk(ZkApi::LeaderAndIsr)));
        assert_eq!(Api::from_code(3), Some(Api::Kafka(ApiKey::Metadata)));
        assert_eq!(Api::from_code(-7), None);
        let um = Api::Zk(ZkApi::UpdateMetadata);
        assert_eq!(um.code(), 6);
        assert_eq!(um.valid_versions(), (0, 8));
        // Flexible (header v2 / response header v1) from v6.
        assert_eq!(um.request_header_version(5), 1);
        assert_eq!(um.request_header_version(6), 2);
        assert_eq!(um.response_header_version(6), 1);
        assert!(table_problems(&[ApiRange::zk(ZkApi::UpdateMetadata, 0, 8)]).is_empty());
        assert_eq!(format!("{um:?}"), "UpdateMetadata");
    }
}
