use super::*;
use crate::config::topic::ConfigSource;
use crate::controller::brokers::*;
use crate::controller::topic_configs::*;
use crate::zk::embedded::EmbeddedStore;
use futures_lite::future::block_on;
use rand::rngs::StdRng;
use rand::SeedableRng;

fn rng() -> StdRng {
    StdRng::seed_from_u64(42)
}

fn new_topic(name: &str, partitions: i32, rf: i16) -> NewTopic {
    NewTopic {
        name: name.to_string(),
        num_partitions: partitions,
        replication_factor: rf,
        ..Default::default()
    }
}

/// Brokers without racks.
fn unracked(ids: &[BrokerId]) -> Vec<(BrokerId, Option<String>)> {
    ids.iter().map(|id| (*id, None)).collect()
}

fn defaults() -> BrokerTopicDefaults {
    BrokerTopicDefaults::default()
}

async fn create(
    s: &EmbeddedStore,
    t: &NewTopic,
    brokers: &[BrokerId],
) -> Result<TopicInfo, AdminError> {
    create_topic(
        s,
        t,
        &unracked(brokers),
        &defaults(),
        false,
        true,
        &mut rng(),
    )
    .await
}

#[test]
fn topic_name_validation_follows_kafka_topic_validate() {
    let long = "a".repeat(250);
    let ok_249 = "a".repeat(249);
    for (name, ok) in [
        ("orders", true),
        ("a.b_c-D9", true),
        (ok_249.as_str(), true),
        ("", false),
        (".", false),
        ("..", false),
        (long.as_str(), false),
        ("with space", false),
        ("slash/name", false),
        ("ümlaut", false),
    ] {
        assert_eq!(validate_topic_name(name).is_ok(), ok, "{name:?}");
        if !ok {
            assert_eq!(validate_topic_name(name).unwrap_err().error_code(), 17);
        }
    }
}

#[test]
fn create_topic_writes_kafka_znodes() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let mut t = new_topic("orders", 3, 2);
        t.configs.insert("retention.ms".into(), "1000".into());
        let info = create(&s, &t, &[BrokerId(1), BrokerId(2), BrokerId(3)])
            .await
            .unwrap();
        assert_eq!(info.partitions.len(), 3);

        let (data, _) = s.get("/brokers/topics/orders").await.unwrap();
        let z = TopicZNode::decode(&data).unwrap();
        assert_eq!(z.version, 3);
        assert_eq!(z.topic_id, Some(info.topic_id));
        for p in &info.partitions {
            assert_eq!(z.partitions[&p.partition], p.replicas);
            assert_eq!(p.replicas.len(), 2);
            let (state, stat) = s
                .get(&paths::partition_state("orders", p.partition))
                .await
                .unwrap();
            let state = PartitionStateZNode::decode(&state).unwrap();
            assert_eq!(state.leader, p.replicas[0]);
            assert_eq!(
                (state.leader_epoch, &state.isr, stat.version),
                (LeaderEpoch(0), &p.replicas, 0)
            );
        }
        let (cfg, _) = s.get("/config/topics/orders").await.unwrap();
        assert_eq!(cfg, br#"{"version":1,"config":{"retention.ms":"1000"}}"#);

        let loaded = load_topics(&s).await.unwrap();
        assert_eq!(loaded, vec![info]);
    });
}

