//! `[io]` Facts about the host read from the kernel (`sysconf`), for
//! defaults that scale with the machine, and the process-wide settings the
//! broker makes at start (open-file limit, allocator thresholds).

use nix::unistd::{sysconf, SysconfVar};

/// Physical memory in bytes (`_SC_PHYS_PAGES` × `_SC_PAGESIZE`), or `None`
/// if the host does not say. Saturates rather than overflows.
pub fn physical_memory_bytes() -> Option<u64> {
    let positive = |var| match sysconf(var) {
        Ok(Some(v)) if v > 0 => u64::try_from(v).ok(),
        _ => None,
    };
    let pages = positive(SysconfVar::_PHYS_PAGES)?;
    let page = positive(SysconfVar::PAGE_SIZE)?;
    Some(pages.saturating_mul(page))
}

/// Whether this process may pin `bytes` more of memory (io_uring buffer
/// registration counts against RLIMIT_MEMLOCK unless the process has
/// CAP_IPC_LOCK, which root has unless a container dropped it).
pub fn may_pin(bytes: u64) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    match nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_MEMLOCK) {
        Ok((soft, _)) => soft == nix::sys::resource::RLIM_INFINITY || soft >= bytes,
        Err(_) => false,
    }
}

/// The first `program` file in the directories of `$PATH`, as a shell
/// would find it.
pub fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Raise the soft limit on open files to the hard one, as the JVM running
/// Kafka does at start (HotSpot's `MaxFDLimit`, on by default on Linux):
/// each partition holds a read fd per segment and, while written, its
/// appender's (10,000 partitions ran out of 20,000).
pub fn raise_fd_limit() {
    let res = nix::sys::resource::Resource::RLIMIT_NOFILE;
    if let Ok((soft, hard)) = nix::sys::resource::getrlimit(res) {
        if soft < hard {
            if let Err(e) = nix::sys::resource::setrlimit(res, hard, hard) {
                tracing::warn!(soft, hard, error = %e, "could not raise the open-file limit");
            }
        }
    }
}

/// glibc malloc serves large blocks from their own mmap (past a dynamic
/// threshold) and trims freed heap tops back to the kernel, so a
/// connection's multi-MiB read buffer — reallocated whenever request
/// frames still share the old one — came back as fresh pages: a page fault
/// and the kernel's zeroing per 4 KiB (perf under loadgen's ~1 MB batches:
/// `clear_page_erms` below `ReadBuf::prepare`, a quarter of the shard).
/// Serve blocks up to 32 MiB (glibc's largest threshold) from the heap and
/// trim only past 1 GiB, so freed buffers come back warm.
pub fn keep_freed_memory_mapped() {
    // SAFETY: mallopt only tunes the allocator; it runs before the
    // executors' threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn physical_memory_is_whole_pages_of_at_least_64_mib() {
        let bytes = physical_memory_bytes().expect("Linux reports physical memory");
        assert!(bytes >= 64 << 20, "{bytes}");
        assert_eq!(bytes % 4096, 0, "{bytes}");
    }
}
