//! `[drv]` One data shard's log cleaner (Kafka's `LogCleaner.CleanerThread`):
//! a task of its own on the shard that owns the partitions, looking every
//! `log.cleaner.backoff.ms` for the filthiest compacted log
//! (`storage::cleaner::select`) and cleaning it (`storage::cleaner::driver`),
//! straight away again while logs need cleaning.
//!
//! The cleaner holds a partition only while it takes the log's lock: a
//! snapshot of the segments under the read lock, then reads and writes
//! without it, then each cleaned segment's swap under the write lock. A
//! partition closed meanwhile ends the clean (its files are thrown away).
//!
//! The partitions come from the shard's replica manager through
//! [`CleanableLog`] (the replication layer's `Partition` implements it), so
//! storage names nothing above it.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

use glommio::sync::RwLock;

use super::driver::{self, CleanJob, CleanStats, CleanerConfig, IoBudget};
use super::filter::LastRecord;
use super::select::{survey, CompactionConfig, LogStat};
use crate::config::ServerConfig;
use crate::io::clock::Clock;
use crate::storage::log_dir::LogDirs;
use crate::storage::partition_log::{CleanerView, PartitionLog};
use crate::storage::txn_index::AbortedTxn;
use crate::storage::StorageError;
use crate::types::TopicPartition;

/// What the cleaner needs of a partition holding a compacted log (Kafka's
/// cleaner reads the same from `UnifiedLog` and its producer state).
pub trait CleanableLog {
    fn topic_partition(&self) -> &TopicPartition;
    /// The log; the cleaner takes its read lock for a view and its write
    /// lock for each swap.
    fn log(&self) -> &RwLock<PartitionLog>;
    fn is_offline(&self) -> bool;
    /// The last stable offset given the high watermark `hw` (Kafka's
    /// cleaner never cleans past the first unstable offset).
    fn last_stable_offset(&self, hw: i64) -> i64;
    /// The log dir ([`LogDirs`] index) holding the log.
    fn log_dir(&self) -> usize;
    /// Active producers' last entries, which a clean keeps.
    fn last_records_of_active_producers(&self) -> BTreeMap<i64, LastRecord>;
    fn aborted_transactions(&self) -> Vec<AbortedTxn>;
    /// A cleaned segment at `base` replaced the segments at `old`; its
    /// aborted transactions are `entries` (under the same write lock).
    fn on_segments_cleaned(&self, old: &[i64], base: i64, entries: Vec<AbortedTxn>);
}

/// The cleaner's memory of each log between cleans.
struct CleanerState {
    /// Each log's `cleaner-offset-checkpoint` entry is kept in its own
    /// log dir (one file per dir, as Kafka's).
    log_dirs: Arc<LogDirs>,
    /// First dirty offsets (the `cleaner-offset-checkpoint` entries).
    checkpoints: HashMap<TopicPartition, i64>,
    /// Earliest delete horizon of tombstones each log still holds.
    pending_horizons: HashMap<TopicPartition, i64>,
    /// Logs whose clean failed (Kafka's `markPartitionUncleanable`): left
    /// alone until the broker restarts.
    uncleanable: HashSet<TopicPartition>,
    /// Where each look leaves the dirtiest log's cleanable ratio (Kafka's
    /// `LogCleanerManager` `max-dirty-percent`).
    max_dirty_ratio: Rc<Cell<f64>>,
}

