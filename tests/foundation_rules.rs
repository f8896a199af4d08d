//! The code-shape rules of the style guide (`src/design/style.md`, the
//! "(checked)" ones) that a reader relies on to find things:
//!
//! - no `impl` block of a type outside the file that declares it (or the
//!   `foo/` folder of `foo.rs`): a type's methods are where the type is;
//! - no `use super::*` outside test code: every file lists what it uses;
//! - no file under `tests/` over 900 lines (`foundation_layout` checks `src/`);
//! - no comment under `src/` cites a tracker issue or the seeds: a reader
//!   of the code has neither;
//! - no hidden global: a `thread_local!` or a `static` holding a lock, an
//!   atomic or a cell carries a comment saying why it is a global;
//! - only `io::clock` reads time (the load generator, a client, aside);
//! - `src/shard/` keeps the shard core at its top level (at most 12 files);
//! - clippy's function-length threshold is 100 lines.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod source_tree;
use source_tree::rust_files;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 900;
const MAX_SHARD_TOP_LEVEL_FILES: usize = 12;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The tree scanned: this crate's `src/`, or `LAYOUT_SRC_DIR`.
fn src_dir() -> PathBuf {
    std::env::var_os("LAYOUT_SRC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("src"))
}

/// `src/…` (forward slashes) for a file of the scanned tree.
fn relative(path: &Path) -> String {
    let inner = path.strip_prefix(src_dir()).unwrap_or(path);
    format!("src/{}", inner.display())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read source")
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

// --- test code ------------------------------------------------------------

/// The lines of `source` outside test code: an item under `#[cfg(test)]`
/// (an inline `mod tests { … }`, a test-only function) is blanked, so line
/// numbers stay those of the file.
fn non_test_lines(source: &str) -> Vec<&str> {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = lines.clone();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start() != "#[cfg(test)]" {
            i += 1;
            continue;
        }
        let depth = indent(line);
        let mut j = i + 1;
        // Further attributes, then the item's first line.
        while j < lines.len() && lines[j].trim_start().starts_with("#[") {
            j += 1;
        }
        let opens = lines.get(j).is_some_and(|l| l.trim_end().ends_with('{'));
        if opens {
            // Up to the closing brace at the item's indentation.
            let mut k = j + 1;
            while k < lines.len()
                && !(indent(lines[k]) == depth && lines[k].trim_start().starts_with('}'))
            {
                k += 1;
            }
            j = k;
        }
        for slot in out.iter_mut().take(j.min(lines.len() - 1) + 1).skip(i) {
            *slot = "";
        }
        i = j + 1;
    }
    out
}

/// A `mod name;` declaration's attributes: under `#[cfg(test)]`, and its
/// `#[path = "…"]` if any.
fn declared_modules(source: &str) -> Vec<(String, bool, Option<String>)> {
    let mut found = Vec::new();
    let mut cfg_test = false;
    let mut path_attr = None;
    for line in source.lines() {
        let t = line.trim();
        if t == "#[cfg(test)]" {
            cfg_test = true;
            continue;
        }
        if let Some(p) = t
            .strip_prefix("#[path = \"")
            .and_then(|r| r.strip_suffix("\"]"))
        {
            path_attr = Some(p.to_string());
            continue;
        }
        if t.starts_with("#[") {
            continue;
        }
        let decl = t
            .strip_prefix("pub mod ")
            .or_else(|| t.strip_prefix("pub(crate) mod "))
            .or_else(|| t.strip_prefix("pub(super) mod "))
            .or_else(|| t.strip_prefix("mod "));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            found.push((name.trim().to_string(), cfg_test, path_attr.take()));
        }
        cfg_test = false;
        path_attr = None;
    }
    found
}

/// Files that are test code: declared under `#[cfg(test)]`, and every
/// module below one.
fn test_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut tests = BTreeSet::new();
    for file in files {
        let dir = file.parent().expect("a file has a folder");
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let own_dir = if matches!(stem, "mod" | "lib" | "main") {
            dir.to_path_buf()
        } else {
            dir.join(stem)
        };
        for (name, cfg_test, path) in declared_modules(&read(file)) {
            if !cfg_test {
                continue;
            }
            let child = match path {
                Some(p) => dir.join(p),
                None if own_dir.join(format!("{name}.rs")).exists() => {
                    own_dir.join(format!("{name}.rs"))
                }
                None => own_dir.join(&name).join("mod.rs"),
            };
            tests.insert(child.clone());
            // Its folder's files are its submodules.
            let sub_dir = if child.file_name().is_some_and(|n| n == "mod.rs") {
                child.parent().map(Path::to_path_buf)
            } else {
                Some(child.with_extension(""))
            };
            if let Some(sub_dir) = sub_dir.filter(|d| d.is_dir()) {
                let mut below = Vec::new();
                rust_files(&sub_dir, &mut below);
                tests.extend(below);
            }
        }
    }
    tests
}

