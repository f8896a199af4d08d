//! The request flows of the coordinator (Kafka 3.9's
//! `TransactionCoordinator.handleInitProducerId`,
//! `handleAddPartitionsToTransaction`, `handleEndTransaction`,
//! `abortTimedOutTransactions`).

use super::{
    state_error, Action, Answer, Coordinator, PendingInit, PendingMarkers, Then, WaiterId,
};
use crate::protocol::ErrorCode;
use crate::txn::records;
use crate::txn::state::{TxnMetadata, TxnState, TxnStateError};

impl Coordinator {
    /// InitProducerId with a transactional id (`expected`: KIP-360's
    /// producer id and epoch, when the client names them).
    pub fn on_init_producer_id(
        &mut self,
        waiter: WaiterId,
        txn_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
        now_ms: i64,
    ) -> Vec<Action> {
        if txn_id.is_empty() || txn_id.len() > records::STRING_MAX_BYTES {
            return vec![Action::Reply(
                waiter,
                Answer::init_error(ErrorCode::INVALID_REQUEST),
            )];
        }
        // Kafka: `transaction.timeout.ms` must be in (0, transaction.max.timeout.ms].
        if timeout_ms <= 0 || timeout_ms > self.max_timeout_ms {
            return vec![Action::Reply(
                waiter,
                Answer::init_error(ErrorCode::INVALID_TRANSACTION_TIMEOUT),
            )];
        }
        let p = match self.serving(txn_id) {
            Ok(p) => p,
            Err(e) => return vec![Action::Reply(waiter, Answer::init_error(e))],
        };
        let pending = PendingInit {
            txn_id: txn_id.to_owned(),
            timeout_ms,
            expected,
        };
        let Some(meta) = self.txn_mut(p, txn_id) else {
            // A new id: its producer id first.
            self.inits.insert(waiter, pending);
            return vec![Action::AllocateProducerId { waiter }];
        };
        if meta.has_pending_state() {
            return vec![Action::Reply(
                waiter,
                Answer::init_error(ErrorCode::CONCURRENT_TRANSACTIONS),
            )];
        }
        match meta.state() {
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence => {
                vec![Action::Reply(
                    waiter,
                    Answer::init_error(ErrorCode::CONCURRENT_TRANSACTIONS),
                )]
            }
            // A running transaction is fenced and aborted; the client
            // retries on CONCURRENT_TRANSACTIONS until the abort is done.
            TxnState::Ongoing => {
                let mut out = self.fence_and_abort(p, txn_id, now_ms);
                out.push(Action::Reply(
                    waiter,
                    Answer::init_error(ErrorCode::CONCURRENT_TRANSACTIONS),
                ));
                out
            }
            _ => match meta.prepare_increment_producer_epoch(timeout_ms, expected, now_ms) {
                Ok(t) => {
                    let answer = Answer::InitProducerId {
                        error: ErrorCode::NONE,
                        producer_id: t.producer_id,
                        producer_epoch: t.producer_epoch,
                    };
                    vec![self.append(p, txn_id, t, Then::Reply(waiter, answer))]
                }
                Err(TxnStateError::EpochExhausted { .. }) => {
                    self.inits.insert(waiter, pending);
                    vec![Action::AllocateProducerId { waiter }]
                }
                Err(e) => vec![Action::Reply(waiter, Answer::init_error(state_error(&e)))],
            },
        }
    }

