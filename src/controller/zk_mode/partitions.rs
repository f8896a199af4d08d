//! `[drv]` The znode side of the controller core's partition and replica
//! state machines (Kafka 3.9 `ZkPartitionStateMachine`,
//! `ZkReplicaStateMachine`): the state znodes of new partitions created,
//! leaderships written conditioned on their partition epochs and re-read,
//! topics' unclean-election settings read; the requests the core asks for
//! are gathered in a [`RequestBatch`] and sent at each step
//! ([`ZkBroker::send_batch`]), their answers fed back as events.

use std::collections::BTreeSet;

use super::{ControllerContext, Duties, Event, Tagged, WriteError, ZkBroker};
use crate::controller::context::Leadership;
use crate::controller::core::CreateFailure;
use crate::controller::leader_election::{LeaderIsr, LeaderRecoveryState};
use crate::controller::request_batch::{ControllerRequest, RequestBatch};
use crate::controller::topic_admin;
use crate::io::local_sync::{join_all, Local};
use crate::protocol::ErrorCode;
use crate::types::{ControllerEpoch, PartitionEpoch, TopicPartition};
use crate::zk::paths::{self, ConfigZNode, PartitionStateZNode};
use crate::zk::store::{MetadataStore, Op, OpResult, StoreError};

/// New partitions whose state znodes one `multi` creates (two creates
/// each, ~200 bytes: far below ZooKeeper's 1 MiB `jute.maxbuffer`).
const STATES_PER_MULTI: usize = 200;

