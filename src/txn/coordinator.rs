//! `[pure]` The transaction coordinator of one shard (Kafka 3.9's
//! `TransactionCoordinator` + `TransactionStateManager`, KIP-98; seed
//! 000's transaction chapter): the transactional ids of the
//! `__transaction_state` partitions this shard leads, and the flows of
//! InitProducerId, AddPartitionsToTxn / AddOffsetsToTxn and EndTxn over
//! [`super::state`]'s state machine.
//!
//! Events in, actions out, like the group coordinator: each request
//! carries a [`WaiterId`] the driver chose and is answered by an
//! [`Action::Reply`]. Every transition is written first
//! ([`Action::Append`] of the id's record to its partition; the driver
//! appends with acks=all and reports [`Coordinator::on_appended`]) and
//! applied only once written. A new producer id is asked of the driver
//! ([`Action::AllocateProducerId`], answered by
//! [`Coordinator::on_producer_id`]). Ending a transaction: PrepareCommit /
//! PrepareAbort is written and the client answered, then the markers go to
//! the partitions' leaders ([`Action::SendMarkers`], answered by
//! [`Coordinator::on_markers_written`]) and CompleteCommit / CompleteAbort
//! is written. A transaction past its `transaction.timeout.ms` is fenced
//! (epoch + 1) and aborted by [`Coordinator::on_timer`]
//! (`transaction.abort.timed.out.transaction.cleanup.interval.ms` is the
//! driver's period). A partition loaded in PrepareCommit / PrepareAbort
//! sends its markers again (Kafka's `TransactionMarkerChannelManager`
//! after a coordinator failover).

use std::collections::BTreeMap;

use super::records;
use super::state::{TxnMetadata, TxnState, TxnStateError, TxnTransit};
use crate::protocol::ErrorCode;

/// Identifies one waiting request; chosen by the driver.
pub type WaiterId = u64;

/// Kafka's `transaction.max.timeout.ms` default (15 minutes).
pub const DEFAULT_MAX_TIMEOUT_MS: i32 = 900_000;

/// What the coordinator asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Reply(WaiterId, Answer),
    /// Append `(key, value)` to `__transaction_state` partition
    /// `partition`, then call [`Coordinator::on_appended`] with `token`.
    /// `value` `None`: a tombstone (an expired transactional id).
    Append {
        partition: i32,
        key: Vec<u8>,
        value: Option<Vec<u8>>,
        token: u64,
    },
    /// A fresh producer id for `waiter`'s InitProducerId:
    /// [`Coordinator::on_producer_id`].
    AllocateProducerId {
        waiter: WaiterId,
    },
    /// Write these markers (WriteTxnMarkers to each partition's leader,
    /// retried until written or the partition is gone), then call
    /// [`Coordinator::on_markers_written`] with `token`.
    SendMarkers {
        token: u64,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        partitions: Vec<(String, i32)>,
    },
}

/// A request's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    InitProducerId {
        error: ErrorCode,
        producer_id: i64,
        producer_epoch: i16,
    },
    /// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn: one code.
    Done(ErrorCode),
}

