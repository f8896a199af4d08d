//! Layout rules CI enforces (STYLE.md "Layers", "Size"): the broker does not
//! import the load generator (only `main.rs` wires the two together), and no
//! source file grows past the size at which it stops fitting one subsystem.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod source_tree;
use source_tree::rust_files;

use std::path::{Path, PathBuf};

/// Lines above which a file under `src/` must be split (tests included:
/// move a long test module into a sibling file).
const MAX_FILE_LINES: usize = 900;

/// The tree scanned: this crate's `src/`, or `LAYOUT_SRC_DIR` (to see what
/// the rules say of another checkout, e.g. an older commit).
fn src_dir() -> PathBuf {
    std::env::var_os("LAYOUT_SRC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

fn src_files() -> Vec<PathBuf> {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
}

/// `src/…` for a file of the scanned tree.
fn relative(path: &Path) -> String {
    let src = src_dir();
    let inner = path.strip_prefix(&src).unwrap_or(path);
    format!("src/{}", inner.display())
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

// --- import loops ---------------------------------------------------------
//
// A file imports another when it names an item defined there: through a
// `use` path (braces expanded) or a path written inline (`crate::a::b`,
// `super::x`). A name re-exported by a `pub use` resolves to the file that
// defines it, so a module's face (`mod.rs` re-exporting its children) ties
// nobody to itself. Declaring `mod x;` is not an import. Test code (inline
// `#[cfg(test)]` modules, `tests.rs` files) is left out: it may reach into
// its parent freely.

use std::collections::{BTreeMap, BTreeSet};

/// Module path (`["storage", "partition_log"]`) of a file under `src/`.
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The file's code before its inline test module, comments stripped.
fn non_test_code(source: &str) -> String {
    let mut out = String::new();
    for line in source.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand_use(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.to_owned()];
    };
    let prefix = tree[..open].trim();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .flat_map(|i| expand_use(&format!("{prefix}{i}")))
        .collect()
}

struct SourceFile {
    module: Vec<String>,
    /// Items defined here (fn, struct, enum, trait, type, const, static, macro).
    defines: BTreeSet<String>,
    /// `pub use` re-exports: name → absolute path it stands for.
    reexports: BTreeMap<String, Vec<String>>,
    /// Absolute paths this file names (imports and inline paths).
    names: Vec<Vec<String>>,
}

/// `path` (as written in `module`) made absolute from the crate root; a
/// first segment that names a child module is relative (`use read::X` in
/// a module declaring `mod read`), written as `self::`.
fn absolute(module: &[String], path: &str) -> Option<Vec<String>> {
    let path = path.split(" as ").next().unwrap_or(path);
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = match segs.first().copied() {
        Some("crate") | Some("shardlog") => {
            segs.remove(0);
            Vec::new()
        }
        Some("super") => {
            let mut m = module.to_vec();
            while segs.first() == Some(&"super") {
                segs.remove(0);
                m.pop();
            }
            m
        }
        Some("self") => {
            segs.remove(0);
            module.to_vec()
        }
        // std, a crate, a name in scope, or a child module: `child_paths`.
        _ => return None,
    };
    base.extend(segs.into_iter().map(str::to_owned));
    Some(base)
}

/// Items a file defines (fn, struct, enum, trait, type, const, static, macro).
fn defined_items(code: &str) -> BTreeSet<String> {
    let item = |kw: &str, line: &str| -> Option<String> {
        let at = line.find(kw)?;
        let before = line[..at].trim();
        let ok = before.is_empty()
            || before.starts_with("pub")
            || before.ends_with("async")
            || before.ends_with("unsafe")
            || before.ends_with("const");
        let rest = &line[at + kw.len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        (ok && !name.is_empty()).then_some(name)
    };
    let mut defines = BTreeSet::new();
    for line in code.lines() {
        let line = line.trim_start();
        for kw in [
            "fn ",
            "struct ",
            "enum ",
            "trait ",
            "type ",
            "const ",
            "static ",
            "macro_rules! ",
        ] {
            if let Some(n) = item(kw, line) {
                defines.insert(n);
            }
        }
    }
    defines
}

/// Paths written through a name a `use` brought in (`handlers::produce::x`).
fn paths_through_aliases(code: &str, aliases: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let mut names = Vec::new();
    for (alias, abs) in aliases {
        let pattern = format!("{alias}::");
        for (at, _) in code.match_indices(&pattern) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let tail: String = code[at + pattern.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut path = abs.clone();
            path.extend(
                tail.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            names.push(path);
        }
    }
    names
}

fn parse(rel: &str, source: &str) -> SourceFile {
    let module = module_of(rel);
    let code = non_test_code(source);
    let defines = defined_items(&code);
    let mut reexports = BTreeMap::new();
    let mut names = Vec::new();
    // Names a `use` brought in (a module or an item), for paths through
    // them: `use super::handlers;` … `handlers::produce::handle`.
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // `use` statements, possibly spanning lines.
    let mut rest = code.as_str();
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().next_back();
        let stmt_end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        let stmt = &rest[at + 4..stmt_end];
        let is_item = before.is_none_or(|c| c.is_whitespace());
        if is_item {
            let line_start = rest[..at].rfind('\n').map_or(0, |i| i + 1);
            let public = rest[line_start..at].trim_start().starts_with("pub");
            for path in expand_use(stmt) {
                let Some(abs) = absolute(&module, &path).or_else(|| {
                    // Maybe a child module: resolved against the files later.
                    let first = path.split("::").next()?;
                    let child = source.contains(&format!("mod {first};"));
                    child.then(|| absolute(&module, &format!("self::{path}")))?
                }) else {
                    continue;
                };
                // `a::b::self` imports the module `a::b` as `b`.
                let (path, abs) = match path.strip_suffix("::self") {
                    Some(module) => (module.to_owned(), abs[..abs.len() - 1].to_vec()),
                    None => (path.clone(), abs),
                };
                let alias = path.rsplit(" as ").next().unwrap_or(&path);
                let name = alias.rsplit("::").next().unwrap_or(alias).to_owned();
                if public {
                    reexports.insert(name, abs);
                } else {
                    if name != "*" {
                        aliases.insert(name, abs.clone());
                    }
                    names.push(abs);
                }
            }
        }
        rest = &rest[stmt_end.min(rest.len())..];
        if rest.is_empty() {
            break;
        }
        rest = &rest[1.min(rest.len())..];
    }
    // Inline paths.
    for start in ["crate::", "super::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if let Some(abs) = absolute(&module, path.trim_end_matches(':')) {
                names.push(abs);
            }
        }
    }
    names.extend(paths_through_aliases(&code, &aliases));
    SourceFile {
        module,
        defines,
        reexports,
        names,
    }
}

/// The file defining what `path` names, following re-exports.
fn resolve(
    files: &BTreeMap<Vec<String>, SourceFile>,
    path: &[String],
    depth: u8,
) -> Option<Vec<String>> {
    if depth > 8 {
        return None;
    }
    // The longest prefix that is a module.
    let (module, rest) = (0..=path.len())
        .rev()
        .find(|&n| files.contains_key(&path[..n]))
        .map(|n| (path[..n].to_vec(), &path[n..]))?;
    let file = &files[&module];
    let Some(name) = rest.first() else {
        return Some(module); // the module itself
    };
    if name == "*" || file.defines.contains(name) {
        return Some(module);
    }
    if let Some(target) = file.reexports.get(name) {
        let mut full = target.clone();
        full.extend(rest[1..].iter().cloned());
        return resolve(files, &full, depth + 1);
    }
    // An enum variant, a method, or a name we cannot see: the module.
    Some(module)
}

fn import_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = BTreeMap::new();
    for path in src_files() {
        let rel = relative(&path);
        if rel.ends_with("/tests.rs") || rel == "src/main.rs" {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("read source");
        let file = parse(&rel, &source);
        files.insert(file.module.clone(), file);
    }
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let edges: BTreeSet<Vec<String>> = file
            .names
            .iter()
            .filter_map(|p| resolve(&files, p, 0))
            .filter(|target| target != module)
            .collect();
        graph.insert(module.clone(), edges);
    }
    graph
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        next: usize,
        found: Vec<Vec<Vec<String>>>,
    }
    fn visit(w: &mut Walk<'_>, v: &Vec<String>) {
        w.index.insert(v.clone(), w.next);
        w.low.insert(v.clone(), w.next);
        w.next += 1;
        w.stack.push(v.clone());
        w.on_stack.insert(v.clone());
        let edges: Vec<Vec<String>> = w.graph.get(v).into_iter().flatten().cloned().collect();
        for t in edges {
            if !w.graph.contains_key(&t) {
                continue;
            }
            if !w.index.contains_key(&t) {
                visit(w, &t);
                let low = w.low[v].min(w.low[&t]);
                w.low.insert(v.clone(), low);
            } else if w.on_stack.contains(&t) {
                let low = w.low[v].min(w.index[&t]);
                w.low.insert(v.clone(), low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(x) = w.stack.pop() {
                w.on_stack.remove(&x);
                let done = &x == v;
                component.push(x);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                w.found.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    w.found
}

#[test]
fn the_import_scan_resolves_uses_reexports_and_finds_cycles() {
    assert_eq!(
        expand_use("crate::a::{b,\n    c::{d, e as f}}"),
        vec!["crate::a::b", "crate::a::c::d", "crate::a::c::e as f"]
    );
    let a = parse("src/x/a.rs", "use super::b::Thing;\npub fn one() {}\n");
    let b = parse(
        "src/x/b.rs",
        "pub struct Thing;\nfn two() { crate::x::a::one(); }\n",
    );
    let m = parse(
        "src/x/mod.rs",
        "pub mod a;\npub mod b;\npub use b::Thing;\n",
    );
    let c = parse("src/c.rs", "use crate::x::Thing;\n");
    let mut files = BTreeMap::new();
    for f in [a, b, m, c] {
        files.insert(f.module.clone(), f);
    }
    let x = |s: &str| s.split('/').map(str::to_owned).collect::<Vec<_>>();
    // The re-export in x/mod.rs resolves to x/b.rs, which defines Thing.
    assert_eq!(resolve(&files, &x("x/Thing"), 0), Some(x("x/b")));
    let mut graph = BTreeMap::new();
    for (m, f) in &files {
        let edges = f
            .names
            .iter()
            .filter_map(|p| resolve(&files, p, 0))
            .filter(|t| t != m)
            .collect();
        graph.insert(m.clone(), edges);
    }
    let found = cycles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].len(), 2, "a <-> b: {found:?}");
}

#[test]
fn no_source_file_imports_itself_through_others() {
    let graph = import_graph();
    assert!(graph.len() > 50, "only {} modules scanned", graph.len());
    let found = cycles(&graph);
    let show = |c: &Vec<Vec<String>>| {
        c.iter()
            .map(|m| m.join("::"))
            .collect::<Vec<_>>()
            .join(" <-> ")
    };
    assert!(
        found.is_empty(),
        "import loops between files:\n{}",
        found.iter().map(show).collect::<Vec<_>>().join("\n")
    );
}
