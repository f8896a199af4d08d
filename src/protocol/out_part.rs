//! `[data]` One piece of an outgoing response frame: encoded bytes, a
//! segment file region, or bytes made while the frame is written (a
//! length known up front, chunks pulled one at a time: Kafka's lazy
//! down-conversion, KIP-283). The protocol builds responses of them (a
//! fetch's records are the log's regions, `fetch_response`);
//! `io::zerocopy` sends them (`sendmsg` of the bytes, `sendfile` of the
//! regions).
//!
//! Not marked pure: a region names the segment's open file (`Arc<File>`, the
//! same handle the log's retention counts to see whether a fetch still
//! reads it). Nothing here does I/O, so the pure modules that carry parts
//! (`fetch_response`) import nothing from `io`.

use std::fs::File;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// One piece of an outgoing response frame.
#[derive(Debug, Clone)]
pub enum OutPart {
    /// Encoded header bytes or cached record batches (refcounted, not copied).
    Bytes(Bytes),
    /// A region of a segment file, sent with `sendfile` from the page cache.
    File {
        file: Arc<File>,
        position: u64,
        len: usize,
    },
    /// Bytes produced while the frame is written, [`LazyPart::len`] of them.
    Lazy(LazyPart),
}

/// What a [`LazyPart`] pulls its bytes from.
pub trait ChunkSource: Send {
    /// The next chunk (never empty), `None` once every byte was given.
    fn next_chunk(&mut self) -> std::io::Result<Option<Bytes>>;
    /// What making the chunks took so far, for a conversion (Kafka's
    /// `RecordConversionStats`): nothing by default.
    fn stats(&self) -> ChunkStats {
        ChunkStats::default()
    }
}

/// [`ChunkSource::stats`]: records converted, the time it took (ns) and
/// the memory it used beyond the records read (bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkStats {
    pub records: u64,
    pub ns: u64,
    pub temporary_bytes: u64,
}

/// A part whose `len` bytes are made as they are sent, so that no buffer
/// holds all of them (Kafka's `LazyDownConversionRecordsSend`). Clones
/// share the one source: the part is meant to be written once.
#[derive(Clone)]
pub struct LazyPart {
    len: usize,
    source: Arc<Mutex<LazyState>>,
}

struct LazyState {
    given: usize,
    source: Box<dyn ChunkSource>,
}

impl LazyPart {
    pub fn new(len: usize, source: Box<dyn ChunkSource>) -> Self {
        Self {
            len,
            source: Arc::new(Mutex::new(LazyState { given: 0, source })),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its source's [`ChunkSource::stats`] (nothing if a write panicked
    /// while it made a chunk).
    pub fn stats(&self) -> ChunkStats {
        self.source
            .lock()
            .map(|state| state.source.stats())
            .unwrap_or_default()
    }

    /// The next chunk, cut to the bytes still owed; `None` once `len` were
    /// given. A source that ends early is an error: the frame's length
    /// fields already promised its bytes.
    pub fn next_chunk(&self) -> std::io::Result<Option<Bytes>> {
        let mut state = self
            .source
            .lock()
            .map_err(|_| std::io::Error::other("lazy part poisoned"))?;
        let owed = self.len - state.given;
        if owed == 0 {
            return Ok(None);
        }
        match state.source.next_chunk()? {
            Some(chunk) if !chunk.is_empty() => {
                let chunk = chunk.slice(..chunk.len().min(owed));
                state.given += chunk.len();
                Ok(Some(chunk))
            }
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("a lazy part ended {owed} bytes short"),
            )),
        }
    }
}

impl std::fmt::Debug for LazyPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyPart").field("len", &self.len).finish()
    }
}

/// Equal bytes, the same range of the same open file, or the same lazy part.
impl PartialEq for OutPart {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (OutPart::Bytes(a), OutPart::Bytes(b)) => a == b,
            (
                OutPart::File {
                    file: fa,
                    position: pa,
                    len: la,
                },
                OutPart::File {
                    file: fb,
                    position: pb,
                    len: lb,
                },
            ) => Arc::ptr_eq(fa, fb) && pa == pb && la == lb,
            (OutPart::Lazy(a), OutPart::Lazy(b)) => Arc::ptr_eq(&a.source, &b.source),
            _ => false,
        }
    }
}

impl OutPart {
    pub fn len(&self) -> usize {
        match self {
            OutPart::Bytes(b) => b.len(),
            OutPart::File { len, .. } => *len,
            OutPart::Lazy(lazy) => lazy.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
