//! Kafka's AclAuthorizer in shardlog (SECURITY.md §5–6), with real clients:
//! one ZooKeeper-mode broker with
//! `authorizer.class.name=kafka.security.authorizer.AclAuthorizer`, an
//! mTLS `SSL://` client listener (the principal is the client
//! certificate's DN, `User:CN=<name>`; keys made by `openssl`/`keytool` in
//! tests/common/tls.rs) and `super.users` naming the admin's certificate
//! (and the PLAINTEXT inter-broker listener's `User:ANONYMOUS`).
//!
//! - `kafka-acls --bootstrap-server` adds literal and prefixed ACLs, lists
//!   them and removes one (CreateAcls / DescribeAcls / DeleteAcls);
//! - confluent-kafka as `CN=alice`, with READ on the topic and the group,
//!   consumes and commits what the admin produced; with WRITE on the
//!   prefix `app-` it produces to `app-…` but not to the topic;
//! - `CN=mallory`, without ACLs, gets GROUP_AUTHORIZATION_FAILED and
//!   TOPIC_AUTHORIZATION_FAILED, does not see the topic in Metadata, and
//!   its produce appends nothing (the admin reads the end offset back);
//!   its inter-broker requests (AllocateProducerIds, UpdateMetadata,
//!   WriteTxnMarkers) are answered CLUSTER_AUTHORIZATION_FAILED;
//! - an ACL written straight to ZooKeeper by `kafka-acls
//!   --authorizer-properties zookeeper.connect=…` (Kafka's own
//!   AclAuthorizer: the `/kafka-acl` znode and `/kafka-acl-changes`
//!   notification) is enforced by the running broker within a bounded
//!   wait, and listed by DescribeAcls;
//! - `ssl.principal.mapping.rules` (KIP-371, Kafka's `SslPrincipalMapper`)
//!   `RULE:^CN=(.*?),OU=.*$/$1/,DEFAULT` on the SSL listener: a certificate
//!   `CN=alice,OU=eng,O=Acme` is `User:alice` — it produces where an ACL
//!   names `User:alice` and gets TOPIC_AUTHORIZATION_FAILED where only its
//!   unmapped DN has one; the other certificates (no `OU`) keep their DN
//!   (`DEFAULT`);
//! - `kafka-acls --remove` of alice's PREFIXED ALLOW on `app-` deletes its
//!   `/kafka-acl-extended/prefixed/Topic/app-` znode and her produce there
//!   is refused afterwards (tests/acl_prefixed_removal/mod.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod acl_prefixed_removal;
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::java::{kafka_tool, run_ok};
use common::replica_cluster::listeners::Listeners;
use common::replica_cluster::{ReplCluster, System};
use common::tls::{Store, Tls};
use common::zookeeper::free_port;
use common::{run_py_script, unique_topic};
use serde_json::{json, Value};

/// The broker with its keys and the three clients' files.
struct Secured {
    c: ReplCluster,
    tls: Tls,
    admin_props: PathBuf,
}

fn start() -> Secured {
    let tls = Tls::make(&["broker-1"]);
    for name in ["admin", "alice", "mallory"] {
        tls.add_client(name, &format!("CN={name}"));
    }
    // openssl's `-subj /O=Acme/OU=eng/CN=alice`: RFC 2253 (Java's
    // `X500Principal.getName()`) lists it last RDN first.
    tls.add_client(MAPPED_CERT, "O=Acme,OU=eng,CN=alice");
    let mut settings = tls.broker_ssl(
        "broker-1",
        Store::Pkcs12Openssl,
        "listener.name.ssl.",
        Some("required"),
    );
    settings.push(format!(
        "listener.name.ssl.ssl.principal.mapping.rules={MAPPING_RULES}"
    ));
    let listeners = Listeners {
        client: ("SSL".into(), "SSL".into()),
        internal: Some(("PLAINTEXT".into(), "PLAINTEXT".into(), free_port())),
        settings,
    };
    let c = ReplCluster::start_with_listeners(
        &[System::Shardlog],
        &[
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
            "super.users=User:CN=admin;User:ANONYMOUS",
            "offsets.topic.num.partitions=2",
            "num.partitions=1",
        ],
        &|_| listeners.clone(),
    );
    let admin_props = tls.java_properties_of("admin");
    Secured {
        c,
        tls,
        admin_props,
    }
}

