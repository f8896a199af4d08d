//! Raw Kafka frames over a blocking socket: encode a request (with
//! kafka-protocol's current or Kafka 3.9 codec), read one response frame.

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{encode_request_header_into_buffer, Encodable, StrBytes};

/// Encode a request frame (size prefix + header + body).
pub fn request_frame<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Vec<u8> {
    request_frame_as(TEST_CLIENT_ID, api_key, version, correlation_id, body)
}

/// The client id of [`request_frame`] and of a [`Conn`] by default.
pub const TEST_CLIENT_ID: &str = "shardlog-test";

/// [`request_frame`] with another client id.
pub fn request_frame_as<T: Encodable>(
    client_id: &str,
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Vec<u8> {
    let mut header = RequestHeader::default();
    header.request_api_key = api_key as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_string(client_id.to_owned()));
    let mut buf = BytesMut::new();
    encode_request_header_into_buffer(&mut buf, &header).expect("header");
    body.encode(&mut buf, version).expect("body");
    let mut frame = Vec::with_capacity(buf.len() + 4);
    frame.put_i32(buf.len() as i32);
    frame.extend_from_slice(&buf);
    frame
}

/// Read one response frame body (after the size prefix); `None` on EOF.
pub fn read_frame(stream: &mut impl Read) -> Option<Bytes> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let size = i32::from_be_bytes(size);
    assert!(size >= 4, "response size {size}");
    let mut body = vec![0u8; size as usize];
    stream.read_exact(&mut body).ok()?;
    Some(Bytes::from(body))
}

/// Send one frame and read one response.
pub fn round_trip(stream: &mut TcpStream, frame: &[u8]) -> Bytes {
    stream.write_all(frame).expect("write");
    read_frame(stream).expect("response")
}

/// One request encoded with the Kafka 3.9 codec (`kafka-protocol` 0.15.1,
/// for versions Kafka 4 dropped) and its answer; the headers' versions
/// are the 3.9 codec's for `api_key` at `version`.
pub fn call39<Q, R>(stream: &mut TcpStream, api_key: i16, version: i16, req: &Q) -> R
where
    Q: kafka_protocol_39::protocol::Encodable,
    R: kafka_protocol_39::protocol::Decodable,
{
    let key = kafka_protocol_39::messages::ApiKey::try_from(api_key).expect("a 3.9 api key");
    let mut buf = BytesMut::new();
    buf.put_i16(api_key);
    buf.put_i16(version);
    buf.put_i32(7);
    buf.put_i16(4);
    buf.put_slice(b"test");
    if key.request_header_version(version) >= 2 {
        buf.put_u8(0); // no tagged fields
    }
    req.encode(&mut buf, version).expect("encode");
    let mut frame = Vec::with_capacity(buf.len() + 4);
    frame.put_i32(buf.len() as i32);
    frame.extend_from_slice(&buf);
    let mut answer = round_trip(stream, &frame);
    assert_eq!(bytes::Buf::get_i32(&mut answer), 7, "correlation id");
    if key.response_header_version(version) >= 1 {
        assert_eq!(
            bytes::Buf::get_u8(&mut answer),
            0,
            "no tagged header fields"
        );
    }
    R::decode(&mut answer, version).expect("decode")
}
