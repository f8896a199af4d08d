//! `[drv]` Log-dir moves of one data shard's partitions (KIP-113,
//! AlterReplicaLogDirs; Kafka's `ReplicaManager.alterReplicaLogDirs` and
//! its `ReplicaAlterLogDirsManager`): one task per moving partition fills a
//! future log `<topic>-<p>.<uniqueId>-future` in the destination dir from
//! the current log, round by round while the partition serves produce and
//! fetch, then swaps it in under the partition's lock
//! (`Partition::replace_current_with_future`) and deletes the replaced
//! folder. Decisions are `log_dir_move`'s; this file holds the tasks.
//!
//! A partition closed mid-move (a clean shutdown, StopReplica without
//! delete) keeps its future folder; when it opens again
//! ([`LogDirMoves::resume`]) the copy continues from the future log's end,
//! as Kafka's `LogManager` loads future logs and `ReplicaManager` restarts
//! their `ReplicaAlterLogDirsThread`. StopReplica with delete removes it
//! ([`LogDirMoves::remove_futures`]).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use super::log_dir_move::{
    on_alter, parse_entry, suffixed_dir_name, AlterDecision, DirEntry, DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
};
use super::partition::{Partition, SwapPlan};
use super::quota::Side;
use super::replica_manager::ReplicaManager;
use crate::io::clock::Clock;
use crate::protocol::ErrorCode;
use crate::storage::partition_log::PartitionLog;
use crate::storage::StorageError;
use crate::types::TopicPartition;

/// How long a throttled move waits before its next round (Kafka's
/// `replica.fetch.backoff.ms` default).
const THROTTLE_BACKOFF: std::time::Duration = std::time::Duration::from_millis(1000);

/// One move under way.
struct Move {
    /// Destination (`LogDirs` index) and the future folder's unique id.
    dir: usize,
    id: String,
    /// Set to stop the task; it removes its future folder.
    cancelled: Cell<bool>,
    /// The future log's end offset and size as of the last round.
    ends: Cell<(i64, u64)>,
}

/// A future replica, as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FutureReplica {
    pub tp: TopicPartition,
    pub dir: usize,
    pub log_end_offset: i64,
    pub size: u64,
}

/// The moves of one data shard.
#[derive(Default)]
pub struct LogDirMoves {
    moves: RefCell<BTreeMap<TopicPartition, Rc<Move>>>,
    /// Future folders of this shard's partitions found on disk and not
    /// resumed yet (their partition is not open); `None` until the
    /// first [`Self::resume`] lists the dirs.
    found: RefCell<Option<BTreeMap<TopicPartition, (usize, String)>>>,
}

fn tp_of_dir(tp_dir: &str) -> Option<TopicPartition> {
    let (topic, p) = tp_dir.rsplit_once('-')?;
    Some(TopicPartition::new(topic, p.parse().ok()?))
}

impl LogDirMoves {
    /// Where `tp` is moving to, if it is.
    pub fn moving_to(&self, tp: &TopicPartition) -> Option<usize> {
        self.moves.borrow().get(tp).map(|m| m.dir)
    }

    /// Every future replica of this shard.
    pub fn futures(&self) -> Vec<FutureReplica> {
        self.moves
            .borrow()
            .iter()
            .map(|(tp, m)| {
                let (log_end_offset, size) = m.ends.get();
                FutureReplica {
                    tp: tp.clone(),
                    dir: m.dir,
                    log_end_offset,
                    size,
                }
            })
            .collect()
    }

    /// AlterReplicaLogDirs for a partition this shard owns, its
    /// destination known online (`ReplicaManager.alterReplicaLogDirs`).
    pub fn alter(
        self: &Rc<Self>,
        replicas: &Rc<ReplicaManager>,
        tp: &TopicPartition,
        target: usize,
    ) -> ErrorCode {
        let Some(p) = replicas.get(tp) else {
            // Kafka answers NotLeaderOrFollower as REPLICA_NOT_AVAILABLE here.
            return ErrorCode::REPLICA_NOT_AVAILABLE;
        };
        if p.is_offline() {
            return ErrorCode::KAFKA_STORAGE_ERROR;
        }
        let (cancel_move, start) = match on_alter(p.log_dir(), self.moving_to(tp), target) {
            AlterDecision::AlreadyThere { cancel_move } => (cancel_move, false),
            AlterDecision::Continue => (false, false),
            AlterDecision::Start { cancel_move } => (cancel_move, true),
        };
        if cancel_move {
            if let Some(m) = self.moves.borrow_mut().remove(tp) {
                m.cancelled.set(true);
            }
        }
        if start {
            // Kafka refuses to create a future log while a dir is offline
            // (`maybeCreateFutureReplica`), lest one exist in two dirs.
            if replicas.log_dirs().online().contains(&false) {
                return ErrorCode::KAFKA_STORAGE_ERROR;
            }
            let id = uuid::Uuid::new_v4().simple().to_string();
            self.start(replicas, &p, target, id);
        }
        ErrorCode::NONE
    }

