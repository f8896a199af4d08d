//! `[pure]` Scenario tests of the coordinator: the rebalance protocol as
//! Kafka's GroupCoordinator runs it, step by step with explicit time.

use std::collections::BTreeMap;

use super::*;
use crate::group::records::{encode_group_metadata_key, OffsetCommitValue, RecordKey};
use crate::group::state::GroupState::*;

const SESSION: i32 = 10_000;
const REBALANCE: i32 = 30_000;

/// A coordinator owning every partition, with replies and appends kept.
struct Harness {
    c: Coordinator,
    now: i64,
    next_waiter: WaiterId,
    replies: BTreeMap<WaiterId, Answer>,
    /// Appends not yet acknowledged: (partition, records, token).
    appends: Vec<(i32, Records, u64)>,
    /// Acknowledge appends at once with this result.
    auto_ack: Option<ErrorCode>,
    ids: u32,
}

impl Harness {
    fn new() -> Self {
        let config = GroupConfig {
            initial_rebalance_delay_ms: 3000,
            ..GroupConfig::default()
        };
        let mut c = Coordinator::new(config, 4);
        for p in 0..4 {
            c.begin_load(p);
            c.finish_load(p, 0);
        }
        Self {
            c,
            now: 0,
            next_waiter: 0,
            replies: BTreeMap::new(),
            appends: Vec::new(),
            auto_ack: Some(ErrorCode::NONE),
            ids: 0,
        }
    }

    fn run(&mut self, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Reply(w, answer) => {
                    assert!(
                        self.replies.insert(w, answer).is_none(),
                        "waiter {w} answered twice"
                    );
                }
                Action::Append {
                    partition,
                    records,
                    token,
                    ..
                } => match self.auto_ack {
                    Some(result) => {
                        self.appends.push((partition, records, token));
                        let more = self.c.on_appended(token, result, self.now);
                        self.run(more);
                    }
                    None => self.appends.push((partition, records, token)),
                },
            }
        }
    }

    fn waiter(&mut self) -> WaiterId {
        self.next_waiter += 1;
        self.next_waiter
    }

    fn advance(&mut self, ms: i64) {
        self.now += ms;
        let actions = self.c.on_timer(self.now);
        self.run(actions);
    }

    fn join_req(
        &mut self,
        group: &str,
        member: &str,
        instance: Option<&str>,
        protocols: &[(&str, &[u8])],
    ) -> JoinRequest {
        self.ids += 1;
        JoinRequest {
            group_id: group.into(),
            member_id: member.into(),
            group_instance_id: instance.map(str::to_owned),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: SESSION,
            rebalance_timeout_ms: REBALANCE,
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|(n, m)| ((*n).to_owned(), m.to_vec()))
                .collect(),
            require_known_member_id: true,
            supports_skip_assignment: true,
            new_member_id: format!("client-{}", self.ids),
        }
    }

    /// Send a JoinGroup; returns its waiter.
    fn join(&mut self, req: JoinRequest) -> WaiterId {
        let w = self.waiter();
        let actions = self.c.on_join(w, req, self.now);
        self.run(actions);
        w
    }

    fn answer(&self, w: WaiterId) -> Option<&Answer> {
        self.replies.get(&w)
    }

    fn join_answer(&self, w: WaiterId) -> JoinAnswer {
        match self.answer(w) {
            Some(Answer::Join(a)) => a.clone(),
            other => panic!("waiter {w}: no join answer, got {other:?}"),
        }
    }

    fn sync_answer(&self, w: WaiterId) -> SyncAnswer {
        match self.answer(w) {
            Some(Answer::Sync(a)) => a.clone(),
            other => panic!("waiter {w}: no sync answer, got {other:?}"),
        }
    }

    /// A new dynamic member joins (MEMBER_ID_REQUIRED, then again with
    /// its id); returns (member id, waiter of the second join).
    fn new_member(&mut self, group: &str, protocols: &[(&str, &[u8])]) -> (String, WaiterId) {
        let req = self.join_req(group, "", None, protocols);
        let w = self.join(req);
        let a = self.join_answer(w);
        assert_eq!(a.error, ErrorCode::MEMBER_ID_REQUIRED);
        let id = a.member_id;
        let req = self.join_req(group, &id, None, protocols);
        (id.clone(), self.join(req))
    }

    fn sync(
        &mut self,
        group: &str,
        generation: i32,
        member: &str,
        assignments: &[(&str, &[u8])],
    ) -> WaiterId {
        let w = self.waiter();
        let req = SyncRequest {
            group_id: group.into(),
            generation,
            member_id: member.into(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: None,
            assignments: assignments
                .iter()
                .map(|(m, a)| ((*m).to_owned(), a.to_vec()))
                .collect(),
        };
        let actions = self.c.on_sync(w, req, self.now);
        self.run(actions);
        w
    }

    fn heartbeat(
        &mut self,
        group: &str,
        generation: i32,
        member: &str,
        instance: Option<&str>,
    ) -> ErrorCode {
        let w = self.waiter();
        let req = HeartbeatRequest {
            group_id: group.into(),
            generation,
            member_id: member.into(),
            group_instance_id: instance.map(str::to_owned),
        };
        let actions = self.c.on_heartbeat(w, req, self.now);
        self.run(actions);
        match self.answer(w) {
            Some(Answer::Heartbeat(e)) => *e,
            other => panic!("no heartbeat answer: {other:?}"),
        }
    }

    fn commit(
        &mut self,
        group: &str,
        generation: i32,
        member: &str,
        parts: &[(&str, i32, i64)],
    ) -> WaiterId {
        let w = self.waiter();
        let req = CommitRequest {
            txn: None,
            group_id: group.into(),
            generation,
            member_id: member.into(),
            group_instance_id: None,
            retention_ms: -1,
            partitions: parts
                .iter()
                .map(|(t, p, o)| CommitPartition {
                    topic: (*t).into(),
                    partition: *p,
                    offset: *o,
                    leader_epoch: 3,
                    metadata: Some("m".into()),
                    commit_timestamp_ms: -1,
                })
                .collect(),
        };
        let actions = self.c.on_commit(w, req, self.now);
        self.run(actions);
        w
    }

    fn fetch(&mut self, group: &str, parts: Option<Vec<(String, i32)>>) -> FetchAnswer {
        let w = self.waiter();
        let actions = self.c.on_fetch(
            w,
            FetchRequest {
                require_stable: false,
                group_id: group.into(),
                partitions: parts,
            },
        );
        self.run(actions);
        match self.answer(w) {
            Some(Answer::Fetch(a)) => a.clone(),
            other => panic!("no fetch answer: {other:?}"),
        }
    }

    /// A stable one-member group: (member id, generation).
    fn stable_single(&mut self, group: &str) -> (String, i32) {
        let (id, w) = self.new_member(group, &[("range", b"m1")]);
        self.advance(3000);
        let a = self.join_answer(w);
        let s = self.sync(group, a.generation, &id, &[(id.as_str(), b"a1")]);
        assert_eq!(self.sync_answer(s).error, ErrorCode::NONE);
        (id, a.generation)
    }
}

