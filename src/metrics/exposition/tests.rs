//! The exposition's golden text: every family's name, type, HELP and
//! labels for a fixed report. A rename changes
//! `tests/golden/metrics_exposition.txt`, which is then a deliberate
//! change (`SHARDLOG_UPDATE_GOLDEN=1 cargo test --lib exposition` writes
//! it anew).

use super::*;
use crate::metrics::control::{
    ControlReport, ControllerCounts, ControllerProbe, ControllerState, ControllerStats,
    ZkClientStats, ZkSessionState,
};
use crate::metrics::recent::RecentHistogram;
use crate::metrics::report::{
    CommittedOffset, ControllerGauges, FollowerLag, GroupCounts, ProcessStats, SendPathBytes,
    ShardReport,
};
use crate::metrics::report::{LogDirState, StorageTimings};
use crate::metrics::shard::{
    ExecutorTotals, QuotaKind, QuotaTags, RequestTimes, ShardMetrics, ValidationStats,
};
use crate::protocol::ErrorCode;

mod section_2;

const GOLDEN: &str = "tests/golden/metrics_exposition.txt";

fn gauges(topic: &str, partition: i32, leader: bool, isr: u32) -> PartitionGauges {
    PartitionGauges {
        topic: topic.into(),
        partition,
        leader,
        offline: false,
        replicas: 3,
        isr,
        min_isr: 2,
        size_bytes: 4096,
        segments: 1,
        log_start_offset: 0,
        log_end_offset: 100,
        high_watermark: 90,
        last_stable_offset: 85,
        reassigning: leader,
        late_transaction: false,
        producer_ids: 2,
    }
}

/// A broker with two shards, one topic led here and one followed, a
/// group, Produce and Fetch requests and a connection.
pub(crate) fn sample_report() -> BrokerReport {
    let m = ShardMetrics::default();
    m.on_produce_partition("orders", Some((10, 1_000)), false);
    m.on_produce_partition("orders", None, true);
    m.on_fetch_partition("orders", 500, false, false);
    m.on_fetch_partition("orders", 700, true, false);
    m.on_broker(|b| {
        b.isr_shrinks = 1;
        b.isr_expands = 2;
    });
    sample_new_counters(&m);
    let t = RequestTimes {
        total_us: 5_000,
        request_queue_us: 10,
        local_us: 1_000,
        remote_us: 3_900,
        throttle_us: 0,
        response_queue_us: 40,
        response_send_us: 50,
        request_bytes: 1_000,
        conversion_us: 1_500,
        temporary_memory_bytes: 4_096,
    };
    m.on_request(0, 9, RequestVariant::Plain, &t, 0);
    m.on_request(1, 12, RequestVariant::FetchFollower, &t, 0);
    m.on_connection_opened("PLAINTEXT");
    let sock = m.socket("PLAINTEXT");
    sock.on_authentication(true);
    sock.on_authentication(false);
    sock.on_bytes_in(1_200);
    sock.on_receive();
    sock.on_receive();
    sock.on_sent(2, 300);
    m.on_quota_throttle(
        QuotaTags {
            kind: QuotaKind::Produce,
            user: String::new(),
            client_id: "batch-app".into(),
        },
        250,
    );
    m.on_request_errors(0, &[(0, 1), (10, 1)].into_iter().collect());
    sample_executor(&m);
    let first = ShardReport {
        shard: 0,
        counters: m.counters(0),
        partitions: vec![gauges("orders", 0, true, 2)],
        parked_produce: 1,
        parked_fetch: 2,
        committed: vec![CommittedOffset {
            group: "billing".into(),
            topic: "orders".into(),
            partition: 0,
            offset: 40,
        }],
        controller: Some(ControllerGauges {
            active: true,
            offline_partitions: 0,
            global_partitions: 2,
            global_topics: 1,
            active_brokers: 3,
        }),
        send_paths: SendPathBytes {
            sendmsg: 500,
            ..SendPathBytes::default()
        },
        batch_cache: crate::metrics::report::BatchCacheStats {
            hits: 3,
            hit_bytes: 300,
            misses: 1,
            used_bytes: 4096,
        },
        groups: GroupCounts {
            groups: 1,
            empty: 1,
            offsets: 1,
            ..GroupCounts::default()
        },
        executor: m.executor(),
        storage: sample_storage(),
        log_dirs: sample_log_dirs(),
        max_dirty_ratio: 0.42,
        ..ShardReport::default()
    };
    let mut report =
        BrokerReport::new(vec![first, sample_follower_shard()], Some(sample_process()));
    report.control = sample_control();
    report.listeners = vec!["PLAINTEXT".into()];
    report
}

