//! The soak test (issue 26): a real confluent-kafka workload (tests/py/soak.py:
//! producers with every acks setting, idempotent and not, every codec; a
//! consumer group; ListOffsets; topics created and deleted; connections
//! opened, dropped half way and sent malformed frames; a topic whose
//! retention rolls and deletes segments all along) runs against one broker
//! that is killed with kill -9 and restarted on the same port and log dir
//! every few tens of seconds, then left alone for a quiet tail.
//!
//! Checked: every acknowledged record of the flushed topics is read back,
//! with no duplicate and in order for the idempotent producers; every part
//! of the workload made progress; over the quiet tail (after a warm-up) the
//! broker's live heap (its `shardlog.memory.report.ms` lines) does not grow
//! (least-squares slope), nor, in the long form, its anonymous memory, and
//! its open file descriptors do not climb; the broker never exits on its own
//! (its log says why if it does), logs no panic, and stops cleanly.
//!
//! CI runs the short form (`SHARDLOG_SOAK_SECS` unset: 150 s, one kill at
//! 20 s, a quiet tail measured from 60 s after the restart). The
//! long form, for a closing note:
//! `SHARDLOG_SOAK_SECS=1800 SHARDLOG_SOAK_KILL_EVERY_SECS=240 bash tests/run.sh --test hardening_soak -- --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::time::{Duration, Instant};

use common::{run_py_script, Broker};

/// How fast the live heap (and, in the long form, anonymous memory) may
/// grow over the measured part of the quiet tail (least-squares slope), by
/// its length. RssAnon is asserted only over a long tail: it keeps the
/// heap's high-water mark (the broker leaves freed memory mapped), so on a
/// busy host a burst of backed-up requests leaves a step in it (CI
/// 2026-12-05: +7.3 MB in one 10 s sample, and +15 to +20 MB here with the
/// host's cores taken by other work) that no leak made; the live heap falls
/// back after a burst and rises only with what the broker keeps. A broker levels off slowly
/// after a start: the cache's and connections' buffers keep the capacity
/// they reached (release build, no kill: +900 KiB/min 100–160 s after the
/// start, +200 KiB/min 160–290 s), and it grows in steps now and then
/// (the 30-minute form of 2026-12-04: +0.9 MB and +4.0 MB in a 10-minute
/// window, 622 KiB/min in all, then flat for its last 6 minutes). The
/// short form (150 s, one kill -9 at 20 s, about 65 s measured) catches gross leaks, like the 20 MB a
/// minute this test found in the write buffers (one per small flush); the
/// long form, a leak of a kilobyte per connection or per second.
fn rss_slope_limit_kib_per_min(measured: Duration) -> f64 {
    if measured < Duration::from_secs(300) {
        4096.0
    } else {
        LONG_RSS_SLOPE_LIMIT_KIB_PER_MIN
    }
}
const LONG_RSS_SLOPE_LIMIT_KIB_PER_MIN: f64 = 1024.0;
/// Open descriptors at the end of the quiet tail may exceed those at its
/// start by at most this (segments roll and topics come and go).
const FD_GROWTH_LIMIT: i64 = 32;
/// Left out of the quiet tail's measure after the last restart (at least;
/// a third of a long tail): the batch cache and the write buffers filling,
/// groups and client connections settling (a release broker under this
/// workload takes most of its memory in the first 40 s).
const WARM_UP: Duration = Duration::from_secs(60);

fn env_secs(key: &str, default: u64) -> Duration {
    Duration::from_secs(
        std::env::var(key)
            .ok()
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{key}={v} is not seconds"))
            })
            .unwrap_or(default),
    )
}

fn free_port() -> u16 {
    common::ports::reserved_port()
}

/// One sample of the broker process.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: f64,
    /// The last `memory report` line's `heap_live_bytes`, in KiB.
    heap_live_kib: Option<i64>,
    rss_anon_kib: i64,
    rss_kib: i64,
    fds: i64,
}

