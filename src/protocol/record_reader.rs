//! `[pure]` Reading the records of Kafka's coordinator logs
//! (`__consumer_offsets`, `__transaction_state`): their keys and values are
//! Kafka generated messages (int16 version, then classic or flexible
//! fields), read here with every length checked against the bytes left, so
//! arbitrary bytes give a [`RecordError`], never a panic or an allocation
//! sized by a forged count.

use super::decode::read_unsigned_varint;

/// A record that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("unknown {what} version {version}")]
    UnknownVersion { what: &'static str, version: i16 },
    #[error("malformed {what}: {reason}")]
    Malformed { what: &'static str, reason: String },
}

/// A bounds-checked reader over one record's bytes, classic or flexible.
pub struct Reader<'a> {
    what: &'static str,
    buf: &'a [u8],
    /// Flexible versions: compact lengths, tagged fields.
    pub flexible: bool,
}

impl<'a> Reader<'a> {
    /// A classic reader of `bytes`; `what` names the record in errors.
    pub fn new(what: &'static str, bytes: &'a [u8]) -> Self {
        Reader {
            what,
            buf: bytes,
            flexible: false,
        }
    }

    pub fn err(&self, reason: impl Into<String>) -> RecordError {
        RecordError::Malformed {
            what: self.what,
            reason: reason.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        if n > self.buf.len() {
            return Err(self.err(format!("needs {n} bytes, {} left", self.buf.len())));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RecordError> {
        let b = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    pub fn i8(&mut self) -> Result<i8, RecordError> {
        self.array().map(i8::from_be_bytes)
    }
    pub fn i16(&mut self) -> Result<i16, RecordError> {
        self.array().map(i16::from_be_bytes)
    }
    pub fn i32(&mut self) -> Result<i32, RecordError> {
        self.array().map(i32::from_be_bytes)
    }
    pub fn i64(&mut self) -> Result<i64, RecordError> {
        self.array().map(i64::from_be_bytes)
    }

    fn varint(&mut self) -> Result<u32, RecordError> {
        let (v, used) =
            read_unsigned_varint(self.buf).ok_or_else(|| self.err("bad unsigned varint"))?;
        self.take(used)?;
        Ok(v)
    }

    /// A length or count: int16 (strings) or int32 (`wide`: arrays, bytes)
    /// in classic versions, where -1 is null; compact length+1 in flexible
    /// ones, where 0 is null. Other negative lengths are malformed.
    fn length(&mut self, wide: bool) -> Result<Option<usize>, RecordError> {
        let len: i64 = if self.flexible {
            i64::from(self.varint()?) - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        match len {
            -1 => Ok(None),
            n if n < 0 => Err(self.err(format!("negative length {n}"))),
            n => usize::try_from(n)
                .map(Some)
                .map_err(|_| self.err("length overflows")),
        }
    }

    pub fn nullable_string(&mut self) -> Result<Option<String>, RecordError> {
        match self.length(false)? {
            None => Ok(None),
            Some(n) => {
                let b = self.take(n)?;
                String::from_utf8(b.to_vec())
                    .map(Some)
                    .map_err(|_| self.err("string is not UTF-8"))
            }
        }
    }

    /// A non-nullable STRING; `field` names it in the error when null.
    pub fn string(&mut self, field: &str) -> Result<String, RecordError> {
        self.nullable_string()?
            .ok_or_else(|| self.err(format!("{field} is null")))
    }

    /// BYTES; null reads as empty.
    pub fn bytes(&mut self) -> Result<Vec<u8>, RecordError> {
        match self.length(true)? {
            None => Ok(Vec::new()),
            Some(n) => self.take(n).map(<[u8]>::to_vec),
        }
    }

    /// A nullable array's count, refused when `count × min_element` cannot
    /// fit the bytes left, so a forged count never sizes an allocation.
    pub fn nullable_count(&mut self, min_element: usize) -> Result<Option<usize>, RecordError> {
        let n = self.length(true)?;
        if let Some(n) = n {
            if n.saturating_mul(min_element) > self.buf.len() {
                let left = self.buf.len();
                return Err(self.err(format!("{n} elements cannot fit {left} bytes")));
            }
        }
        Ok(n)
    }

    /// An array's count, a null array reading as empty.
    pub fn count(&mut self, min_element: usize) -> Result<usize, RecordError> {
        Ok(self.nullable_count(min_element)?.unwrap_or(0))
    }

    /// A flexible struct's tagged fields: none are known, all are skipped.
    pub fn tagged_fields(&mut self) -> Result<(), RecordError> {
        if !self.flexible {
            return Ok(());
        }
        let n = self.varint()?;
        for _ in 0..n {
            let _tag = self.varint()?;
            let size = self.varint()?;
            let size = usize::try_from(size).map_err(|_| self.err("tag size overflows"))?;
            self.take(size)?;
        }
        Ok(())
    }

    /// Nothing may follow the record.
    pub fn finish(&self) -> Result<(), RecordError> {
        match self.buf.len() {
            0 => Ok(()),
            n => Err(self.err(format!("{n} bytes after the record"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked_against_the_bytes_left() {
        // A classic string of length 5 with 2 bytes left.
        let mut r = Reader::new("x", &[0, 5, b'a', b'b']);
        assert!(matches!(r.string("s"), Err(RecordError::Malformed { .. })));
        // A compact array of 1,000 int32s with no bytes left.
        let mut r = Reader::new("x", &[0xe9, 0x07]);
        r.flexible = true;
        assert!(r.count(4).is_err());
        // Null where a string is required; a null array reads as empty.
        let mut r = Reader::new("x", &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            r.string("s").unwrap_err().to_string(),
            "malformed x: s is null"
        );
        assert_eq!(r.count(4), Ok(0));
        r.finish().unwrap();
    }
}
