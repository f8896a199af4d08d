//! `[io]` The load generator, `shardlog loadgen`: a Kafka producer and
//! consumer of its own (std threads, blocking sockets, `kafka-protocol`
//! codecs) that sweeps producer settings (acks x linger.ms x batch.size x
//! ...) against shardlog or any Kafka-compatible broker, and reports
//! throughput and HdrHistogram latency percentiles as a table, CSV, JSON,
//! an SVG plot and an HTML page.
//!
//! ```text
//! shardlog loadgen --bootstrap 127.0.0.1:9092 --partitions 6 \
//!     --sweep acks=0,1,all --sweep linger.ms=0,1,5,20 \
//!     --sweep batch.size=16384,131072,1048576 \
//!     --duration 10s --warmup 3s --out results/
//! shardlog loadgen --workload workloads/1-topic-16-partitions-1kb.yaml --duration 30s
//! shardlog loadgen --rate 50000 --keys 1000 --compression lz4 --client-cpus 1
//! shardlog loadgen --echo-rtt --duration 5s        # loopback RTT reference
//! ```
//!
//! Measurement: every record carries its send timestamp (wall-clock ns),
//! producer index and sequence in the first 20 bytes of its value.
//! Produce-ack latency runs from `send` to the acknowledgement (acks=0: to
//! the socket write); with `--rate` it is also taken from the record's
//! intended send time on the fixed-rate schedule (coordinated omission
//! corrected, like OMB's publish delay), and the payload timestamp is that
//! intended time. End-to-end latency is consume time minus the payload
//! timestamp. Records whose (intended) send time falls in the warm-up are
//! not measured; `--messages N` runs measure every record. Consumers check
//! that every acknowledged record comes back once, offsets without gaps,
//! and per-partition order per producer.
//!
//! | file | kind | role |
//! |------|------|------|
//! | [`args`] | pure | flags, producer settings (Kafka keys), workload |
//! | [`sweep`] | pure | cartesian product of `--sweep` axes |
//! | [`omb`] | pure | OpenMessaging Benchmark workload YAML |
//! | [`accumulator`] | pure | batching: batch.size, linger.ms, buffer.memory, in-flight cap |
//! | [`partitioner`] | pure | murmur2 (keyed) and sticky (KIP-480) partitioners |
//! | [`wire`] | pure | hot-path encoders: plain v2 batches, Produce frames without their batches |
//! | [`report`] | pure | table, CSV, JSON, SVG, HTML rendering |
//! | [`client`] | io | connections, framing, pipelining, admin requests |
//! | [`producer`] | io | producer threads |
//! | [`consumer`] | io | consumer threads, end-to-end latency, verification; batch-header scan and in-place FetchResponse walk |
//! | [`consume_only`] | io | `--consume-only`: consume existing topics from the earliest offsets, throughput |
//! | [`echo`] | io | loopback TCP echo RTT reference |

pub mod accumulator;
pub mod args;
pub mod bench;
pub mod client;
pub mod consume_only;
pub mod consumer;
pub mod echo;
pub mod omb;
pub mod partitioner;
pub mod producer;
pub mod report;
pub mod sweep;
pub mod wire;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::histogram::LatencyHistogram;
pub use args::LoadgenArgs;
use args::{acks_label, parse_cpu_list, ProducerSettings, Workload};
use client::{ClusterMeta, SyncClient, Timebase, LATEST_TIMESTAMP};
use consumer::{ConsumerOutcome, ConsumerPartition, ConsumerPlan, DrainTargets};
use producer::{LiveStats, ProducerOutcome, ProducerPlan};
use report::{PointResult, RunReport};
use sweep::SweepPoint;

#[derive(clap::Parser)]
#[command(name = "shardlog loadgen", bin_name = "shardlog loadgen")]
struct Cli {
    #[command(flatten)]
    args: LoadgenArgs,
}

/// Parses `loadgen` arguments (the first item is the program name); prints
/// help or the error and exits like any clap program.
pub fn parse_args_from<I, T>(iter: I) -> LoadgenArgs
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    <Cli as clap::Parser>::parse_from(iter).args
}

