//! storage (see lib.rs crate map).
