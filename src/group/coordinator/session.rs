//! `[pure]` SyncGroup, Heartbeat, LeaveGroup and the expiry of members
//! that stop heartbeating, as Kafka 3.9's `GroupCoordinator` runs them
//! (handleSyncGroup, handleHeartbeat, handleLeaveGroup,
//! removeMemberAndUpdateGroup, onExpireHeartbeat / onMemberFailure).

use std::collections::BTreeMap;

use super::runtime::{reply_sync_error, reset_and_propagate_assignment_error, schedule_heartbeat};
use super::{
    Action, Answer, Coordinator, Entry, HeartbeatRequest, JoinAnswer, LeaveAnswer, LeaveRequest,
    PendingAppend, SyncAnswer, SyncRequest, Timer, WaiterId,
};
use crate::group::records::encode_group_metadata_key;
use crate::group::state::GroupState;
use crate::protocol::ErrorCode;

impl Coordinator {
    /// SyncGroup: the leader's assignment is stored, then every member gets
    /// its part; a follower waits for it.
    pub fn on_sync(&mut self, waiter: WaiterId, req: SyncRequest, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        let reply = |out: &mut Vec<Action>, e: ErrorCode| {
            out.push(Action::Reply(waiter, Answer::Sync(SyncAnswer::error(e))));
        };
        if let Err(e) = self.check_coordinator(&req.group_id) {
            reply(&mut out, e);
            return out;
        }
        let Some(entry) = self.groups.get_mut(&req.group_id) else {
            reply(&mut out, ErrorCode::UNKNOWN_MEMBER_ID);
            return out;
        };
        if let Err(e) = validate_sync(entry, &req) {
            reply(&mut out, e);
            return out;
        }
        match entry.group.state() {
            GroupState::Empty => reply(&mut out, ErrorCode::UNKNOWN_MEMBER_ID),
            GroupState::PreparingRebalance => reply(&mut out, ErrorCode::REBALANCE_IN_PROGRESS),
            GroupState::Dead => reply(&mut out, ErrorCode::COORDINATOR_NOT_AVAILABLE),
            GroupState::CompletingRebalance => {
                let rt = entry.runtime.entry(req.member_id.clone()).or_default();
                if let Some(old) = rt.sync_waiter.replace(waiter) {
                    reply_sync_error(old, ErrorCode::REBALANCE_IN_PROGRESS, &mut out);
                }
                if entry.group.is_leader(&req.member_id) {
                    let mut assignments: BTreeMap<String, Vec<u8>> = entry
                        .group
                        .members()
                        .map(|m| (m.member_id.clone(), Vec::new()))
                        .collect();
                    for (m, a) in req.assignments {
                        // Kafka keeps only members of the group.
                        if let Some(slot) = assignments.get_mut(&m) {
                            *slot = a;
                        }
                    }
                    let mut stored = entry.group.to_record();
                    for m in &mut stored.members {
                        m.assignment = assignments.get(&m.member_id).cloned().unwrap_or_default();
                    }
                    let partition = entry.partition;
                    let generation = entry.group.generation;
                    self.append(
                        partition,
                        vec![(
                            encode_group_metadata_key(&req.group_id),
                            Some(stored.encode()),
                        )],
                        PendingAppend::SyncStore {
                            group: req.group_id,
                            generation,
                            assignments,
                        },
                        &mut out,
                    );
                }
            }
            GroupState::Stable => {
                let answer = SyncAnswer {
                    error: ErrorCode::NONE,
                    protocol_type: entry.group.protocol_type.clone(),
                    protocol_name: entry.group.protocol.clone(),
                    assignment: entry
                        .group
                        .member(&req.member_id)
                        .map(|m| m.assignment.clone())
                        .unwrap_or_default(),
                };
                out.push(Action::Reply(waiter, Answer::Sync(answer)));
                let at = schedule_heartbeat(entry, &req.member_id, now_ms);
                self.arm_heartbeat(&req.group_id, &req.member_id, at);
            }
        }
        out
    }

