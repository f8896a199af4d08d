//! Runs `tuning/check.sh` on this host (read-only) and checks that every
//! setting the broker cares about is reported with a current and a
//! recommended value, in the table and in `--json`. The `--apply` path is
//! exercised only on a fake sysfs/procfs tree (SHARDLOG_TUNING_SYSROOT) so the
//! test never changes the host.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Every setting the check must report, whatever the host offers.
const EXPECTED_SETTINGS: &[&str] = &[
    "cpu.governor",
    "cpu.smt",
    "cpu.idle",
    "irq.nic",
    "irq.disk",
    "thp.enabled",
    "thp.defrag",
    "vm.swappiness",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "net.core.somaxconn",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.netdev_max_backlog",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_no_metrics_save",
    "fs.aio-max-nr",
    "disk.scheduler",
    "disk.discard",
    "disk.nr_requests",
    "disk.read_ahead_kb",
    "disk.rotational",
    "disk.io_poll",
    "rlimit.memlock",
    "rlimit.nofile",
    "clocksource",
    "kernel.io_uring_disabled",
];

const STATUSES: &[&str] = &["OK", "CHANGE", "UNKNOWN"];

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning/check.sh")
}

fn run_check(args: &[&str], sysroot: Option<&Path>, stdin: &str) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(script()).args(args);
    match sysroot {
        Some(root) => cmd.env("SHARDLOG_TUNING_SYSROOT", root),
        None => cmd.env_remove("SHARDLOG_TUNING_SYSROOT"),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash must be available to run tuning/check.sh");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("write answers to check.sh");
    let out = child.wait_with_output().expect("check.sh runs");
    assert!(
        out.status.success(),
        "check.sh {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Table rows: setting -> [current, recommended, status, reason].
fn parse_table(stdout: &str) -> HashMap<String, Vec<String>> {
    let mut rows = HashMap::new();
    for line in stdout.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<String> = line.split(" | ").map(|c| c.trim().to_string()).collect();
        if cols.len() != 5 || cols[0] == "setting" {
            continue;
        }
        let previous = rows.insert(cols[0].clone(), cols[1..].to_vec());
        assert!(previous.is_none(), "setting {} printed twice", cols[0]);
    }
    rows
}

#[test]
fn table_reports_every_setting_with_current_and_recommended_values() {
    let log_dir = tempfile::tempdir().expect("temp dir");
    let out = run_check(
        &[
            "--shard-cpus",
            "0",
            "--log-dir",
            log_dir.path().to_str().expect("utf-8 path"),
        ],
        None,
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows = parse_table(&stdout);
    for name in EXPECTED_SETTINGS {
        let row = rows
            .get(*name)
            .unwrap_or_else(|| panic!("setting {name} missing from:\n{stdout}"));
        assert!(!row[0].is_empty(), "{name}: empty current value");
        assert!(!row[1].is_empty(), "{name}: empty recommended value");
        assert!(
            STATUSES.contains(&row[2].as_str()),
            "{name}: bad status {}",
            row[2]
        );
        assert!(!row[3].is_empty(), "{name}: no reason given");
    }
    assert_eq!(
        rows.len(),
        EXPECTED_SETTINGS.len(),
        "unexpected extra rows:\n{stdout}"
    );
}

#[test]
fn json_output_parses_and_lists_every_setting() {
    let out = run_check(&["--json", "--shard-cpus", "0"], None, "");
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("check.sh --json must print valid JSON");
    let settings = doc["settings"].as_array().expect("settings array");
    for name in EXPECTED_SETTINGS {
        let entry = settings
            .iter()
            .find(|s| s["name"] == *name)
            .unwrap_or_else(|| panic!("setting {name} missing from JSON"));
        for field in ["current", "recommended", "reason"] {
            let value = entry[field].as_str().unwrap_or_default();
            assert!(!value.is_empty(), "{name}: empty {field}");
        }
        let status = entry["status"].as_str().unwrap_or_default();
        assert!(STATUSES.contains(&status), "{name}: bad status {status}");
        assert!(
            entry["applicable"].is_boolean(),
            "{name}: applicable not a bool"
        );
    }
    assert_eq!(doc["shard_cpus"], "0");
}

fn write_fake(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write fake sysfs file");
}

const HALT_POLL: &str = "sys/module/haltpoll/parameters/guest_halt_poll_ns";

/// A fake tree with three settings that need changing (a VM guest whose
/// halt polling is off).
fn fake_sysroot() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("temp dir");
    write_fake(root.path(), "proc/sys/vm/swappiness", "60\n");
    write_fake(
        root.path(),
        "sys/kernel/mm/transparent_hugepage/defrag",
        "[always] defer defer+madvise madvise never\n",
    );
    write_fake(
        root.path(),
        "sys/devices/system/cpu/cpuidle/current_driver",
        "haltpoll\n",
    );
    write_fake(root.path(), HALT_POLL, "0\n");
    root
}

/// A throwaway child whose rlimits `--apply` may change (never this test
/// process's); killed on drop, so keep it until the undo file has run.
struct Sleeper(std::process::Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `--apply --yes` on the fake tree at `root`, undo commands to `undo`.
fn apply_yes(root: &Path, extra: &[&str], undo: &Path) -> (Output, Sleeper) {
    let sleeper = Sleeper(
        Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("spawn sleep"),
    );
    let pid = sleeper.0.id().to_string();
    let mut args = extra.to_vec();
    args.extend([
        "--apply",
        "--yes",
        "--pid",
        &pid,
        "--undo-file",
        undo.to_str().expect("utf-8"),
    ]);
    (run_check(&args, Some(root), ""), sleeper)
}

fn read_trimmed(path: &Path) -> String {
    fs::read_to_string(path)
        .expect("read fake file")
        .trim()
        .to_string()
}

#[test]
fn apply_changes_nothing_unless_each_change_is_confirmed() {
    let root = fake_sysroot();
    let undo = root.path().join("undo.sh");
    let undo_arg = undo.to_str().expect("utf-8 path");
    // One explicit "n", then end of input: both must count as no.
    let out = run_check(
        &["--apply", "--undo-file", undo_arg],
        Some(root.path()),
        "n\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("nothing applied"), "{stdout}");
    assert_eq!(
        read_trimmed(&root.path().join("proc/sys/vm/swappiness")),
        "60"
    );
    assert!(
        !undo.exists(),
        "no undo file may be written when nothing changed"
    );
}

#[test]
fn apply_yes_writes_recommended_values_and_undo_file_restores_them() {
    let root = fake_sysroot();
    let undo = root.path().join("undo.sh");
    let swappiness = root.path().join("proc/sys/vm/swappiness");
    let defrag = root
        .path()
        .join("sys/kernel/mm/transparent_hugepage/defrag");
    let (out, _sleeper) = apply_yes(root.path(), &[], &undo);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(read_trimmed(&swappiness), "1", "{stdout}");
    assert_eq!(read_trimmed(&defrag), "madvise", "{stdout}");
    assert_eq!(
        read_trimmed(&root.path().join(HALT_POLL)),
        "200000",
        "{stdout}"
    );
    assert!(
        stdout.contains("undo: echo '60'"),
        "undo command not printed:\n{stdout}"
    );

    let status = Command::new("bash")
        .arg(&undo)
        .status()
        .expect("run undo file");
    assert!(status.success(), "undo script failed");
    assert_eq!(read_trimmed(&swappiness), "60");
    assert_eq!(read_trimmed(&defrag), "always");
    assert_eq!(read_trimmed(&root.path().join(HALT_POLL)), "0");
}

/// On bare metal, deep C-states are disabled on the shard cpus only.
#[test]
fn apply_disables_deep_idle_states_on_shard_cpus_only() {
    let root = tempfile::tempdir().expect("temp dir");
    let r = root.path();
    write_fake(r, "sys/devices/system/cpu/online", "0-1\n");
    write_fake(
        r,
        "sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle\n",
    );
    for cpu in 0..2 {
        for (state, name, latency) in [(0, "POLL", 0), (1, "C1", 2), (2, "C6", 133)] {
            let dir = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{state}");
            write_fake(r, &format!("{dir}/name"), &format!("{name}\n"));
            write_fake(r, &format!("{dir}/latency"), &format!("{latency}\n"));
            write_fake(r, &format!("{dir}/disable"), "0\n");
        }
    }
    let disable = |cpu: u32, state: u32| {
        read_trimmed(&r.join(format!(
            "sys/devices/system/cpu/cpu{cpu}/cpuidle/state{state}/disable"
        )))
    };
    let before = run_check(&["--shard-cpus", "0"], Some(r), "");
    let table = parse_table(&String::from_utf8_lossy(&before.stdout));
    let row = table.get("cpu.idle").expect("cpu.idle row");
    assert_eq!(row[2], "CHANGE", "{row:?}");
    assert!(row[0].contains("cpu0:C6(133us)"), "{row:?}");
    assert!(!row[0].contains("cpu1"), "{row:?}");

    let (out, _sleeper) = apply_yes(r, &["--shard-cpus", "0"], &r.join("undo.sh"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(disable(0, 2), "1", "{stdout}");
    assert_eq!(disable(0, 1), "0", "C1 exits in 2 us and stays: {stdout}");
    assert_eq!(disable(1, 2), "0", "cpu1 is not a shard cpu: {stdout}");
    let after = run_check(&["--shard-cpus", "0"], Some(r), "");
    let table = parse_table(&String::from_utf8_lossy(&after.stdout));
    assert_eq!(table.get("cpu.idle").expect("cpu.idle row")[2], "OK");
}

#[test]
fn yes_without_apply_is_rejected() {
    let status = Command::new("bash")
        .arg(script())
        .arg("--yes")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run check.sh");
    assert_eq!(status.code(), Some(2));
}
