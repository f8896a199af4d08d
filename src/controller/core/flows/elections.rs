//! `[pure]` Leader elections asked of the controller (Kafka 3.9
//! `KafkaController.processReplicaLeaderElection` / `onReplicaElection`),
//! as flows of the controller core: ElectLeaders from an admin client
//! (PREFERRED or UNCLEAN; the `/admin/preferred_replica_election` znode
//! asks the same), and the auto leader rebalance's check
//! (`checkAndTriggerAutoLeaderRebalance`, `leader.imbalance.per.broker.percentage`).
//! What to elect is decided by `controller::rebalance`; the elections are
//! the core's (`elect`); Online and Offline partitions only.

use std::collections::{BTreeMap, BTreeSet};

use super::super::{ControllerAction, ControllerCore, ElectionFailures, ElectionKind};
use super::Flow;
use crate::controller::context::ControllerContext;
use crate::controller::rebalance::{self, ElectionResult, ElectionType};
use crate::controller::state_machine::PartitionState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};

/// Per partition asked (all partitions when the request named none), its
/// outcome; NOT_CONTROLLER for every partition when this broker is not
/// the controller.
pub type ElectAnswer = Result<BTreeMap<TopicPartition, ElectionResult>, ErrorCode>;

/// Who asked for the elections.
#[derive(Debug)]
enum Asker {
    /// ElectLeaders: the partitions answered without an election.
    Request {
        kind: ElectionType,
        answered: BTreeMap<TopicPartition, ElectionResult>,
    },
    /// The auto leader rebalance, with how many it picked.
    Auto { candidates: usize },
}

/// Elections under way: waiting for the election, then for its send.
#[derive(Debug)]
pub(in crate::controller::core) struct ElectionsFlow {
    asker: Asker,
    failed: ElectionFailures,
    elected: Vec<TopicPartition>,
    sent: bool,
}

impl ControllerCore {
    /// ElectLeaders (`None`: every partition); ends with
    /// [`ControllerAction::AnswerElectLeaders`].
    pub(in crate::controller::core) fn on_elect_leaders(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::AnswerElectLeaders {
                token,
                answer: Err(ErrorCode::NOT_CONTROLLER),
            }];
        };
        let asked = partitions.unwrap_or_else(|| ctx.assignments.keys().cloned().collect());
        let (elect, answered) = rebalance::plan_election(ctx, &asked, kind);
        let election = match kind {
            ElectionType::Preferred => ElectionKind::Preferred,
            ElectionType::Unclean => ElectionKind::Unclean,
        };
        let asker = Asker::Request { kind, answered };
        self.run_elections(ctx, token, elect, election, asker, default_unclean)
    }

    /// The auto leader rebalance's check: preferred elections where a
    /// broker's share of not-led preferred partitions is above
    /// `percent`; ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_auto_rebalance(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        percent: u32,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let parts = ctx
            .as_deref()
            .map(|c| rebalance::imbalanced_partitions(c, percent))
            .unwrap_or_default();
        let Some(ctx) = ctx.filter(|_| !parts.is_empty()) else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let asker = Asker::Auto {
            candidates: parts.len(),
        };
        self.run_elections(
            ctx,
            token,
            parts,
            ElectionKind::Preferred,
            asker,
            default_unclean,
        )
    }

    /// `onReplicaElection`: `parts` (Online or Offline; others are refused
    /// as illegal changes) to Online with `kind`'s election.
    fn run_elections(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        parts: Vec<TopicPartition>,
        kind: ElectionKind,
        asker: Asker,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let mut failed = ElectionFailures::new();
        let mut legal = Vec::new();
        for tp in parts {
            let from = ctx.partition_states.get(&tp);
            if matches!(from, PartitionState::Online | PartitionState::Offline) {
                legal.push(tp);
            } else {
                tracing::warn!(partition = %tp, ?from, "illegal partition state change refused");
                let why = format!("Partition {tp} is in state {from:?}, not online or offline");
                failed.insert(tp, (ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE, why));
            }
        }
        self.flows.insert(
            token,
            Flow::Elections(ElectionsFlow {
                asker,
                failed,
                elected: Vec::new(),
                sent: false,
            }),
        );
        let sub = self.sub_for(token);
        self.on_elect(Some(ctx), sub, legal, kind, default_unclean)
    }

    /// The election ended (`verdict`), or its requests were sent.
    pub(in crate::controller::core) fn resume_elections(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        verdict: Option<&ControllerAction>,
    ) -> Vec<ControllerAction> {
        let Some(Flow::Elections(mut f)) = self.flows.remove(&token) else {
            return Vec::new();
        };
        if !f.sent {
            if let Some(ControllerAction::Elected {
                elected, failed, ..
            }) = verdict
            {
                if let Some(ctx) = ctx {
                    for tp in elected {
                        let _ = ctx.partition_states.transition(tp, PartitionState::Online);
                    }
                }
                f.elected = elected.clone();
                f.failed.extend(failed.clone());
            }
            f.sent = true;
            self.flows.insert(token, Flow::Elections(f));
            return vec![ControllerAction::SendBatch { token }];
        }
        match f.asker {
            Asker::Auto { candidates } => {
                tracing::info!(
                    candidates,
                    elected = f.elected.len(),
                    failed = f.failed.len(),
                    "auto leader rebalance"
                );
                vec![ControllerAction::FlowDone { token }]
            }
            Asker::Request { kind, answered } => {
                let answer = elect_answer(ctx.as_deref(), kind, answered, f.elected, f.failed);
                vec![ControllerAction::AnswerElectLeaders {
                    token,
                    answer: Ok(answer),
                }]
            }
        }
    }
}

/// ElectLeaders' answer: the new leader of each partition elected, and
/// why the others were not.
fn elect_answer(
    ctx: Option<&ControllerContext>,
    kind: ElectionType,
    mut answered: BTreeMap<TopicPartition, ElectionResult>,
    elected: Vec<TopicPartition>,
    failed: ElectionFailures,
) -> BTreeMap<TopicPartition, ElectionResult> {
    tracing::info!(
        ?kind,
        asked = elected.len() + failed.len() + answered.len(),
        elected = elected.len(),
        failed = failed.len(),
        "ElectLeaders"
    );
    if let Some(ctx) = ctx {
        for tp in elected {
            let leader = ctx
                .leadership
                .get(&tp)
                .map_or(BrokerId::NONE, |l| l.leader_isr.leader);
            answered.insert(tp, Ok(leader));
        }
    }
    for (tp, (code, message)) in failed {
        // Kafka: a state change that found no leader is
        // PREFERRED_LEADER_NOT_AVAILABLE for a preferred election and
        // ELIGIBLE_LEADERS_NOT_AVAILABLE for an unclean one.
        let code = match (kind, code) {
            (ElectionType::Preferred, ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE) => {
                ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
            }
            (_, c) => c,
        };
        answered.insert(tp, Err((code, message)));
    }
    answered
}
