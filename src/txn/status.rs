//! `[pure]` Kafka's `TransactionState` (apache/kafka 3.9
//! `TransactionMetadata.scala`): the eight states of a transactional id
//! with their ids (stored in `__transaction_state`), names (shown by
//! DescribeTransactions / ListTransactions) and transition table. Shared by
//! the record codec and the state machine.

/// Kafka's `TransactionState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TxnState {
    /// No transaction yet, or a new producer epoch was handed out.
    Empty,
    /// Partitions were added; the transaction runs.
    Ongoing,
    /// EndTxn(commit) was logged; commit markers are being written.
    PrepareCommit,
    /// EndTxn(abort) or a fence was logged; abort markers are being written.
    PrepareAbort,
    /// All commit markers were written.
    CompleteCommit,
    /// All abort markers were written.
    CompleteAbort,
    /// The transactional id expired and is being removed.
    Dead,
    /// A running transaction's producer is being fenced (epoch bumped)
    /// before it is aborted. Only ever a pending state.
    PrepareEpochFence,
}

impl TxnState {
    /// Every state, by id.
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    /// The byte stored as `TransactionStatus`.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// Kafka's `TransactionState.fromId`; `None` for an unknown id.
    pub fn from_id(id: i8) -> Option<Self> {
        usize::try_from(id)
            .ok()
            .and_then(|i| TxnState::ALL.get(i))
            .copied()
    }

    /// The name DescribeTransactions and ListTransactions report.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// Kafka's `TransactionState.fromName` (ListTransactions' state filter).
    pub fn from_name(name: &str) -> Option<Self> {
        TxnState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The states a transaction may come from into `self` (Kafka's
    /// `validPreviousStates`).
    pub fn valid_previous_states(self) -> &'static [TxnState] {
        use TxnState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            PrepareAbort => &[Ongoing, PrepareEpochFence],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    /// Whether a transaction in `self` may move to `next`.
    pub fn can_move_to(self, next: TxnState) -> bool {
        next.valid_previous_states().contains(&self)
    }

    /// CompleteCommit or CompleteAbort: a transaction's last step.
    pub fn is_complete(self) -> bool {
        matches!(self, TxnState::CompleteCommit | TxnState::CompleteAbort)
    }

    /// Whether a transactional id idle in this state may expire
    /// (`transactional.id.expiration.ms`; Kafka's `isExpirationAllowed`).
    pub fn is_expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }
}
