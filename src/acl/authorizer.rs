//! `[pure]` The decision of Kafka 3.9's `kafka.security.authorizer.AclAuthorizer`
//! (`core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala`,
//! `authorizeAction`, `matchingAcls`, `matchingAclExists`,
//! `authorizeByResourceType`) over the broker's cache of ACLs.
//!
//! - `super.users` are allowed everything;
//! - the ACLs that apply to a (LITERAL) resource: the literal ones on its
//!   name, the literal ones on `*` of its type, and every PREFIXED one
//!   whose prefix its name starts with;
//! - none → allowed iff `allow.everyone.if.no.acl.found`;
//! - a matching DENY (principal or `User:*`, host or `*`, operation or
//!   `All`) denies, whatever allows;
//! - else a matching ALLOW allows, DESCRIBE also by READ, WRITE, DELETE
//!   or ALTER, DESCRIBE_CONFIGS also by ALTER_CONFIGS (implication is for
//!   ALLOW only).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{
    AccessControlEntry, AclBinding, Operation, PatternType, Permission, ResourcePattern,
    ResourceType, WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE,
};

/// The broker's ACLs (`AclAuthorizer.aclCache`): per resource pattern, its
/// set of entries, indexed for the per-request decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclCache {
    acls: BTreeMap<ResourcePattern, BTreeSet<AccessControlEntry>>,
    /// LITERAL patterns by type and name.
    literal: HashMap<ResourceType, HashMap<String, Vec<AccessControlEntry>>>,
    /// PREFIXED patterns by type: (prefix, entries).
    prefixed: HashMap<ResourceType, Vec<(String, Vec<AccessControlEntry>)>>,
}

impl AclCache {
    pub fn new(acls: BTreeMap<ResourcePattern, BTreeSet<AccessControlEntry>>) -> Self {
        let mut cache = Self {
            acls,
            ..Self::default()
        };
        cache.reindex();
        cache
    }

    fn reindex(&mut self) {
        self.literal.clear();
        self.prefixed.clear();
        for (pattern, entries) in &self.acls {
            let entries: Vec<AccessControlEntry> = entries.iter().cloned().collect();
            match pattern.pattern_type {
                PatternType::Literal => {
                    self.literal
                        .entry(pattern.resource_type)
                        .or_default()
                        .insert(pattern.name.clone(), entries);
                }
                PatternType::Prefixed => self
                    .prefixed
                    .entry(pattern.resource_type)
                    .or_default()
                    .push((pattern.name.clone(), entries)),
                _ => {}
            }
        }
    }

    /// The entries of one pattern (empty when it has none).
    pub fn get(&self, pattern: &ResourcePattern) -> BTreeSet<AccessControlEntry> {
        self.acls.get(pattern).cloned().unwrap_or_default()
    }

    /// Replace one pattern's entries (`AclAuthorizer.updateCache`): an
    /// empty set removes it. Whether anything changed.
    pub fn set(&mut self, pattern: ResourcePattern, entries: BTreeSet<AccessControlEntry>) -> bool {
        let changed = if entries.is_empty() {
            self.acls.remove(&pattern).is_some()
        } else {
            self.acls.insert(pattern, entries.clone()) != Some(entries)
        };
        if changed {
            self.reindex();
        }
        changed
    }

    /// Every pattern with its entries, sorted.
    pub fn patterns(
        &self,
    ) -> impl Iterator<Item = (&ResourcePattern, &BTreeSet<AccessControlEntry>)> {
        self.acls.iter()
    }

    /// Every binding, sorted by pattern then entry.
    pub fn bindings(&self) -> impl Iterator<Item = AclBinding> + '_ {
        self.acls.iter().flat_map(|(pattern, entries)| {
            entries.iter().map(|entry| AclBinding {
                pattern: pattern.clone(),
                entry: entry.clone(),
            })
        })
    }

    pub fn is_empty(&self) -> bool {
        self.acls.is_empty()
    }

    /// `AclAuthorizer.matchingAcls`: the entries applying to the resource
    /// `(resource_type, name)`.
    fn matching(&self, resource_type: ResourceType, name: &str) -> Vec<&AccessControlEntry> {
        let mut out = Vec::new();
        if let Some(by_name) = self.literal.get(&resource_type) {
            for key in [name, WILDCARD_RESOURCE] {
                if let Some(entries) = by_name.get(key) {
                    out.extend(entries.iter());
                }
                if name == WILDCARD_RESOURCE {
                    break;
                }
            }
        }
        if let Some(prefixes) = self.prefixed.get(&resource_type) {
            for (prefix, entries) in prefixes {
                if name.starts_with(prefix.as_str()) {
                    out.extend(entries.iter());
                }
            }
        }
        out
    }
}

