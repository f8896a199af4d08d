//! `[drv]` Client-quota throttling shared by the handlers that measure
//! bytes (Produce: `producer_byte_rate`; Fetch: `consumer_byte_rate`) and
//! by the connection, which measures every request's time on the shard
//! (`request_percentage`):
//! whether a quota applies to the client (its principal's name as the
//! quota user — `ANONYMOUS` on PLAINTEXT, the SASL user or the mapped
//! certificate name otherwise, as Kafka's `ClientQuotaManager` takes
//! `KafkaPrincipal.getName` — and its client id), the broker-wide account
//! on the control shard, and how the throttle reaches the client (KIP-219).

use crate::metadata::quotas::{QuotaCall, QuotaReply};
use crate::metrics::shard::{QuotaKind, QuotaTags};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

use super::{Request, Response};

/// Whom a quota is resolved for: the quota user and the client id.
#[derive(Debug, Clone, Copy)]
pub struct QuotaId<'a> {
    pub user: &'a str,
    pub client_id: &'a str,
}

impl<'a> QuotaId<'a> {
    /// The principal `User:<name>` → quota user `<name>`.
    pub fn new(principal: &'a str, client_id: &'a str) -> Self {
        let user = principal
            .split_once(':')
            .map_or(principal, |(_, name)| name);
        Self { user, client_id }
    }

    /// The quota identity of a request.
    pub fn of(req: &'a Request) -> Self {
        Self::new(
            &req.principal,
            req.header.client_id.as_deref().unwrap_or(""),
        )
    }
}

/// The throttle time (ms) `bytes` more of `key` cost this client: 0 when
/// no quota applies (no control-shard call then) or it is within it.
pub async fn quota_throttle_ms(
    ctx: &ShardContext,
    key: &str,
    id: QuotaId<'_>,
    bytes: usize,
) -> u64 {
    record(ctx, key, id, bytes, false).await
}

/// Fetch's account: a throttled response goes out without data, so its
/// bytes are taken back (Kafka's `unrecordQuotaSensor`).
pub async fn fetch_throttle_ms(ctx: &ShardContext, id: QuotaId<'_>, bytes: usize) -> u64 {
    record(
        ctx,
        crate::metadata::quotas::CONSUMER_BYTE_RATE,
        id,
        bytes,
        true,
    )
    .await
}

/// `request_percentage` (Kafka's `ClientRequestQuotaManager`): `busy_ns`
/// of this shard's time spent on one request, as percent-seconds of one
/// thread (`nanosToPercentage`), against the client's bound; the
/// throttle time (ms) it earns.
pub async fn request_throttle_ms(ctx: &ShardContext, id: QuotaId<'_>, busy_ns: u64) -> u64 {
    let percent_seconds = busy_ns as f64 * 100.0 / 1e9;
    record_value(
        ctx,
        crate::metadata::quotas::REQUEST_PERCENTAGE,
        id,
        percent_seconds,
        false,
    )
    .await
}

/// Whether `request_percentage` applies to this client.
pub fn request_quota_applies(ctx: &ShardContext, id: QuotaId<'_>) -> bool {
    let snapshot = ctx.snapshot();
    !snapshot.client_quotas.is_empty()
        && snapshot
            .client_quotas
            .resolve(
                crate::metadata::quotas::REQUEST_PERCENTAGE,
                id.user,
                id.client_id,
            )
            .is_some()
}

async fn record(
    ctx: &ShardContext,
    key: &str,
    id: QuotaId<'_>,
    bytes: usize,
    refund_if_throttled: bool,
) -> u64 {
    record_value(ctx, key, id, bytes as f64, refund_if_throttled).await
}

async fn record_value(
    ctx: &ShardContext,
    key: &str,
    id: QuotaId<'_>,
    value: f64,
    refund_if_throttled: bool,
) -> u64 {
    let snapshot = ctx.snapshot();
    if snapshot.client_quotas.is_empty() {
        return 0;
    }
    let Some(applied) = snapshot.client_quotas.resolve(key, id.user, id.client_id) else {
        return 0;
    };
    // Kafka's `quotaMetricTags`: the user and client id as far as the
    // applied entity names them (a default entity names them too).
    let tags = QuotaTags {
        kind: match key {
            crate::metadata::quotas::PRODUCER_BYTE_RATE => QuotaKind::Produce,
            crate::metadata::quotas::CONSUMER_BYTE_RATE => QuotaKind::Fetch,
            _ => QuotaKind::Request,
        },
        user: applied
            .entity
            .user
            .as_ref()
            .map_or_else(String::new, |_| id.user.to_owned()),
        client_id: applied
            .entity
            .client_id
            .as_ref()
            .map_or_else(String::new, |_| id.client_id.to_owned()),
    };
    let call = QuotaCall::Record {
        key: key.to_owned(),
        applied,
        bytes: value,
        now_ms: ctx.clock.wall_ms(),
        refund_if_throttled,
    };
    let ms = match ctx.control_client().client_quotas(call).await {
        Ok(QuotaReply::Throttle(ms)) => u64::try_from(ms).unwrap_or(0),
        _ => 0,
    };
    if ms > 0 {
        ctx.stats.metrics.on_quota_throttle(tags, ms);
    }
    ms
}

/// KIP-219: a client that understands throttling (`muted`: Produce v6+,
/// Fetch v8+) gets its response at once and the connection is muted; an
/// older one gets the response after the throttle time.
pub async fn throttled_response(parts: Vec<OutPart>, throttle_ms: u64, muted: bool) -> Response {
    if throttle_ms == 0 {
        return Response::Body(parts);
    }
    if muted {
        return Response::Throttled { parts, throttle_ms };
    }
    glommio::timer::sleep(std::time::Duration::from_millis(throttle_ms)).await;
    Response::Body(parts)
}
