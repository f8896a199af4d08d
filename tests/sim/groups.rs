//! Consumer groups in the simulation: consumers in one group, the
//! broker's group coordinator (`group::coordinator::Coordinator`, the pure
//! core the broker's `GroupDriver` runs) on the leader of a simulated
//! `__consumer_offsets`, its records replicated like any other.
//!
//! - `__consumer_offsets` is one partition: the simulated topic's
//!   partition 1 holds its records beside the data (ids tagged
//!   [`GROUP_LOG`]); its leader loads them when it becomes leader and
//!   unloads them when it no longer leads, crashes, or leads in a new
//!   leader epoch.
//! - A coordinator's append waits for the HW (acks=all); a lost
//!   leadership fails it with NOT_LEADER_OR_FOLLOWER, a timeout with
//!   REQUEST_TIMED_OUT, too few replicas with NOT_ENOUGH_REPLICAS.
//! - A consumer: JoinGroup, SyncGroup (its leader assigns the partitions
//!   round-robin), OffsetFetch of what it was assigned, then heartbeats
//!   and, now and then, reads up to the partition's HW and commits its
//!   positions (OffsetCommit with its generation). A rebalance makes it
//!   commit first, then join again, as the Java consumer does.
//!
//! The invariants (`check_groups`, `check_groups_healed`): the offsets a
//! loaded coordinator holds never fall below a commit it acknowledged
//! (committed offsets never move backwards), and after the heal the group
//! is Stable with every consumer in its generation and every partition
//! assigned once.

use std::collections::BTreeMap;

use rand::Rng as _;
use shardlog::group::coordinator::{
    Action, Answer, CommitPartition, CommitRequest, Coordinator, FetchRequest, GroupConfig,
    HeartbeatRequest, JoinRequest, Records, SyncRequest,
};
use shardlog::group::records::RecordKey;
use shardlog::group::state::GroupState;
use shardlog::protocol::ErrorCode;

use super::coordinator_log::{Leadership, LogWrite};
use super::world::{Msg, Violation, World, CLIENT, TOPIC};

/// The partition of the simulated topic that holds `__consumer_offsets`.
pub const GROUP_LOG_PARTITION: i32 = 1;
/// Record ids with this bit are a `__consumer_offsets` batch: the rest
/// indexes [`GroupSim::entries`].
pub const GROUP_LOG: u64 = 1 << 61;
/// Its index as `__consumer_offsets` partition (the only one).
const OFFSETS_PARTITION: i32 = 0;
const GROUP: &str = "sim-group";
const CONSUMERS: usize = 3;
const SESSION_MS: i32 = 3_000;
const REBALANCE_MS: i32 = 6_000;
const HEARTBEAT_MS: i64 = 500;
/// A request unanswered this long is sent again.
const RETRY_MS: i64 = 1_000;
const APPEND_TIMEOUT_MS: i64 = 5_000;

pub(super) enum GroupMsg {
    Call { waiter: u64, call: Call },
    Answer { waiter: u64, answer: Answer },
}

#[derive(Debug, Clone)]
pub(super) enum Call {
    Join(JoinRequest),
    Sync(SyncRequest),
    Heartbeat(HeartbeatRequest),
    Fetch(FetchRequest),
    Commit(CommitRequest),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Join,
    Sync,
    Fetch,
    Stable,
    /// Committing; then `rejoin` says whether to join again.
    Commit {
        rejoin: bool,
    },
}

#[derive(Debug, Clone)]
struct Consumer {
    member_id: String,
    generation: i32,
    stage: Stage,
    assigned: Vec<i32>,
    positions: BTreeMap<i32, i64>,
    /// The request in flight: its waiter, when sent, and what it was.
    waiter: u64,
    sent_at: i64,
    /// The coordinator it went to.
    sent_to: Option<i32>,
    call: Option<Call>,
    last_heartbeat: i64,
}

struct Host {
    core: Coordinator,
    leadership: Leadership,
}

impl Host {
    fn new() -> Self {
        Host {
            core: Coordinator::new(config(), 1),
            leadership: Leadership::default(),
        }
    }
}

