//! `[io]` Reading a read result's parts back into memory (cold paths: a
//! batch for ListOffsets, the group log's replay, down-conversion's source
//! windows). The hot path never does this: it sends the parts as they are
//! (`zerocopy`).

use std::io;
use std::os::unix::fs::FileExt;

use bytes::{Bytes, BytesMut};

use crate::protocol::out_part::OutPart;

/// `len` bytes of the concatenation of `parts` from byte `from`: a slice
/// of the part itself when one in-memory part holds them all, a copy
/// otherwise (file regions read with `pread`, from the page cache).
pub fn read_range(parts: &[OutPart], from: usize, len: usize) -> io::Result<Bytes> {
    let mut out = BytesMut::new();
    let mut at = 0usize; // start of the current part in the concatenation
    let end = from + len;
    for part in parts {
        let part_len = part.len();
        let (lo, hi) = (from.max(at), end.min(at + part_len));
        if lo < hi {
            let (a, b) = (lo - at, hi - at);
            match part {
                OutPart::Bytes(bytes) if out.is_empty() && hi - lo == len => {
                    return Ok(bytes.slice(a..b));
                }
                OutPart::Bytes(bytes) => out.extend_from_slice(&bytes[a..b]),
                OutPart::File { file, position, .. } => {
                    let start = out.len();
                    out.resize(start + (b - a), 0);
                    file.read_exact_at(&mut out[start..], position + a as u64)?;
                }
                OutPart::Lazy(_) => {
                    return Err(io::Error::other("a lazy part cannot be read back"));
                }
            }
        }
        at += part_len;
        if at >= end {
            break;
        }
    }
    if out.len() != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(out.freeze())
}

/// Every byte of `parts` in one buffer.
pub fn gather(parts: &[OutPart]) -> io::Result<Bytes> {
    let len = parts.iter().map(OutPart::len).sum();
    read_range(parts, 0, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    #[test]
    fn ranges_span_memory_and_file_parts_and_one_part_is_not_copied() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"0123456789").unwrap();
        let head = Bytes::from_static(b"abcdef");
        let parts = vec![
            OutPart::Bytes(head.clone()),
            OutPart::File {
                file: Arc::new(f),
                position: 2,
                len: 5,
            },
            OutPart::Bytes(Bytes::from_static(b"XYZ")),
        ];
        assert_eq!(&gather(&parts).unwrap()[..], b"abcdef23456XYZ");
        assert_eq!(&read_range(&parts, 4, 6).unwrap()[..], b"ef2345");
        assert_eq!(&read_range(&parts, 10, 4).unwrap()[..], b"6XYZ");
        let one = read_range(&parts, 1, 3).unwrap();
        assert_eq!(one.as_ptr(), head[1..].as_ptr(), "a slice, not a copy");
        assert!(read_range(&parts, 12, 5).is_err(), "past the end");
    }
}
