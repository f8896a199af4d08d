//! `[io]` Broker-side request metrics, per shard: Kafka's `RequestMetrics`
//! (kafka.network:type=RequestMetrics) time split of every request, and
//! the Produce latency line printed at shutdown.
//!
//! A request is timed from the moment its frame was read off the socket
//! (`received`) to the moment its response is in the kernel's socket
//! buffer, split as Kafka's `RequestChannel.updateRequestMetrics` splits
//! it: request queue (read → its handler first runs), local (the handler,
//! less its purgatory wait), remote (parked in the purgatory: acks=all,
//! fetch long polls), response queue (ready → the connection's writer
//! takes it; responses leave in request order) and response send (the
//! socket write). While a request's future is polled its [`RequestScope`]
//! is the shard's current one ([`Scoped`]), so the purgatory adds its
//! wait and the Fetch handler marks a follower's fetch without a
//! parameter. The numbers go to the shard's `ShardMetrics`
//! (`/metrics`) and, for Produce, to `ShardStats::produce_latency`,
//! merged at shutdown into one line on stderr:
//! `request latency: produce n=N p50=Xus p99=Xus p99.9=Xus max=Xus`.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use kafka_protocol::messages::ApiKey;

use crate::histogram::LatencyHistogram;
use crate::metrics::shard::{RequestScope, RequestTimes, RequestVariant};
use crate::protocol::header::RequestHeader;
use crate::shard::ShardContext;

/// A request's handler future, polled with its scope installed as the
/// shard's current request; notes when it first ran.
pub struct Scoped<F> {
    ctx: Rc<ShardContext>,
    scope: Rc<RequestScope>,
    fut: F,
}

impl<F> Scoped<F> {
    pub fn new(ctx: Rc<ShardContext>, scope: Rc<RequestScope>, fut: F) -> Self {
        Self { ctx, scope, fut }
    }
}

impl<F: Future + Unpin> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        this.scope.on_poll(this.ctx.clock.mono_ns());
        this.ctx.stats.metrics.enter(this.scope.clone());
        let out = Pin::new(&mut this.fut).poll(cx);
        this.ctx.stats.metrics.leave();
        out
    }
}

/// The request being handled on this shard marks itself a follower's
/// fetch (Kafka's `FetchRequest.isFromFollower`): its times are recorded
/// under `FetchFollower`, else under `FetchConsumer`.
pub fn mark_follower_fetch(ctx: &ShardContext) {
    if let Some(scope) = ctx.stats.metrics.current() {
        scope.mark_follower();
    }
}

/// A request read and not yet taken by its handler, or a response ready
/// and not yet taken by its connection's writer: counted on the shard
/// while it lives (Kafka's `RequestChannel` `RequestQueueSize` and
/// `ResponseQueueSize`).
pub struct Queued {
    ctx: Rc<ShardContext>,
    response: bool,
}

impl Queued {
    pub fn request(ctx: &Rc<ShardContext>) -> Self {
        ctx.stats.metrics.on_request_queue(true);
        Self {
            ctx: ctx.clone(),
            response: false,
        }
    }

    pub fn response(ctx: &Rc<ShardContext>) -> Self {
        ctx.stats.metrics.on_response_queue(true);
        Self {
            ctx: ctx.clone(),
            response: true,
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.response {
            self.ctx.stats.metrics.on_response_queue(false);
        } else {
            self.ctx.stats.metrics.on_request_queue(false);
        }
    }
}

/// A handled request's timing, until its response is written.
pub struct Timing {
    api_key: i16,
    api_version: i16,
    received_ns: u64,
    scope: Rc<RequestScope>,
    done_ns: u64,
    throttle_ms: u64,
    /// The request's body size (Kafka's `RequestBytes`).
    body_bytes: u64,
}

impl Timing {
    /// `header`'s request of `body_bytes`, read at `received_ns`, handled
    /// by `done_ns`.
    pub fn new(
        (header, body_bytes): (&RequestHeader, u64),
        received_ns: u64,
        scope: Rc<RequestScope>,
        done_ns: u64,
        throttle_ms: u64,
    ) -> Self {
        Self {
            api_key: header.api_key.code(),
            api_version: header.api_version,
            received_ns,
            scope,
            done_ns,
            throttle_ms,
            body_bytes,
        }
    }

    /// Its response was written between `write_start_ns` and `sent_ns`.
    pub fn record_sent(self, ctx: &ShardContext, write_start_ns: u64, sent_ns: u64) {
        if self.api_key == ApiKey::Produce as i16 {
            record_produce(&ctx.stats.produce_latency, self.received_ns, sent_ns);
        }
        self.record(ctx, write_start_ns, sent_ns);
    }

    /// It has no response (acks=0 Produce): done when handled.
    pub fn record_unanswered(self, ctx: &ShardContext) {
        let done = self.done_ns;
        self.record(ctx, done, done);
    }