#[derive(Default)]
pub struct GroupSim {
    pub entries: Vec<Records>,
    hosts: BTreeMap<i32, Host>,
    consumers: Vec<Consumer>,
    appends: Vec<LogWrite>,
    next_waiter: u64,
    next_member: u64,
    /// The highest offset an acknowledged commit gave each partition.
    pub acked_commits: BTreeMap<i32, (i64, i32)>,
    /// A commit acknowledged below an earlier one (reported by the check).
    backwards: Option<String>,
}

impl GroupSim {
    pub fn new(on: bool) -> Self {
        let n = if on { CONSUMERS } else { 0 };
        Self {
            consumers: (0..n)
                .map(|_| Consumer {
                    member_id: String::new(),
                    generation: -1,
                    stage: Stage::Join,
                    assigned: Vec::new(),
                    positions: BTreeMap::new(),
                    waiter: 0,
                    sent_at: i64::MIN / 2,
                    sent_to: None,
                    call: None,
                    last_heartbeat: 0,
                })
                .collect(),
            ..Self::default()
        }
    }
}

fn config() -> GroupConfig {
    GroupConfig {
        min_session_timeout_ms: 1_000,
        initial_rebalance_delay_ms: 300,
        ..GroupConfig::default()
    }
}

/// The assignment bytes: the partitions, one byte each.
fn encode(partitions: &[i32]) -> Vec<u8> {
    partitions.iter().map(|p| *p as u8).collect()
}

impl World {
    pub(super) fn group_step(&mut self) {
        self.sync_group_coordinators();
        self.complete_group_appends();
        let brokers: Vec<i32> = self.groups.hosts.keys().copied().collect();
        for b in brokers {
            let now = self.now;
            let actions = match self.groups.hosts.get_mut(&b) {
                Some(h) if h.core.next_deadline().is_some_and(|d| d <= now) => h.core.on_timer(now),
                _ => continue,
            };
            self.group_execute(b, actions);
        }
        for i in 0..self.groups.consumers.len() {
            if self.rng.gen_bool(0.4) {
                self.consumer_step(i);
            }
        }
    }

    pub(super) fn group_crash(&mut self, id: i32) {
        self.groups.hosts.remove(&id);
        self.groups.appends.retain(|a| a.broker != id);
        // Requests the dead broker held (a parked JoinGroup / SyncGroup)
        // fail with its connections: their consumers ask again.
        let now = self.now;
        for c in &mut self.groups.consumers {
            if c.call.is_some() && c.sent_to == Some(id) {
                c.sent_to = None;
                c.sent_at = now - RETRY_MS;
            }
        }
    }

    /// Coordinators follow the offsets partition's leadership, loading
    /// once the HW reached the leader epoch's start (as for transactions).
    fn sync_group_coordinators(&mut self) {
        for b in 1..=self.cfg.brokers {
            let leads = self.leads(b, GROUP_LOG_PARTITION);
            let host = self.groups.hosts.entry(b).or_insert_with(Host::new);
            let follow = host.leadership.follow(leads);
            let mut actions = Vec::new();
            if follow.unload {
                actions.extend(host.core.unload(OFFSETS_PARTITION));
            }
            if follow.begin {
                host.core.begin_load(OFFSETS_PARTITION);
            }
            if let Some(epoch) = follow.load {
                let log = &self.nodes[(b - 1) as usize].replicas[&GROUP_LOG_PARTITION].log;
                let host = self.groups.hosts.get_mut(&b).expect("host");
                let mut n = 0;
                for (_, id) in log.iter().filter(|(_, id)| id & GROUP_LOG != 0) {
                    for (key, value) in &self.groups.entries[(id & !GROUP_LOG) as usize] {
                        if let Ok(k) = RecordKey::decode(key) {
                            host.core
                                .load_record(OFFSETS_PARTITION, k, value.as_deref());
                            n += 1;
                        }
                    }
                }
                host.core.finish_load(OFFSETS_PARTITION, self.now);
                let held: Vec<(i32, i64)> = host
                    .core
                    .committed_offsets()
                    .iter()
                    .map(|o| (o.partition, o.offset))
                    .collect();
                self.log(format!(
                    "broker {b} coordinates groups at epoch {epoch} ({n} records loaded, offsets {held:?})"
                ));
            }
            self.group_execute(b, actions);
        }
    }

