//! The log cleaner: compaction for `cleanup.policy=compact` and
//! `compact,delete` (Kafka 3.9's `LogCleaner`, `LogCleanerManager`,
//! `MemoryRecords.filterTo`, `LogLoader`'s swap recovery).
//!
//! One cleaner per data shard, a task of its own on the shard that owns the
//! partitions (`task` runs it), off the data path: it
//! reads closed segments through their read-only fds without the log's
//! lock, off the shard (blocking-pool reads and writes of at most
//! [`driver::CHUNK_BYTES`]), yields between batches, and honours
//! `log.cleaner.io.max.bytes.per.second`; only the swap of a cleaned segment
//! takes the log's write lock.
//!
//! | file         | kind | role |
//! |--------------|------|------|
//! | `select`     | pure | which log to clean, its first dirty and first uncleanable offsets |
//! | `offset_map` | pure | key → latest offset over the dirty section |
//! | `filter`     | pure | keep/drop per record and per batch (markers: delete horizon, then gone); the rewritten v2 batch |
//! | `legacy`     | pure | keep/drop of legacy magic 0/1 messages; the rebuilt wrapper |
//! | `txn`        | pure | transactions as a clean reads them: aborted data, markers that may go, the cleaned `.txnindex` entries |
//! | `group`      | pure | segments cleaned into one (`groupSegmentsBySize`) |
//! | `throttle`   | pure | `log.cleaner.io.max.bytes.per.second` |
//! | `codec`      | —    | compress rewritten records with the batch's codec |
//! | `driver`     | drv  | one clean: offset map, cleaned segments, checkpoint file |
//! | `task`       | drv  | the shard's cleaner task: picks the filthiest log, cleans it, swaps it in |
//!
//! The checkpoint text (`cleaner-offset-checkpoint`) is `storage::checkpoint`;
//! the `.cleaned` / `.swap` file names and their recovery at open are
//! `storage::swap`, below the partition log that swaps cleaned segments in.

pub mod codec;
pub mod driver;
pub mod filter;
pub mod group;
pub mod legacy;
pub mod offset_map;
pub mod select;
pub mod task;
pub mod throttle;
pub mod txn;
