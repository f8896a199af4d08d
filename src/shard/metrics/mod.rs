//! `[drv]` A `/metrics` scrape across the shards. The scraping shard (the
//! control shard, which serves the metrics listener) asks every data
//! shard for its [`ShardReport`] over the mesh and merges them: a data
//! shard copies its plain counters and reads its partitions' gauges
//! between two of its own tasks, so nothing on its produce or fetch path
//! waits for a lock or touches an atomic.

use std::rc::Rc;

use super::context::{ShardContext, ShardRequest, ShardResponse};
use crate::metrics::report::{
    BatchCacheStats, BrokerReport, ControllerGauges, LogDirState, SendPathBytes, ShardReport,
};
use crate::metrics::shard::ExecutorTotals;

/// This data shard's part of a scrape (`None` on the control shard).
pub async fn collect(ctx: &Rc<ShardContext>) -> Option<ShardReport> {
    let data = ctx.data()?;
    ctx.stats
        .metrics
        .on_executor(&executor_delta(), ctx.clock.mono_ms());
    let mut counters = ctx.stats.metrics.counters(ctx.clock.mono_ms());
    let (bytes_in, reassignment_in) = data.replicas.replication_bytes_in();
    counters.broker.replication_bytes_in += bytes_in;
    counters.broker.reassignment_bytes_in += reassignment_in;
    let snapshot = ctx.snapshot();
    let mut partitions = data
        .replicas
        .partition_gauges(
            ctx.clock.wall_ms(),
            i64::from(ctx.config.transaction_max_timeout_ms),
        )
        .await;
    for p in &mut partitions {
        p.reassigning = snapshot.is_reassigning(&p.topic, p.partition);
    }
    let (parked_produce, parked_fetch) = data.purgatory.parked();
    let z = ctx.stats.zerocopy.get();
    let batch_cache = {
        let cache = data.replicas.storage().cache().borrow();
        let reads = cache.reads();
        BatchCacheStats {
            hits: reads.hits,
            hit_bytes: reads.hit_bytes,
            misses: reads.misses,
            used_bytes: cache.used_bytes() as u64,
        }
    };
    Some(ShardReport {
        shard: data.shard.0,
        counters,
        partitions,
        parked_produce: parked_produce as u64,
        parked_fetch: parked_fetch as u64,
        committed: data.groups.committed_offsets(),
        controller: (data.shard.0 == 0).then(|| controller_gauges(ctx)),
        send_paths: SendPathBytes {
            sendmsg: z.bytes_sendmsg,
            sendfile: z.bytes_sendfile,
            copied: z.bytes_copied,
            uring: z.bytes_glommio,
            tls: z.bytes_tls,
        },
        batch_cache,
        storage: data.replicas.storage().timings().snapshot(),
        follower_lags: data.replicas.follower_lags(),
        min_fetch_rate: data.replicas.min_fetch_rate(),
        groups: data.groups.group_counts(),
        executor: ctx.stats.metrics.executor(),
        log_dirs: if data.shard.0 == 0 {
            let dirs = data.replicas.log_dirs();
            (0..dirs.all().len())
                .map(|i| LogDirState {
                    path: dirs.absolute(i),
                    online: dirs.is_online(i),
                })
                .collect()
        } else {
            Vec::new()
        },
        max_dirty_ratio: data.replicas.storage().max_dirty_ratio().get(),
    })
}

/// glommio's executor and io_uring figures since the last call (it hands
/// them out and resets them; nothing else on this executor asks).
fn executor_delta() -> ExecutorTotals {
    let ex = glommio::executor();
    let stats = ex.executor_stats();
    let rings = ex.io_stats().all_rings();
    let (reads, _) = rings.file_reads();
    let (buffered_reads, _) = rings.file_buffered_reads();
    let (writes, write_bytes) = rings.file_writes();
    let (buffered_writes, buffered_write_bytes) = rings.file_buffered_writes();
    ExecutorTotals {
        busy_ns: u64::try_from(stats.total_runtime().as_nanos()).unwrap_or(u64::MAX),
        tasks_executed: stats.tasks_executed(),
        scheduler_runs: stats.scheduler_runs(),
        uring_file_reads: reads + buffered_reads,
        uring_file_writes: writes + buffered_writes,
        uring_file_write_bytes: write_bytes + buffered_write_bytes,
        ..ExecutorTotals::default()
    }
}

/// Kafka's `KafkaController` gauges from the metadata this broker holds:
/// it is the active controller when its metadata names it (the
/// controller's UpdateMetadata, or the embedded store's single broker);
/// the counts are then those of the cluster view (a partition without a
/// leader is offline).
fn controller_gauges(ctx: &ShardContext) -> ControllerGauges {
    let snapshot = ctx.snapshot();
    let active = snapshot.controller_id.0 == ctx.config.broker_id;
    let mut g = ControllerGauges {
        active,
        ..ControllerGauges::default()
    };
    if !active {
        return g;
    }
    for topic in snapshot.cluster_topics() {
        g.global_topics += 1;
        for p in &topic.partitions {
            if p.leader.0 >= 0 {
                g.global_partitions += 1;
            } else {
                g.offline_partitions += 1;
            }
        }
    }
    g.active_brokers = snapshot.brokers.len() as u64;
    g
}

/// One scrape: every data shard's report (asked over the mesh) and the
/// process's figures.
pub async fn scrape(ctx: &Rc<ShardContext>) -> BrokerReport {
    let mut shards = Vec::with_capacity(ctx.n_shards);
    for shard in 0..ctx.n_shards {
        match ctx.call(shard, ShardRequest::Metrics).await {
            Ok(ShardResponse::Metrics(report)) => shards.push(*report),
            Ok(_) => {}
            Err(e) => tracing::debug!(shard, error = %e, "metrics: a shard did not answer"),
        }
    }
    let mut report = BrokerReport::new(shards, crate::io::process::read());
    report.listeners = ctx
        .config
        .listeners
        .iter()
        .map(|l| l.name.clone())
        .collect();
    if let Some(control) = ctx.control() {
        report.control = control.metrics.report(ctx.clock.mono_ms());
    }
    report
}