    fn group_execute(&mut self, b: i32, actions: Vec<Action>) {
        let mut queue: std::collections::VecDeque<Action> = actions.into();
        while let Some(a) = queue.pop_front() {
            match a {
                Action::Reply(waiter, answer) => {
                    let msg = GroupMsg::Answer { waiter, answer };
                    self.send(b, CLIENT, Msg::Group(msg));
                }
                Action::Append { records, token, .. } => {
                    queue.extend(self.group_append(b, records, token));
                }
            }
        }
    }

    fn group_append(&mut self, b: i32, records: Records, token: u64) -> Vec<Action> {
        let now = self.now;
        let loaded = self.groups.hosts.get(&b).and_then(|h| h.leadership.loaded);
        let id = GROUP_LOG | self.groups.entries.len() as u64;
        match self.coordinator_log_append(
            b,
            GROUP_LOG_PARTITION,
            loaded,
            id,
            token,
            APPEND_TIMEOUT_MS,
        ) {
            Ok(write) => {
                self.log(format!(
                    "broker {b}: offsets append {token} at {TOPIC}-{GROUP_LOG_PARTITION} offset {}",
                    write.offset
                ));
                self.groups.entries.push(records);
                self.groups.appends.push(write);
                Vec::new()
            }
            Err(e) => match self.groups.hosts.get_mut(&b) {
                Some(h) => h.core.on_appended(token, e, now),
                None => Vec::new(),
            },
        }
    }

    fn complete_group_appends(&mut self) {
        let now = self.now;
        let appends = std::mem::take(&mut self.groups.appends);
        let mut done = Vec::new();
        for a in appends {
            match self.log_write_outcome(GROUP_LOG_PARTITION, &a) {
                None => self.groups.appends.push(a),
                Some(result) => done.push((a.broker, a.token, result)),
            }
        }
        for (b, token, result) in done {
            self.log(format!("broker {b}: offsets append {token}: {result:?}"));
            let actions = match self.groups.hosts.get_mut(&b) {
                Some(h) => h.core.on_appended(token, result, now),
                None => continue,
            };
            self.group_execute(b, actions);
        }
    }

    pub(super) fn on_group_msg(&mut self, to: i32, msg: GroupMsg) {
        let now = self.now;
        match msg {
            GroupMsg::Call { waiter, call } => {
                // A broker without a coordinator yet (just restarted)
                // answers NOT_COORDINATOR, as any broker does.
                let h = self.groups.hosts.entry(to).or_insert_with(Host::new);
                let actions = match call {
                    Call::Join(r) => h.core.on_join(waiter, r, now),
                    Call::Sync(r) => h.core.on_sync(waiter, r, now),
                    Call::Heartbeat(r) => h.core.on_heartbeat(waiter, r, now),
                    Call::Fetch(r) => h.core.on_fetch(waiter, r),
                    Call::Commit(r) => {
                        let offsets: Vec<(i32, i64)> = r
                            .partitions
                            .iter()
                            .map(|c| (c.partition, c.offset))
                            .collect();
                        let line = format!(
                            "[{} t={now}] broker {to} takes OffsetCommit {waiter} of {} generation {}: {offsets:?}",
                            self.step, r.member_id, r.generation
                        );
                        self.trace.push(line);
                        h.core.on_commit(waiter, r, now)
                    }
                };
                self.group_execute(to, actions);
            }
            GroupMsg::Answer { waiter, answer } => self.on_group_answer(waiter, answer),
        }
    }

    /// A consumer's request or its answer was lost with a broker: the
    /// consumer sees its connection fail and asks again (the next
    /// coordinator it finds).
    pub(super) fn on_group_lost(&mut self, msg: GroupMsg) {
        let (GroupMsg::Call { waiter, .. } | GroupMsg::Answer { waiter, .. }) = msg;
        let i = (waiter % 16) as usize;
        if let Some(c) = self.groups.consumers.get_mut(i) {
            if c.waiter == waiter && c.call.is_some() {
                c.sent_to = None;
                c.sent_at = self.now - RETRY_MS;
            }
        }
    }

    /// Send consumer `i`'s request to the coordinator it finds (the
    /// offsets partition's leader).
    fn group_ask(&mut self, i: usize, call: Call) {
        self.groups.next_waiter += 1;
        let waiter = self.groups.next_waiter * 16 + i as u64;
        let to = self.leader_in_metadata(GROUP_LOG_PARTITION);
        let c = &mut self.groups.consumers[i];
        c.waiter = waiter;
        c.sent_at = self.now;
        c.sent_to = to;
        c.call = Some(call.clone());
        if matches!(call, Call::Join(_) | Call::Sync(_) | Call::Fetch(_)) {
            let what = match &call {
                Call::Join(_) => "JoinGroup",
                Call::Sync(_) => "SyncGroup",
                _ => "OffsetFetch",
            };
            self.log(format!("consumer {i} sends {what} {waiter} to {to:?}"));
        }
        if let Some(to) = to {
            self.send(CLIENT, to, Msg::Group(GroupMsg::Call { waiter, call }));
        }
    }

