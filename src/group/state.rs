//! `[pure]` A consumer group's state for the classic group protocol (seed
//! 000's consumer-group chapter; Kafka's `GroupMetadata` and
//! `GroupCoordinator` in 3.9's ZooKeeper mode): the five states and their
//! legal transitions, the members and their protocols, and the choice of
//! one protocol by vote.
//!
//! The states (Kafka's `GroupState`):
//! - `Empty`: no members, maybe committed offsets; a join starts a rebalance.
//! - `PreparingRebalance`: waiting for members to (re)join, up to the
//!   rebalance timeout (DelayedJoin).
//! - `CompletingRebalance`: everyone joined; waiting for the leader's
//!   SyncGroup with the assignment.
//! - `Stable`: the assignment is out; heartbeats keep members alive.
//! - `Dead`: no members, no offsets; the group is being removed.
//!
//! An illegal transition is refused and the state left as it was
//! ([`Group::transition_to`] says so); it is never applied.

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::ErrorCode;

/// Kafka's `GroupState` for the classic protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// The states a group may come from into `self` (Kafka's
    /// `validPreviousStates`).
    pub fn valid_previous_states(self) -> &'static [GroupState] {
        use GroupState::*;
        match self {
            Empty => &[PreparingRebalance],
            PreparingRebalance => &[Stable, CompletingRebalance, Empty],
            CompletingRebalance => &[PreparingRebalance],
            Stable => &[CompletingRebalance],
            Dead => &[Stable, PreparingRebalance, CompletingRebalance, Empty, Dead],
        }
    }

    /// Whether a group in `self` may move to `next`.
    pub fn can_move_to(self, next: GroupState) -> bool {
        next.valid_previous_states().contains(&self)
    }

    /// The name DescribeGroups and ListGroups report (Kafka's `toString`).
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// A refused transition: the group stays where it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("group cannot move from {from:?} to {to:?}")]
pub struct IllegalTransition {
    pub from: GroupState,
    pub to: GroupState,
}

/// One member of a classic group (Kafka's `MemberMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub member_id: String,
    /// KIP-345 static membership.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// (protocol name, metadata), in the member's order of preference.
    pub protocols: Vec<(String, Vec<u8>)>,
    /// What the leader's SyncGroup assigned it.
    pub assignment: Vec<u8>,
}

impl Member {
    /// The metadata the member sent for `protocol`.
    pub fn metadata_for(&self, protocol: &str) -> Option<&[u8]> {
        self.protocols
            .iter()
            .find(|(p, _)| p == protocol)
            .map(|(_, m)| m.as_slice())
    }

    /// Same protocols with the same metadata, in the same order (Kafka's
    /// `MemberMetadata.matches`).
    pub fn matches(&self, protocols: &[(String, Vec<u8>)]) -> bool {
        self.protocols == protocols
    }

    fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|(p, _)| p == protocol)
    }

    /// The member's first choice among `candidates` (Kafka's `vote`).
    fn vote(&self, candidates: &BTreeSet<String>) -> Option<&str> {
        self.protocols
            .iter()
            .map(|(p, _)| p.as_str())
            .find(|p| candidates.contains(*p))
    }
}

/// A classic consumer group.
#[derive(Debug, Clone)]
pub struct Group {
    pub group_id: String,
    state: GroupState,
    /// When the group entered its state (`currentStateTimestamp`).
    state_since_ms: i64,
    /// Bumped when a rebalance completes its join phase.
    pub generation: i32,
    pub protocol_type: Option<String>,
    /// The protocol chosen for the current generation.
    pub protocol: Option<String>,
    pub leader: Option<String>,
    members: BTreeMap<String, Member>,
    /// group.instance.id → member id of the static members.
    static_members: BTreeMap<String, String>,
}

impl Group {
    /// A new group: `Empty`, generation 0, no members.
    pub fn new(group_id: impl Into<String>, now_ms: i64) -> Self {
        Self {
            group_id: group_id.into(),
            state: GroupState::Empty,
            state_since_ms: now_ms,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
        }
    }

    pub fn state(&self) -> GroupState {
        self.state
    }

