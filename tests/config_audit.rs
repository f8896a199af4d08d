//! No config key is a lie: every key of Kafka 3.9's broker and topic config
//! docs (tests/data/kafka-3.9-config-keys.txt) gets one answer from
//! shardlog, checked here against the real config parser:
//!
//! - applied: shardlog reads the key (a `server.properties` field, a key of
//!   the TLS or SASL settings, a topic key), and a test names it (a test
//!   file, or a source file's inline `#[cfg(test)] mod tests`; the files
//!   naming each key are printed with `--nocapture`) or sets its config
//!   field (`tested-in` in tests/data/config-audit.txt); keys read but not
//!   yet named by any test are listed there as `untested`;
//! - refused: `server.properties` or CreateTopics/AlterConfigs with the key
//!   fails, naming it (`config::unsupported` for broker keys; `refused` in
//!   tests/data/config-audit.txt for keys the TLS or SASL settings own,
//!   checked with two values);
//! - accepted only at the values that describe what shardlog does, any
//!   other value refused (`config::unsupported`);
//! - not applicable: accepted with the reason (`config::unsupported`, or
//!   `topic-na` in tests/data/config-audit.txt);
//! - being built by another part of the work (`theirs`).
//!
//! Pure: no broker starts.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use shardlog::config::topic::{topic_config_names, BrokerTopicDefaults, TopicConfig};
use shardlog::config::unsupported::{lookup, Unsupported};
use shardlog::config::{sasl, ssl, ServerConfig};

fn kafka_keys(kind: &str) -> Vec<String> {
    let text = std::fs::read_to_string("tests/data/kafka-3.9-config-keys.txt").unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(k, _)| *k == kind)
        .map(|(_, key)| key.to_owned())
        .collect()
}

/// tests/data/config-audit.txt: tag → key → reason.
fn audit_entries() -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string("tests/data/config-audit.txt").unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut parts = line.splitn(3, ' ');
        let (tag, key) = (parts.next().unwrap(), parts.next().unwrap());
        let reason = parts.next().unwrap_or_default();
        out.entry(tag.to_owned())
            .or_default()
            .insert(key.to_owned(), reason.to_owned());
    }
    out
}

/// Every test source: the files a behaviour test naming a key lives in.
fn test_sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![
        Path::new("tests").to_path_buf(),
        Path::new("src").to_path_buf(),
    ];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let name = p.to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let in_tests = name.starts_with("tests/") && !name.starts_with("tests/data/");
            let src_test = name.ends_with("tests.rs") || name.contains("/tests/");
            let wanted = (in_tests && (name.ends_with(".rs") || name.ends_with(".py")))
                || (name.starts_with("src/") && src_test);
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            if wanted && !name.ends_with("config_audit.rs") {
                out.push((name, text));
            } else if name.starts_with("src/") && name.ends_with(".rs") {
                // A source file's own unit tests: its inline
                // `#[cfg(test)] mod tests { … }`, the file's last item.
                if let Some(at) = text.find("#[cfg(test)]\nmod tests {") {
                    out.push((name, text[at..].to_owned()));
                }
            }
        }
    }
    out
}

fn load(key: &str, value: &str) -> Result<Vec<String>, (String, String)> {
    ServerConfig::from_properties(&format!("{key}={value}\n"), &[])
        .map(|l| l.warnings)
        .map_err(|e| match e {
            shardlog::config::ConfigError::InvalidValue { key, reason, .. } => (key, reason),
            other => (String::new(), other.to_string()),
        })
}

#[test]
fn every_kafka_broker_key_is_applied_refused_or_not_applicable() {
    let known: BTreeSet<String> = ServerConfig::keys().into_iter().collect();
    let mut audit = audit_entries();
    let untested = audit.remove("untested").unwrap_or_default();
    let refused = audit.remove("refused").unwrap_or_default();
    let sources = test_sources();
    let mut problems = Vec::new();
    let mut named_nowhere = BTreeSet::new();
    let keys = kafka_keys("broker");
    assert!(keys.len() > 300, "{} broker keys read", keys.len());
    for key in &keys {
        let read = known.contains(key) || ssl::is_ssl_key(key) || sasl::is_sasl_key(key);
        match (read, lookup(key)) {
            (true, Some(_)) => problems.push(format!("{key}: read and also listed as unsupported")),
            (true, None) => {
                let files: Vec<&str> = sources
                    .iter()
                    .filter(|(_, text)| text.contains(key.as_str()))
                    .map(|(f, _)| f.as_str())
                    .collect();
                if refused.contains_key(key.as_str()) {
                    match (load(key, "x"), load(key, "1")) {
                        (Err((a, _)), Err((b, _))) if a == *key && b == *key => {
                            println!("refused by the TLS/SASL settings {key}")
                        }
                        other => problems.push(format!("{key}: listed refused, got {other:?}")),
                    }
                } else if files.is_empty() {
                    named_nowhere.insert(key.clone());
                } else {
                    println!("applied {key}: {}", files.join(", "));
                }
            }
            (false, None) => problems.push(format!("{key}: no answer (unknown to shardlog)")),
            (false, Some(Unsupported::Refused(_))) => match load(key, "x") {
                Err((k, _)) if k == *key => println!("refused {key}"),
                other => problems.push(format!("{key}: listed as refused, got {other:?}")),
            },
            (false, Some(Unsupported::OnlyValues(allowed, _))) => {
                match (load(key, allowed[0]), load(key, "not-an-accepted-value")) {
                    (Ok(_), Err((k, _))) if k == *key => {
                        println!("only {allowed:?} {key}")
                    }
                    other => problems.push(format!("{key}: only {allowed:?}, got {other:?}")),
                }
            }
            (false, Some(Unsupported::NotApplicable(why))) => match load(key, "1") {
                // The thread-pool and socket-buffer keys shardlog replaces
                // are accepted silently (config::ACCEPTED_WITHOUT_EFFECT).
                Ok(w) if w.is_empty() || w.iter().any(|w| w.contains(key.as_str())) => {
                    println!("n/a {key}: {why}")
                }
                other => problems.push(format!("{key}: listed n/a, got {other:?}")),
            },
        }
    }
    let listed: BTreeSet<String> = untested.keys().cloned().collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        named_nowhere, listed,
        "keys read but named by no test must be exactly the `untested` lines of \
         tests/data/config-audit.txt (add a test, then drop the line)"
    );
}

