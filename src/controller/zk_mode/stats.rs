//! `[drv]` Kafka's `ControllerStats` and `ControllerEventManager` metrics
//! as this controller records them:
//! - `LeaderElectionRateAndTimeMs`, the timer of the `BrokerChange` state
//!   (`ControllerState.BrokerChange.rateAndTimeMetricName`, timed by
//!   `ControllerEventManager` around the event), and
//!   `UncleanLeaderElectionsPerSec`, marked by
//!   `PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection` for
//!   every leader it picks outside the ISR (counted by the controller core,
//!   `ControllerAction::UncleanElections`, recorded by `drive_core`);
//! - the event queue: each event's wait in it (`EventQueueTimeMs`), its
//!   length (`EventQueueSize`), the state of the event being processed
//!   (`KafkaController` `ControllerState`), and the context's counts
//!   (`KafkaController.updateMetrics`), read when a scrape asks.

use std::rc::Rc;

use glommio::channels::local_channel::LocalSender;

use super::{Duties, Event, Tagged, ZkBroker};
use crate::io::clock::Clock;
use crate::metrics::control::{ControllerProbe, ControllerState, ControllerStats};
use crate::zk::paths;
use crate::zk::store::MetadataStore;

/// An event in the queue, with when it was queued (Kafka's
/// `QueuedEvent.enqueueTimeMs`).
pub(super) struct Queued {
    tagged: Tagged,
    queued_ns: u64,
}

/// The sending end of the controller's event queue: stamps each event.
pub(super) struct EventTx {
    tx: LocalSender<Queued>,
    clock: Rc<dyn Clock>,
}

impl EventTx {
    pub(super) fn new(tx: LocalSender<Queued>, clock: Rc<dyn Clock>) -> Self {
        Self { tx, clock }
    }

    /// Queue `tagged` (unbounded: it only fails once the queue closed).
    pub(super) fn try_send(&self, tagged: Tagged) -> Result<(), ()> {
        let queued_ns = self.clock.mono_ns();
        self.tx
            .try_send(Queued { tagged, queued_ns })
            .map_err(|_| ())
    }

    /// Events queued and not yet taken (`EventQueueSize`).
    pub(super) fn len(&self) -> usize {
        self.tx.len()
    }
}

/// The `ControllerState` of an event being processed (each Kafka
/// `ControllerEvent`'s `state`).
pub(super) fn state_of(event: &Event) -> ControllerState {
    match event {
        Event::Startup | Event::ControllerChange | Event::SessionExpired => {
            ControllerState::ControllerChange
        }
        Event::BrokerChange => ControllerState::BrokerChange,
        Event::TopicChange | Event::PartitionModifications(_) => ControllerState::TopicChange,
        Event::AdminChange(path) => match *path {
            paths::DELETE_TOPICS => ControllerState::TopicDeletion,
            paths::REASSIGN_PARTITIONS => ControllerState::AlterPartitionReassignment,
            paths::PREFERRED_REPLICA_ELECTION => ControllerState::ManualLeaderBalance,
            paths::ISR_CHANGE_NOTIFICATION => ControllerState::IsrChange,
            paths::LOG_DIR_EVENT_NOTIFICATION => ControllerState::LogDirChange,
            _ => ControllerState::Idle,
        },
        Event::ControlledShutdown { .. } => ControllerState::ControlledShutdown,
        // `AlterPartitionReceived.state` is `IsrChange`.
        Event::AlterPartition { .. } => ControllerState::IsrChange,
        Event::ElectLeaders { .. } => ControllerState::ManualLeaderBalance,
        Event::AutoRebalance => ControllerState::AutoLeaderBalance,
        // `AllocateProducerIds.state` is `Idle`.
        Event::AllocateProducerIds { .. } => ControllerState::Idle,
        Event::AlterReassignments { .. } | Event::ReassignmentIsrChange(_) => {
            ControllerState::AlterPartitionReassignment
        }
        Event::ListReassignments { .. } => ControllerState::ListPartitionReassignment,
        Event::DeletionAnswer { .. } => ControllerState::TopicDeletion,
        Event::LeaderAndIsrAnswer { .. } => ControllerState::LeaderAndIsrResponseReceived,
        // `ControllerEventThread.doWork` ignores `ShutdownEventThread`:
        // the state stays as the last event left it.
        Event::Stop => ControllerState::Idle,
    }
}

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// A `BrokerChange` event, timed while this broker is controller.
    pub(super) async fn timed_broker_change(&self) {
        let controller = self.election.borrow().is_controller();
        let started_ns = self.clock.mono_ns();
        self.on_broker_change().await;
        if controller {
            let us = self.clock.mono_ns().saturating_sub(started_ns) / 1_000;
            self.stats
                .borrow()
                .on_leader_election(self.clock.mono_ms(), us);
        }
    }

    /// An event taken from the queue: its wait is recorded.
    pub(super) fn dequeued(&self, queued: Queued) -> Tagged {
        let us = self.clock.mono_ns().saturating_sub(queued.queued_ns) / 1_000;
        self.stats
            .borrow()
            .on_event_dequeued(self.clock.mono_ms(), us);
        queued.tagged
    }

    /// Let `stats`' scrapes read the queue's length and, while this
    /// broker is controller, the context's counts (a scrape runs between
    /// two steps of the event task: a borrow it would wait for is
    /// skipped).
    pub(super) fn install_probe(self: &Rc<Self>, stats: &ControllerStats) {
        let me = Rc::downgrade(self);
        stats.install_probe(Rc::new(move || {
            let Some(me) = me.upgrade() else {
                return ControllerProbe::default();
            };
            let controller = me.election.try_borrow().is_ok_and(|e| e.is_controller());
            let counts = me
                .context
                .try_borrow()
                .ok()
                .and_then(|c| c.as_ref().map(|c| c.metric_counts()))
                .filter(|_| controller);
            ControllerProbe {
                queue_size: me.tx.len() as u64,
                counts,
            }
        }));
    }
}
