//! `[pure]` A reader of the LZ4 frame Kafka stores in an LZ4 batch, for
//! the record walk.
//!
//! Kafka's `Lz4BlockInputStream` (clients, `common/compress`) reads one
//! frame: the magic `0x184D2204`, the descriptor (FLG, BD, an optional
//! 8-byte content size that is skipped, and the header checksum HC, the
//! second byte of the descriptor's XXH32), then blocks, each a 4-byte
//! little-endian size whose high bit marks a block stored uncompressed,
//! ended by a zero size and, when FLG says so, the content's XXH32. A
//! block larger than the descriptor's maximum block size is refused, as
//! are bad checksums. Bytes after the end mark are not read (Kafka reads
//! no second frame). Linked blocks (FLG bit 5 clear) are inflated with the
//! previous 64 KiB of output as their dictionary, as the LZ4 frame format
//! (lz4_Frame_format.md) defines them.
//!
//! Why not `lz4_flex::frame::FrameDecoder`: it zero-fills a fresh output
//! buffer of the frame's declared maximum block size (up to 4 MiB, twice
//! that plus 64 KiB for linked blocks) for every frame, so a 40-byte frame
//! costs a 4-8 MiB memset, about a millisecond of a shard per stored batch
//! walked (and the fuzz target ran at a thousand inputs a second). Here the
//! output buffer is the caller's scratch buffer, borrowed for the frame
//! (Kafka's `KafkaLZ4BlockInputStream` takes its buffers from the caller's
//! `BufferSupplier` for the same reason): it is zero-filled once, when it
//! first grows, and blocks are inflated with
//! `lz4_flex::block::decompress_into`. A frame overwrites every byte of it
//! that it reads back, so what an earlier frame left there is never seen.

use std::hash::Hasher as _;
use std::io::{self, Read};

use twox_hash::XxHash32;

const MAGIC: u32 = 0x184D_2204;
/// The dictionary a linked block may reach back into.
const WINDOW: usize = 64 << 10;
const UNCOMPRESSED: u32 = 1 << 31;

// FLG bits (lz4_Frame_format.md, "Frame Descriptor").
const FLG_VERSION_MASK: u8 = 0b1100_0000;
const FLG_VERSION_01: u8 = 0b0100_0000;
const FLG_BLOCK_INDEPENDENCE: u8 = 1 << 5;
const FLG_BLOCK_CHECKSUM: u8 = 1 << 4;
const FLG_CONTENT_SIZE: u8 = 1 << 3;
const FLG_CONTENT_CHECKSUM: u8 = 1 << 2;
const FLG_RESERVED: u8 = 1 << 1;
const FLG_DICT_ID: u8 = 1;

/// One LZ4 frame's content, block by block.
pub struct Lz4Frame<'a, 's> {
    input: &'a [u8],
    max_block: usize,
    linked: bool,
    block_checksum: bool,
    content_hash: Option<XxHash32>,
    /// `[dictionary region (WINDOW bytes) | current block]` for linked
    /// frames; `[current block]` for independent ones: the caller's
    /// scratch, grown to fit when smaller.
    buf: &'s mut Vec<u8>,
    /// The current block's bytes in `buf` and how far they were read.
    block: std::ops::Range<usize>,
    /// Bytes of dictionary held just before `WINDOW`, and the length of
    /// the last block inflated after it (linked frames).
    dict_len: usize,
    last_len: usize,
    finished: bool,
}

impl<'a, 's> Lz4Frame<'a, 's> {
    /// Reads the frame's header; the blocks are read as the content is,
    /// into `scratch` (grown when smaller than the frame needs, and kept
    /// by the caller for the next frame).
    pub fn new(input: &'a [u8], scratch: &'s mut Vec<u8>) -> io::Result<Self> {
        Self::with_descriptor_check(input, scratch, true)
    }

    /// [`Self::new`] for a magic-0 message's value: Kafka wrote those
    /// frames with the header checksum computed over the frame magic as
    /// well as the descriptor (KAFKA-3160) and reads them without checking
    /// it (`Lz4BlockInputStream` with `ignoreFlagDescriptorChecksum`, KIP-57).
    pub fn ignoring_descriptor_checksum(
        input: &'a [u8],
        scratch: &'s mut Vec<u8>,
    ) -> io::Result<Self> {
        Self::with_descriptor_check(input, scratch, false)
    }

