//! `[pure]` What the brokers' `/metrics` say about one run: the load
//! generator scrapes every broker before and after each run (`scrape`)
//! and [`point_split`] turns the two scrapes into that run's broker side,
//! as a difference over the run (not since the broker started):
//! - the Produce time split (Kafka's `RequestMetrics` parts: request
//!   queue, local append, remote wait for the followers, response queue,
//!   response send, and the total) p50/p99/mean in ms, from the
//!   cumulative `shardlog_request_time_seconds{request="Produce"}`
//!   histogram buckets (Kafka's quantile gauges are of a recent window and
//!   cannot be subtracted), merged over the brokers;
//! - the mean number of produce requests parked in the purgatory
//!   (DelayedProduce), by Little's law: the remote time they spent there
//!   divided by the run's length;
//! - the brokers' CPU: `process_cpu_seconds_total` difference divided by
//!   the run's length (1.0 = one core busy).
//!
//! A broker without a metrics listener (or one that does not answer) makes
//! the split partial or absent; the report then says so ("n/a").

use std::collections::BTreeMap;

use serde::Serialize;

/// The histogram the split comes from and its request label.
pub const TIME_FAMILY: &str = "shardlog_request_time_seconds";
/// The parts reported, in display order (the `part` label values).
pub const PARTS: [&str; 6] = [
    "requestqueue",
    "local",
    "remote",
    "responsequeue",
    "responsesend",
    "total",
];

/// One scrape's samples this module reads: Produce's time buckets per
/// part (upper bound in seconds, cumulative count), their sums and counts,
/// and the process CPU seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    pub buckets: BTreeMap<String, Vec<(f64, f64)>>,
    pub sums: BTreeMap<String, f64>,
    pub counts: BTreeMap<String, f64>,
    pub cpu_seconds: Option<f64>,
}

/// One part of the Produce time over a run, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PartSplit {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
}

/// The broker side of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BrokerSide {
    /// Metrics listeners given, and how many answered before and after.
    pub brokers: usize,
    pub scraped: usize,
    /// Why a broker's figures are missing (the first reason per broker).
    pub notes: Vec<String>,
    /// Produce requests the scraped brokers answered during the run.
    pub produce_requests: u64,
    /// Per part of [`PARTS`]; empty when no produce request was timed.
    pub produce_ms: BTreeMap<String, PartSplit>,
    /// Mean DelayedProduce purgatory size over the run, all scraped
    /// brokers (Little's law over the remote time).
    pub purgatory_produce_mean: Option<f64>,
    /// Cores' worth of CPU the scraped brokers used during the run.
    pub cpu_cores: Option<f64>,
}

/// Parses the label set `a="x",b="y"` (Prometheus text escapes).
fn parse_labels(s: &str) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let (name, after) = rest.split_once('=')?;
        let after = after.strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        out.insert(name.trim().to_owned(), value);
        rest = after[end + 1..].trim_start_matches([',', ' ']);
    }
    Some(out)
}

/// A sample line: name, labels, value.
fn parse_line(line: &str) -> Option<(&str, BTreeMap<String, String>, f64)> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let (name, labels, rest) = match line.find('{') {
        Some(open) => {
            let close = line.rfind('}')?;
            (
                &line[..open],
                parse_labels(&line[open + 1..close])?,
                &line[close + 1..],
            )
        }
        None => {
            let (n, r) = line.split_once(' ')?;
            (n, BTreeMap::new(), r)
        }
    };
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        v => v.parse().ok()?,
    };
    Some((name, labels, value))
}

