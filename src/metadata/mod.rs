//! `[pure]` Cluster metadata as each shard sees it (§2): an immutable
//! [`snapshot::Snapshot`] replaced wholesale by the control shard, the
//! ApiVersions / Metadata / DescribeCluster answers built from it, and what
//! UpdateMetadata from a ZooKeeper-mode controller adds to it
//! ([`update_metadata::MetadataCache`]).

pub mod answers;
pub mod snapshot;
pub mod update_metadata;

pub use snapshot::{BrokerEndpoint, PartitionState, Snapshot, TopicState};
