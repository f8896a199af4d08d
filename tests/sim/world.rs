//! The simulated cluster: one in-process ZooKeeper tree (the embedded
//! store, with Kafka's znode semantics: sessions, ephemeral nodes,
//! watches, multi with version checks), N brokers each running the real
//! ZooKeeper-mode controller (`ZkBroker`: registration, election, every
//! controller duty) on a session of its own, a data plane per broker made
//! of the broker's pure cores ([`super::replica`], `metadata::hosted`), a
//! network of per-link FIFO queues that can be cut (and brokers cut from
//! ZooKeeper: `EmbeddedStore::cut_from_server`), simulated time, and
//! acks=all producers, plain and idempotent ([`super::idempotence`]). One
//! seed decides every choice.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shardlog::controller::request_batch::ControllerRequest;
use shardlog::controller::zk_mode::{
    AlterAnswer, AlterAsk, ControllerContext, ControllerSettings, Duties, Reconnect, Reply,
    ZkBroker,
};
use shardlog::io::clock::ManualClock;
use shardlog::metadata::hosted::HostedPartitions;
use shardlog::metadata::leader_and_isr::PartitionErrors;
use shardlog::protocol::ErrorCode;
use shardlog::replication::isr::LeaderReplicaState;
use shardlog::types::{BrokerId, TopicPartition};
use shardlog::zk::embedded::EmbeddedStore;
use shardlog::zk::paths::{self, BrokerIdZNode, PartitionStateZNode, TopicZNode};
use shardlog::zk::store::{create_recursive, CreateMode, MetadataStore};

use super::replica::{Replica, Role, LAG_MS};

pub const TOPIC: &str = "sim";
pub(super) const TOPIC_ID: u128 = 0x5151_0000_0000_0000_0000_0000_0000_0049;
pub const MIN_ISR: usize = 2;
/// A produce not acknowledged within this is failed (`request.timeout.ms`).
const PRODUCE_TIMEOUT_MS: i64 = 30_000;

pub use super::shape::{Config, SHAPES};

/// Something sent and not yet delivered, on the link `from → to`.
pub(super) enum Msg {
    Controller {
        request: ControllerRequest,
        reply: Reply<Result<PartitionErrors, String>>,
    },
    Alter {
        ask: AlterAsk,
        /// The leader's incarnation when it asked.
        incarnation: u32,
    },
    AlterAnswer {
        answer: AlterAnswer,
        ask: AlterAsk,
        incarnation: u32,
    },
    Produce {
        tp: TopicPartition,
        id: u64,
    },
    Txn(super::txn::TxnMsg),
    Group(super::groups::GroupMsg),
}

/// The client's node id on the network.
pub(super) const CLIENT: i32 = 0;

/// What every broker's duties and the world share.
#[derive(Default)]
pub struct Shared {
    /// Per link (from, to), in order.
    pub(super) queues: BTreeMap<(i32, i32), VecDeque<Msg>>,
    /// Per broker: its registration epoch and the controller it last saw.
    pub(super) epochs: BTreeMap<i32, i64>,
    pub(super) controller_seen: BTreeMap<i32, Option<BrokerId>>,
    /// AlterPartitions a controller took and has not answered, by token:
    /// (controller, leader, ask, leader incarnation).
    pub(super) alters: BTreeMap<u64, (i32, i32, AlterAsk, u32)>,
    pub(super) next_token: u64,
}

#[derive(Clone)]
pub(super) struct SimDuties {
    me: i32,
    shared: Rc<RefCell<Shared>>,
}

impl Duties for SimDuties {
    fn registered(&self, broker_epoch: i64) {
        self.shared
            .borrow_mut()
            .epochs
            .insert(self.me, broker_epoch);
    }
    fn controller_seen(&self, controller: Option<BrokerId>) {
        self.shared
            .borrow_mut()
            .controller_seen
            .insert(self.me, controller);
    }
    async fn failover(&self, _ctx: &ControllerContext) {}
    async fn brokers_changed(&self, _live: &[shardlog::controller::brokers::LiveBroker]) {}
    fn send(
        &self,
        broker: BrokerId,
        request: ControllerRequest,
    ) -> BoxedLocal<Result<PartitionErrors, String>> {
        let reply = Reply::new();
        self.shared
            .borrow_mut()
            .queues
            .entry((self.me, broker.0))
            .or_default()
            .push_back(Msg::Controller {
                request,
                reply: reply.clone(),
            });
        Box::pin(async move { reply.take().await })
    }
    fn resigned(&self) {}
}

