//! `[drv]` The partitions a data shard owns (ARCHITECTURE.md §2): their logs,
//! leader replica state (HW kept apart from LEO), idempotent producer state,
//! and the append / read / offset-lookup operations the Produce, Fetch and
//! ListOffsets handlers route here (locally or over the mesh).
//!
//! Ownership: partition `(t, p)` lives on shard `shard_of(t, p)`. The set of
//! partitions follows the metadata snapshot: [`PartitionRegistry::sync`]
//! opens the ones this shard should own and closes (and, for deleted topics,
//! removes) the others.
//!
//! Concurrency: a log is appended under a per-partition glommio `RwLock`
//! write guard (appends await DMA writes); reads take the read guard, so a
//! read never observes a half-finished append.
//!
//! Idempotent producer state (KIP-98) lives with the log: sequence checks
//! run under the write guard, and the state is written to Kafka's
//! `<offset>.snapshot` files at every segment roll and at close (the newest
//! two are kept). Opening a partition loads the newest snapshot at or below
//! the log end offset and replays the batch headers logged after it, so a
//! `kill -9` (no snapshot at the log end) still rebuilds every producer's
//! last batches from the log tail. With no usable snapshot the replay
//! starts at the log start offset: one header pread per batch, the same
//! bound Kafka accepts (`loadProducerState` from the log start when it has
//! no snapshot). Producers idle past `producer.id.expiration.ms` are
//! dropped by the housekeeping timer.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use glommio::sync::RwLock;

use crate::config::topic::{TimestampType, TopicConfig};
use crate::config::ServerConfig;
use crate::metadata::Snapshot;
use crate::protocol::ErrorCode;
use crate::protocol::{record_batch, record_walk};
use crate::purgatory::view::{LogOffsetMetadata, PartitionRole, PartitionSnapshot};
use crate::replication::isr::LeaderReplicaState;
use crate::replication::producer_state::{
    parse_snapshot_file_name, plan_snapshot_load, snapshot_file_name, snapshots_to_delete,
    BatchMetadata, LoggedBatch, ProducerBatch, ProducerStateManager, SeqCheck, SNAPSHOTS_KEPT,
};
use crate::storage::batch_cache::{BatchCache, SharedBatchCache};
use crate::storage::config::LogConfig;
use crate::storage::log_dir::PartitionOffsets;
use crate::storage::partition_log::{PartitionLog, Region, ValidatedRecords};
use crate::storage::StorageError;
use crate::types::{ShardId, TopicPartition};

use super::local_sync::{FifoGate, Trigger};
use super::placement::shard_of;

/// Kafka's `ListOffsetsRequest` special timestamps.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// KIP-734 (ListOffsets v7+).
pub const MAX_TIMESTAMP: i64 = -3;

/// One owned partition.
pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    pub leader_epoch: i32,
    pub config: TopicConfig,
    log: RwLock<PartitionLog>,
    /// Appends run in arrival order (requests pipelined on one connection
    /// must land in the order they were sent).
    append_order: Rc<FifoGate>,
    replica: RefCell<LeaderReplicaState>,
    producers: RefCell<ProducerStateManager>,
    /// Bytes appended since open: a logical position for DelayedFetch's
    /// byte accounting (`LogOffsetMetadata.relative_position`).
    leo_position: Cell<i64>,
    hw_position: Cell<i64>,
    leo: Cell<i64>,
    log_start: Cell<i64>,
    /// `shardlog.flush.every.append`: acknowledge an append only once an
    /// fdatasync covers it, with group commit (see [`Partition::sync_through`]).
    durable: bool,
    durable_sync: DurableSync,
}

/// Group-commit state of a durable partition: appends buffer under the log
/// lock and then wait for one fdatasync that covers them all, instead of
/// holding the lock through an fsync each.
#[derive(Default)]
struct DurableSync {
    /// Every offset below this is on disk (fdatasync done).
    synced_end: Cell<i64>,
    /// A sync leader is flushing now.
    syncing: Cell<bool>,
    /// The last flush failed: the log is poisoned (no retry of an fsync).
    failed: Cell<bool>,
    /// Fired when the current sync round ends; replaced for the next one.
    round: RefCell<Rc<Trigger>>,
}

thread_local! {
    /// This shard's group-commit counters: (durable appends, fdatasync rounds).
    static DURABLE_COUNTS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// This shard's (durable appends acknowledged, fdatasync rounds) since start:
/// their ratio is the group-commit batching factor.
pub fn durable_counts() -> (u64, u64) {
    DURABLE_COUNTS.with(Cell::get)
}

fn count_durable(appends: u64, syncs: u64) {
    DURABLE_COUNTS.with(|c| {
        let (a, s) = c.get();
        c.set((a + appends, s + syncs));
    });
}

/// The answer to one partition's append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceResult {
    pub error_code: i16,
    pub base_offset: i64,
    pub last_offset: i64,
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    pub snapshot: Option<PartitionSnapshot>,
}

impl ProduceResult {
    pub fn error(error_code: i16) -> Self {
        Self {
            error_code,
            base_offset: -1,
            last_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
            snapshot: None,
        }
    }
}