/// Tells glibc's allocator to serve the producer's large buffers (payload
/// chunks, ~1 MB record batches, request frames) from memory it keeps,
/// not from fresh `mmap`s: each fresh mapping is page-faulted and zeroed
/// again, which cost the client core ~6% at 1M msgs/s (perf, 2026-11-30).
/// Allocations up to 64 MiB stay on the heap and freed memory is not
/// returned to the kernel; the loadgen's working set is bounded by
/// `buffer.memory` and the consumers' fetch sizes anyway.
pub(crate) fn keep_freed_memory() {
    // SAFETY: mallopt only changes allocator parameters; it is called
    // before the loadgen starts its threads. (nix has no wrapper for it.)
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Entry point of `shardlog loadgen`.
pub fn run(args: LoadgenArgs) -> Result<()> {
    keep_freed_memory();
    let cpus = args
        .client_cpus
        .as_deref()
        .map(parse_cpu_list)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    if let Some(cpus) = &cpus {
        let available: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .iter()
            .map(|c| c.id)
            .collect();
        if let Some(bad) = cpus.iter().find(|c| !available.contains(c)) {
            bail!("--client-cpus: CPU {bad} is not available (available: {available:?})");
        }
    }
    if args.echo_rtt {
        return run_echo(&args, cpus.as_deref());
    }
    if args.consume_only {
        return consume_only::run(&args, cpus.as_deref().unwrap_or(&[]));
    }
    let workload = resolve_workload(&args)?;
    let base = ProducerSettings::from_args(&args).map_err(|e| anyhow!(e))?;
    let axes = args
        .sweep
        .iter()
        .map(|s| sweep::parse_axis(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!(e))?;
    let points = sweep::points(&base, &axes).map_err(|e| anyhow!(e))?;
    let admin_timeout = Duration::from_millis(base.request_timeout_ms.clamp(1_000, 30_000) as u64);
    let mut boot = client::connect_bootstrap(&args.bootstrap, &args.client_id, admin_timeout)
        .context("nothing can be produced")?;
    let topics = workload.topic_names();
    client::ensure_topics(
        &mut boot,
        &topics,
        workload.partitions_per_topic,
        workload.replication_factor,
        &args.client_id,
        admin_timeout,
    )?;
    eprintln!(
        "loadgen: {} point(s) against {}; workload {:?}: {} topic(s) x {} partition(s), {} B, rate {}",
        points.len(),
        args.bootstrap,
        workload.name,
        workload.topics,
        workload.partitions_per_topic,
        workload.message_size,
        workload
            .producer_rate
            .map_or("max".to_string(), |r| format!("{r}/s"))
    );
    let ctx = RunContext {
        args: &args,
        workload: &workload,
        cpus: cpus.unwrap_or_default(),
        admin_timeout,
        points: points.len(),
    };
    let mut report = RunReport {
        bootstrap: args.bootstrap.clone(),
        workload: workload.clone(),
        points: Vec::with_capacity(points.len()),
    };
    for point in &points {
        match run_point(&ctx, &mut boot, point) {
            Ok(r) => report.points.push(r),
            Err(e) => {
                // Keep what the finished points measured.
                if !report.points.is_empty() {
                    let _ = publish(&args, &report);
                    eprintln!("loadgen: stopped after {} point(s)", report.points.len());
                }
                return Err(e);
            }
        }
    }
    publish(&args, &report)
}

/// The table on stdout and, with `--out`, the report files.
fn publish(args: &LoadgenArgs, report: &RunReport) -> Result<()> {
    print!("{}", report::render_table(&report.points));
    if let Some(dir) = &args.out {
        write_outputs(dir, report)?;
        eprintln!(
            "loadgen: wrote results.csv, results.json, latency.svg, report.html to {}",
            dir.display()
        );
    }
    Ok(())
}

fn resolve_workload(args: &LoadgenArgs) -> Result<Workload> {
    let base = match &args.workload {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading workload {}", path.display()))?;
            omb::parse_workload(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?
        }
        None => Workload::default(),
    };
    base.override_with(args).map_err(|e| anyhow!(e))
}

fn run_echo(args: &LoadgenArgs, cpus: Option<&[usize]>) -> Result<()> {
    let duration = args.duration.unwrap_or(Duration::from_secs(5));
    let warmup = args.warmup.unwrap_or(Duration::from_secs(1));
    let client_cpu = cpus.and_then(|c| c.first().copied());
    let server_cpu = cpus.and_then(|c| c.get(1).or(c.first()).copied());
    let r = match args.rate {
        Some(rate) => echo::measure_at_rate(
            args.echo_size,
            rate,
            duration,
            warmup,
            client_cpu,
            server_cpu,
        )?,
        None => echo::measure(args.echo_size, duration, warmup, client_cpu, server_cpu)?,
    };
    print!("{}", echo::render(&r));
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("echo.json"), serde_json::to_string_pretty(&r)?)?;
    }
    Ok(())
}

