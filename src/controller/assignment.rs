//! `[pure]` Replica assignment: Kafka's rack-unaware
//! `AdminUtils.assignReplicasToBrokers`.
//!
//! First replicas go round-robin over the brokers from a start index; the
//! other replicas follow at a shift that grows by one each time the partition
//! id wraps around the broker list, so followers spread evenly too. Kafka
//! draws the start index and the shift at random; here the caller passes
//! them (`AssignmentSeed`), which makes tests deterministic.

use std::collections::BTreeMap;

use crate::types::{BrokerId, PartitionId};

/// Why an assignment cannot be made (Kafka's exception for each case).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignmentError {
    /// INVALID_PARTITIONS (37).
    #[error("Number of partitions must be larger than 0.")]
    InvalidPartitions,
    /// INVALID_REPLICATION_FACTOR (38).
    #[error("Replication factor must be larger than 0.")]
    ReplicationFactorNotPositive,
    /// INVALID_REPLICATION_FACTOR (38).
    #[error("Replication factor: {replication_factor} larger than available brokers: {brokers}.")]
    ReplicationFactorTooLarge {
        replication_factor: i32,
        brokers: usize,
    },
}

/// Where the round-robin starts. Kafka: both random in `[0, brokers)`
/// unless a fixed start index is given, in which case both equal it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssignmentSeed {
    pub start_index: usize,
    pub replica_shift: usize,
}

impl AssignmentSeed {
    /// Kafka's `fixedStartIndex`: start index and shift both fixed.
    pub fn fixed(index: usize) -> Self {
        Self {
            start_index: index,
            replica_shift: index,
        }
    }

    /// Kafka's random choice, from the caller's random source.
    pub fn random<R: rand::Rng + ?Sized>(rng: &mut R, brokers: usize) -> Self {
        let n = brokers.max(1);
        Self {
            start_index: rng.gen_range(0..n),
            replica_shift: rng.gen_range(0..n),
        }
    }
}

/// Assigns `partitions` new partitions numbered from `start_partition_id`,
/// `replication_factor` replicas each, over `brokers` (Kafka sorts them by
/// id first; so do we, and duplicates are dropped).
pub fn assign_replicas_to_brokers(
    brokers: &[BrokerId],
    partitions: i32,
    replication_factor: i32,
    seed: AssignmentSeed,
    start_partition_id: PartitionId,
) -> Result<BTreeMap<PartitionId, Vec<BrokerId>>, AssignmentError> {
    let mut sorted = brokers.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if partitions <= 0 {
        return Err(AssignmentError::InvalidPartitions);
    }
    if replication_factor <= 0 {
        return Err(AssignmentError::ReplicationFactorNotPositive);
    }
    let n = sorted.len();
    if replication_factor as usize > n {
        return Err(AssignmentError::ReplicationFactorTooLarge {
            replication_factor,
            brokers: n,
        });
    }
    let start_index = seed.start_index % n;
    let mut shift = seed.replica_shift % n;
    let mut out = BTreeMap::new();
    let first_partition = start_partition_id.max(0);
    for partition in first_partition..first_partition.saturating_add(partitions) {
        let p = partition as usize;
        if p > 0 && p.is_multiple_of(n) {
            shift += 1;
        }
        let first = (p + start_index) % n;
        let mut replicas = Vec::with_capacity(replication_factor as usize);
        replicas.push(sorted[first]);
        for j in 0..(replication_factor as usize - 1) {
            replicas.push(sorted[replica_index(first, shift, j, n)]);
        }
        out.insert(partition, replicas);
    }
    Ok(out)
}

