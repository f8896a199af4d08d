//! `[io]` Loopback TCP echo round trips: the latency floor to compare broker
//! produce latency against (`shardlog loadgen --echo-rtt --duration 5s`).
//!
//! Two shapes: closed loop (one message out, wait for it back, repeat) and,
//! with `--rate`, a fixed rate (`measure_at_rate`): messages leave on a grid
//! of intended send times whatever came back, and each one's latency counts
//! from its intended time, as the producer's `ack_latency_intended` does. A
//! stall of the host then delays every message due during it, not one round
//! trip, which is what an open-loop produce stream at the same rate sees.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::histogram::{LatencyHistogram, LatencySummary};

#[derive(Debug, Clone, Serialize)]
pub struct EchoReport {
    pub message_size: usize,
    /// Messages/s on the fixed-rate grid; `None` for the closed loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    pub round_trips: u64,
    pub measured_secs: f64,
    pub rtt: LatencySummary,
}

fn pin(cpu: Option<usize>) {
    if let Some(id) = cpu {
        // Unpinned if refused (the CPU list was checked up front).
        let _ = crate::io::affinity::pin_current_thread(id);
    }
}

/// Runs an echo server thread and a client on 127.0.0.1 for
/// `warmup + duration`, recording each round trip after warm-up.
pub fn measure(
    message_size: usize,
    duration: Duration,
    warmup: Duration,
    client_cpu: Option<usize>,
    server_cpu: Option<usize>,
) -> Result<EchoReport> {
    let size = message_size.max(1);
    let (addr, server) = echo_server(server_cpu, None)?;
    pin(client_cpu);
    let mut c = TcpStream::connect(addr).context("connecting to echo server")?;
    c.set_nodelay(true)?;
    let out = vec![0x5au8; size];
    let mut back = vec![0u8; size];
    let mut hist = LatencyHistogram::new();
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + duration;
    let mut round_trips = 0u64;
    loop {
        let t0 = Instant::now();
        if t0 >= end {
            break;
        }
        c.write_all(&out)?;
        c.read_exact(&mut back)?;
        if t0 >= measure_from {
            hist.record_ns(t0.elapsed().as_nanos() as u64);
            round_trips += 1;
        }
    }
    drop(c);
    let _ = server.join();
    Ok(EchoReport {
        message_size: size,
        rate: None,
        round_trips,
        measured_secs: duration.as_secs_f64(),
        rtt: hist.summary(),
    })
}

/// A server on 127.0.0.1 (one connection) until the client closes: with
/// `ack_of: None` a byte-stream echo (whatever it reads it writes back);
/// with `Some(size)` it answers each whole `size`-byte message with its
/// first 8 bytes (the sequence number), as a broker answers a record with
/// a small acknowledgement.
fn echo_server(
    cpu: Option<usize>,
    ack_of: Option<usize>,
) -> Result<(
    std::net::SocketAddr,
    std::thread::JoinHandle<std::io::Result<()>>,
)> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding echo server")?;
    let addr = listener.local_addr()?;
    let server = std::thread::Builder::new()
        .name("loadgen-echo-srv".into())
        .spawn(move || -> std::io::Result<()> {
            pin(cpu);
            let (mut s, _) = listener.accept()?;
            s.set_nodelay(true)?;
            let mut buf = vec![0u8; 64 << 10];
            let (mut have, mut acks) = (0usize, Vec::new());
            loop {
                let n = s.read(&mut buf[have..])?;
                if n == 0 {
                    return Ok(());
                }
                let Some(size) = ack_of else {
                    s.write_all(&buf[..n])?;
                    continue;
                };
                have += n;
                acks.clear();
                take_whole(&mut buf, &mut have, size, |m| {
                    acks.extend_from_slice(&m[..8])
                });
                s.write_all(&acks)?;
            }
        })?;
    Ok((addr, server))
}

/// `[pure]` Calls `each` on every whole `size`-byte message in
/// `buf[..*have]`, then moves the partial one left over to the front
/// (`*have` becomes its length).
fn take_whole(buf: &mut [u8], have: &mut usize, size: usize, mut each: impl FnMut(&[u8])) {
    let whole = *have / size * size;
    for m in buf[..whole].chunks_exact(size) {
        each(m);
    }
    buf.copy_within(whole..*have, 0);
    *have -= whole;
}

/// `[pure]` How many messages of a `interval_ns` grid are due `elapsed_ns`
/// after its origin (message `k` is due at `k * interval_ns`).
fn due_count(elapsed_ns: u64, interval_ns: u64) -> u64 {
    elapsed_ns / interval_ns.max(1) + 1
}

