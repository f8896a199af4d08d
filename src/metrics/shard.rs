//! `[pure]` One shard's live metrics: plain counters and histograms in
//! `Cell`s and `RefCell`s, owned by the shard's context
//! (`ShardStats::metrics`) and touched only by its own tasks: no atomics,
//! no locks on the produce and fetch paths (ARCHITECTURE §1). A scrape
//! asks each shard for a [`ShardCounters`] copy over the mesh and adds
//! them up (`report`).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::buckets::Buckets;
use super::recent::RecentHistogram;
use crate::protocol::out_part::ChunkStats;
use crate::protocol::ErrorCode;

/// Produce errors Kafka's `ReplicaManager.appendToLocalLog` does not mark
/// as `FailedProduceRequestsPerSec`.
const PRODUCE_NOT_FAILED: [ErrorCode; 6] = [
    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode::NOT_LEADER_OR_FOLLOWER,
    ErrorCode::MESSAGE_TOO_LARGE,
    ErrorCode::RECORD_LIST_TOO_LARGE,
    ErrorCode::CORRUPT_MESSAGE,
    ErrorCode::KAFKA_STORAGE_ERROR,
];

/// Fetch errors Kafka's `ReplicaManager.readFromLog` does not mark as
/// `FailedFetchRequestsPerSec`.
const FETCH_NOT_FAILED: [ErrorCode; 9] = [
    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode::UNKNOWN_TOPIC_ID,
    ErrorCode::NOT_LEADER_OR_FOLLOWER,
    ErrorCode::UNKNOWN_LEADER_EPOCH,
    ErrorCode::FENCED_LEADER_EPOCH,
    ErrorCode::REPLICA_NOT_AVAILABLE,
    ErrorCode::KAFKA_STORAGE_ERROR,
    ErrorCode::OFFSET_OUT_OF_RANGE,
    ErrorCode::INCONSISTENT_TOPIC_ID,
];

/// Kafka's `BrokerTopicMetrics` meters of one topic (or of all topics),
/// as counts since start (the JMX exporter exposes a meter's `Count`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicCounters {
    pub messages_in: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub total_produce_requests: u64,
    pub total_fetch_requests: u64,
    pub failed_produce_requests: u64,
    pub failed_fetch_requests: u64,
    pub bytes_rejected: u64,
    /// `ProduceMessageConversionsPerSec` / `FetchMessageConversionsPerSec`:
    /// records converted (Kafka's `RecordConversionStats.numRecordsConverted`,
    /// marked by `KafkaApis.updateRecordConversionStats`).
    pub produce_message_conversions: u64,
    pub fetch_message_conversions: u64,
}

impl TopicCounters {
    pub fn add(&mut self, o: &TopicCounters) {
        self.messages_in += o.messages_in;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.total_produce_requests += o.total_produce_requests;
        self.total_fetch_requests += o.total_fetch_requests;
        self.failed_produce_requests += o.failed_produce_requests;
        self.failed_fetch_requests += o.failed_fetch_requests;
        self.bytes_rejected += o.bytes_rejected;
        self.produce_message_conversions += o.produce_message_conversions;
        self.fetch_message_conversions += o.fetch_message_conversions;
    }
}

/// Broker-wide counters without a topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerCounters {
    /// `ReplicationBytesOutPerSec`: bytes read for follower fetches.
    pub replication_bytes_out: u64,
    /// `ReplicationBytesInPerSec`: bytes a follower appended from its
    /// leaders (`ReplicaFetcherThread.processPartitionData`).
    pub replication_bytes_in: u64,
    /// `ReassignmentBytesInPerSec` / `ReassignmentBytesOutPerSec`: the
    /// part of those of partitions being reassigned (in: this broker is
    /// an adding replica; out: the fetching follower is one).
    pub reassignment_bytes_in: u64,
    pub reassignment_bytes_out: u64,
    /// `IsrShrinksPerSec` / `IsrExpandsPerSec`: ISR changes this broker's
    /// leaders proposed.
    pub isr_shrinks: u64,
    pub isr_expands: u64,
    /// `FailedIsrUpdatesPerSec`: ISR changes the controller refused or
    /// that were not delivered (`Partition.handleAlterPartitionError`).
    pub failed_isr_updates: u64,
    /// `LogValidator.MetricsRecorder`'s marks (all topics only, as
    /// `UnifiedLog.newValidatorMetricsRecorder` marks them).
    pub invalid_message_crc: u64,
    pub invalid_magic_number: u64,
    pub invalid_offset_or_sequence: u64,
    pub no_key_compacted_topic: u64,
    /// `DelayedProduceMetrics` `ExpiresPerSec` of all partitions: acks=all
    /// partitions still pending when their DelayedProduce expired.
    pub produce_expirations: u64,
    /// `DelayedFetchMetrics` `ExpiresPerSec` by `fetcherType`.
    pub follower_fetch_expirations: u64,
    pub consumer_fetch_expirations: u64,
}

