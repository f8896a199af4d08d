//! Per-partition log, owned by one shard (ARCHITECTURE.md §3–4).
//!
//! | file            | kind  | role |
//! |-----------------|-------|------|
//! | `config`        | pure  | [`LogConfig`]: Kafka topic-level log keys |
//! | `index`         | pure  | sparse offset and time indexes (in memory, file codec) |
//! | `policy`        | pure  | segment roll rule |
//! | `readahead`     | pure  | what to read ahead of a fetch from a segment file |
//! | `recovery`      | pure  | batch scanning over bytes (length + CRC), torn-tail detection |
//! | `checkpoint`    | pure  | Kafka's checkpoint / properties text formats |
//! | `batch_cache`   | pure  | per-shard cache of recently appended batches |
//! | `appender`      | io    | DMA (O_DIRECT) appender for the active segment |
//! | `close_batch`   | io    | many logs closed with three `syncfs` in all, markers last |
//! | `buffer_pool`   | io    | per-shard recycled DMA write buffers, lent to the batch cache |
//! | `helper_thread` | io    | per-shard threads for read-ahead hints and freeing deleted segments |
//! | `recycle`       | pure  | per-partition pool of retired segment files reused for new segments |
//! | `segment`       | io    | one segment: files, indexes, reads by position |
//! | `swap`          | io    | a cleaned segment's `.cleaned` / `.swap` names and their recovery at open |
//! | `partition_log` | drv   | [`PartitionLog`]: append, read, roll, recover, retain |
//! | `cleaner`       | drv   | log compaction (`cleanup.policy=compact`), see its table |
//! | `log_dir`       | io    | per log dir `meta.properties` and checkpoint files |
//! | `dir_failure`   | io    | the broker's log-dir failure channel (Kafka's `LogDirFailureChannel`) |
//! | `shard_storage` | io    | [`ShardStorage`]: what a shard's storage owns beside its logs (cache, buffer pool, helper threads, failure handle, checkpoint request, LZ4 inflate scratch) |

pub mod appender;
pub mod batch_cache;
pub mod buffer_pool;
pub mod checkpoint;
pub mod cleaner;
pub mod close_batch;
pub mod config;
pub mod dir_failure;
pub mod flusher;
pub mod helper_thread;
pub mod index;
pub mod io_timings;
pub mod log_dir;
pub mod partition_log;
pub mod policy;
pub mod producer_snapshot;
pub mod readahead;
pub mod recovery;
pub mod recycle;
pub mod segment;
pub mod shard_storage;
pub mod swap;
pub mod txn_index;

pub use batch_cache::{BatchCache, SharedBatchCache};
pub use config::LogConfig;
pub use partition_log::{
    AppendInfo, PartitionLog, PendingSync, ReadResult, RecoveryStats, ValidatedRecords,
};
pub use shard_storage::ShardStorage;

use crate::protocol::record_batch::BatchError;

/// Errors of the storage layer; mapped to Kafka codes only at the protocol
/// edge through [`StorageError::kafka_error_code`].
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The produce request's records were refused (2 / 87 / 43).
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// A batch larger than `max.message.bytes` → MESSAGE_TOO_LARGE (10).
    #[error("record batch of {size} bytes exceeds max.message.bytes {max}")]
    MessageTooLarge { size: usize, max: usize },
    /// The request's records for the partition are larger than
    /// `segment.bytes` → RECORD_LIST_TOO_LARGE (18), as Kafka's
    /// `UnifiedLog.append` refuses them (RecordBatchTooLargeException).
    #[error("{size} bytes of records exceed the segment size {segment}")]
    RecordListTooLarge { size: u64, segment: u64 },
    /// OFFSET_OUT_OF_RANGE (1): start < log start offset or > log end offset.
    #[error("offset {offset} out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    /// A write or fsync failed earlier: the log refuses all further writes
    /// (KAFKA_STORAGE_ERROR, 56). A failed fsync is never retried.
    #[error("log is poisoned after an earlier I/O failure")]
    Poisoned,
    /// I/O failure (KAFKA_STORAGE_ERROR, 56).
    #[error("storage I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A checkpoint or properties file could not be parsed (56).
    #[error("corrupt checkpoint file: {0}")]
    CorruptCheckpoint(String),
    /// A follower append the leader's batches cannot make (out of order);
    /// never reaches a client (the fetcher refetches).
    #[error(transparent)]
    Follower(#[from] partition_log::FollowerAppendError),
}

impl StorageError {
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            StorageError::Batch(e) => e.kafka_error_code(),
            StorageError::MessageTooLarge { .. } => 10,
            StorageError::RecordListTooLarge { .. } => 18,
            StorageError::OffsetOutOfRange { .. } => 1,
            StorageError::Poisoned | StorageError::Io(_) | StorageError::CorruptCheckpoint(_) => 56,
            // UNKNOWN_SERVER_ERROR: only the replica fetcher sees it.
            StorageError::Follower(_) => -1,
        }
    }
}

impl From<glommio::GlommioError<()>> for StorageError {
    fn from(e: glommio::GlommioError<()>) -> Self {
        StorageError::Io(e.into())
    }
}

/// Kafka's file name for a segment: the base offset as 20 zero-padded digits.
pub fn segment_file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_are_twenty_digit_base_offsets() {
        assert_eq!(segment_file_name(0, ".log"), "00000000000000000000.log");
        assert_eq!(
            segment_file_name(1234, ".index"),
            "00000000000000001234.index"
        );
    }

    #[test]
    fn errors_map_to_kafka_codes() {
        let oor = StorageError::OffsetOutOfRange {
            offset: 9,
            log_start_offset: 0,
            log_end_offset: 3,
        };
        assert_eq!(oor.kafka_error_code(), 1);
        assert_eq!(StorageError::Poisoned.kafka_error_code(), 56);
        assert_eq!(
            StorageError::Batch(BatchError::Corrupt("x")).kafka_error_code(),
            2
        );
        assert_eq!(
            StorageError::MessageTooLarge { size: 2, max: 1 }.kafka_error_code(),
            10
        );
    }
}
