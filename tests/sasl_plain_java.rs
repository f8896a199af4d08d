//! SASL/PLAIN (SECURITY.md §3.2–3.3) with Kafka 3.9's own Java client on a
//! broker with a PLAINTEXT listener and a SASL_PLAINTEXT one whose PLAIN
//! users come from its JAAS entry (`PlainServerCallbackHandler`):
//! - the Java producer, consumer and admin client (tests/java ClientCheck)
//!   log in as alice, create a topic, produce 100 records with acks=all
//!   and read every one back once and in order;
//! - with a wrong password, kafka-console-producer and
//!   kafka-console-consumer fail with `SaslAuthenticationException` and
//!   the broker's message "Authentication failed: Invalid username or
//!   password";
//! - each failed authentication leaves one broker log line naming the
//!   peer's address and port (Kafka's `Selector`: "Failed authentication
//!   with /<ip> (channelId=…) (<message>)") and the user tried, never the
//!   password: checked for raw logins from known local ports (an unknown
//!   user and a wrong password) and for the Java clients' logins.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use bytes::Buf;
use common::java::{kafka_tool, program, run_ok};
use common::zookeeper::free_port;
use common::{plain_log_line, request_frame, round_trip, unique_topic, Broker};
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

/// What the broker says to a wrong PLAIN password (`PlainSaslServer`).
const WRONG_PASSWORD: &str = "Authentication failed: Invalid username or password";

/// A broker with a PLAINTEXT listener and a SASL_PLAINTEXT one (PLAIN);
/// the SASL address.
fn start() -> (Broker, String) {
    let (p0, p1) = (free_port(), free_port());
    let settings = [
        format!("listeners=PLAINTEXT://127.0.0.1:{p0},SASL_PLAINTEXT://127.0.0.1:{p1}"),
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN".into(),
        format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}"),
        "offsets.topic.replication.factor=1".into(),
    ];
    let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
    (Broker::start_with(&refs), format!("127.0.0.1:{p1}"))
}

/// The Java clients' properties for a PLAIN login over SASL_PLAINTEXT.
fn java_props(dir: &Path, user: &str, password: &str) -> PathBuf {
    let path = dir.join(format!("java-{user}-{password}.properties"));
    let text = format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"{user}\" password=\"{password}\";\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// The broker's log lines for failed authentications, without colours.
fn failure_lines(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| plain_log_line(l))
        .filter(|l| l.contains("SASL authentication failed"))
        .collect()
}

/// kafka-console-producer with `props`: one record on stdin.
fn console_produce(sasl: &str, props: &Path, topic: &str) -> Output {
    let mut child = kafka_tool("kafka.tools.ConsoleProducer")
        .args(["--bootstrap-server", sasl, "--topic", topic])
        .arg("--producer.config")
        .arg(props)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("console producer");
    writeln!(child.stdin.take().unwrap(), "refused").unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn java_producer_and_consumer_over_sasl_plain_and_a_wrong_password() {
    let (broker, sasl) = start();
    let dir = broker.log_dir.path().to_owned();

    let topic = unique_topic("plain-java");
    let alice = java_props(&dir, "alice", "alice-secret");
    let out = run_ok(
        program("ClientCheck")
            .args(["roundtrip", &sasl, &topic, "2", "100", "acks=all"])
            .env("SHARDLOG_CLIENT_CONFIG", &alice),
        "ClientCheck roundtrip over SASL_PLAINTEXT + PLAIN",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["produce"]["delivered"], 100, "{r}");
    assert_eq!(r["produce"]["errors"], serde_json::json!([]), "{r}");
    assert_eq!(r["produce"]["acked_offsets_contiguous_from_0"], true, "{r}");
    for k in ["missing", "duplicates", "out_of_order", "offset_gaps"] {
        assert_eq!(r["consume"][k], 0, "{k}: {r}");
    }
    for k in ["wrong_partition", "bad_content", "unknown"] {
        assert_eq!(r["consume"][k], 0, "{k}: {r}");
    }
    assert_eq!(r["consume"]["consumed"], 100, "{r}");

    // A wrong password: the producer's send fails, the consumer stops.
    let wrong = java_props(&dir, "alice", "not-alices");
    let produced = console_produce(&sasl, &wrong, &topic);
    let stderr = String::from_utf8_lossy(&produced.stderr);
    assert!(
        stderr.contains("org.apache.kafka.common.errors.SaslAuthenticationException")
            && stderr.contains(WRONG_PASSWORD),
        "kafka-console-producer with a wrong password ({}):\n{stderr}",
        produced.status
    );
    let consumed = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer")
        .args(["--bootstrap-server", &sasl, "--topic", &topic])
        .args(["--from-beginning", "--timeout-ms", "30000"])
        .arg("--consumer.config")
        .arg(&wrong)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&consumed.stderr);
    // (Kafka 3.9's ConsoleConsumer logs "Error processing message,
    // terminating consumer process" and exits with status 0.)
    assert!(
        stderr.contains("org.apache.kafka.common.errors.SaslAuthenticationException")
            && stderr.contains(WRONG_PASSWORD),
        "kafka-console-consumer with a wrong password ({}):\n{stderr}",
        consumed.status
    );
    assert!(
        consumed.stdout.is_empty(),
        "the refused consumer printed records"
    );

    // Each refused Java client left a line naming alice; the successful
    // logins none.
    let (status, lines) = broker.stop_collect();
    assert!(status.success());
    let failures = failure_lines(&lines);
    assert!(
        failures.len() >= 2
            && failures
                .iter()
                .all(|l| l.contains("alice") && l.contains("127.0.0.1:")),
        "failed logins in the broker's log:\n{}",
        failures.join("\n")
    );
    let all = lines.join("\n");
    assert!(!all.contains("not-alices") && !all.contains("alice-secret"));
}

