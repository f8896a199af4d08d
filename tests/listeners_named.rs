//! Several named listeners, as Kafka 3.9 in ZooKeeper mode serves them
//! (`listeners`, `advertised.listeners`, `listener.security.protocol.map`,
//! `inter.broker.listener.name`, `control.plane.listener.name` — KIP-291;
//! Kafka's `KafkaConfig.scala`, `SocketServerConfigs.java`):
//! - one broker with a PLAINTEXT INTERNAL (inter-broker) listener and an
//!   SSL EXTERNAL one (SECURITY.md §2; PEM keys by tests/common/tls.rs)
//!   advertising different host names: a client bootstrapped on either
//!   gets that listener's endpoints in Metadata, FindCoordinator and
//!   DescribeCluster (raw requests, over TLS on EXTERNAL; exact endpoints)
//!   and produces and consumes in a group with confluent-kafka (librdkafka)
//!   and kafka-python, over SSL on EXTERNAL (verifying the advertised host
//!   name against the broker certificate's SAN);
//! - a ZooKeeper-mode 3-broker cluster whose inter-broker listener is a
//!   custom name (and, in a second case, with a control-plane listener):
//!   replication with acks=all, the broker znodes listing every endpoint
//!   and the protocol map, and the brokers' own connections on the
//!   listeners Kafka's table says (read from the kernel's socket table);
//! - listener config mistakes stop the start naming the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{children, json, read, states, wait_for};
use common::tls::{Store, Tls};
use common::zookeeper::{free_port, ZkServer};
use common::{
    broker_bin, new_log_dir, read_frame, request_frame_as, venv_python, Broker, TEST_CLIENT_ID,
};
use kafka_protocol::messages::{
    ApiKey, DescribeClusterRequest, FindCoordinatorRequest, FindCoordinatorResponse,
    MetadataRequest, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Request, StrBytes};

/// One broker on two listeners: INTERNAL (PLAINTEXT, inter-broker) on
/// 127.0.0.1 and EXTERNAL (SSL, the broker certificate's SANs are
/// `localhost` and 127.0.0.1) advertised as `localhost`.
struct TwoListeners {
    broker: Broker,
    internal: String,
    external: String,
    /// The CA EXTERNAL's clients trust.
    ca: PathBuf,
    _tls: Tls,
}

fn start_two_listeners() -> TwoListeners {
    let tls = Tls::make_pem(&["broker-1"]);
    let (p1, p2) = (free_port(), free_port());
    let mut settings = vec![
        format!("listeners=INTERNAL://127.0.0.1:{p1},EXTERNAL://127.0.0.1:{p2}"),
        format!("advertised.listeners=INTERNAL://127.0.0.1:{p1},EXTERNAL://localhost:{p2}"),
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SSL".into(),
        "inter.broker.listener.name=INTERNAL".into(),
        "offsets.topic.replication.factor=1".into(),
    ];
    // The SSL keys for EXTERNAL alone (`listener.name.<listener>.` prefix).
    settings.extend(tls.broker_ssl("broker-1", Store::Pem, "listener.name.external.", None));
    let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
    let broker = Broker::start_with(&refs);
    assert_eq!(
        broker.port, p1,
        "the readiness line names the first listener"
    );
    TwoListeners {
        broker,
        internal: format!("127.0.0.1:{p1}"),
        external: format!("localhost:{p2}"),
        ca: tls.ca_pem(),
        _tls: tls,
    }
}

/// A connection to `addr`: plaintext, or TLS trusting `ca` and verifying
/// `addr`'s host name against the broker's certificate (rustls, as a
/// Kafka client with `ssl.endpoint.identification.algorithm=https`).
fn dial(addr: &str, ca: Option<&Path>) -> Box<dyn ReadWrite> {
    let tcp = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let Some(ca) = ca else {
        return Box::new(tcp);
    };
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    // rustls' provider from its crate features (ring, as the broker's).
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let host = addr.rsplit_once(':').unwrap().0.to_owned();
    let name = rustls_pki_types::ServerName::try_from(host).unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    Box::new(rustls::StreamOwned::new(conn, tcp))
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One request on a new connection to `addr` (see [`dial`]); its answer.
fn call<Q: Request>(addr: &str, ca: Option<&Path>, version: i16, req: &Q) -> Q::Response {
    let key = ApiKey::try_from(Q::KEY).unwrap();
    let mut stream = dial(addr, ca);
    let frame = request_frame_as(TEST_CLIENT_ID, key, version, 7, req);
    stream.write_all(&frame).unwrap();
    let mut body = read_frame(&mut stream).expect("an answer, not a close");
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 7);
    Q::Response::decode(&mut body, version).unwrap()
}