fn write_outputs(dir: &Path, report: &RunReport) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let svg = report::render_svg(&report.points);
    std::fs::write(dir.join("results.csv"), report::render_csv(&report.points))?;
    std::fs::write(dir.join("results.json"), report::render_json(report)?)?;
    std::fs::write(dir.join("latency.svg"), &svg)?;
    std::fs::write(dir.join("report.html"), report::render_html(report, &svg))?;
    Ok(())
}

struct RunContext<'a> {
    args: &'a LoadgenArgs,
    workload: &'a Workload,
    cpus: Vec<usize>,
    admin_timeout: Duration,
    points: usize,
}

/// Everything one point spawned.
struct PointThreads {
    producers: Vec<Option<JoinHandle<ProducerOutcome>>>,
    producer_outcomes: Vec<ProducerOutcome>,
    consumers: Vec<(usize, JoinHandle<ConsumerOutcome>)>,
}

/// The shared facts of one running point.
struct PointRun {
    /// `(topic, partition, leader address)`.
    parts: Vec<(String, i32, String)>,
    starts: HashMap<(String, i32), i64>,
    timebase: Timebase,
    live: Arc<LiveStats>,
    t0: u64,
    warmup_end_ns: u64,
    end_ns: u64,
    count_mode: bool,
    targets: Arc<OnceLock<DrainTargets>>,
    drain_deadline: Arc<AtomicU64>,
    next_cpu: usize,
}

impl PointRun {
    /// CPUs are handed out round-robin over `--client-cpus`.
    fn cpu(&mut self, cpus: &[usize]) -> Option<usize> {
        let cpu = cpus.get(self.next_cpu % cpus.len().max(1)).copied();
        self.next_cpu += 1;
        cpu
    }
}

fn partitions_of(meta: &ClusterMeta, topics: &[String]) -> Result<Vec<(String, i32, String)>> {
    let mut out = Vec::new();
    for t in topics {
        let tm = meta
            .topics
            .get(t)
            .ok_or_else(|| anyhow!("topic {t} missing from metadata"))?;
        for p in tm.leaders.keys() {
            let (_, addr) = meta
                .leader_addr(t, *p)
                .ok_or_else(|| anyhow!("no live leader for {t}-{p}"))?;
            out.push((t.clone(), *p, addr.to_string()));
        }
    }
    Ok(out)
}

/// Each subscription reads every partition; its consumers split them.
fn spawn_consumers(
    ctx: &RunContext<'_>,
    run: &mut PointRun,
) -> Result<Vec<(usize, JoinHandle<ConsumerOutcome>)>> {
    let w = ctx.workload;
    let mut out = Vec::new();
    for sub in 0..w.subscriptions_per_topic {
        for c in 0..w.consumers_per_subscription {
            let mine: Vec<ConsumerPartition> = run
                .parts
                .iter()
                .enumerate()
                .filter(|(i, _)| i % w.consumers_per_subscription == c)
                .map(|(_, (t, p, addr))| ConsumerPartition {
                    topic: t.clone(),
                    partition: *p,
                    leader_addr: addr.clone(),
                    start_offset: run.starts.get(&(t.clone(), *p)).copied().unwrap_or(0),
                })
                .collect();
            if mine.is_empty() {
                continue;
            }
            let plan = ConsumerPlan {
                bootstrap: ctx.args.bootstrap.clone(),
                partitions: mine,
                client_id: ctx.args.client_id.clone(),
                cpu: run.cpu(&ctx.cpus),
                timebase: run.timebase,
                warmup_end_wall_ns: if run.count_mode {
                    0
                } else {
                    run.timebase.wall_ns(run.warmup_end_ns)
                },
                request_timeout: ctx.admin_timeout,
                targets: run.targets.clone(),
                drain_deadline_ns: run.drain_deadline.clone(),
            };
            let live = run.live.clone();
            let h = std::thread::Builder::new()
                .name(format!("loadgen-cons-{sub}-{c}"))
                .spawn(move || consumer::run_consumer(plan, live))?;
            out.push((sub, h));
        }
    }
    Ok(out)
}

