//! Golden bytes: ApiVersions and Metadata requests exactly as librdkafka
//! 2.0.2 (kcat), confluent-kafka 2.16 and kafka-python 3.0 sent them
//! (captured with tests/golden/capture.py), decoded by the crate, sent to
//! the broker, and our responses re-decoded by the crate.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{Read, Write};

use bytes::{Buf, BufMut, Bytes};
use common::{read_frame, Broker};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{decode_request_header_from_buffer, Decodable};

fn golden(name: &str) -> Bytes {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    let hex = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let hex = hex.trim();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    Bytes::from(bytes)
}

/// What a captured Metadata request asks for.
#[derive(Debug, Clone, Copy)]
enum Topics {
    BrokersOnly,
    All,
    One(&'static str),
}

const API_VERSIONS: &[(&str, i16, &str, &str)] = &[
    // (file, version, client_id, client_software_name (v3+))
    (
        "librdkafka-2.0.2.api_versions.v3.hex",
        3,
        "rdkafka",
        "librdkafka",
    ),
    (
        "confluent-kafka-2.16.api_versions.v3.hex",
        3,
        "rdkafka",
        "confluent-kafka-python",
    ),
    (
        "kafka-python-3.0.api_versions.v4.hex",
        4,
        "kafka-python-3.0.12",
        "kafka-python",
    ),
];

const METADATA: &[(&str, i16, Topics)] = &[
    (
        "librdkafka-2.0.2.metadata.v4.brokers_only.hex",
        4,
        Topics::BrokersOnly,
    ),
    (
        "librdkafka-2.0.2.metadata.v4.all_topics.hex",
        4,
        Topics::All,
    ),
    (
        "librdkafka-2.0.2.metadata.v4.one_topic.hex",
        4,
        Topics::One("golden-topic"),
    ),
    (
        "confluent-kafka-2.16.metadata.v13.brokers_only.hex",
        13,
        Topics::BrokersOnly,
    ),
    (
        "confluent-kafka-2.16.metadata.v13.all_topics.hex",
        13,
        Topics::All,
    ),
    (
        "confluent-kafka-2.16.metadata.v13.one_topic.hex",
        13,
        Topics::One("golden-topic"),
    ),
    (
        "kafka-python-3.0.metadata.v13.brokers_only.hex",
        13,
        Topics::BrokersOnly,
    ),
    (
        "kafka-python-3.0.metadata.v13.all_topics.hex",
        13,
        Topics::All,
    ),
];

fn decode_header(frame: &Bytes) -> (RequestHeader, Bytes) {
    let mut buf = frame.clone();
    let header = decode_request_header_from_buffer(&mut buf).expect("golden header");
    (header, buf)
}

/// Send a captured frame; return (response header, body) decoded at the
/// response header version for `api_key`/`version`.
fn exchange(
    broker: &Broker,
    frame: &Bytes,
    api_key: ApiKey,
    version: i16,
) -> (ResponseHeader, Bytes) {
    let mut stream = broker.connect();
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.put_i32(frame.len() as i32);
    out.extend_from_slice(frame);
    stream.write_all(&out).unwrap();
    let mut resp = read_frame(&mut stream).expect("response");
    let header_version = api_key.response_header_version(version);
    let header = ResponseHeader::decode(&mut resp, header_version).expect("response header");
    (header, resp)
}

#[test]
fn captured_api_versions_requests_decode_and_get_our_table() {
    let broker = Broker::start();
    for &(file, version, client_id, software) in API_VERSIONS {
        let frame = golden(file);
        let (header, mut body) = decode_header(&frame);
        assert_eq!(header.request_api_key, ApiKey::ApiVersions as i16, "{file}");
        assert_eq!(header.request_api_version, version, "{file}");
        assert_eq!(
            header.client_id.as_ref().map(|c| c.as_str()),
            Some(client_id),
            "{file}"
        );
        let request = ApiVersionsRequest::decode(&mut body, version).expect("golden body");
        assert_eq!(request.client_software_name.as_str(), software, "{file}");

        let (resp_header, mut resp) = exchange(&broker, &frame, ApiKey::ApiVersions, version);
        assert_eq!(resp_header.correlation_id, header.correlation_id, "{file}");
        let answer = ApiVersionsResponse::decode(&mut resp, version).expect("our response");
        assert!(!resp.has_remaining(), "{file}: trailing bytes");
        assert_eq!(answer.error_code, 0, "{file}");
        let range = |key: ApiKey| {
            answer
                .api_keys
                .iter()
                .find(|k| k.api_key == key as i16)
                .map(|k| (k.min_version, k.max_version))
        };
        assert_eq!(range(ApiKey::ApiVersions), Some((0, 4)), "{file}");
        assert_eq!(range(ApiKey::Metadata), Some((0, 13)), "{file}");
        // Default-valued tagged fields are left out (librdkafka 2.0.2);
        // FinalizedFeaturesEpoch is 0, as a Kafka 3.9 ZooKeeper-mode broker
        // sends it (Debian's kcat reads it: datapath_kcat).
        assert!(answer.supported_features.is_empty() && answer.finalized_features.is_empty());
        assert_eq!(answer.finalized_features_epoch, 0);
        assert!(answer.unknown_tagged_fields.is_empty());
    }
}

#[test]
fn captured_metadata_requests_decode_and_get_broker_and_cluster() {
    // The captured one-topic requests name a topic that must stay unknown
    // (auto.create.topics.enable defaults to true).
    let broker = Broker::start_with(&["auto.create.topics.enable=false"]);
    for &(file, version, topics) in METADATA {
        let frame = golden(file);
        let (header, mut body) = decode_header(&frame);
        assert_eq!(header.request_api_key, ApiKey::Metadata as i16, "{file}");
        assert_eq!(header.request_api_version, version, "{file}");
        let request = MetadataRequest::decode(&mut body, version).expect("golden body");
        let requested: Option<Vec<String>> = request.topics.as_ref().map(|ts| {
            ts.iter()
                .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
                .collect()
        });
        match topics {
            Topics::BrokersOnly => assert_eq!(requested, Some(vec![]), "{file}"),
            Topics::All => assert_eq!(requested, None, "{file}"),
            Topics::One(name) => assert_eq!(requested, Some(vec![name.to_string()]), "{file}"),
        }

        let (resp_header, mut resp) = exchange(&broker, &frame, ApiKey::Metadata, version);
        assert_eq!(resp_header.correlation_id, header.correlation_id, "{file}");
        let answer = MetadataResponse::decode(&mut resp, version).expect("our response");
        assert!(!resp.has_remaining(), "{file}: trailing bytes");
        assert_eq!(answer.brokers.len(), 1, "{file}");
        let b = &answer.brokers[0];
        assert_eq!(
            (b.node_id.0, b.host.as_str(), b.port),
            (broker.broker_id, "127.0.0.1", i32::from(broker.port))
        );
        assert_eq!(
            answer.cluster_id.as_ref().map(|c| c.as_str()),
            Some(broker.cluster_id.as_str())
        );
        assert_eq!(answer.controller_id.0, broker.broker_id, "{file}");
        match topics {
            Topics::BrokersOnly | Topics::All => assert!(answer.topics.is_empty(), "{file}"),
            Topics::One(name) => {
                assert_eq!(answer.topics.len(), 1, "{file}");
                let t = &answer.topics[0];
                assert_eq!(t.name.as_ref().map(|n| n.0.as_str()), Some(name));
                assert_eq!(t.error_code, 3, "{file}: UNKNOWN_TOPIC_OR_PARTITION");
            }
        }
    }
}

/// Header v2 (flexible) for an ApiVersions request at `version`, with a
/// body we do not claim to understand.
fn api_versions_frame(version: i16, correlation_id: i32) -> Vec<u8> {
    let mut f = Vec::new();
    f.put_i16(ApiKey::ApiVersions as i16);
    f.put_i16(version);
    f.put_i32(correlation_id);
    f.put_i16(4);
    f.extend_from_slice(b"test");
    f.put_u8(0); // header tagged fields
    f.extend_from_slice(&[0x05, b'f', b'u', b't', b'u', 0x02, b'9', 0x00]);
    let mut out = Vec::new();
    out.put_i32(f.len() as i32);
    out.extend_from_slice(&f);
    out
}

#[test]
fn api_versions_above_ours_gets_a_v0_unsupported_version_answer_then_v3_works() {
    let broker = Broker::start();
    let mut stream = broker.connect();
    stream.write_all(&api_versions_frame(9, 77)).unwrap();
    let mut resp = read_frame(&mut stream).expect("fallback response");
    let header = ResponseHeader::decode(&mut resp, 0).unwrap();
    assert_eq!(header.correlation_id, 77);
    let answer = ApiVersionsResponse::decode(&mut resp, 0).expect("v0 body");
    assert!(!resp.has_remaining());
    assert_eq!(answer.error_code, 35, "UNSUPPORTED_VERSION");
    let ours = answer
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::ApiVersions as i16)
        .unwrap();
    assert_eq!(ours.max_version, 4);
    // The connection stays usable: the client retries with a version we list.
    let frame = golden("librdkafka-2.0.2.api_versions.v3.hex");
    let mut out = Vec::new();
    out.put_i32(frame.len() as i32);
    out.extend_from_slice(&frame);
    stream.write_all(&out).unwrap();
    let mut resp = read_frame(&mut stream).expect("v3 response");
    let _ = ResponseHeader::decode(&mut resp, 0).unwrap();
    assert_eq!(
        ApiVersionsResponse::decode(&mut resp, 3)
            .unwrap()
            .error_code,
        0
    );
}

