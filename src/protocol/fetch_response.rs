//! `[pure]` Hand-written FetchResponse framing (v0–v17) for zero-copy fetches.
//!
//! The `kafka-protocol` crate would encode record bytes into one response
//! buffer (a 160 KiB copy for 10×16 KiB; PLATFORM.md). Here the response is a
//! list of parts: small encoded header chunks interleaved with the record
//! regions themselves (cached `Bytes` or file regions for `sendfile`), so no
//! record byte is copied. The layout follows Kafka's FetchResponse.json:
//! flexible from v12 (compact arrays/bytes, tagged fields), topic ids instead
//! of names from v13, response header v1 when flexible; v0 has no
//! throttle time, and v0–v3 no last stable offset or aborted transactions.

use crate::protocol::out_part::OutPart;
use crate::protocol::varint::put_unsigned_varint;
use bytes::{BufMut, Bytes, BytesMut};

/// One partition's answer.
#[derive(Debug, Clone)]
pub struct FetchPartitionOut {
    pub partition_index: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// Record regions in log order (whole batches).
    pub records: Vec<OutPart>,
    /// KIP-320 (v12+, tagged field 0): the epoch and end offset a
    /// follower must truncate to; `None` when it did not diverge.
    pub diverging_epoch: Option<(i32, i64)>,
    /// read_committed: `(producer_id, first_offset)` of the aborted
    /// transactions in the range; `None` (null) for read_uncommitted, as
    /// Kafka sends.
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
    /// Refused before any read (Kafka's `FetchResponse.partitionResponse`):
    /// the records field is null rather than empty.
    pub null_records: bool,
}

impl FetchPartitionOut {
    /// A partition answer carrying only an error (no records).
    pub fn error(partition_index: i32, error_code: i16) -> Self {
        Self {
            partition_index,
            error_code,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            records: Vec::new(),
            diverging_epoch: None,
            // Kafka's `FetchResponse.partitionResponse(tp, error)` for a
            // partition refused before any read: an empty list, not null
            // (its records become empty in `recordsOrFail`).
            aborted_transactions: Some(Vec::new()),
            null_records: false,
        }
    }

    pub fn records_len(&self) -> usize {
        self.records.iter().map(OutPart::len).sum()
    }
}

/// One topic's answer.
#[derive(Debug, Clone)]
pub struct FetchTopicOut {
    pub topic: String,
    pub topic_id: [u8; 16],
    pub partitions: Vec<FetchPartitionOut>,
}

/// The top-level fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct FetchTop {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub session_id: i32,
}

fn put_array_len(buf: &mut BytesMut, flexible: bool, n: usize) {
    if flexible {
        put_unsigned_varint(buf, n as u64 + 1);
    } else {
        buf.put_i32(n as i32);
    }
}

