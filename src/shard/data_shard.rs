//! `[drv]` A data shard's own part (ARCHITECTURE.md §2, §5): the partitions
//! it owns ([`ReplicaManager`]), its purgatory, the KIP-227 fetch sessions
//! of its connections, and which remote shards watch which of its
//! partitions; and the owner side of the partition work other shards (or
//! its own connections) send it: [`DataRequest`].
//!
//! Owners answer in request order. Record regions cross shards as `Bytes`
//! (refcounted, no copy) or as the segment's own `Arc<File>`, so the
//! owner's retention sees a read in flight on any shard and `sendfile`
//! stays zero-copy on the connection's shard.
//!
//! Owners keep a registry of which remote shards watch which of their
//! partitions and queue coalesced "partition advanced" notes after appends
//! (sent by `router` once the task yields); a new watch is answered with
//! the partition's current state so an append racing the registration is
//! never missed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::fetch_session::{FetchSessionCache, DEFAULT_CACHE_SLOTS};
use super::group::group_host::{GroupCall, GroupHost, GroupReply};
use super::txn::txn_host::{TxnCall, TxnHost, TxnReply};
use crate::metadata::Snapshot;
use crate::protocol::ErrorCode;
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::purgatory::driver::PurgatoryDriver;
use crate::purgatory::notes::{AdvanceCoalescer, AdvanceNotes, RemoteWatchRegistry};
use crate::purgatory::view::PartitionSnapshot;
use crate::replication::alter_log_dirs::LogDirMoves;
use crate::replication::isr_change::IsrChange;
use crate::replication::leader_epoch::EpochEndOffset;
use crate::replication::partition::LegacyOffsetsQuery;
use crate::replication::partition::{
    AppendOrigin, FollowerFetch, MarkerSpec, OffsetAnswer, ProduceResult, ReadAnswer,
};
use crate::replication::producer_state::ActiveProducer;
use crate::replication::replica_manager::{ProduceAppend, QueuedAppends, ReplicaManager};
use crate::types::{ShardId, TopicPartition};

/// One partition to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSpec {
    pub tp: TopicPartition,
    pub offset: i64,
    pub partition_max_bytes: usize,
    /// The fetcher's `current_leader_epoch` (Fetch v9+, KIP-320; -1: not
    /// given, no check).
    pub current_leader_epoch: i32,
    /// Set when a follower replica fetches (replica id ≥ 0): the leader
    /// checks and records its fetch state.
    pub follower: Option<FollowerFetch>,
}

/// Requests to a data shard.
#[derive(Debug)]
pub enum DataRequest {
    /// Control shard → data shards, first phase of a publication: owners
    /// open/close their partitions for this snapshot without showing it to
    /// clients yet.
    SyncPartitions(Box<Snapshot>),
    /// Control shard → data shards: replace the metadata snapshot (syncing
    /// owned partitions first, if the first phase did not).
    SetSnapshot(Box<Snapshot>),
    /// KIP-890: start verifying a transactional producer's next batch on
    /// each partition (answered `Verifications`).
    StartVerification {
        parts: Vec<(TopicPartition, VerifyStart)>,
        now_ms: i64,
    },
    /// Append each partition's transaction marker on its owner
    /// (WriteTxnMarkers; answered `Produced`).
    WriteMarkers {
        parts: Vec<(TopicPartition, MarkerSpec)>,
        now_ms: i64,
    },
    /// Read owned partitions in order within one byte budget.
    Read {
        specs: Vec<ReadSpec>,
        isolation: FetchIsolation,
        max_bytes: usize,
        min_one_batch: bool,
        now_ms: i64,
    },
    /// OffsetForLeaderEpoch lookups: (partition, current_leader_epoch,
    /// leader_epoch), and whether only the leader may answer.
    OffsetForLeaderEpoch {
        parts: Vec<(TopicPartition, i32, i32)>,
        fetch_only_from_leader: bool,
    },
    /// ListOffsets lookups (partition, timestamp or -1/-2/-3).
    ListOffsets {
        parts: Vec<(TopicPartition, i64)>,
        isolation: FetchIsolation,
    },
    /// ListOffsets v0 lookups (offsets by segment time).
    LegacyListOffsets {
        parts: Vec<(TopicPartition, LegacyOffsetsQuery)>,
        now_ms: i64,
    },
    /// DescribeProducers (KIP-664): each partition's active producers.
    DescribeProducers { parts: Vec<TopicPartition> },
    /// The sender's purgatory started (true) / stopped (false) watching.
    Watch {
        changes: Vec<(TopicPartition, bool)>,
    },
    /// Coalesced "partition advanced" notes for the receiver's purgatory.
    Advance(AdvanceNotes),
    /// DeleteRecords: advance each led partition's log start offset, then
    /// wait up to `timeout_ms` for its low watermark (served by `router`:
    /// the wait asks the shard's metadata which brokers are alive).
    DeleteRecords {
        parts: Vec<(TopicPartition, i64)>,
        timeout_ms: i32,
    },
    /// StopReplica with delete (ZooKeeper mode): delete these partitions'
    /// logs (closing any still open).
    DeletePartitions { parts: Vec<TopicPartition> },
    /// DescribeLogDirs: every replica of the shard, current and future
    /// (served by `router`).
    DescribeLogDirs,
    /// AlterReplicaLogDirs: move each partition to a log dir (`LogDirs`
    /// index, online); served by `router` (the moves need its clock).
    AlterLogDirs { parts: Vec<(TopicPartition, usize)> },
    /// To the shard coordinating a group (it owns the group's
    /// `__consumer_offsets` partition).
    Group(GroupCall),
    /// To the shard coordinating a transactional id (it owns the id's
    /// `__transaction_state` partition).
    Txn(TxnCall),
}

