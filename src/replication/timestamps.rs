//! `[pure]` Kafka's record timestamp checks on append
//! (`storage/.../LogValidator.java` `validateTimestamp`, with the window of
//! `LogConfig.getMessageTimestampBeforeMaxMs` / `AfterMaxMs`, KIP-937):
//!
//! - With `message.timestamp.type=CreateTime`, a record whose timestamp is
//!   not -1 must lie in [now − `message.timestamp.before.max.ms`, now +
//!   `message.timestamp.after.max.ms`]; each bound that is Long.MAX_VALUE
//!   falls back to the deprecated `message.timestamp.difference.max.ms`.
//! - Otherwise (a LogAppendTime topic, or a record without timestamp) a
//!   batch claiming LogAppendTime is refused: "Producer should not set
//!   timestamp type to LogAppendTime".
//!
//! Each refused record is reported with its index in the batch (Produce v8+
//! `record_errors`, KIP-467); the partition's error is INVALID_TIMESTAMP.
//! A batch needs walking only when the window is finite (or it claims
//! LogAppendTime, decided from its header): the default configs cost the
//! append path nothing.

use std::ops::ControlFlow;

use crate::config::topic::{TimestampType as TopicTimestampType, TopicConfig};
use crate::protocol::record_batch::{BatchError, RecordBatch, TimestampType};
use crate::protocol::record_walk::{self, InflateScratch};

/// Kafka's `processRecordErrors` message when any record has an invalid
/// timestamp.
pub const INVALID_TIMESTAMP_MESSAGE: &str =
    "One or more records have been rejected due to invalid timestamp";

/// What a topic's config asks of record timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampPolicy {
    pub log_append_time: bool,
    pub before_max_ms: i64,
    pub after_max_ms: i64,
}

impl TimestampPolicy {
    /// The policy of `config` (Kafka's `LogConfig`: a before/after bound
    /// left at Long.MAX_VALUE takes `message.timestamp.difference.max.ms`).
    pub fn of(config: &TopicConfig) -> Self {
        let or_difference = |v: i64| {
            if v == i64::MAX {
                config.message_timestamp_difference_max_ms
            } else {
                v
            }
        };
        Self {
            log_append_time: config.message_timestamp_type == TopicTimestampType::LogAppendTime,
            before_max_ms: or_difference(config.message_timestamp_before_max_ms),
            after_max_ms: or_difference(config.message_timestamp_after_max_ms),
        }
    }

    /// Whether a CreateTime record's timestamp is checked at all.
    fn has_window(&self) -> bool {
        !self.log_append_time && (self.before_max_ms != i64::MAX || self.after_max_ms != i64::MAX)
    }
}

/// The refused records of the v2 batch at the start of `batch` as (index
/// in the batch, Kafka's message); empty when all pass. `now_ms` is the
/// broker's time. An LZ4 body is inflated in `scratch`.
pub fn invalid_timestamps(
    batch: &[u8],
    policy: TimestampPolicy,
    now_ms: i64,
    scratch: &mut InflateScratch,
) -> Result<Vec<(i32, String)>, BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let claims_append_time = view.timestamp_type() == TimestampType::LogAppendTime;
    if !policy.has_window() && !claims_append_time {
        return Ok(Vec::new());
    }
    // Java's long arithmetic wraps; so do the bounds in its message.
    let low = now_ms.wrapping_sub(policy.before_max_ms);
    let high = now_ms.wrapping_add(policy.after_max_ms);
    let mut errors = Vec::new();
    let mut index: i32 = 0;
    // A LogAppendTime batch gives every record its max timestamp
    // (`DefaultRecordBatch`), which `for_each_record` does too.
    record_walk::for_each_record(batch, scratch, |offset, ts| {
        if !policy.log_append_time && ts != -1 {
            let diff = now_ms.wrapping_sub(ts);
            if diff > policy.before_max_ms || diff.wrapping_neg() > policy.after_max_ms {
                errors.push((
                    index,
                    format!(
                        "Timestamp {ts} of message with offset {offset} is out of range. \
                         The timestamp should be within [{low}, {high}]"
                    ),
                ));
            }
        } else if claims_append_time {
            errors.push((
                index,
                format!(
                    "Invalid timestamp type in message with offset {offset}. \
                     Producer should not set timestamp type to LogAppendTime."
                ),
            ));
        }
        index = index.saturating_add(1);
        ControlFlow::Continue(())
    })?;
    Ok(errors)
}

