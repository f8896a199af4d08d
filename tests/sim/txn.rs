//! Transactions (KIP-98) in the simulation: transactional producers, the
//! broker's transaction coordinator (`txn::coordinator::Coordinator`, the
//! pure core the broker's `TxnDriver` runs) on the leader of
//! `__transaction_state`, its records replicated like any other, and the
//! end-transaction markers written by the partitions' leaders.
//!
//! - `__transaction_state` is one partition: the simulated topic's
//!   partition 0 holds its records beside the data (ids tagged
//!   [`TXN_LOG`]); its leader loads them (to its LEO, as the broker's
//!   driver replays the log) when it becomes leader, and unloads them
//!   when it no longer leads, crashes or moves to a new leader epoch (the
//!   coordinator epoch).
//! - A coordinator's append waits for the HW (acks=all); a lost
//!   leadership or a timeout fails it (`Coordinator::on_appended`).
//! - Markers go to each partition's leader (retried until written, as
//!   Kafka's `TransactionMarkerChannelManager`); the leader checks them
//!   (`ProducerStateManager::check_marker`), appends, and answers once
//!   the HW passed the marker.
//! - A producer: InitProducerId, then transactions of 1–3 records over
//!   1–2 partitions: AddPartitionsToTxn, the records (acks=all, retried
//!   with the same sequence), EndTxn commit (mostly) or abort. A fatal
//!   answer (fenced, invalid state) or a record that cannot be written
//!   makes it start over with InitProducerId (which aborts what was open).
//!   Data records go without KIP-890's verification.
//!
//! The checks are in [`super::txn_check`].

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng as _;
use shardlog::protocol::ErrorCode;
use shardlog::txn::coordinator::{Action, Answer, Coordinator, DEFAULT_MAX_TIMEOUT_MS};

use super::coordinator_log::{Leadership, LogWrite};
use super::replica::{MarkerRecord, Role, TXN_LOG};
use super::world::{Acked, Msg, World, CLIENT, MIN_ISR, TOPIC};

/// The partition of the simulated topic that holds `__transaction_state`.
pub const TXN_LOG_PARTITION: i32 = 0;
/// A request or record unanswered this long (simulated ms) is sent again.
pub(super) const RETRY_MS: i64 = 1_000;
/// The back-off of a marker refused with a retriable error.
const MARKER_RETRY_MS: i64 = 200;
/// Sends of one record before the producer gives the transaction up.
pub(super) const MAX_ATTEMPTS: u32 = 6;
/// The producers' `transaction.timeout.ms`.
const TXN_TIMEOUT_MS: i32 = 5_000;
/// How long a coordinator's append or a marker may wait for the HW.
const APPEND_TIMEOUT_MS: i64 = 5_000;
/// `transaction.abort.timed.out.transaction.cleanup.interval.ms`, and the
/// back-off of a failed completion's append (the broker's driver: 200 ms).
const TIMER_MS: i64 = 200;
/// Producer ids the simulation hands out (Kafka: a block from ZooKeeper).
const FIRST_PID: i64 = 5_000;
/// Transactional producers per run.
const PRODUCERS: usize = 2;

