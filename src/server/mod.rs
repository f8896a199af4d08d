//! The Kafka-facing server (§2): listener and connections `[io]`, the
//! response sequencer (pure), dispatch `[drv]` and one handler file per
//! Kafka API `[drv]`.
//!
//! A connection belongs to the shard that accepted it. Its reader decodes
//! frames and spawns one task per request (handlers may await other
//! shards); its writer sends responses strictly in request order.

pub mod auto_create;
pub mod connection;
pub mod connection_quotas;
pub mod dispatch;
pub mod handlers;
pub mod in_order;
pub mod listener;
pub mod memory_pool;
pub mod metrics_http;
pub mod out;
pub mod request_metrics;
pub mod sasl_conn;
pub mod tls_conn;
pub mod transport;

pub use handlers::{HandlerError, Request, Response};
pub use out::OutPart;
