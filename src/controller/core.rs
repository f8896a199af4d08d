//! `[pure]` The ZooKeeper-mode controller's decisions as events in, actions
//! out: [`ControllerCore::on_event`] takes what happened (a request, the
//! result of a znode write) with the [`ControllerContext`] and answers what
//! to do next (write these states conditioned on their partition epochs,
//! send these requests, answer that caller). The driver (`zk_mode`)
//! performs each action and feeds its result back as the next event; the
//! core does no I/O and reads no clock, so a test drives it step by step.
//!
//! It serves AlterPartition (Kafka 3.9 `KafkaController.processAlterPartition`
//! / `tryProcessAlterPartition`): the request is judged per partition
//! (`alter_partition::judge`), the accepted states are written with the
//! partition epoch as the znode version, the context takes what was
//! written, moving partitions are checked for completion, every registered
//! broker gets an UpdateMetadata for them and the leader its answer.
//!
//! And the two state machines every duty drives: the partition state
//! machine (`partitions`: first leaders of new partitions, elections of the
//! others, `elect`) and the replica state machine (`replicas`: replicas
//! told, stopped, taken out of their ISRs). Which changes each event asks
//! for (broker join and failure, topic creation and deletion, reassignment
//! steps, preferred elections) is decided here for a new controller's
//! start, new partitions, controlled shutdown, brokers joining and leaving,
//! replicas in failed log dirs, ElectLeaders and the auto leader
//! rebalance, topic deletion (`TopicDeletionManager`) and partition
//! reassignment (KIP-455) (`flows`).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::alter_partition::{judge, Proposal, Verdict};
use super::brokers::LiveBroker;
use super::context::{ControllerContext, Leadership};
use super::leader_election::LeaderIsr;
use super::rebalance::ElectionType;
use super::state_machine::{PartitionState, ReplicaState};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, PartitionEpoch, TopicPartition};

mod elect;
#[cfg(test)]
mod fixtures;
mod flows;
mod partitions;
mod producer_ids;
mod replicas;
#[cfg(test)]
mod tests;

pub use elect::{ElectionFailures, ElectionKind};
pub use flows::{
    ElectAnswer, ReassignAnswer, ReassignAsk, ResumeWhich, ShutdownAnswer, ShutdownRefusal,
    ZkRemoval,
};
pub use partitions::CreateFailure;
pub use producer_ids::AllocateAnswer;

/// One partition of an AlterPartition (v2+ names topics by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterItem {
    pub topic_id: Uuid,
    pub partition: i32,
    pub proposal: Proposal,
}

/// An AlterPartition as the controller reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterAsk {
    pub broker: BrokerId,
    pub broker_epoch: i64,
    pub items: Vec<AlterItem>,
}

/// Per partition (in the request's order) the state now in force or why
/// not; or a request-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH).
pub type AlterAnswer = Result<Vec<(Uuid, i32, Result<LeaderIsr, ErrorCode>)>, ErrorCode>;

/// Why a conditional state write failed, as the core needs to know it,
/// with the store's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteFailure {
    /// The znode's version moved (another writer, or a retry that lost).
    BadVersion(String),
    /// This broker is no longer controller, or `/controller_epoch` moved.
    NotController(String),
    Other(String),
}

