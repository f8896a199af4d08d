//! `[pure]` Guarded body decoding with the `kafka-protocol` crate.
//!
//! The crate's generated decoders call `Vec::with_capacity(n)` with the
//! element count read from the wire before reading any element. A hostile
//! count (2^31) asks the allocator for hundreds of GiB and the process
//! aborts — a panic we cannot catch. Kafka itself refuses a collection
//! larger than the bytes remaining (`MessageUtil`/`ByteBufferAccessor`).
//! Every element of every Kafka array occupies at least one byte, so
//! "count ≤ bytes left" is a sound check; callers apply it to each array
//! they are about to hand to the crate.

use bytes::Bytes;
use kafka_protocol::protocol::Decodable;

/// Why a request body cannot be decoded; the connection is closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("array claims {claimed} elements with only {remaining} bytes left")]
    ImplausibleArray { claimed: u64, remaining: usize },
    #[error("truncated body")]
    Truncated,
    #[error("malformed body: {0}")]
    Malformed(String),
}

/// Check the array length field at byte `at` of `body`: an `int32` count
/// for classic versions, an unsigned varint (count + 1) for flexible ones.
/// Null (-1 / 0) and empty arrays pass.
pub fn check_array_len(body: &[u8], at: usize, flexible: bool) -> Result<(), DecodeError> {
    let rest = body.get(at..).ok_or(DecodeError::Truncated)?;
    let (claimed, header_len) = if flexible {
        let (v, n) = read_unsigned_varint(rest).ok_or(DecodeError::Truncated)?;
        (u64::from(v).saturating_sub(1), n)
    } else {
        let b = rest.get(..4).ok_or(DecodeError::Truncated)?;
        let n = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        (u64::try_from(n).unwrap_or(0), 4)
    };
    let remaining = rest.len() - header_len;
    if claimed > remaining as u64 {
        return Err(DecodeError::ImplausibleArray { claimed, remaining });
    }
    Ok(())
}

/// Read an unsigned varint; `None` if truncated or longer than 5 bytes.
pub fn read_unsigned_varint(buf: &[u8]) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    for (i, byte) in buf.iter().take(5).enumerate() {
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Decode a message body with the crate, mapping its errors.
pub fn decode_body<T: Decodable>(body: &mut Bytes, version: i16) -> Result<T, DecodeError> {
    T::decode(body, version).map_err(|e| DecodeError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_counts_larger_than_the_body_are_rejected() {
        // (body, flexible, ok?)
        let rows: &[(&[u8], bool, bool)] = &[
            (&[0, 0, 0, 2, 1, 2], false, true),
            (&[0, 0, 0, 3, 1, 2], false, false),
            (&[0x7f, 0xff, 0xff, 0xff], false, false),
            (&[0xff, 0xff, 0xff, 0xff], false, true), // null array
            (&[0, 0], false, false),                  // truncated
            (&[3, 1, 2], true, true),                 // 2 elements
            (&[4, 1, 2], true, false),
            (&[0], true, true),                             // null compact array
            (&[0xff, 0xff, 0xff, 0xff, 0x0f], true, false), // u32::MAX
            (&[0xff, 0xff, 0xff, 0xff, 0xff], true, false), // varint too long
        ];
        for (body, flexible, ok) in rows {
            assert_eq!(
                check_array_len(body, 0, *flexible).is_ok(),
                *ok,
                "{body:?} flexible={flexible}"
            );
        }
    }

    #[test]
    fn varints_decode_little_endian_groups_of_seven() {
        assert_eq!(read_unsigned_varint(&[0]), Some((0, 1)));
        assert_eq!(read_unsigned_varint(&[0x96, 0x01]), Some((150, 2)));
        assert_eq!(read_unsigned_varint(&[0x80]), None);
    }
}
