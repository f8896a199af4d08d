//! `[io]` `shardlog bench`: the one-command benchmark (`cargo run --release
//! -- bench`). It starts a broker child process (this same executable,
//! `broker --override ...`) on embedded metadata in a temporary directory and
//! a free loopback port, with the broker's data shards pinned to some cores
//! and the load generator pinned to the others; runs a load generator sweep
//! against it (by default the trade-off explorer: per setting its max rate,
//! then fixed-rate runs at fractions of it, see `loadgen::explore`); writes
//! the report folder (each broker runs with a `/metrics` listener,
//! `shardlog.metrics.listener` on a free loopback port, which the load
//! generator scrapes around every run for the report's broker side:
//! `loadgen --broker-metrics`); then stops the broker with SIGTERM
//! and checks its exit status (SIGKILL only after `--stop-timeout`, with a
//! warning).
//!
//! ```text
//! cargo run --release -- bench                        # ~5 min on a 2-core host
//! shardlog bench --quick                              # ~1 min
//! shardlog bench --flat-out --quick                   # one flat-out run per setting
//! shardlog bench --fractions 25,50,75,90,95 --sweep acks=1,all
//! shardlog bench --broker-cpus 0-1 --client-cpus 2-3 --sweep acks=1,all --duration 20s
//! shardlog bench --broker-override shardlog.flush.every.append=true --sweep acks=all
//! shardlog bench --brokers 3 --sweep acks=1,all       # ZooKeeper + 3 brokers, RF=3
//! shardlog bench --quick --flamegraph                 # + flamegraphs/ per run
//! shardlog bench --bootstrap 10.0.0.5:9092            # an external broker
//! shardlog bench --compare kafka=127.0.0.1:9093       # its curves beside shardlog's
//! shardlog bench --security-protocol SSL              # the same sweep over TLS
//! shardlog bench -- --compression lz4 --keys 1000     # more loadgen flags after `--`
//! ```
//!
//! The results folder (default `results/bench-<UTC timestamp>/`, `--out`)
//! holds loadgen's `results.csv`, `results.json`, `latency.svg`,
//! `report.html` (and for curves `curves.md`, `latency-acks-*.svg`), plus
//! `bench.json` (host, core split, each broker's command and exit and its
//! `zerocopy:` shutdown line) and `broker.log` (`--brokers N`: `broker-1.log`
//! ... and `zookeeper.log`; see `bench::cluster`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

use child::{free_loopback_addr, SignalGuard, WorkDir};
pub use child::{parse_readiness_line, tail, BrokerChild, BrokerExit};

use super::args::{parse_cpu_list, parse_duration, LoadgenArgs};
use super::results_dir::{self, utc_timestamp};
use crate::io::clock::{Clock, SystemClock};

