//! UpdateMetadata (key 6) from a ZooKeeper-mode controller, seen by real
//! clients: one shardlog broker is told about a 3-broker cluster over a raw
//! socket (Kafka 3.9's codec, kafka-protocol 0.15.1), then confluent-kafka's
//! AdminClient (Metadata, DescribeCluster) and kcat -L must report it. The
//! epoch fences, old versions, a malformed frame, and the controller →
//! broker channel (`controller::channel`) driving a real broker.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use common::{executor, Broker};
use kafka_protocol_39::messages::update_metadata_request::UpdateMetadataRequest;
use kafka_protocol_39::messages::update_metadata_response::UpdateMetadataResponse;
use kafka_protocol_39::messages::{RequestHeader, ResponseHeader};
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};
use shardlog::controller::channel::{
    update_metadata_v8, BrokerAddress, ChannelConfig, ControllerChannel,
};
use shardlog::metadata::update_metadata::{
    AnnouncedPartition, BrokerListener, LiveBroker, UpdateMetadata, PLAINTEXT,
};
use shardlog::protocol::ErrorCode;
use shardlog::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch};

const TOPIC: &str = "announced";
const TOPIC_ID: u128 = 0x5eed_0000_0000_0000_0000_0000_0000_0001;

fn live(id: i32, host: &str, port: u16) -> LiveBroker {
    LiveBroker {
        id: BrokerId(id),
        endpoints: vec![BrokerListener {
            listener: "PLAINTEXT".into(),
            host: host.into(),
            port: i32::from(port),
            security_protocol: PLAINTEXT,
        }],
        rack: Some(format!("rack-{id}")),
    }
}

/// Brokers 0, 1 and 2 at 127.0.0.1, .2 and .3 (all reach the one real
/// broker, which listens on every address of `lo`: librdkafka sends
/// DescribeCluster to the controller), controller 2, one partition of
/// TOPIC led by broker 0.
fn cluster(broker: &Broker, controller_id: i32, controller_epoch: i32) -> UpdateMetadata {
    update_metadata_v8(
        BrokerId(controller_id),
        ControllerEpoch(controller_epoch),
        -1,
        &[
            live(0, &broker.host, broker.port),
            live(1, "127.0.0.2", broker.port),
            live(2, "127.0.0.3", broker.port),
        ],
        &[AnnouncedPartition {
            topic: TOPIC.into(),
            partition: 0,
            controller_epoch: ControllerEpoch(controller_epoch),
            leader: BrokerId(0),
            leader_epoch: LeaderEpoch(3),
            isr: vec![BrokerId(0), BrokerId(1)],
            zk_version: PartitionEpoch(4),
            replicas: vec![BrokerId(0), BrokerId(1), BrokerId(2)],
            offline_replicas: vec![BrokerId(2)],
        }],
        &[(TOPIC.into(), uuid::Uuid::from_u128(TOPIC_ID))],
    )
}

/// A v0–v4 request carries ungrouped partition states (topic inline), v0
/// brokers a single host/port.
fn at_version(mut req: UpdateMetadataRequest, version: i16) -> UpdateMetadataRequest {
    if version <= 4 {
        req.ungrouped_partition_states = req
            .topic_states
            .drain(..)
            .flat_map(|t| {
                let name = t.topic_name.clone();
                t.partition_states
                    .into_iter()
                    .map(move |p| p.with_topic_name(name.clone()))
            })
            .collect();
    }
    if version == 0 {
        for b in &mut req.live_brokers {
            b.v0_host = b.endpoints[0].host.clone();
            b.v0_port = b.endpoints[0].port;
        }
    }
    req
}

fn frame(version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(6)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("2")));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, if version >= 6 { 2 } else { 1 })
        .unwrap();
    buf.put_slice(body);
    let mut out = Vec::with_capacity(buf.len() + 4);
    out.put_i32(buf.len() as i32);
    out.extend_from_slice(&buf);
    out
}

