//! `[pure]` What the controller's watches and notifications report, as
//! flows of the controller core (the driver reads the znodes and arms the
//! watches):
//!
//! - the topic list changed (Kafka 3.9 `processTopicChange`): topics gone
//!   are forgotten, new ones read (with a watch on their assignment) and
//!   their partitions created (`onNewPartitionCreation`);
//! - a topic's assignment changed (`processPartitionModifications`):
//!   partitions added by CreatePartitions are created, unless the topic is
//!   being deleted;
//! - `/isr_change_notification` (`processIsrChangeNotification`, brokers
//!   below IBP 2.7 that wrote their ISR themselves): the partitions named
//!   are re-read and announced;
//! - `/log_dir_event_notification` (`onBrokerLogDirFailure`): every
//!   replica of the brokers named is told its partitions again, and their
//!   LeaderAndIsr answers (`processLeaderAndIsrResponseReceived`) name the
//!   replicas in a failed log dir, which go offline
//!   (`onReplicasBecomeOffline`) until the broker starts again.

use std::collections::BTreeSet;

use super::super::{ControllerAction, ControllerCore};
use super::steps::{End, Step, Steps};
use crate::controller::context::ControllerContext;
use crate::controller::state_machine::ReplicaState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::paths::TopicZNode;

impl ControllerCore {
    /// `/brokers/topics` listed: gone topics forgotten; the new ones to
    /// read ([`ControllerAction::ReadTopics`]), or the end.
    pub(in crate::controller::core) fn on_topics_listed(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        names: Vec<String>,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let known = ctx.topics();
        let now: BTreeSet<String> = names.into_iter().collect();
        for gone in known.difference(&now) {
            ctx.remove_topic(gone);
        }
        let added: Vec<String> = now.difference(&known).cloned().collect();
        if added.is_empty() {
            return vec![ControllerAction::FlowDone { token }];
        }
        vec![ControllerAction::ReadTopics {
            token,
            topics: added,
        }]
    }

    /// The new topics read (unreadable ones left out): known now, their
    /// partitions created. Ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_topics_read(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        read: Vec<(String, TopicZNode)>,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let mut parts = Vec::new();
        for (t, z) in read {
            ctx.add_topic(&t, z.topic_id.unwrap_or(uuid::Uuid::nil()));
            for (p, replicas) in z.partitions {
                let tp = TopicPartition::new(t.as_str(), p);
                ctx.assignments.insert(tp.clone(), replicas);
                parts.push(tp);
            }
        }
        self.on_new_partitions(Some(ctx), token, parts, default_unclean)
    }

    /// A topic's assignment as read: partitions it adds are created.
    /// Ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_partitions_modified(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        topic: String,
        znode: TopicZNode,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        if !ctx.topic_ids.contains_key(&topic) {
            return vec![ControllerAction::FlowDone { token }];
        }
        let added: Vec<(TopicPartition, Vec<BrokerId>)> = znode
            .partitions
            .into_iter()
            .map(|(p, replicas)| (TopicPartition::new(topic.as_str(), p), replicas))
            .filter(|(tp, _)| !ctx.assignments.contains_key(tp))
            .collect();
        if ctx.topics_to_delete.contains(&topic) {
            if !added.is_empty() {
                tracing::warn!(%topic, "partitions added to a topic being deleted are ignored");
            }
            return vec![ControllerAction::FlowDone { token }];
        }
        let mut parts = Vec::with_capacity(added.len());
        for (tp, replicas) in added {
            ctx.assignments.insert(tp.clone(), replicas);
            parts.push(tp);
        }
        self.on_new_partitions(Some(ctx), token, parts, default_unclean)
    }

    /// ISR change notifications name `parts`: the known ones re-read and
    /// announced to every registered broker. Ends with
    /// [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_isr_change_notified(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        mut parts: Vec<TopicPartition>,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        parts.sort();
        parts.dedup();
        parts.retain(|tp| ctx.assignments.contains_key(tp));
        if parts.is_empty() {
            return vec![ControllerAction::FlowDone { token }];
        }
        let steps = [Step::Reread(parts.clone()), Step::Tell(parts), Step::Send];
        self.start_steps(Some(ctx), token, Steps::new(steps, End::Flow))
    }

    /// `onBrokerLogDirFailure`: every replica on `brokers` to Online again,
    /// i.e. a LeaderAndIsr to each, whose answers name the failed ones.
    /// Ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_log_dir_failure(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        brokers: BTreeSet<BrokerId>,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        tracing::info!(?brokers, "handling a log directory failure");
        let replicas = ctx.replicas_on(&brokers);
        let steps = [Step::Replicas(replicas, ReplicaState::Online), Step::Send];
        self.start_steps(Some(ctx), token, Steps::new(steps, End::Flow))
    }

    /// `processLeaderAndIsrResponseReceived`: KAFKA_STORAGE_ERROR marks a
    /// replica as in a failed dir, NONE as online again; the newly failed
    /// ones go offline (`onReplicasBecomeOffline`). Ends with
    /// [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_leader_and_isr_answer(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        broker: BrokerId,
        answers: Vec<(TopicPartition, ErrorCode)>,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let offline = ctx.replicas_on_offline_dirs.entry(broker).or_default();
        let mut newly = Vec::new();
        for (tp, e) in answers {
            if e == ErrorCode::KAFKA_STORAGE_ERROR {
                if offline.insert(tp.clone()) {
                    newly.push((tp, broker));
                }
            } else if e == ErrorCode::NONE {
                offline.remove(&tp);
            }
        }
        if offline.is_empty() {
            ctx.replicas_on_offline_dirs.remove(&broker);
        }
        if newly.is_empty() {
            return vec![ControllerAction::FlowDone { token }];
        }
        tracing::info!(%broker, replicas = newly.len(), "replicas in a failed log dir marked offline");
        self.on_replicas_offline(Some(ctx), token, newly, default_unclean)
    }
}

#[cfg(test)]
mod tests;
