//! `shardlog bench --quick`: starts its own broker child process, sweeps it
//! with the load generator and writes the report folder (CSV rows, the
//! curves' JSON and SVG). A broker that fails to start or to serve a
//! produce fails the test with bench's message, which includes the
//! broker's output tail.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("bench")
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("spawning shardlog bench")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The quick sweep: acks=1,all x linger.ms=0,5 x one batch.size.
const QUICK_SETTINGS: usize = 4;
/// `bench --quick`'s fractions of each setting's max rate.
const QUICK_FRACTIONS: usize = 3;

/// Rows of results.csv, each a map from column name to cell.
fn csv_rows(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    let mut lines = csv.lines();
    let header: Vec<String> = lines
        .next()
        .expect("CSV header")
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "row {l:?}");
            header
                .iter()
                .cloned()
                .zip(cells.iter().map(|c| c.to_string()))
                .collect()
        })
        .collect()
}

/// An element of a parsed SVG document.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attrs: std::collections::HashMap<String, String>,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn attr(&self, k: &str) -> &str {
        self.attrs.get(k).map(String::as_str).unwrap_or("")
    }
    /// Every element below (and including) this one, depth first.
    fn all(&self) -> Vec<&Element> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.all());
        }
        out
    }
    fn all_text(&self) -> String {
        let mut t = self.text.clone();
        for c in &self.children {
            t.push_str(&c.all_text());
        }
        t
    }
}

/// A small XML parser, enough for the hand-written SVG: elements,
/// double-quoted attributes, text; fails on unbalanced tags.
fn parse_xml(doc: &str) -> Element {
    let mut stack = vec![Element::default()];
    let mut rest = doc;
    while let Some(lt) = rest.find('<') {
        stack.last_mut().unwrap().text.push_str(&rest[..lt]);
        let gt = lt + rest[lt..].find('>').expect("unterminated tag");
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let done = stack.pop().expect("close without open");
            assert_eq!(done.name, name.trim(), "tags balance");
            stack.last_mut().expect("a parent").children.push(done);
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let (name, mut attrs_text) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let mut el = Element {
            name: name.to_string(),
            ..Element::default()
        };
        while let Some(eq) = attrs_text.find("=\"") {
            let key = attrs_text[..eq].trim().to_string();
            let after = &attrs_text[eq + 2..];
            let end = after.find('"').expect("closing quote");
            el.attrs.insert(key, after[..end].to_string());
            attrs_text = &after[end + 1..];
        }
        if self_closing {
            stack.last_mut().unwrap().children.push(el);
        } else {
            stack.push(el);
        }
    }
    assert_eq!(stack.len(), 1, "every element closed");
    let mut root = stack.pop().unwrap();
    assert_eq!(root.children.len(), 1, "one root element");
    root.children.pop().unwrap()
}

/// The SVG has one curve per setting, both axis labels and a legend entry
/// per setting.
fn check_curve_svg(svg: &str, settings: &[String]) {
    let root = parse_xml(svg);
    assert_eq!(root.name, "svg");
    let all = root.all();
    let curves: Vec<&str> = all
        .iter()
        .filter(|e| e.name == "polyline" && e.attr("class") == "curve")
        .map(|e| e.attr("data-setting"))
        .collect();
    assert_eq!(
        curves.len(),
        settings.len(),
        "one curve per setting: {curves:?}"
    );
    for s in settings {
        assert!(curves.contains(&s.as_str()), "curve of {s} in {curves:?}");
    }
    for c in all.iter().filter(|e| e.name == "polyline") {
        let n = c.attr("points").split_whitespace().count();
        assert!(
            n >= QUICK_FRACTIONS,
            "{} has {n} points",
            c.attr("data-setting")
        );
    }
    for axis in ["x", "y"] {
        let label = all
            .iter()
            .find(|e| e.attr("class") == "axis-label" && e.attr("data-axis") == axis)
            .unwrap_or_else(|| panic!("{axis} axis label"));
        assert!(
            !label.all_text().trim().is_empty(),
            "{axis} axis label text"
        );
    }
    let legend = all
        .iter()
        .find(|e| e.name == "g" && e.attr("class") == "legend")
        .expect("a legend");
    let entries: Vec<String> = legend
        .all()
        .iter()
        .filter(|e| e.attr("class") == "legend-entry")
        .map(|e| e.all_text())
        .collect();
    assert_eq!(entries.len(), settings.len(), "{entries:?}");
    for s in settings {
        assert!(
            entries.iter().any(|e| e.contains(s.as_str())),
            "legend names {s}"
        );
    }
}