/// What happened, for the core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControllerEvent {
    /// A leader's AlterPartition; `token` names its answer.
    AlterPartition { token: u64, ask: AlterAsk },
    /// The [`ControllerAction::WriteLeaderships`] of `token` done: per
    /// write, in its order, the new partition epoch or why not.
    LeadershipsWritten {
        token: u64,
        results: Vec<Result<PartitionEpoch, WriteFailure>>,
    },
    /// Elect leaders for `parts` (`electLeaderForPartitions`); `job` names
    /// its [`ControllerAction::Elected`]. `default_unclean` is the
    /// broker's `unclean.leader.election.enable`.
    Elect {
        job: u64,
        parts: Vec<TopicPartition>,
        kind: ElectionKind,
        default_unclean: bool,
    },
    /// The [`ControllerAction::ReadUncleanSettings`] of `job` done.
    UncleanRead {
        job: u64,
        settings: BTreeMap<String, bool>,
    },
    /// The [`ControllerAction::ReloadLeaderships`] of `job` done: the
    /// states read (unreadable ones left out).
    LeadershipsReloaded {
        job: u64,
        states: Vec<(TopicPartition, Leadership)>,
    },
    /// The partition state machine: `parts` to `target`
    /// (`PartitionStateMachine.handleStateChanges`), elections by `kind`;
    /// ends with [`ControllerAction::PartitionsDone`].
    PartitionsTo {
        job: u64,
        parts: Vec<TopicPartition>,
        target: PartitionState,
        kind: ElectionKind,
        default_unclean: bool,
    },
    /// The [`ControllerAction::CreateStates`] of `token` done, per state.
    StatesCreated {
        token: u64,
        results: Vec<Result<(), CreateFailure>>,
    },
    /// The replica state machine: `replicas` to `target`
    /// (`ReplicaStateMachine.handleStateChanges`); ends with
    /// [`ControllerAction::ReplicasDone`].
    ReplicasTo {
        job: u64,
        replicas: Vec<(TopicPartition, BrokerId)>,
        target: ReplicaState,
    },
    /// A broker's ControlledShutdown (`doControlledShutdown`); `token`
    /// names its answer.
    ControlledShutdown {
        token: u64,
        broker: BrokerId,
        broker_epoch: i64,
    },
    /// `/brokers/ids` changed (`processBrokerChange`): the registered
    /// brokers as read; ends with [`ControllerAction::FlowDone`].
    BrokerChange {
        token: u64,
        live: Vec<LiveBroker>,
        default_unclean: bool,
    },
    /// Replicas in a failed log dir (`onReplicasBecomeOffline`); ends with
    /// [`ControllerAction::FlowDone`].
    ReplicasOffline {
        token: u64,
        replicas: Vec<(TopicPartition, BrokerId)>,
        default_unclean: bool,
    },
    /// A new controller's state machines start from its loaded context
    /// (`onControllerFailover`); ends with [`ControllerAction::FlowDone`].
    Failover { token: u64, default_unclean: bool },
    /// New partitions in the context's assignment
    /// (`onNewPartitionCreation`); ends with [`ControllerAction::FlowDone`].
    NewPartitions {
        token: u64,
        parts: Vec<TopicPartition>,
        default_unclean: bool,
    },
    /// ElectLeaders (`processReplicaLeaderElection`; `None`: every
    /// partition); ends with [`ControllerAction::AnswerElectLeaders`].
    ElectLeaders {
        token: u64,
        kind: ElectionType,
        partitions: Option<std::collections::BTreeSet<TopicPartition>>,
        default_unclean: bool,
    },
    /// The auto leader rebalance's check at `percent`
    /// (`leader.imbalance.per.broker.percentage`); ends with
    /// [`ControllerAction::FlowDone`].
    AutoRebalance {
        token: u64,
        percent: u32,
        default_unclean: bool,
    },
    /// The driver did what flow `token` asked (a send, a znode removal).
    Performed { token: u64 },
    /// `/admin/delete_topics` listed (`enabled`: `delete.topic.enable`);
    /// ends with [`ControllerAction::FlowDone`].
    DeleteTopicsListed {
        token: u64,
        marked: Vec<String>,
        enabled: bool,
    },
    /// `resumeDeletions`; ends with [`ControllerAction::FlowDone`].
    ResumeDeletions { token: u64 },
    /// A broker's answers to a deleting StopReplica, per partition; ends
    /// with [`ControllerAction::FlowDone`].
    DeletionAnswer {
        token: u64,
        broker: BrokerId,
        errors: Vec<(TopicPartition, ErrorCode)>,
    },
    /// The [`ControllerAction::RemoveTopicZnodes`] of `token` done.
    TopicZnodesRemoved {
        token: u64,
        topic: String,
        removed: bool,
    },
    /// AlterPartitionReassignments; ends with
    /// [`ControllerAction::AnswerAlterReassignments`].
    AlterReassignments { token: u64, asked: ReassignAsk },
    /// `/admin/reassign_partitions` as read; ends with
    /// [`ControllerAction::ZkReassigned`].
    ZkReassignment {
        token: u64,
        asked: Vec<(TopicPartition, Vec<BrokerId>)>,
    },
    /// A moving partition's ISR changed; ends with
    /// [`ControllerAction::FlowDone`].
    ReassignmentIsrChange { token: u64, tp: TopicPartition },
    /// `maybeResumeReassignments`; ends with [`ControllerAction::FlowDone`].
    ResumeReassignments { token: u64, which: ResumeWhich },
    /// The [`ControllerAction::WriteTopicAssignment`] of `token` done.
    TopicAssignmentWritten {
        token: u64,
        result: Result<(), WriteFailure>,
    },
    /// AllocateProducerIds (KIP-730); ends with
    /// [`ControllerAction::AnswerAllocateProducerIds`].
    AllocateProducerIds {
        token: u64,
        broker: BrokerId,
        broker_epoch: i64,
    },
    /// `/brokers/topics` listed (`processTopicChange`); ends with
    /// [`ControllerAction::FlowDone`].
    TopicsListed { token: u64, names: Vec<String> },
    /// The [`ControllerAction::ReadTopics`] of `token` done (unreadable
    /// topics left out).
    TopicsRead {
        token: u64,
        read: Vec<(String, crate::zk::paths::TopicZNode)>,
        default_unclean: bool,
    },
    /// A topic's assignment as read after its watch fired
    /// (`processPartitionModifications`); ends with
    /// [`ControllerAction::FlowDone`].
    PartitionsModified {
        token: u64,
        topic: String,
        znode: crate::zk::paths::TopicZNode,
        default_unclean: bool,
    },
    /// ISR change notifications name these partitions
    /// (`processIsrChangeNotification`); ends with
    /// [`ControllerAction::FlowDone`].
    IsrChangeNotified {
        token: u64,
        parts: Vec<TopicPartition>,
    },
    /// Log dir event notifications name these brokers
    /// (`onBrokerLogDirFailure`); ends with [`ControllerAction::FlowDone`].
    LogDirFailure {
        token: u64,
        brokers: std::collections::BTreeSet<BrokerId>,
    },
    /// A broker's LeaderAndIsr answers per partition
    /// (`processLeaderAndIsrResponseReceived`); ends with
    /// [`ControllerAction::FlowDone`].
    LeaderAndIsrAnswer {
        token: u64,
        broker: BrokerId,
        answers: Vec<(TopicPartition, ErrorCode)>,
        default_unclean: bool,
    },
    /// The [`ControllerAction::ReserveProducerIds`] of `token` done: the
    /// block (first id, length), or why not.
    ProducerIdsReserved {
        token: u64,
        broker: BrokerId,
        block: Result<(i64, i32), String>,
    },
}

