//! Runs `tuning/check.sh` on this host (read-only) and checks that every
//! setting the broker cares about is reported with a current and a
//! recommended value, in the table and in `--json`. The `--apply` path is
//! exercised only on a fake sysfs/procfs tree (SHARDLOG_TUNING_SYSROOT) so the
//! test never changes the host.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Every setting the check must report, whatever the host offers.
const EXPECTED_SETTINGS: &[&str] = &[
    "cpu.governor",
    "cpu.smt",
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

/// A fake tree with two settings that need changing.
fn fake_sysroot() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("temp dir");
    let write = |rel: &str, text: &str| {
        let path = root.path().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write fake sysfs file");
    };
    write("proc/sys/vm/swappiness", "60\n");
    write(
        "sys/kernel/mm/transparent_hugepage/defrag",
        "[always] defer defer+madvise madvise never\n",
    );
    root
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
    // rlimit changes go to a throwaway child, never to this test process.
    let mut sleeper = Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    let pid = sleeper.id().to_string();
    let out = run_check(
        &[
            "--apply",
            "--yes",
            "--pid",
            &pid,
            "--undo-file",
            undo.to_str().expect("utf-8"),
        ],
        Some(root.path()),
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(read_trimmed(&swappiness), "1", "{stdout}");
    assert_eq!(read_trimmed(&defrag), "madvise", "{stdout}");
    assert!(
        stdout.contains("undo: echo '60'"),
        "undo command not printed:\n{stdout}"
    );

    let status = Command::new("bash")
        .arg(&undo)
        .status()
        .expect("run undo file");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(status.success(), "undo script failed");
    assert_eq!(read_trimmed(&swappiness), "60");
    assert_eq!(read_trimmed(&defrag), "always");
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