/// Send UpdateMetadata at `version` on a fresh connection; its error code.
fn send(broker: &Broker, req: &UpdateMetadata, version: i16) -> ErrorCode {
    let wire = at_version(req.to_request(), version);
    let mut body = BytesMut::new();
    wire.encode(&mut body, version).unwrap();
    let mut stream = broker.connect();
    let mut resp = common::round_trip(&mut stream, &frame(version, 77, &body));
    let header = ResponseHeader::decode(&mut resp, if version >= 6 { 1 } else { 0 }).unwrap();
    assert_eq!(header.correlation_id, 77);
    let answer = UpdateMetadataResponse::decode(&mut resp, version).unwrap();
    assert!(resp.is_empty(), "v{version}: trailing bytes");
    ErrorCode(answer.error_code)
}

/// Brokers as (id, port, rack), and the controller id.
type View = (Vec<(i32, i32, Option<String>)>, i32);

/// (brokers as (id, port, rack), controller id) from Metadata, asked on
/// several connections (they land on different shards).
fn metadata_view(broker: &Broker) -> Vec<View> {
    (0..4)
        .map(|_| {
            let md = common::Conn::open(broker).metadata(None);
            let brokers = md
                .brokers
                .iter()
                .map(|b| (b.node_id.0, b.port, b.rack.as_ref().map(|r| r.to_string())))
                .collect();
            (brokers, md.controller_id.0)
        })
        .collect()
}

const ADMIN: &str = r#"
import json, os
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": os.environ["BOOTSTRAP"]})
md = a.list_topics(timeout=20)
t = md.topics["announced"]
p = t.partitions[0]
cluster = a.describe_cluster(request_timeout=20).result()
print(json.dumps({
    "brokers": sorted([b.id, b.host, b.port] for b in md.brokers.values()),
    "controller": md.controller_id,
    "partition": [p.leader, p.replicas, p.isrs],
    "dc_controller": cluster.controller.id,
    "dc_nodes": sorted([n.id, n.port, n.rack] for n in cluster.nodes),
    "dc_cluster_id": cluster.cluster_id,
}))
"#;

#[test]
fn update_metadata_reaches_metadata_describe_cluster_and_kcat() {
    let p = free_port();
    let broker = Broker::start_with(&[
        &format!("listeners=PLAINTEXT://0.0.0.0:{p}"),
        &format!("advertised.listeners=PLAINTEXT://127.0.0.1:{p}"),
    ]);
    let port = i32::from(broker.port);
    assert_eq!(port, i32::from(p));
    assert_eq!(send(&broker, &cluster(&broker, 2, 5), 8), ErrorCode::NONE);
    let racks = |id: i32| Some(format!("rack-{id}"));
    let expected = vec![
        (0, port, racks(0)),
        (1, port, racks(1)),
        (2, port, racks(2)),
    ];
    for view in metadata_view(&broker) {
        assert_eq!(view, (expected.clone(), 2));
    }

    let out = common::run_python(&broker, ADMIN);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["controller"], 2, "{v}");
    assert_eq!(
        v["brokers"],
        serde_json::json!([
            [0, broker.host, port],
            [1, "127.0.0.2", port],
            [2, "127.0.0.3", port]
        ])
    );
    assert_eq!(v["partition"], serde_json::json!([0, [0, 1, 2], [0, 1]]));
    assert_eq!(v["dc_controller"], 2);
    assert_eq!(
        v["dc_nodes"],
        serde_json::json!([
            [0, port, "rack-0"],
            [1, port, "rack-1"],
            [2, port, "rack-2"]
        ])
    );
    assert_eq!(v["dc_cluster_id"], broker.cluster_id.as_str());

    let kcat = Command::new(common::kcat())
        .args(["-L", "-b", &broker.bootstrap(), "-t", TOPIC, "-m", "15"])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&kcat.stdout);
    assert!(kcat.status.success(), "{listing}");
    assert!(listing.contains(" 3 brokers:"), "{listing}");
    assert!(
        listing.contains(&format!("broker 2 at 127.0.0.3:{port} (controller)")),
        "{listing}"
    );
    assert!(
        listing.contains("partition 0, leader 0, replicas: 0,1,2, isrs: 0,1"),
        "{listing}"
    );

    // An older controller epoch is fenced and changes nothing.
    assert_eq!(
        send(&broker, &cluster(&broker, 1, 4), 8),
        ErrorCode::STALE_CONTROLLER_EPOCH
    );
    // A broker epoch below this broker's own (the czxid of its
    // registration, > 0 in any store) is fenced too.
    let mut stale = cluster(&broker, 1, 5);
    stale.broker_epoch = 0;
    assert_eq!(send(&broker, &stale, 8), ErrorCode::STALE_BROKER_EPOCH);
    for view in metadata_view(&broker) {
        assert_eq!(view.1, 2, "unchanged after fenced requests");
    }

    // Old versions are accepted: v5 (broker epoch, grouped), then v0.
    assert_eq!(send(&broker, &cluster(&broker, 1, 5), 5), ErrorCode::NONE);
    assert!(metadata_view(&broker).iter().all(|v| v.1 == 1));
    let mut two = cluster(&broker, 0, 6);
    two.live_brokers.truncate(2);
    assert_eq!(send(&broker, &two, 0), ErrorCode::NONE);
    for (brokers, controller) in metadata_view(&broker) {
        assert_eq!(controller, 0);
        // v0 has no racks.
        assert_eq!(brokers, vec![(0, port, None), (1, port, None)]);
    }

    // A malformed UpdateMetadata closes that connection; the broker serves on.
    let mut bad = broker.connect();
    bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    bad.write_all(&frame(8, 9, &[0, 0, 0, 1, 0, 0xff, 0xff]))
        .unwrap();
    assert!(common::read_frame(&mut bad).is_none(), "connection closed");
    assert_eq!(metadata_view(&broker)[0].1, 0);
    let (_, logs) = broker.stop_collect();
    assert!(
        logs.iter()
            .any(|l| l.contains("WARN") && l.contains("UpdateMetadata")),
        "a warning names the request: {logs:#?}"
    );
}

