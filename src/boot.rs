//! `[io]` Process boot: bind the listeners, start one pinned glommio
//! executor per data shard plus the control executor, join them into the
//! mesh, announce readiness, and stop cleanly on SIGINT/SIGTERM.

mod bind;
mod control_store;
mod log_dirs;
mod shard_thread;
mod startup;
mod tls;
mod zk;

use std::net::SocketAddr;
use std::os::fd::{IntoRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use glommio::{LocalExecutorBuilder, Placement};

use std::rc::Rc;

use crate::config::ServerConfig;
use crate::io::affinity::allowed_cpus;
use crate::io::clock::{Clock, SystemClock};
use crate::metadata::Snapshot;
use crate::purgatory::delayed_operation::PurgatoryConfig;
use crate::purgatory::driver::PurgatoryDriver;
use crate::replication::quota::ReplicationQuotas;
use crate::replication::replica_manager::ReplicaManager;
use crate::server;
use crate::server::connection_quotas::ConnectionQuotas;
use crate::server::listener::ListenerInfo;
use crate::server::memory_pool::MemoryPool;
use crate::shard::context::{Role, RolePart, ShardBase, ShardContext, ShardRequest, ShardResponse};
use crate::shard::control::control_shard::ControlShard;
use crate::shard::control::zk_broker;
use crate::shard::data_shard::DataShard;
use crate::shard::group::group_host::GroupHost;
use crate::shard::mesh::{self, Mesh};
use crate::shard::router;
use crate::storage::log_dir::{CheckpointBoard, CheckpointSchedule, Due, LogDirs};
use crate::types::ShardId;
use startup::Phase;

/// Registered io_uring buffer memory of the control shard (off the data
/// path: it writes no segments).
const CONTROL_IO_MEMORY_BYTES: usize = crate::storage::buffer_pool::REGISTER_FLOOR;
/// Mesh queue length per peer pair.
const MESH_QUEUE_LEN: usize = 1024;
/// How often a data shard looks for the control shard's first snapshot.
const FIRST_SNAPSHOT_POLL: Duration = Duration::from_millis(1);
/// How often shards look at the signal flag.
const SIGNAL_POLL: Duration = Duration::from_millis(50);
/// How often a start that is not done names each shard's phase.
const STARTUP_REPORT_EVERY: Duration = Duration::from_secs(10);

/// What the broker resolved at start (printed in the readiness line).
#[derive(Debug, Clone)]
pub struct BootInfo {
    pub bound: SocketAddr,
    pub shards: usize,
    pub broker_id: i32,
    pub cluster_id: String,
}

/// Run the broker until SIGINT/SIGTERM. Returns after every shard stopped.
pub fn run_broker(config: ServerConfig) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handler")?;
    }
    crate::io::host::keep_freed_memory_mapped();
    crate::io::host::raise_fd_limit();
    run_broker_until(config, stop)
}

/// The memory each data shard registers with io_uring: its reserved write
/// buffers (the batch cache's, see `ReplicaManager::new`) and the writes in
/// flight beyond them, so appends write with `WRITE_FIXED` (see
/// `buffer_pool::registered_bytes`). Each of a shard's three rings
/// registers it, so it counts three times against RLIMIT_MEMLOCK.
fn data_shard_io_memory(config: &ServerConfig, n_shards: usize) -> usize {
    use crate::storage::buffer_pool;
    let budget = usize::try_from(config.shardlog_batch_cache_bytes).unwrap_or(usize::MAX);
    let len = crate::storage::config::write_buffer_bytes(config.shardlog_write_buffer_bytes);
    let reserved = buffer_pool::reservable_bytes(budget, len, n_shards);
    // Writes in flight past the reserved buffers, and a few active
    // partitions' buffers being filled.
    let in_flight = crate::storage::appender::WRITE_BEHIND_BYTES + 8 * len;
    let wanted = buffer_pool::registered_bytes(reserved, in_flight, true);
    let pinned = u64::try_from(wanted * 3 * (n_shards + 1)).unwrap_or(u64::MAX);
    buffer_pool::registered_bytes(reserved, in_flight, crate::io::host::may_pin(pinned))
}

