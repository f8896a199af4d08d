//! `[pure]` When the log flusher looks at the logs, as Kafka's
//! `LogManager` schedules `kafka-log-flusher` (`flushDirtyLogs`): first
//! `InitialTaskDelayMs` (30 s) after the start, then every
//! `log.flush.scheduler.interval.ms` (default Long.MAX_VALUE: once). Each
//! look flushes the logs whose last flush is `flush.ms` old; an append
//! flushes only by `flush.messages` (`UnifiedLog.append`).

/// `LogManager.InitialTaskDelayMs`.
pub const INITIAL_DELAY_MS: i64 = 30_000;

/// The flusher's next look.
#[derive(Debug, Clone, Copy)]
pub struct FlusherSchedule {
    every_ms: i64,
    next_ms: i64,
}

impl FlusherSchedule {
    /// Started at `now_ms` with `log.flush.scheduler.interval.ms`.
    pub fn new(interval_ms: i64, now_ms: i64) -> Self {
        FlusherSchedule {
            every_ms: interval_ms.max(1),
            next_ms: now_ms.saturating_add(INITIAL_DELAY_MS),
        }
    }

    /// Whether the flusher looks at `now_ms`; the next look is one
    /// interval later.
    pub fn due(&mut self, now_ms: i64) -> bool {
        if now_ms < self.next_ms {
            return false;
        }
        self.next_ms = now_ms.saturating_add(self.every_ms);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `log.flush.scheduler.interval.ms`, read from `server.properties`:
    /// the first look 30 s after the start, then one per interval; with
    /// Kafka's default (Long.MAX_VALUE) the first look is the only one.
    #[test]
    fn log_flush_scheduler_interval_ms_paces_the_flusher() {
        let server = crate::config::ServerConfig::from_properties(
            "log.flush.scheduler.interval.ms=2000\n",
            &[],
        )
        .expect("valid properties")
        .config;
        let mut s = FlusherSchedule::new(server.log_flush_scheduler_interval_ms, 1_000);
        let looks: Vec<i64> = (0..=36_000)
            .step_by(100)
            .map(|t| 1_000 + t)
            .filter(|&t| s.due(t))
            .collect();
        assert_eq!(looks, [31_000, 33_000, 35_000, 37_000]);
        let default = crate::config::ServerConfig::from_properties("", &[])
            .expect("defaults")
            .config;
        let mut s = FlusherSchedule::new(default.log_flush_scheduler_interval_ms, 0);
        let looks = (0..1_000_000).step_by(100).filter(|&t| s.due(t)).count();
        assert_eq!(looks, 1, "once, after the initial delay");
    }
}
