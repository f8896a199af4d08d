//! `[pure]` The `RequestMetrics` histograms besides the times
//! (`RequestBytes`, and for Produce and Fetch `MessageConversionsTimeMs`
//! and `TemporaryMemoryBytes`), the `RequestChannel` queues, the
//! acceptors, the request handler pool's meter count and the delayed
//! operations' expirations (Kafka's `network/RequestChannel.scala`,
//! `SocketServer.scala`, `server/KafkaRequestHandler.scala`,
//! `DelayedProduce.scala`, `DelayedFetch.scala`), named as the parent
//! module says.

use super::{api_name, Builder, Kind, Labels, Value};
use crate::metrics::recent::{quantiles_ms, quantiles_raw};
use crate::metrics::report::BrokerReport;
use crate::metrics::shard::{ListenerConnections, RequestVariant, EXTRA_NAMES, TIME_NAMES};

/// `kafka.network:type=RequestMetrics` `RequestBytes` for every request
/// name, `MessageConversionsTimeMs` and `TemporaryMemoryBytes` for
/// `Produce` and `Fetch` only (not `FetchConsumer` / `FetchFollower`:
/// `RequestMetrics` creates them when the name is `Produce` or `Fetch`).
/// Every request is observed once in each it has, so each one's count is
/// the request count.
pub(super) fn request_extras(b: &mut Builder, r: &BrokerReport) {
    let requests = &r.counters.requests;
    let mbeans = [
        "RequestBytes",
        "MessageConversionsTimeMs",
        "TemporaryMemoryBytes",
    ];
    for (i, (name, mbean)) in EXTRA_NAMES.iter().zip(mbeans).enumerate() {
        let has = |key: i16, variant: RequestVariant| {
            i == 0 || ((key == 0 || key == 1) && variant == RequestVariant::Plain)
        };
        let unit = if i == 1 {
            "ms, recent"
        } else {
            "bytes, recent"
        };
        let f = b.family(
            &format!("kafka_network_requestmetrics_{name}"),
            &format!("kafka.network:type=RequestMetrics,name={mbean},request=* ({unit})"),
            Kind::Gauge,
        );
        for ((key, variant), s) in requests {
            let Some(Some(h)) = s.recent.get(TIME_NAMES.len() + i) else {
                continue;
            };
            if !has(*key, *variant) {
                continue;
            }
            let quantiles = if i == 1 {
                quantiles_ms(h)
            } else {
                quantiles_raw(h)
            };
            for (q, v) in quantiles {
                f.push(
                    vec![
                        ("request", api_name(*key, *variant)),
                        ("quantile", q.to_owned()),
                    ],
                    Value::F(v),
                );
            }
        }
        let f = b.family(
            &format!("kafka_network_requestmetrics_{name}_count"),
            &format!("kafka.network:type=RequestMetrics,name={mbean},request=* (Count)"),
            Kind::Counter,
        );
        for ((key, variant), s) in requests {
            if has(*key, *variant) {
                f.push(
                    vec![("request", api_name(*key, *variant))],
                    Value::U(s.count),
                );
            }
        }
    }
}

/// The network and handler series of this module, after the purgatory's.
pub(super) fn kafka(b: &mut Builder, r: &BrokerReport) {
    request_channel(b, r);
    // `Acceptor.blockedPercentMeter` is marked with the time the acceptor
    // waits to hand a new connection to a processor whose queue of new
    // connections is full (`Processor.accept` with `mayBlock`). A shard's
    // accept loop starts each connection's task itself and never waits on
    // a processor, so nothing is ever marked.
    let f = b.family(
        "kafka_network_acceptor_acceptorblockedpercent_count",
        "kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=* (Count): \
         ns blocked handing connections to processors",
        Kind::Counter,
    );
    for listener in &r.listeners {
        f.push(vec![("listener", listener.clone())], Value::U(0));
    }
    b.one(
        "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count",
        "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent (Count): \
         idle ns per data shard since its first scrape",
        Kind::Counter,
        Value::U(r.idle_ns_since_start() as u64),
    );
    expirations(b, r);
}