    fn record(&self, ctx: &ShardContext, write_start_ns: u64, sent_ns: u64) {
        // Down-converted while the response was written (Kafka marks
        // `FetchMessageConversionsPerSec` and adds the conversion time
        // once the send completed: `KafkaApis.updateConversionStats`).
        let conversions = self.scope.settle_fetch_conversions();
        let times = self.times(write_start_ns, sent_ns);
        let variant = if self.api_key != ApiKey::Fetch as i16 {
            RequestVariant::Plain
        } else if self.scope.is_follower() {
            RequestVariant::FetchFollower
        } else {
            RequestVariant::FetchConsumer
        };
        ctx.stats.metrics.on_request(
            self.api_key,
            self.api_version,
            variant,
            &times,
            ctx.clock.mono_ms(),
        );
        ctx.stats
            .metrics
            .on_request_errors(self.api_key, &self.scope.take_errors());
        ctx.stats.metrics.on_fetch_conversions(&conversions);
    }

    /// `[pure]` The split of the request's time, in microseconds.
    fn times(&self, write_start_ns: u64, sent_ns: u64) -> RequestTimes {
        let us = |from: u64, to: u64| to.saturating_sub(from) / 1_000;
        let started = self
            .scope
            .started_ns()
            .unwrap_or(self.received_ns)
            .max(self.received_ns);
        let handler_ns = self.done_ns.saturating_sub(started);
        let remote_ns = self.scope.remote_ns().min(handler_ns);
        let (conversion_us, temporary_memory_bytes) = self.scope.conversion_cost();
        RequestTimes {
            total_us: us(self.received_ns, sent_ns),
            request_queue_us: us(self.received_ns, started),
            local_us: (handler_ns - remote_ns) / 1_000,
            remote_us: remote_ns / 1_000,
            throttle_us: self.throttle_ms.saturating_mul(1_000),
            response_queue_us: us(self.done_ns, write_start_ns),
            response_send_us: us(write_start_ns, sent_ns),
            request_bytes: self.body_bytes,
            conversion_us,
            temporary_memory_bytes,
        }
    }
}

/// A Produce response read off the socket at `received_ns` (the shard
/// clock's `mono_ns`) has just been written, at `now_ns`: into the shard's
/// histogram `produce`.
fn record_produce(produce: &RefCell<LatencyHistogram>, received_ns: u64, now_ns: u64) {
    let ns = now_ns.saturating_sub(received_ns);
    produce.borrow_mut().record_ns(ns);
}

/// The shutdown line for the merged histogram; `None` when no Produce
/// request was answered.
pub fn produce_line(h: &LatencyHistogram) -> Option<String> {
    if h.count() == 0 {
        return None;
    }
    let s = h.summary();
    Some(format!(
        "request latency: produce n={} p50={:.0}us p99={:.0}us p99.9={:.0}us max={:.0}us",
        s.count, s.p50_us, s.p99_us, s.p999_us, s.max_us
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_latencies_come_back_in_the_shutdown_line() {
        let t0 = 5_000_000_000u64;
        let produce = RefCell::new(LatencyHistogram::new());
        std::thread::spawn(move || {
            for us in [100u64, 200, 300, 400, 10_000] {
                record_produce(&produce, t0, t0 + us * 1_000);
            }
            let line = produce_line(&produce.borrow()).expect("line");
            assert!(
                line.starts_with("request latency: produce n=5 p50=300us"),
                "{line}"
            );
            // HdrHistogram keeps 3 significant digits.
            let max: f64 = line
                .rsplit("max=")
                .next()
                .and_then(|v| v.trim_end_matches("us").parse().ok())
                .expect("max field");
            assert!((max - 10_000.0).abs() <= 10.0, "{line}");
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn a_request_time_splits_into_kafkas_parts() {
        let scope = Rc::new(RequestScope::default());
        scope.on_poll(1_100_000);
        scope.add_remote_ns(3_000_000);
        let t = Timing {
            api_key: 0,
            api_version: 9,
            received_ns: 1_000_000,
            scope,
            done_ns: 5_100_000,
            throttle_ms: 0,
            body_bytes: 120,
        };
        let times = t.times(5_200_000, 5_300_000);
        assert_eq!(times.total_us, 4_300);
        assert_eq!(times.request_queue_us, 100);
        assert_eq!(times.remote_us, 3_000);
        assert_eq!(times.local_us, 1_000);
        assert_eq!(times.response_queue_us, 100);
        assert_eq!(times.response_send_us, 100);
        assert_eq!(times.request_bytes, 120);
    }

    #[test]
    fn no_produce_no_line() {
        assert_eq!(produce_line(&LatencyHistogram::new()), None);
    }
}
