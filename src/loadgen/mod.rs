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
//!     --duration 10s --warmup 3s --fractions 10,50,90 --out results/curves
//! shardlog loadgen --workload workloads/1-topic-16-partitions-1kb.yaml --duration 30s
//! shardlog loadgen --rate 50000 --keys 1000 --compression lz4 --client-cpus 1
//! shardlog loadgen --flat-out --sweep acks=1,all   # one flat-out run per setting
//! shardlog loadgen --echo-rtt --duration 5s        # loopback RTT reference
//! ```
//!
//! Modes: by default each setting of the sweep becomes a curve (the
//! trade-off explorer, [`explore`]): a flat-out run gives its max rate, then
//! fixed-rate runs at `--fractions` of it (10,25,50,75,90%) give latency vs
//! achieved throughput. `--flat-out` (or `--messages N`) runs each setting
//! once flat out, `--rate N` (or an OMB workload's `producerRate`) once at
//! that rate. The report folder (`--out`, default
//! `results/loadgen-<UTC time>/`) is named on the last line.
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
//! | [`curve`] | pure | explorer: run mode, rate fractions, fixed-rate schedule, curves, ETA |
//! | [`curve_report`] | pure | explorer: curve plots (main, per acks level), table, JSON, HTML |
//! | [`explore`] | drv | explorer: max rate then fixed-rate runs per setting |
//! | [`point`] | io | one run: spawn, watch (progress line), drain, aggregate |
//! | [`results_dir`] | io | default report folder `results/<kind>-<time>/` |
//! | [`client`] | io | connections, framing, pipelining, admin requests |
//! | [`tls`] | io | transport: PLAINTEXT or SSL (rustls over the blocking socket) |
//! | [`producer`] | io | producer threads |
//! | [`consumer`] | io | consumer threads, end-to-end latency, verification; batch-header scan and in-place FetchResponse walk |
//! | [`consume_only`] | io | `--consume-only`: consume existing topics from the earliest offsets, throughput |
//! | [`echo`] | io | loopback TCP echo RTT reference |

pub mod accumulator;
pub mod args;
pub mod bench;
pub mod broker_metrics;
pub mod client;
pub mod consume_only;
pub mod consumer;
pub mod curve;
pub mod curve_report;
pub mod echo;
pub mod explore;
pub mod flame;
pub mod frame;
pub mod omb;
pub mod partitioner;
pub mod point;
pub mod producer;
pub mod report;
pub mod results_dir;
pub mod sasl;
pub mod sasl_login;
pub mod scrape;
pub mod sweep;
pub mod tls;
pub mod wire;

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::io::clock::{Clock, SystemClock};
pub use args::LoadgenArgs;
use args::{parse_cpu_list, ProducerSettings, Workload};
use client::SyncClient;
use curve::{Eta, RunMode};
use curve_report::Percentile;
use explore::Sweep;
use report::RunReport;
use results_dir::utc_timestamp;
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
        let available = crate::io::affinity::allowed_cpus();
        if let Some(bad) = cpus.iter().find(|c| !available.contains(c)) {
            bail!("--client-cpus: CPU {bad} is not available (available: {available:?})");
        }
    }
    if args.echo_rtt {
        return run_echo(&args, cpus.as_deref());
    }
    let security = security(&args)?;
    if args.consume_only {
        return consume_only::run(&args, &security, cpus.as_deref().unwrap_or(&[]));
    }
    run_sweep(&args, &security, cpus.unwrap_or_default())
}

/// `--security-protocol` with the `--ssl-*` files and `--sasl-*` login it
/// needs.
fn security(args: &LoadgenArgs) -> Result<tls::Security> {
    let sasl = args
        .security_protocol
        .to_ascii_uppercase()
        .starts_with("SASL_");
    let given = args.sasl_mechanism.is_some() || args.sasl_username.is_some();
    if given && !sasl {
        bail!("--sasl-* flags need --security-protocol SASL_PLAINTEXT or SASL_SSL");
    }
    let login = match sasl {
        true => Some(sasl_login::SaslLogin::new(
            args.sasl_mechanism.as_deref(),
            args.sasl_username.as_deref(),
            args.sasl_password.as_deref(),
        )?),
        false => None,
    };
    tls::Security::new(
        &args.security_protocol,
        &tls::SslFiles {
            ca: args.ssl_ca_location.clone(),
            certificate: args.ssl_certificate_location.clone(),
            key: args.ssl_key_location.clone(),
        },
        login,
    )
}

