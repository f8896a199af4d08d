//! Purgatory timer cost per operation, side by side:
//! - our hierarchical timing wheel (`purgatory::timing_wheel`),
//! - a `BinaryHeap` timer with lazy (tombstone) cancellation,
//! - one glommio `TimerActionOnce` per op, inside an executor
//!   (what ARCHITECTURE.md §5 avoids).
//!
//! Two workloads, each with 10k and 1M ops outstanding:
//! - `insert_cancel`: park an op and cancel it (completion by event);
//! - `insert_expire`: park an op and let it expire (steady state: as many
//!   expire per tick as are inserted; wheel and heap deadlines 10–30 s out,
//!   so a wheel entry is demoted through up to 3 levels). The glommio column
//!   (`glommio_zero_delay`) uses zero-delay timers (creation + firing + task
//!   run, no idle time in the measurement): glommio's cheapest path, kept so
//!   nothing is hidden, but it flatters glommio.
//! - `insert_expire_1_500ms`: the fair comparison. Every side gets batches of
//!   N ops (N = 10k, 1M outstanding at the start of a batch) with the same
//!   deadlines, spread over 1–500 ms (DelayedFetch `fetch.max.wait.ms`,
//!   DelayedProduce timeouts), and runs until all of them have expired. The
//!   wheel and the heap step a manual clock 1 ms at a time through the 500
//!   ms; glommio really waits for its timers to fire, so it pays its real
//!   per-op cost (task spawn, insert into its timer map, firing, task run).
//!   All three report thread CPU time / ops (`CLOCK_THREAD_CPUTIME_ID`):
//!   glommio's idle wall time while waiting is not a cost. With 1M ops
//!   glommio takes longer to create the timers than the 500 ms span, so
//!   many are already due when the creating loop yields.
//!   `timing_wheel_in_executor` is the wheel as the driver runs it: real
//!   clock, one glommio sleep per `next_deadline`, so it pays executor
//!   wake-ups too (at most one per 1 ms tick, where one timer per op can
//!   cost a wake-up per op). Like a shard's, its wheel lives across samples
//!   (as the standalone column's does), so its one-time growth to 1M slots
//!   is not charged to the measured ops; glommio's executor and its timer
//!   structures persist across samples the same way.
//!
//! Run short: `cargo bench --bench purgatory -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use glommio::timer::TimerActionOnce;
use glommio::{LocalExecutor, LocalExecutorBuilder, Placement};
use shardlog::purgatory::timing_wheel::TimingWheel;

const OUTSTANDING: [usize; 2] = [10_000, 1_000_000];
/// Kafka's `request.timeout.ms` default: deadlines spread over 30 s.
const SPAN_MS: i64 = 30_000;
/// Realistic purgatory deadlines: 1–500 ms out.
const REALISTIC_MAX_MS: i64 = 500;

/// Deadline offset of op `i` in a realistic batch: 1..=500 ms, spread by a
/// multiplicative hash so consecutive ops do not share a tick.
fn realistic_delay_ms(i: usize) -> i64 {
    1 + (i as i64 * 7_919) % REALISTIC_MAX_MS
}

/// CPU time consumed by this thread (the glommio executor runs on it).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs whole batches of `n` ops covering at least `iters` ops and returns
/// the CPU time scaled to `iters` ops, so every sample sees `n` outstanding
/// even when criterion asks for fewer iterations.
fn batched(iters: u64, n: usize, mut batch: impl FnMut()) -> Duration {
    let batches = iters.div_ceil(n as u64).max(1);
    let start = thread_cpu();
    for _ in 0..batches {
        batch();
    }
    let spent = thread_cpu() - start;
    spent.mul_f64(iters as f64 / (batches * n as u64) as f64)
}

/// A heap timer with cancellation by tombstone and periodic compaction, the
/// usual alternative to a wheel.
struct HeapTimer {
    heap: BinaryHeap<Reverse<(i64, u64)>>,
    cancelled: Vec<bool>,
    tombstones: usize,
    next_id: u64,
}

impl HeapTimer {
    fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            cancelled: Vec::new(),
            tombstones: 0,
            next_id: 0,
        }
    }
    fn insert(&mut self, deadline: i64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.cancelled.push(false);
        self.heap.push(Reverse((deadline, id)));
        id
    }
    fn cancel(&mut self, id: u64) {
        self.cancelled[id as usize] = true;
        self.tombstones += 1;
        if self.tombstones > self.heap.len() / 2 {
            let cancelled = &self.cancelled;
            self.heap
                .retain(|Reverse((_, id))| !cancelled[*id as usize]);
            self.tombstones = 0;
        }
    }
    fn advance(&mut self, now: i64) -> usize {
        let mut n = 0;
        while let Some(&Reverse((d, id))) = self.heap.peek() {
            if d > now {
                break;
            }
            self.heap.pop();
            if !self.cancelled[id as usize] {
                n += 1;
            }
        }
        n
    }
}