fn sample(pid: i32, at: f64) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<i64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as i64;
    Some(Sample {
        at,
        heap_live_kib: None,
        rss_anon_kib: field("RssAnon:")?,
        rss_kib: field("VmRSS:")?,
        fds,
    })
}

/// Least-squares slope of `y` over `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}

struct Soaked {
    broker: Broker,
    overrides: Vec<String>,
    log: Vec<String>,
    kills: u32,
    /// The running broker's last reported live heap, in KiB.
    heap_live_kib: Option<i64>,
}

/// The broker's log level here: warnings, and the memory reports.
const RUST_LOG: &str = "warn,shardlog::boot=info";

impl Soaked {
    fn collect_log(&mut self) {
        let lines = self.broker.log_lines();
        if let Some(kib) = lines.iter().rev().find_map(|l| heap_live_kib(l)) {
            self.heap_live_kib = Some(kib);
        }
        self.log.extend(lines);
    }

    /// kill -9, then a restart on the same log dir and port.
    fn kill_and_restart(self) -> Soaked {
        let Soaked {
            broker,
            overrides,
            mut log,
            kills,
            ..
        } = self;
        log.extend(broker.log_lines());
        let dir = broker.kill_keeping_dir();
        let args: Vec<&str> = overrides.iter().map(String::as_str).collect();
        let broker = Broker::start_logging(dir, &args, Some(RUST_LOG));
        Soaked {
            broker,
            overrides,
            log,
            kills: kills + 1,
            heap_live_kib: None,
        }
    }

    /// Fails the test with the log's tail if the broker is no longer running.
    fn assert_running(&mut self, at: f64) {
        if !self.broker.is_running() {
            self.collect_log();
            let tail = self.log[self.log.len().saturating_sub(60)..].join("\n");
            panic!("the broker exited on its own {at:.0} s into the soak; its log ends:\n{tail}");
        }
    }
}

