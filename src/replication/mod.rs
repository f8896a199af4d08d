//! replication (see lib.rs crate map).