/// Which watermark bounds a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBound {
    HighWatermark,
    LastStable,
    LogEnd,
}

/// The answer to one partition's read (it may cross shards: see
/// `datapath::local_read`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadAnswer {
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub regions: Vec<Region>,
    pub bytes: usize,
    pub snapshot: Option<PartitionSnapshot>,
}

impl ReadAnswer {
    pub fn error(error_code: i16) -> Self {
        Self {
            error_code,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            regions: Vec::new(),
            bytes: 0,
            snapshot: None,
        }
    }
}

/// The answer to a ListOffsets lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAnswer {
    pub error_code: i16,
    pub timestamp: i64,
    pub offset: i64,
    pub leader_epoch: i32,
}

/// Half of physical memory divided among `n_shards` (unbounded if the
/// host does not say).
fn half_of_memory_per_shard(n_shards: usize) -> usize {
    // SAFETY: sysconf only reads system values.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page <= 0 {
        return usize::MAX;
    }
    (pages as usize).saturating_mul(page as usize) / 2 / n_shards.max(1)
}

/// `shardlog.write.buffer.bytes`, kept between one page and 64 MiB.
fn write_buffer_bytes(configured: u64) -> usize {
    usize::try_from(configured)
        .unwrap_or(1 << 20)
        .clamp(4096, 64 << 20)
}

/// The storage layer's view of a topic's config.
pub fn log_config(topic: &TopicConfig, server: &ServerConfig) -> LogConfig {
    LogConfig {
        segment_bytes: topic.segment_bytes.max(1) as u64,
        segment_ms: topic.segment_ms,
        segment_index_bytes: topic.segment_index_bytes.max(8) as u64,
        index_interval_bytes: topic.index_interval_bytes.max(0) as u64,
        flush_messages: topic.flush_messages,
        flush_ms: topic.flush_ms,
        retention_ms: topic.retention_ms,
        retention_bytes: topic.retention_bytes,
        max_message_bytes: topic.max_message_bytes.max(0) as usize,
        preallocate: topic.preallocate,
        message_timestamp_log_append_time: topic.message_timestamp_type
            == TimestampType::LogAppendTime,
        // shardlog.flush.every.append is group-committed by the partition
        // (Partition::sync_through), not flushed by the log per append.
        flush_every_append: false,
        write_buffer_bytes: write_buffer_bytes(server.shardlog_write_buffer_bytes),
        readahead_bytes: server.shardlog_fetch_readahead_bytes,
        recycle_segments: server.shardlog_segment_recycle,
        ..LogConfig::default()
    }
}

