//! `[drv]` The fetchers' lag for a `/metrics` scrape (Kafka's
//! `FetcherLagMetrics` per partition of each `ReplicaFetcherThread`, whose
//! maximum is `ReplicaFetcherManager`'s `MaxLag`), and the bytes they
//! appended (`BrokerTopicMetrics` `ReplicationBytesInPerSec` and
//! `ReassignmentBytesInPerSec`).

use std::cell::Cell;

use super::FetcherManager;
use crate::metrics::report::FollowerLag;

/// Bytes a shard's fetchers appended from leaders since start, and the
/// part of them for partitions reassigned to this broker. Plain counters
/// of the shard, read by a scrape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytesIn {
    pub replication: u64,
    pub reassignment: u64,
}

/// A fetch answer's `bytes` of records were appended (Kafka's
/// `ReplicaFetcherThread.processPartitionData` marks the whole records
/// field, after the append; the reassignment meter too while the
/// partition is reassigning and this broker is an adding replica).
pub(super) fn count_bytes_in(counts: &Cell<BytesIn>, adding: bool, bytes: usize) {
    let mut c = counts.get();
    c.replication += bytes as u64;
    if adding {
        c.reassignment += bytes as u64;
    }
    counts.set(c);
}

/// A fetcher's Fetch requests (Kafka's `FetcherStats.requestRate`, the
/// `RequestsPerSec` meter `AbstractFetcherThread.processFetchRequest`
/// marks per request sent) and, for its rate, the count and time (ms) of
/// the last scrape that read it.
#[derive(Debug)]
pub(super) struct RequestRate {
    count: Cell<u64>,
    seen: Cell<(i64, u64)>,
}

impl RequestRate {
    pub(super) fn new(now_ms: i64) -> Self {
        Self {
            count: Cell::new(0),
            seen: Cell::new((now_ms, 0)),
        }
    }

    pub(super) fn mark(&self) {
        self.count.set(self.count.get() + 1);
    }

    /// Requests per second since the last call (or the fetcher's start),
    /// and start the next window now. Kafka reads the meter's one-minute
    /// rate; this is the rate over the last scrape window.
    fn rate(&self, now_ms: i64) -> f64 {
        let (then_ms, then) = self.seen.get();
        let count = self.count.get();
        self.seen.set((now_ms, count));
        let secs = (now_ms - then_ms) as f64 / 1000.0;
        if secs <= 0.0 {
            return 0.0;
        }
        (count - then) as f64 / secs
    }
}

impl FetcherManager {
    /// `AbstractFetcherManager`'s `MinFetchRate` on this shard: the least
    /// Fetch request rate (per second) over its fetchers, `None` without
    /// fetchers (Kafka's gauge is then 0).
    pub fn min_fetch_rate(&self) -> Option<f64> {
        let now = self.clock.mono_ms();
        self.fetchers
            .borrow()
            .values()
            .map(|f| f.requests.rate(now))
            .reduce(f64::min)
    }

    /// Every followed partition's lag as of its last fetch answer.
    pub fn lags(&self) -> Vec<FollowerLag> {
        let mut out = Vec::new();
        for ((leader, fetcher_id), f) in self.fetchers.borrow().iter() {
            for (tp, s) in f.state.borrow().partitions() {
                out.push(FollowerLag {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                    leader: leader.0,
                    fetcher_id: *fetcher_id,
                    lag: s.lag,
                });
            }
        }
        out
    }

    /// Bytes appended from leaders since start, and those of partitions
    /// reassigned to this broker.
    pub fn bytes_in(&self) -> (u64, u64) {
        let c = self.bytes_in.get();
        (c.replication, c.reassignment)
    }
}

#[cfg(test)]
mod tests {
    use super::RequestRate;

    #[test]
    fn the_request_rate_is_over_the_window_since_the_last_read() {
        let r = RequestRate::new(1_000);
        for _ in 0..10 {
            r.mark();
        }
        assert_eq!(r.rate(3_000), 5.0);
        r.mark();
        assert_eq!(r.rate(4_000), 1.0);
        assert_eq!(r.rate(4_000), 0.0);
    }
}
