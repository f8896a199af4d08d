//! `[pure]` What one scrape gathers: each data shard's [`ShardReport`]
//! (its counters and the gauges read from its partitions, purgatory and
//! group coordinator at that moment), merged into one [`BrokerReport`]
//! with the process's own figures; `exposition` renders it.

use std::collections::BTreeMap;

use super::buckets::Buckets;
use super::control::ControlReport;
use super::shard::{ExecutorTotals, RequestSnapshot, ShardCounters};

/// One hosted partition as its owner shard sees it (Kafka's `Partition`
/// and `UnifiedLog` gauges).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionGauges {
    pub topic: String,
    pub partition: i32,
    /// This broker leads it (and its log is not offline).
    pub leader: bool,
    /// Its log dir failed.
    pub offline: bool,
    pub replicas: u32,
    /// The ISR as the leader sees it (0 on a follower).
    pub isr: u32,
    /// `min.insync.replicas` of the topic.
    pub min_isr: u32,
    pub size_bytes: u64,
    pub segments: u32,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// Below the first open transaction, else the HW (Kafka's
    /// `UnifiedLog.lastStableOffset`).
    pub last_stable_offset: i64,
    /// Its assignment has adding or removing replicas (Kafka's
    /// `Partition.isReassigning`).
    pub reassigning: bool,
    /// Its oldest open transaction's producer last appended longer ago
    /// than `transaction.max.timeout.ms` plus 5 minutes (Kafka's
    /// `ProducerStateManager.hasLateTransaction`).
    pub late_transaction: bool,
    /// Producers with state in its log (`ProducerStateManager.producerIdCount`).
    pub producer_ids: u64,
}

impl PartitionGauges {
    /// Kafka's `Partition.isUnderReplicated` (leader only).
    pub fn under_replicated(&self) -> bool {
        self.leader && self.isr < self.replicas
    }
    /// The ISR size `UnderMinIsr` / `AtMinIsr` compare with:
    /// `min(min.insync.replicas, replicas)`.
    fn effective_min_isr(&self) -> u32 {
        self.min_isr.min(self.replicas)
    }
    pub fn under_min_isr(&self) -> bool {
        self.leader && self.isr < self.effective_min_isr()
    }
    pub fn at_min_isr(&self) -> bool {
        self.leader && self.isr == self.effective_min_isr()
    }
    /// Kafka's `UnifiedLog.lastStableOffsetLag`: HW minus LSO.
    pub fn last_stable_offset_lag(&self) -> i64 {
        (self.high_watermark - self.last_stable_offset).max(0)
    }
}

/// A committed offset held by a group coordinator on this broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

/// Kafka's `KafkaController` gauges. Every broker reports them; only the
/// active controller's counts are non-zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerGauges {
    pub active: bool,
    pub offline_partitions: u64,
    pub global_partitions: u64,
    pub global_topics: u64,
    pub active_brokers: u64,
}

/// Bytes written to client sockets per path (`io::zerocopy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendPathBytes {
    pub sendmsg: u64,
    pub sendfile: u64,
    pub copied: u64,
    /// Written by the executor's own io_uring write path.
    pub uring: u64,
    pub tls: u64,
}

/// A data shard's batch cache (`storage::batch_cache`): reads it served
/// (and their bytes), reads that went to the segment file, bytes held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchCacheStats {
    pub hits: u64,
    pub hit_bytes: u64,
    pub misses: u64,
    pub used_bytes: u64,
}

/// A data shard's storage timings (`storage::io_timings`): DMA (O_DIRECT)
/// writes and fdatasyncs as they took, and segment files reused from the
/// recycle pool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageTimings {
    pub dma_writes: Buckets,
    pub fsyncs: Buckets,
    pub segment_recycles: u64,
    /// Kafka's `LogFlushRateAndTimeMs`: the fdatasyncs since start and
    /// the recent ones (µs).
    pub flush_count: u64,
    pub flush_recent: Option<hdrhistogram::Histogram<u64>>,
}

/// The process's figures (`/proc/self`), the series Prometheus clients
/// call `process_*`, and Kafka's `linux-disk-*-bytes`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_memory_bytes: u64,
    pub virtual_memory_bytes: u64,
    pub open_fds: u64,
    pub max_fds: u64,
    pub start_time_seconds: f64,
    pub threads: u64,
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
}

/// One partition this shard follows (Kafka's `FetcherLagMetrics` of its
/// `ReplicaFetcherThread-<fetcherId>-<leaderId>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerLag {
    pub topic: String,
    pub partition: i32,
    pub leader: i32,
    pub fetcher_id: i32,
    /// The leader's high watermark minus this follower's fetch offset, as
    /// of the last fetch answer (-1 before the first).
    pub lag: i64,
}

