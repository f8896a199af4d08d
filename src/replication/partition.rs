//! `[drv]` One partition this shard owns (Kafka's `Partition`): its log,
//! its replica state (role, leader epoch, ISR view; the HW rule), its
//! idempotent producer state, and the append / read / offset-lookup
//! operations the Produce, Fetch and ListOffsets handlers route here
//! (locally or over the mesh). The registry of a shard's partitions is
//! [`super::replica_manager`].
//!
//! One owner per value: the log owns the log start offset, the LEO and the
//! HW it stores (Kafka's `UnifiedLog`; it bounds retention, DeleteRecords
//! and truncation), and publishes them ([`LogEnds`]); the replica state
//! decides when the HW moves. Nothing here keeps a copy.
//!
//! Concurrency: a log is appended under a per-partition glommio `RwLock`
//! write guard (appends await DMA writes); reads take the read guard, so a
//! read never observes a half-finished append.
//!
//! Idempotent producer state (KIP-98) lives with the log: sequence checks
//! run under the write guard, and the state is written to Kafka's
//! `<offset>.snapshot` files at every segment roll and at close (the newest
//! two are kept; `storage::producer_snapshot`). Opening a partition loads
//! the newest snapshot at or below the log end offset and replays the
//! batch headers logged after it, so a `kill -9` (no snapshot at the log
//! end) still rebuilds every producer's last batches from the log tail.
//! With no usable snapshot the replay starts at the log start offset: one
//! header pread per batch, the same bound Kafka accepts
//! (`loadProducerState` from the log start when it has no snapshot).
//! Producers idle past `producer.id.expiration.ms` are dropped by the
//! housekeeping timer.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use bytes::Bytes;
use glommio::sync::RwLock;

use crate::config::topic::{TimestampType, TopicConfig};
use crate::io::local_sync::{FifoGate, FifoTicket, Trigger};
use crate::io::zerocopy::OutPart;
use crate::metrics::shard::ValidationStats;
use crate::protocol::ErrorCode;
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::purgatory::view::{LogOffsetMetadata, PartitionRole, PartitionSnapshot};
use crate::replication::isr::{LeaderLog, LeaderReplicaState};
use crate::replication::leader_epoch::EpochEndOffset;
use crate::replication::producer_state::{
    BatchMetadata, ProducerBatch, ProducerStateManager, SeqCheck,
};
use crate::storage::partition_log::{LogEnds, LogEndsView, PartitionLog};
use crate::storage::producer_snapshot;
use crate::storage::shard_storage::ShardStorage;
use crate::storage::StorageError;
use crate::types::{BrokerId, LeaderEpoch, TopicPartition};

mod cleanable;
mod commit_state;
mod config;
mod delete_records;
mod follower;
mod future_replica;
mod group_commit;
pub use commit_state::DurableCounts;
use commit_state::GroupCommit;
mod legacy;
mod legacy_offsets;
mod list_offset;
pub use legacy_offsets::LegacyOffsetsQuery;
mod load;
mod metrics;
mod producers;
mod recompress;
mod timestamps;
mod txn;
mod validate;
pub use delete_records::DeletedOnLeader;
pub use follower::{FollowerAppend, FollowerLogState};
pub use future_replica::SwapPlan;
pub use load::{load_producer_state, ProducerStateLoad};
pub use txn::{MarkerSpec, VerificationGuards};
mod leader;
pub use leader::{FollowerFetch, FollowerFetchEffects, IsrAnswerEffect};

/// Kafka's `ListOffsetsRequest` special timestamps.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// KIP-734 (ListOffsets v7+).
pub const MAX_TIMESTAMP: i64 = -3;

/// Who appends (Kafka's `AppendOrigin`): a client's produce gets every
/// check; a coordinator's own records (a TxnOffsetCommit's transactional
/// batch on `__consumer_offsets`) only the producer-epoch check, as Kafka
/// validates sequences for client appends only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    Client,
    Coordinator,
}

