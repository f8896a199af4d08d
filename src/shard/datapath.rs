//! `[drv]` Partition work routed between shards (ARCHITECTURE.md §2, §5).
//!
//! A connection's shard groups a request's partitions by owner shard and
//! sends one message per owner (or calls its own registry directly). Owners
//! answer with results in request order. Record regions cross shards as
//! `Bytes` (refcounted, no copy) or as a duplicated file descriptor (the
//! segment fd is `Rc` on its owner; `dup` is one syscall and keeps
//! `sendfile` zero-copy on the connection's shard).
//!
//! Long polls and acks=all produces park in the connection shard's
//! purgatory. Owners keep a registry of which remote shards watch which of
//! their partitions and send coalesced "partition advanced" notes after
//! appends; a new watch is answered with the partition's current state so
//! an append racing the registration is never missed.

use std::rc::Rc;

use bytes::Bytes;

use super::context::{ShardContext, ShardRequest, ShardResponse};
use super::partitions::{OffsetAnswer, ProduceResult, ReadAnswer, ReadBound};
use crate::io::zerocopy::OutPart;
use crate::purgatory::delayed_operation::WatchChange;
use crate::purgatory::notes::AdvanceNotes;
use crate::purgatory::view::PartitionSnapshot;
use crate::storage::partition_log::Region;
use crate::types::{ShardId, TopicPartition};

/// One partition to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSpec {
    pub tp: TopicPartition,
    pub offset: i64,
    pub partition_max_bytes: usize,
}

/// A shard-local read answer turned into parts for the response.
#[derive(Debug, Clone)]
pub struct LocalRead {
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub parts: Vec<OutPart>,
    pub bytes: usize,
    pub snapshot: Option<PartitionSnapshot>,
}

fn to_parts(regions: Vec<Region>) -> Vec<OutPart> {
    regions
        .into_iter()
        .map(|r| match r {
            Region::Cached(b) => OutPart::Bytes(b),
            Region::File {
                file,
                position,
                len,
            } => OutPart::File {
                file,
                position,
                len: len as usize,
            },
        })
        .collect()
}

/// An owner's read answer (from this shard or across the mesh: a file
/// region carries the segment's own `Arc<File>`, so the owner's retention
/// sees a read in flight on any shard) turned into response parts.
fn local_read(answer: ReadAnswer) -> LocalRead {
    LocalRead {
        error_code: answer.error_code,
        high_watermark: answer.high_watermark,
        last_stable_offset: answer.last_stable_offset,
        log_start_offset: answer.log_start_offset,
        parts: to_parts(answer.regions),
        bytes: answer.bytes,
        snapshot: answer.snapshot,
    }
}

impl ShardContext {
    /// Owner side: serve a data-path request from another shard (or this one).
    pub(crate) async fn on_data_request(
        self: &Rc<Self>,
        from: usize,
        req: ShardRequest,
    ) -> ShardResponse {
        let Some(registry) = self.partitions() else {
            return ShardResponse::Unsupported;
        };
        match req {
            ShardRequest::Produce { parts, now_ms } => {
                let mut out = Vec::with_capacity(parts.len());
                for (tp, records) in parts {
                    let r = registry.append(&tp, records, now_ms).await;
                    if let Some(s) = r.snapshot {
                        self.on_local_advance(&tp, s);
                    }
                    out.push(r);
                }
                ShardResponse::Produced(out)
            }
            ShardRequest::Read {
                specs,
                bound,
                max_bytes,
                min_one_batch,
            } => {
                let answers = self
                    .read_owned(&specs, bound, max_bytes, min_one_batch)
                    .await;
                ShardResponse::Read(answers)
            }
            ShardRequest::ListOffsets { parts, bound } => {
                let mut out = Vec::with_capacity(parts.len());
                for (tp, ts) in parts {
                    out.push(registry.list_offset(&tp, ts, bound).await);
                }
                ShardResponse::Offsets(out)
            }
            ShardRequest::Watch { changes } => {
                let from = ShardId(from as u16);
                let mut current = Vec::new();
                let mut watchers = self.remote_watchers.borrow_mut();
                for (tp, watch) in changes {
                    if watch {
                        watchers.on_watch(from, &tp);
                        current.push((tp.clone(), registry.partition_snapshot(&tp)));
                    } else {
                        watchers.on_unwatch(from, &tp);
                    }
                }
                ShardResponse::Snapshots(current)
            }
            ShardRequest::Advance(notes) => {
                if let Some(driver) = self.purgatory() {
                    driver.on_advance_notes(notes);
                }
                ShardResponse::Ack
            }
            _ => ShardResponse::Unsupported,
        }
    }

