//! TLS on the wire, against the real broker: kafka-python produces and
//! fetches over an SSL listener with client certificates (from memory and,
//! after a restart, from segment files encrypted through the connection's
//! read buffer); bad clients on the SSL port (a PLAINTEXT Kafka client,
//! garbage, a truncated handshake, an unknown-CA and an expired client
//! certificate under `ssl.client.auth=required`, a client that never
//! finishes its handshake within `connections.max.idle.ms`, one whose
//! ClientHello comes a byte per record past the 128 KiB a handshake may
//! hold) are closed with a warning naming the peer and the reason, while
//! a TLS client keeps producing and fetching. Keys are made at test time by
//! tests/common/tls.rs (`openssl`, `keytool`).
//! Needs `bash tests/run.sh` (the venv with kafka-python).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::Path;

use common::broker::{new_log_dir, plain_log_line, Broker};
use common::clients::run_python_with_env;
use common::tls::{Store, Tls};

/// The broker's settings: an SSL listener first (the readiness line's
/// address), the inter-broker PLAINTEXT listener second.
fn ssl_overrides(tls: &Tls, extra: &[&str]) -> Vec<String> {
    let mut o = vec!["listeners=SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0".to_string()];
    o.extend(tls.broker_ssl(BROKER, Store::Pem, "", Some("required")));
    o.push("auto.create.topics.enable=true".into());
    o.push("num.partitions=1".into());
    o.extend(extra.iter().map(|s| (*s).to_string()));
    o
}

fn start(tls: &Tls, log_dir: tempfile::TempDir, extra: &[&str], rust_log: &str) -> Broker {
    let o = ssl_overrides(tls, extra);
    let refs: Vec<&str> = o.iter().map(String::as_str).collect();
    Broker::start_logging(log_dir, &refs, Some(rust_log))
}

/// kafka-python over SSL with the `client` certificate: a snippet run with
/// `produce(n)` / `consume(n)` helpers; prints what the snippet prints.
fn python(broker: &Broker, keys: &Path, code: &str) -> String {
    let prelude = r#"
import os, sys, json, hashlib
from kafka import KafkaProducer, KafkaConsumer
K = os.environ["KEYS"]
SSL = dict(bootstrap_servers=os.environ["BOOTSTRAP"], security_protocol="SSL",
           ssl_cafile=K + "/ca.pem", ssl_certfile=K + "/client.pem", ssl_keyfile=K + "/client.key")
def value(i):
    head = ("%010d:" % i).encode()
    return head + bytes([i % 251]) * (1024 - len(head))
def produce(start, n, topic="tls"):
    p = KafkaProducer(acks="all", linger_ms=5, batch_size=256 * 1024, **SSL)
    for i in range(start, start + n):
        p.send(topic, value(i))
    p.flush(); p.close()
def consume(n, topic="tls"):
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000,
                      fetch_max_bytes=8 * 1024 * 1024, max_partition_fetch_bytes=8 * 1024 * 1024, **SSL)
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == n:
            break
    c.close()
    assert len(got) == n, "consumed %d of %d" % (len(got), n)
    for i, v in enumerate(got):
        assert v == value(i), "record %d differs" % i
    return hashlib.sha256(b"".join(got)).hexdigest()
"#;
    run_python_with_env(
        broker,
        &format!("{prelude}\n{code}"),
        &[("KEYS", keys.as_os_str())],
    )
}

/// The `tls=` counter of the broker's `zerocopy:` shutdown line, and its
/// `sendfile=` one.
fn tls_and_sendfile(lines: &[String]) -> (u64, u64) {
    let line = lines
        .iter()
        .rev()
        .find_map(|l| l.split_once("zerocopy: ").map(|(_, r)| r.to_owned()))
        .unwrap_or_else(|| panic!("no zerocopy line in {lines:#?}"));
    let field = |k: &str| -> u64 {
        line.split_whitespace()
            .find_map(|f| {
                f.strip_prefix(&format!("{k}="))
                    .map(|v| v.parse().expect("number"))
            })
            .unwrap_or_else(|| panic!("no {k}= in {line}"))
    };
    (field("tls"), field("sendfile"))
}

