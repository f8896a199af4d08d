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
    if waited > config.segment_ms {
        return Some(RollReason::Time);
    }
    if s.offset_index_full || s.time_index_full {
        return Some(RollReason::IndexFull);
    }
    None
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
        }
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
