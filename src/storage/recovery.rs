//! `[pure]` Scanning segment bytes for recovery (Kafka `LogSegment.recover`).
//!
//! The driver feeds the segment's bytes in chunks; [`scan`] walks whole
//! entries, checking length, magic, CRC and that offsets keep growing,
//! and says where the valid prefix ends. Everything after the first torn or
//! corrupt entry is truncated by the driver. Zero-filled (pre-allocated)
//! space reads as `batchLength = 0` and ends the scan like a torn tail.
//!
//! Entries are v2 batches (CRC-32C) or, in a log dir a Kafka broker wrote
//! with `log.message.format.version` below 0.11, legacy magic 0/1 messages
//! (CRC32 of the message; a compressed *wrapper* message holds a whole
//! message set). As in `LogSegment.recover` a legacy entry is checked
//! shallowly: its own CRC32 and sizes, not the inner messages of a
//! wrapper, so recovery never decompresses. A wrapper's offset field is
//! its *last* inner offset and its first one needs decompression, so a
//! legacy entry's [`ScannedBatch::base_offset`] is its offset field, the
//! key Kafka's offset and time indexes use for it (`batch.lastOffset()`).

use crate::protocol::legacy::{LOG_OVERHEAD, MAGIC_OFFSET, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1};
use crate::protocol::record_batch::{RecordBatch, MIN_BATCH_LENGTH};

/// Bytes of an entry's start that [`entry_header`] reads (a v2 header
/// through `maxTimestamp`; a legacy message's offset, size, CRC, magic,
/// attributes and v1 timestamp fit too).
pub const ENTRY_HEADER: usize = 43;
/// A legacy message's timestamp (v1): after offset, size, CRC, magic and attributes.
const LEGACY_TIMESTAMP: usize = 18;

/// One good batch (or legacy message) found by a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedBatch {
    pub position: u64,
    /// A v2 batch's base offset; a legacy entry's offset field (for a
    /// compressed wrapper its last inner offset, see the module docs).
    pub base_offset: i64,
    pub last_offset: i64,
    /// v2: `maxTimestamp`; v1: the message's (a wrapper's: the largest
    /// inner, or its LogAppendTime); v0: -1 (no timestamp).
    pub max_timestamp: i64,
    pub len: u64,
}

/// The fields of the entry starting `h` (its first [`ENTRY_HEADER`] bytes,
/// or all of it when shorter), found at `position`; `None` when they are
/// inconsistent (a length below the format's minimum, a magic outside
/// 0..=2, too few bytes). The length is not checked against a file.
pub fn entry_header(h: &[u8], position: u64) -> Option<ScannedBatch> {
    let i64_at = |at: usize| -> Option<i64> {
        let s = h.get(at..at + 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Some(i64::from_be_bytes(a))
    };
    let size = i32::from_be_bytes(h.get(8..12)?.try_into().ok()?);
    let offset = i64_at(0)?;
    let len = LOG_OVERHEAD as u64 + u64::try_from(size).ok()?;
    let (last_offset, max_timestamp) = match *h.get(MAGIC_OFFSET)? {
        2 if size >= MIN_BATCH_LENGTH => {
            let delta = i32::from_be_bytes(h.get(23..27)?.try_into().ok()?);
            (offset.checked_add(i64::from(delta))?, i64_at(35)?)
        }
        0 if size >= RECORD_OVERHEAD_V0 as i32 => (offset, -1),
        1 if size >= RECORD_OVERHEAD_V1 as i32 => (offset, i64_at(LEGACY_TIMESTAMP)?),
        _ => return None,
    };
    Some(ScannedBatch {
        position,
        base_offset: offset,
        last_offset,
        max_timestamp,
        len,
    })
}

/// Whether the whole legacy message `entry` (log overhead included) is
/// intact: its CRC32 (IEEE, over magic .. end; `LegacyRecord.isValid`)
/// when `verify_crc`, and key and value lengths that end exactly at the
/// message's end (as `MemoryRecordsBuilder` writes them).
pub fn legacy_entry_ok(entry: &[u8], verify_crc: bool) -> bool {
    let Some(&magic) = entry.get(MAGIC_OFFSET) else {
        return false;
    };
    let mut pos = if magic == 0 {
        LOG_OVERHEAD + 6
    } else {
        LOG_OVERHEAD + 14
    };
    for _ in 0..2 {
        let Some(len) = entry.get(pos..pos + 4) else {
            return false;
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        pos += 4;
        match usize::try_from(len) {
            Ok(n) => pos = pos.saturating_add(n),
            Err(_) if len == -1 => {}
            Err(_) => return false,
        }
    }
    if pos != entry.len() {
        return false;
    }
    if !verify_crc {
        return true;
    }
    let stored = u32::from_be_bytes([entry[12], entry[13], entry[14], entry[15]]);
    let mut crc = flate2::Crc::new();
    crc.update(&entry[MAGIC_OFFSET..]);
    crc.sum() == stored
}

/// Why [`scan`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStop {
    /// The buffer ended; the next entry needs `needed` bytes from the point
    /// where the scan stopped (at least its 12-byte offset and size when
    /// unknown).
    NeedMore { needed: usize },
    /// The bytes at the stop point are not a valid next entry: truncate there.
    Corrupt,
}

/// Result of scanning one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanOutcome {
    /// Bytes of `buf` holding complete valid entries.
    pub consumed: usize,
    pub stop: ScanStop,
}