/// Kafka's `GroupMetadataManager` gauges of the groups one shard
/// coordinates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCounts {
    pub groups: u64,
    pub preparing_rebalance: u64,
    pub completing_rebalance: u64,
    pub stable: u64,
    pub empty: u64,
    pub dead: u64,
    /// `NumOffsets`: committed offsets held.
    pub offsets: u64,
}

impl GroupCounts {
    pub fn add(&mut self, o: &GroupCounts) {
        self.groups += o.groups;
        self.preparing_rebalance += o.preparing_rebalance;
        self.completing_rebalance += o.completing_rebalance;
        self.stable += o.stable;
        self.empty += o.empty;
        self.dead += o.dead;
        self.offsets += o.offsets;
    }
}

/// What one data shard answers a scrape with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardReport {
    pub shard: u16,
    pub counters: ShardCounters,
    pub partitions: Vec<PartitionGauges>,
    /// Operations parked in the shard's purgatory (DelayedProduce,
    /// DelayedFetch).
    pub parked_produce: u64,
    pub parked_fetch: u64,
    pub committed: Vec<CommittedOffset>,
    /// Only from the first data shard (they all share the broker's view).
    pub controller: Option<ControllerGauges>,
    pub send_paths: SendPathBytes,
    pub batch_cache: BatchCacheStats,
    pub storage: StorageTimings,
    pub follower_lags: Vec<FollowerLag>,
    /// The least Fetch request rate (per second) over the shard's replica
    /// fetchers since the last scrape; `None` without fetchers.
    pub min_fetch_rate: Option<f64>,
    pub groups: GroupCounts,
    pub executor: ExecutorTotals,
    /// The broker's log dirs, only from the first data shard (they all
    /// share them).
    pub log_dirs: Vec<LogDirState>,
    /// The largest cleanable ratio (0..1) among this shard's compacted
    /// logs at its cleaner's last look (Kafka's `LogCleanerManager`
    /// `dirtiestLogCleanableRatio`).
    pub max_dirty_ratio: f64,
}

/// A log dir as Kafka's `LogManager` reports it: its absolute path, and
/// whether it is online (a dir goes offline at a failed write or fsync).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogDirState {
    pub path: String,
    pub online: bool,
}

/// One scrape of the broker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerReport {
    pub shards: Vec<ShardReport>,
    /// All shards' counters added up.
    pub counters: ShardCounters,
    pub controller: ControllerGauges,
    pub process: Option<ProcessStats>,
    /// The control shard's controller and ZooKeeper client figures.
    pub control: ControlReport,
    pub log_dirs: Vec<LogDirState>,
    /// The broker's listener names (`listeners`), for the per-listener
    /// acceptor series.
    pub listeners: Vec<String>,
}

impl BrokerReport {
    pub fn new(shards: Vec<ShardReport>, process: Option<ProcessStats>) -> Self {
        let mut counters = ShardCounters::default();
        let mut controller = ControllerGauges::default();
        let mut log_dirs = Vec::new();
        for s in &shards {
            merge_counters(&mut counters, &s.counters);
            if let Some(c) = s.controller {
                controller = c;
            }
            if log_dirs.is_empty() {
                log_dirs.clone_from(&s.log_dirs);
            }
        }
        Self {
            shards,
            counters,
            controller,
            process,
            control: ControlReport::default(),
            log_dirs,
            listeners: Vec::new(),
        }
    }

    /// Every followed partition's lag, by topic and partition.
    pub fn follower_lags(&self) -> Vec<&FollowerLag> {
        let mut all: Vec<&FollowerLag> =
            self.shards.iter().flat_map(|s| &s.follower_lags).collect();
        all.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        all
    }

    /// `ReplicaFetcherManager` `MinFetchRate`: the least Fetch request
    /// rate over all fetchers of all shards, 0 without fetchers
    /// (`AbstractFetcherManager`).
    pub fn min_fetch_rate(&self) -> f64 {
        self.shards
            .iter()
            .filter_map(|s| s.min_fetch_rate)
            .reduce(f64::min)
            .unwrap_or(0.0)
    }

    /// `ReplicaFetcherManager` `MaxLag`: the largest follower lag (0 when
    /// nothing is followed).
    pub fn max_follower_lag(&self) -> i64 {
        self.follower_lags()
            .iter()
            .map(|l| l.lag)
            .max()
            .unwrap_or(0)
            .max(0)
    }