/// One owned partition.
pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    /// Changed in place by [`Partition::apply_leadership`] (LeaderAndIsr).
    leader_epoch: Cell<LeaderEpoch>,
    /// This broker's role as the metadata snapshot names it: the leader
    /// appends and serves consumers; a follower refuses produce
    /// (NOT_LEADER_OR_FOLLOWER), as Kafka's `Partition.appendRecordsToLeader`.
    role: Cell<PartitionRole>,
    /// The assigned replicas, in the controller's order.
    replicas: RefCell<Vec<BrokerId>>,
    me: BrokerId,
    replica_lag_time_max_ms: i64,
    /// Changed in place by [`Partition::update_config`].
    config: RefCell<Rc<TopicConfig>>,
    log: RwLock<PartitionLog>,
    /// The log's shard storage, reached without the log's lock (the
    /// compacted-topic key check inflates LZ4 batches in its scratch).
    storage: Rc<ShardStorage>,
    /// The log's published offsets (read without the lock; the log writes them).
    ends: LogEndsView,
    /// The log's recovery point, read without its lock (checkpoints).
    recovery_point: Rc<Cell<i64>>,
    /// Appends run in arrival order (requests pipelined on one connection
    /// must land in the order they were sent).
    append_order: Rc<FifoGate>,
    replica: RefCell<LeaderReplicaState>,
    producers: RefCell<ProducerStateManager>,
    /// The aborted transactions of the log (`<base>.txnindex` files).
    txn_index: RefCell<crate::storage::txn_index::TxnIndex>,
    /// `shardlog.flush.every.append`: acknowledge an append only once an
    /// fdatasync covers it (else once it is written out), with group
    /// commit (see [`Partition::commit_through`]).
    durable: bool,
    group_commit: GroupCommit,
    /// `transaction.partition.verification.enable` (KIP-890).
    verify_txns: bool,
    /// The shard's source of verification guards.
    verification_guards: VerificationGuards,
    /// Fired (and replaced) when the low watermark may have moved: the
    /// DeleteRecords requests waiting for it check again.
    delete_waiters: RefCell<Rc<Trigger>>,
    /// The log dir holding the log (`LogDirs` index; 0 unless placed).
    log_dir: Cell<usize>,
    /// Its log dir went offline (Kafka's `HostedPartition.Offline`): every
    /// request answers KAFKA_STORAGE_ERROR, whatever the role, until the
    /// broker restarts.
    offline: Cell<bool>,
}

/// A partition's leadership as LeaderAndIsr (or the embedded controller)
/// names it: what [`Partition::apply_leadership`] changes in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    pub role: PartitionRole,
    pub leader_epoch: LeaderEpoch,
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
}

/// The ISR the leader-side replica state starts from: the controller's
/// when it names this broker, else none (a follower out of the ISR; the
/// state is only consulted while leading, and a controller's data must
/// not reach its invariant check).
fn replica_state_isr(me: BrokerId, isr: &[BrokerId]) -> Vec<BrokerId> {
    if isr.contains(&me) {
        isr.to_vec()
    } else {
        Vec::new()
    }
}

/// What [`Partition::open`] needs besides the log.
pub struct PartitionSpec {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    pub leader_epoch: LeaderEpoch,
    pub role: PartitionRole,
    pub config: TopicConfig,
    /// This broker, the replicas and the ISR from the metadata snapshot.
    pub me: BrokerId,
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
    pub replica_lag_time_max_ms: i64,
    pub durable: bool,
    pub durable_counts: DurableCounts,
    /// `transaction.partition.verification.enable`.
    pub verify_txns: bool,
    /// The shard's KIP-890 guard counter (outlives the partition).
    pub verification_guards: VerificationGuards,
    /// Wall-clock time of the open (the replica state's "caught up" times).
    pub now_ms: i64,
}

/// The answer to one partition's append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResult {
    pub error_code: ErrorCode,
    pub base_offset: i64,
    pub last_offset: i64,
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    pub snapshot: Option<PartitionSnapshot>,
    /// Produce v8+ (KIP-467): the records `LogValidator` refused, as
    /// (batch index, message), and the partition's error message.
    pub record_errors: Vec<(i32, String)>,
    pub error_message: Option<String>,
    /// What validating the records found (conversions, refusals), for
    /// the produce handler's `BrokerTopicMetrics`.
    pub validation: ValidationStats,
}

impl ProduceResult {
    pub fn error(error_code: ErrorCode) -> Self {
        Self {
            error_code,
            base_offset: -1,
            last_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
            snapshot: None,
            record_errors: Vec::new(),
            error_message: None,
            validation: ValidationStats::default(),
        }
    }