/// A produce request's appends to one owner's partitions, posted on the
/// mesh ([`ShardRequest::Produce`](super::context::ShardRequest::Produce)):
/// the owner takes their places in its partitions' append order as it
/// takes the message off the mesh (`router::mesh_handler`).
#[derive(Debug)]
pub struct ProduceAppends {
    pub parts: Vec<(TopicPartition, ProduceAppend)>,
    pub now_ms: i64,
    /// The request's acks (-1: check `min.insync.replicas` first).
    pub acks: i16,
    pub origin: AppendOrigin,
}

/// A transactional producer's batch to verify (KIP-890).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyStart {
    pub producer_id: i64,
    pub epoch: i16,
    pub first_seq: i32,
}

/// Answers to [`DataRequest`]s.
#[derive(Debug, PartialEq)]
pub enum DataResponse {
    SnapshotApplied {
        version: u64,
    },
    Produced(Vec<ProduceResult>),
    /// Per partition: no verification needed (`Ok(None)`), its guard, or
    /// the code to answer.
    Verifications(Vec<Result<Option<u64>, ErrorCode>>),
    Read(Vec<ReadAnswer>),
    Offsets(Vec<OffsetAnswer>),
    EpochEndOffsets(Vec<(ErrorCode, EpochEndOffset)>),
    /// ListOffsets v0: per partition its offsets, or the error.
    LegacyOffsets(Vec<Result<Vec<i64>, ErrorCode>>),
    /// DescribeProducers: per partition its producers, or the error.
    Producers(Vec<Result<Vec<ActiveProducer>, ErrorCode>>),
    /// DeleteRecords: per partition its error and low watermark.
    DeletedRecords(Vec<(ErrorCode, i64)>),
    Snapshots(Vec<(TopicPartition, PartitionSnapshot)>),
    /// DescribeLogDirs: the shard's replicas.
    LogDirReplicas(Vec<LogDirReplica>),
    /// AlterReplicaLogDirs: per partition, in order.
    LogDirsAltered(Vec<ErrorCode>),
    Ack,
    Group(GroupReply),
    Txn(TxnReply),
}

/// One replica as DescribeLogDirs reports it (Kafka's
/// `DescribeLogDirsPartition`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirReplica {
    pub tp: TopicPartition,
    /// `LogDirs` index.
    pub dir: usize,
    pub size: u64,
    pub offset_lag: i64,
    pub is_future: bool,
}

/// A data shard's part of its context.
pub struct DataShard {
    pub shard: ShardId,
    n_shards: usize,
    pub replicas: Rc<ReplicaManager>,
    pub purgatory: Rc<PurgatoryDriver>,
    /// The group coordinator of the offsets partitions this shard owns.
    pub groups: Rc<GroupHost>,
    /// The transaction coordinator of the `__transaction_state`
    /// partitions this shard leads.
    pub txns: Rc<TxnHost>,
    /// Log-dir moves of its partitions (AlterReplicaLogDirs).
    pub moves: Rc<LogDirMoves>,
    /// KIP-227 sessions of connections on this shard.
    pub fetch_sessions: RefCell<FetchSessionCache>,
    /// Which remote shards watch which of our partitions.
    remote_watchers: RefCell<RemoteWatchRegistry>,
    coalescer: RefCell<AdvanceCoalescer>,
    /// A send of the queued notes is scheduled and has not drained yet.
    notes_scheduled: Cell<bool>,
    /// A send must be scheduled (notes queued while none was).
    notes_due: Cell<bool>,
}

