//! `[pure]` tests of the classic group state: Kafka's transition table,
//! protocol choice, membership.

use super::*;
use GroupState::*;

const ALL: [GroupState; 5] = [Empty, PreparingRebalance, CompletingRebalance, Stable, Dead];

/// Kafka's `GroupMetadata` transition table, row by row: from → the states
/// it may move to.
#[test]
fn transitions_follow_kafkas_table() {
    let allowed: &[(GroupState, &[GroupState])] = &[
        (Empty, &[PreparingRebalance, Dead]),
        (PreparingRebalance, &[Empty, CompletingRebalance, Dead]),
        (CompletingRebalance, &[PreparingRebalance, Stable, Dead]),
        (Stable, &[PreparingRebalance, Dead]),
        (Dead, &[Dead]),
    ];
    for (from, to_list) in allowed {
        for to in ALL {
            assert_eq!(
                from.can_move_to(to),
                to_list.contains(&to),
                "{from:?} -> {to:?}"
            );
        }
    }
}

#[test]
fn an_illegal_transition_is_refused_and_changes_nothing() {
    let mut g = Group::new("g", 5);
    assert_eq!(
        g.transition_to(Stable, 9),
        Err(IllegalTransition {
            from: Empty,
            to: Stable
        })
    );
    assert_eq!((g.state(), g.state_since_ms()), (Empty, 5));
    g.transition_to(PreparingRebalance, 10).unwrap();
    assert_eq!((g.state(), g.state_since_ms()), (PreparingRebalance, 10));
}

