//! `[pure]` A transactional id's state (apache/kafka 3.9
//! `core/src/main/scala/kafka/coordinator/transaction/
//! TransactionMetadata.scala`): Kafka's eight `TransactionState`s with
//! their ids, names and transition table, and `TransactionMetadata` as a
//! state machine.
//!
//! Every change takes two steps, as in Kafka. A `prepare_*` call checks
//! the move, records its target as the pending state and returns the
//! [`TxnTransit`] — the metadata to append to `__transaction_state`. Once
//! the append succeeded (acks=all), [`TxnMetadata::complete_transition`]
//! checks the transit against the metadata again and applies it. While a
//! state is pending no other transition can be prepared (the coordinator
//! answers CONCURRENT_TRANSACTIONS); a failed append clears it
//! ([`TxnMetadata::clear_pending_state`], Kafka's
//! `TransactionStateManager.appendTransactionToLog`).
//!
//! The life of a transactional id:
//!
//! ```text
//! InitProducerId:  Empty | CompleteCommit | CompleteAbort → Empty (epoch + 1,
//!                  or a new producer id once the epochs are exhausted)
//! AddPartitions:   Empty | Complete* | Ongoing → Ongoing
//! EndTxn:          Ongoing → PrepareCommit | PrepareAbort
//! markers written: PrepareCommit → CompleteCommit, PrepareAbort → CompleteAbort
//! timeout, or InitProducerId during a transaction:
//!                  Ongoing → (PrepareEpochFence, epoch + 1, never written) → PrepareAbort
//! expiration:      Empty | Complete* → Dead, then a tombstone
//! ```
//!
//! Where Kafka throws `IllegalStateException` (an illegal move, a second
//! pending state, a transit that does not match), a [`TxnStateError`] is
//! returned here and the metadata is left exactly as it was.

use std::collections::BTreeSet;

use super::records::TxnLogValue;

/// No producer id (`RecordBatch.NO_PRODUCER_ID`).
pub const NO_PRODUCER_ID: i64 = -1;
/// No producer epoch (`RecordBatch.NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_EPOCH: i16 = -1;

pub use super::status::TxnState;

/// Whether `producer_epoch` leaves no room for another bump (Kafka's
/// `isEpochExhausted`): Short.MaxValue is kept back so the coordinator can
/// always fence the current producer.
pub fn is_epoch_exhausted(producer_epoch: i16) -> bool {
    producer_epoch >= i16::MAX - 1
}

/// Why a transition was refused. The metadata is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnStateError {
    /// Another transition is being written (CONCURRENT_TRANSACTIONS).
    #[error("a transition to {pending:?} is pending; cannot prepare {to:?}")]
    TransitionPending { pending: TxnState, to: TxnState },
    #[error("a transaction cannot move from {from:?} to {to:?}")]
    IllegalTransition { from: TxnState, to: TxnState },
    /// The request's producer id or epoch is not the current one
    /// (PRODUCER_FENCED).
    #[error("producer {producer_id} epoch {producer_epoch} is fenced")]
    ProducerFenced {
        producer_id: i64,
        producer_epoch: i16,
    },
    /// The epochs of this producer id are used up: the caller allocates a
    /// new producer id and calls `prepare_producer_id_rotation`.
    #[error("producer {producer_id} has exhausted its epochs at {producer_epoch}")]
    EpochExhausted {
        producer_id: i64,
        producer_epoch: i16,
    },
    #[error("cannot fence producer epoch {0}: the bump would overflow")]
    EpochOverflow(i16),
    #[error("illegal new producer id {0}")]
    IllegalProducerId(i64),
    #[error("illegal new producer epoch {0}")]
    IllegalProducerEpoch(i16),
    #[error("cannot rotate the producer id while the transaction is {0:?}")]
    TransactionInProgress(TxnState),
    #[error("{0:?} is neither PrepareCommit nor PrepareAbort")]
    NotAnEndState(TxnState),
    #[error("{what} needs PrepareCommit or PrepareAbort, not {state:?}")]
    NotEnding { what: &'static str, state: TxnState },
    #[error("no transition is pending")]
    NoPendingTransition,
    #[error("the transit to {to:?} does not match the metadata: {reason}")]
    UnexpectedTransit { to: TxnState, reason: &'static str },
    /// Completing an expiration removes the metadata instead.
    #[error("a transition to Dead is completed by removing the metadata")]
    DeadIsRemoved,
}

/// The metadata a transition leads to (Kafka's `TxnTransitMetadata`):
/// appended to the log, then applied by `complete_transition`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnTransit {
    pub producer_id: i64,
    /// The producer id before the transition (Kafka sets it to the
    /// current id in every transit).
    pub last_producer_id: i64,
    pub producer_epoch: i16,
    pub last_producer_epoch: i16,
    pub txn_timeout_ms: i32,
    pub state: TxnState,
    pub topic_partitions: BTreeSet<(String, i32)>,
    pub txn_start_timestamp_ms: i64,
    pub txn_last_update_timestamp_ms: i64,
}

