//! `[pure]` Renderings of the trade-off explorer's curves
//! ([`super::curve`]): results.json with the curves, the main SVG plot (one
//! curve per setting: a percentile of produce latency, corrected for
//! coordinated omission, against achieved throughput), one plot per acks
//! level (colour = linger.ms, dash = batch.size, so it shows how those two
//! move the curve), a markdown table (max rate and latency at each
//! fraction), and an HTML page holding them all. Rendering only; the caller
//! writes the files.
//!
//! The latency axis is logarithmic: below the knee latencies differ by
//! fractions of a millisecond, past it by hundreds, and both must be read.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use super::args::Workload;
use super::curve::Curve;
use super::report::{
    escape_xml, nice_max, render_broker_table, render_table, tick_label, PointResult,
};
use crate::histogram::LatencySummary;

/// The latency percentile a plot shows (`--plot-percentile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Percentile {
    P50,
    P99,
    P999,
}

impl Percentile {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().trim_start_matches('p') {
            "50" => Ok(Self::P50),
            "99" => Ok(Self::P99),
            "99.9" | "999" => Ok(Self::P999),
            other => Err(format!(
                "--plot-percentile: {other:?}: expected p50, p99 or p99.9"
            )),
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::P999 => "p99.9",
        }
    }
    /// The percentile of `s`, in ms.
    pub fn of_ms(self, s: &LatencySummary) -> f64 {
        let us = match self {
            Self::P50 => s.p50_us,
            Self::P99 => s.p99_us,
            Self::P999 => s.p999_us,
        };
        us / 1_000.0
    }
}

/// results.json of a curve run.
#[derive(Debug, Clone, Serialize)]
pub struct CurveReport {
    pub bootstrap: String,
    pub workload: Workload,
    pub fractions_pct: Vec<u32>,
    pub curves: Vec<Curve>,
    /// Every run, flat-out and fixed-rate, as a flat sweep reports them.
    pub points: Vec<PointResult>,
}

pub fn render_json(report: &CurveReport) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(report)
}

/// Ten distinguishable colours (matplotlib's tab10).
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
const DASHES: [&str; 4] = ["", "6,3", "2,3", "8,3,2,3"];

/// How curves are told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CurveStyle {
    /// A colour per curve (the main plot).
    PerSetting,
    /// Colour by linger.ms, dash by batch.size (the per-acks plots).
    LingerAndBatch,
}

/// Stroke colour and dash pattern of each curve, in order.
pub fn curve_strokes(curves: &[&Curve], style: CurveStyle) -> Vec<(&'static str, &'static str)> {
    // Colour tells (broker, linger.ms) apart in a --compare report.
    let lingers: BTreeSet<(Option<&str>, i64)> = curves
        .iter()
        .map(|c| (c.target.as_deref(), c.linger_ms))
        .collect();
    let batches: BTreeSet<usize> = curves.iter().map(|c| c.batch_size).collect();
    let linger_rank = |c: &Curve| {
        let key = (c.target.as_deref(), c.linger_ms);
        lingers.iter().position(|x| *x == key).unwrap_or(0)
    };
    let batch_rank = |c: &Curve| batches.iter().position(|x| *x == c.batch_size).unwrap_or(0);
    curves
        .iter()
        .enumerate()
        .map(|(i, c)| match style {
            CurveStyle::PerSetting => (
                PALETTE[i % PALETTE.len()],
                DASHES[(i / PALETTE.len()) % DASHES.len()],
            ),
            CurveStyle::LingerAndBatch => (
                PALETTE[linger_rank(c) % PALETTE.len()],
                DASHES[batch_rank(c) % DASHES.len()],
            ),
        })
        .collect()
}

/// Plot geometry: a linear throughput axis from 0 and a logarithmic
/// latency axis over whole decades.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub top: f64,
    pub plot_w: f64,
    pub plot_h: f64,
    pub max_x: f64,
    /// log10 of the latency axis ends (ms).
    pub lo_decade: i32,
    pub hi_decade: i32,
}

/// Latencies below 1 µs are drawn at 1 µs.
const MIN_MS: f64 = 0.001;
const LEGEND_ROW: f64 = 16.0;