/// The samples of a text-format (0.0.4) exposition this module reads.
pub fn parse_scrape(text: &str) -> Scrape {
    let mut s = Scrape::default();
    let bucket = format!("{TIME_FAMILY}_bucket");
    let sum = format!("{TIME_FAMILY}_sum");
    let count = format!("{TIME_FAMILY}_count");
    for (name, labels, value) in text.lines().filter_map(parse_line) {
        if name == "process_cpu_seconds_total" {
            s.cpu_seconds = Some(value);
            continue;
        }
        if labels.get("request").map(String::as_str) != Some("Produce") {
            continue;
        }
        let Some(part) = labels.get("part").cloned() else {
            continue;
        };
        if name == bucket {
            let le = match labels.get("le").map(String::as_str) {
                Some("+Inf") => f64::INFINITY,
                Some(v) => match v.parse() {
                    Ok(v) => v,
                    Err(_) => continue,
                },
                None => continue,
            };
            s.buckets.entry(part).or_default().push((le, value));
        } else if name == sum {
            s.sums.insert(part, value);
        } else if name == count {
            s.counts.insert(part, value);
        }
    }
    for b in s.buckets.values_mut() {
        b.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    s
}

/// The `q` quantile of cumulative buckets (as Prometheus'
/// `histogram_quantile`: linear within the bucket; the highest finite
/// bound when it falls in `+Inf`), in the buckets' unit.
pub fn bucket_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(le, cum) in buckets {
        if cum >= rank {
            if le.is_infinite() {
                return Some(lower.0);
            }
            let in_bucket = cum - lower.1;
            if in_bucket <= 0.0 {
                return Some(le);
            }
            return Some(lower.0 + (le - lower.0) * (rank - lower.1) / in_bucket);
        }
        lower = (le, cum);
    }
    Some(lower.0)
}

/// `after - before` per bucket (bounds as in `after`; a bound `before`
/// lacks, or a counter that went back, e.g. a restarted broker, counts
/// from 0).
fn bucket_delta(before: Option<&Vec<(f64, f64)>>, after: &[(f64, f64)]) -> Vec<(f64, f64)> {
    after
        .iter()
        .map(|&(le, cum)| {
            let old = before
                .and_then(|b| b.iter().find(|(l, _)| *l == le))
                .map_or(0.0, |(_, c)| *c);
            (le, if cum >= old { cum - old } else { cum })
        })
        .collect()
}

fn counter_delta(before: Option<f64>, after: f64) -> f64 {
    match before {
        Some(b) if after >= b => after - b,
        _ => after,
    }
}

/// A broker's scrape, or why it gave none.
pub type Scraped = Result<Scrape, String>;

/// The broker side of a run that lasted `secs`, from each broker's scrape
/// before and after it.
pub fn point_split(scrapes: &[(Scraped, Scraped)], secs: f64) -> BrokerSide {
    let mut side = BrokerSide {
        brokers: scrapes.len(),
        ..BrokerSide::default()
    };
    let mut merged: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let (mut sums, mut counts) = (
        BTreeMap::<String, f64>::new(),
        BTreeMap::<String, f64>::new(),
    );
    let mut cpu = None::<f64>;
    for pair in scrapes {
        let (before, after) = match pair {
            (Ok(b), Ok(a)) => (b, a),
            (Err(e), _) | (_, Err(e)) => {
                side.notes.push(e.clone());
                continue;
            }
        };
        side.scraped += 1;
        if let Some(a) = after.cpu_seconds {
            *cpu.get_or_insert(0.0) += counter_delta(before.cpu_seconds, a);
        }
        for (part, b) in &after.buckets {
            let delta = bucket_delta(before.buckets.get(part), b);
            let m = merged.entry(part.clone()).or_default();
            if m.is_empty() {
                *m = delta;
            } else {
                for (mine, (le, d)) in m.iter_mut().zip(delta) {
                    if mine.0 == le {
                        mine.1 += d;
                    }
                }
            }
        }
        for (part, a) in &after.sums {
            *sums.entry(part.clone()).or_default() +=
                counter_delta(before.sums.get(part).copied(), *a);
        }
        for (part, a) in &after.counts {
            *counts.entry(part.clone()).or_default() +=
                counter_delta(before.counts.get(part).copied(), *a);
        }
    }
    if secs > 0.0 {
        side.cpu_cores = cpu.map(|c| c / secs);
        side.purgatory_produce_mean = sums.get("remote").map(|s| s / secs);
    }
    side.produce_requests = counts.get("total").copied().unwrap_or(0.0) as u64;
    for part in PARTS {
        let (Some(b), Some(n)) = (merged.get(part), counts.get(part)) else {
            continue;
        };
        if *n <= 0.0 {
            continue;
        }
        let ms = |q| bucket_quantile(q, b).map_or(0.0, |s| s * 1e3);
        side.produce_ms.insert(
            part.to_owned(),
            PartSplit {
                p50_ms: ms(0.50),
                p99_ms: ms(0.99),
                mean_ms: sums.get(part).copied().unwrap_or(0.0) * 1e3 / n,
            },
        );
    }
    side
}

