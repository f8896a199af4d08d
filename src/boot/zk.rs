//! `[drv]` Start-up in ZooKeeper mode (`zookeeper.connect` set; Kafka 3.9
//! `KafkaServer.startup`): before any shard runs, the broker's identity —
//! `/cluster/id` against `meta.properties`, the broker id (generated from
//! `/brokers/seqid` when `broker.id=-1`) — on a short-lived session. The
//! control shard's session, the one the broker lives on, is
//! `shard::control::zk_broker`'s.

use anyhow::anyhow;

use crate::config::ServerConfig;
use crate::controller::identity;
use crate::storage::log_dir::LogDirs;
use crate::zk::client::{ZkOptions, ZkStore};

/// The session and connection timeouts `zookeeper.*` configure (the
/// connection timeout defaults to the session timeout, as in Kafka).
fn timeouts(config: &ServerConfig) -> (u64, u64) {
    let session = u64::try_from(config.zookeeper_session_timeout_ms).unwrap_or(18_000);
    let connection = config
        .zookeeper_connection_timeout_ms
        .and_then(|t| u64::try_from(t).ok())
        .unwrap_or(session);
    (session, connection)
}

/// Connect as `zookeeper.connect` says; the error names the address.
pub async fn connect(config: &ServerConfig, connect: &str) -> Result<ZkStore, String> {
    let (session, connection) = timeouts(config);
    ZkStore::connect_with(ZkOptions {
        connect: connect.to_string(),
        session_timeout_ms: session,
        connection_timeout_ms: connection,
        max_in_flight: u64::try_from(config.zookeeper_max_in_flight_requests.max(1)).unwrap_or(10),
    })
    .await
    .map_err(|e| format!("zookeeper.connect={connect}: {e}"))
}

/// The broker id and cluster id, resolved against ZooKeeper on a session
/// of its own (a glommio executor on the boot thread), and written to
/// `meta.properties` in every log dir.
pub fn resolve_identity(config: &ServerConfig, dirs: &LogDirs) -> anyhow::Result<(i32, String)> {
    let address = config
        .zookeeper_connect
        .clone()
        .ok_or_else(|| anyhow!("zookeeper.connect is not set"))?;
    let stored = super::log_dirs::agreed_meta(dirs.all())?;
    let executor = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .name("zk-identity")
        .make()
        .map_err(|e| anyhow!("starting the identity executor: {e}"))?;
    let resolved: Result<(i32, String), String> = executor.run(async {
        let store = connect(config, &address).await?;
        let mut rng = rand::thread_rng();
        let out = identity::resolve(
            &store,
            &stored,
            config.broker_id,
            config.broker_id_generation_enable,
            config.reserved_broker_max_id,
            &mut rng,
        )
        .await;
        store.close().await;
        out
    });
    let (broker_id, cluster_id) = resolved.map_err(|e| anyhow!(e))?;
    for dir in dirs.all() {
        super::log_dirs::write_meta(dir, broker_id, &cluster_id)?;
    }
    Ok((broker_id, cluster_id))
}
