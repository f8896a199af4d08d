//! `[pure]` A cumulative latency histogram with fixed buckets: what a
//! Prometheus histogram (`<name>_bucket{le=...}`, `_sum`, `_count`)
//! exposes. Unlike Kafka's quantile gauges (`recent`, a decaying window),
//! its buckets only grow, so a reader can subtract two scrapes and get the
//! distribution of just the observations between them (`shardlog bench`
//! does, per point; PromQL's `histogram_quantile(rate(..._bucket[1m]))`
//! does the same). Plain counters, owned by one shard: recording is a
//! search over [`BOUNDS_US`] and two additions.

/// Upper bounds of the buckets in microseconds (the `+Inf` bucket is
/// implicit): 25 µs to 10 s, about two per power of ten finer than
/// Prometheus' defaults below 10 ms, where produce times live.
pub const BOUNDS_US: [u64; 31] = [
    25, 50, 75, 100, 150, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500, 10_000,
    15_000, 20_000, 30_000, 50_000, 75_000, 100_000, 150_000, 200_000, 300_000, 500_000, 750_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// Observations per bucket (not cumulative), their sum and count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets {
    /// `counts[i]`: observations in `(BOUNDS_US[i-1], BOUNDS_US[i]]`; the
    /// last one above every bound (`+Inf`).
    pub counts: [u64; BOUNDS_US.len() + 1],
    pub sum_us: u64,
}

impl Default for Buckets {
    fn default() -> Self {
        Self {
            counts: [0; BOUNDS_US.len() + 1],
            sum_us: 0,
        }
    }
}

impl Buckets {
    pub fn record_us(&mut self, us: u64) {
        let i = BOUNDS_US.partition_point(|b| *b < us);
        self.counts[i] += 1;
        self.sum_us = self.sum_us.saturating_add(us);
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn add(&mut self, o: &Buckets) {
        for (m, t) in self.counts.iter_mut().zip(&o.counts) {
            *m += t;
        }
        self.sum_us = self.sum_us.saturating_add(o.sum_us);
    }

    /// `(upper bound in seconds, observations in that bucket)` per finite
    /// bucket and `f64::INFINITY` last: the form `prometheus-client`'s
    /// histogram encoder takes (it makes them cumulative).
    pub fn seconds(&self) -> Vec<(f64, u64)> {
        BOUNDS_US
            .iter()
            .map(|b| *b as f64 / 1e6)
            .chain(std::iter::once(f64::INFINITY))
            .zip(self.counts.iter().copied())
            .collect()
    }

    pub fn sum_seconds(&self) -> f64 {
        self.sum_us as f64 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observation_lands_in_the_first_bucket_at_least_as_large() {
        let mut b = Buckets::default();
        b.record_us(0);
        b.record_us(25);
        b.record_us(26);
        b.record_us(20_000_000);
        assert_eq!(b.counts[0], 2);
        assert_eq!(b.counts[1], 1);
        assert_eq!(b.counts[BOUNDS_US.len()], 1);
        assert_eq!(b.count(), 4);
        assert_eq!(b.sum_us, 20_000_051);
        let s = b.seconds();
        assert_eq!(s.len(), BOUNDS_US.len() + 1);
        assert!((s[0].0 - 25e-6).abs() < 1e-12 && s[s.len() - 1].0.is_infinite());
        let mut c = b;
        c.add(&b);
        assert_eq!(c.count(), 8);
    }
}
