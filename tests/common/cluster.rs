//! Cluster-test helpers: read ZooKeeper the way the brokers do (a real
//! session on a glommio executor), the partition state and assignment
//! znodes, and wait for a condition by polling.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use shardlog::zk::client::ZkStore;
use shardlog::zk::store::{MetadataStore, Stat};

/// Run `f` against ZooKeeper on a glommio executor (as the broker does)
/// and return its result.
pub fn with_zk<T, F, Fut>(zk: &str, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce(ZkStore) -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
{
    let zk = zk.to_string();
    glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .io_memory(512 << 10)
        .spawn(move || async move {
            let store = ZkStore::connect(&zk, 10_000, 10_000)
                .await
                .expect("connect");
            let out = f(store.clone()).await;
            store.close().await;
            out
        })
        .expect("executor")
        .join()
        .expect("executor thread")
}

/// Each path's data and stat (None when absent).
pub fn read(zk: &str, paths: &[&str]) -> BTreeMap<String, Option<(String, Stat)>> {
    let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    with_zk(zk, move |s| async move {
        let mut out = BTreeMap::new();
        for p in paths {
            let got = s
                .get(&p)
                .await
                .ok()
                .map(|(d, st)| (String::from_utf8_lossy(&d).to_string(), st));
            out.insert(p, got);
        }
        out
    })
}

pub fn children(zk: &str, path: &str) -> Vec<String> {
    let path = path.to_string();
    with_zk(zk, move |s| async move {
        s.children(&path).await.unwrap_or_default()
    })
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Poll `cond` every 50 ms until it yields, or panic after `secs`.
pub fn wait_for<T>(secs: u64, what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One partition's state znode.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    pub controller_epoch: i32,
    pub version: i32,
}

/// Every partition's state znode of `topic` (absent ones left out).
pub fn states(zk: &str, topic: &str, partitions: i32) -> BTreeMap<i32, State> {
    let paths: Vec<String> = (0..partitions)
        .map(|p| format!("/brokers/topics/{topic}/partitions/{p}/state"))
        .collect();
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let got = read(zk, &refs);
    let mut out = BTreeMap::new();
    for (p, path) in paths.iter().enumerate() {
        if let Some((data, stat)) = &got[path] {
            let j = json(data);
            assert_eq!(j["version"], 1, "{path}: {data}");
            out.insert(
                p as i32,
                State {
                    leader: j["leader"].as_i64().unwrap() as i32,
                    leader_epoch: j["leader_epoch"].as_i64().unwrap() as i32,
                    isr: ids(&j["isr"]),
                    controller_epoch: j["controller_epoch"].as_i64().unwrap() as i32,
                    version: stat.version,
                },
            );
        }
    }
    out
}

pub fn ids(v: &serde_json::Value) -> Vec<i32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as i32)
        .collect()
}

/// `/brokers/topics/<t>`'s assignment.
pub fn assignment(zk: &str, topic: &str) -> BTreeMap<i32, Vec<i32>> {
    let path = format!("/brokers/topics/{topic}");
    let r = read(zk, &[&path]);
    let (data, _) = r[&path].clone().expect("topic znode");
    let j = json(&data);
    j["partitions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, rs)| (p.parse().unwrap(), ids(rs)))
        .collect()
}
