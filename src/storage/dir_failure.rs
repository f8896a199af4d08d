//! `[io]` Failed log dirs, reported from any shard (Kafka's
//! `LogDirFailureChannel`): a log that fails a write or an fsync names its
//! dir on the channel; the control shard takes the reports and takes the
//! dirs offline (`boot::log_dirs`, `log_dir::LogDirs`).
//!
//! One channel per broker, created with its [`super::log_dir::LogDirs`] at
//! boot; each data shard holds a handle in its
//! [`super::shard_storage::ShardStorage`], the control shard is the reader.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Log dirs whose logs failed, reported from any shard, not yet taken by
/// the control shard (Kafka's `LogDirFailureChannel` queue). Cloning gives
/// another handle on the same channel.
#[derive(Debug, Clone, Default)]
pub struct DirFailureChannel {
    failed: Arc<Mutex<Vec<PathBuf>>>,
}

impl DirFailureChannel {
    pub fn new() -> Self {
        Self::default()
    }

    /// A log in `partition_dir` failed a write or an fsync and is
    /// poisoned: its log dir is to go offline (Kafka's
    /// `LogDirFailureChannel.maybeAddOfflineLogDir`).
    pub fn report(&self, partition_dir: &Path) {
        let Some(dir) = partition_dir.parent() else {
            return;
        };
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if !failed.iter().any(|d| d == dir) {
            failed.push(dir.to_path_buf());
        }
    }

    /// The dirs reported since the last call.
    pub fn take(&self) -> Vec<PathBuf> {
        std::mem::take(&mut *self.failed.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_log_dir_of_the_partition_once() {
        let channel = DirFailureChannel::new();
        let reporter = channel.clone();
        reporter.report(Path::new("/data/x/orders-0"));
        reporter.report(Path::new("/data/x/orders-1"));
        reporter.report(Path::new("/data/y/orders-2"));
        assert_eq!(
            channel.take(),
            vec![PathBuf::from("/data/x"), PathBuf::from("/data/y")]
        );
        assert!(channel.take().is_empty());
    }
}
