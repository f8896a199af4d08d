//! `[io]` The store the control shard runs on: the embedded one (no
//! `zookeeper.connect`) or a real ZooKeeper session. One concrete type so
//! the controller and the control shard need no type parameter; every
//! call is forwarded.

use std::cell::RefCell;
use std::rc::Rc;

use super::client::ZkStore;
use super::embedded::EmbeddedStore;
use super::store::{
    CreateMode, MetadataStore, Op, OpResult, SessionWatch, Stat, StoreError, Watch,
};

#[derive(Clone)]
pub enum AnyStore {
    Embedded(EmbeddedStore),
    /// The broker's current session: after an expiry the new session
    /// replaces the old one here, so every holder moves over to it.
    Zk(Rc<RefCell<ZkStore>>),
}

impl AnyStore {
    pub fn zookeeper(store: ZkStore) -> Self {
        Self::Zk(Rc::new(RefCell::new(store)))
    }

    pub fn is_zookeeper(&self) -> bool {
        matches!(self, Self::Zk(_))
    }

    /// A new ZooKeeper session with the same settings, installed for every
    /// holder of this store (Kafka's `ZooKeeperClient.reinitialize`).
    pub async fn renew_session(&self) -> Result<(), StoreError> {
        match self {
            Self::Embedded(_) => Ok(()),
            Self::Zk(cell) => {
                let old = cell.borrow().clone();
                let new = old.reconnect().await?;
                *cell.borrow_mut() = new;
                Ok(())
            }
        }
    }
}

macro_rules! forward {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            AnyStore::Embedded($s) => $call,
            AnyStore::Zk(cell) => {
                // A clone (one client, shared): no borrow held across await.
                let $s = &cell.borrow().clone();
                $call
            }
        }
    };
}

impl MetadataStore for AnyStore {
    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, StoreError> {
        forward!(self, s => s.create(path, data, mode).await)
    }
    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat), StoreError> {
        forward!(self, s => s.get(path).await)
    }
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<Stat, StoreError> {
        forward!(self, s => s.set(path, data, expected_version).await)
    }
    async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<(), StoreError> {
        forward!(self, s => s.delete(path, expected_version).await)
    }
    async fn exists(&self, path: &str) -> Result<Option<Stat>, StoreError> {
        forward!(self, s => s.exists(path).await)
    }
    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        forward!(self, s => s.children(path).await)
    }
    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        forward!(self, s => s.multi(ops).await)
    }
    async fn get_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch), StoreError> {
        forward!(self, s => s.get_watch(path).await)
    }
    async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), StoreError> {
        forward!(self, s => s.exists_watch(path).await)
    }
    async fn children_watch(&self, path: &str) -> Result<(Vec<String>, Watch), StoreError> {
        forward!(self, s => s.children_watch(path).await)
    }
    fn current_session(&self) -> i64 {
        forward!(self, s => s.current_session())
    }
    fn session_event(&self) -> SessionWatch {
        forward!(self, s => s.session_event())
    }
}
