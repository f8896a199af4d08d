//! `[pure]` Which compacted log to clean next, and which part of it
//! (Kafka 3.9 `LogCleanerManager`: `grabFilthiestCompactedLog`,
//! `cleanableOffsets`, `calculateCleanableBytes`, `maxCompactionDelay`,
//! and `LogToClean`).
//!
//! A log is described by its segments as data ([`LogStat`]); the driver
//! builds one per compacted log under the log's lock and asks here.
//!
//! - The first dirty offset is the checkpointed one, reset to the log
//!   start when it lies outside `[log start, log end]` (and then the
//!   checkpoint is rewritten).
//! - The first uncleanable offset is the least of the last stable offset
//!   (the partition's: below its open transactions and the HW), the active segment's
//!   base offset, and the base of the first dirty segment whose largest
//!   timestamp is within `min.compaction.lag.ms` of now.
//! - The cleanable ratio is cleanable bytes / (clean + cleanable bytes); a
//!   log qualifies when it exceeds `min.cleanable.dirty.ratio`, or when it
//!   has cleanable bytes and its oldest dirty batch is older than
//!   `max.compaction.lag.ms` (KIP-354), and the dirtiest one wins.
//! - shardlog adds one case: a log whose cleaned part holds tombstones
//!   whose delete horizon (KIP-534) has passed qualifies too, so an idle
//!   topic's tombstones do go away after `delete.retention.ms` (Kafka drops
//!   them only when the log next qualifies by ratio or lag).

use crate::storage::config::LogConfig;
pub use crate::storage::partition_log::SegmentStat;

/// The topic keys the selection reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionConfig {
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
}

impl CompactionConfig {
    /// The keys of a log's config (a topic's overrides over the broker's
    /// `log.cleaner.min.cleanable.ratio`, `log.cleaner.min.compaction.lag.ms`
    /// and `log.cleaner.max.compaction.lag.ms`).
    pub fn of(config: &LogConfig) -> Self {
        CompactionConfig {
            min_cleanable_dirty_ratio: config.min_cleanable_dirty_ratio,
            min_compaction_lag_ms: config.min_compaction_lag_ms,
            max_compaction_lag_ms: config.max_compaction_lag_ms,
        }
    }
}

/// One compacted log as the selection sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogStat {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The last stable offset (= high watermark without transactions).
    pub last_stable_offset: i64,
    /// Every segment in offset order. Segments from the first one that is
    /// still written (the active segment, or one a roll is still closing)
    /// count as active.
    pub segments: Vec<SegmentStat>,
    /// Base offset of the first segment that is still being written.
    pub active_base_offset: i64,
    pub checkpoint: Option<i64>,
    /// Earliest delete horizon the cleaner set in this log's cleaned part
    /// and has not yet passed a clean after (shardlog, see module doc).
    pub pending_delete_horizon_ms: Option<i64>,
    pub config: CompactionConfig,
}

/// Kafka's `LogToClean`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogToClean {
    pub first_dirty_offset: i64,
    /// Where this round's cleaning must stop (a segment base offset).
    pub first_uncleanable_offset: i64,
    pub clean_bytes: u64,
    pub cleanable_bytes: u64,
    pub needs_compaction_now: bool,
    /// The checkpointed offset was out of range: rewrite it.
    pub force_update_checkpoint: bool,
    pub delete_horizon_due: bool,
}

impl LogToClean {
    pub fn total_bytes(&self) -> u64 {
        self.clean_bytes + self.cleanable_bytes
    }
    pub fn cleanable_ratio(&self) -> f64 {
        if self.total_bytes() == 0 {
            0.0
        } else {
            self.cleanable_bytes as f64 / self.total_bytes() as f64
        }
    }
}

impl LogStat {
    /// Kafka's `logSegments(from, to)`: segments holding offsets in
    /// `[from, to)` (the one at or below `from`, then those below `to`).
    fn segments_in(&self, from: i64, to: i64) -> impl Iterator<Item = &SegmentStat> {
        let segs = &self.segments;
        segs.iter().enumerate().filter_map(move |(i, s)| {
            let next = segs.get(i + 1).map_or(i64::MAX, |n| n.base_offset);
            (s.base_offset < to && next > from).then_some(s)
        })
    }

    /// Kafka's `nonActiveLogSegmentsFrom(from)`.
    fn non_active_from(&self, from: i64) -> impl Iterator<Item = &SegmentStat> {
        let active = self.active_base_offset;
        self.segments_in(from, active)
            .filter(move |s| s.base_offset < active)
    }