    /// The same answer with `validation`'s findings.
    #[must_use]
    pub fn with_validation(self, validation: ValidationStats) -> Self {
        Self { validation, ..self }
    }
}

/// The answer to one partition's read, from the log to the socket: the
/// records are the response's parts (cached `Bytes` or a segment region
/// sent with sendfile; they may cross shards, see `shard::datapath`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadAnswer {
    pub error_code: ErrorCode,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub records: Vec<OutPart>,
    pub bytes: usize,
    pub snapshot: Option<PartitionSnapshot>,
    /// A follower fetch whose last fetched epoch diverged (KIP-320).
    pub diverging_epoch: Option<EpochEndOffset>,
    /// read_committed: `(producer_id, first_offset)` of the aborted
    /// transactions the records may hold; `None` otherwise.
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
}

impl ReadAnswer {
    pub fn error(error_code: ErrorCode) -> Self {
        Self {
            error_code,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            records: Vec::new(),
            bytes: 0,
            snapshot: None,
            diverging_epoch: None,
            aborted_transactions: None,
        }
    }
}

/// The answer to a ListOffsets lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAnswer {
    pub error_code: ErrorCode,
    pub timestamp: i64,
    pub offset: i64,
    pub leader_epoch: LeaderEpoch,
}

impl OffsetAnswer {
    pub fn error(error_code: ErrorCode) -> Self {
        Self {
            error_code,
            timestamp: -1,
            offset: -1,
            leader_epoch: LeaderEpoch::UNKNOWN,
        }
    }
}

impl Partition {
    /// Open the partition over its opened `log`: replica state from the
    /// snapshot's replicas and ISR, producer state from the newest usable
    /// snapshot file plus the log tail.
    pub fn open(spec: PartitionSpec, mut log: PartitionLog) -> Result<Self, StorageError> {
        let LogEnds {
            log_end_offset: leo,
            high_watermark: hw,
            ..
        } = log.ends();
        // Kafka's becomeLeader + maybeIncrementLeaderHW: with every replica
        // in the ISR at its LEO (a single broker: ISR = {self}), the HW rule
        // moves the HW to the LEO as soon as we lead.
        let mut replica = LeaderReplicaState::become_leader(
            spec.me,
            &spec.replicas,
            &replica_state_isr(spec.me, &spec.isr),
            spec.replica_lag_time_max_ms,
            spec.now_ms,
        );
        if spec.role == PartitionRole::Leader {
            let ends = LeaderLog {
                log_end_offset: leo,
                high_watermark: hw,
            };
            if let Some(hw) = replica
                .on_leader_append(spec.now_ms, ends)
                .high_watermark_advanced
            {
                log.set_high_watermark(hw);
            }
        }
        let mut txn_index =
            crate::storage::txn_index::TxnIndex::load(log.dir(), &log.segment_base_offsets())?;
        let (producers, load) = load_producer_state(&log, &mut txn_index)?;
        tracing::debug!(tp = %spec.tp, ?load, producers = producers.len(), "producer state loaded");
        Ok(Partition {
            tp: spec.tp,
            topic_id: spec.topic_id,
            leader_epoch: Cell::new(spec.leader_epoch),
            role: Cell::new(spec.role),
            replicas: RefCell::new(spec.replicas),
            me: spec.me,
            replica_lag_time_max_ms: spec.replica_lag_time_max_ms,
            config: RefCell::new(Rc::new(spec.config)),
            ends: log.ends_view(),
            recovery_point: log.recovery_point_view(),
            storage: log.storage().clone(),
            log: RwLock::new(log),
            append_order: Rc::new(FifoGate::default()),
            replica: RefCell::new(replica),
            producers: RefCell::new(producers),
            txn_index: RefCell::new(txn_index),
            durable: spec.durable,
            verify_txns: spec.verify_txns,
            verification_guards: spec.verification_guards,
            group_commit: GroupCommit {
                committed_end: Cell::new(leo),
                counts: spec.durable_counts,
                ..GroupCommit::default()
            },
            delete_waiters: RefCell::new(Rc::new(Trigger::default())),
            log_dir: Cell::new(0),
            offline: Cell::new(false),
        })
    }

