//! `[pure]` Varint writers of the Kafka wire format: the unsigned varint of
//! flexible versions (compact lengths, tagged fields) and the zig-zag
//! varint of v2 records. The reader is [`super::decode::read_unsigned_varint`].

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
    }
}