#[test]
fn create_topic_errors_map_to_kafka_codes() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        create(&s, &new_topic("exists", 1, 1), &[BrokerId(1)])
            .await
            .unwrap();
        create(&s, &new_topic("a_b", 1, 1), &[BrokerId(1)])
            .await
            .unwrap();
        let mut bad_config = new_topic("cfg", 1, 1);
        bad_config
            .configs
            .insert("retention.ms".into(), "-5".into());
        let mut unknown_key = new_topic("cfg2", 1, 1);
        unknown_key.configs.insert("no.such".into(), "1".into());
        let mut manual_unknown_broker = new_topic("m", -1, -1);
        manual_unknown_broker
            .replica_assignment
            .insert(0, vec![BrokerId(1), BrokerId(9)]);
        let mut manual_and_count = new_topic("m2", 2, -1);
        manual_and_count
            .replica_assignment
            .insert(0, vec![BrokerId(1)]);
        let mut manual_gap = new_topic("m3", -1, -1);
        manual_gap.replica_assignment.insert(1, vec![BrokerId(1)]);
        let mut manual_dup = new_topic("m4", -1, -1);
        manual_dup
            .replica_assignment
            .insert(0, vec![BrokerId(1), BrokerId(1)]);
        let rows: Vec<(NewTopic, i16)> = vec![
            (new_topic("exists", 1, 1), 36),
            (new_topic("a.b", 1, 1), 17),
            (new_topic("bad name", 1, 1), 17),
            (new_topic("zero", 0, 1), 37),
            (new_topic("neg", -2, 1), 37),
            (new_topic("huge", i32::MAX, 1), 37),
            (new_topic("rf", 1, 2), 38),
            (new_topic("rf0", 1, 0), 38),
            (bad_config, 40),
            (unknown_key, 40),
            (manual_unknown_broker, 39),
            (manual_and_count, 42),
            (manual_gap, 39),
            (manual_dup, 39),
        ];
        for (t, code) in rows {
            let err = create(&s, &t, &[BrokerId(1)]).await.expect_err(&t.name);
            assert_eq!(err.error_code(), code, "{}: {err}", t.name);
        }
        let names: Vec<String> = load_topics(&s)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, vec!["a_b", "exists"]);
    });
}

#[test]
fn create_topic_uses_broker_defaults_for_minus_one() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let d = BrokerTopicDefaults {
            num_partitions: 4,
            default_replication_factor: 2,
            ..defaults()
        };
        let info = create_topic(
            &s,
            &new_topic("t", -1, -1),
            &unracked(&[BrokerId(1), BrokerId(2)]),
            &d,
            false,
            true,
            &mut rng(),
        )
        .await
        .unwrap();
        assert_eq!(info.partitions.len(), 4);
        assert!(info.partitions.iter().all(|p| p.replicas.len() == 2));
    });
}

#[test]
fn validate_only_writes_nothing() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let info = create_topic(
            &s,
            &new_topic("t", 2, 1),
            &unracked(&[BrokerId(1)]),
            &defaults(),
            true,
            true,
            &mut rng(),
        )
        .await
        .unwrap();
        assert_eq!(info.partitions.len(), 2);
        assert!(s.exists("/brokers/topics/t").await.unwrap().is_none());
        assert!(load_topics(&s).await.unwrap().is_empty());
    });
}

#[test]
fn delete_topic_removes_all_znodes_and_allows_recreate_with_new_id() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let first = create(&s, &new_topic("t", 2, 1), &[BrokerId(1)])
            .await
            .unwrap();
        let deleted = delete_topic(&s, "t").await.unwrap();
        assert_eq!(deleted.topic_id, first.topic_id);
        for path in [
            "/brokers/topics/t",
            "/config/topics/t",
            "/admin/delete_topics/t",
        ] {
            assert!(s.exists(path).await.unwrap().is_none(), "{path}");
        }
        assert_eq!(delete_topic(&s, "t").await.unwrap_err().error_code(), 3);
        let mut other_rng = StdRng::seed_from_u64(7);
        let again = create_topic(
            &s,
            &new_topic("t", 1, 1),
            &unracked(&[BrokerId(1)]),
            &defaults(),
            false,
            true,
            &mut other_rng,
        )
        .await
        .unwrap();
        assert_ne!(again.topic_id, first.topic_id);
    });
}

#[test]
fn pending_deletion_marker_blocks_create_and_is_completed_at_startup() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        create(&s, &new_topic("t", 1, 1), &[BrokerId(1)])
            .await
            .unwrap();
        // A crash after the marker was written, before the multi.
        s.create("/admin/delete_topics/t", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let err = create(&s, &new_topic("t", 1, 1), &[BrokerId(1)])
            .await
            .unwrap_err();
        assert_eq!(err.error_code(), 36);
        assert_eq!(complete_pending_deletions(&s).await.unwrap(), vec!["t"]);
        assert!(load_topics(&s).await.unwrap().is_empty());
        assert!(s.children("/admin/delete_topics").await.unwrap().is_empty());
    });
}

