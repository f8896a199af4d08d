//! `[io]` Producer-state snapshot files of one partition directory (Kafka's
//! `<offset>.snapshot`, `ProducerStateManager`'s file handling): naming,
//! which file to load and which to delete (pure functions over offsets,
//! unit-tested here), and the file I/O over encoded bytes: list, atomic
//! write, read the newest usable one. The contents (encode/decode, replay)
//! are `replication::producer_state`'s.

use std::path::{Path, PathBuf};

use crate::types::{Offset, TopicPartition};

/// Kafka's producer snapshot file suffix (`LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX`).
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Snapshots kept in a partition dir after a new one is written: the
/// newest two, so a damaged newest file still leaves an older one to
/// replay from (Kafka keeps one per segment and deletes them with the
/// segments; a bound of two keeps the dir small with the same recovery).
pub const SNAPSHOTS_KEPT: usize = 2;
/// `<20-digit offset>.snapshot`, Kafka's name for a snapshot of the state
/// of every batch below `offset`.
pub fn snapshot_file_name(offset: Offset) -> String {
    format!("{offset:020}{SNAPSHOT_SUFFIX}")
}

/// The offset a snapshot file name stands for; `None` for other files
/// (including `.snapshot.tmp` leftovers of an interrupted write).
pub fn parse_snapshot_file_name(name: &str) -> Option<Offset> {
    let stem = name.strip_suffix(SNAPSHOT_SUFFIX)?;
    if stem.is_empty() || !stem.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// What to do with a partition's snapshot files when its log opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotPlan {
    /// Snapshots at or below the log end offset, newest first: load the
    /// first that decodes, then replay the log from its offset.
    pub candidates: Vec<Offset>,
    /// Snapshots beyond the log end offset (the log lost its tail in a
    /// crash after they were written): delete them, as Kafka's
    /// `removeStraySnapshots` / `truncateAndReload` do.
    pub stray: Vec<Offset>,
}

pub fn plan_snapshot_load(offsets: &[Offset], log_end_offset: Offset) -> SnapshotPlan {
    let mut sorted = offsets.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    let (stray, candidates) = sorted.into_iter().partition(|&o| o > log_end_offset);
    SnapshotPlan { candidates, stray }
}

/// All but the `keep` newest snapshots, oldest first.
pub fn snapshots_to_delete(offsets: &[Offset], keep: usize) -> Vec<Offset> {
    let mut sorted = offsets.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let cut = sorted.len().saturating_sub(keep);
    sorted.truncate(cut);
    sorted
}

/// Offsets of the producer snapshot files in a partition dir.
pub fn snapshot_offsets(dir: &Path) -> std::io::Result<Vec<i64>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if let Some(o) = parse_snapshot_file_name(&entry?.file_name().to_string_lossy()) {
            out.push(o);
        }
    }
    Ok(out)
}

/// Write `encoded` as `<offset>.snapshot` (tmp file, fsync, rename: a crash
/// leaves the old file or the new one, and the log's open removes `.tmp`
/// leftovers), then delete all but the newest [`SNAPSHOTS_KEPT`].
pub fn write_snapshot(dir: &Path, offset: i64, encoded: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join(snapshot_file_name(offset));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(encoded)?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(dir)?.sync_all()?;
    for old in snapshots_to_delete(&snapshot_offsets(dir)?, SNAPSHOTS_KEPT) {
        std::fs::remove_file(dir.join(snapshot_file_name(old)))?;
    }
    Ok(())
}

/// [`write_snapshot`] for a batched close (`close_batch`): written under
/// its temporary name, unsynced; the commit renames it into place. Older
/// snapshots beyond the kept ones are removed now (the new one replaces
/// them only once committed, so the newest old one stays).
pub fn write_snapshot_deferred(
    closed: &mut super::close_batch::DeferredClose,
    offset: i64,
    encoded: &[u8],
) -> std::io::Result<()> {
    let dir = closed.dir().to_path_buf();
    let path = dir.join(snapshot_file_name(offset));
    let tmp = super::close_batch::tmp_path(&path);
    std::fs::write(&tmp, encoded)?;
    let kept = SNAPSHOTS_KEPT.saturating_sub(1).max(1);
    for old in snapshots_to_delete(&snapshot_offsets(&dir)?, kept) {
        if old != offset {
            std::fs::remove_file(dir.join(snapshot_file_name(old)))?;
        }
    }
    closed.rename_on_commit(tmp, path);
    Ok(())
}

/// [`write_snapshot`] that only warns: a failed snapshot loses nothing, the
/// next open replays the log from an older snapshot (or the log start).
pub fn write_snapshot_or_warn(tp: &TopicPartition, dir: &Path, offset: i64, encoded: &[u8]) {
    if let Err(e) = write_snapshot(dir, offset, encoded) {
        tracing::warn!(%tp, offset, error = %e, "cannot write producer state snapshot");
    }
}