/// What the driver is to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControllerAction {
    /// Write each state to its partition-state znode with the controller
    /// epoch check, expecting `partition_epoch` as the znode version;
    /// answer with [`ControllerEvent::LeadershipsWritten`].
    WriteLeaderships {
        token: u64,
        writes: Vec<(TopicPartition, LeaderIsr)>,
    },
    /// Queue the reassignment completion check of a moving partition
    /// (`processAlterPartition` does it after the answer is built).
    CheckReassignment(TopicPartition),
    /// UpdateMetadata with `partitions` to `brokers`, in the caller's
    /// batch.
    UpdateMetadata {
        brokers: Vec<BrokerId>,
        partitions: Vec<TopicPartition>,
    },
    AnswerAlterPartition {
        token: u64,
        answer: AlterAnswer,
    },
    /// Read each topic's `unclean.leader.election.enable` (its override in
    /// `/config/topics/<t>`, else the broker's); answer with
    /// [`ControllerEvent::UncleanRead`].
    ReadUncleanSettings {
        job: u64,
        topics: Vec<String>,
    },
    /// Re-read these state znodes; answer with
    /// [`ControllerEvent::LeadershipsReloaded`].
    ReloadLeaderships {
        job: u64,
        parts: Vec<TopicPartition>,
    },
    /// LeaderAndIsr for `partition` (its state now in the context) to
    /// `recipients`, in the caller's batch (`is_new`: replicas just
    /// created).
    LeaderAndIsr {
        recipients: Vec<BrokerId>,
        partition: TopicPartition,
        is_new: bool,
    },
    /// StopReplica for `partition` to `replica`, in the caller's batch.
    StopReplica {
        replica: BrokerId,
        partition: TopicPartition,
        delete: bool,
    },
    /// Create the `partitions/<p>` and `partitions/<p>/state` znodes of
    /// new partitions with these first states, behind the controller-epoch
    /// check; answer with [`ControllerEvent::StatesCreated`].
    CreateStates {
        token: u64,
        states: Vec<(TopicPartition, LeaderIsr)>,
    },
    /// Kafka's `UncleanLeaderElectionsPerSec` grows by this many.
    UncleanElections(u64),
    /// The election `job` is over: the partitions that got a leader, and
    /// why the others did not.
    Elected {
        job: u64,
        elected: Vec<TopicPartition>,
        failed: ElectionFailures,
    },
    /// The partition state change `job` is over: the partitions now Online.
    PartitionsDone {
        job: u64,
        online: Vec<TopicPartition>,
    },
    /// The replica state change `job` is over.
    ReplicasDone {
        job: u64,
    },
    /// Send the requests gathered so far, before the next step's; answer
    /// with [`ControllerEvent::Performed`].
    SendBatch {
        token: u64,
    },
    /// UpdateMetadata with every partition to `brokers`, in the batch.
    UpdateMetadataAll {
        brokers: Vec<BrokerId>,
    },
    /// The registered brokers as read: the driver's hook for its own
    /// bookkeeping (the controller channel's brokers).
    BrokersChanged {
        live: Vec<LiveBroker>,
    },
    /// Remove these topics' `/admin/delete_topics` markers behind the
    /// controller-epoch check (a failure is logged); answer with
    /// [`ControllerEvent::Performed`].
    RemoveDeleteMarkers {
        token: u64,
        topics: Vec<String>,
    },
    /// `completeDeleteTopic`'s writes: the topic's znodes, its config and
    /// its marker removed in one `multi` behind the controller-epoch
    /// check; answer with [`ControllerEvent::TopicZnodesRemoved`].
    RemoveTopicZnodes {
        token: u64,
        topic: String,
    },
    /// `/brokers/topics/<topic>` set to `znode` behind the
    /// controller-epoch check; answer with
    /// [`ControllerEvent::TopicAssignmentWritten`].
    WriteTopicAssignment {
        token: u64,
        topic: String,
        znode: crate::zk::paths::TopicZNode,
    },
    /// The partitions `remove` picks leave `/admin/reassign_partitions`
    /// (deleted when none is left; absent: nothing to do); answer with
    /// [`ControllerEvent::Performed`].
    RemoveFromZkReassignment {
        token: u64,
        remove: ZkRemoval,
    },
    AnswerAlterReassignments {
        token: u64,
        answer: ReassignAnswer,
    },
    /// The ZooKeeper reassignment `token` is over: the partitions started.
    ZkReassigned {
        token: u64,
        started: std::collections::BTreeSet<TopicPartition>,
    },
    /// Read these topics' `/brokers/topics/<t>` with a watch on each;
    /// answer with [`ControllerEvent::TopicsRead`].
    ReadTopics {
        token: u64,
        topics: Vec<String>,
    },
    /// Reserve the next producer-id block of `/latest_producer_id_block`
    /// for `broker`; answer with [`ControllerEvent::ProducerIdsReserved`].
    ReserveProducerIds {
        token: u64,
        broker: BrokerId,
    },
    AnswerAllocateProducerIds {
        token: u64,
        answer: AllocateAnswer,
    },
    /// One partition's reassignment (a sub-flow) is over.
    Reassigned {
        token: u64,
        result: Result<(), super::reassignment::Refusal>,
    },
    AnswerElectLeaders {
        token: u64,
        answer: ElectAnswer,
    },
    /// The flow `token` is over.
    FlowDone {
        token: u64,
    },
    AnswerControlledShutdown {
        token: u64,
        answer: ShutdownAnswer,
    },
}

