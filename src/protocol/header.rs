//! `[pure]` Request header v0–v2 and response header v0–v1.
//!
//! Request header v0 = api_key, api_version, correlation_id; v1 adds the
//! nullable `client_id`; v2 (flexible APIs) adds tagged fields. Response
//! header v0 = correlation_id; v1 adds tagged fields. Which header version a
//! message uses depends on (api_key, api_version) and comes from the
//! generated schema tables in `kafka-protocol`.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::Decodable;

use super::api::Api;
use super::frame::size_prefix;

/// A decoded request header.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestHeader {
    pub api_key: Api,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    /// The header version the request was framed with (0, 1 or 2).
    pub header_version: i16,
}

/// Why a request header could not be decoded; the connection is closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("request shorter than the fixed header ({0} bytes)")]
    Truncated(usize),
    #[error("unknown api key {api_key} (correlation id {correlation_id})")]
    UnknownApiKey { api_key: i16, correlation_id: i32 },
    #[error("malformed request header for api key {api_key} v{api_version}: {reason}")]
    Malformed {
        api_key: i16,
        api_version: i16,
        reason: String,
    },
}

/// Bytes of the fixed part (api_key, api_version, correlation_id).
pub const FIXED_HEADER_BYTES: usize = 8;

/// The fixed part every request header version starts with:
/// (api_key, api_version, correlation_id). Available even for unknown APIs,
/// so that errors can be logged with the correlation id.
pub fn peek_fixed(frame: &[u8]) -> Option<(i16, i16, i32)> {
    let b = frame.get(..FIXED_HEADER_BYTES)?;
    Some((
        i16::from_be_bytes([b[0], b[1]]),
        i16::from_be_bytes([b[2], b[3]]),
        i32::from_be_bytes([b[4], b[5], b[6], b[7]]),
    ))
}

/// Decode the request header at the front of `frame`, leaving `frame`
/// positioned at the request body.
pub fn decode_request_header(frame: &mut Bytes) -> Result<RequestHeader, HeaderError> {
    let (api_key_raw, api_version, correlation_id) =
        peek_fixed(frame).ok_or(HeaderError::Truncated(frame.len()))?;
    let api_key = Api::from_code(api_key_raw).ok_or(HeaderError::UnknownApiKey {
        api_key: api_key_raw,
        correlation_id,
    })?;
    let header_version = api_key.request_header_version(api_version);
    if header_version == 0 {
        // Header v0 is the fixed part alone; only ControlledShutdown v0
        // uses it (Kafka `ApiKeys.requestHeaderVersion`). `kafka-protocol`
        // 0.18 (Kafka 4, which dropped ControlledShutdown) decodes header
        // v1–v2 only, so it is read here.
        frame.advance(FIXED_HEADER_BYTES);
        return Ok(RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id: None,
            header_version,
        });
    }
    let decoded =
        kafka_protocol::messages::RequestHeader::decode(frame, header_version).map_err(|e| {
            HeaderError::Malformed {
                api_key: api_key_raw,
                api_version,
                reason: e.to_string(),
            }
        })?;
    Ok(RequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id: decoded.client_id.map(|s| s.as_str().to_owned()),
        header_version,
    })
}

/// Response header version for a request (ApiVersions always answers with
/// v0 so that a client can parse it before knowing our versions, KIP-511).
pub fn response_header_version(api_key: impl Into<Api>, api_version: i16) -> i16 {
    api_key.into().response_header_version(api_version)
}

