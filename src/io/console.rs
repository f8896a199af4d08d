//! `[io]` The broker's own lines on stderr (readiness, shutdown counters),
//! written so that a stderr that cannot take them (a full disk under a
//! redirected log, a closed pipe) costs the line and nothing else:
//! `eprintln!` panics on a failed write, and a panic while the log is the
//! thing failing ends in an abort. Kafka's log4j appenders drop what they
//! cannot write the same way.

use std::io::Write;

/// Writes `line` and a newline to stderr; a failed write is dropped.
pub fn line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.write_all(b"\n");
}
