//! `[drv]` The controller's duties, partition side (Kafka 3.9
//! `ZkPartitionStateMachine`): partitions moved between states, new ones
//! given their first leader and ISR, offline ones elected, the state znodes
//! written. Every decision is made on the context (`controller::context`)
//! with the pure state machines and election strategies; the state znodes
//! are written with [`ZkBroker::write_as_controller`]; the requests for
//! brokers are gathered in a [`RequestBatch`] and sent when the step ends
//! ([`ZkBroker::send_batch`]). The replica side is `replicas`, the events
//! that drive both `events`, topic deletion `deletion`, controlled shutdown
//! `shutdown`.

use std::collections::{BTreeMap, BTreeSet};

use super::{ControllerContext, Duties, Event, Tagged, WriteError, ZkBroker};
use crate::controller::context::Leadership;
use crate::controller::leader_election::{self, LeaderIsr, LeaderRecoveryState, Strategy};
use crate::controller::request_batch::{ControllerRequest, RequestBatch};
use crate::controller::state_machine::PartitionState;
use crate::controller::topic_admin;
use crate::io::local_sync::{join_all, Local};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch, TopicPartition};
use crate::zk::paths::{self, ConfigZNode, PartitionStateZNode};
use crate::zk::store::{MetadataStore, Op, OpResult, StoreError};

/// Which election an Offline/Online → Online change runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionKind {
    /// `OfflinePartitionLeaderElectionStrategy`; unclean per topic config.
    Offline,
    ControlledShutdown,
    /// `PreferredReplicaPartitionLeaderElectionStrategy` (ElectLeaders
    /// PREFERRED, `/admin/preferred_replica_election`, auto rebalance).
    Preferred,
    /// ElectLeaders UNCLEAN: the offline strategy with unclean allowed
    /// whatever the topic says (Kafka ORs the request's flag in).
    Unclean,
    /// `ReassignPartitionLeaderElectionStrategy`: the first target replica
    /// live and in the ISR (the assignment is the target by then).
    Reassign,
}

