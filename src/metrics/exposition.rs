//! `[pure]` A [`BrokerReport`] as Prometheus text: OpenMetrics 1.0 or text
//! 0.0.4, whichever the scraper's `Accept` header prefers ([`negotiate`]),
//! encoded by the official `prometheus-client` crate.
//!
//! Names, labels and types are those the Prometheus JMX exporter gives
//! Apache Kafka 3.9's MBeans under Strimzi's example rules
//! (`kafka-metrics.yaml`), so Strimzi's Kafka dashboard and alerts read a
//! shardlog broker unchanged:
//! - a Yammer meter (`…PerSec`) is a counter `kafka_<domain>_<type>_<name
//!   without PerSec>_total`; a gauge is `kafka_<domain>_<type>_<name>`,
//!   names lower-cased, label names as Kafka spells its tags;
//! - a Yammer histogram or timer is a gauge of its name per `quantile`
//!   (0.50 … 0.999) plus a counter `<name>_count_total`, with no `_sum`.
//!
//! The process series are the standard `process_*` ones; shardlog's own
//! series are under `shardlog_`. The names are fixed by a golden test
//! (`tests/golden/metrics_exposition.txt`): a rename is deliberate.

use std::collections::HashMap;
use std::fmt::Write as _;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::buckets::Buckets;
use super::recent::quantiles_ms;
use super::report::{BrokerReport, PartitionGauges};
use super::shard::{RequestVariant, TopicCounters, TIME_NAMES};

/// The two exposition formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Text,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The format an `Accept` header prefers: OpenMetrics when it is listed
/// with a q-value at least that of every text/plain or wildcard entry;
/// text 0.0.4 otherwise (always acceptable to Prometheus).
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let (mut om, mut other) = (None::<f64>, 0.0f64);
    for entry in accept.split(',') {
        let mut parts = entry.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.strip_prefix("q="))
            .find_map(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(1.0);
        if media == "application/openmetrics-text" {
            om = Some(om.map_or(q, |o| o.max(q)));
        } else if media == "text/plain" || media == "*/*" || media == "text/*" {
            other = other.max(q);
        }
    }
    match om {
        Some(q) if q > 0.0 && q >= other => Format::OpenMetrics,
        _ => Format::Text,
    }
}

/// `report` in `format`.
pub fn render(report: &BrokerReport, format: Format) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(families(report))));
    let mut out = String::new();
    let encoded = match format {
        Format::Text => prometheus_client::encoding::prometheus_text::encode(&mut out, &registry),
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
    };
    if encoded.is_err() {
        // Writing to a String cannot fail; say so rather than serve half.
        out.clear();
        let _ = writeln!(out, "# encoding the metrics failed");
    }
    out
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    /// A Prometheus histogram of seconds (`_bucket`, `_sum`, `_count`).
    Histogram,
}

#[derive(Debug, Clone)]
enum Value {
    U(u64),
    I(i64),
    F(f64),
    /// Only in a [`Kind::Histogram`] family.
    H(Box<Buckets>),
}

type Labels = Vec<(&'static str, String)>;

/// One family: its name (without `_total` for counters), HELP and samples.
#[derive(Debug)]
struct Family {
    name: String,
    help: String,
    kind: Kind,
    samples: Vec<(Labels, Value)>,
}

#[derive(Debug)]
struct Families(Vec<Family>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            if f.samples.is_empty() {
                continue;
            }
            let kind = match f.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
                Kind::Histogram => MetricType::Histogram,
            };
            let mut m = encoder.encode_descriptor(&f.name, &f.help, None, kind)?;
            for (labels, value) in &f.samples {
                let mut s = m.encode_family(labels)?;
                match (f.kind, value) {
                    (Kind::Counter, Value::U(v)) => {
                        prometheus_client::metrics::counter::ConstCounter::new(*v).encode(s)?
                    }
                    (Kind::Counter, Value::I(v)) => {
                        let v = u64::try_from(*v).unwrap_or(0);
                        prometheus_client::metrics::counter::ConstCounter::new(v).encode(s)?
                    }
                    (Kind::Counter, Value::F(v)) => {
                        prometheus_client::metrics::counter::ConstCounter::new(*v).encode(s)?
                    }
                    (Kind::Gauge, Value::U(v)) => {
                        let v = i64::try_from(*v).unwrap_or(i64::MAX);
                        s.encode_gauge(&v)?
                    }
                    (Kind::Gauge, Value::I(v)) => s.encode_gauge(v)?,
                    (Kind::Gauge, Value::F(v)) => s.encode_gauge(v)?,
                    (Kind::Histogram, Value::H(h)) => {
                        type NoExemplars = HashMap<usize, Exemplar<Vec<(String, String)>, f64>>;
                        s.encode_histogram(
                            h.sum_seconds(),
                            h.count(),
                            &h.seconds(),
                            None::<&NoExemplars>,
                        )?
                    }
                    // A family's samples are pushed with its kind's values.
                    (Kind::Histogram, _) | (_, Value::H(_)) => {}
                }
            }
        }
        Ok(())
    }
}

