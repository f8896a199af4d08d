//! The cluster in a deterministic simulator (see `world`): every run is
//! one seed; plain, idempotent and transactional acks=all producers write
//! (`idempotence`, `txn`, `txn_client`), consumers in a group commit
//! offsets (`groups`), the broker's transaction and group coordinator
//! cores serve them from replicated logs, admin
//! operations (reassignments, preferred leader elections) run, faults (kill
//! -9 with the unflushed tail lost, cut links, ZooKeeper session expiry,
//! a broker cut from ZooKeeper while still serving) come from the seed,
//! time is simulated, and the invariants are checked after every step. A
//! failing seed prints its trace and the command that replays it.
//!
//! - `SHARDLOG_SIM_SEEDS=N`: how many seeds (CI's default below), from
//!   `SHARDLOG_SIM_FIRST_SEED` (1): a long run goes in chunks;
//! - `SHARDLOG_SIM_SEED=S`: replay seed S alone;
//! - `SHARDLOG_SIM_TRACE=1`: print every run's trace;
//! - `SHARDLOG_SIM_LOG=<filter>`: the brokers' log lines too;
//! - `SHARDLOG_SIM_MUTATION=<name>`: break one rule on purpose
//!   (`shardlog::types::mutation`): the run must end with a violation.
//!
//! It ends with a line `simulated N seeds, V violations`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod admin;
mod check;
mod coordinator_log;
mod groups;
mod idempotence;
mod replica;
mod replication;
mod shape;
mod txn;
mod txn_check;
mod txn_client;
mod world;

use shardlog::types::mutation::{self, Mutation};
use world::{Config, World};

/// Seeds CI runs (about half a minute).
const CI_SEEDS: u64 = 150;

/// Seeds that found a defect, run first whatever the count asked:
/// - 7: a bounced broker (ZooKeeper session expired, registered again)
///   that was the only ISR member of a partition it led left it leaderless
///   for good: the controller's `processBrokerChange` kept it live during
///   its `onBrokerFailure`, so the partition never went offline and its
///   `onBrokerStartup` elected nothing (the leader was -1, the ISR [3]);
/// - 38, 66, 92: an AlterPartition whose answer was lost with the
///   controller's connection: the leader dropped its pending change while
///   the controller had written it, and kept an ISR other than
///   ZooKeeper's with nothing more to propose (the ISR never full again).
///   The broker's AlterPartition sender now sends such a change again
///   until a controller answers it, as Kafka's `AlterPartitionManager`;
/// - 16331 (shape 2): the simulator's own model of the AlterPartition
///   driver took an answer to a change proposed under an earlier leader
///   epoch as the answer to the pending one and cleared it, so the HW
///   moved past a replica whose expansion then committed (the broker's
///   `Partition::on_isr_change_answer` ignores such an answer; the model
///   now does too);
/// - 53537 (shape 3): a leader cut from ZooKeeper whose expansion the
///   controller wrote (answer lost) had its resend fenced by a newer
///   leader epoch; it cleared the pending change, the joining replica left
///   its lag window, and the HW moved over the old ISR alone: a record
///   acknowledged with acks=all was lost under the new leader. Kafka's
///   `Partition.handleAlterPartitionError` keeps the change pending after
///   FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION (the HW keeps counting
///   the maximal ISR) until LeaderAndIsr; the broker now does too;
/// - 43 (shape 4): a CompleteCommit append that failed
///   (the log partition's ISR below min.insync.replicas) was dropped by
///   the transaction coordinator's core: the id stayed in PrepareCommit,
///   its producer answered CONCURRENT_TRANSACTIONS for good. Kafka's
///   `TransactionMarkerChannelManager` appends it again until written;
///   the core now keeps it for `retry_failed_appends`;
/// - 2843 (shape 4; 2150 too): a new coordinator loaded its log past the
///   HW, answered AddPartitionsToTxn from an Ongoing record no one had
///   acknowledged, and that tail was lost with the next leader: the next
///   coordinator answered the producer's EndTxn(commit) NONE from the
///   previous transaction's CompleteCommit, and the transaction was
///   aborted. Coordinators now load once the HW reached their leader
///   epoch's start (`internal_log::replay`);
/// - 12182 (shape 5): a broker cut off from the controller got the
///   LeaderAndIsr of leader epochs 4–6 of `__transaction_state` after the
///   link healed, when epoch 7 led elsewhere; its HW already covered epoch
///   5's start, so it loaded an old log and re-sent the ABORT markers of a
///   transaction completed since, with a coordinator epoch (5) above the
///   one the partition had seen: a later transaction of the same producer
///   epoch, then committed, was aborted in that partition. Coordinators
///   now load only once ZooKeeper's partition state names them leader in
///   that epoch (`ControlShard::confirm_leadership`).
///
/// Each with the shape ([`world::Config::shape`]) it was found in.
const REGRESSION_SEEDS: &[(u64, u8)] = &[
    (7, 1),
    (38, 1),
    (66, 1),
    (92, 1),
    (16331, 2),
    (53537, 3),
    (39, 4),
    (43, 4),
    (2843, 4),
    (12182, 5),
];

