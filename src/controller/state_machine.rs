//! `[pure]` The controller's partition and replica state machines: the
//! closed state sets and which transitions Kafka allows, with the state of
//! every partition and replica the controller knows.
//!
//! Kafka 3.9 `core/src/main/scala/kafka/controller/PartitionStateMachine.scala`
//! and `ReplicaStateMachine.scala` (`validPreviousStates`), with the state
//! maps of `ControllerContext.scala`. The tables are Kafka's exactly,
//! self-transitions included: `Online -> Online` is how a partition with a
//! leader is re-elected (preferred, reassign, controlled shutdown),
//! `Offline -> Offline` happens when a second broker of an already offline
//! partition dies, and `OnlineReplica -> OnlineReplica` /
//! `OfflineReplica -> OfflineReplica` re-send LeaderAndIsr / StopReplica.
//!
//! What a transition does (elect, write the state znode, send requests) is
//! the caller's; this file only decides whether the move is legal and
//! records it. An illegal move changes nothing: Kafka logs it and leaves
//! the partition or replica where it was (`logInvalidTransition`).
//!
//! One representation difference: Kafka keeps `NonExistentPartition` in
//! its map until the topic is removed; here a partition or replica that
//! moves to `NonExistent` leaves the map (missing means `NonExistent`), so
//! the maps only hold things that exist. Lookups answer the same.

use std::collections::BTreeMap;
use std::fmt;

use crate::types::{BrokerId, TopicPartition};

/// A partition's state (Kafka's `PartitionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PartitionState {
    /// Never created, or deleted.
    NonExistent,
    /// Replicas assigned, no leader/ISR yet.
    New,
    /// A leader is elected.
    Online,
    /// The leader died (or no leader could be elected).
    Offline,
}

/// A replica's state (Kafka's `ReplicaState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReplicaState {
    New,
    Online,
    Offline,
    DeletionStarted,
    DeletionSuccessful,
    DeletionIneligible,
    NonExistent,
}

impl PartitionState {
    /// Kafka's `validPreviousStates` for this target state.
    pub fn valid_previous_states(self) -> &'static [PartitionState] {
        use PartitionState::*;
        match self {
            New => &[NonExistent],
            Online => &[New, Online, Offline],
            Offline => &[New, Online, Offline],
            NonExistent => &[Offline],
        }
    }

    /// True when Kafka allows moving from `from` to `self`.
    pub fn can_follow(self, from: PartitionState) -> bool {
        self.valid_previous_states().contains(&from)
    }

    /// Kafka's name for the state, as its state-change log prints it.
    fn kafka_name(self) -> &'static str {
        match self {
            Self::NonExistent => "NonExistentPartition",
            Self::New => "NewPartition",
            Self::Online => "OnlinePartition",
            Self::Offline => "OfflinePartition",
        }
    }
}

impl fmt::Display for PartitionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kafka_name())
    }
}

impl ReplicaState {
    /// Kafka's `validPreviousStates` for this target state.
    pub fn valid_previous_states(self) -> &'static [ReplicaState] {
        use ReplicaState::*;
        match self {
            New => &[NonExistent],
            Online => &[New, Online, Offline, DeletionIneligible],
            Offline => &[New, Online, Offline, DeletionIneligible],
            DeletionStarted => &[Offline],
            DeletionSuccessful => &[DeletionStarted],
            DeletionIneligible => &[Offline, DeletionStarted],
            NonExistent => &[DeletionSuccessful],
        }
    }

    /// True when Kafka allows moving from `from` to `self`.
    pub fn can_follow(self, from: ReplicaState) -> bool {
        self.valid_previous_states().contains(&from)
    }

    /// Kafka's name for the state, as its state-change log prints it.
    fn kafka_name(self) -> &'static str {
        match self {
            Self::New => "NewReplica",
            Self::Online => "OnlineReplica",
            Self::Offline => "OfflineReplica",
            Self::DeletionStarted => "ReplicaDeletionStarted",
            Self::DeletionSuccessful => "ReplicaDeletionSuccessful",
            Self::DeletionIneligible => "ReplicaDeletionIneligible",
            Self::NonExistent => "NonExistentReplica",
        }
    }
}

impl fmt::Display for ReplicaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kafka_name())
    }
}

/// A move Kafka's table forbids; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal state change of {what} from {from} to {to}")]
pub struct IllegalTransition {
    /// `partition foo-0` or `replica 3 of foo-0`.
    pub what: String,
    pub from: String,
    pub to: String,
}

/// Every partition's state; a partition not in the map is NonExistent.
#[derive(Debug, Clone, Default)]
pub struct PartitionStates {
    /// Invariant: no value is `NonExistent`.
    states: BTreeMap<TopicPartition, PartitionState>,
}

