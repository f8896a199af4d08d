//! `[pure]` Incremental fetch sessions (KIP-227), one bounded cache per shard.
//!
//! Sessions live on the shard that owns the client's connection: a client that
//! reconnects elsewhere gets FETCH_SESSION_ID_NOT_FOUND and falls back to a
//! full fetch, as it would after a Kafka broker evicted its session. Session
//! ids carry the shard index in their top bits so shards never collide.
//!
//! Request metadata (Kafka's FetchMetadata):
//! - `session_id = 0, epoch = -1`: sessionless full fetch.
//! - `session_id = 0, epoch = 0`: full fetch that opens a session.
//! - `session_id = S, epoch = -1`: close S, then a sessionless full fetch.
//! - `session_id = S, epoch = 0`: close S, then a full fetch that opens a new
//!   session (Kafka's `FetchManager.newContext`; the Java client and the
//!   replica fetcher send it after an error, `nextCloseExistingAttemptNew`).
//! - `session_id = S, epoch = N > 0`: incremental fetch on S; N must equal the
//!   epoch we expect next (INVALID_FETCH_SESSION_EPOCH otherwise).
//!
//! Cache size: `max.incremental.fetch.session.cache.slots` (Kafka default
//! 1000), least recently used evicted first.

use crate::types::TopicPartition;
use std::collections::BTreeMap;

pub const FINAL_EPOCH: i32 = -1;
pub const INITIAL_EPOCH: i32 = 0;
/// Kafka default of `max.incremental.fetch.session.cache.slots`.
pub const DEFAULT_CACHE_SLOTS: usize = 1000;

/// Kafka error codes this module returns.
pub const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
pub const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

/// What the client asked for one partition (Kafka's `CachedPartition`
/// keeps the same: an incremental fetch that leaves a partition out reads
/// it as last asked, `last_fetched_epoch` and the follower's log start
/// offset included, so a follower still gets `diverging_epoch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionFetch {
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    /// v12+ (-1 otherwise).
    pub last_fetched_epoch: i32,
    /// v5+ (-1 otherwise): the follower's log start offset.
    pub log_start_offset: i64,
}

/// What the last response told the client about a partition, so an
/// incremental response can leave out partitions with nothing new.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SentState {
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
}

#[derive(Debug, Clone)]
struct Session {
    next_epoch: i32,
    last_used_tick: u64,
    partitions: BTreeMap<TopicPartition, (PartitionFetch, Option<SentState>)>,
}

/// The decision for one Fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionDecision {
    /// Full fetch of exactly the request's partitions. `session_id` is 0 when
    /// no session was created (sessionless, or the cache had no room).
    Full { session_id: i32 },
    /// Incremental fetch: read every partition of the session; answer only
    /// those with news.
    Incremental { session_id: i32 },
    /// Top-level error, no partitions read.
    Error { error_code: i16 },
}

#[derive(Debug)]
pub struct FetchSessionCache {
    shard_index: u16,
    slots: usize,
    next_id: u32,
    tick: u64,
    sessions: BTreeMap<i32, Session>,
}