    /// `(first dirty offset, first uncleanable dirty offset, force update)`
    /// (Kafka's `cleanableOffsets`).
    pub fn cleanable_offsets(&self, now_ms: i64) -> (i64, i64, bool) {
        let start = self.log_start_offset;
        let checkpointed = self.checkpoint.unwrap_or(start);
        let (first_dirty, force) = if checkpointed < start || checkpointed > self.log_end_offset {
            (start, true)
        } else {
            (checkpointed, false)
        };
        let lag = self.config.min_compaction_lag_ms.max(0);
        let mut uncleanable = self.last_stable_offset.min(self.active_base_offset);
        if lag > 0 {
            if let Some(s) = self
                .non_active_from(first_dirty)
                .find(|s| s.largest_timestamp > now_ms.saturating_sub(lag))
            {
                uncleanable = uncleanable.min(s.base_offset);
            }
        }
        (first_dirty, first_dirty.max(uncleanable), force)
    }

    /// Kafka's `maxCompactionDelay`: how far past `max.compaction.lag.ms`
    /// the oldest dirty batch is (0 when not past).
    pub fn max_compaction_delay(&self, first_dirty: i64, now_ms: i64) -> i64 {
        let earliest = self
            .non_active_from(first_dirty)
            .filter_map(|s| s.first_batch_timestamp)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(i64::MAX);
        let until = now_ms.saturating_sub(self.config.max_compaction_lag_ms.max(0));
        if earliest < until {
            until - earliest
        } else {
            0
        }
    }

    /// Kafka's `LogToClean` for this log now.
    pub fn to_clean(&self, now_ms: i64) -> LogToClean {
        let (first_dirty, uncleanable, force) = self.cleanable_offsets(now_ms);
        // calculateCleanableBytes: the cut is the base of the segment
        // holding the uncleanable offset (or the active segment).
        let first_uncleanable = self
            .non_active_from(uncleanable)
            .next()
            .map_or(self.active_base_offset, |s| s.base_offset);
        let cleanable_bytes = self
            .segments_in(first_dirty.min(first_uncleanable), first_uncleanable)
            .map(|s| s.size)
            .sum();
        let clean_bytes = self.segments_in(-1, first_dirty).map(|s| s.size).sum();
        LogToClean {
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: first_uncleanable,
            clean_bytes,
            cleanable_bytes,
            needs_compaction_now: self.max_compaction_delay(first_dirty, now_ms) > 0,
            force_update_checkpoint: force,
            delete_horizon_due: self
                .pending_delete_horizon_ms
                .is_some_and(|h| h <= now_ms && first_uncleanable > self.log_start_offset),
        }
    }

    /// Whether `ltc` meets the threshold (`grabFilthiestCompactedLog`).
    pub fn is_cleanable(&self, ltc: &LogToClean) -> bool {
        ltc.total_bytes() > 0
            && ((ltc.needs_compaction_now && ltc.cleanable_bytes > 0)
                || ltc.cleanable_ratio() > self.config.min_cleanable_dirty_ratio
                || ltc.delete_horizon_due)
    }
}

/// The dirtiest cleanable log among `logs` (in the caller's order; the
/// first of equally dirty logs wins), with what to clean of it.
pub fn grab_filthiest(logs: &[LogStat], now_ms: i64) -> Option<(usize, LogToClean)> {
    survey(logs, now_ms).0
}