/// Size prefix plus response header for a response whose body is
/// `body_len` bytes: the first part of every response on the wire.
pub fn response_head(correlation_id: i32, header_version: i16, body_len: usize) -> Bytes {
    let header_len = if header_version >= 1 { 5 } else { 4 };
    let mut buf = BytesMut::with_capacity(4 + header_len);
    buf.put_slice(&size_prefix(header_len + body_len));
    buf.put_i32(correlation_id);
    if header_version >= 1 {
        // Empty tagged-field section (unsigned varint 0).
        buf.put_u8(0);
    }
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::ApiKey;
    use kafka_protocol::protocol::{encode_request_header_into_buffer, StrBytes};
    use proptest::prelude::*;

    fn encoded(key: ApiKey, version: i16, client_id: Option<&'static str>) -> Bytes {
        let mut h = kafka_protocol::messages::RequestHeader::default();
        h.request_api_key = key as i16;
        h.request_api_version = version;
        h.correlation_id = 42;
        h.client_id = client_id.map(StrBytes::from_static_str);
        let mut buf = BytesMut::new();
        encode_request_header_into_buffer(&mut buf, &h).unwrap();
        buf.put_slice(b"BODY");
        buf.freeze()
    }

    #[test]
    fn headers_of_every_version_decode_and_leave_the_body() {
        // (api, version, expected header version)
        let rows = [
            (ApiKey::Metadata, 0, 1),
            (ApiKey::Metadata, 8, 1),
            (ApiKey::Metadata, 9, 2),
            (ApiKey::ApiVersions, 2, 1),
            (ApiKey::ApiVersions, 3, 2),
        ];
        for (key, version, header_version) in rows {
            let mut frame = encoded(key, version, Some("rdkafka"));
            let h = decode_request_header(&mut frame).unwrap();
            assert_eq!(h.api_key, key);
            assert_eq!(h.api_version, version);
            assert_eq!(h.correlation_id, 42);
            assert_eq!(h.client_id.as_deref(), Some("rdkafka"));
            assert_eq!(h.header_version, header_version);
            assert_eq!(&frame[..], b"BODY");
        }
    }

    #[test]
    fn controlled_shutdown_v0_header_has_no_client_id_and_leaves_the_body() {
        // Header v0 (Kafka `ApiKeys.requestHeaderVersion`): api key 7,
        // version 0, correlation id 42, then the body (broker id 3). Read
        // as header v1 the body's first two bytes became a client id
        // length; the crate refused the header outright.
        let mut frame = Bytes::from_static(&[0, 7, 0, 0, 0, 0, 0, 42, 0, 0, 0, 3]);
        let h = decode_request_header(&mut frame).unwrap();
        assert_eq!(
            h.api_key,
            Api::Zk(super::super::api::ZkApi::ControlledShutdown)
        );
        assert_eq!((h.api_version, h.correlation_id), (0, 42));
        assert_eq!((h.header_version, h.client_id), (0, None));
        assert_eq!(&frame[..], &[0, 0, 0, 3]);
        // v1 and later use the standard header with a client id.
        let mut frame = Bytes::from_static(&[0, 7, 0, 1, 0, 0, 0, 42, 0, 1, b'c', 0, 0, 0, 3]);
        let h = decode_request_header(&mut frame).unwrap();
        assert_eq!((h.header_version, h.client_id.as_deref()), (1, Some("c")));
        assert_eq!(&frame[..], &[0, 0, 0, 3]);
    }

    #[test]
    fn unknown_api_key_keeps_the_correlation_id_for_logging() {
        let mut frame = Bytes::from_static(&[0x7f, 0x00, 0, 1, 0, 0, 0, 9, 0xff, 0xff]);
        assert_eq!(
            decode_request_header(&mut frame),
            Err(HeaderError::UnknownApiKey {
                api_key: 0x7f00,
                correlation_id: 9
            })
        );
    }

    #[test]
    fn api_versions_responses_use_header_v0_even_when_flexible() {
        assert_eq!(response_header_version(ApiKey::ApiVersions, 3), 0);
        assert_eq!(response_header_version(ApiKey::Metadata, 9), 1);
        assert_eq!(response_header_version(ApiKey::Metadata, 8), 0);
    }

    #[test]
    fn response_head_counts_header_and_body() {
        let head = response_head(7, 1, 10);
        assert_eq!(&head[..], &[0, 0, 0, 15, 0, 0, 0, 7, 0]);
        let head = response_head(7, 0, 10);
        assert_eq!(&head[..], &[0, 0, 0, 14, 0, 0, 0, 7]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn arbitrary_header_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut frame = Bytes::from(data);
            let _ = decode_request_header(&mut frame);
        }
    }
}