#[test]
fn a_first_member_learns_its_id_then_leads_generation_one_after_the_initial_delay() {
    let mut h = Harness::new();
    let (id, w) = h.new_member("g", &[("range", b"meta")]);
    assert!(id.starts_with("client-"), "{id}");
    assert_eq!(h.c.group_state("g"), Some(PreparingRebalance));
    // The initial delay (group.initial.rebalance.delay.ms) holds the join.
    h.advance(2999);
    assert!(h.answer(w).is_none(), "answered before the initial delay");
    h.advance(1);
    let a = h.join_answer(w);
    assert_eq!(a.error, ErrorCode::NONE);
    assert_eq!(
        (a.generation, a.leader.as_str(), a.member_id.as_str()),
        (1, id.as_str(), id.as_str())
    );
    assert_eq!(a.protocol_name.as_deref(), Some("range"));
    assert_eq!(
        a.members,
        vec![JoinedMember {
            member_id: id.clone(),
            group_instance_id: None,
            metadata: b"meta".to_vec()
        }]
    );
    assert_eq!(h.c.group_state("g"), Some(CompletingRebalance));
}

#[test]
fn the_leaders_sync_is_stored_then_every_member_gets_its_assignment() {
    let mut h = Harness::new();
    h.auto_ack = None;
    let (a_id, wa) = h.new_member("g", &[("range", b"A")]);
    let (b_id, wb) = h.new_member("g", &[("range", b"B")]);
    h.advance(3000);
    // Member b joined during the delay: another delay (InitialDelayedJoin).
    assert!(h.answer(wa).is_none());
    h.advance(3000);
    let (ja, jb) = (h.join_answer(wa), h.join_answer(wb));
    assert_eq!(ja.generation, 1);
    assert_eq!(ja.leader, a_id, "the first member leads");
    assert_eq!(ja.members.len(), 2);
    assert!(jb.members.is_empty(), "followers get no member list");
    // The follower's sync waits for the leader's.
    let sb = h.sync("g", 1, &b_id, &[]);
    assert!(h.answer(sb).is_none());
    let sa = h.sync(
        "g",
        1,
        &a_id,
        &[(a_id.as_str(), b"pa"), (b_id.as_str(), b"pb")],
    );
    assert!(h.answer(sa).is_none(), "answered before the store");
    assert_eq!(h.appends.len(), 1);
    let (partition, records, token) = h.appends.remove(0);
    assert_eq!(partition, h.c.partition_of("g"));
    assert_eq!(records[0].0, encode_group_metadata_key("g"));
    let stored =
        crate::group::records::GroupMetadataValue::decode(records[0].1.as_deref().unwrap())
            .unwrap();
    assert_eq!(stored.generation, 1);
    assert_eq!(stored.members.len(), 2);
    let actions = h.c.on_appended(token, ErrorCode::NONE, h.now);
    h.run(actions);
    assert_eq!(h.sync_answer(sa).assignment, b"pa");
    assert_eq!(h.sync_answer(sb).assignment, b"pb");
    assert_eq!(h.c.group_state("g"), Some(Stable));
}