/// Start the cleaner of this shard (`log.cleaner.enable`) over the
/// compacted logs `compacted` lists (sorted by partition) in the dirs
/// `log_dirs`, leaving the dirtiest log's ratio in `max_dirty_ratio`.
/// `stopped` says when the shard shuts down.
pub fn spawn<P: CleanableLog + 'static>(
    compacted: impl Fn() -> Vec<Rc<P>> + 'static,
    (log_dirs, max_dirty_ratio): (Arc<LogDirs>, Rc<Cell<f64>>),
    server: Arc<ServerConfig>,
    n_shards: usize,
    clock: Rc<dyn Clock>,
    stopped: impl Fn() -> bool + 'static,
) {
    let config = CleanerConfig::for_shard(&server, n_shards);
    let backoff = Duration::from_millis(u64::try_from(server.log_cleaner_backoff_ms).unwrap_or(0));
    glommio::spawn_local(async move {
        let mut checkpoints = HashMap::new();
        for dir in log_dirs.all() {
            match driver::read_checkpoint(dir) {
                Ok(entries) => checkpoints.extend(entries),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot read cleaner-offset-checkpoint; cleaning from the log starts");
                }
            }
        }
        let mut state = CleanerState {
            log_dirs,
            checkpoints,
            pending_horizons: HashMap::new(),
            uncleanable: HashSet::new(),
            max_dirty_ratio,
        };
        let mut io = IoBudget::new(clock.clone(), config.io_max_bytes_per_second);
        while !stopped() {
            let cleaned = match clean_filthiest(&compacted, &mut state, &config, &mut io, &*clock).await {
                Ok(cleaned) => cleaned,
                Err(e) => {
                    tracing::warn!(error = %e, "log cleaning failed");
                    false
                }
            };
            if !cleaned {
                glommio::timer::sleep(backoff.max(Duration::from_millis(10))).await;
            } else {
                glommio::yield_if_needed().await;
            }
        }
    })
    .detach();
}

/// `lso`: the partition's last stable offset (Kafka's cleaner never cleans
/// past the first unstable offset).
fn log_stat(view: &CleanerView, state: &CleanerState, tp: &TopicPartition, lso: i64) -> LogStat {
    LogStat {
        log_start_offset: view.log_start_offset,
        log_end_offset: view.log_end_offset,
        last_stable_offset: lso,
        segments: view.segments.iter().map(|s| s.stat).collect(),
        active_base_offset: view.active_base_offset,
        checkpoint: state.checkpoints.get(tp).copied(),
        pending_delete_horizon_ms: state.pending_horizons.get(tp).copied(),
        config: CompactionConfig::of(&view.config),
    }
}

/// Clean the filthiest compacted log, if one qualifies; whether one did.
async fn clean_filthiest<P: CleanableLog>(
    compacted: &impl Fn() -> Vec<Rc<P>>,
    state: &mut CleanerState,
    config: &CleanerConfig,
    io: &mut IoBudget,
    clock: &dyn Clock,
) -> Result<bool, StorageError> {
    let now = clock.wall_ms();
    let mut candidates: Vec<(Weak<P>, CleanerView, i64)> = Vec::new();
    for p in compacted() {
        if state.uncleanable.contains(p.topic_partition()) {
            continue;
        }
        let Ok(log) = p.log().read().await else {
            continue;
        };
        if log.is_poisoned() || p.is_offline() {
            continue;
        }
        let view = log.cleaner_view();
        let lso = p.last_stable_offset(view.high_watermark);
        candidates.push((Rc::downgrade(&p), view, lso));
    }
    let tps: Vec<TopicPartition> = candidates
        .iter()
        .filter_map(|(p, _, _)| p.upgrade().map(|p| p.topic_partition().clone()))
        .collect();
    if tps.len() != candidates.len() {
        return Ok(false);
    }
    let stats: Vec<LogStat> = candidates
        .iter()
        .zip(&tps)
        .map(|((_, v, lso), tp)| log_stat(v, state, tp, *lso))
        .collect();
    let (filthiest, dirtiest) = survey(&stats, now);
    state.max_dirty_ratio.set(dirtiest);
    let Some((i, to_clean)) = filthiest else {
        return Ok(false);
    };
    let (weak, view, _) = candidates.swap_remove(i);
    let tp = tps[i].clone();
    // Alive: nothing was awaited since `tps` upgraded every candidate.
    let Some(log_dir) = weak.upgrade().map(|p| p.log_dir()) else {
        return Ok(false);
    };
    if to_clean.force_update_checkpoint {
        record_checkpoint(state, &tp, log_dir, to_clean.first_dirty_offset).await?;
    }
    let Some((producers, aborted)) = weak.upgrade().map(|p| {
        (
            p.last_records_of_active_producers(),
            p.aborted_transactions(),
        )
    }) else {
        return Ok(false);
    };
    tracing::debug!(%tp, ?to_clean, "cleaning log");
    let mut job = CleanJob::new(view, to_clean, producers, aborted, now, config);
    match clean_groups(&weak, &tp, &mut job, config, io).await {
        Ok(true) => finish(state, &tp, log_dir, &job.stats, now).await?,
        Ok(false) => {}
        Err(e) => {
            tracing::error!(%tp, error = %e, "cleaning failed; the log is marked uncleanable");
            state.uncleanable.insert(tp);
        }
    }
    Ok(true)
}