impl Secured {
    /// tests/py/acl_clients.py as client `who`.
    fn py(&self, who: &str, mode: &str, args: &[&str]) -> Value {
        let mut all = vec![
            mode.to_string(),
            self.c.bootstrap(),
            self.tls.py_tls_of(who).display().to_string(),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        run_py_script(&["confluent_kafka"], "acl_clients.py", &all)
    }

    /// `kafka-acls --bootstrap-server … --command-config <admin>` + `args`.
    fn acls(&self, args: &[&str]) -> String {
        let bs = self.c.bootstrap();
        let props = self.admin_props.display().to_string();
        let mut all = vec!["--bootstrap-server", &bs, "--command-config", &props];
        all.extend_from_slice(args);
        let out = run_ok(
            kafka_tool("kafka.admin.AclCommand").args(&all),
            &format!("kafka-acls {args:?}"),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The same, straight to ZooKeeper (Kafka's AclAuthorizer in the tool).
    fn acls_in_zookeeper(&self, args: &[&str]) {
        let zk = format!("zookeeper.connect={}", self.c.zk.address());
        let mut all = vec!["--authorizer-properties", &zk];
        all.extend_from_slice(args);
        run_ok(
            kafka_tool("kafka.admin.AclCommand").args(&all),
            &format!("kafka-acls (ZooKeeper) {args:?}"),
        );
    }
}

/// One ACL line as `kafka-acls --list` prints it (AclCommand, Kafka 3.9).
fn entry(principal: &str, op: &str, permission: &str) -> String {
    format!("(principal={principal}, host=*, operation={op}, permissionType={permission})")
}

fn errors(v: &Value) -> Vec<String> {
    v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect()
}

/// KIP-371's example: the CN of a DN that has an OU, else the DN.
const MAPPING_RULES: &str = "RULE:^CN=(.*?),OU=.*$/$1/,DEFAULT";
/// The client certificate `CN=alice,OU=eng,O=Acme`.
const MAPPED_CERT: &str = "alice-eng";

/// The names one run uses.
struct Names {
    topic: String,
    group: String,
    app_topic: String,
    group_m: String,
    mapped_topic: String,
}

#[test]
fn acls_from_kafka_tools_decide_what_each_certificate_principal_may_do() {
    let s = start();
    let n = Names {
        topic: unique_topic("acl"),
        group: unique_topic("acl-group"),
        app_topic: format!("app-{}", unique_topic("p")),
        group_m: unique_topic("acl-mallory"),
        mapped_topic: unique_topic("acl-mapped"),
    };
    // The admin (a super user) creates the topics and produces.
    for t in [&n.topic, &n.app_topic, &n.mapped_topic] {
        assert_eq!(s.py("admin", "create", &[t]), json!({"error": null}));
    }
    let produced = s.py("admin", "produce", &[&n.topic, "10"]);
    assert_eq!(produced, json!({"delivered": 10, "errors": []}));
    add_and_list(&s, &n);
    alice_may_what_her_acls_say(&s, &n);
    mallory_may_nothing(&s, &n);
    changes_apply_to_the_running_broker(&s, &n);
    mapped_principal_is_what_acls_name(&s, &n);
    acl_prefixed_removal::leaves_zookeeper_and_denies(&s, &n);
}

/// Literal ACLs (a consumer's) and a prefixed one, then the list.
fn add_and_list(s: &Secured, n: &Names) {
    let (topic, group) = (&n.topic, &n.group);
    s.acls(&[
        "--add",
        "--allow-principal",
        "User:CN=alice",
        "--operation",
        "Read",
        "--topic",
        topic,
        "--group",
        group,
    ]);
    s.acls(&[
        "--add",
        "--allow-principal",
        "User:CN=alice",
        "--operation",
        "Write",
        "--topic",
        "app-",
        "--resource-pattern-type",
        "prefixed",
    ]);
    let listed = s.acls(&["--list"]);
    for needle in [
        format!("ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)"),
        format!("ResourcePattern(resourceType=GROUP, name={group}, patternType=LITERAL)"),
        "ResourcePattern(resourceType=TOPIC, name=app-, patternType=PREFIXED)".into(),
        entry("User:CN=alice", "READ", "ALLOW"),
        entry("User:CN=alice", "WRITE", "ALLOW"),
    ] {
        assert!(listed.contains(&needle), "{needle} not in:\n{listed}");
    }
    let prefixed = s.acls(&[
        "--list",
        "--topic",
        "app-",
        "--resource-pattern-type",
        "prefixed",
    ]);
    assert!(
        prefixed.contains("name=app-, patternType=PREFIXED"),
        "{prefixed}"
    );
    assert!(!prefixed.contains(topic.as_str()), "{prefixed}");
}

/// READ on the topic and the group: consumes and commits; WRITE under the
/// prefix, not on the topic.
fn alice_may_what_her_acls_say(s: &Secured, n: &Names) {
    let read = s.py("alice", "consume", &[&n.topic, &n.group, "10"]);
    assert_eq!(read, json!({"consumed": 10, "errors": [], "commit": null}));
    let app = s.py("alice", "produce", &[&n.app_topic, "5"]);
    assert_eq!(app, json!({"delivered": 5, "errors": []}));
    let denied = s.py("alice", "produce", &[&n.topic, "3"]);
    assert_eq!(denied["delivered"], 0, "{denied}");
    assert!(
        errors(&denied).contains(&"TOPIC_AUTHORIZATION_FAILED".into()),
        "{denied}"
    );
    let seen = s.py("alice", "metadata", &["-"]);
    assert!(seen["topics"].get(&n.topic).is_some(), "{seen}");
    assert_eq!(seen["topics"][&n.topic], Value::Null, "{seen}");
}

/// No ACL at all: refused, the topic hidden, nothing appended.
fn mallory_may_nothing(s: &Secured, n: &Names) {
    let topic = &n.topic;
    let refused = s.py("mallory", "consume", &[topic, &n.group_m, "10"]);
    assert_eq!(refused["consumed"], 0, "{refused}");
    // librdkafka reports whichever it meets first: FindCoordinator's
    // GROUP_AUTHORIZATION_FAILED or Metadata's TOPIC_AUTHORIZATION_FAILED.
    assert!(
        errors(&refused)
            .iter()
            .any(|e| e == "GROUP_AUTHORIZATION_FAILED" || e == "TOPIC_AUTHORIZATION_FAILED"),
        "{refused}"
    );
    let named = s.py("mallory", "metadata", &[topic]);
    assert_eq!(
        named["topics"][topic], "TOPIC_AUTHORIZATION_FAILED",
        "{named}"
    );
    let all = s.py("mallory", "metadata", &["-"]);
    assert!(all["topics"].get(topic).is_none(), "{all}");
    let produce = s.py("mallory", "produce", &[topic, "4"]);
    assert_eq!(produce["delivered"], 0, "{produce}");
    assert!(
        errors(&produce).contains(&"TOPIC_AUTHORIZATION_FAILED".into()),
        "{produce}"
    );
    // Neither denied produce (alice's, mallory's) appended anything.
    assert_eq!(s.py("admin", "watermarks", &[topic]), json!({"high": 10}));
    inter_broker_apis_answer_cluster_authorization_failed(s, topic);
}

/// A Kafka 3.9 codec request frame (size prefix, header, body).
fn frame39<T: kafka_protocol_39::protocol::Encodable>(key: i16, version: i16, body: &T) -> String {
    use kafka_protocol_39::protocol::Encodable;
    let api = kafka_protocol_39::messages::ApiKey::try_from(key).unwrap();
    let mut header = kafka_protocol_39::messages::RequestHeader::default();
    header.request_api_key = key;
    header.request_api_version = version;
    header.correlation_id = i32::from(key);
    header.client_id = Some(kafka_protocol_39::protocol::StrBytes::from_static_str(
        "mallory",
    ));
    let mut buf = bytes::BytesMut::new();
    header
        .encode(&mut buf, api.request_header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let mut frame = (buf.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    frame.iter().map(|b| format!("{b:02x}")).collect()
}

/// The body of a response frame with a flexible (v1) header.
fn flexible_body(hex: &Value) -> bytes::Bytes {
    let hex = hex.as_str().expect("an answer, not a close");
    let raw: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    // correlation id, then no tagged fields.
    assert_eq!(raw[4], 0, "response header tags");
    bytes::Bytes::from(raw[5..].to_vec())
}

/// Kafka's `authorizeClusterOperation`: inter-broker requests from a
/// principal without CLUSTER_ACTION are answered CLUSTER_AUTHORIZATION_FAILED
/// (each API's `getErrorResponse`) on a connection that stays open.
fn inter_broker_apis_answer_cluster_authorization_failed(s: &Secured, topic: &str) {
    use kafka_protocol_39::messages::{
        allocate_producer_ids_request::AllocateProducerIdsRequest as Allocate,
        allocate_producer_ids_response::AllocateProducerIdsResponse,
        update_metadata_request::UpdateMetadataRequest,
        update_metadata_response::UpdateMetadataResponse,
        write_txn_markers_request::{
            WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest,
        },
        write_txn_markers_response::WriteTxnMarkersResponse,
        BrokerId, ProducerId, TopicName,
    };
    use kafka_protocol_39::protocol::{Decodable, StrBytes};
    const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
    let allocate = frame39(67, 0, &Allocate::default().with_broker_id(BrokerId(1)));
    let update = frame39(
        6,
        7,
        &UpdateMetadataRequest::default().with_controller_id(BrokerId(1)),
    );
    let markers =
        WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
            .with_producer_id(ProducerId(1))
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partition_indexes(vec![0])])]);
    let markers = frame39(27, 1, &markers);
    let r = s.py("mallory", "raw", &[&allocate, &update, &markers]);
    let answers = r["responses"].as_array().unwrap();
    assert_eq!(answers.len(), 3, "{r}");
    let a = AllocateProducerIdsResponse::decode(&mut flexible_body(&answers[0]), 0).unwrap();
    assert_eq!(
        a.error_code, CLUSTER_AUTHORIZATION_FAILED,
        "AllocateProducerIds: {a:?}"
    );
    let u = UpdateMetadataResponse::decode(&mut flexible_body(&answers[1]), 7).unwrap();
    assert_eq!(
        u.error_code, CLUSTER_AUTHORIZATION_FAILED,
        "UpdateMetadata: {u:?}"
    );
    let w = WriteTxnMarkersResponse::decode(&mut flexible_body(&answers[2]), 1).unwrap();
    let codes: Vec<i16> = w.markers[0].topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(
        codes,
        [CLUSTER_AUTHORIZATION_FAILED],
        "WriteTxnMarkers: {w:?}"
    );
}

/// An ACL written to ZooKeeper by Kafka's own AclAuthorizer (the tool)
/// reaches the running broker through the change notification; a removal
/// through the broker is listed and enforced at once.
fn changes_apply_to_the_running_broker(s: &Secured, n: &Names) {
    let topic = &n.topic;
    s.acls_in_zookeeper(&[
        "--add",
        "--allow-principal",
        "User:CN=mallory",
        "--operation",
        "Read",
        "--topic",
        topic,
        "--group",
        &n.group_m,
    ]);
    let bound = Duration::from_secs(30);
    let started = Instant::now();
    let granted = loop {
        let r = s.py("mallory", "consume", &[topic, &n.group_m, "10"]);
        if r["consumed"] == 10 || started.elapsed() > bound {
            break r;
        }
    };
    assert_eq!(
        granted,
        json!({"consumed": 10, "errors": [], "commit": null})
    );
    let listed = s.acls(&["--list", "--topic", topic]);
    assert!(
        listed.contains(&entry("User:CN=mallory", "READ", "ALLOW")),
        "{listed}"
    );

    s.acls(&[
        "--remove",
        "--force",
        "--allow-principal",
        "User:CN=alice",
        "--operation",
        "Read",
        "--topic",
        topic,
    ]);
    let listed = s.acls(&["--list", "--topic", topic]);
    assert!(
        !listed.contains(&entry("User:CN=alice", "READ", "ALLOW")),
        "{listed}"
    );
    assert!(
        listed.contains(&entry("User:CN=mallory", "READ", "ALLOW")),
        "{listed}"
    );
    let named = s.py("alice", "metadata", &[topic]);
    assert_eq!(
        named["topics"][topic], "TOPIC_AUTHORIZATION_FAILED",
        "{named}"
    );
}

/// The certificate `CN=alice,OU=eng,O=Acme` through [`MAPPING_RULES`]:
/// the authorizer sees `User:alice` (Kafka's `DefaultKafkaPrincipalBuilder`
/// applies `SslPrincipalMapper` to the RFC 2253 subject), so an ACL for
/// `User:alice` lets it write and one for its unmapped DN does not.
fn mapped_principal_is_what_acls_name(s: &Secured, n: &Names) {
    s.acls(&[
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        &n.mapped_topic,
    ]);
    s.acls(&[
        "--add",
        "--allow-principal",
        "User:CN=alice,OU=eng,O=Acme",
        "--operation",
        "Write",
        "--topic",
        &n.topic,
    ]);
    let allowed = s.py(MAPPED_CERT, "produce", &[&n.mapped_topic, "5"]);
    assert_eq!(allowed, json!({"delivered": 5, "errors": []}));
    let denied = s.py(MAPPED_CERT, "produce", &[&n.topic, "3"]);
    assert_eq!(denied["delivered"], 0, "{denied}");
    assert!(
        errors(&denied).contains(&"TOPIC_AUTHORIZATION_FAILED".into()),
        "{denied}"
    );
    // Nor may it write where `User:CN=alice` (the certificate with the same
    // CN and no OU, which DEFAULT leaves as its DN) may: under `app-`.
    let prefixed = s.py(MAPPED_CERT, "produce", &[&n.app_topic, "2"]);
    assert_eq!(prefixed["delivered"], 0, "{prefixed}");
    assert!(
        errors(&prefixed).contains(&"TOPIC_AUTHORIZATION_FAILED".into()),
        "{prefixed}"
    );
    assert_eq!(
        s.py("admin", "watermarks", &[&n.mapped_topic]),
        json!({"high": 5})
    );
    assert_eq!(
        s.py("admin", "watermarks", &[&n.topic]),
        json!({"high": 10})
    );
}