/// [`grab_filthiest`], and the largest cleanable ratio among the logs
/// holding any bytes, cleanable or not (Kafka's `dirtiestLogCleanableRatio`,
/// the `max-dirty-percent` gauge; 0 without such a log).
pub fn survey(logs: &[LogStat], now_ms: i64) -> (Option<(usize, LogToClean)>, f64) {
    let mut best: Option<(usize, LogToClean)> = None;
    let mut dirtiest = 0.0f64;
    for (i, log) in logs.iter().enumerate() {
        let ltc = log.to_clean(now_ms);
        if ltc.total_bytes() > 0 {
            dirtiest = dirtiest.max(ltc.cleanable_ratio());
        }
        if !log.is_cleanable(&ltc) {
            continue;
        }
        if best.is_none_or(|(_, b)| ltc.cleanable_ratio() > b.cleanable_ratio()) {
            best = Some((i, ltc));
        }
    }
    (best, dirtiest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64, size: u64, ts: i64) -> SegmentStat {
        SegmentStat {
            base_offset: base,
            size,
            largest_timestamp: ts,
            first_batch_timestamp: Some(ts),
        }
    }

    fn log(segments: Vec<SegmentStat>, checkpoint: Option<i64>) -> LogStat {
        let active = segments.last().map_or(0, |s| s.base_offset);
        LogStat {
            log_start_offset: segments.first().map_or(0, |s| s.base_offset),
            log_end_offset: active + 10,
            last_stable_offset: active + 10,
            segments,
            active_base_offset: active,
            checkpoint,
            pending_delete_horizon_ms: None,
            config: CompactionConfig {
                min_cleanable_dirty_ratio: 0.5,
                min_compaction_lag_ms: 0,
                max_compaction_lag_ms: i64::MAX,
            },
        }
    }

    #[test]
    fn never_cleaned_log_is_all_dirty_up_to_the_active_segment() {
        let l = log(vec![seg(0, 100, 1), seg(10, 100, 2), seg(20, 5, 3)], None);
        let t = l.to_clean(1000);
        assert_eq!((t.first_dirty_offset, t.first_uncleanable_offset), (0, 20));
        assert_eq!((t.clean_bytes, t.cleanable_bytes), (0, 200));
        assert!(l.is_cleanable(&t));
    }

    #[test]
    fn the_survey_reports_the_dirtiest_ratio_even_below_the_minimum() {
        // 100 clean, 100 dirty: ratio 0.5, not cleanable at 0.5.
        let half = log(
            vec![seg(0, 100, 1), seg(10, 100, 2), seg(20, 5, 3)],
            Some(10),
        );
        let (picked, dirtiest) = survey(std::slice::from_ref(&half), 1000);
        assert!(picked.is_none());
        assert!((dirtiest - 0.5).abs() < 1e-9, "{dirtiest}");
        assert_eq!(survey(&[], 0).1, 0.0);
    }

    #[test]
    fn ratio_must_exceed_min_cleanable_dirty_ratio() {
        // 100 clean, 100 dirty: ratio 0.5, not > 0.5.
        let l = log(
            vec![seg(0, 100, 1), seg(10, 100, 2), seg(20, 5, 3)],
            Some(10),
        );
        let t = l.to_clean(1000);
        assert_eq!((t.clean_bytes, t.cleanable_bytes), (100, 100));
        assert!(!l.is_cleanable(&t));
        let mut lower = l.clone();
        lower.config.min_cleanable_dirty_ratio = 0.49;
        assert!(lower.is_cleanable(&lower.to_clean(1000)));
    }

    #[test]
    fn min_compaction_lag_holds_back_recent_segments() {
        let mut l = log(
            vec![seg(0, 100, 100), seg(10, 100, 900), seg(20, 5, 950)],
            None,
        );
        l.config.min_compaction_lag_ms = 200;
        // now 1000: segment 10 (largest ts 900 > 800) is too young.
        let t = l.to_clean(1000);
        assert_eq!(t.first_uncleanable_offset, 10);
        assert_eq!(t.cleanable_bytes, 100);
    }

    #[test]
    fn the_high_watermark_bounds_the_cleanable_part() {
        let mut l = log(vec![seg(0, 100, 1), seg(10, 100, 2), seg(20, 5, 3)], None);
        l.last_stable_offset = 15;
        let t = l.to_clean(1000);
        // The segment holding offset 15 starts at 10: clean only below it.
        assert_eq!(t.first_uncleanable_offset, 10);
    }

    #[test]
    fn out_of_range_checkpoint_resets_to_log_start_and_is_rewritten() {
        let l = log(
            vec![seg(5, 100, 1), seg(10, 100, 2), seg(20, 5, 3)],
            Some(2),
        );
        let t = l.to_clean(1000);
        assert_eq!(t.first_dirty_offset, 5);
        assert!(t.force_update_checkpoint);
        let ahead = log(vec![seg(5, 100, 1), seg(20, 5, 3)], Some(99));
        assert_eq!(ahead.to_clean(0).first_dirty_offset, 5);
    }

    #[test]
    fn max_compaction_lag_makes_a_barely_dirty_log_cleanable() {
        let mut l = log(
            vec![seg(0, 1000, 1), seg(10, 10, 50), seg(20, 5, 60)],
            Some(10),
        );
        assert!(!l.is_cleanable(&l.to_clean(100)));
        l.config.max_compaction_lag_ms = 30;
        // Oldest dirty batch at 50 < 100 - 30.
        assert_eq!(l.max_compaction_delay(10, 100), 20);
        assert!(l.is_cleanable(&l.to_clean(100)));
    }

    /// The log config of a compacted topic without other overrides on a
    /// broker started with `properties`.
    fn compacted_on_broker(properties: &str) -> LogConfig {
        use crate::config::topic::TopicConfig;
        let server = crate::config::ServerConfig::from_properties(properties, &[])
            .expect("server.properties")
            .config;
        let overrides = [("cleanup.policy".to_owned(), "compact".to_owned())].into();
        let topic = TopicConfig::resolve(&overrides, &server.broker_topic_defaults())
            .expect("topic config");
        LogConfig::for_topic(&topic, &server)
    }

    #[test]
    fn the_broker_min_compaction_lag_holds_back_recent_segments_of_topics_without_override() {
        let segments = vec![seg(0, 100, 100), seg(10, 100, 900), seg(20, 5, 950)];
        let mut l = log(segments, None);
        l.config = CompactionConfig::of(&compacted_on_broker(""));
        assert_eq!(l.to_clean(1000).first_uncleanable_offset, 20);
        // `log.cleaner.min.compaction.lag.ms` is `min.compaction.lag.ms`'s
        // default: at 1000, segment 10 (largest timestamp 900 > 800) waits.
        let config = compacted_on_broker("log.cleaner.min.compaction.lag.ms=200\n");
        assert_eq!(config.min_compaction_lag_ms, 200);
        l.config = CompactionConfig::of(&config);
        let t = l.to_clean(1000);
        assert_eq!((t.first_uncleanable_offset, t.cleanable_bytes), (10, 100));
        // ... until the lag has passed.
        assert_eq!(l.to_clean(1101).first_uncleanable_offset, 20);
    }

    #[test]
    fn the_broker_max_compaction_lag_forces_a_clean_and_a_roll_of_topics_without_override() {
        // 1000 clean bytes, 10 dirty: far below min.cleanable.dirty.ratio.
        let segments = vec![seg(0, 1000, 1), seg(10, 10, 50), seg(20, 5, 60)];
        let mut l = log(segments, Some(10));
        let default = compacted_on_broker("");
        l.config = CompactionConfig::of(&default);
        assert!(!l.is_cleanable(&l.to_clean(100)));
        assert!(grab_filthiest(std::slice::from_ref(&l), 100).is_none());
        // `log.cleaner.max.compaction.lag.ms` (KIP-354) is
        // `max.compaction.lag.ms`'s default: the dirty batch at 50 is past
        // it at 100, so the log is cleaned now.
        let config = compacted_on_broker("log.cleaner.max.compaction.lag.ms=30\n");
        l.config = CompactionConfig::of(&config);
        let (_, t) = grab_filthiest(std::slice::from_ref(&l), 100).expect("cleaned now");
        assert!(t.needs_compaction_now);
        assert!(l.to_clean(80).cleanable_bytes > 0 && !l.is_cleanable(&l.to_clean(80)));
        // Kafka's `LogConfig.maxSegmentMs`: the compacted log also rolls its
        // active segment by then, so that segment becomes cleanable.
        assert_eq!(
            (default.segment_ms, config.segment_ms),
            (7 * 86_400_000, 30)
        );
    }

    #[test]
    fn a_passed_delete_horizon_makes_a_clean_log_cleanable() {
        let mut l = log(vec![seg(0, 1000, 1), seg(20, 5, 60)], Some(20));
        l.pending_delete_horizon_ms = Some(500);
        assert!(!l.is_cleanable(&l.to_clean(499)));
        assert!(l.is_cleanable(&l.to_clean(500)));
    }

    #[test]
    fn the_filthiest_log_wins_and_ties_keep_the_first() {
        let a = log(
            vec![seg(0, 100, 1), seg(10, 300, 2), seg(20, 5, 3)],
            Some(10),
        );
        let b = log(
            vec![seg(0, 100, 1), seg(10, 900, 2), seg(20, 5, 3)],
            Some(10),
        );
        let clean = log(vec![seg(0, 100, 1), seg(20, 5, 3)], Some(20));
        let (i, t) = grab_filthiest(&[a.clone(), b.clone(), clean.clone()], 0).unwrap();
        assert_eq!(i, 1);
        assert_eq!(t.cleanable_bytes, 900);
        assert_eq!(grab_filthiest(&[a.clone(), a], 0).unwrap().0, 0);
        assert!(grab_filthiest(&[clean], 0).is_none());
    }

    #[test]
    fn empty_logs_are_skipped() {
        let l = log(vec![seg(0, 0, -1)], None);
        assert!(grab_filthiest(&[l], 0).is_none());
    }
}