impl TxnTransit {
    /// The record value Kafka writes for this transit
    /// (`TransactionLog.valueToBytes`): the partitions grouped by topic.
    pub fn to_log_value(&self) -> TxnLogValue {
        let mut partitions: Vec<(String, Vec<i32>)> = Vec::new();
        for (topic, partition) in &self.topic_partitions {
            match partitions.last_mut() {
                Some((t, ids)) if t == topic => ids.push(*partition),
                _ => partitions.push((topic.clone(), vec![*partition])),
            }
        }
        TxnLogValue {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            transaction_timeout_ms: self.txn_timeout_ms,
            state: self.state,
            partitions,
            last_update_timestamp_ms: self.txn_last_update_timestamp_ms,
            start_timestamp_ms: self.txn_start_timestamp_ms,
        }
    }
}

/// One transactional id's metadata (Kafka's `TransactionMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    transactional_id: String,
    producer_id: i64,
    last_producer_id: i64,
    producer_epoch: i16,
    last_producer_epoch: i16,
    txn_timeout_ms: i32,
    state: TxnState,
    topic_partitions: BTreeSet<(String, i32)>,
    /// When the first partition was added; -1 before any transaction.
    txn_start_timestamp_ms: i64,
    /// Updated by every completed transition; expiration counts from it.
    txn_last_update_timestamp_ms: i64,
    pending_state: Option<TxnState>,
    /// A fence's epoch bump may not have reached the log (its abort failed
    /// to append); the next fence then reuses the epoch rather than bump
    /// again. Safe because a fenced epoch is never returned to a client.
    has_failed_epoch_fence: bool,
}

