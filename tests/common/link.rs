//! A cuttable TCP link in front of one broker's Kafka port (CLUSTER.md §4
//! "cutting traffic between brokers"): the broker advertises the link's
//! port (`advertised.listeners`), so clients, the controller and the other
//! brokers' replica fetchers all reach it through here. Three states:
//! - open: bytes flow both ways;
//! - blackholed: connections stay up but no byte moves in either direction
//!   and new connections are accepted but not forwarded — a network
//!   partition as TCP sees one (peers time out, nobody gets a reset);
//! - cut: every connection is reset and new ones are closed at once.
//!
//! Healing resumes stalled connections (like packets retransmitted after
//! a partition heals). The target can change (a restarted broker binds a
//! new port) without the advertised port changing.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const OPEN: u8 = 0;
const BLACKHOLE: u8 = 1;
const CUT: u8 = 2;

/// How often a stalled forwarder looks whether the link healed.
const STALL_POLL: Duration = Duration::from_millis(20);

pub struct Link {
    pub port: u16,
    state: Arc<AtomicU8>,
    target: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Link {
    /// Listens on a free loopback port; forwards to `target` once set.
    pub fn start(target: &str) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind link");
        let port = listener.local_addr().expect("link addr").port();
        let link = Link {
            port,
            state: Arc::new(AtomicU8::new(OPEN)),
            target: Arc::new(Mutex::new(target.to_string())),
            stop: Arc::default(),
            open: Arc::default(),
        };
        let (state, target, stop, open) = (
            link.state.clone(),
            link.target.clone(),
            link.stop.clone(),
            link.open.clone(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (state, target, open) = (state.clone(), target.clone(), open.clone());
                std::thread::spawn(move || accept(conn, &state, &target, &open));
            }
        });
        link
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Where connections go from now on (open connections keep theirs).
    pub fn set_target(&self, target: &str) {
        *self.target.lock().expect("link lock") = target.to_string();
    }

    /// No byte moves; connections stay open.
    pub fn blackhole(&self) {
        self.state.store(BLACKHOLE, Ordering::SeqCst);
    }

    /// Resets every connection; refuses new ones until healed.
    pub fn cut(&self) {
        self.state.store(CUT, Ordering::SeqCst);
        self.close_all();
    }

    pub fn heal(&self) {
        self.state.store(OPEN, Ordering::SeqCst);
    }

    /// Closes every forwarded connection (a broker behind it died: its
    /// peers should see EOF, as they would without the link).
    pub fn close_all(&self) {
        for s in self.open.lock().expect("link lock").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn accept(
    conn: TcpStream,
    state: &Arc<AtomicU8>,
    target: &Mutex<String>,
    open: &Mutex<Vec<TcpStream>>,
) {
    // A connection made during a blackhole waits (the SYN got through,
    // nothing else does) until healed or cut.
    loop {
        match state.load(Ordering::SeqCst) {
            OPEN => break,
            CUT => return,
            _ => std::thread::sleep(STALL_POLL),
        }
    }
    let to = target.lock().expect("link lock").clone();
    let Ok(upstream) = TcpStream::connect(&to) else {
        return; // broker down: the client sees EOF, as on a refused connect
    };
    let _ = upstream.set_nodelay(true);
    let _ = conn.set_nodelay(true);
    let pairs = [
        (conn.try_clone(), upstream.try_clone()),
        (upstream.try_clone(), conn.try_clone()),
    ];
    {
        let mut open = open.lock().expect("link lock");
        open.retain(|s| s.peer_addr().is_ok());
        open.push(conn);
        open.push(upstream);
    }
    for pair in pairs {
        if let (Ok(from), Ok(to)) = pair {
            let state = state.clone();
            std::thread::spawn(move || pump(from, to, &state));
        }
    }
}

/// Copies `from` to `to` while open; stalls (reads nothing, so TCP's own
/// flow control holds the sender) while blackholed; ends on EOF, error or cut.
fn pump(mut from: TcpStream, mut to: TcpStream, state: &AtomicU8) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match state.load(Ordering::SeqCst) {
            OPEN => {}
            CUT => break,
            _ => {
                std::thread::sleep(STALL_POLL);
                continue;
            }
        }
        // Wake up now and then to notice a blackhole while idle.
        let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => break,
        };
        // Bytes read before a blackhole began are held, not dropped: a
        // stream that resumes must stay a valid stream.
        while state.load(Ordering::SeqCst) == BLACKHOLE {
            std::thread::sleep(STALL_POLL);
        }
        if state.load(Ordering::SeqCst) == CUT || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes accept
    }
}