/// `heap_live_bytes` of a `memory report` log line, in KiB.
fn heap_live_kib(line: &str) -> Option<i64> {
    if !line.contains("memory report") {
        return None;
    }
    let plain = common::plain_log_line(line);
    let rest = &plain[plain.find("heap_live_bytes=")? + "heap_live_bytes=".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<i64>().ok().map(|b| b / 1024)
}

fn assert_workload(report: &serde_json::Value) {
    assert_eq!(report["thread_failures"], serde_json::json!([]), "{report}");
    for (name, p) in report["producers"].as_object().expect("producers") {
        assert!(
            p["acked"].as_u64().unwrap() > 0,
            "producer {name} got no ack: {p}"
        );
        assert!(p["fatal"].is_null(), "producer {name}: {p}");
        assert_eq!(p["unflushed"], 0, "producer {name}: {p}");
        // Retries outlast every restart (message.timeout.ms 120 s): no
        // record fails (the 30-minute form of 2026-12-05 found the
        // retention producer's batches larger than its topic's segments
        // refused, RECORD_LIST_TOO_LARGE, and nothing checked it).
        assert_eq!(p["failed"], 0, "producer {name}: {p}");
    }
    let idem = &report["soak-idem"];
    for key in [
        "lost_count",
        "duplicate_count",
        "moved_count",
        "reordered_count",
    ] {
        assert_eq!(idem[key], 0, "soak-idem {key}: {idem}");
    }
    assert_eq!(idem["ok"], true, "soak-idem: {idem}");
    // Without idempotence a retry after a lost answer may write twice, and
    // a retried batch may pass a later one: only loss is checked.
    let plain = &report["soak-plain"];
    assert_eq!(plain["lost_count"], 0, "soak-plain: {plain}");
    assert!(plain["acked"].as_u64().unwrap() > 0, "{plain}");

    let group = &report["group"];
    assert!(group["consumed"].as_u64().unwrap() > 0, "{group}");
    assert!(
        group["committed_partitions"].as_u64().unwrap() > 0,
        "{group}"
    );
    let offsets = &report["list_offsets"];
    assert!(offsets["watermarks"].as_u64().unwrap() > 0, "{offsets}");
    assert!(offsets["by_time"].as_u64().unwrap() > 0, "{offsets}");
    for start in offsets["retention_log_start"].as_array().unwrap() {
        assert!(start.as_i64().unwrap() > 0, "no segment deleted: {offsets}");
    }
    let admin = &report["admin"];
    assert!(admin["created"].as_u64().unwrap() > 0, "{admin}");
    assert!(admin["deleted"].as_u64().unwrap() > 0, "{admin}");
    assert_eq!(
        admin["left"],
        serde_json::json!([]),
        "deleted topics still listed: {admin}"
    );
    let conns = &report["connections"];
    for key in ["answered", "dropped_mid_request", "malformed_closed"] {
        assert!(
            conns[key].as_u64().unwrap() > 0,
            "connections {key}: {conns}"
        );
    }
    assert_eq!(conns["wrong_answers"], 0, "{conns}");
}

/// The quiet tail's memory and descriptor trend; returns a summary line.
fn assert_steady(samples: &[Sample]) -> String {
    assert!(
        samples.len() >= 10,
        "too few samples in the quiet tail: {samples:?}"
    );
    let minutes: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| (s.at / 60.0, s.rss_anon_kib as f64))
        .collect();
    let anon_slope = slope(&minutes);
    let heap: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| Some((s.at / 60.0, s.heap_live_kib? as f64)))
        .collect();
    assert!(
        heap.len() >= samples.len() / 2,
        "too few memory reports in the quiet tail: {samples:?}"
    );
    let heap_slope = slope(&heap);
    let rss_slope = slope(
        &samples
            .iter()
            .map(|s| (s.at / 60.0, s.rss_kib as f64))
            .collect::<Vec<_>>(),
    );
    let third = samples.len() / 3;
    let fds_first = samples[..third].iter().map(|s| s.fds).max().unwrap();
    let fds_last = samples[samples.len() - third..]
        .iter()
        .map(|s| s.fds)
        .max()
        .unwrap();
    let (first, last) = (samples[0], samples[samples.len() - 1]);
    let every_10s: Vec<String> = samples
        .iter()
        .step_by(10)
        .map(|s| {
            let heap = s.heap_live_kib.map_or("-".into(), |k| k.to_string());
            format!("{:.0}s:{}/{heap}", s.at, s.rss_anon_kib)
        })
        .collect();
    let summary = format!(
        "quiet tail {:.0}..{:.0} s, {} samples: live heap slope {heap_slope:.0} KiB/min, \
         RssAnon {} -> {} KiB (slope {anon_slope:.0} KiB/min), \
         VmRSS {} -> {} KiB (slope {rss_slope:.0} KiB/min), fds max {fds_first} in the first third, \
         {fds_last} in the last; RssAnon/live heap KiB every 10 s: {}",
        first.at,
        last.at,
        samples.len(),
        first.rss_anon_kib,
        last.rss_anon_kib,
        first.rss_kib,
        last.rss_kib,
        every_10s.join(" "),
    );
    let measured = Duration::from_secs_f64(last.at - first.at);
    let limit = rss_slope_limit_kib_per_min(measured);
    if measured < Duration::from_secs(300) {
        // The short form: a leak grows the live heap in both halves of the
        // tail; one step (a burst of backed-up requests on a loaded host
        // kept a buffer's capacity: CI 2026-12-06, +14 MB in one sample,
        // then flat) lies in one half only.
        let (early, late) = heap.split_at(heap.len() / 2);
        let (early, late) = (slope(early), slope(late));
        assert!(
            early <= limit || late <= limit,
            "the live heap grows in both halves ({early:.0} and {late:.0} KiB/min): {summary}"
        );
    } else {
        assert!(heap_slope <= limit, "the live heap grows: {summary}");
    }
    assert!(
        measured < Duration::from_secs(300) || anon_slope <= limit,
        "anonymous memory grows: {summary}"
    );
    assert!(
        fds_last <= fds_first + FD_GROWTH_LIMIT,
        "file descriptors climb: {summary}"
    );
    summary
}