pub(super) struct Node {
    pub(super) id: i32,
    pub(super) up: bool,
    /// Bumped by every crash: messages and waits of an earlier life are void.
    pub(super) incarnation: u32,
    pub(super) store: EmbeddedStore,
    pub(super) zk: Option<Rc<ZkBroker<EmbeddedStore, SimDuties>>>,
    pub(super) hosted: HostedPartitions,
    /// Logs survive crashes (their unflushed tail does not).
    pub(super) replicas: BTreeMap<i32, Replica>,
}

/// An acks=all produce waiting for the HW.
struct Pending {
    broker: i32,
    incarnation: u32,
    partition: i32,
    offset: i64,
    id: u64,
    deadline: i64,
}

/// A record the producer was told is written (acks=all).
#[derive(Debug, Clone, Copy)]
pub struct Acked {
    pub partition: i32,
    pub offset: i64,
    pub id: u64,
}

pub struct World {
    pub seed: u64,
    pub(super) rng: StdRng,
    pub(super) cfg: Config,
    pub now: i64,
    clock: Rc<ManualClock>,
    pub(super) root: EmbeddedStore,
    pub(super) shared: Rc<RefCell<Shared>>,
    pub(super) nodes: Vec<Node>,
    /// Cut links, both directions, as (smaller id, larger id).
    cut: BTreeSet<(i32, i32)>,
    next_id: u64,
    pending: Vec<Pending>,
    pub acked: Vec<Acked>,
    /// The idempotent producers, one per partition.
    pub(super) idempotent: Vec<super::idempotence::IdempotentProducer>,
    /// Transactional producers and coordinators.
    pub(super) txn: super::txn::TxnSim,
    /// Consumers in a group and group coordinators.
    pub(super) groups: super::groups::GroupSim,
    /// Every controller epoch and who held it.
    pub(super) controllers: BTreeMap<i32, i32>,
    /// Per (broker, partition): its incarnation and the highest leader
    /// epoch it accepted in it.
    pub(super) epochs_seen: BTreeMap<(i32, i32), (u32, i32)>,
    /// Per (partition, leader epoch): the broker that led in it.
    pub(super) leaders_seen: BTreeMap<(i32, i32), i32>,
    /// The partition states in ZooKeeper, read at this step's start.
    pub(super) zk_states: BTreeMap<i32, PartitionStateZNode>,
    pub trace: Vec<String>,
    pub step: usize,
}

/// Why a run failed.
#[derive(Debug)]
pub struct Violation(pub String);

impl World {
    pub async fn new(seed: u64, cfg: Config) -> World {
        let clock = Rc::new(ManualClock::new(1_000_000));
        let root = EmbeddedStore::in_memory();
        shardlog::controller::brokers::create_top_level_paths(&root)
            .await
            .expect("top-level paths");
        let mut w = World {
            seed,
            rng: StdRng::seed_from_u64(seed),
            now: 1_000_000,
            clock,
            root,
            shared: Rc::default(),
            nodes: Vec::new(),
            cut: BTreeSet::new(),
            next_id: 1,
            pending: Vec::new(),
            acked: Vec::new(),
            idempotent: if cfg.idempotent_producers {
                super::idempotence::producers(cfg.partitions)
            } else {
                Vec::new()
            },
            txn: super::txn::TxnSim::new(cfg.transactions),
            groups: super::groups::GroupSim::new(cfg.groups),
            controllers: BTreeMap::new(),
            epochs_seen: BTreeMap::new(),
            leaders_seen: BTreeMap::new(),
            zk_states: BTreeMap::new(),
            trace: Vec::new(),
            step: 0,
            cfg,
        };
        for id in 1..=w.cfg.brokers {
            let store = w.root.new_session().expect("session");
            w.nodes.push(Node {
                id,
                up: false,
                incarnation: 0,
                store,
                zk: None,
                hosted: HostedPartitions::new(),
                replicas: BTreeMap::new(),
            });
            w.start_broker(id).await;
        }
        settle().await;
        // The topic, as CreateTopics writes it: partition p on brokers
        // p+1, p+2, ... (more brokers than replicas).
        let n = w.cfg.brokers;
        let assignment = (0..w.cfg.partitions)
            .map(|p| {
                let replicas = (0..w.cfg.replication)
                    .map(|k| BrokerId((p + k) % n + 1))
                    .collect();
                (p, replicas)
            })
            .collect();
        let topic = TopicZNode::new(uuid::Uuid::from_u128(TOPIC_ID), assignment);
        create_recursive(
            &w.root,
            &paths::topic(TOPIC),
            &topic.encode(),
            CreateMode::Persistent,
        )
        .await
        .expect("topic znode");
        settle().await;
        w
    }