/// `kafka.network:type=RequestChannel`. shardlog has no request channel
/// between network and handler threads: a shard reads a request and
/// starts its handler task itself, and a finished handler hands its
/// response to its connection's writer. `RequestQueueSize` counts the
/// requests read whose task has not started yet; `ResponseQueueSize`
/// the responses finished and not yet taken by their writer (waiting for
/// an earlier response of their connection, or for the writer to run),
/// in all, and per shard as the `processor` (Kafka's network processor).
fn request_channel(b: &mut Builder, r: &BrokerReport) {
    b.one(
        "kafka_network_requestchannel_requestqueuesize",
        "kafka.network:type=RequestChannel,name=RequestQueueSize (Value): \
         requests read whose handler has not started",
        Kind::Gauge,
        Value::U(r.counters.request_queue),
    );
    let f = b.family(
        "kafka_network_requestchannel_responsequeuesize",
        "kafka.network:type=RequestChannel,name=ResponseQueueSize[,processor=*] (Value): \
         responses ready and not yet taken by their connection's writer",
        Kind::Gauge,
    );
    f.push(Vec::new(), Value::U(r.counters.response_queue));
    for s in &r.shards {
        f.push(
            vec![("processor", s.shard.to_string())],
            Value::U(s.counters.response_queue),
        );
    }
}

/// `DelayedProduceMetrics` (all partitions, and per partition once one
/// expired) and `DelayedFetchMetrics` (per `fetcherType`).
fn expirations(b: &mut Builder, r: &BrokerReport) {
    let c = &r.counters;
    let f = b.family(
        "kafka_server_delayedproducemetrics_expires",
        "kafka.server:type=DelayedProduceMetrics,name=ExpiresPerSec[,topic=*,partition=*] (Count): \
         partitions whose acks were pending when their produce expired",
        Kind::Counter,
    );
    f.push(Vec::new(), Value::U(c.broker.produce_expirations));
    for ((topic, partition), n) in &c.produce_expirations {
        let labels: Labels = vec![
            ("topic", topic.clone()),
            ("partition", partition.to_string()),
        ];
        f.push(labels, Value::U(*n));
    }
    let f = b.family(
        "kafka_server_delayedfetchmetrics_expires",
        "kafka.server:type=DelayedFetchMetrics,name=ExpiresPerSec,fetcherType=* (Count)",
        Kind::Counter,
    );
    for (kind, n) in [
        ("follower", c.broker.follower_fetch_expirations),
        ("consumer", c.broker.consumer_fetch_expirations),
    ] {
        f.push(vec![("fetcherType", kind.into())], Value::U(n));
    }
}

/// `kafka.server:type=socket-server-metrics,listener=*,networkProcessor=*`:
/// Kafka's `Selector.SelectorMetrics` of each network processor (here a
/// shard) per listener. Its `request` meter counts the sends (on a broker,
/// the responses written) and `response` the receives (the requests read):
/// the `Selector` names them from a client's side. Bytes are the Kafka
/// stream's (after TLS), as `Selector` counts the channel's reads and
/// writes; a SASL exchange's bytes are not counted. Every channel that
/// becomes ready counts a successful authentication (PLAINTEXT and SSL
/// too), a failed TLS handshake or SASL exchange a failed one.
pub(super) fn socket_server(b: &mut Builder, r: &BrokerReport) {
    type Pick = fn(&ListenerConnections) -> u64;
    let conns: [(&str, Kind, Pick); 9] = [
        ("connection_count", Kind::Gauge, |c| c.open),
        ("connection_creation", Kind::Counter, |c| c.created),
        ("connection_close", Kind::Counter, |c| c.closed),
        ("request", Kind::Counter, |c| c.requests),
        ("response", Kind::Counter, |c| c.responses),
        ("incoming_byte", Kind::Counter, |c| c.bytes_in),
        ("outgoing_byte", Kind::Counter, |c| c.bytes_out),
        ("successful_authentication", Kind::Counter, |c| c.auth_ok),
        ("failed_authentication", Kind::Counter, |c| c.auth_failed),
    ];
    for (name, kind, pick) in conns {
        let f = b.family(
            &format!("kafka_server_socket_server_metrics_{name}"),
            &format!(
                "kafka.server:type=socket-server-metrics,listener=*,networkProcessor=* ({})",
                name.replace('_', "-")
            ),
            kind,
        );
        for s in &r.shards {
            for (listener, c) in &s.counters.connections {
                f.push(
                    vec![
                        ("listener", listener.clone()),
                        ("networkProcessor", s.shard.to_string()),
                    ],
                    Value::U(pick(c)),
                );
            }
        }
    }
}
