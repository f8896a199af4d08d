//! `[drv]` A data shard's transaction coordinator (`txn::coordinator`) and
//! the messages it answers; `txn_driver` runs it. The shard owning
//! `__transaction_state` partition p (and leading it) coordinates the
//! transactional ids of p (CLUSTER.md: coordinators run on the owner shard
//! of their partition and load / unload with its leadership), as the group
//! coordinator does for `__consumer_offsets`.
//!
//! - Requests ([`TxnCall`]) come from connections on any shard over the
//!   mesh, each with a waiter the coordinator answers now or later (after
//!   its record is written).
//! - One appender task writes records to `__transaction_state` in order,
//!   each acks=all.
//! - One timer task aborts timed-out transactions every
//!   `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
//! - Marker tasks send WriteTxnMarkers to the leaders of a transaction's
//!   partitions, retrying until every marker is written.
//! - Producer ids come from the control shard's block (`/latest_producer_id_block`).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

use glommio::channels::local_channel::LocalSender;

use crate::io::local_sync::Notify;
use crate::protocol::ErrorCode;
use crate::txn::coordinator::{Action, Answer, Coordinator, WaiterId};

/// A request to a shard's transaction coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnCall {
    InitProducerId {
        txn_id: String,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    },
    AddPartitions {
        txn_id: String,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<(String, i32)>,
    },
    EndTxn {
        txn_id: String,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    },
    /// AddPartitionsToTxn v4+ `verify_only` (KIP-890): answered
    /// `Verified`, one code per partition.
    Verify {
        txn_id: String,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<(String, i32)>,
    },
    Describe(Vec<String>),
    /// ListTransactions: state names and producer ids to keep (empty: all),
    /// and (v1, -1: none) the least time a transaction has been running.
    List {
        states: Vec<String>,
        producer_ids: Vec<i64>,
        min_duration_ms: i64,
    },
}

/// One transaction as DescribeTransactions shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedTxn {
    pub txn_id: String,
    pub error: ErrorCode,
    pub state: String,
    pub timeout_ms: i32,
    pub start_ms: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub partitions: Vec<(String, i32)>,
}

/// One transaction as ListTransactions shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTxn {
    pub txn_id: String,
    pub producer_id: i64,
    pub state: String,
}

/// Its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnReply {
    Answer(Answer),
    Described(Vec<DescribedTxn>),
    Listed(Vec<ListedTxn>),
    Verified(Vec<ErrorCode>),
    /// The shard has no coordinator, or it went away before answering.
    NotCoordinator,
}

/// A record to write: (partition, key, value, token).
pub(super) type QueuedAppend = (i32, Vec<u8>, Option<Vec<u8>>, u64);

/// Markers to send: (token, producer id, epoch, coordinator epoch,
/// commit, partitions).
pub(super) type MarkerJob = (u64, i64, i16, i32, bool, Vec<(String, i32)>);

/// A data shard's transaction coordinator and its tasks' shared state.
pub struct TxnHost {
    pub(super) core: RefCell<Coordinator>,
    pub(super) waiters: RefCell<HashMap<WaiterId, LocalSender<TxnReply>>>,
    pub(super) next_waiter: Cell<WaiterId>,
    pub(super) appends: RefCell<VecDeque<QueuedAppend>>,
    pub(super) wake_appender: Rc<Notify>,
    /// Producer ids to allocate for these waiters.
    pub(super) allocations: RefCell<Vec<WaiterId>>,
    pub(super) markers: RefCell<Vec<MarkerJob>>,
    pub(super) wake_workers: Rc<Notify>,
    pub(super) started: Cell<bool>,
    pub(super) loading: RefCell<BTreeSet<i32>>,
    /// How long an append waits for the HW (`request.timeout.ms`).
    pub(super) append_timeout_ms: i64,
    pub(super) abort_interval_ms: i64,
    /// Kept connections to other brokers (markers, verifications).
    pub(super) peers: crate::shard::peer_conns::PeerConns,
    /// `shardlog.txn.verify.delay.ms`: KIP-890 verifications this shard's
    /// connections started (the hook holds back every other one).
    pub(super) verifications_started: Cell<u64>,
}

impl TxnHost {
    /// `inter_broker_tls`: the TLS client configuration of the
    /// inter-broker listener (`None`: PLAINTEXT), for the connections to
    /// other brokers (markers, KIP-890 verification).
    pub fn new(
        config: &crate::config::ServerConfig,
        inter_broker_tls: crate::io::broker_stream::BrokerLink,
    ) -> Self {
        Self {
            core: RefCell::new(
                Coordinator::new(
                    config.transaction_state_log_num_partitions,
                    config.transaction_max_timeout_ms,
                )
                .with_id_expiration(i64::from(config.transactional_id_expiration_ms))
                .with_id_expiry_interval(i64::from(
                    config.transaction_remove_expired_transaction_cleanup_interval_ms,
                )),
            ),
            waiters: RefCell::new(HashMap::new()),
            next_waiter: Cell::new(0),
            appends: RefCell::new(VecDeque::new()),
            wake_appender: Rc::new(Notify::default()),
            allocations: RefCell::new(Vec::new()),
            markers: RefCell::new(Vec::new()),
            wake_workers: Rc::new(Notify::default()),
            started: Cell::new(false),
            loading: RefCell::new(BTreeSet::new()),
            append_timeout_ms: 30_000,
            peers: crate::shard::peer_conns::PeerConns::new(inter_broker_tls),
            verifications_started: Cell::new(0),
            abort_interval_ms: i64::from(
                config
                    .transaction_abort_timed_out_transaction_cleanup_interval_ms
                    .max(1),
            ),
        }
    }

    /// Run `actions`: answers to their waiters, appends to the appender,
    /// producer-id allocations and markers to the workers.
    pub(super) fn execute(&self, actions: Vec<Action>) {
        let (mut append, mut work) = (false, false);
        for a in actions {
            match a {
                Action::Reply(w, answer) => {
                    if let Some(tx) = self.waiters.borrow_mut().remove(&w) {
                        let _ = tx.try_send(TxnReply::Answer(answer));
                    }
                }
                Action::Append {
                    partition,
                    key,
                    value,
                    token,
                } => {
                    self.appends
                        .borrow_mut()
                        .push_back((partition, key, value, token));
                    append = true;
                }
                Action::AllocateProducerId { waiter } => {
                    self.allocations.borrow_mut().push(waiter);
                    work = true;
                }
                Action::SendMarkers {
                    token,
                    producer_id,
                    producer_epoch,
                    coordinator_epoch,
                    commit,
                    partitions,
                } => {
                    self.markers.borrow_mut().push((
                        token,
                        producer_id,
                        producer_epoch,
                        coordinator_epoch,
                        commit,
                        partitions,
                    ));
                    work = true;
                }
            }
        }
        if append {
            self.wake_appender.notify();
        }
        if work {
            self.wake_workers.notify();
        }
    }
}
