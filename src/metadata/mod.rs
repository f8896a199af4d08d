//! metadata (see lib.rs crate map).