/// `producersPerTopic` producers per topic share the rate and the message
/// count evenly.
fn spawn_producers(
    ctx: &RunContext<'_>,
    run: &mut PointRun,
    point: &SweepPoint,
) -> Result<Vec<Option<JoinHandle<ProducerOutcome>>>> {
    let w = ctx.workload;
    let n = (w.topics * w.producers_per_topic) as u64;
    let mut out = Vec::new();
    let mut index = 0u32;
    for topic in &w.topic_names() {
        for _ in 0..w.producers_per_topic {
            let i = index as u64;
            let plan = ProducerPlan {
                index,
                topic: topic.clone(),
                partitions: run
                    .parts
                    .iter()
                    .filter(|(t, _, _)| t == topic)
                    .map(|(_, p, a)| (*p, a.clone()))
                    .collect(),
                settings: point.settings.clone(),
                message_size: w.message_size,
                key_distributor: w.key_distributor,
                rate_per_sec: w.producer_rate.map(|r| r as f64 / n as f64),
                warmup_end_ns: run.warmup_end_ns,
                end_ns: run.end_ns,
                max_messages: w.messages.map(|m| m / n + u64::from(i < m % n)),
                client_id: ctx.args.client_id.clone(),
                cpu: run.cpu(&ctx.cpus),
                timebase: run.timebase,
                seed: 0x5eed ^ (i << 32) ^ point.index as u64,
            };
            let live = run.live.clone();
            let h = std::thread::Builder::new()
                .name(format!("loadgen-prod-{index}"))
                .spawn(move || producer::run_producer(plan, live))?;
            out.push(Some(h));
            index += 1;
        }
    }
    Ok(out)
}

fn run_point(
    ctx: &RunContext<'_>,
    boot: &mut SyncClient,
    point: &SweepPoint,
) -> Result<PointResult> {
    let w = ctx.workload;
    let meta = boot.metadata(&w.topic_names())?;
    let parts = partitions_of(&meta, &w.topic_names())?;
    let tp: Vec<(String, i32)> = parts.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
    let id = &ctx.args.client_id;
    let starts = client::list_offsets_all(&meta, &tp, LATEST_TIMESTAMP, id, ctx.admin_timeout)?;
    let timebase = Timebase::new();
    let t0 = timebase.now_ns();
    let count_mode = w.messages.is_some();
    // Count mode measures every record: the warm-up applies to timed runs.
    let warmup_ns = if count_mode {
        0
    } else {
        w.warmup.as_nanos() as u64
    };
    let mut run = PointRun {
        parts,
        starts,
        timebase,
        live: Arc::new(LiveStats::default()),
        t0,
        warmup_end_ns: t0 + warmup_ns,
        end_ns: t0 + warmup_ns + w.duration.as_nanos() as u64,
        count_mode,
        targets: Arc::new(OnceLock::new()),
        drain_deadline: Arc::new(AtomicU64::new(0)),
        next_cpu: 0,
    };
    let mut threads = PointThreads {
        consumers: spawn_consumers(ctx, &mut run)?,
        producers: spawn_producers(ctx, &mut run, point)?,
        producer_outcomes: Vec::new(),
    };
    watch_producers(ctx, point, &run, &mut threads)?;
    let produced: u64 = threads.producer_outcomes.iter().map(|o| o.acked).sum();
    check_something_produced(ctx, point, &run, &mut threads, produced)?;

    let ends = drain_targets(ctx, &meta, &tp, &run.starts, produced)?;
    let _ = run.targets.set(ends);
    run.drain_deadline.store(
        timebase.now_ns() + ctx.args.drain_timeout.as_nanos() as u64,
        Ordering::Relaxed,
    );
    let mut consumer_outcomes = Vec::new();
    for (sub, h) in threads.consumers.drain(..) {
        let o = h.join().map_err(|_| anyhow!("consumer thread panicked"))?;
        if let Some(f) = &o.fatal {
            eprintln!("loadgen: consumer of subscription {sub} failed: {f}");
        }
        consumer_outcomes.push((sub, o));
    }
    let result = aggregate(w, point, &threads.producer_outcomes, &consumer_outcomes);
    eprintln!(
        "loadgen: [{}/{}] {}: {:.0} msgs/s, {:.2} MB/s, p99 {:.3} ms, errors {}, consumed {}/{}",
        point.index + 1,
        ctx.points,
        result.label,
        result.msgs_per_sec,
        result.mb_per_sec,
        result.ack_latency.p99_us / 1_000.0,
        result.errors,
        result.consumed,
        result.produced
    );
    Ok(result)
}

