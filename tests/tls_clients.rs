//! Real clients over SSL against one broker in ZooKeeper mode whose client
//! listener is `SSL://` (SECURITY.md §1–2) and whose inter-broker listener
//! is a separate `PLAINTEXT://` one: confluent-kafka and kcat (librdkafka),
//! kafka-python, the Java client (tests/java/src/shardlog/ClientCheck.java)
//! and Kafka's kafka-topics, kafka-console-producer and
//! kafka-console-consumer (with a client.properties) create topics,
//! produce and read back every record (content and count checked), and see
//! in Metadata only the SSL listener's endpoint; a client trusting another
//! CA fails the handshake. With `ssl.client.auth=required` a client with a
//! certificate signed by the broker's CA works, and one without a
//! certificate, with one from another CA, or with an expired one is
//! refused.
//!
//! Keys are made at test time by `openssl` and `keytool`
//! (tests/common/tls.rs); the tests cover every keystore form (PKCS12 by
//! openssl, PKCS12 by keytool, PEM) and check that each loads in
//! shardlog's `tls::stores` as Kafka loads it. The `kafka_` tests run the same
//! against Apache Kafka 3.9 (the reference the assertions were validated
//! on): `cargo test --test tls_clients -- --ignored kafka_`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::java::{kafka_tool, program, run_ok};
use common::replica_cluster::listeners::Listeners;
use common::replica_cluster::{ReplCluster, System};
use common::tls::{ClientCert, Store, Tls};
use common::zookeeper::free_port;
use common::{kcat, kcat_produce_and_read, run_py_script, unique_topic};
use serde_json::json;

/// One broker (id 1) with an SSL client listener behind its link.
struct SslBroker {
    c: ReplCluster,
    tls: Tls,
}

fn start(system: System, store: Store, client_auth: Option<&str>) -> SslBroker {
    let tls = Tls::make(&["broker-1"]);
    let listeners = Listeners {
        client: ("SSL".into(), "SSL".into()),
        internal: Some(("PLAINTEXT".into(), "PLAINTEXT".into(), free_port())),
        settings: tls.broker_ssl("broker-1", store, "listener.name.ssl.", client_auth),
    };
    let c = ReplCluster::start_with_listeners(
        &[system],
        &["offsets.topic.num.partitions=2", "num.partitions=1"],
        &|_| listeners.clone(),
    );
    SslBroker { c, tls }
}

impl SslBroker {
    fn bootstrap(&self) -> String {
        self.c.bootstrap()
    }

    fn port(&self) -> u16 {
        let b = self.bootstrap();
        b.rsplit_once(':').unwrap().1.parse().unwrap()
    }

    /// tls_clients.py's tls.json for `cert` (trusting the CA or not).
    fn py_tls(&self, trust_ca: bool, cert: Option<ClientCert>) -> String {
        let ca = if trust_ca {
            self.tls.ca_pem()
        } else {
            self.tls.other_ca_pem()
        };
        let (certfile, keyfile) = match cert {
            Some(c) => {
                let (p, k) = self.tls.client_pem(c);
                (json!(p), json!(k))
            }
            None => (json!(null), json!(null)),
        };
        let file = self.tls.path(&format!("py-{}.json", unique_topic("tls")));
        let body = json!({"cafile": ca, "certfile": certfile, "keyfile": keyfile});
        std::fs::write(&file, body.to_string()).unwrap();
        file.display().to_string()
    }
}

// ---------------------------------------------------------------------------
// each client
// ---------------------------------------------------------------------------