/// `shardlog bench` flags.
#[derive(Debug, Clone, clap::Args)]
#[command(about = "Start a pinned broker, sweep it with the load generator, write a report folder")]
pub struct BenchArgs {
    /// Short run (~1 min on 2 cores): acks=1,all x linger.ms=0,5 x
    /// batch.size=131072, each a curve of max rate then 10,50,90% of it,
    /// 2 s runs after 1 s warm-up (with --flat-out: 3 s points).
    #[arg(long)]
    pub quick: bool,
    /// One flat-out run per setting (the pre-curve bench) instead of a
    /// curve per setting.
    #[arg(long, conflicts_with = "fractions")]
    pub flat_out: bool,
    /// Percentages of each setting's max rate to run at (default
    /// 10,25,50,75,90; --quick 10,50,90).
    #[arg(long, value_name = "PCT,PCT,...")]
    pub fractions: Option<String>,
    /// Results folder (default: results/bench-<UTC timestamp>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the broker's temporary directory (log dirs and broker.log).
    #[arg(long)]
    pub keep: bool,
    /// Brokers to start: 1 (default) on embedded metadata; N > 1 a local
    /// ZooKeeper-mode cluster (ZooKeeper from Debian's `zookeeper`
    /// package, started by bench) whose topics have RF = min(N, 3) and
    /// min.insync.replicas = RF - 1, so acks=all waits for a follower.
    /// The brokers take the broker CPUs in turn, one shard each.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=9))]
    pub brokers: u16,
    /// Record a CPU flamegraph of the broker(s) during each run's measured
    /// window into <out>/flamegraphs/ (perf with DWARF stacks, inferno).
    #[arg(long)]
    pub flamegraph: bool,
    /// Bench an external broker at HOST:PORT instead of starting one.
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap: Option<String>,
    /// PLAINTEXT or SSL (librdkafka's security.protocol). SSL: bench makes
    /// a throwaway CA and broker certificate with the `openssl` CLI, starts
    /// the broker(s) with `listeners=SSL://...`, a PEM keystore, the CA as
    /// truststore and `security.inter.broker.protocol=SSL`, and the load
    /// generator connects over TLS. With --bootstrap, give the external
    /// broker's CA with --ssl-ca-location.
    #[arg(long, default_value = "PLAINTEXT", value_name = "PROTOCOL")]
    pub security_protocol: String,
    /// With --bootstrap and --security-protocol SSL: the PEM file of the CA
    /// that signed the external broker's certificate.
    #[arg(long, requires = "bootstrap", value_name = "PEM")]
    pub ssl_ca_location: Option<PathBuf>,
    /// CPUs of the broker's data shards (`shardlog.cpus`, one shard each).
    /// Default: the first half of the cores (core 0 on a 2-core host).
    #[arg(long, value_name = "LIST")]
    pub broker_cpus: Option<String>,
    /// CPUs of the load generator's threads. Default: the cores the broker
    /// does not use (core 1 on a 2-core host).
    #[arg(long, value_name = "LIST")]
    pub client_cpus: Option<String>,
    /// Measured duration of each run (curves: default 5s, --quick 2s;
    /// --flat-out: 10s, --quick 3s).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Warm-up before each run (default 1s; --flat-out 2s, --quick 1s).
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Sweep axis passed to loadgen (repeatable); any --sweep replaces the
    /// default sweep (acks=1,all x linger.ms=0,5 x batch.size=16384,1048576).
    #[arg(long = "sweep", value_name = "KEY=V1,V2,...")]
    pub sweep: Vec<String>,
    /// Another broker whose curves go into the same report,
    /// NAME=HOST:PORT (repeatable; not with --flat-out), e.g.
    /// kafka=127.0.0.1:9093 beside the broker bench starts (named
    /// `shardlog`; with --bootstrap, named after its address).
    #[arg(
        long = "compare",
        value_name = "NAME=HOST:PORT",
        conflicts_with = "flat_out"
    )]
    pub compare: Vec<String>,
    /// Topic to produce to (created with --partitions if absent).
    #[arg(long, default_value = "bench")]
    pub topic: String,
    /// Partitions of the bench topic.
    #[arg(long, default_value_t = 6)]
    pub partitions: i32,
    /// Record value size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub message_size: usize,
    /// Extra broker config, Kafka key names (repeatable), e.g.
    /// shardlog.flush.every.append=true.
    #[arg(long = "broker-override", value_name = "KEY=VALUE")]
    pub broker_overrides: Vec<String>,
    /// Broker executable to start (default: this executable), e.g. another
    /// build for an A/B comparison.
    #[arg(long, value_name = "PATH")]
    pub broker_bin: Option<PathBuf>,
    /// How long the broker may take to print its readiness line.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub startup_timeout: Duration,
    /// How long the broker may take to exit after SIGTERM before SIGKILL.
    #[arg(long, value_parser = parse_duration, default_value = "15s")]
    pub stop_timeout: Duration,
    /// Further `shardlog loadgen` flags, after `--`.
    #[arg(last = true, value_name = "LOADGEN FLAGS")]
    pub loadgen_args: Vec<String>,
}

#[derive(clap::Parser)]
#[command(name = "shardlog bench", bin_name = "shardlog bench")]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

#[derive(clap::Parser)]
#[command(name = "shardlog loadgen", bin_name = "shardlog loadgen")]
struct LoadgenCli {
    #[command(flatten)]
    args: LoadgenArgs,
}

