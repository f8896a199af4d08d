//! An ACL change made through one broker reaches every broker of the
//! mixed cluster of tests/sasl_clients.rs (Kafka 3.9 as broker 1, shardlog
//! as 2 and 3, Kafka's AclAuthorizer on each): the broker that handles
//! CreateAcls / DeleteAcls writes `/kafka-acl/Topic/<t>` and a
//! `/kafka-acl-changes/acl_changes_<seq>` notification
//! (`LiteralAclChangeStore`), which the other brokers' authorizers read
//! (`ZkNodeChangeNotificationListener`) to refresh that resource's ACLs.
//!
//! The probe: DescribeConfigs of topic `kafka-led` as `User:alice`
//! (SCRAM-SHA-512 over each broker's SASL_SSL listener,
//! tests/py/scram_raw.py), which every broker answers itself with
//! DESCRIBE_CONFIGS on the topic checked (`ConfigHelper`): refused on all
//! three, allowed on all three after `kafka-acls --add` through broker 3,
//! refused again on all three after `kafka-acls --remove` through broker 2.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::mixed_admin;
use crate::common::cluster::{children, read};
use crate::common::replica_cluster::ReplCluster;
use crate::common::tls::Tls;
use crate::common::{request_frame, run_py_script};

const NONE: i16 = 0;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const TOPIC: &str = "kafka-led";
const CHANGES: &str = "/kafka-acl-changes";

/// DescribeConfigs v4 (flexible: response header v1) of the topic's
/// `cleanup.policy`, as a hex frame.
fn describe_frame() -> String {
    let req =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str(TOPIC))
            .with_configuration_keys(Some(vec![StrBytes::from_static_str("cleanup.policy")]))]);
    let frame = request_frame(ApiKey::DescribeConfigs, 4, 7, &req);
    frame.iter().map(|b| format!("{b:02x}")).collect()
}

/// Each broker's answer to alice's DescribeConfigs: its id → the topic's
/// error code.
fn codes(tls: &Tls, ports: &BTreeMap<i32, u16>) -> BTreeMap<i32, i16> {
    let addresses: Vec<String> = ports.values().map(|p| format!("127.0.0.1:{p}")).collect();
    let r = run_py_script(
        &[],
        "scram_raw.py",
        &[
            tls.ca_pem().display().to_string(),
            "alice".into(),
            "alice-secret".into(),
            addresses.join(","),
            describe_frame(),
        ],
    );
    assert_eq!(r["errors"], serde_json::json!({}), "{r}");
    ports
        .iter()
        .map(|(&id, port)| {
            let hex = r["responses"][format!("127.0.0.1:{port}")][0]
                .as_str()
                .unwrap_or_else(|| panic!("broker {id} closed instead of answering: {r}"));
            let raw: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            // Correlation id, then no header tags.
            assert_eq!(raw[4], 0, "response header tags");
            let mut body = Bytes::from(raw[5..].to_vec());
            let d = DescribeConfigsResponse::decode(&mut body, 4).unwrap();
            (id, d.results[0].error_code)
        })
        .collect()
}

/// Polls [`codes`] until every broker answers `want` (the notification is
/// asynchronous; a bounded wait, not a timed assertion).
fn until_every_broker(tls: &Tls, ports: &BTreeMap<i32, u16>, want: i16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = codes(tls, ports);
        if got.values().all(|&c| c == want) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {got:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The notifications written since `before` (sorted names): exactly one,
/// naming the topic.
fn one_new_notification(c: &ReplCluster, before: &[String], what: &str) {
    let zk = c.zk.address();
    let mut now = children(&zk, CHANGES);
    now.retain(|n| !before.contains(n));
    assert_eq!(now.len(), 1, "{what}: new {CHANGES} children {now:?}");
    assert!(now[0].starts_with("acl_changes_"), "{what}: {now:?}");
    let path = format!("{CHANGES}/{}", now[0]);
    let (data, _) = read(&zk, &[&path])[&path]
        .clone()
        .expect("the notification");
    assert!(data.contains(TOPIC), "{what}: {path} = {data:?}");
}

/// `kafka-acls --add` through broker 3, `--remove` through broker 2;
/// every broker follows each change.
pub fn reach_every_broker(c: &mut ReplCluster, tls: &Tls, ports: &BTreeMap<i32, u16>) {
    let want_all = |code: i16| ports.keys().map(|&id| (id, code)).collect();
    let refused: BTreeMap<i32, i16> = want_all(TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(codes(tls, ports), refused, "before the ACL");
    let acl = [
        "--allow-principal",
        "User:alice",
        "--operation",
        "DescribeConfigs",
        "--topic",
        TOPIC,
    ];
    let zk = c.zk.address();
    let before = children(&zk, CHANGES);
    mixed_admin(
        c,
        3,
        "kafka.admin.AclCommand",
        &[&["--add"], &acl[..]].concat(),
    );
    one_new_notification(c, &before, "the ACL added through broker 3");
    until_every_broker(tls, ports, NONE, "the ACL added through broker 3");
    let before = children(&zk, CHANGES);
    mixed_admin(
        c,
        2,
        "kafka.admin.AclCommand",
        &[&["--remove", "--force"], &acl[..]].concat(),
    );
    one_new_notification(c, &before, "the ACL removed through broker 2");
    until_every_broker(
        tls,
        ports,
        TOPIC_AUTHORIZATION_FAILED,
        "the ACL removed through broker 2",
    );
}