/// One judged partition of an AlterPartition waiting for its writes.
#[derive(Debug, Clone)]
struct Judged {
    topic_id: Uuid,
    partition: i32,
    name: Option<String>,
    verdict: Verdict,
}

/// The core's own state: the work waiting on the driver, by token.
#[derive(Debug, Default)]
pub struct ControllerCore {
    alters: BTreeMap<u64, Vec<Judged>>,
    elections: BTreeMap<u64, elect::ElectionJob>,
    partitions: BTreeMap<u64, partitions::PartitionsJob>,
    /// Sub-jobs and who waits for them.
    parents: BTreeMap<u64, flows::Parent>,
    flows: BTreeMap<u64, flows::Flow>,
    offline: BTreeMap<u64, replicas::OfflineJob>,
    next_token: u64,
}

impl ControllerCore {
    pub fn new() -> Self {
        Self::default()
    }

    /// A token for an event that will be answered.
    pub fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// Jobs (AlterPartitions, elections, state changes, flows) still
    /// waiting on the driver.
    pub fn waiting(&self) -> usize {
        self.alters.len()
            + self.elections.len()
            + self.partitions.len()
            + self.offline.len()
            + self.flows.len()
    }

    /// `ctx` is `None` when this broker is not controller. No event here
    /// depends on time yet; `now_ms` is for the timed duties to come.
    pub fn on_event(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        _now_ms: i64,
        event: ControllerEvent,
    ) -> Vec<ControllerAction> {
        match event {
            ControllerEvent::AlterPartition { token, ask } => self.on_alter(ctx, token, ask),
            ControllerEvent::LeadershipsWritten { token, results } => {
                if self.flows.contains_key(&token) {
                    self.on_steps_written(ctx, token, results)
                } else if self.alters.contains_key(&token) {
                    self.on_alter_written(ctx, token, results)
                } else if self.offline.contains_key(&token) {
                    self.on_removal_written(ctx, token, results)
                } else {
                    self.on_election_written(ctx, token, results)
                }
            }
            ControllerEvent::Elect {
                job,
                parts,
                kind,
                default_unclean,
            } => self.on_elect(ctx, job, parts, kind, default_unclean),
            ControllerEvent::UncleanRead { job, settings } => {
                self.on_unclean_read(ctx, job, settings)
            }
            ControllerEvent::LeadershipsReloaded { job, states } => {
                if self.flows.contains_key(&job) {
                    self.on_steps_reloaded(ctx, job, states)
                } else {
                    self.on_leaderships_reloaded(ctx, job, states)
                }
            }
            ControllerEvent::PartitionsTo {
                job,
                parts,
                target,
                kind,
                default_unclean,
            } => self.on_partitions_to(ctx, job, parts, target, kind, default_unclean),
            ControllerEvent::StatesCreated { token, results } => {
                self.on_states_created(ctx, token, results)
            }
            ControllerEvent::ReplicasTo {
                job,
                replicas,
                target,
            } => self.on_replicas_to(ctx, job, replicas, target),
            ControllerEvent::ControlledShutdown {
                token,
                broker,
                broker_epoch,
            } => self.on_controlled_shutdown(ctx, token, broker, broker_epoch),
            ControllerEvent::BrokerChange {
                token,
                live,
                default_unclean,
            } => self.on_broker_change(ctx, token, live, default_unclean),
            ControllerEvent::ReplicasOffline {
                token,
                replicas,
                default_unclean,
            } => self.on_replicas_offline(ctx, token, replicas, default_unclean),
            ControllerEvent::Performed { token } => self.resume_flow(ctx, token, None),
            ControllerEvent::Failover {
                token,
                default_unclean,
            } => self.on_failover(ctx, token, default_unclean),
            ControllerEvent::ElectLeaders {
                token,
                kind,
                partitions,
                default_unclean,
            } => self.on_elect_leaders(ctx, token, kind, partitions, default_unclean),
            ControllerEvent::AutoRebalance {
                token,
                percent,
                default_unclean,
            } => self.on_auto_rebalance(ctx, token, percent, default_unclean),
            ControllerEvent::NewPartitions {
                token,
                parts,
                default_unclean,
            } => self.on_new_partitions(ctx, token, parts, default_unclean),
            other => self.on_steps_event(ctx, other),
        }
    }