/// Run the broker until `stop` becomes true.
pub fn run_broker_until(mut config: ServerConfig, stop: Arc<AtomicBool>) -> anyhow::Result<()> {
    let allowed = allowed_cpus();
    let n_shards = config.data_shards(allowed.len().max(1));
    let bind::BoundListeners { listeners, sockets } = bind::bind_listeners(&config, n_shards)?;
    // The readiness line names the first listener's address.
    let bound = listeners.first().map(|l| l.addr).context("no listeners")?;

    let dirs = log_dirs::open(&config)?;
    let log_dir = dirs.first().to_path_buf();
    let (broker_id, cluster_id) = if config.zookeeper_connect.is_some() {
        zk::resolve_identity(&config, &dirs)?
    } else {
        let identity = load_or_create_meta(&log_dir, config.broker_id)?;
        log_dirs::spread_meta(&dirs, identity.0, &identity.1)?;
        identity
    };
    config.broker_id = broker_id;
    let snapshot = bind::boot_snapshot(&cluster_id, &config, &listeners);
    let config = Arc::new(config);
    let info = BootInfo {
        bound,
        shards: n_shards,
        broker_id,
        cluster_id,
    };

    let mesh_builder = mesh::builder::<ShardRequest, ShardResponse>(n_shards + 1, MESH_QUEUE_LEN);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let phases = Arc::new(startup::StartupPhases::new(n_shards + 1));
    let data_running = Arc::new(AtomicUsize::new(n_shards));
    let released = Arc::new(AtomicBool::new(
        config.zookeeper_connect.is_none() || !config.controlled_shutdown_enable,
    ));
    let report = Arc::new(Mutex::new(ShutdownReport::default()));
    let checkpoints = Arc::new(CheckpointBoard::new(dirs.clone()));
    let limits = BrokerLimits::from_config(&config)?;
    let broker_tls = tls::broker_tls(&config)?;
    let ssl_listeners = tls::ssl_listeners(&config, listeners.iter().map(|l| &l.info));
    let io_memory = data_shard_io_memory(&config, n_shards);
    let metrics_listener = bind::bind_metrics(&config)?.map(|(fd, _)| fd);
    let (ends_tx, ends_rx) = mpsc::channel();
    // Spawn order defines mesh peer ids: data shards 0..n, control = n.
    for (i, fds) in sockets.into_iter().enumerate() {
        let cpu = config.cpu_for_shard(i, &allowed);
        let shard = ShardSetup {
            role: Role::Data(ShardId(i as u16)),
            n_shards,
            config: config.clone(),
            snapshot: snapshot.clone(),
            log_dir: log_dir.clone(),
            log_dirs: dirs.clone(),
            mesh_builder: mesh_builder.clone(),
            stop: stop.clone(),
            released: released.clone(),
            data_running: data_running.clone(),
            ready: ready_tx.clone(),
            phases: phases.clone(),
            report: report.clone(),
            checkpoints: checkpoints.clone(),
            limits: limits.clone(),
            broker_tls: broker_tls.clone(),
        };
        let mut builder = LocalExecutorBuilder::new(Placement::Fixed(cpu)).io_memory(io_memory);
        // glommio's preempt timer stays at its 100 ms default: a 500 µs
        // timer made 4 of 12 broker starts hang for seconds in the mesh
        // connect (tried 2026-11-30).
        if config.shardlog_stall_detect_ms > 0 {
            builder = builder.detect_stalls(Some(Box::new(StallReport {
                threshold: std::time::Duration::from_millis(config.shardlog_stall_detect_ms),
            })));
        }
        shard_thread::spawn(&format!("shard-{i}"), builder, ends_tx.clone(), move || {
            data_shard_main(shard, fds)
        })
        .with_context(|| format!("starting shard {i} on cpu {cpu}"))?;
    }
    let control = ShardSetup {
        role: Role::Control,
        n_shards,
        config: config.clone(),
        snapshot,
        log_dir,
        log_dirs: dirs,
        mesh_builder,
        stop: stop.clone(),
        released,
        data_running,
        ready: ready_tx,
        phases: phases.clone(),
        report: report.clone(),
        checkpoints: checkpoints.clone(),
        limits,
        broker_tls,
    };
    spawn_control(control, ssl_listeners, metrics_listener, ends_tx)?;

    let startup = startup::wait_ready(&ready_rx, n_shards + 1, &phases, STARTUP_REPORT_EVERY);
    match &startup {
        Ok(()) => announce(&info),
        Err(_) => stop.store(true, Ordering::Relaxed),
    }
    // The shards' threads hold their executors from here on: the process
    // exits from this thread (shard_thread's module comment says why).
    shard_thread::wait_all_stopped(&ends_rx, n_shards + 1)?;
    startup.map_err(|e| anyhow!(e))?;
    finish_shutdown(&report, &checkpoints);
    tracing::info!("shardlog stopped");
    Ok(())
}

