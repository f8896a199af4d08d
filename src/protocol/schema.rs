//! `[pure]` A walk over a request body that checks EVERY array count
//! (nested ones too) before the crate decodes it.
//!
//! `decode::check_array_len` checks one array at a known offset; many
//! requests nest arrays (CreateTopics: topics → assignments → broker ids,
//! topics → configs; Produce: topics → partitions → records), and the
//! crate pre-allocates each from its wire count. [`check_arrays`] walks the
//! body with a small schema of the request (Kafka's message JSON,
//! flattened) and refuses any count larger than the bytes left, so every
//! allocation is bounded by the body size.

use bytes::Bytes;
use kafka_protocol::protocol::Decodable;

use super::decode::{decode_body, read_unsigned_varint, DecodeError};
use super::ApiRange;

/// One field of a request schema.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// Fixed-size field of this many bytes (int8/bool 1, int16 2, ...,
    /// uuid 16).
    Fixed(usize),
    /// string / nullable string.
    Str,
    /// bytes / nullable bytes / records (an int32 length in classic
    /// versions).
    Bytes,
    /// Array (or nullable array) of fixed-size items.
    FixedArray(usize),
    /// Array (or nullable array) of strings.
    StrArray,
    /// Array (or nullable array) of structs; in flexible versions each
    /// struct ends with tagged fields.
    Structs(&'static [Field]),
    /// Present only from this version on.
    Since(i16, &'static Field),
}

pub const INT8: Field = Field::Fixed(1);
pub const BOOL: Field = Field::Fixed(1);
pub const INT16: Field = Field::Fixed(2);
pub const INT32: Field = Field::Fixed(4);
pub const INT64: Field = Field::Fixed(8);
pub const UUID: Field = Field::Fixed(16);

struct Walk<'a> {
    buf: &'a [u8],
    pos: usize,
    version: i16,
    flexible: bool,
}

impl Walk<'_> {
    fn left(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        if n > self.left() {
            return Err(DecodeError::Truncated);
        }
        self.pos += n;
        Ok(())
    }

    fn varint(&mut self) -> Result<u32, DecodeError> {
        let rest = self.buf.get(self.pos..).ok_or(DecodeError::Truncated)?;
        let (v, n) = read_unsigned_varint(rest).ok_or(DecodeError::Truncated)?;
        self.pos += n;
        Ok(v)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let b = self
            .buf
            .get(self.pos..self.pos + N)
            .ok_or(DecodeError::Truncated)?;
        self.pos += N;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// A string or array length; None = null.
    fn length(&mut self, wide: bool) -> Result<Option<usize>, DecodeError> {
        if self.flexible {
            let n = self.varint()?;
            return Ok(n.checked_sub(1).map(|n| n as usize));
        }
        let n = if wide {
            i32::from_be_bytes(self.fixed::<4>()?)
        } else {
            i32::from(i16::from_be_bytes(self.fixed::<2>()?))
        };
        Ok(usize::try_from(n).ok())
    }

    fn count(&mut self) -> Result<usize, DecodeError> {
        let n = self.length(true)?.unwrap_or(0);
        self.plausible(n)
    }

    /// `n` items can follow only if at least `n` bytes are left.
    fn plausible(&self, n: usize) -> Result<usize, DecodeError> {
        if n > self.left() {
            return Err(DecodeError::ImplausibleArray {
                claimed: n as u64,
                remaining: self.left(),
            });
        }
        Ok(n)
    }

    fn tagged_fields(&mut self) -> Result<(), DecodeError> {
        if !self.flexible {
            return Ok(());
        }
        // A plain unsigned varint (KIP-482), not a compact length (n + 1).
        let count = self.varint()? as usize;
        for _ in 0..self.plausible(count)? {
            // Tags are int32 in Kafka's schemas and never negative; the
            // crate keys unknown ones by i32 and drops a negative one when
            // it encodes (no round trip), so refuse it here.
            let tag = self.varint()?;
            if i32::try_from(tag).is_err() {
                return Err(DecodeError::Malformed(format!("tagged field tag {tag}")));
            }
            let size = self.varint()? as usize;
            self.skip(size)?;
        }
        Ok(())
    }

    fn fields(&mut self, fields: &[Field]) -> Result<(), DecodeError> {
        for f in fields {
            self.field(f)?;
        }
        self.tagged_fields()
    }

    fn field(&mut self, f: &Field) -> Result<(), DecodeError> {
        match *f {
            Field::Fixed(n) => self.skip(n),
            Field::Str => {
                let n = self.length(false)?.unwrap_or(0);
                self.skip(n)
            }
            Field::Bytes => {
                let n = self.length(true)?.unwrap_or(0);
                self.skip(n)
            }
            Field::FixedArray(size) => {
                let n = self.count()?;
                self.skip(n.saturating_mul(size))
            }
            Field::StrArray => {
                for _ in 0..self.count()? {
                    self.field(&Field::Str)?;
                }
                Ok(())
            }
            Field::Structs(inner) => {
                for _ in 0..self.count()? {
                    self.fields(inner)?;
                }
                Ok(())
            }
            Field::Since(v, inner) if self.version >= v => self.field(inner),
            Field::Since(..) => Ok(()),
        }
    }
}

