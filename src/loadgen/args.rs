//! `[pure]` Command line of `shardlog loadgen` and the typed settings it
//! resolves to: producer settings under Kafka producer key names, and the
//! workload shape (topics, partitions, clients, rate, durations).

use std::path::PathBuf;
use std::time::Duration;

use kafka_protocol::records::Compression;
use serde::Serialize;

/// `shardlog loadgen` flags. Producer flags carry the Kafka producer key they
/// set; `--set key=value` sets any supported key and `--sweep key=v1,v2`
/// makes that key an axis of the sweep.
#[derive(Debug, Clone, clap::Args)]
#[command(
    about = "Kafka producer/consumer load generator with acks x linger.ms x batch.size sweeps"
)]
pub struct LoadgenArgs {
    /// bootstrap.servers: comma-separated host:port list.
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub bootstrap: String,
    /// security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (TLS
    /// 1.2/1.3; the broker's certificate must name the host dialled, as
    /// librdkafka's default ssl.endpoint.identification.algorithm=https
    /// checks).
    #[arg(long, default_value = "PLAINTEXT")]
    pub security_protocol: String,
    /// ssl.ca.location: PEM file of the CA(s) the broker's certificate
    /// chain must end in (SSL).
    #[arg(long)]
    pub ssl_ca_location: Option<PathBuf>,
    /// ssl.certificate.location: the client's PEM certificate chain, for
    /// brokers with ssl.client.auth=required/requested (SSL).
    #[arg(long, requires = "ssl_key_location")]
    pub ssl_certificate_location: Option<PathBuf>,
    /// ssl.key.location: the client's unencrypted PEM private key (SSL).
    #[arg(long, requires = "ssl_certificate_location")]
    pub ssl_key_location: Option<PathBuf>,
    /// sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL_*).
    #[arg(long)]
    pub sasl_mechanism: Option<String>,
    /// sasl.username (SASL_*).
    #[arg(long, requires = "sasl_password")]
    pub sasl_username: Option<String>,
    /// sasl.password (SASL_*).
    #[arg(long, requires = "sasl_username")]
    pub sasl_password: Option<String>,
    /// OpenMessaging Benchmark workload YAML describing the workload;
    /// other workload flags override its fields.
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// Topic name, or prefix when --topics > 1 (`<topic>-<i>`).
    #[arg(long, default_value = "loadgen")]
    pub topic: String,
    /// Number of topics (created if absent).
    #[arg(long)]
    pub topics: Option<usize>,
    /// Partitions per topic (used when creating topics).
    #[arg(long)]
    pub partitions: Option<i32>,
    /// Replication factor for created topics.
    #[arg(long, default_value_t = 1)]
    pub replication_factor: i16,
    /// Record value size in bytes (at least 20: send timestamp, producer, sequence).
    #[arg(long)]
    pub message_size: Option<usize>,
    /// Key cardinality: 0 = null keys (sticky partitioner), N = N distinct
    /// keys used round-robin (murmur2 partitioner).
    #[arg(long)]
    pub keys: Option<u64>,
    /// Producer threads (each with its own connections) per topic.
    #[arg(long)]
    pub producers: Option<usize>,
    /// Consumer threads per subscription; 0 disables consuming.
    #[arg(long)]
    pub consumers: Option<usize>,
    /// Fixed total rate in messages/s (latency measured from the intended
    /// send time too); without it producers run flat out. With --echo-rtt:
    /// a fixed-rate echo instead of the closed loop.
    #[arg(long)]
    pub rate: Option<u64>,
    /// Measured duration of each sweep point (e.g. 10s, 500ms, 2m).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Warm-up before measuring each point.
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Stop each point after this many messages in total instead of by time.
    #[arg(long)]
    pub messages: Option<u64>,
    /// acks: 0, 1 or all (-1).
    #[arg(long, default_value = "all")]
    pub acks: String,
    /// linger.ms
    #[arg(long)]
    pub linger_ms: Option<i64>,
    /// batch.size
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// buffer.memory
    #[arg(long)]
    pub buffer_memory: Option<usize>,
    /// max.in.flight.requests.per.connection
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// compression.type: none, gzip, snappy, lz4, zstd.
    #[arg(long)]
    pub compression: Option<String>,
    /// enable.idempotence (default: true with acks=all, as Kafka >= 3.0).
    #[arg(long)]
    pub enable_idempotence: Option<bool>,
    /// retries
    #[arg(long)]
    pub retries: Option<u32>,
    /// delivery.timeout.ms
    #[arg(long)]
    pub delivery_timeout_ms: Option<i64>,
    /// request.timeout.ms
    #[arg(long)]
    pub request_timeout_ms: Option<i64>,
    /// Any supported producer key: --set linger.ms=2 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Sweep axis: --sweep acks=0,1,all (repeatable; cartesian product).
    #[arg(long = "sweep", value_name = "KEY=V1,V2,...")]
    pub sweep: Vec<String>,
    /// Report folder for results.csv, results.json, latency.svg,
    /// report.html (and, for curves, curves.md and latency-acks-*.svg);
    /// default results/loadgen-<UTC timestamp>/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// One flat-out run per setting instead of the latency/throughput
    /// curve (max rate, then fixed-rate runs at --fractions of it).
    #[arg(long, conflicts_with = "fractions")]
    pub flat_out: bool,
    /// Curve: percentages of each setting's max rate to run at
    /// (default 10,25,50,75,90).
    #[arg(long, value_name = "PCT,PCT,...")]
    pub fractions: Option<String>,
    /// Curve: the latency percentile the plots show: p50, p99 or p99.9
    /// (results.json and the table carry all three).
    #[arg(long, default_value = "p99")]
    pub plot_percentile: String,
    /// Curve: compare brokers in one report, NAME=HOST:PORT[,HOST:PORT...]
    /// (repeatable; replaces --bootstrap): the whole sweep runs against each
    /// in turn and every curve is named after its broker.
    #[arg(long = "compare", value_name = "NAME=BOOTSTRAP")]
    pub compare: Vec<String>,
    /// Record a CPU flamegraph of this process (repeatable: the brokers)
    /// during each run's measured window, into <out>/flamegraphs/ (perf
    /// with DWARF stacks, rendered by inferno; `bench --flamegraph` passes
    /// the brokers it starts).
    #[arg(long, value_name = "PID")]
    pub flamegraph_pid: Vec<u32>,
    /// A broker's metrics listener HOST:PORT (`shardlog.metrics.listener`;
    /// repeatable, one per broker): scraped before and after every run,
    /// whose report then carries the broker side (Produce time split
    /// p50/p99, purgatory size, broker CPU) over that run; without it, or
    /// when a listener does not answer, those columns read n/a. With
    /// --compare it applies to the target named `shardlog` (or the only
    /// one). `shardlog bench` passes its brokers'.
    #[arg(long = "broker-metrics", value_name = "HOST:PORT")]
    pub broker_metrics: Vec<String>,
    /// Do not print the closing `results: DIR` line (`bench` prints its own).
    #[arg(long, hide = true)]
    pub no_results_line: bool,
    /// Pin client threads to these CPUs (e.g. "1" or "0,1" or "0-3").
    #[arg(long)]
    pub client_cpus: Option<String>,
    /// How long consumers may take to catch up after producing stops.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub drain_timeout: Duration,
    /// client.id sent in request headers.
    #[arg(long, default_value = "shardlog-loadgen")]
    pub client_id: String,
    /// Measure loopback TCP echo round trips instead (latency reference).
    #[arg(long)]
    pub echo_rtt: bool,
    /// Consume the existing topic(s) from the earliest offsets up to the log
    /// end offsets read at the start, without producing (stops early at
    /// --messages records or after --duration); prints consume throughput
    /// and writes consume.json with --out.
    #[arg(long)]
    pub consume_only: bool,
    /// With --consume-only: decode every record and check offsets are dense
    /// (default: count records from batch headers and check each batch's
    /// CRC-32C, which keeps the client cheap).
    #[arg(long, requires = "consume_only")]
    pub verify_records: bool,
    /// Echo message size in bytes.
    #[arg(long, default_value_t = 64)]
    pub echo_size: usize,
}

