//! `[io]` Socket reads straight into a buffer's spare capacity.
//!
//! A read through glommio (`AsyncRead`) needs an initialized `&mut [u8]`,
//! so every read window had to be zeroed first; after each request is
//! split off the connection's buffer, the buffer's next window is fresh
//! memory, and zeroing it cost a memset as large as the read for every
//! request (the largest item of a shard's profile under many small produce
//! requests). Here the kernel writes into the spare capacity directly (a
//! non-blocking `recv`, as glommio's own first attempt is), and only the
//! bytes it wrote become part of the buffer. When nothing is there yet
//! (`EAGAIN`) the caller waits through glommio, whose read parks on the
//! socket's readiness in io_uring.

use std::io;
use std::os::fd::RawFd;

use bytes::BytesMut;

/// Receive up to `max` bytes at the end of `buf` (reserving room first).
/// `Ok(Some(0))`: the peer closed its side; `Ok(None)`: nothing to read
/// now (EAGAIN).
pub fn recv_into_spare(fd: RawFd, buf: &mut BytesMut, max: usize) -> io::Result<Option<usize>> {
    buf.reserve(max);
    let spare = buf.spare_capacity_mut();
    let len = max.min(spare.len());
    // SAFETY: `spare` is `len` writable bytes owned by `buf`; recv writes at
    // most `len` bytes there and reports how many, and only those become
    // part of `buf` (set_len below). No reference to uninitialized bytes is
    // formed.
    let n = unsafe { libc::recv(fd, spare.as_mut_ptr().cast(), len, libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    let n = usize::try_from(n).unwrap_or(0).min(len);
    // SAFETY: the kernel initialized the first `n` spare bytes.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(Some(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn received_bytes_follow_the_buffered_ones_and_nothing_else_is_added() {
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let mut buf = BytesMut::from(&b"head"[..]);
        assert_eq!(
            recv_into_spare(b.as_raw_fd(), &mut buf, 64).unwrap(),
            None,
            "EAGAIN"
        );
        assert_eq!(&buf[..], b"head");
        a.write_all(b"0123456789").unwrap();
        assert_eq!(
            recv_into_spare(b.as_raw_fd(), &mut buf, 4).unwrap(),
            Some(4)
        );
        assert_eq!(&buf[..], b"head0123");
        // A frame split off in between: the rest still lands after the tail.
        let frame = buf.split_to(6);
        assert_eq!(&frame[..], b"head01");
        assert_eq!(
            recv_into_spare(b.as_raw_fd(), &mut buf, 64).unwrap(),
            Some(6)
        );
        assert_eq!(&buf[..], b"23456789");
        drop(a);
        assert_eq!(
            recv_into_spare(b.as_raw_fd(), &mut buf, 64).unwrap(),
            Some(0),
            "closed"
        );
        assert!(
            recv_into_spare(-1, &mut buf, 8).is_err(),
            "a bad fd is an error"
        );
    }
}