impl Frame {
    pub fn new(curves: &[&Curve], pct: Percentile) -> Self {
        let xs = curves.iter().flat_map(|c| {
            std::iter::once(c.max_rate).chain(c.points.iter().map(|p| p.achieved_msgs_per_sec))
        });
        let max_x = nice_max(xs.fold(0.0, f64::max));
        let ys: Vec<f64> = curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| pct.of_ms(&p.latency).max(MIN_MS)))
            .collect();
        let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ys.iter().copied().fold(0.0, f64::max);
        let (lo_decade, hi_decade) = if ys.is_empty() {
            (-1, 2)
        } else {
            let l = lo.log10().floor() as i32;
            let h = (hi.log10().ceil() as i32).max(l + 1);
            (l, h)
        };
        let (width, left, right, top, plot_h) = (760.0, 80.0, 30.0, 40.0, 380.0);
        let legend = LEGEND_ROW * curves.len() as f64;
        Self {
            width,
            height: top + plot_h + 60.0 + legend + 10.0,
            left,
            top,
            plot_w: width - left - right,
            plot_h,
            max_x,
            lo_decade,
            hi_decade,
        }
    }

    pub fn sx(&self, msgs_per_sec: f64) -> f64 {
        self.left + self.plot_w * (msgs_per_sec / self.max_x).clamp(0.0, 1.0)
    }

    pub fn sy(&self, ms: f64) -> f64 {
        let (lo, hi) = (f64::from(self.lo_decade), f64::from(self.hi_decade));
        let f = ((ms.max(MIN_MS).log10() - lo) / (hi - lo)).clamp(0.0, 1.0);
        self.top + self.plot_h - self.plot_h * f
    }

    /// The latency ticks: one per decade, in ms.
    pub fn y_ticks(&self) -> Vec<f64> {
        (self.lo_decade..=self.hi_decade)
            .map(|d| 10f64.powi(d))
            .collect()
    }

    fn bottom(&self) -> f64 {
        self.top + self.plot_h
    }

    fn axes(&self, s: &mut String, pct: Percentile) {
        let (left, top, bottom) = (self.left, self.top, self.bottom());
        let right = left + self.plot_w;
        let _ = writeln!(
            s,
            r##"<g class="axes" stroke="#333"><line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}"/><line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}"/></g>"##
        );
        for i in 0..=5 {
            let f = f64::from(i) / 5.0;
            let x = left + self.plot_w * f;
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{bottom}" x2="{x:.1}" y2="{}" stroke="#333"/><text class="tick" x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                bottom + 5.0,
                bottom + 18.0,
                tick_label(self.max_x * f, self.max_x)
            );
        }
        for v in self.y_ticks() {
            let y = self.sy(v);
            let text = if v >= 1.0 {
                format!("{v:.0}")
            } else {
                format!("{v}")
            };
            let _ = writeln!(
                s,
                r##"<line x1="{}" y1="{y:.1}" x2="{right}" y2="{y:.1}" stroke="#ddd"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{text}</text>"##,
                left - 5.0,
                left - 8.0,
                y + 4.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text class="axis-label" data-axis="x" x="{}" y="{}" text-anchor="middle">achieved throughput (msgs/s)</text>"#,
            left + self.plot_w / 2.0,
            bottom + 40.0
        );
        let _ = writeln!(
            s,
            r#"<text class="axis-label" data-axis="y" transform="translate(18,{}) rotate(-90)" text-anchor="middle">{} produce latency (ms, log; from intended send time)</text>"#,
            top + self.plot_h / 2.0,
            pct.label()
        );
    }
}

/// The legend text of a curve in a per-acks plot: its setting without acks.
fn without_acks(setting: &str) -> String {
    let rest: Vec<&str> = setting
        .split(' ')
        .filter(|t| !t.starts_with("acks="))
        .collect();
    if rest.is_empty() {
        "base".into()
    } else {
        rest.join(" ")
    }
}

