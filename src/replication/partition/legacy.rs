//! `[drv]` A leader's append of legacy messages (Produce v0–v2): converted
//! to a v2 batch by `replication::legacy_validator` (Kafka's
//! `LogValidator`) under the topic's config, before the v2 append path,
//! which v2 data reaches without a copy.

use bytes::Bytes;

use super::{Partition, ProduceResult};
use crate::metrics::shard::ValidationStats;
use crate::replication::legacy_validator::{is_legacy, up_convert, LegacyRules};
use crate::replication::timestamps::TimestampPolicy;

impl Partition {
    /// `records` as they are when they start with a v2 batch; otherwise
    /// their up-converted v2 batch, or the answer refusing them. The
    /// conversion (its records, time and memory) or the meters a refusal
    /// marks go to `validation`.
    pub(super) fn up_convert_legacy(
        &self,
        records: Bytes,
        now_ms: i64,
        validation: &mut ValidationStats,
    ) -> Result<Bytes, Box<ProduceResult>> {
        if !is_legacy(&records) {
            return Ok(records);
        }
        let config = self.config();
        let rules = LegacyRules {
            compacted: config.is_compacted(),
            timestamps: TimestampPolicy::of(&config),
            max_message_bytes: usize::try_from(config.max_message_bytes).unwrap_or(0),
        };
        let mut scratch = self.storage.inflate_scratch();
        let timings = self.storage.timings();
        let started = timings.start();
        let converted = up_convert(&records, &rules, now_ms, &mut scratch, validation)
            .map(Bytes::from)
            .map_err(|code| Box::new(ProduceResult::error(code)));
        if converted.is_ok() {
            validation.conversion_ns += timings.elapsed_ns(started);
        }
        converted
    }
}
