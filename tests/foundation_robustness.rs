//! Never panic: random and mutated frames go into the decoders (many
//! cases) and into a live connection; the broker keeps serving others.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{Read, Write};
use std::net::Shutdown;

use bytes::{BufMut, Bytes};
use common::{read_frame, request_frame, Broker};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, ResponseHeader};
use kafka_protocol::protocol::Decodable;
use proptest::prelude::*;
use shardlog::protocol::frame::take_frame;
use shardlog::protocol::header::decode_request_header;
use shardlog::server::handlers::metadata::decode_request as decode_metadata;

fn golden_frames() -> Vec<Vec<u8>> {
    let dir = format!("{}/tests/golden", env!("CARGO_MANIFEST_DIR"));
    let mut frames: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "hex"))
        .map(|e| {
            let hex = std::fs::read_to_string(e.path()).unwrap();
            let hex = hex.trim();
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        })
        .collect();
    frames.sort();
    frames
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: usize,
        xor: u8,
    },
    Truncate {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    /// Overwrite 4 bytes (often a length or count) with a hostile value.
    Int32 {
        at: usize,
        value: i32,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (
            any::<usize>(),
            prop_oneof![
                Just(i32::MAX),
                Just(i32::MIN),
                Just(-1),
                Just(0x0fff_ffff),
                any::<i32>()
            ]
        )
            .prop_map(|(at, value)| Mutation::Int32 { at, value }),
    ]
}

fn mutate(frame: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut f = frame.to_vec();
    for m in mutations {
        let len = f.len().max(1);
        match m {
            Mutation::Flip { at, xor } => {
                if let Some(b) = f.get_mut(at % len) {
                    *b ^= xor;
                }
            }
            Mutation::Truncate { at } => f.truncate(at % len),
            Mutation::Insert { at, bytes } => {
                let at = (at % len).min(f.len());
                f.splice(at..at, bytes.iter().copied());
            }
            Mutation::Int32 { at, value } => {
                let at = at % len;
                for (i, b) in value.to_be_bytes().iter().enumerate() {
                    if let Some(slot) = f.get_mut(at + i) {
                        *slot = *b;
                    }
                }
            }
        }
    }
    f
}

/// Everything the server does with a frame before a handler's logic.
fn decode_everything(frame: &[u8]) {
    let mut body = Bytes::copy_from_slice(frame);
    if let Ok(header) = decode_request_header(&mut body) {
        if header.api_key == ApiKey::Metadata && (0..=13).contains(&header.api_version) {
            let _ = decode_metadata(body, header.api_version);
        } else if header.api_key == ApiKey::ApiVersions && (0..=4).contains(&header.api_version) {
            let _ = ApiVersionsRequest::decode(&mut body, header.api_version);
        }
    }
    // And every Metadata version against the raw bytes.
    for version in 0..=13 {
        let _ = decode_metadata(Bytes::copy_from_slice(frame), version);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn random_bytes_never_panic_the_decoders(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        decode_everything(&data);
        let mut buf = bytes::BytesMut::from(&data[..]);
        while let Ok(Some(frame)) = take_frame(&mut buf, 1 << 20) {
            decode_everything(&frame);
        }
    }

    #[test]
    fn mutated_client_frames_never_panic_the_decoders(
        pick in any::<prop::sample::Index>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let frames = golden_frames();
        let frame = &frames[pick.index(frames.len())];
        decode_everything(&mutate(frame, &mutations));
    }
}

fn with_prefix(frame: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.put_i32(frame.len() as i32);
    out.extend_from_slice(frame);
    out
}

/// A fresh client still gets a correct ApiVersions answer.
fn assert_serves_a_second_client(broker: &mut Broker) {
    assert!(broker.is_running(), "broker process died");
    let mut stream = broker.connect();
    let frame = request_frame(ApiKey::ApiVersions, 3, 4242, &ApiVersionsRequest::default());
    stream.write_all(&frame).unwrap();
    let mut resp = read_frame(&mut stream).expect("second client answered");
    assert_eq!(
        ResponseHeader::decode(&mut resp, 0).unwrap().correlation_id,
        4242
    );
    assert_eq!(
        ApiVersionsResponse::decode(&mut resp, 3)
            .unwrap()
            .error_code,
        0
    );
}

/// Send `bytes`, half-close, drain whatever comes back until the broker
/// closes. Returns what was received.
fn send_and_drain(broker: &Broker, bytes: &[u8]) -> Vec<u8> {
    let mut stream = broker.connect();
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(Shutdown::Write);
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    got
}

#[test]
fn mutated_and_random_frames_on_live_connections_leave_the_broker_serving() {
    let mut broker = Broker::start();
    let frames = golden_frames();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(300));
    let strategy = (
        any::<prop::sample::Index>(),
        proptest::collection::vec(mutation(), 1..4),
        proptest::collection::vec(any::<u8>(), 0..64),
        any::<bool>(),
    );
    runner
        .run(&strategy, |(pick, mutations, noise, framed)| {
            let frame = mutate(&frames[pick.index(frames.len())], &mutations);
            // Either a well-framed mutated request followed by noise, or
            // raw bytes with no framing at all.
            let mut bytes = if framed { with_prefix(&frame) } else { frame };
            bytes.extend_from_slice(&noise);
            send_and_drain(&broker, &bytes);
            Ok(())
        })
        .unwrap();
    assert_serves_a_second_client(&mut broker);
}