impl BrokerCounters {
    pub fn add(&mut self, o: &BrokerCounters) {
        self.replication_bytes_out += o.replication_bytes_out;
        self.replication_bytes_in += o.replication_bytes_in;
        self.reassignment_bytes_in += o.reassignment_bytes_in;
        self.reassignment_bytes_out += o.reassignment_bytes_out;
        self.isr_shrinks += o.isr_shrinks;
        self.isr_expands += o.isr_expands;
        self.failed_isr_updates += o.failed_isr_updates;
        self.invalid_message_crc += o.invalid_message_crc;
        self.invalid_magic_number += o.invalid_magic_number;
        self.invalid_offset_or_sequence += o.invalid_offset_or_sequence;
        self.no_key_compacted_topic += o.no_key_compacted_topic;
        self.produce_expirations += o.produce_expirations;
        self.follower_fetch_expirations += o.follower_fetch_expirations;
        self.consumer_fetch_expirations += o.consumer_fetch_expirations;
    }
}

/// What validating one partition's produced records found: Kafka's
/// `RecordConversionStats` of the append (records converted, the time it
/// took, the memory it used beyond the request) and the marks of
/// `LogValidator.MetricsRecorder` and `UnifiedLog.analyzeAndValidateRecords`
/// for records refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValidationStats {
    /// `numRecordsConverted`: records rebuilt into a new batch (a legacy
    /// message set up-converted to v2, or a batch recompressed to the
    /// topic's `compression.type`: `buildRecordsAndAssignOffsets`).
    pub converted_records: u64,
    pub conversion_ns: u64,
    /// `temporaryMemoryBytes`.
    pub temporary_memory_bytes: u64,
    /// `InvalidMessageCrcRecordsPerSec`: a batch's (or a compressed
    /// legacy wrapper's inner message's) checksum did not match.
    pub invalid_message_crc: u64,
    /// `InvalidMagicNumberRecordsPerSec`: a batch or record whose magic
    /// differs from the first batch's.
    pub invalid_magic_number: u64,
    /// `InvalidOffsetOrSequenceRecordsPerSec`: a v2 batch whose offset
    /// range and record count disagree, a control batch from a client,
    /// or a producer id without a base sequence.
    pub invalid_offset_or_sequence: u64,
    /// `NoKeyCompactedTopicRecordsPerSec`: records without a key for a
    /// compacted topic.
    pub no_key_compacted_topic: u64,
}

impl ValidationStats {
    pub fn add(&mut self, o: &ValidationStats) {
        self.converted_records += o.converted_records;
        self.conversion_ns += o.conversion_ns;
        self.temporary_memory_bytes += o.temporary_memory_bytes;
        self.invalid_message_crc += o.invalid_message_crc;
        self.invalid_magic_number += o.invalid_magic_number;
        self.invalid_offset_or_sequence += o.invalid_offset_or_sequence;
        self.no_key_compacted_topic += o.no_key_compacted_topic;
    }
}