/// One curve: a polyline through its fixed-rate points (hollow markers
/// for unsustained ones) and a triangle on the x axis at its max rate.
fn draw_curve(s: &mut String, f: &Frame, c: &Curve, stroke: (&str, &str), pct: Percentile) {
    let (color, dash) = stroke;
    let setting = escape_xml(&c.setting);
    let coords: Vec<String> = c
        .points
        .iter()
        .map(|p| {
            let (x, y) = (f.sx(p.achieved_msgs_per_sec), f.sy(pct.of_ms(&p.latency)));
            format!("{x:.1},{y:.1}")
        })
        .collect();
    let _ = writeln!(
        s,
        r#"<g class="curve-group"><polyline class="curve" data-setting="{setting}" fill="none" stroke="{color}" stroke-dasharray="{dash}" stroke-width="2" points="{}"/>"#,
        coords.join(" ")
    );
    for p in &c.points {
        let fill = if p.sustained { color } else { "white" };
        let _ = writeln!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{fill}" stroke="{color}"><title>{setting} at {}% ({}/s): {:.0} msgs/s, {} {:.3} ms{}</title></circle>"#,
            f.sx(p.achieved_msgs_per_sec),
            f.sy(pct.of_ms(&p.latency)),
            p.fraction_pct,
            p.target_rate,
            p.achieved_msgs_per_sec,
            pct.label(),
            pct.of_ms(&p.latency),
            if p.sustained { "" } else { " (unsustained)" }
        );
    }
    let (x, y) = (f.sx(c.max_rate), f.bottom());
    let _ = writeln!(
        s,
        r#"<path class="max-rate" d="M{x:.1},{:.1} l-4,-7 h8 z" fill="{color}"><title>{setting}: max {:.0} msgs/s</title></path></g>"#,
        y - 1.0,
        c.max_rate
    );
}

fn draw_legend(s: &mut String, f: &Frame, entries: &[(String, (&str, &str))]) {
    let _ = writeln!(s, r#"<g class="legend">"#);
    for (i, (text, (color, dash))) in entries.iter().enumerate() {
        let y = f.bottom() + 60.0 + LEGEND_ROW * i as f64;
        let x = f.left;
        let _ = writeln!(
            s,
            r#"<g class="legend-entry"><line x1="{x}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="{color}" stroke-dasharray="{dash}" stroke-width="3"/><text x="{}" y="{:.1}">{}</text></g>"#,
            x + 24.0,
            x + 30.0,
            y + 4.0,
            escape_xml(text)
        );
    }
    let _ = writeln!(s, "</g>");
}

/// Hand-written SVG of `curves`: one `<polyline class="curve">` each, axis
/// titles (`class="axis-label"`), a `<g class="legend">` with one entry per
/// curve naming it and its max rate.
pub fn render_curves_svg(
    curves: &[&Curve],
    title: &str,
    style: CurveStyle,
    pct: Percentile,
) -> String {
    let f = Frame::new(curves, pct);
    let (w, h) = (f.width, f.height);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text class="title" x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        w / 2.0,
        escape_xml(title)
    );
    f.axes(&mut s, pct);
    let strokes = curve_strokes(curves, style);
    for (c, stroke) in curves.iter().zip(&strokes) {
        draw_curve(&mut s, &f, c, *stroke, pct);
    }
    let entries: Vec<(String, (&str, &str))> = curves
        .iter()
        .zip(&strokes)
        .map(|(c, st)| {
            let name = match style {
                CurveStyle::PerSetting => c.setting.clone(),
                CurveStyle::LingerAndBatch => without_acks(&c.setting),
            };
            (format!("{name} (max {:.0} msgs/s)", c.max_rate), *st)
        })
        .collect();
    draw_legend(&mut s, &f, &entries);
    s.push_str("</svg>\n");
    s
}

/// The main plot: every curve.
pub fn render_main_svg(curves: &[Curve], pct: Percentile) -> String {
    let all: Vec<&Curve> = curves.iter().collect();
    let title = format!(
        "{} produce latency vs achieved throughput, one curve per setting",
        pct.label()
    );
    render_curves_svg(&all, &title, CurveStyle::PerSetting, pct)
}

/// One plot per acks level, in order of first appearance: `(acks, svg)`.
pub fn render_acks_svgs(curves: &[Curve], pct: Percentile) -> Vec<(String, String)> {
    let mut levels: Vec<&str> = Vec::new();
    for c in curves {
        if !levels.contains(&c.acks.as_str()) {
            levels.push(&c.acks);
        }
    }
    levels
        .into_iter()
        .map(|acks| {
            let group: Vec<&Curve> = curves.iter().filter(|c| c.acks == acks).collect();
            let title =
                format!("acks={acks}: how linger.ms (colour) and batch.size (dash) move the curve");
            let svg = render_curves_svg(&group, &title, CurveStyle::LingerAndBatch, pct);
            (acks.to_string(), svg)
        })
        .collect()
}

/// File name of an acks level's plot.
pub fn acks_svg_name(acks: &str) -> String {
    format!("latency-acks-{acks}.svg")
}