impl DataShard {
    pub fn new(
        shard: ShardId,
        n_shards: usize,
        replicas: Rc<ReplicaManager>,
        purgatory: Rc<PurgatoryDriver>,
        groups: Rc<GroupHost>,
        txns: Rc<TxnHost>,
    ) -> Self {
        Self {
            shard,
            n_shards,
            replicas,
            purgatory,
            groups,
            txns,
            moves: Rc::default(),
            fetch_sessions: RefCell::new(FetchSessionCache::new(shard.0, DEFAULT_CACHE_SLOTS)),
            remote_watchers: RefCell::new(RemoteWatchRegistry::new()),
            coalescer: RefCell::new(AdvanceCoalescer::new()),
            notes_scheduled: Cell::new(false),
            notes_due: Cell::new(false),
        }
    }

    /// Open/close this shard's partitions for `snapshot`.
    pub async fn sync_partitions(&self, snapshot: &Snapshot) {
        let (me, n) = (self.shard, self.n_shards);
        let changed = self
            .replicas
            .sync(snapshot, |topic, p| {
                super::placement::shard_of(topic, p, n) == me
            })
            .await;
        self.look_again(changed);
        self.replicas.replication_quotas().set_alter_log_dirs_bound(
            snapshot
                .broker_configs
                .replication_rate(crate::config::dynamic::REPLICA_ALTER_LOG_DIRS_IO_MAX),
        );
        self.moves.resume(&self.replicas, |tp| {
            super::placement::shard_of(&tp.topic, tp.partition, n) == me
        });
    }

    /// Take the partitions of newly failed log dirs offline
    /// (`ReplicaManager::apply_offline_dirs`); true if any went, whose
    /// parked operations then answer KAFKA_STORAGE_ERROR.
    pub fn apply_offline_dirs(&self) -> bool {
        let gone = self.replicas.apply_offline_dirs();
        let any = !gone.is_empty();
        self.look_again(gone);
        any
    }

    /// Parked produces and fetches on `tps` look again (their new role,
    /// ISR, HW); the caller sends the notes to other shards' waiters.
    fn look_again(&self, tps: Vec<TopicPartition>) {
        for tp in tps {
            self.on_local_advance(&tp, self.replicas.partition_snapshot(&tp));
        }
    }

    /// Owner side: serve a data-path request from shard `from` (or this
    /// one). Publication requests are `router`'s (they touch the context).
    /// Append transaction markers on owned partitions (WriteTxnMarkers).
    async fn write_markers(
        &self,
        parts: Vec<(TopicPartition, MarkerSpec)>,
        now_ms: i64,
    ) -> Vec<ProduceResult> {
        let mut out = Vec::with_capacity(parts.len());
        for (tp, spec) in parts {
            let r = match self.replicas.get(&tp) {
                Some(p) => p.append_marker(spec, now_ms).await,
                None => ProduceResult::error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            };
            if let Some(s) = r.snapshot {
                self.on_local_advance(&tp, s);
            }
            out.push(r);
        }
        out
    }

    /// A produce request's places in every partition's append order, taken
    /// now, before any await (`QueuedAppends` says why); the connection
    /// side takes them in its requests' arrival order
    /// (`Datapath::dispatch_produce`).
    pub fn queue_produce(&self, parts: Vec<(TopicPartition, ProduceAppend)>) -> QueuedAppends {
        self.replicas.queue_appends(parts)
    }

    /// Append a produce request's partitions queued with
    /// [`Self::queue_produce`], in request order.
    pub async fn append_queued(
        &self,
        queued: QueuedAppends,
        now_ms: i64,
        acks: i16,
        origin: AppendOrigin,
    ) -> Vec<ProduceResult> {
        let mut out = Vec::new();
        for append in queued.into_appends() {
            let tp = append.tp.clone();
            let r = append.append(now_ms, acks, origin).await;
            if let Some(s) = r.snapshot {
                self.on_local_advance(&tp, s);
            }
            out.push(r);
        }
        out
    }

    /// KIP-890: start verifications on owned partitions.
    fn start_verifications(
        &self,
        parts: &[(TopicPartition, VerifyStart)],
        now_ms: i64,
    ) -> DataResponse {
        DataResponse::Verifications(
            parts
                .iter()
                .map(|(tp, v)| match self.replicas.get(tp) {
                    Some(p) => {
                        p.start_txn_verification(v.producer_id, v.first_seq, v.epoch, now_ms)
                    }
                    None => Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                })
                .collect(),
        )
    }