/// One batch's refused records (Kafka's `LogValidator.validateRecord`):
/// each record gets one error, its missing key's (`keyless`, the indexes
/// of a compacted topic's records without a key, `key_error` their
/// message) before its timestamp's (`timestamps`), in index order. Whether
/// any is a timestamp error (the request's code is INVALID_TIMESTAMP then,
/// else INVALID_RECORD), and the errors.
pub fn refused_records(
    keyless: &[i32],
    timestamps: Vec<(i32, String)>,
    key_error: &str,
) -> (bool, Vec<(i32, String)>) {
    let mut errors: Vec<(i32, String)> = keyless
        .iter()
        .map(|index| (*index, key_error.to_owned()))
        .collect();
    let mut any_timestamp = false;
    for (index, message) in timestamps {
        if !keyless.contains(&index) {
            any_timestamp = true;
            errors.push((index, message));
        }
    }
    errors.sort_by_key(|(index, _)| *index);
    (any_timestamp, errors)
}

/// Kafka's `LogValidator.processRecordErrors` message when no record has
/// an invalid timestamp: the count and the first three errors, as Java
/// prints a list of `ProduceResponse.RecordError`.
pub fn invalid_record_message(errors: &[(i32, String)]) -> String {
    let shown: Vec<String> = errors
        .iter()
        .take(3)
        .map(|(index, message)| format!("RecordError(batchIndex={index}, message='{message}')"))
        .collect();
    format!(
        "One or more records have been rejected due to {} record errors in total, \
         and only showing the first three errors at most: [{}]",
        errors.len(),
        shown.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::topic::BrokerTopicDefaults;
    use crate::protocol::record_batch::set_log_append_time;
    use crate::protocol::test_records::record;
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};

    /// One gzip v2 batch of records with these timestamps (a compressed
    /// body: the walk inflates it).
    fn batch_with_timestamps(timestamps: &[i64]) -> Vec<u8> {
        let recs: Vec<_> = timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| record(i as i64, *ts, None, Some(Bytes::from_static(b"v"))))
            .collect();
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::Gzip,
        };
        RecordBatchEncoder::encode(&mut buf, &recs, &options).expect("encode");
        buf.to_vec()
    }

    const DAY: i64 = 86_400_000;
    const NOW: i64 = 1_700_000_000_000;

    fn policy(before: i64, after: i64) -> TimestampPolicy {
        TimestampPolicy {
            log_append_time: false,
            before_max_ms: before,
            after_max_ms: after,
        }
    }

    fn check(batch: &[u8], p: TimestampPolicy) -> Vec<i32> {
        invalid_timestamps(batch, p, NOW, &mut InflateScratch::default())
            .expect("walk")
            .into_iter()
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn records_outside_the_window_are_named_by_their_index() {
        let batch = batch_with_timestamps(&[NOW, NOW - 2 * DAY, NOW + DAY, -1, NOW - DAY + 1]);
        assert_eq!(check(&batch, policy(DAY, i64::MAX)), vec![1]);
        assert_eq!(check(&batch, policy(DAY, DAY - 1)), vec![1, 2]);
        assert_eq!(check(&batch, policy(i64::MAX, i64::MAX)), Vec::<i32>::new());
        let errors =
            invalid_timestamps(&batch, policy(DAY, 0), NOW, &mut InflateScratch::default())
                .expect("walk");
        assert_eq!(
            errors[0].1,
            format!(
                "Timestamp {} of message with offset 1 is out of range. The timestamp should be within [{}, {}]",
                NOW - 2 * DAY,
                NOW - DAY,
                NOW
            )
        );
    }

    #[test]
    fn the_deprecated_difference_fills_unset_bounds() {
        let mut config = TopicConfig::from_broker_defaults(&BrokerTopicDefaults::default());
        config.message_timestamp_difference_max_ms = DAY;
        config.message_timestamp_after_max_ms = 5;
        let p = TimestampPolicy::of(&config);
        assert_eq!((p.before_max_ms, p.after_max_ms), (DAY, 5));
        config.message_timestamp_type = TopicTimestampType::LogAppendTime;
        assert!(TimestampPolicy::of(&config).log_append_time);
    }

    /// The policy of a topic without overrides on a broker started with
    /// `properties` (the topic defaults the broker hands CreateTopics).
    fn broker_policy(properties: &str) -> TimestampPolicy {
        let server = crate::config::ServerConfig::from_properties(properties, &[])
            .expect("server.properties")
            .config;
        TimestampPolicy::of(&TopicConfig::from_broker_defaults(
            &server.broker_topic_defaults(),
        ))
    }

    #[test]
    fn the_broker_difference_key_bounds_topics_without_overrides() {
        // KIP-937: `log.message.timestamp.difference.max.ms` (deprecated)
        // fills both bounds a topic leaves at Long.MAX_VALUE.
        let batch = batch_with_timestamps(&[NOW, NOW - 2 * DAY, NOW + 2 * DAY, NOW - DAY + 1]);
        assert_eq!(check(&batch, broker_policy("")), Vec::<i32>::new());
        let p = broker_policy("log.message.timestamp.difference.max.ms=86400000\n");
        assert_eq!((p.before_max_ms, p.after_max_ms), (DAY, DAY));
        assert_eq!(check(&batch, p), vec![1, 2]);
        // A bound set by its own broker key wins over the difference.
        let p = broker_policy(
            "log.message.timestamp.difference.max.ms=86400000\n\
             log.message.timestamp.after.max.ms=172800000\n",
        );
        assert_eq!(check(&batch, p), vec![1]);
    }

    #[test]
    fn a_producer_batch_claiming_log_append_time_is_refused_where_kafka_refuses_it() {
        let mut batch = batch_with_timestamps(&[NOW, NOW]);
        set_log_append_time(&mut batch, -1);
        // CreateTime topic: records carry the batch's -1, so the claim is refused.
        assert_eq!(check(&batch, policy(i64::MAX, i64::MAX)), vec![0, 1]);
        // LogAppendTime topic: always refused.
        let lat = TimestampPolicy {
            log_append_time: true,
            ..policy(i64::MAX, i64::MAX)
        };
        set_log_append_time(&mut batch, NOW);
        assert_eq!(check(&batch, lat), vec![0, 1]);
        // CreateTime topic, max timestamp within the window: accepted as Kafka does.
        assert_eq!(check(&batch, policy(DAY, DAY)), Vec::<i32>::new());
    }

    #[test]
    fn a_log_append_time_topic_checks_no_create_time() {
        let batch = batch_with_timestamps(&[NOW - 10 * DAY]);
        let lat = TimestampPolicy {
            log_append_time: true,
            ..policy(1, 1)
        };
        assert_eq!(check(&batch, lat), Vec::<i32>::new());
    }

    #[test]
    fn a_record_gets_one_error_its_keys_before_its_timestamps() {
        let ts = |i: i32| (i, format!("Timestamp of {i} is out of range"));
        let key = "Compacted topic cannot accept message without key in topic partition t-0";
        // Record 1 lacks a key and is old: its key's error only.
        let (any_ts, errors) = refused_records(&[1, 4], vec![ts(1), ts(2)], key);
        assert!(
            any_ts,
            "record 2's timestamp error makes it INVALID_TIMESTAMP"
        );
        assert_eq!(errors, [(1, key.to_owned()), ts(2), (4, key.to_owned())]);
        let (any_ts, errors) = refused_records(&[0, 1, 2, 3], vec![ts(3)], key);
        assert!(!any_ts);
        assert_eq!(errors.len(), 4);
        assert_eq!(
            invalid_record_message(&errors),
            format!(
                "One or more records have been rejected due to 4 record errors in total, and \
                 only showing the first three errors at most: [RecordError(batchIndex=0, \
                 message='{key}'), RecordError(batchIndex=1, message='{key}'), \
                 RecordError(batchIndex=2, message='{key}')]"
            )
        );
        assert_eq!(refused_records(&[], Vec::new(), key), (false, Vec::new()));
    }
}
