//! `[io]` A client connection on an SSL listener: the TLS handshake on the
//! accepting shard, then the connection's read and write loops over the
//! TLS session (Kafka's `SslTransportLayer`).
//!
//! The handshake is async (futures-rustls over glommio's stream), so the
//! shard serves its other connections meanwhile; it is bounded by
//! `connections.max.idle.ms` (a client that opens TCP and never finishes
//! it is closed then; rustls buffers at most one handshake flight of
//! 64 KiB). A failed handshake closes the connection with a warning naming
//! the peer and rustls' reason.
//!
//! After it, rustls is driven by hand on the raw socket:
//! - reads: ciphertext is received straight into the session's own buffer
//!   (a non-blocking `recv`; only when nothing is there does the read wait
//!   through glommio into a scratch buffer), decrypted in place, and the
//!   plaintext copied once into the connection's read buffer;
//! - writes: `OutPart::Bytes` are encrypted straight from the `Bytes`,
//!   `OutPart::File` regions are read with `pread` into one buffer the
//!   connection reuses, then encrypted; records leave with `sendmsg`.
//!   Nothing is copied beyond what the cipher needs (and the file read a
//!   user-space cipher cannot avoid). The plaintext bytes sent count in
//!   `ZeroCopyStats::bytes_tls`.
//!
//! The reader never writes to the socket: whatever the session queues
//! while reading (a KeyUpdate answer, an alert) goes out with the writer's
//! next flush, so records never interleave.

use std::cell::{Cell, RefCell};
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use futures_lite::io::{ReadHalf, WriteHalf};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use rustls::ServerConnection;

use super::connection::{peer_names, run, serve_socket, Peer};
use super::memory_pool::MemoryPool;
use super::out::OutPart;
use super::transport::{ConnRead, ConnWrite};
use crate::io::zerocopy::ZeroCopyStats;
use crate::shard::ShardContext;
use crate::tls::ListenerTls;

pub use super::connection::ANONYMOUS_PRINCIPAL;

/// File-region bytes read per `pread` before they are encrypted.
const FILE_CHUNK: usize = 64 * 1024;
/// Ciphertext read from the socket at a time (one buffer per connection,
/// allocated at its first read).
const TLS_READ: usize = 64 * 1024;
/// What the read buffer of a streaming connection grows to (a PLAINTEXT
/// connection's read takes up to a whole request, `message.max.bytes`).
const TLS_READ_MAX: usize = 1024 * 1024;
/// Ciphertext the session may hold before a write waits for the socket.
const SEND_BUFFER: usize = 256 * 1024;
/// Ciphertext handed to glommio at a time when the socket is full (its
/// write waits for writability in io_uring).
const SPILL_CHUNK: usize = 16 * 1024;

/// What a TLS listener's connections need: the server configuration to
/// handshake with (taken per connection, so a reloaded keystore applies
/// to new connections only) and the principal of a client certificate.
pub trait ServerTls {
    fn server_config(&self) -> Arc<rustls::ServerConfig>;
    /// Kafka's principal (`User:<name>`) for the DER client certificate.
    fn principal_for(&self, cert_der: &[u8]) -> Result<String, String>;
}

/// An SSL listener's [`ListenerTls`] as the handshake uses it: the
/// principal is `User:` + the name `ssl.principal.mapping.rules` give the
/// certificate's subject (Kafka's `DefaultKafkaPrincipalBuilder`).
pub struct ListenerServerTls<'a>(pub &'a ListenerTls);

impl ServerTls for ListenerServerTls<'_> {
    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.0.server_config()
    }

    fn principal_for(&self, cert_der: &[u8]) -> Result<String, String> {
        let name = self.0.principal_mapper().principal_for(cert_der)?;
        Ok(format!("User:{name}"))
    }
}

