//! Storage engine benchmarks (criterion, harness = false).
//!
//! - `append_16k_nofsync`: PartitionLog::append of 16 KiB batches, Kafka's
//!   default flush policy (no forced fsync), DMA writes of 1 MiB buffers,
//!   64 MiB batch cache; each batch arrives in a fresh request buffer, and
//!   the log lives across samples (steady state, see `AppendRig`).
//! - `append_16k_nofsync_nocache`: the same without the batch cache.
//! - `append_16k_fsync_each`: same with `flush_every_append` (O_DIRECT
//!   write of the tail page(s) + fdatasync per batch).
//! - `recovery_scan_64m`: the pure recovery scan (length + CRC-32C) over
//!   64 MiB of 16 KiB batches in memory.
//! - `recover_segment_128m`: unclean reopen of a 128 MiB segment (O_DIRECT
//!   reads + scan + index rebuild).
//! - `index_lookup`: sparse offset index lookup, 100k entries.
//! - `crc32c_16k` / `crc32c_1m`.
//!
//! perf/storage_bench.sh runs these side by side with fio.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::future::Future;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shardlog::protocol::record_batch::build_test_batch;
use shardlog::storage::index::SegmentIndex;
use shardlog::storage::recovery::scan;
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, ShardStorage};
use shardlog::types::TopicPartition;

const BATCH: usize = 16 * 1024;

fn run<G, F, T>(g: G) -> T
where
    G: FnOnce() -> F + Send + 'static,
    F: Future<Output = T> + 'static,
    T: Send + 'static,
{
    glommio::LocalExecutorBuilder::default()
        // As the broker's shards (src/shard/boot.rs IO_MEMORY_BYTES): too
        // small for 1 MiB registered write buffers, so none are.
        .io_memory(512 << 10)
        .spawn(g)
        .expect("spawn executor")
        .join()
        .expect("executor panicked")
}

/// A bench temp dir on the same file system as the work tree (not tmpfs).
fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var("STORAGE_BENCH_DIR").unwrap_or_else(|_| "target/storage-bench".into());
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

fn batch_16k() -> Vec<u8> {
    build_test_batch(0, 16, 1, 1, BATCH - 61, 3)
}

async fn open(dir: &Path, config: LogConfig) -> PartitionLog {
    open_cached(dir, config, 64 << 20).await
}

async fn open_cached(dir: &Path, config: LogConfig, cache_bytes: usize) -> PartitionLog {
    shardlog::io::dma::prime_iopoll_probe(dir).await.unwrap();
    PartitionLog::open(
        dir,
        &TopicPartition::new("bench", 0),
        None,
        config,
        ShardStorage::standalone(BatchCache::shared(cache_bytes)),
    )
    .await
    .unwrap()
}

/// A partition log on its own executor thread that lives across
/// criterion's samples, as a broker shard does: the batch cache fills up
/// and then evicts, write buffers recycle, segments roll. Timing fresh logs
/// would measure a just-started broker (empty cache, cold buffers).
/// `retention.bytes` (applied between samples, untimed) bounds the disk
/// used; everything else is Kafka's defaults unless the bench says.
struct AppendRig {
    requests: Option<mpsc::Sender<u64>>,
    timings: mpsc::Receiver<Duration>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AppendRig {
    fn start(config: LogConfig, cache_bytes: usize) -> Self {
        let (requests, rx) = mpsc::channel::<u64>();
        let (tx, timings) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            run(move || async move {
                let tmp = bench_dir();
                let config = LogConfig {
                    retention_bytes: 2 << 30,
                    ..config
                };
                let mut log = open_cached(tmp.path(), config, cache_bytes).await;
                let src = batch_16k();
                let mut now_ms = 0i64;
                let (mut cpu, mut batches) = (Duration::ZERO, 0u64);
                // Blocking between samples is fine: nothing else runs here.
                while let Ok(iters) = rx.recv() {
                    let cpu_start = thread_cpu_time();
                    let start = Instant::now();
                    for _ in 0..iters {
                        // What the broker gets per produce request: a fresh
                        // buffer filled from the socket, handed to the log
                        // (PartitionLog::append, as src/shard/partitions.rs).
                        let request = Bytes::copy_from_slice(&src);
                        log.append(request, 0, now_ms, false).await.unwrap();
                        now_ms += 1;
                    }
                    let elapsed = start.elapsed();
                    cpu += thread_cpu_time().saturating_sub(cpu_start);
                    batches += iters;
                    log.set_high_watermark(log.log_end_offset());
                    log.apply_retention(now_ms).unwrap();
                    if tx.send(elapsed).is_err() {
                        break;
                    }
                }
                log.close().await.unwrap();
                // CPU of the shard thread per append (not what criterion
                // reports): less sensitive to other load on a shared host.
                if batches > 0 {
                    eprintln!(
                        "append rig: {batches} appends, shard thread CPU {:.2} µs per append",
                        cpu.as_secs_f64() * 1e6 / batches as f64
                    );
                }
            })
        });
        AppendRig {
            requests: Some(requests),
            timings,
            thread: Some(thread),
        }
    }

    /// Time `iters` appends (the log's state carries over between calls).
    fn time(&self, iters: u64) -> Duration {
        let requests = self.requests.as_ref().expect("rig running");
        requests.send(iters).expect("rig thread alive");
        self.timings.recv().expect("rig thread alive")
    }
}