/// The second shard: a follower of partition 1 lagging 7 behind.
fn sample_follower_shard() -> ShardReport {
    ShardReport {
        shard: 1,
        partitions: vec![gauges("orders", 1, false, 0)],
        min_fetch_rate: Some(2.5),
        follower_lags: vec![FollowerLag {
            topic: "orders".into(),
            partition: 1,
            leader: 2,
            fetcher_id: 0,
            lag: 7,
        }],
        ..ShardReport::default()
    }
}

fn sample_process() -> ProcessStats {
    ProcessStats {
        cpu_seconds: 1.5,
        resident_memory_bytes: 1 << 20,
        virtual_memory_bytes: 1 << 30,
        open_fds: 12,
        max_fds: 1024,
        start_time_seconds: 1_700_000_000.0,
        threads: 4,
        disk_read_bytes: 0,
        disk_write_bytes: 8192,
    }
}

/// The counters behind the series added for METRICS.md §2's gaps: a
/// produce of legacy records converted, one refused for its CRC, a
/// down-converted fetch, replication and reassignment bytes, an ISR
/// update refused, expired delayed operations, queued requests and
/// responses.
fn sample_new_counters(m: &ShardMetrics) {
    let converted = ValidationStats {
        converted_records: 2,
        conversion_ns: 1_000_000,
        temporary_memory_bytes: 512,
        ..ValidationStats::default()
    };
    m.on_produce_result("orders", 100, ErrorCode::NONE, (10, 11), &converted);
    let crc = ValidationStats {
        invalid_message_crc: 1,
        ..ValidationStats::default()
    };
    m.on_produce_result("orders", 50, ErrorCode::CORRUPT_MESSAGE, (-1, -1), &crc);
    m.on_fetch_conversions(&[("orders".into(), 5)]);
    m.on_broker(|b| {
        b.replication_bytes_in = 900;
        b.reassignment_bytes_in = 300;
        b.reassignment_bytes_out = 200;
        b.failed_isr_updates = 1;
    });
    m.on_produce_expired("orders", 0);
    m.on_fetch_expired(true);
    m.on_request_queue(true);
    m.on_request_queue(true);
    m.on_request_queue(false);
    m.on_response_queue(true);
}

/// Two log dirs, the second offline.
fn sample_log_dirs() -> Vec<LogDirState> {
    vec![
        LogDirState {
            path: "/data/kafka-1".into(),
            online: true,
        },
        LogDirState {
            path: "/data/kafka-2".into(),
            online: false,
        },
    ]
}

/// One DMA write of 120 µs, one fdatasync of 800 µs, two recycles.
fn sample_storage() -> StorageTimings {
    let mut flushes = RecentHistogram::new();
    flushes.record_us(0, 800);
    let mut t = StorageTimings {
        segment_recycles: 2,
        flush_count: flushes.count(),
        flush_recent: flushes.recent(0),
        ..StorageTimings::default()
    };
    t.dma_writes.record_us(120);
    t.fsyncs.record_us(800);
    t
}

/// Two scrapes' executor figures: 1 s apart, busy a quarter of it.
fn sample_executor(m: &ShardMetrics) {
    m.on_executor(
        &ExecutorTotals {
            busy_ns: 1_500_000_000,
            tasks_executed: 100,
            scheduler_runs: 40,
            uring_file_reads: 3,
            uring_file_writes: 5,
            uring_file_write_bytes: 20_480,
            ..ExecutorTotals::default()
        },
        0,
    );
    m.on_executor(
        &ExecutorTotals {
            busy_ns: 250_000_000,
            ..ExecutorTotals::default()
        },
        1_000,
    );
}

/// The controller's and ZooKeeper client's part of the sample.
fn sample_control() -> ControlReport {
    let controller = ControllerStats::default();
    controller.on_leader_election(0, 12_000);
    controller.on_unclean_elections(1);
    controller.on_event_dequeued(0, 2_000);
    controller.on_state(ControllerState::TopicChange);
    controller.install_probe(std::rc::Rc::new(|| ControllerProbe {
        queue_size: 2,
        counts: Some(ControllerCounts {
            preferred_replica_imbalance: 1,
            topics_to_delete: 1,
            replicas_to_delete: 3,
            topics_ineligible_to_delete: 0,
            replicas_ineligible_to_delete: 1,
        }),
    }));
    let zk = ZkClientStats::default();
    zk.on_request(0, 800);
    zk.on_session_event(|e| e.sync_connects += 1);
    zk.on_state(ZkSessionState::Connected);
    ControlReport {
        controller: controller.report(0),
        zk: Some(zk.report(0)),
    }
}

