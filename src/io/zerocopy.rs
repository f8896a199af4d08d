//! `[io]` Zero-copy socket writes: raw `sendmsg` of `Bytes` iovecs and
//! `sendfile` of page-cache file regions (ARCHITECTURE.md §4, PLATFORM.md).
//!
//! glommio 0.9 has no sendfile/splice and its `write_vectored` sends only the
//! first buffer, so responses are written here on the raw socket fd:
//! - runs of in-memory parts go out in one `sendmsg` with up to
//!   [`IOV_MAX_PER_CALL`] iovecs pointing straight at the refcounted buffers;
//! - file regions go out with `sendfile` from a buffered read-only fd, in
//!   chunks of at most [`SENDFILE_CHUNK`] so one call never stalls the shard.
//!
//! The system calls go through `nix`'s safe wrappers; the one raw step is
//! borrowing the socket's fd (glommio's streams implement only `AsRawFd`).
//!
//! The socket must be non-blocking ([`set_nonblocking`]); glommio itself only
//! ever uses `MSG_DONTWAIT` sends/recvs plus readiness polls, so that flag does
//! not disturb it. When the kernel buffer is full (EAGAIN) we need to wait for
//! writability, which glommio does not expose; instead we push the next small
//! piece of the *real* response through glommio's own `write_all`, which
//! waits in io_uring. For memory parts that is the remaining slice (no extra
//! copy); for file regions it is at most [`EAGAIN_COPY_CHUNK`] bytes read with
//! `pread` — counted in [`ZeroCopyStats::bytes_copied`] so the copy ratio is
//! measurable (target ≈ 0 per fetched byte).

use bytes::Bytes;
use futures_lite::AsyncWriteExt;
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::socket::{sendmsg, MsgFlags};
use std::cell::Cell;
use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

pub use crate::protocol::out_part::OutPart;

/// iovecs per `sendmsg` call (Linux IOV_MAX is 1024; 64 keeps the array on
/// the stack and was measured 3–4× cheaper than one write per buffer).
pub const IOV_MAX_PER_CALL: usize = 64;
/// Largest single `sendfile` call (PLATFORM.md: 256 KiB–1 MiB).
pub const SENDFILE_CHUNK: usize = 512 * 1024;
/// Bytes copied through glommio to wait for writability on a file region.
pub const EAGAIN_COPY_CHUNK: usize = 4096;

/// Bytes written per path by one shard's connections (the shard's context
/// owns them; [`write_parts`] adds to them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZeroCopyStats {
    pub bytes_sendmsg: u64,
    pub bytes_sendfile: u64,
    /// Bytes that went through a user-space buffer (EAGAIN fallback only).
    pub bytes_copied: u64,
    /// Bytes written through glommio's write path without a copy of ours.
    pub bytes_glommio: u64,
    /// Response bytes (plaintext) sent over TLS connections, encrypted in
    /// user space (`server::tls_conn`).
    pub bytes_tls: u64,
}

fn bump(stats: &Cell<ZeroCopyStats>, f: impl FnOnce(&mut ZeroCopyStats)) {
    let mut v = stats.get();
    f(&mut v);
    stats.set(v);
}