/// Encodes a response body (the connection adds the size prefix and the
/// response header) as parts ready for `io::zerocopy::write_parts`.
pub fn encode_fetch_body(version: i16, top: FetchTop, topics: Vec<FetchTopicOut>) -> Vec<OutPart> {
    let flexible = version >= 12;
    let mut head = BytesMut::with_capacity(64 + topics.len() * 64);
    // Where each header chunk ends, followed by the record parts to insert.
    let mut cuts: Vec<(usize, Vec<OutPart>)> = Vec::new();
    let mut records_total = 0usize;

    if version >= 1 {
        head.put_i32(top.throttle_time_ms);
    }
    if version >= 7 {
        head.put_i16(top.error_code);
        head.put_i32(top.session_id);
    }
    put_array_len(&mut head, flexible, topics.len());
    for t in topics {
        if version >= 13 {
            head.put_slice(&t.topic_id);
        } else if flexible {
            put_unsigned_varint(&mut head, t.topic.len() as u64 + 1);
            head.put_slice(t.topic.as_bytes());
        } else {
            head.put_i16(t.topic.len() as i16);
            head.put_slice(t.topic.as_bytes());
        }
        put_array_len(&mut head, flexible, t.partitions.len());
        for p in t.partitions {
            head.put_i32(p.partition_index);
            head.put_i16(p.error_code);
            head.put_i64(p.high_watermark);
            if version >= 4 {
                head.put_i64(p.last_stable_offset);
            }
            if version >= 5 {
                head.put_i64(p.log_start_offset);
            }
            // AbortedTransactions (v4+): nullable array of
            // [producer_id int64, first_offset int64 (+ tags when flexible)].
            match &p.aborted_transactions {
                _ if version < 4 => {}
                None if flexible => put_unsigned_varint(&mut head, 0),
                None => head.put_i32(-1),
                Some(list) => {
                    put_array_len(&mut head, flexible, list.len());
                    for (producer_id, first_offset) in list {
                        head.put_i64(*producer_id);
                        head.put_i64(*first_offset);
                        if flexible {
                            put_unsigned_varint(&mut head, 0);
                        }
                    }
                }
            }
            if version >= 11 {
                head.put_i32(-1); // preferred_read_replica (KIP-392): none
            }
            let len = p.records_len();
            match (flexible, p.null_records && len == 0) {
                (true, true) => put_unsigned_varint(&mut head, 0),
                (true, false) => put_unsigned_varint(&mut head, len as u64 + 1),
                (false, true) => head.put_i32(-1),
                (false, false) => head.put_i32(len as i32),
            }
            records_total += len;
            if len > 0 {
                cuts.push((head.len(), p.records));
            }
            if flexible {
                // Partition tagged fields: DivergingEpoch (tag 0) when set.
                match p.diverging_epoch {
                    Some((epoch, end_offset)) => {
                        put_unsigned_varint(&mut head, 1);
                        put_unsigned_varint(&mut head, 0); // tag
                        put_unsigned_varint(&mut head, 13); // int32 + int64 + no tags
                        head.put_i32(epoch);
                        head.put_i64(end_offset);
                        put_unsigned_varint(&mut head, 0);
                    }
                    None => put_unsigned_varint(&mut head, 0),
                }
            }
        }
        if flexible {
            put_unsigned_varint(&mut head, 0); // topic tagged fields
        }
    }
    if flexible {
        put_unsigned_varint(&mut head, 0); // top-level tagged fields
    }
    debug_assert!(records_total <= i32::MAX as usize);
    let head: Bytes = head.freeze();
    let mut parts = Vec::with_capacity(cuts.len() * 2 + 1);
    let mut from = 0;
    for (at, records) in cuts {
        parts.push(OutPart::Bytes(head.slice(from..at)));
        parts.extend(records);
        from = at;
    }
    parts.push(OutPart::Bytes(head.slice(from..)));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::protocol::Decodable;

    fn flatten(parts: &[OutPart]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            match p {
                OutPart::Bytes(b) => out.extend_from_slice(b),
                OutPart::File { .. } | OutPart::Lazy(_) => panic!("test uses memory parts only"),
            }
        }
        out
    }

    fn sample() -> Vec<FetchTopicOut> {
        vec![
            FetchTopicOut {
                topic: "alpha".into(),
                topic_id: [7; 16],
                partitions: vec![
                    FetchPartitionOut {
                        partition_index: 0,
                        error_code: 0,
                        high_watermark: 10,
                        last_stable_offset: 10,
                        log_start_offset: 2,
                        records: vec![
                            OutPart::Bytes(Bytes::from_static(b"batch-one|")),
                            OutPart::Bytes(Bytes::from_static(b"batch-two")),
                        ],
                        diverging_epoch: None,
                        aborted_transactions: None,
                        null_records: false,
                    },
                    FetchPartitionOut::error(3, 1),
                ],
            },
            FetchTopicOut {
                topic: "beta".into(),
                topic_id: [9; 16],
                partitions: vec![FetchPartitionOut {
                    partition_index: 5,
                    error_code: 0,
                    high_watermark: 99,
                    last_stable_offset: 98,
                    log_start_offset: 0,
                    records: vec![OutPart::Bytes(Bytes::from_static(b"xyz"))],
                    diverging_epoch: Some((3, 42)),
                    aborted_transactions: Some(vec![(5, 90), (6, 95)]),
                    null_records: false,
                }],
            },
        ]
    }

    #[test]
    fn every_version_re_decodes_with_the_protocol_crate() {
        for version in 4..=17i16 {
            let parts = encode_fetch_body(
                version,
                FetchTop {
                    throttle_time_ms: 0,
                    error_code: 0,
                    session_id: 77,
                },
                sample(),
            );
            let mut buf = Bytes::from(flatten(&parts));
            let resp = FetchResponse::decode(&mut buf, version).expect("body");
            assert!(buf.is_empty(), "v{version}: trailing bytes");
            if version >= 7 {
                assert_eq!(resp.session_id, 77);
            }
            assert_eq!(resp.responses.len(), 2);
            let t0 = &resp.responses[0];
            if version >= 13 {
                assert_eq!(t0.topic_id.as_bytes(), &[7u8; 16]);
            } else {
                assert_eq!(t0.topic.as_str(), "alpha");
            }
            let p0 = &t0.partitions[0];
            assert_eq!(p0.high_watermark, 10);
            assert_eq!(p0.last_stable_offset, 10);
            if version >= 5 {
                assert_eq!(p0.log_start_offset, 2);
            }
            assert_eq!(p0.records.as_deref(), Some(&b"batch-one|batch-two"[..]));
            let p1 = &t0.partitions[1];
            assert_eq!((p1.partition_index, p1.error_code), (3, 1));
            assert_eq!(p1.records.as_deref().map(<[u8]>::len), Some(0));
            let p5 = &resp.responses[1].partitions[0];
            assert_eq!(p5.last_stable_offset, 98);
            let aborted: Vec<(i64, i64)> = p5
                .aborted_transactions
                .iter()
                .flatten()
                .map(|a| (a.producer_id.0, a.first_offset))
                .collect();
            assert_eq!(aborted, vec![(5, 90), (6, 95)], "v{version}");
            assert!(p0.aborted_transactions.is_none(), "v{version}: null");
            assert_eq!(
                p1.aborted_transactions.as_ref().map(Vec::len),
                Some(0),
                "v{version}"
            );
            assert_eq!(p5.records.as_deref(), Some(&b"xyz"[..]));
            if version >= 12 {
                let d = &p5.diverging_epoch;
                assert_eq!((d.epoch, d.end_offset), (3, 42), "v{version}");
                assert_eq!(p0.diverging_epoch.epoch, -1, "not set: default");
            }
        }
    }

    /// v0–v3 (Kafka 3.9's codec): no throttle time in v0, no LSO or
    /// aborted transactions before v4.
    #[test]
    fn old_versions_re_decode_with_the_3_9_codec() {
        use kafka_protocol_39::messages::FetchResponse as FetchResponse39;
        use kafka_protocol_39::protocol::Decodable as _;
        for version in 0..=3i16 {
            let top = FetchTop {
                throttle_time_ms: 9,
                error_code: 0,
                session_id: 0,
            };
            let mut buf = Bytes::from(flatten(&encode_fetch_body(version, top, sample())));
            let resp = FetchResponse39::decode(&mut buf, version).expect("body");
            assert!(buf.is_empty(), "v{version}: trailing bytes");
            assert_eq!(resp.throttle_time_ms, if version >= 1 { 9 } else { 0 });
            let t0 = &resp.responses[0];
            assert_eq!(t0.topic.as_str(), "alpha");
            let p0 = &t0.partitions[0];
            assert_eq!(p0.high_watermark, 10);
            assert_eq!(p0.records.as_deref(), Some(&b"batch-one|batch-two"[..]));
            let p5 = &resp.responses[1].partitions[0];
            assert_eq!(p5.records.as_deref(), Some(&b"xyz"[..]));
        }
    }

    #[test]
    fn record_parts_are_passed_through_not_copied() {
        let rec = Bytes::from(vec![1u8; 4096]);
        let ptr = rec.as_ptr();
        let parts = encode_fetch_body(
            11,
            FetchTop::default(),
            vec![FetchTopicOut {
                topic: "t".into(),
                topic_id: [0; 16],
                partitions: vec![FetchPartitionOut {
                    partition_index: 0,
                    error_code: 0,
                    high_watermark: 1,
                    last_stable_offset: 1,
                    log_start_offset: 0,
                    records: vec![OutPart::Bytes(rec)],
                    diverging_epoch: None,
                    aborted_transactions: None,
                    null_records: false,
                }],
            }],
        );
        let same = parts.iter().any(|p| match p {
            OutPart::Bytes(b) => b.as_ptr() == ptr && b.len() == 4096,
            OutPart::File { .. } | OutPart::Lazy(_) => false,
        });
        assert!(same, "the cached buffer itself must be a part");
    }
}
