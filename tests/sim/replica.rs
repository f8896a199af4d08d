//! One broker's replica of one partition in the simulation: a log of
//! (leader epoch, record id) entries, its leader epoch cache, HW, the part
//! already flushed, and the role the last LeaderAndIsr gave it. The rules
//! are the broker's own pure cores: the leader's HW and ISR rule
//! (`replication::isr::LeaderReplicaState`), truncation by leader epoch
//! (`replication::truncation`), the idempotent producers' state
//! (`replication::producer_state`, kept with the log as the broker keeps
//! it: every append recorded, rebuilt from the log after a truncation or a
//! crash); what is simulated is only the log's bytes.

use shardlog::replication::isr::{IsrActions, LeaderLog, LeaderReplicaState};
use shardlog::replication::producer_state::{LoggedBatch, ProducerStateManager, TxnMarker};
use shardlog::replication::truncation::end_offset_for;
use shardlog::types::BrokerId;

/// Record ids with this bit come from an idempotent producer: the
/// producer id and the sequence are in the id (a retry sends the same id).
pub const IDEMPOTENT: u64 = 1 << 62;

/// The idempotent id of `(producer id, sequence)`.
pub fn idempotent_id(pid: i64, seq: i32) -> u64 {
    IDEMPOTENT | ((pid as u64) << 32) | seq as u32 as u64
}

/// `(producer id, sequence)` of an idempotent record id.
pub fn producer_of(id: u64) -> Option<(i64, i32)> {
    (id & IDEMPOTENT != 0).then_some((((id & !IDEMPOTENT) >> 32) as i64, id as u32 as i32))
}

/// Record ids with this bit are a transactional producer's record:
/// producer id (bits 45..58), epoch (36..45), transaction number (16..36,
/// the simulation's own label, for the checks) and sequence (0..16).
pub const TXN_DATA: u64 = 1 << 60;
/// Record ids with this bit are an end-transaction marker: producer id
/// (bits 45..58), epoch (36..45), coordinator epoch (1..36), commit (0).
/// (The tags' bits stay clear of the fields.)
pub const TXN_MARKER: u64 = 1 << 59;
/// Record ids with this bit are a `__transaction_state` record: the rest
/// indexes [`super::txn::TxnSim::entries`] (the key and value bytes).
pub const TXN_LOG: u64 = 1 << 58;

/// A transactional record of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnRecord {
    pub pid: i64,
    pub epoch: i16,
    pub txn: u32,
    pub seq: i32,
}

pub fn txn_data_id(r: TxnRecord) -> u64 {
    let id = TXN_DATA
        | ((r.pid as u64 & 0x1fff) << 45)
        | ((r.epoch as u64 & 0x1ff) << 36)
        | ((u64::from(r.txn) & 0xf_ffff) << 16)
        | (r.seq as u64 & 0xffff);
    assert_eq!(txn_data_of(id), Some(r), "a field outgrew its bits");
    id
}

pub fn txn_data_of(id: u64) -> Option<TxnRecord> {
    (id & TXN_DATA != 0).then_some(TxnRecord {
        pid: ((id >> 45) & 0x1fff) as i64,
        epoch: ((id >> 36) & 0x1ff) as i16,
        txn: ((id >> 16) & 0xf_ffff) as u32,
        seq: (id & 0xffff) as i32,
    })
}

/// An end-transaction marker of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerRecord {
    pub pid: i64,
    pub epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
}

pub fn marker_id(m: MarkerRecord) -> u64 {
    let id = TXN_MARKER
        | ((m.pid as u64 & 0x1fff) << 45)
        | ((m.epoch as u64 & 0x1ff) << 36)
        | ((m.coordinator_epoch as u64 & 0x7_ffff_ffff) << 1)
        | u64::from(m.commit);
    assert_eq!(marker_of(id), Some(m), "a field outgrew its bits");
    id
}

pub fn marker_of(id: u64) -> Option<MarkerRecord> {
    (id & TXN_MARKER != 0).then_some(MarkerRecord {
        pid: ((id >> 45) & 0x1fff) as i64,
        epoch: ((id >> 36) & 0x1ff) as i16,
        coordinator_epoch: ((id >> 1) & 0x7_ffff_ffff) as i32,
        commit: id & 1 == 1,
    })
}

/// The producer identity of a record: `(producer id, epoch, sequence)`
/// of an idempotent or transactional one.
pub fn sequenced(id: u64) -> Option<(i64, i16, i32)> {
    if let Some((pid, seq)) = producer_of(id) {
        return Some((pid, 0, seq));
    }
    txn_data_of(id).map(|t| (t.pid, t.epoch, t.seq))
}

/// The batch header the log holds for record `id` at `offset` (one record
/// per batch; an idempotent producer's epoch is 0).
pub fn logged(offset: i64, id: u64) -> Option<LoggedBatch> {
    let base = LoggedBatch {
        base_offset: offset,
        last_offset_delta: 0,
        max_timestamp: 0,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        is_control: false,
        is_transactional: false,
        marker: None,
    };
    if let Some(m) = marker_of(id) {
        return Some(LoggedBatch {
            producer_id: m.pid,
            producer_epoch: m.epoch,
            is_control: true,
            is_transactional: true,
            marker: Some(TxnMarker {
                commit: m.commit,
                coordinator_epoch: m.coordinator_epoch,
            }),
            ..base
        });
    }
    let (pid, epoch, seq) = sequenced(id)?;
    Some(LoggedBatch {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        is_transactional: id & TXN_DATA != 0,
        ..base
    })
}

/// `replica.lag.time.max.ms` in the simulation.
pub const LAG_MS: i64 = 3_000;