    fn consumer_step(&mut self, i: usize) {
        let now = self.now;
        let c = self.groups.consumers[i].clone();
        if c.call.is_some() {
            // A JoinGroup / SyncGroup waits for the rebalance (the Java
            // client's request timeout is the rebalance timeout + 5 s);
            // any request goes again once its coordinator is gone (the
            // client sees the connection fail and looks it up again).
            let parked = matches!(c.call, Some(Call::Join(_) | Call::Sync(_)));
            let limit = if parked {
                i64::from(REBALANCE_MS) + 5_000
            } else {
                RETRY_MS
            };
            let moved =
                c.sent_to.is_none() || c.sent_to != self.leader_in_metadata(GROUP_LOG_PARTITION);
            if now - c.sent_at >= limit || (moved && now - c.sent_at >= RETRY_MS) {
                let call = c.call.clone().expect("call");
                self.group_ask(i, call);
            }
            return;
        }
        match c.stage {
            Stage::Join => {
                if c.member_id.is_empty() {
                    self.groups.next_member += 1;
                }
                let req = JoinRequest {
                    group_id: GROUP.into(),
                    member_id: c.member_id.clone(),
                    group_instance_id: None,
                    client_id: format!("consumer-{i}"),
                    client_host: "/127.0.0.1".into(),
                    session_timeout_ms: SESSION_MS,
                    rebalance_timeout_ms: REBALANCE_MS,
                    protocol_type: "sim".into(),
                    protocols: vec![("range".into(), Vec::new())],
                    require_known_member_id: true,
                    supports_skip_assignment: false,
                    new_member_id: format!("consumer-{i}-{}", self.groups.next_member),
                };
                self.group_ask(i, Call::Join(req));
            }
            Stage::Sync | Stage::Fetch | Stage::Commit { .. } => {}
            Stage::Stable => {
                if self.rng.gen_bool(0.2) {
                    self.consume_and_commit(i, false);
                } else if now - c.last_heartbeat >= HEARTBEAT_MS {
                    self.groups.consumers[i].last_heartbeat = now;
                    let req = HeartbeatRequest {
                        group_id: GROUP.into(),
                        generation: c.generation,
                        member_id: c.member_id.clone(),
                        group_instance_id: None,
                    };
                    self.group_ask(i, Call::Heartbeat(req));
                }
            }
        }
    }

    /// Read what the assigned partitions' leaders have below their HW,
    /// then commit the positions.
    fn consume_and_commit(&mut self, i: usize, rejoin: bool) {
        let c = self.groups.consumers[i].clone();
        let mut partitions = Vec::new();
        for p in &c.assigned {
            let hw = self.leader_in_metadata(*p).and_then(|l| {
                self.nodes[(l - 1) as usize]
                    .replicas
                    .get(p)
                    .filter(|r| r.is_leader())
                    .map(|r| r.hw)
            });
            let pos = c.positions.get(p).copied().unwrap_or(0);
            let to = hw.map_or(pos, |hw| hw.max(pos).min(pos + self.rng.gen_range(0..20)));
            self.groups.consumers[i].positions.insert(*p, to);
            partitions.push(CommitPartition {
                topic: TOPIC.into(),
                partition: *p,
                offset: to,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp_ms: -1,
            });
        }
        self.groups.consumers[i].stage = Stage::Commit { rejoin };
        let req = CommitRequest {
            group_id: GROUP.into(),
            generation: c.generation,
            member_id: c.member_id.clone(),
            group_instance_id: None,
            retention_ms: -1,
            partitions,
            txn: None,
        };
        self.group_ask(i, Call::Commit(req));
    }