    /// Kafka's `NetworkProcessorAvgIdlePercent` (0..1): the mean over the
    /// data shards of the idle fraction between their last two scrapes;
    /// NaN before a shard has two.
    pub fn recent_idle(&self) -> f64 {
        mean_idle(
            self.shards
                .iter()
                .map(|s| (s.executor.window_busy_ns, s.executor.window_ns)),
        )
    }

    /// Kafka's `RequestHandlerAvgIdlePercent` (0..1): the mean over the
    /// data shards of the idle fraction since their first scrape.
    pub fn idle_since_start(&self) -> f64 {
        mean_idle(
            self.shards
                .iter()
                .map(|s| (s.executor.tracked_busy_ns, s.executor.tracked_ns)),
        )
    }

    /// The count of Kafka's `RequestHandlerAvgIdlePercent` meter: every
    /// handler thread marks its idle nanoseconds divided by the number
    /// of threads (`KafkaRequestHandler.run`), so the count is the mean
    /// idle time of a data shard since its first scrape, in ns (over the
    /// shards scraped twice, as [`Self::idle_since_start`]).
    pub fn idle_ns_since_start(&self) -> f64 {
        let idle: Vec<f64> = self
            .shards
            .iter()
            .filter(|s| s.executor.tracked_ns > 0)
            .map(|s| {
                s.executor
                    .tracked_ns
                    .saturating_sub(s.executor.tracked_busy_ns) as f64
            })
            .collect();
        if idle.is_empty() {
            return 0.0;
        }
        idle.iter().sum::<f64>() / idle.len() as f64
    }

    /// `LogCleanerManager` `max-dirty-percent`: 100 times the largest
    /// cleanable ratio of the compacted logs, truncated to an integer.
    pub fn max_dirty_percent(&self) -> u64 {
        let ratio = self
            .shards
            .iter()
            .map(|s| s.max_dirty_ratio)
            .fold(0.0f64, f64::max);
        (100.0 * ratio.clamp(0.0, 1.0)) as u64
    }

    /// `LogFlushRateAndTimeMs` of every data shard: the fdatasyncs since
    /// start and the recent ones (µs), merged.
    pub fn log_flushes(&self) -> (u64, Option<hdrhistogram::Histogram<u64>>) {
        let mut count = 0;
        let mut recent: Option<hdrhistogram::Histogram<u64>> = None;
        for s in &self.shards {
            count += s.storage.flush_count;
            merge_recent(&mut recent, s.storage.flush_recent.as_ref());
        }
        (count, recent)
    }

    pub fn groups(&self) -> GroupCounts {
        let mut g = GroupCounts::default();
        for s in &self.shards {
            g.add(&s.groups);
        }
        g
    }

    /// Every hosted partition, by topic and partition.
    pub fn partitions(&self) -> Vec<&PartitionGauges> {
        let mut all: Vec<&PartitionGauges> =
            self.shards.iter().flat_map(|s| &s.partitions).collect();
        all.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        all
    }

    /// Consumer lag per (group, topic, partition) where this broker leads
    /// the partition: its high watermark (what a consumer can read, the
    /// offset kafka-exporter's ListOffsets returns) minus the committed
    /// offset, never below 0.
    pub fn lags(&self) -> Vec<(&CommittedOffset, i64)> {
        let led: BTreeMap<(&str, i32), i64> = self
            .partitions()
            .into_iter()
            .filter(|p| p.leader)
            .map(|p| ((p.topic.as_str(), p.partition), p.high_watermark))
            .collect();
        let mut out: Vec<(&CommittedOffset, i64)> = self
            .committed()
            .into_iter()
            .filter_map(|c| {
                let hw = led.get(&(c.topic.as_str(), c.partition))?;
                Some((c, (hw - c.offset).max(0)))
            })
            .collect();
        out.sort_by(|a, b| key(a.0).cmp(&key(b.0)));
        out
    }

    /// Every committed offset held here, by group, topic and partition.
    pub fn committed(&self) -> Vec<&CommittedOffset> {
        let mut all: Vec<&CommittedOffset> =
            self.shards.iter().flat_map(|s| &s.committed).collect();
        all.sort_by(|a, b| key(a).cmp(&key(b)));
        all
    }

    pub fn parked(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |(p, f), s| {
            (p + s.parked_produce, f + s.parked_fetch)
        })
    }

    pub fn send_paths(&self) -> SendPathBytes {
        let mut t = SendPathBytes::default();
        for s in &self.shards {
            let b = s.send_paths;
            t.sendmsg += b.sendmsg;
            t.sendfile += b.sendfile;
            t.copied += b.copied;
            t.uring += b.uring;
            t.tls += b.tls;
        }
        t
    }
}

