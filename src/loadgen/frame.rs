//! `[io]` Kafka request and response frames on a blocking stream: the
//! 4-byte size, the request header (client.id included) and the body as
//! the kafka-protocol crate encodes them.

use std::io::Read;

use anyhow::{Context, Result};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

/// Largest response frame accepted (Kafka's `socket.request.max.bytes`
/// default is 100 MiB; responses are bounded by `fetch.max.bytes`).
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

/// Encodes one request frame (size prefix included) into `buf`.
pub fn encode_frame<R: Request>(
    buf: &mut BytesMut,
    req: &R,
    version: i16,
    correlation_id: i32,
    client_id: &StrBytes,
) -> Result<()> {
    buf.clear();
    buf.extend_from_slice(&[0, 0, 0, 0]);
    let mut header = RequestHeader::default();
    header.request_api_key = R::KEY;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(client_id.clone());
    header.encode(buf, R::header_version(version))?;
    req.encode(buf, version)?;
    let len = i32::try_from(buf.len() - 4).context("request too large")?;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// Reads one response frame (without its size prefix).
pub fn read_frame(stream: &mut impl Read) -> std::io::Result<Bytes> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = i32::from_be_bytes(len);
    if len < 4 || len as usize > MAX_FRAME_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("invalid response frame size {len}"),
        ));
    }
    let mut body = vec![0u8; len as usize];
    stream.read_exact(&mut body)?;
    Ok(Bytes::from(body))
}

/// The correlation id at the start of every response header.
pub fn correlation_id(frame: &Bytes) -> Option<i32> {
    let b = frame.get(..4)?;
    Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes a response frame for request type `R` at `version`.
pub fn decode_response<R: Request>(mut frame: Bytes, version: i16) -> Result<R::Response> {
    ResponseHeader::decode(&mut frame, R::Response::header_version(version))
        .context("decoding response header")?;
    R::Response::decode(&mut frame, version).with_context(|| {
        format!(
            "decoding {:?} v{version} response",
            ApiKey::try_from(R::KEY)
        )
    })
}
