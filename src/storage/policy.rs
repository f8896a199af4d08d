//! `[pure]` Segment roll rule (Kafka `LogSegment.shouldRoll`).

use super::config::LogConfig;

/// What the active segment looks like when an append arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollInput {
    pub segment_base_offset: i64,
    pub segment_bytes: u64,
    /// Max timestamp of the segment's first batch (None: segment empty).
    pub first_batch_timestamp: Option<i64>,
    /// When the segment was created/opened (fallback when no timestamp).
    pub segment_created_ms: i64,
    pub offset_index_full: bool,
    pub time_index_full: bool,
    /// The incoming append.
    pub append_bytes: u64,
    pub append_max_timestamp: i64,
    pub append_last_offset: i64,
    pub now_ms: i64,
    /// This segment's share of `segment.jitter.ms` ([`roll_jitter_ms`]):
    /// it rolls that much before `segment.ms`.
    pub roll_jitter_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollReason {
    /// `segment.bytes` would be exceeded.
    Size,
    /// `segment.ms` elapsed since the first batch's timestamp.
    Time,
    /// `segment.index.bytes` exhausted.
    IndexFull,
    /// Relative offsets must fit i32 (offset delta > i32::MAX).
    OffsetOverflow,
}

/// Whether to roll before appending. An empty segment never rolls (except
/// for offset overflow), so an oversized batch still lands somewhere.
pub fn should_roll(config: &LogConfig, s: &RollInput) -> Option<RollReason> {
    if s.append_last_offset.saturating_sub(s.segment_base_offset) > i64::from(i32::MAX) {
        return Some(RollReason::OffsetOverflow);
    }
    if s.segment_bytes == 0 {
        return None;
    }
    if s.segment_bytes > config.segment_bytes.saturating_sub(s.append_bytes) {
        return Some(RollReason::Size);
    }
    // Kafka: time waited = incoming max timestamp - first batch timestamp
    // when timestamps exist, else wall time since the segment was created.
    let waited = match s.first_batch_timestamp {
        Some(t) if t >= 0 => s.append_max_timestamp.saturating_sub(t),
        _ => s.now_ms.saturating_sub(s.segment_created_ms),
    };
    if waited > config.segment_ms.saturating_sub(s.roll_jitter_ms) {
        return Some(RollReason::Time);
    }
    if s.offset_index_full || s.time_index_full {
        return Some(RollReason::IndexFull);
    }
    None
}

/// A segment's roll jitter (Kafka's `LogConfig.randomSegmentJitter`, drawn
/// when the segment is created: a number in [0, min(`segment.jitter.ms`,
/// `segment.ms`)), 0 without jitter). Kafka draws it at random; here it is
/// a hash of the partition and the segment's base offset, fixed for the
/// segment's life and spread over the same range, so partitions created
/// together do not all roll at once, and no random source is needed.
pub fn roll_jitter_ms(config: &LogConfig, topic: &str, partition: i32, base_offset: i64) -> i64 {
    let bound = config.segment_jitter_ms.min(config.segment_ms);
    if bound <= 0 {
        return 0;
    }
    // FNV-1a over the name, the partition and the base offset.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = topic
        .bytes()
        .chain(partition.to_be_bytes())
        .chain(base_offset.to_be_bytes());
    for b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    // Kafka's draw is `abs(nextInt) % bound`: below 2^31.
    ((h >> 33) % bound as u64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> RollInput {
        RollInput {
            segment_base_offset: 0,
            segment_bytes: 500,
            first_batch_timestamp: Some(1_000),
            segment_created_ms: 0,
            offset_index_full: false,
            time_index_full: false,
            append_bytes: 100,
            append_max_timestamp: 1_050,
            append_last_offset: 10,
            now_ms: 2_000,
            roll_jitter_ms: 0,
        }
    }

    #[test]
    fn segment_jitter_ms_rolls_a_segment_early_by_its_own_share() {
        let cfg = LogConfig {
            segment_ms: 100,
            segment_jitter_ms: 60,
            ..LogConfig::default()
        };
        // Waited 80 ms of segment.ms 100: rolls with a jitter over 20.
        let input = |jitter| RollInput {
            append_max_timestamp: 1_080,
            roll_jitter_ms: jitter,
            ..base()
        };
        assert_eq!(should_roll(&cfg, &input(0)), None);
        assert_eq!(should_roll(&cfg, &input(20)), None);
        assert_eq!(should_roll(&cfg, &input(21)), Some(RollReason::Time));
        // Each segment's share lies in [0, min(jitter, segment.ms)) and
        // they differ across partitions and segments.
        let shares: std::collections::BTreeSet<i64> = (0..200)
            .map(|i| roll_jitter_ms(&cfg, "t", i % 7, i64::from(i) * 1000))
            .collect();
        assert!(shares.iter().all(|j| (0..60).contains(j)), "{shares:?}");
        assert!(shares.len() > 30, "{shares:?}");
        let capped = LogConfig {
            segment_ms: 10,
            ..cfg.clone()
        };
        assert!((0..200).all(|i| roll_jitter_ms(&capped, "t", 0, i) < 10));
        let none = LogConfig::default();
        assert_eq!(none.segment_jitter_ms, 0);
        assert_eq!(roll_jitter_ms(&none, "t", 0, 5), 0);
    }

    #[test]
    fn roll_rule_table() {
        let cfg = LogConfig {
            segment_bytes: 1000,
            segment_ms: 100,
            ..LogConfig::default()
        };
        let rows: Vec<(&str, RollInput, Option<RollReason>)> = vec![
            ("fits", base(), None),
            (
                "size exceeded",
                RollInput {
                    append_bytes: 501,
                    ..base()
                },
                Some(RollReason::Size),
            ),
            (
                "size exactly full",
                RollInput {
                    append_bytes: 500,
                    ..base()
                },
                None,
            ),
            (
                "timestamp age",
                RollInput {
                    append_max_timestamp: 1_101,
                    ..base()
                },
                Some(RollReason::Time),
            ),
            (
                "no timestamp: wall age",
                RollInput {
                    first_batch_timestamp: Some(-1),
                    ..base()
                },
                Some(RollReason::Time),
            ),
            (
                "index full",
                RollInput {
                    offset_index_full: true,
                    ..base()
                },
                Some(RollReason::IndexFull),
            ),
            (
                "time index full",
                RollInput {
                    time_index_full: true,
                    ..base()
                },
                Some(RollReason::IndexFull),
            ),
            (
                "offset overflow",
                RollInput {
                    append_last_offset: i64::from(i32::MAX) + 1,
                    ..base()
                },
                Some(RollReason::OffsetOverflow),
            ),
            (
                "empty never rolls on size",
                RollInput {
                    segment_bytes: 0,
                    append_bytes: 5000,
                    ..base()
                },
                None,
            ),
        ];
        for (name, input, want) in rows {
            assert_eq!(should_roll(&cfg, &input), want, "{name}");
        }
    }
}
