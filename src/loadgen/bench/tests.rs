//! Unit tests of `loadgen::bench`.

use super::*;
use clap::Parser;

fn parse(v: &[&str]) -> BenchArgs {
    Cli::try_parse_from(std::iter::once("bench").chain(v.iter().copied()))
        .unwrap()
        .args
}

#[test]
fn default_split_gives_the_broker_the_first_half_of_the_cores() {
    let table: [(&[usize], &[usize], &[usize]); 5] = [
        (&[0, 1], &[0], &[1]),
        (&[0, 1, 2, 3], &[0, 1], &[2, 3]),
        (&[0, 1, 2], &[0], &[1, 2]),
        (&[3], &[3], &[3]),
        (&[], &[0], &[0]),
    ];
    for (avail, broker, client) in table {
        let (b, c) = default_core_split(avail);
        assert_eq!((b.as_slice(), c.as_slice()), (broker, client), "{avail:?}");
    }
}

#[test]
fn plan_derives_the_missing_side_of_the_core_split() {
    let p = resolve_plan(&parse(&["--broker-cpus", "1"]), &[0, 1]).unwrap();
    assert_eq!(p.broker_cpus, Some(vec![1]));
    assert_eq!(p.client_cpus, Some(vec![0]));
    let p = resolve_plan(&parse(&["--client-cpus", "0"]), &[0, 1, 2]).unwrap();
    assert_eq!(p.broker_cpus, Some(vec![1, 2]));
    assert!(p.warnings.is_empty());
    let p = resolve_plan(
        &parse(&["--broker-cpus", "0", "--client-cpus", "0"]),
        &[0, 1],
    )
    .unwrap();
    assert_eq!(p.warnings.len(), 1, "overlap warned");
    assert!(resolve_plan(&parse(&["--broker-cpus", "7"]), &[0, 1]).is_err());
    assert!(resolve_plan(&parse(&["--client-cpus", "x"]), &[0, 1]).is_err());
}

#[test]
fn external_broker_is_not_pinned_and_rejects_broker_flags() {
    let p = resolve_plan(&parse(&["--bootstrap", "h:9092"]), &[0, 1]).unwrap();
    assert_eq!((p.broker_cpus, p.client_cpus), (None, None));
    for flags in [
        ["--broker-cpus", "0"],
        ["--broker-bin", "/x"],
        ["--broker-override", "a=b"],
        ["--brokers", "3"],
    ] {
        let bad = parse(&["--bootstrap", "h:9092", flags[0], flags[1]]);
        assert!(resolve_plan(&bad, &[0, 1]).is_err(), "{flags:?}");
    }
    let bad = parse(&["--bootstrap", "h:9092", "--flamegraph"]);
    assert!(resolve_plan(&bad, &[0, 1]).is_err());
}

#[test]
fn quick_and_explicit_sweeps_and_durations() {
    let q = resolve_plan(&parse(&["--quick"]), &[0, 1]).unwrap();
    assert_eq!(q.sweep, default_sweep(true));
    assert_eq!(
        (q.duration, q.warmup),
        (Duration::from_secs(2), Duration::from_secs(1))
    );
    assert_eq!(q.fractions.as_deref(), Some(QUICK_FRACTIONS));
    let f = resolve_plan(&parse(&[]), &[0, 1]).unwrap();
    assert_eq!(f.sweep, default_sweep(false));
    assert_eq!(f.duration, Duration::from_secs(5));
    assert_eq!(
        f.fractions.as_deref(),
        Some(""),
        "loadgen's default fractions"
    );
    let flat = resolve_plan(&parse(&["--flat-out", "--quick"]), &[0, 1]).unwrap();
    assert_eq!(flat.fractions, None);
    assert_eq!(
        (flat.duration, flat.warmup),
        (Duration::from_secs(3), Duration::from_secs(1))
    );
    let flat = resolve_plan(&parse(&["--flat-out"]), &[0, 1]).unwrap();
    assert_eq!(
        (flat.duration, flat.warmup),
        (Duration::from_secs(10), Duration::from_secs(2))
    );
    let own = resolve_plan(&parse(&["--quick", "--fractions", "20,40,60,80"]), &[0, 1]).unwrap();
    assert_eq!(own.fractions.as_deref(), Some("20,40,60,80"));
    assert!(Cli::try_parse_from(["bench", "--flat-out", "--fractions", "50"]).is_err());
    let s = resolve_plan(
        &parse(&["--sweep", "acks=0", "--duration", "500ms", "--quick"]),
        &[0, 1],
    )
    .unwrap();
    assert_eq!(s.sweep, vec!["acks=0".to_string()]);
    assert_eq!(s.duration, Duration::from_millis(500));
}

