//! Log compaction throughput vs the same log's plain read throughput, in
//! one run (criterion, harness = false; issue 21's benchmark).
//!
//! The log: `COMPACTION_BENCH_MB` MiB (default 64) of v2 batches of 100
//! records over 1,000 keys (100-byte values, 1 in 10 batches lz4), in
//! 16 MiB segments, all closed (the active segment is empty), in
//! `target/storage-bench` (the work tree's file system, page cache warm
//! after the first sample).
//!
//! - `compaction/plain_read`: every byte of the closed segments through
//!   `PartitionLog::read` (1 MiB reads, KIP-74 whole batches) and a pread of
//!   each file region, what a consumer fetch from the start costs the
//!   broker without the socket.
//! - `compaction/clean`: one full clean of the same log, as the broker's
//!   cleaner runs it (`storage::cleaner::driver`: offset map over the dirty
//!   part, every segment group rewritten into `.cleaned` files, indexes,
//!   fsync), the swap left out so each sample cleans the same dirty log.
//!
//! Throughput is bytes of the log per second for both.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use shardlog::io::clock::SystemClock;
use shardlog::io::zerocopy::OutPart;
use shardlog::storage::cleaner::codec::compress_batch;
use shardlog::storage::cleaner::driver::{CleanJob, CleanerConfig, IoBudget};
use shardlog::storage::cleaner::select::{CompactionConfig, LogStat};
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, ShardStorage};
use shardlog::types::TopicPartition;

fn run<G, F, T>(g: G) -> T
where
    G: FnOnce() -> F + Send + 'static,
    F: std::future::Future<Output = T> + 'static,
    T: Send + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .io_memory(512 << 10)
        .spawn(g)
        .expect("spawn executor")
        .join()
        .expect("executor panicked")
}

fn batch(first: usize, compression: Compression) -> BytesMut {
    let recs: Vec<Record> = (0..100)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: i as i32 - 1,
            timestamp: 1_700_000_000_000,
            key: Some(format!("key-{:04}", (first + i as usize) % 1000).into()),
            value: Some(bytes::Bytes::from(vec![b'v'; 100])),
            headers: Default::default(),
        })
        .collect();
    // LZ4 through the cleaner's frame writer: kafka-protocol's LZ4 is the
    // C `lz4` crate, which the build leaves out.
    let lz4 = matches!(compression, Compression::Lz4);
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: if lz4 { Compression::None } else { compression },
    };
    RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
    if lz4 {
        return BytesMut::from(&compress_batch(&buf, 3).unwrap()[..]);
    }
    buf
}

enum Op {
    Read,
    Clean,
}