/// `unclean.leader.election.enable`.
const UNCLEAN_KEY: &str = "unclean.leader.election.enable";

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// Run `f` on the context; `None` when not controller.
    pub(super) fn with_ctx<T>(&self, f: impl FnOnce(&mut ControllerContext) -> T) -> Option<T> {
        self.context.borrow_mut().as_mut().map(f)
    }

    /// Build `batch` from the context as it is now and send it; answers
    /// to deleting StopReplicas come back as [`Event::DeletionAnswer`].
    pub(super) fn send_batch(&self, batch: RequestBatch) {
        if batch.is_empty() {
            return;
        }
        let listener = self.settings.borrow().listener.clone();
        let Some(requests) = self
            .context
            .borrow()
            .as_ref()
            .map(|ctx| batch.build(ctx, self.me, &listener))
        else {
            return;
        };
        let (session, term) = (self.session.get(), self.term.get());
        for (broker, req) in requests {
            let deleting = req.deleting();
            let leader_and_isr = matches!(req, ControllerRequest::LeaderAndIsr(_));
            let answer = self.duties.send(broker, req);
            let tx = self.tx.clone();
            glommio::spawn_local(async move {
                let result = answer.await;
                let errors: Vec<(TopicPartition, ErrorCode)> = match &result {
                    Ok(r) => {
                        if r.error != ErrorCode::NONE {
                            tracing::warn!(%broker, error = %r.error, "controller request refused");
                        }
                        for (t, p, e) in r.partitions.iter().filter(|x| x.2 != ErrorCode::NONE) {
                            if leader_and_isr && *e == ErrorCode::STALE_CONTROLLER_EPOCH {
                                // The broker already has this leader epoch
                                // (Kafka's `becomeLeaderOrFollower`: "matches
                                // the current leader epoch"), e.g. every
                                // partition a new controller announces at
                                // failover (`ReplicaStateMachine.startup`);
                                // Kafka's controller only acts on
                                // KAFKA_STORAGE_ERROR.
                                tracing::debug!(%broker, topic = %t, partition = p, "controller request: leader epoch already applied");
                            } else {
                                tracing::warn!(%broker, topic = %t, partition = p, error = %e, "controller request: partition error");
                            }
                        }
                        deleting
                            .iter()
                            .map(|tp| {
                                let e = r
                                    .partitions
                                    .iter()
                                    .find(|(t, p, _)| **t == *tp.topic && *p == tp.partition)
                                    .map_or(r.error, |x| if r.error == ErrorCode::NONE { x.2 } else { r.error });
                                (tp.clone(), e)
                            })
                            .collect()
                    }
                    Err(e) => {
                        tracing::debug!(%broker, error = %e, "controller request not delivered");
                        deleting
                            .iter()
                            .map(|tp| (tp.clone(), ErrorCode::UNKNOWN_SERVER_ERROR))
                            .collect()
                    }
                };
                if !errors.is_empty() {
                    let _ = tx.try_send(Tagged {
                        session,
                        term,
                        event: Event::DeletionAnswer { broker, errors },
                    });
                }
                // Kafka's `LeaderAndIsrResponseReceived`: which replicas
                // the broker holds in a failed log dir (KAFKA_STORAGE_ERROR).
                if let (true, Ok(r)) = (leader_and_isr, &result) {
                    if r.error == ErrorCode::NONE {
                        let answers = r
                            .partitions
                            .iter()
                            .map(|(t, p, e)| (TopicPartition::new(t.as_str(), *p), *e))
                            .collect();
                        let event = Event::LeaderAndIsrAnswer { broker, answers };
                        let _ = tx.try_send(Tagged { session, term, event });
                    }
                }
            })
            .detach();
        }
    }

    /// Create the `partitions/<p>` and `partitions/<p>/state` znodes of
    /// `plans`, [`STATES_PER_MULTI`] partitions per `multi` behind the
    /// controller-epoch check: ZooKeeper syncs its log once per request, so
    /// a thousand new partitions cost a few syncs, not two thousand (Kafka
    /// sends one request per partition). A `multi` that fails (a node
    /// already there: a creation interrupted by a failover) is redone one
    /// partition at a time, an existing parent being fine, so only the
    /// partitions really initialised already are refused.
    pub(super) async fn create_states(
        &self,
        states: &[(TopicPartition, LeaderIsr)],
    ) -> Vec<Result<(), CreateFailure>> {
        let controller_epoch = ControllerEpoch(self.with_ctx(|ctx| ctx.epoch).unwrap_or(-1));
        let plans: Vec<(TopicPartition, PartitionStateZNode)> = states
            .iter()
            .map(|(tp, l)| {
                let znode = PartitionStateZNode::new(
                    l.leader,
                    l.leader_epoch,
                    l.isr.clone(),
                    controller_epoch,
                );
                (tp.clone(), znode)
            })
            .collect();
        // The `partitions/<p>` parents (Kafka's `createTopicPartitions`:
        // plain creates, an existing node is fine).
        let store = self.store();
        let topics: BTreeSet<&str> = plans.iter().map(|(tp, _)| &*tp.topic).collect();
        for t in topics {
            ensure(&*store, &paths::topic_partitions(t)).await;
        }
        let create = |path: String, data: Vec<u8>| Op::Create {
            path,
            data,
            mode: crate::zk::store::CreateMode::Persistent,
        };
        let chunks: Vec<&[(TopicPartition, PartitionStateZNode)]> =
            plans.chunks(STATES_PER_MULTI).collect();
        let multis: Vec<Local<'_, Result<Vec<OpResult>, WriteError>>> = chunks
            .iter()
            .map(|chunk| -> Local<'_, _> {
                let ops = chunk
                    .iter()
                    .flat_map(|(tp, znode)| {
                        [
                            create(paths::topic_partition(&tp.topic, tp.partition), Vec::new()),
                            create(
                                paths::partition_state(&tp.topic, tp.partition),
                                znode.encode(),
                            ),
                        ]
                    })
                    .collect();
                Box::pin(self.write_as_controller(ops))
            })
            .collect();
        let outcomes = join_all(multis).await;
        let mut results = Vec::with_capacity(plans.len());
        for (chunk, outcome) in chunks.iter().zip(outcomes) {
            match outcome {
                Ok(_) => results.extend(chunk.iter().map(|_| Ok(()))),
                Err(e @ (WriteError::Moved | WriteError::NotController)) => {
                    results.extend(chunk.iter().map(|_| Err(e.clone())))
                }
                Err(_) => {
                    for (tp, znode) in chunk.iter() {
                        ensure(&*store, &paths::topic_partition(&tp.topic, tp.partition)).await;
                        let r = self
                            .write_as_controller(vec![create(
                                paths::partition_state(&tp.topic, tp.partition),
                                znode.encode(),
                            )])
                            .await;
                        results.push(r.map(|_| ()));
                    }
                }
            }
        }
        results
            .into_iter()
            .map(|r| {
                r.map_err(|e| match e {
                    WriteError::Store(StoreError::NodeExists(_)) => CreateFailure::Exists,
                    e => CreateFailure::Other(e.to_string()),
                })
            })
            .collect()
    }

    /// Write each `(partition, leadership)` to its state znode, conditioned
    /// on the partition epoch it was computed from; the new epochs.
    pub(super) async fn write_leaderships(
        &self,
        plans: &[(TopicPartition, LeaderIsr)],
    ) -> Vec<Result<PartitionEpoch, WriteError>> {
        let epoch = self.with_ctx(|ctx| ctx.epoch).unwrap_or(-1);
        let writes: Vec<Local<'_, Result<Vec<OpResult>, WriteError>>> = plans
            .iter()
            .map(|(tp, l)| -> Local<'_, _> {
                let mut znode = PartitionStateZNode::new(
                    l.leader,
                    l.leader_epoch,
                    l.isr.clone(),
                    ControllerEpoch(epoch),
                );
                znode.leader_recovery_state = l.leader_recovery_state.value() as u8;
                Box::pin(self.write_as_controller(vec![Op::Set {
                    path: paths::partition_state(&tp.topic, tp.partition),
                    data: znode.encode(),
                    expected_version: Some(l.partition_epoch.0),
                }]))
            })
            .collect();
        join_all(writes)
            .await
            .into_iter()
            .map(|r| match r?.first() {
                Some(OpResult::Set(stat)) => Ok(PartitionEpoch(stat.version)),
                _ => Err(WriteError::Store(StoreError::Io(
                    "set answered without a stat".into(),
                ))),
            })
            .collect()
    }

    /// The topic's `unclean.leader.election.enable` (its override, else
    /// the broker's), read from `/config/topics/<t>` as Kafka's controller
    /// does at election time.
    pub(super) async fn topic_unclean(&self, topic: &str, default: bool) -> bool {
        match self.store().get(&paths::topic_config(topic)).await {
            Ok((data, _)) => ConfigZNode::decode(&data)
                .ok()
                .and_then(|z| z.config.get(UNCLEAN_KEY).map(|v| v == "true"))
                .unwrap_or(default),
            Err(_) => default,
        }
    }
}

