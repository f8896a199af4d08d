//! `[pure]` JoinGroup and the rebalance timers, as Kafka 3.9's
//! `GroupCoordinator` runs them (handleJoinGroup, doNewMemberJoinGroup,
//! doCurrentMemberJoinGroup, addMemberAndRebalance,
//! updateMemberAndRebalance, prepareRebalance, onCompleteJoin). SyncGroup,
//! Heartbeat, LeaveGroup and member expiry are `session`'s.

use super::runtime::{
    current_generation_answer, reset_and_propagate_assignment_error, schedule_heartbeat,
};
use super::{
    Action, Answer, Coordinator, Entry, InitialDelay, JoinAnswer, JoinRequest, JoinTimer,
    MemberRuntime, PendingAppend, StaticRejoin, SyncAnswer, Timer, WaiterId,
};
use crate::group::records::encode_group_metadata_key;
use crate::group::state::{GroupState, Member};
use crate::protocol::ErrorCode;

impl Coordinator {
    /// JoinGroup. The answer comes when the rebalance completes (or at
    /// once for errors, MEMBER_ID_REQUIRED, and members the current
    /// generation already knows).
    pub fn on_join(&mut self, waiter: WaiterId, req: JoinRequest, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        let reply = |out: &mut Vec<Action>, e: ErrorCode| {
            out.push(Action::Reply(
                waiter,
                Answer::Join(JoinAnswer::error(&req.member_id, e)),
            ));
        };
        // Kafka's isValidGroupId for JoinGroup: a non-empty id.
        if req.group_id.is_empty() {
            reply(&mut out, ErrorCode::INVALID_GROUP_ID);
            return out;
        }
        let partition = match self.check_coordinator(&req.group_id) {
            Ok(p) => p,
            Err(e) => {
                reply(&mut out, e);
                return out;
            }
        };
        if req.session_timeout_ms < self.config.min_session_timeout_ms
            || req.session_timeout_ms > self.config.max_session_timeout_ms
        {
            reply(&mut out, ErrorCode::INVALID_SESSION_TIMEOUT);
            return out;
        }
        let unknown = req.member_id.is_empty();
        if !unknown && !self.groups.contains_key(&req.group_id) {
            reply(&mut out, ErrorCode::UNKNOWN_MEMBER_ID);
            return out;
        }
        let max_size = usize::try_from(self.config.max_size).unwrap_or(usize::MAX);
        let entry = self.entry_or_new(&req.group_id, partition, now_ms);
        if !accepts_joining(entry, &req.member_id, max_size) {
            reply(&mut out, ErrorCode::GROUP_MAX_SIZE_REACHED);
            self.drop_if_unused(&req.group_id);
            return out;
        }
        if unknown {
            self.join_new_member(waiter, req, now_ms, &mut out);
        } else {
            self.join_current_member(waiter, req, now_ms, &mut out);
        }
        out
    }

