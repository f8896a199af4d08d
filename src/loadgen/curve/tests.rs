//! Unit tests of `loadgen::curve`.

use super::*;

fn run(acks: i16, msgs_per_sec: f64, p99_us: f64, intended_p99_us: Option<f64>) -> PointResult {
    let summary = |p99_us| LatencySummary {
        count: 100,
        p50_us: p99_us / 4.0,
        p99_us,
        p999_us: p99_us * 2.0,
        ..LatencySummary::default()
    };
    PointResult {
        acks: acks_label(acks).into(),
        settings: ProducerSettings {
            acks,
            linger_ms: 5,
            ..ProducerSettings::default()
        },
        msgs_per_sec,
        mb_per_sec: msgs_per_sec / 1_000.0,
        ack_latency: summary(p99_us),
        ack_latency_intended: intended_p99_us.map(summary),
        ..PointResult::default()
    }
}

#[test]
fn fractions_parse_sorted_without_duplicates() {
    assert_eq!(parse_fractions("50,10,25%,50").unwrap(), vec![10, 25, 50]);
    assert_eq!(parse_fractions(" 100 ").unwrap(), vec![100]);
    for bad in ["", ",", "0", "101", "x", "-5", "12.5"] {
        assert!(parse_fractions(bad).is_err(), "{bad:?}");
    }
}

/// `(--flat-out, --fractions, rate, count mode, expected mode or refusal)`.
type ModeRow = (
    bool,
    Option<&'static str>,
    Option<u64>,
    bool,
    Result<RunMode, ()>,
);

#[test]
fn mode_is_the_curve_unless_a_rate_flat_out_or_count_is_asked_for() {
    let table: [ModeRow; 8] = [
        (
            false,
            None,
            None,
            false,
            Ok(RunMode::Curve {
                fractions_pct: DEFAULT_FRACTIONS_PCT.to_vec(),
            }),
        ),
        (
            false,
            Some("20,80"),
            None,
            false,
            Ok(RunMode::Curve {
                fractions_pct: vec![20, 80],
            }),
        ),
        (true, None, None, false, Ok(RunMode::FlatOut)),
        (false, None, None, true, Ok(RunMode::FlatOut)),
        (
            false,
            None,
            Some(500),
            false,
            Ok(RunMode::Fixed { rate: 500 }),
        ),
        (
            false,
            None,
            Some(500),
            true,
            Ok(RunMode::Fixed { rate: 500 }),
        ),
        (true, None, Some(500), false, Err(())),
        (true, Some("50"), None, false, Err(())),
    ];
    for (flat, fractions, rate, count, want) in table {
        let got = resolve_mode(flat, fractions, rate, count).map_err(|_| ());
        assert_eq!(got, want, "{flat} {fractions:?} {rate:?} {count}");
    }
}

#[test]
fn fixed_rates_are_fractions_of_the_max_and_never_zero() {
    assert_eq!(fixed_rate(10_000.0, 25), 2_500);
    assert_eq!(fixed_rate(333.0, 10), 33);
    assert_eq!(fixed_rate(1_234.5, 100), 1_235);
    assert_eq!(fixed_rate(0.0, 50), 1);
    assert_eq!(fixed_rate(f64::NAN, 50), 1);
    let rates: Vec<u64> = DEFAULT_FRACTIONS_PCT
        .iter()
        .map(|p| fixed_rate(80_000.0, *p))
        .collect();
    assert_eq!(rates, vec![8_000, 20_000, 40_000, 60_000, 72_000]);
}

#[test]
fn schedule_is_a_grid_from_the_origin_without_drift() {
    let s = FixedRateSchedule::new(1_000, 3.0).unwrap();
    assert_eq!(s.intended_ns(0), 1_000);
    assert_eq!(s.intended_ns(1), 1_000 + 333_333_333);
    assert_eq!(s.intended_ns(3), 1_000 + 1_000_000_000);
    assert_eq!(s.intended_ns(3_000_000), 1_000 + 1_000_000_000_000_000);
    assert!(FixedRateSchedule::new(0, 0.0).is_none());
    assert!(FixedRateSchedule::new(0, f64::INFINITY).is_none());
}

#[test]
fn corrected_latency_counts_the_wait_behind_a_stall() {
    // 1,000 msgs/s; the producer stalls for 50 ms from t=10 ms, then sends
    // the five overdue records at once, each acknowledged 1 ms later.
    let s = FixedRateSchedule::new(0, 1_000.0).unwrap();
    let stall_end = 60_000_000;
    let lat: Vec<u64> = (10..15)
        .map(|seq| corrected_latency_ns(s.intended_ns(seq), stall_end + 1_000_000))
        .collect();
    assert_eq!(lat[0], 51_000_000, "the first waited through the stall");
    assert_eq!(lat[4], 47_000_000);
    // From the actual send every one of them looks like 1 ms.
    assert_eq!(
        corrected_latency_ns(stall_end, stall_end + 1_000_000),
        1_000_000
    );
    assert_eq!(corrected_latency_ns(5, 3), 0, "a clock step back saturates");
}

#[test]
fn curve_takes_the_corrected_latency_and_marks_unsustained_points() {
    let mut c = Curve::from_max_run("acks=1 linger.ms=5", &run(1, 10_000.0, 90_000.0, None));
    assert_eq!(c.max_rate, 10_000.0);
    assert_eq!(c.max_rate_latency.p99_us, 90_000.0);
    assert_eq!((c.acks.as_str(), c.linger_ms), ("1", 5));
    c.on_fixed_run(90, 9_000, &run(1, 8_000.0, 2_000.0, Some(40_000.0)));
    c.on_fixed_run(10, 1_000, &run(1, 1_000.0, 900.0, Some(1_000.0)));
    c.on_fixed_run(50, 5_000, &run(1, 4_990.0, 1_000.0, None));
    let pcts: Vec<u32> = c.points.iter().map(|p| p.fraction_pct).collect();
    assert_eq!(pcts, vec![10, 50, 90], "sorted by fraction");
    let p90 = c.at(90).unwrap();
    assert_eq!(p90.latency.p99_us, 40_000.0, "corrected, not from send");
    assert!(!p90.sustained, "8,000 of 9,000 is short of 95%");
    assert!(c.at(10).unwrap().sustained);
    assert_eq!(
        c.at(50).unwrap().latency.p99_us,
        1_000.0,
        "no schedule: from send"
    );
    assert!(c.at(25).is_none());
}

#[test]
fn eta_uses_the_plan_until_runs_finish_then_their_mean() {
    let mut e = Eta::new(4, 10.0);
    assert_eq!(e.current_run(), 1);
    assert_eq!(e.remaining_secs(0.0), 40.0);
    assert_eq!(e.remaining_secs(4.0), 36.0);
    assert_eq!(
        e.remaining_secs(25.0),
        30.0,
        "an overdue run counts as done"
    );
    e.on_run_done(12.0);
    e.on_run_done(8.0);
    assert_eq!(e.current_run(), 3);
    assert_eq!(e.per_run_secs(), 10.0);
    e.on_run_done(20.0);
    assert!((e.remaining_secs(5.0) - 25.0 / 3.0).abs() < 1e-9);
    e.on_run_done(1.0);
    e.on_run_done(1.0);
    assert_eq!((e.current_run(), e.remaining_secs(0.0)), (4, 0.0));
}

#[test]
fn eta_text_is_short() {
    assert_eq!(format_eta(42.4), "42s");
    assert_eq!(format_eta(185.0), "3m05s");
    assert_eq!(format_eta(3_720.0), "1h02m");
    assert_eq!(format_eta(-3.0), "0s");
}
