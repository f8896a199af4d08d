//! `[io]` Per-log-dir files: `meta.properties` and the three offset
//! checkpoints (`recovery-point-offset-checkpoint`,
//! `replication-offset-checkpoint`, `log-start-offset-checkpoint`) for all
//! partitions of the dir. Writes are atomic (tmp + fsync + rename).
//!
//! [`CheckpointBoard`] writes them while the broker runs, as Kafka's
//! ReplicaManager (`highwatermark-checkpoint` every
//! `replica.high.watermark.checkpoint.interval.ms`) and LogManager
//! (`kafka-recovery-point-checkpoint` every
//! `log.flush.offset.checkpoint.interval.ms`, `kafka-log-start-offset-checkpoint`
//! every `log.flush.start.offset.checkpoint.interval.ms`) do; the clean
//! shutdown writes all three a last time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::checkpoint::{
    self, MetaProperties, LOG_START_OFFSET_CHECKPOINT, META_PROPERTIES, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
};
use super::dir_failure::DirFailureChannel;
use super::partition_log::{write_atomically, PartitionLog};
use super::StorageError;
use crate::types::TopicPartition;

/// Offsets of one partition as the checkpoints record them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub tp: TopicPartition,
    pub recovery_point: i64,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    /// The log dir holding the partition ([`LogDirs`] index): the one
    /// whose checkpoint files record it.
    pub log_dir: usize,
}

impl PartitionOffsets {
    /// `log`'s offsets; `log_dir` is its dir's [`LogDirs`] index.
    pub fn of(log: &PartitionLog, log_dir: usize) -> Self {
        PartitionOffsets {
            tp: log.topic_partition().clone(),
            recovery_point: log.recovery_point(),
            high_watermark: log.high_watermark(),
            log_start_offset: log.log_start_offset(),
            log_dir,
        }
    }
}

/// `[io]` The broker's log dirs (`log.dirs`, in the configured order) and
/// which of them are offline (Kafka's `LogManager._liveLogDirs`), shared
/// by every shard. A dir goes offline when a log in it fails a write or
/// an fsync (Kafka's `LogDirFailureChannel`); it stays offline until the
/// broker restarts.
#[derive(Debug)]
pub struct LogDirs {
    dirs: Vec<PathBuf>,
    offline: Vec<AtomicBool>,
    /// Partition logs each dir holds, over every shard (Kafka's
    /// `nextLogDirs` counts a dir's logs): where the next one goes.
    logs: Vec<AtomicUsize>,
    /// Bumped by every dir that goes offline: a shard compares it with
    /// the value it last acted on.
    changes: AtomicU64,
    /// What each shard that holds partitions (a slot from
    /// [`Self::register_shard`]) last applied of `changes`: the
    /// controller is told of a failed dir only once every shard took its
    /// partitions there offline ([`Self::applied_by_all`]).
    applied: Mutex<Vec<u64>>,
    /// Where logs report a failed write or fsync (Kafka's
    /// `LogDirFailureChannel`): each shard's storage holds a handle, the
    /// control shard takes the reports.
    failures: DirFailureChannel,
    /// One writer at a time of each dir's `cleaner-offset-checkpoint`
    /// (every shard's cleaner merges its entries into the same file).
    cleaner_checkpoint: Vec<Mutex<()>>,
}

impl LogDirs {
    /// `dirs` must not be empty (the config always gives one).
    pub fn new(dirs: Vec<PathBuf>) -> Self {
        assert!(!dirs.is_empty(), "log.dirs names no directory");
        let offline = dirs.iter().map(|_| AtomicBool::new(false)).collect();
        let logs = dirs.iter().map(|_| AtomicUsize::new(0)).collect();
        let cleaner_checkpoint = dirs.iter().map(|_| Mutex::new(())).collect();
        LogDirs {
            dirs,
            offline,
            logs,
            changes: AtomicU64::new(0),
            applied: Mutex::new(Vec::new()),
            failures: DirFailureChannel::new(),
            cleaner_checkpoint,
        }
    }

