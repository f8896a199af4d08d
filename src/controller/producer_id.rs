//! `[pure]` Producer-id allocation in blocks (Kafka's `ZkProducerIdManager`,
//! used by InitProducerId and, on the controller, AllocateProducerIds).
//!
//! Brokers reserve producer ids 1000 at a time by rewriting
//! `/latest_producer_id_block` with a version check: read the last block,
//! propose the next one (`block_end + 1 ..= block_end + 1000`), write it
//! conditionally; a `BadVersion` means another broker got there first, so
//! read again. Ids are then handed out from the reserved block in memory.
//!
//! This file is the pure core: [`ProducerIdManager`] (events in, actions
//! out) and the block it hands ids from. It does no I/O and reads no
//! clock. The `[drv]` half is [`store`]: [`store::generate_producer_id`]
//! and [`store::allocate_producer_id_block`] drive the core over a
//! `MetadataStore` (the admin manager's InitProducerId, the controller's
//! AllocateProducerIds).

use crate::types::{BrokerId, ProducerId};
use crate::zk::paths::ProducerIdBlockZNode;
use crate::zk::store::StoreError;

pub mod store;

/// `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`.
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;
/// Not in Kafka (it loops forever): after this many lost races in a row we
/// give up and let the client retry InitProducerId.
pub const MAX_BLOCK_WRITE_ATTEMPTS: u32 = 64;

/// A reserved range of producer ids (`ProducerIdsBlock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdsBlock {
    pub assigned_broker_id: BrokerId,
    pub first_producer_id: ProducerId,
    pub size: i64,
}