/// Walk `body` with `schema` (top-level fields; tagged fields follow in
/// flexible versions) and refuse any array longer than the bytes left.
/// Returns the number of bytes the schema covers.
pub fn check_arrays(
    body: &[u8],
    schema: &[Field],
    version: i16,
    flexible: bool,
) -> Result<usize, DecodeError> {
    let mut walk = Walk {
        buf: body,
        pos: 0,
        version,
        flexible,
    };
    walk.fields(schema)?;
    Ok(walk.pos)
}

/// Test helper: `schema` covers exactly the crate's encoding of `message`
/// at `version` (so real requests are never refused).
#[cfg(test)]
pub fn assert_schema_covers<T: kafka_protocol::protocol::Encodable>(
    message: &T,
    schema: &[Field],
    version: i16,
    flexible: bool,
) {
    let body = super::encode::encode(message, version).expect("encode");
    assert_eq!(
        check_arrays(&body, schema, version, flexible),
        Ok(body.len()),
        "v{version}"
    );
}

/// Check every array with `schema`, then decode with the crate.
pub fn decode_checked<T: Decodable>(
    mut body: Bytes,
    schema: &[Field],
    version: i16,
    flexible: bool,
) -> Result<T, DecodeError> {
    let walked = check_arrays(&body, schema, version, flexible)?;
    let len = body.len();
    let message = decode_body(&mut body, version)?;
    // A known tagged field is decoded by its type and its declared size
    // ignored (by the crate, as by Kafka's generated readers), while the
    // walk skips the declared size: a size that lies leaves the two in
    // different places, and the fields after it would be read from the
    // wrong bytes. Refuse such a body (found by the requests fuzz target).
    let consumed = len - body.len();
    if consumed != walked {
        return Err(DecodeError::Malformed(format!(
            "the body's shape ends at byte {walked}, its decode at {consumed} \
             (a tagged field's size disagrees with its value)"
        )));
    }
    Ok(message)
}

/// [`decode_checked`] with the Kafka 3.9 codec (`kafka-protocol` 0.15.1),
/// for APIs whose 3.9 versions the newer crate dropped.
pub fn decode_checked_39<T: kafka_protocol_39::protocol::Decodable>(
    mut body: Bytes,
    schema: &[Field],
    version: i16,
    flexible: bool,
) -> Result<T, DecodeError> {
    let walked = check_arrays(&body, schema, version, flexible)?;
    let len = body.len();
    let message =
        T::decode(&mut body, version).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let consumed = len - body.len();
    if consumed != walked {
        return Err(DecodeError::Malformed(format!(
            "the body's shape ends at byte {walked}, its decode at {consumed}"
        )));
    }
    Ok(message)
}

/// Encode a response with the Kafka 3.9 codec.
pub fn encode_39<T: kafka_protocol_39::protocol::Encodable>(
    message: &T,
    version: i16,
) -> Result<Bytes, String> {
    let mut buf = bytes::BytesMut::new();
    message
        .encode(&mut buf, version)
        .map_err(|e| e.to_string())?;
    Ok(buf.freeze())
}

/// An API's wire shape for the checked decode (array check, then decode):
/// the topic admin APIs, and Produce, Fetch and ListOffsets, whose nested
/// arrays the crate would otherwise pre-size from the wire. Each handler
/// keeps its own versions and schema and declares one of these.
#[derive(Clone, Copy)]
pub struct CheckedApi {
    pub versions: ApiRange,
    /// First flexible version (KIP-482: compact arrays, tagged fields).
    pub first_flexible: i16,
    /// The request schema [`check_arrays`] walks.
    pub schema: Schema,
}

/// A request schema across an API's versions.
#[derive(Clone, Copy)]
pub enum Schema {
    /// One for every version (fields added later are `Field::Since`).
    Fixed(&'static [Field]),
    /// Chosen per version (for fields that are replaced or dropped).
    PerVersion(fn(i16) -> &'static [Field]),
}

impl Schema {
    pub fn at(&self, version: i16) -> &'static [Field] {
        match self {
            Schema::Fixed(fields) => fields,
            Schema::PerVersion(pick) => pick(version),
        }
    }
}

impl CheckedApi {
    /// Check every array of `body` with this API's schema at `version`,
    /// then decode it with the crate.
    pub fn decode<T: Decodable>(&self, body: Bytes, version: i16) -> Result<T, DecodeError> {
        decode_checked(
            body,
            self.schema.at(version),
            version,
            version >= self.first_flexible,
        )
    }

