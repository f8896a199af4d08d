//! `[io]` Facts about the host read from the kernel (`sysconf`), for
//! defaults that scale with the machine.

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