/// The control shard is off the data path; on small hosts it shares a core.
fn spawn_control(
    control: ShardSetup,
    ssl_listeners: crate::shard::control::ssl_listeners::SslListeners,
    metrics_listener: Option<OwnedFd>,
    ends_tx: mpsc::Sender<shard_thread::ShardEnd>,
) -> anyhow::Result<()> {
    shard_thread::spawn(
        "control",
        LocalExecutorBuilder::new(Placement::Unbound).io_memory(CONTROL_IO_MEMORY_BYTES),
        ends_tx,
        move || control_shard_main(control, ssl_listeners, metrics_listener),
    )
    .context("starting the control shard")
}

/// The readiness line tests and operators wait for.
fn announce(info: &BootInfo) {
    let line = format!(
        "shardlog: listening on {} with {} shards (broker.id={}, cluster.id={})",
        info.bound, info.shards, info.broker_id, info.cluster_id
    );
    // Plain stderr, whatever RUST_LOG says: tests and scripts wait for it.
    crate::io::console::line(&line);
}

struct ShardSetup {
    role: Role,
    n_shards: usize,
    config: Arc<ServerConfig>,
    snapshot: Snapshot,
    /// The first log dir (the embedded store's, the I/O probe's).
    log_dir: PathBuf,
    log_dirs: Arc<LogDirs>,
    mesh_builder: mesh::Builder<ShardRequest, ShardResponse>,
    stop: Arc<AtomicBool>,
    /// Data shards stop only once this is set too: in ZooKeeper mode with
    /// `controlled.shutdown.enable` the control shard sets it after the
    /// controller moved this broker's leaders (clients keep being served
    /// meanwhile); otherwise it is set from the start.
    released: Arc<AtomicBool>,
    data_running: Arc<AtomicUsize>,
    ready: mpsc::Sender<Result<(), String>>,
    /// Where each shard is in its start (`startup`).
    phases: Arc<startup::StartupPhases>,
    report: Arc<Mutex<ShutdownReport>>,
    /// The log dir's checkpoint files, written from every data shard's
    /// offsets while running and once more at clean shutdown.
    checkpoints: Arc<CheckpointBoard>,
    limits: BrokerLimits,
    /// TLS client configurations of the broker's outbound connections.
    broker_tls: crate::io::broker_stream::BrokerTls,
}

/// The broker-wide limits every shard shares.
#[derive(Clone)]
struct BrokerLimits {
    /// `max.connections` and `max.connections.per.ip`.
    quotas: Arc<ConnectionQuotas>,
    /// `queued.max.request.bytes` (KIP-72).
    request_pool: Arc<MemoryPool>,
    /// The replication quotas (leader and follower side).
    replication_quotas: Arc<ReplicationQuotas>,
}

impl BrokerLimits {
    fn from_config(config: &ServerConfig) -> anyhow::Result<Self> {
        Ok(Self {
            quotas: Arc::new(ConnectionQuotas::from_config(config).map_err(|e| anyhow!(e))?),
            request_pool: Arc::new(MemoryPool::new(config.queued_max_request_bytes)),
            replication_quotas: Arc::new(ReplicationQuotas::new(
                usize::try_from(config.replication_quota_window_num).unwrap_or(11),
                i64::from(config.replication_quota_window_size_seconds.max(1)) * 1000,
            )),
        })
    }
}

/// What data shards hand back when they stop: offsets for the log dir's
/// checkpoint files (one file for all shards, written once) and their
/// zero-copy counters.
#[derive(Debug, Default)]
struct ShutdownReport {
    offsets: Vec<crate::storage::log_dir::PartitionOffsets>,
    zerocopy: crate::io::zerocopy::ZeroCopyStats,
    /// `shardlog.flush.every.append` group commit: appends acknowledged and
    /// fdatasync rounds that covered them.
    durable_appends: u64,
    durable_syncs: u64,
    /// Broker-side Produce latency, all data shards merged.
    produce_latency: crate::histogram::LatencyHistogram,
    tls_handshakes: crate::tls::handshake_stats::HandshakeStats,
}

/// The parts every shard shares, as of boot.
fn shard_base(setup: &ShardSetup, clock: Rc<dyn Clock>) -> ShardBase {
    ShardBase {
        n_shards: setup.n_shards,
        config: setup.config.clone(),
        api_table: server::dispatch::api_table(),
        clock,
        snapshot: setup.snapshot.clone(),
        broker_tls: setup.broker_tls.clone(),
    }
}

