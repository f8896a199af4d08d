//! `[drv]` The partitions one data shard owns (Kafka's `ReplicaManager`,
//! per shard): opened and closed as the metadata snapshot changes, looked
//! up by the data path, flushed and trimmed by the housekeeping timer,
//! closed at shutdown.
//!
//! Ownership: partition `(t, p)` lives on shard `shard_of(t, p)`; the shard
//! layer says which partitions are this shard's ([`ReplicaManager::sync`]
//! takes that as a predicate), so this module needs no placement rule.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::partition::{
    AppendOrigin, DurableCounts, Leadership, OffsetAnswer, Partition, PartitionSpec, ProduceResult,
    ReadAnswer, VerificationGuards,
};
use super::quota::ReplicationQuotas;
use crate::config::dynamic::{
    FOLLOWER_REPLICATION_THROTTLED_RATE, LEADER_REPLICATION_THROTTLED_RATE,
};
use crate::config::topic::TopicConfig;
use crate::config::ServerConfig;
use crate::io::clock::Clock;
use crate::io::local_sync::{join_all, FifoTicket, Local};
use crate::metadata::{PartitionState, Snapshot};
use crate::protocol::ErrorCode;
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::purgatory::view::{PartitionRole, PartitionSnapshot};
use crate::replication::isr_change::IsrChange;
use crate::storage::close_batch;
use crate::storage::config::{write_buffer_bytes, LogConfig};
use crate::storage::log_dir::{LogDirs, PartitionOffsets};
use crate::storage::partition_log::PartitionLog;
use crate::storage::producer_snapshot;
use crate::storage::shard_storage::ShardStorage;
use crate::storage::StorageError;
use crate::types::TopicPartition;
mod listing;
mod log_dirs;
mod metrics;

/// How long (x 10 ms) a close waits for an operation in progress to let go of the partition.
const CLOSE_WAIT_ROUNDS: u32 = 300;

/// Partition logs opened (or closed) at once by one sync: keeps the ring busy, bounds half-open logs.
const CONCURRENT_OPENS: usize = 64;

/// The partitions of one data shard.
pub struct ReplicaManager {
    /// The broker's log dirs (`log.dirs`), shared by every shard.
    log_dirs: Arc<LogDirs>,
    /// `log_dirs.changes()` last acted on ([`Self::apply_offline_dirs`]).
    offline_seen: Cell<u64>,
    /// This shard's slot in `log_dirs` (what it applied is reported there).
    offline_slot: usize,
    server: Arc<ServerConfig>,
    /// The shard's storage state, shared with every log it opens.
    storage: Rc<ShardStorage>,
    partitions: RefCell<HashMap<TopicPartition, Rc<Partition>>>,
    /// Offsets of logs closed without deletion during this run (StopReplica
    /// keeps the log): the checkpoints at shutdown still record them, as
    /// Kafka's do for every log it keeps.
    closed_offsets: RefCell<BTreeMap<TopicPartition, PartitionOffsets>>,
    /// Snapshot version last synced (ignore older ones).
    synced_version: Cell<Option<u64>>,
    /// One sync, deletion or final close at a time: a shutdown's close
    /// must not race a StopReplica's (each would find the other holding
    /// the partition and leave it unclosed).
    turn: glommio::sync::Semaphore,
    /// Set by [`Self::close_all`]: later syncs open nothing.
    closed: Cell<bool>,
    durable_counts: DurableCounts,
    /// KIP-890 guards of this shard's partitions; outlives each of them.
    verification_guards: VerificationGuards,
    /// Wall-clock time for the replica state a leadership change starts.
    clock: Rc<dyn Clock>,
    /// This shard's replica fetchers (partitions it follows).
    fetchers: super::fetcher::FetcherManager,
    /// ISR changes proposed by partitions this shard leads, not yet sent
    /// (`shard::router::maybe_send_isr_changes` sends them).
    isr_changes: RefCell<Vec<IsrChange>>,
    /// The broker's replication quotas, shared with its other shards.
    quotas: Arc<ReplicationQuotas>,
}