/// Scan `buf`, which starts at file `position`, appending every complete
/// valid entry to `out`. `next_offset` is the smallest base offset the next
/// entry may have (offsets strictly increase in a log); it is advanced.
/// `max_batch_bytes` bounds a plausible entry (a larger length is garbage).
pub fn scan(
    buf: &[u8],
    position: u64,
    next_offset: &mut i64,
    max_batch_bytes: usize,
    verify_crc: bool,
    out: &mut Vec<ScannedBatch>,
) -> ScanOutcome {
    let mut at = 0usize;
    loop {
        let rest = &buf[at..];
        if rest.len() < LOG_OVERHEAD {
            return stop(
                at,
                ScanStop::NeedMore {
                    needed: LOG_OVERHEAD,
                },
            );
        }
        let size = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
        let total = match usize::try_from(size) {
            Ok(s) if s >= RECORD_OVERHEAD_V0 && LOG_OVERHEAD + s <= max_batch_bytes => {
                LOG_OVERHEAD + s
            }
            _ => return stop(at, ScanStop::Corrupt),
        };
        if rest.len() < total {
            return stop(at, ScanStop::NeedMore { needed: total });
        }
        let bytes = &rest[..total];
        let Some(entry) = entry_header(bytes, position + at as u64) else {
            return stop(at, ScanStop::Corrupt);
        };
        let intact = if bytes[MAGIC_OFFSET] == 2 {
            let batch = if verify_crc {
                RecordBatch::new(bytes)
            } else {
                RecordBatch::new_unchecked_crc(bytes)
            };
            batch.is_ok_and(|b| b.last_offset_delta() >= 0)
        } else {
            legacy_entry_ok(bytes, verify_crc)
        };
        if !intact || entry.base_offset < *next_offset {
            return stop(at, ScanStop::Corrupt);
        }
        out.push(entry);
        *next_offset = entry.last_offset.saturating_add(1);
        at += total;
    }
}

