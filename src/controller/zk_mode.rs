//! `[drv]` A broker in ZooKeeper mode (Kafka 3.9
//! `KafkaController` and its `ControllerEventManager`): the broker's
//! registration, the controller election every broker takes part in, and —
//! while this broker is controller — the controller's context and watches.
//!
//! One event queue, one task: watch callbacks, session changes and start-up
//! become [`Event`]s processed in FIFO order by [`ZkBroker::run`], so no
//! state is touched outside it and no locks are needed (Kafka's
//! ControllerEventThread). Events from an ended session or an ended
//! controller term are dropped (Kafka unregisters those handlers).
//!
//! What the broker does with the outcome (publish the controller id and
//! live brokers to every shard, send UpdateMetadata to every broker) is the
//! [`Duties`] implementation's: this module decides, the control shard acts.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::future::BoxedLocal;
use glommio::channels::local_channel::{self, LocalReceiver};

use super::brokers::{self, LiveBroker};
use super::election::{self, Election, Step, Won};
use super::request_batch::ControllerRequest;
use super::topic_admin::{self, TopicInfo};
use crate::io::clock::Clock;
use crate::io::local_sync::{join_all, Local};
use crate::metadata::leader_and_isr::PartitionErrors;
use crate::metrics::control::{ControllerState, ControllerStats};
use crate::protocol::ErrorCode;
use crate::types::BrokerId;
use crate::types::TopicPartition;
use crate::zk::paths::{self, BrokerIdZNode};
use crate::zk::store::{MetadataStore, Op, OpResult, SessionEvent, StoreError, Watch, WatchKind};

pub use super::context::ControllerContext;

/// What the controller's duties read from the broker's config.
#[derive(Debug, Clone)]
pub struct ControllerSettings {
    /// `inter.broker.listener.name`: LeaderAndIsr's live leaders are given on it.
    pub listener: String,
    /// `unclean.leader.election.enable` (false), under topic overrides.
    pub unclean_leader_election: bool,
    /// `delete.topic.enable` (true).
    pub delete_topic_enable: bool,
    /// `auto.leader.rebalance.enable` (true).
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (300).
    pub leader_imbalance_check_interval_s: u64,
    /// `leader.imbalance.per.broker.percentage` (10).
    pub leader_imbalance_per_broker_percentage: u32,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        Self {
            listener: "PLAINTEXT".into(),
            unclean_leader_election: false,
            delete_topic_enable: true,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_s: 300,
            leader_imbalance_per_broker_percentage: 10,
        }
    }
}

/// The broker's side effects of what the election decided.
#[allow(async_fn_in_trait)]
pub trait Duties {
    /// This broker's registration epoch (czxid), after each registration.
    fn registered(&self, broker_epoch: i64);
    /// The active controller as last seen (every broker; Metadata's
    /// controller id on the next UpdateMetadata).
    fn controller_seen(&self, controller: Option<BrokerId>);
    /// This broker became controller with `ctx` loaded: open a channel to
    /// every live broker (`ControllerChannelManager.startup`).
    async fn failover(&self, ctx: &ControllerContext);
    /// While controller: the registered brokers changed, as read
    /// (channels follow).
    async fn brokers_changed(&self, live: &[LiveBroker]);
    /// Send one controller request to `broker` over its channel; its
    /// answer (or why there is none).
    fn send(
        &self,
        broker: BrokerId,
        request: ControllerRequest,
    ) -> BoxedLocal<Result<PartitionErrors, String>>;
    /// No longer controller (`onControllerResignation`).
    fn resigned(&self);
}

/// Why a controller write was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("this broker is not the controller")]
    NotController,
    /// `/controller_epoch` moved: another controller was elected.
    #[error("controller moved to another broker")]
    Moved,
    #[error("{0}")]
    Store(StoreError),
}

/// Opens a new session after the old one expired.
pub type Reconnect<S> = Box<dyn Fn() -> BoxedLocal<Result<S, StoreError>>>;

