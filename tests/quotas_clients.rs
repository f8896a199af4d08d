//! Client quotas (issue 22; seed 000's quotas, KIP-546, KIP-219) on one
//! broker: Kafka 3.9's kafka-configs sets a 2 MB/s `producer_byte_rate`
//! for one client id (AlterClientQuotas) and reads it back
//! (DescribeClientQuotas); a flat-out confluent-kafka producer with that
//! client id is held to it (±15% over 20 s) with throttle_time_ms > 0 in
//! its responses and no delivery errors, while a producer with another
//! client id, running at the same time, is not throttled; the quota is
//! still in force after a restart; a consumer reading from the start under
//! a 2 MB/s `consumer_byte_rate` is held to it (throttled fetches carry no
//! data, as Kafka's); a `request_percentage` of 1% of a thread throttles
//! a client sending Metadata requests flat out (throttle_time_ms > 0 in
//! its Metadata answers, the connection muted that long), while another
//! client id sending the same is never throttled; a `producer_byte_rate`
//! set for a SASL/PLAIN user (`--entity-type users`, the quota user being
//! `KafkaPrincipal.getName`) throttles that user's produce responses and
//! not another user's sending with the same client id. Needs `bash
//! tests/run.sh` (JDK, Kafka jars, the venv).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::java::{kafka_tool, run_ok};
use common::zookeeper::free_port;
use common::{run_py_script, unique_topic, Broker, Conn};

const CONFIG_COMMAND: &str = "kafka.admin.ConfigCommand";
/// 2 MB/s: low enough that the quota'd client exceeds it even while an
/// unquoted one saturates the broker beside it on a debug build (a quota'd
/// client's requests each wait for the control shard's accounting).
const QUOTA: f64 = 2_000_000.0;

