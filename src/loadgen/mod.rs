//! loadgen (see lib.rs crate map).
