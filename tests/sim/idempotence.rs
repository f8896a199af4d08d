//! Idempotent producers (KIP-98) in the simulation: one per partition,
//! acks=all, one request in flight (the broker keeps the last
//! `BATCHES_KEPT` = 5 batches per producer, as Kafka does, so one in flight
//! meets the same rule), retried with the same sequence to whichever broker
//! the client's metadata names as leader until it is acknowledged (no
//! `delivery.timeout.ms`: a record is retried until it lands). The leader
//! checks every produce against its producer state
//! (`ProducerStateManager::check`): a retry of a batch already in its log
//! is answered with the original offset and not appended again. The
//! invariant (`check::check_no_duplicates`): no replica's log holds one
//! producer's sequence twice.

use rand::Rng as _;
use shardlog::replication::producer_state::{ProducerBatch, SeqCheck};
use shardlog::types::TopicPartition;

use super::replica::{idempotent_id, producer_of, sequenced, Role, TXN_DATA};
use super::world::{Msg, World, CLIENT, TOPIC};

/// A request not acknowledged within this (simulated ms) is sent again
/// (the client's `request.timeout.ms`, shortened).
const RETRY_MS: i64 = 1_000;
/// Producer ids: partition p's producer is `PID_BASE + p`.
const PID_BASE: i64 = 4_000;

/// One idempotent producer and its record in flight.
#[derive(Debug, Clone)]
pub struct IdempotentProducer {
    pub pid: i64,
    pub partition: i32,
    /// The sequence of the record being sent (the next one once acked).
    pub seq: i32,
    /// When it was last sent, while not yet acknowledged.
    pub sent_at: Option<i64>,
}

/// What the leader does with an idempotent produce.
pub enum Verdict {
    /// Append it (in sequence).
    Append,
    /// Already in the log at this offset: wait for the HW to pass it.
    Duplicate(i64),
    /// Refused (out of order, fenced epoch): the client retries later.
    Refused(String),
}

pub fn producers(partitions: i32) -> Vec<IdempotentProducer> {
    (0..partitions)
        .map(|p| IdempotentProducer {
            pid: PID_BASE + i64::from(p),
            partition: p,
            seq: 0,
            sent_at: None,
        })
        .collect()
}

impl World {
    /// One producer (at random) sends its record, or sends it again once
    /// the last attempt timed out.
    pub(super) fn idempotent_produce(&mut self) {
        if self.idempotent.is_empty() {
            return;
        }
        let i = self.rng.gen_range(0..self.idempotent.len());
        let now = self.now;
        let p = self.idempotent[i].clone();
        if p.sent_at.is_some_and(|t| now - t < RETRY_MS) {
            return;
        }
        let Some(to) = self.leader_in_metadata(p.partition) else {
            return;
        };
        let id = idempotent_id(p.pid, p.seq);
        if p.sent_at.is_some() {
            self.log(format!(
                "producer {} retries sequence {} of {TOPIC}-{} to broker {to}",
                p.pid, p.seq, p.partition
            ));
        }
        self.idempotent[i].sent_at = Some(now);
        self.send(
            CLIENT,
            to,
            Msg::Produce {
                tp: TopicPartition::new(TOPIC, p.partition),
                id,
            },
        );
    }

    /// The record `id` was acknowledged: its producer moves on.
    pub(super) fn on_idempotent_acked(&mut self, id: u64) {
        let Some((pid, seq)) = producer_of(id) else {
            return;
        };
        if let Some(p) = self
            .idempotent
            .iter_mut()
            .find(|p| p.pid == pid && p.seq == seq)
        {
            p.seq += 1;
            p.sent_at = None;
        }
    }
}

/// The leader's check of record `id` against its producer state.
pub fn judge(r: &super::replica::Replica, id: u64) -> Verdict {
    let Some((pid, epoch, seq)) = sequenced(id) else {
        return Verdict::Append;
    };
    debug_assert!(matches!(r.role, Role::Leader(_)));
    let batch = ProducerBatch {
        producer_id: pid,
        epoch,
        first_seq: seq,
        last_seq: seq,
        is_transactional: id & TXN_DATA != 0,
    };
    match r.producers.check(&batch) {
        Ok(SeqCheck::Append) => Verdict::Append,
        Ok(SeqCheck::Duplicate(meta)) => Verdict::Duplicate(meta.first_offset),
        Err(e) => Verdict::Refused(format!("{e:?}")),
    }
}