/// The brokers a Metadata (v12) answer on `addr` lists, as `id@host:port`.
fn metadata_brokers(addr: &str, ca: Option<&Path>) -> Vec<String> {
    let req = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(vec![]));
    let md = call(addr, ca, 12, &req);
    let mut out: Vec<String> = md
        .brokers
        .iter()
        .map(|b| format!("{}@{}:{}", b.node_id.0, b.host.as_str(), b.port))
        .collect();
    out.sort();
    out
}

/// The group coordinator FindCoordinator (v3) names on `addr`, once
/// `__consumer_offsets` exists.
fn coordinator(addr: &str, ca: Option<&Path>, group: &str) -> String {
    let req = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(group.to_owned()))
        .with_key_type(0);
    wait_for(60, "a group coordinator", || {
        let r: FindCoordinatorResponse = call(addr, ca, 3, &req);
        (r.error_code == 0).then(|| format!("{}@{}:{}", r.node_id.0, r.host.as_str(), r.port))
    })
}

/// The brokers DescribeCluster (v0) lists on `addr`.
fn described_brokers(addr: &str, ca: Option<&Path>) -> Vec<String> {
    let r = call(addr, ca, 0, &DescribeClusterRequest::default());
    assert_eq!(r.error_code, 0, "{r:?}");
    let mut out: Vec<String> = r
        .brokers
        .iter()
        .map(|b| format!("{}@{}:{}", b.broker_id.0, b.host.as_str(), b.port))
        .collect();
    out.sort();
    out
}

/// Produces `COUNT` messages with acks=all and consumes them in group
/// `GROUP` with confluent-kafka, then reads them again with kafka-python
/// (each over SSL trusting `CAFILE` when it is set); prints what each
/// client saw of the cluster.
const ROUND_TRIP_PY: &str = r#"
import json, os, time
from confluent_kafka import Producer, Consumer
from confluent_kafka.admin import AdminClient, NewTopic
import kafka

bs, topic, n = os.environ["BOOTSTRAP"], os.environ["TOPIC"], int(os.environ["COUNT"])
rf = int(os.environ.get("RF", "0"))
ca = os.environ.get("CAFILE")
ssl = {"security.protocol": "SSL", "ssl.ca.location": ca} if ca else {}
kssl = {"security_protocol": "SSL", "ssl_cafile": ca} if ca else {}
admin = AdminClient({"bootstrap.servers": bs, **ssl})
if rf:
    fs = admin.create_topics([NewTopic(topic, 3, rf, config={"min.insync.replicas": "2"})])
    for f in fs.values():
        f.result(60)
md = admin.list_topics(timeout=30)
brokers = sorted(f"{b.id}@{b.host}:{b.port}" for b in md.brokers.values())
errors = []
def delivered(err, msg):
    if err is not None:
        errors.append(str(err))
p = Producer({"bootstrap.servers": bs, "acks": "all", "message.timeout.ms": 60000, **ssl})
for i in range(n):
    p.produce(topic, value=f"m{i}".encode(), on_delivery=delivered)
undelivered = p.flush(90)
c = Consumer({"bootstrap.servers": bs, "group.id": os.environ["GROUP"],
              "auto.offset.reset": "earliest", "enable.auto.commit": False, **ssl})
c.subscribe([topic])
got, deadline = set(), time.time() + 90
while len(got) < n and time.time() < deadline:
    m = c.poll(1.0)
    if m is None:
        continue
    if m.error():
        errors.append(str(m.error()))
        continue
    got.add(m.value().decode())