    pub(super) fn finish_sync_store(
        &mut self,
        group_id: &str,
        generation: i32,
        assignments: BTreeMap<String, Vec<u8>>,
        error: ErrorCode,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.groups.get_mut(group_id) else {
            return;
        };
        // Another member may have joined meanwhile: only the same
        // generation, still completing, takes the assignment.
        if entry.group.state() != GroupState::CompletingRebalance
            || entry.group.generation != generation
        {
            return;
        }
        if error != ErrorCode::NONE {
            reset_and_propagate_assignment_error(entry, error, out);
            self.maybe_prepare_rebalance(group_id, now_ms, out);
            return;
        }
        for (member_id, assignment) in &assignments {
            if let Some(m) = entry.group.member_mut(member_id) {
                m.assignment.clone_from(assignment);
            }
        }
        let protocol_type = entry.group.protocol_type.clone();
        let protocol_name = entry.group.protocol.clone();
        let mut heartbeats = Vec::new();
        for (member_id, rt) in &mut entry.runtime {
            if let Some(w) = rt.sync_waiter.take() {
                let answer = SyncAnswer {
                    error: ErrorCode::NONE,
                    protocol_type: protocol_type.clone(),
                    protocol_name: protocol_name.clone(),
                    assignment: assignments.get(member_id).cloned().unwrap_or_default(),
                };
                out.push(Action::Reply(w, Answer::Sync(answer)));
                heartbeats.push(member_id.clone());
            }
        }
        let _ = entry.group.transition_to(GroupState::Stable, now_ms);
        let mut armed = Vec::new();
        for m in heartbeats {
            armed.push((m.clone(), schedule_heartbeat(entry, &m, now_ms)));
        }
        for (m, at) in armed {
            self.arm_heartbeat(group_id, &m, at);
        }
    }

    /// Heartbeat (Kafka's `handleHeartbeat`).
    pub fn on_heartbeat(
        &mut self,
        waiter: WaiterId,
        req: HeartbeatRequest,
        now_ms: i64,
    ) -> Vec<Action> {
        let error = self.heartbeat(&req, now_ms);
        vec![Action::Reply(waiter, Answer::Heartbeat(error))]
    }

    fn heartbeat(&mut self, req: &HeartbeatRequest, now_ms: i64) -> ErrorCode {
        if let Err(e) = self.check_coordinator(&req.group_id) {
            return e;
        }
        let Some(entry) = self.groups.get_mut(&req.group_id) else {
            return ErrorCode::UNKNOWN_MEMBER_ID;
        };
        if entry.group.state() == GroupState::Dead {
            return ErrorCode::COORDINATOR_NOT_AVAILABLE;
        }
        if let Err(e) = entry
            .group
            .validate_current_member(&req.member_id, req.group_instance_id.as_deref())
        {
            return e;
        }
        if req.generation != entry.group.generation {
            return ErrorCode::ILLEGAL_GENERATION;
        }
        let error = match entry.group.state() {
            GroupState::Empty => return ErrorCode::UNKNOWN_MEMBER_ID,
            GroupState::PreparingRebalance => ErrorCode::REBALANCE_IN_PROGRESS,
            _ => ErrorCode::NONE,
        };
        let at = schedule_heartbeat(entry, &req.member_id, now_ms);
        self.arm_heartbeat(&req.group_id, &req.member_id, at);
        error
    }

    /// LeaveGroup (Kafka's `handleLeaveGroup`): each member leaves; the
    /// group rebalances without them.
    pub fn on_leave(&mut self, waiter: WaiterId, req: LeaveRequest, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        let answer = self.leave(&req, now_ms, &mut out);
        out.push(Action::Reply(waiter, Answer::Leave(answer)));
        out
    }

    fn leave(&mut self, req: &LeaveRequest, now_ms: i64, out: &mut Vec<Action>) -> LeaveAnswer {
        let all = |e: ErrorCode| -> Vec<(String, Option<String>, ErrorCode)> {
            req.members
                .iter()
                .map(|(m, i)| (m.clone(), i.clone(), e))
                .collect()
        };
        if let Err(e) = self.check_coordinator(&req.group_id) {
            return LeaveAnswer {
                error: e,
                members: Vec::new(),
            };
        }
        let Some(entry) = self.groups.get(&req.group_id) else {
            return LeaveAnswer {
                error: ErrorCode::NONE,
                members: all(ErrorCode::UNKNOWN_MEMBER_ID),
            };
        };
        if entry.group.state() == GroupState::Dead {
            return LeaveAnswer {
                error: ErrorCode::COORDINATOR_NOT_AVAILABLE,
                members: Vec::new(),
            };
        }
        let mut results = Vec::with_capacity(req.members.len());
        for (member_id, instance) in &req.members {
            let error = self.leave_one(&req.group_id, member_id, instance.as_deref(), now_ms, out);
            results.push((member_id.clone(), instance.clone(), error));
        }
        LeaveAnswer {
            error: ErrorCode::NONE,
            members: results,
        }
    }

