//! `[drv]` Leader elections asked of the controller (Kafka 3.9
//! `KafkaController.processReplicaLeaderElection` / `onReplicaElection`):
//! ElectLeaders from an admin client (PREFERRED or UNCLEAN), the
//! `/admin/preferred_replica_election` znode, and the auto leader
//! rebalance on the controller's timer (`auto.leader.rebalance.enable`,
//! `leader.imbalance.check.interval.seconds`,
//! `leader.imbalance.per.broker.percentage`). What to elect is decided by
//! `controller::rebalance`; the elections are the partition state
//! machine's (`partitions`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::partitions::{ElectionFailures, ElectionKind};
use super::{Duties, Event, Reply, Tagged, ZkBroker};
use crate::controller::rebalance::{self, ElectionResult, ElectionType};
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::PartitionState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::paths::{self, PreferredReplicaElectionZNode};
use crate::zk::store::{MetadataStore, Op, StoreError};

/// Kafka's first auto-rebalance check after failover comes 5 s in
/// (`scheduleAutoLeaderRebalanceTask(delay = 5, SECONDS)`), or at the
/// check interval when that is shorter.
const FIRST_REBALANCE_CHECK: Duration = Duration::from_secs(5);

/// Per partition asked (all partitions when the request named none), its
/// outcome; NOT_CONTROLLER for every partition when this broker is not
/// the controller.
pub type ElectAnswer = Result<BTreeMap<TopicPartition, ElectionResult>, ErrorCode>;

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

    /// `processReplicaLeaderElection` for an admin client: unknown,
    /// deleting and already-led partitions answered at once, the others
    /// elected; `None` = every partition.
    pub(super) async fn elect_on_request(
        &self,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
    ) -> ElectAnswer {
        let Some((elect, mut answered)) = self.with_ctx(|ctx| {
            let asked = partitions.unwrap_or_else(|| ctx.assignments.keys().cloned().collect());
            rebalance::plan_election(ctx, &asked, kind)
        }) else {
            return Err(ErrorCode::NOT_CONTROLLER);
        };
        let election = match kind {
            ElectionType::Preferred => ElectionKind::Preferred,
            ElectionType::Unclean => ElectionKind::Unclean,
        };
        let (elected, failed) = self.run_elections(&elect, election).await;
        tracing::info!(
            ?kind,
            asked = elect.len() + answered.len(),
            elected = elected.len(),
            failed = failed.len(),
            "ElectLeaders"
        );
        let leaders: Vec<(TopicPartition, ElectionResult)> = self
            .with_ctx(|ctx| {
                elected
                    .into_iter()
                    .map(|tp| {
                        let leader = ctx
                            .leadership
                            .get(&tp)
                            .map_or(BrokerId::NONE, |l| l.leader_isr.leader);
                        (tp, Ok(leader))
                    })
                    .collect()
            })
            .unwrap_or_default();
        answered.extend(leaders);
        for (tp, (code, message)) in failed {
            // Kafka: a state change that found no leader is
            // PREFERRED_LEADER_NOT_AVAILABLE for a preferred election and
            // ELIGIBLE_LEADERS_NOT_AVAILABLE for an unclean one.
            let code = match (kind, code) {
                (ElectionType::Preferred, ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE) => {
                    ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
                }
                (_, c) => c,
            };
            answered.insert(tp, Err((code, message)));
        }
        Ok(answered)
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
        let percent = self
            .settings
            .borrow()
            .leader_imbalance_per_broker_percentage;
        let parts = self
            .with_ctx(|ctx| rebalance::imbalanced_partitions(ctx, percent))
            .unwrap_or_default();
        if !parts.is_empty() {
            let (elected, failed) = self.run_elections(&parts, ElectionKind::Preferred).await;
            tracing::info!(
                candidates = parts.len(),
                elected = elected.len(),
                failed = failed.len(),
                "auto leader rebalance"
            );
        }
        self.schedule_auto_rebalance(false);
    }

    /// `onReplicaElection`: `parts` (Online or Offline; others are
    /// refused as illegal changes) to Online with `kind`'s election, the
    /// requests sent. The partitions elected, and why the others were not.
    async fn run_elections(
        &self,
        parts: &[TopicPartition],
        kind: ElectionKind,
    ) -> (Vec<TopicPartition>, ElectionFailures) {
        let mut failed = ElectionFailures::new();
        let legal = self
            .with_ctx(|ctx| {
                let mut legal = Vec::new();
                for tp in parts {
                    let from = ctx.partition_states.get(tp);
                    if matches!(from, PartitionState::Online | PartitionState::Offline) {
                        legal.push(tp.clone());
                    } else {
                        tracing::warn!(partition = %tp, ?from, "illegal partition state change refused");
                        failed.insert(
                            tp.clone(),
                            (
                                ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                format!("Partition {tp} is in state {from:?}, not online or offline"),
                            ),
                        );
                    }
                }
                legal
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        let elected = self
            .elect_leaders(&legal, kind, &mut batch, &mut failed)
            .await;
        self.with_ctx(|ctx| {
            for tp in &elected {
                let _ = ctx.partition_states.transition(tp, PartitionState::Online);
            }
        });
        self.send_batch(batch);
        (elected, failed)
    }
}
