//! `[io]` Writing responses: a response is a list of parts, so that Fetch
//! can send record data straight from the batch cache (`Bytes`) or from a
//! segment file (`sendfile`) without copying it into a response buffer.

use std::cell::Cell;
use std::fs::File;
use std::os::fd::RawFd;

use bytes::BytesMut;
use futures_lite::{AsyncWrite, AsyncWriteExt};

pub use crate::io::zerocopy::OutPart;
use crate::io::zerocopy::ZeroCopyStats;

/// Small parts are gathered into one buffer so that a burst of pipelined
/// responses costs one write, not two per response.
const COALESCE_BYTES: usize = 64 * 1024;

/// The write side of a connection: the stream half glommio writes through,
/// plus the socket's raw fd for `crate::io::zerocopy` (sendmsg/sendfile).
pub struct ConnWriter<W> {
    pub stream: W,
    pub fd: RawFd,
}

/// Write `parts` in order (the bytes sent by path go to `stats`).
///
/// With a socket fd this is `crate::io::zerocopy` (raw `sendmsg` of
/// `Bytes` iovecs, `sendfile` for `File` parts). Without one (fd < 0: an
/// in-memory writer in tests) bytes go through `write_all` and file
/// regions are read with `pread`.
pub async fn write_parts<W: AsyncWrite + Unpin>(
    writer: &mut ConnWriter<W>,
    parts: Vec<OutPart>,
    stats: &Cell<ZeroCopyStats>,
) -> std::io::Result<()> {
    if writer.fd >= 0 {
        // A real (non-blocking) socket: sendmsg of the buffers as iovecs and
        // sendfile for segment regions; no record byte is copied.
        return crate::io::zerocopy::write_parts(writer.fd, &mut writer.stream, &parts, stats)
            .await;
    }
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
            OutPart::Lazy(lazy) => {
                if !gather.is_empty() {
                    stream.write_all(&gather).await?;
                    gather.clear();
                }
                while let Some(chunk) = lazy.next_chunk()? {
                    stream.write_all(&chunk).await?;
                }
            }
        }
    }
    if !gather.is_empty() {
        stream.write_all(&gather).await?;
    }
    Ok(())
}

pub(crate) fn read_file_region(file: &File, position: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut data = vec![0u8; len];
    file.read_exact_at(&mut data, position)?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::io::Write;

    #[test]
    fn parts_are_written_in_order_whatever_their_kind_and_size() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"0123456789").unwrap();
        let big = Bytes::from(vec![b'B'; COALESCE_BYTES + 5]);
        let parts = vec![
            OutPart::Bytes(Bytes::from_static(b"head")),
            OutPart::File {
                file: std::sync::Arc::new(file),
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
        futures_lite::future::block_on(write_parts(&mut writer, parts, &Cell::default())).unwrap();
        let mut expected = b"head3456".to_vec();
        expected.extend_from_slice(&big);
        expected.extend_from_slice(b"tail");
        assert_eq!(writer.stream.len(), total);
        assert_eq!(writer.stream, expected);
    }
}
