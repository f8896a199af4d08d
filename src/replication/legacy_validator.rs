//! `[pure]` Kafka's `LogValidator` for a produce of legacy messages (magic
//! 0/1, Produce v0–v2), converting them to the one v2 batch the log
//! stores (`storage/.../LogValidator.java`, `UnifiedLog.analyzeAndValidateRecords`,
//! Kafka 3.9 with its default `inter.broker.protocol.version`, whose record
//! version is V2: every legacy produce is up-converted on append).
//!
//! Checked in Kafka's order, every failure failing the whole partition:
//! 1. Each entry (`analyzeAndValidateRecords`): larger than
//!    `max.message.bytes` → MESSAGE_TOO_LARGE; a bad CRC32 →
//!    CORRUPT_MESSAGE. An entry size below 14 or a magic outside 0..2 is
//!    CORRUPT_MESSAGE (`ByteBufferLogInputStream`); a trailing partial entry
//!    is dropped.
//! 2. The source codec is the last non-none one. A compressed source must
//!    be the only entry ("Compressed outer record has more than one
//!    batch"), and every entry must have the first one's magic
//!    (`validateBatch`): INVALID_RECORD.
//! 3. Record by record (`validateRecord`): a compressed inner message
//!    (INVALID_RECORD, at once); a magic other than its wrapper's
//!    (INVALID_RECORD); an inner message's own CRC32 (CORRUPT_MESSAGE, at
//!    once); a null key on a compacted topic (INVALID_RECORD); the
//!    timestamp (`validateTimestamp`: with CreateTime and a timestamp other
//!    than -1 it must lie in the `message.timestamp.before.max.ms` /
//!    `after.max.ms` window, otherwise a message claiming LogAppendTime is
//!    refused), INVALID_TIMESTAMP. Collected errors answer INVALID_TIMESTAMP
//!    if any is one, else INVALID_RECORD (`processRecordErrors`).
//!
//! The records are then rebuilt (`convertAndAssignOffsetsNonCompressed`,
//! `buildRecordsAndAssignOffsets`) into one v2 batch with the source's
//! codec (what `compression.type=producer` keeps), CreateTime and each
//! record's timestamp (-1 from magic 0; a LogAppendTime wrapper's time for
//! its inner messages), no producer id, offsets assigned by the append. The
//! append applies the topic's LogAppendTime to it as to any v2 batch.
//!
//! Where shardlog answers differently: a codec id of 5-7 is INVALID_RECORD
//! (Kafka's `CompressionType.forId` throws IllegalArgumentException, an
//! UNKNOWN_SERVER_ERROR), and a wrapper value that does not inflate is
//! CORRUPT_MESSAGE (Kafka wraps the codec's IOException in a
//! KafkaException, also UNKNOWN_SERVER_ERROR); a records field with no
//! whole entry is CORRUPT_MESSAGE, as for v2 data.

use bytes::Bytes;

use crate::metrics::shard::ValidationStats;
use crate::protocol::legacy::{self, shallow_entries, Message, OutRecord, NO_TIMESTAMP};
use crate::protocol::record_batch::{
    refusal_meter, BatchError, Compression, RecordBatch, RefusalMeter, TimestampType,
};
use crate::protocol::record_walk::InflateScratch;
use crate::protocol::ErrorCode;
use crate::replication::timestamps::TimestampPolicy;

/// What the topic's config asks of an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyRules {
    /// `cleanup.policy` includes compact: every record needs a key.
    pub compacted: bool,
    pub timestamps: TimestampPolicy,
    /// `max.message.bytes`, against each entry with its log overhead.
    pub max_message_bytes: usize,
}

fn code(e: &BatchError) -> ErrorCode {
    ErrorCode(e.kafka_error_code())
}

/// Whether `records` (a produce's records field) starts with a legacy
/// message: the only data [`up_convert`] takes.
pub fn is_legacy(records: &[u8]) -> bool {
    legacy::first_magic(records).is_some_and(|m| m < 2)
}

