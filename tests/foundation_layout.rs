//! Layout rules CI enforces (STYLE.md "Layers", "Size"): the broker does not
//! import the load generator (only `main.rs` wires the two together), and no
//! source file grows past the size at which it stops fitting one subsystem.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::path::{Path, PathBuf};

/// Lines above which a file under `src/` must be split (tests included:
/// move a long test module into a sibling file).
const MAX_FILE_LINES: usize = 900;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("read src")
        .map(Result::unwrap)
    {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src_files() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Lines of code (comments stripped) that name the load generator as a
/// module: `loadgen::…` or `use …loadgen`.
fn loadgen_references(source: &str) -> Vec<usize> {
    source
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let code = line.split("//").next().unwrap_or("");
            let names_module = code.match_indices("loadgen").any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = &code[at + "loadgen".len()..];
                let ident_before = before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident_before && (after.starts_with("::") || code.trim_start().starts_with("use "))
            });
            names_module.then_some(i + 1)
        })
        .collect()
}

#[test]
fn the_loadgen_reference_scan_catches_what_it_should() {
    assert_eq!(
        loadgen_references("use crate::loadgen::histogram::H;"),
        vec![1]
    );
    assert_eq!(loadgen_references("let h = crate::loadgen::x();"), vec![1]);
    assert_eq!(loadgen_references("use super::loadgen;"), vec![1]);
    assert!(loadgen_references("// see loadgen::histogram").is_empty());
    assert!(loadgen_references("let my_loadgen = 1;").is_empty());
    assert!(loadgen_references("\"shardlog loadgen --help\"").is_empty());
}

#[test]
fn only_main_and_the_load_generator_import_the_load_generator() {
    let mut problems = Vec::new();
    for file in src_files() {
        let rel = relative(&file);
        if rel == "src/main.rs" || rel == "src/lib.rs" || rel.starts_with("src/loadgen/") {
            continue;
        }
        let source = std::fs::read_to_string(&file).expect("read source");
        for line in loadgen_references(&source) {
            problems.push(format!("{rel}:{line}"));
        }
    }
    assert!(
        problems.is_empty(),
        "the broker imports the load generator (move what both use to a lower module):\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_source_file_is_over_the_size_limit() {
    let files = src_files();
    assert!(files.len() > 50, "only {} source files found", files.len());
    let too_long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f)
                .expect("read source")
                .lines()
                .count();
            (lines > MAX_FILE_LINES).then(|| format!("{}: {lines} lines", relative(f)))
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "files over {MAX_FILE_LINES} lines (split them along a seam, or move their tests out):\n{}",
        too_long.join("\n")
    );
}
