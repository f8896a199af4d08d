//! `[io]` The thread of one glommio executor (a data shard or the control
//! shard), and how the main thread learns that it stopped.
//!
//! A shard's thread runs its executor until the shard's main future ends
//! (the broker stopped: partitions closed, offsets reported), tells the
//! main thread, and then holds the executor without dropping it; the
//! process exits from the main thread once every shard said so.
//!
//! Why the executor is never dropped on a clean stop: dropping it closes
//! its io_uring rings and frees the reactor's memory (the buffers of
//! requests still in flight) without waiting for the kernel. A file read
//! in flight then lands in freed memory; so would glommio's armed 8-byte
//! read of its wake-up eventfd on a kernel without the 2025 fix that
//! cancels a closed ring's task_work (6.18 has it: platform.md, "Executor
//! teardown"). Exiting the process with the executors held ends them all
//! at once, with nothing freed. (The heap corruption this was first blamed
//! for, "malloc_consolidate(): unaligned fastbin chunk detected" after a
//! clean stop in CI on 2026-12-05, came from glommio's mesh builder sharing
//! a non-atomic `Rc` between threads: see `shard::mesh::Builder`.)

use std::future::Future;
use std::sync::mpsc;

use anyhow::anyhow;
use glommio::LocalExecutorBuilder;

/// How a shard's thread ended, as the main thread hears it.
#[derive(Debug)]
pub(super) enum ShardEnd {
    /// The shard's main future finished: the shard stopped cleanly.
    Stopped,
    /// The executor could not be built, or the shard panicked.
    Failed(String),
}

/// Tells the main thread how this shard ended: `Stopped` through
/// [`ExitReport::stopped`], `Failed` when dropped without it (an error
/// return or a panic unwinding the thread).
struct ExitReport {
    name: String,
    tx: mpsc::Sender<ShardEnd>,
    sent: bool,
}

impl ExitReport {
    fn stopped(mut self) {
        self.sent = true;
        let _ = self.tx.send(ShardEnd::Stopped);
    }
}

impl Drop for ExitReport {
    fn drop(&mut self) {
        if !self.sent {
            let why = if std::thread::panicking() {
                "panicked"
            } else {
                "could not start its executor"
            };
            let _ = self
                .tx
                .send(ShardEnd::Failed(format!("{} {why}", self.name)));
        }
    }
}

/// Start a thread named `name` (the thread's name: `make`, unlike
/// `LocalExecutorBuilder::spawn`, does not use the builder's) that builds
/// the executor from `builder`
/// (pinning the thread as its placement says), runs `main()` on it,
/// reports on `ends`, and then holds the executor until the process exits
/// (see the module comment). Returns once the executor is built: glommio
/// numbers executors as they are built, and the mesh orders its peers by
/// that number, so shards built one after the other in the caller's order
/// get mesh peer ids in that order (as `LocalExecutorBuilder::spawn`,
/// which numbers them on the calling thread, did).
pub(super) fn spawn<G, F>(
    name: &str,
    builder: LocalExecutorBuilder,
    ends: mpsc::Sender<ShardEnd>,
    main: G,
) -> anyhow::Result<()>
where
    G: FnOnce() -> F + Send + 'static,
    F: Future<Output = ()> + 'static,
{
    let report = ExitReport {
        name: name.to_owned(),
        tx: ends,
        sent: false,
    };
    let (built_tx, built_rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let executor = match builder.make() {
                Ok(executor) => {
                    let _ = built_tx.send(Ok(()));
                    executor
                }
                Err(e) => {
                    let _ = built_tx.send(Err(e.to_string()));
                    return; // `report` says Failed.
                }
            };
            executor.run(main());
            report.stopped();
            // Hold `executor` (never dropped) until the main thread exits
            // the process. park() may wake spuriously, hence the loop.
            loop {
                std::thread::park();
            }
        })
        .map_err(|e| anyhow!("starting thread {name}: {e}"))?;
    match built_rx.recv() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(anyhow!("building the executor of {name}: {e}")),
        Err(_) => Err(anyhow!("thread {name} ended before building its executor")),
    }
}

/// Wait until `expected` shards ended; the first failure, if any.
pub(super) fn wait_all_stopped(
    ends: &mpsc::Receiver<ShardEnd>,
    expected: usize,
) -> anyhow::Result<()> {
    for _ in 0..expected {
        match ends.recv() {
            Ok(ShardEnd::Stopped) => {}
            Ok(ShardEnd::Failed(why)) => return Err(anyhow!("shard failed: {why}")),
            Err(_) => return Err(anyhow!("a shard's thread ended without a report")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> LocalExecutorBuilder {
        LocalExecutorBuilder::new(glommio::Placement::Unbound).io_memory(512 << 10)
    }

    #[test]
    fn a_shard_that_finishes_reports_stopped_and_its_thread_stays() {
        let (tx, rx) = mpsc::channel();
        let (tid_tx, tid_rx) = mpsc::channel();
        spawn("test-shard-ok", builder(), tx, move || async move {
            glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
            tid_tx.send(nix::unistd::gettid().as_raw()).unwrap();
        })
        .unwrap();
        wait_all_stopped(&rx, 1).unwrap();
        let tid = tid_rx
            .try_recv()
            .expect("the main future ran to its end first");
        // One report only, and the thread lives on, holding its executor.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "a second report");
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"));
        assert_eq!(comm.ok().as_deref(), Some("test-shard-ok\n"));
    }

    #[test]
    fn a_shard_that_panics_reports_failed_with_its_name() {
        let (tx, rx) = mpsc::channel();
        spawn("test-shard-panics", builder(), tx.clone(), || async {
            panic!("on purpose");
        })
        .unwrap();
        spawn("test-shard-fine", builder(), tx, || async {}).unwrap();
        let err = wait_all_stopped(&rx, 2).unwrap_err().to_string();
        assert_eq!(err, "shard failed: test-shard-panics panicked");
    }
}
