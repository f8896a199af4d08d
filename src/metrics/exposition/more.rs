//! `[pure]` The families of the controller's `ControllerStats`, the
//! `RequestMetrics` error counts, the replica fetchers' lag, the group
//! coordinator's counts and the ZooKeeper client (Kafka's names under
//! Strimzi's rules, as in the parent module), and shardlog's own executor
//! series.

use super::{Builder, Kind, Labels, Value};
use crate::metrics::recent::quantiles_ms;
use crate::metrics::report::BrokerReport;

/// A Yammer timer or histogram: a gauge per quantile and `<name>_count`.
fn timer(
    b: &mut Builder,
    name: &str,
    mbean: &str,
    count: u64,
    recent: Option<&hdrhistogram::Histogram<u64>>,
) {
    let f = b.family(name, &format!("{mbean} (ms, recent)"), Kind::Gauge);
    if let Some(h) = recent {
        for (q, ms) in quantiles_ms(h) {
            f.push(vec![("quantile", q.to_owned())], Value::F(ms));
        }
    }
    b.one(
        &format!("{name}_count"),
        &format!("{mbean} (Count)"),
        Kind::Counter,
        Value::U(count),
    );
}

/// The Kafka series of this module, after the parent's.
pub(super) fn kafka(b: &mut Builder, r: &BrokerReport) {
    let c = &r.control.controller;
    timer(
        b,
        "kafka_controller_controllerstats_leaderelectionrateandtimems",
        "kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs",
        c.leader_election_count,
        c.leader_election_recent.as_ref(),
    );
    b.one(
        "kafka_controller_controllerstats_uncleanleaderelections",
        "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec (Count)",
        Kind::Counter,
        Value::U(c.unclean_leader_elections),
    );
    let f = b.family(
        "kafka_network_requestmetrics_errors",
        "kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=*,error=* (Count): \
         per partition answered, for Produce and Fetch",
        Kind::Counter,
    );
    for ((key, code), n) in &r.counters.errors {
        let error = crate::protocol::ErrorCode(*code)
            .name()
            .map_or_else(|| format!("UNKNOWN_{code}"), str::to_owned);
        f.push(
            vec![
                (
                    "request",
                    super::api_name(*key, crate::metrics::shard::RequestVariant::Plain),
                ),
                ("error", error),
            ],
            Value::U(*n),
        );
    }
    fetchers(b, r);
    groups(b, r);
    zookeeper(b, r);
    idle(b, r);
}

/// The two idle percents: no separate network and handler threads here,
/// so both are the data shards' executors' idle fractions, recent
/// (`SocketServer` `NetworkProcessorAvgIdlePercent`) and since the first
/// scrape (`KafkaRequestHandlerPool` `RequestHandlerAvgIdlePercent`, a
/// meter's mean rate in Kafka).
fn idle(b: &mut Builder, r: &BrokerReport) {
    b.one(
        "kafka_network_socketserver_networkprocessoravgidle_percent",
        "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent (Value): \
         mean idle fraction of the data shards between the last two scrapes",
        Kind::Gauge,
        Value::F(r.recent_idle()),
    );
    b.one(
        "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
        "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent (MeanRate): \
         mean idle fraction of the data shards since their first scrape",
        Kind::Gauge,
        Value::F(r.idle_since_start()),
    );
}

/// `kafka.server:type=ReplicaFetcherManager` and `FetcherLagMetrics`.
fn fetchers(b: &mut Builder, r: &BrokerReport) {
    let f = b.family(
        "kafka_server_replicafetchermanager_maxlag",
        "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica (Value)",
        Kind::Gauge,
    );
    f.push(
        vec![("clientId", "Replica".into())],
        Value::I(r.max_follower_lag()),
    );
    let f = b.family(
        "kafka_server_fetcherlagmetrics_consumerlag",
        "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=*,topic=*,partition=* (Value)",
        Kind::Gauge,
    );
    for l in r.follower_lags() {
        let labels: Labels = vec![
            (
                "clientId",
                format!("ReplicaFetcherThread-{}-{}", l.fetcher_id, l.leader),
            ),
            ("topic", l.topic.clone()),
            ("partition", l.partition.to_string()),
        ];
        f.push(labels, Value::I(l.lag));
    }
}

