//! Control-plane metadata (ARCHITECTURE.md §7): Kafka's ZooKeeper layout
//! behind the [`store::MetadataStore`] seam.
//!
//! - [`paths`] `[pure]`: znode paths and JSON payloads as Kafka writes them.
//! - [`store`]: the `MetadataStore` trait (ZooKeeper's data model) and
//!   helpers (`create_recursive`, `delete_recursive`).
//! - [`watch`] `[pure]`: one-shot watches and session events.
//! - [`embedded`] `[io]`: the in-process store persisted under the log dir,
//!   used when `zookeeper.connect` is unset.
//!
//! What the broker and controller do over the store (topic admin, broker
//! registration, replica assignment) is `controller`'s. A ZooKeeper-backed
//! store (zookeeper-client crate) is a later file here.

pub mod embedded;
pub mod paths;
pub mod store;
pub mod watch;