impl FetchSessionCache {
    pub fn new(shard_index: u16, slots: usize) -> Self {
        Self {
            shard_index,
            slots,
            next_id: 1,
            tick: 0,
            sessions: BTreeMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    fn new_session_id(&mut self) -> i32 {
        // 8 bits of shard, 23 bits of counter; positive, never 0.
        loop {
            let counter = self.next_id & 0x7F_FFFF;
            self.next_id = self.next_id.wrapping_add(1);
            if counter == 0 {
                continue;
            }
            let id = (((self.shard_index as u32) & 0xFF) << 23 | counter) as i32;
            if !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    fn evict_if_full(&mut self) -> bool {
        if self.slots == 0 {
            return false;
        }
        if self.sessions.len() < self.slots {
            return true;
        }
        let lru = self
            .sessions
            .iter()
            .min_by_key(|(_, s)| s.last_used_tick)
            .map(|(id, _)| *id);
        if let Some(id) = lru {
            self.sessions.remove(&id);
        }
        true
    }

    /// Applies a Fetch request's session fields and partition lists.
    /// `partitions` are the request's (added or updated) partitions;
    /// `forgotten` the partitions to drop (incremental only).
    pub fn on_fetch(
        &mut self,
        session_id: i32,
        epoch: i32,
        partitions: &[(TopicPartition, PartitionFetch)],
        forgotten: &[TopicPartition],
    ) -> SessionDecision {
        self.tick += 1;
        if session_id != 0 && (epoch == FINAL_EPOCH || epoch == INITIAL_EPOCH) {
            // A full fetch naming a session closes it first.
            self.sessions.remove(&session_id);
        }
        if session_id == 0 || epoch == INITIAL_EPOCH {
            return match epoch {
                FINAL_EPOCH => SessionDecision::Full { session_id: 0 },
                INITIAL_EPOCH => {
                    if !self.evict_if_full() {
                        return SessionDecision::Full { session_id: 0 };
                    }
                    let id = self.new_session_id();
                    let parts = partitions
                        .iter()
                        .map(|(tp, f)| (tp.clone(), (*f, None)))
                        .collect();
                    self.sessions.insert(
                        id,
                        Session {
                            next_epoch: 1,
                            last_used_tick: self.tick,
                            partitions: parts,
                        },
                    );
                    SessionDecision::Full { session_id: id }
                }
                _ => SessionDecision::Error {
                    error_code: INVALID_FETCH_SESSION_EPOCH,
                },
            };
        }
        if epoch == FINAL_EPOCH {
            self.sessions.remove(&session_id);
            return SessionDecision::Full { session_id: 0 };
        }
        let tick = self.tick;
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return SessionDecision::Error {
                error_code: FETCH_SESSION_ID_NOT_FOUND,
            };
        };
        if epoch != session.next_epoch {
            return SessionDecision::Error {
                error_code: INVALID_FETCH_SESSION_EPOCH,
            };
        }
        session.next_epoch = if session.next_epoch == i32::MAX {
            1
        } else {
            session.next_epoch + 1
        };
        session.last_used_tick = tick;
        for tp in forgotten {
            session.partitions.remove(tp);
        }
        for (tp, f) in partitions {
            let entry = session.partitions.entry(tp.clone()).or_insert((*f, None));
            entry.0 = *f;
        }
        SessionDecision::Incremental { session_id }
    }

    /// The partitions an incremental fetch reads, in a stable order.
    pub fn session_partitions(&self, session_id: i32) -> Vec<(TopicPartition, PartitionFetch)> {
        self.sessions
            .get(&session_id)
            .map(|s| {
                s.partitions
                    .iter()
                    .map(|(tp, (f, _))| (tp.clone(), *f))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Records what a response says about a partition and tells whether an
    /// incremental response must include it (Kafka's
    /// `CachedPartition.maybeUpdateResponseData`: records, an error, or a
    /// changed HW / LSO / log start offset).
    pub fn must_respond(
        &mut self,
        session_id: i32,
        tp: &TopicPartition,
        sent: SentState,
        has_records: bool,
        error_code: i16,
    ) -> bool {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return true;
        };
        let Some(entry) = session.partitions.get_mut(tp) else {
            return true;
        };
        let changed = entry.1 != Some(sent);
        entry.1 = Some(sent);
        changed || has_records || error_code != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn pf(off: i64) -> PartitionFetch {
        PartitionFetch {
            fetch_offset: off,
            partition_max_bytes: 1 << 20,
            current_leader_epoch: -1,
            last_fetched_epoch: -1,
            log_start_offset: -1,
        }
    }

    fn open(cache: &mut FetchSessionCache, parts: &[i32]) -> i32 {
        let req: Vec<_> = parts.iter().map(|p| (tp(*p), pf(0))).collect();
        match cache.on_fetch(0, INITIAL_EPOCH, &req, &[]) {
            SessionDecision::Full { session_id } => session_id,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn session_id_zero_with_final_epoch_is_sessionless() {
        let mut c = FetchSessionCache::new(0, 10);
        let d = c.on_fetch(0, FINAL_EPOCH, &[(tp(0), pf(0))], &[]);
        assert_eq!(d, SessionDecision::Full { session_id: 0 });
        assert!(c.is_empty());
    }

    #[test]
    fn initial_epoch_opens_a_session_with_the_request_partitions() {
        let mut c = FetchSessionCache::new(3, 10);
        let id = open(&mut c, &[0, 1]);
        assert!(id > 0);
        assert_eq!((id >> 23) & 0xFF, 3, "shard index in the id");
        assert_eq!(c.session_partitions(id).len(), 2);
    }

    #[test]
    fn incremental_fetch_requires_the_next_epoch() {
        let mut c = FetchSessionCache::new(0, 10);
        let id = open(&mut c, &[0]);
        let table = [
            (1, SessionDecision::Incremental { session_id: id }),
            (
                1,
                SessionDecision::Error {
                    error_code: INVALID_FETCH_SESSION_EPOCH,
                },
            ),
            (2, SessionDecision::Incremental { session_id: id }),
            (
                5,
                SessionDecision::Error {
                    error_code: INVALID_FETCH_SESSION_EPOCH,
                },
            ),
            (3, SessionDecision::Incremental { session_id: id }),
        ];
        for (epoch, want) in table {
            assert_eq!(c.on_fetch(id, epoch, &[], &[]), want, "epoch {epoch}");
        }
    }

    #[test]
    fn unknown_session_is_not_found() {
        let mut c = FetchSessionCache::new(0, 10);
        assert_eq!(
            c.on_fetch(12345, 1, &[], &[]),
            SessionDecision::Error {
                error_code: FETCH_SESSION_ID_NOT_FOUND
            }
        );
    }

    #[test]
    fn session_id_zero_with_positive_epoch_is_invalid() {
        let mut c = FetchSessionCache::new(0, 10);
        assert_eq!(
            c.on_fetch(0, 4, &[], &[]),
            SessionDecision::Error {
                error_code: INVALID_FETCH_SESSION_EPOCH
            }
        );
    }

    #[test]
    fn incremental_fetch_adds_updates_and_forgets_partitions() {
        let mut c = FetchSessionCache::new(0, 10);
        let id = open(&mut c, &[0, 1]);
        c.on_fetch(id, 1, &[(tp(1), pf(50)), (tp(2), pf(7))], &[tp(0)]);
        let parts = c.session_partitions(id);
        let got: Vec<(i32, i64)> = parts
            .iter()
            .map(|(t, f)| (t.partition, f.fetch_offset))
            .collect();
        assert_eq!(got, vec![(1, 50), (2, 7)]);
    }

    #[test]
    fn initial_epoch_with_a_session_id_replaces_that_session() {
        let mut c = FetchSessionCache::new(0, 10);
        let old = open(&mut c, &[0]);
        let d = c.on_fetch(old, INITIAL_EPOCH, &[(tp(1), pf(3))], &[]);
        let SessionDecision::Full { session_id: new } = d else {
            panic!("unexpected {d:?}");
        };
        assert_ne!(new, old);
        assert_eq!(c.len(), 1, "the old session is closed");
        assert_eq!(c.session_partitions(new), vec![(tp(1), pf(3))]);
        // An unknown id with INITIAL_EPOCH is a full fetch too.
        assert!(matches!(
            c.on_fetch(424242, INITIAL_EPOCH, &[(tp(0), pf(0))], &[]),
            SessionDecision::Full { session_id } if session_id != 0
        ));
    }

    #[test]
    fn a_session_remembers_the_followers_last_fetched_epoch() {
        let mut c = FetchSessionCache::new(0, 10);
        let first = PartitionFetch {
            last_fetched_epoch: 4,
            log_start_offset: 2,
            ..pf(10)
        };
        let id = match c.on_fetch(0, INITIAL_EPOCH, &[(tp(0), first)], &[]) {
            SessionDecision::Full { session_id } => session_id,
            other => panic!("unexpected {other:?}"),
        };
        c.on_fetch(id, 1, &[], &[]);
        assert_eq!(c.session_partitions(id), vec![(tp(0), first)]);
    }

    #[test]
    fn final_epoch_closes_the_session() {
        let mut c = FetchSessionCache::new(0, 10);
        let id = open(&mut c, &[0]);
        assert_eq!(
            c.on_fetch(id, FINAL_EPOCH, &[], &[]),
            SessionDecision::Full { session_id: 0 }
        );
        assert!(c.is_empty());
    }

    #[test]
    fn full_cache_evicts_the_least_recently_used_session() {
        let mut c = FetchSessionCache::new(0, 2);
        let a = open(&mut c, &[0]);
        let b = open(&mut c, &[1]);
        c.on_fetch(a, 1, &[], &[]); // a used more recently than b
        let n = open(&mut c, &[2]);
        assert_eq!(c.len(), 2);
        assert!(!c.session_partitions(a).is_empty());
        assert!(c.session_partitions(b).is_empty(), "b evicted");
        assert!(!c.session_partitions(n).is_empty());
    }

    #[test]
    fn incremental_responses_skip_unchanged_partitions() {
        let mut c = FetchSessionCache::new(0, 10);
        let id = open(&mut c, &[0]);
        let s = SentState {
            high_watermark: 5,
            last_stable_offset: 5,
            log_start_offset: 0,
        };
        assert!(
            c.must_respond(id, &tp(0), s, false, 0),
            "first answer always"
        );
        assert!(!c.must_respond(id, &tp(0), s, false, 0), "nothing new");
        assert!(c.must_respond(id, &tp(0), s, true, 0), "records");
        assert!(c.must_respond(id, &tp(0), s, false, 6), "error");
        let s2 = SentState {
            high_watermark: 6,
            ..s
        };
        assert!(c.must_respond(id, &tp(0), s2, false, 0), "hw moved");
    }
}