#[test]
fn a_failed_store_of_the_assignment_sends_members_back_to_rejoin() {
    let mut h = Harness::new();
    let (id, w) = h.new_member("g", &[("range", b"A")]);
    h.advance(3000);
    let gen = h.join_answer(w).generation;
    h.auto_ack = Some(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    let s = h.sync("g", gen, &id, &[(id.as_str(), b"x")]);
    assert_eq!(h.sync_answer(s).error, ErrorCode::NOT_COORDINATOR);
    assert_eq!(h.c.group_state("g"), Some(PreparingRebalance));
}

#[test]
fn a_new_member_rebalances_a_stable_group_and_the_join_completes_when_all_rejoined() {
    let mut h = Harness::new();
    let (a_id, gen) = h.stable_single("g");
    let (b_id, wb) = h.new_member("g", &[("range", b"B")]);
    assert_eq!(h.c.group_state("g"), Some(PreparingRebalance));
    assert!(h.answer(wb).is_none());
    assert_eq!(
        h.heartbeat("g", gen, &a_id, None),
        ErrorCode::REBALANCE_IN_PROGRESS
    );
    let req = h.join_req("g", &a_id, None, &[("range", b"A2")]);
    let wa = h.join(req);
    // Everyone rejoined: no waiting for the rebalance timeout.
    let (ja, jb) = (h.join_answer(wa), h.join_answer(wb));
    assert_eq!((ja.generation, jb.generation), (gen + 1, gen + 1));
    assert_eq!(ja.leader, a_id);
    assert_eq!(jb.member_id, b_id);
    assert_eq!(
        ja.members
            .iter()
            .find(|m| m.member_id == a_id)
            .unwrap()
            .metadata,
        b"A2"
    );
}

#[test]
fn a_member_that_stops_heartbeating_is_removed_after_its_session_timeout() {
    let mut h = Harness::new();
    let (a_id, _) = h.stable_single("g");
    let (b_id, wb) = h.new_member("g", &[("range", b"B")]);
    let req = h.join_req("g", &a_id, None, &[("range", b"A")]);
    let wa = h.join(req);
    let gen = h.join_answer(wa).generation;
    assert_eq!(h.join_answer(wb).generation, gen);
    let s = h.sync("g", gen, &a_id, &[]);
    let sb = h.sync("g", gen, &b_id, &[]);
    assert_eq!(
        (h.sync_answer(s).error, h.sync_answer(sb).error),
        (ErrorCode::NONE, ErrorCode::NONE)
    );
    // a heartbeats, b does not.
    h.advance(i64::from(SESSION) / 2);
    assert_eq!(h.heartbeat("g", gen, &a_id, None), ErrorCode::NONE);
    h.advance(i64::from(SESSION) / 2 - 1);
    assert_eq!(h.c.group_state("g"), Some(Stable), "b within its session");
    h.advance(1);
    assert_eq!(h.c.group_state("g"), Some(PreparingRebalance), "b expired");
    assert_eq!(
        h.heartbeat("g", gen, &b_id, None),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        h.heartbeat("g", gen, &a_id, None),
        ErrorCode::REBALANCE_IN_PROGRESS
    );
}

#[test]
fn a_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout() {
    let mut h = Harness::new();
    let (a_id, _) = h.stable_single("g");
    let (_b_id, wb) = h.new_member("g", &[("range", b"B")]);
    // a keeps heartbeating but never rejoins.
    let mut t = 0;
    while h.answer(wb).is_none() && t < i64::from(REBALANCE) + 1000 {
        h.advance(1000);
        t += 1000;
        let _ = h.heartbeat("g", 1, &a_id, None);
    }
    let jb = h.join_answer(wb);
    assert_eq!(jb.error, ErrorCode::NONE);
    assert!(t >= i64::from(REBALANCE), "completed after {t} ms");
    assert_eq!(jb.leader, jb.member_id, "b leads the new generation alone");
    assert_eq!(jb.members.len(), 1);
}

#[test]
fn a_static_member_rejoining_a_stable_group_keeps_its_assignment_without_a_rebalance() {
    let mut h = Harness::new();
    let req = h.join_req("g", "", Some("inst-1"), &[("range", b"S")]);
    let w = h.join(req);
    h.advance(3000);
    let j = h.join_answer(w);
    let old_id = j.member_id.clone();
    let s = h.sync("g", j.generation, &old_id, &[(old_id.as_str(), b"asg")]);
    assert_eq!(h.sync_answer(s).error, ErrorCode::NONE);
    // Restarted: a new join with the same instance id and no member id.
    let req = h.join_req("g", "", Some("inst-1"), &[("range", b"S")]);
    let w2 = h.join(req);
    let j2 = h.join_answer(w2);
    assert_eq!(j2.error, ErrorCode::NONE);
    assert_eq!(j2.generation, j.generation, "no new generation");
    assert_ne!(j2.member_id, old_id);
    assert!(
        j2.skip_assignment,
        "the static leader keeps the assignment (KIP-814)"
    );
    assert_eq!(h.c.group_state("g"), Some(Stable));
    // The old id is fenced.
    assert_eq!(
        h.heartbeat("g", j.generation, &old_id, Some("inst-1")),
        ErrorCode::FENCED_INSTANCE_ID
    );
    assert_eq!(
        h.heartbeat("g", j.generation, &j2.member_id, Some("inst-1")),
        ErrorCode::NONE
    );
    let s2 = h.sync("g", j.generation, &j2.member_id, &[]);
    assert_eq!(h.sync_answer(s2).assignment, b"asg");
}

#[test]
fn a_static_leader_without_kip_814_is_answered_with_the_old_leader_id() {
    let mut h = Harness::new();
    let req = h.join_req("g", "", Some("inst-1"), &[("range", b"S")]);
    let w = h.join(req);
    h.advance(3000);
    let j = h.join_answer(w);
    h.sync(
        "g",
        j.generation,
        &j.member_id,
        &[(j.member_id.as_str(), b"asg")],
    );
    let mut req = h.join_req("g", "", Some("inst-1"), &[("range", b"S")]);
    req.supports_skip_assignment = false;
    let w2 = h.join(req);
    let j2 = h.join_answer(w2);
    assert_eq!(j2.error, ErrorCode::NONE);
    assert!(!j2.skip_assignment);
    assert_eq!(j2.leader, j.member_id, "the leader as it was");
    assert_ne!(j2.member_id, j2.leader, "so the member does not assign");
    assert!(j2.members.is_empty());
    assert_eq!(h.c.group_state("g"), Some(Stable));
}

#[test]
fn join_errors_follow_kafka() {
    let mut h = Harness::new();
    let mut req = h.join_req("g", "", None, &[("range", b"")]);
    req.session_timeout_ms = 10;
    let w = h.join(req);
    assert_eq!(h.join_answer(w).error, ErrorCode::INVALID_SESSION_TIMEOUT);
    let req = h.join_req("", "", None, &[("range", b"")]);
    let w = h.join(req);
    assert_eq!(h.join_answer(w).error, ErrorCode::INVALID_GROUP_ID);
    let req = h.join_req("nobody", "client-77", None, &[("range", b"")]);
    let w = h.join(req);
    assert_eq!(h.join_answer(w).error, ErrorCode::UNKNOWN_MEMBER_ID);
    // A stable group on range refuses a member speaking only roundrobin.
    h.stable_single("g");
    let req = h.join_req("g", "", None, &[("roundrobin", b"")]);
    let w = h.join(req);
    assert_eq!(
        h.join_answer(w).error,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    assert_eq!(h.c.group_state("g"), Some(Stable), "nothing changed");
}

#[test]
fn requests_for_partitions_not_owned_or_loading_get_not_coordinator_and_load_in_progress() {
    let mut c = Coordinator::new(GroupConfig::default(), 4);
    let p = c.partition_of("g");
    let join = |c: &mut Coordinator| {
        let mut h = Harness::new();
        let req = h.join_req("g", "", None, &[("range", b"")]);
        match c.on_join(1, req, 0).pop() {
            Some(Action::Reply(1, Answer::Join(a))) => a.error,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(join(&mut c), ErrorCode::NOT_COORDINATOR);
    c.begin_load(p);
    assert_eq!(join(&mut c), ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
    assert_eq!(
        c.describe("g").error,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    c.finish_load(p, 0);
    assert_eq!(join(&mut c), ErrorCode::MEMBER_ID_REQUIRED);
}

#[test]
fn offsets_are_visible_after_their_append_and_wrong_generations_change_nothing() {
    let mut h = Harness::new();
    h.auto_ack = None;
    let w = h.commit("simple", -1, "", &[("t", 0, 42), ("t", 1, 7)]);
    assert!(h.answer(w).is_none(), "answered before the append");
    let before = h.fetch("simple", Some(vec![("t".into(), 0)]));
    assert_eq!(
        before.partitions[0].offset, -1,
        "not visible before the append"
    );
    let (_, records, token) = h.appends.remove(0);
    assert_eq!(records.len(), 2);
    assert!(matches!(
        RecordKey::decode(&records[0].0),
        Ok(RecordKey::OffsetCommit(_))
    ));
    let actions = h.c.on_appended(token, ErrorCode::NONE, h.now);
    h.run(actions);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![
            ("t".into(), 0, ErrorCode::NONE),
            ("t".into(), 1, ErrorCode::NONE)
        ]))
    );
    let all = h.fetch("simple", None);
    let got: Vec<(i32, i64, i32, &str)> = all
        .partitions
        .iter()
        .map(|p| (p.partition, p.offset, p.leader_epoch, p.metadata.as_str()))
        .collect();
    assert_eq!(got, vec![(0, 42, 3, "m"), (1, 7, 3, "m")]);
    // A commit with a generation to a group that does not know it.
    let w = h.commit("unknown", 5, "m-1", &[("t", 0, 1)]);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![(
            "t".into(),
            0,
            ErrorCode::ILLEGAL_GENERATION
        )]))
    );
    assert!(h.appends.is_empty(), "nothing appended");
}