    fn start(
        self: &Rc<Self>,
        replicas: &Rc<ReplicaManager>,
        p: &Rc<Partition>,
        dir: usize,
        id: String,
    ) {
        let m = Rc::new(Move {
            dir,
            id,
            cancelled: Cell::new(false),
            ends: Cell::new((0, 0)),
        });
        self.moves.borrow_mut().insert(p.tp.clone(), m.clone());
        tracing::info!(tp = %p.tp, dir = %replicas.log_dirs().path(dir).display(), "moving replica to another log dir");
        let task = run(
            self.clone(),
            replicas.clone(),
            replicas.clock().clone(),
            Rc::downgrade(p),
            m,
        );
        glommio::spawn_local(task).detach();
    }

    /// After partitions opened: continue the moves whose future folder an
    /// earlier run left (`owns` says which partitions are this shard's).
    pub fn resume(
        self: &Rc<Self>,
        replicas: &Rc<ReplicaManager>,
        owns: impl Fn(&TopicPartition) -> bool,
    ) {
        if self.found.borrow().is_none() {
            let log_dirs = replicas.log_dirs();
            let mut found = BTreeMap::new();
            for (i, dir) in log_dirs.all().iter().enumerate() {
                if !log_dirs.is_online(i) {
                    continue;
                }
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for name in entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                {
                    if let Some(DirEntry::Future { tp_dir, id }) = parse_entry(&name) {
                        if let Some(tp) = tp_of_dir(&tp_dir).filter(|tp| owns(tp)) {
                            found.insert(tp, (i, id));
                        }
                    }
                }
            }
            *self.found.borrow_mut() = Some(found);
        }
        let ready: Vec<(TopicPartition, usize, String, Rc<Partition>)> = {
            let mut found = self.found.borrow_mut();
            let Some(found) = found.as_mut() else {
                return;
            };
            let open: Vec<TopicPartition> = found
                .keys()
                .filter(|tp| replicas.get(tp).is_some() && self.moving_to(tp).is_none())
                .cloned()
                .collect();
            open.into_iter()
                .filter_map(|tp| {
                    let (dir, id) = found.remove(&tp)?;
                    let p = replicas.get(&tp)?;
                    Some((tp, dir, id, p))
                })
                .collect()
        };
        for (tp, dir, id, p) in ready {
            if p.log_dir() == dir || !replicas.log_dirs().is_online(dir) {
                continue;
            }
            tracing::info!(%tp, "resuming a log dir move an earlier run left");
            self.start(replicas, &p, dir, id);
        }
    }

    /// StopReplica with delete: stop the moves of `tps` and remove their
    /// future folders from every online dir.
    pub fn remove_futures(&self, replicas: &ReplicaManager, tps: &[TopicPartition]) {
        let log_dirs = replicas.log_dirs();
        for tp in tps {
            if let Some(m) = self.moves.borrow_mut().remove(tp) {
                m.cancelled.set(true);
            }
            if let Some(found) = self.found.borrow_mut().as_mut() {
                found.remove(tp);
            }
            let name = tp.dir_name();
            for (i, dir) in log_dirs.all().iter().enumerate() {
                if !log_dirs.is_online(i) {
                    continue;
                }
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for e in entries.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if matches!(parse_entry(&n), Some(DirEntry::Future { tp_dir, .. }) if tp_dir == name)
                    {
                        remove_dir_or_warn(tp, &e.path());
                    }
                }
            }
        }
    }

    fn finish(&self, tp: &TopicPartition, m: &Rc<Move>) {
        let mut moves = self.moves.borrow_mut();
        if moves.get(tp).is_some_and(|x| Rc::ptr_eq(x, m)) {
            moves.remove(tp);
        }
    }
}

fn remove_dir_or_warn(tp: &TopicPartition, path: &std::path::Path) {
    match std::fs::remove_dir_all(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(%tp, path = %path.display(), error = %e, "cannot remove a log dir folder")
        }
    }
}