/// Parses `bench` arguments (the first item is the program name); prints
/// help or the error and exits like any clap program.
pub fn parse_args_from<I, T>(iter: I) -> BenchArgs
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    <Cli as clap::Parser>::parse_from(iter).args
}

/// `--quick`'s fractions of each setting's max rate: three points per curve.
pub const QUICK_FRACTIONS: &str = "10,50,90";

/// The default sweep: 8 settings, each a curve of 6 runs of 5 s + 1 s
/// (~5 minutes on a 2-core host); `--quick` 4 settings of 4 runs of 2 s +
/// 1 s (~1 minute).
pub fn default_sweep(quick: bool) -> Vec<String> {
    let batch = if quick {
        "batch.size=131072"
    } else {
        "batch.size=16384,1048576"
    };
    vec!["acks=1,all".into(), "linger.ms=0,5".into(), batch.into()]
}

/// What a bench run does once the flags are resolved against the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchPlan {
    /// `None` with `--bootstrap`: no broker is started.
    pub broker_cpus: Option<Vec<usize>>,
    /// Brokers bench starts (0 with `--bootstrap`).
    pub brokers: usize,
    pub client_cpus: Option<Vec<usize>>,
    pub sweep: Vec<String>,
    pub duration: Duration,
    pub warmup: Duration,
    /// `None`: one flat-out run per setting; else the curve's fractions
    /// (`""` = loadgen's default).
    pub fractions: Option<String>,
    /// `PLAINTEXT` or `SSL`.
    pub security_protocol: String,
    pub warnings: Vec<String>,
}

/// Splits the cores: the broker gets the first half (at least one), the load
/// generator the rest. A 1-core host shares its core.
pub fn default_core_split(available: &[usize]) -> (Vec<usize>, Vec<usize>) {
    match available {
        [] => (vec![0], vec![0]),
        [only] => (vec![*only], vec![*only]),
        _ => {
            let n = (available.len() / 2).max(1);
            (available[..n].to_vec(), available[n..].to_vec())
        }
    }
}

fn without(all: &[usize], taken: &[usize]) -> Vec<usize> {
    all.iter().copied().filter(|c| !taken.contains(c)).collect()
}

fn check_cpus(flag: &str, cpus: &[usize], available: &[usize]) -> Result<(), String> {
    match cpus.iter().find(|c| !available.contains(c)) {
        Some(bad) => Err(format!(
            "{flag}: CPU {bad} is not available (available: {available:?})"
        )),
        None => Ok(()),
    }
}

