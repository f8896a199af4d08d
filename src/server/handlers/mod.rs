//! `[drv]` One file per Kafka API. Each declares `VERSIONS` (the range it
//! implements, listed by ApiVersions) and `handle`.

pub mod api_versions;
pub mod fetch;
pub mod list_offsets;
pub mod metadata;
pub mod produce;