/// `kafka.coordinator.group:type=GroupMetadataManager` (not exported by
/// Strimzi's rules; named as a generic rule would name them).
fn groups(b: &mut Builder, r: &BrokerReport) {
    let g = r.groups();
    for (name, mbean, v) in [
        ("numgroups", "NumGroups", g.groups),
        (
            "numgroupspreparingrebalance",
            "NumGroupsPreparingRebalance",
            g.preparing_rebalance,
        ),
        (
            "numgroupscompletingrebalance",
            "NumGroupsCompletingRebalance",
            g.completing_rebalance,
        ),
        ("numgroupsstable", "NumGroupsStable", g.stable),
        ("numgroupsempty", "NumGroupsEmpty", g.empty),
        ("numgroupsdead", "NumGroupsDead", g.dead),
        ("numoffsets", "NumOffsets", g.offsets),
    ] {
        b.one(
            &format!("kafka_coordinator_group_groupmetadatamanager_{name}"),
            &format!("kafka.coordinator.group:type=GroupMetadataManager,name={mbean} (Value)"),
            Kind::Gauge,
            Value::U(v),
        );
    }
}

/// `ZooKeeperClientMetrics` and `SessionExpireListener` (ZooKeeper mode
/// only); the session state, a string gauge Kafka's exporter drops, as
/// shardlog's own labelled gauge.
fn zookeeper(b: &mut Builder, r: &BrokerReport) {
    let Some(z) = &r.control.zk else {
        return;
    };
    timer(
        b,
        "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms",
        "kafka.server:type=ZooKeeperClientMetrics,name=ZooKeeperRequestLatencyMs",
        z.latency_count,
        z.latency_recent.as_ref(),
    );
    let e = z.events;
    for (name, mbean, v) in [
        ("disconnects", "ZooKeeperDisconnectsPerSec", e.disconnects),
        (
            "syncconnects",
            "ZooKeeperSyncConnectsPerSec",
            e.sync_connects,
        ),
        (
            "authfailures",
            "ZooKeeperAuthFailuresPerSec",
            e.auth_failures,
        ),
        (
            "readonlyconnects",
            "ZooKeeperReadOnlyConnectsPerSec",
            e.read_only_connects,
        ),
        ("expires", "ZooKeeperExpiresPerSec", e.expires),
    ] {
        b.one(
            &format!("kafka_server_sessionexpirelistener_zookeeper{name}"),
            &format!("kafka.server:type=SessionExpireListener,name={mbean} (Count)"),
            Kind::Counter,
            Value::U(v),
        );
    }
    let f = b.family(
        "shardlog_zookeeper_session_state",
        "The ZooKeeper session's state (Kafka's SessionState): 1 for the current one",
        Kind::Gauge,
    );
    f.push(vec![("state", z.state.name().to_owned())], Value::U(1));
}

/// shardlog's own executor series, per data shard.
pub(super) fn own(b: &mut Builder, r: &BrokerReport) {
    type Pick = fn(&crate::metrics::shard::ExecutorTotals) -> Value;
    let series: [(&str, &str, Pick); 5] = [
        (
            "shardlog_shard_busy_seconds",
            "Time each data shard's executor ran tasks or polled I/O; its rate is the busy fraction",
            |e| Value::F(e.busy_ns as f64 / 1e9),
        ),
        (
            "shardlog_shard_tasks_executed",
            "Tasks each data shard's executor ran",
            |e| Value::U(e.tasks_executed),
        ),
        (
            "shardlog_shard_scheduler_runs",
            "Times each data shard's scheduler picked a task queue to run",
            |e| Value::U(e.scheduler_runs),
        ),
        (
            "shardlog_uring_file_reads",
            "File reads each data shard submitted to its io_uring rings",
            |e| Value::U(e.uring_file_reads),
        ),
        (
            "shardlog_uring_file_writes",
            "File writes each data shard submitted to its io_uring rings",
            |e| Value::U(e.uring_file_writes),
        ),
    ];
    for (name, help, pick) in series {
        let f = b.family(name, help, Kind::Counter);
        for sh in &r.shards {
            f.push(vec![("shard", sh.shard.to_string())], pick(&sh.executor));
        }
    }
    let f = b.family(
        "shardlog_uring_file_written_bytes",
        "Bytes of the file writes each data shard submitted to its io_uring rings",
        Kind::Counter,
    );
    for sh in &r.shards {
        f.push(
            vec![("shard", sh.shard.to_string())],
            Value::U(sh.executor.uring_file_write_bytes),
        );
    }
}
