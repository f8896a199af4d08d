//! `[pure]` Lazy, chunked down-conversion (KIP-283), as Kafka 3.9 answers
//! Fetch v0–v3 (`LazyDownConversionRecords`, `LazyDownConversionRecordsSend`):
//! - the partition's records field is declared before anything is sent:
//!   the size of the stored data read, or of its first converted entry if
//!   that is larger (so at least one whole converted entry fits); when no
//!   entry converts to anything, one overflow header
//!   (`MIN_OVERFLOW_MESSAGE_LENGTH`, 12 bytes), and nothing at all when
//!   the read held no whole entry;
//! - while the frame is written, the stored entries are converted a
//!   group at a time (whole entries, at most `MAX_READ_SIZE` = 128 KiB of
//!   source, at least one) and sent, cut at the declared size: a
//!   conversion that grew past it ends in a partial message;
//! - what the declared size has left once the source is used up (or a
//!   group fails to convert, zstd) is filled with overflow messages:
//!   offset -1, a length one past what is left, zeros. Old clients drop
//!   them as a partial trailing message.
//!
//! One deliberate difference: Kafka finds the first converted entry by
//! converting entries one at a time, then restarts the send one entry
//! further on, so when the read starts with entries that convert to
//! nothing (control batches) the entries after them are sent twice. Here
//! the send goes on after the entry that gave the first conversion.

use bytes::{BufMut, Bytes, BytesMut};

use super::down::{convert_group_counted, Converted, DownConvertError};
use super::{LOG_OVERHEAD, RECORD_OVERHEAD_V0};
use crate::protocol::record_walk::InflateScratch;

/// Source bytes converted per group (`LazyDownConversionRecordsSend.MAX_READ_SIZE`).
pub const MAX_READ_SIZE: usize = 128 << 10;
/// `DefaultRecordBatch.RECORD_BATCH_OVERHEAD`: an overflow message's
/// length field is at least this.
const RECORD_BATCH_OVERHEAD: usize = 61;

/// The stored entries a fetch read: `read(from, len)` gives bytes
/// `from..from + len` of them.
pub trait Source {
    type Error;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn read(&mut self, from: usize, len: usize) -> Result<Bytes, Self::Error>;
}

/// Why a conversion did not start.
#[derive(Debug, PartialEq, Eq)]
pub enum StartError<E> {
    /// An entry before the first one that converts is zstd-compressed:
    /// UNSUPPORTED_COMPRESSION_TYPE for the partition.
    Zstd,
    Read(E),
}

/// One partition's down-conversion, pulled a chunk at a time.
pub struct LazyDownConversion<S> {
    source: S,
    to_magic: i8,
    fetch_offset: i64,
    /// Source bytes already converted.
    cursor: usize,
    /// No more entries to convert (used up, cut short, or a failed group).
    source_done: bool,
    /// Whether the read held a whole entry.
    any_entry: bool,
    /// The first converted entry, converted to learn the declared size.
    first: Option<Bytes>,
    declared: usize,
    remaining: usize,
    scratch: InflateScratch,
    /// What the conversions so far took.
    converted: Converted,
}

impl<S: Source> LazyDownConversion<S> {
    /// Kafka's `LazyDownConversionRecords` constructor: entries are
    /// converted one at a time until one gives messages.
    pub fn start(source: S, to_magic: i8, fetch_offset: i64) -> Result<Self, StartError<S::Error>> {
        let mut me = Self {
            source,
            to_magic,
            fetch_offset,
            cursor: 0,
            source_done: false,
            any_entry: false,
            first: None,
            declared: 0,
            remaining: 0,
            scratch: InflateScratch::default(),
            converted: Converted::default(),
        };
        while let Some(entry) = me.next_group(0).map_err(StartError::Read)? {
            let at = (to_magic, fetch_offset);
            match convert_group_counted(&entry, at, &mut me.scratch, &mut me.converted) {
                Ok(converted) if converted.is_empty() => {}
                Ok(converted) => {
                    me.first = Some(Bytes::from(converted));
                    break;
                }
                Err(DownConvertError::Zstd) => return Err(StartError::Zstd),
                Err(DownConvertError::Batch(_)) => {
                    me.source_done = true;
                    break;
                }
            }
        }
        me.declared = match &me.first {
            Some(first) => me.source.len().max(first.len()),
            None if me.any_entry => LOG_OVERHEAD,
            None => 0,
        };
        me.remaining = me.declared;
        Ok(me)
    }

