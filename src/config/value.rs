//! How each `server.properties` value type parses and shows (Kafka's
//! `ConfigDef.Type` rules).

use super::{topic, Listener};

/// Parse one value from its text in `server.properties`.
pub trait ConfigValue: Sized {
    fn parse_value(text: &str) -> Result<Self, String>;
    /// The value as DescribeConfigs shows it; `None` for null.
    fn show_value(&self) -> Option<String>;
    /// The DescribeConfigs (v3+) type of the key.
    fn config_type() -> topic::ConfigType;
}

macro_rules! int_values {
    ($($t:ty),*) => {$(
        impl ConfigValue for $t {
            fn parse_value(text: &str) -> Result<Self, String> {
                text.parse::<$t>().map_err(|e| e.to_string())
            }
            fn show_value(&self) -> Option<String> {
                Some(self.to_string())
            }
            fn config_type() -> topic::ConfigType {
                match std::mem::size_of::<$t>() {
                    2 => topic::ConfigType::Short,
                    4 => topic::ConfigType::Int,
                    _ => topic::ConfigType::Long,
                }
            }
        }
    )*};
}
int_values!(i16, i32, i64, u16, u32, u64, usize);

impl ConfigValue for f64 {
    fn parse_value(text: &str) -> Result<Self, String> {
        text.trim().parse::<f64>().map_err(|e| e.to_string())
    }
    fn show_value(&self) -> Option<String> {
        Some(self.to_string())
    }
    fn config_type() -> topic::ConfigType {
        topic::ConfigType::Double
    }
}

impl ConfigValue for bool {
    fn parse_value(text: &str) -> Result<Self, String> {
        // Kafka's ConfigDef accepts true/false case-insensitively.
        match text.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err("expected true or false".into()),
        }
    }
    fn show_value(&self) -> Option<String> {
        Some(self.to_string())
    }
    fn config_type() -> topic::ConfigType {
        topic::ConfigType::Boolean
    }
}

impl ConfigValue for String {
    fn parse_value(text: &str) -> Result<Self, String> {
        Ok(text.to_owned())
    }
    fn show_value(&self) -> Option<String> {
        Some(self.clone())
    }
    fn config_type() -> topic::ConfigType {
        topic::ConfigType::String
    }
}

impl<T: ConfigValue> ConfigValue for Option<T> {
    fn parse_value(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Ok(None);
        }
        T::parse_value(text).map(Some)
    }
    fn show_value(&self) -> Option<String> {
        self.as_ref().and_then(T::show_value)
    }
    fn config_type() -> topic::ConfigType {
        T::config_type()
    }
}

impl ConfigValue for Vec<String> {
    fn parse_value(text: &str) -> Result<Self, String> {
        Ok(split_list(text).map(str::to_owned).collect())
    }
    fn show_value(&self) -> Option<String> {
        Some(self.join(","))
    }
    fn config_type() -> topic::ConfigType {
        topic::ConfigType::List
    }
}

impl ConfigValue for Vec<Listener> {
    fn parse_value(text: &str) -> Result<Self, String> {
        split_list(text).map(parse_listener).collect()
    }
    fn show_value(&self) -> Option<String> {
        Some(
            self.iter()
                .map(Listener::to_string)
                .collect::<Vec<_>>()
                .join(","),
        )
    }
    fn config_type() -> topic::ConfigType {
        topic::ConfigType::List
    }
}

/// A cpu list such as `0-3,6` (the `taskset`/cgroup syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

impl ConfigValue for CpuList {
    fn parse_value(text: &str) -> Result<Self, String> {
        let mut cpus = Vec::new();
        for part in split_list(text) {
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (lo.trim(), hi.trim()),
                None => (part, part),
            };
            let lo: usize = lo.parse().map_err(|_| format!("bad cpu {lo:?}"))?;
            let hi: usize = hi.parse().map_err(|_| format!("bad cpu {hi:?}"))?;
            if lo > hi || hi - lo > 4096 {
                return Err(format!("bad cpu range {part:?}"));
            }
            cpus.extend(lo..=hi);
        }
        if cpus.is_empty() {
            return Err("empty cpu list".into());
        }
        Ok(CpuList(cpus))
    }
    fn show_value(&self) -> Option<String> {
        Some(
            self.0
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(","),
        )
    }
    fn config_type() -> topic::ConfigType {
        topic::ConfigType::List
    }
}

fn split_list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// `ListenerName.normalised`: upper case (`Locale.ROOT`).
pub(super) fn normalised(name: &str) -> String {
    name.to_uppercase()
}

/// One `NAME://host:port` entry of `listeners` / `advertised.listeners`,
/// matched as Kafka's `SocketServerConfigs.listenerListToEndPoints` matches
/// `^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)` (`URI_PARSE_REGEXP`)
/// against the whole entry.
pub(super) fn parse_listener(text: &str) -> Result<Listener, String> {
    let bad = || format!("Unable to parse {text} to a broker endpoint");
    // `(.*)` is greedy: the name ends at the last "://".
    let at = text.rfind("://").ok_or_else(bad)?;
    let (name, rest) = (&text[..at], &text[at + 3..]);
    // The port is after the last ':' (the host may hold ':' itself).
    let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
    let host = host.strip_prefix('[').unwrap_or(host);
    let host = host.strip_suffix(']').unwrap_or(host);
    let host_ok = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c));
    let digits = port.strip_prefix('-').unwrap_or(port);
    if !host_ok || digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("bad port {port} in {text} (0 to 65535)"))?;
    Ok(Listener {
        name: normalised(name),
        host: host.to_owned(),
        port,
    })
}