fn free_port() -> u16 {
    common::ports::reserved_port()
}

#[test]
fn the_channel_sends_in_order_and_retries_until_the_broker_listens() {
    let broker = Broker::start();
    let (host, port) = (broker.host.clone(), broker.port);
    let later_port = free_port();
    let reqs: Vec<UpdateMetadata> = [(1, 10), (2, 10), (1, 9)]
        .into_iter()
        .map(|(controller, epoch)| {
            let mut r = cluster(&broker, controller, epoch);
            r.live_brokers.truncate(1);
            r
        })
        .collect();
    let answers = executor::spawn(move || {
        Box::pin(async move {
            let channel = ControllerChannel::new(BrokerId(2), ChannelConfig::default());
            channel.add_broker(BrokerId(0), 1, BrokerAddress { host, port });
            // Queued in call order, sent one at a time: the third (older
            // epoch) is fenced only if the first two arrived before it.
            let sent: Vec<_> = reqs
                .iter()
                .map(|r| channel.send_update_metadata(BrokerId(0), r))
                .collect();
            let mut answers = Vec::new();
            for s in sent {
                answers.push(s.await);
            }
            answers
        })
    })
    .join()
    .unwrap();
    assert_eq!(
        answers,
        vec![
            Ok(ErrorCode::NONE),
            Ok(ErrorCode::NONE),
            Ok(ErrorCode::STALE_CONTROLLER_EPOCH)
        ]
    );
    assert!(metadata_view(&broker).iter().all(|v| v.1 == 2));

    // Retry: nobody listens on `later_port` yet.
    let req = cluster(&broker, 1, 1);
    let pending = executor::spawn(move || {
        Box::pin(async move {
            let config = ChannelConfig {
                retry_backoff: Duration::from_millis(100),
                socket_timeout: Duration::from_secs(10),
                tls: shardlog::io::broker_stream::BrokerLink::default(),
            };
            let channel = ControllerChannel::new(BrokerId(1), config);
            channel.add_broker(
                BrokerId(7),
                1,
                BrokerAddress {
                    host: "127.0.0.1".into(),
                    port: later_port,
                },
            );
            channel.send_update_metadata(BrokerId(7), &req).await
        })
    });
    std::thread::sleep(Duration::from_millis(800));
    let late = Broker::start_with(&[&format!("listeners=PLAINTEXT://127.0.0.1:{later_port}")]);
    assert_eq!(pending.join().unwrap(), Ok(ErrorCode::NONE));
    let view = metadata_view(&late);
    assert!(view.iter().all(|v| v.1 == 1 && v.0.len() == 3), "{view:?}");
}
