//! `[io]` A cleaned segment's file names, their swap into a log
//! (`PartitionLog::replace_segments`) and what opening a log does with the
//! ones a crash left (Kafka 3.9 `LogLoader.removeTempFilesAndCollectSwapFiles`
//! and the swap passes of `LogLoader.load`).
//!
//! A clean writes `<base>.log.cleaned` (+ `.index.cleaned`,
//! `.timeindex.cleaned`, `.txnindex.cleaned`, the last always, even
//! empty) and fsyncs them; under the log's lock it renames them to
//! `.swap` (the log last) and fsyncs the directory, deletes the old
//! segments, and renames `.swap` to the final names (the log last). So at
//! open:
//! - `.cleaned` files are an unfinished clean: deleted (the old segments
//!   are all still there);
//! - a `.log.swap` file is a finished clean being swapped in: every other
//!   segment file whose base offset lies in the swap segment's offset range
//!   is deleted (those are the segments it replaces), then the `.swap`
//!   suffix is dropped. Offset and time index `.swap` files are deleted
//!   and those indexes rebuilt by recovery, as Kafka does.
//! - the aborted-transaction index cannot be rebuilt from its segment
//!   alone (a marker's transaction may start segments earlier, and the
//!   producer-state replay at open starts at its snapshot), so unlike
//!   Kafka (whose `LogLoader` deletes it and replays the segment) its
//!   `.txnindex.swap` is kept: with a `.log.swap` beside it, it replaces
//!   the old `<base>.txnindex`; without one, the log's rename to `.swap`
//!   never happened and it goes with the `.cleaned` files. A `.log.swap`
//!   without a `.txnindex.swap` means that rename was already done, so
//!   `<base>.txnindex` is the cleaned one and stays.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::segment::{path_of, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use super::txn_index::TXN_INDEX_SUFFIX;
use super::StorageError;

/// Kafka's `LogFileUtils.CLEANED_FILE_SUFFIX`.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// Kafka's `LogFileUtils.SWAP_FILE_SUFFIX`.
pub const SWAP_SUFFIX: &str = ".swap";
/// A cleaned segment's files; [`paths`] lists them in this order.
const SEGMENT_SUFFIXES: [&str; 4] = [
    LOG_SUFFIX,
    INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
];