/// results.json has a curve per setting: a max rate and at least three
/// fixed-rate points with corrected percentiles. Returns the settings.
fn check_curves_json(out: &Path) -> Vec<String> {
    let settings = check_curves(out, QUICK_SETTINGS);
    for want in ["acks=1", "acks=all", "linger.ms=0", "linger.ms=5"] {
        assert!(
            settings.iter().any(|l| l.contains(want)),
            "{want} in {settings:?}"
        );
    }
    settings
}

/// results.json has `n` curves, each with a max rate and >= 3 fixed-rate
/// points whose latencies are corrected (from the intended send time).
fn check_curves(out: &Path, n: usize) -> Vec<String> {
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    let curves = v["curves"].as_array().expect("curves");
    assert_eq!(curves.len(), n, "one curve per setting");
    let mut settings: Vec<String> = Vec::new();
    for c in curves {
        let setting = c["setting"].as_str().unwrap_or("?").to_string();
        assert!(
            c["max_rate"].as_f64().unwrap_or(0.0) > 0.0,
            "{setting}: max rate"
        );
        let points = c["points"].as_array().expect("fixed-rate points");
        assert!(
            points.len() >= 3,
            "{setting}: {} fixed-rate points",
            points.len()
        );
        for p in points {
            assert!(p["target_rate"].as_u64().unwrap_or(0) > 0, "{setting}: {p}");
            assert!(
                p["achieved_msgs_per_sec"].as_f64().unwrap_or(0.0) > 0.0,
                "{setting}: {p}"
            );
            let l = &p["latency"];
            assert!(l["count"].as_u64().unwrap_or(0) > 0, "{setting}: {p}");
            let (p50, p99, p999) = (
                l["p50_us"].as_f64().unwrap_or(0.0),
                l["p99_us"].as_f64().unwrap_or(0.0),
                l["p999_us"].as_f64().unwrap_or(0.0),
            );
            assert!(0.0 < p50 && p50 <= p99 && p99 <= p999, "{setting}: {l}");
        }
        settings.push(setting);
    }
    // Every fixed-rate run's corrected latency is in the flat list too.
    let runs = v["points"].as_array().expect("points");
    let fixed = runs.iter().filter(|r| r["target_rate"].is_u64()).count();
    assert_eq!(fixed, n * QUICK_FRACTIONS);
    for r in runs.iter().filter(|r| r["target_rate"].is_u64()) {
        assert!(
            r["ack_latency_intended"]["count"].as_u64().unwrap_or(0) > 0,
            "{r}"
        );
    }
    settings
}

/// The Produce time parts a run's broker side carries.
const PARTS: [&str; 5] = [
    "requestqueue",
    "local",
    "remote",
    "responsequeue",
    "responsesend",
];