#[test]
fn the_exposition_text_matches_the_golden_file() {
    let text = render(&sample_report(), Format::Text);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("SHARDLOG_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        text, golden,
        "the /metrics text changed; if the rename is deliberate, \
         SHARDLOG_UPDATE_GOLDEN=1 cargo test --lib exposition rewrites {GOLDEN}"
    );
}

#[test]
fn the_kafka_series_strimzi_reads_are_there_with_their_labels() {
    let text = render(&sample_report(), Format::Text);
    for line in [
        "# TYPE kafka_server_brokertopicmetrics_messagesin_total counter",
        "kafka_server_brokertopicmetrics_messagesin_total 12",
        "kafka_server_brokertopicmetrics_messagesin_total{topic=\"orders\"} 12",
        "kafka_server_replicamanager_underreplicatedpartitions 1",
        "kafka_server_replicamanager_leadercount 1",
        "kafka_server_replicamanager_partitioncount 2",
        "kafka_controller_kafkacontroller_activecontrollercount 1",
        "kafka_cluster_partition_replicascount{topic=\"orders\",partition=\"0\"} 3",
        "kafka_log_log_size{topic=\"orders\",partition=\"1\"} 4096",
        "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"} 1",
        "kafka_network_requestmetrics_requests_total{request=\"FetchFollower\",version=\"12\"} 1",
        "kafka_network_requestmetrics_totaltimems_count_total{request=\"Fetch\"} 1",
        "kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation=\"Produce\"} 1",
        "kafka_server_socket_server_metrics_connection_count{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 1",
        "kafka_server_socket_server_metrics_request_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 2",
        "kafka_server_socket_server_metrics_response_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 2",
        "kafka_server_socket_server_metrics_incoming_byte_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 1200",
        "kafka_server_socket_server_metrics_outgoing_byte_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 300",
        "kafka_server_socket_server_metrics_successful_authentication_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 1",
        "kafka_server_socket_server_metrics_failed_authentication_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 1",
        "kafka_server_socket_server_metrics_connection_creation_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 1",
        "kafka_server_socket_server_metrics_connection_close_total{listener=\"PLAINTEXT\",networkProcessor=\"0\"} 0",
        "shardlog_consumergroup_lag{consumergroup=\"billing\",topic=\"orders\",partition=\"0\"} 50",
        "process_open_fds 12",
        "kafka_controller_controllerstats_uncleanleaderelections_total 1",
        "kafka_controller_controllerstats_leaderelectionrateandtimems_count_total 1",
        "kafka_network_requestmetrics_errors_total{request=\"Produce\",error=\"NONE\"} 1",
        "kafka_network_requestmetrics_errors_total{request=\"Produce\",error=\"MESSAGE_TOO_LARGE\"} 1",
        "kafka_server_replicafetchermanager_maxlag{clientId=\"Replica\"} 7",
        "kafka_server_replicafetchermanager_minfetchrate{clientId=\"Replica\"} 2.5",
        "kafka_server_replicafetchermanager_failedpartitionscount{clientId=\"Replica\"} 0",
        "kafka_server_replicafetchermanager_deadthreadcount{clientId=\"Replica\"} 0",
        "kafka_server_fetcherlagmetrics_consumerlag{clientId=\"ReplicaFetcherThread-0-2\",topic=\"orders\",partition=\"1\"} 7",
        "kafka_coordinator_group_groupmetadatamanager_numgroupsempty 1",
        "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count_total 1",
        "kafka_server_sessionexpirelistener_zookeepersyncconnects_total 1",
        "shardlog_zookeeper_session_state{state=\"CONNECTED\"} 1",
        "shardlog_shard_busy_seconds_total{shard=\"0\"} 1.75",
        "kafka_network_socketserver_networkprocessoravgidle_percent 0.75",
        "kafka_log_logmanager_offlinelogdirectorycount 1",
        "kafka_log_logmanager_logdirectoryoffline{logDirectory=\"/data/kafka-1\"} 0",
        "kafka_log_logmanager_logdirectoryoffline{logDirectory=\"/data/kafka-2\"} 1",
        "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent 0.75",
        "shardlog_uring_file_writes_total{shard=\"0\"} 5",
        "# TYPE shardlog_storage_fsync_seconds histogram",
        "shardlog_storage_fsync_seconds_count{shard=\"0\"} 1",
        "shardlog_storage_fsync_seconds_bucket{shard=\"0\",le=\"0.001\"} 1",
        "shardlog_storage_fsync_seconds_bucket{shard=\"0\",le=\"0.00075\"} 0",
        "shardlog_storage_dma_write_seconds_bucket{shard=\"0\",le=\"+Inf\"} 1",
        "shardlog_storage_segment_recycles_total{shard=\"0\"} 2",
        "shardlog_quota_throttle_time_seconds_total{quota=\"Produce\",user=\"\",client_id=\"batch-app\"} 0.25",
        "shardlog_quota_throttled_responses_total{quota=\"Produce\",user=\"\",client_id=\"batch-app\"} 1",
        "shardlog_request_time_seconds_count{request=\"Produce\",part=\"remote\"} 1",
        "shardlog_request_time_seconds_bucket{request=\"Produce\",part=\"remote\",le=\"0.005\"} 1",
        "shardlog_request_time_seconds_bucket{request=\"FetchFollower\",part=\"total\",le=\"+Inf\"} 1",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    assert!(text.lines().any(|l| l.starts_with(
        "kafka_network_requestmetrics_remotetimems{request=\"Produce\",quantile=\"0.99\"} 3.9"
    )));
    assert!(text.lines().any(|l| l.starts_with(
        "kafka_controller_controllerstats_leaderelectionrateandtimems{quantile=\"0.50\"} 12"
    )));
}

