//! `[drv]` One file per Kafka API. Each declares `VERSIONS` (the range it
//! implements, listed by ApiVersions) and `handle`.

pub mod admin_common;
pub mod alter_configs;
pub mod api_versions;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_topics;
pub mod describe_configs;
pub mod fetch;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod list_offsets;
pub mod metadata;
pub mod produce;
