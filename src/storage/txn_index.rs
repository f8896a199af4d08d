//! The aborted-transaction index (`<base>.txnindex` beside each segment;
//! KIP-98, Kafka's `TransactionIndex` / `AbortedTxn`): a read_committed Fetch returns, with its records, the aborted
//! transactions whose data it may contain, and the client drops their
//! records.
//!
//! An entry is written when an ABORT marker is appended, into the file of
//! the segment holding the marker. Kafka's layout, 34 bytes big-endian:
//! `version i16 (0), producer_id i64, first_offset i64, last_offset i64
//! (the marker's offset), last_stable_offset i64` (the LSO once the
//! transaction was aborted). A torn tail (a crash mid-write) is ignored on
//! load, and producer-state recovery appends again any entry it finds
//! missing ([`TxnIndex::add`] skips entries already present).
//!
//! The log cleaner writes a new file for each segment it cleans, holding
//! only the aborted transactions whose ABORT marker it kept (Kafka's
//! `CleanedTransactionMetadata.cleanedIndex`), and swaps it in with the
//! segment; [`TxnIndex::replace_segments`] then brings memory in line.
//!
//! The pure parts (entry codec, [`AbortedIndex`]: which entries a fetch
//! range needs, truncation) are separate from the file writes
//! ([`TxnIndex`]), which are small buffered appends made only on aborts.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{segment_file_name, StorageError};

pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
/// Bytes of one entry (Kafka's `AbortedTxn.TOTAL_SIZE`).
pub const ENTRY_LEN: usize = 34;
const VERSION: i16 = 0;

/// One aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of its ABORT marker.
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut out = [0u8; ENTRY_LEN];
        out[0..2].copy_from_slice(&VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    /// Entries of a file; stops at a torn tail or an unknown version
    /// (Kafka's `TransactionIndex` refuses unknown versions; a file we
    /// cannot read is rebuilt by recovery rather than failing the log).
    pub fn decode_all(bytes: &[u8]) -> Vec<AbortedTxn> {
        let i64_at = |e: &[u8], at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&e[at..at + 8]);
            i64::from_be_bytes(a)
        };
        let mut out = Vec::with_capacity(bytes.len() / ENTRY_LEN);
        for e in bytes.chunks_exact(ENTRY_LEN) {
            if i16::from_be_bytes([e[0], e[1]]) != VERSION {
                break;
            }
            out.push(AbortedTxn {
                producer_id: i64_at(e, 2),
                first_offset: i64_at(e, 10),
                last_offset: i64_at(e, 18),
                last_stable_offset: i64_at(e, 26),
            });
        }
        out
    }
}

/// `[pure]` The aborted transactions of a partition by segment base
/// offset, in append order within a segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbortedIndex {
    by_segment: BTreeMap<i64, Vec<AbortedTxn>>,
}

impl AbortedIndex {
    /// Adds `entry` to `segment`'s list unless an equal entry is there
    /// (recovery replays markers already indexed). Returns whether added.
    pub fn add(&mut self, segment: i64, entry: AbortedTxn) -> bool {
        let list = self.by_segment.entry(segment).or_default();
        if list.contains(&entry) {
            return false;
        }
        list.push(entry);
        true
    }