/// A shard executor's own figures since start (glommio's
/// `ExecutorStats` and the io_uring rings' `IoStats`, accumulated by the
/// shard because glommio hands them out as deltas).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutorTotals {
    /// Time running tasks and polling I/O (`total_runtime`).
    pub busy_ns: u64,
    pub tasks_executed: u64,
    /// Times the scheduler picked a task queue to run.
    pub scheduler_runs: u64,
    /// File reads and writes submitted to the io_uring rings (DMA).
    pub uring_file_reads: u64,
    pub uring_file_writes: u64,
    pub uring_file_write_bytes: u64,
    /// Wall time and busy time since the shard's first scrape (the idle
    /// fraction "since startup" Kafka's `RequestHandlerAvgIdlePercent`
    /// mean rate reports), and between its last two scrapes (the recent
    /// one of `NetworkProcessorAvgIdlePercent`). Not added by [`Self::add`].
    pub tracked_ns: u64,
    pub tracked_busy_ns: u64,
    pub window_ns: u64,
    pub window_busy_ns: u64,
}

impl ExecutorTotals {
    pub fn add(&mut self, o: &ExecutorTotals) {
        self.busy_ns += o.busy_ns;
        self.tasks_executed += o.tasks_executed;
        self.scheduler_runs += o.scheduler_runs;
        self.uring_file_reads += o.uring_file_reads;
        self.uring_file_writes += o.uring_file_writes;
        self.uring_file_write_bytes += o.uring_file_write_bytes;
    }
}

/// Kafka's `request` label for a Fetch: recorded under `Fetch` and under
/// one of these as well (`RequestChannel.Request.metricNames`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RequestVariant {
    /// The API's own name only.
    Plain,
    FetchConsumer,
    FetchFollower,
}

/// The time split of one request (Kafka's `RequestChannel.updateRequestMetrics`),
/// in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestTimes {
    /// Read off the socket → response written.
    pub total_us: u64,
    /// Read → its handler first ran.
    pub request_queue_us: u64,
    /// Handler time outside the purgatory (this shard, owner shards, disk).
    pub local_us: u64,
    /// Parked in the purgatory (acks=all, fetch long polls).
    pub remote_us: u64,
    /// The quota throttle the response carries.
    pub throttle_us: u64,
    /// Response ready → the writer took it (responses go out in request
    /// order).
    pub response_queue_us: u64,
    /// Writing it to the socket.
    pub response_send_us: u64,
    /// The request's body size (Kafka's `sizeOfBodyInBytes`).
    pub request_bytes: u64,
    /// Records converted for it (`messageConversionsTimeNanos`), and the
    /// memory the conversions and decompression took beyond the request
    /// (`temporaryMemoryBytes`); Produce and Fetch only.
    pub conversion_us: u64,
    pub temporary_memory_bytes: u64,
}

/// The time histograms of [`RequestTimes`], in its field order.
pub const TIME_NAMES: [&str; 7] = [
    "totaltimems",
    "requestqueuetimems",
    "localtimems",
    "remotetimems",
    "throttletimems",
    "responsequeuetimems",
    "responsesendtimems",
];

/// `RequestMetrics`' histograms besides the times, after them in a
/// [`RequestSnapshot`]'s `recent`: `RequestBytes` (every request, in
/// bytes), `MessageConversionsTimeMs` (µs recorded, ms shown) and
/// `TemporaryMemoryBytes` (bytes), the last two only under the names
/// `Produce` and `Fetch` (`RequestMetrics.messageConversionsTimeHist`,
/// `tempMemoryBytesHist`).
pub const EXTRA_NAMES: [&str; 3] = [
    "requestbytes",
    "messageconversionstimems",
    "temporarymemorybytes",
];

/// One API's (or Fetch variant's) request metrics on one shard.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestStats {
    /// `RequestsPerSec` per API version.
    pub by_version: BTreeMap<i16, u64>,
    /// In [`TIME_NAMES`] order.
    pub times: [RecentHistogram; 7],
    /// The same times since start, in fixed buckets (what a reader can
    /// difference between two scrapes, unlike the recent quantiles).
    pub lifetime: [Buckets; 7],
    /// In [`EXTRA_NAMES`] order.
    pub extra: [RecentHistogram; 3],
}