/// Queue entries: what happened, and under which session / controller term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Startup,
    /// `/controller` created, changed or deleted.
    ControllerChange,
    /// `/brokers/ids` children changed (controller only).
    BrokerChange,
    /// `/brokers/topics` children or a watched topic changed (controller
    /// only; acted on by the controller's duties).
    TopicChange,
    /// One of the admin znodes changed (controller only).
    AdminChange(&'static str),
    /// A topic's assignment changed (`PartitionModificationsHandler`).
    PartitionModifications(String),
    /// A broker asks to shut down (ControlledShutdown), answered on `reply`.
    ControlledShutdown {
        broker: BrokerId,
        broker_epoch: i64,
        reply: Reply<ShutdownAnswer>,
    },
    /// A partition leader's AlterPartition, answered on `reply`.
    AlterPartition {
        ask: Box<isr::AlterAsk>,
        reply: Reply<isr::AlterAnswer>,
    },
    /// An admin client's ElectLeaders (`None`: every partition).
    ElectLeaders {
        kind: crate::controller::rebalance::ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
        reply: Reply<preferred::ElectAnswer>,
    },
    /// The auto leader rebalance's timer (controller term only).
    AutoRebalance,
    /// Another broker's AllocateProducerIds (KIP-730).
    AllocateProducerIds {
        broker: BrokerId,
        broker_epoch: i64,
        reply: Reply<producer_ids::AllocateAnswer>,
    },
    /// An admin client's AlterPartitionReassignments.
    AlterReassignments {
        asked: reassign::ReassignAsk,
        reply: Reply<reassign::ReassignAnswer>,
    },
    /// An admin client's ListPartitionReassignments (`None`: all).
    ListReassignments {
        asked: Option<BTreeSet<TopicPartition>>,
        reply: Reply<reassign::ListAnswer>,
    },
    /// The ISR of a moving partition changed (Kafka's
    /// `PartitionReassignmentIsrChange`; controller term only).
    ReassignmentIsrChange(TopicPartition),
    /// A broker answered a deleting StopReplica: per partition its error.
    DeletionAnswer {
        broker: BrokerId,
        errors: Vec<(TopicPartition, ErrorCode)>,
    },
    /// A broker answered a LeaderAndIsr: per partition its error.
    LeaderAndIsrAnswer {
        broker: BrokerId,
        answers: Vec<(TopicPartition, ErrorCode)>,
    },
    SessionExpired,
    Stop,
}

/// A ControlledShutdown's answer: the replicated partitions the broker
/// still leads, or why it was refused.
pub type ShutdownAnswer = Result<Vec<TopicPartition>, shutdown::ShutdownRefusal>;

/// A one-shot answer slot an event carries back to whoever queued it.
pub struct Reply<T>(Rc<(RefCell<Option<T>>, crate::io::local_sync::Trigger)>);

impl<T> Reply<T> {
    pub fn new() -> Self {
        Self(Rc::new((RefCell::new(None), Default::default())))
    }

    pub fn put(&self, v: T) {
        *self.0 .0.borrow_mut() = Some(v);
        self.0 .1.fire();
    }

    pub async fn take(&self) -> T {
        loop {
            if let Some(v) = self.0 .0.borrow_mut().take() {
                return v;
            }
            self.0 .1.wait().await;
        }
    }
}

impl<T> Default for Reply<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Reply<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> std::fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