    pub fn len(&self) -> usize {
        self.by_segment.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry, in segment then append order.
    pub fn all(&self) -> Vec<AbortedTxn> {
        self.by_segment.values().flatten().copied().collect()
    }

    pub fn entries_of(&self, segment: i64) -> &[AbortedTxn] {
        self.by_segment.get(&segment).map_or(&[], Vec::as_slice)
    }

    /// The aborted transactions a read of `[from, upper)` may hold data
    /// of, as `(producer_id, first_offset)` in index order: Kafka's
    /// `collectAbortedTransactions` — every entry whose range overlaps
    /// (`last_offset >= from && first_offset < upper`), searching segments
    /// from the one holding `from` on. Earlier segments may also hold
    /// entries of long transactions that started before `from`, so every
    /// segment is searched; the lists are short (aborts only).
    pub fn collect(&self, from: i64, upper: i64) -> Vec<(i64, i64)> {
        self.by_segment
            .values()
            .flatten()
            .filter(|e| e.last_offset >= from && e.first_offset < upper)
            .map(|e| (e.producer_id, e.first_offset))
            .collect()
    }

    /// Drops entries whose marker lies at or past `offset` (log
    /// truncation; Kafka's `TransactionIndex.truncateTo`). Returns the
    /// segments whose lists changed.
    pub fn truncate_to(&mut self, offset: i64) -> Vec<i64> {
        let mut changed = Vec::new();
        for (base, list) in &mut self.by_segment {
            let before = list.len();
            list.retain(|e| e.last_offset < offset);
            if list.len() != before {
                changed.push(*base);
            }
        }
        self.by_segment.retain(|_, l| !l.is_empty());
        changed
    }

    /// Forgets segments that are gone (retention, DeleteRecords, a full
    /// truncation): every base offset not in `live`.
    pub fn retain_segments(&mut self, live: &[i64]) {
        self.by_segment
            .retain(|base, _| live.binary_search(base).is_ok());
    }

    /// The log cleaner swapped one segment at `base` in for the segments
    /// at `old`: their entries go, `entries` (the cleaned segment's whole
    /// index) come.
    pub fn replace_segments(&mut self, old: &[i64], base: i64, entries: Vec<AbortedTxn>) {
        for b in old {
            self.by_segment.remove(b);
        }
        self.by_segment.remove(&base);
        if !entries.is_empty() {
            self.by_segment.insert(base, entries);
        }
    }
}

/// The index with its files in a partition's directory.
#[derive(Debug, Clone)]
pub struct TxnIndex {
    dir: PathBuf,
    index: AbortedIndex,
}

fn path_of(dir: &Path, segment: i64) -> PathBuf {
    dir.join(segment_file_name(segment, TXN_INDEX_SUFFIX))
}

impl TxnIndex {
    /// Loads the files of `segments` (the log's segment base offsets).
    pub fn load(dir: &Path, segments: &[i64]) -> Result<Self, StorageError> {
        let mut index = AbortedIndex::default();
        for &base in segments {
            match std::fs::read(path_of(dir, base)) {
                Ok(bytes) => {
                    for e in AbortedTxn::decode_all(&bytes) {
                        index.add(base, e);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            index,
        })
    }

    pub fn index(&self) -> &AbortedIndex {
        &self.index
    }

    /// Adds an entry and appends it to `segment`'s file (unless present).
    pub fn add(&mut self, segment: i64, entry: AbortedTxn) -> Result<(), StorageError> {
        if !self.index.add(segment, entry) {
            return Ok(());
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path_of(&self.dir, segment))?;
        f.write_all(&entry.encode())?;
        Ok(())
    }

    /// Truncation: entries at or past `offset` leave memory and files.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), StorageError> {
        for base in self.index.truncate_to(offset) {
            let bytes: Vec<u8> = self
                .index
                .entries_of(base)
                .iter()
                .flat_map(AbortedTxn::encode)
                .collect();
            let path = path_of(&self.dir, base);
            if bytes.is_empty() {
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                    _ => {}
                }
            } else {
                std::fs::write(&path, bytes)?;
            }
        }
        Ok(())
    }

    /// Forget segments no longer in the log (their files went with them).
    pub fn retain_segments(&mut self, live: &[i64]) {
        self.index.retain_segments(live);
    }

