//! Reads (cache, then file) and timestamp lookups (part of the `[drv]` partition log).
//!
//! ListOffsets by timestamp is answered at record level like Kafka
//! (`UnifiedLog.fetchOffsetByTimestamp`): the time index finds the batch,
//! then that batch's records are walked (`protocol::record_walk`, never
//! decoded whole: a stored batch's records are the client's bytes).

use std::ops::ControlFlow;

use bytes::Bytes;

use super::{PartitionLog, ReadResult};
use crate::protocol::legacy;
use crate::protocol::out_part::OutPart;
use crate::protocol::record_batch;
use crate::protocol::record_walk::{self, InflateScratch};
use crate::protocol::ErrorCode;
use crate::storage::recovery;
use crate::storage::segment::Segment;
use crate::storage::StorageError;

impl PartitionLog {
    /// Whole batches from the one holding `start_offset`, never past
    /// `upper_bound` (the caller passes HW, LSO or LEO) nor the log end, at
    /// most `max_bytes` unless `min_one_batch` (KIP-74) and the first batch
    /// is bigger. Like Kafka, one read serves from a single segment.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        upper_bound: i64,
        min_one_batch: bool,
    ) -> Result<ReadResult, StorageError> {
        let leo = self.log_end_offset();
        if start_offset < self.log_start_offset || start_offset > leo {
            return Err(StorageError::OffsetOutOfRange {
                offset: start_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: leo,
            });
        }
        let upper = upper_bound.min(leo);
        if start_offset >= upper {
            return Ok(ReadResult::default());
        }
        if let Some(hit) =
            self.cache
                .borrow()
                .read(self.cache_id, start_offset, max_bytes, upper, min_one_batch)
        {
            return Ok(ReadResult {
                bytes: hit.bytes,
                regions: hit.pieces.into_iter().map(OutPart::Bytes).collect(),
            });
        }
        let below = self.segments.range(..=start_offset).next_back();
        let above = self.segments.range(start_offset + 1..);
        for (_, seg) in below.into_iter().chain(above) {
            if let Some(first) = seg.find_batch(start_offset)? {
                return self.read_segment(seg, first.position, max_bytes, upper, min_one_batch);
            }
        }
        Ok(ReadResult::default())
    }

    fn read_segment(
        &self,
        seg: &Segment,
        start: u64,
        max_bytes: usize,
        upper: i64,
        min_one_batch: bool,
    ) -> Result<ReadResult, StorageError> {
        let mut total = 0u64;
        seg.walk_from(start, |h| {
            if h.last_offset >= upper {
                return false;
            }
            let fits = total + h.len <= max_bytes as u64;
            let kip74_first = total == 0 && min_one_batch;
            if !(fits || kip74_first) {
                return false;
            }
            total += h.len;
            fits
        })?;
        let mut out = ReadResult {
            regions: Vec::new(),
            bytes: total as usize,
        };
        let in_file = seg.file_end().saturating_sub(start).min(total);
        if in_file > 0 {
            seg.read_ahead(
                start,
                start + in_file,
                self.config.readahead_bytes,
                self.storage.helpers(),
            );
            out.regions.push(OutPart::File {
                file: seg.read_file.clone(),
                position: start,
                len: in_file as usize,
            });
        }
        if in_file < total {
            // Not yet written to the file (still in the DMA buffer) and
            // evicted from the cache: copy it out.
            let mut rest = vec![0u8; (total - in_file) as usize];
            seg.read_exact_at(start + in_file, &mut rest)?;
            out.regions.push(OutPart::Bytes(Bytes::from(rest)));
        }
        Ok(out)
    }

    /// ListOffsets by timestamp: the first batch whose max timestamp is >=
    /// `timestamp`, as (its base offset, its max timestamp). Uses the time
    /// index then a forward walk. Batch granularity: records are not parsed.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>, StorageError> {
        for seg in self.segments.values() {
            if seg.index.max_timestamp < timestamp || seg.next_offset <= self.log_start_offset {
                continue;
            }
            let from = seg.index.lookup_timestamp_start(timestamp);
            let mut found = None;
            seg.walk_from(seg.index.lookup_position(from), |h| {
                if h.max_timestamp >= timestamp && h.last_offset >= self.log_start_offset {
                    found = Some((h.base_offset.max(self.log_start_offset), h.max_timestamp));
                    return false;
                }
                true
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// ListOffsets MAX_TIMESTAMP (KIP-734): the largest timestamp and the
    /// base offset of the batch holding it; `None` for an empty log.
    pub fn max_timestamp_and_offset(&self) -> Option<(i64, i64)> {
        // First segment reaching the maximum wins ties, like a linear scan.
        let mut best: Option<(i64, i64)> = None;
        for s in self.segments.values() {
            if s.index.max_timestamp >= 0 && best.is_none_or(|(t, _)| s.index.max_timestamp > t) {
                best = Some((s.index.max_timestamp, s.index.offset_of_max_timestamp));
            }
        }
        best
    }
}

impl PartitionLog {
    /// The record `pick` names, below `fetchable` (Kafka's
    /// `Partition.fetchOffsetForTimestamp`: answers at or past the last
    /// fetchable offset, the HW or the LEO for replicas, are "not found").
    /// `(offset, timestamp)`, or `None` when no record qualifies.
    pub fn find_record_by_timestamp(
        &self,
        pick: RecordPick,
        fetchable: i64,
    ) -> Result<Option<(i64, i64)>, ErrorCode> {
        let found = match pick {
            RecordPick::MaxTimestamp => match self.max_timestamp_and_offset() {
                Some((_, batch_base)) => find_record(self, batch_base, pick)?,
                None => None,
            },
            RecordPick::AtOrAfter(ts) => match self.offset_for_timestamp(ts) {
                Ok(Some((batch_base, _))) => find_record(self, batch_base, pick)?,
                Ok(None) => None,
                Err(e) => return Err(ErrorCode(e.kafka_error_code())),
            },
        };
        Ok(found.filter(|&(offset, _)| offset < fetchable))
    }
}

/// Which record of a batch a ListOffsets lookup wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordPick {
    /// The first record (offset order) with timestamp >= the target
    /// (Kafka `FileRecords.searchForTimestamp`).
    AtOrAfter(i64),
    /// The earliest record holding the batch's largest timestamp
    /// (KIP-734; Kafka `RecordBatch.offsetOfMaxTimestamp`).
    MaxTimestamp,
}

/// Chooses the answer among one batch's records as they are walked,
/// ignoring records below the log start offset.
struct RecordPicker {
    pick: RecordPick,
    log_start_offset: i64,
    best: Option<(i64, i64)>,
}

impl RecordPicker {
    fn new(pick: RecordPick, log_start_offset: i64) -> Self {
        RecordPicker {
            pick,
            log_start_offset,
            best: None,
        }
    }

    /// The next record in offset order; `Break` once the answer is known.
    fn offer(&mut self, offset: i64, timestamp: i64) -> ControlFlow<()> {
        if offset < self.log_start_offset {
            return ControlFlow::Continue(());
        }
        match self.pick {
            RecordPick::AtOrAfter(target) if timestamp >= target => {
                self.best = Some((offset, timestamp));
                ControlFlow::Break(())
            }
            RecordPick::AtOrAfter(_) => ControlFlow::Continue(()),
            // Strictly greater: the first of equal maxima stays.
            RecordPick::MaxTimestamp => {
                if self.best.is_none_or(|(_, best)| timestamp > best) {
                    self.best = Some((offset, timestamp));
                }
                ControlFlow::Continue(())
            }
        }
    }
}

/// Find the record `pick` names, starting at the batch holding
/// `batch_offset`. A timestamp search moves on to later batches only when
/// the records that matched lie below the log start offset (Kafka's
/// segment search does the same).
fn find_record(
    log: &PartitionLog,
    batch_offset: i64,
    pick: RecordPick,
) -> Result<Option<(i64, i64)>, ErrorCode> {
    let log_start = log.log_start_offset();
    let leo = log.log_end_offset();
    let mut next = batch_offset.max(log_start);
    while next < leo {
        let Some(batch) = read_one_batch(log, next, leo)? else {
            return Ok(None);
        };
        let (last_offset, max_timestamp) = batch_header(&batch)?;
        let wanted = match pick {
            RecordPick::AtOrAfter(target) => max_timestamp >= target,
            RecordPick::MaxTimestamp => true,
        };
        if wanted {
            let mut picker = RecordPicker::new(pick, log_start);
            let scratch = &mut log.storage.inflate_scratch();
            walk_batch(&batch, scratch, |o, t| picker.offer(o, t))?;
            if let Some(hit) = picker.best {
                return Ok(Some(hit));
            }
        }
        if pick == RecordPick::MaxTimestamp {
            return Ok(None);
        }
        next = last_offset + 1;
    }
    Ok(None)
}

/// The bytes of the batch holding `offset` (cold path: file regions are
/// copied out with pread).
fn read_one_batch(log: &PartitionLog, offset: i64, leo: i64) -> Result<Option<Bytes>, ErrorCode> {
    let read = log
        .read(offset, 1, leo, true)
        .map_err(|e| ErrorCode(e.kafka_error_code()))?;
    if read.regions.is_empty() {
        return Ok(None);
    }
    let bytes = crate::io::parts::gather(&read.regions).map_err(|e| {
        tracing::error!(error = %e, "reading a batch for ListOffsets");
        ErrorCode::KAFKA_STORAGE_ERROR
    })?;
    Ok(Some(bytes))
}

/// `(last offset, max timestamp)` from a stored batch's header (a v2
/// batch or a legacy magic 0/1 message, see `recovery::entry_header`).
fn batch_header(batch: &[u8]) -> Result<(i64, i64), ErrorCode> {
    if batch.get(LEGACY_MAGIC_AT).is_some_and(|&m| m < 2) {
        let h = recovery::entry_header(batch, 0).ok_or(ErrorCode::CORRUPT_MESSAGE)?;
        return Ok((h.last_offset, h.max_timestamp));
    }
    let view = record_batch::RecordBatch::new_unchecked_crc(batch)
        .map_err(|e| ErrorCode(e.kafka_error_code()))?;
    Ok((view.last_offset(), view.max_timestamp()))
}

/// Calls `visit(offset, timestamp)` for the records of the first batch in
/// `batch`, in offset order, without decoding them whole (a stored batch's
/// records are the client's bytes; LogAppendTime applied: see
/// `record_walk`). An LZ4 batch is inflated in `scratch`. A legacy entry
/// is read as Kafka's `FileRecords.searchForTimestamp` iterates it: a
/// wrapper's inner messages with absolute offsets (a v0 one's timestamps
/// are -1 and never match).
fn walk_batch(
    batch: &[u8],
    scratch: &mut InflateScratch,
    mut visit: impl FnMut(i64, i64) -> ControlFlow<()>,
) -> Result<(), ErrorCode> {
    if batch.get(LEGACY_MAGIC_AT).is_some_and(|&m| m < 2) {
        let corrupt = |e: record_batch::BatchError| {
            tracing::error!(error = %e, "cannot read a stored legacy message for ListOffsets");
            ErrorCode::CORRUPT_MESSAGE
        };
        let h = recovery::entry_header(batch, 0).ok_or(ErrorCode::CORRUPT_MESSAGE)?;
        let end = usize::try_from(h.len).map_err(|_| ErrorCode::CORRUPT_MESSAGE)?;
        let body = Bytes::copy_from_slice(batch.get(12..end).ok_or(ErrorCode::CORRUPT_MESSAGE)?);
        let message = legacy::Message::parse(h.last_offset, &body).map_err(corrupt)?;
        let messages = if message.is_compressed() {
            message.inner_messages(scratch).map_err(corrupt)?
        } else {
            vec![message]
        };
        for m in messages {
            if visit(m.offset, m.timestamp).is_break() {
                break;
            }
        }
        return Ok(());
    }
    record_walk::for_each_record(batch, scratch, visit).map_err(|e| {
        tracing::error!(error = %e, "cannot read a stored batch's records for ListOffsets");
        ErrorCode::CORRUPT_MESSAGE
    })
}

/// Where every entry format keeps its magic byte (`Records.MAGIC_OFFSET`).
const LEGACY_MAGIC_AT: usize = legacy::MAGIC_OFFSET;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch;
    use bytes::BytesMut;
    use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

    fn pick_record(
        records: &[(i64, i64)],
        pick: RecordPick,
        log_start_offset: i64,
    ) -> Option<(i64, i64)> {
        let mut picker = RecordPicker::new(pick, log_start_offset);
        for &(o, t) in records {
            if picker.offer(o, t).is_break() {
                break;
            }
        }
        picker.best
    }

    fn batch_record_timestamps(batch: &[u8]) -> Result<Vec<(i64, i64)>, ErrorCode> {
        let mut out = Vec::new();
        walk_batch(batch, &mut InflateScratch::default(), |o, t| {
            out.push((o, t));
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Out-of-order timestamps with a repeated maximum (offsets 10..15).
    const RECORDS: [(i64, i64); 5] = [(10, 100), (11, 300), (12, 200), (13, 300), (14, 250)];

    #[test]
    fn at_or_after_picks_the_first_record_in_offset_order_not_the_closest_timestamp() {
        // (target, expected)
        let table: [(i64, Option<(i64, i64)>); 6] = [
            (0, Some((10, 100))),
            (100, Some((10, 100))),
            (101, Some((11, 300))),
            (201, Some((11, 300))),
            (300, Some((11, 300))),
            (301, None),
        ];
        for (target, expected) in table {
            assert_eq!(
                pick_record(&RECORDS, RecordPick::AtOrAfter(target), 0),
                expected,
                "target {target}"
            );
        }
    }

    #[test]
    fn max_timestamp_picks_the_earliest_record_holding_the_maximum() {
        assert_eq!(
            pick_record(&RECORDS, RecordPick::MaxTimestamp, 0),
            Some((11, 300))
        );
        assert_eq!(pick_record(&[], RecordPick::MaxTimestamp, 0), None);
    }

    #[test]
    fn records_below_the_log_start_offset_are_never_answered() {
        assert_eq!(
            pick_record(&RECORDS, RecordPick::AtOrAfter(0), 12),
            Some((12, 200))
        );
        assert_eq!(
            pick_record(&RECORDS, RecordPick::MaxTimestamp, 12),
            Some((13, 300))
        );
        assert_eq!(pick_record(&RECORDS, RecordPick::AtOrAfter(0), 15), None);
    }

    fn encoded_batch(base_offset: i64, timestamps: &[i64], compression: Compression) -> Bytes {
        let records: Vec<Record> = timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| {
                crate::protocol::test_records::record(
                    base_offset + i as i64,
                    *ts,
                    None,
                    Some(Bytes::from(vec![b'x'; 64])),
                )
            })
            .collect();
        let mut buf = BytesMut::new();
        // LZ4 through the cleaner's frame writer: kafka-protocol's LZ4
        // codec (the C `lz4` crate) is left out of the build.
        let lz4 = matches!(compression, Compression::Lz4);
        let options = RecordEncodeOptions {
            version: 2,
            compression: if lz4 { Compression::None } else { compression },
        };
        RecordBatchEncoder::encode(&mut buf, &records, &options).expect("encode");
        if lz4 {
            let squeezed = crate::storage::cleaner::codec::compress_batch(&buf, 3).expect("lz4");
            return Bytes::from(squeezed);
        }
        buf.freeze()
    }

    #[test]
    fn stored_batches_decode_to_record_offsets_and_timestamps_with_every_codec() {
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let batch = encoded_batch(40, &[5, 9, 7], compression);
            assert_eq!(batch_header(&batch), Ok((42, 9)), "{compression:?}");
            assert_eq!(
                batch_record_timestamps(&batch),
                Ok(vec![(40, 5), (41, 9), (42, 7)]),
                "{compression:?}"
            );
        }
    }

    #[test]
    fn log_append_time_batches_give_every_record_the_batch_timestamp() {
        let mut batch = BytesMut::from(&encoded_batch(0, &[5, 9, 7], Compression::None)[..]);
        record_batch::set_log_append_time(&mut batch, 1_000);
        let records = batch_record_timestamps(&batch).expect("decode");
        assert_eq!(records, vec![(0, 1_000), (1, 1_000), (2, 1_000)]);
        assert_eq!(
            pick_record(&records, RecordPick::MaxTimestamp, 0),
            Some((0, 1_000))
        );
    }

    #[test]
    fn a_truncated_batch_is_an_error_not_a_panic() {
        let batch = encoded_batch(0, &[5, 9, 7], Compression::Gzip);
        let cut = batch.slice(..batch.len() - 10);
        assert!(batch_record_timestamps(&cut).is_err());
        assert!(batch_header(&batch[..20]).is_err());
    }
}
