//! `[drv]` Authorization of one request, as Kafka 3.9's `AuthHelper`
//! (`core/src/main/scala/kafka/server/AuthHelper.scala`: `authorize`,
//! `authorizeClusterOperation`, `filterByAuthorized`,
//! `authorizedOperations`): the request's principal and client address
//! checked with the shard's authorizer ([`crate::acl::authorizer::Policy`])
//! against the ACLs of the snapshot the request started with — the
//! shard's own read-only copy, no lock and no cross-shard call.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::Request;
use crate::acl::authorizer::{AclCache, Policy, Session};
use crate::acl::decisions::Decisions;
use crate::acl::{java_host_address, Operation, ResourceType, CLUSTER_NAME};
use crate::shard::ShardContext;

/// What a handler asks: may this request do `op` on a resource?
pub struct Authz<'a> {
    policy: &'a Policy,
    acls: Arc<AclCache>,
    /// The connection's decisions and session; `None` without an
    /// authorizer (everything allowed).
    decisions: Option<Rc<RefCell<Decisions>>>,
    principal: Rc<str>,
    client_host: Rc<str>,
}

impl<'a> Authz<'a> {
    pub fn new(ctx: &'a ShardContext, req: &Request) -> Self {
        let policy = &ctx.authorizer;
        Self {
            policy,
            acls: ctx.snapshot().acls.clone(),
            decisions: policy.enabled.then(|| Rc::clone(&req.decisions)),
            principal: Rc::clone(&req.principal),
            client_host: Rc::clone(&req.client_host),
        }
    }

    /// Whether an authorizer is configured (`authorizer.class.name`).
    pub fn enabled(&self) -> bool {
        self.decisions.is_some()
    }

    fn make_session(&self) -> Session {
        Session {
            principal: self.principal.to_string(),
            host: java_host_address(&self.client_host),
        }
    }

    /// The connection's session (for the uncached questions).
    fn session(&self, decisions: &RefCell<Decisions>) -> Session {
        decisions
            .borrow_mut()
            .session(|| self.make_session())
            .clone()
    }

    /// `AuthHelper.authorize` on a LITERAL resource (the connection's
    /// cached decision under these ACLs, `acl::decisions`).
    pub fn allowed(&self, op: Operation, resource_type: ResourceType, name: &str) -> bool {
        match &self.decisions {
            None => true,
            Some(d) => d.borrow_mut().decide(
                &self.acls,
                (op, resource_type, name),
                || self.make_session(),
                |s| {
                    self.policy
                        .authorize(&self.acls, s, op, resource_type, name)
                },
            ),
        }
    }

    pub fn topic(&self, op: Operation, name: &str) -> bool {
        self.allowed(op, ResourceType::Topic, name)
    }

    pub fn group(&self, op: Operation, name: &str) -> bool {
        self.allowed(op, ResourceType::Group, name)
    }

    pub fn transactional_id(&self, op: Operation, id: &str) -> bool {
        self.allowed(op, ResourceType::TransactionalId, id)
    }

    /// `op` on the cluster resource `kafka-cluster`.
    pub fn cluster(&self, op: Operation) -> bool {
        self.allowed(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// `Authorizer.authorizeByResourceType` (KIP-679).
    pub fn any_of_type(&self, op: Operation, resource_type: ResourceType) -> bool {
        match &self.decisions {
            None => true,
            Some(d) => self.policy.authorize_by_resource_type(
                &self.acls,
                &self.session(d),
                op,
                resource_type,
            ),
        }
    }

    /// `AuthHelper.authorizedOperations`: the KIP-430 bitfield. Without
    /// an authorizer every supported operation.
    pub fn authorized_operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        match &self.decisions {
            None => resource_type
                .supported_operations()
                .iter()
                .fold(0, |bits, op| bits | (1 << op.code())),
            Some(d) => {
                self.policy
                    .authorized_operations(&self.acls, &self.session(d), resource_type, name)
            }
        }
    }
}