impl RequestStats {
    fn record(&mut self, version: i16, t: &RequestTimes, now_ms: i64, conversions: bool) {
        *self.by_version.entry(version).or_default() += 1;
        self.extra[0].record_us(now_ms, t.request_bytes);
        if conversions {
            self.extra[1].record_us(now_ms, t.conversion_us);
            self.extra[2].record_us(now_ms, t.temporary_memory_bytes);
        }
        let values = [
            t.total_us,
            t.request_queue_us,
            t.local_us,
            t.remote_us,
            t.throttle_us,
            t.response_queue_us,
            t.response_send_us,
        ];
        for ((h, b), v) in self.times.iter_mut().zip(&mut self.lifetime).zip(values) {
            h.record_us(now_ms, v);
            b.record_us(v);
        }
    }
}

/// A listener's connections on one shard (Kafka's `socket-server-metrics`
/// of one network processor, [`SocketCounters`] as of a scrape).
/// `requests` and `responses` are named as Kafka's `Selector` names its
/// meters, from a client's side: `request` counts the sends (on a broker,
/// the responses written) and `response` the receives (the requests read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerConnections {
    pub open: u64,
    pub created: u64,
    pub closed: u64,
    pub requests: u64,
    pub responses: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub auth_ok: u64,
    pub auth_failed: u64,
}

impl ListenerConnections {
    pub fn add(&mut self, o: &ListenerConnections) {
        self.open += o.open;
        self.created += o.created;
        self.closed += o.closed;
        self.requests += o.requests;
        self.responses += o.responses;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.auth_ok += o.auth_ok;
        self.auth_failed += o.auth_failed;
    }
}

/// Reads what a Fetch's down-conversion took once its response was
/// written (the conversion runs while the response is written).
pub type ConversionProbe = Box<dyn Fn() -> ChunkStats>;

/// What a request's handler reports while it runs: its purgatory time and
/// whether it is a follower's fetch. Installed on the shard's
/// [`ShardMetrics`] while the request's future is polled (`enter`/`leave`),
/// so the purgatory and the fetch handler reach it without a parameter.
#[derive(Default)]
pub struct RequestScope {
    remote_ns: Cell<u64>,
    follower: Cell<bool>,
    started_ns: Cell<Option<u64>>,
    /// The response's error codes, one per partition answered (Kafka's
    /// `AbstractResponse.errorCounts`), as the handler reports them.
    errors: RefCell<BTreeMap<i16, u64>>,
    /// A Fetch's down-conversions per topic (they run while the response
    /// is written), and the conversions' time and memory
    /// (`RequestChannel.Request.messageConversionsTimeNanos`,
    /// `temporaryMemoryBytes`).
    fetch_conversions: RefCell<Vec<(String, ConversionProbe)>>,
    conversion_ns: Cell<u64>,
    temporary_memory_bytes: Cell<u64>,
}

impl std::fmt::Debug for RequestScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestScope")
            .field("remote_ns", &self.remote_ns.get())
            .field("follower", &self.follower.get())
            .field("started_ns", &self.started_ns.get())
            .field("conversion_ns", &self.conversion_ns.get())
            .finish_non_exhaustive()
    }
}