impl Partition {
    fn snapshot(&self) -> PartitionSnapshot {
        let replica = self.replica.borrow();
        let leo = LogOffsetMetadata::new(self.leo.get(), 0, self.leo_position.get());
        let hw = LogOffsetMetadata::new(replica.high_watermark(), 0, self.hw_position.get());
        PartitionSnapshot {
            role: PartitionRole::Leader,
            leader_epoch: self.leader_epoch,
            log_start_offset: self.log_start.get(),
            log_end_offset: leo,
            high_watermark: hw,
            // No transactions yet: the LSO is the HW.
            last_stable_offset: hw,
            isr_size: replica.isr().len() as u32,
            min_insync_replicas: self.config.min_insync_replicas.max(1) as u32,
        }
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
                    error_code: 0,
                    base_offset: meta.first_offset,
                    last_offset: meta.last_offset,
                    log_append_time_ms: -1,
                    log_start_offset: self.log_start.get(),
                    snapshot: Some(self.snapshot()),
                })
            }
            Err(e) => Some(ProduceResult::error(e.error_code())),
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
            write_snapshot_in_background(
                self.tp.clone(),
                log.dir().to_path_buf(),
                rolled_at,
                bytes,
            );
        }
    }

    /// The single-replica HW rule after the log end moved to `leo`, whose
    /// logical byte position is `leo_position`.
    fn advance_high_watermark(
        &self,
        log: &mut PartitionLog,
        now_ms: i64,
        leo: i64,
        leo_position: i64,
    ) {
        let advanced = self.replica.borrow_mut().on_leader_append(now_ms, leo);
        if let Some(hw) = advanced.high_watermark_advanced {
            log.set_high_watermark(hw);
            if hw == leo {
                self.hw_position.set(leo_position);
            }
        }
    }

    /// Group commit for `shardlog.flush.every.append`: return once every
    /// offset below `end` is fdatasynced. The first waiter to find no sync
    /// running becomes the leader: it takes the log lock, writes out and
    /// fdatasyncs everything appended so far, advances the HW to that log
    /// end and wakes the others; appends that arrived meanwhile are covered
    /// by the next round. A failed flush poisons the log (storage never
    /// retries an fsync) and fails every waiter with its error code.
    async fn sync_through(&self, end: i64, now_ms: i64) -> Result<(), i16> {
        let sync = &self.durable_sync;
        loop {
            if sync.failed.get() {
                return Err(ErrorCode::KAFKA_STORAGE_ERROR.0);
            }
            if sync.synced_end.get() >= end {
                return Ok(());
            }
            if sync.syncing.get() {
                let round = sync.round.borrow().clone();
                round.wait().await;
                continue;
            }
            sync.syncing.set(true);
            count_durable(0, 1);
            let synced = self.lead_one_sync(now_ms).await;
            match synced {
                Some(leo) => sync.synced_end.set(sync.synced_end.get().max(leo)),
                None => sync.failed.set(true),
            }
            sync.syncing.set(false);
            let done =
                std::mem::replace(&mut *sync.round.borrow_mut(), Rc::new(Trigger::default()));
            done.fire();
        }
    }

    /// One group-commit round: write out under the log lock, fdatasync
    /// without it (appends keep buffering), then record the sync and move
    /// the HW to the synced log end. `None` if it failed (log poisoned).
    async fn lead_one_sync(&self, now_ms: i64) -> Option<i64> {
        let (pending, position) = {
            let Ok(mut log) = self.log.write().await else {
                return None;
            };
            match log.write_out().await {
                Ok(p) => (p, self.leo_position.get()),
                Err(e) => {
                    tracing::error!(tp = %self.tp, error = %e, "write-out failed");
                    return None;
                }
            }
        };
        let synced = pending.sync().await;
        let Ok(mut log) = self.log.write().await else {
            return None;
        };
        log.on_synced(&pending, synced.is_ok());
        if let Err(e) = synced {
            tracing::error!(tp = %self.tp, error = %e, "fdatasync failed; log poisoned");
            return None;
        }
        let leo = pending.log_end_offset;
        self.advance_high_watermark(&mut log, now_ms, leo, position);
        Some(leo)
    }

    /// Append one produce request's records for this partition.
    async fn append(&self, records: Bytes, now_ms: i64) -> ProduceResult {
        // Take our place before the first await.
        let ticket = self.append_order.ticket();
        // Validated once here (CRC included); the log appends these bytes
        // without checking them again and without an intermediate copy.
        let records = match ValidatedRecords::new(records) {
            Ok(r) => r,
            Err(e) => return ProduceResult::error(e.kafka_error_code()),
        };
        // Kafka: v3+ produce requests carry exactly one v2 batch per partition.
        let summary = match records.summaries() {
            [one] => one.clone(),
            _ => return ProduceResult::error(ErrorCode::INVALID_RECORD.0),
        };
        let batch = match record_batch::RecordBatch::new_unchecked_crc(
            &records.bytes()[summary.range.clone()],
        ) {
            Ok(view) => ProducerBatch {
                producer_id: view.producer_id(),
                epoch: view.producer_epoch(),
                first_seq: view.base_sequence(),
                last_seq: view.base_sequence().wrapping_add(view.last_offset_delta()),
            },
            Err(e) => return ProduceResult::error(e.kafka_error_code()),
        };
        ticket.turn().await;
        let Ok(mut log) = self.log.write().await else {
            return ProduceResult::error(ErrorCode::NOT_LEADER_OR_FOLLOWER.0);
        };
        if let Some(answer) = self.check_producer(&batch) {
            return answer;
        }
        let size = records.bytes().len() as i64;
        let log_append_time = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let active_before = log.active_segment_base_offset();
        let info = match log
            .append_validated(records, self.leader_epoch, now_ms, log_append_time)
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
                return ProduceResult::error(e.kafka_error_code());
            }
        };
        self.maybe_snapshot_on_roll(&log, active_before);
        let leo = log.log_end_offset();
        self.leo.set(leo);
        self.log_start.set(log.log_start_offset());
        self.leo_position.set(self.leo_position.get() + size);
        let meta = BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            max_timestamp: summary.max_timestamp,
        };
        self.producers.borrow_mut().on_append(&batch, meta, now_ms);
        if self.durable {
            // Durable: the HW (and the acknowledgement) waits for the sync.
            drop(log);
            drop(ticket);
            if let Err(code) = self.sync_through(info.last_offset + 1, now_ms).await {
                return ProduceResult::error(code);
            }
            count_durable(1, 0);
        } else {
            self.advance_high_watermark(&mut log, now_ms, leo, self.leo_position.get());
        }
        ProduceResult {
            error_code: 0,
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time_ms: info.log_append_time_ms,
            log_start_offset: info.log_start_offset,
            snapshot: Some(self.snapshot()),
        }
    }

    async fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        bound: ReadBound,
        min_one_batch: bool,
    ) -> ReadAnswer {
        let Ok(log) = self.log.read().await else {
            return ReadAnswer::error(ErrorCode::NOT_LEADER_OR_FOLLOWER.0);
        };
        let hw = log.high_watermark();
        let upper = match bound {
            ReadBound::HighWatermark | ReadBound::LastStable => hw,
            ReadBound::LogEnd => log.log_end_offset(),
        };
        let (error_code, regions, bytes) = match log.read(offset, max_bytes, upper, min_one_batch) {
            Ok(r) => (0, r.regions, r.bytes),
            Err(e) => (e.kafka_error_code(), Vec::new(), 0),
        };
        ReadAnswer {
            error_code,
            high_watermark: hw,
            last_stable_offset: hw,
            log_start_offset: log.log_start_offset(),
            regions,
            bytes,
            snapshot: Some(self.snapshot()),
        }
    }

    /// ListOffsets for one partition, answered at record level like Kafka
    /// (`UnifiedLog.fetchOffsetByTimestamp`): the time index finds the
    /// batch, then that batch's records are searched.
    async fn list_offset(&self, timestamp: i64, bound: ReadBound) -> OffsetAnswer {
        let Ok(log) = self.log.read().await else {
            return offset_error(ErrorCode::NOT_LEADER_OR_FOLLOWER.0);
        };
        // Kafka (Partition.fetchOffsetForTimestamp): answers at or past the
        // last fetchable offset (HW, or LEO for replicas) are "not found".
        let fetchable = match bound {
            ReadBound::LogEnd => log.log_end_offset(),
            _ => log.high_watermark(),
        };
        let found = |offset: i64, ts: i64| OffsetAnswer {
            error_code: 0,
            timestamp: ts,
            offset,
            leader_epoch: self.leader_epoch,
        };
        let lookup = match timestamp {
            LATEST_TIMESTAMP => return found(fetchable, -1),
            EARLIEST_TIMESTAMP => return found(log.log_start_offset(), -1),
            MAX_TIMESTAMP => match log.max_timestamp_and_offset() {
                Some((_, batch_base)) => find_record(&log, batch_base, RecordPick::MaxTimestamp),
                None => Ok(None),
            },
            ts if ts < 0 => return offset_error(ErrorCode::INVALID_REQUEST.0),
            ts => match log.offset_for_timestamp(ts) {
                Ok(Some((batch_base, _))) => {
                    find_record(&log, batch_base, RecordPick::AtOrAfter(ts))
                }
                Ok(None) => Ok(None),
                Err(e) => Err(e.kafka_error_code()),
            },
        };
        match lookup {
            Ok(Some((offset, ts))) if offset < fetchable => found(offset, ts),
            Ok(_) => found(-1, -1),
            Err(code) => offset_error(code),
        }
    }
}