    pub fn state_since_ms(&self) -> i64 {
        self.state_since_ms
    }

    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }

    pub fn member(&self, member_id: &str) -> Option<&Member> {
        self.members.get(member_id)
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The member id a static `group.instance.id` holds, if any.
    pub fn static_member(&self, group_instance_id: &str) -> Option<&str> {
        self.static_members
            .get(group_instance_id)
            .map(String::as_str)
    }

    /// Move to `to` if Kafka allows it from the current state.
    pub fn transition_to(&mut self, to: GroupState, now_ms: i64) -> Result<(), IllegalTransition> {
        if !self.state.can_move_to(to) {
            return Err(IllegalTransition {
                from: self.state,
                to,
            });
        }
        self.state = to;
        self.state_since_ms = now_ms;
        self.check_invariants();
        Ok(())
    }

    /// Kafka's `supportsProtocols`: a join is consistent with the group
    /// when the group is empty and the join names at least one protocol,
    /// or its protocol type matches and one of its protocols is supported
    /// by every member (else INCONSISTENT_GROUP_PROTOCOL).
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[String]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|p| self.members.values().all(|m| m.supports(p)))
    }

    /// Protocols every member supports.
    pub fn candidate_protocols(&self) -> BTreeSet<String> {
        let mut members = self.members.values();
        let Some(first) = members.next() else {
            return BTreeSet::new();
        };
        let mut candidates: BTreeSet<String> =
            first.protocols.iter().map(|(p, _)| p.clone()).collect();
        for m in members {
            candidates.retain(|p| m.supports(p));
        }
        candidates
    }

    /// Kafka's `selectProtocol`: each member votes for its most preferred
    /// candidate; the protocol with the most votes wins. Kafka breaks a tie
    /// by its map's order; here the tie goes to the candidate the leader
    /// (else the first member by id) prefers, so the choice is stable.
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(p) = m.vote(&candidates) {
                *votes.entry(p).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        let tied: BTreeSet<&str> = votes
            .iter()
            .filter(|(_, &n)| n == best)
            .map(|(p, _)| *p)
            .collect();
        let tie_breaker = self
            .leader
            .as_deref()
            .and_then(|l| self.members.get(l))
            .or_else(|| self.members.values().next())?;
        tie_breaker
            .protocols
            .iter()
            .map(|(p, _)| p.as_str())
            .find(|p| tied.contains(p))
            .map(str::to_owned)
    }

    /// Add a member (a join). The first member fixes the group's protocol
    /// type and becomes leader when there is none; a static member takes
    /// its `group.instance.id`.
    pub fn add_member(&mut self, member: Member) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(member.member_id.clone());
        }
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
        self.check_invariants();
    }

    /// Remove a member (leave, expiry). A leader that leaves hands the
    /// leadership to the first remaining member (Kafka picks any).
    pub fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let removed = self.members.remove(member_id)?;
        if let Some(instance) = &removed.group_instance_id {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        if self.leader.as_deref() == Some(member_id) {
            self.leader = self.members.keys().next().cloned();
        }
        if self.members.is_empty() {
            self.protocol_type = None;
        }
        self.check_invariants();
        Some(removed)
    }

    /// The join phase completed: a new generation with the protocol the
    /// members chose (Kafka's `initNextGeneration`). With no members the
    /// group goes to `Empty` with no protocol; otherwise to
    /// `CompletingRebalance`.
    pub fn init_next_generation(&mut self, now_ms: i64) -> Result<(), IllegalTransition> {
        let next = if self.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::CompletingRebalance
        };
        if !self.state.can_move_to(next) {
            return Err(IllegalTransition {
                from: self.state,
                to: next,
            });
        }
        self.generation = self.generation.wrapping_add(1);
        self.protocol = if self.members.is_empty() {
            None
        } else {
            self.select_protocol()
        };
        self.transition_to(next, now_ms)
    }

    /// Kafka's `validateCurrentMember`: a static member must be the one its
    /// `group.instance.id` maps to (else FENCED_INSTANCE_ID, an older
    /// instance), and the member must belong to the group (else
    /// UNKNOWN_MEMBER_ID).
    pub fn validate_current_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if let Some(instance) = group_instance_id {
            return match self.static_member(instance) {
                Some(current) if current != member_id => Err(ErrorCode::FENCED_INSTANCE_ID),
                Some(_) => Ok(()),
                None => Err(ErrorCode::UNKNOWN_MEMBER_ID),
            };
        }
        if self.members.contains_key(member_id) {
            Ok(())
        } else {
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        }
    }

    /// Whether an OffsetCommit (not transactional) may store its offsets
    /// now: Kafka's `validateOffsetCommit` and the state check of
    /// `doCommitOffsets`.
    /// - a `Dead` group: COORDINATOR_NOT_AVAILABLE (it is being removed);
    /// - generation -1 on an `Empty` group: a simple commit (the admin client
    ///   or a consumer without group management), allowed;
    /// - a member id, an instance id or a generation: the member must be
    ///   current ([`Self::validate_current_member`]) and the generation the
    ///   group's (else ILLEGAL_GENERATION);
    /// - otherwise only members may commit to a non-empty group
    ///   (UNKNOWN_MEMBER_ID);
    /// - a valid commit during `CompletingRebalance` gets
    ///   REBALANCE_IN_PROGRESS (the member must sync first).
    pub fn validate_offset_commit(
        &self,
        generation: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if self.state == GroupState::Dead {
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        }
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        if generation >= 0 || !member_id.is_empty() || group_instance_id.is_some() {
            self.validate_current_member(member_id, group_instance_id)?;
            if generation != self.generation {
                return Err(ErrorCode::ILLEGAL_GENERATION);
            }
        } else if self.state != GroupState::Empty {
            return Err(ErrorCode::UNKNOWN_MEMBER_ID);
        }
        match self.state {
            GroupState::CompletingRebalance => Err(ErrorCode::REBALANCE_IN_PROGRESS),
            _ => Ok(()),
        }
    }

    pub fn member_mut(&mut self, member_id: &str) -> Option<&mut Member> {
        self.members.get_mut(member_id)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn has_member(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader.as_deref() == Some(member_id)
    }

    /// The longest rebalance timeout of the members (Kafka's
    /// `GroupMetadata.rebalanceTimeoutMs`): how long a DelayedJoin waits.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// A static member rejoined with a new member id (KIP-345; Kafka's
    /// `replaceStaticMember`): the old id is gone (fenced), the member keeps
    /// its place, its assignment and the leadership if it had it. Returns
    /// false when `old_id` is not the instance's current member.
    pub fn replace_static_member(&mut self, instance: &str, old_id: &str, new_id: &str) -> bool {
        if self.static_members.get(instance).map(String::as_str) != Some(old_id) {
            return false;
        }
        let Some(mut member) = self.members.remove(old_id) else {
            return false;
        };
        member.member_id = new_id.to_owned();
        self.members.insert(new_id.to_owned(), member);
        self.static_members
            .insert(instance.to_owned(), new_id.to_owned());
        if self.leader.as_deref() == Some(old_id) {
            self.leader = Some(new_id.to_owned());
        }
        self.check_invariants();
        true
    }

    /// Rebuild a group from its stored record (Kafka's
    /// `GroupMetadata.loadGroup`): members and generation as written, the
    /// state `Stable` with members or `Empty` without (no transition: a
    /// loaded group starts in the state its record implies).
    pub fn restore(
        group_id: &str,
        stored: &crate::group::records::GroupMetadataValue,
        now_ms: i64,
    ) -> Self {
        let mut g = Group::new(group_id, now_ms);
        g.generation = stored.generation;
        for m in &stored.members {
            let protocol = stored.protocol.clone().unwrap_or_default();
            g.add_member(Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: stored.protocol_type.clone(),
                protocols: vec![(protocol, m.subscription.clone())],
                assignment: m.assignment.clone(),
            });
        }
        g.protocol_type = (!stored.protocol_type.is_empty()).then(|| stored.protocol_type.clone());
        if g.members.is_empty() {
            g.protocol = None;
            g.leader = None;
        } else {
            g.protocol = stored.protocol.clone();
            if let Some(l) = stored
                .leader
                .as_ref()
                .filter(|l| g.members.contains_key(*l))
            {
                g.leader = Some(l.clone());
            }
            g.state = GroupState::Stable;
        }
        if stored.current_state_timestamp_ms >= 0 {
            g.state_since_ms = stored.current_state_timestamp_ms;
        }
        g.check_invariants();
        g
    }

    /// The record Kafka writes for this group (`GroupMetadataManager
    /// .groupMetadataValue`): members with the chosen protocol's metadata.
    pub fn to_record(&self) -> crate::group::records::GroupMetadataValue {
        let protocol = self.protocol.as_deref();
        crate::group::records::GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp_ms: self.state_since_ms,
            members: self
                .members
                .values()
                .map(|m| crate::group::records::MemberMetadata {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: protocol
                        .and_then(|p| m.metadata_for(p))
                        .map(<[u8]>::to_vec)
                        .unwrap_or_default(),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// Invariants every `on_*`/mutation keeps; asserted in debug builds.
    pub fn check_invariants(&self) {
        debug_assert!(
            self.leader
                .as_deref()
                .is_none_or(|l| self.members.contains_key(l)),
            "the leader is a member"
        );
        debug_assert!(
            self.members.is_empty() == self.leader.is_none(),
            "a group with members has a leader"
        );
        debug_assert!(
            self.static_members
                .values()
                .all(|m| self.members.contains_key(m)),
            "static members are members"
        );
    }
}

#[cfg(test)]
mod tests;