/// How a move's task ended.
enum Ended {
    Swapped,
    /// Cancelled, or its partition closed: the future log stays or goes
    /// as the flag says.
    Stopped {
        remove: bool,
    },
}

/// The task of one move: open (or reopen) the future log, copy round by
/// round, swap, delete the replaced folder.
async fn run(
    moves: Rc<LogDirMoves>,
    replicas: Rc<ReplicaManager>,
    clock: Rc<dyn Clock>,
    partition: Weak<Partition>,
    m: Rc<Move>,
) {
    let Some(tp) = partition.upgrade().map(|p| p.tp.clone()) else {
        return;
    };
    let future_dir = replicas.log_dirs().path(m.dir).join(suffixed_dir_name(
        &tp.dir_name(),
        &m.id,
        FUTURE_DIR_SUFFIX,
    ));
    let ended = copy_and_swap(&replicas, clock.as_ref(), &partition, &m).await;
    moves.finish(&tp, &m);
    match ended {
        Ok(Ended::Swapped) => {
            tracing::info!(%tp, dir = %replicas.log_dirs().path(m.dir).display(), "replica moved to its new log dir");
        }
        Ok(Ended::Stopped { remove }) => {
            if remove {
                remove_dir_or_warn(&tp, &future_dir);
            }
        }
        Err(e) => {
            // Kafka's fetcher marks the partition failed and leaves the
            // future log; a later AlterReplicaLogDirs starts over.
            tracing::error!(%tp, error = %e, "log dir move failed; the replica stays where it was");
            remove_dir_or_warn(&tp, &future_dir);
        }
    }
}

async fn copy_and_swap(
    replicas: &Rc<ReplicaManager>,
    clock: &dyn Clock,
    partition: &Weak<Partition>,
    m: &Move,
) -> Result<Ended, StorageError> {
    let log_dirs = replicas.log_dirs().clone();
    let Some(p) = partition.upgrade() else {
        return Ok(Ended::Stopped { remove: false });
    };
    let folder = suffixed_dir_name(&p.tp.dir_name(), &m.id, FUTURE_DIR_SUFFIX);
    let config = p
        .log()
        .read()
        .await
        .map_err(|_| StorageError::Poisoned)?
        .config()
        .clone();
    let topic_id = Some(p.topic_id).filter(|id| !id.is_nil());
    let mut future = PartitionLog::open_folder(
        log_dirs.path(m.dir),
        Some(&folder),
        &p.tp,
        topic_id,
        config,
        replicas.storage().clone(),
    )
    .await?;
    drop(p);
    loop {
        if m.cancelled.get() {
            return Ok(Ended::Stopped { remove: true });
        }
        let Some(p) = partition.upgrade() else {
            // Closed (shutdown or StopReplica): the folder resumes later.
            future.close().await?;
            return Ok(Ended::Stopped { remove: false });
        };
        if p.is_offline() || !log_dirs.is_online(m.dir) {
            return Err(StorageError::Poisoned);
        }
        let quotas = replicas.replication_quotas();
        if quotas.is_exceeded(Side::AlterLogDirs, clock.wall_ms()) {
            // Kafka's fetcher leaves a throttled partition out of its next
            // round and backs off (`replica.fetch.backoff.ms`).
            drop(p);
            glommio::timer::sleep(THROTTLE_BACKOFF).await;
            continue;
        }
        let before = future.size_bytes();
        let caught_up = p.copy_round(&mut future, clock.wall_ms()).await?;
        let copied = future.size_bytes().saturating_sub(before);
        quotas.record(Side::AlterLogDirs, copied as usize, clock.wall_ms());
        m.ends.set((future.log_end_offset(), future.size_bytes()));
        if caught_up {
            let src = p.log_dir();
            let delete_folder = suffixed_dir_name(&p.tp.dir_name(), &m.id, DELETE_DIR_SUFFIX);
            let plan = SwapPlan {
                current_log_dir: log_dirs.path(src),
                delete_folder: &delete_folder,
                future_log_dir: log_dirs.path(m.dir),
                future_index: m.dir,
                future_folder: &folder,
            };
            let replaced = p
                .replace_current_with_future(future, plan, clock.wall_ms())
                .await?;
            log_dirs.uncount_log(src);
            log_dirs.count_log(m.dir);
            // The new dir's checkpoints must list it, the old one's not.
            replicas.storage().request_checkpoints();
            drop(replaced);
            remove_dir_or_warn(&p.tp, &log_dirs.path(src).join(&delete_folder));
            return Ok(Ended::Swapped);
        }
        drop(p);
        futures_lite::future::yield_now().await;
    }
}
