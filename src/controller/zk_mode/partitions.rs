//! `[drv]` The controller's duties over partitions and replicas (Kafka 3.9
//! `KafkaController` with its `PartitionStateMachine`,
//! `ReplicaStateMachine` and `TopicDeletionManager`): new topics and
//! partitions brought online, brokers joining and failing, leaders elected,
//! replicas stopped and deleted. Every decision is made on the context
//! (`controller::context`) with the pure state machines and election
//! strategies; the state znodes are written with
//! [`ZkBroker::write_as_controller`]; the requests for brokers are gathered
//! in a [`RequestBatch`] and sent when the step ends.

use super::*;
use crate::controller::context::Leadership;
use crate::controller::leader_election::{self, LeaderIsr, LeaderRecoveryState, Strategy};
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::protocol::ErrorCode;
use crate::types::{ControllerEpoch, LeaderEpoch, PartitionEpoch, TopicPartition};
use crate::zk::paths::{ConfigZNode, PartitionStateZNode, TopicZNode};

/// Which election an Offline/Online → Online change runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Election {
    /// `OfflinePartitionLeaderElectionStrategy`; unclean per topic config.
    Offline,
    ControlledShutdown,
}

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
                            tracing::warn!(%broker, topic = %t, partition = p, error = %e, "controller request: partition error");
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
        election: Election,
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
        online.extend(self.elect_leaders(&to_elect, election, batch).await);
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
            let live = ctx.live();
            let mut plans = Vec::new();
            for tp in parts {
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
        let parents: Vec<Local<'_, ()>> = plans
            .iter()
            .map(|(tp, _, _)| -> Local<'_, ()> {
                let store = store.clone();
                let path = paths::topic_partition(&tp.topic, tp.partition);
                Box::pin(async move { ensure(&*store, &path).await })
            })
            .collect();
        join_all(parents).await;
        let writes: Vec<Local<'_, Result<Vec<OpResult>, WriteError>>> = plans
            .iter()
            .map(|(tp, znode, _)| -> Local<'_, _> {
                Box::pin(self.write_as_controller(vec![Op::Create {
                    path: paths::partition_state(&tp.topic, tp.partition),
                    data: znode.encode(),
                    mode: crate::zk::store::CreateMode::Persistent,
                }]))
            })
            .collect();
        let results = join_all(writes).await;
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

    /// `electLeaderForPartitions`: the election `kind` on each partition's
    /// current leadership, written conditioned on its partition epoch (a
    /// partition whose znode moved is re-read and tried once more), the
    /// replicas told. Returns the partitions that got a leader.
    async fn elect_leaders(
        &self,
        parts: &[TopicPartition],
        kind: Election,
        batch: &mut RequestBatch,
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
            if kind == Election::Offline {
                self.read_unclean_settings(&pending, default_unclean, &mut unclean_by_topic)
                    .await;
            }
            let Some(plans) = self.with_ctx(|ctx| {
                let live = ctx.live();
                let mut plans = Vec::new();
                for tp in &pending {
                    let Some(current) = ctx.leadership.get(tp) else {
                        tracing::warn!(partition = %tp, "no leadership to elect from");
                        continue;
                    };
                    let strategy = match kind {
                        Election::Offline => Strategy::Offline {
                            allow_unclean: unclean_by_topic
                                .get(&*tp.topic)
                                .copied()
                                .unwrap_or(default_unclean),
                        },
                        Election::ControlledShutdown => Strategy::ControlledShutdown,
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
                            tracing::warn!(partition = %tp, reason = %e, "no leader elected")
                        }
                    }
                }
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
                                    Election::ControlledShutdown => registered.contains(r),
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
                        tracing::warn!(partition = %tp, error = %e, "writing the elected leader")
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
                let live = ctx.live();
                pending
                    .iter()
                    .filter(|tp| {
                        ctx.leadership
                            .get(*tp)
                            .is_some_and(|l| !l.leader_isr.isr.iter().any(|r| live.contains(r)))
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
    async fn write_leaderships(
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
    async fn reload_leaderships(&self, parts: &[TopicPartition]) {
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
        self.partitions_to(&parts, PartitionState::Online, Election::Offline, batch)
            .await;
    }

    // ----- the replica state machine -----

    /// `ReplicaStateMachine.handleStateChanges` for `replicas` → `target`.
    pub(super) async fn replicas_to(
        &self,
        replicas: &[(TopicPartition, BrokerId)],
        target: ReplicaState,
        batch: &mut RequestBatch,
    ) {
        let valid: Vec<(TopicPartition, BrokerId)> = self
            .with_ctx(|ctx| {
                replicas
                    .iter()
                    .filter(|(tp, r)| {
                        let from = ctx.replica_states.get(tp, *r);
                        let ok = target.can_follow(from);
                        if !ok {
                            tracing::warn!(partition = %tp, replica = %r, ?from, to = ?target, "illegal replica state change refused");
                        }
                        ok
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        match target {
            ReplicaState::New => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        if let Some(l) = ctx.leadership.get(tp) {
                            if l.leader_isr.leader == *r {
                                tracing::warn!(partition = %tp, replica = %r, "the leader cannot become a new replica");
                                continue;
                            }
                            batch.add_leader_and_isr(ctx, [*r], tp, true);
                        }
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
            ReplicaState::Online => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        let from = ctx.replica_states.get(tp, *r);
                        if from == ReplicaState::New {
                            let replicas = ctx.assignments.entry(tp.clone()).or_default();
                            if !replicas.contains(r) {
                                replicas.push(*r);
                            }
                        } else if ctx.leadership.contains_key(tp) {
                            batch.add_leader_and_isr(ctx, [*r], tp, false);
                        }
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
            ReplicaState::Offline => self.replicas_offline(&valid, batch).await,
            ReplicaState::DeletionStarted => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
                for (tp, r) in &valid {
                    batch.add_stop_replica([*r], tp, true);
                }
            }
            ReplicaState::NonExistent => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        if let Some(replicas) = ctx.assignments.get_mut(tp) {
                            replicas.retain(|x| x != r);
                        }
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
            ReplicaState::DeletionSuccessful | ReplicaState::DeletionIneligible => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
        }
    }

    /// OfflineReplica: each replica stops (StopReplica without delete)
    /// and leaves the ISRs it is in; the remaining replicas are told.
    async fn replicas_offline(
        &self,
        valid: &[(TopicPartition, BrokerId)],
        batch: &mut RequestBatch,
    ) {
        let target = ReplicaState::Offline;
        for (tp, r) in valid {
            batch.add_stop_replica([*r], tp, false);
        }
        // Grouped by replica: each is taken out of the ISRs it is in.
        let mut by_replica: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
        for (tp, r) in valid {
            by_replica.entry(*r).or_default().push(tp.clone());
        }
        for (r, parts) in by_replica {
            let (with, without): (Vec<_>, Vec<_>) = self
                .with_ctx(|ctx| {
                    parts
                        .iter()
                        .cloned()
                        .partition::<Vec<_>, _>(|tp| ctx.leadership.contains_key(tp))
                })
                .unwrap_or_default();
            let updated = self.remove_from_isr(r, &with).await;
            self.with_ctx(|ctx| {
                for tp in &updated {
                    if !ctx.topics_to_delete.contains(&*tp.topic) {
                        let recipients: Vec<BrokerId> = ctx
                            .replicas(tp)
                            .iter()
                            .copied()
                            .filter(|x| *x != r)
                            .collect();
                        batch.add_leader_and_isr(ctx, recipients, tp, false);
                    }
                    let _ = ctx.replica_states.transition(tp, r, target);
                }
                for tp in &without {
                    batch.add_update_metadata(ctx.live_or_shutting_down(), [tp.clone()]);
                    let _ = ctx.replica_states.transition(tp, r, target);
                }
            });
        }
    }

    /// `removeReplicasFromIsr`: `replica` out of each partition's ISR (the
    /// last ISR member stays, Kafka never writes an empty ISR); a removed
    /// leader leaves the partition leaderless (-1); the leader epoch moves.
    /// Returns the partitions whose leadership is now current in the
    /// context (changed or already without the replica).
    async fn remove_from_isr(
        &self,
        replica: BrokerId,
        parts: &[TopicPartition],
    ) -> Vec<TopicPartition> {
        let Some((unchanged, plans)) = self.with_ctx(|ctx| {
            let mut unchanged = Vec::new();
            let mut plans = Vec::new();
            for tp in parts {
                let Some(l) = ctx.leadership.get(tp) else {
                    continue;
                };
                let cur = &l.leader_isr;
                if !cur.isr.contains(&replica) && cur.leader != replica {
                    unchanged.push(tp.clone());
                    continue;
                }
                let isr = if cur.isr.len() == 1 {
                    cur.isr.clone()
                } else {
                    cur.isr.iter().copied().filter(|x| *x != replica).collect()
                };
                let new = LeaderIsr {
                    leader: if cur.leader == replica {
                        BrokerId::NONE
                    } else {
                        cur.leader
                    },
                    leader_epoch: LeaderEpoch(cur.leader_epoch.0 + 1),
                    isr,
                    leader_recovery_state: cur.leader_recovery_state,
                    partition_epoch: cur.partition_epoch,
                };
                plans.push((tp.clone(), new));
            }
            (unchanged, plans)
        }) else {
            return Vec::new();
        };
        let outcomes = self.write_leaderships(&plans).await;
        let mut done = unchanged;
        for ((tp, mut new), outcome) in plans.into_iter().zip(outcomes) {
            match outcome {
                Ok(version) => {
                    new.partition_epoch = version;
                    self.with_ctx(|ctx| {
                        ctx.leadership.insert(
                            tp.clone(),
                            Leadership {
                                leader_isr: new,
                                controller_epoch: ControllerEpoch(ctx.epoch),
                            },
                        )
                    });
                    done.push(tp);
                }
                Err(e) => {
                    tracing::warn!(partition = %tp, %replica, error = %e, "removing a replica from the ISR")
                }
            }
        }
        done
    }

    // ----- the controller's events -----

    /// `onControllerFailover` once the context is loaded: both state
    /// machines initialised from it, every broker told everything
    /// (UpdateMetadata, then LeaderAndIsr for each live replica), New and
    /// Offline partitions elected, deletions resumed.
    pub(super) async fn start_state_machines(&self) {
        self.with_ctx(|ctx| {
            let live = ctx.live();
            let registered = ctx.live_or_shutting_down();
            let deleting = ctx.topics_to_delete.clone();
            let parts: Vec<TopicPartition> = ctx.assignments.keys().cloned().collect();
            for tp in &parts {
                let state = match ctx.leadership.get(tp) {
                    Some(l) if live.contains(&l.leader_isr.leader) => PartitionState::Online,
                    Some(_) => PartitionState::Offline,
                    None => PartitionState::New,
                };
                // From NonExistent only New is legal: go through it.
                let _ = ctx.partition_states.transition(tp, PartitionState::New);
                if state != PartitionState::New {
                    let _ = ctx.partition_states.transition(tp, state);
                }
                for r in ctx.replicas(tp).to_vec() {
                    let _ = ctx.replica_states.transition(tp, r, ReplicaState::New);
                    let to = if registered.contains(&r) {
                        ReplicaState::Online
                    } else if deleting.contains(&*tp.topic) {
                        ReplicaState::DeletionIneligible
                    } else {
                        ReplicaState::Offline
                    };
                    if to != ReplicaState::DeletionIneligible {
                        let _ = ctx.replica_states.transition(tp, r, to);
                    } else {
                        let _ = ctx.replica_states.transition(tp, r, ReplicaState::Offline);
                        let _ = ctx.replica_states.transition(tp, r, to);
                    }
                }
            }
            let ineligible: BTreeSet<String> = deleting
                .iter()
                .filter(|t| {
                    ctx.partitions_of(t)
                        .iter()
                        .any(|tp| ctx.replicas(tp).iter().any(|r| !registered.contains(r)))
                })
                .cloned()
                .collect();
            ctx.ineligible_for_deletion = ineligible;
        });
        let mut batch = RequestBatch::new();
        self.with_ctx(|ctx| batch.add_update_metadata_all(ctx.live_or_shutting_down()));
        self.send_batch(batch);
        let online = self
            .with_ctx(|ctx| {
                let registered = ctx.live_or_shutting_down();
                ctx.assignments
                    .iter()
                    .flat_map(|(tp, rs)| rs.iter().map(move |r| (tp.clone(), *r)))
                    .filter(|(_, r)| registered.contains(r))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.replicas_to(&online, ReplicaState::Online, &mut batch)
            .await;
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        self.trigger_online_partitions(&mut batch).await;
        self.send_batch(batch);
        self.resume_deletions().await;
    }

    /// `onNewPartitionCreation`.
    pub(super) async fn on_new_partitions(&self, parts: Vec<TopicPartition>) {
        if parts.is_empty() {
            return;
        }
        let replicas = self
            .with_ctx(|ctx| ctx.replicas_of(&parts))
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.partitions_to(&parts, PartitionState::New, Election::Offline, &mut batch)
            .await;
        self.replicas_to(&replicas, ReplicaState::New, &mut batch)
            .await;
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        self.partitions_to(
            &parts,
            PartitionState::Online,
            Election::Offline,
            &mut batch,
        )
        .await;
        self.replicas_to(&replicas, ReplicaState::Online, &mut batch)
            .await;
        self.send_batch(batch);
    }

    /// `onBrokerStartup`: the others learn of the new brokers, the new ones
    /// learn everything and get their replicas, leaderless partitions are
    /// elected, deletions waiting for them resume.
    pub(super) async fn on_broker_startup(&self, new: &BTreeSet<BrokerId>) {
        let mut batch = RequestBatch::new();
        self.with_ctx(|ctx| {
            let existing: Vec<BrokerId> = ctx
                .live_or_shutting_down()
                .into_iter()
                .filter(|b| !new.contains(b))
                .collect();
            batch.add_update_metadata_all(existing);
        });
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        batch.add_update_metadata_all(new.iter().copied());
        self.send_batch(batch);
        let on_new = self
            .with_ctx(|ctx| ctx.replicas_on(new))
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.replicas_to(&on_new, ReplicaState::Online, &mut batch)
            .await;
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        self.trigger_online_partitions(&mut batch).await;
        self.send_batch(batch);
        let resumed: BTreeSet<String> = self
            .with_ctx(|ctx| {
                on_new
                    .iter()
                    .map(|(tp, _)| tp.topic.to_string())
                    .filter(|t| ctx.topics_to_delete.contains(t))
                    .collect()
            })
            .unwrap_or_default();
        if !resumed.is_empty() {
            self.with_ctx(|ctx| {
                for t in &resumed {
                    ctx.ineligible_for_deletion.remove(t);
                }
            });
            self.resume_deletions().await;
        }
    }

    /// `onBrokerFailure` → `onReplicasBecomeOffline`.
    pub(super) async fn on_broker_failure(&self, dead: &BTreeSet<BrokerId>) {
        let Some((for_deletion, not_for_deletion, offline_leaders)) = self.with_ctx(|ctx| {
            for b in dead {
                ctx.shutting_down.remove(b);
            }
            let replicas = ctx.replicas_on(dead);
            let (del, keep): (Vec<_>, Vec<_>) = replicas
                .into_iter()
                .partition(|(tp, _)| ctx.topics_to_delete.contains(&*tp.topic));
            (del, keep, ctx.partitions_with_offline_leader())
        }) else {
            return;
        };
        let mut batch = RequestBatch::new();
        self.partitions_to(
            &offline_leaders,
            PartitionState::Offline,
            Election::Offline,
            &mut batch,
        )
        .await;
        let before = batch.is_empty();
        self.trigger_online_partitions(&mut batch).await;
        let elected_any = !before || !batch.is_empty();
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        self.replicas_to(&not_for_deletion, ReplicaState::Offline, &mut batch)
            .await;
        self.send_batch(batch);
        if !for_deletion.is_empty() {
            self.fail_replica_deletion(&for_deletion).await;
        }
        if not_for_deletion.is_empty() && !elected_any {
            let mut batch = RequestBatch::new();
            self.with_ctx(|ctx| batch.add_update_metadata_all(ctx.live_or_shutting_down()));
            self.send_batch(batch);
        }
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

    // ----- topic deletion (TopicDeletionManager) -----

    /// `/admin/delete_topics` children re-read: markers of unknown topics
    /// are removed, the others queued (or, with `delete.topic.enable`
    /// false, their markers removed).
    pub(super) async fn on_delete_topics_listed(&self, marked: Vec<String>) {
        let enabled = self.settings.borrow().delete_topic_enable;
        let Some((unknown, queued)) = self.with_ctx(|ctx| {
            let (known, unknown): (Vec<String>, Vec<String>) = marked
                .into_iter()
                .partition(|t| ctx.topic_ids.contains_key(t));
            (unknown, known)
        }) else {
            return;
        };
        let mut drop: Vec<String> = unknown;
        if enabled {
            self.with_ctx(|ctx| ctx.topics_to_delete.extend(queued.iter().cloned()));
        } else {
            tracing::info!(topics = ?queued, "delete.topic.enable is false: deletion requests removed");
            drop.extend(queued);
        }
        if !drop.is_empty() {
            let ops = drop
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
        if enabled {
            self.resume_deletions().await;
        }
    }

    /// `resumeDeletions`.
    pub(super) async fn resume_deletions(&self) {
        let Some((complete, retry, eligible)) = self.with_ctx(|ctx| {
            let mut complete = Vec::new();
            let mut retry = Vec::new();
            let mut eligible = Vec::new();
            for t in ctx.topics_to_delete.clone() {
                let rs = &ctx.replica_states;
                if rs.all_in_state(&t, ReplicaState::DeletionSuccessful) {
                    complete.push(t.clone());
                    continue;
                }
                let in_progress = rs.any_in_state(&t, ReplicaState::DeletionStarted);
                if !in_progress && rs.any_in_state(&t, ReplicaState::DeletionIneligible) {
                    retry.push(t.clone());
                }
                if !in_progress && !ctx.ineligible_for_deletion.contains(&t) {
                    eligible.push(t);
                }
            }
            (complete, retry, eligible)
        }) else {
            return;
        };
        for t in complete {
            self.complete_delete_topic(&t).await;
        }
        if !retry.is_empty() {
            let replicas: Vec<(TopicPartition, BrokerId)> = self
                .with_ctx(|ctx| {
                    retry
                        .iter()
                        .flat_map(|t| {
                            ctx.replica_states
                                .replicas_in_state(t, ReplicaState::DeletionIneligible)
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut batch = RequestBatch::new();
            self.replicas_to(&replicas, ReplicaState::Offline, &mut batch)
                .await;
            self.send_batch(batch);
        }
        if !eligible.is_empty() {
            self.on_topic_deletion(&eligible).await;
        }
    }

    /// `onTopicDeletion` + `startReplicaDeletion`: partitions Offline then
    /// NonExistent, every broker told the topic is going (leader -2), live
    /// replicas stopped then deleted; a dead replica makes the topic wait.
    async fn on_topic_deletion(&self, topics: &[String]) {
        let unseen: Vec<TopicPartition> = self
            .with_ctx(|ctx| {
                topics
                    .iter()
                    .flat_map(|t| ctx.partitions_of(t))
                    .filter(|tp| ctx.partition_states.get(tp) != PartitionState::NonExistent)
                    .collect()
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.partitions_to(
            &unseen,
            PartitionState::Offline,
            Election::Offline,
            &mut batch,
        )
        .await;
        self.partitions_to(
            &unseen,
            PartitionState::NonExistent,
            Election::Offline,
            &mut batch,
        )
        .await;
        self.with_ctx(|ctx| {
            let parts: Vec<TopicPartition> =
                topics.iter().flat_map(|t| ctx.partitions_of(t)).collect();
            batch.add_update_metadata(ctx.live_or_shutting_down(), parts);
        });
        self.send_batch(batch);
        let Some((dead, retry)) = self.with_ctx(|ctx| {
            let live = ctx.live_or_shutting_down();
            let mut dead = Vec::new();
            let mut retry = Vec::new();
            for t in topics {
                for tp in ctx.partitions_of(t) {
                    for &r in ctx.replicas(&tp) {
                        if !live.contains(&r) {
                            dead.push((tp.clone(), r));
                        } else if ctx.replica_states.get(&tp, r) != ReplicaState::DeletionSuccessful
                        {
                            retry.push((tp.clone(), r));
                        }
                    }
                }
            }
            (dead, retry)
        }) else {
            return;
        };
        // One batch per step, as Kafka's state machines send: the stop
        // (delete=false) reaches a broker before the delete.
        let mut batch = RequestBatch::new();
        self.replicas_to(&dead, ReplicaState::DeletionIneligible, &mut batch)
            .await;
        self.replicas_to(&retry, ReplicaState::Offline, &mut batch)
            .await;
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        self.replicas_to(&retry, ReplicaState::DeletionStarted, &mut batch)
            .await;
        self.send_batch(batch);
        if !dead.is_empty() {
            self.with_ctx(|ctx| {
                for (tp, _) in &dead {
                    ctx.ineligible_for_deletion.insert(tp.topic.to_string());
                }
            });
            tracing::info!(topics = ?topics, "deletion waits for replicas on dead brokers");
        }
    }

    /// A broker's answer to a deleting StopReplica
    /// (`TopicDeletionStopReplicaResponseReceived`).
    pub(super) async fn on_deletion_answer(
        &self,
        broker: BrokerId,
        errors: Vec<(TopicPartition, ErrorCode)>,
    ) {
        let (ok, failed): (Vec<_>, Vec<_>) =
            errors.into_iter().partition(|(_, e)| *e == ErrorCode::NONE);
        let ok: Vec<(TopicPartition, BrokerId)> =
            ok.into_iter().map(|(tp, _)| (tp, broker)).collect();
        let failed: Vec<(TopicPartition, BrokerId)> =
            failed.into_iter().map(|(tp, _)| (tp, broker)).collect();
        let mut batch = RequestBatch::new();
        if !failed.is_empty() {
            self.replicas_to(&failed, ReplicaState::DeletionIneligible, &mut batch)
                .await;
            self.with_ctx(|ctx| {
                for (tp, _) in &failed {
                    ctx.ineligible_for_deletion.insert(tp.topic.to_string());
                }
            });
        }
        self.replicas_to(&ok, ReplicaState::DeletionSuccessful, &mut batch)
            .await;
        self.send_batch(batch);
        self.resume_deletions().await;
    }

    /// `failReplicaDeletion`: replicas that died mid-deletion.
    async fn fail_replica_deletion(&self, replicas: &[(TopicPartition, BrokerId)]) {
        let started: Vec<(TopicPartition, BrokerId)> = self
            .with_ctx(|ctx| {
                replicas
                    .iter()
                    .filter(|(tp, r)| {
                        ctx.replica_states.get(tp, *r) == ReplicaState::DeletionStarted
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.replicas_to(&started, ReplicaState::DeletionIneligible, &mut batch)
            .await;
        self.send_batch(batch);
        self.with_ctx(|ctx| {
            for (tp, _) in replicas {
                ctx.ineligible_for_deletion.insert(tp.topic.to_string());
            }
        });
        self.resume_deletions().await;
    }

    /// `completeDeleteTopic`: replicas NonExistent, the topic's znodes, its
    /// config and its marker removed (conditioned on the controller epoch),
    /// the topic forgotten.
    async fn complete_delete_topic(&self, topic: &str) {
        let replicas = self
            .with_ctx(|ctx| {
                ctx.replica_states
                    .replicas_in_state(topic, ReplicaState::DeletionSuccessful)
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.replicas_to(&replicas, ReplicaState::NonExistent, &mut batch)
            .await;
        let store = self.store();
        let mut ops = match topic_admin::subtree_delete_ops(&*store, &paths::topic(topic)).await {
            Ok(ops) => ops,
            Err(e) => {
                tracing::warn!(%topic, error = %e, "listing the topic's znodes for deletion");
                return;
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
            Ok(_) => {
                tracing::info!(%topic, "topic deleted");
                self.with_ctx(|ctx| ctx.remove_topic(topic));
            }
            Err(e) => tracing::warn!(%topic, error = %e, "removing the deleted topic's znodes"),
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

/// Why a ControlledShutdown was refused (its Kafka error code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownRefusal {
    /// NOT_CONTROLLER (41).
    NotController,
    /// STALE_BROKER_EPOCH (77): the request is from an older registration.
    StaleBrokerEpoch,
    /// BROKER_NOT_AVAILABLE (8): the broker is not registered.
    BrokerNotAvailable,
}

impl ShutdownRefusal {
    pub fn code(self) -> ErrorCode {
        match self {
            Self::NotController => ErrorCode::NOT_CONTROLLER,
            Self::StaleBrokerEpoch => ErrorCode::STALE_BROKER_EPOCH,
            Self::BrokerNotAvailable => ErrorCode::BROKER_NOT_AVAILABLE,
        }
    }
}

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// `doControlledShutdown`: the broker is marked shutting down; every
    /// replicated partition it leads gets a leader elected with the
    /// controlled-shutdown strategy (the broker leaves the ISR), it stops
    /// following the others (StopReplica without delete, then out of their
    /// ISRs). The answer is the replicated partitions it still leads (none
    /// when every leader could move); it retries until that is empty.
    pub(super) async fn controlled_shutdown(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Result<Vec<TopicPartition>, ShutdownRefusal> {
        if !self.election.borrow().is_controller() {
            return Err(ShutdownRefusal::NotController);
        }
        let Some(plan) = self.with_ctx(|ctx| {
            let cached = ctx.broker(broker).map(|b| b.epoch);
            match cached {
                None => return Err(ShutdownRefusal::BrokerNotAvailable),
                // -1: a request that names no epoch (v0/v1).
                Some(e) if broker_epoch != -1 && broker_epoch < e => {
                    return Err(ShutdownRefusal::StaleBrokerEpoch)
                }
                Some(_) => {}
            }
            ctx.shutting_down.insert(broker);
            let mut led = Vec::new();
            let mut followed = Vec::new();
            for (tp, replicas) in &ctx.assignments {
                if !replicas.contains(&broker)
                    || replicas.len() < 2
                    || ctx.topics_to_delete.contains(&*tp.topic)
                {
                    continue;
                }
                match ctx.leadership.get(tp) {
                    Some(l) if l.leader_isr.leader == broker => led.push(tp.clone()),
                    Some(_) => followed.push(tp.clone()),
                    None => {}
                }
            }
            Ok((led, followed))
        }) else {
            return Err(ShutdownRefusal::NotController);
        };
        let (led, followed) = plan?;
        tracing::info!(%broker, leaders = led.len(), followers = followed.len(), "controlled shutdown");
        let mut batch = RequestBatch::new();
        self.partitions_to(
            &led,
            PartitionState::Online,
            Election::ControlledShutdown,
            &mut batch,
        )
        .await;
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        for tp in &followed {
            batch.add_stop_replica([broker], tp, false);
        }
        self.send_batch(batch);
        let replicas: Vec<(TopicPartition, BrokerId)> =
            followed.into_iter().map(|tp| (tp, broker)).collect();
        let mut batch = RequestBatch::new();
        self.replicas_to(&replicas, ReplicaState::Offline, &mut batch)
            .await;
        self.send_batch(batch);
        Ok(self
            .with_ctx(|ctx| {
                ctx.partitions_led_by(broker)
                    .into_iter()
                    .filter(|tp| ctx.replicas(tp).len() > 1)
                    .collect()
            })
            .unwrap_or_default())
    }
}