    fn on_group_answer(&mut self, waiter: u64, answer: Answer) {
        let i = (waiter % 16) as usize;
        let Some(c) = self.groups.consumers.get(i).cloned() else {
            return;
        };
        if c.waiter != waiter || c.call.is_none() {
            return;
        }
        self.groups.consumers[i].call = None;
        let retry = |e: ErrorCode| {
            matches!(
                e,
                ErrorCode::NOT_COORDINATOR
                    | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
                    | ErrorCode::COORDINATOR_NOT_AVAILABLE
                    | ErrorCode::REQUEST_TIMED_OUT
            )
        };
        let error = match &answer {
            Answer::Join(a) => a.error,
            Answer::Sync(a) => a.error,
            Answer::Heartbeat(e) => *e,
            Answer::Fetch(a) => a.error,
            Answer::Commit(rows) => rows
                .iter()
                .map(|r| r.2)
                .find(|e| *e != ErrorCode::NONE)
                .unwrap_or(ErrorCode::NONE),
            _ => ErrorCode::NONE,
        };
        if retry(error) {
            // The same request again, after the back-off.
            let cc = &mut self.groups.consumers[i];
            cc.call = c.call.clone();
            cc.sent_to = None;
            cc.sent_at = self.now - RETRY_MS + 100;
            return;
        }
        let line = format!(
            "consumer {i} ({}, generation {}): {} answered {error:?}",
            c.member_id,
            c.generation,
            match &c.call {
                Some(Call::Join(_)) => "JoinGroup",
                Some(Call::Sync(_)) => "SyncGroup",
                Some(Call::Heartbeat(_)) => "Heartbeat",
                Some(Call::Fetch(_)) => "OffsetFetch",
                Some(Call::Commit(_)) => "OffsetCommit",
                None => "-",
            }
        );
        self.log(line);
        self.on_group_answer_to(i, &c, answer, error);
    }

    fn on_group_answer_to(&mut self, i: usize, c: &Consumer, answer: Answer, error: ErrorCode) {
        let rebalancing = error == ErrorCode::REBALANCE_IN_PROGRESS
            && matches!(c.call, Some(Call::Heartbeat(_)))
            && c.stage == Stage::Stable;
        if rebalancing {
            // The Java consumer commits what it consumed before it joins
            // again (eager protocol: its partitions are revoked).
            self.consume_and_commit(i, true);
            return;
        }
        let cc = &mut self.groups.consumers[i];
        if let (Answer::Join(a), ErrorCode::MEMBER_ID_REQUIRED) = (&answer, error) {
            // KIP-394: join again with the id the coordinator gave.
            cc.member_id = a.member_id.clone();
            cc.stage = Stage::Join;
            return;
        }
        if error != ErrorCode::NONE {
            if error == ErrorCode::UNKNOWN_MEMBER_ID {
                cc.member_id.clear();
            }
            // A commit refused mid-rebalance still rejoins; anything else
            // (rebalance, fenced generation) joins again.
            cc.stage = Stage::Join;
            return;
        }
        match answer {
            Answer::Join(a) => {
                cc.member_id = a.member_id.clone();
                cc.generation = a.generation;
                cc.stage = Stage::Sync;
                let mut assignments = Vec::new();
                if a.leader == a.member_id {
                    let members: Vec<String> =
                        a.members.iter().map(|m| m.member_id.clone()).collect();
                    for (k, m) in members.iter().enumerate() {
                        let mine: Vec<i32> = (0..self.cfg.partitions)
                            .filter(|p| *p as usize % members.len() == k)
                            .collect();
                        assignments.push((m.clone(), encode(&mine)));
                    }
                }
                let req = SyncRequest {
                    group_id: GROUP.into(),
                    generation: a.generation,
                    member_id: a.member_id,
                    group_instance_id: None,
                    protocol_type: Some("sim".into()),
                    protocol_name: Some("range".into()),
                    assignments,
                };
                self.group_ask(i, Call::Sync(req));
            }
            Answer::Sync(a) => {
                cc.assigned = a.assignment.iter().map(|b| i32::from(*b)).collect();
                cc.stage = Stage::Fetch;
                let req = FetchRequest {
                    group_id: GROUP.into(),
                    partitions: Some(cc.assigned.iter().map(|p| (TOPIC.to_owned(), *p)).collect()),
                    require_stable: false,
                };
                self.group_ask(i, Call::Fetch(req));
            }
            Answer::Fetch(a) => {
                cc.positions = a
                    .partitions
                    .iter()
                    .map(|f| (f.partition, f.offset.max(0)))
                    .collect();
                cc.stage = Stage::Stable;
                cc.last_heartbeat = self.now;
            }
            Answer::Heartbeat(_) => {}
            Answer::Commit(rows) => {
                let line = format!("consumer {i}: commit acknowledged: {:?}", c.positions);
                self.log(line);
                for (_, p, _) in rows {
                    let offset = c.positions.get(&p).copied().unwrap_or(0);
                    let e = self
                        .groups
                        .acked_commits
                        .entry(p)
                        .or_insert((offset, c.generation));
                    if offset < e.0 && c.generation >= e.1 {
                        self.groups.backwards.get_or_insert(format!(
                            "group {GROUP}: {TOPIC}-{p} committed at {offset} in generation {} after {} in generation {}",
                            c.generation, e.0, e.1
                        ));
                    }
                    if offset >= e.0 {
                        *e = (offset, c.generation);
                    }
                }
                let cc = &mut self.groups.consumers[i];
                cc.stage = match c.stage {
                    Stage::Commit { rejoin: true } => Stage::Join,
                    _ => Stage::Stable,
                };
            }
            _ => {}
        }
    }