/// One broker a sweep runs against: its name in a `--compare` report
/// (`None` alone) and its `bootstrap.servers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: Option<String>,
    pub bootstrap: String,
}

/// The brokers to run against: `--bootstrap` alone, or every `--compare
/// NAME=BOOTSTRAP` (a bare BOOTSTRAP is named after itself), names unique.
pub fn targets(bootstrap: &str, compare: &[String]) -> Result<Vec<Target>, String> {
    if compare.is_empty() {
        return Ok(vec![Target {
            name: None,
            bootstrap: bootstrap.to_string(),
        }]);
    }
    let mut out: Vec<Target> = Vec::new();
    for spec in compare {
        let (name, addr) = match spec.split_once('=') {
            Some((n, a)) => (n.trim(), a.trim()),
            None => (spec.trim(), spec.trim()),
        };
        if name.is_empty() || addr.is_empty() {
            return Err(format!("--compare expects NAME=HOST:PORT, got {spec:?}"));
        }
        if out.iter().any(|t| t.name.as_deref() == Some(name)) {
            return Err(format!("--compare names {name:?} twice"));
        }
        out.push(Target {
            name: Some(name.to_string()),
            bootstrap: addr.to_string(),
        });
    }
    Ok(out)
}

/// Parses `10s`, `500ms`, `250us`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 10s, 500ms, 2m"))?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("invalid duration unit {other:?} in {s:?}")),
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("duration {s:?} out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a CPU list: `1`, `0,2`, `0-3`, `0-1,3`.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("invalid CPU list {s:?}");
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if a > b || b - a > 4096 {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() {
        return Err(format!("empty CPU list {s:?}"));
    }
    Ok(cpus)
}

/// `compression.type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressionType {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl CompressionType {
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "none" => Self::None,
            "gzip" => Self::Gzip,
            "snappy" => Self::Snappy,
            "lz4" => Self::Lz4,
            "zstd" => Self::Zstd,
            other => return Err(format!("unknown compression.type {other:?}")),
        })
    }
    pub fn codec(self) -> Compression {
        match self {
            Self::None => Compression::None,
            Self::Gzip => Compression::Gzip,
            Self::Snappy => Compression::Snappy,
            Self::Lz4 => Compression::Lz4,
            Self::Zstd => Compression::Zstd,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }
}