    /// Reads owned partitions in order within a shared `max_bytes` budget
    /// (Kafka's `readFromLog`: the first partition may return one oversized
    /// batch, KIP-74).
    async fn read_owned(
        &self,
        specs: &[ReadSpec],
        bound: ReadBound,
        max_bytes: usize,
        mut min_one_batch: bool,
    ) -> Vec<ReadAnswer> {
        let Some(registry) = self.partitions() else {
            return Vec::new();
        };
        let mut left = max_bytes;
        let mut out = Vec::with_capacity(specs.len());
        for spec in specs {
            let limit = spec.partition_max_bytes.min(left);
            let a = registry
                .read(&spec.tp, spec.offset, limit, bound, min_one_batch)
                .await;
            if a.bytes > 0 {
                min_one_batch = false;
            }
            left = left.saturating_sub(a.bytes);
            out.push(a);
        }
        out
    }

    /// Owner side: a partition advanced; wake local waiters now and queue
    /// notes for remote watchers (sent together once this task yields).
    pub(crate) fn on_local_advance(self: &Rc<Self>, tp: &TopicPartition, s: PartitionSnapshot) {
        if let Some(driver) = self.purgatory() {
            driver.on_partition_advanced(tp, s);
        }
        let queued = {
            let watchers = self.remote_watchers.borrow();
            self.coalescer
                .borrow_mut()
                .on_partition_advanced(&watchers, tp, s)
        };
        if queued > 0 && !self.notes_scheduled.replace(true) {
            let ctx = self.clone();
            glommio::spawn_local(async move {
                futures_lite::future::yield_now().await;
                ctx.notes_scheduled.set(false);
                let batches: Vec<AdvanceNotes> = ctx.coalescer.borrow_mut().drain();
                for notes in batches {
                    let to = notes.to.index();
                    if let Err(e) = ctx.call(to, ShardRequest::Advance(notes)).await {
                        tracing::debug!(error = %e, "advance note not delivered");
                    }
                }
            })
            .detach();
        }
    }

