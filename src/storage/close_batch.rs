//! `[io]` Closing many partition logs with three filesystem syncs in all
//! instead of several fsyncs each (a shutdown closing 1,000 logs
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
//! filesystem (the other logs' unflushed appends): a batch of fewer than
//! [`SYNCFS_MIN_LOGS`] logs fsyncs the files it wrote one by one instead,
//! in the same order (files, renames, directory, marker, directory).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::partition_log::CLEAN_SHUTDOWN_MARKER;

/// Below this many logs a batch fsyncs file by file (see the header).
pub const SYNCFS_MIN_LOGS: usize = 32;

/// What a log closed for a batch still needs: renames of its temporary
/// files and its clean-shutdown marker, after the batch's first sync.
#[derive(Debug)]
pub struct DeferredClose {
    dir: PathBuf,
    renames: Vec<(PathBuf, PathBuf)>,
    /// Files written (not synced) under their final names.
    written: Vec<PathBuf>,
}

impl DeferredClose {
    pub(crate) fn new(dir: PathBuf) -> Self {
        DeferredClose {
            dir,
            renames: Vec::new(),
            written: Vec::new(),
        }
    }

    /// `path` was written, not synced.
    pub fn wrote(&mut self, path: PathBuf) {
        self.written.push(path);
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
    if closes.len() < SYNCFS_MIN_LOGS {
        for c in closes {
            commit_one(c)?;
        }
        return Ok(());
    }
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

/// One log's commit with fsyncs of its own files (a small batch).
fn commit_one(c: &DeferredClose) -> std::io::Result<()> {
    for f in c.written.iter().chain(c.renames.iter().map(|(tmp, _)| tmp)) {
        match File::open(f) {
            Ok(f) => f.sync_all()?,
            // Written, then removed (an empty segment's index files).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    for (tmp, to) in &c.renames {
        std::fs::rename(tmp, to)?;
    }
    let dir = File::open(&c.dir)?;
    dir.sync_all()?;
    File::create(c.dir.join(CLEAN_SHUTDOWN_MARKER))?;
    dir.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_renames_then_marks_every_log() {
        commit_renames_then_marks(2);
        commit_renames_then_marks(SYNCFS_MIN_LOGS);
    }

    fn commit_renames_then_marks(logs: usize) {
        let root = tempfile::tempdir().unwrap();
        let mut closes = Vec::new();
        let names: Vec<String> = (0..logs).map(|i| format!("t-{i}")).collect();
        for name in &names {
            let dir = root.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            let to = dir.join("leader-epoch-checkpoint");
            let tmp = tmp_path(&to);
            std::fs::write(&tmp, "0\n0\n").unwrap();
            let log = dir.join("00000000000000000000.log");
            std::fs::write(&log, "").unwrap();
            let mut c = DeferredClose::new(dir);
            c.rename_on_commit(tmp, to);
            c.wrote(log);
            closes.push(c);
        }
        commit_blocking(root.path(), &closes).unwrap();
        for name in &names {
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
