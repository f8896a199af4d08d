//! `[drv]`/`[pure]` The purgatory (ARCHITECTURE.md §5): per-shard delayed
//! operations (DelayedProduce, DelayedFetch) parked on a hierarchical timing
//! wheel and on watch lists keyed by partition, driven by one timer per shard.
//!
//! | file              | kind   | what |
//! |-------------------|--------|------|
//! | `timing_wheel`    | pure   | Kafka's hierarchical `TimingWheel` (1 ms × 20) over a slab |
//! | `watch_list`      | pure   | per-partition lists of parked ops, lazy + periodic purge |
//! | `delayed_operation` | pure   | `DelayedOperation` contract + `Purgatory<Op>` (wheel + watch lists) |
//! | `view`            | pure   | per-shard partition snapshots ops are checked against; error codes |
//! | `delayed_produce` | pure   | acks=all produce waiting for HW |
//! | `delayed_fetch`   | pure   | fetch waiting for `min_bytes` |
//! | `notes`           | pure   | cross-shard "partition advanced" coalescing + remote watch registry |
//! | `driver`          | drv    | one glommio timer per shard, waiters woken with outcomes |

pub mod delayed_fetch;
pub mod delayed_operation;
pub mod delayed_produce;
pub mod driver;
pub mod notes;
pub mod timing_wheel;
pub mod view;
pub mod watch_list;