#[test]
fn create_partitions_continues_round_robin_and_only_grows() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let mut t = new_topic("t", -1, -1);
        t.replica_assignment = BTreeMap::from([
            (0, vec![BrokerId(1), BrokerId(2)]),
            (1, vec![BrokerId(2), BrokerId(3)]),
        ]);
        create(&s, &t, &[BrokerId(1), BrokerId(2), BrokerId(3)])
            .await
            .unwrap();
        let info = create_partitions(
            &s,
            "t",
            4,
            None,
            &unracked(&[BrokerId(1), BrokerId(2), BrokerId(3)]),
            false,
            true,
        )
        .await
        .unwrap();
        let replicas: Vec<Vec<BrokerId>> =
            info.partitions.iter().map(|p| p.replicas.clone()).collect();
        // Start index = position of partition 0's leader (broker 1) = 0;
        // fixed shift 0; partitions 2 and 3 continue the round-robin.
        assert_eq!(
            replicas,
            vec![
                vec![BrokerId(1), BrokerId(2)],
                vec![BrokerId(2), BrokerId(3)],
                vec![BrokerId(3), BrokerId(1)],
                vec![BrokerId(1), BrokerId(3)]
            ]
        );
        assert_eq!(info.partitions[3].leader, 1);
        assert_eq!(load_topic(&s, "t").await.unwrap(), info);

        type Row = (i32, Option<Vec<Vec<BrokerId>>>, i16);
        let rows: Vec<Row> = vec![
            (4, None, 37),
            (3, None, 37),
            (5, Some(vec![]), 39),
            (5, Some(vec![vec![BrokerId(1)]]), 39),
            (5, Some(vec![vec![BrokerId(1), BrokerId(9)]]), 39),
        ];
        for (total, manual, code) in rows {
            let err = create_partitions(
                &s,
                "t",
                total,
                manual.as_deref(),
                &unracked(&[BrokerId(1), BrokerId(2), BrokerId(3)]),
                false,
                true,
            )
            .await
            .unwrap_err();
            assert_eq!(err.error_code(), code, "{total} {manual:?}");
        }
        let err = create_partitions(&s, "nope", 2, None, &unracked(&[BrokerId(1)]), false, true)
            .await
            .unwrap_err();
        assert_eq!(err.error_code(), 3);
        let manual = create_partitions(
            &s,
            "t",
            5,
            Some(&[vec![BrokerId(3), BrokerId(2)]]),
            &unracked(&[BrokerId(1), BrokerId(2), BrokerId(3)]),
            false,
            true,
        )
        .await
        .unwrap();
        assert_eq!(
            manual.partitions[4].replicas,
            vec![BrokerId(3), BrokerId(2)]
        );
        let dry = create_partitions(
            &s,
            "t",
            7,
            None,
            &unracked(&[BrokerId(1), BrokerId(2), BrokerId(3)]),
            true,
            true,
        )
        .await
        .unwrap();
        assert_eq!(dry.partitions.len(), 7);
        assert_eq!(load_topic(&s, "t").await.unwrap().partitions.len(), 5);
    });
}

#[test]
fn describe_configs_reports_overrides_as_dynamic_topic_config() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let mut t = new_topic("t", 1, 1);
        t.configs.insert("cleanup.policy".into(), "compact".into());
        create(&s, &t, &[BrokerId(1)]).await.unwrap();
        let entries = describe_configs(&s, "t", &defaults(), None).await.unwrap();
        let policy = entries.iter().find(|e| e.name == "cleanup.policy").unwrap();
        assert_eq!(policy.value.as_deref(), Some("compact"));
        assert_eq!(policy.source, ConfigSource::DynamicTopicConfig);
        let retention = entries.iter().find(|e| e.name == "retention.ms").unwrap();
        assert_eq!(retention.source, ConfigSource::DefaultConfig);
        let err = describe_configs(&s, "nope", &defaults(), None)
            .await
            .unwrap_err();
        assert_eq!(err.error_code(), 3);
    });
}

fn op(name: &str, op: AlterConfigOpType, value: Option<&str>) -> AlterConfigOp {
    AlterConfigOp {
        name: name.into(),
        op,
        value: value.map(str::to_string),
    }
}