    /// The producer id asked for `waiter` (`None`: allocation failed).
    pub fn on_producer_id(
        &mut self,
        waiter: WaiterId,
        producer_id: Option<i64>,
        now_ms: i64,
    ) -> Vec<Action> {
        let Some(init) = self.inits.remove(&waiter) else {
            return Vec::new();
        };
        let Some(pid) = producer_id else {
            return vec![Action::Reply(
                waiter,
                Answer::init_error(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            )];
        };
        let p = match self.serving(&init.txn_id) {
            Ok(p) => p,
            Err(e) => return vec![Action::Reply(waiter, Answer::init_error(e))],
        };
        let txn_id = init.txn_id.clone();
        let part = self.partitions.entry(p).or_default();
        let meta = part
            .txns
            .entry(txn_id.clone())
            .or_insert_with(|| TxnMetadata::new(&txn_id, pid, init.timeout_ms, now_ms));
        let transit = if meta.producer_id() == pid {
            // Kafka: a new id starts at epoch -1 and is bumped to 0.
            meta.prepare_increment_producer_epoch(init.timeout_ms, None, now_ms)
        } else {
            meta.prepare_producer_id_rotation(pid, init.timeout_ms, now_ms, init.expected.is_some())
        };
        match transit {
            Ok(t) => {
                let answer = Answer::InitProducerId {
                    error: ErrorCode::NONE,
                    producer_id: t.producer_id,
                    producer_epoch: t.producer_epoch,
                };
                vec![self.append(p, &txn_id, t, Then::Reply(waiter, answer))]
            }
            Err(e) => vec![Action::Reply(waiter, Answer::init_error(state_error(&e)))],
        }
    }

    /// The checks AddPartitionsToTxn, AddOffsetsToTxn and EndTxn share
    /// (Kafka: unknown id INVALID_PRODUCER_ID_MAPPING, another producer id
    /// INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED, a
    /// pending transition CONCURRENT_TRANSACTIONS).
    fn producer_checked(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<(i32, &mut TxnMetadata), ErrorCode> {
        let p = self.serving(txn_id)?;
        let meta = self
            .txn_mut(p, txn_id)
            .ok_or(ErrorCode::INVALID_PRODUCER_ID_MAPPING)?;
        if meta.producer_id() != producer_id {
            return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if meta.producer_epoch() != epoch {
            return Err(ErrorCode::PRODUCER_FENCED);
        }
        if meta.has_pending_state() {
            return Err(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        Ok((p, meta))
    }

    /// AddPartitionsToTxn (v0–v3) and AddOffsetsToTxn (the group's
    /// `__consumer_offsets` partition): the transaction is Ongoing with
    /// these partitions once written.
    pub fn on_add_partitions(
        &mut self,
        waiter: WaiterId,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<(String, i32)>,
        now_ms: i64,
    ) -> Vec<Action> {
        let reply = |e| vec![Action::Reply(waiter, Answer::Done(e))];
        let (p, meta) = match self.producer_checked(txn_id, producer_id, epoch) {
            Ok(v) => v,
            Err(e) => return reply(e),
        };
        if matches!(
            meta.state(),
            TxnState::PrepareCommit | TxnState::PrepareAbort
        ) {
            return reply(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if meta.state() == TxnState::Ongoing
            && partitions
                .iter()
                .all(|tp| meta.topic_partitions().contains(tp))
        {
            return reply(ErrorCode::NONE);
        }
        match meta.prepare_add_partitions(partitions, now_ms) {
            Ok(t) => {
                let answer = Answer::Done(ErrorCode::NONE);
                vec![self.append(p, txn_id, t, Then::Reply(waiter, answer))]
            }
            Err(e) => reply(state_error(&e)),
        }
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (KIP-890, a leader asking
    /// before a producer's first transactional batch on a partition;
    /// Kafka's `handleVerifyPartitionsInTransaction`): per partition NONE
    /// when the running transaction holds it, TRANSACTION_ABORTABLE when
    /// it does not; one code for all when the producer does not match or
    /// the transaction is ending. Pending states are not checked (the
    /// append's guard is the final check), and nothing is written.
    pub fn verify_partitions(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Vec<ErrorCode> {
        let all = |e: ErrorCode| vec![e; partitions.len()];
        if txn_id.is_empty() {
            return all(ErrorCode::INVALID_REQUEST);
        }
        let p = match self.serving(txn_id) {
            Ok(p) => p,
            Err(e) => return all(e),
        };
        let Some(meta) = self.partitions.get(&p).and_then(|s| s.txns.get(txn_id)) else {
            return all(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        };
        if meta.producer_id() != producer_id {
            return all(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if meta.producer_epoch() != epoch {
            return all(ErrorCode::PRODUCER_FENCED);
        }
        if matches!(
            meta.state(),
            TxnState::PrepareCommit | TxnState::PrepareAbort
        ) {
            return all(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        partitions
            .iter()
            .map(|tp| {
                if meta.topic_partitions().contains(tp) {
                    ErrorCode::NONE
                } else {
                    ErrorCode::TRANSACTION_ABORTABLE
                }
            })
            .collect()
    }

    /// EndTxn: commit or abort the running transaction.
    pub fn on_end_txn(
        &mut self,
        waiter: WaiterId,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now_ms: i64,
    ) -> Vec<Action> {
        let reply = |e| vec![Action::Reply(waiter, Answer::Done(e))];
        let (p, meta) = match self.producer_checked(txn_id, producer_id, epoch) {
            Ok(v) => v,
            Err(e) => return reply(e),
        };
        // Kafka's `endTransaction` table for a client's EndTxn.
        let code = match (meta.state(), commit) {
            (TxnState::Ongoing, _) => None,
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => {
                Some(ErrorCode::NONE)
            }
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Some(ErrorCode::CONCURRENT_TRANSACTIONS)
            }
            (TxnState::PrepareEpochFence, _) => Some(ErrorCode::PRODUCER_FENCED),
            _ => Some(ErrorCode::INVALID_TXN_STATE),
        };
        if let Some(code) = code {
            return reply(code);
        }
        let target = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        match meta.prepare_abort_or_commit(target, now_ms) {
            Ok(t) => vec![self.append(p, txn_id, t, Then::Markers(Some(waiter)))],
            Err(e) => reply(state_error(&e)),
        }
    }

    /// Fence the running transaction's producer and abort it (a timeout,
    /// or InitProducerId while Ongoing).
    fn fence_and_abort(&mut self, p: i32, txn_id: &str, now_ms: i64) -> Vec<Action> {
        let Some(meta) = self.txn_mut(p, txn_id) else {
            return Vec::new();
        };
        let abort = meta
            .prepare_fence_producer_epoch()
            .and_then(|fence| meta.prepare_fenced_abort(&fence, now_ms));
        match abort {
            Ok(t) => vec![self.append(p, txn_id, t, Then::Markers(None))],
            Err(_) => Vec::new(),
        }
    }

    /// An append asked for with `token` was written (`ok`) or failed.
    pub fn on_appended(&mut self, token: u64, ok: bool, now_ms: i64) -> Vec<Action> {
        let Some(a) = self.appends.remove(&token) else {
            return Vec::new();
        };
        let Some(meta) = self.txn_mut(a.partition, &a.txn_id) else {
            return Vec::new();
        };
        if !ok && matches!(a.then, Then::Nothing) && a.transit.state.is_complete() {
            // The markers are written; only the completion is missing.
            // Kafka's `TransactionMarkerChannelManager.tryAppendToLog`
            // keeps the pending state and appends it again (its
            // `txnLogAppendRetryQueue`) until written or the partition
            // moves: dropping it left the id in PrepareCommit /
            // PrepareAbort for good, every EndTxn and InitProducerId
            // answered CONCURRENT_TRANSACTIONS.
            self.retries.push((a.partition, a.txn_id, a.transit));
            return Vec::new();
        }
        if !ok {
            let fenced = a.transit.state == TxnState::PrepareAbort && meta.has_failed_epoch_fence();
            meta.clear_pending_state();
            if matches!(a.then, Then::Markers(None)) || fenced {
                meta.on_epoch_fence_append_failed();
            }
            // Kafka answers a failed coordinator append NOT_COORDINATOR
            // (the client looks the coordinator up again and retries).
            return match a.then {
                Then::Reply(w, Answer::InitProducerId { .. }) => {
                    vec![Action::Reply(
                        w,
                        Answer::init_error(ErrorCode::NOT_COORDINATOR),
                    )]
                }
                Then::Reply(w, _) | Then::Markers(Some(w)) => {
                    vec![Action::Reply(w, Answer::Done(ErrorCode::NOT_COORDINATOR))]
                }
                _ => Vec::new(),
            };
        }
        if a.transit.state == TxnState::Dead {
            // The tombstone is written: the id is gone.
            if let Some(part) = self.partitions.get_mut(&a.partition) {
                part.txns.remove(&a.txn_id);
            }
            return Vec::new();
        }
        if meta.complete_transition(&a.transit).is_err() {
            return Vec::new();
        }
        let _ = now_ms;
        match a.then {
            Then::Reply(w, answer) => vec![Action::Reply(w, answer)],
            Then::Markers(waiter) => {
                let mut out: Vec<Action> = waiter
                    .map(|w| Action::Reply(w, Answer::Done(ErrorCode::NONE)))
                    .into_iter()
                    .collect();
                out.extend(self.send_markers(a.partition, &a.txn_id));
                out
            }
            Then::Nothing => Vec::new(),
        }
    }

    /// The markers of a transaction in PrepareCommit / PrepareAbort.
    pub(super) fn send_markers(&mut self, p: i32, txn_id: &str) -> Option<Action> {
        let coordinator_epoch = self.partitions.get(&p)?.coordinator_epoch;
        let meta = self.txn_mut(p, txn_id)?;
        let commit = match meta.state() {
            TxnState::PrepareCommit => true,
            TxnState::PrepareAbort => false,
            _ => return None,
        };
        let (producer_id, producer_epoch) = (meta.producer_id(), meta.producer_epoch());
        let partitions = meta.topic_partitions().iter().cloned().collect();
        let token = self.token();
        self.markers.insert(
            token,
            PendingMarkers {
                partition: p,
                txn_id: txn_id.to_owned(),
            },
        );
        Some(Action::SendMarkers {
            token,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
            partitions,
        })
    }

    /// Whether a failed completion waits to be appended again.
    pub fn has_retries(&self) -> bool {
        !self.retries.is_empty()
    }

    /// Append again every completion whose append failed (the driver
    /// calls this after a back-off); one no longer pending is dropped.
    pub fn retry_failed_appends(&mut self) -> Vec<Action> {
        let retries = std::mem::take(&mut self.retries);
        let mut out = Vec::new();
        for (p, txn_id, transit) in retries {
            let pending = self
                .txn_mut(p, &txn_id)
                .is_some_and(|m| m.pending_state() == Some(transit.state));
            if pending {
                out.push(self.append(p, &txn_id, transit, Then::Nothing));
            }
        }
        out
    }

    /// Every marker of `token` is written: CompleteCommit / CompleteAbort.
    pub fn on_markers_written(&mut self, token: u64, now_ms: i64) -> Vec<Action> {
        let Some(m) = self.markers.remove(&token) else {
            return Vec::new();
        };
        let Some(meta) = self.txn_mut(m.partition, &m.txn_id) else {
            return Vec::new();
        };
        match meta.prepare_complete(now_ms) {
            Ok(t) => vec![self.append(m.partition, &m.txn_id, t, Then::Nothing)],
            Err(_) => Vec::new(),
        }
    }

    /// Abort every transaction running past its timeout (Kafka's
    /// `abortTimedOutTransactions`): fence its producer, then abort; and,
    /// when due, remove the expired ids (`removeExpiredTransactionalIds`).
    pub fn on_timer(&mut self, now_ms: i64) -> Vec<Action> {
        let expired: Vec<(i32, String)> = self
            .partitions
            .iter()
            .flat_map(|(p, part)| {
                part.txns.values().filter_map(move |m| {
                    let due = m.state() == TxnState::Ongoing
                        && !m.has_pending_state()
                        && m.txn_start_timestamp_ms() + i64::from(m.txn_timeout_ms()) < now_ms;
                    due.then(|| (*p, m.transactional_id().to_owned()))
                })
            })
            .collect();
        let mut out: Vec<Action> = expired
            .into_iter()
            .flat_map(|(p, id)| self.fence_and_abort(p, &id, now_ms))
            .collect();
        // The id sweep has its own period; the timer calling this one runs
        // every `transaction.abort.timed.out.transaction.cleanup.interval.ms`,
        // so the sweep starts at the first tick at or after it is due.
        match self.next_id_expiry_ms {
            None => self.next_id_expiry_ms = Some(now_ms + self.id_expiry_interval_ms),
            Some(due) if now_ms >= due => {
                self.next_id_expiry_ms = Some(now_ms + self.id_expiry_interval_ms);
                out.extend(self.expire_ids(now_ms));
            }
            Some(_) => {}
        }
        out
    }

    /// Kafka's `removeExpiredTransactionalIds`: ids with no running
    /// transaction, idle past `transactional.id.expiration.ms`, are written
    /// as tombstones and removed.
    fn expire_ids(&mut self, now_ms: i64) -> Vec<Action> {
        let limit = self.id_expiration_ms;
        let idle: Vec<(i32, String)> = self
            .partitions
            .iter()
            .flat_map(|(p, part)| {
                part.txns.values().filter_map(move |m| {
                    let due = m.state().is_expiration_allowed()
                        && !m.has_pending_state()
                        && now_ms.saturating_sub(m.txn_last_update_timestamp_ms()) >= limit;
                    due.then(|| (*p, m.transactional_id().to_owned()))
                })
            })
            .collect();
        let mut out = Vec::new();
        for (p, id) in idle {
            let Some(meta) = self.txn_mut(p, &id) else {
                continue;
            };
            if let Ok(t) = meta.prepare_dead() {
                out.push(self.append(p, &id, t, Then::Nothing));
            }
        }
        out
    }
}
