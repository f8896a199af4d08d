//! `[io]` Which CPUs a thread may run on, through `sched_getaffinity(2)`
//! and `sched_setaffinity(2)`: the broker's boot sizes and places its
//! shards from [`allowed_cpus`]; the load generator pins its client
//! threads with [`pin_current_thread`] (`--client-cpus`).

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The CPUs this thread may run on (its affinity mask, which a new
/// thread inherits from the process), in ascending order. Falls back to
/// `0..available_parallelism` if the mask cannot be read.
pub fn allowed_cpus() -> Vec<usize> {
    // pid 0: the calling thread.
    let Ok(set) = sched_getaffinity(Pid::from_raw(0)) else {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    };
    (0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect()
}

/// Restrict the calling thread to `cpu`. Fails for a CPU outside the
/// mask's range or one the process may not use (EINVAL).
pub fn pin_current_thread(cpu: usize) -> nix::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    sched_setaffinity(Pid::from_raw(0), &set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_to_an_allowed_cpu_runs_only_there() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let last = *allowed.last().unwrap();
        let seen = std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            allowed_cpus()
        })
        .join()
        .unwrap();
        assert_eq!(seen, vec![last]);
        assert!(pin_current_thread(CpuSet::count()).is_err());
    }
}