/// The authorizer's configuration: `authorizer.class.name`, `super.users`,
/// `allow.everyone.if.no.acl.found`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// `authorizer.class.name=kafka.security.authorizer.AclAuthorizer`;
    /// without it every action is allowed (Kafka without an authorizer).
    pub enabled: bool,
    pub super_users: Vec<String>,
    pub allow_everyone_if_no_acl_found: bool,
}

/// Who asks: Kafka's `RequestContext.principal` (`Type:name`) and
/// `clientAddress.getHostAddress()` (see [`super::java_host_address`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub principal: String,
    pub host: String,
}

impl Policy {
    /// `AclAuthorizer.isSuperUser`: principals compared by type and name.
    pub fn is_super_user(&self, principal: &str) -> bool {
        self.super_users.iter().any(|s| s == principal)
    }

    /// `Authorizer.authorize` of one action on a LITERAL resource.
    pub fn authorize(
        &self,
        acls: &AclCache,
        session: &Session,
        op: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if !self.enabled || self.is_super_user(&session.principal) {
            return true;
        }
        let matching = acls.matching(resource_type, name);
        if matching.is_empty() {
            return self.allow_everyone_if_no_acl_found;
        }
        let exists = |permission: Permission, op: Operation| {
            matching.iter().any(|acl| {
                acl.permission == permission
                    && (acl.principal == session.principal || acl.principal == WILDCARD_PRINCIPAL)
                    && (acl.operation == op || acl.operation == Operation::All)
                    && (acl.host == session.host || acl.host == WILDCARD_HOST)
            })
        };
        if exists(Permission::Deny, op) {
            return false;
        }
        implied_by(op).iter().any(|o| exists(Permission::Allow, *o))
    }

    /// `AuthHelper.authorizedOperations`: the bitfield (`1 << code`) of the
    /// operations `resource_type` supports that the session may do on
    /// `name` (KIP-430 authorized-operations fields).
    pub fn authorized_operations(
        &self,
        acls: &AclCache,
        session: &Session,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        resource_type
            .supported_operations()
            .iter()
            .filter(|op| self.authorize(acls, session, **op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }

    /// `AclAuthorizer.authorizeByResourceType` (KIP-679): may the session
    /// do `op` on at least one resource of `resource_type`? Only the
    /// operation itself or `All` counts here, no implication.
    pub fn authorize_by_resource_type(
        &self,
        acls: &AclCache,
        session: &Session,
        op: Operation,
        resource_type: ResourceType,
    ) -> bool {
        if !self.enabled || self.is_super_user(&session.principal) {
            return true;
        }
        let names = |permission: Permission, pattern_type: PatternType| {
            acls.acls
                .iter()
                .filter(|(p, _)| p.resource_type == resource_type && p.pattern_type == pattern_type)
                .filter(|(_, entries)| {
                    entries.iter().any(|acl| {
                        acl.permission == permission
                            && (acl.principal == session.principal
                                || acl.principal == WILDCARD_PRINCIPAL)
                            && (acl.host == session.host || acl.host == WILDCARD_HOST)
                            && (acl.operation == op || acl.operation == Operation::All)
                    })
                })
                .map(|(p, _)| p.name.as_str())
                .collect::<Vec<&str>>()
        };
        let deny_literals = names(Permission::Deny, PatternType::Literal);
        if deny_literals.contains(&WILDCARD_RESOURCE) {
            return false;
        }
        if self.allow_everyone_if_no_acl_found {
            return true;
        }
        let deny_prefixes = names(Permission::Deny, PatternType::Prefixed);
        let allow_prefixes = names(Permission::Allow, PatternType::Prefixed);
        let allow_literals = names(Permission::Allow, PatternType::Literal);
        if deny_literals.is_empty() && deny_prefixes.is_empty() {
            return !allow_prefixes.is_empty() || !allow_literals.is_empty();
        }
        let under_deny_prefix = |name: &str| deny_prefixes.iter().any(|d| name.starts_with(d));
        allow_prefixes.iter().any(|p| !under_deny_prefix(p))
            || allow_literals.iter().any(|l| {
                *l == WILDCARD_RESOURCE || (!deny_literals.contains(l) && !under_deny_prefix(l))
            })
    }
}

/// The operations whose ALLOW allows `op` (`AclAuthorizer.authorizeAction`'s
/// `allowOps`).
fn implied_by(op: Operation) -> &'static [Operation] {
    use Operation::*;
    match op {
        Describe => &[Describe, Read, Write, Delete, Alter],
        DescribeConfigs => &[DescribeConfigs, AlterConfigs],
        Read => &[Read],
        Write => &[Write],
        Create => &[Create],
        Delete => &[Delete],
        Alter => &[Alter],
        ClusterAction => &[ClusterAction],
        AlterConfigs => &[AlterConfigs],
        IdempotentWrite => &[IdempotentWrite],
        CreateTokens => &[CreateTokens],
        DescribeTokens => &[DescribeTokens],
        All => &[All],
        Unknown | Any => &[],
    }
}

#[cfg(test)]
mod tests;