impl RequestScope {
    pub fn add_remote_ns(&self, ns: u64) {
        self.remote_ns.set(self.remote_ns.get().saturating_add(ns));
    }
    pub fn remote_ns(&self) -> u64 {
        self.remote_ns.get()
    }
    pub fn mark_follower(&self) {
        self.follower.set(true);
    }
    pub fn is_follower(&self) -> bool {
        self.follower.get()
    }
    /// The first time the handler ran (kept from the first call).
    pub fn on_poll(&self, now_ns: u64) {
        if self.started_ns.get().is_none() {
            self.started_ns.set(Some(now_ns));
        }
    }
    pub fn started_ns(&self) -> Option<u64> {
        self.started_ns.get()
    }
    pub fn add_error(&self, code: ErrorCode) {
        *self.errors.borrow_mut().entry(code.0).or_default() += 1;
    }
    /// The error counts reported so far (left empty).
    pub fn take_errors(&self) -> BTreeMap<i16, u64> {
        std::mem::take(&mut *self.errors.borrow_mut())
    }
    /// Converting records for this request took `ns` and `temporary_bytes`.
    pub fn add_conversion(&self, ns: u64, temporary_bytes: u64) {
        self.conversion_ns
            .set(self.conversion_ns.get().saturating_add(ns));
        self.temporary_memory_bytes.set(
            self.temporary_memory_bytes
                .get()
                .saturating_add(temporary_bytes),
        );
    }
    /// A partition of `topic` is down-converted for this Fetch; `probe`
    /// reads what it took once the response was written.
    pub fn add_fetch_conversion(&self, topic: &str, probe: ConversionProbe) {
        self.fetch_conversions
            .borrow_mut()
            .push((topic.to_owned(), probe));
    }
    /// The Fetch's conversions, read now that the response was written:
    /// their time and memory join the request's, and the records
    /// converted per topic are returned (left empty).
    pub fn settle_fetch_conversions(&self) -> Vec<(String, u64)> {
        let probes = std::mem::take(&mut *self.fetch_conversions.borrow_mut());
        let mut out: Vec<(String, u64)> = Vec::new();
        for (topic, probe) in probes {
            let done = probe();
            self.add_conversion(done.ns, done.temporary_bytes);
            match out.iter_mut().find(|(t, _)| *t == topic) {
                Some((_, n)) => *n += done.records,
                None => out.push((topic, done.records)),
            }
        }
        out.retain(|(_, n)| *n > 0);
        out
    }
    /// The conversions' time (µs) and memory so far.
    pub fn conversion_cost(&self) -> (u64, u64) {
        (
            self.conversion_ns.get() / 1_000,
            self.temporary_memory_bytes.get(),
        )
    }
}

/// The client-quota kinds Kafka's `ClientQuotaManager`s are named after
/// (their sensors' metric group: `Produce`, `Fetch`, `Request`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaKind {
    Produce,
    Fetch,
    Request,
}

impl QuotaKind {
    pub fn name(self) -> &'static str {
        match self {
            QuotaKind::Produce => "Produce",
            QuotaKind::Fetch => "Fetch",
            QuotaKind::Request => "Request",
        }
    }
}

/// Whose throttles one quota counter holds: Kafka's `throttle-time`
/// sensor tags (`ClientQuotaManager.quotaMetricTags`): the user and the
/// client id as far as the quota entity that applied names them (`""`
/// where it has no such part, e.g. `user` of a `/clients/<id>` quota).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuotaTags {
    pub kind: QuotaKind,
    pub user: String,
    pub client_id: String,
}

/// Throttled responses of one quota and their throttle time since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaThrottle {
    pub throttled: u64,
    pub throttle_ms: u64,
}

/// A shard's live metrics (see the module header).
#[derive(Debug, Default)]
pub struct ShardMetrics {
    all_topics: Cell<TopicCounters>,
    topics: RefCell<HashMap<String, TopicCounters>>,
    broker: Cell<BrokerCounters>,
    requests: RefCell<BTreeMap<(i16, RequestVariant), RequestStats>>,
    connections: RefCell<BTreeMap<String, Rc<SocketCounters>>>,
    current: RefCell<Option<Rc<RequestScope>>>,
    /// `ErrorsPerSec` per (API key, error code).
    errors: RefCell<BTreeMap<(i16, i16), u64>>,
    /// The executor's figures, added up at each scrape, and when the last
    /// scrape took them (ms).
    executor: Cell<ExecutorTotals>,
    executor_seen_ms: Cell<Option<i64>>,
    /// Client-quota throttles per quota (only clients a quota applies to).
    quota_throttles: RefCell<BTreeMap<QuotaTags, QuotaThrottle>>,
    /// `DelayedProduceMetrics` `ExpiresPerSec` per (topic, partition).
    produce_expired: RefCell<BTreeMap<(String, i32), u64>>,
    /// Requests read and not yet taken by their handler, and responses
    /// ready and not yet taken by their connection's writer (Kafka's
    /// `RequestChannel` request queue and processors' response queues).
    request_queue: Cell<u64>,
    response_queue: Cell<u64>,
}

