//! Each segment's base offset, last-modified time and size: what Kafka's
//! `UnifiedLog.legacyFetchOffsetsBefore` (ListOffsets v0) reads from its
//! `LogSegment`s (`baseOffset`, `lastModified` — the log file's mtime —
//! and `size`). Part of the `[drv]` partition log.

use std::os::unix::fs::MetadataExt;

use super::PartitionLog;

/// One segment as ListOffsets v0 sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentTime {
    pub base_offset: i64,
    /// The log file's mtime in ms since the epoch (0 when it cannot be
    /// read, as `File.lastModified` answers for a missing file).
    pub last_modified_ms: i64,
    pub size: u64,
}

impl PartitionLog {
    /// The segments in offset order (one `stat` per segment).
    pub fn segment_times(&self) -> Vec<SegmentTime> {
        self.segments
            .values()
            .map(|s| SegmentTime {
                base_offset: s.base_offset,
                last_modified_ms: std::fs::metadata(s.log_path())
                    .map(|m| m.mtime() * 1000 + m.mtime_nsec() / 1_000_000)
                    .unwrap_or(0),
                size: s.size(),
            })
            .collect()
    }
}
