//! replication (see lib.rs crate map).

pub mod producer_state;
