//! `[drv]` The trade-off explorer's driver (the default `shardlog loadgen`
//! and `shardlog bench` mode): for each setting of the sweep a flat-out run
//! gives its max rate, then one fixed-rate run per fraction of it; the pure
//! [`curve`](super::curve) module turns the runs into curves and
//! [`curve_report`](super::curve_report) renders them. Progress: each run's
//! live line names the run, its target rate and the sweep's ETA.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use super::args::{LoadgenArgs, Workload};
use super::broker_metrics::point_split;
use super::client::SyncClient;
use super::curve::{fixed_rate, Curve, Eta};
use super::curve_report::{self, CurveReport, Percentile};
use super::flame;
use super::point::{run_point, RunContext};
use super::report::{self, PointResult};
use super::scrape::scrape;
use super::sweep::SweepPoint;
use super::tls::Security;
use crate::io::clock::{Clock, SystemClock};

/// What every run of a sweep shares.
pub struct Sweep<'a> {
    pub args: &'a LoadgenArgs,
    pub workload: &'a Workload,
    pub cpus: Vec<usize>,
    pub admin_timeout: Duration,
    /// `--security-protocol` and its TLS files.
    pub security: &'a Security,
    /// `--flamegraph-pid`: one flamegraph per run.
    pub flame: Option<&'a flame::Recorder>,
    /// `--broker-metrics`: the metrics listeners scraped around each run.
    pub broker_metrics: &'a [String],
}

impl Sweep<'_> {
    /// A first guess of one run's wall time: warm-up, duration, and about
    /// a second and a half to start clients and drain consumers.
    pub fn planned_run_secs(&self) -> f64 {
        (self.workload.warmup + self.workload.duration).as_secs_f64() + 1.5
    }

    /// Runs `point` with `rate` (`None` flat out), timing it into `eta`.
    pub fn run_once(
        &self,
        boot: &mut SyncClient,
        point: &SweepPoint,
        rate: Option<u64>,
        label: String,
        eta: &mut Eta,
    ) -> Result<PointResult> {
        let workload = Workload {
            producer_rate: rate,
            ..self.workload.clone()
        };
        let ctx = RunContext {
            args: self.args,
            workload: &workload,
            cpus: self.cpus.clone(),
            admin_timeout: self.admin_timeout,
            security: self.security,
            label: label.clone(),
            eta: eta.clone(),
        };
        let clock = SystemClock::new();
        let before: Vec<_> = self.broker_metrics.iter().map(|a| scrape(a)).collect();
        let start = clock.mono_ms();
        let recording = match self.flame {
            Some(f) => Some(f.start(&label, workload.warmup, workload.duration)?),
            None => None,
        };
        let r = run_point(&ctx, boot, point);
        if let Some(rec) = recording {
            // Even after a failed run: perf must not outlive it.
            let svg = rec.finish()?;
            eprintln!("loadgen: flamegraph {}", svg.display());
        }
        let mut r = r?;
        let secs = (clock.mono_ms() - start) as f64 / 1e3;
        if !self.broker_metrics.is_empty() {
            let after = self.broker_metrics.iter().map(|a| scrape(a));
            let pairs: Vec<_> = before.into_iter().zip(after).collect();
            r.broker = Some(point_split(&pairs, secs));
        }
        eta.on_run_done(secs);
        r.label = label;
        r.target_rate = rate;
        Ok(r)
    }
}

/// One broker of the report: its sweep, its connection, and its name in a
/// `--compare` report (`None` alone).
pub struct Target<'a> {
    pub name: Option<String>,
    pub sweep: Sweep<'a>,
    pub boot: SyncClient,
}

/// Runs the curves of every point against every target, in turn, and
/// writes one report into `out`; on an error, what was measured so far is
/// written first.
pub fn run_curves(
    targets: &mut [Target<'_>],
    points: &[SweepPoint],
    fractions_pct: &[u32],
    percentile: Percentile,
    out: &Path,
) -> Result<()> {
    let Some(first) = targets.first() else {
        return Ok(());
    };
    let mut eta = Eta::new(
        targets.len() * points.len() * (1 + fractions_pct.len()),
        first.sweep.planned_run_secs(),
    );
    let bootstraps: Vec<String> = targets
        .iter()
        .map(|t| match &t.name {
            Some(n) => format!("{n}={}", t.sweep.args.bootstrap),
            None => t.sweep.args.bootstrap.clone(),
        })
        .collect();
    let mut report = CurveReport {
        bootstrap: bootstraps.join(", "),
        workload: first.sweep.workload.clone(),
        fractions_pct: fractions_pct.to_vec(),
        curves: Vec::with_capacity(points.len() * targets.len()),
        points: Vec::new(),
    };
    for t in targets.iter_mut() {
        for point in points {
            let r = run_curve(t, point, &mut eta, &mut report);
            if let Err(e) = r {
                if !report.points.is_empty() {
                    let _ = write_curves(&report, percentile, out);
                    eprintln!(
                        "loadgen: stopped after {} run(s); the report of what finished is in {}",
                        report.points.len(),
                        out.display()
                    );
                }
                return Err(e);
            }
        }
    }
    print!(
        "{}",
        curve_report::render_curve_table(&report.curves, fractions_pct)
    );
    write_curves(&report, percentile, out)
}

/// The flat-out run, then one run per fraction of its throughput.
fn run_curve(
    target: &mut Target<'_>,
    point: &SweepPoint,
    eta: &mut Eta,
    report: &mut CurveReport,
) -> Result<()> {
    let (sweep, boot) = (&target.sweep, &mut target.boot);
    let setting = match &target.name {
        Some(n) => format!("{n}: {}", point.label()),
        None => point.label(),
    };
    let max = sweep.run_once(boot, point, None, format!("{setting} @max"), eta)?;
    let mut curve = Curve::from_max_run(&setting, &max);
    curve.target = target.name.clone();
    report.points.push(max);
    for &pct in &report.fractions_pct.clone() {
        let rate = fixed_rate(curve.max_rate, pct);
        let label = format!("{setting} @{pct}% {rate}/s");
        match sweep.run_once(boot, point, Some(rate), label, eta) {
            Ok(r) => {
                curve.on_fixed_run(pct, rate, &r);
                report.points.push(r);
            }
            Err(e) => {
                report.curves.push(curve);
                return Err(e);
            }
        }
    }
    report.curves.push(curve);
    Ok(())
}

fn write_curves(report: &CurveReport, percentile: Percentile, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let main = curve_report::render_main_svg(&report.curves, percentile);
    let acks = curve_report::render_acks_svgs(&report.curves, percentile);
    let write = |name: &str, text: &str| {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("results.json", &curve_report::render_json(report)?)?;
    write("results.csv", &report::render_csv(&report.points))?;
    write("latency.svg", &main)?;
    for (a, svg) in &acks {
        write(&curve_report::acks_svg_name(a), svg)?;
    }
    write(
        "curves.md",
        &curve_report::render_curve_table(&report.curves, &report.fractions_pct),
    )?;
    write(
        "report.html",
        &curve_report::render_curve_html(report, &main, &acks),
    )?;
    eprintln!(
        "loadgen: wrote results.json, results.csv, latency.svg, {} plot(s) per acks level, curves.md, report.html to {}",
        acks.len(),
        out.display()
    );
    Ok(())
}