/// Resolves the core split, sweep and durations. `available` lists the
/// CPUs this process may run on.
pub fn resolve_plan(args: &BenchArgs, available: &[usize]) -> Result<BenchPlan, String> {
    let given = |flag: &str, v: &Option<String>| -> Result<Option<Vec<usize>>, String> {
        let Some(s) = v else { return Ok(None) };
        let cpus = parse_cpu_list(s).map_err(|e| format!("{flag}: {e}"))?;
        check_cpus(flag, &cpus, available)?;
        Ok(Some(cpus))
    };
    let security_protocol = args.security_protocol.to_ascii_uppercase();
    match security_protocol.as_str() {
        "PLAINTEXT" if args.ssl_ca_location.is_some() => {
            return Err("--ssl-ca-location needs --security-protocol SSL".into())
        }
        "PLAINTEXT" => {}
        "SSL" if args.bootstrap.is_some() && args.ssl_ca_location.is_none() => {
            return Err(
                "--security-protocol SSL with --bootstrap needs --ssl-ca-location (the external broker's CA)"
                    .into(),
            )
        }
        "SSL" => {}
        other => {
            return Err(format!(
                "--security-protocol {other}: bench speaks PLAINTEXT and SSL"
            ))
        }
    }
    let broker = given("--broker-cpus", &args.broker_cpus)?;
    let client = given("--client-cpus", &args.client_cpus)?;
    let mut warnings = Vec::new();
    let (broker_cpus, client_cpus) = if args.bootstrap.is_some() {
        if broker.is_some()
            || args.broker_bin.is_some()
            || !args.broker_overrides.is_empty()
            || args.brokers > 1
            || args.flamegraph
        {
            return Err(
                "--broker-cpus, --broker-bin, --broker-override, --brokers and --flamegraph need brokers started by bench (no --bootstrap)"
                    .into(),
            );
        }
        // An external broker's cores are unknown: pin only when asked.
        (None, client)
    } else {
        let (db, dc) = default_core_split(available);
        let (b, c) = match (broker, client) {
            (Some(b), Some(c)) => (b, c),
            (Some(b), None) => {
                let rest = without(available, &b);
                let c = if rest.is_empty() { b.clone() } else { rest };
                (b, c)
            }
            (None, Some(c)) => {
                let rest = without(available, &c);
                let b = if rest.is_empty() { c.clone() } else { rest };
                (b, c)
            }
            (None, None) => (db, dc),
        };
        if b.iter().any(|x| c.contains(x)) {
            warnings.push(format!(
                "broker CPUs {b:?} and load generator CPUs {c:?} overlap: the two compete for cores"
            ));
        }
        (Some(b), Some(c))
    };
    let sweep = if args.sweep.is_empty() {
        default_sweep(args.quick)
    } else {
        args.sweep.clone()
    };
    let ((d, w), fractions) = match (args.flat_out, args.quick) {
        (true, true) => ((3, 1), None),
        (true, false) => ((10, 2), None),
        (false, true) => ((2, 1), Some(QUICK_FRACTIONS.to_string())),
        (false, false) => ((5, 1), Some(String::new())),
    };
    let fractions = fractions.map(|f| args.fractions.clone().unwrap_or(f));
    Ok(BenchPlan {
        brokers: if broker_cpus.is_some() {
            usize::from(args.brokers)
        } else {
            0
        },
        broker_cpus,
        client_cpus,
        sweep,
        duration: args.duration.unwrap_or(Duration::from_secs(d)),
        warmup: args.warmup.unwrap_or(Duration::from_secs(w)),
        fractions,
        security_protocol,
        warnings,
    })
}

/// `1,3` style list for flags and broker config.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn duration_flag(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// The `shardlog loadgen` command line the bench runs (program name first).
pub fn loadgen_argv(
    args: &BenchArgs,
    plan: &BenchPlan,
    bootstrap: &str,
    out: &Path,
) -> Vec<String> {
    let mut v: Vec<String> = [
        "shardlog loadgen",
        "--bootstrap",
        bootstrap,
        "--topic",
        &args.topic,
        "--partitions",
        &args.partitions.to_string(),
        "--message-size",
        &args.message_size.to_string(),
        "--duration",
        &duration_flag(plan.duration),
        "--warmup",
        &duration_flag(plan.warmup),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("--out".into());
    v.push(out.display().to_string());
    v.push("--no-results-line".into());
    if plan.security_protocol != "PLAINTEXT" {
        v.push("--security-protocol".into());
        v.push(plan.security_protocol.clone());
    }
    if let Some(ca) = &args.ssl_ca_location {
        v.push("--ssl-ca-location".into());
        v.push(ca.display().to_string());
    }
    if plan.brokers > 1 {
        v.push("--replication-factor".into());
        v.push(cluster::replication_factor(plan.brokers).to_string());
    }
    match plan.fractions.as_deref() {
        None => v.push("--flat-out".into()),
        Some("") => {}
        Some(f) => {
            v.push("--fractions".into());
            v.push(f.to_string());
        }
    }
    if let Some(c) = &plan.client_cpus {
        v.push("--client-cpus".into());
        v.push(format_cpu_list(c));
    }
    for s in &plan.sweep {
        v.push("--sweep".into());
        v.push(s.clone());
    }
    if !args.compare.is_empty() {
        // The broker bench started is `shardlog`; an external one keeps
        // its address as its name.
        let own = match plan.broker_cpus {
            Some(_) => format!("shardlog={bootstrap}"),
            None => bootstrap.to_string(),
        };
        for c in std::iter::once(&own).chain(&args.compare) {
            v.push("--compare".into());
            v.push(c.clone());
        }
    }
    v.extend(args.loadgen_args.iter().cloned());
    v
}

/// The broker's `--override` values: listener (`protocol` is PLAINTEXT or
/// SSL, also the listener's name), log dir, pinned shards, topic
/// auto-creation, log limits, then the user's overrides (which win, coming
/// last).
pub fn broker_overrides(
    protocol: &str,
    addr: &SocketAddr,
    log_dir: &Path,
    cpus: &[usize],
    budget: &disk::LogBudget,
    extra: &[String],
) -> Vec<String> {
    let mut v = vec![
        format!("listeners={protocol}://{addr}"),
        format!("log.dirs={}", log_dir.display()),
        format!("shardlog.shards={}", cpus.len().max(1)),
        format!("shardlog.cpus={}", format_cpu_list(cpus)),
        // Kafka's default is true; stated so a config file cannot turn it
        // off under the bench, whose topic may need creating.
        "auto.create.topics.enable=true".into(),
        // A sweep writes hundreds of MB/s for minutes: retention checked
        // every second, within limits sized from the free space
        // (`disk::log_budget`), and a deleted segment's file removed a
        // second later (Kafka's default log.segment.delete.delay.ms is a
        // minute: at 300 MB/s that is 18 GB of `.deleted` files), so a
        // benchmark never fills the disk.
        "log.retention.check.interval.ms=1000".into(),
        "log.segment.delete.delay.ms=1000".into(),
    ];
    v.extend(budget.overrides());
    v.extend(extra.iter().cloned());
    v
}

/// The counters of the broker's shutdown line
/// `zerocopy: sendmsg=N sendfile=N copied=N glommio=N` (last one wins).
pub fn parse_zerocopy_line(log: &str) -> Option<(String, BTreeMap<String, u64>)> {
    let line = log.lines().rev().find(|l| l.contains("zerocopy:"))?;
    let rest = line.split("zerocopy:").nth(1)?;
    let counters = rest
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim_end_matches(',').parse().ok()?)))
        .collect();
    Some((line.trim().to_string(), counters))
}

