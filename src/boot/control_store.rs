//! `[drv]` The control shard's metadata store: the log dir's I/O probe,
//! then the embedded store or the ZooKeeper session, and the admin
//! manager over it.

use std::rc::Rc;

use super::startup::Phase;
use super::{zk, ShardSetup};
use crate::controller::AdminManager;
use crate::io::clock::Clock;

/// The control shard's metadata store and admin manager (with the
/// ZooKeeper session, in ZooKeeper mode), after the log dir's probe.
pub(super) async fn open(
    setup: &ShardSetup,
    clock: &Rc<dyn Clock>,
    control_metrics: &mut crate::metrics::control::ControlMetrics,
) -> (
    Result<AdminManager, String>,
    Option<crate::zk::any::AnyStore>,
) {
    let me = setup.n_shards;
    // Every executor primes the probe before it could open a DMA file.
    setup.phases.set(me, Phase::Probing);
    let probed = crate::io::dma::prime_iopoll_probe(&setup.log_dir).await;
    setup.phases.set(me, Phase::OpeningStore);
    if let Err(e) = probed {
        return (
            Err(format!("log dir {}: {e}", setup.log_dir.display())),
            None,
        );
    }
    let Some(connect) = &setup.config.zookeeper_connect else {
        let admin = AdminManager::open_embedded(
            &setup.log_dir,
            setup.config.clone(),
            setup.snapshot.clone(),
            clock.clone(),
        )
        .await
        .map_err(|e| format!("metadata store: {e}"));
        return (admin, None);
    };
    match zk::connect(&setup.config, connect).await {
        Ok(store) => {
            let stats = Rc::new(crate::metrics::control::ZkClientStats::default());
            control_metrics.zk = Some(stats.clone());
            let store = store.with_metrics(stats, clock.clone());
            let store = crate::zk::any::AnyStore::zookeeper(store);
            let admin = AdminManager::open_zookeeper(
                store.clone(),
                setup.config.clone(),
                setup.snapshot.clone(),
            )
            .await
            .map_err(|e| format!("metadata store: {e}"));
            (admin, Some(store))
        }
        Err(e) => (Err(e), None),
    }
}