if got:
    c.commit(asynchronous=False)
c.close()
k = kafka.KafkaConsumer(topic, bootstrap_servers=bs, group_id=None,
                        auto_offset_reset="earliest", consumer_timeout_ms=10000, **kssl)
again = set()
for r in k:  # stops at COUNT, or after 10 s without a record
    again.add(r.value.decode())
    if len(again) == n:
        break
kbrokers = sorted(f"{b.node_id if hasattr(b, 'node_id') else b.nodeId}@{b.host}:{b.port}"
                  for b in k._client.cluster.brokers())
k.close()
print(json.dumps({"brokers": brokers, "kafka_python_brokers": kbrokers,
                  "consumed": len(got), "consumed_again": len(again),
                  "undelivered": undelivered, "errors": errors}))
"#;

/// [`ROUND_TRIP_PY`] on `bootstrap`, over SSL trusting `ca` when given.
fn round_trip(
    bootstrap: &str,
    ca: Option<&Path>,
    topic: &str,
    group: &str,
    count: u64,
    rf: i32,
) -> serde_json::Value {
    let mut cmd = Command::new(venv_python());
    if let Some(ca) = ca {
        cmd.env("CAFILE", ca);
    }
    let out = cmd
        .args(["-c", ROUND_TRIP_PY])
        .env("BOOTSTRAP", bootstrap)
        .env("TOPIC", topic)
        .env("GROUP", group)
        .env("COUNT", count.to_string())
        .env("RF", rf.to_string())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "round trip on {bootstrap} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json(stdout.lines().last().unwrap_or_default())
}

fn assert_round_trip(report: &serde_json::Value, count: u64) {
    assert_eq!(report["undelivered"], 0, "{report}");
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert_eq!(report["consumed"], count, "{report}");
    assert_eq!(report["consumed_again"], count, "{report}");
}

#[test]
fn each_listener_answers_with_its_own_endpoints_and_serves_clients() {
    let b = start_two_listeners();
    let id = b.broker.broker_id;
    let internal = format!("{id}@{}", b.internal);
    let external = format!("{id}@{}", b.external);
    let ca = Some(b.ca.as_path());
    assert_eq!(metadata_brokers(&b.internal, None), vec![internal.clone()]);
    assert_eq!(metadata_brokers(&b.external, ca), vec![external.clone()]);
    assert_eq!(described_brokers(&b.internal, None), vec![internal.clone()]);
    assert_eq!(described_brokers(&b.external, ca), vec![external.clone()]);
    for (bootstrap, ca, expected, name) in [
        (&b.internal, None, &internal, "internal"),
        (&b.external, ca, &external, "external"),
    ] {
        let topic = format!("named-listeners-{name}");
        let report = round_trip(bootstrap, ca, &topic, &format!("g-{name}"), 200, 0);
        assert_round_trip(&report, 200);
        assert_eq!(report["brokers"], serde_json::json!([expected]), "{report}");
        assert_eq!(
            report["kafka_python_brokers"],
            serde_json::json!([expected]),
            "{report}"
        );
        assert_eq!(&coordinator(bootstrap, ca, &format!("g-{name}")), expected);
    }
    b.broker.stop();
}

// --- a ZooKeeper-mode cluster on custom listener names ---------------------

/// One cluster member's ports by listener name.
struct Member {
    broker: Broker,
    ports: BTreeMap<&'static str, u16>,
}

