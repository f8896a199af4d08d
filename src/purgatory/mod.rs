//! `[drv]`/`[pure]` The purgatory (ARCHITECTURE.md §5): per-shard delayed
//! operations (DelayedProduce, DelayedFetch) parked on a hierarchical timing
//! wheel and on watch lists keyed by partition.
//!
//! | file              | kind   | what |
//! |-------------------|--------|------|
//! | `timing_wheel`    | pure   | Kafka's hierarchical `TimingWheel` (1 ms × 20) over a slab |

pub mod timing_wheel;
