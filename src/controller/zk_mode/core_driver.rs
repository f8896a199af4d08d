//! `[drv]` Performs the controller core's actions (`controller::core`):
//! znode writes behind the controller-epoch check, znode reads, requests
//! queued in the caller's batch or sent, follow-up events queued; each
//! result goes back to the core as the next event, until the core gives
//! its verdict (an AlterPartition answer, an election's outcome), which
//! the caller gets.

use std::collections::{BTreeMap, VecDeque};

use super::partitions::leadership_of;
use super::{Duties, Event, Tagged, WriteError, ZkBroker};
use crate::controller::context::Leadership;
use crate::controller::core::{ControllerAction, ControllerEvent, WriteFailure};
use crate::controller::request_batch::RequestBatch;
use crate::types::TopicPartition;
use crate::zk::paths::{self, PartitionStateZNode};
use crate::zk::store::{MetadataStore, StoreError};

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// A token for a core event that will be answered.
    pub(super) fn core_token(&self) -> u64 {
        self.core.borrow_mut().token()
    }

    /// Run `event` through the core and perform what it asks until it
    /// settles; the requests go into `batch`. Returns the verdicts
    /// ([`ControllerAction::AnswerAlterPartition`],
    /// [`ControllerAction::Elected`], [`ControllerAction::PartitionsDone`],
    /// [`ControllerAction::ReplicasDone`]).
    pub(super) async fn drive_core(
        &self,
        event: ControllerEvent,
        batch: &mut RequestBatch,
    ) -> Vec<ControllerAction> {
        let mut queue: VecDeque<ControllerAction> = self.core_event(event).into();
        let mut verdicts = Vec::new();
        while let Some(action) = queue.pop_front() {
            let next = match action {
                ControllerAction::WriteLeaderships { token, writes } => {
                    let results = self
                        .write_leaderships(&writes)
                        .await
                        .into_iter()
                        .map(|r| r.map_err(write_failure))
                        .collect();
                    Some(ControllerEvent::LeadershipsWritten { token, results })
                }
                ControllerAction::ReadUncleanSettings { job, topics } => {
                    let default = self.settings.borrow().unclean_leader_election;
                    let mut settings = BTreeMap::new();
                    for t in topics {
                        let v = self.topic_unclean(&t, default).await;
                        settings.insert(t, v);
                    }
                    Some(ControllerEvent::UncleanRead { job, settings })
                }
                ControllerAction::ReloadLeaderships { job, parts } => {
                    let states = self.read_leaderships(&parts).await;
                    Some(ControllerEvent::LeadershipsReloaded { job, states })
                }
                ControllerAction::LeaderAndIsr {
                    recipients,
                    partition,
                    is_new,
                } => {
                    self.with_ctx(|ctx| {
                        batch.add_leader_and_isr(ctx, recipients, &partition, is_new)
                    });
                    None
                }
                ControllerAction::StopReplica {
                    replica,
                    partition,
                    delete,
                } => {
                    batch.add_stop_replica([replica], &partition, delete);
                    None
                }
                ControllerAction::CreateStates { token, states } => {
                    let results = self.create_states(&states).await;
                    Some(ControllerEvent::StatesCreated { token, results })
                }
                ControllerAction::UncleanElections(n) => {
                    self.stats.borrow().on_unclean_elections(n);
                    None
                }
                ControllerAction::CheckReassignment(tp) => {
                    let _ = self.tx.try_send(Tagged {
                        session: self.session.get(),
                        term: self.term.get(),
                        event: Event::ReassignmentIsrChange(tp),
                    });
                    None
                }
                ControllerAction::UpdateMetadata {
                    brokers,
                    partitions,
                } => {
                    batch.add_update_metadata(brokers, partitions);
                    None
                }
                verdict @ (ControllerAction::AnswerAlterPartition { .. }
                | ControllerAction::Elected { .. }
                | ControllerAction::PartitionsDone { .. }
                | ControllerAction::ReplicasDone { .. }) => {
                    verdicts.push(verdict);
                    None
                }
            };
            if let Some(event) = next {
                queue.extend(self.core_event(event));
            }
        }
        verdicts
    }

    /// One event through the controller core, with the context.
    fn core_event(&self, event: ControllerEvent) -> Vec<ControllerAction> {
        let now_ms = self.clock.wall_ms();
        let mut ctx = self.context.borrow_mut();
        self.core.borrow_mut().on_event(ctx.as_mut(), now_ms, event)
    }

    /// The state znodes of `parts` as they are now (unreadable or
    /// malformed ones logged and left out).
    pub(super) async fn read_leaderships(
        &self,
        parts: &[TopicPartition],
    ) -> Vec<(TopicPartition, Leadership)> {
        let store = self.store();
        let mut out = Vec::with_capacity(parts.len());
        for tp in parts {
            let path = paths::partition_state(&tp.topic, tp.partition);
            match store.get(&path).await {
                Ok((data, stat)) => match PartitionStateZNode::decode(&data) {
                    Ok(z) => out.push((tp.clone(), leadership_of(&z, stat.version))),
                    Err(e) => tracing::warn!(%path, error = %e.0, "malformed partition state"),
                },
                Err(e) => tracing::warn!(%path, error = %e, "re-reading partition state"),
            }
        }
        out
    }
}

/// A state write's failure as the core reads it.
fn write_failure(e: WriteError) -> WriteFailure {
    match e {
        WriteError::Store(StoreError::BadVersion(_)) => WriteFailure::BadVersion(e.to_string()),
        WriteError::NotController | WriteError::Moved => WriteFailure::NotController(e.to_string()),
        e => WriteFailure::Other(e.to_string()),
    }
}