/// Every fixed-rate point of results.json carries its broker side, scraped
/// from all `brokers` metrics listeners bench started: produce requests
/// timed, each part's p50/p99 no more than the total's (a part of a
/// request never exceeds its total), the brokers' CPU; report.html shows
/// it with no n/a. Returns the mean remote time (ms) per point, by setting.
fn check_broker_side(out: &Path, brokers: u64) -> std::collections::BTreeMap<String, Vec<f64>> {
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    let mut remote = std::collections::BTreeMap::new();
    for c in v["curves"].as_array().expect("curves") {
        let setting = c["setting"].as_str().unwrap_or("?").to_string();
        for p in c["points"].as_array().expect("points") {
            let b = &p["broker"];
            assert_eq!(b["brokers"].as_u64(), Some(brokers), "{setting}: {b}");
            assert_eq!(b["scraped"].as_u64(), Some(brokers), "{setting}: {b}");
            assert!(
                b["produce_requests"].as_u64().unwrap_or(0) > 0,
                "{setting}: {b}"
            );
            assert!(
                b["cpu_cores"].as_f64().unwrap_or(0.0) > 0.0,
                "{setting}: {b}"
            );
            assert!(
                b["purgatory_produce_mean"].as_f64().unwrap_or(-1.0) >= 0.0,
                "{b}"
            );
            let split = &b["produce_ms"];
            let total = &split["total"];
            let (t50, t99) = (
                total["p50_ms"].as_f64().unwrap(),
                total["p99_ms"].as_f64().unwrap(),
            );
            assert!(0.0 < t50 && t50 <= t99, "{setting}: {split}");
            for part in PARTS {
                let x = &split[part];
                let (p50, p99) = (x["p50_ms"].as_f64().unwrap(), x["p99_ms"].as_f64().unwrap());
                assert!(
                    (0.0..=t50 + 1e-9).contains(&p50) && (0.0..=t99 + 1e-9).contains(&p99),
                    "{setting}: {part} {x} vs total {total}"
                );
            }
            remote
                .entry(setting.clone())
                .or_insert_with(Vec::new)
                .push(split["remote"]["mean_ms"].as_f64().unwrap());
        }
    }
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("<table class=\"broker-side\">"));
    assert!(
        !html.contains("data-part=\"total\">n/a"),
        "every run has its split"
    );
    remote
}

#[test]
fn quick_bench_writes_a_curve_per_setting_with_corrected_percentiles() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    let o = bench(&["--quick", "--out", out.to_str().unwrap()]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert!(
        o.status.success(),
        "shardlog bench --quick failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.status
    );
    assert!(
        stdout.contains(&format!("results: {}", out.display())),
        "bench names its results folder:\n{stdout}"
    );
    assert_eq!(
        stdout.matches("results: ").count(),
        1,
        "named once:\n{stdout}"
    );
    assert!(
        stderr.contains("ETA "),
        "progress lines carry the sweep's ETA:\n{stderr}"
    );

    let rows = csv_rows(&out);
    assert_eq!(
        rows.len(),
        QUICK_SETTINGS * (1 + QUICK_FRACTIONS),
        "one CSV row per run"
    );
    for r in &rows {
        let rate: f64 = r["msgs_per_sec"].parse().expect("msgs_per_sec number");
        assert!(rate > 0.0, "CSV run {} has zero throughput", r["label"]);
    }
    let settings = check_curves_json(&out);
    check_broker_side(&out, 1);

    let svg = std::fs::read_to_string(out.join("latency.svg")).expect("latency.svg");
    check_curve_svg(&svg, &settings);
    for acks in ["1", "all"] {
        let svg = std::fs::read_to_string(out.join(format!("latency-acks-{acks}.svg")))
            .expect("a plot per acks level");
        let mine: Vec<String> = settings
            .iter()
            .filter(|s| s.split(' ').any(|t| t == format!("acks={acks}")))
            .map(|s| s.to_string())
            .collect();
        let root = parse_xml(&svg);
        let n = root
            .all()
            .iter()
            .filter(|e| e.attr("class") == "curve")
            .count();
        assert_eq!(n, mine.len(), "acks={acks}: {mine:?}");
    }
    let table = std::fs::read_to_string(out.join("curves.md")).expect("curves.md");
    let rows = table.lines().filter(|l| l.starts_with('|')).count();
    assert_eq!(rows, 2 + QUICK_SETTINGS, "{table}");
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("<table") && html.contains("<svg"));

    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).expect("bench.json"))
            .expect("bench.json parses");
    let exit = record["brokers"][0]["exit"].as_str().unwrap_or("");
    assert_eq!(exit, "stopped by SIGTERM, exit status: 0");
    let work = record["work_dir"].as_str().expect("work_dir recorded");
    assert!(
        !Path::new(work).exists(),
        "the broker's temporary directory {work} is removed without --keep"
    );
}

#[test]
fn svg_parser_reads_elements_attributes_and_text() {
    let root = parse_xml(
        r#"<svg a="1"><g class="legend"><line x="2"/><text>hi <b>there</b></text></g></svg>"#,
    );
    assert_eq!((root.name.as_str(), root.attr("a")), ("svg", "1"));
    assert_eq!(root.all().len(), 5);
    assert_eq!(root.children[0].all_text(), "hi there");
    assert!(std::panic::catch_unwind(|| parse_xml("<svg><g></svg>")).is_err());
}