/// Which record of a batch a ListOffsets lookup wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecordPick {
    /// The first record (offset order) with timestamp >= the target
    /// (Kafka `FileRecords.searchForTimestamp`).
    AtOrAfter(i64),
    /// The earliest record holding the batch's largest timestamp
    /// (KIP-734; Kafka `RecordBatch.offsetOfMaxTimestamp`).
    MaxTimestamp,
}

/// Chooses the answer among one batch's records as they are walked,
/// ignoring records below the log start offset.
struct RecordPicker {
    pick: RecordPick,
    log_start_offset: i64,
    best: Option<(i64, i64)>,
}

impl RecordPicker {
    fn new(pick: RecordPick, log_start_offset: i64) -> Self {
        RecordPicker {
            pick,
            log_start_offset,
            best: None,
        }
    }

    /// The next record in offset order; `Break` once the answer is known.
    fn offer(&mut self, offset: i64, timestamp: i64) -> ControlFlow<()> {
        if offset < self.log_start_offset {
            return ControlFlow::Continue(());
        }
        match self.pick {
            RecordPick::AtOrAfter(target) if timestamp >= target => {
                self.best = Some((offset, timestamp));
                ControlFlow::Break(())
            }
            RecordPick::AtOrAfter(_) => ControlFlow::Continue(()),
            // Strictly greater: the first of equal maxima stays.
            RecordPick::MaxTimestamp => {
                if self.best.is_none_or(|(_, best)| timestamp > best) {
                    self.best = Some((offset, timestamp));
                }
                ControlFlow::Continue(())
            }
        }
    }
}

/// Find the record `pick` names, starting at the batch holding
/// `batch_offset`. A timestamp search moves on to later batches only when
/// the records that matched lie below the log start offset (Kafka's
/// segment search does the same).
fn find_record(
    log: &PartitionLog,
    batch_offset: i64,
    pick: RecordPick,
) -> Result<Option<(i64, i64)>, i16> {
    let log_start = log.log_start_offset();
    let leo = log.log_end_offset();
    let mut next = batch_offset.max(log_start);
    while next < leo {
        let Some(batch) = read_one_batch(log, next, leo)? else {
            return Ok(None);
        };
        let (last_offset, max_timestamp) = batch_header(&batch)?;
        let wanted = match pick {
            RecordPick::AtOrAfter(target) => max_timestamp >= target,
            RecordPick::MaxTimestamp => true,
        };
        if wanted {
            let mut picker = RecordPicker::new(pick, log_start);
            walk_batch(&batch, |o, t| picker.offer(o, t))?;
            if let Some(hit) = picker.best {
                return Ok(Some(hit));
            }
        }
        if pick == RecordPick::MaxTimestamp {
            return Ok(None);
        }
        next = last_offset + 1;
    }
    Ok(None)
}

