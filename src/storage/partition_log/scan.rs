//! Batch-header scans for rebuilding producer state (part of the `[drv]`
//! partition log): after a crash the owner replays the batches appended
//! since its last producer snapshot (Kafka's `loadProducersFromRecords`),
//! and only a few header fields are needed, so each batch costs one small
//! pread instead of a read of its records.

use super::PartitionLog;
use crate::protocol::control_record;
use crate::protocol::record_batch;
use crate::storage::StorageError;

/// Header bytes through `baseSequence` (the producer fields end at 57).
const PRODUCER_HEADER: usize = 57;

/// What producer-state recovery reads of one logged batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeaderInfo {
    pub base_offset: i64,
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub is_control: bool,
    pub is_transactional: bool,
    /// A control batch's marker `(commit, coordinator_epoch)`, read from
    /// its record (the batch is read whole; markers are tiny).
    pub marker: Option<(bool, i32)>,
}

/// Control batches longer than this are not read for a marker (Kafka's
/// markers are about 80 bytes; a longer one is no marker shardlog reads).
const MAX_CONTROL_BATCH: i64 = 4096;

impl BatchHeaderInfo {
    /// The v2 header fields at Kafka's fixed positions (`DefaultRecordBatch`).
    fn parse(h: &[u8; PRODUCER_HEADER]) -> Self {
        let i64_at = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&h[at..at + 8]);
            i64::from_be_bytes(a)
        };
        let i32_at = |at: usize| i32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let attributes = i16::from_be_bytes([h[21], h[22]]);
        BatchHeaderInfo {
            base_offset: i64_at(0),
            last_offset_delta: i32_at(23),
            max_timestamp: i64_at(35),
            producer_id: i64_at(43),
            producer_epoch: i16::from_be_bytes([h[51], h[52]]),
            base_sequence: i32_at(53),
            // Attribute bit 5 marks control batches (transaction markers),
            // bit 4 transactional ones.
            is_control: attributes & 0x20 != 0,
            is_transactional: attributes & 0x10 != 0,
            marker: None,
        }
    }
}

impl PartitionLog {
    /// Base offset of the active (last) segment: a change across an
    /// append means the append rolled the log.
    pub fn active_segment_base_offset(&self) -> i64 {
        self.segments.keys().next_back().copied().unwrap_or(0)
    }

    /// Calls `f` with the header of every batch holding an offset at or
    /// past `offset` (from the log start when `offset` lies below it), in
    /// log order. Returns the number of batches seen. Reads the file and,
    /// for the active segment's unwritten tail, the DMA buffer.
    pub fn scan_batches_from(
        &self,
        offset: i64,
        mut f: impl FnMut(&BatchHeaderInfo),
    ) -> Result<u64, StorageError> {
        let below = self.segments.range(..=offset).next_back();
        let above = self.segments.range(offset.saturating_add(1)..);
        let mut seen = 0u64;
        for (_, seg) in below.into_iter().chain(above) {
            let Some(first) = seg.find_batch(offset)? else {
                continue;
            };
            let (mut pos, size) = (first.position, seg.size());
            while pos < size {
                let mut h = [0u8; PRODUCER_HEADER];
                // A legacy message may be shorter than a v2 header.
                let n = (size - pos).min(PRODUCER_HEADER as u64) as usize;
                seg.read_exact_at(pos, &mut h[..n])?;
                if h[16] != record_batch::MAGIC_V2 as u8 {
                    // A legacy (magic 0/1) message of a log Kafka wrote
                    // with an old `log.message.format.version`: no producer
                    // state (Kafka's `ProducerStateManager` reads v2 only).
                    pos += seg.header_at(pos)?.len;
                    continue;
                }
                let len = 12 + i64::from(i32::from_be_bytes([h[8], h[9], h[10], h[11]]));
                if len < record_batch::HEADER_LEN as i64 {
                    return Err(StorageError::Io(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "batch length below the v2 header in a segment",
                    )));
                }
                let mut info = BatchHeaderInfo::parse(&h);
                if info.is_control && len <= MAX_CONTROL_BATCH {
                    let mut whole = vec![0u8; len as usize];
                    seg.read_exact_at(pos, &mut whole)?;
                    info.marker = control_record::read_marker(&whole);
                }
                f(&info);
                seen += 1;
                pos += len as u64;
            }
        }
        Ok(seen)
    }
}