/// How long one seed may take on the wall clock (a debug build runs one
/// in about 0.2 s): past it the seed is reported as hung instead of
/// holding the test (and CI) forever.
const SEED_WATCHDOG: std::time::Duration = std::time::Duration::from_secs(120);

/// One seed under the watchdog.
async fn run_seed(seed: u64, cfg: &Config) -> Result<usize, String> {
    let run = run_seed_unguarded(seed, cfg);
    let watchdog = async {
        glommio::timer::sleep(SEED_WATCHDOG).await;
        Err(format!(
            "seed {seed}: not finished after {SEED_WATCHDOG:?} of wall-clock time: a step awaits something nothing will wake"
        ))
    };
    futures_lite::future::or(run, watchdog).await
}

/// One seed: faults, then healed, then the liveness check.
async fn run_seed_unguarded(seed: u64, cfg: &Config) -> Result<usize, String> {
    let full = std::env::var_os("SHARDLOG_SIM_TRACE").is_some();
    let tail = if full { usize::MAX } else { 60 };
    let mut w = World::new(seed, cfg.clone()).await;
    for _ in 0..cfg.fault_steps {
        if let Err(v) = w.step(true).await {
            return Err(w.report(&v, tail));
        }
    }
    w.heal().await;
    for _ in 0..cfg.heal_steps {
        if let Err(v) = w.step(false).await {
            return Err(w.report(&v, tail));
        }
    }
    if full {
        for line in &w.trace {
            println!("{line}");
        }
    }
    let healed = w.check_healed().await;
    w.stop_all();
    match healed {
        Ok(()) => Ok(w.acked.len()),
        Err(v) => Err(w.report(&v, tail)),
    }
}

fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{key} must be a number, not {v:?}"))
    })
}

/// The mutation named by `SHARDLOG_SIM_MUTATION`; an unknown name lists
/// the known ones and fails.
fn mutation_from_env() -> Option<Mutation> {
    let name = std::env::var("SHARDLOG_SIM_MUTATION").ok()?;
    match mutation::ALL.iter().find(|(n, _)| *n == name) {
        Some((_, m)) => Some(*m),
        None => {
            let names: Vec<&str> = mutation::ALL.iter().map(|(n, _)| *n).collect();
            println!("mutations: {}", names.join(", "));
            panic!("unknown SHARDLOG_SIM_MUTATION {name:?}");
        }
    }
}

