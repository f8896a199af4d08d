//! tests/py/history.py: a producer in the background recording what was
//! acknowledged, a drain of every partition, and the check that nothing
//! acknowledged was lost, duplicated, moved or reordered.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::System;
use crate::common::{run_py_script, venv_python_with};

/// A history producer running in the background.
pub struct HistoryProducer {
    child: Option<Child>,
    pub acked_file: PathBuf,
    stop_file: PathBuf,
}

impl HistoryProducer {
    /// `history.py produce` until [`HistoryProducer::finish`]; `opts` are
    /// its `--key=value` options (acks, idempotence, client, rate, ...).
    pub fn spawn(bootstrap: &str, topic: &str, partitions: i32, dir: &Path, opts: &[&str]) -> Self {
        let acked_file = dir.join(format!("acked-{topic}-{}.txt", unique()));
        let stop_file = dir.join(format!("stop-{topic}-{}", unique()));
        let python = venv_python_with(&["confluent_kafka", "kafka"]);
        let child = Command::new(python)
            .arg(history_script())
            .args(["produce", bootstrap, topic, &partitions.to_string()])
            .arg(&acked_file)
            .arg(format!("--stop-file={}", stop_file.display()))
            .args(opts)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn history.py produce");
        HistoryProducer {
            child: Some(child),
            acked_file,
            stop_file,
        }
    }

    /// Records acknowledged so far.
    pub fn acked_so_far(&self) -> usize {
        std::fs::read_to_string(&self.acked_file)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// Records acknowledged so far in partition `p`.
    pub fn acked_in(&self, p: i32) -> usize {
        let prefix = format!("{p} ");
        std::fs::read_to_string(&self.acked_file)
            .map(|t| t.lines().filter(|l| l.starts_with(&prefix)).count())
            .unwrap_or(0)
    }

    /// Wait until at least `n` more records are acknowledged than now;
    /// fails with the producer's output if it exits first.
    pub fn wait_acks(&mut self, secs: u64, n: usize, what: &str) {
        let base = self.acked_so_far();
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.acked_so_far() < base + n {
            let child = self.child.as_mut().expect("running");
            if let Some(status) = child.try_wait().expect("wait") {
                let mut out = String::new();
                let mut err = String::new();
                child
                    .stdout
                    .take()
                    .expect("stdout")
                    .read_to_string(&mut out)
                    .ok();
                child
                    .stderr
                    .take()
                    .expect("stderr")
                    .read_to_string(&mut err)
                    .ok();
                panic!("history producer exited ({status}) waiting for {what}:\n{out}\n{err}");
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {secs} s waiting for {what} ({} acked so far, {base} before)",
                self.acked_so_far()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stop producing, wait for the in-flight records' outcomes, and
    /// return the producer's report.
    pub fn finish(mut self, secs: u64) -> serde_json::Value {
        std::fs::write(&self.stop_file, b"").expect("stop file");
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + Duration::from_secs(secs);
        while child.try_wait().expect("wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("history producer did not finish within {secs} s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut out = String::new();
        let mut err = String::new();
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out)
            .ok();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .ok();
        let status = child.wait().expect("wait");
        assert!(
            status.success(),
            "history.py produce failed ({status}):\n{out}\n{err}"
        );
        let last = out.lines().last().unwrap_or_default();
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("history.py produce: not JSON ({e}):\n{out}\n{err}"))
    }
}

impl Drop for HistoryProducer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

fn history_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/history.py")
}

/// `history.py drain`: every record of every partition into a file.
pub fn drain(bootstrap: &str, topic: &str, partitions: i32, dir: &Path) -> PathBuf {
    let read_file = dir.join(format!("read-{topic}-{}.txt", unique()));
    run_py_script(
        &["confluent_kafka"],
        "history.py",
        &[
            "drain".into(),
            bootstrap.into(),
            topic.into(),
            partitions.to_string(),
            read_file.display().to_string(),
            "--timeout-s=120".into(),
        ],
    );
    read_file
}

/// `history.py check`: the report (fields documented in history.py).
pub fn check(acked_file: &Path, read_file: &Path) -> serde_json::Value {
    run_py_script(
        &[],
        "history.py",
        &[
            "check".into(),
            acked_file.display().to_string(),
            read_file.display().to_string(),
        ],
    )
}

/// The history check passed: nothing lost, duplicated, moved, reordered.
pub fn assert_history_ok(system: System, what: &str, report: &serde_json::Value) {
    assert!(
        report["ok"] == true,
        "{system:?} {what}: history check failed (lost {}, duplicates {}, moved {}, reordered {}):\n{report:#}",
        report["lost_count"],
        report["duplicate_count"],
        report["moved_count"],
        report["reordered_count"]
    );
}

/// [`drain`] that reports a failure instead of failing (a reader while
/// partitions come and go: a partition without a reachable leader is an
/// outcome to count, not a test failure). A fetch answered
/// OFFSET_OUT_OF_RANGE fails the drain (`--strict-offsets=1`) instead of
/// the client jumping to the partition's end and reading a part of it.
pub fn try_drain(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    dir: &Path,
    timeout_s: u64,
) -> Result<(PathBuf, serde_json::Value), String> {
    let read_file = dir.join(format!("read-{topic}-{}.txt", unique()));
    let out = Command::new(venv_python_with(&["confluent_kafka"]))
        .arg(history_script())
        .args(["drain", bootstrap, topic, &partitions.to_string()])
        .arg(&read_file)
        .arg(format!("--timeout-s={timeout_s}"))
        .arg("--strict-offsets=1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("run history.py drain: {e}"))?;
    if out.status.success() {
        // The drain's report: records read, the high watermarks it read to.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or_default();
        Ok((read_file, serde_json::from_str(last).unwrap_or_default()))
    } else {
        Err(format!(
            "history.py drain failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Everything but loss checked: no duplicates, nothing moved or reordered,
/// offsets growing and leader epochs never falling. For histories where
/// losing acknowledged records is the documented outcome (acks=1, the
/// leader's log truncated after a partition) and is reported instead.
pub fn assert_history_ok_but_loss(system: System, what: &str, report: &serde_json::Value) {
    let empty = |k: &str| report[k].as_array().is_some_and(Vec::is_empty);
    assert!(
        empty("duplicates")
            && empty("moved")
            && empty("reordered")
            && empty("offsets_not_growing")
            && empty("epochs_not_growing"),
        "{system:?} {what}: history check failed beyond loss (duplicates {}, moved {}, \
         reordered {}):\n{report:#}",
        report["duplicate_count"],
        report["moved_count"],
        report["reordered_count"]
    );
}
