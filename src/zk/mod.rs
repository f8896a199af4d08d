//! Control-plane metadata (ARCHITECTURE.md §7): Kafka's ZooKeeper layout
//! behind the [`store::MetadataStore`] seam.
//!
//! - [`paths`] `[pure]`: znode paths and JSON payloads as Kafka writes them.
//! - [`store`]: the `MetadataStore` trait (ZooKeeper's data model) and
//!   helpers (`create_recursive`, `delete_recursive`).
//! - [`watch`] `[pure]`: one-shot watches and session events.
//! - [`any`] `[io]`: the embedded store or a ZooKeeper session, as one type.
//! - [`embedded`] `[io]`: the in-process store persisted under the log dir,
//!   used when `zookeeper.connect` is unset.
//! - [`client`] `[io]`: `ZkStore`, the store over a real ZooKeeper
//!   ensemble (zookeeper-client crate on the control shard's executor).
//!
//! What the broker and controller do over the store (topic admin, broker
//! registration, replica assignment) is `controller`'s.

pub mod any;
pub mod client;
pub mod embedded;
pub mod log_dir_event;
pub mod paths;
pub mod store;
pub mod watch;