/// The log on its own executor thread, serving timed operations.
struct Rig {
    requests: Option<mpsc::Sender<(Op, u64)>>,
    timings: mpsc::Receiver<Duration>,
    bytes: u64,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Rig {
    fn start(total: usize) -> Rig {
        let (requests, rx) = mpsc::channel::<(Op, u64)>();
        let (tx, timings) = mpsc::channel();
        let (size_tx, size_rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            run(move || async move {
                std::fs::create_dir_all("target/storage-bench").unwrap();
                let tmp = tempfile::tempdir_in("target/storage-bench").unwrap();
                shardlog::io::dma::prime_iopoll_probe(tmp.path())
                    .await
                    .unwrap();
                let config = LogConfig {
                    segment_bytes: 16 << 20,
                    compact: true,
                    delete: false,
                    ..LogConfig::default()
                };
                let (tp, storage) = (
                    TopicPartition::new("bench", 0),
                    ShardStorage::standalone(BatchCache::shared(0)),
                );
                let mut log = PartitionLog::open(tmp.path(), &tp, None, config, storage)
                    .await
                    .unwrap();
                let (mut written, mut n) = (0usize, 0usize);
                while written < total {
                    let codec = if n % 10 == 0 {
                        Compression::Lz4
                    } else {
                        Compression::None
                    };
                    let b = batch(n * 100, codec);
                    written += b.len();
                    log.append(b, 0, 0, false).await.unwrap();
                    n += 1;
                }
                log.roll(0).await.unwrap();
                log.flush().await.unwrap();
                log.set_high_watermark(log.log_end_offset());
                let view = log.cleaner_view();
                let closed: u64 = view.segments.iter().map(|s| s.size).sum();
                size_tx.send(closed).unwrap();
                let cleaner = CleanerConfig {
                    dedupe_buffer_bytes: 128 << 20,
                    io_max_bytes_per_second: f64::MAX,
                    swap_delay_ms: 0,
                };
                let clock = Rc::new(SystemClock::new());
                let mut buf = Vec::with_capacity(2 << 20);
                while let Ok((op, iters)) = rx.recv() {
                    let start = Instant::now();
                    for _ in 0..iters {
                        match op {
                            Op::Read => read_all(&log, &mut buf),
                            Op::Clean => {
                                let view = log.cleaner_view();
                                let stat = LogStat {
                                    log_start_offset: view.log_start_offset,
                                    log_end_offset: view.log_end_offset,
                                    last_stable_offset: view.high_watermark,
                                    segments: view.segments.iter().map(|s| s.stat).collect(),
                                    active_base_offset: view.active_base_offset,
                                    checkpoint: None,
                                    pending_delete_horizon_ms: None,
                                    config: CompactionConfig {
                                        min_cleanable_dirty_ratio: 0.5,
                                        min_compaction_lag_ms: 0,
                                        max_compaction_lag_ms: i64::MAX,
                                    },
                                };
                                let ltc = stat.to_clean(0);
                                let mut io = IoBudget::new(clock.clone(), f64::MAX);
                                let mut job = CleanJob::new(
                                    view,
                                    ltc,
                                    BTreeMap::new(),
                                    Vec::new(),
                                    0,
                                    &cleaner,
                                );
                                job.build_offset_map(&mut io).await.unwrap();
                                for group in job.groups() {
                                    job.write_group(group, &mut io).await.unwrap().discard();
                                }
                            }
                        }
                    }
                    if tx.send(start.elapsed()).is_err() {
                        break;
                    }
                }
                log.close().await.unwrap();
            })
        });
        let bytes = size_rx.recv().unwrap();
        Rig {
            requests: Some(requests),
            timings,
            bytes,
            thread: Some(thread),
        }
    }

    fn time(&self, op: Op, iters: u64) -> Duration {
        self.requests.as_ref().unwrap().send((op, iters)).unwrap();
        self.timings.recv().unwrap()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Every closed segment's bytes, as consumer fetches from offset 0 read them.
fn read_all(log: &PartitionLog, buf: &mut Vec<u8>) {
    let end = log.active_segment_base_offset();
    let mut offset = log.log_start_offset();
    while offset < end {
        let r = log.read(offset, 1 << 20, end, true).unwrap();
        assert!(r.bytes > 0, "read at {offset} returned nothing");
        for part in &r.regions {
            let bytes: &[u8] = match part {
                OutPart::File {
                    file,
                    position,
                    len,
                } => {
                    buf.resize(*len, 0);
                    file.read_exact_at(buf, *position).unwrap();
                    buf
                }
                OutPart::Bytes(b) => b,
                OutPart::Lazy(_) => unreachable!("a log read gives no lazy parts"),
            };
            // Whole batches: the next fetch starts after the last one.
            let mut at = 0;
            while at + 27 <= bytes.len() {
                let base = i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
                let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
                let delta = i32::from_be_bytes(bytes[at + 23..at + 27].try_into().unwrap());
                offset = offset.max(base + i64::from(delta) + 1);
                at += 12 + len as usize;
            }
        }
    }
}

fn compaction_benches(c: &mut Criterion) {
    let mb: usize = std::env::var("COMPACTION_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let rig = Rig::start(mb << 20);
    let mut g = c.benchmark_group("compaction");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Bytes(rig.bytes));
    g.bench_function("plain_read", |b| {
        b.iter_custom(|iters| rig.time(Op::Read, iters))
    });
    g.bench_function("clean", |b| {
        b.iter_custom(|iters| rig.time(Op::Clean, iters))
    });
    g.finish();
}

criterion_group!(benches, compaction_benches);
criterion_main!(benches);