    /// No commit is acknowledged below an earlier one of the same or an
    /// older generation, and the coordinator in the newest leader epoch
    /// holds at least every acknowledged commit. (A zombie coordinator,
    /// one whose broker has not yet heard that another leads the offsets
    /// partition, may hold older offsets: it can acknowledge nothing,
    /// since its appends never reach the HW.)
    pub(super) fn check_groups(&self) -> Result<(), Violation> {
        if let Some(v) = &self.groups.backwards {
            return Err(Violation(v.clone()));
        }
        let newest_epoch = self.newest_leader_epoch(GROUP_LOG_PARTITION);
        let current = self.groups.hosts.iter().find(|(b, h)| {
            self.up(**b)
                && h.core.is_loaded(OFFSETS_PARTITION)
                && h.leadership.loaded.is_some()
                && h.leadership.loaded == newest_epoch
        });
        let Some((b, h)) = current else {
            return Ok(());
        };
        let held: BTreeMap<i32, i64> = h
            .core
            .committed_offsets()
            .into_iter()
            .filter(|o| o.group == GROUP)
            .map(|o| (o.partition, o.offset))
            .collect();
        for (p, (offset, generation)) in &self.groups.acked_commits {
            let now = held.get(p).copied().unwrap_or(-1);
            if now < *offset {
                return Err(Violation(format!(
                    "group {GROUP}: coordinator {b} holds offset {now} for {TOPIC}-{p}, below the commit of {offset} acknowledged in generation {generation}"
                )));
            }
        }
        Ok(())
    }

    /// After the heal: the group Stable, every consumer in its generation,
    /// every partition assigned once.
    pub(super) fn check_groups_healed(&self) -> Result<(), Violation> {
        if self.groups.consumers.is_empty() {
            return Ok(());
        }
        let newest_epoch = self.newest_leader_epoch(GROUP_LOG_PARTITION);
        let loaded: Vec<(&i32, &Host)> = self
            .groups
            .hosts
            .iter()
            .filter(|(_, h)| h.leadership.loaded.is_some() && h.leadership.loaded == newest_epoch)
            .collect();
        let Some((b, h)) = loaded.last() else {
            return Err(Violation(format!(
                "group {GROUP}: no coordinator after the heal"
            )));
        };
        let state = h.core.group_state(GROUP);
        let stages: Vec<String> = self
            .groups
            .consumers
            .iter()
            .map(|c| {
                format!(
                    "{} gen {} {:?} {:?}",
                    c.member_id, c.generation, c.stage, c.assigned
                )
            })
            .collect();
        let generations: std::collections::BTreeSet<i32> =
            self.groups.consumers.iter().map(|c| c.generation).collect();
        let mut assigned: Vec<i32> = self
            .groups
            .consumers
            .iter()
            .flat_map(|c| c.assigned.clone())
            .collect();
        assigned.sort_unstable();
        let all: Vec<i32> = (0..self.cfg.partitions).collect();
        if state != Some(GroupState::Stable) || generations.len() != 1 || assigned != all {
            return Err(Violation(format!(
                "group {GROUP} not settled after the heal: coordinator {b} says {state:?}; consumers {stages:?}"
            )));
        }
        Ok(())
    }
}