#[test]
fn loadgen_command_line_parses_into_the_intended_loadgen_args() {
    let args = parse(&["--quick", "--topic", "t", "--", "--compression", "lz4"]);
    let plan = resolve_plan(&args, &[0, 1]).unwrap();
    let argv = loadgen_argv(&args, &plan, "127.0.0.1:1234", Path::new("/tmp/o"));
    let lg = LoadgenCli::try_parse_from(&argv).unwrap().args;
    assert_eq!(lg.bootstrap, "127.0.0.1:1234");
    assert_eq!(lg.topic, "t");
    assert_eq!(lg.partitions, Some(6));
    assert_eq!(lg.message_size, Some(1024));
    assert_eq!(lg.duration, Some(Duration::from_secs(2)));
    assert_eq!(lg.warmup, Some(Duration::from_secs(1)));
    assert_eq!(lg.fractions.as_deref(), Some(QUICK_FRACTIONS));
    assert!(!lg.flat_out && lg.no_results_line);
    assert_eq!(lg.client_cpus.as_deref(), Some("1"));
    assert_eq!(lg.sweep, default_sweep(true));
    assert_eq!(lg.out, Some(PathBuf::from("/tmp/o")));
    assert_eq!(lg.compression.as_deref(), Some("lz4"));
    let flat = parse(&["--flat-out"]);
    let plan = resolve_plan(&flat, &[0, 1]).unwrap();
    let argv = loadgen_argv(&flat, &plan, "h:1", Path::new("/tmp/o"));
    let lg = LoadgenCli::try_parse_from(&argv).unwrap().args;
    assert!(lg.flat_out && lg.fractions.is_none());
    let full = parse(&[]);
    let plan = resolve_plan(&full, &[0, 1]).unwrap();
    let argv = loadgen_argv(&full, &plan, "h:1", Path::new("/tmp/o"));
    let lg = LoadgenCli::try_parse_from(&argv).unwrap().args;
    assert!(
        !lg.flat_out && lg.fractions.is_none(),
        "curve, default fractions"
    );
}

#[test]
fn broker_overrides_pin_shards_and_put_user_keys_last() {
    let addr: SocketAddr = "127.0.0.1:5555".parse().unwrap();
    let extra = vec!["shardlog.flush.every.append=true".to_string()];
    let budget = disk::log_budget(1 << 40, 6);
    let v = broker_overrides(
        "PLAINTEXT",
        &addr,
        Path::new("/d"),
        &[0, 2],
        &budget,
        &extra,
    );
    assert_eq!(v[0], "listeners=PLAINTEXT://127.0.0.1:5555");
    assert!(v.contains(&"log.dirs=/d".to_string()));
    assert!(v.contains(&"shardlog.shards=2".to_string()));
    assert!(v.contains(&"shardlog.cpus=0,2".to_string()));
    assert!(v.contains(&"log.retention.bytes=536870912".to_string()));
    assert!(v.contains(&"log.segment.bytes=134217728".to_string()));
    assert_eq!(v.last(), extra.last());
}

#[test]
fn readiness_and_zerocopy_lines_parse() {
    let log =
        "INFO x\nshardlog: listening on 127.0.0.1:9092 with 1 shards (broker.id=0, cluster.id=c)\n";
    assert_eq!(
        parse_readiness_line(log),
        Some(Some("127.0.0.1:9092".parse().unwrap()))
    );
    assert_eq!(parse_readiness_line("listening on somewhere"), Some(None));
    assert_eq!(parse_readiness_line("starting\n"), None);
    let log = "a\nINFO zerocopy: sendmsg=10 sendfile=20 copied=3 glommio=0\nstopped\n";
    let (line, c) = parse_zerocopy_line(log).unwrap();
    assert!(line.ends_with("glommio=0"));
    assert_eq!(c.get("sendfile"), Some(&20));
    assert_eq!(c.len(), 4);
    assert!(parse_zerocopy_line("no such line").is_none());
}

#[test]
fn utc_timestamps_match_known_dates() {
    let table = [
        (0, "19700101-000000"),
        (951_782_400_000, "20000229-000000"),
        (1_798_761_599_000, "20261231-235959"),
        (1_700_000_000_123, "20231114-221320"),
    ];
    for (ms, s) in table {
        assert_eq!(utc_timestamp(ms), s, "{ms}");
    }
}

