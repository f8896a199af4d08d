//! `[pure]` OpenMessaging Benchmark workload files (`workloads/*.yaml` of
//! openmessaging/benchmark) as a [`Workload`]. Fields we do not model
//! (payloadFile, consumerBacklogSizeGB, ...) are accepted and ignored.

use std::time::Duration;

use super::args::{KeyDistributor, Workload, MIN_MESSAGE_SIZE};
use flat_yaml::Scalar;

mod flat_yaml;

/// OMB's `KeyDistributor.UNIQUE_COUNT`: the number of distinct keys its
/// key distributors draw from.
pub const OMB_UNIQUE_KEYS: u64 = 10_000;

/// The workload fields we model, with OMB's defaults for absent ones.
#[derive(Debug, Clone)]
struct OmbWorkload {
    name: Option<String>,
    topics: usize,
    partitions_per_topic: i32,
    key_distributor: Option<String>,
    message_size: usize,
    subscriptions_per_topic: usize,
    producers_per_topic: usize,
    consumer_per_subscription: usize,
    producer_rate: f64,
    test_duration_minutes: f64,
    warmup_duration_minutes: f64,
}

impl OmbWorkload {
    /// The camelCase keys of OMB's `Workload` class; other keys are ignored.
    fn from_yaml(yaml: &str) -> Result<OmbWorkload, String> {
        let map = flat_yaml::parse(yaml)?;
        let get = |key: &str| map.get(key).filter(|v| **v != Scalar::Null);
        let count = |key: &str, default: Option<usize>| -> Result<usize, String> {
            match get(key) {
                None => default.ok_or_else(|| format!("missing field `{key}`")),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| format!("{key}: expected a non-negative integer, got {v:?}")),
            }
        };
        let real = |key: &str, default: f64| -> Result<f64, String> {
            get(key).map_or(Ok(default), |v| {
                v.as_f64()
                    .ok_or_else(|| format!("{key}: expected a number, got {v:?}"))
            })
        };
        let text = |key: &str| get(key).and_then(Scalar::as_str).map(str::to_owned);
        let partitions_per_topic = match get("partitionsPerTopic") {
            None => return Err("missing field `partitionsPerTopic`".into()),
            Some(v) => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| format!("partitionsPerTopic: expected an integer, got {v:?}"))?,
        };
        Ok(OmbWorkload {
            name: text("name"),
            topics: count("topics", None)?,
            partitions_per_topic,
            key_distributor: text("keyDistributor"),
            message_size: count("messageSize", None)?,
            subscriptions_per_topic: count("subscriptionsPerTopic", Some(1))?,
            producers_per_topic: count("producersPerTopic", Some(1))?,
            consumer_per_subscription: count("consumerPerSubscription", Some(1))?,
            producer_rate: real("producerRate", 0.0)?,
            test_duration_minutes: real("testDurationMinutes", 1.0)?,
            warmup_duration_minutes: real("warmupDurationMinutes", 1.0)?,
        })
    }
}

fn minutes(m: f64, what: &str) -> Result<Duration, String> {
    if !m.is_finite() || !(0.0..=1e6).contains(&m) {
        return Err(format!("{what} {m} out of range"));
    }
    Ok(Duration::from_secs_f64(m * 60.0))
}

/// Parses an OMB workload YAML document.
pub fn parse_workload(yaml: &str) -> Result<Workload, String> {
    let w = OmbWorkload::from_yaml(yaml).map_err(|e| format!("invalid OMB workload: {e}"))?;
    let key_distributor = match w.key_distributor.as_deref().unwrap_or("NO_KEY") {
        "NO_KEY" => KeyDistributor::NoKey,
        "KEY_ROUND_ROBIN" => KeyDistributor::RoundRobin(OMB_UNIQUE_KEYS),
        "RANDOM_NANO" => KeyDistributor::Random(OMB_UNIQUE_KEYS),
        other => return Err(format!("unknown keyDistributor {other:?}")),
    };
    if !w.producer_rate.is_finite() || w.producer_rate < 0.0 {
        return Err(format!("invalid producerRate {}", w.producer_rate));
    }
    let workload = Workload {
        name: w.name.unwrap_or_else(|| "omb".into()),
        topic_prefix: "omb-topic".into(),
        topics: w.topics,
        partitions_per_topic: w.partitions_per_topic,
        replication_factor: 1,
        message_size: w.message_size.max(MIN_MESSAGE_SIZE),
        key_distributor,
        producers_per_topic: w.producers_per_topic,
        // OMB's producerRate is messages/s for the whole workload; 0 asks
        // for the maximum rate.
        producer_rate: (w.producer_rate >= 1.0).then_some(w.producer_rate as u64),
        subscriptions_per_topic: w.subscriptions_per_topic,
        consumers_per_subscription: w.consumer_per_subscription,
        duration: minutes(w.test_duration_minutes, "testDurationMinutes")?,
        warmup: minutes(w.warmup_duration_minutes, "warmupDurationMinutes")?,
        messages: None,
    };
    workload.validate()?;
    Ok(workload)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../tests/data/omb/1-topic-3-partitions-1kb.yaml");

    #[test]
    fn omb_sample_workload_parses_every_field() {
        let w = parse_workload(SAMPLE).unwrap();
        assert_eq!(w.name, "1 topic / 3 partitions / 1kb");
        assert_eq!(w.topics, 1);
        assert_eq!(w.partitions_per_topic, 3);
        assert_eq!(w.message_size, 1024);
        assert_eq!(w.producers_per_topic, 1);
        assert_eq!(w.subscriptions_per_topic, 1);
        assert_eq!(w.consumers_per_subscription, 1);
        assert_eq!(w.producer_rate, Some(2000));
        assert_eq!(
            w.key_distributor,
            KeyDistributor::RoundRobin(OMB_UNIQUE_KEYS)
        );
        assert_eq!(w.duration, Duration::from_secs(60));
        assert_eq!(w.warmup, Duration::from_secs(6));
    }

    #[test]
    fn omb_key_distributors_and_max_rate() {
        let base = "topics: 2\npartitionsPerTopic: 4\nmessageSize: 100\n";
        let w =
            parse_workload(&format!("{base}keyDistributor: NO_KEY\nproducerRate: 0\n")).unwrap();
        assert_eq!(w.key_distributor, KeyDistributor::NoKey);
        assert_eq!(w.producer_rate, None, "producerRate 0 means max rate");
        let w = parse_workload(&format!("{base}keyDistributor: RANDOM_NANO\n")).unwrap();
        assert_eq!(w.key_distributor, KeyDistributor::Random(OMB_UNIQUE_KEYS));
        assert_eq!(w.topic_names(), vec!["omb-topic-0", "omb-topic-1"]);
        assert!(parse_workload(&format!("{base}keyDistributor: SOMETIMES\n")).is_err());
        assert!(parse_workload("topics: 1\n").is_err(), "missing fields");
        assert!(parse_workload(&format!("{base}testDurationMinutes: -1\n")).is_err());
    }
}
