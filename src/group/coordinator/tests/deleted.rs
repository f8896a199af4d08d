//! Deleted topics lose their committed offsets (Kafka's
//! `GroupCoordinator.onPartitionsDeleted`), on the parent module's harness.

use std::collections::BTreeSet;

use super::*;

fn topics(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

fn offset_of(h: &mut Harness, group: &str, topic: &str, p: i32) -> i64 {
    h.fetch(group, Some(vec![(topic.into(), p)])).partitions[0].offset
}

#[test]
fn deleting_a_topic_tombstones_every_groups_offsets_of_it_and_keeps_the_rest() {
    let mut h = Harness::new();
    h.commit(
        "g1",
        -1,
        "",
        &[("gone", 0, 5), ("gone", 1, 6), ("kept", 0, 7)],
    );
    h.commit("g2", -1, "", &[("gone", 2, 8)]);
    let (member, generation) = h.stable_single("g3");
    h.commit("g3", generation, &member, &[("gone", 0, 9)]);
    h.appends.clear();

    let actions = h.c.on_topics_deleted(&topics(&["gone"]), h.now);
    h.run(actions);

    assert_eq!(offset_of(&mut h, "g1", "gone", 0), -1);
    assert_eq!(offset_of(&mut h, "g1", "gone", 1), -1);
    assert_eq!(offset_of(&mut h, "g1", "kept", 0), 7);
    assert_eq!(offset_of(&mut h, "g2", "gone", 2), -1);
    assert_eq!(offset_of(&mut h, "g3", "gone", 0), -1);
    let tombstones: BTreeSet<Vec<u8>> = h
        .appends
        .iter()
        .flat_map(|(_, r, _)| {
            r.iter()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| k.clone())
        })
        .collect();
    let expected: BTreeSet<Vec<u8>> = [("g1", 0), ("g1", 1), ("g2", 2), ("g3", 0)]
        .iter()
        .map(|(g, p)| super::super::offset_key(g, "gone", *p))
        .collect();
    // g2 (generation 0, Empty, no offsets left) dies without a metadata
    // tombstone, as Kafka writes one only for generation > 0.
    assert_eq!(tombstones, expected);
    assert_eq!(
        h.c.group_state("g2"),
        None,
        "an empty group without offsets is removed"
    );
    assert_eq!(
        h.c.group_state("g1"),
        Some(Empty),
        "still has offsets of kept"
    );
    assert_eq!(
        h.c.group_state("g3"),
        Some(Stable),
        "a group with members stays"
    );
}

#[test]
fn an_emptied_group_of_a_past_generation_gets_its_metadata_tombstoned() {
    let mut h = Harness::new();
    let (member, generation) = h.stable_single("g");
    h.commit("g", generation, &member, &[("gone", 0, 3)]);
    let w = h.waiter();
    let actions = h.c.on_leave(
        w,
        LeaveRequest {
            group_id: "g".into(),
            members: vec![(member.clone(), None)],
        },
        h.now,
    );
    h.run(actions);
    h.advance(i64::from(REBALANCE));
    assert_eq!(h.c.group_state("g"), Some(Empty));
    h.appends.clear();

    let actions = h.c.on_topics_deleted(&topics(&["gone"]), h.now);
    h.run(actions);
    let keys: Vec<Vec<u8>> = h
        .appends
        .iter()
        .flat_map(|(_, r, _)| r.iter().map(|(k, _)| k.clone()))
        .collect();
    assert_eq!(
        keys,
        vec![
            super::super::offset_key("g", "gone", 0),
            encode_group_metadata_key("g")
        ]
    );
    assert_eq!(h.c.group_state("g"), None);
}

#[test]
fn a_commit_in_flight_when_its_topic_is_deleted_is_answered_but_not_kept() {
    let mut h = Harness::new();
    h.auto_ack = None;
    let w = h.commit("g", -1, "", &[("gone", 0, 4), ("kept", 0, 5)]);
    let (_, _, token) = h.appends.remove(0);
    let actions = h.c.on_topics_deleted(&topics(&["gone"]), h.now);
    h.run(actions);
    assert!(
        h.appends.is_empty(),
        "nothing stored yet, nothing to tombstone"
    );
    let actions = h.c.on_appended(token, ErrorCode::NONE, h.now);
    h.run(actions);
    match h.answer(w) {
        Some(Answer::Commit(results)) => {
            assert!(results.iter().all(|(_, _, e)| *e == ErrorCode::NONE));
            assert_eq!(results.len(), 2);
        }
        other => panic!("no commit answer: {other:?}"),
    }
    h.auto_ack = Some(ErrorCode::NONE);
    assert_eq!(offset_of(&mut h, "g", "gone", 0), -1);
    assert_eq!(offset_of(&mut h, "g", "kept", 0), 5);
}
