//! The `shardlog` command line: config errors stop the start with a
//! message naming the key and value; unknown keys only warn.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::process::Command;

fn shardlog(args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let log_dirs = format!("log.dirs={}", dir.path().display());
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(args)
        .args(["--override", &log_dirs])
        .output()
        .expect("run shardlog");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn invalid_values_stop_the_start_naming_key_and_value() {
    // (override, text the error must contain)
    let rows = [
        ("num.partitions=abc", "num.partitions"),
        ("auto.create.topics.enable=maybe", "maybe"),
        ("listeners=SSL://127.0.0.1:0", "listeners"),
    ];
    for (override_, needle) in rows {
        let (code, stderr) = shardlog(&["broker", "--override", override_]);
        assert_eq!(code, Some(1), "{override_}: {stderr}");
        assert!(stderr.contains(needle), "{override_}: {stderr}");
        assert!(
            !stderr.contains("listening on"),
            "{override_}: started anyway"
        );
    }
}

#[test]
fn a_missing_config_file_is_an_error_naming_it() {
    let (code, stderr) = shardlog(&["broker", "--config", "/nonexistent/server.properties"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("/nonexistent/server.properties"),
        "{stderr}"
    );
}

#[test]
fn help_lists_the_broker_subcommand() {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("broker"));
}