/// Parses `acks`: `0`, `1`, `all` or `-1`.
pub fn parse_acks(s: &str) -> Result<i16, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "0" => Ok(0),
        "1" => Ok(1),
        "all" | "-1" => Ok(-1),
        other => Err(format!("invalid acks {other:?}: expected 0, 1 or all")),
    }
}

/// Label of an acks value as Kafka users write it.
pub fn acks_label(acks: i16) -> &'static str {
    match acks {
        0 => "0",
        1 => "1",
        _ => "all",
    }
}

/// Producer configuration of one run point, Kafka producer key names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProducerSettings {
    /// `acks`, default all (-1) since Kafka 3.0.
    pub acks: i16,
    /// `linger.ms`, default 5 since Kafka 4.0 (KIP-1030).
    pub linger_ms: i64,
    /// `batch.size`, default 16384.
    pub batch_size: usize,
    /// `buffer.memory`, default 33554432.
    pub buffer_memory: usize,
    /// `max.in.flight.requests.per.connection`, default 5.
    pub max_in_flight_requests_per_connection: usize,
    /// `compression.type`, default none.
    pub compression_type: CompressionType,
    /// `enable.idempotence` as set explicitly; `None` = Kafka's default
    /// (on unless acks conflicts).
    pub enable_idempotence: Option<bool>,
    /// `retries`, default 2147483647.
    pub retries: u32,
    /// `delivery.timeout.ms`, default 120000.
    pub delivery_timeout_ms: i64,
    /// `request.timeout.ms`, default 30000.
    pub request_timeout_ms: i64,
    /// `max.request.size`, default 1048576.
    pub max_request_size: usize,
    /// `retry.backoff.ms`, default 100.
    pub retry_backoff_ms: i64,
    /// `max.block.ms`, default 60000: how long a send may wait for
    /// `buffer.memory` before it fails.
    pub max_block_ms: i64,
}