/// Serve one connection of the SSL listener `listener` (its TLS state
/// `tls`): the handshake, then the connection's loops over the session.
/// A failed handshake closes the connection with a warning naming the
/// peer and the reason; nothing else on the shard notices.
pub async fn serve(
    ctx: Rc<ShardContext>,
    stream: TcpStream,
    pool: Arc<MemoryPool>,
    tls: Arc<ListenerTls>,
    listener: &str,
    sasl: Option<Arc<super::sasl_conn::SaslListener>>,
) {
    let (peer, client_host) = peer_names(&stream);
    // Responses are complete messages; do not let Nagle hold them back.
    let _ = stream.set_nodelay(true);
    let kernel = crate::io::ktls::probe();
    // Read the handshake record by record only where the kernel may take
    // the session over (it costs a read per record header).
    let cork = matches!(kernel, crate::io::ktls::KernelTls::Available(_));
    let shaken = futures_lite::future::or(
        async { Some(timed_handshake(&ctx, stream, &tls, cork).await) },
        async {
            ctx.stopping.wait().await;
            None
        },
    )
    .await;
    let stats = &ctx.stats.tls_handshakes;
    let done = match shaken {
        None => return, // the shard stops
        Some(Err(reason)) => {
            stats.borrow_mut().failed += 1;
            tracing::warn!(%peer, listener, %reason, "closing connection");
            return;
        }
        Some(Ok(done)) => {
            stats.borrow_mut().completed += 1;
            done
        }
    };
    let done = if cork && kernel::kernel_cipher(&done, kernel).is_some() {
        match kernel::hand_off(done).await {
            Ok(kernel::Handoff::Kernel(k)) => {
                stats.borrow_mut().kernel += 1;
                let principal: Rc<str> = k.principal.as_str().into();
                let who = Peer::new(peer, client_host, principal, listener).with_sasl(sasl);
                serve_socket(ctx, k.stream, pool, who, k.preread).await;
                return;
            }
            Ok(kernel::Handoff::User(done, reason)) => {
                tracing::debug!(%peer, listener, %reason, "kernel TLS refused; user-space TLS");
                *done
            }
            Err(reason) => {
                tracing::warn!(%peer, listener, %reason, "kernel TLS hand-off failed; closing");
                return;
            }
        }
    } else {
        done
    };
    // SASL_SSL: the principal comes from SASL, never the certificate.
    let principal: Rc<str> = done.principal.as_str().into();
    let (reader, writer) = match split(done) {
        Ok(halves) => halves,
        Err(e) => {
            tracing::warn!(%peer, listener, error = %e, "cannot make socket non-blocking; closing");
            return;
        }
    };
    let who = Peer::new(peer, client_host, principal, listener).with_sasl(sasl);
    run(ctx, who, pool, reader, writer).await;
}

/// The handshake of one connection, bounded by `connections.max.idle.ms`,
/// as a task of the shard's default queue: each poll is one step of it
/// (rustls between two reads), timed into the shard's `tls_handshakes` —
/// the longest is the longest the shard's other connections waited for
/// one handshake step (`shardlog.stall.detect.ms` reports any over it).
async fn timed_handshake(
    ctx: &ShardContext,
    stream: TcpStream,
    tls: &ListenerTls,
    cork: bool,
) -> Result<Established, String> {
    let server = ListenerServerTls(tls);
    let timeout_ms = ctx.config.connections_max_idle_ms;
    let stats = &ctx.stats.tls_handshakes;
    let mut shaking = std::pin::pin!(handshake(stream, &server, timeout_ms, cork));
    std::future::poll_fn(|cx| {
        let t0 = ctx.clock.mono_ns();
        let r = std::future::Future::poll(shaking.as_mut(), cx);
        stats
            .borrow_mut()
            .step(ctx.clock.mono_ns().saturating_sub(t0));
        r
    })
    .await
}

/// A handshaken TLS connection, ready for the read and write loops.
pub struct Established {
    pub stream: TcpStream,
    pub session: ServerConnection,
    /// From the client certificate, or [`ANONYMOUS_PRINCIPAL`].
    pub principal: String,
}

/// Run the server handshake on `stream`; `Err`: the reason, for the
/// caller's warning (rustls' error, a timeout, or a principal the
/// certificate does not map to). `timeout_ms` < 0: no bound (Kafka's
/// `connections.max.idle.ms` = -1). `cork`: read record by record, so the
/// session can be handed to the kernel after it (`kernel::Corked`).
pub async fn handshake(
    stream: TcpStream,
    tls: &dyn ServerTls,
    timeout_ms: i64,
    cork: bool,
) -> Result<Established, String> {
    let config = tls.server_config();
    let (stream, session) = if cork {
        let (corked, session) = accept(kernel::Corked::new(stream), config, timeout_ms).await?;
        (corked.inner, session)
    } else {
        accept(stream, config, timeout_ms).await?
    };
    let principal = match session.peer_certificates().and_then(|c| c.first()) {
        None => ANONYMOUS_PRINCIPAL.to_string(),
        Some(cert) => tls
            .principal_for(cert.as_ref())
            .map_err(|e| format!("no principal for the client certificate: {e}"))?,
    };
    Ok(Established {
        stream,
        session,
        principal,
    })
}