    /// The log cleaner swapped the segment at `base`, with its index file,
    /// in for the segments at `old` (see [`AbortedIndex::replace_segments`]).
    pub fn replace_segments(&mut self, old: &[i64], base: i64, entries: Vec<AbortedTxn>) {
        self.index.replace_segments(old, base, entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn an_entry_is_kafkas_34_bytes() {
        let e = txn(0x0102, 5, 9, 10);
        let b = e.encode();
        let mut want = vec![0, 0];
        want.extend_from_slice(&0x0102i64.to_be_bytes());
        want.extend_from_slice(&5i64.to_be_bytes());
        want.extend_from_slice(&9i64.to_be_bytes());
        want.extend_from_slice(&10i64.to_be_bytes());
        assert_eq!(b.to_vec(), want);
        assert_eq!(AbortedTxn::decode_all(&b), vec![e]);
    }

    #[test]
    fn a_torn_tail_and_an_unknown_version_end_the_file() {
        let mut bytes = txn(1, 0, 3, 4).encode().to_vec();
        bytes.extend_from_slice(&txn(2, 5, 8, 9).encode()[..20]);
        assert_eq!(AbortedTxn::decode_all(&bytes), vec![txn(1, 0, 3, 4)]);
        let mut v1 = txn(3, 0, 1, 2).encode();
        v1[1] = 1;
        let mut bytes = txn(1, 0, 3, 4).encode().to_vec();
        bytes.extend_from_slice(&v1);
        assert_eq!(AbortedTxn::decode_all(&bytes).len(), 1);
    }

    #[test]
    fn collect_returns_the_entries_overlapping_the_range() {
        let mut ix = AbortedIndex::default();
        ix.add(0, txn(1, 0, 10, 11));
        ix.add(0, txn(2, 5, 30, 31));
        ix.add(20, txn(3, 22, 25, 26));
        ix.add(40, txn(4, 41, 45, 46));
        // (from, upper) → expected producer ids
        let rows = [
            ((0, 5), vec![1]),
            ((0, 6), vec![1, 2]),
            ((11, 22), vec![2]),
            ((11, 23), vec![2, 3]),
            ((26, 41), vec![2]),
            ((31, 100), vec![4]),
            ((46, 100), vec![]),
        ];
        for ((from, upper), want) in rows {
            let got: Vec<i64> = ix.collect(from, upper).iter().map(|p| p.0).collect();
            assert_eq!(got, want, "collect({from}, {upper})");
        }
    }

    #[test]
    fn adding_twice_keeps_one_entry() {
        let mut ix = AbortedIndex::default();
        assert!(ix.add(0, txn(1, 0, 3, 4)));
        assert!(!ix.add(0, txn(1, 0, 3, 4)));
        assert_eq!(ix.len(), 1);
    }

    #[test]
    fn truncation_and_deleted_segments_drop_entries() {
        let mut ix = AbortedIndex::default();
        ix.add(0, txn(1, 0, 3, 4));
        ix.add(0, txn(2, 1, 8, 9));
        ix.add(10, txn(3, 10, 12, 13));
        assert_eq!(ix.truncate_to(8), vec![0, 10]);
        assert_eq!(ix.entries_of(0), &[txn(1, 0, 3, 4)]);
        assert!(ix.entries_of(10).is_empty());
        ix.add(10, txn(3, 10, 12, 13));
        ix.retain_segments(&[10]);
        assert_eq!(ix.len(), 1);
        assert!(ix.entries_of(0).is_empty());
    }

    #[test]
    fn a_cleaned_segment_replaces_the_entries_of_the_segments_it_was_made_from() {
        let mut ix = AbortedIndex::default();
        ix.add(0, txn(1, 0, 3, 4));
        ix.add(10, txn(2, 8, 12, 13));
        ix.add(10, txn(3, 11, 14, 15));
        ix.add(20, txn(4, 21, 22, 23));
        // Segments 0 and 10 cleaned into 0; producer 2's abort stays (its
        // data was still there), the others' went with their markers.
        ix.replace_segments(&[0, 10], 0, vec![txn(2, 8, 12, 13)]);
        assert_eq!(ix.all(), vec![txn(2, 8, 12, 13), txn(4, 21, 22, 23)]);
        assert!(ix.entries_of(10).is_empty());
        ix.replace_segments(&[0], 0, Vec::new());
        assert_eq!(ix.all(), vec![txn(4, 21, 22, 23)]);
        assert_eq!(ix.collect(0, 20), vec![]);
    }

    #[test]
    fn files_survive_a_reload_and_truncation_rewrites_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut ix = TxnIndex::load(dir.path(), &[0, 10]).unwrap();
        ix.add(0, txn(1, 0, 3, 4)).unwrap();
        ix.add(0, txn(2, 1, 8, 9)).unwrap();
        ix.add(10, txn(3, 10, 12, 13)).unwrap();
        ix.add(10, txn(3, 10, 12, 13)).unwrap();
        let again = TxnIndex::load(dir.path(), &[0, 10]).unwrap();
        assert_eq!(again.index(), ix.index());
        assert_eq!(again.index().len(), 3);
        ix.truncate_to(8).unwrap();
        let again = TxnIndex::load(dir.path(), &[0, 10]).unwrap();
        assert_eq!(again.index().entries_of(0), &[txn(1, 0, 3, 4)]);
        assert!(!dir
            .path()
            .join(segment_file_name(10, TXN_INDEX_SUFFIX))
            .exists());
    }
}
