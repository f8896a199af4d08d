//! `[io]` Loopback TCP echo round trips: the latency floor to compare broker
//! produce latency against (`shardlog loadgen --echo-rtt --duration 5s`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use super::histogram::{LatencyHistogram, LatencySummary};

#[derive(Debug, Clone, Serialize)]
pub struct EchoReport {
    pub message_size: usize,
    pub round_trips: u64,
    pub measured_secs: f64,
    pub rtt: LatencySummary,
}

fn pin(cpu: Option<usize>) {
    if let Some(id) = cpu {
        core_affinity::set_for_current(core_affinity::CoreId { id });
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
    let listener = TcpListener::bind("127.0.0.1:0").context("binding echo server")?;
    let addr = listener.local_addr()?;
    let server = std::thread::Builder::new()
        .name("loadgen-echo-srv".into())
        .spawn(move || -> std::io::Result<()> {
            pin(server_cpu);
            let (mut s, _) = listener.accept()?;
            s.set_nodelay(true)?;
            let mut buf = vec![0u8; size];
            loop {
                if s.read_exact(&mut buf).is_err() {
                    return Ok(());
                }
                s.write_all(&buf)?;
            }
        })?;
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
        round_trips,
        measured_secs: duration.as_secs_f64(),
        rtt: hist.summary(),
    })
}

/// The echo result as one table (microseconds; RTTs are small).
pub fn render(r: &EchoReport) -> String {
    let cols = r.rtt.columns();
    let head: Vec<String> = cols.iter().map(|(n, _)| format!("{n:>9}")).collect();
    let vals: Vec<String> = cols.iter().map(|(_, v)| format!("{v:>9.1}")).collect();
    format!(
        "loopback TCP echo RTT, {} B messages, {} round trips in {:.1}s ({:.0}/s), latency in us\n{}\n{}\n",
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
}
