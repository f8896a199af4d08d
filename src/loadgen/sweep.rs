//! `[pure]` Sweep points: the cartesian product of `--sweep key=v1,v2,...`
//! axes applied over the base producer settings, first axis outermost.

use serde::Serialize;

use super::args::ProducerSettings;

/// One axis: a producer key and the values to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepAxis {
    pub key: String,
    pub values: Vec<String>,
}

/// One run point: its settings and the axis values that made it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    pub index: usize,
    /// `(key, value)` per axis, in axis order.
    pub labels: Vec<(String, String)>,
    pub settings: ProducerSettings,
}

impl SweepPoint {
    /// `acks=1 linger.ms=5`, or `base` for an unswept run.
    pub fn label(&self) -> String {
        if self.labels.is_empty() {
            return "base".into();
        }
        self.labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Parses `key=v1,v2,...`; the key must be a supported producer key and
/// every value must parse for it.
pub fn parse_axis(spec: &str) -> Result<SweepAxis, String> {
    let (key, values) = spec
        .split_once('=')
        .ok_or_else(|| format!("--sweep expects KEY=V1,V2,..., got {spec:?}"))?;
    let key = key.trim().to_string();
    let values: Vec<String> = values
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(format!("--sweep {key} has no values"));
    }
    let mut probe = ProducerSettings::default();
    for v in &values {
        probe.set(&key, v)?;
    }
    Ok(SweepAxis { key, values })
}

/// Refuses more points than any sensible run would have.
pub const MAX_POINTS: usize = 10_000;

/// The cartesian product of `axes` over `base`. No axes gives one point.
/// Each point is validated with Kafka's producer config rules.
pub fn points(base: &ProducerSettings, axes: &[SweepAxis]) -> Result<Vec<SweepPoint>, String> {
    let mut keys_seen = std::collections::HashSet::new();
    for a in axes {
        if !keys_seen.insert(a.key.as_str()) {
            return Err(format!("--sweep {} given twice", a.key));
        }
    }
    let total = axes
        .iter()
        .try_fold(1usize, |acc, a| acc.checked_mul(a.values.len()))
        .filter(|n| *n <= MAX_POINTS)
        .ok_or_else(|| format!("sweep has more than {MAX_POINTS} points"))?;
    let mut out = Vec::with_capacity(total);
    for index in 0..total {
        // Mixed-radix decode of the index, last axis varying fastest.
        let mut rest = index;
        let mut picks = vec![0usize; axes.len()];
        for (i, a) in axes.iter().enumerate().rev() {
            picks[i] = rest % a.values.len();
            rest /= a.values.len();
        }
        let mut settings = base.clone();
        let mut labels = Vec::with_capacity(axes.len());
        for (a, &p) in axes.iter().zip(&picks) {
            let v = &a.values[p];
            settings.set(&a.key, v)?;
            labels.push((a.key.clone(), v.clone()));
        }
        settings
            .validate()
            .map_err(|e| format!("sweep point {}: {e}", labels_text(&labels)))?;
        out.push(SweepPoint {
            index,
            labels,
            settings,
        });
    }
    Ok(out)
}

fn labels_text(labels: &[(String, String)]) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cartesian_product_has_every_combination_first_axis_outermost() {
        let axes = vec![
            parse_axis("acks=0,1,all").unwrap(),
            parse_axis("linger.ms=0,1,5,20").unwrap(),
            parse_axis("batch.size=16384,131072,1048576").unwrap(),
        ];
        let pts = points(&ProducerSettings::default(), &axes).unwrap();
        assert_eq!(pts.len(), 36);
        let mut seen = std::collections::HashSet::new();
        for p in &pts {
            seen.insert((p.settings.acks, p.settings.linger_ms, p.settings.batch_size));
        }
        assert_eq!(seen.len(), 36);
        assert_eq!(pts[0].label(), "acks=0 linger.ms=0 batch.size=16384");
        assert_eq!(pts[1].settings.batch_size, 131_072);
        assert_eq!(pts[12].settings.acks, 1);
        assert_eq!(pts[35].settings.acks, -1);
        assert_eq!(pts[35].settings.linger_ms, 20);
        assert_eq!(pts[35].settings.batch_size, 1_048_576);
    }

    #[test]
    fn no_axes_is_one_base_point() {
        let base = ProducerSettings {
            linger_ms: 7,
            ..ProducerSettings::default()
        };
        let pts = points(&base, &[]).unwrap();
        assert_eq!(pts.len(), 1);
        assert_eq!(pts[0].settings.linger_ms, 7);
        assert_eq!(pts[0].label(), "base");
    }

    #[test]
    fn bad_axes_are_rejected() {
        for bad in ["acks", "acks=", "acks=2", "nope=1", "linger.ms=x"] {
            assert!(parse_axis(bad).is_err(), "{bad}");
        }
        let twice = vec![parse_axis("acks=0").unwrap(), parse_axis("acks=1").unwrap()];
        assert!(points(&ProducerSettings::default(), &twice).is_err());
    }

    #[test]
    fn invalid_combinations_fail_validation() {
        let axes = vec![
            parse_axis("acks=1").unwrap(),
            parse_axis("enable.idempotence=true").unwrap(),
        ];
        assert!(points(&ProducerSettings::default(), &axes).is_err());
    }
}