#[test]
fn member_commits_are_checked_against_the_generation() {
    let mut h = Harness::new();
    let (id, gen) = h.stable_single("g");
    let w = h.commit("g", gen + 1, &id, &[("t", 0, 1)]);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![(
            "t".into(),
            0,
            ErrorCode::ILLEGAL_GENERATION
        )]))
    );
    let w = h.commit("g", gen, "stranger", &[("t", 0, 1)]);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![(
            "t".into(),
            0,
            ErrorCode::UNKNOWN_MEMBER_ID
        )]))
    );
    let w = h.commit("g", gen, &id, &[("t", 0, 9)]);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![("t".into(), 0, ErrorCode::NONE)]))
    );
    assert_eq!(
        h.fetch("g", Some(vec![("t".into(), 0)])).partitions[0].offset,
        9
    );
}

#[test]
fn oversize_metadata_and_failed_appends_get_kafkas_errors() {
    let mut h = Harness::new();
    let w = h.waiter();
    let req = CommitRequest {
        txn: None,
        group_id: "g".into(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: -1,
        partitions: vec![CommitPartition {
            topic: "t".into(),
            partition: 0,
            offset: 1,
            leader_epoch: -1,
            metadata: Some("x".repeat(4097)),
            commit_timestamp_ms: -1,
        }],
    };
    let actions = h.c.on_commit(w, req, 0);
    h.run(actions);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![(
            "t".into(),
            0,
            ErrorCode::OFFSET_METADATA_TOO_LARGE
        )]))
    );
    assert!(h.appends.is_empty());
    // A timed-out append (`offsets.commit.timeout.ms`) is answered as it
    // is: `storeOffsets` does not map REQUEST_TIMED_OUT.
    h.auto_ack = Some(ErrorCode::REQUEST_TIMED_OUT);
    let w = h.commit("g", -1, "", &[("t", 0, 1)]);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![(
            "t".into(),
            0,
            ErrorCode::REQUEST_TIMED_OUT
        )]))
    );
    assert_eq!(
        h.fetch("g", Some(vec![("t".into(), 0)])).partitions[0].offset,
        -1
    );
}