/// The leadership a loaded partition state holds.
pub(super) fn leadership_from(p: &topic_admin::PartitionState) -> Leadership {
    Leadership {
        leader_isr: LeaderIsr {
            leader: p.leader,
            leader_epoch: p.leader_epoch,
            isr: p.isr.clone(),
            leader_recovery_state: LeaderRecoveryState::from_value(p.leader_recovery_state as i8)
                .unwrap_or_default(),
            partition_epoch: p.zk_version,
        },
        controller_epoch: p.controller_epoch,
    }
}

/// The leadership a state znode at `version` holds.
pub(super) fn leadership_of(z: &PartitionStateZNode, version: i32) -> Leadership {
    Leadership {
        leader_isr: LeaderIsr {
            leader: z.leader,
            leader_epoch: z.leader_epoch,
            isr: z.isr.clone(),
            leader_recovery_state: LeaderRecoveryState::from_value(z.leader_recovery_state as i8)
                .unwrap_or_default(),
            partition_epoch: PartitionEpoch(version),
        },
        controller_epoch: z.controller_epoch,
    }
}

/// Create an empty persistent znode unless it exists.
async fn ensure<S: MetadataStore>(store: &S, path: &str) {
    match store
        .create(path, &[], crate::zk::store::CreateMode::Persistent)
        .await
    {
        Ok(_) | Err(StoreError::NodeExists(_)) => {}
        Err(e) => tracing::warn!(%path, error = %e, "creating a partition znode"),
    }
}
