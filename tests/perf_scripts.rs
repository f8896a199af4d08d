//! Runs the perf scripts for real: a flamegraph of a busy helper process,
//! an A/B comparison of two fixed commands, and the quick reference figures.
//! Missing tools fail the test with the install step (they never skip).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const BUSY_ENV: &str = "SHARDLOG_PERF_BUSY_SECS";

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// PATH plus ~/.cargo/bin, where `cargo install inferno` puts its tools.
fn tool_path() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    match std::env::var("HOME") {
        Ok(home) => format!("{path}:{home}/.cargo/bin"),
        Err(_) => path,
    }
}

fn require_tool(tool: &str, install: &str) {
    let found = Command::new("bash")
        .args(["-c", &format!("command -v {tool}")])
        .env("PATH", tool_path())
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(found, "{tool} is not installed: run `{install}` first");
}

fn run_script(script: &str, args: &[&str]) -> Output {
    let out = Command::new("bash")
        .arg(repo_file(script))
        .args(args)
        .env("PATH", tool_path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The function the flamegraph must show: it is where the helper spends its time.
#[inline(never)]
fn flamegraph_marker_spin(rounds: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..rounds {
        acc = std::hint::black_box(acc.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    acc
}

/// Not a test: the busy process profiled by `flamegraph_svg_names_the_busy_function`
/// (this test binary re-executed with SHARDLOG_PERF_BUSY_SECS set).
#[test]
#[ignore = "helper process for the flamegraph test"]
fn busy_helper_process() {
    let Ok(secs) = std::env::var(BUSY_ENV) else {
        return;
    };
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_secs(secs.parse().unwrap_or(30));
    while std::time::Instant::now() < deadline {
        std::hint::black_box(flamegraph_marker_spin(1_000_000));
    }
}

struct KillOnDrop(Child);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn flamegraph_svg_names_the_busy_function() {
    require_tool("perf", "apt-get install -y linux-perf");
    require_tool("inferno-flamegraph", "cargo install inferno --locked");
    require_tool("inferno-collapse-perf", "cargo install inferno --locked");
    let exe = std::env::current_exe().expect("test executable path");
    let busy = Command::new(exe)
        .args(["busy_helper_process", "--exact", "--ignored", "--nocapture"])
        .env(BUSY_ENV, "60")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn busy helper");
    let busy = KillOnDrop(busy);
    let dir = tempfile::tempdir().expect("temp dir");
    let svg = dir.path().join("busy.svg");
    let pid = busy.0.id().to_string();
    let out = run_script(
        "perf/flamegraph.sh",
        &[
            "--pid",
            &pid,
            "--duration",
            "3",
            "--no-install",
            "--out",
            svg.to_str().expect("utf-8"),
        ],
    );
    drop(busy);
    let text = std::fs::read_to_string(&svg).unwrap_or_else(|e| {
        panic!(
            "no SVG written ({e}); script said: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(text.contains("<svg"), "output is not an SVG");
    assert!(
        text.contains("flamegraph_marker_spin"),
        "SVG does not name the busy function; script said: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The check: the script starts the real broker, drives it with a
/// real client (kcat) and the SVG names shardlog's own functions.
#[test]
fn flamegraph_of_the_broker_under_load_names_shardlog_functions() {
    require_tool("perf", "apt-get install -y linux-perf");
    require_tool("inferno-flamegraph", "cargo install inferno --locked");
    require_tool("kcat", "apt-get install -y kcat");
    let dir = tempfile::tempdir().expect("temp dir");
    let svg = dir.path().join("broker.svg");
    // Repeated until the script stops it (it kills the workload's process
    // group after sampling): one kcat run can finish inside the warm-up on
    // a fast host, and then perf samples an idle broker.
    let workload =
        "while :; do yes 'shardlog flamegraph payload 0123456789abcdef0123456789abcdef' \
        | head -n 3000000 | kcat -P -b \"$SHARDLOG_BOOTSTRAP\" -t flamegraph -X linger.ms=5; done";
    let out = run_script(
        "perf/flamegraph.sh",
        &[
            "--start",
            "--bin",
            env!("CARGO_BIN_EXE_shardlog"),
            "--workload",
            workload,
            "--warmup",
            "2",
            "--duration",
            "3",
            "--no-install",
            // A debug build: resolving its inlined frames takes minutes,
            // and it inlines little (75% of samples named shardlog
            // functions without them, perf/RESULTS.md).
            "--fast-symbols",
            "--keep",
            "--out",
            svg.to_str().expect("utf-8"),
        ],
    );
    let text = std::fs::read_to_string(&svg).unwrap_or_else(|e| {
        panic!(
            "no SVG written ({e}); script said: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(text.contains("<svg"), "output is not an SVG");
    assert!(
        text.contains("shardlog::"),
        "SVG names no shardlog function; script said: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The default recording (DWARF stacks) reaches the broker's own code on
    // most samples, not `[unknown]` below the executor (issue 27).
    let collapsed = std::fs::read_to_string(dir.path().join("broker.collapsed.txt"))
        .expect("--keep leaves the collapsed stacks");
    let (ours, all) = samples_naming(&collapsed, "shardlog::");
    assert!(all > 0, "no samples: {collapsed}");
    assert!(
        ours * 2 > all,
        "{ours} of {all} sampled stacks name a shardlog function; the heaviest stacks:\n{}",
        heaviest(&collapsed, 10)
    );
}

/// (samples whose stack has a frame containing `marker`, all samples) of
/// inferno's collapsed stacks (`frame;frame;... count` per line).
fn samples_naming(collapsed: &str, marker: &str) -> (u64, u64) {
    collapsed
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(stack, n)| Some((stack, n.parse::<u64>().ok()?)))
        .fold((0, 0), |(ours, all), (stack, n)| {
            (ours + if stack.contains(marker) { n } else { 0 }, all + n)
        })
}

fn heaviest(collapsed: &str, n: usize) -> String {
    let mut lines: Vec<(u64, &str)> = collapsed
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(stack, c)| Some((c.parse().ok()?, stack)))
        .collect();
    lines.sort_by_key(|l| std::cmp::Reverse(l.0));
    lines
        .iter()
        .take(n)
        .map(|(c, s)| format!("{c} {s}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn collapsed_stack_counter_weighs_each_stack_by_its_samples() {
    let c = "main;shardlog::a;x 3\nmain;glommio::park 5\nbad line\nshardlog::b 2\n";
    assert_eq!(samples_naming(c, "shardlog::"), (5, 10));
    assert!(heaviest(c, 1).starts_with("5 main;glommio::park"));
}

#[test]
fn compare_prints_each_round_and_the_median_ratio() {
    let out = run_script(
        "perf/compare.sh",
        &[
            "--a",
            "echo 'rate 100'",
            "--b",
            "echo 'rate 150'",
            "--rounds",
            "3",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rounds = stdout.lines().filter(|l| l.starts_with("round ")).count();
    assert_eq!(rounds, 3, "{stdout}");
    assert!(
        stdout.contains("round 2  A 100  B 150  B/A 1.500"),
        "{stdout}"
    );
    assert!(stdout.contains("median ratio B/A 1.500"), "{stdout}");
}

#[test]
fn compare_reads_a_csv_column_written_to_compare_csv() {
    let out = run_script(
        "perf/compare.sh",
        &[
            "--a",
            "printf 'acks,msgs_per_sec\\n1,2000\\n' > \"$COMPARE_CSV\"",
            "--b",
            "printf 'acks,msgs_per_sec\\n1,1000\\n' > \"$COMPARE_CSV\"",
            "--metric",
            "msgs_per_sec",
            "--rounds",
            "1",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("median ratio B/A 0.500"), "{stdout}");
}

#[test]
fn compare_fails_when_the_output_has_no_figure() {
    let status = Command::new("bash")
        .arg(repo_file("perf/compare.sh"))
        .args([
            "--a",
            "echo hello",
            "--b",
            "echo 'rate 1'",
            "--rounds",
            "1",
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run compare.sh");
    assert!(!status.success());
}

/// Value of the `name value unit` line whose name starts with `prefix`.
fn reference_value(stdout: &str, prefix: &str, unit: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}* line in:\n{stdout}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "not `name value unit`: {line}");
    assert_eq!(fields[2], unit, "{line}");
    fields[1]
        .parse()
        .unwrap_or_else(|_| panic!("value not a number: {line}"))
}

#[test]
fn reference_quick_prints_loopback_seqwrite_fdatasync_and_cold_page_cache_figures() {
    require_tool("iperf3", "apt-get install -y iperf3");
    require_tool("fio", "apt-get install -y fio");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = run_script(
        "perf/reference.sh",
        &["--quick", "--dir", dir.path().to_str().expect("utf-8")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(reference_value(&stdout, "iperf3_loopback_1stream", "Gbit/s") > 0.0);
    assert!(reference_value(&stdout, "fio_seqwrite_1MiB_direct_", "MB/s") > 0.0);
    assert!(reference_value(&stdout, "fio_write_4KiB_fdatasync ", "writes/s") > 0.0);
    assert!(reference_value(&stdout, "fio_write_4KiB_fdatasync_p99", "us") > 0.0);
    assert!(reference_value(&stdout, "pagecache_cold_read_1MiB", "MB/s") > 0.0);
    // dd's read goes through the kernel: its system time cannot be zero for 256 MiB.
    assert!(reference_value(&stdout, "pagecache_cold_read_system", "s/GB") > 0.0);
    let leftovers = std::fs::read_dir(dir.path()).expect("read dir").count();
    assert_eq!(leftovers, 0, "reference.sh must remove its fio files");
}