#[test]
fn broker_that_fails_to_start_is_reported_with_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    // shardlog.shards must be at least 1: the broker rejects its config.
    let o = bench(&[
        "--quick",
        "--out",
        out.to_str().unwrap(),
        "--broker-override",
        "shardlog.shards=0",
    ]);
    let stderr = text(&o.stderr);
    assert!(!o.status.success(), "bench must fail:\n{stderr}");
    assert!(stderr.contains("did not start"), "{stderr}");
    // The broker's own message (config::ConfigError), not bench's command line.
    assert!(
        stderr.contains("invalid value for shardlog.shards"),
        "the broker's own error is shown:\n{stderr}"
    );
}

/// A stand-in broker: prints the readiness line naming `addr`, and records
/// the SIGTERM it gets in `marker`.
fn fake_broker(dir: &Path, addr: &str, marker: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("fake-broker.sh");
    let body = format!(
        "#!/bin/sh\ntrap 'echo sigterm > {}; exit 0' TERM\n\
         echo 'shardlog: listening on {addr} with 1 shards' >&2\n\
         while :; do sleep 0.05; done\n",
        marker.display()
    );
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn bench_stopped_by_sigterm_stops_its_broker_and_removes_its_work_dir() {
    let tmp = tempfile::tempdir().unwrap();
    // Accepts connections and never answers: loadgen waits on its first
    // request, so bench is mid-run when the signal comes.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let marker = tmp.path().join("broker-got-sigterm");
    let script = fake_broker(tmp.path(), &addr, &marker);
    let out = tmp.path().join("report");
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["bench", "--quick", "--out", out.to_str().unwrap()])
        .args(["--broker-bin", script.to_str().unwrap()])
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning shardlog bench");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let work = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("bench ended before the broker was ready: {seen:#?}"))
            .unwrap();
        if let Some((_, dir)) = line.split_once("; work dir ") {
            break dir.to_string();
        }
        seen.push(line);
    };
    assert!(
        Path::new(&work).exists(),
        "work dir {work} exists while running"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "bench exits as killed by SIGTERM: {rest:#?}"
    );
    assert!(marker.exists(), "the broker got SIGTERM: {rest:#?}");
    assert!(!Path::new(&work).exists(), "work dir {work} removed");
    drop(silent);
}

