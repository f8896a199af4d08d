//! server (see lib.rs crate map).

pub mod fetch_session;
