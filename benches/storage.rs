//! Storage engine benchmarks (criterion, harness = false).
//!
//! - `append_16k_nofsync`: PartitionLog::append of 16 KiB batches, Kafka's
//!   default flush policy (no forced fsync), DMA writes of 1 MiB buffers.
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

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shardlog::protocol::record_batch::build_test_batch;
use shardlog::storage::index::SegmentIndex;
use shardlog::storage::recovery::scan;
use shardlog::storage::{BatchCache, LogConfig, PartitionLog};
use shardlog::types::TopicPartition;

const BATCH: usize = 16 * 1024;

fn run<G, F, T>(g: G) -> T
where
    G: FnOnce() -> F + Send + 'static,
    F: Future<Output = T> + 'static,
    T: Send + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .io_memory(4 << 20)
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
        BatchCache::shared(cache_bytes),
    )
    .await
    .unwrap()
}

/// Time `iters` appends in a fresh log (open/close excluded). With a batch
/// cache the appended buffers stay alive, so each new request buffer is
/// fresh memory (page faults): the cost of the zero-copy tail cache.
fn time_appends(iters: u64, config: LogConfig, cache_bytes: usize) -> Duration {
    run(move || async move {
        let tmp = bench_dir();
        let mut log = open_cached(tmp.path(), config, cache_bytes).await;
        let src = batch_16k();
        let start = Instant::now();
        for i in 0..iters {
            log.append(BytesMut::from(&src[..]), 0, i as i64, false)
                .await
                .unwrap();
        }
        let elapsed = start.elapsed();
        log.close().await.unwrap();
        elapsed
    })
}

fn append_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("storage");
    g.throughput(Throughput::Bytes(BATCH as u64));
    g.bench_function("append_16k_nofsync", |b| {
        b.iter_custom(|iters| time_appends(iters, LogConfig::default(), 64 << 20))
    });
    g.bench_function("append_16k_nofsync_nocache", |b| {
        b.iter_custom(|iters| time_appends(iters, LogConfig::default(), 0))
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("append_16k_fsync_each", |b| {
        b.iter_custom(|iters| {
            time_appends(
                iters,
                LogConfig {
                    flush_every_append: true,
                    ..LogConfig::default()
                },
                64 << 20,
            )
        })
    });
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
