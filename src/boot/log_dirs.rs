//! `[drv]` The broker's log dirs (`log.dirs`): created at start, each with
//! the broker's `meta.properties`; and, while it runs, the failures of
//! their logs turned into offline dirs (Kafka's `LogDirFailureChannel` and
//! `ReplicaManager.handleLogDirFailure`, 3.9): the dir is marked offline
//! for every shard (each takes its partitions there offline at its next
//! housekeeping round), once they all did the controller is told through
//! `/log_dir_event_notification` in ZooKeeper mode, and when no dir is
//! left the broker halts, as Kafka's `LogManager.handleLogDirFailure` does.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::config::ServerConfig;
use crate::controller::identity::StoredMeta;
use crate::storage::log_dir::LogDirs;
use crate::zk::any::AnyStore;
use crate::zk::log_dir_event::LogDirEventZNode;
use crate::zk::store::{create_recursive, CreateMode};

/// How often the control shard takes the reported failures.
const FAILURE_POLL: Duration = Duration::from_millis(100);

/// How often the controller's notification looks whether the shards took
/// a failed dir's partitions offline (each does at its next housekeeping
/// round, every 100 ms), and how many times before it goes anyway (10 s).
const OFFLINE_APPLY_POLL: Duration = Duration::from_millis(10);
const OFFLINE_APPLY_POLLS: u32 = 1_000;

/// Every configured dir, created if missing, in `log.dirs` order.
pub fn open(config: &ServerConfig) -> anyhow::Result<Arc<LogDirs>> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for d in config.effective_log_dirs() {
        let d = PathBuf::from(d);
        if dirs.contains(&d) {
            bail!("log.dirs names {} twice", d.display());
        }
        std::fs::create_dir_all(&d).with_context(|| format!("creating log dir {}", d.display()))?;
        dirs.push(d);
    }
    finish_log_dir_moves(&dirs);
    Ok(Arc::new(LogDirs::new(dirs)))
}

/// Before any log opens: complete the swap of a log-dir move a crash
/// interrupted, and remove replaced logs (`-delete` folders), as Kafka's
/// `LogManager.loadLogs` does with them (`replication::log_dir_move`).
/// A dir that cannot be listed is left to the log opens to report.
fn finish_log_dir_moves(dirs: &[PathBuf]) {
    use crate::replication::log_dir_move::{startup_actions, StartupAction};
    let mut entries = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        let Ok(list) = std::fs::read_dir(d) else {
            continue;
        };
        for e in list.flatten() {
            entries.push((i, e.file_name().to_string_lossy().into_owned()));
        }
    }
    for action in startup_actions(&entries) {
        let done = match &action {
            StartupAction::CompleteSwap { dir, from, to } => {
                tracing::info!(dir = %dirs[*dir].display(), from, to, "completing an interrupted log dir move");
                std::fs::rename(dirs[*dir].join(from), dirs[*dir].join(to))
                    .and_then(|()| std::fs::File::open(&dirs[*dir])?.sync_all())
            }
            StartupAction::Remove { dir, name } => std::fs::remove_dir_all(dirs[*dir].join(name)),
        };
        if let Err(e) = done {
            tracing::warn!(?action, error = %e, "log dir move clean-up at start failed");
        }
    }
}

/// Embedded mode: the identity read from (or written to) the first dir is
/// written to every other dir that has none; a dir naming another broker
/// or cluster is refused ([`agreed_meta`]; Kafka's
/// InconsistentBrokerIdException / InconsistentClusterIdException).
pub fn spread_meta(dirs: &LogDirs, broker_id: i32, cluster_id: &str) -> anyhow::Result<()> {
    agreed_meta(dirs.all())?;
    for d in dirs.all().iter().skip(1) {
        if read_meta(d).broker_id.is_none() {
            write_meta(d, broker_id, cluster_id)?;
        }
    }
    Ok(())
}