/// Fixed-rate echo: `rate` messages/s of `message_size` bytes (each
/// carrying its sequence number) for `warmup + duration`; the messages due
/// at once go out in one write, and the server answers each with its
/// 8-byte sequence number (a record and its acknowledgement). A reader
/// thread on the client core takes the answers and records each latency
/// from its message's intended send time.
#[allow(
    clippy::expect_used,
    reason = "take_whole hands out whole 8-byte messages"
)]
pub fn measure_at_rate(
    message_size: usize,
    rate: u64,
    duration: Duration,
    warmup: Duration,
    client_cpu: Option<usize>,
    server_cpu: Option<usize>,
) -> Result<EchoReport> {
    let size = message_size.max(8);
    let interval_ns = (1e9 / rate.max(1) as f64).max(1.0) as u64;
    let (addr, server) = echo_server(server_cpu, Some(size))?;
    pin(client_cpu);
    let mut out = TcpStream::connect(addr).context("connecting to echo server")?;
    out.set_nodelay(true)?;
    let mut back = out.try_clone()?;
    let origin = Instant::now();
    let total = due_count((warmup + duration).as_nanos() as u64, interval_ns) - 1;
    let first_measured = due_count(warmup.as_nanos() as u64, interval_ns) - 1;
    let reader = std::thread::Builder::new()
        .name("loadgen-echo-rx".into())
        .spawn(move || -> std::io::Result<LatencyHistogram> {
            pin(client_cpu);
            let mut hist = LatencyHistogram::new();
            let mut buf = vec![0u8; 64 << 10];
            let (mut have, mut seq_seen) = (0usize, 0u64);
            while seq_seen < total {
                let n = back.read(&mut buf[have..])?;
                if n == 0 {
                    break;
                }
                have += n;
                let now = origin.elapsed().as_nanos() as u64;
                take_whole(&mut buf, &mut have, 8, |m| {
                    let seq = u64::from_le_bytes(m.try_into().expect("8 bytes"));
                    if seq >= first_measured {
                        hist.record_ns(now.saturating_sub(seq * interval_ns));
                    }
                    seq_seen += 1;
                });
            }
            Ok(hist)
        })?;
    let mut batch = Vec::new();
    let mut next = 0u64;
    while next < total {
        let due = due_count(origin.elapsed().as_nanos() as u64, interval_ns).min(total);
        if due <= next {
            let wait_ns = (next * interval_ns).saturating_sub(origin.elapsed().as_nanos() as u64);
            // Sleep even for a few microseconds (the kernel's timer slack
            // makes it ~50 us, so due messages go out in small batches):
            // spinning here starved the reader thread sharing this core.
            std::thread::sleep(Duration::from_nanos(wait_ns.max(1)));
            continue;
        }
        batch.clear();
        for seq in next..due {
            batch.extend_from_slice(&seq.to_le_bytes());
            batch.resize(batch.len() + size - 8, 0x5a);
        }
        out.write_all(&batch)?;
        next = due;
    }
    let hist = reader
        .join()
        .map_err(|_| anyhow::anyhow!("echo reader panicked"))??;
    drop(out);
    let _ = server.join();
    let rtt = hist.summary();
    Ok(EchoReport {
        message_size: size,
        rate: Some(rate),
        round_trips: rtt.count,
        measured_secs: duration.as_secs_f64(),
        rtt,
    })
}

/// The echo result as one table (microseconds; RTTs are small).
pub fn render(r: &EchoReport) -> String {
    let cols = r.rtt.columns();
    let head: Vec<String> = cols.iter().map(|(n, _)| format!("{n:>9}")).collect();
    let vals: Vec<String> = cols.iter().map(|(_, v)| format!("{v:>9.1}")).collect();
    let shape = match r.rate {
        Some(rate) => format!(", fixed rate {rate}/s (latency from the intended send time)"),
        None => String::new(),
    };
    format!(
        "loopback TCP echo RTT{shape}, {} B messages, {} round trips in {:.1}s ({:.0}/s), latency in us\n{}\n{}\n",
        r.message_size,
        r.round_trips,
        r.measured_secs,
        r.round_trips as f64 / r.measured_secs.max(1e-9),
        head.join(" "),
        vals.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_round_trips_are_recorded_after_warmup() {
        let r = measure(
            100,
            Duration::from_millis(200),
            Duration::from_millis(20),
            None,
            None,
        )
        .unwrap();
        assert!(r.round_trips > 0);
        assert_eq!(r.rtt.count, r.round_trips);
        assert!(r.rtt.p50_us > 0.0 && r.rtt.p50_us <= r.rtt.max_us);
        let text = render(&r);
        assert!(text.contains("100 B messages"));
        assert!(text.contains("p99.99"));
    }

    #[test]
    fn whole_messages_are_taken_and_the_partial_one_kept_in_front() {
        let mut buf = *b"aaabbbcc--";
        let mut have = 8;
        let mut seen = Vec::new();
        take_whole(&mut buf, &mut have, 3, |m| seen.push(m.to_vec()));
        assert_eq!(seen, vec![b"aaa".to_vec(), b"bbb".to_vec()]);
        assert_eq!((have, &buf[..2]), (2, &b"cc"[..]));
    }

    #[test]
    fn the_grid_counts_messages_due_by_their_intended_times() {
        assert_eq!(due_count(0, 1000), 1);
        assert_eq!(due_count(999, 1000), 1);
        assert_eq!(due_count(1000, 1000), 2);
        assert_eq!(due_count(10_500, 1000), 11);
    }

    #[test]
    fn a_fixed_rate_echo_takes_back_every_message_due_after_warmup() {
        // 20 000/s for 0.2 s after 0.05 s of warm-up: messages 1000..5000.
        let r = measure_at_rate(
            100,
            20_000,
            Duration::from_millis(200),
            Duration::from_millis(50),
            None,
            None,
        )
        .unwrap();
        assert_eq!(r.rate, Some(20_000));
        assert_eq!(r.round_trips, 4000);
        assert_eq!(r.rtt.count, 4000);
        assert!(r.rtt.p50_us > 0.0 && r.rtt.p50_us <= r.rtt.max_us);
        assert!(render(&r).contains("fixed rate 20000/s"));
    }
}
