//! `[pure]` The trade-off explorer's arithmetic: latency-vs-throughput
//! curves, one per producer setting of the sweep.
//!
//! For each setting the explorer first runs flat out; what the broker
//! acknowledged per second then is the setting's maximum rate (every
//! latency of that run is the client's own queue, so it is reported but not
//! plotted). Then it runs at fixed fractions of that rate (default 10, 25,
//! 50, 75 and 90%). At a fixed rate each record has an intended send time
//! on a grid ([`FixedRateSchedule`]); latency is measured from that time,
//! not from when the producer got round to sending, so a stalled producer
//! does not hide the stall (coordinated omission; OpenMessaging Benchmark's
//! publish delay and its `intendedSendTime` do the same). A fixed-rate
//! point whose achieved throughput falls short of its target by more than
//! [`SUSTAINED_SHARE`] is marked unsustained: past the knee.

use serde::Serialize;

use super::args::{acks_label, ProducerSettings};
use super::broker_metrics::BrokerSide;
use super::report::PointResult;
use crate::histogram::LatencySummary;

/// Fractions of the maximum rate, in percent, run by default.
pub const DEFAULT_FRACTIONS_PCT: [u32; 5] = [10, 25, 50, 75, 90];

/// A fixed-rate point is sustained when it achieved this share of its target.
pub const SUSTAINED_SHARE: f64 = 0.95;

/// What a sweep runs for each setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunMode {
    /// Maximum rate, then fixed-rate runs at these percentages of it.
    Curve { fractions_pct: Vec<u32> },
    /// One flat-out run per setting (`--flat-out`, or `--messages N`).
    FlatOut,
    /// One run per setting at this total rate (`--rate N`, or an OMB
    /// workload's `producerRate`).
    Fixed { rate: u64 },
}

/// Parses `--fractions 10,25,50`: percentages in 1..=100, returned sorted
/// and without duplicates.
pub fn parse_fractions(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let pct: u32 = part
            .trim_end_matches('%')
            .parse()
            .map_err(|_| format!("--fractions: {part:?} is not a percentage"))?;
        if !(1..=100).contains(&pct) {
            return Err(format!("--fractions: {pct} is outside 1..=100"));
        }
        out.push(pct);
    }
    if out.is_empty() {
        return Err(format!("--fractions: no percentages in {s:?}"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Picks the run mode: a fixed rate (flag or workload) wins, then
/// `--flat-out` or count mode, else the curve. `--fractions` only makes
/// sense for the curve, so it is refused with the others.
pub fn resolve_mode(
    flat_out: bool,
    fractions: Option<&str>,
    rate: Option<u64>,
    count_mode: bool,
) -> Result<RunMode, String> {
    let fractions = fractions.map(parse_fractions).transpose()?;
    let other = match (rate, flat_out || count_mode) {
        (Some(rate), _) if flat_out => {
            return Err(format!(
                "--flat-out conflicts with a fixed rate of {rate}/s"
            ))
        }
        (Some(rate), _) => Some(RunMode::Fixed { rate }),
        (None, true) => Some(RunMode::FlatOut),
        (None, false) => None,
    };
    match (other, fractions) {
        (Some(_), Some(_)) => {
            Err("--fractions needs the curve mode (no --rate, --messages or --flat-out)".into())
        }
        (Some(mode), None) => Ok(mode),
        (None, f) => Ok(RunMode::Curve {
            fractions_pct: f.unwrap_or_else(|| DEFAULT_FRACTIONS_PCT.to_vec()),
        }),
    }
}

/// The total rate (msgs/s) of the fixed-rate run at `pct` percent of
/// `max_rate`; at least 1.
pub fn fixed_rate(max_rate: f64, pct: u32) -> u64 {
    let r = (max_rate.max(0.0) * f64::from(pct) / 100.0).round();
    (r as u64).max(1)
}

/// Intended send times of a fixed-rate producer: record `n` is due at
/// `origin + n * interval`. Computed from the origin, not by adding the
/// interval to the previous time, so rounding never drifts the grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedRateSchedule {
    origin_ns: u64,
    interval_ns: f64,
}

impl FixedRateSchedule {
    /// `None` for a rate that is not positive (flat out).
    pub fn new(origin_ns: u64, rate_per_sec: f64) -> Option<Self> {
        (rate_per_sec.is_finite() && rate_per_sec > 0.0).then(|| Self {
            origin_ns,
            interval_ns: 1e9 / rate_per_sec,
        })
    }

    /// When record `seq` (0-based) should be sent.
    pub fn intended_ns(&self, seq: u64) -> u64 {
        self.origin_ns + (seq as f64 * self.interval_ns) as u64
    }
}

/// Latency corrected for coordinated omission: from the intended send
/// time to the acknowledgement.
pub fn corrected_latency_ns(intended_ns: u64, acked_ns: u64) -> u64 {
    acked_ns.saturating_sub(intended_ns)
}

/// One fixed-rate point of a curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurvePoint {
    /// Percent of the setting's maximum rate.
    pub fraction_pct: u32,
    /// Total msgs/s asked for.
    pub target_rate: u64,
    pub achieved_msgs_per_sec: f64,
    pub achieved_mb_per_sec: f64,
    /// Achieved at least [`SUSTAINED_SHARE`] of the target.
    pub sustained: bool,
    /// Produce-ack latency from the intended send time (p50_us, p99_us,
    /// p999_us, ...).
    pub latency: LatencySummary,
    pub errors: u64,
    /// The brokers' side of the run (`broker_metrics`), if scraped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker: Option<BrokerSide>,
}

/// One setting's curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    /// `acks=1 linger.ms=5 batch.size=16384`: the sweep point's label
    /// (`kafka: acks=1 ...` in a `--compare` report).
    pub setting: String,
    /// The broker's `--compare` name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub acks: String,
    pub linger_ms: i64,
    pub batch_size: usize,
    pub settings: ProducerSettings,
    /// Flat-out throughput: the maximum rate, msgs/s and MB/s.
    pub max_rate: f64,
    pub max_mb_per_sec: f64,
    /// Latency of the flat-out run, from the actual send (client queueing
    /// dominates it).
    pub max_rate_latency: LatencySummary,
    /// Fixed-rate points in increasing fraction order.
    pub points: Vec<CurvePoint>,
}