/// The bytes of the batch holding `offset` (cold path: file regions are
/// copied out with pread).
fn read_one_batch(log: &PartitionLog, offset: i64, leo: i64) -> Result<Option<Bytes>, i16> {
    use std::os::unix::fs::FileExt;
    let read = log
        .read(offset, 1, leo, true)
        .map_err(|e| e.kafka_error_code())?;
    if read.regions.is_empty() {
        return Ok(None);
    }
    let mut out = BytesMut::with_capacity(read.bytes);
    for region in read.regions {
        match region {
            Region::Cached(b) => out.extend_from_slice(&b),
            Region::File {
                file,
                position,
                len,
            } => {
                let mut buf = vec![0u8; len as usize];
                file.read_exact_at(&mut buf, position).map_err(|e| {
                    tracing::error!(error = %e, "reading a batch for ListOffsets");
                    ErrorCode::KAFKA_STORAGE_ERROR.0
                })?;
                out.extend_from_slice(&buf);
            }
        }
    }
    Ok(Some(out.freeze()))
}

/// `(last offset, max timestamp)` from a stored batch's header.
fn batch_header(batch: &[u8]) -> Result<(i64, i64), i16> {
    let view =
        record_batch::RecordBatch::new_unchecked_crc(batch).map_err(|e| e.kafka_error_code())?;
    Ok((view.last_offset(), view.max_timestamp()))
}

/// Calls `visit(offset, timestamp)` for the records of the first batch in
/// `batch`, in offset order, without decoding them whole (a stored batch's
/// records are the client's bytes; LogAppendTime applied: see
/// `record_walk`).
fn walk_batch(batch: &[u8], visit: impl FnMut(i64, i64) -> ControlFlow<()>) -> Result<(), i16> {
    record_walk::for_each_record(batch, visit).map_err(|e| {
        tracing::error!(error = %e, "cannot read a stored batch's records for ListOffsets");
        ErrorCode::CORRUPT_MESSAGE.0
    })
}

/// Offsets of the producer snapshot files in a partition dir.
fn snapshot_offsets(dir: &Path) -> std::io::Result<Vec<i64>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if let Some(o) = parse_snapshot_file_name(&entry?.file_name().to_string_lossy()) {
            out.push(o);
        }
    }
    Ok(out)
}

/// Write `state` as `<offset>.snapshot` (tmp file, fsync, rename: a crash
/// leaves the old file or the new one, and the log's open removes `.tmp`
/// leftovers), then delete all but the newest [`SNAPSHOTS_KEPT`].
fn write_producer_snapshot(dir: &Path, offset: i64, encoded: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join(snapshot_file_name(offset));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(encoded)?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(dir)?.sync_all()?;
    for old in snapshots_to_delete(&snapshot_offsets(dir)?, SNAPSHOTS_KEPT) {
        std::fs::remove_file(dir.join(snapshot_file_name(old)))?;
    }
    Ok(())
}

/// A failed snapshot loses nothing: the next open replays the log from an
/// older snapshot (or the log start) instead.
fn write_snapshot_or_warn(
    tp: &TopicPartition,
    dir: &Path,
    offset: i64,
    state: &ProducerStateManager,
) {
    if let Err(e) = write_producer_snapshot(dir, offset, &state.encode_snapshot()) {
        tracing::warn!(%tp, offset, error = %e, "cannot write producer state snapshot");
    }
}

/// The roll-time snapshot, written and fsynced on glommio's blocking pool:
/// two fsyncs on the shard would stall every connection it serves for
/// milliseconds (Kafka, too, flushes the roll's snapshot from its
/// scheduler, not the request path). A crash before it lands only means
/// the next open replays from an older snapshot.
fn write_snapshot_in_background(tp: TopicPartition, dir: PathBuf, offset: i64, encoded: Vec<u8>) {
    glommio::spawn_local(async move {
        let written = glommio::executor()
            .spawn_blocking(move || write_producer_snapshot(&dir, offset, &encoded))
            .await;
        if let Err(e) = written {
            tracing::warn!(%tp, offset, error = %e, "cannot write producer state snapshot");
        }
    })
    .detach();
}

/// How a partition's producer state was rebuilt at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStateLoad {
    /// The snapshot loaded, if any.
    pub snapshot_offset: Option<i64>,
    /// Batches replayed from the log after it.
    pub batches_replayed: u64,
}