/// confluent-kafka or kafka-python: create, produce `count`, read back.
fn python_round_trip(b: &SslBroker, client: &str, cert: Option<ClientCert>) {
    let topic = unique_topic(&format!("tls-{client}"));
    let (partitions, count) = (3, 300);
    let r = run_py_script(
        &["confluent_kafka", "kafka"],
        "tls_clients.py",
        &[
            "roundtrip".into(),
            client.into(),
            b.bootstrap(),
            topic.clone(),
            partitions.to_string(),
            count.to_string(),
            b.py_tls(true, cert),
        ],
    );
    assert_eq!(r["delivered"], count, "{client} over SSL: {r}");
    assert_eq!(r["errors"], json!([]), "{client} over SSL: {r}");
    for p in 0..partitions {
        let want: Vec<String> = (0..count)
            .filter(|i| i % partitions == p)
            .map(|i| format!("tls-{client}-{i}"))
            .collect();
        assert_eq!(
            r["values"][p.to_string()],
            json!(want),
            "{client}: partition {p} read back over SSL"
        );
    }
    // Metadata over the SSL listener names the SSL endpoint (the link's
    // address), not the PLAINTEXT inter-broker one.
    assert_eq!(
        r["brokers"],
        json!([[1, "127.0.0.1", b.port()]]),
        "{client}: brokers in Metadata over SSL"
    );
}

/// The client's handshake fails: no Metadata, an SSL error reported.
fn python_refused(b: &SslBroker, client: &str, trust_ca: bool, cert: Option<ClientCert>) {
    let r = run_py_script(
        &["confluent_kafka", "kafka"],
        "tls_clients.py",
        &[
            "refused".into(),
            client.into(),
            b.bootstrap(),
            b.py_tls(trust_ca, cert),
        ],
    );
    assert_eq!(
        r["ok"], false,
        "{client} (trust CA {trust_ca}, cert {cert:?}) got Metadata: {r}"
    );
}

fn kcat_args(b: &SslBroker, trust_ca: bool, cert: Option<ClientCert>) -> Vec<String> {
    let mut args = vec!["-b".to_string(), b.bootstrap()];
    for kv in b.tls.librdkafka_conf(trust_ca, cert) {
        args.push("-X".into());
        args.push(kv);
    }
    args
}

/// kcat: Metadata (-L -J), produce lines to partition 0, read them back.
fn kcat_round_trip(b: &SslBroker, cert: Option<ClientCert>) {
    let base = kcat_args(b, true, cert);
    let topic = unique_topic("tls-kcat");
    let meta = Command::new(kcat())
        .args(&base)
        .args(["-L", "-J", "-m", "30"])
        .output()
        .unwrap();
    assert!(meta.status.success(), "kcat -L: {meta:?}");
    let meta: serde_json::Value = serde_json::from_slice(&meta.stdout).unwrap();
    assert_eq!(
        meta["brokers"][0]["name"],
        json!(format!("127.0.0.1:{}", b.port())),
        "kcat -L over SSL: {meta}"
    );
    let lines: Vec<String> = (0..100).map(|i| format!("kcat-tls-{i}")).collect();
    let got = kcat_produce_and_read(&base, &topic, &lines, "over SSL");
    assert_eq!(got, lines, "kcat read back over SSL");
}

