//! `[pure]` A latency histogram of the recent past, for Kafka's request
//! percentiles.
//!
//! Kafka's request histograms (`RequestChannel.scala`, Yammer's
//! exponentially decaying "biased" reservoir) report percentiles weighted
//! toward the last few minutes, and a count of every observation since
//! start (the JMX exporter's `_count`). This keeps two HdrHistogram
//! windows of [`WINDOW_MS`] each: percentiles come from the current and
//! the previous window together (the last 60–120 s), the count from a
//! plain counter. Values are microseconds with two significant digits
//! (1% resolution): about 25 KiB a window, allocated on first use.

use hdrhistogram::Histogram;

/// Length of one window.
pub const WINDOW_MS: i64 = 60_000;
/// Largest value kept apart (one hour in µs); larger ones are clamped.
/// Values below 1 µs (the lowest discernible one) count as 0.
const HIGHEST_US: u64 = 3_600_000_000;
/// Significant digits of the recorded values.
const SIGFIG: u8 = 2;

/// The quantiles Kafka's Yammer histograms expose, as the JMX exporter
/// labels them under Strimzi's rules (`quantile="0.50"` …).
pub const KAFKA_QUANTILES: [(&str, f64); 6] = [
    ("0.50", 0.50),
    ("0.75", 0.75),
    ("0.95", 0.95),
    ("0.98", 0.98),
    ("0.99", 0.99),
    ("0.999", 0.999),
];

/// An empty histogram with this module's bounds.
#[allow(clippy::expect_used, reason = "constant bounds hdrhistogram accepts")]
pub fn empty() -> Histogram<u64> {
    // The bounds are constants hdrhistogram accepts (low >= 1, high >=
    // 2 * low, sigfig <= 5), so creation cannot fail.
    Histogram::new_with_bounds(1, HIGHEST_US, SIGFIG).expect("constant valid bounds")
}

/// Two windows of recent observations and the count since start.
#[derive(Debug, Clone, PartialEq)]
pub struct RecentHistogram {
    current: Option<Histogram<u64>>,
    previous: Option<Histogram<u64>>,
    /// Start of the current window (ms, the caller's clock).
    window_start_ms: i64,
    count: u64,
}

impl Default for RecentHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl RecentHistogram {
    pub fn new() -> Self {
        Self {
            current: None,
            previous: None,
            window_start_ms: i64::MIN,
            count: 0,
        }
    }

    /// Move on to a new window when the current one is over; the previous
    /// one is dropped once two windows passed without a rotation.
    fn rotate(&mut self, now_ms: i64) {
        if self.window_start_ms == i64::MIN {
            self.window_start_ms = now_ms;
            return;
        }
        let age = now_ms.saturating_sub(self.window_start_ms);
        if age < WINDOW_MS {
            return;
        }
        if age >= 2 * WINDOW_MS {
            self.previous = None;
            if let Some(c) = self.current.as_mut() {
                c.reset();
            }
        } else {
            match (&mut self.previous, self.current.take()) {
                (Some(p), Some(mut c)) => {
                    std::mem::swap(p, &mut c);
                    c.reset();
                    self.current = Some(c);
                }
                (prev, c) => *prev = c,
            }
        }
        self.window_start_ms = now_ms;
    }

    /// One observation of `us` microseconds at `now_ms`.
    pub fn record_us(&mut self, now_ms: i64, us: u64) {
        self.rotate(now_ms);
        self.count += 1;
        let h = self.current.get_or_insert_with(empty);
        // Within bounds after the clamp, so this cannot fail.
        let _ = h.record(us.min(HIGHEST_US));
    }

    /// Observations since start.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Both windows as one histogram, as of `now_ms` (`None`: nothing
    /// recent).
    pub fn recent(&mut self, now_ms: i64) -> Option<Histogram<u64>> {
        self.rotate(now_ms);
        let mut out: Option<Histogram<u64>> = None;
        for h in [&self.current, &self.previous].into_iter().flatten() {
            match out.as_mut() {
                // Same bounds on both sides: `add` cannot fail.
                Some(o) => {
                    let _ = o.add(h);
                }
                None => out = Some(h.clone()),
            }
        }
        out.filter(|h| !h.is_empty())
    }
}

/// Kafka's quantiles of `h` in milliseconds (`h` holds microseconds).
pub fn quantiles_ms(h: &Histogram<u64>) -> [(&'static str, f64); 6] {
    KAFKA_QUANTILES.map(|(name, q)| (name, h.value_at_quantile(q) as f64 / 1_000.0))
}

/// Kafka's quantiles of `h` as recorded (a histogram of sizes in bytes).
pub fn quantiles_raw(h: &Histogram<u64>) -> [(&'static str, f64); 6] {
    KAFKA_QUANTILES.map(|(name, q)| (name, h.value_at_quantile(q) as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_last_two_windows_and_the_count_from_all() {
        let mut h = RecentHistogram::new();
        for i in 0..100u64 {
            h.record_us(0, 1_000 * (i + 1));
        }
        let recent = h.recent(10).unwrap();
        let q = quantiles_ms(&recent);
        assert!((q[0].1 - 50.0).abs() <= 1.0, "{q:?}");
        assert!((q[5].1 - 100.0).abs() <= 1.0, "{q:?}");
        // One window later the old values are the previous window.
        h.record_us(WINDOW_MS, 5_000_000);
        assert_eq!(h.recent(WINDOW_MS).unwrap().len(), 101);
        // Two windows later only the new window's value is left.
        h.record_us(2 * WINDOW_MS, 7_000);
        let recent = h.recent(2 * WINDOW_MS).unwrap();
        assert_eq!(recent.len(), 2);
        assert_eq!(h.count(), 102);
        // Long idle: nothing recent, the count stays.
        assert!(h.recent(10 * WINDOW_MS).is_none());
        assert_eq!(h.count(), 102);
    }
}