    /// The same partition, its log in log dir `i` (`LogDirs` index).
    #[must_use]
    pub fn in_log_dir(self, i: usize) -> Self {
        self.log_dir.set(i);
        self
    }

    pub fn log_dir(&self) -> usize {
        self.log_dir.get()
    }

    /// Its log dir went offline: serve nothing more (see the field). The
    /// log is left as it is: no write or fsync reaches a failed dir.
    pub fn mark_offline(&self) {
        if !self.offline.replace(true) {
            tracing::warn!(tp = %self.tp, "partition offline: its log dir failed");
            self.wake_delete_waiters();
        }
    }

    pub fn is_offline(&self) -> bool {
        self.offline.get()
    }

    /// The role as requests see it: Offline once the log dir failed.
    pub fn role(&self) -> PartitionRole {
        if self.offline.get() {
            PartitionRole::Offline
        } else {
            self.role.get()
        }
    }

    /// What a request the role refuses is told: KAFKA_STORAGE_ERROR in an
    /// offline dir (Kafka's `getPartitionOrException`), else
    /// NOT_LEADER_OR_FOLLOWER.
    fn not_serving(&self) -> ErrorCode {
        if self.offline.get() {
            ErrorCode::KAFKA_STORAGE_ERROR
        } else {
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        }
    }

    pub fn leader_epoch(&self) -> LeaderEpoch {
        self.leader_epoch.get()
    }

    /// The leadership as it is now.
    pub fn leadership(&self) -> Leadership {
        Leadership {
            role: self.role.get(),
            leader_epoch: self.leader_epoch.get(),
            replicas: self.replicas.borrow().clone(),
            isr: self.replica.borrow().isr().to_vec(),
        }
    }

    /// Become leader or follower in place (Kafka's `Partition.makeLeader`
    /// / `makeFollower`): the new epoch, replicas and ISR, the leader-side
    /// replica state started afresh under a new epoch (follower LEOs
    /// unknown; the same epoch updates it in place); a new leader
    /// applies the HW rule at once (with the ISR = itself, the HW moves to
    /// the LEO). Runs under the log's write guard, so an append either
    /// finished under the old role or sees the new one. A follower is only
    /// marked: fetching from the leader is the replica fetcher's.
    pub async fn apply_leadership(&self, next: Leadership, now_ms: i64) {
        let Ok(mut log) = self.log.write().await else {
            tracing::warn!(tp = %self.tp, "partition lock poisoned; leadership unchanged");
            return;
        };
        let ends = log.ends();
        let ends = LeaderLog {
            log_end_offset: ends.log_end_offset,
            high_watermark: ends.high_watermark,
        };
        // Kafka's `makeLeader` with an unchanged leader epoch (an ISR or
        // replica change, e.g. the snapshot republished after an
        // AlterPartition): update in place, keeping follower LEOs and
        // caught-up times.
        let in_place = next.role == PartitionRole::Leader
            && self.role.get() == PartitionRole::Leader
            && next.leader_epoch == self.leader_epoch.get();
        if in_place {
            let isr = replica_state_isr(self.me, &next.isr);
            let advanced =
                self.replica
                    .borrow_mut()
                    .on_assignment_updated(now_ms, ends, &next.replicas, &isr);
            if let Some(hw) = advanced.high_watermark_advanced {
                log.set_high_watermark(hw);
            }
            *self.replicas.borrow_mut() = next.replicas;
            return;
        }
        let mut replica = LeaderReplicaState::become_leader(
            self.me,
            &next.replicas,
            &replica_state_isr(self.me, &next.isr),
            self.replica_lag_time_max_ms,
            now_ms,
        );
        if next.role == PartitionRole::Leader {
            if let Some(hw) = replica
                .on_leader_append(now_ms, ends)
                .high_watermark_advanced
            {
                log.set_high_watermark(hw);
            }
        }
        tracing::info!(
            tp = %self.tp,
            role = ?next.role,
            leader_epoch = %next.leader_epoch,
            "leadership changed"
        );
        *self.replica.borrow_mut() = replica;
        self.role.set(next.role);
        self.leader_epoch.set(next.leader_epoch);
        *self.replicas.borrow_mut() = next.replicas;
        // A DeleteRecords wait ends when the leadership does.
        self.wake_delete_waiters();
    }

