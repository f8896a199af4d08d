//! Certificate rotation without restart (KIP-226; Kafka 3.9
//! `DynamicBrokerConfig.scala` `processListenerReconfigurable`,
//! clients `SslFactory.reconfigure`), with one shardlog broker in
//! ZooKeeper mode, an SSL listener (keystore A) and a PLAINTEXT one,
//! Kafka's real `kafka-configs` and kafka-python (tests/py/tls_rotation.py):
//!
//! - `kafka-configs --alter --add-config
//!   listener.name.ssl.ssl.keystore.location=B,…password=…` (B: the same
//!   DN and SANs, a new key and serial) is stored in `/config/brokers/1`
//!   with the password encoded, and a new TLS connection (`openssl
//!   s_client`) gets certificate B;
//! - the producer's and the consumer's connections opened before keep
//!   their handshake's certificate A and go on producing and fetching;
//! - a keystore with another DN, and a keystore given with a wrong
//!   password, are refused by `kafka-configs` with Kafka's error, and new
//!   connections still get B;
//! - after a restart the stored keystore B is served from the start (the
//!   per-broker dynamic configs are applied before the listeners serve).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::cluster::{json, read, wait_for};
use common::java::{kafka_tool, run_ok};
use common::replica_cluster::listeners::Listeners;
use common::replica_cluster::{ReplCluster, System};
use common::tls::{Store, Tls, PASSWORD};
use common::zookeeper::free_port;

const SECRET: &str = "rotation-encoder-secret";
const LOCATION: &str = "listener.name.ssl.ssl.keystore.location";
const KS_PASSWORD: &str = "listener.name.ssl.ssl.keystore.password";

struct Setup {
    c: ReplCluster,
    tls: Tls,
    /// The PLAINTEXT listener's address (kafka-configs, kafka-topics).
    plaintext: String,
}

fn start() -> Setup {
    let tls = Tls::make(&["broker-1", "broker-2"]);
    let port = free_port();
    let listeners = Listeners {
        client: ("SSL".into(), "SSL".into()),
        internal: Some(("PLAINTEXT".into(), "PLAINTEXT".into(), port)),
        settings: tls.broker_ssl("broker-1", Store::Pkcs12Openssl, "listener.name.ssl.", None),
    };
    let secret = format!("password.encoder.secret={SECRET}");
    let c = ReplCluster::start_with_listeners(
        &[System::Shardlog],
        &[
            &secret,
            "offsets.topic.num.partitions=1",
            "num.partitions=1",
        ],
        &|_| listeners.clone(),
    );
    Setup {
        c,
        tls,
        plaintext: format!("127.0.0.1:{port}"),
    }
}

impl Setup {
    /// The SSL listener's address (behind the node's link).
    fn ssl(&self) -> String {
        self.c.bootstrap()
    }

    /// The serial of the certificate in PEM text `pem`.
    fn serial_of(&self, pem: &str) -> String {
        let file = self.tls.path("peer.pem");
        std::fs::write(&file, pem).unwrap();
        self.tls.serial(&file)
    }

    /// The serial of the certificate file `<name>.pem`.
    fn serial_file(&self, name: &str) -> String {
        self.tls.serial(&self.tls.path(&format!("{name}.pem")))
    }

    /// A new TLS connection (`openssl s_client`, verifying the broker
    /// against the CA and the name `localhost`): the leaf certificate's
    /// serial.
    fn new_connection_serial(&self) -> String {
        let out = Command::new("openssl")
            .args(["s_client", "-connect", &self.ssl(), "-CAfile"])
            .arg(self.tls.ca_pem())
            .args(["-verify_hostname", "localhost", "-verify_return_error"])
            .stdin(Stdio::null())
            .output()
            .expect("openssl s_client");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            text.contains("Verify return code: 0 (ok)"),
            "s_client:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let begin = text
            .find("-----BEGIN CERTIFICATE-----")
            .expect("a certificate");
        let end_tag = "-----END CERTIFICATE-----";
        let end = text[begin..].find(end_tag).expect("certificate end") + begin + end_tag.len();
        self.serial_of(&text[begin..end])
    }

