//! Down-conversion of stored batches for Fetch v0–v3 (Kafka's
//! `RecordsUtil.downConvert` and `convertRecordBatch`; `super::lazy` runs
//! it in chunks as `LazyDownConversionRecords` does, KIP-283):
//! - entries whose magic is at most the target are copied as they are;
//! - control batches are dropped;
//! - a v2 batch is rebuilt at the target magic with its own codec, its
//!   records' offsets and its timestamp type (LogAppendTime takes the
//!   batch's max timestamp); headers, producer ids and epochs are lost,
//!   and timestamps for magic 0. A compressed batch becomes one wrapper,
//!   an uncompressed one a message per record, leaving out records below
//!   the fetch offset (some librdkafka versions rely on that);
//! - zstd has no legacy form: converting a zstd batch fails.

use bytes::Bytes;

use super::{shallow_entries, write_message_set, LegacyFormat, Message, OutRecord};
use crate::protocol::record_batch::{BatchError, Compression, RecordBatch, TimestampType};
use crate::protocol::record_walk::{records_section, InflateScratch};
use crate::protocol::varint::read_varint;

/// One record of a v2 batch, as the conversion needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Record {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

/// The records of the v2 `batch` (inflated when compressed; the CRC is
/// not checked: stored batches were checked on append). Timestamps of a
/// LogAppendTime batch are its max timestamp (`DefaultRecordBatch`).
pub fn v2_records(batch: &[u8], scratch: &mut InflateScratch) -> Result<Vec<V2Record>, BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let section = Bytes::from(records_section(batch, scratch)?.into_owned());
    let log_append_time =
        (view.timestamp_type() == TimestampType::LogAppendTime).then(|| view.max_timestamp());
    let short = || BatchError::Corrupt("records end before the record count");
    let mut out = Vec::new();
    let mut pos = 0usize;
    for _ in 0..view.record_count().max(0) {
        let (len, n) = read_varint(&section[pos..]).ok_or_else(short)?;
        let len = usize::try_from(len).map_err(|_| short())?;
        let start = pos + n;
        let end = start
            .checked_add(len)
            .filter(|e| *e <= section.len())
            .ok_or_else(short)?;
        let r = &section[start..end];
        let mut at = 1usize; // attributes
        let varint = |at: &mut usize| -> Result<i64, BatchError> {
            let (v, n) = read_varint(r.get(*at..).ok_or_else(short)?).ok_or_else(short)?;
            *at += n;
            Ok(v)
        };
        let timestamp_delta = varint(&mut at)?;
        let offset_delta = varint(&mut at)?;
        let field = |at: &mut usize| -> Result<Option<Bytes>, BatchError> {
            let len = varint(at)?;
            if len < 0 {
                return Ok(None);
            }
            let from = start + *at;
            let to = from
                .checked_add(len as usize)
                .filter(|t| *t <= end)
                .ok_or_else(short)?;
            *at += len as usize;
            Ok(Some(section.slice(from..to)))
        };
        let key = field(&mut at)?;
        let value = field(&mut at)?;
        out.push(V2Record {
            offset: view.base_offset().wrapping_add(offset_delta),
            timestamp: log_append_time
                .unwrap_or(view.base_timestamp().wrapping_add(timestamp_delta)),
            key,
            value,
        });
        pos = end;
    }
    Ok(out)
}

/// Why an entry could not be converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownConvertError {
    /// It is zstd-compressed (Kafka's UnsupportedCompressionTypeException).
    Zstd,
    /// It could not be read.
    Batch(BatchError),
}

/// What converting took (Kafka's `RecordsUtil.downConvert` stats): the
/// records rebuilt at the older magic (`numRecordsConverted`), and the
/// memory used (`temporaryMemoryBytes`: every source entry's size, plus
/// the converted bytes of those rebuilt).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Converted {
    pub records: u64,
    pub temporary_bytes: u64,
}

/// The whole stored entries of `group` converted to `to_magic`, one after
/// the other (`RecordsUtil.downConvert`: an entry that cannot be
/// converted fails the group).
pub fn convert_group(
    group: &Bytes,
    to_magic: i8,
    fetch_offset: i64,
    scratch: &mut InflateScratch,
) -> Result<Vec<u8>, DownConvertError> {
    convert_group_counted(
        group,
        (to_magic, fetch_offset),
        scratch,
        &mut Converted::default(),
    )
}

/// [`convert_group`] of `group` at (`to_magic`, `fetch_offset`), adding
/// what it took to `stats`.
pub fn convert_group_counted(
    group: &Bytes,
    (to_magic, fetch_offset): (i8, i64),
    scratch: &mut InflateScratch,
    stats: &mut Converted,
) -> Result<Vec<u8>, DownConvertError> {
    let mut out = Vec::new();
    for e in shallow_entries(group).map_err(DownConvertError::Batch)? {
        let (converted, records) = convert_entry(&e, to_magic, fetch_offset, scratch)?;
        stats.temporary_bytes += e.bytes.len() as u64;
        if records > 0 {
            stats.records += records;
            stats.temporary_bytes += converted.len() as u64;
        }
        out.extend_from_slice(&converted);
    }
    Ok(out)
}