/// The v2 batch Kafka's validator turns the legacy `records` into, or the
/// error that refuses them. `now_ms` is the broker's time. `marks` gets
/// what Kafka's `RecordConversionStats` and `LogValidator.MetricsRecorder`
/// record of it: the records converted and the memory it took (the
/// inflated source of a compressed wrapper, and the batch built), or the
/// meters a refusal marks (a checksum, a magic, a missing key).
pub fn up_convert(
    records: &Bytes,
    rules: &LegacyRules,
    now_ms: i64,
    scratch: &mut InflateScratch,
    marks: &mut ValidationStats,
) -> Result<Vec<u8>, ErrorCode> {
    let entries = shallow_entries(records).map_err(|e| code(&e))?;
    let Some(first) = entries.first() else {
        return Err(ErrorCode::CORRUPT_MESSAGE);
    };
    let first_magic = first.magic;
    let mut source = Compression::None;
    let mut messages = Vec::with_capacity(entries.len());
    for e in &entries {
        if e.bytes.len() > rules.max_message_bytes {
            return Err(ErrorCode::MESSAGE_TOO_LARGE);
        }
        if e.magic >= 2 {
            // A v2 batch among legacy messages: its own CRC first, then
            // the magic rule refuses it.
            if let Err(err) = RecordBatch::new(&e.bytes) {
                if refusal_meter(&e.bytes) == Some(RefusalMeter::InvalidMessageCrc) {
                    marks.invalid_message_crc += 1;
                }
                return Err(code(&err));
            }
            continue;
        }
        let m = Message::parse(e.offset, &e.body()).map_err(|e| code(&e))?;
        if !m.is_valid() {
            marks.invalid_message_crc += 1;
            return Err(ErrorCode::CORRUPT_MESSAGE);
        }
        match m.compression() {
            None => return Err(ErrorCode::INVALID_RECORD),
            Some(Compression::None) => {}
            Some(c) => source = c,
        }
        messages.push(m);
    }
    if source != Compression::None && entries.len() > 1 {
        return Err(ErrorCode::INVALID_RECORD);
    }
    if entries.iter().any(|e| e.magic != first_magic) {
        marks.invalid_magic_number += 1;
        return Err(ErrorCode::INVALID_RECORD);
    }
    let check = Check { rules, now_ms };
    let mut inflated = 0u64;
    let records: Vec<Message> = if source == Compression::None {
        for m in &messages {
            check.finish(check.record(m, m, marks)?.into_iter().collect())?;
        }
        messages
    } else {
        let wrapper = &messages[0];
        let inner = wrapper.inner_messages(scratch).map_err(|e| code(&e))?;
        let mut errors = Vec::new();
        for m in &inner {
            if m.is_compressed() {
                return Err(ErrorCode::INVALID_RECORD);
            }
            errors.extend(check.record(wrapper, m, marks)?);
            inflated += (legacy::LOG_OVERHEAD + m.size) as u64;
        }
        check.finish(errors)?;
        inner
    };
    let out: Vec<OutRecord<'_>> = records
        .iter()
        .map(|m| OutRecord {
            offset: m.offset,
            timestamp: if m.magic == 0 {
                NO_TIMESTAMP
            } else {
                m.timestamp
            },
            key: m.key.as_deref(),
            value: m.value.as_deref(),
        })
        .collect();
    let batch = legacy::build_v2_batch(&out, source).map_err(|e| code(&e))?;
    marks.converted_records += out.len() as u64;
    marks.temporary_memory_bytes += inflated + batch.len() as u64;
    Ok(batch)
}

struct Check<'a> {
    rules: &'a LegacyRules,
    now_ms: i64,
}

