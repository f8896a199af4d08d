//! `[drv]` Performs the controller core's actions (`controller::core`):
//! znode writes behind the controller-epoch check, znode reads, requests
//! queued in the caller's batch or sent, follow-up events queued; each
//! result goes back to the core as the next event, until the core gives
//! its verdict (an answer, the end of a job), which the caller gets.

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
    /// settles; the requests go into `batch`. Returns the verdicts (the
    /// answers, and the ends of elections, state changes and flows).
    pub(super) async fn drive_core(
        &self,
        event: ControllerEvent,
        batch: &mut RequestBatch,
    ) -> Vec<ControllerAction> {
        let mut queue: VecDeque<ControllerAction> = self.core_event(event).into();
        let mut verdicts = Vec::new();
        while let Some(action) = queue.pop_front() {
            match self.perform(action, batch).await {
                Performed::Next(event) => queue.extend(self.core_event(event)),
                Performed::Verdict(v) => verdicts.push(v),
                Performed::Done => {}
            }
        }
        verdicts
    }

    /// Run `event` through the core in a batch of its own, send what is
    /// left of it, and give back the first verdict `pick` takes.
    pub(super) async fn run_core<T>(
        &self,
        event: ControllerEvent,
        pick: impl Fn(ControllerAction) -> Option<T>,
    ) -> Option<T> {
        let mut batch = RequestBatch::new();
        let verdicts = self.drive_core(event, &mut batch).await;
        self.send_batch(batch);
        verdicts.into_iter().find_map(pick)
    }

    /// One action of the core: its result as the next event, a verdict
    /// for the caller, or nothing more.
    async fn perform(&self, action: ControllerAction, batch: &mut RequestBatch) -> Performed {
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
                self.with_ctx(|ctx| batch.add_leader_and_isr(ctx, recipients, &partition, is_new));
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
            ControllerAction::UpdateMetadataAll { brokers } => {
                batch.add_update_metadata_all(brokers);
                None
            }
            ControllerAction::BrokersChanged { live } => {
                self.duties.brokers_changed(&live).await;
                None
            }
            znodes @ (ControllerAction::RemoveDeleteMarkers { .. }
            | ControllerAction::RemoveTopicZnodes { .. }
            | ControllerAction::WriteTopicAssignment { .. }
            | ControllerAction::RemoveFromZkReassignment { .. }
            | ControllerAction::ReserveProducerIds { .. }
            | ControllerAction::ReadTopics { .. }) => self.perform_znodes(znodes).await,
            ControllerAction::SendBatch { token } => {
                self.send_batch(std::mem::replace(batch, RequestBatch::new()));
                Some(ControllerEvent::Performed { token })
            }
            verdict @ (ControllerAction::AnswerAlterPartition { .. }
            | ControllerAction::AnswerControlledShutdown { .. }
            | ControllerAction::AnswerElectLeaders { .. }
            | ControllerAction::AnswerAlterReassignments { .. }
            | ControllerAction::AnswerAllocateProducerIds { .. }
            | ControllerAction::ZkReassigned { .. }
            | ControllerAction::Reassigned { .. }
            | ControllerAction::FlowDone { .. }
            | ControllerAction::Elected { .. }
            | ControllerAction::PartitionsDone { .. }
            | ControllerAction::ReplicasDone { .. }) => return Performed::Verdict(verdict),
        };
        next.map_or(Performed::Done, Performed::Next)
    }

    /// The znode reads and writes of new topics, topic deletion,
    /// reassignment and producer-id blocks, their results as the next
    /// event.
    async fn perform_znodes(&self, action: ControllerAction) -> Option<ControllerEvent> {
        match action {
            ControllerAction::RemoveDeleteMarkers { token, topics } => {
                self.remove_delete_markers(&topics).await;
                Some(ControllerEvent::Performed { token })
            }
            ControllerAction::RemoveTopicZnodes { token, topic } => {
                let removed = self.remove_topic_znodes(&topic).await;
                Some(ControllerEvent::TopicZnodesRemoved {
                    token,
                    topic,
                    removed,
                })
            }
            ControllerAction::WriteTopicAssignment {
                token,
                topic,
                znode,
            } => {
                let result = self
                    .write_topic_assignment(&topic, &znode)
                    .await
                    .map_err(write_failure);
                Some(ControllerEvent::TopicAssignmentWritten { token, result })
            }
            ControllerAction::RemoveFromZkReassignment { token, remove } => {
                self.maybe_remove_from_zk_reassignment(&remove).await;
                Some(ControllerEvent::Performed { token })
            }
            ControllerAction::ReadTopics { token, topics } => {
                let term = self.term.get();
                let mut read = Vec::with_capacity(topics.len());
                for t in topics {
                    if let Some(z) = self.watch_topic(&t, term).await {
                        read.push((t, z));
                    }
                }
                Some(ControllerEvent::TopicsRead {
                    token,
                    read,
                    default_unclean: self.settings.borrow().unclean_leader_election,
                })
            }
            ControllerAction::ReserveProducerIds { token, broker } => {
                let block = self.reserve_producer_ids(broker).await;
                Some(ControllerEvent::ProducerIdsReserved {
                    token,
                    broker,
                    block,
                })
            }
            _ => None,
        }
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

/// What performing one action gave.
enum Performed {
    Next(ControllerEvent),
    Verdict(ControllerAction),
    Done,
}

/// A state write's failure as the core reads it.
fn write_failure(e: WriteError) -> WriteFailure {
    match e {
        WriteError::Store(StoreError::BadVersion(_)) => WriteFailure::BadVersion(e.to_string()),
        WriteError::NotController | WriteError::Moved => WriteFailure::NotController(e.to_string()),
        e => WriteFailure::Other(e.to_string()),
    }
}
