//! `[drv]` One partition's gauges for a `/metrics` scrape: its role,
//! replicas and ISR (Kafka's `Partition` gauges) and its log's size,
//! segments and offsets (`UnifiedLog`'s `Size`, `NumLogSegments`,
//! `LogStartOffset`, `LogEndOffset`).

use super::Partition;
use crate::metrics::report::PartitionGauges;
use crate::purgatory::view::PartitionRole;

impl Partition {
    /// The gauges as of `now_ms` (wall clock; `max_txn_timeout_ms` is
    /// `transaction.max.timeout.ms`, what a late transaction is late
    /// against). The size needs the log's read guard: taken at once when
    /// free, else awaited (an append holds the write guard only while it
    /// buffers). Whether it is being reassigned is the metadata's, not
    /// the partition's: left false.
    pub async fn gauges(&self, now_ms: i64, max_txn_timeout_ms: i64) -> PartitionGauges {
        let (size_bytes, segments) = match self.log.try_read() {
            Ok(log) => (log.size_bytes(), log.segment_count()),
            Err(_) => match self.log.read().await {
                Ok(log) => (log.size_bytes(), log.segment_count()),
                Err(_) => (0, 0),
            },
        };
        let ends = self.ends.get();
        let leader = self.role() == PartitionRole::Leader;
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        PartitionGauges {
            topic: self.tp.topic.to_string(),
            partition: self.tp.partition,
            leader,
            offline: self.is_offline(),
            replicas: count(self.replicas.borrow().len()),
            isr: if leader {
                count(self.replica.borrow().isr().len())
            } else {
                0
            },
            min_isr: u32::try_from(self.config().min_insync_replicas.max(1)).unwrap_or(1),
            size_bytes,
            segments: count(segments),
            log_start_offset: ends.log_start_offset,
            log_end_offset: ends.log_end_offset,
            high_watermark: ends.high_watermark,
            last_stable_offset: self.last_stable_offset(ends.high_watermark),
            reassigning: false,
            late_transaction: self
                .producers
                .borrow()
                .has_late_transaction(now_ms, max_txn_timeout_ms),
            producer_ids: self.producers.borrow().len() as u64,
        }
    }
}