#[test]
fn a_broker_killed_and_restarted_under_a_mixed_workload_loses_nothing_and_holds_steady() {
    let total = env_secs("SHARDLOG_SOAK_SECS", 150);
    let kill_every = env_secs("SHARDLOG_SOAK_KILL_EVERY_SECS", 20);
    // No kill in the last 40 % (at least WARM_UP + 60 s): the quiet tail.
    let quiet = (total * 2 / 5).max(WARM_UP + Duration::from_secs(60));
    let warm_up = WARM_UP.max(quiet / 3);
    let port = free_port();
    let overrides: Vec<String> = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
        "log.retention.check.interval.ms=1000".into(),
        // Steady state inside the warm-up: a 4 MiB cache per shard fills in
        // seconds at the soak's rates, and so do 64 KiB write buffers (a
        // 1 MiB buffer of a durable partition, at ~3 KB/s, would take
        // five minutes to fill, its pages counted as they are touched).
        "shardlog.batch.cache.bytes=4194304".into(),
        "shardlog.write.buffer.bytes=65536".into(),
        "group.initial.rebalance.delay.ms=0".into(),
        "shardlog.memory.report.ms=1000".into(),
    ];
    let args: Vec<&str> = overrides.iter().map(String::as_str).collect();
    let broker = Broker::start_logging(common::new_log_dir(), &args, Some(RUST_LOG));
    let bootstrap = broker.bootstrap();
    let workdir = tempfile::tempdir().expect("workdir");
    let driver = {
        let args = vec![
            "run".to_string(),
            bootstrap.clone(),
            workdir.path().display().to_string(),
            format!("--seconds={}", total.as_secs()),
        ];
        std::thread::spawn(move || run_py_script(&["confluent_kafka"], "soak.py", &args))
    };

    let start = Instant::now();
    let mut soaked = Soaked {
        broker,
        overrides,
        log: Vec::new(),
        kills: 0,
        heap_live_kib: None,
    };
    let mut next_kill = kill_every;
    let mut last_start = Duration::ZERO;
    let mut tail = Vec::new();
    while !driver.is_finished() {
        std::thread::sleep(Duration::from_secs(1));
        let now = start.elapsed();
        soaked.assert_running(now.as_secs_f64());
        soaked.collect_log();
        if now >= next_kill && now + quiet < total {
            soaked = soaked.kill_and_restart();
            last_start = start.elapsed();
            next_kill = last_start + kill_every;
            tail.clear();
            continue;
        }
        // Measured until the workload stops producing (the drain after it
        // only reads).
        if now >= last_start + warm_up && now < total {
            if let Some(mut s) = sample(soaked.broker.pid().unwrap(), now.as_secs_f64()) {
                s.heap_live_kib = soaked.heap_live_kib;
                tail.push(s);
            }
        }
    }
    let report = driver.join().expect("the soak driver panicked");
    soaked.assert_running(start.elapsed().as_secs_f64());
    eprintln!("soak report: {report}");
    let Soaked {
        broker,
        mut log,
        kills,
        ..
    } = soaked;
    let (status, lines) = broker.stop_collect();
    log.extend(lines);
    assert!(
        status.success(),
        "the broker did not stop cleanly: {status}"
    );
    let panics: Vec<&String> = log.iter().filter(|l| l.contains("panic")).collect();
    assert!(panics.is_empty(), "the broker logged panics: {panics:#?}");
    assert!(
        kills >= 1,
        "the soak never killed the broker ({total:?} total)"
    );
    assert_workload(&report);
    let steady = assert_steady(&tail);
    eprintln!("soak: {kills} kill -9 and restarts in {total:?}; {steady}");
}