/// Rebuild producer state for an opened log: the newest snapshot at or
/// below the log end offset that decodes (stray ones past it are deleted,
/// damaged ones skipped), then every batch header from its offset on.
fn load_producer_state(
    log: &PartitionLog,
) -> Result<(ProducerStateManager, ProducerStateLoad), StorageError> {
    let dir = log.dir();
    let leo = log.log_end_offset();
    let plan = plan_snapshot_load(&snapshot_offsets(dir)?, leo);
    for stray in plan.stray {
        std::fs::remove_file(dir.join(snapshot_file_name(stray)))?;
    }
    let mut loaded = None;
    for offset in plan.candidates {
        let path = dir.join(snapshot_file_name(offset));
        match std::fs::read(&path).map(|b| ProducerStateManager::decode_snapshot(&b)) {
            Ok(Some(state)) => {
                loaded = Some((offset, state));
                break;
            }
            Ok(None) => tracing::warn!(path = %path.display(), "damaged producer snapshot skipped"),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "unreadable producer snapshot")
            }
        }
    }
    let snapshot_offset = loaded.as_ref().map(|(o, _)| *o);
    let (from, mut state) = loaded.unwrap_or((log.log_start_offset(), ProducerStateManager::new()));
    let batches_replayed = if from < leo {
        log.scan_batches_from(from, |h| {
            state.on_replay(&LoggedBatch {
                base_offset: h.base_offset,
                last_offset_delta: h.last_offset_delta,
                max_timestamp: h.max_timestamp,
                producer_id: h.producer_id,
                producer_epoch: h.producer_epoch,
                base_sequence: h.base_sequence,
                is_control: h.is_control,
            })
        })?
    } else {
        0
    };
    Ok((
        state,
        ProducerStateLoad {
            snapshot_offset,
            batches_replayed,
        },
    ))
}

fn offset_error(error_code: i16) -> OffsetAnswer {
    OffsetAnswer {
        error_code,
        timestamp: -1,
        offset: -1,
        leader_epoch: -1,
    }
}

/// The partitions of one data shard.
pub struct PartitionRegistry {
    shard: ShardId,
    n_shards: usize,
    log_dir: PathBuf,
    server: std::sync::Arc<ServerConfig>,
    cache: SharedBatchCache,
    partitions: RefCell<HashMap<TopicPartition, Rc<Partition>>>,
    /// Snapshot version last synced (ignore older ones).
    synced_version: Cell<Option<u64>>,
}

