//! `[pure]` The Kafka wire protocol: frames, headers, the API version table,
//! error codes and the record batch view.

pub mod fetch_response;
pub mod record_batch;