/// What travels for transactions.
pub(super) enum TxnMsg {
    /// Client → broker.
    Call { waiter: u64, call: Call },
    /// Broker → client.
    Answer { waiter: u64, answer: Answer },
    /// Coordinator → a partition's leader (WriteTxnMarkers).
    WriteMarker {
        coordinator: i32,
        incarnation: u32,
        token: u64,
        partition: i32,
        marker: MarkerRecord,
    },
    /// Leader → coordinator.
    MarkerWritten {
        incarnation: u32,
        token: u64,
        partition: i32,
        error: ErrorCode,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Call {
    Init {
        txn_id: String,
    },
    Add {
        txn_id: String,
        pid: i64,
        epoch: i16,
        partitions: Vec<i32>,
    },
    End {
        txn_id: String,
        pid: i64,
        epoch: i16,
        commit: bool,
    },
}

/// What a producer was told of a transaction's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stage {
    NeedInit,
    /// A request in flight (resent after `RETRY_MS`).
    Asked(Call),
    Ready,
    /// Writing record `k` of the transaction.
    Producing(usize),
}

#[derive(Debug, Clone)]
pub(super) struct Producer {
    pub(super) txn_id: String,
    pub(super) pid: i64,
    pub(super) epoch: i16,
    /// Next sequence per partition (for this producer id and epoch).
    pub(super) seqs: BTreeMap<i32, i32>,
    pub(super) stage: Stage,
    pub(super) waiter: u64,
    pub(super) sent_at: i64,
    pub(super) attempts: u32,
    /// The open transaction: its number and records (partition, id).
    pub(super) txn: u32,
    pub(super) records: Vec<(i32, u64)>,
}

/// A coordinator's append waiting for the HW of the log partition.
/// A marker appended by a leader, waiting for the HW.
struct MarkerWrite {
    leader: i32,
    incarnation: u32,
    partition: i32,
    offset: i64,
    id: u64,
    coordinator: i32,
    coordinator_incarnation: u32,
    token: u64,
    deadline: i64,
}

/// Markers a coordinator is writing.
struct MarkerJob {
    coordinator_epoch: i32,
    marker: MarkerRecord,
    remaining: BTreeSet<i32>,
    /// Partitions whose WriteTxnMarkers is on its way or unanswered: not
    /// sent again until answered or lost (the broker's driver waits for
    /// each leader's answer, as Kafka's `TransactionMarkerChannelManager`).
    in_flight: BTreeSet<i32>,
    /// When a refused partition may go again (the driver's 200 ms).
    retry_at: BTreeMap<i32, i64>,
}

/// One broker's coordinator.
struct Host {
    core: Coordinator,
    incarnation: u32,
    leadership: Leadership,
    jobs: BTreeMap<u64, MarkerJob>,
}

impl Host {
    fn new(incarnation: u32) -> Self {
        Host {
            core: Coordinator::new(1, DEFAULT_MAX_TIMEOUT_MS),
            incarnation,
            leadership: Leadership::default(),
            jobs: BTreeMap::new(),
        }
    }
}

#[derive(Default)]
pub struct TxnSim {
    /// `__transaction_state` records by index (key, value; `None`: tombstone).
    pub entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    hosts: BTreeMap<i32, Host>,
    pub(super) producers: Vec<Producer>,
    next_pid: i64,
    pub(super) next_waiter: u64,
    pub(super) next_txn: u32,
    appends: Vec<LogWrite>,
    markers: Vec<MarkerWrite>,
    last_timer: i64,
    heal_steps: usize,
    /// What producers were told, by transaction number.
    pub outcomes: BTreeMap<u32, Outcome>,
    /// Each transaction's producer id and acknowledged records.
    pub txn_records: BTreeMap<u32, (i64, Vec<Acked>)>,
}

impl TxnSim {
    pub fn new(on: bool) -> Self {
        let producers = if on { PRODUCERS } else { 0 };
        Self {
            producers: (0..producers)
                .map(|i| Producer {
                    txn_id: format!("sim-txn-{i}"),
                    pid: -1,
                    epoch: -1,
                    seqs: BTreeMap::new(),
                    stage: Stage::NeedInit,
                    waiter: 0,
                    sent_at: 0,
                    attempts: 0,
                    txn: 0,
                    records: Vec::new(),
                })
                .collect(),
            next_pid: FIRST_PID,
            ..Self::default()
        }
    }

