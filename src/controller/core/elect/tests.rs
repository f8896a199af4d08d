use super::super::fixtures::{ids, leadership, registered};
use super::super::ControllerEvent;
use super::*;
use crate::controller::leader_election::LeaderRecoveryState;
use crate::types::{ControllerEpoch, LeaderEpoch};

/// Brokers `live` registered; `t-0` assigned [1, 2, 3], led by 1 at
/// leader epoch 4 with ISR `isr`, partition epoch 6; controller epoch 3.
fn ctx(live: &[i32], isr: &[i32]) -> ControllerContext {
    let mut ctx = registered(live);
    ctx.add_topic("t", uuid::Uuid::from_u128(7));
    ctx.assignments.insert(tp(), ids(&[1, 2, 3]));
    ctx.leadership.insert(tp(), leadership(1, 4, isr, 6));
    ctx
}

/// `t-0`, the partition these elections are about.
fn tp() -> TopicPartition {
    super::super::fixtures::tp(0)
}

fn elect(
    core: &mut ControllerCore,
    c: &mut ControllerContext,
    kind: ElectionKind,
    unclean: bool,
) -> Vec<ControllerAction> {
    core.on_event(
        Some(c),
        0,
        ControllerEvent::Elect {
            job: 1,
            parts: vec![tp()],
            kind,
            default_unclean: unclean,
        },
    )
}

/// The single write an action list holds.
fn written(actions: &[ControllerAction]) -> LeaderIsr {
    let writes: Vec<&LeaderIsr> = actions
        .iter()
        .filter_map(|a| match a {
            ControllerAction::WriteLeaderships { writes, .. } => Some(writes),
            _ => None,
        })
        .flatten()
        .map(|(_, l)| l)
        .collect();
    assert_eq!(writes.len(), 1, "{actions:?}");
    writes[0].clone()
}

#[test]
fn an_offline_election_writes_then_takes_the_leader_and_tells_the_live_replicas() {
    let mut core = ControllerCore::new();
    // Broker 1, the leader, died.
    let mut c = ctx(&[2, 3], &[1, 2]);
    let actions = elect(&mut core, &mut c, ElectionKind::Offline, false);
    let new = written(&actions);
    assert_eq!(
        (new.leader, new.leader_epoch),
        (BrokerId(2), LeaderEpoch(5))
    );
    assert_eq!(new.isr, ids(&[2]));
    assert_eq!(
        new.partition_epoch,
        PartitionEpoch(6),
        "the version expected"
    );
    // Nothing is taken before the write.
    assert_eq!(c.leadership[&tp()].leader_isr.leader, BrokerId(1));

    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsWritten {
            token: 1,
            results: vec![Ok(PartitionEpoch(7))],
        },
    );
    assert_eq!(
        actions,
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[2, 3]),
                partition: tp(),
                is_new: false,
            },
            ControllerAction::Elected {
                job: 1,
                elected: vec![tp()],
                failed: ElectionFailures::new(),
            },
        ]
    );
    let now = &c.leadership[&tp()];
    assert_eq!(now.leader_isr.leader, BrokerId(2));
    assert_eq!(now.leader_isr.partition_epoch, PartitionEpoch(7));
    assert_eq!(now.controller_epoch, ControllerEpoch(3));
    assert_eq!(core.waiting(), 0);
}

#[test]
fn no_online_isr_member_reads_the_topic_setting_and_elects_uncleanly_only_if_it_says_so() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[3], &[1, 2]);
    let actions = elect(&mut core, &mut c, ElectionKind::Offline, false);
    assert_eq!(
        actions,
        vec![ControllerAction::ReadUncleanSettings {
            job: 1,
            topics: vec!["t".into()],
        }]
    );
    // The topic keeps the default (false): no leader, nothing written.
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::UncleanRead {
            job: 1,
            settings: [("t".to_string(), false)].into(),
        },
    );
    match &actions[..] {
        [ControllerAction::Elected {
            elected, failed, ..
        }] => {
            assert!(elected.is_empty());
            assert_eq!(failed[&tp()].0, ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE);
        }
        other => panic!("{other:?}"),
    }

    // Its override allows it: broker 3 leads alone, RECOVERING, counted.
    let actions = elect(&mut core, &mut c, ElectionKind::Offline, false);
    assert!(matches!(
        actions[..],
        [ControllerAction::ReadUncleanSettings { .. }]
    ));
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::UncleanRead {
            job: 1,
            settings: [("t".to_string(), true)].into(),
        },
    );
    assert_eq!(actions[0], ControllerAction::UncleanElections(1));
    let new = written(&actions);
    assert_eq!((new.leader, new.isr.clone()), (BrokerId(3), ids(&[3])));
    assert_eq!(new.leader_recovery_state, LeaderRecoveryState::Recovering);
}

#[test]
fn a_moved_znode_is_reread_and_tried_once_more_then_fails() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[2, 3], &[1, 2]);
    elect(&mut core, &mut c, ElectionKind::Offline, false);
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsWritten {
            token: 1,
            results: vec![Err(WriteFailure::BadVersion("moved".into()))],
        },
    );
    assert_eq!(
        actions,
        vec![ControllerAction::ReloadLeaderships {
            job: 1,
            parts: vec![tp()],
        }]
    );
    // The znode now says ISR [1, 2, 3] at version 9: the retry plans from it.
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsReloaded {
            job: 1,
            states: vec![(tp(), leadership(1, 4, &[1, 2, 3], 9))],
        },
    );
    let new = written(&actions);
    assert_eq!(new.isr, ids(&[2, 3]));
    assert_eq!(new.partition_epoch, PartitionEpoch(9));
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsWritten {
            token: 1,
            results: vec![Err(WriteFailure::BadVersion("moved again".into()))],
        },
    );
    assert_eq!(
        actions,
        vec![ControllerAction::Elected {
            job: 1,
            elected: vec![],
            failed: [(
                tp(),
                (ErrorCode::UNKNOWN_SERVER_ERROR, "moved again".into())
            )]
            .into(),
        }]
    );
    assert_eq!(core.waiting(), 0);
}

#[test]
fn controlled_shutdown_tells_the_shutting_down_replica_and_resignation_ends_the_job() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[1, 2, 3], &[1, 2, 3]);
    c.shutting_down.insert(BrokerId(1));
    let actions = elect(&mut core, &mut c, ElectionKind::ControlledShutdown, false);
    let new = written(&actions);
    assert_eq!((new.leader, new.isr.clone()), (BrokerId(2), ids(&[2, 3])));
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsWritten {
            token: 1,
            results: vec![Ok(PartitionEpoch(7))],
        },
    );
    assert_eq!(
        actions[0],
        ControllerAction::LeaderAndIsr {
            recipients: ids(&[1, 2, 3]),
            partition: tp(),
            is_new: false,
        }
    );

    // Without a context (resigned) a job ends with what it had.
    let mut c = ctx(&[2, 3], &[1, 2]);
    let actions = elect(&mut core, &mut c, ElectionKind::Offline, false);
    assert_eq!(written(&actions).leader, BrokerId(2));
    let actions = core.on_event(
        None,
        0,
        ControllerEvent::LeadershipsWritten {
            token: 1,
            results: vec![Err(WriteFailure::NotController("resigned".into()))],
        },
    );
    assert_eq!(
        actions,
        vec![ControllerAction::Elected {
            job: 1,
            elected: vec![],
            failed: [(tp(), (ErrorCode::NOT_CONTROLLER, "resigned".into()))].into(),
        }]
    );
}
