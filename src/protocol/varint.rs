//! `[pure]` Varints of the Kafka wire format: the unsigned varint of
//! flexible versions (compact lengths, tagged fields; its reader is
//! [`super::decode::read_unsigned_varint`]) and the zig-zag varint of v2
//! records.

use bytes::BufMut;

/// Little-endian groups of seven bits, the high bit set on all but the last.
pub fn put_unsigned_varint(buf: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Zig-zag encoded (0, -1, 1, -2, ... as 0, 1, 2, 3, ...), then as above.
pub fn put_varint(buf: &mut impl BufMut, v: i64) {
    put_unsigned_varint(buf, ((v << 1) ^ (v >> 63)) as u64);
}

/// The signed value of a zig-zag encoded one (the inverse of `put_varint`).
pub fn zigzag_decode(raw: u64) -> i64 {
    ((raw >> 1) as i64) ^ -((raw & 1) as i64)
}

/// A zig-zag varint (at most 10 bytes) at the start of `b`, and how many
/// bytes it took; `None` if `b` ends first or it runs past 10 bytes.
pub fn read_varint(b: &[u8]) -> Option<(i64, usize)> {
    let mut raw = 0u64;
    for (i, byte) in b.iter().take(10).enumerate() {
        raw |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((zigzag_decode(raw), i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::decode::read_unsigned_varint;

    #[test]
    fn unsigned_varints_read_back_and_zig_zag_maps_signs() {
        for v in [0u32, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut buf = Vec::new();
            put_unsigned_varint(&mut buf, u64::from(v));
            assert_eq!(read_unsigned_varint(&buf), Some((v, buf.len())), "{v}");
        }
        let zz = |v: i64| {
            let mut buf = bytes::BytesMut::new();
            put_varint(&mut buf, v);
            buf.to_vec()
        };
        assert_eq!(zz(0), [0]);
        assert_eq!(zz(-1), [1]);
        assert_eq!(zz(1), [2]);
        assert_eq!(zz(-64), [127]);
        assert_eq!(zz(64), [0x80, 0x01]);
        for v in [0i64, -1, 1, -64, 64, 300, -300, i64::MAX, i64::MIN] {
            let buf = zz(v);
            assert_eq!(read_varint(&buf), Some((v, buf.len())), "{v}");
            assert_eq!(read_varint(&buf[..buf.len() - 1]), None, "{v} cut");
        }
    }
}