/// Facts recorded next to the results.
#[derive(Debug, Serialize)]
struct BenchRecord {
    started_utc: String,
    host: HostFacts,
    plan: BenchPlan,
    bootstrap: String,
    /// The brokers' temporary directory (removed at the end unless `--keep`).
    work_dir: Option<PathBuf>,
    /// `--brokers` > 1: the ZooKeeper bench started, and how it ended.
    zookeeper: Option<String>,
    zookeeper_exit: Option<String>,
    /// Every broker bench started (none with `--bootstrap`).
    brokers: Vec<BrokerRecord>,
    loadgen_command: Vec<String>,
    loadgen_error: Option<String>,
}

/// One broker bench started: its command, how it ended, its `zerocopy:`
/// shutdown line, and its log file in the results folder.
#[derive(Debug, Serialize)]
struct BrokerRecord {
    /// `broker.id` (`None`: the one broker on embedded metadata).
    id: Option<usize>,
    address: String,
    /// Its `shardlog.metrics.listener` (the load generator's
    /// `--broker-metrics`).
    metrics: String,
    command: Vec<String>,
    log: String,
    exit: Option<String>,
    zerocopy_line: Option<String>,
    zerocopy: Option<BTreeMap<String, u64>>,
}

#[derive(Debug, Serialize)]
struct HostFacts {
    hostname: String,
    cpus: Vec<usize>,
    kernel: String,
}

fn host_facts(cpus: &[usize]) -> HostFacts {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    HostFacts {
        hostname: read("/proc/sys/kernel/hostname"),
        cpus: cpus.to_vec(),
        kernel: read("/proc/sys/kernel/osrelease"),
    }
}

fn run_loadgen(argv: &[String]) -> Result<()> {
    let parsed = <LoadgenCli as clap::Parser>::try_parse_from(argv)
        .map_err(|e| anyhow!("loadgen flags {:?}: {e}", &argv[1..]))?;
    super::run(parsed.args)
}

