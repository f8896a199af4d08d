//! `[pure]` The control shard's live metrics: the controller's
//! `ControllerStats` (Kafka's `controller/ControllerState.scala`,
//! `KafkaController.scala`) and the ZooKeeper client's
//! (`zookeeper/ZooKeeperClient.scala` `ZooKeeperClientMetrics`,
//! `server/KafkaServer.scala` `SessionExpireListener`). Plain `Cell`s
//! owned by the control shard ([`ControlMetrics`]) and touched only by its
//! own tasks; a scrape runs on that shard and copies them.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::recent::RecentHistogram;

/// Kafka's `ControllerStats` of this broker's controller.
#[derive(Debug, Default)]
pub struct ControllerStats {
    /// `LeaderElectionRateAndTimeMs`: the timer of the `BrokerChange`
    /// controller state (its events' processing time).
    leader_election: RefCell<RecentHistogram>,
    /// `UncleanLeaderElectionsPerSec`: leaders picked outside the ISR.
    unclean: Cell<u64>,
}

/// A copy of [`ControllerStats`] for a scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControllerStatsReport {
    pub leader_election_count: u64,
    /// Recent `LeaderElectionRateAndTimeMs` observations (µs).
    pub leader_election_recent: Option<hdrhistogram::Histogram<u64>>,
    pub unclean_leader_elections: u64,
}

impl ControllerStats {
    /// A `BrokerChange` event took `us` to process.
    pub fn on_leader_election(&self, now_ms: i64, us: u64) {
        self.leader_election.borrow_mut().record_us(now_ms, us);
    }

    /// `n` partitions got a leader outside their ISR.
    pub fn on_unclean_elections(&self, n: u64) {
        self.unclean.set(self.unclean.get() + n);
    }

    pub fn report(&self, now_ms: i64) -> ControllerStatsReport {
        let mut h = self.leader_election.borrow_mut();
        ControllerStatsReport {
            leader_election_count: h.count(),
            leader_election_recent: h.recent(now_ms),
            unclean_leader_elections: self.unclean.get(),
        }
    }
}

/// The ZooKeeper session's state as the client last saw it (Kafka's
/// `SessionState` string gauge, `ZooKeeper.States`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ZkSessionState {
    #[default]
    Connecting,
    Connected,
    ConnectedReadOnly,
    AuthFailed,
    Closed,
}

impl ZkSessionState {
    /// `ZooKeeper.States` name Kafka's `SessionState` gauge reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Connecting => "CONNECTING",
            Self::Connected => "CONNECTED",
            Self::ConnectedReadOnly => "CONNECTEDREADONLY",
            Self::AuthFailed => "AUTH_FAILED",
            Self::Closed => "CLOSED",
        }
    }
}

/// `SessionExpireListener`'s meters: the watcher events of the session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionEvents {
    pub disconnects: u64,
    pub sync_connects: u64,
    pub auth_failures: u64,
    pub read_only_connects: u64,
    pub expires: u64,
}

/// The ZooKeeper client's metrics.
#[derive(Debug, Default)]
pub struct ZkClientStats {
    /// `ZooKeeperRequestLatencyMs`: send to answer, per request.
    latency: RefCell<RecentHistogram>,
    events: Cell<SessionEvents>,
    state: Cell<ZkSessionState>,
}

/// A copy of [`ZkClientStats`] for a scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ZkClientReport {
    pub latency_count: u64,
    pub latency_recent: Option<hdrhistogram::Histogram<u64>>,
    pub events: SessionEvents,
    pub state: ZkSessionState,
}

impl ZkClientStats {
    /// One request answered (or failed) after `us`.
    pub fn on_request(&self, now_ms: i64, us: u64) {
        self.latency.borrow_mut().record_us(now_ms, us);
    }

    /// A watcher event of the session (`SessionExpireListener.process`).
    pub fn on_session_event(&self, f: impl FnOnce(&mut SessionEvents)) {
        let mut e = self.events.get();
        f(&mut e);
        self.events.set(e);
    }

    pub fn on_state(&self, state: ZkSessionState) {
        self.state.set(state);
    }

    pub fn report(&self, now_ms: i64) -> ZkClientReport {
        let mut h = self.latency.borrow_mut();
        ZkClientReport {
            latency_count: h.count(),
            latency_recent: h.recent(now_ms),
            events: self.events.get(),
            state: self.state.get(),
        }
    }
}

/// The control shard's metrics, created at boot and shared (`Rc`) with
/// the controller and the ZooKeeper session that record into them.
#[derive(Debug, Default)]
pub struct ControlMetrics {
    pub controller: Rc<ControllerStats>,
    /// `None` without `zookeeper.connect` (the embedded store).
    pub zk: Option<Rc<ZkClientStats>>,
}

/// What the control shard adds to a scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControlReport {
    pub controller: ControllerStatsReport,
    pub zk: Option<ZkClientReport>,
}

impl ControlMetrics {
    pub fn report(&self, now_ms: i64) -> ControlReport {
        ControlReport {
            controller: self.controller.report(now_ms),
            zk: self.zk.as_ref().map(|z| z.report(now_ms)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_and_zookeeper_stats_are_copied_into_a_report() {
        let c = ControllerStats::default();
        c.on_leader_election(0, 2_000);
        c.on_unclean_elections(2);
        let r = c.report(0);
        assert_eq!(r.leader_election_count, 1);
        assert_eq!(r.unclean_leader_elections, 2);
        assert!(r.leader_election_recent.is_some());
        let z = ZkClientStats::default();
        z.on_request(0, 500);
        z.on_session_event(|e| e.sync_connects += 1);
        z.on_state(ZkSessionState::Connected);
        let r = z.report(0);
        assert_eq!((r.latency_count, r.events.sync_connects), (1, 1));
        assert_eq!(r.state.name(), "CONNECTED");
    }
}
