//! `[drv]` The controller's events (Kafka 3.9 `KafkaController`):
//! failover's state-machine start-up, new partitions, brokers starting and
//! failing, replicas going offline, the topic list and a topic's
//! assignment changing, the admin znodes.

use std::collections::BTreeSet;

use super::{Duties, Event, ZkBroker};
use crate::controller::core::ControllerEvent;
use crate::types::TopicPartition;
use crate::zk::paths::{self, TopicZNode};
use crate::zk::store::{MetadataStore, StoreError};

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    // ----- the controller's events -----

    /// `onControllerFailover` once the context is loaded, decided by the
    /// controller core (`controller::core`, its `flows::startup`).
    pub(super) async fn start_state_machines(&self) {
        let event = ControllerEvent::Failover {
            token: self.core_token(),
            default_unclean: self.settings.borrow().unclean_leader_election,
        };
        self.run_core(event, |_| None::<()>).await;
    }

    /// `onNewPartitionCreation`, decided by the controller core.
    pub(super) async fn on_new_partitions(&self, parts: Vec<TopicPartition>) {
        if parts.is_empty() {
            return;
        }
        let event = ControllerEvent::NewPartitions {
            token: self.core_token(),
            parts,
            default_unclean: self.settings.borrow().unclean_leader_election,
        };
        self.run_core(event, |_| None::<()>).await;
    }

    /// `processTopicChange` after the topic list was re-read: topics gone
    /// are forgotten; new ones get their assignment read, a watch on it,
    /// and their partitions created.
    pub(super) async fn on_topics_listed(&self, names: Vec<String>, term: u64) {
        let Some((added, removed)) = self.with_ctx(|ctx| {
            let known = ctx.topics();
            let now: BTreeSet<String> = names.iter().cloned().collect();
            (
                now.difference(&known).cloned().collect::<Vec<_>>(),
                known.difference(&now).cloned().collect::<Vec<_>>(),
            )
        }) else {
            return;
        };
        self.with_ctx(|ctx| {
            for t in &removed {
                ctx.remove_topic(t);
            }
        });
        let mut new_parts = Vec::new();
        for t in &added {
            match self.watch_topic(t, term).await {
                Some(z) => {
                    self.with_ctx(|ctx| {
                        ctx.add_topic(t, z.topic_id.unwrap_or(uuid::Uuid::nil()));
                        for (p, replicas) in &z.partitions {
                            let tp = TopicPartition::new(t.as_str(), *p);
                            ctx.assignments.insert(tp.clone(), replicas.clone());
                            new_parts.push(tp);
                        }
                    });
                }
                None => continue,
            }
        }
        self.on_new_partitions(new_parts).await;
    }

    /// Read `/brokers/topics/<t>` and watch it (Kafka's
    /// PartitionModificationsHandler); `None` when gone or malformed.
    pub(super) async fn watch_topic(&self, topic: &str, term: u64) -> Option<TopicZNode> {
        let path = paths::topic(topic);
        match self.store().get_watch(&path).await {
            Ok((data, _, w)) => {
                self.arm(w, Event::PartitionModifications(topic.to_owned()), term);
                match TopicZNode::decode(&data) {
                    Ok(z) => Some(z),
                    Err(e) => {
                        tracing::warn!(%path, error = %e.0, "ignoring a malformed topic assignment");
                        None
                    }
                }
            }
            Err(StoreError::NoNode(_)) => None,
            Err(e) => {
                tracing::warn!(%path, error = %e, "reading a topic assignment");
                None
            }
        }
    }

    /// `processPartitionModifications`: partitions added to a topic's
    /// assignment (CreatePartitions) are created.
    pub(super) async fn on_partition_modifications(&self, topic: &str, term: u64) {
        let Some(z) = self.watch_topic(topic, term).await else {
            return;
        };
        let added = self
            .with_ctx(|ctx| {
                if !ctx.topic_ids.contains_key(topic) {
                    return Vec::new();
                }
                let mut added = Vec::new();
                for (p, replicas) in &z.partitions {
                    let tp = TopicPartition::new(topic, *p);
                    if !ctx.assignments.contains_key(&tp) {
                        added.push((tp, replicas.clone()));
                    }
                }
                if ctx.topics_to_delete.contains(topic) {
                    if !added.is_empty() {
                        tracing::warn!(%topic, "partitions added to a topic being deleted are ignored");
                    }
                    return Vec::new();
                }
                for (tp, replicas) in &added {
                    ctx.assignments.insert(tp.clone(), replicas.clone());
                }
                added.into_iter().map(|(tp, _)| tp).collect()
            })
            .unwrap_or_default();
        self.on_new_partitions(added).await;
    }

    /// An admin znode or a notification path changed (controller only):
    /// the watch is armed again and the change handled (topic deletions,
    /// ISR change and log dir notifications, preferred elections,
    /// reassignments).
    pub(super) async fn on_admin_change(&self, path: &'static str) {
        if !self.election.borrow().is_controller() {
            return;
        }
        let term = self.term.get();
        let store = self.store();
        if path == paths::DELETE_TOPICS {
            match store.children_watch(path).await {
                Ok((marked, w)) => {
                    self.arm(w, Event::AdminChange(path), term);
                    self.on_delete_topics_listed(marked).await;
                }
                Err(e) => tracing::warn!(error = %e, "re-reading topic deletions"),
            }
            return;
        }
        if path == paths::ISR_CHANGE_NOTIFICATION || path == paths::LOG_DIR_EVENT_NOTIFICATION {
            match store.children_watch(path).await {
                Ok((names, w)) if path == paths::ISR_CHANGE_NOTIFICATION => {
                    self.arm(w, Event::AdminChange(path), term);
                    self.on_isr_change_notifications(names).await;
                }
                Ok((names, w)) => {
                    self.arm(w, Event::AdminChange(path), term);
                    self.on_log_dir_events(names).await;
                }
                Err(e) => tracing::warn!(error = %e, %path, "re-reading notifications"),
            }
            return;
        }
        if let Ok(w) = store.exists_watch(path).await.map(|(_, w)| w) {
            self.arm(w, Event::AdminChange(path), term);
        }
        tracing::debug!(%path, "admin znode changed");
        if path == paths::PREFERRED_REPLICA_ELECTION {
            self.on_preferred_replica_election_znode().await;
        }
        if path == paths::REASSIGN_PARTITIONS {
            self.on_reassign_partitions_znode().await;
        }
    }
}
