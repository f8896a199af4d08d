//! A replicated cluster whose inter-broker listener is SSL (SECURITY.md
//! §1–2): each broker has a PLAINTEXT client listener behind its cuttable
//! link and an SSL inter-broker listener on a port of its own, advertised
//! directly, with `ssl.client.auth=required` on it — every broker-to-broker
//! connection (replica fetchers, the controller channel, AlterPartition,
//! controlled shutdown) is mutual TLS, each broker presenting its own
//! certificate (tests/common/tls.rs) and checking the others' against the
//! CA and `ssl.endpoint.identification.algorithm=https` (SAN
//! `IP:127.0.0.1`).
//!
//! (a) `inter.broker.listener.name=INTERNAL` with
//!     `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL`,
//!     PKCS12 keystores: the replication probe, a topic created through
//!     the controller (LeaderAndIsr over SSL) with RF 3 and
//!     min.insync.replicas=2, then tests/py/history.py's producer (acks=all,
//!     idempotent) while the leaders are killed with kill -9 in turn and
//!     restarted; every acknowledged record is read back once and in order
//!     per partition, and after a clean stop the replicas' logs are
//!     identical batch for batch up to the HW. Also checked: each broker's
//!     znode lists the INTERNAL endpoint as SSL, the INTERNAL port serves
//!     the broker's certificate only to a client with a certificate, and
//!     the brokers hold established connections to each other's INTERNAL
//!     ports (the only ones no client uses).
//! (b) The same with `security.inter.broker.protocol=SSL` (the listener
//!     named SSL) and keytool-made PKCS12 keystores (RSA keys).
//! (c) A mixed cluster (as tests/cluster_mixed.rs, on its harness): a Kafka
//!     3.9 broker (JKS keystore, the controller) and two shardlog brokers
//!     (PKCS12) in one ZooKeeper, SSL inter-broker listeners with client
//!     certificates required. Kafka's kafka-topics creates a topic led by
//!     Kafka with shardlog followers and one led by shardlog with a Kafka
//!     follower (replica assignments); acks=all records reach every ISR;
//!     the Kafka broker is killed (-9) and its topic is read back from a
//!     shardlog broker, then both shardlog brokers are killed and the
//!     shardlog-led topic is read back from Kafka; after restarts the
//!     replicas are identical batch for batch across both implementations.
//!
//! Short form by default (3 kills, ~2 minutes); `SHARDLOG_LONG=1` runs 20
//! kills and 1 M acknowledged records. The `kafka_` variants run the same
//! against Apache Kafka 3.9: `cargo test --test tls_cluster -- --ignored
//! kafka_`. Timeouts are shortened through config, never by sleeping.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use common::cluster::{json, read, wait_for};
use common::replica_cluster::listeners::Listeners;
use common::replica_cluster::scenario::{
    concat, kill_leaders_with_history, probe_replication, produce, settings, SESSION_MS,
};
use common::replica_cluster::{
    assert_history_ok, assert_replicas_identical, check, drain, ReplCluster, System,
};
use common::tls::{ClientCert, Store, Tls};
use common::zookeeper::free_port;