impl TxnMetadata {
    /// A transactional id seen for the first time: `Empty`, no epoch yet
    /// (the first InitProducerId bumps it to 0), as the coordinator's
    /// `handleInitProducerId` creates it.
    pub fn new(transactional_id: &str, producer_id: i64, txn_timeout_ms: i32, now_ms: i64) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_owned(),
            producer_id,
            last_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms,
            state: TxnState::Empty,
            topic_partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
            pending_state: None,
            has_failed_epoch_fence: false,
        }
    }

    /// The metadata a loaded record stands for (Kafka's
    /// `TransactionLog.readTxnRecordValue`): the last producer id and epoch
    /// are not stored, and an `Empty` transaction's partitions are ignored.
    pub fn from_log(transactional_id: &str, value: &TxnLogValue) -> Self {
        let topic_partitions = if value.state == TxnState::Empty {
            BTreeSet::new()
        } else {
            value
                .partitions
                .iter()
                .flat_map(|(topic, ids)| ids.iter().map(|p| (topic.clone(), *p)))
                .collect()
        };
        let metadata = TxnMetadata {
            transactional_id: transactional_id.to_owned(),
            producer_id: value.producer_id,
            last_producer_id: NO_PRODUCER_ID,
            producer_epoch: value.producer_epoch,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms: value.transaction_timeout_ms,
            state: value.state,
            topic_partitions,
            txn_start_timestamp_ms: value.start_timestamp_ms,
            txn_last_update_timestamp_ms: value.last_update_timestamp_ms,
            pending_state: None,
            has_failed_epoch_fence: false,
        };
        metadata.check_invariants();
        metadata
    }

    pub fn transactional_id(&self) -> &str {
        &self.transactional_id
    }
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }
    pub fn last_producer_id(&self) -> i64 {
        self.last_producer_id
    }
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }
    pub fn last_producer_epoch(&self) -> i16 {
        self.last_producer_epoch
    }
    pub fn txn_timeout_ms(&self) -> i32 {
        self.txn_timeout_ms
    }
    pub fn state(&self) -> TxnState {
        self.state
    }
    pub fn topic_partitions(&self) -> &BTreeSet<(String, i32)> {
        &self.topic_partitions
    }
    pub fn txn_start_timestamp_ms(&self) -> i64 {
        self.txn_start_timestamp_ms
    }
    pub fn txn_last_update_timestamp_ms(&self) -> i64 {
        self.txn_last_update_timestamp_ms
    }
    pub fn pending_state(&self) -> Option<TxnState> {
        self.pending_state
    }
    pub fn has_failed_epoch_fence(&self) -> bool {
        self.has_failed_epoch_fence
    }

    /// Kafka's `pendingTransitionInProgress`.
    pub fn has_pending_state(&self) -> bool {
        self.pending_state.is_some()
    }

    /// Kafka's `isProducerEpochExhausted`.
    pub fn is_producer_epoch_exhausted(&self) -> bool {
        is_epoch_exhausted(self.producer_epoch)
    }

    /// The current metadata as a transit, nothing changed and no pending
    /// state set (Kafka's `prepareNoTransit`).
    pub fn prepare_no_transit(&self) -> TxnTransit {
        TxnTransit {
            producer_id: self.producer_id,
            last_producer_id: self.last_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: self.last_producer_epoch,
            txn_timeout_ms: self.txn_timeout_ms,
            state: self.state,
            topic_partitions: self.topic_partitions.clone(),
            txn_start_timestamp_ms: self.txn_start_timestamp_ms,
            txn_last_update_timestamp_ms: self.txn_last_update_timestamp_ms,
        }
    }

    /// The checked step every `prepare_*` ends with (Kafka's
    /// `prepareTransitionTo`): no transition pending, a valid producer id,
    /// an epoch unless the target is `Dead`, and a legal move. On success
    /// `next.state` becomes the pending state and the transit is returned
    /// with `last_producer_id` set to the current producer id.
    pub fn prepare_transition_to(
        &mut self,
        mut next: TxnTransit,
    ) -> Result<TxnTransit, TxnStateError> {
        self.check_no_pending(next.state)?;
        if next.producer_id < 0 {
            return Err(TxnStateError::IllegalProducerId(next.producer_id));
        }
        if next.state != TxnState::Dead && next.producer_epoch < 0 {
            return Err(TxnStateError::IllegalProducerEpoch(next.producer_epoch));
        }
        if !self.state.can_move_to(next.state) {
            return Err(TxnStateError::IllegalTransition {
                from: self.state,
                to: next.state,
            });
        }
        next.last_producer_id = self.producer_id;
        self.pending_state = Some(next.state);
        self.check_invariants();
        Ok(next)
    }

    fn check_no_pending(&self, to: TxnState) -> Result<(), TxnStateError> {
        match self.pending_state {
            Some(pending) => Err(TxnStateError::TransitionPending { pending, to }),
            None => Ok(()),
        }
    }

    /// Kafka's `isValidProducerId` (TransactionCoordinator
    /// `prepareInitProducerIdTransit`): a request naming a producer may go
    /// on when the metadata was just created (no epoch yet), when it names
    /// the current producer id, or when it names the previous one with an
    /// exhausted epoch (a retry after a rotation whose answer was lost).
    fn is_valid_producer_id(&self, producer_id: i64, producer_epoch: i16) -> bool {
        self.producer_epoch == NO_PRODUCER_EPOCH
            || producer_id == self.producer_id
            || (producer_id == self.last_producer_id && is_epoch_exhausted(producer_epoch))
    }

    /// InitProducerId for a transactional id that is `Empty` or completed
    /// (Kafka's `prepareIncrementProducerEpoch`, with the coordinator's
    /// checks before it). `expected` is the request's (producer id, epoch)
    /// when the producer is recovering (KIP-360), `None` for a new one:
    /// - none expected: bump the epoch, forget the last one;
    /// - the current epoch expected (or no epoch yet): bump it and remember
    ///   the current one as last;
    /// - the last epoch expected: a retry of a bump that succeeded; keep
    ///   the epochs as they are;
    /// - anything else: PRODUCER_FENCED.
    ///
    /// With the epoch exhausted it returns `EpochExhausted` when no epoch
    /// or the current one is expected: the caller allocates a producer id
    /// and calls [`Self::prepare_producer_id_rotation`]. Another expected
    /// epoch is `ProducerFenced` (Kafka throws IllegalStateException there,
    /// which the client sees as an unknown server error).
    pub fn prepare_increment_producer_epoch(
        &mut self,
        new_txn_timeout_ms: i32,
        expected: Option<(i64, i16)>,
        now_ms: i64,
    ) -> Result<TxnTransit, TxnStateError> {
        self.check_no_pending(TxnState::Empty)?;
        if !self.state.can_move_to(TxnState::Empty) {
            return Err(TxnStateError::IllegalTransition {
                from: self.state,
                to: TxnState::Empty,
            });
        }
        let fenced = |(producer_id, producer_epoch): (i64, i16)| TxnStateError::ProducerFenced {
            producer_id,
            producer_epoch,
        };
        if let Some((id, epoch)) = expected {
            if !self.is_valid_producer_id(id, epoch) {
                return Err(fenced((id, epoch)));
            }
        }
        if self.is_producer_epoch_exhausted() {
            return match expected {
                Some((id, epoch)) if epoch != self.producer_epoch => Err(fenced((id, epoch))),
                _ => Err(TxnStateError::EpochExhausted {
                    producer_id: self.producer_id,
                    producer_epoch: self.producer_epoch,
                }),
            };
        }
        // Not exhausted: the bump stays below Short.MaxValue.
        let bumped = self.producer_epoch + 1;
        let (epoch, last_epoch) = match expected {
            None => (bumped, NO_PRODUCER_EPOCH),
            Some((_, e))
                if self.producer_epoch == NO_PRODUCER_EPOCH || e == self.producer_epoch =>
            {
                (bumped, self.producer_epoch)
            }
            Some((_, e)) if e == self.last_producer_epoch => {
                (self.producer_epoch, self.last_producer_epoch)
            }
            Some(request) => return Err(fenced(request)),
        };
        self.prepare_transition_to(TxnTransit {
            state: TxnState::Empty,
            producer_epoch: epoch,
            last_producer_epoch: last_epoch,
            txn_timeout_ms: new_txn_timeout_ms,
            topic_partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
            ..self.prepare_no_transit()
        })
    }

    /// InitProducerId once the epochs are exhausted (Kafka's
    /// `prepareProducerIdRotation`): a new producer id at epoch 0. With
    /// `record_last_epoch` (the request named the producer) the exhausted
    /// epoch is kept as the last one, so a retry is recognised.
    pub fn prepare_producer_id_rotation(
        &mut self,
        new_producer_id: i64,
        new_txn_timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<TxnTransit, TxnStateError> {
        self.check_no_pending(TxnState::Empty)?;
        if matches!(
            self.state,
            TxnState::Ongoing | TxnState::PrepareAbort | TxnState::PrepareCommit
        ) {
            return Err(TxnStateError::TransactionInProgress(self.state));
        }
        self.prepare_transition_to(TxnTransit {
            state: TxnState::Empty,
            producer_id: new_producer_id,
            producer_epoch: 0,
            last_producer_epoch: if record_last_epoch {
                self.producer_epoch
            } else {
                NO_PRODUCER_EPOCH
            },
            txn_timeout_ms: new_txn_timeout_ms,
            topic_partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
            ..self.prepare_no_transit()
        })
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn (Kafka's
    /// `prepareAddPartitions`): `Ongoing` with the union of the partitions;
    /// a transaction that was not running starts now.
    pub fn prepare_add_partitions(
        &mut self,
        partitions: impl IntoIterator<Item = (String, i32)>,
        now_ms: i64,
    ) -> Result<TxnTransit, TxnStateError> {
        let start_ms = match self.state {
            TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit => now_ms,
            _ => self.txn_start_timestamp_ms,
        };
        let mut topic_partitions = self.topic_partitions.clone();
        topic_partitions.extend(partitions);
        self.prepare_transition_to(TxnTransit {
            state: TxnState::Ongoing,
            topic_partitions,
            txn_start_timestamp_ms: start_ms,
            txn_last_update_timestamp_ms: now_ms,
            ..self.prepare_no_transit()
        })
    }

    /// EndTxn (Kafka's `prepareAbortOrCommit`): `PrepareCommit` or
    /// `PrepareAbort`, all else kept. In 3.9 (no KIP-890 part 2) the epoch
    /// is not bumped here.
    pub fn prepare_abort_or_commit(
        &mut self,
        new_state: TxnState,
        now_ms: i64,
    ) -> Result<TxnTransit, TxnStateError> {
        if !matches!(new_state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return Err(TxnStateError::NotAnEndState(new_state));
        }
        self.prepare_transition_to(TxnTransit {
            state: new_state,
            txn_last_update_timestamp_ms: now_ms,
            ..self.prepare_no_transit()
        })
    }

    /// The markers are written (Kafka's `prepareComplete`): PrepareCommit →
    /// CompleteCommit, PrepareAbort → CompleteAbort, no partitions left.
    /// A fence that failed earlier has now reached the log, so the flag is
    /// cleared (Kafka clears it before the checks; here only on success, so
    /// a refused call changes nothing).
    pub fn prepare_complete(&mut self, now_ms: i64) -> Result<TxnTransit, TxnStateError> {
        let new_state = if self.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        let transit = self.prepare_transition_to(TxnTransit {
            state: new_state,
            topic_partitions: BTreeSet::new(),
            txn_last_update_timestamp_ms: now_ms,
            ..self.prepare_no_transit()
        })?;
        self.has_failed_epoch_fence = false;
        Ok(transit)
    }

    /// Expiration (Kafka's `prepareDead`): the transit is written as a
    /// tombstone and the metadata removed once it is.
    pub fn prepare_dead(&mut self) -> Result<TxnTransit, TxnStateError> {
        self.prepare_transition_to(TxnTransit {
            state: TxnState::Dead,
            topic_partitions: BTreeSet::new(),
            ..self.prepare_no_transit()
        })
    }

    /// Fence the producer of a running transaction before aborting it (a
    /// timeout, or InitProducerId while `Ongoing`; Kafka's
    /// `prepareFenceProducerEpoch`): `PrepareEpochFence` with the epoch
    /// bumped — unless an earlier fence failed to reach the log, whose bump
    /// is reused — and no last epoch. The transit is not appended: it is
    /// handed to [`Self::prepare_fenced_abort`].
    pub fn prepare_fence_producer_epoch(&mut self) -> Result<TxnTransit, TxnStateError> {
        if self.producer_epoch == i16::MAX {
            return Err(TxnStateError::EpochOverflow(self.producer_epoch));
        }
        let epoch = if self.has_failed_epoch_fence {
            self.producer_epoch
        } else {
            self.producer_epoch + 1
        };
        self.prepare_transition_to(TxnTransit {
            state: TxnState::PrepareEpochFence,
            producer_epoch: epoch,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            ..self.prepare_no_transit()
        })
    }

    /// The abort that follows a fence (the `Ongoing` branch of Kafka's
    /// `TransactionCoordinator.endTransaction` with `isFromClient = false`):
    /// the pending `PrepareEpochFence` is dropped, the fenced epoch taken
    /// at once (no last epoch) and `PrepareAbort` prepared. If the abort's
    /// append fails, the caller clears the pending state and calls
    /// [`Self::on_epoch_fence_append_failed`].
    pub fn prepare_fenced_abort(
        &mut self,
        fence: &TxnTransit,
        now_ms: i64,
    ) -> Result<TxnTransit, TxnStateError> {
        if self.pending_state != Some(TxnState::PrepareEpochFence)
            || fence.state != TxnState::PrepareEpochFence
        {
            return Err(TxnStateError::UnexpectedTransit {
                to: TxnState::PrepareAbort,
                reason: "no epoch fence is pending",
            });
        }
        if fence.producer_id != self.producer_id || fence.producer_epoch < self.producer_epoch {
            return Err(TxnStateError::ProducerFenced {
                producer_id: fence.producer_id,
                producer_epoch: fence.producer_epoch,
            });
        }
        let saved = self.clone();
        self.pending_state = None;
        self.producer_epoch = fence.producer_epoch;
        self.last_producer_epoch = NO_PRODUCER_EPOCH;
        let result = self.prepare_abort_or_commit(TxnState::PrepareAbort, now_ms);
        if result.is_err() {
            *self = saved;
        }
        result
    }

    /// The append of a fenced abort failed: its epoch bump may be lost, so
    /// the next fence must not bump again (Kafka sets
    /// `hasFailedEpochFence`).
    pub fn on_epoch_fence_append_failed(&mut self) {
        self.has_failed_epoch_fence = true;
    }

    /// The append of a prepared transit failed: drop the pending state so
    /// the client can retry (TransactionStateManager
    /// `appendTransactionToLog`).
    pub fn clear_pending_state(&mut self) {
        self.pending_state = None;
    }

    /// A partition's marker was written (Kafka's `removePartition`, called
    /// by the marker channel). Returns whether it was part of the
    /// transaction.
    pub fn remove_partition(&mut self, topic: &str, partition: i32) -> Result<bool, TxnStateError> {
        if !matches!(self.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return Err(TxnStateError::NotEnding {
                what: "removing a partition",
                state: self.state,
            });
        }
        Ok(self.topic_partitions.remove(&(topic.to_owned(), partition)))
    }

    /// Apply a transit whose append succeeded (Kafka's
    /// `completeTransitionTo`): its state must be the pending one and it
    /// must fit the metadata ([`Self::transit_mismatch`]). A `Dead` transit
    /// is refused: completing an expiration removes the metadata.
    pub fn complete_transition(&mut self, transit: &TxnTransit) -> Result<(), TxnStateError> {
        let to = self
            .pending_state
            .ok_or(TxnStateError::NoPendingTransition)?;
        if to == TxnState::Dead && transit.state == TxnState::Dead {
            return Err(TxnStateError::DeadIsRemoved);
        }
        if let Some(reason) = self.transit_mismatch(to, transit) {
            return Err(TxnStateError::UnexpectedTransit { to, reason });
        }
        match to {
            TxnState::Empty => {
                self.txn_timeout_ms = transit.txn_timeout_ms;
                self.producer_epoch = transit.producer_epoch;
                self.last_producer_epoch = transit.last_producer_epoch;
                self.producer_id = transit.producer_id;
                self.last_producer_id = transit.last_producer_id;
                // Already empty on every path Kafka takes here (Empty and
                // the completed states hold none). Kafka leaves the set
                // alone; clearing it keeps a loaded record that wrongly
                // lists partitions for a completed transaction from
                // leaking them into the new epoch.
                self.topic_partitions.clear();
            }
            TxnState::Ongoing => {
                self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms;
                self.topic_partitions
                    .extend(transit.topic_partitions.iter().cloned());
            }
            TxnState::CompleteCommit | TxnState::CompleteAbort => {
                self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms;
                self.topic_partitions.clear();
            }
            // The prepare states keep everything but the state and time.
            _ => {}
        }
        self.txn_last_update_timestamp_ms = transit.txn_last_update_timestamp_ms;
        self.pending_state = None;
        self.state = to;
        self.check_invariants();
        Ok(())
    }

    /// What `completeTransitionTo` finds wrong with `transit` for the
    /// pending state `to`, if anything.
    fn transit_mismatch(&self, to: TxnState, transit: &TxnTransit) -> Option<&'static str> {
        if transit.state != to {
            return Some("its state is not the pending state");
        }
        let same_producer = transit.producer_id == self.producer_id
            && transit.producer_epoch == self.producer_epoch;
        let same_timeout = transit.txn_timeout_ms == self.txn_timeout_ms;
        match to {
            TxnState::Empty => {
                let bumped = i32::from(transit.producer_epoch)
                    == i32::from(self.producer_epoch) + 1
                    || (transit.producer_epoch == 0 && transit.producer_id != self.producer_id);
                if transit.producer_epoch != self.producer_epoch && !bumped {
                    Some("the epoch is neither kept, bumped, nor 0 for a new producer id")
                } else if !transit.topic_partitions.is_empty() {
                    Some("an Empty transaction has partitions")
                } else if transit.txn_start_timestamp_ms != -1 {
                    Some("an Empty transaction has a start time")
                } else {
                    None
                }
            }
            TxnState::Ongoing if !same_producer => Some("the producer changed"),
            TxnState::Ongoing if !self.topic_partitions.is_subset(&transit.topic_partitions) => {
                Some("partitions were dropped")
            }
            TxnState::Ongoing if !same_timeout => Some("the timeout changed"),
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                if !same_producer {
                    Some("the producer changed")
                } else if transit.topic_partitions != self.topic_partitions {
                    Some("the partitions changed")
                } else if !same_timeout {
                    Some("the timeout changed")
                } else if transit.txn_start_timestamp_ms != self.txn_start_timestamp_ms {
                    Some("the start time changed")
                } else {
                    None
                }
            }
            TxnState::CompleteCommit | TxnState::CompleteAbort => {
                if !same_producer {
                    Some("the producer changed")
                } else if !same_timeout {
                    Some("the timeout changed")
                } else if transit.txn_start_timestamp_ms == -1 {
                    Some("a completed transaction has no start time")
                } else {
                    None
                }
            }
            // Never a current state: it gives way to PrepareAbort at once.
            TxnState::PrepareEpochFence => Some("PrepareEpochFence is never completed"),
            _ => None,
        }
    }

    /// Invariants every transition keeps; asserted in debug builds.
    pub fn check_invariants(&self) {
        debug_assert!(
            self.state != TxnState::Empty || self.topic_partitions.is_empty(),
            "an Empty transaction has no partitions"
        );
        debug_assert!(
            self.pending_state.is_none_or(|p| self.state.can_move_to(p)),
            "the pending state is a legal move"
        );
    }
}

#[cfg(test)]
mod tests;