/// The control shard's first snapshot, the stored client quotas, this
/// broker's dynamic configs and (with the AclAuthorizer) the ACLs loaded
/// first so that it carries them (its
/// stored passwords re-encoded first when `password.encoder.old.secret`
/// is set).
///
/// The SSL listeners are installed first, so the stored per-broker SSL
/// keys this load applies reach them (KIP-226: Kafka's
/// `DynamicBrokerConfig.initialize` runs before `SocketServer` starts).
async fn first_snapshot(
    control: &crate::shard::control::control_shard::ControlShard,
    config: &crate::config::ServerConfig,
    ssl_listeners: crate::shard::control::ssl_listeners::SslListeners,
) -> Result<crate::metadata::Snapshot, crate::controller::admin_error::AdminError> {
    control.set_ssl_listeners(Rc::new(ssl_listeners));
    control.reload_client_quotas().await;
    control.reload_scram_credentials().await;
    control.reencode_passwords(config).await;
    control.reload_broker_configs(config).await;
    // AclAuthorizer.configure loads every ACL before the broker serves:
    // a store that cannot be read stops the start (never fail open).
    if config.acl_authorizer_enabled() {
        control.load_acls().await?;
    }
    control.admin.next_snapshot().await
}

async fn join_shard(setup: &ShardSetup, base: ShardBase, part: RolePart) -> Rc<ShardContext> {
    let ctx = ShardContext::new(base, part);
    let expected_peer = match setup.role {
        Role::Data(id) => id.index(),
        Role::Control => setup.n_shards,
    };
    match Mesh::join(setup.mesh_builder.clone(), router::mesh_handler(&ctx)).await {
        // Peer ids follow executor creation order; run_broker_until creates
        // data shards 0..n, then the control shard.
        Ok(mesh) if mesh.me() == expected_peer => ctx.set_mesh(mesh),
        Ok(mesh) => {
            let _ = setup.ready.send(Err(format!(
                "{:?} joined the mesh as peer {}, expected {expected_peer}",
                setup.role,
                mesh.me()
            )));
        }
        Err(e) => {
            let _ = setup.ready.send(Err(format!("mesh join failed: {e}")));
        }
    }
    // Signals arrive on another thread; each shard turns the flag into its
    // local trigger (data shards once the control shard released them).
    let (stop, local) = (setup.stop.clone(), ctx.clone());
    let released = (setup.role != Role::Control).then(|| setup.released.clone());
    glommio::spawn_local(async move {
        let stopped = |released: &Option<Arc<AtomicBool>>| {
            stop.load(Ordering::Relaxed)
                && released.as_ref().is_none_or(|r| r.load(Ordering::Acquire))
        };
        while !stopped(&released) {
            glommio::timer::sleep(SIGNAL_POLL).await;
        }
        local.stopping.fire();
    })
    .detach();
    ctx
}

/// A data shard's own part: its partitions (none open yet) and purgatory.
fn data_part(setup: &ShardSetup, id: ShardId, clock: Rc<dyn Clock>) -> DataShard {
    let replicas = Rc::new(ReplicaManager::new(
        setup.n_shards,
        setup.log_dirs.clone(),
        setup.config.clone(),
        clock.clone(),
        setup.limits.replication_quotas.clone(),
        setup.broker_tls.inter_broker.clone(),
    ));
    let purgatory = PurgatoryDriver::new(clock, PurgatoryConfig::default());
    let groups = Rc::new(GroupHost::new(
        GroupHost::config_of(&setup.config),
        setup.config.offsets_topic_num_partitions,
        i64::from(setup.config.offsets_commit_timeout_ms),
    ));
    let txns = Rc::new(crate::shard::txn::txn_host::TxnHost::new(
        &setup.config,
        setup.broker_tls.inter_broker.clone(),
    ));
    DataShard::new(id, setup.n_shards, replicas, purgatory, groups, txns)
}