impl PartitionStates {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, tp: &TopicPartition) -> PartitionState {
        self.states
            .get(tp)
            .copied()
            .unwrap_or(PartitionState::NonExistent)
    }

    /// Applies `to` if Kafka's table allows it from the current state; else
    /// logs a warning (naming the partition and both states) and returns the
    /// error with nothing changed. Moving to NonExistent removes the entry.
    pub fn transition(
        &mut self,
        tp: &TopicPartition,
        to: PartitionState,
    ) -> Result<(), IllegalTransition> {
        let from = self.get(tp);
        if !to.can_follow(from) {
            tracing::warn!(
                partition = %tp, from = %from, to = %to,
                "Partition {tp} should be in one of {:?} states before moving to {to} state. \
                 Instead it is in {from} state",
                to.valid_previous_states(),
            );
            return Err(IllegalTransition {
                what: format!("partition {tp}"),
                from: from.to_string(),
                to: to.to_string(),
            });
        }
        if to == PartitionState::NonExistent {
            self.states.remove(tp);
        } else {
            self.states.insert(tp.clone(), to);
        }
        Ok(())
    }

    /// The partitions in state `s`, sorted (topic, then partition). Always
    /// empty for `NonExistent`: those are not tracked.
    pub fn in_state(&self, s: PartitionState) -> Vec<TopicPartition> {
        self.states
            .iter()
            .filter(|(_, state)| **state == s)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Forgets every partition of `topic` (Kafka's `ControllerContext.removeTopic`).
    pub fn remove_topic(&mut self, topic: &str) {
        self.states.retain(|tp, _| &*tp.topic != topic);
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

/// A replica: the partition and the broker holding it (Kafka's
/// `PartitionAndReplica`).
type ReplicaKey = (TopicPartition, BrokerId);

/// Every replica's state, keyed (partition, broker); missing = NonExistent.
#[derive(Debug, Clone, Default)]
pub struct ReplicaStates {
    /// Invariant: no value is `NonExistent`.
    states: BTreeMap<ReplicaKey, ReplicaState>,
}

impl ReplicaStates {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, tp: &TopicPartition, replica: BrokerId) -> ReplicaState {
        // The key is owned; a clone of the Arc'd name is cheap.
        self.states
            .get(&(tp.clone(), replica))
            .copied()
            .unwrap_or(ReplicaState::NonExistent)
    }

    /// Applies `to` if Kafka's table allows it from the current state; else
    /// logs a warning and returns the error with nothing changed. Moving to
    /// NonExistent removes the entry (Kafka's `removeReplicaState`).
    pub fn transition(
        &mut self,
        tp: &TopicPartition,
        replica: BrokerId,
        to: ReplicaState,
    ) -> Result<(), IllegalTransition> {
        let from = self.get(tp, replica);
        if !to.can_follow(from) {
            tracing::warn!(
                partition = %tp, replica = %replica, from = %from, to = %to,
                "Replica {replica} of {tp} should be in the {:?} states before moving to {to} \
                 state. Instead it is in {from} state",
                to.valid_previous_states(),
            );
            return Err(IllegalTransition {
                what: format!("replica {replica} of {tp}"),
                from: from.to_string(),
                to: to.to_string(),
            });
        }
        let key = (tp.clone(), replica);
        if to == ReplicaState::NonExistent {
            self.states.remove(&key);
        } else {
            self.states.insert(key, to);
        }
        Ok(())
    }

    /// The replicas of `topic` in state `s`, sorted (partition, broker).
    /// Always empty for `NonExistent`.
    pub fn replicas_in_state(
        &self,
        topic: &str,
        s: ReplicaState,
    ) -> Vec<(TopicPartition, BrokerId)> {
        self.topic_replicas(topic)
            .filter(|(_, state)| **state == s)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Kafka's `areAllReplicasInState` (behind `areAllReplicasForTopicDeleted`).
    /// Deviation: Kafka's `forall` over an empty replica set is true; here a
    /// topic with no tracked replicas answers false, so a topic we know
    /// nothing about is never reported as fully deleted.
    pub fn all_in_state(&self, topic: &str, s: ReplicaState) -> bool {
        let mut replicas = self.topic_replicas(topic).peekable();
        replicas.peek().is_some() && replicas.all(|(_, state)| *state == s)
    }

    /// Kafka's `isAnyReplicaInState` (behind
    /// `isAtLeastOneReplicaInDeletionStartedState`).
    pub fn any_in_state(&self, topic: &str, s: ReplicaState) -> bool {
        self.topic_replicas(topic).any(|(_, state)| *state == s)
    }

    /// Forgets every replica of `topic`.
    pub fn remove_topic(&mut self, topic: &str) {
        self.states.retain(|(tp, _), _| &*tp.topic != topic);
    }

    /// The entries of `topic`, in key order: one range of the map, as keys
    /// sort by topic first.
    fn topic_replicas<'a>(
        &'a self,
        topic: &str,
    ) -> impl Iterator<Item = (&'a ReplicaKey, &'a ReplicaState)> + 'a {
        let lo = (TopicPartition::new(topic, i32::MIN), BrokerId(i32::MIN));
        let hi = (TopicPartition::new(topic, i32::MAX), BrokerId(i32::MAX));
        self.states.range(lo..=hi)
    }
}

#[cfg(test)]
mod tests;