impl PartitionRegistry {
    pub fn new(
        shard: ShardId,
        n_shards: usize,
        log_dir: &Path,
        server: std::sync::Arc<ServerConfig>,
    ) -> Self {
        let budget = usize::try_from(server.shardlog_batch_cache_bytes).unwrap_or(usize::MAX);
        // The cache holds slices of the appenders' write buffers: reserve
        // (and pre-fault) as many as it can hold, but never more than this
        // shard's half of the host's memory (a budget typed too large must
        // not make the start itself run out of memory).
        let buffer = write_buffer_bytes(server.shardlog_write_buffer_bytes);
        let reservable = budget.min(half_of_memory_per_shard(n_shards));
        crate::storage::buffer_pool::reserve(reservable / buffer, buffer);
        Self {
            shard,
            n_shards,
            log_dir: log_dir.to_path_buf(),
            server,
            cache: BatchCache::shared(budget),
            partitions: RefCell::new(HashMap::new()),
            synced_version: Cell::new(None),
        }
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<Rc<Partition>> {
        self.partitions.borrow().get(tp).cloned()
    }

    pub fn len(&self) -> usize {
        self.partitions.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.partitions.borrow().is_empty()
    }

    /// Bring the owned set in line with `snapshot`: open new partitions,
    /// close ones that moved or were deleted (deleting their files when the
    /// topic is gone).
    pub async fn sync(&self, snapshot: &Snapshot) {
        if self
            .synced_version
            .get()
            .is_some_and(|v| v > snapshot.version)
        {
            return;
        }
        self.synced_version.set(Some(snapshot.version));
        let defaults = self.server.broker_topic_defaults();
        let mut wanted: BTreeMap<TopicPartition, (uuid::Uuid, i32, TopicConfig)> = BTreeMap::new();
        for topic in snapshot.topics.values() {
            let config = match TopicConfig::resolve(&topic.configs, &defaults) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(topic = %topic.name, ?e, "bad topic config; using defaults");
                    TopicConfig::from_broker_defaults(&defaults)
                }
            };
            for p in &topic.partitions {
                if shard_of(&topic.name, p.partition, self.n_shards) == self.shard {
                    let tp = TopicPartition::new(topic.name.clone(), p.partition);
                    wanted.insert(tp, (topic.topic_id, p.leader_epoch, config.clone()));
                }
            }
        }
        let stale: Vec<(TopicPartition, bool)> = self
            .partitions
            .borrow()
            .iter()
            .filter_map(|(tp, p)| match wanted.get(tp) {
                None => Some((tp.clone(), true)),
                Some((id, _, cfg)) if *id != p.topic_id || *cfg != p.config => {
                    Some((tp.clone(), *id != p.topic_id))
                }
                Some(_) => None,
            })
            .collect();
        for (tp, delete) in stale {
            let removed = self.partitions.borrow_mut().remove(&tp);
            if let Some(p) = removed {
                self.close_partition(p, delete).await;
            }
        }
        for (tp, (topic_id, epoch, config)) in wanted {
            if self.partitions.borrow().contains_key(&tp) {
                continue;
            }
            match self.open_partition(&tp, topic_id, epoch, config).await {
                Ok(p) => {
                    self.partitions.borrow_mut().insert(tp, Rc::new(p));
                }
                Err(e) => tracing::error!(%tp, error = %e, "cannot open partition log"),
            }
        }
    }

    async fn open_partition(
        &self,
        tp: &TopicPartition,
        topic_id: uuid::Uuid,
        leader_epoch: i32,
        config: TopicConfig,
    ) -> Result<Partition, StorageError> {
        let log = PartitionLog::open(
            &self.log_dir,
            tp,
            Some(topic_id),
            log_config(&config, &self.server),
            self.cache.clone(),
        )
        .await?;
        let leo = log.log_end_offset();
        let hw = log.high_watermark();
        // Single replica (this broker): ISR = {self}, so the HW rule moves the
        // HW to the LEO as soon as we lead (Kafka's becomeLeader + maybeIncrementLeaderHW).
        let me = self.server.broker_id;
        let mut replica = LeaderReplicaState::new(
            me,
            &[me],
            &[me],
            hw,
            leo,
            self.server.replica_lag_time_max_ms,
            0,
        );
        replica.on_leader_append(0, leo);
        let mut log = log;
        log.set_high_watermark(replica.high_watermark());
        let log_start = log.log_start_offset();
        let (producers, load) = load_producer_state(&log)?;
        tracing::debug!(%tp, ?load, producers = producers.len(), "producer state loaded");
        Ok(Partition {
            tp: tp.clone(),
            topic_id,
            leader_epoch,
            config,
            log: RwLock::new(log),
            append_order: Rc::new(FifoGate::default()),
            replica: RefCell::new(replica),
            producers: RefCell::new(producers),
            leo_position: Cell::new(0),
            hw_position: Cell::new(0),
            leo: Cell::new(leo),
            log_start: Cell::new(log_start),
            durable: self.server.shardlog_flush_every_append,
            durable_sync: DurableSync {
                synced_end: Cell::new(leo),
                ..DurableSync::default()
            },
        })
    }

    async fn close_partition(&self, p: Rc<Partition>, delete: bool) {
        let tp = p.tp.clone();
        let dir = self.log_dir.join(tp.dir_name());
        let Ok(p) = Rc::try_unwrap(p) else {
            // An operation still holds it; it will finish on the old log.
            tracing::warn!(%tp, "partition busy at close; leaving it to drop");
            return;
        };
        let log = p.log.into_inner();
        match log {
            Ok(log) => {
                let (dir, leo) = (log.dir().to_path_buf(), log.log_end_offset());
                match log.close().await {
                    // Kafka snapshots producer state at the log end on a
                    // clean close, so the next open replays nothing.
                    Ok(()) if !delete => {
                        write_snapshot_or_warn(&tp, &dir, leo, &p.producers.borrow())
                    }
                    Ok(()) => {}
                    Err(e) => tracing::warn!(%tp, error = %e, "closing partition log"),
                }
            }
            Err(_) => tracing::warn!(%tp, "partition lock poisoned at close"),
        }
        if delete {
            // Kafka renames to `<dir>-<uuid>-delete` and deletes later
            // (`file.delete.delay.ms`); nothing reads it after close, so remove now.
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                tracing::warn!(%tp, error = %e, "deleting partition dir");
            }
        }
    }

    /// Clean shutdown: close every log; returns the offsets the log dir's
    /// checkpoint files record.
    pub async fn close_all(&self) -> Vec<PartitionOffsets> {
        let all: Vec<Rc<Partition>> = self
            .partitions
            .borrow_mut()
            .drain()
            .map(|(_, p)| p)
            .collect();
        let mut offsets = Vec::new();
        for p in all {
            if let Ok(mut log) = p.log.write().await {
                // Flushed first, so the recovery point recorded is the LEO.
                if let Err(e) = log.flush().await {
                    tracing::error!(tp = %p.tp, error = %e, "flush at shutdown failed");
                }
                offsets.push(PartitionOffsets::of(&log));
            }
            self.close_partition(p, false).await;
        }
        offsets
    }

    /// `flush.ms` / `flush.messages` timers, time/size retention
    /// (`log.retention.check.interval.ms`) and, at the same cadence,
    /// producer expiration (`producer.id.expiration.ms`; Kafka checks it
    /// every `producer.id.expiration.check.interval.ms`, which shardlog
    /// folds into the retention check).
    pub async fn housekeeping(&self, now_ms: i64, retention: bool) {
        let all: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        let expiration_ms = i64::from(self.server.producer_id_expiration_ms);
        for p in all {
            if retention {
                let expired = p
                    .producers
                    .borrow_mut()
                    .remove_expired(now_ms, expiration_ms);
                if expired > 0 {
                    tracing::debug!(tp = %p.tp, expired, "expired idle producer ids");
                }
            }
            let Ok(mut log) = p.log.write().await else {
                continue;
            };
            if let Err(e) = log.maybe_flush(now_ms).await {
                tracing::error!(tp = %p.tp, error = %e, "flush failed");
            }
            if retention {
                match log.apply_retention(now_ms) {
                    Ok(n) if n > 0 => {
                        p.log_start.set(log.log_start_offset());
                        tracing::info!(tp = %p.tp, segments = n, "retention deleted segments");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(tp = %p.tp, error = %e, "retention failed"),
                }
            }
        }
    }

    pub async fn append(&self, tp: &TopicPartition, records: Bytes, now_ms: i64) -> ProduceResult {
        match self.get(tp) {
            Some(p) => p.append(records, now_ms).await,
            None => ProduceResult::error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0),
        }
    }

    pub async fn read(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
        bound: ReadBound,
        min_one_batch: bool,
    ) -> ReadAnswer {
        match self.get(tp) {
            Some(p) => p.read(offset, max_bytes, bound, min_one_batch).await,
            None => ReadAnswer::error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0),
        }
    }

    pub async fn list_offset(
        &self,
        tp: &TopicPartition,
        timestamp: i64,
        bound: ReadBound,
    ) -> OffsetAnswer {
        match self.get(tp) {
            Some(p) => p.list_offset(timestamp, bound).await,
            None => offset_error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0),
        }
    }

    pub fn partition_snapshot(&self, tp: &TopicPartition) -> PartitionSnapshot {
        match self.get(tp) {
            Some(p) => p.snapshot(),
            None => PartitionSnapshot {
                role: PartitionRole::Unknown,
                ..PartitionSnapshot::leader_at(0, 0)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

    fn pick_record(
        records: &[(i64, i64)],
        pick: RecordPick,
        log_start_offset: i64,
    ) -> Option<(i64, i64)> {
        let mut picker = RecordPicker::new(pick, log_start_offset);
        for &(o, t) in records {
            if picker.offer(o, t).is_break() {
                break;
            }
        }
        picker.best
    }

    fn batch_record_timestamps(batch: &[u8]) -> Result<Vec<(i64, i64)>, i16> {
        let mut out = Vec::new();
        walk_batch(batch, |o, t| {
            out.push((o, t));
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Out-of-order timestamps with a repeated maximum (offsets 10..15).
    const RECORDS: [(i64, i64); 5] = [(10, 100), (11, 300), (12, 200), (13, 300), (14, 250)];

    #[test]
    fn at_or_after_picks_the_first_record_in_offset_order_not_the_closest_timestamp() {
        // (target, expected)
        let table: [(i64, Option<(i64, i64)>); 6] = [
            (0, Some((10, 100))),
            (100, Some((10, 100))),
            (101, Some((11, 300))),
            (201, Some((11, 300))),
            (300, Some((11, 300))),
            (301, None),
        ];
        for (target, expected) in table {
            assert_eq!(
                pick_record(&RECORDS, RecordPick::AtOrAfter(target), 0),
                expected,
                "target {target}"
            );
        }
    }

    #[test]
    fn max_timestamp_picks_the_earliest_record_holding_the_maximum() {
        assert_eq!(
            pick_record(&RECORDS, RecordPick::MaxTimestamp, 0),
            Some((11, 300))
        );
        assert_eq!(pick_record(&[], RecordPick::MaxTimestamp, 0), None);
    }

    #[test]
    fn records_below_the_log_start_offset_are_never_answered() {
        assert_eq!(
            pick_record(&RECORDS, RecordPick::AtOrAfter(0), 12),
            Some((12, 200))
        );
        assert_eq!(
            pick_record(&RECORDS, RecordPick::MaxTimestamp, 12),
            Some((13, 300))
        );
        assert_eq!(pick_record(&RECORDS, RecordPick::AtOrAfter(0), 15), None);
    }

    fn encoded_batch(base_offset: i64, timestamps: &[i64], compression: Compression) -> Bytes {
        let records: Vec<Record> = timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| {
                crate::protocol::test_records::record(
                    base_offset + i as i64,
                    *ts,
                    None,
                    Some(Bytes::from(vec![b'x'; 64])),
                )
            })
            .collect();
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut buf, &records, &options).expect("encode");
        buf.freeze()
    }

    #[test]
    fn stored_batches_decode_to_record_offsets_and_timestamps_with_every_codec() {
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let batch = encoded_batch(40, &[5, 9, 7], compression);
            assert_eq!(batch_header(&batch), Ok((42, 9)), "{compression:?}");
            assert_eq!(
                batch_record_timestamps(&batch),
                Ok(vec![(40, 5), (41, 9), (42, 7)]),
                "{compression:?}"
            );
        }
    }

    #[test]
    fn log_append_time_batches_give_every_record_the_batch_timestamp() {
        let mut batch = BytesMut::from(&encoded_batch(0, &[5, 9, 7], Compression::None)[..]);
        record_batch::set_log_append_time(&mut batch, 1_000);
        let records = batch_record_timestamps(&batch).expect("decode");
        assert_eq!(records, vec![(0, 1_000), (1, 1_000), (2, 1_000)]);
        assert_eq!(
            pick_record(&records, RecordPick::MaxTimestamp, 0),
            Some((0, 1_000))
        );
    }

    #[test]
    fn a_truncated_batch_is_an_error_not_a_panic() {
        let batch = encoded_batch(0, &[5, 9, 7], Compression::Gzip);
        let cut = batch.slice(..batch.len() - 10);
        assert!(batch_record_timestamps(&cut).is_err());
        assert!(batch_header(&batch[..20]).is_err());
    }
}
