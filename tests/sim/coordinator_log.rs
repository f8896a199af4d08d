//! What the simulation's two coordinators (`txn`, `groups`) share: each
//! runs on the leader of a log partition (`__transaction_state`,
//! `__consumer_offsets`), follows that leadership, and writes its records
//! with acks=all.

use shardlog::protocol::ErrorCode;

use super::replica::Role;
use super::world::{World, MIN_ISR};

/// A coordinator's place in its log partition's leadership: the leader
/// epoch it loaded (its coordinator epoch) or waits to load in.
#[derive(Debug, Default, Clone, Copy)]
pub struct Leadership {
    pub loaded: Option<i32>,
    pub loading: Option<i32>,
}

/// What a coordinator does on a change of leadership ([`Leadership::follow`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct Follow {
    /// Unload what it has (`was_loaded`: a loaded partition, not only a
    /// load begun).
    pub unload: bool,
    pub was_loaded: bool,
    /// Begin loading (requests answered COORDINATOR_LOAD_IN_PROGRESS).
    pub begin: bool,
    /// Load the log now, in this leader epoch.
    pub load: Option<i32>,
}

impl Leadership {
    /// `leads`: the leader epoch this broker leads the partition in, and
    /// whether its HW reached that epoch's start (the broker's
    /// `internal_log::replay` loads only then).
    pub fn follow(&mut self, leads: Option<(i32, bool)>) -> Follow {
        let epoch = leads.map(|(e, _)| e);
        let mut f = Follow::default();
        if self.loaded.is_some() && self.loaded == epoch {
            return f;
        }
        if self.loaded.is_some() || (self.loading.is_some() && self.loading != epoch) {
            f.unload = true;
            f.was_loaded = self.loaded.take().is_some();
            self.loading = None;
        }
        if let Some(e) = epoch.filter(|_| self.loading.is_none()) {
            f.begin = true;
            self.loading = Some(e);
        }
        if let Some((e, true)) = leads {
            f.load = Some(e);
            self.loaded = Some(e);
            self.loading = None;
        }
        f
    }
}

/// A coordinator's record on its way to the HW.
#[derive(Debug, Clone, Copy)]
pub struct LogWrite {
    pub broker: i32,
    pub incarnation: u32,
    pub leader_epoch: i32,
    pub offset: i64,
    pub id: u64,
    pub token: u64,
    pub deadline: i64,
}

impl World {
    /// The leader epoch broker `b` leads `partition` in, and whether it
    /// may load in it: its HW reached that epoch's start and ZooKeeper's
    /// partition state, which `b` can read, names it leader in that epoch
    /// (the broker's `internal_log::replay`).
    pub(super) fn leads(&self, b: i32, partition: i32) -> Option<(i32, bool)> {
        let node = &self.nodes[(b - 1) as usize];
        node.replicas
            .get(&partition)
            .filter(|r| self.up(b) && r.is_leader())
            .map(|r| {
                let confirmed = !node.store.is_cut()
                    && self
                        .zk_states
                        .get(&partition)
                        .is_some_and(|s| s.leader.0 == b && s.leader_epoch.0 == r.leader_epoch);
                (r.leader_epoch, r.hw >= r.epoch_start() && confirmed)
            })
    }

    /// Append record `id` to `partition` on `b`, whose coordinator loaded
    /// leader epoch `loaded`: refused unless `b` still leads in it with
    /// `min.insync.replicas`; the write waits for the HW
    /// ([`Self::log_write_outcome`]).
    pub(super) fn coordinator_log_append(
        &mut self,
        b: i32,
        partition: i32,
        loaded: Option<i32>,
        id: u64,
        token: u64,
        timeout_ms: i64,
    ) -> Result<LogWrite, ErrorCode> {
        let now = self.now;
        let incarnation = self.nodes[(b - 1) as usize].incarnation;
        let Some(r) = self.node(b).replicas.get_mut(&partition) else {
            return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        };
        let Role::Leader(state) = &r.role else {
            return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        };
        if Some(r.leader_epoch) != loaded {
            return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        }
        if state.isr().len() < MIN_ISR {
            return Err(ErrorCode::NOT_ENOUGH_REPLICAS);
        }
        let offset = r.leader_append(now, id);
        Ok(LogWrite {
            broker: b,
            incarnation,
            leader_epoch: r.leader_epoch,
            offset,
            id,
            token,
            deadline: now + timeout_ms,
        })
    }

    /// `None` while `w` waits; then NONE once under the HW,
    /// NOT_LEADER_OR_FOLLOWER once its broker no longer leads in that
    /// epoch, REQUEST_TIMED_OUT past its deadline.
    pub(super) fn log_write_outcome(&self, partition: i32, w: &LogWrite) -> Option<ErrorCode> {
        let n = &self.nodes[(w.broker - 1) as usize];
        let r = n.replicas.get(&partition);
        let leading = n.up
            && n.incarnation == w.incarnation
            && r.is_some_and(|r| r.is_leader() && r.leader_epoch == w.leader_epoch);
        if !leading {
            Some(ErrorCode::NOT_LEADER_OR_FOLLOWER)
        } else if r.is_some_and(|r| r.hw > w.offset) {
            Some(ErrorCode::NONE)
        } else if self.now > w.deadline {
            Some(ErrorCode::REQUEST_TIMED_OUT)
        } else {
            None
        }
    }
}
