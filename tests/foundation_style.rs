//! Code-shape rules CI enforces (STYLE.md): `[pure]` modules do no I/O,
//! import no `io` and read no clock; `cargo fmt --check` and
//! `cargo clippy --all-targets -- -D warnings` are clean.
//!
//! "No `io`" is two rules, as strict as the `[pure]` files already are:
//! - the crate's own `io` module (`crate::io`, `super::io`, `shardlog::io`,
//!   `io` inside a `use crate::{...}` group) is refused, save the files
//!   listed with their reason in [`KNOWN_IO_IMPORTS`];
//! - from `std::io` (or any other `io::` path) only the in-memory members in
//!   [`STD_IO_ALLOWED`] may be named — what `protocol::record_walk` uses to
//!   inflate compressed records from byte slices. The process's handles
//!   (`stdin`, `stdout`, `stderr`) and every other member are refused.
//!
//! The word `io` inside other identifiers (`io_error`, `num.io.threads`)
//! is not an import and is ignored.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod source_tree;
use source_tree::rust_files;

use std::path::Path;
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
/// What a `[pure]` module may name of `std::io`: its in-memory traits, the
/// reader adapters over slices, and the error types. Add a member only if it
/// touches no OS resource.
const STD_IO_ALLOWED: &[&str] = &[
    "self",
    "Error",
    "ErrorKind",
    "Result",
    "Read",
    // The trait only: a pure module's tests write LZ4 frames into a Vec
    // (`protocol::lz4_frame`); a file to write to would need `std::fs`.
    "Write",
    "BufRead",
    "BufReader",
    "copy",
    "sink",
];
/// Path prefixes under which `io` is this crate's own `io` module.
const CRATE_ROOTS: &[&str] = &["crate::", "super::", "self::", "shardlog::"];
/// `[pure]` files that still import the crate's `io` module, each with the
/// reason; every entry must still match (a fixed file is removed here).
const KNOWN_IO_IMPORTS: &[(&str, &str)] = &[];

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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte offsets where `word` occurs in `code` as a whole identifier.
fn whole_word(code: &str, word: &str) -> Vec<usize> {
    code.match_indices(word)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = code[..at].chars().next_back();
            let after = code[at + word.len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
        .collect()
}

/// Identifiers in `text` up to its first `}` (the end of a `{...}` group),
/// and whether that `}` was found.
fn group_members(text: &str) -> (Vec<&str>, bool) {
    let (inside, closed) = match text.find('}') {
        Some(end) => (&text[..end], true),
        None => (text, false),
    };
    let members = inside
        .split(|c: char| !is_ident(c))
        .filter(|t| !t.is_empty())
        .collect();
    (members, closed)
}

/// Where `io::` paths may continue past the end of a line.
#[derive(Default)]
struct IoScan {
    /// Inside a `use crate::{` (or `super::`/`self::`) group.
    in_crate_group: bool,
    /// Inside an `io::{` group whose `}` is on a later line.
    in_io_group: bool,
}

impl IoScan {
    /// `io` violations on one line of code (see the file header).
    fn line(&mut self, code: &str, found: &mut Vec<String>) {
        let mut rest = code;
        if self.in_io_group {
            let (members, closed) = group_members(code);
            off_the_std_io_list(&members, found);
            self.in_io_group = !closed;
            match code.find('}') {
                Some(end) => rest = &code[end + 1..],
                None => return,
            }
        }
        if ["use crate::{", "use super::{", "use self::{"]
            .iter()
            .any(|g| rest.contains(g))
        {
            self.in_crate_group = true;
        }
        for at in whole_word(rest, "io") {
            let before = rest[..at].trim_end();
            if let Some(root) = CRATE_ROOTS.iter().find(|r| before.ends_with(*r)) {
                found.push(format!("{root}io"));
                continue;
            }
            if self.in_crate_group && !before.ends_with("::") {
                // A member of `use crate::{...}`: `io` or `io::...`.
                found.push("crate::io".to_string());
                continue;
            }
            let Some(path) = rest[at + 2..].trim_start().strip_prefix("::") else {
                continue; // `io` alone: `use std::io;`, a variable, a word
            };
            let path = path.trim_start();
            if let Some(group) = path.strip_prefix('{') {
                let (members, closed) = group_members(group);
                off_the_std_io_list(&members, found);
                self.in_io_group = !closed;
            } else {
                let member: String = path.chars().take_while(|&c| is_ident(c)).collect();
                off_the_std_io_list(&[member.as_str()], found);
            }
        }
        if rest.contains("};") {
            self.in_crate_group = false;
        }
    }
}

fn off_the_std_io_list(members: &[&str], found: &mut Vec<String>) {
    for member in members {
        if !STD_IO_ALLOWED.contains(member) {
            found.push(format!("io::{member}"));
        }
    }
}

/// Violations in one `[pure]` file: (line, what).
fn violations(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_std_group = false;
    let mut io_scan = IoScan::default();
    for (line_no, code) in code_lines(source) {
        let mut io_found = Vec::new();
        io_scan.line(code, &mut io_found);
        found.extend(io_found.into_iter().map(|what| (line_no, what)));
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
        // The crate's own `io` module, however it is reached.
        ("use crate::io::zerocopy::OutPart;", true),
        ("use super::io::clock::Clock;", true),
        ("use super::super::io;", true),
        ("use shardlog::io::dma;", true),
        ("use crate::{io::clock::Clock, types::Offset};", true),
        ("use crate::{\n    io,\n    types::Offset,\n};", true),
        // std::io: the in-memory members only.
        ("let out = std::io::stdout();", true),
        ("use std::io::{self, stdin};", true),
        ("use std::io::{\n    Read,\n    stderr,\n};", true),
        ("io::stdout().flush()?;", true),
        ("use std::io::{self, BufRead, BufReader, Read};", false),
        (
            "use std::io::{\n    self,\n    Read,\n};\nlet x = 1;",
            false,
        ),
        ("return Err(io::Error::other(TooLarge));", false),
        ("io::copy(&mut record, &mut io::sink())?;", false),
        // `io` inside other words is not an import.
        ("fn io_error(e: io::Error) -> BatchError {", false),
        ("\"num.io.threads\",", false),
        ("let n = self.io_count + radio::LEN;", false),
        ("use crate::protocol::varint::put_unsigned_varint;", false),
    ];
    for (code, bad) in rows {
        assert_eq!(
            !violations(code).is_empty(),
            bad,
            "{code}: {:?}",
            violations(code)
        );
    }
}

#[test]
fn pure_modules_do_no_io_import_no_io_and_read_no_clock() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    let mut pure = 0;
    let mut problems = Vec::new();
    let mut known_seen = vec![false; KNOWN_IO_IMPORTS.len()];
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        if !is_pure(&source) {
            continue;
        }
        pure += 1;
        for (line, what) in violations(&source) {
            let known = KNOWN_IO_IMPORTS
                .iter()
                .position(|(path, w)| file.ends_with(path) && what == *w);
            match known {
                Some(k) => known_seen[k] = true,
                None => problems.push(format!("{}:{line}: {what}", file.display())),
            }
        }
    }
    for (seen, (path, what)) in known_seen.iter().zip(KNOWN_IO_IMPORTS) {
        assert!(
            seen,
            "{path} no longer imports {what}: remove it from KNOWN_IO_IMPORTS"
        );
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