    pub(super) fn node(&mut self, id: i32) -> &mut Node {
        &mut self.nodes[(id - 1) as usize]
    }

    pub(super) fn log(&mut self, what: String) {
        let line = format!("[{} t={}] {what}", self.step, self.now);
        self.trace.push(line);
    }

    async fn start_broker(&mut self, id: i32) {
        let shared = self.shared.clone();
        let clock = self.clock.clone();
        let node = self.node(id);
        let store = node.store.clone();
        let again = store.clone();
        let reconnect: Reconnect<EmbeddedStore> = Box::new(move || {
            let s = again.clone();
            Box::pin(async move { Ok(s) })
        });
        let zk = ZkBroker::new(
            BrokerId(id),
            BrokerIdZNode::plaintext("127.0.0.1", 9000 + id, 1),
            store,
            reconnect,
            SimDuties { me: id, shared },
            clock,
        );
        zk.configure(ControllerSettings {
            // Its timer is wall-clock time; the simulation has none.
            auto_leader_rebalance_enable: false,
            ..ControllerSettings::default()
        });
        zk.start().await.expect("broker start");
        let node = self.node(id);
        node.zk = Some(zk);
        node.up = true;
        node.hosted = HostedPartitions::new();
        self.log(format!("broker {id} started"));
    }

    /// kill -9 (`power_loss` false): the session ends with the process
    /// (its ephemeral znodes go) and what the process held in memory; the
    /// logs keep every record, because a leader acknowledges and a
    /// follower reports its LEO only once the records are written into
    /// the segment file (`design::architecture`, Durability). A power
    /// loss also drops what was not fsynced.
    fn crash(&mut self, id: i32, power_loss: bool) {
        let node = self.node(id);
        node.up = false;
        node.incarnation += 1;
        if let Some(zk) = node.zk.take() {
            zk.enqueue(shardlog::controller::zk_mode::Event::Stop);
        }
        let _ = node.store.close_session();
        let mut lines = Vec::new();
        for (p, r) in node.replicas.iter_mut() {
            let before = r.leo();
            if !power_loss {
                r.flushed = r.log.len();
            }
            r.crash();
            if r.leo() < before {
                lines.push(format!(
                    "broker {id} lost {TOPIC}-{p} offsets {}..{before} (unflushed)",
                    r.leo()
                ));
            }
        }
        for l in lines {
            self.log(l);
        }
        self.drop_messages_of(id);
        self.txn_crash(id);
        self.group_crash(id);
        let how = if power_loss {
            "lost power"
        } else {
            "was killed (kill -9)"
        };
        self.log(format!("broker {id} {how}"));
    }

