//! Loopback ports for the processes a test starts (brokers, ZooKeeper,
//! Kafka JVMs) when the port must be known before the process binds it.
//!
//! A port the kernel picked with `bind(127.0.0.1:0)` and released comes from
//! the ephemeral range (`net.ipv4.ip_local_port_range`), the same range the
//! kernel draws the source ports of outgoing connections from. Between the
//! release and the broker's own `bind`, any process on the host (a broker's
//! connection to ZooKeeper, a client, another test) may be given that port
//! as a source port, and the broker's start then fails with "Address already
//! in use". So the ports handed out here lie **outside** the ephemeral
//! range, where the kernel never assigns one on its own, and each is
//! reserved across processes (tests of several binaries; `perf/free_port.py` skips them too)
//! by an exclusive lock on a file named after it, held until this test
//! process exits. A port is handed out only when its lock was taken and a
//! listener could bind it just now.

use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The locks of the ports this process reserved; never released before
/// exit (the kernel drops them with the process, even after `kill -9`).
static HELD: Mutex<Vec<File>> = Mutex::new(Vec::new());
static CALLS: AtomicU64 = AtomicU64::new(0);

/// The lock files' directory (shared by every test process of the host,
/// and by `perf/free_port.py`).
pub fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("shardlog-test-ports")
}

/// The kernel's ephemeral range, `(low, high)` inclusive.
fn ephemeral_range() -> (u32, u32) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|w| w.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32768, 60999))
}

/// The ports handed out: the largest stretch outside the ephemeral range
/// and above the well-known ports (`[10000, low)` on Linux's default range).
pub fn candidate_range(low: u32, high: u32) -> (u32, u32) {
    let below = (10000, low.saturating_sub(1));
    let above = (high + 1, 65535);
    let len = |(a, b): (u32, u32)| if b >= a { b - a + 1 } else { 0 };
    if len(below) >= len(above) {
        below
    } else {
        above
    }
}

fn reserve(port: u16) -> Option<File> {
    let dir = lock_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{port}.lock")))
        .ok()?;
    file.try_lock().ok()?;
    // `perf/free_port.py` cannot hold the lock until its broker binds; it
    // writes a line instead, and the port is left alone for 120 s.
    let meta = file.metadata().ok()?;
    let age = meta.modified().ok()?.elapsed().unwrap_or_default();
    if meta.len() > 0 && age < std::time::Duration::from_secs(120) {
        return None;
    }
    // Nobody else holds it: is it free on the host too?
    TcpListener::bind(("127.0.0.1", port)).ok()?;
    Some(file)
}

/// A loopback port outside the ephemeral range, free when picked and
/// reserved for this process (see the module's doc).
pub fn reserved_port() -> u16 {
    let (low, high) = ephemeral_range();
    let (first, last) = candidate_range(low, high);
    assert!(
        last > first,
        "no port range outside the ephemeral range {low}-{high} \
         (net.ipv4.ip_local_port_range) for test listeners"
    );
    let span = u64::from(last - first + 1);
    // A different start per process and per call, so concurrent processes
    // rarely probe the same ports.
    let seed = u64::from(std::process::id())
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(CALLS.fetch_add(1, Ordering::Relaxed).wrapping_mul(7919));
    for i in 0..span {
        let port = first as u64 + (seed.wrapping_add(i) % span);
        let port = u16::try_from(port).expect("port range within u16");
        if let Some(lock) = reserve(port) {
            HELD.lock().unwrap_or_else(|e| e.into_inner()).push(lock);
            return port;
        }
    }
    panic!("no free loopback port in {first}-{last} (all in use or reserved)");
}
