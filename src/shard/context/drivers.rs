//! `[drv]` The subsystem drivers a shard's context hands out, each built
//! on the context when asked: the connection side of partition work
//! ([`Datapath`]), the group and transaction coordinators' drivers, KIP-890
//! verification, and the control shard's client. The context names none
//! of them otherwise, so they use one another through it.

use std::rc::Rc;

use super::ShardContext;
use crate::shard::control::control_client::ControlClient;
use crate::shard::datapath::Datapath;
use crate::shard::group::group_driver::GroupDriver;
use crate::shard::txn::txn_driver::TxnDriver;
use crate::shard::txn::txn_verify::TxnVerifier;

impl ShardContext {
    /// The connection side of partition work (fan out to owners, park in
    /// the purgatory).
    pub fn datapath(self: &Rc<Self>) -> Datapath {
        Datapath::new(self)
    }

    /// Send a group's call to its coordinator's shard; serve one here.
    pub fn group_driver(self: &Rc<Self>) -> GroupDriver {
        GroupDriver::new(self)
    }

    /// Send a transaction call to its coordinator's shard; serve one here.
    pub fn txn_driver(self: &Rc<Self>) -> TxnDriver {
        TxnDriver::new(self)
    }

    /// KIP-890 verification of transactional appends.
    pub fn txn_verifier(self: &Rc<Self>) -> TxnVerifier {
        TxnVerifier::new(self)
    }

    /// Ask the control shard.
    pub fn control_client(&self) -> ControlClient<'_> {
        ControlClient::new(self)
    }
}
