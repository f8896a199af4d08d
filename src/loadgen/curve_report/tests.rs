//! Unit tests of `loadgen::curve_report`.

use super::*;
use crate::loadgen::args::ProducerSettings;
use crate::loadgen::curve::CurvePoint;

fn curve(acks: &str, linger_ms: i64, batch_size: usize, max_rate: f64, p99s_ms: &[f64]) -> Curve {
    let points = p99s_ms
        .iter()
        .zip([10u32, 50, 90])
        .map(|(p99, pct)| CurvePoint {
            fraction_pct: pct,
            target_rate: (max_rate * f64::from(pct) / 100.0) as u64,
            achieved_msgs_per_sec: max_rate * f64::from(pct) / 100.0,
            achieved_mb_per_sec: 1.0,
            sustained: pct < 90,
            latency: LatencySummary {
                count: 10,
                p50_us: p99 * 500.0,
                p99_us: p99 * 1_000.0,
                p999_us: p99 * 2_000.0,
                ..LatencySummary::default()
            },
            errors: 0,
            broker: None,
        })
        .collect();
    Curve {
        setting: format!("acks={acks} linger.ms={linger_ms} batch.size={batch_size}"),
        target: None,
        acks: acks.into(),
        linger_ms,
        batch_size,
        settings: ProducerSettings::default(),
        max_rate,
        max_mb_per_sec: max_rate / 1_000.0,
        max_rate_latency: LatencySummary::default(),
        points,
    }
}

fn sample() -> Vec<Curve> {
    vec![
        curve("1", 0, 16_384, 20_000.0, &[0.4, 0.9, 30.0]),
        curve("1", 5, 16_384, 30_000.0, &[5.2, 5.5, 12.0]),
        curve("all", 0, 16_384, 18_000.0, &[0.6, 1.2, 80.0]),
        curve("all", 5, 1_048_576, 40_000.0, &[5.4, 6.0, 9.0]),
    ]
}

#[test]
fn frame_spans_whole_decades_and_maps_into_the_plot_area() {
    let cs = sample();
    let all: Vec<&Curve> = cs.iter().collect();
    let f = Frame::new(&all, Percentile::P99);
    assert_eq!((f.lo_decade, f.hi_decade), (-1, 2), "0.4 .. 80 ms");
    assert_eq!(f.max_x, 50_000.0, "nice bound over the max rates");
    assert_eq!(f.y_ticks(), vec![0.1, 1.0, 10.0, 100.0]);
    let bottom = f.top + f.plot_h;
    assert_eq!(f.sy(0.1), bottom);
    assert_eq!(f.sy(100.0), f.top);
    assert!(
        (f.sy(1.0) - (bottom - f.plot_h / 3.0)).abs() < 1e-9,
        "log scale"
    );
    assert_eq!(f.sy(0.0), bottom, "zero clamps to the axis");
    assert_eq!(f.sx(0.0), f.left);
    assert_eq!(f.sx(1e9), f.left + f.plot_w, "clamped");
    let one = [&cs[0]];
    let g = Frame::new(&one, Percentile::P50);
    assert_eq!((g.lo_decade, g.hi_decade), (-1, 2), "p50 0.2 .. 15 ms");
    assert!(g.height < f.height, "legend rows grow the plot");
    let flat = curve("0", 0, 1, 10.0, &[3.0, 3.0, 3.0]);
    let h = Frame::new(&[&flat], Percentile::P99);
    assert_eq!((h.lo_decade, h.hi_decade), (0, 1), "at least one decade");
    let e = Frame::new(&[], Percentile::P99);
    assert!(e.lo_decade < e.hi_decade);
}