fn with_suffix(p: PathBuf, suffix: &str) -> PathBuf {
    let mut s = p.into_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// `<base><segment suffix><extra>` for the log, the offset, time and
/// aborted-transaction indexes, in that order.
pub fn paths(dir: &Path, base: i64, extra: &str) -> Vec<PathBuf> {
    SEGMENT_SUFFIXES
        .iter()
        .map(|s| with_suffix(path_of(dir, base, s), extra))
        .collect()
}

/// Rename `<base>.{txnindex,timeindex,index,log}<from>` to `...<to>`, the
/// log last (see the module doc).
pub fn rename_all(dir: &Path, base: i64, from: &str, to: &str) -> Result<(), StorageError> {
    for s in SEGMENT_SUFFIXES.iter().rev() {
        let p = path_of(dir, base, s);
        std::fs::rename(with_suffix(p.clone(), from), with_suffix(p, to))?;
    }
    Ok(())
}

/// Rename `<base><suffix><extra>` to `<base><suffix>`.
pub fn rename_one(dir: &Path, base: i64, suffix: &str, extra: &str) -> Result<(), StorageError> {
    let p = path_of(dir, base, suffix);
    std::fs::rename(with_suffix(p.clone(), extra), p)?;
    Ok(())
}

/// Remove files, ignoring ones already gone.
pub fn remove_all(files: &[PathBuf]) -> Result<(), StorageError> {
    for f in files {
        match std::fs::remove_file(f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// Last offset + 1 of the batches in `path` (a `.swap` log is complete:
/// it was fsynced before it got the name), walking the batch headers.
fn next_offset_of(path: &Path, base: i64) -> Result<i64, StorageError> {
    let f = File::open(path)?;
    let size = f.metadata()?.len();
    let (mut pos, mut next) = (0u64, base);
    let mut h = [0u8; 27];
    while pos + 27 <= size {
        f.read_exact_at(&mut h, pos)?;
        let mut b8 = [0u8; 8];
        b8.copy_from_slice(&h[..8]);
        let batch_base = i64::from_be_bytes(b8);
        let len = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        let delta = i32::from_be_bytes([h[23], h[24], h[25], h[26]]);
        if len < 49 {
            break;
        }
        next = batch_base + i64::from(delta) + 1;
        pos += 12 + len as u64;
    }
    Ok(next)
}

/// Whether `name` is left by an interrupted clean (what
/// [`complete_or_roll_back`] handles).
pub fn is_leftover(name: &str) -> bool {
    name.ends_with(CLEANED_SUFFIX) || name.ends_with(SWAP_SUFFIX)
}

/// `<base>` of `name` when it is `<base><suffix>`.
fn base_of(name: &str, suffix: &str) -> Option<i64> {
    name.strip_suffix(suffix)?.parse().ok()
}

/// Finish or undo what a crashed clean left in the partition dir `dir`
/// (see the module doc). Returns how many swaps it completed.
pub fn complete_or_roll_back(dir: &Path) -> Result<usize, StorageError> {
    let mut cleaned = Vec::new();
    let mut swaps = Vec::new();
    let mut txn_index_swaps = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        let Some(name) = name else { continue };
        if name.ends_with(CLEANED_SUFFIX) {
            cleaned.push(path);
        } else if let Some(stem) = name.strip_suffix(SWAP_SUFFIX) {
            if let Some(base) = base_of(stem, LOG_SUFFIX) {
                swaps.push(base);
            } else if let Some(base) = base_of(stem, TXN_INDEX_SUFFIX) {
                txn_index_swaps.push((base, path));
            } else {
                // Offset and time index swaps: rebuilt by recovery (Kafka
                // deletes them too).
                cleaned.push(path);
            }
        }
    }
    // An aborted-transaction index swapped without its log: that clean
    // never reached its swap.
    for (base, path) in txn_index_swaps {
        if !swaps.contains(&base) {
            cleaned.push(path);
        }
    }
    remove_all(&cleaned)?;
    swaps.sort_unstable();
    for &base in &swaps {
        complete_swap(dir, base)?;
        tracing::info!(dir = %dir.display(), base, "completed an interrupted log clean swap");
    }
    if !cleaned.is_empty() || !swaps.is_empty() {
        File::open(dir)?.sync_all()?;
    }
    Ok(swaps.len())
}

/// Swap `<base>.log.swap` in: the segments in its offset range go, then
/// its aborted-transaction index and the log take their final names.
fn complete_swap(dir: &Path, base: i64) -> Result<(), StorageError> {
    let swap = with_suffix(path_of(dir, base, LOG_SUFFIX), SWAP_SUFFIX);
    let txn_index = path_of(dir, base, TXN_INDEX_SUFFIX);
    let txn_index_swap = with_suffix(txn_index.clone(), SWAP_SUFFIX);
    // Without its `.swap`, `<base>.txnindex` was already renamed: the
    // cleaned segment's own.
    let txn_index_renamed = !txn_index_swap.exists();
    // An emptied swap segment still replaces the segment at its base.
    let end = next_offset_of(&swap, base)?.max(base + 1);
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        let Some(name) = name else { continue };
        let Some((suffix, seg_base)) = SEGMENT_SUFFIXES
            .iter()
            .find_map(|s| base_of(&name, s).map(|b| (*s, b)))
        else {
            continue;
        };
        let cleaned_own = txn_index_renamed && seg_base == base && suffix == TXN_INDEX_SUFFIX;
        if (base..end).contains(&seg_base) && !cleaned_own {
            remove_all(&[path])?;
        }
    }
    if !txn_index_renamed {
        std::fs::rename(&txn_index_swap, &txn_index)?;
    }
    std::fs::rename(&swap, path_of(dir, base, LOG_SUFFIX))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::build_test_batch;

    fn write(dir: &Path, name: &str, bytes: &[u8]) {
        std::fs::write(dir.join(name), bytes).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn cleaned_files_are_rolled_back() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "00000000000000000000.log", b"old");
        write(d.path(), "00000000000000000000.log.cleaned", b"new");
        write(d.path(), "00000000000000000000.index.cleaned", b"");
        assert_eq!(complete_or_roll_back(d.path()).unwrap(), 0);
        assert_eq!(names(d.path()), vec!["00000000000000000000.log"]);
    }

    /// Segments 0 and 10 (each with its three index files), segment 20,
    /// and the swap of a clean of 0 and 10 (offsets up to 11).
    fn swapped_clean(dir: &Path) -> Vec<u8> {
        let mut swap = build_test_batch(0, 3, 1, 1, 10, 7);
        swap.extend_from_slice(&build_test_batch(10, 2, 1, 1, 10, 8));
        for base in ["00000000000000000000", "00000000000000000010"] {
            write(dir, &format!("{base}.log"), b"old");
            write(dir, &format!("{base}.index"), b"");
            write(dir, &format!("{base}.timeindex"), b"");
            write(dir, &format!("{base}.txnindex"), b"old entries");
        }
        write(dir, "00000000000000000020.log", b"keep");
        write(dir, "00000000000000000020.txnindex", b"keep");
        write(dir, "00000000000000000000.log.swap", &swap);
        swap
    }

    fn read(dir: &Path, name: &str) -> Vec<u8> {
        std::fs::read(dir.join(name)).unwrap()
    }

    #[test]
    fn a_swapped_txn_index_replaces_the_old_ones() {
        let d = tempfile::tempdir().unwrap();
        let swap = swapped_clean(d.path());
        write(d.path(), "00000000000000000000.txnindex.swap", b"new");
        write(d.path(), "00000000000000000000.timeindex.swap", b"");
        assert_eq!(complete_or_roll_back(d.path()).unwrap(), 1);
        assert_eq!(
            names(d.path()),
            vec![
                "00000000000000000000.log",
                "00000000000000000000.txnindex",
                "00000000000000000020.log",
                "00000000000000000020.txnindex",
            ]
        );
        assert_eq!(read(d.path(), "00000000000000000000.log"), swap);
        assert_eq!(read(d.path(), "00000000000000000000.txnindex"), b"new");
    }

    #[test]
    fn a_txn_index_renamed_before_the_crash_is_the_cleaned_one_and_stays() {
        let d = tempfile::tempdir().unwrap();
        swapped_clean(d.path());
        // The swap had deleted the old segments and renamed the cleaned
        // index when the broker died, before the log's rename.
        for base in ["00000000000000000000", "00000000000000000010"] {
            for suffix in [".log", ".index", ".timeindex", ".txnindex"] {
                std::fs::remove_file(d.path().join(format!("{base}{suffix}"))).unwrap();
            }
        }
        write(d.path(), "00000000000000000000.txnindex", b"new");
        assert_eq!(complete_or_roll_back(d.path()).unwrap(), 1);
        assert_eq!(read(d.path(), "00000000000000000000.txnindex"), b"new");
        assert!(!d.path().join("00000000000000000010.txnindex").exists());
    }

    #[test]
    fn a_txn_index_swap_without_its_log_swap_is_rolled_back() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "00000000000000000000.log", b"old");
        write(d.path(), "00000000000000000000.txnindex", b"old entries");
        write(d.path(), "00000000000000000000.log.cleaned", b"new");
        write(d.path(), "00000000000000000000.txnindex.swap", b"new");
        assert_eq!(complete_or_roll_back(d.path()).unwrap(), 0);
        assert_eq!(
            names(d.path()),
            vec!["00000000000000000000.log", "00000000000000000000.txnindex"]
        );
        assert_eq!(
            read(d.path(), "00000000000000000000.txnindex"),
            b"old entries"
        );
    }

    #[test]
    fn a_swap_replaces_the_segments_in_its_offset_range() {
        let d = tempfile::tempdir().unwrap();
        let mut swap = build_test_batch(0, 3, 1, 1, 10, 7);
        let b2 = build_test_batch(10, 2, 1, 1, 10, 8);
        swap.extend_from_slice(&b2);
        // Cleaned from segments 0 and 10 (offsets up to 11); 20 stays.
        for base in ["00000000000000000000", "00000000000000000010"] {
            write(d.path(), &format!("{base}.log"), b"old");
            write(d.path(), &format!("{base}.index"), b"");
            write(d.path(), &format!("{base}.timeindex"), b"");
        }
        write(d.path(), "00000000000000000020.log", b"keep");
        write(d.path(), "00000000000000000000.log.swap", &swap);
        write(d.path(), "00000000000000000000.index.swap", b"");
        assert_eq!(complete_or_roll_back(d.path()).unwrap(), 1);
        assert_eq!(
            names(d.path()),
            vec!["00000000000000000000.log", "00000000000000000020.log"]
        );
        assert_eq!(
            std::fs::read(d.path().join("00000000000000000000.log")).unwrap(),
            swap
        );
    }
}
