//! `[pure]` Cluster metadata as each shard sees it (§2): an immutable
//! [`snapshot::Snapshot`] replaced wholesale by the control shard, the
//! ApiVersions / Metadata / DescribeCluster answers built from it, and what
//! UpdateMetadata from a ZooKeeper-mode controller adds to it
//! ([`update_metadata::MetadataCache`]), LeaderAndIsr / StopReplica
//! ([`leader_and_isr`]) and the partitions they make this broker host
//! ([`hosted::HostedPartitions`]).

pub mod answers;
pub mod config_changes;
pub mod hosted;
pub mod leader_and_isr;
pub mod quotas;
pub mod scram_credentials;
pub mod snapshot;
pub mod update_metadata;

pub use snapshot::{BrokerEndpoint, PartitionState, Snapshot, TopicState};