    fn leave_one(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) -> ErrorCode {
        let Some(entry) = self.groups.get_mut(group_id) else {
            return ErrorCode::UNKNOWN_MEMBER_ID;
        };
        let target = match instance {
            Some(i) => match entry.group.static_member(i) {
                // A static member may leave by instance id alone.
                Some(current) if member_id.is_empty() || current == member_id => current.to_owned(),
                Some(_) => return ErrorCode::FENCED_INSTANCE_ID,
                None => return ErrorCode::UNKNOWN_MEMBER_ID,
            },
            None if entry.pending.remove(member_id).is_some() => {
                self.try_complete_join(group_id, now_ms, out);
                return ErrorCode::NONE;
            }
            None if entry.group.has_member(member_id) => member_id.to_owned(),
            None => return ErrorCode::UNKNOWN_MEMBER_ID,
        };
        self.remove_member_and_update_group(group_id, &target, now_ms, out);
        ErrorCode::NONE
    }

    /// Kafka's `removeMemberAndUpdateGroup`.
    fn remove_member_and_update_group(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.groups.get_mut(group_id) else {
            return;
        };
        if let Some(rt) = entry.runtime.remove(member_id) {
            if let Some(w) = rt.join_waiter {
                let a = JoinAnswer::error(member_id, ErrorCode::UNKNOWN_MEMBER_ID);
                out.push(Action::Reply(w, Answer::Join(a)));
            }
            if let Some(w) = rt.sync_waiter {
                reply_sync_error(w, ErrorCode::UNKNOWN_MEMBER_ID, out);
            }
        }
        entry.group.remove_member(member_id);
        match entry.group.state() {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(group_id, now_ms, out);
            }
            GroupState::PreparingRebalance => self.try_complete_join(group_id, now_ms, out),
        }
    }

    pub(super) fn on_heartbeat_deadline(
        &mut self,
        group_id: &str,
        member_id: &str,
        deadline: i64,
        now_ms: i64,
        out: &mut Vec<Action>,
    ) {
        let new_member_timeout = self.config.new_member_join_timeout_ms;
        let Some(entry) = self.groups.get_mut(group_id) else {
            return;
        };
        if entry.pending.get(member_id) == Some(&deadline) {
            // A pending member never came back (Kafka's
            // removePendingMemberAndUpdateGroup).
            entry.pending.remove(member_id);
            self.try_complete_join(group_id, now_ms, out);
            self.drop_if_unused(group_id);
            return;
        }
        let Some(rt) = entry.runtime.get(member_id) else {
            return;
        };
        if rt.heartbeat_deadline != deadline {
            return;
        }
        let Some(member) = entry.group.member(member_id) else {
            return;
        };
        // Kafka's `MemberMetadata.shouldKeepAlive`.
        let keep = if rt.join_waiter.is_some() {
            !rt.is_new || rt.last_heartbeat_ms + new_member_timeout > deadline
        } else if rt.sync_waiter.is_some() {
            true
        } else {
            rt.last_heartbeat_ms + i64::from(member.session_timeout_ms) > deadline
        };
        if keep {
            return;
        }
        tracing::debug!(
            group = group_id,
            member = member_id,
            "session timeout: member removed"
        );
        self.remove_member_and_update_group(group_id, member_id, now_ms, out);
    }

    pub(super) fn arm_heartbeat(&mut self, group_id: &str, member_id: &str, at: i64) {
        self.arm(
            at,
            Timer::Heartbeat {
                group: group_id.to_owned(),
                member: member_id.to_owned(),
            },
        );
    }

    /// A group with no member, pending member or offset is forgotten.
    pub(super) fn drop_if_unused(&mut self, group_id: &str) {
        let unused = self.groups.get(group_id).is_some_and(|e| {
            e.group.is_empty()
                && e.pending.is_empty()
                && e.offsets.is_empty()
                && e.group.state() == GroupState::Empty
                && e.group.generation == 0
        });
        if unused {
            self.groups.remove(group_id);
        }
    }
}

/// Kafka's `validateSyncGroup`.
fn validate_sync(entry: &Entry, req: &SyncRequest) -> Result<(), ErrorCode> {
    let g = &entry.group;
    if g.state() == GroupState::Dead {
        return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    g.validate_current_member(&req.member_id, req.group_instance_id.as_deref())?;
    if req.generation != g.generation {
        return Err(ErrorCode::ILLEGAL_GENERATION);
    }
    if req
        .protocol_type
        .as_ref()
        .is_some_and(|t| g.protocol_type.as_ref() != Some(t))
        || req
            .protocol_name
            .as_ref()
            .is_some_and(|n| g.protocol.as_ref() != Some(n))
    {
        return Err(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
    }
    Ok(())
}
