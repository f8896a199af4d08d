//! protocol (see lib.rs crate map).
