//! `[pure]` The families of the controller's `ControllerStats`, the
//! `RequestMetrics` error counts, the replica fetchers' lag, the group
//! coordinator's counts and the ZooKeeper client (Kafka's names under
//! Strimzi's rules, as in the parent module), and shardlog's own executor,
//! storage, quota and request-time-histogram series.

use super::{api_name, Builder, Kind, Labels, Value};
use crate::metrics::recent::quantiles_ms;
use crate::metrics::report::BrokerReport;
use crate::metrics::shard::TIME_NAMES;

/// A Yammer timer or histogram: a gauge per quantile and `<name>_count`.
pub(super) fn timer(
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
    log_manager(b, r);
}

/// `kafka.log:type=LogManager`: how many log dirs are offline (Strimzi's
/// offline-log-directory alert fires on it) and, per dir, 1 when offline
/// (Kafka's `LogManager` `OfflineLogDirectoryCount` and
/// `LogDirectoryOffline` gauges).
fn log_manager(b: &mut Builder, r: &BrokerReport) {
    let offline = r.log_dirs.iter().filter(|d| !d.online).count() as u64;
    b.one(
        "kafka_log_logmanager_offlinelogdirectorycount",
        "kafka.log:type=LogManager,name=OfflineLogDirectoryCount (Value)",
        Kind::Gauge,
        Value::U(offline),
    );
    let f = b.family(
        "kafka_log_logmanager_logdirectoryoffline",
        "kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory=* (Value): 1 when the dir is offline",
        Kind::Gauge,
    );
    for d in &r.log_dirs {
        f.push(
            vec![("logDirectory", d.path.clone())],
            Value::U(u64::from(!d.online)),
        );
    }
    let (count, recent) = r.log_flushes();
    timer(
        b,
        "kafka_log_logflushstats_logflushrateandtimems",
        "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs (each fdatasync of a segment file)",
        count,
        recent.as_ref(),
    );
    b.one(
        "kafka_log_logcleanermanager_max_dirty_percent",
        "kafka.log:type=LogCleanerManager,name=max-dirty-percent (Value): \
         100 x the largest cleanable ratio at the cleaners' last look",
        Kind::Gauge,
        Value::U(r.max_dirty_percent()),
    );
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
    // `Processor` `IdlePercent`: each processor's `io-wait-ratio`; a
    // shard is a processor here.
    let f = b.family(
        "kafka_network_processor_idle_percent",
        "kafka.network:type=Processor,name=IdlePercent,networkProcessor=* (Value): \
         idle fraction of the data shard between its last two scrapes",
        Kind::Gauge,
    );
    for sh in &r.shards {
        let e = &sh.executor;
        let idle = if e.window_ns > 0 {
            (1.0 - e.window_busy_ns as f64 / e.window_ns as f64).clamp(0.0, 1.0)
        } else {
            f64::NAN
        };
        f.push(
            vec![("networkProcessor", sh.shard.to_string())],
            Value::F(idle),
        );
    }
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
    // `AbstractFetcherManager`'s other gauges. `MinFetchRate`: the least
    // request rate over the fetchers (here over the last scrape window,
    // Kafka's is the meter's one-minute rate), 0 without fetchers.
    // `FailedPartitionsCount`: partitions `AbstractFetcherThread` marked
    // failed (a storage or unexpected error) and stopped fetching; a
    // shardlog fetcher never does, it backs such a partition off and
    // retries. `DeadThreadCount`: fetcher threads that died
    // (`ShutdownableThread.isThreadFailed`); a fetcher here is a task whose
    // loop only ends when it is stopped, so none is ever dead.
    let gauges = [
        ("minfetchrate", "MinFetchRate", Value::F(r.min_fetch_rate())),
        (
            "failedpartitionscount",
            "FailedPartitionsCount",
            Value::U(0),
        ),
        ("deadthreadcount", "DeadThreadCount", Value::U(0)),
    ];
    for (name, mbean, value) in gauges {
        let f = b.family(
            &format!("kafka_server_replicafetchermanager_{name}"),
            &format!(
                "kafka.server:type=ReplicaFetcherManager,name={mbean},clientId=Replica (Value)"
            ),
            Kind::Gauge,
        );
        f.push(vec![("clientId", "Replica".into())], value);
    }
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
        // `ZooKeeperClient`'s `stateToMeterMap` marks it on
        // `KeeperState.SaslAuthenticated`, which a session without SASL
        // (shardlog's ZooKeeper client has none) never reaches.
        (
            "saslauthentications",
            "ZooKeeperSaslAuthenticationsPerSec",
            0,
        ),
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

/// shardlog's own storage series, per data shard: DMA write and fdatasync
/// latency histograms and segment recycles.
pub(super) fn storage(b: &mut Builder, r: &BrokerReport) {
    let f = b.family(
        "shardlog_storage_dma_write_seconds",
        "Time each O_DIRECT segment write took on each data shard's io_uring rings",
        Kind::Histogram,
    );
    for sh in &r.shards {
        f.push(
            vec![("shard", sh.shard.to_string())],
            Value::H(Box::new(sh.storage.dma_writes)),
        );
    }
    let f = b.family(
        "shardlog_storage_fsync_seconds",
        "Time each fdatasync of a segment file took (flush policy, group commit, segment close)",
        Kind::Histogram,
    );
    for sh in &r.shards {
        f.push(
            vec![("shard", sh.shard.to_string())],
            Value::H(Box::new(sh.storage.fsyncs)),
        );
    }
    let f = b.family(
        "shardlog_storage_segment_recycles",
        "New segments that reused a file of the recycle pool (shardlog.segment.recycle)",
        Kind::Counter,
    );
    for sh in &r.shards {
        f.push(
            vec![("shard", sh.shard.to_string())],
            Value::U(sh.storage.segment_recycles),
        );
    }
}

/// Client-quota throttles (Kafka's `ClientQuotaManager` `throttle-time`
/// sensors of the `Produce`, `Fetch` and `Request` groups, which
/// Strimzi's rules do not export): per quota kind and the sensor's `user`
/// and `client-id` tags (empty, so absent, where the applied quota entity
/// has no such part).
pub(super) fn quotas(b: &mut Builder, r: &BrokerReport) {
    let throttles = &r.counters.quota_throttles;
    let labels = |t: &crate::metrics::shard::QuotaTags| -> Labels {
        vec![
            ("quota", t.kind.name().to_owned()),
            ("user", t.user.clone()),
            ("client_id", t.client_id.clone()),
        ]
    };
    let f = b.family(
        "shardlog_quota_throttle_time_seconds",
        "Throttle time given to responses of clients over a client quota (Kafka's throttle-time sensor)",
        Kind::Counter,
    );
    for (t, v) in throttles {
        f.push(labels(t), Value::F(v.throttle_ms as f64 / 1e3));
    }
    let f = b.family(
        "shardlog_quota_throttled_responses",
        "Responses throttled by a client quota",
        Kind::Counter,
    );
    for (t, v) in throttles {
        f.push(labels(t), Value::U(v.throttled));
    }
}

/// The request types whose time split is also a histogram.
/// Kafka's `ApiKeys` PRODUCE (0) and FETCH (1).
fn with_histograms(api_key: i16) -> bool {
    api_key == 0 || api_key == 1
}

/// `RequestMetrics`' time split of Produce and Fetch (and FetchConsumer,
/// FetchFollower) as cumulative histograms: the quantile gauges are of a
/// recent window and cannot be subtracted between two scrapes, these can
/// (`shardlog bench` reports each point's split from them).
pub(super) fn request_histograms(b: &mut Builder, r: &BrokerReport) {
    let f = b.family(
        "shardlog_request_time_seconds",
        "Produce and Fetch request time by part (RequestMetrics' TotalTimeMs, RequestQueueTimeMs, \
         LocalTimeMs, RemoteTimeMs, ThrottleTimeMs, ResponseQueueTimeMs, ResponseSendTimeMs), since start",
        Kind::Histogram,
    );
    for ((key, variant), s) in &r.counters.requests {
        if !with_histograms(*key) {
            continue;
        }
        for (time, h) in TIME_NAMES.iter().zip(&s.lifetime) {
            let part = time.trim_end_matches("timems");
            f.push(
                vec![
                    ("request", api_name(*key, *variant)),
                    ("part", part.to_owned()),
                ],
                Value::H(Box::new(*h)),
            );
        }
    }
}
