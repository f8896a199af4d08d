//! `[drv]` Topic deletion's I/O (the decisions are the controller core's,
//! `controller::core` after Kafka 3.9 `TopicDeletionManager`): the
//! `/admin/delete_topics` listing and the brokers' answers to deleting
//! StopReplicas fed to the core, and the znodes it asks removed.

use super::{Duties, ZkBroker};
use crate::controller::core::ControllerEvent;
use crate::controller::topic_admin;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::paths;
use crate::zk::store::{MetadataStore, Op};

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// `/admin/delete_topics` children re-read.
    pub(super) async fn on_delete_topics_listed(&self, marked: Vec<String>) {
        let event = ControllerEvent::DeleteTopicsListed {
            token: self.core_token(),
            marked,
            enabled: self.settings.borrow().delete_topic_enable,
        };
        self.run_core(event, |_| None::<()>).await;
    }

    /// A broker's answer to a deleting StopReplica
    /// (`TopicDeletionStopReplicaResponseReceived`).
    pub(super) async fn on_deletion_answer(
        &self,
        broker: BrokerId,
        errors: Vec<(TopicPartition, ErrorCode)>,
    ) {
        let event = ControllerEvent::DeletionAnswer {
            token: self.core_token(),
            broker,
            errors,
        };
        self.run_core(event, |_| None::<()>).await;
    }

    /// The markers of `topics` removed behind the controller-epoch check.
    pub(super) async fn remove_delete_markers(&self, topics: &[String]) {
        let ops = topics
            .iter()
            .map(|t| Op::Delete {
                path: paths::delete_topic_marker(t),
                expected_version: None,
            })
            .collect();
        if let Err(e) = self.write_as_controller(ops).await {
            tracing::warn!(error = %e, "removing deletion markers");
        }
    }

    /// `completeDeleteTopic`'s writes: the topic's znodes, its config and
    /// its marker, in one `multi` conditioned on the controller epoch.
    /// Whether they were removed.
    pub(super) async fn remove_topic_znodes(&self, topic: &str) -> bool {
        let store = self.store();
        let mut ops = match topic_admin::subtree_delete_ops(&*store, &paths::topic(topic)).await {
            Ok(ops) => ops,
            Err(e) => {
                tracing::warn!(%topic, error = %e, "listing the topic's znodes for deletion");
                return false;
            }
        };
        if let Ok(Some(_)) = store.exists(&paths::topic_config(topic)).await {
            ops.push(Op::Delete {
                path: paths::topic_config(topic),
                expected_version: None,
            });
        }
        ops.push(Op::Delete {
            path: paths::delete_topic_marker(topic),
            expected_version: None,
        });
        match self.write_as_controller(ops).await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(%topic, error = %e, "removing the deleted topic's znodes");
                false
            }
        }
    }
}
