//! `[pure]` Sparse offset and time indexes of one segment.
//!
//! Kafka's `.index`: 8-byte entries (relative offset u32 BE, position u32 BE);
//! `.timeindex`: 12-byte entries (timestamp i64 BE, relative offset u32 BE).
//! One entry per `index.interval.bytes` of appended data (Kafka appends an
//! entry when more than that many bytes went in since the last one). They are
//! kept in memory for the active segment and written to files on roll and
//! clean shutdown. Entries point at batch *base* offsets so a lookup lands on
//! a batch boundary.

/// Offset index: sorted by relative offset and by position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetIndex {
    entries: Vec<(u32, u32)>,
    max_entries: usize,
}

impl OffsetIndex {
    pub fn new(max_entries: usize) -> Self {
        OffsetIndex {
            entries: Vec::new(),
            max_entries,
        }
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }
    pub fn entries(&self) -> &[(u32, u32)] {
        &self.entries
    }
    /// Append an entry; ignored unless strictly after the last one (Kafka
    /// refuses out-of-order entries the same way).
    pub fn append(&mut self, relative_offset: u32, position: u32) {
        match self.entries.last() {
            Some(&(o, p)) if relative_offset <= o || position <= p => {}
            _ if self.is_full() => {}
            _ => self.entries.push((relative_offset, position)),
        }
    }
    /// Largest entry with relative offset <= target, else (0, 0): the batch
    /// holding `target` starts at or after the returned position.
    pub fn lookup(&self, relative_target: u32) -> (u32, u32) {
        let n = self.entries.partition_point(|&(o, _)| o <= relative_target);
        if n == 0 {
            (0, 0)
        } else {
            self.entries[n - 1]
        }
    }
    /// Drop entries for offsets >= relative_offset (log truncation).
    pub fn truncate_to(&mut self, relative_offset: u32) {
        let n = self.entries.partition_point(|&(o, _)| o < relative_offset);
        self.entries.truncate(n);
    }
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * 8);
        for &(o, p) in &self.entries {
            out.extend_from_slice(&o.to_be_bytes());
            out.extend_from_slice(&p.to_be_bytes());
        }
        out
    }
    /// Decode an index file; `None` if it is malformed or not strictly
    /// increasing (then the caller rebuilds it from the segment).
    pub fn decode(bytes: &[u8], max_entries: usize, segment_size: u64) -> Option<Self> {
        if !bytes.len().is_multiple_of(8) {
            return None;
        }
        let mut idx = OffsetIndex::new(max_entries);
        for c in bytes.chunks_exact(8) {
            let o = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            let p = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
            if u64::from(p) >= segment_size.max(1) {
                return None;
            }
            let before = idx.entries.len();
            idx.append(o, p);
            if idx.entries.len() == before {
                return None;
            }
        }
        Some(idx)
    }
}

/// Time index: (max timestamp so far, relative base offset of the batch that
/// holds it); timestamps strictly increasing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeIndex {
    entries: Vec<(i64, u32)>,
    max_entries: usize,
}

