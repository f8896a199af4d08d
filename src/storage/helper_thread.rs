//! `[io]` Per-shard helper threads for blocking file work that must not
//! queue behind glommio's blocking pool, whose single thread also runs the
//! directory fsync a segment roll waits for: fetch read-ahead
//! (`posix_fadvise(WILLNEED)` can wait for the disk's queue) and freeing
//! deleted segments (ext4 frees blocks, and with the `discard` mount option
//! trims them, inside `ftruncate`/`unlink`).
//!
//! Each kind of work has its own thread per shard, started by the first
//! job; it inherits the shard's CPU affinity and ends when the shard's
//! storage ([`super::shard_storage::ShardStorage`], which owns the
//! [`HelperThreads`]) goes (the sender drops).

use std::cell::OnceCell;
use std::sync::mpsc::{channel, Sender};

/// A unit of blocking work.
pub type Job = Box<dyn FnOnce() + Send>;

/// One helper thread of the current shard, started on first use.
pub struct Helper {
    kind: &'static str,
    tx: OnceCell<Option<Sender<Job>>>,
}

impl Helper {
    pub const fn new(kind: &'static str) -> Self {
        Self {
            kind,
            tx: OnceCell::new(),
        }
    }

    fn start(&self) -> Option<Sender<Job>> {
        let (tx, rx) = channel::<Job>();
        let name = format!(
            "{}-{}",
            self.kind,
            std::thread::current().name().unwrap_or("shard")
        );
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            while let Ok(job) = rx.recv() {
                job();
            }
        });
        match spawned {
            Ok(_) => Some(tx),
            Err(e) => {
                tracing::warn!(kind = self.kind, error = %e, "cannot start a helper thread");
                None
            }
        }
    }
}

impl Helper {
    /// A handle that queues jobs on this helper's thread from a task that
    /// outlives the borrow (a delayed delete); None when the thread cannot
    /// run.
    pub fn sender(&self) -> Option<Sender<Job>> {
        self.tx.get_or_init(|| self.start()).clone()
    }

    /// Queues `job` on this helper's thread; gives the job back when the
    /// thread cannot run (could not start, or died).
    pub fn submit(&self, job: Job) -> Result<(), Job> {
        match self.tx.get_or_init(|| self.start()) {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }
}

/// One shard's helper threads.
pub struct HelperThreads {
    /// Fetch read-ahead hints.
    pub read_ahead: Helper,
    /// Freeing the files of deleted segments.
    pub deleter: Helper,
}

impl HelperThreads {
    pub const fn new() -> Self {
        HelperThreads {
            read_ahead: Helper::new("readahead"),
            deleter: Helper::new("delete"),
        }
    }
}

impl Default for HelperThreads {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_on_one_thread_per_kind() {
        let helpers = HelperThreads::new();
        let (tx, rx) = channel();
        for i in 0..3 {
            let tx = tx.clone();
            let job: Job = Box::new(move || {
                let name = std::thread::current().name().map(str::to_owned);
                tx.send((i, name)).unwrap();
            });
            assert!(helpers.deleter.submit(job).is_ok());
        }
        let got: Vec<(i32, Option<String>)> = (0..3).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), vec![0, 1, 2]);
        let names: Vec<&str> = got.iter().map(|g| g.1.as_deref().unwrap()).collect();
        assert!(names.iter().all(|n| n.starts_with("delete-")), "{names:?}");
        assert!(
            names.windows(2).all(|w| w[0] == w[1]),
            "one thread: {names:?}"
        );
    }
}