/// Partitions an election could not give a leader, with Kafka's error
/// and message for ElectLeaders.
pub(super) type ElectionFailures = BTreeMap<TopicPartition, (ErrorCode, String)>;

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

    // ----- the partition state machine -----

    /// `PartitionStateMachine.handleStateChanges`: moves `parts` to
    /// `target`, initialising (New → Online) or electing (Offline/Online →
    /// Online) leaders, writing their state znodes and queueing the
    /// LeaderAndIsr / UpdateMetadata that announce them. Illegal changes
    /// are logged and skipped. Returns the partitions now Online.
    pub(super) async fn partitions_to(
        &self,
        parts: &[TopicPartition],
        target: PartitionState,
        election: ElectionKind,
        batch: &mut RequestBatch,
    ) -> Vec<TopicPartition> {
        let Some((to_init, to_elect)) = self.with_ctx(|ctx| {
            let mut to_init = Vec::new();
            let mut to_elect = Vec::new();
            for tp in parts {
                let from = ctx.partition_states.get(tp);
                if !target.can_follow(from) {
                    tracing::warn!(partition = %tp, ?from, to = ?target, "illegal partition state change refused");
                    continue;
                }
                match target {
                    PartitionState::Online if from == PartitionState::New => to_init.push(tp.clone()),
                    PartitionState::Online => to_elect.push(tp.clone()),
                    _ => {
                        let _ = ctx.partition_states.transition(tp, target);
                    }
                }
            }
            (to_init, to_elect)
        }) else {
            return Vec::new();
        };
        let mut online = self.initialize_leaders(&to_init, batch).await;
        let mut failed = ElectionFailures::new();
        online.extend(
            self.elect_leaders(&to_elect, election, batch, &mut failed)
                .await,
        );
        self.with_ctx(|ctx| {
            for tp in &online {
                let _ = ctx.partition_states.transition(tp, PartitionState::Online);
            }
        });
        online
    }

    /// `initializeLeaderAndIsrForPartitions`: leader = first live replica
    /// in AR order, ISR = the live replicas, leader epoch 0; the state
    /// znodes are created (conditioned on the controller epoch) and the
    /// live replicas told with `isNew`.
    async fn initialize_leaders(
        &self,
        parts: &[TopicPartition],
        batch: &mut RequestBatch,
    ) -> Vec<TopicPartition> {
        let Some(plans) = self.with_ctx(|ctx| {
            let mut plans = Vec::new();
            for tp in parts {
                let live = ctx.live_for(tp);
                let live_replicas: Vec<BrokerId> = ctx
                    .replicas(tp)
                    .iter()
                    .copied()
                    .filter(|r| live.contains(r))
                    .collect();
                let Some(&leader) = live_replicas.first() else {
                    tracing::warn!(partition = %tp, replicas = ?ctx.replicas(tp), "no replica of a new partition is online; it stays New");
                    continue;
                };
                let znode = PartitionStateZNode::new(
                    leader,
                    LeaderEpoch(0),
                    live_replicas.clone(),
                    ControllerEpoch(ctx.epoch),
                );
                plans.push((tp.clone(), znode, live_replicas));
            }
            plans
        }) else {
            return Vec::new();
        };
        let store = self.store();
        // The `partitions/<p>` parents (Kafka's `createTopicPartitions`:
        // plain creates, an existing node is fine).
        let topics: BTreeSet<&str> = plans.iter().map(|(tp, _, _)| &*tp.topic).collect();
        for t in topics {
            ensure(&*store, &paths::topic_partitions(t)).await;
        }
        let results = self.create_states(&plans).await;
        let mut online = Vec::new();
        for ((tp, znode, live_replicas), r) in plans.into_iter().zip(results) {
            match r {
                Ok(_) => {
                    self.with_ctx(|ctx| {
                        ctx.leadership.insert(
                            tp.clone(),
                            Leadership {
                                leader_isr: LeaderIsr {
                                    leader: znode.leader,
                                    leader_epoch: znode.leader_epoch,
                                    isr: znode.isr.clone(),
                                    leader_recovery_state: LeaderRecoveryState::Recovered,
                                    partition_epoch: PartitionEpoch(0),
                                },
                                controller_epoch: znode.controller_epoch,
                            },
                        );
                        batch.add_leader_and_isr(ctx, live_replicas.iter().copied(), &tp, true);
                    });
                    online.push(tp);
                }
                Err(WriteError::Store(StoreError::NodeExists(_))) => {
                    tracing::warn!(partition = %tp, "state znode already exists; partition stays New")
                }
                Err(e) => {
                    tracing::warn!(partition = %tp, error = %e, "initialising the partition's leader")
                }
            }
        }
        online
    }

    /// Create the `partitions/<p>` and `partitions/<p>/state` znodes of
    /// `plans`, [`STATES_PER_MULTI`] partitions per `multi` behind the
    /// controller-epoch check: ZooKeeper syncs its log once per request, so
    /// a thousand new partitions cost a few syncs, not two thousand (Kafka
    /// sends one request per partition). A `multi` that fails (a node
    /// already there: a creation interrupted by a failover) is redone one
    /// partition at a time, an existing parent being fine, so only the
    /// partitions really initialised already are refused.
    async fn create_states(
        &self,
        plans: &[(TopicPartition, PartitionStateZNode, Vec<BrokerId>)],
    ) -> Vec<Result<(), WriteError>> {
        let create = |path: String, data: Vec<u8>| Op::Create {
            path,
            data,
            mode: crate::zk::store::CreateMode::Persistent,
        };
        let chunks: Vec<&[(TopicPartition, PartitionStateZNode, Vec<BrokerId>)]> =
            plans.chunks(STATES_PER_MULTI).collect();
        let multis: Vec<Local<'_, Result<Vec<OpResult>, WriteError>>> = chunks
            .iter()
            .map(|chunk| -> Local<'_, _> {
                let ops = chunk
                    .iter()
                    .flat_map(|(tp, znode, _)| {
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
        let store = self.store();
        let mut results = Vec::with_capacity(plans.len());
        for (chunk, outcome) in chunks.iter().zip(outcomes) {
            match outcome {
                Ok(_) => results.extend(chunk.iter().map(|_| Ok(()))),
                Err(e @ (WriteError::Moved | WriteError::NotController)) => {
                    results.extend(chunk.iter().map(|_| Err(e.clone())))
                }
                Err(_) => {
                    for (tp, znode, _) in chunk.iter() {
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
    }

    /// `electLeaderForPartitions`: the election `kind` on each partition's
    /// current leadership, written conditioned on its partition epoch (a
    /// partition whose znode moved is re-read and tried once more), the
    /// replicas told. Returns the partitions that got a leader; the others
    /// are in `failed` with why.
    pub(super) async fn elect_leaders(
        &self,
        parts: &[TopicPartition],
        kind: ElectionKind,
        batch: &mut RequestBatch,
        failed: &mut ElectionFailures,
    ) -> Vec<TopicPartition> {
        if parts.is_empty() {
            return Vec::new();
        }
        let default_unclean = self.settings.borrow().unclean_leader_election;
        let mut unclean_by_topic: BTreeMap<String, bool> = BTreeMap::new();
        let mut pending: Vec<TopicPartition> = parts.to_vec();
        let mut elected = Vec::new();
        for attempt in 0..2 {
            if pending.is_empty() {
                break;
            }
            if kind == ElectionKind::Offline {
                self.read_unclean_settings(&pending, default_unclean, &mut unclean_by_topic)
                    .await;
            }
            let Some(plans) = self.with_ctx(|ctx| {
                let plans = plan_elections(
                    ctx,
                    &pending,
                    kind,
                    &unclean_by_topic,
                    default_unclean,
                    failed,
                );
                self.count_unclean(ctx, &plans);
                plans
            }) else {
                return elected;
            };
            let outcomes = self.write_leaderships(&plans).await;
            let mut retry = Vec::new();
            for ((tp, new), outcome) in plans.into_iter().zip(outcomes) {
                match outcome {
                    Ok(version) => {
                        self.with_ctx(|ctx| {
                            let mut leader_isr = new;
                            leader_isr.partition_epoch = version;
                            ctx.leadership.insert(
                                tp.clone(),
                                Leadership {
                                    leader_isr,
                                    controller_epoch: ControllerEpoch(ctx.epoch),
                                },
                            );
                            // Controlled shutdown tells the shutting-down
                            // replica too (it becomes a follower).
                            let registered = ctx.live_or_shutting_down();
                            let live = ctx.live();
                            let recipients: Vec<BrokerId> = ctx
                                .replicas(&tp)
                                .iter()
                                .copied()
                                .filter(|r| match kind {
                                    ElectionKind::ControlledShutdown => registered.contains(r),
                                    _ => live.contains(r),
                                })
                                .collect();
                            batch.add_leader_and_isr(ctx, recipients, &tp, false);
                        });
                        elected.push(tp);
                    }
                    Err(WriteError::Store(StoreError::BadVersion(_))) if attempt == 0 => {
                        retry.push(tp)
                    }
                    Err(e) => {
                        tracing::warn!(partition = %tp, error = %e, "writing the elected leader");
                        let code = match e {
                            WriteError::NotController | WriteError::Moved => {
                                ErrorCode::NOT_CONTROLLER
                            }
                            WriteError::Store(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
                        };
                        failed.insert(tp, (code, e.to_string()));
                    }
                }
            }
            if !retry.is_empty() {
                self.reload_leaderships(&retry).await;
            }
            pending = retry;
        }
        elected
    }

    /// The `unclean.leader.election.enable` of each topic among `pending`
    /// whose ISR has no live member (only those can need it), read once.
    async fn read_unclean_settings(
        &self,
        pending: &[TopicPartition],
        default: bool,
        known: &mut BTreeMap<String, bool>,
    ) {
        let needs: BTreeSet<String> = self
            .with_ctx(|ctx| {
                pending
                    .iter()
                    .filter(|tp| {
                        ctx.leadership.get(*tp).is_some_and(|l| {
                            !l.leader_isr
                                .isr
                                .iter()
                                .any(|r| ctx.is_replica_online(*r, tp))
                        })
                    })
                    .map(|tp| tp.topic.to_string())
                    .filter(|t| !known.contains_key(t))
                    .collect()
            })
            .unwrap_or_default();
        for t in needs {
            let v = self.topic_unclean(&t, default).await;
            known.insert(t, v);
        }
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

    /// Re-read the state znodes of `parts` into the context (after a
    /// conditional write found them moved).
    pub(super) async fn reload_leaderships(&self, parts: &[TopicPartition]) {
        let store = self.store();
        for tp in parts {
            let path = paths::partition_state(&tp.topic, tp.partition);
            match store.get(&path).await {
                Ok((data, stat)) => match PartitionStateZNode::decode(&data) {
                    Ok(z) => {
                        self.with_ctx(|ctx| {
                            ctx.leadership
                                .insert(tp.clone(), leadership_of(&z, stat.version));
                        });
                    }
                    Err(e) => tracing::warn!(%path, error = %e.0, "malformed partition state"),
                },
                Err(e) => tracing::warn!(%path, error = %e, "re-reading partition state"),
            }
        }
    }

    /// The topic's `unclean.leader.election.enable` (its override, else
    /// the broker's), read from `/config/topics/<t>` as Kafka's controller
    /// does at election time.
    async fn topic_unclean(&self, topic: &str, default: bool) -> bool {
        match self.store().get(&paths::topic_config(topic)).await {
            Ok((data, _)) => ConfigZNode::decode(&data)
                .ok()
                .and_then(|z| z.config.get(UNCLEAN_KEY).map(|v| v == "true"))
                .unwrap_or(default),
            Err(_) => default,
        }
    }

    /// `triggerOnlinePartitionStateChange`: every New or Offline partition
    /// (topics being deleted left out) to Online with the offline election.
    pub(super) async fn trigger_online_partitions(&self, batch: &mut RequestBatch) {
        let parts = self
            .with_ctx(|ctx| {
                let mut v = ctx.partition_states.in_state(PartitionState::New);
                v.extend(ctx.partition_states.in_state(PartitionState::Offline));
                v.retain(|tp| !ctx.topics_to_delete.contains(&*tp.topic));
                v.sort();
                v
            })
            .unwrap_or_default();
        self.partitions_to(&parts, PartitionState::Online, ElectionKind::Offline, batch)
            .await;
    }
}

/// The new leadership of each of `pending` under `kind` (unclean per
/// topic from `unclean_by_topic`, else `default_unclean`); partitions
/// without one go to `failed` with why.
fn plan_elections(
    ctx: &ControllerContext,
    pending: &[TopicPartition],
    kind: ElectionKind,
    unclean_by_topic: &BTreeMap<String, bool>,
    default_unclean: bool,
    failed: &mut ElectionFailures,
) -> Vec<(TopicPartition, LeaderIsr)> {
    let mut plans = Vec::new();
    for tp in pending {
        // Kafka's `isReplicaOnline`: a replica in a failed log dir is out.
        let live = ctx.live_for(tp);
        let Some(current) = ctx.leadership.get(tp) else {
            tracing::warn!(partition = %tp, "no leadership to elect from");
            failed.insert(
                tp.clone(),
                (
                    ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    format!("Partition {tp} has no leadership to elect from"),
                ),
            );
            continue;
        };
        let strategy = match kind {
            ElectionKind::Offline => Strategy::Offline {
                allow_unclean: unclean_by_topic
                    .get(&*tp.topic)
                    .copied()
                    .unwrap_or(default_unclean),
            },
            ElectionKind::ControlledShutdown => Strategy::ControlledShutdown,
            ElectionKind::Preferred => Strategy::Preferred,
            ElectionKind::Unclean => Strategy::Offline {
                allow_unclean: true,
            },
            ElectionKind::Reassign => Strategy::Reassign,
        };
        match leader_election::elect(
            strategy,
            &current.leader_isr,
            ctx.replicas(tp),
            &live,
            &ctx.shutting_down,
        ) {
            Ok(new) => plans.push((tp.clone(), new)),
            Err(e) => {
                tracing::warn!(partition = %tp, reason = %e, "no leader elected");
                failed.insert(tp.clone(), (e.code(), e.to_string()));
            }
        }
    }
    plans
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