/// The series METRICS.md §2 lists that the sample gives values to besides
/// those above (conversions, replication and reassignment bytes,
/// validator refusals, controller counts, queues, expirations, flushes).
#[test]
fn the_series_filling_section_2s_gaps_carry_the_samples_values() {
    let text = render(&sample_report(), Format::Text);
    for line in [
        "kafka_server_brokertopicmetrics_producemessageconversions_total 2",
        "kafka_server_brokertopicmetrics_producemessageconversions_total{topic=\"orders\"} 2",
        "kafka_server_brokertopicmetrics_fetchmessageconversions_total{topic=\"orders\"} 5",
        "kafka_server_brokertopicmetrics_replicationbytesin_total 900",
        "kafka_server_brokertopicmetrics_replicationbytesout_total 700",
        "kafka_server_brokertopicmetrics_reassignmentbytesin_total 300",
        "kafka_server_brokertopicmetrics_reassignmentbytesout_total 200",
        "kafka_server_brokertopicmetrics_invalidmessagecrcrecords_total 1",
        "kafka_server_brokertopicmetrics_invalidmagicnumberrecords_total 0",
        "kafka_server_brokertopicmetrics_invalidoffsetorsequencerecords_total 0",
        "kafka_server_brokertopicmetrics_nokeycompactedtopicrecords_total 0",
        "kafka_server_replicamanager_reassigningpartitions 1",
        "kafka_server_replicamanager_partitionswithlatetransactionscount 0",
        "kafka_server_replicamanager_produceridcount 4",
        "kafka_server_replicamanager_failedisrupdates_total 1",
        "kafka_cluster_partition_laststableoffsetlag{topic=\"orders\",partition=\"0\"} 5",
        "kafka_controller_kafkacontroller_preferredreplicaimbalancecount 1",
        "kafka_controller_kafkacontroller_fencedbrokercount 0",
        "kafka_controller_kafkacontroller_topicstodeletecount 1",
        "kafka_controller_kafkacontroller_replicastodeletecount 3",
        "kafka_controller_kafkacontroller_topicsineligibletodeletecount 0",
        "kafka_controller_kafkacontroller_replicasineligibletodeletecount 1",
        "kafka_controller_kafkacontroller_controllerstate 3",
        "kafka_controller_kafkacontroller_zkmigrationstate 4",
        "kafka_controller_controllereventmanager_eventqueuesize 2",
        "kafka_controller_controllereventmanager_eventqueuetimems_count_total 1",
        "kafka_network_requestmetrics_requestbytes_count_total{request=\"FetchFollower\"} 1",
        "kafka_network_requestmetrics_messageconversionstimems_count_total{request=\"Produce\"} 1",
        "kafka_network_requestmetrics_temporarymemorybytes_count_total{request=\"Fetch\"} 1",
        "kafka_network_requestchannel_requestqueuesize 1",
        "kafka_network_requestchannel_responsequeuesize 1",
        "kafka_network_requestchannel_responsequeuesize{processor=\"0\"} 1",
        "kafka_network_requestchannel_responsequeuesize{processor=\"1\"} 0",
        "kafka_network_acceptor_acceptorblockedpercent_count_total{listener=\"PLAINTEXT\"} 0",
        "kafka_server_delayedproducemetrics_expires_total 1",
        "kafka_server_delayedproducemetrics_expires_total{topic=\"orders\",partition=\"0\"} 1",
        "kafka_server_delayedfetchmetrics_expires_total{fetcherType=\"follower\"} 1",
        "kafka_server_delayedfetchmetrics_expires_total{fetcherType=\"consumer\"} 0",
        "kafka_log_logflushstats_logflushrateandtimems_count_total 1",
        "kafka_log_logcleanermanager_max_dirty_percent 42",
        "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count_total 750000000",
        "kafka_server_sessionexpirelistener_zookeepersaslauthentications_total 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    for prefix in [
        // 1000 and 4096 bytes, within the histograms' 1% resolution.
        "kafka_network_requestmetrics_requestbytes{request=\"Produce\",quantile=\"0.99\"} 100",
        "kafka_network_requestmetrics_temporarymemorybytes{request=\"Produce\",quantile=\"0.50\"} 41",
        "kafka_network_requestmetrics_messageconversionstimems{request=\"Produce\",quantile=\"0.99\"} 1.5",
        "kafka_controller_controllereventmanager_eventqueuetimems{quantile=\"0.50\"} 2",
        "kafka_log_logflushstats_logflushrateandtimems{quantile=\"0.99\"} 0.8",
        "kafka_server_kafkaserver_yammer_metrics_count ",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(prefix)),
            "missing {prefix:?} in\n{text}"
        );
    }
    // The conversion histograms exist for Produce and Fetch only.
    assert!(!text.contains("messageconversionstimems_count_total{request=\"FetchFollower\"}"));
    assert!(!text.contains("temporarymemorybytes_count_total{request=\"FetchFollower\"}"));
}

