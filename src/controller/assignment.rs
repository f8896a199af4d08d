//! `[pure]` Replica assignment: Kafka's `AdminUtils.assignReplicasToBrokers`
//! (Kafka 3.9 `server-common/src/main/java/org/apache/kafka/admin/AdminUtils.java`),
//! rack-unaware and rack-aware.
//!
//! Rack-unaware: first replicas go round-robin over the brokers from a start
//! index; the other replicas follow at a shift that grows by one each time
//! the partition id wraps around the broker list, so followers spread evenly
//! too. Kafka draws the start index and the shift at random; here the caller
//! passes them (`AssignmentSeed`), which makes tests deterministic.
//!
//! Rack-aware: the same walk over a rack-alternated broker list (racks in
//! sorted order, one broker of each in turn), with the shift scaled by the
//! number of racks; a follower candidate is skipped while its rack already
//! holds a replica and some rack holds none, or while it already holds one
//! and some broker holds none. So each rack gets a replica before any rack
//! gets two. [`assign`] chooses between them as Kafka does.

use std::collections::{BTreeMap, BTreeSet};

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
    /// Kafka's `AdminOperationException` (not an `ApiException`, so
    /// CreateTopics answers UNKNOWN_SERVER_ERROR (-1)).
    #[error("Not all brokers have rack information for replica rack aware assignment.")]
    IncompleteRackInfo,
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
    validate(partitions, replication_factor, sorted.len())?;
    let n = sorted.len();
    let start_index = seed.start_index % n;
    // Kafka uses the shift unreduced (a fixed start index >= n shifts the
    // followers by index mod n-1, not by index mod n); `replica_index`
    // reduces it.
    let mut shift = seed.replica_shift;
    let mut out = BTreeMap::new();
    let first_partition = start_partition_id.max(0);
    for partition in first_partition..first_partition.saturating_add(partitions) {
        let p = partition as usize;
        if p > 0 && p.is_multiple_of(n) {
            shift = shift.wrapping_add(1);
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

/// Kafka's argument checks, in its order; `brokers` is the distinct count.
fn validate(
    partitions: i32,
    replication_factor: i32,
    brokers: usize,
) -> Result<(), AssignmentError> {
    if partitions <= 0 {
        return Err(AssignmentError::InvalidPartitions);
    }
    if replication_factor <= 0 {
        return Err(AssignmentError::ReplicationFactorNotPositive);
    }
    if replication_factor as usize > brokers {
        return Err(AssignmentError::ReplicationFactorTooLarge {
            replication_factor,
            brokers,
        });
    }
    Ok(())
}

/// Kafka's entry point: rack-unaware when no broker has a rack; rack-aware
/// when all do; an error (Kafka's AdminOperationException "Not all brokers
/// have rack information for replica rack aware assignment.") when only
/// some do. The argument checks come first, as in Kafka.
pub fn assign(
    brokers: &[(BrokerId, Option<String>)],
    partitions: i32,
    replication_factor: i32,
    seed: AssignmentSeed,
    start_partition_id: PartitionId,
) -> Result<BTreeMap<PartitionId, Vec<BrokerId>>, AssignmentError> {
    let mut distinct: Vec<BrokerId> = brokers.iter().map(|(id, _)| *id).collect();
    distinct.sort_unstable();
    distinct.dedup();
    validate(partitions, replication_factor, distinct.len())?;
    let with_rack: Vec<(BrokerId, String)> = brokers
        .iter()
        .filter_map(|(id, rack)| rack.clone().map(|r| (*id, r)))
        .collect();
    if with_rack.is_empty() {
        assign_replicas_to_brokers(
            &distinct,
            partitions,
            replication_factor,
            seed,
            start_partition_id,
        )
    } else if with_rack.len() == brokers.len() {
        assign_replicas_to_brokers_rack_aware(
            &with_rack,
            partitions,
            replication_factor,
            seed,
            start_partition_id,
        )
    } else {
        Err(AssignmentError::IncompleteRackInfo)
    }
}

/// Kafka's `assignReplicasToBrokersRackAware`: `brokers` are (id, rack); a
/// broker id given twice keeps its last rack (Kafka's map `put`).
pub fn assign_replicas_to_brokers_rack_aware(
    brokers: &[(BrokerId, String)],
    partitions: i32,
    replication_factor: i32,
    seed: AssignmentSeed,
    start_partition_id: PartitionId,
) -> Result<BTreeMap<PartitionId, Vec<BrokerId>>, AssignmentError> {
    let rack_of: BTreeMap<BrokerId, &str> = brokers
        .iter()
        .map(|(id, rack)| (*id, rack.as_str()))
        .collect();
    validate(partitions, replication_factor, rack_of.len())?;
    let num_racks = rack_of.values().collect::<BTreeSet<_>>().len();
    let arranged = rack_alternated_broker_list(&rack_of);
    let n = arranged.len();
    let start_index = seed.start_index % n;
    let mut shift = seed.replica_shift;
    let mut out = BTreeMap::new();
    let first_partition = start_partition_id.max(0);
    for partition in first_partition..first_partition.saturating_add(partitions) {
        let p = partition as usize;
        if p > 0 && p.is_multiple_of(n) {
            shift = shift.wrapping_add(1);
        }
        let first = (p + start_index) % n;
        let leader = arranged[first];
        let mut replicas = Vec::with_capacity(replication_factor as usize);
        replicas.push(leader);
        let mut racks_with_replicas = BTreeSet::from([rack_of[&leader]]);
        let mut brokers_with_replicas = BTreeSet::from([leader]);
        // `k` walks the candidates for all followers of this partition.
        let mut k = 0;
        for _ in 1..replication_factor {
            loop {
                // Every n-1 steps of k visit every non-leader broker once, so
                // each follower is found within n-1 steps; more is our bug.
                debug_assert!(k < (replication_factor as usize - 1) * (n - 1));
                // Kafka's `nextReplicaShift * numRacks`, taken mod n-1
                // first (n >= 2 here: there is a follower) so it cannot
                // overflow; replica_index only uses it mod n-1.
                let rack_shift = (shift % (n - 1)) * num_racks;
                let broker = arranged[replica_index(first, rack_shift, k, n)];
                let rack = rack_of[&broker];
                k += 1;
                let rack_ok =
                    !racks_with_replicas.contains(rack) || racks_with_replicas.len() == num_racks;
                let broker_ok =
                    !brokers_with_replicas.contains(&broker) || brokers_with_replicas.len() == n;
                if rack_ok && broker_ok {
                    replicas.push(broker);
                    racks_with_replicas.insert(rack);
                    brokers_with_replicas.insert(broker);
                    break;
                }
            }
        }
        out.insert(partition, replicas);
    }
    Ok(out)
}

/// Kafka's `getRackAlternatedBrokerList`: racks in sorted order, each rack's
/// brokers in id order, taking the next broker of each rack in turn and
/// passing over racks that have run out. Rack 1: 0, 1, 2; rack 2: 3, 4, 5;
/// rack 3: 6, 7, 8 gives 0, 3, 6, 1, 4, 7, 2, 5, 8.
fn rack_alternated_broker_list(rack_of: &BTreeMap<BrokerId, &str>) -> Vec<BrokerId> {
    // Iterating the id-ordered map keeps each rack's list sorted by id.
    let mut lists: BTreeMap<&str, Vec<BrokerId>> = BTreeMap::new();
    for (id, rack) in rack_of {
        lists.entry(rack).or_default().push(*id);
    }
    let mut by_rack: Vec<_> = lists.into_values().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(rack_of.len());
    while out.len() < rack_of.len() {
        for ids in &mut by_rack {
            if let Some(id) = ids.next() {
                out.push(id);
            }
        }
    }
    out
}

/// Kafka's `replicaIndex`: the j-th follower sits `1 + (shift + j) % (n-1)`
/// brokers after the leader, so it never lands on the leader itself.
fn replica_index(first: usize, shift: usize, j: usize, n: usize) -> usize {
    let m = n - 1;
    let step = 1 + (shift % m + j % m) % m;
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

    #[test]
    fn topic_demo_znode_is_round_robin_from_index_1() {
        // A `/brokers/topics/topic-demo`: {"2":[0,2,1],"1":[2,1,0],
        // "3":[1,2,0],"0":[1,0,2]}: 3 brokers, 4 partitions, RF 3; Kafka drew
        // start index 1 and shift 1.
        let want: Vec<(i32, Vec<i32>)> = vec![
            (0, vec![1, 0, 2]),
            (1, vec![2, 1, 0]),
            (2, vec![0, 2, 1]),
            (3, vec![1, 2, 0]),
        ];
        assert_eq!(assign(&[0, 1, 2], 4, 3, 1, 0), want);
    }

    #[test]
    fn kafka_admin_utils_javadoc_table() {
        // AdminUtils' javadoc table: 5 brokers, 10 partitions, RF 3, start 0.
        // Read column-wise: broker-0 holds p0, p5 (1st), p4, p8 (2nd), ...
        let a = assign(&[0, 1, 2, 3, 4], 10, 3, 0, 0);
        let holding = |broker: i32, nth: usize| -> Vec<i32> {
            a.iter()
                .filter(|(_, r)| r[nth] == broker)
                .map(|(p, _)| *p)
                .collect()
        };
        assert_eq!(holding(0, 0), vec![0, 5]);
        assert_eq!(holding(0, 1), vec![4, 8]);
        assert_eq!(holding(0, 2), vec![3, 7]);
        assert_eq!(holding(2, 1), vec![1, 5]);
        assert_eq!(holding(3, 2), vec![1, 5]);
        assert_eq!(holding(4, 2), vec![2, 6]);
    }

    #[test]
    fn fixed_start_index_past_the_broker_count_shifts_like_kafka() {
        // Kafka uses fixedStartIndex unreduced as the shift: 3 brokers,
        // index 3 -> leader index 0, followers at 1 + (3 + j) % 2.
        assert_eq!(assign(&[0, 1, 2], 1, 3, 3, 0), vec![(0, vec![0, 2, 1])]);
        assert_eq!(assign(&[0, 1, 2], 1, 3, 0, 0), vec![(0, vec![0, 1, 2])]);
    }

    fn racks(v: &[(i32, &str)]) -> Vec<(BrokerId, String)> {
        v.iter()
            .map(|(b, r)| (BrokerId(*b), r.to_string()))
            .collect()
    }

    fn rack_aware(
        brokers: &[(i32, &str)],
        p: i32,
        rf: i32,
        seed: usize,
        start: i32,
    ) -> Vec<(i32, Vec<i32>)> {
        assign_replicas_to_brokers_rack_aware(
            &racks(brokers),
            p,
            rf,
            AssignmentSeed::fixed(seed),
            start,
        )
        .unwrap()
        .into_iter()
        .map(|(p, r)| (p, r.into_iter().map(|b| b.0).collect()))
        .collect()
    }

    fn alternated(brokers: &[(i32, &str)]) -> Vec<i32> {
        let owned = racks(brokers);
        let map: BTreeMap<BrokerId, &str> = owned.iter().map(|(b, r)| (*b, r.as_str())).collect();
        rack_alternated_broker_list(&map)
            .into_iter()
            .map(|b| b.0)
            .collect()
    }

    const SEED_000_RACKS: &[(i32, &str)] = &[
        (0, "rack1"),
        (1, "rack1"),
        (2, "rack1"),
        (3, "rack2"),
        (4, "rack2"),
        (5, "rack2"),
        (6, "rack3"),
        (7, "rack3"),
        (8, "rack3"),
    ];

    const KAFKA_TEST_RACKS: &[(i32, &str)] = &[
        (0, "rack1"),
        (1, "rack3"),
        (2, "rack3"),
        (3, "rack2"),
        (4, "rack2"),
        (5, "rack1"),
    ];

    #[test]
    fn rack_alternated_list_rows() {
        type Row = (&'static [(i32, &'static str)], Vec<i32>);
        let rows: Vec<Row> = vec![
            // Kafka's javadoc: rack1: 0,1,2; rack2: 3,4,5; rack3: 6,7,8.
            (SEED_000_RACKS, vec![0, 3, 6, 1, 4, 7, 2, 5, 8]),
            // AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers.
            (KAFKA_TEST_RACKS, vec![0, 3, 1, 5, 4, 2]),
            (&KAFKA_TEST_RACKS[..5], vec![0, 3, 1, 4, 2]),
            // A rack that runs out is passed over.
            (
                &[(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "a")],
                vec![0, 1, 2, 3, 4],
            ),
            // Racks sort by name, brokers by id, whatever the input order.
            (&[(9, "z"), (4, "a"), (7, "z"), (2, "a")], vec![2, 7, 4, 9]),
        ];
        for (brokers, want) in rows {
            assert_eq!(alternated(brokers), want, "{brokers:?}");
        }
    }

    #[test]
    fn rack_aware_assignment_rows() {
        type Row = (
            &'static [(i32, &'static str)],
            i32,
            i32,
            usize,
            i32,
            Vec<(i32, Vec<i32>)>,
        );
        let rows: Vec<Row> = vec![
            // Three racks of three, RF 3, start 0: one replica per
            // rack; partition 9 wraps and shifts the followers by one rack round.
            (
                SEED_000_RACKS,
                11,
                3,
                0,
                0,
                vec![
                    (0, vec![0, 3, 6]),
                    (1, vec![3, 6, 1]),
                    (2, vec![6, 1, 4]),
                    (3, vec![1, 4, 7]),
                    (4, vec![4, 7, 2]),
                    (5, vec![7, 2, 5]),
                    (6, vec![2, 5, 8]),
                    (7, vec![5, 8, 0]),
                    (8, vec![8, 0, 3]),
                    (9, vec![0, 4, 7]),
                    (10, vec![3, 7, 2]),
                ],
            ),
            // AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
            // (also AdminUtils' javadoc): 7 partitions, RF 3, fixed start 0.
            (
                KAFKA_TEST_RACKS,
                7,
                3,
                0,
                0,
                vec![
                    (0, vec![0, 3, 1]),
                    (1, vec![3, 1, 5]),
                    (2, vec![1, 5, 4]),
                    (3, vec![5, 4, 2]),
                    (4, vec![4, 2, 0]),
                    (5, vec![2, 0, 3]),
                    (6, vec![0, 4, 2]),
                ],
            ),
            // AdminRackAwareTest.testSkipBrokerWithReplicaAlreadyAssigned's
            // input (start 2, RF 4 over 3 racks), expected lists worked by
            // hand: a candidate in a rack that already has a replica is
            // skipped until every rack has one (partitions 2-5).
            (
                &[(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "a")],
                6,
                4,
                2,
                0,
                vec![
                    (0, vec![2, 0, 1, 3]),
                    (1, vec![3, 1, 2, 4]),
                    (2, vec![4, 2, 1, 3]),
                    (3, vec![0, 1, 2, 3]),
                    (4, vec![1, 4, 2, 3]),
                    (5, vec![2, 4, 1, 3]),
                ],
            ),
        ];
        for (brokers, p, rf, seed, start, want) in rows {
            assert_eq!(
                rack_aware(brokers, p, rf, seed, start),
                want,
                "{brokers:?} p={p} rf={rf} seed={seed}"
            );
        }
    }

    /// Kafka's `RackAwareTest.checkReplicaDistribution`.
    fn check_distribution(
        a: &BTreeMap<PartitionId, Vec<BrokerId>>,
        rack_of: &BTreeMap<BrokerId, String>,
        rf: usize,
        rack_aware: bool,
        leaders_even: bool,
        replicas_even: bool,
    ) {
        let n = rack_of.len();
        let mut leaders: BTreeMap<BrokerId, usize> = BTreeMap::new();
        let mut replicas: BTreeMap<BrokerId, usize> = BTreeMap::new();
        for r in a.values() {
            assert_eq!(r.iter().collect::<BTreeSet<_>>().len(), r.len(), "{r:?}");
            let racks: BTreeSet<&String> = r.iter().map(|b| &rack_of[b]).collect();
            if rack_aware {
                assert_eq!(racks.len(), rf, "{r:?}");
            }
            *leaders.entry(r[0]).or_default() += 1;
            for b in r {
                *replicas.entry(*b).or_default() += 1;
            }
        }
        if leaders_even {
            assert_eq!(leaders.len(), n);
            assert!(leaders.values().all(|c| *c == a.len() / n), "{leaders:?}");
        }
        if replicas_even {
            assert_eq!(replicas.len(), n);
            assert!(
                replicas.values().all(|c| *c == a.len() * rf / n),
                "{replicas:?}"
            );
        }
    }

    #[test]
    fn kafka_admin_rack_aware_test_distributions() {
        // AdminRackAwareTest cases that check properties, not lists; Kafka's
        // random start index is replaced by every start index in turn.
        let six = [
            (0, "rack1"),
            (1, "rack2"),
            (2, "rack2"),
            (3, "rack3"),
            (4, "rack3"),
            (5, "rack1"),
        ];
        let uneven = [
            (0, "rack1"),
            (1, "rack1"),
            (2, "rack2"),
            (3, "rack3"),
            (4, "rack3"),
            (5, "rack1"),
        ];
        let expansion = [
            (6, "rack1"),
            (7, "rack2"),
            (8, "rack2"),
            (9, "rack3"),
            (10, "rack3"),
            (11, "rack1"),
        ];
        let three = [(0, "rack1"), (1, "rack2"), (4, "rack3")];
        let twelve = [
            (0, "rack1"),
            (1, "rack2"),
            (2, "rack2"),
            (3, "rack3"),
            (4, "rack3"),
            (5, "rack1"),
            (6, "rack1"),
            (7, "rack2"),
            (8, "rack2"),
            (9, "rack3"),
            (10, "rack1"),
            (11, "rack3"),
        ];
        // (brokers, partitions, RF, start partition, fixed start or all,
        //  rack-aware, leaders even, replicas even)
        type Row<'a> = (
            &'a [(i32, &'a str)],
            i32,
            i32,
            i32,
            Option<usize>,
            bool,
            bool,
            bool,
        );
        let rows: Vec<Row<'_>> = vec![
            (&six, 6, 3, 0, Some(2), true, true, true), // testAssignmentWithRackAware
            (&six, 6, 3, 0, None, true, true, true),    // ...WithRandomStartIndex
            (&six, 13, 3, 0, Some(0), true, false, false), // ...WithUnevenReplicas
            (&uneven, 12, 3, 0, None, true, true, false), // ...WithUnevenRacks
            (&six, 12, 2, 0, None, true, true, true),   // testAssignmentWith2ReplicasRackAware
            (&expansion, 12, 2, 12, None, true, true, true), // testRackAwareExpansion
            (&six, 6, 2, 0, None, true, true, true),    // ...With6Partitions
            (&three, 3, 2, 0, None, true, true, true),  // ...With6PartitionsAnd3Brokers
            (&twelve, 96, 3, 0, None, true, true, true), // testLargeNumberPartitionsAssignment
        ];
        for (brokers, p, rf, start, fixed, aware, leaders, reps) in rows {
            let rack_of: BTreeMap<BrokerId, String> = brokers
                .iter()
                .map(|(b, r)| (BrokerId(*b), r.to_string()))
                .collect();
            let seeds: Vec<AssignmentSeed> = match fixed {
                Some(i) => vec![AssignmentSeed::fixed(i)],
                None => (0..brokers.len())
                    .flat_map(|s| {
                        (0..brokers.len()).map(move |t| AssignmentSeed {
                            start_index: s,
                            replica_shift: t,
                        })
                    })
                    .collect(),
            };
            for seed in seeds {
                let a = assign_replicas_to_brokers_rack_aware(&racks(brokers), p, rf, seed, start)
                    .unwrap();
                assert_eq!(a.len(), p as usize);
                assert_eq!(a.keys().next(), Some(&start));
                check_distribution(&a, &rack_of, rf as usize, aware, leaders, reps);
            }
        }
    }

    #[test]
    fn kafka_admin_rack_aware_test_rack_counts() {
        // testMoreReplicasThanRacks / testLessReplicasThanRacks / testSingleRack.
        let two_three = [
            (0, "rack1"),
            (1, "rack2"),
            (2, "rack2"),
            (3, "rack3"),
            (4, "rack3"),
            (5, "rack2"),
        ];
        let single = [
            (0, "rack1"),
            (1, "rack1"),
            (2, "rack1"),
            (3, "rack1"),
            (4, "rack1"),
            (5, "rack1"),
        ];
        type Row<'a> = (&'a [(i32, &'a str)], i32, usize);
        let rows: Vec<Row<'_>> = vec![(&two_three, 5, 3), (&two_three, 2, 2), (&single, 3, 1)];
        for (brokers, rf, racks_per_partition) in rows {
            let rack_of: BTreeMap<BrokerId, &str> =
                brokers.iter().map(|(b, r)| (BrokerId(*b), *r)).collect();
            for s in 0..brokers.len() {
                let seed = AssignmentSeed {
                    start_index: s,
                    replica_shift: (s * 5 + 1) % 6,
                };
                let a =
                    assign_replicas_to_brokers_rack_aware(&racks(brokers), 6, rf, seed, 0).unwrap();
                for r in a.values() {
                    assert_eq!(r.len(), rf as usize);
                    let racks: BTreeSet<&str> = r.iter().map(|b| rack_of[b]).collect();
                    assert_eq!(racks.len(), racks_per_partition, "{r:?}");
                }
                if racks_per_partition == 1 {
                    // testSingleRack: one leader per broker.
                    let leaders: BTreeSet<BrokerId> = a.values().map(|r| r[0]).collect();
                    assert_eq!(leaders.len(), 6);
                }
            }
        }
    }

    #[test]
    fn assign_picks_the_mode_from_rack_information() {
        let seed = AssignmentSeed::fixed(0);
        let none: Vec<(BrokerId, Option<String>)> = (0..5).map(|b| (BrokerId(b), None)).collect();
        // No racks: AdminRackAwareTest.testReplicaAssignment's table.
        assert_eq!(
            super::assign(&none, 10, 3, seed, -1).unwrap(),
            assign_replicas_to_brokers(&ids(&[0, 1, 2, 3, 4]), 10, 3, seed, 0).unwrap()
        );
        assert_eq!(
            super::assign(&none, 10, 3, seed, -1).unwrap()[&5],
            ids(&[0, 2, 3])
        );
        // Every broker with a rack: rack-aware.
        let all: Vec<(BrokerId, Option<String>)> = KAFKA_TEST_RACKS
            .iter()
            .map(|(b, r)| (BrokerId(*b), Some(r.to_string())))
            .collect();
        assert_eq!(
            super::assign(&all, 7, 3, seed, 0).unwrap()[&6],
            ids(&[0, 4, 2])
        );
        // AdminRackAwareTest.testAssignReplicasToBrokersWithInvalidParameters:
        // broker 4 has no rack.
        let mut some = all[..5].to_vec();
        some[4].1 = None;
        assert_eq!(
            super::assign(&some, 10, 5, seed, -1),
            Err(AssignmentError::IncompleteRackInfo)
        );
        // The argument checks come first.
        assert_eq!(
            super::assign(&some, 0, 0, seed, -1),
            Err(AssignmentError::InvalidPartitions)
        );
        assert_eq!(
            super::assign(&some, 10, 0, seed, -1),
            Err(AssignmentError::ReplicationFactorNotPositive)
        );
        assert_eq!(
            super::assign(&some, 10, 6, seed, -1),
            Err(AssignmentError::ReplicationFactorTooLarge {
                replication_factor: 6,
                brokers: 5
            })
        );
        assert_eq!(
            assign_replicas_to_brokers_rack_aware(&[], 1, 1, seed, 0),
            Err(AssignmentError::ReplicationFactorTooLarge {
                replication_factor: 1,
                brokers: 0
            })
        );
        assert_eq!(
            AssignmentError::IncompleteRackInfo.to_string(),
            "Not all brokers have rack information for replica rack aware assignment."
        );
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

        #[test]
        fn rack_aware_replicas_cover_min_of_rf_and_racks(
            rack_picks in proptest::collection::vec(0u8..4, 1..9), rf_pick in 0usize..9,
            parts in 1i32..30, start in 0usize..20, shift in 0usize..20, first in 0i32..20,
        ) {
            let brokers: Vec<(BrokerId, String)> = rack_picks
                .iter()
                .enumerate()
                .map(|(i, r)| (BrokerId(i as i32 * 3), format!("r{r}")))
                .collect();
            let n = brokers.len();
            let num_racks = rack_picks.iter().collect::<BTreeSet<_>>().len();
            let rf = (rf_pick % n) as i32 + 1;
            let seed = AssignmentSeed { start_index: start, replica_shift: shift };
            let a = assign_replicas_to_brokers_rack_aware(&brokers, parts, rf, seed, first).unwrap();
            prop_assert_eq!(a.len(), parts as usize);
            for replicas in a.values() {
                prop_assert_eq!(replicas.len(), rf as usize);
                let d: BTreeSet<_> = replicas.iter().collect();
                prop_assert_eq!(d.len(), replicas.len());
                let racks: BTreeSet<&String> = replicas
                    .iter()
                    .map(|b| &brokers.iter().find(|(id, _)| id == b).unwrap().1)
                    .collect();
                prop_assert_eq!(racks.len(), (rf as usize).min(num_racks));
            }
        }
    }
}