/// The control shard's watch over failed log dirs, until `stop`.
pub fn spawn_failure_watch(
    dirs: Arc<LogDirs>,
    zk: Option<AnyStore>,
    broker_id: i32,
    stop: Arc<AtomicBool>,
) {
    glommio::spawn_local(async move {
        while !stop.load(Ordering::Relaxed) {
            glommio::timer::sleep(FAILURE_POLL).await;
            for failed in dirs.failures().take() {
                let Some(i) = dirs.index_of(&failed) else {
                    continue;
                };
                if !dirs.mark_offline(i) {
                    continue;
                }
                tracing::error!("Stopping serving logs in dir {}", failed.display());
                if dirs.all_offline() {
                    let all: Vec<String> =
                        dirs.all().iter().map(|d| d.display().to_string()).collect();
                    // Kafka's LogManager.handleLogDirFailure: Exit.halt(1).
                    tracing::error!(
                        "Shutdown broker because all log dirs in {} have failed",
                        all.join(", ")
                    );
                    std::process::exit(1);
                }
                if let Some(store) = &zk {
                    // Kafka's order in `handleLogDirFailure`: the dir's
                    // partitions offline on every shard (their fetchers
                    // gone), then the controller told.
                    let changes = dirs.changes();
                    let mut polls = 0u32;
                    while !dirs.applied_by_all(changes) {
                        polls += 1;
                        if polls > OFFLINE_APPLY_POLLS {
                            tracing::warn!(
                                "not every shard took the failed dir's partitions offline in {:?}; telling the controller anyway",
                                OFFLINE_APPLY_POLL * OFFLINE_APPLY_POLLS
                            );
                            break;
                        }
                        glommio::timer::sleep(OFFLINE_APPLY_POLL).await;
                    }
                    notify_controller(store, broker_id).await;
                }
            }
        }
    })
    .detach();
}

/// Kafka's `KafkaZkClient.propagateLogDirEvent`.
async fn notify_controller(store: &AnyStore, broker_id: i32) {
    let event = LogDirEventZNode::failure(broker_id);
    match create_recursive(
        store,
        &LogDirEventZNode::sequential_path(),
        &event.encode(),
        CreateMode::PersistentSequential,
    )
    .await
    {
        Ok(path) => tracing::warn!(%path, "told the controller a log dir failed"),
        Err(e) => tracing::error!(error = %e, "cannot tell the controller a log dir failed"),
    }
}

/// What `<log_dir>/meta.properties` holds (nothing when it is absent).
pub(super) fn read_meta(log_dir: &Path) -> crate::controller::identity::StoredMeta {
    let Ok(text) = std::fs::read_to_string(log_dir.join("meta.properties")) else {
        return Default::default();
    };
    let pairs = crate::config::parse_properties(&text).unwrap_or_default();
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    crate::controller::identity::StoredMeta {
        broker_id: get("broker.id").and_then(|v| v.parse().ok()),
        cluster_id: get("cluster.id"),
    }
}

/// Writes `<log_dir>/meta.properties` (Kafka's v0 format).
pub(super) fn write_meta(log_dir: &Path, broker_id: i32, cluster_id: &str) -> anyhow::Result<()> {
    let path = log_dir.join("meta.properties");
    let text = format!("#shardlog\nversion=0\nbroker.id={broker_id}\ncluster.id={cluster_id}\n");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// What every log dir's `meta.properties` agrees on; dirs without one say
/// nothing. Two dirs that disagree refuse the start (Kafka's
/// `BrokerMetadataCheckpoint` checks: "Invalid value ... in meta.properties").
pub(super) fn agreed_meta(dirs: &[PathBuf]) -> anyhow::Result<StoredMeta> {
    let mut agreed = StoredMeta::default();
    for dir in dirs {
        let m = read_meta(dir);
        if let (Some(a), Some(b)) = (agreed.broker_id, m.broker_id) {
            if a != b {
                anyhow::bail!(
                    "meta.properties in {} has broker.id={b}, another log dir has {a}",
                    dir.display()
                );
            }
        }
        if let (Some(a), Some(b)) = (&agreed.cluster_id, &m.cluster_id) {
            if a != b {
                anyhow::bail!(
                    "meta.properties in {} has cluster.id={b}, another log dir has {a}",
                    dir.display()
                );
            }
        }
        agreed.broker_id = agreed.broker_id.or(m.broker_id);
        agreed.cluster_id = agreed.cluster_id.or(m.cluster_id);
    }
    Ok(agreed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_log_dirs_meta_properties_must_agree() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        assert_eq!(agreed_meta(&dirs).unwrap(), StoredMeta::default());
        std::fs::write(
            a.path().join("meta.properties"),
            "version=0\nbroker.id=3\ncluster.id=abc\n",
        )
        .unwrap();
        let one = agreed_meta(&dirs).unwrap();
        assert_eq!(
            (one.broker_id, one.cluster_id.as_deref()),
            (Some(3), Some("abc"))
        );
        std::fs::write(
            b.path().join("meta.properties"),
            "version=0\nbroker.id=4\ncluster.id=abc\n",
        )
        .unwrap();
        let err = agreed_meta(&dirs).unwrap_err().to_string();
        assert!(err.contains("broker.id=4"), "{err}");
    }
}