/// Families being built, in exposition order.
#[derive(Default)]
struct Builder(Vec<Family>);

impl Builder {
    fn family(&mut self, name: &str, help: &str, kind: Kind) -> &mut Family {
        self.0.push(Family {
            name: name.to_owned(),
            help: help.to_owned(),
            kind,
            samples: Vec::new(),
        });
        let last = self.0.len() - 1;
        &mut self.0[last]
    }

    fn one(&mut self, name: &str, help: &str, kind: Kind, value: Value) {
        self.family(name, help, kind)
            .samples
            .push((Vec::new(), value));
    }
}

impl Family {
    fn push(&mut self, labels: Labels, value: Value) {
        self.samples.push((labels, value));
    }
}

fn families(r: &BrokerReport) -> Vec<Family> {
    let mut b = Builder::default();
    broker_topic_metrics(&mut b, r);
    replica_manager(&mut b, r);
    partition_and_log(&mut b, r);
    controller::kafka_controller(&mut b, r);
    request_metrics(&mut b, r);
    network::request_extras(&mut b, r);
    purgatory_and_network(&mut b, r);
    network::kafka(&mut b, r);
    more::kafka(&mut b, r);
    process(&mut b, r);
    shardlog_own(&mut b, r);
    more::own(&mut b, r);
    more::storage(&mut b, r);
    more::quotas(&mut b, r);
    more::request_histograms(&mut b, r);
    let mut families = b.0;
    let count = yammer_metrics(&families);
    let at = families
        .iter()
        .position(|f| f.name == "kafka_server_kafkaserver_brokerstate")
        .map_or(families.len(), |i| i + 1);
    families.insert(
        at,
        Family {
            name: "kafka_server_kafkaserver_yammer_metrics_count".into(),
            help: "kafka.server:type=KafkaServer,name=yammer-metrics-count (Value): \
                   the Yammer metrics among these series"
                .into(),
            kind: Kind::Gauge,
            samples: vec![(Vec::new(), Value::U(count))],
        },
    );
    families
}

/// Kafka's `yammer-metrics-count` gauge counts the Yammer metrics
/// registered (`KafkaYammerMetrics.defaultRegistry.allMetrics.size`,
/// `KafkaBroker`): here those the exposition holds, itself included. One
/// metric per series of a gauge or meter, and per `_count` series of a
/// histogram or timer (its quantile series are the same metric); the
/// `socket-server-metrics` are client metrics, not Yammer ones, and
/// shardlog's own and the process series are no Kafka metrics at all.
fn yammer_metrics(families: &[Family]) -> u64 {
    let names: std::collections::HashSet<&str> = families.iter().map(|f| f.name.as_str()).collect();
    let mut n = 1u64;
    for f in families {
        let yammer = f.name.starts_with("kafka_")
            && !f.name.starts_with("kafka_server_socket_server_metrics_")
            // The same meter as `requesthandleravgidlepercent_count`.
            && f.name != "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent";
        if yammer && !names.contains(format!("{}_count", f.name).as_str()) {
            n += f.samples.len() as u64;
        }
    }
    n
}

