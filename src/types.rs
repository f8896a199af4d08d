//! `[pure]` Small vocabulary types shared by every layer.
//!
//! Numeric Kafka quantities are plain aliases (they cross the wire as the
//! same integer types and are compared and added constantly); identities and
//! epochs that must not be mixed up where they meet (a broker id passed as
//! a leader epoch, a controller epoch as a partition epoch) are newtypes,
//! serialised as the bare integer (znode JSON, the wire).

use std::fmt;
use std::sync::Arc;

/// A position in a partition's log (Kafka `int64` offset).
pub type Offset = i64;
/// An `i32` newtype: `Display` and serde as the bare integer, `.0` for the
/// wire value.
macro_rules! int_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default,
            serde::Serialize, serde::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub i32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::num::ParseIntError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.parse().map(Self)
            }
        }

        impl From<i32> for $name {
            fn from(v: i32) -> Self {
                Self(v)
            }
        }

        /// Unit tests compare against literal wire values.
        #[cfg(test)]
        impl PartialEq<i32> for $name {
            fn eq(&self, other: &i32) -> bool {
                self.0 == *other
            }
        }

        impl From<$name> for i32 {
            fn from(v: $name) -> i32 {
                v.0
            }
        }
    };
}

int_newtype!(
    /// A broker id (`broker.id`); `-1` means none (no leader).
    BrokerId
);
int_newtype!(
    /// A partition's leader epoch (KIP-101), bumped by every leader
    /// election; `-1` means unknown.
    LeaderEpoch
);
int_newtype!(
    /// The controller's epoch (`/controller_epoch`), fencing a deposed
    /// controller's requests.
    ControllerEpoch
);
int_newtype!(
    /// A partition state's version (the ZooKeeper version of its state
    /// znode, KIP-497's `partition_epoch`), for conditional updates.
    PartitionEpoch
);

impl BrokerId {
    /// No broker (`-1` on the wire: no leader, no controller).
    pub const NONE: BrokerId = BrokerId(-1);
}

impl LeaderEpoch {
    /// Unknown (`-1` on the wire).
    pub const UNKNOWN: LeaderEpoch = LeaderEpoch(-1);
}
/// A partition index within a topic.
pub type PartitionId = i32;
/// An idempotent producer id; `-1` means none.
pub type ProducerId = i64;
/// An idempotent producer epoch; `-1` means none.
pub type ProducerEpoch = i16;
/// Milliseconds, either wall-clock (timestamps) or monotonic (timeouts);
/// the field name says which.
pub type Millis = i64;

/// Index of a data shard (one per pinned core).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardId(pub u16);

impl ShardId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard-{}", self.0)
    }
}

/// A topic partition. Cheap to clone (the name is shared).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: Arc<str>,
    pub partition: PartitionId,
}

impl TopicPartition {
    pub fn new(topic: impl Into<Arc<str>>, partition: PartitionId) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }

    /// Kafka's directory name for this partition: `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

/// `(topic, partition)` pairs grouped by topic, topics in first-seen
/// order and partitions in input order: the shape of the per-topic arrays
/// of WriteTxnMarkers and AddPartitionsToTxn.
pub fn partitions_by_topic(parts: &[(String, i32)]) -> Vec<(&str, Vec<i32>)> {
    let mut out: Vec<(&str, Vec<i32>)> = Vec::new();
    for (t, p) in parts {
        match out.iter_mut().find(|(name, _)| name == t) {
            Some((_, ps)) => ps.push(*p),
            None => out.push((t.as_str(), vec![*p])),
        }
    }
    out
}

/// A transactional producer writing through a coordinator (a
/// TxnOffsetCommit's offsets on `__consumer_offsets`): its id and epoch,
/// and the KIP-890 verification guard of that partition when one ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnWriter {
    pub producer_id: i64,
    pub epoch: i16,
    pub guard: Option<u64>,
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Deliberately broken rules for the deterministic simulator's mutation
/// check (`tests/sim`): each switch turns one replication rule wrong, and
/// the simulator must then report an invariant violation. Every switch is
/// off unless [`mutation::enable_for_simulation`] turns one on; nothing in
/// the broker calls it. A check costs one relaxed atomic load.
pub mod mutation {
    use std::sync::atomic::{AtomicU8, Ordering};

    // Kept as a global because the switches sit in pure rules that take no
    // context (the HW rule, truncation, elections, producer state), and the simulator
    // must reach them without a parameter threaded through the broker.
    static ACTIVE: AtomicU8 = AtomicU8::new(0);

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u8)]
    pub enum Mutation {
        /// The leader's HW follows its own LEO, past lagging ISR members
        /// (`replication::isr`, Kafka's `maybeIncrementLeaderHW`).
        HwPastLaggingIsr = 1,
        /// A follower keeps its whole log at a leader change instead of
        /// truncating by leader epoch (`replication::truncation`, KIP-101).
        TruncationSkipped = 2,
        /// A follower joins the ISR before it reached the HW
        /// (`replication::isr`, Kafka's `isFollowerInSync`).
        IsrJoinBehindHw = 3,
        /// The controller elects a live replica outside the ISR with
        /// unclean election off (`controller::leader_election`, Kafka's
        /// `offlinePartitionLeaderElection`).
        ElectionOutsideIsr = 4,
        /// An idempotent producer's retry of a batch already in the log is
        /// appended again instead of answered with its offset
        /// (`replication::producer_state`, Kafka's
        /// `ProducerStateEntry.findDuplicateBatch`).
        RetryAppendedAgain = 5,
        /// The LSO passes a transaction still open
        /// (`replication::producer_state`, Kafka's `firstUnstableOffset`).
        LsoPastOpenTxn = 6,
        /// A group coordinator loading its partition skips the offset
        /// commits (`group::coordinator`, Kafka's
        /// `GroupMetadataManager.loadGroupsAndOffsets`).
        CommitsNotLoaded = 7,
    }

    /// Every mutation by the name `SHARDLOG_SIM_MUTATION` takes.
    pub const ALL: &[(&str, Mutation)] = &[
        ("hw-past-lagging-isr", Mutation::HwPastLaggingIsr),
        ("truncation-skipped", Mutation::TruncationSkipped),
        ("isr-join-behind-hw", Mutation::IsrJoinBehindHw),
        ("election-outside-isr", Mutation::ElectionOutsideIsr),
        ("retry-appended-again", Mutation::RetryAppendedAgain),
        ("lso-past-open-txn", Mutation::LsoPastOpenTxn),
        ("commits-not-loaded", Mutation::CommitsNotLoaded),
    ];

    /// Whether `m` is on.
    pub fn active(m: Mutation) -> bool {
        ACTIVE.load(Ordering::Relaxed) == m as u8
    }

    /// The simulator's switch: `Some(m)` breaks that rule for the whole
    /// process until called again with `None`.
    #[doc(hidden)]
    pub fn enable_for_simulation(m: Option<Mutation>) {
        ACTIVE.store(m.map_or(0, |m| m as u8), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_partition_dir_name_follows_kafka_layout() {
        let tp = TopicPartition::new("orders", 7);
        assert_eq!(tp.dir_name(), "orders-7");
        assert_eq!(tp.to_string(), "orders-7");
        assert_eq!(ShardId(3).to_string(), "shard-3");
    }

    #[test]
    fn partitions_group_by_topic_in_first_seen_order() {
        let parts = [
            ("b".to_owned(), 2),
            ("a".to_owned(), 0),
            ("b".to_owned(), 1),
        ];
        assert_eq!(
            partitions_by_topic(&parts),
            vec![("b", vec![2, 1]), ("a", vec![0])]
        );
    }
}