/// The roll-time snapshot, written and fsynced on glommio's blocking pool:
/// two fsyncs on the shard would stall every connection it serves for
/// milliseconds (Kafka, too, flushes the roll's snapshot from its
/// scheduler, not the request path). A crash before it lands only means
/// the next open replays from an older snapshot.
pub fn write_snapshot_in_background(
    tp: TopicPartition,
    dir: PathBuf,
    offset: i64,
    encoded: Vec<u8>,
) {
    glommio::spawn_local(async move {
        let written = glommio::executor()
            .spawn_blocking(move || write_snapshot(&dir, offset, &encoded))
            .await;
        if let Err(e) = written {
            tracing::warn!(%tp, offset, error = %e, "cannot write producer state snapshot");
        }
    })
    .detach();
}

/// The newest snapshot at or below `log_end_offset` that `decode` accepts:
/// stray ones past the log end are deleted first (Kafka's
/// `removeStraySnapshots`), damaged or unreadable ones skipped with a
/// warning. `None` when no snapshot is usable.
pub fn load_newest<T>(
    dir: &Path,
    log_end_offset: Offset,
    decode: impl Fn(&[u8]) -> Option<T>,
) -> std::io::Result<Option<(Offset, T)>> {
    let plan = plan_snapshot_load(&snapshot_offsets(dir)?, log_end_offset);
    for stray in plan.stray {
        std::fs::remove_file(dir.join(snapshot_file_name(stray)))?;
    }
    for offset in plan.candidates {
        let path = dir.join(snapshot_file_name(offset));
        match std::fs::read(&path).map(|b| decode(&b)) {
            Ok(Some(state)) => return Ok(Some((offset, state))),
            Ok(None) => tracing::warn!(path = %path.display(), "damaged producer snapshot skipped"),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "unreadable producer snapshot")
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_file_names_are_kafkas_20_digit_offsets() {
        assert_eq!(snapshot_file_name(42), "00000000000000000042.snapshot");
        assert_eq!(snapshot_file_name(0), "00000000000000000000.snapshot");
        let table: &[(&str, Option<Offset>)] = &[
            ("00000000000000000042.snapshot", Some(42)),
            ("00000000000001000000.snapshot", Some(1_000_000)),
            ("42.snapshot", Some(42)),
            ("00000000000000000042.snapshot.tmp", None),
            ("00000000000000000042.log", None),
            ("00000000000000000042.index", None),
            (".snapshot", None),
            ("-1.snapshot", None),
            ("+1.snapshot", None),
            ("abc.snapshot", None),
            ("99999999999999999999.snapshot", None),
        ];
        for (name, want) in table {
            assert_eq!(parse_snapshot_file_name(name), *want, "{name}");
        }
        for o in [0, 1, 99, i64::MAX] {
            assert_eq!(parse_snapshot_file_name(&snapshot_file_name(o)), Some(o));
        }
    }

    #[test]
    fn load_plan_tries_newest_snapshot_at_or_below_the_log_end_first() {
        // (case, snapshot offsets on disk, log end offset, candidates, stray)
        type Row<'a> = (&'a str, &'a [Offset], Offset, &'a [Offset], &'a [Offset]);
        let table: &[Row<'_>] = &[
            ("no snapshots: replay the whole log", &[], 100, &[], &[]),
            (
                "clean shutdown at the LEO",
                &[50, 100],
                100,
                &[100, 50],
                &[],
            ),
            ("crash after a roll", &[10, 50], 73, &[50, 10], &[]),
            (
                "log lost its tail past a snapshot",
                &[50, 100],
                80,
                &[50],
                &[100],
            ),
            (
                "every snapshot is past the log end",
                &[90, 100],
                0,
                &[],
                &[100, 90],
            ),
            (
                "unsorted listing, duplicates",
                &[10, 60, 10, 30],
                60,
                &[60, 30, 10],
                &[],
            ),
        ];
        for (case, on_disk, leo, candidates, stray) in table {
            let plan = plan_snapshot_load(on_disk, *leo);
            assert_eq!(plan.candidates, candidates.to_vec(), "{case}");
            assert_eq!(plan.stray, stray.to_vec(), "{case}");
        }
    }

    #[test]
    fn only_the_two_newest_snapshots_are_kept() {
        let table: &[(&[Offset], &[Offset])] = &[
            (&[], &[]),
            (&[5], &[]),
            (&[5, 9], &[]),
            (&[9, 5, 20], &[5]),
            (&[40, 10, 30, 20], &[10, 20]),
        ];
        for (on_disk, delete) in table {
            assert_eq!(
                snapshots_to_delete(on_disk, SNAPSHOTS_KEPT),
                delete.to_vec(),
                "{on_disk:?}"
            );
        }
    }
}
