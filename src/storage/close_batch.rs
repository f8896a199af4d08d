//! `[io]` Closing many partition logs with three filesystem syncs in all
//! instead of several fsyncs each (issue 19: a shutdown closing 1,000 logs
//! spent four fsyncs apiece on the shard, 3.4–6.1 s in all).
//!
//! A log closed for a batch ([`PartitionLog::close_deferred`](super::partition_log::PartitionLog::close_deferred))
//! writes out its data, trims its active segment, writes its indexes and the
//! new versions of its checkpoint files under temporary names, none of it
//! fsynced. [`commit`] then runs `syncfs(2)` on the log dir's filesystem
//! (everything written so far is durable), renames the temporary files into
//! place, `syncfs`, creates each log's clean-shutdown marker, `syncfs`. A
//! marker therefore exists after a crash only if every byte and name it
//! vouches for was durable before it was created: the guarantee the
//! one-log close gives with its fsyncs. Kafka, too, closes all logs first
//! and writes the clean-shutdown file last, once per log dir
//! (`LogManager.shutdown`, 3.9).
//!
//! `syncfs` also writes back other files' dirty pages on the same
//! filesystem; a batch is only worth it for many logs at once.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::partition_log::CLEAN_SHUTDOWN_MARKER;

/// What a log closed for a batch still needs: renames of its temporary
/// files and its clean-shutdown marker, after the batch's first sync.
#[derive(Debug)]
pub struct DeferredClose {
    dir: PathBuf,
    renames: Vec<(PathBuf, PathBuf)>,
}

impl DeferredClose {
    pub(crate) fn new(dir: PathBuf) -> Self {
        DeferredClose {
            dir,
            renames: Vec::new(),
        }
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `tmp` was written (unsynced); the commit renames it to `to`.
    pub fn rename_on_commit(&mut self, tmp: PathBuf, to: PathBuf) {
        self.renames.push((tmp, to));
    }
}

/// A path's `.tmp` sibling, the name a batched close writes it under.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

/// Make every close of `closes` durable and mark each log cleanly shut
/// down (see the module header). Runs on glommio's blocking pool. On an
/// error no further marker is written: the logs without one are recovered
/// at the next open, as after a crash.
pub async fn commit(log_dir: &Path, closes: Vec<DeferredClose>) -> std::io::Result<()> {
    if closes.is_empty() {
        return Ok(());
    }
    let log_dir = log_dir.to_path_buf();
    glommio::executor()
        .spawn_blocking(move || commit_blocking(&log_dir, &closes))
        .await
}

fn commit_blocking(log_dir: &Path, closes: &[DeferredClose]) -> std::io::Result<()> {
    let fs = File::open(log_dir)?;
    nix::unistd::syncfs(&fs)?;
    for c in closes {
        for (tmp, to) in &c.renames {
            std::fs::rename(tmp, to)?;
        }
    }
    nix::unistd::syncfs(&fs)?;
    for c in closes {
        File::create(c.dir.join(CLEAN_SHUTDOWN_MARKER))?;
    }
    nix::unistd::syncfs(&fs)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_renames_then_marks_every_log() {
        let root = tempfile::tempdir().unwrap();
        let mut closes = Vec::new();
        for name in ["t-0", "t-1"] {
            let dir = root.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            let to = dir.join("leader-epoch-checkpoint");
            let tmp = tmp_path(&to);
            std::fs::write(&tmp, "0\n0\n").unwrap();
            let mut c = DeferredClose::new(dir);
            c.rename_on_commit(tmp, to);
            closes.push(c);
        }
        commit_blocking(root.path(), &closes).unwrap();
        for name in ["t-0", "t-1"] {
            let dir = root.path().join(name);
            assert_eq!(
                std::fs::read_to_string(dir.join("leader-epoch-checkpoint")).unwrap(),
                "0\n0\n"
            );
            assert!(!dir.join("leader-epoch-checkpoint.tmp").exists());
            assert!(dir.join(CLEAN_SHUTDOWN_MARKER).exists());
        }
    }

    #[test]
    fn a_failed_rename_writes_no_marker() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("t-0");
        std::fs::create_dir(&dir).unwrap();
        let mut c = DeferredClose::new(dir.clone());
        c.rename_on_commit(dir.join("missing.tmp"), dir.join("missing"));
        assert!(commit_blocking(root.path(), &[c]).is_err());
        assert!(!dir.join(CLEAN_SHUTDOWN_MARKER).exists());
    }
}