fn cell_ms(us: f64) -> String {
    let ms = us / 1_000.0;
    match ms {
        m if m >= 100.0 => format!("{m:.0}"),
        m if m >= 10.0 => format!("{m:.1}"),
        m => format!("{m:.2}"),
    }
}

/// Rows of the curve table: header, then per curve the setting, max rate
/// and `p50/p99/p99.9` ms at each fraction (`*` marks unsustained points).
fn table_rows(curves: &[Curve], fractions: &[u32]) -> Vec<Vec<String>> {
    let mut header = vec![
        "setting".to_string(),
        "max msgs/s".into(),
        "max MB/s".into(),
    ];
    header.extend(fractions.iter().map(|f| format!("{f}%")));
    let mut rows = vec![header];
    for c in curves {
        let mut row = vec![
            c.setting.clone(),
            format!("{:.0}", c.max_rate),
            format!("{:.2}", c.max_mb_per_sec),
        ];
        for f in fractions {
            row.push(match c.at(*f) {
                Some(p) => format!(
                    "{:.0}/s {}/{}/{}{}",
                    p.achieved_msgs_per_sec,
                    cell_ms(p.latency.p50_us),
                    cell_ms(p.latency.p99_us),
                    cell_ms(p.latency.p999_us),
                    if p.sustained { "" } else { "*" }
                ),
                None => "-".into(),
            });
        }
        rows.push(row);
    }
    rows
}

/// The curve table as markdown (also readable as plain text).
pub fn render_curve_table(curves: &[Curve], fractions: &[u32]) -> String {
    let rows = table_rows(curves, fractions);
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let line = |r: &Vec<String>| {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| format!("{v:<w$}", w = widths[c]))
            .collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = String::from(
        "Max rate: flat out. At each fraction of it: achieved msgs/s, then \
         p50/p99/p99.9 produce latency in ms from the intended send time \
         (coordinated omission corrected); * = achieved < 95% of the target.\n\n",
    );
    out.push_str(&line(&rows[0]));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&format!("|-{}-|\n", rule.join("-|-")));
    for r in &rows[1..] {
        out.push_str(&line(r));
    }
    out
}

/// The HTML page: plots, curve table and every run's table.
pub fn render_curve_html(
    report: &CurveReport,
    main_svg: &str,
    acks: &[(String, String)],
) -> String {
    let mut table = String::from("<table>\n");
    for (i, r) in table_rows(&report.curves, &report.fractions_pct)
        .iter()
        .enumerate()
    {
        let tag = if i == 0 { "th" } else { "td" };
        let cells: Vec<String> = r
            .iter()
            .map(|c| format!("<{tag}>{}</{tag}>", escape_xml(c)))
            .collect();
        let _ = writeln!(table, "<tr>{}</tr>", cells.join(""));
    }
    table.push_str("</table>\n");
    let per_acks: String = acks
        .iter()
        .map(|(a, svg)| format!("<h3>acks={}</h3>\n{svg}", escape_xml(a)))
        .collect();
    let broker = render_broker_table(&report.points);
    let w = &report.workload;
    format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>shardlog trade-off explorer</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td:first-child{{text-align:left}}</style>
</head><body>
<h1>shardlog trade-off explorer</h1>
<p>bootstrap {}; workload {}: {} topic(s) x {} partition(s), {} B messages, {} producer(s)/topic; each run {:.1}s measured after {:.1}s warm-up; fractions {:?}% of each setting's max rate.</p>
<p>Read a curve left to right: latency stays flat while the broker keeps up, then bends up at the knee; a curve further right sustains more, a lower one answers faster. Hollow markers did not reach 95% of their target rate; a triangle on the x axis marks the setting's flat-out rate.</p>
<h2>Latency vs achieved throughput</h2>
{main_svg}
<h2>Per acks level</h2>
{per_acks}
<h2>Max rate and latency at each fraction</h2>
{table}
<h2>Broker side of each run (ms)</h2>
{broker}
<h2>Every run</h2>
<pre>{}</pre>
</body></html>
"#,
        escape_xml(&report.bootstrap),
        escape_xml(&w.name),
        w.topics,
        w.partitions_per_topic,
        w.message_size,
        w.producers_per_topic,
        w.duration.as_secs_f64(),
        w.warmup.as_secs_f64(),
        report.fractions_pct,
        escape_xml(&render_table(&report.points)),
    )
}

#[cfg(test)]
mod tests;