/// rustls' server handshake on `io`, bounded by `timeout_ms`.
async fn accept<IO>(
    io: IO,
    config: Arc<rustls::ServerConfig>,
    timeout_ms: i64,
) -> Result<(IO, ServerConnection), String>
where
    IO: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin,
{
    let acceptor = futures_rustls::TlsAcceptor::from(config);
    let accept = async { Some(acceptor.accept(io).await) };
    let limit = async {
        match u64::try_from(timeout_ms) {
            Ok(ms) => glommio::timer::sleep(std::time::Duration::from_millis(ms)).await,
            Err(_) => std::future::pending::<()>().await,
        }
        None
    };
    let tls_stream = match futures_lite::future::or(accept, limit).await {
        None => {
            return Err(format!(
                "TLS handshake not completed within connections.max.idle.ms ({timeout_ms} ms)"
            ))
        }
        Some(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
        Some(Ok(s)) => s,
    };
    Ok(tls_stream.into_inner())
}

/// The two halves of an established connection.
pub fn split(done: Established) -> io::Result<(TlsRead, TlsWrite)> {
    crate::io::zerocopy::set_nonblocking(&done.stream)?;
    let fd = done.stream.as_raw_fd();
    let mut session = done.session;
    session.set_buffer_limit(Some(SEND_BUFFER));
    let session = Rc::new(RefCell::new(session));
    let (reader, writer) = futures_lite::io::split(done.stream);
    Ok((
        TlsRead {
            session: session.clone(),
            fd,
            reader,
            scratch: Vec::new(),
            pending: 0..0,
        },
        TlsWrite {
            out: TlsOut {
                session,
                fd,
                stream: writer,
                spill: Vec::new(),
            },
            file_buf: Vec::new(),
        },
    ))
}

/// The read side: plaintext of the session into the connection's buffer.
pub struct TlsRead {
    session: Rc<RefCell<ServerConnection>>,
    fd: RawFd,
    reader: ReadHalf<TcpStream>,
    /// Where a read that had to wait lands (allocated at the first wait).
    scratch: Vec<u8>,
    /// Ciphertext in `scratch` not yet taken by the session.
    pending: std::ops::Range<usize>,
}

/// A TLS protocol error: bad input the read loop reports as a warning.
fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl ConnRead for TlsRead {
    async fn fill(&mut self, buf: &mut BytesMut, want: usize) -> io::Result<usize> {
        loop {
            {
                let mut s = self.session.borrow_mut();
                s.process_new_packets().map_err(tls_error)?;
                match take_plaintext(&mut s, buf, want) {
                    Taken::Some(n) => return Ok(n),
                    Taken::Closed => return Ok(0),
                    Taken::Nothing => {}
                }
                if !self.pending.is_empty() {
                    let n = s.read_tls(&mut &self.scratch[self.pending.clone()])?;
                    self.pending.start += n;
                    continue;
                }
            }
            // rustls reads at most 4 KiB per `read_tls`; one `recv` takes
            // what the socket has (up to TLS_READ) and rustls is fed from
            // it in memory: a quarter of the syscalls of reading through
            // `read_tls` for full 16 KiB records, far fewer for small ones.
            if self.scratch.is_empty() {
                self.scratch = vec![0; TLS_READ];
            }
            match FdRecv(self.fd).read(&mut self.scratch) {
                Ok(0) => {
                    // The peer closed; the session says how.
                    self.session.borrow_mut().read_tls(&mut io::empty())?;
                    continue;
                }
                Ok(n) => {
                    // A full read: the peer streams (a producer); take more
                    // per `recv` (each one contends for the socket lock with
                    // the packets arriving on it).
                    if n == self.scratch.len() && n < TLS_READ_MAX {
                        self.scratch.resize(n * 2, 0);
                    }
                    self.pending = 0..n;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // Nothing on the socket yet: wait through glommio.
            let n = self.reader.read(&mut self.scratch).await?;
            if n == 0 {
                // Tell the session the peer is gone (an empty read is EOF).
                self.session.borrow_mut().read_tls(&mut io::empty())?;
            }
            self.pending = 0..n;
        }
    }
}

enum Taken {
    Some(usize),
    /// The peer closed (close_notify, or TCP EOF without it: Kafka's
    /// clients close either way).
    Closed,
    Nothing,
}

/// Copy up to `want` bytes of the session's decrypted plaintext to `buf`.
fn take_plaintext(s: &mut ServerConnection, buf: &mut BytesMut, want: usize) -> Taken {
    use std::io::BufRead;
    let mut taken = 0;
    let mut reader = s.reader();
    while taken < want {
        match reader.fill_buf() {
            Ok([]) => {
                return if taken > 0 {
                    Taken::Some(taken)
                } else {
                    Taken::Closed
                }
            }
            Ok(chunk) => {
                let n = chunk.len().min(want - taken);
                buf.extend_from_slice(&chunk[..n]);
                reader.consume(n);
                taken += n;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) if taken == 0 => return Taken::Closed,
            Err(_) => break,
        }
    }
    if taken > 0 {
        Taken::Some(taken)
    } else {
        Taken::Nothing
    }
}

/// Non-blocking `recv` on the socket, for `read_tls`.
struct FdRecv(RawFd);

impl Read for FdRecv {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is `buf.len()` writable, initialized bytes; the
        // kernel writes at most that many and reports how many.
        let n = unsafe {
            libc::recv(
                self.0,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return Err(if e.kind() == io::ErrorKind::Interrupted {
                io::ErrorKind::WouldBlock.into()
            } else {
                e
            });
        }
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

/// Non-blocking `sendmsg` on the socket, for `write_tls`.
struct FdSend(RawFd);

impl Write for FdSend {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        use nix::sys::socket::{sendmsg, MsgFlags};
        let n = bufs.len().min(crate::io::zerocopy::IOV_MAX_PER_CALL);
        let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
        match sendmsg::<()>(self.0, &bufs[..n], &[], flags, None) {
            Ok(sent) => Ok(sent),
            Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {
                Err(io::ErrorKind::WouldBlock.into())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Takes at most `room` bytes of ciphertext (what waits for the socket).
struct Spill<'a> {
    buf: &'a mut Vec<u8>,
    room: usize,
}

impl Write for Spill<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(self.room - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The session's sending side and the socket.
struct TlsOut {
    session: Rc<RefCell<ServerConnection>>,
    fd: RawFd,
    stream: WriteHalf<TcpStream>,
    spill: Vec<u8>,
}

impl TlsOut {
    /// Encrypt `data` into the session, flushing whenever its buffer is
    /// full.
    async fn send(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = self.session.borrow_mut().writer().write(data)?;
            data = &data[n..];
            if !data.is_empty() {
                self.flush().await?;
            }
        }
        Ok(())
    }

    /// Send every record the session holds.
    async fn flush(&mut self) -> io::Result<()> {
        loop {
            let sent = {
                let mut s = self.session.borrow_mut();
                if !s.wants_write() {
                    return Ok(());
                }
                s.write_tls(&mut FdSend(self.fd))
            };
            match sent {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // The socket is full: hand a piece of the records to
                    // glommio, whose write waits for room in io_uring.
                    self.spill.clear();
                    self.session.borrow_mut().write_tls(&mut Spill {
                        buf: &mut self.spill,
                        room: SPILL_CHUNK,
                    })?;
                    self.stream.write_all(&self.spill).await?;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// The write side: responses encrypted into the session.
pub struct TlsWrite {
    out: TlsOut,
    /// File regions are read into this one buffer, then encrypted from
    /// it (allocated at the first file region).
    file_buf: Vec<u8>,
}

impl ConnWrite for TlsWrite {
    async fn write_parts(
        &mut self,
        parts: Vec<OutPart>,
        stats: &Cell<ZeroCopyStats>,
    ) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut plain = 0u64;
        for part in &parts {
            match part {
                OutPart::Bytes(b) => self.out.send(b).await?,
                OutPart::File {
                    file,
                    position,
                    len,
                } => {
                    if self.file_buf.is_empty() {
                        self.file_buf = vec![0; FILE_CHUNK];
                    }
                    let mut done = 0usize;
                    while done < *len {
                        let n = (len - done).min(FILE_CHUNK);
                        let chunk = &mut self.file_buf[..n];
                        file.read_exact_at(chunk, position + done as u64)?;
                        self.out.send(chunk).await?;
                        done += n;
                    }
                }
            }
            plain += part.len() as u64;
        }
        self.out.flush().await?;
        let mut s = stats.get();
        s.bytes_tls += plain;
        stats.set(s);
        Ok(())
    }

    async fn close(&mut self) {
        self.out.session.borrow_mut().send_close_notify();
        let _ = self.out.flush().await;
        let _ = self.out.stream.close().await;
    }
}

pub mod kernel;
pub mod stats;

#[cfg(test)]
mod tests;
