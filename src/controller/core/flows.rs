//! `[pure]` The controller's duties that are sequences of state changes,
//! each step sent to the brokers before the next begins
//! ([`ControllerAction::SendBatch`]), as Kafka's controller sends one
//! batch per step of an event. A step is a partition or replica state
//! change of the core run as a sub-job; when it ends, the flow goes on.
//! The core stops at each send until the driver says it was done
//! ([`ControllerEvent::Performed`]): a batch is built from the context as
//! that step left it, as Kafka's is.
//!
//! [`ControllerEvent::Performed`]: super::ControllerEvent::Performed
//!
//! - Controlled shutdown (Kafka 3.9 `KafkaController.doControlledShutdown`):
//!   the broker is marked shutting down; every replicated partition it
//!   leads gets a leader elected with the controlled-shutdown strategy
//!   (the broker leaves the ISR); it stops following the others
//!   (StopReplica without delete, then out of their ISRs). The answer is
//!   the replicated partitions it still leads (none when every leader
//!   could move); the broker retries until that is empty.
//! - Brokers joining and leaving (`brokers`).
//! - A new controller's start and new partitions (`startup`).
//! - ElectLeaders and the auto leader rebalance (`elections`).
//! - Topic deletion (`deletion`) and partition reassignment (`reassign`),
//!   written as queues of steps (`steps`).
//! - What the watches and notifications report (`watches`): topics and
//!   partitions added, ISR change notifications, failed log dirs.

use super::{ControllerAction, ControllerCore};
use crate::controller::context::ControllerContext;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};

use super::ElectionKind;

mod brokers;
mod deletion;
mod elections;
mod reassign;
mod startup;
mod steps;
mod watches;

pub use elections::ElectAnswer;
pub use reassign::{ReassignAnswer, ReassignAsk, ResumeWhich};
pub use steps::ZkRemoval;
#[cfg(test)]
mod tests;

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

/// The partitions the broker still leads, or why it was refused.
pub type ShutdownAnswer = Result<Vec<TopicPartition>, ShutdownRefusal>;

/// Who waits for a sub-job: a partition state change (for its election)
/// or a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parent {
    Partitions(u64),
    Flow(u64),
}