    /// The size the records field declares; exactly this many bytes come
    /// out of [`LazyDownConversion::next_chunk`].
    pub fn declared_len(&self) -> usize {
        self.declared
    }

    /// What the conversions so far took (records rebuilt, memory used).
    pub fn converted(&self) -> Converted {
        self.converted
    }

    /// The next bytes to send (never empty), `None` once the declared size
    /// was given.
    pub fn next_chunk(&mut self) -> Result<Option<Bytes>, S::Error> {
        if self.remaining == 0 {
            return Ok(None);
        }
        let chunk = match self.first.take() {
            Some(first) => first,
            None => match self.next_converted()? {
                Some(converted) => converted,
                None => overflow(self.remaining),
            },
        };
        let chunk = chunk.slice(..chunk.len().min(self.remaining));
        self.remaining -= chunk.len();
        Ok(Some(chunk))
    }

    /// The next group that converts to something; `None` when the source
    /// is used up or a group fails (`LazyDownConversionRecordsSend` sends
    /// overflow for the rest then: the client's next fetch, starting at
    /// the failed entry, gets its error).
    fn next_converted(&mut self) -> Result<Option<Bytes>, S::Error> {
        while let Some(group) = self.next_group(MAX_READ_SIZE)? {
            let at = (self.to_magic, self.fetch_offset);
            match convert_group_counted(&group, at, &mut self.scratch, &mut self.converted) {
                Ok(converted) if converted.is_empty() => {}
                Ok(converted) => return Ok(Some(Bytes::from(converted))),
                Err(_) => {
                    self.source_done = true;
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }

    /// The whole entries of the next group: as many as fit in `max` source
    /// bytes, at least one. `None` when no whole entry is left (a trailing
    /// partial one, as a size-capped read ends, is never converted).
    fn next_group(&mut self, max: usize) -> Result<Option<Bytes>, S::Error> {
        let left = self.source.len().saturating_sub(self.cursor);
        if self.source_done || left < LOG_OVERHEAD {
            self.source_done = true;
            return Ok(None);
        }
        let window = self
            .source
            .read(self.cursor, left.min(max.max(LOG_OVERHEAD)))?;
        let mut end = 0usize;
        while let Some(len) = entry_len(&window[end..]) {
            if end + len > window.len() {
                break;
            }
            end += len;
        }
        let group = if end > 0 {
            window.slice(..end)
        } else {
            match entry_len(&window) {
                Some(len) if len <= left => self.source.read(self.cursor, len)?,
                _ => {
                    self.source_done = true;
                    return Ok(None);
                }
            }
        };
        self.cursor += group.len();
        self.any_entry = true;
        Ok(Some(group))
    }
}

/// The length of the entry `head` starts with (its 12-byte header read),
/// `None` without a whole header or with a size below any message's.
fn entry_len(head: &[u8]) -> Option<usize> {
    let size = i32::from_be_bytes(head.get(8..12)?.try_into().ok()?);
    let size = usize::try_from(size).ok()?;
    (size >= RECORD_OVERHEAD_V0).then_some(LOG_OVERHEAD + size)
}

/// `LazyDownConversionRecordsSend.buildOverflowBatch`: offset -1, a
/// length past what is left (at least a batch header's), zeros; at most
/// `MAX_READ_SIZE` bytes at a time (the caller cuts it to what is left).
fn overflow(remaining: usize) -> Bytes {
    let len = (remaining + 1).clamp(LOG_OVERHEAD, MAX_READ_SIZE);
    let mut buf = BytesMut::with_capacity(len);
    buf.put_i64(-1);
    let field = (remaining + 1).max(RECORD_BATCH_OVERHEAD);
    buf.put_i32(i32::try_from(field).unwrap_or(i32::MAX));
    buf.resize(len, 0);
    buf.freeze()
}

#[cfg(test)]
mod tests;
