//! SASL authentication (SECURITY.md §3–4) with real clients against one
//! broker with three listeners: PLAINTEXT (the admin's way in), a
//! SASL_PLAINTEXT listener with PLAIN users from its JAAS entry, and a
//! SASL_SSL listener with SCRAM-SHA-512 / SCRAM-SHA-256 credentials kept in
//! the metadata store as Kafka keeps them in `/config/users/<u>`:
//! - confluent-kafka produces and reads back over SASL_PLAINTEXT + PLAIN;
//!   a wrong password gets the broker's SASL_AUTHENTICATION_FAILED message
//!   and the broker goes on serving;
//! - a request other than ApiVersions / SaslHandshake before authentication
//!   closes the connection without an answer, and so does a frame over
//!   `sasl.server.max.receive.size`;
//! - `kafka-configs --alter --add-config 'SCRAM-SHA-512=[…]'` creates a
//!   user (AlterUserScramCredentials), `--describe` shows it
//!   (DescribeUserScramCredentials); the Java client (ClientCheck) and
//!   confluent-kafka then log in with it over SASL_SSL and produce and
//!   read back; the old password of a changed credential is refused;
//! - kcat and kafkajs produce and read back with SCRAM-SHA-512 over
//!   SASL_SSL and PLAIN over SASL_PLAINTEXT; kafkajs with a wrong password
//!   gets its SASL authentication error.
//!
//! And a 3-broker ZooKeeper-mode cluster whose inter-broker listener is
//! SASL_SSL with PLAIN (`sasl.mechanism.inter.broker.protocol`, the
//! broker's login from the listener's JAAS entry): topics are created
//! through the controller's channel and followers replicate, every one of
//! those connections logged in, and the leaders killed with kill -9 in
//! turn under an acks=all idempotent producer lose, duplicate and reorder
//! no acknowledged record (the `kafka_` variant runs the same on Kafka 3.9:
//! `cargo test --test sasl_clients -- --ignored kafka_`); and a mixed
//! cluster with Kafka 3.9 on SASL_SSL + SCRAM-SHA-512 sharing SCRAM users
//! and ACLs both ways, then the same leader kills across both
//! implementations.
//!
//! And two shardlog brokers with OAUTHBEARER between them (Kafka's
//! unsecured login options, 6 s tokens): acks=all records over ~10 s,
//! longer than a token, are all read back, and no broker connection is
//! closed for an expired session (the token is refreshed and the sessions
//! re-authenticated, KIP-368).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod acl_changes;
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use std::collections::BTreeMap;

use common::java::{kafka_tool, program, run_ok};
use common::replica_cluster::listeners::Listeners;
use common::replica_cluster::scenario::{
    kill_leaders_with_history, probe_replication, produce, settings, SESSION_MS,
};
use common::replica_cluster::{assert_history_ok, check, drain, ReplCluster, System};
use common::tls::{Store, Tls, PASSWORD};
use common::zookeeper::free_port;
use common::{kcat_produce_and_read, request_frame, run_py_script, unique_topic, Broker};
use serde_json::json;

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" \
     user_alice=\"alice-secret\";";
const SCRAM_JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required;";

struct SaslBroker {
    broker: Broker,
    tls: Tls,
    plaintext: String,
    sasl_plaintext: String,
    sasl_ssl: String,
}

fn start() -> SaslBroker {
    let tls = Tls::make(&["broker-1"]);
    let (p0, p1, p2) = (free_port(), free_port(), free_port());
    let mut settings = vec![
        format!(
            "listeners=PLAINTEXT://127.0.0.1:{p0},SASL_PLAINTEXT://127.0.0.1:{p1},SASL_SSL://127.0.0.1:{p2}"
        ),
        "offsets.topic.replication.factor=1".into(),
        "offsets.topic.num.partitions=2".into(),
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN".into(),
        format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}"),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256".into(),
        format!("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={SCRAM_JAAS}"),
        format!("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config={SCRAM_JAAS}"),
        // A small pre-authentication limit, to check it with a small frame.
        "listener.name.sasl_plaintext.sasl.server.max.receive.size=4096".into(),
    ];
    settings.extend(tls.broker_ssl(
        "broker-1",
        Store::Pkcs12Openssl,
        "listener.name.sasl_ssl.",
        None,
    ));
    let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
    let broker = Broker::start_with(&refs);
    SaslBroker {
        broker,
        tls,
        plaintext: format!("127.0.0.1:{p0}"),
        sasl_plaintext: format!("127.0.0.1:{p1}"),
        sasl_ssl: format!("127.0.0.1:{p2}"),
    }
}

