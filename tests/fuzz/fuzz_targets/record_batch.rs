//! The record batch view (`protocol::record_batch`: length, magic,
//! CRC-32C, the append rules, the in-place patches) and the record walk
//! with every codec (`protocol::record_walk`). Arbitrary bytes never panic
//! nor exceed the memory bound. Round trips: a batch patched in place
//! (base offset, leader epoch, LogAppendTime) still validates and reads
//! back the patched fields; the records section of a compressed batch,
//! stored uncompressed under the same header, walks to the same records.
#![no_main]

use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;
use shardlog::protocol::record_batch::{
    peek_total_len, set_base_offset, set_log_append_time, set_partition_leader_epoch,
    validate_all_for_append, BatchIter, RecordBatch, TimestampType, CRC_START, HEADER_LEN,
    LOG_OVERHEAD,
};
use shardlog::protocol::record_walk::{
    keyless_records, for_each_record, records_section, InflateScratch,
};
use shardlog_fuzz::{bound_for, check_bounded_by, peak_of};

/// Byte offsets of the header fields the target rewrites.
const BATCH_LENGTH: usize = 8;
const ATTRIBUTES: usize = 21;
const CRC: usize = 17;
/// The attributes' codec id of LZ4, and what its decoder may reserve.
const LZ4: i16 = 3;
const LZ4_WINDOW: usize = (4 << 20) + (64 << 10);

/// What decoding `batch` may reserve beyond the contract's bound: for an
/// LZ4 batch (attributes' codec id), the frame reader's scratch buffer
/// (one per input here, as a shard keeps one) grows to the frame's
/// declared maximum block size (up to 4 MiB, plus a 64 KiB dictionary for
/// linked blocks) the first time a frame needs it, whatever the input's
/// length, as Kafka's `Lz4BlockInputStream`
/// allocates its block size too. Nothing for other codecs.
fn lz4_window(batch: &[u8]) -> usize {
    match batch.get(ATTRIBUTES..ATTRIBUTES + 2) {
        Some(a) if i16::from_be_bytes([a[0], a[1]]) & 0x07 == LZ4 => LZ4_WINDOW,
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    // First byte: bit 0 = fix the first batch's CRC (so the fuzzer gets
    // past it), bit 1 = also force its batchLength to the input's size.
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut buf = rest.to_vec();
    if mode & 2 != 0 && buf.len() >= HEADER_LEN {
        let len = (buf.len() - LOG_OVERHEAD) as i32;
        buf[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
    }
    if mode & 1 != 0 {
        fix_crc(&mut buf);
    }
    // One LZ4 window for a buffer holding an LZ4 batch (one is decoded
    // at a time).
    let window = BatchIter::new(&buf)
        .flatten()
        .map(|(range, _)| lz4_window(&buf[range]))
        .max()
        .unwrap_or(0);
    check_bounded_by(bound_for(buf.len()) + window, || {
        let _ = validate_all_for_append(&buf);
        for item in BatchIter::new(&buf) {
            if let Ok((range, batch)) = item {
                assert_eq!(batch.total_len(), range.len());
            }
        }
    });
    let Ok(Some(total)) = peek_total_len(&buf) else {
        return;
    };
    let Some(first) = buf.get(..total) else {
        return;
    };
    let first_bound = bound_for(first.len()) + lz4_window(first);
    let mut scratch = InflateScratch::default();
    let walked = check_bounded_by(first_bound, || walk(first, &mut scratch));
    let _ = check_bounded_by(first_bound, || keyless_records(first, &mut scratch));
    // Inflating may legitimately take up to the walk's limit (a zip bomb
    // is bounded by MAX_WALKED_BYTES, not by the input): bound what it
    // holds beyond the section it returns (and LZ4's window).
    let (section, peak) = peak_of(|| records_section(first, &mut scratch).map(|s| s.into_owned()));
    if let Ok(section) = &section {
        let bound = bound_for(first.len()) + 3 * section.len() + lz4_window(first);
        assert!(
            peak <= bound,
            "records_section held {peak} bytes for {} inflated",
            section.len()
        );
    }
    if let (Ok(records), Ok(section)) = (&walked, &section) {
        let plain = uncompressed(first, section);
        assert_eq!(
            walk(&plain, &mut scratch).as_ref(),
            Ok(records),
            "inflated records walk differently"
        );
    }
    if RecordBatch::new(first).is_ok() {
        patches_round_trip(first);
    }
});

fn fix_crc(buf: &mut [u8]) {
    let Ok(Some(total)) = peek_total_len(buf) else {
        return;
    };
    if total < HEADER_LEN || total > buf.len() {
        return;
    }
    let crc = crc32c::crc32c(&buf[CRC_START..total]);
    buf[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Every (offset, timestamp) the walk visits.
fn walk(batch: &[u8], scratch: &mut InflateScratch) -> Result<Vec<(i64, i64)>, String> {
    let mut seen = Vec::new();
    for_each_record(batch, scratch, |o, t| {
        seen.push((o, t));
        ControlFlow::Continue(())
    })
    .map_err(|e| e.to_string())?;
    Ok(seen)
}

/// `batch`'s header with the codec bits cleared, then `records`.
fn uncompressed(batch: &[u8], records: &[u8]) -> Vec<u8> {
    let mut out = batch[..HEADER_LEN].to_vec();
    out.extend_from_slice(records);
    let len = (out.len() - LOG_OVERHEAD) as i32;
    out[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
    let attrs = i16::from_be_bytes([out[ATTRIBUTES], out[ATTRIBUTES + 1]]) & !0x07;
    out[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attrs.to_be_bytes());
    out
}

fn patches_round_trip(batch: &[u8]) {
    let mut b = batch.to_vec();
    set_base_offset(&mut b, 1234);
    set_partition_leader_epoch(&mut b, 7);
    let view = RecordBatch::new(&b).expect("base offset and epoch lie outside the CRC");
    assert_eq!(
        (view.base_offset(), view.partition_leader_epoch()),
        (1234, 7)
    );
    set_log_append_time(&mut b, 99);
    let view = RecordBatch::new(&b).expect("LogAppendTime recomputes the CRC");
    assert_eq!(view.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(view.max_timestamp(), 99);
    assert_eq!(
        view.record_count(),
        RecordBatch::new(batch)
            .map(|v| v.record_count())
            .unwrap_or(0)
    );
}
