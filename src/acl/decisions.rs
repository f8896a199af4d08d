//! `[pure]` One connection's authorization decisions: what the authorizer
//! answered for (operation, resource type, name), kept while the shard's
//! copy of the ACLs is the same one (an ACL change publishes a new
//! [`AclCache`], which empties this), so a connection producing to the
//! same topics matches ACLs once, not once per request. Kafka's
//! `AclAuthorizer` matches per request; the answers are the same because
//! a decision depends only on the ACLs, the session (fixed per connection:
//! re-authentication may not change the principal, KIP-368) and the
//! static `super.users` / `allow.everyone.if.no.acl.found`.
//!
//! Bounded: past [`MAX_DECISIONS`] names the map starts over, so a client
//! naming many resources costs matching, not memory.

use std::collections::HashMap;
use std::sync::Arc;

use super::authorizer::{AclCache, Session};
use super::{Operation, ResourceType};

/// How many decisions one connection keeps at most.
pub const MAX_DECISIONS: usize = 1024;

/// A connection's session and its decisions under one ACL cache.
#[derive(Debug, Default)]
pub struct Decisions {
    session: Option<Session>,
    acls: Option<Arc<AclCache>>,
    by_kind: HashMap<(Operation, ResourceType), HashMap<Box<str>, bool>>,
}

impl Decisions {
    /// The connection's session, made by `make` on first use.
    pub fn session(&mut self, make: impl FnOnce() -> Session) -> &Session {
        self.session.get_or_insert_with(make)
    }

    /// The decision for `op` on `name`, from `decide` (given the session,
    /// made by `make` on first use) unless the same ACL cache answered it
    /// already.
    pub fn decide(
        &mut self,
        acls: &Arc<AclCache>,
        (op, resource_type, name): (Operation, ResourceType, &str),
        make: impl FnOnce() -> Session,
        decide: impl FnOnce(&Session) -> bool,
    ) -> bool {
        if !self.acls.as_ref().is_some_and(|a| Arc::ptr_eq(a, acls)) {
            self.by_kind.clear();
            self.acls = Some(Arc::clone(acls));
        }
        if let Some(&d) = self
            .by_kind
            .get(&(op, resource_type))
            .and_then(|m| m.get(name))
        {
            return d;
        }
        let d = decide(self.session.get_or_insert_with(make));
        if self.len() >= MAX_DECISIONS {
            self.by_kind.clear();
        }
        self.by_kind
            .entry((op, resource_type))
            .or_default()
            .insert(name.into(), d);
        d
    }

    /// How many decisions are kept.
    pub fn len(&self) -> usize {
        self.by_kind.values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_kind.values().all(HashMap::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn counted<'a>(calls: &'a Cell<u32>, answer: bool) -> impl FnOnce(&Session) -> bool + 'a {
        move |s| {
            assert_eq!(s.principal, "User:alice");
            calls.set(calls.get() + 1);
            answer
        }
    }

    fn alice() -> Session {
        Session {
            principal: "User:alice".into(),
            host: "127.0.0.1".into(),
        }
    }

    /// `d.decide` on (op, type, name) with alice's session.
    fn ask(
        d: &mut Decisions,
        acls: &Arc<AclCache>,
        q: (Operation, ResourceType, &str),
        f: impl FnOnce(&Session) -> bool,
    ) -> bool {
        d.decide(acls, q, alice, f)
    }

    #[test]
    fn the_same_question_under_the_same_acls_is_answered_once() {
        let acls = Arc::new(AclCache::default());
        let mut d = Decisions::default();
        let calls = Cell::new(0);
        let t = ResourceType::Topic;
        assert!(ask(
            &mut d,
            &acls,
            (Operation::Write, t, "orders"),
            counted(&calls, true)
        ));
        assert!(ask(
            &mut d,
            &acls,
            (Operation::Write, t, "orders"),
            counted(&calls, false)
        ));
        assert_eq!(calls.get(), 1, "the second answer came from the cache");
        // Another operation, resource type or name is another question.
        assert!(!ask(
            &mut d,
            &acls,
            (Operation::Read, t, "orders"),
            counted(&calls, false)
        ));
        assert!(!ask(
            &mut d,
            &acls,
            (Operation::Write, t, "other"),
            counted(&calls, false)
        ));
        let g = ResourceType::Group;
        assert!(!ask(
            &mut d,
            &acls,
            (Operation::Write, g, "orders"),
            counted(&calls, false)
        ));
        assert_eq!(calls.get(), 4);
        assert_eq!(d.len(), 4);
    }

    #[test]
    fn new_acls_empty_the_cache() {
        let old = Arc::new(AclCache::default());
        let mut d = Decisions::default();
        let calls = Cell::new(0);
        let t = ResourceType::Topic;
        assert!(ask(
            &mut d,
            &old,
            (Operation::Write, t, "orders"),
            counted(&calls, true)
        ));
        let new = Arc::new(AclCache::default());
        assert!(!ask(
            &mut d,
            &new,
            (Operation::Write, t, "orders"),
            counted(&calls, false)
        ));
        assert_eq!(calls.get(), 2, "a changed ACL cache is asked again");
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn the_cache_is_bounded() {
        let acls = Arc::new(AclCache::default());
        let mut d = Decisions::default();
        for i in 0..(MAX_DECISIONS * 3) {
            let name = format!("t{i}");
            ask(
                &mut d,
                &acls,
                (Operation::Describe, ResourceType::Topic, &name),
                |_| true,
            );
            assert!(d.len() <= MAX_DECISIONS);
        }
    }

    #[test]
    fn the_session_is_made_once() {
        let mut d = Decisions::default();
        let s = d.session(alice);
        assert_eq!(s.principal, "User:alice");
        let s = d.session(|| unreachable!("made once"));
        assert_eq!(s.host, "127.0.0.1");
    }
}
