//! `[drv]` Kafka's `ControllerStats` as this controller records them:
//! `LeaderElectionRateAndTimeMs`, the timer of the `BrokerChange` state
//! (`ControllerState.BrokerChange.rateAndTimeMetricName`, timed by
//! `ControllerEventManager` around the event), and
//! `UncleanLeaderElectionsPerSec`, marked by
//! `PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection` for
//! every leader it picks outside the ISR.

use super::{Duties, ZkBroker};
use crate::controller::context::ControllerContext;
use crate::controller::leader_election::LeaderIsr;
use crate::types::TopicPartition;
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

    /// Planned elections whose leader is outside the partition's ISR
    /// (only an unclean offline election picks one).
    pub(super) fn count_unclean(
        &self,
        ctx: &ControllerContext,
        plans: &[(TopicPartition, LeaderIsr)],
    ) {
        let unclean = plans
            .iter()
            .filter(|(tp, new)| {
                ctx.leadership
                    .get(tp)
                    .is_some_and(|old| !old.leader_isr.isr.contains(&new.leader))
            })
            .count();
        if unclean > 0 {
            self.stats.borrow().on_unclean_elections(unclean as u64);
        }
    }
}
