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

/// Kafka's `ControllerState` (`controller/ControllerState.scala`): what
/// the controller's event thread is processing, the value of the
/// `KafkaController` `ControllerState` gauge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ControllerState {
    #[default]
    Idle,
    ControllerChange,
    BrokerChange,
    TopicChange,
    TopicDeletion,
    AlterPartitionReassignment,
    AutoLeaderBalance,
    ManualLeaderBalance,
    ControlledShutdown,
    IsrChange,
    LeaderAndIsrResponseReceived,
    LogDirChange,
    ListPartitionReassignment,
}

impl ControllerState {
    /// The gauge's value (`ControllerState.value`).
    pub fn value(self) -> u8 {
        match self {
            Self::Idle => 0,
            Self::ControllerChange => 1,
            Self::BrokerChange => 2,
            Self::TopicChange => 3,
            Self::TopicDeletion => 4,
            Self::AlterPartitionReassignment => 5,
            Self::AutoLeaderBalance => 6,
            Self::ManualLeaderBalance => 7,
            Self::ControlledShutdown => 8,
            Self::IsrChange => 9,
            Self::LeaderAndIsrResponseReceived => 10,
            Self::LogDirChange => 11,
            Self::ListPartitionReassignment => 15,
        }
    }
}

/// The active controller's counts of its context (Kafka's
/// `KafkaController.updateMetrics`, 0 on the other brokers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerCounts {
    /// Partitions of topics not being deleted whose leader is not their
    /// preferred (first assigned) replica.
    pub preferred_replica_imbalance: u64,
    /// Topics queued for deletion, and their replicas not yet deleted.
    pub topics_to_delete: u64,
    pub replicas_to_delete: u64,
    /// Topics whose deletion waits (`topicsIneligibleForDeletion`), and
    /// the replicas of deleting topics in `ReplicaDeletionIneligible`.
    pub topics_ineligible_to_delete: u64,
    pub replicas_ineligible_to_delete: u64,
}

/// What the controller's event queue reports when a scrape asks: its
/// length, and the counts while this broker is the active controller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerProbe {
    pub queue_size: u64,
    pub counts: Option<ControllerCounts>,
}

/// The controller's answer to a scrape (installed by the controller).
type Probe = Rc<dyn Fn() -> ControllerProbe>;

/// Kafka's `ControllerStats` of this broker's controller, and its
/// `ControllerEventManager`'s metrics.
#[derive(Default)]
pub struct ControllerStats {
    /// `LeaderElectionRateAndTimeMs`: the timer of the `BrokerChange`
    /// controller state (its events' processing time).
    leader_election: RefCell<RecentHistogram>,
    /// `UncleanLeaderElectionsPerSec`: leaders picked outside the ISR.
    unclean: Cell<u64>,
    /// `ControllerEventManager` `EventQueueTimeMs`: how long each event
    /// waited in the queue.
    event_queue_time: RefCell<RecentHistogram>,
    state: Cell<ControllerState>,
    probe: RefCell<Option<Probe>>,
}

impl std::fmt::Debug for ControllerStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerStats")
            .field("unclean", &self.unclean.get())
            .field("state", &self.state.get())
            .finish_non_exhaustive()
    }
}

/// A copy of [`ControllerStats`] for a scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControllerStatsReport {
    pub leader_election_count: u64,
    /// Recent `LeaderElectionRateAndTimeMs` observations (µs).
    pub leader_election_recent: Option<hdrhistogram::Histogram<u64>>,
    pub unclean_leader_elections: u64,
    pub event_queue_time_count: u64,
    /// Recent `EventQueueTimeMs` observations (µs).
    pub event_queue_time_recent: Option<hdrhistogram::Histogram<u64>>,
    pub event_queue_size: u64,
    pub state: ControllerState,
    /// `None` unless this broker is the active controller.
    pub counts: Option<ControllerCounts>,
}

impl ControllerStats {
    /// An event waited `us` in the queue before it was taken, at `now_ms`.
    pub fn on_event_dequeued(&self, now_ms: i64, us: u64) {
        self.event_queue_time.borrow_mut().record_us(now_ms, us);
    }

    /// The event thread moved to `state` (`Idle` once an event is done).
    pub fn on_state(&self, state: ControllerState) {
        self.state.set(state);
    }

    /// Where a scrape reads the queue's length and the context's counts.
    pub fn install_probe(&self, probe: Probe) {
        *self.probe.borrow_mut() = Some(probe);
    }

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
        let mut queue = self.event_queue_time.borrow_mut();
        let probe = self
            .probe
            .borrow()
            .as_ref()
            .map(|p| p())
            .unwrap_or_default();
        ControllerStatsReport {
            leader_election_count: h.count(),
            leader_election_recent: h.recent(now_ms),
            unclean_leader_elections: self.unclean.get(),
            event_queue_time_count: queue.count(),
            event_queue_time_recent: queue.recent(now_ms),
            event_queue_size: probe.queue_size,
            state: self.state.get(),
            counts: probe.counts,
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
        c.on_event_dequeued(0, 3_000);
        c.on_state(ControllerState::TopicDeletion);
        c.install_probe(Rc::new(|| ControllerProbe {
            queue_size: 4,
            counts: Some(ControllerCounts {
                topics_to_delete: 1,
                ..ControllerCounts::default()
            }),
        }));
        let r = c.report(0);
        assert_eq!(r.leader_election_count, 1);
        assert_eq!(r.unclean_leader_elections, 2);
        assert!(r.leader_election_recent.is_some());
        assert_eq!((r.event_queue_time_count, r.event_queue_size), (1, 4));
        assert_eq!(r.state.value(), 4);
        assert_eq!(r.counts.map(|c| c.topics_to_delete), Some(1));
        let z = ZkClientStats::default();
        z.on_request(0, 500);
        z.on_session_event(|e| e.sync_connects += 1);
        z.on_state(ZkSessionState::Connected);
        let r = z.report(0);
        assert_eq!((r.latency_count, r.events.sync_connects), (1, 1));
        assert_eq!(r.state.name(), "CONNECTED");
    }
}
