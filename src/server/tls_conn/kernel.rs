//! `[io]` Handing an established TLS session to the kernel (`io::ktls`):
//! the handshake reads record by record ([`Corked`]) so rustls never holds
//! part of a record the kernel must decrypt; then the `tls` ULP is
//! attached (on a kernel without it this fails and the connection stays
//! in user space, untouched), the records rustls still has to send are
//! flushed, the plaintext it already decrypted is kept for the connection's
//! first reads, and the traffic keys with their sequence numbers are
//! installed (`TLS_TX`, `TLS_RX`). From then on the socket carries
//! plaintext for shardlog: the PLAINTEXT read and write loops (and
//! sendfile) run on it. A record the kernel cannot hand over as data (a
//! TLS 1.3 KeyUpdate, an alert) fails the read with EIO and the connection
//! closes with a warning, as a TLS error does in user space.

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use futures_lite::io::{AsyncRead, AsyncWrite};
use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;

use super::{Established, TlsSession};
use crate::io::ktls::{self, Cipher, Direction, KernelTls, RecordCursor};

/// A stream whose reads never cross a TLS record boundary.
pub struct Corked<S> {
    pub inner: S,
    cursor: RecordCursor,
}

impl<S> Corked<S> {
    pub fn new(inner: S) -> Self {
        Corked {
            inner,
            cursor: RecordCursor::default(),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Corked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let limit = this.cursor.limit().min(buf.len());
        match Pin::new(&mut this.inner).poll_read(cx, &mut buf[..limit]) {
            Poll::Ready(Ok(n)) => {
                this.cursor.consumed(&buf[..n]);
                Poll::Ready(Ok(n))
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Corked<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

/// The cipher a session would hand to the kernel, if this host's kernel
/// takes it and the session's TLS version is one kernel TLS has.
pub fn kernel_cipher(done: &Established, kernel: &KernelTls) -> Option<Cipher> {
    let TlsSession::Rustls(session) = &done.session else {
        return None;
    };
    let cipher = Cipher::of_suite(session.negotiated_cipher_suite()?)?;
    let version = session.protocol_version()?;
    let known = matches!(
        version,
        rustls::ProtocolVersion::TLSv1_2 | rustls::ProtocolVersion::TLSv1_3
    );
    (known && kernel.takes(cipher)).then_some(cipher)
}

/// A session taken apart for the kernel.
pub struct Extracted {
    pub stream: TcpStream,
    /// Plaintext rustls had decrypted before the hand-off: the first bytes
    /// of the Kafka stream.
    pub preread: BytesMut,
    /// `crypto_info` for `TLS_TX` and `TLS_RX`.
    pub tx: Vec<u8>,
    pub rx: Vec<u8>,
    pub principal: String,
}

/// Flush what the session still has to send, keep what it decrypted, and
/// take its keys. `Err`: why it cannot be handed over (the session is
/// gone then; the caller closes the connection).
pub async fn extract(done: Established) -> Result<Extracted, String> {
    let Established {
        mut stream,
        session,
        principal,
    } = done;
    let TlsSession::Rustls(session) = session else {
        return Err("not a session prepared for kernel TLS".into());
    };
    let mut session = *session;
    // TLS 1.3's NewSessionTicket messages, or anything else queued.
    let mut pending = Vec::new();
    while session.wants_write() {
        session
            .write_tls(&mut pending)
            .map_err(|e| format!("TLS records to flush: {e}"))?;
    }
    if !pending.is_empty() {
        stream
            .write_all(&pending)
            .await
            .map_err(|e| format!("flushing TLS records before kernel TLS: {e}"))?;
    }
    session
        .process_new_packets()
        .map_err(|e| format!("TLS: {e}"))?;
    let mut preread = Vec::new();
    match session.reader().read_to_end(&mut preread) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(format!("TLS: {e}")),
    }
    let version = session
        .protocol_version()
        .ok_or("no negotiated TLS version")?;
    let secrets = session
        .dangerous_extract_secrets()
        .map_err(|e| format!("extracting TLS secrets: {e}"))?;
    let tx = ktls::direction_info(version, Direction::Tx, secrets.tx.0, &secrets.tx.1)
        .ok_or("cipher not available to kernel TLS")?;
    let rx = ktls::direction_info(version, Direction::Rx, secrets.rx.0, &secrets.rx.1)
        .ok_or("cipher not available to kernel TLS")?;
    Ok(Extracted {
        stream,
        preread: BytesMut::from(&preread[..]),
        tx,
        rx,
        principal,
    })
}

/// What became of a session offered to the kernel.
pub enum Handoff {
    /// The kernel has the keys; the socket carries plaintext for us.
    Kernel(Extracted),
    /// Left in user space, untouched (the ULP could not be attached).
    User(Box<Established>, String),
}

/// Offer an established session to the kernel (`kernel_cipher` said it
/// takes its cipher). `Err`: the session was taken apart but the kernel
/// refused the keys; the connection cannot go on.
pub async fn hand_off(done: Established) -> Result<Handoff, String> {
    let fd = done.stream.as_raw_fd();
    if let Err(e) = ktls::attach_ulp(fd) {
        return Ok(Handoff::User(Box::new(done), format!("TCP_ULP tls: {e}")));
    }
    let extracted = extract(done).await?;
    ktls::install(fd, &extracted.tx, &extracted.rx)
        .map_err(|e| format!("installing kernel TLS keys: {e}"))?;
    Ok(Handoff::Kernel(extracted))
}

#[cfg(test)]
mod tests;