fn member(id: &str, protocols: &[&str]) -> Member {
    Member {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/h".into(),
        rebalance_timeout_ms: 1000,
        session_timeout_ms: 500,
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|p| ((*p).to_owned(), vec![]))
            .collect(),
        assignment: vec![],
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_join_must_share_a_protocol_with_every_member() {
    let mut g = Group::new("g", 0);
    // Empty group: any non-empty protocol list of any type.
    assert!(g.supports_protocols("consumer", &names(&["range"])));
    assert!(!g.supports_protocols("consumer", &[]));
    assert!(!g.supports_protocols("", &names(&["range"])));
    g.add_member(member("a", &["range", "roundrobin"]));
    g.add_member(member("b", &["roundrobin"]));
    // (case, protocol type, protocols, consistent)
    let rows: &[(&str, &str, &[&str], bool)] = &[
        (
            "shares roundrobin",
            "consumer",
            &["sticky", "roundrobin"],
            true,
        ),
        ("range is not b's", "consumer", &["range"], false),
        ("other protocol type", "connect", &["roundrobin"], false),
    ];
    for (case, ty, protocols, want) in rows {
        assert_eq!(g.supports_protocols(ty, &names(protocols)), *want, "{case}");
    }
}

#[test]
fn the_protocol_is_chosen_by_vote_among_the_shared_ones() {
    // (case, members with their preferences, chosen)
    type Members<'a> = &'a [(&'a str, &'a [&'a str])];
    let rows: &[(&str, Members<'_>, Option<&str>)] = &[
        ("no members", &[], None),
        (
            "one member: its first choice",
            &[("a", &["range", "rr"])],
            Some("range"),
        ),
        (
            "majority wins over the leader's choice",
            &[
                ("a", &["range", "rr"]),
                ("b", &["rr", "range"]),
                ("c", &["rr", "range"]),
            ],
            Some("rr"),
        ),
        (
            "only shared protocols count",
            &[("a", &["sticky", "rr"]), ("b", &["rr"])],
            Some("rr"),
        ),
        (
            "a tie goes to the leader's preference",
            &[("a", &["range", "rr"]), ("b", &["rr", "range"])],
            Some("range"),
        ),
        ("nothing shared", &[("a", &["range"]), ("b", &["rr"])], None),
    ];
    for (case, members, want) in rows {
        let mut g = Group::new("g", 0);
        for (id, protocols) in *members {
            g.add_member(member(id, protocols));
        }
        assert_eq!(g.select_protocol().as_deref(), *want, "{case}");
    }
}

#[test]
fn the_first_member_leads_and_a_leaving_leader_hands_over() {
    let mut g = Group::new("g", 0);
    g.add_member(member("b", &["range"]));
    g.add_member(member("a", &["range"]));
    assert_eq!(g.leader.as_deref(), Some("b"));
    assert_eq!(g.protocol_type.as_deref(), Some("consumer"));
    assert!(g.remove_member("b").is_some());
    assert_eq!(g.leader.as_deref(), Some("a"));
    assert!(g.remove_member("b").is_none(), "already gone");
    g.remove_member("a");
    assert!(g.is_empty());
    assert_eq!(
        (g.leader.as_deref(), g.protocol_type.as_deref()),
        (None, None)
    );
}

#[test]
fn a_static_member_is_found_by_its_instance_id() {
    let mut g = Group::new("g", 0);
    let mut m = member("m-1", &["range"]);
    m.group_instance_id = Some("i-1".into());
    g.add_member(m);
    assert_eq!(g.static_member("i-1"), Some("m-1"));
    g.remove_member("m-1");
    assert_eq!(g.static_member("i-1"), None);
}

#[test]
fn a_completed_join_starts_the_next_generation() {
    let mut g = Group::new("g", 0);
    g.add_member(member("a", &["range", "rr"]));
    g.add_member(member("b", &["rr"]));
    // From Empty the join phase cannot complete: a rebalance comes first.
    assert!(g.init_next_generation(1).is_err());
    assert_eq!(g.generation, 0);
    g.transition_to(PreparingRebalance, 2).unwrap();
    g.init_next_generation(3).unwrap();
    assert_eq!(
        (g.state(), g.generation, g.protocol.as_deref()),
        (CompletingRebalance, 1, Some("rr"))
    );
    g.transition_to(Stable, 4).unwrap();
    // Everyone left during the next rebalance: Empty, no protocol.
    g.transition_to(PreparingRebalance, 5).unwrap();
    g.remove_member("a");
    g.remove_member("b");
    g.init_next_generation(6).unwrap();
    assert_eq!(
        (g.state(), g.generation, g.protocol.as_deref()),
        (Empty, 2, None)
    );
}

#[test]
fn state_names_are_kafkas() {
    let names: Vec<&str> = ALL.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "Empty",
            "PreparingRebalance",
            "CompletingRebalance",
            "Stable",
            "Dead"
        ]
    );
}

/// A Stable group at generation 2 with a dynamic member "a" and a static
/// member "s" (instance "i-1").
fn stable_group() -> Group {
    let mut g = Group::new("g", 0);
    g.add_member(member("a", &["range"]));
    let mut s = member("s", &["range"]);
    s.group_instance_id = Some("i-1".into());
    g.add_member(s);
    g.transition_to(PreparingRebalance, 1).unwrap();
    g.init_next_generation(2).unwrap();
    g.transition_to(PreparingRebalance, 3).unwrap();
    g.init_next_generation(4).unwrap();
    g.transition_to(Stable, 5).unwrap();
    assert_eq!(g.generation, 2);
    g
}

#[test]
fn offset_commits_are_checked_as_kafka_checks_them() {
    use crate::protocol::ErrorCode as E;
    // (case, generation, member id, instance id, expected)
    type Row<'a> = (&'a str, i32, &'a str, Option<&'a str>, Result<(), E>);
    let rows: &[Row<'_>] = &[
        (
            "a current member at the current generation",
            2,
            "a",
            None,
            Ok(()),
        ),
        (
            "an old generation",
            1,
            "a",
            None,
            Err(E::ILLEGAL_GENERATION),
        ),
        ("an unknown member", 2, "x", None, Err(E::UNKNOWN_MEMBER_ID)),
        (
            "a simple commit to a non-empty group",
            -1,
            "",
            None,
            Err(E::UNKNOWN_MEMBER_ID),
        ),
        ("the static member", 2, "s", Some("i-1"), Ok(())),
        (
            "an older instance of the static member",
            2,
            "s-old",
            Some("i-1"),
            Err(E::FENCED_INSTANCE_ID),
        ),
        (
            "an unknown instance",
            2,
            "s",
            Some("i-9"),
            Err(E::UNKNOWN_MEMBER_ID),
        ),
    ];
    let g = stable_group();
    for (case, generation, member_id, instance, want) in rows {
        assert_eq!(
            g.validate_offset_commit(*generation, member_id, *instance),
            *want,
            "{case}"
        );
    }
}

#[test]
fn offset_commits_by_group_state() {
    use crate::protocol::ErrorCode as E;
    // Empty: simple commits go ahead, members cannot exist.
    let mut empty = Group::new("g", 0);
    assert_eq!(empty.validate_offset_commit(-1, "", None), Ok(()));
    assert_eq!(
        empty.validate_offset_commit(0, "a", None),
        Err(E::UNKNOWN_MEMBER_ID)
    );
    // Dead: being removed.
    empty.transition_to(Dead, 1).unwrap();
    assert_eq!(
        empty.validate_offset_commit(-1, "", None),
        Err(E::COORDINATOR_NOT_AVAILABLE)
    );
    // CompletingRebalance: a valid member must sync first.
    let mut g = stable_group();
    g.transition_to(PreparingRebalance, 6).unwrap();
    assert_eq!(
        g.validate_offset_commit(2, "a", None),
        Ok(()),
        "PreparingRebalance commits"
    );
    g.init_next_generation(7).unwrap();
    assert_eq!(
        g.validate_offset_commit(3, "a", None),
        Err(E::REBALANCE_IN_PROGRESS)
    );
}
