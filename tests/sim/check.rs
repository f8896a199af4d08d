//! The invariants the simulation checks after every step, and after the
//! heal (see the module header of `main`).

use std::fmt::Write as _;

use shardlog::zk::paths;
use shardlog::zk::store::MetadataStore;

use super::replica::{sequenced, Role};
use super::world::{Violation, World, TOPIC};

impl World {
    /// The invariants, after every step.
    pub(super) async fn check(&mut self) -> Result<(), Violation> {
        self.check_controllers()?;
        self.check_leader_epochs()?;
        self.check_leaders_in_isr().await?;
        self.check_high_watermarks()?;
        self.check_acknowledged()?;
        self.check_no_duplicates()?;
        self.check_transactions()?;
        self.check_groups()
    }

    /// No log holds one idempotent producer's sequence twice (the leader
    /// answered every retry of a batch in its log with the batch's offset).
    fn check_no_duplicates(&self) -> Result<(), Violation> {
        for n in self.nodes.iter().filter(|n| n.up) {
            for (p, r) in &n.replicas {
                let mut seen = std::collections::BTreeMap::new();
                for (offset, (_, id)) in r.log.iter().enumerate() {
                    let Some(key) = sequenced(*id) else {
                        continue;
                    };
                    if let Some(first) = seen.insert(key, offset) {
                        return Err(Violation(format!(
                            "{TOPIC}-{p}: producer {} epoch {} sequence {} twice in broker {}'s log, at offsets {first} and {offset}",
                            key.0, key.1, key.2, n.id
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// At most one controller per controller epoch.
    fn check_controllers(&mut self) -> Result<(), Violation> {
        for n in self.nodes.iter().filter(|n| n.up) {
            let Some(zk) = &n.zk else { continue };
            if let Some(won) = zk.election().won() {
                let holder = *self.controllers.entry(won.epoch.0).or_insert(n.id);
                if holder != n.id {
                    return Err(Violation(format!(
                        "controller epoch {} held by brokers {holder} and {}",
                        won.epoch.0, n.id
                    )));
                }
            }
        }
        Ok(())
    }

    /// A replica's leader epoch never goes back, and one leader epoch has
    /// one leader.
    fn check_leader_epochs(&mut self) -> Result<(), Violation> {
        for n in self.nodes.iter().filter(|n| n.up) {
            for (p, r) in &n.replicas {
                if let Some(h) = n.hosted.partition(TOPIC, *p) {
                    let e = h.state.leader_epoch.0;
                    let seen = self
                        .epochs_seen
                        .entry((n.id, *p))
                        .or_insert((n.incarnation, e));
                    if seen.0 == n.incarnation && e < seen.1 {
                        return Err(Violation(format!(
                            "{TOPIC}-{p}: broker {} went back from leader epoch {} to {e}",
                            n.id, seen.1
                        )));
                    }
                    *seen = (n.incarnation, e);
                }
                if r.is_leader() {
                    let holder = *self
                        .leaders_seen
                        .entry((*p, r.leader_epoch))
                        .or_insert(n.id);
                    if holder != n.id {
                        return Err(Violation(format!(
                            "{TOPIC}-{p}: brokers {holder} and {} both led in leader epoch {}",
                            n.id, r.leader_epoch
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Every leader is in its ISR (unclean election is off).
    async fn check_leaders_in_isr(&self) -> Result<(), Violation> {
        for (p, s) in self.states().await {
            if s.leader.0 >= 0 && !s.isr.contains(&s.leader) {
                return Err(Violation(format!(
                    "{TOPIC}-{p}: leader {} not in its ISR {:?}",
                    s.leader.0, s.isr
                )));
            }
        }
        Ok(())
    }

    /// The HW is at most the LEO of every ISR member that follows the
    /// leader's epoch (and has finished truncating).
    fn check_high_watermarks(&self) -> Result<(), Violation> {
        for l in self.nodes.iter().filter(|n| n.up) {
            for (p, r) in &l.replicas {
                let Role::Leader(state) = &r.role else {
                    continue;
                };
                if r.hw > r.leo() {
                    return Err(Violation(format!(
                        "{TOPIC}-{p}: leader {} HW {} above its LEO {}",
                        l.id,
                        r.hw,
                        r.leo()
                    )));
                }
                for m in state.isr().iter().filter(|m| m.0 != l.id) {
                    let mn = &self.nodes[(m.0 - 1) as usize];
                    let Some(mr) = mn.replicas.get(p) else {
                        continue;
                    };
                    let follows = matches!(mr.role, Role::Follower { leader, truncating: false } if leader.0 == l.id)
                        && mr.leader_epoch == r.leader_epoch;
                    if mn.up && follows && mr.leo() < r.hw {
                        return Err(Violation(format!(
                            "{TOPIC}-{p}: leader {} HW {} above ISR member {}'s LEO {}",
                            l.id,
                            r.hw,
                            m.0,
                            mr.leo()
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Below its HW every replica holds exactly the acknowledged records.
    fn check_acknowledged(&self) -> Result<(), Violation> {
        for n in self.nodes.iter().filter(|n| n.up) {
            for a in &self.acked {
                let Some(r) = n.replicas.get(&a.partition) else {
                    continue;
                };
                if a.offset < r.hw && r.log.get(a.offset as usize).map(|e| e.1) != Some(a.id) {
                    return Err(Violation(format!(
                        "{TOPIC}-{}: acknowledged record {} at offset {} is {:?} on broker {} (HW {}, LEO {})",
                        a.partition,
                        a.id,
                        a.offset,
                        r.log.get(a.offset as usize),
                        n.id,
                        r.hw,
                        r.leo()
                    )));
                }
            }
        }
        Ok(())
    }

    /// After the heal: every partition led, its ISR full, every
    /// acknowledged record on the leader below its HW (liveness).
    pub async fn check_healed(&mut self) -> Result<(), Violation> {
        // Every admin operation started is carried out (the controller
        // deletes its znode when done).
        for path in [
            paths::REASSIGN_PARTITIONS,
            paths::PREFERRED_REPLICA_ELECTION,
        ] {
            if let Ok((data, _)) = self.root.get(path).await {
                return Err(Violation(format!(
                    "{path} still there after the heal: {}",
                    String::from_utf8_lossy(&data)
                )));
            }
        }
        let states = self.states().await;
        for p in 0..self.cfg.partitions {
            let Some(s) = states.get(&p) else {
                return Err(Violation(format!("{TOPIC}-{p} has no state")));
            };
            if s.leader.0 < 0 || s.isr.len() != self.cfg.replication as usize {
                let replicas: Vec<String> = self
                    .nodes
                    .iter()
                    .filter_map(|n| {
                        let r = n.replicas.get(&p)?;
                        let role = match &r.role {
                            Role::Stopped => "stopped".to_string(),
                            Role::Leader(st) => {
                                format!("leader isr {:?} pending {:?}", st.isr(), st.pending_isr())
                            }
                            Role::Follower { leader, truncating } => {
                                format!("follower of {} truncating {truncating}", leader.0)
                            }
                        };
                        let hosted = n.hosted.partition(TOPIC, p).map(|h| h.state.leader_epoch.0);
                        Some(format!(
                            "broker {}: {role} epoch {} hosted {hosted:?} leo {} hw {}",
                            n.id,
                            r.leader_epoch,
                            r.leo(),
                            r.hw
                        ))
                    })
                    .collect();
                return Err(Violation(format!(
                    "{TOPIC}-{p} not healed after {} steps: leader {} epoch {} isr {:?}; {}",
                    self.cfg.heal_steps,
                    s.leader.0,
                    s.leader_epoch.0,
                    s.isr,
                    replicas.join("; ")
                )));
            }
            let leader = &self.nodes[(s.leader.0 - 1) as usize];
            let r = leader.replicas.get(&p);
            for a in self.acked.iter().filter(|a| a.partition == p) {
                let held = r.is_some_and(|r| {
                    a.offset < r.hw && r.log.get(a.offset as usize).map(|e| e.1) == Some(a.id)
                });
                if !held {
                    return Err(Violation(format!(
                        "{TOPIC}-{p}: acknowledged record {} at offset {} lost (leader {})",
                        a.id, a.offset, s.leader.0
                    )));
                }
            }
        }
        self.check_transactions_healed()?;
        self.check_groups_healed()
    }

    /// The last `n` trace lines and the replay command.
    pub fn report(&self, v: &Violation, n: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "seed {} step {}: {}", self.seed, self.step, v.0);
        let start = self.trace.len().saturating_sub(n);
        for line in &self.trace[start..] {
            let _ = writeln!(out, "  {line}");
        }
        out
    }
}
