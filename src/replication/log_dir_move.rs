//! `[pure]` Moving a partition replica between log dirs (KIP-113,
//! AlterReplicaLogDirs), as Kafka 3.9 does it: a *future* replica
//! `<topic>-<p>.<uniqueId>-future` is created in the destination dir
//! (`UnifiedLog.logFutureDirName`), filled from the current log while the
//! partition keeps serving (Kafka's `ReplicaAlterLogDirsThread`, which
//! fetches from the local current log), and once it has caught up swapped
//! in under the partition's lock (`Partition.maybeReplaceCurrentWithFutureReplica`
//! → `LogManager.replaceCurrentWithFutureLog`); the current log's dir is
//! renamed `<topic>-<p>.<uniqueId>-delete` and deleted.
//!
//! This module decides; the driver (`replication::alter_log_dirs`) and
//! the partition (`Partition::replace_current_with_future`) do the I/O:
//! - [`next_step`]: what one round of the copy does, from both logs' ends
//!   and epochs (truncate a diverged future replica as the fetcher's
//!   epoch check does, start it over past a moved log start, copy, or swap);
//! - [`on_alter`]: what a request for a destination does to a move;
//! - [`startup_actions`]: what a start finds in the log dirs. The swap
//!   renames the current dir to `-delete` (same unique id as the future
//!   dir) *before* renaming the finished, cleanly closed future dir into
//!   place, so a crash between the two leaves a `-future` dir, its
//!   `-delete` twin and no current dir: the start completes the swap. (Kafka
//!   renames in the other order and refuses to start on the two current
//!   dirs a crash there leaves, "Duplicate log directories".) A `-future`
//!   dir beside a current one is a move in progress: it resumes.

/// Kafka's `LogFileUtils.FUTURE_DIR_SUFFIX` / `DELETE_DIR_SUFFIX`.
pub const FUTURE_DIR_SUFFIX: &str = "-future";
pub const DELETE_DIR_SUFFIX: &str = "-delete";

/// `<tp dir>.<id><suffix>` (Kafka's `logDirNameWithSuffix`; the id is a
/// UUID without dashes).
pub fn suffixed_dir_name(tp_dir: &str, id: &str, suffix: &str) -> String {
    format!("{tp_dir}.{id}{suffix}")
}

/// What a log dir entry's name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirEntry {
    /// A partition's current log: `<topic>-<p>`.
    Current {
        tp_dir: String,
    },
    Future {
        tp_dir: String,
        id: String,
    },
    Delete {
        tp_dir: String,
        id: String,
    },
}

/// Parse a log dir entry; `None` for names that are neither (files,
/// `__cluster_metadata`-like names without a partition are left alone by
/// the caller too).
pub fn parse_entry(name: &str) -> Option<DirEntry> {
    for (suffix, future) in [(FUTURE_DIR_SUFFIX, true), (DELETE_DIR_SUFFIX, false)] {
        if let Some(stem) = name.strip_suffix(suffix) {
            let (tp_dir, id) = stem.rsplit_once('.')?;
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) || !is_tp_dir(tp_dir) {
                return None;
            }
            let (tp_dir, id) = (tp_dir.to_string(), id.to_string());
            return Some(if future {
                DirEntry::Future { tp_dir, id }
            } else {
                DirEntry::Delete { tp_dir, id }
            });
        }
    }
    is_tp_dir(name).then(|| DirEntry::Current {
        tp_dir: name.to_string(),
    })
}

/// `<topic>-<non-negative partition>`.
fn is_tp_dir(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(topic, p)| {
        !topic.is_empty() && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
    })
}

/// What a start does with what it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartupAction {
    /// Rename dir `dir`'s `from` to `to` (the swap a crash interrupted).
    CompleteSwap {
        dir: usize,
        from: String,
        to: String,
    },
    /// Remove dir `dir`'s `name` (a replaced log, Kafka's `-delete` dirs).
    Remove { dir: usize, name: String },
}