/// Entry point of `shardlog bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let clock = SystemClock::new();
    let available = crate::io::affinity::allowed_cpus();
    let plan = resolve_plan(&args, &available).map_err(|e| anyhow!(e))?;
    for w in &plan.warnings {
        eprintln!("bench: warning: {w}");
    }
    let started = utc_timestamp(clock.wall_ms());
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| results_dir::default_out_dir("bench", &started));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut record = BenchRecord {
        started_utc: started,
        host: host_facts(&available),
        plan: plan.clone(),
        bootstrap: String::new(),
        work_dir: None,
        zookeeper: None,
        zookeeper_exit: None,
        brokers: Vec::new(),
        loadgen_command: Vec::new(),
        loadgen_error: None,
    };
    let result = match &args.bootstrap {
        Some(b) => {
            record.bootstrap = b.clone();
            record.loadgen_command = loadgen_argv(&args, &plan, b, &out);
            let r = run_loadgen(&record.loadgen_command);
            record.loadgen_error = r.as_ref().err().map(|e| format!("{e:#}"));
            r
        }
        None => run_with_broker(&args, &plan, &out, &clock, &mut record),
    };
    std::fs::write(
        out.join("bench.json"),
        serde_json::to_string_pretty(&record)?,
    )
    .with_context(|| format!("writing {}", out.join("bench.json").display()))?;
    match &result {
        Ok(()) => println!("results: {}", out.display()),
        Err(_) => eprintln!(
            "bench: what was written (bench.json, broker.log, any finished points) is in {}",
            out.display()
        ),
    }
    result
}

/// One broker `start_broker` started: the child, its Kafka listener's
/// address, its metrics listener's, and its command line.
struct StartedBroker {
    child: BrokerChild,
    addr: SocketAddr,
    metrics: SocketAddr,
    command: Vec<String>,
}

/// Starts one broker (`name` names its log and data dirs) with its
/// `/metrics` listener on a loopback port (scraped around each run for the
/// report's broker side), retrying on new ports when a chosen one was
/// taken. `settings` go before the user's overrides.
fn start_broker(
    args: &BenchArgs,
    plan: &BenchPlan,
    cpus: &[usize],
    work: &WorkDir,
    name: &str,
    budget: &disk::LogBudget,
    settings: &[String],
) -> Result<StartedBroker> {
    let exe = match &args.broker_bin {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("locating the shardlog executable")?,
    };
    let log_dir = work.path.join(format!("{name}-data"));
    let mut last_err = None;
    for _ in 0..3 {
        let addr = free_loopback_addr()?;
        let metrics = free_loopback_addr()?;
        let extra: Vec<String> = std::iter::once(format!("shardlog.metrics.listener={metrics}"))
            .chain(settings.iter().cloned())
            .chain(args.broker_overrides.iter().cloned())
            .collect();
        let mut cmd = vec!["broker".to_string()];
        for o in broker_overrides(
            &plan.security_protocol,
            &addr,
            &log_dir,
            cpus,
            budget,
            &extra,
        ) {
            cmd.push("--override".into());
            cmd.push(o);
        }
        eprintln!("bench: starting {} {}", exe.display(), cmd.join(" "));
        let log = work.path.join(format!("{name}.log"));
        let mut broker = BrokerChild::spawn(&exe, &cmd, &log, addr)?;
        match broker.wait_ready(args.startup_timeout) {
            Ok(bound) => {
                return Ok(StartedBroker {
                    child: broker,
                    addr: bound,
                    metrics,
                    command: cmd,
                })
            }
            Err(e) if broker.log().contains("in use") => last_err = Some(e),
            Err(e) => return Err(e.context(format!("{name} did not start"))),
        }
    }
    Err(last_err
        .unwrap_or_else(|| anyhow!("no attempt made"))
        .context(format!("{name} did not start (port taken three times)")))
}

/// The brokers bench started, in start order, with their record entries.
struct Started {
    zookeeper: Option<cluster::ZooKeeper>,
    brokers: Vec<(BrokerChild, BrokerRecord)>,
    /// SSL: the CA the load generator trusts.
    ca: Option<PathBuf>,
}

