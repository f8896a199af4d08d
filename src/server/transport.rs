//! `[io]` The two sides of a client connection's byte stream, whatever
//! carries it: a PLAINTEXT socket ([`PlainRead`], [`PlainWrite`]: reads
//! into the buffer's spare capacity, zero-copy `sendmsg`/`sendfile`
//! writes) or a TLS session (`server::tls_conn`). The connection's read
//! and write loops are generic over these, so the plaintext path compiles
//! to what it was before TLS existed.

use std::cell::Cell;
use std::os::fd::RawFd;

use bytes::BytesMut;
use futures_lite::io::{ReadHalf, WriteHalf};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;

use super::out::{write_parts, ConnWriter, OutPart};
use crate::io::zerocopy::ZeroCopyStats;

/// Size of the buffer a read that has to wait goes through.
pub const SCRATCH: usize = 16 * 1024;

/// Where a connection's request bytes come from.
#[allow(
    async_fn_in_trait,
    reason = "a connection runs on the shard that accepted it; its futures need no Send"
)]
pub trait ConnRead {
    /// Append up to `want` more bytes of the Kafka stream to `buf`;
    /// `Ok(0)`: the peer closed its side.
    async fn fill(&mut self, buf: &mut BytesMut, want: usize) -> std::io::Result<usize>;
}

/// Where a connection's responses go.
#[allow(
    async_fn_in_trait,
    reason = "a connection runs on the shard that accepted it; its futures need no Send"
)]
pub trait ConnWrite {
    /// Write `parts` in order; the bytes sent by path go to `stats`.
    async fn write_parts(
        &mut self,
        parts: Vec<OutPart>,
        stats: &Cell<ZeroCopyStats>,
    ) -> std::io::Result<()>;
    /// End the stream (best effort).
    async fn close(&mut self);
}

/// The read side of a PLAINTEXT connection. Reads go straight into the
/// buffer's spare capacity (`io::recv`: no zeroing of each read window,
/// which cost a memset the size of the read for every request once a
/// frame had been split off); only when the socket has nothing yet does a
/// read wait through glommio, into `scratch` (zeroed once per
/// connection), and the bytes are appended.
pub struct PlainRead {
    pub fd: RawFd,
    pub reader: ReadHalf<TcpStream>,
    pub scratch: Vec<u8>,
    /// Bytes of the stream read before the socket was handed over (kernel
    /// TLS: what rustls had decrypted); served first.
    pub preread: BytesMut,
}

impl ConnRead for PlainRead {
    async fn fill(&mut self, buf: &mut BytesMut, want: usize) -> std::io::Result<usize> {
        if !self.preread.is_empty() {
            let n = want.min(self.preread.len());
            buf.extend_from_slice(&self.preread.split_to(n));
            return Ok(n);
        }
        if let Some(n) = crate::io::recv::recv_into_spare(self.fd, buf, want)? {
            return Ok(n);
        }
        if self.scratch.is_empty() {
            self.scratch = vec![0; SCRATCH];
        }
        let n = self
            .reader
            .read(&mut self.scratch[..want.min(SCRATCH)])
            .await?;
        buf.extend_from_slice(&self.scratch[..n]);
        Ok(n)
    }
}

/// The write side of a PLAINTEXT connection (`io::zerocopy`).
pub struct PlainWrite(pub ConnWriter<WriteHalf<TcpStream>>);

impl ConnWrite for PlainWrite {
    async fn write_parts(
        &mut self,
        parts: Vec<OutPart>,
        stats: &Cell<ZeroCopyStats>,
    ) -> std::io::Result<()> {
        write_parts(&mut self.0, parts, stats).await
    }

    async fn close(&mut self) {
        let _ = self.0.stream.close().await;
    }
}
