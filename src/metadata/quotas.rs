//! `[pure]` Client quotas (KIP-13, KIP-55; Kafka 3.9 `ClientQuotaManager`,
//! `QuotaUtils`, `ZkAdminManager.alterClientQuotas / describeClientQuotas`,
//! `Sanitizer`): the quota configs stored under `/config/users/<user>`,
//! `/config/users/<user>/clients/<client>` and `/config/clients/<client>`
//! (`<default>` for the default entity), which of them applies to a
//! request's (user, client-id) in Kafka's precedence order, the checks of
//! AlterClientQuotas, the matching of DescribeClientQuotas, and the rate a
//! quota is measured with and the throttle time a violation costs
//! (`quota.window.num` 11 samples of `quota.window.size.seconds` 1 s;
//! throttle = (rate − quota) / quota × window, KIP-219: the response says
//! so and the channel is muted that long).

use std::collections::BTreeMap;

use crate::protocol::ErrorCode;

/// The name of the default entity in ZooKeeper (`ConfigEntityName.Default`).
pub const DEFAULT_NAME: &str = "<default>";
/// The principal of a PLAINTEXT connection (no authentication).
pub const ANONYMOUS: &str = "ANONYMOUS";

pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";

/// Kafka's defaults: `quota.window.num` and `quota.window.size.seconds`.
pub const WINDOW_SAMPLES: usize = 11;
pub const SAMPLE_MS: i64 = 1000;

/// Entity types of a client quota.
pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";

/// One side of a quota entity: a name, or the default (`None`).
pub type Name = Option<String>;

/// A quota entity: user and/or client-id (at least one), each named or
/// default.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuotaEntity {
    pub user: Option<Name>,
    pub client_id: Option<Name>,
}

impl QuotaEntity {
    /// The config znode path below `/config` (names sanitized).
    pub fn zk_path(&self) -> Option<String> {
        let part = |n: &Name| {
            n.as_deref()
                .map_or_else(|| DEFAULT_NAME.to_owned(), sanitize)
        };
        match (&self.user, &self.client_id) {
            (Some(u), Some(c)) => Some(format!("users/{}/clients/{}", part(u), part(c))),
            (Some(u), None) => Some(format!("users/{}", part(u))),
            (None, Some(c)) => Some(format!("clients/{}", part(c))),
            (None, None) => None,
        }
    }

    /// The entity a config path below `/config` names (the inverse of
    /// [`Self::zk_path`]).
    pub fn from_zk_path(path: &str) -> Option<Self> {
        let name = |s: &str| -> Option<Name> {
            if s == DEFAULT_NAME {
                Some(None)
            } else {
                desanitize(s).map(Some)
            }
        };
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            ["users", u, "clients", c] => Some(Self {
                user: Some(name(u)?),
                client_id: Some(name(c)?),
            }),
            ["users", u] => Some(Self {
                user: Some(name(u)?),
                client_id: None,
            }),
            ["clients", c] => Some(Self {
                user: None,
                client_id: Some(name(c)?),
            }),
            _ => None,
        }
    }
}

/// Kafka's `Sanitizer.sanitize`: URL encoding (UTF-8), with `*` and space
/// encoded too, so any client id or principal can name a znode.
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `Sanitizer.desanitize`; `None` for a malformed escape.
pub fn desanitize(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Every stored quota: entity → key → value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QuotaConfigs {
    pub entities: BTreeMap<QuotaEntity, BTreeMap<String, f64>>,
}

impl Eq for QuotaConfigs {}

/// The quotas in force for one (user, client-id): bytes/s, and the entity
/// whose config gave each (the sensor key: clients of one entity share it).
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub entity: QuotaEntity,
    pub bound: f64,
}

impl QuotaConfigs {
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The quota `key` applying to `user` / `client_id`, in Kafka's
    /// precedence (`ClientQuotaManager.quotaMetricTags` over
    /// `DefaultQuotaCallback`): /users/u/clients/c, /users/u/clients/<default>,
    /// /users/u, /users/<default>/clients/c, /users/<default>/clients/<default>,
    /// /users/<default>, /clients/c, /clients/<default>. The first entity that
    /// has the key wins.
    pub fn resolve(&self, key: &str, user: &str, client_id: &str) -> Option<Applied> {
        let u = || Some(user.to_owned());
        let c = || Some(client_id.to_owned());
        let order: [(Option<Name>, Option<Name>); 8] = [
            (Some(u()), Some(c())),
            (Some(u()), Some(None)),
            (Some(u()), None),
            (Some(None), Some(c())),
            (Some(None), Some(None)),
            (Some(None), None),
            (None, Some(c())),
            (None, Some(None)),
        ];
        order.into_iter().find_map(|(user, client_id)| {
            let entity = QuotaEntity { user, client_id };
            let bound = *self.entities.get(&entity)?.get(key)?;
            Some(Applied { entity, bound })
        })
    }
}