    /// The loaded coordinators (for the heal check).
    /// The coordinators loaded in leader epoch `epoch` of the log
    /// partition (the current one; a zombie, still leading an older epoch
    /// because no one told it otherwise, is left out: clients find the
    /// current leader).
    pub fn coordinators_at(&self, epoch: i32) -> impl Iterator<Item = (i32, &Coordinator)> {
        self.hosts
            .iter()
            .filter(move |(_, h)| h.leadership.loaded == Some(epoch))
            .map(|(b, h)| (*b, &h.core))
    }
}

/// Waiter ids carry the producer's index.
pub(super) fn waiter_of(seq: u64, producer: usize) -> u64 {
    seq * 16 + producer as u64
}

impl World {
    /// One step of the transactional side: coordinators follow the log
    /// partition's leadership, appends and markers complete, timers run,
    /// markers are sent again, and producers move on.
    pub(super) fn txn_step(&mut self, faults: bool) {
        if !faults {
            self.txn.heal_steps += 1;
        }
        self.sync_coordinators();
        self.complete_log_appends();
        self.complete_markers();
        if self.now - self.txn.last_timer >= TIMER_MS {
            self.txn.last_timer = self.now;
            let brokers: Vec<i32> = self.txn.hosts.keys().copied().collect();
            for b in brokers {
                let now = self.now;
                let actions = match self.txn.hosts.get_mut(&b) {
                    Some(h) if h.leadership.loaded.is_some() => {
                        let mut a = h.core.on_timer(now);
                        a.extend(h.core.retry_failed_appends());
                        a
                    }
                    _ => continue,
                };
                self.execute(b, actions);
            }
        }
        self.resend_markers();
        // New transactions only in the first half of the heal: the rest
        // is for the open ones to end (the liveness check).
        let begin = faults || self.txn.heal_steps < self.cfg.heal_steps / 2;
        for i in 0..self.txn.producers.len() {
            if self.rng.gen_bool(0.4) {
                self.producer_step(i, begin);
            }
        }
    }

    /// A broker died: its coordinator's memory with it.
    pub(super) fn txn_crash(&mut self, id: i32) {
        self.txn.hosts.remove(&id);
        self.txn.appends.retain(|a| a.broker != id);
        let (lost, kept) = std::mem::take(&mut self.txn.markers)
            .into_iter()
            .partition(|m| m.leader == id);
        self.txn.markers = kept;
        let lost: Vec<MarkerWrite> = lost;
        for m in lost {
            // The coordinator's connection to the dead leader fails.
            self.marker_lost(
                m.coordinator,
                m.coordinator_incarnation,
                m.token,
                m.partition,
            );
        }
    }

    /// Coordinators follow the log partition's leadership. A new leader
    /// loads once its HW reached the start of its leader epoch (the
    /// broker's `internal_log::replay`): until then requests are answered
    /// COORDINATOR_LOAD_IN_PROGRESS.
    fn sync_coordinators(&mut self) {
        for b in 1..=self.cfg.brokers {
            let incarnation = self.nodes[(b - 1) as usize].incarnation;
            let leads = self.leads(b, TXN_LOG_PARTITION);
            let host = self
                .txn
                .hosts
                .entry(b)
                .or_insert_with(|| Host::new(incarnation));
            let follow = host.leadership.follow(leads);
            let mut actions = Vec::new();
            if follow.unload {
                actions.extend(host.core.unload(TXN_LOG_PARTITION));
                host.jobs.clear();
            }
            if follow.begin {
                host.core.begin_load(TXN_LOG_PARTITION);
            }
            if follow.was_loaded {
                self.log(format!("broker {b} no longer coordinates transactions"));
            }
            if let Some(epoch) = follow.load {
                let log = &self.nodes[(b - 1) as usize].replicas[&TXN_LOG_PARTITION].log;
                let records: Vec<(Vec<u8>, Option<Vec<u8>>)> = log
                    .iter()
                    .filter(|(_, id)| id & TXN_LOG != 0)
                    .map(|(_, id)| self.txn.entries[(id & !TXN_LOG) as usize].clone())
                    .collect();
                let host = self.txn.hosts.get_mut(&b).expect("host");
                actions.extend(host.core.on_loaded(TXN_LOG_PARTITION, epoch, &records));
                let line = format!(
                    "broker {b} coordinates transactions at epoch {epoch} ({} records loaded)",
                    records.len()
                );
                self.log(line);
            }
            self.execute(b, actions);
        }
    }

