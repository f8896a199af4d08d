//! One glommio executor for a test's async code: `run` spawns it on its
//! own thread, waits for the future `g` builds, and returns its output.
//! The io memory is small because RLIMIT_MEMLOCK is 8 MiB here and several
//! tests run at once.

use std::future::Future;
use std::pin::Pin;

/// Run the future `g` builds on a fresh glommio executor (unbound, on its
/// own thread) to completion; panics if the executor cannot start or the
/// future panics.
pub fn run<G, F, T>(g: G) -> T
where
    G: FnOnce() -> F + Send + 'static,
    F: Future<Output = T> + 'static,
    T: Send + 'static,
{
    glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .io_memory(512 << 10)
        .spawn(g)
        .expect("spawn executor")
        .join()
        .expect("executor panicked")
}

/// Start the future `f` builds on a fresh glommio executor thread without
/// waiting: join the handle for its output (while the test thread does
/// something else meanwhile, e.g. starts the broker it connects to).
pub fn spawn<T: Send + 'static>(
    f: impl FnOnce() -> Pin<Box<dyn Future<Output = T>>> + Send + 'static,
) -> glommio::ExecutorJoinHandle<T> {
    glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .io_memory(512 << 10)
        .spawn(move || async move { f().await })
        .expect("spawn executor")
}