fn configs(broker: &Broker, args: &[&str]) -> String {
    let bootstrap = broker.bootstrap();
    let mut cmd: Command = kafka_tool(CONFIG_COMMAND);
    cmd.args(["--bootstrap-server", &bootstrap]).args(args);
    let out = run_ok(&mut cmd, "kafka-configs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn producer(
    broker: &Broker,
    topic: &str,
    client_id: &str,
    secs: u32,
) -> std::thread::JoinHandle<serde_json::Value> {
    producer_at(&broker.bootstrap(), topic, client_id, secs, None)
}

/// tests/py/quota_producer.py against `bootstrap`, with more librdkafka
/// settings from the JSON file `settings` (a SASL login) if given.
fn producer_at(
    bootstrap: &str,
    topic: &str,
    client_id: &str,
    secs: u32,
    settings: Option<&std::path::Path>,
) -> std::thread::JoinHandle<serde_json::Value> {
    let mut args = vec![
        bootstrap.to_owned(),
        topic.to_owned(),
        client_id.to_owned(),
        secs.to_string(),
        "1024".to_owned(),
    ];
    args.extend(settings.map(|p| p.display().to_string()));
    std::thread::spawn(move || run_py_script(&["confluent_kafka"], "quota_producer.py", &args))
}

/// `kafka-configs --alter` of a client id's quota (`--add-config k=v` or
/// `--delete-config k`); its output.
fn alter_client(broker: &Broker, op: &str, config: &str, client: &str) -> String {
    configs(
        broker,
        &[
            "--alter",
            op,
            config,
            "--entity-type",
            "clients",
            "--entity-name",
            client,
        ],
    )
}

/// `kafka-configs --describe` of a client id's quotas.
fn describe_client(broker: &Broker, client: &str) -> String {
    configs(
        broker,
        &[
            "--describe",
            "--entity-type",
            "clients",
            "--entity-name",
            client,
        ],
    )
}

fn rate(r: &serde_json::Value) -> f64 {
    r["acked_bytes"].as_f64().unwrap() / r["elapsed_s"].as_f64().unwrap()
}

#[test]
fn a_producer_byte_rate_holds_one_client_id_and_spares_the_others() {
    let log_dir = common::new_log_dir();
    let broker = Broker::start_in(log_dir, &[]);
    let topic = unique_topic("quota");
    Conn::open(&broker).create_topic(&topic, 3, &[]);

    let out = alter_client(
        &broker,
        "--add-config",
        "producer_byte_rate=2000000",
        "quota-a",
    );
    assert!(
        out.contains("Completed updating config for client quota-a"),
        "{out}"
    );
    let described = describe_client(&broker, "quota-a");
    assert!(
        described.contains("producer_byte_rate=2000000.0"),
        "DescribeClientQuotas: {described}"
    );
    let other = describe_client(&broker, "quota-b");
    assert!(!other.contains("producer_byte_rate"), "{other}");

    let a = producer(&broker, &topic, "quota-a", 20);
    let b = producer(&broker, &topic, "quota-b", 20);
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    eprintln!("[quota-a {a}]\n[quota-b {b}]");
    let (ra, rb) = (rate(&a), rate(&b));
    assert_eq!(a["errors"], 0, "{a}");
    assert_eq!(b["errors"], 0, "{b}");
    assert!(
        (ra - QUOTA).abs() <= 0.15 * QUOTA,
        "quota-a ran at {:.2} MB/s against a 2 MB/s quota: {a}",
        ra / 1e6
    );
    assert!(
        a["throttle_events"].as_u64().unwrap() > 0,
        "no throttle_time_ms seen: {a}"
    );
    assert_eq!(b["throttle_events"], 0, "quota-b was throttled: {b}");
    assert!(
        rb > 1.5 * QUOTA,
        "quota-b ran at {:.2} MB/s only: {b}",
        rb / 1e6
    );

    // Kept in the store: a restarted broker still applies it.
    let (status, dir) = broker.stop_keeping_dir();
    assert!(status.success());
    let broker = Broker::start_in(dir, &[]);
    let described = describe_client(&broker, "quota-a");
    assert!(
        described.contains("producer_byte_rate=2000000.0"),
        "{described}"
    );
    let a = producer(&broker, &topic, "quota-a", 4).join().unwrap();
    assert!(
        a["throttle_events"].as_u64().unwrap() > 0,
        "after the restart: {a}"
    );
    // Removed: no longer described.
    let out = alter_client(&broker, "--delete-config", "producer_byte_rate", "quota-a");
    assert!(out.contains("Completed updating config"), "{out}");
    let described = describe_client(&broker, "quota-a");
    assert!(!described.contains("producer_byte_rate"), "{described}");
    broker.stop();
}

#[test]
fn a_consumer_byte_rate_holds_a_consumer_reading_from_the_start() {
    let broker = Broker::start();
    let topic = unique_topic("quota-read");
    Conn::open(&broker).create_topic(&topic, 3, &[]);
    // Twice what 20 s at the quota reads, or more (unquoted).
    let filled = producer(&broker, &topic, "filler", 3).join().unwrap();
    assert!(
        filled["acked_bytes"].as_f64().unwrap() > 2.0 * 20.0 * QUOTA,
        "the topic holds too little to read for 20 s: {filled}"
    );
    let out = alter_client(
        &broker,
        "--add-config",
        "consumer_byte_rate=2000000",
        "slow-reader",
    );
    assert!(out.contains("Completed updating config"), "{out}");
    let args = vec![
        broker.bootstrap(),
        topic.clone(),
        "3".to_owned(),
        "slow-reader".to_owned(),
        "20".to_owned(),
    ];
    let r = run_py_script(&["confluent_kafka"], "quota_consumer.py", &args);
    eprintln!("[slow-reader {r}]");
    let got = r["bytes"].as_f64().unwrap() / r["elapsed_s"].as_f64().unwrap();
    assert_eq!(r["errors"], 0, "{r}");
    assert!(
        (got - QUOTA).abs() <= 0.15 * QUOTA,
        "slow-reader read {:.2} MB/s against a 2 MB/s quota: {r}",
        got / 1e6
    );
    assert!(r["throttle_events"].as_u64().unwrap() > 0, "{r}");
    broker.stop();
}

/// Metadata requests (all topics) on `conn` until one answer carries a
/// throttle or `max` were sent: (requests sent, the first throttle seen in
/// ms, the time until the next answer came after it).
fn metadata_until_throttled(conn: &mut Conn, max: usize) -> (usize, i32, std::time::Duration) {
    use kafka_protocol::messages::MetadataRequest;
    let request = MetadataRequest::default().with_topics(None);
    for n in 1..=max {
        let r = conn.call(9, &request);
        if r.throttle_time_ms > 0 {
            let t0 = std::time::Instant::now();
            let _ = conn.call(9, &request);
            return (n, r.throttle_time_ms, t0.elapsed());
        }
    }
    (max, 0, std::time::Duration::ZERO)
}

#[test]
fn a_request_percentage_throttles_one_client_id_and_spares_the_others() {
    let broker = Broker::start();
    let topic = unique_topic("quota-req");
    Conn::open(&broker).create_topic(&topic, 50, &[]);
    let out = alter_client(&broker, "--add-config", "request_percentage=1", "busy-app");
    assert!(
        out.contains("Completed updating config for client busy-app"),
        "{out}"
    );
    let described = describe_client(&broker, "busy-app");
    assert!(described.contains("request_percentage=1.0"), "{described}");

    // 1% of a thread over the 11 s window: about 110 ms of handling, a few
    // thousand Metadata requests at most.
    let mut busy = Conn::open(&broker).with_client_id("busy-app");
    let (sent, throttle_ms, muted) = metadata_until_throttled(&mut busy, 50_000);
    eprintln!(
        "busy-app: throttled ({throttle_ms} ms) after {sent} requests; next answer after {muted:?}"
    );
    assert!(
        throttle_ms > 0,
        "no throttle_time_ms after {sent} Metadata requests"
    );
    // KIP-219: the answer came at once and the connection was muted for
    // the throttle time before the next request was read.
    assert!(
        muted.as_millis() as f64 >= 0.8 * f64::from(throttle_ms),
        "next answer after {muted:?}, throttle {throttle_ms} ms"
    );
    let mut other = Conn::open(&broker).with_client_id("idle-app");
    let (sent_other, other_ms, _) = metadata_until_throttled(&mut other, sent.max(200) * 2);
    assert_eq!(
        other_ms, 0,
        "another client id was throttled after {sent_other} requests"
    );
    // Side by side over the same span: the quota'd client gets a small
    // share of the requests the other gets, and is told why.
    let span = std::time::Duration::from_secs(2);
    let (busy_n, busy_throttled) = requests_in(&mut busy, span);
    let (other_n, other_throttled) = requests_in(&mut other, span);
    eprintln!("in {span:?}: busy-app {busy_n} requests ({busy_throttled} throttled), idle-app {other_n} ({other_throttled})");
    assert!(busy_throttled > 0 && other_throttled == 0);
    assert!(
        busy_n * 3 < other_n,
        "busy-app sent {busy_n} requests, idle-app {other_n}"
    );
    broker.stop();
}

/// Metadata requests sent on `conn` for `span`, and how many answers
/// carried a throttle.
fn requests_in(conn: &mut Conn, span: std::time::Duration) -> (usize, usize) {
    use kafka_protocol::messages::MetadataRequest;
    let request = MetadataRequest::default().with_topics(None);
    let t0 = std::time::Instant::now();
    let (mut n, mut throttled) = (0, 0);
    while t0.elapsed() < span {
        let r = conn.call(9, &request);
        n += 1;
        throttled += usize::from(r.throttle_time_ms > 0);
    }
    (n, throttled)
}

/// PLAIN users of the SASL_PLAINTEXT listener (`PlainServerCallbackHandler`:
/// the JAAS options `user_<name>`).
const PLAIN_USERS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

/// librdkafka's SASL_PLAINTEXT + PLAIN login for `user`, as a JSON file in
/// `dir`.
fn plain_login(dir: &std::path::Path, user: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{user}.json"));
    let conf = serde_json::json!({
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": format!("{user}-secret"),
    });
    std::fs::write(&path, conf.to_string()).unwrap();
    path
}

/// Kafka's `ClientQuotaManager` resolves a quota for the principal's name
/// (`User:alice` → `alice`) and the client id: a `producer_byte_rate` of
/// `--entity-type users --entity-name alice` holds alice and no one else,
/// even a client of bob's with the very same client id.
#[test]
fn a_producer_byte_rate_for_a_sasl_user_throttles_that_user_only() {
    let (plain, sasl) = (free_port(), free_port());
    let broker = Broker::start_with(&[
        &format!("listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"),
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
        &format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_USERS}"),
    ]);
    assert_eq!(broker.bootstrap(), format!("127.0.0.1:{plain}"));
    let topic = unique_topic("quota-user");
    Conn::open(&broker).create_topic(&topic, 3, &[]);
    let user = ["--entity-type", "users", "--entity-name", "alice"];
    let add = ["--alter", "--add-config", "producer_byte_rate=2000000"];
    let out = configs(&broker, &[&user[..], &add[..]].concat());
    assert!(
        out.contains("Completed updating config for user alice."),
        "{out}"
    );
    let described = configs(&broker, &[&user[..], &["--describe"]].concat());
    assert!(
        described
            .contains("Quota configs for user-principal 'alice' are producer_byte_rate=2000000.0"),
        "DescribeClientQuotas: {described}"
    );

    // Both with one client id: only the authenticated user tells them apart.
    let sasl = format!("127.0.0.1:{sasl}");
    let dir = broker.log_dir.path().to_owned();
    let (alice, bob) = (plain_login(&dir, "alice"), plain_login(&dir, "bob"));
    let a = producer_at(&sasl, &topic, "same-app", 12, Some(&alice));
    let b = producer_at(&sasl, &topic, "same-app", 12, Some(&bob));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    eprintln!("[alice {a}]\n[bob {b}]");
    assert_eq!(a["errors"], 0, "{a}");
    assert_eq!(b["errors"], 0, "{b}");
    assert!(a["acked"].as_u64().unwrap() > 0, "alice logged in: {a}");
    assert!(b["acked"].as_u64().unwrap() > 0, "bob logged in: {b}");
    assert!(
        a["throttle_events"].as_u64().unwrap() > 0,
        "alice's produce responses carried no throttle_time_ms: {a}"
    );
    assert_eq!(b["throttle_events"], 0, "bob was throttled: {b}");
    // Within the quota: `Rate` measures over at least `quota.window.num` − 1
    // full windows (10 s), so up to QUOTA × (elapsed + 11 s) may pass.
    let allowed = QUOTA * (a["elapsed_s"].as_f64().unwrap() + 11.0);
    assert!(
        a["acked_bytes"].as_f64().unwrap() <= 1.2 * allowed,
        "alice sent {} bytes, {allowed} allowed: {a}",
        a["acked_bytes"]
    );
    broker.stop();
}
