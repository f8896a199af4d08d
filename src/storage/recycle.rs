//! `[pure]` A partition's pool of retired segment files, reused for new
//! segments (the directory listing and renames are the callers'). RocksDB's `recycle_log_file_num`
//! and PostgreSQL's WAL recycling do the same for their logs.
//!
//! Why: overwriting blocks a file already owns is much cheaper than
//! writing into fresh ones on the disks this runs on. Measured on the
//! project's VMs (ext4 on virtio, `discard`), fio O_DIRECT 1 MiB sequential
//! writes reached 2.75 GB/s over an existing file and 1.45–1.67 GB/s into a
//! new one (2026-11-30, perf/RESULTS.md): a fresh file's blocks are
//! unwritten extents to convert, and the host allocates what the guest
//! trimmed. A log that rolls and deletes at the same rate (every
//! long-running topic with retention) can write into the files retention
//! frees instead of freeing them and allocating new ones.
//!
//! Safety of the stale bytes: a recycled file still holds its old batches
//! past the new segment's end until they are overwritten. A pool file is
//! named after the next offset of the segment it held, and it is only
//! reused for a segment whose base offset is at or past that offset, so
//! every stale batch in it has a base offset below the new segment's base
//! offset. Recovery after a crash accepts a batch only if its base offset
//! is at or past the offset expected next (`recovery::scan`), so it stops
//! at the first stale batch (as at any torn tail), and cuts the file there.
//! Only segments retention or DeleteRecords dropped (entirely below the log
//! start offset) enter the pool; truncation, whose offsets will be written
//! again, deletes its segments, and a log that restarts below the pool's
//! offsets ([`RecyclePool::take`] refuses those files) frees them.
//! Clean closes cut every segment file to its logical end, as before.

use std::path::{Path, PathBuf};

/// File name suffix of a pooled file: `<next offset, 20 digits>.recycle`.
pub const RECYCLE_SUFFIX: &str = ".recycle";

/// Pooled files per partition. A log in steady state deletes one segment
/// per roll, so one file is usually waiting; the second absorbs a
/// retention pass that deletes two segments at once. Pooled files take
/// disk space beyond `retention.bytes`: at most this many segments.
pub const POOL_MAX: usize = 2;

/// The pool of one partition directory.
#[derive(Debug, Default)]
pub struct RecyclePool {
    /// `(next offset of the segment the file held, path)`.
    files: Vec<(i64, PathBuf)>,
}

/// Whether a file that held offsets below `pooled_next` may hold the
/// segment starting at `base` (`[pure]`): all its stale batches must lie
/// below `base`, which recovery's offset check then rejects.
pub fn reusable_for(pooled_next: i64, base: i64) -> bool {
    pooled_next <= base
}

/// `dir/<next_offset>.recycle`.
pub fn pool_path(dir: &Path, next_offset: i64) -> PathBuf {
    dir.join(format!("{next_offset:020}{RECYCLE_SUFFIX}"))
}

/// The next offset a pool file name carries, if it is one.
pub fn parse_pool_name(name: &str) -> Option<i64> {
    let stem = name.strip_suffix(RECYCLE_SUFFIX)?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

impl RecyclePool {
    /// The pool files found in `names` (a directory listing): the newest
    /// [`POOL_MAX`] are kept; returns the pool and the names to remove.
    pub fn from_names(names: &[String]) -> (RecyclePool, Vec<String>) {
        let mut found: Vec<(i64, &String)> = names
            .iter()
            .filter(|n| n.ends_with(RECYCLE_SUFFIX))
            .map(|n| (parse_pool_name(n).unwrap_or(-1), n))
            .collect();
        found.sort_unstable_by_key(|f| std::cmp::Reverse(f.0));
        let mut pool = RecyclePool::default();
        let mut remove = Vec::new();
        for (next, name) in found {
            if next >= 0 && pool.files.len() < POOL_MAX {
                pool.files.push((next, PathBuf::from(name)));
            } else {
                remove.push(name.clone());
            }
        }
        (pool, remove)
    }

    /// Makes the pool's paths absolute under `dir`.
    pub fn within(mut self, dir: &Path) -> RecyclePool {
        for (_, p) in &mut self.files {
            *p = dir.join(&*p);
        }
        self
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
    pub fn has_room(&self) -> bool {
        self.files.len() < POOL_MAX
    }

    /// Records a file just renamed into the pool.
    pub fn add(&mut self, next_offset: i64, path: PathBuf) {
        self.files.push((next_offset, path));
    }

    /// A file for the segment starting at `base`: the oldest one
    /// [`reusable_for`] it.
    pub fn take(&mut self, base: i64) -> Option<PathBuf> {
        let i = self
            .files
            .iter()
            .enumerate()
            .filter(|(_, (next, _))| reusable_for(*next, base))
            .min_by_key(|(_, (next, _))| *next)
            .map(|(i, _)| i)?;
        Some(self.files.swap_remove(i).1)
    }

    /// Every pooled file, leaving the pool empty (the log is truncated
    /// fully, or deleted).
    pub fn drain(&mut self) -> Vec<PathBuf> {
        self.files.drain(..).map(|(_, p)| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_reusable_only_past_every_offset_it_held() {
        assert!(reusable_for(100, 100));
        assert!(reusable_for(100, 5000));
        assert!(!reusable_for(100, 99));
    }

    #[test]
    fn pool_names_round_trip_and_strangers_are_refused() {
        let p = pool_path(Path::new("/d"), 1234);
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, "00000000000000001234.recycle");
        assert_eq!(parse_pool_name(name), Some(1234));
        assert_eq!(parse_pool_name("1234.recycle"), None);
        assert_eq!(parse_pool_name("0000000000000000123x.recycle"), None);
        assert_eq!(parse_pool_name("00000000000000001234.log"), None);
    }

    #[test]
    fn take_skips_files_holding_offsets_at_or_past_the_new_base() {
        let mut pool = RecyclePool::default();
        pool.add(500, PathBuf::from("a"));
        pool.add(300, PathBuf::from("b"));
        assert_eq!(pool.take(200), None);
        assert_eq!(pool.take(400), Some(PathBuf::from("b")));
        assert_eq!(pool.take(400), None);
        assert_eq!(pool.take(500), Some(PathBuf::from("a")));
        assert!(pool.is_empty());
    }

    #[test]
    fn a_restart_keeps_the_newest_files_up_to_the_limit() {
        let names: Vec<String> = [
            "00000000000000000100.recycle",
            "00000000000000000300.recycle",
            "junk.recycle",
            "00000000000000000200.recycle",
            "00000000000000000300.log",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (mut pool, mut remove) = RecyclePool::from_names(&names);
        remove.sort();
        assert_eq!(pool.len(), POOL_MAX);
        assert_eq!(
            remove,
            vec![
                "00000000000000000100.recycle".to_string(),
                "junk.recycle".to_string()
            ]
        );
        let mut kept = pool.drain();
        kept.sort();
        assert_eq!(
            kept,
            vec![
                PathBuf::from("00000000000000000200.recycle"),
                PathBuf::from("00000000000000000300.recycle")
            ]
        );
    }
}
