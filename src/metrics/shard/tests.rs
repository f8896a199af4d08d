//! The shard's recording functions: what each call adds to the copy a
//! scrape takes.

use super::*;

#[test]
fn topic_counters_add_up_per_topic_and_for_all_topics() {
    let m = ShardMetrics::default();
    m.on_produce_partition("a", Some((3, 300)), false);
    m.on_produce_partition("a", None, true);
    m.on_produce_partition("b", None, false);
    m.on_fetch_partition("a", 100, false, false);
    m.on_fetch_partition("a", 50, true, false);
    let c = m.counters(0);
    assert_eq!(c.all_topics.total_produce_requests, 3);
    assert_eq!(c.all_topics.failed_produce_requests, 1);
    assert_eq!(c.topics["a"].messages_in, 3);
    assert_eq!(c.topics["a"].bytes_in, 300);
    assert_eq!(c.topics["a"].bytes_out, 100);
    assert_eq!(c.topics["a"].total_fetch_requests, 2);
    assert_eq!(c.broker.replication_bytes_out, 50);
    assert_eq!(c.topics["b"].total_produce_requests, 1);
}

#[test]
fn a_fetch_is_recorded_under_fetch_and_its_variant() {
    let m = ShardMetrics::default();
    let t = RequestTimes {
        total_us: 2_000,
        ..RequestTimes::default()
    };
    m.on_request(1, 12, RequestVariant::FetchFollower, &t, 0);
    m.on_request(0, 9, RequestVariant::Plain, &t, 0);
    let c = m.counters(0);
    assert_eq!(c.requests.len(), 3);
    assert_eq!(c.requests[&(1, RequestVariant::Plain)].count, 1);
    assert_eq!(
        c.requests[&(1, RequestVariant::FetchFollower)].by_version[&12],
        1
    );
}

#[test]
fn validation_marks_all_topics_and_conversions_per_topic() {
    let m = ShardMetrics::default();
    let converted = ValidationStats {
        converted_records: 3,
        conversion_ns: 2_000,
        temporary_memory_bytes: 100,
        ..ValidationStats::default()
    };
    let scope = Rc::new(RequestScope::default());
    m.enter(scope.clone());
    m.on_produce_result("legacy", 10, ErrorCode::NONE, (0, 2), &converted);
    let refused = ValidationStats {
        no_key_compacted_topic: 2,
        invalid_offset_or_sequence: 1,
        ..ValidationStats::default()
    };
    m.on_produce_result("legacy", 10, ErrorCode::INVALID_RECORD, (-1, -1), &refused);
    m.leave();
    let c = m.counters(0);
    assert_eq!(c.all_topics.produce_message_conversions, 3);
    assert_eq!(c.topics["legacy"].produce_message_conversions, 3);
    assert_eq!(c.broker.no_key_compacted_topic, 2);
    assert_eq!(c.broker.invalid_offset_or_sequence, 1);
    assert_eq!(c.topics["legacy"].failed_produce_requests, 1);
    // The conversion's cost is the request's.
    assert_eq!(scope.conversion_cost(), (2, 100));
}

#[test]
fn fetch_conversions_are_read_once_the_response_was_written() {
    let scope = RequestScope::default();
    scope.add_fetch_conversion(
        "old",
        Box::new(|| ChunkStats {
            records: 4,
            ns: 3_000,
            temporary_bytes: 64,
        }),
    );
    scope.add_fetch_conversion("old", Box::new(ChunkStats::default));
    let settled = scope.settle_fetch_conversions();
    assert_eq!(settled, vec![("old".to_owned(), 4)]);
    assert_eq!(scope.conversion_cost(), (3, 64));
    let m = ShardMetrics::default();
    m.on_fetch_conversions(&settled);
    let c = m.counters(0);
    assert_eq!(c.topics["old"].fetch_message_conversions, 4);
    assert_eq!(c.all_topics.fetch_message_conversions, 4);
}

#[test]
fn expirations_and_queues_are_counted() {
    let m = ShardMetrics::default();
    m.on_produce_expired("t", 1);
    m.on_produce_expired("t", 1);
    m.on_fetch_expired(false);
    m.on_request_queue(true);
    m.on_request_queue(false);
    m.on_request_queue(false);
    m.on_response_queue(true);
    let c = m.counters(0);
    assert_eq!(c.broker.produce_expirations, 2);
    assert_eq!(c.produce_expirations[&("t".to_owned(), 1)], 2);
    assert_eq!(
        (
            c.broker.consumer_fetch_expirations,
            c.broker.follower_fetch_expirations
        ),
        (1, 0)
    );
    assert_eq!((c.request_queue, c.response_queue), (0, 1));
}

#[test]
fn request_bytes_are_recorded_for_every_name_conversions_for_produce_and_fetch_only() {
    let m = ShardMetrics::default();
    let t = RequestTimes {
        request_bytes: 300,
        conversion_us: 40,
        temporary_memory_bytes: 50,
        ..RequestTimes::default()
    };
    m.on_request(1, 3, RequestVariant::FetchConsumer, &t, 0);
    m.on_request(3, 12, RequestVariant::Plain, &t, 0);
    let c = m.counters(0);
    let recent = |key: i16, v: RequestVariant, i: usize| {
        c.requests[&(key, v)].recent[TIME_NAMES.len() + i].is_some()
    };
    assert!(recent(1, RequestVariant::Plain, 0) && recent(1, RequestVariant::Plain, 2));
    assert!(recent(1, RequestVariant::FetchConsumer, 0));
    assert!(!recent(1, RequestVariant::FetchConsumer, 1));
    assert!(recent(3, RequestVariant::Plain, 0) && !recent(3, RequestVariant::Plain, 1));
}

#[test]
fn socket_counters_count_per_listener_and_survive_the_snapshot() {
    let m = ShardMetrics::default();
    let sock = m.socket("PLAINTEXT");
    sock.on_authentication(true);
    m.on_connection_opened("PLAINTEXT");
    sock.on_bytes_in(100);
    sock.on_receive();
    sock.on_sent(1, 40);
    m.on_connection_closed("PLAINTEXT");
    m.socket("SASL").on_authentication(false);
    let c = m.counters(0).connections;
    let plain = ListenerConnections {
        open: 0,
        created: 1,
        closed: 1,
        requests: 1,
        responses: 1,
        bytes_in: 100,
        bytes_out: 40,
        auth_ok: 1,
        auth_failed: 0,
    };
    assert_eq!(c["PLAINTEXT"], plain);
    assert_eq!(c["SASL"].auth_failed, 1);
    let mut sum = plain;
    sum.add(&c["SASL"]);
    assert_eq!((sum.auth_ok, sum.auth_failed, sum.bytes_in), (1, 1, 100));
}