    /// Test helper: at every version, the schema covers exactly the crate's
    /// encoding of the request `make` builds for that version.
    #[cfg(test)]
    pub fn assert_schema_covers_every_version<T: kafka_protocol::protocol::Encodable>(
        &self,
        make: impl Fn(i16) -> T,
    ) {
        for v in self.versions.min..=self.versions.max {
            assert_schema_covers(&make(v), self.schema.at(v), v, v >= self.first_flexible);
        }
    }
}

/// Test boilerplate every handler with a [`CheckedApi`] shares: a proptest
/// that arbitrary bodies, at every version of `$api`, neither panic the
/// schema walk nor the checked decode into `$request`.
#[cfg(test)]
macro_rules! schema_fuzz_test {
    ($api:expr, $request:ty) => {
        proptest::proptest! {
            #[test]
            fn arbitrary_bodies_never_panic(
                body in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
                v in $api.versions.min..=$api.versions.max,
            ) {
                let api = $api;
                let _ = $crate::protocol::schema::check_arrays(
                    &body,
                    api.schema.at(v),
                    v,
                    v >= api.first_flexible,
                );
                let _ = api.decode::<$request>(bytes::Bytes::from(body), v);
            }
        }
    };
}
#[cfg(test)]
pub(crate) use schema_fuzz_test;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_tagged_field_whose_size_lies_is_refused() {
        use kafka_protocol::messages::FetchRequest;
        let api = crate::server::handlers::fetch::API;
        let v = 17;
        let mut request = FetchRequest::default();
        request.cluster_id = Some("abc".into());
        let body = super::super::encode::encode(&request, v).unwrap();
        // The body ends with the tagged fields: count 1, tag 0 (ClusterId),
        // size 4, then the compact string "abc" (length byte 4).
        let n = body.len();
        assert_eq!(&body[n - 7..], &[1, 0, 4, 4, b'a', b'b', b'c']);
        let r: FetchRequest = api.decode(body.clone(), v).unwrap();
        assert_eq!(r.cluster_id.as_deref(), Some("abc"));
        // Declare 6 bytes and add two: the value still reads "abc".
        let mut lying = body[..n - 5].to_vec();
        lying.extend_from_slice(&[6, 4, b'a', b'b', b'c', b'x', b'y']);
        let refused = api.decode::<FetchRequest>(Bytes::from(lying), v);
        assert!(
            matches!(refused, Err(DecodeError::Malformed(_))),
            "{refused:?}"
        );
        // Bytes after a whole body are ignored as before.
        let mut trailing = body.to_vec();
        trailing.push(9);
        assert!(api.decode::<FetchRequest>(Bytes::from(trailing), v).is_ok());
    }

    const SCHEMA: &[Field] = &[
        Field::Structs(&[Field::Str, INT32, Field::FixedArray(4)]),
        Field::Since(1, &BOOL),
    ];

    #[test]
    fn nested_array_counts_beyond_the_body_are_refused() {
        // (body, version, flexible, ok?)
        let rows: &[(&[u8], i16, bool, bool)] = &[
            // one struct: "a", 7, [1], then validate_only at v1
            (
                &[
                    0, 0, 0, 1, 0, 1, b'a', 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 1, 1,
                ],
                1,
                false,
                true,
            ),
            // the same without the v1 field at v0
            (
                &[0, 0, 0, 1, 0, 1, b'a', 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 1],
                0,
                false,
                true,
            ),
            // the inner array claims 2^31-1 items
            (
                &[
                    0, 0, 0, 1, 0, 1, b'a', 0, 0, 0, 7, 0x7f, 0xff, 0xff, 0xff, 0,
                ],
                0,
                false,
                false,
            ),
            // outer count too large
            (&[0x7f, 0xff, 0xff, 0xff], 0, false, false),
            // flexible: compact arrays/strings and tagged fields
            (
                &[2, 2, b'a', 0, 0, 0, 7, 2, 0, 0, 0, 1, 0, 1, 0],
                1,
                true,
                true,
            ),
            (
                &[2, 2, b'a', 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0x0f],
                1,
                true,
                false,
            ),
            // truncated string
            (&[0, 0, 0, 1, 0, 9, b'a'], 0, false, false),
        ];
        for (body, version, flexible, ok) in rows {
            assert_eq!(
                check_arrays(body, SCHEMA, *version, *flexible).is_ok(),
                *ok,
                "{body:?} v{version} flexible={flexible}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = check_arrays(&body, SCHEMA, 1, false);
            let _ = check_arrays(&body, SCHEMA, 1, true);
        }
    }
}
