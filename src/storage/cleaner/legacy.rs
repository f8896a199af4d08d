//! `[pure]` Compaction of legacy (magic 0/1) messages, as Kafka 3.9's
//! `LogCleaner` treats the entries of a log written with an old
//! `log.message.format.version` (`MemoryRecords.filterTo`,
//! `buildRetainedRecordsInto`, `Cleaner.shouldRetainRecord`):
//! - a legacy entry keeps its magic: a plain message is kept as it is or
//!   dropped; a compressed wrapper whose every inner message is kept stays
//!   as it is, one with some kept is rebuilt at the same magic and codec
//!   (`MemoryRecordsBuilder`: inner v1 offsets relative to the first kept
//!   one, the wrapper's offset the last kept one, the timestamp type kept,
//!   a LogAppendTime wrapper's time kept), one with none kept goes;
//! - a message is kept when past the offset map's latest offset, or keyed
//!   and at least the map's offset for its key; an unkeyed one goes.
//!
//! One difference from Kafka: a legacy tombstone (null value) is kept as
//! long as it is its key's latest. Kafka drops legacy tombstones once the
//! segment holding them was last modified before the cleaned section's
//! end minus `delete.retention.ms` (`retainLegacyDeletesAndTxnMarkers`,
//! file mtimes); shardlog's cleaner does not read segment mtimes, so such
//! a tombstone stays (it still hides its key's older values).

use bytes::Bytes;

use super::filter::RetainRules;
use super::offset_map::OffsetMap;
use crate::protocol::legacy::{write_message_set, LegacyFormat, Message, OutRecord, LOG_OVERHEAD};
use crate::protocol::record_batch::{BatchError, TimestampType};
use crate::protocol::record_walk::InflateScratch;

/// The messages of the legacy `entry` (offset, size and message): the
/// message itself, or a wrapper's inner messages with absolute offsets.
/// Also returns the parsed entry message.
pub fn messages_of(
    entry: &[u8],
    scratch: &mut InflateScratch,
) -> Result<(Message, Vec<Message>), BatchError> {
    let offset_field = entry
        .get(..8)
        .ok_or(BatchError::Corrupt("legacy entry shorter than its offset"))?;
    let offset = i64::from_be_bytes(
        offset_field
            .try_into()
            .map_err(|_| BatchError::Corrupt("legacy entry offset"))?,
    );
    let body = Bytes::copy_from_slice(entry.get(LOG_OVERHEAD..).ok_or(BatchError::Corrupt(
        "legacy entry shorter than its overhead",
    ))?);
    let message = Message::parse(offset, &body)?;
    let inner = if message.is_compressed() {
        message.inner_messages(scratch)?
    } else {
        vec![message.clone()]
    };
    Ok((message, inner))
}

