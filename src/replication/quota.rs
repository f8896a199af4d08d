//! `[core]` Replication quotas (Kafka 3.9 `ReplicationQuotaManager`,
//! KIP-73): one account per broker for each side, shared by every shard.
//!
//! - Leader side (`leader.replication.throttled.rate`): a follower fetch
//!   for a partition this broker throttles as leader, from a follower not
//!   in its ISR, gets no records while the broker's rate of such bytes is
//!   over the bound (`ReplicaManager.shouldLeaderThrottle`); what is sent
//!   is recorded (`KafkaApis.sizeOfThrottledPartitions`).
//! - Follower side (`follower.replication.throttled.rate`): a fetcher
//!   leaves out partitions this broker throttles as follower while it is
//!   out of their ISR and the rate is over the bound
//!   (`ReplicaFetcherThread.shouldFollowerThrottle`); the records it
//!   gets for them are recorded.
//!
//! - Log-dir moves (`replica.alter.log.dirs.io.max.bytes.per.second`):
//!   the copy into a future replica waits while the broker's rate of
//!   copied bytes is over the bound (Kafka's `ReplicaAlterLogDirsThread`
//!   with `QuotaType.AlterLogDirsReplication`); every move is throttled.
//!
//! Which partitions are throttled is the topic config
//! `leader.replication.throttled.replicas` /
//! `follower.replication.throttled.replicas`: `*`, or `partition:broker`
//! pairs of which this broker takes the ones naming it (Kafka's
//! `TopicConfigHandler.parseThrottledPartitions`). The rate is measured
//! as Kafka's `Rate` over `replication.quota.window.num` (11) samples of
//! `replication.quota.window.size.seconds` (1): [`crate::metadata::quotas::Rate`].
//!
//! Only throttled traffic touches the shared account (a mutex held for a
//! few arithmetic operations, a few times per fetch round); the rest of
//! replication never does.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::metadata::quotas::Rate;

/// The topic config naming the partitions a leader throttles.
pub const LEADER_THROTTLED_REPLICAS: &str = "leader.replication.throttled.replicas";
/// The topic config naming the partitions a follower throttles.
pub const FOLLOWER_THROTTLED_REPLICAS: &str = "follower.replication.throttled.replicas";

/// Which side of replication an account is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Leader,
    Follower,
    /// Log-dir moves (AlterReplicaLogDirs).
    AlterLogDirs,
}

#[derive(Debug, Default)]
struct Account {
    /// Bytes per second; `None`: unthrottled.
    bound: Option<f64>,
    rate: Rate,
}

/// The broker's two replication accounts.
#[derive(Debug, Default)]
pub struct ReplicationQuotas {
    leader: Mutex<Account>,
    follower: Mutex<Account>,
    alter_log_dirs: Mutex<Account>,
    /// Whether each account has a bound, readable without its lock: every
    /// follower fetch and fetch round asks, and almost always the answer
    /// is no.
    leader_bounded: AtomicBool,
    follower_bounded: AtomicBool,
    alter_log_dirs_bounded: AtomicBool,
}

impl ReplicationQuotas {
    /// Accounts measured over `window_samples` samples of `sample_ms`
    /// (`replication.quota.window.num`, `…window.size.seconds`; the
    /// default is Kafka's 11 × 1 s).
    pub fn new(window_samples: usize, sample_ms: i64) -> Self {
        let account = || {
            Mutex::new(Account {
                bound: None,
                rate: Rate::with_window(window_samples, sample_ms),
            })
        };
        Self {
            leader: account(),
            follower: account(),
            alter_log_dirs: account(),
            leader_bounded: AtomicBool::new(false),
            follower_bounded: AtomicBool::new(false),
            alter_log_dirs_bounded: AtomicBool::new(false),
        }
    }

    fn account(&self, side: Side) -> std::sync::MutexGuard<'_, Account> {
        let m = match side {
            Side::Leader => &self.leader,
            Side::Follower => &self.follower,
            Side::AlterLogDirs => &self.alter_log_dirs,
        };
        // A poisoned account only held numbers: keep using them.
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// New bounds from the broker's dynamic config (`None`: unthrottled).
    pub fn set_bounds(&self, leader: Option<f64>, follower: Option<f64>) {
        self.account(Side::Leader).bound = leader;
        self.account(Side::Follower).bound = follower;
        self.leader_bounded
            .store(leader.is_some(), Ordering::Relaxed);
        self.follower_bounded
            .store(follower.is_some(), Ordering::Relaxed);
    }

    /// The log-dir moves' bound from the broker's dynamic config.
    pub fn set_alter_log_dirs_bound(&self, bound: Option<f64>) {
        self.account(Side::AlterLogDirs).bound = bound;
        self.alter_log_dirs_bounded
            .store(bound.is_some(), Ordering::Relaxed);
    }

    /// Whether `side` has a bound at all (no bound: nothing to check).
    pub fn is_bounded(&self, side: Side) -> bool {
        match side {
            Side::Leader => &self.leader_bounded,
            Side::Follower => &self.follower_bounded,
            Side::AlterLogDirs => &self.alter_log_dirs_bounded,
        }
        .load(Ordering::Relaxed)
    }

