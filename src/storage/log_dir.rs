//! `[io]` Per-log-dir files: `meta.properties` and the three offset
//! checkpoints (`recovery-point-offset-checkpoint`,
//! `replication-offset-checkpoint`, `log-start-offset-checkpoint`) for all
//! partitions of the dir. Writes are atomic (tmp + fsync + rename).

use std::path::{Path, PathBuf};

use super::checkpoint::{
    self, MetaProperties, LOG_START_OFFSET_CHECKPOINT, META_PROPERTIES, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
};
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
}

impl PartitionOffsets {
    pub fn of(log: &PartitionLog) -> Self {
        PartitionOffsets {
            tp: log.topic_partition().clone(),
            recovery_point: log.recovery_point(),
            high_watermark: log.high_watermark(),
            log_start_offset: log.log_start_offset(),
        }
    }
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
        let pick = |f: fn(&PartitionOffsets) -> i64| {
            partitions
                .iter()
                .map(|p| (p.tp.clone(), f(p)))
                .collect::<Vec<_>>()
        };
        write_atomically(
            &self.path.join(RECOVERY_POINT_CHECKPOINT),
            &checkpoint::encode_offsets(&pick(|p| p.recovery_point)),
        )?;
        write_atomically(
            &self.path.join(REPLICATION_CHECKPOINT),
            &checkpoint::encode_offsets(&pick(|p| p.high_watermark)),
        )?;
        write_atomically(
            &self.path.join(LOG_START_OFFSET_CHECKPOINT),
            &checkpoint::encode_offsets(&pick(|p| p.log_start_offset)),
        )?;
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
        Ok(rp
            .iter()
            .map(|(tp, r)| PartitionOffsets {
                tp: tp.clone(),
                recovery_point: *r,
                high_watermark: find(&hw, tp),
                log_start_offset: find(&ls, tp),
            })
            .collect())
    }
}