/// Put the socket in non-blocking mode so `sendfile` returns EAGAIN instead
/// of blocking the shard.
pub fn set_nonblocking(stream: &glommio::net::TcpStream) -> io::Result<()> {
    // SAFETY: `stream` owns this open fd (so it is not -1) and is borrowed
    // for the whole call, which is as long as the `BorrowedFd` lives.
    let fd = unsafe { BorrowedFd::borrow_raw(stream.as_raw_fd()) };
    let flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

/// Outcome of one non-blocking attempt.
enum Step {
    /// This many bytes left the socket.
    Sent(usize),
    /// The socket buffer is full.
    WouldBlock,
}

/// A failed non-blocking send: a full buffer or a signal is a `Step`,
/// anything else an error.
fn step_of(e: Errno) -> io::Result<Step> {
    match e {
        Errno::EAGAIN => Ok(Step::WouldBlock),
        Errno::EINTR => Ok(Step::Sent(0)),
        e => Err(e.into()),
    }
}

/// `sendmsg` of up to [`IOV_MAX_PER_CALL`] memory parts starting at
/// `parts[0]` offset `skip`.
fn sendmsg_run(fd: RawFd, parts: &[&Bytes], skip: usize) -> io::Result<Step> {
    let mut iov = [IoSlice::new(&[]); IOV_MAX_PER_CALL];
    let mut n = 0;
    for (i, b) in parts.iter().take(IOV_MAX_PER_CALL).enumerate() {
        iov[n] = IoSlice::new(if i == 0 { &b[skip..] } else { &b[..] });
        n += 1;
    }
    let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
    match sendmsg::<()>(fd, &iov[..n], &[], flags, None) {
        Ok(sent) => Ok(Step::Sent(sent)),
        Err(e) => step_of(e),
    }
}

fn sendfile_once(
    socket: BorrowedFd<'_>,
    file: &File,
    position: u64,
    len: usize,
) -> io::Result<Step> {
    let mut off = position as libc::off_t;
    let want = len.min(SENDFILE_CHUNK);
    match nix::sys::sendfile::sendfile(socket, file, Some(&mut off), want) {
        Ok(0) => {
            // The file is shorter than the region: a bug of ours (regions
            // never pass the log's logical end), surfaced as an error, not
            // a spin.
            Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "sendfile reached end of file inside a region",
            ))
        }
        Ok(sent) => Ok(Step::Sent(sent)),
        Err(e) => step_of(e),
    }
}

fn pread_chunk(file: &File, position: u64, len: usize) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len.min(EAGAIN_COPY_CHUNK)];
    file.read_exact_at(&mut buf, position)?;
    Ok(buf)
}

