//! `[io]` The processes `shardlog bench` starts: a broker child (its
//! output in a log file, SIGTERM then SIGKILL to stop), the work directory
//! they live in, and the signal watch that stops them when bench itself is
//! stopped.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::io::clock::{Clock, SystemClock};
/// A temporary directory removed on drop unless kept.
pub(super) struct WorkDir {
    pub(super) path: PathBuf,
    keep: bool,
}

impl WorkDir {
    pub(super) fn create(keep: bool, clock: &SystemClock) -> Result<Self> {
        let base = std::env::temp_dir();
        for attempt in 0..100 {
            let name = format!(
                "shardlog-bench-{}-{}-{attempt}",
                std::process::id(),
                clock.wall_ms()
            );
            let path = base.join(name);
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path, keep }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
        bail!(
            "could not create a temporary directory under {}",
            base.display()
        )
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("bench: kept {}", self.path.display());
        } else if let Err(e) = std::fs::remove_dir_all(&self.path) {
            eprintln!("bench: warning: removing {}: {e}", self.path.display());
        }
    }
}

/// How the broker ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerExit {
    /// Exited after our SIGTERM.
    Stopped(ExitStatus),
    /// Ignored SIGTERM for the stop timeout; killed.
    Killed,
    /// Was already gone when we came to stop it.
    ExitedEarly(ExitStatus),
}

/// A broker child process whose stdout and stderr go to one log file (a
/// file, not a pipe nobody drains, which would block the broker). Killed on
/// drop if still running.
pub struct BrokerChild {
    child: Child,
    log_path: PathBuf,
    addr: SocketAddr,
    done: bool,
    clock: SystemClock,
}

impl BrokerChild {
    /// Spawns `program args...` with its output in `log_path`.
    pub fn spawn(
        program: &Path,
        args: &[String],
        log_path: &Path,
        addr: SocketAddr,
    ) -> Result<Self> {
        let log =
            File::create(log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        Ok(Self {
            child,
            log_path: log_path.to_path_buf(),
            addr,
            done: false,
            clock: SystemClock::new(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the broker printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Waits for the readiness line (preferred: every shard is up) or, if
    /// the broker never prints one, a TCP accept that held for 2 s. Returns
    /// the address to bench.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<SocketAddr> {
        let start = self.clock.mono_ms();
        let limit = timeout.as_millis() as i64;
        let mut accepted_at: Option<i64> = None;
        loop {
            if let Some(bound) = parse_readiness_line(&self.log()) {
                return Ok(bound.unwrap_or(self.addr));
            }
            if let Some(status) = self.child.try_wait()? {
                self.done = true;
                bail!(
                    "the broker exited ({status}) before it was ready; its output:\n{}",
                    tail(&self.log(), 30)
                );
            }
            let now = self.clock.mono_ms();
            if accepted_at.is_none()
                && TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok()
            {
                accepted_at = Some(now);
            }
            if accepted_at.is_some_and(|t| now - t >= 2_000) {
                eprintln!("bench: no readiness line from the broker; it accepts TCP, going ahead");
                return Ok(self.addr);
            }
            if now - start > limit {
                bail!(
                    "the broker printed no readiness line within {timeout:?}; its output:\n{}",
                    tail(&self.log(), 30)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The exit status if the broker has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, wait up to `timeout`, then SIGKILL with a warning.
    pub fn stop(&mut self, timeout: Duration) -> Result<BrokerExit> {
        if let Some(status) = self.child.try_wait()? {
            self.done = true;
            return Ok(BrokerExit::ExitedEarly(status));
        }
        let pid = Pid::from_raw(i32::try_from(self.child.id()).context("broker pid")?);
        // `pid` is our own child, not yet reaped (try_wait above saw it
        // running), so it names no other process.
        kill(pid, Signal::SIGTERM)
            .map_err(std::io::Error::from)
            .context("sending SIGTERM to the broker")?;
        let start = self.clock.mono_ms();
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.done = true;
                return Ok(BrokerExit::Stopped(status));
            }
            if self.clock.mono_ms() - start > timeout.as_millis() as i64 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!(
            "bench: warning: the broker (pid {pid}) did not exit within {timeout:?} of SIGTERM; sending SIGKILL"
        );
        self.child.kill().context("killing the broker")?;
        self.child.wait().context("waiting for the killed broker")?;
        self.done = true;
        Ok(BrokerExit::Killed)
    }
}

impl std::fmt::Display for BrokerExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stopped(s) => write!(f, "stopped by SIGTERM, {s}"),
            Self::Killed => write!(f, "killed with SIGKILL after ignoring SIGTERM"),
            Self::ExitedEarly(s) => write!(f, "exited before SIGTERM, {s}"),
        }
    }
}

impl Drop for BrokerChild {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Stops the broker and removes the work dir when bench itself is told to
/// stop (Ctrl-C, a CI timeout's SIGTERM, a closed terminal): a broker pinned
/// to a core must not outlive the bench that started it. Dropping the guard
/// ends the watch.
pub(super) struct SignalGuard {
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalGuard {
    /// Watches for SIGINT/SIGTERM/SIGHUP; on one, stops `pids` (brokers
    /// first, ZooKeeper last: the order given) and removes `work_dir`.
    pub(super) fn install(
        pids: Vec<u32>,
        work_dir: Option<PathBuf>,
        stop_timeout: Duration,
    ) -> Result<Self> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            .context("installing signal handlers")?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("bench-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    eprintln!("bench: got signal {sig}; stopping the broker (pids {pids:?})");
                    for pid in &pids {
                        terminate_pid(*pid, stop_timeout);
                    }
                    if let Some(dir) = work_dir {
                        let _ = std::fs::remove_dir_all(dir);
                    }
                    std::process::exit(128 + sig);
                }
            })?;
        Ok(Self {
            handle,
            thread: Some(thread),
        })
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// SIGTERM, reap within `timeout`, else SIGKILL: the signal thread's version
/// of [`BrokerChild::stop`] (the `Child` stays with the main thread).
fn terminate_pid(pid: u32, timeout: Duration) {
    let Ok(pid) = i32::try_from(pid).map(Pid::from_raw) else {
        return;
    };
    let clock = SystemClock::new();
    // `pid` is our child, which stays a zombie (so its pid cannot be
    // reused) until it is reaped here or by the main thread (then ECHILD).
    let _ = kill(pid, Signal::SIGTERM);
    while clock.mono_ms() < timeout.as_millis() as i64 {
        // Reaped here, or by the main thread already (an error): done.
        if !matches!(
            waitpid(pid, Some(WaitPidFlag::WNOHANG)),
            Ok(WaitStatus::StillAlive)
        ) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("bench: warning: the broker ignored SIGTERM for {timeout:?}; sending SIGKILL");
    let _ = kill(pid, Signal::SIGKILL);
    let _ = waitpid(pid, None);
}

/// A free loopback port (bound, read, released: another process could
/// take it in between, so the start is retried on "Address in use").
pub(super) fn free_loopback_addr() -> Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(l.local_addr()?)
}

/// The bound address in the broker's readiness line
/// (`shardlog: listening on 127.0.0.1:9092 with 1 shards ...`; a
/// `PROTOCOL://` or listener-name prefix is dropped).
pub fn parse_readiness_line(log: &str) -> Option<Option<SocketAddr>> {
    let line = log.lines().find(|l| l.contains("listening on "))?;
    let rest = line.split("listening on ").nth(1)?;
    let addr = rest
        .split_whitespace()
        .next()
        .map(|a| a.rsplit("://").next().unwrap_or(a));
    Some(addr.and_then(|a| a.parse().ok()))
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
