//! `shardlog` command line: `shardlog broker|...` → Config → `shard::boot`.
//!
//! Each subcommand is a variant of [`Command`] and one arm in `main`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use shardlog::config::{parse_override, ServerConfig, SAMPLE_SERVER_PROPERTIES};

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
    Loadgen(shardlog::loadgen::LoadgenArgs),
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
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Broker(args) => broker(args),
        Command::Loadgen(args) => shardlog::loadgen::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shardlog: error: {e:#}");
            ExitCode::FAILURE
        }
    }
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
    shardlog::shard::boot::run_broker(loaded.config)
}