    /// Carry out a coordinator's actions (and what they lead to).
    fn execute(&mut self, b: i32, actions: Vec<Action>) {
        let mut queue: std::collections::VecDeque<Action> = actions.into();
        while let Some(a) = queue.pop_front() {
            let now = self.now;
            let more = match a {
                Action::Reply(waiter, answer) => {
                    self.send(b, CLIENT, Msg::Txn(TxnMsg::Answer { waiter, answer }));
                    Vec::new()
                }
                Action::AllocateProducerId { waiter } => {
                    let pid = self.txn.next_pid;
                    self.txn.next_pid += 1;
                    match self.txn.hosts.get_mut(&b) {
                        Some(h) => h.core.on_producer_id(waiter, Some(pid), now),
                        None => Vec::new(),
                    }
                }
                Action::Append {
                    key, value, token, ..
                } => self.coordinator_append(b, key, value, token),
                Action::SendMarkers {
                    token,
                    producer_id,
                    producer_epoch,
                    coordinator_epoch,
                    commit,
                    partitions,
                } => {
                    let marker = MarkerRecord {
                        pid: producer_id,
                        epoch: producer_epoch,
                        coordinator_epoch,
                        commit,
                    };
                    if let Some(h) = self.txn.hosts.get_mut(&b) {
                        h.jobs.insert(
                            token,
                            MarkerJob {
                                coordinator_epoch,
                                marker,
                                remaining: partitions.iter().map(|(_, p)| *p).collect(),
                                in_flight: BTreeSet::new(),
                                retry_at: BTreeMap::new(),
                            },
                        );
                    }
                    let what = if commit { "COMMIT" } else { "ABORT" };
                    self.log(format!(
                        "broker {b} writes {what} markers of producer {producer_id} epoch {producer_epoch} to {partitions:?}"
                    ));
                    Vec::new()
                }
            };
            queue.extend(more);
        }
    }

    /// Append a `__transaction_state` record on `b`, the log partition's
    /// leader (acks=all); a failure at once when it cannot be written.
    fn coordinator_append(
        &mut self,
        b: i32,
        key: Vec<u8>,
        value: Option<Vec<u8>>,
        token: u64,
    ) -> Vec<Action> {
        let now = self.now;
        let loaded = self.txn.hosts.get(&b).and_then(|h| h.leadership.loaded);
        let id = TXN_LOG | self.txn.entries.len() as u64;
        match self.coordinator_log_append(
            b,
            TXN_LOG_PARTITION,
            loaded,
            id,
            token,
            APPEND_TIMEOUT_MS,
        ) {
            Ok(write) => {
                self.txn.entries.push((key, value));
                self.txn.appends.push(write);
                Vec::new()
            }
            Err(_) => match self.txn.hosts.get_mut(&b) {
                Some(h) => h.core.on_appended(token, false, now),
                None => Vec::new(),
            },
        }
    }

    fn complete_log_appends(&mut self) {
        let now = self.now;
        let appends = std::mem::take(&mut self.txn.appends);
        let mut done = Vec::new();
        for a in appends {
            match self.log_write_outcome(TXN_LOG_PARTITION, &a) {
                None => self.txn.appends.push(a),
                Some(e) => done.push((a, e == ErrorCode::NONE)),
            }
        }
        for (a, written) in done {
            self.log(format!(
                "broker {}: transaction state append {} {}",
                a.broker,
                a.token,
                if written {
                    format!("written at offset {}", a.offset)
                } else {
                    "failed".to_string()
                }
            ));
            if written {
                self.acked.push(Acked {
                    partition: TXN_LOG_PARTITION,
                    offset: a.offset,
                    id: a.id,
                });
            }
            let actions = match self.txn.hosts.get_mut(&a.broker) {
                Some(h) => h.core.on_appended(a.token, written, now),
                None => continue,
            };
            self.execute(a.broker, actions);
        }
    }

    /// Markers not yet written go (again) to the partition's leader.
    fn resend_markers(&mut self) {
        let now = self.now;
        let mut sends = Vec::new();
        for (b, h) in self.txn.hosts.iter_mut() {
            for (token, job) in h.jobs.iter_mut() {
                for p in &job.remaining {
                    if job.in_flight.contains(p) || job.retry_at.get(p).is_some_and(|t| now < *t) {
                        continue;
                    }
                    sends.push((*b, h.incarnation, *token, *p, job.marker));
                }
            }
        }
        for (b, incarnation, token, partition, marker) in sends {
            if let Some(to) = self.leader_in_metadata(partition) {
                if let Some(job) = self
                    .txn
                    .hosts
                    .get_mut(&b)
                    .and_then(|h| h.jobs.get_mut(&token))
                {
                    job.in_flight.insert(partition);
                }
                let msg = TxnMsg::WriteMarker {
                    coordinator: b,
                    incarnation,
                    token,
                    partition,
                    marker,
                };
                self.send(b, to, Msg::Txn(msg));
            }
        }
    }