/// (max rate, [p50 at each fraction]) of the curve whose setting is `acks`.
fn curve_figures(out: &Path, acks: &str) -> (f64, Vec<f64>) {
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    let curve = v["curves"]
        .as_array()
        .expect("curves")
        .iter()
        .find(|c| {
            c["setting"]
                .as_str()
                .is_some_and(|s| s.split(' ').any(|t| t == acks))
        })
        .unwrap_or_else(|| panic!("a curve for {acks}: {v}"));
    let p50s = curve["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["latency"]["p50_us"].as_f64().unwrap_or(0.0))
        .collect();
    (curve["max_rate"].as_f64().unwrap_or(0.0), p50s)
}

/// Replica folders (`<topic>-<partition>`) of `topic` under `dir` that
/// hold record bytes.
fn replicas_with_data(dir: &Path, topic: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&format!("{topic}-"))
                .is_some_and(|p| p.parse::<u32>().is_ok())
        })
        .filter(|e| {
            std::fs::read_dir(e.path()).is_ok_and(|files| {
                files.filter_map(Result::ok).any(|f| {
                    f.path().extension().is_some_and(|x| x == "log")
                        && f.metadata().is_ok_and(|m| m.len() > 0)
                })
            })
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Removes a folder when dropped.
struct RemoveOnDrop(Option<std::path::PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

#[test]
fn quick_bench_on_three_brokers_replicates_and_draws_acks_1_and_all_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    let o = bench(&[
        "--brokers",
        "3",
        "--quick",
        "--keep",
        "--sweep",
        "acks=1,all",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    let record: serde_json::Value = std::fs::read_to_string(out.join("bench.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    // --keep: the test removes the brokers' folders itself, pass or fail.
    let work = record["work_dir"].as_str().map(std::path::PathBuf::from);
    let _cleanup = RemoveOnDrop(work.clone());
    assert!(
        o.status.success(),
        "shardlog bench --brokers 3 --quick failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.status
    );
    let settings = check_curves(&out, 2);
    // acks=all's extra time is remote: parked for the followers; acks=1
    // never parks a produce request.
    let remote = check_broker_side(&out, 3);
    assert!(remote["acks=1"].iter().all(|r| *r == 0.0), "{remote:?}");
    assert!(remote["acks=all"].iter().all(|r| *r > 0.0), "{remote:?}");
    assert!(settings.iter().any(|s| s == "acks=1"), "{settings:?}");
    assert!(settings.iter().any(|s| s == "acks=all"), "{settings:?}");
    let svg = std::fs::read_to_string(out.join("latency.svg")).expect("latency.svg");
    check_curve_svg(&svg, &settings);

    // Three ZooKeeper-mode brokers, each stopped cleanly, and ZooKeeper.
    assert!(
        record["zookeeper"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.1:")),
        "{record}"
    );
    let brokers = record["brokers"].as_array().expect("brokers");
    assert_eq!(brokers.len(), 3, "{record}");
    for (i, b) in brokers.iter().enumerate() {
        assert_eq!(b["id"].as_u64(), Some(i as u64 + 1), "{b}");
        assert_eq!(
            b["exit"].as_str(),
            Some("stopped by SIGTERM, exit status: 0"),
            "{b}"
        );
        let cmd: Vec<&str> = b["command"]
            .as_array()
            .expect("command")
            .iter()
            .filter_map(|x| x.as_str())
            .collect();
        assert!(cmd.contains(&"min.insync.replicas=2"), "{cmd:?}");
        assert!(out.join(format!("broker-{}.log", i + 1)).exists());
    }
    // RF=3: every broker holds all 6 partitions of the bench topic, with
    // records in each — the followers fetched them.
    let work = work.expect("work_dir recorded");
    for id in 1..=3 {
        let data = work.join(format!("broker-{id}-data"));
        let mut held = replicas_with_data(&data, "bench");
        held.sort();
        assert_eq!(held.len(), 6, "broker {id} replicas with data: {held:?}");
    }

    // The two curves are two measurements, not one drawn twice.
    let (one, all) = (
        curve_figures(&out, "acks=1"),
        curve_figures(&out, "acks=all"),
    );
    assert!(one.0 > 0.0 && all.0 > 0.0, "{one:?} {all:?}");
    assert_ne!(one, all, "acks=1 and acks=all curves are identical");
}

#[test]
fn bench_flamegraph_records_one_svg_per_run_naming_the_brokers_functions() {
    for (tool, install) in [
        ("perf", "apt-get install -y linux-perf"),
        ("inferno-flamegraph", "cargo install inferno --locked"),
    ] {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
        assert!(
            found,
            "{tool} missing: {install} (bash tests/run.sh installs it)"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    let o = bench(&[
        "--quick",
        "--flamegraph",
        "--sweep",
        "acks=1",
        "--fractions",
        "50",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "bench --flamegraph failed:\n{stderr}");
    let mut svgs: Vec<String> = std::fs::read_dir(out.join("flamegraphs"))
        .expect("flamegraphs/ in the report folder")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    svgs.sort();
    // The max-rate run and the 50% run; perf.data removed after rendering.
    assert_eq!(svgs.len(), 2, "{svgs:?}");
    assert!(
        svgs[0].starts_with("01-acks=1") && svgs[0].ends_with("max.svg"),
        "{svgs:?}"
    );
    assert!(
        svgs[1].starts_with("02-acks=1") && svgs[1].contains("50"),
        "{svgs:?}"
    );
    for name in &svgs {
        let svg = std::fs::read_to_string(out.join("flamegraphs").join(name)).unwrap();
        assert!(svg.contains("<svg"), "{name} is not an SVG");
        assert!(
            svg.contains("shardlog::"),
            "{name} names no shardlog function"
        );
    }
}
