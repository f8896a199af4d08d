//! Pipelining: many requests written on one connection without waiting get
//! their responses in request order, although they finish out of order
//! (Metadata for an unknown topic waits for a mesh round trip to the
//! control shard's auto-create hook; ApiVersions answers at once).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::Write;

use bytes::Buf;
use common::{read_frame, request_frame, Broker};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

const REQUESTS: i32 = 1000;

#[derive(Clone, Copy, Debug)]
enum Kind {
    ApiVersions,
    MetadataAll,
    MetadataUnknownTopic,
}

fn kind_of(correlation_id: i32) -> Kind {
    match correlation_id % 3 {
        0 => Kind::ApiVersions,
        1 => Kind::MetadataAll,
        _ => Kind::MetadataUnknownTopic,
    }
}

fn frame_for(correlation_id: i32) -> Vec<u8> {
    match kind_of(correlation_id) {
        Kind::ApiVersions => request_frame(
            ApiKey::ApiVersions,
            3,
            correlation_id,
            &ApiVersionsRequest::default(),
        ),
        Kind::MetadataAll => {
            let mut req = MetadataRequest::default();
            req.topics = None;
            request_frame(ApiKey::Metadata, 12, correlation_id, &req)
        }
        Kind::MetadataUnknownTopic => {
            let mut topic = MetadataRequestTopic::default();
            topic.name = Some(TopicName(StrBytes::from_string(format!(
                "missing-{correlation_id}"
            ))));
            let mut req = MetadataRequest::default();
            req.topics = Some(vec![topic]);
            req.allow_auto_topic_creation = true;
            request_frame(ApiKey::Metadata, 9, correlation_id, &req)
        }
    }
}

#[test]
fn a_thousand_pipelined_requests_get_responses_in_request_order() {
    // Unknown topics stay unknown (auto.create.topics.enable defaults to
    // true, which would create them).
    let broker = Broker::start_with(&["auto.create.topics.enable=false"]);
    let mut stream = broker.connect();
    let mut writer = stream.try_clone().unwrap();
    // Write everything without reading, from another thread so that
    // neither side's socket buffers can stall the exchange.
    let write_all = std::thread::spawn(move || {
        let mut all = Vec::new();
        for id in 0..REQUESTS {
            all.extend_from_slice(&frame_for(id));
        }
        writer.write_all(&all).unwrap();
    });
    for expected in 0..REQUESTS {
        let mut resp = read_frame(&mut stream)
            .unwrap_or_else(|| panic!("connection closed before response {expected}"));
        let kind = kind_of(expected);
        let header_version = match kind {
            Kind::ApiVersions => 0,
            Kind::MetadataAll | Kind::MetadataUnknownTopic => 1,
        };
        let header = ResponseHeader::decode(&mut resp, header_version).unwrap();
        assert_eq!(header.correlation_id, expected, "responses out of order");
        match kind {
            Kind::ApiVersions => {
                let r = ApiVersionsResponse::decode(&mut resp, 3).unwrap();
                assert_eq!(r.error_code, 0);
            }
            Kind::MetadataAll => {
                let r = MetadataResponse::decode(&mut resp, 12).unwrap();
                assert_eq!(r.brokers.len(), 1);
            }
            Kind::MetadataUnknownTopic => {
                let r = MetadataResponse::decode(&mut resp, 9).unwrap();
                let topic = &r.topics[0];
                assert_eq!(
                    topic.name.as_ref().unwrap().0.as_str(),
                    format!("missing-{expected}")
                );
                assert_eq!(topic.error_code, 3);
            }
        }
        assert!(
            !resp.has_remaining(),
            "trailing bytes in response {expected}"
        );
    }
    write_all.join().unwrap();
}

#[test]
fn pipelined_connections_on_every_shard_are_served_concurrently() {
    // Connections land on shards by the kernel's SO_REUSEPORT hash; with
    // several at once both shards serve some. Each must see its own
    // responses, in order.
    let broker = Broker::start();
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let mut stream = broker.connect();
            std::thread::spawn(move || {
                let mut all = Vec::new();
                for id in 0..100 {
                    all.extend_from_slice(&frame_for(c * 1000 + id));
                }
                stream.write_all(&all).unwrap();
                for id in 0..100 {
                    let mut resp = read_frame(&mut stream).expect("response");
                    let header = ResponseHeader::decode(&mut resp, 0).unwrap();
                    assert_eq!(header.correlation_id, c * 1000 + id);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
}