#[test]
fn openmetrics_ends_with_eof_and_names_counter_families_without_total() {
    let text = render(&sample_report(), Format::OpenMetrics);
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(text
        .lines()
        .any(|l| l == "# TYPE kafka_server_brokertopicmetrics_messagesin counter"));
    assert!(text
        .lines()
        .any(|l| l == "kafka_server_brokertopicmetrics_messagesin_total 12"));
}

#[test]
fn content_negotiation_prefers_openmetrics_only_when_asked() {
    // What Prometheus 2.42 sends.
    let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(negotiate(Some(prom)), Format::OpenMetrics);
    assert_eq!(negotiate(None), Format::Text);
    assert_eq!(negotiate(Some("*/*")), Format::Text);
    assert_eq!(negotiate(Some("text/plain;version=0.0.4")), Format::Text);
    assert_eq!(
        negotiate(Some("application/openmetrics-text;q=0.2,text/plain;q=0.9")),
        Format::Text
    );
    assert_eq!(
        negotiate(Some("application/openmetrics-text; version=1.0.0")),
        Format::OpenMetrics
    );
}

/// Scrape size with 1,000 partitions on one broker, every one a leader
/// with three replicas, a follower lag and a group's committed offset:
/// 1,128,569 bytes in 13,356 lines of text 0.0.4 (13 series per
/// partition, about 1.1 KB), printed and checked below 1.25 MiB.
#[test]
fn a_thousand_partitions_render_under_one_and_a_quarter_mib() {
    let mut shard = ShardReport::default();
    for p in 0..1_000 {
        shard.partitions.push(gauges("wide-topic-name", p, true, 3));
        shard.follower_lags.push(FollowerLag {
            topic: "wide-topic-name".into(),
            partition: p,
            leader: 2,
            fetcher_id: 0,
            lag: 0,
        });
        shard.committed.push(CommittedOffset {
            group: "consumers".into(),
            topic: "wide-topic-name".into(),
            partition: p,
            offset: 10,
        });
    }
    let report = BrokerReport::new(vec![shard], None);
    let text = render(&report, Format::Text);
    eprintln!(
        "1,000 partitions: {} bytes, {} lines",
        text.len(),
        text.lines().count()
    );
    assert!(text.len() < 5 << 18, "{} bytes", text.len());
    assert!(
        text.len() > 500_000,
        "every partition's series: {}",
        text.len()
    );
}