/// A copy of a shard's counters, sent to the scraping shard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardCounters {
    pub all_topics: TopicCounters,
    pub topics: BTreeMap<String, TopicCounters>,
    pub broker: BrokerCounters,
    /// Per (API key, variant): versions seen, observations since start per
    /// time, and the recent observations (µs) per time.
    pub requests: BTreeMap<(i16, RequestVariant), RequestSnapshot>,
    pub connections: BTreeMap<String, ListenerConnections>,
    /// `RequestMetrics` `ErrorsPerSec` per (API key, error code).
    pub errors: BTreeMap<(i16, i16), u64>,
    pub quota_throttles: BTreeMap<QuotaTags, QuotaThrottle>,
    /// `DelayedProduceMetrics` `ExpiresPerSec` per (topic, partition).
    pub produce_expirations: BTreeMap<(String, i32), u64>,
    /// Gauges: the request and response queues' lengths as of the scrape.
    pub request_queue: u64,
    pub response_queue: u64,
}

/// One API's request metrics as of a scrape.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestSnapshot {
    pub by_version: BTreeMap<i16, u64>,
    pub count: u64,
    /// In [`TIME_NAMES`] then [`EXTRA_NAMES`] order; `None` when nothing
    /// is recent.
    pub recent: Vec<Option<hdrhistogram::Histogram<u64>>>,
    /// In [`TIME_NAMES`] order, since start.
    pub lifetime: [Buckets; 7],
}

impl ShardMetrics {
    /// Add `f`'s changes to `topic`'s counters and to the all-topics ones.
    fn on_topic(&self, topic: &str, f: impl Fn(&mut TopicCounters)) {
        let mut all = self.all_topics.get();
        f(&mut all);
        self.all_topics.set(all);
        // A topic named by an unknown id has no name: all topics only.
        if topic.is_empty() {
            return;
        }
        let mut topics = self.topics.borrow_mut();
        match topics.get_mut(topic) {
            Some(c) => f(c),
            None => {
                let mut c = TopicCounters::default();
                f(&mut c);
                topics.insert(topic.to_owned(), c);
            }
        }
    }

    /// One partition of a Produce request (Kafka's `appendToLocalLog`):
    /// `appended` = (records, bytes) when it was appended, else whether
    /// the failure counts as one (`failed`).
    pub fn on_produce_partition(&self, topic: &str, appended: Option<(u64, u64)>, failed: bool) {
        self.on_topic(topic, |c| {
            c.total_produce_requests += 1;
            match appended {
                Some((records, bytes)) => {
                    c.messages_in += records;
                    c.bytes_in += bytes;
                }
                None if failed => c.failed_produce_requests += 1,
                None => {}
            }
        });
    }

    /// One partition's answer to a Produce request of `bytes` record
    /// bytes: appended when it has offsets (a later acks=all timeout does
    /// not undo the append, as in Kafka), else a failure unless Kafka
    /// leaves its code out; too large records are `BytesRejected`.
    /// `validation`: what validating its records found.
    pub fn on_produce_result(
        &self,
        topic: &str,
        bytes: u64,
        code: ErrorCode,
        (base_offset, last_offset): (i64, i64),
        validation: &ValidationStats,
    ) {
        self.note_error(code);
        self.on_validation(topic, validation);
        if base_offset >= 0 && last_offset >= base_offset {
            let records = u64::try_from(last_offset - base_offset + 1).unwrap_or(0);
            self.on_produce_partition(topic, Some((records, bytes)), false);
            return;
        }
        if code == ErrorCode::MESSAGE_TOO_LARGE || code == ErrorCode::RECORD_LIST_TOO_LARGE {
            self.on_bytes_rejected(topic, bytes);
        }
        let failed = code != ErrorCode::NONE && !PRODUCE_NOT_FAILED.contains(&code);
        self.on_produce_partition(topic, None, failed);
    }

    /// A partition's validation (Kafka's `KafkaApis.processingStatsCallback`
    /// for the conversions, per topic and for all topics; the
    /// `LogValidator` marks, for all topics only): the conversions' cost
    /// goes to the current request.
    fn on_validation(&self, topic: &str, v: &ValidationStats) {
        if *v == ValidationStats::default() {
            return;
        }
        if v.converted_records > 0 {
            self.on_topic(topic, |c| {
                c.produce_message_conversions += v.converted_records;
            });
        }
        self.on_broker(|b| {
            b.invalid_message_crc += v.invalid_message_crc;
            b.invalid_magic_number += v.invalid_magic_number;
            b.invalid_offset_or_sequence += v.invalid_offset_or_sequence;
            b.no_key_compacted_topic += v.no_key_compacted_topic;
        });
        if let Some(scope) = self.current.borrow().as_ref() {
            scope.add_conversion(v.conversion_ns, v.temporary_memory_bytes);
        }
    }