/// Kafka's `replicaIndex`: the j-th follower sits `1 + (shift + j) % (n-1)`
/// brokers after the leader, so it never lands on the leader itself.
fn replica_index(first: usize, shift: usize, j: usize, n: usize) -> usize {
    let step = 1 + (shift + j) % (n - 1);
    (first + step) % n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[i32]) -> Vec<BrokerId> {
        v.iter().copied().map(BrokerId).collect()
    }
    use proptest::prelude::*;

    fn assign(brokers: &[i32], p: i32, rf: i32, seed: usize, start: i32) -> Vec<(i32, Vec<i32>)> {
        assign_replicas_to_brokers(&ids(brokers), p, rf, AssignmentSeed::fixed(seed), start)
            .unwrap()
            .into_iter()
            .map(|(p, r)| (p, r.into_iter().map(|b| b.0).collect()))
            .collect()
    }

    #[test]
    fn kafka_admin_test_replica_assignment_table() {
        // Kafka's AdminZkClientTest.testReplicaAssignment: 5 brokers, 10
        // partitions, RF 3, fixed start index 0.
        let want: Vec<(i32, Vec<i32>)> = vec![
            (0, vec![0, 1, 2]),
            (1, vec![1, 2, 3]),
            (2, vec![2, 3, 4]),
            (3, vec![3, 4, 0]),
            (4, vec![4, 0, 1]),
            (5, vec![0, 2, 3]),
            (6, vec![1, 3, 4]),
            (7, vec![2, 4, 0]),
            (8, vec![3, 0, 1]),
            (9, vec![4, 1, 2]),
        ];
        assert_eq!(assign(&[4, 2, 0, 3, 1], 10, 3, 0, 0), want);
    }

    #[test]
    fn assignment_rows() {
        type Row = (&'static [i32], i32, i32, usize, i32, Vec<(i32, Vec<i32>)>);
        let rows: Vec<Row> = vec![
            // Single broker: everything on it.
            (
                &[7],
                3,
                1,
                0,
                0,
                vec![(0, vec![7]), (1, vec![7]), (2, vec![7])],
            ),
            // Start index 1 shifts leaders; shift 1 moves followers by 2.
            (
                &[1, 2, 3],
                3,
                2,
                1,
                0,
                vec![(0, vec![2, 1]), (1, vec![3, 2]), (2, vec![1, 3])],
            ),
            // Adding partitions 3..5 continues the round-robin and bumps the
            // shift at partition 3 (3 % 3 == 0).
            (
                &[1, 2, 3],
                2,
                2,
                0,
                3,
                vec![(3, vec![1, 3]), (4, vec![2, 1])],
            ),
        ];
        for (brokers, p, rf, seed, start, want) in rows {
            assert_eq!(
                assign(brokers, p, rf, seed, start),
                want,
                "{brokers:?} p={p} rf={rf}"
            );
        }
    }

    #[test]
    fn invalid_requests_map_to_kafka_errors() {
        let seed = AssignmentSeed::fixed(0);
        assert_eq!(
            assign_replicas_to_brokers(&ids(&[1]), 0, 1, seed, 0),
            Err(AssignmentError::InvalidPartitions)
        );
        assert_eq!(
            assign_replicas_to_brokers(&ids(&[1]), 1, 0, seed, 0),
            Err(AssignmentError::ReplicationFactorNotPositive)
        );
        assert_eq!(
            assign_replicas_to_brokers(&ids(&[1, 1]), 1, 2, seed, 0),
            Err(AssignmentError::ReplicationFactorTooLarge {
                replication_factor: 2,
                brokers: 1
            })
        );
        assert!(assign_replicas_to_brokers(&[], 1, 1, seed, 0).is_err());
    }

    proptest! {
        #[test]
        fn replicas_are_distinct_live_brokers_and_leaders_balanced(
            n in 1usize..8, rf_pick in 0usize..8, parts in 1i32..40,
            start in 0usize..16, shift in 0usize..16,
        ) {
            let brokers: Vec<BrokerId> = (0..n as i32).map(|b| BrokerId(b * 10)).collect();
            let rf = (rf_pick % n) as i32 + 1;
            let seed = AssignmentSeed { start_index: start, replica_shift: shift };
            let a = assign_replicas_to_brokers(&brokers, parts, rf, seed, 0).unwrap();
            prop_assert_eq!(a.len(), parts as usize);
            let mut leaders = vec![0usize; n];
            for replicas in a.values() {
                prop_assert_eq!(replicas.len(), rf as usize);
                let mut d = replicas.clone();
                d.sort_unstable();
                d.dedup();
                prop_assert_eq!(d.len(), replicas.len());
                prop_assert!(replicas.iter().all(|r| brokers.contains(r)));
                leaders[(replicas[0].0 / 10) as usize] += 1;
            }
            let (lo, hi) = (leaders.iter().min().unwrap(), leaders.iter().max().unwrap());
            prop_assert!(hi - lo <= 1);
        }
    }
}
