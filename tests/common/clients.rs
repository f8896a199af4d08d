//! The external clients the tests drive: kcat, the test venv's Python
//! (confluent-kafka, kafka-python, aiokafka) running snippets or the
//! tests/py/*.py scripts, and the checks of their round-trip reports.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::broker::Broker;

/// Run `command` with `input` on its stdin (written from a thread, so a
/// child filling its stdout or stderr meanwhile cannot deadlock it); its
/// stdout and stderr are captured. `what` names it in a failed spawn.
pub fn output_with_stdin(command: &mut Command, input: &[u8], what: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    writer
        .join()
        .expect("stdin writer")
        .unwrap_or_else(|e| panic!("writing {what}'s stdin: {e}"));
    out
}

/// The test venv's python (tests/run.sh creates it).
pub fn venv_python() -> PathBuf {
    let venv = std::env::var_os("SHARDLOG_TEST_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/shardlog/test-venv"))
        })
        .expect("HOME or SHARDLOG_TEST_VENV");
    let python = venv.join("bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import confluent_kafka, kafka"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "Python venv with confluent-kafka and kafka-python missing at {}: run `bash tests/run.sh` \
         (it creates the venv: python3 -m venv + pip install confluent-kafka kafka-python)",
        venv.display()
    );
    python
}

/// kcat on PATH.
pub fn kcat() -> PathBuf {
    let ok = Command::new("kcat")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "kcat missing: run `bash tests/run.sh` (apt-get install -y --no-install-recommends kcat)"
    );
    PathBuf::from("kcat")
}

/// kcat with `base` (`-b` and `-X` settings): produce `lines` to partition
/// 0 of `topic` with acks=all, then read the partition from the beginning;
/// the lines read back. `what` names the case in a failure.
pub fn kcat_produce_and_read(
    base: &[String],
    topic: &str,
    lines: &[String],
    what: &str,
) -> Vec<String> {
    use std::io::Write;
    let mut p = Command::new(kcat())
        .args(base)
        .args([
            "-P",
            "-t",
            topic,
            "-p",
            "0",
            "-X",
            "topic.request.required.acks=-1",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kcat -P");
    p.stdin
        .take()
        .expect("kcat's stdin")
        .write_all(lines.join("\n").as_bytes())
        .expect("write to kcat");
    let st = p.wait().expect("kcat -P");
    assert!(st.success(), "kcat -P {what}: {st}");
    let out = Command::new(kcat())
        .args(base)
        .args([
            "-C",
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%s\n",
        ])
        .output()
        .expect("kcat -C");
    assert!(out.status.success(), "kcat -C {what}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Run a Python snippet in the venv with `BOOTSTRAP` set; return stdout.
pub fn run_python(broker: &Broker, code: &str) -> String {
    run_python_with_env(broker, code, &[])
}

/// [`run_python`] with more environment variables (`name`, `value`).
pub fn run_python_with_env(broker: &Broker, code: &str, env: &[(&str, &OsStr)]) -> String {
    let out = Command::new(venv_python())
        .args(["-c", code])
        .env("BOOTSTRAP", broker.bootstrap())
        .envs(env.iter().copied())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed ({}): {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

// ---------------------------------------------------------------------------
// Python client scripts (tests/py/*.py)
// ---------------------------------------------------------------------------

/// The venv python, after checking that `modules` import (each a Python
/// module name, e.g. "aiokafka"); fails naming the install step otherwise.
pub fn venv_python_with(modules: &[&str]) -> PathBuf {
    let python = venv_python();
    for module in modules {
        let ok = Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            ok,
            "Python module {module} missing from the test venv ({}): run `bash tests/run.sh` \
             (it pip-installs confluent-kafka, kafka-python and aiokafka when missing)",
            python.display()
        );
    }
    python
}

/// tests/py/cluster_admin.py with `args` (confluent-kafka's and
/// kafka-python's admin clients); the JSON object it prints last.
pub fn cluster_admin(args: &[&str]) -> serde_json::Value {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    run_py_script(&["confluent_kafka", "kafka"], "cluster_admin.py", &args)
}

/// Run `tests/py/<script>` with `args` in the venv (after checking that
/// `modules` import) and parse the JSON object it prints on its last
/// stdout line. Fails the test with the script's output if it exits non-zero.
pub fn run_py_script(modules: &[&str], script: &str, args: &[String]) -> serde_json::Value {
    let python = venv_python_with(modules);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    let out = Command::new(python)
        .arg(&path)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run python script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} {args:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{script}: last line is not JSON ({e}):\n{stdout}\n{stderr}"))
}

/// Arguments of the tests/py/*_roundtrip.py scripts.
pub struct RoundTrip<'a> {
    pub topic: &'a str,
    pub count: u64,
    pub partitions: i32,
    pub size: usize,
}

impl RoundTrip<'_> {
    /// Command line for `mode` = produce | consume | both.
    pub fn args(&self, broker: &Broker, mode: &str) -> Vec<String> {
        vec![
            broker.bootstrap(),
            self.topic.to_owned(),
            format!("--count={}", self.count),
            format!("--partitions={}", self.partitions),
            format!("--size={}", self.size),
            format!("--mode={mode}"),
        ]
    }
}

/// The "produce" part of a round-trip report: every message delivered.
pub fn assert_all_delivered(report: &serde_json::Value, count: u64) {
    let produce = &report["produce"];
    assert_eq!(produce["delivered"], count, "producer report: {produce}");
    assert_eq!(produce["delivery_errors"], 0, "producer report: {produce}");
}

/// The "consume" part of a round-trip report: every message read back
/// exactly once, offsets contiguous from 0 in every partition, each in its
/// partition (seq % partitions), produce order kept per partition, bytes
/// intact, no client errors.
pub fn assert_all_consumed(report: &serde_json::Value, count: u64, partitions: i32) {
    use serde_json::Value;
    let consume = &report["consume"];
    let summary = format!("consumer report: {consume}");
    assert_eq!(consume["consumed"], count, "{summary}");
    assert_eq!(consume["missing"], 0, "{summary}");
    assert_eq!(consume["duplicates"], 0, "{summary}");
    assert_eq!(consume["unknown"], 0, "{summary}");
    assert_eq!(consume["offset_gaps"], Value::Array(vec![]), "{summary}");
    assert_eq!(consume["bad_payloads"], Value::Array(vec![]), "{summary}");
    assert_eq!(consume["wrong_partition"], 0, "{summary}");
    assert_eq!(consume["out_of_order"], 0, "{summary}");
    assert_eq!(consume["errors"], Value::Array(vec![]), "{summary}");
    let n = partitions as u64;
    let per_partition: Vec<u64> = (0..n).map(|p| (count + n - 1 - p) / n).collect();
    assert_eq!(
        consume["per_partition"],
        serde_json::json!(per_partition),
        "{summary}"
    );
}

pub fn assert_complete_round_trip(report: &serde_json::Value, count: u64, partitions: i32) {
    assert_all_delivered(report, count);
    assert_all_consumed(report, count, partitions);
}