#[test]
fn hostile_lengths_close_only_that_connection() {
    let mut broker = Broker::start();
    // Metadata v4 with a topic count of i32::MAX: the crate would try to
    // reserve it up front; we refuse it first.
    let mut metadata = Vec::new();
    metadata.put_i16(ApiKey::Metadata as i16);
    metadata.put_i16(4);
    metadata.put_i32(1);
    metadata.put_i16(-1);
    metadata.put_i32(i32::MAX);
    metadata.put_u8(1);
    // Metadata v12 (flexible) with a compact count of u32::MAX.
    let mut flexible = Vec::new();
    flexible.put_i16(ApiKey::Metadata as i16);
    flexible.put_i16(12);
    flexible.put_i32(2);
    flexible.put_i16(-1);
    flexible.put_u8(0);
    flexible.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f, 1, 0, 0]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("metadata topic count i32::MAX", with_prefix(&metadata)),
        ("flexible topic count u32::MAX", with_prefix(&flexible)),
        // 200 MB > socket.request.max.bytes (100 MiB): refused unread.
        ("oversized frame", 200_000_000i32.to_be_bytes().to_vec()),
        ("negative frame size", (-7i32).to_be_bytes().to_vec()),
        ("frame shorter than a header", with_prefix(&[0, 3])),
    ];
    for (what, bytes) in cases {
        let got = send_and_drain(&broker, &bytes);
        assert!(
            got.is_empty(),
            "{what}: expected close without a response, got {} bytes",
            got.len()
        );
        assert_serves_a_second_client(&mut broker);
    }
}

#[test]
fn idle_connections_are_closed_after_connections_max_idle_ms() {
    let mut broker = Broker::start_with(&["connections.max.idle.ms=100"]);
    let mut idle = broker.connect();
    // One request, then silence: the broker closes the connection (EOF,
    // not a reset and not the 30 s read timeout).
    let frame = request_frame(ApiKey::ApiVersions, 3, 1, &ApiVersionsRequest::default());
    idle.write_all(&frame).unwrap();
    assert!(read_frame(&mut idle).is_some());
    let mut rest = Vec::new();
    assert_eq!(idle.read_to_end(&mut rest).expect("clean close"), 0);
    assert_serves_a_second_client(&mut broker);
}

/// An ApiVersions round trip on `stream`, or `None` if the broker closed
/// it or did not answer within the stream's read timeout.
fn api_versions(stream: &mut std::net::TcpStream, correlation_id: i32) -> Option<i32> {
    let frame = request_frame(
        ApiKey::ApiVersions,
        3,
        correlation_id,
        &ApiVersionsRequest::default(),
    );
    stream.write_all(&frame).ok()?;
    let mut resp = read_frame(stream)?;
    Some(ResponseHeader::decode(&mut resp, 0).ok()?.correlation_id)
}

#[test]
fn a_connection_over_max_connections_per_ip_is_closed_and_its_slot_comes_back() {
    let mut broker = Broker::start_with(&["max.connections.per.ip=2"]);
    let mut first = broker.connect();
    let mut second = broker.connect();
    assert_eq!(api_versions(&mut first, 1), Some(1));
    assert_eq!(api_versions(&mut second, 2), Some(2));
    // The third from 127.0.0.1 is accepted by the kernel and closed by the
    // broker (Kafka's TooManyConnectionsException): EOF, no answer.
    let mut third = broker.connect();
    let _ = third.write_all(&request_frame(
        ApiKey::ApiVersions,
        3,
        3,
        &ApiVersionsRequest::default(),
    ));
    let mut rest = Vec::new();
    let _ = third.read_to_end(&mut rest);
    assert!(rest.is_empty(), "the over-limit connection was answered");
    // A closed connection gives its slot back.
    drop(first);
    common::cluster::wait_for(10, "a slot after a close", || {
        let mut again = broker.connect();
        (api_versions(&mut again, 4) == Some(4)).then_some(())
    });
    assert_eq!(api_versions(&mut second, 5), Some(5));
    assert!(broker.is_running());
}

/// `max.connections.per.ip.overrides` (Kafka's `ConnectionQuotas`): the
/// override for 127.0.0.1 replaces `max.connections.per.ip` for it, here
/// raising 1 to 2; the connection beyond the override is closed unanswered.
#[test]
fn the_per_ip_override_for_127_0_0_1_caps_its_connections() {
    let broker = Broker::start_with(&[
        "max.connections.per.ip=1",
        "max.connections.per.ip.overrides=127.0.0.1:2",
    ]);
    let mut first = broker.connect();
    let mut second = broker.connect();
    assert_eq!(api_versions(&mut first, 1), Some(1));
    assert_eq!(
        api_versions(&mut second, 2),
        Some(2),
        "the override's second connection (over max.connections.per.ip=1)"
    );
    let mut third = broker.connect();
    let _ = third.write_all(&request_frame(
        ApiKey::ApiVersions,
        3,
        3,
        &ApiVersionsRequest::default(),
    ));
    let mut rest = Vec::new();
    let _ = third.read_to_end(&mut rest);
    assert!(
        rest.is_empty(),
        "the connection over the override was answered"
    );
    assert_eq!(api_versions(&mut first, 4), Some(4));
    assert_eq!(api_versions(&mut second, 5), Some(5));
}

#[test]
fn at_max_connections_a_new_client_waits_until_a_connection_closes() {
    let broker = Broker::start_with(&["max.connections=1"]);
    let mut only = broker.connect();
    assert_eq!(api_versions(&mut only, 1), Some(1));
    // The kernel completes the handshake (backlog) but the broker does not
    // accept it, so its request waits: no answer while the slot is taken.
    let mut waiting = broker.connect();
    waiting
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    assert_eq!(
        api_versions(&mut waiting, 2),
        None,
        "answered at max.connections"
    );
    drop(only);
    // Then it is accepted and its request (already sent) answered.
    waiting
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut resp = read_frame(&mut waiting).expect("answered once a slot was free");
    assert_eq!(
        ResponseHeader::decode(&mut resp, 0).unwrap().correlation_id,
        2
    );
}
