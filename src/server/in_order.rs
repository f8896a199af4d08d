//! `[pure]` Response sequencer: requests on one connection may finish in
//! any order, but Kafka clients match responses by position as well as
//! correlation id, so responses leave in request order.

use std::collections::BTreeMap;

/// Sequence numbers are assigned on arrival and released in that order.
#[derive(Debug)]
pub struct InOrder<T> {
    /// Next sequence number to assign.
    next_request: u64,
    /// Next sequence number to release.
    next_release: u64,
    /// Finished but not yet releasable (a predecessor is still running).
    finished: BTreeMap<u64, T>,
}

impl<T> Default for InOrder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> InOrder<T> {
    pub fn new() -> Self {
        Self {
            next_request: 0,
            next_release: 0,
            finished: BTreeMap::new(),
        }
    }

    /// A request arrived: its sequence number.
    pub fn on_request(&mut self) -> u64 {
        let seq = self.next_request;
        self.next_request += 1;
        self.debug_check();
        seq
    }

    /// Request `seq` finished with `outcome`. Unknown or repeated sequence
    /// numbers are our bug, not the client's.
    pub fn on_complete(&mut self, seq: u64, outcome: T) {
        debug_assert!(
            seq >= self.next_release && seq < self.next_request,
            "seq {seq}"
        );
        debug_assert!(!self.finished.contains_key(&seq), "seq {seq} twice");
        self.finished.insert(seq, outcome);
        self.debug_check();
    }

    /// The next outcome in request order, if it has finished.
    pub fn pop_ready(&mut self) -> Option<T> {
        let outcome = self.finished.remove(&self.next_release)?;
        self.next_release += 1;
        self.debug_check();
        Some(outcome)
    }

    /// Requests accepted but not yet released.
    pub fn in_flight(&self) -> usize {
        (self.next_request - self.next_release) as usize
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        if self.next_release > self.next_request {
            return Err("released more than requested".into());
        }
        match (
            self.finished.keys().next(),
            self.finished.keys().next_back(),
        ) {
            (Some(&lo), Some(&hi)) if lo < self.next_release || hi >= self.next_request => {
                Err(format!("finished {lo}..={hi} outside window"))
            }
            _ => Ok(()),
        }
    }

    fn debug_check(&self) {
        #[cfg(debug_assertions)]
        if let Err(e) = self.check_invariants() {
            panic!("InOrder invariant: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_late_first_response_holds_back_the_ones_after_it() {
        let mut q = InOrder::new();
        let (a, b, c) = (q.on_request(), q.on_request(), q.on_request());
        q.on_complete(c, "c");
        q.on_complete(b, "b");
        assert_eq!(q.pop_ready(), None);
        assert_eq!(q.in_flight(), 3);
        q.on_complete(a, "a");
        assert_eq!(q.pop_ready(), Some("a"));
        assert_eq!(q.pop_ready(), Some("b"));
        assert_eq!(q.pop_ready(), Some("c"));
        assert_eq!(q.pop_ready(), None);
        assert_eq!(q.in_flight(), 0);
    }

    proptest! {
        #[test]
        fn any_completion_order_releases_in_request_order(
            order in Just((0..200u64).collect::<Vec<_>>()).prop_shuffle()
        ) {
            let mut q = InOrder::new();
            for _ in 0..order.len() {
                q.on_request();
            }
            let mut released = Vec::new();
            for seq in order {
                q.on_complete(seq, seq);
                while let Some(s) = q.pop_ready() {
                    released.push(s);
                }
                prop_assert!(q.check_invariants().is_ok());
            }
            prop_assert_eq!(released, (0..200).collect::<Vec<_>>());
        }
    }
}