/// The actions for the entries found, `(dir index, name)` over every
/// online log dir, swaps first (they need the `-delete` twin to decide).
pub fn startup_actions(entries: &[(usize, String)]) -> Vec<StartupAction> {
    let parsed: Vec<(usize, &str, DirEntry)> = entries
        .iter()
        .filter_map(|(d, n)| parse_entry(n).map(|e| (*d, n.as_str(), e)))
        .collect();
    let mut out = Vec::new();
    for (dir, name, e) in &parsed {
        let DirEntry::Future { tp_dir, id } = e else {
            continue;
        };
        let has_current = parsed
            .iter()
            .any(|(_, _, o)| matches!(o, DirEntry::Current { tp_dir: t } if t == tp_dir));
        let has_twin = parsed.iter().any(
            |(_, _, o)| matches!(o, DirEntry::Delete { tp_dir: t, id: i } if t == tp_dir && i == id),
        );
        if !has_current && has_twin {
            out.push(StartupAction::CompleteSwap {
                dir: *dir,
                from: (*name).to_string(),
                to: tp_dir.clone(),
            });
        }
    }
    for (dir, name, e) in &parsed {
        if matches!(e, DirEntry::Delete { .. }) {
            out.push(StartupAction::Remove {
                dir: *dir,
                name: (*name).to_string(),
            });
        }
    }
    out
}

/// A log's ends and leader epoch cache, as one round of the copy sees them.
#[derive(Debug, Clone, Copy)]
pub struct ReplicaView<'a> {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// `(epoch, start offset)`, ascending (`leader-epoch-checkpoint`).
    pub epochs: &'a [(i32, i64)],
}

/// One round of the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyStep {
    /// The future log holds offsets the current one does not (the current
    /// log was truncated, or diverged at an epoch): truncate it here first.
    TruncateTo(i64),
    /// The future log ends below the current log start (retention or
    /// DeleteRecords moved it): start the future log over at the batch
    /// holding this offset (Kafka's `truncateFullyAndStartAt`).
    StartOver(i64),
    /// Copy the current log's batches from this offset on.
    Copy(i64),
    /// Caught up (same log end): swap, under the partition's write lock,
    /// copying whatever arrived meanwhile first.
    Swap,
}

/// Kafka's `LeaderEpochFileCache.endOffsetFor`: the end offset of `epoch`
/// in `epochs` (the next epoch's start, or `leo` for the latest), `None`
/// when the cache knows no epoch at or below it.
pub fn end_offset_for(epochs: &[(i32, i64)], leo: i64, epoch: i32) -> Option<i64> {
    let at_or_below = epochs.iter().rposition(|&(e, _)| e <= epoch)?;
    Some(epochs.get(at_or_below + 1).map_or(leo, |&(_, start)| start))
}

/// The next round of the copy (Kafka's `ReplicaAlterLogDirsThread`, with
/// the epoch check of `AbstractFetcherThread.truncateToEpochEndOffsets`).
pub fn next_step(current: &ReplicaView<'_>, future: &ReplicaView<'_>) -> CopyStep {
    let mut keep = future.log_end_offset.min(current.log_end_offset);
    if let Some(&(epoch, _)) = future.epochs.last() {
        let end = end_offset_for(current.epochs, current.log_end_offset, epoch)
            .unwrap_or(current.log_start_offset);
        keep = keep.min(end);
    }
    if keep < future.log_end_offset {
        return CopyStep::TruncateTo(keep.max(future.log_start_offset));
    }
    if future.log_end_offset < current.log_start_offset {
        return CopyStep::StartOver(current.log_start_offset);
    }
    if future.log_end_offset == current.log_end_offset {
        return CopyStep::Swap;
    }
    CopyStep::Copy(future.log_end_offset)
}

/// What an AlterReplicaLogDirs entry does to a hosted partition
/// (`ReplicaManager.alterReplicaLogDirs`, `Partition.maybeCreateFutureReplica`
/// and `futureReplicaDirChanged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterDecision {
    /// The log already lives there: nothing to do (a move elsewhere stops).
    AlreadyThere { cancel_move: bool },
    /// The same move is under way.
    Continue,
    /// Start a move there (stopping one to another dir first).
    Start { cancel_move: bool },
}