/// `kafka.server:type=BrokerTopicMetrics`: all topics (no label) and
/// per topic.
fn broker_topic_metrics(b: &mut Builder, r: &BrokerReport) {
    type Pick = fn(&TopicCounters) -> u64;
    let meters: [(&str, &str, Pick); 10] = [
        ("messagesin", "MessagesInPerSec", |c| c.messages_in),
        ("bytesin", "BytesInPerSec", |c| c.bytes_in),
        ("bytesout", "BytesOutPerSec", |c| c.bytes_out),
        ("totalproducerequests", "TotalProduceRequestsPerSec", |c| {
            c.total_produce_requests
        }),
        ("totalfetchrequests", "TotalFetchRequestsPerSec", |c| {
            c.total_fetch_requests
        }),
        (
            "failedproducerequests",
            "FailedProduceRequestsPerSec",
            |c| c.failed_produce_requests,
        ),
        ("failedfetchrequests", "FailedFetchRequestsPerSec", |c| {
            c.failed_fetch_requests
        }),
        ("bytesrejected", "BytesRejectedPerSec", |c| c.bytes_rejected),
        (
            "producemessageconversions",
            "ProduceMessageConversionsPerSec",
            |c| c.produce_message_conversions,
        ),
        (
            "fetchmessageconversions",
            "FetchMessageConversionsPerSec",
            |c| c.fetch_message_conversions,
        ),
    ];
    let c = &r.counters;
    for (name, mbean, pick) in meters {
        let f = b.family(
            &format!("kafka_server_brokertopicmetrics_{name}"),
            &format!("kafka.server:type=BrokerTopicMetrics,name={mbean} (Count)"),
            Kind::Counter,
        );
        f.push(Vec::new(), Value::U(pick(&c.all_topics)));
        for (topic, t) in &c.topics {
            f.push(vec![("topic", topic.clone())], Value::U(pick(t)));
        }
    }
    // All topics only: the replication meters exist only without a topic
    // (`BrokerTopicMetrics` registers them when `name` is empty), and the
    // validator's marks go to `brokerTopicStats.allTopicsStats`
    // (`UnifiedLog.newValidatorMetricsRecorder`, `analyzeAndValidateRecords`),
    // so a topic's own meters of them are never created.
    type BrokerPick = fn(&super::shard::BrokerCounters) -> u64;
    let broker: [(&str, &str, BrokerPick); 8] = [
        ("replicationbytesin", "ReplicationBytesInPerSec", |b| {
            b.replication_bytes_in
        }),
        ("replicationbytesout", "ReplicationBytesOutPerSec", |b| {
            b.replication_bytes_out
        }),
        ("reassignmentbytesin", "ReassignmentBytesInPerSec", |b| {
            b.reassignment_bytes_in
        }),
        ("reassignmentbytesout", "ReassignmentBytesOutPerSec", |b| {
            b.reassignment_bytes_out
        }),
        (
            "nokeycompactedtopicrecords",
            "NoKeyCompactedTopicRecordsPerSec",
            |b| b.no_key_compacted_topic,
        ),
        (
            "invalidmagicnumberrecords",
            "InvalidMagicNumberRecordsPerSec",
            |b| b.invalid_magic_number,
        ),
        (
            "invalidmessagecrcrecords",
            "InvalidMessageCrcRecordsPerSec",
            |b| b.invalid_message_crc,
        ),
        (
            "invalidoffsetorsequencerecords",
            "InvalidOffsetOrSequenceRecordsPerSec",
            |b| b.invalid_offset_or_sequence,
        ),
    ];
    for (name, mbean, pick) in broker {
        b.one(
            &format!("kafka_server_brokertopicmetrics_{name}"),
            &format!("kafka.server:type=BrokerTopicMetrics,name={mbean} (Count)"),
            Kind::Counter,
            Value::U(pick(&c.broker)),
        );
    }
}

