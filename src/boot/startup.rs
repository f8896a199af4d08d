//! `[drv]` Where each shard is in its start: every shard records its
//! phase, and a broker whose shards are not all ready after a while says
//! which phase each one is in (a start that hangs names its step in the
//! log instead of leaving only thread stacks, which cannot show what a
//! parked executor's task awaits).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// A shard's step in its start, in order (0, before the first, is a
/// thread spawned whose executor has not run yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// The log dir's I/O probe (`io::dma::prime_iopoll_probe`).
    Probing = 1,
    /// The control shard: the metadata store opened (ZooKeeper connect).
    OpeningStore,
    /// Joining the cross-shard mesh (waits for every peer).
    JoiningMesh,
    /// A data shard: partitions opened, cleaner and tasks started.
    StartingDataPath,
    /// Waiting for (data) or publishing (control) the first snapshot.
    FirstSnapshot,
    /// The control shard: broker registration and the election.
    Registering,
    Ready,
}

impl Phase {
    fn name(v: u8) -> &'static str {
        match v {
            0 => "spawned",
            1 => "probing the log dir",
            2 => "opening the metadata store",
            3 => "joining the mesh",
            4 => "starting the data path",
            5 => "at the first snapshot",
            6 => "registering",
            _ => "ready",
        }
    }
}

/// The phases of the data shards (0..n) and the control shard (n).
pub struct StartupPhases {
    phases: Vec<AtomicU8>,
}

impl StartupPhases {
    pub fn new(shards: usize) -> Self {
        Self {
            phases: (0..shards).map(|_| AtomicU8::new(0)).collect(),
        }
    }

    pub fn set(&self, shard: usize, phase: Phase) {
        if let Some(p) = self.phases.get(shard) {
            p.store(phase as u8, Ordering::Relaxed);
        }
    }

    /// `shard-0: joining the mesh, shard-1: ready, control: registering`.
    pub fn describe(&self) -> String {
        let last = self.phases.len().saturating_sub(1);
        self.phases
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let who = if i == last {
                    "control".to_string()
                } else {
                    format!("shard-{i}")
                };
                format!("{who}: {}", Phase::name(p.load(Ordering::Relaxed)))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Waits for `expected` readiness messages; every `report_every` without
/// all of them, a warning names each shard's phase.
pub fn wait_ready(
    ready: &mpsc::Receiver<Result<(), String>>,
    expected: usize,
    phases: &StartupPhases,
    report_every: Duration,
) -> Result<(), String> {
    let (mut got, mut waited) = (0, Duration::ZERO);
    while got < expected {
        match ready.recv_timeout(report_every) {
            Ok(Ok(())) => got += 1,
            Ok(Err(e)) => return Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                waited += report_every;
                tracing::warn!(
                    "not ready after {waited:?} ({got} of {expected} shards): {}",
                    phases.describe()
                );
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("a shard exited during startup".into())
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_every_shard_and_its_phase() {
        let p = StartupPhases::new(3);
        p.set(0, Phase::JoiningMesh);
        p.set(1, Phase::Ready);
        p.set(2, Phase::Registering);
        p.set(9, Phase::Ready); // no such shard: ignored
        assert_eq!(
            p.describe(),
            "shard-0: joining the mesh, shard-1: ready, control: registering"
        );
    }

    #[test]
    fn waiting_ends_with_every_shard_ready_or_the_first_error() {
        let p = StartupPhases::new(2);
        let (tx, rx) = mpsc::channel();
        tx.send(Ok(())).unwrap();
        tx.send(Ok(())).unwrap();
        assert_eq!(wait_ready(&rx, 2, &p, Duration::from_millis(5)), Ok(()));
        tx.send(Ok(())).unwrap();
        tx.send(Err("log dir: bad".into())).unwrap();
        assert_eq!(
            wait_ready(&rx, 2, &p, Duration::from_millis(5)),
            Err("log dir: bad".into())
        );
        drop(tx);
        assert_eq!(
            wait_ready(&rx, 1, &p, Duration::from_millis(5)),
            Err("a shard exited during startup".into())
        );
    }
}