fn stop(consumed: usize, stop: ScanStop) -> ScanOutcome {
    ScanOutcome { consumed, stop }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::build_test_batch;
    use proptest::prelude::*;

    fn log_of(n: i64) -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..n {
            v.extend(build_test_batch(
                i * 2,
                2,
                i,
                i,
                (i as usize * 37) % 300,
                i as u8,
            ));
        }
        v
    }

    #[test]
    fn clean_log_scans_to_the_end_and_asks_for_more() {
        let log = log_of(10);
        let (mut next, mut out) = (0, Vec::new());
        let r = scan(&log, 0, &mut next, 1 << 20, true, &mut out);
        assert_eq!(r.consumed, log.len());
        assert_eq!(
            r.stop,
            ScanStop::NeedMore {
                needed: LOG_OVERHEAD
            }
        );
        assert_eq!(out.len(), 10);
        assert_eq!(next, 20);
    }

    #[test]
    fn stops_at_torn_corrupt_zeroed_or_backwards_batches() {
        let log = log_of(5);
        let cut = out_positions(&log)[3] as usize;
        let mut torn = log.clone();
        torn.truncate(cut + 30);
        let mut flipped = log.clone();
        flipped[cut + 70] ^= 0xff;
        let mut zeroed = log[..cut].to_vec();
        zeroed.extend(vec![0u8; 4096]);
        let mut backwards = log[..cut].to_vec();
        backwards.extend(build_test_batch(0, 1, 0, 0, 10, 0));
        for (name, bytes, stop_kind) in [
            (
                "torn",
                torn,
                ScanStop::NeedMore {
                    needed: LOG_OVERHEAD,
                },
            ),
            ("crc", flipped, ScanStop::Corrupt),
            ("zeros", zeroed, ScanStop::Corrupt),
            ("offsets go back", backwards, ScanStop::Corrupt),
        ] {
            let (mut next, mut out) = (0, Vec::new());
            let r = scan(&bytes, 0, &mut next, 1 << 20, true, &mut out);
            assert_eq!(r.consumed, cut, "{name}");
            assert_eq!(out.len(), 3, "{name}");
            if name != "torn" {
                assert_eq!(r.stop, stop_kind, "{name}");
            }
        }
    }

    fn out_positions(log: &[u8]) -> Vec<u64> {
        let (mut next, mut out) = (0, Vec::new());
        scan(log, 0, &mut next, 1 << 20, true, &mut out);
        out.iter().map(|b| b.position).collect()
    }

    /// Hand-built legacy entries as a Kafka broker with
    /// `log.message.format.version=0.10.2` (magic 1) or 0.9.0 (magic 0)
    /// stores them: plain messages and compressed wrappers.
    fn legacy_log(magic: i8) -> (Vec<u8>, Vec<(i64, i64, i64)>) {
        use crate::protocol::legacy::{write_message_set, LegacyFormat, OutRecord};
        use crate::protocol::record_batch::{Compression, TimestampType};
        let mut log = Vec::new();
        let mut expect = Vec::new();
        let mut offset = 100i64;
        for (i, c) in [
            Compression::None,
            Compression::Gzip,
            Compression::None,
            Compression::Snappy,
            Compression::Lz4,
        ]
        .into_iter()
        .enumerate()
        {
            let n = if c == Compression::None { 1 } else { 3 };
            let recs: Vec<OutRecord<'_>> = (0..n)
                .map(|j| OutRecord {
                    offset: offset + j,
                    timestamp: 1_000 + offset + j,
                    key: Some(b"key"),
                    value: Some(b"value"),
                })
                .collect();
            let format = LegacyFormat {
                magic,
                compression: c,
                timestamp_type: TimestampType::CreateTime,
                log_append_time: -1,
                base_offset: offset,
            };
            write_message_set(&mut log, format, &recs).unwrap();
            let last = offset + n - 1;
            let ts = if magic == 0 { -1 } else { 1_000 + last };
            expect.push((last, last, ts));
            offset += n + i as i64; // a gap, as compaction leaves
        }
        (log, expect)
    }

    #[test]
    fn legacy_entries_are_kept_with_their_offsets_and_timestamps() {
        for magic in [0i8, 1] {
            let (log, expect) = legacy_log(magic);
            let (mut next, mut out) = (100, Vec::new());
            let r = scan(&log, 0, &mut next, 1 << 20, true, &mut out);
            assert_eq!(r.consumed, log.len(), "magic {magic}");
            assert_eq!(
                r.stop,
                ScanStop::NeedMore {
                    needed: LOG_OVERHEAD
                }
            );
            let got: Vec<_> = out
                .iter()
                .map(|b| (b.base_offset, b.last_offset, b.max_timestamp))
                .collect();
            assert_eq!(got, expect, "magic {magic}");
            assert_eq!(next, expect.last().unwrap().1 + 1);
            // Each header read back alone gives the same entry.
            for b in &out {
                let at = b.position as usize;
                let h = &log[at..(at + ENTRY_HEADER).min(log.len())];
                assert_eq!(entry_header(h, b.position), Some(*b));
            }
        }
    }

    #[test]
    fn legacy_and_v2_entries_mix_and_the_index_covers_both() {
        let (mut log, _) = legacy_log(1);
        let legacy_len = log.len();
        log.extend(build_test_batch(200, 3, 5_000, 5_000, 40, 1));
        let (mut next, mut out) = (0, Vec::new());
        scan(&log, 0, &mut next, 1 << 20, true, &mut out);
        assert_eq!(out.len(), 6);
        assert_eq!(next, 203);
        let mut index = crate::storage::index::SegmentIndex::new(100, 1, 100, 100);
        for b in &out {
            index.on_batch(b.base_offset, b.position, b.len, b.max_timestamp);
        }
        // Every offset's lookup lands at or before the entry holding it.
        for b in &out {
            assert!(index.lookup_position(b.last_offset) <= b.position);
        }
        assert_eq!(index.lookup_position(200), legacy_len as u64);
        assert_eq!(index.max_timestamp, 5_000);
        assert!(!index.times.is_empty(), "magic 1 timestamps are indexed");
    }

    #[test]
    fn magic_0_never_adds_time_index_entries() {
        let (log, _) = legacy_log(0);
        let (mut next, mut out) = (0, Vec::new());
        scan(&log, 0, &mut next, 1 << 20, true, &mut out);
        let mut index = crate::storage::index::SegmentIndex::new(100, 1, 100, 100);
        for b in &out {
            index.on_batch(b.base_offset, b.position, b.len, b.max_timestamp);
        }
        assert!(index.times.is_empty());
        assert!(!index.offsets.is_empty());
    }

    #[test]
    fn a_bad_legacy_crc_size_or_offset_truncates_there() {
        let (log, _) = legacy_log(1);
        let positions: Vec<usize> = {
            let (mut next, mut out) = (0, Vec::new());
            scan(&log, 0, &mut next, 1 << 20, true, &mut out);
            out.iter().map(|b| b.position as usize).collect()
        };
        let cut = positions[2];
        let mut crc = log.clone();
        crc[cut + 30] ^= 0x01;
        let mut size = log.clone();
        size[cut + 11] = 13; // below RECORD_OVERHEAD_V0
                             // A v1 key length past the message, under a CRC that matches.
        let mut key_len = log.clone();
        key_len[cut + 29] = 0x7f;
        let mut crc32 = flate2::Crc::new();
        crc32.update(&key_len[cut + 16..positions[3]]);
        key_len[cut + 12..cut + 16].copy_from_slice(&crc32.sum().to_be_bytes());
        let mut backwards = log[..cut].to_vec();
        backwards.extend_from_slice(&log[positions[0]..positions[1]]);
        let mut bad_magic = log.clone();
        bad_magic[cut + 16] = 3;
        for (name, bytes) in [
            ("crc", crc),
            ("size", size),
            ("key length", key_len),
            ("offsets go back", backwards),
            ("magic", bad_magic),
        ] {
            let (mut next, mut out) = (0, Vec::new());
            let r = scan(&bytes, 0, &mut next, 1 << 20, true, &mut out);
            assert_eq!((r.consumed, r.stop), (cut, ScanStop::Corrupt), "{name}");
            assert_eq!(out.len(), 2, "{name}");
        }
    }

    #[test]
    fn a_short_legacy_message_at_the_end_of_a_chunk_is_awaited() {
        let (log, _) = legacy_log(0);
        let (mut next, mut out) = (0, Vec::new());
        let r = scan(&log[..5], 0, &mut next, 1 << 20, true, &mut out);
        assert_eq!(
            r.stop,
            ScanStop::NeedMore {
                needed: LOG_OVERHEAD
            }
        );
        let r = scan(&log[..20], 0, &mut next, 1 << 20, true, &mut out);
        assert_eq!(r.stop, ScanStop::NeedMore { needed: 12 + 22 });
    }

    proptest! {
        #[test]
        fn scanning_in_chunks_equals_scanning_at_once(n in 1i64..30, chunk in 1usize..700) {
            let log = log_of(n);
            let (mut next_a, mut all) = (0, Vec::new());
            scan(&log, 0, &mut next_a, 1 << 20, true, &mut all);
            let (mut next_b, mut chunked, mut carry, mut pos) = (0, Vec::new(), Vec::new(), 0u64);
            for piece in log.chunks(chunk) {
                carry.extend_from_slice(piece);
                let r = scan(&carry, pos, &mut next_b, 1 << 20, true, &mut chunked);
                carry.drain(..r.consumed);
                pos += r.consumed as u64;
            }
            prop_assert_eq!(all, chunked);
            prop_assert_eq!(next_a, next_b);
        }

        #[test]
        fn arbitrary_bytes_never_panic_the_scanner(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let (mut next, mut out) = (i64::MIN, Vec::new());
            let r = scan(&bytes, 0, &mut next, 1 << 20, true, &mut out);
            prop_assert!(r.consumed <= bytes.len());
        }
    }
}