    /// Messages to or from `id` are lost; controller requests to it are
    /// answered with an error (its channel closed).
    /// An AlterPartition sent to `id` fails on the sender's side (the
    /// connection to the controller broke: the leader drops its pending
    /// change and proposes again, as the broker's AlterPartition sender
    /// answers a failed send).
    fn drop_messages_of(&mut self, id: i32) {
        let mut shared = self.shared.borrow_mut();
        let mut failed = Vec::new();
        let mut lost = Vec::new();
        for ((from, to), q) in shared.queues.iter_mut() {
            if *from == id || *to == id {
                for m in q.drain(..) {
                    match m {
                        Msg::Txn(m) => lost.push((*to, Msg::Txn(m))),
                        Msg::Group(m) => lost.push((*to, Msg::Group(m))),
                        Msg::Controller { reply, .. } => reply.put(Err("connection lost".into())),
                        Msg::Alter { ask, incarnation } if *to == id => {
                            failed.push((*from, ask, incarnation));
                        }
                        // The answer died with the controller's connection.
                        Msg::AlterAnswer {
                            ask, incarnation, ..
                        } if *from == id => {
                            failed.push((*to, ask, incarnation));
                        }
                        _ => {}
                    }
                }
            }
        }
        let taken: Vec<u64> = shared
            .alters
            .iter()
            .filter(|(_, (c, ..))| *c == id)
            .map(|(t, _)| *t)
            .collect();
        for t in taken {
            if let Some((_, from, ask, incarnation)) = shared.alters.remove(&t) {
                failed.push((from, ask, incarnation));
            }
        }
        for (from, ask, incarnation) in failed {
            shared
                .queues
                .entry((from, from))
                .or_default()
                .push_back(Msg::AlterAnswer {
                    answer: Err(ErrorCode::REQUEST_TIMED_OUT),
                    ask,
                    incarnation,
                });
        }
        drop(shared);
        for (to, m) in lost {
            self.on_lost(to, m);
        }
    }

    pub(super) fn linked(&self, a: i32, b: i32) -> bool {
        a == CLIENT || b == CLIENT || !self.cut.contains(&(a.min(b), a.max(b)))
    }

    pub(super) fn up(&self, id: i32) -> bool {
        self.nodes[(id - 1) as usize].up
    }

    /// One simulated step; `faults` says whether new faults may start.
    pub async fn step(&mut self, faults: bool) -> Result<(), Violation> {
        self.step += 1;
        self.now += self.rng.gen_range(1..=40);
        self.clock.set(self.now);
        if faults {
            self.maybe_fault().await;
            if self.cfg.admin_operations {
                self.maybe_admin().await;
                settle().await;
            }
        }
        if self.rng.gen_bool(0.5) {
            self.produce();
        }
        if self.cfg.idempotent_producers && self.rng.gen_bool(0.3) {
            self.idempotent_produce();
        }
        if self.cfg.transactions || self.cfg.groups {
            self.zk_states = self.states().await;
        }
        if self.cfg.transactions {
            self.txn_step(faults);
        }
        if self.cfg.groups {
            self.group_step();
        }
        for _ in 0..self.rng.gen_range(0..=4) {
            self.deliver_one();
            settle().await;
        }
        self.fetch_rounds();
        self.isr_checks();
        self.complete_produces();
        self.flushes();
        settle().await;
        self.check().await
    }

    async fn maybe_fault(&mut self) {
        let roll: f64 = self.rng.gen();
        let n = self.cfg.brokers;
        let down: Vec<i32> = (1..=n).filter(|i| !self.up(*i)).collect();
        if roll < 0.01 && down.is_empty() {
            let id = self.rng.gen_range(1..=n);
            self.crash(id, false);
        } else if roll < 0.012 && down.is_empty() && self.all_isrs_full().await {
            // One machine at a time, and only while every ISR is full:
            // the other replicas hold what it loses.
            let id = self.rng.gen_range(1..=n);
            self.crash(id, true);
        } else if roll < 0.03 && !down.is_empty() {
            let id = down[self.rng.gen_range(0..down.len())];
            self.restart(id).await;
        } else if roll < 0.04 {
            let a = self.rng.gen_range(1..=n);
            let b = self.rng.gen_range(1..=n);
            if a != b {
                self.cut.insert((a.min(b), a.max(b)));
                self.log(format!("link {a}-{b} cut"));
            }
        } else if roll < 0.06 && !self.cut.is_empty() {
            let links: Vec<_> = self.cut.iter().copied().collect();
            let l = links[self.rng.gen_range(0..links.len())];
            self.cut.remove(&l);
            self.log(format!("link {}-{} healed", l.0, l.1));
        } else if roll < 0.065 {
            let id = self.rng.gen_range(1..=n);
            if self.up(id) {
                let _ = self.node(id).store.close_session();
                self.log(format!("broker {id}'s ZooKeeper session expired"));
            }
        } else if self.cfg.zookeeper_cuts && roll < 0.07 {
            // Jepsen's 2013 Kafka scenario: a broker (the controller, a
            // leader) cut from ZooKeeper but not from the other brokers or
            // the clients; ZooKeeper expires its session, it does not know
            // until it reconnects.
            let id = self.rng.gen_range(1..=n);
            if self.up(id) && !self.node(id).store.is_cut() {
                let _ = self.node(id).store.cut_from_server();
                self.log(format!(
                    "broker {id} cut from ZooKeeper (its session expired there)"
                ));
            }
        } else if self.cfg.zookeeper_cuts && roll < 0.08 {
            let cut: Vec<i32> = (1..=n)
                .filter(|i| self.up(*i) && self.nodes[(*i - 1) as usize].store.is_cut())
                .collect();
            if !cut.is_empty() {
                let id = cut[self.rng.gen_range(0..cut.len())];
                self.reconnect_to_zookeeper(id);
            }
        }
    }