struct Source {
    file: PathBuf,
    rel: String,
    /// Lines outside test code.
    lines: Vec<String>,
}

fn sources() -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    files.sort();
    assert!(files.len() > 50, "only {} source files found", files.len());
    let tests = test_files(&files);
    files
        .into_iter()
        .filter(|f| !tests.contains(f))
        .map(|file| {
            let text = read(&file);
            let lines = non_test_lines(&text)
                .into_iter()
                .map(str::to_string)
                .collect();
            Source {
                rel: relative(&file),
                file,
                lines,
            }
        })
        .collect()
}

// --- impl blocks next to their type ----------------------------------------

/// The type a top-level declaration line declares.
fn declared_type(line: &str) -> Option<String> {
    if line.starts_with(' ') {
        return None;
    }
    let mut rest = line;
    for vis in ["pub(crate) ", "pub(super) ", "pub "] {
        rest = rest.strip_prefix(vis).unwrap_or(rest);
    }
    for kind in ["struct ", "enum ", "trait ", "union ", "type "] {
        if let Some(after) = rest.strip_prefix(kind) {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            return (!name.is_empty()).then_some(name);
        }
    }
    None
}

/// The self type of a top-level `impl` line: `impl<T> Trait for a::B<T>`
/// → `B`.
fn impl_self_type(line: &str) -> Option<String> {
    let rest = line.strip_prefix("impl")?;
    if !(rest.starts_with(' ') || rest.starts_with('<')) {
        return None;
    }
    // Skip the impl's own generics.
    let mut rest = rest.trim_start();
    if rest.starts_with('<') {
        let mut depth = 0;
        let mut end = 0;
        for (i, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = rest[end..].trim_start();
    }
    let head = rest.split(['{']).next().unwrap_or(rest);
    let head = head.split(" where").next().unwrap_or(head);
    let self_ty = head.rsplit(" for ").next().unwrap_or(head).trim();
    let self_ty = self_ty
        .trim_start_matches('&')
        .trim_start_matches("mut ")
        .trim();
    let base = self_ty.split('<').next().unwrap_or(self_ty);
    let name = base.rsplit("::").next().unwrap_or(base).trim();
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| name.to_string())
}

/// May an `impl` in `impl_file` extend a type declared in `decl_file`?
fn impl_allowed(impl_file: &Path, decl_file: &Path) -> bool {
    if impl_file == decl_file {
        return true;
    }
    let folder = if decl_file.file_name().is_some_and(|n| n == "mod.rs") {
        decl_file.parent().map(Path::to_path_buf)
    } else {
        Some(decl_file.with_extension(""))
    };
    folder.is_some_and(|f| impl_file.starts_with(f))
}

fn impls_outside_their_type(sources: &[Source]) -> Vec<String> {
    let mut declared: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for s in sources {
        for line in &s.lines {
            if let Some(name) = declared_type(line) {
                declared.entry(name).or_default().push(s.file.clone());
            }
        }
    }
    let mut problems = Vec::new();
    for s in sources {
        for (i, line) in s.lines.iter().enumerate() {
            let Some(name) = impl_self_type(line) else {
                continue;
            };
            let Some(decls) = declared.get(&name) else {
                continue;
            };
            if !decls.iter().any(|d| impl_allowed(&s.file, d)) {
                let at: Vec<String> = decls.iter().map(|d| relative(d)).collect();
                problems.push(format!(
                    "{}:{}: impl of {name}, declared in {}",
                    s.rel,
                    i + 1,
                    at.join(", ")
                ));
            }
        }
    }
    problems
}

#[test]
fn the_impl_scan_reads_what_it_should() {
    assert_eq!(
        impl_self_type("impl ShardContext {"),
        Some("ShardContext".into())
    );
    assert_eq!(
        impl_self_type("impl<'a> Reader<'a> {"),
        Some("Reader".into())
    );
    assert_eq!(
        impl_self_type("impl std::fmt::Display for ErrorCode {"),
        Some("ErrorCode".into())
    );
    assert_eq!(
        impl_self_type("impl<T: Clone> From<T> for crate::x::Wrap<T> where T: Send {"),
        Some("Wrap".into())
    );
    assert_eq!(
        impl_self_type("impl Drop for &mut Guard {"),
        Some("Guard".into())
    );
    assert_eq!(impl_self_type("    impl Nested {"), None);
    assert_eq!(impl_self_type("implied = 3;"), None);
    assert_eq!(
        declared_type("pub(crate) struct ShardContext {"),
        Some("ShardContext".into())
    );
    assert_eq!(
        declared_type("enum Coordinator {"),
        Some("Coordinator".into())
    );
    assert_eq!(declared_type("    struct Local;"), None);
    let decl = Path::new("/s/shard/context.rs");
    assert!(impl_allowed(Path::new("/s/shard/context.rs"), decl));
    assert!(impl_allowed(Path::new("/s/shard/context/park.rs"), decl));
    assert!(!impl_allowed(Path::new("/s/shard/datapath.rs"), decl));
    assert!(impl_allowed(
        Path::new("/s/group/state.rs"),
        Path::new("/s/group/mod.rs")
    ));
    assert!(!impl_allowed(
        Path::new("/s/txn/state.rs"),
        Path::new("/s/group/mod.rs")
    ));
}