/// A flow under way, at the step it waits on.
#[derive(Debug)]
pub(super) enum Flow {
    Shutdown {
        broker: BrokerId,
        followed: Vec<TopicPartition>,
        step: ShutdownStep,
    },
    Brokers(brokers::BrokersFlow),
    /// ElectLeaders or an auto rebalance check.
    Elections(elections::ElectionsFlow),
    /// Topic deletion and reassignment, as queues of steps.
    Steps(steps::Steps),
    /// A failover's start or a partition creation.
    Start {
        default_unclean: bool,
        parts: Vec<TopicPartition>,
        at: startup::StartAt,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ShutdownStep {
    /// Its partitions' leaders are being elected elsewhere.
    Electing,
    /// The elections sent: next it stops following the others.
    Stop,
    /// The StopReplicas sent: next its follower replicas go offline.
    Offline,
    /// Its follower replicas going offline.
    Stopping,
    /// That sent: the answer.
    Answering,
}

impl ControllerCore {
    /// `doControlledShutdown`'s checks and first step.
    pub(super) fn on_controlled_shutdown(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Vec<ControllerAction> {
        let refuse = |r| {
            vec![ControllerAction::AnswerControlledShutdown {
                token,
                answer: Err(r),
            }]
        };
        let Some(ctx) = ctx else {
            return refuse(ShutdownRefusal::NotController);
        };
        match ctx.broker(broker).map(|b| b.epoch) {
            None => return refuse(ShutdownRefusal::BrokerNotAvailable),
            // -1: a request that names no epoch (v0/v1).
            Some(e) if broker_epoch != -1 && broker_epoch < e => {
                return refuse(ShutdownRefusal::StaleBrokerEpoch)
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
        tracing::info!(%broker, leaders = led.len(), followers = followed.len(), "controlled shutdown");
        self.flows.insert(
            token,
            Flow::Shutdown {
                broker,
                followed,
                step: ShutdownStep::Electing,
            },
        );
        let sub = self.sub_for(token);
        self.on_partitions_to(
            Some(ctx),
            sub,
            led,
            PartitionState::Online,
            ElectionKind::ControlledShutdown,
            false,
        )
    }

    /// A sub-job of flow `token` ended with `verdict` (or the driver
    /// performed a send or a duty for it, with none): its next step.
    pub(super) fn resume_flow(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        verdict: Option<&ControllerAction>,
    ) -> Vec<ControllerAction> {
        if let Some(Flow::Steps(_)) = self.flows.get(&token) {
            return self.resume_steps(ctx, token, verdict);
        }
        if let Some(Flow::Elections(_)) = self.flows.get(&token) {
            return self.resume_elections(ctx, token, verdict);
        }
        if let Some(Flow::Start { .. }) = self.flows.get(&token) {
            return self.resume_start(ctx, token);
        }
        if let Some(Flow::Brokers(_)) = self.flows.get(&token) {
            let online = match verdict {
                Some(ControllerAction::PartitionsDone { online, .. }) => online.as_slice(),
                _ => &[],
            };
            return self.resume_brokers(ctx, token, online);
        }
        let Some(Flow::Shutdown {
            broker,
            followed,
            step,
        }) = self.flows.remove(&token)
        else {
            return Vec::new();
        };
        let next = |core: &mut Self, step, followed| {
            core.flows.insert(
                token,
                Flow::Shutdown {
                    broker,
                    followed,
                    step,
                },
            );
        };
        match step {
            ShutdownStep::Electing => {
                next(self, ShutdownStep::Stop, followed);
                vec![ControllerAction::SendBatch { token }]
            }
            ShutdownStep::Stop => {
                let mut actions: Vec<ControllerAction> = followed
                    .iter()
                    .map(|tp| ControllerAction::StopReplica {
                        replica: broker,
                        partition: tp.clone(),
                        delete: false,
                    })
                    .collect();
                actions.push(ControllerAction::SendBatch { token });
                next(self, ShutdownStep::Offline, followed);
                actions
            }
            ShutdownStep::Offline => {
                let replicas = followed.iter().map(|tp| (tp.clone(), broker)).collect();
                next(self, ShutdownStep::Stopping, Vec::new());
                let sub = self.sub_for(token);
                self.on_replicas_to(ctx, sub, replicas, ReplicaState::Offline)
            }
            ShutdownStep::Stopping => {
                next(self, ShutdownStep::Answering, Vec::new());
                vec![ControllerAction::SendBatch { token }]
            }
            ShutdownStep::Answering => {
                let still_led = ctx
                    .map(|ctx| {
                        ctx.partitions_led_by(broker)
                            .into_iter()
                            .filter(|tp| ctx.replicas(tp).len() > 1)
                            .collect()
                    })
                    .unwrap_or_default();
                vec![ControllerAction::AnswerControlledShutdown {
                    token,
                    answer: Ok(still_led),
                }]
            }
        }
    }

    /// A token for a sub-job whose end resumes flow `token`.
    pub(super) fn sub_for(&mut self, token: u64) -> u64 {
        let sub = self.token();
        self.parents.insert(sub, Parent::Flow(token));
        sub
    }

    /// A sub-job ended with `verdict`: handed to whoever waits for it, or
    /// returned to the driver.
    pub(super) fn sub_job_done(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
        verdict: ControllerAction,
    ) -> Vec<ControllerAction> {
        match self.parents.get(&job).copied() {
            Some(Parent::Flow(flow)) => {
                self.parents.remove(&job);
                self.resume_flow(ctx, flow, Some(&verdict))
            }
            _ => vec![verdict],
        }
    }
}
