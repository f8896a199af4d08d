//! `[pure]` Configuration: `server.properties` with Kafka's key names, and
//! topic-level configs.

pub mod topic;