impl Default for ProducerSettings {
    fn default() -> Self {
        Self {
            acks: -1,
            linger_ms: 5,
            batch_size: 16_384,
            buffer_memory: 33_554_432,
            max_in_flight_requests_per_connection: 5,
            compression_type: CompressionType::None,
            enable_idempotence: None,
            retries: i32::MAX as u32,
            delivery_timeout_ms: 120_000,
            request_timeout_ms: 30_000,
            max_request_size: 1_048_576,
            retry_backoff_ms: 100,
            max_block_ms: 60_000,
        }
    }
}

fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("invalid value {value:?} for {key}"))
}

impl ProducerSettings {
    /// Producer keys `--set` and `--sweep` accept.
    pub const KEYS: &'static [&'static str] = &[
        "acks",
        "linger.ms",
        "batch.size",
        "buffer.memory",
        "max.in.flight.requests.per.connection",
        "compression.type",
        "enable.idempotence",
        "retries",
        "delivery.timeout.ms",
        "request.timeout.ms",
        "max.request.size",
        "retry.backoff.ms",
        "max.block.ms",
    ];

    /// Sets one producer key from its string form.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key.trim() {
            "acks" => self.acks = parse_acks(value)?,
            "linger.ms" => self.linger_ms = num(key, value)?,
            "batch.size" => self.batch_size = num(key, value)?,
            "buffer.memory" => self.buffer_memory = num(key, value)?,
            "max.in.flight.requests.per.connection" => {
                self.max_in_flight_requests_per_connection = num(key, value)?
            }
            "compression.type" => self.compression_type = CompressionType::parse(value)?,
            "enable.idempotence" => self.enable_idempotence = Some(num(key, value)?),
            "retries" => self.retries = num(key, value)?,
            "delivery.timeout.ms" => self.delivery_timeout_ms = num(key, value)?,
            "request.timeout.ms" => self.request_timeout_ms = num(key, value)?,
            "max.request.size" => self.max_request_size = num(key, value)?,
            "retry.backoff.ms" => self.retry_backoff_ms = num(key, value)?,
            "max.block.ms" => self.max_block_ms = num(key, value)?,
            other => {
                return Err(format!(
                    "unsupported producer key {other:?}; supported: {}",
                    Self::KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// Whether the producer is idempotent: Kafka >= 3.0 enables it by
    /// default unless `acks` is not `all`.
    pub fn idempotent(&self) -> bool {
        self.enable_idempotence.unwrap_or(self.acks == -1)
    }

    /// Kafka's producer config checks (`ProducerConfig` post-processing).
    pub fn validate(&self) -> Result<(), String> {
        if self.enable_idempotence == Some(true) {
            if self.acks != -1 {
                return Err("enable.idempotence=true requires acks=all".into());
            }
            if self.max_in_flight_requests_per_connection > 5 {
                return Err(
                    "enable.idempotence=true requires max.in.flight.requests.per.connection <= 5"
                        .into(),
                );
            }
        }
        if self.max_in_flight_requests_per_connection == 0 {
            return Err("max.in.flight.requests.per.connection must be >= 1".into());
        }
        if self.linger_ms < 0 || self.delivery_timeout_ms <= 0 || self.request_timeout_ms <= 0 {
            return Err(
                "linger.ms, delivery.timeout.ms and request.timeout.ms must be positive".into(),
            );
        }
        if self.batch_size > self.buffer_memory {
            return Err(format!(
                "batch.size {} exceeds buffer.memory {}",
                self.batch_size, self.buffer_memory
            ));
        }
        Ok(())
    }

    /// Applies the explicit flags of `args` over the defaults.
    pub fn from_args(args: &LoadgenArgs) -> Result<Self, String> {
        let mut s = Self {
            acks: parse_acks(&args.acks)?,
            ..Self::default()
        };
        if let Some(v) = args.linger_ms {
            s.linger_ms = v;
        }
        if let Some(v) = args.batch_size {
            s.batch_size = v;
        }
        if let Some(v) = args.buffer_memory {
            s.buffer_memory = v;
        }
        if let Some(v) = args.max_in_flight {
            s.max_in_flight_requests_per_connection = v;
        }
        if let Some(v) = &args.compression {
            s.compression_type = CompressionType::parse(v)?;
        }
        s.enable_idempotence = args.enable_idempotence.or(s.enable_idempotence);
        if let Some(v) = args.retries {
            s.retries = v;
        }
        if let Some(v) = args.delivery_timeout_ms {
            s.delivery_timeout_ms = v;
        }
        if let Some(v) = args.request_timeout_ms {
            s.request_timeout_ms = v;
        }
        for kv in &args.set {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("--set expects KEY=VALUE, got {kv:?}"))?;
            s.set(k, v)?;
        }
        Ok(s)
    }
}

/// How record keys are chosen (OMB's `KeyDistributorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum KeyDistributor {
    /// Null keys: the sticky partitioner spreads records.
    NoKey,
    /// Cycle through N distinct keys.
    RoundRobin(u64),
    /// A pseudo-random key out of N for every record.
    Random(u64),
}

