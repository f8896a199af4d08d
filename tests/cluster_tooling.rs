//! The cluster tests' own tooling, tested: tests/py/history.py's check
//! (passes a clean history, flags each kind of failure) and the cuttable
//! [`Link`] (blackhole stalls both ways, heal resumes, cut resets). (Split
//! from cluster_replication.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use common::link::Link;
use common::replica_cluster::check;

fn run_check(name: &str, acked: &str, read: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join(format!("{name}-acked"));
    let r = dir.path().join(format!("{name}-read"));
    std::fs::write(&a, acked).unwrap();
    std::fs::write(&r, read).unwrap();
    check(&a, &r)
}

#[test]
fn history_check_passes_a_clean_history_and_flags_each_kind_of_failure() {
    let acked = "0 0 p-0\n1 0 p-1\n0 1 p-2\n1 1 p-3\n";
    let clean = "0 0 p-0 0\n0 1 p-2 0\n1 0 p-1 0\n1 1 p-3 1\n";
    let h = run_check("clean", acked, clean);
    assert_eq!(h["ok"], true, "{h}");
    assert_eq!(h["acked"], 4);
    // An unacked record read (indeterminate write) is allowed.
    let h = run_check("extra", acked, &format!("{clean}1 2 p-5 1\n"));
    assert_eq!(h["ok"], true, "{h}");
    assert_eq!(h["unacked_read_count"], 1, "{h}");

    let h = run_check("lost", acked, "0 0 p-0 0\n0 1 p-2 0\n1 0 p-1 0\n");
    assert_eq!(h["ok"], false);
    assert_eq!(h["lost"], serde_json::json!(["p-3"]), "{h}");

    let h = run_check("dup", acked, &format!("{clean}0 2 p-2 0\n"));
    assert_eq!(h["ok"], false);
    assert_eq!(h["duplicate_count"], 1, "{h}");

    let h = run_check("reordered", "0 0 p-0\n0 1 p-2\n", "0 0 p-2 0\n0 1 p-0 0\n");
    assert_eq!(h["ok"], false);
    assert_eq!(h["reordered_count"], 1, "{h}");
    assert_eq!(h["moved_count"], 2, "{h}");

    let h = run_check("offsets", "0 5 p-0\n0 3 p-2\n", "0 5 p-0 0\n0 3 p-2 0\n");
    assert_eq!(h["ok"], false);
    assert_eq!(h["offsets_not_growing"].as_array().unwrap().len(), 1, "{h}");

    let h = run_check(
        "epochs",
        acked,
        "0 0 p-0 3\n0 1 p-2 2\n1 0 p-1 0\n1 1 p-3 1\n",
    );
    assert_eq!(h["ok"], false);
    assert_eq!(h["epochs_not_growing"].as_array().unwrap().len(), 1, "{h}");
}

/// A one-connection echo server on a free port.
fn echo_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn echo_within(s: &mut TcpStream, msg: &[u8], ms: u64) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
    let mut got = vec![0u8; msg.len()];
    s.read_exact(&mut got).ok().map(|()| got)
}

#[test]
fn link_blackhole_stalls_both_ways_heal_resumes_cut_resets() {
    let link = Link::start(&format!("127.0.0.1:{}", echo_server()));
    let mut s = TcpStream::connect(link.address()).unwrap();
    s.write_all(b"one").unwrap();
    assert_eq!(
        echo_within(&mut s, b"one", 5000).as_deref(),
        Some(&b"one"[..])
    );

    link.blackhole();
    s.write_all(b"two").unwrap();
    assert_eq!(
        echo_within(&mut s, b"two", 500),
        None,
        "bytes crossed a blackholed link"
    );
    // A new connection is accepted but goes nowhere.
    let mut late = TcpStream::connect(link.address()).unwrap();
    late.write_all(b"late").unwrap();
    assert_eq!(echo_within(&mut late, b"late", 300), None);

    link.heal();
    // The held bytes arrive (the stream stays a valid stream).
    assert_eq!(
        echo_within(&mut s, b"two", 5000).as_deref(),
        Some(&b"two"[..])
    );
    assert_eq!(
        echo_within(&mut late, b"late", 5000).as_deref(),
        Some(&b"late"[..])
    );

    link.cut();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 8];
    let eof = matches!(s.read(&mut buf), Ok(0) | Err(_));
    assert!(eof, "a cut link left the connection open");
    let mut refused = TcpStream::connect(link.address()).unwrap();
    refused
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert!(
        matches!(refused.read(&mut buf), Ok(0) | Err(_)),
        "a cut link accepted a connection"
    );
}
