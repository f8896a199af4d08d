//! `[drv]` Kafka's `ControllerStats` as this controller records them:
//! `LeaderElectionRateAndTimeMs`, the timer of the `BrokerChange` state
//! (`ControllerState.BrokerChange.rateAndTimeMetricName`, timed by
//! `ControllerEventManager` around the event), and
//! `UncleanLeaderElectionsPerSec`, marked by
//! `PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection` for
//! every leader it picks outside the ISR (counted by the controller core,
//! `ControllerAction::UncleanElections`, recorded by `drive_core`).

use super::{Duties, ZkBroker};
use crate::zk::store::MetadataStore;

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
}
