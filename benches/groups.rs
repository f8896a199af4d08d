//! Group coordinator figures on a real broker over TCP (issue 21):
//!
//! - **rebalance**: a stable 50-member group is made to rebalance (every
//!   member rejoins at once, as after a heartbeat answered
//!   REBALANCE_IN_PROGRESS); the time from the first JoinGroup to the last
//!   SyncGroup answer, over 20 rounds (median, max).
//! - **commit**: OffsetCommit throughput (commits/s, acks=all on the
//!   offsets partition) from 8 connections in a closed loop, and side by
//!   side in the same run the same connections producing one 100-byte
//!   record per request at acks=all to a normal topic (requests/s): the
//!   ratio says what a commit costs over the plain append path.
//!
//! The broker is the release `shardlog` binary started here (2 shards), or
//! any broker at `GROUPS_BENCH_BOOTSTRAP=host:port` (e.g. Kafka 3.9 from
//! `perf/`).
//!
//! Run: `cargo bench --bench groups` (prints one line per figure).
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code: a failed unwrap is a failed run

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Broker, Conn};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::produce_request::{
    PartitionProduceData, ProduceRequest, TopicProduceData,
};
use kafka_protocol::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

const MEMBERS: usize = 50;
const ROUNDS: usize = 20;
const COMMIT_CONNS: usize = 8;
const RUN_FOR: Duration = Duration::from_secs(5);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// A JoinGroup whose subscription user data carries `round`: each round's
/// metadata differs from the last, so every member's join is a real rejoin
/// (as after a subscription change), not an answer from the current
/// generation.
fn join_req(group: &str, member: &str, round: u8) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from(vec![
                0, 0, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, round,
            ]))])
}

/// One member's round: join (with its id), then sync, again while the
/// group answers REBALANCE_IN_PROGRESS; returns the generation and whether
/// it led.
fn member_round(conn: &mut Conn, group: &str, member: &str, round: u8) -> (i32, bool) {
    loop {
        if let Some(done) = try_round(conn, group, member, round) {
            return done;
        }
    }
}

fn try_round(conn: &mut Conn, group: &str, member: &str, round: u8) -> Option<(i32, bool)> {
    let j = conn.call(7, &join_req(group, member, round));
    assert_eq!(j.error_code, 0, "join in round {round}: {j:?}");
    let leader = j.leader == j.member_id;
    let assignments = if leader {
        j.members
            .iter()
            .map(|m| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(m.member_id.clone())
                    .with_assignment(Bytes::from_static(b"a"))
            })
            .collect()
    } else {
        Vec::new()
    };
    let r = conn.call(
        5,
        &SyncGroupRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_generation_id(j.generation_id)
            .with_member_id(s(member))
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(j.protocol_name.clone())
            .with_assignments(assignments),
    );
    if r.error_code == 27 {
        return None;
    }
    assert_eq!(r.error_code, 0, "sync: {r:?}");
    Some((j.generation_id, leader))
}

fn heartbeat(conn: &mut Conn, group: &str, member: &str, generation: i32) -> i16 {
    let r = conn.call(
        4,
        &kafka_protocol::messages::heartbeat_request::HeartbeatRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_generation_id(generation)
            .with_member_id(s(member)),
    );
    r.error_code
}

/// Members heartbeat every 100 ms while idle and rejoin when told of a
/// rebalance (as real consumers do); the main thread starts a round by
/// telling every member to rejoin with new metadata and times it until the
/// last member reports its SyncGroup answer.
fn rebalance(bootstrap: &str) {
    use std::sync::mpsc;
    let group = format!("bench-rebalance-{}", std::process::id());
    let (done_tx, done_rx) = mpsc::channel::<u8>();
    let mut starts = Vec::new();
    let mut handles = Vec::new();
    for _ in 0..MEMBERS {
        let (start_tx, start_rx) = mpsc::channel::<Option<u8>>();
        starts.push(start_tx);
        let (done_tx, group, bootstrap) = (done_tx.clone(), group.clone(), bootstrap.to_owned());
        handles.push(std::thread::spawn(move || {
            let mut conn = Conn::open_addr(&bootstrap);
            // COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE / NOT_COORDINATOR
            // while a fresh broker loads its offsets partitions: retry.
            let first = loop {
                let r = conn.call(7, &join_req(&group, "", 0));
                if !matches!(r.error_code, 14..=16) {
                    break r;
                }
                std::thread::sleep(Duration::from_millis(200));
            };
            // MEMBER_ID_REQUIRED (79) gives the id.
            assert_eq!(first.error_code, 79, "{first:?}");
            let id = first.member_id.to_string();
            let mut round = 0u8;
            let (mut generation, _) = member_round(&mut conn, &group, &id, round);
            let _ = done_tx.send(round);
            loop {
                match start_rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(Some(r)) => {
                        round = r;
                        generation = member_round(&mut conn, &group, &id, round).0;
                        let _ = done_tx.send(round);
                    }
                    Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if heartbeat(&mut conn, &group, &id, generation) == 27 {
                            generation = member_round(&mut conn, &group, &id, round).0;
                        }
                    }
                }
            }
        }));
    }
    // Formation: every member reported once, then the group is stable.
    for _ in 0..MEMBERS {
        done_rx.recv().unwrap();
    }
    std::thread::sleep(Duration::from_secs(2));
    let mut times = Vec::new();
    for round in 1..=ROUNDS as u8 {
        let t0 = Instant::now();
        for tx in &starts {
            tx.send(Some(round)).unwrap();
        }
        let mut n = 0;
        while n < MEMBERS {
            if done_rx.recv().unwrap() == round {
                n += 1;
            }
        }
        times.push(t0.elapsed());
    }
    for tx in &starts {
        let _ = tx.send(None);
    }
    for h in handles {
        h.join().unwrap();
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "groups/rebalance_{MEMBERS}_members: median {:.1} ms, max {:.1} ms over {ROUNDS} rounds (every member rejoins with new metadata; first JoinGroup sent to the last SyncGroup answer)",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
}