/// Starts the one broker on embedded metadata, or ZooKeeper and
/// `plan.brokers` ZooKeeper-mode brokers on the broker CPUs in turn.
fn start_brokers(
    args: &BenchArgs,
    plan: &BenchPlan,
    work: &WorkDir,
    record: &mut BenchRecord,
) -> Result<Started> {
    let cpus = plan.broker_cpus.clone().unwrap_or_else(|| vec![0]);
    // Every broker's replicas of the bench topic share the work dir's disk.
    let replicas = u64::try_from(args.partitions.max(1)).unwrap_or(1)
        * u64::try_from(cluster::replication_factor(plan.brokers)).unwrap_or(1);
    let free = disk::free_bytes(&work.path)?;
    let budget = disk::log_budget(free, replicas);
    eprintln!(
        "bench: {} MiB free under {}: each of {replicas} partition replica(s) keeps at most {} MiB (log.retention.bytes), in {} MiB segments",
        free >> 20,
        work.path.display(),
        budget.retention_bytes >> 20,
        budget.segment_bytes >> 20
    );
    let tls = match plan.security_protocol.as_str() {
        "SSL" => Some(certs::BenchTls::create(&work.path)?),
        _ => None,
    };
    // The only listener is SSL, so the inter-broker listener is too, even
    // for one broker (KafkaConfig: `inter.broker.listener.name` must name
    // an advertised listener).
    let keystore: Vec<String> = tls
        .iter()
        .flat_map(|t| {
            let mut v = t.keystore_settings();
            v.extend(t.inter_broker_settings());
            v
        })
        .collect();
    let ca = tls.as_ref().map(|t| t.ca.clone());
    let entry = |id: Option<usize>, name: &str, b: &StartedBroker| BrokerRecord {
        id,
        address: b.addr.to_string(),
        metrics: b.metrics.to_string(),
        command: b.command.clone(),
        log: format!("{name}.log"),
        exit: None,
        zerocopy_line: None,
        zerocopy: None,
    };
    if plan.brokers <= 1 {
        let b = start_broker(args, plan, &cpus, work, "broker", &budget, &keystore)?;
        let rec = entry(None, "broker", &b);
        return Ok(Started {
            zookeeper: None,
            brokers: vec![(b.child, rec)],
            ca,
        });
    }
    let zk = cluster::ZooKeeper::start(&work.path, args.startup_timeout)?;
    record.zookeeper = Some(zk.address.clone());
    let mut started = Started {
        zookeeper: Some(zk),
        brokers: Vec::new(),
        ca: ca.clone(),
    };
    let zk_addr = record.zookeeper.clone().unwrap_or_default();
    for id in 1..=plan.brokers {
        let cpu = [cpus[(id - 1) % cpus.len()]];
        let name = format!("broker-{id}");
        let mut settings = cluster::cluster_overrides(id, plan.brokers, &zk_addr);
        settings.extend(keystore.iter().cloned());
        let b = start_broker(args, plan, &cpu, work, &name, &budget, &settings)?;
        let rec = entry(Some(id), &name, &b);
        started.brokers.push((b.child, rec));
    }
    let bootstrap = bootstrap_of(&started);
    let security = super::tls::Security::new(
        &plan.security_protocol,
        &super::tls::SslFiles {
            ca,
            ..Default::default()
        },
        None,
    )?;
    cluster::wait_for_brokers(&bootstrap, &security, plan.brokers, args.startup_timeout)?;
    Ok(started)
}

fn bootstrap_of(started: &Started) -> String {
    started
        .brokers
        .iter()
        .map(|(_, r)| r.address.clone())
        .collect::<Vec<_>>()
        .join(",")
}