/// Steady-state geometry: `per_ms` ops inserted (and expiring) per tick so
/// that `outstanding` ops are always waiting.
fn geometry(outstanding: usize) -> (i64, usize) {
    let per_ms = (outstanding / SPAN_MS as usize).max(1);
    let span = (outstanding / per_ms) as i64;
    (span, per_ms)
}

// Setup (prefilling up to 1M ops) happens outside `bench_function`:
// criterion calls the routine closure once per sample.

fn bench_insert_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_cancel");
    for &n in &OUTSTANDING {
        let mut w = TimingWheel::new(0);
        for i in 0..n {
            w.insert(1 + (i as i64 * 7_919) % SPAN_MS, i as u64);
        }
        let mut i = 0i64;
        group.bench_function(BenchmarkId::new("timing_wheel", n), |b| {
            b.iter(|| {
                i += 1;
                let h = w.insert(1 + (i * 7_919) % SPAN_MS, 0);
                black_box(w.cancel(h));
            });
        });
        drop(w);

        let mut t = HeapTimer::new();
        for i in 0..n {
            t.insert(1 + (i as i64 * 7_919) % SPAN_MS);
        }
        let mut i = 0i64;
        group.bench_function(BenchmarkId::new("binary_heap", n), |b| {
            b.iter(|| {
                i += 1;
                let id = t.insert(1 + (i * 7_919) % SPAN_MS);
                t.cancel(black_box(id));
            });
        });
        drop(t);

        let ex = executor();
        let parked = ex.run(async move { prefill_glommio(n) });
        group.bench_function(BenchmarkId::new("glommio_timer_action_once", n), |b| {
            b.iter_custom(|iters| {
                ex.run(async move {
                    let start = Instant::now();
                    for i in 0..iters {
                        let t = TimerActionOnce::do_in(
                            Duration::from_millis(10_000 + i % 20_000),
                            async {},
                        );
                        t.cancel().await;
                    }
                    start.elapsed()
                })
            });
        });
        drop(parked);
    }
    group.finish();
}

fn bench_insert_expire(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_expire");
    for &n in &OUTSTANDING {
        let (span, per_ms) = geometry(n);
        // Prefill deadlines 1..=span, `per_ms` each; the stream then adds
        // `per_ms` per tick at `now + span + 1`, so exactly `per_ms` expire
        // per tick and `steady` ops (≈ n) stay outstanding.
        let steady = span as usize * per_ms;
        let mut w = TimingWheel::new(0);
        for i in 0..steady {
            w.insert(1 + (i / per_ms) as i64, i as u64);
        }
        let (mut now, mut k) = (0i64, 0usize);
        let mut out = Vec::with_capacity(per_ms);
        group.bench_function(BenchmarkId::new("timing_wheel", n), |b| {
            b.iter(|| {
                w.insert(now + span + 1, 0);
                k += 1;
                if k == per_ms {
                    k = 0;
                    now += 1;
                    out.clear();
                    w.advance_into(now, &mut out);
                    black_box(out.len());
                }
            });
        });
        assert!(
            (steady..=steady + per_ms).contains(&w.len()),
            "steady state kept {} of {steady} outstanding",
            w.len()
        );
        drop(w);

        let mut t = HeapTimer::new();
        for i in 0..steady {
            t.insert(1 + (i / per_ms) as i64);
        }
        let (mut now, mut k) = (0i64, 0usize);
        group.bench_function(BenchmarkId::new("binary_heap", n), |b| {
            b.iter(|| {
                t.insert(now + span + 1);
                k += 1;
                if k == per_ms {
                    k = 0;
                    now += 1;
                    black_box(t.advance(now));
                }
            });
        });
        drop(t);

        let ex = executor();
        let parked = ex.run(async move { prefill_glommio(n) });
        group.bench_function(BenchmarkId::new("glommio_zero_delay", n), |b| {
            b.iter_custom(|iters| {
                ex.run(async move {
                    // Zero-delay timers: creation + firing + the spawned
                    // task's run, without idle sleeping in the measurement.
                    let start = Instant::now();
                    let mut pending = Vec::with_capacity(1024);
                    for _ in 0..iters {
                        pending.push(TimerActionOnce::do_in(Duration::ZERO, async {}));
                        if pending.len() == 1024 {
                            for t in pending.drain(..) {
                                t.join().await;
                            }
                        }
                    }
                    for t in pending.drain(..) {
                        t.join().await;
                    }
                    start.elapsed()
                })
            });
        });
        drop(parked);
    }
    group.finish();
}

