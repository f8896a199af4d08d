//! `[pure]` `log.cleaner.io.max.bytes.per.second` (Kafka's `Throttler`, as
//! the cleaner uses it: checked every 300 ms, throttling down only). The
//! driver reports bytes read and written with the time; the answer is how
//! long to sleep to bring the period's rate down to the limit.

/// Kafka's cleaner `Throttler(checkIntervalMs = 300)`.
pub const CHECK_INTERVAL_MS: i64 = 300;

#[derive(Debug, Clone)]
pub struct Throttler {
    bytes_per_second: f64,
    period_start_ms: i64,
    observed: f64,
}

impl Throttler {
    pub fn new(bytes_per_second: f64, now_ms: i64) -> Self {
        Throttler {
            bytes_per_second,
            period_start_ms: now_ms,
            observed: 0.0,
        }
    }

    /// `bytes` of cleaner I/O at `now_ms`: milliseconds to sleep (0 = go on).
    /// Call [`Throttler::on_slept`] after sleeping.
    pub fn on_io(&mut self, now_ms: i64, bytes: u64) -> u64 {
        self.observed += bytes as f64;
        let elapsed = now_ms - self.period_start_ms;
        if elapsed <= CHECK_INTERVAL_MS || self.observed <= 0.0 {
            return 0;
        }
        let rate = self.observed * 1000.0 / elapsed as f64;
        let mut sleep = 0;
        if rate > self.bytes_per_second && self.bytes_per_second > 0.0 {
            let wanted_ms = self.observed / (self.bytes_per_second / 1000.0);
            sleep = (wanted_ms - elapsed as f64).round().max(0.0) as u64;
        }
        self.period_start_ms = now_ms;
        self.observed = 0.0;
        sleep
    }

    /// The next period starts after the sleep.
    pub fn on_slept(&mut self, now_ms: i64) {
        self.period_start_ms = now_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_sleep_within_the_check_interval_or_under_the_rate() {
        let mut t = Throttler::new(1000.0, 0);
        assert_eq!(t.on_io(100, 10_000), 0, "interval not complete");
        let mut t = Throttler::new(1_000_000.0, 0);
        assert_eq!(t.on_io(400, 1000), 0);
    }

    #[test]
    fn sleeps_to_bring_the_rate_down_to_the_limit() {
        // 2000 bytes in 400 ms at 1000 B/s: should have taken 2000 ms.
        let mut t = Throttler::new(1000.0, 0);
        assert_eq!(t.on_io(400, 2000), 1600);
        t.on_slept(2000);
        assert_eq!(t.on_io(2100, 10), 0);
    }

    #[test]
    fn an_unlimited_rate_never_sleeps() {
        let mut t = Throttler::new(f64::MAX, 0);
        assert_eq!(t.on_io(1000, u64::MAX / 2), 0);
    }
}
