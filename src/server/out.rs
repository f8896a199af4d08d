//! `[io]` Writing responses: a response is a list of parts, so that Fetch
//! can send record data straight from the batch cache (`Bytes`) or from a
//! segment file (`sendfile`) without copying it into a response buffer.

use std::fs::File;
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

/// Write `parts` in order.
///
/// Hook for `crate::io::zerocopy`: this is the one place to swap in raw
/// `sendmsg` of `Bytes` iovecs and `sendfile` for `File` parts. Until then
/// bytes go through `write_all` and file regions are read with `pread`.
pub async fn write_parts<W: AsyncWrite + Unpin>(
    stream: &mut W,
    parts: Vec<OutPart>,
) -> std::io::Result<()> {
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