#[test]
fn leaving_rebalances_the_rest_and_unknown_members_are_named() {
    let mut h = Harness::new();
    let (a_id, _) = h.stable_single("g");
    let w = h.waiter();
    let req = LeaveRequest {
        group_id: "g".into(),
        members: vec![(a_id.clone(), None), ("ghost".into(), None)],
    };
    let actions = h.c.on_leave(w, req, h.now);
    h.run(actions);
    match h.answer(w) {
        Some(Answer::Leave(a)) => {
            assert_eq!(a.error, ErrorCode::NONE);
            assert_eq!(a.members[0].2, ErrorCode::NONE);
            assert_eq!(a.members[1].2, ErrorCode::UNKNOWN_MEMBER_ID);
        }
        other => panic!("{other:?}"),
    }
    // The last member left: the rebalance ends with an empty group.
    h.advance(i64::from(REBALANCE));
    assert_eq!(h.c.group_state("g"), Some(Empty));
}

#[test]
fn only_empty_groups_are_deleted_with_tombstones() {
    let mut h = Harness::new();
    h.stable_single("busy");
    h.commit("idle", -1, "", &[("t", 0, 5)]);
    h.appends.clear();
    let w = h.waiter();
    let actions =
        h.c.on_delete_groups(w, vec!["busy".into(), "idle".into(), "none".into()], h.now);
    h.run(actions);
    assert_eq!(
        h.answer(w),
        Some(&Answer::DeleteGroups(vec![
            ("busy".into(), ErrorCode::NON_EMPTY_GROUP),
            ("idle".into(), ErrorCode::NONE),
            ("none".into(), ErrorCode::GROUP_ID_NOT_FOUND),
        ]))
    );
    let (_, records, _) = &h.appends[0];
    assert!(records.iter().all(|(_, v)| v.is_none()), "tombstones only");
    assert_eq!(records.len(), 2, "one offset and the group");
    assert_eq!(h.c.describe("idle").state, "Dead");
    assert_eq!(
        h.fetch("idle", Some(vec![("t".into(), 0)])).partitions[0].offset,
        -1
    );
}