    fn complete_markers(&mut self) {
        let now = self.now;
        let nodes = &self.nodes;
        let mut answers = Vec::new();
        let mut acked = Vec::new();
        self.txn.markers.retain(|m| {
            let n = &nodes[(m.leader - 1) as usize];
            let r = n.replicas.get(&m.partition);
            let error = if !r.is_some_and(|r| r.is_leader()) {
                // Kafka's purgatory completes the produce with
                // NOT_LEADER_OR_FOLLOWER when the leader steps down.
                ErrorCode::NOT_LEADER_OR_FOLLOWER
            } else if r.is_some_and(|r| r.hw > m.offset) {
                acked.push(Acked {
                    partition: m.partition,
                    offset: m.offset,
                    id: m.id,
                });
                ErrorCode::NONE
            } else if now > m.deadline {
                ErrorCode::REQUEST_TIMED_OUT
            } else {
                return true;
            };
            debug_assert!(
                n.up && n.incarnation == m.incarnation,
                "dropped at the crash"
            );
            answers.push((
                m.leader,
                m.coordinator,
                m.coordinator_incarnation,
                m.token,
                m.partition,
                error,
            ));
            false
        });
        self.acked.extend(acked);
        for (l, c, incarnation, token, partition, error) in answers {
            let msg = TxnMsg::MarkerWritten {
                incarnation,
                token,
                partition,
                error,
            };
            self.send(l, c, Msg::Txn(msg));
        }
    }

    /// A transactional or group message to `to` was lost.
    pub(super) fn on_lost(&mut self, to: i32, msg: Msg) {
        match msg {
            Msg::Txn(m) => self.on_txn_lost(to, m),
            Msg::Group(m) => self.on_group_lost(m),
            _ => {}
        }
    }

    /// A message `from → to` was lost (an end crashed, or `to` was down):
    /// a marker request or its answer lost is a failed request for the
    /// coordinator, which sends it again.
    pub(super) fn on_txn_lost(&mut self, to: i32, msg: TxnMsg) {
        let (coordinator, incarnation, token, partition) = match msg {
            TxnMsg::WriteMarker {
                coordinator,
                incarnation,
                token,
                partition,
                ..
            } => (coordinator, incarnation, token, partition),
            TxnMsg::MarkerWritten {
                incarnation,
                token,
                partition,
                ..
            } => (to, incarnation, token, partition),
            _ => return,
        };
        self.marker_lost(coordinator, incarnation, token, partition);
    }

    fn marker_lost(&mut self, coordinator: i32, incarnation: u32, token: u64, partition: i32) {
        if !self.up(coordinator) {
            return;
        }
        let msg = TxnMsg::MarkerWritten {
            incarnation,
            token,
            partition,
            error: ErrorCode::REQUEST_TIMED_OUT,
        };
        self.send(coordinator, coordinator, Msg::Txn(msg));
    }

