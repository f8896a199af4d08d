//! `[pure]` What JoinGroup and SyncGroup both do to a group's members:
//! schedule a heartbeat, answer with the current generation, send members
//! back to rejoin.

use super::{Action, Answer, Entry, JoinAnswer, JoinedMember, SyncAnswer, WaiterId};
use crate::protocol::ErrorCode;

/// A heartbeat now: the member's next deadline, session timeout ahead
/// (Kafka's `completeAndScheduleNextHeartbeatExpiration`).
pub(super) fn schedule_heartbeat(entry: &mut Entry, member_id: &str, now_ms: i64) -> i64 {
    let session = entry
        .group
        .member(member_id)
        .map_or(0, |m| i64::from(m.session_timeout_ms));
    let rt = entry.runtime.entry(member_id.to_owned()).or_default();
    rt.last_heartbeat_ms = now_ms;
    rt.heartbeat_deadline = now_ms + session;
    rt.heartbeat_deadline
}

/// The JoinGroup answer for the current generation; the leader gets every
/// member's metadata for the chosen protocol.
pub(super) fn current_generation_answer(
    entry: &Entry,
    member_id: &str,
    with_members: bool,
    skip_assignment: bool,
) -> JoinAnswer {
    let g = &entry.group;
    let protocol = g.protocol.clone().unwrap_or_default();
    let members = if with_members {
        g.members()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m
                    .metadata_for(&protocol)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default(),
            })
            .collect()
    } else {
        Vec::new()
    };
    JoinAnswer {
        error: ErrorCode::NONE,
        generation: g.generation,
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol.clone(),
        leader: g.leader.clone().unwrap_or_default(),
        skip_assignment,
        member_id: member_id.to_owned(),
        members,
    }
}

pub(super) fn reply_sync_error(waiter: WaiterId, e: ErrorCode, out: &mut Vec<Action>) {
    out.push(Action::Reply(waiter, Answer::Sync(SyncAnswer::error(e))));
}

/// Kafka's `resetAndPropagateAssignmentError`: assignments cleared, every
/// parked SyncGroup answered with `error`.
pub(super) fn reset_and_propagate_assignment_error(
    entry: &mut Entry,
    error: ErrorCode,
    out: &mut Vec<Action>,
) {
    let ids: Vec<String> = entry.group.members().map(|m| m.member_id.clone()).collect();
    for id in ids {
        if let Some(m) = entry.group.member_mut(&id) {
            m.assignment.clear();
        }
    }
    for rt in entry.runtime.values_mut() {
        if let Some(w) = rt.sync_waiter.take() {
            reply_sync_error(w, error, out);
        }
    }
}
