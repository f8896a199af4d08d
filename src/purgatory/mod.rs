//! purgatory (see lib.rs crate map).
