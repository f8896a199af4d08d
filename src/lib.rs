//! shardlog: a Kafka-wire-compatible, thread-per-core message broker.
//!
//! The crate map mirrors `ARCHITECTURE.md` (see `shared/design`):
//!
//! | module        | section | kind  | what lives there |
//! |---------------|---------|-------|------------------|
//! | [`types`]     | —       | pure  | newtypes shared by every layer |
//! | [`config`]    | —       | pure  | `server.properties` (Kafka key names) + overrides |
//! | [`histogram`] | —       | pure  | latency histograms shared by the broker and the load generator |
//! | [`protocol`]  | —       | pure  | frames, headers, API version table, error codes, record batch view |
//! | [`storage`]   | §3–4    | mixed | per-partition log: DMA appender, indexes, batch cache, recovery |
//! | [`purgatory`] | §5      | mixed | timing wheel, DelayedProduce, DelayedFetch |
//! | [`replication`] | §6    | mixed | a shard's partitions (`ReplicaManager`), HW/ISR rules, producer state |
//! | [`group`]     | §2, §5  | mixed | the group coordinator: classic protocol, `__consumer_offsets` records |
//! | [`txn`]       | §2      | pure  | the transaction coordinator: `__transaction_state` records, transaction state machine |
//! | [`controller`] | §7     | mixed | the controller: topic admin over the store, assignment, the published snapshot |
//! | [`zk`]        | §7      | mixed | `MetadataStore` over Kafka's znode layout (embedded or ZooKeeper) |
//! | [`metadata`]  | §2      | pure  | per-shard metadata snapshot and the answers built from it |
//! | [`shard`]     | §1–2    | mixed | placement (`shard_of`), mesh, context, data/control shard parts, routing |
//! | [`server`]    | §2      | mixed | listener, connections, response sequencer, one handler per API |
//! | [`io`]        | —       | io    | clock, DMA helpers, zero-copy socket writes |
//! | [`alloc`]     | —       | io    | the global allocator the binary installs (huge requests mapped lazily) |
//! | [`boot`]      | §1      | io    | the composition root: listeners, shards, control shard, shutdown |
//! | [`loadgen`]   | —       | mixed | the load generator (`shardlog loadgen`) |
//!
//! Markers used in module docs: `[pure]` no I/O and no clock, unit-tested inline;
//! `[io]` touches the OS or glommio; `[drv]` a thin async driver owning a pure core.

#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(rust_2018_idioms)]

pub mod alloc;
pub mod boot;
pub mod config;
pub mod controller;
pub mod group;
pub mod histogram;
pub mod io;
pub mod loadgen;
pub mod metadata;
pub mod protocol;
pub mod purgatory;
pub mod replication;
pub mod server;
pub mod shard;
pub mod storage;
pub mod txn;
pub mod types;
pub mod zk;
