//! The embedded metadata store on a real glommio executor (the control
//! shard's runtime): topics, configs, topic ids and the cluster id survive a
//! reopen of the log dir; ephemeral broker registrations do not.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use common::executor::run;
use rand::rngs::StdRng;
use rand::SeedableRng;
use shardlog::config::topic::BrokerTopicDefaults;
use shardlog::controller::topic_admin::{self, AlterConfigOp, AlterConfigOpType, NewTopic};
use shardlog::controller::{brokers, topic_configs};
use shardlog::io::clock::SystemClock;
use shardlog::types::BrokerId;
use shardlog::zk::embedded::EmbeddedStore;
use shardlog::zk::store::MetadataStore;

struct Before {
    topics: Vec<topic_admin::TopicInfo>,
    cluster_id: String,
}

async fn first_run(dir: &Path) -> Before {
    let store = EmbeddedStore::open(dir, Rc::new(SystemClock::new())).expect("open");
    let mut rng = StdRng::seed_from_u64(1);
    let defaults = BrokerTopicDefaults::default();
    brokers::create_top_level_paths(&store).await.unwrap();
    brokers::register_broker(&store, BrokerId(1), "localhost", 9092, 1_700_000_000_000)
        .await
        .unwrap();
    let cluster_id = brokers::ensure_cluster_id(&store, &mut rng).await.unwrap();
    let live = brokers::live_brokers_with_racks(&store).await.unwrap();
    assert_eq!(live, vec![(BrokerId(1), None)]);
    for (name, partitions) in [("orders", 3), ("payments", 1)] {
        let topic = NewTopic {
            name: name.to_string(),
            num_partitions: partitions,
            replication_factor: 1,
            replica_assignment: BTreeMap::new(),
            configs: BTreeMap::from([("retention.ms".to_string(), "1000".to_string())]),
        };
        topic_admin::create_topic(&store, &topic, &live, &defaults, false, true, &mut rng)
            .await
            .unwrap();
    }
    topic_admin::create_partitions(&store, "orders", 4, None, &live, false, true)
        .await
        .unwrap();
    let set = AlterConfigOp {
        name: "cleanup.policy".to_string(),
        op: AlterConfigOpType::Set,
        value: Some("compact".to_string()),
    };
    topic_configs::incremental_alter_configs(&store, "payments", &[set], &defaults, false)
        .await
        .unwrap();
    Before {
        topics: topic_admin::load_topics(&store).await.unwrap(),
        cluster_id,
    }
}

#[test]
fn topics_configs_and_ids_survive_reopen_but_ephemeral_nodes_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let before = run({
        let path = path.clone();
        move || async move { first_run(&path).await }
    });
    assert_eq!(before.topics.len(), 2);
    assert_eq!(before.topics[0].partitions.len(), 4);
    assert_eq!(before.topics[1].configs["cleanup.policy"], "compact");
    assert!(path.join("__embedded_metadata/znodes.json").exists());

    run(move || async move {
        let store = EmbeddedStore::open(&path, Rc::new(SystemClock::new())).expect("reopen");
        let after = topic_admin::load_topics(&store).await.unwrap();
        assert_eq!(
            after, before.topics,
            "topics, topic ids, state and configs unchanged"
        );
        let mut other_rng = StdRng::seed_from_u64(2);
        let cluster_id = brokers::ensure_cluster_id(&store, &mut other_rng)
            .await
            .unwrap();
        assert_eq!(cluster_id, before.cluster_id);
        assert!(brokers::live_brokers(&store).await.unwrap().is_empty());
        assert!(store.exists("/brokers/ids/1").await.unwrap().is_none());
        // The store keeps working after reopen.
        topic_admin::delete_topic(&store, "orders").await.unwrap();
        let names: Vec<String> = topic_admin::load_topics(&store)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, vec!["payments"]);
    });
}