/// How one partition's close ended.
enum Closed {
    /// Closed for the batch: its commit's share, and the offsets the
    /// checkpoints record once the commit succeeded.
    Deferred(close_batch::DeferredClose, PartitionOffsets),
    /// Still held by an operation in progress; left to drop.
    Busy(Rc<Partition>),
    /// Deleted, or the close failed.
    Nothing,
}

/// One produce request's appends on this shard, each with its place in
/// its partition's append order ([`Partition::queue_append`]), taken
/// together when the request arrived ([`ReplicaManager::queue_appends`]).
///
/// Why together: the appends of one request run one after another, and an
/// append may wait for I/O (a new log's first append opens its segment
/// for DMA; a full buffer is written out). Were each place taken only when
/// the request reached that partition, a request pipelined behind it on
/// the same connection could take a partition this one had not reached
/// yet and land before it there: the Java client's acked offsets came back
/// out of order that way. Taken together, a request's order on every
/// partition is fixed at arrival, and no two requests wait on each other
/// in a cycle (each holds places only behind every request that arrived
/// before it, on every partition).
pub struct QueuedAppends(Vec<QueuedAppend>);

/// One partition's records of a produce and its KIP-890 verification
/// guard, if it ran one.
pub type ProduceAppend = (Bytes, Option<u64>);

pub struct QueuedAppend {
    pub tp: TopicPartition,
    records: Bytes,
    /// KIP-890 verification guard (see `Partition::append_in_turn`).
    guard: Option<u64>,
    /// `None`: no such partition here (UNKNOWN_TOPIC_OR_PARTITION).
    place: Option<(Rc<Partition>, FifoTicket)>,
}

impl QueuedAppends {
    /// Each append in request order, once it has its turn.
    pub fn into_appends(self) -> impl Iterator<Item = QueuedAppend> {
        self.0.into_iter()
    }
}

impl QueuedAppend {
    pub async fn append(
        self,
        now_ms: i64,
        required_acks: i16,
        origin: AppendOrigin,
    ) -> ProduceResult {
        match self.place {
            Some((p, ticket)) => {
                p.append_in_turn(
                    ticket,
                    self.records,
                    now_ms,
                    required_acks,
                    origin,
                    self.guard,
                )
                .await
            }
            None => ProduceResult::error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
        }
    }
}

/// What one owned partition should be, per the snapshot.
struct Wanted {
    topic_id: uuid::Uuid,
    state: PartitionState,
    config: TopicConfig,
}