#[test]
fn a_loaded_partition_restores_offsets_and_groups_from_its_records_in_order() {
    let mut h = Harness::new();
    let (id, gen) = h.stable_single("g");
    h.commit("g", gen, &id, &[("t", 0, 10)]);
    h.commit("g", gen, &id, &[("t", 0, 11), ("t", 1, 3)]);
    let p = h.c.partition_of("g");
    // Every record appended so far, replayed into a fresh coordinator.
    let log: Vec<(Vec<u8>, Option<Vec<u8>>)> =
        h.appends.iter().flat_map(|(_, r, _)| r.clone()).collect();
    let mut c = Coordinator::new(GroupConfig::default(), 4);
    c.begin_load(p);
    for (k, v) in &log {
        c.load_record(p, RecordKey::decode(k).unwrap(), v.as_deref());
    }
    c.finish_load(p, 100);
    assert_eq!(c.group_state("g"), Some(Stable));
    let d = c.describe("g");
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].assignment, b"a1");
    let mut h2 = Harness {
        c,
        ..Harness::new()
    };
    let f = h2.fetch("g", None);
    let got: Vec<(i32, i64)> = f
        .partitions
        .iter()
        .map(|p| (p.partition, p.offset))
        .collect();
    assert_eq!(got, vec![(0, 11), (1, 3)]);
    assert_eq!(
        h2.heartbeat("g", gen, &id, None),
        ErrorCode::NONE,
        "the member resumes"
    );
    // Without heartbeats the loaded member expires.
    h2.now = 100;
    h2.advance(i64::from(SESSION) * 2);
    assert_ne!(h2.c.group_state("g"), Some(Stable));
}