/// Whether any quota (byte rates, request percentage) applies to
/// `client_id` of quota user `user` (the principal's name).
pub fn applies_to(configs: &QuotaConfigs, user: &str, client_id: &str) -> bool {
    [PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE]
        .iter()
        .any(|k| configs.resolve(k, user, client_id).is_some())
}

/// Why an AlterClientQuotas entry was refused: Kafka's code and message.
pub type Refusal = (ErrorCode, String);

/// One quota change of AlterClientQuotas: set `Some(value)`, remove `None`.
pub type QuotaOp = (String, Option<f64>);

/// An entity as a request names it: (entity type, name; `None` = default).
pub type EntityComponents = Vec<(String, Option<String>)>;

/// One AlterClientQuotas entry: its entity and changes.
pub type AlterEntry = (EntityComponents, Vec<QuotaOp>);

/// Entities with their quota values (DescribeClientQuotas' entries).
pub type Described = Vec<(QuotaEntity, BTreeMap<String, f64>)>;

/// `ZkAdminManager.alterClientQuotas`' checks: the entity's types must be
/// `user` and/or `client-id`, each at most once; keys must be quota keys of
/// such an entity; byte rates must be whole numbers (LONG configs) and
/// positive; request_percentage positive. INVALID_REQUEST otherwise.
pub fn validate_alter(
    entity: &[(String, Option<String>)],
    ops: &[QuotaOp],
) -> Result<QuotaEntity, Refusal> {
    let bad = |m: String| Err((ErrorCode::INVALID_REQUEST, m));
    let mut user = None;
    let mut client_id = None;
    for (t, name) in entity {
        let slot = match t.as_str() {
            USER => &mut user,
            CLIENT_ID => &mut client_id,
            other => return bad(format!("Unhandled client quota entity type: {other}")),
        };
        if slot.is_some() {
            return bad(format!("Duplicate quota entity type: {t}"));
        }
        if name.as_deref() == Some("") {
            return bad(format!("Empty {t} name is not allowed"));
        }
        *slot = Some(name.clone());
    }
    if user.is_none() && client_id.is_none() {
        return bad("Invalid empty client quota entity".into());
    }
    for (key, value) in ops {
        if ![PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE].contains(&key.as_str()) {
            return bad(format!("Invalid configuration key {key}"));
        }
        if let Some(v) = value {
            if key != REQUEST_PERCENTAGE && (v.fract() != 0.0 || !v.is_finite()) {
                return bad(format!("Configuration {key} must be a Long value"));
            }
            if *v <= 0.0 || !v.is_finite() {
                return bad(format!("Configuration {key} must be positive"));
            }
        }
    }
    Ok(QuotaEntity { user, client_id })
}

/// A DescribeClientQuotas filter component: entity type and how its name
/// must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    Exact(String),
    Default,
    Any,
}

/// `describeClientQuotas`: the entities matching every component; with
/// `strict`, only entities with no other entity type. A filter naming an
/// unknown type or the same type twice is INVALID_REQUEST.
pub fn describe(
    configs: &QuotaConfigs,
    components: &[(String, Match)],
    strict: bool,
) -> Result<Described, Refusal> {
    let mut user: Option<&Match> = None;
    let mut client: Option<&Match> = None;
    for (t, m) in components {
        let slot = match t.as_str() {
            USER => &mut user,
            CLIENT_ID => &mut client,
            other => {
                return Err((
                    ErrorCode::INVALID_REQUEST,
                    format!("Custom entity type '{other}' not supported"),
                ))
            }
        };
        if slot.is_some() {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("Duplicate {t} filter component entity type"),
            ));
        }
        *slot = Some(m);
    }
    let matches = |side: &Option<Name>, m: Option<&Match>| match (side, m) {
        (_, None) => !strict || side.is_none(),
        (None, Some(_)) => false,
        (Some(_), Some(Match::Any)) => true,
        (Some(n), Some(Match::Default)) => n.is_none(),
        (Some(n), Some(Match::Exact(x))) => n.as_deref() == Some(x.as_str()),
    };
    Ok(configs
        .entities
        .iter()
        .filter(|(e, v)| !v.is_empty() && matches(&e.user, user) && matches(&e.client_id, client))
        .map(|(e, v)| (e.clone(), v.clone()))
        .collect())
}

/// The bytes one quota entity used, in [`WINDOW_SAMPLES`] samples of
/// [`SAMPLE_MS`] (Kafka's `Rate` over a `SampledStat`; the client quota
/// window, `quota.window.num` × `quota.window.size.seconds`), or the
/// window [`Rate::with_window`] sets (`replication.quota.window.*`).
#[derive(Debug, Clone)]
pub struct Rate {
    /// (sample start ms, bytes), oldest first.
    samples: Vec<(i64, f64)>,
    window_samples: usize,
    sample_ms: i64,
}