impl<T> PartialEq for Reply<T> {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Eq for Reply<T> {}

#[derive(Debug, Clone)]
struct Tagged {
    session: u64,
    /// The controller term the event belongs to; 0 = any broker's.
    term: u64,
    event: Event,
}

/// How long to wait between attempts to open a new session.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(200);

pub struct ZkBroker<S: MetadataStore, D: Duties> {
    me: BrokerId,
    registration: BrokerIdZNode,
    store: RefCell<Rc<S>>,
    reconnect: Reconnect<S>,
    duties: D,
    election: RefCell<Election>,
    context: RefCell<Option<ControllerContext>>,
    core: RefCell<crate::controller::core::ControllerCore>,
    tx: Rc<stats::EventTx>,
    rx: RefCell<Option<LocalReceiver<stats::Queued>>>,
    session: Cell<u64>,
    term: Cell<u64>,
    /// Wall-clock time for the znodes written (`/controller`'s timestamp).
    clock: Rc<dyn Clock>,
    settings: RefCell<ControllerSettings>,
    /// Kafka's `ControllerStats` (the control shard's, see [`Self::report_to`]).
    stats: RefCell<Rc<ControllerStats>>,
}

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    pub fn new(
        me: BrokerId,
        registration: BrokerIdZNode,
        store: S,
        reconnect: Reconnect<S>,
        duties: D,
        clock: Rc<dyn Clock>,
    ) -> Rc<Self> {
        let (tx, rx) = local_channel::new_unbounded();
        let tx = stats::EventTx::new(tx, clock.clone());
        Rc::new(Self {
            me,
            registration,
            store: RefCell::new(Rc::new(store)),
            reconnect,
            duties,
            election: RefCell::new(Election::new(me)),
            context: RefCell::new(None),
            core: RefCell::default(),
            tx: Rc::new(tx),
            rx: RefCell::new(Some(rx)),
            session: Cell::new(1),
            term: Cell::new(0),
            clock,
            settings: RefCell::new(ControllerSettings::default()),
            stats: RefCell::default(),
        })
    }

    /// The config the controller's duties use (before [`Self::start`]).
    pub fn configure(&self, settings: ControllerSettings) {
        *self.settings.borrow_mut() = settings;
    }

    /// Record `ControllerStats` into `stats` (the control shard's), and
    /// let its scrapes read the event queue and the context.
    pub fn report_to(self: &Rc<Self>, stats: Rc<ControllerStats>) {
        self.install_probe(&stats);
        *self.stats.borrow_mut() = stats;
    }

    pub fn duties(&self) -> &D {
        &self.duties
    }

    pub fn election(&self) -> Election {
        self.election.borrow().clone()
    }

    pub fn context(&self) -> Option<ControllerContext> {
        self.context.borrow().clone()
    }

    fn store(&self) -> Rc<S> {
        self.store.borrow().clone()
    }

    /// Queue `event` for the current session (and, for controller events,
    /// the current term).
    pub fn enqueue(&self, event: Event) {
        let _ = self.tx.try_send(Tagged {
            session: self.session.get(),
            term: 0,
            event,
        });
    }

    /// Registers the broker and runs the first election: a failure here
    /// (the id taken, the store unreachable) is the broker's start-up
    /// failure. Then the queue runs until [`Event::Stop`].
    pub async fn start(self: &Rc<Self>) -> Result<(), String> {
        self.register().await?;
        self.watch_session();
        self.on_controller_change().await;
        let me = self.clone();
        glommio::spawn_local(async move { me.run().await }).detach();
        Ok(())
    }

