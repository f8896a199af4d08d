//! The brokers' replication in the simulation: followers fetch and
//! truncate by leader epoch, leaders check their ISR and propose changes
//! to the controller (AlterPartition) and apply its answers, as the
//! broker's fetcher, `Partition` and AlterPartition sender drive the same
//! pure cores.

use rand::Rng;
use shardlog::controller::alter_partition::Proposal;
use shardlog::controller::leader_election::LeaderRecoveryState;
use shardlog::controller::zk_mode::{AlterAnswer, AlterAsk, AlterItem};
use shardlog::protocol::ErrorCode;
use shardlog::replication::truncation::offset_truncation_state;
use shardlog::types::BrokerId;

use super::replica::Role;
use super::world::{Msg, World, TOPIC, TOPIC_ID};

impl World {
    /// Every follower whose links are up fetches once (or truncates).
    pub(super) fn fetch_rounds(&mut self) {
        let now = self.now;
        for f in 1..=self.cfg.brokers {
            if !self.up(f) {
                continue;
            }
            for p in 0..self.cfg.partitions {
                if !self.rng.gen_bool(0.6) {
                    continue;
                }
                let Some(Role::Follower { leader, truncating }) = self.nodes[(f - 1) as usize]
                    .replicas
                    .get(&p)
                    .map(|r| r.role.clone())
                else {
                    continue;
                };
                let l = leader.0;
                if l < 1 || !self.up(l) || !self.linked(f, l) {
                    continue;
                }
                let follower_epoch = self.nodes[(f - 1) as usize].replicas[&p].leader_epoch;
                // The leader must hold the same epoch (else FENCED or
                // UNKNOWN_LEADER_EPOCH: the follower waits for LeaderAndIsr).
                let leader_ok = self.nodes[(l - 1) as usize]
                    .replicas
                    .get(&p)
                    .is_some_and(|r| r.is_leader() && r.leader_epoch == follower_epoch);
                if !leader_ok {
                    continue;
                }
                if truncating {
                    self.truncate_follower(f, l, p);
                } else {
                    self.fetch(f, l, p, now);
                }
            }
        }
    }

    /// The OffsetForLeaderEpoch exchange (KIP-101/279), to the end.
    fn truncate_follower(&mut self, f: i32, l: i32, p: i32) {
        let leader = self.nodes[(l - 1) as usize].replicas[&p].clone();
        let step_now = (self.step, self.now);
        let trace = &mut self.trace;
        let r = self.nodes[(f - 1) as usize]
            .replicas
            .get_mut(&p)
            .expect("follower replica");
        let before = r.leo();
        let mut asked = r.epochs.last().map_or(-1, |(e, _)| *e);
        for _ in 0..64 {
            let (epoch, end) = leader.end_offset_for(asked);
            let s = offset_truncation_state(&r.epochs, r.leo(), r.hw, epoch, end);
            r.truncate_to(s.offset);
            match (s.completed, s.next_epoch) {
                (false, Some(next)) => asked = next,
                _ => break,
            }
        }
        // A follower never reads past the leader's log (out of range:
        // Kafka's `handleOutOfRangeError` truncates to the leader's LEO).
        if r.leo() > leader.leo() {
            r.truncate_to(leader.leo());
        }
        r.role = Role::Follower {
            leader: BrokerId(l),
            truncating: false,
        };
        if r.leo() < before {
            trace.push(format!(
                "[{} t={}] broker {f} truncated {TOPIC}-{p} from {before} to {} (leader {l})",
                step_now.0,
                step_now.1,
                r.leo()
            ));
        }
    }

    fn fetch(&mut self, f: i32, l: i32, p: i32, now: i64) {
        let fetch_offset = self.nodes[(f - 1) as usize].replicas[&p].leo();
        let (records, leader_hw, propose) = {
            let r = self.node(l).replicas.get_mut(&p).expect("leader replica");
            if fetch_offset > r.leo() {
                return;
            }
            let epoch_start = r.epoch_start();
            let log = r.leader_log();
            let Role::Leader(state) = &mut r.role else {
                return;
            };
            let a = state.on_follower_fetch(now, log, BrokerId(f), fetch_offset, 0, epoch_start);
            let propose = r.apply(a);
            let upto = (fetch_offset as usize + 8).min(r.log.len());
            (r.log[fetch_offset as usize..upto].to_vec(), r.hw, propose)
        };
        if let Some(isr) = propose {
            self.propose_isr(l, p, isr);
        }
        let r = self.node(f).replicas.get_mut(&p).expect("follower replica");
        for (epoch, id) in records {
            r.append(epoch, id);
        }
        r.hw = r.hw.max(leader_hw.min(r.leo()));
    }