    /// The events of topic deletion and reassignment (`flows::deletion`,
    /// `flows::reassign`) and of AllocateProducerIds (`producer_ids`).
    fn on_steps_event(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        event: ControllerEvent,
    ) -> Vec<ControllerAction> {
        match event {
            ControllerEvent::DeleteTopicsListed {
                token,
                marked,
                enabled,
            } => self.on_delete_topics_listed(ctx, token, marked, enabled),
            ControllerEvent::ResumeDeletions { token } => self.on_resume_deletions(ctx, token),
            ControllerEvent::DeletionAnswer {
                token,
                broker,
                errors,
            } => self.on_deletion_answer(ctx, token, broker, errors),
            ControllerEvent::TopicZnodesRemoved {
                token,
                topic,
                removed,
            } => self.on_topic_znodes_removed(ctx, token, topic, removed),
            ControllerEvent::AlterReassignments { token, asked } => {
                self.on_alter_reassignments(ctx, token, asked)
            }
            ControllerEvent::ZkReassignment { token, asked } => {
                self.on_zk_reassignment(ctx, token, asked)
            }
            ControllerEvent::ReassignmentIsrChange { token, tp } => {
                self.on_reassignment_isr_change(ctx, token, tp)
            }
            ControllerEvent::ResumeReassignments { token, which } => {
                self.on_resume_reassignments(ctx, token, which)
            }
            ControllerEvent::TopicAssignmentWritten { token, result } => {
                self.on_assignment_written(ctx, token, result)
            }
            ControllerEvent::AllocateProducerIds {
                token,
                broker,
                broker_epoch,
            } => self.on_allocate_producer_ids(ctx, token, broker, broker_epoch),
            ControllerEvent::ProducerIdsReserved {
                token,
                broker,
                block,
            } => self.on_producer_ids_reserved(token, broker, block),
            other => self.on_watch_event(ctx, other),
        }
    }