pub fn on_alter(current_dir: usize, moving_to: Option<usize>, target: usize) -> AlterDecision {
    if target == current_dir {
        return AlterDecision::AlreadyThere {
            cancel_move: moving_to.is_some(),
        };
    }
    match moving_to {
        Some(d) if d == target => AlterDecision::Continue,
        other => AlterDecision::Start {
            cancel_move: other.is_some(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(lso: i64, leo: i64, epochs: &[(i32, i64)]) -> ReplicaView<'_> {
        ReplicaView {
            log_start_offset: lso,
            log_end_offset: leo,
            epochs,
        }
    }

    #[test]
    fn a_new_future_copies_from_zero_and_swaps_when_caught_up() {
        let cur = [(0, 0), (3, 50)];
        assert_eq!(
            next_step(&view(0, 100, &cur), &view(0, 0, &[])),
            CopyStep::Copy(0)
        );
        assert_eq!(
            next_step(&view(0, 100, &cur), &view(0, 60, &[(0, 0), (3, 50)])),
            CopyStep::Copy(60)
        );
        assert_eq!(
            next_step(&view(0, 100, &cur), &view(0, 100, &[(0, 0), (3, 50)])),
            CopyStep::Swap
        );
    }

    #[test]
    fn a_log_start_past_the_future_end_starts_it_over() {
        assert_eq!(
            next_step(&view(70, 100, &[(0, 0)]), &view(0, 40, &[(0, 0)])),
            CopyStep::StartOver(70)
        );
        assert_eq!(
            next_step(&view(70, 100, &[]), &view(0, 0, &[])),
            CopyStep::StartOver(70)
        );
    }

    #[test]
    fn a_truncated_or_diverged_current_log_truncates_the_future() {
        // The current log was truncated below the future's end.
        assert_eq!(
            next_step(&view(0, 30, &[(0, 0)]), &view(0, 40, &[(0, 0)])),
            CopyStep::TruncateTo(30)
        );
        // Same end offset, but epoch 2 ended at 35 in the current log
        // (a new leader's epoch 4 starts there): the future's tail diverged.
        assert_eq!(
            next_step(
                &view(0, 40, &[(0, 0), (2, 10), (4, 35)]),
                &view(0, 40, &[(0, 0), (2, 10)])
            ),
            CopyStep::TruncateTo(35)
        );
        // An epoch the current cache knows nothing at or below: from the start.
        assert_eq!(
            next_step(&view(5, 40, &[(6, 5)]), &view(0, 20, &[(2, 0)])),
            CopyStep::TruncateTo(5)
        );
    }

    #[test]
    fn end_offset_of_an_epoch_follows_kafka() {
        let e = [(1, 0), (3, 10), (5, 20)];
        assert_eq!(end_offset_for(&e, 30, 5), Some(30));
        assert_eq!(end_offset_for(&e, 30, 3), Some(20));
        assert_eq!(end_offset_for(&e, 30, 4), Some(20));
        assert_eq!(end_offset_for(&e, 30, 0), None);
    }

    #[test]
    fn alter_decisions() {
        assert_eq!(
            on_alter(0, None, 0),
            AlterDecision::AlreadyThere { cancel_move: false }
        );
        assert_eq!(
            on_alter(0, Some(1), 0),
            AlterDecision::AlreadyThere { cancel_move: true }
        );
        assert_eq!(
            on_alter(0, None, 1),
            AlterDecision::Start { cancel_move: false }
        );
        assert_eq!(on_alter(0, Some(1), 1), AlterDecision::Continue);
        assert_eq!(
            on_alter(0, Some(2), 1),
            AlterDecision::Start { cancel_move: true }
        );
    }

    #[test]
    fn entries_parse_as_kafka_names_them() {
        assert_eq!(
            parse_entry("t-0.0123abcd-future"),
            Some(DirEntry::Future {
                tp_dir: "t-0".into(),
                id: "0123abcd".into()
            })
        );
        assert_eq!(
            parse_entry("my.topic-12.ff-delete"),
            Some(DirEntry::Delete {
                tp_dir: "my.topic-12".into(),
                id: "ff".into()
            })
        );
        assert_eq!(
            parse_entry("my.topic-3"),
            Some(DirEntry::Current {
                tp_dir: "my.topic-3".into()
            })
        );
        assert_eq!(parse_entry("meta.properties"), None);
        assert_eq!(parse_entry("t-0.xyz-future"), None);
        assert_eq!(parse_entry("-future"), None);
    }

    #[test]
    fn a_start_completes_an_interrupted_swap_and_resumes_a_copy() {
        let entries = vec![
            // Interrupted between the two renames: complete.
            (1, "a-0.aa-future".to_string()),
            (0, "a-0.aa-delete".to_string()),
            // A copy in progress: left to resume.
            (0, "b-0".to_string()),
            (1, "b-0.bb-future".to_string()),
            // A future dir with no twin and no current: left alone.
            (1, "c-0.cc-future".to_string()),
            (0, "d-1.dd-delete".to_string()),
        ];
        assert_eq!(
            startup_actions(&entries),
            vec![
                StartupAction::CompleteSwap {
                    dir: 1,
                    from: "a-0.aa-future".into(),
                    to: "a-0".into()
                },
                StartupAction::Remove {
                    dir: 0,
                    name: "a-0.aa-delete".into()
                },
                StartupAction::Remove {
                    dir: 0,
                    name: "d-1.dd-delete".into()
                },
            ]
        );
    }
}
