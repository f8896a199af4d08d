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
use shardlog::replication::producer_state::{LoggedBatch, ProducerStateManager};
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

/// The batch header the log holds for record `id` at `offset` (one record
/// per batch; producer epoch 0).
pub fn logged(offset: i64, id: u64) -> Option<LoggedBatch> {
    let (pid, seq) = producer_of(id)?;
    Some(LoggedBatch {
        base_offset: offset,
        last_offset_delta: 0,
        max_timestamp: 0,
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: seq,
        is_control: false,
        is_transactional: false,
        marker: None,
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

    pub fn flush(&mut self) {
        self.flushed = self.log.len();
        self.hw_checkpoint = self.hw;
    }
}
