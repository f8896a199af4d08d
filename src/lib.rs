//! shardlog: a Kafka-wire-compatible, thread-per-core message broker.
//!
//! Start with the design, rendered from `src/design/*.md`:
//! [`design::architecture`] (threads and shards, storage, reads, purgatory,
//! replication, control plane), [`design::cluster`] (interoperating with
//! Kafka 3.9 in ZooKeeper mode), [`design::style`] (module map, layers, the
//! rules the code is held to) and [`design::platform`] (what glommio, the
//! kernel and the clients do here). `cargo doc --no-deps --open` renders
//! them with the code.
//!
//! The crate map follows the architecture's sections:
//!
//! | module        | section | kind  | what lives there |
//! |---------------|---------|-------|------------------|
//! | [`types`]     | —       | pure  | newtypes shared by every layer |
//! | [`config`]    | —       | pure  | `server.properties` (Kafka key names) + overrides |
//! | [`acl`]       | —       | pure  | ACLs, Kafka's AclAuthorizer rules, their znodes |
//! | [`histogram`] | —       | pure  | latency histograms shared by the broker and the load generator |
//! | [`protocol`]  | —       | pure  | frames, headers, API version table, error codes, record batch view |
//! | [`io`]        | —       | io    | clock, DMA helpers, zero-copy socket writes |
//! | [`storage`]   | §3–4    | mixed | per-partition log: DMA appender, indexes, batch cache, recovery, compaction |
//! | [`purgatory`] | §5      | mixed | timing wheel, DelayedProduce, DelayedFetch |
//! | [`replication`] | §6    | mixed | a shard's partitions (`ReplicaManager`), HW/ISR rules, producer state, fetchers |
//! | [`group`]     | §2, §5  | pure  | the group coordinator: classic protocol, `__consumer_offsets` records |
//! | [`txn`]       | §2      | pure  | the transaction coordinator: `__transaction_state` records, transaction state machine |
//! | [`controller`] | §7     | mixed | the controller and the admin side over the store, assignment, elections |
//! | [`zk`]        | §7      | mixed | `MetadataStore` over Kafka's znode layout (embedded or ZooKeeper) |
//! | [`metadata`]  | §2      | pure  | per-shard metadata snapshot and the answers built from it |
//! | [`metrics`]   | —       | pure  | per-shard counters, the scrape's report, Prometheus exposition (Kafka's names) |
//! | [`shard`]     | §1–2    | mixed | placement, mesh, context, data path; subsystem drivers (control, group, txn) |
//! | [`server`]    | §2      | mixed | listener, connections, response sequencer, one handler per API |
//! | [`tls`]       | —       | mixed | `ssl.*` keys per listener, keystores, rustls configs, principal mapping |
//! | [`sasl`]      | —       | pure  | SASL authentication before a connection serves: PLAIN, SCRAM-SHA-256/512 |
//! | [`alloc`]     | —       | io    | the global allocator the binary installs (huge requests mapped lazily) |
//! | [`boot`]      | §1      | io    | the composition root: listeners, shards, control shard, shutdown |
//! | [`loadgen`]   | —       | mixed | the load generator (`shardlog loadgen`, `shardlog bench`) |
//! | [`design`]    | —       | text  | the design documents |
//!
//! Markers used in module docs: `[pure]` no I/O and no clock, unit-tested inline;
//! `[io]` touches the OS or glommio; `[drv]` a thin async driver owning a pure core.

#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(rust_2018_idioms)]

pub mod acl;
pub mod alloc;
pub mod boot;
pub mod config;
pub mod controller;
pub mod design;
pub mod group;
pub mod histogram;
pub mod io;
pub mod loadgen;
pub mod metadata;
pub mod metrics;
pub mod protocol;
pub mod purgatory;
pub mod replication;
pub mod sasl;
pub mod server;
pub mod shard;
pub mod storage;
pub mod tls;
pub mod txn;
pub mod types;
pub mod zk;