    /// The state delayed operations test against, from the log's
    /// published offsets.
    pub fn snapshot(&self) -> PartitionSnapshot {
        let ends = self.ends.get();
        let leo = LogOffsetMetadata::new(ends.log_end_offset, 0, ends.log_end_position);
        let hw = LogOffsetMetadata::new(ends.high_watermark, 0, ends.high_watermark_position);
        PartitionSnapshot {
            role: self.role(),
            leader_epoch: self.leader_epoch.get(),
            log_start_offset: ends.log_start_offset,
            log_end_offset: leo,
            high_watermark: hw,
            last_stable_offset: self.last_stable(hw),
            isr_size: self.replica.borrow().isr().len() as u32,
            min_insync_replicas: self.config().min_insync_replicas.max(1) as u32,
        }
    }

    /// The checkpoints' offsets from the published ends, without taking
    /// the log's lock (a periodic round must not queue behind appends).
    pub fn checkpoint_offsets(&self) -> crate::storage::log_dir::PartitionOffsets {
        let ends = self.ends.get();
        crate::storage::log_dir::PartitionOffsets {
            tp: self.tp.clone(),
            recovery_point: self.recovery_point.get(),
            high_watermark: ends.high_watermark,
            log_start_offset: ends.log_start_offset,
            log_dir: self.log_dir.get(),
        }
    }

    /// The log, for the shard's housekeeping and shutdown.
    pub(super) fn log(&self) -> &RwLock<PartitionLog> {
        &self.log
    }

    /// Active producers' last entries, for the log cleaner.
    pub(super) fn last_records_of_active_producers(
        &self,
    ) -> std::collections::BTreeMap<i64, crate::storage::cleaner::filter::LastRecord> {
        self.producers.borrow().last_records()
    }