/// Stops the run with the reasons when a producer failed or nothing at all
/// was acknowledged.
fn check_something_produced(
    ctx: &RunContext<'_>,
    point: &SweepPoint,
    run: &PointRun,
    threads: &mut PointThreads,
    produced: u64,
) -> Result<()> {
    let fatal: Vec<String> = threads
        .producer_outcomes
        .iter()
        .filter_map(|o| o.fatal.clone())
        .collect();
    if fatal.is_empty() && produced > 0 {
        return Ok(());
    }
    run.live.abort.store(true, Ordering::Relaxed);
    let _ = run.targets.set(Default::default());
    for (_, h) in threads.consumers.drain(..) {
        let _ = h.join();
    }
    let errors = merged_errors(&threads.producer_outcomes);
    bail!(
        "nothing could be produced to {} (point {}): {}{}",
        ctx.args.bootstrap,
        point.label(),
        if fatal.is_empty() {
            "no record was acknowledged".to_string()
        } else {
            fatal.join("; ")
        },
        if errors.is_empty() {
            String::new()
        } else {
            format!("; errors by code: {errors:?}")
        }
    )
}

/// Log end offsets for the consumers to reach, read once the logs hold what
/// was produced (with acks=0 the last writes may still be on the wire when
/// producers finish) or the drain timeout passed.
fn drain_targets(
    ctx: &RunContext<'_>,
    meta: &ClusterMeta,
    tp: &[(String, i32)],
    starts: &HashMap<(String, i32), i64>,
    produced: u64,
) -> Result<DrainTargets> {
    let give_up = std::time::Instant::now() + ctx.args.drain_timeout;
    loop {
        let id = &ctx.args.client_id;
        let ends = client::list_offsets_all(meta, tp, LATEST_TIMESTAMP, id, ctx.admin_timeout)?;
        let appended: i64 = ends
            .iter()
            .map(|(k, end)| end - starts.get(k).copied().unwrap_or(0))
            .sum();
        if appended >= produced as i64 || std::time::Instant::now() >= give_up {
            return Ok(ends);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Joins the producers that finished; a failed one stops the others.
fn reap_producers(run: &PointRun, threads: &mut PointThreads) -> Result<()> {
    for slot in threads.producers.iter_mut() {
        if slot.as_ref().is_some_and(|h| h.is_finished()) {
            if let Some(h) = slot.take() {
                let o = h.join().map_err(|_| anyhow!("producer thread panicked"))?;
                if o.fatal.is_some() {
                    run.live.abort.store(true, Ordering::Relaxed);
                }
                threads.producer_outcomes.push(o);
            }
        }
    }
    Ok(())
}

/// Prints a progress line each second (rewritten in place on a TTY, plain
/// lines otherwise) while producers run; aborts when nothing is being
/// acknowledged: after 10 s when every attempt so far failed, or after
/// `request.timeout.ms` of silence.
fn watch_producers(
    ctx: &RunContext<'_>,
    point: &SweepPoint,
    run: &PointRun,
    threads: &mut PointThreads,
) -> Result<()> {
    let live = &run.live;
    let tty = std::io::stderr().is_terminal();
    let stall_ns = 10_000_000_000u64.max(point.settings.request_timeout_ms as u64 * 1_000_000);
    let (mut last_acked, mut last_tick) = (0u64, run.t0);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        reap_producers(run, threads)?;
        if threads.producers.iter().all(Option::is_none) {
            break;
        }
        let now = run.timebase.now_ns();
        let acked = live.acked.load(Ordering::Relaxed);
        let elapsed = now.saturating_sub(run.t0);
        let failing =
            live.errors.load(Ordering::Relaxed) + live.retries.load(Ordering::Relaxed) > 0;
        if acked == 0 && (elapsed > stall_ns || (failing && elapsed > 10_000_000_000)) {
            live.abort.store(true, Ordering::Relaxed);
        }
        if now.saturating_sub(last_tick) < 1_000_000_000 {
            continue;
        }
        let p99 = live
            .ack_hist
            .lock()
            .map(|h| h.value_at_quantile_us(0.99) / 1_000.0)
            .unwrap_or(0.0);
        let phase = if now < run.warmup_end_ns {
            "warm-up"
        } else {
            "measure"
        };
        let line = format!(
            "[{}/{}] {} {phase} {:>5.1}s  {:>9.0} msgs/s  p99 {:.3} ms  errors {}  consumed {}",
            point.index + 1,
            ctx.points,
            point.label(),
            elapsed as f64 / 1e9,
            (acked - last_acked) as f64 / ((now - last_tick) as f64 / 1e9),
            p99,
            live.errors.load(Ordering::Relaxed),
            live.consumed.load(Ordering::Relaxed),
        );
        if tty {
            eprint!("\r\x1b[2K{line}");
            let _ = std::io::stderr().flush();
        } else {
            eprintln!("{line}");
        }
        (last_acked, last_tick) = (acked, now);
    }
    if tty {
        eprintln!();
    }
    Ok(())
}

fn merged_errors(outcomes: &[ProducerOutcome]) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for o in outcomes {
        for (k, v) in &o.errors_by_code {
            *m.entry(k.clone()).or_default() += v;
        }
    }
    m
}

fn aggregate(
    w: &Workload,
    point: &SweepPoint,
    producers: &[ProducerOutcome],
    consumers: &[(usize, ConsumerOutcome)],
) -> PointResult {
    let mut ack = LatencyHistogram::new();
    let mut intended = LatencyHistogram::new();
    for o in producers {
        ack.add(&o.ack_hist);
        intended.add(&o.ack_intended_hist);
    }
    let measured: u64 = producers.iter().map(|o| o.measured_acked).sum();
    let secs = if w.messages.is_some() {
        let first = producers
            .iter()
            .filter_map(|o| o.first_measured_ns)
            .min()
            .unwrap_or(0);
        let last = producers.iter().map(|o| o.last_ack_ns).max().unwrap_or(0);
        (last.saturating_sub(first) as f64 / 1e9).max(1e-3)
    } else {
        w.duration.as_secs_f64().max(1e-3)
    };
    let produced: u64 = producers.iter().map(|o| o.acked).sum();
    let mut e2e = LatencyHistogram::new();
    let mut r = PointResult {
        index: point.index,
        label: point.label(),
        acks: acks_label(point.settings.acks).to_string(),
        settings: point.settings.clone(),
        idempotent: producers.iter().any(|o| o.idempotent),
        measured_secs: secs,
        measured_records: measured,
        msgs_per_sec: measured as f64 / secs,
        mb_per_sec: measured as f64 * w.message_size as f64 / secs / 1e6,
        errors: producers.iter().map(|o| o.failed).sum(),
        errors_by_code: merged_errors(producers),
        retries: producers.iter().map(|o| o.retries).sum(),
        ack_latency: ack.summary(),
        ack_latency_intended: (w.producer_rate.is_some()).then(|| intended.summary()),
        e2e_latency: None,
        produced,
        ..PointResult::default()
    };
    let subs = consumers.iter().map(|(s, _)| *s + 1).max().unwrap_or(0);
    for sub in 0..subs {
        let mut unique = 0;
        for (_, o) in consumers.iter().filter(|(s, _)| *s == sub) {
            r.consumed += o.consumed;
            r.duplicates += o.duplicates;
            r.offset_gaps += o.offset_gaps;
            r.out_of_order += o.out_of_order;
            unique += o.unique;
            e2e.add(&o.e2e_hist);
        }
        r.missing += produced.saturating_sub(unique);
    }
    if !consumers.is_empty() {
        r.e2e_latency = Some(e2e.summary());
    }
    r
}
