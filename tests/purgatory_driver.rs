//! The purgatory driver inside a real glommio executor: waits complete on
//! the event they wait for and on their timeout. Outcomes are asserted, never
//! timings.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::rc::Rc;

use common::executor::run;
use shardlog::io::clock::{Clock, SystemClock};
use shardlog::protocol::ErrorCode;
use shardlog::purgatory::delayed_fetch::{
    DelayedFetch, FetchCompletion, FetchIsolation, FetchPartitionSpec,
};
use shardlog::purgatory::delayed_operation::{PurgatoryConfig, WatchChange};
use shardlog::purgatory::delayed_produce::{AppendResult, DelayedProduce};
use shardlog::purgatory::driver::PurgatoryDriver;
use shardlog::purgatory::notes::{AdvanceNotes, PartitionAdvanced};
use shardlog::purgatory::view::{LogOffsetMetadata, PartitionSnapshot};
use shardlog::types::{ShardId, TopicPartition};

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("orders", p)
}

fn driver() -> Rc<PurgatoryDriver> {
    let clock: Rc<dyn Clock> = Rc::new(SystemClock::new());
    PurgatoryDriver::new(clock, PurgatoryConfig::default())
}

fn produce(timeout_ms: i64, p: i32, last_offset: i64) -> DelayedProduce {
    DelayedProduce::new(
        timeout_ms,
        vec![(tp(p), AppendResult::Appended { last_offset })],
    )
}

#[test]
fn produce_wait_completes_when_hw_advances() {
    run(|| async {
        let d = driver();
        d.on_partition_advanced(&tp(0), PartitionSnapshot::leader_at(5, 0));
        let d2 = d.clone();
        // 60 s timeout: only the HW event can finish this wait in time.
        let waiter =
            glommio::spawn_local(
                async move { d2.wait_produce(produce(60_000, 0, 9), &[tp(0)]).await },
            );
        glommio::executor().yield_task_queue_now().await;
        assert_eq!(d.parked(), (1, 0));
        assert_eq!(d.drain_watch_changes(), vec![WatchChange::Watch(tp(0))]);
        d.on_partition_advanced(&tp(0), PartitionSnapshot::leader_at(10, 0));
        let out = waiter.await;
        assert!(!out.expired);
        assert_eq!(out.partitions, vec![(tp(0), ErrorCode(0))]);
        assert_eq!(d.parked(), (0, 0));
    });
}

#[test]
fn produce_wait_times_out_with_request_timed_out() {
    run(|| async {
        let d = driver();
        let out = d.wait_produce(produce(20, 0, 9), &[tp(0)]).await;
        assert!(out.expired);
        assert_eq!(out.partitions, vec![(tp(0), ErrorCode(7))]);
    });
}

#[test]
fn earlier_deadline_rearms_the_single_timer() {
    run(|| async {
        let d = driver();
        let d2 = d.clone();
        let long =
            glommio::spawn_local(
                async move { d2.wait_produce(produce(60_000, 1, 0), &[tp(1)]).await },
            );
        glommio::executor().yield_task_queue_now().await;
        // Parked after a 1-minute op: must still expire on its own deadline.
        let short = d.wait_produce(produce(15, 2, 0), &[tp(2)]).await;
        assert!(short.expired);
        assert_eq!(short.partitions, vec![(tp(2), ErrorCode(7))]);
        // Finish the long one by event, delivered as a cross-shard note.
        d.on_advance_notes(AdvanceNotes {
            to: ShardId(0),
            notes: vec![PartitionAdvanced {
                tp: tp(1),
                snapshot: PartitionSnapshot::leader_at(1, 0),
            }],
        });
        let out = long.await;
        assert!(!out.expired);
        assert_eq!(out.partitions, vec![(tp(1), ErrorCode(0))]);
    });
}

fn fetch(max_wait_ms: i64, min_bytes: i32) -> DelayedFetch {
    DelayedFetch::new(
        max_wait_ms,
        min_bytes,
        1 << 20,
        FetchIsolation::HighWatermark,
        vec![FetchPartitionSpec {
            tp: tp(3),
            fetch_offset: LogOffsetMetadata::new(10, 0, 1_000),
            partition_max_bytes: 1 << 20,
            current_leader_epoch: None,
        }],
    )
}

#[test]
fn fetch_wait_completes_on_min_bytes_and_on_max_wait() {
    run(|| async {
        let d = driver();
        d.on_partition_advanced(&tp(3), PartitionSnapshot::leader_at(10, 1_000));
        let d2 = d.clone();
        let waiter =
            glommio::spawn_local(async move { d2.wait_fetch(fetch(60_000, 500), &[tp(3)]).await });
        glommio::executor().yield_task_queue_now().await;
        d.on_partition_advanced(&tp(3), PartitionSnapshot::leader_at(12, 1_300));
        assert_eq!(d.parked(), (0, 1), "300 bytes < min_bytes 500");
        d.on_partition_advanced(&tp(3), PartitionSnapshot::leader_at(15, 1_600));
        let out = waiter.await;
        assert_eq!(
            out.reason,
            FetchCompletion::MinBytes {
                accumulated_bytes: 600
            }
        );

        let out = d.wait_fetch(fetch(20, 1_000_000), &[tp(3)]).await;
        assert_eq!(out.reason, FetchCompletion::Expired);
        assert_eq!(out.partitions.len(), 1);
    });
}

#[test]
fn satisfied_wait_returns_without_parking() {
    run(|| async {
        let d = driver();
        d.on_partition_advanced(&tp(4), PartitionSnapshot::leader_at(100, 0));
        let out = d.wait_produce(produce(60_000, 4, 9), &[tp(4)]).await;
        assert_eq!(out.partitions, vec![(tp(4), ErrorCode(0))]);
        assert_eq!(d.parked(), (0, 0));
        assert!(d.drain_watch_changes().is_empty());
    });
}