/// Map, write and swap in every group; `Ok(false)` when the log changed
/// or closed meanwhile (the clean is abandoned, its files removed). Each
/// swap also hands the cleaned segment's aborted transactions to the
/// partition's index, under the same write lock.
async fn clean_groups<P: CleanableLog>(
    weak: &Weak<P>,
    tp: &TopicPartition,
    job: &mut CleanJob,
    config: &CleanerConfig,
    io: &mut IoBudget,
) -> Result<bool, StorageError> {
    job.build_offset_map(io).await?;
    for group in job.groups() {
        let cleaned = job.write_group(group, io).await?;
        let Some(p) = weak.upgrade() else {
            cleaned.discard();
            return Ok(false);
        };
        let swapped = match p.log().write().await {
            Ok(mut log) => {
                let delay = Duration::from_millis(config.swap_delay_ms);
                let swapped = log
                    .replace_segments(&cleaned.old, cleaned.base_offset, delay)
                    .await?;
                if swapped {
                    let old: Vec<i64> = cleaned.old.iter().map(|s| s.base_offset).collect();
                    p.on_segments_cleaned(&old, cleaned.base_offset, cleaned.aborted.clone());
                }
                swapped
            }
            Err(_) => false,
        };
        if !swapped {
            tracing::debug!(%tp, "log changed during cleaning; clean abandoned");
            cleaned.discard();
            return Ok(false);
        }
    }
    Ok(true)
}

/// `tp`'s first dirty offset is `offset`; its log is in dir `log_dir`.
async fn record_checkpoint(
    state: &mut CleanerState,
    tp: &TopicPartition,
    log_dir: usize,
    offset: i64,
) -> Result<(), StorageError> {
    state.checkpoints.insert(tp.clone(), offset);
    if !state.log_dirs.is_online(log_dir) {
        return Ok(());
    }
    driver::write_checkpoint(state.log_dirs.clone(), log_dir, vec![(tp.clone(), offset)]).await
}

async fn finish(
    state: &mut CleanerState,
    tp: &TopicPartition,
    log_dir: usize,
    stats: &CleanStats,
    now_ms: i64,
) -> Result<(), StorageError> {
    // A tombstone kept past its horizon (beyond a full map's reach) must
    // not make the log look due again at once: only future horizons count.
    match stats.pending_delete_horizon_ms.filter(|&h| h > now_ms) {
        Some(h) => state.pending_horizons.insert(tp.clone(), h),
        None => state.pending_horizons.remove(tp),
    };
    tracing::info!(
        %tp,
        bytes_read = stats.bytes_read,
        bytes_written = stats.bytes_written,
        records_read = stats.records_read,
        records_kept = stats.records_kept,
        segments = stats.segments_cleaned,
        groups = stats.groups,
        end_offset = stats.end_offset,
        "log cleaned"
    );
    record_checkpoint(state, tp, log_dir, stats.end_offset).await
}