/// One stored entry at `to_magic` (empty when nothing of it is kept), and
/// how many of its records were rebuilt (0 when copied as it is).
fn convert_entry(
    e: &super::Entry,
    to_magic: i8,
    fetch_offset: i64,
    scratch: &mut InflateScratch,
) -> Result<(Vec<u8>, u64), DownConvertError> {
    if e.magic <= to_magic {
        return Ok((e.bytes.to_vec(), 0));
    }
    if e.magic < 2 {
        return convert_legacy(e, to_magic, fetch_offset, scratch);
    }
    let view = RecordBatch::new_unchecked_crc(&e.bytes).map_err(DownConvertError::Batch)?;
    if view.is_control() {
        return Ok((Vec::new(), 0));
    }
    let compression =
        view.compression()
            .ok_or(DownConvertError::Batch(BatchError::InvalidRecord(
                "unknown compression codec",
            )))?;
    if compression == Compression::Zstd {
        return Err(DownConvertError::Zstd);
    }
    let records = v2_records(&e.bytes, scratch).map_err(DownConvertError::Batch)?;
    let kept: Vec<OutRecord<'_>> = records
        .iter()
        .filter(|r| compression != Compression::None || r.offset >= fetch_offset)
        .map(|r| OutRecord {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.as_deref(),
            value: r.value.as_deref(),
        })
        .collect();
    let Some(first) = kept.first() else {
        return Ok((Vec::new(), 0));
    };
    let timestamp_type = view.timestamp_type();
    let format = LegacyFormat {
        magic: to_magic,
        compression,
        timestamp_type,
        log_append_time: view.max_timestamp(),
        base_offset: first.offset,
    };
    let mut out = Vec::new();
    write_message_set(&mut out, format, &kept).map_err(DownConvertError::Batch)?;
    Ok((out, kept.len() as u64))
}