#[derive(Debug, Clone)]
pub enum Role {
    /// Not served (not hosted, stopped, or after a crash until told again).
    Stopped,
    Leader(Box<LeaderReplicaState>),
    /// Following `leader`; `truncating` until the OffsetForLeaderEpoch
    /// exchange of this leader epoch is done.
    Follower {
        leader: BrokerId,
        truncating: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Replica {
    /// Offset = index: (leader epoch, record id).
    pub log: Vec<(i32, u64)>,
    /// (epoch, start offset), ascending (Kafka's leader-epoch-checkpoint).
    pub epochs: Vec<(i32, i64)>,
    pub hw: i64,
    /// The HW as last checkpointed (what a restart starts from).
    pub hw_checkpoint: i64,
    /// Entries of `log` that reached the disk.
    pub flushed: usize,
    pub leader_epoch: i32,
    pub role: Role,
    /// The idempotent producers' state for this log.
    pub producers: ProducerStateManager,
}

impl Replica {
    pub fn new() -> Self {
        Self {
            log: Vec::new(),
            epochs: Vec::new(),
            hw: 0,
            hw_checkpoint: 0,
            flushed: 0,
            leader_epoch: -1,
            role: Role::Stopped,
            producers: ProducerStateManager::new(),
        }
    }

    pub fn leo(&self) -> i64 {
        self.log.len() as i64
    }

    pub fn is_leader(&self) -> bool {
        matches!(self.role, Role::Leader(_))
    }

    pub fn leader_log(&self) -> LeaderLog {
        LeaderLog {
            log_end_offset: self.leo(),
            high_watermark: self.hw,
        }
    }

    /// Append one record written in `epoch`.
    pub fn append(&mut self, epoch: i32, id: u64) {
        if self.epochs.last().is_none_or(|(e, _)| *e < epoch) {
            self.epochs.push((epoch, self.leo()));
        }
        if let Some(batch) = logged(self.leo(), id) {
            self.producers.on_replay(&batch);
        }
        self.log.push((epoch, id));
    }

    /// The producer state rebuilt by replaying the whole log (the broker's
    /// `load_producer_state` with no snapshot to start from).
    fn reload_producers(&mut self) {
        self.producers = ProducerStateManager::new();
        for (offset, (_, id)) in self.log.iter().enumerate() {
            if let Some(batch) = logged(offset as i64, *id) {
                self.producers.on_replay(&batch);
            }
        }
    }

    /// Cut the log at `offset` (Kafka's `truncateTo`: the epoch cache
    /// loses the entries starting at or past it; the HW never exceeds
    /// the LEO).
    pub fn truncate_to(&mut self, offset: i64) {
        let offset = offset.clamp(0, self.leo());
        self.log.truncate(offset as usize);
        self.epochs.retain(|(_, start)| *start < offset);
        self.flushed = self.flushed.min(self.log.len());
        self.hw = self.hw.min(offset);
        self.reload_producers();
    }

    /// The leader's epoch cache as OffsetForLeaderEpoch answers from it:
    /// the current epoch counts from the LEO before its first append, as
    /// the broker's `Partition::last_offset_for_epoch` does.
    pub fn epochs_for_answer(&self) -> Vec<(i32, i64)> {
        let mut epochs = self.epochs.clone();
        if self.is_leader() && epochs.last().is_none_or(|(e, _)| *e < self.leader_epoch) {
            epochs.push((self.leader_epoch, self.leo()));
        }
        epochs
    }

    /// Where the current leader epoch starts (leader side).
    pub fn epoch_start(&self) -> i64 {
        self.epochs_for_answer()
            .iter()
            .find(|(e, _)| *e == self.leader_epoch)
            .map_or(self.leo(), |(_, s)| *s)
    }

    /// OffsetForLeaderEpoch, answered as leader.
    pub fn end_offset_for(&self, epoch: i32) -> (i32, i64) {
        end_offset_for(&self.epochs_for_answer(), epoch, self.leo())
    }

    /// The leader appends `id` in its epoch and runs its HW rule
    /// (`LeaderReplicaState::on_leader_append`); the record's offset.
    pub fn leader_append(&mut self, now_ms: i64, id: u64) -> i64 {
        let offset = self.leo();
        self.append(self.leader_epoch, id);
        let log = self.leader_log();
        if let Role::Leader(state) = &mut self.role {
            let a = state.on_leader_append(now_ms, log);
            self.apply(a);
        }
        offset
    }

    /// Apply what the leader's rule decided; the proposed ISR, if any.
    pub fn apply(&mut self, actions: IsrActions) -> Option<Vec<BrokerId>> {
        if let Some(hw) = actions.high_watermark_advanced {
            self.hw = self.hw.max(hw);
        }
        actions.propose_isr
    }

    /// A crash: what was not flushed is gone; the HW restarts from its
    /// checkpoint (never past the log).
    pub fn crash(&mut self) {
        self.log.truncate(self.flushed);
        let leo = self.leo();
        self.epochs.retain(|(_, start)| *start < leo);
        self.hw = self.hw_checkpoint.min(leo);
        self.role = Role::Stopped;
        self.leader_epoch = -1;
        self.reload_producers();
    }

    /// The last stable offset (Kafka's `UnifiedLog.lastStableOffset`):
    /// the first offset that may not be stable yet, or the HW.
    pub fn last_stable_offset(&self) -> i64 {
        self.producers
            .first_unstable_offset(self.hw)
            .map_or(self.hw, |(o, _)| o.min(self.hw))
    }

    pub fn flush(&mut self) {
        self.flushed = self.log.len();
        self.hw_checkpoint = self.hw;
    }
}