fn run_with_broker(
    args: &BenchArgs,
    plan: &BenchPlan,
    out: &Path,
    clock: &SystemClock,
    record: &mut BenchRecord,
) -> Result<()> {
    let work = WorkDir::create(args.keep, clock)?;
    record.work_dir = Some(work.path.clone());
    let mut started = start_brokers(args, plan, &work, record)?;
    let mut pids: Vec<u32> = started.brokers.iter().map(|(c, _)| c.pid()).collect();
    pids.extend(started.zookeeper.as_ref().map(|z| z.pid()));
    let work_to_remove = (!args.keep).then(|| work.path.clone());
    let guard = SignalGuard::install(pids.clone(), work_to_remove, args.stop_timeout)?;
    let bootstrap = bootstrap_of(&started);
    let cpus = plan.broker_cpus.clone().unwrap_or_else(|| vec![0]);
    eprintln!(
        "bench: {} broker(s) (pids {pids:?}) ready on {bootstrap}: {} on CPU(s) {}; load generator on CPU(s) {}; work dir {}",
        started.brokers.len(),
        if plan.brokers > 1 { "one shard each, in turn" } else { "one shard per CPU" },
        format_cpu_list(&cpus),
        plan.client_cpus.as_deref().map_or("any".into(), format_cpu_list),
        work.path.display(),
    );
    record.bootstrap = bootstrap.clone();
    record.loadgen_command = loadgen_argv(args, plan, &bootstrap, out);
    if let Some(ca) = &started.ca {
        record.loadgen_command.push("--ssl-ca-location".into());
        record.loadgen_command.push(ca.display().to_string());
    }
    for (_, rec) in &started.brokers {
        record.loadgen_command.push("--broker-metrics".into());
        record.loadgen_command.push(rec.metrics.clone());
    }
    if args.flamegraph {
        for (child, _) in &started.brokers {
            record.loadgen_command.push("--flamegraph-pid".into());
            record.loadgen_command.push(child.pid().to_string());
        }
    }
    let loadgen = run_loadgen(&record.loadgen_command);
    // Whether a broker died under load decides how a loadgen error reads.
    let died: Vec<String> = started
        .brokers
        .iter_mut()
        .filter_map(|(c, r)| Some(format!("{} exited during the run ({})", r.log, c.exited()?)))
        .collect();
    // The signal thread must not race this stop for the same children.
    drop(guard);
    let mut failures = Vec::new();
    let mut logs = String::new();
    for (child, rec) in &mut started.brokers {
        let exit = child.stop(args.stop_timeout);
        let log = child.log();
        let _ = std::fs::write(out.join(&rec.log), &log);
        report_zerocopy(&log, rec);
        rec.exit = Some(match &exit {
            Ok(x) => x.to_string(),
            Err(e) => format!("{e:#}"),
        });
        let failed = match exit {
            Ok(BrokerExit::Stopped(s)) if s.success() => None,
            // Already warned; the measurements stand.
            Ok(BrokerExit::Killed) => None,
            Ok(BrokerExit::Stopped(s)) => Some(format!("exited with {s} after SIGTERM")),
            Ok(BrokerExit::ExitedEarly(s)) => {
                Some(format!("exited ({s}) before the bench stopped it"))
            }
            Err(e) => Some(format!("{e:#}")),
        };
        if let Some(f) = failed {
            failures.push(format!("{}: {f}", rec.log));
        }
        logs.push_str(&format!("--- {} (tail)\n{}\n", rec.log, tail(&log, 20)));
    }
    if let Some(zk) = &mut started.zookeeper {
        let exit = zk.stop(args.stop_timeout);
        record.zookeeper_exit = Some(match &exit {
            Ok(x) => x.to_string(),
            Err(e) => format!("{e:#}"),
        });
        let _ = std::fs::copy(&zk.log_path, out.join("zookeeper.log"));
    }
    record.brokers = started.brokers.into_iter().map(|(_, r)| r).collect();
    record.loadgen_error = loadgen.as_ref().err().map(|e| format!("{e:#}"));
    if let Err(e) = loadgen {
        let what = if died.is_empty() {
            "the broker(s) were running".to_string()
        } else {
            died.join("; ")
        };
        bail!("the load generator failed: {e:#}\n{what}; broker output:\n{logs}");
    }
    if !failures.is_empty() {
        bail!("{}; broker output:\n{logs}", failures.join("; "));
    }
    Ok(())
}

fn report_zerocopy(log: &str, record: &mut BrokerRecord) {
    match parse_zerocopy_line(log) {
        Some((line, counters)) => {
            eprintln!("bench: {} {line}", record.log.trim_end_matches(".log"));
            record.zerocopy_line = Some(line);
            record.zerocopy = Some(counters);
        }
        None => {
            eprintln!("bench: zerocopy: n/a (the broker printed no `zerocopy:` line at shutdown)")
        }
    }
}

pub(crate) mod certs;
mod child;
mod cluster;
mod disk;
#[cfg(test)]
mod tests;
