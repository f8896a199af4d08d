//! `[pure]` Size-prefixed framing: every Kafka request and response is an
//! `int32` length followed by that many bytes.
//!
//! Two passes, as in mini-redis: first check that a whole frame is buffered
//! (and that its declared size is sane), then split it off without copying.

use bytes::{Buf, Bytes, BytesMut};

/// Why a frame cannot be accepted; the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("negative frame size {0}")]
    NegativeSize(i32),
    /// Kafka's `socket.request.max.bytes` check (`InvalidReceiveException`).
    #[error("frame size {size} larger than socket.request.max.bytes={max}")]
    TooLarge { size: usize, max: usize },
}

/// Length of the size prefix.
pub const SIZE_PREFIX_BYTES: usize = 4;

/// First pass: how many bytes the frame at the head of `buf` needs in total
/// (prefix included), or `Ok(None)` if even the prefix is incomplete.
pub fn frame_len(buf: &[u8], max_bytes: usize) -> Result<Option<usize>, FrameError> {
    let Some(prefix) = buf.get(..SIZE_PREFIX_BYTES) else {
        return Ok(None);
    };
    let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    if size < 0 {
        return Err(FrameError::NegativeSize(size));
    }
    let size = size as usize;
    if size > max_bytes {
        return Err(FrameError::TooLarge {
            size,
            max: max_bytes,
        });
    }
    Ok(Some(SIZE_PREFIX_BYTES + size))
}

/// Second pass: split one complete frame body (without its prefix) off the
/// front of `buf`, or return `Ok(None)` if more bytes are needed.
pub fn take_frame(buf: &mut BytesMut, max_bytes: usize) -> Result<Option<Bytes>, FrameError> {
    match frame_len(buf, max_bytes)? {
        Some(total) if buf.len() >= total => {
            buf.advance(SIZE_PREFIX_BYTES);
            Ok(Some(buf.split_to(total - SIZE_PREFIX_BYTES).freeze()))
        }
        _ => Ok(None),
    }
}

/// Write a size prefix for a frame whose body is `body_len` bytes.
pub fn size_prefix(body_len: usize) -> [u8; SIZE_PREFIX_BYTES] {
    // Responses are bounded far below i32::MAX by fetch.max.bytes and
    // message.max.bytes; saturate rather than wrap if a bug ever breaks that.
    (body_len.min(i32::MAX as usize) as i32).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn incomplete_prefix_and_body_wait_for_more_bytes() {
        let mut buf = BytesMut::from(&[0u8, 0, 0][..]);
        assert_eq!(take_frame(&mut buf, 100), Ok(None));
        let mut buf = BytesMut::from(&[0u8, 0, 0, 3, 1, 2][..]);
        assert_eq!(take_frame(&mut buf, 100), Ok(None));
        assert_eq!(buf.len(), 6, "an incomplete frame leaves the buffer intact");
    }

    #[test]
    fn complete_frames_split_in_order_and_leave_the_rest() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 2, 7, 8, 0, 0, 0, 1, 9, 0][..]);
        assert_eq!(take_frame(&mut buf, 100).unwrap().unwrap(), &[7u8, 8][..]);
        assert_eq!(take_frame(&mut buf, 100).unwrap().unwrap(), &[9u8][..]);
        assert_eq!(take_frame(&mut buf, 100), Ok(None));
        assert_eq!(&buf[..], &[0u8][..]);
    }

    #[test]
    fn oversized_and_negative_sizes_are_rejected_before_buffering() {
        let mut buf = BytesMut::from(&101i32.to_be_bytes()[..]);
        assert_eq!(
            take_frame(&mut buf, 100),
            Err(FrameError::TooLarge {
                size: 101,
                max: 100
            })
        );
        let mut buf = BytesMut::from(&(-5i32).to_be_bytes()[..]);
        assert_eq!(take_frame(&mut buf, 100), Err(FrameError::NegativeSize(-5)));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_and_frames_stay_in_bounds(
            data in proptest::collection::vec(any::<u8>(), 0..512),
            max in 0usize..300,
        ) {
            let mut buf = BytesMut::from(&data[..]);
            while let Ok(Some(frame)) = take_frame(&mut buf, max) {
                prop_assert!(frame.len() <= max);
            }
        }

        #[test]
        fn framing_round_trips_any_body(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut buf = BytesMut::new();
            buf.extend_from_slice(&size_prefix(body.len()));
            buf.extend_from_slice(&body);
            let frame = take_frame(&mut buf, 1024).unwrap().unwrap();
            prop_assert_eq!(&frame[..], &body[..]);
            prop_assert!(buf.is_empty());
        }
    }
}