/// Closed-loop requests from `COMMIT_CONNS` connections for `RUN_FOR`;
/// returns requests/s.
fn closed_loop(
    bootstrap: &str,
    make: impl Fn(usize, u64) -> Box<dyn FnOnce(&mut Conn)> + Send + Sync + 'static,
) -> f64 {
    let make = Arc::new(make);
    let start = Arc::new(Barrier::new(COMMIT_CONNS));
    let handles: Vec<_> = (0..COMMIT_CONNS)
        .map(|c| {
            let (make, start, bootstrap) = (make.clone(), start.clone(), bootstrap.to_owned());
            std::thread::spawn(move || {
                let mut conn = Conn::open_addr(&bootstrap);
                start.wait();
                let t0 = Instant::now();
                let mut n = 0u64;
                while t0.elapsed() < RUN_FOR {
                    make(c, n)(&mut conn);
                    n += 1;
                }
                n as f64 / t0.elapsed().as_secs_f64()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

fn one_record_batch() -> Bytes {
    let r = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: None,
        value: Some(Bytes::from(vec![b'x'; 100])),
        headers: Default::default(),
    };
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        [r].iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    buf.freeze()
}

fn commits(bootstrap: &str) {
    let mut admin = Conn::open_addr(bootstrap);
    let r = admin.call(
        4,
        &CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(s("bench-commit")))
                .with_num_partitions(COMMIT_CONNS as i32)
                .with_replication_factor(1)])
            .with_timeout_ms(30_000),
    );
    assert!(matches!(r.topics[0].error_code, 0 | 36), "{r:?}");
    let commit_rate = closed_loop(bootstrap, |c, n| {
        Box::new(move |conn: &mut Conn| {
            let r = conn.call(
                8,
                &OffsetCommitRequest::default()
                    .with_group_id(GroupId(s(&format!("bench-commit-{c}"))))
                    .with_generation_id_or_member_epoch(-1)
                    .with_member_id(s(""))
                    .with_topics(vec![OffsetCommitRequestTopic::default()
                        .with_name(TopicName(s("bench-commit")))
                        .with_partitions(vec![OffsetCommitRequestPartition::default()
                            .with_partition_index(c as i32)
                            .with_committed_offset(n as i64)
                            .with_committed_leader_epoch(-1)])]),
            );
            assert_eq!(r.topics[0].partitions[0].error_code, 0, "{r:?}");
        })
    });
    let batch = one_record_batch();
    let produce_rate = closed_loop(bootstrap, move |c, _| {
        let batch = batch.clone();
        Box::new(move |conn: &mut Conn| {
            let r = conn.call(
                9,
                &ProduceRequest::default()
                    .with_acks(-1)
                    .with_timeout_ms(30_000)
                    .with_topic_data(vec![TopicProduceData::default()
                        .with_name(TopicName(s("bench-commit")))
                        .with_partition_data(vec![PartitionProduceData::default()
                            .with_index(c as i32)
                            .with_records(Some(batch))])]),
            );
            assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
        })
    });
    println!(
        "groups/offset_commit_acks_all: {commit_rate:.0} commits/s; produce acks=all 1 record/request: {produce_rate:.0} requests/s; commit ÷ produce = {:.2} ({COMMIT_CONNS} connections, closed loop, {} s each)",
        commit_rate / produce_rate,
        RUN_FOR.as_secs()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this
    // binary without it: nothing to measure then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let external = std::env::var("GROUPS_BENCH_BOOTSTRAP").ok();
    let broker = external.is_none().then(|| {
        // The initial delay lets all 50 members form one generation; the
        // measured rounds rebalance a stable group (no initial delay then).
        Broker::start_with(&["group.initial.rebalance.delay.ms=1000", "num.partitions=1"])
    });
    let bootstrap = external.unwrap_or_else(|| broker.as_ref().unwrap().bootstrap());
    let mut conn = Conn::open_addr(&bootstrap);
    // Kafka answers COORDINATOR_NOT_AVAILABLE while it creates
    // __consumer_offsets: ask again.
    for attempt in 0.. {
        let r = conn.call(3, &FindCoordinatorRequest::default().with_key(s("x")));
        if r.error_code == 0 {
            break;
        }
        assert!(attempt < 120, "no coordinator: {r:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    rebalance(&bootstrap);
    commits(&bootstrap);
}
