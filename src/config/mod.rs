//! config (see lib.rs crate map).