/// The produce sweep: curves, flat-out or fixed-rate runs per point,
/// against one broker or each `--compare` target.
fn run_sweep(args: &LoadgenArgs, security: &tls::Security, cpus: Vec<usize>) -> Result<()> {
    let workload = resolve_workload(args)?;
    let base = ProducerSettings::from_args(args).map_err(|e| anyhow!(e))?;
    let axes = args
        .sweep
        .iter()
        .map(|s| sweep::parse_axis(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!(e))?;
    let points = sweep::points(&base, &axes).map_err(|e| anyhow!(e))?;
    let mode = curve::resolve_mode(
        args.flat_out,
        args.fractions.as_deref(),
        workload.producer_rate,
        workload.messages.is_some(),
    )
    .map_err(|e| anyhow!(e))?;
    let percentile = Percentile::parse(&args.plot_percentile).map_err(|e| anyhow!(e))?;
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => {
            let started = utc_timestamp(SystemClock::new().wall_ms());
            results_dir::default_out_dir("loadgen", &started)
        }
    };
    let targets = args::targets(&args.bootstrap, &args.compare).map_err(|e| anyhow!(e))?;
    if targets.len() > 1 && !matches!(mode, RunMode::Curve { .. }) {
        bail!("--compare draws curves: it cannot go with --flat-out, --rate or --messages");
    }
    let admin_timeout = Duration::from_millis(base.request_timeout_ms.clamp(1_000, 30_000) as u64);
    // Every target is reached before the first run, so a typo fails fast.
    let mut boots = Vec::with_capacity(targets.len());
    for t in &targets {
        boots.push(connect_target(
            args,
            security,
            &workload,
            &t.bootstrap,
            admin_timeout,
        )?);
    }
    let target_args: Vec<LoadgenArgs> = targets
        .iter()
        .map(|t| LoadgenArgs {
            bootstrap: t.bootstrap.clone(),
            ..args.clone()
        })
        .collect();
    announce(points.len(), &mode, &targets, &workload);
    let flame = match args.flamegraph_pid.is_empty() {
        true => None,
        false => Some(flame::Recorder::new(args.flamegraph_pid.clone(), &out)?),
    };
    let mut runs: Vec<explore::Target<'_>> = targets
        .iter()
        .zip(&target_args)
        .zip(boots)
        .map(|((t, args), boot)| explore::Target {
            name: t.name.clone(),
            sweep: Sweep {
                args,
                workload: &workload,
                cpus: cpus.clone(),
                admin_timeout,
                security,
                flame: flame.as_ref(),
                broker_metrics: if targets.len() == 1 || t.name.as_deref() == Some("shardlog") {
                    &args.broker_metrics
                } else {
                    &[]
                },
            },
            boot,
        })
        .collect();
    match mode {
        RunMode::Curve { fractions_pct } => {
            explore::run_curves(&mut runs, &points, &fractions_pct, percentile, &out)?
        }
        RunMode::FlatOut | RunMode::Fixed { .. } => {
            for t in &mut runs {
                run_flat(&t.sweep, &mut t.boot, &points, &out)?;
            }
        }
    }
    if !args.no_results_line {
        println!("results: {}", out.display());
    }
    Ok(())
}

/// The opening line: what runs against which broker(s).
fn announce(points: usize, mode: &RunMode, targets: &[args::Target], workload: &Workload) {
    eprintln!(
        "loadgen: {} point(s), {} against {}; workload {:?}: {} topic(s) x {} partition(s), {} B, rate {}",
        points,
        mode_text(mode),
        targets
            .iter()
            .map(|t| t.bootstrap.as_str())
            .collect::<Vec<_>>()
            .join(" and "),
        workload.name,
        workload.topics,
        workload.partitions_per_topic,
        workload.message_size,
        workload
            .producer_rate
            .map_or("max".to_string(), |r| format!("{r}/s"))
    );
}

/// Connects to `bootstrap` and creates the workload's topics if absent.
fn connect_target(
    args: &LoadgenArgs,
    security: &tls::Security,
    workload: &Workload,
    bootstrap: &str,
    admin_timeout: Duration,
) -> Result<SyncClient> {
    let mut boot = client::connect_bootstrap(bootstrap, security, &args.client_id, admin_timeout)
        .context("nothing can be produced")?;
    client::ensure_topics(
        &mut boot,
        &workload.topic_names(),
        workload.partitions_per_topic,
        workload.replication_factor,
        security,
        &args.client_id,
        admin_timeout,
    )?;
    Ok(boot)
}

/// One run per point, flat out or at the workload's fixed rate.
fn run_flat(
    sweep: &Sweep<'_>,
    boot: &mut SyncClient,
    points: &[SweepPoint],
    out: &Path,
) -> Result<()> {
    let mut eta = Eta::new(points.len(), sweep.planned_run_secs());
    let mut report = RunReport {
        bootstrap: sweep.args.bootstrap.clone(),
        workload: sweep.workload.clone(),
        points: Vec::with_capacity(points.len()),
    };
    let rate = sweep.workload.producer_rate;
    for point in points {
        match sweep.run_once(boot, point, rate, point.label(), &mut eta) {
            Ok(r) => report.points.push(r),
            Err(e) => {
                // Keep what the finished points measured.
                if !report.points.is_empty() {
                    let _ = publish(&report, out);
                    eprintln!("loadgen: stopped after {} point(s)", report.points.len());
                }
                return Err(e);
            }
        }
    }
    publish(&report, out)
}

/// The table on stdout and the report files in `dir`.
fn publish(report: &RunReport, dir: &Path) -> Result<()> {
    print!("{}", report::render_table(&report.points));
    write_outputs(dir, report)?;
    eprintln!(
        "loadgen: wrote results.csv, results.json, latency.svg, report.html to {}",
        dir.display()
    );
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

fn mode_text(mode: &RunMode) -> String {
    match mode {
        RunMode::Curve { fractions_pct } => {
            format!("each a curve (max rate, then {fractions_pct:?}% of it)")
        }
        RunMode::FlatOut => "each run flat out".into(),
        RunMode::Fixed { rate } => format!("each run at {rate} msgs/s"),
    }
}