/// A stored magic-1 message (a log dir Kafka wrote with
/// `log.message.format.version` 0.10.x) for a magic-0 fetch, as
/// `convertRecordBatch` rebuilds it: the same codec, the original offsets,
/// timestamps dropped; a wrapper's inner messages become one v0 wrapper
/// (absolute inner offsets), a plain message is left out when below the
/// fetch offset.
fn convert_legacy(
    e: &super::Entry,
    to_magic: i8,
    fetch_offset: i64,
    scratch: &mut InflateScratch,
) -> Result<(Vec<u8>, u64), DownConvertError> {
    let message = Message::parse(e.offset, &e.body()).map_err(DownConvertError::Batch)?;
    let compression =
        message
            .compression()
            .ok_or(DownConvertError::Batch(BatchError::InvalidRecord(
                "unknown compression codec",
            )))?;
    if compression == Compression::Zstd {
        return Err(DownConvertError::Zstd);
    }
    let messages = if message.is_compressed() {
        message
            .inner_messages(scratch)
            .map_err(DownConvertError::Batch)?
    } else {
        vec![message]
    };
    let kept: Vec<OutRecord<'_>> = messages
        .iter()
        .filter(|m| compression != Compression::None || m.offset >= fetch_offset)
        .map(|m| OutRecord {
            offset: m.offset,
            timestamp: m.timestamp,
            key: m.key.as_deref(),
            value: m.value.as_deref(),
        })
        .collect();
    let Some(first) = kept.first() else {
        return Ok((Vec::new(), 0));
    };
    let format = LegacyFormat {
        magic: to_magic,
        compression,
        timestamp_type: TimestampType::CreateTime,
        log_append_time: -1,
        base_offset: first.offset,
    };
    let mut out = Vec::new();
    write_message_set(&mut out, format, &kept).map_err(DownConvertError::Batch)?;
    Ok((out, kept.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::legacy::{build_v2_batch, Message};
    use crate::protocol::record_batch::{set_base_offset, set_log_append_time};

    fn batch(base: i64, c: Compression) -> Vec<u8> {
        let records = [
            OutRecord {
                offset: 0,
                timestamp: 10,
                key: Some(b"a"),
                value: Some(b"one"),
            },
            OutRecord {
                offset: 1,
                timestamp: 30,
                key: None,
                value: Some(b"two"),
            },
            OutRecord {
                offset: 2,
                timestamp: 20,
                key: Some(b"c"),
                value: None,
            },
        ];
        let mut b = build_v2_batch(&records, c).unwrap();
        set_base_offset(&mut b, base);
        b
    }

    /// Every record of converted `chunks`: (offset, timestamp, key, value).
    fn read(chunks: &[Bytes]) -> Vec<(i64, i64, Option<Bytes>, Option<Bytes>)> {
        let all = Bytes::from(chunks.concat());
        let mut out = Vec::new();
        for e in shallow_entries(&all).unwrap() {
            let m = Message::parse(e.offset, &e.body()).unwrap();
            assert!(m.is_valid());
            let inner = if m.is_compressed() {
                m.inner_messages(&mut InflateScratch::default()).unwrap()
            } else {
                vec![m]
            };
            out.extend(
                inner
                    .into_iter()
                    .map(|m| (m.offset, m.timestamp, m.key, m.value)),
            );
        }
        out
    }

    fn convert(src: Vec<u8>, magic: i8, fetch_offset: i64) -> Result<Vec<Bytes>, DownConvertError> {
        convert_group(
            &Bytes::from(src),
            magic,
            fetch_offset,
            &mut InflateScratch::default(),
        )
        .map(|out| vec![Bytes::from(out)])
    }

    #[test]
    fn v2_batches_become_messages_with_their_offsets_codec_and_timestamps() {
        let b = |x: &'static [u8]| Some(Bytes::from_static(x));
        for magic in [0i8, 1] {
            for c in [
                Compression::None,
                Compression::Gzip,
                Compression::Snappy,
                Compression::Lz4,
            ] {
                let chunks = convert(batch(100, c), magic, 100).unwrap();
                let ts = |t: i64| if magic == 0 { -1 } else { t };
                assert_eq!(
                    read(&chunks),
                    vec![
                        (100, ts(10), b(b"a"), b(b"one")),
                        (101, ts(30), None, b(b"two")),
                        (102, ts(20), b(b"c"), None),
                    ],
                    "{magic} {c:?}"
                );
                let first = shallow_entries(&chunks[0]).unwrap();
                assert!(first.iter().all(|e| e.magic == magic));
                let m = Message::parse(first[0].offset, &first[0].body()).unwrap();
                assert_eq!(m.compression(), Some(c), "{magic}: the batch's own codec");
            }
        }
    }

    #[test]
    fn stored_magic_1_messages_go_to_magic_0_and_are_copied_for_magic_1() {
        let b = |x: &'static [u8]| Some(Bytes::from_static(x));
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
        ] {
            // A log dir Kafka wrote at `log.message.format.version=0.10.2`.
            let v1 = convert(batch(100, c), 1, 100).unwrap().concat();
            assert_eq!(
                convert(v1.clone(), 1, 100).unwrap().concat(),
                v1,
                "{c:?}: as stored"
            );
            let chunks = convert(v1, 0, 100).unwrap();
            assert_eq!(
                read(&chunks),
                vec![
                    (100, -1, b(b"a"), b(b"one")),
                    (101, -1, None, b(b"two")),
                    (102, -1, b(b"c"), None),
                ],
                "{c:?}"
            );
            let first = shallow_entries(&chunks[0]).unwrap();
            assert!(first.iter().all(|e| e.magic == 0));
            let m = Message::parse(first[0].offset, &first[0].body()).unwrap();
            assert_eq!(m.compression(), Some(c), "the message's own codec");
        }
        let v1 = convert(batch(100, Compression::None), 1, 100)
            .unwrap()
            .concat();
        let got = read(&convert(v1, 0, 101).unwrap());
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [101, 102]);
    }

    #[test]
    fn uncompressed_records_below_the_fetch_offset_are_left_out() {
        let got = read(&convert(batch(100, Compression::None), 1, 102).unwrap());
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [102]);
        // A compressed batch is kept whole (clients skip what they did not ask for).
        let got = read(&convert(batch(100, Compression::Gzip), 1, 102).unwrap());
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn log_append_time_batches_give_every_message_the_max_timestamp() {
        let mut b = batch(0, Compression::None);
        set_log_append_time(&mut b, 777);
        let chunks = convert(b, 1, 0).unwrap();
        assert!(read(&chunks).iter().all(|r| r.1 == 777));
        let e = &shallow_entries(&chunks[0]).unwrap()[0];
        let m = Message::parse(e.offset, &e.body()).unwrap();
        assert_eq!(m.timestamp_type, Some(TimestampType::LogAppendTime));
    }

    #[test]
    fn control_batches_are_dropped_and_zstd_refused() {
        let mut control = batch(3, Compression::None);
        control[22] |= 0x20;
        let mut src = batch(0, Compression::None);
        src.extend_from_slice(&control);
        src.extend_from_slice(&batch(6, Compression::None));
        let got = read(&convert(src, 1, 0).unwrap());
        assert_eq!(
            got.iter().map(|r| r.0).collect::<Vec<_>>(),
            [0, 1, 2, 6, 7, 8]
        );
        assert_eq!(
            convert(batch(0, Compression::Zstd), 1, 0),
            Err(DownConvertError::Zstd)
        );
        let mut src = batch(0, Compression::Gzip);
        src.extend_from_slice(&batch(3, Compression::Zstd));
        assert_eq!(
            convert(src, 0, 0),
            Err(DownConvertError::Zstd),
            "the group fails"
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300), magic in 0i8..2) {
            let _ = convert_group(&Bytes::from(bytes.clone()), magic, 0, &mut InflateScratch::default());
            let _ = v2_records(&bytes, &mut InflateScratch::default());
        }
    }
}
