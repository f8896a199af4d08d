//! `[pure]` Latency histograms (HdrHistogram, nanosecond values, 3
//! significant digits) and their percentile summary.
//!
//! On the lower floor because both sides record latencies: the broker
//! (`server::request_metrics`, Produce latency at shutdown) and the load
//! generator (producer, consumer, echo, report). Neither imports the other.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest trackable latency: one hour in nanoseconds. Larger values are
/// clamped (and still counted) rather than dropped.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    #[allow(clippy::expect_used, reason = "constant bounds hdrhistogram accepts")]
    pub fn new() -> Self {
        // Bounds are constants that hdrhistogram accepts (low >= 1,
        // high >= 2 * low, sigfig <= 5), so creation cannot fail.
        let h = Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("constant valid bounds");
        Self { h }
    }

    /// Records one latency; values are clamped into `[1, HIGHEST_NS]`.
    pub fn record_ns(&mut self, ns: u64) {
        let v = ns.clamp(1, HIGHEST_NS);
        // Cannot fail: v is within the configured bounds.
        let _ = self.h.record(v);
    }

    pub fn add(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so this cannot fail.
        let _ = self.h.add(&other.h);
    }

    pub fn reset(&mut self) {
        self.h.reset();
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    pub fn value_at_quantile_us(&self, q: f64) -> f64 {
        self.h.value_at_quantile(q) as f64 / 1_000.0
    }

    pub fn summary(&self) -> LatencySummary {
        let us = |v: u64| v as f64 / 1_000.0;
        LatencySummary {
            count: self.h.len(),
            mean_us: self.h.mean() / 1_000.0,
            p50_us: self.value_at_quantile_us(0.50),
            p90_us: self.value_at_quantile_us(0.90),
            p99_us: self.value_at_quantile_us(0.99),
            p999_us: self.value_at_quantile_us(0.999),
            p9999_us: self.value_at_quantile_us(0.9999),
            max_us: us(self.h.max()),
        }
    }
}

/// Percentiles in microseconds (OMB reports the same set).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    pub max_us: f64,
}

impl LatencySummary {
    /// The percentile columns, in report order, with their names.
    pub fn columns(&self) -> [(&'static str, f64); 6] {
        [
            ("p50", self.p50_us),
            ("p90", self.p90_us),
            ("p99", self.p99_us),
            ("p99.9", self.p999_us),
            ("p99.99", self.p9999_us),
            ("max", self.max_us),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_uniform_values_are_within_precision() {
        let mut h = LatencyHistogram::new();
        for us in 1..=10_000u64 {
            h.record_ns(us * 1_000);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.002 + 1.0;
        assert!(close(s.p50_us, 5_000.0), "{}", s.p50_us);
        assert!(close(s.p90_us, 9_000.0), "{}", s.p90_us);
        assert!(close(s.p99_us, 9_900.0), "{}", s.p99_us);
        assert!(close(s.p999_us, 9_990.0), "{}", s.p999_us);
        assert!(close(s.max_us, 10_000.0), "{}", s.max_us);
        assert!(s.p50_us <= s.p90_us && s.p90_us <= s.p99_us && s.p9999_us <= s.max_us);
    }

    #[test]
    fn out_of_range_values_are_clamped_not_lost_and_add_merges() {
        let mut a = LatencyHistogram::new();
        a.record_ns(0);
        a.record_ns(u64::MAX);
        assert_eq!(a.count(), 2);
        let mut b = LatencyHistogram::new();
        b.record_ns(5_000);
        b.add(&a);
        assert_eq!(b.count(), 3);
        b.reset();
        assert_eq!(b.count(), 0);
        assert_eq!(b.summary().max_us, 0.0);
    }
}
