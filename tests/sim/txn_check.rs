//! The transactional invariants (see [`super::txn`]), read from the logs
//! themselves, not from the producer state whose LSO they check:
//! - the LSO never passes an open transaction, nor one whose marker the
//!   HW has not passed (`check_last_stable_offsets`, after every step);
//! - a transaction is decided once: no COMMIT marker for it in one log
//!   and an ABORT in another, and never against what its producer was
//!   told (`check_decisions`, after every step, below each HW);
//! - after the heal: every leader's LSO is its HW (nothing left open), no
//!   coordinator holds a transaction mid-commit or mid-abort, and a
//!   committed transaction is committed whole: each of its acknowledged
//!   records is followed by a COMMIT marker in its partition.

use std::collections::{BTreeMap, BTreeSet};

use shardlog::txn::state::TxnState;

use super::replica::{marker_of, txn_data_of, Replica};
use super::txn::Outcome;
use super::world::{Violation, World, TOPIC};

/// Per transaction number, how one log decided it: (commit, marker offset).
fn decisions(r: &Replica, upto: i64) -> BTreeMap<u32, (bool, i64)> {
    let mut open: BTreeMap<i64, BTreeSet<u32>> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (offset, (_, id)) in r.log.iter().enumerate().take(upto.max(0) as usize) {
        if let Some(t) = txn_data_of(*id) {
            open.entry(t.pid).or_default().insert(t.txn);
        } else if let Some(m) = marker_of(*id) {
            for txn in open.remove(&m.pid).unwrap_or_default() {
                out.insert(txn, (m.commit, offset as i64));
            }
        }
    }
    out
}

/// The LSO the log itself gives: the first offset of the oldest
/// transaction still open or whose marker is not below the HW, else the HW.
fn stable_bound(r: &Replica) -> i64 {
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    let mut bound = r.hw;
    for (offset, (_, id)) in r.log.iter().enumerate() {
        let offset = offset as i64;
        if let Some(t) = txn_data_of(*id) {
            open.entry(t.pid).or_insert(offset);
        } else if let Some(m) = marker_of(*id) {
            if let Some(first) = open.remove(&m.pid) {
                if offset >= r.hw {
                    bound = bound.min(first);
                }
            }
        }
    }
    open.values().fold(bound, |b, f| b.min(*f))
}

impl World {
    /// The replica leading partition `p` in the newest leader epoch.
    fn leader_replica(&self, p: i32) -> Option<&Replica> {
        self.nodes
            .iter()
            .filter(|n| n.up)
            .filter_map(|n| n.replicas.get(&p))
            .filter(|r| r.is_leader())
            .max_by_key(|r| r.leader_epoch)
    }

    /// The newest leader epoch any broker led partition `p` in.
    pub(super) fn newest_leader_epoch(&self, p: i32) -> Option<i32> {
        self.leaders_seen
            .keys()
            .filter(|(q, _)| *q == p)
            .map(|(_, e)| *e)
            .max()
    }

    pub(super) fn check_transactions(&self) -> Result<(), Violation> {
        if !self.cfg.transactions {
            return Ok(());
        }
        self.check_last_stable_offsets()?;
        self.check_decisions()
    }

    fn check_last_stable_offsets(&self) -> Result<(), Violation> {
        for n in self.nodes.iter().filter(|n| n.up) {
            for (p, r) in n.replicas.iter().filter(|(_, r)| r.is_leader()) {
                let lso = r.last_stable_offset();
                let bound = stable_bound(r);
                if lso != bound {
                    return Err(Violation(format!(
                        "{TOPIC}-{p}: leader {}'s LSO is {lso}, its log gives {bound} (HW {}, LEO {})",
                        n.id,
                        r.hw,
                        r.leo()
                    )));
                }
            }
        }
        Ok(())
    }

    fn check_decisions(&self) -> Result<(), Violation> {
        let mut seen: BTreeMap<u32, (bool, String)> = BTreeMap::new();
        for n in self.nodes.iter().filter(|n| n.up) {
            for (p, r) in &n.replicas {
                for (txn, (commit, offset)) in decisions(r, r.hw) {
                    let here = format!("broker {}'s {TOPIC}-{p} offset {offset}", n.id);
                    let told = self.txn.outcomes.get(&txn);
                    if told == Some(&Outcome::Committed) && !commit
                        || told == Some(&Outcome::Aborted) && commit
                    {
                        return Err(Violation(format!(
                            "transaction {txn}: its producer was told {told:?}, but {here} decides commit={commit}"
                        )));
                    }
                    if let Some((other, there)) = seen.get(&txn) {
                        if *other != commit {
                            return Err(Violation(format!(
                                "transaction {txn}: commit={other} at {there}, commit={commit} at {here}"
                            )));
                        }
                    } else {
                        seen.insert(txn, (commit, here));
                    }
                }
            }
        }
        Ok(())
    }

    /// After the heal (the partitions are led and their ISRs full).
    pub(super) fn check_transactions_healed(&self) -> Result<(), Violation> {
        if !self.cfg.transactions {
            return Ok(());
        }
        let current = self.newest_leader_epoch(super::txn::TXN_LOG_PARTITION);
        for (b, core) in current
            .into_iter()
            .flat_map(|e| self.txn.coordinators_at(e))
        {
            for m in core.all() {
                if matches!(
                    m.state(),
                    TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence
                ) || m.has_pending_state()
                {
                    return Err(Violation(format!(
                        "coordinator {b}: {} still {:?} (pending {:?}) after the heal",
                        m.transactional_id(),
                        m.state(),
                        m.pending_state()
                    )));
                }
            }
        }
        let mut decided: BTreeMap<(i32, u32), bool> = BTreeMap::new();
        for p in 0..self.cfg.partitions {
            let Some(r) = self.leader_replica(p) else {
                continue;
            };
            let lso = r.last_stable_offset();
            if lso != r.hw {
                return Err(Violation(format!(
                    "{TOPIC}-{p}: LSO {lso} below the HW {} after the heal (a transaction left open)",
                    r.hw
                )));
            }
            for (txn, (commit, _)) in decisions(r, r.hw) {
                decided.insert((p, txn), commit);
            }
        }
        for (txn, (pid, records)) in &self.txn.txn_records {
            let committed = self.txn.outcomes.get(txn) == Some(&Outcome::Committed)
                || decided.iter().any(|((_, t), c)| t == txn && *c);
            if !committed {
                continue;
            }
            for a in records {
                if decided.get(&(a.partition, *txn)) != Some(&true) {
                    return Err(Violation(format!(
                        "transaction {txn} (producer {pid}) committed, but its record {:#x} at {TOPIC}-{} offset {} is {:?}",
                        a.id,
                        a.partition,
                        a.offset,
                        decided.get(&(a.partition, *txn)).map(|c| if *c { "committed" } else { "aborted" })
                    )));
                }
            }
        }
        Ok(())
    }
}