    pub fn all(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The broker's failure channel (see the field).
    pub fn failures(&self) -> &DirFailureChannel {
        &self.failures
    }

    /// The lock a writer of dir `i`'s `cleaner-offset-checkpoint` holds.
    pub fn cleaner_checkpoint_lock(&self, i: usize) -> Option<&Mutex<()>> {
        self.cleaner_checkpoint.get(i)
    }

    /// The first dir: the embedded metadata store's (Kafka's
    /// `metadata.log.dir` defaults to the first of `log.dirs` too).
    pub fn first(&self) -> &Path {
        &self.dirs[0]
    }

    pub fn path(&self, i: usize) -> &Path {
        &self.dirs[i]
    }

    pub fn index_of(&self, dir: &Path) -> Option<usize> {
        self.dirs.iter().position(|d| d == dir)
    }

    /// Dir `i`'s path as Kafka reports and matches it in DescribeLogDirs
    /// and AlterReplicaLogDirs (`File.getAbsolutePath`).
    pub fn absolute(&self, i: usize) -> String {
        let p = &self.dirs[i];
        std::path::absolute(p)
            .unwrap_or_else(|_| p.clone())
            .to_string_lossy()
            .into_owned()
    }

    /// The dir whose [`Self::absolute`] path is `path`.
    pub fn index_of_absolute(&self, path: &str) -> Option<usize> {
        (0..self.dirs.len()).find(|&i| self.absolute(i) == path)
    }

    /// Dir `i`'s file system: total and usable bytes (Kafka's
    /// `FileStore.getTotalSpace` / `getUsableSpace`, DescribeLogDirs v4).
    pub fn space(&self, i: usize) -> std::io::Result<(u64, u64)> {
        let s = nix::sys::statvfs::statvfs(&self.dirs[i]).map_err(std::io::Error::from)?;
        let unit = s.fragment_size();
        Ok((
            s.blocks().saturating_mul(unit),
            s.blocks_available().saturating_mul(unit),
        ))
    }

    pub fn is_online(&self, i: usize) -> bool {
        self.offline
            .get(i)
            .is_some_and(|o| !o.load(Ordering::Acquire))
    }

    /// Each dir's online flag, in order.
    pub fn online(&self) -> Vec<bool> {
        (0..self.dirs.len()).map(|i| self.is_online(i)).collect()
    }

    /// Take dir `i` offline; true the first time.
    pub fn mark_offline(&self, i: usize) -> bool {
        let Some(flag) = self.offline.get(i) else {
            return false;
        };
        let first = !flag.swap(true, Ordering::AcqRel);
        if first {
            self.changes.fetch_add(1, Ordering::AcqRel);
        }
        first
    }

    pub fn all_offline(&self) -> bool {
        (0..self.dirs.len()).all(|i| !self.is_online(i))
    }

    /// How many dirs went offline so far (see the field).
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// A shard holding partitions registers once; its slot reports what
    /// it applied ([`Self::set_applied`]).
    pub fn register_shard(&self) -> usize {
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        applied.push(0);
        applied.len() - 1
    }

    /// Shard `slot` took every partition of the dirs offline up to
    /// `changes` offline (fetchers removed, requests refused).
    pub fn set_applied(&self, slot: usize, changes: u64) {
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = applied.get_mut(slot) {
            *a = (*a).max(changes);
        }
    }

    /// Every registered shard applied at least `changes`. Kafka's
    /// `ReplicaManager.handleLogDirFailure` removes the fetchers and marks
    /// the partitions offline before `propagateLogDirEvent` tells the
    /// controller: a follower still fetching would show the leader a
    /// replica that looks caught up, taken back into the ISR after the
    /// controller took it out.
    pub fn applied_by_all(&self, changes: u64) -> bool {
        let applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        applied.iter().all(|a| *a >= changes)
    }

    /// Choose the dir of a partition log new to the broker
    /// ([`least_loaded`] over every shard's logs) and count it there at
    /// once, so shards placing at the same time spread too.
    pub fn place_new(&self) -> Option<usize> {
        let counts: Vec<usize> = self
            .logs
            .iter()
            .map(|n| n.load(Ordering::Acquire))
            .collect();
        let i = least_loaded(&counts, &self.online())?;
        self.logs[i].fetch_add(1, Ordering::AcqRel);
        Some(i)
    }

    /// Count a log opened in dir `i` that [`Self::place_new`] did not place.
    pub fn count_log(&self, i: usize) {
        if let Some(n) = self.logs.get(i) {
            n.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A log of dir `i` was closed, deleted or failed to open.
    pub fn uncount_log(&self, i: usize) {
        if let Some(n) = self.logs.get(i) {
            let _ = n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| v.checked_sub(1));
        }
    }

    /// The dir already holding `tp`'s folder (a log from an earlier run,
    /// or one a shard opened), if any: a log never moves between dirs.
    pub fn holding(&self, tp: &TopicPartition) -> Option<usize> {
        let name = tp.dir_name();
        self.dirs.iter().position(|d| d.join(&name).is_dir())
    }
}

/// `[pure]` Where a new partition goes (Kafka's `LogManager.nextLogDirs`):
/// the online dir holding the fewest partitions, the earlier one on a tie;
/// `None` when every dir is offline.
pub fn least_loaded(counts: &[usize], online: &[bool]) -> Option<usize> {
    counts
        .iter()
        .zip(online)
        .enumerate()
        .filter(|(_, (_, up))| **up)
        .min_by_key(|(i, (n, _))| (**n, *i))
        .map(|(i, _)| i)
}

pub struct LogDir {
    path: PathBuf,
}

impl LogDir {
    /// Open `path`, creating it and `meta.properties` if absent; refuse a dir
    /// that belongs to another broker id (Kafka's InconsistentBrokerIdException).
    pub fn open(
        path: &Path,
        broker_id: i32,
        cluster_id: Option<&str>,
    ) -> Result<Self, StorageError> {
        std::fs::create_dir_all(path)?;
        let meta_path = path.join(META_PROPERTIES);
        match std::fs::read_to_string(&meta_path) {
            Ok(text) => {
                let meta = checkpoint::decode_meta_properties(&text)
                    .map_err(|e| StorageError::CorruptCheckpoint(e.0))?;
                if meta.broker_id != broker_id {
                    return Err(StorageError::CorruptCheckpoint(format!(
                        "log dir {} belongs to broker {}, not {broker_id}",
                        path.display(),
                        meta.broker_id
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let meta = MetaProperties {
                    version: 0,
                    broker_id,
                    cluster_id: cluster_id.map(str::to_string),
                };
                write_atomically(&meta_path, &checkpoint::encode_meta_properties(&meta))?;
            }
            Err(e) => return Err(e.into()),
        }
        Ok(LogDir {
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta_properties(&self) -> Result<MetaProperties, StorageError> {
        let text = std::fs::read_to_string(self.path.join(META_PROPERTIES))?;
        checkpoint::decode_meta_properties(&text).map_err(|e| StorageError::CorruptCheckpoint(e.0))
    }

    /// Rewrite all three checkpoints for the partitions this dir manages.
    pub fn write_checkpoints(&self, partitions: &[PartitionOffsets]) -> Result<(), StorageError> {
        self.write_some(Due::ALL, partitions)
    }

    /// Rewrite the checkpoints `due` names.
    pub fn write_some(
        &self,
        due: Due,
        partitions: &[PartitionOffsets],
    ) -> Result<(), StorageError> {
        let pick = |f: fn(&PartitionOffsets) -> i64| {
            partitions
                .iter()
                .map(|p| (p.tp.clone(), f(p)))
                .collect::<Vec<_>>()
        };
        if due.recovery_point {
            write_atomically(
                &self.path.join(RECOVERY_POINT_CHECKPOINT),
                &checkpoint::encode_offsets(&pick(|p| p.recovery_point)),
            )?;
        }
        if due.high_watermark {
            write_atomically(
                &self.path.join(REPLICATION_CHECKPOINT),
                &checkpoint::encode_offsets(&pick(|p| p.high_watermark)),
            )?;
        }
        if due.log_start_offset {
            write_atomically(
                &self.path.join(LOG_START_OFFSET_CHECKPOINT),
                &checkpoint::encode_offsets(&pick(|p| p.log_start_offset)),
            )?;
        }
        Ok(())
    }

    /// Read the three checkpoints back (missing files read as empty).
    pub fn read_checkpoints(&self) -> Result<Vec<PartitionOffsets>, StorageError> {
        let read = |name: &str| -> Result<Vec<(TopicPartition, i64)>, StorageError> {
            match std::fs::read_to_string(self.path.join(name)) {
                Ok(t) => {
                    checkpoint::decode_offsets(&t).map_err(|e| StorageError::CorruptCheckpoint(e.0))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(e) => Err(e.into()),
            }
        };
        let rp = read(RECOVERY_POINT_CHECKPOINT)?;
        let hw = read(REPLICATION_CHECKPOINT)?;
        let ls = read(LOG_START_OFFSET_CHECKPOINT)?;
        let find = |v: &[(TopicPartition, i64)], tp: &TopicPartition| {
            v.iter().find(|(t, _)| t == tp).map_or(0, |(_, o)| *o)
        };
        // A lone LogDir does not know its place in `log.dirs`: index 0.
        Ok(rp
            .iter()
            .map(|(tp, r)| PartitionOffsets {
                tp: tp.clone(),
                recovery_point: *r,
                high_watermark: find(&hw, tp),
                log_start_offset: find(&ls, tp),
                log_dir: 0,
            })
            .collect())
    }
}

/// Which checkpoint files a round writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Due {
    pub recovery_point: bool,
    pub high_watermark: bool,
    pub log_start_offset: bool,
}

impl Due {
    pub const ALL: Due = Due {
        recovery_point: true,
        high_watermark: true,
        log_start_offset: true,
    };

    pub fn any(self) -> bool {
        self.recovery_point || self.high_watermark || self.log_start_offset
    }
}

/// `[pure]` When each checkpoint file is next due (intervals in ms; a
/// file is first written one interval after the start, as Kafka's
/// scheduled tasks first run after their period).
#[derive(Debug, Clone)]
pub struct CheckpointSchedule {
    every: [i64; 3],
    last: [i64; 3],
}

impl CheckpointSchedule {
    /// `recovery_point_ms`: `log.flush.offset.checkpoint.interval.ms`;
    /// `high_watermark_ms`: `replica.high.watermark.checkpoint.interval.ms`;
    /// `log_start_ms`: `log.flush.start.offset.checkpoint.interval.ms`.
    pub fn new(
        recovery_point_ms: i64,
        high_watermark_ms: i64,
        log_start_ms: i64,
        now_ms: i64,
    ) -> Self {
        CheckpointSchedule {
            every: [
                recovery_point_ms.max(1),
                high_watermark_ms.max(1),
                log_start_ms.max(1),
            ],
            last: [now_ms; 3],
        }
    }

    /// The files due at `now_ms`; their clocks restart.
    pub fn due(&mut self, now_ms: i64) -> Due {
        let mut hit = [false; 3];
        for (i, h) in hit.iter_mut().enumerate() {
            if now_ms - self.last[i] >= self.every[i] {
                *h = true;
                self.last[i] = now_ms;
            }
        }
        Due {
            recovery_point: hit[0],
            high_watermark: hit[1],
            log_start_offset: hit[2],
        }
    }
}

/// `[io]` The offsets every data shard last posted, and the checkpoint
/// files written from their union (one set of files per log dir, for the
/// partitions in it, from all shards). An offline dir is written no more
/// (Kafka drops its checkpoint files on a log-dir failure). After
/// [`CheckpointBoard::write_final`] (clean shutdown) no periodic round
/// writes again: the final files stay the last word.
pub struct CheckpointBoard {
    dirs: std::sync::Arc<LogDirs>,
    inner: Mutex<BoardInner>,
}

#[derive(Default)]
struct BoardInner {
    per_shard: BTreeMap<usize, Vec<PartitionOffsets>>,
    finished: bool,
}

impl CheckpointBoard {
    pub fn new(dirs: std::sync::Arc<LogDirs>) -> Self {
        CheckpointBoard {
            dirs,
            inner: Mutex::new(BoardInner::default()),
        }
    }

    /// Replace what shard `shard` posted before.
    pub fn post(&self, shard: usize, offsets: Vec<PartitionOffsets>) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.per_shard.insert(shard, offsets);
        }
    }

    /// Write the files `due` names from every shard's last post (blocking:
    /// run it off the reactor). Nothing is written after the final write.
    pub fn write(&self, due: Due) -> Result<(), StorageError> {
        let Ok(inner) = self.inner.lock() else {
            return Ok(());
        };
        if inner.finished || !due.any() {
            return Ok(());
        }
        let all: Vec<&PartitionOffsets> = inner.per_shard.values().flatten().collect();
        self.write_each_dir(due, &all)
    }

    /// The clean shutdown's checkpoints: `offsets` of every log closed.
    pub fn write_final(&self, offsets: &[PartitionOffsets]) -> Result<(), StorageError> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.finished = true;
        let all: Vec<&PartitionOffsets> = offsets.iter().collect();
        self.write_each_dir(Due::ALL, &all)
    }

    /// Every online dir's files, each with its own partitions (a dir
    /// left with none gets empty files: no stale entry outlives a log).
    /// The first failure is returned after the other dirs are written.
    fn write_each_dir(&self, due: Due, all: &[&PartitionOffsets]) -> Result<(), StorageError> {
        let mut first_error = None;
        for (i, path) in self.dirs.all().iter().enumerate() {
            if !self.dirs.is_online(i) {
                continue;
            }
            let mine: Vec<PartitionOffsets> = all
                .iter()
                .filter(|o| o.log_dir == i)
                .map(|o| (*o).clone())
                .collect();
            let dir = LogDir { path: path.clone() };
            if let Err(e) = dir.write_some(due, &mine) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_dir_is_applied_by_all_only_when_every_registered_shard_applied_it() {
        let dirs = LogDirs::new(vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        let (s0, s1) = (dirs.register_shard(), dirs.register_shard());
        assert!(dirs.applied_by_all(dirs.changes()), "nothing failed yet");
        assert!(dirs.mark_offline(1));
        assert!(
            !dirs.mark_offline(1),
            "the second report of one dir is no change"
        );
        let changes = dirs.changes();
        assert_eq!(changes, 1);
        assert!(!dirs.applied_by_all(changes));
        dirs.set_applied(s1, changes);
        assert!(!dirs.applied_by_all(changes), "shard 0 has not applied it");
        dirs.set_applied(s0, changes);
        assert!(dirs.applied_by_all(changes));
        dirs.set_applied(s0, 0);
        assert!(
            dirs.applied_by_all(changes),
            "what a shard applied never goes back"
        );
    }

    #[test]
    fn each_checkpoint_is_due_once_per_its_own_interval() {
        let mut s = CheckpointSchedule::new(60_000, 5_000, 60_000, 1_000);
        assert_eq!(s.due(1_000), Due::default());
        assert_eq!(s.due(5_999), Due::default());
        let hw_only = Due {
            high_watermark: true,
            ..Due::default()
        };
        assert_eq!(s.due(6_000), hw_only);
        assert_eq!(s.due(6_100), Due::default());
        assert_eq!(s.due(11_000), hw_only);
        assert_eq!(s.due(61_000), Due::ALL);
        assert_eq!(s.due(61_000), Due::default());
    }

    #[test]
    fn a_zero_interval_is_due_every_round_not_always() {
        let mut s = CheckpointSchedule::new(0, 0, 0, 0);
        assert_eq!(s.due(0), Due::default());
        assert_eq!(s.due(1), Due::ALL);
        assert_eq!(s.due(1), Due::default());
    }

    fn offsets(topic: &str, p: i32, rp: i64, hw: i64, ls: i64) -> PartitionOffsets {
        PartitionOffsets {
            tp: TopicPartition::new(topic, p),
            recovery_point: rp,
            high_watermark: hw,
            log_start_offset: ls,
            log_dir: 0,
        }
    }

    #[test]
    fn the_board_writes_the_union_of_the_shards_posts_and_nothing_after_the_final() {
        let dir = tempfile::tempdir().unwrap();
        let board = CheckpointBoard::new(std::sync::Arc::new(LogDirs::new(vec![dir
            .path()
            .to_path_buf()])));
        board.post(0, vec![offsets("a", 0, 10, 7, 0)]);
        board.post(1, vec![offsets("b", 3, 4, 4, 2)]);
        board
            .write(Due {
                high_watermark: true,
                ..Due::default()
            })
            .unwrap();
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).ok();
        let hw = read(REPLICATION_CHECKPOINT).unwrap();
        let mut entries = checkpoint::decode_offsets(&hw).unwrap();
        entries.sort();
        assert_eq!(
            entries,
            vec![
                (TopicPartition::new("a", 0), 7),
                (TopicPartition::new("b", 3), 4)
            ]
        );
        assert_eq!(read(RECOVERY_POINT_CHECKPOINT), None, "not due");
        // A shard's new post replaces its old one (a deleted partition goes).
        board.post(0, vec![]);
        board.write(Due::ALL).unwrap();
        let hw = read(REPLICATION_CHECKPOINT).unwrap();
        assert_eq!(
            checkpoint::decode_offsets(&hw).unwrap(),
            vec![(TopicPartition::new("b", 3), 4)]
        );
        let ls = read(LOG_START_OFFSET_CHECKPOINT).unwrap();
        assert_eq!(
            checkpoint::decode_offsets(&ls).unwrap(),
            vec![(TopicPartition::new("b", 3), 2)]
        );
        board.write_final(&[offsets("c", 0, 9, 9, 0)]).unwrap();
        board.post(1, vec![offsets("b", 3, 5, 5, 2)]);
        board.write(Due::ALL).unwrap();
        let hw = read(REPLICATION_CHECKPOINT).unwrap();
        assert_eq!(
            checkpoint::decode_offsets(&hw).unwrap(),
            vec![(TopicPartition::new("c", 0), 9)]
        );
    }

    #[test]
    fn a_new_partition_goes_to_the_online_dir_with_the_fewest_partitions() {
        assert_eq!(least_loaded(&[3, 1, 2], &[true, true, true]), Some(1));
        assert_eq!(
            least_loaded(&[2, 2, 2], &[true, true, true]),
            Some(0),
            "tie: first"
        );
        assert_eq!(least_loaded(&[3, 1, 2], &[true, false, true]), Some(2));
        assert_eq!(least_loaded(&[0, 0], &[false, false]), None);
        assert_eq!(least_loaded(&[0], &[true]), Some(0));
    }

    #[test]
    fn each_dir_records_its_own_partitions_and_an_offline_dir_is_left_alone() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dirs = std::sync::Arc::new(LogDirs::new(vec![
            a.path().to_path_buf(),
            b.path().to_path_buf(),
        ]));
        let board = CheckpointBoard::new(dirs.clone());
        let in_b = PartitionOffsets {
            log_dir: 1,
            ..offsets("b", 0, 5, 5, 0)
        };
        board.post(0, vec![offsets("a", 0, 10, 7, 0), in_b]);
        board.write(Due::ALL).unwrap();
        let hw = |d: &Path| {
            let text = std::fs::read_to_string(d.join(REPLICATION_CHECKPOINT)).unwrap();
            checkpoint::decode_offsets(&text).unwrap()
        };
        assert_eq!(hw(a.path()), vec![(TopicPartition::new("a", 0), 7)]);
        assert_eq!(hw(b.path()), vec![(TopicPartition::new("b", 0), 5)]);
        // b goes offline: its files keep what they said; a's go on.
        assert!(dirs.mark_offline(1));
        assert!(!dirs.mark_offline(1), "only the first time counts");
        assert_eq!(dirs.changes(), 1);
        board.post(0, vec![offsets("a", 0, 12, 9, 0)]);
        board.write(Due::ALL).unwrap();
        assert_eq!(hw(a.path()), vec![(TopicPartition::new("a", 0), 9)]);
        assert_eq!(hw(b.path()), vec![(TopicPartition::new("b", 0), 5)]);
        assert!(!dirs.all_offline());
        dirs.mark_offline(0);
        assert!(dirs.all_offline());
    }
}