/// SaslHandshake v1 (PLAIN), then SaslAuthenticate v1 as `user`: the
/// SaslAuthenticate error code and the connection's local port.
fn raw_plain_login(addr: &str, user: &str, password: &str) -> (i16, u16) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let port = stream.local_addr().unwrap().port();
    let hs = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let mut r = round_trip(
        &mut stream,
        &request_frame(ApiKey::SaslHandshake, 1, 1, &hs),
    );
    r.advance(4);
    let handshake = SaslHandshakeResponse::decode(&mut r, 1).unwrap();
    assert_eq!(handshake.error_code, 0);
    let token = format!("\0{user}\0{password}").into_bytes();
    let req = SaslAuthenticateRequest::default().with_auth_bytes(token.into());
    let mut r = round_trip(
        &mut stream,
        &request_frame(ApiKey::SaslAuthenticate, 1, 2, &req),
    );
    r.advance(4);
    let answer = SaslAuthenticateResponse::decode(&mut r, 1).unwrap();
    (answer.error_code, port)
}

#[test]
fn a_failed_authentication_is_logged_with_the_peer_address_and_the_user() {
    let (broker, sasl) = start();
    let (code, ok_port) = raw_plain_login(&sasl, "bob", "bob-secret");
    assert_eq!(code, 0, "bob's login");
    let (code, wrong_port) = raw_plain_login(&sasl, "bob", "not-bobs");
    assert_eq!(code, 58, "SASL_AUTHENTICATION_FAILED for a wrong password");
    let (code, unknown_port) = raw_plain_login(&sasl, "mallory", "whatever");
    assert_eq!(code, 58, "SASL_AUTHENTICATION_FAILED for an unknown user");

    let (status, lines) = broker.stop_collect();
    assert!(status.success());
    let failures = failure_lines(&lines);
    let shown = failures.join("\n");
    assert_eq!(failures.len(), 2, "one line per failure:\n{shown}");
    for (user, port) in [("bob", wrong_port), ("mallory", unknown_port)] {
        let peer = format!("127.0.0.1:{port}");
        assert!(
            failures
                .iter()
                .any(|l| l.contains(&peer) && l.contains(user) && l.contains("SASL_PLAINTEXT")),
            "no failure line names {peer} and {user}:\n{shown}"
        );
    }
    assert!(
        !failures.iter().any(|l| l.contains(&format!(":{ok_port}"))),
        "the successful login logged as a failure:\n{shown}"
    );
    let all = lines.join("\n");
    assert!(
        !all.contains("not-bobs") && !all.contains("whatever") && !all.contains("bob-secret"),
        "a password in the broker's log"
    );
}
