//! `[drv]` A leader's per-record checks on append (Kafka's
//! `LogValidator.validateRecord`): a compacted topic's records need a key
//! (`validateKey`), and each record's timestamp must be inside the topic's
//! window (`validateTimestamp`, see `replication::timestamps`). A record
//! gets one error, its key's before its timestamp's, as Kafka's does; the
//! refused records go back in Produce v8+ `record_errors` (KIP-467).

use super::{Partition, ProduceResult};
use crate::metrics::shard::ValidationStats;
use crate::protocol::record_walk;
use crate::protocol::ErrorCode;
use crate::replication::timestamps::{
    invalid_record_message, invalid_timestamps, refused_records, TimestampPolicy,
    INVALID_TIMESTAMP_MESSAGE,
};
use crate::storage::partition_log::ValidatedRecords;

impl Partition {
    /// INVALID_RECORD (a compacted topic's record without a key) or
    /// INVALID_TIMESTAMP (a timestamp outside the topic's window, or a
    /// batch claiming LogAppendTime) with the refused records; nothing is
    /// appended then. Walks the records only when a check needs them.
    /// Records without a key count in `validation` (Kafka's
    /// `recordNoKeyCompactedTopic`, one mark per record).
    pub(super) fn check_records(
        &self,
        records: &ValidatedRecords,
        now_ms: i64,
        validation: &mut ValidationStats,
    ) -> Result<(), Box<ProduceResult>> {
        let config = self.config();
        let policy = TimestampPolicy::of(&config);
        let compacted = config.is_compacted();
        let mut scratch = self.storage.inflate_scratch();
        let mut record_errors = Vec::new();
        let mut any_timestamp = false;
        let failed = |code: i16| Box::new(ProduceResult::error(ErrorCode(code)));
        for s in records.summaries() {
            let batch = &records.bytes()[s.range.clone()];
            let keyless = if compacted {
                record_walk::keyless_records(batch, &mut scratch)
                    .map_err(|e| failed(e.kafka_error_code()))?
            } else {
                Vec::new()
            };
            validation.no_key_compacted_topic += keyless.len() as u64;
            let timestamps = invalid_timestamps(batch, policy, now_ms, &mut scratch)
                .map_err(|e| failed(e.kafka_error_code()))?;
            if keyless.is_empty() && timestamps.is_empty() {
                continue;
            }
            // Formatted only for a refusal (the produce path allocates nothing).
            let key_error = if keyless.is_empty() {
                String::new()
            } else {
                self.key_error()
            };
            let (timestamp, errors) = refused_records(&keyless, timestamps, &key_error);
            any_timestamp |= timestamp;
            record_errors.extend(errors);
        }
        if record_errors.is_empty() {
            return Ok(());
        }
        let (code, message) = if any_timestamp {
            (
                ErrorCode::INVALID_TIMESTAMP,
                INVALID_TIMESTAMP_MESSAGE.to_owned(),
            )
        } else {
            (
                ErrorCode::INVALID_RECORD,
                invalid_record_message(&record_errors),
            )
        };
        // Kafka's `ReplicaManager` answers a `RecordValidationException`
        // with the partition's log start offset (`processFailedRecord`).
        Err(Box::new(ProduceResult {
            record_errors,
            error_message: Some(message),
            log_start_offset: self.ends.get().log_start_offset,
            ..ProduceResult::error(code)
        }))
    }

    /// Kafka's `validateKey` message.
    fn key_error(&self) -> String {
        format!(
            "Compacted topic cannot accept message without key in topic partition {}",
            self.tp
        )
    }
}