    /// Leaders look for followers out of sync (`maybeShrinkIsr`).
    pub(super) fn isr_checks(&mut self) {
        let now = self.now;
        let mut proposals = Vec::new();
        for n in self.nodes.iter_mut().filter(|n| n.up) {
            for (p, r) in n.replicas.iter_mut() {
                let leo = r.leo();
                if let Role::Leader(state) = &mut r.role {
                    let a = state.maybe_shrink_isr(now, leo);
                    if let Some(isr) = r.apply(a) {
                        proposals.push((n.id, *p, isr));
                    }
                }
            }
        }
        for (l, p, isr) in proposals {
            self.propose_isr(l, p, isr);
        }
    }

    /// AlterPartition to the controller the leader knows; with none
    /// known it waits for one (a retry later).
    pub(super) fn propose_isr(&mut self, l: i32, p: i32, isr: Vec<BrokerId>) {
        self.log(format!("broker {l} proposes isr {isr:?} for {TOPIC}-{p}"));
        self.resend_isr(l, p, isr);
    }

    /// Send (or send again) the leader's pending change; a change whose
    /// leader epoch moved on is fenced (`on_isr_change_failed`).
    fn resend_isr(&mut self, l: i32, p: i32, isr: Vec<BrokerId>) {
        let controller = self
            .shared
            .borrow()
            .controller_seen
            .get(&l)
            .copied()
            .flatten();
        let broker_epoch = self.shared.borrow().epochs.get(&l).copied().unwrap_or(-1);
        let node = self.node(l);
        let incarnation = node.incarnation;
        let hosted = node.hosted.partition(TOPIC, p).map(|h| {
            (
                h.state.leader,
                h.state.leader_epoch,
                h.state.partition_epoch,
            )
        });
        let Some(r) = node.replicas.get_mut(&p) else {
            return;
        };
        let current = r.leader_epoch;
        let Role::Leader(state) = &mut r.role else {
            return;
        };
        // The broker's control shard answers these itself
        // (`alter_partition::send_batch`).
        let Some((leader, leader_epoch, partition_epoch)) = hosted else {
            state.on_isr_change_refused(&isr, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
            return;
        };
        if state.pending_isr() != Some(&isr[..]) {
            return;
        }
        if leader.0 != l || leader_epoch.0 != current {
            state.on_isr_change_refused(&isr, ErrorCode::FENCED_LEADER_EPOCH);
            return;
        }
        let ask = AlterAsk {
            broker: BrokerId(l),
            broker_epoch,
            items: vec![AlterItem {
                topic_id: uuid::Uuid::from_u128(TOPIC_ID),
                partition: p,
                proposal: Proposal {
                    leader: BrokerId(l),
                    leader_epoch,
                    isr: isr.clone(),
                    leader_recovery_state: LeaderRecoveryState::Recovered,
                    partition_epoch,
                },
            }],
        };
        let Some(c) = controller else {
            // No controller known: try again later.
            self.send(
                l,
                l,
                Msg::AlterAnswer {
                    answer: Err(ErrorCode::NOT_CONTROLLER),
                    ask,
                    incarnation,
                },
            );
            return;
        };
        self.send(l, c.0, Msg::Alter { ask, incarnation });
    }

    /// The controller's side: AlterPartition runs on its event queue; the
    /// answer travels back on the same link.
    pub(super) fn on_alter(&mut self, from: i32, to: i32, ask: AlterAsk, incarnation: u32) {
        let Some(zk) = self.node(to).zk.clone() else {
            return;
        };
        let shared = self.shared.clone();
        let token = {
            let mut sh = shared.borrow_mut();
            sh.next_token += 1;
            let token = sh.next_token;
            sh.alters
                .insert(token, (to, from, ask.clone(), incarnation));
            token
        };
        glommio::spawn_local(async move {
            let answer = zk.request_alter_partition(ask.clone()).await;
            let mut sh = shared.borrow_mut();
            // Answered only if the controller did not die meanwhile (then
            // the leader already saw the connection fail).
            if sh.alters.remove(&token).is_some() {
                sh.queues
                    .entry((to, from))
                    .or_default()
                    .push_back(Msg::AlterAnswer {
                        answer,
                        ask,
                        incarnation,
                    });
            }
        })
        .detach();
    }

    pub(super) fn on_alter_answer(
        &mut self,
        to: i32,
        answer: AlterAnswer,
        ask: AlterAsk,
        incarnation: u32,
    ) {
        let now = self.now;
        let node = self.node(to);
        if node.incarnation != incarnation {
            return;
        }
        let p = ask.items[0].partition;
        // An answer to a change proposed under an earlier leader epoch is
        // ignored (a LeaderAndIsr replaced that state, and maybe a newer
        // change is pending): the broker's `Partition::on_isr_change_answer`
        // returns at once when the change's epoch is not the current one,
        // as Kafka's `Partition.sendAlterPartitionRequest` callback ignores
        // a response to a proposed state no longer in force.
        let asked_epoch = ask.items[0].proposal.leader_epoch.0;
        if node
            .replicas
            .get(&p)
            .is_none_or(|r| r.leader_epoch != asked_epoch)
        {
            let line = format!(
                "broker {to}: answer to an AlterPartition of {TOPIC}-{p} at leader epoch {asked_epoch} ignored (stale)"
            );
            self.log(line);
            return;
        }
        if let Err(e) = answer {
            // No per-partition answer: sent again to the controller known
            // now, as the broker's AlterPartition sender does (the change
            // may have been written before the answer was lost).
            let proposed = ask.items[0].proposal.isr.clone();
            let line =
                format!("broker {to}: AlterPartition for {TOPIC}-{p} failed ({e:?}), sent again");
            self.log(line);
            self.resend_isr(to, p, proposed);
            return;
        }
        let committed = match &answer {
            Ok(items) => match items.first() {
                Some((_, _, Ok(state))) => Some(state.clone()),
                _ => None,
            },
            Err(_) => None,
        };
        let applied = committed.as_ref().is_some_and(|s| {
            node.hosted
                .isr_committed(TOPIC, p, s.leader_epoch, &s.isr, s.partition_epoch, 0)
        });
        let Some(r) = node.replicas.get_mut(&p) else {
            return;
        };
        let log = r.leader_log();
        let leader_epoch = r.leader_epoch;
        let Role::Leader(state) = &mut r.role else {
            return;
        };
        let proposed = ask.items[0].proposal.isr.clone();
        if state.pending_isr() != Some(&proposed[..]) {
            let line =
                format!("broker {to}: answer for {TOPIC}-{p} {proposed:?}, no longer pending");
            self.log(line);
            return;
        }
        let refused = match &answer {
            Ok(items) => match items.first() {
                Some((_, _, Err(e))) => Some(*e),
                Some(_) => None,
                None => Some(ErrorCode::UNKNOWN_SERVER_ERROR),
            },
            Err(e) => Some(*e),
        };
        match (committed, refused) {
            (Some(s), _) if applied && s.leader_epoch.0 == leader_epoch => {
                let a = state.on_isr_committed(now, log, &s.isr);
                r.apply(a);
                let line = format!("broker {to}: isr of {TOPIC}-{p} now {:?}", s.isr);
                self.log(line);
            }
            (_, Some(e)) => {
                let resend = state.on_isr_change_refused(&proposed, e);
                let line = format!(
                    "broker {to}: isr change of {TOPIC}-{p} refused: {e:?} (sent again: {resend})"
                );
                self.log(line);
                if resend {
                    self.resend_isr(to, p, proposed);
                }
            }
            (_, None) => {
                // Committed under another leader epoch (or a stale
                // partition epoch): ignored, the change stays pending.
                let line =
                    format!("broker {to}: isr change of {TOPIC}-{p} answered stale: {answer:?}");
                self.log(line);
            }
        }
    }
}