    /// A Fetch response's down-conversions, per topic (Kafka marks them
    /// once the response is sent: `KafkaApis.updateConversionStats`).
    pub fn on_fetch_conversions(&self, conversions: &[(String, u64)]) {
        for (topic, records) in conversions {
            self.on_topic(topic, |c| c.fetch_message_conversions += records);
        }
    }

    /// A DelayedProduce expired with `tp`'s acks still pending
    /// (`DelayedProduceMetrics.recordExpiration`).
    pub fn on_produce_expired(&self, topic: &str, partition: i32) {
        self.on_broker(|b| b.produce_expirations += 1);
        let mut all = self.produce_expired.borrow_mut();
        match all.get_mut(&(topic.to_owned(), partition)) {
            Some(n) => *n += 1,
            None => {
                all.insert((topic.to_owned(), partition), 1);
            }
        }
    }

    /// A DelayedFetch expired (`DelayedFetch.onExpiration`).
    pub fn on_fetch_expired(&self, follower: bool) {
        self.on_broker(|b| {
            if follower {
                b.follower_fetch_expirations += 1;
            } else {
                b.consumer_fetch_expirations += 1;
            }
        });
    }

    /// A request was read (`true`) or its handler took it (`false`).
    pub fn on_request_queue(&self, queued: bool) {
        let n = self.request_queue.get();
        self.request_queue
            .set(if queued { n + 1 } else { n.saturating_sub(1) });
    }

    /// A response is ready for its writer (`true`) or the writer took it,
    /// or its connection closed (`false`).
    pub fn on_response_queue(&self, queued: bool) {
        let n = self.response_queue.get();
        self.response_queue
            .set(if queued { n + 1 } else { n.saturating_sub(1) });
    }

    /// One partition of a Fetch read with `code` (`bytes` read).
    pub fn on_fetch_result(&self, topic: &str, bytes: u64, follower: bool, code: ErrorCode) {
        self.note_error(code);
        let failed = code != ErrorCode::NONE && !FETCH_NOT_FAILED.contains(&code);
        self.on_fetch_partition(topic, bytes, follower, failed);
    }

    /// A partition's error code in the current request's response.
    fn note_error(&self, code: ErrorCode) {
        if let Some(scope) = self.current.borrow().as_ref() {
            scope.add_error(code);
        }
    }

    /// A response's error counts (Kafka's `RequestChannel` marks
    /// `ErrorsPerSec` per code of `response.errorCounts`, under the API's
    /// own name: Fetch, not FetchConsumer).
    pub fn on_request_errors(&self, api_key: i16, errors: &BTreeMap<i16, u64>) {
        let mut all = self.errors.borrow_mut();
        for (code, n) in errors {
            *all.entry((api_key, *code)).or_default() += n;
        }
    }

    /// Add glommio's executor figures handed out since the last call, at
    /// `now_ms`; the idle windows start at the first call.
    pub fn on_executor(&self, delta: &ExecutorTotals, now_ms: i64) {
        let mut t = self.executor.get();
        t.add(delta);
        if let Some(last) = self.executor_seen_ms.get() {
            let window_ns = u64::try_from(now_ms - last).unwrap_or(0) * 1_000_000;
            t.window_ns = window_ns;
            t.window_busy_ns = delta.busy_ns;
            t.tracked_ns += window_ns;
            t.tracked_busy_ns += delta.busy_ns;
        }
        self.executor_seen_ms.set(Some(now_ms));
        self.executor.set(t);
    }

    pub fn executor(&self) -> ExecutorTotals {
        self.executor.get()
    }

    /// A Produce partition refused for its size (`BytesRejectedPerSec`).
    pub fn on_bytes_rejected(&self, topic: &str, bytes: u64) {
        self.on_topic(topic, |c| c.bytes_rejected += bytes);
    }

