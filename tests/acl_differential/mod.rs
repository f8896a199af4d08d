//! The comparison machinery of tests/security_acls_differential.rs: one
//! connection per broker logged in as the same SASL user, the same request
//! to both, both answers printed with `{:#?}` and compared line by line
//! after masking what must differ (ports, hosts, ids, throttle times).

pub mod acls;
pub mod cluster_ops;
pub mod requests;

use std::collections::BTreeMap;
use std::fmt::Debug;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Request, StrBytes};

use crate::common::Conn;

/// Fields whose values differ between two brokers by nature: masked.
const MASKED: &[&str] = &[
    "throttle_time_ms",
    "port",
    "host",
    "cluster_id",
    "topic_id",
    "producer_id",
    "member_id",
    "log_dir",
    "total_bytes",
    "usable_bytes",
    "last_timestamp",
    "transaction_start_time_ms",
    "coordinator_epoch",
];

/// Prose, and text fields a broker may send empty where Kafka sends null:
/// compared apart (check `<name>.nullness`, null or not; the text itself
/// never), so the error codes are compared on their own.
const PROSE: &[&str] = &["error_message", "documentation"];

/// `text` (a `{:#?}` print) with the [`MASKED`] fields' values replaced
/// and the [`PROSE`] fields taken out; and those fields' null-ness, one
/// line each.
pub fn mask(text: &str) -> (String, String) {
    let mut out = String::new();
    let mut prose = String::new();
    let mut skip_until: Option<String> = None;
    for line in text.lines() {
        if let Some(end) = &skip_until {
            if line.starts_with(end.as_str()) {
                skip_until = None;
            }
            continue;
        }
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let key = trimmed.split(": ").next().unwrap_or("");
        let opens = trimmed.ends_with('(') || trimmed.ends_with('{') || trimmed.ends_with('[');
        if MASKED.contains(&key) || PROSE.contains(&key) {
            if PROSE.contains(&key) {
                let set = if trimmed.contains("Some(") {
                    "set"
                } else {
                    "null"
                };
                prose += &format!("{indent}{key}: {set}\n");
            } else {
                out += &format!("{indent}{key}: <masked>\n");
            }
            if opens {
                skip_until = Some(format!("{indent}{}", closing(trimmed)));
            }
            continue;
        }
        out += line;
        out += "\n";
    }
    (out, prose)
}

fn closing(line: &str) -> char {
    match line.chars().last() {
        Some('(') => ')',
        Some('{') => '}',
        _ => ']',
    }
}

/// Differences found, by check name: (shardlog, Kafka), masked prints.
#[derive(Default)]
pub struct Diffs(pub BTreeMap<String, (String, String)>);

impl Diffs {
    pub fn check<T: Debug>(&mut self, name: &str, shardlog: &T, kafka: &T) {
        let (a, prose_a) = mask(&format!("{shardlog:#?}"));
        let (b, prose_b) = mask(&format!("{kafka:#?}"));
        if a != b {
            self.0.insert(name.to_owned(), (a, b));
        }
        if prose_a != prose_b {
            self.0
                .insert(format!("{name}.nullness"), (prose_a, prose_b));
        }
    }

    /// Fails on a difference not in `known` and on a listed one that no
    /// longer happens (so the list stays true). A known name `*.rest`
    /// stands for `rest` in every case (`<case>.rest`).
    pub fn assert_only(&self, known: &[(&str, &str)]) {
        let known: BTreeMap<&str, &str> = known.iter().copied().collect();
        let listed = |name: &str| {
            known.contains_key(name)
                || name
                    .split_once('.')
                    .is_some_and(|(_, rest)| known.contains_key(format!("*.{rest}").as_str()))
        };
        let mut report = String::new();
        for (name, (ours, theirs)) in &self.0 {
            if !listed(name) {
                report += &format!(
                    "\n=== {name}: not in KNOWN_DIFFERENCES\n{}",
                    line_diff(ours, theirs)
                );
            }
        }
        for name in known.keys() {
            let happens = match name.strip_prefix("*.") {
                Some(rest) => self
                    .0
                    .keys()
                    .any(|n| n.split_once('.').is_some_and(|(_, r)| r == rest)),
                None => self.0.contains_key(*name),
            };
            if !happens {
                report += &format!("\n=== {name}: listed but no longer differs: remove it\n");
            }
        }
        assert!(report.is_empty(), "shardlog vs Kafka 3.9:{report}");
    }
}