/// `kafka.server:type=ReplicaManager`.
fn replica_manager(b: &mut Builder, r: &BrokerReport) {
    let parts = r.partitions();
    let count = |f: &dyn Fn(&PartitionGauges) -> bool| parts.iter().filter(|p| f(p)).count() as u64;
    let gauges: [(&str, &str, u64); 9] = [
        ("leadercount", "LeaderCount", count(&|p| p.leader)),
        ("partitioncount", "PartitionCount", parts.len() as u64),
        (
            "underreplicatedpartitions",
            "UnderReplicatedPartitions",
            count(&PartitionGauges::under_replicated),
        ),
        (
            "underminisrpartitioncount",
            "UnderMinIsrPartitionCount",
            count(&PartitionGauges::under_min_isr),
        ),
        (
            "atminisrpartitioncount",
            "AtMinIsrPartitionCount",
            count(&PartitionGauges::at_min_isr),
        ),
        (
            "offlinereplicacount",
            "OfflineReplicaCount",
            count(&|p| p.offline),
        ),
        // Leaders only (`leaderPartitionsIterator`), as Kafka counts them.
        (
            "reassigningpartitions",
            "ReassigningPartitions",
            count(&|p| p.leader && p.reassigning),
        ),
        (
            "partitionswithlatetransactionscount",
            "PartitionsWithLateTransactionsCount",
            count(&|p| p.leader && p.late_transaction),
        ),
        // Every online replica (`onlinePartitionsIterator`).
        (
            "produceridcount",
            "ProducerIdCount",
            parts
                .iter()
                .filter(|p| !p.offline)
                .map(|p| p.producer_ids)
                .sum(),
        ),
    ];
    for (name, mbean, v) in gauges {
        b.one(
            &format!("kafka_server_replicamanager_{name}"),
            &format!("kafka.server:type=ReplicaManager,name={mbean} (Value)"),
            Kind::Gauge,
            Value::U(v),
        );
    }
    let broker = r.counters.broker;
    for (name, mbean, v) in [
        ("isrshrinks", "IsrShrinksPerSec", broker.isr_shrinks),
        ("isrexpands", "IsrExpandsPerSec", broker.isr_expands),
        (
            "failedisrupdates",
            "FailedIsrUpdatesPerSec",
            broker.failed_isr_updates,
        ),
    ] {
        b.one(
            &format!("kafka_server_replicamanager_{name}"),
            &format!("kafka.server:type=ReplicaManager,name={mbean} (Count)"),
            Kind::Counter,
            Value::U(v),
        );
    }
}

fn tp_labels(p: &PartitionGauges) -> Labels {
    vec![
        ("topic", p.topic.clone()),
        ("partition", p.partition.to_string()),
    ]
}

/// `kafka.cluster:type=Partition` and `kafka.log:type=Log`, per partition.
fn partition_and_log(b: &mut Builder, r: &BrokerReport) {
    let parts = r.partitions();
    type Pick = fn(&PartitionGauges) -> i64;
    let partition: [(&str, &str, Pick); 6] = [
        ("underreplicated", "UnderReplicated", |p| {
            i64::from(p.under_replicated())
        }),
        ("insyncreplicascount", "InSyncReplicasCount", |p| {
            if p.leader {
                i64::from(p.isr)
            } else {
                0
            }
        }),
        ("underminisr", "UnderMinIsr", |p| {
            i64::from(p.under_min_isr())
        }),
        ("atminisr", "AtMinIsr", |p| i64::from(p.at_min_isr())),
        ("replicascount", "ReplicasCount", |p| {
            if p.leader {
                i64::from(p.replicas)
            } else {
                0
            }
        }),
        // Of the local log, leader or follower (`Partition` registers it
        // as `log.map(_.lastStableOffsetLag)`).
        ("laststableoffsetlag", "LastStableOffsetLag", |p| {
            p.last_stable_offset_lag()
        }),
    ];
    for (name, mbean, pick) in partition {
        let f = b.family(
            &format!("kafka_cluster_partition_{name}"),
            &format!("kafka.cluster:type=Partition,name={mbean},topic=*,partition=* (Value)"),
            Kind::Gauge,
        );
        for p in &parts {
            f.push(tp_labels(p), Value::I(pick(p)));
        }
    }
    let log: [(&str, &str, Pick); 4] = [
        ("size", "Size", |p| {
            i64::try_from(p.size_bytes).unwrap_or(i64::MAX)
        }),
        ("logendoffset", "LogEndOffset", |p| p.log_end_offset),
        ("logstartoffset", "LogStartOffset", |p| p.log_start_offset),
        ("numlogsegments", "NumLogSegments", |p| {
            i64::from(p.segments)
        }),
    ];
    for (name, mbean, pick) in log {
        let f = b.family(
            &format!("kafka_log_log_{name}"),
            &format!("kafka.log:type=Log,name={mbean},topic=*,partition=* (Value)"),
            Kind::Gauge,
        );
        for p in &parts {
            f.push(tp_labels(p), Value::I(pick(p)));
        }
    }
}