impl TimeIndex {
    pub fn new(max_entries: usize) -> Self {
        TimeIndex {
            entries: Vec::new(),
            max_entries,
        }
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }
    pub fn entries(&self) -> &[(i64, u32)] {
        &self.entries
    }
    /// Append only when the timestamp grows (Kafka's `maybeAppend`; an
    /// empty index's last entry reads as NO_TIMESTAMP, -1, so a log of
    /// magic-0 messages, which have none, gains no entry).
    pub fn maybe_append(&mut self, timestamp: i64, relative_offset: u32) {
        match self.entries.last() {
            None if timestamp <= -1 => {}
            Some(&(t, o)) if timestamp <= t || relative_offset < o => {}
            _ if self.is_full() => {}
            _ => self.entries.push((timestamp, relative_offset)),
        }
    }
    /// Largest entry with timestamp strictly below `target`: every batch up
    /// to and including that entry's batch has max timestamp < target, so a
    /// scan for the first batch with max timestamp >= target may start there.
    pub fn lookup_below(&self, target: i64) -> Option<(i64, u32)> {
        let n = self.entries.partition_point(|&(t, _)| t < target);
        n.checked_sub(1).map(|i| self.entries[i])
    }
    pub fn truncate_to(&mut self, relative_offset: u32) {
        let n = self.entries.partition_point(|&(_, o)| o < relative_offset);
        self.entries.truncate(n);
    }
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * 12);
        for &(t, o) in &self.entries {
            out.extend_from_slice(&t.to_be_bytes());
            out.extend_from_slice(&o.to_be_bytes());
        }
        out
    }
    pub fn decode(bytes: &[u8], max_entries: usize) -> Option<Self> {
        if !bytes.len().is_multiple_of(12) {
            return None;
        }
        let mut idx = TimeIndex::new(max_entries);
        for c in bytes.chunks_exact(12) {
            let mut t = [0u8; 8];
            t.copy_from_slice(&c[..8]);
            let o = u32::from_be_bytes([c[8], c[9], c[10], c[11]]);
            let before = idx.entries.len();
            idx.maybe_append(i64::from_be_bytes(t), o);
            if idx.entries.len() == before {
                return None;
            }
        }
        Some(idx)
    }
}

/// Everything a segment learns from the batches appended to it: both indexes
/// plus the running max timestamp. Shared by the append path and recovery so
/// a rebuilt index equals the one built live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentIndex {
    pub base_offset: i64,
    pub offsets: OffsetIndex,
    pub times: TimeIndex,
    pub index_interval_bytes: u64,
    /// Bytes appended since the last index entry (Kafka `bytesSinceLastIndexEntry`).
    pub bytes_since_last_entry: u64,
    /// Largest batch max timestamp seen (-1 when empty, Kafka's NO_TIMESTAMP).
    pub max_timestamp: i64,
    /// Base offset of the batch holding `max_timestamp`.
    pub offset_of_max_timestamp: i64,
    /// Max timestamp of the first batch (Kafka rolls on `segment.ms` from it).
    pub first_batch_timestamp: Option<i64>,
}

impl SegmentIndex {
    pub fn new(
        base_offset: i64,
        index_interval_bytes: u64,
        max_offset_entries: usize,
        max_time_entries: usize,
    ) -> Self {
        SegmentIndex {
            base_offset,
            offsets: OffsetIndex::new(max_offset_entries),
            times: TimeIndex::new(max_time_entries),
            index_interval_bytes,
            bytes_since_last_entry: 0,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            first_batch_timestamp: None,
        }
    }

    /// Record one batch appended at `position`. Offsets must fit u32 relative
    /// to the base (the roll policy guarantees it).
    pub fn on_batch(&mut self, base_offset: i64, position: u64, len: u64, max_timestamp: i64) {
        if self.first_batch_timestamp.is_none() {
            self.first_batch_timestamp = Some(max_timestamp);
        }
        if max_timestamp > self.max_timestamp {
            self.max_timestamp = max_timestamp;
            self.offset_of_max_timestamp = base_offset;
        }
        if self.bytes_since_last_entry > self.index_interval_bytes {
            let rel = self.relative(base_offset);
            self.offsets.append(rel, position as u32);
            let rel_max = self.relative(self.offset_of_max_timestamp);
            self.times.maybe_append(self.max_timestamp, rel_max);
            self.bytes_since_last_entry = 0;
        }
        self.bytes_since_last_entry += len;
    }

    pub fn relative(&self, offset: i64) -> u32 {
        (offset - self.base_offset).clamp(0, i64::from(u32::MAX)) as u32
    }

    /// Position to start scanning for `offset` (a batch boundary <= it).
    pub fn lookup_position(&self, offset: i64) -> u64 {
        u64::from(self.offsets.lookup(self.relative(offset)).1)
    }

