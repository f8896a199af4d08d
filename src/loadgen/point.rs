//! `[io]` One run of the load generator against the broker: spawn the
//! consumers and producers of a workload at one producer setting (flat out,
//! or at the workload's fixed rate), watch them with a live progress line,
//! wait for the consumers to drain, and aggregate what they measured into a
//! [`PointResult`].

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use super::args::{acks_label, LoadgenArgs, Workload};
use super::client::{self, ClusterMeta, SyncClient, Timebase, LATEST_TIMESTAMP};
use super::consumer::{self, ConsumerOutcome, ConsumerPartition, ConsumerPlan, DrainTargets};
use super::curve::{format_eta, Eta};
use super::producer::{self, LiveStats, ProducerOutcome, ProducerPlan};
use super::report::PointResult;
use super::sweep::SweepPoint;
use super::tls::Security;
use crate::histogram::LatencyHistogram;

/// What one run needs: the flags, the workload (its `producer_rate` is
/// this run's fixed rate, `None` flat out), and where it sits in the sweep.
pub struct RunContext<'a> {
    pub args: &'a LoadgenArgs,
    pub workload: &'a Workload,
    pub cpus: Vec<usize>,
    pub admin_timeout: Duration,
    pub security: &'a Security,
    /// Shown on the progress line: the setting and, for a fixed-rate run,
    /// its fraction and target rate.
    pub label: String,
    /// The sweep's progress so far (runs done and their wall times).
    pub eta: Eta,
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

pub fn partitions_of(meta: &ClusterMeta, topics: &[String]) -> Result<Vec<(String, i32, String)>> {
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
                security: ctx.security.clone(),
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
                security: ctx.security.clone(),
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

/// Runs `point` once: spawn, watch, drain, aggregate.
pub fn run_point(
    ctx: &RunContext<'_>,
    boot: &mut SyncClient,
    point: &SweepPoint,
) -> Result<PointResult> {
    let w = ctx.workload;
    let meta = boot.metadata(&w.topic_names())?;
    let parts = partitions_of(&meta, &w.topic_names())?;
    let tp: Vec<(String, i32)> = parts.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
    let id = &ctx.args.client_id;
    let starts = client::list_offsets_all(
        &meta,
        &tp,
        LATEST_TIMESTAMP,
        ctx.security,
        id,
        ctx.admin_timeout,
    )?;
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
        "loadgen: [{}/{}] {}: {:.0} msgs/s, {:.2} MB/s, p99 {:.3} ms{}, errors {}, consumed {}/{}, sweep ETA {}",
        ctx.eta.current_run(),
        ctx.eta.runs_total(),
        ctx.label,
        result.msgs_per_sec,
        result.mb_per_sec,
        result.ack_latency_intended.unwrap_or(result.ack_latency).p99_us / 1_000.0,
        if result.ack_latency_intended.is_some() {
            " (from intended send)"
        } else {
            ""
        },
        result.errors,
        result.consumed,
        result.produced,
        // This run counts as done.
        format_eta(ctx.eta.remaining_secs(f64::INFINITY)),
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
        let ends = client::list_offsets_all(
            meta,
            tp,
            LATEST_TIMESTAMP,
            ctx.security,
            id,
            ctx.admin_timeout,
        )?;
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
        // One live line per run: rewritten each second on a terminal,
        // a new line every 5 s into a log.
        let every_ns = if tty { 1_000_000_000 } else { 5_000_000_000 };
        if now.saturating_sub(last_tick) < every_ns {
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
            "[{}/{}] {} {phase} {:>5.1}s  {:>9.0} msgs/s  p99 {:.3} ms  errors {}  consumed {}  ETA {}",
            ctx.eta.current_run(),
            ctx.eta.runs_total(),
            ctx.label,
            elapsed as f64 / 1e9,
            (acked - last_acked) as f64 / ((now - last_tick) as f64 / 1e9),
            p99,
            live.errors.load(Ordering::Relaxed),
            live.consumed.load(Ordering::Relaxed),
            format_eta(ctx.eta.remaining_secs(elapsed as f64 / 1e9)),
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