/// Three brokers with listeners CLIENT (first, what clients bootstrap
/// on), REPLICATION (inter-broker) and, when `control_plane`, CONTROL.
fn start_cluster(zk: &str, control_plane: bool) -> Vec<Member> {
    let mut names = vec!["CLIENT", "REPLICATION"];
    if control_plane {
        names.push("CONTROL");
    }
    (0..3)
        .map(|id| {
            let ports: BTreeMap<&str, u16> = names.iter().map(|n| (*n, free_port())).collect();
            let listeners: Vec<String> = names
                .iter()
                .map(|n| format!("{n}://127.0.0.1:{}", ports[n]))
                .collect();
            let map: Vec<String> = names.iter().map(|n| format!("{n}:PLAINTEXT")).collect();
            let mut settings = vec![
                format!("listeners={}", listeners.join(",")),
                format!("listener.security.protocol.map={}", map.join(",")),
                "inter.broker.listener.name=REPLICATION".into(),
                format!("zookeeper.connect={zk}"),
                "zookeeper.session.timeout.ms=6000".into(),
                format!("broker.id={id}"),
                "shardlog.shards=1".into(),
                "auto.leader.rebalance.enable=false".into(),
                "offsets.topic.replication.factor=3".into(),
            ];
            if control_plane {
                settings.push("control.plane.listener.name=CONTROL".into());
            }
            let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
            Member {
                broker: Broker::start_with(&refs),
                ports,
            }
        })
        .collect()
}

/// Established TCP connections whose local (server) end is `port` on
/// this host, from the kernel's socket table (`/proc/net/tcp`).
fn established_on(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let local_port = cols
                .get(1)
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            // State 01 = TCP_ESTABLISHED.
            local_port == Some(port) && cols.get(3) == Some(&"01")
        })
        .count()
}

fn cluster_case(control_plane: bool) {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let members = start_cluster(&addr, control_plane);
    wait_for(60, "three registrations", || {
        (children(&addr, "/brokers/ids").len() == 3).then_some(())
    });
    // Every endpoint in config order, with the protocol map (SECURITY.md
    // §1.2); host/port are those of the first endpoint whose protocol is
    // PLAINTEXT (`BrokerIdZNode.encode`), CLIENT here.
    for (id, m) in members.iter().enumerate() {
        let path = format!("/brokers/ids/{id}");
        let (data, _) = read(&addr, &[&path])[&path].clone().expect("registration");
        let reg = json(&data);
        let endpoints: Vec<String> = m
            .ports
            .iter()
            .map(|(n, p)| (*n, *p))
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .map(|(n, p)| format!("{n}://127.0.0.1:{p}"))
            .collect();
        let mut listed: Vec<String> = reg["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            listed[0],
            format!("CLIENT://127.0.0.1:{}", m.ports["CLIENT"]),
            "config order: {reg}"
        );
        listed.sort();
        assert_eq!(listed, endpoints, "{reg}");
        for n in m.ports.keys() {
            assert_eq!(
                reg["listener_security_protocol_map"][n], "PLAINTEXT",
                "{reg}"
            );
        }
        assert_eq!(reg["host"], "127.0.0.1", "{reg}");
        assert_eq!(reg["port"], m.ports["CLIENT"], "{reg}");
        assert_eq!(reg["version"], 5, "{reg}");
    }
    // Clients on CLIENT see the CLIENT endpoints of all three brokers.
    let bootstrap = format!("127.0.0.1:{}", members[0].ports["CLIENT"]);
    let client_view: Vec<String> = members
        .iter()
        .enumerate()
        .map(|(id, m)| format!("{id}@127.0.0.1:{}", m.ports["CLIENT"]))
        .collect();
    wait_for(60, "every broker in Metadata", || {
        (metadata_brokers(&bootstrap, None) == client_view).then_some(())
    });
    let topic = if control_plane {
        "cp-replicated"
    } else {
        "replicated"
    };
    let report = round_trip(&bootstrap, None, topic, "g-cluster", 300, 3);
    assert_round_trip(&report, 300);
    assert_eq!(
        report["brokers"],
        serde_json::json!(client_view),
        "{report}"
    );
    // Every replica caught up: the ISR is all three for each partition.
    wait_for(60, "full ISRs", || {
        let s = states(&addr, topic, 3);
        (s.len() == 3 && s.values().all(|p| p.isr.len() == 3)).then_some(())
    });
    // The brokers' own connections: replica fetchers on REPLICATION; the
    // controller's channel (to every broker, itself included) on CONTROL
    // if set, else on REPLICATION; nothing of theirs on CLIENT once the
    // clients are gone.
    let on = |name: &str| -> usize { members.iter().map(|m| established_on(m.ports[name])).sum() };
    wait_for(60, "replica fetchers on REPLICATION", || {
        (on("REPLICATION") >= 2).then_some(())
    });
    if control_plane {
        for m in &members {
            let port = m.ports["CONTROL"];
            wait_for(60, "the controller's channel on CONTROL", || {
                (established_on(port) >= 1).then_some(())
            });
        }
    }
    wait_for(60, "no broker connection on CLIENT", || {
        (on("CLIENT") == 0).then_some(())
    });
    for m in members {
        m.broker.stop();
    }
}

