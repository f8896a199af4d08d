//! shard (see lib.rs crate map).