#[test]
fn tail_keeps_the_last_lines() {
    assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
    assert_eq!(tail("a", 5), "a");
    assert_eq!(tail("", 3), "");
}

fn sh(script: &str, log: &Path) -> BrokerChild {
    let addr = free_loopback_addr().unwrap();
    let args = vec!["-c".to_string(), script.to_string()];
    BrokerChild::spawn(Path::new("/bin/sh"), &args, log, addr).unwrap()
}

#[test]
fn broker_ready_on_its_line_and_stopped_by_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap 'echo zerocopy: copied=0; exit 0' TERM; \
                      echo 'shardlog: listening on 127.0.0.1:4321 with 1 shards' >&2; \
                      while :; do sleep 0.05; done";
    let mut b = sh(script, &dir.path().join("log"));
    let addr = b.wait_ready(Duration::from_secs(20)).unwrap();
    assert_eq!(addr, "127.0.0.1:4321".parse().unwrap());
    let exit = b.stop(Duration::from_secs(20)).unwrap();
    assert!(
        matches!(exit, BrokerExit::Stopped(s) if s.success()),
        "{exit:?}"
    );
    assert!(parse_zerocopy_line(&b.log()).is_some());
}

#[test]
fn broker_exiting_at_startup_reports_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = sh(
        "echo 'bad config: shardlog.shards' >&2; exit 3",
        &dir.path().join("log"),
    );
    let err = format!("{:#}", b.wait_ready(Duration::from_secs(20)).unwrap_err());
    assert!(err.contains("bad config: shardlog.shards"), "{err}");
    assert!(err.contains("exit status: 3"), "{err}");
}

#[test]
fn broker_ignoring_sigterm_is_killed_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap '' TERM; echo 'listening on 127.0.0.1:1 ' >&2; while :; do sleep 0.05; done";
    let mut b = sh(script, &dir.path().join("log"));
    b.wait_ready(Duration::from_secs(20)).unwrap();
    assert_eq!(
        b.stop(Duration::from_millis(300)).unwrap(),
        BrokerExit::Killed
    );
}

#[test]
fn compare_puts_the_started_broker_first_under_its_name() {
    let args = parse(&["--quick", "--compare", "kafka=127.0.0.1:9093"]);
    let plan = resolve_plan(&args, &[0, 1]).unwrap();
    let argv = loadgen_argv(&args, &plan, "127.0.0.1:1234", Path::new("/tmp/o"));
    let lg = LoadgenCli::try_parse_from(&argv).unwrap().args;
    assert_eq!(
        lg.compare,
        vec!["shardlog=127.0.0.1:1234", "kafka=127.0.0.1:9093"]
    );
    let ext = parse(&["--bootstrap", "h:1", "--compare", "b=h:2"]);
    let plan = resolve_plan(&ext, &[0, 1]).unwrap();
    let argv = loadgen_argv(&ext, &plan, "h:1", Path::new("/tmp/o"));
    let lg = LoadgenCli::try_parse_from(&argv).unwrap().args;
    assert_eq!(lg.compare, vec!["h:1", "b=h:2"]);
    assert!(Cli::try_parse_from(["bench", "--flat-out", "--compare", "a=h:1"]).is_err());
    let alone = resolve_plan(&parse(&["--quick"]), &[0, 1]).unwrap();
    let argv = loadgen_argv(&parse(&["--quick"]), &alone, "h:1", Path::new("/tmp/o"));
    assert!(!argv.iter().any(|a| a == "--compare"));
}

#[test]
fn three_brokers_get_rf_3_min_insync_2_and_loadgen_creates_rf_3_topics() {
    let args = parse(&["--brokers", "3", "--quick"]);
    let plan = resolve_plan(&args, &[0, 1]).unwrap();
    assert_eq!(plan.brokers, 3);
    let argv = loadgen_argv(&args, &plan, "a:1,b:2,c:3", Path::new("/tmp/o"));
    let at = argv
        .iter()
        .position(|a| a == "--replication-factor")
        .unwrap();
    assert_eq!(argv[at + 1], "3");
    // One broker: loadgen's own default (RF 1), no flag.
    let one = resolve_plan(&parse(&["--quick"]), &[0, 1]).unwrap();
    assert_eq!(one.brokers, 1);
    let argv = loadgen_argv(&parse(&["--quick"]), &one, "h:1", Path::new("/tmp/o"));
    assert!(!argv.iter().any(|a| a == "--replication-factor"));
    assert!(Cli::try_parse_from(["shardlog bench", "--brokers", "0"]).is_err());
}

