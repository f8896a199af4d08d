//! Cluster-test helpers: read ZooKeeper the way the brokers do (a real
//! session on a glommio executor), and wait for a condition by polling.

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
