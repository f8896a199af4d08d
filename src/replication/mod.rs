//! replication (see lib.rs crate map).

pub mod isr;
pub mod producer_state;
