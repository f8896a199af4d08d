//! The shape of a simulated run: the cluster's size, how long the faults
//! last, and what the run exercises (the simulator's shapes, so that a
//! seed found in an older shape replays the same run).

/// The shape of one run.
#[derive(Debug, Clone)]
pub struct Config {
    pub brokers: i32,
    pub partitions: i32,
    pub replication: i32,
    /// Steps with faults, then steps healed.
    pub fault_steps: usize,
    pub heal_steps: usize,
    /// Idempotent producers beside the plain ones.
    pub idempotent_producers: bool,
    /// Brokers cut from ZooKeeper while still up.
    pub zookeeper_cuts: bool,
    /// Reassignments and preferred leader elections.
    pub admin_operations: bool,
    /// Transactional producers and the transaction coordinator.
    pub transactions: bool,
    /// Consumers in a group and the group coordinator.
    pub groups: bool,
    /// Which of the simulator's shapes this is ([`Config::shape`]).
    pub generation: u8,
}

/// The simulator's shapes, oldest first: each added something that draws
/// from the random stream, so a seed replays the same run only in the
/// shape it was found in (the regression seeds keep theirs).
pub const SHAPES: u8 = 5;

impl Config {
    /// Shape 1: plain producers, kill -9, power loss, cut links, session
    /// expiry; 2: and idempotent producers, brokers cut from ZooKeeper;
    /// 3: and admin operations; 4: and transactions; 5 (the default): and
    /// consumer groups.
    pub fn shape(generation: u8) -> Self {
        let d = Self::default();
        match generation {
            1 => Self {
                idempotent_producers: false,
                zookeeper_cuts: false,
                admin_operations: false,
                transactions: false,
                groups: false,
                generation,
                ..d
            },
            2 => Self {
                admin_operations: false,
                transactions: false,
                groups: false,
                generation,
                ..d
            },
            3 => Self {
                transactions: false,
                groups: false,
                generation,
                ..d
            },
            4 => Self {
                groups: false,
                generation,
                ..d
            },
            _ => d,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            brokers: 4,
            partitions: 3,
            replication: 3,
            fault_steps: 400,
            heal_steps: 600,
            idempotent_producers: true,
            zookeeper_cuts: true,
            admin_operations: true,
            transactions: true,
            groups: true,
            generation: SHAPES,
        }
    }
}