/// A cell of the report: `p50/p99` ms of `part`, or `n/a`.
pub fn cell(side: Option<&BrokerSide>, part: &str) -> String {
    match side.and_then(|s| s.produce_ms.get(part)) {
        Some(p) => format!("{:.2}/{:.2}", p.p50_ms, p.p99_ms),
        None => "n/a".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"# TYPE shardlog_request_time_seconds histogram
shardlog_request_time_seconds_bucket{request="Produce",part="remote",le="0.001"} 10
shardlog_request_time_seconds_bucket{request="Produce",part="remote",le="0.002"} 10
shardlog_request_time_seconds_bucket{request="Produce",part="remote",le="+Inf"} 10
shardlog_request_time_seconds_sum{request="Produce",part="remote"} 0.005
shardlog_request_time_seconds_count{request="Produce",part="remote"} 10
shardlog_request_time_seconds_bucket{request="Fetch",part="remote",le="+Inf"} 99
process_cpu_seconds_total 1.5
"#;

    const AFTER: &str = r#"shardlog_request_time_seconds_bucket{request="Produce",part="remote",le="0.001"} 10
shardlog_request_time_seconds_bucket{request="Produce",part="remote",le="0.002"} 110
shardlog_request_time_seconds_bucket{request="Produce",part="remote",le="+Inf"} 110
shardlog_request_time_seconds_sum{request="Produce",part="remote"} 0.155
shardlog_request_time_seconds_count{request="Produce",part="remote"} 110
process_cpu_seconds_total 3.5
"#;

    #[test]
    fn a_point_is_the_difference_of_two_scrapes() {
        let (b, a) = (parse_scrape(BEFORE), parse_scrape(AFTER));
        assert_eq!(b.buckets["remote"].len(), 3);
        assert!(!b.buckets.contains_key("Fetch"));
        let side = point_split(
            &[
                (Ok(b), Ok(a)),
                (Err("x: refused".into()), Ok(Scrape::default())),
            ],
            2.0,
        );
        assert_eq!((side.brokers, side.scraped), (2, 1));
        assert_eq!(side.notes, vec!["x: refused".to_string()]);
        let r = side.produce_ms["remote"];
        // All 100 new observations in (1 ms, 2 ms]: the median at 1.5 ms.
        assert!((r.p50_ms - 1.5).abs() < 1e-9, "{r:?}");
        assert!((r.p99_ms - 1.99).abs() < 1e-9, "{r:?}");
        assert!((r.mean_ms - 1.5).abs() < 1e-9, "{r:?}");
        assert_eq!(side.cpu_cores, Some(1.0));
        assert!((side.purgatory_produce_mean.unwrap() - 0.075).abs() < 1e-9);
        assert_eq!(cell(Some(&side), "remote"), "1.50/1.99");
        assert_eq!(cell(Some(&side), "local"), "n/a");
        assert_eq!(cell(None, "remote"), "n/a");
    }

    #[test]
    fn labels_with_escapes_and_the_inf_bucket_parse() {
        let l = parse_labels(r#"a="x\"y",b="1,2""#).unwrap();
        assert_eq!(l["a"], "x\"y");
        assert_eq!(l["b"], "1,2");
        assert_eq!(
            bucket_quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 4.0)]),
            Some(1.0)
        );
        assert_eq!(bucket_quantile(0.5, &[(1.0, 0.0)]), None);
    }
}