    fn with_descriptor_check(
        input: &'a [u8],
        scratch: &'s mut Vec<u8>,
        check_hc: bool,
    ) -> io::Result<Self> {
        let magic = input.get(..4).ok_or_else(|| invalid("LZ4 frame cut off"))?;
        if u32::from_le_bytes([magic[0], magic[1], magic[2], magic[3]]) != MAGIC {
            return Err(invalid("not an LZ4 frame (bad magic)"));
        }
        let (&flg, rest) = input[4..]
            .split_first()
            .ok_or_else(|| invalid("LZ4 frame cut off"))?;
        let &bd = rest.first().ok_or_else(|| invalid("LZ4 frame cut off"))?;
        if flg & FLG_VERSION_MASK != FLG_VERSION_01 || flg & (FLG_RESERVED | FLG_DICT_ID) != 0 {
            // Kafka's FLG refuses a version other than 01 and reserved bits;
            // a dictionary id names a dictionary no Kafka client sends.
            return Err(invalid("unsupported LZ4 frame descriptor"));
        }
        let max_block = match (bd >> 4) & 0x07 {
            4 => 64 << 10,
            5 => 256 << 10,
            6 => 1 << 20,
            7 => 4 << 20,
            _ => return Err(invalid("bad LZ4 block maximum size")),
        };
        if bd & 0x8F != 0 {
            return Err(invalid("unsupported LZ4 frame descriptor"));
        }
        let descriptor_len = if flg & FLG_CONTENT_SIZE != 0 { 10 } else { 2 };
        let descriptor = input
            .get(4..4 + descriptor_len)
            .ok_or_else(|| invalid("LZ4 frame cut off"))?;
        let &hc = input
            .get(4 + descriptor_len)
            .ok_or_else(|| invalid("LZ4 frame cut off"))?;
        if check_hc && (XxHash32::oneshot(0, descriptor) >> 8) as u8 != hc {
            return Err(invalid("LZ4 frame descriptor corrupted"));
        }
        let linked = flg & FLG_BLOCK_INDEPENDENCE == 0;
        let buf = scratch;
        let needed = max_block + if linked { WINDOW } else { 0 };
        if buf.len() < needed {
            buf.resize(needed, 0);
        }
        let start = if linked { WINDOW } else { 0 };
        Ok(Lz4Frame {
            input: &input[5 + descriptor_len..],
            max_block,
            linked,
            block_checksum: flg & FLG_BLOCK_CHECKSUM != 0,
            content_hash: (flg & FLG_CONTENT_CHECKSUM != 0).then(|| XxHash32::with_seed(0)),
            buf,
            block: start..start,
            dict_len: 0,
            last_len: 0,
            finished: false,
        })
    }

    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        let input = self.input;
        let taken = input.get(..n).ok_or_else(|| invalid("LZ4 frame cut off"))?;
        self.input = &input[n..];
        Ok(taken)
    }

    fn take_u32(&mut self) -> io::Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Inflates the next block into `buf`; false at the end mark.
    fn next_block(&mut self) -> io::Result<bool> {
        let size = self.take_u32()?;
        if size == 0 {
            self.finished = true;
            if let Some(expected) = self.content_hash.as_ref().map(XxHash32::finish_32) {
                if self.take_u32()? != expected {
                    return Err(invalid("LZ4 content checksum mismatch"));
                }
            }
            return Ok(false);
        }
        let stored = (size & !UNCOMPRESSED) as usize;
        if stored > self.max_block {
            return Err(invalid("LZ4 block larger than the frame's maximum"));
        }
        let data = self.take(stored)?;
        if self.block_checksum && self.take_u32()? != XxHash32::oneshot(0, data) {
            return Err(invalid("LZ4 block checksum mismatch"));
        }
        if self.linked {
            self.slide_window();
        }
        let start = if self.linked { WINDOW } else { 0 };
        let (dict, out) = self.buf.split_at_mut(start);
        let out = &mut out[..self.max_block];
        let len = if size & UNCOMPRESSED != 0 {
            out[..stored].copy_from_slice(data);
            stored
        } else if self.linked {
            lz4_flex::block::decompress_into_with_dict(data, out, &dict[WINDOW - self.dict_len..])
                .map_err(|_| invalid("bad LZ4 block"))?
        } else {
            lz4_flex::block::decompress_into(data, out).map_err(|_| invalid("bad LZ4 block"))?
        };
        if let Some(hash) = &mut self.content_hash {
            hash.write(&out[..len]);
        }
        self.block = start..start + len;
        self.last_len = len;
        Ok(true)
    }

    /// Makes the dictionary region end with the last 64 KiB of output
    /// (the previous dictionary followed by the block just read).
    fn slide_window(&mut self) {
        let len = self.last_len;
        let last = WINDOW..WINDOW + len;
        if len >= WINDOW {
            self.buf.copy_within(last.end - WINDOW..last.end, 0);
            self.dict_len = WINDOW;
            return;
        }
        let keep = self.dict_len.min(WINDOW - len);
        self.buf
            .copy_within(WINDOW - keep..WINDOW, WINDOW - len - keep);
        self.buf.copy_within(last, WINDOW - len);
        self.dict_len = keep + len;
    }
}

