//! `[pure]` What a shard's TLS handshakes cost, for the shutdown report
//! (`tls handshakes: …`): how many, how many failed or went to kernel TLS,
//! and the distribution of their steps (one poll of a handshake: the time
//! it kept the shard from its other connections, as one task).

use crate::histogram::LatencyHistogram;

/// Per shard, summed over the data shards at exit.
#[derive(Clone, Debug, Default)]
pub struct HandshakeStats {
    pub completed: u64,
    pub failed: u64,
    /// Sessions handed to kernel TLS after the handshake.
    pub kernel: u64,
    /// Every poll of every handshake, nanoseconds.
    pub steps: LatencyHistogram,
    /// Their sum (the shard's time in handshakes).
    pub total_step_ns: u64,
}

impl HandshakeStats {
    /// Account one poll of a handshake that took `ns`.
    pub fn step(&mut self, ns: u64) {
        self.steps.record_ns(ns);
        self.total_step_ns = self.total_step_ns.saturating_add(ns);
    }

    /// Add another shard's figures.
    pub fn merge(&mut self, other: &HandshakeStats) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.kernel += other.kernel;
        self.steps.add(&other.steps);
        self.total_step_ns = self.total_step_ns.saturating_add(other.total_step_ns);
    }

    /// The exit line, if any handshake ran.
    pub fn line(&self) -> Option<String> {
        let n = self.completed + self.failed;
        (n > 0).then(|| {
            let s = self.steps.summary();
            format!(
                "tls handshakes: completed={} failed={} kernel_tls={} cpu_per_handshake={}us \
                 steps n={} p50={:.0}us p99={:.0}us p99.9={:.0}us max={:.0}us",
                self.completed,
                self.failed,
                self.kernel,
                self.total_step_ns / n / 1000,
                s.count,
                s.p50_us,
                s.p99_us,
                s.p999_us,
                s.max_us,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_summarised_and_merging_sums_the_counts() {
        let mut a = HandshakeStats::default();
        assert_eq!(a.line(), None, "no line without handshakes");
        a.step(300_000);
        a.step(1_200_000);
        a.step(100_000);
        a.completed = 1;
        let mut b = HandshakeStats {
            failed: 1,
            ..HandshakeStats::default()
        };
        b.step(900_000);
        b.merge(&a);
        assert_eq!(b.completed, 1);
        assert_eq!(b.failed, 1);
        assert_eq!(b.steps.count(), 4);
        assert_eq!(b.total_step_ns, 2_500_000);
        let line = b.line().expect("a line");
        assert!(
            line.starts_with(
                "tls handshakes: completed=1 failed=1 kernel_tls=0 cpu_per_handshake=1250us \
                 steps n=4 p50="
            ),
            "{line}"
        );
        assert!(
            line.contains("max=1200us") || line.contains("max=1201us"),
            "{line}"
        );
    }
}
