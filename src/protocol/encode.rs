//! `[pure]` Encoding a message body with the `kafka-protocol` crate.
//!
//! The counterpart of `decode::decode_body`: every response a handler
//! sends, and every answer `metadata` builds, is a crate message encoded
//! at the request's version into one buffer sized up front.

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::Encodable;

/// Encode any message body (without size prefix or header) at `version`.
pub fn encode<T: Encodable>(message: &T, version: i16) -> Result<Bytes, String> {
    let size = message.compute_size(version).map_err(|e| e.to_string())?;
    let mut buf = BytesMut::with_capacity(size);
    message
        .encode(&mut buf, version)
        .map_err(|e| e.to_string())?;
    Ok(buf.freeze())
}
