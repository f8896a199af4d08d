//! `[pure]` Results of a run and their renderings: a text table for stdout,
//! CSV, JSON, an SVG plot of throughput (x) against p99 produce latency (y)
//! with one series per acks level, and a self-contained HTML page.
//! Rendering only; the caller writes the files.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::args::{ProducerSettings, Workload};
use super::broker_metrics::{cell, BrokerSide, PARTS};
use crate::histogram::LatencySummary;

/// Measured results of one sweep point.
#[derive(Debug, Clone, Serialize, Default)]
pub struct PointResult {
    pub index: usize,
    pub label: String,
    /// `0`, `1` or `all`: the series the point belongs to in the plot.
    pub acks: String,
    pub settings: ProducerSettings,
    /// Total msgs/s asked for; `None` flat out.
    pub target_rate: Option<u64>,
    pub idempotent: bool,
    /// Length of the measured window (after warm-up).
    pub measured_secs: f64,
    /// Records acknowledged in the measured window (sent, for acks=0).
    pub measured_records: u64,
    pub msgs_per_sec: f64,
    pub mb_per_sec: f64,
    /// Failed records, total and by Kafka error code (`"6 NotLeaderOrFollower"`);
    /// client-side failures have negative pseudo codes.
    pub errors: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    pub retries: u64,
    /// Produce latency from the actual `send` to its acknowledgement.
    pub ack_latency: LatencySummary,
    /// Produce latency from the intended send time (fixed-rate mode only;
    /// corrects coordinated omission, like OMB's publish delay).
    pub ack_latency_intended: Option<LatencySummary>,
    /// Send (timestamp in the payload) to consume, when consuming.
    pub e2e_latency: Option<LatencySummary>,
    /// Whole-point counters, warm-up included, for verification.
    pub produced: u64,
    pub consumed: u64,
    pub duplicates: u64,
    pub offset_gaps: u64,
    pub out_of_order: u64,
    pub missing: u64,
    /// The brokers' side of the run from their `/metrics` (`None`: no
    /// `--broker-metrics` given).
    pub broker: Option<BrokerSide>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub bootstrap: String,
    pub workload: Workload,
    pub points: Vec<PointResult>,
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1_000.0)
}

