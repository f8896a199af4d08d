//! Protocol hot spots, ns per op: frame split + request header decode,
//! ApiVersions encode, Metadata (100 topics × 10 partitions) build + encode.
//!
//! cargo bench --bench protocol -- --warm-up-time 1 --measurement-time 3
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::hint::black_box;

use bytes::{BufMut, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion};
use kafka_protocol::messages::metadata_request::MetadataRequest;
use shardlog::metadata::answers::{api_versions_response, metadata_response};
use shardlog::metadata::{BrokerEndpoint, PartitionState, Snapshot, TopicState};
use shardlog::protocol::encode::encode;
use shardlog::protocol::frame::take_frame;
use shardlog::protocol::header::decode_request_header;
use shardlog::protocol::ErrorCode;
use shardlog::server::dispatch::api_table;
use shardlog::types::{BrokerId, LeaderEpoch};

/// librdkafka 2.0.2's Metadata v4 "all topics" request (tests/golden).
const METADATA_V4: &str = "0003000400000003000772646b61666b61ffffffff01";

fn frame_bytes() -> BytesMut {
    let body: Vec<u8> = (0..METADATA_V4.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&METADATA_V4[i..i + 2], 16).unwrap())
        .collect();
    let mut buf = BytesMut::new();
    buf.put_i32(body.len() as i32);
    buf.extend_from_slice(&body);
    buf
}

fn snapshot(topics: usize, partitions: i32) -> Snapshot {
    let broker = BrokerEndpoint {
        broker_id: BrokerId(0),
        host: "127.0.0.1".into(),
        port: 9092,
        rack: None,
    };
    (0..topics).fold(Snapshot::single_broker("bench-cluster", broker), |s, t| {
        s.with_topic(TopicState {
            configs: Default::default(),
            name: format!("topic-{t:03}").into(),
            topic_id: uuid::Uuid::from_u128(t as u128 + 1),
            is_internal: false,
            partitions: (0..partitions)
                .map(|p| PartitionState {
                    partition: p,
                    leader: BrokerId(0),
                    leader_epoch: LeaderEpoch(3),
                    replicas: vec![BrokerId(0)],
                    isr: vec![BrokerId(0)],
                    offline_replicas: vec![],
                })
                .collect(),
        })
    })
}

fn benches(c: &mut Criterion) {
    let template = frame_bytes();
    c.bench_function("frame_and_header_decode", |b| {
        b.iter(|| {
            let mut buf = template.clone();
            let mut frame = take_frame(&mut buf, 1 << 20).unwrap().unwrap();
            black_box(decode_request_header(&mut frame).unwrap());
        })
    });

    let table = api_table();
    c.bench_function("api_versions_v3_encode", |b| {
        b.iter(|| {
            let resp = api_versions_response(black_box(&table), ErrorCode::NONE);
            black_box(encode(&resp, 3).unwrap());
        })
    });

    let snap = snapshot(100, 10);
    let mut all = MetadataRequest::default();
    all.topics = None;
    c.bench_function("metadata_v12_100x10_build_and_encode", |b| {
        b.iter(|| {
            let answer = metadata_response(black_box(&snap), &all, 12, "PLAINTEXT", true);
            black_box(encode(&answer.response, 12).unwrap());
        })
    });
    let answer = metadata_response(&snap, &all, 12, "PLAINTEXT", true);
    c.bench_function("metadata_v12_100x10_encode_only", |b| {
        b.iter(|| black_box(encode(black_box(&answer.response), 12).unwrap()))
    });
}

criterion_group!(protocol, benches);
criterion_main!(protocol);
