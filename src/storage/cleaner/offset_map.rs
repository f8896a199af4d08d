//! `[pure]` The cleaner's offset map: key → the latest offset holding it in
//! the dirty section (Kafka's `SkimpyOffsetMap`).
//!
//! Like Kafka, a key is stored as a fixed-size hash, not as its bytes, so
//! the map's memory is bounded by `log.cleaner.dedupe.buffer.size` whatever
//! the keys look like: Kafka stores an MD5 (16 bytes) plus the offset (8),
//! 24 bytes per entry, and fills the buffer to
//! `log.cleaner.io.buffer.load.factor` (0.9). Here the 128-bit hash is
//! SipHash-1-3 (std's `DefaultHasher`, fixed keys) beside FNV-1a, each 64
//! bits; a collision would make the cleaner drop the older of two records
//! of different keys. Neither half is keyed with a secret, as Kafka's MD5
//! is not. The table itself uses the hash's bits as they are (no second
//! hashing): two SipHash runs plus the table's own took 44% of a clean
//! (perf, `benches/compaction.rs`).
//!
//! When the map is full the cleaner stops mapping there: the dirty section
//! it cleans this round ends at [`OffsetMap::latest_offset`] + 1, and the
//! rest waits for the next round (Kafka's `buildOffsetMap`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hasher};

/// Kafka's `SkimpyOffsetMap` entry: 16-byte hash + 8-byte offset.
pub const BYTES_PER_ENTRY: u64 = 24;
/// `log.cleaner.io.buffer.load.factor` (0.9).
pub const LOAD_FACTOR: f64 = 0.9;

#[derive(Debug, Clone)]
pub struct OffsetMap {
    slots: usize,
    entries: HashMap<u128, i64, BuildHasherDefault<PreHashed>>,
    /// Last offset of the last batch mapped (-1 when none).
    latest_offset: i64,
}

fn key_hash(key: &[u8]) -> u128 {
    let mut sip = DefaultHasher::new();
    sip.write(key);
    // FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3),
    // with the length folded in.
    let mut fnv: u64 = 0xcbf2_9ce4_8422_2325 ^ key.len() as u64;
    for &b in key {
        fnv = (fnv ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (u128::from(sip.finish()) << 64) | u128::from(fnv)
}

/// The table's hasher: the key is already a hash, its top bits are used.
#[derive(Default)]
struct PreHashed(u64);

impl Hasher for PreHashed {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = (v >> 64) as u64;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl OffsetMap {
    /// A map within `memory_bytes` (a shard's share of
    /// `log.cleaner.dedupe.buffer.size`); at least one slot.
    pub fn new(memory_bytes: u64) -> Self {
        let slots = ((memory_bytes / BYTES_PER_ENTRY) as f64 * LOAD_FACTOR) as usize;
        OffsetMap {
            slots: slots.max(1),
            entries: HashMap::default(),
            latest_offset: -1,
        }
    }

    /// Entries the map may hold (Kafka's `maxDesiredMapSize`).
    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Kafka checks `map.size < maxDesiredMapSize` before every put.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.slots
    }

    /// Record that `key` is at `offset` (offsets arrive in log order, so
    /// the last put wins). Returns false, changing nothing, when full.
    pub fn put(&mut self, key: &[u8], offset: i64) -> bool {
        if self.is_full() {
            return false;
        }
        self.entries.insert(key_hash(key), offset);
        true
    }

    /// The latest offset of `key`, or -1 when the dirty section lacks it
    /// (Kafka's `OffsetMap.get`).
    pub fn get(&self, key: &[u8]) -> i64 {
        self.entries.get(&key_hash(key)).copied().unwrap_or(-1)
    }

    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = self.latest_offset.max(offset);
    }

    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Share of the slots in use (Kafka's `utilization`).
    pub fn utilization(&self) -> f64 {
        self.entries.len() as f64 / self.slots as f64
    }

    pub fn check_invariants(&self) {
        assert!(self.entries.len() <= self.slots);
        assert!(self.slots >= 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_put_wins_and_absent_keys_are_minus_one() {
        let mut m = OffsetMap::new(1 << 20);
        assert!(m.put(b"a", 1));
        assert!(m.put(b"b", 2));
        assert!(m.put(b"a", 7));
        m.update_latest_offset(7);
        assert_eq!(m.get(b"a"), 7);
        assert_eq!(m.get(b"b"), 2);
        assert_eq!(m.get(b"zz"), -1);
        assert_eq!(m.len(), 2);
        assert_eq!(m.latest_offset(), 7);
        m.check_invariants();
    }

    #[test]
    fn a_full_map_refuses_puts_like_kafkas_max_desired_map_size() {
        // 100 bytes / 24 = 4 entries * 0.9 = 3 slots.
        let mut m = OffsetMap::new(100);
        assert_eq!(m.slots(), 3);
        assert!(m.put(b"1", 1) && m.put(b"2", 2) && m.put(b"3", 3));
        assert!(m.is_full());
        assert!(!m.put(b"4", 4));
        assert!(!m.put(b"1", 5), "Kafka checks the size before any put");
        assert_eq!(m.get(b"4"), -1);
        assert_eq!(m.get(b"1"), 1);
    }

    #[test]
    fn tiny_memory_still_has_one_slot() {
        assert_eq!(OffsetMap::new(0).slots(), 1);
    }
}