#[test]
fn incremental_alter_configs_set_delete_append_subtract() {
    use AlterConfigOpType::*;
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let mut t = new_topic("t", 1, 1);
        t.configs.insert("retention.ms".into(), "1000".into());
        create(&s, &t, &[BrokerId(1)]).await.unwrap();
        let d = defaults();
        let out = incremental_alter_configs(
            &s,
            "t",
            &[
                op("retention.ms", Delete, None),
                op("segment.ms", Set, Some("5000")),
                op("cleanup.policy", Append, Some("compact")),
            ],
            &d,
            false,
        )
        .await
        .unwrap();
        let want: BTreeMap<String, String> =
            [("cleanup.policy", "delete,compact"), ("segment.ms", "5000")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(out, want);
        assert_eq!(load_topic(&s, "t").await.unwrap().configs, want);
        let notes = s.children("/config/changes").await.unwrap();
        assert_eq!(notes, vec!["config_change_0000000000"]);
        let (note, _) = s
            .get("/config/changes/config_change_0000000000")
            .await
            .unwrap();
        assert_eq!(note, br#"{"version":2,"entity_path":"topics/t"}"#);

        let out = incremental_alter_configs(
            &s,
            "t",
            &[op("cleanup.policy", Subtract, Some("delete"))],
            &d,
            false,
        )
        .await
        .unwrap();
        assert_eq!(out["cleanup.policy"], "compact");

        let rows: Vec<(Vec<AlterConfigOp>, i16)> = vec![
            (
                vec![
                    op("retention.ms", Set, Some("1")),
                    op("retention.ms", Delete, None),
                ],
                42,
            ),
            (vec![op("retention.ms", Set, None)], 42),
            (vec![op("retention.ms", Append, Some("1"))], 40),
            (vec![op("retention.ms", Set, Some("x"))], 40),
            (vec![op("bogus.key", Set, Some("1"))], 40),
            (vec![op("cleanup.policy", Append, Some("forever"))], 40),
        ];
        for (ops, code) in rows {
            let err = incremental_alter_configs(&s, "t", &ops, &d, false)
                .await
                .unwrap_err();
            assert_eq!(err.error_code(), code, "{ops:?}");
        }
        let err = incremental_alter_configs(&s, "nope", &[], &d, false)
            .await
            .unwrap_err();
        assert_eq!(err.error_code(), 3);
        // validate_only leaves the stored config alone.
        incremental_alter_configs(&s, "t", &[op("segment.ms", Set, Some("1"))], &d, true)
            .await
            .unwrap();
        assert_eq!(
            load_topic(&s, "t").await.unwrap().configs["segment.ms"],
            "5000"
        );
    });
}

#[test]
fn cluster_id_is_created_once_and_kept() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let id = ensure_cluster_id(&s, &mut rng()).await.unwrap();
        assert_eq!(id.len(), 22);
        let mut other = StdRng::seed_from_u64(99);
        assert_eq!(ensure_cluster_id(&s, &mut other).await.unwrap(), id);
        let (data, _) = s.get("/cluster/id").await.unwrap();
        assert_eq!(
            data,
            format!(r#"{{"version":"1","id":"{id}"}}"#).into_bytes()
        );
    });
}

#[test]
fn broker_registration_is_ephemeral_and_listed() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        register_broker(&s, BrokerId(10), "h", 9092, 5)
            .await
            .unwrap();
        register_broker(&s, BrokerId(2), "h", 9093, 5)
            .await
            .unwrap();
        assert_eq!(
            live_brokers(&s).await.unwrap(),
            vec![BrokerId(2), BrokerId(10)]
        );
        let err = register_broker(&s, BrokerId(2), "h", 9093, 5)
            .await
            .unwrap_err();
        assert!(matches!(err, AdminError::Store(StoreError::NodeExists(_))));
        let stat = s.exists("/brokers/ids/2").await.unwrap().unwrap();
        assert_eq!(stat.ephemeral_owner, s.session_id());
        s.close_session().unwrap();
        assert!(live_brokers(&s).await.unwrap().is_empty());
    });
}

#[test]
fn alter_configs_replaces_all_overrides() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let mut t = new_topic("t", 1, 1);
        t.configs.insert("retention.ms".into(), "1000".into());
        create(&s, &t, &[BrokerId(1)]).await.unwrap();
        let d = defaults();
        let next = BTreeMap::from([("segment.ms".to_string(), "60000".to_string())]);
        alter_configs(&s, "t", &next, &d, false).await.unwrap();
        assert_eq!(load_topic(&s, "t").await.unwrap().configs, next);
        let bad = BTreeMap::from([("segment.ms".to_string(), "0".to_string())]);
        let err = alter_configs(&s, "t", &bad, &d, false).await.unwrap_err();
        assert_eq!(err.error_code(), 40);
        assert_eq!(load_topic(&s, "t").await.unwrap().configs, next);
        let err = alter_configs(&s, "nope", &next, &d, false)
            .await
            .unwrap_err();
        assert_eq!(err.error_code(), 3);
    });
}
