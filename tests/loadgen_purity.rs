//! The loadgen modules marked `[pure]` do no I/O and read no clock.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

const FORBIDDEN: &[&str] = &[
    "glommio",
    "std::fs",
    "std::net",
    "std::thread",
    "std::process",
    "Instant",
    "SystemTime",
    "thread_rng",
];

#[test]
fn pure_loadgen_modules_do_no_io_and_read_no_clock() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/loadgen");
    let mut pure = Vec::new();
    for entry in std::fs::read_dir(dir).expect("src/loadgen") {
        let path = entry.expect("dir entry").path();
        // A folder holds a module's split-out parts (`x/tests.rs`), checked
        // with the module they belong to.
        if path.is_dir() {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source file");
        if !text.starts_with("//! `[pure]`") {
            continue;
        }
        pure.push(path.file_name().unwrap().to_string_lossy().to_string());
        assert_does_no_io(&path, &text);
        let tests = path.with_extension("").join("tests.rs");
        if let Ok(text) = std::fs::read_to_string(&tests) {
            assert_does_no_io(&tests, &text);
        }
    }
    pure.sort();
    // The latency histogram moved to `src/histogram.rs` (the broker uses it
    // too); `foundation_style` checks every `[pure]` file under `src/`.
    let expected = [
        "accumulator.rs",
        "args.rs",
        "broker_metrics.rs",
        "curve.rs",
        "curve_report.rs",
        "omb.rs",
        "partitioner.rs",
        "report.rs",
        "sasl_login.rs",
        "sweep.rs",
        "wire.rs",
    ];
    assert_eq!(pure, expected);
}

fn assert_does_no_io(path: &std::path::Path, text: &str) {
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for f in FORBIDDEN {
            assert!(
                !code.contains(f),
                "{}:{}: [pure] module uses {f}: {line}",
                path.display(),
                n + 1
            );
        }
    }
}