#[test]
fn cluster_settings_follow_the_broker_count() {
    use super::cluster::{cluster_overrides, min_insync_replicas, replication_factor};
    assert_eq!((replication_factor(2), min_insync_replicas(2)), (2, 1));
    assert_eq!((replication_factor(3), min_insync_replicas(3)), (3, 2));
    assert_eq!((replication_factor(5), min_insync_replicas(5)), (3, 2));
    let o = cluster_overrides(2, 3, "127.0.0.1:2181");
    for want in [
        "broker.id=2",
        "zookeeper.connect=127.0.0.1:2181",
        "default.replication.factor=3",
        "offsets.topic.replication.factor=3",
        "min.insync.replicas=2",
    ] {
        assert!(o.iter().any(|x| x == want), "{want} in {o:?}");
    }
}

#[test]
fn zookeeper_config_and_a_missing_jar_named_with_its_install_step() {
    use super::cluster::{zoo_cfg, zookeeper_classpath, ZOOKEEPER_JARS};
    let cfg = zoo_cfg(Path::new("/w/zk/data"), 4321);
    assert!(cfg.contains("clientPort=4321\n") && cfg.contains("dataDir=/w/zk/data\n"));
    assert!(cfg.contains("4lw.commands.whitelist=srvr"));
    let dir = tempfile::tempdir().unwrap();
    let err = zookeeper_classpath(dir.path()).unwrap_err();
    assert!(
        err.contains("apt-get install") && err.contains("zookeeper"),
        "{err}"
    );
    for j in ZOOKEEPER_JARS {
        std::fs::write(dir.path().join(j), b"").unwrap();
    }
    let cp = zookeeper_classpath(dir.path()).unwrap();
    assert_eq!(cp.split(':').count(), ZOOKEEPER_JARS.len());
}

#[test]
fn ssl_reaches_the_listener_and_the_load_generator() {
    let args = parse(&["--quick", "--security-protocol", "ssl"]);
    let plan = resolve_plan(&args, &[0, 1]).unwrap();
    assert_eq!(plan.security_protocol, "SSL");
    let argv = loadgen_argv(&args, &plan, "127.0.0.1:1234", Path::new("/tmp/o"));
    let lg = LoadgenCli::try_parse_from(&argv).unwrap().args;
    assert_eq!(lg.security_protocol, "SSL");
    // The CA of the brokers bench starts is added once it is made.
    assert_eq!(lg.ssl_ca_location, None);
    let addr: SocketAddr = "127.0.0.1:9093".parse().unwrap();
    let budget = disk::log_budget(1 << 40, 6);
    let v = broker_overrides("SSL", &addr, Path::new("/d"), &[0], &budget, &[]);
    assert_eq!(v[0], "listeners=SSL://127.0.0.1:9093");
    // An external broker: its CA is passed through.
    let ext = parse(&[
        "--bootstrap",
        "h:1",
        "--security-protocol",
        "SSL",
        "--ssl-ca-location",
        "/ca.pem",
    ]);
    let plan = resolve_plan(&ext, &[0, 1]).unwrap();
    let argv = loadgen_argv(&ext, &plan, "h:1", Path::new("/tmp/o"));
    let lg = LoadgenCli::try_parse_from(&argv).unwrap().args;
    assert_eq!(lg.ssl_ca_location, Some(PathBuf::from("/ca.pem")));
    // PLAINTEXT (the default) adds no flag.
    let plain = parse(&["--quick"]);
    let plan = resolve_plan(&plain, &[0, 1]).unwrap();
    let argv = loadgen_argv(&plain, &plan, "h:1", Path::new("/tmp/o"));
    assert!(!argv
        .iter()
        .any(|a| a.starts_with("--security") || a.starts_with("--ssl")));
}

#[test]
fn ssl_flags_that_cannot_work_are_refused() {
    let err = |v: &[&str]| resolve_plan(&parse(v), &[0, 1]).unwrap_err();
    assert!(
        err(&["--bootstrap", "h:1", "--security-protocol", "SSL"]).contains("--ssl-ca-location")
    );
    assert!(err(&["--bootstrap", "h:1", "--ssl-ca-location", "/ca.pem"])
        .contains("needs --security-protocol SSL"));
    assert!(err(&["--security-protocol", "SASL_SSL"]).contains("PLAINTEXT and SSL"));
    // The CA flag is for external brokers; bench makes its own.
    assert!(Cli::try_parse_from(["bench", "--ssl-ca-location", "/ca.pem"]).is_err());
}
