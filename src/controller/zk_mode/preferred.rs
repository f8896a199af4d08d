//! `[drv]` Leader elections asked of the controller (Kafka 3.9
//! `KafkaController.processReplicaLeaderElection` / `onReplicaElection`):
//! ElectLeaders from an admin client (PREFERRED or UNCLEAN), the
//! `/admin/preferred_replica_election` znode, and the auto leader
//! rebalance on the controller's timer (`auto.leader.rebalance.enable`,
//! `leader.imbalance.check.interval.seconds`,
//! `leader.imbalance.per.broker.percentage`), decided by the controller
//! core (`controller::core`, its `flows::elections`); this reads the
//! znode, arms the rebalance timer and performs the core's actions.

use std::collections::BTreeSet;
use std::time::Duration;

use super::{Duties, Event, Reply, Tagged, ZkBroker};
use crate::controller::core::{ControllerAction, ControllerEvent};
use crate::controller::rebalance::ElectionType;
use crate::protocol::ErrorCode;
use crate::types::TopicPartition;
use crate::zk::paths::{self, PreferredReplicaElectionZNode};
use crate::zk::store::{MetadataStore, Op, StoreError};

/// Kafka's first auto-rebalance check after failover comes 5 s in
/// (`scheduleAutoLeaderRebalanceTask(delay = 5, SECONDS)`), or at the
/// check interval when that is shorter.
const FIRST_REBALANCE_CHECK: Duration = Duration::from_secs(5);

pub use crate::controller::core::ElectAnswer;

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// An ElectLeaders request, run in turn with every other event.
    pub async fn request_elect_leaders(
        &self,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
    ) -> ElectAnswer {
        let reply = Reply::new();
        self.enqueue(Event::ElectLeaders {
            kind,
            partitions,
            reply: reply.clone(),
        });
        reply.take().await
    }

    /// `processReplicaLeaderElection` for an admin client, decided by the
    /// controller core (`controller::core`, its `flows::elections`);
    /// `None` = every partition.
    pub(super) async fn elect_on_request(
        &self,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
    ) -> ElectAnswer {
        let event = ControllerEvent::ElectLeaders {
            token: self.core_token(),
            kind,
            partitions,
            default_unclean: self.settings.borrow().unclean_leader_election,
        };
        self.run_core(event, |v| match v {
            ControllerAction::AnswerElectLeaders { answer, .. } => Some(answer),
            _ => None,
        })
        .await
        .unwrap_or(Err(ErrorCode::NOT_CONTROLLER))
    }

    /// `/admin/preferred_replica_election` exists (created, or found on
    /// failover): the preferred replica of each partition it names is
    /// elected, then the znode is deleted (Kafka's `ZkTriggered`
    /// election and `removePartitionsFromPreferredReplicaElection`).
    pub(super) async fn on_preferred_replica_election_znode(&self) {
        let store = self.store();
        let path = paths::PREFERRED_REPLICA_ELECTION;
        let parts: Vec<TopicPartition> = match store.get(path).await {
            Ok((data, _)) => match PreferredReplicaElectionZNode::decode(&data) {
                Ok(z) => z
                    .partitions
                    .into_iter()
                    .map(|p| TopicPartition::new(p.topic.as_str(), p.partition))
                    .collect(),
                Err(e) => {
                    tracing::warn!(%path, error = %e.0, "malformed preferred replica election");
                    Vec::new()
                }
            },
            Err(StoreError::NoNode(_)) => return,
            Err(e) => {
                tracing::warn!(%path, error = %e, "reading the preferred replica election");
                return;
            }
        };
        let asked: BTreeSet<TopicPartition> = parts.into_iter().collect();
        match self
            .elect_on_request(ElectionType::Preferred, Some(asked))
            .await
        {
            Ok(results) => {
                let failed = results.values().filter(|r| r.is_err()).count();
                tracing::info!(
                    partitions = results.len(),
                    not_elected = failed,
                    "preferred replica election (ZooKeeper) done"
                );
            }
            Err(_) => return,
        }
        if let Err(e) = self
            .write_as_controller(vec![Op::Delete {
                path: path.to_string(),
                expected_version: None,
            }])
            .await
        {
            tracing::warn!(%path, error = %e, "deleting the preferred replica election");
        }
    }

    /// Arm the auto leader rebalance's next check (controller term only;
    /// an event of an ended term is dropped). Called on failover and after
    /// each check, as Kafka reschedules its task.
    pub(super) fn schedule_auto_rebalance(&self, first: bool) {
        let settings = self.settings.borrow().clone();
        if !settings.auto_leader_rebalance_enable {
            return;
        }
        let interval = Duration::from_secs(settings.leader_imbalance_check_interval_s.max(1));
        let delay = if first {
            interval.min(FIRST_REBALANCE_CHECK)
        } else {
            interval
        };
        let tx = self.tx.clone();
        let (session, term) = (self.session.get(), self.term.get());
        glommio::spawn_local(async move {
            glommio::timer::sleep(delay).await;
            let _ = tx.try_send(Tagged {
                session,
                term,
                event: Event::AutoRebalance,
            });
        })
        .detach();
    }

    /// `checkAndTriggerAutoLeaderRebalance`: preferred elections where a
    /// broker's share of not-led preferred partitions is above the
    /// imbalance percentage; then the next check is armed.
    pub(super) async fn auto_rebalance(&self) {
        if !self.election.borrow().is_controller() {
            return;
        }
        let event = ControllerEvent::AutoRebalance {
            token: self.core_token(),
            percent: self
                .settings
                .borrow()
                .leader_imbalance_per_broker_percentage,
            default_unclean: self.settings.borrow().unclean_leader_election,
        };
        self.run_core(event, |_| None::<()>).await;
        self.schedule_auto_rebalance(false);
    }
}