    /// Kafka's `producer.id.expiration.ms`: drop producers idle past it.
    pub(super) fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers
            .borrow_mut()
            .remove_expired(now_ms, expiration_ms)
    }

    /// The log, once nothing else holds the partition (close).
    pub(super) fn into_log(self) -> Result<PartitionLog, ()> {
        self.log.into_inner().map_err(|_| ())
    }

    /// The encoded producer state (for the snapshot written at close).
    pub(super) fn encoded_producer_state(&self) -> Vec<u8> {
        self.producers.borrow().encode_snapshot()
    }

    /// Kafka's idempotence check (`analyzeAndValidateProducerState`), run
    /// under the log's write guard: `Some(answer)` when the batch must not
    /// be appended (a retried duplicate, or a sequence/epoch error).
    fn check_producer(&self, batch: &ProducerBatch) -> Option<ProduceResult> {
        match self.producers.borrow().check(batch) {
            Ok(SeqCheck::Append) => None,
            Ok(SeqCheck::Duplicate(meta)) => {
                // A retry of a batch already in the log: its original offsets.
                tracing::debug!(
                    tp = %self.tp,
                    producer_id = batch.producer_id,
                    first_seq = batch.first_seq,
                    base_offset = meta.first_offset,
                    "duplicate batch answered with its original offsets"
                );
                Some(ProduceResult {
                    error_code: ErrorCode::NONE,
                    base_offset: meta.first_offset,
                    last_offset: meta.last_offset,
                    log_append_time_ms: -1,
                    log_start_offset: self.ends.get().log_start_offset,
                    snapshot: Some(self.snapshot()),
                    ..ProduceResult::error(ErrorCode::NONE)
                })
            }
            Err(e) => Some(ProduceResult::error(ErrorCode(e.error_code()))),
        }
    }

    /// Kafka snapshots producer state when a segment rolls, at the new
    /// segment's base offset. Called after the append that rolled and
    /// before its `on_append`, so the state is exactly that of every batch
    /// below the new base offset.
    fn maybe_snapshot_on_roll(&self, log: &PartitionLog, active_before: i64) {
        let rolled_at = log.active_segment_base_offset();
        if rolled_at != active_before {
            let bytes = self.producers.borrow().encode_snapshot();
            producer_snapshot::write_snapshot_in_background(
                self.tp.clone(),
                log.dir().to_path_buf(),
                rolled_at,
                bytes,
            );
        }
    }

    /// The HW rule after the log end moved to `leo`, whose logical byte
    /// position is `leo_position`: the replica state decides, the log
    /// stores.
    fn advance_high_watermark(
        &self,
        log: &mut PartitionLog,
        now_ms: i64,
        leo: i64,
        leo_position: i64,
    ) {
        let ends = LeaderLog {
            log_end_offset: leo,
            high_watermark: log.ends().high_watermark,
        };
        let advanced = self.replica.borrow_mut().on_leader_append(now_ms, ends);
        if let Some(hw) = advanced.high_watermark_advanced {
            log.set_high_watermark_at(hw, leo_position);
        }
    }

    /// This append's place in the partition's append order, taken now
    /// (synchronously): appends run in the order their places were taken,
    /// whatever each waits for before its turn. A produce request takes
    /// its places on all its partitions at once (`ReplicaManager::
    /// queue_appends`), then appends them one by one with
    /// [`Self::append_in_turn`].
    pub fn queue_append(&self) -> FifoTicket {
        self.append_order.ticket()
    }

    /// Append one produce request's records for this partition, queued
    /// now; see [`Self::append_in_turn`].
    pub async fn append(&self, records: Bytes, now_ms: i64, required_acks: i16) -> ProduceResult {
        let ticket = self.queue_append();
        self.append_in_turn(
            ticket,
            records,
            now_ms,
            required_acks,
            AppendOrigin::Client,
            None,
        )
        .await
    }

    /// Append one produce request's records for this partition once
    /// `ticket` ([`Self::queue_append`]) has its turn; `required_acks` -1
    /// refuses the append with NOT_ENOUGH_REPLICAS while the ISR is
    /// smaller than `min.insync.replicas` (Kafka's `appendRecordsToLeader`:
    /// nothing is appended). `guard` is the KIP-890 verification guard
    /// ([`Self::start_txn_verification`]) a transactional batch opening
    /// a transaction here needs.
    pub async fn append_in_turn(
        &self,
        ticket: FifoTicket,
        records: Bytes,
        now_ms: i64,
        required_acks: i16,
        origin: AppendOrigin,
        guard: Option<u64>,
    ) -> ProduceResult {
        if self.role() != PartitionRole::Leader {
            return ProduceResult::error(self.not_serving());
        }
        let (records, batch, max_timestamp, validation) =
            match self.validate_for_leader(records, now_ms, origin) {
                Ok(v) => v,
                Err(refused) => return *refused,
            };
        ticket.turn().await;
        let Ok(mut log) = self.log.write().await else {
            return ProduceResult::error(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        };
        // Leadership may have moved while this append waited its turn.
        if self.role() != PartitionRole::Leader {
            return ProduceResult::error(self.not_serving());
        }
        // A log failed by an earlier write or fsync refuses before the
        // sequence check, as Kafka's `UnifiedLog.append` does
        // (`checkIfMemoryMappedBufferClosed` comes before
        // `analyzeAndValidateProducerState`). Its dir goes offline at the
        // next housekeeping round; until then an idempotent producer's
        // pipelined batches must not be told OUT_OF_ORDER_SEQUENCE_NUMBER
        // (the failed batch never reached the producer state): librdkafka
        // then bumps its epoch and renumbers, and a batch the follower
        // already holds is appended again at the new leader.
        if log.is_poisoned() {
            return ProduceResult::error(ErrorCode::KAFKA_STORAGE_ERROR);
        }
        if required_acks == -1 && !self.enough_replicas_for_acks_all() {
            return ProduceResult::error(ErrorCode::NOT_ENOUGH_REPLICAS);
        }
        let refused = match origin {
            AppendOrigin::Client => self.check_producer(&batch),
            AppendOrigin::Coordinator => self
                .producers
                .borrow()
                .check_epoch(&batch)
                .err()
                .map(|e| ProduceResult::error(ErrorCode(e.error_code()))),
        };
        if let Some(answer) = refused.or_else(|| self.check_verified(&batch, guard)) {
            // A retried duplicate was validated (and converted) again.
            return if answer.error_code == ErrorCode::NONE {
                answer.with_validation(validation)
            } else {
                answer
            };
        }
        let log_append_time = self.config().message_timestamp_type == TimestampType::LogAppendTime;
        let active_before = log.active_segment_base_offset();
        let position = log.ends().log_end_position;
        let info = match log
            .append_validated(records, self.leader_epoch.get().0, now_ms, log_append_time)
            .await
        {
            Ok(info) => info,
            Err(e) => {
                match e {
                    StorageError::Io(_) => {
                        tracing::error!(tp = %self.tp, error = %e, "append failed");
                    }
                    // Said once when the log failed; a client retrying
                    // KAFKA_STORAGE_ERROR must not flood the log.
                    StorageError::Poisoned => {
                        tracing::debug!(tp = %self.tp, "append refused: log failed earlier");
                    }
                    _ => {}
                }
                return ProduceResult::error(ErrorCode(e.kafka_error_code()));
            }
        };
        self.maybe_snapshot_on_roll(&log, active_before);
        let meta = BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            max_timestamp,
        };
        self.producers
            .borrow_mut()
            .on_append(&batch, meta, now_ms, Some(position));
        drop(ticket);
        let answer = self.finish_leader_append(log, info, now_ms).await;
        // Kafka counts the conversions of appended records only (a failed
        // append's `LogAppendInfo` has empty stats).
        if answer.error_code == ErrorCode::NONE {
            answer.with_validation(validation)
        } else {
            answer
        }
    }

    /// After a leader append: the acknowledgement and the HW wait for the
    /// group commit that writes the append out (fdatasyncs it too with
    /// `shardlog.flush.every.append`), see `group_commit`.
    async fn finish_leader_append(
        &self,
        log: glommio::sync::RwLockWriteGuard<'_, PartitionLog>,
        info: crate::storage::partition_log::AppendInfo,
        now_ms: i64,
    ) -> ProduceResult {
        drop(log);
        if let Err(code) = self.commit_through(info.last_offset + 1, now_ms).await {
            return ProduceResult::error(code);
        }
        if self.durable {
            self.group_commit.counts.add(1, 0);
        }
        ProduceResult {
            error_code: ErrorCode::NONE,
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time_ms: info.log_append_time_ms,
            log_start_offset: info.log_start_offset,
            snapshot: Some(self.snapshot()),
            ..ProduceResult::error(ErrorCode::NONE)
        }
    }

    /// Whole batches from `offset`, bounded by `isolation`'s watermark.
    pub async fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        isolation: FetchIsolation,
        min_one_batch: bool,
    ) -> ReadAnswer {
        if self.is_offline() {
            return ReadAnswer::error(ErrorCode::KAFKA_STORAGE_ERROR);
        }
        let Ok(log) = self.log.read().await else {
            return ReadAnswer::error(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        };
        let ends = log.ends();
        let lso = self.last_stable_offset(ends.high_watermark);
        let upper = match isolation {
            FetchIsolation::HighWatermark => ends.high_watermark,
            FetchIsolation::TxnCommitted => lso,
            FetchIsolation::LogEnd => ends.log_end_offset,
        };
        let (error_code, records, bytes) = match log.read(offset, max_bytes, upper, min_one_batch) {
            Ok(r) => (ErrorCode::NONE, r.regions, r.bytes),
            Err(e) => {
                // Kafka's `ReplicaManager.createLogReadResult(e)`: a read
                // that failed (OFFSET_OUT_OF_RANGE, …) reports no offsets.
                return ReadAnswer {
                    snapshot: Some(self.snapshot()),
                    ..ReadAnswer::error(ErrorCode(e.kafka_error_code()))
                };
            }
        };
        // read_committed: the aborted transactions the records may hold
        // (the client drops their records; Kafka's `FetchResponse`
        // `aborted_transactions`, null for read_uncommitted).
        let aborted_transactions = (isolation == FetchIsolation::TxnCommitted
            && error_code == ErrorCode::NONE)
            .then(|| self.aborted_in(offset, upper));
        ReadAnswer {
            error_code,
            high_watermark: ends.high_watermark,
            last_stable_offset: lso,
            aborted_transactions,
            log_start_offset: ends.log_start_offset,
            records,
            bytes,
            snapshot: Some(self.snapshot()),
            diverging_epoch: None,
        }
    }
}