impl Default for Rate {
    fn default() -> Self {
        Self::with_window(WINDOW_SAMPLES, SAMPLE_MS)
    }
}

impl Rate {
    /// A rate over `window_samples` (at least 2) samples of `sample_ms`
    /// (at least 1).
    pub fn with_window(window_samples: usize, sample_ms: i64) -> Self {
        Self {
            samples: Vec::new(),
            window_samples: window_samples.max(2),
            sample_ms: sample_ms.max(1),
        }
    }

    /// Add `bytes` at `now_ms`.
    pub fn record(&mut self, bytes: f64, now_ms: i64) {
        self.expire(now_ms);
        match self.samples.last_mut() {
            Some((start, v)) if now_ms < *start + self.sample_ms => *v += bytes,
            _ => self.samples.push((now_ms, bytes)),
        }
        if self.samples.len() > self.window_samples {
            self.samples.remove(0);
        }
    }

    /// Kafka's `SampledStat.purgeObsoleteSamples`: a sample as old as
    /// the whole window is dropped.
    fn expire(&mut self, now_ms: i64) {
        let horizon = now_ms - self.sample_ms * self.window_samples as i64;
        self.samples.retain(|(start, _)| *start > horizon);
    }

    /// Kafka's `Rate.windowSize`: from the oldest sample to now, but at
    /// least `samples - 1` whole samples (so a new sensor does not read a
    /// burst as a huge rate).
    pub fn window_ms(&self, now_ms: i64) -> i64 {
        let oldest = self.samples.first().map_or(now_ms, |s| s.0);
        let elapsed = (now_ms - oldest).max(0);
        let min = self.sample_ms * (self.window_samples as i64 - 1);
        elapsed.max(min)
    }

    /// Bytes per second over the window.
    pub fn rate(&mut self, now_ms: i64) -> f64 {
        self.expire(now_ms);
        let total: f64 = self.samples.iter().map(|s| s.1).sum();
        total * 1000.0 / self.window_ms(now_ms) as f64
    }
}

/// `QuotaUtils.throttleTime`: how long a client over `bound` must wait so
/// that its rate over the window comes back to the bound; 0 within it.
pub fn throttle_ms(rate: &mut Rate, bound: f64, now_ms: i64) -> i64 {
    let observed = rate.rate(now_ms);
    if bound <= 0.0 || observed <= bound {
        return 0;
    }
    let ms = (observed - bound) / bound * rate.window_ms(now_ms) as f64;
    ms.round().min(i32::MAX as f64) as i64
}

/// The sensors of every quota entity that recorded traffic, per quota key.
#[derive(Debug, Default)]
pub struct Sensors {
    rates: BTreeMap<(String, QuotaEntity), Rate>,
}

impl Sensors {
    /// Record `bytes` against `applied` for `key` at `now_ms`; the throttle
    /// time the request earns.
    pub fn record(&mut self, key: &str, applied: &Applied, bytes: f64, now_ms: i64) -> i64 {
        self.record_or_refund(key, applied, bytes, now_ms, false)
    }

    /// [`Self::record`]; with `refund_if_throttled`, a request that earns a
    /// throttle has its bytes taken back (it is answered without data).
    pub fn record_or_refund(
        &mut self,
        key: &str,
        applied: &Applied,
        bytes: f64,
        now_ms: i64,
        refund_if_throttled: bool,
    ) -> i64 {
        let rate = self
            .rates
            .entry((key.to_owned(), applied.entity.clone()))
            .or_default();
        rate.record(bytes, now_ms);
        let throttle = throttle_ms(rate, applied.bound, now_ms);
        if throttle > 0 && refund_if_throttled {
            rate.record(-bytes, now_ms);
        }
        throttle
    }
}

/// A client-quota call for the control shard.
#[derive(Debug)]
pub enum QuotaCall {
    /// AlterClientQuotas: per entry its entity components (type, name or
    /// default) and changes.
    Alter {
        entries: Vec<AlterEntry>,
        validate_only: bool,
    },
    /// DescribeClientQuotas.
    Describe {
        components: Vec<(String, Match)>,
        strict: bool,
    },
    /// Bytes of one request under `applied` for quota `key`.
    Record {
        key: String,
        applied: Applied,
        bytes: f64,
        now_ms: i64,
        /// Fetch: a throttled response carries no data, so its bytes are
        /// taken back (Kafka's `unrecordQuotaSensor`).
        refund_if_throttled: bool,
    },
}

/// The control shard's answer to a [`QuotaCall`].
#[derive(Debug, PartialEq)]
pub enum QuotaReply {
    Altered(Vec<Result<(), Refusal>>),
    Described(DescribeAnswer),
    /// The throttle time the request earned.
    Throttle(i64),
}

/// The matching entities with their quotas, or why the filter was refused.
pub type DescribeAnswer = Result<Described, Refusal>;

#[cfg(test)]
mod tests;