impl ReplicaManager {
    /// `n_shards` sizes this shard's share of memory for the batch cache's write buffers.
    pub fn new(
        n_shards: usize,
        log_dirs: Arc<LogDirs>,
        server: Arc<ServerConfig>,
        clock: Rc<dyn Clock>,
        quotas: Arc<ReplicationQuotas>,
        inter_broker_tls: crate::io::broker_stream::BrokerLink,
    ) -> Self {
        let budget = usize::try_from(server.shardlog_batch_cache_bytes).unwrap_or(usize::MAX);
        let buffer = write_buffer_bytes(server.shardlog_write_buffer_bytes);
        let storage = ShardStorage::for_shard(budget, buffer, n_shards, log_dirs.failures());
        let offline_slot = log_dirs.register_shard();
        Self {
            log_dirs,
            offline_seen: Cell::new(0),
            offline_slot,
            storage,
            partitions: RefCell::new(HashMap::new()),
            closed_offsets: RefCell::new(BTreeMap::new()),
            synced_version: Cell::new(None),
            turn: glommio::sync::Semaphore::new(1),
            closed: Cell::new(false),
            durable_counts: DurableCounts::default(),
            verification_guards: VerificationGuards::default(),
            fetchers: super::fetcher::FetcherManager::new(
                &server,
                clock.clone(),
                quotas.clone(),
                inter_broker_tls,
            ),
            clock,
            server,
            isr_changes: RefCell::new(Vec::new()),
            quotas,
        }
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<Rc<Partition>> {
        self.partitions.borrow().get(tp).cloned()
    }

    /// The compacted partitions (`cleanup.policy` holds `compact`), in
    /// partition order: what this shard's log cleaner looks at.
    pub fn compacted_partitions(&self) -> Vec<Rc<Partition>> {
        let mut v: Vec<Rc<Partition>> = self
            .partitions
            .borrow()
            .values()
            .filter(|p| p.config().is_compacted())
            .cloned()
            .collect();
        v.sort_by(|a, b| a.tp.cmp(&b.tp));
        v
    }

    pub fn log_dirs(&self) -> &Arc<LogDirs> {
        &self.log_dirs
    }

    pub fn storage(&self) -> &Rc<ShardStorage> {
        &self.storage
    }

    pub fn len(&self) -> usize {
        self.partitions.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.partitions.borrow().is_empty()
    }

    /// The broker's replication quotas (the fetch handler's leader side).
    pub fn replication_quotas(&self) -> &ReplicationQuotas {
        &self.quotas
    }

    /// This shard's (durable appends acknowledged, fdatasync rounds).
    pub fn durable_counts(&self) -> (u64, u64) {
        self.durable_counts.get()
    }

    /// Bring the owned set in line with `snapshot` (`owns(topic,
    /// partition)` says which partitions are this shard's): open new
    /// partitions; change the leadership of open ones in place (Kafka's
    /// `makeLeader` / `makeFollower`); close ones that moved or are no
    /// longer wanted. Files are deleted here only in embedded mode, where a
    /// topic gone from the snapshot was deleted (or re-created with a new
    /// id); in ZooKeeper mode (`Snapshot::hosted_by_leader_and_isr`) a
    /// partition no longer hosted keeps its files, which only a
    /// StopReplica with delete removes ([`Self::delete_partitions`]).
    ///
    /// Returns the partitions whose leadership changed or that closed: the
    /// delayed operations waiting on them must look again (Kafka's
    /// `makeLeader` completes delayed requests when the HW moves, e.g. an
    /// ISR shrunk by the controller; a leader made follower answers its
    /// parked produces NOT_LEADER_OR_FOLLOWER at once).
    pub async fn sync(
        &self,
        snapshot: &Snapshot,
        owns: impl Fn(&str, i32) -> bool,
    ) -> Vec<TopicPartition> {
        let _turn = self.turn.acquire_permit(1).await;
        if self.closed.get() {
            return Vec::new();
        }
        if self
            .synced_version
            .get()
            .is_some_and(|v| v > snapshot.version)
        {
            return Vec::new();
        }
        self.synced_version.set(Some(snapshot.version));
        // Every shard sets the same bounds from the same config.
        let dynamic = &snapshot.broker_configs;
        self.quotas.set_bounds(
            dynamic.replication_rate(LEADER_REPLICATION_THROTTLED_RATE),
            dynamic.replication_rate(FOLLOWER_REPLICATION_THROTTLED_RATE),
        );
        let wanted = self.wanted(snapshot, owns);
        let deletes = !snapshot.hosted_by_leader_and_isr;
        let mut stale: Vec<(TopicPartition, bool)> = Vec::new();
        let mut moved: Vec<(Rc<Partition>, Leadership)> = Vec::new();
        // Kafka's `LogManager.updateTopicConfig`: a changed topic config
        // is applied to the open partition and log, never by a reopen
        // (followers fetching from it would see errors meanwhile).
        let mut reconfigured: Vec<(Rc<Partition>, TopicConfig)> = Vec::new();
        for (tp, p) in self.partitions.borrow().iter() {
            match wanted.get(tp) {
                None => stale.push((tp.clone(), deletes)),
                Some(w) if w.topic_id != p.topic_id => stale.push((tp.clone(), deletes)),
                Some(w) => {
                    if w.config != *p.config() {
                        reconfigured.push((p.clone(), w.config.clone()));
                    }
                    let next = self.leadership(&w.state);
                    if next != p.leadership() {
                        moved.push((p.clone(), next));
                    }
                }
            }
        }
        let closing: Vec<(Rc<Partition>, bool)> = stale
            .into_iter()
            .filter_map(|(tp, delete)| {
                let p = self.partitions.borrow_mut().remove(&tp)?;
                Some((p, delete))
            })
            .collect();
        // Fetchers let go of closing partitions first (a close needs the
        // only reference).
        let gone: Vec<TopicPartition> = closing.iter().map(|(p, _)| p.tp.clone()).collect();
        self.fetchers.on_removed(&gone);
        if !gone.is_empty() {
            let started_ms = self.clock.wall_ms();
            self.close_partitions(closing).await;
            tracing::info!(
                partitions = gone.len(),
                ms = self.clock.wall_ms() - started_ms,
                "closed partition logs"
            );
        }
        let now_ms = self.clock.wall_ms();
        let mut changed = gone;
        for (p, next) in moved {
            p.apply_leadership(next, now_ms).await;
            changed.push(p.tp.clone());
        }
        for (p, config) in reconfigured {
            let log_config = LogConfig::for_topic(&config, &self.server);
            p.update_config(config, log_config).await;
            tracing::info!(tp = %p.tp, "topic config applied to the open log");
            // A delayed produce waits on `min.insync.replicas`.
            if !changed.contains(&p.tp) {
                changed.push(p.tp.clone());
            }
        }
        let opening: Vec<(TopicPartition, Wanted)> = wanted
            .into_iter()
            .filter(|(tp, _)| !self.partitions.borrow().contains_key(tp))
            .collect();
        self.open_partitions(opening).await;
        self.sync_fetchers(snapshot);
        changed
    }

    /// Open `opening`, many at a time: a topic of a thousand partitions
    /// opens in a few rounds of concurrent file creation, not one
    /// partition after another (the ring overlaps their I/O).
    async fn open_partitions(&self, opening: Vec<(TopicPartition, Wanted)>) {
        let (opened, started_ms) = (opening.len(), self.clock.wall_ms());
        let mut opening = opening.into_iter().peekable();
        while opening.peek().is_some() {
            let round: Vec<(TopicPartition, Wanted)> =
                opening.by_ref().take(CONCURRENT_OPENS).collect();
            let tps: Vec<TopicPartition> = round.iter().map(|(tp, _)| tp.clone()).collect();
            type Opened = (
                TopicPartition,
                Option<usize>,
                Result<Partition, StorageError>,
            );
            let opens: Vec<Local<'_, Opened>> = round
                .into_iter()
                .zip(self.place(&tps))
                .map(|((tp, w), log_dir)| -> Local<'_, _> {
                    Box::pin(async move {
                        let r = self.open_partition(&tp, w, log_dir).await;
                        (tp, log_dir, r)
                    })
                })
                .collect();
            for (tp, log_dir, r) in join_all(opens).await {
                match r {
                    Ok(p) => {
                        self.partitions.borrow_mut().insert(tp, Rc::new(p));
                    }
                    Err(e) => {
                        if let Some(d) = log_dir {
                            self.log_dirs.uncount_log(d);
                        }
                        tracing::error!(%tp, error = %e, "cannot open partition log");
                    }
                }
            }
        }
        if opened > 0 {
            tracing::info!(
                partitions = opened,
                ms = self.clock.wall_ms() - started_ms,
                "opened partition logs"
            );
        }
    }