fn bench_insert_expire_realistic(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_expire_1_500ms");
    // One glommio batch waits ~500 ms of wall time: a few samples of one
    // batch each keep the run short (these override the CLI times).
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    for &n in &OUTSTANDING {
        let mut w = TimingWheel::new(0);
        let mut out = Vec::with_capacity(n);
        group.bench_function(BenchmarkId::new("timing_wheel", n), |b| {
            b.iter_custom(|iters| {
                batched(iters, n, || {
                    let now = w.current_time_ms();
                    for i in 0..n {
                        w.insert(now + realistic_delay_ms(i), i as u64);
                    }
                    let mut expired = 0;
                    for t in 1..=REALISTIC_MAX_MS {
                        out.clear();
                        w.advance_into(now + t, &mut out);
                        expired += out.len();
                    }
                    assert_eq!(expired, n, "every op expires within the batch");
                })
            });
        });
        drop((w, out));

        // Expiry only, no cancels: a plain heap is the heap timer's hot path.
        let mut heap: BinaryHeap<Reverse<(i64, u64)>> = BinaryHeap::with_capacity(n);
        let mut now = 0i64;
        group.bench_function(BenchmarkId::new("binary_heap", n), |b| {
            b.iter_custom(|iters| {
                batched(iters, n, || {
                    for i in 0..n {
                        heap.push(Reverse((now + realistic_delay_ms(i), i as u64)));
                    }
                    let mut expired = 0;
                    for _ in 0..REALISTIC_MAX_MS {
                        now += 1;
                        while let Some(&Reverse((d, id))) = heap.peek() {
                            if d > now {
                                break;
                            }
                            heap.pop();
                            black_box(id);
                            expired += 1;
                        }
                    }
                    assert_eq!(expired, n, "every op expires within the batch");
                })
            });
        });
        drop(heap);

        let ex = executor();
        // One wheel for all samples, like a shard's (and like the standalone
        // column): its one-time growth to 1M slots is not a per-op cost.
        let mut shard = InExecutorWheel::new(n);
        group.bench_function(BenchmarkId::new("timing_wheel_in_executor", n), |b| {
            b.iter_custom(|iters| ex.run(shard.run(iters, n)));
        });
        drop(shard);
        group.bench_function(BenchmarkId::new("glommio_realistic", n), |b| {
            b.iter_custom(|iters| {
                ex.run(async move {
                    // Same batching as `batched`, with the waiting done in
                    // the executor.
                    let batches = iters.div_ceil(n as u64).max(1);
                    let mut timers = Vec::with_capacity(n);
                    let start = thread_cpu();
                    for _ in 0..batches {
                        for i in 0..n {
                            let delay = Duration::from_millis(realistic_delay_ms(i) as u64);
                            timers.push(TimerActionOnce::do_in(delay, async {}));
                        }
                        for t in timers.drain(..) {
                            assert!(t.join().await.is_some(), "timer fired");
                        }
                    }
                    let spent = thread_cpu() - start;
                    spent.mul_f64(iters as f64 / (batches * n as u64) as f64)
                })
            });
        });
    }
    group.finish();
}

/// The production shape (`purgatory::driver`): the wheel on a real clock,
/// woken by one glommio sleep per `next_deadline`, so it pays the same
/// executor wake-ups (≤ one per 1 ms tick) that the glommio-per-op column
/// pays per timer. The wheel lives as long as the shard (here: the
/// benchmark), so samples after the first see it at its steady-state size.
struct InExecutorWheel {
    origin: Instant,
    wheel: TimingWheel<u64>,
    out: Vec<shardlog::purgatory::timing_wheel::Expired<u64>>,
}

impl InExecutorWheel {
    fn new(n: usize) -> Self {
        Self {
            origin: Instant::now(),
            wheel: TimingWheel::new(0),
            out: Vec::with_capacity(n),
        }
    }

    async fn run(&mut self, iters: u64, n: usize) -> Duration {
        let origin = self.origin;
        let now_ms = || origin.elapsed().as_millis() as i64;
        let (w, out) = (&mut self.wheel, &mut self.out);
        let batches = iters.div_ceil(n as u64).max(1);
        let start = thread_cpu();
        for _ in 0..batches {
            let base = now_ms();
            for i in 0..n {
                w.insert(base + realistic_delay_ms(i), i as u64);
            }
            let mut expired = 0;
            while let Some(t) = w.next_deadline() {
                let now = now_ms();
                if t > now {
                    glommio::timer::sleep(Duration::from_millis((t - now) as u64)).await;
                }
                out.clear();
                w.advance_into(now_ms(), out);
                expired += out.len();
            }
            assert_eq!(expired, n, "every op expires within the batch");
        }
        let spent = thread_cpu() - start;
        spent.mul_f64(iters as f64 / (batches * n as u64) as f64)
    }
}

fn executor() -> LocalExecutor {
    LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(512 << 10)
        .make()
        .expect("glommio executor")
}

/// `n` long glommio timers kept outstanding while measuring.
fn prefill_glommio(n: usize) -> Vec<TimerActionOnce<()>> {
    (0..n)
        .map(|i| TimerActionOnce::do_in(Duration::from_secs(600 + (i % 600) as u64), async {}))
        .collect()
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_insert_cancel, bench_insert_expire, bench_insert_expire_realistic
}
criterion_main!(benches);
