//! server (see lib.rs crate map).
