use super::*;

fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

fn set(v: &[i32]) -> BTreeSet<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

fn state(leader: i32, epoch: i32, isr: &[i32]) -> LeaderIsr {
    LeaderIsr {
        leader: BrokerId(leader),
        leader_epoch: LeaderEpoch(epoch),
        isr: ids(isr),
        leader_recovery_state: LeaderRecoveryState::Recovered,
        partition_epoch: PartitionEpoch(7),
    }
}

#[test]
fn leader_recovery_state_values_are_kip_704s() {
    assert_eq!(
        LeaderRecoveryState::default(),
        LeaderRecoveryState::Recovered
    );
    for (s, v) in [
        (LeaderRecoveryState::Recovered, 0),
        (LeaderRecoveryState::Recovering, 1),
    ] {
        assert_eq!(s.value(), v);
        assert_eq!(LeaderRecoveryState::from_value(v), Some(s));
    }
    assert_eq!(LeaderRecoveryState::from_value(2), None);
    assert_eq!(LeaderRecoveryState::from_value(-1), None);
}

#[test]
fn offline_election_rows() {
    // (AR, ISR, live, unclean enabled, expected (leader, unclean)).
    type Row = (
        &'static [i32],
        &'static [i32],
        &'static [i32],
        bool,
        Option<(i32, bool)>,
    );
    let rows: [Row; 11] = [
        // Kafka 3.9: AR order, not ISR order, decides.
        (&[1, 2, 3], &[3, 2, 1], &[1, 2, 3], false, Some((1, false))),
        (&[1, 2, 3], &[3, 2], &[1, 2, 3], false, Some((2, false))),
        // The first AR replica is dead: the next live ISR member in AR order.
        (&[1, 2, 3], &[1, 3, 2], &[2, 3], false, Some((2, false))),
        // A live replica outside the ISR is skipped for a later ISR one.
        (&[1, 2, 3], &[3], &[1, 2, 3], true, Some((3, false))),
        // Kafka 3.9: no live ISR replica and unclean on: first live AR replica.
        (&[1, 2, 3], &[1], &[2, 3], true, Some((2, true))),
        (&[3, 1, 2], &[3], &[1, 2], true, Some((1, true))),
        // ... and unclean off: no leader.
        (&[1, 2, 3], &[1], &[2, 3], false, None),
        // Empty ISR.
        (&[1, 2, 3], &[], &[1, 2, 3], false, None),
        (&[1, 2, 3], &[], &[2, 3], true, Some((2, true))),
        // No live replica at all, even unclean.
        (&[1, 2, 3], &[1, 2, 3], &[4], true, None),
        // An ISR member not in the AR is never chosen.
        (&[1, 2], &[9], &[1, 2, 9], false, None),
    ];
    for (ar, isr, live, unclean, want) in rows {
        let got = offline_partition_leader(&ids(ar), &ids(isr), &set(live), unclean);
        let want = want.map(|(l, u)| (BrokerId(l), u));
        assert_eq!(
            got, want,
            "AR {ar:?} ISR {isr:?} live {live:?} unclean {unclean}"
        );
    }
}