    /// The events of watches and notifications (`flows::watches`).
    fn on_watch_event(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        event: ControllerEvent,
    ) -> Vec<ControllerAction> {
        match event {
            ControllerEvent::TopicsListed { token, names } => {
                self.on_topics_listed(ctx, token, names)
            }
            ControllerEvent::TopicsRead {
                token,
                read,
                default_unclean,
            } => self.on_topics_read(ctx, token, read, default_unclean),
            ControllerEvent::PartitionsModified {
                token,
                topic,
                znode,
                default_unclean,
            } => self.on_partitions_modified(ctx, token, topic, znode, default_unclean),
            ControllerEvent::IsrChangeNotified { token, parts } => {
                self.on_isr_change_notified(ctx, token, parts)
            }
            ControllerEvent::LogDirFailure { token, brokers } => {
                self.on_log_dir_failure(ctx, token, brokers)
            }
            ControllerEvent::LeaderAndIsrAnswer {
                token,
                broker,
                answers,
                default_unclean,
            } => self.on_leader_and_isr_answer(ctx, token, broker, answers, default_unclean),
            _ => Vec::new(),
        }
    }

    /// `tryProcessAlterPartition`: judge every partition; write those
    /// that change, or answer at once when none does.
    fn on_alter(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        ask: AlterAsk,
    ) -> Vec<ControllerAction> {
        let answer = |answer| vec![ControllerAction::AnswerAlterPartition { token, answer }];
        let Some(ctx) = ctx else {
            return answer(Err(ErrorCode::NOT_CONTROLLER));
        };
        // Kafka: an unknown broker or another epoch is STALE_BROKER_EPOCH.
        if ctx.broker(ask.broker).map(|b| b.epoch) != Some(ask.broker_epoch) {
            return answer(Err(ErrorCode::STALE_BROKER_EPOCH));
        }
        let live = ctx.live();
        let judged: Vec<Judged> = ask
            .items
            .into_iter()
            .map(|item| {
                let name = ctx
                    .topic_ids
                    .iter()
                    .find(|(_, id)| **id == item.topic_id)
                    .map(|(n, _)| n.clone());
                let verdict = match &name {
                    None => Verdict::Refused(ErrorCode::UNKNOWN_TOPIC_ID),
                    Some(n) => {
                        let tp = TopicPartition::new(n.as_str(), item.partition);
                        judge(
                            ctx.leadership.get(&tp).map(|l| &l.leader_isr),
                            &live,
                            &item.proposal,
                        )
                    }
                };
                Judged {
                    topic_id: item.topic_id,
                    partition: item.partition,
                    name,
                    verdict,
                }
            })
            .collect();
        let writes = writes_of(&judged);
        self.alters.insert(token, judged);
        if writes.is_empty() {
            return self.on_alter_written(Some(ctx), token, Vec::new());
        }
        vec![ControllerAction::WriteLeaderships { token, writes }]
    }