    /// Kafka's `kafka-configs --bootstrap-server <PLAINTEXT> --entity-type
    /// brokers --entity-name 1 --alter --add-config <config>`: whether it
    /// succeeded, and its output.
    fn alter(&self, config: &str) -> (bool, String) {
        let mut cmd = kafka_tool("kafka.admin.ConfigCommand");
        cmd.args(["--bootstrap-server", &self.plaintext])
            .args(["--entity-type", "brokers", "--entity-name", "1"])
            .args(["--alter", "--add-config", config]);
        let out = cmd.output().expect("run kafka-configs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    /// `/config/brokers/1`'s `config` object.
    fn stored(&self) -> serde_json::Value {
        let path = "/config/brokers/1";
        let (data, _) = read(&self.c.zk.address(), &[path])[path]
            .clone()
            .expect("/config/brokers/1");
        json(&data)["config"].clone()
    }
}

/// tests/py/tls_rotation.py running: a producer and a consumer whose
/// connections stay open between rounds.
struct Clients {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Clients {
    fn start(s: &Setup, topic: &str) -> Clients {
        let python = common::clients::venv_python_with(&["kafka"]);
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/tls_rotation.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([&s.ssl(), topic])
            .arg(s.tls.ca_pem())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start tls_rotation.py");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Clients {
            child,
            stdin,
            stdout,
        }
    }

    /// Produce and fetch back record `n`; the script's answer.
    fn round(&mut self, n: u32) -> serde_json::Value {
        writeln!(self.stdin, "round {n}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(
            !line.is_empty(),
            "tls_rotation.py ended: {:?}",
            self.child.try_wait()
        );
        let r: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(r["value"], format!("rotation-{n}"), "{r}");
        r
    }

    fn quit(mut self) {
        writeln!(self.stdin, "quit").unwrap();
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

/// `(role, socket id, certificate serial)` of each connection of a round.
fn connections(s: &Setup, round: &serde_json::Value) -> Vec<(String, u64, String)> {
    let mut v: Vec<_> = round["conns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["role"].as_str().unwrap().to_owned(),
                c["sock"].as_u64().unwrap(),
                s.serial_of(c["cert"].as_str().unwrap()),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_keystore_rotated_by_kafka_configs_serves_new_connections_and_old_ones_go_on() {
    let mut s = start();
    let serial_a = s.serial_file("broker-1");
    let keystore_b = s.tls.reissue_broker("broker-1", "broker-1-b");
    let serial_b = s.serial_file("broker-1-b");
    assert_ne!(serial_a, serial_b);
    assert_eq!(s.new_connection_serial(), serial_a);

    let topic = "rotation";
    let mut create = kafka_tool("org.apache.kafka.tools.TopicCommand");
    create.args(["--bootstrap-server", &s.plaintext]).args([
        "--create",
        "--topic",
        topic,
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    ]);
    run_ok(&mut create, "kafka-topics --create");

    // Connections opened under A.
    let mut clients = Clients::start(&s, topic);
    let before = connections(&s, &clients.round(0));
    let roles: Vec<&str> = before.iter().map(|c| c.0.as_str()).collect();
    assert!(
        roles.contains(&"producer") && roles.contains(&"consumer"),
        "{before:?}"
    );
    assert!(before.iter().all(|c| c.2 == serial_a), "{before:?}");

    // The rotation, as an operator runs it.
    let (ok, out) = s.alter(&format!(
        "{LOCATION}={},{KS_PASSWORD}={PASSWORD}",
        keystore_b.display()
    ));
    assert!(
        ok && out.contains("Completed updating config for broker 1"),
        "{out}"
    );
    let stored = s.stored();
    assert_eq!(
        stored[LOCATION].as_str(),
        Some(keystore_b.display().to_string().as_str()),
        "{stored}"
    );
    let encoded = stored[KS_PASSWORD].as_str().unwrap();
    assert!(
        !encoded.contains(PASSWORD) && encoded.contains("cipherAlgorithm"),
        "{stored}"
    );
    wait_for(60, "new connections served certificate B", || {
        (s.new_connection_serial() == serial_b).then_some(())
    });

    // The connections opened before keep A and go on.
    for n in 1..=3 {
        let after = connections(&s, &clients.round(n));
        assert_eq!(after, before, "round {n}");
    }

    bad_updates_are_refused(&s, &serial_b);

    // The old connections still work after the refusals.
    assert_eq!(connections(&s, &clients.round(4)), before);
    clients.quit();

    // A restart serves the stored keystore B from the start.
    s.c.node(1).stop();
    s.c.restart(1);
    assert_eq!(s.new_connection_serial(), serial_b);
    let mut clients = Clients::start(&s, topic);
    let fresh = connections(&s, &clients.round(5));
    assert!(
        !fresh.is_empty() && fresh.iter().all(|c| c.2 == serial_b),
        "{fresh:?}"
    );
    clients.quit();
}

/// A keystore with another DN and a keystore with a wrong password:
/// refused with Kafka's error, nothing stored, B still served.
fn bad_updates_are_refused(s: &Setup, serial_b: &str) {
    let stored = s.stored();
    let (_, other_dn) = s.tls.keystore("broker-2", Store::Pkcs12Openssl);
    // kafka-configs' legacy AlterConfigs resends every sensitive key.
    let (ok, out) = s.alter(&format!(
        "{LOCATION}={},{KS_PASSWORD}={PASSWORD}",
        other_dn.display()
    ));
    assert!(
        !ok && out.contains(
            "Invalid config value for resource ConfigResource(type=BROKER, name='1'): \
             Invalid dynamic configuration"
        ),
        "{out}"
    );
    assert_eq!(s.new_connection_serial(), serial_b);

    let keystore_c = s.tls.reissue_broker("broker-1", "broker-1-c");
    let (ok, out) = s.alter(&format!(
        "{LOCATION}={},{KS_PASSWORD}=not-the-password",
        keystore_c.display()
    ));
    assert!(
        !ok && out.contains("Invalid dynamic configuration"),
        "{out}"
    );
    assert_eq!(s.new_connection_serial(), serial_b);
    assert_eq!(s.stored(), stored);
}