impl Curve {
    /// A curve started by its flat-out run.
    pub fn from_max_run(setting: &str, max: &PointResult) -> Self {
        Self {
            setting: setting.to_string(),
            target: None,
            acks: acks_label(max.settings.acks).to_string(),
            linger_ms: max.settings.linger_ms,
            batch_size: max.settings.batch_size,
            settings: max.settings.clone(),
            max_rate: max.msgs_per_sec,
            max_mb_per_sec: max.mb_per_sec,
            max_rate_latency: max.ack_latency,
            points: Vec::new(),
        }
    }

    /// Adds the run at `fraction_pct` (target `target_rate`); its latency
    /// is the corrected one, falling back to the actual-send latency when
    /// the run had no schedule.
    pub fn on_fixed_run(&mut self, fraction_pct: u32, target_rate: u64, run: &PointResult) {
        let achieved = run.msgs_per_sec;
        self.points.push(CurvePoint {
            fraction_pct,
            target_rate,
            achieved_msgs_per_sec: achieved,
            achieved_mb_per_sec: run.mb_per_sec,
            sustained: achieved >= target_rate as f64 * SUSTAINED_SHARE,
            latency: run.ack_latency_intended.unwrap_or(run.ack_latency),
            errors: run.errors,
            broker: run.broker.clone(),
        });
        self.points.sort_by_key(|p| p.fraction_pct);
        self.check_invariants();
    }

    /// The point at `fraction_pct`, if it was run.
    pub fn at(&self, fraction_pct: u32) -> Option<&CurvePoint> {
        self.points.iter().find(|p| p.fraction_pct == fraction_pct)
    }

    fn check_invariants(&self) {
        debug_assert!(self
            .points
            .windows(2)
            .all(|w| w[0].fraction_pct < w[1].fraction_pct));
    }
}

/// Estimates the time left of a whole sweep from the runs finished so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Eta {
    runs_total: usize,
    runs_done: usize,
    done_secs: f64,
    planned_run_secs: f64,
}

impl Eta {
    /// `planned_run_secs`: warm-up + duration + a guess of the overhead,
    /// used until a run has finished.
    pub fn new(runs_total: usize, planned_run_secs: f64) -> Self {
        Self {
            runs_total,
            runs_done: 0,
            done_secs: 0.0,
            planned_run_secs,
        }
    }

    /// A run finished after `wall_secs`.
    pub fn on_run_done(&mut self, wall_secs: f64) {
        self.runs_done = (self.runs_done + 1).min(self.runs_total);
        self.done_secs += wall_secs.max(0.0);
        self.check_invariants();
    }

    fn check_invariants(&self) {
        debug_assert!(self.runs_done <= self.runs_total);
        debug_assert!(self.done_secs >= 0.0);
    }

    /// 1-based number of the run in progress.
    pub fn current_run(&self) -> usize {
        (self.runs_done + 1).min(self.runs_total)
    }

    pub fn runs_total(&self) -> usize {
        self.runs_total
    }

    /// Mean wall time of a finished run, or the planned time before any.
    pub fn per_run_secs(&self) -> f64 {
        if self.runs_done == 0 {
            self.planned_run_secs
        } else {
            self.done_secs / self.runs_done as f64
        }
    }

    /// Seconds left of the sweep when the current run has been going for
    /// `current_elapsed_secs`.
    pub fn remaining_secs(&self, current_elapsed_secs: f64) -> f64 {
        let per = self.per_run_secs();
        let after = self.runs_total.saturating_sub(self.runs_done + 1) as f64;
        let current = if self.runs_done < self.runs_total {
            (per - current_elapsed_secs).max(0.0)
        } else {
            0.0
        };
        current + after * per
    }
}

/// `1h02m`, `3m05s`, `42s`.
pub fn format_eta(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests;
