//! `[drv]` The controller's events (Kafka 3.9 `KafkaController`), read
//! from ZooKeeper and handed to the controller core: failover's
//! state-machine start-up, the topic list and a topic's assignment
//! changing (read and watched here), the admin znodes and notification
//! paths (re-listed and watched again here).

use super::{Duties, Event, ZkBroker};
use crate::controller::core::ControllerEvent;
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

    /// `processTopicChange` after the topic list was re-read, decided by
    /// the controller core (the new topics read and watched by the
    /// driver).
    pub(super) async fn on_topics_listed(&self, names: Vec<String>) {
        let event = ControllerEvent::TopicsListed {
            token: self.core_token(),
            names,
        };
        self.run_core(event, |_| None::<()>).await;
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

    /// `processPartitionModifications`: the topic's assignment re-read
    /// (and watched again); the core creates the partitions it adds.
    pub(super) async fn on_partition_modifications(&self, topic: &str, term: u64) {
        let Some(znode) = self.watch_topic(topic, term).await else {
            return;
        };
        let event = ControllerEvent::PartitionsModified {
            token: self.core_token(),
            topic: topic.to_owned(),
            znode,
            default_unclean: self.settings.borrow().unclean_leader_election,
        };
        self.run_core(event, |_| None::<()>).await;
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