    /// A broker's ControlledShutdown, run in turn with every other event.
    pub async fn request_controlled_shutdown(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> ShutdownAnswer {
        let reply = Reply::new();
        self.enqueue(Event::ControlledShutdown {
            broker,
            broker_epoch,
            reply: reply.clone(),
        });
        reply.take().await
    }

    /// A partition leader's AlterPartition, run in turn with every other event.
    pub async fn request_alter_partition(&self, ask: AlterAsk) -> AlterAnswer {
        let reply = Reply::new();
        self.enqueue(Event::AlterPartition {
            ask: Box::new(ask),
            reply: reply.clone(),
        });
        reply.take().await
    }

    /// A controller write (Kafka's `KafkaZkClient` controller ops): `ops`
    /// behind `check(/controller_epoch, zkVersion won)`, so a deposed
    /// controller's write never lands. A failed check means another
    /// controller was elected since: this broker resigns (Kafka's
    /// ControllerMovedException → `maybeResign`) and the write is refused.
    pub async fn write_as_controller(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, WriteError> {
        let Some(won) = self.election.borrow().won() else {
            return Err(WriteError::NotController);
        };
        let mut all = Vec::with_capacity(ops.len() + 1);
        all.push(Op::Check {
            path: paths::CONTROLLER_EPOCH.to_string(),
            version: won.epoch_zk_version,
        });
        all.extend(ops);
        match self.store().multi(all).await {
            Ok(mut results) => {
                results.remove(0);
                Ok(results)
            }
            Err(StoreError::BadVersion(p)) | Err(StoreError::NoNode(p))
                if p == paths::CONTROLLER_EPOCH =>
            {
                tracing::warn!(broker = %self.me, "controller epoch moved; resigning");
                if self.election.borrow_mut().lost() == Step::Resign {
                    self.resign();
                }
                // Learn who controls now (its watch may be pending).
                self.enqueue(Event::ControllerChange);
                Err(WriteError::Moved)
            }
            Err(e) => Err(WriteError::Store(e)),
        }
    }

    /// Clean shutdown: this session's ephemeral znodes are removed at
    /// once (the registration, and `/controller` when it is ours), as
    /// closing Kafka's ZooKeeper client does, so a restart can register
    /// right away and the others elect without waiting out the session;
    /// then the queue stops.
    pub async fn shutdown(&self) {
        let store = self.store();
        let session = store.current_session();
        for path in [paths::CONTROLLER.to_string(), paths::broker_id(self.me)] {
            if let Ok(Some(stat)) = store.exists(&path).await {
                if stat.ephemeral_owner == session {
                    let _ = store.delete(&path, Some(stat.version)).await;
                }
            }
        }
        self.enqueue(Event::Stop);
    }

    async fn run(self: Rc<Self>) {
        let Some(rx) = self.rx.borrow_mut().take() else {
            return;
        };
        while let Some(queued) = rx.recv().await {
            let t = self.dequeued(queued);
            if t.session != self.session.get() || (t.term != 0 && t.term != self.term.get()) {
                match &t.event {
                    Event::ControlledShutdown { reply, .. } => {
                        reply.put(Err(shutdown::ShutdownRefusal::NotController))
                    }
                    Event::AlterPartition { reply, .. } => {
                        reply.put(Err(ErrorCode::NOT_CONTROLLER))
                    }
                    Event::ElectLeaders { reply, .. } => reply.put(Err(ErrorCode::NOT_CONTROLLER)),
                    Event::AllocateProducerIds { reply, .. } => {
                        reply.put(Err(ErrorCode::NOT_CONTROLLER))
                    }
                    Event::AlterReassignments { reply, .. } => {
                        reply.put(Err(ErrorCode::NOT_CONTROLLER))
                    }
                    Event::ListReassignments { reply, .. } => {
                        reply.put(Err(ErrorCode::NOT_CONTROLLER))
                    }
                    _ => {}
                }
                continue;
            }
            self.stats.borrow().on_state(stats::state_of(&t.event));
            match t.event {
                Event::Stop => break,
                Event::PartitionModifications(topic) => {
                    self.on_partition_modifications(&topic, t.term).await
                }
                Event::ControlledShutdown {
                    broker,
                    broker_epoch,
                    reply,
                } => reply.put(self.controlled_shutdown(broker, broker_epoch).await),
                Event::AlterPartition { ask, reply } => reply.put(self.alter_partition(*ask).await),
                Event::ElectLeaders {
                    kind,
                    partitions,
                    reply,
                } => reply.put(self.elect_on_request(kind, partitions).await),
                Event::AutoRebalance => self.auto_rebalance().await,
                Event::AllocateProducerIds {
                    broker,
                    broker_epoch,
                    reply,
                } => reply.put(self.allocate_producer_ids(broker, broker_epoch).await),
                Event::AlterReassignments { asked, reply } => {
                    reply.put(self.alter_reassignments(asked).await)
                }
                Event::ListReassignments { asked, reply } => {
                    reply.put(self.list_reassignments(asked))
                }
                Event::ReassignmentIsrChange(tp) => {
                    if self.election.borrow().is_controller() {
                        self.on_reassignment_isr_change(tp).await
                    }
                }
                Event::DeletionAnswer { broker, errors } => {
                    if self.election.borrow().is_controller() {
                        self.on_deletion_answer(broker, errors).await
                    }
                }
                Event::LeaderAndIsrAnswer { broker, answers } => {
                    self.on_leader_and_isr_answer(broker, answers).await
                }
                Event::Startup => {
                    if let Err(e) = self.register().await {
                        tracing::error!(error = %e, "re-registering after session expiry");
                    }
                    self.watch_session();
                    self.on_controller_change().await;
                }
                Event::ControllerChange => self.on_controller_change().await,
                Event::BrokerChange => self.timed_broker_change().await,
                Event::TopicChange => self.on_topic_change().await,
                Event::AdminChange(path) => self.on_admin_change(path).await,
                Event::SessionExpired => self.on_session_expired().await,
            }
            self.stats.borrow().on_state(ControllerState::Idle);
        }
        if self.election.borrow_mut().lost() == Step::Resign {
            self.duties.resigned();
        }
    }

    async fn register(&self) -> Result<(), String> {
        let epoch =
            brokers::register_with_epoch(&*self.store(), self.me, &self.registration).await?;
        tracing::info!(broker = %self.me, epoch, "registered in ZooKeeper");
        self.duties.registered(epoch);
        Ok(())
    }

    /// Turns the firing of `watch` into `event` on the queue, unless the
    /// session that set it ended first.
    fn arm(&self, watch: Watch, event: Event, term: u64) {
        let tx = self.tx.clone();
        let session = self.session.get();
        glommio::spawn_local(async move {
            if watch.await.kind != WatchKind::SessionClosed {
                let _ = tx.try_send(Tagged {
                    session,
                    term,
                    event,
                });
            }
        })
        .detach();
    }

    fn watch_session(&self) {
        let store = self.store();
        let tx = self.tx.clone();
        let session = self.session.get();
        glommio::spawn_local(async move {
            loop {
                match store.session_event().await {
                    SessionEvent::Expired => {
                        let _ = tx.try_send(Tagged {
                            session,
                            term: 0,
                            event: Event::SessionExpired,
                        });
                        return;
                    }
                    SessionEvent::Closed => return,
                    SessionEvent::Connected | SessionEvent::Disconnected => {}
                }
            }
        })
        .detach();
    }

    /// `/controller` may have changed: watch it again, read it, and act
    /// (Kafka's `ControllerChange` / `Reelect` events).
    async fn on_controller_change(&self) {
        let store = self.store();
        match store.exists_watch(paths::CONTROLLER).await {
            Ok((_, w)) => self.arm(w, Event::ControllerChange, 0),
            Err(e) => {
                tracing::warn!(error = %e, "watching /controller");
                return;
            }
        }
        let seen = match election::read_controller_id(&*store).await {
            Ok(seen) => seen,
            Err(e) => {
                tracing::warn!(error = %e, "reading /controller");
                return;
            }
        };
        let step = self.election.borrow_mut().observe(seen);
        self.act(step).await;
        if step == Step::TryElect {
            let outcome = election::register_controller_and_increment_epoch(
                &*store,
                self.me,
                self.clock.wall_ms(),
            )
            .await;
            if let Err(e) = &outcome {
                tracing::info!(broker = %self.me, reason = %e, "not elected controller");
            }
            let step = self.election.borrow_mut().elected(outcome);
            if step == Step::Nothing {
                // Learn the winner now; if it already went, its watch
                // event is queued and the next round elects.
                if let Ok(Some(id)) = election::read_controller_id(&*store).await {
                    let step = self.election.borrow_mut().observe(Some(id));
                    self.act(step).await;
                }
            }
            self.act(step).await;
        }
        self.duties
            .controller_seen(self.election.borrow().active_controller());
    }

    async fn act(&self, step: Step) {
        match step {
            Step::Nothing | Step::TryElect => {}
            Step::Resign => self.resign(),
            Step::Failover(won) => self.failover(won).await,
        }
    }

    fn resign(&self) {
        // Every controller watch of the old term is dropped by its tag.
        self.term.set(self.term.get() + 1);
        self.context.borrow_mut().take();
        tracing::info!(broker = %self.me, "resigned as controller");
        self.duties.resigned();
    }

    /// `onControllerFailover`: a new term, the context loaded from the
    /// store, the controller's watches registered, then the duties.
    async fn failover(&self, won: Won) {
        let term = self.term.get() + 1;
        self.term.set(term);
        tracing::info!(broker = %self.me, epoch = won.epoch.0, "elected controller");
        match self.load_context(won, term).await {
            Ok(ctx) => {
                self.duties.failover(&ctx).await;
                *self.context.borrow_mut() = Some(ctx);
                self.start_state_machines().await;
                // onControllerFailover: reassignments resume (the
                // ZooKeeper ones, then those in the topic znodes), a
                // pending preferred replica election runs, the auto
                // rebalance is scheduled.
                self.initialize_reassignments().await;
                self.on_preferred_replica_election_znode().await;
                self.schedule_auto_rebalance(true);
            }
            Err(e) => {
                // Kafka's triggerControllerMove: give the role up so
                // another broker (or this one, again) elects.
                tracing::error!(error = %e, "loading the controller context; resigning");
                let _ = self.store().delete(paths::CONTROLLER, None).await;
                if self.election.borrow_mut().lost() == Step::Resign {
                    self.resign();
                }
            }
        }
    }

    async fn load_context(&self, won: Won, term: u64) -> Result<ControllerContext, String> {
        let live_brokers = self.watch_live_brokers(term).await?;
        let store = self.store();
        let (_, w) = store
            .children_watch(paths::TOPICS)
            .await
            .map_err(|e| format!("watching {}: {e}", paths::TOPICS))?;
        self.arm(w, Event::TopicChange, term);
        let topics = load_topics_concurrently(&*store)
            .await
            .map_err(|e| format!("loading topics: {e}"))?;
        for t in &topics {
            if let Ok((_, _, w)) = store.get_watch(&paths::topic(&t.name)).await {
                self.arm(w, Event::PartitionModifications(t.name.clone()), term);
            }
        }
        let (marked, w) = match store.children_watch(paths::DELETE_TOPICS).await {
            Ok((marked, w)) => (marked, Some(w)),
            Err(_) => (Vec::new(), None),
        };
        if let Some(w) = w {
            self.arm(w, Event::AdminChange(paths::DELETE_TOPICS), term);
        }
        for path in [
            paths::ISR_CHANGE_NOTIFICATION,
            paths::LOG_DIR_EVENT_NOTIFICATION,
        ] {
            if let Ok((_, w)) = store.children_watch(path).await {
                self.arm(w, Event::AdminChange(path), term);
            }
        }
        for path in [
            paths::REASSIGN_PARTITIONS,
            paths::PREFERRED_REPLICA_ELECTION,
        ] {
            if let Ok((_, w)) = store.exists_watch(path).await {
                self.arm(w, Event::AdminChange(path), term);
            }
        }
        let mut ctx = ControllerContext {
            epoch: won.epoch.0,
            epoch_zk_version: won.epoch_zk_version,
            live_brokers,
            ..Default::default()
        };
        for t in topics {
            ctx.add_topic(&t.name, t.topic_id);
            for (p, (adding, removing)) in &t.reassigning {
                ctx.reassignments.insert(
                    TopicPartition::new(t.name.as_str(), *p),
                    super::context::Moving {
                        adding: adding.clone(),
                        removing: removing.clone(),
                    },
                );
            }
            for p in t.partitions {
                let tp = TopicPartition::new(t.name.as_str(), p.partition);
                if p.zk_version.0 >= 0 {
                    ctx.leadership
                        .insert(tp.clone(), partitions::leadership_from(&p));
                }
                ctx.assignments.insert(tp, p.replicas);
            }
        }
        // Markers of topics that exist; the others are cleared by the
        // first deletion pass.
        ctx.topics_to_delete = marked
            .into_iter()
            .filter(|t| ctx.topic_ids.contains_key(t))
            .collect();
        if !self.settings.borrow().delete_topic_enable {
            ctx.topics_to_delete.clear();
        }
        Ok(ctx)
    }

    async fn watch_live_brokers(&self, term: u64) -> Result<Vec<LiveBroker>, String> {
        let store = self.store();
        let (names, w) = store
            .children_watch(paths::BROKER_IDS)
            .await
            .map_err(|e| format!("watching {}: {e}", paths::BROKER_IDS))?;
        self.arm(w, Event::BrokerChange, term);
        let mut ids: Vec<BrokerId> = Vec::with_capacity(names.len());
        for n in &names {
            match n.parse() {
                Ok(id) => ids.push(id),
                Err(_) => {
                    tracing::warn!(path = %format!("{}/{n}", paths::BROKER_IDS), "ignoring a broker znode whose name is not an id")
                }
            }
        }
        ids.sort_unstable();
        brokers::read_live_brokers(&*store, &ids)
            .await
            .map_err(|e| format!("reading live brokers: {e}"))
    }

    /// `processBrokerChange`: brokers new, gone, or re-registered with a
    /// new epoch (bounced: failed then started).
    async fn on_broker_change(&self) {
        if !self.election.borrow().is_controller() {
            return;
        }
        let term = self.term.get();
        let live = match self.watch_live_brokers(term).await {
            Ok(live) => live,
            Err(e) => {
                tracing::warn!(error = %e, "broker change");
                return;
            }
        };
        // `processBrokerChange`, decided by the controller core.
        if self.context.borrow().is_none() {
            return;
        }
        let event = crate::controller::core::ControllerEvent::BrokerChange {
            token: self.core_token(),
            live,
            default_unclean: self.settings.borrow().unclean_leader_election,
        };
        self.run_core(event, |_| None::<()>).await;
    }

    async fn on_topic_change(&self) {
        if !self.election.borrow().is_controller() {
            return;
        }
        let term = self.term.get();
        match self.store().children_watch(paths::TOPICS).await {
            Ok((names, w)) => {
                self.arm(w, Event::TopicChange, term);
                self.on_topics_listed(names).await;
            }
            Err(e) => tracing::warn!(error = %e, "re-reading the topics"),
        }
    }

    /// The session is gone: resign before anything else, open a new
    /// session, register again (a new broker epoch) and rejoin the
    /// election (Kafka's `Expire` then `RegisterBrokerAndReelect`).
    async fn on_session_expired(&self) {
        tracing::warn!(broker = %self.me, "ZooKeeper session expired");
        if self.election.borrow_mut().lost() == Step::Resign {
            self.resign();
        }
        self.duties.controller_seen(None);
        let store = loop {
            match (self.reconnect)().await {
                Ok(s) => break s,
                Err(e) => {
                    tracing::warn!(error = %e, "opening a new ZooKeeper session");
                    glommio::timer::sleep(RECONNECT_BACKOFF).await;
                }
            }
        };
        *self.store.borrow_mut() = Rc::new(store);
        self.session.set(self.session.get() + 1);
        self.enqueue(Event::Startup);
    }
}

/// Every topic with its partition states, the topics read concurrently on
/// the one session (ZooKeeper pipelines them; Kafka's controller reads
/// them with async batched requests): failover time is then a few round
/// trips, not one per partition.
async fn load_topics_concurrently<S: MetadataStore>(
    store: &S,
) -> Result<Vec<TopicInfo>, super::admin_error::AdminError> {
    use super::admin_error::AdminError;
    let names = match store.children(paths::TOPICS).await {
        Ok(names) => names,
        Err(StoreError::NoNode(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let loads: Vec<Local<'_, Result<TopicInfo, AdminError>>> = names
        .iter()
        .map(|n| -> Local<'_, _> { Box::pin(topic_admin::load_topic(store, n)) })
        .collect();
    let mut topics = Vec::with_capacity(names.len());
    for r in join_all(loads).await {
        match r {
            Ok(info) => topics.push(info),
            // Deleted between listing and reading.
            Err(AdminError::UnknownTopicOrPartition(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(topics)
}

mod core_driver;
mod deletion;
mod events;
mod isr;
mod log_dirs;
mod partitions;
mod preferred;
mod producer_ids;
mod reassign;
mod shutdown;
mod stats;
pub use isr::{AlterAnswer, AlterAsk, AlterItem};
pub use preferred::ElectAnswer;
pub use producer_ids::AllocateAnswer;
pub use reassign::{ListAnswer, ReassignAnswer, ReassignAsk};
pub use shutdown::ShutdownRefusal;

#[cfg(test)]
mod tests;