impl Read for Lz4Frame<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.block.is_empty() {
            if self.finished || !self.next_block()? {
                return Ok(0);
            }
        }
        let n = out.len().min(self.block.len());
        out[..n].copy_from_slice(&self.buf[self.block.start..self.block.start + n]);
        self.block.start += n;
        Ok(n)
    }
}

fn invalid(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
    use std::io::Write;

    fn frame(data: &[u8], info: FrameInfo) -> Vec<u8> {
        let mut e = FrameEncoder::with_frame_info(info, Vec::new());
        e.write_all(data).expect("compress");
        e.finish().expect("finish")
    }

    fn inflate(frame: &[u8]) -> io::Result<Vec<u8>> {
        inflate_with(frame, &mut Vec::new())
    }

    fn inflate_with(frame: &[u8], scratch: &mut Vec<u8>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Lz4Frame::new(frame, scratch)?.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Text with repeats reaching back up to 100 KiB, so linked blocks use
    /// their dictionary.
    fn sample(len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        let mut i = 0u64;
        while out.len() < len {
            i += 1;
            let line = format!(
                "record {} value {}\n",
                i % 5000,
                i.wrapping_mul(2654435761) % 97
            );
            out.extend_from_slice(line.as_bytes());
        }
        out.truncate(len);
        out
    }

    #[test]
    fn frames_of_every_block_mode_size_and_checksum_read_back() {
        let data = sample(700_000);
        for mode in [BlockMode::Independent, BlockMode::Linked] {
            for size in [BlockSize::Max64KB, BlockSize::Max256KB, BlockSize::Max4MB] {
                for checksums in [false, true] {
                    let info = FrameInfo::new()
                        .block_mode(mode)
                        .block_size(size)
                        .block_checksums(checksums)
                        .content_checksum(checksums)
                        .content_size(checksums.then_some(data.len() as u64));
                    let f = frame(&data, info);
                    assert_eq!(inflate(&f).expect("inflate"), data, "{mode:?} {size:?}");
                }
            }
        }
    }

    #[test]
    fn linked_blocks_reach_into_earlier_blocks() {
        // The linked frame is smaller only if its blocks copy from earlier
        // ones, so reading it back exercises the dictionary.
        let data = sample(700_000);
        let info = |mode| {
            FrameInfo::new()
                .block_mode(mode)
                .block_size(BlockSize::Max64KB)
        };
        let independent = frame(&data, info(BlockMode::Independent));
        let linked = frame(&data, info(BlockMode::Linked));
        assert!(linked.len() < independent.len());
        assert_eq!(inflate(&linked).expect("linked"), data);
    }

    #[test]
    fn an_empty_frame_and_incompressible_blocks_read_back() {
        assert_eq!(inflate(&frame(b"", FrameInfo::new())).expect("empty"), b"");
        // Pseudo-random bytes do not compress: stored with the high bit.
        let noise: Vec<u8> = (0u32..200_000)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let f = frame(&noise, FrameInfo::new().block_mode(BlockMode::Linked));
        assert_eq!(inflate(&f).expect("noise"), noise);
    }

    #[test]
    fn damage_is_refused_not_misread() {
        let data = sample(100_000);
        let info = FrameInfo::new()
            .block_checksums(true)
            .content_checksum(true);
        let good = frame(&data, info);
        let error = |f: &[u8]| inflate(f).expect_err("damaged frame read").to_string();
        let mut bad_magic = good.clone();
        bad_magic[0] ^= 1;
        assert!(error(&bad_magic).contains("magic"));
        let mut bad_hc = good.clone();
        bad_hc[6] ^= 1;
        assert!(error(&bad_hc).contains("descriptor"));
        let mut bad_block = good.clone();
        bad_block[20] ^= 1;
        assert!(error(&bad_block).contains("checksum"));
        let mut bad_content = good.clone();
        let last = bad_content.len() - 1;
        bad_content[last] ^= 1;
        assert!(error(&bad_content).contains("content checksum"));
        for cut in [3, 6, 12, good.len() - 1] {
            assert!(inflate(&good[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_block_claiming_more_than_the_maximum_is_refused() {
        // 64 KiB maximum (BD 0x40), independent blocks, then a block size
        // of 64 KiB + 1.
        let descriptor = [0x60u8, 0x40];
        let hc = (XxHash32::oneshot(0, &descriptor) >> 8) as u8;
        let mut f = MAGIC.to_le_bytes().to_vec();
        f.extend_from_slice(&descriptor);
        f.push(hc);
        f.extend_from_slice(&((64u32 << 10) + 1).to_le_bytes());
        f.extend_from_slice(&[0; 16]);
        assert!(inflate(&f)
            .expect_err("oversize block")
            .to_string()
            .contains("maximum"));
    }

    #[test]
    fn only_the_first_frame_is_read_as_kafka_does() {
        let mut two = frame(b"first", FrameInfo::new());
        two.extend_from_slice(&frame(b"second", FrameInfo::new()));
        assert_eq!(inflate(&two).expect("first"), b"first");
    }

    #[test]
    fn one_scratch_serves_frames_in_a_row() {
        // A linked 4 MiB-block frame grows the scratch; an independent
        // 64 KiB-block frame and a linked one of other content then reuse
        // it without seeing what the earlier frames left in it.
        let mut scratch = Vec::new();
        let big = sample(300_000);
        let linked = |data: &[u8], size| {
            frame(
                data,
                FrameInfo::new()
                    .block_mode(BlockMode::Linked)
                    .block_size(size)
                    .content_checksum(true),
            )
        };
        let first = linked(&big, BlockSize::Max4MB);
        assert_eq!(inflate_with(&first, &mut scratch).expect("first"), big);
        let grown = scratch.len();
        assert!(grown >= (4 << 20) + WINDOW);
        let small: Vec<u8> = sample(90_000).iter().rev().copied().collect();
        let second = frame(
            &small,
            FrameInfo::new()
                .block_mode(BlockMode::Independent)
                .block_size(BlockSize::Max64KB),
        );
        assert_eq!(inflate_with(&second, &mut scratch).expect("second"), small);
        let third = linked(&small, BlockSize::Max64KB);
        assert_eq!(inflate_with(&third, &mut scratch).expect("third"), small);
        assert_eq!(scratch.len(), grown, "reused, not regrown");
        // A reader inside another needs its own scratch.
        let mut inner_scratch = Vec::new();
        let mut outer = Lz4Frame::new(&first, &mut scratch).expect("outer");
        let mut inner = Lz4Frame::new(&second, &mut inner_scratch).expect("inner");
        let (mut a, mut b) = (vec![0; 1000], Vec::new());
        outer.read_exact(&mut a).expect("outer read");
        inner.read_to_end(&mut b).expect("inner read");
        assert_eq!((&a[..], &b[..]), (&big[..1000], &small[..]));
    }
}