    /// The accepted states written (or not): the context takes those
    /// written, the moving ones are checked, every registered broker hears
    /// of them, and the leader gets its answer.
    fn on_alter_written(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        token: u64,
        results: Vec<Result<PartitionEpoch, WriteFailure>>,
    ) -> Vec<ControllerAction> {
        let Some(judged) = self.alters.remove(&token) else {
            return Vec::new();
        };
        let writes = writes_of(&judged);
        let mut outcome: BTreeMap<TopicPartition, Result<LeaderIsr, ErrorCode>> = BTreeMap::new();
        let mut changed = Vec::new();
        let mut results = results.into_iter();
        for (tp, l) in writes {
            let r = match results.next() {
                Some(Ok(epoch)) => {
                    let l = LeaderIsr {
                        partition_epoch: epoch,
                        ..l
                    };
                    if let Some(ctx) = ctx.as_deref_mut() {
                        ctx.put_leadership(tp.clone(), l.clone());
                    }
                    changed.push(tp.clone());
                    tracing::info!(%tp, isr = ?l.isr, partition_epoch = %l.partition_epoch.0, "ISR changed");
                    Ok(l)
                }
                Some(Err(WriteFailure::BadVersion(_))) => Err(ErrorCode::INVALID_UPDATE_VERSION),
                Some(Err(WriteFailure::NotController(_))) => Err(ErrorCode::NOT_CONTROLLER),
                Some(Err(WriteFailure::Other(e))) => {
                    tracing::warn!(%tp, error = %e, "writing an ISR change");
                    Err(ErrorCode::UNKNOWN_SERVER_ERROR)
                }
                None => Err(ErrorCode::UNKNOWN_SERVER_ERROR),
            };
            outcome.insert(tp, r);
        }
        let mut actions = Vec::new();
        if let Some(ctx) = ctx.as_deref() {
            // Moving partitions are checked for completion after the
            // answer is built (`processAlterPartition`): queued.
            actions.extend(
                changed
                    .iter()
                    .filter(|tp| ctx.reassignments.contains_key(*tp))
                    .cloned()
                    .map(ControllerAction::CheckReassignment),
            );
            if !changed.is_empty() {
                // `sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds, partitions)`.
                actions.push(ControllerAction::UpdateMetadata {
                    brokers: ctx.live_or_shutting_down().into_iter().collect(),
                    partitions: changed,
                });
            }
        }
        let answers = judged
            .into_iter()
            .map(|j| {
                let r = match j.verdict {
                    Verdict::Refused(e) => Err(e),
                    Verdict::Unchanged(l) => Ok(l),
                    Verdict::Write(_) => {
                        let tp = TopicPartition::new(j.name.unwrap_or_default(), j.partition);
                        outcome
                            .remove(&tp)
                            .unwrap_or(Err(ErrorCode::UNKNOWN_SERVER_ERROR))
                    }
                };
                (j.topic_id, j.partition, r)
            })
            .collect();
        actions.push(ControllerAction::AnswerAlterPartition {
            token,
            answer: Ok(answers),
        });
        actions
    }
}

/// The states an AlterPartition's verdicts ask to write, in request order.
fn writes_of(judged: &[Judged]) -> Vec<(TopicPartition, LeaderIsr)> {
    judged
        .iter()
        .filter_map(|j| match (&j.name, &j.verdict) {
            (Some(n), Verdict::Write(l)) => {
                Some((TopicPartition::new(n.as_str(), j.partition), l.clone()))
            }
            _ => None,
        })
        .collect()
}