#[test]
fn every_kafka_topic_key_is_applied_refused_or_not_applicable() {
    let known: BTreeSet<&str> = topic_config_names().collect();
    let audit = audit_entries();
    let na = audit.get("topic-na").cloned().unwrap_or_default();
    let theirs = audit.get("theirs").cloned().unwrap_or_default();
    let tested_in = audit.get("tested-in").cloned().unwrap_or_default();
    let sources = test_sources();
    let defaults = BrokerTopicDefaults::default();
    let mut problems = Vec::new();
    let keys = kafka_keys("topic");
    assert!(keys.len() > 30, "{} topic keys read", keys.len());
    for key in &keys {
        let resolve = |value: &str| {
            let overrides = BTreeMap::from([(key.clone(), value.to_owned())]);
            TopicConfig::resolve(&overrides, &defaults)
        };
        if let Some(why) = theirs.get(key) {
            println!("theirs {key}: {why}");
        } else if let Some(why) = na.get(key) {
            assert!(known.contains(key.as_str()) && !why.is_empty(), "{key}");
            println!("n/a {key}: {why}");
        } else if !known.contains(key.as_str()) {
            // CreateTopics/AlterConfigs answer INVALID_CONFIG naming it.
            match resolve("1") {
                Err(e) if e.key == *key => println!("refused {key}: {}", e.reason),
                other => problems.push(format!("{key}: unknown but {other:?}")),
            }
        } else {
            let files: Vec<&str> = sources
                .iter()
                .filter(|(_, text)| text.contains(key.as_str()))
                .map(|(f, _)| f.as_str())
                .collect();
            // A unit test that sets the config field (the key, dots as
            // underscores) rather than naming the key.
            let field_test = tested_in.get(key).is_some_and(|file| {
                std::fs::read_to_string(file)
                    .is_ok_and(|t| t.contains("#[cfg(test)]") && t.contains(&key.replace('.', "_")))
            });
            if field_test {
                println!("applied {key}: {}", tested_in[key]);
            } else if files.is_empty() {
                problems.push(format!("{key}: applied but no test names it"));
            } else {
                println!("applied {key}: {}", files.join(", "));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The values shardlog cannot honour are refused, naming the key.
    for (key, value) in [
        ("remote.storage.enable", "true"),
        ("compression.lz4.level", "12"),
    ] {
        let overrides = BTreeMap::from([(key.to_owned(), value.to_owned())]);
        let err = TopicConfig::resolve(&overrides, &defaults).unwrap_err();
        assert_eq!(err.key, key, "{err}");
    }
}

#[test]
fn broker_values_shardlog_would_misread_stop_the_start() {
    for (key, value) in [
        ("compression.type", "brotli"),
        ("compression.lz4.level", "12"),
        ("compression.gzip.level", "10"),
        ("compression.zstd.level", "23"),
        ("log.message.timestamp.type", "Whenever"),
        ("log.segment.delete.delay.ms", "-1"),
        ("log.roll.jitter.ms", "-5"),
    ] {
        match load(key, value) {
            Err((k, _)) => assert_eq!(k, key),
            Ok(w) => panic!("{key}={value} accepted ({w:?})"),
        }
    }
    for (key, value) in [
        ("compression.type", "zstd"),
        ("compression.lz4.level", "9"),
        ("compression.zstd.level", "-3"),
        ("log.roll.jitter.hours", "1"),
    ] {
        assert_eq!(load(key, value).map_err(|e| e.1), Ok(Vec::new()), "{key}");
    }
}
