//! Walking the crate's source tree, for the code-shape tests
//! (`foundation_style`, `foundation_layout`).

use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`, recursively, into `out`.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
