//! Compression of a legacy wrapper's inner message set, or of an
//! up-converted v2 batch's records, as Kafka's producers write them: gzip
//! (RFC 1952), snappy in snappy-java's framing (`\x82SNAPPY\0`, version 1,
//! compatible 1, then big-endian-length-prefixed raw blocks of at most
//! 32 KiB, `SnappyOutputStream`), LZ4 frames of independent 64 KiB blocks
//! (`Lz4BlockOutputStream`), zstd at level 3. The same formats as
//! `storage::cleaner::codec::compress`, which the protocol layer cannot
//! import; what differs is LZ4 for magic 0.

use std::io::Write;

use twox_hash::XxHash32;

use crate::protocol::record_batch::{BatchError, Compression};

/// snappy-java's `SnappyOutputStream` block size.
const SNAPPY_BLOCK: usize = 32 * 1024;
const SNAPPY_HEADER: &[u8] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
const ZSTD_LEVEL: i32 = 3;
/// FLG's content-size bit: the descriptor is then 10 bytes, not 2.
const FLG_CONTENT_SIZE: u8 = 1 << 3;

fn failed(_: impl std::fmt::Debug) -> BatchError {
    BatchError::Corrupt("cannot compress the records")
}

/// `data` compressed with `compression` for a message of `magic`. An LZ4
/// frame for magic 0 gets the header checksum Kafka writes for that magic:
/// the second byte of the XXH32 of the frame magic, FLG and BD
/// (`Lz4BlockOutputStream.writeHeader` with `useBrokenFlagDescriptorChecksum`,
/// KAFKA-3160, KIP-57), which readers of magic-0 data ignore.
pub fn compress(compression: Compression, magic: i8, data: &[u8]) -> Result<Vec<u8>, BatchError> {
    match compression {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).map_err(failed)?;
            e.finish().map_err(failed)
        }
        Compression::Snappy => {
            let mut out = SNAPPY_HEADER.to_vec();
            let mut enc = snap::raw::Encoder::new();
            for block in data.chunks(SNAPPY_BLOCK) {
                let c = enc.compress_vec(block).map_err(failed)?;
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            Ok(out)
        }
        Compression::Lz4 => {
            let mut info = lz4_flex::frame::FrameInfo::new();
            info.block_size = lz4_flex::frame::BlockSize::Max64KB;
            info.block_mode = lz4_flex::frame::BlockMode::Independent;
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(data).map_err(failed)?;
            let mut frame = e.finish().map_err(failed)?;
            if magic == 0 && frame.len() > 6 && frame[4] & FLG_CONTENT_SIZE == 0 {
                frame[6] = (XxHash32::oneshot(0, &frame[..6]) >> 8) as u8;
            }
            Ok(frame)
        }
        Compression::Zstd => zstd::bulk::compress(data, ZSTD_LEVEL).map_err(failed),
    }
}