const RECORDS: usize = 4000;

/// The broker's certificate (CN; SANs localhost and 127.0.0.1).
const BROKER: &str = "broker-1";

#[test]
fn kafka_python_produces_and_fetches_over_tls_from_memory_and_from_segment_files() {
    let tls = Tls::make(&[BROKER]);
    let keys = tls.dir.path();
    let log = "warn,shardlog::server::connection=debug";
    let broker = start(&tls, new_log_dir(), &[], log);
    let hot = python(
        &broker,
        keys,
        &format!("produce(0, {RECORDS}); print(consume({RECORDS}))"),
    );
    let stopped = broker.stop_with_logs();
    assert_eq!(stopped.status.code(), Some(0));
    let lines: &Vec<String> = &stopped
        .log_lines
        .iter()
        .map(|l| plain_log_line(l))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("principal=User:O=shardlog-tests,CN=client")),
        "the client certificate names the principal: {lines:#?}"
    );
    let (tls_hot, _) = tls_and_sendfile(lines);
    let payload = (RECORDS * 1024) as u64;
    assert!(
        tls_hot >= payload,
        "tls={tls_hot} for {payload} bytes fetched"
    );

    // After a restart the batch cache is empty: the fetch reads segment
    // files (file regions), encrypted through the connection's buffer.
    let broker = start(&tls, stopped.log_dir, &[], log);
    let cold = python(&broker, keys, &format!("print(consume({RECORDS}))"));
    assert_eq!(cold, hot, "the cold read returns the same records");
    let (status, lines) = broker.stop_collect();
    assert_eq!(status.code(), Some(0));
    let (tls_cold, sendfile) = tls_and_sendfile(&lines);
    assert!(
        tls_cold >= payload,
        "tls={tls_cold} for {payload} bytes fetched"
    );
    assert_eq!(sendfile, 0, "nothing leaves unencrypted by sendfile");
}

/// The bad clients, in Python's `ssl`/`socket`: each connects, misbehaves
/// and waits until the broker closes the connection; a kafka-python
/// producer and consumer work before and after.
const BAD_CLIENTS: &str = r#"
import socket, ssl, time
ADDR = os.environ["BOOTSTRAP"].rsplit(":", 1); ADDR = (ADDR[0], int(ADDR[1]))
def wait_closed(s):
    s.settimeout(60)
    try:
        while s.recv(4096):
            pass
    except (ConnectionResetError, ssl.SSLError, OSError):
        pass
    s.close()
def raw(data):
    s = socket.create_connection(ADDR)
    if data:
        s.sendall(data)
    wait_closed(s)