    /// Kafka's `isQuotaExceeded`: the measured rate is over the bound.
    pub fn is_exceeded(&self, side: Side, now_ms: i64) -> bool {
        if !self.is_bounded(side) {
            return false;
        }
        let mut a = self.account(side);
        match a.bound {
            Some(bound) => a.rate.rate(now_ms) > bound,
            None => false,
        }
    }

    /// Count `bytes` of throttled replication traffic.
    pub fn record(&self, side: Side, bytes: usize, now_ms: i64) {
        if bytes > 0 {
            self.account(side).rate.record(bytes as f64, now_ms);
        }
    }

    /// The measured rate in bytes/s (logs and tests).
    pub fn rate(&self, side: Side, now_ms: i64) -> f64 {
        self.account(side).rate.rate(now_ms)
    }
}

/// Whether `partition` of a topic with `configs` is throttled on
/// `broker` by the list under `key` (one of the two `*.throttled.replicas`).
pub fn is_throttled(
    configs: &BTreeMap<String, String>,
    key: &str,
    partition: i32,
    broker: i32,
) -> bool {
    let Some(value) = configs.get(key) else {
        return false;
    };
    let value = value.trim();
    if value == "*" {
        return true;
    }
    value.split(',').any(|pair| {
        let mut it = pair.trim().split(':');
        let p = it.next().and_then(|s| s.trim().parse::<i32>().ok());
        let b = it.next().and_then(|s| s.trim().parse::<i32>().ok());
        p == Some(partition) && b == Some(broker) && it.next().is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::quotas::{SAMPLE_MS, WINDOW_SAMPLES};

    fn configs(key: &str, value: &str) -> BTreeMap<String, String> {
        [(key.to_owned(), value.to_owned())].into_iter().collect()
    }

    #[test]
    fn throttled_replicas_name_partition_broker_pairs_or_everything() {
        let c = configs(LEADER_THROTTLED_REPLICAS, "0:1, 0:2,3:1");
        assert!(is_throttled(&c, LEADER_THROTTLED_REPLICAS, 0, 1));
        assert!(is_throttled(&c, LEADER_THROTTLED_REPLICAS, 0, 2));
        assert!(is_throttled(&c, LEADER_THROTTLED_REPLICAS, 3, 1));
        assert!(!is_throttled(&c, LEADER_THROTTLED_REPLICAS, 3, 2));
        assert!(!is_throttled(&c, LEADER_THROTTLED_REPLICAS, 1, 1));
        assert!(!is_throttled(&c, FOLLOWER_THROTTLED_REPLICAS, 0, 1));
        let all = configs(FOLLOWER_THROTTLED_REPLICAS, " * ");
        assert!(is_throttled(&all, FOLLOWER_THROTTLED_REPLICAS, 7, 9));
        let empty = configs(FOLLOWER_THROTTLED_REPLICAS, "");
        assert!(!is_throttled(&empty, FOLLOWER_THROTTLED_REPLICAS, 0, 0));
        let junk = configs(LEADER_THROTTLED_REPLICAS, "0:1:2,x:1");
        assert!(!is_throttled(&junk, LEADER_THROTTLED_REPLICAS, 0, 1));
    }

    #[test]
    fn an_account_is_exceeded_only_over_its_bound_and_only_when_bounded() {
        let q = ReplicationQuotas::default();
        q.record(Side::Leader, 50_000_000, 0);
        assert!(!q.is_exceeded(Side::Leader, 0), "no bound, no throttle");
        q.set_bounds(Some(1_000_000.0), None);
        assert!(q.is_bounded(Side::Leader) && !q.is_bounded(Side::Follower));
        // 50 MB over at least ten 1 s samples: 5 MB/s > 1 MB/s.
        assert!(q.is_exceeded(Side::Leader, 500));
        assert!(!q.is_exceeded(Side::Follower, 500));
        // Once the sample leaves the window the rate is back under.
        let later = SAMPLE_MS * (WINDOW_SAMPLES as i64 + 1);
        assert!(!q.is_exceeded(Side::Leader, later));
        // A steady 1 MB per second stays at the bound, not over it.
        let q = ReplicationQuotas::default();
        q.set_bounds(None, Some(1_000_000.0));
        for s in 0..30 {
            let now = s * SAMPLE_MS;
            assert!(!q.is_exceeded(Side::Follower, now), "at {s} s");
            q.record(Side::Follower, 1_000_000, now);
        }
        let r = q.rate(Side::Follower, 30 * SAMPLE_MS);
        assert!((900_000.0..=1_100_000.0).contains(&r), "{r}");
    }

    #[test]
    fn a_shorter_window_forgets_a_burst_sooner() {
        // Three samples of 100 ms: a 1 MB burst reads as 1 MB / 200 ms.
        let q = ReplicationQuotas::new(3, 100);
        q.set_bounds(Some(1_000_000.0), None);
        q.record(Side::Leader, 1_000_000, 0);
        assert!(q.is_exceeded(Side::Leader, 0));
        assert!(!q.is_exceeded(Side::Leader, 301), "gone after 3 × 100 ms");
        let r = ReplicationQuotas::new(3, 100);
        r.record(Side::Leader, 100_000, 0);
        assert!((r.rate(Side::Leader, 0) - 500_000.0).abs() < 1.0);
    }
}
