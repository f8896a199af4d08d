//! `connection.failed.authentication.delay.ms` (Kafka's `SocketServer` /
//! `Selector` delayed close after a failed SASL authentication): on raw
//! SaslHandshake v1 / SaslAuthenticate v1 frames with PLAIN over a
//! SASL_PLAINTEXT listener,
//! - with 3000 ms, a wrong password's SASL_AUTHENTICATION_FAILED answer
//!   and the close that follows come no sooner than 3 s after the
//!   SaslAuthenticate request, while the right password is answered at
//!   once and the connection goes on serving;
//! - with 0, ten wrong-password logins in a row, each answered and closed,
//!   take less than the 100 ms each Kafka's default would hold them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Buf;
use common::zookeeper::free_port;
use common::{request_frame, round_trip, Broker};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" \
     user_alice=\"alice-secret\";";

/// A broker with a PLAINTEXT listener and a SASL_PLAINTEXT one (PLAIN
/// users from its JAAS entry) and the delay `delay_ms`; the SASL address.
fn start(delay_ms: u32) -> (Broker, String) {
    let (p0, p1) = (free_port(), free_port());
    let settings = [
        format!("listeners=PLAINTEXT://127.0.0.1:{p0},SASL_PLAINTEXT://127.0.0.1:{p1}"),
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN".into(),
        format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}"),
        format!("connection.failed.authentication.delay.ms={delay_ms}"),
    ];
    let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
    (Broker::start_with(&refs), format!("127.0.0.1:{p1}"))
}

/// What a PLAIN login gave.
struct Login {
    stream: TcpStream,
    error_code: i16,
    /// From the SaslAuthenticate request to its answer.
    answered: Duration,
    /// From the request to the end of the stream (None: still open).
    closed: Option<Duration>,
}

/// SaslHandshake v1 (PLAIN), then SaslAuthenticate v1 as alice with
/// `password`; after a failure, reads on to the end of the stream.
fn login(addr: &str, password: &str) -> Login {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let hs = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let mut r = round_trip(
        &mut stream,
        &request_frame(ApiKey::SaslHandshake, 1, 1, &hs),
    );
    r.advance(4);
    assert_eq!(
        SaslHandshakeResponse::decode(&mut r, 1).unwrap().error_code,
        0
    );
    let token = format!("\0alice\0{password}").into_bytes();
    let req = SaslAuthenticateRequest::default().with_auth_bytes(token.into());
    let sent = Instant::now();
    let mut r = round_trip(
        &mut stream,
        &request_frame(ApiKey::SaslAuthenticate, 1, 2, &req),
    );
    let answered = sent.elapsed();
    r.advance(4);
    let error_code = SaslAuthenticateResponse::decode(&mut r, 1)
        .unwrap()
        .error_code;
    let closed = (error_code != 0).then(|| {
        let mut rest = Vec::new();
        stream
            .read_to_end(&mut rest)
            .expect("closed, not timed out");
        assert!(rest.is_empty(), "nothing after the failure answer");
        sent.elapsed()
    });
    Login {
        stream,
        error_code,
        answered,
        closed,
    }
}

#[test]
fn a_failed_authentication_is_answered_and_closed_after_the_delay() {
    let delay = Duration::from_millis(3000);
    let (_broker, addr) = start(3000);
    let failed = login(&addr, "wrong");
    assert_eq!(failed.error_code, 58, "SASL_AUTHENTICATION_FAILED");
    assert!(
        failed.answered >= delay,
        "answered after {:?}",
        failed.answered
    );
    let closed = failed.closed.unwrap();
    assert!(closed >= delay, "closed after {closed:?}");

    // A successful login is not held, and its connection serves.
    let mut ok = login(&addr, "alice-secret");
    assert_eq!(ok.error_code, 0);
    assert!(ok.answered < delay, "a success held {:?}", ok.answered);
    assert!(ok.closed.is_none());
    let r = round_trip(
        &mut ok.stream,
        &request_frame(ApiKey::ApiVersions, 3, 3, &ApiVersionsRequest::default()),
    );
    assert_eq!(&r[..4], &3i32.to_be_bytes());
}

#[test]
fn with_no_delay_a_failed_authentication_closes_at_once() {
    let (_broker, addr) = start(0);
    let started = Instant::now();
    for _ in 0..10 {
        let failed = login(&addr, "wrong");
        assert_eq!(failed.error_code, 58, "SASL_AUTHENTICATION_FAILED");
        assert!(failed.closed.is_some());
    }
    // Kafka's default (100 ms) would hold the ten for a second at least.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "ten refusals took {took:?}");
}