    /// A transactional message arrives at `to` (a broker, or the client).
    pub(super) fn on_txn_msg(&mut self, from: i32, to: i32, msg: TxnMsg) {
        let now = self.now;
        match msg {
            TxnMsg::Call { waiter, call } => {
                // A broker without a coordinator yet (just restarted)
                // answers NOT_COORDINATOR, as any broker does.
                let incarnation = self.nodes[(to - 1) as usize].incarnation;
                let h = self
                    .txn
                    .hosts
                    .entry(to)
                    .or_insert_with(|| Host::new(incarnation));
                let actions = match call {
                    Call::Init { txn_id } => {
                        h.core
                            .on_init_producer_id(waiter, &txn_id, TXN_TIMEOUT_MS, None, now)
                    }
                    Call::Add {
                        txn_id,
                        pid,
                        epoch,
                        partitions,
                    } => {
                        let tps = partitions.iter().map(|p| (TOPIC.to_owned(), *p)).collect();
                        h.core
                            .on_add_partitions(waiter, &txn_id, pid, epoch, tps, now)
                    }
                    Call::End {
                        txn_id,
                        pid,
                        epoch,
                        commit,
                    } => h.core.on_end_txn(waiter, &txn_id, pid, epoch, commit, now),
                };
                self.execute(to, actions);
            }
            TxnMsg::Answer { waiter, answer } => self.on_txn_answer(waiter, answer),
            TxnMsg::WriteMarker {
                coordinator,
                incarnation,
                token,
                partition,
                marker,
            } => self.on_write_marker(to, coordinator, incarnation, token, partition, marker),
            TxnMsg::MarkerWritten {
                incarnation,
                token,
                partition,
                error,
            } => {
                let Some(h) = self.txn.hosts.get_mut(&to) else {
                    return;
                };
                if h.incarnation != incarnation {
                    return;
                }
                let Some(job) = h.jobs.get_mut(&token) else {
                    return;
                };
                job.in_flight.remove(&partition);
                // The broker's driver (`txn_driver::written`): a marker
                // refused for an older producer or coordinator epoch is
                // not retried; other errors go again after 200 ms.
                let refused = matches!(
                    error,
                    ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::TRANSACTION_COORDINATOR_FENCED
                );
                if error != ErrorCode::NONE && !refused {
                    job.retry_at.insert(partition, now + MARKER_RETRY_MS);
                }
                if error != ErrorCode::NONE {
                    let line = format!(
                        "broker {to}: marker of {TOPIC}-{partition} not written by {from}: {error:?}{}",
                        if refused { " (not retried)" } else { "" }
                    );
                    self.log(line);
                    if !refused {
                        return;
                    }
                }
                let Some(h) = self.txn.hosts.get_mut(&to) else {
                    return;
                };
                let Some(job) = h.jobs.get_mut(&token) else {
                    return;
                };
                job.remaining.remove(&partition);
                if !job.remaining.is_empty() || h.leadership.loaded != Some(job.coordinator_epoch) {
                    return;
                }
                h.jobs.remove(&token);
                let actions = h.core.on_markers_written(token, now);
                self.execute(to, actions);
            }
        }
    }

    /// WriteTxnMarkers on the partition's leader: checked against the
    /// producer state, appended (acks=all), answered once under the HW.
    fn on_write_marker(
        &mut self,
        to: i32,
        coordinator: i32,
        coordinator_incarnation: u32,
        token: u64,
        partition: i32,
        marker: MarkerRecord,
    ) {
        let now = self.now;
        let incarnation = self.nodes[(to - 1) as usize].incarnation;
        let node = self.node(to);
        let refused = match node.replicas.get_mut(&partition) {
            Some(r) => match &r.role {
                Role::Leader(state) if state.isr().len() < MIN_ISR => {
                    Some(ErrorCode::NOT_ENOUGH_REPLICAS)
                }
                Role::Leader(_) => r
                    .producers
                    .check_marker(marker.pid, marker.epoch, marker.coordinator_epoch)
                    .err()
                    .map(|e| ErrorCode(e.error_code())),
                _ => Some(ErrorCode::NOT_LEADER_OR_FOLLOWER),
            },
            None => Some(ErrorCode::NOT_LEADER_OR_FOLLOWER),
        };
        if let Some(error) = refused {
            let msg = TxnMsg::MarkerWritten {
                incarnation: coordinator_incarnation,
                token,
                partition,
                error,
            };
            self.send(to, coordinator, Msg::Txn(msg));
            return;
        }
        let r = node.replicas.get_mut(&partition).expect("leader replica");
        let id = super::replica::marker_id(marker);
        let offset = r.leader_append(now, id);
        self.txn.markers.push(MarkerWrite {
            leader: to,
            incarnation,
            partition,
            offset,
            id,
            coordinator,
            coordinator_incarnation,
            token,
            deadline: now + APPEND_TIMEOUT_MS,
        });
        let what = if marker.commit { "COMMIT" } else { "ABORT" };
        self.log(format!(
            "broker {to} appends {what} marker of producer {} epoch {} at {TOPIC}-{partition} offset {offset}",
            marker.pid, marker.epoch
        ));
    }
}
