//! `[io]` Writing responses: a response is a list of parts, so that Fetch
//! can send record data straight from the batch cache (`Bytes`) or from a
//! segment file (`sendfile`) without copying it into a response buffer.

use std::fs::File;
use std::os::fd::RawFd;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncWrite, AsyncWriteExt};

/// One piece of a response on the wire.
#[derive(Debug, Clone)]
pub enum OutPart {
    Bytes(Bytes),
    /// `len` bytes of `file` starting at `position` (a segment region).
    File {
        file: Rc<File>,
        position: u64,
        len: usize,
    },
}

impl OutPart {
    pub fn len(&self) -> usize {
        match self {
            OutPart::Bytes(b) => b.len(),
            OutPart::File { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Small parts are gathered into one buffer so that a burst of pipelined
/// responses costs one write, not two per response.
const COALESCE_BYTES: usize = 64 * 1024;

/// The write side of a connection: the stream half glommio writes through,
/// plus the socket's raw fd for `crate::io::zerocopy` (sendmsg/sendfile).
pub struct ConnWriter<W> {
    pub stream: W,
    pub fd: RawFd,
}

/// Write `parts` in order.
///
/// Hook for `crate::io::zerocopy`: this is the one place to swap in raw
/// `sendmsg` of `Bytes` iovecs and `sendfile` for `File` parts (using
/// `writer.fd`). Until then bytes go through `write_all` and file regions
/// are read with `pread`.
pub async fn write_parts<W: AsyncWrite + Unpin>(
    writer: &mut ConnWriter<W>,
    parts: Vec<OutPart>,
) -> std::io::Result<()> {
    let stream = &mut writer.stream;
    let mut gather = BytesMut::new();
    for part in parts {
        match part {
            OutPart::Bytes(b) if b.len() < COALESCE_BYTES => {
                gather.extend_from_slice(&b);
                if gather.len() >= COALESCE_BYTES {
                    stream.write_all(&gather).await?;
                    gather.clear();
                }
            }
            OutPart::Bytes(b) => {
                if !gather.is_empty() {
                    stream.write_all(&gather).await?;
                    gather.clear();
                }
                stream.write_all(&b).await?;
            }
            OutPart::File {
                file,
                position,
                len,
            } => {
                if !gather.is_empty() {
                    stream.write_all(&gather).await?;
                    gather.clear();
                }
                let data = read_file_region(&file, position, len)?;
                stream.write_all(&data).await?;
            }
        }
    }
    if !gather.is_empty() {
        stream.write_all(&gather).await?;
    }
    Ok(())
}

fn read_file_region(file: &File, position: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut data = vec![0u8; len];
    file.read_exact_at(&mut data, position)?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn parts_are_written_in_order_whatever_their_kind_and_size() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"0123456789").unwrap();
        let big = Bytes::from(vec![b'B'; COALESCE_BYTES + 5]);
        let parts = vec![
            OutPart::Bytes(Bytes::from_static(b"head")),
            OutPart::File {
                file: Rc::new(file),
                position: 3,
                len: 4,
            },
            OutPart::Bytes(big.clone()),
            OutPart::Bytes(Bytes::from_static(b"tail")),
        ];
        let total: usize = parts.iter().map(OutPart::len).sum();
        let mut writer = ConnWriter {
            stream: Vec::new(),
            fd: -1,
        };
        futures_lite::future::block_on(write_parts(&mut writer, parts)).unwrap();
        let mut expected = b"head3456".to_vec();
        expected.extend_from_slice(&big);
        expected.extend_from_slice(b"tail");
        assert_eq!(writer.stream.len(), total);
        assert_eq!(writer.stream, expected);
    }
}
