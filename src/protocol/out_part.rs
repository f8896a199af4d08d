//! `[data]` One piece of an outgoing response frame: encoded bytes or a
//! segment file region. The protocol builds responses of them (a fetch's
//! records are the log's regions, `fetch_response`); `io::zerocopy`
//! sends them (`sendmsg` of the bytes, `sendfile` of the regions).
//!
//! Not marked pure: a region names the segment's open file (`Arc<File>`, the
//! same handle the log's retention counts to see whether a fetch still
//! reads it). Nothing here does I/O, so the pure modules that carry parts
//! (`fetch_response`) import nothing from `io`.

use std::fs::File;
use std::sync::Arc;

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
}

/// Equal bytes, or the same range of the same open file.
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
            _ => false,
        }
    }
}

impl OutPart {
    pub fn len(&self) -> usize {
        match self {
            OutPart::Bytes(b) => b.len(),
            OutPart::File { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
