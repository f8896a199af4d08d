//! `[drv]` A data shard's group coordinator (`group::coordinator`) and the
//! messages it answers; `group_driver` runs it. The coordinator:
//! the shard owning `__consumer_offsets` partition p coordinates the
//! groups of p (ARCHITECTURE.md §2).
//!
//! - Requests ([`GroupCall`]) come from connections on any shard over the
//!   mesh (`router`), or from this shard's own; each gets a waiter the
//!   coordinator answers now or later (a JoinGroup parks until the
//!   rebalance completes — the mesh runs each request as its own task).
//! - One timer task sleeps until the coordinator's next deadline (the
//!   DelayedJoin / DelayedHeartbeat / offset-expiry timers are the
//!   coordinator's own: they are keyed by group and member, not by
//!   partition as the purgatory's are), woken early when a call moved it.
//! - One appender task writes the coordinator's records to
//!   `__consumer_offsets` in order, consecutive appends to one partition in
//!   one batch, each waiting for the high watermark like an acks=all
//!   produce (`offsets.commit.required.acks` -1,
//!   `offsets.commit.timeout.ms`).
//! - On every snapshot, partitions this shard now leads are loaded
//!   (records replayed from the log start to the HW; requests meanwhile get
//!   COORDINATOR_LOAD_IN_PROGRESS) and partitions it lost are unloaded
//!   (NOT_COORDINATOR).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

use glommio::channels::local_channel::LocalSender;

use crate::group::coordinator::{
    Action, Answer, CommitRequest, Coordinator, FetchRequest, GroupConfig, HeartbeatRequest,
    JoinRequest, LeaveRequest, ListedGroup, Records, SyncRequest, WaiterId,
};
use crate::io::local_sync::Notify;
use crate::protocol::ErrorCode;

/// An append queued for the appender: (partition, records, token,
/// transactional producer).
pub(super) type QueuedAppend = (i32, Records, u64, Option<crate::types::TxnWriter>);

/// A request to a shard's group coordinator.
#[derive(Debug)]
pub enum GroupCall {
    Join(JoinRequest),
    Sync(SyncRequest),
    Heartbeat(HeartbeatRequest),
    Leave(LeaveRequest),
    Commit(CommitRequest),
    Fetch(FetchRequest),
    Describe(String),
    /// ListGroups with a state filter (empty: all).
    List(Vec<String>),
    DeleteGroups(Vec<String>),
    OffsetDelete {
        group_id: String,
        partitions: Vec<(String, i32)>,
    },
    /// A transaction marker was written to `__consumer_offsets` partition
    /// `partition` (WriteTxnMarkers): its pending TxnOffsetCommit offsets
    /// are committed or dropped.
    TxnMarker {
        partition: i32,
        producer_id: i64,
        commit: bool,
    },
}

/// Its answer.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupReply {
    Answer(Answer),
    List(ErrorCode, Vec<ListedGroup>),
    /// A call with nothing to answer was applied.
    Done,
    /// The shard has no coordinator, or it went away before answering.
    NotCoordinator,
}

/// A data shard's coordinator and its tasks' shared state.
pub struct GroupHost {
    pub(super) core: RefCell<Coordinator>,
    pub(super) waiters: RefCell<HashMap<WaiterId, LocalSender<GroupReply>>>,
    pub(super) next_waiter: Cell<WaiterId>,
    pub(super) wake_timer: Rc<Notify>,
    pub(super) appends: RefCell<VecDeque<QueuedAppend>>,
    pub(super) wake_appender: Rc<Notify>,
    pub(super) started: Cell<bool>,
    /// Partitions whose load task runs.
    pub(super) loading: RefCell<BTreeSet<i32>>,
    pub(super) commit_timeout_ms: i64,
    /// The cluster view's topics (name → topic id) of the last snapshot:
    /// one gone from the next snapshot, or back with another id, was
    /// deleted (`GroupDriver::on_group_snapshot`).
    pub(super) known_topics: RefCell<HashMap<std::sync::Arc<str>, uuid::Uuid>>,
}

impl GroupHost {
    pub fn new(config: GroupConfig, num_partitions: i32, commit_timeout_ms: i64) -> Self {
        Self {
            core: RefCell::new(Coordinator::new(config, num_partitions)),
            waiters: RefCell::new(HashMap::new()),
            next_waiter: Cell::new(0),
            wake_timer: Rc::new(Notify::default()),
            appends: RefCell::new(VecDeque::new()),
            wake_appender: Rc::new(Notify::default()),
            started: Cell::new(false),
            loading: RefCell::new(BTreeSet::new()),
            commit_timeout_ms,
            known_topics: RefCell::new(HashMap::new()),
        }
    }

    /// The coordinator config of a broker's `group.*` / `offset*` keys.
    pub fn config_of(c: &crate::config::ServerConfig) -> GroupConfig {
        GroupConfig {
            min_session_timeout_ms: c.group_min_session_timeout_ms,
            max_session_timeout_ms: c.group_max_session_timeout_ms,
            initial_rebalance_delay_ms: c.group_initial_rebalance_delay_ms,
            max_size: c.group_max_size,
            new_member_join_timeout_ms: 300_000,
            offset_metadata_max_bytes: usize::try_from(c.offset_metadata_max_bytes).unwrap_or(0),
            offsets_retention_ms: i64::from(c.offsets_retention_minutes) * 60_000,
            offsets_retention_check_interval_ms: c.offsets_retention_check_interval_ms,
        }
    }

    /// The offsets committed in the groups this shard coordinates
    /// (`/metrics`: consumer lag).
    pub fn committed_offsets(&self) -> Vec<crate::metrics::report::CommittedOffset> {
        self.core.borrow().committed_offsets()
    }

    /// `GroupMetadataManager`'s gauges of the groups this shard
    /// coordinates (`/metrics`).
    pub fn group_counts(&self) -> crate::metrics::report::GroupCounts {
        self.core.borrow().group_counts()
    }

    /// Run `actions`: answers to their waiters, appends to the appender.
    pub(super) fn execute(&self, actions: Vec<Action>) {
        let mut any_append = false;
        for a in actions {
            match a {
                Action::Reply(w, answer) => {
                    if let Some(tx) = self.waiters.borrow_mut().remove(&w) {
                        // The caller may have gone (connection closed).
                        let _ = tx.try_send(GroupReply::Answer(answer));
                    }
                }
                Action::Append {
                    partition,
                    records,
                    token,
                    producer,
                } => {
                    self.appends
                        .borrow_mut()
                        .push_back((partition, records, token, producer));
                    any_append = true;
                }
            }
        }
        if any_append {
            self.wake_appender.notify();
        }
        // Deadlines may have moved.
        self.wake_timer.notify();
    }
}
