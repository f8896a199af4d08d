//! `[io]` A TLS connection on shardlog's own record layer
//! (`tls::session`, `tls::record`), as kernel TLS would carry it: the
//! handshake through rustls' unbuffered API on the accepting shard, then
//! the read and write loops over our records.
//!
//! - reads: ciphertext is received straight into the connection's read
//!   buffer (a non-blocking `recv` into its spare capacity; only when
//!   nothing is there does the read wait through glommio, into a scratch
//!   buffer) and every whole record is decrypted in place there, its
//!   plaintext moved left onto the plaintext before it in the same pass
//!   (`open_within`): the Kafka frame parser reads the plaintext where the
//!   ciphertext landed, with no copy and no allocation per record. The
//!   start of a record still on its way is carried to the next read.
//! - writes: `OutPart::Bytes` are copied once into the record being
//!   filled (up to 16 KiB of plaintext, across parts) and sealed there;
//!   `OutPart::File` regions are read with `pread` straight into the
//!   record. Records collect in one buffer the connection reuses and
//!   leave with `sendmsg`. The plaintext bytes sent count in
//!   `ZeroCopyStats::bytes_tls`.
//!
//! The reader never writes to the socket: a KeyUpdate the peer asks for
//! goes out before the writer's next record, the alert for a bad record
//! with the writer's close, so records never interleave.