async fn data_shard_main(setup: ShardSetup, fds: Vec<(OwnedFd, ListenerInfo)>) {
    let Role::Data(id) = setup.role else {
        return;
    };
    let clock: Rc<dyn Clock> = Rc::new(SystemClock::new());
    let me = usize::from(id.0);
    setup.phases.set(me, Phase::Probing);
    // Before any DMA file is opened on this thread (PLATFORM.md), and so
    // before joining the mesh: once joined, the router task applies the
    // control shard's snapshot and opens segments, and a segment opened
    // first (while this probe awaits) would win glommio's IOPOLL probe and
    // turn every later read on this thread into EOPNOTSUPP.
    let primed = crate::io::dma::prime_iopoll_probe(&setup.log_dir).await;
    let part = RolePart::Data(data_part(&setup, id, clock.clone()));
    setup.phases.set(me, Phase::JoiningMesh);
    let ctx = join_shard(&setup, shard_base(&setup, clock), part).await;
    if let Err(e) = primed {
        let _ = setup
            .ready
            .send(Err(format!("log dir {}: {e}", setup.log_dir.display())));
    } else {
        setup.phases.set(me, Phase::StartingDataPath);
        start_data_path(&ctx, &setup).await;
        setup.phases.set(me, Phase::FirstSnapshot);
        // Serve only with the control shard's first snapshot (the stored
        // topics), so a restarted broker never answers from an empty one.
        while ctx.snapshot().version == 0 && !setup.stop.load(Ordering::Relaxed) {
            glommio::timer::sleep(FIRST_SNAPSHOT_POLL).await;
        }
        setup.phases.set(me, Phase::Ready);
        let _ = setup.ready.send(Ok(()));
        // One accept loop per listener; each returns once the shard stops
        // and its connections drained.
        let loops: Vec<_> = fds
            .into_iter()
            .map(|(fd, info)| {
                // SAFETY: `fd` is a bound, listening TCP socket we own;
                // ownership moves into the glommio listener, which closes
                // it on drop.
                let listener = unsafe {
                    <glommio::net::TcpListener as std::os::fd::FromRawFd>::from_raw_fd(
                        fd.into_raw_fd(),
                    )
                };
                glommio::spawn_local(server::listener::serve(
                    ctx.clone(),
                    listener,
                    Rc::new(info),
                    setup.limits.quotas.clone(),
                    setup.limits.request_pool.clone(),
                ))
            })
            .collect();
        for accept_loop in loops {
            accept_loop.await;
        }
        stop_data_path(&ctx, &setup).await;
    }
    setup.data_running.fetch_sub(1, Ordering::AcqRel);
    // Keep answering mesh calls until every shard is done with us.
    while setup.data_running.load(Ordering::Acquire) > 0 {
        glommio::timer::sleep(SIGNAL_POLL).await;
    }
    if let Some(mesh) = ctx.mesh() {
        mesh.close();
    }
}

/// Data shards: the partitions of the current snapshot opened, and the
/// housekeeping timer (`log.flush.*`, `log.retention.check.interval.ms`).
async fn start_data_path(ctx: &Rc<ShardContext>, setup: &ShardSetup) {
    let Some(data) = ctx.data() else {
        return;
    };
    data.sync_partitions(&ctx.snapshot()).await;
    if setup.config.log_cleaner_enable {
        let weak = Rc::downgrade(ctx);
        let replicas = data.replicas.clone();
        crate::storage::cleaner::task::spawn(
            move || replicas.compacted_partitions(),
            (
                data.replicas.log_dirs().clone(),
                data.replicas.storage().max_dirty_ratio().clone(),
            ),
            setup.config.clone(),
            setup.n_shards,
            ctx.clock.clone(),
            move || weak.upgrade().is_none_or(|c| c.stopping.is_fired()),
        );
    }
    let retention_every_ms = setup.config.log_retention_check_interval_ms.max(1000);
    // Kafka's ReplicaManager schedules `isr-expiration` every
    // `replica.lag.time.max.ms / 2`.
    let isr_check_every_ms = (setup.config.replica_lag_time_max_ms / 2).max(100);
    let config = &setup.config;
    let mut schedule = CheckpointSchedule::new(
        config.log_flush_offset_checkpoint_interval_ms,
        config.replica_high_watermark_checkpoint_interval_ms,
        config.log_flush_start_offset_checkpoint_interval_ms,
        ctx.clock.wall_ms(),
    );
    let mut flusher = crate::storage::flusher::FlusherSchedule::new(
        config.log_flush_scheduler_interval_ms,
        ctx.clock.wall_ms(),
    );
    let checkpoints = setup.checkpoints.clone();
    let weak = Rc::downgrade(ctx);
    glommio::spawn_local(async move {
        let mut last_retention = 0i64;
        let mut last_isr_check = 0i64;
        loop {
            glommio::timer::sleep(HOUSEKEEPING_EVERY).await;
            let Some(ctx) = weak.upgrade() else { return };
            if ctx.stopping.is_fired() {
                return;
            }
            let now = ctx.clock.wall_ms();
            let retention = now - last_retention >= retention_every_ms;
            if retention {
                last_retention = now;
            }
            if let Some(data) = ctx.data() {
                if data.apply_offline_dirs() {
                    crate::shard::router::maybe_send_notes(&ctx);
                }
                data.replicas
                    .housekeeping(now, retention, flusher.due(now))
                    .await;
                if now - last_isr_check >= isr_check_every_ms {
                    last_isr_check = now;
                    data.maybe_shrink_isrs(now);
                    crate::shard::router::maybe_send_isr_changes(&ctx);
                }
                // A truncation or deletion on this shard writes all three
                // files now, from whichever shard it happened on.
                let (due, anyone) = if data.replicas.storage().take_checkpoint_request() {
                    (Due::ALL, true)
                } else {
                    (schedule.due(now), false)
                };
                if due.any() {
                    write_checkpoints(&ctx, data, &checkpoints, due, anyone).await;
                }
            }
        }
    })
    .detach();
}

