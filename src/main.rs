//! `shardlog` command line: `shardlog broker|...` → Config → `boot`.
//!
//! Each subcommand is a variant of [`Command`] and one arm in `main`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use shardlog::alloc::LazyHugeAllocator;
use shardlog::config::{parse_override, ServerConfig, SAMPLE_SERVER_PROPERTIES};

// The one process-wide static of the binary: Rust's `#[global_allocator]`
// must be a static item. It holds no state (a unit struct), so no shard
// shares anything through it.
#[global_allocator]
static ALLOCATOR: LazyHugeAllocator = LazyHugeAllocator;

#[derive(Parser)]
#[command(
    name = "shardlog",
    version,
    about = "Kafka-wire-compatible thread-per-core broker"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a broker (Kafka's `kafka-server-start.sh server.properties`).
    Broker(BrokerArgs),
    /// Load generator: acks × linger.ms × batch.size sweeps against any Kafka broker.
    Loadgen(Box<shardlog::loadgen::LoadgenArgs>),
    /// The main job: a broker on embedded metadata plus a load-generator sweep.
    Bench(Box<shardlog::loadgen::bench::BenchArgs>),
}

#[derive(Args)]
struct BrokerArgs {
    /// server.properties to load (default: the bundled sample config).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override a config key, e.g. `--override broker.id=2` (repeatable).
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // A log line stderr cannot take (a full disk under a redirected
        // log) is dropped, as log4j's appenders drop it: tracing's report
        // of the failed write goes through `eprintln!`, which panics, and
        // the panic report logs again, which aborts the broker.
        .log_internal_errors(false)
        .init();
    install_panic_report();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Broker(args) => broker(args),
        Command::Loadgen(args) => shardlog::loadgen::run(*args),
        Command::Bench(args) => shardlog::loadgen::bench::run(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shardlog: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Every panic, in any thread, also goes to the log with its thread name
/// and a backtrace (whatever RUST_BACKTRACE says), before Rust's own
/// message: a broker that exits on its own must say why (two
/// exits with status 101 and no panic line captured). A request handler's
/// panic is caught and fails only that request; this report says where.
fn install_panic_report() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("<unnamed>");
        let backtrace = std::backtrace::Backtrace::force_capture();
        tracing::error!("panic in thread '{name}': {info}\nbacktrace:\n{backtrace}");
        default(info);
    }));
}

fn broker(args: BrokerArgs) -> anyhow::Result<()> {
    let text = match &args.config {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => SAMPLE_SERVER_PROPERTIES.to_owned(),
    };
    let overrides = args
        .overrides
        .iter()
        .map(|o| parse_override(o))
        .collect::<Result<Vec<_>, _>>()?;
    let loaded = ServerConfig::from_properties(&text, &overrides)?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    shardlog::boot::run_broker(loaded.config)
}

#[cfg(test)]
mod tests {
    /// The bin's test harness runs with `LazyHugeAllocator` installed.
    #[test]
    fn a_hostile_capacity_reserves_address_space_instead_of_aborting() {
        // What the crate does for an array count of i32::MAX with
        // 80-byte elements: ~170 GiB, more than RAM + swap here.
        let mut v: Vec<[u8; 80]> = Vec::with_capacity(i32::MAX as usize);
        assert!(v.capacity() >= i32::MAX as usize);
        v.extend(std::iter::repeat_n([7u8; 80], 1000));
        // Growing past the capacity moves the contents intact (mremap, no copy).
        v.reserve(v.capacity() - v.len() + 1);
        assert_eq!(v[999], [7u8; 80]);
        assert_eq!(v.len(), 1000);
    }

    #[test]
    fn small_and_mid_sized_allocations_round_trip() {
        let mut v = vec![1u8; 10];
        v.resize(3 << 20, 2);
        assert_eq!((v[9], v[10], v.len()), (1, 2, 3 << 20));
        let zeroed = vec![0u64; 1 << 20];
        assert!(zeroed.iter().all(|&x| x == 0));
    }
}
