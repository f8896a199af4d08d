//! Code-shape rules CI enforces (STYLE.md): `[pure]` modules do no I/O and
//! read no clock; `cargo fmt --check` and
//! `cargo clippy --all-targets -- -D warnings` are clean.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a `[pure]` module may not name (outside comments).
const FORBIDDEN: &[&str] = &[
    "glommio",
    "std::fs",
    "std::net",
    "std::thread",
    "Instant",
    "SystemTime",
];
/// Members of `use std::{...}` groups that are forbidden as well.
const FORBIDDEN_STD_MEMBERS: &[&str] = &["fs", "net", "thread"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_pure(source: &str) -> bool {
    source
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("//!"))
        .any(|l| l.contains("[pure]"))
}

/// Code with line comments removed (doc text may mention anything).
fn code_lines(source: &str) -> impl Iterator<Item = (usize, &str)> {
    source.lines().enumerate().filter_map(|(i, line)| {
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        (!code.trim().is_empty()).then_some((i + 1, code))
    })
}

/// Violations in one `[pure]` file: (line, what).
fn violations(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_std_group = false;
    for (line_no, code) in code_lines(source) {
        for word in FORBIDDEN {
            let hit = code.match_indices(word).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = code[at + word.len()..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            });
            if hit {
                found.push((line_no, (*word).to_string()));
            }
        }
        if code.contains("use std::{") {
            in_std_group = true;
        }
        if in_std_group {
            for member in FORBIDDEN_STD_MEMBERS {
                let tokens = code.split(|c: char| !(c.is_alphanumeric() || c == '_'));
                if tokens.clone().any(|t| t == *member) {
                    found.push((line_no, format!("std::{member}")));
                }
            }
            if code.contains("};") {
                in_std_group = false;
            }
        }
    }
    found
}

#[test]
fn the_purity_check_catches_what_it_should() {
    let rows = [
        ("use glommio::net::TcpStream;", true),
        ("use std::fs::File;", true),
        ("use std::{collections::HashMap, net::TcpStream};", true),
        ("let t = std::time::Instant::now();", true),
        ("let t = SystemTime::now();", true),
        ("std::thread::sleep(d);", true),
        ("// glommio in a comment is fine", false),
        ("let instant_ms = now_ms; // InstantLike", false),
        ("use std::collections::HashMap;", false),
    ];
    for (code, bad) in rows {
        assert_eq!(!violations(code).is_empty(), bad, "{code}");
    }
}

#[test]
fn pure_modules_do_no_io_and_read_no_clock() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    let mut pure = 0;
    let mut problems = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        if !is_pure(&source) {
            continue;
        }
        pure += 1;
        for (line, what) in violations(&source) {
            problems.push(format!("{}:{line}: {what}", file.display()));
        }
    }
    // The protocol, config, metadata and placement modules are pure; if the
    // marker scan finds none, the scan itself is broken.
    assert!(pure >= 10, "only {pure} [pure] files found");
    assert!(
        problems.is_empty(),
        "[pure] modules doing I/O:\n{}",
        problems.join("\n")
    );
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

#[test]
fn cargo_fmt_check_is_clean() {
    let out = cargo()
        .args(["fmt", "--check"])
        .output()
        .expect("cargo fmt");
    assert!(
        out.status.success(),
        "cargo fmt --check failed (run `cargo fmt`):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cargo_clippy_all_targets_denies_warnings() {
    let out = cargo()
        .args(["clippy", "--all-targets", "--", "-D", "warnings"])
        .output()
        .expect("cargo clippy");
    assert!(
        out.status.success(),
        "cargo clippy --all-targets -- -D warnings failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