/// The lines of two prints that differ (`-` shardlog, `+` Kafka), with
/// the whole shardlog print after them for context.
fn line_diff(ours: &str, theirs: &str) -> String {
    let a: Vec<&str> = ours.lines().collect();
    let b: Vec<&str> = theirs.lines().collect();
    let mut out = String::new();
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            out += &format!(
                "line {i}:\n- shardlog {}\n+ Kafka    {}\n",
                x.unwrap_or(&"<none>"),
                y.unwrap_or(&"<none>")
            );
        }
    }
    out + &format!("--- shardlog:\n{ours}--- Kafka 3.9:\n{theirs}")
}

/// One connection to each broker, logged in as the same user, with the
/// (api key, min, max) versions each advertises.
pub struct Pair {
    pub shardlog: Conn,
    pub kafka: Conn,
    versions: [Vec<(i16, i16, i16)>; 2],
}

impl Pair {
    pub fn login(shardlog: &str, kafka: &str, user: &str, password: &str) -> Pair {
        let mut shardlog = login(shardlog, user, password);
        let mut kafka = login(kafka, user, password);
        let versions = [advertised(&mut shardlog), advertised(&mut kafka)];
        Pair {
            shardlog,
            kafka,
            versions,
        }
    }

    /// Whether each broker serves `key` at `version`.
    fn serves(&self, key: i16, version: i16) -> [bool; 2] {
        self.versions.each_ref().map(|v| {
            v.iter()
                .any(|&(k, min, max)| k == key && (min..=max).contains(&version))
        })
    }
}

fn advertised(conn: &mut Conn) -> Vec<(i16, i16, i16)> {
    let req = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("shardlog-test"))
        .with_client_software_version(StrBytes::from_static_str("0"));
    let r = conn.call(3, &req);
    assert_eq!(r.error_code, 0, "ApiVersions: {r:?}");
    r.api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect()
}

/// A connection to `addr` (a SASL_PLAINTEXT listener) logged in with
/// SASL/PLAIN: SaslHandshake v1, then SaslAuthenticate v2 carrying
/// RFC 4616's `\0user\0password`.
pub fn login(addr: &str, user: &str, password: &str) -> Conn {
    let mut conn = Conn::open_addr(addr);
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let r = conn.call(1, &handshake);
    assert_eq!(r.error_code, 0, "SaslHandshake PLAIN at {addr}: {r:?}");
    let auth = SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from(format!("\0{user}\0{password}")));
    let r = conn.call(2, &auth);
    assert_eq!(r.error_code, 0, "SaslAuthenticate {user} at {addr}: {r:?}");
    conn
}

/// The same request (`a` to shardlog, `b` to Kafka: they differ only
/// where the brokers' own ids go in), answers put in a comparable order by
/// `norm`, then compared as `name`.
pub fn check2<Q: Request>(
    p: &mut Pair,
    d: &mut Diffs,
    name: &str,
    version: i16,
    (a, b): (&Q, &Q),
    norm: impl Fn(&mut Q::Response),
) -> (Q::Response, Q::Response)
where
    Q::Response: Debug + Default,
{
    let serves = p.serves(Q::KEY, version);
    if serves != [true, true] {
        // Recorded once per API, not per case.
        let api = ApiKey::try_from(Q::KEY).map_or(format!("{}", Q::KEY), |k| format!("{k:?}"));
        d.check(
            &format!("unsupported.{api}.v{version}"),
            &serves[0],
            &serves[1],
        );
        return (Q::Response::default(), Q::Response::default());
    }
    let mut ra = p.shardlog.call(version, a);
    let mut rb = p.kafka.call(version, b);
    norm(&mut ra);
    norm(&mut rb);
    d.check(name, &ra, &rb);
    (ra, rb)
}

/// [`check2`] with one request for both, in the order the brokers answer.
pub fn check<Q: Request>(p: &mut Pair, d: &mut Diffs, name: &str, version: i16, req: &Q)
where
    Q::Response: Debug + Default,
{
    check2(p, d, name, version, (req, req), |_| {});
}