#[test]
fn offset_delete_refuses_topics_the_group_subscribes_to() {
    let mut h = Harness::new();
    // ConsumerProtocolSubscription v0: version, topics ["t"], user data null.
    let sub: &[u8] = &[0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];
    assert_eq!(
        offsets::parse_subscription_topics(sub),
        vec!["t".to_owned()]
    );
    let (id, w) = h.new_member("g", &[("range", sub)]);
    h.advance(3000);
    let gen = h.join_answer(w).generation;
    h.sync("g", gen, &id, &[]);
    h.commit("g", gen, &id, &[("t", 0, 1), ("other", 0, 2)]);
    let w = h.waiter();
    let actions =
        h.c.on_offset_delete(w, "g", vec![("t".into(), 0), ("other".into(), 0)]);
    h.run(actions);
    assert_eq!(
        h.answer(w),
        Some(&Answer::OffsetDelete(Ok(vec![
            ("t".into(), 0, ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC),
            ("other".into(), 0, ErrorCode::NONE),
        ])))
    );
    assert_eq!(
        h.fetch("g", Some(vec![("other".into(), 0)])).partitions[0].offset,
        -1
    );
    let w = h.waiter();
    let actions = h.c.on_offset_delete(w, "missing", vec![]);
    h.run(actions);
    assert_eq!(
        h.answer(w),
        Some(&Answer::OffsetDelete(Err(ErrorCode::GROUP_ID_NOT_FOUND)))
    );
}

#[test]
fn group_max_size_refuses_a_member_beyond_it() {
    let mut h = Harness::new();
    h.c = Coordinator::new(
        GroupConfig {
            max_size: 1,
            ..GroupConfig::default()
        },
        4,
    );
    for p in 0..4 {
        h.c.begin_load(p);
        h.c.finish_load(p, 0);
    }
    h.new_member("g", &[("range", b"")]);
    let req = h.join_req("g", "", None, &[("range", b"")]);
    let w = h.join(req);
    assert_eq!(h.join_answer(w).error, ErrorCode::GROUP_MAX_SIZE_REACHED);
    // acceptJoiningMember: an Empty group takes anyone (both learn their
    // ids, KIP-394); once the first is waiting in the rebalance, the
    // second is one too many.
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let req = h.join_req("e", "", None, &[("range", b"")]);
            let w = h.join(req);
            let a = h.join_answer(w);
            assert_eq!(a.error, ErrorCode::MEMBER_ID_REQUIRED);
            a.member_id
        })
        .collect();
    let req = h.join_req("e", &ids[0], None, &[("range", b"")]);
    h.join(req);
    let req = h.join_req("e", &ids[1], None, &[("range", b"")]);
    let w = h.join(req);
    assert_eq!(h.join_answer(w).error, ErrorCode::GROUP_MAX_SIZE_REACHED);
}

#[test]
fn describe_and_list_show_states_and_members() {
    let mut h = Harness::new();
    let (id, _) = h.stable_single("g");
    h.commit("offsets-only", -1, "", &[("t", 0, 1)]);
    let d = h.c.describe("g");
    assert_eq!(
        (
            d.state.as_str(),
            d.protocol_type.as_str(),
            d.protocol.as_str()
        ),
        ("Stable", "consumer", "range")
    );
    assert_eq!(d.members[0].member_id, id);
    assert_eq!(d.members[0].metadata, b"m1");
    assert_eq!(h.c.describe("nope").state, "Dead");
    let (e, all) = h.c.list(&[]);
    assert_eq!(e, ErrorCode::NONE);
    let names: Vec<(&str, &str)> = all
        .iter()
        .map(|g| (g.group_id.as_str(), g.state.as_str()))
        .collect();
    assert_eq!(names, vec![("g", "Stable"), ("offsets-only", "Empty")]);
    let (_, empty) = h.c.list(&["empty".into()]);
    assert_eq!(empty.len(), 1);
    assert_eq!(empty[0].group_id, "offsets-only");
}

#[test]
fn unloading_a_partition_answers_parked_joins_with_not_coordinator() {
    let mut h = Harness::new();
    let (_, w) = h.new_member("g", &[("range", b"")]);
    let p = h.c.partition_of("g");
    let actions = h.c.unload(p);
    h.run(actions);
    assert_eq!(h.join_answer(w).error, ErrorCode::NOT_COORDINATOR);
    assert_eq!(h.c.group_state("g"), None);
}

mod deleted;
mod expiry;
mod txn;