/// A checkpoint round: this shard posts its offsets; the first data shard
/// (or, when `anyone`, this one) writes the files from every shard's last
/// post, off the reactor (each file is written and fsynced, then renamed).
async fn write_checkpoints(
    ctx: &ShardContext,
    data: &DataShard,
    board: &Arc<CheckpointBoard>,
    due: Due,
    anyone: bool,
) {
    board.post(ctx.peer_id(), data.replicas.checkpoint_offsets().await);
    if ctx.peer_id() != 0 && !anyone {
        return;
    }
    let board = board.clone();
    match glommio::executor()
        .spawn_blocking(move || board.write(due))
        .await
    {
        Ok(()) => {}
        Err(e) => tracing::error!(error = %e, "writing offset checkpoints"),
    }
}

/// How often flush timers and retention are looked at.
const HOUSEKEEPING_EVERY: Duration = Duration::from_millis(100);

/// Clean shutdown of a data shard's logs (flush, indexes, clean marker).
async fn stop_data_path(ctx: &Rc<ShardContext>, setup: &ShardSetup) {
    let Some(data) = ctx.data() else {
        return;
    };
    let offsets = data.replicas.close_all().await;
    let stats = ctx.stats.zerocopy.get();
    if let Ok(mut report) = setup.report.lock() {
        report.offsets.extend(offsets);
        let (appends, syncs) = data.replicas.durable_counts();
        report.durable_appends += appends;
        report.durable_syncs += syncs;
        report
            .produce_latency
            .add(&ctx.stats.produce_latency.borrow());
        let z = &mut report.zerocopy;
        z.bytes_sendmsg += stats.bytes_sendmsg;
        z.bytes_sendfile += stats.bytes_sendfile;
        z.bytes_copied += stats.bytes_copied;
        z.bytes_glommio += stats.bytes_glommio;
        z.bytes_tls += stats.bytes_tls;
        report
            .tls_handshakes
            .merge(&ctx.stats.tls_handshakes.borrow());
    }
}

/// After every shard stopped: the log dir's checkpoint files, and the
/// zero-copy counters line (operators and tests read it).
fn finish_shutdown(report: &Mutex<ShutdownReport>, checkpoints: &CheckpointBoard) {
    let Ok(report) = report.lock() else { return };
    if let Err(e) = checkpoints.write_final(&report.offsets) {
        tracing::error!(error = %e, "writing offset checkpoints");
    }
    if report.durable_appends > 0 {
        crate::io::console::line(&format!(
            "durable: appends={} syncs={}",
            report.durable_appends, report.durable_syncs
        ));
    }
    if let Some(line) = crate::server::request_metrics::produce_line(&report.produce_latency) {
        crate::io::console::line(&line);
    }
    if let Some(line) = report.tls_handshakes.line() {
        crate::io::console::line(&line);
    }
    let z = report.zerocopy;
    crate::io::console::line(&format!(
        "zerocopy: sendmsg={} sendfile={} copied={} glommio={} tls={}",
        z.bytes_sendmsg, z.bytes_sendfile, z.bytes_copied, z.bytes_glommio, z.bytes_tls
    ));
}

