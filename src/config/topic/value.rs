//! `[pure]` The value model of topic configs: DescribeConfigs' type and
//! source codes, a parsed value and how Kafka prints it, and the
//! validation error (INVALID_CONFIG at the protocol edge).

use std::fmt;

/// `ConfigType` codes of DescribeConfigs v3+ (`DescribeConfigsResponse.ConfigType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
    Password = 9,
}

/// `ConfigSource` codes of DescribeConfigs v1+ (`DescribeConfigsResponse.ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// A per-topic override (Kafka calls it TOPIC_CONFIG on the wire).
    DynamicTopicConfig = 1,
    /// `/config/brokers/<id>`: this broker's dynamic config.
    DynamicBrokerConfig = 2,
    /// `/config/brokers/<default>`: the cluster-wide dynamic default.
    DynamicDefaultBrokerConfig = 3,
    StaticBrokerConfig = 4,
    DefaultConfig = 5,
}

/// A parsed config value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    Boolean(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    String(String),
    List(Vec<String>),
}

impl ConfigValue {
    /// Kafka's `ConfigDef.convertToString`: what DescribeConfigs shows.
    pub fn to_kafka_string(&self) -> String {
        match self {
            Self::Boolean(b) => b.to_string(),
            Self::Int(v) => v.to_string(),
            Self::Long(v) => v.to_string(),
            Self::Double(v) => java_double(*v),
            Self::String(s) => s.clone(),
            Self::List(items) => items.join(","),
        }
    }
}

/// Java's `Double.toString` for the values we use (always a fraction part).
fn java_double(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e7 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

/// An override failed validation: INVALID_CONFIG (40) at the protocol edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Kafka's ConfigException wording.
        write!(
            f,
            "Invalid value {} for configuration {}: {}",
            self.value, self.key, self.reason
        )
    }
}

impl std::error::Error for ConfigError {}