    /// Hand the fetchers every partition this shard follows now.
    fn sync_fetchers(&self, snapshot: &Snapshot) {
        let me = crate::types::BrokerId(self.server.broker_id);
        let parts: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        self.fetchers
            .on_followers(super::fetcher::targets_of(snapshot, me, &parts));
    }

    /// Partitions followed now and their leaders.
    pub fn followed(&self) -> Vec<(TopicPartition, crate::types::BrokerId)> {
        self.fetchers.followed()
    }

    /// Close `parts` (deleting the files of those marked), many at a time,
    /// made durable together (`close_batch`).
    async fn close_partitions(&self, parts: Vec<(Rc<Partition>, bool)>) {
        let mut deferred = Vec::new();
        let mut parts = parts.into_iter().peekable();
        while parts.peek().is_some() {
            let closes: Vec<Local<'_, Closed>> = parts
                .by_ref()
                .take(CONCURRENT_OPENS)
                .map(|(p, delete)| -> Local<'_, _> { Box::pin(self.close_partition(p, delete)) })
                .collect();
            for closed in join_all(closes).await {
                if let Closed::Deferred(d, o) = closed {
                    deferred.push((d, o));
                }
            }
        }
        let committed = self.commit_closes(deferred).await;
        let mut closed = self.closed_offsets.borrow_mut();
        for o in committed {
            closed.insert(o.tp.clone(), o);
        }
    }

    /// This shard's partitions of `snapshot.hosted_topics`, with their configs
    /// resolved against the broker defaults.
    fn wanted(
        &self,
        snapshot: &Snapshot,
        owns: impl Fn(&str, i32) -> bool,
    ) -> BTreeMap<TopicPartition, Wanted> {
        let defaults = self.server.topic_defaults(&snapshot.broker_configs);
        let mut wanted: BTreeMap<TopicPartition, Wanted> = BTreeMap::new();
        for topic in snapshot.hosted_topics.values() {
            let config = match TopicConfig::resolve(&topic.configs, &defaults) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(topic = %topic.name, ?e, "bad topic config; using defaults");
                    TopicConfig::from_broker_defaults(&defaults)
                }
            };
            for p in &topic.partitions {
                if owns(&topic.name, p.partition) {
                    let tp = TopicPartition::new(topic.name.clone(), p.partition);
                    let w = Wanted {
                        topic_id: topic.topic_id,
                        state: p.clone(),
                        config: config.clone(),
                    };
                    wanted.insert(tp, w);
                }
            }
        }
        wanted
    }

    /// This broker's leadership of a partition in state `state`.
    fn leadership(&self, state: &PartitionState) -> Leadership {
        let me = crate::types::BrokerId(self.server.broker_id);
        Leadership {
            role: if state.leader == me {
                PartitionRole::Leader
            } else {
                PartitionRole::Follower
            },
            leader_epoch: state.leader_epoch,
            replicas: state.replicas.clone(),
            isr: state.isr.clone(),
        }
    }

    /// StopReplica with delete (ZooKeeper mode): delete the logs of `tps`,
    /// closing any still open; a folder left from an earlier run goes too
    /// (Kafka's `stopReplicas` deletes logs the ReplicaManager no longer
    /// holds, "when topic is being deleted while broker is down").
    pub async fn delete_partitions(&self, tps: &[TopicPartition]) {
        let _turn = self.turn.acquire_permit(1).await;
        self.fetchers.on_removed(tps);
        // Kafka's LogManager.asyncDelete rewrites the dir's recovery-point
        // and log-start checkpoints at once: a stale entry must not outlive
        // the log (a topic re-created under the name would trust it).
        self.storage.request_checkpoints();
        for tp in tps {
            let open = self.partitions.borrow_mut().remove(tp);
            match open {
                Some(p) => {
                    self.close_partition(p, true).await;
                }
                None => {
                    self.closed_offsets.borrow_mut().remove(tp);
                    for (i, log_dir) in self.log_dirs.all().iter().enumerate() {
                        if !self.log_dirs.is_online(i) {
                            continue;
                        }
                        match std::fs::remove_dir_all(log_dir.join(tp.dir_name())) {
                            Ok(()) => tracing::info!(%tp, "deleted partition dir"),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => tracing::warn!(%tp, error = %e, "deleting partition dir"),
                        }
                    }
                }
            }
        }
    }

    async fn open_partition(
        &self,
        tp: &TopicPartition,
        wanted: Wanted,
        log_dir: Option<usize>,
    ) -> Result<Partition, StorageError> {
        let Some(log_dir) = log_dir else {
            // Kafka answers LeaderAndIsr for it with KAFKA_STORAGE_ERROR.
            return Err(StorageError::Poisoned);
        };
        // A topic without an id (LeaderAndIsr v0–4) writes no
        // `partition.metadata`.
        let topic_id = Some(wanted.topic_id).filter(|id| !id.is_nil());
        let log = PartitionLog::open(
            self.log_dirs.path(log_dir),
            tp,
            topic_id,
            LogConfig::for_topic(&wanted.config, &self.server),
            self.storage.clone(),
        )
        .await?;
        let me = crate::types::BrokerId(self.server.broker_id);
        let leadership = self.leadership(&wanted.state);
        let spec = PartitionSpec {
            tp: tp.clone(),
            topic_id: wanted.topic_id,
            leader_epoch: leadership.leader_epoch,
            role: leadership.role,
            config: wanted.config,
            me,
            replicas: leadership.replicas,
            isr: leadership.isr,
            replica_lag_time_max_ms: self.server.replica_lag_time_max_ms,
            durable: self.server.shardlog_flush_every_append,
            durable_counts: self.durable_counts.clone(),
            verify_txns: self.server.transaction_partition_verification_enable,
            verification_guards: self.verification_guards.clone(),
            now_ms: self.clock.wall_ms(),
        };
        Ok(Partition::open(spec, log)?.in_log_dir(log_dir))
    }

    /// Close `p`'s log for a batch (`close_batch`), deleting its files
    /// instead when `delete`. Returns what the batch's commit still does
    /// for it, and the offsets the checkpoints record once it is done.
    async fn close_partition(&self, p: Rc<Partition>, delete: bool) -> Closed {
        let tp = p.tp.clone();
        let log_dir = p.log_dir();
        self.log_dirs.uncount_log(log_dir);
        if p.is_offline() {
            // Nothing is written to (or deleted from) a failed dir; the
            // next start recovers the log if the dir is back.
            self.closed_offsets.borrow_mut().remove(&tp);
            return Closed::Nothing;
        }
        let dir = self.log_dirs.path(log_dir).join(tp.dir_name());
        // A fetcher's append or a read in progress holds it for a moment.
        for _ in 0..CLOSE_WAIT_ROUNDS {
            if Rc::strong_count(&p) == 1 {
                break;
            }
            glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
        }
        let p = match Rc::try_unwrap(p) {
            Ok(p) => p,
            Err(p) => {
                // An operation still holds it; it will finish on the old log.
                tracing::warn!(%tp, "partition busy at close; leaving it to drop");
                return Closed::Busy(p);
            }
        };
        let producers = p.encoded_producer_state();
        let mut closed = Closed::Nothing;
        match p.into_log() {
            Ok(log) => {
                let leo = log.log_end_offset();
                let offsets = PartitionOffsets::of(&log, log_dir);
                match log.close_deferred().await {
                    // Kafka snapshots producer state at the log end on a
                    // clean close, so the next open replays nothing.
                    Ok(mut deferred) if !delete => {
                        // Like Kafka's `takeSnapshot`, none for a log that
                        // never held a record (nothing to replay).
                        let written = if leo > 0 {
                            producer_snapshot::write_snapshot_deferred(
                                &mut deferred,
                                leo,
                                &producers,
                            )
                        } else {
                            Ok(())
                        };
                        if let Err(e) = written {
                            tracing::warn!(%tp, leo, error = %e, "cannot write producer state snapshot");
                        }
                        // Closed flushed: recovery needs nothing below the LEO.
                        let offsets = PartitionOffsets {
                            recovery_point: leo,
                            ..offsets
                        };
                        closed = Closed::Deferred(deferred, offsets);
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(%tp, error = %e, "closing partition log"),
                }
            }
            Err(_) => tracing::warn!(%tp, "partition lock poisoned at close"),
        }
        if delete {
            self.closed_offsets.borrow_mut().remove(&tp);
            // Kafka renames to `<dir>-<uuid>-delete` and deletes later
            // (`file.delete.delay.ms`); nothing reads it after close, so remove now.
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                tracing::warn!(%tp, error = %e, "deleting partition dir");
            }
        }
        closed
    }

    /// Commit the batch of `closes` (`close_batch::commit`); returns the
    /// offsets of the logs it closed cleanly.
    async fn commit_closes(
        &self,
        closes: Vec<(close_batch::DeferredClose, PartitionOffsets)>,
    ) -> Vec<PartitionOffsets> {
        // One batch per log dir: a dir's syncs cover only its own files.
        let mut by_dir: BTreeMap<usize, Vec<_>> = BTreeMap::new();
        for (d, o) in closes {
            by_dir.entry(o.log_dir).or_default().push((d, o));
        }
        let mut committed = Vec::new();
        for (log_dir, closes) in by_dir {
            let (deferred, offsets): (Vec<_>, Vec<_>) = closes.into_iter().unzip();
            match close_batch::commit(self.log_dirs.path(log_dir), deferred).await {
                Ok(()) => committed.extend(offsets),
                Err(e) => {
                    // Their data may not be durable: no marker, no recovery
                    // point at the LEO; the next open recovers them.
                    tracing::error!(error = %e, logs = offsets.len(), "syncing closed logs failed");
                }
            }
        }
        committed
    }

    /// Clean shutdown: close every log; returns the offsets the log dir's
    /// checkpoint files record.
    pub async fn close_all(&self) -> Vec<PartitionOffsets> {
        let _turn = self.turn.acquire_permit(1).await;
        self.closed.set(true);
        self.fetchers.shutdown();
        let all: Vec<Rc<Partition>> = self
            .partitions
            .borrow_mut()
            .drain()
            .map(|(_, p)| p)
            .collect();
        let mut offsets = Vec::new();
        let mut deferred = Vec::new();
        let mut all = all.into_iter().peekable();
        while all.peek().is_some() {
            let closes: Vec<Local<'_, Closed>> = all
                .by_ref()
                .take(CONCURRENT_OPENS)
                .map(|p| -> Local<'_, _> { Box::pin(self.close_partition(p, false)) })
                .collect();
            for closed in join_all(closes).await {
                match closed {
                    Closed::Deferred(d, o) => deferred.push((d, o)),
                    Closed::Busy(p) => offsets.extend(Self::flush_busy(&p).await),
                    Closed::Nothing => {}
                }
            }
        }
        let closed = deferred.len();
        let started_ms = self.clock.wall_ms();
        offsets.extend(self.commit_closes(deferred).await);
        tracing::info!(
            partitions = closed,
            commit_ms = self.clock.wall_ms() - started_ms,
            "closed every partition log"
        );
        // Every log closed cleanly this run, now or earlier (a close that
        // found the partition busy still has its flushed offsets).
        let mut all = std::mem::take(&mut *self.closed_offsets.borrow_mut());
        for o in offsets {
            all.entry(o.tp.clone()).or_insert(o);
        }
        all.into_values().collect()
    }

    /// Offsets of every log this shard keeps (open now, or closed without
    /// deletion earlier in the run) for the periodic checkpoints.
    pub async fn checkpoint_offsets(&self) -> Vec<PartitionOffsets> {
        let mut all = self.closed_offsets.borrow().clone();
        for p in self.partitions.borrow().values() {
            if !p.is_offline() {
                all.insert(p.tp.clone(), p.checkpoint_offsets());
            }
        }
        all.into_values().collect()
    }

    /// A partition still busy at the final close: flushed in place, so the
    /// recovery point recorded is its LEO.
    async fn flush_busy(p: &Partition) -> Option<PartitionOffsets> {
        if p.is_offline() {
            return None;
        }
        let mut log = p.log().write().await.ok()?;
        if let Err(e) = log.flush().await {
            tracing::error!(tp = %p.tp, error = %e, "flush at shutdown failed");
        }
        Some(PartitionOffsets::of(&log, p.log_dir()))
    }

    /// `flush.ms` when the log flusher looks (`flush`), idle appenders
    /// (`shardlog.segment.idle.close.ms`), time/size retention
    /// (`log.retention.check.interval.ms`) and, at the same cadence,
    /// producer expiration (`producer.id.expiration.ms`; Kafka checks it
    /// every `producer.id.expiration.check.interval.ms`, which shardlog
    /// folds into the retention check).
    pub async fn housekeeping(&self, now_ms: i64, retention: bool, flush: bool) {
        let all: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        let expiration_ms = i64::from(self.server.producer_id_expiration_ms);
        for p in all {
            if p.is_offline() {
                continue;
            }
            if retention {
                let expired = p.expire_producers(now_ms, expiration_ms);
                if expired > 0 {
                    tracing::debug!(tp = %p.tp, expired, "expired idle producer ids");
                }
            }
            let Ok(mut log) = p.log().write().await else {
                continue;
            };
            if flush {
                if let Err(e) = log.maybe_flush(now_ms).await {
                    tracing::error!(tp = %p.tp, error = %e, "flush failed");
                }
            }
            if let Err(e) = log.close_if_idle(now_ms).await {
                tracing::error!(tp = %p.tp, error = %e, "closing an idle segment's appender failed");
            }
            if retention {
                match log.apply_retention(now_ms) {
                    Ok(n) if n > 0 => {
                        tracing::info!(tp = %p.tp, segments = n, "retention deleted segments");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(tp = %p.tp, error = %e, "retention failed"),
                }
            }
        }
    }

    /// Take one produce request's places in the append order of every
    /// partition it names, all at once and before any await (see
    /// [`QueuedAppends`]).
    pub fn queue_appends(&self, parts: Vec<(TopicPartition, ProduceAppend)>) -> QueuedAppends {
        QueuedAppends(
            parts
                .into_iter()
                .map(|(tp, (records, guard))| {
                    let place = self.get(&tp).map(|p| {
                        let ticket = p.queue_append();
                        (p, ticket)
                    });
                    QueuedAppend {
                        tp,
                        records,
                        guard,
                        place,
                    }
                })
                .collect(),
        )
    }

    pub async fn read(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
        isolation: FetchIsolation,
        min_one_batch: bool,
    ) -> ReadAnswer {
        match self.get(tp) {
            Some(p) => p.read(offset, max_bytes, isolation, min_one_batch).await,
            None => ReadAnswer::error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
        }
    }

    pub async fn list_offset(
        &self,
        tp: &TopicPartition,
        timestamp: i64,
        isolation: FetchIsolation,
    ) -> OffsetAnswer {
        match self.get(tp) {
            Some(p) => p.list_offset(timestamp, isolation).await,
            None => OffsetAnswer::error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
        }
    }

    /// Queue an ISR change for the shard's sender.
    pub fn queue_isr_change(&self, change: IsrChange) {
        self.isr_changes.borrow_mut().push(change);
    }

    /// The ISR changes queued since the last call.
    pub fn take_isr_changes(&self) -> Vec<IsrChange> {
        std::mem::take(&mut *self.isr_changes.borrow_mut())
    }

    /// Every partition's ISR shrink check, in partition order.
    pub fn maybe_shrink_isrs(&self, now_ms: i64) -> Vec<IsrChange> {
        let mut all: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        all.sort_by(|a, b| a.tp.cmp(&b.tp));
        all.iter()
            .filter_map(|p| p.maybe_shrink_isr(now_ms))
            .collect()
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