/// `ssl_listeners`: the SSL listeners' TLS, reconfigured by the dynamic
/// broker configs (installed before the first snapshot, whose load
/// applies the stored per-broker SSL keys, as Kafka's
/// `DynamicBrokerConfig.initialize` does before `SocketServer` starts).
async fn control_shard_main(
    setup: ShardSetup,
    ssl_listeners: crate::shard::control::ssl_listeners::SslListeners,
    metrics_listener: Option<OwnedFd>,
) {
    let clock: Rc<dyn Clock> = Rc::new(SystemClock::new());
    let me = setup.n_shards;
    let mut control_metrics = crate::metrics::control::ControlMetrics::default();
    let (opened, zk_session) = control_store::open(&setup, &clock, &mut control_metrics).await;
    // Join the mesh either way: data shards wait for every peer.
    let (part, started) = match opened {
        Ok(admin) => {
            let mut control = ControlShard::new(
                admin,
                crate::types::BrokerId(setup.config.broker_id),
                setup.config.zookeeper_connect.is_some(),
                setup.log_dirs.clone(),
            );
            control.metrics = Rc::new(control_metrics);
            (RolePart::Control(Box::new(control)), Ok(()))
        }
        Err(e) => (RolePart::Bare(Role::Control), Err(e)),
    };
    setup.phases.set(me, Phase::JoiningMesh);
    let ctx = join_shard(&setup, shard_base(&setup, clock), part).await;
    setup.phases.set(me, Phase::FirstSnapshot);
    spawn_memory_report(setup.config.shardlog_memory_report_ms);
    log_dirs::spawn_failure_watch(
        setup.log_dirs.clone(),
        zk_session.clone(),
        setup.config.broker_id,
        setup.stop.clone(),
    );
    // The first snapshot (stored topics) reaches every data shard before
    // readiness, so a restarted broker serves its topics at once.
    let started = match (started, ctx.control()) {
        (Ok(()), Some(control)) => {
            match first_snapshot(control, &setup.config, ssl_listeners).await {
                Ok(snapshot) => {
                    router::publish(&ctx, snapshot).await;
                    Ok(())
                }
                Err(e) => Err(format!("metadata store: {e}")),
            }
        }
        (started, _) => started,
    };
    // ZooKeeper mode: register and join the election before serving.
    setup.phases.set(me, Phase::Registering);
    let mut registered = None;
    let started = match (started, zk_session) {
        (Ok(()), Some(store)) => {
            match zk_broker::start_broker(&ctx, store, &setup.snapshot, ctx.clock.wall_ms()).await {
                Ok(b) => {
                    zk_broker::install_controller_queue(&ctx, &b);
                    spawn_change_followers(&ctx);
                    registered = Some(b);
                    Ok(())
                }
                Err(e) => Err(e),
            }
        }
        (started, _) => started,
    };
    serve_metrics(&ctx, started.is_ok(), metrics_listener);
    setup.phases.set(me, Phase::Ready);
    let _ = setup.ready.send(started);
    ctx.stopping.wait().await;
    if registered.is_some() && setup.config.controlled_shutdown_enable {
        zk_broker::controlled_shutdown(&ctx).await;
    }
    setup.released.store(true, Ordering::Release);
    if let Some(b) = registered {
        b.shutdown().await;
    }
    // Data shards may still call us while draining their connections.
    while setup.data_running.load(Ordering::Acquire) > 0 {
        glommio::timer::sleep(SIGNAL_POLL).await;
    }
    if let Some(mesh) = ctx.mesh() {
        mesh.close();
    }
}

/// `shardlog.metrics.listener`: the control shard serves `/metrics` on
/// `fd` once the broker started.
fn serve_metrics(ctx: &Rc<ShardContext>, started: bool, fd: Option<OwnedFd>) {
    let (true, Some(fd)) = (started, fd) else {
        return;
    };
    // SAFETY: `fd` is a bound, listening TCP socket we own; the glommio
    // listener takes it over and closes it on drop.
    let listener = unsafe {
        <glommio::net::TcpListener as std::os::fd::FromRawFd>::from_raw_fd(fd.into_raw_fd())
    };
    glommio::spawn_local(server::metrics_http::serve(ctx.clone(), listener)).detach();
}

/// Every ZooKeeper-mode broker follows /config/changes and, with the
/// AclAuthorizer, the ACL change notifications.
fn spawn_change_followers(ctx: &Rc<ShardContext>) {
    glommio::spawn_local(crate::shard::control::config_changes::follow(ctx.clone())).detach();
    if ctx.config.acl_authorizer_enabled() {
        glommio::spawn_local(crate::shard::control::acl_changes::follow(ctx.clone())).detach();
    }
}