/// Kafka's `ApiKeys` name of an API key (the `request` label).
fn api_name(api_key: i16, variant: RequestVariant) -> String {
    match variant {
        RequestVariant::FetchConsumer => return "FetchConsumer".into(),
        RequestVariant::FetchFollower => return "FetchFollower".into(),
        RequestVariant::Plain => {}
    }
    match crate::protocol::api::Api::from_code(api_key) {
        Some(api) => format!("{api:?}"),
        None => format!("Unknown{api_key}"),
    }
}

/// `kafka.network:type=RequestMetrics`, per request type.
fn request_metrics(b: &mut Builder, r: &BrokerReport) {
    let requests = &r.counters.requests;
    let f = b.family(
        "kafka_network_requestmetrics_requests",
        "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*,version=* (Count)",
        Kind::Counter,
    );
    for ((key, variant), s) in requests {
        for (version, n) in &s.by_version {
            f.push(
                vec![
                    ("request", api_name(*key, *variant)),
                    ("version", version.to_string()),
                ],
                Value::U(*n),
            );
        }
    }
    for (i, time) in TIME_NAMES.iter().enumerate() {
        let help = format!(
            "kafka.network:type=RequestMetrics,name={},request=* (ms, recent)",
            mbean_of_time(time)
        );
        let f = b.family(
            &format!("kafka_network_requestmetrics_{time}"),
            &help,
            Kind::Gauge,
        );
        for ((key, variant), s) in requests {
            let Some(Some(h)) = s.recent.get(i) else {
                continue;
            };
            for (q, ms) in quantiles_ms(h) {
                f.push(
                    vec![
                        ("request", api_name(*key, *variant)),
                        ("quantile", q.to_owned()),
                    ],
                    Value::F(ms),
                );
            }
        }
        let f = b.family(
            &format!("kafka_network_requestmetrics_{time}_count"),
            &format!(
                "kafka.network:type=RequestMetrics,name={},request=* (Count)",
                mbean_of_time(time)
            ),
            Kind::Counter,
        );
        for ((key, variant), s) in requests {
            f.push(
                vec![("request", api_name(*key, *variant))],
                Value::U(s.count),
            );
        }
    }
}

fn mbean_of_time(time: &str) -> &'static str {
    match time {
        "totaltimems" => "TotalTimeMs",
        "requestqueuetimems" => "RequestQueueTimeMs",
        "localtimems" => "LocalTimeMs",
        "remotetimems" => "RemoteTimeMs",
        "throttletimems" => "ThrottleTimeMs",
        "responsequeuetimems" => "ResponseQueueTimeMs",
        _ => "ResponseSendTimeMs",
    }
}

/// Purgatories, connections, the broker's state and disk bytes.
fn purgatory_and_network(b: &mut Builder, r: &BrokerReport) {
    let (produce, fetch) = r.parked();
    for name in ["purgatorysize", "numdelayedoperations"] {
        let f = b.family(
            &format!("kafka_server_delayedoperationpurgatory_{name}"),
            "kafka.server:type=DelayedOperationPurgatory,delayedOperation=* (Value): operations parked",
            Kind::Gauge,
        );
        f.push(vec![("delayedOperation", "Fetch".into())], Value::U(fetch));
        f.push(
            vec![("delayedOperation", "Produce".into())],
            Value::U(produce),
        );
    }
    network::socket_server(b, r);
    // Kafka's BrokerState RUNNING: a broker answers scrapes once serving.
    b.one(
        "kafka_server_kafkaserver_brokerstate",
        "kafka.server:type=KafkaServer,name=BrokerState (Value): 3 = RUNNING",
        Kind::Gauge,
        Value::U(3),
    );
    if let Some(p) = &r.process {
        b.one(
            "kafka_server_kafkaserver_linux_disk_read_bytes",
            "kafka.server:type=KafkaServer,name=linux-disk-read-bytes (Value): /proc/self/io read_bytes",
            Kind::Gauge,
            Value::U(p.disk_read_bytes),
        );
        b.one(
            "kafka_server_kafkaserver_linux_disk_write_bytes",
            "kafka.server:type=KafkaServer,name=linux-disk-write-bytes (Value): /proc/self/io write_bytes",
            Kind::Gauge,
            Value::U(p.disk_write_bytes),
        );
    }
}

