//! `[drv]` A leader's record timestamp check on append (Kafka's
//! `LogValidator.validateTimestamp`, see `replication::timestamps`).

use super::{Partition, ProduceResult};
use crate::protocol::ErrorCode;
use crate::replication::timestamps::{
    invalid_timestamps, TimestampPolicy, INVALID_TIMESTAMP_MESSAGE,
};
use crate::storage::partition_log::ValidatedRecords;

impl Partition {
    /// INVALID_TIMESTAMP with the refused records (Produce v8+
    /// `record_errors`, KIP-467) when a record's timestamp is outside the
    /// topic's window or the batch claims LogAppendTime; nothing is
    /// appended then. Walks the records only when a check needs them.
    pub(super) fn check_timestamps(
        &self,
        records: &ValidatedRecords,
        now_ms: i64,
    ) -> Result<(), Box<ProduceResult>> {
        let policy = TimestampPolicy::of(&self.config());
        let mut scratch = self.storage.inflate_scratch();
        let mut record_errors = Vec::new();
        for s in records.summaries() {
            match invalid_timestamps(
                &records.bytes()[s.range.clone()],
                policy,
                now_ms,
                &mut scratch,
            ) {
                Ok(errors) => record_errors.extend(errors),
                Err(e) => {
                    return Err(Box::new(ProduceResult::error(ErrorCode(
                        e.kafka_error_code(),
                    ))))
                }
            }
        }
        if record_errors.is_empty() {
            return Ok(());
        }
        Err(Box::new(ProduceResult {
            record_errors,
            error_message: Some(INVALID_TIMESTAMP_MESSAGE.to_owned()),
            ..ProduceResult::error(ErrorCode::INVALID_TIMESTAMP)
        }))
    }
}
