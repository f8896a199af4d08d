//! `[pure]` Read-ahead planning for fetches served from segment files.
//!
//! Segments are written with O_DIRECT, so a segment is not in the page
//! cache when a consumer that fell behind the batch cache reads it. A
//! `sendfile` of such a region makes the shard thread wait for the disk
//! (the kernel's own read-ahead starts small and restarts at every
//! segment): a cold catch-up read measured ~0.47 GB/s where the same bytes
//! from the page cache went at ~3.4 GB/s. So each file read also asks the
//! kernel, off the shard, to start reading the next window of the segment
//! (`posix_fadvise(WILLNEED)`), and by the time the consumer's next fetch
//! comes the bytes are in memory. This module only decides *what* to ask
//! for, so that a consumer moving forward asks once per half window, not
//! once per fetch.

/// What one segment has asked the kernel to read ahead: `[from, to)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadAhead {
    from: u64,
    to: u64,
}

impl ReadAhead {
    /// A fetch is about to read `[start, end)` of a file holding
    /// `file_end` bytes. Returns the byte range to read ahead now, if any:
    /// up to `window` bytes past `end`, starting where the last request
    /// stopped when the read continues it. Nothing while the requested
    /// range still reaches at least half a window past `end` (so
    /// sequential fetches ask once per half window), nor for `window == 0`.
    pub fn plan(&mut self, start: u64, end: u64, file_end: u64, window: u64) -> Option<(u64, u64)> {
        if window == 0 || start >= end {
            return None;
        }
        let target = end.saturating_add(window).min(file_end);
        // A read inside the asked range continues it, unless it is more
        // than a window behind its end: another consumer, further back,
        // whose bytes the first one's requests may no longer cover (the
        // page cache may have dropped them). It starts its own range.
        let continues = start >= self.from
            && start <= self.to
            && self.to - start <= window.saturating_add(window / 2);
        if continues && self.to >= end.saturating_add(window / 2).min(file_end) {
            return None;
        }
        let from = if continues { self.to.max(start) } else { start };
        if target <= from {
            return None;
        }
        *self = ReadAhead {
            from: if continues { self.from } else { start },
            to: target,
        };
        Some((from, target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_first_read_asks_for_its_range_and_a_window_beyond() {
        let mut ra = ReadAhead::default();
        assert_eq!(ra.plan(0, MIB, 100 * MIB, 16 * MIB), Some((0, 17 * MIB)));
    }

    #[test]
    fn sequential_reads_ask_again_only_after_half_a_window() {
        let mut ra = ReadAhead::default();
        let w = 16 * MIB;
        let mut asked = Vec::new();
        for i in 0..32 {
            if let Some(r) = ra.plan(i * MIB, (i + 1) * MIB, 1000 * MIB, w) {
                asked.push(r);
            }
        }
        // First request covers [0, 17); the next once less than half a
        // window is left ahead of a read (read end 10 MiB), continuing from
        // 17 to 10 + 16; and so on about every half window.
        assert_eq!(
            asked,
            vec![
                (0, 17 * MIB),
                (17 * MIB, 26 * MIB),
                (26 * MIB, 35 * MIB),
                (35 * MIB, 44 * MIB)
            ]
        );
        // Requests never overlap and leave no gap.
        for pair in asked.windows(2) {
            assert_eq!(pair[0].1, pair[1].0);
        }
    }

    #[test]
    fn the_window_stops_at_the_end_of_the_file() {
        let mut ra = ReadAhead::default();
        assert_eq!(ra.plan(0, MIB, 4 * MIB, 16 * MIB), Some((0, 4 * MIB)));
        // Everything up to the file's end is asked for: nothing more.
        assert_eq!(ra.plan(MIB, 2 * MIB, 4 * MIB, 16 * MIB), None);
        // The file grew (active segment): the new bytes are asked for.
        assert_eq!(
            ra.plan(2 * MIB, 3 * MIB, 30 * MIB, 16 * MIB),
            Some((4 * MIB, 19 * MIB))
        );
    }

    #[test]
    fn a_jump_outside_the_asked_range_starts_over_at_the_read() {
        let mut ra = ReadAhead::default();
        ra.plan(0, MIB, 1000 * MIB, 16 * MIB);
        assert_eq!(
            ra.plan(500 * MIB, 501 * MIB, 1000 * MIB, 16 * MIB),
            Some((500 * MIB, 517 * MIB))
        );
        // And a jump backwards too.
        assert_eq!(
            ra.plan(10 * MIB, 11 * MIB, 1000 * MIB, 16 * MIB),
            Some((10 * MIB, 27 * MIB))
        );
    }

    #[test]
    fn a_second_consumer_far_behind_the_first_asks_for_its_own_range() {
        let mut ra = ReadAhead::default();
        let w = 16 * MIB;
        for i in 0..40 {
            ra.plan(i * MIB, (i + 1) * MIB, 1000 * MIB, w);
        }
        // The first reader has asked up to 56 MiB; a reader at 0 is far
        // behind and asks again, from where it reads.
        assert_eq!(ra.plan(0, MIB, 1000 * MIB, w), Some((0, 17 * MIB)));
        // One just behind the asked end is still covered.
        let mut ra = ReadAhead::default();
        ra.plan(0, MIB, 1000 * MIB, w);
        assert_eq!(ra.plan(2 * MIB, 3 * MIB, 1000 * MIB, w), None);
    }

    #[test]
    fn a_zero_window_or_empty_read_asks_for_nothing() {
        let mut ra = ReadAhead::default();
        assert_eq!(ra.plan(0, MIB, 100 * MIB, 0), None);
        assert_eq!(ra.plan(MIB, MIB, 100 * MIB, 16 * MIB), None);
    }
}
