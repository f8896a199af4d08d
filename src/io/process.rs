//! `[io]` The process's own figures from `/proc/self` for the `/metrics`
//! scrape: CPU time, memory, threads, file descriptors (the `process_*`
//! series Prometheus clients export) and the bytes the process read from
//! and wrote to storage (Kafka's `linux-disk-read-bytes` /
//! `linux-disk-write-bytes`, from `/proc/self/io` as Kafka's
//! `LinuxIoMetricsCollector` reads them).

use crate::metrics::report::ProcessStats;

/// The figures, or `None` where `/proc` cannot be read.
pub fn read() -> Option<ProcessStats> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold
    // spaces: `state` is field 3 (index 0 here).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    // SAFETY: sysconf only reads a system constant.
    let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    // SAFETY: as above.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let ticks = ticks.max(1) as f64;
    let cpu_seconds = (field(14)? + field(15)?) as f64 / ticks;
    let boot_time = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    let start_time_seconds = boot_time as f64 + field(22).unwrap_or(0) as f64 / ticks;
    let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    let max_fds = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        0
    };
    let (disk_read_bytes, disk_write_bytes) = disk_bytes();
    Some(ProcessStats {
        cpu_seconds,
        resident_memory_bytes: field(24).unwrap_or(0) * page,
        virtual_memory_bytes: field(23).unwrap_or(0),
        open_fds,
        max_fds,
        start_time_seconds,
        threads: field(20).unwrap_or(0),
        disk_read_bytes,
        disk_write_bytes,
    })
}

/// `read_bytes` and `write_bytes` of `/proc/self/io` (0 where absent).
fn disk_bytes() -> (u64, u64) {
    let Ok(io) = std::fs::read_to_string("/proc/self/io") else {
        return (0, 0);
    };
    let value = |key: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    (value("read_bytes:"), value("write_bytes:"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_figures_are_read_from_proc() {
        let p = super::read().expect("/proc/self");
        assert!(p.resident_memory_bytes > 0 && p.virtual_memory_bytes >= p.resident_memory_bytes);
        assert!(p.open_fds >= 3 && p.max_fds >= p.open_fds, "{p:?}");
        assert!(p.threads >= 1 && p.start_time_seconds > 1e9, "{p:?}");
    }
}