    fn join_new_member(
        &mut self,
        waiter: WaiterId,
        req: JoinRequest,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let group_id = req.group_id.clone();
        let Some(entry) = self.groups.get_mut(&group_id) else {
            return;
        };
        let error = if entry.group.state() == GroupState::Dead {
            Some(ErrorCode::COORDINATOR_NOT_AVAILABLE)
        } else if !entry
            .group
            .supports_protocols(&req.protocol_type, &protocol_names(&req.protocols))
        {
            Some(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
        } else {
            None
        };
        if let Some(e) = error {
            out.push(Action::Reply(
                waiter,
                Answer::Join(JoinAnswer::error("", e)),
            ));
            self.drop_if_unused(&group_id);
            return;
        }
        let new_id = req.new_member_id.clone();
        if let Some(instance) = req.group_instance_id.clone() {
            match entry.group.static_member(&instance).map(str::to_owned) {
                Some(old_id) => {
                    self.rejoin_static_member(waiter, req, &instance, &old_id, now_ms, out)
                }
                None => self.add_member_and_rebalance(waiter, req, new_id, now_ms, out),
            }
        } else if req.require_known_member_id {
            // KIP-394: the member learns its id first and must come back
            // with it within the session timeout.
            let deadline = now_ms + i64::from(req.session_timeout_ms);
            entry.pending.insert(new_id.clone(), deadline);
            self.arm(
                deadline,
                Timer::Heartbeat {
                    group: group_id,
                    member: new_id.clone(),
                },
            );
            out.push(Action::Reply(
                waiter,
                Answer::Join(JoinAnswer::error(&new_id, ErrorCode::MEMBER_ID_REQUIRED)),
            ));
        } else {
            self.add_member_and_rebalance(waiter, req, new_id, now_ms, out);
        }
    }

    fn join_current_member(
        &mut self,
        waiter: WaiterId,
        req: JoinRequest,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.groups.get_mut(&req.group_id) else {
            return;
        };
        let member_id = req.member_id.clone();
        if entry.pending.contains_key(&member_id) {
            if req.group_instance_id.is_some() {
                // Kafka: a static member is never pending.
                out.push(Action::Reply(
                    waiter,
                    Answer::Join(JoinAnswer::error(&member_id, ErrorCode::UNKNOWN_MEMBER_ID)),
                ));
                return;
            }
            if !entry
                .group
                .supports_protocols(&req.protocol_type, &protocol_names(&req.protocols))
            {
                out.push(Action::Reply(
                    waiter,
                    Answer::Join(JoinAnswer::error(
                        &member_id,
                        ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
                    )),
                ));
                return;
            }
            self.add_member_and_rebalance(waiter, req, member_id, now_ms, out);
            return;
        }
        let error = match entry
            .group
            .validate_current_member(&member_id, req.group_instance_id.as_deref())
        {
            Err(e) => Some(e),
            Ok(()) if entry.group.state() == GroupState::Dead => {
                Some(ErrorCode::COORDINATOR_NOT_AVAILABLE)
            }
            Ok(())
                if !entry
                    .group
                    .supports_protocols(&req.protocol_type, &protocol_names(&req.protocols)) =>
            {
                Some(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
            }
            Ok(()) => None,
        };
        if let Some(e) = error {
            out.push(Action::Reply(
                waiter,
                Answer::Join(JoinAnswer::error(&member_id, e)),
            ));
            return;
        }
        let Some(member) = entry.group.member(&member_id) else {
            return;
        };
        let same = member.matches(&req.protocols);
        let is_leader = entry.group.is_leader(&member_id);
        match entry.group.state() {
            GroupState::PreparingRebalance => {
                self.update_member_and_rebalance(waiter, req, now_ms, out);
            }
            // The member missed its JoinGroup answer: the same one again.
            GroupState::CompletingRebalance if same => {
                let answer = current_generation_answer(entry, &member_id, is_leader, false);
                out.push(Action::Reply(waiter, Answer::Join(answer)));
            }
            // A follower with nothing new: the current generation, then
            // SyncGroup. The leader forces a rebalance (it may have seen
            // metadata change that the members' subscriptions do not show).
            GroupState::Stable if same && !is_leader => {
                let answer = current_generation_answer(entry, &member_id, false, false);
                out.push(Action::Reply(waiter, Answer::Join(answer)));
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(waiter, req, now_ms, out);
            }
            GroupState::Empty | GroupState::Dead => out.push(Action::Reply(
                waiter,
                Answer::Join(JoinAnswer::error(&member_id, ErrorCode::UNKNOWN_MEMBER_ID)),
            )),
        }
    }

    /// A static member rejoins under a new member id (Kafka's
    /// `updateStaticMemberAndRebalance`): the old id is fenced; in a stable
    /// group whose protocol would not change, no rebalance — the new id is
    /// stored and the member resumes the current generation.
    fn rejoin_static_member(
        &mut self,
        waiter: WaiterId,
        req: JoinRequest,
        instance: &str,
        old_id: &str,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let group_id = req.group_id.clone();
        let new_id = req.new_member_id.clone();
        let Some(entry) = self.groups.get_mut(&group_id) else {
            return;
        };
        let Some(old_protocols) = entry.group.member(old_id).map(|m| m.protocols.clone()) else {
            return;
        };
        let leader_before = entry.group.leader.clone().unwrap_or_default();
        if !entry.group.replace_static_member(instance, old_id, &new_id) {
            return;
        }
        // Whatever the old id was waiting for is fenced.
        let mut rt = entry.runtime.remove(old_id).unwrap_or_default();
        if let Some(w) = rt.join_waiter.take() {
            let a = JoinAnswer::error(old_id, ErrorCode::FENCED_INSTANCE_ID);
            out.push(Action::Reply(w, Answer::Join(a)));
        }
        if let Some(w) = rt.sync_waiter.take() {
            out.push(Action::Reply(
                w,
                Answer::Sync(SyncAnswer::error(ErrorCode::FENCED_INSTANCE_ID)),
            ));
        }
        entry.runtime.insert(new_id.clone(), rt);
        update_member(entry, &new_id, &req);
        let heartbeat = schedule_heartbeat(entry, &new_id, now_ms);
        self.arm_heartbeat(&group_id, &new_id, heartbeat);
        let Some(entry) = self.groups.get_mut(&group_id) else {
            return;
        };
        match entry.group.state() {
            GroupState::Stable
                if entry.group.select_protocol().as_deref() == entry.group.protocol.as_deref() =>
            {
                let record = entry.group.to_record().encode();
                let partition = entry.partition;
                self.append(
                    partition,
                    vec![(encode_group_metadata_key(&group_id), Some(record))],
                    PendingAppend::StaticRejoin {
                        group: group_id,
                        waiter,
                        instance: instance.to_owned(),
                        old_id: old_id.to_owned(),
                        new_id,
                        old_protocols,
                        leader_before,
                        skip_supported: req.supports_skip_assignment,
                    },
                    out,
                );
            }
            GroupState::PreparingRebalance => {
                set_join_waiter(entry, &new_id, waiter);
                self.try_complete_join(&group_id, now_ms, out);
            }
            _ => {
                set_join_waiter(entry, &new_id, waiter);
                self.maybe_prepare_rebalance(&group_id, now_ms, out);
            }
        }
    }

    pub(super) fn finish_static_rejoin(
        &mut self,
        group_id: &str,
        r: StaticRejoin,
        error: ErrorCode,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.groups.get_mut(group_id) else {
            out.push(Action::Reply(
                r.waiter,
                Answer::Join(JoinAnswer::error(&r.new_id, ErrorCode::NOT_COORDINATOR)),
            ));
            return;
        };
        if error != ErrorCode::NONE {
            // Kafka reverts the replacement and answers UNKNOWN_MEMBER_ID's
            // place with the store error.
            if entry
                .group
                .replace_static_member(&r.instance, &r.new_id, &r.old_id)
            {
                if let Some(m) = entry.group.member_mut(&r.old_id) {
                    m.protocols = r.old_protocols;
                }
                if let Some(rt) = entry.runtime.remove(&r.new_id) {
                    entry.runtime.insert(r.old_id.clone(), rt);
                }
            }
            out.push(Action::Reply(
                r.waiter,
                Answer::Join(JoinAnswer::error(&r.new_id, error)),
            ));
            return;
        }
        let is_leader = entry.group.is_leader(&r.new_id);
        let answer = if r.skip_supported {
            // KIP-814: the leader learns it leads and must not reassign.
            current_generation_answer(entry, &r.new_id, is_leader, is_leader)
        } else {
            // An older member: Kafka answers with the leader as it was
            // (the old member id), so a rejoining leader does not take
            // itself for the leader and run an assignment a stable group
            // would never hand out.
            let mut a = current_generation_answer(entry, &r.new_id, false, false);
            a.leader = r.leader_before;
            a
        };
        out.push(Action::Reply(r.waiter, Answer::Join(answer)));
    }

    /// Kafka's `addMemberAndRebalance`.
    fn add_member_and_rebalance(
        &mut self,
        waiter: WaiterId,
        req: JoinRequest,
        member_id: String,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let group_id = req.group_id.clone();
        let new_member_timeout = self.config.new_member_join_timeout_ms;
        let Some(entry) = self.groups.get_mut(&group_id) else {
            return;
        };
        entry.pending.remove(&member_id);
        if entry.group.state() == GroupState::PreparingRebalance && entry.group.generation == 0 {
            entry.new_member_added = true;
        }
        entry.group.add_member(Member {
            member_id: member_id.clone(),
            group_instance_id: req.group_instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type.clone(),
            protocols: req.protocols.clone(),
            assignment: Vec::new(),
        });
        // A parked JoinGroup cannot heartbeat, and a new member's id is not
        // known to it yet: Kafka bounds its wait by NewMemberJoinTimeoutMs.
        let deadline = now_ms + new_member_timeout;
        entry.runtime.insert(
            member_id.clone(),
            MemberRuntime {
                join_waiter: Some(waiter),
                sync_waiter: None,
                is_new: true,
                last_heartbeat_ms: now_ms,
                heartbeat_deadline: deadline,
            },
        );
        self.arm_heartbeat(&group_id, &member_id, deadline);
        self.maybe_prepare_rebalance(&group_id, now_ms, out);
        self.try_complete_join(&group_id, now_ms, out);
    }

    /// Kafka's `updateMemberAndRebalance`: new protocols, the JoinGroup
    /// parked until the rebalance completes.
    fn update_member_and_rebalance(
        &mut self,
        waiter: WaiterId,
        req: JoinRequest,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.groups.get_mut(&req.group_id) else {
            return;
        };
        update_member(entry, &req.member_id, &req);
        if let Some(old) = set_join_waiter(entry, &req.member_id, waiter) {
            // A second JoinGroup replaces the first (the client gave up on it).
            let a = JoinAnswer::error(&req.member_id, ErrorCode::REBALANCE_IN_PROGRESS);
            out.push(Action::Reply(old, Answer::Join(a)));
        }
        self.maybe_prepare_rebalance(&req.group_id, now_ms, out);
        self.try_complete_join(&req.group_id, now_ms, out);
    }

    /// Kafka's `maybePrepareRebalance`: only from a state that can
    /// rebalance (Stable, CompletingRebalance, Empty).
    pub(super) fn maybe_prepare_rebalance(
        &mut self,
        group_id: &str,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.groups.get_mut(group_id) else {
            return;
        };
        let state = entry.group.state();
        if !matches!(
            state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            return;
        }
        if state == GroupState::CompletingRebalance {
            // Members waiting for SyncGroup must rejoin.
            reset_and_propagate_assignment_error(entry, ErrorCode::REBALANCE_IN_PROGRESS, out);
        }
        let rebalance_timeout = i64::from(entry.group.rebalance_timeout_ms());
        let timer = if state == GroupState::Empty {
            let delay = i64::from(self.config.initial_rebalance_delay_ms);
            JoinTimer {
                deadline: now_ms + delay,
                initial: Some(InitialDelay {
                    delay_ms: delay,
                    remaining_ms: (rebalance_timeout - delay).max(0),
                }),
            }
        } else {
            JoinTimer {
                deadline: now_ms + rebalance_timeout,
                initial: None,
            }
        };
        if entry
            .group
            .transition_to(GroupState::PreparingRebalance, now_ms)
            .is_err()
        {
            return;
        }
        entry.join_timer = Some(timer);
        entry.new_member_added = false;
        self.arm(
            timer.deadline,
            Timer::Join {
                group: group_id.to_owned(),
            },
        );
    }

    /// A DelayedJoin completes early once every member rejoined and no
    /// member is pending (`hasAllMembersJoined`); an InitialDelayedJoin
    /// never does.
    pub(super) fn try_complete_join(&mut self, group_id: &str, now_ms: i64, out: &mut Vec<Action>) {
        let Some(entry) = self.groups.get(group_id) else {
            return;
        };
        if entry.group.state() != GroupState::PreparingRebalance {
            return;
        }
        let Some(timer) = entry.join_timer else {
            return;
        };
        if timer.initial.is_some() {
            return;
        }
        let all_joined = entry.pending.is_empty()
            && entry.group.members().all(|m| {
                entry
                    .runtime
                    .get(&m.member_id)
                    .is_some_and(|r| r.join_waiter.is_some())
            });
        if all_joined {
            self.complete_join(group_id, now_ms, out);
        }
    }

    pub(super) fn on_join_deadline(
        &mut self,
        group_id: &str,
        deadline: i64,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.groups.get_mut(group_id) else {
            return;
        };
        let Some(timer) = entry.join_timer else {
            return;
        };
        if timer.deadline != deadline || entry.group.state() != GroupState::PreparingRebalance {
            return;
        }
        if let Some(initial) = timer.initial {
            // Kafka's InitialDelayedJoin.onComplete: more members came
            // during the delay and time is left: wait another delay.
            if entry.new_member_added && initial.remaining_ms > 0 {
                let delay = initial.delay_ms.min(initial.remaining_ms);
                let next = JoinTimer {
                    deadline: now_ms + delay,
                    initial: Some(InitialDelay {
                        delay_ms: initial.delay_ms,
                        remaining_ms: (initial.remaining_ms - delay).max(0),
                    }),
                };
                entry.new_member_added = false;
                entry.join_timer = Some(next);
                self.arm(
                    next.deadline,
                    Timer::Join {
                        group: group_id.to_owned(),
                    },
                );
                return;
            }
        }
        self.complete_join(group_id, now_ms, out);
    }

    /// Kafka's `onCompleteJoin`: members that did not rejoin leave (static
    /// ones stay), a new generation starts and every waiting member gets
    /// its JoinGroup answer — the leader with everyone's metadata.
    fn complete_join(&mut self, group_id: &str, now_ms: i64, out: &mut Vec<Action>) {
        let Some(entry) = self.groups.get_mut(group_id) else {
            return;
        };
        entry.join_timer = None;
        let not_rejoined: Vec<String> = entry
            .group
            .members()
            .filter(|m| m.group_instance_id.is_none())
            .filter(|m| {
                entry
                    .runtime
                    .get(&m.member_id)
                    .is_none_or(|r| r.join_waiter.is_none())
            })
            .map(|m| m.member_id.clone())
            .collect();
        for m in &not_rejoined {
            tracing::debug!(group = group_id, member = %m, "member did not rejoin in time: removed");
            entry.group.remove_member(m);
            entry.runtime.remove(m);
        }
        if entry.group.state() == GroupState::Dead {
            return;
        }
        if entry.group.init_next_generation(now_ms).is_err() {
            return;
        }
        let partition = entry.partition;
        if entry.group.is_empty() {
            // Kafka stores the empty group (its generation bump).
            let record = entry.group.to_record().encode();
            self.append(
                partition,
                vec![(encode_group_metadata_key(group_id), Some(record))],
                PendingAppend::Quiet,
                out,
            );
            return;
        }
        let members: Vec<String> = entry.group.members().map(|m| m.member_id.clone()).collect();
        let mut heartbeats = Vec::new();
        for member_id in members {
            let is_leader = entry.group.is_leader(&member_id);
            let answer = current_generation_answer(entry, &member_id, is_leader, false);
            let Some(rt) = entry.runtime.get_mut(&member_id) else {
                continue;
            };
            if let Some(w) = rt.join_waiter.take() {
                out.push(Action::Reply(w, Answer::Join(answer)));
            }
            rt.is_new = false;
            heartbeats.push((
                member_id.clone(),
                schedule_heartbeat(entry, &member_id, now_ms),
            ));
        }
        for (member_id, at) in heartbeats {
            self.arm_heartbeat(group_id, &member_id, at);
        }
    }
}

fn protocol_names(protocols: &[(String, Vec<u8>)]) -> Vec<String> {
    protocols.iter().map(|(p, _)| p.clone()).collect()
}

/// New protocols and timeouts for a rejoining member (Kafka's
/// `GroupMetadata.updateMember`).
fn update_member(entry: &mut Entry, member_id: &str, req: &JoinRequest) {
    if let Some(m) = entry.group.member_mut(member_id) {
        m.protocols.clone_from(&req.protocols);
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        m.session_timeout_ms = req.session_timeout_ms;
    }
}

/// Park `waiter` as the member's JoinGroup; returns the one it replaced.
fn set_join_waiter(entry: &mut Entry, member_id: &str, waiter: WaiterId) -> Option<WaiterId> {
    entry
        .runtime
        .entry(member_id.to_owned())
        .or_default()
        .join_waiter
        .replace(waiter)
}

/// Kafka's `GroupCoordinator.acceptJoiningMember` (`group.max.size`,
/// KIP-389): an Empty or Dead group takes anyone; while it prepares a
/// rebalance, a member already waiting in it, or anyone while fewer than
/// the maximum wait; otherwise a member of it, or anyone while it has
/// fewer members than the maximum. Members still to learn their id
/// (KIP-394) are not members yet and do not count.
fn accepts_joining(entry: &Entry, member_id: &str, max_size: usize) -> bool {
    let awaiting = |id: &str| {
        entry
            .runtime
            .get(id)
            .is_some_and(|r| r.join_waiter.is_some())
    };
    match entry.group.state() {
        GroupState::Empty | GroupState::Dead => true,
        GroupState::PreparingRebalance => {
            (entry.group.has_member(member_id) && awaiting(member_id))
                || entry
                    .group
                    .members()
                    .filter(|m| awaiting(&m.member_id))
                    .count()
                    < max_size
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            entry.group.has_member(member_id) || entry.group.len() < max_size
        }
    }
}