/// What to run: the workload shape, independent of producer settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub name: String,
    pub topic_prefix: String,
    pub topics: usize,
    pub partitions_per_topic: i32,
    pub replication_factor: i16,
    pub message_size: usize,
    pub key_distributor: KeyDistributor,
    pub producers_per_topic: usize,
    /// Total messages/s across all producers; `None` = as fast as possible.
    pub producer_rate: Option<u64>,
    pub subscriptions_per_topic: usize,
    pub consumers_per_subscription: usize,
    pub duration: Duration,
    pub warmup: Duration,
    /// Stop after this many messages in total instead of by duration.
    pub messages: Option<u64>,
}

/// Smallest value that holds the payload header: 8-byte send timestamp,
/// 4-byte producer index, 8-byte per-producer sequence.
pub const MIN_MESSAGE_SIZE: usize = 20;

impl Default for Workload {
    fn default() -> Self {
        Self {
            name: "cli".into(),
            topic_prefix: "loadgen".into(),
            topics: 1,
            partitions_per_topic: 1,
            replication_factor: 1,
            message_size: 1024,
            key_distributor: KeyDistributor::NoKey,
            producers_per_topic: 1,
            producer_rate: None,
            subscriptions_per_topic: 1,
            consumers_per_subscription: 1,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(2),
            messages: None,
        }
    }
}

impl Workload {
    /// Applies the workload flags given on the command line over `self`
    /// (the defaults or an OMB workload).
    pub fn override_with(mut self, args: &LoadgenArgs) -> Result<Self, String> {
        if args.workload.is_none() || args.topic != "loadgen" {
            self.topic_prefix = args.topic.clone();
        }
        if let Some(v) = args.topics {
            self.topics = v;
        }
        if let Some(v) = args.partitions {
            self.partitions_per_topic = v;
        }
        self.replication_factor = args.replication_factor;
        if let Some(v) = args.message_size {
            self.message_size = v;
        }
        match args.keys {
            Some(0) => self.key_distributor = KeyDistributor::NoKey,
            Some(n) => self.key_distributor = KeyDistributor::RoundRobin(n),
            None => {}
        }
        if let Some(v) = args.producers {
            self.producers_per_topic = v;
        }
        if let Some(v) = args.consumers {
            self.consumers_per_subscription = v;
        }
        if let Some(v) = args.rate {
            self.producer_rate = (v > 0).then_some(v);
        }
        if let Some(v) = args.duration {
            self.duration = v;
        }
        if let Some(v) = args.warmup {
            self.warmup = v;
        }
        if args.messages.is_some() {
            self.messages = args.messages;
        }
        self.validate()?;
        Ok(self)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.message_size < MIN_MESSAGE_SIZE {
            return Err(format!(
                "message size {} is below the {MIN_MESSAGE_SIZE}-byte payload header",
                self.message_size
            ));
        }
        if self.topics == 0 || self.partitions_per_topic <= 0 || self.producers_per_topic == 0 {
            return Err("topics, partitions and producers must be at least 1".into());
        }
        if self.messages == Some(0) {
            return Err("--messages must be at least 1".into());
        }
        Ok(())
    }

