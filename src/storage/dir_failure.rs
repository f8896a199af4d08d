//! `[io]` Failed log dirs, reported from any shard (Kafka's
//! `LogDirFailureChannel`): a log that fails a write or an fsync names its
//! dir here; the control shard takes the reports and takes the dirs
//! offline (`boot::log_dirs`, `log_dir::LogDirs`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Log dirs whose logs failed, reported from any shard, not yet taken by
/// the control shard (Kafka's `LogDirFailureChannel` queue).
static FAILED_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A log in `partition_dir` failed a write or an fsync and is poisoned:
/// its log dir is to go offline (Kafka's
/// `LogDirFailureChannel.maybeAddOfflineLogDir`).
pub fn report_failure(partition_dir: &Path) {
    let Some(dir) = partition_dir.parent() else {
        return;
    };
    let mut failed = FAILED_DIRS.lock().unwrap_or_else(|e| e.into_inner());
    if !failed.iter().any(|d| d == dir) {
        failed.push(dir.to_path_buf());
    }
}

/// The dirs reported since the last call.
pub fn take_failures() -> Vec<PathBuf> {
    std::mem::take(&mut *FAILED_DIRS.lock().unwrap_or_else(|e| e.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_log_dir_of_the_partition_once() {
        let _ = take_failures();
        report_failure(Path::new("/data/x/orders-0"));
        report_failure(Path::new("/data/x/orders-1"));
        report_failure(Path::new("/data/y/orders-2"));
        // Other tests in this process may poison logs of their own.
        let ours = |v: Vec<PathBuf>| -> Vec<PathBuf> {
            v.into_iter().filter(|d| d.starts_with("/data")).collect()
        };
        assert_eq!(
            ours(take_failures()),
            vec![PathBuf::from("/data/x"), PathBuf::from("/data/y")]
        );
        assert!(ours(take_failures()).is_empty());
    }
}
