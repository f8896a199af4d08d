//! `[drv]` The fetchers' lag for a `/metrics` scrape (Kafka's
//! `FetcherLagMetrics` per partition of each `ReplicaFetcherThread`, whose
//! maximum is `ReplicaFetcherManager`'s `MaxLag`).

use super::FetcherManager;
use crate::metrics::report::FollowerLag;

impl FetcherManager {
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
}