    /// A broker cut from ZooKeeper reconnects and learns its session
    /// expired.
    fn reconnect_to_zookeeper(&mut self, id: i32) {
        let _ = self.node(id).store.close_session();
        self.log(format!(
            "broker {id} reconnected to ZooKeeper: its session had expired"
        ));
    }

    async fn restart(&mut self, id: i32) {
        let store = self.root.new_session().expect("session");
        self.node(id).store = store;
        self.start_broker(id).await;
    }

    /// The end of a run: every broker's event queue stops, so a process
    /// running many seeds does not keep earlier runs' tasks.
    pub fn stop_all(&mut self) {
        for n in &mut self.nodes {
            if let Some(zk) = n.zk.take() {
                zk.enqueue(shardlog::controller::zk_mode::Event::Stop);
            }
        }
    }

    /// Heal every link and start every broker again.
    pub async fn heal(&mut self) {
        self.cut.clear();
        for id in 1..=self.cfg.brokers {
            if !self.up(id) {
                self.restart(id).await;
            } else if self.nodes[(id - 1) as usize].store.is_cut() {
                self.reconnect_to_zookeeper(id);
            }
        }
        self.log("healed".into());
    }

    pub(super) fn send(&mut self, from: i32, to: i32, msg: Msg) {
        self.shared
            .borrow_mut()
            .queues
            .entry((from, to))
            .or_default()
            .push_back(msg);
    }