#[test]
fn a_cluster_replicates_over_a_custom_inter_broker_listener() {
    cluster_case(false);
}

#[test]
fn a_cluster_with_a_control_plane_listener_replicates_with_acks_all() {
    cluster_case(true);
}

// --- config mistakes ---------------------------------------------------------

/// Start the broker with `settings`; it must exit non-zero. Its stderr.
fn refused_start(settings: &[&str]) -> String {
    let dir = new_log_dir();
    let mut args: Vec<String> = vec!["broker".into()];
    let log_dirs = format!("log.dirs={}", dir.path().display());
    for s in ["shardlog.shards=1", "broker.id=0", log_dirs.as_str()]
        .iter()
        .chain(settings)
    {
        args.push("--override".into());
        args.push((*s).to_owned());
    }
    let mut child = Command::new(broker_bin())
        .args(&args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn shardlog");
    let deadline = Instant::now() + common::broker::STARTUP_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the broker started with {settings:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("stderr");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!status.success(), "{settings:?}: {stderr}");
    stderr
}

#[test]
fn listener_config_mistakes_stop_the_start_naming_the_key() {
    let (p1, p2) = (free_port(), free_port());
    let two_map = "listener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT";
    let a_b = format!("listeners=A://127.0.0.1:{p1},B://127.0.0.1:{p2}");
    let rows: Vec<(Vec<String>, &str, &str)> = vec![
        (
            vec![
                format!("listeners=A://127.0.0.1:{p1},a://127.0.0.1:{p2}"),
                two_map.into(),
                "inter.broker.listener.name=A".into(),
            ],
            "listeners",
            "Each listener must have a different name",
        ),
        (
            vec![
                format!("listeners=A://127.0.0.1:{p1},B://127.0.0.1:{p1}"),
                two_map.into(),
                "inter.broker.listener.name=A".into(),
            ],
            "listeners",
            "different port",
        ),
        (
            vec![
                a_b.clone(),
                "listener.security.protocol.map=A:PLAINTEXT".into(),
                "inter.broker.listener.name=A".into(),
            ],
            "listeners",
            "No security protocol defined for listener B",
        ),
        (
            vec![
                a_b.clone(),
                two_map.into(),
                "inter.broker.listener.name=A".into(),
                "security.inter.broker.protocol=PLAINTEXT".into(),
            ],
            "inter.broker.listener.name",
            "Only one of inter.broker.listener.name and security.inter.broker.protocol",
        ),
        (
            vec![
                a_b.clone(),
                two_map.into(),
                "inter.broker.listener.name=A".into(),
                "control.plane.listener.name=A".into(),
            ],
            "control.plane.listener.name",
            "different value from the inter broker listener name",
        ),
        (
            vec![format!(
                "listeners=PLAINTEXT://127.0.0.1:{p1},SASL_PLAINTEXT://127.0.0.1:{p2}"
            )],
            // Kafka's default mechanism (GSSAPI) is not served.
            "sasl.enabled.mechanisms",
            "GSSAPI (Kerberos, Kafka's default) is not supported by shardlog",
        ),
        (
            vec![format!(
                "listeners=PLAINTEXT://127.0.0.1:{p1},SSL://127.0.0.1:{p2}"
            )],
            "ssl.keystore.location",
            "listener SSL serves TLS and needs a keystore",
        ),
    ];
    for (settings, key, reason) in rows {
        let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
        let stderr = refused_start(&refs);
        assert!(
            stderr.contains(&format!("invalid value for {key}")) && stderr.contains(reason),
            "{settings:?}: expected {key} / {reason:?} in:\n{stderr}"
        );
    }
}