    /// ListOffsets v0 on owned partitions.
    async fn legacy_offsets(
        &self,
        parts: Vec<(TopicPartition, LegacyOffsetsQuery)>,
        now_ms: i64,
    ) -> Vec<Result<Vec<i64>, ErrorCode>> {
        let mut out = Vec::with_capacity(parts.len());
        for (tp, query) in parts {
            out.push(match self.replicas.get(&tp) {
                Some(p) => p.legacy_offsets_before(query, now_ms).await,
                None => Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            });
        }
        out
    }

    /// DescribeProducers on owned partitions.
    fn active_producers(
        &self,
        parts: &[TopicPartition],
    ) -> Vec<Result<Vec<ActiveProducer>, ErrorCode>> {
        parts
            .iter()
            .map(|tp| {
                self.replicas
                    .get(tp)
                    .map(|p| p.active_producers())
                    .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
            })
            .collect()
    }

    pub async fn on_request(&self, from: usize, req: DataRequest) -> DataResponse {
        let registry = &self.replicas;
        match req {
            DataRequest::SyncPartitions(snapshot) | DataRequest::SetSnapshot(snapshot) => {
                self.sync_partitions(&snapshot).await;
                DataResponse::SnapshotApplied {
                    version: snapshot.version,
                }
            }
            DataRequest::StartVerification { parts, now_ms } => {
                self.start_verifications(&parts, now_ms)
            }
            DataRequest::WriteMarkers { parts, now_ms } => {
                DataResponse::Produced(self.write_markers(parts, now_ms).await)
            }
            DataRequest::Read {
                specs,
                isolation,
                max_bytes,
                min_one_batch,
                now_ms,
            } => DataResponse::Read(
                self.read_owned(&specs, isolation, max_bytes, min_one_batch, now_ms)
                    .await,
            ),
            DataRequest::OffsetForLeaderEpoch {
                parts,
                fetch_only_from_leader,
            } => {
                let mut out = Vec::with_capacity(parts.len());
                for (tp, current, epoch) in parts {
                    out.push(match registry.get(&tp) {
                        Some(p) => {
                            p.offset_for_leader_epoch(current, epoch, fetch_only_from_leader)
                                .await
                        }
                        None => (
                            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            EpochEndOffset::UNDEFINED,
                        ),
                    });
                }
                DataResponse::EpochEndOffsets(out)
            }
            DataRequest::ListOffsets { parts, isolation } => {
                let mut out = Vec::with_capacity(parts.len());
                for (tp, ts) in parts {
                    out.push(registry.list_offset(&tp, ts, isolation).await);
                }
                DataResponse::Offsets(out)
            }
            DataRequest::LegacyListOffsets { parts, now_ms } => {
                DataResponse::LegacyOffsets(self.legacy_offsets(parts, now_ms).await)
            }
            DataRequest::DescribeProducers { parts } => {
                DataResponse::Producers(self.active_producers(&parts))
            }
            DataRequest::Watch { changes } => {
                let from = ShardId(from as u16);
                let mut current = Vec::new();
                let mut watchers = self.remote_watchers.borrow_mut();
                for (tp, watch) in changes {
                    if watch {
                        watchers.on_watch(from, &tp);
                        current.push((tp.clone(), registry.partition_snapshot(&tp)));
                    } else {
                        watchers.on_unwatch(from, &tp);
                    }
                }
                DataResponse::Snapshots(current)
            }
            DataRequest::DeletePartitions { parts } => {
                self.moves.remove_futures(registry, &parts);
                registry.delete_partitions(&parts).await;
                DataResponse::Ack
            }
            DataRequest::Advance(notes) => {
                self.purgatory.on_advance_notes(notes);
                DataResponse::Ack
            }
            // Served by `router` (they need the shard's context).
            DataRequest::Group(_) => DataResponse::Group(GroupReply::NotCoordinator),
            DataRequest::Txn(_) => DataResponse::Txn(TxnReply::NotCoordinator),
            DataRequest::DescribeLogDirs => {
                DataResponse::LogDirReplicas(self.describe_log_dirs().await)
            }
            DataRequest::AlterLogDirs { parts } => DataResponse::LogDirsAltered(
                parts
                    .iter()
                    .map(|(tp, dir)| self.moves.alter(registry, tp, *dir))
                    .collect(),
            ),
            DataRequest::DeleteRecords { parts, .. } => {
                DataResponse::DeletedRecords(vec![
                    (ErrorCode::NOT_LEADER_OR_FOLLOWER, -1);
                    parts.len()
                ])
            }
        }
    }