/// CPU time consumed by the calling thread.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec we own; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Drop for AppendRig {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn append_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("storage");
    g.throughput(Throughput::Bytes(BATCH as u64));
    let rig = AppendRig::start(LogConfig::default(), 64 << 20);
    g.bench_function("append_16k_nofsync", |b| {
        b.iter_custom(|iters| rig.time(iters))
    });
    drop(rig);
    let rig = AppendRig::start(LogConfig::default(), 0);
    g.bench_function("append_16k_nofsync_nocache", |b| {
        b.iter_custom(|iters| rig.time(iters))
    });
    drop(rig);
    g.throughput(Throughput::Elements(1));
    let fsync_each = LogConfig {
        flush_every_append: true,
        ..LogConfig::default()
    };
    let rig = AppendRig::start(fsync_each, 64 << 20);
    g.bench_function("append_16k_fsync_each", |b| {
        b.iter_custom(|iters| rig.time(iters))
    });
    drop(rig);
    g.finish();
}

fn log_bytes(total: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(total);
    let mut off = 0i64;
    while v.len() + BATCH <= total {
        v.extend(build_test_batch(off, 16, 1, 1, BATCH - 61, off as u8));
        off += 16;
    }
    v
}

fn recovery_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("storage");
    let bytes = log_bytes(64 << 20);
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("recovery_scan_64m", |b| {
        let mut out = Vec::with_capacity(bytes.len() / BATCH + 1);
        b.iter(|| {
            out.clear();
            let mut next = 0;
            scan(&bytes, 0, &mut next, usize::MAX, true, &mut out).consumed
        })
    });
    let seg = log_bytes(128 << 20);
    g.throughput(Throughput::Bytes(seg.len() as u64));
    g.sample_size(10);
    g.bench_function("recover_segment_128m", |b| {
        b.iter_custom(|iters| {
            let seg = seg.clone();
            run(move || async move {
                let tmp = bench_dir();
                let dir = tmp.path().join("bench-0");
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("00000000000000000000.log"), &seg).unwrap();
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let log = open(tmp.path(), LogConfig::default()).await;
                    total += start.elapsed();
                    assert_eq!(log.recovery_stats().segments_scanned, 1);
                    drop(log); // unclean: the next open rescans
                }
                total
            })
        })
    });
    g.finish();
}

fn index_and_crc_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("storage");
    let mut idx = SegmentIndex::new(0, 4096, 1 << 20, 1 << 20);
    let mut pos = 0u64;
    for i in 0..400_000i64 {
        idx.on_batch(i * 4, pos, 1100, i);
        pos += 1100;
    }
    assert!(idx.offsets.len() > 90_000);
    g.throughput(Throughput::Elements(1));
    let mut probe = 0i64;
    g.bench_function("index_lookup", |b| {
        b.iter(|| {
            probe = (probe + 7_919) % 1_600_000;
            idx.lookup_position(std::hint::black_box(probe))
        })
    });
    for size in [16 << 10, 1 << 20] {
        let data = vec![0x5au8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::new("crc32c", size), &data, |b, d| {
            b.iter(|| crc32c::crc32c(d))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = append_benches, recovery_benches, index_and_crc_benches
}
criterion_main!(benches);
