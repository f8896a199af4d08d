//! `[pure]` The Kafka wire protocol: frames, headers, the API version table,
//! error codes, the record batch view and Kafka's topic name rule.
//!
//! Message bodies are encoded and decoded with the `kafka-protocol` crate
//! (generated from Kafka's JSON schemas); this module owns what surrounds
//! them: the size prefix, request/response headers, which versions we
//! speak, the body encode helper, and guards that keep hostile input from
//! reaching the crate's pre-allocating decoders (`decode`, and the nested
//! array walk in `schema`).

pub mod api;
pub mod control_record;
pub mod decode;
pub mod encode;
pub mod error;
pub mod fetch_response;
pub mod frame;
pub mod header;
pub mod legacy;
pub mod lz4_frame;
pub mod out_part;
pub mod record_batch;
pub mod record_reader;
pub mod record_walk;
pub mod schema;
#[cfg(test)]
pub mod test_records;
pub mod throttle_field;
pub mod topic_name;
pub mod varint;

pub use api::ApiRange;
pub use error::ErrorCode;