    /// Offset to start scanning for the first batch with max timestamp >= ts.
    pub fn lookup_timestamp_start(&self, ts: i64) -> i64 {
        match self.times.lookup_below(ts) {
            Some((_, rel)) => self.base_offset + i64::from(rel),
            None => self.base_offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lookup_finds_largest_entry_not_above_target() {
        let mut idx = OffsetIndex::new(10);
        idx.append(5, 100);
        idx.append(9, 200);
        idx.append(9, 300); // refused: not increasing
        assert_eq!(idx.lookup(4), (0, 0));
        assert_eq!(idx.lookup(5), (5, 100));
        assert_eq!(idx.lookup(8), (5, 100));
        assert_eq!(idx.lookup(1000), (9, 200));
        idx.truncate_to(9);
        assert_eq!(idx.entries(), &[(5, 100)]);
    }

    #[test]
    fn index_stops_growing_when_full() {
        let mut idx = OffsetIndex::new(2);
        for i in 1..5 {
            idx.append(i, i * 10);
        }
        assert!(idx.is_full());
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn time_index_keeps_only_growing_timestamps() {
        let mut t = TimeIndex::new(10);
        t.maybe_append(10, 1);
        t.maybe_append(10, 2);
        t.maybe_append(30, 5);
        assert_eq!(t.entries(), &[(10, 1), (30, 5)]);
        assert_eq!(t.lookup_below(10), None);
        assert_eq!(t.lookup_below(11), Some((10, 1)));
        assert_eq!(t.lookup_below(31), Some((30, 5)));
    }

    #[test]
    fn corrupt_index_files_are_rejected() {
        assert!(OffsetIndex::decode(&[0; 7], 10, 100).is_none());
        // position beyond the segment
        let mut b = 1u32.to_be_bytes().to_vec();
        b.extend_from_slice(&500u32.to_be_bytes());
        assert!(OffsetIndex::decode(&b, 10, 100).is_none());
        // not increasing
        let mut t = Vec::new();
        for _ in 0..2 {
            t.extend_from_slice(&5i64.to_be_bytes());
            t.extend_from_slice(&1u32.to_be_bytes());
        }
        assert!(TimeIndex::decode(&t, 10).is_none());
    }

    proptest! {
        #[test]
        fn index_file_round_trips(mut rel in proptest::collection::vec(1u32..1_000_000, 0..50)) {
            rel.sort_unstable();
            rel.dedup();
            let mut idx = OffsetIndex::new(100);
            let mut tidx = TimeIndex::new(100);
            for (i, r) in rel.iter().enumerate() {
                idx.append(*r, (i as u32 + 1) * 7);
                tidx.maybe_append(i64::from(*r) * 3, *r);
            }
            prop_assert_eq!(OffsetIndex::decode(&idx.encode(), 100, u64::MAX), Some(idx));
            prop_assert_eq!(TimeIndex::decode(&tidx.encode(), 100), Some(tidx));
        }

        /// Lookups through the sparse index then a forward scan agree with a
        /// linear scan over every batch.
        #[test]
        fn sparse_lookup_then_scan_agrees_with_linear_scan(
            batches in proptest::collection::vec((1i64..5, 30u64..3000, 0i64..1000), 1..200),
            probes in proptest::collection::vec(0i64..1000, 1..20),
        ) {
            let mut seg = SegmentIndex::new(100, 4096, 1000, 1000);
            let mut all = Vec::new(); // (base, last, pos, max_ts)
            let (mut off, mut pos) = (100i64, 0u64);
            for (count, len, ts) in batches {
                seg.on_batch(off, pos, len, ts);
                all.push((off, off + count - 1, pos, ts));
                off += count;
                pos += len;
            }
            for p in probes {
                let target = 100 + p % (off - 100);
                let start = seg.lookup_position(target);
                let found = all.iter().find(|b| b.2 >= start && b.1 >= target).map(|b| b.0);
                let linear = all.iter().find(|b| b.1 >= target).map(|b| b.0);
                prop_assert_eq!(found, linear);
                let ts_start = seg.lookup_timestamp_start(p);
                let by_index = all.iter().find(|b| b.0 >= ts_start && b.3 >= p).map(|b| b.0);
                let by_scan = all.iter().find(|b| b.3 >= p).map(|b| b.0);
                prop_assert_eq!(by_index, by_scan);
            }
        }
    }
}