#[test]
fn test_code_is_told_apart_from_the_rest() {
    let source = "use a;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\nfn live() {}\n#[cfg(test)]\nfn helper() {\n    x();\n}\nfn after() {}\n";
    let lines = non_test_lines(source);
    assert_eq!(lines.len(), 11);
    assert_eq!(lines[0], "use a;");
    assert!(lines[1..5].iter().all(|l| l.is_empty()), "{lines:?}");
    assert_eq!(lines[5], "fn live() {}");
    assert!(lines[6..10].iter().all(|l| l.is_empty()), "{lines:?}");
    assert_eq!(lines[10], "fn after() {}");
    let decls =
        declared_modules("#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\npub mod live;\n");
    assert_eq!(
        decls,
        vec![
            ("tests".into(), true, Some("x_tests.rs".into())),
            ("live".into(), false, None)
        ]
    );
}

#[test]
fn no_impl_block_lives_outside_its_types_file_or_folder() {
    let problems = impls_outside_their_type(&sources());
    assert!(
        problems.is_empty(),
        "a type's impl blocks belong in the file that declares it or its folder; \
         split a big type into smaller types instead:\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_file_outside_test_code_imports_its_parent_wholesale() {
    let mut problems = Vec::new();
    for s in sources() {
        for (i, line) in s.lines.iter().enumerate() {
            if line.trim() == "use super::*;" {
                problems.push(format!("{}:{}", s.rel, i + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "`use super::*` outside test code (list what the file uses):\n{}",
        problems.join("\n")
    );
}

// --- sizes ------------------------------------------------------------------

#[test]
fn no_test_file_is_over_the_size_limit() {
    let mut files = Vec::new();
    rust_files(&root().join("tests"), &mut files);
    // Build output (the fuzz crate's `tests/fuzz/target/`) is not ours.
    files.retain(|f| !f.components().any(|c| c.as_os_str() == "target"));
    assert!(files.len() > 30, "only {} test files found", files.len());
    let too_long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = read(f).lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "test files over {MAX_FILE_LINES} lines:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn clippy_limits_functions_to_100_lines() {
    let clippy = read(&root().join("clippy.toml"));
    let threshold = clippy
        .lines()
        .filter_map(|l| l.split('#').next())
        .find_map(|l| l.trim().strip_prefix("too-many-lines-threshold"))
        .and_then(|rest| rest.trim().strip_prefix('='))
        .map(|v| v.trim().parse::<u64>().expect("a number"));
    assert_eq!(
        threshold,
        Some(100),
        "clippy.toml sets too-many-lines-threshold = 100"
    );
    let manifest = read(&root().join("Cargo.toml"));
    assert!(
        manifest.lines().any(|l| {
            let l = l.replace(' ', "");
            l == "too_many_lines=\"warn\"" || l == "too_many_lines=\"deny\""
        }),
        "Cargo.toml [lints.clippy] turns too_many_lines on"
    );
}

#[test]
fn the_shard_folder_keeps_only_the_shard_core_at_its_top() {
    let shard = src_dir().join("shard");
    let top: Vec<String> = std::fs::read_dir(&shard)
        .expect("read src/shard")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        top.len() <= MAX_SHARD_TOP_LEVEL_FILES,
        "src/shard/ has {} files at its top (at most {MAX_SHARD_TOP_LEVEL_FILES}; subsystem drivers go in \
         their folders): {top:?}",
        top.len()
    );
}

// --- comments ---------------------------------------------------------------

/// The comment of a line (after `//`), if any.
fn comment_of(line: &str) -> Option<&str> {
    let at = line.find("//")?;
    Some(&line[at + 2..])
}

/// Does `comment` cite a tracker issue or a seed ("issue 26", "issues #3",
/// "seed 000")?
fn cites_tracker(comment: &str) -> bool {
    let lower = comment.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == '(' || c == ',')
        .collect();
    words.windows(2).any(|w| {
        let word = w[0].trim_start_matches(['"', '\'', '`']);
        let number = w[1].trim_start_matches('#');
        matches!(word, "issue" | "issues" | "seed" | "seeds")
            && number.chars().next().is_some_and(|c| c.is_ascii_digit())
    })
}

#[test]
fn the_tracker_citation_scan_catches_what_it_should() {
    assert!(cites_tracker(" found by fuzzing (issue 26)."));
    assert!(cites_tracker(" see Issues #12 and 13"));
    assert!(cites_tracker(" (seed 000's LSO chapter)"));
    assert!(cites_tracker(" Seed 002: AR order decides"));
    assert!(!cites_tracker(" the issue is that 3 replicas are needed"));
    assert!(!cites_tracker(" a seed for the partitioner's hash"));
    assert!(!cites_tracker(" KIP-98 transactions"));
}

#[test]
fn no_comment_under_src_cites_a_tracker_issue_or_seed() {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut problems = Vec::new();
    for file in &files {
        for (i, line) in read(file).lines().enumerate() {
            if comment_of(line).is_some_and(cites_tracker) {
                problems.push(format!("{}:{}: {}", relative(file), i + 1, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "comments name Kafka classes, KIPs and config keys, never a tracker issue or seed \
         (a reader of the code has neither):\n{}",
        problems.join("\n")
    );
}

// --- globals and time ---------------------------------------------------------

/// Is `line` the start of a global holding mutable state?
fn declares_global(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("thread_local!") {
        return true;
    }
    let item = t
        .strip_prefix("pub(crate) ")
        .or_else(|| t.strip_prefix("pub "))
        .unwrap_or(t);
    let Some(rest) = item.strip_prefix("static ") else {
        return false;
    };
    rest.starts_with("mut ")
        || [
            "Mutex", "RwLock", "Atomic", "Cell", "OnceLock", "LazyLock", "OnceCell", "Lazy<",
        ]
        .iter()
        .any(|m| rest.contains(m))
}

/// The comment lines right above line `at` (attributes skipped).
fn comment_above(lines: &[String], at: usize) -> String {
    let mut text = Vec::new();
    let mut i = at;
    while i > 0 {
        i -= 1;
        let t = lines[i].trim_start();
        if t.starts_with("#[") {
            continue;
        }
        match t.strip_prefix("//") {
            Some(c) => text.push(c.to_string()),
            None => break,
        }
    }
    text.reverse();
    text.join(" ")
}

#[test]
fn the_global_scan_catches_what_it_should() {
    assert!(declares_global(
        "static FAILED_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());"
    ));
    assert!(declares_global(
        "pub static NEXT: std::sync::atomic::AtomicU64 = AtomicU64::new(1);"
    ));
    assert!(declares_global("thread_local! {"));
    assert!(declares_global("static mut COUNT: u64 = 0;"));
    assert!(!declares_global("static NAMES: &[&str] = &[\"a\"];"));
    assert!(!declares_global("let s: &'static str = \"x\";"));
    let lines: Vec<String> = [
        "/// Counters of the allocator:",
        "/// a global because the allocator has no owner.",
        "#[used]",
        "static X: AtomicU64",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert!(comment_above(&lines, 3).contains("a global because"));
}

#[test]
fn every_global_says_why_it_is_one() {
    let mut problems = Vec::new();
    for s in sources() {
        for (i, line) in s.lines.iter().enumerate() {
            if declares_global(line)
                && !comment_above(&s.lines, i)
                    .to_ascii_lowercase()
                    .contains("a global because")
            {
                problems.push(format!("{}:{}: {}", s.rel, i + 1, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "state has one owner (ARCHITECTURE §1): make these fields of their owner or values passed in, \
         or say \"a global because …\" in the comment above:\n{}",
        problems.join("\n")
    );
}

#[test]
fn only_the_clock_reads_time() {
    let mut problems = Vec::new();
    for s in sources() {
        if s.rel == "src/io/clock.rs" || s.rel.starts_with("src/loadgen/") {
            continue;
        }
        for (i, line) in s.lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("SystemTime::now") || code.contains("Instant::now") {
                problems.push(format!("{}:{}: {}", s.rel, i + 1, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "only io::clock reads time; take the Clock (or now_ms) instead:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_long_function_allowance_gives_its_reason() {
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root().join(dir), &mut files);
    }
    let mut problems = Vec::new();
    for file in &files {
        let text = read(file);
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            let is_attribute = t.starts_with("#[allow(")
                || t.starts_with("#![allow(")
                || t.starts_with("clippy::");
            if !is_attribute || !line.contains("clippy::too_many_lines") {
                continue;
            }
            // The attribute may span a few lines: `#[allow(\n clippy::…,\n reason = "…"\n)]`.
            let from = i.saturating_sub(2);
            let to = (i + 3).min(lines.len());
            if !lines[from..to].iter().any(|l| l.contains("reason =")) {
                problems.push(format!("{}:{}", file.display(), i + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "a function over 100 lines carries #[allow(clippy::too_many_lines, reason = \"…\")]:\n{}",
        problems.join("\n")
    );
}
