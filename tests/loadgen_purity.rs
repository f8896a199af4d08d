//! The loadgen modules marked `[pure]` do no I/O and read no clock.

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
        let text = std::fs::read_to_string(&path).expect("source file");
        if !text.starts_with("//! `[pure]`") {
            continue;
        }
        pure.push(path.file_name().unwrap().to_string_lossy().to_string());
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
    pure.sort();
    let expected = [
        "accumulator.rs",
        "args.rs",
        "histogram.rs",
        "omb.rs",
        "partitioner.rs",
        "report.rs",
        "sweep.rs",
        "wire.rs",
    ];
    assert_eq!(pure, expected);
}
