//! `[pure]` The Kafka wire protocol: frames, headers, the API version table,
//! error codes and the record batch view.

pub mod record_batch;