/// Kafka's `buildOffsetMap` over one legacy entry: each keyed message at
/// or past `start` goes into `map`. `false` when the map filled up (the
/// caller ends the dirty section there).
pub fn map_entry(
    entry: &[u8],
    start: i64,
    map: &mut OffsetMap,
    scratch: &mut InflateScratch,
) -> Result<bool, BatchError> {
    let (_, messages) = messages_of(entry, scratch)?;
    for m in messages.iter().filter(|m| m.offset >= start) {
        if let Some(key) = &m.key {
            if !map.put(key, m.offset) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// A legacy entry cleaned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanedEntry {
    /// The bytes to write; `None` when nothing is kept.
    pub bytes: Option<Vec<u8>>,
    /// The written entry's timestamp (v1), -1 for v0 or when dropped.
    pub max_timestamp: i64,
    pub records_read: u64,
    pub records_kept: u64,
}

/// Kafka's `shouldRetainRecord` for a legacy message (tombstones: see the
/// module docs).
fn retain(rules: &RetainRules<'_>, m: &Message) -> bool {
    if m.offset > rules.map.latest_offset() {
        return true;
    }
    m.key
        .as_ref()
        .is_some_and(|key| m.offset >= rules.map.get(key))
}

/// Cleans the legacy `entry` (see the module docs).
pub fn clean_entry(
    entry: &[u8],
    rules: &RetainRules<'_>,
    scratch: &mut InflateScratch,
) -> Result<CleanedEntry, BatchError> {
    let (outer, messages) = messages_of(entry, scratch)?;
    let kept: Vec<&Message> = messages.iter().filter(|m| retain(rules, m)).collect();
    let mut out = CleanedEntry {
        bytes: None,
        max_timestamp: -1,
        records_read: messages.len() as u64,
        records_kept: kept.len() as u64,
    };
    let Some(first) = kept.first() else {
        return Ok(out);
    };
    out.max_timestamp = if outer.magic == 0 {
        -1
    } else {
        outer.timestamp
    };
    if kept.len() == messages.len() {
        out.bytes = Some(entry.to_vec());
        return Ok(out);
    }
    let compression = outer
        .compression()
        .ok_or(BatchError::InvalidRecord("unknown compression codec"))?;
    let timestamp_type = outer.timestamp_type.unwrap_or(TimestampType::CreateTime);
    let format = LegacyFormat {
        magic: outer.magic,
        compression,
        timestamp_type,
        log_append_time: outer.timestamp,
        base_offset: first.offset,
    };
    let records: Vec<OutRecord<'_>> = kept
        .iter()
        .map(|m| OutRecord {
            offset: m.offset,
            timestamp: m.timestamp,
            key: m.key.as_deref(),
            value: m.value.as_deref(),
        })
        .collect();
    if outer.magic != 0 && timestamp_type == TimestampType::CreateTime {
        out.max_timestamp = records.iter().map(|r| r.timestamp).max().unwrap_or(-1);
    }
    let mut bytes = Vec::new();
    write_message_set(&mut bytes, format, &records)?;
    out.bytes = Some(bytes);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::Compression;
    use crate::storage::recovery::{scan, ScanStop};
    use std::collections::BTreeMap;

    /// (offset, key, value) of a record to write.
    type In = (i64, &'static [u8], Option<&'static [u8]>);
    /// (offset, key, value, magic) of a record read back.
    type Out = (i64, Vec<u8>, Option<Vec<u8>>, i8);

    fn entry(magic: i8, c: Compression, recs: &[In]) -> Vec<u8> {
        let records: Vec<OutRecord<'_>> = recs
            .iter()
            .map(|&(offset, key, value)| OutRecord {
                offset,
                timestamp: 1_000 + offset,
                key: Some(key),
                value,
            })
            .collect();
        let mut out = Vec::new();
        let format = LegacyFormat {
            magic,
            compression: c,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: -1,
            base_offset: recs[0].0,
        };
        write_message_set(&mut out, format, &records).unwrap();
        out
    }

    fn read_back(log: &[u8]) -> Vec<Out> {
        let (mut next, mut found) = (0, Vec::new());
        let r = scan(log, 0, &mut next, 1 << 20, true, &mut found);
        assert_eq!(
            r.stop,
            ScanStop::NeedMore { needed: 12 },
            "the cleaned log recovers whole"
        );
        let mut scratch = InflateScratch::default();
        let mut out = Vec::new();
        for b in found {
            let e = &log[b.position as usize..(b.position + b.len) as usize];
            let (outer, ms) = messages_of(e, &mut scratch).unwrap();
            assert_eq!(
                b.last_offset,
                ms.last().unwrap().offset,
                "wrapper offset = last inner"
            );
            for m in ms {
                out.push((
                    m.offset,
                    m.key.unwrap().to_vec(),
                    m.value.map(|v| v.to_vec()),
                    outer.magic,
                ));
            }
        }
        out
    }

    #[test]
    fn latest_value_per_key_survives_with_magic_and_codec_kept() {
        for magic in [0i8, 1] {
            for c in [
                Compression::None,
                Compression::Gzip,
                Compression::Snappy,
                Compression::Lz4,
            ] {
                let mut log = entry(magic, c, &[(0, b"a", Some(b"a0")), (1, b"b", Some(b"b0"))]);
                if c == Compression::None {
                    log.extend(entry(magic, c, &[(2, b"a", Some(b"a1"))]));
                    log.extend(entry(magic, c, &[(3, b"c", None)]));
                } else {
                    log.extend(entry(magic, c, &[(2, b"a", Some(b"a1")), (3, b"c", None)]));
                }
                let (mut next, mut found) = (0, Vec::new());
                scan(&log, 0, &mut next, 1 << 20, true, &mut found);
                let mut map = OffsetMap::new(1 << 20);
                let mut scratch = InflateScratch::default();
                for b in &found {
                    let e = &log[b.position as usize..(b.position + b.len) as usize];
                    assert!(map_entry(e, 0, &mut map, &mut scratch).unwrap());
                    map.update_latest_offset(b.last_offset);
                }
                let last_records = BTreeMap::new();
                let rules = RetainRules {
                    map: &map,
                    now_ms: 0,
                    delete_retention_ms: 0,
                    last_records: &last_records,
                };
                let mut cleaned = Vec::new();
                for b in &found {
                    let e = &log[b.position as usize..(b.position + b.len) as usize];
                    if let Some(bytes) = clean_entry(e, &rules, &mut scratch).unwrap().bytes {
                        assert_eq!(bytes[16] as i8, magic);
                        assert_eq!(
                            bytes[17] & 0x07,
                            log[b.position as usize + 17] & 0x07,
                            "codec kept"
                        );
                        cleaned.extend(bytes);
                    }
                }
                let m = |o: i64, k: &[u8], v: Option<&[u8]>| {
                    (o, k.to_vec(), v.map(<[u8]>::to_vec), magic)
                };
                assert_eq!(
                    read_back(&cleaned),
                    vec![
                        m(1, b"b", Some(b"b0")),
                        m(2, b"a", Some(b"a1")),
                        m(3, b"c", None)
                    ],
                    "magic {magic} {c:?}"
                );
            }
        }
    }
}
