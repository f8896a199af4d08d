//! `[io]` The only module that reads time. Pure cores take `now_ms: i64`;
//! drivers ask a [`Clock`]. Tests use [`ManualClock`].

use std::cell::Cell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A source of wall-clock milliseconds (Kafka timestamps) and monotonic time.
pub trait Clock {
    /// Milliseconds since the Unix epoch (what Kafka puts in timestamps).
    fn wall_ms(&self) -> i64;
    /// Monotonic milliseconds since an arbitrary origin (timeouts, timing wheel).
    fn mono_ms(&self) -> i64;
    /// Monotonic nanoseconds since the same origin (request latency).
    fn mono_ns(&self) -> u64 {
        u64::try_from(self.mono_ms())
            .unwrap_or(0)
            .saturating_mul(1_000_000)
    }
}

/// The real clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemClock {
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn wall_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
    fn mono_ms(&self) -> i64 {
        self.origin.elapsed().as_millis() as i64
    }
    fn mono_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told to; for deterministic tests of drivers.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: Cell<i64>,
}

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        Self {
            now_ms: Cell::new(start_ms),
        }
    }
    pub fn advance(&self, ms: i64) {
        self.now_ms.set(self.now_ms.get() + ms);
    }
    pub fn set(&self, ms: i64) {
        self.now_ms.set(ms);
    }
}

impl Clock for ManualClock {
    fn wall_ms(&self) -> i64 {
        self.now_ms.get()
    }
    fn mono_ms(&self) -> i64 {
        self.now_ms.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(100);
        assert_eq!(c.mono_ms(), 100);
        c.advance(5);
        assert_eq!(c.mono_ms(), 105);
        assert_eq!(c.wall_ms(), 105);
        c.set(7);
        assert_eq!(c.mono_ms(), 7);
        assert_eq!(c.mono_ns(), 7_000_000);
    }

    #[test]
    fn system_clock_is_monotonic_and_near_now() {
        let c = SystemClock::new();
        let a = c.mono_ms();
        let b = c.mono_ms();
        assert!(b >= a);
        assert!(c.wall_ms() > 1_600_000_000_000);
    }
}