    /// DescribeLogDirs on this shard (`ReplicaManager.describeLogDirs`):
    /// its online replicas, current ones with an offset lag of
    /// `max(hw - leo, 0)` and future ones with the current LEO minus theirs
    /// (`getLogEndOffsetLag`).
    pub async fn describe_log_dirs(&self) -> Vec<LogDirReplica> {
        let mut out = Vec::new();
        for p in self.replicas.hosted() {
            if p.is_offline() {
                continue;
            }
            let Ok(size) = p.log_size().await else {
                continue;
            };
            let (leo, hw) = p.current_ends();
            out.push(LogDirReplica {
                tp: p.tp.clone(),
                dir: p.log_dir(),
                size,
                offset_lag: (hw - leo).max(0),
                is_future: false,
            });
        }
        for f in self.moves.futures() {
            let Some(p) = self.replicas.get(&f.tp) else {
                continue;
            };
            out.push(LogDirReplica {
                offset_lag: p.current_ends().0 - f.log_end_offset,
                tp: f.tp,
                dir: f.dir,
                size: f.size,
                is_future: true,
            });
        }
        out
    }

    /// Reads owned partitions in order within a shared `max_bytes` budget
    /// (Kafka's `readFromLog`: the first partition may return one oversized
    /// batch, KIP-74).
    pub async fn read_owned(
        &self,
        specs: &[ReadSpec],
        isolation: FetchIsolation,
        max_bytes: usize,
        mut min_one_batch: bool,
        now_ms: i64,
    ) -> Vec<ReadAnswer> {
        let mut left = max_bytes;
        let mut out = Vec::with_capacity(specs.len());
        for spec in specs {
            let limit = spec.partition_max_bytes.min(left);
            let a = match (&spec.follower, self.replicas.get(&spec.tp)) {
                (Some(f), Some(p)) => {
                    let (a, effects) = p
                        .read_for_follower(spec.offset, limit, min_one_batch, f, now_ms)
                        .await;
                    if effects.high_watermark_advanced {
                        self.on_local_advance(&spec.tp, p.snapshot());
                    }
                    if let Some(change) = effects.propose {
                        self.replicas.queue_isr_change(change);
                    }
                    a
                }
                (None, Some(p)) if p.fences(spec.current_leader_epoch) != ErrorCode::NONE => {
                    let code = p.fences(spec.current_leader_epoch);
                    tracing::debug!(
                        tp = %spec.tp,
                        asked = spec.current_leader_epoch,
                        error = %code,
                        "consumer fetch fenced by its leader epoch"
                    );
                    ReadAnswer::error(code)
                }
                _ => {
                    self.replicas
                        .read(&spec.tp, spec.offset, limit, isolation, min_one_batch)
                        .await
                }
            };
            if a.bytes > 0 {
                min_one_batch = false;
            }
            left = left.saturating_sub(a.bytes);
            out.push(a);
        }
        out
    }

    /// The periodic ISR check (`replica.lag.time.max.ms / 2`): every
    /// partition this shard leads may propose a shrink.
    pub fn maybe_shrink_isrs(&self, now_ms: i64) {
        for change in self.replicas.maybe_shrink_isrs(now_ms) {
            self.replicas.queue_isr_change(change);
        }
    }

    /// The ISR changes queued since the last call.
    pub fn take_isr_changes(&self) -> Vec<IsrChange> {
        self.replicas.take_isr_changes()
    }

    /// Owner side: a partition advanced; wake local waiters now and queue
    /// notes for remote watchers.
    pub(crate) fn on_local_advance(&self, tp: &TopicPartition, s: PartitionSnapshot) {
        self.purgatory.on_partition_advanced(tp, s);
        let queued = {
            let watchers = self.remote_watchers.borrow();
            self.coalescer
                .borrow_mut()
                .on_partition_advanced(&watchers, tp, s)
        };
        if queued > 0 && !self.notes_scheduled.replace(true) {
            self.notes_due.set(true);
        }
    }

    /// True once per batch of queued notes: the caller schedules one send.
    pub fn take_notes_due(&self) -> bool {
        self.notes_due.replace(false)
    }

    /// The queued notes, one message per watching shard; later notes
    /// schedule a new send.
    pub fn drain_notes(&self) -> Vec<AdvanceNotes> {
        self.notes_scheduled.set(false);
        self.coalescer.borrow_mut().drain()
    }
}