impl SaslBroker {
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.tls.path(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// librdkafka's settings for `user` on a listener, as a JSON file.
    fn rdkafka_conf(
        &self,
        name: &str,
        ssl: bool,
        mechanism: &str,
        user: &str,
        password: &str,
    ) -> String {
        let mut conf = json!({
            "bootstrap.servers": if ssl { &self.sasl_ssl } else { &self.sasl_plaintext },
            "security.protocol": if ssl { "SASL_SSL" } else { "SASL_PLAINTEXT" },
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        });
        if ssl {
            conf["ssl.ca.location"] = json!(self.tls.ca_pem().display().to_string());
        }
        self.write(name, &conf.to_string()).display().to_string()
    }

    /// A Java client's properties for SCRAM-SHA-512 over SASL_SSL.
    fn java_props(&self, user: &str, password: &str) -> PathBuf {
        self.write(
            &format!("java-{user}.properties"),
            &format!(
                "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n\
                 sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
                 username=\"{user}\" password=\"{password}\";\n\
                 ssl.truststore.type=PKCS12\nssl.truststore.location={}\nssl.truststore.password={PASSWORD}\n",
                self.tls.p_str("truststore.p12")
            ),
        )
    }

    fn kafka_configs(&self, args: &[&str]) -> String {
        let out = run_ok(
            kafka_tool("kafka.admin.ConfigCommand")
                .args([
                    "--bootstrap-server",
                    &self.plaintext,
                    "--entity-type",
                    "users",
                ])
                .args(args),
            "kafka-configs",
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn confluent_round_trip(conf: &str, what: &str) {
    let topic = unique_topic("sasl");
    let r = run_py_script(
        &["confluent_kafka"],
        "sasl_clients.py",
        &["roundtrip".into(), conf.into(), topic, "50".into()],
    );
    let want: Vec<String> = (0..50).map(|i| format!("sasl-{i}")).collect();
    assert_eq!(r["delivered"], 50, "{what}: {r}");
    assert_eq!(r["errors"], json!([]), "{what}: {r}");
    assert_eq!(r["values"], json!(want), "{what}: {r}");
}

fn confluent_refused(conf: &str, what: &str) -> String {
    let r = run_py_script(
        &["confluent_kafka"],
        "sasl_clients.py",
        &["refused".into(), conf.into()],
    );
    assert_eq!(r["ok"], false, "{what}: {r}");
    r["errors"].to_string()
}

/// A frame the broker answers by closing the connection: true when the
/// first read sees the end of the stream (or a reset: the broker closed
/// with the rest of the frame unread), never a response.
fn closed_without_answer(addr: &str, frame: &[u8]) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(frame).unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(_) => false,
    }
}

/// librdkafka's `-X` settings for `user` on the SASL_PLAINTEXT (PLAIN) or
/// SASL_SSL listener, as kcat takes them.
fn kcat_sasl_args(b: &SaslBroker, ssl: bool, mechanism: &str, user: &str, pw: &str) -> Vec<String> {
    let mut kv = vec![
        format!(
            "security.protocol={}",
            if ssl { "SASL_SSL" } else { "SASL_PLAINTEXT" }
        ),
        format!("sasl.mechanisms={mechanism}"),
        format!("sasl.username={user}"),
        format!("sasl.password={pw}"),
    ];
    if ssl {
        kv.push(format!("ssl.ca.location={}", b.tls.ca_pem().display()));
    }
    let bootstrap = if ssl { &b.sasl_ssl } else { &b.sasl_plaintext };
    let mut args = vec!["-b".to_string(), bootstrap.clone()];
    for x in kv {
        args.push("-X".into());
        args.push(x);
    }
    args
}

/// kcat (Debian's, librdkafka 2.0): produce lines to partition 0 with
/// acks=all, read them back.
fn kcat_round_trip(b: &SaslBroker, ssl: bool, mechanism: &str, user: &str, pw: &str) {
    let base = kcat_sasl_args(b, ssl, mechanism, user, pw);
    let topic = unique_topic("sasl-kcat");
    let lines: Vec<String> = (0..50).map(|i| format!("kcat-sasl-{i}")).collect();
    let got = kcat_produce_and_read(&base, &topic, &lines, &format!("with {mechanism}"));
    assert_eq!(got, lines, "kcat read back with {mechanism}");
}

/// kafkajs (tests/js/sasl_roundtrip.js): its JSON line.
fn kafkajs(b: &SaslBroker, ssl: bool, mechanism: &str, user: &str, pw: &str) -> serde_json::Value {
    let modules = std::env::var("SHARDLOG_TEST_NODE_MODULES").unwrap_or_else(|_| {
        panic!("kafkajs missing: run `bash tests/run.sh` (npm install kafkajs into the test cache)")
    });
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js/sasl_roundtrip.js");
    let ca = if ssl {
        b.tls.ca_pem().display().to_string()
    } else {
        "-".into()
    };
    let bootstrap = if ssl { &b.sasl_ssl } else { &b.sasl_plaintext };
    let out = Command::new("node")
        .arg(script)
        .args([
            bootstrap,
            mechanism,
            user,
            pw,
            &ca,
            &unique_topic("sasl-js"),
            "30",
        ])
        .env("NODE_PATH", modules)
        .output()
        .unwrap();
    assert!(out.status.success(), "node sasl_roundtrip.js: {out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("kafkajs printed no JSON ({e}): {out:?}"))
}

fn kafkajs_round_trip(b: &SaslBroker, ssl: bool, mechanism: &str, user: &str, pw: &str) {
    let r = kafkajs(b, ssl, mechanism, user, pw);
    let want: Vec<String> = (0..30).map(|i| format!("kafkajs-sasl-{i}")).collect();
    assert_eq!(r["ok"], true, "kafkajs with {mechanism}: {r}");
    assert_eq!(r["acks"][0]["error"], 0, "kafkajs with {mechanism}: {r}");
    assert_eq!(r["values"], json!(want), "kafkajs with {mechanism}: {r}");
}

/// `shardlog loadgen` over SASL: `--messages` produced, then read back
/// with `--consume-only` (whose fetch connections log in too); the
/// results' counts are checked. Returns loadgen's stderr when `ok` is
/// false (the run must fail).
fn loadgen_sasl(
    b: &SaslBroker,
    ssl: bool,
    mechanism: &str,
    user: &str,
    pw: &str,
    ok: bool,
) -> String {
    let topic = unique_topic("sasl-loadgen");
    let out_dir = tempfile::tempdir().unwrap();
    let ca = b.tls.ca_pem().display().to_string();
    let mut base: Vec<String> = vec![
        "loadgen".into(),
        "--bootstrap".into(),
        if ssl {
            b.sasl_ssl.clone()
        } else {
            b.sasl_plaintext.clone()
        },
        "--security-protocol".into(),
        if ssl { "SASL_SSL" } else { "SASL_PLAINTEXT" }.into(),
        "--sasl-mechanism".into(),
        mechanism.into(),
        "--sasl-username".into(),
        user.into(),
        "--sasl-password".into(),
        pw.into(),
        "--topic".into(),
        topic,
        "--partitions".into(),
        "2".into(),
    ];
    if ssl {
        base.extend(["--ssl-ca-location".into(), ca]);
    }
    let run = |extra: &[&str], dir: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(&base)
            .args(extra)
            .args(["--out", &out_dir.path().join(dir).display().to_string()])
            .output()
            .unwrap()
    };
    let produced = run(
        &["--messages", "2000", "--consumers", "0", "--warmup", "0s"],
        "p",
    );
    let stderr = String::from_utf8_lossy(&produced.stderr).to_string();
    if !ok {
        assert!(
            !produced.status.success(),
            "loadgen as {user} with a wrong password succeeded"
        );
        return stderr;
    }
    assert!(
        produced.status.success(),
        "loadgen produce with {mechanism}: {stderr}"
    );
    let consumed = run(&["--consume-only", "--consumers", "1"], "c");
    let cerr = String::from_utf8_lossy(&consumed.stderr);
    assert!(
        consumed.status.success(),
        "loadgen consume with {mechanism}: {cerr}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.path().join("c/consume.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        json["records"], 2000,
        "loadgen read back over {mechanism}: {json}"
    );
    stderr
}

/// kcat, kafkajs and loadgen with SCRAM-SHA-512 over SASL_SSL (bob) and
/// PLAIN over SASL_PLAINTEXT (alice); kafkajs and loadgen with a wrong
/// password are refused.
fn kcat_and_kafkajs(b: &SaslBroker) {
    loadgen_sasl(b, true, "SCRAM-SHA-512", "bob", "bob-secret", true);
    loadgen_sasl(b, false, "PLAIN", "alice", "alice-secret", true);
    let refused = loadgen_sasl(b, true, "SCRAM-SHA-512", "bob", "not-bobs", false);
    assert!(
        refused.contains("SASL"),
        "loadgen names the SASL failure: {refused}"
    );
    kcat_round_trip(b, true, "SCRAM-SHA-512", "bob", "bob-secret");
    kcat_round_trip(b, false, "PLAIN", "alice", "alice-secret");
    kafkajs_round_trip(b, true, "scram-sha-512", "bob", "bob-secret");
    kafkajs_round_trip(b, false, "plain", "alice", "alice-secret");
    let r = kafkajs(b, true, "scram-sha-512", "bob", "not-bobs");
    assert_eq!(r["ok"], false, "kafkajs with a wrong password: {r}");
    assert!(
        r["error"].as_str().unwrap_or_default().contains("SASL"),
        "kafkajs names the SASL failure: {r}"
    );
}

#[test]
fn plain_and_scram_logins_with_real_clients_and_refusals() {
    let b = start();

    // --- SASL_PLAINTEXT + PLAIN (users from the listener's JAAS entry).
    let alice = b.rdkafka_conf("alice.json", false, "PLAIN", "alice", "alice-secret");
    confluent_round_trip(&alice, "confluent-kafka, SASL_PLAINTEXT + PLAIN");
    let wrong = b.rdkafka_conf("wrong.json", false, "PLAIN", "alice", "nope");
    let errors = confluent_refused(&wrong, "a wrong PLAIN password");
    assert!(
        errors.contains("Invalid username or password"),
        "the broker's SaslAuthenticate message reaches the client: {errors}"
    );
    // A mechanism the listener does not enable.
    let scram_on_plain = b.rdkafka_conf(
        "scram-on-plain.json",
        false,
        "SCRAM-SHA-256",
        "alice",
        "alice-secret",
    );
    let errors = confluent_refused(&scram_on_plain, "an unsupported mechanism");
    assert!(
        errors.contains("PLAIN"),
        "the enabled list in the handshake answer: {errors}"
    );

    // --- Before authentication only ApiVersions and SaslHandshake.
    let metadata = request_frame(
        kafka_protocol::messages::ApiKey::Metadata,
        1,
        1,
        &kafka_protocol::messages::MetadataRequest::default(),
    );
    assert!(
        closed_without_answer(&b.sasl_plaintext, &metadata),
        "Metadata before authentication"
    );
    // A frame over sasl.server.max.receive.size (4096 here).
    let mut big = 5000u32.to_be_bytes().to_vec();
    big.extend(std::iter::repeat_n(0u8, 100));
    assert!(
        closed_without_answer(&b.sasl_plaintext, &big),
        "a frame over the pre-auth limit"
    );
    // The broker goes on serving after all of that.
    confluent_round_trip(&alice, "confluent-kafka after the refusals");

    // --- SCRAM users made with kafka-configs over PLAINTEXT.
    let out = b.kafka_configs(&[
        "--entity-name",
        "bob",
        "--alter",
        "--add-config",
        "SCRAM-SHA-512=[iterations=8192,password=bob-secret],SCRAM-SHA-256=[password=bob-256]",
    ]);
    assert!(
        out.contains("Completed updating config for user bob."),
        "{out}"
    );
    let described = b.kafka_configs(&["--entity-name", "bob", "--describe"]);
    assert!(
        described.contains("SCRAM-SHA-512=iterations=8192")
            && described.contains("SCRAM-SHA-256=iterations=4096"),
        "kafka-configs --describe: {described}"
    );

    // The Java client over SASL_SSL + SCRAM-SHA-512.
    let topic = unique_topic("sasl-java");
    let props = b.java_props("bob", "bob-secret");
    let out = run_ok(
        program("ClientCheck")
            .args(["roundtrip", &b.sasl_ssl, &topic, "2", "100", "acks=all"])
            .env("SHARDLOG_CLIENT_CONFIG", &props),
        "ClientCheck roundtrip over SASL_SSL + SCRAM-SHA-512",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["produce"]["delivered"], 100, "{r}");
    assert_eq!(r["consume"]["consumed"], 100, "{r}");
    assert_eq!(r["consume"]["missing"], 0, "{r}");

    // confluent-kafka with both SCRAM mechanisms over SASL_SSL.
    let bob512 = b.rdkafka_conf("bob512.json", true, "SCRAM-SHA-512", "bob", "bob-secret");
    confluent_round_trip(&bob512, "confluent-kafka, SASL_SSL + SCRAM-SHA-512");
    let bob256 = b.rdkafka_conf("bob256.json", true, "SCRAM-SHA-256", "bob", "bob-256");
    confluent_round_trip(&bob256, "confluent-kafka, SASL_SSL + SCRAM-SHA-256");
    kcat_and_kafkajs(&b);

    // A changed password: the old one is refused, the new one works.
    b.kafka_configs(&[
        "--entity-name",
        "bob",
        "--alter",
        "--add-config",
        "SCRAM-SHA-512=[password=bob-new]",
    ]);
    let errors = confluent_refused(&bob512, "the old SCRAM password");
    assert!(errors.contains("Authentication failed"), "{errors}");
    let bob_new = b.rdkafka_conf("bob-new.json", true, "SCRAM-SHA-512", "bob", "bob-new");
    confluent_round_trip(&bob_new, "confluent-kafka with the new SCRAM password");
    // An unknown user: the same generic failure.
    let nobody = b.rdkafka_conf("nobody.json", true, "SCRAM-SHA-512", "nobody", "x");
    let errors = confluent_refused(&nobody, "an unknown SCRAM user");
    assert!(errors.contains("Authentication failed"), "{errors}");

    let lines = b.broker.log_lines().join("\n");
    assert!(
        !lines.contains("alice-secret") && !lines.contains("bob-new"),
        "no password in the log"
    );
    assert!(
        lines.contains("SASL authentication failed") && lines.contains("for user bob"),
        "failures are logged with the user tried (bob's old SCRAM password)"
    );
}

/// Three brokers of `system` whose inter-broker listener is SASL_SSL with
/// PLAIN (the brokers' user in the listener's JAAS entry, keystores in
/// Kafka's default JKS for Kafka brokers), with the replication scenarios'
/// short timeouts: topics are created through the controller's channel
/// and followers replicate, every one of those connections logged in over
/// TLS. (SCRAM between brokers: the mixed cluster below.) The keystores
/// live as long as the returned [`Tls`] (restarts read them again).
fn start_sasl_ssl_cluster(system: System) -> (ReplCluster, Tls) {
    let tls = Tls::make(&["broker-1", "broker-2", "broker-3"]);
    let jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                username=\"broker\" password=\"broker-secret\" user_broker=\"broker-secret\";";
    let ports: BTreeMap<i32, u16> = (1..=3).map(|id| (id, free_port())).collect();
    let store = if system == System::Kafka {
        Store::Jks
    } else {
        Store::Pkcs12Openssl
    };
    let mut s = settings(2, false, 3000, SESSION_MS);
    s.push("offsets.topic.num.partitions=2".into());
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    let c = ReplCluster::start_with_listeners(&[system; 3], &refs, &|id| {
        let prefix = "listener.name.internal.";
        let mut settings = tls.broker_ssl(&format!("broker-{id}"), store, prefix, None);
        settings.extend([
            "listener.name.internal.sasl.enabled.mechanisms=PLAIN".to_string(),
            format!("listener.name.internal.plain.sasl.jaas.config={jaas}"),
            "sasl.mechanism.inter.broker.protocol=PLAIN".into(),
        ]);
        Listeners {
            client: ("PLAINTEXT".into(), "PLAINTEXT".into()),
            internal: Some(("INTERNAL".into(), "SASL_SSL".into(), ports[&id])),
            settings,
        }
    });
    probe_replication(&c);
    (c, tls)
}

/// Leaders of a 3-partition RF 3 topic (min.insync.replicas=2) killed
/// with kill -9 in turn under an acks=all idempotent producer, as
/// tests/tls_cluster.rs over SSL: every acked record read back once and in
/// order per partition, the replicas identical up to the HW (every broker
/// stopped at the end).
fn history_through_leader_kills(c: &mut ReplCluster, system: System, label: &str) {
    let (topic, partitions) = ("history", 3);
    c.create_topic(topic, partitions, 3, &["min.insync.replicas=2"]);
    for p in 0..partitions {
        c.wait_state(60, "a full ISR", topic, p, |s| s.isr.len() == 3);
    }
    kill_leaders_with_history(c, system, label, topic, partitions);
}

fn kill_leaders_over_sasl_ssl(system: System) {
    let (mut c, _tls) = start_sasl_ssl_cluster(system);
    history_through_leader_kills(&mut c, system, "kill -9 of leaders, SASL_SSL inter-broker");
}

#[test]
fn sasl_ssl_inter_broker_listener_history_through_kill9_of_leaders() {
    kill_leaders_over_sasl_ssl(System::Shardlog);
}

#[test]
#[ignore = "Kafka 3.9 reference (three JVMs): cargo test --test sasl_clients -- --ignored kafka_"]
fn kafka_sasl_ssl_inter_broker_listener_history_through_kill9_of_leaders() {
    kill_leaders_over_sasl_ssl(System::Kafka);
}

/// The mixed cluster's SASL_SSL inter-broker settings: SCRAM-SHA-512 as
/// user `broker` (a super user), Kafka's AclAuthorizer on every broker.
fn mixed_listeners(tls: &Tls, id: i32, kafka: bool, port: u16) -> Listeners {
    let store = if kafka {
        Store::Jks
    } else {
        Store::Pkcs12Openssl
    };
    let mut settings = tls.broker_ssl(
        &format!("broker-{id}"),
        store,
        "listener.name.internal.",
        None,
    );
    settings.extend([
        "listener.name.internal.sasl.enabled.mechanisms=SCRAM-SHA-512".to_string(),
        "listener.name.internal.scram-sha-512.sasl.jaas.config=\
         org.apache.kafka.common.security.scram.ScramLoginModule required \
         username=\"broker\" password=\"broker-secret\";"
            .to_string(),
        "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512".to_string(),
    ]);
    Listeners {
        client: ("PLAINTEXT".into(), "PLAINTEXT".into()),
        internal: Some(("INTERNAL".into(), "SASL_SSL".into(), port)),
        settings,
    }
}

/// librdkafka's settings for `user` (SCRAM-SHA-512) on one broker's
/// SASL_SSL listener.
fn mixed_conf(c: &ReplCluster, tls: &Tls, port: u16, user: &str, pw: &str) -> String {
    let conf = json!({
        "bootstrap.servers": format!("127.0.0.1:{port}"),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": pw,
        "ssl.ca.location": tls.ca_pem().display().to_string(),
    });
    let path = c.path(&format!("{user}-{port}.json"));
    std::fs::write(&path, conf.to_string()).unwrap();
    path.display().to_string()
}

/// `tool` (ConfigCommand / AclCommand) against the PLAINTEXT listener of
/// node `id` (`User:ANONYMOUS`, a super user there).
fn mixed_admin(c: &mut ReplCluster, id: i32, class: &str, args: &[&str]) -> String {
    let bootstrap = c.node(id).link.address();
    let out = run_ok(
        kafka_tool(class)
            .args(["--bootstrap-server", &bootstrap])
            .args(args),
        &format!("{class} through broker {id} {args:?}"),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Produce 20 records through `conf` until the answer is `want_ok` (ACLs
/// and SCRAM users reach each broker through ZooKeeper's change
/// notifications, within a bounded time); how many times all 20 were
/// delivered. An attempt delivers all or none.
fn produce_until(conf: &str, topic: &str, want_ok: bool, what: &str) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut delivered_rounds = 0;
    loop {
        let r = run_py_script(
            &["confluent_kafka"],
            "sasl_clients.py",
            &[
                "produce".into(),
                conf.into(),
                topic.into(),
                "20".into(),
                topic.into(),
            ],
        );
        assert!(r["delivered"] == 0 || r["delivered"] == 20, "{what}: {r}");
        if r["delivered"] == 20 {
            delivered_rounds += 1;
        }
        let denied = r["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "TOPIC_AUTHORIZATION_FAILED");
        if (want_ok && r["delivered"] == 20) || (!want_ok && denied) {
            return delivered_rounds;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {r}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Kafka 3.9 as broker 1 (the controller), shardlog as 2 and 3, with the
/// inter-broker user written to ZooKeeper before they start.
fn start_mixed_sasl(tls: &Tls, ports: &BTreeMap<i32, u16>) -> ReplCluster {
    let systems = [System::Kafka, System::Shardlog, System::Shardlog];
    // The replication scenarios' timeouts, at a JVM's pace (tls_cluster.rs).
    let mut s = settings(2, false, 6000, 6000);
    s.extend([
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer".into(),
        "super.users=User:broker;User:ANONYMOUS".into(),
        "offsets.topic.num.partitions=2".into(),
    ]);
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    ReplCluster::start_with_listeners_prepared(
        &systems,
        &refs,
        &|id| mixed_listeners(tls, id, id == 1, ports[&id]),
        &|zk| {
            // The inter-broker user, before any broker starts (Kafka's docs:
            // `kafka-configs --zookeeper` for the brokers' own SCRAM users).
            run_ok(
                kafka_tool("kafka.admin.ConfigCommand").args([
                    "--zookeeper",
                    &zk.address(),
                    "--alter",
                    "--add-config",
                    "SCRAM-SHA-512=[password=broker-secret]",
                    "--entity-type",
                    "users",
                    "--entity-name",
                    "broker",
                ]),
                "kafka-configs --zookeeper (the inter-broker SCRAM user)",
            );
        },
    )
}

/// Every acked record, read back from the partition leaders over
/// PLAINTEXT: each topic holds its 20 records once per delivered round.
fn assert_read_back(c: &ReplCluster, rounds: &BTreeMap<&str, usize>) {
    let plain = c.path("plain.json");
    for (&topic, &rounds) in rounds {
        let want: Vec<String> = (0..rounds)
            .flat_map(|_| (0..20).map(move |i| format!("{topic}-{i}")))
            .collect();
        let bootstrap = c.bootstrap();
        std::fs::write(
            &plain,
            json!({ "bootstrap.servers": bootstrap }).to_string(),
        )
        .unwrap();
        let r = run_py_script(
            &["confluent_kafka"],
            "sasl_clients.py",
            &[
                "read".into(),
                plain.display().to_string(),
                topic.into(),
                want.len().to_string(),
            ],
        );
        assert_eq!(r["values"], json!(want), "{topic}: {r}");
    }
}

/// Kafka 3.9 (broker 1, the controller) and two shardlog brokers on a
/// SASL_SSL inter-broker listener with SCRAM-SHA-512 and the AclAuthorizer:
/// they replicate both ways (acks=all with min.insync.replicas=2), share
/// SCRAM users and ACLs through ZooKeeper — a user and an ALLOW made
/// through Kafka let alice write through shardlog, a DENY and a user made
/// through shardlog are enforced by Kafka. Then the leaders (Kafka's and
/// shardlog's, the controller among them) are killed with kill -9 in turn
/// under an acks=all idempotent producer, and the history is checked.
#[test]
fn mixed_kafka_and_shardlog_share_scram_users_and_acls_over_sasl_ssl() {
    let tls = Tls::make(&["broker-1", "broker-2", "broker-3"]);
    let ports: BTreeMap<i32, u16> = (1..=3).map(|id| (id, free_port())).collect();
    let mut c = start_mixed_sasl(&tls, &ports);
    assert_eq!(c.controller(), 1, "Kafka started first");
    for (topic, assignment) in [("kafka-led", "1:2:3"), ("shardlog-led", "2:1:3")] {
        let out = mixed_admin(
            &mut c,
            1,
            "org.apache.kafka.tools.TopicCommand",
            &[
                "--create",
                "--topic",
                topic,
                "--replica-assignment",
                assignment,
                "--config",
                "min.insync.replicas=2",
            ],
        );
        assert!(out.contains(&format!("Created topic {topic}.")), "{out}");
        c.wait_state(60, "a leader", topic, 0, |s| {
            s.leader >= 0 && s.isr.len() == 3
        });
    }

    // Through Kafka: alice's SCRAM credential and her ALLOWs.
    let scram = "SCRAM-SHA-512=[password=alice-secret]";
    let users = ["--entity-type", "users", "--alter", "--add-config", scram];
    mixed_admin(
        &mut c,
        1,
        "kafka.admin.ConfigCommand",
        &[&users[..], &["--entity-name", "alice"]].concat(),
    );
    let allow = [
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--operation",
        "Describe",
        "--operation",
        "Read",
        "--topic",
        "kafka-led",
        "--topic",
        "shardlog-led",
    ];
    mixed_admin(&mut c, 1, "kafka.admin.AclCommand", &allow);

    // alice logs in at shardlog broker 2 and writes to both leaders: the
    // followers' acks=all over SASL_SSL, either way.
    let alice_at_2 = mixed_conf(&c, &tls, ports[&2], "alice", "alice-secret");
    let mut rounds: BTreeMap<&str, usize> = BTreeMap::new();
    for topic in ["shardlog-led", "kafka-led"] {
        let what = format!("alice writes {topic} through shardlog");
        *rounds.entry(topic).or_default() += produce_until(&alice_at_2, topic, true, &what);
    }

    // Through shardlog: a DENY for alice on kafka-led, and user bob.
    let deny = [
        "--add",
        "--deny-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        "kafka-led",
    ];
    mixed_admin(&mut c, 2, "kafka.admin.AclCommand", &deny);
    mixed_admin(
        &mut c,
        2,
        "kafka.admin.ConfigCommand",
        &[&users[..], &["--entity-name", "bob"]].concat(),
    );
    let alice_at_1 = mixed_conf(&c, &tls, ports[&1], "alice", "alice-secret");
    let what = "Kafka enforces a DENY made through shardlog";
    *rounds.entry("kafka-led").or_default() += produce_until(&alice_at_1, "kafka-led", false, what);
    let what = "alice still writes shardlog-led through Kafka";
    *rounds.entry("shardlog-led").or_default() +=
        produce_until(&alice_at_1, "shardlog-led", true, what);
    let bob_at_1 = mixed_conf(&c, &tls, ports[&1], "bob", "alice-secret");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let r = run_py_script(
            &["confluent_kafka"],
            "sasl_clients.py",
            &["refused".into(), bob_at_1.clone()],
        );
        if r["ok"] == true {
            break;
        }
        let late = std::time::Instant::now() > deadline;
        assert!(!late, "bob, made through shardlog, logs in at Kafka: {r}");
    }

    assert_read_back(&c, &rounds);
    // An ACL change through one broker reaches all three (tests/acl_changes).
    acl_changes::reach_every_broker(&mut c, &tls, &ports);

    history_through_leader_kills(&mut c, System::Kafka, "kill -9 of leaders, mixed SASL_SSL");
}

/// Two shardlog brokers whose inter-broker listener is SASL_PLAINTEXT with
/// OAUTHBEARER: the controller's channel and the follower log in with the
/// broker's unsecured token (6 s), refresh it and re-authenticate their
/// connections before each session ends.
#[test]
fn brokers_replicate_with_oauthbearer_between_them() {
    let jaas = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                unsecuredLoginStringClaim_sub=\"broker\" unsecuredLoginLifetimeSeconds=\"6\";";
    let ports: BTreeMap<i32, u16> = (1..=2).map(|id| (id, free_port())).collect();
    let c = ReplCluster::start_with_listeners(
        &[System::Shardlog; 2],
        &["offsets.topic.num.partitions=2"],
        &|id| Listeners {
            client: ("PLAINTEXT".into(), "PLAINTEXT".into()),
            internal: Some(("INTERNAL".into(), "SASL_PLAINTEXT".into(), ports[&id])),
            settings: vec![
                "listener.name.internal.sasl.enabled.mechanisms=OAUTHBEARER".into(),
                format!("listener.name.internal.oauthbearer.sasl.jaas.config={jaas}"),
                "sasl.mechanism.inter.broker.protocol=OAUTHBEARER".into(),
            ],
        },
    );
    let topic = "oauth-between-brokers";
    c.create_topic(topic, 1, 2, &["min.insync.replicas=2"]);
    let (r, acked) = produce(
        &c,
        topic,
        0,
        "oauth",
        300,
        &[
            "--acks=all",
            "--idempotence=1",
            "--rate=30",
            "--timeout-ms=60000",
        ],
    );
    assert_eq!(
        r["acked"], 300,
        "acks=all over OAUTHBEARER replication: {r}"
    );
    let read = drain(&c.bootstrap(), topic, 1, c.dir.path());
    let h = check(&acked, &read);
    assert_history_ok(c.system, "acks=all, OAUTHBEARER between brokers", &h);
    for n in &c.nodes {
        let out = n.output_tail();
        assert!(
            !out.contains("Disconnecting expired channel")
                && !out.contains("SASL re-authentication to"),
            "broker {}: every session was renewed in time:\n{out}",
            n.id
        );
    }
}