/// Kafka's first generated broker id (`reserved.broker.max.id` 1000 + 1).
const FIRST_GENERATED_BROKER_ID: i32 = 1001;

/// Read `<log.dir>/meta.properties` (Kafka's v0 format: version, broker.id,
/// cluster.id) or create it. The cluster id persists across restarts;
/// a broker.id that disagrees with the file is refused, as Kafka does
/// (InconsistentBrokerIdException).
fn load_or_create_meta(log_dir: &Path, configured_broker_id: i32) -> anyhow::Result<(i32, String)> {
    let path = log_dir.join("meta.properties");
    let stored = log_dirs::read_meta(log_dir);
    if let Some(cluster_id) = stored.cluster_id {
        let broker_id = match (configured_broker_id, stored.broker_id) {
            (-1, Some(id)) => id,
            (-1, None) => FIRST_GENERATED_BROKER_ID,
            (configured, Some(id)) if configured != id => bail!(
                "broker.id={configured} does not match broker.id={id} in {}",
                path.display()
            ),
            (configured, _) => configured,
        };
        return Ok((broker_id, cluster_id));
    }
    let broker_id = if configured_broker_id == -1 {
        FIRST_GENERATED_BROKER_ID
    } else {
        configured_broker_id
    };
    let cluster_id = new_cluster_id(uuid::Uuid::new_v4());
    log_dirs::write_meta(log_dir, broker_id, &cluster_id)?;
    Ok((broker_id, cluster_id))
}

/// Kafka's cluster id form: the UUID's 16 bytes in URL-safe base64 without
/// padding (22 characters), as `Uuid.toString()` prints it.
pub fn new_cluster_id(uuid: uuid::Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = uuid.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_ids_are_22_url_safe_base64_chars() {
        // Uuid 0x00..0xff pattern checked against Java's Base64 url encoder.
        let id = new_cluster_id(uuid::Uuid::from_bytes([0xfb; 16]));
        assert_eq!(id, "-_v7-_v7-_v7-_v7-_v7-w");
        assert_eq!(new_cluster_id(uuid::Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
    }

    #[test]
    fn meta_properties_keep_the_cluster_id_and_guard_the_broker_id() {
        let dir = tempfile::tempdir().unwrap();
        let (id, cluster) = load_or_create_meta(dir.path(), 4).unwrap();
        assert_eq!(id, 4);
        assert_eq!(
            load_or_create_meta(dir.path(), 4).unwrap(),
            (4, cluster.clone())
        );
        assert_eq!(load_or_create_meta(dir.path(), -1).unwrap(), (4, cluster));
        assert!(load_or_create_meta(dir.path(), 5).is_err());
    }
}

/// `shardlog.memory.report.ms`: the heap the process holds live beside its
/// RssAnon, for leak hunts. RssAnon keeps the heap's high-water mark, since
/// freed memory stays mapped ([`crate::io::host::keep_freed_memory_mapped`]): a burst of
/// requests leaves a step in it that is no leak; the live heap falls back.
fn spawn_memory_report(every_ms: u64) {
    if every_ms == 0 {
        return;
    }
    let every = Duration::from_millis(every_ms);
    glommio::spawn_local(async move {
        loop {
            glommio::timer::sleep(every).await;
            // SAFETY: mallinfo2 only reads the allocator's counters.
            let info = unsafe { libc::mallinfo2() };
            let rss_anon_kib = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    let line = s.lines().find(|l| l.starts_with("RssAnon:"))?;
                    line.split_whitespace().nth(1)?.parse::<u64>().ok()
                })
                .unwrap_or(0);
            tracing::info!(
                heap_live_bytes = info.uordblks + info.hblkhd,
                heap_held_bytes = info.arena + info.hblkhd,
                rss_anon_kib,
                "memory report"
            );
        }
    })
    .detach();
}

/// `shardlog.stall.detect.ms`: glommio's stall detector with our threshold,
/// logging the over-budget task queue's backtrace as a warning.
#[derive(Debug)]
struct StallReport {
    threshold: std::time::Duration,
}

impl glommio::StallDetectionHandler for StallReport {
    fn threshold(
        &self,
        _queue: glommio::TaskQueueHandle,
        _max_expected_runtime: std::time::Duration,
    ) -> Option<std::time::Duration> {
        Some(self.threshold)
    }

    // stall(): glommio's default, a `log::warn!` with the backtrace, which
    // tracing-subscriber's log bridge prints like our own warnings.
}
