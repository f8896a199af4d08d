//! Reads (cache, then file) and timestamp lookups (part of the `[drv]` partition log).

use super::*;

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
                regions: hit.pieces.into_iter().map(Region::Cached).collect(),
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
            seg.read_ahead(start, start + in_file, self.config.readahead_bytes);
            out.regions.push(Region::File {
                file: seg.read_file.clone(),
                position: start,
                len: in_file as u32,
            });
        }
        if in_file < total {
            // Not yet written to the file (still in the DMA buffer) and
            // evicted from the cache: copy it out.
            let mut rest = vec![0u8; (total - in_file) as usize];
            seg.read_exact_at(start + in_file, &mut rest)?;
            out.regions.push(Region::Cached(Bytes::from(rest)));
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