/// The standard `process_*` series (where Kafka has JVM ones).
fn process(b: &mut Builder, r: &BrokerReport) {
    let Some(p) = &r.process else {
        return;
    };
    b.one(
        "process_cpu_seconds",
        "Total user and system CPU time spent in seconds.",
        Kind::Counter,
        Value::F(p.cpu_seconds),
    );
    let gauges: [(&str, &str, Value); 6] = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            Value::U(p.resident_memory_bytes),
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            Value::U(p.virtual_memory_bytes),
        ),
        (
            "process_open_fds",
            "Number of open file descriptors.",
            Value::U(p.open_fds),
        ),
        (
            "process_max_fds",
            "Maximum number of open file descriptors.",
            Value::U(p.max_fds),
        ),
        (
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            Value::F(p.start_time_seconds),
        ),
        (
            "process_threads",
            "Number of OS threads in the process.",
            Value::U(p.threads),
        ),
    ];
    for (name, help, v) in gauges {
        b.one(name, help, Kind::Gauge, v);
    }
}

/// shardlog's own series: send paths, per-shard purgatories, consumer lag.
fn shardlog_own(b: &mut Builder, r: &BrokerReport) {
    let s = r.send_paths();
    let f = b.family(
        "shardlog_network_sent_bytes",
        "Response bytes written to client sockets, by send path",
        Kind::Counter,
    );
    for (path, v) in [
        ("sendmsg", s.sendmsg),
        ("sendfile", s.sendfile),
        ("copied", s.copied),
        ("uring", s.uring),
        ("tls", s.tls),
    ] {
        f.push(vec![("path", path.into())], Value::U(v));
    }
    let f = b.family(
        "shardlog_purgatory_parked",
        "Operations parked in each data shard's purgatory",
        Kind::Gauge,
    );
    for sh in &r.shards {
        for (op, v) in [("Fetch", sh.parked_fetch), ("Produce", sh.parked_produce)] {
            f.push(
                vec![
                    ("shard", sh.shard.to_string()),
                    ("delayedOperation", op.into()),
                ],
                Value::U(v),
            );
        }
    }
    type Pick = fn(&super::report::BatchCacheStats) -> u64;
    let cache: [(&str, &str, Kind, Pick); 4] = [
        (
            "shardlog_batch_cache_hits",
            "Fetch reads each data shard's batch cache served",
            Kind::Counter,
            |c| c.hits,
        ),
        (
            "shardlog_batch_cache_hit_bytes",
            "Bytes of the reads the batch cache served",
            Kind::Counter,
            |c| c.hit_bytes,
        ),
        (
            "shardlog_batch_cache_misses",
            "Fetch reads the batch cache could not serve (read from the segment file)",
            Kind::Counter,
            |c| c.misses,
        ),
        (
            "shardlog_batch_cache_used_bytes",
            "Bytes the batch cache holds",
            Kind::Gauge,
            |c| c.used_bytes,
        ),
    ];
    for (name, help, kind, pick) in cache {
        let f = b.family(name, help, kind);
        for sh in &r.shards {
            f.push(
                vec![("shard", sh.shard.to_string())],
                Value::U(pick(&sh.batch_cache)),
            );
        }
    }
    let f = b.family(
        "shardlog_consumergroup_current_offset",
        "Committed offset per group and partition, from the group coordinators on this broker",
        Kind::Gauge,
    );
    for c in r.committed() {
        f.push(
            group_labels(&c.group, &c.topic, c.partition),
            Value::I(c.offset),
        );
    }
    let f = b.family(
        "shardlog_consumergroup_lag",
        "High watermark minus committed offset, for groups coordinated and partitions led here",
        Kind::Gauge,
    );
    for (c, lag) in r.lags() {
        f.push(group_labels(&c.group, &c.topic, c.partition), Value::I(lag));
    }
}

fn group_labels(group: &str, topic: &str, partition: i32) -> Labels {
    vec![
        ("consumergroup", group.to_owned()),
        ("topic", topic.to_owned()),
        ("partition", partition.to_string()),
    ]
}

mod controller;
mod more;
mod network;
#[cfg(test)]
mod tests;