#[test]
fn unknown_api_keys_and_unsupported_versions_close_the_connection() {
    let broker = Broker::start();
    // (api key, version): Kafka closes the connection for both.
    for (api_key, version) in [
        (1000i16, 0i16),
        (ApiKey::Metadata as i16, 99),
        (ApiKey::Produce as i16, 9),
    ] {
        let mut stream = broker.connect();
        let mut f = Vec::new();
        f.put_i16(api_key);
        f.put_i16(version);
        f.put_i32(5);
        f.put_i16(-1);
        let mut out = Vec::new();
        out.put_i32(f.len() as i32);
        out.extend_from_slice(&f);
        stream.write_all(&out).unwrap();
        let mut rest = Vec::new();
        let n = stream.read_to_end(&mut rest).expect("closed, not reset");
        assert_eq!(
            n, 0,
            "key {api_key} v{version}: expected close without a response"
        );
    }
}

#[test]
fn every_api_versions_and_metadata_version_is_answered_and_decodes() {
    let broker = Broker::start();
    let mut stream = broker.connect();
    for version in 0..=4 {
        let frame = common::request_frame(
            ApiKey::ApiVersions,
            version,
            100 + i32::from(version),
            &ApiVersionsRequest::default(),
        );
        let mut resp = common::round_trip(&mut stream, &frame);
        let header = ResponseHeader::decode(&mut resp, 0).unwrap();
        assert_eq!(header.correlation_id, 100 + i32::from(version));
        let answer = ApiVersionsResponse::decode(&mut resp, version).expect("decodes");
        assert!(!resp.has_remaining(), "v{version}: trailing bytes");
        assert_eq!(answer.error_code, 0);
        let keys: Vec<i16> = answer.api_keys.iter().map(|k| k.api_key).collect();
        assert!(
            keys.contains(&(ApiKey::ApiVersions as i16))
                && keys.contains(&(ApiKey::Metadata as i16))
        );
    }
    for version in 0..=13 {
        let mut req = MetadataRequest::default();
        // v0 has no null list: empty means all topics there.
        req.topics = if version == 0 { Some(vec![]) } else { None };
        let frame =
            common::request_frame(ApiKey::Metadata, version, 200 + i32::from(version), &req);
        let mut resp = common::round_trip(&mut stream, &frame);
        let header =
            ResponseHeader::decode(&mut resp, ApiKey::Metadata.response_header_version(version))
                .unwrap();
        assert_eq!(header.correlation_id, 200 + i32::from(version));
        let answer = MetadataResponse::decode(&mut resp, version).expect("decodes");
        assert!(!resp.has_remaining(), "v{version}: trailing bytes");
        assert_eq!(answer.brokers[0].port, i32::from(broker.port), "v{version}");
    }
}
