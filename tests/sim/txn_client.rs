//! The transactional producers of the simulation (see [`super::txn`]):
//! InitProducerId, then transactions of 1–3 records over 1–2
//! partitions: AddPartitionsToTxn, the records (acks=all, retried with
//! the same sequence), EndTxn commit (mostly) or abort. A fatal answer
//! (fenced, invalid state) or a record that cannot be written makes the
//! producer start over with InitProducerId (which aborts what was open).

use rand::Rng as _;
use shardlog::protocol::ErrorCode;
use shardlog::txn::coordinator::Answer;
use shardlog::types::TopicPartition;

use super::replica::{txn_data_id, txn_data_of, TxnRecord};
use super::txn::{
    waiter_of, Call, Outcome, Stage, TxnMsg, MAX_ATTEMPTS, RETRY_MS, TXN_LOG_PARTITION,
};
use super::world::{Acked, Msg, World, CLIENT, TOPIC};

impl World {
    /// A transactional record was acknowledged.
    pub(super) fn on_txn_acked(&mut self, a: Acked) {
        let Some(t) = txn_data_of(a.id) else {
            return;
        };
        self.txn
            .txn_records
            .entry(t.txn)
            .or_insert_with(|| (t.pid, Vec::new()))
            .1
            .push(a);
        for p in &mut self.txn.producers {
            if let Stage::Producing(k) = p.stage {
                if p.records.get(k).is_some_and(|(_, id)| *id == a.id) {
                    p.stage = Stage::Producing(k + 1);
                    p.attempts = 0;
                    p.sent_at = i64::MIN / 2;
                }
            }
        }
    }
    pub(super) fn on_txn_answer(&mut self, waiter: u64, answer: Answer) {
        let i = (waiter % 16) as usize;
        let Some(p) = self.txn.producers.get(i) else {
            return;
        };
        let Stage::Asked(call) = p.stage.clone() else {
            return;
        };
        if p.waiter != waiter {
            return;
        }
        let error = match answer {
            Answer::InitProducerId {
                error,
                producer_id,
                producer_epoch,
            } => {
                if error == ErrorCode::NONE {
                    let p = &mut self.txn.producers[i];
                    p.pid = producer_id;
                    p.epoch = producer_epoch;
                    p.seqs.clear();
                    p.stage = Stage::Ready;
                    let line = format!(
                        "{} has producer {producer_id} epoch {producer_epoch}",
                        p.txn_id
                    );
                    self.log(line);
                    return;
                }
                error
            }
            Answer::Done(error) => error,
        };
        let p = &mut self.txn.producers[i];
        let retriable = matches!(
            error,
            ErrorCode::NOT_COORDINATOR
                | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
                | ErrorCode::COORDINATOR_NOT_AVAILABLE
                | ErrorCode::CONCURRENT_TRANSACTIONS
        );
        let line = match (&call, error) {
            (_, e) if retriable => {
                // Sent again after the back-off.
                p.sent_at = self.now - RETRY_MS + 100;
                format!("{}: {call:?} answered {e:?}, retried", p.txn_id)
            }
            (Call::Add { .. }, ErrorCode::NONE) => {
                p.stage = Stage::Producing(0);
                p.sent_at = i64::MIN / 2;
                p.attempts = 0;
                format!("{} transaction {} begins: {:?}", p.txn_id, p.txn, p.records)
            }
            (Call::End { commit, .. }, ErrorCode::NONE) => {
                let outcome = if *commit {
                    Outcome::Committed
                } else {
                    Outcome::Aborted
                };
                self.txn.outcomes.insert(p.txn, outcome);
                p.stage = Stage::Ready;
                format!("{} transaction {} {outcome:?}", p.txn_id, p.txn)
            }
            (_, e) => {
                p.stage = Stage::NeedInit;
                format!("{}: {call:?} answered {e:?}: starts over", p.txn_id)
            }
        };
        self.log(line);
    }
    /// Producer `i` moves on (or sends again what timed out).
    pub(super) fn producer_step(&mut self, i: usize, begin: bool) {
        let now = self.now;
        let p = self.txn.producers[i].clone();
        match &p.stage {
            Stage::NeedInit => {
                let call = Call::Init {
                    txn_id: p.txn_id.clone(),
                };
                self.ask(i, call);
            }
            Stage::Asked(call) => {
                if now - p.sent_at >= RETRY_MS {
                    self.ask(i, call.clone());
                }
            }
            Stage::Ready if begin => self.begin_txn(i),
            Stage::Ready => {}
            Stage::Producing(k) => {
                let Some((partition, id)) = p.records.get(*k).copied() else {
                    let commit = self.rng.gen_bool(0.8);
                    let call = Call::End {
                        txn_id: p.txn_id.clone(),
                        pid: p.pid,
                        epoch: p.epoch,
                        commit,
                    };
                    self.ask(i, call);
                    return;
                };
                if now - p.sent_at < RETRY_MS {
                    return;
                }
                if p.attempts >= MAX_ATTEMPTS {
                    self.txn.producers[i].stage = Stage::NeedInit;
                    self.log(format!(
                        "{}: record {id:#x} not written: starts over",
                        p.txn_id
                    ));
                    return;
                }
                let Some(to) = self.leader_in_metadata(partition) else {
                    return;
                };
                let q = &mut self.txn.producers[i];
                q.attempts += 1;
                q.sent_at = now;
                let tp = TopicPartition::new(TOPIC, partition);
                self.send(CLIENT, to, Msg::Produce { tp, id });
            }
        }
    }
    /// A new transaction: its partitions and records, then
    /// AddPartitionsToTxn.
    fn begin_txn(&mut self, i: usize) {
        let n = self.cfg.partitions;
        let first = self.rng.gen_range(0..n);
        let mut partitions = vec![first];
        if n > 1 && self.rng.gen_bool(0.6) {
            partitions.push((first + self.rng.gen_range(1..n)) % n);
        }
        self.txn.next_txn += 1;
        let txn = self.txn.next_txn;
        let mut records = Vec::new();
        let p = &mut self.txn.producers[i];
        for &partition in &partitions {
            for _ in 0..self.rng.gen_range(1..=3) {
                let seq = p.seqs.entry(partition).or_insert(0);
                let id = txn_data_id(TxnRecord {
                    pid: p.pid,
                    epoch: p.epoch,
                    txn,
                    seq: *seq,
                });
                *seq += 1;
                records.push((partition, id));
            }
        }
        p.txn = txn;
        p.records = records;
        let call = Call::Add {
            txn_id: p.txn_id.clone(),
            pid: p.pid,
            epoch: p.epoch,
            partitions,
        };
        self.ask(i, call);
    }
    /// Send `call` to the coordinator the producer finds (the log
    /// partition's leader, as FindCoordinator answers).
    fn ask(&mut self, i: usize, call: Call) {
        self.txn.next_waiter += 1;
        let waiter = waiter_of(self.txn.next_waiter, i);
        let now = self.now;
        let p = &mut self.txn.producers[i];
        p.waiter = waiter;
        p.sent_at = now;
        p.stage = Stage::Asked(call.clone());
        if let Some(to) = self.leader_in_metadata(TXN_LOG_PARTITION) {
            self.send(CLIENT, to, Msg::Txn(TxnMsg::Call { waiter, call }));
        }
    }
}
