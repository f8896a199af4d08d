//! zk (see lib.rs crate map).