#[test]
fn main_svg_has_one_curve_per_setting_axis_labels_and_a_legend() {
    let cs = sample();
    let svg = render_main_svg(&cs, Percentile::P99);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches(r#"<polyline class="curve""#).count(), 4);
    for c in &cs {
        assert!(svg.contains(&format!(r#"data-setting="{}""#, c.setting)));
    }
    assert_eq!(svg.matches(r#"class="axis-label""#).count(), 2);
    assert!(svg.contains("achieved throughput (msgs/s)"));
    assert!(svg.contains("p99 produce latency (ms"));
    assert_eq!(svg.matches(r#"<g class="legend">"#).count(), 1);
    assert_eq!(svg.matches(r#"class="legend-entry""#).count(), 4);
    assert!(svg.contains("acks=all linger.ms=5 batch.size=1048576 (max 40000 msgs/s)"));
    assert_eq!(svg.matches("<circle").count(), 12);
    assert_eq!(
        svg.matches(r#"fill="white" stroke"#).count(),
        4,
        "90% points hollow"
    );
    assert_eq!(svg.matches(r#"class="max-rate""#).count(), 4);
    let p999 = render_main_svg(&cs, Percentile::P999);
    assert!(p999.contains("p99.9 produce latency"));
    assert_ne!(p999, svg);
}

#[test]
fn per_acks_plots_colour_by_linger_and_dash_by_batch_size() {
    let cs = sample();
    let plots = render_acks_svgs(&cs, Percentile::P99);
    let levels: Vec<&str> = plots.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(levels, vec!["1", "all"]);
    for (_, svg) in &plots {
        assert_eq!(svg.matches(r#"<polyline class="curve""#).count(), 2);
        assert!(
            svg.contains("linger.ms=0 batch.size=16384 (max"),
            "legend without acks"
        );
    }
    let group: Vec<&Curve> = cs.iter().filter(|c| c.acks == "all").collect();
    let st = curve_strokes(&group, CurveStyle::LingerAndBatch);
    assert_ne!(st[0].0, st[1].0, "linger 0 and 5 differ in colour");
    assert_ne!(st[0].1, st[1].1, "16 KiB and 1 MiB differ in dash");
    let all: Vec<&Curve> = cs.iter().collect();
    let per = curve_strokes(&all, CurveStyle::PerSetting);
    let colours: BTreeSet<&str> = per.iter().map(|s| s.0).collect();
    assert_eq!(colours.len(), 4);
    assert_eq!(acks_svg_name("all"), "latency-acks-all.svg");
}

#[test]
fn table_lists_max_rate_and_latency_at_each_fraction() {
    let cs = sample();
    let t = render_curve_table(&cs, &[10, 25, 50, 90]);
    let rows: Vec<&str> = t.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 2 + cs.len(), "header, rule, one row per curve");
    assert!(rows[0].contains("max msgs/s") && rows[0].contains("90%"));
    let first = rows[2];
    assert!(first.starts_with("| acks=1 linger.ms=0 batch.size=16384"));
    assert!(first.contains("| 20000 "), "{first}");
    assert!(first.contains("2000/s 0.20/0.40/0.80"), "{first}");
    assert!(
        first.contains("18000/s 15.0/30.0/60.0*"),
        "unsustained marked: {first}"
    );
    assert!(first.contains("| -"), "25% not run: {first}");
    let cols = rows[0].matches('|').count();
    assert!(rows.iter().all(|r| r.matches('|').count() == cols));
}

#[test]
fn json_and_html_carry_every_curve() {
    let report = CurveReport {
        bootstrap: "h<1>".into(),
        workload: Workload::default(),
        fractions_pct: vec![10, 50, 90],
        curves: sample(),
        points: Vec::new(),
    };
    let v: serde_json::Value = serde_json::from_str(&render_json(&report).unwrap()).unwrap();
    let curves = v["curves"].as_array().unwrap();
    assert_eq!(curves.len(), 4);
    assert_eq!(curves[3]["max_rate"], 40_000.0);
    assert_eq!(curves[0]["points"][2]["latency"]["p99_us"], 30_000.0);
    assert_eq!(curves[0]["points"][2]["sustained"], false);
    let main = render_main_svg(&report.curves, Percentile::P99);
    let acks = render_acks_svgs(&report.curves, Percentile::P99);
    let html = render_curve_html(&report, &main, &acks);
    assert_eq!(html.matches("<svg").count(), 3);
    // The curve table (header + 4 curves) and the broker side's header.
    assert_eq!(html.matches("<tr>").count(), 1 + 4 + 1);
    assert!(html.contains("h&lt;1&gt;"));
}

#[test]
fn percentiles_parse() {
    assert_eq!(Percentile::parse("p99.9").unwrap(), Percentile::P999);
    assert_eq!(Percentile::parse("50").unwrap(), Percentile::P50);
    assert!(Percentile::parse("p42").is_err());
}

#[test]
fn compared_brokers_keep_apart_in_the_per_acks_plot() {
    let mut a = curve("1", 5, 16_384, 20_000.0, &[1.0, 2.0, 3.0]);
    let mut b = a.clone();
    a.target = Some("shardlog".into());
    a.setting = format!("shardlog: {}", a.setting);
    b.target = Some("kafka".into());
    b.setting = format!("kafka: {}", b.setting);
    let st = curve_strokes(&[&a, &b], CurveStyle::LingerAndBatch);
    assert_ne!(st[0].0, st[1].0, "same linger.ms, different brokers");
    let plots = render_acks_svgs(&[a, b], Percentile::P99);
    assert_eq!(plots.len(), 1);
    assert!(plots[0]
        .1
        .contains("kafka: linger.ms=5 batch.size=16384 (max"));
    assert!(plots[0]
        .1
        .contains(r#"data-setting="shardlog: acks=1 linger.ms=5"#));
}