impl Answer {
    fn init_error(error: ErrorCode) -> Self {
        Answer::InitProducerId {
            error,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

/// One `__transaction_state` partition this shard coordinates.
#[derive(Debug, Default)]
struct TxnPartition {
    /// The partition's leader epoch when loaded (Kafka's coordinator epoch).
    coordinator_epoch: i32,
    txns: BTreeMap<String, TxnMetadata>,
}

/// What happens once an append is written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Then {
    Reply(WaiterId, Answer),
    /// PrepareCommit / PrepareAbort written: answer (if a client asked)
    /// and send the markers.
    Markers(Option<WaiterId>),
    Nothing,
}

#[derive(Debug)]
struct PendingAppend {
    partition: i32,
    txn_id: String,
    transit: TxnTransit,
    then: Then,
}

/// An InitProducerId waiting for a producer id.
#[derive(Debug)]
struct PendingInit {
    txn_id: String,
    timeout_ms: i32,
    expected: Option<(i64, i16)>,
}

/// Markers in flight: whose transaction they end.
#[derive(Debug)]
struct PendingMarkers {
    partition: i32,
    txn_id: String,
}

/// One shard's transaction coordinator.
#[derive(Debug, Default)]
pub struct Coordinator {
    partition_count: i32,
    max_timeout_ms: i32,
    /// `transactional.id.expiration.ms` (`i64::MAX`: never).
    id_expiration_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`, and
    /// when the next sweep of expired ids is due (set at the first timer).
    id_expiry_interval_ms: i64,
    next_id_expiry_ms: Option<i64>,
    partitions: BTreeMap<i32, TxnPartition>,
    /// Partitions being loaded: requests get COORDINATOR_LOAD_IN_PROGRESS.
    loading: std::collections::BTreeSet<i32>,
    appends: BTreeMap<u64, PendingAppend>,
    inits: BTreeMap<WaiterId, PendingInit>,
    markers: BTreeMap<u64, PendingMarkers>,
    /// CompleteCommit / CompleteAbort appends that failed, to be written
    /// again ([`Coordinator::retry_failed_appends`]).
    retries: Vec<(i32, String, TxnTransit)>,
    next_token: u64,
}

/// Kafka's `TransactionStateManager.partitionFor`: `Utils.abs(id
/// .hashCode) % transaction.state.log.num.partitions`, the group rule.
pub use crate::group::partition::coordinator_partition as partition_for;

impl Coordinator {
    /// `transaction.state.log.num.partitions` and
    /// `transaction.max.timeout.ms`.
    pub fn new(partition_count: i32, max_timeout_ms: i32) -> Self {
        Self {
            partition_count,
            max_timeout_ms,
            id_expiration_ms: i64::MAX,
            id_expiry_interval_ms: 3_600_000,
            ..Self::default()
        }
    }

    /// `transaction.remove.expired.transaction.cleanup.interval.ms`: how
    /// often expired ids are looked for (Kafka's
    /// `TransactionStateManager` schedules `removeExpiredTransactionalIds`
    /// at this period, first after one period).
    #[must_use]
    pub fn with_id_expiry_interval(mut self, ms: i64) -> Self {
        self.id_expiry_interval_ms = ms.max(1);
        self
    }

    /// `transactional.id.expiration.ms`: an id whose transactions are all
    /// ended and that saw no request for this long is removed.
    #[must_use]
    pub fn with_id_expiration(mut self, ms: i64) -> Self {
        self.id_expiration_ms = ms;
        self
    }

    /// `transaction.state.log.num.partitions`.
    pub fn partition_count(&self) -> i32 {
        self.partition_count
    }

    /// The existing topic's partition count (the cluster view; Kafka's
    /// `TransactionStateManager` reads it from ZooKeeper at start-up,
    /// `transaction.state.log.num.partitions` only when the topic does
    /// not exist). Ignored while any partition is loaded or loading:
    /// their transactional ids were mapped with the count before.
    pub fn set_partition_count(&mut self, n: i32) {
        if self.partitions.is_empty() && self.loading.is_empty() {
            self.partition_count = n.max(1);
        }
    }

    pub fn partition_of(&self, transactional_id: &str) -> i32 {
        partition_for(transactional_id, self.partition_count)
    }

    /// Partition `p` starts loading (this shard now leads it).
    pub fn begin_load(&mut self, p: i32) {
        self.loading.insert(p);
    }

    /// Partition `p` loaded from its records (`(key, value or None for a
    /// tombstone)`, in log order) at `coordinator_epoch`. Transactions
    /// found mid-commit or mid-abort send their markers again.
    pub fn on_loaded(
        &mut self,
        p: i32,
        coordinator_epoch: i32,
        records: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> Vec<Action> {
        self.loading.remove(&p);
        let mut part = TxnPartition {
            coordinator_epoch,
            txns: BTreeMap::new(),
        };
        for (key, value) in records {
            // Keys of an unknown version are skipped, as Kafka's loader does.
            let Ok(id) = records::decode_key(key) else {
                continue;
            };
            match value.as_deref().map(records::decode_value) {
                None => {
                    part.txns.remove(&id);
                }
                Some(Ok(v)) => {
                    part.txns.insert(id.clone(), TxnMetadata::from_log(&id, &v));
                }
                Some(Err(_)) => {}
            }
        }
        let ending: Vec<String> = part
            .txns
            .values()
            .filter(|m| matches!(m.state(), TxnState::PrepareCommit | TxnState::PrepareAbort))
            .map(|m| m.transactional_id().to_owned())
            .collect();
        self.partitions.insert(p, part);
        ending
            .into_iter()
            .filter_map(|id| self.send_markers(p, &id))
            .collect()
    }

    /// Partition `p` is no longer led here: its ids are forgotten and
    /// waiting requests answered NOT_COORDINATOR.
    pub fn unload(&mut self, p: i32) -> Vec<Action> {
        self.loading.remove(&p);
        self.partitions.remove(&p);
        self.markers.retain(|_, m| m.partition != p);
        self.retries.retain(|(q, _, _)| *q != p);
        let mut out = Vec::new();
        let tokens: Vec<u64> = self
            .appends
            .iter()
            .filter(|(_, a)| a.partition == p)
            .map(|(t, _)| *t)
            .collect();
        for t in tokens {
            if let Some(a) = self.appends.remove(&t) {
                if let Then::Reply(w, _) | Then::Markers(Some(w)) = a.then {
                    out.push(Action::Reply(w, Answer::Done(ErrorCode::NOT_COORDINATOR)));
                }
            }
        }
        out
    }

    pub fn is_loaded(&self, p: i32) -> bool {
        self.partitions.contains_key(&p)
    }

    /// The metadata of `transactional_id`, if coordinated here.
    pub fn metadata(&self, transactional_id: &str) -> Option<&TxnMetadata> {
        self.partitions
            .get(&self.partition_of(transactional_id))
            .and_then(|p| p.txns.get(transactional_id))
    }

    /// Every transaction coordinated here (ListTransactions).
    pub fn all(&self) -> impl Iterator<Item = &TxnMetadata> {
        self.partitions.values().flat_map(|p| p.txns.values())
    }

    /// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for an id whose
    /// partition is not served here.
    fn serving(&self, txn_id: &str) -> Result<i32, ErrorCode> {
        let p = self.partition_of(txn_id);
        if self.loading.contains(&p) {
            return Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
        }
        if !self.partitions.contains_key(&p) {
            return Err(ErrorCode::NOT_COORDINATOR);
        }
        Ok(p)
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// Write `transit` for `txn_id`; `then` once written.
    fn append(&mut self, p: i32, txn_id: &str, transit: TxnTransit, then: Then) -> Action {
        let token = self.token();
        // Kafka writes an expired id as a tombstone of its key.
        let value = (transit.state != TxnState::Dead)
            .then(|| records::encode_value(&transit.to_log_value()));
        self.appends.insert(
            token,
            PendingAppend {
                partition: p,
                txn_id: txn_id.to_owned(),
                transit,
                then,
            },
        );
        Action::Append {
            partition: p,
            key: records::encode_key(txn_id),
            value,
            token,
        }
    }

    fn txn_mut(&mut self, p: i32, txn_id: &str) -> Option<&mut TxnMetadata> {
        self.partitions.get_mut(&p)?.txns.get_mut(txn_id)
    }
}

/// Kafka's mapping of a refused transition to the client's error.
fn state_error(e: &TxnStateError) -> ErrorCode {
    match e {
        TxnStateError::TransitionPending { .. } => ErrorCode::CONCURRENT_TRANSACTIONS,
        TxnStateError::ProducerFenced { .. } => ErrorCode::PRODUCER_FENCED,
        _ => ErrorCode::INVALID_TXN_STATE,
    }
}

mod flows;
#[cfg(test)]
mod tests;