impl Check<'_> {
    /// `validateRecord` of `m` in `batch` (itself when uncompressed): an
    /// error collected for the partition, or one that refuses it at once;
    /// the meter Kafka marks for it goes to `marks`.
    fn record(
        &self,
        batch: &Message,
        m: &Message,
        marks: &mut ValidationStats,
    ) -> Result<Option<ErrorCode>, ErrorCode> {
        if m.magic != batch.magic {
            marks.invalid_magic_number += 1;
            return Ok(Some(ErrorCode::INVALID_RECORD));
        }
        if batch.is_compressed() && !m.is_valid() {
            marks.invalid_message_crc += 1;
            return Err(ErrorCode::CORRUPT_MESSAGE);
        }
        if self.rules.compacted && m.key.is_none() {
            marks.no_key_compacted_topic += 1;
            return Ok(Some(ErrorCode::INVALID_RECORD));
        }
        let policy = self.rules.timestamps;
        let timestamp = if m.magic == 0 {
            NO_TIMESTAMP
        } else {
            m.timestamp
        };
        if !policy.log_append_time && timestamp != NO_TIMESTAMP {
            // Java's long arithmetic wraps, as in `replication::timestamps`.
            let diff = self.now_ms.wrapping_sub(timestamp);
            if diff > policy.before_max_ms || diff.wrapping_neg() > policy.after_max_ms {
                return Ok(Some(ErrorCode::INVALID_TIMESTAMP));
            }
        } else if batch.magic > 0 && batch.timestamp_type == Some(TimestampType::LogAppendTime) {
            return Ok(Some(ErrorCode::INVALID_TIMESTAMP));
        }
        Ok(None)
    }

    /// `processRecordErrors`.
    fn finish(&self, errors: Vec<ErrorCode>) -> Result<(), ErrorCode> {
        if errors.is_empty() {
            Ok(())
        } else if errors.contains(&ErrorCode::INVALID_TIMESTAMP) {
            Err(ErrorCode::INVALID_TIMESTAMP)
        } else {
            Err(ErrorCode::INVALID_RECORD)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::legacy::{write_message_set, LegacyFormat};
    use crate::protocol::record_walk::records_section;
    use kafka_protocol::records::RecordBatchDecoder;

    const NOW: i64 = 1_000_000;

    fn rules() -> LegacyRules {
        LegacyRules {
            compacted: false,
            timestamps: TimestampPolicy {
                log_append_time: false,
                before_max_ms: i64::MAX,
                after_max_ms: i64::MAX,
            },
            max_message_bytes: 1 << 20,
        }
    }

    fn set(magic: i8, c: Compression, ty: TimestampType, records: &[OutRecord<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        let format = LegacyFormat {
            magic,
            compression: c,
            timestamp_type: ty,
            log_append_time: NOW - 5,
            base_offset: 0,
        };
        write_message_set(&mut out, format, records).unwrap();
        out
    }

    fn three() -> Vec<OutRecord<'static>> {
        vec![
            OutRecord {
                offset: 0,
                timestamp: NOW - 10,
                key: Some(b"a"),
                value: Some(b"one"),
            },
            OutRecord {
                offset: 1,
                timestamp: NOW - 30,
                key: None,
                value: Some(b"two"),
            },
            OutRecord {
                offset: 2,
                timestamp: NOW - 20,
                key: Some(b"c"),
                value: None,
            },
        ]
    }

    fn convert(bytes: Vec<u8>, rules: &LegacyRules) -> Result<Vec<u8>, ErrorCode> {
        marked(bytes, rules).0
    }

    fn marked(
        bytes: Vec<u8>,
        rules: &LegacyRules,
    ) -> (Result<Vec<u8>, ErrorCode>, ValidationStats) {
        let mut marks = ValidationStats::default();
        let r = up_convert(
            &Bytes::from(bytes),
            rules,
            NOW,
            &mut InflateScratch::default(),
            &mut marks,
        );
        (r, marks)
    }

    #[test]
    fn conversions_and_refusals_are_marked_as_kafkas_meters() {
        let plain = set(1, Compression::None, TimestampType::CreateTime, &three());
        let (r, m) = marked(plain.clone(), &rules());
        assert!(r.is_ok());
        assert_eq!(m.converted_records, 3);
        assert!(m.temporary_memory_bytes > 0);
        let gz = set(1, Compression::Gzip, TimestampType::CreateTime, &three());
        assert_eq!(marked(gz, &rules()).1.converted_records, 3);
        let mut bad_crc = plain.clone();
        bad_crc[30] ^= 1;
        let crc = ValidationStats {
            invalid_message_crc: 1,
            ..ValidationStats::default()
        };
        assert_eq!(marked(bad_crc, &rules()).1, crc);
        let mut magics = set(0, Compression::None, TimestampType::CreateTime, &three());
        magics.extend_from_slice(&plain);
        assert_eq!(marked(magics, &rules()).1.invalid_magic_number, 1);
        // One record of three has no key; nothing is converted.
        let compacted = LegacyRules {
            compacted: true,
            ..rules()
        };
        let (r, m) = marked(plain, &compacted);
        assert_eq!(r, Err(ErrorCode::INVALID_RECORD));
        assert_eq!((m.no_key_compacted_topic, m.converted_records), (1, 0));
    }

    fn decoded(batch: &[u8]) -> Vec<(i64, i64, Option<Bytes>, Option<Bytes>)> {
        RecordBatchDecoder::decode(&mut Bytes::copy_from_slice(batch))
            .unwrap()
            .records
            .into_iter()
            .map(|r| (r.offset, r.timestamp, r.key, r.value))
            .collect()
    }

    #[test]
    fn every_magic_and_codec_becomes_one_v2_batch_with_the_same_records() {
        let want = |magic: i8| {
            three()
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let ts = if magic == 0 { -1 } else { r.timestamp };
                    let b = |x: Option<&[u8]>| x.map(Bytes::copy_from_slice);
                    (i as i64, ts, b(r.key), b(r.value))
                })
                .collect::<Vec<_>>()
        };
        for magic in [0i8, 1] {
            for c in [
                Compression::None,
                Compression::Gzip,
                Compression::Snappy,
                Compression::Lz4,
            ] {
                let batch = convert(set(magic, c, TimestampType::CreateTime, &three()), &rules())
                    .unwrap_or_else(|e| panic!("{magic} {c:?}: {e:?}"));
                let view = RecordBatch::new(&batch).unwrap();
                assert_eq!(view.compression(), Some(c), "{magic} {c:?}");
                assert_eq!(view.record_count(), 3);
                assert_eq!(decoded(&legacy_plain(&batch)), want(magic), "{magic} {c:?}");
            }
        }
    }

    #[test]
    fn structural_failures_answer_as_kafka() {
        let r = rules();
        let plain = set(1, Compression::None, TimestampType::CreateTime, &three());
        let gz = set(1, Compression::Gzip, TimestampType::CreateTime, &three());
        let mut bad_crc = plain.clone();
        bad_crc[30] ^= 1;
        assert_eq!(convert(bad_crc, &r), Err(ErrorCode::CORRUPT_MESSAGE));
        let mut two_wrappers = gz.clone();
        two_wrappers.extend_from_slice(&gz);
        assert_eq!(convert(two_wrappers, &r), Err(ErrorCode::INVALID_RECORD));
        let mut mixed = plain.clone();
        mixed.extend_from_slice(&gz);
        assert_eq!(convert(mixed, &r), Err(ErrorCode::INVALID_RECORD));
        let mut magics = set(0, Compression::None, TimestampType::CreateTime, &three());
        magics.extend_from_slice(&plain);
        assert_eq!(convert(magics, &r), Err(ErrorCode::INVALID_RECORD));
        let small = LegacyRules {
            max_message_bytes: 20,
            ..r
        };
        assert_eq!(
            convert(plain.clone(), &small),
            Err(ErrorCode::MESSAGE_TOO_LARGE)
        );
        let mut partial = plain.clone();
        partial.extend_from_slice(&plain[..20]);
        assert_eq!(
            RecordBatch::new(&convert(partial, &r).unwrap())
                .unwrap()
                .record_count(),
            3
        );
        assert_eq!(convert(Vec::new(), &r), Err(ErrorCode::CORRUPT_MESSAGE));
    }

    #[test]
    fn inner_messages_are_checked_one_by_one() {
        let r = rules();
        // Inner set by hand: a compressed inner message, a magic-0 inner
        // message in a v1 wrapper, a flipped inner byte.
        let wrap = |inner: Vec<u8>| {
            let value = legacy::compress(Compression::Gzip, 1, &inner).unwrap();
            set_value(1, 1, &value)
        };
        let inner_plain = set(1, Compression::None, TimestampType::CreateTime, &three());
        let mut compressed_inner = inner_plain.clone();
        compressed_inner.extend_from_slice(&set(
            1,
            Compression::Gzip,
            TimestampType::CreateTime,
            &three()[..1],
        ));
        assert_eq!(
            convert(wrap(compressed_inner), &r),
            Err(ErrorCode::INVALID_RECORD)
        );
        let mut v0_inner = inner_plain.clone();
        v0_inner.extend_from_slice(&set(
            0,
            Compression::None,
            TimestampType::CreateTime,
            &three()[..1],
        ));
        assert_eq!(convert(wrap(v0_inner), &r), Err(ErrorCode::INVALID_RECORD));
        let mut flipped = inner_plain.clone();
        flipped[30] ^= 1;
        assert_eq!(convert(wrap(flipped), &r), Err(ErrorCode::CORRUPT_MESSAGE));
        assert!(convert(wrap(inner_plain), &r).is_ok());
    }

    /// A wrapper message with this magic, attributes and value.
    fn set_value(magic: i8, attributes: u8, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let size = if magic == 0 { 14 } else { 22 } + value.len();
        out.extend_from_slice(&5i64.to_be_bytes());
        out.extend_from_slice(&(size as i32).to_be_bytes());
        let mut body = vec![magic as u8, attributes];
        if magic == 1 {
            body.extend_from_slice(&NOW.to_be_bytes());
        }
        body.extend_from_slice(&(-1i32).to_be_bytes());
        body.extend_from_slice(&(value.len() as i32).to_be_bytes());
        body.extend_from_slice(value);
        let mut crc = flate2::Crc::new();
        crc.update(&body);
        out.extend_from_slice(&crc.sum().to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn keys_and_timestamps_follow_the_topic() {
        let compacted = LegacyRules {
            compacted: true,
            ..rules()
        };
        for c in [Compression::None, Compression::Snappy] {
            let s = set(1, c, TimestampType::CreateTime, &three());
            assert_eq!(
                convert(s, &compacted),
                Err(ErrorCode::INVALID_RECORD),
                "{c:?}"
            );
        }
        let window = LegacyRules {
            timestamps: TimestampPolicy {
                log_append_time: false,
                before_max_ms: 15,
                after_max_ms: 15,
            },
            ..compacted
        };
        // A null key and a stale timestamp: INVALID_TIMESTAMP wins.
        let s = set(1, Compression::Lz4, TimestampType::CreateTime, &three());
        assert_eq!(convert(s, &window), Err(ErrorCode::INVALID_TIMESTAMP));
        // v0 has no timestamps to check.
        let no_compaction = LegacyRules {
            compacted: false,
            ..window
        };
        let s = set(0, Compression::Gzip, TimestampType::CreateTime, &three());
        assert!(convert(s, &no_compaction).is_ok());
        // A LogAppendTime wrapper: its time is each record's, checked
        // against the window on a CreateTime topic, refused on a
        // LogAppendTime topic ("Producer should not set timestamp type").
        let lat = set(1, Compression::Gzip, TimestampType::LogAppendTime, &three());
        let batch = convert(lat.clone(), &no_compaction).unwrap();
        assert!(decoded(&legacy_plain(&batch))
            .iter()
            .all(|r| r.1 == NOW - 5));
        let lat_topic = LegacyRules {
            timestamps: TimestampPolicy {
                log_append_time: true,
                before_max_ms: i64::MAX,
                after_max_ms: i64::MAX,
            },
            ..rules()
        };
        assert_eq!(convert(lat, &lat_topic), Err(ErrorCode::INVALID_TIMESTAMP));
        let create = set(1, Compression::None, TimestampType::CreateTime, &three());
        assert!(convert(create, &lat_topic).is_ok());
    }

    /// `batch` with its records inflated (the test decoder has no LZ4).
    fn legacy_plain(batch: &[u8]) -> Vec<u8> {
        let records = records_section(batch, &mut InflateScratch::default())
            .unwrap()
            .into_owned();
        let mut b = batch[..61].to_vec();
        b[22] &= !7;
        b.extend_from_slice(&records);
        let len = (b.len() - 12) as i32;
        b[8..12].copy_from_slice(&len.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = convert(bytes, &rules());
        }
    }
}
