//! `shardlog` command line: `shardlog broker|...` → Config → `boot`.
//!
//! Each subcommand is a variant of [`Command`] and one arm in `main`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::ptr::NonNull;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use nix::sys::mman::{mmap_anonymous, mremap, munmap, MRemapFlags, MapFlags, ProtFlags};

use shardlog::config::{parse_override, ServerConfig, SAMPLE_SERVER_PROPERTIES};

/// Allocations of at least this size reserve address space lazily.
const LAZY_ALLOC_BYTES: usize = 1 << 30;
/// mmap alignment (page size on every Linux target we run on).
const PAGE_BYTES: usize = 4096;

/// The system allocator, except that huge allocations are anonymous
/// `MAP_NORESERVE` mappings backed only where touched.
///
/// Why: `kafka-protocol`'s generated decoders call `Vec::with_capacity(n)`
/// with an element count read from the wire before reading the elements.
/// A hostile count asks for hundreds of GiB; malloc refuses (overcommit
/// heuristic) and Rust aborts the whole process. Handlers check the counts
/// they know about (`protocol::decode::check_array_len`); this is the
/// backstop for any they miss: the reservation succeeds, decoding fails at
/// the end of the (bounded) frame, the mapping is released, and only that
/// connection is closed.
struct LazyHugeAllocator;

fn is_lazy(size: usize, align: usize) -> bool {
    size >= LAZY_ALLOC_BYTES && align <= PAGE_BYTES
}

// SAFETY: delegates to `System` except for huge sizes, which get fresh
// private anonymous mappings (page-aligned, zero-filled) that are unmapped
// with the same size in `dealloc`; `realloc` preserves contents.
unsafe impl GlobalAlloc for LazyHugeAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_lazy(layout.size(), layout.align()) {
            return map_lazy(layout.size());
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_lazy(layout.size(), layout.align()) {
            return map_lazy(layout.size()); // anonymous mappings are zeroed
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_lazy(layout.size(), layout.align()) {
            if let Some(mapping) = NonNull::new(ptr.cast()) {
                // SAFETY: `ptr` came from `map_lazy(layout.size())`.
                let _ = unsafe { munmap(mapping, layout.size()) };
            }
            return;
        }
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old_lazy, new_lazy) = (
            is_lazy(layout.size(), layout.align()),
            is_lazy(new_size, layout.align()),
        );
        if !old_lazy && !new_lazy {
            // SAFETY: same contract as ours.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if old_lazy && new_lazy {
            // Move the page tables, never the (mostly untouched) pages: a
            // copy would touch the whole old reservation.
            let Some(mapping) = NonNull::new(ptr.cast()) else {
                return std::ptr::null_mut();
            };
            // SAFETY: `ptr` is a mapping of `layout.size()` bytes from
            // `map_lazy`; MREMAP_MAYMOVE returns a new page-aligned mapping.
            let moved = unsafe {
                mremap(
                    mapping,
                    layout.size(),
                    new_size,
                    MRemapFlags::MREMAP_MAYMOVE,
                    None,
                )
            };
            return moved.map_or(std::ptr::null_mut(), |m| m.as_ptr().cast());
        }
        // One side is below LAZY_ALLOC_BYTES, so the copy is below it too.
        // SAFETY: `new_size` is non-zero and, with the old alignment, a
        // valid layout (the caller guarantees it does not overflow).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: fresh allocation, then a copy of the overlapping prefix
        // between two distinct blocks, then release of the old block.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

fn map_lazy(size: usize) -> *mut u8 {
    let Some(len) = NonZeroUsize::new(size) else {
        return std::ptr::null_mut();
    };
    // SAFETY: anonymous private mapping; no file, no fixed address.
    let mapped = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    };
    mapped.map_or(std::ptr::null_mut(), |p| p.as_ptr().cast())
}

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
