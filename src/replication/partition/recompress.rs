//! `[drv]` A leader's `compression.type` on append (Kafka's `LogValidator`,
//! see `replication::recompress`): a batch whose codec differs from the
//! topic's target is rebuilt; every other batch keeps the request's bytes.

use bytes::Bytes;

use super::Partition;
use crate::metrics::shard::ValidationStats;
use crate::protocol::ErrorCode;
use crate::replication::recompress::{recompress, TargetCompression};
use crate::storage::partition_log::ValidatedRecords;

impl Partition {
    /// `records` with the topic's `compression.type` applied. A batch over
    /// `max.message.bytes` is left as it came: the append refuses it with
    /// its produced size, as Kafka's `analyzeAndValidateRecords` checks the
    /// size before the validator converts anything. A rebuilt batch's
    /// records count as converted (Kafka's `buildRecordsAndAssignOffsets`
    /// counts every record it rebuilds), with the time and the memory
    /// (inflated and rebuilt bytes) it took, in `validation`.
    pub(super) fn maybe_recompress(
        &self,
        records: ValidatedRecords,
        validation: &mut ValidationStats,
    ) -> Result<ValidatedRecords, ErrorCode> {
        let config = self.config();
        let Some(target) = TargetCompression::of(&config) else {
            return Ok(records);
        };
        let max = usize::try_from(config.max_message_bytes).unwrap_or(0);
        let convert = records.summaries().iter().any(|s| {
            s.range.len() <= max && target.needs_conversion(&records.bytes()[s.range.clone()])
        });
        if !convert {
            return Ok(records);
        }
        let mut scratch = self.storage.inflate_scratch();
        let timings = self.storage.timings();
        let started = timings.start();
        let mut converted = ValidationStats::default();
        let mut out = Vec::with_capacity(records.bytes().len());
        for s in records.summaries() {
            let batch = &records.bytes()[s.range.clone()];
            if s.range.len() <= max && target.needs_conversion(batch) {
                let rebuilt = recompress(batch, target, &mut scratch)
                    .map_err(|e| ErrorCode(e.kafka_error_code()))?;
                converted.converted_records += u64::try_from(s.record_count).unwrap_or(0);
                converted.temporary_memory_bytes += (batch.len() + rebuilt.len()) as u64;
                out.extend_from_slice(&rebuilt);
            } else {
                out.extend_from_slice(batch);
            }
        }
        converted.conversion_ns = timings.elapsed_ns(started);
        validation.add(&converted);
        ValidatedRecords::new(Bytes::from(out)).map_err(|e| ErrorCode(e.kafka_error_code()))
    }
}
