//! The segment recovery scan (`storage::recovery::scan`, Kafka
//! `LogSegment.recover`) over arbitrary file bytes, fed in chunks the way
//! `Segment::recover` feeds it (a carry buffer across reads), with the
//! index rebuilt from what it finds. Never panics nor exceeds the memory
//! bound; the valid prefix is made of contiguous batches with increasing
//! offsets, and scanning in chunks finds exactly what scanning the whole
//! file at once finds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardlog::protocol::record_batch::{peek_total_len, CRC_START, HEADER_LEN};
use shardlog::storage::index::SegmentIndex;
use shardlog::storage::recovery::{scan, ScanStop, ScannedBatch};
use shardlog_fuzz::check_bounded;

const CRC: usize = 17;

fuzz_target!(|data: &[u8]| {
    // Byte 0: read size (1..=256; the driver reads 1 MiB, which no fuzz
    // input reaches); byte 1 bit 0: fix every batch's CRC so the scan gets
    // past the first one; byte 1 bit 1: check CRCs at all.
    let Some((&[chunk, mode], file)) = data.split_first_chunk::<2>() else {
        return;
    };
    let chunk = usize::from(chunk) + 1;
    let verify_crc = mode & 2 == 0;
    let mut file = file.to_vec();
    if mode & 1 != 0 {
        fix_crcs(&mut file);
    }
    check_bounded(file.len(), || {
        let (mut next_whole, mut whole) = (0i64, Vec::new());
        let at_once = scan(
            &file,
            0,
            &mut next_whole,
            usize::MAX,
            verify_crc,
            &mut whole,
        );
        assert!(at_once.consumed <= file.len());
        let (chunked, next_chunked, valid_end) = scan_in_chunks(&file, chunk, verify_crc);
        assert_eq!(chunked, whole, "chunked and whole scans disagree");
        assert_eq!(next_chunked, next_whole);
        assert_eq!(valid_end, at_once.consumed as u64);
        let mut pos = 0u64;
        let mut index = SegmentIndex::new(0, 64, 1 << 10, 1 << 10);
        for b in &whole {
            assert_eq!(b.position, pos, "batches are contiguous");
            assert!(b.base_offset <= b.last_offset);
            pos += b.len;
            index.on_batch(b.base_offset, b.position, b.len, b.max_timestamp);
        }
        assert!(whole
            .windows(2)
            .all(|w| w[0].last_offset < w[1].base_offset));
        assert_eq!(pos, valid_end);
    });
});

/// The loop of `Segment::recover` with `chunk`-byte reads.
fn scan_in_chunks(file: &[u8], chunk: usize, verify_crc: bool) -> (Vec<ScannedBatch>, i64, u64) {
    let (mut next, mut carry, mut found, mut all) = (0i64, Vec::new(), Vec::new(), Vec::new());
    let mut valid_end = 0u64;
    let file_len = file.len() as u64;
    for piece in file.chunks(chunk) {
        carry.extend_from_slice(piece);
        let o = scan(
            &carry,
            valid_end,
            &mut next,
            usize::MAX,
            verify_crc,
            &mut found,
        );
        carry.drain(..o.consumed);
        valid_end += o.consumed as u64;
        all.append(&mut found);
        match o.stop {
            ScanStop::Corrupt => break,
            ScanStop::NeedMore { needed } if valid_end + needed as u64 > file_len => break,
            ScanStop::NeedMore { .. } => {}
        }
    }
    (all, next, valid_end)
}

/// Give every whole batch in `file` a correct CRC-32C.
fn fix_crcs(file: &mut [u8]) {
    let mut at = 0;
    while let Ok(Some(total)) = peek_total_len(&file[at..]) {
        let Some(batch) = file.get_mut(at..at + total) else {
            return;
        };
        if batch.len() < HEADER_LEN {
            return;
        }
        let crc = crc32c::crc32c(&batch[CRC_START..]);
        batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        at += total;
    }
}
