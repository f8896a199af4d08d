//! `[drv]` Kafka's `LogValidator` on a leader's append (Kafka's
//! `UnifiedLog.analyzeAndValidateRecords` and
//! `LogValidator.validateMessagesAndAssignOffsets`): the checks a produce
//! request's records go through before the append, with what they found
//! for the produce handler's `BrokerTopicMetrics` (records converted, and
//! the meters a refusal marks).

use bytes::Bytes;

use super::{AppendOrigin, Partition, ProduceResult};
use crate::metrics::shard::ValidationStats;
use crate::protocol::record_batch::{self, RefusalMeter};
use crate::protocol::ErrorCode;
use crate::replication::producer_state::ProducerBatch;
use crate::storage::partition_log::ValidatedRecords;

impl Partition {
    /// Kafka's `LogValidator` for a leader's append of a produce
    /// request's records: legacy messages up-converted, the v2 batch
    /// checked, keys and timestamps checked, the topic's codec applied;
    /// with what validating found, or the refusal with the meters it marks.
    #[allow(clippy::type_complexity, reason = "one private call site")]
    pub(super) fn validate_for_leader(
        &self,
        records: Bytes,
        now_ms: i64,
        origin: AppendOrigin,
    ) -> Result<(ValidatedRecords, ProducerBatch, i64, ValidationStats), Box<ProduceResult>> {
        let mut validation = ValidationStats::default();
        let records = match self.up_convert_legacy(records, now_ms, &mut validation) {
            Ok(r) => r,
            Err(refused) => return Err(Box::new(refused.with_validation(validation))),
        };
        let (records, batch, max_timestamp) = match Self::validate_produce(records, origin) {
            Ok(v) => v,
            Err((code, marks)) => {
                validation.add(&marks);
                return Err(Box::new(
                    ProduceResult::error(code).with_validation(validation),
                ));
            }
        };
        if let Err(refused) = self.check_records(&records, now_ms, &mut validation) {
            return Err(Box::new(refused.with_validation(validation)));
        }
        match self.maybe_recompress(records, &mut validation) {
            Ok(records) => Ok((records, batch, max_timestamp, validation)),
            Err(code) => Err(Box::new(
                ProduceResult::error(code).with_validation(validation),
            )),
        }
    }

    /// The one v2 batch of a v3+ produce request for this partition,
    /// validated once here (CRC included; the log appends these bytes
    /// without checking them again), and its producer fields; a refusal
    /// with the `BrokerTopicMetrics` meters Kafka marks for it.
    pub(super) fn validate_produce(
        records: Bytes,
        origin: AppendOrigin,
    ) -> Result<(ValidatedRecords, ProducerBatch, i64), (ErrorCode, ValidationStats)> {
        let mut marks = ValidationStats::default();
        let records = match ValidatedRecords::try_new(records) {
            Ok(r) => r,
            Err((e, bytes)) => {
                match record_batch::refusal_meter(&bytes) {
                    Some(RefusalMeter::InvalidMessageCrc) => marks.invalid_message_crc = 1,
                    Some(RefusalMeter::InvalidOffsetOrSequence) => {
                        marks.invalid_offset_or_sequence = 1;
                    }
                    None => {}
                }
                return Err((ErrorCode(e.kafka_error_code()), marks));
            }
        };
        let refused = |code| (code, ValidationStats::default());
        // Kafka: v3+ produce requests carry exactly one v2 batch per partition.
        let summary = match records.summaries() {
            [one] => one.clone(),
            _ => return Err(refused(ErrorCode::INVALID_RECORD)),
        };
        let view =
            record_batch::RecordBatch::new_unchecked_crc(&records.bytes()[summary.range.clone()])
                .map_err(|e| refused(ErrorCode(e.kafka_error_code())))?;
        // Kafka's `LogValidator.validateBatch` for client appends: no
        // control batches ("Clients are not allowed to write control
        // records") and no producer id without a base sequence, both
        // marked `InvalidOffsetOrSequenceRecordsPerSec`; and a
        // transactional batch needs a producer id.
        let no_sequence =
            origin == AppendOrigin::Client && view.producer_id() >= 0 && view.base_sequence() < 0;
        if view.is_control() || no_sequence {
            marks.invalid_offset_or_sequence = 1;
            return Err((ErrorCode::INVALID_RECORD, marks));
        }
        if view.is_transactional() && view.producer_id() < 0 {
            return Err(refused(ErrorCode::INVALID_RECORD));
        }
        let batch = ProducerBatch {
            producer_id: view.producer_id(),
            epoch: view.producer_epoch(),
            first_seq: view.base_sequence(),
            last_seq: view.base_sequence().wrapping_add(view.last_offset_delta()),
            is_transactional: view.is_transactional(),
        };
        Ok((records, batch, summary.max_timestamp))
    }
}