/// Run `seeds`, in order; the violations' reports.
fn simulate(seeds: &[u64], cfg: &Config, stop_at_first: bool) -> (usize, Vec<String>, usize) {
    let seeds = seeds.to_vec();
    let cfg = cfg.clone();
    glommio::LocalExecutorBuilder::default()
        .make()
        .expect("executor")
        .run(async move {
            let (mut ran, mut failed, mut acked) = (0, Vec::new(), 0);
            for seed in seeds {
                ran += 1;
                match run_seed(seed, &cfg).await {
                    Ok(n) => acked += n,
                    Err(report) => {
                        let shape = if cfg.generation == world::SHAPES {
                            String::new()
                        } else {
                            format!(" (failed in the simulator's shape {})", cfg.generation)
                        };
                        failed.push(format!(
                            "{report}  replay: SHARDLOG_SIM_SEED={seed} cargo test --test sim -- --nocapture{shape}"
                        ));
                        if stop_at_first {
                            break;
                        }
                    }
                }
            }
            (ran, failed, acked)
        })
}

/// The mutations switch is process-wide: one test at a time touches it.
static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `SHARDLOG_SIM_LOG=<filter>`: the brokers' own log lines (e.g.
/// `shardlog::controller=info`), for a replay.
fn init_log() {
    if let Ok(filter) = std::env::var("SHARDLOG_SIM_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_test_writer()
            .try_init();
    }
}

#[test]
fn simulated_seeds_keep_every_invariant() {
    let _one = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    init_log();
    let m = mutation_from_env();
    mutation::enable_for_simulation(m);
    let seeds: Vec<u64> = match env_u64("SHARDLOG_SIM_SEED") {
        Some(s) => vec![s],
        None => {
            let n = env_u64("SHARDLOG_SIM_SEEDS").unwrap_or(CI_SEEDS);
            let first = env_u64("SHARDLOG_SIM_FIRST_SEED").unwrap_or(1);
            (first..first + n).collect()
        }
    };
    let started = std::time::Instant::now();
    // The regression seeds first, in the shape each was found in; a
    // replay of one seed runs it in every shape.
    let replay = env_u64("SHARDLOG_SIM_SEED").is_some();
    let mut runs: Vec<(Vec<u64>, Config)> = (1..=world::SHAPES)
        .map(|g| {
            let seeds: Vec<u64> = if replay {
                seeds.clone()
            } else {
                REGRESSION_SEEDS
                    .iter()
                    .filter(|(_, shape)| *shape == g)
                    .map(|(s, _)| *s)
                    .collect()
            };
            (seeds, Config::shape(g))
        })
        .collect();
    if !replay {
        runs.push((seeds, Config::default()));
    }
    let (mut ran, mut failed, mut acked) = (0, Vec::new(), 0);
    for (seeds, cfg) in runs {
        let (r, f, a) = simulate(&seeds, &cfg, m.is_some());
        ran += r;
        failed.extend(f);
        acked += a;
        if m.is_some() && !failed.is_empty() {
            break;
        }
    }
    mutation::enable_for_simulation(None);
    for f in &failed {
        println!("{f}");
    }
    println!(
        "simulated {ran} seeds, {} violations ({acked} records acknowledged, {:.1} s)",
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failed.is_empty(),
        "{} seeds violated an invariant",
        failed.len()
    );
}

/// Each planted defect is caught within the seeds stated for it.
#[test]
fn every_planted_mutation_is_caught() {
    if std::env::var("SHARDLOG_SIM_MUTATION").is_ok() || std::env::var("SHARDLOG_SIM_SEED").is_ok()
    {
        return; // a replay or a chosen mutation: the other test runs it
    }
    let _one = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    const WITHIN: u64 = 20;
    let seeds: Vec<u64> = (1..=WITHIN).collect();
    for (name, m) in mutation::ALL {
        mutation::enable_for_simulation(Some(*m));
        let (ran, failed, _) = simulate(&seeds, &Config::default(), true);
        mutation::enable_for_simulation(None);
        assert!(
            !failed.is_empty(),
            "mutation {name}: no violation in {ran} seeds"
        );
        println!(
            "mutation {name}: caught at seed {ran}: {}",
            failed[0].lines().next().unwrap_or("")
        );
    }
}