fn kcat_refused(b: &SslBroker, trust_ca: bool, cert: Option<ClientCert>) {
    let out = Command::new(kcat())
        .args(kcat_args(b, trust_ca, cert))
        .args(["-L", "-m", "10"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "kcat -L (trust CA {trust_ca}, cert {cert:?}) got Metadata:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The Java client (ClientCheck roundtrip: admin create, produce, read back).
fn java_round_trip(b: &SslBroker, props: &Path) {
    let topic = unique_topic("tls-java");
    let out = run_ok(
        program("ClientCheck")
            .args(["roundtrip", &b.bootstrap(), &topic, "2", "200", "acks=all"])
            .env("SHARDLOG_CLIENT_CONFIG", props),
        "ClientCheck roundtrip over SSL",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["produce"]["delivered"], 200, "{r}");
    assert_eq!(r["produce"]["errors"], json!([]), "{r}");
    let c = &r["consume"];
    assert_eq!(c["consumed"], 200, "{r}");
    for f in [
        "missing",
        "duplicates",
        "out_of_order",
        "wrong_partition",
        "bad_content",
        "unknown",
    ] {
        assert_eq!(c[f], 0, "Java client over SSL, {f}: {r}");
    }
    assert_eq!(c["end_offsets"], json!([100, 100]), "{r}");
}

/// kafka-topics, console producer and console consumer with `props`.
fn java_tools_round_trip(b: &SslBroker, props: &Path) {
    let topic = unique_topic("tls-console");
    let bs = b.bootstrap();
    let props = props.display().to_string();
    let created = run_ok(
        kafka_tool("org.apache.kafka.tools.TopicCommand").args([
            "--bootstrap-server",
            &bs,
            "--command-config",
            &props,
            "--create",
            "--topic",
            &topic,
            "--partitions",
            "2",
            "--replication-factor",
            "1",
        ]),
        "kafka-topics --create over SSL",
    );
    let text = String::from_utf8_lossy(&created.stdout);
    assert!(text.contains(&format!("Created topic {topic}.")), "{text}");
    let described = run_ok(
        kafka_tool("org.apache.kafka.tools.TopicCommand").args([
            "--bootstrap-server",
            &bs,
            "--command-config",
            &props,
            "--describe",
            "--topic",
            &topic,
        ]),
        "kafka-topics --describe over SSL",
    );
    let text = String::from_utf8_lossy(&described.stdout);
    assert!(text.contains("PartitionCount: 2"), "{text}");
    assert_eq!(text.matches("Leader: 1").count(), 2, "{text}");

    let lines: Vec<String> = (0..60).map(|i| format!("k{i}:console-tls-{i}")).collect();
    let mut producer = kafka_tool("kafka.tools.ConsoleProducer")
        .args([
            "--bootstrap-server",
            &bs,
            "--producer.config",
            &props,
            "--topic",
            &topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            "--request-required-acks",
            "all",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = producer.stdin.take().unwrap();
        for l in &lines {
            writeln!(stdin, "{l}").unwrap();
        }
    }
    let out = producer.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "console producer over SSL: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let consumed = run_ok(
        kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer").args([
            "--bootstrap-server",
            &bs,
            "--consumer.config",
            &props,
            "--topic",
            &topic,
            "--from-beginning",
            "--max-messages",
            "60",
            "--timeout-ms",
            "60000",
            "--property",
            "print.key=true",
            "--property",
            "key.separator=:",
        ]),
        "console consumer over SSL",
    );
    let mut got: Vec<String> = String::from_utf8_lossy(&consumed.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    got.sort();
    let mut want = lines.clone();
    want.sort();
    assert_eq!(got, want, "console consumer read back over SSL");
}

/// kafka-topics --list with `props` fails with an SSL handshake error.
fn java_refused(b: &SslBroker, props: &Path) {
    let mut text = std::fs::read_to_string(props).unwrap();
    text.push_str("default.api.timeout.ms=15000\nrequest.timeout.ms=5000\n");
    std::fs::write(props, text).unwrap();
    let out = kafka_tool("org.apache.kafka.tools.TopicCommand")
        .args(["--bootstrap-server", &b.bootstrap(), "--command-config"])
        .arg(props)
        .arg("--list")
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "kafka-topics --list was answered:\n{all}"
    );
    assert!(
        all.contains("SslAuthenticationException") || all.contains("SSL handshake failed"),
        "kafka-topics --list should fail the SSL handshake:\n{all}"
    );
}

// ---------------------------------------------------------------------------
// the scenarios
// ---------------------------------------------------------------------------

fn every_client_over_ssl(system: System, store: Store) {
    let b = start(system, store, None);
    python_round_trip(&b, "confluent", None);
    python_round_trip(&b, "kafka-python", None);
    kcat_round_trip(&b, None);
    let props = b.tls.java_client_properties(true, None);
    java_round_trip(&b, &props);
    java_tools_round_trip(&b, &props);
    // A client that trusts another CA fails the handshake.
    python_refused(&b, "confluent", false, None);
    python_refused(&b, "kafka-python", false, None);
    kcat_refused(&b, false, None);
    java_refused(&b, &b.tls.java_client_properties(false, None));
}

fn client_auth_required(system: System, store: Store) {
    let b = start(system, store, Some("required"));
    let valid = Some(ClientCert::Valid);
    python_round_trip(&b, "confluent", valid);
    python_round_trip(&b, "kafka-python", valid);
    kcat_round_trip(&b, valid);
    let props = b.tls.java_client_properties(true, valid);
    java_round_trip(&b, &props);
    java_tools_round_trip(&b, &props);
    // Without a certificate, with one from another CA, with an expired one.
    for cert in [None, Some(ClientCert::OtherCa), Some(ClientCert::Expired)] {
        python_refused(&b, "confluent", true, cert);
        kcat_refused(&b, true, cert);
    }
    python_refused(&b, "kafka-python", true, None);
    java_refused(&b, &b.tls.java_client_properties(true, None));
    java_refused(
        &b,
        &b.tls
            .java_client_properties(true, Some(ClientCert::Expired)),
    );
}

#[test]
fn tls_material_verifies_in_openssl_and_keytool() {
    use common::tls::{keytool, openssl, PASSWORD};
    let tls = Tls::make(&["broker-1"]);
    let ca = tls.ca_pem().display().to_string();
    let verify = |cert: &Path| {
        Command::new("openssl")
            .args(["verify", "-CAfile", &ca])
            .arg(cert)
            .output()
            .unwrap()
    };
    for good in ["broker-1.pem", "broker-1-keytool.pem", "client.pem"] {
        let out = verify(&tls.path(good));
        assert!(out.status.success(), "{good}: {out:?}");
    }
    for bad in ["client-other-ca.pem", "client-expired.pem"] {
        let out = verify(&tls.path(bad));
        assert!(
            !out.status.success(),
            "{bad} verified against the CA: {out:?}"
        );
    }
    let expired = openssl(&[
        "x509",
        "-noout",
        "-enddate",
        "-in",
        &tls.p_str("client-expired.pem"),
    ]);
    assert!(expired.contains("2020"), "{expired}");
    let san = openssl(&[
        "x509",
        "-noout",
        "-ext",
        "subjectAltName",
        "-in",
        &tls.p_str("broker-1.pem"),
    ]);
    assert!(
        san.contains("DNS:localhost") && san.contains("IP Address:127.0.0.1"),
        "{san}"
    );
    // Every keystore opens with the password and holds the broker's key.
    for store in [Store::Pkcs12Openssl, Store::Pkcs12Keytool, Store::Jks] {
        let (kind, file) = tls.keystore("broker-1", store);
        let list = keytool(&[
            "-list",
            "-storetype",
            kind,
            "-keystore",
            &file.display().to_string(),
            "-storepass",
            PASSWORD,
        ]);
        assert!(list.contains("PrivateKeyEntry"), "{store:?}: {list}");
    }
    let (_, pem) = tls.keystore("broker-1", Store::Pem);
    let pem = pem.display().to_string();
    let key = openssl(&[
        "pkey",
        "-in",
        &pem,
        "-passin",
        &format!("pass:{PASSWORD}"),
        "-noout",
        "-text",
    ]);
    assert!(key.contains("prime256v1") || key.contains("P-256"), "{key}");
    let text = std::fs::read_to_string(&pem).unwrap();
    assert!(text.contains("BEGIN ENCRYPTED PRIVATE KEY"), "{text}");
    assert_eq!(text.matches("BEGIN CERTIFICATE").count(), 2, "{text}");
    for store in [Store::Pkcs12Openssl, Store::Jks] {
        let (kind, file) = tls.truststore(store);
        let list = keytool(&[
            "-list",
            "-storetype",
            kind,
            "-keystore",
            &file.display().to_string(),
            "-storepass",
            PASSWORD,
        ]);
        assert!(list.contains("trustedCertEntry"), "{store:?}: {list}");
    }
    assert_ne!(
        tls.serial(&tls.path("broker-1.pem")),
        tls.serial(&tls.path("client.pem"))
    );
}

#[test]
fn every_client_produces_consumes_and_administers_over_ssl() {
    every_client_over_ssl(System::Shardlog, Store::Pkcs12Openssl);
}

#[test]
fn client_certificates_required_valid_works_missing_foreign_expired_refused() {
    client_auth_required(System::Shardlog, Store::Pkcs12Openssl);
}

/// A PEM keystore file (encrypted PKCS#8 key as Kafka 3.9 on JDK 17
/// decrypts it, and the chain) and a PEM truststore file.
#[test]
fn pem_keystore_as_kafka_reads_it_serves_every_client() {
    every_client_over_ssl(System::Shardlog, Store::Pem);
}

#[test]
fn keytool_pkcs12_keystore_serves_every_client() {
    every_client_over_ssl(System::Shardlog, Store::Pkcs12Keytool);
}

#[test]
#[ignore = "Kafka 3.9 reference (a JVM broker): cargo test --test tls_clients -- --ignored kafka_"]
fn kafka_every_client_over_ssl() {
    every_client_over_ssl(System::Kafka, Store::Pkcs12Openssl);
}

#[test]
#[ignore = "Kafka 3.9 reference (a JVM broker): cargo test --test tls_clients -- --ignored kafka_"]
fn kafka_client_certificates_required() {
    client_auth_required(System::Kafka, Store::Pkcs12Openssl);
}

#[test]
#[ignore = "Kafka 3.9 reference (a JVM broker): cargo test --test tls_clients -- --ignored kafka_"]
fn kafka_pem_keystore() {
    every_client_over_ssl(System::Kafka, Store::Pem);
}

#[test]
#[ignore = "Kafka 3.9 reference (a JVM broker): cargo test --test tls_clients -- --ignored kafka_"]
fn kafka_keytool_pkcs12_keystore() {
    every_client_over_ssl(System::Kafka, Store::Pkcs12Keytool);
}

/// Every keystore and truststore form tests/common/tls.rs makes for the
/// broker (the forms Kafka 3.9 loads in the `kafka_` tests above) loads in
/// shardlog's `tls::stores` with the same config lines, the chain with the
/// broker's certificate first; JKS, which shardlog does not read, stops
/// with an error naming the key and the PKCS12/PEM way out.
#[test]
fn every_keystore_form_kafka_loads_loads_in_shardlog() {
    use common::tls::openssl;
    use shardlog::tls::stores::{load_keystore, load_truststore};
    use shardlog::tls::SslSettings;
    let tls = Tls::make(&["broker-1"]);
    let settings = |store: Store| {
        let lines = tls.broker_ssl("broker-1", store, "listener.name.ssl.", Some("required"));
        let map: std::collections::BTreeMap<String, String> = lines
            .iter()
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap();
                (k.to_owned(), v.to_owned())
            })
            .collect();
        SslSettings::resolve("SSL", &|k| map.get(k).cloned())
    };
    // Every form is tried; the failures are reported together.
    let mut problems = Vec::new();
    for store in [Store::Pkcs12Openssl, Store::Pkcs12Keytool, Store::Pem] {
        let s = settings(store).unwrap_or_else(|e| panic!("{store:?}: settings: {e}"));
        let keys = match load_keystore(&s) {
            Ok(Some(k)) => k,
            Ok(None) => {
                problems.push(format!("{store:?}: no keystore"));
                continue;
            }
            Err(e) => {
                problems.push(format!("{store:?}: keystore: {e}"));
                continue;
            }
        };
        let leaf_pem = match store {
            Store::Pkcs12Keytool => tls.path("broker-1-keytool.pem"),
            _ => tls.path("broker-1.pem"),
        };
        let der = tls.path(&format!("leaf-{store:?}.der"));
        openssl(&[
            "x509",
            "-outform",
            "DER",
            "-in",
            &leaf_pem.display().to_string(),
            "-out",
            &der.display().to_string(),
        ]);
        if keys.chain.first().map(|c| c.as_ref().to_vec()) != Some(std::fs::read(&der).unwrap()) {
            problems.push(format!(
                "{store:?}: the broker's certificate is not first in the chain"
            ));
        }
        match load_truststore(&s) {
            Ok(Some(t)) if t.len() == 1 => {}
            other => problems.push(format!("{store:?}: truststore (the CA alone): {other:?}")),
        }
    }
    let jks = settings(Store::Jks).and_then(|s| load_keystore(&s).map(|_| ()));
    match jks {
        Ok(()) => problems.push("a JKS keystore loaded".into()),
        Err(e) if e.to_string().contains("JKS") => {}
        Err(e) => problems.push(format!("the JKS refusal does not name JKS: {e}")),
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