#[test]
fn reassign_election_rows() {
    // (target replicas, ISR, live, expected).
    type Row = (&'static [i32], &'static [i32], &'static [i32], Option<i32>);
    let rows: [Row; 5] = [
        // Kafka 3.9: first live target replica that is in the current ISR.
        (&[4, 5, 6], &[6, 5, 1], &[1, 4, 5, 6], Some(5)),
        (&[4, 5, 6], &[1, 4], &[1, 4, 5, 6], Some(4)),
        (&[4, 5, 6], &[1, 4, 6], &[1, 5, 6], Some(6)),
        // None of the targets has caught up yet.
        (&[4, 5, 6], &[1, 2, 3], &[1, 2, 3, 4, 5, 6], None),
        (&[], &[1], &[1], None),
    ];
    for (target, isr, live, want) in rows {
        assert_eq!(
            reassign_partition_leader(&ids(target), &ids(isr), &set(live)),
            want.map(BrokerId),
            "target {target:?} ISR {isr:?} live {live:?}"
        );
    }
}

#[test]
fn preferred_election_rows() {
    // (AR, ISR, live, expected).
    type Row = (&'static [i32], &'static [i32], &'static [i32], Option<i32>);
    let rows: [Row; 5] = [
        // Kafka 3.9: the preferred replica is the first AR replica.
        (&[1, 2, 3], &[2, 3, 1], &[1, 2, 3], Some(1)),
        // Not in the ISR or not live: no leader; the next replica is not tried.
        (&[1, 2, 3], &[2, 3], &[1, 2, 3], None),
        (&[1, 2, 3], &[1, 2, 3], &[2, 3], None),
        (&[], &[1], &[1], None),
        (&[5], &[5], &[5], Some(5)),
    ];
    for (ar, isr, live, want) in rows {
        assert_eq!(
            preferred_replica_leader(&ids(ar), &ids(isr), &set(live)),
            want.map(BrokerId),
            "AR {ar:?} ISR {isr:?} live {live:?}"
        );
    }
}

#[test]
fn controlled_shutdown_election_rows() {
    // (AR, ISR, live-or-shutting-down, shutting down, expected).
    type Row = (
        &'static [i32],
        &'static [i32],
        &'static [i32],
        &'static [i32],
        Option<i32>,
    );
    let rows: [Row; 5] = [
        // Kafka 3.9: skip the broker being shut down.
        (&[1, 2, 3], &[1, 2, 3], &[1, 2, 3], &[1], Some(2)),
        (&[1, 2, 3], &[3, 1, 2], &[1, 2, 3], &[1, 2], Some(3)),
        // The next AR replica is out of the ISR: the one after it.
        (&[1, 2, 3], &[1, 3], &[1, 2, 3], &[1], Some(3)),
        // Every ISR replica is shutting down.
        (&[1, 2, 3], &[1, 2], &[1, 2, 3], &[1, 2], None),
        // A dead ISR replica is not chosen.
        (&[1, 2, 3], &[1, 2, 3], &[1, 3], &[1], Some(3)),
    ];
    for (ar, isr, live, down, want) in rows {
        assert_eq!(
            controlled_shutdown_leader(&ids(ar), &ids(isr), &set(live), &set(down)),
            want.map(BrokerId),
            "AR {ar:?} ISR {isr:?} live {live:?} shutting down {down:?}"
        );
    }
}

/// (strategy, current (leader, epoch, ISR), AR, live, shutting down,
/// expected (leader, ISR, recovery state) or error).
type ElectRow = (
    Strategy,
    (i32, i32, &'static [i32]),
    &'static [i32],
    &'static [i32],
    &'static [i32],
    Result<(i32, &'static [i32], LeaderRecoveryState), ElectionError>,
);

const CLEAN: Strategy = Strategy::Offline {
    allow_unclean: false,
};
const UNCLEAN: Strategy = Strategy::Offline {
    allow_unclean: true,
};

fn not_available(strategy: Strategy) -> ElectionError {
    ElectionError::EligibleLeadersNotAvailable { strategy }
}

fn check_elect_rows(rows: Vec<ElectRow>) {
    for (strategy, (leader, epoch, isr), ar, live, down, want) in rows {
        let current = state(leader, epoch, isr);
        let got = elect(strategy, &current, &ids(ar), &set(live), &set(down));
        let want = want.map(|(l, isr, lrs)| LeaderIsr {
            leader: BrokerId(l),
            leader_epoch: LeaderEpoch(epoch + 1),
            isr: ids(isr),
            leader_recovery_state: lrs,
            partition_epoch: current.partition_epoch,
        });
        assert_eq!(
            got, want,
            "{strategy:?} from {current:?} AR {ar:?} live {live:?} down {down:?}"
        );
    }
}

#[test]
fn elect_offline_rows() {
    use LeaderRecoveryState::{Recovered, Recovering};
    check_elect_rows(vec![
        // Clean: new ISR = old ISR ∩ online, in ISR order.
        (
            CLEAN,
            (1, 4, &[3, 1, 2]),
            &[1, 2, 3],
            &[2, 3],
            &[],
            Ok((2, &[3, 2], Recovered)),
        ),
        // A shutting-down broker is not "online" for the offline strategy
        // (Kafka's isReplicaOnline = isLiveBroker), nor kept in the ISR.
        (
            CLEAN,
            (1, 4, &[1, 2, 3]),
            &[1, 2, 3],
            &[2, 3],
            &[2],
            Ok((3, &[3], Recovered)),
        ),
        (
            CLEAN,
            (1, 4, &[1]),
            &[1, 2, 3],
            &[2, 3],
            &[],
            Err(not_available(CLEAN)),
        ),
        // Unclean: ISR = [leader], RECOVERING.
        (
            UNCLEAN,
            (1, 4, &[1]),
            &[1, 2, 3],
            &[3, 2],
            &[],
            Ok((2, &[2], Recovering)),
        ),
        // Unclean allowed but a live ISR replica exists: clean election.
        (
            UNCLEAN,
            (1, 4, &[1, 3]),
            &[1, 2, 3],
            &[2, 3],
            &[],
            Ok((3, &[3], Recovered)),
        ),
        (
            UNCLEAN,
            (1, 4, &[1]),
            &[1, 2, 3],
            &[],
            &[],
            Err(not_available(UNCLEAN)),
        ),
    ]);
}

#[test]
fn elect_reassign_and_preferred_rows() {
    use LeaderRecoveryState::Recovered;
    use Strategy::{Preferred, Reassign};
    check_elect_rows(vec![
        // Reassign: the target replicas decide, ISR unchanged.
        (
            Reassign,
            (1, 4, &[1, 2, 3, 4]),
            &[4, 3],
            &[1, 2, 3, 4],
            &[],
            Ok((4, &[1, 2, 3, 4], Recovered)),
        ),
        (
            Reassign,
            (1, 4, &[1, 2]),
            &[4, 3],
            &[1, 2, 3, 4],
            &[],
            Err(not_available(Reassign)),
        ),
        // Preferred: ISR unchanged.
        (
            Preferred,
            (2, 4, &[2, 1, 3]),
            &[1, 2, 3],
            &[1, 2, 3],
            &[],
            Ok((1, &[2, 1, 3], Recovered)),
        ),
        (
            Preferred,
            (2, 4, &[2, 3]),
            &[1, 2, 3],
            &[1, 2, 3],
            &[],
            Err(ElectionError::PreferredLeaderNotAvailable {
                preferred: BrokerId(1),
            }),
        ),
        (
            Preferred,
            (1, 4, &[1, 2, 3]),
            &[1, 2, 3],
            &[1, 2, 3],
            &[],
            Err(ElectionError::ElectionNotNeeded {
                leader: BrokerId(1),
            }),
        ),
    ]);
}

#[test]
fn elect_controlled_shutdown_rows() {
    use LeaderRecoveryState::Recovered;
    use Strategy::ControlledShutdown as Cs;
    check_elect_rows(vec![
        // ISR minus the shutting-down brokers; a dead ISR replica stays, as
        // in Kafka.
        (
            Cs,
            (1, 4, &[1, 2, 3]),
            &[1, 2, 3],
            &[1, 2],
            &[1],
            Ok((2, &[2, 3], Recovered)),
        ),
        (
            Cs,
            (1, 4, &[3, 1, 2]),
            &[1, 2, 3],
            &[1, 2, 3],
            &[1, 2],
            Ok((3, &[3], Recovered)),
        ),
        (
            Cs,
            (1, 4, &[1]),
            &[1, 2, 3],
            &[1, 2, 3],
            &[1],
            Err(not_available(Cs)),
        ),
    ]);
}

#[test]
fn clean_election_keeps_a_recovering_state_and_unclean_sets_it() {
    // Kafka's newLeaderAndIsr keeps the previous recovery state: a partition
    // still recovering from an unclean election stays RECOVERING.
    let mut current = state(1, 9, &[1, 2]);
    current.leader_recovery_state = LeaderRecoveryState::Recovering;
    for strategy in [
        Strategy::Offline {
            allow_unclean: false,
        },
        Strategy::ControlledShutdown,
    ] {
        let got = elect(strategy, &current, &ids(&[1, 2]), &set(&[2]), &set(&[1])).unwrap();
        assert_eq!(got.leader, BrokerId(2));
        assert_eq!(got.leader_recovery_state, LeaderRecoveryState::Recovering);
    }
    let got = elect(
        Strategy::Offline {
            allow_unclean: true,
        },
        &state(1, 9, &[1]),
        &ids(&[1, 2]),
        &set(&[2]),
        &BTreeSet::new(),
    )
    .unwrap();
    assert_eq!(got.leader_recovery_state, LeaderRecoveryState::Recovering);
    assert_eq!(got.leader_recovery_state.value(), 1);
}

#[test]
fn every_election_bumps_the_leader_epoch_once_and_keeps_the_partition_epoch() {
    let current = state(1, 0, &[1, 2, 3]);
    let live = set(&[1, 2, 3]);
    for strategy in [
        Strategy::Offline {
            allow_unclean: false,
        },
        Strategy::Reassign,
        Strategy::ControlledShutdown,
    ] {
        let got = elect(strategy, &current, &ids(&[2, 3, 1]), &live, &set(&[1])).unwrap();
        assert_eq!(got.leader_epoch, LeaderEpoch(1), "{strategy:?}");
        assert_eq!(got.partition_epoch, PartitionEpoch(7), "{strategy:?}");
    }
    let got = elect(
        Strategy::Preferred,
        &current,
        &ids(&[2, 3, 1]),
        &live,
        &BTreeSet::new(),
    )
    .unwrap();
    assert_eq!(
        (got.leader, got.leader_epoch),
        (BrokerId(2), LeaderEpoch(1))
    );
    // A corrupt epoch at the top of the range saturates instead of panicking.
    let top = state(1, i32::MAX, &[1, 2]);
    let got = elect(
        Strategy::ControlledShutdown,
        &top,
        &ids(&[1, 2]),
        &live,
        &set(&[1]),
    )
    .unwrap();
    assert_eq!(got.leader_epoch, LeaderEpoch(i32::MAX));
}

#[test]
fn preferred_with_empty_assignment_is_not_available() {
    let current = state(-1, 3, &[]);
    let got = elect(
        Strategy::Preferred,
        &current,
        &[],
        &set(&[1]),
        &BTreeSet::new(),
    );
    assert_eq!(
        got,
        Err(ElectionError::PreferredLeaderNotAvailable {
            preferred: BrokerId::NONE
        })
    );
}

#[test]
fn election_errors_map_to_kafka_codes() {
    let rows = [
        (
            ElectionError::EligibleLeadersNotAvailable {
                strategy: Strategy::Offline {
                    allow_unclean: false,
                },
            },
            83,
        ),
        (
            ElectionError::PreferredLeaderNotAvailable {
                preferred: BrokerId(1),
            },
            80,
        ),
        (
            ElectionError::ElectionNotNeeded {
                leader: BrokerId(1),
            },
            84,
        ),
    ];
    for (err, code) in rows {
        assert_eq!(err.code(), ErrorCode(code), "{err}");
    }
    assert_eq!(
        ElectionError::ElectionNotNeeded {
            leader: BrokerId(1)
        }
        .code(),
        ErrorCode::ELECTION_NOT_NEEDED
    );
}
