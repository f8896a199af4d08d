//! `[pure]` Scanning segment bytes for recovery (Kafka `LogSegment.recover`).
//!
//! The driver feeds the segment's bytes in chunks; [`scan`] walks whole
//! batches, checking length, magic, CRC-32C and that offsets keep growing,
//! and says where the valid prefix ends. Everything after the first torn or
//! corrupt batch is truncated by the driver. Zero-filled (pre-allocated)
//! space reads as `batchLength = 0` and ends the scan like a torn tail.

use crate::protocol::record_batch::{peek_total_len, RecordBatch, HEADER_LEN};

/// One good batch found by a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedBatch {
    pub position: u64,
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub len: u64,
}

/// Why [`scan`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStop {
    /// The buffer ended; the next batch needs `needed` bytes from the point
    /// where the scan stopped (at least a 61-byte header when unknown).
    NeedMore { needed: usize },
    /// The bytes at the stop point are not a valid next batch: truncate there.
    Corrupt,
}

/// Result of scanning one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanOutcome {
    /// Bytes of `buf` holding complete valid batches.
    pub consumed: usize,
    pub stop: ScanStop,
}

/// Scan `buf`, which starts at file `position`, appending every complete
/// valid batch to `out`. `next_offset` is the smallest base offset the next
/// batch may have (offsets strictly increase in a log); it is advanced.
/// `max_batch_bytes` bounds a plausible batch (a larger length is garbage).
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
        let total = match peek_total_len(rest) {
            Err(_) => return stop(at, ScanStop::Corrupt),
            Ok(None) => return stop(at, ScanStop::NeedMore { needed: HEADER_LEN }),
            Ok(Some(t)) if t > max_batch_bytes => return stop(at, ScanStop::Corrupt),
            Ok(Some(t)) => t,
        };
        if rest.len() < total {
            return stop(at, ScanStop::NeedMore { needed: total });
        }
        let bytes = &rest[..total];
        let batch = if verify_crc {
            RecordBatch::new(bytes)
        } else {
            RecordBatch::new_unchecked_crc(bytes)
        };
        let batch = match batch {
            Ok(b) if b.base_offset() >= *next_offset && b.last_offset_delta() >= 0 => b,
            _ => return stop(at, ScanStop::Corrupt),
        };
        out.push(ScannedBatch {
            position: position + at as u64,
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            max_timestamp: batch.max_timestamp(),
            len: total as u64,
        });
        *next_offset = batch.last_offset().saturating_add(1);
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
        assert_eq!(r.stop, ScanStop::NeedMore { needed: HEADER_LEN });
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
            ("torn", torn, ScanStop::NeedMore { needed: HEADER_LEN }),
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