/// Brokers 1..=3 of `systems` with an SSL inter-broker listener named
/// `internal` (`INTERNAL`, or `SSL` for `security.inter.broker.protocol`),
/// keystores in `store` form (JKS for the Kafka brokers when `store` is
/// PKCS12 written by openssl: Kafka's default type, as a Kafka operator has
/// it), `ssl.client.auth=required` on it.
fn start_ssl_cluster(
    systems: &[System],
    internal: &str,
    store: Store,
    extra: &[&str],
) -> (ReplCluster, Tls, BTreeMap<i32, u16>) {
    let names: Vec<String> = (1..=systems.len()).map(|i| format!("broker-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let tls = Tls::make(&refs);
    let ports: BTreeMap<i32, u16> = (1..=systems.len() as i32)
        .map(|id| (id, free_port()))
        .collect();
    let prefix = format!("listener.name.{}.", internal.to_lowercase());
    let per_node: BTreeMap<i32, Listeners> = ports
        .iter()
        .map(|(&id, &port)| {
            let kafka = systems[id as usize - 1] == System::Kafka;
            let store = if kafka && store == Store::Pkcs12Openssl {
                Store::Jks
            } else {
                store
            };
            let l = Listeners {
                client: ("PLAINTEXT".into(), "PLAINTEXT".into()),
                internal: Some((internal.into(), "SSL".into(), port)),
                settings: tls.broker_ssl(&format!("broker-{id}"), store, &prefix, Some("required")),
            };
            (id, l)
        })
        .collect();
    let c = ReplCluster::start_with_listeners(systems, extra, &|id| per_node[&id].clone());
    // Registered is not yet listening (Kafka opens its acceptors after
    // writing its znode).
    for (id, port) in &ports {
        wait_for(60, &format!("broker {id}'s INTERNAL port open"), || {
            std::net::TcpStream::connect(("127.0.0.1", *port))
                .ok()
                .map(|_| ())
        });
    }
    (c, tls, ports)
}

/// Every broker's znode lists `internal` as an SSL endpoint on its port.
fn assert_znodes_ssl(c: &ReplCluster, internal: &str, ports: &BTreeMap<i32, u16>) {
    for (id, port) in ports {
        let path = format!("/brokers/ids/{id}");
        let r = read(&c.zk.address(), &[&path]);
        let (data, _) = r[&path].clone().expect("broker znode");
        let j = json(&data);
        let endpoints: Vec<String> = serde_json::from_value(j["endpoints"].clone()).unwrap();
        assert!(
            endpoints.contains(&format!("{internal}://127.0.0.1:{port}")),
            "broker {id}'s znode: {data}"
        );
        assert_eq!(
            j["listener_security_protocol_map"][internal], "SSL",
            "broker {id}'s znode: {data}"
        );
    }
}

/// The INTERNAL port speaks TLS: `openssl s_client` with the valid client
/// certificate verifies the broker's certificate (CN broker-<id>) against
/// the CA; the handshake without a client certificate is refused.
fn assert_internal_port_is_mutual_tls(tls: &Tls, ports: &BTreeMap<i32, u16>) {
    let (cert, key) = tls.client_pem(ClientCert::Valid);
    for (id, port) in ports {
        let connect = format!("127.0.0.1:{port}");
        let ok = s_client(&[
            "-connect",
            &connect,
            "-CAfile",
            &tls.p_str("ca.pem"),
            "-verify_return_error",
            "-verify_ip",
            "127.0.0.1",
            "-cert",
            &cert.display().to_string(),
            "-key",
            &key.display().to_string(),
        ]);
        assert!(
            ok.contains("Verify return code: 0 (ok)") && ok.contains(&format!("CN = broker-{id}")),
            "broker {id}'s INTERNAL port {port} with a client certificate:\n{ok}"
        );
        // TLS 1.2: the server refuses before the handshake completes, so
        // s_client sees the alert before it quits.
        let refused = s_client(&[
            "-connect",
            &connect,
            "-CAfile",
            &tls.p_str("ca.pem"),
            "-verify_return_error",
            "-tls1_2",
        ]);
        assert!(
            refused.contains("alert") || refused.contains("errno") || refused.contains(":error:"),
            "broker {id}'s INTERNAL port {port} without a client certificate was not refused:\n{refused}"
        );
    }
}

/// `openssl s_client` (stdin at EOF: it handshakes and quits); its stdout
/// and stderr together.
fn s_client(args: &[&str]) -> String {
    let out = Command::new("openssl")
        .arg("s_client")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("openssl s_client");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Established TCP connections to `port` on 127.0.0.1 (`ss`).
fn established_to(port: u16) -> usize {
    let out = Command::new("ss")
        .args([
            "-Htn",
            "state",
            "established",
            "dst",
            &format!("127.0.0.1:{port}"),
        ])
        .output()
        .expect("ss (iproute2)");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Inter-broker traffic runs over the INTERNAL ports: the followers'
/// fetchers and the controller hold connections to each of them.
fn assert_brokers_connected_over_internal(ports: &BTreeMap<i32, u16>) {
    for (id, port) in ports {
        wait_for(
            60,
            &format!("connections to broker {id}'s INTERNAL port"),
            || (established_to(*port) > 0).then_some(()),
        );
    }
}

fn kill_leaders_over_ssl(system: System, internal: &str, store: Store) {
    let s = settings(2, false, 3000, SESSION_MS);
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    let (mut c, tls, ports) = start_ssl_cluster(&[system; 3], internal, store, &refs);
    assert_znodes_ssl(&c, internal, &ports);
    assert_internal_port_is_mutual_tls(&tls, &ports);
    // Replication over SSL (acks=1, every replica's files), then a topic
    // created through the controller: its LeaderAndIsr reaches every
    // broker over SSL and every ISR is whole.
    probe_replication(&c);
    let (topic, partitions) = ("a", 3);
    c.create_topic(topic, partitions, 3, &["min.insync.replicas=2"]);
    for p in 0..partitions {
        c.wait_state(60, "a full ISR", topic, p, |s| s.isr.len() == 3);
    }
    assert_brokers_connected_over_internal(&ports);

    kill_leaders_with_history(
        &mut c,
        system,
        "kill -9 of leaders, SSL inter-broker",
        topic,
        partitions,
    );
}

#[test]
fn ssl_inter_broker_listener_history_through_kill9_of_leaders() {
    kill_leaders_over_ssl(System::Shardlog, "INTERNAL", Store::Pkcs12Openssl);
}

#[test]
fn security_inter_broker_protocol_ssl_with_keytool_keystores() {
    kill_leaders_over_ssl(System::Shardlog, "SSL", Store::Pkcs12Keytool);
}

#[test]
#[ignore = "Kafka 3.9 reference (three JVMs): cargo test --test tls_cluster -- --ignored kafka_"]
fn kafka_ssl_inter_broker_listener_history_through_kill9_of_leaders() {
    kill_leaders_over_ssl(System::Kafka, "INTERNAL", Store::Pkcs12Openssl);
}

#[test]
#[ignore = "Kafka 3.9 reference (three JVMs): cargo test --test tls_cluster -- --ignored kafka_"]
fn kafka_security_inter_broker_protocol_ssl_with_keytool_keystores() {
    kill_leaders_over_ssl(System::Kafka, "SSL", Store::Pkcs12Keytool);
}

// ---------------------------------------------------------------------------
// (c) Kafka 3.9 and shardlog brokers, SSL between them
// ---------------------------------------------------------------------------

const KAFKA_LED: &str = "kafka-led";
const SHARDLOG_LED: &str = "shardlog-led";

/// kafka-topics --create with a replica assignment (through the PLAINTEXT
/// client listeners); waits for every partition's full ISR, which needs
/// the followers fetching over SSL from the other implementation.
fn create_assigned(c: &ReplCluster, topic: &str, assignment: &str, partitions: i32) {
    let mut cmd = common::java::kafka_tool("org.apache.kafka.tools.TopicCommand");
    cmd.args([
        "--bootstrap-server",
        &c.bootstrap(),
        "--create",
        "--topic",
        topic,
    ])
    .args(["--replica-assignment", assignment])
    .args(["--config", "min.insync.replicas=2"]);
    let out = common::java::run_ok(&mut cmd, "kafka-topics --create --replica-assignment");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Created topic {topic}.")), "{text}");
    for p in 0..partitions {
        c.wait_state(
            120,
            "a full ISR (followers fetching over SSL)",
            topic,
            p,
            |s| s.leader >= 0 && s.isr.len() == 3,
        );
    }
}

/// acks=all idempotent records to every partition of `topic`; the acked
/// file of them all.
fn produce_all(c: &ReplCluster, topic: &str, partitions: i32, round: &str) -> std::path::PathBuf {
    let mut files = Vec::new();
    for p in 0..partitions {
        let name = format!("{topic}-{p}-{round}");
        let (r, acked) = produce(
            c,
            topic,
            p,
            &name,
            200,
            &["--acks=all", "--idempotence=1", "--timeout-ms=60000"],
        );
        assert_eq!(
            r["acked"], 200,
            "{topic}-{p}: acks=all over SSL replication: {r}"
        );
        files.push(acked);
    }
    let refs: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
    concat(c, &format!("acked-{topic}-{round}.txt"), &refs)
}

/// Every acked record of `topic` read back (from whoever leads now).
fn read_back(c: &ReplCluster, topic: &str, partitions: i32, acked: &std::path::Path, what: &str) {
    let read_file = drain(&c.bootstrap(), topic, partitions, c.dir.path());
    let h = check(acked, &read_file);
    eprintln!(
        "[mixed SSL {topic} {what}: acked {} read {}]",
        h["acked"], h["read"]
    );
    assert_history_ok(c.system, &format!("{topic}, {what}"), &h);
    assert_eq!(h["unacked_read_count"], 0, "{topic} {what}: {h}");
}

/// Broker 1 (Kafka, the controller) leads `kafka-led`, brokers 2 and 3
/// lead `shardlog-led` (shardlog in the mixed cluster).
fn replicate_both_ways(systems: [System; 3]) {
    let s = settings(2, false, 6000, 6000);
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    let (mut c, tls, ports) = start_ssl_cluster(&systems, "INTERNAL", Store::Pkcs12Openssl, &refs);
    assert_eq!(c.controller(), 1, "broker 1 (Kafka) started first");
    assert_znodes_ssl(&c, "INTERNAL", &ports);
    assert_internal_port_is_mutual_tls(&tls, &ports);
    let partitions = 2;
    create_assigned(&c, KAFKA_LED, "1:2:3,1:3:2", partitions);
    create_assigned(&c, SHARDLOG_LED, "2:1:3,3:1:2", partitions);
    for (topic, leaders) in [(KAFKA_LED, [1, 1]), (SHARDLOG_LED, [2, 3])] {
        let got: Vec<i32> = (0..partitions).map(|p| c.state(topic, p).leader).collect();
        assert_eq!(got, leaders, "{topic}'s leaders");
    }
    assert_brokers_connected_over_internal(&ports);
    let kafka_acked = produce_all(&c, KAFKA_LED, partitions, "1");
    let shardlog_acked = produce_all(&c, SHARDLOG_LED, partitions, "1");
    read_back(&c, KAFKA_LED, partitions, &kafka_acked, "all up");
    read_back(&c, SHARDLOG_LED, partitions, &shardlog_acked, "all up");

    // Kafka's topic from its shardlog followers.
    c.node(1).kill9();
    for p in 0..partitions {
        c.wait_state(60, "a shardlog leader", KAFKA_LED, p, |s| {
            s.leader == 2 || s.leader == 3
        });
    }
    read_back(
        &c,
        KAFKA_LED,
        partitions,
        &kafka_acked,
        "Kafka killed, read from shardlog",
    );
    c.restart(1);
    for topic in [KAFKA_LED, SHARDLOG_LED] {
        for p in 0..partitions {
            c.wait_state(120, "Kafka back in the ISR", topic, p, |s| {
                s.isr.contains(&1)
            });
        }
    }
    // shardlog's topic from its Kafka follower.
    c.node(2).kill9();
    c.node(3).kill9();
    for p in 0..partitions {
        c.wait_state(60, "the Kafka broker leading", SHARDLOG_LED, p, |s| {
            s.leader == 1
        });
    }
    read_back(
        &c,
        SHARDLOG_LED,
        partitions,
        &shardlog_acked,
        "shardlog killed, read from Kafka",
    );
    c.restart(2);
    c.restart(3);
    for topic in [KAFKA_LED, SHARDLOG_LED] {
        for p in 0..partitions {
            c.wait_state(120, "every ISR whole", topic, p, |s| s.isr.len() == 3);
        }
    }
    for topic in [KAFKA_LED, SHARDLOG_LED] {
        assert_replicas_identical(&mut c, topic, partitions);
    }
}

#[test]
fn mixed_kafka_and_shardlog_replicate_both_ways_over_ssl() {
    replicate_both_ways([System::Kafka, System::Shardlog, System::Shardlog]);
}

#[test]
#[ignore = "Kafka 3.9 reference (three JVMs): cargo test --test tls_cluster -- --ignored kafka_"]
fn kafka_three_kafka_brokers_replicate_both_ways_over_ssl() {
    // The mixed scenario's steps on three Kafka brokers: what the mixed
    // cluster must match.
    replicate_both_ways([System::Kafka; 3]);
}