use std::cell::{Cell, RefCell};
use std::io::{self, IoSlice, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use futures_lite::io::{ReadHalf, WriteHalf};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use rustls::AlertDescription;

use super::super::out::OutPart;
use super::super::transport::{ConnRead, ConnWrite};
use crate::io::zerocopy::ZeroCopyStats;
use crate::tls::record::{self, RecordError, Tx, Version, MAX_PLAIN};
use crate::tls::session::{Handshake, Inbound, KeySchedule, Session};

/// Ciphertext received at a time at first.
const TLS_READ: usize = 64 * 1024;
/// What a read grows to while a peer streams (a producer).
const TLS_READ_MAX: usize = 1024 * 1024;
/// A read that had to wait lands here first.
const SCRATCH: usize = 16 * 1024;
/// Records collected before they are sent.
const SEND_BUFFER: usize = 256 * 1024;
/// Ciphertext handed to glommio at a time when the socket is full (its
/// write waits for writability in io_uring).
const SPILL_CHUNK: usize = 16 * 1024;
/// Handshake bytes held at most (a client certificate chain's flight;
/// rustls bounds one handshake message at 64 KiB).
const HANDSHAKE_INPUT_MAX: usize = 128 * 1024;

/// rustls' server handshake on `stream` through its unbuffered API.
/// Returns the handshake and the ciphertext received after it. `Err`: the
/// reason for the caller's warning (the alert rustls sends goes out
/// first).
pub async fn accept(
    stream: &mut TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> Result<(Handshake, Vec<u8>), String> {
    let failed = |e: &dyn std::fmt::Display| format!("TLS handshake failed: {e}");
    let mut hs = Handshake::new(config).map_err(|e| failed(&e))?;
    let mut input = Vec::new();
    let mut out = Vec::new();
    let mut buf = vec![0u8; SCRATCH];
    loop {
        let stepped = hs.step(&mut input, &mut out);
        if !out.is_empty() {
            let sent = stream.write_all(&out).await;
            out.clear();
            if let (Ok(_), Err(e)) = (&stepped, sent) {
                return Err(failed(&e));
            }
        }
        match stepped {
            Err(e) => return Err(failed(&e)),
            Ok(true) => return Ok((hs, input)),
            Ok(false) => {}
        }
        if input.len() > HANDSHAKE_INPUT_MAX {
            return Err(failed(&"handshake flight over 128 KiB"));
        }
        let n = stream.read(&mut buf).await.map_err(|e| failed(&e))?;
        if n == 0 {
            // futures-rustls' words, which operators' log searches know.
            return Err(failed(&"tls handshake eof"));
        }
        input.extend_from_slice(&buf[..n]);
    }
}

/// What the two halves share: rustls' key schedule, a KeyUpdate the peer
/// asked for, and how the reader failed.
struct Shared {
    schedule: KeySchedule,
    update_requested: bool,
    /// The reader refused the peer's input; `Some`: the alert to send.
    failed: Option<Option<AlertDescription>>,
}

/// The two halves of a session on `stream`; `pending`: ciphertext after
/// the handshake; `queued`: records still to send (rustls' last
/// handshake flight, when rustls wrote it).
pub fn halves(
    stream: TcpStream,
    session: Session,
    pending: Vec<u8>,
    queued: Vec<u8>,
) -> io::Result<(TlsRead, TlsWrite)> {
    crate::io::zerocopy::set_nonblocking(&stream)?;
    let fd = stream.as_raw_fd();
    let Session {
        rx,
        tx,
        schedule,
        preread,
    } = session;
    let shared = Rc::new(RefCell::new(Shared {
        schedule,
        update_requested: false,
        failed: None,
    }));
    let (reader, writer) = futures_lite::io::split(stream);
    Ok((
        TlsRead {
            fd,
            reader,
            inbound: Inbound::with_pending(rx, pending),
            shared: shared.clone(),
            scratch: Vec::new(),
            read_size: TLS_READ,
            preread: BytesMut::from(&preread[..]),
        },
        TlsWrite {
            fd,
            stream: writer,
            tx,
            shared,
            out: queued,
            open: None,
        },
    ))
}

/// The read side: plaintext decrypted where it was received.
pub struct TlsRead {
    fd: RawFd,
    reader: ReadHalf<TcpStream>,
    inbound: Inbound,
    shared: Rc<RefCell<Shared>>,
    /// Where a read that had to wait lands (allocated at the first wait).
    scratch: Vec<u8>,
    read_size: usize,
    /// Plaintext rustls decrypted in the handshake; served first.
    preread: BytesMut,
}

fn bad_input(e: RecordError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl ConnRead for TlsRead {
    async fn fill(&mut self, buf: &mut BytesMut, want: usize) -> io::Result<usize> {
        if !self.preread.is_empty() {
            let n = want.min(self.preread.len());
            buf.extend_from_slice(&self.preread.split_to(n));
            return Ok(n);
        }
        loop {
            if self.inbound.closed() {
                return Ok(0);
            }
            let base = self.inbound.prepare(buf, self.read_size);
            let n = match crate::io::recv::recv_into_spare(self.fd, buf, self.read_size)? {
                Some(n) => n,
                None => {
                    // Nothing on the socket yet: wait through glommio.
                    if self.scratch.is_empty() {
                        self.scratch = vec![0; SCRATCH];
                    }
                    let n = self.reader.read(&mut self.scratch).await?;
                    buf.extend_from_slice(&self.scratch[..n]);
                    n
                }
            };
            if n == 0 {
                // TCP EOF (with or without close_notify: Kafka's clients
                // close either way); a record cut short is dropped.
                buf.truncate(base);
                return Ok(0);
            }
            // A full read: the peer streams; take more per `recv` (each
            // contends for the socket lock with the packets arriving).
            if n == self.read_size && n < TLS_READ_MAX {
                self.read_size = n * 2;
            }
            let opened = {
                let mut shared = self.shared.borrow_mut();
                let opened = self
                    .inbound
                    .open(buf, base, &mut || shared.schedule.next_rx());
                match opened {
                    Ok(o) => {
                        shared.update_requested |= o.update_requested;
                        o
                    }
                    Err(e) => {
                        buf.truncate(base);
                        shared.failed = Some(e.alert);
                        return Err(bad_input(e));
                    }
                }
            };
            if opened.plain > 0 {
                return Ok(opened.plain);
            }
        }
    }
}

/// Non-blocking `sendmsg` on the socket.
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

fn sealing(e: RecordError) -> io::Error {
    io::Error::other(e)
}

/// The write side: responses sealed into records.
pub struct TlsWrite {
    fd: RawFd,
    stream: WriteHalf<TcpStream>,
    tx: Tx,
    shared: Rc<RefCell<Shared>>,
    /// Sealed records waiting for the socket, then the record being
    /// filled (reused).
    out: Vec<u8>,
    /// Where the record being filled starts in `out`.
    open: Option<usize>,
}

impl TlsWrite {
    /// The record being filled, begun if none is: its start and the room
    /// left in it. A KeyUpdate goes first when the peer asked for one or
    /// the keys reached the suite's limit (TLS 1.3).
    fn record(&mut self) -> io::Result<(usize, usize)> {
        let start = match self.open {
            Some(start) => start,
            None => {
                self.key_update()?;
                let start = self.tx.begin(&mut self.out);
                self.open = Some(start);
                start
            }
        };
        Ok((start, MAX_PLAIN - self.tx.filled(&self.out, start)))
    }

    fn key_update(&mut self) -> io::Result<()> {
        let mut shared = self.shared.borrow_mut();
        let limit = self.tx.at_limit() && self.tx.version() == Version::Tls13;
        if std::mem::take(&mut shared.update_requested) || limit {
            self.tx
                .seal_key_update(&mut self.out, false)
                .map_err(sealing)?;
            let next = shared.schedule.next_tx().map_err(sealing)?;
            self.tx.rekey(next);
        }
        Ok(())
    }

    /// Seal the record being filled (an empty one is dropped).
    fn seal(&mut self) -> io::Result<()> {
        if let Some(start) = self.open.take() {
            if self.tx.filled(&self.out, start) == 0 {
                self.out.truncate(start);
            } else {
                self.tx
                    .seal(&mut self.out, start, record::DATA)
                    .map_err(sealing)?;
            }
        }
        Ok(())
    }

    async fn put(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let (_, room) = self.record()?;
            let n = room.min(data.len());
            self.out.extend_from_slice(&data[..n]);
            data = &data[n..];
            if n == room {
                self.sealed_full().await?;
            }
        }
        Ok(())
    }

    /// A record is full: seal it, and send when enough collected.
    async fn sealed_full(&mut self) -> io::Result<()> {
        self.seal()?;
        if self.out.len() >= SEND_BUFFER {
            self.flush().await?;
        }
        Ok(())
    }

    /// `len` bytes of `file` from `position`, read straight into records.
    async fn put_file(
        &mut self,
        file: &std::fs::File,
        position: u64,
        len: usize,
    ) -> io::Result<()> {
        let mut done = 0usize;
        while done < len {
            let (_, room) = self.record()?;
            let n = room.min(len - done);
            let at = position + done as u64;
            pread_into_spare(file, &mut self.out, at, n)?;
            done += n;
            if n == room {
                self.sealed_full().await?;
            }
        }
        Ok(())
    }

    /// Send every sealed record.
    async fn flush(&mut self) -> io::Result<()> {
        let mut sent = 0;
        while sent < self.out.len() {
            match FdSend(self.fd).write(&self.out[sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // The socket is full: hand a piece to glommio, whose
                    // write waits for room in io_uring.
                    let end = self.out.len().min(sent + SPILL_CHUNK);
                    self.stream.write_all(&self.out[sent..end]).await?;
                    sent = end;
                }
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        Ok(())
    }
}

/// Read `n` bytes of `file` at `at` onto the end of `out` (no zeroing:
/// only what `pread` wrote becomes part of `out`).
fn pread_into_spare(file: &std::fs::File, out: &mut Vec<u8>, at: u64, n: usize) -> io::Result<()> {
    out.reserve(n);
    let mut got = 0;
    while got < n {
        let spare = out.spare_capacity_mut();
        let offset = libc::off_t::try_from(at + got as u64)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `spare` has at least `n - got` writable bytes owned by
        // `out`; pread writes at most that many and reports how many, and
        // only those become part of `out` (set_len below).
        let r = unsafe {
            libc::pread(
                std::os::fd::AsRawFd::as_raw_fd(file),
                spare.as_mut_ptr().cast(),
                n - got,
                offset,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let r = usize::try_from(r).unwrap_or(0).min(n - got);
        if r == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        // SAFETY: pread initialized the first `r` spare bytes.
        unsafe { out.set_len(out.len() + r) };
        got += r;
    }
    Ok(())
}

impl ConnWrite for TlsWrite {
    async fn write_parts(
        &mut self,
        parts: Vec<OutPart>,
        stats: &Cell<ZeroCopyStats>,
    ) -> io::Result<()> {
        let mut plain = 0u64;
        for part in &parts {
            match part {
                OutPart::Bytes(b) => self.put(b).await?,
                OutPart::File {
                    file,
                    position,
                    len,
                } => self.put_file(file, *position, *len).await?,
                OutPart::Lazy(lazy) => {
                    while let Some(chunk) = lazy.next_chunk()? {
                        self.put(&chunk).await?;
                    }
                }
            }
            plain += part.len() as u64;
        }
        self.seal()?;
        self.flush().await?;
        let mut s = stats.get();
        s.bytes_tls += plain;
        stats.set(s);
        Ok(())
    }

    async fn close(&mut self) {
        // rustls sends nothing after a peer's fatal alert, its own alert
        // after refusing input, close_notify otherwise.
        let alert = match self.shared.borrow_mut().failed.take() {
            None => Some(AlertDescription::CloseNotify),
            Some(alert) => alert,
        };
        let sealed = self.seal().and_then(|()| match alert {
            Some(alert) => self.tx.seal_alert(&mut self.out, alert).map_err(sealing),
            None => Ok(()),
        });
        if sealed.is_ok() {
            let _ = self.flush().await;
        }
        let _ = self.stream.close().await;
    }
}