    /// Serve `req` on the owner shard: directly when that is this shard,
    /// over the mesh otherwise (an unreachable owner, or a request that
    /// panicked, answers `Unsupported`).
    async fn ask_owner(self: &Rc<Self>, owner: usize, req: ShardRequest) -> ShardResponse {
        if owner == self.my_peer() {
            // Runs as its own task (`futures_join_all`), out of reach of the
            // connection's catch_unwind: a panic must fail this request,
            // not end the shard.
            let run = std::panic::AssertUnwindSafe(self.on_data_request(owner, req));
            futures_lite::FutureExt::catch_unwind(run)
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("a partition request panicked on its owner; the request fails");
                    ShardResponse::Unsupported
                })
        } else {
            self.call(owner, req)
                .await
                .unwrap_or(ShardResponse::Unsupported)
        }
    }

    /// Connection side: append to partitions on their owners.
    pub async fn produce_on_owners(
        self: &Rc<Self>,
        parts: Vec<(TopicPartition, Bytes)>,
        now_ms: i64,
    ) -> Vec<ProduceResult> {
        let groups = self.group_by_owner(parts.into_iter().map(|(tp, b)| (tp.clone(), (tp, b))));
        let mut results: Vec<Option<ProduceResult>> = vec![None; groups.total];
        let calls = groups.by_owner.into_iter().map(|(owner, items)| {
            let ctx = self.clone();
            async move {
                let (idx, parts): (Vec<usize>, Vec<(TopicPartition, Bytes)>) =
                    items.into_iter().unzip();
                let answer = ctx
                    .ask_owner(owner, ShardRequest::Produce { parts, now_ms })
                    .await;
                (idx, answer)
            }
        });
        for (idx, answer) in futures_join_all(calls).await {
            let list = match answer {
                ShardResponse::Produced(list) => list,
                _ => Vec::new(),
            };
            let mut list = list.into_iter();
            for i in idx {
                results[i] = list.next();
            }
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    ProduceResult::error(crate::protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER.0)
                })
            })
            .collect()
    }

    /// Connection side: read partitions from their owners, owner by owner
    /// in request order, sharing one `max_bytes` budget.
    pub async fn read_on_owners(
        self: &Rc<Self>,
        specs: Vec<ReadSpec>,
        bound: ReadBound,
        max_bytes: usize,
    ) -> Vec<LocalRead> {
        let n = specs.len();
        let groups = self.group_by_owner(specs.into_iter().map(|s| (s.tp.clone(), s)));
        let mut results: Vec<Option<LocalRead>> = vec![None; n];
        let mut left = max_bytes;
        let mut min_one = true;
        for (owner, items) in groups.by_owner {
            let (idx, specs): (Vec<usize>, Vec<ReadSpec>) = items.into_iter().unzip();
            let answers: Vec<LocalRead> = if owner == self.my_peer() {
                self.read_owned(&specs, bound, left, min_one)
                    .await
                    .into_iter()
                    .map(local_read)
                    .collect()
            } else {
                let req = ShardRequest::Read {
                    specs,
                    bound,
                    max_bytes: left,
                    min_one_batch: min_one,
                };
                match self.call(owner, req).await {
                    Ok(ShardResponse::Read(list)) => list.into_iter().map(local_read).collect(),
                    _ => Vec::new(),
                }
            };
            for (i, a) in idx.into_iter().zip(answers) {
                if a.bytes > 0 {
                    min_one = false;
                }
                left = left.saturating_sub(a.bytes);
                results[i] = Some(a);
            }
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    local_read(ReadAnswer::error(
                        crate::protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                    ))
                })
            })
            .collect()
    }

    /// Connection side: ListOffsets lookups on the owners.
    pub async fn list_offsets_on_owners(
        self: &Rc<Self>,
        parts: Vec<(TopicPartition, i64)>,
        bound: ReadBound,
    ) -> Vec<OffsetAnswer> {
        let n = parts.len();
        let groups = self.group_by_owner(parts.into_iter().map(|(tp, ts)| (tp.clone(), (tp, ts))));
        let mut results: Vec<Option<OffsetAnswer>> = vec![None; n];
        for (owner, items) in groups.by_owner {
            let (idx, parts): (Vec<usize>, Vec<(TopicPartition, i64)>) = items.into_iter().unzip();
            let req = ShardRequest::ListOffsets { parts, bound };
            if let ShardResponse::Offsets(list) = self.ask_owner(owner, req).await {
                for (i, a) in idx.into_iter().zip(list) {
                    results[i] = Some(a);
                }
            }
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or(OffsetAnswer {
                    error_code: crate::protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                    timestamp: -1,
                    offset: -1,
                    leader_epoch: -1,
                })
            })
            .collect()
    }

    /// Connection side: tell owners which partitions this shard's purgatory
    /// started or stopped watching; feed their current state back in.
    pub async fn sync_watches(self: &Rc<Self>) {
        let Some(driver) = self.purgatory() else {
            return;
        };
        let changes = driver.drain_watch_changes();
        if changes.is_empty() {
            return;
        }
        let me = self.my_peer();
        let groups = self.group_by_owner(changes.into_iter().map(|c| match c {
            WatchChange::Watch(tp) => (tp.clone(), (tp, true)),
            WatchChange::Unwatch(tp) => (tp.clone(), (tp, false)),
        }));
        for (owner, items) in groups.by_owner {
            if owner == me {
                continue; // local owners call the driver directly
            }
            let changes = items.into_iter().map(|(_, c)| c).collect();
            if let Ok(ShardResponse::Snapshots(current)) =
                self.call(owner, ShardRequest::Watch { changes }).await
            {
                for (tp, s) in current {
                    driver.on_partition_advanced(&tp, s);
                }
            }
        }
    }

    fn group_by_owner<T>(&self, items: impl Iterator<Item = (TopicPartition, T)>) -> Grouped<T> {
        let mut by_owner: Vec<(usize, Vec<(usize, T)>)> = Vec::new();
        let mut total = 0;
        for (i, (tp, item)) in items.enumerate() {
            total += 1;
            let owner = self.owner_of(&tp.topic, tp.partition);
            match by_owner.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, list)) => list.push((i, item)),
                None => by_owner.push((owner, vec![(i, item)])),
            }
        }
        Grouped { by_owner, total }
    }
}

struct Grouped<T> {
    by_owner: Vec<(usize, Vec<(usize, T)>)>,
    total: usize,
}

/// Await every future; they run concurrently as local tasks on this shard.
async fn futures_join_all<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    let handles: Vec<_> = futs.map(glommio::spawn_local).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await);
    }
    out
}

#[cfg(test)]
mod send_region_tests {
    use super::*;
    use std::sync::Arc;

    /// A file region crosses shards as the segment's own `Arc<File>`:
    /// retention on the owner counts it as a reader until the connection's
    /// shard has sent it and dropped it.
    #[test]
    fn a_file_region_crosses_shards_as_the_same_reference() {
        let file = Arc::new(tempfile::tempfile().expect("temp file"));
        let mut answer = ReadAnswer::error(0);
        answer.regions = vec![
            Region::Cached(Bytes::from_static(b"cached")),
            Region::File {
                file: file.clone(),
                position: 0,
                len: 10,
            },
        ];
        answer.bytes = 16;
        let sent = ShardResponse::Read(vec![answer]);
        assert_eq!(Arc::strong_count(&file), 2);
        let local = std::thread::spawn(move || match sent {
            ShardResponse::Read(list) => list.into_iter().map(local_read).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        })
        .join()
        .expect("other thread");
        assert_eq!(local[0].parts.len(), 2);
        assert_eq!(local[0].bytes, 16);
        assert_eq!(Arc::strong_count(&file), 2, "held by the sending side");
        drop(local);
        assert_eq!(Arc::strong_count(&file), 1);
    }
}