/// The stdout table: throughput, produce-ack percentiles (ms), e2e p99, errors.
pub fn render_table(points: &[PointResult]) -> String {
    let mut rows: Vec<Vec<String>> = vec![[
        "point",
        "msgs/s",
        "MB/s",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "p99 intended",
        "e2e p99",
        "errors",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()];
    for p in points {
        let mut row = vec![
            p.label.clone(),
            format!("{:.0}", p.msgs_per_sec),
            format!("{:.2}", p.mb_per_sec),
        ];
        row.extend(p.ack_latency.columns().iter().map(|(_, v)| ms(*v)));
        row.push(p.ack_latency_intended.map_or("-".into(), |e| ms(e.p99_us)));
        row.push(p.e2e_latency.map_or("-".into(), |e| ms(e.p99_us)));
        row.push(p.errors.to_string());
        rows.push(row);
    }
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::from(
        "produce-ack latency in ms from send (acks=0: until written); \
         p99 intended: from the fixed-rate schedule (--rate)\n",
    );
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| {
                if c == 0 {
                    format!("{v:<w$}", w = widths[c])
                } else {
                    format!("{v:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1)));
            out.push('\n');
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn summary_cells(s: Option<&LatencySummary>) -> Vec<String> {
    match s {
        Some(s) => s.columns().iter().map(|(_, v)| format!("{v:.1}")).collect(),
        None => vec![String::new(); 6],
    }
}

/// One CSV row per point; latencies in microseconds.
pub fn render_csv(points: &[PointResult]) -> String {
    let mut header: Vec<String> = [
        "index",
        "label",
        "acks",
        "linger_ms",
        "batch_size",
        "compression",
        "idempotent",
        "target_rate",
        "measured_secs",
        "msgs_per_sec",
        "mb_per_sec",
        "errors",
        "retries",
        "produced",
        "consumed",
        "duplicates",
        "offset_gaps",
        "out_of_order",
        "missing",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for prefix in ["ack", "ack_intended", "e2e"] {
        for col in ["p50", "p90", "p99", "p999", "p9999", "max"] {
            header.push(format!("{prefix}_{col}_us"));
        }
    }
    let mut out = header.join(",");
    out.push('\n');
    for p in points {
        let mut row = vec![
            p.index.to_string(),
            csv_field(&p.label),
            p.acks.clone(),
            p.settings.linger_ms.to_string(),
            p.settings.batch_size.to_string(),
            p.settings.compression_type.name().to_string(),
            p.idempotent.to_string(),
            p.target_rate.map_or(String::new(), |r| r.to_string()),
            format!("{:.3}", p.measured_secs),
            format!("{:.1}", p.msgs_per_sec),
            format!("{:.3}", p.mb_per_sec),
            p.errors.to_string(),
            p.retries.to_string(),
            p.produced.to_string(),
            p.consumed.to_string(),
            p.duplicates.to_string(),
            p.offset_gaps.to_string(),
            p.out_of_order.to_string(),
            p.missing.to_string(),
        ];
        row.extend(summary_cells(Some(&p.ack_latency)));
        row.extend(summary_cells(p.ack_latency_intended.as_ref()));
        row.extend(summary_cells(p.e2e_latency.as_ref()));
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

pub fn render_json(report: &RunReport) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(report)
}

pub(crate) fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// Points grouped by acks level, each group sorted by throughput.
/// `(msgs/s, p99 ms, label)` of one plotted point.
type PlotPoint = (f64, f64, String);

fn series(points: &[PointResult]) -> Vec<(String, Vec<PlotPoint>)> {
    let mut groups: BTreeMap<String, Vec<PlotPoint>> = BTreeMap::new();
    for p in points {
        groups.entry(p.acks.clone()).or_default().push((
            p.msgs_per_sec,
            p.ack_latency.p99_us / 1_000.0,
            p.label.clone(),
        ));
    }
    let mut out: Vec<_> = groups.into_iter().collect();
    for (_, pts) in &mut out {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Axis tick text with as many decimals as the axis range needs.
pub(crate) fn tick_label(v: f64, max: f64) -> String {
    match max {
        m if m >= 10.0 => format!("{v:.0}"),
        m if m >= 1.0 => format!("{v:.1}"),
        m if m >= 0.1 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

pub(crate) fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * mag {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Plot area geometry and axis ranges.
struct Plot {
    width: f64,
    height: f64,
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    max_x: f64,
    max_y: f64,
}

impl Plot {
    fn new(points: &[PointResult]) -> Self {
        let (width, height, left, right, top, bottom) = (720.0, 440.0, 80.0, 150.0, 30.0, 60.0);
        let max_x = nice_max(points.iter().map(|p| p.msgs_per_sec).fold(0.0, f64::max));
        let max_y = nice_max(
            points
                .iter()
                .map(|p| p.ack_latency.p99_us / 1_000.0)
                .fold(0.0, f64::max),
        );
        Self {
            width,
            height,
            left,
            top,
            plot_w: width - left - right,
            plot_h: height - top - bottom,
            max_x,
            max_y,
        }
    }
    fn sx(&self, x: f64) -> f64 {
        self.left + self.plot_w * (x / self.max_x).clamp(0.0, 1.0)
    }
    fn sy(&self, y: f64) -> f64 {
        self.top + self.plot_h - self.plot_h * (y / self.max_y).clamp(0.0, 1.0)
    }

    /// Axes, five ticks each, and axis titles.
    fn axes(&self, s: &mut String) {
        let (left, top, bottom) = (self.left, self.top, self.top + self.plot_h);
        let _ = writeln!(
            s,
            r##"<g class="axes" stroke="#333"><line x1="{left}" y1="{bottom}" x2="{}" y2="{bottom}"/><line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}"/></g>"##,
            left + self.plot_w,
        );
        for i in 0..=5 {
            let f = i as f64 / 5.0;
            let (x, y) = (left + self.plot_w * f, bottom - self.plot_h * f);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{bottom}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" text-anchor="middle">{:.0}</text>"##,
                bottom + 5.0,
                bottom + 18.0,
                self.max_x * f
            );
            let _ = writeln!(
                s,
                r##"<line x1="{}" y1="{y:.1}" x2="{left}" y2="{y:.1}" stroke="#333"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                left - 5.0,
                left - 8.0,
                y + 4.0,
                tick_label(self.max_y * f, self.max_y)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">throughput (msgs/s)</text>"#,
            left + self.plot_w / 2.0,
            self.height - 15.0
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">p99 produce latency (ms)</text>"#,
            top + self.plot_h / 2.0
        );
    }

    /// One polyline with its points and a legend entry.
    fn series(&self, s: &mut String, i: usize, acks: &str, pts: &[PlotPoint]) {
        let color = COLORS[i % COLORS.len()];
        let coords: Vec<String> = pts
            .iter()
            .map(|(x, y, _)| format!("{:.1},{:.1}", self.sx(*x), self.sy(*y)))
            .collect();
        let acks = escape_xml(acks);
        let _ = writeln!(
            s,
            r#"<polyline class="series" data-acks="{acks}" fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            coords.join(" ")
        );
        for (x, y, label) in pts {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}: {:.0} msgs/s, p99 {:.3} ms</title></circle>"#,
                self.sx(*x),
                self.sy(*y),
                escape_xml(label),
                x,
                y
            );
        }
        let ly = self.top + 10.0 + 20.0 * i as f64;
        let lx = self.left + self.plot_w + 20.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">acks={acks}</text>"#,
            lx + 20.0,
            lx + 26.0,
            ly + 4.0
        );
    }
}

/// Hand-written SVG: throughput (msgs/s, x) against p99 produce-ack latency
/// (ms, y); one `<polyline class="series">` per acks level.
pub fn render_svg(points: &[PointResult]) -> String {
    let plot = Plot::new(points);
    let (w, h) = (plot.width, plot.height);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    plot.axes(&mut s);
    for (i, (acks, pts)) in series(points).iter().enumerate() {
        plot.series(&mut s, i, acks, pts);
    }
    s.push_str("</svg>\n");
    s
}

/// The HTML table of each run's broker side (`broker_metrics`) beside its
/// client-side latency: where a produce request's time went on the
/// brokers (acks=all's extra time shows as `remote`, the wait for the
/// followers), how many produce requests were parked on average, and the
/// brokers' CPU. Cells without figures read `n/a`, with the reason.
pub fn render_broker_table(points: &[PointResult]) -> String {
    let mut rows = String::new();
    let mut any = false;
    for p in points {
        let client = p.ack_latency_intended.unwrap_or(p.ack_latency);
        let b = p.broker.as_ref();
        any |= b.is_some_and(|b| b.scraped > 0);
        let parts: String = PARTS
            .iter()
            .map(|part| format!("<td data-part=\"{part}\">{}</td>", cell(b, part)))
            .collect();
        let opt = |v: Option<f64>, digits: usize| {
            v.map_or("n/a".to_string(), |v| format!("{v:.digits$}"))
        };
        let note = match b {
            None => "no --broker-metrics given".to_string(),
            Some(b) if b.notes.is_empty() => String::new(),
            Some(b) => escape_xml(&b.notes.join("; ")),
        };
        let _ = writeln!(
            rows,
            "<tr class=\"broker-side\"><td>{}</td><td>{}/{}</td><td>{}</td>{parts}<td>{}</td><td>{}</td><td>{note}</td></tr>",
            escape_xml(&p.label),
            ms(client.p50_us),
            ms(client.p99_us),
            b.map_or("n/a".into(), |b| b.produce_requests.to_string()),
            opt(b.and_then(|b| b.purgatory_produce_mean), 2),
            opt(b.and_then(|b| b.cpu_cores), 2),
        );
    }
    let intro = if any {
        "Broker-side figures are differences of the brokers' <code>/metrics</code> scraped \
         before and after each run (warm-up included), merged over the brokers. Produce time \
         parts: p50/p99 ms of <code>shardlog_request_time_seconds{request=\"Produce\"}</code> \
         (Kafka's RequestMetrics split: request queue, local append, remote = waiting in the \
         purgatory for the followers (acks=all), response queue, response send; total = \
         read to written). Purgatory: mean produce requests parked (remote time / run \
         length). CPU: cores' worth of process_cpu_seconds_total."
    } else {
        "n/a: no broker metrics listener answered (give <code>--broker-metrics HOST:PORT</code> \
         per broker, its <code>shardlog.metrics.listener</code>; <code>shardlog bench</code> \
         passes its brokers')."
    };
    format!(
        "<p>{intro}</p>\n<table class=\"broker-side\"><tr><th>run</th><th>client p50/p99</th><th>produce requests</th>\
         <th>request queue</th><th>local</th><th>remote</th><th>response queue</th><th>response send</th>\
         <th>total (broker)</th><th>purgatory (mean)</th><th>broker CPU (cores)</th><th>note</th></tr>\n{rows}</table>\n"
    )
}

/// A self-contained HTML report: workload, the table and the SVG inline.
/// HTML rows of the delivery and verification counters per point.
fn html_delivery_rows(points: &[PointResult]) -> String {
    let mut rows = String::new();
    for p in points {
        let codes: Vec<String> = p
            .errors_by_code
            .iter()
            .map(|(k, v)| format!("{}: {v}", escape_xml(k)))
            .collect();
        let _ = writeln!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape_xml(&p.label),
            p.produced,
            p.consumed,
            p.missing,
            p.duplicates,
            p.offset_gaps,
            p.out_of_order,
            p.retries,
            codes.join("<br>")
        );
    }
    rows
}

pub fn render_html(report: &RunReport, svg: &str) -> String {
    let mut rows = String::new();
    for p in &report.points {
        let a = &p.ack_latency;
        let e2e = p.e2e_latency.map_or("-".into(), |e| ms(e.p99_us));
        let _ = writeln!(
            rows,
            "<tr><td>{}</td><td>{:.0}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape_xml(&p.label),
            p.msgs_per_sec,
            p.mb_per_sec,
            ms(a.p50_us),
            ms(a.p90_us),
            ms(a.p99_us),
            ms(a.p999_us),
            ms(a.p9999_us),
            ms(a.max_us),
            e2e,
            p.errors
        );
    }
    let w = &report.workload;
    let delivery = html_delivery_rows(&report.points);
    let broker = render_broker_table(&report.points);
    format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>shardlog loadgen report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td:first-child{{text-align:left}}</style>
</head><body>
<h1>shardlog loadgen</h1>
<p>bootstrap {}; workload {}: {} topic(s) x {} partition(s), {} B messages, {} producer(s)/topic, rate {}, {:.1}s measured after {:.1}s warm-up.</p>
<h2>Throughput vs p99 produce latency</h2>
{svg}
<h2>Results (latency in ms)</h2>
<table><tr><th>point</th><th>msgs/s</th><th>MB/s</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>e2e p99</th><th>errors</th></tr>
{rows}</table>
<h2>Broker side of each run (ms)</h2>
{broker}
<h2>Delivery and verification</h2>
<table><tr><th>point</th><th>produced</th><th>consumed</th><th>missing</th><th>duplicates</th><th>offset gaps</th><th>out of order</th><th>retries</th><th>errors by code</th></tr>
{delivery}</table>
</body></html>
"#,
        escape_xml(&report.bootstrap),
        escape_xml(&w.name),
        w.topics,
        w.partitions_per_topic,
        w.message_size,
        w.producers_per_topic,
        w.producer_rate
            .map_or("max".to_string(), |r| format!("{r} msgs/s")),
        w.duration.as_secs_f64(),
        w.warmup.as_secs_f64(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(index: usize, acks: &str, rate: f64, p99_us: f64) -> PointResult {
        PointResult {
            index,
            label: format!("acks={acks} linger.ms={index}"),
            acks: acks.into(),
            msgs_per_sec: rate,
            mb_per_sec: rate / 1_000.0,
            ack_latency: LatencySummary {
                count: 10,
                p99_us,
                ..LatencySummary::default()
            },
            errors_by_code: BTreeMap::from([("6 NotLeaderOrFollower".to_string(), 2)]),
            errors: 2,
            ..PointResult::default()
        }
    }

    fn sample() -> Vec<PointResult> {
        vec![
            point(0, "0", 1_000.0, 500.0),
            point(1, "0", 3_000.0, 800.0),
            point(2, "1", 900.0, 1_500.0),
            point(3, "all", 700.0, 2_500.0),
            point(4, "all", 1_700.0, 4_000.0),
        ]
    }

    #[test]
    fn svg_has_one_series_per_acks_level() {
        let svg = render_svg(&sample());
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert_eq!(svg.matches(r#"class="series""#).count(), 3);
        for acks in ["0", "1", "all"] {
            assert!(svg.contains(&format!(r#"data-acks="{acks}""#)));
        }
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn csv_has_header_and_one_row_per_point_with_equal_columns() {
        let csv = render_csv(&sample());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 6);
        let cols = lines[0].split(',').count();
        for l in &lines {
            assert_eq!(l.split(',').count(), cols, "{l}");
        }
        assert!(lines[0].starts_with("index,label,acks,"));
        assert!(lines[4].contains(",all,"));
    }

    #[test]
    fn json_round_trips_through_serde() {
        let report = RunReport {
            bootstrap: "127.0.0.1:9092".into(),
            workload: Workload::default(),
            points: sample(),
        };
        let v: serde_json::Value = serde_json::from_str(&render_json(&report).unwrap()).unwrap();
        let pts = v["points"].as_array().unwrap();
        assert_eq!(pts.len(), 5);
        assert_eq!(pts[3]["acks"], "all");
        assert_eq!(pts[0]["errors_by_code"]["6 NotLeaderOrFollower"], 2);
        assert_eq!(pts[4]["ack_latency"]["p99_us"], 4_000.0);
    }

    #[test]
    fn table_and_html_list_every_point() {
        let pts = sample();
        let table = render_table(&pts);
        assert_eq!(table.lines().count(), 2 + 1 + pts.len());
        assert!(table.contains("acks=all linger.ms=4"));
        assert!(table.contains("4.000"), "p99 of 4000 us shown as ms");
        let report = RunReport {
            bootstrap: "h<1>".into(),
            workload: Workload::default(),
            points: pts,
        };
        let html = render_html(&report, &render_svg(&report.points));
        // Two tables of a header and a row per point; the broker side's
        // header (its rows carry a class).
        assert_eq!(html.matches("<tr>").count(), 2 * 6 + 1, "three tables");
        assert_eq!(html.matches("<tr class=\"broker-side\">").count(), 5);
        assert!(html.contains("no --broker-metrics given") && html.contains("n/a"));
        assert!(html.contains("6 NotLeaderOrFollower: 2"));
        assert!(html.contains("<svg") && html.contains("h&lt;1&gt;"));
    }

    #[test]
    fn nice_max_rounds_up_to_a_readable_bound() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(3.2), 5.0);
        assert_eq!(nice_max(1_700.0), 2_000.0);
        assert_eq!(nice_max(100.0), 100.0);
        assert_eq!(tick_label(250.0, 500.0), "250");
        assert_eq!(tick_label(0.5, 2.5), "0.5");
        assert_eq!(tick_label(0.025, 0.05), "0.025");
    }
}
