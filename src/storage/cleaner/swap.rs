//! `[io]` The cleaner's file names and what opening a log does with the
//! ones a crash left (Kafka 3.9 `LogLoader.removeTempFilesAndCollectSwapFiles`
//! and the swap passes of `LogLoader.load`).
//!
//! A clean writes `<base>.log.cleaned` (+ `.index.cleaned`,
//! `.timeindex.cleaned`) and fsyncs them; under the log's lock it renames
//! them to `.swap` and fsyncs the directory, deletes the old segments, and
//! renames `.swap` to the final names. So at open:
//! - `.cleaned` files are an unfinished clean: deleted (the old segments
//!   are all still there);
//! - a `.log.swap` file is a finished clean being swapped in: every other
//!   segment file whose base offset lies in the swap segment's offset range
//!   is deleted (those are the segments it replaces), then the `.swap`
//!   suffix is dropped. Index `.swap` files are deleted and the indexes
//!   rebuilt by recovery, as Kafka does.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::super::segment::{path_of, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use super::super::StorageError;

/// Kafka's `LogFileUtils.CLEANED_FILE_SUFFIX`.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// Kafka's `LogFileUtils.SWAP_FILE_SUFFIX`.
pub const SWAP_SUFFIX: &str = ".swap";
const SEGMENT_SUFFIXES: [&str; 3] = [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX];

fn with_suffix(p: PathBuf, suffix: &str) -> PathBuf {
    let mut s = p.into_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// `<base><segment suffix><extra>` for the log and both indexes.
pub fn paths(dir: &Path, base: i64, extra: &str) -> Vec<PathBuf> {
    SEGMENT_SUFFIXES
        .iter()
        .map(|s| with_suffix(path_of(dir, base, s), extra))
        .collect()
}

/// Rename `<base>.{log,index,timeindex}<from>` to `...<to>`.
pub fn rename_all(dir: &Path, base: i64, from: &str, to: &str) -> Result<(), StorageError> {
    for s in SEGMENT_SUFFIXES {
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

/// Finish or undo what a crashed clean left in the partition dir `dir`
/// (see the module doc). Returns how many swaps it completed.
pub fn complete_or_roll_back(dir: &Path) -> Result<usize, StorageError> {
    let mut cleaned = Vec::new();
    let mut swaps = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        let Some(name) = name else { continue };
        if name.ends_with(CLEANED_SUFFIX) {
            cleaned.push(path);
        } else if let Some(stem) = name.strip_suffix(SWAP_SUFFIX) {
            match stem.strip_suffix(LOG_SUFFIX).map(str::parse::<i64>) {
                Some(Ok(base)) => swaps.push(base),
                // Index swaps: rebuilt by recovery (Kafka deletes them too).
                _ => cleaned.push(path),
            }
        }
    }
    remove_all(&cleaned)?;
    swaps.sort_unstable();
    for &base in &swaps {
        let swap = with_suffix(path_of(dir, base, LOG_SUFFIX), SWAP_SUFFIX);
        // An emptied swap segment still replaces the segment at its base.
        let end = next_offset_of(&swap, base)?.max(base + 1);
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().to_string());
            let Some(name) = name else { continue };
            let Some(seg_base) = SEGMENT_SUFFIXES
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .and_then(|stem| stem.parse::<i64>().ok())
            else {
                continue;
            };
            if (base..end).contains(&seg_base) {
                remove_all(&[path])?;
            }
        }
        std::fs::rename(&swap, path_of(dir, base, LOG_SUFFIX))?;
        tracing::info!(dir = %dir.display(), base, "completed an interrupted log clean swap");
    }
    if !cleaned.is_empty() || !swaps.is_empty() {
        File::open(dir)?.sync_all()?;
    }
    Ok(swaps.len())
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