impl ProducerIdsBlock {
    pub fn last_producer_id(&self) -> ProducerId {
        self.first_producer_id + self.size - 1
    }
    pub fn next_block_first_id(&self) -> ProducerId {
        self.first_producer_id + self.size
    }
    fn to_znode(self) -> ProducerIdBlockZNode {
        ProducerIdBlockZNode {
            version: 1,
            broker: self.assigned_broker_id,
            block_start: self.first_producer_id,
            block_end: self.last_producer_id(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerIdError {
    /// Kafka: "Have exhausted all producerIds." (fatal there).
    #[error("Have exhausted all producerIds.")]
    Exhausted,
    #[error("corrupt /latest_producer_id_block: {0}")]
    Corrupt(String),
    #[error("lost {MAX_BLOCK_WRITE_ATTEMPTS} races for a producer id block")]
    TooManyConflicts,
    #[error("metadata store error: {0}")]
    Store(#[from] StoreError),
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProducerIdAction {
    /// Read `/latest_producer_id_block` (data and version) and call
    /// [`ProducerIdManager::on_block_read`].
    ReadBlockZnode,
    /// Set `/latest_producer_id_block` to `data` if its version is still
    /// `expected_version`, then call `on_block_written` or `on_write_conflict`.
    WriteBlockZnode {
        data: Vec<u8>,
        expected_version: i32,
    },
}

/// The pure core of Kafka's ZooKeeper-mode `ProducerIdManager`.
#[derive(Debug, Clone)]
pub struct ProducerIdManager {
    broker_id: BrokerId,
    current: Option<ProducerIdsBlock>,
    next_producer_id: ProducerId,
    /// The block proposed in the write in flight.
    proposed: Option<ProducerIdsBlock>,
}

impl ProducerIdManager {
    pub fn new(broker_id: BrokerId) -> Self {
        Self {
            broker_id,
            current: None,
            next_producer_id: 0,
            proposed: None,
        }
    }

    /// The block ids are handed out from, if any.
    pub fn current_block(&self) -> Option<ProducerIdsBlock> {
        self.current
    }

    /// Next id from the current block; `None` when a new block is needed
    /// (then run [`ProducerIdAction::ReadBlockZnode`]).
    pub fn generate_producer_id(&mut self) -> Option<ProducerId> {
        let block = self.current?;
        if self.next_producer_id > block.last_producer_id() {
            return None;
        }
        let id = self.next_producer_id;
        self.next_producer_id += 1;
        self.check_invariants();
        Some(id)
    }

    /// The znode was read: propose the next block. Empty data (the node as
    /// `createTopLevelPaths` makes it) means no block was ever handed out.
    pub fn on_block_read(
        &mut self,
        data: &[u8],
        version: i32,
    ) -> Result<ProducerIdAction, ProducerIdError> {
        let next = if data.is_empty() {
            ProducerIdsBlock {
                assigned_broker_id: self.broker_id,
                first_producer_id: 0,
                size: PRODUCER_ID_BLOCK_SIZE,
            }
        } else {
            let last = ProducerIdBlockZNode::decode(data)
                .map_err(|e| ProducerIdError::Corrupt(e.to_string()))?;
            if last.block_end < last.block_start || last.block_start < 0 {
                return Err(ProducerIdError::Corrupt(format!(
                    "block {}..{} is not a range",
                    last.block_start, last.block_end
                )));
            }
            if last.block_end > i64::MAX - PRODUCER_ID_BLOCK_SIZE {
                return Err(ProducerIdError::Exhausted);
            }
            ProducerIdsBlock {
                assigned_broker_id: self.broker_id,
                first_producer_id: last.block_end + 1,
                size: PRODUCER_ID_BLOCK_SIZE,
            }
        };
        self.proposed = Some(next);
        self.check_invariants();
        Ok(ProducerIdAction::WriteBlockZnode {
            data: next.to_znode().encode(),
            expected_version: version,
        })
    }

    /// The conditional write succeeded: the proposed block is ours.
    pub fn on_block_written(&mut self) -> Option<ProducerIdsBlock> {
        let block = self.proposed.take()?;
        self.current = Some(block);
        self.next_producer_id = block.first_producer_id;
        self.check_invariants();
        Some(block)
    }

    /// Another broker wrote first (BadVersion): read again.
    pub fn on_write_conflict(&mut self) -> ProducerIdAction {
        self.proposed = None;
        self.check_invariants();
        ProducerIdAction::ReadBlockZnode
    }

    /// Ids come from a non-empty block owned by this broker and never
    /// run past one past its end.
    pub fn check_invariants(&self) {
        if let Some(block) = self.current {
            debug_assert!(block.size > 0);
            debug_assert_eq!(block.assigned_broker_id, self.broker_id);
            debug_assert!(self.next_producer_id >= block.first_producer_id);
            debug_assert!(self.next_producer_id <= block.last_producer_id() + 1);
        }
        if let Some(proposed) = self.proposed {
            debug_assert!(self
                .current
                .is_none_or(|c| proposed.first_producer_id != c.first_producer_id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/latest_producer_id_block` payload (the store's tests use it too).
    pub(super) fn block_json(broker: i32, start: i64, end: i64) -> Vec<u8> {
        ProducerIdBlockZNode {
            version: 1,
            broker: BrokerId(broker),
            block_start: start,
            block_end: end,
        }
        .encode()
    }

    #[test]
    fn first_block_starts_at_zero() {
        let mut m = ProducerIdManager::new(BrokerId(1));
        assert_eq!(m.generate_producer_id(), None);
        let action = m.on_block_read(b"", 0).unwrap();
        assert_eq!(
            action,
            ProducerIdAction::WriteBlockZnode {
                data: br#"{"version":1,"broker":1,"block_start":"0","block_end":"999"}"#.to_vec(),
                expected_version: 0
            }
        );
        let block = m.on_block_written().unwrap();
        assert_eq!(
            (block.first_producer_id, block.last_producer_id()),
            (0, 999)
        );
        assert_eq!(m.generate_producer_id(), Some(0));
        assert_eq!(m.generate_producer_id(), Some(1));
    }

    #[test]
    fn next_block_follows_the_stored_block_end() {
        let rows = [
            (0, 999, 1000, 1999),
            (1000, 1999, 2000, 2999),
            (5, 7, 8, 1007),
        ];
        for (start, end, want_first, want_last) in rows {
            let mut m = ProducerIdManager::new(BrokerId(2));
            let action = m.on_block_read(&block_json(9, start, end), 4).unwrap();
            let ProducerIdAction::WriteBlockZnode {
                data,
                expected_version,
            } = action
            else {
                panic!("expected a write");
            };
            assert_eq!(expected_version, 4);
            let written = ProducerIdBlockZNode::decode(&data).unwrap();
            assert_eq!(
                (written.broker, written.block_start, written.block_end),
                (BrokerId(2), want_first, want_last)
            );
            let block = m.on_block_written().unwrap();
            assert_eq!(block.first_producer_id, want_first);
        }
    }

    #[test]
    fn conflict_discards_the_proposal_and_rereads() {
        let mut m = ProducerIdManager::new(BrokerId(1));
        m.on_block_read(&block_json(1, 0, 999), 1).unwrap();
        assert_eq!(m.on_write_conflict(), ProducerIdAction::ReadBlockZnode);
        assert_eq!(m.on_block_written(), None);
        assert_eq!(m.generate_producer_id(), None);
    }

    #[test]
    fn exhausted_and_corrupt_blocks_are_errors() {
        let mut m = ProducerIdManager::new(BrokerId(1));
        let near_max = block_json(1, i64::MAX - 1500, i64::MAX - 500);
        assert_eq!(
            m.on_block_read(&near_max, 0),
            Err(ProducerIdError::Exhausted)
        );
        assert!(matches!(
            m.on_block_read(b"{oops", 0),
            Err(ProducerIdError::Corrupt(_))
        ));
        assert!(matches!(
            m.on_block_read(&block_json(1, 10, 5), 0),
            Err(ProducerIdError::Corrupt(_))
        ));
    }

    #[test]
    fn block_runs_out_after_block_size_ids() {
        let mut m = ProducerIdManager::new(BrokerId(1));
        m.on_block_read(b"", 0).unwrap();
        m.on_block_written();
        let ids: Vec<i64> = std::iter::from_fn(|| m.generate_producer_id()).collect();
        assert_eq!(ids.len(), PRODUCER_ID_BLOCK_SIZE as usize);
        assert_eq!(ids.last(), Some(&999));
    }
}
