//! `[pure]` Which segments are cleaned into one (Kafka 3.9
//! `Cleaner.groupSegmentsBySize`): consecutive segments while the sum of
//! their sizes stays within `segment.bytes`, their index sizes within
//! `segment.index.bytes`, and their offsets within an i32 of the group's
//! first base offset (relative offsets in an index are 32 bits). The sizes
//! are those before cleaning, so a cleaned segment never outgrows
//! `segment.bytes`.

use std::ops::Range;

/// One segment as the grouping needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupInput {
    pub base_offset: i64,
    pub size: u64,
    /// Bytes of its `.index` (8 per entry) and `.timeindex` (12 per entry).
    pub offset_index_bytes: u64,
    pub time_index_bytes: u64,
}

/// Kafka's `lastOffsetForFirstSegment`: the last offset the head of
/// `segs` can hold (the next one's base - 1, or the uncleanable offset - 1).
fn last_offset_for_first(segs: &[GroupInput], first_uncleanable_offset: i64) -> i64 {
    match segs.get(1) {
        Some(next) => next.base_offset - 1,
        None => first_uncleanable_offset - 1,
    }
}

/// Index ranges into `segments`, covering all of them in order.
pub fn group_segments_by_size(
    segments: &[GroupInput],
    max_size: u64,
    max_index_size: u64,
    first_uncleanable_offset: i64,
) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let head = segments[start];
        let (mut log, mut index, mut time) =
            (head.size, head.offset_index_bytes, head.time_index_bytes);
        let mut end = start + 1;
        while let Some(next) = segments.get(end) {
            let within_offsets = next.size == 0
                || last_offset_for_first(&segments[end..], first_uncleanable_offset)
                    - head.base_offset
                    <= i64::from(i32::MAX);
            let fits = log + next.size <= max_size
                && index + next.offset_index_bytes <= max_index_size
                && time + next.time_index_bytes <= max_index_size
                && within_offsets;
            if !fits {
                break;
            }
            log += next.size;
            index += next.offset_index_bytes;
            time += next.time_index_bytes;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(base: i64, size: u64) -> GroupInput {
        GroupInput {
            base_offset: base,
            size,
            offset_index_bytes: 8,
            time_index_bytes: 12,
        }
    }

    #[test]
    fn consecutive_segments_group_while_they_fit_segment_bytes() {
        let segs = [s(0, 40), s(10, 40), s(20, 40), s(30, 10), s(40, 100)];
        assert_eq!(
            group_segments_by_size(&segs, 100, 1 << 20, 50),
            vec![0..2, 2..4, 4..5]
        );
    }

    #[test]
    fn index_size_limits_a_group() {
        let segs = [s(0, 1), s(10, 1), s(20, 1)];
        // Time index 12 bytes each: two fit in 24.
        assert_eq!(group_segments_by_size(&segs, 100, 24, 30), vec![0..2, 2..3]);
    }

    #[test]
    fn offsets_past_an_i32_of_the_group_start_split_it() {
        let max = i64::from(i32::MAX);
        let segs = [s(0, 1), s(5, 1), s(10, 1)];
        // The last segment may hold offsets up to the uncleanable offset - 1.
        assert_eq!(group_segments_by_size(&segs, 100, 1 << 20, max), vec![0..3]);
        assert_eq!(
            group_segments_by_size(&segs, 100, 1 << 20, max + 2),
            vec![0..2, 2..3]
        );
    }

    #[test]
    fn every_segment_lands_in_exactly_one_group() {
        let segs: Vec<GroupInput> = (0..20).map(|i| s(i * 10, (i as u64 * 7) % 50)).collect();
        let groups = group_segments_by_size(&segs, 60, 1 << 20, 300);
        let covered: Vec<usize> = groups.iter().flat_map(|r| r.clone()).collect();
        assert_eq!(covered, (0..20).collect::<Vec<_>>());
        for g in &groups {
            let total: u64 = segs[g.clone()].iter().map(|x| x.size).sum();
            assert!(g.len() == 1 || total <= 60, "{g:?} holds {total} bytes");
        }
    }
}