    /// A producer sends one record to the leader its metadata names.
    fn produce(&mut self) {
        let partition = self.rng.gen_range(0..self.cfg.partitions);
        let Some(to) = self.leader_in_metadata(partition) else {
            return;
        };
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            CLIENT,
            to,
            Msg::Produce {
                tp: TopicPartition::new(TOPIC, partition),
                id,
            },
        );
    }

    /// The client's metadata: what a live broker last heard as leader;
    /// from shape 4 on, only the leader of the newest leader epoch (a
    /// client ignores metadata older than what it has, KIP-320; a zombie
    /// leader no longer in the assignment is never told otherwise, and a
    /// transaction's markers sent to it never complete).
    pub(super) fn leader_in_metadata(&self, partition: i32) -> Option<i32> {
        let holders: Vec<(i32, i32)> = (1..=self.cfg.brokers)
            .filter(|b| self.up(*b))
            .filter_map(|b| {
                let h = self.nodes[(b - 1) as usize]
                    .hosted
                    .partition(TOPIC, partition)?;
                (h.state.leader.0 == b).then_some((h.state.leader_epoch.0, b))
            })
            .collect();
        if self.cfg.generation >= 4 {
            // Only the leader of the newest epoch any broker led in: a
            // client that saw it never goes back (KIP-320).
            let newest = self.newest_leader_epoch(partition);
            return holders
                .iter()
                .filter(|(e, _)| Some(*e) >= newest)
                .max()
                .map(|(_, b)| *b);
        }
        holders.last().map(|(_, b)| *b)
    }

    /// Deliver the head of one link's queue, chosen at random among the
    /// links that are up and whose ends are up.
    fn deliver_one(&mut self) {
        let ready: Vec<(i32, i32)> = self
            .shared
            .borrow()
            .queues
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(k, _)| *k)
            .filter(|(from, to)| self.linked(*from, *to))
            .collect();
        if ready.is_empty() {
            return;
        }
        let (from, to) = ready[self.rng.gen_range(0..ready.len())];
        let Some(msg) = self
            .shared
            .borrow_mut()
            .queues
            .get_mut(&(from, to))
            .and_then(VecDeque::pop_front)
        else {
            return;
        };
        if to != CLIENT && !self.up(to) {
            // Refused connections: the sender sees the failure.
            match msg {
                Msg::Controller { reply, .. } => reply.put(Err("broker down".into())),
                Msg::Alter { ask, incarnation } => self.send(
                    from,
                    from,
                    Msg::AlterAnswer {
                        answer: Err(ErrorCode::REQUEST_TIMED_OUT),
                        ask,
                        incarnation,
                    },
                ),
                m @ (Msg::Txn(_) | Msg::Group(_)) => self.on_lost(to, m),
                _ => {}
            }
            return;
        }
        match msg {
            Msg::Controller { request, reply } => {
                let answer = self.on_controller_request(to, request);
                reply.put(Ok(answer));
            }
            Msg::Produce { tp, id } => self.on_produce(to, tp.partition, id),
            Msg::Txn(m) => self.on_txn_msg(from, to, m),
            Msg::Group(m) => self.on_group_msg(to, m),
            Msg::Alter { ask, incarnation } => self.on_alter(from, to, ask, incarnation),
            Msg::AlterAnswer {
                answer,
                ask,
                incarnation,
            } => self.on_alter_answer(to, answer, ask, incarnation),
        }
    }

    fn on_controller_request(&mut self, to: i32, request: ControllerRequest) -> PartitionErrors {
        let now = self.now;
        let epoch = self.shared.borrow().epochs.get(&to).copied();
        let mut lines = Vec::new();
        let node = self.node(to);
        let answer = match &request {
            ControllerRequest::LeaderAndIsr(req) => {
                let errors = node.hosted.on_leader_and_isr(req, BrokerId(to), epoch);
                for p in &req.partitions {
                    if errors.partition(&p.topic, p.partition) != Some(ErrorCode::NONE) {
                        continue;
                    }
                    let Some(h) = node.hosted.partition(&p.topic, p.partition) else {
                        continue;
                    };
                    let st = h.state.clone();
                    let r = node
                        .replicas
                        .entry(p.partition)
                        .or_insert_with(Replica::new);
                    let same_epoch = r.leader_epoch == st.leader_epoch.0;
                    if st.leader.0 == to {
                        let isr: Vec<BrokerId> = st.isr.clone();
                        let log = r.leader_log();
                        match &mut r.role {
                            Role::Leader(state) if same_epoch => {
                                let a = state.on_assignment_updated(now, log, &st.replicas, &isr);
                                r.apply(a);
                            }
                            _ => {
                                let mut state = LeaderReplicaState::become_leader(
                                    BrokerId(to),
                                    &st.replicas,
                                    &isr,
                                    LAG_MS,
                                    now,
                                );
                                let a = state.on_leader_append(now, r.leader_log());
                                r.role = Role::Leader(Box::new(state));
                                r.leader_epoch = st.leader_epoch.0;
                                r.apply(a);
                                lines.push(format!(
                                    "broker {to} leads {TOPIC}-{} at epoch {} isr {:?} (leo {} hw {})",
                                    p.partition,
                                    st.leader_epoch.0,
                                    isr,
                                    r.leo(),
                                    r.hw
                                ));
                            }
                        }
                    } else {
                        let was_following =
                            matches!(r.role, Role::Follower { leader, .. } if leader == st.leader);
                        if !(same_epoch && was_following) {
                            r.role = Role::Follower {
                                leader: st.leader,
                                truncating: true,
                            };
                            r.leader_epoch = st.leader_epoch.0;
                        }
                    }
                }
                errors
            }
            ControllerRequest::StopReplica(req) => {
                let (errors, delete) = node.hosted.on_stop_replica(req, epoch);
                for p in &req.partitions {
                    if errors.partition(&p.topic, p.partition) == Some(ErrorCode::NONE) {
                        if let Some(r) = node.replicas.get_mut(&p.partition) {
                            r.role = Role::Stopped;
                        }
                    }
                }
                for (_, p) in delete {
                    node.replicas.remove(&p);
                }
                errors
            }
            ControllerRequest::UpdateMetadata(req) => {
                node.hosted.observe_controller_epoch(req.controller_epoch);
                PartitionErrors {
                    error: ErrorCode::NONE,
                    partitions: Vec::new(),
                }
            }
        };
        for l in lines {
            self.log(l);
        }
        self.fail_produces_not_led();
        answer
    }

    /// Kafka's makeFollower / stopReplicas complete the parked produces.
    fn fail_produces_not_led(&mut self) {
        let nodes = &self.nodes;
        self.pending.retain(|p| {
            let n = &nodes[(p.broker - 1) as usize];
            n.up && n.incarnation == p.incarnation
                && n.replicas.get(&p.partition).is_some_and(Replica::is_leader)
        });
    }

    fn on_produce(&mut self, to: i32, partition: i32, id: u64) {
        use super::idempotence::{judge, Verdict};
        let (now, deadline) = (self.now, self.now + PRODUCE_TIMEOUT_MS);
        let node = self.node(to);
        let incarnation = node.incarnation;
        let Some(r) = node.replicas.get_mut(&partition) else {
            return;
        };
        let Role::Leader(state) = &mut r.role else {
            return;
        };
        // acks=all refused below min.insync.replicas (NOT_ENOUGH_REPLICAS).
        if state.isr().len() < MIN_ISR {
            return;
        }
        let offset = match judge(r, id) {
            Verdict::Append => r.leader_append(now, id),
            Verdict::Duplicate(offset) => {
                self.log(format!(
                    "broker {to}: record {id:#x} of {TOPIC}-{partition} is a retry of offset {offset}"
                ));
                offset
            }
            Verdict::Refused(why) => {
                self.log(format!(
                    "broker {to} refuses record {id:#x} of {TOPIC}-{partition}: {why}"
                ));
                return;
            }
        };
        self.pending.push(Pending {
            broker: to,
            incarnation,
            partition,
            offset,
            id,
            deadline,
        });
    }

    fn complete_produces(&mut self) {
        let now = self.now;
        let nodes = &self.nodes;
        let mut acked = Vec::new();
        let mut lines = Vec::new();
        self.pending.retain(|p| {
            let n = &nodes[(p.broker - 1) as usize];
            let Some(r) = n.replicas.get(&p.partition) else {
                return false;
            };
            if !n.up || n.incarnation != p.incarnation || !r.is_leader() || now > p.deadline {
                return false;
            }
            if r.hw > p.offset {
                lines.push(format!(
                    "acked record {} at {TOPIC}-{} offset {} by broker {}",
                    p.id, p.partition, p.offset, p.broker
                ));
                acked.push(Acked {
                    partition: p.partition,
                    offset: p.offset,
                    id: p.id,
                });
                return false;
            }
            true
        });
        for a in &acked {
            self.on_idempotent_acked(a.id);
            self.on_txn_acked(*a);
        }
        self.acked.extend(acked);
        for l in lines {
            self.log(l);
        }
    }

    fn flushes(&mut self) {
        for i in 0..self.nodes.len() {
            if self.nodes[i].up && self.rng.gen_bool(0.05) {
                for r in self.nodes[i].replicas.values_mut() {
                    r.flush();
                }
            }
        }
    }

    async fn all_isrs_full(&self) -> bool {
        let states = self.states().await;
        let full = self.cfg.replication as usize;
        states.len() == self.cfg.partitions as usize
            && states
                .values()
                .all(|s| s.leader.0 >= 0 && s.isr.len() == full)
    }

    /// The partition states in ZooKeeper.
    pub async fn states(&self) -> BTreeMap<i32, PartitionStateZNode> {
        let mut out = BTreeMap::new();
        for p in 0..self.cfg.partitions {
            if let Ok((data, _)) = self.root.get(&paths::partition_state(TOPIC, p)).await {
                if let Ok(s) = PartitionStateZNode::decode(&data) {
                    out.insert(p, s);
                }
            }
        }
        out
    }
}

/// Let every ready task run (the controllers' event queues, watch
/// callbacks): no timers, so the order is the executor's FIFO, fixed.
pub async fn settle() {
    for _ in 0..64 {
        futures_lite::future::yield_now().await;
    }
}