def with_cert(name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(K + "/ca.pem")
    ctx.load_cert_chain(K + "/%s.pem" % name, K + "/%s.key" % name)
    s = socket.create_connection(ADDR)
    try:
        t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
        t.sendall(b"\x00\x00\x00\x01\x07")
        wait_closed(t)
    except (ssl.SSLError, OSError):
        s.close()
produce(0, 100)
# A PLAINTEXT Kafka client: ApiVersions v0, correlation 1, no client id.
raw(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff")
raw(b"\xff" * 64)
out = ssl.MemoryBIO()
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(K + "/ca.pem")
obj = ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname="127.0.0.1")
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = out.read()
s = socket.create_connection(ADDR)
s.sendall(hello[: len(hello) // 2])
s.shutdown(socket.SHUT_WR)
wait_closed(s)
with_cert("client-other-ca")
with_cert("client-expired")
# A ClientHello announcing 65535 bytes (rustls' largest handshake message)
# whose body comes one byte per record: 6 bytes on the wire per byte of
# handshake, held until the message is whole.
def flood(total):
    head = b"\x16\x03\x01\x00\x04\x01\x00\xff\xff"
    frag = b"\x16\x03\x01\x00\x01\x00"
    s = socket.create_connection(ADDR)
    try:
        s.sendall(head + frag * ((total - len(head)) // len(frag) + 1))
    except OSError:
        pass  # closed (reset) before all of it was read
    wait_closed(s)
flood(FLOOD_OVER)
# Under the cap, never finishing: only the idle bound closes it (at the
# same time as the client that never starts its handshake).
import threading
under = threading.Thread(target=flood, args=(FLOOD_UNDER,))
under.start()
raw(b"")  # never starts its handshake: closed after connections.max.idle.ms
under.join()
produce(100, 100)
print(consume(200))
"#;

#[test]
fn bad_clients_on_the_ssl_port_are_closed_with_rustls_reason_and_tls_clients_go_on() {
    let tls = Tls::make(&[BROKER]);
    let keys = tls.dir.path();
    // boot::tls logs (info) which record path the host gives a listener.
    let broker = start(
        &tls,
        new_log_dir(),
        &["connections.max.idle.ms=3000"],
        "warn,shardlog::boot::tls=info",
    );
    let sizes = format!("FLOOD_OVER = {FLOOD_OVER}\nFLOOD_UNDER = {FLOOD_UNDER}\n");
    python(&broker, keys, &format!("{sizes}{BAD_CLIENTS}"));
    let (status, lines) = broker.stop_collect();
    let lines: Vec<String> = lines.iter().map(|l| plain_log_line(l)).collect();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
    let closes: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("closing connection"))
        .collect();
    handshake_floods_are_bounded(&lines, &closes);
    for reason in [
        "InvalidContentType",
        "tls handshake eof",
        "UnknownIssuer",
        "certificate expired",
        "not completed within connections.max.idle.ms",
    ] {
        assert!(
            closes
                .iter()
                .any(|l| l.contains(reason) && l.contains("peer=127.0.0.1:")),
            "no warning naming the peer and {reason:?} in {closes:#?}"
        );
    }
    // The PLAINTEXT client and the garbage both fail as records of no TLS
    // content type.
    assert!(
        closes
            .iter()
            .filter(|l| l.contains("InvalidContentType"))
            .count()
            >= 2,
        "{closes:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("panicked")),
        "nothing panics: {lines:#?}"
    );
}

/// Wire bytes of the handshake flood past the cap, and of the one under it
/// (`HANDSHAKE_INPUT_MAX` in src/server/tls_conn/records.rs is 128 KiB).
const FLOOD_OVER: usize = 136 * 1024;
const FLOOD_UNDER: usize = 112 * 1024;

/// The two handshake floods of [`BAD_CLIENTS`]. In user space
/// (`records::accept`) the one past 128 KiB is closed for it at once and
/// the one under it only by `connections.max.idle.ms`. Where the kernel may
/// take the session, the handshake runs in rustls' buffered connection,
/// whose own bound is 64 KiB of a handshake message being joined
/// (`DeframerVecBuffer::prepare_read`): both are closed for that.
fn handshake_floods_are_bounded(lines: &[String], closes: &[&String]) {
    let kernel = lines
        .iter()
        .any(|l| l.contains("TLS listener") && l.contains("kernel TLS for"));
    let with = |reason: &str| {
        closes
            .iter()
            .filter(|l| l.contains(reason) && l.contains("peer=127.0.0.1:"))
            .count()
    };
    let idle = with("not completed within connections.max.idle.ms");
    if kernel {
        assert_eq!(with("message buffer full"), 2, "{closes:#?}");
        assert_eq!(idle, 1, "only the silent client idles out: {closes:#?}");
    } else {
        assert_eq!(
            with("TLS handshake failed: handshake flight over 128 KiB"),
            1,
            "the flood past 128 KiB, alone: {closes:#?}"
        );
        assert_eq!(
            idle, 2,
            "the silent client and the flood under 128 KiB idle out: {closes:#?}"
        );
    }
}