/// The mean idle fraction of (busy, elapsed) pairs with time elapsed.
fn mean_idle(pairs: impl Iterator<Item = (u64, u64)>) -> f64 {
    let idle: Vec<f64> = pairs
        .filter(|(_, elapsed)| *elapsed > 0)
        .map(|(busy, elapsed)| (1.0 - busy as f64 / elapsed as f64).clamp(0.0, 1.0))
        .collect();
    if idle.is_empty() {
        return f64::NAN;
    }
    idle.iter().sum::<f64>() / idle.len() as f64
}

fn key(c: &CommittedOffset) -> (&str, &str, i32) {
    (&c.group, &c.topic, c.partition)
}

/// Add `from` into `into`; request histograms are merged.
pub fn merge_counters(into: &mut ShardCounters, from: &ShardCounters) {
    into.all_topics.add(&from.all_topics);
    for (t, c) in &from.topics {
        into.topics.entry(t.clone()).or_default().add(c);
    }
    into.broker.add(&from.broker);
    for (k, r) in &from.requests {
        let mine = into.requests.entry(*k).or_default();
        merge_request(mine, r);
    }
    for (l, c) in &from.connections {
        into.connections.entry(l.clone()).or_default().add(c);
    }
    for (k, n) in &from.errors {
        *into.errors.entry(*k).or_default() += n;
    }
    for (k, t) in &from.quota_throttles {
        let mine = into.quota_throttles.entry(k.clone()).or_default();
        mine.throttled += t.throttled;
        mine.throttle_ms += t.throttle_ms;
    }
    for (k, n) in &from.produce_expirations {
        *into.produce_expirations.entry(k.clone()).or_default() += n;
    }
    into.request_queue += from.request_queue;
    into.response_queue += from.response_queue;
}

fn merge_request(into: &mut RequestSnapshot, from: &RequestSnapshot) {
    for (v, n) in &from.by_version {
        *into.by_version.entry(*v).or_default() += n;
    }
    into.count += from.count;
    for (m, t) in into.lifetime.iter_mut().zip(&from.lifetime) {
        m.add(t);
    }
    if into.recent.len() < from.recent.len() {
        into.recent.resize(from.recent.len(), None);
    }
    for (mine, theirs) in into.recent.iter_mut().zip(&from.recent) {
        merge_recent(mine, theirs.as_ref());
    }
}

/// Add the recent observations `theirs` into `mine`.
fn merge_recent(
    mine: &mut Option<hdrhistogram::Histogram<u64>>,
    theirs: Option<&hdrhistogram::Histogram<u64>>,
) {
    match (mine.as_mut(), theirs) {
        // Same bounds on both sides (`recent::empty`): cannot fail.
        (Some(m), Some(t)) => {
            let _ = m.add(t);
        }
        (None, Some(t)) => *mine = Some(t.clone()),
        (_, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauges(topic: &str, p: i32, leader: bool, isr: u32) -> PartitionGauges {
        PartitionGauges {
            topic: topic.into(),
            partition: p,
            leader,
            offline: false,
            replicas: 3,
            isr,
            min_isr: 2,
            size_bytes: 0,
            segments: 1,
            log_start_offset: 0,
            log_end_offset: 10,
            high_watermark: 8,
            last_stable_offset: 8,
            reassigning: false,
            late_transaction: false,
            producer_ids: 0,
        }
    }

    #[test]
    fn replica_states_follow_kafkas_partition_gauges() {
        let g = gauges("t", 0, true, 2);
        assert!(g.under_replicated() && g.at_min_isr() && !g.under_min_isr());
        let g = gauges("t", 0, true, 1);
        assert!(g.under_min_isr() && !g.at_min_isr());
        let g = gauges("t", 0, false, 0);
        assert!(!g.under_replicated() && !g.under_min_isr() && !g.at_min_isr());
    }

    #[test]
    fn lag_is_the_led_partitions_high_watermark_minus_the_commit() {
        let shard = ShardReport {
            partitions: vec![gauges("t", 0, true, 3), gauges("t", 1, false, 0)],
            committed: vec![
                CommittedOffset {
                    group: "g".into(),
                    topic: "t".into(),
                    partition: 0,
                    offset: 5,
                },
                CommittedOffset {
                    group: "g".into(),
                    topic: "t".into(),
                    partition: 1,
                    offset: 5,
                },
            ],
            ..ShardReport::default()
        };
        let r = BrokerReport::new(vec![shard], None);
        let lags = r.lags();
        assert_eq!(lags.len(), 1);
        assert_eq!(lags[0].1, 3);
    }
}