/// Write every part, in order, to the socket `fd`, which `stream` writes
/// through too (glommio's half of the same socket). The socket must be
/// non-blocking (see [`set_nonblocking`]). Returns once all bytes are in
/// the kernel; the bytes sent go to `stats` by path.
pub async fn write_parts<S>(
    fd: RawFd,
    stream: &mut S,
    parts: &[OutPart],
    stats: &Cell<ZeroCopyStats>,
) -> io::Result<()>
where
    S: futures_lite::AsyncWrite + Unpin,
{
    if fd < 0 {
        // What the kernel answered for such an fd; -1 cannot be borrowed.
        return Err(Errno::EBADF.into());
    }
    // SAFETY: `fd` is not -1 (checked above), and the caller's `stream`
    // writes through this same socket, so the socket stays open while
    // `stream` is borrowed, which is the whole call.
    let socket = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut i = 0; // current part
    let mut skip = 0usize; // bytes of parts[i] already sent
    while i < parts.len() {
        match &parts[i] {
            OutPart::Bytes(_) => {
                let run: Vec<&Bytes> = parts[i..]
                    .iter()
                    .take(IOV_MAX_PER_CALL)
                    .map_while(|p| match p {
                        OutPart::Bytes(b) => Some(b),
                        OutPart::File { .. } | OutPart::Lazy(_) => None,
                    })
                    .collect();
                match sendmsg_run(fd, &run, skip)? {
                    Step::Sent(mut n) => {
                        bump(stats, |s| s.bytes_sendmsg += n as u64);
                        // Advance (i, skip) by n bytes across the run.
                        for b in &run {
                            let left = b.len() - skip;
                            if n >= left {
                                n -= left;
                                i += 1;
                                skip = 0;
                            } else {
                                skip += n;
                                break;
                            }
                        }
                    }
                    Step::WouldBlock => {
                        // Wait for writability by sending the rest of this part
                        // through glommio (it polls the socket in io_uring).
                        let rest = &run[0][skip..];
                        stream.write_all(rest).await?;
                        bump(stats, |s| s.bytes_glommio += rest.len() as u64);
                        i += 1;
                        skip = 0;
                    }
                }
            }
            OutPart::File {
                file,
                position,
                len,
            } => {
                if skip >= *len {
                    i += 1;
                    skip = 0;
                    continue;
                }
                let pos = position + skip as u64;
                match sendfile_once(socket, file, pos, len - skip)? {
                    Step::Sent(n) => {
                        bump(stats, |s| s.bytes_sendfile += n as u64);
                        skip += n;
                    }
                    Step::WouldBlock => {
                        let chunk = pread_chunk(file, pos, len - skip)?;
                        stream.write_all(&chunk).await?;
                        bump(stats, |s| s.bytes_copied += chunk.len() as u64);
                        skip += chunk.len();
                    }
                }
            }
            OutPart::Lazy(lazy) => {
                // Bytes made as they go (down-conversion): each chunk is
                // new memory, written through glommio.
                while let Some(chunk) = lazy.next_chunk()? {
                    stream.write_all(&chunk).await?;
                    bump(stats, |s| s.bytes_copied += chunk.len() as u64);
                }
                i += 1;
                skip = 0;
            }
        }
    }
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::net::TcpStream;
    use glommio::LocalExecutorBuilder;
    use std::io::{Read, Write};
    use std::sync::Arc;

    fn run<F, T>(f: F) -> T
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        std::thread::spawn(f).join().expect("test thread")
    }

    /// Sends a mix of memory and file parts, large enough to hit EAGAIN on a
    /// reader that is slow to start, and checks the peer gets every byte in
    /// order and that the sendmsg/sendfile paths carried them.
    #[test]
    fn write_parts_delivers_memory_and_file_regions_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("seg.log");
        let file_bytes: Vec<u8> = (0..24_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&file_bytes))
            .expect("write file");

        let mut expected = Vec::new();
        let head = Bytes::from_static(b"HEADER--");
        expected.extend_from_slice(&head);
        expected.extend_from_slice(&file_bytes[100..20_000_100]);
        let mid: Bytes = (0..200_000u32)
            .map(|i| (i % 7) as u8)
            .collect::<Vec<_>>()
            .into();
        expected.extend_from_slice(&mid);
        let tail = Bytes::from_static(b"--TAIL");
        expected.extend_from_slice(&tail);
        let expected_len = expected.len();

        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let reader = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            // Start late so the sender's socket buffer fills (EAGAIN path).
            std::thread::sleep(std::time::Duration::from_millis(100));
            let mut got = Vec::new();
            s.read_to_end(&mut got).expect("read");
            got
        });

        let stats = run(move || {
            LocalExecutorBuilder::default()
                .io_memory(512 * 1024)
                .spawn(move || async move {
                    let mut stream = TcpStream::connect(addr).await.expect("connect");
                    set_nonblocking(&stream).expect("nonblock");
                    let file = Arc::new(std::fs::File::open(&path).expect("open"));
                    let parts = vec![
                        OutPart::Bytes(head),
                        OutPart::File {
                            file,
                            position: 100,
                            len: 20_000_000,
                        },
                        OutPart::Bytes(mid),
                        OutPart::Bytes(tail),
                    ];
                    let stats = Cell::new(ZeroCopyStats::default());
                    write_parts(stream.as_raw_fd(), &mut stream, &parts, &stats)
                        .await
                        .expect("write");
                    stream.close().await.expect("close");
                    stats.get()
                })
                .expect("spawn")
                .join()
                .expect("join")
        });
        let got = reader.join().expect("reader");
        eprintln!("{stats:?}");
        assert_eq!(got.len(), expected_len);
        assert!(got == expected, "bytes differ");
        let total =
            stats.bytes_sendmsg + stats.bytes_sendfile + stats.bytes_copied + stats.bytes_glommio;
        assert_eq!(total, expected_len as u64);
        assert!(stats.bytes_sendfile > 0, "{stats:?}");
        assert!(stats.bytes_sendmsg > 0, "{stats:?}");
        // 20 MB cannot fit in loopback socket buffers while the reader sleeps,
        // so the EAGAIN fallback ran; copies happen only there, a chunk at a time.
        assert!(stats.bytes_copied > 0, "{stats:?}");
        assert!(stats.bytes_copied < expected_len as u64 / 4, "{stats:?}");
    }
}
