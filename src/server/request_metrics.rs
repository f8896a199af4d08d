//! `[io]` Broker-side produce latency, per shard: from the moment a
//! Produce request has been read off the socket to the moment its response
//! is in the kernel's socket buffer — Kafka's `TotalTimeMs` request metric
//! without the network receive (kafka.network:type=RequestMetrics).
//!
//! Clients measure the round trip, which also holds their own queueing and
//! the host's scheduling; this figure says what the broker added. Each data
//! shard's histogram is its context's (`ShardStats::produce_latency`); the
//! data shards merge theirs at shutdown into one line on stderr:
//! `request latency: produce n=N p50=Xus p99=Xus p99.9=Xus max=Xus`.

use std::cell::RefCell;

use crate::histogram::LatencyHistogram;

/// A Produce response read off the socket at `received_ns` (the shard
/// clock's `mono_ns`) has just been written, at `now_ns`: into the shard's
/// histogram `produce`.
pub fn record_produce(produce: &RefCell<LatencyHistogram>, received_ns: u64, now_ns: u64) {
    let ns = now_ns.saturating_sub(received_ns);
    produce.borrow_mut().record_ns(ns);
}

/// The shutdown line for the merged histogram; `None` when no Produce
/// request was answered.
pub fn produce_line(h: &LatencyHistogram) -> Option<String> {
    if h.count() == 0 {
        return None;
    }
    let s = h.summary();
    Some(format!(
        "request latency: produce n={} p50={:.0}us p99={:.0}us p99.9={:.0}us max={:.0}us",
        s.count, s.p50_us, s.p99_us, s.p999_us, s.max_us
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_latencies_come_back_in_the_shutdown_line() {
        let t0 = 5_000_000_000u64;
        let produce = RefCell::new(LatencyHistogram::new());
        std::thread::spawn(move || {
            for us in [100u64, 200, 300, 400, 10_000] {
                record_produce(&produce, t0, t0 + us * 1_000);
            }
            let line = produce_line(&produce.borrow()).expect("line");
            assert!(
                line.starts_with("request latency: produce n=5 p50=300us"),
                "{line}"
            );
            // HdrHistogram keeps 3 significant digits.
            let max: f64 = line
                .rsplit("max=")
                .next()
                .and_then(|v| v.trim_end_matches("us").parse().ok())
                .expect("max field");
            assert!((max - 10_000.0).abs() <= 10.0, "{line}");
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn no_produce_no_line() {
        assert_eq!(produce_line(&LatencyHistogram::new()), None);
    }
}