    /// Topic names: the prefix alone for one topic, `<prefix>-<i>` otherwise.
    pub fn topic_names(&self) -> Vec<String> {
        if self.topics == 1 {
            vec![self.topic_prefix.clone()]
        } else {
            (0..self.topics)
                .map(|i| format!("{}-{i}", self.topic_prefix))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: LoadgenArgs,
    }

    fn parse(v: &[&str]) -> LoadgenArgs {
        Cli::try_parse_from(std::iter::once("loadgen").chain(v.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn durations_parse_with_units() {
        let table = [
            ("10s", 10_000_000),
            ("500ms", 500_000),
            ("250us", 250),
            ("2m", 120_000_000),
            ("1h", 3_600_000_000),
            ("3", 3_000_000),
            ("1.5s", 1_500_000),
        ];
        for (s, us) in table {
            assert_eq!(parse_duration(s).unwrap().as_micros(), us, "{s}");
        }
        for bad in ["", "s", "10x", "-1s", "1e999"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert_eq!(parse_cpu_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert!(parse_cpu_list("").is_err());
    }

    #[test]
    fn producer_flags_and_set_override_kafka_defaults() {
        let a = parse(&[
            "--acks",
            "1",
            "--linger-ms",
            "20",
            "--set",
            "batch.size=131072",
            "--set",
            "compression.type=zstd",
        ]);
        let s = ProducerSettings::from_args(&a).unwrap();
        assert_eq!(s.acks, 1);
        assert_eq!(s.linger_ms, 20);
        assert_eq!(s.batch_size, 131_072);
        assert_eq!(s.compression_type, CompressionType::Zstd);
        assert_eq!(s.buffer_memory, 33_554_432);
        assert!(!s.idempotent(), "acks=1 turns default idempotence off");
        let d = ProducerSettings::default();
        assert!(d.idempotent());
        assert!(ProducerSettings::from_args(&parse(&["--set", "nope=1"])).is_err());
    }

    #[test]
    fn explicit_idempotence_conflicting_with_acks_is_rejected() {
        let mut s = ProducerSettings::default();
        s.set("acks", "1").unwrap();
        s.set("enable.idempotence", "true").unwrap();
        assert!(s.validate().is_err());
        s.set("acks", "all").unwrap();
        assert!(s.validate().is_ok());
        s.set("max.in.flight.requests.per.connection", "6").unwrap();
        assert!(s.validate().is_err());
    }

    #[test]
    fn workload_flags_override_defaults() {
        let a = parse(&[
            "--partitions",
            "6",
            "--keys",
            "100",
            "--rate",
            "5000",
            "--duration",
            "3s",
            "--warmup",
            "500ms",
            "--topics",
            "2",
        ]);
        let w = Workload::default().override_with(&a).unwrap();
        assert_eq!(w.partitions_per_topic, 6);
        assert_eq!(w.key_distributor, KeyDistributor::RoundRobin(100));
        assert_eq!(w.producer_rate, Some(5000));
        assert_eq!(w.duration, Duration::from_secs(3));
        assert_eq!(w.warmup, Duration::from_millis(500));
        assert_eq!(w.topic_names(), vec!["loadgen-0", "loadgen-1"]);
        let too_small = parse(&["--message-size", "8"]);
        assert!(Workload::default().override_with(&too_small).is_err());
    }

    #[test]
    fn compare_targets_are_named_and_unique() {
        let one = targets("h:1", &[]).unwrap();
        assert_eq!(
            one,
            vec![Target {
                name: None,
                bootstrap: "h:1".into()
            }]
        );
        let two = targets(
            "ignored:1",
            &["shardlog=127.0.0.1:9092".into(), "k:9093,k:9094".into()],
        )
        .unwrap();
        assert_eq!(two[0].name.as_deref(), Some("shardlog"));
        assert_eq!(two[0].bootstrap, "127.0.0.1:9092");
        assert_eq!(
            two[1].name.as_deref(),
            Some("k:9093,k:9094"),
            "named after itself"
        );
        for bad in [&["=h:1"][..], &["a="], &["a=h:1", "a=h:2"]] {
            let bad: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            assert!(targets("h:1", &bad).is_err(), "{bad:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_flag_values_never_panic(s in ".{0,24}") {
            let _ = parse_duration(&s);
            let _ = parse_cpu_list(&s);
            let _ = parse_acks(&s);
            let _ = CompressionType::parse(&s);
            for key in ProducerSettings::KEYS {
                let _ = ProducerSettings::default().set(key, &s);
            }
        }
    }
}