    /// One partition of a Fetch read (Kafka's `fetchMessages`): consumer
    /// bytes go to `BytesOut`, a follower's to `ReplicationBytesOut`.
    pub fn on_fetch_partition(&self, topic: &str, bytes: u64, follower: bool, failed: bool) {
        self.on_topic(topic, |c| {
            c.total_fetch_requests += 1;
            if failed {
                c.failed_fetch_requests += 1;
            } else if !follower {
                c.bytes_out += bytes;
            }
        });
        if follower && !failed {
            self.on_broker(|b| b.replication_bytes_out += bytes);
        }
    }

    /// Broker-wide counters.
    pub fn on_broker(&self, f: impl FnOnce(&mut BrokerCounters)) {
        let mut b = self.broker.get();
        f(&mut b);
        self.broker.set(b);
    }

    /// A request answered (or finished without an answer) at `now_ms`.
    pub fn on_request(
        &self,
        api_key: i16,
        version: i16,
        variant: RequestVariant,
        times: &RequestTimes,
        now_ms: i64,
    ) {
        let mut requests = self.requests.borrow_mut();
        // Kafka's ApiKeys PRODUCE (0) and FETCH (1) keep the conversion
        // histograms, under their own names only.
        let conversions = api_key == 0 || api_key == 1;
        requests
            .entry((api_key, RequestVariant::Plain))
            .or_default()
            .record(version, times, now_ms, conversions);
        if variant != RequestVariant::Plain {
            requests
                .entry((api_key, variant))
                .or_default()
                .record(version, times, now_ms, false);
        }
    }

    /// The `socket-server-metrics` of `listener` on this shard, for a
    /// connection to count in.
    pub fn socket(&self, listener: &str) -> Rc<SocketCounters> {
        let mut conns = self.connections.borrow_mut();
        if let Some(c) = conns.get(listener) {
            return c.clone();
        }
        conns.entry(listener.to_owned()).or_default().clone()
    }

    pub fn on_connection_opened(&self, listener: &str) {
        self.socket(listener).on_opened();
    }

    pub fn on_connection_closed(&self, listener: &str) {
        self.socket(listener).on_closed();
    }

    /// The scope of the request whose future is being polled now.
    pub fn enter(&self, scope: Rc<RequestScope>) {
        *self.current.borrow_mut() = Some(scope);
    }

    pub fn leave(&self) {
        *self.current.borrow_mut() = None;
    }

    pub fn current(&self) -> Option<Rc<RequestScope>> {
        self.current.borrow().clone()
    }

    /// A copy of the counters as of `now_ms`.
    pub fn counters(&self, now_ms: i64) -> ShardCounters {
        let requests = self
            .requests
            .borrow_mut()
            .iter_mut()
            .map(|(k, s)| {
                let count = s.times[0].count();
                let recent = s
                    .times
                    .iter_mut()
                    .chain(s.extra.iter_mut())
                    .map(|h| h.recent(now_ms))
                    .collect();
                let snap = RequestSnapshot {
                    by_version: s.by_version.clone(),
                    count,
                    recent,
                    lifetime: s.lifetime,
                };
                (*k, snap)
            })
            .collect();
        ShardCounters {
            all_topics: self.all_topics.get(),
            topics: self
                .topics
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            broker: self.broker.get(),
            requests,
            connections: self
                .connections
                .borrow()
                .iter()
                .map(|(k, c)| (k.clone(), c.snapshot()))
                .collect(),
            errors: self.errors.borrow().clone(),
            quota_throttles: self.quota_throttles.borrow().clone(),
            produce_expirations: self.produce_expired.borrow().clone(),
            request_queue: self.request_queue.get(),
            response_queue: self.response_queue.get(),
        }
    }

    /// A response throttled `ms` by the quota `tags` name (Kafka's
    /// `ClientQuotaManager.recordAndGetThrottleTimeMs` records it in the
    /// entity's `throttle-time` sensor).
    pub fn on_quota_throttle(&self, tags: QuotaTags, ms: u64) {
        let mut all = self.quota_throttles.borrow_mut();
        let t = all.entry(tags).or_default();
        t.throttled += 1;
        t.throttle_ms += ms;
    }
}

mod socket;
pub use socket::SocketCounters;

#[cfg(test)]
mod tests;
